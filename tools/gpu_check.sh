#!/usr/bin/env bash
# GPU checks for a machine with an NVIDIA GPU and the CUDA driver, but none of
# Debian's -dev packages (the binaries bring their libraries in a pack).
#
#   tools/gpu_check.sh PACK_DIR
#
# PACK_DIR comes from ../shared/tools/pack-for-device (binaries in bin/, their
# shared libraries in lib/, `run NAME ARGS...` starts one). Build and pack on
# the build machine (docs/gpu.md, "Checking on a GPU host"):
#   cmake -S . -B build-cuda -DAUXSTORE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
#         -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-cuda -j2 --target gpu_cuda_test gpu_kernel_test \
#     gpu_host_backend_test gpu_seq_state_test pipeline_staging_test pipeline_test \
#     pipeline_concurrency_test cuda_engine_test engine_flow_test gpu_restore_bench \
#     auxstore_bench             # optional: the store bench on the GPU host's cores
#   ../shared/tools/pack-for-device .device build-cuda/tests/gpu/gpu_{cuda,kernel,...}
#   strip .device/bin/*          # the device call carries 64 MiB at most:
#   tar -cf - .device | xz -T2 > .devpack/pack.tar.xz   # ~26 MiB; unpack there
#
# Results go to $OUT (the device run's output folder; ./gpu_check_out when
# unset): one log per test, bench_*.jsonl, summary.txt. The whole run stays
# under 8 minutes (BUDGET_S, default 450 s; each step is cut to what is left).
# Exit status 0 only when every test passed, the CUDA tests really ran on a
# device (a skip is a failure here), and every bench run was bit-exact on the
# backend it asked for.
set -u -o pipefail

pack="${1:?usage: gpu_check.sh PACK_DIR}"
out="${OUT:-./gpu_check_out}"
budget="${BUDGET_S:-450}"
start=$SECONDS
status=0
mkdir -p "$out" || { echo "gpu_check: cannot create $out" >&2; exit 2; }
: >"$out/summary.txt"
note() { echo "gpu_check: $*" | tee -a "$out/summary.txt"; }
fail() { note "FAIL $*"; status=1; }

if [[ ! -x "$pack/run" || ! -d "$pack/bin" ]]; then
  note "FAIL $pack is not a pack from pack-for-device (no run script or bin/)"
  exit 2
fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || fail "nvidia-smi failed (see nvidia-smi.txt)"
else
  fail "nvidia-smi not found: is this a GPU host?"
fi

# Seconds left for one step: at most $1, never past the budget.
left() {
  local rest=$((budget - (SECONDS - start)))
  ((rest > $1)) && rest=$1
  echo "$rest"
}

run_test() {  # name [extra gtest args...]
  local name="$1"; shift
  local limit; limit=$(left 90)
  if [[ ! -x "$pack/bin/$name" ]]; then fail "$name: missing from the pack"; return; fi
  if ((limit < 5)); then fail "$name: not run, the time budget is spent"; return; fi
  local rc=0
  timeout "$limit" "$pack/run" "$name" --gtest_color=no "$@" >"$out/$name.log" 2>&1 || rc=$?
  if ((rc == 124)); then
    fail "$name: timed out after ${limit}s (see $name.log)"
  elif ((rc != 0)); then
    fail "$name: exit $rc (see $name.log)"
  elif ! grep -q '^\[  PASSED  \] [1-9]' "$out/$name.log"; then
    fail "$name: no test passed (see $name.log)"
  else
    note "PASS $name ($(grep -m1 '^\[  PASSED  \]' "$out/$name.log"))"
  fi
}

# CUDA first: on a GPU host a skipped CUDA test means the backend saw no device.
run_test gpu_cuda_test
if grep -q '^\[  SKIPPED \]' "$out/gpu_cuda_test.log" 2>/dev/null; then
  fail "gpu_cuda_test skipped tests: the CUDA backend found no usable device"
  grep -m3 -i 'skip\|cuda' "$out/gpu_cuda_test.log" | tee -a "$out/summary.txt"
fi
# The engine-fit flow on the GPU: cudaMalloc'd engine buffers and the
# engine's own non-default stream, in C++ and through the C ABI (two
# processes across a restart).
run_test cuda_engine_test
if grep -q '^\[  SKIPPED \]' "$out/cuda_engine_test.log" 2>/dev/null; then
  fail "cuda_engine_test skipped: no usable device"
fi
if [[ -x "$pack/bin/engine_flow_test" ]]; then
  rc=0
  AUXSTORE_ENGINE_FLOW_BACKEND=cuda timeout "$(left 90)" "$pack/run" engine_flow_test \
    >"$out/engine_flow_test.log" 2>&1 || rc=$?
  if ((rc == 0)) && grep -q 'engine_flow_test: passed' "$out/engine_flow_test.log"; then
    note "PASS engine_flow_test (CUDA backend)"
  else
    fail "engine_flow_test on CUDA: exit $rc (see engine_flow_test.log)"
  fi
else
  fail "engine_flow_test: missing from the pack"
fi
for t in gpu_kernel_test gpu_host_backend_test gpu_seq_state_test pipeline_staging_test \
         pipeline_test pipeline_concurrency_test; do
  run_test "$t"
done

# Bench: restore vs memcpy / raw read / pinned H2D, side by side in one
# process; CUDA twice, the host backend once for reference, then QSA layers
# on CUDA (every restore launches the re-pool kernel; the bench also times
# those launches alone). The store lives in a scratch dir outside $OUT (it is
# hundreds of MiB).
bench_run() {  # backend [kind [lanes]] (lanes and I/O threads; unset: the default)
  local backend="$1" kind="${2:-opaque}" lanes=() limit; limit=$(left 120)
  [[ -n "${3:-}" ]] && lanes=(--read-ahead "$3" --io-threads "$3")
  if ((limit < 10)); then fail "bench $backend: not run, the time budget is spent"; return; fi
  local scratch; scratch=$(mktemp -d) || { fail "bench $backend: mktemp"; return; }
  local line rc=0
  line=$(timeout "$limit" "$pack/run" gpu_restore_bench --backend "$backend" \
           --mib "${BENCH_MIB:-512}" --layers 32 --rounds 3 --dir "$scratch" --kind "$kind" "${lanes[@]}" \
           2>>"$out/bench_$backend.err") || rc=$?
  rm -rf "$scratch"
  if ((rc != 0)); then fail "bench $backend: exit $rc (see bench_$backend.err)"; return; fi
  echo "$line" >>"$out/bench_$backend.jsonl"
  echo "$line" >>"$out/summary.txt"
  [[ "$line" == *'"bit_exact":true'* ]] || fail "bench $backend: restore was not bit-exact"
  if [[ "$backend" == cuda && "$line" != *'"backend":"cuda:'* ]]; then
    fail "bench cuda ran on another backend"
  fi
}
if [[ -x "$pack/bin/gpu_restore_bench" ]]; then
  for backend in cuda cuda host; do bench_run "$backend"; done
  bench_run cuda qsa
  # Lanes and I/O threads at the ends of the default's range (2 to 8).
  bench_run cuda opaque 2
  bench_run cuda opaque 8
else
  fail "gpu_restore_bench: missing from the pack"
fi

# The store bench (issue 25's ratios: reads and restores against raw read and
# memcpy, side by side) on this host's cores, when the pack carries it.
# STORE_BENCH_ARGS replaces the workload choice (e.g. the issue's whole table:
# "--realistic-tokens 32768").
if [[ -x "$pack/bin/auxstore_bench" ]]; then
  read -r -a store_args <<<"${STORE_BENCH_ARGS:---only 4MiB}"
  limit=$(left 240)
  if ((limit < 30)); then
    fail "auxstore_bench: not run, the time budget is spent"
  else
    scratch=$(mktemp -d) && rc=0
    timeout "$limit" "$pack/run" auxstore_bench --runs 3 --bytes 268435456 "${store_args[@]}" \
      --dir "$scratch" >"$out/store_bench.txt" 2>&1 || rc=$?
    rm -rf "$scratch"
    if ((rc == 0)); then note "PASS auxstore_bench (store_bench.txt)"; else fail "auxstore_bench: exit $rc"; fi
  fi
fi

note "exit $status after $((SECONDS - start))s"
exit "$status"
