"""The row-streaming kernel on tensor cores: 16-bit products of 9 to 32 rows that read B as it
is, of any alignment, through ``mma.sync`` (sm_80+).  A member of the SIMT family (its
scheduler and interface are the row-streaming kernel's, ``kernels/simt_gemv.py``); its math
alone is on tensor cores.

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] for fp16/bf16 A and B, fp32 sums, with the
    family's interface (any M, N >= 1, K >= 1, batch strides may be 0, split-K partials when C
    holds ``splits`` matrices per batch).  C is fp32 partial sums where ``Config.partials`` (a
    split or C^T, added by ``kernels/splitk_reduce.py``), else the inputs' dtype.  The FMA
    kernel keeps one fp32 sum per row and column in registers: past 8 rows it ran out of them
    and of issue slots (16 rows: 0.5x the sm90 route that copies B first).  Here the sums live
    in MMA accumulators, a quarter of the registers per output.

How
    The product is computed as C^T = B^T A^T: N is the MMA's M (16 per ``mma.sync.m16n8k16``)
    and the CTA's rows (``Config.tile_m``, 16 or 32) its N (8 per MMA).  Each warp owns
    ``_WARP_N`` columns of C (two MMA rows) over the split's run of K, ``_UNROLL`` steps of 16
    per iteration, every load of an iteration issued before its MMAs.  Each thread loads its
    own fragment values of B^T straight from global memory, one 2-byte load each (no TMA, no
    shared memory: B's rows may have any length and base), at the coordinates the MMA's own
    partition of an identity tensor gives, so no register order is written down here.  A's
    few rows are read the same way; the CTA's warps read the same values of A, from L1.
    Rows of A past M and columns of B past N are read at M - 1 and N - 1 (never stored); the
    last, partial iteration along K is predicated.  C is stored element by element.

    With ``Config.pdl`` (sm_90 and newer) the kernel is a programmatic dependent launch, as
    the FMA kernel is.

Constraints
    fp16 or bf16 inputs, A K- or M-major, B K- or N-major, any alignment; ``tile_m`` 16 or 32
    (M past it: several row tiles, neighbouring CTAs), ``tile_n`` 128 over 4 warps; K splits
    in runs of the family's granule (128).  See ``configs/simt.Config`` (``gemv`` and
    ``mma``).

Benchmark
    python -m cutematmul.bench --dtypes bf16,fp16 --layouts nn,tn,nt --shapes 24x50257x769,16x11007x4096
    python -m cutematmul.bench --classes skinnyOdd

Imports: ``configs.simt`` (its configuration); the CuTe DSL and ``cuda.bindings``.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute

from ..configs.simt import _GEMV_GRANULE as _GRANULE, MMA_WARP_N as _WARP_N, Config, supports

#: K of one ``mma.sync.m16n8k16``, and the MMA steps of one loop iteration (their loads issue
#: together: 32 2-byte loads of B per thread in flight).
_STEP_K = 16
_UNROLL = 2
#: The kernel uses no shared memory: all of the unified L1 / shared memory is L1, for the rows
#: of A every warp re-reads.  Passed explicitly so compiling needs no device query.
_SMEM_CARVEOUT = 0
_ELEMENT = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16}


class SimtGemvMma:
    """One member of the family: a ``gemv`` + ``mma`` config, the operand majors and
    alignments (any: every load is one element)."""

    def __init__(self, config: Config, dtype: str, a_major: str, b_major: str, align_a: int,
                 align_b: int, align_c: int, num_sms: int):
        config.validate()
        if not (config.gemv and config.mma):
            raise ValueError(f"SimtGemvMma runs gemv mma configurations, got {config.name}.")
        if dtype not in _ELEMENT:
            raise ValueError(f"SimtGemvMma computes float16 or bfloat16, got {dtype}.")
        reason = supports(1, 1, 1, 1, dtype, a_major, b_major, align_a, align_b, align_c)
        if reason is not None:
            raise ValueError(reason)
        self.config = config
        self.dtype = _ELEMENT[dtype]
        self.c_dtype = cutlass.Float32 if config.partials else self.dtype
        self.a_major, self.b_major = a_major, b_major
        self.align_a, self.align_b, self.align_c = align_a, align_b, align_c

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        cfg = self.config
        tiles_m = cute.ceil_div(mC.shape[0], cfg.tile_m)
        tiles_n = cute.ceil_div(mC.shape[1], cfg.tile_n)
        self.kernel(mA, mB, mC, tiles_n).launch(
            grid=[tiles_m * tiles_n * mC.shape[2], 1, 1],
            block=[cfg.threads, 1, 1],
            stream=stream,
            min_blocks_per_mp=cfg.min_blocks,
            preferred_smem_carveout=_SMEM_CARVEOUT,
            use_pdl=cfg.pdl,
        )

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiles_n: cutlass.Int32):
        cfg = self.config
        rows = cfg.tile_m
        tid, _, _ = cute.arch.thread_idx()
        pid, _, _ = cute.arch.block_idx()
        warp = tid // 32
        lane = tid - warp * 32
        m_size, n_size, k_size = mC.shape[0], mC.shape[1], mA.shape[1]
        tiles_m = cute.ceil_div(m_size, rows)
        per_batch = tiles_m * tiles_n
        batch_split = pid // per_batch
        rest = pid - batch_split * per_batch
        # The row tiles of one block of columns are neighbours: they read the same run of B,
        # all but the first from L2.
        tile_col = rest // tiles_m
        tile_row = rest - tile_col * tiles_m
        splits = mC.shape[2] // mA.shape[2]
        batch = batch_split // splits
        split = batch_split - batch * splits
        per_split = cute.ceil_div(cute.ceil_div(k_size, _GRANULE), splits) * _GRANULE
        k_lo = split * per_split
        k_hi = cutlass.min(k_size, k_lo + per_split)
        m0 = tile_row * rows
        n0 = tile_col * cfg.tile_n + warp * _WARP_N

        if cutlass.const_expr(cfg.pdl):
            # As the FMA kernel: no global access before the kernel ahead on the stream has
            # finished; the next one (the split-K reduction) may launch at once.
            cute.arch.griddepcontrol_wait()
            cute.arch.griddepcontrol_launch_dependents()
        gA = mA[None, None, batch]  # (M, K)
        gB = mB[None, None, batch]  # (N, K)
        gC = mC[None, None, batch_split]  # (M, N)

        op = cute.nvgpu.warp.MmaF16BF16Op(self.dtype, cutlass.Float32, (16, 8, _STEP_K))
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout((1, 1, 1)))
        thr = tiled_mma.get_slice(lane)
        # This thread's fragment coordinates: (n, k) of B^T (the MMA's A), (m, k) of A (the
        # MMA's B), (n, m) of C^T.
        cB = thr.partition_A(cute.make_identity_tensor((_WARP_N, _STEP_K)))
        cA = thr.partition_B(cute.make_identity_tensor((rows, _STEP_K)))
        cC = thr.partition_C(cute.make_identity_tensor((_WARP_N, rows)))
        frag_b = [tiled_mma.make_fragment_A(tiled_mma.partition_shape_A((_WARP_N, _STEP_K)))
                  for _ in range(_UNROLL)]
        frag_a = [tiled_mma.make_fragment_B(tiled_mma.partition_shape_B((rows, _STEP_K)))
                  for _ in range(_UNROLL)]
        acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((_WARP_N, rows)))
        acc.fill(0.0)
        # The rows of B and A this thread reads, clamped inside the arrays (columns past N
        # and rows past M are computed, never stored).
        b_rows = [gB[cutlass.min(n0 + cB[i][0], n_size - 1), None]
                  for i in range(cute.size(frag_b[0]))]
        a_rows = [gA[cutlass.min(m0 + cA[i][0], m_size - 1), None]
                  for i in range(cute.size(frag_a[0]))]

        span = _STEP_K * _UNROLL
        iters = cutlass.max(k_hi - k_lo, 0) // span
        for it in range(iters):
            k0 = k_lo + it * span
            for u in cutlass.range_constexpr(_UNROLL):
                self._load(b_rows, cB, frag_b[u], k0 + u * _STEP_K, k_hi, False)
                self._load(a_rows, cA, frag_a[u], k0 + u * _STEP_K, k_hi, False)
            for u in cutlass.range_constexpr(_UNROLL):
                cute.gemm(tiled_mma, acc, frag_b[u], frag_a[u], acc)
        k_rest = k_lo + iters * span
        if k_rest < k_hi:  # the last < ``span`` k of the split, zero past its end
            for u in cutlass.range_constexpr(_UNROLL):
                self._load(b_rows, cB, frag_b[u], k_rest + u * _STEP_K, k_hi, True)
                self._load(a_rows, cA, frag_a[u], k_rest + u * _STEP_K, k_hi, True)
            for u in cutlass.range_constexpr(_UNROLL):
                cute.gemm(tiled_mma, acc, frag_b[u], frag_a[u], acc)

        for i in cutlass.range_constexpr(cute.size(acc)):
            n, m = cC[i]
            if (n0 + n < n_size) & (m0 + m < m_size):
                gC[m0 + m, n0 + n] = acc[i].to(self.c_dtype)

    @cute.jit
    def _load(self, lines: list, coords: cute.Tensor, frag: cute.Tensor, k0: cutlass.Int32,
              k_hi: cutlass.Int32, predicated: cutlass.Constexpr):
        """frag[i] = lines[i][k0 + k_i], k_i the K coordinate of fragment value i, one 2-byte
        load each; ``predicated``: values at or past ``k_hi`` read as 0 (addressed at
        ``k_hi - 1``, inside the split)."""
        for i in cutlass.range_constexpr(cute.size(frag)):
            at = k0 + coords[i][1]
            if cutlass.const_expr(predicated):
                v = lines[i][cutlass.min(at, k_hi - 1)]
                frag[i] = cutlass.select_(at < k_hi, v, self.dtype(0.0))
            else:
                frag[i] = lines[i][at]
