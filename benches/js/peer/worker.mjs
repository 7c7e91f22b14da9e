// The plain-JavaScript peer of the edgewise worker: the same job written the way a Workers user
// would write it, to measure edgewise against (benches/js/peer-cpu.mjs). Not a product: it
// trusts its configuration, reads ROUTE_ATTRIBUTES of the `name=header:NAME` form only, takes
// protected paths literally, and knows 2048-bit issuer keys with exponent 65537 only.
//
// Per request: a Privacy Pass token check on TOKEN_PATHS (WebCrypto RSA-PSS, salt 48 then 0;
// spent once at the daemon), internal headers stripped with a Set and a prefix list, the origin
// picked from a subset map precomputed from HOST_TABLE (round robin), forward, strip the
// response. Same vars as wrangler.toml.

const RSA_PSS = { name: "RSA-PSS", hash: "SHA-384" };
// The DER before the RSAPublicKey in an RFC 9578 PSS-form SPKI, and in the rsaEncryption form
// WebCrypto imports, for 2048-bit keys with exponent 65537 (the RSAPublicKey is 270 bytes).
const PSS_SPKI_PREFIX = hex(
  "30820152303d06092a864886f70d01010a3030a00d300b0609608648016503040202a11a301806092a864886f70d010108300b0609608648016503040202a2030201300382010f00",
);
const RSA_SPKI_PREFIX = hex("30820122300d06092a864886f70d01010105000382010f00");
const TOKEN_LEN = 2 + 32 + 32 + 32 + 256;

let config;

export default {
  async fetch(request, env) {
    config ??= await configure(env);
    const url = new URL(request.url);
    if (config.tokens && config.tokens.paths.some((p) => url.pathname.startsWith(p))) {
      const refused = await admit(request.headers.get("authorization"), config.tokens);
      if (refused) return refused;
    }
    const headers = new Headers(request.headers);
    strip(headers, config.requestStrip);
    if (config.tokens) headers.delete("authorization");
    const base = config.routing ? pick(request.headers, config.routing) : config.origin;
    const response = await fetch(base + url.pathname + url.search, {
      method: request.method,
      headers,
      body: request.body,
      redirect: "manual",
    });
    const answer = new Response(response.body, response);
    strip(answer.headers, config.responseStrip);
    return answer;
  },
};

async function configure(env) {
  return {
    origin: env.ORIGIN_URL?.replace(/\/$/, ""),
    requestStrip: headerSet(env.INTERNAL_HEADERS ?? ""),
    responseStrip: headerSet(env.INTERNAL_RESPONSE_HEADERS ?? ""),
    routing: env.HOST_TABLE ? routing(JSON.parse(env.HOST_TABLE), env.ROUTE_ATTRIBUTES ?? "") : null,
    tokens: env.TOKEN_PATHS ? await tokens(env) : null,
  };
}

// --- header stripping ----------------------------------------------------------------------

function headerSet(list) {
  const names = list.split(/[\s,]+/).filter(Boolean).map((n) => n.toLowerCase());
  return {
    exact: new Set(names.filter((n) => !n.endsWith("*"))),
    prefixes: names.filter((n) => n.endsWith("*")).map((n) => n.slice(0, -1)),
  };
}

function strip(headers, set) {
  // Headers yields lower-case names.
  for (const name of [...headers.keys()]) {
    if (set.exact.has(name) || set.prefixes.some((p) => name.startsWith(p))) headers.delete(name);
  }
}

// --- subset routing ------------------------------------------------------------------------

function routing(table, attributes) {
  const keys = table.subset.selectors[0].keys;
  const from = Object.fromEntries(
    attributes
      .split(",")
      .map((a) => a.trim().split("="))
      .filter(([, source]) => source?.startsWith("header:"))
      .map(([name, source]) => [name, source.slice("header:".length)]),
  );
  const subsets = new Map();
  for (const host of table.hosts) {
    const key = keys.map((k) => host.labels[k]).join("\n");
    if (!subsets.has(key)) subsets.set(key, { hosts: [], next: 0 });
    subsets.get(key).hosts.push(host.address.replace(/\/$/, ""));
  }
  return { keys, from, subsets, any: { hosts: table.hosts.map((h) => h.address), next: 0 } };
}

function pick(headers, { keys, from, subsets, any }) {
  const key = keys.map((k) => headers.get(from[k]) ?? "").join("\n");
  const subset = subsets.get(key) ?? any;
  return subset.hosts[subset.next++ % subset.hosts.length];
}

// --- Privacy Pass --------------------------------------------------------------------------

async function tokens(env) {
  const issuer = new TextEncoder().encode(env.ISSUER_NAME);
  const originInfo = new TextEncoder().encode(env.TOKEN_ORIGIN_INFO ?? "");
  const challenge = concat(u16(2), u16(issuer.length), issuer, [0], u16(originInfo.length), originInfo);
  const keys = new Map();
  let first;
  for (const entry of env.ISSUER_KEYS.split(/[\s,]+/).filter(Boolean)) {
    const [b64, notAfter] = entry.split("@");
    const spki = base64url(b64);
    const rsa = concat(RSA_SPKI_PREFIX, spki.subarray(spki.length - 270));
    const key = await crypto.subtle.importKey("spki", rsa, RSA_PSS, false, ["verify"]);
    const id = toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", spki)));
    keys.set(id, { key, notAfter: Number(notAfter) });
    first ??= b64;
  }
  return {
    paths: env.TOKEN_PATHS.split(/[\s,]+/).filter(Boolean),
    digest: toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", challenge))),
    keys,
    wwwAuthenticate: `PrivateToken challenge="${toBase64url(challenge)}", token-key="${first}"`,
    redeemUrl: env.DAEMON_URL.replace(/\/$/, "") + "/v1/tokens/redeem",
    daemonAuthorization: `Bearer ${env.DAEMON_SECRET}`,
    timeoutMs: Number(env.DAEMON_TIMEOUT_MS ?? 1000),
  };
}

// A 401 or 503 Response if the request may not pass, else undefined.
async function admit(authorization, tokens) {
  const refuse = () =>
    new Response("token required", { status: 401, headers: { "www-authenticate": tokens.wwwAuthenticate } });
  const match = /^PrivateToken\s+token="?([A-Za-z0-9_-]+={0,2})"?$/i.exec(authorization ?? "");
  if (!match) return refuse();
  const token = base64url(match[1]);
  if (token.length !== TOKEN_LEN || token[0] !== 0 || token[1] !== 2) return refuse();
  const nonce = toHex(token.subarray(2, 34));
  const keyId = toHex(token.subarray(66, 98));
  const issuerKey = tokens.keys.get(keyId);
  if (toHex(token.subarray(34, 66)) !== tokens.digest || !issuerKey) return refuse();
  if (Date.now() / 1000 > issuerKey.notAfter) return refuse();
  const input = token.subarray(0, 98);
  const signature = token.subarray(98);
  let valid = false;
  for (const saltLength of [48, 0]) {
    valid = await crypto.subtle.verify({ name: "RSA-PSS", saltLength }, issuerKey.key, signature, input);
    if (valid) break;
  }
  if (!valid) return refuse();
  try {
    const response = await fetch(tokens.redeemUrl, {
      method: "POST",
      headers: { authorization: tokens.daemonAuthorization, "content-type": "application/json" },
      body: JSON.stringify({ token_type: 2, token_key_id: keyId, nonce, not_after: issuerKey.notAfter }),
      signal: AbortSignal.timeout(tokens.timeoutMs),
    });
    const { outcome } = await response.json();
    if (outcome === "fresh") return undefined;
    if (outcome === "spent") return refuse();
  } catch {
    // fall through: fail closed
  }
  return new Response("token check unavailable", { status: 503 });
}

// --- bytes ---------------------------------------------------------------------------------

function hex(text) {
  return Uint8Array.from(text.match(/../g), (b) => parseInt(b, 16));
}

function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function base64url(text) {
  const b64 = text.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

function toBase64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function u16(n) {
  return [n >> 8, n & 0xff];
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
