#!/usr/bin/env bash
# README command 1: set everything up and run the end-to-end demo.
# demo.sh [STORE_DIR]: the store lives in STORE_DIR (default: a fresh temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build >/dev/null
dir=${1:-$(mktemp -d /tmp/auxstore-demo-XXXXXX)/store}
echo "== process 1: build sequence states, snapshot prefixes into $dir, exit"
build/tools/demo/auxstore_demo snapshot --store "$dir"
echo "== process 2 (a restart): find each query's longest stored prefix, restore, check every byte"
build/tools/demo/auxstore_demo restore --store "$dir"
