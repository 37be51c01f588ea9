#!/usr/bin/env bash
# CI checks beyond the README's test command (which already ran every test,
# the reliability battery's bounded defaults included): formatting, the
# concurrency tests under TSan, the unit, trust and reliability tests under
# ASan+UBSan, and each libFuzzer target for a bounded time. The sanitized
# builds leave out what they do not run (the benchmarks, the tests on a Ceph
# cluster), and every build runs scripts/jobs.sh compilers at once: all of
# .ci/run must stay under 60 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== clang-format"
files=$(git ls-files '*.h' '*.cc' '*.c' '*.cu')
clang-format --dry-run --Werror $files
echo "clang-format: $(echo "$files" | wc -l) files clean"

echo "== TSan: concurrency tests"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUXSTORE_SANITIZE=thread \
  -DAUXSTORE_CUDA=OFF -DAUXSTORE_BUILD_BENCH=OFF -DAUXSTORE_BUILD_CEPH_TESTS=OFF >/dev/null
cmake --build build-tsan -j"$(scripts/jobs.sh)" --target store_concurrency_test \
  pipeline_concurrency_test
(cd build-tsan && TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=1" \
   ctest --output-on-failure -L concurrency --timeout 900)

echo "== ASan+UBSan: unit tests"
scripts/build.sh build-asan -DAUXSTORE_SANITIZE=address,undefined -DAUXSTORE_CUDA=OFF \
  -DAUXSTORE_BUILD_BENCH=OFF -DAUXSTORE_BUILD_CEPH_TESTS=OFF
(cd build-asan && ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
   ctest --output-on-failure -j2 -L unit --timeout 900)

echo "== ASan+UBSan: the trust and reliability tests (the attacks: damaged files, killed"
echo "   writers, full disks), none past ${AUXSTORE_ASAN_CYCLES:-6} cycles"
(cd build-asan && AUXSTORE_MAX_CYCLES=${AUXSTORE_ASAN_CYCLES:-6} \
   ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
   ctest --output-on-failure -j2 -L "trust|reliability" --timeout 900)

echo "== fuzzers"
scripts/ci-reliability.sh --fuzz-only
