#!/usr/bin/env bash
# Installs xccl from a build tree as a user would, then builds and runs a separate
# project against it (tests/package/consumer):
#   package_test.sh BUILD install   cmake --install into a scratch prefix; find_package
#                                   and pkg-config each build the consumer; import
#                                   xccl_torch from there too, if it was built
#   package_test.sh BUILD deb       cpack the .debs, dpkg -i them, the same against /usr,
#                                   then dpkg -r (root; leaves the system as it was)
set -euo pipefail
build=$(cd "$1" && pwd)
mode=$2
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d /tmp/xccl-package.XXXXXX)
installed=()
cleanup() {
  [[ ${#installed[@]} -eq 0 ]] || dpkg --purge "${installed[@]}" >/dev/null 2>&1 || echo "package_test: dpkg --purge ${installed[*]} failed"
  rm -rf "$scratch"
}
trap cleanup EXIT

consumer() {  # consumer NAME CMAKE-ARGS...: configure, build and run the consumer
  local name=$1; shift
  cmake -S "$here/consumer" -B "$scratch/$name" -G Ninja "$@" >"$scratch/$name.log" 2>&1 ||
    { cat "$scratch/$name.log"; echo "package_test: configuring the consumer ($name) failed"; exit 1; }
  cmake --build "$scratch/$name" >>"$scratch/$name.log" 2>&1 ||
    { cat "$scratch/$name.log"; echo "package_test: building the consumer ($name) failed"; exit 1; }
  echo "$name: $("$scratch/$name/allreduce")"
}

torch_import() {  # torch_import PYTHONPATH: the installed backend registers itself
  [[ -d "$build/python/xccl_torch" ]] || return 0
  (cd "$scratch" && PYTHONPATH="$1" /usr/bin/python3 -c \
    'import xccl_torch, torch.distributed as d; assert d.Backend("xccl") == "xccl"; print("xccl_torch from", xccl_torch.__file__)')
}

case "$mode" in
  install)
    prefix=$scratch/prefix
    cmake --install "$build" --prefix "$prefix" --component xccl >/dev/null
    if [[ -d "$build/python/xccl_torch" ]]; then cmake --install "$build" --prefix "$prefix" --component torch >/dev/null; fi
    soname=$(readelf -d "$prefix"/lib*/libxccl.so | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
    echo "installed under $prefix: libxccl.so -> $(readlink "$prefix"/lib*/libxccl.so), SONAME $soname"
    consumer find_package -DCMAKE_PREFIX_PATH="$prefix"
    PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name xccl.pc)") consumer pkg_config -DUSE_PKG_CONFIG=ON
    # (A build without the torch backend, as CI's plain Release one, has nothing more to check.)
    if [[ -d "$build/python/xccl_torch" ]]; then torch_import "$(dirname "$(find "$prefix" -type d -name xccl_torch)")"; fi
    ;;
  deb)
    [[ $(id -u) -eq 0 ]] || { echo "package_test deb: needs root (dpkg -i)"; exit 1; }
    (cd "$scratch" && cpack --config "$build/CPackConfig.cmake" -B "$scratch/debs" >"$scratch/cpack.log" 2>&1) ||
      { cat "$scratch/cpack.log"; exit 1; }
    debs=("$scratch"/debs/*.deb)
    for deb in "${debs[@]}"; do
      echo "built $(basename "$deb"): $(dpkg-deb -f "$deb" Package) depends on $(dpkg-deb -f "$deb" Depends)"
      if [[ $(dpkg-query -W -f='${Status}' "$(dpkg-deb -f "$deb" Package)" 2>/dev/null) == "install ok installed" ]]; then
        echo "package_test: $(dpkg-deb -f "$deb" Package) is already installed; not touching it"; exit 1
      fi
    done
    installed=($(for deb in "${debs[@]}"; do dpkg-deb -f "$deb" Package; done))
    dpkg -i "${debs[@]}" >/dev/null
    consumer find_package
    consumer pkg_config -DUSE_PKG_CONFIG=ON
    torch_import ""
    ;;
  *) echo "usage: package_test.sh BUILD install|deb"; exit 2 ;;
esac
