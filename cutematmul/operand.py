"""What the core needs to know of an array, and the small interface each array library implements.

An adapter (``cutematmul.adapters.<library>``) turns the library's arrays into ``Operand``s, knows
the library's current stream, allocates outputs with the library's own allocator (so its memory pool
and stream bookkeeping are used) and copies between its arrays.  Nothing else.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from .plan import round_up

DTYPES = ("float32", "float16", "bfloat16")


def check_dtypes(a_dtype: str, b_dtype: str) -> None:
    """TypeError unless both dtype names are supported and equal (shared by every library)."""
    for name, d in (("a", a_dtype), ("b", b_dtype)):
        if d not in DTYPES:
            raise TypeError(f"matmul: {name} must have dtype float32, float16 or bfloat16; got {d}.")
    if a_dtype != b_dtype:
        raise TypeError(
            f"matmul: a and b must have the same dtype; got a {a_dtype} and b {b_dtype} "
            "(cast one of them first)."
        )


@dataclass(frozen=True)
class Operand:
    """One array as the core sees it: address, shape, strides in elements, dtype, device."""

    array: Any
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    itemsize: int
    device: int  # CUDA device ordinal; -1 for host memory

    def byte_span(self) -> tuple[int, int]:
        """[first, last) byte addresses the array can touch (for overlap checks)."""
        if any(s == 0 for s in self.shape):
            return self.ptr, self.ptr
        lo = hi = 0
        for size, stride in zip(self.shape, self.strides):
            reach = (size - 1) * stride
            lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
        return self.ptr + lo * self.itemsize, self.ptr + (hi + 1) * self.itemsize


class ArrayAdapter:
    """Base of the per-library adapters; see the module docstring."""

    name = "?"
    #: True when arrays live in host memory and are staged through the GPU.
    host = False

    def describe(self, x) -> Operand:
        raise NotImplementedError

    def current_stream(self, device: int) -> int:
        """Handle of the library's current stream on ``device``."""
        raise NotImplementedError

    def stream_handle(self, stream) -> int | None:
        """Handle of a stream object of this library, None if ``stream`` is not one."""
        return None

    def empty(self, shape: tuple[int, ...], like):
        """A new row-major array of ``like``'s dtype and device, on the library's current stream."""
        raise NotImplementedError

    def copy(self, dst, src) -> None:
        """dst[...] = src, on the library's current stream."""
        raise NotImplementedError

    def fill_zero(self, x) -> None:
        raise NotImplementedError

    def on_device(self, device: int):
        """Context that makes ``device`` current for the library (and the CUDA runtime)."""
        return contextlib.nullcontext()

    def on_stream(self, handle: int, device: int):
        """Context that makes the stream ``handle`` current for the library's own operations."""
        return contextlib.nullcontext()

    def padded_copy(self, x, pad_elems: int):
        """A copy of ``x`` whose rows start every ``pad_elems`` elements (row-major, aligned)."""
        cols = x.shape[-1]
        padded = round_up(max(cols, 1), pad_elems)
        view = self.empty(tuple(x.shape[:-1]) + (padded,), x)[..., :cols]
        self.copy(view, x)
        return view
