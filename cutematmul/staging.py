"""NumPy in, NumPy out: stage host arrays through the GPU on one stream, then copy the result back.

Each operand is made C-contiguous on the host (free when it already is) and copied into a device
buffer whose rows are padded to 16 bytes, so every kernel can read it; the result comes back the
same way.  Device memory is stream-ordered (``cudaMallocAsync``/``cudaFreeAsync``), and the call
synchronizes the stream before it returns the NumPy result.
"""

from __future__ import annotations

import math

import numpy

from . import device as _device
from .dispatch import choose_family
from .launch import run_gemm
from .operand import Operand
from .plan import round_up

# cudaStreamPerThread: the calling thread's default stream, used when no stream is given.
_PER_THREAD_STREAM = 2


class _NoLibrary:
    """Adapter stand-in for device buffers that no array library owns (never asked to stage)."""

    name = "numpy-staging"

    def fill_zero(self, x):  # K == 0 is handled before any device work
        raise RuntimeError("cutematmul: internal error: staged NumPy buffers need no zero fill")


def _pitched(shape) -> tuple[int, int]:
    rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    cols = shape[-1] if shape else 1
    return rows, cols


def _device_strides(shape, pitch_elems: int) -> tuple[int, ...]:
    if not shape:
        return ()
    strides = [1]
    acc = pitch_elems
    for size in reversed(shape[:-1]):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def _pitch(cols: int, itemsize: int) -> int:
    """Bytes per row of a device buffer: rows start on 16-byte boundaries."""
    return round_up(max(cols, 1) * itemsize, 16)


def _upload(x: numpy.ndarray, stream: int, buffers: list) -> Operand:
    rows, cols = _pitched(x.shape)
    isz = x.itemsize
    pitch = _pitch(cols, isz)
    ptr = _device.alloc_async(rows * pitch, stream)
    buffers.append(ptr)
    _device.copy_2d_async(ptr, pitch, x.ctypes.data, cols * isz, cols * isz, rows, True, stream)
    return Operand(None, ptr, x.shape, _device_strides(x.shape, pitch // isz), x.dtype.name, isz, 0)


def matmul_on_host_arrays(adapter, da: Operand, db: Operand, dout: Operand | None, shape,
                          stream: int | None, kernel: str):
    """``matmul`` for NumPy operands (already validated); returns a NumPy array.

    ``stream`` is a resolved handle, or None for the calling thread's default stream.
    """
    a = numpy.ascontiguousarray(da.array)
    b = numpy.ascontiguousarray(db.array)
    result = dout.array if dout is not None and dout.array.flags.c_contiguous else numpy.empty(shape, a.dtype)
    if result.size == 0:
        return dout.array if dout is not None else result
    if a.shape[-1] == 0:
        result.fill(0)
    else:
        device = _device.current_device() if _device.device_count() else 0
        info = _device.device_info(device)
        family = choose_family(da.dtype, info.capability, kernel)
        handle = _PER_THREAD_STREAM if stream is None else stream
        buffers: list[int] = []
        try:
            ga = _upload(a, handle, buffers)
            gb = _upload(b, handle, buffers)
            rows, cols = _pitched(shape)
            isz = a.itemsize
            pitch = _pitch(cols, isz)
            cptr = _device.alloc_async(rows * pitch, handle)
            buffers.append(cptr)
            gc = Operand(None, cptr, shape, _device_strides(shape, pitch // isz), a.dtype.name, isz, 0)
            run_gemm(_NoLibrary(), family, info.num_sms, ga, gb, gc, handle)
            _device.copy_2d_async(result.ctypes.data, cols * isz, cptr, pitch, cols * isz, rows,
                                  False, handle)
            _device.synchronize(handle)
        finally:
            for ptr in buffers:
                _device.free_async(ptr, handle)
            _device.synchronize(handle)
    if dout is not None and result is not dout.array:
        numpy.copyto(dout.array, result)
        return dout.array
    return result
