#!/usr/bin/env bash
# Builds the Wasm worker into build/ (index.js + index_bg.wasm) with worker-build.
# This is wrangler's [build] command; it assumes scripts/setup.sh has run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
exec worker-build --profile wasm-release --out-dir ../build worker "$@"
