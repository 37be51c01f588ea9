#!/usr/bin/env bash
# CI: the reliability battery (docs/durability.md). Installs nothing
# (scripts/setup.sh provides clang and libclang-rt-14-dev).
#   1. gcc build, ctest label `reliability` (kill -9, power loss, I/O faults,
#      on-disk corruption, and the trust attacks of tests/trust: a second
#      open, readers beside a live writer, a full tmpfs, every page of every
#      file zeroed, ...), each bounded by default;
#   2. clang build with -DAUXSTORE_FUZZ=ON, each libFuzzer target run from its
#      committed seed corpus for FUZZ_SECONDS (default 30); any crash fails.
# Environment: AUXSTORE_RELIABILITY_CYCLES (every test's cycles), FUZZ_SECONDS,
# AUXSTORE_JOBS.
# --fuzz-only skips step 1 (CI: scripts/test.sh already ran the battery).
# --soak runs instead the figures docs/durability.md quotes, each battery at
#   its own scale (SOAK_KILL9, SOAK_POWER, SOAK_CORRUPTION, SOAK_IO_FAULT,
#   SOAK_KILL_COMPACT cycles; defaults 1000, 1000, 3000, 200, 20), one after
#   the other, and prints the table those figures come from (about an hour
#   here; logs in build-rel/soak-*.log). CI runs the bounded defaults instead.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(scripts/jobs.sh)
fuzz_seconds=${FUZZ_SECONDS:-30}
fuzz_only=0
[ "${1:-}" = "--fuzz-only" ] && fuzz_only=1

if [ "${1:-}" = "--soak" ]; then
  echo "== reliability soak (build-rel)"
  cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUXSTORE_CUDA=OFF >/dev/null
  cmake --build build-rel -j"$jobs" --target kill9_test power_loss_test io_fault_test \
    corruption_trial_test kill_compact_test auxstore_crash_writer auxstore
  failed=0
  summary=()
  soak() {  # soak NAME CYCLES
    local bin=build-rel/tests/reliability/$1 log=build-rel/soak-$1.log start rc=0
    start=$(date +%s)
    "$bin" --cycles "$2" >"$log" 2>&1 || rc=$?
    summary+=("$(printf '%-22s cycles=%-5s %5ss exit=%s' "$1" "$2" "$(($(date +%s) - start))" "$rc")")
    grep -E "^(RELIABILITY|  trials|file |damage |SST|WAL|MANIFEST|CURRENT|WATERMARK|flip|zero-page|truncate|delete)" "$log" || true
    if [ "$rc" -ne 0 ]; then
      failed=1
      grep -E "Failure|Expected|Which is" -A3 "$log" | head -30 || true
    fi
  }
  soak kill9_test "${SOAK_KILL9:-1000}"
  soak power_loss_test "${SOAK_POWER:-1000}"
  soak corruption_trial_test "${SOAK_CORRUPTION:-3000}"
  soak io_fault_test "${SOAK_IO_FAULT:-200}"
  soak kill_compact_test "${SOAK_KILL_COMPACT:-20}"
  echo "== soak summary ($(git rev-parse --short HEAD), $(date -u +%F))"
  printf '%s\n' "${summary[@]}"
  [ "$failed" -eq 0 ] && echo "soak: all passed" || { echo "soak FAILED"; exit 1; }
  exit 0
fi

if [ "$fuzz_only" -eq 0 ]; then
echo "== reliability battery (build-rel)"
cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUXSTORE_CUDA=OFF >/dev/null
# Everything: the trust tests are many and each needs the CLI and children.
cmake --build build-rel -j"$jobs"
rc=0
(cd build-rel && ctest --output-on-failure -L reliability --timeout 900 -V) \
  >build-rel/reliability.log 2>&1 || rc=$?
# The figures docs/durability.md quotes, then ctest's summary.
grep -E "RELIABILITY|TRUST|^[0-9]+: (file|damage|SST|WAL|MANIFEST|OPTIONS|CURRENT|WATERMARK|flip|zero-page|truncate|delete) " \
  build-rel/reliability.log || true
grep -E "tests passed|tests failed|Failed|\*\*\*" build-rel/reliability.log || true
if [ "$rc" -ne 0 ]; then
  echo "reliability battery FAILED (full log: build-rel/reliability.log)"
  grep -E "Failure|error:|Expected|Which is" build-rel/reliability.log | head -40 || true
  exit 1
fi
fi

echo "== fuzzers (build-fuzz, ${fuzz_seconds}s each)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAUXSTORE_CUDA=OFF -DAUXSTORE_FUZZ=ON >/dev/null
targets=(fuzz_envelope fuzz_qsa fuzz_dsa fuzz_manifest)
if grep -q "fuzz_import_manifest" build-fuzz/tests/fuzz/Makefile 2>/dev/null; then
  targets+=(fuzz_import_manifest)
else
  echo "fuzz_import_manifest: tools/cli/import_manifest.cc absent, skipped"
fi
cmake --build build-fuzz -j"$jobs" --target "${targets[@]}"
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  echo "-- $t"
  # The fuzzer exits non-zero on a crash, leak, UBSan report or timeout.
  rc=0
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    build-fuzz/tests/fuzz/"$t" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix=build-fuzz/"$t"- "$corpus" >build-fuzz/"$t".log 2>&1 || rc=$?
  grep -E "Done [0-9]+ runs|ERROR|SUMMARY" build-fuzz/"$t".log || true
  if [ "$rc" -ne 0 ]; then
    tail -40 build-fuzz/"$t".log
    echo "$t FAILED (exit $rc; artifacts: build-fuzz/$t-*)"
    exit 1
  fi
done
echo "reliability: all passed"
