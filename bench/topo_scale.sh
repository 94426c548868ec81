#!/usr/bin/env bash
# The topology model at scale, side by side with networkx (python3-networkx), in one run.
#
# For each size: `xm topo gen` writes a spec; then, as whole processes, `xm topo show
# --json` (read spec, build graph, summarise, count the farthest pair's equal-cost paths)
# and bench/networkx_fabric.py (read spec, build the same graph, count the same paths).
# The two graphs must agree (nodes, links, paths) or the script fails. Prints a Markdown
# table of medians (wall seconds, peak RSS) and the ratios networkx / xm.
#
#   bench/topo_scale.sh [RUNS] [SIZES...]      (default: 5 runs; 1024 16384 102400)
set -euo pipefail
cd "$(dirname "$0")/.."
xm=build/default/src/xm
[[ -x $xm ]] || { echo "build first: cmake --preset default && cmake --build --preset default" >&2; exit 1; }
runs=${1:-5}; shift || true
sizes=("$@"); [[ ${#sizes[@]} -gt 0 ]] || sizes=(1024 16384 102400)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# time_runs CMD... -> "median_seconds median_maxrss_kb", last stdout in $work/out
time_runs() {
  : >"$work/t"
  for ((i = 0; i < runs; i++)); do
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f "%M" -o "$work/one" "$@" >"$work/out"
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))e-6 $(cat "$work/one")" >>"$work/t"
  done
  echo "$(cut -d' ' -f1 "$work/t" | median) $(cut -d' ' -f2 "$work/t" | median)"
}

field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

echo "| accelerators | nodes | links | far-pair paths | xm s | xm MiB | networkx s | networkx MiB | time ratio | memory ratio |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for gpus in "${sizes[@]}"; do
  spec="$work/spec-$gpus.json"
  $xm topo gen --gpus "$gpus" --rails 8 -o "$spec" 2>/dev/null
  read -r xs xk < <(time_runs $xm topo show --json "$spec")
  cp "$work/out" "$work/xm.json"
  read -r ns nk < <(time_runs python3 bench/networkx_fabric.py "$spec")
  cp "$work/out" "$work/nx.json"
  for f in nodes links; do
    a=$(field "$work/xm.json" "$f"); b=$(field "$work/nx.json" "$f")
    [[ $a == "$b" ]] || { echo "graphs differ at $gpus: $f xm=$a networkx=$b" >&2; exit 1; }
  done
  xp=$(field "$work/xm.json" ecmp_paths); np=$(field "$work/nx.json" paths)
  [[ $xp == "$np" ]] || { echo "paths differ at $gpus: xm=$xp networkx=$np" >&2; exit 1; }
  awk -v g="$gpus" -v n="$(field "$work/xm.json" nodes)" -v l="$(field "$work/xm.json" links)" -v p="$xp" \
      -v xs="$xs" -v xk="$xk" -v ns="$ns" -v nk="$nk" 'BEGIN {
    printf "| %d | %d | %d | %d | %.3f | %.0f | %.2f | %.0f | %.0f× | %.1f× |\n",
           g, n, l, p, xs, xk / 1024, ns, nk / 1024, (xs > 0 ? ns / xs : 0), nk / xk }'
done
echo
echo "medians of $runs runs each; $(nproc) cores; $(date -u +%Y-%m-%d)"
