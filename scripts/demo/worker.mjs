// Serves the built worker (build/, as scripts/build-worker.sh left it) over HTTP in Miniflare,
// the workerd that `wrangler dev` runs, without wrangler's own build step: the demo builds the
// worker once. Writes the URL it serves on to --url-file once ready (the port is the kernel's
// pick, so no other process can take it first) and runs until SIGTERM or SIGINT. The worker's
// console output goes to stdout.
//
// usage: node scripts/demo/worker.mjs --url-file FILE [--var NAME=VALUE]...

import { writeFileSync, renameSync } from "node:fs";
import { parseArgs } from "node:util";
import { startWorker } from "../../tests/js/support/worker.mjs";

const { values } = parseArgs({
  options: {
    "url-file": { type: "string" },
    var: { type: "string", multiple: true, default: [] },
  },
});
if (!values["url-file"]) throw new Error("--url-file is required");

const bindings = {};
for (const pair of values.var) {
  const eq = pair.indexOf("=");
  if (eq < 1) throw new Error(`--var ${pair}: expected NAME=VALUE`);
  bindings[pair.slice(0, eq)] = pair.slice(eq + 1);
}

const mf = await startWorker(bindings, undefined, { host: "127.0.0.1", port: 0 });
const url = await mf.ready;
const file = values["url-file"];
writeFileSync(`${file}.tmp`, `${url.origin}\n`);
renameSync(`${file}.tmp`, file);
console.log(`worker serving on ${url.origin}`);

const stop = async () => {
  await mf.dispose();
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
