"""``cutematmul.matmul``: argument checking and the route from any array library to a kernel launch.

Every argument is checked before any GPU work, with a sentence naming the argument, what was
expected and what came.  The route:

    arrays -> adapter (library) -> Operand -> plan (shapes, strides, broadcasting)
           -> family + config (dispatch) -> compiled kernel (cache) -> launch on the stream
"""

from __future__ import annotations

import contextlib

from .adapters import adapter_for

from . import device as _device
from .dispatch import KERNEL_CHOICES, choose_family
from .launch import run_gemm
from .operand import Operand, check_dtypes
from .plan import result_shape
from .streams import resolve_stream

PRECISIONS = ("highest",)
_NO_SCOPE = contextlib.nullcontext()


def matmul(a, b, /, *, out=None, stream=None, precision="highest", kernel="auto"):
    """Matrix product of two arrays with NumPy ``matmul`` semantics, on the GPU.

    Parameters
    ----------
    a, b : CuPy, PyTorch (CUDA), NumPy or JAX arrays of one library, dtype float32, float16 or
        bfloat16 (both the same).  1-D operands are promoted and the added dimension removed; N-D
        operands are stacks of matrices whose batch dimensions broadcast.
    out : optional array of the result's shape, dtype, library and device, written in place.
        It must not overlap ``a`` or ``b``.
    stream : where to run: None (the library's current stream), an int handle, an object with
        ``__cuda_stream__``, a CuPy or PyTorch stream.  The call is asynchronous on that stream
        (NumPy inputs excepted: they are copied back before the call returns).
    precision : "highest" (true fp32 for float32 inputs; 16-bit inputs always accumulate in fp32).
    kernel : "auto", or a kernel family to force: "sm90" (TMA + wgmma, Hopper), "sm80"
        (mma.sync, Ampere and newer) for 16-bit inputs, "simt" for float32.

    Returns an array of the inputs' library on the inputs' device (``out`` when given).
    """
    adapter = adapter_for(a, "a")
    if adapter_for(b, "b") is not adapter:
        raise TypeError(
            f"matmul: a and b must come from the same array library; a is a {adapter.name} array "
            f"and b is a {adapter_for(b, 'b').name} array."
        )
    if out is not None and adapter_for(out, "out") is not adapter:
        raise TypeError(
            f"matmul: out must be a {adapter.name} array like a and b; "
            f"got a {adapter_for(out, 'out').name} array."
        )
    if precision not in PRECISIONS:
        raise ValueError(
            f"matmul: precision must be 'highest' (true fp32; TF32 is not offered); got {precision!r}."
        )
    if kernel not in KERNEL_CHOICES:
        raise ValueError(
            f"matmul: kernel must be one of {', '.join(map(repr, KERNEL_CHOICES))}; got {kernel!r}."
        )
    if hasattr(adapter, "matmul"):  # JAX: lowered through XLA instead of launched here
        return adapter.matmul(a, b, out=out, stream=stream, precision=precision, kernel=kernel)

    da, db = adapter.describe(a), adapter.describe(b)
    check_dtypes(da.dtype, db.dtype)
    shape = result_shape(da.shape, db.shape)
    dout = _check_out(adapter, out, shape, da, db) if out is not None else None

    # An explicit stream is checked now; the default one is looked up on the operands' device.
    handle = None if stream is None else resolve_stream(stream, adapter, da.device)
    if adapter.host:
        from .staging import matmul_on_host_arrays

        return matmul_on_host_arrays(adapter, da, db, dout, shape, handle, kernel)

    if da.device != db.device:
        raise ValueError(
            f"matmul: a and b must be on the same GPU; a is on device {da.device} "
            f"and b on device {db.device}."
        )
    info = _device.device_info(da.device)
    family = choose_family(da.dtype, info.capability, kernel)
    if handle is None:
        handle = adapter.current_stream(da.device)
        stream_scope = _NO_SCOPE
    else:
        stream_scope = adapter.on_stream(handle, da.device)
    with adapter.on_device(da.device), stream_scope:
        if out is None:
            out = adapter.empty(shape, a)
            dout = adapter.describe(out)
        run_gemm(adapter, family, info.num_sms, da, db, dout, handle)
    return out


def _check_out(adapter, out, shape, da: Operand, db: Operand) -> Operand:
    dout = adapter.describe(out)
    if dout.shape != shape:
        raise ValueError(f"matmul: out must have shape {shape}; got {dout.shape}.")
    if dout.dtype != da.dtype:
        raise TypeError(f"matmul: out must have dtype {da.dtype}; got {dout.dtype}.")
    if dout.device != da.device:
        raise ValueError(
            f"matmul: out must be on the operands' device {da.device}; it is on {dout.device}."
        )
    lo, hi = dout.byte_span()
    for name, d in (("a", da), ("b", db)):
        dlo, dhi = d.byte_span()
        if lo < dhi and dlo < hi:
            raise ValueError(f"matmul: out overlaps {name} in memory; pass a separate output array.")
    return dout
