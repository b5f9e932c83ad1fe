"""NumPy arrays: host memory, staged through the GPU by the host route (``cutematmul.staging``).

Imports: ``cutematmul.operand``, ``cutematmul.streams``; ``numpy``.
"""

from __future__ import annotations

import numpy

from cutematmul.operand import ArrayAdapter, Operand
from cutematmul.streams import PER_THREAD_STREAM


class NumpyAdapter(ArrayAdapter):
    name = "numpy"
    route = "host"

    def describe(self, x, argument: str, stream: int | None = None) -> Operand:
        if not isinstance(x, numpy.ndarray):  # a NumPy scalar: numpy.matmul sees a 0-d array
            x = numpy.asarray(x)
        itemsize = x.itemsize
        strides = None
        if itemsize and not any(s % itemsize for s in x.strides):
            strides = tuple(s // itemsize for s in x.strides)
        return Operand(x, x.ctypes.data, x.shape, strides, x.dtype.name, itemsize, -1,
                       not x.flags.writeable)

    def current_stream(self, device: int) -> int:
        return PER_THREAD_STREAM  # host arrays belong to no stream: the calling thread's default

    def empty(self, shape, like):
        return numpy.empty(shape, dtype=like.dtype)

    def copy(self, dst, src) -> None:
        numpy.copyto(dst, src)

    def fill_zero(self, x) -> None:
        x.fill(0)


ADAPTER = NumpyAdapter()
