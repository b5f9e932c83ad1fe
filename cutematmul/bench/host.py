"""Host overhead: host time per call of a small product (``python -m cutematmul.bench host``).

For each backend: ``warmup`` calls and a synchronize, then ``perf_counter`` over ``calls``
back-to-back calls of a ``size`` x ``size`` x ``size`` product into ``out`` (the GPU work is
far shorter than the host's, so this is the cost of the Python call and the launch), then one
synchronize.
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


def measure_host(backend: Backend, dtype: str, size: int = 64, calls: int = 2000,
                 warmup: int = 200) -> HostResult:
    result = HostResult(backend.label, dtype, size)
    ok, why = backend.supports(dtype)
    if not ok:
        result.note = f"skipped: {why}"
        return result
    try:
        a, b, out = backend.make_inputs(Shape(size, size, size), dtype)
        matmul = backend.matmul
        seconds = host_time_per_call(lambda: matmul(a, b, out), calls, backend.synchronize, warmup)
        result.us_per_call = seconds * 1e6
    except Exception as exc:
        result.note = f"ERROR: {describe_error(exc)}"
    return result


HEADERS = ("backend", "dtype", "size", "host us/call", "note")


def rows(results: list[HostResult]) -> list[list[str]]:
    return [[r.backend, r.dtype, f"{r.size}^3",
             "" if r.us_per_call is None else f"{r.us_per_call:.1f}", r.note] for r in results]
