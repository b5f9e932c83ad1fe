"""Operand preparation: a copy of a GEMM operand into a workspace of ours that the GEMM kernels
read, in any major and aligned, optionally split into its TF32 head and tail (3xTF32).

What it computes
    X is one GEMM operand as the kernels see it, (rows, K, batch) of ``dtype`` (fp32, fp16 or
    bf16) with any runtime strides (rows is M for A, N for B).  D is ours: (rows, parts * kp,
    batch) of the same dtype, rows ``ld_dst`` apart (16-byte aligned), where ``kp`` = ``width //
    parts`` is the padded width.
    * ``parts = 1``: D[r, c] = X[r, c], unchanged bits.  It serves
      - the TF32 modes (``configs.sm90.operand_copies``): a K-major copy of the smaller of A
        and B of A^T B^T (the kernel reads any other layout itself) and of an operand it
        cannot read as it is;
      - fp32 "highest" (``configs.simt.operand_copies``): the host hands it X = the transpose
        (K, rows) of a K-major A or B, so D is that operand stored M- or N-major, the layouts
        the SIMT kernel reads fastest (``dispatch.OperandCopy.to_major``);
      - 16-bit products (``configs.sm90.operand_copies``): an operand whose rows are no whole
        16-byte vectors (TMA cannot address it: a few columns N = 9, an odd K or M) is copied
        in its own major into rows padded to whole 128-byte lines (``launch._prep_plan``),
        on the caller's stream, inside the launch; the caller's library stages nothing.  A
        small M's M-major A that the swapped narrow tiles would read across in rows of 16 or
        48 bytes is transposed K-major (``configs.sm90.copies_across``).
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
    stores any, so ``_UNROLL`` vectors per thread are in flight.  Short rows thus keep every
    lane busy: the first version, one 32 x 32 block per CTA, left 23 of 32 lanes idle on a
    9-element row and ran at ~0.2 of the bandwidth (H200, fp16, 211552 x 9 and x 110 copies
    49.8 us on average).
    Any other X (a compile-time variant) is transposed through a 32 x 33 shared-memory tile
    per CTA of 32 x 8 threads, one CTA per 32 x 32 block (the padding column keeps both the
    column-wise writes and the row-wise reads free of bank conflicts), so reads run along X's
    unit stride and writes along D's; a barrier after each matrix lets the next refill the
    tile.  Both are bandwidth-bound: one element in and ``parts`` out per element of X.  In
    both, the grid's x walks a matrix's blocks and its y the batch (a CTA takes matrices y,
    y + grid y, ...).
    The pair (``k_major_b``: A's variant ``k_major``, B's ``k_major_b``) copies both operands
    in one launch (``dispatch.paired``): A's CTAs first along x, then B's, each CTA running
    its operand's variant (a choice uniform over the CTA, so barriers stay whole-CTA); a
    small product's two copies then cost one launch and one ramp, not two (H200, fp16 nn, GPU
    time per product queued behind a spin, the GEMM included: 1023x1025x1027 17.8 -> 15.2 us,
    595x851x545 11.0 -> 9.8).
    With ``pdl`` (sm_90 and newer) every variant is launched with programmatic stream
    serialization: every thread waits (``griddepcontrol.wait``) for the kernel ahead to finish
    and flush before it reads X, then lets the next kernel (the GEMM, which waits likewise)
    launch, so the launches and prologues overlap the kernel ahead (the same products, two
    single copies: 18.5 -> 17.8 and 12.6 -> 11.0 us).

Constraints
    Rows and parts * kp below 2**31 (the host's pieces); a matrix's blocks (both operands'
    in the pair) below 2**31.  The straight copy needs each part's width, ``ld_dst`` and the
    batch stride of D in whole 16-byte vectors and D 16-byte aligned (``launch._run_prep``:
    widths are padded rows or whole TF32 K-tiles).  Every store lies
    inside D's (rows, width, batch); every load inside X's (rows, K, batch).  ``parts`` in {1, 2}
    (2 for fp32 only), ``k_major``, ``k_major_b`` and ``dtype`` are compile-time values.

Benchmark
    python -m cutematmul.bench --dtypes float32 --precision high   (the prep runs inside)
    python tools/shape_classes.py --only deepK   (16-bit operands of a few columns, copied)
    python -m cutematmul.bench --shapes 1023x1025x1027,595x851x545   (both copied: the pair)

Imports: nothing of ours; the CuTe DSL and ``cuda.bindings``.
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
    """Writes the copy (with ``parts`` 2, the TF32 split) of one operand, or with ``k_major_b``
    of both A (``k_major``) and B in one launch; see the docstring."""

    def __init__(self, parts: int, k_major: bool, dtype: str = "float32", pdl: bool = False,
                 k_major_b: bool | None = None):
        if parts not in (1, 2) or (parts == 2 and dtype != "float32"):
            raise ValueError(f"OperandPrep takes parts 1 (a copy) or 2 (3xTF32 big/small, "
                             f"float32 only); got parts={parts} for {dtype}.")
        if dtype not in _DTYPES:
            raise ValueError(f"OperandPrep copies {', '.join(_DTYPES)}; got {dtype!r}.")
        self.parts = parts
        self.k_major = k_major
        self.k_major_b = k_major_b
        self.pdl = pdl
        self.element = _DTYPES[dtype]
        self.vec = _VECTOR_BYTES * 8 // self.element.width  # elements per 16-byte vector
        # The transposing variant's tile: in every CTA of a launch that has one.
        self.transposes = not k_major or k_major_b is False

    @cute.jit
    def _geometry(self, mD: cute.Tensor, k_major: cutlass.Constexpr):
        """(CTAs per matrix, the two sizes the variant walks them by) of one operand's copy:
        the straight copy's vectors per row and part and rows per CTA, or the transposing
        copy's 32-wide K blocks (a CTA's block is its index split by them) and 32-row blocks
        (a matrix's CTAs are both counts' product; the kernel needs only the first)."""
        rows, width, _ = mD.shape
        if cutlass.const_expr(k_major):
            vectors = width // self.parts // self.vec  # per row and part
            rows_per_cta = cutlass.max(_VECTORS_PER_CTA // vectors, 1)
            return cute.ceil_div(rows, rows_per_cta), vectors, rows_per_cta
        k_blocks = cute.ceil_div(width // self.parts, _TILE)
        row_blocks = cute.ceil_div(rows, _TILE)
        return k_blocks * row_blocks, k_blocks, row_blocks

    def _smem_bytes(self) -> int:
        """The transposing tile's shared memory (its struct kept for the kernel), or 0."""
        if not self.transposes:
            return 0

        # Built from an explicit annotation (this module's annotations are strings).
        tile = cute.struct.Align[cute.struct.MemRange[self.element, _TILE * (_TILE + 1)], 16]
        self._storage = cute.struct(type("Storage", (), {"__annotations__": {"tile": tile}}))
        return self._storage.size_in_bytes()

    @cute.jit
    def __call__(self, mX: cute.Tensor, mD: cute.Tensor, stream: cuda.CUstream):
        blocks, size0, size1 = self._geometry(mD, self.k_major)
        self.single(mX, mD, size0, size1).launch(
            grid=[blocks, cutlass.min(mD.shape[2], _MAX_GRID_Y), 1], block=[_THREADS, 1, 1],
            smem=self._smem_bytes(), use_pdl=self.pdl, stream=stream,
        )

    @cute.jit
    def both(self, mXa: cute.Tensor, mDa: cute.Tensor, mXb: cute.Tensor, mDb: cute.Tensor,
             stream: cuda.CUstream):
        """A's and B's copies in one launch: A's CTAs first along the grid, then B's."""
        blocks_a, a0, a1 = self._geometry(mDa, self.k_major)
        blocks_b, b0, b1 = self._geometry(mDb, self.k_major_b)
        batch = cutlass.max(mDa.shape[2], mDb.shape[2])
        self.pair(mXa, mDa, mXb, mDb, blocks_a, a0, a1, b0, b1).launch(
            grid=[blocks_a + blocks_b, cutlass.min(batch, _MAX_GRID_Y), 1],
            block=[_THREADS, 1, 1], smem=self._smem_bytes(), use_pdl=self.pdl, stream=stream,
        )

    @cute.kernel
    def single(self, mX: cute.Tensor, mD: cute.Tensor, size0: cutlass.Int32,
               size1: cutlass.Int32):
        """One operand's copy, CTA (x, y) on block x of matrices y, y + grid y, ..."""
        self._dependent_launch()
        tile = self._tile()
        bid, first_batch, _ = cute.arch.block_idx()
        self._copy(mX, mD, self.k_major, bid, first_batch, size0, size1, tile)

    @cute.kernel
    def pair(self, mXa: cute.Tensor, mDa: cute.Tensor, mXb: cute.Tensor, mDb: cute.Tensor,
             blocks_a: cutlass.Int32, a0: cutlass.Int32, a1: cutlass.Int32, b0: cutlass.Int32,
             b1: cutlass.Int32):
        """Both operands' copies: CTAs below ``blocks_a`` copy A, the others B (a choice
        uniform over each CTA, so the transposing copy's barriers stay whole-CTA)."""
        self._dependent_launch()
        tile = self._tile()
        bid, first_batch, _ = cute.arch.block_idx()
        if bid < blocks_a:
            self._copy(mXa, mDa, self.k_major, bid, first_batch, a0, a1, tile)
        else:
            self._copy(mXb, mDb, self.k_major_b, bid - blocks_a, first_batch, b0, b1, tile)

    @cute.jit
    def _tile(self):
        """The transposing copy's 32 x 33 shared tile (None where no variant transposes)."""
        if cutlass.const_expr(not self.transposes):
            return None
        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self._storage)
        return storage.tile.get_tensor(cute.make_layout((_TILE, _TILE), stride=(_TILE + 1, 1)))

    @cute.jit
    def _copy(self, mX: cute.Tensor, mD: cute.Tensor, k_major: cutlass.Constexpr, bid,
              first_batch, size0, size1, tile):
        """Block ``bid`` of every matrix from ``first_batch`` on, in steps of the grid's y."""
        _, batch_step, _ = cute.arch.grid_dim()
        if cutlass.const_expr(k_major):
            self.straight(mX, mD, bid, first_batch, batch_step, size0, size1)
        else:
            self.transposed(mX, mD, bid, first_batch, batch_step, size0, tile)

    @cute.jit
    def straight(self, mX: cute.Tensor, mD: cute.Tensor, bid, first_batch, batch_step,
                 vectors, rows_per_cta):
        """The straight copy (``k_major``): see the module docstring."""
        tid, _, _ = cute.arch.thread_idx()
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

    @cute.jit
    def transposed(self, mX: cute.Tensor, mD: cute.Tensor, bid, first_batch, batch_step,
                   k_blocks, tile: cute.Tensor):
        """The transposing copy (not ``k_major``): see the module docstring."""
        tid, _, _ = cute.arch.thread_idx()
        tx = tid % _TILE
        ty = tid // _TILE
        k0 = (bid % k_blocks) * _TILE
        r0 = (bid // k_blocks) * _TILE
        rows, _, batch = mD.shape
        k_size = mX.shape[1]
        # Columns of D per part: whole K-tiles in the TF32 modes, but another copy's width need
        # not be a multiple of the block's 32, so every store is held inside it.
        width = mD.shape[1] // self.parts
        # Transposed through shared memory: lanes run along rows (X's unit stride) when
        # reading and along K when writing.
        for b in range(first_batch, batch, batch_step):
            for j in cutlass.range_constexpr(_TILE // _ROWS_PER_PASS):
                row = r0 + tx
                k = k0 + ty + j * _ROWS_PER_PASS
                x = self.element(0.0)
                if row < rows and k < k_size:
                    x = mX[(row, k, b)]
                tile[(tx, ty + j * _ROWS_PER_PASS)] = x
            cute.arch.barrier()
            for j in cutlass.range_constexpr(_TILE // _ROWS_PER_PASS):
                row = r0 + ty + j * _ROWS_PER_PASS
                if row < rows and k0 + tx < width:
                    self._store(mD, row, k0 + tx, b, tile[(ty + j * _ROWS_PER_PASS, tx)])
            cute.arch.barrier()  # the tile is read out before the next matrix overwrites it


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
    mX, mD = _tensors(prep, x_ptr, d_ptr, rows, k, batch, width, x_row_stride, x_col_stride,
                      x_batch_stride, ld_dst, batch_stride_dst)
    prep(mX, mD, stream)


def _tensors(prep, x_ptr, d_ptr, rows, k, batch, width, x_row_stride, x_col_stride,
             x_batch_stride, ld_dst, batch_stride_dst):
    """X (rows, k, batch) with its strides and D (rows, width, batch), rows ``ld_dst`` apart,
    both of whole 16-byte vectors (the straight copy's vector stores rest on it)."""
    ld_dst = cute.assume(ld_dst, divby=prep.vec)
    batch_stride_dst = cute.assume(batch_stride_dst, divby=prep.vec)
    mX = cute.make_tensor(
        x_ptr,
        cute.make_layout((rows, k, batch), stride=(x_row_stride, x_col_stride, x_batch_stride)),
    )
    mD = cute.make_tensor(
        d_ptr, cute.make_layout((rows, width, batch), stride=(ld_dst, 1, batch_stride_dst))
    )
    return mX, mD


@cute.jit
def pair_from_pointers(
    prep: cutlass.Constexpr,
    xa_ptr: cute.Pointer, da_ptr: cute.Pointer, rows_a: cutlass.Int32, k_a: cutlass.Int32,
    batch_a: cutlass.Int32, width_a: cutlass.Int32, xa_row_stride: cutlass.Int64,
    xa_col_stride: cutlass.Int64, xa_batch_stride: cutlass.Int64, ld_da: cutlass.Int64,
    batch_stride_da: cutlass.Int64,
    xb_ptr: cute.Pointer, db_ptr: cute.Pointer, rows_b: cutlass.Int32, k_b: cutlass.Int32,
    batch_b: cutlass.Int32, width_b: cutlass.Int32, xb_row_stride: cutlass.Int64,
    xb_col_stride: cutlass.Int64, xb_batch_stride: cutlass.Int64, ld_db: cutlass.Int64,
    batch_stride_db: cutlass.Int64,
    stream: cuda.CUstream,
):
    """The pointer entry of both copies in one launch: ``prep_from_pointers``'s arguments for
    A, then for B."""
    mXa, mDa = _tensors(prep, xa_ptr, da_ptr, rows_a, k_a, batch_a, width_a, xa_row_stride,
                        xa_col_stride, xa_batch_stride, ld_da, batch_stride_da)
    mXb, mDb = _tensors(prep, xb_ptr, db_ptr, rows_b, k_b, batch_b, width_b, xb_row_stride,
                        xb_col_stride, xb_batch_stride, ld_db, batch_stride_db)
    prep.both(mXa, mDa, mXb, mDb, stream)


def compile_prep(parts: int, k_major: bool, dtype: str = "float32", *, pdl: bool = False,
                 k_major_b: bool | None = None, keep_ptx: bool = False):
    """The TVM-FFI function ``f(x_ptr, d_ptr, rows, k, batch, width, x_row_stride, x_col_stride,
    x_batch_stride, ld_dst, batch_stride_dst, stream)`` for an X of ``dtype`` that is K-major
    or not (``k_major``); one compile serves every size and stride.  With ``k_major_b`` (B's
    variant), the pair: ``f(<A's eleven>, <B's eleven>, stream)``, both copies in one launch.
    ``pdl``: launched as a dependent of the kernel ahead (sm_90 and newer,
    ``dispatch.prep_key``).  With ``keep_ptx`` the PTX is kept as ``__ptx__`` (the instruction
    checks of the tests)."""
    kernel = OperandPrep(parts, k_major, dtype, pdl, k_major_b)
    element = _DTYPES[dtype]
    x = make_ptr(element, _FAKE_ADDRESS, cute.AddressSpace.gmem, assumed_align=element.width // 8)
    d = make_ptr(element, _FAKE_ADDRESS, cute.AddressSpace.gmem, assumed_align=16)
    one = [x, d, *[cutlass.Int32(1)] * 4, *[cutlass.Int64(1)] * 5]
    options = "--enable-tvm-ffi" + (" --keep-ptx" if keep_ptx else "")
    entry, args = ((prep_from_pointers, one) if k_major_b is None
                   else (pair_from_pointers, one + one))
    return cute.compile(entry, kernel, *args, make_fake_stream(), options=options)
