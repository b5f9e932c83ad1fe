"""The staged row-streaming kernel: fp32 products of up to 32 rows over a K-major B (``x @
w.T`` with a small batch of rows), true fp32 FMA, sm_80+.  A member of the SIMT family: its
scheduler and interface are the row-streaming kernel's (``kernels/simt_gemv.py``); it takes
such products from 3 rows of a K-major A and from 1 of an M-major one
(``configs.simt.staged_rows``, with the H100 figures it was chosen on).

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] in fp32 with ``fma.rn.f32`` for fp32 A and B,
    B K-major, A K- or M-major, with the family's interface (any M, N >= 1, K >= 0, batch
    strides may be 0, split-K partials when C holds ``splits`` matrices per batch; C is fp32
    either way).  Such a product is bound by reading B once: each of its elements meets only
    M values of A.  The tiled SGEMM reads a K-major B 4 bytes per copy and transposes it into
    shared memory for an outer product, and its one-warp 32 x 32 tile, the fastest of its tiles
    there, ran 0.72-0.86x cuBLAS SGEMM (``configs.simt._K_MAJOR_B_TILES``); the FMA
    row-streaming kernel keeps each lane on its own run of K, so every lane needs its own
    values of A, and from a few rows those loads bound it.  This kernel ran such products
    1.1-1.9x faster than the 32 x 32 tile and 0.86-2.6x cuBLAS SGEMM (H100, 2026-12-07;
    docs/performance.md, 66th section).

How
    A CTA of eight warps computes ``tile_m`` (16 or 32) rows by ``tile_n`` (64-256) columns of C
    over its split's run of K, in stages of ``STAGED_K`` (64) k:

    * Global to shared memory: ``stages``-deep ring of ``cp.async``, one commit group and one
      barrier per stage.  Both operands stay K-major in shared memory, so nothing is
      transposed: B's and a K-major A's rows are copied in 16-byte vectors where their rows
      are 16-byte aligned (``cp.async.cg``, the source byte count cut at K), else element by
      element (``cp.async.ca``, 4 bytes); an M-major A element by element along M.  Sixteen
      threads copy one row's 256 bytes of a stage.
    * B's shared rows are 16-byte chunks XOR-swizzled by the row's low three bits, so the
      128-bit reads of one chunk from 8 consecutive rows (a quarter warp) hit 8 different
      bank groups; A's rows are padded by 4 floats (16-byte aligned, and its element copies
      from an M-major A land 8 banks apart).
    * Shared memory to registers: lane i of every warp owns columns i, i + 32, ... of the
      CTA's (``tile_n / 32`` of them) and the warps take the stage's 16 vectors of K in turn
      (warp w: vectors w and w + 8).  For one vector a lane loads its columns' 4 values of B
      (one 128-bit load each, conflict-free) and, row by row, the row's 4 values of A (one
      128-bit load, the same address in every lane: a broadcast), then multiplies them into
      its ``tile_m x tile_n / 32`` sums: 16-32 FMAs per shared load.
    * The warps' partial sums meet in shared memory (over the stages' space) and are added
      in warp order, then stored to C column-contiguous, inside M and N.

    Rows of A past M and columns of B past N are zero-filled (addresses clamped inside the
    arrays, no bytes read); values past the split's end of K likewise.  With ``Config.pdl``
    (sm_90 and newer) the kernel is a programmatic dependent launch, as the other
    row-streaming kernels are (``simt_gemv.cta_work``).

Constraints
    fp32 only; B K-major, A K- or M-major, any alignment (16-byte vectors where ``align_*`` is
    4 elements).  ``tile_m`` of ``configs.simt.STAGED_ROWS`` (M past it: several row tiles,
    neighbouring CTAs reading the same B from L2), ``tile_n`` of ``STAGED_COLS``, 256 threads,
    at most 128 sums per thread; K splits in runs of the family's granule (128: two stages).
    See ``configs/simt.Config`` (``gemv`` and ``staged``).

Benchmark
    python -m cutematmul.bench --dtypes float32 --layouts nt --shapes 27x2288x3944,16x8192x8192
    python tools/sweep_schedule.py fp32 --layout nt --shapes 25x4760x5872,20x3000x4000

Imports: ``configs.simt`` (its configuration), ``simt_gemv`` (the checks and launch the
row-streaming kernels share, and the CTA's work); the CuTe DSL.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from ..configs.simt import _GEMV_GRANULE, _VEC, STAGED_A_PAD, STAGED_K, Config
from .simt_gemv import RowStreaming, cta_work

#: 128-bit vectors of K in one stage's row, and the floats of A's padded shared rows.
_VECS = STAGED_K // _VEC
_A_ROW = STAGED_K + STAGED_A_PAD
#: B's shared rows are XOR-swizzled in 16-byte chunks by the row's low bits: 8 rows, whose
#: chunks then fill 8 different 16-byte bank groups (a quarter warp's 128-bit loads).
_SWIZZLE = 7
assert _GEMV_GRANULE % STAGED_K == 0


class SimtGemvStaged(RowStreaming):
    """One member of the family: a ``gemv`` + ``staged`` config, the operand majors (B
    K-major) and alignments."""

    ELEMENTS = {"float32": cutlass.Float32}
    # Shared memory holds both operands' stages; A's and B's lines are each read once.
    SMEM_CARVEOUT = 100

    def __init__(self, *args):
        super().__init__(*args)
        if self.b_major != "k":
            raise ValueError(f"SimtGemvStaged reads a K-major B, got b_major={self.b_major!r}.")
        self._a_vec = self.a_major == "k" and self.align_a >= _VEC
        self._b_vec = self.align_b >= _VEC

    def refuses(self, config: Config, dtype: str) -> str | None:
        if not (config.gemv and config.staged):
            return f"SimtGemvStaged runs gemv staged configurations, got {config.name}."
        if dtype not in self.ELEMENTS:
            return f"SimtGemvStaged computes float32, got {dtype}."
        return None

    def _slot(self, stage):
        """(A's, B's) first float of ring slot ``stage`` in the CTA's shared memory: every
        slot's A (``tile_m`` rows of ``_A_ROW``), then every slot's B (``tile_n`` rows of
        ``STAGED_K``)."""
        cfg = self.config
        a_ring = cfg.stages * cfg.tile_m * _A_ROW
        return stage * (cfg.tile_m * _A_ROW), a_ring + stage * (cfg.tile_n * STAGED_K)

    # ---------------------------------------------------------------- device-side helpers

    @cute.jit
    def _copy16(self, dst: cute.Pointer, src: cute.Pointer, nbytes: cutlass.Int32):
        """One 16-byte ``cp.async`` of which the first ``nbytes`` (0-16) are read, the rest
        zero-filled."""
        cute.arch.inline_ptx("cp.async.cg.shared.global [{$r0}], [{$r1}], 16, {$r2};",
                             read_only_args=[dst, src, nbytes])

    @cute.jit
    def _copy4(self, dst: cute.Pointer, src: cute.Pointer, nbytes: cutlass.Int32):
        """One 4-byte ``cp.async`` (``nbytes`` 4, or 0: zero-filled, nothing read)."""
        cute.arch.inline_ptx("cp.async.ca.shared.global [{$r0}], [{$r1}], 4, {$r2};",
                             read_only_args=[dst, src, nbytes])

    @cute.jit
    def _copy_rows(self, g: cute.Tensor, s: cute.Tensor, base: cutlass.Int32,
                   rows: cutlass.Constexpr, pitch: cutlass.Constexpr,
                   swizzled: cutlass.Constexpr, vectorized: cutlass.Constexpr,
                   first: cutlass.Int32, size: cutlass.Int32, k0: cutlass.Int32,
                   k_hi: cutlass.Int32, tid: cutlass.Int32):
        """Issue this thread's copies of a K-major operand's stage: ``rows`` rows from
        ``first`` (those at or past ``size`` zero-filled), K from ``k0`` (zero at and past
        ``k_hi``), into ``s`` from element ``base``, rows ``pitch`` floats apart, chunks
        swizzled where ``swizzled``.  Sixteen threads per row, one 16-byte chunk each."""
        threads = self.config.threads
        # The last 16-byte aligned k of the split: where a vector past k_hi is addressed.
        k_last = ((k_hi - 1) // _VEC) * _VEC
        for i in cutlass.range_constexpr(rows * _VECS // threads):
            slot = tid + i * threads
            row = slot // _VECS
            chunk = slot - row * _VECS
            r = first + row
            inside = r < size
            r = cutlass.min(r, size - 1)
            at = chunk
            if cutlass.const_expr(swizzled):
                at = chunk ^ (row & _SWIZZLE)
            dst = s.iterator + (base + row * pitch + at * _VEC)
            k = k0 + chunk * _VEC
            if cutlass.const_expr(vectorized):
                nbytes = cutlass.min(cutlass.max(k_hi - k, 0), _VEC) * 4
                src = cute.domain_offset((r, cutlass.min(k, k_last)), g).iterator
                self._copy16(dst, src, cutlass.select_(inside, nbytes, cutlass.Int32(0)))
            else:
                for e in cutlass.range_constexpr(_VEC):
                    ke = k + e
                    ok = inside & (ke < k_hi)
                    src = cute.domain_offset((r, cutlass.min(ke, k_hi - 1)), g).iterator
                    self._copy4(dst + e, src, cutlass.select_(ok, cutlass.Int32(4),
                                                              cutlass.Int32(0)))

    @cute.jit
    def _copy_m_major(self, g: cute.Tensor, s: cute.Tensor, base: cutlass.Int32,
                      first: cutlass.Int32, size: cutlass.Int32, k0: cutlass.Int32,
                      k_hi: cutlass.Int32, tid: cutlass.Int32):
        """Issue this thread's 4-byte copies of an M-major A's stage into its K-major shared
        rows: consecutive threads take consecutive rows (one load instruction of a warp reads
        a run along M)."""
        rows, threads = self.config.tile_m, self.config.threads
        for i in cutlass.range_constexpr(rows * STAGED_K // threads):
            slot = tid + i * threads
            kk = slot // rows
            row = slot - kk * rows
            r = first + row
            k = k0 + kk
            ok = (r < size) & (k < k_hi)
            src = cute.domain_offset((cutlass.min(r, size - 1), cutlass.min(k, k_hi - 1)),
                                     g).iterator
            self._copy4(s.iterator + (base + row * _A_ROW + kk), src,
                        cutlass.select_(ok, cutlass.Int32(4), cutlass.Int32(0)))

    @cute.jit
    def _issue(self, gA: cute.Tensor, gB: cute.Tensor, s: cute.Tensor, stage: cutlass.Int32,
               m0: cutlass.Int32, n0: cutlass.Int32, m_size: cutlass.Int32,
               n_size: cutlass.Int32, k0: cutlass.Int32, k_hi: cutlass.Int32,
               tid: cutlass.Int32):
        """This thread's copies of both operands' stage at ``k0`` into ring slot ``stage``
        (no commit)."""
        cfg = self.config
        rows, cols = cfg.tile_m, cfg.tile_n
        a_base, b_base = self._slot(stage)
        self._copy_rows(gB, s, b_base, cols, STAGED_K, True, self._b_vec, n0, n_size, k0,
                        k_hi, tid)
        if cutlass.const_expr(self.a_major == "k"):
            self._copy_rows(gA, s, a_base, rows, _A_ROW, False, self._a_vec, m0, m_size, k0,
                            k_hi, tid)
        else:
            self._copy_m_major(gA, s, a_base, m0, m_size, k0, k_hi, tid)

    @cute.jit
    def _multiply(self, s: cute.Tensor, stage: cutlass.Int32, acc: cute.Tensor,
                  b: cute.Tensor, a: cute.Tensor, warp: cutlass.Int32, lane: cutlass.Int32):
        """acc[r, j] += this warp's vectors of K of ring slot ``stage``: A's row r against
        B's column lane + 32 j."""
        cfg = self.config
        rows, cols = cfg.tile_m, cfg.tile_n
        warps = cfg.threads // 32
        a_base, b_base = self._slot(stage)
        # ``s`` as 128-bit vectors: (4 floats, vectors).
        v = cute.make_tensor(s.iterator, cute.make_layout((_VEC, cute.size(s) // _VEC),
                                                          stride=(1, _VEC)))
        for q in cutlass.range_constexpr(_VECS // warps):
            chunk = warp + q * warps
            # Column lane + 32 j's row has the lane's low bits: the same chunk for every j.
            at = chunk ^ (lane & _SWIZZLE)
            for j in cutlass.range_constexpr(cols // 32):
                row = lane + 32 * j
                b[None, j].store(v[None, (b_base + row * STAGED_K) // _VEC + at].load())
            for r in cutlass.range_constexpr(rows):
                a.store(v[None, (a_base + r * _A_ROW) // _VEC + chunk].load())
                for e in cutlass.range_constexpr(_VEC):
                    for j in cutlass.range_constexpr(cols // 32):
                        acc[r, j] = cute.math.fma(a[e], b[e, j], acc[r, j])

    # ---------------------------------------------------------------- the kernel

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiles_n: cutlass.Int32):
        cfg = self.config
        rows, cols, stages, threads = cfg.tile_m, cfg.tile_n, cfg.stages, cfg.threads
        warps = threads // 32
        assert rows * _VECS % threads == 0 and rows * STAGED_K % threads == 0
        tid, _, _ = cute.arch.thread_idx()
        warp = tid // 32
        lane = tid - warp * 32
        m_size, n_size = mC.shape[0], mC.shape[1]
        # (With PDL, cta_work waits for the kernel ahead before any global access.)
        m0, n0, k_lo, k_hi, _, gA, gB, gC = cta_work(mA, mB, mC, rows, cols, tiles_n, cfg.pdl)

        smem = cutlass.memory.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(cfg.smem_bytes() // 4),
                                 byte_alignment=16)
        acc = cute.make_rmem_tensor(cute.make_layout((rows, cols // 32), stride=(cols // 32, 1)),
                                    cutlass.Float32)
        acc.fill(0.0)
        b = cute.make_rmem_tensor(cute.make_layout((_VEC, cols // 32), stride=(1, _VEC)),
                                  cutlass.Float32)
        a = cute.make_rmem_tensor(cute.make_layout((_VEC,)), cutlass.Float32)

        tiles = cute.ceil_div(cutlass.max(k_hi - k_lo, 0), STAGED_K)
        # Prologue: the first stages - 1 stages, one commit group each (empty past the split).
        for p in cutlass.range_constexpr(stages - 1):
            if p < tiles:
                self._issue(gA, gB, s, p, m0, n0, m_size, n_size, k_lo + p * STAGED_K, k_hi,
                            tid)
            cute.arch.cp_async_commit_group()
        # The slots of stage t and t + stages - 1.  (The second as its own counter: derived
        # from the first inside the loop, ptxas spilled 48 bytes at 32 x 128.)
        read = cutlass.Int32(0)
        write = cutlass.Int32(stages - 1)
        for t in range(tiles):
            # Stage t has landed (this thread's copies; the barrier: everyone's), and every
            # warp is done with stage t - 1, whose slot the next copies overwrite.
            cute.arch.cp_async_wait_group(stages - 2)
            cute.arch.barrier()
            if t + stages - 1 < tiles:
                self._issue(gA, gB, s, write, m0, n0, m_size, n_size,
                            k_lo + (t + stages - 1) * STAGED_K, k_hi, tid)
            cute.arch.cp_async_commit_group()
            self._multiply(s, read, acc, b, a, warp, lane)
            read = read + 1
            if read == stages:
                read = cutlass.Int32(0)
            write = write + 1
            if write == stages:
                write = cutlass.Int32(0)
        cute.arch.cp_async_wait_group(0)

        # Every warp's (rows, cols) sums into shared memory (over the ring, once every warp is
        # done reading it), then each output the sum of the warps' in warp order.
        cute.arch.barrier()
        for r in cutlass.range_constexpr(rows):
            for j in cutlass.range_constexpr(cols // 32):
                s[(warp * rows + r) * cols + lane + 32 * j] = acc[r, j]
        cute.arch.barrier()
        for i in cutlass.range_constexpr(rows * cols // threads):
            out = tid + i * threads
            r = out // cols
            c = out - r * cols
            total = s[r * cols + c]
            for w in cutlass.range_constexpr(1, warps):
                total = total + s[(w * rows + r) * cols + c]
            if (m0 + r < m_size) & (n0 + c < n_size):
                gC[m0 + r, n0 + c] = total
