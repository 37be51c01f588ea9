#!/usr/bin/env bash
# README command 2: set everything up, build, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
cd build
ctest --output-on-failure -j2 --timeout 900
