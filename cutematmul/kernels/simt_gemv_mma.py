"""The row-streaming kernel on tensor cores: 16-bit products of up to 128 rows that read B as it
is, of any alignment, and sum on ``mma.sync`` (sm_80+).  A member of the SIMT family: its
scheduler and interface are the row-streaming kernel's (``kernels/simt_gemv.py``); its math
alone is on tensor cores.

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] for fp16/bf16 A and B, fp32 sums, with the
    family's interface (any M, N >= 1, K >= 1, batch strides may be 0, split-K partials when C
    holds ``splits`` matrices per batch).  C is fp32 partial sums where ``Config.partials`` (a
    split or C^T, added by ``kernels/splitk_reduce.py``), else the inputs' dtype.  The FMA
    kernel keeps one fp32 sum per row and column in registers: past 8 rows it ran out of them
    and of issue slots (16 rows: 0.5x the sm90 route that copies B first).  Here the sums live
    in MMA accumulators.

How
    The product is computed as C^T = B^T A^T: N is the MMA's M (16 per ``mma.sync.m16n8k16``)
    and the CTA's rows (``Config.tile_m``: 8 to 128) its N.  A CTA of eight warps (sixteen at
    128 rows: two rows of eight, each over 64 of the CTA's rows, so that a thread holds a
    64-row CTA's accumulators) takes 128 columns of C over its split's run of K, in chunks of
    ``_CHUNK_K``:

    * Global to registers: B's rows may have any length and base, so neither TMA nor 16-byte
      ``cp.async`` can read them; each thread loads pairs of neighbouring elements along the
      operand's unit stride with 2-byte loads, a warp's 32 lanes on 64 consecutive elements
      (one or two 128-byte lines per load instruction).  A's few rows are read the same way.
      The next chunk's loads are issued before the MMAs of this one, so they are in flight
      while it computes, and the CTA asks L2 for B's lines ``_PREFETCH`` chunks further on
      (``prefetch.global.L2``: more bytes in flight than registers could hold).
    * Registers to shared memory, a pair per 32-bit store, in the operand's own major,
      16-byte chunks XOR-swizzled (``configs.sm80.chunk_swizzle``); two stages, one barrier
      per chunk.  Only the CTA of the last columns clamps B's columns (see below): the
      others' loads of one line share an address but for constants.  The whole chunks run
      in a loop of unpredicated loads; a split's last, partial chunk after it.
    * ``ldmatrix`` (transposing for an N-major B or an M-major A) into the MMA's fragments.

    Columns of B past N and rows of A past M are read at N - 1 and M - 1 (computed, never
    stored); values past the split's end of K are zero (the last chunk's loads are
    predicated).  C is stored element by element from the accumulators.

    With ``Config.pdl`` (sm_90 and newer) the kernel is a programmatic dependent launch, as
    the FMA kernel is.

Constraints
    fp16 or bf16 inputs, A K- or M-major, B K- or N-major, any alignment; ``tile_m`` of
    ``configs.simt.MMA_ROWS`` (M past it: several row tiles, neighbouring CTAs), ``tile_n``
    128 over 256 threads, 512 at 128 rows (``configs.simt._MMA_THREADS``; one MMA row of 16
    columns per warp); K splits in runs of the
    family's granule (128: four chunks).  See ``configs/simt.Config`` (``gemv`` and ``mma``).

Benchmark
    python -m cutematmul.bench --dtypes bf16,fp16 --layouts nn,tn,nt
        --shapes 24x50257x769,16x11007x4096
    python -m cutematmul.bench --classes skinnyOdd

Imports: ``configs.simt`` (its configuration), ``configs.sm80`` (the shared-memory swizzle of
``ldmatrix`` reads), ``simt_gemv`` (the checks and launch both row-streaming kernels share, and
the CTA's work, as the FMA kernel divides it); the CuTe DSL.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm

from ..configs.simt import _GEMV_GRANULE, MMA_WARP_N, Config
from ..configs.sm80 import _SMEM_ALIGN, chunk_swizzle
from .simt_gemv import RowStreaming, cta_work

#: K of one chunk (a shared-memory stage); the family's split granule is a multiple of it.
_CHUNK_K = 32
_STAGES = 2
#: K of one ``mma.sync.m16n8k16``.
_STEP_K = 16
#: Elements one thread loads and stores together (neighbours along the unit stride).
_PAIR = 2
#: Chunks of B ahead of the loads that the CTA asks L2 to fetch (``prefetch.global.L2``, no
#: registers held): the loads in flight hold only ~16 KB per SM, fewer than device memory's
#: latency needs at full bandwidth.  Not timed without it (the kernel's figures,
#: ``configs.simt.HALF_FMA_MAX_M``, are with it).
_PREFETCH = 2
assert _GEMV_GRANULE % _CHUNK_K == 0


class SimtGemvMma(RowStreaming):
    """One member of the family: a ``gemv`` + ``mma`` config, the operand majors and
    alignments (any: every global load is one element)."""

    ELEMENTS = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16}
    # Shared memory holds both operands' stages; what is left of the unified L1 is little
    # used (A's rows are read once per chunk).
    SMEM_CARVEOUT = 100

    def __init__(self, *args):
        super().__init__(*args)
        # Shared tiles in the operands' own majors: B^T is (N, K) of the MMA's A, A (M, K) of
        # its B; an N-major B and an M-major A are read by transposing ldmatrix.
        self.b_mn_major = self.b_major == "n"
        self.a_mn_major = self.a_major == "m"

    def refuses(self, config: Config, dtype: str) -> str | None:
        if not (config.gemv and config.mma):
            return f"SimtGemvMma runs gemv mma configurations, got {config.name}."
        if dtype not in self.ELEMENTS:
            return f"SimtGemvMma computes float16 or bfloat16, got {dtype}."
        return None

    # ---------------------------------------------------------------- trace-time helpers

    def _smem_tile(self, base, rows: int, mn_major: bool):
        """A swizzled (rows, _CHUNK_K, _STAGES) tile at ``base``, as elements (what ldmatrix
        reads) and as 32-bit words (pairs of elements along the unit stride: what the
        threads store).  K-major: each row's chunk of K is contiguous; MN-major: runs of up
        to 64 rows are, stacked k by k, then run by run.  The swizzle acts on byte addresses,
        so both views place every byte alike (each is made from the swizzled pointer:
        ``cute.recast_tensor`` of a swizzled tensor drops the swizzle, DSL 4.8.1)."""
        width = min(64, rows) if mn_major else _CHUNK_K  # elements of one contiguous line
        swizzle = cute.make_swizzle(*chunk_swizzle(width * 2))
        views = []
        for dtype, per in ((self.dtype, 1), (cutlass.Int32, _PAIR)):
            if mn_major:
                layout = cute.make_layout(
                    ((width // per, rows // width), _CHUNK_K, _STAGES),
                    stride=((1, width * _CHUNK_K // per), width // per, rows * _CHUNK_K // per))
            else:
                layout = cute.make_layout((rows, _CHUNK_K // per, _STAGES),
                                          stride=(_CHUNK_K // per, 1, rows * _CHUNK_K // per))
            ptr = cute.recast_ptr(base, swizzle_=swizzle, dtype=dtype)
            views.append(cute.make_tensor(ptr, layout))
        return views

    @staticmethod
    def _pairs(rows: int, mn_major: bool, threads: int):
        """How this operand's chunk is spread over the threads: (pairs of one line that
        neighbouring lanes take, runs of them one thread takes in its line, lines per pass,
        passes).  A line is a run along the unit stride: a k-row of an MN-major tile (``rows``
        elements), a row of a K-major one (``_CHUNK_K``).  A warp's lanes take 32 neighbouring
        pairs (fewer where the line is shorter) and a thread the same lane's pair in each run
        of 64 elements of its line, so its loads of a line share one address but for
        constants."""
        line = rows if mn_major else _CHUNK_K
        per_line = min(32, line // _PAIR)
        runs = line // _PAIR // per_line
        lines_per_pass = threads // per_line
        lines = _CHUNK_K if mn_major else rows
        return per_line, runs, lines_per_pass, max(1, lines // lines_per_pass)

    @staticmethod
    def _idle(rows: int, mn_major: bool, threads: int) -> bool:
        """Whether some threads have no pair of this operand (a chunk of fewer pairs than
        threads: A of 8 rows); they skip its loads and stores."""
        line = rows if mn_major else _CHUNK_K
        lines = _CHUNK_K if mn_major else rows
        return line // _PAIR * lines < threads

    # ---------------------------------------------------------------- device-side helpers

    @cute.jit
    def _fetch(self, g: cute.Tensor, regs: cute.Tensor, first: cutlass.Int32, size: cutlass.Int32,
               rows: cutlass.Constexpr, mn_major: cutlass.Constexpr, tid: cutlass.Int32,
               k0: cutlass.Int32, k_hi: cutlass.Int32, predicated: cutlass.Constexpr,
               clamped: cutlass.Constexpr):
        """regs[e, run, j] = g[row, k] for this thread's pairs of the chunk at ``k0``: ``rows``
        rows from ``first`` (with ``clamped``, rows past ``size`` read at ``size`` - 1; else
        all lie inside, and a line's loads differ by constants), K from ``k0`` (with
        ``predicated``: zero at and past ``k_hi``, addressed at ``k_hi`` - 1)."""
        per_line, runs, lines_per_pass, passes = self._pairs(rows, mn_major,
                                                             self.config.threads)
        across = tid % per_line
        line0 = tid // per_line
        if cutlass.const_expr(self._idle(rows, mn_major, self.config.threads)):
            line0 = cutlass.min(line0, (_CHUNK_K if mn_major else rows) - 1)  # (never stored)
        for j in cutlass.range_constexpr(passes):
            line = line0 + j * lines_per_pass
            for run in cutlass.range_constexpr(runs):
                for e in cutlass.range_constexpr(_PAIR):
                    at_line = (across + run * per_line) * _PAIR + e
                    row, k = (at_line, line) if cutlass.const_expr(mn_major) else (line, at_line)
                    at = k0 + k
                    r = first + row
                    if cutlass.const_expr(clamped):
                        r = cutlass.min(r, size - 1)
                    if cutlass.const_expr(predicated):
                        v = g[r, cutlass.min(at, k_hi - 1)]
                        regs[e, run, j] = cutlass.select_(at < k_hi, v, self.dtype(0.0))
                    else:
                        regs[e, run, j] = g[r, at]

    @cute.jit
    def _put(self, s: cute.Tensor, regs: cute.Tensor, stage: cutlass.Int32,
             rows: cutlass.Constexpr, mn_major: cutlass.Constexpr, tid: cutlass.Int32):
        """This thread's pairs of ``_fetch`` into stage ``stage`` of the shared tile ``s``
        (its 32-bit view)."""
        per_line, runs, lines_per_pass, passes = self._pairs(rows, mn_major,
                                                             self.config.threads)
        across = tid % per_line
        line0 = tid // per_line
        if cutlass.const_expr(self._idle(rows, mn_major, self.config.threads)):
            if line0 < (_CHUNK_K if mn_major else rows):
                self._put_lines(s, regs, stage, rows, mn_major, across, line0)
        else:
            self._put_lines(s, regs, stage, rows, mn_major, across, line0)

    @cute.jit
    def _put_lines(self, s: cute.Tensor, regs: cute.Tensor, stage: cutlass.Int32,
                   rows: cutlass.Constexpr, mn_major: cutlass.Constexpr,
                   across: cutlass.Int32, line0: cutlass.Int32):
        per_line, runs, lines_per_pass, passes = self._pairs(rows, mn_major,
                                                             self.config.threads)
        # A pair is one 32-bit word of the tile (pairs start at even elements of a line).
        packed = cute.recast_tensor(regs, cutlass.Int32)
        for j in cutlass.range_constexpr(passes):
            line = line0 + j * lines_per_pass
            for run in cutlass.range_constexpr(runs):
                at_line = across + run * per_line
                if cutlass.const_expr(mn_major):
                    s[at_line, line, stage] = packed[0, run, j]
                else:
                    s[line, at_line, stage] = packed[0, run, j]

    # ---------------------------------------------------------------- the kernel

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiles_n: cutlass.Int32):
        cfg = self.config
        rows, cols, threads = cfg.tile_m, cfg.tile_n, cfg.threads
        tid, _, _ = cute.arch.thread_idx()
        m_size, n_size = mC.shape[0], mC.shape[1]
        # (With PDL, cta_work waits for the kernel ahead before any global access.)
        m0, n0, k_lo, k_hi, _, gA, gB, gC = cta_work(mA, mB, mC, rows, cols, tiles_n, cfg.pdl)

        smem = cutlass.memory.SmemAllocator()
        b_elems = cols * _CHUNK_K * _STAGES
        base = smem.allocate_array(self.dtype, b_elems + rows * _CHUNK_K * _STAGES,
                                   byte_alignment=_SMEM_ALIGN)
        # (N, K, stage) of B^T and (M, K, stage) of A, as elements and as words.
        sB, wB = self._smem_tile(base, cols, self.b_mn_major)
        sA, wA = self._smem_tile(base + b_elems, rows, self.a_mn_major)
        _, b_runs, _, b_passes = self._pairs(cols, self.b_mn_major, threads)
        _, a_runs, _, a_passes = self._pairs(rows, self.a_mn_major, threads)
        rB = cute.make_rmem_tensor(cute.make_layout((_PAIR, b_runs, b_passes)), self.dtype)
        rA = cute.make_rmem_tensor(cute.make_layout((_PAIR, a_runs, a_passes)), self.dtype)

        # The warps along the MMA's M (C's columns, 16 each), and where the CTA has more
        # threads than those, rows of such warps along its N (the CTA's rows, interleaved by
        # 16); 16 of its N per ldmatrix.x4 of A where the CTA has 16 rows or more, else 8 per
        # x2.
        wide = rows >= 16
        warps_n = cols // MMA_WARP_N
        warps_m = threads // 32 // warps_n
        op = cute.nvgpu.warp.MmaF16BF16Op(self.dtype, cutlass.Float32, (16, 8, _STEP_K))
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout((warps_n, warps_m, 1)),
                                        permutation_mnk=(cols, warps_m * (16 if wide else 8),
                                                         _STEP_K))
        thr_mma = tiled_mma.get_slice(tid)
        fB = tiled_mma.make_fragment_A(thr_mma.partition_A(sB)[None, None, None, 0])
        fA = tiled_mma.make_fragment_B(thr_mma.partition_B(sA)[None, None, None, 0])
        acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((cols, rows)))
        acc.fill(0.0)
        ldsm_b = cute.make_copy_atom(
            cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=self.b_mn_major, num_matrices=4),
            self.dtype)
        ldsm_a = cute.make_copy_atom(
            cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=self.a_mn_major,
                                              num_matrices=4 if wide else 2), self.dtype)
        s2r_b = cute.make_tiled_copy_A(ldsm_b, tiled_mma).get_slice(tid)
        s2r_a = cute.make_tiled_copy_B(ldsm_a, tiled_mma).get_slice(tid)
        lB_s, lB_r = s2r_b.partition_S(sB), s2r_b.retile(fB)
        lA_s, lA_r = s2r_a.partition_S(sA), s2r_a.retile(fA)

        operands = (gB, gA, wB, wA, rB, rA, n0, m0, n_size, m_size, k_lo, k_hi, tid)
        copies = (tiled_mma, acc, fB, fA, lB_s, lB_r, lA_s, lA_r, s2r_b, s2r_a)
        # Only the CTA of the last columns clamps B's columns to N (the others' loads of a
        # line then differ by constants).
        if n0 + cols <= n_size:
            self._mainloop(operands, copies, False)
        else:
            self._mainloop(operands, copies, True)

        cC = thr_mma.partition_C(cute.make_identity_tensor((cols, rows)))
        for i in cutlass.range_constexpr(cute.size(acc)):
            n, m = cC[i]
            if (n0 + n < n_size) & (m0 + m < m_size):
                gC[m0 + m, n0 + n] = acc[i].to(self.c_dtype)

    @cute.jit
    def _mainloop(self, operands, copies, b_clamped: cutlass.Constexpr):
        """acc += the split's chunks of K: the whole ones with each one's loads in flight
        during the previous one's MMAs (two shared stages, one barrier per chunk), then the
        last, partial one (predicated loads)."""
        gB, gA, wB, wA, rB, rA, n0, m0, n_size, m_size, k_lo, k_hi, tid = operands
        span = cutlass.max(k_hi - k_lo, 0)
        whole = span // _CHUNK_K
        for ahead in cutlass.range_constexpr(1, _PREFETCH + 1):
            self._prefetch(gB, n0, n_size, k_lo + ahead * _CHUNK_K, k_hi, tid)
        if whole > 0:
            self._chunk_to_regs(gB, gA, rB, rA, n0, m0, n_size, m_size, k_lo, k_hi, tid,
                                False, b_clamped)
            self._stage(wB, wA, rB, rA, 0, tid)
            for c in range(whole - 1):
                stage = c % _STAGES
                self._prefetch(gB, n0, n_size, k_lo + (c + 1 + _PREFETCH) * _CHUNK_K, k_hi, tid)
                self._chunk_to_regs(gB, gA, rB, rA, n0, m0, n_size, m_size,
                                    k_lo + (c + 1) * _CHUNK_K, k_hi, tid, False, b_clamped)
                self._mma(copies, stage)
                # The other stage was last read in the previous chunk, before its barrier.
                self._stage(wB, wA, rB, rA, 1 - stage, tid)
            self._mma(copies, (whole - 1) % _STAGES)
        if whole * _CHUNK_K < span:
            # Into the stage the last whole chunk did not read (read before a barrier).
            stage = whole % _STAGES
            self._chunk_to_regs(gB, gA, rB, rA, n0, m0, n_size, m_size,
                                k_lo + whole * _CHUNK_K, k_hi, tid, True, b_clamped)
            self._stage(wB, wA, rB, rA, stage, tid)
            self._mma(copies, stage)

    @cute.jit
    def _stage(self, wB: cute.Tensor, wA: cute.Tensor, rB: cute.Tensor, rA: cute.Tensor,
               stage: cutlass.Int32, tid: cutlass.Int32):
        """Both operands' chunk from this thread's registers into shared stage ``stage``, then
        the CTA's barrier (the chunk is whole in shared memory after it)."""
        self._put(wB, rB, stage, self.config.tile_n, self.b_mn_major, tid)
        self._put(wA, rA, stage, self.config.tile_m, self.a_mn_major, tid)
        cute.arch.barrier()

    @cute.jit
    def _prefetch(self, gB: cute.Tensor, n0: cutlass.Int32, n_size: cutlass.Int32,
                  k0: cutlass.Int32, k_hi: cutlass.Int32, tid: cutlass.Int32):
        """Ask L2 for the lines of B's chunk at ``k0`` (none past ``k_hi``): an N-major B's
        k-rows each span at most 3 lines of 128 bytes (256 bytes of the CTA's columns), so 3
        threads a row touch its first, middle and last element; a K-major B's rows (64 bytes
        of the chunk) 2 lines, first and last.  Addresses are clamped inside B."""
        cols = self.config.tile_n
        if k0 < k_hi:
            if cutlass.const_expr(self.b_mn_major):
                if tid < 3 * _CHUNK_K:
                    line = tid // 3
                    n = n0 + cutlass.min((tid - line * 3) * (cols // 2), cols - 1)
                    k = k0 + line
                    self._prefetch_at(gB, n, k, n_size, k_hi)
            elif cutlass.const_expr(self.config.threads > 2 * cols):
                if tid < 2 * cols:
                    self._prefetch_k_major(gB, n0, n_size, k0, k_hi, tid)
            else:
                self._prefetch_k_major(gB, n0, n_size, k0, k_hi, tid)

    @cute.jit
    def _prefetch_k_major(self, gB: cute.Tensor, n0: cutlass.Int32, n_size: cutlass.Int32,
                          k0: cutlass.Int32, k_hi: cutlass.Int32, tid: cutlass.Int32):
        """Thread ``tid`` (< 2 x the CTA's columns) asks L2 for the first or the last line of
        its column's row of a K-major B's chunk at ``k0``."""
        n = n0 + tid // 2
        k = k0 + (tid % 2) * (_CHUNK_K - 1)
        self._prefetch_at(gB, n, k, n_size, k_hi)

    @cute.jit
    def _prefetch_at(self, g: cute.Tensor, n: cutlass.Int32, k: cutlass.Int32,
                     n_size: cutlass.Int32, k_hi: cutlass.Int32):
        at = cute.domain_offset((cutlass.min(n, n_size - 1), cutlass.min(k, k_hi - 1)), g)
        # Inline PTX: the DSL's prefetch does not build for sm_80 (libNVVM, DSL 4.8.1).
        llvm.inline_asm(None, [at.iterator.toint().ir_value()], "prefetch.global.L2 [$0];",
                        "l", has_side_effects=True, is_align_stack=False,
                        asm_dialect=llvm.AsmDialect.AD_ATT)

    @cute.jit
    def _mma(self, copies, stage: cutlass.Int32):
        """acc += the chunk in shared stage ``stage``: ldmatrix, then mma.sync, per 16 of K."""
        tiled_mma, acc, fB, fA, lB_s, lB_r, lA_s, lA_r, s2r_b, s2r_a = copies
        for ks in cutlass.range_constexpr(_CHUNK_K // _STEP_K):
            cute.copy(s2r_b, lB_s[None, None, ks, stage], lB_r[None, None, ks])
            cute.copy(s2r_a, lA_s[None, None, ks, stage], lA_r[None, None, ks])
            cute.gemm(tiled_mma, acc, fB[None, None, ks], fA[None, None, ks], acc)

    @cute.jit
    def _chunk_to_regs(self, gB: cute.Tensor, gA: cute.Tensor, rB: cute.Tensor, rA: cute.Tensor,
                       n0: cutlass.Int32, m0: cutlass.Int32, n_size: cutlass.Int32,
                       m_size: cutlass.Int32, k0: cutlass.Int32, k_hi: cutlass.Int32,
                       tid: cutlass.Int32, predicated: cutlass.Constexpr,
                       b_clamped: cutlass.Constexpr):
        """Both operands' values of the chunk at ``k0`` into this thread's registers (A's rows
        always clamped to M: it has fewer than the CTA's)."""
        cfg = self.config
        self._fetch(gB, rB, n0, n_size, cfg.tile_n, self.b_mn_major, tid, k0, k_hi, predicated,
                    b_clamped)
        self._fetch(gA, rA, m0, m_size, cfg.tile_m, self.a_mn_major, tid, k0, k_hi, predicated,
                    True)
