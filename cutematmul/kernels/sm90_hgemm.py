"""GEMM for Hopper (sm_90a): TMA loads, wgmma, warp specialization, persistent tiles.

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] for fp16 or bf16 A and B, accumulated in fp32 and
    written as the input dtype; or, math "tf32", fp32 A and B read by TF32 wgmma (fp32 C); or,
    math "tf32x3" (precision "high"), A and B as (big | small) TF32 parts along K
    (``kernels/operand_prep.py``) and the three products small*big + big*small + big*big.  With
    ``Config.partials``, C is fp32 partial sums over a run of K-tiles for split-K
    (``kernels/entry.py``: C then holds ``splits`` matrices per batch, which
    ``kernels/splitk_reduce.py`` sums in a fixed order).  With ``Config.streamk`` tiles that
    straddle CTAs are summed inside the kernel through a workspace (below).  A may be K-major
    (row-major) or M-major, B K-major or N-major (N-major is a row-major math B of shape (K, N));
    3xTF32 needs both K-major, one-pass TF32 one of them (below).  C is N-major (the caller's), or
    written through its transpose by a swapped kernel (``Config.swap``, below).  L is a batch mode
    whose strides may be 0 (a broadcast operand).

How
    * One producer warpgroup and one or two consumer warpgroups per CTA.  A single producer warp
      issues TMA bulk-tensor copies (``cp.async.bulk.tensor``) of (tile_m x tile_k) A tiles and
      (tile_n x tile_k) B tiles into a ring of ``stages`` swizzled shared-memory buffers
      (128-byte; for an N-major B of width 96, 160 or 224 64-byte, of 80 or 112 32-byte); an
      mbarrier pair per stage (full: TMA bytes landed, empty: consumers are done) forms the
      pipeline.
    * Consumers run ``wgmma.mma_async`` (m64 x tile_n x k16) straight from shared memory, keeping
      one k-tile of wgmma in flight while the next stage's barrier is awaited.  The accumulators
      are pinned (``fence_accumulators``) after their zero fill and after the last
      ``wgmma.wait_group``, so no conversion or fill lands inside the pipeline, where ptxas
      would serialize every wgmma (tests/test_compile_sm90.py checks ptxas's advisories).
      With tile_m = 128 the two consumer warpgroups each own 64 rows of the tile, with
      tile_m = 256 (16-bit, tile_n <= 192: 192 fp32 accumulators per thread at most)
      two m64 wgmma rows, 128 rows, each (the tall tiles cuBLAS runs on large products; on an
      H200 256 x 128 ran 1-4% slower than 128 x 256 on large products and won only at 2048^3,
      so ``configs/sm90`` does not offer them: docs/performance.md; 256 x 160 and 256 x 192,
      cuBLAS's shapes on mid products, are built for measurement, three ring stages deep);
      their registers are raised with setmaxnreg while the producer's are lowered.
    * Persistent scheduling: the grid holds one CTA (or cluster) per SM and walks the work units
      (output tile x batch x K-split) with a stride of the grid size; tiles are visited in groups of
      ``raster_group`` tile-rows so the CTAs running at one time share A and B tiles in L2.  While
      consumers run the epilogue of a tile, the producer already fills the stages for the next one.
    * Stream-K (``Config.streamk``): the work is every (tile, K-tile) iteration instead, each
      cluster taking an equal contiguous share, so no wave is partial.  A unit runs from where
      the share stands to the end of its tile or of the share.  A unit that starts inside its
      tile stores its fp32 sums to the CTA's slot of a workspace of ours (16-byte vectors) and
      sets the slot's flag (release); the CTA that starts the tile waits for each later
      cluster's flag (acquire), adds the slots in cluster order and stores the tile: the same
      inputs give bitwise-identical outputs.  A CTA's first unit is the only one that can
      start inside a tile and its last the only one that can wait, and it waits only for
      later clusters, so the waits form no cycle.  The host zeroes the flags before the launch
      (``launch._run_streamk``).
    * 2-CTA clusters multicast the shared operand tile to both CTAs (halving its L2 reads): the
      dispatcher runs 16-bit products whose M spans two tiles or more in 2x1 clusters (one B tile
      for two adjacent tile rows; with an odd row count the last cluster's second CTA has no
      rows: its loads are zero-filled and its stores clipped by TMA), and unsplit one-pass
      TF32 products of two 128-row tiles or more, or of two 64-row ones where the kernel does
      not swap (``configs/sm90._cluster_m``).  2x2 clusters multicast both: each A tile to the
      two CTAs of a cluster row, each B tile to the two of a column (16-bit products whose
      clusters fit one wave, ``configs/sm90._QUAD``).
      The grid holds no more clusters than the GPU runs at once
      (``configs/sm90.resident_clusters``: a GPC may leave SMs idle under 4-CTA clusters).
    * Pingpong (``Config.pingpong``, 16-bit, tiles of at most 128 x 128): the two consumer
      warpgroups take alternate work units of the CTA, each computing a whole tile (two
      m64 wgmma rows for a 128-row tile), so one warpgroup's epilogue runs while the other's
      wgmma do.  The producer loads every unit's K-tiles in order; a warpgroup skips the
      other's stages in its pipeline state.  An order barrier (two mbarriers) hands the turn
      over once a warpgroup's last stage has landed and its wgmma are issued: the mainloops
      run in turn, and no warpgroup waits on a stage whose previous fill is not yet complete
      (the full barriers' phase parity could not tell those fills apart).  Each warpgroup has
      its own epilogue barrier, store warp and ring of 64-row sub-tiles.  It wins where a
      tile's mainloop is short (K up to ~512: ``configs/sm90._PINGPONG_TILE``).
    * Swap (``Config.swap``): the kernel computes C^T = B^T A^T.  B, seen as (N, K), is the
      MMA's A and A, seen as (M, K), its B (16-bit wgmma reads either major from shared
      memory), so the tiles cover (N, M); C is written through its transpose, whose unit
      stride runs along the tile's rows: the epilogue writes M-major sub-tiles with the
      transposing ``stmatrix`` (plain shared stores for fp32) and TMA stores them.  The
      schedule swaps skinny 16-bit products whose M fits one 160-, 192- or 224-wide tile
      (``configs/sm90._SWAP_WIDTHS``), which untransposed pad M to whole 64- or 128-row tiles,
      M of 65-127 over a long N on 128-row tiles, 128 wide or 80-112 (``_SWAP_ONE_ROW``),
      M of 33-63 on 64-wide tiles (``_SWAP_NARROW``), and M of 32 or less over a long N on
      16- or 32-wide tiles (``_SWAP_SMALL_FILL``: no fp32 workspace, no reduction launch);
      one-pass TF32 swaps whenever B is N-major (below).
    * Epilogue: the fp32 accumulators are converted to the output dtype, written to a ring of
      swizzled shared-memory sub-tiles with ``stmatrix``, and stored by TMA (``cp.async.bulk``).
      One named barrier per sub-tile: the storing warp waits for older stores with a lag of
      ``epi_stages - 2`` before it joins the next barrier, so a buffer is never overwritten while
      TMA still reads it.
    * A C whose rows are no whole 16-byte vectors (odd N in 16 bits; ``align_c`` below the
      vector: ``c_direct``), which TMA cannot store, is stored by the tile's threads instead,
      from the same shared sub-tiles: after the sub-tile's barrier each thread loads its
      values of one column (every ``tile_threads / epi_n``-th row, so a warp covers a row's
      consecutive columns) and stores them with 16-bit global stores, each guarded by C's
      extents.  Data-parallel, unswapped tiles only (``Config.stores_any_c``); the planner
      copies other schedules' C (``dispatch.copied_c``).  It replaced that copy where it
      applies: H200, fp16 nn, back-to-back us, copied / stored here, 1023x1025x1027 21.2 /
      20.0, 777x1333x999 22.8 / 20.5, 3001x2999x1501 78.4 / 72.3, 4097x4095x4093 265.2 / 255.9.
    * Tails in M, N and K need no predication: TMA zero-fills out-of-bounds loads and clips stores.
    * ``Config.pdl`` (programmatic dependent launch, set by the dispatcher on every schedule but
      stream-K, which hides ~1 us of launch and prologue per product at mid sizes): launched
      with programmatic stream serialization; every thread executes ``griddepcontrol.wait``
      after the barrier set-up and before any global memory access, and the producer warp
      executes ``griddepcontrol.launch_dependents`` after its last TMA load.
    * TF32 (``tf32_mma``): the same pipeline with 32-wide K-tiles of fp32 data and
      ``wgmma...k8.f32.tf32.tf32``.  3xTF32: each stage holds both parts of a K-tile, A's and
      B's big tile (K-tile j) and small tile (K-tile j + K-tiles per part), loaded by four TMA
      copies on one barrier; the consumers run the three products of the stage from zero
      (small*big and big*small first, while the wgmma accumulator is small, then big*big) and
      add the result into fp32 registers (promotion): wgmma's own accumulation is not rounded
      to nearest, and without promotion 3xTF32 measured 4-30x SGEMM's error on an H200.  One
      promotion per K-tile, not one per K-tile and product: a third of the waits for wgmma to
      drain, and each part is read from L2 once, not in three passes.
    * TF32 with a register operand (``a_regs``): TF32 wgmma reads shared tiles K-major only, but
      may take A from registers.  An M-major A is loaded by TMA into an M-major (128-byte
      swizzled) tile as usual, and each consumer thread loads its fragment of it with
      ``ld.shared.b32`` (four values per k8 wgmma) two k-blocks ahead of the wgmma that reads
      them: after committing k-block j it waits until at most two wgmma groups are pending, so
      the registers of k-block j - 2 are free for k-block j + 2 and two wgmma stay in flight.
      With an N-major B (``swap``: a row-major math B, the common A @ B) the kernel computes
      C^T = B^T A^T: B becomes the register operand, A the K-major shared one, and C is written
      through its transpose, an M-major epilogue tile stored by TMA.  So one-pass TF32 reads
      every layout but (M-major A, N-major B) without a copy; there the host copies the
      smaller of A and B K-major (``configs.sm90.operand_copies``).

Constraints
    sm_90a only.  Stream-K needs every CTA of the grid resident at once (one per SM, as the
    persistent grid is sized) and fewer than 2**31 iterations; it is not combined with split-K
    or ``partials``, nor used for 3xTF32.  TF32 math needs tile_k = 32 and a K-major operand
    (3xTF32 both); promotion (3xTF32)
    tile_n <= 192, and its stages are twice as large (two parts each).  Split-K needs
    ``Config.partials`` (fp32 C).  A's and B's base address, leading stride and batch stride
    must be 16-byte aligned (a TMA rule; the host copies other operands), and C's too except
    under ``c_direct`` (C's element alignment only).  K >= 1 (the host writes zeros itself for
    K = 0).  tile_m in {64, 128, 256} (256: 16-bit, tile_n <= 192, no stream-K), tile_n in
    {64, 128, 160, 192, 224, 256} (also 16 and 32, the narrow
    tiles of small-M and small-N products: fp32 partials, or C itself, not stream-K; and 80,
    96 and 112 for 16-bit tiles of N (or a swapped M) of 65-127, 144, 176 and 208 for a swapped
    M of 129-208, cooperative, 1x1 or 2x1, not stream-K; an N-major B tile 96, 160 or 224 wide is
    64-byte swizzled, 80, 112, 144, 176 or 208 wide 32-byte:
    the shared-memory atom ``hopper_helpers`` picks for the widest swizzle that divides a row;
    epilogue sub-tiles 16 wide where 32 does not divide the width), tile_k = 64, clusters 1x1,
    2x1 or 1x2, or 2x2 (16-bit data-parallel cooperative tiles at least 128 wide, no stream-K: a
    GPU runs fewer 4-CTA clusters at once than SMs / 4).  Pingpong: 16-bit inputs,
    tile_m x tile_n <= 128 x 128 (a whole tile's fp32 accumulators in one warpgroup's
    registers), no stream-K.  Swap: tile_m 64 or 128, not pingpong; a narrow tile (16 or 32)
    writing fp32 partials (TF32's transposed small-M products) or a 16-bit C (small M).

Benchmark
    python -m cutematmul.bench --dtypes float16 bfloat16 --kernel sm90
    python -m cutematmul.bench --dtypes float32 --precision tf32     (or high)
    pingpong: python -m cutematmul.bench --shapes shortk --dtypes fp16,bf16 (short-K products,
    which the wave model runs pingpong); docs/performance.md has forced runs against cooperative
    stream-K: cutematmul.tune(a, b) on a product whose tiles leave a partial wave (the tuner
    times it beside the data-parallel schedules; docs/performance.md has forced runs)
    swap: python -m cutematmul.bench --shapes skinny --dtypes fp16,bf16 --layouts nn,tn
    (M of 160-224)
    c_direct: python -m cutematmul.bench --shapes 4097x4095x4093,1023x1025x1027,8192x8191x512

Imports: ``configs.sm90`` (its configuration), ``tf32_mma`` (TF32 warpgroup MMA atoms); the
CuTe DSL and ``cuda.bindings``.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass._mlir.dialects import llvm
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import T, dsl_user_op
from cutlass.tensor_utils import LayoutEnum

from ..configs.sm90 import (  # noqa: F401
    _PRODUCER_REGISTERS, _THREADS_PER_WARPGROUP, TF32_READS, Config, choose_config,
    resident_clusters, supports, swaps,
)
from . import tf32_mma

Sm90Config = Config  # the name the tests and docs use
_EPILOGUE_BARRIER_ID = 1
# Math type -> operand type.  "tf32" is fp32 data read by TF32 wgmma; "tf32x3" the same over the
# (big | small) operands of kernels/operand_prep.py, three products (see the module docstring).
_DTYPES = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16,
           "tf32": cutlass.TFloat32, "tf32x3": cutlass.TFloat32}
# 3xTF32: the (A part, B part) of each product a stage runs, in order (0 big, 1 small).
_PRODUCTS = ((1, 0), (0, 1), (0, 0))


@dsl_user_op
def _pinned(value: cutlass.Float32, *, loc=None, ip=None) -> cutlass.Float32:
    """``value`` through an empty side-effecting asm that reads and writes its register."""
    return cutlass.Float32(llvm.inline_asm(
        T.f32(), [value.ir_value(loc=loc, ip=ip)], "", "=f,0", has_side_effects=True,
        is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip))


@cute.jit
def fence_accumulators(acc: cute.Tensor):
    """Pin the fp32 accumulator registers in program order, as CUTLASS's
    ``warpgroup_fence_operand`` does.  To LLVM a wgmma's results are plain SSA values, so it may
    move code that reads them (the epilogue's conversion) above ``wgmma.wait_group`` or code
    that defines them (the zero fill) into the pipeline; ptxas then serializes every wgmma
    (advisories C7514/C7515).  That happened to the bf16 build of the 64 x 32 swapped tile and
    not to its fp16 twin: 18.4 us against 13.6 at 32x4096x4096 (ncu, H200)."""
    for i in cutlass.range_constexpr(cute.size(acc)):
        acc[i] = _pinned(acc[i])


class Sm90Hgemm:
    """Warp-specialized persistent TMA + wgmma GEMM; see the module docstring."""

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
            raise ValueError(f"Sm90Hgemm takes {', '.join(_DTYPES)}; got {dtype!r}.")
        if a_major not in ("k", "m") or b_major not in ("k", "n"):
            raise ValueError(f"Sm90Hgemm majors must be a in (k, m), b in (k, n); got "
                             f"{a_major}, {b_major}.")
        self.dtype = _DTYPES[dtype]
        self.tf32 = self.dtype is cutlass.TFloat32
        if self.tf32 and (a_major, b_major) not in TF32_READS[dtype]:
            raise ValueError(f"Sm90Hgemm {dtype} reads (A, B) majors {TF32_READS[dtype]}; "
                             f"got {a_major}, {b_major}.")
        #: C^T = B^T A^T (``Config.swap``): B is the MMA's A, A its B, C written through its
        #: transpose.  One-pass TF32 swaps exactly when B is N-major (B is then the MMA's
        #: register operand, ``swaps``); 16-bit products where the schedule chose it.
        self.swap = config.swap
        if self.tf32 and self.swap != swaps(dtype, a_major, b_major):
            raise ValueError(f"Sm90Hgemm {dtype} with (A, B) majors ({a_major}, {b_major}) needs "
                             f"Config.swap={swaps(dtype, a_major, b_major)}; got {config.swap}.")
        #: The MMA's A is M-major (TF32 only): wgmma reads it from registers, which the consumers
        #: load from shared memory themselves (TF32 wgmma reads only K-major shared tiles).
        self.a_regs = self.tf32 and (a_major, b_major) != ("k", "k")
        vector = 128 // self.dtype.width
        if min(align_a, align_b) < vector:
            raise ValueError(f"Sm90Hgemm needs 16-byte ({vector}-element) alignment of A and B.")
        self.c_dtype = cutlass.Float32 if config.partials or self.tf32 else self.dtype
        #: C's rows are no whole 16-byte vectors (TMA cannot store them): the epilogue stores
        #: it element by element from the shared sub-tiles (``Config.stores_any_c``).
        self.c_direct = align_c < 128 // self.c_dtype.width
        if config.tile_k * self.dtype.width != 128 * 8:
            raise ValueError(f"Sm90Hgemm {dtype} needs tile_k = {1024 // self.dtype.width}; "
                             f"got {config.tile_k}.")
        self.config = config
        #: 3xTF32 promotes: every K-tile's wgmma result is added into fp32 registers (the
        #: tensor cores' accumulation truncates; measured 4-30x SGEMM's error without this).
        self.promote = dtype == "tf32x3"
        #: Tiles of A and of B per stage: both (big, small) parts for 3xTF32.
        self.parts = 2 if self.promote else 1
        if self.promote and config.streamk:
            raise ValueError(f"Sm90Hgemm {dtype} keeps split-K (its promoted sums are bounded "
                             "per split); stream-K is not built for it.")
        if (config.pingpong or config.tile_m > 128) and self.tf32:
            raise ValueError(f"Sm90Hgemm {dtype}: pingpong and 256-row tiles are built for 16-bit "
                             "inputs only.")
        if self.promote and config.tile_n > 192:
            raise ValueError(f"Sm90Hgemm {dtype} keeps two accumulators: tile_n <= 192, got "
                             f"{config.tile_n}.")
        self.a_major, self.b_major = a_major, b_major
        self.align_a, self.align_b, self.align_c = align_a, align_b, align_c
        self.num_sms = num_sms
        self.acc_dtype = cutlass.Float32
        self.tile_mnk = (config.tile_m, config.tile_n, config.tile_k)
        self.cluster_mn = (config.cluster_m, config.cluster_n)
        self.cluster_size = config.cluster_m * config.cluster_n
        self.consumers = config.consumer_warpgroups
        self.pingpong = config.pingpong
        #: Warpgroups that compute one tile together: both (cooperative), or one (pingpong).
        self.tile_warpgroups = 1 if self.pingpong else self.consumers
        self.consumer_threads = self.consumers * _THREADS_PER_WARPGROUP
        #: Threads that store one tile's epilogue (and meet at its barrier).
        self.tile_threads = self.tile_warpgroups * _THREADS_PER_WARPGROUP
        if self.c_direct and (not config.stores_any_c or config.epi_stages < 2
                              or self.tile_threads % config.epi_n
                              or config.epi_m * config.epi_n % self.tile_threads):
            raise ValueError(f"Sm90Hgemm stores a C of {align_c}-element alignment only from "
                             f"data-parallel, unswapped tiles with 2+ epilogue stages; got "
                             f"{config.name}.")
        self.threads = self.consumer_threads + _THREADS_PER_WARPGROUP
        #: A 16-bit C written through its transpose (``swap``) leaves the registers by
        #: ``stmatrix.trans`` into an M-major shared tile; an fp32 one by plain stores.
        self.c_transposed = self.swap and self.c_dtype.width == 16
        self.stages = config.stage_count(self.dtype.width // 8, self.parts)
        self.epi_tile = (config.epi_m, config.epi_n)
        #: Epilogue buffers: ``Config.epi_rings`` rings of ``epi_stages``.
        self.epi_buffers = config.epi_stages * config.epi_rings
        self.consumer_registers = 232 if self.consumers == 2 else 240
        # A tile is shared along the cluster's N extent, a B tile along its M extent.
        self.a_mcast = config.cluster_n
        self.b_mcast = config.cluster_m

    # ------------------------------------------------------------------ host side
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        self._launch(mA, mB, mC, None, None, stream)

    @cute.jit
    def streamk(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mW: cute.Tensor,
                mFlags: cute.Tensor, stream: cuda.CUstream):
        """Stream-K (``Config.streamk``): ``mW`` holds one fp32 partial tile per CTA of the
        grid, ``mFlags`` one int32 flag per CTA, zeroed before the launch."""
        self._launch(mA, mB, mC, mW, mFlags, stream)

    @cute.jit
    def _launch(self, mA, mB, mC, mW, mFlags, stream):
        """The host side of both entries."""
        if cutlass.const_expr(self.tf32):  # fp32 data read as TF32 (XLA hands Float32 tensors)
            mA = cute.make_tensor(cute.recast_ptr(mA.iterator, dtype=self.dtype), mA.layout)
            mB = cute.make_tensor(cute.recast_ptr(mB.iterator, dtype=self.dtype), mB.layout)
        if cutlass.const_expr(self.swap):
            # C^T = B^T A^T: B (N, K, L) is the MMA's A, A (M, K, L) its B; C is written through
            # its transpose (N, M, L), whose unit stride is along the MMA's M.
            mA, mB = mB, mA
            mC = cute.make_tensor(mC.iterator, cute.select(mC.layout, mode=[1, 0, 2]))
        a_layout = LayoutEnum.from_tensor(mA)
        b_layout = LayoutEnum.from_tensor(mB)
        c_layout = LayoutEnum.from_tensor(mC)
        if cutlass.const_expr(self.tf32):
            tiled_mma = tf32_mma.tiled_mma(self.consumers, self.tile_mnk[1], self.a_regs)
        else:
            tiled_mma = sm90_utils.make_trivial_tiled_mma(
                self.dtype,
                self.dtype,
                a_layout.sm90_mma_major_mode(),
                b_layout.sm90_mma_major_mode(),
                self.acc_dtype,
                (self.tile_warpgroups, 1, 1),
                tiler_mn=(64, self.tile_mnk[1]),
            )
        # One shared buffer per part and stage: stage s holds buffers s * parts + part.
        buffers = self.stages * self.parts
        sA_layout = sm90_utils.make_smem_layout_a(a_layout, self.tile_mnk, self.dtype, buffers)
        sB_layout = sm90_utils.make_smem_layout_b(b_layout, self.tile_mnk, self.dtype, buffers)
        sC_layout = sm90_utils.make_smem_layout_epi(
            self.c_dtype, c_layout, self.epi_tile, self.epi_buffers
        )

        tma_a, gA_tma = self._tma_load(mA, sA_layout, (self.tile_mnk[0], self.tile_mnk[2]),
                                       self.a_mcast)
        tma_b, gB_tma = self._tma_load(mB, sB_layout, (self.tile_mnk[1], self.tile_mnk[2]),
                                       self.b_mcast)
        tma_c, gC_tma = None, mC  # c_direct: the epilogue indexes C itself
        if cutlass.const_expr(not self.c_direct):
            tma_c, gC_tma = cpasync.make_tiled_tma_atom(
                cpasync.CopyBulkTensorTileS2GOp(),
                mC,
                cute.slice_(sC_layout, (None, None, 0)),
                self.epi_tile,
            )

        @cute.struct
        class Storage:
            barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            # Pingpong: whose turn it is to run its mainloop (one mbarrier per warpgroup).
            order: cute.struct.MemRange[cutlass.Int64, 2]
            sA: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024]
            sC: cute.struct.Align[cute.struct.MemRange[self.c_dtype, cute.cosize(sC_layout)], 1024]

        self._storage = Storage

        # Cluster tiles: a cluster covers cluster_m x cluster_n CTA tiles.
        cluster_tiles_m = cute.ceil_div(
            cute.ceil_div(cute.size(mC, mode=[0]), self.tile_mnk[0]), self.cluster_mn[0]
        )
        cluster_tiles_n = cute.ceil_div(
            cute.ceil_div(cute.size(mC, mode=[1]), self.tile_mnk[1]), self.cluster_mn[1]
        )
        # C holds batch x splits matrices (kernels/entry.py); each split takes a run of K-tiles.
        batch_splits = cute.size(mC, mode=[2])
        splits = batch_splits // cute.size(mA, mode=[2])
        total = cluster_tiles_m * cluster_tiles_n * batch_splits
        max_clusters = resident_clusters(self.num_sms, self.cluster_size)  # all run at once
        # With two parts A and B are (big | small) along K, each part k_tiles K-tiles wide.
        k_tiles = cute.ceil_div(cute.size(mA, mode=[1]), self.tile_mnk[2]) // self.parts
        k_tiles_per_split = cute.ceil_div(k_tiles, splits)
        # Work units: output tiles (x batch x splits) strided over the grid, or with stream-K
        # every (tile, K-tile) iteration, each cluster taking an equal contiguous share.
        work = total * k_tiles if cutlass.const_expr(self.config.streamk) else total
        num_clusters = cutlass.min(work, max_clusters)
        share = work // num_clusters  # stream-K: iterations per cluster (the first rest one more)
        rest = work - share * num_clusters

        self.kernel(
            tma_a, gA_tma, tma_b, gB_tma, tma_c, gC_tma, tiled_mma,
            sA_layout, sB_layout, sC_layout,
            cluster_tiles_m, cluster_tiles_n, total, k_tiles, splits, k_tiles_per_split,
            share, rest, mW, mFlags,
        ).launch(
            grid=[self.cluster_mn[0], self.cluster_mn[1], num_clusters],
            block=[self.threads, 1, 1],
            cluster=[self.cluster_mn[0], self.cluster_mn[1], 1],
            smem=Storage.size_in_bytes(),
            min_blocks_per_mp=1,
            use_pdl=self.config.pdl,
            stream=stream,
        )

    def _tma_load(self, tensor, smem_layout_staged, tile, mcast):
        op = (cpasync.CopyBulkTensorTileG2SOp() if mcast == 1
              else cpasync.CopyBulkTensorTileG2SMulticastOp())
        return cpasync.make_tiled_tma_atom(
            op, tensor, cute.slice_(smem_layout_staged, (None, None, 0)), tile, num_multicast=mcast
        )

    # ---------------------------------------------------------------- device side
    @cute.jit
    def _k_range(self, lc, splits, k_tiles, k_tiles_per_split):
        """(batch-split index of C) -> (first K-tile, K-tile count) of that split; the count may
        be 0 (the split then writes zeros)."""
        split = cutlass.Int32(cutlass.Uint32(lc) % cutlass.Uint32(splits))
        first = split * k_tiles_per_split
        count = cutlass.max(cutlass.min(k_tiles - first, k_tiles_per_split), 0)
        return first, count

    @cute.jit
    def _unit(self, it, end, num_clusters, per_batch, splits, k_tiles, k_tiles_per_split):
        """Work unit ``it`` -> (tile index t, first K-tile, K-tile count, next unit).

        Data-parallel: unit t is output tile t (x batch x split) and the next is a grid
        stride away.  Stream-K: ``it`` is an iteration (tile t, K-tile j) = t * k_tiles + j;
        the unit runs from it to the end of its tile or to ``end`` (of the cluster's share),
        whichever comes first, and the next starts where it stopped."""
        t = it
        k_first = cutlass.Int32(0)
        k_count = cutlass.Int32(0)
        nxt = it + num_clusters
        if cutlass.const_expr(self.config.streamk):
            t = it // k_tiles
            k_first = it - t * k_tiles
            k_count = cutlass.min(k_tiles - k_first, end - it)
            nxt = it + k_count
        else:
            lc = cutlass.Int32(cutlass.Uint32(t) // cutlass.Uint32(per_batch))
            k_first, k_count = self._k_range(lc, splits, k_tiles, k_tiles_per_split)
        return t, k_first, k_count, nxt

    @cute.jit
    def _units(self, cluster_id, total_tiles, share, rest):
        """(first unit, end) of this cluster's work (see ``_unit``)."""
        it = cluster_id
        end = total_tiles
        if cutlass.const_expr(self.config.streamk):
            it = self._share_start(cluster_id, share, rest)
            end = self._share_start(cluster_id + 1, share, rest)
        return it, end

    @cute.jit
    def _streamk_fixup(self, total, mW, mFlags, k_first, tile_end, cluster_id, cta_m, cta_n,
                       ctid, share, rest, barrier):
        """Stream-K after a unit's mainloop; returns whether this CTA stores the tile.

        A unit that starts inside its tile (``k_first`` > 0) writes its fp32 sums to its CTA's
        slot of ``mW`` in 16-byte vectors, then, after a barrier of the consumer threads, one
        thread sets the slot's flag (zeroed by the host before the launch) with a GPU-scope
        release store.  The unit that starts the tile waits (acquire) for each later cluster
        whose share begins before ``tile_end`` and adds its slot, in cluster order: a fixed
        order, so the result is bitwise reproducible."""
        values = cute.size(total)
        threads = self.consumer_threads
        tile_elems = self.tile_mnk[0] * self.tile_mnk[1]
        # Slot layout: thread t's values 4 by 4 (one 16-byte vector each), vector j of every
        # thread side by side, so a warp moves 512 contiguous bytes per instruction.
        slot_layout = cute.make_layout((4, values // 4), stride=(1, 4 * threads))
        regs = cute.make_tensor(total.iterator, cute.make_layout((4, values // 4)))
        vector = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), self.acc_dtype,
                                     num_bits_per_copy=128)
        rank = cta_n * self.cluster_mn[0] + cta_m  # this CTA in its cluster
        slot = cluster_id * self.cluster_size + rank
        stores = k_first == 0
        if k_first > 0:
            offset = cute.assume(slot * tile_elems + ctid * 4, divby=4)
            cute.copy(vector, regs, cute.make_tensor(mW.iterator + offset, slot_layout))
            # The barrier orders every thread's stores before the one release store (cumulative).
            barrier.arrive_and_wait()
            if ctid == 0:
                cute.arch.store(mFlags.iterator + slot, cutlass.Int32(1), sem="release",
                                scope="gpu")
        else:
            other = cluster_id + 1
            part = cute.make_rmem_tensor((4, values // 4), self.acc_dtype)
            while self._share_start(other, share, rest) < tile_end:
                peer = other * self.cluster_size + rank
                if ctid == 0:
                    seen = cutlass.Int32(0)
                    while seen == 0:
                        seen = cute.arch.load(mFlags.iterator + peer, cutlass.Int32, sem="acquire",
                                              scope="gpu")
                barrier.arrive_and_wait()
                offset = cute.assume(peer * tile_elems + ctid * 4, divby=4)
                cute.copy(vector, cute.make_tensor(mW.iterator + offset, slot_layout), part)
                regs.store(regs.load() + part.load())
                other += 1
        return stores

    @cute.jit
    def _mainloop_a_regs(self, tiled_mma, acc, tCsA, tCrA, tCrB, k_blocks, k_count, ab_pipe,
                         read, release):
        """The mainloop with A from registers (``a_regs``): one wgmma group per k-block.

        Each k-block's registers (this thread's A values of the stage, by ``ld.shared``) are
        loaded ``ahead`` k-blocks before the wgmma that reads them.  After committing k-block
        j, the consumer waits until at most ``ahead`` groups are pending: k-block j - ahead has
        then retired, and its registers take k-block j + ahead (of the next K-tile's stage when
        it wraps, after that stage's barrier).  Loading the registers of a k-block right before
        its own wgmma, with that wgmma's predecessors in flight, made ptxas serialize every
        wgmma (C7513).  After the wait at k-block ``ahead - 1`` every wgmma of the previous
        K-tile has retired and its stage goes back to the producer.  Returns the advanced
        (read, release) pipeline states."""
        ahead = 2  # k-blocks whose registers are loaded before their wgmma is issued
        if k_count > 0:
            ab_pipe.consumer_wait(read)
            for kb in cutlass.range_constexpr(ahead):
                cute.autovec_copy(tCsA[(None, None, kb, read.index)], tCrA[(None, None, kb)])
        for kt in range(k_count):
            stage = read.index  # this K-tile's (``read`` moves on to the next one's mid-tile)
            for kb in cutlass.range_constexpr(k_blocks):
                warpgroup.fence()
                cute.gemm(tiled_mma, acc, tCrA[(None, None, kb)],
                          tCrB[(None, None, kb, stage)], acc)
                warpgroup.commit_group()
                warpgroup.wait_group(ahead)
                if cutlass.const_expr(kb == ahead - 1):
                    if kt > 0:  # the previous K-tile's last wgmma has retired
                        ab_pipe.consumer_release(release)
                        release.advance()
                nkb = (kb + ahead) % k_blocks
                if cutlass.const_expr(kb + ahead < k_blocks):
                    cute.autovec_copy(tCsA[(None, None, nkb, stage)], tCrA[(None, None, nkb)])
                else:
                    if cutlass.const_expr(kb + ahead == k_blocks):
                        read.advance()
                        if kt + 1 < k_count:
                            ab_pipe.consumer_wait(read)
                    if kt + 1 < k_count:
                        cute.autovec_copy(tCsA[(None, None, nkb, read.index)],
                                          tCrA[(None, None, nkb)])
        warpgroup.wait_group(0)
        fence_accumulators(acc)
        if k_count > 0:
            ab_pipe.consumer_release(release)
            release.advance()
        return read, release

    @cute.jit
    def _share_start(self, c, share, rest):
        """Stream-K: the first iteration of cluster c's share (the first ``rest`` clusters take
        ``share + 1`` iterations, the others ``share``)."""
        return c * share + cutlass.min(c, rest)

    @cute.jit
    def _tile_coord(self, t, cluster_tiles_m, cluster_tiles_n):
        """Cluster-tile index -> (m, n, l) in cluster-tile units, grouped for L2 reuse; l indexes
        C's batch x splits mode."""
        # Every value is non-negative: unsigned division, which needs no sign fix-ups.
        t = cutlass.Uint32(t)
        tiles_m = cutlass.Uint32(cluster_tiles_m)
        tiles_n = cutlass.Uint32(cluster_tiles_n)
        per_batch = tiles_m * tiles_n
        l = t // per_batch
        r = t - l * per_batch
        group = cutlass.Uint32(self.config.raster_group)
        group_span = group * tiles_n
        band = r // group_span
        first_m = band * group
        rows = cutlass.min(tiles_m - first_m, group)
        within = r - band * group_span
        return (cutlass.Int32(first_m + within % rows), cutlass.Int32(within // rows),
                cutlass.Int32(l))

    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        gA_tma: cute.Tensor,
        tma_b: cute.CopyAtom,
        gB_tma: cute.Tensor,
        tma_c,
        gC_tma: cute.Tensor,
        tiled_mma: cute.TiledMma,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
        sC_layout: cute.ComposedLayout,
        cluster_tiles_m: cutlass.Int32,
        cluster_tiles_n: cutlass.Int32,
        total_tiles: cutlass.Int32,
        k_tiles: cutlass.Int32,
        splits: cutlass.Int32,
        k_tiles_per_split: cutlass.Int32,
        share: cutlass.Int32,
        rest: cutlass.Int32,
        mW,
        mFlags,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        cta_m, cta_n, cluster_id = cute.arch.block_idx()
        num_clusters = cute.arch.grid_dim()[2]

        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(not self.c_direct):
                cpasync.prefetch_descriptor(tma_c)

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self._storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)
        sC = storage.sC.get_tensor(sC_layout.outer, swizzle=sC_layout.inner)

        # ---- pipeline between the producer warp and the consumer warpgroups
        cluster_layout = cute.make_layout((*self.cluster_mn, 1))
        cluster_coord = (cta_m, cta_n, 0)
        stage_bytes = self.parts * (
            cute.size_in_bytes(self.dtype, cute.slice_(sA_layout, (None, None, 0)))
            + cute.size_in_bytes(self.dtype, cute.slice_(sB_layout, (None, None, 0)))
        )
        # Every consumer warp releases a stage once to each CTA that wrote into it.
        mcast_peers = self.a_mcast + self.b_mcast - 1
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.barriers.data_ptr(),
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread, mcast_peers * self.tile_warpgroups * 4
            ),
            tx_count=stage_bytes,
            cta_layout_vmnk=cute.make_layout((1, *cluster_layout.shape)),
            defer_sync=True,
        )
        warpgroup_idx = cute.arch.make_warp_uniform(tidx // _THREADS_PER_WARPGROUP)
        # Pingpong: the consumer warpgroups run their mainloops in turn (the order barrier),
        # warpgroup 0 first.  (The producer's warpgroup index is unused.)
        wg = cutlass.max(warpgroup_idx - 1, 0)
        order = None
        if cutlass.const_expr(self.pingpong):
            order = pipeline.PipelineOrder.create(
                barrier_storage=storage.order.data_ptr(), depth=1, length=2, group_id=wg,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread,
                                                         _THREADS_PER_WARPGROUP),
                defer_sync=True,
            )
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_mn, is_relaxed=True)

        # ---- global tiles: (tile, tile, rest_m/n, rest_k, l)
        gA = cute.local_tile(gA_tma, (self.tile_mnk[0], self.tile_mnk[2]), (None, None, None))
        gB = cute.local_tile(gB_tma, (self.tile_mnk[1], self.tile_mnk[2]), (None, None, None))
        gC = cute.local_tile(gC_tma, (self.tile_mnk[0], self.tile_mnk[1]), (None, None, None))
        # A is multicast along the cluster's N mode, B along its M mode.
        tAsA, tAgA = cpasync.tma_partition(
            tma_a,
            cta_n,
            cute.make_layout(self.cluster_mn[1]),
            cute.group_modes(sA, 0, 2),
            cute.group_modes(gA, 0, 2),
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b,
            cta_m,
            cute.make_layout(self.cluster_mn[0]),
            cute.group_modes(sB, 0, 2),
            cute.group_modes(gB, 0, 2),
        )
        a_mask = None
        b_mask = None
        if cutlass.const_expr(self.a_mcast > 1):
            a_mask = cute.make_layout_image_mask(cluster_layout, cluster_coord, mode=1)
        if cutlass.const_expr(self.b_mcast > 1):
            b_mask = cute.make_layout_image_mask(cluster_layout, cluster_coord, mode=0)

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_mn)
        if cutlass.const_expr(self.config.pdl):
            # Launched early (programmatic dependent launch): no thread touches global memory
            # before the kernel ahead of this one on the stream has finished and flushed.
            cute.arch.griddepcontrol_wait()

        if warpgroup_idx == 0:
            # ================= producer warpgroup: one warp issues every TMA load
            cute.arch.setmaxregister_decrease(_PRODUCER_REGISTERS)
            if warp == 0:
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                     self.stages)
                it, end = self._units(cluster_id, total_tiles, share, rest)
                while it < end:
                    t, k_first, k_count, nxt = self._unit(
                        it, end, num_clusters, cluster_tiles_m * cluster_tiles_n, splits, k_tiles,
                        k_tiles_per_split)
                    ctm, ctn, lc = self._tile_coord(t, cluster_tiles_m, cluster_tiles_n)
                    tile_m = ctm * self.cluster_mn[0] + cta_m
                    tile_n = ctn * self.cluster_mn[1] + cta_n
                    l = lc // splits
                    tAgA_t = tAgA[(None, tile_m, None, l)]
                    tBgB_t = tBgB[(None, tile_n, None, l)]
                    for kt in range(k_count):
                        ab_pipe.producer_acquire(state)
                        barrier = ab_pipe.producer_get_barrier(state)
                        for part in cutlass.range_constexpr(self.parts):
                            # Part p of K-tile j is K-tile j + p * k_tiles of the operand.
                            src = k_first + kt + part * k_tiles
                            buf = state.index * self.parts + part
                            cute.copy(tma_a, tAgA_t[(None, src)], tAsA[(None, buf)],
                                      tma_bar_ptr=barrier, mcast_mask=a_mask)
                            cute.copy(tma_b, tBgB_t[(None, src)], tBsB[(None, buf)],
                                      tma_bar_ptr=barrier, mcast_mask=b_mask)
                        ab_pipe.producer_commit(state)
                        state.advance()
                    it = nxt
                if cutlass.const_expr(self.config.pdl):
                    # Every load of this CTA is issued: the next kernel may launch (it waits
                    # for this one to finish before touching memory).
                    cute.arch.griddepcontrol_launch_dependents()
                ab_pipe.producer_tail(state)
        else:
            # ================= consumer warpgroups: wgmma mainloop, then the epilogue
            cute.arch.setmaxregister_increase(self.consumer_registers)
            ctid = tidx - _THREADS_PER_WARPGROUP
            # This thread within the warpgroups that compute a tile together.
            mma_tid = ctid % self.tile_threads
            thr_mma = tiled_mma.get_slice(mma_tid)
            # The first thread of this thread's warpgroup within the tile, as a warp-uniform
            # value: wgmma's shared-memory descriptors are then computed in uniform registers
            # (from ``mma_tid`` ptxas moved them to vector registers and back, R2UR, before
            # every wgmma: 69 instructions per k-tile of the 128 x 256 mainloop against 51).
            wg_mma = tiled_mma.get_slice(
                cute.arch.make_warp_uniform(warpgroup_idx - 1) % self.tile_warpgroups
                * _THREADS_PER_WARPGROUP)
            tCsA = None  # A in registers: this thread's values of every A buffer in shared memory
            if cutlass.const_expr(self.a_regs):
                tCsA = thr_mma.partition_A(sA)
                tCrA = tiled_mma.make_fragment_A(tCsA[(None, None, None, 0)])
            else:
                tCrA = tiled_mma.make_fragment_A(wg_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(wg_mma.partition_B(sB))
            acc = cute.make_rmem_tensor(
                thr_mma.partition_C(gC[(None, None, 0, 0, 0)]).shape, self.acc_dtype
            )
            # With promotion, the sums live here (fp32 adds, rounded to nearest) and ``acc``
            # holds one K-tile's wgmma result at a time.
            total = cute.make_rmem_tensor(acc.shape, self.acc_dtype) if self.promote else acc
            k_blocks = cute.size(tCrA, mode=[2])

            # Register -> shared copy of one epilogue sub-tile (stmatrix for 16-bit outputs).
            # The stmatrix atom (16-bit) only shapes the thread-value layout (the accumulator
            # layout is the same for every wgmma input type); fp32 outputs are stored with plain
            # shared stores of that layout.
            r2s_atom = sm90_utils.get_smem_store_op(
                LayoutEnum.COL_MAJOR if self.c_transposed else LayoutEnum.ROW_MAJOR,
                self.c_dtype, self.acc_dtype)
            r2s = cute.make_tiled_copy_S(
                r2s_atom,
                cute.make_tiled_copy_C_atom(
                    cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(self.c_transposed, 4),
                                        cutlass.Float16),
                    tiled_mma,
                ),
            )
            thr_r2s = r2s.get_slice(mma_tid)
            tRS_sC = thr_r2s.partition_D(sC)
            tRS_acc = r2s.retile(total)
            sub_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
            sub_f32 = cute.make_rmem_tensor(sub_shape, self.acc_dtype)
            sub_out = cute.make_rmem_tensor(sub_shape, self.c_dtype)
            sub_size = cute.size(sub_f32)
            epi_cols = self.tile_mnk[1] // self.epi_tile[1]
            epi_count = self.tile_mnk[0] // self.epi_tile[0] * epi_cols
            # One epilogue barrier and store warp (its first) per tile's warpgroups; under
            # pingpong each warpgroup has its own, and its own ring of ``epi_stages`` buffers.
            tile_group = wg if self.pingpong else 0
            epi_barrier = pipeline.NamedBarrier(
                barrier_id=_EPILOGUE_BARRIER_ID + tile_group, num_threads=self.tile_threads
            )
            store_pipe = pipeline.PipelineTmaStore.create(
                num_stages=self.config.epi_stages,
                producer_group=pipeline.CooperativeGroup(
                    pipeline.Agent.Thread, self.tile_threads
                ),
            )
            is_store_warp = warp == 4 + 4 * tile_group
            ring = tile_group * self.config.epi_stages
            # Pingpong: this warpgroup's turns (warpgroup 0 may start at once: phase 1 of a fresh
            # mbarrier counts as done).  A loop-carried value must be assigned in the loop, so
            # the state is reassigned there (and unused without pingpong).
            order_state = pipeline.PipelineState(1, cutlass.Int32(0), cutlass.Int32(0),
                                                 cutlass.Int32(1) - wg)
            unit = cutlass.Int32(0)  # this CTA's work units so far (pingpong: whose turn)
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            subtiles_done = cutlass.Int32(0)

            it, end = self._units(cluster_id, total_tiles, share, rest)
            while it < end:
                t, k_first, k_count, nxt = self._unit(
                    it, end, num_clusters, cluster_tiles_m * cluster_tiles_n, splits, k_tiles,
                    k_tiles_per_split)
                # Pingpong: units alternate between the consumer warpgroups; the other's
                # stages are skipped (its K-tiles pass through the ring in between).
                mine = True
                if cutlass.const_expr(self.pingpong):
                    mine = unit % 2 == wg
                if mine:
                    ctm, ctn, lc = self._tile_coord(t, cluster_tiles_m, cluster_tiles_n)
                    tile_m = ctm * self.cluster_mn[0] + cta_m
                    tile_n = ctn * self.cluster_mn[1] + cta_n

                    # ---- mainloop: one k-tile of wgmma stays in flight
                    acc.fill(0.0)
                    fence_accumulators(acc)
                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                    if cutlass.const_expr(self.promote):
                        total.fill(0.0)
                        for kt in range(k_count):
                            # Each K-tile's three products from zero, then added in fp32
                            # registers: the tensor cores' own accumulation is not rounded to
                            # nearest.
                            ab_pipe.consumer_wait(read)
                            warpgroup.fence()
                            tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
                            for j in cutlass.range_constexpr(len(_PRODUCTS)):
                                a_buf = read.index * self.parts + _PRODUCTS[j][0]
                                b_buf = read.index * self.parts + _PRODUCTS[j][1]
                                for kb in cutlass.range_constexpr(k_blocks):
                                    cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, a_buf)],
                                              tCrB[(None, None, kb, b_buf)], acc)
                                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                            warpgroup.commit_group()
                            warpgroup.wait_group(0)
                            fence_accumulators(acc)
                            ab_pipe.consumer_release(read)
                            read.advance()
                            release.advance()
                            total.store(total.load() + acc.load())
                    elif cutlass.const_expr(self.a_regs):
                        read, release = self._mainloop_a_regs(
                            tiled_mma, acc, tCsA, tCrA, tCrB, k_blocks, k_count, ab_pipe, read,
                            release)
                    else:
                        if cutlass.const_expr(self.pingpong):
                            order.wait(order_state)  # the other warpgroup's mainloop is issued
                        for kt in range(k_count):
                            ab_pipe.consumer_wait(read)
                            warpgroup.fence()
                            for kb in cutlass.range_constexpr(k_blocks):
                                cute.gemm(
                                    tiled_mma,
                                    acc,
                                    tCrA[(None, None, kb, read.index)],
                                    tCrB[(None, None, kb, read.index)],
                                    acc,
                                )
                            warpgroup.commit_group()
                            read.advance()
                            if kt > 0:
                                # The previous k-tile's wgmma has retired: hand its stage back.
                                warpgroup.wait_group(1)
                                ab_pipe.consumer_release(release)
                                release.advance()
                        if cutlass.const_expr(self.pingpong):
                            # Every stage of this unit has landed and its wgmma are issued: the
                            # other warpgroup's turn (its epilogue ran meanwhile).
                            order_state = order.arrive(order_state)
                        warpgroup.wait_group(0)
                        fence_accumulators(acc)
                        if k_count > 0:
                            ab_pipe.consumer_release(release)
                            release.advance()

                    # ---- stream-K: a unit that starts inside its tile leaves its partial sums to
                    # the cluster that starts the tile, which adds them in cluster order and stores.
                    stores = True
                    if cutlass.const_expr(self.config.streamk):
                        stores = self._streamk_fixup(
                            total, mW, mFlags, k_first, it - k_first + k_tiles, cluster_id,
                            cta_m, cta_n, ctid, share, rest, epi_barrier)

                    # ---- epilogue: sub-tiles through shared memory, stored by TMA
                    if stores:
                        bSG_sC, bSG_gC = None, None
                        if cutlass.const_expr(not self.c_direct):
                            gC_tile = cute.zipped_divide(gC[(None, None, tile_m, tile_n, lc)],
                                                         self.epi_tile)
                            bSG_sC, bSG_gC = cpasync.tma_partition(
                                tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gC_tile
                            )
                        for e in cutlass.range_constexpr(epi_count):
                            # Sub-tile (row block, column block) of the tile; the row blocks
                            # (pingpong's 64-row halves) are the accumulators' outer mode.
                            rows, cols = e // epi_cols, e % epi_cols
                            first = rows * epi_cols * sub_size + cols * sub_size
                            for v in cutlass.range_constexpr(sub_size):
                                sub_f32[v] = tRS_acc[first + v]
                            sub_out.store(sub_f32.load().to(self.c_dtype))
                            buf = ring + (subtiles_done + e) % self.config.epi_stages
                            cute.copy(r2s, sub_out, tRS_sC[(None, None, None, buf)])
                            # Make the generic-proxy smem writes visible to the TMA (async proxy).
                            cute.arch.fence_proxy("async.shared", space="cta")
                            epi_barrier.arrive_and_wait()
                            if cutlass.const_expr(self.c_direct):
                                self._store_direct(
                                    gC_tma, sC, buf, mma_tid, lc,
                                    tile_m * self.tile_mnk[0] + rows * self.epi_tile[0],
                                    tile_n * self.tile_mnk[1] + cols * self.epi_tile[1])
                            elif is_store_warp:
                                cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, (rows, cols))])
                                store_pipe.producer_commit()
                                # Buffer (buf + 1) is written after the next barrier; its last
                                # store was issued epi_stages - 1 sub-tiles ago.
                                cute.arch.cp_async_bulk_wait_group(self.config.epi_stages - 2,
                                                                   read=True)
                        subtiles_done += epi_count
                else:
                    read.advance(k_count)
                    release.advance(k_count)
                unit += 1
                it = nxt
            if cutlass.const_expr(not self.c_direct):
                if is_store_warp:
                    store_pipe.producer_tail()

    @cute.jit
    def _store_direct(self, mC: cute.Tensor, sC: cute.Tensor, buf, mma_tid, lc, row0, col0):
        """``c_direct``: the tile's threads store epilogue sub-tile ``buf`` of shared memory
        into C (M, N, L) at (row0, col0, lc) element by element: each thread one column of the
        sub-tile, every ``tile_threads // epi_n``-th row (so a warp stores consecutive columns
        of a row), all its values loaded from shared memory before the first store, and
        every store inside C's (M, N).  A buffer is rewritten ``epi_stages`` (>= 2) sub-tiles
        later, after a barrier every thread meets once its reads of it are done."""
        epi_m, epi_n = self.epi_tile
        step = self.tile_threads // epi_n
        per_thread = epi_m // step
        first = mma_tid // epi_n
        col = mma_tid - first * epi_n
        values = cute.make_rmem_tensor((per_thread,), self.c_dtype)
        for i in cutlass.range_constexpr(per_thread):
            values[i] = sC[(first + i * step, col, buf)]
        if col0 + col < cute.size(mC, mode=[1]):
            column = mC[(None, col0 + col, lc)]
            rows = cute.size(mC, mode=[0])
            for i in cutlass.range_constexpr(per_thread):
                if row0 + first + i * step < rows:
                    column[row0 + first + i * step] = values[i]


Kernel = Sm90Hgemm  # the name the registry (dispatch.FAMILIES) looks up
