#!/usr/bin/env bash
# failover_cost.sh: what riding through rail failures costs when nothing fails — two builds'
# xccl-perf side by side, alternating A and B run by run:
#   loopback  2 ranks on one host over TCP (XCCL_SHM_DISABLE=1) on two loopback rails: the
#             fastest network here, where the framing and the kept copy of every sent byte
#             show most
#   testbed   4 hosts × 1 rank × 2 rails at 400 Mbit/s (xm testbed, needs root)
# Prints per size the median algbw (GB/s, out-of-place, from the time column) of A and B,
# B/A, and the spread (min-max) over RUNS runs.
#
#   bench/failover_cost.sh OLD_BUILD_DIR NEW_BUILD_DIR      (each with tools/xccl-perf)
# Knobs (env): RUNS=5 WHERE="shm loopback testbed" NP=2 COLL=all_reduce SIZES_MIN=64K SIZES_MAX=64M
#              TB_MIN=1M TB_MAX=16M NAME=fc
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=${1:?old build dir}; B=${2:?new build dir}
RUNS=${RUNS:-5}
WHERE=${WHERE:-shm loopback testbed}
NP=${NP:-2}
COLL=${COLL:-all_reduce}
NAME=${NAME:-fc}
XM=${XM:-$B/src/xm}
work=$(mktemp -d)
trap '"$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

sweep() {  # where build -> "size busbw" lines
  local perf=$2/tools/xccl-perf
  case $1 in
    shm)
      "$perf" "$COLL" --np "$NP" -b "${SIZES_MIN:-64K}" -e "${SIZES_MAX:-64M}" -f 4 -n 10 -w 2 -c 0 ;;
    loopback)
      XCCL_SHM_DISABLE=1 XCCL_RAILS=127.0.0.1,127.0.0.2 "$perf" "$COLL" --np 2 -b "${SIZES_MIN:-64K}" -e "${SIZES_MAX:-64M}" \
        -f 4 -n 10 -w 2 -c 0 ;;
    testbed)
      "$XM" testbed run --name "$NAME" --timeout 300 --rails all -- "$perf" "$COLL" -b "${TB_MIN:-1M}" -e "${TB_MAX:-16M}" \
        -f 4 -n 3 -w 1 -c 0 ;;
  esac 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && NF >= 12 {printf "%s %.5f\n", $1, $1 / $6 / 1e3}'
}  # algbw from the time column: xccl-perf's own GB/s columns have two decimals, too coarse at 0.1 GB/s

for where in $WHERE; do
  [ "$where" = testbed ] && "$XM" testbed up --name "$NAME" --hosts 4 --rails 2 --rate 400mbit --replace >/dev/null
  : >"$work/$where.A"; : >"$work/$where.B"
  for run in $(seq 1 "$RUNS"); do
    sweep "$where" "$A" >>"$work/$where.A"
    sweep "$where" "$B" >>"$work/$where.B"
  done
  echo "### $COLL, $where: algbw GB/s, median of $RUNS alternating runs (min-max)"
  echo
  echo "| size (B) | A | B | B/A |"
  echo "|---|---|---|---|"
  for size in $(awk '{print $1}' "$work/$where.A" | sort -un); do
    stat() { awk -v s="$size" '$1 == s {print $2}' "$1" | sort -g |
             awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.5f %.5f %.5f\n", m, v[1], v[NR]}'; }
    read -r ma la ha < <(stat "$work/$where.A")
    read -r mb lb hb < <(stat "$work/$where.B")
    awk -v s="$size" -v ma="$ma" -v la="$la" -v ha="$ha" -v mb="$mb" -v lb="$lb" -v hb="$hb" \
      'BEGIN {printf "| %d | %.4f (%.4f-%.4f) | %.4f (%.4f-%.4f) | %.2f |\n", s, ma, la, ha, mb, lb, hb, (ma > 0 ? mb / ma : 0)}'
  done
  echo
done
