#!/usr/bin/env bash
# Runs the feature-store benchmark (benches/src/bin/store_latency.rs): edgewise's store beside
# Cloudflare's mmap-sync 2.0.4 and beside bliss's "before" path (the memcached text protocol over
# edgewised's Unix socket, the daemon running in the benchmark process), in one run, on the same
# tables of 64 floats a key. It prints Markdown tables: publish time, validation, guard cost,
# lookup latency percentiles (uniform, Zipf s=1 and hot keys) with no writer, two readers vs one,
# then for 1k, 100k and 1M keys the latency of each peer while a writer process publishes the
# whole table back to back (10 s per peer and key count), the publishes made meanwhile, and
# resident memory relative to the raw payload. About 3-4 minutes on 2 cores. Arguments go to the
# binary:
#
#   scripts/bench-store.sh [--keys N] [--dims D] [--samples N] [--secs S] [--dir DIR]
#
# The stores live in /dev/shm (tmpfs, as a production store would: nothing is written back to a
# disk) unless --dir says otherwise. Needs ~4 GiB of memory at 1M keys: the peers' files and
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
