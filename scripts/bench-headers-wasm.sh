#!/usr/bin/env bash
# Runs the header benchmarks (edgewise's HeaderSet beside std/Fx hash sets, trie-hard,
# radix_trie and the original strip loop) compiled to wasm32-wasip1 under Node, then natively,
# and prints both tables. Arguments go to both runs.
#
#   scripts/bench-headers-wasm.sh [--batches N] [--batch-ms MS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

run_wasm_bench headers_wasm -- "$@"
