"""CuPy backends: ``cupy`` (CuPy's ``matmul``, i.e. cuBLAS) and ``cutematmul-cupy``.

CuPy's matmul uses true fp32 for float32 unless ``CUPY_TF32=1`` is set (the run's environment
header shows it when it is).  CuPy may hold bfloat16 arrays (through ``ml_dtypes``) without
multiplying them, or multiply matrices but not stacks of them: ``supports`` finds out on a 2x2
array (and product, of a stack of two where the point is batched) and says why not.

Imports: ``base``, ``data`` of this package, ``cutematmul.api``; ``numpy``; lazily ``cupy``
and ``ml_dtypes``.
"""

from __future__ import annotations

import functools

import numpy as np

from ..api import matmul as cutematmul_matmul
from .base import (Backend, CutematmulBackend, describe_error,
                   unavailable_import)
from .data import HostOperands, Sample, bfloat16_values

# NaN bit patterns, written through an integer view (works whatever dtypes CuPy can compute in).
_NAN_BITS = {"float16": (np.uint16, 0x7E00), "bfloat16": (np.uint16, 0x7FC0),
             "float32": (np.uint32, 0x7FC00000)}
# Bits that are all ones in the exponent of an Inf or NaN.
_EXP_MASK = {"float16": 0x7C00, "bfloat16": 0x7F80, "float32": 0x7F800000}


def _name(dtype) -> str:
    return "bfloat16" if "bfloat16" in str(dtype) else np.dtype(dtype).name


@functools.cache
def _cupy():
    import cupy

    return cupy


@functools.cache
def _bfloat16_dtype():
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


@functools.cache
def _cupy_bfloat16(product: bool, batched: bool = False) -> tuple[bool, str]:
    """Whether CuPy holds bfloat16 arrays, and (``product``) multiplies them, as matrices or
    (``batched``) as stacks of them (CuPy 14.2 multiplies bfloat16 matrices but not stacks)."""
    cupy = _cupy()
    try:
        x = cupy.zeros((2, 2, 2) if batched else (2, 2), dtype=np.uint16).view(_bfloat16_dtype())
        if product:
            cupy.matmul(x, x)
            cupy.cuda.get_current_stream().synchronize()
    except Exception as exc:
        what = "multiply" if product else "hold"
        kind = "stacks of bfloat16 matrices" if batched else "bfloat16 arrays"
        return False, f"this CuPy cannot {what} {kind} ({describe_error(exc)})"
    return True, ""


class CupyArrays(Backend):
    """CuPy arrays on CuPy's current stream (and memory pool)."""

    library = "cupy"

    def _probe(self):
        try:
            import cupy
        except Exception as exc:
            return unavailable_import("cupy", exc)
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            return False, f"CuPy sees no CUDA GPU ({describe_error(exc)})"
        return (True, "") if count else (False, "CuPy sees no CUDA GPU")

    def supports(self, dtype, batched=False):
        if dtype == "bfloat16":
            return _cupy_bfloat16(False)
        return True, ""

    def upload(self, host: HostOperands):
        cupy = _cupy()
        dtype = host.a.dtype

        def put(op):
            x = cupy.asarray(op.storage)
            if dtype == "bfloat16":
                x = x.view(_bfloat16_dtype())
            return x.swapaxes(-1, -2) if op.transposed else x

        a, b = put(host.a), put(host.b)
        out = cupy.empty(host.out_shape, dtype=a.dtype)
        self.poison(out)
        return a, b, out

    def poison(self, out):
        if out is not None:
            kind, bits = _NAN_BITS[_name(out.dtype)]
            out.view(kind).fill(bits)

    def release(self):
        _cupy().get_default_memory_pool().free_all_blocks()

    def synchronize(self):
        _cupy().cuda.get_current_stream().synchronize()

    def stream_handle(self):
        return _cupy().cuda.get_current_stream().ptr

    def sample(self, result, sample: Sample):
        cupy = _cupy()
        name = _name(result.dtype)
        r = result.view(np.uint16) if name == "bfloat16" else result
        if sample.batches is not None:
            r = r[cupy.asarray(sample.batches)]
        r = r[..., cupy.asarray(sample.rows), :][..., cupy.asarray(sample.cols)]
        host = cupy.asnumpy(r)
        host = bfloat16_values(host) if name == "bfloat16" else host
        return host.astype(np.float64)

    def count_nonfinite(self, result):
        cupy = _cupy()
        name = _name(result.dtype)
        kind, _ = _NAN_BITS[name]
        mask = kind(_EXP_MASK[name])
        return int(cupy.count_nonzero((result.view(kind) & mask) == mask))


class CupyMatmul(CupyArrays):
    name = "cupy"
    description = "cuBLAS through CuPy's matmul"
    cublas = True

    def supports(self, dtype, batched=False):
        if dtype == "bfloat16":
            return _cupy_bfloat16(True, batched)
        return True, ""

    def matmul(self, a, b, out):
        return _cupy().matmul(a, b, out=out)


class CutematmulCupy(CutematmulBackend, CupyArrays):
    name = "cutematmul-cupy"
    description = "cutematmul.matmul on CuPy arrays"

    def matmul(self, a, b, out):
        return cutematmul_matmul(a, b, out=out, precision=self.precision, kernel=self.kernel)
