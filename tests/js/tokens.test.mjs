// Privacy Pass end to end: the built worker in Miniflare, the real edgewised, a real memcached,
// a real origin, and tokens minted by the test issuer for the challenge the worker hands out.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker } from "./support/worker.mjs";
import { eventually } from "./support/eventually.mjs";
import { startMemcached, startDaemon, issuer, issuerKeyFile } from "./support/services.mjs";

const SECRET = "e2e-secret-0123456789abcdef";
let origin, memcached, daemon, mf, key, keys;

before(async () => {
  origin = await startOrigin({ label: "tokens" });
  memcached = await startMemcached();
  daemon = await startDaemon({ secret: SECRET, memcached: memcached.addr });
  key = JSON.parse(issuer("key", "--key", issuerKeyFile));
  // Every key with its expiry: spend records live until it.
  keys = `${key.token_key}@${Math.floor(Date.now() / 1000) + 30 * 86400}`;
  mf = await startWorker({
    ORIGIN_URL: origin.url,
    TOKEN_PATHS: "/private, /api/v2/",
    ISSUER_NAME: "issuer.test",
    ISSUER_KEYS: keys,
    TOKEN_MAX_AGE: "600",
    DAEMON_URL: daemon.url,
    DAEMON_SECRET: SECRET,
    DAEMON_TIMEOUT_MS: "500",
  });
});

after(async () => {
  await mf?.dispose();
  await daemon?.close();
  await memcached?.close();
  await origin?.close();
});

const get = (path, headers = {}) => mf.dispatchFetch(`http://edge.test${path}`, { headers });

// The challenge a 401 carries, parsed from WWW-Authenticate.
function challengeOf(res) {
  const header = res.headers.get("www-authenticate") ?? "";
  const params = Object.fromEntries(
    [...header.matchAll(/([a-z-]+)=(?:"([^"]*)"|([^,\s]*))/g)].map((m) => [m[1], m[2] ?? m[3]]),
  );
  assert.match(header, /^PrivateToken /, header);
  return params;
}

async function freshToken() {
  const res = await get("/private/doc");
  assert.equal(res.status, 401);
  await res.arrayBuffer();
  return issuer("token", "--key", issuerKeyFile, "--challenge", challengeOf(res).challenge);
}

const withToken = (token) => ({ authorization: `PrivateToken token="${token}"` });

test("no token: 401 with a challenge naming the issuer key", async () => {
  const res = await get("/private/doc");
  assert.equal(res.status, 401);
  assert.equal(await res.text(), "edgewise: token required");
  const params = challengeOf(res);
  assert.equal(params["token-key"], key.token_key);
  assert.equal(params["max-age"], "600");
  assert.ok(params.challenge.length > 10);
});

test("a valid token passes once; the origin never sees it; a replay gets a new challenge", async () => {
  const token = await freshToken();
  const before = origin.requests.length;
  const res = await get("/private/doc", { ...withToken(token), "x-kept": "yes" });
  assert.equal(res.status, 200, await res.clone().text());
  const seen = await res.json();
  assert.equal(seen.path, "/private/doc");
  assert.equal(seen.headers.authorization, undefined, "token leaked to the origin");
  assert.equal(seen.headers["x-kept"], "yes");
  assert.equal(origin.requests.length, before + 1);

  const replay = await get("/private/doc", withToken(token));
  assert.equal(replay.status, 401);
  assert.equal(await replay.text(), "edgewise: token already spent");
  challengeOf(replay);
  assert.equal(origin.requests.length, before + 1, "a replay reached the origin");
});

test("concurrent replays of one token: exactly one is admitted", async () => {
  const token = await freshToken();
  const results = await Promise.all(
    Array.from({ length: 20 }, () => get("/api/v2/x", withToken(token)).then(async (r) => { await r.arrayBuffer(); return r.status; })),
  );
  assert.equal(results.filter((s) => s === 200).length, 1, `${results}`);
  assert.equal(results.filter((s) => s === 401).length, 19, `${results}`);
});

test("paths outside TOKEN_PATHS need no token, and keep their Authorization header", async () => {
  for (const path of ["/", "/public", "/privateer", "/api/v2"]) {
    const res = await get(path, { authorization: "Bearer origin-credential" });
    assert.equal(res.status, 200, path);
    assert.equal((await res.json()).headers.authorization, "Bearer origin-credential", path);
  }
});

test("every spelling an origin may read as a protected path needs a token", async () => {
  // nginx merges slashes and decodes, Tomcat drops ;parameters, IIS ignores case and reads \ as /.
  const before = origin.requests.length;
  for (const path of [
    "//private/doc",
    "/%70rivate/doc",
    "/%2570rivate/doc",
    "/PRIVATE/doc",
    "/private;jsessionid=1/doc",
    "/public/..;/private/doc",
    "/public%2f..%2fprivate/doc",
    "/public%5c..%5cprivate/doc",
    "/private%2fdoc",
    "//api/v2/",
    "/api/v2%2fx",
  ]) {
    const res = await get(path);
    assert.equal(res.status, 401, path);
    assert.equal(await res.text(), "edgewise: token required", path);
  }
  assert.equal(origin.requests.length, before, "a spelling reached the origin");
});

test("every malformed or foreign token is a 401, never a 5xx", async () => {
  const token = await freshToken();
  const bytes = Buffer.from(token, "base64url");
  const mutate = (at, value) => {
    const copy = Buffer.from(bytes);
    copy[at] ^= value;
    return copy.toString("base64url");
  };
  const otherChallenge = issuer("challenge", "--issuer", "someone-else.test");
  const foreign = issuer("token", "--key", issuerKeyFile, "--challenge", otherChallenge);
  const cases = {
    "not base64": `PrivateToken token="!!!!"`,
    "truncated": `PrivateToken token="${bytes.subarray(0, 200).toString("base64url")}"`,
    "too long": `PrivateToken token="${Buffer.concat([bytes, Buffer.from([0])]).toString("base64url")}"`,
    "unknown type": `PrivateToken token="${mutate(1, 0x07)}"`,
    "unknown key id": `PrivateToken token="${mutate(70, 0x01)}"`,
    "bad signature": `PrivateToken token="${mutate(300, 0x01)}"`,
    "tampered nonce": `PrivateToken token="${mutate(5, 0x01)}"`,
    "wrong challenge": `PrivateToken token="${foreign}"`,
    "other scheme": `Bearer ${token}`,
    "no token param": `PrivateToken nonce="abc"`,
    "empty": ``,
    "two tokens": `PrivateToken token="${token}", PrivateToken token="${token}"`,
  };
  for (const [name, authorization] of Object.entries(cases)) {
    const res = await get("/private/doc", { authorization });
    assert.equal(res.status, 401, `${name}: ${res.status}`);
    challengeOf(res);
    await res.arrayBuffer();
  }
  // None of them spent the real token.
  const res = await get("/private/doc", withToken(token));
  assert.equal(res.status, 200);
  await res.arrayBuffer();
});

test("an Authorization value past the first kilobyte is read whole; past the workspace, a 401", async () => {
  // The value is read into the request's workspace (scrubbed after the request), offered 1 KiB
  // first and then the room it asks for: a valid token beside a long unknown parameter passes.
  const token = await freshToken();
  const padded = `PrivateToken token="${token}", x-padding="${"p".repeat(3000)}"`;
  const res = await get("/private/doc", { authorization: padded });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  // Larger than the 64 KiB workspace: refused as malformed, not a 5xx, and the isolate serves on.
  const huge = await get("/private/doc", {
    authorization: `PrivateToken token="${"A".repeat(70_000)}"`,
  });
  assert.equal(huge.status, 401);
  assert.equal(await huge.text(), "edgewise: token rejected");
  const next = await get("/private/doc", withToken(await freshToken()));
  assert.equal(next.status, 200);
  await next.arrayBuffer();
});

test("memcached down: 503 (fail closed) within the deadline, then recovery", async () => {
  const token = await freshToken();
  await memcached.kill();
  const started = Date.now();
  const res = await get("/private/doc", withToken(token));
  assert.equal(res.status, 503);
  assert.equal(await res.text(), "edgewise: token check unavailable");
  assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`);
  await memcached.restart();
  await eventually(async () => {
    const retry = await get("/private/doc", withToken(await freshToken()));
    await retry.arrayBuffer();
    return retry.status === 200;
  }, { what: "a fresh token admitted after the restart", every: 20, tries: 100 });
});

test("daemon down: 503; daemon back: tokens pass again", async () => {
  await daemon.kill();
  const res = await get("/private/doc", withToken(await freshToken()));
  assert.equal(res.status, 503);
  await res.arrayBuffer();
  await daemon.restart();
  const ok = await get("/private/doc", withToken(await freshToken()));
  assert.equal(ok.status, 200);
  await ok.arrayBuffer();
});

test("a wrong daemon secret fails closed", async () => {
  const w = await startWorker({
    ORIGIN_URL: origin.url,
    TOKEN_PATHS: "/",
    ISSUER_NAME: "issuer.test",
    ISSUER_KEYS: keys,
    DAEMON_URL: daemon.url,
    DAEMON_SECRET: "not-the-secret-0123456789",
  });
  try {
    const first = await w.dispatchFetch("http://edge.test/x");
    const { challenge } = challengeOf(first);
    await first.arrayBuffer();
    const token = issuer("token", "--key", issuerKeyFile, "--challenge", challenge);
    const res = await w.dispatchFetch("http://edge.test/x", { headers: withToken(token) });
    assert.equal(res.status, 503);
    await res.arrayBuffer();
  } finally {
    await w.dispose();
  }
});

test("misconfigured token settings make every request a 500", async () => {
  for (const bad of [
    { TOKEN_PATHS: "/x" },
    { TOKEN_PATHS: "/x", ISSUER_NAME: "i", ISSUER_KEYS: "not-a-key", DAEMON_URL: daemon.url, DAEMON_SECRET: SECRET },
    { TOKEN_PATHS: "/x", ISSUER_NAME: "i", ISSUER_KEYS: key.token_key, DAEMON_URL: daemon.url, DAEMON_SECRET: SECRET },
    { TOKEN_PATHS: "x", ISSUER_NAME: "i", ISSUER_KEYS: keys, DAEMON_URL: daemon.url, DAEMON_SECRET: SECRET },
    { TOKEN_PATHS: "/a%2fb", ISSUER_NAME: "i", ISSUER_KEYS: keys, DAEMON_URL: daemon.url, DAEMON_SECRET: SECRET },
    { TOKEN_PATHS: "/a//b", ISSUER_NAME: "i", ISSUER_KEYS: keys, DAEMON_URL: daemon.url, DAEMON_SECRET: SECRET },
  ]) {
    const w = await startWorker({ ORIGIN_URL: origin.url, ...bad });
    try {
      const res = await w.dispatchFetch("http://edge.test/x");
      assert.equal(res.status, 500, JSON.stringify(bad));
      assert.equal(await res.text(), "edgewise: worker misconfigured");
    } finally {
      await w.dispose();
    }
  }
});

// The bearer secret and every token go to DAEMON_URL: plain http:// only to this machine, or
// where the operator said so. (`.invalid` never resolves: no request can leave the machine.)
test("a plain http:// DAEMON_URL to another host is refused unless allowed", async () => {
  const settings = { ORIGIN_URL: origin.url, TOKEN_PATHS: "/x", ISSUER_NAME: "i", ISSUER_KEYS: keys, DAEMON_SECRET: SECRET };
  for (const [vars, status] of [
    [{ DAEMON_URL: "http://daemon.invalid:7878" }, 500],
    [{ DAEMON_URL: "http://10.0.0.1.invalid" }, 500],
    [{ DAEMON_URL: "http://daemon.invalid:7878", DAEMON_ALLOW_HTTP: "off" }, 500],
    [{ DAEMON_URL: "http://daemon.invalid:7878", DAEMON_ALLOW_HTTP: "on" }, 401],
    [{ DAEMON_URL: "https://daemon.invalid" }, 401],
    [{ DAEMON_URL: "http://localhost:7878" }, 401],
    [{ DAEMON_URL: "http://[::1]:7878" }, 401],
  ]) {
    const w = await startWorker({ ...settings, ...vars });
    try {
      // No token: a worker that accepted the settings answers 401 without calling the daemon.
      const res = await w.dispatchFetch("http://edge.test/x");
      assert.equal(res.status, status, JSON.stringify(vars));
      await res.arrayBuffer();
    } finally {
      await w.dispose();
    }
  }
});
