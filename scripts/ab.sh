#!/usr/bin/env bash
# Times one benchmark example at two commits, the two binaries run in turns: on a VM whose
# speed swings 1.5-2x between minutes, only runs next to each other compare. Each pair's ratio
# (B's figure over A's, the order inside a pair alternating) is taken, and the median ratio with
# its range printed, beside each side's median and best figure.
#
#   scripts/ab.sh [--pairs N] REV_A REV_B EXAMPLE [ARGS]...
#   scripts/ab.sh 37fb0c7 HEAD subset_build unique 100000 21 bytes
#   scripts/ab.sh --pairs 20 HEAD~1 HEAD subset_lookup 4x3 100000 60 pre
#
# EXAMPLE is one of benches/examples, run with ARGS; its figure is the first number it prints
# (subset_build's median ms, subset_lookup's ns a lookup). REV may be any commit, or WORKTREE
# for the files as they are now (built in the usual target directory). Each commit is built
# in a git worktree under target/ab, with a target directory of its own: the first build of a
# commit takes a few minutes. `rm -rf target/ab && git worktree prune` clears them.
set -euo pipefail
# A failed build or run inside `$(...)` must stop the script, not time the binary left before.
shopt -s inherit_errexit
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

pairs=10
if [[ "${1:-}" == --pairs ]]; then
  pairs="$2"
  shift 2
fi
(($# >= 3)) || die "usage: scripts/ab.sh [--pairs N] REV_A REV_B EXAMPLE [ARGS]..."
rev_a="$1" rev_b="$2" example="$3"
shift 3

# Builds EXAMPLE at REV and prints its binary's path.
binary() {
  local rev="$1" src target name
  if [[ "$rev" == WORKTREE ]]; then
    src="$ROOT" target="${CARGO_TARGET_DIR:-$ROOT/target}" name=worktree
  else
    local commit
    commit="$(git rev-parse --verify -q "$rev^{commit}")" || die "no commit $rev"
    name="${commit:0:12}"
    src="$ROOT/target/ab/src-$name" target="$ROOT/target/ab/target-$name"
    # `-C` into a directory that is no worktree would find the main repository around it.
    if [[ ! -f "$src/.git" || "$(git -C "$src" rev-parse HEAD 2> /dev/null)" != "$commit" ]]; then
      # A directory left by an interrupted add, or a registration whose directory is gone.
      rm -rf "$src"
      git worktree prune
      git worktree add --detach -q "$src" "$name" >&2
    fi
  fi
  log "build $example at $rev ($name)"
  (cd "$src" && cargo build --release -q -p edgewise-benches --example "$example" \
    --target-dir "$target" >&2)
  local bin="$target/release/examples/$example"
  [[ -x "$bin" ]] || die "no binary $bin"
  printf '%s\n' "$bin"
}

# The first number a run prints; the run's output instead, and a stop, if it fails or prints
# none.
figure() {
  local out
  out="$("$@" 2>&1)" || die "$* failed: $out"
  [[ "$out" =~ [0-9]+(\.[0-9]+)? ]] || die "$* printed no figure: $out"
  printf '%s\n' "${BASH_REMATCH[0]}"
}

a="$(binary "$rev_a")"
b="$(binary "$rev_b")"
log "$pairs pairs of: $example $*"
# Gathered first: a failed run stops the script before any summary is printed.
results="$(for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then
    fa="$(figure "$a" "$@")"
    fb="$(figure "$b" "$@")"
  else
    fb="$(figure "$b" "$@")"
    fa="$(figure "$a" "$@")"
  fi
  printf '%s %s\n' "$fa" "$fb"
done)"
awk -v a="$rev_a" -v b="$rev_b" '
  function median(v, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
      t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
    }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  $1 > 0 {
    n++; fa[n] = $1; fb[n] = $2; r[n] = $2 / $1
    if (n == 1 || $1 < besta) besta = $1
    if (n == 1 || $2 < bestb) bestb = $2
    if (n == 1 || r[n] < lo) lo = r[n]
    if (n == 1 || r[n] > hi) hi = r[n]
  }
  END {
    if (n == 0) exit 1
    printf "%s: median %.4g, best %.4g\n", a, median(fa, n), besta
    printf "%s: median %.4g, best %.4g\n", b, median(fb, n), bestb
    printf "%s / %s, median of %d pairs: %.3f (%.3f-%.3f)\n", b, a, n, median(r, n), lo, hi
  }' <<< "$results"
