#!/usr/bin/env bash
# Measures the worker's header-stripping step: builds the worker twice (the normal build/ and a
# build with the `bench` feature in .edgewise/build-bench), then runs benches/js/strip-cost.mjs.
#
#   scripts/bench-strip.sh [ROUNDS] [REQUESTS_PER_ROUND]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh >/dev/null
log "building the worker (normal and with the bench feature)"
bash scripts/build-worker.sh >/dev/null 2>&1
bash scripts/build-worker.sh --bench >/dev/null 2>&1
node benches/js/strip-cost.mjs "$@"
