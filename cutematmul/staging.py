"""The host route: NumPy in, NumPy out, with ``numpy.matmul``'s semantics, through the GPU.

Each operand is made C-contiguous and native-endian on the host (free when it already is) and
copied into a device buffer whose rows are padded to 16 bytes, so every kernel can read it; the
result comes back the same way.  Device memory is stream-ordered (``cudaMallocAsync`` /
``cudaFreeAsync``), and the call synchronizes the stream before it returns.

As ``numpy.matmul``: 1-D @ 1-D returns a NumPy scalar; ``out`` may overlap the inputs (they are
read before it is written) and may have any strides or byte order; a read-only ``out`` is refused.

Imports: ``device``, ``dispatch``, ``launch``, ``operand``, ``plan``, ``streams``, ``validate``.
"""

from __future__ import annotations

import math

import numpy

from . import device as _device
from .dispatch import math_type
from .launch import families_for, gemm_on_device
from .operand import ArrayAdapter, Operand, result_dtype
from .plan import problem_size, round_up
from .streams import explicit_handle, resolve_stream
from .validate import check_operands, check_out


class _NoLibrary(ArrayAdapter):
    """Adapter stand-in for device buffers that no array library owns (never asked to stage);
    split-K workspaces come from ``ArrayAdapter.workspace`` (stream-ordered device memory)."""

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


def _upload(x: numpy.ndarray, device: int, stream: int, buffers: list) -> Operand:
    rows, cols = _pitched(x.shape)
    isz = x.itemsize
    pitch = _pitch(cols, isz)
    ptr = _device.alloc_async(rows * pitch, stream)
    buffers.append(ptr)
    if pitch != cols * isz:  # a kernel's last vector of a row may read the padding: zero it
        _device.memset_async(ptr, rows * pitch, stream)
    _device.copy_2d_async(ptr, pitch, x.ctypes.data, cols * isz, cols * isz, rows, "host_to_device",
                          stream)
    return Operand(None, ptr, x.shape, _device_strides(x.shape, pitch // isz), x.dtype.name, isz,
                   device)


def _native(x: numpy.ndarray, dtype: str) -> numpy.ndarray:
    """``x`` C-contiguous, in native byte order and of ``dtype`` (no copy when it already is)."""
    if x.dtype.name != dtype:  # a mixed product's 16-bit operand (result_dtype: float32)
        return numpy.ascontiguousarray(x, dtype=numpy.float32)
    return numpy.ascontiguousarray(x, dtype=x.dtype.newbyteorder("="))


def _writable_directly(out: numpy.ndarray) -> bool:
    """Whether the result can be copied straight into ``out`` (else via a temporary)."""
    return out.flags.c_contiguous and out.dtype.isnative


def run_host(adapter, a, b, *, out, stream, kernel, precision="highest"):
    """``matmul`` for host (NumPy) arrays; returns a NumPy array, or a scalar for 1-D @ 1-D."""
    named = None if stream is None else explicit_handle(stream, adapter)
    da, db = adapter.describe(a, "a"), adapter.describe(b, "b")
    dtype = result_dtype(da.dtype, db.dtype)
    shape = check_operands(da.shape, db.shape, dtype, dtype)
    if out is not None:
        dout = adapter.describe(out, "out")
        check_out(dout, shape, dtype, -1)
        out = dout.array
    # Mixed dtypes are promoted on the host (NumPy's cast, ``numpy.matmul``'s result dtype).
    x, y = _native(da.array, dtype), _native(db.array, dtype)
    if out is not None and _writable_directly(out):
        result = out
    else:
        result = numpy.empty(shape, x.dtype)
    if result.size and x.shape[-1] == 0:
        result.fill(0)
    elif result.size:
        _compute(adapter, x, y, result, named, kernel, precision)
    if out is not None:
        if result is not out:
            numpy.copyto(out, result)
        return out
    return result[()] if result.ndim == 0 else result


def _compute(adapter, x: numpy.ndarray, y: numpy.ndarray, result: numpy.ndarray,
             named: int | None, kernel: str, precision: str) -> None:
    """result = x @ y through device buffers on the named stream, or the adapter's default."""
    device = _device.current_device() if _device.device_count() else 0
    info = _device.device_info(device)
    size = problem_size(x.shape, y.shape)
    families = families_for(math_type(result.dtype.name, precision, info.capability, size, kernel),
                            info.capability, kernel)
    handle = resolve_stream(named, adapter, device).handle
    buffers: list[int] = []
    try:
        ga = _upload(x, device, handle, buffers)
        gb = _upload(y, device, handle, buffers)
        rows, cols = _pitched(result.shape)
        isz = result.itemsize
        pitch = _pitch(cols, isz)
        cptr = _device.alloc_async(rows * pitch, handle)
        buffers.append(cptr)
        gc = Operand(None, cptr, result.shape, _device_strides(result.shape, pitch // isz),
                     result.dtype.name, isz, device)
        gemm_on_device(_NoLibrary(), families, info, ga, gb, gc, handle, padded=(True, True, True))
        _device.copy_2d_async(result.ctypes.data, cols * isz, cptr, pitch, cols * isz, rows,
                              "device_to_host", handle)
        _device.synchronize(handle)
    finally:
        for ptr in buffers:
            _device.free_async(ptr, handle)
        _device.synchronize(handle)
