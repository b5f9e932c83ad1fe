"""True-fp32 SIMT SGEMM (no TF32, no tensor cores) for sm_80 and newer.

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] in fp32 with ``fma.rn.f32``, for any M, N >= 1,
    K >= 0 (K == 0 writes zeros) and any batch count L (batch strides may be 0 to broadcast an
    operand).  Split-K (``kernels/entry.py``): when C holds ``splits`` matrices per batch, CTA
    (tile, l, s) writes the partial sum over the s-th run of K-tiles to C[:, :, l * splits + s];
    ``kernels/splitk_reduce.py`` adds them up in a fixed order.
    A is K-major (row-major math A) or M-major; B is N-major (row-major math B of shape (K, N)) or
    K-major; C is always N-major (row-major).

How
    * CTA tile ``tile_m x tile_n x tile_k`` (default 128 x 128 x 16) computed by ``threads``
      threads (default 256).  The lanes of a warp form a 4 (M) x 8 (N) grid and the warps a
      ``warps_m x warps_n`` grid.  Every thread owns 4-wide runs of rows and columns repeated
      across the tile, so with the default tile each thread accumulates an 8 x 8 micro-tile (2 x 2
      blocks of 4 x 4, 64 rows / 64 columns apart) and reads each k-slice of its A and B values
      with two 128-bit shared loads per operand.  A warp's 16 A values and 32 B values of one
      such load are contiguous: one shared-memory wavefront each (broadcast, no bank conflicts).
      Micro-tiles of up to eight 4 x 4 blocks are allowed: the scheduler's largest tiles
      (128 x 256 over 256 threads, 128 x 128 over 128) give 16 x 8, six 128-bit loads per 128
      FMAs instead of four per 64.  On an H200 that took the main loop from 87% to 90% FMA
      instructions and 4096^3 from 0.92x to 0.94x cuBLAS.
    * Register banks: an FFMA takes A from the operand reuse cache and reads B and the
      accumulator from the register file, whose two banks are the register number's parity.
      128-bit shared loads and 128-bit stores of C make ptxas number both B's values and the
      accumulators of a column in aligned quads, so column j's B and accumulator would share
      a bank in every FFMA.  B's rows are therefore stored pair-swapped in shared memory (row r
      of the tile holds column r ^ 1) and the FMA of accumulator column j reads B's register
      j ^ 1: the two now differ in parity.  On an H200 this took 4096^3 and 8192^3 from
      0.93-0.95x to 0.99-1.01x cuBLAS (128 x 256 tiles).  The price is one element per copy of
      B (12 more copy instructions per 2048 FMAs with 128 x 256 tiles).
    * Global -> shared: ``stages``-deep ring (default 3) of cp.async copies, one commit group per
      k-tile, ``cp.async.wait_group(stages - 2)`` plus one CTA barrier per k-tile.
      Shared tiles are always M-major (N-major for B) so the micro-kernel can use 128-bit loads:
        - M-major A with ``align == 4``: 16-byte ``cp.async.cg``, issued through inline PTX
          with an explicit source byte count, so the last partial vector of a row (M or N not a
          multiple of 4) is zero-filled instead of read past the end of the array.
        - K-major operand (the row-major A case): 4-byte ``cp.async.ca`` per element, a warp
          reading 4 rows x 8 consecutive k (full 32-byte sectors) and writing them transposed
          into the M-major tile.  The tile's k-rows are padded by 4 floats, which makes those
          transposing stores conflict-free while keeping every k-row 16-byte aligned.  This keeps
          the whole load path asynchronous and register-free; a 128-bit register load plus four
          transposing shared stores would cost registers and a second software pipeline for a
          saving of a few load instructions per thread and k-tile (noise next to 1024 FMAs).
        - M-major A with ``align == 1``, and N-major B: 4-byte cp.async, a warp reading 32
          consecutive elements (one 128-byte line, its pairs swapped for B) per instruction.
    * Shared -> registers: the fragments of k-slice ``kb + 1`` are loaded while slice ``kb`` is
      multiplied (register double buffering); the barrier sits at the last slice of a k-tile.
    * K tail: the first k-tile is the partial one (the k origin is shifted back by the residue),
      copied with a k >= 0 predicate; all later k-tiles are whole, so the main loop only carries
      row predicates.  Predicated-off copies read no memory and zero-fill shared memory.
    * Rasterization: a 1-D grid over (tile, batch x split); tiles are visited in groups of
      ``raster_group`` tile-rows, column by column inside a group, so CTAs running together share
      A and B tiles in L2.  The batch index is folded into the same grid dimension (no 65535 limit).
    * Epilogue: straight from registers to global memory.  With ``align_c == 4`` each 4-wide run
      is one 128-bit store when it lies fully inside N, else (and with ``align_c == 1``) scalar
      predicated stores.
    * Programmatic dependent launch (``Config.pdl``, sm_90 and newer): every thread executes
      ``griddepcontrol.wait`` before its first global access, and
      ``griddepcontrol.launch_dependents`` once its last k-tile has landed.
    * Occupancy: ``min_blocks`` CTAs per SM are requested from ptxas (``.minnctapersm``); the
      default 2 x 256 threads caps registers at 128 per thread.  A 16 x 8 micro-tile needs ~240
      (``configs/simt._min_blocks``): 256 threads per SM, like cuBLAS's SGEMM on Hopper
      (256 x 128 x 8 tiles, 8 warps, 254 registers).

Constraints
    fp32 only.  ``align_*`` in {1, 2, 4} elements (4 = 16 bytes; 2 is treated like 1).  Shapes,
    leading dimensions and batch strides are runtime values.  See ``SimtConfig.validate`` for the
    tile/thread combinations.

Benchmark
    python -m cutematmul.bench --dtypes float32 --kernel simt

Imports: ``configs.simt`` (its configuration), lazily ``simt_gemv``, ``simt_gemv_mma`` and
``simt_gemv_staged`` (the row-streaming configurations); the CuTe DSL and ``cuda.bindings``.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute

from ..configs.simt import (
    _K_MAJOR_COPY_K, _K_MAJOR_PAD, _LANES_M, _LANES_N, _MAX_CTAS_PER_SM, _SMEM_CARVEOUT,
    _SMEM_PER_SM, _VEC, Config, _copy_lanes, choose_config, supports,
)

SimtConfig = Config  # the name the tests and docs use


class SimtSgemm:
    """One member of the family: a config, the operand majors and the operand alignments."""

    def __init__(self, config: Config, dtype: str, a_major: str, b_major: str, align_a: int,
                 align_b: int, align_c: int, num_sms: int):
        config.validate()
        if dtype != "float32":
            raise ValueError(f"SimtSgemm computes float32, got {dtype!r}.")
        reason = supports(1, 1, 1, 1, dtype, a_major, b_major, align_a, align_b, align_c)
        if reason is not None:
            raise ValueError(reason)
        self.config = config
        self.dtype = cutlass.Float32
        self.a_major, self.b_major = a_major, b_major
        self.align_a, self.align_b, self.align_c = align_a, align_b, align_c
        # Which operands are K-major in global memory (shared tiles are never K-major).
        self._a_k_major = a_major == "k"
        self._b_k_major = b_major == "k"
        # Whether A (when M-major) is loaded with 16-byte copies.  B never is: its rows land in
        # shared memory pair-swapped (see the module docstring), one element per copy.
        self._a_vec = a_major == "m" and align_a == 4
        self._c_vec = align_c == 4

    # ---------------------------------------------------------------- host-side building blocks

    def _smem_layout(self, rows: int, k_major_source: bool):
        """(rows, tile_k, stages) shared tile, unit stride along rows, padded k-rows if needed."""
        cfg = self.config
        ld = rows + (_K_MAJOR_PAD if k_major_source else 0)
        return cute.make_layout((rows, cfg.tile_k, cfg.stages), stride=(1, ld, ld * cfg.tile_k))

    def _g2s_copy(self, rows: int, k_major_source: bool, vectorized: bool):
        """Tiled cp.async copy of a (rows, tile_k) tile; threads follow the global unit stride."""
        cfg = self.config
        t = cfg.threads
        if k_major_source:
            atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), cutlass.Float32,
                                       num_bits_per_copy=32)
            thr = cute.make_layout((t // _K_MAJOR_COPY_K, _K_MAJOR_COPY_K),
                                   stride=(_K_MAJOR_COPY_K, 1))
            val = cute.make_layout((1, 1))
        elif vectorized:
            # Only used to partition: the copies themselves are issued as inline PTX.
            atom = cute.make_copy_atom(
                cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL),
                cutlass.Float32, num_bits_per_copy=128)
            across = rows // _VEC
            thr = cute.make_layout((across, t // across), stride=(1, across))
            val = cute.make_layout((_VEC, 1))
        else:
            # One warp per 32 consecutive rows (all rows of a 16-row tile, two k-rows per warp):
            # a thread's copies share one pointer per k-row.
            atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), cutlass.Float32,
                                       num_bits_per_copy=32)
            lanes = _copy_lanes(rows)
            thr = cute.make_layout((lanes, t // lanes), stride=(1, lanes))
            val = cute.make_layout((1, 1))
        return cute.make_tiled_copy_tv(atom, thr, val)

    def _tiled_mma(self):
        """FMA tiled MMA: 4x8-lane warps, each thread owning 4-wide runs along M and N."""
        wm, wn = self.config.warps_mn
        threads = cute.make_layout(
            ((_LANES_M, wm), (_LANES_N, wn), 1),
            stride=((_LANES_N, 32), (1, 32 * wm), 0),
        )
        # Thread i along M (N) takes elements 4i .. 4i+3, then the same 64 (or 128, ...) further on.
        perm_m = cute.make_layout((_LANES_M * wm, _VEC), stride=(_VEC, 1))
        perm_n = cute.make_layout((_LANES_N * wn, _VEC), stride=(_VEC, 1))
        return cute.make_tiled_mma(
            cute.nvgpu.MmaUniversalOp(cutlass.Float32), threads,
            permutation_mnk=(perm_m, perm_n, None),
        )

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        cfg = self.config
        sA_layout = self._smem_layout(cfg.tile_m, self._a_k_major)
        sB_layout = self._smem_layout(cfg.tile_n, self._b_k_major)
        copy_a = self._g2s_copy(cfg.tile_m, self._a_k_major, self._a_vec)
        copy_b = self._g2s_copy(cfg.tile_n, self._b_k_major, False)
        tiled_mma = self._tiled_mma()

        tiles_m = cute.ceil_div(mC.shape[0], cfg.tile_m)
        tiles_n = cute.ceil_div(mC.shape[1], cfg.tile_n)
        num_ctas = tiles_m * tiles_n * mC.shape[2]
        self.kernel(mA, mB, mC, sA_layout, sB_layout, copy_a, copy_b, tiled_mma,
                    tiles_m, tiles_n).launch(
            grid=[num_ctas, 1, 1],
            block=[cfg.threads, 1, 1],
            stream=stream,
            min_blocks_per_mp=cfg.min_blocks,
            preferred_smem_carveout=_SMEM_CARVEOUT,
            use_pdl=cfg.pdl,
        )

    # ---------------------------------------------------------------- device-side helpers

    @cute.jit
    def _cta_coords(self, pid: cutlass.Int32, tiles_m: cutlass.Int32, tiles_n: cutlass.Int32):
        """Grid index -> (tile row, tile column, batch), grouping raster_group tile-rows."""
        group = self.config.raster_group
        per_batch = tiles_m * tiles_n
        batch = pid // per_batch
        rest = pid - batch * per_batch
        group_span = group * tiles_n
        group_idx = rest // group_span
        first_row = group_idx * group
        rows = cutlass.min(tiles_m - first_row, group)
        inside = rest - group_idx * group_span
        return first_row + inside % rows, inside // rows, batch

    @cute.jit
    def _copy_guards(self, tXcX: cute.Tensor, extent: cutlass.Int32, vectorized: cutlass.Constexpr,
                     pair_swapped: cutlass.Constexpr = False):
        """Per-copy guards of this thread: for the first (k-residue) tile and for the others.

        Scalar copies get Booleans (cute.copy zero-fills when false).  16-byte copies get source
        byte counts in [0, 16]: the elements of the vector that lie inside ``extent``.
        ``pair_swapped``: the copy of shared row r reads global row r ^ 1 (scalar copies only).
        """
        n_rows = cute.size(tXcX, mode=[1])
        n_ks = cute.size(tXcX, mode=[2])
        if cutlass.const_expr(vectorized):
            dtype = cutlass.Int32
        else:
            dtype = cutlass.Boolean
        # The main-loop guard depends on the row only: broadcast it along k.
        main = cute.make_rmem_tensor(
            cute.make_layout((1, n_rows, n_ks), stride=(0, 1, 0)), dtype)
        first = cute.make_rmem_tensor(cute.make_layout((1, n_rows, n_ks)), dtype)
        for i in cutlass.range_constexpr(n_rows):
            row, _ = tXcX[0, i, 0, 0]
            if cutlass.const_expr(pair_swapped):
                row = row ^ 1
            if cutlass.const_expr(vectorized):
                main[0, i, 0] = cutlass.min(cutlass.max(extent - row, 0), _VEC) * 4
            else:
                main[0, i, 0] = cute.elem_less(row, extent)
        for i in cutlass.range_constexpr(n_rows):
            for j in cutlass.range_constexpr(n_ks):
                row, kk = tXcX[0, i, j, 0]
                if cutlass.const_expr(pair_swapped):
                    row = row ^ 1
                if cutlass.const_expr(vectorized):
                    first[0, i, j] = main[0, i, 0] if kk >= 0 else cutlass.Int32(0)
                else:
                    first[0, i, j] = cute.elem_less((row, cutlass.Int32(-1)), (extent, kk))
        return main, first

    @cute.jit
    def _copy_tile(self, tiled_copy: cute.TiledCopy, vectorized: cutlass.Constexpr,
                   src: cute.Tensor, dst: cute.Tensor, guard: cute.Tensor):
        """Issue this thread's cp.async copies of one k-tile (no commit)."""
        if cutlass.const_expr(vectorized):
            for i in cutlass.range_constexpr(cute.size(src, mode=[1])):
                for j in cutlass.range_constexpr(cute.size(src, mode=[2])):
                    cute.arch.inline_ptx(
                        "cp.async.cg.shared.global [{$r0}], [{$r1}], 16, {$r2};",
                        read_only_args=[dst[None, i, j].iterator, src[None, i, j].iterator,
                                        guard[0, i, j]],
                    )
        else:
            cute.copy(tiled_copy, src, dst, pred=guard)

    @cute.jit
    def _store_c(self, acc: cute.Tensor, tCgC: cute.Tensor, tCcC: cute.Tensor, m_end: cutlass.Int32,
                 n_end: cutlass.Int32):
        """Write the accumulators to C, 128-bit where a run lies inside N and C is aligned."""
        for i in cutlass.range_constexpr(cute.size(acc, mode=[1])):
            # This thread's values of one row, split into its 4-wide runs: ((4), runs).
            acc_runs = cute.zipped_divide(acc[0, i, None], (_VEC,))
            g_runs = cute.zipped_divide(tCgC[0, i, None], (_VEC,))
            c_runs = cute.zipped_divide(tCcC[0, i, None], (_VEC,))
            for r in cutlass.range_constexpr(cute.size(acc_runs, mode=[1])):
                row, col = c_runs[0, r]
                row_ok = row < m_end
                if cutlass.const_expr(self._c_vec):
                    if row_ok & (col + _VEC <= n_end):
                        g_runs[None, r].store(acc_runs[None, r].load())
                    else:
                        for e in cutlass.range_constexpr(_VEC):
                            if row_ok & (col + e < n_end):
                                g_runs[e, r] = acc_runs[e, r]
                else:
                    for e in cutlass.range_constexpr(_VEC):
                        if row_ok & (col + e < n_end):
                            g_runs[e, r] = acc_runs[e, r]

    # ---------------------------------------------------------------- the kernel

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, sA_layout: cute.Layout,
               sB_layout: cute.Layout, copy_a: cute.TiledCopy, copy_b: cute.TiledCopy,
               tiled_mma: cute.TiledMma, tiles_m: cutlass.Int32, tiles_n: cutlass.Int32):
        cfg = self.config
        bm, bn, bk, stages = cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.stages
        tid, _, _ = cute.arch.thread_idx()
        pid, _, _ = cute.arch.block_idx()
        tile_row, tile_col, batch_split = self._cta_coords(pid, tiles_m, tiles_n)
        splits = mC.shape[2] // mA.shape[2]
        batch = batch_split // splits
        m_size, n_size, k_size = mC.shape[0], mC.shape[1], mA.shape[1]

        # This CTA's slabs: (bm, bk, k_tiles), (bn, bk, k_tiles) and its (bm, bn) output tile,
        # plus matching coordinate tensors for the guards.
        gA = cute.local_tile(mA[None, None, batch], (bm, bk), (tile_row, None))
        gB = cute.local_tile(mB[None, None, batch], (bn, bk), (tile_col, None))
        gC = cute.local_tile(mC[None, None, batch_split], (bm, bn), (tile_row, tile_col))
        cA = cute.local_tile(cute.make_identity_tensor((m_size, k_size)), (bm, bk),
                             (tile_row, None))
        cB = cute.local_tile(cute.make_identity_tensor((n_size, k_size)), (bn, bk),
                             (tile_col, None))
        cC = cute.local_tile(cute.make_identity_tensor((m_size, n_size)), (bm, bn),
                             (tile_row, tile_col))
        k_tiles = cute.size(gA, mode=[2])
        # Shift the k origin back so that k-tile 0 is the partial one: k in [residue, residue+bk).
        residue = k_size - bk * k_tiles
        # This CTA's split: K-tiles k_first .. k_first + k_count - 1 (k_count may be 0).
        k_per_split = cute.ceil_div(k_tiles, splits)
        k_first = (batch_split - batch * splits) * k_per_split
        k_count = cutlass.max(cutlass.min(k_tiles - k_first, k_per_split), 0)
        gA = cute.domain_offset((0, residue, 0), gA)
        gB = cute.domain_offset((0, residue, 0), gB)
        cA = cute.domain_offset((0, residue, 0), cA)
        cB = cute.domain_offset((0, residue, 0), cB)

        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float32, sA_layout, byte_alignment=16)
        sB = smem.allocate_tensor(cutlass.Float32, sB_layout, byte_alignment=16)

        thr_copy_a = copy_a.get_slice(tid)
        thr_copy_b = copy_b.get_slice(tid)
        tAgA = thr_copy_a.partition_S(gA)  # (CPY, rows, ks, k_tiles)
        tAsA = thr_copy_a.partition_D(sA)  # (CPY, rows, ks, stages)
        # B's rows pair-swapped: shared row r of the tile holds global row r ^ 1.  The view
        # starts one row further on and steps (-1, +2) rows inside each pair of rows.
        s_n, s_k, s_t = gB.layout.stride
        gB_swapped = cute.make_tensor(
            gB.iterator + s_n,
            cute.make_layout(((2, bn // 2), bk, cute.size(gB, mode=[2])),
                             stride=((-s_n, 2 * s_n), s_k, s_t)))
        tBgB = thr_copy_b.partition_S(gB_swapped)
        tBsB = thr_copy_b.partition_D(sB)
        guard_a, guard_a0 = self._copy_guards(thr_copy_a.partition_S(cA), m_size, self._a_vec)
        guard_b, guard_b0 = self._copy_guards(thr_copy_b.partition_S(cB), n_size, False, True)

        thr_mma = tiled_mma.get_slice(tid)
        tCsA = thr_mma.partition_A(sA)  # (1, micro_m, bk, stages)
        tCsB = thr_mma.partition_B(sB)  # (1, micro_n, bk, stages)
        tCgC = thr_mma.partition_C(gC)  # (1, micro_m, micro_n)
        tCrA = tiled_mma.make_fragment_A(tCsA[None, None, None, 0])  # (1, micro_m, bk)
        tCrB = tiled_mma.make_fragment_B(tCsB[None, None, None, 0])
        acc = tiled_mma.make_fragment_C(tCgC)
        acc.fill(0.0)

        if cutlass.const_expr(cfg.pdl):
            # Launched early (programmatic dependent launch): no global access before the
            # kernel ahead on the stream has finished and flushed.
            cute.arch.griddepcontrol_wait()

        # Prologue: the split's first stages-1 k-tiles into stages 0 .. stages-2, one commit
        # group each.  Only global k-tile 0 (split 0's first) is the partial one.
        for s in cutlass.range_constexpr(stages - 1):
            if s < k_count:
                src_a = tAgA[None, None, None, k_first + s]
                src_b = tBgB[None, None, None, k_first + s]
                if cutlass.const_expr(s == 0):
                    if k_first == 0:
                        self._copy_tile(copy_a, self._a_vec, src_a, tAsA[None, None, None, s],
                                        guard_a0)
                        self._copy_tile(copy_b, False, src_b, tBsB[None, None, None, s],
                                        guard_b0)
                    else:
                        self._copy_tile(copy_a, self._a_vec, src_a, tAsA[None, None, None, s],
                                        guard_a)
                        self._copy_tile(copy_b, False, src_b, tBsB[None, None, None, s],
                                        guard_b)
                else:
                    self._copy_tile(copy_a, self._a_vec, src_a, tAsA[None, None, None, s], guard_a)
                    self._copy_tile(copy_b, False, src_b, tBsB[None, None, None, s], guard_b)
            cute.arch.cp_async_commit_group()

        cute.arch.cp_async_wait_group(stages - 2)
        cute.arch.barrier()
        cute.autovec_copy(tCsA[None, None, 0, 0], tCrA[None, None, 0])
        cute.autovec_copy(tCsB[None, None, 0, 0], tCrB[None, None, 0])

        # Main loop over k-tiles.  Iteration t multiplies the tile in stage t % stages while the
        # copy of tile t + stages - 1 fills the stage that iteration t - 1 finished reading.
        read_stage = cutlass.Int32(0)
        write_stage = cutlass.Int32(stages - 1)
        fetch = cutlass.Int32(stages - 1)  # next k-tile of the split to request
        for _ in range(k_count):
            for kb in cutlass.range_constexpr(bk):
                if cutlass.const_expr(kb == bk - 1):
                    # Before reading the next tile: it must have landed (our own copies), and
                    # the barrier publishes everyone's copies and ends all reads of the stage
                    # the next iteration's copies overwrite.
                    cute.arch.cp_async_wait_group(stages - 2)
                    cute.arch.barrier()
                    read_stage = read_stage + 1
                    if read_stage == stages:
                        read_stage = cutlass.Int32(0)
                nxt = (kb + 1) % bk
                cute.autovec_copy(tCsA[None, None, nxt, read_stage], tCrA[None, None, nxt])
                cute.autovec_copy(tCsB[None, None, nxt, read_stage], tCrB[None, None, nxt])
                if cutlass.const_expr(kb == 0):
                    # Past the last tile the group is committed empty to keep the count regular.
                    if fetch < k_count:
                        self._copy_tile(copy_a, self._a_vec,
                                        tAgA[None, None, None, k_first + fetch],
                                        tAsA[None, None, None, write_stage], guard_a)
                        self._copy_tile(copy_b, False, tBgB[None, None, None, k_first + fetch],
                                        tBsB[None, None, None, write_stage], guard_b)
                    cute.arch.cp_async_commit_group()
                # Accumulator column j takes B's register j ^ 1, which holds column j.
                for i in cutlass.range_constexpr(cute.size(acc, mode=[1])):
                    for j in cutlass.range_constexpr(cute.size(acc, mode=[2])):
                        acc[0, i, j] = cute.math.fma(tCrA[0, i, kb], tCrB[0, j ^ 1, kb],
                                                     acc[0, i, j])
                if cutlass.const_expr(kb == 0):
                    fetch = fetch + 1
                    write_stage = write_stage + 1
                    if write_stage == stages:
                        write_stage = cutlass.Int32(0)
        cute.arch.cp_async_wait_group(0)
        if cutlass.const_expr(cfg.pdl):
            # Every load of this CTA has landed: the next kernel may launch (it waits for this
            # one to finish before touching memory).
            cute.arch.griddepcontrol_launch_dependents()

        self._store_c(acc, tCgC, thr_mma.partition_C(cC), m_size, n_size)


def Kernel(config: Config, *args):
    """The family's kernel for ``config`` (the name the registry, ``dispatch.FAMILIES``, looks
    up): the row-streaming kernel for a ``gemv`` configuration (on tensor cores for an ``mma``
    one, through shared memory for a ``staged`` one), else the tiled SGEMM."""
    if config.gemv and config.staged:
        from .simt_gemv_staged import SimtGemvStaged

        return SimtGemvStaged(config, *args)
    if config.gemv and config.mma:
        from .simt_gemv_mma import SimtGemvMma

        return SimtGemvMma(config, *args)
    if config.gemv:
        from .simt_gemv import SimtGemv

        return SimtGemv(config, *args)
    return SimtSgemm(config, *args)
