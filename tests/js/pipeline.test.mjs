// The whole pipeline per request, with nothing mocked: the built worker in Miniflare checks a
// Privacy Pass token (spent through the real edgewised and a real memcached), strips internal
// headers, routes by subset over the daemon's host table to real local origins, forwards, and
// strips the response. Then the parts fail and come back: the daemon restarts, memcached
// restarts, the host table changes under a SIGHUP.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startOrigin } from "./support/origin.mjs";
import { startWorker } from "./support/worker.mjs";
import { eventually } from "./support/eventually.mjs";
import { startMemcached, startDaemon, issuer, issuerKeyFile } from "./support/services.mjs";

const SECRET = "pipeline-secret-0123456789abcdef";
const origins = {};
let dir, hostsFile, memcached, daemon, mf;

before(async () => {
  for (const label of ["eu1", "eu2", "us1", "us2"]) origins[label] = await startOrigin({ label });
  dir = mkdtempSync(path.join(tmpdir(), "edgewise-pipeline-"));
  hostsFile = path.join(dir, "hosts.toml");
  writeTable(["eu1", "eu2"], ["us1"]);
  const config = path.join(dir, "edgewised.toml");
  // Reloads on SIGHUP only, so the test decides when the table changes.
  writeFileSync(config, `[hosts]\nfile = ${JSON.stringify(hostsFile)}\nwatch_interval_ms = 0\n`);
  memcached = await startMemcached();
  daemon = await startDaemon({ secret: SECRET, memcached: memcached.addr, args: ["--config", config] });
  const key = JSON.parse(issuer("key", "--key", issuerKeyFile));
  mf = await startWorker({
    TOKEN_PATHS: "/private",
    ISSUER_NAME: "issuer.test",
    ISSUER_KEYS: `${key.token_key}@${Math.floor(Date.now() / 1000) + 30 * 86400}`,
    DAEMON_URL: daemon.url,
    DAEMON_SECRET: SECRET,
    DAEMON_TIMEOUT_MS: "500",
    HOST_TABLE: "daemon",
    HOST_TABLE_REFRESH_MS: "0",
    ROUTE_ATTRIBUTES: "zone=header:x-edgewise-zone",
  });
});

after(async () => {
  await mf?.dispose();
  await daemon?.close();
  await memcached?.close();
  for (const origin of Object.values(origins)) await origin.close();
  rmSync(dir, { recursive: true, force: true });
});

function writeTable(eu, us) {
  const host = (label, zone) =>
    `[[hosts]]\naddress = "${origins[label].url}"\nlabels = { zone = "${zone}" }\n`;
  const text = [
    `[subset]\nfallback_policy = "NO_FALLBACK"\nselectors = [{ keys = ["zone"] }]\n`,
    ...eu.map((l) => host(l, "eu")),
    ...us.map((l) => host(l, "us")),
  ].join("\n");
  writeFileSync(hostsFile + ".tmp", text);
  renameSync(hostsFile + ".tmp", hostsFile);
}

const send = (p, headers = {}) => mf.dispatchFetch(`http://edge.test${p}`, { headers });

async function freshToken() {
  const res = await send("/private/doc", { "x-edgewise-zone": "eu" });
  assert.equal(res.status, 401);
  await res.arrayBuffer();
  const challenge = /challenge="([^"]+)"/.exec(res.headers.get("www-authenticate"))[1];
  return issuer("token", "--key", issuerKeyFile, "--challenge", challenge);
}

// A token request routed to zone eu unless `zone` says otherwise.
const auth = (token, zone = "eu") => ({
  authorization: `PrivateToken token="${token}"`,
  "x-edgewise-zone": zone,
});

// Sends `n` requests for `zone`; returns the labels (or statuses) that answered.
async function route(zone, n, p = "/echo") {
  const seen = [];
  for (let i = 0; i < n; i++) {
    const res = await send(p, { "x-edgewise-zone": zone });
    seen.push(res.status === 200 ? res.headers.get("x-origin-label") : res.status);
    await res.arrayBuffer();
  }
  return [...new Set(seen)].sort();
}

test("one request through every stage: token, strip, route, forward, strip the response", async () => {
  const token = await freshToken();
  const res = await send("/private/report?respond=x-powered-by%3APHP&respond=x-internal-trace%3A1", {
    ...auth(token, "us"),
    "x-internal-user": "admin",
    "x-envoy-upstream-rq-timeout-ms": "1",
    "x-app": "kept",
  });
  assert.equal(res.status, 200);
  const seen = await res.json();
  assert.equal(seen.label, "us1", "routed by the zone header");
  assert.equal(seen.path, "/private/report");
  assert.equal(seen.headers["x-app"], "kept");
  for (const name of ["authorization", "x-edgewise-zone", "x-internal-user", "x-envoy-upstream-rq-timeout-ms"]) {
    assert.equal(seen.headers[name], undefined, `${name} reached the origin`);
  }
  assert.equal(res.headers.get("x-powered-by"), null);
  assert.equal(res.headers.get("x-internal-trace"), null);
  assert.equal(res.headers.get("x-origin-label"), "us1");

  // The same token again: refused, the origin never sees it.
  const before = origins.us1.requests.length;
  const replay = await send("/private/report", auth(token, "us"));
  assert.equal(replay.status, 401);
  await replay.arrayBuffer();
  assert.equal(origins.us1.requests.length, before);
  assert.deepEqual(await route("eu", 6), ["eu1", "eu2"]);
  assert.deepEqual(await route("ap", 2), [503], "NO_FALLBACK: no subset, no origin");
});

test("daemon restart: routing goes on from the worker's table, tokens fail closed, then recover", async () => {
  const token = await freshToken();
  await daemon.kill();
  assert.deepEqual(await route("us", 3), ["us1"]);
  const refused = await send("/private/doc", auth(token, "us"));
  assert.equal(refused.status, 503, "no daemon, no spend: fail closed");
  assert.equal(await refused.text(), "edgewise: token check unavailable");
  await daemon.restart();
  // The token was never spent (the daemon was not there to spend it): it passes now, once.
  const ok = await send("/private/doc", auth(token, "us"));
  assert.equal(ok.status, 200);
  await ok.arrayBuffer();
  assert.deepEqual(await route("us", 3), ["us1"]);
});

test("memcached restart: tokens fail closed while it is away, then pass again", async () => {
  const token = await freshToken();
  await memcached.kill();
  const refused = await send("/private/doc", auth(token));
  assert.equal(refused.status, 503);
  assert.equal(await refused.text(), "edgewise: token check unavailable");
  assert.deepEqual(await route("eu", 4), ["eu1", "eu2"], "routing does not need memcached");
  await memcached.restart();
  await eventually(async () => {
    const retry = await send("/private/doc", auth(await freshToken()));
    await retry.arrayBuffer();
    return retry.status === 200;
  }, { what: "a fresh token admitted after the restart", every: 20, tries: 100 });
});

test("a host table change under SIGHUP moves traffic; a malformed one changes nothing", async () => {
  writeTable(["eu1"], ["us2"]);
  daemon.signal("SIGHUP");
  await eventually(async () => (await route("us", 1))[0] === "us2", {
    what: "the worker routing by the new table",
    every: 30,
    within: 10_000,
  });
  assert.deepEqual(await route("us", 4), ["us2"]);
  assert.deepEqual(await route("eu", 4), ["eu1"]);

  writeFileSync(hostsFile, "[[hosts]]\naddress = 12\n");
  daemon.signal("SIGHUP");
  // Rejected once the daemon read it: routing is checked after that, not after a fixed pause.
  await eventually(
    async () => /edgewise_hosts_reload_errors_total [1-9]/.test(await (await fetch(`${daemon.url}/metrics`, { headers: { authorization: `Bearer ${SECRET}` } })).text()),
    { what: "the malformed table rejected", every: 30, within: 10_000 },
  );
  assert.deepEqual(await route("us", 4), ["us2"]);
});
