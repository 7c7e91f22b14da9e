// The request the worker benchmarks send: browser-like, 20 header names in Title-Case, two of
// them internal; and a query asking the test origin for three response headers, one internal.

export const HEADERS = [
  ["Accept", "text/html,application/xhtml+xml"],
  ["Accept-Encoding", "gzip, deflate, br"],
  ["Accept-Language", "en-US,en;q=0.9"],
  ["Cache-Control", "no-cache"],
  ["Connection", "keep-alive"],
  ["Cookie", "session=abc; theme=dark"],
  ["Pragma", "no-cache"],
  ["Referer", "https://example.com/"],
  ["Sec-Ch-Ua", '"Chromium";v="130"'],
  ["Sec-Ch-Ua-Mobile", "?0"],
  ["Sec-Ch-Ua-Platform", '"Linux"'],
  ["Sec-Fetch-Dest", "document"],
  ["Sec-Fetch-Mode", "navigate"],
  ["Sec-Fetch-Site", "same-origin"],
  ["Upgrade-Insecure-Requests", "1"],
  ["User-Agent", "Mozilla/5.0 (X11; Linux x86_64)"],
  ["X-Forwarded-For", "203.0.113.7"],
  ["X-Requested-With", "XMLHttpRequest"],
  ["X-Edgewise-Route", "zone=a"],
  ["X-Forwarded-User", "admin"],
];
export const RESPOND = ["X-Powered-By:Express", "Cache-Control:max-age=60", "Vary:Accept-Encoding"]
  .map((r) => `respond=${encodeURIComponent(r)}`)
  .join("&");
