#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, initcheck) over every kernel family.
#
#   bash tools/sanitize.sh [OUT_DIR]        # on a GPU machine with compute-sanitizer on PATH
#   SANITIZE_FAMILIES="sm90 simt" bash tools/sanitize.sh OUT_DIR   # only these families
#   SANITIZE_TOOLS=racecheck SANITIZE_FAMILIES=sm90 SANITIZE_GROUPS="swapped clusters" \
#       bash tools/sanitize.sh OUT_DIR      # a part of one tool's run (the rest of a cut run)
#
# Runs tools/sanitize_cases.py under each tool, one process per kernel family (a failure in one
# cannot hide another's), with PyTorch's caching allocator off so that an
# access past an allocation lands outside any live allocation and is reported.  Under the tools
# in SANITIZE_SPLIT (default: racecheck, whose sm90 run outlasted whole 10-minute device calls)
# it runs one process per group of the family (`sanitize_cases.py --families F --list`), so a
# run cut short keeps each finished group's line and the rest can run later (SANITIZE_GROUPS:
# only these groups, in every tool).  Kernels are
# compiled first in a plain run of the same selection (the disk cache keeps them), so the
# sanitized runs only launch.
# Prints one line per tool and family or group (also to OUT_DIR/summary.txt as each finishes): errors found, and the driver's own cuGetProcAddress probes (API
# return codes from cuda-bindings looking up entry points, not memory errors) counted apart.
# Exit status 1 when any tool reports a real error or the workload fails.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-sanitize-logs}"
mkdir -p "$out"
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
families="${SANITIZE_FAMILIES:-simt sm80 sm90 tf32 streamk cupy jax}"
# The jax family: XLA's buffers each in an allocation of their own, so an access past one is seen.
export XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false
split=" ${SANITIZE_SPLIT:-racecheck} "
groups_arg=()
[ -n "${SANITIZE_GROUPS:-}" ] && groups_arg=(--groups "${SANITIZE_GROUPS// /,}")
python tools/sanitize_cases.py --families "${families// /,}" "${groups_arg[@]}" > "$out/plain.log" 2>&1 \
    || { cat "$out/plain.log"; exit 1; }
: > "$out/summary.txt"  # one line per tool and family (or group), written as each finishes
status=0

# The runs of one tool over one family, one line each: "" (the whole family) or a list of its
# groups for --groups.
runs() {
  local tool=$1 family=$2 group wanted=()
  if [[ "$split" != *" $tool "* ]] && [ -z "${SANITIZE_GROUPS:-}" ]; then echo ""; return; fi
  while read -r group; do
    if [ -z "${SANITIZE_GROUPS:-}" ] || [[ " $SANITIZE_GROUPS " == *" $group "* ]]; then
      wanted+=("$group")
    fi
  done < <(python tools/sanitize_cases.py --families "$family" --list)
  [ "${#wanted[@]}" -eq 0 ] && return
  if [[ "$split" == *" $tool "* ]]; then printf '%s\n' "${wanted[@]}"
  else (IFS=,; echo "${wanted[*]}"); fi
}

for tool in ${SANITIZE_TOOLS:-memcheck racecheck initcheck}; do
  for family in $families; do
    # initcheck does not see TMA's stores (below), which write the partials XLA then reads.
    [ "$tool" = initcheck ] && [ "$family" = jax ] && continue
    while read -r part; do
      extra=()
      cases=(--families "$family")
      name="$family"
      if [ -n "$part" ]; then cases+=(--groups "$part"); name="$family:$part"; fi
      [ "$tool" = memcheck ] && extra=(--leak-check no)
      # initcheck does not track bytes written by TMA bulk stores (cp.async.bulk: see the
      # unpoisoned run below), so under sm90 (and tf32, the same kernel) it would flag the split-K
      # reduction's reads of the partial sums the sm90 kernel stored.  That reduction is
      # initchecked in the SIMT run, where the same kernel reads partials written by ordinary
      # stores.
      [ "$tool" = initcheck ] && [ "$family" != simt ] && [ "$family" != sm80 ] && [ "$family" != streamk ] && extra=(--kernel-name-exclude kns=splitk_reduce)
      [ "$tool" = racecheck ] && cases+=(--quick)
      log="$out/$tool-${name//[:,]/-}.log"
      compute-sanitizer --tool "$tool" "${extra[@]}" --print-limit 50 \
          python tools/sanitize_cases.py "${cases[@]}" > "$log" 2>&1 < /dev/null
      rc=$?
      summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1 | sed 's/^========= //')
      probes=$(grep -c "cuGetProcAddress" "$log")
      real=$(grep -E "^========= (Invalid|Program hit|Uninitialized|Race|Error|Cuda API error|Out-of-range|Misaligned|Address)" "$log" \
             | grep -v "cuGetProcAddress" | grep -vc "process didn't terminate")
      workload=$(grep -c "sanitize_cases:" "$log")
      echo "$tool $name: exit $rc; $summary; real errors: $real; cuGetProcAddress probes: $probes; workload finished: $workload" \
          | tee -a "$out/summary.txt"
      if [ "$real" -ne 0 ] || [ "$workload" -ne 1 ]; then status=1; fi
    done < <(runs "$tool" "$family")
  done
done
[[ " ${SANITIZE_TOOLS:-initcheck} " == *" initcheck "* && " $families " == *" sm90 "* ]] || exit $status
# Evidence for docs/reliability.md: with fresh (unpoisoned) outputs, initcheck reports reads of
# bytes that only the sm90 kernel's TMA (cp.async.bulk) stores wrote, although every such product
# is checked correct, i.e. those bytes were written.  Informational: it does not set the status.
log="$out/initcheck-sm90-unpoisoned.log"
compute-sanitizer --tool initcheck --print-limit 5 \
    python tools/sanitize_cases.py --families sm90 --quick --unpoisoned > "$log" 2>&1
echo "initcheck sm90 with unpoisoned outputs (TMA stores untracked, informational):" \
     "$(grep -E "ERROR SUMMARY" "$log" | tail -1 | sed 's/^========= //');" \
     "workload finished: $(grep -c "sanitize_cases:" "$log")"
exit $status
