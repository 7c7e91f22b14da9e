// The demo's traffic driver (scripts/demo.sh runs it once everything is up): sends a realistic
// mix of requests through the worker, checks every answer against what the configuration says
// must happen, prints a summary and exits 1 if any invariant failed.
//
//   node scripts/demo/traffic.mjs --worker URL --daemon URL --secret-file FILE --hosts FILE
//        --origin LABEL=PORT... --issuer BIN --issuer-key PEM --reader BIN --features-dir DIR
//        --defaults shared/src/headers/defaults.rs [--worker-log FILE] [--token-store TEXT]
//        [--table T --key K --csv FILE (default scripts/demo/user_risk.csv)]
//
// The mix: routed requests with every combination of routing metadata (zone from a header,
// stage from the query; GETs and PUTs with bodies), requests carrying internal headers a client
// must not be able to send (and asking the origin for internal response headers), origin
// errors and redirects that must pass through, and Privacy Pass traffic on /private: missing,
// valid, replayed, concurrently replayed and forged tokens. Every request is timed client-side.

import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";

// --- command line ------------------------------------------------------------------------

const opts = { origin: [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const name = process.argv[i].replace(/^--/, "");
  const value = process.argv[i + 1];
  if (Array.isArray(opts[name])) opts[name].push(value);
  else opts[name] = value;
}
for (const required of ["worker", "daemon", "secret-file", "hosts", "issuer", "issuer-key", "reader", "features-dir", "defaults"]) {
  if (!opts[required]) throw new Error(`traffic.mjs: --${required} is required`);
}
const TABLE = opts.table ?? "user_risk";
const KEY = opts.key ?? "42";
const WORKER = opts.worker;
const CONCURRENCY = 8;

// --- what the configuration says ---------------------------------------------------------

// The host table as scripts/demo.sh generated it (only the shapes that file uses are parsed).
const originByPort = new Map(opts.origin.map((spec) => {
  const [label, port] = spec.split("=");
  return [Number(port), label];
}));
const hostsToml = readFileSync(opts.hosts, "utf8");
const hosts = [...hostsToml.matchAll(/address = "http:\/\/127\.0\.0\.1:(\d+)"\s*\nlabels = \{([^}]*)\}/g)]
  .map(([, port, labels]) => ({
    port: Number(port),
    name: originByPort.get(Number(port)) ?? "dead",
    live: originByPort.has(Number(port)),
    labels: Object.fromEntries([...labels.matchAll(/(\w+) = "([^"]*)"/g)].map(([, k, v]) => [k, v])),
  }));
if (hosts.length < 4 || !hosts.some((h) => !h.live)) throw new Error(`unexpected host table in ${opts.hosts}`);

// The subset rules of scripts/demo/hosts.toml.in: selectors [zone], [stage] and [zone, stage]
// (falling back to [zone]); no subset: the default subset, stage = prod.
const SELECTORS = [["zone"], ["stage"], ["stage", "zone"]];
const matching = (md) => hosts.filter((h) => Object.entries(md).every(([k, v]) => h.labels[k] === v));
function subsetOf(md) {
  const keys = Object.keys(md).sort();
  if (keys.length > 0 && SELECTORS.some((s) => s.join() === keys.join())) {
    const found = matching(md);
    if (found.length > 0) return { hosts: found, via: "subset" };
    if (keys.length === 2) {
      const zone = subsetOf({ zone: md.zone });
      return { ...zone, via: zone.via === "subset" ? "zone fallback" : zone.via };
    }
  }
  return { hosts: matching({ stage: "prod" }), via: "default subset" };
}

// The worker's built-in internal header lists, read from the source it is compiled from.
function defaultList(name) {
  const source = readFileSync(opts.defaults, "utf8");
  const body = source.match(new RegExp(`${name}: &\\[&str\\] = &\\[([\\s\\S]*?)\\];`))[1];
  return [...body.matchAll(/"([^"]+)"/g)].map(([, entry]) => entry);
}
const requestRules = defaultList("DEFAULT_INTERNAL_REQUEST_HEADERS");
const responseRules = defaultList("DEFAULT_INTERNAL_RESPONSE_HEADERS");
const isInternal = (rules, name) =>
  rules.some((r) => (r.endsWith("*") ? name.startsWith(r.slice(0, -1)) : name === r));
// A concrete header name for each rule ("x-debug-*" -> "x-debug-demo").
const injectable = requestRules.map((r) => r.replace(/\*$/, "demo"));

// Deterministic pseudo-randomness: the same mix on every run.
let seed = 20261122;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pickFrom = (list) => list[Math.floor(random() * list.length)];

// --- sending and checking ----------------------------------------------------------------

const results = [];
const failures = [];
const fail = (what) => failures.push(what);
const stats = {
  injected: 0, injectedReached: 0, routingHeaderSent: 0, routingHeaderReached: 0,
  benignSent: 0, benignReached: 0, respInternal: 0, respInternalReached: 0, respInternalByName: {}, respInternalReachedByName: {},
  benignRespSent: 0, benignRespReached: 0, admitted: 0, authReached: 0, bodies: 0, bodiesIntact: 0,
};

// Sends one request through the worker, times it, and checks what every request must satisfy:
// no internal header reached the origin, the answering origin's labels fit the metadata.
async function send(category, path, { md = {}, headers = {}, method = "GET", body } = {}) {
  const query = md.stage ? `${path.includes("?") ? "&" : "?"}stage=${md.stage}` : "";
  const h = { ...headers };
  if (md.zone) h["x-edgewise-zone"] = md.zone;
  const started = performance.now();
  let res, text;
  try {
    res = await fetch(WORKER + path + query, { method, headers: h, body, redirect: "manual", signal: AbortSignal.timeout(20_000) });
    text = await res.text();
  } catch (e) {
    const r = { category, status: "error", ms: performance.now() - started, md };
    results.push(r);
    fail(`${category} ${method} ${path}: ${e.cause?.message ?? e.message}`);
    return r;
  }
  const r = { category, status: res.status, ms: performance.now() - started, md, res, text, headers: h };
  r.label = res.headers.get("x-origin-label");
  results.push(r);
  if (r.label) {
    const subset = subsetOf(md);
    r.via = subset.via;
    if (!subset.hosts.some((x) => x.live && x.name === r.label)) {
      fail(`${category} ${path} with ${JSON.stringify(md)} answered by ${r.label}, outside ${subset.hosts.map((x) => x.name)}`);
    }
  }
  if (r.status === 200 && res.headers.get("content-type") === "application/json") {
    r.seen = JSON.parse(text);
    for (const name of Object.keys(r.seen.headers)) {
      if (isInternal(requestRules, name)) fail(`internal request header ${name} reached origin ${r.label}`);
    }
    if (md.zone) {
      stats.routingHeaderSent++;
      if ("x-edgewise-zone" in r.seen.headers) stats.routingHeaderReached++;
    }
    if (body !== undefined) {
      stats.bodies++;
      if (r.seen.body === body) stats.bodiesIntact++;
      else fail(`${category} ${method} ${path}: the origin got a different body`);
    }
  }
  for (const [name] of res.headers) {
    if (isInternal(responseRules, name)) fail(`internal response header ${name} reached the client`);
  }
  return r;
}

function expectStatus(r, want) {
  if (r.status !== want) fail(`${r.category}: expected ${want}, got ${r.status}${r.text ? ` (${r.text.slice(0, 80)})` : ""}`);
}

// Runs `jobs` (functions returning promises) with at most `n` in flight.
async function pool(jobs, n = CONCURRENCY) {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: n }, worker));
}

// --- the mix -----------------------------------------------------------------------------

const ZONES = ["eu", "us", "ap", "mars", undefined];
const STAGES = ["prod", "canary", "beta", undefined];
const metadata = (i) => {
  const md = {};
  const zone = ZONES[i % ZONES.length];
  const stage = STAGES[Math.floor(i / ZONES.length) % STAGES.length];
  if (zone) md.zone = zone;
  if (stage) md.stage = stage;
  return md;
};

// Plain traffic over every metadata combination (20 of them, 12 requests each); every fifth a
// PUT with a body, which must survive a retry on another host. (A POST is not idempotent, so
// the worker never sends it twice: one sent to the dead host before its ejection gets a 502.)
function routed() {
  return Array.from({ length: 240 }, (_, i) => async () => {
    const md = metadata(i);
    if (i % 5 === 4) {
      const body = JSON.stringify({ order: i, items: [1, 2, 3] });
      const r = await send("routed", `/api/orders/${i}`, { md, method: "PUT", body, headers: { "content-type": "application/json" } });
      return expectStatus(r, 200);
    }
    expectStatus(await send("routed", `/api/items/${i}?page=${i % 7}`, { md }), 200);
  });
}

// A client injecting internal headers (five names of the built-in list, different each time)
// next to a harmless one, and asking the origin to leak internal response headers.
const LEAKS = ["x-powered-by:PHP/8.3", "x-accel-redirect:/protected/file", "x-envoy-upstream-service-time:7", "surrogate-key:user-1"];
function internalHeaders() {
  return Array.from({ length: 60 }, (_, i) => async () => {
    const headers = { "x-request-tag": `demo-${i}` };
    for (let k = 0; k < 5; k++) headers[pickFrom(injectable)] = "evil";
    const respond = [...LEAKS, "x-demo-kept:1"].map((s) => `respond=${encodeURIComponent(s)}`).join("&");
    const r = await send("internal-headers", `/account/settings?${respond}`, { md: metadata(i * 3), headers });
    expectStatus(r, 200);
    if (!r.seen) return;
    const injected = Object.keys(headers).filter((n) => isInternal(requestRules, n));
    stats.injected += injected.length;
    stats.injectedReached += injected.filter((n) => n in r.seen.headers).length;
    stats.benignSent++;
    if (r.seen.headers["x-request-tag"] === headers["x-request-tag"]) stats.benignReached++;
    else fail("a harmless request header (x-request-tag) did not reach the origin");
    for (const leak of LEAKS) {
      const name = leak.split(":")[0];
      stats.respInternal++;
      stats.respInternalByName[name] = (stats.respInternalByName[name] ?? 0) + 1;
      if (r.res.headers.has(name)) {
        stats.respInternalReached++;
        stats.respInternalReachedByName[name] = (stats.respInternalReachedByName[name] ?? 0) + 1;
      }
    }
    stats.benignRespSent++;
    if (r.res.headers.get("x-demo-kept") === "1") stats.benignRespReached++;
    else fail("a harmless response header (x-demo-kept) did not reach the client");
  });
}

// Origin errors and redirects are the origin's answer: they pass through unchanged.
function originStatuses() {
  const cases = [["/status/404", 404], ["/status/503", 503], ["/redirect", 302]];
  return Array.from({ length: 12 }, (_, i) => async () => {
    const [path, want] = cases[i % cases.length];
    const r = await send("origin-status", path, { md: metadata(i) });
    expectStatus(r, want);
    if (want === 503 && r.text !== "status 503") fail("an origin 503 did not pass through unchanged");
  });
}

const challengeOf = (r) => r.res?.headers.get("www-authenticate")?.match(/challenge="([^"]+)"/)?.[1];

// No token on a token path: 401 with a challenge.
async function missingToken(i) {
  const r = await send("token-missing", `/private/report/${i}`, { md: metadata(i) });
  expectStatus(r, 401);
  if (r.status === 401 && !challengeOf(r)) fail("a 401 without a WWW-Authenticate challenge");
  return r;
}

function mint(challenge, count) {
  const out = execFileSync(opts.issuer, ["token", "--key", opts["issuer-key"], "--challenge", challenge, "--count", String(count)], { encoding: "utf8" });
  return out.trim().split("\n");
}

const auth = (token) => ({ authorization: `PrivateToken token="${token}"` });

async function useToken(category, token, i) {
  const r = await send(category, `/private/report/${i}`, { md: metadata(i), headers: auth(token) });
  if (r.status === 200) {
    stats.admitted++;
    if (r.seen && "authorization" in r.seen.headers) {
      stats.authReached++;
      fail("a token reached the origin (authorization header)");
    }
  }
  return r;
}

// Flips one character in the middle of a token: a different nonce, key id or signature.
function forge(token, i) {
  if (i % 3 === 2) return "bm90IGEgdG9rZW4=";
  const at = i % 3 === 0 ? Math.floor(token.length / 2) : token.length - 10;
  const c = token[at] === "A" ? "B" : "A";
  return token.slice(0, at) + c + token.slice(at + 1);
}

// --- run ---------------------------------------------------------------------------------

const started = performance.now();

// Eight clients each get a challenge from a 401 and have the issuer sign tokens for it: five to
// spend, two to forge from, one to use concurrently.
const tokens = { valid: [], forgeFrom: [], race: [] };
for (let c = 0; c < 8; c++) {
  const challenge = challengeOf(await missingToken(1000 + c));
  if (!challenge) throw new Error("the worker gave no challenge on /private: is TOKEN_PATHS set?");
  const minted = mint(challenge, c < 4 ? 8 : 7);
  tokens.valid.push(...minted.slice(0, 5));
  tokens.forgeFrom.push(...minted.slice(5, 7));
  if (minted[7]) tokens.race.push(minted[7]);
}

// The mixed phase: everything that does not depend on an earlier answer, shuffled, eight in flight.
const mixed = [
  ...routed(),
  ...internalHeaders(),
  ...originStatuses(),
  ...Array.from({ length: 20 }, (_, i) => () => missingToken(i)),
  ...tokens.valid.map((t, i) => async () => expectStatus(await useToken("token-valid", t, i), 200)),
  ...tokens.forgeFrom.map((t, i) => async () => expectStatus(await useToken("token-forged", forge(t, i), i), 401)),
];
for (let i = mixed.length - 1; i > 0; i--) {
  const j = Math.floor(random() * (i + 1));
  [mixed[i], mixed[j]] = [mixed[j], mixed[i]];
}
await pool(mixed);

// Replays of spent tokens, one after another, and each race token sent ten times at once:
// exactly one of the ten may be admitted.
for (let i = 0; i < 20; i++) expectStatus(await useToken("token-replay", tokens.valid[i], i), 401);
const races = [];
for (const [t, token] of tokens.race.entries()) {
  const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => useToken("token-race", token, t * 10 + i)));
  const admitted = burst.filter((r) => r.status === 200).length;
  const refused = burst.filter((r) => r.status === 401).length;
  races.push({ admitted, refused });
  if (admitted !== 1) fail(`a token sent 10 times at once was admitted ${admitted} times`);
  if (admitted + refused !== 10) fail(`a concurrent replay got ${burst.map((r) => r.status)}`);
}
const elapsed = (performance.now() - started) / 1000;

// --- what the daemon says ----------------------------------------------------------------

const bearer = { authorization: `Bearer ${readFileSync(opts["secret-file"], "utf8").trim()}` };
const metricsText = await (await fetch(`${opts.daemon}/metrics`, { headers: bearer })).text();
const metric = (name) =>
  metricsText.split("\n").filter((l) => l.startsWith(name) && !l.startsWith("#")).map((l) => {
    const [, labels = "", value] = l.match(/^[a-z_]+(?:\{([^}]*)\})? (\S+)$/) ?? [];
    return { labels, value };
  });

// The feature snapshot scripts/demo.sh dropped into the ingest directory, read the two ways an
// origin app can: the daemon's HTTP API and the memory-mapped store.
async function featureRow() {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await fetch(`${opts.daemon}/v1/features/${TABLE}/${KEY}`, { headers: bearer });
    if (res.status === 200 || Date.now() > deadline) return { status: res.status, body: await res.text() };
    await new Promise((r) => setTimeout(r, 200));
  }
}
const api = await featureRow();
let mapped;
try {
  mapped = { ok: true, out: execFileSync(opts.reader, [opts["features-dir"], TABLE, KEY], { encoding: "utf8" }).trim() };
} catch (e) {
  mapped = { ok: false, out: `${e.stdout ?? ""}${e.stderr ?? ""}`.trim() || e.message };
}
const csvRow = readFileSync(opts.csv ?? new URL("./user_risk.csv", import.meta.url), "utf8")
  .split("\n").find((l) => l.startsWith(`${KEY},`))?.split(",").slice(1).map((v) => Math.fround(Number(v)));
const sameValues = (values) => values?.length === csvRow?.length && values.every((v, i) => Math.fround(v) === csvRow[i]);
if (api.status !== 200) fail(`GET /v1/features/${TABLE}/${KEY}: ${api.status} ${api.body}`);
else if (!sameValues(JSON.parse(api.body).values)) fail(`GET /v1/features/${TABLE}/${KEY} differs from the CSV: ${api.body}`);
const mappedValues = mapped.out.match(/= \[([^\]]*)\]/)?.[1].split(",").map(Number);
if (!mapped.ok) fail(`read_features failed: ${mapped.out}`);
else if (!sameValues(mappedValues)) fail(`read_features differs from the CSV: ${mapped.out}`);

// The worker logs every retry ("...; retrying on http://...").
const workerLog = opts["worker-log"] ? readFileSync(opts["worker-log"], "utf8") : "";
const retriedOn = {};
for (const [, port] of workerLog.matchAll(/retrying on http:\/\/127\.0\.0\.1:(\d+)/g)) {
  const label = originByPort.get(Number(port)) ?? `:${port}`;
  retriedOn[label] = (retriedOn[label] ?? 0) + 1;
}
const retries = Object.values(retriedOn).reduce((a, b) => a + b, 0);

// --- summary -----------------------------------------------------------------------------

const bold = (s) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const pct = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const ms = (x) => (Number.isNaN(x) ? "-" : x.toFixed(1));
function table(head, rows) {
  const all = [head, ...rows].map((r) => r.map(String));
  const widths = head.map((_, c) => Math.max(...all.map((r) => (r[c] ?? "").length)));
  // Columns of numbers are right-aligned, the others left-aligned.
  const numeric = head.map((_, c) => rows.every((r) => /^[\d.-]*$/.test(String(r[c] ?? ""))));
  const line = (r) => r.map((cell, c) => (numeric[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join("  ").trimEnd();
  console.log(bold(line(all[0])));
  for (const r of all.slice(1)) console.log(line(r));
}

const ORDER = ["routed", "internal-headers", "origin-status", "token-missing", "token-valid", "token-forged", "token-replay", "token-race"];
const categories = [...new Set(results.map((r) => r.category))].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
const statuses = [...new Set(results.map((r) => r.status))].sort();
console.log(`\n${bold("== requests by category and outcome")} (${results.length} requests in ${elapsed.toFixed(1)} s, up to ${CONCURRENCY} in flight)`);
const latencyRow = (name, rs) => {
  const lat = rs.map((r) => r.ms);
  return [name, rs.length, ...statuses.map((s) => rs.filter((r) => r.status === s).length || ""), ms(pct(lat, 50)), ms(pct(lat, 99)), ms(Math.max(...lat))];
};
table(["category", "n", ...statuses.map(String), "p50 ms", "p99 ms", "max ms"], [
  ...categories.map((c) => latencyRow(c, results.filter((r) => r.category === c))),
  latencyRow("all", results),
]);

console.log(`\n${bold("== headers")}`);
table(["what", "sent", "reached the other side", "stripped"], [
  ["internal request headers injected (as origins saw them)", stats.injected, stats.injectedReached, stats.injected - stats.injectedReached],
  ["routing header x-edgewise-zone (read, then stripped)", stats.routingHeaderSent, stats.routingHeaderReached, stats.routingHeaderSent - stats.routingHeaderReached],
  ["harmless request header x-request-tag", stats.benignSent, stats.benignReached, stats.benignSent - stats.benignReached],
  ...Object.entries(stats.respInternalByName).map(([name, n]) => {
    const reached = stats.respInternalReachedByName[name] ?? 0;
    return [`internal response header ${name}`, n, reached, n - reached];
  }),
  ["harmless response header x-demo-kept", stats.benignRespSent, stats.benignRespReached, stats.benignRespSent - stats.benignRespReached],
  ["Privacy Pass token (authorization) of admitted requests", stats.admitted, stats.authReached, stats.admitted - stats.authReached],
]);
// Every internal response header is checked on every answer above; the per-name rows count the
// ones the origins were asked to send.
if (stats.respInternalReached > 0) fail(`${stats.respInternalReached} internal response headers reached clients`);

console.log(`\n${bold("== routing: requests per origin")}`);
const answered = results.filter((r) => r.label);
table(["origin", "labels", "answered"], hosts.map((h) => [
  h.live ? h.name : `(dead) :${h.port}`,
  Object.entries(h.labels).map(([k, v]) => `${k}=${v}`).join(" "),
  h.live ? answered.filter((r) => r.label === h.name).length : `0 (worker retried ${retries} requests elsewhere)`,
]));

console.log(`\n${bold("== routing: requests per metadata (zone from header, stage from query)")}`);
const groups = new Map();
for (const r of answered) {
  const key = `${r.md.zone ?? "-"}|${r.md.stage ?? "-"}`;
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key).push(r);
}
table(["zone", "stage", "n", "subset", "answered by"], [...groups.entries()].sort().map(([key, rs]) => {
  const [zone, stage] = key.split("|");
  const by = {};
  for (const r of rs) by[r.label] = (by[r.label] ?? 0) + 1;
  const md = rs[0].md;
  const subset = subsetOf(md);
  const deadIn = subset.hosts.some((h) => !h.live) ? " +dead" : "";
  return [zone, stage, rs.length, subset.via + deadIn, Object.entries(by).sort().map(([l, n]) => `${l} ${n}`).join(", ")];
}));
const deadSubset = results.filter((r) => r.label && subsetOf(r.md).hosts.some((h) => !h.live));
const unreachable = results.filter((r) => r.status === 502).length;
console.log(`dead origin: ${deadSubset.length} requests routed to subsets holding it, every one answered by a live origin;`);
console.log(`  the worker retried ${retries} of them on another host of the subset (${Object.entries(retriedOn).sort().map(([l, n]) => `${l} ${n}`).join(", ")}); 502s: ${unreachable}`);
if (unreachable > 0) fail(`${unreachable} requests got 502 (origin unreachable)`);
if (deadSubset.length > 0 && retries === 0 && workerLog) fail("no retry of the dead origin in the worker log");

console.log(`\n${bold("== Privacy Pass")} (spend records: ${opts["token-store"] ?? "?"})`);
const count = (cat, status) => results.filter((r) => r.category === cat && r.status === status).length;
const all = (cat) => results.filter((r) => r.category === cat).length;
const blocked = count("token-replay", 401) + races.reduce((n, r) => n + r.refused, 0);
table(["what", "n", "result"], [
  ["missing token", all("token-missing"), `${count("token-missing", 401)} x 401 with a challenge`],
  ["valid fresh token", all("token-valid"), `${count("token-valid", 200)} admitted`],
  ["forged token", all("token-forged"), `${count("token-forged", 401)} refused`],
  ["replay of a spent token", all("token-replay"), `${count("token-replay", 401)} refused`],
  [`one token sent 10 times at once (x${races.length})`, all("token-race"), `${races.map((r) => r.admitted).join("+")} admitted, ${races.reduce((n, r) => n + r.refused, 0)} refused`],
  ["double spends blocked", blocked, blocked === 20 + races.length * 9 ? "all" : "NOT ALL"],
]);

console.log(`\n${bold("== daemon /metrics")}`);
const redemptions = Object.fromEntries(metric("edgewise_token_redemptions_total").map(({ labels, value }) => [labels.match(/outcome="([^"]+)"/)?.[1] ?? labels, Number(value)]));
const gauge = (name) => metric(name)[0]?.value ?? "-";
console.log(`token redemptions by outcome: ${Object.entries(redemptions).map(([k, v]) => `${k} ${v}`).join(", ")} (tokens the worker admitted: ${stats.admitted})`);
console.log(`host table: version ${gauge("edgewise_hosts_version")}, ${gauge("edgewise_hosts_hosts")} hosts`);
console.log(`feature store: version ${gauge("edgewise_features_version")}, ${gauge("edgewise_features_keys")} keys, ${gauge("edgewise_features_ingested_files_total")} snapshot file(s) ingested`);
if (redemptions.fresh !== stats.admitted) fail(`the daemon counted ${redemptions.fresh} fresh redemptions, the worker admitted ${stats.admitted} tokens`);
if ((redemptions.failed_open ?? 0) > 0) fail("the daemon failed open");

console.log(`\n${bold("== feature snapshot, as origin apps read it")} (${TABLE}.csv dropped into the ingest directory)`);
console.log(`GET /v1/features/${TABLE}/${KEY} (daemon API): ${api.status} ${api.body}`);
console.log(`read_features (memory-mapped store):   ${mapped.out.replace(/\n/g, "; ")}`);

console.log(`\n${bold("== invariants")}`);
if (failures.length === 0) {
  console.log("all hold: no internal header reached an origin or a client, no replay admitted, every valid token admitted, every request routed within its subset, no unexpected 5xx");
} else {
  const unique = [...new Set(failures)];
  console.log(`FAILED: ${failures.length} checks (${unique.length} distinct)`);
  for (const f of unique.slice(0, 20)) console.log(`  - ${f}`);
  if (unique.length > 20) console.log(`  ... and ${unique.length - 20} more`);
  process.exit(1);
}
