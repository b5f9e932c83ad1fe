"""The validation layer: what must hold before anything is launched, proven with checked integers.

Every route calls it before its first CUDA call.  It proves, for the arrays a caller passed:

* **extents**: each operand's byte span, from its pointer, shape and strides, lies in the 64-bit
  address space, and every product of a size and a stride fits a signed 64-bit integer (the
  kernels' stride type), so no address computation can wrap;
* **launches**: every kernel launch a plan makes touches only addresses inside the span of the
  operand it was given (``check_launches``), and its sizes fit the kernels' 32-bit index types;
* **out**: it is writable, has the result's shape, dtype and device, does not overlap itself (no
  zero or interleaved strides) and, on the device route, does not overlap an input;
* **dtypes** are supported and in native byte order (adapters report a non-native NumPy dtype as
  such; the host route converts it, as ``numpy.matmul`` does).

A failure is a ``ValueError`` or ``TypeError`` whose sentence names the argument, what was expected
and what came.  Python integers do not overflow, so "checked 64-bit arithmetic" means every
intermediate is compared against the bounds the kernel's integer types impose.

Imports: ``plan`` and ``operand`` (leaves) only.
"""

from __future__ import annotations

import functools
import math

from .operand import Operand, check_dtypes
from .plan import result_shape

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: The longest K a product may have.  The kernels index K with int32 positions, and a split's
#: end rounded up to whole granules (up to 512 splits of 128), a shared-memory chunk or a
#: lane's last element past it, must not wrap: 2**31 - 2**20 leaves them a million of room.
MAX_K = 2**31 - 2**20
ADDRESS_END = 2**64
#: Largest number of offsets enumerated to decide exactly whether an unusual ``out`` overlaps
#: itself.
_EXACT_OVERLAP_LIMIT = 1 << 20


def span(shape, strides, itemsize: int, argument: str) -> tuple[int, int]:
    """[lo, hi) byte offsets from the base pointer that an array view can touch; (0, 0) if empty.

    ValueError when a size times a stride (in bytes) does not fit a signed 64-bit integer.
    """
    if any(n == 0 for n in shape):
        return 0, 0
    lo = hi = 0
    for n, s in zip(shape, strides):
        reach = (n - 1) * s * itemsize
        if not -INT64_MAX <= reach <= INT64_MAX:
            raise ValueError(
                f"matmul: {argument} spans more than 2**63 bytes (shape {tuple(shape)}, strides "
                f"{tuple(strides)} elements); its addresses cannot be computed in 64 bits."
            )
        if reach < 0:
            lo += reach
        else:
            hi += reach
    if not (-INT64_MAX <= lo and hi + itemsize <= INT64_MAX):
        raise ValueError(
            f"matmul: {argument} spans more than 2**63 bytes (shape {tuple(shape)}, strides "
            f"{tuple(strides)} elements); its addresses cannot be computed in 64 bits."
        )
    return lo, hi + itemsize


def check_address_range(op: Operand, argument: str, rel: tuple[int, int]) -> None:
    """ValueError unless the operand's absolute byte span lies in [0, 2**64)."""
    lo, hi = rel
    if lo == hi:
        return
    if op.ptr + lo < 0 or op.ptr + hi > ADDRESS_END:
        raise ValueError(
            f"matmul: {argument} reaches outside the 64-bit address space (pointer {op.ptr:#x}, "
            f"bytes {lo} to {hi} from it); its shape or strides are wrong."
        )


def element_strides(strides, itemsize: int, argument: str) -> tuple[int, ...]:
    """``strides`` (in elements, None when the byte strides are not whole elements), or a
    TypeError for None: the kernels address whole elements."""
    if strides is None:
        raise TypeError(
            f"matmul: {argument} has byte strides that are not multiples of its itemsize "
            f"({itemsize} bytes); expected element-aligned strides (copy it first)."
        )
    return strides


def check_out(out: Operand, shape, dtype: str, device: int) -> None:
    """``out`` has the result's shape, dtype and device, is writable and does not overlap itself."""
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"matmul: out must have shape {tuple(shape)}; got {tuple(out.shape)}.")
    if out.dtype != dtype:
        raise TypeError(f"matmul: out must have dtype {dtype}; got {out.dtype}.")
    if out.device != device:
        where = "host memory" if out.device < 0 else f"device {out.device}"
        expected = "host memory" if device < 0 else f"the operands' device {device}"
        raise ValueError(f"matmul: out must be in {expected}; it is in {where}.")
    if out.readonly:
        raise ValueError("matmul: out is read-only; pass a writable array.")
    if out.strides is not None:
        reason = self_overlap(out.shape, out.strides)
        if reason:
            raise ValueError(f"matmul: out {reason}; pass an array whose elements are distinct.")


@functools.lru_cache(maxsize=4096)
def self_overlap(shape, strides) -> str | None:
    """Why a view's elements may share memory (None when they provably do not).

    Sufficient test first: sorted by stride, each stride must exceed the reach of all smaller ones.
    Views that fail it (rare interleavings) are decided exactly by enumeration when small.
    """
    dims = [(abs(s), n, i) for i, (n, s) in enumerate(zip(shape, strides)) if n > 1]
    if any(n == 0 for n in shape) or not dims:
        return None
    for s, n, i in dims:
        if s == 0:
            return f"has stride 0 along dimension {i} of size {n} (a broadcast view)"
    dims.sort()
    reach = 0
    for s, n, _ in dims:
        if s <= reach:
            break
        reach += (n - 1) * s
    else:
        return None
    if math.prod(n for _, n, _ in dims) <= _EXACT_OVERLAP_LIMIT:
        import numpy

        offsets = numpy.zeros(1, dtype=numpy.int64)
        for s, n, _ in dims:
            offsets = (offsets[:, None] + numpy.arange(n, dtype=numpy.int64) * s).ravel()
        if numpy.unique(offsets).size == offsets.size:
            return None
        return f"has strides {tuple(strides)} that map several elements to one address"
    return f"has strides {tuple(strides)} whose elements may share memory"


def check_no_overlap(out: Operand, out_rel, inputs) -> None:
    """ValueError when ``out``'s byte span meets an input's (device route: no temporary)."""
    lo, hi = out.ptr + out_rel[0], out.ptr + out_rel[1]
    if lo == hi:
        return
    for name, op, rel in inputs:
        olo, ohi = op.ptr + rel[0], op.ptr + rel[1]
        if olo < ohi and lo < ohi and olo < hi:
            raise ValueError(
                f"matmul: out overlaps {name} in memory; pass a separate output array."
            )


def pointers_ok(pa: int, rel_a, pb: int, rel_b, pc: int | None = None, rel_c=None) -> bool:
    """Whether a, b (and out, at ``pc``) lie in the 64-bit address space and out meets neither
    input, from the pointers and the relative byte spans: the device route's per-call checks,
    a few comparisons.  False means "look closer": ``check_pointers`` then raises the sentence,
    a memoized repeat (``launch``) falls back to the path that does."""
    a_lo, a_hi, b_lo, b_hi = pa + rel_a[0], pa + rel_a[1], pb + rel_b[0], pb + rel_b[1]
    if a_lo < 0 or a_hi > ADDRESS_END or b_lo < 0 or b_hi > ADDRESS_END:
        return False
    if pc is None:
        return True
    lo, hi = pc + rel_c[0], pc + rel_c[1]
    return not (lo < 0 or hi > ADDRESS_END
                or lo < hi and (a_lo < hi and lo < a_hi or b_lo < hi and lo < b_hi))


def check_pointers(a: Operand, rel_a, b: Operand, rel_b, out: Operand | None = None,
                   rel_out=None) -> None:
    """The device route's per-call checks in one: ``check_address_range`` of a, b and out, then
    ``check_no_overlap`` of out with a and b.  The common case (everything fine) costs a few
    comparisons (``pointers_ok``); any doubt goes to those functions, which raise with the
    sentence."""
    if pointers_ok(a.ptr, rel_a, b.ptr, rel_b, None if out is None else out.ptr, rel_out):
        return
    check_address_range(a, "a", rel_a)
    check_address_range(b, "b", rel_b)
    if out is not None:
        check_address_range(out, "out", rel_out)
        check_no_overlap(out, rel_out, (("a", a, rel_a), ("b", b, rel_b)))


def check_operands(a_shape, b_shape, a_dtype: str, b_dtype: str) -> tuple[int, ...]:
    """The result shape of a @ b after the checks every route shares: dtypes, shapes, K's limit."""
    check_dtypes(a_dtype, b_dtype)
    shape = result_shape(a_shape, b_shape)
    check_contraction(a_shape[-1])
    return shape


def check_same_device(a_device: int, b_device: int) -> None:
    """a and b (device route) must be on one GPU."""
    if a_device != b_device:
        raise ValueError(
            f"matmul: a and b must be on the same GPU; a is on device {a_device} "
            f"and b on device {b_device}."
        )


def check_contraction(k: int) -> None:
    """K must fit the kernels' int32 index with room to spare (``MAX_K``); M, N and the batch
    are split into launches instead (inside ``jax.jit``: ``check_jit_extents``)."""
    if k > MAX_K:
        raise ValueError(
            f"matmul: the contracted dimension K = {k} exceeds {MAX_K} (2**31 - 2**20), the "
            "longest the kernels index; split the product along K and add the parts."
        )


def check_jit_extents(m: int, n: int, batch: int) -> None:
    """Inside ``jax.jit`` a product is one kernel launch (no splitting into launches): M, N and
    the batch (the product of the batch dimensions) must each fit int32, as the kernel sees
    them (``cutlass.jax`` truncates every extent to 32 bits)."""
    for name, extent in (("M", m), ("N", n), ("the batch", batch)):
        if extent > INT32_MAX:
            raise ValueError(
                f"matmul: inside jax.jit, {name} = {extent} exceeds 2**31 - 1, the longest "
                "extent one kernel launch indexes; outside jit cutematmul splits such a product "
                "into launches, so call it eagerly or split it along that dimension."
            )


def check_launches(calls, spans, itemsize: int) -> None:
    """Prove each launch touches only bytes inside the span of the operand it was given.

    ``calls`` are ``(offsets, sizes, majors)`` in kernel order: byte offsets of (A, B, C) from
    their base pointers, the integer sizes (m, n, k, batch, splits, lda, bsa, ldb, bsb, ldc, bsc)
    and the majors of A ("m"/"k") and B ("n"/"k"); ``spans`` the relative byte spans of the kernel's
    (A, B, C) views.  A is (m, k, batch), B (n, k, batch), C (m, n, batch) with unit stride on n
    (a split-K launch writes its partials to a workspace of ours sized to them, and its
    reduction writes C as checked here).  A RuntimeError here is a planner bug, never a user
    error: it stops the launch instead of touching foreign memory.
    """
    for offsets, sizes, majors in calls:
        m, n, k, batch, splits, lda, bsa, ldb, bsb, ldc, bsc = sizes
        for v in (m, n, k, batch, splits, batch * splits):
            if not 0 < v <= INT32_MAX:
                raise RuntimeError(f"cutematmul: internal error: launch size {v} outside int32.")
        if splits > 1 and m * n * batch * splits > INT32_MAX:
            raise RuntimeError("cutematmul: internal error: split-K partials exceed int32 "
                               "indexing.")
        a_strides = (1, lda) if majors[0] == "m" else (lda, 1)
        b_strides = (1, ldb) if majors[1] == "n" else (ldb, 1)
        layouts = (
            ((m, k, batch), a_strides + (bsa,)),
            ((n, k, batch), b_strides + (bsb,)),
            ((m, n, batch), (ldc, 1, bsc)),
        )
        for name, off, (shape, strides), (lo, hi) in zip("ABC", offsets, layouts, spans):
            llo, lhi = span(shape, strides, itemsize, f"the {name} operand of a launch")
            if off + llo < lo or off + lhi > hi:
                raise RuntimeError(
                    f"cutematmul: internal error: a launch would touch bytes "
                    f"{off + llo}..{off + lhi} "
                    f"of {name}, outside its span {lo}..{hi}; nothing was launched."
                )
