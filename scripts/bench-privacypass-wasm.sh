#!/usr/bin/env bash
# Times Privacy Pass token verification (RFC 9578 vector 1, valid and with a forged signature:
# both run the whole RSA-2048 PSS check) compiled to wasm32-wasip1 under Node, then natively,
# and prints both tables. Arguments go to both runs.
#
#   scripts/bench-privacypass-wasm.sh [--batches N] [--batch-ms MS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
target_dir="${CARGO_TARGET_DIR:-$ROOT/target}"

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  log "installing the wasm32-wasip1 target"
  rustup target add wasm32-wasip1
fi

log "building privacypass_wasm for wasm32-wasip1 and natively (release: fat LTO, takes a while)"
cargo build --release -p edgewise-benches --bin privacypass_wasm --target wasm32-wasip1
cargo build --release -p edgewise-benches --bin privacypass_wasm

log "wasm32-wasip1 under Node $(node --version)"
# Node 20 flags WASI as experimental on every run; the warning says nothing about the results.
node --disable-warning=ExperimentalWarning benches/js/run-wasi.mjs \
  "$target_dir/wasm32-wasip1/release/privacypass_wasm.wasm" "$@"

log "native"
"$target_dir/release/privacypass_wasm" "$@"
