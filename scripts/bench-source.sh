#!/usr/bin/env bash
# Runs the feature source benchmark (benches/src/bin/source.rs): snapshot ingest of CSV beside
# Parquet (two layouts) through the daemon's own decoder, then a real s3proxy and three real
# edgewised processes timed from `snapshot push` to all of them serving the new version. Prints
# Markdown tables. Needs scripts/setup.sh --test (the JRE and s3proxy), ~6 GB of memory and
# ~2 GB in $TMPDIR at the defaults (1M keys x 64 floats); a few minutes on 2 cores. Arguments
# go to the binary:
#
#   scripts/bench-source.sh [--keys N] [--dim D] [--fleet-keys N] [--daemons K]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bash scripts/setup.sh --test >/dev/null
log "building edgewised and the source benchmark (release: fat LTO, takes a while)"
cargo build --release -p edgewise-daemon -p edgewise-benches --bin edgewised --bin source
EDGEWISED_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/edgewised" \
  "${CARGO_TARGET_DIR:-$ROOT/target}/release/source" "$@"
