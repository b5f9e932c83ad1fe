"""Compile a kernel object once, against fake pointers and symbolic sizes.

The result is a TVM-FFI function ``f(a_ptr, b_ptr, c_ptr, m, n, k, batch, splits, lda,
batch_stride_a, ldb, batch_stride_b, ldc, batch_stride_c, stream)`` taking plain integers, so a new
size, leading dimension or batch stride never recompiles.  A stream-K kernel's takes its workspace
before the stream: ``(..., batch_stride_c, w_ptr, w_elems, f_ptr, flags, stream)``.  Works without a
GPU when ``CUTE_DSL_ARCH`` names the target.

Imports: ``entry`` of this package; the CuTe DSL.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_stream, make_ptr

from .entry import gemm_from_pointers, gemm_streamk_from_pointers

# Address used for the fake pointers: any value with the declared alignment.
_FAKE_ADDRESS = 1 << 20


def compile_gemm(kernel, *, keep_ptx: bool = False):
    """Compile ``kernel`` behind the pointer entry; returns the TVM-FFI callable.

    ``kernel`` carries ``dtype`` (a cutlass numeric type of A and B; C's is ``c_dtype`` when the
    kernel has one, e.g. fp32 split-K partials), ``a_major``, ``b_major`` and alignments
    ``align_a``/``align_b``/``align_c`` in elements of ``dtype``.  With ``keep_ptx`` the PTX text is
    kept on the result as ``__ptx__`` (used by the instruction checks in the tests).
    """
    itemsize = kernel.dtype.width // 8
    c_dtype = getattr(kernel, "c_dtype", kernel.dtype)
    ptrs = [
        make_ptr(dtype, _FAKE_ADDRESS, cute.AddressSpace.gmem, assumed_align=align * itemsize)
        for dtype, align in ((kernel.dtype, kernel.align_a), (kernel.dtype, kernel.align_b),
                             (c_dtype, kernel.align_c))
    ]
    sizes = [cutlass.Int32(1)] * 5
    strides = [cutlass.Int64(1)] * 6
    options = "--enable-tvm-ffi" + (" --keep-ptx" if keep_ptx else "")
    entry, workspace = gemm_from_pointers, ()
    if getattr(getattr(kernel, "config", None), "streamk", False):
        entry, workspace = gemm_streamk_from_pointers, (
            make_ptr(cutlass.Float32, _FAKE_ADDRESS, cute.AddressSpace.gmem, assumed_align=16),
            cutlass.Int32(1),
            make_ptr(cutlass.Int32, _FAKE_ADDRESS, cute.AddressSpace.gmem, assumed_align=4),
            cutlass.Int32(1),
        )
    return cute.compile(entry, kernel, *ptrs, *sizes, *strides, *workspace, make_fake_stream(),
                        options=options)
