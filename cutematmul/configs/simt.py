"""Tunables and the tile heuristic of the SIMT family: the tiled fp32 SGEMM
(``kernels/simt_sgemm.py``) and, for products of few rows, the row-streaming kernel
(``kernels/simt_gemv.py``; ``Config.gemv``), which also computes 16-bit products of a few rows
whose long operand TMA cannot read (``streams_in_place``), on tensor cores
(``kernels/simt_gemv_mma.py``; ``Config.mma``) past ``HALF_FMA_MAX_M`` rows.

DSL-free, so a configuration is chosen (and a cached kernel found) without importing the CuTe DSL.

Imports: ``configs.waves``, ``plan`` (the operand majors of a product computed transposed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..plan import transposed_majors
from . import waves

# Lanes of one warp, as a 4 (M) x 8 (N) grid; lane = n_lane + 8 * m_lane.
_LANES_M = 4
_LANES_N = 8
# fp32 elements per 128-bit access.
_VEC = 4
# Most 4x4 blocks of accumulators one thread may own (8 x 16 or 16 x 8 values).
_MAX_RUNS = 8
# Threads along K in the copy of a K-major operand (8 x 4 bytes = one 32-byte sector per row).
_K_MAJOR_COPY_K = 8
# Padding (floats) of every k-row of a shared tile filled from a K-major operand.
_K_MAJOR_PAD = 4
# Preferred shared-memory carveout (percent); passed explicitly so compiling needs no device query.
_SMEM_CARVEOUT = 100
# Per-SM limits of sm_80 / sm_90 that the occupancy hint must respect (shared memory: sm_90's).
_MAX_CTAS_PER_SM = 32
_MAX_THREADS_PER_SM = 2048
_SMEM_PER_SM = 227 * 1024
_REGISTER_FILE = 64 * 1024  # 32-bit registers per SM


#: The row-streaming kernel (``Config.gemv``): the rows one CTA computes (the smallest that
#: holds M is chosen; fp32 products of more rows take the ladder's tiles, 16-bit ones, which
#: this family runs only on the row-streaming kernel, row tiles of the most), its columns per
#: CTA, its threads, the K granule of its splits.
GEMV_ROWS = (1, 2, 4, 8)
_GEMV_TILE_N = 128
_GEMV_THREADS = 256
_GEMV_GRANULE = 128
_GEMV_UNROLL = 4
#: The row-streaming kernel on tensor cores (``Config.mma``, 16 bits only): its rows per CTA
#: (the MMA's N: 8 per ``mma.sync``), the columns of C one warp owns (one MMA row of 16) and
#: the warps along C's columns (eight: 128 columns per CTA, as the FMA kernel).  A CTA of 64
#: rows reads each of B's elements once for M up to 64, where 32-row tiles read B once per 32
#: rows (``HALF_GEMV_MAX_M``); one of 128 rows, once for M up to 128.
MMA_ROWS = (8, 16, 32, 64, 128)
MMA_WARP_N = 16
MMA_WARPS_N = 8
#: Threads of each row count's CTA: one row of ``MMA_WARPS_N`` warps, each over all the CTA's
#: rows; at 128 rows two such rows of warps, each over 64 of them (a 64-row CTA's accumulators
#: per thread, and half its share of B's loads).
_MMA_THREADS = {8: 256, 16: 256, 32: 256, 64: 256, 128: 512}
#: CTAs per SM of each row count: two, 128 registers per thread, which ptxas (CUDA 13.0,
#: sm_90a) fills without spills up to 32 rows (90-128 used).  64 rows spill up to 204 bytes
#: there (168 registers unspilled), yet two such CTAs per SM ran 1.06-1.44x faster than one
#: without spills on each of 13 products of M 33-64 (H100, 2026-12-06, fp16/bf16 over odd N
#: or K, e.g. nn 64x4097x14336 112.0 -> 82.2 us, bf16 tn 48x3316x10476 75.8 -> 52.6).
#: 128-row CTAs of eight warps (one per SM, 233-255 registers) lost to the sm90 route's copy at
#: M 65-128 (``HALF_GEMV_MAX_M``); those of sixteen warps fill an SM as two 64-row CTAs do.
_MMA_BLOCKS = {8: 2, 16: 2, 32: 2, 64: 2, 128: 1}
#: The staged row-streaming kernel (``Config.staged``: fp32 products of up to 32 rows over a
#: K-major B, ``kernels/simt_gemv_staged.py``): its rows per CTA, its columns (each lane owns
#: ``tile_n / 32``), its threads (eight warps, each over an eighth of every stage's K), the K of
#: one shared stage, the padding (floats) of A's shared rows, and the most accumulators a
#: thread may own (rows x its columns).
STAGED_ROWS = (16, 32)
STAGED_COLS = (64, 128, 256)
_STAGED_THREADS = 256
STAGED_K = 64
STAGED_A_PAD = 4
_STAGED_MAX_ACC = 128
#: Sums per thread up to which a staged CTA fits 128 registers (two CTAs per SM): ptxas
#: (CUDA 13.0, sm_90a) spilled 84 bytes at 64 sums (16 x 128) there, the copies' addresses
#: taking the rest; none at 32 (16 x 64).  Above it, one CTA (up to 255 registers, 248 used
#: at 32 x 128).
_STAGED_TWO_BLOCKS_ACC = 32
#: Bytes per element of each input dtype the family reads.
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def _group_cols(rows: int) -> int:
    """Columns of a K-major B a warp of the row-streaming kernel reads at once: 4, or 2 with
    8 rows (their values of A take 32 registers).  rows x columns <= 32: one lane stores each."""
    return 4 if rows <= 4 else 2


def _copy_lanes(rows: int) -> int:
    """Threads along the rows of a tile's 32-bit M/N-major copy: one warp spans 32 consecutive
    rows (one 128-byte line per k-row), or all of a narrower tile's rows."""
    return min(32, rows)


@dataclass(frozen=True)
class Config:
    """Tunables of the SIMT fp32 family (frozen, hashable: usable as a cache key).

    ``gemv`` selects the row-streaming kernel: ``tile_m`` rows (``GEMV_ROWS``) by ``tile_n``
    (128) columns per CTA of ``threads`` threads, ``min_blocks`` CTAs per SM; it has no shared
    k-tile ring, so ``tile_k``, ``stages`` and ``raster_group`` keep their defaults there.
    ``mma`` (with ``gemv``, 16-bit inputs only) computes its sums on tensor cores
    (``kernels/simt_gemv_mma.py``): ``tile_m`` of ``MMA_ROWS`` over ``_MMA_THREADS`` threads.
    ``pdl``: launched as a programmatic dependent launch (sm_90 and newer; ``for_capability``).
    """

    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 16
    stages: int = 3
    threads: int = 256
    raster_group: int = 8
    min_blocks: int = 2
    gemv: bool = False
    pdl: bool = False
    #: C is fp32 partial sums in a workspace of ours (a K-split, or C^T), which the reduction
    #: adds into C (``dispatch.through_workspace``); else C itself, of the inputs' dtype.  Set by
    #: the schedule exactly where it splits or transposes.
    partials: bool = False
    #: The row-streaming kernel on tensor cores (with ``gemv``; see above).
    mma: bool = False
    #: The row-streaming kernel that stages K-major tiles of both operands through shared
    #: memory (with ``gemv``, fp32 only, B K-major: ``kernels/simt_gemv_staged.py``):
    #: ``tile_m`` of ``STAGED_ROWS`` by ``tile_n`` of ``STAGED_COLS``, ``stages`` deep.
    staged: bool = False

    @property
    def name(self) -> str:
        pdl = ("_p" if self.partials else "") + ("_pdl" if self.pdl else "")
        if self.staged:
            return (f"simts_{self.tile_m}x{self.tile_n}_s{self.stages}_t{self.threads}"
                    f"_b{self.min_blocks}{pdl}")
        if self.gemv:
            kind = "simtm" if self.mma else "simtv"
            return f"{kind}_{self.tile_m}x{self.tile_n}_t{self.threads}_b{self.min_blocks}{pdl}"
        return (
            f"simt_{self.tile_m}x{self.tile_n}x{self.tile_k}_s{self.stages}"
            f"_t{self.threads}_g{self.raster_group}_b{self.min_blocks}{pdl}"
        )

    @property
    def warps_mn(self) -> tuple[int, int] | None:
        """The (warps_m, warps_n) grid whose micro-tiles (runs of 4 along M and N) hold at most
        ``_MAX_RUNS`` 4x4 blocks: squarest first, then the largest."""
        warps = self.threads // 32
        best = None
        for wm in range(1, warps + 1):
            if warps % wm:
                continue
            wn = warps // wm
            per_m, per_n = _LANES_M * wm * _VEC, _LANES_N * wn * _VEC
            if self.tile_m % per_m or self.tile_n % per_n:
                continue
            rep_m, rep_n = self.tile_m // per_m, self.tile_n // per_n
            if rep_m * rep_n > _MAX_RUNS:
                continue
            score = (abs(rep_m - rep_n), -(rep_m * rep_n))
            if best is None or score < best[0]:
                best = (score, (wm, wn))
        return None if best is None else best[1]

    @property
    def micro_tile(self) -> tuple[int, int]:
        """Accumulators per thread along M and N."""
        wm, wn = self.warps_mn
        return self.tile_m // (_LANES_M * wm), self.tile_n // (_LANES_N * wn)

    def smem_bytes(self) -> int:
        """Shared memory of one CTA (upper bound: both operands padded).  A staged CTA's
        stages, or its warps' sums, which reuse them at the end, whichever is larger."""
        if self.staged:
            ring = self.stages * (self.tile_m * (STAGED_K + STAGED_A_PAD)
                                  + self.tile_n * STAGED_K)
            return 4 * max(ring, self.threads // 32 * self.tile_m * self.tile_n)
        pad = _K_MAJOR_PAD
        return 4 * self.stages * self.tile_k * (self.tile_m + pad + self.tile_n + pad)

    def validate(self) -> None:
        """Raise ValueError naming the first rule this configuration breaks."""
        t = self.threads
        if t < 32 or t > 1024 or t % 32:
            raise ValueError(f"threads must be a multiple of 32 in [32, 1024], got {t}.")
        blocks = self.min_blocks
        if not 1 <= blocks <= _MAX_CTAS_PER_SM or blocks * t > _MAX_THREADS_PER_SM:
            raise ValueError(
                f"min_blocks must be in [1, {_MAX_CTAS_PER_SM}] with min_blocks * threads <="
                f" {_MAX_THREADS_PER_SM}, got {self.min_blocks} blocks of {t} threads."
            )
        if (self.mma or self.staged) and not self.gemv:
            raise ValueError("mma and staged are variants of the row-streaming kernel: each"
                             " needs gemv.")
        if self.mma and self.staged:
            raise ValueError("a row-streaming configuration is mma or staged, not both.")
        if self.gemv:
            self._validate_gemv()
            return
        if self.tile_k not in (8, 16, 32):
            raise ValueError(f"tile_k must be 8, 16 or 32, got {self.tile_k}.")
        if self.stages < 2:
            raise ValueError(f"stages must be at least 2, got {self.stages}.")
        if self.raster_group < 1:
            raise ValueError(f"raster_group must be at least 1, got {self.raster_group}.")
        if self.warps_mn is None:
            raise ValueError(
                f"a {self.tile_m}x{self.tile_n} tile cannot be split over {t} threads into"
                f" micro-tiles of at most {_MAX_RUNS} 4x4 blocks per thread (warps are 4x8 lanes,"
                " each lane 4-wide runs)."
            )
        for name, tile in (("tile_m", self.tile_m), ("tile_n", self.tile_n)):
            # K-major copy: threads laid out (t / 8) x 8 over (rows, k).
            if tile % (t // _K_MAJOR_COPY_K):
                raise ValueError(
                    f"{name}={tile} must be a multiple of threads/8={t // _K_MAJOR_COPY_K} for the"
                    " copy of a K-major operand."
                )
            # 128-bit copy: (tile / 4) threads along rows, the rest along k.
            across = tile // _VEC
            if t % across or self.tile_k % (t // across):
                raise ValueError(
                    f"{name}={tile} with {t} threads and tile_k={self.tile_k} does not tile the"
                    " 128-bit copy of an M/N-major operand."
                )
            # 32-bit M/N-major copy: min(32, tile) threads along rows, the rest along k.
            lanes = _copy_lanes(tile)
            if tile % lanes or t % lanes or self.tile_k % (t // lanes):
                raise ValueError(
                    f"{name}={tile} with {t} threads and tile_k={self.tile_k} does not tile the"
                    " 32-bit copy of an M/N-major operand."
                )
        self._validate_fits_sm()

    def _validate_fits_sm(self) -> None:
        """``min_blocks`` CTAs' shared memory (``smem_bytes``) on one SM: the tiled SGEMM's
        ring, the staged kernel's."""
        if self.smem_bytes() * self.min_blocks > _SMEM_PER_SM:
            raise ValueError(
                f"{self.smem_bytes()} bytes of shared memory per CTA do not fit {self.min_blocks}"
                " CTAs on one SM."
            )

    def _validate_staged(self) -> None:
        if (self.tile_m not in STAGED_ROWS or self.tile_n not in STAGED_COLS
                or self.threads != _STAGED_THREADS
                or self.tile_m * self.tile_n // 32 > _STAGED_MAX_ACC):
            raise ValueError(
                f"a staged gemv CTA computes one of {STAGED_ROWS} rows by one of {STAGED_COLS}"
                f" columns on {_STAGED_THREADS} threads, at most {_STAGED_MAX_ACC} sums per"
                f" thread, got {self.tile_m}x{self.tile_n} on {self.threads}.")
        if self.stages < 2:
            raise ValueError(f"stages must be at least 2, got {self.stages}.")
        self._validate_fits_sm()

    def _validate_gemv(self) -> None:
        warps = self.threads // 32
        if self.staged:
            self._validate_staged()
            return
        if self.mma:
            if (self.tile_m not in MMA_ROWS or self.tile_n != MMA_WARP_N * MMA_WARPS_N
                    or self.threads != _MMA_THREADS[self.tile_m]):
                raise ValueError(
                    f"a gemv mma CTA computes one of {MMA_ROWS} rows by"
                    f" {MMA_WARP_N * MMA_WARPS_N} columns on the threads of its rows"
                    f" ({_MMA_THREADS}), got {self.tile_m}x{self.tile_n} on {self.threads}.")
            return
        if self.tile_m not in GEMV_ROWS:
            raise ValueError(f"a gemv tile_m must be one of {GEMV_ROWS}, got {self.tile_m}.")
        if self.tile_n != _GEMV_TILE_N:
            raise ValueError(f"a gemv tile_n must be {_GEMV_TILE_N}, got {self.tile_n}.")
        per_warp = self.tile_n // warps
        group = _group_cols(self.tile_m)
        if (self.tile_n % warps or per_warp % group or _GEMV_GRANULE % warps
                or (_GEMV_GRANULE // warps) % _GEMV_UNROLL):
            raise ValueError(
                f"a gemv CTA of {self.threads} threads must split {self.tile_n} columns into"
                f" groups of {group} per warp and {_GEMV_GRANULE} k into runs of"
                f" {_GEMV_UNROLL} per warp."
            )


def supports(m, n, k, batch, dtype, a_major, b_major, align_a, align_b, align_c) -> str | None:
    """None when the SIMT family can run this problem, else the reason it cannot."""
    if dtype not in _DTYPE_BYTES:
        return f"the SIMT family takes {'/'.join(_DTYPE_BYTES)}, not {dtype}."
    if a_major not in ("k", "m"):
        return f"a_major must be 'k' or 'm', got {a_major!r}."
    if b_major not in ("k", "n"):
        return f"b_major must be 'k' or 'n', got {b_major!r}."
    vector = 16 // _DTYPE_BYTES[dtype]  # elements of a 16-byte vector
    for name, align in (("align_a", align_a), ("align_b", align_b), ("align_c", align_c)):
        if align not in (1, 2, 4, 8) or align > vector:
            return f"{name} must be a power of two of at most {vector} elements, got {align}."
    if m < 1 or n < 1:
        return f"the output is empty (m={m}, n={n}); there is nothing to launch."
    if k < 0:
        return f"k must be >= 0, got {k}."
    if max(m, n, k) >= 2**31:
        return f"extents must fit in int32, got m={m}, n={n}, k={k}."
    if batch < 1:
        return f"batch must be >= 1, got {batch}."
    # One CTA per tile and batch in grid.x; the smallest ladder tile is 16 x 32.
    if -(-m // 16) * -(-n // 32) * batch >= 2**31:
        return f"{m}x{n} outputs times batch {batch} need more CTAs than one launch allows."
    return None


# Candidate CTA tiles, largest first: (tile_m, tile_n, threads).  The two largest give every
# thread 16 x 8 accumulators (twice the 4x4 blocks of 8 x 8: a quarter fewer shared loads per
# FMA; ~240 registers, so 256 threads per SM); the others 8 x 8, or 8 x 4 for the 128x32 and
# 32x32 tiles (16 x 8 on fewer threads measured 0.3-0.9x of them on small products).
_LADDER = (
    (128, 256, 256),
    (128, 128, 128),
    (128, 64, 128),
    (64, 128, 128),
    (64, 64, 64),
    (32, 128, 64),
    (128, 32, 128),
    (32, 64, 32),
    (32, 32, 32),
    (16, 256, 64),
    (16, 128, 32),
    (16, 64, 32),
)


def _min_blocks(cfg: Config) -> int:
    """CTAs per SM to ask ptxas for: what shared memory and the micro-tile's register budget
    allow (128 registers per thread up to 64 accumulators, all 255 beyond)."""
    micro_m, micro_n = cfg.micro_tile
    registers = 128 if micro_m * micro_n <= 64 else 255
    by_registers = _REGISTER_FILE // (cfg.threads * registers)
    return max(1, min(by_registers, _MAX_CTAS_PER_SM, _SMEM_PER_SM // cfg.smem_bytes()))


# Relative per-SM throughput of each ladder tile when every SM is busy: larger micro-tiles issue
# fewer non-FMA instructions, smaller tiles read more bytes of L2 per FMA.  The first six from an
# H200 sweep (2026-12-02, pair-swapped B) at 4096^3, 4097x4095x4093, 4096x1024x4096 and
# 2048x8192x1024, fitted with ``_TAIL_SCALING`` over 20 shapes; the last three
# from earlier sweeps.
_TILE_EFFICIENCY = {(128, 256): 1.0, (128, 128): 0.94, (128, 64): 0.86, (64, 128): 0.94,
                    (64, 64): 0.82, (32, 128): 0.82, (128, 32): 0.78, (32, 64): 0.68,
                    (32, 32): 0.53, (16, 256): 0.7, (16, 128): 0.6, (16, 64): 0.5}
#: What a K-major B (as the kernel reads it: not copied N-major, ``operand_copies``) leaves of
#: each tile height's efficiency: B is then read 4 bytes per load and transposed into shared
#: memory once per tile, and a tile of few rows does that for few FMAs.  Fitted to H200 runs,
#: 2026-12-03, fp32 "highest" with A copied M-major and B K-major (``x @ w.T``), us per
#: schedule (cuBLAS SGEMM), padded work over time against 128 x 256: 75x2864x3300 32x128 (13
#: splits) 111.1, 64x128 (11) 77.0, 128x128 (11) 69.9, 128x256 (11) 68.0 (66.0): 0.44, 0.85,
#: 0.93, 1; 81x2424x3524 32x128 (16) 100.0, 128x128 (13) 64.7, 128x256 (13) 62.8 (64.1): 0.45,
#: 0.92, 1.  With an N-major B the 32-row tile kept its 0.82 (75x2864x3300 nn 58.4 us at 11
#: splits, cuBLAS 60.5), and 16- and 32-row tiles ran 2.2x slower with B K-major than N-major
#: (13x5084x5864 106.3 / 50.3 us, 17x6448x5012 150.2 / 66.3).  Then, set before it ran, on
#: 16 products whose pick it changes (M 16-1200, N 128-12000, K 512-8192; same method, every
#: result checked against float64), previous / new pick x cuBLAS SGEMM: geometric mean 0.685x /
#: 0.862x (with the two above; least 0.45 / 0.62), e.g. 75x4096x3300 0.56 / 0.98x, 48x512x2048
#: 0.78 / 1.04x, 160x4096x8192 0.62 / 0.88x; where it lost, 1200x4096x1024 (64x128 unsplit
#: 266.0 us against 128x256 in 4 splits 301.3).
#: The 32-row tiles take the 0.45 fitted above (they had 0.54, which kept 9x2164x11352 on 32 x
#: 128, 137.6 us against 111.5 on 16 x 256); the 16-row tiles' 0.3 puts them below the 32 x 32
#: tile's price (``_K_MAJOR_B_TILES``).
_K_MAJOR_B = {16: 0.3, 32: 0.45, 64: 0.9, 128: 1.0}
#: Tiles whose K-major-B price is their own, not their height's.  The one-warp 32 x 32 tile
#: (16 CTAs per SM) ran such products of M 9-31
#: 1.1-1.6x faster than the 32- and 16-row tiles the heights' prices picked (H100, 2026-12-06,
#: fp32 "highest" nt, ``tools/sweep_schedule.py fp32 --tuner --cold``, best split of each, us):
#: 31x5456x2624 49.7 against 32x128 69.9, 20x6000x2600 58.2 / 85.5, 20x2500x8000 66.6 / 101.1,
#: 10x2500x8000 61.6 against 16x256 78.6, 9x5096x2504 43.8 / 55.6; from M 39 the 64 x 128 tile
#: stayed ahead of it (39x2372x2788 38.3 / 45.8).  It took M <= 16 from the 16-row tiles too
#: (10x6000x2600 59.3 at the split the model picks, against 68.2 on 16 x 256), whose price
#: with a K-major B (``_K_MAJOR_B``) is cut below it.  Then, with 32-row tiles still at 0.54,
#: on the 46 products whose pick it changed (31 nt of the fp32 class of seeds 920-999, 9 of
#: seeds 900-919, 6 tt; same method, two runs): x cuBLAS SGEMM 0.688x -> 0.831x (least 0.46x ->
#: 0.49x), the 31 held out 1.21x faster (least 0.81x: 9x2164x11352, which the 0.45 above
#: moves to this tile), tt 1.17x (4x4096x4096 54.0 -> 48.1 us).
#: Products of up to 32 rows over a K-major B now run on the staged row-streaming kernel
#: (``staged_rows``); the tile keeps M 33-38 and the products of few columns.
_K_MAJOR_B_TILES = {(32, 32): 1.0}
# The 16-row tiles' are not fitted: below the 32-row tiles', with an N-major B they still win
# at M <= 16 (the only products they are offered for), where they compute half the padding.
# Their split is the model's: at 16x8192x8192 its pick (16x256, 11 splits, 102.9 us) ran 22%
# slower than the best swept (16x128 in 8 splits, 83.8; cuBLAS 145.2).  H200, 2026-12-02.
# fp32 FMA as this family sustains it on an H100/H200-class SM (~50 TFLOP/s on 132 SMs).
_FLOPS_PER_SM = 0.38e12
_MIN_K_TILES = 8
# ``waves.Rate.tail_scaling`` of tiles with 8 x 8 (or fewer) accumulators per thread and two
# warps or more per CTA: a partial last wave of r of their 4-8 CTAs per SM takes about
# (r / slots) ** 0.65 of a full one.  H200 sweeps, 2026-12-02: six ladder tiles x splits 1-4 over
# 20 shapes (64x128 tiles at 1792^3, three CTAs on most SMs, ran 3/4 of a full wave's time), then
# old against new picks on 27 more.  The others take a full wave's time (0): the 16 x 8 tiles,
# whose CTAs need a second warp per scheduler to keep the FMA pipe fed (a lone 128x128 CTA of
# 4 warps ran at half the SM's rate), and one-warp CTAs, which the exponent made look up to 6x
# faster alone (tiny batched products then ran 1.3-1.6x slower on 32x64 tiles).
_TAIL_SCALING = 0.65


#: (tile_k, stages) of ladder tiles that differ from the default 16 x 3.  The 128x256 tile (256
#: threads, 16 x 8 accumulators each) copies 24 elements per thread per 16-deep k-tile in one
#: burst, which stalled its warps on the load/store queue (ncu, 4096^3 with both operands
#: K-major: 61k and 74k cycles per warp of lg and mio throttle at 16 x 3, 0.2k and 0.5k at
#: 8 x 6, the same 48 k-rows in flight).  8 x 6 against 16 x 3, x cuBLAS SGEMM (H200,
#: 2026-12-02, copies off): K-major B 4096^3 0.96 / 0.92, 8192^3 0.96 / 0.93, 16 x 1024^3
#: 0.97 / 0.92, 1024^3 0.95 / 0.92, 1000^3 0.88 / 0.87; N-major B 4096^3 1.02 / 1.00,
#: 1000^3 0.92 / 0.90, 128 x 8192^2 0.98 / 0.97.  The 8 x 8 tiles lost with 8-deep k-tiles
#: (N-major B at 1536^3, 64x128: 0.77 / 0.87) and the 128x128 tile was mixed (2048^3 N-major
#: 0.95 / 0.93, K-major 0.86 / 0.88): they keep 16 x 3.
_K_TILING = {(128, 256): (8, 6)}


#: Programmatic dependent launch where the GPU has it (``for_capability``): the launch and
#: set-up overlap the end of the kernel before it on the stream, and the split-K reduction
#: after it may launch early.  Taken by the row-streaming kernel and by tiles of one CTA per
#: SM; measured (H200, 2026-12-02, 20 products back to back, us with / without, same
#: schedule): row-streaming 1x4096x4096 19.5 / 20.9, 1x1024x4096 with a K-major B 7.7 / 8.2,
#: 1x14336x4096 55.6 / 57.0, 4x4096x4096 21.1 / 21.9, 8192x8x8192 (C^T) 115.0 / 115.9; the
#: 128x256 tile (one CTA per SM) 768^3 33.7 / 34.6, 1000^3 54.2 / 55.3, 1000^3 with a
#: K-major B 56.4 / 57.2, 4096^3 2612 / 2630, 128x8192x8192 339.9 / 343.4.  Tiles of four
#: CTAs per SM lost, for a reason not yet found: 512^3 (128x32, 4 splits) 21.3 / 15.4 and
#: 16x4096x4096 (16x256, 16 splits) 41.7 / 30.4; 1536^3 (64x128) 194.7 / 195.6.
_PDL = True


def _pdl(cfg: Config) -> bool:
    """Whether ``cfg`` is a programmatic dependent launch (``_PDL``)."""
    return _PDL and (cfg.gemv or cfg.min_blocks == 1)


def for_capability(config: Config, capability: tuple[int, int]) -> Config:
    """``config`` as it runs on a GPU of ``capability`` (``dispatch.schedule``): without the
    programmatic dependent launch before sm_90, whose ``griddepcontrol`` it lacks."""
    return replace(config, pdl=False) if config.pdl and capability < (9, 0) else config


def _config(tm: int, tn: int, threads: int) -> Config:
    tile_k, stages = _K_TILING.get((tm, tn), (Config.tile_k, Config.stages))
    cfg = Config(tile_m=tm, tile_n=tn, tile_k=tile_k, stages=stages, threads=threads)
    cfg = replace(cfg, min_blocks=_min_blocks(cfg))
    return replace(cfg, pdl=_pdl(cfg))


def gemv_config(rows: int) -> Config:
    """The row-streaming configuration for ``rows`` (``GEMV_ROWS``) rows: 256 threads, and as
    many CTAs per SM as 64 registers per thread allow (128 beyond two rows: 8 rows hold 32
    accumulators and 32 values of A per thread)."""
    registers = 64 if rows <= 2 else 128
    blocks = _REGISTER_FILE // (_GEMV_THREADS * registers)
    cfg = Config(tile_m=rows, tile_n=_GEMV_TILE_N, threads=_GEMV_THREADS, min_blocks=blocks,
                 gemv=True)
    return replace(cfg, pdl=_pdl(cfg))


def staged_config(rows: int, tile_n: int | None = None, stages: int = 3) -> Config:
    """The staged row-streaming configuration (fp32 over a K-major B) for ``rows`` rows: the
    fewest ``STAGED_ROWS`` that hold them (the most past them: several row tiles), ``tile_n``
    columns (by default 128, or as many as ``_STAGED_MAX_ACC`` sums per thread allow), and two
    CTAs per SM where each thread's sums are at most ``_STAGED_TWO_BLOCKS_ACC``, else one."""
    tile_m = next((r for r in STAGED_ROWS if r >= rows), STAGED_ROWS[-1])
    if tile_n is None:
        tile_n = min(128, 32 * _STAGED_MAX_ACC // tile_m)
    blocks = 2 if tile_m * tile_n // 32 <= _STAGED_TWO_BLOCKS_ACC else 1
    cfg = Config(tile_m=tile_m, tile_n=tile_n, stages=stages, threads=_STAGED_THREADS,
                 min_blocks=blocks, gemv=True, staged=True)
    return replace(cfg, pdl=_pdl(cfg))


def mma_config(rows: int) -> Config:
    """The row-streaming configuration on tensor cores for ``rows`` (``MMA_ROWS``) rows:
    ``_MMA_THREADS`` threads, and as many CTAs per SM as their registers allow
    (``_MMA_BLOCKS``)."""
    cfg = Config(tile_m=rows, tile_n=_GEMV_TILE_N, threads=_MMA_THREADS[rows],
                 min_blocks=_MMA_BLOCKS[rows], gemv=True, mma=True)
    return replace(cfg, pdl=_pdl(cfg))


#: fp32 products of at most ``STAGED_MAX_M`` rows over a K-major B run on the staged
#: row-streaming kernel (``staged_config``): those of an M-major A from one row, those of a
#: K-major A from ``STAGED_MIN_K_MAJOR_M`` rows (the FMA row-streaming kernel, whose lanes each
#: load their own run of A, keeps 1-2 rows: measured from 4), except products of at most 8
#: columns, which run on the FMA kernel as C^T (``_ranked``).  H100, 2026-12-07, L2-cold
#: (``tools/sweep_schedule.py fp32 --staged --cold``, 25 products), us at the split the rule
#: picks against the earlier pick (cuBLAS SGEMM): nt 27x2288x3944 30.2 against 45.5 on the
#: one-warp 32 x 32 tile (32.8), 25x4760x5872 73.0 / 99.5 at its best split (73.2),
#: 16x8192x8192 101.2 / 171.8 (148.6), 32x14336x4096 129.4 / 179.9 (195.3), 9x2164x11352
#: 45.9 / 88.6 (67.7); nt of few rows against the FMA kernel 4x4096x4096 30.9 / 34.5 (34.8),
#: 8x14336x4096 87.4 / 117.5 (136.2); tt 4x4096x4096 31.3 / 48.0 (65.4), 20x3000x4000 36.7 /
#: 40.6 (38.1).  Its 64-row CTA (two row tiles' worth of sums per thread, spilling) lost to
#: the ladder's 64 x 128 tile at M 39-64 (0.56-0.64x cuBLAS against 0.85-0.92x), so M past
#: 32 keeps the ladder.
STAGED_MAX_M = 32
STAGED_MIN_K_MAJOR_M = 3


def staged_rows(m: int, n: int, a_major: str, b_major: str) -> bool:
    """Whether an fp32 ``m`` x ``n`` product of these majors (kernel orientation) runs on the
    staged row-streaming kernel (``STAGED_MAX_M``)."""
    if b_major != "k" or m > STAGED_MAX_M or n <= GEMV_ROWS[-1]:
        return False
    return a_major == "m" or m >= STAGED_MIN_K_MAJOR_M


def _gemv_rows(extent: int) -> int | None:
    """The fewest ``GEMV_ROWS`` that hold ``extent`` rows; None past the most (fp32 takes the
    ladder's tiles)."""
    return next((r for r in GEMV_ROWS if r >= extent), None)


def _half_gemv_config(extent: int, b_major: str) -> Config:
    """The row-streaming configuration of a 16-bit product of ``extent`` rows over a B of
    ``b_major`` (kernel orientation): the FMA kernel's fewest rows up to
    ``HALF_FMA_MAX_M``, else the tensor-core kernel's fewest ``MMA_ROWS`` (row tiles of the
    most past it)."""
    if extent <= HALF_FMA_MAX_M.get(b_major, 0):
        return gemv_config(_gemv_rows(extent))
    return mma_config(next((r for r in MMA_ROWS if r >= extent), MMA_ROWS[-1]))


#: A 16-bit product runs on the row-streaming kernel (reading its long operand as it is) where
#: its M (or, as C^T, N) is at most this for the kernel's B major (lanes along N for an
#: N-major B, along K for a K-major one) and the long operand, B (or A), is one TMA cannot
#: read: rows of no whole 16-byte vectors (N or K not a multiple of 8, or an unaligned base).
#: The sm90 route copies that operand into padded rows first and writes C through the
#: reduction (``configs.sm90.operand_copies``), moving the bytes that bound such a product
#: three times.  H200, 2026-12-05, L2-cold rotated inputs, us, sm90 route / row-streaming
#: (cuBLAS through PyTorch), every result checked against float64: B N-major, bf16 nn
#: 1x3316x10476 85.3 / 49.7 (52.1), 1x4164x15203 180.0 / 54.9 (61.2), 1x50257x768 96.1 / 32.8
#: (33.9), 1x11007x4096 93.9 / 54.4 (33.7), 4x3316x10476 80.3 / 61.2 (33.7), 4x4164x15203
#: 179.0 / 62.4 (118.0), 4x50257x768 83.6 / 44.1 (40.5), 4x11007x4096 92.8 / 73.3 (80.6), fp16
#: nn 8x3316x10476 81.0 / 66.3 (36.4), 8x4164x15203 178.8 / 64.5 (114.2), 8x50257x768 84.7 /
#: 46.2 (68.7), 8x11007x4096 93.2 / 77.4 (86.2), tn 2x10573x13737 298.2 / 104.9 (228.7), bf16
#: tn 5x8381x5961 120.1 / 61.9 (79.2); M of 12-32 lost on it (M 12 and 16 on 8-row tiles: bf16
#: tn 12x3316x10476 82.1 / 139.4, fp16 nn 16x11007x4096 93.8 / 181.9; 16-row CTAs slower
#: still).  B K-major (``x @ w.T``, odd K): bf16 nt 1x4096x4095 34.7 / 17.4 (19.9), fp16 nt
#: 4x14336x4097 162.0 / 64.4 (73.9), but bf16 nt 8x4096x4095 35.0 / 46.8 (32.6).  M 33-64
#: on 64-row CTAs, H100, 2026-12-06, one run, x cuBLAS, sm90 route -> row streaming, drawn
#: fp16/bf16 products (``.lab/sr.cases``, not committed): 13 products 0.801x -> 1.212x
#: geometric mean, e.g. fp16 nn 64x4097x14336 0.718 -> 1.585, 64x4097x4096 0.755 -> 1.320,
#: bf16 tn 48x3316x10476 0.428 -> 0.757, nt 40x14336x8191 0.741 -> 1.139; slower only with a
#: short K: bf16 nn 48x2051x1024 1.220 -> 1.096, fp16 tn 56x3316x1024 0.984 -> 0.914.  M
#: 65-128 streams on 128-row CTAs where they fill the machine (``STREAM_FILL``,
#: ``STREAM_PARTIALS``), else the copy route runs it.
HALF_GEMV_MAX_M = {"n": 128, "k": 128}
#: M 65-128 streams on one 128-row CTA per SM (``_MMA_BLOCKS``), which keeps half the loads of
#: B in flight that two 64-row CTAs do: it beats the sm90 route's copy of B only where its grid
#: (column tiles x K-splits x batch) fills at least this share of the SMs, and where its fp32
#: partial sums (M N splits x 4 bytes) are at most ``STREAM_PARTIALS`` of B's bytes.  H100,
#: 2026-12-06, L2-cold rotated inputs, us, copy route / 128-row streaming (x cuBLAS), 15
#: products over an odd N or K (``.lab/sr.cases``, not committed): the 6 that fill 90-100% of
#: the SMs with small partials all stream faster, e.g. fp16 nn 96x4097x8192 109.0 / 71.6
#: (0.672 -> 1.017x), bf16 nn 120x4099x4096 59.8 / 47.0, fp16 nt 80x4096x4097 55.7 / 44.2,
#: bf16 nt 128x3072x8191 (120 CTAs) 67.9 / 64.4; 7 of the 8 that fill 65-77% lose, e.g. fp16 nn
#: 128x11007x4096 (86 CTAs) 112.0 / 131.3, bf16 nn 96x11007x1024 30.5 / 35.9, and so does bf16
#: tn 128x3316x1024 (130 CTAs, partials 1.25x B's bytes) 14.2 / 18.4; bf16 tn 72x6145x14336
#: (98 CTAs) ties, 216.5 / 214.0.  The 15 together: 0.935x on the copy route, 0.936x all
#: streamed, 1.015x as this rule picks.  64-row CTAs (two per SM) always stream: they ran ahead
#: of the copy on all 13 products of M 33-64 above.
STREAM_FILL = 0.85
STREAM_PARTIALS = 0.25
#: The rows up to which a 16-bit product streams on the FMA kernel (``GEMV_ROWS``), by B's
#: major; more, up to ``HALF_GEMV_MAX_M``, stream on the tensor-core kernel (``mma_config``).
#: H100, 2026-12-05, L2-cold rotated inputs, us, sm90 route / tensor-core row streaming
#: (cuBLAS), every result checked against float64: M 9-32 over an odd N (nn, tn; 24 products
#: of N x K 3316 x 10476, 4164 x 15203, 50257 x 768, 11007 x 4096) 2.40x faster than the sm90
#: route (geometric mean, least 1.72x) and 1.48x cuBLAS (0.80-2.34x), e.g. fp16 tn
#: 9x11007x4096 112.4 / 46.3 (97.8), bf16 nn 32x3316x10476 96.3 / 46.5 (37.4); over an odd K
#: (nt) bf16 16x4096x4095 39.3 / 25.9 (45.0), fp16 24x14336x4097 173.9 / 77.9 (119.7).
#: FMA against tensor-core kernel at M 1-4, the time ratio's geometric mean over products
#: drawn at random (N 2944-14000, K 1024-16384, odd N or K, fp16/bf16; 50 products; H100,
#: 2026-12-05, ``.lab``, not committed): over an N-major B (nn, tn) M 1 1.16 (13 products,
#: each faster on tensor cores, 1.02-1.36), M 2 1.01 (0.91-1.16), M 3 1.44, M 4 1.49; over a
#: K-major B (nt) M 1 0.80 (0.76-0.82), M 2 0.81, M 3 0.95 (0.92-0.97), M 4 1.00.  So the FMA
#: kernel keeps 1-2 rows over a K-major B and none over an N-major one.  (A fixed grid of 42
#: products agreed but for a short K under a long N: fp16 tn 1x50257x768 38.7 / 41.2 and
#: 1x2049x2048 8.4 / 10.5 favoured FMA at one row.)
HALF_FMA_MAX_M = {"n": 0, "k": 2}


def streams_in_place(m: int, n: int, k: int, batch: int, num_sms: int,
                     majors: tuple[str, str], vectors: tuple[bool, bool]) -> bool:
    """Whether a 16-bit product runs on the row-streaming kernel ahead of the tensor-core
    families (``dispatch.problem_order``): M of at most ``HALF_GEMV_MAX_M`` (for B's major)
    over a B whose rows are no whole 16-byte vectors (``vectors``: A's and B's), or N of at
    most it (for A^T's major, B's as C^T) over such an A, each where the kernel reads the
    majors well (``gemv_reads``) and, on one CTA per SM, fills the machine
    (``_fills_machine``)."""
    flipped = transposed_majors(*majors)
    if (not vectors[1] and gemv_reads(*majors) and m <= HALF_GEMV_MAX_M.get(majors[1], 0)
            and _fills_machine(m, n, k, batch, num_sms, majors[1])):
        return True
    return (not vectors[0] and gemv_reads(*flipped)
            and n <= HALF_GEMV_MAX_M.get(flipped[1], 0)
            and _fills_machine(n, m, k, batch, num_sms, flipped[1]))


def _fills_machine(rows: int, cols: int, k: int, batch: int, num_sms: int,
                   b_major: str) -> bool:
    """Whether the row-streaming schedule of a 16-bit ``rows`` x ``cols`` product (kernel
    orientation) keeps enough of B in flight to beat a copy of B: always on CTAs of two or more
    per SM; on one per SM (128 rows) where its CTAs fill ``STREAM_FILL`` of the SMs and its
    partial sums stay within ``STREAM_PARTIALS`` of B's bytes (16-bit: the CTA is the same
    for fp16 and bf16)."""
    if _half_gemv_config(rows, b_major).min_blocks > 1:
        return True
    config, splits, _ = _gemv_ranked(rows, cols, k, batch, num_sms, waves.MAX_SPLITS, False,
                                     0, "float16", b_major)[0]
    ctas = -(-cols // config.tile_n) * splits * batch
    # Per column of C: fp32 partials of every row and split against B's 16-bit column of K.
    partial_bytes = rows * splits * 4 if splits > 1 else 0
    return ctas >= STREAM_FILL * num_sms and partial_bytes <= STREAM_PARTIALS * 2 * k


def schedule_options(math: str, a_major: str, b_major: str, c_aligned: bool = True) -> dict:
    """The schedule functions' keyword arguments for these majors
    (``dispatch.schedule_options``): the majors themselves (``gemv_reads``).  C's alignment
    (``c_aligned``) does not change a SIMT schedule."""
    return {"majors": (a_major, b_major)}


#: Operand copies of the tiled kernel (``operand_copies``).  Its fastest reads are an M-major
#: A (16-byte copies) and an N-major B; a K-major operand is read 4 bytes per copy and
#: transposed into shared memory.  With both operands K-major (``x @ w.T``, a linear layer) it
#: ran 0.86-0.93x cuBLAS SGEMM at every size from 32 x 8192 x 8192 to 8192^3 (H200,
#: 2026-12-02).  A copy moves its operand twice: 8 N K bytes for B, about 60 / M of the
#: product's time at 51 TFLOP/s and 3.5 TB/s, and 60 / N for A.  So B is copied N-major where
#: M is large, else A M-major where N is.  Measured (x cuBLAS SGEMM, both operands K-major; as
#: they are / A copied / B copied; H200, 2026-12-02; docs/performance.md, sixteenth session):
#:
#: * M >= 1536: B's copy best or within 1.5% of A's (1536^3 0.75 / 0.80 / 0.83x, 2048^3 0.93 /
#:   0.95 / 0.97x, 4096^3 0.92 / 0.98 / 0.99x, 8192^3 0.92 / 0.99 / 1.01x, 4096 x 512 x 4096
#:   0.88 / 0.82 / 0.95x; 8192 x 128 x 8192 0.87 -> 0.91x with B's).
#: * M <= 512, N >= 4096: A's copy best (32 x 8192 x 8192 0.88 / 0.91 / 0.56x, 128 x 8192 x
#:   8192 0.92 / 0.99 / 0.62x, 512 x 8192 x 8192 0.92 / 0.98 / 0.87x, 64 x 4096 x 4096 0.90 /
#:   0.97 / 0.55x).
#: * Neither pays at 768-1024 per side (1000^3 0.86 / 0.81 / 0.81x, 1024^3 0.97 / 0.91 / 0.92x)
#:   nor with N = 1024 (256 x 1024 x 4096 1.00 / 0.95 / 0.80x).
#: Few rows or columns go to the row-streaming kernel, which reads K-major operands well.
#:
#: A product of at most 8 columns (``GEMV_ROWS``) whose A is K-major and whose B is N-major
#: (``a @ x`` with x of shape (K, 1..8)) would give that kernel, as C^T = B^T A^T, an M-major
#: B^T, which it cannot read well (``gemv_reads``), so B is copied K-major first (N K floats
#: against A's M K) where A is large: M K >= ``COPY_B_GEMV_MIN_MK`` and K >=
#: ``COPY_B_GEMV_MIN_K``.
#: Measured (H200, 2026-12-02, x cuBLAS SGEMM, tiled kernel as before / copy and
#: row-streaming): 8192 x 8 x 8192 1.02 / 1.19x, 8192 x 4 x 8192 1.01 / 1.66x, 8192 x 2 x 8192
#: 1.83 / 2.91x, 16384 x 8 x 4096 1.29 / 1.52x, 4096 x 3 x 14336 1.21 / 1.96x; below the
#: bounds the row-streaming grid (M / 128 columns of C^T times the splits) is too small or
#: its K-major runs too short: 4096 x 8 x 4096 1.07 / 0.91x, 65536 x 8 x 512 0.98 / 0.77x,
#: 1024 x 8 x 1024 2.00 / 0.73x, M = 16-128 with K = 8192 0.51-0.57 / 0.38-0.41x (both lose to
#: cuBLAS there), 1024 x 8 x 8192 0.92 / 1.09x (left out).
COPY_B_MIN_M = 1536
COPY_B_MIN_N = 128
COPY_A_MIN_M = 32
COPY_A_MIN_N = 2048
COPY_B_GEMV_MIN_MK = 1 << 25
COPY_B_GEMV_MIN_K = 2048


def operand_copies(math: str, a_major: str, b_major: str, m: int, n: int, k: int, batch: int,
                   num_sms: int, readable: tuple[bool, bool] = (True, True),
                   counts: tuple[int, int] = (1, 1)) -> tuple[str | None, str | None]:
    """Which of (A, B) the kernel reads through a copy of ours (``kernels/operand_prep.py``, one
    part, values unchanged), and each copy's major; None: read as it is.  A K-major B is copied
    N-major when M >= ``COPY_B_MIN_M`` and N >= ``COPY_B_MIN_N`` (the copy costs ~60 / M of
    the product); else, with both operands K-major, A is copied M-major when M >=
    ``COPY_A_MIN_M`` and N >= ``COPY_A_MIN_N`` (~60 / N).  An operand the kernel cannot read
    is staged by the caller instead, row-major (``launch.Staging``).  An N-major B of at most
    8 columns under a K-major A is copied K-major for the row-streaming kernel when A is large
    (``COPY_B_GEMV_MIN_MK``, ``COPY_B_GEMV_MIN_K``), so that the product runs transposed on
    it; the copy needs only a unit stride.  ``batch``, ``num_sms`` and ``counts`` (the matrices
    of each operand) are unused.  A 16-bit product (row-streaming, ``streams_in_place``) reads
    both operands as they are."""
    if math != "float32":
        return None, None
    if ((a_major, b_major) == ("k", "n") and _gemv_rows(n) and not _gemv_rows(m)
            and m * k >= COPY_B_GEMV_MIN_MK and k >= COPY_B_GEMV_MIN_K):
        return None, "k"
    if b_major == "k" and readable[1] and m >= COPY_B_MIN_M and n >= COPY_B_MIN_N:
        return None, "n"
    both_k = a_major == "k" and b_major == "k"
    if (both_k and readable[0] and m >= COPY_A_MIN_M and n >= COPY_A_MIN_N
            and not staged_rows(m, n, a_major, b_major)):
        return "m", None
    return None, None


def gemv_reads(a_major: str, b_major: str) -> bool:
    """Whether the row-streaming kernel reads these (kernel-orientation) majors well.  Not an
    M-major A with a K-major B: its lanes run along K, so each would load A element by element
    with the lanes' addresses a row of A apart (8192 x 8 x 8192 computed as C^T = B^T A^T from
    a row-major B ran 10x slower than cuBLAS; H200, 2026-12-02)."""
    return (a_major, b_major) != ("m", "k")


def choose_schedule(m: int, n: int, k: int, batch: int, num_sms: int,
                    max_splits: int = waves.MAX_SPLITS, math: str = "float32",
                    transposable: bool = True, majors: tuple[str, str] = ("k", "n"),
                    streamk: bool = True) -> tuple[Config, int, bool]:
    """(configuration, K-splits, transposed).  ``math``: "float32", or a 16-bit type, which
    runs only on the row-streaming kernel (``streams_in_place``); ``streamk`` is taken as
    every family's schedule takes it (whether the route has stream-K's zeroed flags), and this
    family has no stream-K schedule.

    Products of at most ``STAGED_MAX_M`` rows over a K-major B run on the staged
    row-streaming kernel (``staged_rows``, ``staged_config``), other products of at most 8 rows
    on the FMA row-streaming kernel (``gemv_config``), products of at most 8 columns on it as
    C^T = B^T A^T (``transposed``, through the workspace; not when
    ``transposable`` is False), each where it reads the operands' ``majors`` well
    (``gemv_reads``); see ``_ranked``.  Other products take the ladder tile and split of least
    estimated time under the wave model (``waves``), each tile's efficiency lowered by a
    K-major B by its height (``_K_MAJOR_B``): tiles much longer than the problem (beyond
    its extent rounded up to a power of two) are not considered, and when even the smaller
    tiles leave SMs idle (skinny products, long K), K is split and
    ``kernels/splitk_reduce.py`` adds the fp32 partial sums.
    """
    return _ranked(m, n, k, batch, num_sms, max_splits, transposable, majors, limit=0,
                   math=math)[0]


def candidates(m: int, n: int, k: int, batch: int, num_sms: int,
               max_splits: int = waves.MAX_SPLITS, math: str = "float32",
               limit: int = 8,
               majors: tuple[str, str] = ("k", "n")) -> list[tuple[Config, int, bool]]:
    """What the autotuner times (``cutematmul.tune``): ``choose_schedule``'s pick first, then
    the ``limit`` schedules the wave model ranks best (for the row-streaming kernel, the split
    counts nearest its pick)."""
    found = []
    for choice in _ranked(m, n, k, batch, num_sms, max_splits, True, majors, limit, math):
        if choice not in found:
            found.append(choice)
    return found


def _ranked(m: int, n: int, k: int, batch: int, num_sms: int, max_splits: int,
            transposable: bool, majors: tuple[str, str], limit: int = 1,
            math: str = "float32") -> list[tuple[Config, int, bool]]:
    """(config, splits, transposed): the pick, then up to ``limit`` other candidates.

    A product the row-streaming kernel holds (at most 8 rows, or transposed 8 columns) and
    reads well (``gemv_reads``) runs on it (``_gemv_ranked``): it beat every ladder tile on 10
    of 11 such products (H200, 2026-12-02, fp32 nn and nt, best split of each; e.g.
    1x4096x4096 20.9 us against 27.5 on 16x64 tiles, 4x14336x4096 nt 72.8 against 132; the
    exception 8x4096x14336 nn, 76.7 against 72.7).  A product of up to ``STAGED_MAX_M`` rows
    over a K-major B runs on the staged row-streaming kernel instead (``staged_rows``), its
    splits chosen alike.  Other products take the ladder tile and split of least estimated time
    under the wave model, then the model's next candidates.
    A 16-bit product runs on the row-streaming kernel whatever its size (``streams_in_place``
    says where it is asked to): along its shorter side of M and N (N: transposed, where
    ``transposable``), or along the other where only that side's majors read well."""
    a_major, b_major = majors
    flipped = transposed_majors(a_major, b_major)
    if math != "float32":
        if transposable and gemv_reads(*flipped) and (n < m or not gemv_reads(*majors)):
            return _gemv_ranked(n, m, k, batch, num_sms, max_splits, True, limit, math,
                                flipped[1])
        return _gemv_ranked(m, n, k, batch, num_sms, max_splits, False, limit, math, b_major)
    if staged_rows(m, n, a_major, b_major):
        return _gemv_ranked(m, n, k, batch, num_sms, max_splits, False, limit, staged=True)
    if _gemv_rows(m) and gemv_reads(a_major, b_major):
        return _gemv_ranked(m, n, k, batch, num_sms, max_splits, False, limit)
    if transposable and _gemv_rows(n) and gemv_reads(*flipped):
        return _gemv_ranked(n, m, k, batch, num_sms, max_splits, True, limit)
    configs, tiles = _space(m, n, b_major)
    tile, splits = waves.best(m, n, k, batch, num_sms, Config.tile_k, tiles, max_splits)
    # A deep product of a tile or two then splits its tile further, until the CTAs make two
    # per SM (``waves.DEEP_CTAS_PER_SM``: 64 splits of one tile left half the SMs idle); the
    # tile stays the one chosen at 64, where the deeper splits were measured.
    efficiency, rate = tiles[tile]
    _, splits = waves.best(m, n, k, batch, num_sms, Config.tile_k,
                           {tile: (efficiency, _deep_splitting(rate))}, max_splits)
    found = [(replace(configs[tile], partials=splits > 1), splits, False)]
    if limit:  # (the pick alone needs no second ranking)
        for _, s, _, other in waves.ranked(m, n, k, batch, num_sms, Config.tile_k, tiles,
                                           max_splits)[:limit]:
            found.append((replace(configs[other], partials=s > 1), s, False))
    return found


def _deep_splitting(rate: waves.Rate) -> waves.Rate:
    """``rate`` allowed to split a deep product of a tile or a few past ``waves.DEEP_SPLITS``,
    up to ``waves.DEEP_CTAS_PER_SM`` CTAs per SM (``waves.split_choices``): both of this
    family's kernels, the ladder's tiles and the row-streaming CTAs."""
    return rate._replace(max_splits=waves.DEEP_MOST_SPLITS,
                         deep_ctas_per_sm=waves.DEEP_CTAS_PER_SM)


def _gemv_ranked(rows: int, cols: int, k: int, batch: int, num_sms: int, max_splits: int,
                 transposed: bool, limit: int, math: str = "float32",
                 b_major: str = "n", staged: bool = False) -> list[tuple[Config, int, bool]]:
    """The row-streaming kernel on a ``rows`` x ``cols`` product: the most K-splits whose CTAs
    all fit one wave (each keeps only a few loads of B in flight, so device memory is saturated
    only when every CTA slot is busy, and a second wave costs more than its CTAs bring), then the
    other split counts, nearest first.  H200, 2026-12-02, fp32: that rule picked the fastest
    split (within 1%) on 10 of the 11 products swept: 1x4096x4096 16 splits (512 CTAs) 20.9 us
    against 22.1 at 9; 8x4096x14336 8 (256 CTAs of 2 slots) 76.7 against 108.0 at 5;
    1x14336x4096 4 (448) 56.8 against 58.5 at 8 and 61.0 at 16.  The exception, 1x4096x4096
    with a K-major B: 24.8 at 16 splits against 23.4 at 8.  A 16-bit product's CTA is the
    FMA or the tensor-core kernel's by its rows and ``b_major`` (the kernel's,
    ``_half_gemv_config``); with ``staged``, the staged kernel's (``staged_config``).
    ``rows`` past the CTA's (16-bit products only) take several row tiles."""
    if staged:
        config = staged_config(rows)
    elif math == "float32":
        config = gemv_config(_gemv_rows(rows))
    else:
        config = _half_gemv_config(rows, b_major)
    tiles = -(-rows // config.tile_m) * -(-cols // config.tile_n) * batch
    # A deep product of a tile or a few splits past ``waves.DEEP_SPLITS``, up to the CTA
    # slots: H100, 2026-12-06, fp16, us at 64 splits (cuBLAS), tn 93x23x179080 80.1 (44.5),
    # tn 265x45x144736 99.9 (75.7), nn 17x133x63264 32.8 (26.7), the time falling about as
    # 1 / splits from 1 to 64 (``tools/sweep_schedule.py --tuner --cold``); at the slots 40.3,
    # 79.3 and 22.8 (docs/performance.md, 54th section).
    rate = _deep_splitting(waves.Rate(_FLOPS_PER_SM, config.min_blocks, 4, 4,
                                      _GEMV_GRANULE // Config.tile_k))
    choices = waves.split_choices(rows, cols, k, batch, Config.tile_k, rate, max_splits,
                                  tiles=tiles, num_sms=num_sms)
    slots = num_sms * config.min_blocks
    best = max((s for s in choices if tiles * s <= slots), default=choices[0])
    order = sorted(choices, key=lambda s: (abs(s - best), s))
    return [(replace(config, partials=s > 1 or transposed), s, transposed)
            for s in order[:1 + limit]]


def _space(m: int, n: int, b_major: str = "n") -> tuple[dict, dict]:
    """(tile -> Config, tile -> (efficiency, Rate)): the ladder tiles worth trying; with a
    K-major B each tile's efficiency scaled by its height's ``_K_MAJOR_B``."""

    def fits(tile: int, extent: int) -> bool:
        # A tile longer than the extent rounded up to a power of two mostly computes padding.
        return tile <= max(32, 1 << max(0, extent - 1).bit_length())

    configs, tiles = {}, {}
    for tm, tn, threads in _LADDER:
        # 16-row tiles only where one tile row holds M: at M = 24-48 the 32- and 64-row tiles
        # ran 10-14% faster (H200, 2026-12-02, fp32 nn, N = K = 4096, best split of each).
        if fits(tm, m) and fits(tn, n) and not (tm < 32 and m > tm):
            cfg = configs[(tm, tn)] = _config(tm, tn, threads)
            micro_m, micro_n = cfg.micro_tile
            lone_is_faster = micro_m * micro_n <= 64 and cfg.threads >= 64
            rate = waves.Rate(_FLOPS_PER_SM, cfg.min_blocks, 4, 4, _MIN_K_TILES,
                              tail_scaling=_TAIL_SCALING if lone_is_faster else 0.0)
            efficiency = _TILE_EFFICIENCY[(tm, tn)]
            if b_major == "k":
                efficiency *= _K_MAJOR_B_TILES.get((tm, tn), _K_MAJOR_B[tm])
            tiles[(tm, tn)] = (efficiency, rate)
    return configs, tiles


def choose_config(m: int, n: int, k: int, batch: int, num_sms: int,
                  math: str = "float32", majors: tuple[str, str] = ("k", "n")) -> Config:
    """The configuration of an unsplit product (no workspace: a launch in pieces,
    ``dispatch.schedule`` with ``split_k`` False)."""
    return choose_schedule(m, n, k, batch, num_sms, max_splits=1, math=math,
                           transposable=False, majors=majors)[0]
