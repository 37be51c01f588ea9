#!/usr/bin/env bash
# jobs.sh: how many compilers a build runs at once. AUXSTORE_JOBS when set;
# else one per core, but no more than one per 2 GiB of available memory (a
# sanitized compile of the store's largest files takes over 1 GiB).
set -euo pipefail
if [ -n "${AUXSTORE_JOBS:-}" ]; then
  echo "$AUXSTORE_JOBS"
  exit 0
fi
cores=$(nproc)
mem_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
by_mem=$((mem_kib / (2 * 1024 * 1024)))
jobs=$((cores < by_mem ? cores : by_mem))
echo $((jobs < 1 ? 1 : jobs))
