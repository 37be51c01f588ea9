#!/usr/bin/env bash
# build.sh BUILD_DIR [cmake args...]: configure (once) and build, as many
# compilers at once as scripts/jobs.sh says (AUXSTORE_JOBS, else the cores).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(scripts/jobs.sh)"
