#!/usr/bin/env bash
# Builds the Wasm worker into build/ (index.js + index_bg.wasm) with worker-build.
# This is wrangler's [build] command; it assumes scripts/setup.sh has run.
#
#   scripts/build-worker.sh            the worker, into build/
#   scripts/build-worker.sh --bench    with the `bench` feature (benchmark and test endpoints,
#                                      never deployed), into .edgewise/build-bench/
#
# worker-build runs wasm-bindgen and `wasm-opt -O3` on every call, ~30 s even when cargo has
# nothing to do, so an output newer than every input (the worker's and the core's sources and
# manifests, Cargo.lock, the root manifest's profiles, the three tools) is kept as it is, as
# make would. Extra arguments go to worker-build and always build.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

out=build
features=()
if [ "${1:-}" = "--bench" ]; then
  shift
  out=.edgewise/build-bench
  features=(--features bench)
fi

if (($# == 0)) && [ -s "$out/index.js" ] && [ -s "$out/index_bg.wasm" ]; then
  newer=$(find worker shared Cargo.toml Cargo.lock "$(command -v worker-build)" "$WASM_BINDGEN_BIN" \
    "$(readlink -f "$WASM_OPT_BIN")" -newer "$out/index_bg.wasm" -type f -print -quit 2>/dev/null || true)
  if [ -z "$newer" ]; then
    log "$out/ is newer than the worker's inputs: not rebuilt"
    exit 0
  fi
fi
exec worker-build --profile wasm-release --out-dir "../$out" worker "${features[@]}" "$@"
