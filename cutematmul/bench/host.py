"""Host overhead: host time per call of a small product (``python -m cutematmul.bench host``).

For each backend and shape: ``warmup`` calls and a synchronize, then ``perf_counter`` over
``calls`` back-to-back calls of the product into ``out`` (by default 64 x 64 x 64, whose GPU
work is far shorter than the host's, so this is the cost of the Python call and the launch),
then one synchronize.  Other shapes take other routes (e.g. ``595x851x545`` in 16 bits: rows of
no whole 16-byte vectors, copied by the operand prep before the GEMM, two launches); keep their
GPU time below the host's, or the figure is the GPU's.  That is repeated ``repeats`` times, the
backends taking turns in each round (so a slow spell of the machine hits them alike), and the
best round is reported, as ``timeit`` does: host time only grows with interference.

Imports: ``base``, ``shapes``, ``timing`` of this package.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from .base import Backend, describe_error
from .shapes import Shape
from .timing import host_time_per_call


#: The product timed by default.
DEFAULT_SHAPE = Shape(64, 64, 64)


@dataclass
class HostResult:
    backend: str
    dtype: str
    shape: Shape
    us_per_call: float | None = None
    note: str = ""


def measure_hosts(backends: list[Backend], dtypes: list[str],
                  shapes: list[Shape] = (DEFAULT_SHAPE,), calls: int = 2000, warmup: int = 200,
                  repeats: int = 5) -> list[HostResult]:
    """Every backend for every dtype and shape (shape-major, then dtype): the best of
    ``repeats`` rounds."""
    runs = []  # (result, call, synchronize) of every triple that can run
    results = []
    for shape, dtype in itertools.product(shapes, dtypes):
        for backend in backends:
            result = HostResult(backend.label, dtype, shape)
            results.append(result)
            ok, why = backend.supports(dtype)
            if not ok:
                result.note = f"skipped: {why}"
                continue
            try:
                a, b, out = backend.make_inputs(shape, dtype)
            except Exception as exc:
                result.note = f"ERROR: {describe_error(exc)}"
                continue
            matmul = backend.matmul
            runs.append((result, lambda m=matmul, a=a, b=b, out=out: m(a, b, out),
                         backend.synchronize))
    for _ in range(repeats):
        for result, call, synchronize in runs:
            if result.note:
                continue
            try:
                seconds = host_time_per_call(call, calls, synchronize, warmup) * 1e6
            except Exception as exc:
                result.note, result.us_per_call = f"ERROR: {describe_error(exc)}", None
                continue
            if result.us_per_call is None or seconds < result.us_per_call:
                result.us_per_call = seconds
    return results


HEADERS = ("backend", "dtype", "shape", "host us/call", "note")


def rows(results: list[HostResult]) -> list[list[str]]:
    return [[r.backend, r.dtype, r.shape.label,
             "" if r.us_per_call is None else f"{r.us_per_call:.1f}", r.note] for r in results]
