#!/usr/bin/env bash
# Instructions, L1 data misses and last-level misses (a 1 MiB cache, as one core's L2 here) of
# one subset build, by cachegrind: a run of three builds minus a run of one, halved, so the
# table's generation and encoding drop out. Deterministic where wall-clock time on a shared VM
# swings by 1.5x or more; installs valgrind if missing.
#
#   scripts/build-instructions.sh [SCENARIO HOSTS MODE]...   (default: 4x3 8000 bytes)
#
# SCENARIO and MODE as benches/examples/subset_build.rs takes them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bin="$(cachegrind_example subset_build)"

counts() { # scenario hosts rounds mode -> "Ir D1misses LLmisses"
  valgrind --tool=cachegrind --cache-sim=yes --LL=1048576,16,64 --cachegrind-out-file=/dev/null \
    "$bin" "$1" "$2" "$3" "$4" 2>&1 \
    | awk '/I *refs:|D1  misses:|LLd misses:/ { gsub(",", "", $4); printf "%s ", $4 }'
}

if (($# == 0)); then set -- 4x3 8000 bytes; fi
printf '%-8s %7s %-9s %14s %12s %12s\n' scenario hosts mode instructions "D1 misses" "LL misses"
while (($# >= 3)); do
  read -r -a one <<< "$(counts "$1" "$2" 1 "$3")"
  read -r -a three <<< "$(counts "$1" "$2" 3 "$3")"
  printf '%-8s %7s %-9s %14d %12d %12d\n' "$1" "$2" "$3" \
    $(((three[0] - one[0]) / 2)) $(((three[1] - one[1]) / 2)) $(((three[2] - one[2]) / 2))
  shift 3
done
