#!/usr/bin/env bash
# GPU checks for a machine with an NVIDIA GPU.
#
#   tools/gpu_check.sh PACK_DIR
#
# PACK_DIR holds the binaries built with CUDA (build/tests/gpu/*):
#   gpu_cuda_test gpu_kernel_test gpu_host_backend_test gpu_seq_state_test
#   gpu_staging_test gpu_pipeline_test gpu_pipeline_concurrency_test gpu_restore_bench
# Logs and bench JSON go to $OUT (default ./gpu_check_out). Exit status is 0
# only when every test passed and the CUDA tests really ran (none skipped).
set -u -o pipefail

pack="${1:?usage: gpu_check.sh PACK_DIR}"
out="${OUT:-./gpu_check_out}"
mkdir -p "$out"
status=0
note() { echo "gpu_check: $*" | tee -a "$out/summary.txt"; }

command -v nvidia-smi >/dev/null && nvidia-smi >"$out/nvidia-smi.txt" 2>&1

run_test() {  # name [extra gtest args...]
  local name="$1"; shift
  local bin="$pack/$name"
  if [[ ! -x "$bin" ]]; then note "MISSING $name"; status=1; return; fi
  if timeout 300 "$bin" --gtest_color=no "$@" >"$out/$name.log" 2>&1; then
    note "PASS $name"
  else
    note "FAIL $name (rc $?, see $name.log)"; status=1
  fi
}

# The CUDA tests first: on a GPU host a skip is a failure (no device seen).
run_test gpu_cuda_test
if grep -q "SKIPPED" "$out/gpu_cuda_test.log" 2>/dev/null; then
  note "FAIL gpu_cuda_test skipped: the CUDA backend found no device"
  grep -m1 "no CUDA device" "$out/gpu_cuda_test.log" | tee -a "$out/summary.txt"
  status=1
fi
for t in gpu_kernel_test gpu_host_backend_test gpu_seq_state_test gpu_staging_test \
         gpu_pipeline_test gpu_pipeline_concurrency_test; do
  run_test "$t"
done

# Bench: pinned H2D bandwidth vs the restore pipeline, side by side, on CUDA
# (and on the host backend for reference). 3 runs each.
bench="$pack/gpu_restore_bench"
if [[ -x "$bench" ]]; then
  for backend in cuda host; do
    for i in 1 2 3; do
      if ! timeout 300 "$bench" --backend "$backend" --mib "${BENCH_MIB:-512}" --layers 32 \
          >>"$out/bench_$backend.jsonl" 2>>"$out/bench_$backend.err"; then
        note "FAIL bench $backend run $i (see bench_$backend.err)"; status=1
      fi
    done
    [[ -s "$out/bench_$backend.jsonl" ]] && cat "$out/bench_$backend.jsonl" >>"$out/summary.txt"
  done
else
  note "MISSING gpu_restore_bench"; status=1
fi

note "exit $status"
exit "$status"
