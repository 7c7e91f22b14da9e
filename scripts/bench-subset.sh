#!/usr/bin/env bash
# Runs the subset load balancing benchmarks (build at 8k and 100k hosts for the three scenarios
# beside MOSN's full-scan build, retained memory, lookups pre-interned and from raw strings
# beside MOSN's lookup trie, single-host updates at 100k) compiled to wasm32-wasip1 under Node,
# then natively, and prints both tables. Arguments go to both runs.
#
#   scripts/bench-subset.sh [--batches N] [--batch-ms MS] [--peer-rounds N] [--max-hosts N]
#
# The full-scan peer takes seconds per 100k build (minutes in Wasm): --peer-rounds 1 keeps a
# run short (8k rows time at least 5 rounds, spread over the batches); --max-hosts 8000 skips
# the 100k rows.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# --single-threaded-gc: Node 20.20 segfaults while tearing down a WASI instance whose memory grew
# past ~120 MiB (the 100k-host tables), after the module has returned (see bench-workspace.sh).
run_wasm_bench subset_wasm --single-threaded-gc -- "$@"
