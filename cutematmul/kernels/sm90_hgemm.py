"""HGEMM for Hopper (sm_90a): TMA loads, wgmma, warp specialization, persistent tiles.

What it computes
    C[m, n, l] = sum_k A[m, k, l] * B[n, k, l] for fp16 or bf16 A and B, accumulated in fp32 and
    written as the input dtype, or (``Config.partials``) as fp32 partial sums over a run of K-tiles
    for split-K (``kernels/entry.py``: C then holds ``splits`` matrices per batch, which
    ``kernels/splitk_reduce.py`` sums in a fixed order).  A may be K-major (row-major) or M-major, B K-major or N-major
    (N-major is a row-major math B of shape (K, N)); C is always N-major.  L is a batch mode whose
    strides may be 0 (a broadcast operand).

How
    * One producer warpgroup and one or two consumer warpgroups per CTA.  A single producer warp
      issues TMA bulk-tensor copies (``cp.async.bulk.tensor``) of (tile_m x tile_k) A tiles and
      (tile_n x tile_k) B tiles into a ring of ``stages`` 128B-swizzled shared-memory buffers; an
      mbarrier pair per stage (full: TMA bytes landed, empty: consumers are done) forms the pipeline.
    * Consumers run ``wgmma.mma_async`` (m64 x tile_n x k16) straight from shared memory, keeping one
      k-tile of wgmma in flight while the next stage's barrier is awaited.  With tile_m = 128 the two
      consumer warpgroups each own 64 rows of the tile; their registers are raised with setmaxnreg
      while the producer's are lowered.
    * Persistent scheduling: the grid holds one CTA (or cluster) per SM and walks the work units
      (output tile x batch x K-split) with a stride of the grid size; tiles are visited in groups of ``raster_group`` tile-rows so
      the CTAs running at one time share A and B tiles in L2.  While consumers run the epilogue of a
      tile, the producer already fills the stages for the next one.
    * Optional 2-CTA clusters multicast the shared operand tile to both CTAs (halving its L2 reads).
    * Epilogue: the fp32 accumulators are converted to the output dtype, written to a ring of
      swizzled shared-memory sub-tiles with ``stmatrix``, and stored by TMA (``cp.async.bulk``).
      One named barrier per sub-tile: the storing warp waits for older stores with a lag of
      ``epi_stages - 2`` before it joins the next barrier, so a buffer is never overwritten while TMA
      still reads it.
    * Tails in M, N and K need no predication: TMA zero-fills out-of-bounds loads and clips stores.

Constraints
    sm_90a only.  Split-K needs ``Config.partials`` (fp32 C).  Every operand's base address,
    leading stride and batch stride must be 16-byte aligned (a TMA rule); the host stages other
    inputs into aligned copies.  K >= 1 (the host writes zeros itself for K = 0).  tile_m in
    {64, 128}, tile_n in {64, 128, 192, 256} (also 16 and 32 with ``partials``: the narrow tiles
    of transposed small-M products), tile_k = 64, clusters of at most 2 CTAs.

Benchmark
    python -m cutematmul.bench --dtypes float16 bfloat16 --kernel sm90
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.tensor_utils import LayoutEnum

from ..configs.sm90 import _PRODUCER_REGISTERS, _THREADS_PER_WARPGROUP, Config, choose_config, supports  # noqa: F401

Sm90Config = Config  # the name the tests and docs use
_EPILOGUE_BARRIER_ID = 1
_DTYPES = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16}


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
            raise ValueError(f"Sm90Hgemm takes float16 or bfloat16, got {dtype!r}.")
        if a_major not in ("k", "m") or b_major not in ("k", "n"):
            raise ValueError(f"Sm90Hgemm majors must be a in (k, m), b in (k, n); got {a_major}, {b_major}.")
        if min(align_a, align_b, align_c) < 8:
            raise ValueError("Sm90Hgemm needs 16-byte (8-element) alignment of every operand.")
        self.config = config
        self.dtype = _DTYPES[dtype]
        self.a_major, self.b_major = a_major, b_major
        self.align_a, self.align_b, self.align_c = align_a, align_b, align_c
        self.num_sms = num_sms
        self.acc_dtype = cutlass.Float32
        self.tile_mnk = (config.tile_m, config.tile_n, config.tile_k)
        self.cluster_mn = (config.cluster_m, config.cluster_n)
        self.cluster_size = config.cluster_m * config.cluster_n
        self.consumers = config.consumer_warpgroups
        self.consumer_threads = self.consumers * _THREADS_PER_WARPGROUP
        self.threads = self.consumer_threads + _THREADS_PER_WARPGROUP
        self.c_dtype = cutlass.Float32 if config.partials else self.dtype
        self.stages = config.ab_stages(self.dtype.width // 8)
        self.epi_tile = (config.tile_m, config.epi_n)
        self.consumer_registers = 232 if self.consumers == 2 else 240
        # A tile is shared along the cluster's N extent, a B tile along its M extent.
        self.a_mcast = config.cluster_n
        self.b_mcast = config.cluster_m

    # ------------------------------------------------------------------ host side
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        a_layout = LayoutEnum.from_tensor(mA)
        b_layout = LayoutEnum.from_tensor(mB)
        c_layout = LayoutEnum.from_tensor(mC)
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype,
            self.dtype,
            a_layout.sm90_mma_major_mode(),
            b_layout.sm90_mma_major_mode(),
            self.acc_dtype,
            (self.consumers, 1, 1),
            tiler_mn=(64, self.tile_mnk[1]),
        )
        sA_layout = sm90_utils.make_smem_layout_a(a_layout, self.tile_mnk, self.dtype, self.stages)
        sB_layout = sm90_utils.make_smem_layout_b(b_layout, self.tile_mnk, self.dtype, self.stages)
        sC_layout = sm90_utils.make_smem_layout_epi(
            self.c_dtype, c_layout, self.epi_tile, self.config.epi_stages
        )

        tma_a, gA_tma = self._tma_load(mA, sA_layout, (self.tile_mnk[0], self.tile_mnk[2]), self.a_mcast)
        tma_b, gB_tma = self._tma_load(mB, sB_layout, (self.tile_mnk[1], self.tile_mnk[2]), self.b_mcast)
        tma_c, gC_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(),
            mC,
            cute.slice_(sC_layout, (None, None, 0)),
            self.epi_tile,
        )

        @cute.struct
        class Storage:
            barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
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
        max_clusters = self.num_sms // self.cluster_size
        num_clusters = cutlass.min(total, max_clusters)
        k_tiles = cute.ceil_div(cute.size(mA, mode=[1]), self.tile_mnk[2])
        k_tiles_per_split = cute.ceil_div(k_tiles, splits)

        self.kernel(
            tma_a, gA_tma, tma_b, gB_tma, tma_c, gC_tma, tiled_mma,
            sA_layout, sB_layout, sC_layout,
            cluster_tiles_m, cluster_tiles_n, total, k_tiles, splits, k_tiles_per_split,
        ).launch(
            grid=[self.cluster_mn[0], self.cluster_mn[1], num_clusters],
            block=[self.threads, 1, 1],
            cluster=[self.cluster_mn[0], self.cluster_mn[1], 1],
            smem=Storage.size_in_bytes(),
            min_blocks_per_mp=1,
            stream=stream,
        )

    def _tma_load(self, tensor, smem_layout_staged, tile, mcast):
        op = cpasync.CopyBulkTensorTileG2SOp() if mcast == 1 else cpasync.CopyBulkTensorTileG2SMulticastOp()
        return cpasync.make_tiled_tma_atom(
            op, tensor, cute.slice_(smem_layout_staged, (None, None, 0)), tile, num_multicast=mcast
        )

    # ---------------------------------------------------------------- device side
    @cute.jit
    def _k_range(self, lc, splits, k_tiles, k_tiles_per_split):
        """(batch-split index of C) -> (first K-tile, K-tile count) of that split; the count may
        be 0 (the split then writes zeros)."""
        split = lc % splits
        first = split * k_tiles_per_split
        count = cutlass.max(cutlass.min(k_tiles - first, k_tiles_per_split), 0)
        return first, count

    @cute.jit
    def _tile_coord(self, t, cluster_tiles_m, cluster_tiles_n):
        """Cluster-tile index -> (m, n, l) in cluster-tile units, grouped for L2 reuse; l indexes
        C's batch x splits mode."""
        per_batch = cluster_tiles_m * cluster_tiles_n
        l = t // per_batch
        r = t - l * per_batch
        group = self.config.raster_group
        group_span = group * cluster_tiles_n
        first_m = (r // group_span) * group
        rows = cutlass.min(cluster_tiles_m - first_m, group)
        within = r - (r // group_span) * group_span
        return first_m + within % rows, within // rows, l

    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        gA_tma: cute.Tensor,
        tma_b: cute.CopyAtom,
        gB_tma: cute.Tensor,
        tma_c: cute.CopyAtom,
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
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        cta_m, cta_n, cluster_id = cute.arch.block_idx()
        num_clusters = cute.arch.grid_dim()[2]

        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self._storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)
        sC = storage.sC.get_tensor(sC_layout.outer, swizzle=sC_layout.inner)

        # ---- pipeline between the producer warp and the consumer warpgroups
        cluster_layout = cute.make_layout((*self.cluster_mn, 1))
        cluster_coord = (cta_m, cta_n, 0)
        stage_bytes = cute.size_in_bytes(
            self.dtype, cute.slice_(sA_layout, (None, None, 0))
        ) + cute.size_in_bytes(self.dtype, cute.slice_(sB_layout, (None, None, 0)))
        # Every consumer warp releases a stage once to each CTA that wrote into it.
        mcast_peers = self.a_mcast + self.b_mcast - 1
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.barriers.data_ptr(),
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread, mcast_peers * self.consumers * 4
            ),
            tx_count=stage_bytes,
            cta_layout_vmnk=cute.make_layout((1, *cluster_layout.shape)),
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

        warpgroup_idx = cute.arch.make_warp_uniform(tidx // _THREADS_PER_WARPGROUP)
        if warpgroup_idx == 0:
            # ================= producer warpgroup: one warp issues every TMA load
            cute.arch.setmaxregister_decrease(_PRODUCER_REGISTERS)
            if warp == 0:
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                t = cluster_id
                while t < total_tiles:
                    ctm, ctn, lc = self._tile_coord(t, cluster_tiles_m, cluster_tiles_n)
                    tile_m = ctm * self.cluster_mn[0] + cta_m
                    tile_n = ctn * self.cluster_mn[1] + cta_n
                    l = lc // splits
                    k_first, k_count = self._k_range(lc, splits, k_tiles, k_tiles_per_split)
                    tAgA_t = tAgA[(None, tile_m, None, l)]
                    tBgB_t = tBgB[(None, tile_n, None, l)]
                    for kt in range(k_count):
                        ab_pipe.producer_acquire(state)
                        barrier = ab_pipe.producer_get_barrier(state)
                        cute.copy(tma_a, tAgA_t[(None, k_first + kt)], tAsA[(None, state.index)],
                                  tma_bar_ptr=barrier, mcast_mask=a_mask)
                        cute.copy(tma_b, tBgB_t[(None, k_first + kt)], tBsB[(None, state.index)],
                                  tma_bar_ptr=barrier, mcast_mask=b_mask)
                        ab_pipe.producer_commit(state)
                        state.advance()
                    t += num_clusters
                ab_pipe.producer_tail(state)
        else:
            # ================= consumer warpgroups: wgmma mainloop, then the epilogue
            cute.arch.setmaxregister_increase(self.consumer_registers)
            ctid = tidx - _THREADS_PER_WARPGROUP
            thr_mma = tiled_mma.get_slice(ctid)
            wg_mma = tiled_mma.get_slice((warpgroup_idx - 1) * _THREADS_PER_WARPGROUP)
            tCrA = tiled_mma.make_fragment_A(wg_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(wg_mma.partition_B(sB))
            acc = cute.make_rmem_tensor(
                thr_mma.partition_C(gC[(None, None, 0, 0, 0)]).shape, self.acc_dtype
            )
            k_blocks = cute.size(tCrA, mode=[2])

            # Register -> shared copy of one epilogue sub-tile (stmatrix for 16-bit outputs).
            # The stmatrix atom (16-bit) only shapes the thread-value layout; fp32 partial sums
            # are stored with plain shared stores of that layout.
            r2s_atom = sm90_utils.get_smem_store_op(LayoutEnum.ROW_MAJOR, self.c_dtype, self.acc_dtype)
            r2s = cute.make_tiled_copy_S(
                r2s_atom,
                cute.make_tiled_copy_C_atom(
                    cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), self.dtype),
                    tiled_mma,
                ),
            )
            thr_r2s = r2s.get_slice(ctid)
            tRS_sC = thr_r2s.partition_D(sC)
            tRS_acc = r2s.retile(acc)
            sub_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
            sub_f32 = cute.make_rmem_tensor(sub_shape, self.acc_dtype)
            sub_out = cute.make_rmem_tensor(sub_shape, self.c_dtype)
            sub_size = cute.size(sub_f32)
            epi_count = self.tile_mnk[1] // self.epi_tile[1]
            epi_barrier = pipeline.NamedBarrier(
                barrier_id=_EPILOGUE_BARRIER_ID, num_threads=self.consumer_threads
            )
            store_pipe = pipeline.PipelineTmaStore.create(
                num_stages=self.config.epi_stages,
                producer_group=pipeline.CooperativeGroup(
                    pipeline.Agent.Thread, self.consumer_threads
                ),
            )
            is_store_warp = warp == 4
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            subtiles_done = cutlass.Int32(0)

            t = cluster_id
            while t < total_tiles:
                ctm, ctn, lc = self._tile_coord(t, cluster_tiles_m, cluster_tiles_n)
                tile_m = ctm * self.cluster_mn[0] + cta_m
                tile_n = ctn * self.cluster_mn[1] + cta_n
                _, k_count = self._k_range(lc, splits, k_tiles, k_tiles_per_split)

                # ---- mainloop: one k-tile of wgmma stays in flight
                acc.fill(0.0)
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
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
                warpgroup.wait_group(0)
                if k_count > 0:
                    ab_pipe.consumer_release(release)
                    release.advance()

                # ---- epilogue: sub-tiles through shared memory, stored by TMA
                gC_tile = cute.zipped_divide(gC[(None, None, tile_m, tile_n, lc)], self.epi_tile)
                bSG_sC, bSG_gC = cpasync.tma_partition(
                    tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gC_tile
                )
                for e in cutlass.range_constexpr(epi_count):
                    for v in cutlass.range_constexpr(sub_size):
                        sub_f32[v] = tRS_acc[e * sub_size + v]
                    sub_out.store(sub_f32.load().to(self.c_dtype))
                    buf = (subtiles_done + e) % self.config.epi_stages
                    cute.copy(r2s, sub_out, tRS_sC[(None, None, None, buf)])
                    # Make the generic-proxy smem writes visible to the TMA (async proxy).
                    cute.arch.fence_proxy("async.shared", space="cta")
                    epi_barrier.arrive_and_wait()
                    if is_store_warp:
                        cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, (0, e))])
                        store_pipe.producer_commit()
                        # Buffer (buf + 1) is written after the next barrier; its last
                        # store was issued epi_stages - 1 sub-tiles ago.
                        cute.arch.cp_async_bulk_wait_group(self.config.epi_stages - 2, read=True)
                subtiles_done += epi_count
                t += num_clusters
            if is_store_warp:
                store_pipe.producer_tail()


Kernel = Sm90Hgemm  # the name the registry (dispatch.FAMILIES) looks up
