# Sourced by the other scripts: project paths, tool locations and small helpers.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$ROOT/node_modules/.bin:$PATH"

# worker-build must never try to download its tools (GitHub is unreachable from our machines):
# wasm-bindgen comes from `cargo install`, wasm-opt and esbuild from the npm lockfile.
export WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt"
export ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild"
export WRANGLER_SEND_METRICS=false
export NO_UPDATE_NOTIFIER=1

# Runtime state of local runs (pids, logs, ports); ignored by git.
STATE_DIR="$ROOT/.edgewise"

# Each step says how long the script has run, so a slow CI log shows where the time went.
log() { printf '\033[1m==> %s\033[0m (%ds)\n' "$*" "$SECONDS" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The tools, then the worker built twice (scripts/build-worker.sh): build/, and the `bench`
# feature's build in .edgewise/build-bench that the in-runtime benchmarks load. Quiet unless a
# build fails; then its output is shown.
build_worker_and_bench() {
  bash "$ROOT/scripts/setup.sh" >/dev/null
  log "building the worker (normal and bench builds)"
  local out="$STATE_DIR/build-worker.log"
  mkdir -p "$STATE_DIR"
  build_worker_quietly() { bash "$ROOT/scripts/build-worker.sh" "$@" >"$out" 2>&1 || { cat "$out" >&2; die "worker build failed"; }; }
  build_worker_quietly
  build_worker_quietly --bench
}

# Version of a package as pinned in Cargo.lock.
locked_version() {
  awk -v name="$1" '
    $0 == "name = \"" name "\"" { found = 1; next }
    found && /^version = / { gsub(/"/, "", $3); print $3; exit }
  ' "$ROOT/Cargo.lock"
}

wasm_bindgen_bin() {
  printf '%s\n' "${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen"
}
export WASM_BINDGEN_BIN
WASM_BINDGEN_BIN="$(wasm_bindgen_bin)"

# Builds example $1 of edgewise-benches for cachegrind, installing valgrind first if missing,
# and prints the binary's path. Line tables only: the same code as the release build, with
# names for cg_annotate; in a target directory of its own, as the changed profile would
# rebuild the release one.
cachegrind_example() {
  if ! command -v valgrind > /dev/null; then
    log "apt-get install valgrind"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      valgrind >&2
  fi
  local target="${CARGO_TARGET_DIR:-$ROOT/target}/cachegrind"
  CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
    cargo build --release -q -p edgewise-benches --example "$1" --target-dir "$target" >&2
  printf '%s\n' "$target/release/examples/$1"
}

# A TCP port nobody listens on right now.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}


# Builds the bench binary $1 of edgewise-benches (release) for wasm32-wasip1 and natively, then
# runs it under Node and natively, each printing its table. Flags up to `--` go to node, the
# arguments after it to both runs (relative paths among them are read from $ROOT):
#   run_wasm_bench BIN [NODE_FLAGS...] -- [ARGS...]
run_wasm_bench() (
  cd "$ROOT"
  local bin=$1 target_dir="${CARGO_TARGET_DIR:-$ROOT/target}" node_flags=()
  shift
  while (($# > 0)) && [[ "$1" != -- ]]; do
    node_flags+=("$1")
    shift
  done
  if (($# > 0)); then shift; fi

  if ! rustup target list --installed | grep -qx wasm32-wasip1; then
    log "installing the wasm32-wasip1 target"
    rustup target add wasm32-wasip1
  fi

  log "building $bin for wasm32-wasip1 and natively (release: fat LTO, takes a while)"
  cargo build --release -p edgewise-benches --bin "$bin" --target wasm32-wasip1
  cargo build --release -p edgewise-benches --bin "$bin"
  # The deployed worker's Wasm goes through `wasm-opt -O3` (worker/Cargo.toml): so does the
  # bench's, or it would measure code that is never deployed. The features are rustc's defaults
  # for wasm32, which V8 runs.
  [[ -x "$WASM_OPT_BIN" ]] || die "no $WASM_OPT_BIN: run scripts/setup.sh (npm ci) first"
  local wasm="$target_dir/wasm32-wasip1/release/$bin.wasm"
  log "wasm-opt -O3 (binaryen $("$WASM_OPT_BIN" --version | awk '{print $3}'))"
  "$WASM_OPT_BIN" -O3 --enable-bulk-memory --enable-mutable-globals --enable-sign-ext \
    --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
    "$wasm" -o "${wasm%.wasm}.opt.wasm"

  log "wasm32-wasip1 under Node $(node --version)"
  # Node 20 flags WASI as experimental on every run; the warning says nothing about the results.
  # It may also crash after the module returned (tearing down a large instance): the module's
  # own status, written by run-wasi.mjs before exiting, decides.
  local status_file node_status=0
  status_file="$(mktemp)"
  RUN_WASI_STATUS="$status_file" node --disable-warning=ExperimentalWarning "${node_flags[@]}" \
    benches/js/run-wasi.mjs "${wasm%.wasm}.opt.wasm" "$@" || node_status=$?
  local module_status
  module_status="$(cat "$status_file")"
  rm -f "$status_file"
  if [[ "$module_status" != 0 ]]; then
    die "$bin failed under Node (node exit $node_status, module status ${module_status:-none})"
  elif ((node_status != 0)); then
    log "node exited with $node_status after the module returned 0 (a Node 20 teardown crash)"
  fi

  log "native"
  "$target_dir/release/$bin" "$@"
)
