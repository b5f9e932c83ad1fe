"""SIMT products of a few rows (matrix-vector and up to 8 rows), fp32 or 16-bit inputs, sm_80+.

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] in fp32 with ``fma.rn.f32``, like
    ``kernels/simt_sgemm.py`` and with the same interface (any M, N >= 1, K >= 1, batch strides
    may be 0, split-K partials when C holds ``splits`` matrices per batch), for products whose M
    is at most a handful: a CTA computes ``tile_m`` (1, 2, 4 or 8) rows of C, so no FMA is spent
    on padding rows.  A and B are fp32, fp16 or bf16 (each element converted to fp32 as it is
    loaded); C is fp32 partial sums where ``Config.partials`` (a split or C^T, added by
    ``kernels/splitk_reduce.py``), else the inputs' dtype.  The tiled SGEMM's narrowest tile
    has 16 rows: at M = 1 it computes 16 times the product and ran 1x4096x4096 at 0.54-0.63x
    cuBLAS's GEMV.  The scheduler
    (``configs/simt.py``) picks this kernel for M <= 8, and for N <= 8 as C^T = B^T A^T, except
    where A would be M-major and B K-major (``configs.simt.gemv_reads``): lanes along K would
    then load A one element at a time, a row of A apart.  Over a K-major B it keeps fp32
    products of 1-2 rows; more (and an M-major A) run on ``kernels/simt_gemv_staged.py``
    (``configs.simt.staged_rows``), whose lanes share A's loads.  The dispatcher runs 16-bit
    products here only where M (or N) is at most ``configs.simt.HALF_FMA_MAX_M`` (more rows, up to
    32, run on ``kernels/simt_gemv_mma.py``) and the long operand's rows are no whole 16-byte
    vectors (``configs.simt.streams_in_place``): TMA cannot read those, and the tensor-core route
    would copy the operand first, moving the bytes that bound such a product three
    times; this kernel reads them once, in place.

How
    Such a product streams B (N x K) once and reads the few rows of A many times from L1/L2, so
    the kernel is built around B's reads; each CTA takes ``tile_n`` (128) columns of C and one
    split's run of K.  Two variants, by B's major:

    * N-major B (``a @ b`` with b row-major): lane i of every warp owns columns 4i .. 4i+3 of
      the CTA's 128 and reads them as one vector load per k-row (fp32: a warp reads one
      512-byte run), or, read by scalar loads, columns i, i + 32, i + 64 and i + 96; the
      warps of the CTA take consecutive chunks of the split's K.  Each step loads ``_UNROLL``
      k-rows of B and the matching A values (warp-uniform addresses: one broadcast each)
      before its FMAs, so every thread keeps 64 bytes of fp32 B (32 of 16-bit B) in flight.
      At the end the warps' partial sums meet in shared memory and are added in warp order.
    * K-major B (``a @ w.T``, a linear layer): each warp owns 128 / warps columns, in groups of
      ``_COLS`` whose rows of B it reads along K, lane i taking k = 4i .. 4i+3 of every 128 (one
      512-byte run per column and step; A's rows likewise when A is K-major).  The lanes' sums
      are added by butterfly shuffles.

    With ``Config.pdl`` (sm_90 and newer) the kernel is a programmatic dependent launch:
    every thread executes ``griddepcontrol.wait`` before its first global access, then
    ``griddepcontrol.launch_dependents``.

    Loads are vectors of four elements (128 bits of fp32, 64 of a 16-bit type) where the
    operand's alignment allows and the four elements lie inside the array, else four scalar
    loads; where B is read by scalar loads, a lane's four elements lie a warp's width apart
    (``_SPREAD``), so each load instruction of a warp reads 32 consecutive elements.  Rows of A
    past M and columns of B past N are read at M - 1 and N - 1 instead (in bounds, their
    results never stored), so the main loops carry no row or column predicates; only the
    last, partial step along K is predicated.  An N-major B's last, partial column tile
    takes one loop for the whole CTA: unpredicated where B is read in vectors and N is whole
    vectors (lanes past N read N's last vector), else predicated for every lane (a branch per
    lane ran both loops in the warp at N's edge, and those CTAs twice as long as the rest set
    the kernel's time: fp32 tn 7x10064x4460 180 -> 97 us).  C is written with one scalar
    store per element, row by row (a warp writes 32 consecutive columns).

Constraints
    fp32, fp16 or bf16 inputs.  ``align_*`` in elements: a vector (4 of fp32, 8 of a 16-bit
    type: 16 bytes) or less (treated like 1).  Row tiles of one block of columns run in
    neighbouring CTAs (a forced 16-bit product of more than ``tile_m`` rows: the later ones
    read B from L2).  Shapes,
    leading dimensions and batch strides are runtime values.  See ``configs/simt.Config`` (with
    ``gemv``) for the tunables.

Benchmark
    python -m cutematmul.bench --dtypes float32 --shapes skinny
    python tools/sweep_schedule.py fp32 --shapes 1x4096x4096,8x4096x14336
    python -m cutematmul.bench --dtypes bf16 --layouts nn,tn,nt --shapes 8x3001x4097,4x50257x769

Imports: ``configs.simt`` (its configuration); the CuTe DSL and ``cuda.bindings``.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute

from ..configs.simt import (
    _GEMV_GRANULE as _GRANULE, _GEMV_UNROLL as _UNROLL, _VEC, Config, _group_cols, supports,
)

# Element stride between a lane's four elements of B when they are loaded one by one: the
# warp's width, so each load instruction reads one run of 32 consecutive elements.
_SPREAD = 32


@cute.jit
def cta_work(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, rows: cutlass.Constexpr,
             cols: cutlass.Constexpr, tiles_n: cutlass.Int32, pdl: cutlass.Constexpr):
    """What this CTA of a row-streaming kernel computes (this module's and
    ``simt_gemv_mma``'s): (first row, first column, k_lo, k_hi, per_split, and its matrices of
    A (M, K), B (N, K) and C (M, N)).  The grid is one CTA per ``rows`` x ``cols`` tile of C and
    matrix of C (``splits`` per batch entry); the row tiles of one block of columns are
    neighbours, so they read the same run of B, all but the first from L2.  A split's K is an
    equal run of whole granules (``_GRANULE``), [k_lo, k_hi) inside K.

    With ``pdl`` the kernel was launched early (programmatic dependent launch): no global
    access before the kernel ahead on the stream has finished, so the wait comes before the
    matrices are handed out.  Then the next kernel (the split-K reduction) may launch at once:
    its threads wait for this grid to finish, and it launches only once every CTA of this grid
    has started, so it takes no slot one of ours still needs."""
    pid, _, _ = cute.arch.block_idx()
    m_size, k_size = mC.shape[0], mA.shape[1]
    tiles_m = cute.ceil_div(m_size, rows)
    per_batch = tiles_m * tiles_n
    batch_split = pid // per_batch
    rest = pid - batch_split * per_batch
    tile_col = rest // tiles_m
    tile_row = rest - tile_col * tiles_m
    splits = mC.shape[2] // mA.shape[2]
    batch = batch_split // splits
    per_split = cute.ceil_div(cute.ceil_div(k_size, _GRANULE), splits) * _GRANULE
    k_lo = (batch_split - batch * splits) * per_split
    k_hi = cutlass.min(k_size, k_lo + per_split)
    m0, n0 = tile_row * rows, tile_col * cols
    if cutlass.const_expr(pdl):
        cute.arch.griddepcontrol_wait()
        cute.arch.griddepcontrol_launch_dependents()
    return (m0, n0, k_lo, k_hi, per_split,
            mA[None, None, batch], mB[None, None, batch], mC[None, None, batch_split])


class RowStreaming:
    """What both row-streaming kernels share (``SimtGemv`` here, ``SimtGemvMma`` on tensor
    cores): a member's checks and fields, and the launch of one CTA per tile of C that
    ``cta_work`` divides.  A kernel names the input dtypes it reads (``ELEMENTS``), the
    shared-memory carveout it asks for (``SMEM_CARVEOUT``) and the configurations it refuses
    (``refuses``)."""

    #: The DSL's element type of each input dtype the kernel reads (each kernel names its own).
    ELEMENTS: dict
    #: Percent of the unified L1 / shared memory to give shared memory; passed explicitly so
    #: compiling needs no device query.
    SMEM_CARVEOUT: int

    def __init__(self, config: Config, dtype: str, a_major: str, b_major: str, align_a: int,
                 align_b: int, align_c: int, num_sms: int):
        config.validate()
        reason = self.refuses(config, dtype)
        if reason is None:
            reason = supports(1, 1, 1, 1, dtype, a_major, b_major, align_a, align_b, align_c)
        if reason is not None:
            raise ValueError(reason)
        self.config = config
        # A and B as stored; C is fp32 partial sums where the configuration writes them
        # (``Config.partials``), else the inputs' dtype.  Every sum is fp32.
        self.dtype = self.ELEMENTS[dtype]
        self.c_dtype = cutlass.Float32 if config.partials else self.dtype
        self.a_major, self.b_major = a_major, b_major
        self.align_a, self.align_b, self.align_c = align_a, align_b, align_c

    def refuses(self, config: Config, dtype: str) -> str | None:
        """Why this kernel cannot run ``config`` over ``dtype`` inputs; None where it can."""
        raise NotImplementedError

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        cfg = self.config
        tiles_m = cute.ceil_div(mC.shape[0], cfg.tile_m)
        tiles_n = cute.ceil_div(mC.shape[1], cfg.tile_n)
        num_ctas = tiles_m * tiles_n * mC.shape[2]
        self.kernel(mA, mB, mC, tiles_n).launch(
            grid=[num_ctas, 1, 1],
            block=[cfg.threads, 1, 1],
            stream=stream,
            min_blocks_per_mp=cfg.min_blocks,
            preferred_smem_carveout=self.SMEM_CARVEOUT,
            use_pdl=cfg.pdl,
        )


class SimtGemv(RowStreaming):
    """One member of the family: a ``gemv`` config (FMA), the operand majors and alignments."""

    ELEMENTS = {"float32": cutlass.Float32, "float16": cutlass.Float16,
                "bfloat16": cutlass.BFloat16}
    # Only the N-major variant's final sums use shared memory (at most 32 KB per CTA); the
    # rest is L1 for the rows of A that every CTA re-reads.
    SMEM_CARVEOUT = 25

    def __init__(self, *args):
        super().__init__(*args)
        config = self.config
        self._warps = config.threads // 32
        # Vector loads of _VEC elements (128 bits of fp32, 64 of a 16-bit type): B along its
        # unit stride; A along K (only the K-major-B variant reads runs of A's k).
        self._b_vec = self.align_b >= _VEC
        self._a_vec = self.a_major == "k" and self.align_a >= _VEC
        # A B read by scalar loads is read one element per lane and load, the warp's 32 lanes
        # on 32 consecutive elements (``_load4``'s spread).
        self._spread = 1 if self._b_vec else _SPREAD

    def refuses(self, config: Config, dtype: str) -> str | None:
        if not config.gemv or config.mma:
            return f"SimtGemv runs gemv configurations on FMA, got {config.name}."
        return None

    # ---------------------------------------------------------------- device-side helpers

    @cute.jit
    def _load4(self, g: cute.Tensor, start: cutlass.Int32, extent: cutlass.Int32,
               vectorized: cutlass.Constexpr, predicated: cutlass.Constexpr, regs: cute.Tensor,
               spread: cutlass.Constexpr = 1):
        """regs[j] = g[start + j * spread], j < 4, of a 1-D view ``g`` with unit stride, as fp32.
        ``spread`` 1: a lane's four consecutive elements (start a multiple of 4), one vector
        load when ``vectorized``; ``_SPREAD``: four elements a warp's width apart, scalar loads
        (each load instruction of the warp then reads one contiguous run).  ``predicated``:
        elements at or past ``extent`` read as 0; else all four lie inside."""
        if cutlass.const_expr(predicated):
            if cutlass.const_expr(vectorized):
                if start + _VEC <= extent:
                    regs.store(cute.local_tile(g, (_VEC,), (start // _VEC,)).load().to(
                        cutlass.Float32))
                else:
                    self._load4_scalar(g, start, extent, regs, 1)
            else:
                self._load4_scalar(g, start, extent, regs, spread)
        elif cutlass.const_expr(vectorized):
            regs.store(cute.local_tile(g, (_VEC,), (start // _VEC,)).load().to(cutlass.Float32))
        else:
            for j in cutlass.range_constexpr(_VEC):
                regs[j] = g[start + j * spread].to(cutlass.Float32)

    @cute.jit
    def _load4_scalar(self, g: cute.Tensor, start: cutlass.Int32, extent: cutlass.Int32,
                      regs: cute.Tensor, spread: cutlass.Constexpr):
        """regs[j] = g[start + j * spread], j < 4, as fp32; elements at or past ``extent`` read
        as 0 (and addressed at ``extent - 1``, inside the array)."""
        for j in cutlass.range_constexpr(_VEC):
            at = start + j * spread
            v = g[cutlass.min(at, extent - 1)].to(cutlass.Float32)
            regs[j] = cutlass.select_(at < extent, v, cutlass.Float32(0.0))

    # ---------------------------------------------------------------- the kernel

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiles_n: cutlass.Int32):
        cfg = self.config
        rows, cols = cfg.tile_m, cfg.tile_n
        tid, _, _ = cute.arch.thread_idx()
        warp = tid // 32
        lane = tid - warp * 32
        m_size, n_size = mC.shape[0], mC.shape[1]
        m0, n0, k_lo, k_hi, per_split, gA, gB, gC = cta_work(mA, mB, mC, rows, cols, tiles_n,
                                                             cfg.pdl)
        if cutlass.const_expr(self.b_major == "n"):
            self._n_major(gA, gB, gC, m0, n0, m_size, n_size, k_lo, k_hi, per_split, warp, lane,
                          tid)
        else:
            self._k_major(gA, gB, gC, m0, n0, m_size, n_size, k_lo, k_hi, warp, lane)

    @cute.jit
    def _n_major(self, gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, m0: cutlass.Int32,
                 n0: cutlass.Int32, m_size: cutlass.Int32, n_size: cutlass.Int32,
                 k_lo: cutlass.Int32, k_hi: cutlass.Int32, per_split: cutlass.Int32,
                 warp: cutlass.Int32, lane: cutlass.Int32, tid: cutlass.Int32):
        """B N-major: lanes along N (4 columns each), warps along K; sums meet in shared memory."""
        cfg = self.config
        rows, cols, warps = cfg.tile_m, cfg.tile_n, self._warps
        per_warp = per_split // warps  # a multiple of _UNROLL (Config.validate)
        kw_lo = k_lo + warp * per_warp
        kw_hi = cutlass.min(k_hi, kw_lo + per_warp)
        spread = self._spread
        # This lane's columns: col + j * spread, j < 4 (its own 4, or one in every 32).
        col = n0 + lane * (_VEC if cutlass.const_expr(spread == 1) else 1)
        acc = cute.make_rmem_tensor(cute.make_layout((rows, _VEC), stride=(_VEC, 1)),
                                    cutlass.Float32)
        acc.fill(0.0)
        # One loop for the whole CTA (a branch per lane would run both loops in the warp that
        # holds N's edge, and the last column tile's CTAs, twice as slow, set the kernel's
        # time): the tile inside N reads unpredicated; the last tile too where B is read in
        # vectors and N is whole vectors, its lanes past N reading N's last vector instead
        # (their sums are never stored); else every lane of it reads predicated.
        if n0 + cols <= n_size:
            self._n_major_sums(gA, gB, acc, m0, m_size, n_size, col, kw_lo, kw_hi, self._b_vec,
                               False)
        else:
            if cutlass.const_expr(self._b_vec):
                if n_size % _VEC == 0:
                    self._n_major_sums(gA, gB, acc, m0, m_size, n_size,
                                       cutlass.min(col, n_size - _VEC), kw_lo, kw_hi, True,
                                       False)
                else:
                    self._n_major_sums(gA, gB, acc, m0, m_size, n_size, col, kw_lo, kw_hi,
                                       False, True)
            else:
                self._n_major_sums(gA, gB, acc, m0, m_size, n_size, col, kw_lo, kw_hi, False,
                                   True)

        # Every warp's (rows, 128) partial sums to shared memory, then added in warp order.
        smem = cutlass.memory.SmemAllocator()
        red = smem.allocate_tensor(
            cutlass.Float32,
            cute.make_layout((cols, rows, warps), stride=(1, cols, cols * rows)),
            byte_alignment=16)
        for r in cutlass.range_constexpr(rows):
            if cutlass.const_expr(spread == 1):
                cute.local_tile(red[None, r, warp], (_VEC,), (lane,)).store(acc[r, None].load())
            else:
                for j in cutlass.range_constexpr(_VEC):
                    red[lane + j * spread, r, warp] = acc[r, j]
        cute.arch.barrier()
        for i in cutlass.range_constexpr(-(-rows * cols // cfg.threads)):
            out = tid + i * cfg.threads
            if out < rows * cols:
                r = out // cols
                c = out - r * cols
                total = cutlass.Float32(0.0)
                for w in cutlass.range_constexpr(warps):
                    total = total + red[c, r, w]
                if (m0 + r < m_size) & (n0 + c < n_size):
                    gC[m0 + r, n0 + c] = total.to(self.c_dtype)

    @cute.jit
    def _n_major_sums(self, gA: cute.Tensor, gB: cute.Tensor, acc: cute.Tensor,
                      m0: cutlass.Int32, m_size: cutlass.Int32, n_size: cutlass.Int32,
                      col: cutlass.Int32, kw_lo: cutlass.Int32, kw_hi: cutlass.Int32,
                      vectorized: cutlass.Constexpr, predicated: cutlass.Constexpr):
        """acc[r, j] += sum over k in [kw_lo, kw_hi) of A[m0 + r, k] * B[col + j, k]."""
        rows = self.config.tile_m
        # Rows of A past M are read at M - 1 (never stored).
        a_rows = [gA[cutlass.min(m0 + r, m_size - 1), None] for r in range(rows)]
        steps = cutlass.max(kw_hi - kw_lo, 0) // _UNROLL
        b = cute.make_rmem_tensor(cute.make_layout((_VEC, _UNROLL), stride=(1, _VEC)),
                                  cutlass.Float32)
        a = cute.make_rmem_tensor(cute.make_layout((rows, _UNROLL), stride=(_UNROLL, 1)),
                                  cutlass.Float32)
        for step in range(steps):
            k = kw_lo + step * _UNROLL
            for u in cutlass.range_constexpr(_UNROLL):
                self._load4(gB[None, k + u], col, n_size, vectorized, predicated, b[None, u],
                            self._spread)
                for r in cutlass.range_constexpr(rows):
                    a[r, u] = a_rows[r][k + u].to(cutlass.Float32)
            for u in cutlass.range_constexpr(_UNROLL):
                for r in cutlass.range_constexpr(rows):
                    for j in cutlass.range_constexpr(_VEC):
                        acc[r, j] = cute.math.fma(a[r, u], b[j, u], acc[r, j])
        for k in range(kw_lo + steps * _UNROLL, kw_hi):  # the last < _UNROLL k-rows
            self._load4(gB[None, k], col, n_size, vectorized, predicated, b[None, 0],
                        self._spread)
            for r in cutlass.range_constexpr(rows):
                a_val = a_rows[r][k].to(cutlass.Float32)
                for j in cutlass.range_constexpr(_VEC):
                    acc[r, j] = cute.math.fma(a_val, b[j, 0], acc[r, j])

    @cute.jit
    def _k_major(self, gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, m0: cutlass.Int32,
                 n0: cutlass.Int32, m_size: cutlass.Int32, n_size: cutlass.Int32,
                 k_lo: cutlass.Int32, k_hi: cutlass.Int32, warp: cutlass.Int32,
                 lane: cutlass.Int32):
        """B K-major: each warp owns cols / warps columns, lanes along K; shuffles add the lanes."""
        cfg = self.config
        rows, cols, warps = cfg.tile_m, cfg.tile_n, self._warps
        group = _group_cols(rows)
        per_warp = cols // warps
        a_rows = [gA[cutlass.min(m0 + r, m_size - 1), None] for r in range(rows)]
        stride = 32 * _VEC  # k covered by one step of a warp
        # This lane's k of a step: its own 4 from ``lane * 4``, or one in every 32 from ``lane``.
        first_k = lane * (_VEC if cutlass.const_expr(self._spread == 1) else 1)
        span = cutlass.max(k_hi - k_lo, 0)
        whole_steps = span // stride  # every lane's 4 elements inside [k_lo, k_hi)
        acc = cute.make_rmem_tensor(cute.make_layout((rows, group), stride=(group, 1)),
                                    cutlass.Float32)
        for g in range(per_warp // group):
            first = n0 + warp * per_warp + g * group
            # Columns past N are read at N - 1 (never stored).
            b_rows = [gB[cutlass.min(first + p, n_size - 1), None] for p in range(group)]
            acc.fill(0.0)
            for step in range(whole_steps):
                self._k_major_step(a_rows, b_rows, acc, k_lo + step * stride + first_k, k_hi,
                                   False)
            if whole_steps * stride < span:
                self._k_major_step(a_rows, b_rows, acc, k_lo + whole_steps * stride + first_k,
                                   k_hi, True)
            for r in cutlass.range_constexpr(rows):
                for p in cutlass.range_constexpr(group):
                    v = acc[r, p]
                    for offset in cutlass.range_constexpr(5):
                        v = v + cute.arch.shuffle_sync_bfly(v, 16 >> offset)
                    acc[r, p] = v
            # Lane r * group + p stores row r, column p of the group.
            for r in cutlass.range_constexpr(rows):
                for p in cutlass.range_constexpr(group):
                    if lane == r * group + p:
                        if (m0 + r < m_size) & (first + p < n_size):
                            gC[m0 + r, first + p] = acc[r, p].to(self.c_dtype)

    @cute.jit
    def _k_major_step(self, a_rows, b_rows, acc: cute.Tensor, k: cutlass.Int32,
                      k_hi: cutlass.Int32, predicated: cutlass.Constexpr):
        """acc[r, p] += sum over this lane's 4 k (``k + j * spread``) of A[row r, k] * B[column
        p, k]."""
        rows = self.config.tile_m
        group = _group_cols(rows)
        b = cute.make_rmem_tensor(cute.make_layout((_VEC, group), stride=(1, _VEC)),
                                  cutlass.Float32)
        a = cute.make_rmem_tensor(cute.make_layout((_VEC, rows), stride=(1, _VEC)),
                                  cutlass.Float32)
        for p in cutlass.range_constexpr(group):
            self._load4(b_rows[p], k, k_hi, self._b_vec, predicated, b[None, p], self._spread)
        for r in cutlass.range_constexpr(rows):
            self._load4(a_rows[r], k, k_hi, self._a_vec and self._spread == 1, predicated,
                        a[None, r], self._spread)
        for j in cutlass.range_constexpr(_VEC):
            for r in cutlass.range_constexpr(rows):
                for p in cutlass.range_constexpr(group):
                    acc[r, p] = cute.math.fma(a[j, r], b[j, p], acc[r, p])
