// Subset routing end to end: the built worker in Miniflare routes by request metadata over real
// local origins, from a host table in its vars or fetched from the real edgewised; a dead origin
// is retried on another host of its subset, and ejected after failures in a row; a malformed
// table keeps the old routing.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, writeFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startOrigin, DEAD_ORIGIN } from "./support/origin.mjs";
import { startWorker } from "./support/worker.mjs";
import { eventually, sleep } from "./support/eventually.mjs";
import { startDaemon } from "./support/services.mjs";

const SECRET = "routing-secret-0123456789abcdef";
const ATTRIBUTES = "zone=header:x-edgewise-zone, stage=query:stage";
const origins = {};
const open = [];

before(async () => {
  for (const label of ["a1", "a2", "b1", "c1", "beta"]) {
    origins[label] = await startOrigin({ label });
  }
});

after(async () => {
  for (const closer of open.reverse()) await closer();
  for (const origin of Object.values(origins)) await origin.close();
});

function hosts() {
  const host = (label, labels) => ({ address: origins[label].url, labels });
  return [
    host("a1", { zone: "a", stage: "prod" }),
    host("a2", { zone: "a", stage: "prod" }),
    host("b1", { zone: "b", stage: "prod" }),
    host("beta", { zone: "a", stage: "beta" }),
    { address: DEAD_ORIGIN, labels: { zone: "c", stage: "prod" } },
    host("c1", { zone: "c", stage: "prod" }),
  ];
}

function table(subset = {}) {
  return {
    version: 1,
    hosts: hosts(),
    subset: {
      fallback_policy: "ANY_ENDPOINT",
      selectors: [{ keys: ["zone"] }, { keys: ["zone", "stage"] }],
      ...subset,
    },
  };
}

async function worker(bindings) {
  const mf = await startWorker({ ROUTE_ATTRIBUTES: ATTRIBUTES, ...bindings });
  open.push(() => mf.dispose());
  return mf;
}

// The labels of the origins that answered `n` requests.
async function labels(mf, n, { path = "/echo", headers = {}, init = {} } = {}) {
  const seen = [];
  for (let i = 0; i < n; i++) {
    const res = await mf.dispatchFetch(`http://edge.test${path}`, { headers, ...init });
    seen.push(res.status === 200 ? res.headers.get("x-origin-label") : res.status);
    await res.arrayBuffer();
  }
  return seen;
}

const only = (seen) => [...new Set(seen)].sort();

test("a static table routes each request by its metadata", async () => {
  const mf = await worker({ HOST_TABLE: JSON.stringify(table()) });
  assert.deepEqual(only(await labels(mf, 8, { headers: { "x-edgewise-zone": "b" } })), ["b1"]);
  // Zone a without a stage: the zone selector's subset, all three hosts of zone a.
  assert.deepEqual(only(await labels(mf, 12, { headers: { "x-edgewise-zone": "a" } })), ["a1", "a2", "beta"]);
  // Zone and stage from the query: the (zone, stage) subset.
  const beta = await labels(mf, 6, { path: "/echo?stage=beta", headers: { "x-edgewise-zone": "a" } });
  assert.deepEqual(only(beta), ["beta"]);
  const prod = await labels(mf, 8, { path: "/echo?x=1&stage=prod", headers: { "x-edgewise-zone": "a" } });
  assert.deepEqual(only(prod), ["a1", "a2"]);
  // Decoded as the origin decodes it; a key given twice (origins differ on which counts)
  // routes by neither: zone a's subset.
  const decoded = await labels(mf, 3, { path: "/echo?st%61ge=b%65ta", headers: { "x-edgewise-zone": "a" } });
  assert.deepEqual(only(decoded), ["beta"]);
  const twice = await labels(mf, 12, { path: "/echo?stage=prod&stage=beta", headers: { "x-edgewise-zone": "a" } });
  assert.deepEqual(only(twice), ["a1", "a2", "beta"]);
  // No metadata, or a zone nobody has: ANY_ENDPOINT.
  assert.equal((await labels(mf, 4)).every((l) => typeof l === "string"), true);
  assert.equal((await labels(mf, 4, { headers: { "x-edgewise-zone": "zz" } })).every((l) => typeof l === "string"), true);
});

test("host weights count: round robin gives each host of a subset turns by its weight", async () => {
  const weighted = table({ child_policy: "ROUND_ROBIN" });
  weighted.hosts[0].weight = 1; // a1
  weighted.hosts[1].weight = 3; // a2
  const mf = await worker({ HOST_TABLE: JSON.stringify(weighted) });
  // The (zone a, stage prod) subset, two cycles of 1 + 3 turns.
  const seen = await labels(mf, 8, { path: "/echo?stage=prod", headers: { "x-edgewise-zone": "a" } });
  const count = (label) => seen.filter((l) => l === label).length;
  assert.deepEqual([count("a1"), count("a2")], [2, 6], `${seen}`);
});

test("path segments and path prefixes route too", async () => {
  const byService = table({ selectors: [{ keys: ["service"] }], fallback_policy: "NO_FALLBACK" });
  byService.hosts[0].labels.service = "api";
  byService.hosts[2].labels.service = "static";
  const mf = await worker({ HOST_TABLE: JSON.stringify(byService), ROUTE_ATTRIBUTES: "service=path:1" });
  assert.deepEqual(only(await labels(mf, 4, { path: "/api/v1/users" })), ["a1"]);
  assert.deepEqual(only(await labels(mf, 4, { path: "/static/app.js" })), ["b1"]);
  assert.deepEqual(only(await labels(mf, 2, { path: "/other" })), [503]);
  // Path prefixes, as an Envoy route's prefix match gives its metadata: the longest wins.
  const byPrefix = await worker({
    HOST_TABLE: JSON.stringify(byService),
    ROUTE_ATTRIBUTES: "service=prefix:/api=api|/api/assets=static|/static=static",
  });
  assert.deepEqual(only(await labels(byPrefix, 3, { path: "/api/v1/users?x=1" })), ["a1"]);
  assert.deepEqual(only(await labels(byPrefix, 3, { path: "/api/assets/app.js" })), ["b1"]);
  assert.deepEqual(only(await labels(byPrefix, 3, { path: "/static" })), ["b1"]);
  assert.deepEqual(only(await labels(byPrefix, 2, { path: "/apis" })), [503]);
  // Each spelling of /static an origin reads as /static routes there too (they went to 503
  // or another pool, as sent).
  for (const path of ["//static/app.js", "/%73tatic/app.js", "/STATIC/app.js", "/static;v=1/app.js"]) {
    assert.deepEqual(only(await labels(byPrefix, 1, { path })), ["b1"], path);
  }
  assert.deepEqual(only(await labels(mf, 1, { path: "/%61pi/v1" })), ["a1"]);
});

test("a dead origin is skipped: the request is retried on another host of its subset", async () => {
  // Ejection off, so that the dead host keeps its turns (see the ejection test below).
  const mf = await worker({
    HOST_TABLE: JSON.stringify(table({ child_policy: "ROUND_ROBIN" })),
    OUTLIER_FAILURES: "0",
  });
  const zoneC = { "x-edgewise-zone": "c" };
  const seen = await labels(mf, 10, { headers: zoneC });
  assert.deepEqual(only(seen), ["c1"], `every request answered by c1: ${seen}`);
  // The retry carries the request body too, when its length is declared. (Miniflare sends
  // bodies chunked unless the length is given.)
  const body = "a body that must survive the retry ✓";
  const length = String(Buffer.byteLength(body));
  for (let i = 0; i < 4; i++) {
    const res = await mf.dispatchFetch("http://edge.test/echo", {
      method: "PUT",
      body,
      headers: { ...zoneC, "content-length": length },
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).body, body);
  }
  // A body of unknown length is not kept for a retry (it could be of any size): those whose
  // first try goes to the dead host answer 502.
  const chunked = await labels(mf, 4, { headers: zoneC, init: { method: "PUT", body } });
  assert.deepEqual(only(chunked.map(String)), ["502", "c1"], `${chunked}`);
  // A request that may not be repeated is not: a failed fetch does not prove the origin never
  // took it. Those whose first try goes to the dead host answer 502; the others arrive once.
  const posted = await labels(mf, 4, { headers: zoneC, init: { method: "POST", body } });
  assert.deepEqual(only(posted.map(String)), ["502", "c1"], `${posted}`);
  // A body declared over 1 MiB is not kept for a retry (a copy would hold it in the isolate's
  // memory): those that go to the dead host first answer 502 (round robin sends at least
  // every other one there first), the others arrive whole. (Miniflare delivers bodies
  // chunked unless the length is given.)
  const large = new Uint8Array((1 << 20) + 1).fill(120);
  const statuses = [];
  for (let i = 0; i < 4; i++) {
    const res = await mf.dispatchFetch("http://edge.test/echo", {
      method: "PUT",
      body: large,
      headers: { "x-edgewise-zone": "c", "content-length": String(large.length) },
    });
    statuses.push(res.status);
    if (res.status === 200) assert.equal((await res.json()).bodyLength, large.length);
    else await res.arrayBuffer();
  }
  assert.ok(statuses.includes(502), `${statuses}`);
  assert.ok(statuses.every((s) => s === 200 || s === 502), `${statuses}`);
});

test("NO_FALLBACK refuses metadata no subset matches; a retry needs another host", async () => {
  const subset = { fallback_policy: "NO_FALLBACK" };
  const mf = await worker({ HOST_TABLE: JSON.stringify(table(subset)) });
  assert.deepEqual(only(await labels(mf, 3, { headers: { "x-edgewise-zone": "zz" } })), [503]);
  assert.deepEqual(only(await labels(mf, 3, { headers: { "x-edgewise-zone": "b" } })), ["b1"]);

  // A subset whose only host is dead: 502, nothing to retry on.
  const lonely = table(subset);
  lonely.hosts = lonely.hosts.filter((h) => h.labels.zone !== "c" || h.address === DEAD_ORIGIN);
  const mf2 = await worker({ HOST_TABLE: JSON.stringify(lonely) });
  assert.deepEqual(only(await labels(mf2, 2, { headers: { "x-edgewise-zone": "c" } })), [502]);
});

// Answers every request with `status`, as Cloudflare's edge does for an origin behind it that it
// could not reach (52x); counts what it was sent.
async function answering(status) {
  const seen = { count: 0 };
  const server = createServer((req, res) => {
    seen.count += 1;
    req.resume();
    req.on("end", () => {
      res.writeHead(status, { "content-type": "text/plain", "x-origin-label": `answers-${status}` });
      res.end(`error code: ${status}`);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push(() => new Promise((done) => server.close(done)));
  return { url: `http://127.0.0.1:${server.address().port}`, seen };
}

// Round robin over zone d (`d`, then c1) and zone e (`e`, then b1).
function zonesBehind(d, e) {
  const routed = table({ child_policy: "ROUND_ROBIN" });
  routed.hosts = [
    { address: d, labels: { zone: "d", stage: "prod" } },
    { address: origins.c1.url, labels: { zone: "d", stage: "prod" } },
    { address: e, labels: { zone: "e", stage: "prod" } },
    { address: origins.b1.url, labels: { zone: "e", stage: "prod" } },
  ];
  return routed;
}

test("a 52x for an origin not reached is retried on another host; one it may have acted on is not", async () => {
  const [refused, timedOut] = [await answering(522), await answering(524)];
  const routed = zonesBehind(refused.url, timedOut.url);
  const mf = await worker({ HOST_TABLE: JSON.stringify(routed) });
  const d = await labels(mf, 6, { headers: { "x-edgewise-zone": "d" } });
  assert.deepEqual(only(d), ["c1"], `every request answered by c1: ${d}`);
  // Round robin sends each request to the 522 host first (the retry takes the next turn)
  // until its third failure in a row ejects it (OUTLIER_FAILURES' default).
  assert.equal(refused.seen.count, 3);
  // 524: the origin was reached and may have acted; passed through, not sent twice.
  const e = await labels(mf, 6, { headers: { "x-edgewise-zone": "e" } });
  assert.deepEqual(only(e.map(String)), ["524", "b1"], `${e}`);
  // A POST is not sent twice, even after a 522 (an origin may answer one of its own): the
  // one that goes to the 522 host first gets its answer. (Ejection off: both keep turns.)
  const keep = await worker({ HOST_TABLE: JSON.stringify(routed), OUTLIER_FAILURES: "0" });
  const before = refused.seen.count;
  const once = { method: "POST", body: "once" };
  const posted = await labels(keep, 2, { headers: { "x-edgewise-zone": "d", "content-length": "4" }, init: once });
  assert.deepEqual(posted.map(String).sort(), ["522", "c1"]);
  assert.equal(refused.seen.count, before + 1);
  // The only host of a subset answers 522: its answer is passed on (nothing to retry on).
  routed.hosts = routed.hosts.filter((h) => h.address !== origins.c1.url);
  const lonely = await worker({ HOST_TABLE: JSON.stringify(routed) });
  assert.deepEqual(only(await labels(lonely, 2, { headers: { "x-edgewise-zone": "d" } })), [522]);
});

test("a host that fails in a row is ejected for a while, then tried again for longer", async () => {
  const [failing, refused] = [await answering(521), await answering(522)];
  const routed = zonesBehind(failing.url, refused.url);
  const mf = await worker({
    HOST_TABLE: JSON.stringify(routed),
    OUTLIER_FAILURES: "2",
    OUTLIER_EJECTION_MS: "2000",
    OUTLIER_MAX_EJECTED_PERCENT: "50",
  });
  const zone = (z) => ({ headers: { "x-edgewise-zone": z } });
  // Round robin sends each request to the failing host first until its second failure in a
  // row ejects it; after that no request goes there.
  assert.deepEqual(only(await labels(mf, 8, zone("d"))), ["c1"]);
  assert.equal(failing.seen.count, 2);
  // The other subset's failing host too: two of four hosts out, the most allowed.
  assert.deepEqual(only(await labels(mf, 8, zone("e"))), ["b1"]);
  assert.equal(refused.seen.count, 2);
  // Back after its ejection: two more failures, and out again, for twice as long. Timed from
  // the request that ejects it again: 2.3 s after it a 2 s ejection is over and a 4 s one is
  // not, however long the requests around it take on a loaded machine.
  await sleep(2300);
  const again = [];
  let ejectedAgain;
  for (let i = 0; i < 8; i++) {
    again.push(...(await labels(mf, 1, zone("d"))));
    if (failing.seen.count === 4) ejectedAgain ??= Date.now();
  }
  assert.deepEqual(only(again), ["c1"]);
  assert.equal(failing.seen.count, 4);
  await sleep(ejectedAgain + 2300 - Date.now());
  assert.deepEqual(only(await labels(mf, 4, zone("d"))), ["c1"]);
  assert.equal(failing.seen.count, 4, "still out: the second ejection lasts 4 s");
});

test("with OUTLIER_GATEWAY_ERRORS on, a host answering 503 in a row is ejected; by default it is not", async () => {
  const [unavailable, other] = [await answering(503), await answering(521)];
  const routed = zonesBehind(unavailable.url, other.url);
  const zone = { headers: { "x-edgewise-zone": "d" } };
  // A 503 is the origin's answer: passed on, not retried. Round robin alternates the hosts.
  const off = await worker({ HOST_TABLE: JSON.stringify(routed), OUTLIER_FAILURES: "2" });
  assert.deepEqual(only((await labels(off, 8, zone)).map(String)), ["503", "c1"]);
  assert.equal(unavailable.seen.count, 4);
  const on = await worker({
    HOST_TABLE: JSON.stringify(routed),
    OUTLIER_FAILURES: "2",
    OUTLIER_GATEWAY_ERRORS: "on",
  });
  const seen = (await labels(on, 8, zone)).map(String);
  assert.deepEqual(seen.filter((l) => l === "503").length, 2, `${seen}`);
  assert.equal(unavailable.seen.count, 6, "ejected after its second 503 in a row");
});

test("a malformed static table or attribute list makes the worker refuse to start routing", async () => {
  for (const bindings of [
    { HOST_TABLE: "{not json" },
    { HOST_TABLE: JSON.stringify({ version: 1, hosts: [{ address: "x", labels: {} }] }) },
    { HOST_TABLE: JSON.stringify(table()), ROUTE_ATTRIBUTES: "zone=cookie:z" },
    { HOST_TABLE: JSON.stringify(table()), OUTLIER_MAX_EJECTED_PERCENT: "101" },
    { HOST_TABLE: JSON.stringify(table()), OUTLIER_FAILURES: "three" },
    { HOST_TABLE: JSON.stringify(table()), OUTLIER_GATEWAY_ERRORS: "yes" },
  ]) {
    const mf = await worker(bindings);
    const res = await mf.dispatchFetch("http://edge.test/echo");
    assert.equal(res.status, 500, JSON.stringify(bindings));
    assert.equal(await res.text(), "edgewise: worker misconfigured");
  }
});

// --- the daemon's table -------------------------------------------------------------------

function tomlTable(bOrigin) {
  const lines = [
    "[subset]",
    'fallback_policy = "ANY_ENDPOINT"',
    'selectors = [{ keys = ["zone"] }]',
  ];
  for (const [label, zone] of [["a1", "a"], ["a2", "a"], [bOrigin, "b"]]) {
    lines.push("[[hosts]]", `address = "${origins[label].url}"`, `labels = { zone = "${zone}" }`);
  }
  return lines.join("\n") + "\n";
}

// Serves the daemon's /v1/hosts as is; once `corrupt` is set, a damaged table with a new ETag;
// while `dropConditional` is set, the whole table each time (as a proxy dropping If-None-Match);
// once `corruptDeltas` is set, each delta damaged (cut short); while `stall` is set, a table or
// delta's headers and half its body, then nothing more (until the test ends). Counts the
// requests it serves.
async function faultProxy(daemonUrl) {
  const state = { corrupt: false, corruptDeltas: false, dropConditional: false, stall: false, requests: 0 };
  const stalled = [];
  const server = createServer(async (req, res) => {
    state.requests++;
    const headers = { authorization: req.headers.authorization ?? "" };
    if (req.headers.accept) headers.accept = req.headers.accept;
    const conditional = !state.corrupt && !state.dropConditional;
    if (req.headers["if-none-match"] && conditional) headers["if-none-match"] = req.headers["if-none-match"];
    let upstream;
    try {
      upstream = await fetch(daemonUrl + req.url, { headers });
    } catch {
      res.writeHead(502);
      return res.end("daemon unreachable");
    }
    const body = Buffer.from(await upstream.arrayBuffer());
    if (state.corrupt && upstream.status === 200) {
      body[Math.floor(body.length / 2)] ^= 0xff;
      res.writeHead(200, { etag: '"corrupt"', "content-type": "application/x-edgewise-hosts" });
      return res.end(body.subarray(0, body.length - 3));
    }
    const out = { "content-type": upstream.headers.get("content-type") ?? "text/plain" };
    if (upstream.headers.get("etag")) out.etag = upstream.headers.get("etag");
    if (state.stall && upstream.status === 200) {
      res.writeHead(200, { ...out, "content-length": String(body.length) });
      res.write(body.subarray(0, body.length >> 1));
      return stalled.push(res);
    }
    res.writeHead(upstream.status, out);
    const delta = out["content-type"] === "application/x-edgewise-hosts-delta";
    res.end(delta && state.corruptDeltas ? body.subarray(0, body.length - 3) : body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push(() => new Promise((done) => server.close(done)));
  open.push(() => stalled.forEach((res) => res.destroy()));
  state.url = `http://127.0.0.1:${server.address().port}`;
  return state;
}

// The real edgewised serving `table` (rewritten by `write`, which it notices), behind a
// faultProxy.
async function daemonServing(table) {
  const dir = mkdtempSync(path.join(tmpdir(), "edgewise-routing-"));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, "hosts.toml");
  const write = (text) => {
    writeFileSync(file + ".tmp", text);
    renameSync(file + ".tmp", file);
  };
  write(table);
  const config = path.join(dir, "edgewised.toml");
  writeFileSync(config, `[hosts]\nfile = ${JSON.stringify(file)}\nwatch_interval_ms = 30\n`);
  const daemon = await startDaemon({ secret: SECRET, args: ["--config", config] });
  open.push(() => daemon.close());
  const proxy = await faultProxy(daemon.url);
  return { daemon, proxy, write };
}

// A worker routing by the table `proxy` serves, checked on every request unless `vars` say.
const fromDaemon = (proxy, vars) =>
  worker({ HOST_TABLE: "daemon", HOST_TABLE_REFRESH_MS: "0", DAEMON_URL: proxy.url, DAEMON_SECRET: SECRET, ...vars });

async function metric(daemonUrl, name) {
  const metrics = await (await fetch(`${daemonUrl}/metrics`, { headers: { authorization: `Bearer ${SECRET}` } })).text();
  return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(metrics)?.[1]);
}
const deltasServed = (daemonUrl) => metric(daemonUrl, "edgewise_hosts_deltas_served_total");
const hostsVersion = (daemonUrl) => metric(daemonUrl, "edgewise_hosts_version");

test("the daemon's table: fetched, updated at runtime by deltas, kept when malformed or unreachable", async () => {
  const { daemon, proxy, write } = await daemonServing(tomlTable("b1"));
  const mf = await fromDaemon(proxy, { DAEMON_TIMEOUT_MS: "500" });
  const zoneB = { headers: { "x-edgewise-zone": "b" } };
  assert.deepEqual(only(await labels(mf, 4, zoneB)), ["b1"]);

  // The operator moves zone b to another origin; the daemon notices, the worker follows, by the
  // table's changes rather than the table (the daemon counts what it served).
  write(tomlTable("c1"));
  await eventually(async () => (await labels(mf, 1, zoneB))[0] === "c1", {
    what: "the worker routing by the new table",
    every: 30,
    within: 10_000,
  });
  assert.deepEqual(only(await labels(mf, 4, zoneB)), ["c1"]);
  assert.equal(await deltasServed(daemon.url), 1);

  // A damaged delta is refused; the worker asks for the whole table next and follows anyway.
  proxy.corruptDeltas = true;
  write(tomlTable("b1"));
  await eventually(async () => (await labels(mf, 1, zoneB)) && (await deltasServed(daemon.url)) === 2, {
    what: "the daemon serving the damaged delta",
    every: 30,
    within: 10_000,
  });
  await eventually(async () => (await labels(mf, 1, zoneB))[0] === "b1", {
    what: "the worker routing by the whole table after a damaged delta",
    every: 30,
    within: 10_000,
  });
  assert.deepEqual(only(await labels(mf, 4, zoneB)), ["b1"]);
  proxy.corruptDeltas = false;
  write(tomlTable("c1"));
  await eventually(async () => (await labels(mf, 1, zoneB))[0] === "c1", {
    what: "deltas again",
    every: 30,
    within: 10_000,
  });
  assert.equal(await deltasServed(daemon.url), 3);

  // A damaged table is refused: the worker keeps routing by the one it has, though the table
  // damaged on its way moves zone b back to b1. Undamaged, it is followed.
  const version = await hostsVersion(daemon.url);
  proxy.corrupt = true;
  write(tomlTable("b1"));
  await eventually(async () => (await hostsVersion(daemon.url)) !== version, {
    what: "the daemon loading the new table",
    every: 30,
    within: 10_000,
  });
  const checks = proxy.requests;
  assert.deepEqual(only(await labels(mf, 4, zoneB)), ["c1"]);
  assert.ok(proxy.requests >= checks + 4, "each request checked the daemon and got the damaged table");
  proxy.corrupt = false;
  await eventually(async () => (await labels(mf, 1, zoneB))[0] === "b1", {
    what: "the worker routing by the undamaged table",
    every: 30,
    within: 10_000,
  });

  // So does an unreachable daemon.
  await daemon.kill();
  assert.deepEqual(only(await labels(mf, 4, zoneB)), ["b1"]);

  // A worker that never had a table cannot route: 503.
  const fresh = await fromDaemon(proxy, { HOST_TABLE_REFRESH_MS: "5000", DAEMON_TIMEOUT_MS: "300" });
  assert.deepEqual(only(await labels(fresh, 2, zoneB)), [503]);
});

test("a table checked on every request but unchanged is not rebuilt, even when sent whole", async () => {
  const { proxy } = await daemonServing(tomlTable("b1"));
  const mf = await fromDaemon(proxy);
  const zoneA = { headers: { "x-edgewise-zone": "a" } };
  // Round robin over zone a's two hosts starts at a random one in a new index: turns that
  // alternate for 16 requests mean one index served them all (a rebuild per check would
  // alternate with odds of 1 in 2^15).
  const alternate = (seen) => seen.every((label, i) => i === 0 || label !== seen[i - 1]);
  for (const dropConditional of [false, true]) {
    proxy.dropConditional = dropConditional;
    const checks = proxy.requests;
    const seen = await labels(mf, 16, zoneA);
    assert.deepEqual(only(seen), ["a1", "a2"]);
    assert.ok(alternate(seen), `${seen} (If-None-Match dropped: ${dropConditional})`);
    assert.ok(proxy.requests >= checks + 16, "each request checked the daemon");
  }
});

test("a daemon stalling in the body costs a request the deadline, and checks go on after", async () => {
  const { proxy, write } = await daemonServing(tomlTable("b1"));
  const mf = await fromDaemon(proxy, { DAEMON_TIMEOUT_MS: "300" });
  const zoneB = { headers: { "x-edgewise-zone": "b" } };
  assert.deepEqual(only(await labels(mf, 2, zoneB)), ["b1"]);

  // The table changes while the daemon's answers stall halfway: each request checks, gives up
  // at the deadline and routes by the table it has. (Before, the body was read without one:
  // the checking request hung, and no other request checked again.)
  proxy.stall = true;
  write(tomlTable("c1"));
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (let i = 0; i < 3; i++) {
    const hung = new Promise((_, reject) => setTimeout(() => reject(new Error("request hung")), 10_000));
    assert.deepEqual(await Promise.race([labels(mf, 1, zoneB), hung]), ["b1"]);
  }
  proxy.stall = false;
  await eventually(async () => (await labels(mf, 1, zoneB))[0] === "c1", {
    what: "the worker checking again once the daemon answers in full",
    every: 30,
    within: 10_000,
  });
});

// Each waiter used to start a check of its own once the one it waited on failed: behind a
// daemon that did not answer, the k-th request waited k deadlines, and each asked the daemon.
test("concurrent first requests share the first load's failure instead of each trying again", async () => {
  const { proxy } = await daemonServing(tomlTable("b1"));
  proxy.stall = true;
  const mf = await fromDaemon(proxy, { HOST_TABLE_REFRESH_MS: "60000", DAEMON_TIMEOUT_MS: "300" });
  const zoneB = { headers: { "x-edgewise-zone": "b" } };
  const seen = await Promise.all(Array.from({ length: 6 }, () => labels(mf, 1, zoneB)));
  assert.deepEqual(only(seen.flat()), [503]);
  assert.equal(proxy.requests, 1, "each waiting request asked the daemon again");
  // Past the retry time, a request tries again, and finds the daemon answering.
  proxy.stall = false;
  await new Promise((resolve) => setTimeout(resolve, 1100));
  assert.deepEqual(only(await labels(mf, 2, zoneB)), ["b1"]);
});

test("concurrent first requests of an isolate wait for one fetch of the daemon's table", async () => {
  const { proxy } = await daemonServing(tomlTable("b1"));
  const mf = await fromDaemon(proxy, { HOST_TABLE_REFRESH_MS: "60000", DAEMON_TIMEOUT_MS: "2000" });
  const zoneB = { headers: { "x-edgewise-zone": "b" } };
  const seen = await Promise.all(Array.from({ length: 8 }, () => labels(mf, 1, zoneB)));
  assert.deepEqual(only(seen.flat()), ["b1"]);
  assert.equal(proxy.requests, 1, "each request fetched the table");
});
