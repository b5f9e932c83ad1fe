"""Time a set of products under two revisions, alternating, beside cuBLAS: a schedule's A/B.

    python tools/ab_compare.py prepare BASE HEAD --cases FILE --out DIR [--jobs N]  # no GPU
                               [--no-build]
    python tools/ab_compare.py build DIR [--jobs N]                                 # no GPU
    python tools/ab_compare.py run DIR [--rounds 3]                                 # GPU
    python tools/ab_compare.py report DIR

``prepare`` exports each revision's ``cutematmul`` into ``DIR/base`` and ``DIR/head``
(``pick_changes.export``), copies the products (``--cases``: ``tools/shape_classes.py``'s
format, e.g. what ``tools/pick_changes.py`` printed) to ``DIR/cases`` and builds each tree's
kernels for them into ``DIR/<side>/cache`` (sm_90a, 132 SMs), so the GPU run compiles nothing.
With ``--no-build`` it leaves the kernels to ``build``, which builds them from the trees alone
(no git): on the GPU machine's many cores, so only the trees' sources travel there, not their
kernel caches (a device call carries at most 64 MiB).
``run`` times the products with ``tools/shape_classes.py --cases`` (L2-cold, cuBLAS on the same
arrays, each result checked against float64 in a NaN-poisoned output), base then head, for
``--rounds`` rounds (default 3) in one call, each tree in a process of its own with its own
kernel cache (kernels of one name may differ between the trees), writing
``DIR/logs/<side>-<round>.log``; then the report.  ``report`` reads the logs: per product the
median times over the rounds (one disturbed round cannot carry a product's figure, as it could
in the 60th session's mean of two), cuBLAS's, the schedules, the gain (base time / head time)
and each round's own gain; then the geometric mean gain, each round's, and each round's
geometric mean x cuBLAS of either side with its least ratio.  DIR should sit in an ignored
folder of the checkout (``results/`` is) and travel to the GPU machine with it (the device
call's ``carry``).  Imports: ``pick_changes`` and ``shape_classes`` (beside it); nothing of
``cutematmul`` itself (each tree's runs in its own process).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path
from statistics import geometric_mean, median

from pick_changes import export, shape_classes
from shape_classes import parse_result

SIDES = ("base", "head")
#: A product's line of ``report`` (what ``tools/replay_picks.py`` reads back): class, dtype,
#: precision, layout, batch, M, N, K, base / head / cuBLAS us, and base and head schedules.
PRODUCT_LINE = re.compile(r"\S+ (\S+) (\S+) (nn|nt|tn|tt) (\d+)x(\d+)x(\d+)x(\d+): base "
                          r"([0-9.]+) us, head ([0-9.]+) us, cuBLAS ([0-9.]+) us, .*\| (.*) -> "
                          r"(.*)$")


def prepare(base: str, head: str, cases: Path, out: Path, jobs: int | None,
            kernels: bool = True) -> None:
    """The two trees, the products and, with ``kernels``, each tree's kernels under ``out``
    (no GPU)."""
    out.mkdir(parents=True, exist_ok=False)
    shutil.copyfile(cases, out / "cases")
    for side, revision in zip(SIDES, (base, head)):
        tree = export(revision, out / side)
        (tree / "revision").write_text(revision + "\n")
    if kernels:
        build(out, jobs)


def build(out: Path, jobs: int | None) -> None:
    """Each prepared tree's kernels for the products, into its own cache (no GPU, no git)."""
    for side in SIDES:
        tree = out / side
        built = shape_classes(tree, ["--cases", str(out / "cases"), "--precompile",
                                     str(tree / "cache"), *(["--jobs", str(jobs)] if jobs else [])],
                              CUTE_DSL_ARCH="sm_90a", CUDA_VISIBLE_DEVICES="")
        revision = (tree / "revision").read_text().strip()
        print(f"{side} ({revision}): {built.stdout.strip().splitlines()[-1]}", flush=True)


def run(out: Path, rounds: int) -> None:
    """Each round times the products under base, then head (GPU); then the report."""
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    for turn in range(1, rounds + 1):
        for side in SIDES:
            tree = out / side
            # Rounds and medians over them replace the survey's re-timing (``--recheck``).
            timed = shape_classes(tree, ["--cases", str(out / "cases"), "--recheck", "0"],
                                  CUTEMATMUL_CACHE_DIR=str(tree / "cache"))
            (logs / f"{side}-{turn}.log").write_text(timed.stdout)
            print(f"round {turn}, {side}: {timed.stdout.strip().splitlines()[-1]}", flush=True)
    print(report(out))


def _results(log: Path) -> dict:
    """case -> (cuBLAS us, cutematmul us, relative error, schedule) of one log."""
    parsed = (parse_result(line) for line in log.read_text().splitlines())
    return {found[0]: found[1:] for found in parsed if found is not None}


def report(out: Path) -> str:
    """The A/B table and its summary from ``out``'s logs."""
    runs = {side: [_results(log) for log in sorted((out / "logs").glob(f"{side}-*.log"))]
            for side in SIDES}
    if not runs["base"] or len(runs["base"]) != len(runs["head"]):
        raise RuntimeError(f"{out / 'logs'}: expected as many base-N.log as head-N.log, found "
                           f"{len(runs['base'])} and {len(runs['head'])}")
    cases = [case for case in runs["base"][0] if all(case in r for s in SIDES for r in runs[s])]
    # Each product's gain in each round (base then head ran back to back).
    round_gains = {case: [base[case][1] / head[case][1]
                          for base, head in zip(runs["base"], runs["head"])] for case in cases}
    lines, gains = [], []
    for case in cases:
        typical = {side: median(r[case][1] for r in runs[side]) for side in SIDES}
        cublas = median(r[case][0] for s in SIDES for r in runs[s])
        gain = typical["base"] / typical["head"]
        gains.append(gain)
        per_round = "/".join(f"{g:.2f}" for g in round_gains[case])
        cls, dtype, precision, layout, m, n, k, batch = case
        lines.append(f"{cls} {dtype} {precision} {layout} {batch}x{m}x{n}x{k}: base "
                     f"{typical['base']:.1f} us, head {typical['head']:.1f} us, cuBLAS "
                     f"{cublas:.1f} us, gain {gain:.3f} (rounds {per_round}) | "
                     f"{runs['base'][0][case][3]} -> {runs['head'][0][case][3]}")
    if not cases:
        raise RuntimeError(f"{out / 'logs'}: no product timed under both sides")
    lines.append(f"gain (base / head time) geometric mean {geometric_mean(gains):.3f}x over "
                 f"{len(cases)} products, least {min(gains):.3f}x, most {max(gains):.3f}x")
    lines.append("gain per round: " + ", ".join(
        f"{geometric_mean(gains_of_round):.3f}x" for gains_of_round in zip(*round_gains.values())))
    for side in SIDES:
        for turn, timed in enumerate(runs[side], 1):
            ratios = [timed[case][0] / timed[case][1] for case in cases]
            lines.append(f"{side} round {turn}: geometric mean {geometric_mean(ratios):.3f}x "
                         f"cuBLAS, least {min(ratios):.2f}x")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    ready = verbs.add_parser("prepare", help="export the trees and build their kernels (no GPU)")
    ready.add_argument("base", help="a git revision")
    ready.add_argument("head", help="a git revision")
    ready.add_argument("--cases", type=Path, required=True, help="the products (FILE)")
    ready.add_argument("--out", type=Path, required=True, help="a new directory")
    ready.add_argument("--jobs", type=int, help="compile worker processes")
    ready.add_argument("--no-build", dest="kernels", action="store_false",
                       help="leave the kernels to 'build' (on the GPU machine's cores)")
    making = verbs.add_parser("build", help="build a prepared DIR's kernels (no GPU, no git)")
    making.add_argument("dir", type=Path)
    making.add_argument("--jobs", type=int, help="compile worker processes")
    timing = verbs.add_parser("run", help="time both trees, alternating (GPU), then report")
    timing.add_argument("dir", type=Path)
    timing.add_argument("--rounds", type=int, default=3)
    table = verbs.add_parser("report", help="the table from a run's logs")
    table.add_argument("dir", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "prepare":
        prepare(args.base, args.head, args.cases, args.out.resolve(), args.jobs, args.kernels)
    elif args.verb == "build":
        build(args.dir.resolve(), args.jobs)
    elif args.verb == "run":
        if args.rounds < 1:
            parser.error(f"--rounds: expected at least 1, got {args.rounds}")
        run(args.dir.resolve(), args.rounds)
    else:
        print(report(args.dir.resolve()))


if __name__ == "__main__":
    sys.exit(main())
