#!/usr/bin/env bash
# What a session on a lent GPU verifies, in one command (a session has little device time):
#
#   bash tools/gpu_check.sh [OUT_DIR]      # on a GPU machine with cutematmul and its extras installed
#
# 1. every GPU test (`pytest -m gpu`: the GPU files, not the CPU compile tests, which CI runs;
#    the tests past 32-bit sizes, which need ~40 GB and minutes, only with FULL=1);
# 2. compute-sanitizer over every kernel family (tools/sanitize.sh);
# 3. the benchmark's default suite, host time per call and start-up (figures for
#    docs/performance.md; timings are printed, never asserted).
# Logs go to OUT_DIR (default gpu-check-logs); exit status 1 when the tests or the sanitizer fail.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu-check-logs}"
mkdir -p "$out"
status=0
select=(-m gpu)
[ "${FULL:-0}" = 1 ] || select+=(-k "not sizes_past_int32")
echo "== GPU tests"
python -m pytest -q "${select[@]}" tests > "$out/tests.log" 2>&1 || status=1
tail -3 "$out/tests.log"
echo "== sanitizer"
bash tools/sanitize.sh "$out/sanitize" || status=1
echo "== benchmark"
python -m cutematmul.bench --no-progress --out "$out/bench" 2>&1 | grep -E "x cuBLAS|cutematmul|WRONG" | tail -14
python -m cutematmul.bench host 2>&1 | grep -v "^\[bench\]"
python -m cutematmul.bench startup 2>&1 | grep -E "^cold|^warm|targets"
exit $status
