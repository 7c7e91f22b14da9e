#!/usr/bin/env bash
# Installs what edgewise needs to build, run and test, and only what is missing or at the wrong
# version. Safe to run any number of times; every other script runs it first.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"; }
need cargo "install Rust with rustup (https://rustup.rs)"
need rustup "install Rust with rustup (https://rustup.rs)"
need node "install Node.js >= 20.3"
need npm "install Node.js >= 20.3 (npm comes with it)"
need curl "apt-get install -y curl"

node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=3)?0:1)' ||
  die "Node.js >= 20.3 required (found $(node --version)); wrangler 4.86 is pinned because later releases need Node 22"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
for component in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$component"; then
    log "rustup component add $component"
    rustup component add "$component"
  fi
done

# Miri checks the workspace arena's tests for undefined behaviour (scripts/test.sh runs it): a
# nightly toolchain with the miri and rust-src components, installed once.
if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^miri'; then
  log "rustup toolchain install nightly (miri, rust-src)"
  rustup toolchain install nightly --profile minimal --component miri --component rust-src
fi

# Cargo.lock is the source of truth for tool versions; make sure it exists.
[ -f Cargo.lock ] || cargo generate-lockfile

# worker-build must match the worker crate (same release line, same JS shim).
want=$(locked_version worker)
have=$(worker-build --version 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  log "cargo install worker-build $want (found: ${have:-none})"
  cargo install --locked --force worker-build --version "$want"
fi

# The wasm-bindgen CLI must be exactly the library version, or the generated glue mismatches.
want=$(locked_version wasm-bindgen)
have=$("$WASM_BINDGEN_BIN" --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  log "cargo install wasm-bindgen-cli $want (found: ${have:-none})"
  # Its lockfile has pinned crates that were later yanked (webpki-roots 1.0.11 for 0.2.130);
  # when --locked cannot resolve, let cargo pick the newest compatible dependencies instead.
  cargo install --locked --force wasm-bindgen-cli --version "$want" ||
    cargo install --force wasm-bindgen-cli --version "$want"
fi

# npm ci wipes node_modules, so run it only when the lockfile changed since the last install.
stamp="node_modules/.edgewise-lock.sha256"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "npm ci"
  npm ci --no-audit --no-fund
  printf '%s\n' "$want" >"$stamp"
fi

# Debian packages: memcached (the token cache the tests run against), systemd's
# systemd-analyze (the tests verify daemon/dist/edgewised.service with it) and a C++ compiler
# (libfuzzer-sys builds libFuzzer when scripts/test.sh lints the fuzz targets).
packages=()
command -v memcached >/dev/null 2>&1 || packages+=(memcached)
command -v systemd-analyze >/dev/null 2>&1 || packages+=(systemd)
command -v c++ >/dev/null 2>&1 || packages+=(g++)
if [ "${#packages[@]}" -gt 0 ]; then
  log "apt-get install ${packages[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi

log "setup complete"
