#!/usr/bin/env bash
# agent_cpu.sh: what the monitoring costs. Deploys a HOSTS x RAILS testbed, starts `xm ops
# monitor` (an agent per host at the default probe rate, Prometheus scraping every second),
# lets it run for SECONDS, then reads from Prometheus each agent's CPU
# (rate(process_cpu_seconds_total)), probes per second and probe loss, and Prometheus's own
# CPU from /proc. Prints Markdown. Needs root, FRR, lldpd and Prometheus.
#
#   sudo bench/agent_cpu.sh    # knobs (env): HOSTS=16 RAILS=8 RUN_SECONDS=60 XM=build/default/src/xm NAME=cpu
#                              # KEEP=1 leaves the testbed and monitor running (e.g. to profile an agent)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
XM=${XM:-$ROOT/build/default/src/xm}
HOSTS=${HOSTS:-16}
RAILS=${RAILS:-8}
SECONDS_RUN=${RUN_SECONDS:-60}  # (not SECONDS: bash's own, the shell's age)
NAME=${NAME:-cpu}
[[ -x $XM ]] || { echo "agent_cpu.sh: missing $XM (cmake --build --preset default --target xm)" >&2; exit 1; }

WORK=$(mktemp -d)
cleanup() {
  [[ -n ${KEEP:-} ]] || "$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cat >"$WORK/spec.yaml" <<EOF
name: bench
servers: $HOSTS
server:
  accelerators: $RAILS
  nics: $RAILS
  nic_gbps: 400
fabric:
  kind: rail-optimized
  tor: {ports: $((HOSTS + 2)), servers: $HOSTS}
EOF
"$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true
"$XM" ops deploy "$WORK/spec.yaml" --name "$NAME" >"$WORK/deploy.log"
"$XM" ops monitor --name "$NAME" >"$WORK/monitor.log"
PORT=$(cat "/run/xm-testbed/$NAME/monitor/prometheus.port")
PROM_PID=$(cat "/run/xm-testbed/$NAME/monitor/prometheus.pid")
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
p0=$(ticks "$PROM_PID"); t0=$(date +%s.%N)
sleep "$SECONDS_RUN"
p1=$(ticks "$PROM_PID"); t1=$(date +%s.%N)

q() { python3 -c 'import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
for s in json.load(urllib.request.urlopen(url))["data"]["result"]:
    print(s["metric"].get("host", "-"), s["value"][1])' "$PORT" "$1"; }
W="${SECONDS_RUN}s"
q "sum by (host) (rate(process_cpu_seconds_total{job=\"xm-agent\"}[$W]))" | sort >"$WORK/cpu"
q "sum by (host) (rate(xm_probe_sent_total[$W]))" | sort >"$WORK/pps"
q "sum by (host) (increase(xm_probe_lost_total[$W]))" | sort >"$WORK/lost"
q "sum by (host) (rate(xm_probe_echoed_total[$W]))" | sort >"$WORK/echo"
flows=$(q "count(xm_probe_sent_total)" | awk '{ print $2 }')
series=$(q "count({job=\"xm-agent\"})" | awk '{ print $2 }')

echo "# $(date -Iseconds) on $(hostname): nproc $(nproc), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# $HOSTS hosts x $RAILS rails, agents at the default rate, Prometheus scraping every 1 s, over ${SECONDS_RUN} s"
echo "# $flows probe flows, $series series per scrape"
echo
echo "| host | agent CPU (% of a core) | probes sent /s | probes answered for peers /s | lost in ${SECONDS_RUN} s |"
echo "|---|---:|---:|---:|---:|"
join "$WORK/cpu" "$WORK/pps" | join - "$WORK/echo" | join - "$WORK/lost" |
  sort -V | awk '{ printf "| %s | %.2f | %.0f | %.0f | %d |\n", $1, 100 * $2, $3, $4, $5 }'
median_max() { sort -n | awk -v what="$1" '{ v[NR] = $1 } END {
  printf "%s: median %.2f %%, max %.2f %% of a core\n", what, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }'; }
echo
awk '$1 ~ /^h[0-9]/ { print 100 * $2 }' "$WORK/cpu" | median_max "host agent CPU"
awk '$1 !~ /^h[0-9]/ { print 100 * $2 }' "$WORK/cpu" | median_max "switch agent CPU (counters only)"
awk -v a="$p0" -v b="$p1" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" \
  'BEGIN { printf "Prometheus CPU: %.2f %% of a core\n", 100 * (b - a) / hz / (t1 - t0) }'
