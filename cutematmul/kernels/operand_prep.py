"""Operand preparation: a copy of a GEMM operand into a workspace of ours that the GEMM kernels
read, in any major and aligned, optionally split into its TF32 head and tail (3xTF32).

What it computes
    X is one GEMM operand as the kernels see it, (rows, K, batch) of ``dtype`` (fp32, fp16 or
    bf16) with any runtime strides (rows is M for A, N for B).  D is ours: (rows, parts * kp,
    batch) of the same dtype, rows ``ld_dst`` apart (16-byte aligned), where ``kp`` = ``width //
    parts`` is the padded width.
    * ``parts = 1``: D[r, c] = X[r, c], unchanged bits.  It serves
      - the TF32 modes (``configs.sm90.operand_copies``): a K-major copy of B of A^T B^T (the
        kernel reads any other layout itself) and of an operand it cannot read as it is;
      - fp32 "highest" (``configs.simt.operand_copies``): the host hands it X = the transpose
        (K, rows) of a K-major A or B, so D is that operand stored M- or N-major, the layouts
        the SIMT kernel reads fastest (``dispatch.OperandCopy.to_major``);
      - 16-bit products (``configs.sm90.operand_copies``): an operand whose rows are no whole
        16-byte vectors (TMA cannot address it: a few columns N = 9, an odd K or M) is copied
        in its own major into rows padded to 16 bytes, on the caller's stream, inside the
        launch; the caller's library stages nothing.
    * ``parts = 2`` (precision "high", fp32 only): D[r, c] = big = tf32_rna(x) and
      D[r, kp + c] = small = tf32_rna(x - big), both rounded to nearest (``cvt.rna.tf32.f32``).
      x - big is exact in fp32, so big + small carries x to about 2^-22 relative; the 3xTF32
      GEMM adds big*big + big*small + small*big (``kernels/sm90_hgemm.py``, ``tf32x3``).
      Non-finite x gives big = x and small = 0, so an Inf stays an Inf instead of becoming
      Inf - Inf = NaN.
    Columns past X's extent, up to each part's width, are written as zeros: a kernel's last
    vector (or K-tile) of a row may read them.

How
    A K-major X (``k_major``: its second mode has the unit stride) is copied straight through,
    flattened: thread i of a CTA writes one 16-byte vector of D's rows (8 16-bit or 4 fp32
    elements; with ``parts`` 2, one vector of each part), reading its elements with scalar
    loads (X's rows need not be aligned: that is why it is copied), lanes on consecutive
    vectors.  A CTA takes whole rows, as many as make ``_VECTORS_PER_CTA`` vectors (one row,
    walked in steps of that many, when a row is longer), and loads all its vectors before it
    stores any, so ``_UNROLL`` vectors per thread are in flight; the grid's second dimension
    walks the batch.  Short rows thus keep every lane busy: the first version, one 32 x 32
    block per CTA, left 23 of 32 lanes idle on a 9-element row and ran at ~0.2 of the
    bandwidth (H200, fp16, 211552 x 9 and x 110 copies 49.8 us on average).
    Any other X (a compile-time variant) is transposed through a 32 x 33 shared-memory tile
    per CTA of 32 x 8 threads, a 1-D grid over 32 x 32 blocks x batch (the padding column
    keeps both the column-wise writes and the row-wise reads free of bank conflicts), so reads
    run along X's unit stride and writes along D's.  Both are bandwidth-bound: one element in
    and ``parts`` out per element of X.
    With ``pdl`` (sm_90 and newer) both are launched with programmatic stream serialization:
    every thread waits (``griddepcontrol.wait``) for the kernel ahead to finish and flush
    before it reads X, then lets the next kernel (the other operand's copy, or the GEMM, which
    waits likewise) launch, so the launches and prologues overlap the kernel ahead.

Constraints
    Rows and parts * kp below 2**31 (the host's pieces); the transposing variant's blocks x
    batch below 2**31.  The straight copy needs each part's width, ``ld_dst`` and the batch
    stride of D in whole 16-byte vectors and D 16-byte aligned (``launch._run_prep``: widths
    are padded rows or whole TF32 K-tiles).  Every store lies
    inside D's (rows, width, batch); every load inside X's (rows, K, batch).  ``parts`` in {1, 2}
    (2 for fp32 only), ``k_major`` and ``dtype`` are compile-time values.

Benchmark
    python -m cutematmul.bench --dtypes float32 --precision high   (the prep runs inside)
    python tools/shape_classes.py --only deepK   (16-bit operands of a few columns, copied)
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm
from cutlass.cute.runtime import make_fake_stream, make_ptr

_TILE = 32  # transposing copy: rows and K per block
_ROWS_PER_PASS = 8  # thread rows: a block of 32 x 8 threads walks its tile in 4 passes
_THREADS = _TILE * _ROWS_PER_PASS
_UNROLL = 2  # straight copy: vectors per thread loaded before any is stored
_VECTORS_PER_CTA = _THREADS * _UNROLL
_VECTOR_BYTES = 16
_MAX_GRID_Y = 65535
_FAKE_ADDRESS = 1 << 20
_EXPONENT = 0x7F800000
_DTYPES = {"float32": cutlass.Float32, "float16": cutlass.Float16, "bfloat16": cutlass.BFloat16}


@cute.jit
def _as_float(bits: cutlass.Int32) -> cutlass.Float32:
    return cutlass.Float32(llvm.bitcast(cutlass.Float32.mlir_type, bits.ir_value()))


@cute.jit
def _tf32(x: cutlass.Float32) -> cutlass.Int32:
    """The bits of x rounded to TF32 (nearest, ties away from zero), low 13 mantissa bits zero."""
    return cutlass.Int32(cute.arch.cvt_f32_tf32(x))


@cute.jit
def _split(x: cutlass.Float32):
    """(big, small) of 3xTF32: big = tf32(x), small = tf32(x - big); small = 0 where big is
    Inf or NaN (not Inf - Inf = NaN)."""
    big_bits = _tf32(x)
    big = _as_float(big_bits)
    small = cutlass.Float32(0.0)
    if (big_bits & _EXPONENT) != _EXPONENT:
        small = _as_float(_tf32(x - big))
    return big, small


class OperandPrep:
    """Writes the copy (with ``parts`` 2, the TF32 split) of an operand; see the docstring."""

    def __init__(self, parts: int, k_major: bool, dtype: str = "float32", pdl: bool = False):
        if parts not in (1, 2) or (parts == 2 and dtype != "float32"):
            raise ValueError(f"OperandPrep takes parts 1 (a copy) or 2 (3xTF32 big/small, "
                             f"float32 only); got parts={parts} for {dtype}.")
        if dtype not in _DTYPES:
            raise ValueError(f"OperandPrep copies {', '.join(_DTYPES)}; got {dtype!r}.")
        self.parts = parts
        self.k_major = k_major
        self.pdl = pdl
        self.element = _DTYPES[dtype]
        self.vec = _VECTOR_BYTES * 8 // self.element.width  # elements per 16-byte vector

    @cute.jit
    def __call__(self, mX: cute.Tensor, mD: cute.Tensor, stream: cuda.CUstream):
        rows, width, batch = mD.shape
        if cutlass.const_expr(self.k_major):
            vectors = width // self.parts // self.vec  # per row and part
            rows_per_cta = cutlass.max(_VECTORS_PER_CTA // vectors, 1)
            self.straight(mX, mD, vectors, rows_per_cta).launch(
                grid=[cute.ceil_div(rows, rows_per_cta), cutlass.min(batch, _MAX_GRID_Y), 1],
                block=[_THREADS, 1, 1], use_pdl=self.pdl, stream=stream,
            )
        else:
            k_blocks = cute.ceil_div(width // self.parts, _TILE)
            row_blocks = cute.ceil_div(rows, _TILE)

            @cute.struct
            class Storage:
                tile: cute.struct.Align[cute.struct.MemRange[self.element, _TILE * (_TILE + 1)],
                                        16]

            self._storage = Storage
            self.transposed(mX, mD, k_blocks, row_blocks).launch(
                grid=[k_blocks * row_blocks * batch, 1, 1], block=[_THREADS, 1, 1],
                smem=Storage.size_in_bytes(), use_pdl=self.pdl, stream=stream,
            )

    @cute.kernel
    def straight(self, mX: cute.Tensor, mD: cute.Tensor, vectors: cutlass.Int32,
                 rows_per_cta: cutlass.Int32):
        """The straight copy (``k_major``): see the module docstring."""
        self._dependent_launch()
        tid, _, _ = cute.arch.thread_idx()
        bid, first_batch, _ = cute.arch.block_idx()
        _, batch_step, _ = cute.arch.grid_dim()
        rows, _, batch = mD.shape
        k_size = mX.shape[1]
        r0 = bid * rows_per_cta
        count = cutlass.min(rows - r0, rows_per_cta) * vectors  # this CTA's vectors per part
        vec = self.vec
        for b in range(first_batch, batch, batch_step):
            for start in range(0, count, _VECTORS_PER_CTA):
                values = cute.make_rmem_tensor(cute.make_layout((vec, _UNROLL)), self.element)
                for u in cutlass.range_constexpr(_UNROLL):
                    i = start + u * _THREADS + tid
                    row = r0 + i // vectors
                    c0 = (i % vectors) * vec
                    for e in cutlass.range_constexpr(vec):
                        x = self.element(0.0)
                        if i < count and c0 + e < k_size:
                            x = mX[(row, c0 + e, b)]
                        values[e, u] = x
                for u in cutlass.range_constexpr(_UNROLL):
                    i = start + u * _THREADS + tid
                    if i < count:
                        row = r0 + i // vectors
                        self._store_vector(mD[(row, None, b)], i % vectors, vectors,
                                           values[None, u])

    @cute.jit
    def _dependent_launch(self):
        """``pdl``: read nothing before the kernel ahead on the stream (which may have written
        X) has finished and flushed, then let the next kernel launch: it waits likewise before
        touching memory, and it launches only once every CTA of this grid has started."""
        if cutlass.const_expr(self.pdl):
            cute.arch.griddepcontrol_wait()
            cute.arch.griddepcontrol_launch_dependents()

    @cute.jit
    def _store_vector(self, d_row: cute.Tensor, j, vectors, values: cute.Tensor):
        """Vector ``j`` of one row of D (and with two parts, vector ``vectors + j``: the small
        part) from ``values``, 16-byte stores."""
        runs = cute.zipped_divide(d_row, (self.vec,))
        if cutlass.const_expr(self.parts == 1):
            runs[None, j].store(values.load())
        else:
            big = cute.make_rmem_tensor(cute.make_layout((self.vec,)), cutlass.Float32)
            small = cute.make_rmem_tensor(cute.make_layout((self.vec,)), cutlass.Float32)
            for e in cutlass.range_constexpr(self.vec):
                big[e], small[e] = _split(values[e])
            runs[None, j].store(big.load())
            runs[None, vectors + j].store(small.load())

    @cute.jit
    def _store(self, mD: cute.Tensor, row, k, batch, x):
        """D[row, k] = x (one part) or big / small of x at k and kp + k (two parts)."""
        if cutlass.const_expr(self.parts == 1):
            mD[(row, k, batch)] = x
        else:
            kp = mD.shape[1] // 2
            big, small = _split(x)
            mD[(row, k, batch)] = big
            mD[(row, kp + k, batch)] = small

    @cute.kernel
    def transposed(self, mX: cute.Tensor, mD: cute.Tensor, k_blocks: cutlass.Int32,
                   row_blocks: cutlass.Int32):
        """The transposing copy (not ``k_major``): see the module docstring."""
        self._dependent_launch()
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        tx = tid % _TILE
        ty = tid // _TILE
        kb = bid % k_blocks
        rest = bid // k_blocks
        r0 = (rest % row_blocks) * _TILE
        batch = rest // row_blocks
        k0 = kb * _TILE
        rows = mD.shape[0]
        k_size = mX.shape[1]
        # Columns of D per part: whole K-tiles in the TF32 modes, but another copy's width need
        # not be a multiple of the block's 32, so every store is held inside it.
        width = mD.shape[1] // self.parts
        # Transposed through shared memory: lanes run along rows (X's unit stride) when
        # reading and along K when writing.
        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self._storage)
        tile = storage.tile.get_tensor(cute.make_layout((_TILE, _TILE), stride=(_TILE + 1, 1)))
        for j in cutlass.range_constexpr(_TILE // _ROWS_PER_PASS):
            row = r0 + tx
            k = k0 + ty + j * _ROWS_PER_PASS
            x = self.element(0.0)
            if row < rows and k < k_size:
                x = mX[(row, k, batch)]
            tile[(tx, ty + j * _ROWS_PER_PASS)] = x
        cute.arch.barrier()
        for j in cutlass.range_constexpr(_TILE // _ROWS_PER_PASS):
            row = r0 + ty + j * _ROWS_PER_PASS
            if row < rows and k0 + tx < width:
                self._store(mD, row, k0 + tx, batch, tile[(ty + j * _ROWS_PER_PASS, tx)])


@cute.jit
def prep_from_pointers(
    prep: cutlass.Constexpr,
    x_ptr: cute.Pointer,
    d_ptr: cute.Pointer,
    rows: cutlass.Int32,
    k: cutlass.Int32,
    batch: cutlass.Int32,
    width: cutlass.Int32,
    x_row_stride: cutlass.Int64,
    x_col_stride: cutlass.Int64,
    x_batch_stride: cutlass.Int64,
    ld_dst: cutlass.Int64,
    batch_stride_dst: cutlass.Int64,
    stream: cuda.CUstream,
):
    """The pointer entry: X (rows, k, batch) with strides (x_row_stride, x_col_stride,
    x_batch_stride); D (rows, width, batch) with strides (ld_dst, 1, batch_stride_dst), both
    whole 16-byte vectors (the straight copy's vector stores rest on it)."""
    ld_dst = cute.assume(ld_dst, divby=prep.vec)
    batch_stride_dst = cute.assume(batch_stride_dst, divby=prep.vec)
    mX = cute.make_tensor(
        x_ptr,
        cute.make_layout((rows, k, batch), stride=(x_row_stride, x_col_stride, x_batch_stride)),
    )
    mD = cute.make_tensor(
        d_ptr, cute.make_layout((rows, width, batch), stride=(ld_dst, 1, batch_stride_dst))
    )
    prep(mX, mD, stream)


def compile_prep(parts: int, k_major: bool, dtype: str = "float32", *, pdl: bool = False,
                 keep_ptx: bool = False):
    """The TVM-FFI function ``f(x_ptr, d_ptr, rows, k, batch, width, x_row_stride, x_col_stride,
    x_batch_stride, ld_dst, batch_stride_dst, stream)`` for an X of ``dtype`` that is K-major
    or not (``k_major``); one compile serves every size and stride.  ``pdl``: launched as a
    dependent of the kernel ahead (sm_90 and newer, ``dispatch.prep_key``).  With
    ``keep_ptx`` the PTX is kept as ``__ptx__`` (the instruction checks of the tests)."""
    kernel = OperandPrep(parts, k_major, dtype, pdl)
    element = _DTYPES[dtype]
    x = make_ptr(element, _FAKE_ADDRESS, cute.AddressSpace.gmem, assumed_align=element.width // 8)
    d = make_ptr(element, _FAKE_ADDRESS, cute.AddressSpace.gmem, assumed_align=16)
    sizes = [cutlass.Int32(1)] * 4
    strides = [cutlass.Int64(1)] * 5
    options = "--enable-tvm-ffi" + (" --keep-ptx" if keep_ptx else "")
    return cute.compile(prep_from_pointers, kernel, x, d, *sizes, *strides, make_fake_stream(),
                        options=options)
