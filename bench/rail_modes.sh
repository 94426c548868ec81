# Sourced by the rail-fault benchmarks: what a testbed rail mode means for a job, and
# how they summarise a column of figures.
#   all        one rank per host on both NICs
#   own+spare  two per host, each on its own NIC with the other as a spare, with the
#              rail-aware algorithms (hierarchical; PXN for all-to-all)
# rail_mode MODE COLLECTIVE sets k (ranks per host) and env_algo (XCCL_ALGO=..., or empty).
rail_mode() {
  k=1 env_algo=""
  if [ "$1" = own+spare ]; then
    k=2
    case $2 in alltoall) env_algo="XCCL_ALGO=alltoall:pxn" ;; *) env_algo="XCCL_ALGO=$2:hierarchical" ;; esac
  fi
}

# A column of numbers on stdin (nan skipped) -> "median / max", or "-" when none.
median_max() {
  grep -v nan | sort -g | awk '{v[NR]=$1} END {if (NR==0) {print "-"; exit}; m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%g / %g", m, v[NR]}'
}
