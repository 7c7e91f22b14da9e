#!/usr/bin/env bash
# Installs what edgewise needs, and only what is missing or at the wrong version. Safe to run
# any number of times; the other scripts run it first.
#
#   scripts/setup.sh          what the demo, the worker build and a deploy need
#   scripts/setup.sh --test   also what scripts/test.sh needs (Miri, systemd-analyze, a C++
#                             compiler for libFuzzer, rustfmt and clippy, a JRE and s3proxy,
#                             pyarrow)
#
# The downloads (npm packages, Debian packages) run in the background while the two Rust tools
# compile, which is most of a first run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

for_tests=0
case "${1:-}" in
  "") ;;
  --test) for_tests=1 ;;
  *) die "usage: scripts/setup.sh [--test]" ;;
esac

need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"; }
need cargo "install Rust with rustup (https://rustup.rs)"
need rustup "install Rust with rustup (https://rustup.rs)"
need node "install Node.js >= 20.3"
need npm "install Node.js >= 20.3 (npm comes with it)"
need curl "apt-get install -y curl"

node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=3)?0:1)' ||
  die "Node.js >= 20.3 required (found $(node --version)); wrangler 4.86 is pinned because later releases need Node 22"

mkdir -p "$STATE_DIR/setup"
background=()

# npm ci wipes node_modules, so run it only when the lockfile changed since the last install.
stamp="node_modules/.edgewise-lock.sha256"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "npm ci (in the background, log: $STATE_DIR/setup/npm.log)"
  (npm ci --no-audit --no-fund && printf '%s\n' "$want" >"$stamp") >"$STATE_DIR/setup/npm.log" 2>&1 &
  background+=("$!:npm")
fi

# Debian packages: memcached (the token cache the demo and the tests run against); for the
# tests also systemd's systemd-analyze (it verifies daemon/dist/edgewised.service) and a C++
# compiler (libfuzzer-sys builds libFuzzer when the fuzz targets are linted).
packages=()
command -v memcached >/dev/null 2>&1 || packages+=(memcached)
if ((for_tests)); then
  command -v systemd-analyze >/dev/null 2>&1 || packages+=(systemd)
  command -v c++ >/dev/null 2>&1 || packages+=(g++)
  # s3proxy (the S3 API server of the feature source tests) runs on Java 17 or later.
  command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
  python3 -m pip --version >/dev/null 2>&1 || packages+=(python3 python3-pip)
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || packages+=(python3-venv)
fi
if [ "${#packages[@]}" -gt 0 ]; then
  log "apt-get install ${packages[*]} (in the background, log: $STATE_DIR/setup/apt.log)"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  ($sudo apt-get update -qq &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${packages[@]}") >"$STATE_DIR/setup/apt.log" 2>&1 &
  background+=("$!:apt")
fi

# The feature source tests (tests/tests/source.rs): s3proxy from Maven Central, checked against
# its pinned SHA-256 (pyarrow follows, once the Debian packages are in).
if ((for_tests)); then
  mkdir -p "$STATE_DIR/tools"
  jar="$STATE_DIR/tools/s3proxy-2.6.0.jar"
  jar_sha256=12e5e88d805cfed07f7d88b4a44a0d8ecb9f9d3cebeb544bb34fbc4ded1049d8
  if [ "$(sha256sum "$jar" 2>/dev/null | cut -d' ' -f1)" != "$jar_sha256" ]; then
    log "downloading s3proxy 2.6.0 (Maven Central)"
    curl -sSfL --retry 3 -o "$jar.part" \
      https://repo1.maven.org/maven2/org/gaul/s3proxy/2.6.0/s3proxy-2.6.0-jar-with-dependencies.jar
    [ "$(sha256sum "$jar.part" | cut -d' ' -f1)" = "$jar_sha256" ] || die "s3proxy: SHA-256 mismatch"
    mv "$jar.part" "$jar"
  fi
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
if ((for_tests)); then
  for component in rustfmt clippy; do
    if ! rustup component list --installed | grep -q "^$component"; then
      log "rustup component add $component"
      rustup component add "$component"
    fi
  done
  # Miri checks the unsafe-adjacent code for undefined behaviour: nightly with miri and rust-src.
  if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^miri'; then
    log "rustup toolchain install nightly (miri, rust-src)"
    rustup toolchain install nightly --profile minimal --component miri --component rust-src
  fi
fi

# Cargo.lock is the source of truth for tool versions; make sure it exists.
[ -f Cargo.lock ] || cargo generate-lockfile

# The two build tools compile from crates.io. They run for seconds per worker build, so they are
# built for a quick install (opt-level 1, no debug info), into one target directory so that the
# dependencies they share compile once.
install_tool() {
  CARGO_TARGET_DIR="$STATE_DIR/setup/target" CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
    CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_LTO=false \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo install --force "$@"
}

# worker-build must match the worker crate (same release line, same JS shim).
want=$(locked_version worker)
have=$(worker-build --version 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  log "cargo install worker-build $want (found: ${have:-none})"
  install_tool --locked worker-build --version "$want" --bin worker-build
fi

# The wasm-bindgen CLI must be exactly the library version, or the generated glue mismatches.
want=$(locked_version wasm-bindgen)
have=$("$WASM_BINDGEN_BIN" --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  log "cargo install wasm-bindgen-cli $want (found: ${have:-none})"
  # Only the wasm-bindgen binary, without TLS: the default features bring rustls and ring for
  # the test runner's downloads, which worker-build never uses. Its lockfile has pinned crates
  # that were later yanked; when --locked cannot resolve, cargo picks the newest compatible.
  bindgen=(wasm-bindgen-cli --version "$want" --no-default-features --bin wasm-bindgen)
  install_tool --locked "${bindgen[@]}" || install_tool "${bindgen[@]}"
fi
rm -rf "$STATE_DIR/setup/target"

for job in "${background[@]}"; do
  pid=${job%%:*} name=${job#*:}
  if ! wait "$pid"; then
    tail -n 30 "$STATE_DIR/setup/$name.log" >&2
    die "$name failed (log: $STATE_DIR/setup/$name.log)"
  fi
done

# pyarrow from PyPI (the source tests write Parquet with it), into a directory of ours: the
# system's Python stays as it is (PIP_BREAK_SYSTEM_PACKAGES only lifts Debian's guard against
# installing into it, which --target does not do).
if ((for_tests)); then
  pyarrow=26.0.1
  if ! PYTHONPATH="$STATE_DIR/python" python3 -c "import pyarrow, sys; sys.exit(pyarrow.__version__ != '$pyarrow')" 2>/dev/null; then
    log "pip install pyarrow $pyarrow (into $STATE_DIR/python)"
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
      --upgrade --target "$STATE_DIR/python" "pyarrow==$pyarrow"
  fi
fi

# The Python package's build and tests (python/, scripts/test.sh): a virtualenv of ours with
# maturin, pytest and numpy at pinned versions.
if ((for_tests)); then
  venv="$STATE_DIR/venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  wanted=(maturin==1.7.4 pytest==8.3.4 numpy==2.2.1)
  if ! "$venv/bin/pip" freeze 2>/dev/null | grep -qx "numpy==2.2.1"; then
    log "pip install ${wanted[*]} (into $venv)"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${wanted[@]}"
  fi
fi

log "setup complete"
