// Where a worker's CPU goes in workerd: V8's sampling profiler over the inspector while
// forwarded requests (20 headers, two internal) go through the built edgewise worker or its
// plain-JS peer (benches/js/peer/worker.mjs). Prints self time by function, per request.
// Wasm functions show by their Rust names (the build keeps the name section).
//
//   node benches/js/profile-worker.mjs edgewise|peer [REQUESTS]

import path from "node:path";
import WebSocket from "ws";
import { Miniflare } from "miniflare";
import { startOrigin } from "../../tests/js/support/origin.mjs";
import { freePort } from "../../tests/js/support/services.mjs";
import { ROOT, compatibilityDate } from "../../tests/js/support/worker.mjs";

const which = process.argv[2] ?? "edgewise";
if (!["edgewise", "peer"].includes(which)) throw new Error("usage: profile-worker.mjs edgewise|peer [REQUESTS]");
const requests = Number(process.argv[3] ?? 1500);
const SAMPLING_US = 50;
const BUILD = path.join(ROOT, "build");
const HEADERS = [
  ["Accept", "text/html,application/xhtml+xml"],
  ["Accept-Encoding", "gzip, deflate, br"],
  ["Accept-Language", "en-US,en;q=0.9"],
  ["Cookie", "session=abc; theme=dark"],
  ["User-Agent", "Mozilla/5.0 (X11; Linux x86_64)"],
  ["X-Edgewise-Route", "zone=a"],
  ["X-Forwarded-User", "admin"],
];

const origin = await startOrigin({ label: "profile" });
const port = await freePort();
const code =
  which === "edgewise"
    ? {
        modulesRoot: BUILD,
        modules: [
          { type: "ESModule", path: path.join(BUILD, "index.js") },
          { type: "CompiledWasm", path: path.join(BUILD, "index_bg.wasm") },
        ],
      }
    : { modules: [{ type: "ESModule", path: path.join(ROOT, "benches/js/peer/worker.mjs") }] };
const mf = new Miniflare({
  inspectorPort: port,
  workers: [
    {
      name: "profiled",
      compatibilityDate: compatibilityDate(),
      bindings: {
        ORIGIN_URL: origin.url,
        INTERNAL_HEADERS: "x-edgewise-*, x-forwarded-user",
        INTERNAL_RESPONSE_HEADERS: "x-powered-by",
      },
      ...code,
    },
  ],
});
await mf.ready;
const run = async (n) => {
  for (let i = 0; i < n; i++) {
    const res = await mf.dispatchFetch(`http://edge.test/page/${i}?respond=X-Powered-By:x`, { headers: HEADERS });
    await res.arrayBuffer();
  }
};
await run(300); // JIT tiers up first

const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
const target = targets.find((t) => t.id === "core:user:profiled");
if (!target) throw new Error(`no inspector target for the worker among ${targets.map((t) => t.id)}`);
const ws = new WebSocket(target.webSocketDebuggerUrl);
await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
const replies = new Map();
let id = 0;
ws.on("message", (data) => {
  const message = JSON.parse(data);
  replies.get(message.id)?.(message);
});
const call = (method, params = {}) =>
  new Promise((resolve) => {
    replies.set(++id, resolve);
    ws.send(JSON.stringify({ id, method, params }));
  });
await call("Profiler.enable");
await call("Profiler.setSamplingInterval", { interval: SAMPLING_US });
await call("Profiler.start");
await run(requests);
const { profile } = (await call("Profiler.stop")).result;
ws.close();
await mf.dispose();
await origin.close();

const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
for (const sample of profile.samples) {
  const { functionName, url, lineNumber } = nodes.get(sample).callFrame;
  const name = `${functionName || "(anonymous)"} ${path.basename(url || "")}${url ? `:${lineNumber}` : ""}`;
  self.set(name, (self.get(name) ?? 0) + 1);
}
const perRequest = (count) => (count * SAMPLING_US) / requests;
const busy = profile.samples.length - (self.get("(idle) ") ?? 0);
console.log(`${which}: ${requests} requests, ~${perRequest(busy).toFixed(0)} us sampled busy per request`);
for (const [name, count] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`${perRequest(count).toFixed(1).padStart(7)} us  ${name}`);
}
