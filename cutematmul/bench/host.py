"""Host overhead: host time per call of a small product (``python -m cutematmul.bench host``).

For each backend: ``warmup`` calls and a synchronize, then ``perf_counter`` over ``calls``
back-to-back calls of a ``size`` x ``size`` x ``size`` product into ``out`` (the GPU work is
far shorter than the host's, so this is the cost of the Python call and the launch), then one
synchronize.  That is repeated ``repeats`` times, the backends taking turns in each round (so a
slow spell of the machine hits them alike), and the best round is reported, as ``timeit`` does:
host time only grows with interference.

Imports: ``base``, ``shapes``, ``timing`` of this package.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Backend, describe_error
from .shapes import Shape
from .timing import host_time_per_call


@dataclass
class HostResult:
    backend: str
    dtype: str
    size: int
    us_per_call: float | None = None
    note: str = ""


def measure_hosts(backends: list[Backend], dtypes: list[str], size: int = 64, calls: int = 2000,
                  warmup: int = 200, repeats: int = 5) -> list[HostResult]:
    """Every backend for every dtype (dtype-major order): the best of ``repeats`` rounds."""
    runs = []  # (result, call, synchronize) of every pair that can run
    results = []
    for dtype in dtypes:
        for backend in backends:
            result = HostResult(backend.label, dtype, size)
            results.append(result)
            ok, why = backend.supports(dtype)
            if not ok:
                result.note = f"skipped: {why}"
                continue
            try:
                a, b, out = backend.make_inputs(Shape(size, size, size), dtype)
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


HEADERS = ("backend", "dtype", "size", "host us/call", "note")


def rows(results: list[HostResult]) -> list[list[str]]:
    return [[r.backend, r.dtype, f"{r.size}^3",
             "" if r.us_per_call is None else f"{r.us_per_call:.1f}", r.note] for r in results]
