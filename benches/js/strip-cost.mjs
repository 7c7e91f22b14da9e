// What the worker's header-stripping step costs per request, two ways:
// 1. inside the runtime: a build with the `bench` feature (scripts/bench-strip.sh makes it in
//    .edgewise/build-bench) times each part of the step in a loop on a browser-like request;
// 2. end to end: the same request stream through instances of the normal build in Miniflare
//    (default lists; stripping off, twice; request side only; response side only), interleaved round
//    by round, with latency percentiles and the workerd process's CPU time per request. This
//    is the user's view, but two workerd processes of one configuration differ by more (a
//    second "off" instance shows by how much) than a step this small costs.
//
//   node benches/js/strip-cost.mjs [ROUNDS] [REQUESTS_PER_ROUND]

import path from "node:path";
import { startOrigin } from "../../tests/js/support/origin.mjs";
import { ROOT, startWorker } from "../../tests/js/support/worker.mjs";
import { HEADERS, RESPOND } from "./support/request.mjs";
import { TICKS_PER_SECOND, cpuSeconds, withPid } from "./support/workerd.mjs";

const rounds = Number(process.argv[2] ?? 20);
const perRound = Number(process.argv[3] ?? 200);

async function instance(name, bindings) {
  const { mf, pid } = await withPid(() => startWorker(bindings));
  return { name, mf, pid, samples: [], cpu: 0 };
}

async function round(inst) {
  const cpu0 = cpuSeconds(inst.pid);
  for (let i = 0; i < perRound; i++) {
    const t0 = process.hrtime.bigint();
    const res = await inst.mf.dispatchFetch(`http://edge.test/page/${i}?${RESPOND}`, { headers: HEADERS });
    await res.arrayBuffer();
    inst.samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  inst.cpu += cpuSeconds(inst.pid) - cpu0;
}

const pct = (s, q) => [...s].sort((a, b) => a - b)[Math.floor(q * (s.length - 1))];

async function inRuntime() {
  const dir = path.join(ROOT, ".edgewise/build-bench");
  const mf = await startWorker({ ORIGIN_URL: "http://127.0.0.1:9" }, dir);
  const runs = [];
  for (let i = 0; i < 7; i++) {
    const res = await mf.dispatchFetch("http://edge.test/__edgewise/bench/strip?n=2000", { headers: HEADERS });
    runs.push(await res.json());
  }
  await mf.dispose();
  const median = (key) => pct(runs.map((r) => r[key]), 0.5);
  const fmt = (key) => `${median(key).toFixed(2)} us`;
  console.log(`in the runtime (${runs[0].headers} headers, median of 7 x ${runs[0].n}):`);
  console.log(`  strip decision (names cross once + Rust lookup): ${fmt("decideUs")}`);
  console.log(`    of which enumerating Headers and the crossing:  ${fmt("namesCrossingUs")}`);
  console.log(`  worker's outbound request, empty strip set:      ${fmt("outboundPlainUs")}`);
  console.log(`  worker's outbound request, configured set:       ${fmt("outboundStrippedUs")}`);
  console.log(
    `  => strip step adds ${(median("outboundStrippedUs") - median("outboundPlainUs")).toFixed(2)} us per request; copying a Headers (avoided) costs ${fmt("headersCopyUs")}`,
  );
}

await inRuntime();
const origin = await startOrigin({ label: "bench" });
const on = await instance("stripping on (defaults)", { ORIGIN_URL: origin.url });
const offBindings = { ORIGIN_URL: origin.url, INTERNAL_HEADERS: "", INTERNAL_RESPONSE_HEADERS: "" };
const off = await instance("stripping off", offBindings);
// The same configuration in a second workerd: how far two processes differ with no change at
// all. Measured at 44-411 us CPU a request (2026-11-25), more than the whole step costs.
const offAgain = await instance("stripping off, again", offBindings);
const requestOnly = await instance("request stripping only", {
  ORIGIN_URL: origin.url,
  INTERNAL_RESPONSE_HEADERS: "",
});
const responseOnly = await instance("response stripping only", {
  ORIGIN_URL: origin.url,
  INTERNAL_HEADERS: "",
});
const all = [on, off, offAgain, requestOnly, responseOnly];
// Warm all (JIT, connection pools), then interleave so drift hits all alike.
for (const inst of all) await round(inst);
for (const inst of all) Object.assign(inst, { samples: [], cpu: 0 });
for (let r = 0; r < rounds; r++) {
  const order = r % 2 ? all : [...all].reverse();
  for (const inst of order) await round(inst);
}
for (const inst of all) await inst.mf.dispose();
await origin.close();

const n = rounds * perRound;
for (const inst of all) {
  console.log(
    `${inst.name.padEnd(26)} p50 ${pct(inst.samples, 0.5).toFixed(0)} us  p99 ${pct(inst.samples, 0.99).toFixed(0)} us  workerd CPU ${((inst.cpu / n) * 1e6).toFixed(1)} us/request`,
  );
}
const perRequest = (a, b) => ((a.cpu - b.cpu) / n) * 1e6;
const p50 = (a, b) => pct(a.samples, 0.5) - pct(b.samples, 0.5);
const signed = (x) => `${x >= 0 ? "+" : ""}${x.toFixed(0)}`;
console.log(
  `strip step: ${perRequest(on, off).toFixed(1)} us CPU/request (${((on.cpu / off.cpu - 1) * 100).toFixed(1)}% of workerd CPU), p50 latency ${signed(p50(on, off))} us; ${n} requests each, CPU resolution ${((1 / TICKS_PER_SECOND / n) * 1e6).toFixed(1)} us/request`,
);
console.log(
  `noise floor: the two "off" processes differ by ${perRequest(offAgain, off).toFixed(1)} us CPU/request, p50 ${signed(p50(offAgain, off))} us; a step difference smaller than that is not measured here`,
);
