"""Run one ``matmul`` on the GPU: plan, stage what the kernel cannot read, compile once, launch.

``run_gemm`` is shared by every array library.  It gets ``Operand``s whose memory is on the GPU and
an output that already exists, and issues everything on the given stream.

The hot path is kept short for small products: the plan (``plan_gemm``) and the resolved launch
(``_resolve``: staging decision, kernel key, compiled function, integer arguments) are both cached
on what they depend on (shapes, strides, pointer alignment), so a repeated call costs a few dict
lookups and the kernel call itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .dispatch import FAMILIES, Family, KernelKey, choose_config
from .kernel_cache import dsl_arch, get_compiled
from .operand import Operand
from .plan import Gemm, MatrixLayout, alignment, plan_gemm, round_up


@dataclass(frozen=True)
class Launch:
    """A resolved launch: the compiled kernel and its integer arguments (pointers excluded)."""

    fn: object
    key: KernelKey
    sizes: tuple[int, ...]  # m, n, k, batch, lda, bsa, ldb, bsb, ldc, bsc


@dataclass(frozen=True)
class Staging:
    """Which caller operands (a, b, c) must be copied before the kernel can read them."""

    a: bool
    b: bool
    c: bool


def _layout_alignment(layout: MatrixLayout, itemsize: int, offsets) -> int:
    """Alignment in bytes of a layout's strides and offsets (the base pointer is checked apart)."""
    values = [off * itemsize for off in offsets]
    return alignment(itemsize, layout.ld * itemsize, layout.batch_stride * itemsize, *values)


def _usable(layout: MatrixLayout, align: int, family: Family) -> bool:
    if layout.major == "strided" or layout.ld < 0 or layout.batch_stride < 0:
        return False
    return align >= family.required_alignment


@lru_cache(maxsize=2048)
def _resolve(family_name: str, num_sms: int, gemm: Gemm, dtype: str, itemsize: int,
             pointers_aligned: tuple[bool, bool, bool]) -> Launch | Staging:
    """The launch for a planned GEMM, or the operands that must be staged first.

    ``pointers_aligned`` says, for the kernel's (A, B, C), whether the base pointer is 16-byte
    aligned; everything else here is a function of the plan.
    """
    family = FAMILIES[family_name]
    aligns = []
    for j, (layout, ptr_ok) in enumerate(zip((gemm.a, gemm.b, gemm.c), pointers_aligned)):
        align = _layout_alignment(layout, itemsize, [o[j] for o in gemm.offsets])
        aligns.append(align if ptr_ok else min(align, itemsize))
    usable = [_usable(lay, al, family) for lay, al in zip((gemm.a, gemm.b, gemm.c), aligns)]
    if not all(usable):
        first, second = (usable[1], usable[0]) if gemm.swapped else (usable[0], usable[1])
        return Staging(not first, not second, not usable[2])

    vector = 16 // itemsize
    config = choose_config(family, gemm.m, gemm.n, gemm.k, gemm.batch, num_sms)
    key = KernelKey(
        family.name, dsl_arch(), dtype, gemm.a.major, gemm.b.major,
        *(vector if al >= 16 else 1 for al in aligns), config, num_sms,
    )
    sizes = (gemm.m, gemm.n, gemm.k, gemm.batch, gemm.a.ld, gemm.a.batch_stride,
             gemm.b.ld, gemm.b.batch_stride, gemm.c.ld, gemm.c.batch_stride)
    return Launch(get_compiled(key), key, sizes)


def run_gemm(adapter, family: Family, num_sms: int, a: Operand, b: Operand, c: Operand,
             stream: int, staged: bool = False) -> None:
    """c = a @ b on ``stream``; ``c`` has the result shape, dtype and device."""
    gemm = plan_gemm(a.shape, a.strides, b.shape, b.strides, c.strides)
    if gemm.m == 0 or gemm.n == 0 or gemm.batch == 0:
        return
    if gemm.k == 0:
        adapter.fill_zero(c.array)
        return
    first, second = (b, a) if gemm.swapped else (a, b)
    isz = c.itemsize
    aligned = ((first.ptr & 15) == 0, (second.ptr & 15) == 0, (c.ptr & 15) == 0)
    launch = _resolve(family.name, num_sms, gemm, c.dtype, isz, aligned)
    if isinstance(launch, Staging):
        if staged:
            raise RuntimeError(f"cutematmul: internal error: staged operands still unusable: {gemm}")
        _run_staged(adapter, family, num_sms, a, b, c, stream, launch)
        return
    fn, sizes = launch.fn, launch.sizes
    for oa, ob, oc in gemm.offsets:
        fn(first.ptr + oa * isz, second.ptr + ob * isz, c.ptr + oc * isz, *sizes, stream)


def _run_staged(adapter, family: Family, num_sms: int, a: Operand, b: Operand, c: Operand,
                stream: int, staging: Staging) -> None:
    """Copy the operands the kernel cannot read into aligned row-major buffers, then run."""
    pad = max(1, family.required_alignment // c.itemsize)
    if staging.a:
        a = adapter.describe(adapter.padded_copy(a.array, pad))
    if staging.b:
        b = adapter.describe(adapter.padded_copy(b.array, pad))
    target = c
    if staging.c:
        cols = c.shape[-1] if c.shape else 1
        padded = round_up(max(cols, 1), pad)
        shape = tuple(c.shape[:-1]) + (padded,) if c.shape else (padded,)
        buf = adapter.empty(shape, c.array)
        c = adapter.describe(buf[..., :cols] if target.shape else buf[0])
    run_gemm(adapter, family, num_sms, a, b, c, stream, staged=True)
    if staging.c:
        adapter.copy(target.array, c.array)
