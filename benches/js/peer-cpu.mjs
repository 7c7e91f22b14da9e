// edgewise beside its plain-JavaScript peer (benches/js/peer/worker.mjs): workerd CPU time per
// request for three kinds of request, both workers in the same workerd, run round by round in
// alternating order. A second instance of the peer in the same process shows how far two
// workers of the same code differ (the noise floor). Then, inside the runtime (the worker's
// bench build), the token check against WebCrypto's verify alone.
//
//   scripts/bench-peer.sh [ROUNDS] [REQUESTS_PER_ROUND]
//   KINDS=forwarded,routed scripts/bench-peer.sh ...   (some kinds only)
//
// Kinds: forwarded (a browser-like request with 20 headers, two internal, and three response
// headers, one internal), routed (the same with a zone header, by a 6-host table), and
// token-checked (the forwarded request to a token path with a fresh token: WebCrypto verify,
// a spend at the real edgewised and memcached). Miniflare's own work (its entry worker, the
// loopback HTTP) is in every figure alike.

import { createHash, generateKeyPairSync, sign, constants } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Miniflare } from "miniflare";
import { startOrigin } from "../../tests/js/support/origin.mjs";
import { startDaemon, startMemcached } from "../../tests/js/support/services.mjs";
import { ROOT, compatibilityDate, startWorker } from "../../tests/js/support/worker.mjs";
import { HEADERS, RESPOND } from "./support/request.mjs";
import { TICKS_PER_SECOND, cpuSeconds, withPid } from "./support/workerd.mjs";

const rounds = Number(process.argv[2] ?? 10);
const perRound = Number(process.argv[3] ?? 300);
const BUILD = path.join(ROOT, "build");
const BENCH_BUILD = path.join(ROOT, ".edgewise/build-bench");
const PEER = path.join(ROOT, "benches/js/peer/worker.mjs");
const SECRET = "bench-secret-0123456789abcdef";

// edgewise's built-in lists, given to both workers explicitly so that both strip the same.
function defaultList(name) {
  const source = readFileSync(path.join(ROOT, "shared/src/headers/defaults.rs"), "utf8");
  const body = source.slice(source.indexOf(`pub const ${name}`)).split("];")[0];
  return [...body.matchAll(/"([^"]+)"/g)].map((m) => m[1]).join(",");
}

const sha256 = (bytes) => createHash("sha256").update(bytes).digest();
const issuerKey = generateKeyPairSync("rsa", { modulusLength: 2048, publicExponent: 65537 });
// RFC 9578's PSS form: the key id is the SHA-256 of it.
const pssSpki = Buffer.concat([
  Buffer.from(
    "30820152303d06092a864886f70d01010a3030a00d300b0609608648016503040202a11a301806092a864886f70d010108300b0609608648016503040202a2030201300382010f00",
    "hex",
  ),
  issuerKey.publicKey.export({ type: "spki", format: "der" }).subarray(-270),
]);
const ISSUER = "issuer.test";
// The challenge both workers issue: type 2, the issuer name, no context, no origin info.
const challenge = Buffer.concat([Buffer.from([0, 2, 0, ISSUER.length]), Buffer.from(ISSUER), Buffer.from([0, 0, 0])]);

function freshToken() {
  const input = Buffer.concat([Buffer.from([0, 2]), sha256(String(Math.random())), sha256(challenge), sha256(pssSpki)]);
  const signature = sign("sha384", input, {
    key: issuerKey.privateKey,
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: 48,
  });
  return `PrivateToken token="${Buffer.concat([input, signature]).toString("base64url")}"`;
}

const pct = (s, q) => [...s].sort((a, b) => a - b)[Math.floor(q * (s.length - 1))];
const median = (s) => pct(s, 0.5);

async function measureKind(kind, bindings, request) {
  const worker = (name, extra) => ({
    name,
    routes: [`${name}.test/*`],
    compatibilityDate: compatibilityDate(),
    bindings,
    ...extra,
  });
  const peer = { modules: [{ type: "ESModule", path: PEER }] };
  const { mf, pid } = await withPid(async () => {
    const mf = new Miniflare({
      workers: [
        worker("edgewise", {
          modulesRoot: BUILD,
          modules: [
            { type: "ESModule", path: path.join(BUILD, "index.js") },
            { type: "CompiledWasm", path: path.join(BUILD, "index_bg.wasm") },
          ],
        }),
        worker("peer", peer),
        worker("peer-again", peer),
      ],
    });
    await mf.ready;
    return mf;
  });
  const instances = ["edgewise", "peer", "peer-again"].map((name) => ({ name, cpu: 0, samples: [] }));
  const batch = async (inst, n, record) => {
    const inits = Array.from({ length: n }, (_, i) => request(i));
    const cpu0 = cpuSeconds(pid);
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      const res = await mf.dispatchFetch(`http://${inst.name}.test${inits[i].path}`, inits[i].init);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${kind}: ${inst.name} answered ${res.status}`);
      if (record) inst.samples.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    if (record) inst.cpu += cpuSeconds(pid) - cpu0;
  };
  // Warm all (JIT tiers, connection pools), then alternate the order round by round.
  for (const inst of instances) await batch(inst, perRound, false);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? instances : [...instances].reverse();
    for (const inst of order) await batch(inst, perRound, true);
  }
  await mf.dispose();
  const n = rounds * perRound;
  const cpuUs = Object.fromEntries(instances.map((i) => [i.name, (i.cpu / n) * 1e6]));
  const p50 = Object.fromEntries(instances.map((i) => [i.name, median(i.samples)]));
  return { kind, requests: n, cpuUs, p50Us: p50 };
}

async function inRuntime(bindings) {
  const mf = await startWorker(bindings, BENCH_BUILD);
  const runs = [];
  for (let i = 0; i < 9; i++) {
    const res = await mf.dispatchFetch("http://edge.test/__edgewise/bench/token?n=1000", {
      headers: { authorization: freshToken() },
    });
    if (res.status !== 200) throw new Error(`bench/token: ${res.status} ${await res.text()}`);
    runs.push(await res.json());
  }
  await mf.dispose();
  // The first runs warm the JIT tiers up.
  const warm = runs.slice(3);
  const keys = Object.keys(warm[0]).filter((k) => k.endsWith("Us"));
  return Object.fromEntries(keys.map((k) => [k, median(warm.map((r) => r[k]))]));
}

const origin = await startOrigin({ label: "bench" });
const memcached = await startMemcached();
const daemon = await startDaemon({ secret: SECRET, memcached: memcached.addr });
const common = {
  ORIGIN_URL: origin.url,
  INTERNAL_HEADERS: defaultList("DEFAULT_INTERNAL_REQUEST_HEADERS"),
  INTERNAL_RESPONSE_HEADERS: defaultList("DEFAULT_INTERNAL_RESPONSE_HEADERS"),
};
const zones = ["a", "b", "c"];
const table = {
  version: 1,
  hosts: zones.flatMap((zone) =>
    [1, 2].map((h) => ({ address: `${origin.url}/${zone}${h}`, labels: { zone } })),
  ),
  subset: { fallback_policy: "ANY_ENDPOINT", selectors: [{ keys: ["zone"] }] },
};
const tokenVars = {
  ...common,
  TOKEN_PATHS: "/private",
  ISSUER_NAME: ISSUER,
  ISSUER_KEYS: `${pssSpki.toString("base64url")}@${Math.floor(Date.now() / 1000) + 86400}`,
  DAEMON_URL: daemon.url,
  DAEMON_SECRET: SECRET,
};

const kinds = {
  forwarded: [common, (i) => ({ path: `/page/${i}?${RESPOND}`, init: { headers: HEADERS } })],
  routed: [
    { ...common, HOST_TABLE: JSON.stringify(table), ROUTE_ATTRIBUTES: "zone=header:x-edgewise-zone" },
    (i) => ({
      path: `/page/${i}?${RESPOND}`,
      init: { headers: [...HEADERS, ["X-Edgewise-Zone", zones[i % 3]]] },
    }),
  ],
  "token-checked": [
    tokenVars,
    (i) => ({
      path: `/private/page/${i}?${RESPOND}`,
      init: { headers: [...HEADERS, ["Authorization", freshToken()]] },
    }),
  ],
};
const chosen = process.env.KINDS?.split(",") ?? Object.keys(kinds);
const results = [];
let runtime;
try {
  for (const kind of chosen) results.push(await measureKind(kind, ...kinds[kind]));
  if (chosen.includes("token-checked")) runtime = await inRuntime(tokenVars);
} finally {
  await daemon.close();
  await memcached.close();
  await origin.close();
}

const resolution = (1 / TICKS_PER_SECOND / (rounds * perRound)) * 1e6;
console.log(`workerd CPU per request (${rounds} x ${perRound} requests per worker, resolution ${resolution.toFixed(1)} us):`);
console.log("kind           edgewise   JS peer   ratio   peer again (noise)   p50 edgewise / peer");
for (const { kind, cpuUs, p50Us } of results) {
  console.log(
    `${kind.padEnd(14)} ${cpuUs.edgewise.toFixed(0).padStart(5)} us  ${cpuUs.peer.toFixed(0).padStart(5)} us  ${(cpuUs.edgewise / cpuUs.peer).toFixed(2).padStart(5)}   ${cpuUs["peer-again"].toFixed(0).padStart(5)} us (${(cpuUs["peer-again"] / cpuUs.peer).toFixed(2)})        ${p50Us.edgewise.toFixed(0)} / ${p50Us.peer.toFixed(0)} us`,
  );
}
if (runtime) {
console.log("token check inside the runtime (bench build, median of 6 x 1000):");
console.log(`  whole check (header, decode, challenge, key, signature): ${runtime.checkUs.toFixed(1)} us`);
console.log(`    steps before the signature:                           ${runtime.beforeSignatureUs.toFixed(1)} us`);
console.log(`    signature through the WebCrypto glue:                 ${runtime.signatureUs.toFixed(1)} us`);
console.log(`    an await of a settled promise from Rust:              ${runtime.settledAwaitUs.toFixed(1)} us`);
console.log(`  WebCrypto verify alone (JS loop):                       ${runtime.webcryptoVerifyUs.toFixed(1)} us`);
console.log(`  the Rust verifier as Wasm:                              ${runtime.rustVerifyUs.toFixed(1)} us`);
console.log(`  => check / WebCrypto verify alone: ${(runtime.checkUs / runtime.webcryptoVerifyUs).toFixed(2)}`);
}
console.log(JSON.stringify({ results, runtime }));
