#!/usr/bin/env bash
# Instructions and L1 data misses of one subset lookup, by cachegrind: a run of 30 rounds of
# 1,024 lookups minus a run of 10, over 20,480, so the table's build and the requests drop out.
# Deterministic where wall-clock time on a shared VM swings by 1.5x or more; installs valgrind
# if missing.
#
#   scripts/lookup-instructions.sh [SCENARIO HOSTS MODE]...   (default: 4x3 8000 pre)
#
# SCENARIO and MODE (pre, raw or keys) as benches/examples/subset_lookup.rs takes them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bin="$(cachegrind_example subset_lookup)"

counts() { # scenario hosts rounds mode -> "Ir D1misses"
  valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
    "$bin" "$1" "$2" "$3" "$4" 2>&1 \
    | awk '/I *refs:|D1  misses:/ { gsub(",", "", $4); printf "%s ", $4 }'
}

if (($# == 0)); then set -- 4x3 8000 pre; fi
printf '%-8s %7s %-5s %14s %10s\n' scenario hosts mode "instructions" "D1 misses"
while (($# >= 3)); do
  read -r -a few <<< "$(counts "$1" "$2" 10 "$3")"
  read -r -a many <<< "$(counts "$1" "$2" 30 "$3")"
  awk -v s="$1" -v h="$2" -v m="$3" -v i=$((many[0] - few[0])) -v d=$((many[1] - few[1])) \
    'BEGIN { printf "%-8s %7s %-5s %14.1f %10.2f\n", s, h, m, i / 20480, d / 20480 }'
  shift 3
done
