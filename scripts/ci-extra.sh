#!/usr/bin/env bash
# CI checks beyond the README's test command: formatting, the concurrency
# tests under TSan, the unit suite under ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== clang-format"
files=$(git ls-files '*.h' '*.cc' '*.c' '*.cu')
clang-format --dry-run --Werror $files
echo "clang-format: $(echo "$files" | wc -l) files clean"

echo "== TSan: concurrency tests"
scripts/build.sh build-tsan -DAUXSTORE_SANITIZE=thread -DAUXSTORE_CUDA=OFF
(cd build-tsan && TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=1" \
   ctest --output-on-failure -L concurrency --timeout 900)

echo "== ASan+UBSan: unit tests"
scripts/build.sh build-asan -DAUXSTORE_SANITIZE=address,undefined -DAUXSTORE_CUDA=OFF
(cd build-asan && ASAN_OPTIONS="detect_leaks=1" ctest --output-on-failure -j2 -L unit --timeout 900)
