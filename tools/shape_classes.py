"""Random shapes per shape class, the dispatcher's own picks beside cuBLAS (GPU).

    python tools/shape_classes.py [--seed 20261203] [--only mid,large] [--list [--plans]]
    python tools/shape_classes.py [--seed ...] [--only ...] --precompile DIR [--jobs N]
    python tools/shape_classes.py --cases FILE [--precompile DIR] [--recheck 0.9]

The classes and their seeded draws are ``cutematmul.classes``' (each class draws its sizes
log-uniformly; another ``--seed`` draws an out-of-sample set of the same classes, ``--seed
LO-HI`` the draws of seeds LO to HI - 1 one after another).  ``--cases`` reads the products
from a file instead, one per line in ``--list``'s format (``class dtype precision layout m n k
batch``; blank lines and ``#`` comments skipped): a chosen set, e.g. the products a schedule
change moves (``tools/pick_changes.py``), timed again on another build.  ``--list --plans``
adds each product's planned schedule as a comment (no GPU: the wave model's pick for an
sm_90a GPU of 132 SMs, ``planned``).

Each product is timed by ``tools/sweep_schedule.py``'s ``time_us`` (CUDA events over 5 bursts
of 20 products behind a spin, the median), on PyTorch arrays rotated over sets that together
exceed twice the L2 (the benchmark's rule, ``bench.shapes.rotation_sets``; before the 41st
session at most 8 sets of 256 MB, so a product of a few MB ran partly L2-warm) so that every
product reads its operands from device memory (L2-cold), and ``torch.matmul`` on the same
arrays is the reference: cuBLAS SGEMM for "highest" and "high" (TF32 off), cuBLAS TF32 for
"tf32".  Every result is checked against a float64 product in an output poisoned with NaN
first.  Prints one line per product (time, TFLOP/s, ratio, the planned schedule, the relative
error) and per class the geometric mean and the least ratio with its product.  A product
timed below ``--recheck`` x cuBLAS (default 0.9) is timed twice more: its line carries each
side's median of the three timings, and a line after it all three.
``docs/performance.md`` quotes its output.  ``--precompile DIR`` needs no GPU: it builds the
kernels the selected products' plans name for an sm_90a GPU of 132 SMs (``aot.plan_keys``)
into DIR, so a GPU run with ``CUTEMATMUL_CACHE_DIR=DIR`` spends its time timing, not
compiling.  Imports: ``cutematmul``, ``torch`` (to time), ``sweep_schedule`` (beside it).
"""

from __future__ import annotations

import argparse
import itertools
import re
from statistics import geometric_mean, median

from cutematmul.classes import SEED, cases

#: ``aot.LAYOUTS`` names of the layouts: the majors of A and B.
_MAJORS = {"nn": "kn", "tn": "mn", "nt": "kk", "tt": "mk"}


def kernel_keys(selected: list[tuple], arch: str = "sm_90a") -> list:
    """The kernels the planner names for ``selected`` products on ``arch`` (no GPU): what calls
    on contiguous operands launch (``aot``'s "contiguous"), operand copies included."""
    from cutematmul import aot

    keys = []
    for cls, dtype, precision, layout, m, n, k, batch in selected:
        keys += aot.plan_keys(aot.Selection(
            archs=(arch,), dtypes=(dtype,), precisions=(precision,), layouts=(_MAJORS[layout],),
            shapes=((m, n, k, batch),)))
    return list(dict.fromkeys(keys))


def _schedule(work) -> str:
    """A planned launch's kernel (its configuration's name), K-splits, orientation and the
    operands it copies first."""
    if work is None:
        return "staged"
    splits = work.calls[0][1][4] if work.calls else 1
    copies = " and ".join(name for name, copy in zip("AB", work.prep or ()) if copy)
    return (f"{work.key.config.name} s{splits}{' transposed' if work.transposed else ''}"
            f"{f', {copies} copied' if copies else ''}")


def planned(case: tuple, capability: tuple[int, int] = (9, 0), num_sms: int = 132) -> str:
    """What a call on contiguous operands of ``case`` launches on a GPU of ``capability`` with
    ``num_sms`` SMs, named as ``run`` names it (no GPU: the wave model's pick, never a tuned
    schedule; ``sweep_schedule.contiguous_launch``)."""
    from cutematmul.dispatch import math_type
    from cutematmul.launch import Launch
    from sweep_schedule import contiguous_launch

    _, dtype, precision, layout, m, n, k, batch = case
    plan = contiguous_launch(math_type(dtype, precision, capability), m, n, k, layout,
                             capability, num_sms, batch)
    return _schedule(plan if isinstance(plan, Launch) else None)


def _measure(torch, case: tuple) -> tuple[float, float, float, str]:
    """(cuBLAS us, cutematmul us, relative error, schedule) of one product."""
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for
    from sweep_schedule import time_us  # tools/: the benchmark's burst timing

    from cutematmul.bench.shapes import rotation_sets

    _, dtype, precision, layout, m, n, k, batch = case
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    itemsize = 4 if dtype == "float32" else 2
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = rotation_sets((m * k + k * n) * itemsize * batch, l2)
    lead = (batch,) if batch > 1 else ()

    def operand(rows, cols, transposed):
        shape = (*lead, cols, rows) if transposed else (*lead, rows, cols)
        x = torch.randn(*shape, device="cuda").to(dt)
        return x.transpose(-1, -2) if transposed else x

    a = [operand(m, k, layout[0] == "t") for _ in range(sets)]
    b = [operand(k, n, layout[1] == "t") for _ in range(sets)]
    out = torch.empty(*lead, m, n, device="cuda", dtype=dt)
    work = launch.planned_launch(adapter_for(a[0]), a[0], b[0], precision=precision)

    def rotating(product):  # each call reads the next set of operands: L2-cold
        turn = itertools.cycle(range(sets))
        return lambda: product(next(turn))

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    cublas = time_us(rotating(lambda i: torch.matmul(a[i], b[i], out=out)))
    torch.backends.cuda.matmul.allow_tf32 = False
    ours = time_us(rotating(lambda i: cutematmul.matmul(a[i], b[i], out=out,
                                                        precision=precision)))
    out.fill_(float("nan"))
    cutematmul.matmul(a[0], b[0], out=out, precision=precision)
    ref = a[0].double() @ b[0].double()
    error = ((out.double() - ref).norm() / ref.norm()).item()
    return cublas, ours, error, _schedule(work)


def result_line(case: tuple, cublas: float, ours: float, error: float, schedule: str) -> str:
    """One timed product as ``run`` prints it (``parse_result`` reads it back)."""
    cls, dtype, precision, layout, m, n, k, batch = case
    return (f"{cls} {dtype} {precision} {layout} {batch}x{m}x{n}x{k}: cuBLAS {cublas:.1f} us, "
            f"cutematmul {ours:.1f} us, {2 * m * n * k * batch / ours / 1e6:.0f} TFLOP/s, "
            f"{cublas / ours:.2f}x | {schedule} | rel err {error:.1e}")


_RESULT = re.compile(r"(\S+) (\S+) (\S+) (\S+) (\d+)x(\d+)x(\d+)x(\d+): cuBLAS ([\d.]+) us, "
                     r"cutematmul ([\d.]+) us, .*\| (.*) \| rel err (\S+)$")


def parse_result(line: str) -> tuple[tuple, float, float, float, str] | None:
    """(case, cuBLAS us, cutematmul us, relative error, schedule) of a ``result_line``, or None
    for any other line."""
    found = _RESULT.match(line.strip())
    if found is None:
        return None
    cls, dtype, precision, layout, batch, m, n, k, cublas, ours, schedule, error = found.groups()
    case = (cls, dtype, precision, layout, int(m), int(n), int(k), int(batch))
    return case, float(cublas), float(ours), float(error), schedule


#: Products timed below this ratio x cuBLAS are timed twice more, and each side reported at the
#: median of its three timings (``--recheck``).  On a lent H100 single timings ran 3-6x slow a
#: few times an hour (65th session: one survey product at 0.29x whose schedule ran its
#: neighbour at 1.17x, one product in each of two A/B rounds), which one timing cannot tell
#: from a slow schedule.
RECHECK_BELOW = 0.9


def run(selected: list[tuple], recheck: float = RECHECK_BELOW, measure=None) -> None:
    """Time each product (``measure(case)``: (cuBLAS us, ours us, relative error, schedule),
    default ``_measure`` on the GPU) and print its line, then each class's; a product below
    ``recheck`` x cuBLAS is timed twice more, its line carries each side's median of the three
    and a line after it all three timings."""
    if measure is None:
        import torch

        def measure(case):
            try:
                return _measure(torch, case)
            finally:
                torch.cuda.empty_cache()

    ratios: dict[str, list[tuple[float, tuple]]] = {}
    for case in selected:
        cublas, ours, error, schedule = measure(case)
        timings = None
        if cublas / ours < recheck:
            timings = [(cublas, ours)] + [measure(case)[:2] for _ in range(2)]
            cublas, ours = (median(side) for side in zip(*timings))
        ratios.setdefault(case[0], []).append((cublas / ours, case))
        print(result_line(case, cublas, ours, error, schedule), flush=True)
        if timings is not None:
            print("  re-timed below {:.2f}x: cuBLAS {} us, cutematmul {} us (medians above)".format(
                recheck, " / ".join(f"{c:.1f}" for c, _ in timings),
                " / ".join(f"{o:.1f}" for _, o in timings)), flush=True)
    for cls, timed in ratios.items():
        print(class_line(cls, timed))


def class_line(cls: str, timed: list[tuple[float, tuple]]) -> str:
    """A class's summary from its (ratio x cuBLAS, case) pairs: the geometric mean, and the
    least ratio with the product that ran it, so a survey's weakest products need no search."""
    mean = geometric_mean(ratio for ratio, _ in timed)
    least, case = min(timed)
    _, dtype, _, layout, m, n, k, batch = case
    return (f"class {cls}: geometric mean {mean:.3f}x cuBLAS, least {least:.2f}x ({dtype} "
            f"{layout} {batch}x{m}x{n}x{k}), {len(timed)} products")


def read_cases(path: str) -> list[tuple]:
    """The products listed in ``path`` (``--list``'s format), in its order."""
    selected = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 8:
                raise ValueError(f"{path}:{number}: expected 'class dtype precision layout m n "
                                 f"k batch' (8 words), got {len(words)}: {line.strip()!r}")
            selected.append((*words[:4], *map(int, words[4:])))
    return selected


def seeds(text: str) -> range:
    """``--seed``'s value: one seed, or ``LO-HI`` (LO to HI - 1)."""
    low, dash, high = text.partition("-")
    try:
        first, stop = int(low), int(high) if dash else int(low) + 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a seed or LO-HI, got {text!r}") from None
    if stop <= first:
        raise argparse.ArgumentTypeError(f"LO-HI needs LO < HI, got {text!r}")
    return range(first, stop)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=seeds, default=range(SEED, SEED + 1),
                        help="a seed, or LO-HI: the draws of seeds LO to HI - 1")
    parser.add_argument("--only", default="", help="comma-separated classes (default: all)")
    parser.add_argument("--cases", metavar="FILE",
                        help="the products listed in FILE (--list's format), not a seed's draw")
    parser.add_argument("--list", action="store_true", help="print the products, run nothing")
    parser.add_argument("--plans", action="store_true",
                        help="with --list, each product's planned schedule as a comment (no GPU)")
    parser.add_argument("--precompile", metavar="DIR",
                        help="build the kernels of the selected products into DIR (no GPU)")
    parser.add_argument("--jobs", type=int, help="worker processes of --precompile")
    parser.add_argument("--recheck", type=float, default=RECHECK_BELOW, metavar="RATIO",
                        help="time products below RATIO x cuBLAS twice more and report each "
                             f"side's median of three (default {RECHECK_BELOW}; 0: never)")
    args = parser.parse_args(argv)
    only = {c for c in args.only.split(",") if c}
    drawn = (read_cases(args.cases) if args.cases
             else [case for seed in args.seed for case in cases(seed)])
    selected = [c for c in drawn if not only or c[0] in only]
    if args.list:
        for case in selected:
            print(*case, *(("#", planned(case)) if args.plans else ()))
        return
    if args.precompile:
        from cutematmul import aot

        report = aot.build_keys(kernel_keys(selected), jobs=args.jobs, cache_dir=args.precompile)
        print(f"{report.keys} kernels: {report.built} built, {report.present} already there, "
              f"{len(report.failed)} failed")
        return
    run(selected, args.recheck)


if __name__ == "__main__":
    main()
