#!/usr/bin/env bash
# Measures the worker's header-stripping step: builds the worker twice (the normal build/ and a
# build with the `bench` feature in .edgewise/build-bench), then runs benches/js/strip-cost.mjs.
#
#   scripts/bench-strip.sh [ROUNDS] [REQUESTS_PER_ROUND]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
build_worker_and_bench
node benches/js/strip-cost.mjs "$@"
