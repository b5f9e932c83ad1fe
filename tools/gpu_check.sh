#!/usr/bin/env bash
# What a session on a lent GPU verifies (a session has little device time):
#
#   bash tools/gpu_check.sh [OUT_DIR]                     # on a GPU machine with cutematmul and its extras installed
#   GPU_CHECK_PARTS=tests bash tools/gpu_check.sh OUT_DIR # one part (device calls are cut at 10 minutes)
#
# Parts (GPU_CHECK_PARTS, default "tests sanitize bench", in that order):
# * tests: first `python -m cutematmul info` (the package starts and reads its cache; exit 2
#   and no test run where it fails), then every GPU test (`pytest -m gpu`: the GPU files, not
#   the CPU compile tests, which CI runs; the tests past 32-bit sizes, which need ~40 GB and
#   minutes, only with FULL=1), in
#   GPU_TEST_JOBS pytest processes side by side on the one GPU (default 5; the files are
#   grouped by their run times on an H200, the last group takes every file the others do not
#   name), each cut at GPU_TEST_LIMIT seconds (default 540) so that one call of 10 minutes
#   returns every group's log; a cut group says so;
# * sanitize: compute-sanitizer over every kernel family (tools/sanitize.sh; its SANITIZE_*
#   variables select a part of it);
# * bench: the benchmark's default suite, host time per call and start-up (figures for
#   docs/performance.md; timings are printed, never asserted).
# Logs go to OUT_DIR (default gpu-check-logs); exit status 1 when the tests or the sanitizer fail.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu-check-logs}"
mkdir -p "$out"
status=0

#: Test files per group (H200, 2026-12-04, seconds with three groups side by side: split-K 157,
#: swap 124; fp32 modes with odd widths and PDL 279; JAX, PyTorch and the rest of the third
#: group 366; test_gpu_matmul's 760 products not timed alone), the last merged into the one
#: before it while there are more groups than GPU_TEST_JOBS.
groups=("tests/test_gpu_splitk.py tests/test_gpu_swap.py"
        "tests/test_gpu_fp32_modes.py tests/test_gpu_odd_widths.py tests/test_gpu_pdl.py"
        "tests/test_jax.py tests/test_torch.py tests/test_gpu_operand_copies.py tests/test_gpu_tune.py tests/test_gpu_mixed_dtypes.py tests/test_gpu_streams_devices.py tests/test_gpu_startup.py"
        "tests/test_gpu_matmul.py")

# The test files split into GPU_TEST_JOBS groups, one line each: the named groups merged from
# the last down to fit, then every other test file.
test_groups() {
  local jobs=${GPU_TEST_JOBS:-5} named=() rest=() file i
  for ((i = 0; i < ${#groups[@]}; i++)); do named+=("${groups[i]}"); done
  while [ "${#named[@]}" -ge "$jobs" ] && [ "${#named[@]}" -gt 1 ]; do
    named[${#named[@]}-2]="${named[${#named[@]}-2]} ${named[${#named[@]}-1]}"
    unset 'named[${#named[@]}-1]'
  done
  for file in tests/test_*.py; do
    [[ " ${groups[*]} " == *" $file "* ]] || rest+=("$file")
  done
  if [ "$jobs" -le 1 ]; then echo "${named[*]} ${rest[*]}"; return; fi
  printf '%s\n' "${named[@]}" "${rest[*]}"
}

for part in ${GPU_CHECK_PARTS:-tests sanitize bench}; do
  case "$part" in
  tests)
    echo "== GPU tests"
    # A dependency missing from this environment would fail every test one by one (the 59th
    # session's device bundle lacked platformdirs, which the disk cache imports): first check
    # that the package starts and reads its cache here, as the tests will.
    if ! python -m cutematmul info > "$out/cache-info.json" 2> "$out/preflight.log"; then
      echo "gpu_check: 'python -m cutematmul info' failed, so every GPU test would; no test run:" >&2
      tail -5 "$out/preflight.log" >&2
      exit 2
    fi
    select=(-m gpu)
    [ "${FULL:-0}" = 1 ] || select+=(-k "not sizes_past_int32")
    pids=()
    logs=()
    n=0
    while read -r files; do
      n=$((n + 1))
      log="$out/tests-$n.log"
      # shellcheck disable=SC2086  # the file list splits on spaces
      # The slowest tests of each group are listed in its log (to rebalance the groups: on an
      # H100 in the 62nd session they took 398-516 s, close to a 10-minute call's limit).
      timeout "${GPU_TEST_LIMIT:-540}" python -m pytest -q -p no:cacheprovider \
          --durations=12 --durations-min=5 "${select[@]}" $files > "$log" 2>&1 < /dev/null &
      pids+=($!)
      logs+=("$log")
    done < <(test_groups)
    for i in "${!pids[@]}"; do
      wait "${pids[i]}"
      rc=$?
      if [ "$rc" -eq 124 ]; then
        echo "tests group $((i + 1)): cut at ${GPU_TEST_LIMIT:-540} s (${logs[i]})"
        status=1
      elif [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then  # 5: no test collected (no GPU test left)
        status=1
      fi
      echo "tests group $((i + 1)): exit $rc: $(tail -1 "${logs[i]}")"
    done
    ;;
  sanitize)
    echo "== sanitizer"
    bash tools/sanitize.sh "$out/sanitize" || status=1
    ;;
  bench)
    echo "== benchmark"
    python -m cutematmul.bench --no-progress --out "$out/bench" 2>&1 | grep -E "x cuBLAS|cutematmul|WRONG" | tail -14
    python -m cutematmul.bench host 2>&1 | grep -v "^\[bench\]"
    python -m cutematmul.bench startup 2>&1 | grep -E "^cold|^warm|targets"
    ;;
  *)
    echo "gpu_check: GPU_CHECK_PARTS: unknown part '$part' (tests, sanitize, bench)" >&2
    exit 2
    ;;
  esac
done
exit $status
