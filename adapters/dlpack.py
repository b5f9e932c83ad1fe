"""Any GPU array that speaks DLPack (``__dlpack__`` + ``__dlpack_device__``) or
``__cuda_array_interface__``: the generic adapter, used when no named adapter knows the type.

* ``describe`` reads the array through ``cutematmul.dlpack`` (DLPack first, the interface dict
  otherwise; our own ``DeviceArray`` directly).
* Streams: a generic array has no library stream.  The default is the per-thread default stream
  (handle 2, ``cudaStreamPerThread``), which synchronizes with the legacy default stream that
  CuPy and PyTorch use by default; inputs are ordered before it by their producers.  The one
  piece of state here is ``_CURRENT_STREAM``, a ContextVar: the stream ``on_stream`` makes
  current for this thread or task, the analogue of CuPy's and PyTorch's current stream.
* ``empty`` allocates through the producer's Array API namespace when ``like`` has one (the
  result comes back in that library), else a ``DeviceArray``; ``astype`` (mixed dtypes) needs
  that namespace.
* ``copy`` and ``fill_zero`` are ``cudaMemcpy2DAsync``/``cudaMemsetAsync`` over the described
  memory.  A copy moves whole rows (or whole columns) when both arrays have unit stride along
  them; otherwise it goes column by column, one element per row (the slow path: correct for any
  strides, one CUDA call per column and matrix).

Imports: ``cutematmul.dlpack``, ``device``, ``operand``, ``plan``, ``streams``.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools

from cutematmul import device as _device
from cutematmul.dlpack import (
    DeviceArray, describe_cuda_array_interface, describe_device_array, describe_dlpack,
    interface_byte_strides,
)
from cutematmul.operand import ArrayAdapter, Operand
from cutematmul.streams import PER_THREAD_STREAM

_CURRENT_STREAM = contextvars.ContextVar("cutematmul_dlpack_stream", default=PER_THREAD_STREAM)


def speaks_dlpack(x) -> bool:
    return hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")


class DlpackAdapter(ArrayAdapter):
    name = "dlpack"
    route = "device"

    def describe(self, x, argument: str = "a", stream: int | None = None) -> Operand:
        handle = _CURRENT_STREAM.get() if stream is None else stream
        if isinstance(x, DeviceArray):
            return describe_device_array(x, handle)
        if speaks_dlpack(x):
            return describe_dlpack(x, argument, handle)
        if hasattr(x, "__cuda_array_interface__"):
            return describe_cuda_array_interface(x, argument, handle)
        kind = type(x)
        raise TypeError(
            f"matmul: {argument} must be an array with __dlpack__ and __dlpack_device__, or "
            f"__cuda_array_interface__; got {kind.__module__}.{kind.__qualname__}."
        )

    def current_stream(self, device: int) -> int:
        """The stream ``on_stream`` made current, else the per-thread default (any device)."""
        return _CURRENT_STREAM.get()

    def empty(self, shape, like):
        namespace = getattr(like, "__array_namespace__", None)
        if namespace is not None and hasattr(like, "dtype") and hasattr(like, "device"):
            return namespace().empty(tuple(shape), dtype=like.dtype, device=like.device)
        d = self.describe(like, "out")
        return DeviceArray(shape, d.dtype, device=d.device, stream=_CURRENT_STREAM.get())

    def copy(self, dst, src) -> None:
        stream = _CURRENT_STREAM.get()
        d, s = self.describe(dst, "out", stream), self.describe(src, "a", stream)
        if d.shape != s.shape or d.dtype != s.dtype:
            raise ValueError(
                f"cutematmul: internal error: copy between {s.shape} {s.dtype} and "
                f"{d.shape} {d.dtype}."
            )
        _check_writable(d)
        isz = d.itemsize
        for dst_off, dst_pitch, src_off, src_pitch, width, height in copy_plan(
                d.shape, byte_strides(d), byte_strides(s), isz):
            _device.copy_2d_async(d.ptr + dst_off, dst_pitch, s.ptr + src_off, src_pitch,
                                  width, height, "device_to_device", stream)

    def fill_zero(self, x) -> None:
        stream = _CURRENT_STREAM.get()
        d = self.describe(x, "out", stream)
        _check_writable(d)
        extent = dense_extent(d.shape, byte_strides(d), d.itemsize)
        if extent is not None:
            _device.memset_async(d.ptr + extent[0], extent[1], stream)
            return
        zeros = DeviceArray(d.shape, d.dtype, device=d.device, stream=stream)
        _device.memset_async(zeros.ptr, zeros.size * zeros.itemsize, stream)
        self.copy(x, zeros)

    def astype(self, x, dtype: str):
        """The producer's Array API ``astype`` (on its current stream; ``describe`` then orders
        it before ours through DLPack's stream argument); refused without a namespace."""
        namespace = getattr(x, "__array_namespace__", None)
        if namespace is None:
            return super().astype(x, dtype)
        xp = namespace()
        return xp.astype(x, getattr(xp, dtype))

    def shape_of(self, x) -> tuple[int, ...]:
        """The shape, read through the protocols (``x`` may have no ``shape``)."""
        return self.describe(x, "a").shape

    def on_device(self, device: int):
        return _device.using_device(device)

    @contextlib.contextmanager
    def on_stream(self, handle: int, device: int):
        token = _CURRENT_STREAM.set(handle)
        try:
            yield
        finally:
            _CURRENT_STREAM.reset(token)


def _check_writable(d: Operand) -> None:
    if d.readonly:
        raise ValueError("matmul: out must be writable; the array is read-only (its DLPack or "
                         "__cuda_array_interface__ export says so).")


def byte_strides(d: Operand) -> tuple[int, ...]:
    """Strides in bytes, also for interface arrays whose strides are not whole elements."""
    if d.strides is not None:
        return tuple(s * d.itemsize for s in d.strides)
    return interface_byte_strides(d.array.__cuda_array_interface__)


def dense_extent(shape, strides, itemsize: int) -> tuple[int, int] | None:
    """(byte offset of the lowest element, byte count) when the elements tile memory with no
    gap in some order; None otherwise.  ``strides`` in bytes."""
    size = 1
    for n in shape:
        size *= n
    if size == 0:
        return 0, 0
    expected, low = itemsize, 0
    for n, s in sorted(((n, s) for n, s in zip(shape, strides) if n > 1), key=lambda t: abs(t[1])):
        if abs(s) != expected:
            return None
        expected *= n
        low += (n - 1) * s if s < 0 else 0
    return low, size * itemsize


def copy_plan(shape, dst_strides, src_strides, itemsize: int):
    """The 2-D copies (dst_offset, dst_pitch, src_offset, src_pitch, width, height), all in bytes,
    that perform dst[...] = src for arrays of ``shape`` with the given byte strides."""
    shape = tuple(shape)
    if len(shape) < 2:  # a 0-d or 1-d array is one row
        dst_strides = (0,) * (2 - len(shape)) + tuple(dst_strides)
        src_strides = (0,) * (2 - len(shape)) + tuple(src_strides)
        shape = (1,) * (2 - len(shape)) + shape
    if 0 in shape:
        return []
    rows, cols = shape[-2:]
    matrix = _matrix_plan(rows, cols, itemsize, dst_strides[-2:], src_strides[-2:])
    plan = []
    for index in itertools.product(*(range(n) for n in shape[:-2])):
        d0 = sum(i * s for i, s in zip(index, dst_strides))
        s0 = sum(i * s for i, s in zip(index, src_strides))
        plan += [(d0 + do, dp, s0 + so, sp, w, h) for do, dp, so, sp, w, h in matrix]
    return plan


def _matrix_plan(rows: int, cols: int, isz: int, dst, src):
    (dr, dc), (sr, sc) = dst, src
    if cols == 1 or (dc == isz and sc == isz):  # rows are contiguous in both
        return _lines(rows, cols * isz, dr, sr)
    if rows == 1 or (dr == isz and sr == isz):  # columns are contiguous in both
        return _lines(cols, rows * isz, dc, sc)
    if dr >= isz and sr >= isz:  # the slow path: one column at a time, one element per row
        return [(j * dc, dr, j * sc, sr, isz, rows) for j in range(cols)]
    return [(i * dr + j * dc, isz, i * sr + j * sc, isz, isz, 1)  # any other strides
            for i in range(rows) for j in range(cols)]


def _lines(count: int, width: int, dst_step: int, src_step: int):
    """``count`` contiguous lines of ``width`` bytes, ``*_step`` bytes apart: one 2-D copy when
    the steps are valid pitches, else one copy per line."""
    if count == 1:
        return [(0, width, 0, width, width, 1)]
    if dst_step >= width and src_step >= width:
        return [(0, dst_step, 0, src_step, width, count)]
    return [(k * dst_step, width, k * src_step, width, width, 1) for k in range(count)]


ADAPTER = DlpackAdapter()
