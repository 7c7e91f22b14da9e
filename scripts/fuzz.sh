#!/usr/bin/env bash
# Runs the fuzz targets, each for SECONDS (default 60), and prints one line per target: its
# runs and findings. Stops at the first finding, with the crashing input's path. Installs
# cargo-fuzz if missing; needs the nightly toolchain that `setup.sh --test` installs for Miri.
#
#   scripts/fuzz.sh [SECONDS] [TARGET]...   (default: every target in fuzz/Cargo.toml)
#
# Corpora stay in fuzz/corpus/TARGET (ignored by git), so each run goes on from the last; a
# target first replays its corpus, which may take longer than SECONDS (subset_delta: minutes).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bash scripts/setup.sh --test
if ! command -v cargo-fuzz > /dev/null; then
  log "cargo install cargo-fuzz"
  cargo install --locked cargo-fuzz --version 0.13.2
fi

seconds="${1:-60}"
shift $(($# > 0 ? 1 : 0))
targets=("$@")
cd fuzz
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cargo fuzz list)
fi

mkdir -p "$STATE_DIR"
for target in "${targets[@]}"; do
  # The subset targets draw a table from their input before anything else: libFuzzer's
  # first inputs, a few bytes long and lengthened slowly, would draw one host.
  options=()
  case "$target" in
    subset_*) options=(-max_len=600 -len_control=0) ;;
  esac
  log "$target, ${seconds} s"
  out="$STATE_DIR/fuzz-$target.log"
  if ! cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" "${options[@]}" \
    > "$out" 2>&1; then
    grep -E "panicked|SUMMARY|Test unit written" "$out" >&2 || tail -20 "$out" >&2
    die "$target found a failure (log: $out)"
  fi
  runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' "$out")
  printf '%-20s %s, no findings\n' "$target" "$runs"
done
