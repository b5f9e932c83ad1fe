"""Half-precision GEMM for Ampere-class GPUs (sm_80 / sm_86 / sm_89; also runs on sm_90a).

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] with A, B and C all float16 or all bfloat16 and the
    sum accumulated in float32.  A is (M, K, L) with unit stride along K ("k") or M ("m"); B is
    (N, K, L) with unit stride along K ("k") or N ("n"); C is (M, N, L) with unit stride along N.
    L is the batch; a batch stride of 0 broadcasts an operand.

How
    * One CTA computes a ``tile_m x tile_n`` tile of C with ``warps_m x warps_n`` warps, each warp
      issuing ``mma.sync.m16n8k16`` (fp32 accumulators, all in registers).
    * K is walked in ``tile_k`` slices through a ``stages``-deep ring of shared-memory buffers that
      is filled with 16-byte ``cp.async.cg`` copies (L2 only); ``stages - 1`` slices are in flight
      while one is consumed, with one ``__syncthreads`` per slice.
    * Shared memory rows are at most 128 bytes long and their 16-byte chunks are XOR-swizzled by
      the row index, so both the cp.async writes and the ``ldmatrix`` reads (``ldmatrix.trans``
      for M- or N-major operands) are free of bank conflicts.
    * Fragments are read from shared memory one 16-wide k-step ahead of the MMAs that use them
      (register double buffering), so ldmatrix latency hides behind tensor-core work.
    * CTAs are rasterized in groups of ``raster_group`` tile-rows: consecutive CTAs share B tiles
      and the group's A tiles stay in L2.  The batch is folded into the same 1-D grid.
    * The epilogue converts the accumulators to the output type, stages the tile through
      (swizzled) shared memory and writes C with 128-bit coalesced stores.

Bounds
    Every M, N, K >= 1 is handled.  Out-of-range rows, columns and the K tail are never read:
    each cp.async carries a byte count (``src-size``) from 0 to 16 and the rest of its 16 bytes
    is zero-filled, which also covers a vector cut in the middle by the end of a contiguous mode
    (for example M = 13 with an M-major A).  The partial K slice is loaded first, so the main loop
    only carries the M/N bounds, which are computed once per CTA.  C is stored with full vectors
    where they fit and element by element at the N edge.

Constraints
    * A, B, C base addresses, leading strides and batch strides 16-byte aligned (8 elements);
      the host stages other operands into aligned copies.
    * Shared memory per CTA is ``Sm80Config.smem_bytes``: the default config (64 KiB) fits every
      target; sm_86/sm_89 allow at most 99 KiB per CTA, sm_80 163 KiB, sm_90 227 KiB.

Benchmark
    python -m cutematmul.bench --dtypes float16 --kernel sm80

Imports: ``configs.sm80`` (its configuration); the CuTe DSL and ``cuda.bindings``.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import nvvm

from ..configs.sm80 import (  # noqa: F401
    _SMEM_ALIGN, _VEC, _VEC_BYTES, Config, choose_config, chunk_swizzle, supports,
)

Sm80Config = Config  # the name the tests and docs use
_DTYPES = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16}


class Sm80Hgemm:
    """cp.async + ldmatrix + mma.sync GEMM; see the module docstring."""

    def __init__(
        self,
        config: Config,
        dtype: str,
        a_major: str,
        b_major: str,
        align_a: int,
        align_b: int,
        align_c: int,
        num_sms: int,
    ):
        config.validate()
        if dtype not in _DTYPES:
            raise ValueError(f"Sm80Hgemm dtype must be float16 or bfloat16, got {dtype!r}.")
        if a_major not in ("k", "m"):
            raise ValueError(f"Sm80Hgemm a_major must be 'k' or 'm', got {a_major!r}.")
        if b_major not in ("k", "n"):
            raise ValueError(f"Sm80Hgemm b_major must be 'k' or 'n', got {b_major!r}.")
        for name, align in (("align_a", align_a), ("align_b", align_b), ("align_c", align_c)):
            if align < _VEC or align % _VEC:
                raise ValueError(
                    f"Sm80Hgemm {name} must be a multiple of {_VEC} elements (16 bytes), "
                    f"got {align}."
                )
        self.config = config
        self.dtype = _DTYPES[dtype]
        self.a_major = a_major
        self.b_major = b_major
        self.align_a = align_a
        self.align_b = align_b
        self.align_c = align_c
        self.a_mn_major = a_major == "m"
        self.b_mn_major = b_major == "n"

    # ------------------------------------------------------------------------------------------
    # Host side
    # ------------------------------------------------------------------------------------------

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        cfg = self.config
        tiles_m = cute.ceil_div(mC.shape[0], cfg.tile_m)
        tiles_n = cute.ceil_div(mC.shape[1], cfg.tile_n)
        num_ctas = tiles_m * tiles_n * mC.shape[2]
        self.kernel(mA, mB, mC).launch(
            grid=(num_ctas, 1, 1), block=(cfg.threads, 1, 1), stream=stream
        )

    # ------------------------------------------------------------------------------------------
    # Trace-time helpers (plain Python, inlined into the kernel)
    # ------------------------------------------------------------------------------------------

    def _operand_smem(self, base, rows: int, mn_major: bool):
        """Linear and swizzled views of one operand's ring, (rows, tile_k, stages).

        K-major: each row of the tile (tile_k elements) is contiguous.  MN-major: columns of
        up to 64 elements along M/N are contiguous, stacked k by k, then block by block.
        """
        cfg = self.config
        tk, stage = cfg.tile_k, rows * cfg.tile_k
        if mn_major:
            width = min(64, rows)
            layout = cute.make_layout(
                ((width, rows // width), tk, cfg.stages), stride=((1, width * tk), width, stage)
            )
            row_bytes = width * 2
        else:
            layout = cute.make_layout((rows, tk, cfg.stages), stride=(tk, 1, stage))
            row_bytes = tk * 2
        swizzle = chunk_swizzle(row_bytes)
        linear = cute.make_tensor(base, layout)
        swizzled_ptr = cute.recast_ptr(base, swizzle_=cute.make_swizzle(*swizzle))
        swizzled = cute.make_tensor(swizzled_ptr, layout)
        return linear, swizzled, swizzle, cute.cosize(layout)

    def _g2s_partitioner(self, rows_or_cols: int, mn_major: bool):
        """Thread arrangement of the global->shared copy: 16-byte vectors along the unit stride."""
        cfg = self.config
        atom = cute.make_copy_atom(
            cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL),
            self.dtype,
            num_bits_per_copy=128,
        )
        if mn_major:
            along = rows_or_cols // _VEC
            threads = cute.make_layout((along, cfg.threads // along), stride=(1, along))
            values = cute.make_layout((_VEC, 1))
        else:
            along = cfg.tile_k // _VEC
            threads = cute.make_layout((cfg.threads // along, along), stride=(along, 1))
            values = cute.make_layout((1, _VEC))
        return cute.make_tiled_copy_tv(atom, threads, values)

    @staticmethod
    def _clamp(x, lo: int, hi: int):
        return cutlass.min(cutlass.max(x, lo), hi)

    def _byte_counts(self, coords, extents, mn_major: bool, check_k: bool):
        """Bytes inside the problem of each 16-byte vector; ``coords`` is a (vector, i, j) view.

        Along the unit-stride mode a vector may be cut anywhere; along the other mode it is all
        in or all out.  With ``check_k`` False the k-slice is known to be a full one.
        """
        mn_extent, k_extent = extents
        counts = cute.make_rmem_tensor(
            (cute.size(coords, mode=[1]), cute.size(coords, mode=[2])), cutlass.Int32
        )
        for i in range(cute.size(coords, mode=[1])):
            for j in range(cute.size(coords, mode=[2])):
                mn, k = coords[0, i, j]
                if mn_major:
                    inside = self._clamp(mn_extent - mn, 0, _VEC)
                    if check_k:
                        inside = inside * self._clamp(k_extent - k, 0, 1)
                else:
                    inside = self._clamp(mn_extent - mn, 0, 1) * _VEC
                    if check_k:
                        inside = cutlass.min(inside, self._clamp(k_extent - k, 0, _VEC))
                counts[i, j] = inside * (self.dtype.width // 8)
        return counts

    def _issue_g2s(self, src, dst, nbytes, swizzle):
        """cp.async every vector of one k-slice: src/dst are (vector, i, j) views, nbytes (i, j).

        The CuTe copy atom only predicates whole vectors, so the instruction is emitted directly
        with its ``src-size`` operand; the destination swizzle is applied to the address by hand.
        """
        bits, base, shift = swizzle
        mask = ((1 << bits) - 1) << (base + shift)
        period = 1 << (base + shift + bits)  # offsets by whole periods commute with the XOR
        elem_bytes = self.dtype.width // 8
        start = dst.iterator.toint()
        start_swizzled = start ^ ((start & mask) >> shift)
        for i in range(cute.size(src, mode=[1])):
            for j in range(cute.size(src, mode=[2])):
                offset = cute.crd2idx((0, i, j), dst.layout) * elem_bytes
                if offset % period == 0:
                    addr = start_swizzled + offset
                else:
                    addr = start + offset
                    addr = addr ^ ((addr & mask) >> shift)
                smem_ptr = cute.make_ptr(
                    self.dtype, addr, cute.AddressSpace.smem, assumed_align=_VEC_BYTES
                )
                nvvm.cp_async_shared_global(
                    smem_ptr.llvm_ptr,
                    src[None, i, j].iterator.llvm_ptr,
                    _VEC_BYTES,
                    nvvm.LoadCacheModifierKind.CG,
                    cp_size=nbytes[i, j].ir_value(),
                )

    def _load_slice(self, operands, k_slice, stage, tail: bool):
        """Start the copies of k-slice ``k_slice`` of A and B into ring stage ``stage``."""
        for tg, ts, full_bytes, tail_bytes, swizzle in operands:
            self._issue_g2s(
                tg[None, None, None, k_slice],
                ts[None, None, None, stage],
                tail_bytes if tail else full_bytes,
                swizzle,
            )

    def _cta_tile(self, bid, tiles_m, tiles_n):
        """(tile row, tile column, batch) of this CTA under grouped rasterization.

        Linear CTA ids walk ``raster_group`` tile rows down one tile column, then move to the
        next column; the last group may be shorter.
        """
        group = self.config.raster_group
        tiles_mn = tiles_m * tiles_n
        batch = bid // tiles_mn
        t = bid - batch * tiles_mn
        span = tiles_n * group
        first_row = (t // span) * group
        rows = cutlass.min(tiles_m - first_row, group)
        t = t - (t // span) * span
        return first_row + t % rows, t // rows, batch

    # ------------------------------------------------------------------------------------------
    # Device side
    # ------------------------------------------------------------------------------------------

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        cfg = self.config
        dtype = self.dtype
        tm, tn, tk, stages = cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.stages
        k_steps = tk // 16
        tidx, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()

        M, N, _ = mC.shape
        K = mA.shape[1]
        tiles_m, tiles_n = cute.ceil_div(M, tm), cute.ceil_div(N, tn)
        tile_row, tile_col, batch = self._cta_tile(bid, tiles_m, tiles_n)

        # This CTA's view of the operands: (tm, tk, k-slices), (tn, tk, k-slices), (tm, tn),
        # plus matching coordinate tensors for the bounds.
        gA = cute.local_tile(mA[None, None, batch], (tm, tk), (tile_row, None))
        gB = cute.local_tile(mB[None, None, batch], (tn, tk), (tile_col, None))
        gC = cute.local_tile(mC[None, None, batch], (tm, tn), (tile_row, tile_col))
        cA = cute.local_tile(cute.make_identity_tensor((M, K)), (tm, tk), (tile_row, None))
        cB = cute.local_tile(cute.make_identity_tensor((N, K)), (tn, tk), (tile_col, None))
        cC = cute.local_tile(cute.make_identity_tensor((M, N)), (tm, tn), (tile_row, tile_col))
        k_slices = cute.size(gA, mode=[2])

        # Shared memory: the A ring, then the B ring; the C tile reuses the same bytes.
        smem = cutlass.memory.SmemAllocator()
        ring_elems = (tm + tn) * tk * stages
        base = smem.allocate_array(dtype, max(ring_elems, tm * tn), byte_alignment=_SMEM_ALIGN)
        sA_lin, sA, swz_a, a_elems = self._operand_smem(base, tm, self.a_mn_major)
        sB_lin, sB, swz_b, _ = self._operand_smem(base + a_elems, tn, self.b_mn_major)

        # ---- global -> shared: partitions and per-vector byte counts -------------------------
        # Load number j >= 1 fetches k-slice j - 1 and load 0 the last, possibly partial, slice,
        # so only load 0 checks K; the byte counts of the others are computed here once.
        last = k_slices - 1
        operands = []
        for g, c, s_lin, swz, rows, extents, mn_major in (
            (gA, cA, sA_lin, swz_a, tm, (M, K), self.a_mn_major),
            (gB, cB, sB_lin, swz_b, tn, (N, K), self.b_mn_major),
        ):
            thr = self._g2s_partitioner(rows, mn_major).get_slice(tidx)
            coords = thr.partition_S(c)
            full = self._byte_counts(coords[None, None, None, 0], extents, mn_major, False)
            tail = self._byte_counts(coords[None, None, None, last], extents, mn_major, True)
            operands.append((thr.partition_S(g), thr.partition_D(s_lin), full, tail, swz))

        # ---- prologue: fill stages 0 .. stages-2 ------------------------------------------------
        self._load_slice(operands, last, 0, tail=True)
        cute.arch.cp_async_commit_group()
        for s in cutlass.range_constexpr(1, stages - 1):
            if s < k_slices:
                self._load_slice(operands, s - 1, s, tail=False)
            cute.arch.cp_async_commit_group()

        # ---- tensor-core partitions -------------------------------------------------------------
        mma_op = cute.nvgpu.warp.MmaF16BF16Op(dtype, cutlass.Float32, (16, 8, 16))
        # Each warp takes 16 columns of N per repeat so that B also loads with ldmatrix.x4.
        tiled_mma = cute.make_tiled_mma(
            mma_op,
            cute.make_layout((cfg.warps_m, cfg.warps_n, 1)),
            permutation_mnk=(cfg.warps_m * 16, cfg.warps_n * 16, 16),
        )
        thr_mma = tiled_mma.get_slice(tidx)
        rA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA)[None, None, None, 0])
        rB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB)[None, None, None, 0])
        acc = tiled_mma.make_fragment_C(thr_mma.partition_C(gC))
        acc.fill(0.0)

        ldsm_a = cute.make_copy_atom(
            cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=self.a_mn_major, num_matrices=4), dtype
        )
        ldsm_b = cute.make_copy_atom(
            cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=self.b_mn_major, num_matrices=4), dtype
        )
        s2r_a = cute.make_tiled_copy_A(ldsm_a, tiled_mma)
        s2r_b = cute.make_tiled_copy_B(ldsm_b, tiled_mma)
        thr_sa, thr_sb = s2r_a.get_slice(tidx), s2r_b.get_slice(tidx)
        # Shared views (CPY, M or N, k-step, stage) and register views (CPY, M or N, k-step).
        lA_s, lA_r = thr_sa.partition_S(sA), thr_sa.retile(rA)
        lB_s, lB_r = thr_sb.partition_S(sB), thr_sb.retile(rB)

        # ---- main loop --------------------------------------------------------------------------
        # Load number i sits in stage i % stages and is consumed by iteration i.  At k-step 0 an
        # iteration refills the stage freed by the previous one; at its last k-step it waits for
        # load i + 1 and starts reading it, so the fragments of the next k-step are always in
        # flight while the MMAs of this one run.
        read_stage = cutlass.Int32(0)
        write_stage = cutlass.Int32(stages - 1)
        cute.arch.cp_async_wait_group(stages - 2)
        cute.arch.sync_threads()
        cute.copy(s2r_a, lA_s[None, None, 0, 0], lA_r[None, None, 0])
        cute.copy(s2r_b, lB_s[None, None, 0, 0], lB_r[None, None, 0])

        for i in cutlass.range(k_slices):
            for ks in cutlass.range_constexpr(k_steps):
                if cutlass.const_expr(ks == k_steps - 1):
                    read_stage = read_stage + 1
                    if read_stage == stages:
                        read_stage = cutlass.Int32(0)
                    cute.arch.cp_async_wait_group(stages - 2)
                    cute.arch.sync_threads()
                nxt = (ks + 1) % k_steps
                cute.copy(s2r_a, lA_s[None, None, nxt, read_stage], lA_r[None, None, nxt])
                cute.copy(s2r_b, lB_s[None, None, nxt, read_stage], lB_r[None, None, nxt])
                if cutlass.const_expr(ks == 0):
                    # Load number i + stages - 1, i.e. k-slice i + stages - 2.
                    if i + (stages - 1) < k_slices:
                        self._load_slice(operands, i + (stages - 2), write_stage, tail=False)
                    cute.arch.cp_async_commit_group()
                    write_stage = write_stage + 1
                    if write_stage == stages:
                        write_stage = cutlass.Int32(0)
                cute.gemm(tiled_mma, acc, rA[None, None, ks], rB[None, None, ks], acc)

        # ---- epilogue: registers -> shared (swizzled) -> global ----------------------------------
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        c_swizzle = cute.make_swizzle(*chunk_swizzle(tn * 2))
        sC = cute.make_tensor(
            cute.recast_ptr(base, swizzle_=c_swizzle), cute.make_layout((tm, tn), stride=(tn, 1))
        )
        out = cute.make_rmem_tensor_like(acc, dtype)
        out.store(acc.load().to(dtype))
        cute.autovec_copy(out, thr_mma.partition_C(sC))
        cute.arch.sync_threads()

        vec_atom = cute.make_copy_atom(
            cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=128
        )
        per_row = tn // _VEC
        c_copy = cute.make_tiled_copy_tv(
            vec_atom,
            cute.make_layout((cfg.threads // per_row, per_row), stride=(per_row, 1)),
            cute.make_layout((1, _VEC)),
        )
        thr_c = c_copy.get_slice(tidx)
        tCs, tCg, tCc = thr_c.partition_S(sC), thr_c.partition_D(gC), thr_c.partition_D(cC)
        staged = cute.make_rmem_tensor_like(tCs)
        cute.copy(vec_atom, tCs, staged)
        for i in cutlass.range_constexpr(cute.size(tCg, mode=[1])):
            for j in cutlass.range_constexpr(cute.size(tCg, mode=[2])):
                row, col = tCc[0, i, j]
                if row < M:
                    if col + _VEC <= N:
                        cute.copy(vec_atom, staged[None, i, j], tCg[None, i, j])
                    elif col < N:
                        dst, src = tCg[None, i, j], staged[None, i, j]
                        for e in cutlass.range_constexpr(_VEC):
                            if col + e < N:
                                dst[e] = src[e]


Kernel = Sm80Hgemm  # the name the registry (dispatch.FAMILIES) looks up
