"""CuPy arrays: pointers from ``x.data.ptr``, CuPy's current stream, CuPy's memory pool, and
pitched copies for staging (``CupyAdapter.copy``).

Imports: ``cupy``, ``numpy``, ``cutematmul.operand``, ``cutematmul.plan``.
"""

from __future__ import annotations

import contextlib

import cupy
import numpy

from cutematmul.operand import ArrayAdapter, Operand
from cutematmul.plan import pitched_rows


def _dtype_names() -> dict:
    names = {numpy.dtype(n): n for n in ("float32", "float16")}
    try:
        import ml_dtypes

        names[numpy.dtype(ml_dtypes.bfloat16)] = "bfloat16"
    except ImportError:
        pass
    return names


_NAMES = _dtype_names()  # dtype object -> name; `dtype.name` is slow on the hot path
_DTYPES = {name: dtype for dtype, name in _NAMES.items()}


class _StreamHandle:
    """A raw stream handle in the CUDA stream protocol (``__cuda_stream__``)."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


class CupyAdapter(ArrayAdapter):
    name = "cupy"

    def describe(self, x, argument: str, stream: int | None = None) -> Operand:
        itemsize = x.itemsize
        data = x.data
        strides = x.strides
        if any(s % itemsize for s in strides):
            elements = None  # byte strides that are not whole elements: refused by validate
        else:
            elements = tuple([s // itemsize for s in strides])
        return Operand(
            x, data.ptr, x.shape, elements, _NAMES.get(x.dtype) or x.dtype.name, itemsize,
            data.device_id,
        )

    def signature(self, a, b, out):
        key = (a.shape, a.strides, a.dtype, a.data.device_id,
               b.shape, b.strides, b.dtype, b.data.device_id)
        if out is None:
            return key
        return key + (out.shape, out.strides, out.dtype, out.data.device_id)

    def pointer(self, x) -> int:
        return x.data.ptr

    def current_device(self) -> int:
        return cupy.cuda.runtime.getDevice()

    def current_stream(self, device: int) -> int:
        return cupy.cuda.get_current_stream(device).ptr

    def stream_handle(self, stream):
        if isinstance(stream, (cupy.cuda.Stream, cupy.cuda.ExternalStream)):
            return stream.ptr
        return None

    def empty(self, shape, like):
        return cupy.empty(shape, dtype=like.dtype)

    def empty_operand(self, shape, strides, like, template):
        out = cupy.empty(shape, dtype=like.dtype)  # C-contiguous, on the current device
        return out, Operand(out, out.data.ptr, shape, strides, template.dtype, template.itemsize,
                            template.device)

    def workspace(self, count: int, like, stream: int):
        buf = cupy.empty(count, dtype=cupy.float32)
        return buf, buf.data.ptr

    def copy(self, dst, src) -> None:
        """``dst[...] = src``: one pitched ``cudaMemcpy2DAsync`` on the current stream when both
        are stacks of rows with unit element stride (the staging copies in and out of padded
        buffers), which runs at copy bandwidth where ``cupy.copyto``'s strided elementwise
        kernel does not; ``cupy.copyto`` otherwise."""
        rows = pitched_rows(dst.shape, dst.strides, src.shape, src.strides, dst.itemsize)
        if rows is None or dst.dtype != src.dtype:
            cupy.copyto(dst, src)
            return
        height, width, dst_pitch, src_pitch = rows
        runtime = cupy.cuda.runtime
        runtime.memcpy2DAsync(dst.data.ptr, dst_pitch, src.data.ptr, src_pitch, width, height,
                              runtime.memcpyDeviceToDevice, cupy.cuda.get_current_stream().ptr)

    def astype(self, x, dtype: str):
        return x.astype(_DTYPES[dtype])

    def fill_zero(self, x) -> None:
        x.fill(0)

    def on_device(self, device: int):
        if cupy.cuda.runtime.getDevice() == device:
            return contextlib.nullcontext()
        return cupy.cuda.Device(device)

    def on_stream(self, handle: int, device: int):
        if cupy.cuda.get_current_stream(device).ptr == handle:
            return contextlib.nullcontext()
        from_external = getattr(cupy.cuda.Stream, "from_external", None)
        if from_external is not None:  # CuPy >= 14: wrap any object with __cuda_stream__
            return from_external(_StreamHandle(handle))
        return cupy.cuda.ExternalStream(handle, device)


ADAPTER = CupyAdapter()
