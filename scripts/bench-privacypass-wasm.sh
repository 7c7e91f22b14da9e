#!/usr/bin/env bash
# Times Privacy Pass token verification (RFC 9578 vector 1, valid and with a forged signature:
# both run the whole RSA-2048 PSS check) compiled to wasm32-wasip1 under Node, then natively,
# and prints both tables. Arguments go to both runs.
#
#   scripts/bench-privacypass-wasm.sh [--batches N] [--batch-ms MS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

run_wasm_bench privacypass_wasm -- "$@"
