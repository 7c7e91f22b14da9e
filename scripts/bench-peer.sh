#!/usr/bin/env bash
# edgewise beside a plain-JavaScript worker doing the same job (benches/js/peer/worker.mjs):
# workerd CPU per request for forwarded, routed and token-checked requests, and the token check
# inside the runtime against WebCrypto's verify alone. Builds the worker (normal and bench
# builds) and the daemon first.
#
#   scripts/bench-peer.sh [ROUNDS] [REQUESTS_PER_ROUND]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
build_worker_and_bench
cargo build --quiet -p edgewise-daemon
node benches/js/peer-cpu.mjs "$@"
