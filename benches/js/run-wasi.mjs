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
// Node 20 can crash tearing down a WASI instance whose memory grew large, after the module has
// printed everything: as late as inside its `proc_exit`. So the module's own status is recorded
// (scripts/lib.sh reads it) the moment it asks to exit, before Node does anything else.
const record = (status) => {
  if (process.env.RUN_WASI_STATUS) writeFileSync(process.env.RUN_WASI_STATUS, `${status}\n`);
};
const imports = wasi.getImportObject();
const preview1 = imports.wasi_snapshot_preview1;
const exit = preview1.proc_exit;
preview1.proc_exit = (status) => {
  record(status);
  return exit(status);
};
const module = await WebAssembly.compile(await readFile(wasmPath));
const instance = await WebAssembly.instantiate(module, imports);
const status = wasi.start(instance);
record(status);
process.exit(status);
