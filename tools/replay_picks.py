"""Replay timed schedules against the wave model: how good its picks are on what was measured.

    python tools/replay_picks.py LOG [LOG ...] [--set NAME=VALUE ...] [--all]

Each LOG is the output of ``tools/sweep_schedule.py --tuner`` or ``--widths`` (one line per
product: the times of named schedules, ``config.name/sN``) or a ``tools/ab_compare.py``
report (per product the base and head schedules' times).  For every product the wave model
of this checkout picks a schedule (``sweep_schedule.contiguous_launch``: contiguous operands
in the logged layout, an sm_90a GPU of 132 SMs, no GPU needed); where that schedule was timed,
its time over the fastest timed one is the pick's regret.  Printed: each product whose pick is
more than 1% behind (every product with ``--all``), then the geometric mean regret, the
geometric mean of cuBLAS's time over the pick's, and the products whose pick was not timed
(a new schedule: time it before trusting the model there).

``--set`` changes a constant before anything is planned, so one run prices one variant of
the model: ``configs.sm90._TF32_L2_BANDWIDTH=5e12`` or, for an entry of a dict,
``configs.sm90._WIDE_UNSPLIT_EFFICIENCY[(128, 160)]=0.93`` (module paths under
``cutematmul``; Python literals).  A constant computed from another at import keeps its
value: set it too.  This is how a price is fitted to sweeps and A/B runs before the held-out
A/B (``docs/performance.md``, sixty-second session).  Imports: ``cutematmul``,
``sweep_schedule`` and ``ab_compare`` (beside it).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import re
import sys
from pathlib import Path
from statistics import geometric_mean
from typing import NamedTuple

from ab_compare import PRODUCT_LINE
from sweep_schedule import contiguous_launch, schedule_label

#: Regret above which a product is printed without ``--all``.
SHOWN = 1.01

_SWEEP = re.compile(r"(\S+) (nn|nt|tn|tt) (\S+?)(?: cold)?: cuBLAS ([0-9.]+)us "
                    r"\| pick .*?\| (.*)$")
_SCHEDULE = re.compile(r"(\S+) s(\d+)( transposed)?")


class Timed(NamedTuple):
    """One product and what was measured: its math type (``dispatch.math_type``), layout,
    (batch, M, N, K), cuBLAS's time and each named schedule's (us)."""

    math: str
    layout: str
    shape: tuple[int, int, int, int]
    cublas: float
    times: dict


def _scheduled(text: str) -> str:
    """``shape_classes``'s schedule (``name sN[ transposed][, X copied]``) as the sweep's
    label (``sweep_schedule.schedule_label``)."""
    found = _SCHEDULE.match(text.strip())
    if found is None:
        raise ValueError(f"not a schedule: {text!r}")
    return schedule_label(found[1], int(found[2]), bool(found[3]))


def parse(lines) -> list[Timed]:
    """The products of sweep lines and A/B report lines; other lines are skipped."""
    from cutematmul.bench.shapes import parse_shape
    from cutematmul.dispatch import math_type

    found = []
    for line in lines:
        line = line.strip()
        sweep, ab = _SWEEP.match(line), PRODUCT_LINE.match(line)
        if sweep is not None:
            math_name, layout, shape_text, cublas, rest = sweep.groups()
            shape = parse_shape(shape_text)
            times = {}
            for item in rest.split(" | "):
                name, _, value = item.rpartition(" ")
                times[name] = float(value)
            found.append(Timed(math_name, layout, (shape.count, shape.m, shape.n, shape.k),
                               float(cublas), times))
        elif ab is not None:
            dtype, precision, layout, *dims = ab.groups()[:7]
            base, head, cublas = map(float, ab.groups()[7:10])
            base_label, head_label = _scheduled(ab[11]), _scheduled(ab[12])
            times = {base_label: base}
            times[head_label] = min(head, times.get(head_label, head))  # one name: the faster
            found.append(Timed(math_type(dtype, precision, (9, 0)), layout,
                               tuple(map(int, dims)), cublas, times))
    return found


def set_constant(assignment: str) -> None:
    """Apply one ``--set`` (``MODULE.NAME=VALUE`` or ``MODULE.NAME[KEY]=VALUE``)."""
    target, _, value_text = assignment.rpartition("=")
    found = re.fullmatch(r"([\w.]+)\.(\w+)(?:\[(.+)\])?", target.strip())
    if found is None or not value_text:
        raise ValueError(f"--set: expected MODULE.NAME=VALUE or MODULE.NAME[KEY]=VALUE, got "
                         f"{assignment!r}")
    path, name, key = found.groups()
    module = importlib.import_module(path if path.startswith("cutematmul") else
                                     f"cutematmul.{path}")
    if not hasattr(module, name):
        raise ValueError(f"--set: {module.__name__} has no {name}")
    value = ast.literal_eval(value_text.strip())
    if key is None:
        setattr(module, name, value)
    else:
        getattr(module, name)[ast.literal_eval(key)] = value


def pick(timed: Timed) -> str:
    """The wave model's schedule for the product, as the sweep labels it."""
    batch, m, n, k = timed.shape
    work = contiguous_launch(timed.math, m, n, k, timed.layout, batch=batch)
    if not hasattr(work, "key"):
        return type(work).__name__
    return schedule_label(work.key.config.name, work.splits, work.transposed)


def replay(products: list[Timed], every: bool = False) -> list[str]:
    """The report's lines (see the module docstring)."""
    lines, regrets, speeds, untimed = [], [], [], []
    for timed in products:
        batch, m, n, k = timed.shape
        name = f"{timed.math} {timed.layout} {batch}x{m}x{n}x{k}"
        chosen = pick(timed)
        if chosen not in timed.times:
            untimed.append(f"{name} ({chosen})")
            continue
        fastest = min(timed.times, key=timed.times.get)
        regret = timed.times[chosen] / timed.times[fastest]
        regrets.append(regret)
        speeds.append(timed.cublas / timed.times[chosen])
        if every or regret > SHOWN:
            lines.append(f"{name}: pick {chosen} {timed.times[chosen]:.1f} us, fastest {fastest} "
                         f"{timed.times[fastest]:.1f} us (cuBLAS {timed.cublas:.1f}): "
                         f"{regret:.3f}")
    if regrets:
        lines.append(f"pick over fastest timed: geometric mean {geometric_mean(regrets):.4f} over "
                     f"{len(regrets)} products, most {max(regrets):.3f}; pick x cuBLAS "
                     f"{geometric_mean(speeds):.3f}")
    lines.append(f"picks not timed: {len(untimed)}" + "".join(f"\n  {u}" for u in untimed))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path, help="sweep outputs and A/B reports")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        metavar="NAME=VALUE", help="a constant's value (repeatable)")
    parser.add_argument("--all", action="store_true", help="print every product")
    args = parser.parse_args(argv)
    try:
        for assignment in args.sets:
            set_constant(assignment)
    except (ValueError, SyntaxError, ImportError) as error:
        parser.error(str(error))
    products = [t for log in args.logs for t in parse(log.read_text().splitlines())]
    if not products:
        parser.error("no sweep or A/B lines in " + ", ".join(map(str, args.logs)))
    print("\n".join(replay(products, args.all)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
