"""The split-K reduction: C[m, n, l] = sum over s of W[m, n, l * splits + s], in a fixed order.

What it computes
    W holds the fp32 partial sums a split-K GEMM wrote (``kernels/entry.py``: ``splits`` matrices
    per batch), or, with ``w_dtype`` C's own 16-bit dtype and one split, the C an unsplit GEMM
    wrote into rows of ours padded to 16 bytes, where the caller's C has rows TMA cannot store
    (odd N): then it is an exact copy (``copy_rows``, below).  W's
    strides are runtime values: (ldw, 1, bsw) when the GEMM computed C, (1, ldw, bsw) when it
    computed C^T (small-M products, ``configs/sm90.py``), so the reduction also
    transposes.  Each output element is the fp32 sum of its ``splits`` partials, rounded once
    to C's dtype (fp32, fp16 or bf16); with one split it is a conversion.  The order of the
    additions is fixed by (``splits``, ``lanes``) alone, both functions of the problem's
    shape: the same inputs give bitwise-identical outputs run to run; no atomics, no order
    that depends on scheduling.

How
    ``lanes`` threads (a power of two up to 32, a runtime value: ``dispatch.reduce_lanes``)
    sum each output element: lane g of a group adds partials g, g + lanes, g + 2 lanes, ... in
    order, then the group adds its lanes' sums in a fixed butterfly (``shfl.sync.bfly``, IEEE
    addition being commutative, every lane of a pair holds the same bits).  A warp takes 32 /
    ``lanes`` consecutive elements (N fastest), lanes of one element ``32 / lanes`` apart, so
    each load instruction reads ``lanes`` runs of consecutive floats.  With one lane a warp
    writes 32 consecutive elements of a row of C and, for an untransposed W, reads 32
    consecutive floats of each partial matrix: the bandwidth-bound case of many outputs.  A
    few outputs over many splits (a deep product's one or two tiles: 1904 outputs of 64
    splits) would leave a few hundred threads each walking 64 dependent loads; their lanes
    split the walk instead.  The work is a few bytes per element; it is launched only when the
    GEMM's tiles would leave most SMs idle.

    The copy of a 16-bit C (``w_dtype`` C's own dtype, one split) is a kernel of its own
    (``copy_rows``), with no division per element: a CTA takes whole rows, ``min(N, 256)``
    threads per row; each thread walks its row in steps of that many columns, loading
    ``_COPY_UNROLL`` elements before it stores them, so each warp instruction reads and writes
    consecutive elements of one row (whole sectors; C's rows may start at any element).  It
    moves 2.4-2.7 TB/s on a large C (H200: 8192 x 8191 in 94 us), faster than staging C
    through the array library.  The one-element-per-thread path (integer divisions per
    element) ran at about 5 ps per element, a rows-of-vectors version (16-byte loads, scalar
    stores 16 bytes apart across a warp) at about 2.

    With ``pdl`` (Hopper) it is launched with programmatic stream serialization: it may start
    while the GEMM ahead of it on the stream finishes (that kernel's producer lets it launch
    once its loads are issued); every thread waits (``griddepcontrol.wait``) for that kernel to
    complete and flush before it reads a partial, then lets the next kernel launch (which
    waits likewise before touching memory, if it is a PDL kernel).

Constraints
    The reduction: M * N * L * lanes < 2**31 (the planner splits only far smaller products;
    ``lanes`` > 1 only for a few outputs).  The copy: M, N and L each below 2**31 (its offsets
    are 64-bit).  C has unit stride along N;
    its row and batch strides are runtime values, as are all of W's.

Benchmark
    python -m cutematmul.bench --shapes skinny --dtypes fp16,fp32 (split and narrow-tile products)

Imports: nothing of ours; the CuTe DSL and ``cuda.bindings``.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_stream, make_ptr

_DTYPES = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16, "float32": cutlass.Float32}
_THREADS = 256
_WARP = 32
#: The copy (``w_dtype`` C's own 16-bit dtype): elements each thread loads before it stores.
_COPY_UNROLL = 4
_MAX_GRID_Y = 65535
_FAKE_ADDRESS = 1 << 20


class SplitKReduce:
    """Sums split-K partials into C of ``dtype``; see the module docstring."""

    def __init__(self, dtype: str, pdl: bool = False, w_dtype: str = "float32"):
        if dtype not in _DTYPES:
            raise ValueError(f"SplitKReduce writes {', '.join(_DTYPES)}; got {dtype!r}.")
        if w_dtype not in ("float32", dtype):
            raise ValueError(f"SplitKReduce reads fp32 partials or C's own dtype ({dtype}); got "
                             f"{w_dtype!r}.")
        self.dtype = _DTYPES[dtype]
        self.w_dtype = _DTYPES[w_dtype]
        self.pdl = pdl
        #: The copy of a 16-bit C (W of C's own dtype, one split): ``copy_rows``.
        self.copy = w_dtype != "float32"

    @cute.jit
    def __call__(self, mW: cute.Tensor, mC: cute.Tensor, splits: cutlass.Int32,
                 lanes: cutlass.Int32, stream: cuda.CUstream):
        m, n, batch = mC.shape
        if cutlass.const_expr(self.copy):
            per_row = cutlass.min(n, _THREADS)  # threads per row
            rows_per_cta = _THREADS // per_row
            self.copy_rows(mW, mC, per_row, rows_per_cta).launch(
                grid=[cute.ceil_div(m, rows_per_cta), cutlass.min(batch, _MAX_GRID_Y), 1],
                block=[_THREADS, 1, 1], use_pdl=self.pdl, stream=stream,
            )
        else:
            total = m * n * batch
            self.kernel(mW, mC, splits, lanes, total).launch(
                grid=[cute.ceil_div(total * lanes, _THREADS), 1, 1], block=[_THREADS, 1, 1],
                use_pdl=self.pdl, stream=stream,
            )

    @cute.kernel
    def copy_rows(self, mW: cute.Tensor, mC: cute.Tensor, per_row: cutlass.Int32,
                  rows_per_cta: cutlass.Int32):
        """C = W for one split of C's own dtype: ``rows_per_cta`` rows per CTA, ``per_row``
        threads on each, every thread walking its row in steps of ``per_row`` columns with
        ``_COPY_UNROLL`` loads in flight; the grid's second dimension walks the batch."""
        tid, _, _ = cute.arch.thread_idx()
        bid, first_batch, _ = cute.arch.block_idx()
        _, batch_step, _ = cute.arch.grid_dim()
        if cutlass.const_expr(self.pdl):
            # W is the GEMM's output: read none of it before that kernel has finished.
            cute.arch.griddepcontrol_wait()
            cute.arch.griddepcontrol_launch_dependents()
        rows, n_size, batch = mC.shape
        row = bid * rows_per_cta + tid // per_row
        first_col = tid % per_row
        if tid < rows_per_cta * per_row and row < rows:
            for b in range(first_batch, batch, batch_step):
                for c0 in range(first_col, n_size, per_row * _COPY_UNROLL):
                    values = cute.make_rmem_tensor(cute.make_layout(_COPY_UNROLL), self.w_dtype)
                    for u in cutlass.range_constexpr(_COPY_UNROLL):
                        if c0 + u * per_row < n_size:
                            values[u] = mW[(row, c0 + u * per_row, b)]
                    for u in cutlass.range_constexpr(_COPY_UNROLL):
                        if c0 + u * per_row < n_size:
                            mC[(row, c0 + u * per_row, b)] = values[u].to(self.dtype)

    @cute.kernel
    def kernel(self, mW: cute.Tensor, mC: cute.Tensor, splits: cutlass.Int32,
               lanes: cutlass.Int32, total: cutlass.Int32):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        if cutlass.const_expr(self.pdl):
            # The partials are the GEMM's output: read none before it has finished.
            cute.arch.griddepcontrol_wait()
            cute.arch.griddepcontrol_launch_dependents()
        t = bid * _THREADS + tid
        per_warp = _WARP // lanes  # outputs per warp
        lane = t % _WARP
        group = lane // per_warp  # this thread's lane within its output's group
        i = t // _WARP * per_warp + lane % per_warp
        n_size = mC.shape[1]
        m_size = mC.shape[0]
        col = i % n_size
        rest = i // n_size
        row = rest % m_size
        batch = rest // m_size
        acc = cutlass.Float32(0.0)
        if i < total:
            for s in range(group, splits, lanes):
                acc = acc + mW[(row, col, batch * splits + s)]
        # Every lane takes part (the shuffles need the whole warp): groups of 32 / per_warp.
        for stage in cutlass.range_constexpr(5):
            offset = (_WARP // 2) >> stage
            if offset >= per_warp:
                acc = acc + cute.arch.shuffle_sync_bfly(acc, offset)
        if i < total and group == 0:
            mC[(row, col, batch)] = acc.to(self.dtype)


@cute.jit
def reduce_from_pointers(
    reduce: cutlass.Constexpr,
    w_ptr: cute.Pointer,
    c_ptr: cute.Pointer,
    m: cutlass.Int32,
    n: cutlass.Int32,
    batch: cutlass.Int32,
    splits: cutlass.Int32,
    lanes: cutlass.Int32,
    w_row_stride: cutlass.Int64,
    w_col_stride: cutlass.Int64,
    w_batch_stride: cutlass.Int64,
    ldc: cutlass.Int64,
    batch_stride_c: cutlass.Int64,
    stream: cuda.CUstream,
):
    """The pointer entry: W (m, n, batch * splits) of the kernel's ``w_dtype`` with strides
    (w_row_stride, w_col_stride, w_batch_stride) (the copy: one split, column stride 1), C
    (m, n, batch) with strides (ldc, 1, batch_stride_c); ``lanes`` threads per output element
    (a power of two, at most 32; unused by the copy)."""
    if cutlass.const_expr(reduce.copy):
        # The unsplit kernel's C in rows of ours (``launch._run_split``): unit column stride.
        mW = cute.make_tensor(
            w_ptr, cute.make_layout((m, n, batch), stride=(w_row_stride, 1, w_batch_stride)))
    else:
        mW = cute.make_tensor(
            w_ptr,
            cute.make_layout((m, n, batch * splits),
                             stride=(w_row_stride, w_col_stride, w_batch_stride)),
        )
    mC = cute.make_tensor(c_ptr, cute.make_layout((m, n, batch), stride=(ldc, 1, batch_stride_c)))
    reduce(mW, mC, splits, lanes, stream)


def compile_reduce(dtype: str, *, pdl: bool = False, w_dtype: str = "float32",
                   keep_ptx: bool = False):
    """The TVM-FFI function ``f(w_ptr, c_ptr, m, n, batch, splits, lanes, w_row_stride,
    w_col_stride, w_batch_stride, ldc, batch_stride_c, stream)`` for C of ``dtype`` from W of
    ``w_dtype``; sizes and strides are runtime values, so one compile serves all.  ``pdl``: a
    dependent launch (sm_90 and newer).  With ``keep_ptx`` the PTX is kept as ``__ptx__`` (the
    instruction checks of the tests)."""
    kernel = SplitKReduce(dtype, pdl, w_dtype)
    w = make_ptr(kernel.w_dtype, _FAKE_ADDRESS, cute.AddressSpace.gmem,
                 assumed_align=kernel.w_dtype.width // 8)
    c = make_ptr(kernel.dtype, _FAKE_ADDRESS, cute.AddressSpace.gmem,
                 assumed_align=kernel.dtype.width // 8)
    sizes = [cutlass.Int32(1)] * 5
    strides = [cutlass.Int64(1)] * 5
    options = "--enable-tvm-ffi" + (" --keep-ptx" if keep_ptx else "")
    return cute.compile(reduce_from_pointers, kernel, w, c, *sizes, *strides, make_fake_stream(),
                        options=options)
