#!/usr/bin/env bash
# Installs whatever auxstore's build and tests need from Debian's packages.
# Idempotent: packages already installed are left alone; nothing is fetched
# from anywhere but apt.
set -euo pipefail

packages=(
  cmake g++ make pkg-config git
  librocksdb-dev libxxhash-dev libboost-dev
  libgtest-dev googletest libgmock-dev
  libcli11-dev nlohmann-json3-dev
  clang clang-format libclang-rt-14-dev
  # the Python binding (bindings/python), built for Debian's /usr/bin/python3
  python3-dev pybind11-dev python3-pybind11
  # DLPack's header: host tensors of any framework as Python buffers
  libdlpack-dev
  python3-numpy python3-pytest python3-prometheus-client
  # torch tensors as host buffers (bindings/python/tests/test_torch.py): CPU
  # build from Debian, so those tests run instead of skipping
  python3-torch
  # the RADOS shared tier (store/rados) and the ctest cluster its tests run
  # on (scripts/ceph/cluster.sh, label ceph): the same list as cluster.sh install
  ceph-mon ceph-osd ceph-mgr ceph-common librados-dev libradospp-dev
)
# The Rust binding (bindings/rust): Debian's cargo and rustc, unless a Rust
# toolchain (rustup's) is already there. Its crates need nothing else.
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
  packages+=(cargo rustc)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
