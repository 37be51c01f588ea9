#!/usr/bin/env bash
# build.sh BUILD_DIR [cmake args...]: configure (once) and build with -j2.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"${AUXSTORE_JOBS:-2}"
