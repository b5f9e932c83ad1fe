"""The one host entry every kernel family is launched through.

Every kernel family exposes a ``@cute.jit`` ``__call__(mA, mB, mC, stream)`` over CuTe tensors in
the CuTe GEMM convention (``mA`` is (M, K, L), ``mB`` is (N, K, L), ``mC`` is (M, N, L) with unit
stride along N).  That same entry serves ``cutlass.jax.cutlass_call`` (which hands it tensors) and
the pointer path below, which the CuPy / PyTorch / NumPy adapters use.

The pointer path takes raw device addresses and integer extents and strides, so one compiled kernel
serves every size, every leading dimension and every batch stride (0 included, for broadcast
operands) without DLPack conversion on the hot path.

Split-K: with ``splits`` > 1, C has ``batch * splits`` matrices (batch-major: C[:, :, l * splits +
s] is split s of batch l), and a kernel that splits K writes the partial sum over the s-th of
``splits`` equal runs of K-tiles there.  Kernels read the split count as ``size(mC, 2) //
size(mA, 2)``, so the tensor entry (``cutlass.jax``, where C and A have one batch extent) is the
unsplit product.  Which stride is the unit stride (the operand's
major mode) and how far the addresses and strides are aligned are compile-time facts, carried by the
kernel object; the host checks both before it picks a compiled kernel.

Imports: nothing of ours; the CuTe DSL and ``cuda.bindings``.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute


def _operand_layout(rows, cols, batch, ld, batch_stride, rows_major: bool, align_elems: int):
    """Layout of a (rows, cols, batch) operand whose unit stride is along rows or along cols.

    ``ld`` is the stride of the other of the two matrix modes.  When the alignment allows, ``ld``
    and the batch stride are declared divisible by ``align_elems`` so vectorized copies can be
    proven legal by the compiler.
    """
    if cutlass.const_expr(align_elems > 1):
        ld = cute.assume(ld, divby=align_elems)
        batch_stride = cute.assume(batch_stride, divby=align_elems)
    if cutlass.const_expr(rows_major):
        return cute.make_layout((rows, cols, batch), stride=(1, ld, batch_stride))
    return cute.make_layout((rows, cols, batch), stride=(ld, 1, batch_stride))


@cute.jit
def gemm_from_pointers(
    gemm: cutlass.Constexpr,
    a_ptr: cute.Pointer,
    b_ptr: cute.Pointer,
    c_ptr: cute.Pointer,
    m: cutlass.Int32,
    n: cutlass.Int32,
    k: cutlass.Int32,
    batch: cutlass.Int32,
    splits: cutlass.Int32,
    lda: cutlass.Int64,
    batch_stride_a: cutlass.Int64,
    ldb: cutlass.Int64,
    batch_stride_b: cutlass.Int64,
    ldc: cutlass.Int64,
    batch_stride_c: cutlass.Int64,
    stream: cuda.CUstream,
):
    """C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] over raw pointers.

    ``gemm`` is a kernel object (compile-time) with ``a_major`` in {"k", "m"}, ``b_major`` in
    {"k", "n"}, per-operand alignment in elements (``align_a``/``align_b``/``align_c``) and a
    ``@cute.jit __call__(mA, mB, mC, stream)``.  C always has unit stride along N; it holds
    ``batch * splits`` matrices (see the module docstring).
    """
    mA, mB, mC = _tensors(gemm, a_ptr, b_ptr, c_ptr, m, n, k, batch, splits, lda,
                          batch_stride_a, ldb, batch_stride_b, ldc, batch_stride_c)
    gemm(mA, mB, mC, stream)


@cute.jit
def _tensors(gemm: cutlass.Constexpr, a_ptr, b_ptr, c_ptr, m, n, k, batch, splits, lda,
             batch_stride_a, ldb, batch_stride_b, ldc, batch_stride_c):
    """(mA, mB, mC) of the pointer entries' arguments."""
    mA = cute.make_tensor(
        a_ptr,
        _operand_layout(m, k, batch, lda, batch_stride_a, gemm.a_major == "m", gemm.align_a),
    )
    mB = cute.make_tensor(
        b_ptr,
        _operand_layout(n, k, batch, ldb, batch_stride_b, gemm.b_major == "n", gemm.align_b),
    )
    mC = cute.make_tensor(
        c_ptr, _operand_layout(m, n, batch * splits, ldc, batch_stride_c, False, gemm.align_c)
    )
    return mA, mB, mC


@cute.jit
def gemm_streamk_from_pointers(
    gemm: cutlass.Constexpr,
    a_ptr: cute.Pointer,
    b_ptr: cute.Pointer,
    c_ptr: cute.Pointer,
    m: cutlass.Int32,
    n: cutlass.Int32,
    k: cutlass.Int32,
    batch: cutlass.Int32,
    splits: cutlass.Int32,
    lda: cutlass.Int64,
    batch_stride_a: cutlass.Int64,
    ldb: cutlass.Int64,
    batch_stride_b: cutlass.Int64,
    ldc: cutlass.Int64,
    batch_stride_c: cutlass.Int64,
    w_ptr: cute.Pointer,
    w_elems: cutlass.Int32,
    f_ptr: cute.Pointer,
    flags: cutlass.Int32,
    stream: cuda.CUstream,
):
    """``gemm_from_pointers`` for stream-K kernels (``gemm.streamk``), which also take their
    workspace: ``w_elems`` fp32 partial sums at ``w_ptr`` and ``flags`` int32 flags at
    ``f_ptr``, zeroed before the launch.  ``splits`` is 1."""
    mA, mB, mC = _tensors(gemm, a_ptr, b_ptr, c_ptr, m, n, k, batch, splits, lda,
                          batch_stride_a, ldb, batch_stride_b, ldc, batch_stride_c)
    mW = cute.make_tensor(w_ptr, cute.make_layout(w_elems))
    mFlags = cute.make_tensor(f_ptr, cute.make_layout(flags))
    gemm.streamk(mA, mB, mC, mW, mFlags, stream)
