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
)

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
