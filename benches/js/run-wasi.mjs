// Runs a wasm32-wasip1 command module under Node's WASI (V8, the engine Workers run) and exits
// with its status. The module sees the given arguments and an empty environment.
//
//   node benches/js/run-wasi.mjs MODULE.wasm [ARGS...]

import { writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { WASI } from "node:wasi";

const [wasmPath, ...args] = process.argv.slice(2);
if (!wasmPath) {
  console.error("usage: node run-wasi.mjs MODULE.wasm [ARGS...]");
  process.exit(2);
}

const wasi = new WASI({ version: "preview1", args: [wasmPath, ...args], env: {}, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(wasmPath));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
const status = wasi.start(instance);
// Node 20 can crash tearing down a WASI instance whose memory grew large, after the module has
// returned and printed everything: record the module's own status first (scripts/lib.sh reads
// it), then exit at once.
if (process.env.RUN_WASI_STATUS) writeFileSync(process.env.RUN_WASI_STATUS, `${status}\n`);
process.exit(status);
