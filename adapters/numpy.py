"""NumPy arrays: host memory, staged through the GPU by the core (``cutematmul.staging``)."""

from __future__ import annotations

import numpy

from cutematmul.operand import ArrayAdapter, Operand


class NumpyAdapter(ArrayAdapter):
    name = "numpy"
    host = True

    def describe(self, x) -> Operand:
        itemsize = x.itemsize
        strides = tuple(s // itemsize for s in x.strides)
        if any(s % itemsize for s in x.strides):
            strides = None  # byte strides that are not whole elements: the core copies it
        return Operand(x, x.ctypes.data, x.shape, strides, x.dtype.name, itemsize, -1)

    def empty(self, shape, like):
        return numpy.empty(shape, dtype=like.dtype)

    def copy(self, dst, src) -> None:
        numpy.copyto(dst, src)

    def fill_zero(self, x) -> None:
        x.fill(0)


ADAPTER = NumpyAdapter()
