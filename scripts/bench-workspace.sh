#!/usr/bin/env bash
# Runs the request-workspace benchmarks (reset cost per scrub mode: full, shadow, watermark; a
# single cache-resident workspace and a pool twice the last-level cache; the zero-check loop
# beside naive loops; sampled verification overhead) compiled to wasm32-wasip1 under Node, then
# natively, and prints both tables. Arguments go to both runs.
#
#   scripts/bench-workspace.sh [--batches N] [--batch-ms MS] [--pool-mib MIB]
#
# Without --pool-mib the pool is twice the L3 size lscpu reports (256 MiB if it reports none).
#
# To see that the verification loop (edgewise::workspace::verify::is_zero) vectorizes, look at
# the linked binaries this script builds (the release profile's fat LTO runs the vectorizers at
# link time, so `--emit asm` of the lib alone shows scalar code):
#   objdump -d --no-show-raw-insn target/release/workspace_wasm | grep -A60 'is_zero.*>:'
#   node_modules/.bin/wasm-dis target/wasm32-wasip1/release/workspace_wasm.wasm | grep -A300 'func .*is_zero'
set -euo pipefail
source "$(dirname "$0")/lib.sh"

pool=()
if [[ " $* " != *" --pool-mib "* ]]; then
  l3=$(lscpu -B 2>/dev/null | awk '/^L3 cache:/ { print $3; exit }')
  if [[ -n "$l3" && "$l3" =~ ^[0-9]+$ ]]; then
    pool=(--pool-mib "$(((2 * l3 + (1 << 20) - 1) >> 20))")
    log "L3 cache $((l3 >> 20)) MiB: pool of ${pool[1]} MiB"
  fi
fi

# --single-threaded-gc: Node 20.20 segfaults while tearing down a WASI instance whose memory grew
# past ~120 MiB (the pool), after the module has returned; a single-threaded GC avoids it. The
# module allocates nothing from JS while it runs, so the GC setting does not touch the timings.
run_wasm_bench workspace_wasm --single-threaded-gc -- "${pool[@]}" "$@"
