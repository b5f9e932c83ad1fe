"""The arithmetic of a benchmark point: medians, per-round ratios, spread, TFLOP/s, round order.

Pure Python; every function takes per-round times (seconds per product), where ``None`` marks a
round in which that backend did not run.

Imports: nothing of ours (a leaf).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def median(values) -> float | None:
    """Median of the values that are not None; None when there are none."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def spread(values) -> float | None:
    """(max - min) / median over the values that are not None: the run's own noise."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    mid = statistics.median(present)
    return (max(present) - min(present)) / mid if mid else None


def ratio_to_reference(reference: Sequence[float | None],
                       times: Sequence[float | None]) -> float | None:
    """Median over rounds of reference_time / time (throughput relative to the reference;
    above 1 is faster), using only the rounds in which both ran."""
    return ratio_to_fastest([reference], times)


def ratio_to_fastest(references: Sequence[Sequence[float | None]],
                     times: Sequence[float | None]) -> float | None:
    """Median over rounds of (the fastest reference's time) / time, using only the rounds in
    which every reference and this one ran: throughput relative to the best of them."""
    ratios = []
    for i, t in enumerate(times):
        ref = [r[i] if i < len(r) else None for r in references]
        if t is not None and t > 0 and ref and all(x is not None for x in ref):
            ratios.append(min(ref) / t)
    return statistics.median(ratios) if ratios else None


def tflops(flops: int, seconds: float | None) -> float | None:
    if not seconds or seconds <= 0:
        return None
    return flops / seconds / 1e12


def round_order(items: Sequence, round_index: int) -> list:
    """Round 0 runs ``items`` in order, round 1 reversed, and so on: A B | B A | A B ..., so a
    GPU that heats or cools during a point favours no backend."""
    return list(items) if round_index % 2 == 0 else list(reversed(items))
