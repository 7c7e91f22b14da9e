#!/usr/bin/env bash
# Runs the feature-store benchmark (benches/src/bin/store_latency.rs): edgewise's store beside
# Cloudflare's mmap-sync 2.0.4 in one run, on the same tables (default 1M keys x 64 floats):
# publish time, validation time, guard cost, per-lookup latency percentiles (uniform and hot
# keys) without and with a writer process publishing the whole table back to back. Arguments
# go to the binary:
#
#   scripts/bench-store.sh [--keys N] [--dims D] [--samples N] [--secs S] [--dir DIR]
#
# The store lives in /dev/shm (tmpfs, as a production store would: nothing is written back to a
# disk) unless --dir says otherwise. Needs ~3 GiB of memory at 1M keys: both peers' files and
# their writers' in-memory tables.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

dir=()
if [[ " $* " != *" --dir "* ]]; then
  dir=(--dir "/dev/shm/edgewise-store-bench-$$")
fi

log "building store_latency (release: fat LTO, takes a while)"
cargo build --release -p edgewise-benches --bin store_latency
"${CARGO_TARGET_DIR:-$ROOT/target}/release/store_latency" "${dir[@]}" "$@"
