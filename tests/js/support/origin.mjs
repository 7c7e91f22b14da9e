// A real HTTP origin for tests and the local demo. It describes every request it receives
// (method, path, query, headers, body digest) as JSON, and offers a few routes that exercise a
// proxy: /status/NNN, /redirect, /bytes/N, and ?respond=name:value (repeatable) on any echo
// route to add response headers.
//
//   node tests/js/support/origin.mjs [--port N] [--label NAME]   prints "listening PORT"

import { createServer } from "node:http";
import { createHash } from "node:crypto";

// An origin nobody listens on, so that connections to it are refused: the discard port, below
// the ephemeral range. A port merely left free could be taken by a listener started later in the
// run (workerd binds ports of its own).
export const DEAD_ORIGIN = "http://127.0.0.1:9";

export function startOrigin({ port = 0, label = "origin" } = {}) {
  const requests = [];
  const server = createServer((req, res) => handle(req, res, label, requests));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({
        port,
        url: `http://127.0.0.1:${port}`,
        requests,
        close: () => new Promise((done) => server.close(done)),
      });
    });
  });
}

function handle(req, res, label, requests) {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const url = new URL(req.url, "http://origin.invalid");
    const seen = {
      label,
      method: req.method,
      path: url.pathname,
      query: url.search.slice(1),
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      bodyLength: body.length,
      bodySha256: createHash("sha256").update(body).digest("hex"),
      body: body.length <= 4096 ? body.toString("utf8") : null,
    };
    requests.push(seen);
    route(url, seen, res, label);
  });
}

function route(url, seen, res, label) {
  const common = { "x-origin-label": label };
  const status = url.pathname.match(/^\/status\/(\d{3})$/);
  if (status) {
    res.writeHead(Number(status[1]), { ...common, "content-type": "text/plain" });
    return res.end(`status ${status[1]}`);
  }
  if (url.pathname === "/redirect") {
    res.writeHead(302, { ...common, location: "/elsewhere" });
    return res.end();
  }
  const bytes = url.pathname.match(/^\/bytes\/(\d+)$/);
  if (bytes) {
    res.writeHead(200, { ...common, "content-type": "application/octet-stream" });
    return res.end(Buffer.alloc(Number(bytes[1]), 0x61));
  }
  const headers = [
    ["x-origin-label", label],
    ["content-type", "application/json"],
    ["set-cookie", "a=1; Path=/"],
    ["set-cookie", "b=2; Path=/"],
  ];
  for (const spec of url.searchParams.getAll("respond")) {
    const colon = spec.indexOf(":");
    headers.push([spec.slice(0, colon), spec.slice(colon + 1)]);
  }
  res.writeHead(200, headers.flat());
  res.end(JSON.stringify(seen));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const origin = await startOrigin({ port: Number(arg("--port", 0)), label: arg("--label", "origin") });
  console.log(`listening ${origin.port}`);
  const stop = () => origin.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
