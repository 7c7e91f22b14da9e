// Per-request latency of a built worker in Miniflare, forwarding to a local origin, beside the
// same origin fetched directly (the floor no worker can beat). Prints percentiles and ratios.
//
//   node benches/js/worker-latency.mjs [BUILD_DIR] [REQUESTS]

import path from "node:path";
import { statSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { startOrigin } from "../../tests/js/support/origin.mjs";
import { ROOT, startWorker } from "../../tests/js/support/worker.mjs";

const build = path.resolve(process.argv[2] ?? path.join(ROOT, "build"));
const requests = Number(process.argv[3] ?? 3000);
const wasm = path.join(build, "index_bg.wasm");

function percentiles(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999) };
}

async function time(fn) {
  const samples = [];
  for (let i = 0; i < requests; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  return percentiles(samples);
}

const origin = await startOrigin({ label: "bench" });
const coldStart = process.hrtime.bigint();
const mf = await startWorker({ ORIGIN_URL: origin.url }, build);
await (await mf.dispatchFetch("http://edge.test/warm")).arrayBuffer();
const coldMs = Number(process.hrtime.bigint() - coldStart) / 1e6;

const body = "x".repeat(1024);
const direct = await time(async (i) => {
  const r = await fetch(`${origin.url}/item/${i}?q=1`, { method: "POST", body });
  await r.arrayBuffer();
});
const viaWorker = await time(async (i) => {
  const r = await mf.dispatchFetch(`http://edge.test/item/${i}?q=1`, { method: "POST", body });
  await r.arrayBuffer();
});
await mf.dispose();
await origin.close();

const bytes = readFileSync(wasm);
const result = {
  build,
  wasmBytes: statSync(wasm).size,
  wasmGzipBytes: gzipSync(bytes, { level: 9 }).length,
  coldStartMs: Math.round(coldMs),
  requests,
  directUs: direct,
  workerUs: viaWorker,
  workerOverDirectP50: +(viaWorker.p50 / direct.p50).toFixed(2),
};
console.log(JSON.stringify(result));
