#!/usr/bin/env bash
# rail_flap.sh: a rail that flaps (down 2 s, up 2 s) for a minute under back-to-back
# collectives on the emulated cluster (`xm testbed`: 4 hosts × 2 rails at 400 Mbit/s).
#
# Starts a loop of 16 MiB collectives long enough to outlast the flapping, then takes host
# 1's NIC 0 down and up every $PERIOD s for $FLAP_S s, and waits for the job. Prints, per
# collective, whether every collective of the job came out exact (xccl-perf -c), how long
# it took against the same loop with no fault, and what the ranks logged: rails declared down, rejoins (back in the stripe),
# reconnections held out on probation. A flapping rail must cause no error and, with the
# backoff, be held out rather than rejoin at every up.
#
# Needs root. Build first (xm, xccl-perf). Knobs (env): COLLS="all_reduce" MODE=all
# (or own+spare) FLAP_S=60 PERIOD=2 RATE=400mbit NAME=rflap BUILD_DIR=build/default
# OUT=bench/results (each job's log is kept as $OUT/rail_flap_<coll>_<mode>.log)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/default}
COLLS=${COLLS:-all_reduce}
MODE=${MODE:-all}
FLAP_S=${FLAP_S:-60}
PERIOD=${PERIOD:-2}
RATE=${RATE:-400mbit}
NAME=${NAME:-rflap}
OUT=${OUT:-$ROOT/bench/results}
XM=$BUILD_DIR/src/xm
PERF=$BUILD_DIR/tools/xccl-perf
for b in "$XM" "$PERF"; do [ -x "$b" ] || { echo "rail_flap: $b not built" >&2; exit 2; }; done
[ "$(id -u)" = 0 ] || { echo "rail_flap: needs root (network namespaces)" >&2; exit 2; }
mkdir -p "$OUT"
work=$(mktemp -d)
cleanup() {
  "$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$XM" testbed up --name "$NAME" --hosts 4 --rails 2 --rate "$RATE" --replace >/dev/null
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN {printf "%.1f", a - b}'; }

. "$ROOT/bench/rail_modes.sh"
echo "| collective | mode | flapping | job (s) | same loop, no fault (s) | exact | downs | rejoins | held on reconnecting |"
echo "|---|---|---|---|---|---|---|---|---|"
for coll in $COLLS; do
  rail_mode "$MODE" "$coll"
  job() {  # iterations -> runs the loop, log in $work/job.log
    env XCCL_DEBUG=INFO "$XM" testbed run --name "$NAME" --timeout 600 -k $k --rails "$MODE" -- \
      env $env_algo "$PERF" "$coll" -b 16M -e 16M -n 1 -w 0 -c "$1" >"$work/job.log" 2>&1
  }
  # Size the loop from two short undisturbed ones (their difference is the loop, not init):
  # long enough for the flapping and 30 % more.
  t=$(now); job 2; short=$(since "$t")
  t=$(now); job 12; long=$(since "$t")
  iters=$(awk -v f="$FLAP_S" -v a="$short" -v b="$long" 'BEGIN {s = (b - a) / 10; if (s <= 0) s = 0.01;
    n = int(1.3 * (f + 3) / s) + 1; print n < 10 ? 10 : n}')
  t=$(now); job "$iters"; quiet=$(since "$t")
  t=$(now)
  job "$iters" &
  pid=$!
  sleep 3  # init and the warm-up
  flaps=$(awk -v f="$FLAP_S" -v p="$PERIOD" 'BEGIN {print int(f / (2 * p))}')
  for _ in $(seq 1 "$flaps"); do
    "$XM" testbed fault --name "$NAME" --link h1/nic0 --down >/dev/null; sleep "$PERIOD"
    "$XM" testbed fault --name "$NAME" --link h1/nic0 --up >/dev/null; sleep "$PERIOD"
  done
  inside=yes
  kill -0 $pid 2>/dev/null || inside="no (the job ended before the flapping did)"
  rc=0
  wait $pid || rc=$?
  took=$(since "$t")
  exact=no
  [ $rc = 0 ] && grep -q "Out of bounds values : 0 OK" "$work/job.log" && exact=yes
  [ $exact = yes ] || { echo "$coll failed (rc $rc):" >&2; tail -5 "$work/job.log" >&2; }
  cp "$work/job.log" "$OUT/rail_flap_${coll}_${MODE}.log"
  downs=$(grep -c -e ": down (" -e "down again on probation" "$work/job.log" || true)
  rejoins=$(grep -c "back in the stripe" "$work/job.log" || true)
  held=$(grep -c "reconnected; held out" "$work/job.log" || true)
  echo "| $coll | $MODE | ${flaps}× ${PERIOD} s down, ${PERIOD} s up, inside the job: $inside | $took | $quiet | $exact | $downs | $rejoins | $held |"
done
