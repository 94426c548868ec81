#!/usr/bin/env bash
# heal_throughput.sh: an xccl job through a fault the controller heals, on the routed
# testbed (`xm ops deploy`: FRR, 4 hosts × 2 rails, SPINES spines, non-blocking unless
# SPINE_RATE says otherwise) with `xm ops monitor`.
#
# Each trial starts a 16 MiB all-reduce loop (xccl-perf, every iteration checked), injects
# the fault some seconds into it, and samples host 1's NIC byte counters every 20 ms
# (bench/rail_counters.py). The controller locates the fault and heals it; the table gives
# the time from the injection to the heal action (the controller's /api/actions) and from
# the incident's opening to it (/api/incidents: healed_at - opened_at), and the
# host's rate before the fault, between the fault and the heal, and after the heal, with
# after / before. Three scenarios:
#   spine  5 % loss on tor0's uplink to spine1; two ranks per host, each on its own NIC, a
#          flat ring (half its hops cross rails, through the spines); healed by a drain
#   spine-blackhole  the same job; tor0's uplink to spine1 drops half of the 5-tuples it
#          sends (every packet of them); healed by a drain
#   rail   5 % loss on host 1's nic0 cable; one rank per host on both NICs; healed by the
#          rail advice xccl reads (XCCL_RAIL_ADVICE)
# Drains are undone (`xm ops undrain --all`) and the fault removed between trials.
#
# Needs root. Build first (xm, xccl-perf). Knobs (env): TRIALS=3 SCENARIOS="spine rail"
# LOSS=5% SPINES=4 SPINE_RATE= (each ToR-spine link's rate, tc units; default non-blocking: a ToR's
# NICs' total over its uplinks) NAME=hb BUILD_DIR=build/default OUT=bench/results (each trial's job log and
# counters kept there) ITERS=6 (checked iterations: about 60 s of loop here) AT=8 (seconds into it)
# MONITOR_ARGS= (more options of `xm ops monitor`, e.g. "--scrape-interval 0.5") SOCKETS=1 (the job's
# XCCL_TCP_SOCKETS_PER_RAIL: more 5-tuples per rail for ECMP to spread over the spines)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/default}
TRIALS=${TRIALS:-3}
SCENARIOS=${SCENARIOS:-spine rail}
LOSS=${LOSS:-5%}
NAME=${NAME:-hb}
OUT=${OUT:-$ROOT/bench/results}
ITERS=${ITERS:-6}
SPINES=${SPINES:-4}
SPINE_RATE=${SPINE_RATE:-}
AT=${AT:-8}
MONITOR_ARGS=${MONITOR_ARGS:-}
SOCKETS=${SOCKETS:-1}
XM=$BUILD_DIR/src/xm
PERF=$BUILD_DIR/tools/xccl-perf
COUNTERS=$ROOT/bench/rail_counters.py
. "$ROOT/bench/rail_modes.sh"  # median_max
for b in "$XM" "$PERF"; do [ -x "$b" ] || { echo "heal_throughput: $b not built" >&2; exit 2; }; done
[ "$(id -u)" = 0 ] || { echo "heal_throughput: needs root (network namespaces, FRR)" >&2; exit 2; }
mkdir -p "$OUT"
work=$(mktemp -d)
sampler=""
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  "$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

printf 'name: heal\nservers: 4\nserver:\n  accelerators: 2\n  nics: 2\n  nic_gbps: 100\nfabric:\n  kind: rail-optimized\n  tor: {ports: 8, servers: 4, uplinks: %s}\n  agg: {count: %s, tors: 2, link: {gbps: 100}}\n' "$SPINES" "$SPINES" >"$work/spec.yaml"
"$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true
"$XM" ops deploy "$work/spec.yaml" --name "$NAME" ${SPINE_RATE:+--spine-rate "$SPINE_RATE"} >/dev/null
# shellcheck disable=SC2086
"$XM" ops monitor --name "$NAME" $MONITOR_ARGS >/dev/null
port=$(cat "/run/xm-testbed/$NAME/monitor/controller.port")
now() { date +%s.%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'; }

for scenario in $SCENARIOS; do
  case $scenario in
    spine) fault="--inject loss --at tor0:spine1 --value $LOSS" ;;
    spine-blackhole) fault="--inject blackhole --at tor0:spine1 --value 50%" ;;
    rail) fault="--inject loss --at h1/nic0 --value $LOSS" ;;
    *) echo "heal_throughput: unknown scenario $scenario" >&2; exit 2 ;;
  esac
  # The spine faults' job is a flat ring whose cross-rail hops go through the spines; the
  # rail fault's job has one rank per host striping over both NICs.
  if [ "$scenario" = rail ]; then k=1 rails=all algo=""; else k=2 rails=own algo="XCCL_ALGO=all_reduce:ring"; fi
  echo "### $scenario: $fault ($k rank(s) per host, --rails $rails), $TRIALS trials"
  echo
  echo "| trial | healed after (s) | located to healed (s) | heal | before (MB/s) | fault to heal (MB/s) | after heal (MB/s) | after / before | exact |"
  echo "|---|---|---|---|---|---|---|---|---|"
  : >"$work/figures"
  for trial in $(seq 1 "$TRIALS"); do
    csv=$work/$scenario-$trial.csv
    ip netns exec "xm-$NAME-h1" python3 "$COUNTERS" sample --every 0.02 --out "$csv" &
    sampler=$!
    env XCCL_DEBUG=WARN "$XM" testbed run --name "$NAME" --timeout 300 -k $k --rails $rails -- \
      env $algo XCCL_TCP_SOCKETS_PER_RAIL="$SOCKETS" "$PERF" all_reduce -b 16M -e 16M -n 1 -w 0 -c "$ITERS" >"$work/job.log" 2>&1 &
    job=$!
    sleep "$AT"
    actions_before=$(curl -s "127.0.0.1:$port/api/actions" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["actions"]))')
    injected=$(now)
    # shellcheck disable=SC2086
    "$XM" testbed fault --name "$NAME" $fault >/dev/null
    healed=nan what="none" incident=0
    for _ in $(seq 1 150); do
      read -r healed what incident < <(curl -s "127.0.0.1:$port/api/actions" | python3 -c '
import json, sys
a = json.load(sys.stdin)["actions"][int(sys.argv[1]):]
a = [x for x in a if x["action"] in ("drain", "advise")]
print("%.3f %s:%s %d" % (a[0]["at"], a[0]["action"], a[0]["component"].replace(" ", ""), a[0]["incident"]) if a else "nan none 0")' "$actions_before")
      [ "$healed" != nan ] && break
      sleep 0.2
    done
    # From the incident's opening (the localization) to its first heal action.
    lag=$(curl -s "127.0.0.1:$port/api/incidents?all=1" | python3 -c '
import json, sys
i = [x for x in json.load(sys.stdin)["incidents"] if x["id"] == int(sys.argv[1]) and x["healed_at"]]
print("%.2f" % (i[0]["healed_at"] - i[0]["opened_at"]) if i else "nan")' "$incident")
    rc=0
    wait $job || rc=$?
    end=$(now)
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    sampler=""
    exact=no
    [ $rc = 0 ] && grep -q "Out of bounds values : 0 OK" "$work/job.log" && exact=yes
    [ $exact = yes ] || { echo "trial $trial failed (rc $rc):" >&2; tail -5 "$work/job.log" >&2; }
    cp "$work/job.log" "$OUT/heal_${scenario}_$trial.log"
    cp "$csv" "$OUT/heal_${scenario}_$trial.csv"
    "$XM" testbed fault --name "$NAME" --undo >/dev/null
    "$XM" ops undrain --all --name "$NAME" >/dev/null 2>&1 || true
    before=$(python3 "$COUNTERS" window "$csv" --from "$(awk -v t="$injected" 'BEGIN{printf "%.3f", t-4}')" --to "$injected")
    if [ "$healed" = nan ]; then
      during=nan after=nan after_s=nan
    else
      during=$(python3 "$COUNTERS" window "$csv" --from "$injected" --to "$healed")
      # From a second after the heal (TCP's windows reopen) to the end of the loop.
      last=$(awk 'NR>1 {print $1}' "$csv" | tail -1)
      after=$(python3 "$COUNTERS" window "$csv" --from "$(awk -v t="$healed" 'BEGIN{printf "%.3f", t+1}')" --to "$(awk -v t="$end" -v l="$last" 'BEGIN{printf "%.3f", (t<l?t:l)-0.5}')")
      after_s=$(awk -v a="$healed" -v b="$injected" 'BEGIN{printf "%.2f", a-b}')
    fi
    r=$(ratio "$after" "$before")
    echo "$after_s $before $during $after $r $exact $lag" >>"$work/figures"
    printf '| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$trial" "$after_s" "$lag" "$what" "$before" "$during" "$after" "$r" "$exact"
    # Until the incident has closed: the next trial's fault is a new incident, not this
    # one seen again (which the operator's undrain keeps from being healed twice).
    for _ in $(seq 1 120); do "$XM" ops locate --name "$NAME" >/dev/null 2>&1 && break; sleep 0.5; done
  done
  printf '| median / max | %s | %s | | %s | %s | %s | %s | %s of %s |\n' \
    "$(cut -d' ' -f1 "$work/figures" | median_max)" "$(cut -d' ' -f7 "$work/figures" | median_max)" "$(cut -d' ' -f2 "$work/figures" | median_max)" \
    "$(cut -d' ' -f3 "$work/figures" | median_max)" "$(cut -d' ' -f4 "$work/figures" | median_max)" \
    "$(cut -d' ' -f5 "$work/figures" | median_max)" "$(grep -c yes "$work/figures" || true)" "$TRIALS"
  echo
done
