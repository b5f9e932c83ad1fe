"""``cutematmul.matmul``: the public entry, its option checks and the hand-over to a route.

Every argument is checked before any GPU work, with a sentence naming the argument, what was
expected and what came.  The path of a call:

    arrays -> adapter (library, or the generic DLPack one) -> adapter.matmul
           -> route (device | host | xla) -> validate -> plan -> dispatch -> cache -> launch

Imports: ``adapters`` (the registry), ``dispatch``.
"""

from __future__ import annotations

from .adapters import adapter_for
from .dispatch import PRECISIONS, check_kernel, check_precision


def matmul(a, b, /, out=None, *, stream=None, precision="highest", kernel="auto"):
    """Matrix product of two arrays with NumPy ``matmul`` semantics, on the GPU.

    Parameters
    ----------
    a, b : arrays of one library: CuPy, PyTorch (CUDA), NumPy, JAX, or any array in GPU memory
        that speaks DLPack (``__dlpack__``) or ``__cuda_array_interface__``; dtype float32,
        float16 or bfloat16.  Mixed dtypes promote as in NumPy (float32 with a 16-bit dtype, or
        float16 with bfloat16: a float32 product of the library's casts).  1-D operands are
        promoted and the added dimension removed; N-D operands are stacks of matrices whose
        batch dimensions broadcast.
    out : optional array of the result's shape, dtype, library and device, written in place
        (positional or keyword, as in ``numpy.matmul``).
        It must be writable, must not overlap itself, and (GPU arrays) must not overlap ``a`` or
        ``b``.
    stream : where to run: None (the library's current stream), an int handle, an object with
        ``__cuda_stream__``, or a stream object of the operands' library.  The call is
        asynchronous on that stream (NumPy inputs excepted: the result is copied back before the
        call returns).
    precision : how float32 inputs are multiplied (16-bit inputs ignore it: fp16/bf16 products,
        fp32 accumulation).  "highest" (default): true fp32 FMA.  "high": 3xTF32 on tensor
        cores, fp32-level accuracy (each operand split into TF32 big + small parts; big*big +
        big*small + small*big).  "tf32": one TF32 pass, the fastest, ~1e-3 relative error.
        The TF32 modes need a Hopper GPU (sm_90a); elsewhere they compute "highest".
    kernel : "auto", or a kernel family to force: "sm90" (TMA + wgmma, Hopper), "sm80"
        (mma.sync, Ampere and newer) for 16-bit inputs, "simt" for float32.

    Returns an array of the inputs' library on the inputs' device (``out`` when given).
    """
    adapter = adapter_for(a, "a")
    kind = type(a)  # arrays of one type share the adapter: one lookup for the common case
    if type(b) is not kind:
        other = adapter_for(b, "b")
        if other is not adapter:
            raise TypeError(
                f"matmul: a and b must come from the same array library; a is a {adapter.name} "
                f"array and b is a {other.name} array."
            )
    if out is not None and type(out) is not kind:
        other = adapter_for(out, "out")
        if other is not adapter:
            raise TypeError(
                f"matmul: out must be a {adapter.name} array like a and b; "
                f"got a {other.name} array."
            )
    if not isinstance(precision, str) or precision not in PRECISIONS:
        check_precision(precision)  # raises, with the sentence
    if kernel != "auto":
        check_kernel(kernel)
    return adapter.matmul(a, b, out=out, stream=stream, precision=precision, kernel=kernel)
