#!/usr/bin/env bash
# Token redemption benchmark against a real memcached on loopback (started and stopped by the
# benchmark itself): edgewise's pipelining client beside the three-writes and
# connection-per-request patterns, then the whole POST /v1/tokens/redeem endpoint.
#
#   scripts/bench-redeem.sh [--secs S] [--clients N]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh >/dev/null
log "building the redeem benchmark (release: fat LTO, takes a while)"
cargo build --release --locked -p edgewise-benches --bin redeem
target/release/redeem "$@"
