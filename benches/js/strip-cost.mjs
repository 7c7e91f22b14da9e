// What the worker's header-stripping step costs per request: the same request stream through
// two instances of the built worker in Miniflare, one with the default internal header lists
// and one with stripping off, interleaved round by round. Reports latency percentiles and the
// CPU time the workerd process spent per request (from /proc, so Linux only).
//
//   node benches/js/strip-cost.mjs [ROUNDS] [REQUESTS_PER_ROUND]

import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { Miniflare } from "miniflare";
import { startOrigin } from "../../tests/js/support/origin.mjs";
import { ROOT, compatibilityDate } from "../../tests/js/support/worker.mjs";

const rounds = Number(process.argv[2] ?? 20);
const perRound = Number(process.argv[3] ?? 200);
const build = path.join(ROOT, "build");
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

// A browser-like request: 20 header names, Title-Case, two of them internal.
const HEADERS = [
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
const RESPOND = ["X-Powered-By:Express", "Cache-Control:max-age=60", "Vary:Accept-Encoding"]
  .map((r) => `respond=${encodeURIComponent(r)}`)
  .join("&");

function childWorkerds() {
  const pids = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (stat.includes("(workerd)") && Number(fields[1]) === process.pid) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

async function instance(name, bindings) {
  const before = new Set(childWorkerds());
  const mf = new Miniflare({
    modulesRoot: build,
    modules: [
      { type: "ESModule", path: path.join(build, "index.js") },
      { type: "CompiledWasm", path: path.join(build, "index_bg.wasm") },
    ],
    compatibilityDate: compatibilityDate(),
    bindings,
  });
  await mf.ready;
  const pid = childWorkerds().find((p) => !before.has(p));
  return { name, mf, pid, samples: [], cpu: 0 };
}

async function round(inst, origin) {
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

const origin = await startOrigin({ label: "bench" });
const on = await instance("stripping on (defaults)", { ORIGIN_URL: origin.url });
const off = await instance("stripping off", {
  ORIGIN_URL: origin.url,
  INTERNAL_HEADERS: "",
  INTERNAL_RESPONSE_HEADERS: "",
});
// Warm both (JIT, connection pools), then interleave so drift hits both alike.
await round(on, origin);
await round(off, origin);
for (const inst of [on, off]) Object.assign(inst, { samples: [], cpu: 0 });
for (let r = 0; r < rounds; r++) {
  const order = r % 2 ? [on, off] : [off, on];
  for (const inst of order) await round(inst, origin);
}
await on.mf.dispose();
await off.mf.dispose();
await origin.close();

const n = rounds * perRound;
for (const inst of [on, off]) {
  console.log(
    `${inst.name.padEnd(24)} p50 ${pct(inst.samples, 0.5).toFixed(0)} us  p99 ${pct(inst.samples, 0.99).toFixed(0)} us  workerd CPU ${((inst.cpu / n) * 1e6).toFixed(1)} us/request`,
  );
}
const dCpu = ((on.cpu - off.cpu) / n) * 1e6;
const dP50 = pct(on.samples, 0.5) - pct(off.samples, 0.5);
console.log(
  `strip step: ${dCpu.toFixed(1)} us CPU/request (${((on.cpu / off.cpu - 1) * 100).toFixed(1)}% of workerd CPU), p50 latency ${dP50 >= 0 ? "+" : ""}${dP50.toFixed(0)} us; ${n} requests each, CPU resolution ${((1 / TICKS_PER_SECOND / n) * 1e6).toFixed(1)} us/request`,
);
