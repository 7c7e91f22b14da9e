// Loads the *built* worker (build/index.js + build/index_bg.wasm, as worker-build emits them)
// into Miniflare, configured the way wrangler.toml configures it.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { Miniflare } from "miniflare";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const BUILD = path.join(ROOT, "build");

export function compatibilityDate() {
  const toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  const date = toml.match(/^compatibility_date\s*=\s*"([^"]+)"/m);
  if (!date) throw new Error("wrangler.toml has no compatibility_date");
  return date[1];
}

// `build` is a worker-build output directory: build/ by default, another for benchmark builds.
// `options` are more Miniflare options: { host, port } also serves the worker over HTTP there
// (port 0: the kernel's pick), `serviceBindings` stands in for an mtls_certificates binding.
export async function startWorker(bindings, build = BUILD, options = {}) {
  const mf = new Miniflare({
    ...options,
    modulesRoot: build,
    modules: [
      { type: "ESModule", path: path.join(build, "index.js") },
      { type: "CompiledWasm", path: path.join(build, "index_bg.wasm") },
    ],
    compatibilityDate: compatibilityDate(),
    bindings,
  });
  await mf.ready;
  return mf;
}
