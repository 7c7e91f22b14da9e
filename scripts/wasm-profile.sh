#!/usr/bin/env bash
# Builds the worker at each candidate optimisation level and measures size, cold start and
# per-request latency in Miniflare, side by side in one run. This is how the `wasm-release`
# profile in Cargo.toml was chosen; rerun it when the worker's hot path changes.
#
#   scripts/wasm-profile.sh [REQUESTS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh >/dev/null

requests=${1:-3000}
out="$STATE_DIR/wasm-profile"
mkdir -p "$out"
# The same feature set worker-build enables when it runs wasm-opt itself.
features=(--enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int
  --enable-bulk-memory --enable-multivalue --enable-reference-types --enable-exception-handling)

for level in 3 s z; do
  log "opt-level $level"
  CARGO_PROFILE_WASM_RELEASE_OPT_LEVEL=$level \
    worker-build --profile wasm-release --no-opt --out-dir "../.edgewise/wasm-profile/$level" worker >/dev/null 2>&1
  wasm="$out/$level/index_bg.wasm"
  wasm-opt "-O$level" "${features[@]}" --debuginfo "$wasm" -o "$wasm.opt"
  mv "$wasm.opt" "$wasm"
done
for level in 3 s z; do
  printf 'opt-level=%s ' "$level"
  node benches/js/worker-latency.mjs "$out/$level" "$requests"
done
