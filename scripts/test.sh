#!/usr/bin/env bash
# The whole test suite: setup, formatting, lints (native, wasm32, the fuzz targets), Rust unit
# and integration tests (the real edgewised binary and a real memcached), Miri over the
# workspace arena, the feature store and the subset lookup's cache hint, the Python package
# (pip install, pytest against a real edgewised), the built Wasm worker
# in Miniflare against real local origins, edgewised and memcached, and a `wrangler deploy
# --dry-run`. Ends with one "N passed, N failed" line.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bash scripts/setup.sh --test

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy (native, all targets)"
cargo clippy --workspace --all-targets --locked -- -D warnings
log "cargo clippy (wasm32: shared core and worker)"
cargo clippy -p edgewise -p edgewise-worker --target wasm32-unknown-unknown --locked -- -D warnings
# The fuzz targets are a workspace of their own (fuzzing needs nightly flags): checked here so
# that they keep building against the core's API; running them is by hand (docs/testing.md, Fuzzing).
log "cargo fmt --check and clippy of the fuzz targets"
cargo fmt --manifest-path fuzz/Cargo.toml --check
cargo clippy --manifest-path fuzz/Cargo.toml --bins --locked -- -D warnings
# The Python package is a workspace of its own too (an extension module's symbols come from
# the interpreter, which the workspace's test binaries do not have).
log "cargo fmt --check and clippy of the Python package"
cargo fmt --manifest-path python/Cargo.toml --check
cargo clippy --manifest-path python/Cargo.toml --locked -- -D warnings

log "cargo build (edgewised for the integration tests)"
cargo build --workspace --locked

mkdir -p "$STATE_DIR"
rust_log="$STATE_DIR/test-rust.log"
js_log="$STATE_DIR/test-js.log"

log "cargo test (unit, integration, benchmark smoke runs, doctests)"
cargo test --workspace --all-targets --locked 2>&1 | tee "$rust_log"
cargo test --workspace --doc --locked 2>&1 | tee -a "$rust_log"

py_log="$STATE_DIR/test-python.log"
log "Python: pip install ./python (maturin, release build), then pytest python/tests"
# The venv's own maturin builds it (no download): the build backend runs it from PATH. Without
# fat LTO: the tests check behaviour, and the build is minutes shorter on 2 cores.
PATH="$STATE_DIR/venv/bin:$PATH" CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 pip install --quiet --disable-pip-version-check \
  --no-build-isolation ./python
"$STATE_DIR/venv/bin/python" -m pytest -q python/tests 2>&1 | tee "$py_log"

log "miri: the workspace arena's tests (shared/src/workspace) under the UB checker"
# Its own target dir: Miri builds differ from normal ones and would evict them.
CARGO_TARGET_DIR=target/miri cargo +nightly miri test --locked -p edgewise --lib workspace 2>&1 | tail -3
log "miri: the feature store's synchronization protocol (shared/src/store) under the UB checker"
# Archive validation is skipped under Miri: rkyv 0.8's own CheckBytes for strings trips Stacked
# Borrows. Isolation off: the protocol tests time the writer's grace period.
CARGO_TARGET_DIR=target/miri MIRIFLAGS=-Zmiri-disable-isolation \
  cargo +nightly miri test --locked -p edgewise --features store --lib store:: -- \
  --skip store::tests::index 2>&1 | tail -3
log "miri: feature lookups over damaged bytes (shared/src/store/index.rs) under the UB checker"
# Tree Borrows: the tests build files with rkyv, whose relative pointers Stacked Borrows
# rejects; the lookups they check are rkyv-free.
CARGO_TARGET_DIR=target/miri MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows" \
  cargo +nightly miri test --locked -p edgewise --features store --lib store::tests::index \
  2>&1 | tail -3

log "build the Wasm worker, and its bench build (tests/js/verifiers.test.mjs)"
bash scripts/build-worker.sh
bash scripts/build-worker.sh --bench

log "node --test tests/js (Miniflare + wrangler dry-run)"
# One file at a time: the deploy dry-run rebuilds build/, which the Miniflare tests load.
node --test --test-concurrency=1 tests/js/ 2>&1 | tee "$js_log"

read -r rust_pass rust_fail < <(awk '/^test result:/ { p += $4; f += $6 } END { print p + 0, f + 0 }' "$rust_log")
read -r js_pass js_fail < <(awk '/^# pass / { p = $3 } /^# fail / { f = $3 } END { print p + 0, f + 0 }' "$js_log")
read -r py_pass py_fail < <(awk '/ passed| failed/ { for (i = 2; i <= NF; i++) { if ($i ~ /^passed/) p = $(i-1); if ($i ~ /^failed/) f = $(i-1) } } END { print p + 0, f + 0 }' "$py_log")
echo "rust: $rust_pass passed, $rust_fail failed; python: $py_pass passed, $py_fail failed; js: $js_pass passed, $js_fail failed"
echo "$((rust_pass + py_pass + js_pass)) passed, $((rust_fail + py_fail + js_fail)) failed"
