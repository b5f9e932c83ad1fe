"""Tunables and the tile heuristic of the Hopper HGEMM family (``kernels/sm90_hgemm.py``).

DSL-free, so a configuration is chosen (and a cached kernel found) without importing the CuTe DSL.

Imports: ``configs.waves``, ``plan`` (the operand majors of a product computed transposed).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from math import gcd
from typing import NamedTuple

from ..plan import transposed_majors
from . import waves

# Shared memory a CTA may use on sm_90 (227 KiB), less what the barriers and alignment need.
_SMEM_BYTES = 232448
_SMEM_RESERVED = 2048
_THREADS_PER_WARPGROUP = 128
_PRODUCER_REGISTERS = 40
#: Tile widths the kernel is built for.  160 and 224 (multiples of 32, not 64) keep an N-major B
#: tile in 64-byte swizzled shared memory, the others in 128-byte.
_TILE_N = (16, 32, 64, 128, 160, 192, 224, 256)
#: Widths between 64 and 128 for 16-bit tiles whose short side is 65-112 (``_odd_width``): an
#: N-major B tile of 96 is 64-byte swizzled, of 80 or 112 32-byte (rows of 160 or 224 bytes).
_ODD_N = (80, 96, 112)
#: Widths between those of ``_SWAP_WIDTHS`` for a swapped skinny product's M with A K-major
#: (``_fine_width``): all of M in one tile with at most 15 padded columns, not up to 31.
_FINE_N = (144, 176, 208)
#: Stages of the A/B ring when a configuration asks for none (``Config.stages`` 0), at most
#: as many as fit in shared memory.  Forcing 10-20 on skinny products whose tiles fill the SMs
#: gave nothing (docs/performance.md, "Deeper A/B rings").
_RING_STAGES = 8


@dataclass(frozen=True)
class Config:
    """Tunables of the Hopper kernel; one compiled kernel per distinct value."""

    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    cluster_m: int = 1
    cluster_n: int = 1
    raster_group: int = 8
    epi_n: int = 32
    epi_stages: int = 4
    stages: int = 0  # 0: as many as fit in shared memory
    #: C is fp32 partial sums of a K-split (written to our workspace, reduced apart)
    partials: bool = False
    #: Stream-K: every cluster takes an equal share of all (tile, K-tile) iterations; tiles
    #: that straddle clusters are summed in the kernel through a workspace of ours
    #: (``streamk_workspace``), in a fixed order.
    streamk: bool = False
    #: Programmatic dependent launch: the kernel is launched with programmatic stream
    #: serialization, so its launch and prologue (barrier set-up, descriptor prefetch) may
    #: overlap the end of the kernel before it on the stream; every thread waits for that
    #: kernel to finish (``griddepcontrol.wait``) before its first global memory access, and
    #: the producer lets the next kernel launch once its last loads are issued.  The
    #: dispatcher sets it on every schedule but stream-K (``_config``, where it is measured).
    pdl: bool = False
    #: Pingpong: the two consumer warpgroups take alternate work units, each computing a whole
    #: tile (tile_m rows by 64-row wgmma), their mainloops in turn, so one's epilogue runs
    #: while the other's wgmma do (``kernels/sm90_hgemm.py``).  At most 128 x 128 (the
    #: accumulators of a whole tile in one warpgroup's registers); 16-bit only.
    pingpong: bool = False
    #: The kernel computes C^T = B^T A^T: its tiles cover (N, M), B is the MMA's A and A its
    #: B, and C is written through its transpose (an M-major epilogue tile, stored by TMA).
    #: Forced by the layout for one-pass TF32 with an N-major B (``swaps``: B is then the
    #: register operand); chosen by the schedule for skinny 16-bit products (``_SWAP_WIDTHS``),
    #: whose short M then spans one tile's width instead of padded 64- or 128-row tiles.
    swap: bool = False

    @property
    def name(self) -> str:
        return (
            f"sm90_{self.tile_m}x{self.tile_n}x{self.tile_k}_c{self.cluster_m}x{self.cluster_n}"
            f"_g{self.raster_group}_s{self.ab_stages(2)}" + ("_partials" if self.partials else "")
            + ("_streamk" if self.streamk else "") + ("_pdl" if self.pdl else "")
            + ("_pingpong" if self.pingpong else "") + ("_swap" if self.swap else "")
        )

    @property
    def quad_built(self) -> bool:
        """Whether the kernel is built for this tile in 2x2 clusters: 16-bit data-parallel
        cooperative tiles of 64 or 128 rows, at least 128 wide (not stream-K: it needs every
        CTA of its grid resident, and a GPU runs fewer 4-CTA clusters at once than its SMs / 4,
        ``resident_clusters``)."""
        return not (self.streamk or self.pingpong or self.swap or self.partials) \
            and self.tile_k == 64 and self.tile_n >= 128 and self.tile_m <= 128

    @property
    def stores_any_c(self) -> bool:
        """The kernel can store a C whose rows are no whole 16-byte vectors itself, element by
        element from its shared sub-tiles (``kernels/sm90_hgemm.py``, ``c_direct``): a
        data-parallel, unswapped tile writing C's own dtype.  The planner then launches it on C
        directly (``dispatch.copied_c``)."""
        return not (self.streamk or self.swap or self.partials)

    @property
    def consumer_warpgroups(self) -> int:
        """One per 64 rows of the tile, at most two (a 256-row tile gives each 128 rows)."""
        return 2 if self.pingpong else min(2, self.tile_m // 64)

    @property
    def epi_m(self) -> int:
        """Rows of an epilogue sub-tile: those the consumer warpgroups of one tile cover with
        one m64 wgmma row each (the tile's, or 128 of a 256-row tile), or 64 under pingpong
        (each warpgroup stores its own tile, 64 rows at a time)."""
        return 64 if self.pingpong else min(self.tile_m, 128)

    @property
    def epi_rings(self) -> int:
        """Rings of ``epi_stages`` epilogue sub-tiles: one per consumer warpgroup under pingpong
        (each stores its own tile), else one that the tile's warpgroups share."""
        return self.consumer_warpgroups if self.pingpong else 1

    def ab_stages(self, itemsize: int, parts: int = 1) -> int:
        """Stages of the A/B ring: the requested count, or ``_RING_STAGES`` where they fit,
        else as many as fit.  ``parts``: tiles of A and of B per stage (2 for 3xTF32, whose
        stages hold both split parts)."""
        return self.stages or min(_RING_STAGES, self.fitting_stages(itemsize, parts))

    def stage_count(self, itemsize: int, parts: int = 1) -> int:
        """``ab_stages``, or ValueError when the requested count does not fit in shared memory
        or fewer than 2 stages would."""
        fit = self.fitting_stages(itemsize, parts)
        if self.stages > fit:
            raise ValueError(
                f"Config.stages={self.stages} does not fit in shared memory: a "
                f"{self.tile_m}x{self.tile_n} tile of {parts} part(s) per stage leaves room for "
                f"{fit} stages."
            )
        stages = self.ab_stages(itemsize, parts)
        if stages < 2:
            raise ValueError(f"Config {self} leaves room for fewer than 2 pipeline stages.")
        return stages

    def fitting_stages(self, itemsize: int, parts: int = 1) -> int:
        """How many A/B stages fit in shared memory beside the epilogue ring."""
        per_stage = (self.tile_m + self.tile_n) * self.tile_k * itemsize * parts
        c_itemsize = 4 if self.partials else itemsize
        epilogue = self.epi_rings * self.epi_m * self.epi_n * c_itemsize * self.epi_stages
        return (_SMEM_BYTES - _SMEM_RESERVED - epilogue) // per_stage

    def validate(self) -> None:
        if self.tile_m not in (64, 128, 256):
            raise ValueError(f"Config.tile_m must be 64, 128 or 256, got {self.tile_m}.")
        if self.tile_m == 256 and (self.tile_n > 192 or self.streamk or self.pingpong):
            # Each consumer warpgroup holds 128 rows' fp32 accumulators: tile_n per thread (192
            # at 192 columns; no spills: tests/test_compile_sm90.py).  Built and compile-checked
            # for data-parallel and split-K schedules only.
            raise ValueError("Config.tile_m=256 (tall tiles) is built for tile_n <= 192, without "
                             f"stream-K or pingpong; got {self.tile_m}x{self.tile_n}"
                             + (", stream-K" if self.streamk else "")
                             + (", pingpong" if self.pingpong else "") + ".")
        widths = _TILE_N + _ODD_N + _FINE_N
        if self.tile_n not in widths:
            raise ValueError(
                f"Config.tile_n must be one of {', '.join(map(str, sorted(widths)))}; "
                f"got {self.tile_n}."
            )
        if self.tile_n in _ODD_N + _FINE_N and (self.tile_k != 64 or self.streamk
                                                or self.pingpong or self.cluster_n > 1):
            raise ValueError(f"Config.tile_n={self.tile_n} is built for 16-bit cooperative tiles "
                             "(tile_k 64) in 1x1 or 2x1 clusters, without stream-K; got "
                             f"{self.name}.")
        if self.tile_n in _FINE_N and not self.swap:
            raise ValueError(f"Config.tile_n={self.tile_n} is built for swapped tiles "
                             f"(Config.swap: a skinny product's M); got {self.name}.")
        if self.tile_n < 64 and self.streamk:
            # Data-parallel or split (stream-K measured slower: ``_NARROW_N_MATH``).
            raise ValueError(f"Config.tile_n={self.tile_n} (narrow) is built without stream-K.")
        if self.tile_k not in (32, 64):
            raise ValueError(f"Config.tile_k must be 64 (16-bit) or 32 (TF32), got {self.tile_k}.")
        if (self.cluster_m, self.cluster_n) not in ((1, 1), (2, 1), (1, 2), (2, 2)):
            raise ValueError(
                "Config cluster must be 1x1, 2x1, 1x2 or 2x2, "
                f"got {self.cluster_m}x{self.cluster_n}."
            )
        if self.cluster_m * self.cluster_n > 2 and not self.quad_built:
            raise ValueError("Config 2x2 clusters are built for 16-bit data-parallel cooperative "
                             "tiles of 64 or 128 rows, at least 128 wide; got "
                             f"{self.name}.")
        if self.tile_n % self.epi_n or self.epi_n % 16:
            raise ValueError(
                f"Config.epi_n must divide tile_n and be a multiple of 16, got {self.epi_n}."
            )
        if self.epi_stages < 2:
            raise ValueError(f"Config.epi_stages must be at least 2, got {self.epi_stages}.")
        # The operand bytes of a stage are (tile_m + tile_n) x 128: tile_k is 64 16-bit or 32
        # fp32 elements.  (A kernel of two parts per stage checks its own count.)
        self.stage_count(128 // self.tile_k)
        if self.raster_group < 1:
            raise ValueError(f"Config.raster_group must be >= 1, got {self.raster_group}.")
        if self.streamk and self.partials:
            raise ValueError("Config.streamk sums its own partials: it cannot also write partials.")
        if self.pingpong and (self.streamk or self.tile_m * self.tile_n > 128 * 128):
            raise ValueError("Config.pingpong is built for data-parallel and split-K tiles of at "
                             f"most 128 x 128 elements; got {self.tile_m}x{self.tile_n}"
                             + (", stream-K" if self.streamk else "") + ".")
        if self.swap and (self.tile_m > 128 or self.pingpong
                          or (self.tile_n < 64 and not self.partials and self.tile_k != 64)):
            # Narrow tiles swap writing fp32 partials (TF32's transposed small-M products) or
            # a 16-bit C (``_swapped_small_m``).
            raise ValueError("Config.swap is built for cooperative tiles of 64 or 128 rows, at "
                             "least 64 wide, or narrow writing fp32 partials or a 16-bit C; got "
                             f"{self.tile_m}x{self.tile_n}"
                             + (", pingpong" if self.pingpong else "") + ".")
        if self.pdl and self.streamk:
            # The host zeroes the flags with a memset right before a stream-K launch.
            raise ValueError("Config.pdl is built for data-parallel and split-K kernels only.")


def epilogue_width(tile_n: int) -> int:
    """``Config.epi_n`` for a tile width: 32 columns per epilogue sub-tile, or 16 where 32 does
    not divide the width (80, 112) or exceeds it."""
    return gcd(32, tile_n)


def streamk_fits(config: Config, m: int, n: int, k: int, batch: int) -> bool:
    """Whether the stream-K kernel can count this product's iterations (tiles x K-tiles) in
    32 bits (``m``, ``n``: the product's; a ``swap`` kernel's tiles cover (N, M))."""
    if config.swap:
        m, n = n, m
    tiles = -(-m // config.tile_m) * -(-n // config.tile_n) * batch
    return tiles * -(-k // config.tile_k) < 2**31


def streamk_workspace(config: Config, num_sms: int) -> tuple[int, int]:
    """(fp32 partial elements, int32 flags) of a stream-K launch's workspace: one tile of
    partial sums and one flag per CTA the grid can hold (at most one CTA per SM)."""
    return num_sms * config.tile_m * config.tile_n, num_sms


#: Math types (``dispatch.math_type``): 16-bit inputs, and fp32 inputs through TF32 wgmma in one
#: product ("tf32") or three over split operands ("tf32x3", precision "high").
MATH_TYPES = ("float16", "bfloat16", "tf32", "tf32x3")
TF32 = ("tf32", "tf32x3")
#: K of a TF32 tile (32 fp32 = one 128-byte swizzled row); the operand prep pads each 3xTF32
#: part to whole tiles of it, so the small part starts on a tile boundary.
TF32_TILE_K = 32
#: The largest K a 3xTF32 operand (big | small, 2 * K padded) can have in 32-bit extents.
TF32X3_MAX_K = 2**30 - TF32_TILE_K


#: The (A, B) majors the kernel reads per TF32 math type: one-pass TF32 takes an M-major A or an
#: N-major B as its register operand (``operand_copies``); 3xTF32 reads its K-major (big | small)
#: parts.
TF32_READS = {"tf32": (("k", "k"), ("m", "k"), ("k", "n")), "tf32x3": (("k", "k"),)}


def operand_copies(math: str, a_major: str, b_major: str, m: int, n: int, k: int, batch: int,
                   num_sms: int, readable: tuple[bool, bool] = (True, True),
                   counts: tuple[int, int] = (1, 1)) -> tuple[str | None, str | None]:
    """Which of (A, B) the operand prep (``kernels/operand_prep.py``) rewrites first, and the
    copy's major (None: read as it is; ``dispatch.operand_copies``).  ``readable`` says which
    the kernel could read as they are (aligned, one unit stride); ``counts``, how many matrices
    of A and of B a copy would write (1 for a broadcast operand); ``batch`` and ``num_sms``
    place a 16-bit product among the swapped narrow tiles (``copies_across``).

    TF32 wgmma reads shared tiles K-major only, but takes A from registers: the kernel loads an
    M-major A into registers itself, and with B N-major it computes C^T = B^T A^T, so that B is
    the register operand.  So one-pass "tf32" reads A k or m and B k or n as they are, except
    both transposed (m, n), where one operand is copied K-major.  An operand it cannot read is
    copied in any layout (K-major and aligned); in (m, n) that copy is then the only one.
    Where both are readable, the smaller is copied: A where its ``counts[0]`` M x K matrices
    hold fewer elements than B's ``counts[1]`` K x N (the kernel then reads (k, n) and swaps),
    else B (it reads (m, k)).  H200, 2026-12-04, "tf32" tn
    128x8192x8192: B copied 418.7 us against cuBLAS TF32's 109.0, where the same product in nn
    (nothing copied) ran 70.1.  3xTF32 ("tf32x3") splits both operands into (big | small)
    parts, K-major, whatever their layout.

    A 16-bit operand the kernel cannot read (rows of no whole 16-byte vectors: TMA needs
    16-byte strides) is copied in its own major into padded rows, the layout the caller's
    library staged it in before (``launch.Staging``): the schedule stays what it was, and the
    copy is one of the launch's kernels, so the call costs no library operations on the host
    and repeats take the fast path.  H200, 16-bit products of M, N 8-320 and a long K, staged
    / first copies / vector copies with shared reduction lanes (cuBLAS), us: fp16 tn
    60x98x15984 78.8 / 22.6 / 16.2 (10.9), bf16 tn 191x42x72520 143.6 / 83.2 / 54.3 (43.0);
    ``tools/shape_classes.py``'s deepK class, three seeds of 8 products, 0.61 / 0.41 / 0.49x
    staged -> 1.27 / 1.09 / 0.96x cuBLAS (docs/performance.md, twenty-fourth and twenty-fifth
    sessions); the odd class (staged C, copied A and B) 1.64x.  What still loses is the copy
    itself: it moves every byte once more than a kernel reading the rows directly would.  An
    operand of no unit stride is still staged.  A small M's M-major A on few swapped narrow
    tiles is copied K-major, readable or not (``copies_across``).
    """
    if math not in TF32:
        copies = [major if not ok and major in ("k", "m", "n") else None
                  for major, ok in zip((a_major, b_major), readable)]
        if copies_across(a_major, m, n, k, batch, num_sms):
            copies[0] = "k"
        return tuple(copies)
    if math == "tf32x3":
        return "k", "k"
    copy_a, copy_b = not readable[0], not readable[1]
    if (a_major, b_major) == ("m", "n") and not (copy_a or copy_b):
        # One must become K-major (a copy of either already is): the smaller.
        copy_a = counts[0] * m < counts[1] * n
        copy_b = not copy_a
    return ("k" if copy_a else None), ("k" if copy_b else None)


def tf32_fields(math: str) -> dict:
    """The ``Config`` fields of every TF32 schedule (``math`` "tf32" or "tf32x3"): 32-wide
    K-tiles of fp32 data and an epilogue ring ``_TF32_EPI_STAGES`` deep; none for 16-bit."""
    return {"tile_k": _RATES[32][0], "epi_stages": _TF32_EPI_STAGES} if math in TF32 else {}


def swaps(math: str, a_major: str, b_major: str) -> bool:
    """Whether the kernel computes C^T = B^T A^T itself (one-pass TF32 with an N-major B, the
    register operand): its tiles then cover (N, M), and ``choose_schedule``, ``candidates`` and
    ``choose_config`` take ``swapped`` to choose them for that orientation."""
    return math == "tf32" and b_major == "n"


def schedule_options(math: str, a_major: str, b_major: str, c_aligned: bool = True) -> dict:
    """The schedule functions' keyword arguments for these majors (``dispatch.schedule_options``):
    the majors (the narrow tiles' choice, ``_narrow_tiles``), ``swapped`` where the kernel
    computes C^T = B^T A^T itself (``swaps``), and ``c_aligned`` False where C's rows are no
    whole 16-byte vectors (``narrow_n``: the reduction, not TMA, then writes a small-N C)."""
    options = {"majors": (a_major, b_major)}
    if swaps(math, a_major, b_major):
        options["swapped"] = True
    if not c_aligned:
        options["c_aligned"] = False
    return options


def supports(m, n, k, batch, dtype, a_major, b_major, align_a, align_b, align_c) -> str | None:
    """None when this family can run the problem, else the reason it cannot."""
    if dtype not in MATH_TYPES:
        return f"sm90 takes {'/'.join(MATH_TYPES)}, not {dtype}"
    if dtype in TF32 and (a_major, b_major) not in TF32_READS[dtype]:
        return f"sm90 {dtype} reads (A, B) majors {TF32_READS[dtype]}, not {(a_major, b_major)}"
    if min(align_a, align_b, align_c) * (4 if dtype in TF32 else 2) < 16:
        return "sm90 needs 16-byte aligned operands (TMA)"
    if k < 1:
        return "sm90 HGEMM needs K >= 1"
    return None


# Relative per-SM throughput of each tile shape when every SM is busy (larger tiles reuse more).
# 128x192 fills the machine where 128x256 leaves a partial wave (1536^3: 96 tiles, not 72;
# 3072^3: 2.9 waves, not 2.2).
_TILE_EFFICIENCY = {(128, 256): 1.0, (128, 192): 0.95, (128, 128): 0.9, (64, 128): 0.7}
#: The same for 16-bit tiles in 2x1 clusters (``_cluster_m``), whose two CTAs (adjacent tile
#: rows) receive one B tile by TMA multicast: half the L2 reads of B, the operand the narrow
#: tiles reread most.  H200, 2026-12-01, fp16 nn, against the same tile unclustered: 8192^3
#: 128x128 1799 against 2040 us, 64x128 2173 against 3522; 1000^3 64x128 8.8 against 11.3 us;
#: 128x8192x8192 64x128 36.8 against 47.2 (cuBLAS 37.0); 128x256 within 1-3%.
_CLUSTERED_EFFICIENCY = {(128, 256): 1.0, (128, 192): 0.98, (128, 128): 0.95, (64, 128): 0.8}
#: Tiles of widths that are no power of two, for 16-bit products in 2x1 clusters: they fill a
#: wave where the power-of-two widths leave one partially idle (1536^3: 120 tiles of 128 x 160
#: on 132 SMs against 96 of 128 x 192; 1792^3 and 2560^3: 128 x 224).  Listed after the others,
#: so a tie goes to a power of two.  Efficiencies interpolated between 128 x 128 and 128 x 256,
#: then checked: H200, 2026-12-02, fp16 nn, us, the pick against the power-of-two pick it
#: replaced (cuBLAS): 1536^3 13.2 / 14.7 (12.8); 1792^3 19.5 / 21.2 (21.9); 2560^3 50.8 / 54.9
#: (54.4); 3328^3 101.2 / 107.6 (107.5); 5120^3 360.7 / 392.1 (354.1); 1536x1536x4096 32.3 /
#: 35.0 (33.0); 2048x5120x2048 62.0 / 62.4 (60.7).  The other wide tile was slower each time.
_WIDE_EFFICIENCY = {(128, 224): 0.99, (128, 160): 0.965}
#: Unsplit, in either orientation, the 128 x 160 tile is priced lower (``waves.Rate``'s
#: ``unsplit_efficiency``; split schedules keep the price above).  H100, 2026-12-06, L2-cold,
#: us, every width 128-256 in both orientations, 1x1 and 2x1, on 9 mid and large fp16 products
#: picking it (the pick / the fastest (cuBLAS)): nt 3184x3104x2648 101.5 / 88.3 on 128 x 224
#: (79.5), nn 2088x2136x2832 57.8 / 51.4 swapped 128 x 192 (47.7), nn 6016x3840x3776 258.2 /
#: 243.9 swapped 128 x 176 (239.2); a round of 128 x 160 tiles took 0.87 of a 128 x 224 round
#: for 0.71 of its width.  The pick's time over the fastest measured: 1.061 at 0.965, 1.035
#: here.  A/B (``tools/ab_compare.py``, three rounds), the 120 products of seeds 1200-1399
#: whose pick 0.94 at every split changed: 1.037x faster, mid (16) 1.086x, large (65) 1.033x,
#: odd (19) 1.056x, but the split ones lost (skinnyN 2456x157x4664 nt 21.1 -> 26.4 us, one
#: 160-wide column, to 64 x 128), hence unsplit only.
_WIDE_UNSPLIT_EFFICIENCY = {(128, 160): 0.94}
#: With A M-major and B N-major ("tn": both operands stored along the tile's edges) the
#: 128 x 160 tile is not offered: its B tile is 64-byte swizzled (``kernels/sm90_hgemm.py``)
#: and per round of tiles it ran 1.13-1.20 times as long as 128 x 192, not 0.83.  H100,
#: 2026-12-06, fp16, L2-cold rotated inputs, us, 2984 x N x 2464 in 2x1 clusters (two rounds
#: of tiles either way), 128 x 160 / 128 x 192: tn N = 1480 55.8 / 46.3, N = 1536 48.4 / 42.9,
#: N = 1600 47.5 / 44.9; nn (A K-major) 49.2 / 43.3 at N = 1480 (B rows of no whole 128-byte
#: lines) but 41.5 / 41.3 and 40.6 / 42.6 on whole lines; nt (B K-major, 128-byte swizzle)
#: 40.6 / 42.2.  On one wave of 128 tiles (2048 x 8w x 8192, aligned) every width from 128 to
#: 256 took time in proportion to its width, in all three layouts.  Of 42 mid products swept
#: with the tuner (``classes.cases`` seeds 101-103), the tn ones picking 128 x 160 lost 10-19%
#: to 128 x 192.  Held out (seeds 104-179: the 89 tn products of the mid, large, odd and
#: batched classes whose pick this changes, two runs each), geometric mean x cuBLAS 0.92x ->
#: 0.97x: to 128 x 192 on 74 (gain 1.057x, 0.82-1.29), 128 x 256 on 9 (1.079x), 128 x 224 on 3
#: (1.030x), 128 x 128 on 3 (0.937x).  The tn 128 x 224 tile, whose B tile is 64-byte
#: swizzled too (448-byte rows), stays offered: left out (tn 1424x2296x1496: 26.2 us on it,
#: 21.7 on 128 x 256), held out on the 201 products of seeds 1200-1299 whose pick that moves
#: (A/B, two rounds, H100, 2026-12-06) it gained 1.005x only: large (124) 0.987x, mid (57)
#: 1.02x, skinnyM and skinnyT over M 147-254 (19) 1.09x.
_ACROSS_BOTH = ("m", "n")
_ACROSS_SLOW = ((128, 160),)
#: Up to this many rows (two 128-row tiles), tn also leaves the 128 x 224 tile out, where the
#: A/B above found its skinny products 1.09x faster without it.  H100, 2026-12-06, held out:
#: the 61 products of seeds 1300-1699 whose pick it moves, three rounds, 1.067x (0.92-1.51x;
#: skinnyM (38) 1.059x, skinnyT (21) 1.085x; fp16 tn 213x7336x7288 76.7 -> 50.8 us on 128 x
#: 128 in 2x2 clusters, 150x3488x13992 63.5 -> 69.0 on 64 x 128).
_ACROSS_SLOW_SKINNY = ((128, 224), 256)
#: With both operands stored along the tile's edges (tn) the cooperative 128 x 128 tile (in
#: clusters or alone) is priced at this fraction of its efficiency.  Over the 42 tuner sweeps
#: (55th session) tn 128 x 128 in clusters implied 0.85 of the model's level where 128 x 256
#: implied 1.15; on 23 held-out tn products that moved from 128 x 224 to 128 x 128 (branch
#: ``tn-224``) the time rose 1.15x.  H100, 2026-12-06, L2-cold, us, two runs each, the 10 tn
#: products of the mid, large, odd and batched classes of seeds 104-179 whose pick this
#: changes (old -> new, cuBLAS): bf16 3392x3712x5376 265.3 -> 201.2 (185.4), bf16
#: 3968x6592x7104 650.8 -> 557.1 (506.4), 2624x3104x984 37.2 -> 31.4 (34.1), 1720x3552x2720
#: 67.1 -> 58.1 (50.8); geometric mean gain 1.11x, least 0.992 (888x2160x2712 to 64 x 128),
#: x cuBLAS 0.85x -> 0.94x (least 0.70x -> 0.88x).
#: The pingpong 128 x 128 keeps its price: on short K it is what wins in tn as well
#: (``_PINGPONG_TILE``); past ``_PINGPONG_MAX_K`` it is not offered at all.
_ACROSS_SQUARE = ((128, 128), 0.85)
#: The same for the other layouts' cooperative 128 x 128 tile, clustered, alone and swapped,
#: where M spans at least two tile rows: 16 nn products of seeds 300-399 that moved to it in
#: clusters lost 0.96x.  Held out (60 products of seeds 500-799 whose pick it changes, two runs,
#: H100, 2026-12-06): 1.08x -> 1.14x cuBLAS, least 0.56x -> 0.66x.
_SQUARE_IN_CLUSTERS = ((128, 128), 0.92)
# Narrow tiles for small-M products computed transposed (C^T = B^T A^T): the long N fills the
# tile's M, the short M its N.  Memory-bound: what they save is padding.  The 64-row ones give
# twice the CTAs along N, which these products need to draw the bandwidth
# (``_TRANSPOSED_SATURATION``).
_NARROW_EFFICIENCY = {(128, 64): 0.8, (128, 32): 0.6, (128, 16): 0.5, (64, 32): 0.5,
                      (64, 16): 0.4}
#: A 64 x 64 tile for 16-bit products of one 64-row tile row (``ONE_ROW_M`` < M <= 64, not
#: transposed): twice the CTAs of 64 x 128 where those leave SMs idle.  Listed after 64 x 128, so
#: a tie goes to the wider tile.  H200, 2026-12-01, fp16 nn, us (cuBLAS / the 64 x 128 pick /
#: 64 x 64 unsplit): 64x4096x4096 9.5 / 15.8 / 12.1; 64x8192x8192 35.3 / 39.4 / 35.5;
#: 64x14336x4096 31.9 / 31.5 / 33.3 (the model keeps 64 x 128); 64x4096x14336 35.3 / 40.0 /
#: 40.3.  It did not win at M = 32 (32x4096x4096: 16.3 against 16.4) nor at M = 96 (44.4 against
#: 26.5 in 2x1 clusters).  Where N fits it instead (N <= 64, one tile column, M spanning two
#: tile rows or more) it runs unsplit in 2x1 clusters (``_cluster_m``): every tile row rereads
#: the whole of B, and the two CTAs of a cluster share one load of it.  H200, 2026-12-03, fp16
#: nn, L2-cold rotated inputs, us, 1x1 / 2x1 (cuBLAS): 7168x40x7816 56.6 / 38.3 (33.7),
#: 7776x56x3664 24.7 / 19.8 (20.0), 2352x40x1056 6.2 / 5.0 (5.8), 6704x48x1512 11.4 / 10.0
#: (10.2), but 4368x64x1192 6.2 / 6.7 (6.8); nt alike.  Out of sample (10 products, M
#: 1800-15400, N 40-64, K 680-5600; rule set before they ran), geometric mean x cuBLAS 1x1 /
#: 2x1: nn 0.818x / 0.998x, tn 0.818x / 1.028x, nt 0.997x / 1.013x (15320x40x2376 nn 40.9 /
#: 26.1 us (24.7); where it lost, nt 1888x40x1472 5.2 / 5.6, 6568x48x5568 22.4 / 23.3).
_ONE_ROW_TILE = ((64, 64), 0.7)
#: The 64 x 64 tile keeps few bytes in flight per CTA, as the narrow tiles do, so a wave of
#: fewer CTAs draws less of the bandwidth (``waves.Rate.saturation``).  H200, 2026-12-02, fp16,
#: L2-cold rotated inputs, us, 64 x 64 at s splits (cuBLAS): 2048x48x8192 s2 19.8, s4 14.5
#: (15.0); 1024x48x8192 s5 11.6, s8 9.6 (10.7); 2048x40x4096 s1 16.7, s4 11.5 (10.7);
#: 2048x64x4096 s1 10.7, s4 8.9 (10.3); 4096x48x8192 s1 27.5, s2 24.8 (24.8); but 4096x64x4096
#: s1 12.9, s2 14.3 (13.6) and 64x4096x4096 s1 12.1, s2 14.1 (12.2).  Over those runs' 48
#: products with one side 40-64 (nn and tn), the picks' geometric mean x cuBLAS was 0.919x at
#: the default saturation (2.0: 32 tiles split only in 2), 0.972x at the narrow tiles' 1.2,
#: 0.982x at 1.3 and 0.964x at 1.5.
_ONE_ROW_SATURATION = 1.3
#: The pingpong kernel (``Config.pingpong``) on 128 x 128 tiles, for 16-bit products: two tiles
#: in flight per CTA (``Rate.slots`` 2, each at half the SM's rate), one warpgroup's epilogue
#: hidden behind the other's mainloop (``Rate.wave_seconds``), unsplit.  Against the
#: cooperative 128 x 256 tile its per-tile math reads more shared memory per flop (two m64n128
#: wgmma for one m64n256), so it wins only where the epilogue is a large part of a tile's work,
#: short K.  H200, 2026-12-02, fp16 nn, L2-cold rotated inputs, us, cuBLAS / cooperative pick /
#: pingpong 128 x 128 in a 2x1 cluster (in 1x1): 4096x4096x512 33.5 / 32.7 / 28.5 (28.4);
#: 8192x8192x1024 198.3 / 200.5 / 198.1; 16384x4096x1024 197.4 / 199.4 / 195.8; 64 x 1024^3
#: batched 204.1 / 208.9 / 209.9; 16 x 1024^3 53.6 / 53.3 / 53.0; 2048^3 25.6 / 25.0 / 25.2
#: (24.9); but 4096^3 180.8 / 182.8 / 190.6, 8192^3 1636.5 / 1622.9 / 1719.6, 3072^3 78.6 / 79.5
#: / 84.8, 1536^3 13.3 / 13.6 / 18.3.  Pingpong 64 x 256 (2x1) ran 2-10% slower than 128 x 128
#: and 64 x 128 slower still.  Efficiency and wave cost are fitted to those runs.  Then the
#: short-K class (15 shapes, K 128-1024, same method, pingpong against the cooperative picks),
#: geometric mean x cuBLAS with this model's picks: fp16 nn 1.037x (was 1.005x), tn 1.032x
#: (1.003x), nt 1.038x (1.005x); bf16 nn 1.051x (1.014x, 8 shapes).  The model leaves K = 640
#: and 768 cooperative (the last wave's epilogue stays exposed), where pingpong measured 2-4%
#: faster in nn and nt.  Where it lost: 128 x 512^3 batched 0.97x against 1.00x (near the
#: bandwidth bound, where hiding epilogues buys nothing), 16384^2 x 128 within 1.5%.
_PINGPONG_TILE = ((128, 128, "pingpong"), 0.95)
_PINGPONG_WAVE_SECONDS = 0.2e-6
#: The longest K (``gemm_k``) the pingpong tile is offered for.  Past it a tile's epilogue is a
#: small part of its work, so hiding it buys little, and the model over-rated the tile in
#: every layout: of five tn products of K 3520-11328 on it, four ran 7-12% faster on wide tiles.
#: H100, 2026-12-06, fp16 and bf16, L2-cold, two runs each, held out: the 28 products of the
#: mid, large and odd classes of seeds 300-399 whose pick this changes, x cuBLAS 0.997x /
#: 1.018x -> 1.039x / 1.040x (least 0.72x -> 0.74x); large (17) gain 1.069x (bf16 tn
#: 9024x6976x10752 2621 -> 1983 us to 128 x 256, cuBLAS 1872; bf16 nn 11648x3968x9984 1727 ->
#: 1325, cuBLAS 1248), mid (7) 0.996x (least 0.986), odd (4) 1.016x.
_PINGPONG_MAX_K = 2048


def _is_pingpong(tile: tuple) -> bool:
    """Whether a ``waves`` tile key names the pingpong kernel (``_PINGPONG_TILE``'s third field)."""
    return tile[2:] == _PINGPONG_TILE[0][2:]


#: The third field of a ``waves`` tile key that runs a 16-bit tile unclustered where
#: ``_cluster_m`` would cluster it: offered unsplit where M spans an odd count of tile rows,
#: whose last 2x1 cluster launches a CTA without work (``waves.Rate.cluster_rows``).  H200,
#: 2026-12-03, fp16, L2-cold rotated inputs, us, the clustered pick / unclustered (cuBLAS): tn
#: 640x2912x1368 19.0 / 10.7 (10.9), tn 1064x1728x1032 16.9 / 11.6 (11.7), both 5 and 9 rows
#: of 128 x 128 that spill a second wave in clusters; and within one wave tn 1152x1168x1504
#: 13.5 / 11.3 (13.8), nn 1088x1632x1200 12.0 / 11.2 (13.3), but nn 1648x712x712 9.1 / 10.0
#: (8.3), which the model leaves clustered.  Split products of odd rows were not measured
#: unclustered.
_UNCLUSTERED = "1x1"
#: Efficiencies of the unclustered variants where they differ from the unclustered tile's.
#: The 64 x 128 tile: over 42 mid products swept with the tuner (H100, 2026-12-06, fp16, nn /
#: nt / tn), the time of the 64 x 128 tile unclustered implied an efficiency 0.45-0.50 of
#: 128 x 256's in 2x1 clusters (the model's 0.7 / 1.0): where the model took it in place of
#: 128 x 192 in clusters (once ``_ACROSS_SLOW`` removed 128 x 160) it ran 93.9 us against 50.6
#: (tn 2064x2008x2928).  Held out, the 4 nn products of seeds 104-179 whose pick this changes
#: (two runs): odd 541x3709x3117 64.2 -> 53.0 us, batched 24 x 280x200x1504 27.6 -> 24.9, but
#: 50 x 288x256x1088 31.4 -> 33.3 and 17 x 408x240x248 6.9 -> 7.7.
_UNCLUSTERED_EFFICIENCY = {(64, 128): 0.5}
#: The same for one product (batch 1) only.  128 x 192 unclustered: the 42 sweeps implied 0.81 /
#: 0.85 / 0.87 (nn / nt / tn) where 2x1 clusters implied 0.92 / 1.03 / 1.00 (the model's 0.95
#: against 0.98).  H100, 2026-12-06, fp16 and bf16, L2-cold, two runs each, old -> new x
#: cuBLAS: first priced so at every batch, the 35 products of seeds 104-179 whose pick changed:
#: the 23 single products gained 1.091x (mid 0.887x -> 1.004x, large 0.854x -> 0.945x), the 12
#: batched ones lost (0.945x; 22 x 312x1136x152 12.8 -> 17.8 us on pingpong 128 x 128).  Then,
#: batch 1 only, held out on the 50 products of seeds 180-299 whose pick changes: gain 1.080x
#: (0.90-1.36), 1.12x -> 1.20x cuBLAS, least 0.72x -> 0.81x; large (24) 0.835x -> 0.942x (bf16
#: 7488x5952x12032 1864 -> 1473 us, cuBLAS 1481), mid (17) 0.985x -> 1.024x, odd (9) 1.002x.
#: 128 x 256 unclustered: its implied efficiencies were 0.94 / 0.97 / 1.01 where 2x1 clusters
#: implied 1.02 / 1.13 / 1.15 (the model's 1.0 for both).  Held out, same method, the 78
#: products of seeds 300-399 whose pick 0.9 changes: x cuBLAS 0.923x / 0.919x -> 1.001x /
#: 1.001x, least 0.62x -> 0.74x; large (70) gain 1.098x (bf16 nn 12160x10816x9344 5373 ->
#: 3506 us to 128 x 224 in clusters, cuBLAS 3350), mid (3) 0.995x, odd (5) 1.015x.  Where the
#: move went to 128 x 128 in clusters (13 nn products) it lost 0.964x (three 13-14%: bf16 nn
#: 3456x8704x6784 553 -> 640 us, cuBLAS 520).
_UNCLUSTERED_SINGLE_EFFICIENCY = {(128, 192): 0.85, (128, 256): 0.9}


ONE_ROW_M = 32
#: Products with M at most this (and N at least 4x larger) are computed transposed.  H200,
#: 2026-12-02, fp16 nn, L2-cold rotated inputs, us, the untransposed pick (64 x 128) against the
#: best transposed schedule (cuBLAS): 17x4096x4096 17.3 / 14.5 (13.9), 17x8192x8192 43.0 / 38.1
#: (34.6), 24x4096x14336 37.1 / 33.6 (32.9), 32x4096x4096 16.2 / 15.4 (14.2), 32x8192x8192
#: 38.5 / 38.6 (34.8), 32x14336x4096 34.9 / 36.9 (31.8): better or equal but at M = 32 with
#: N >= 14336.  An earlier trial without the 64-row narrow tiles lost at M = 32.
SMALL_M = 32
#: Up to this M, small-M products are transposed whatever N; above it only while the
#: untransposed tiles fill less than ``_UNTRANSPOSED_FILL`` of the SMs (``transposes``): at N =
#: 14336 (112 of them) 24x14336x4096 ran 35.7 / 35.4 and 32x14336x4096 34.9 / 36.9 above.
NARROW_M = 16
_UNTRANSPOSED_FILL = 0.75


#: A small M's M-major A (tn, tt) in rows of whole 16-byte vectors but no whole 32-byte
#: sectors (M of 8 or 24: ``_ACROSS_BYTES``), on one wave or less of swapped narrow tiles (N's
#: 64-row tiles, times the batch, from ``_SWAP_SMALL_FILL`` of the SMs to all of them) over a K
#: of at least ``_COPY_ACROSS_MIN_K``, is copied K-major first (``operand_copies``; the
#: transposing variant of ``kernels/operand_prep.py``): swapped, A is the kernel's B tile,
#: read across in rows of 16 or 48 bytes, and the few CTAs then draw less than the bandwidth.
#: H200, 2026-12-05, L2-cold rotated inputs, us, copied / read across (cuBLAS), bf16 tn:
#: 8x4096x14336 34.0 / 44.0 (33.2), 8x3408x14800 33.2 / 53.0 (31.9), 8x6144x12288 41.1 / 44.2
#: (40.8), 24x4096x14336 34.9 / 36.2 (33.8), 24x3408x14800 34.6 / 39.3 (33.9), 24x6144x12288
#: 41.9 / 43.7 (41.3), fp16 tn 24x4096x14336 34.9 / 36.4 (33.4); tt 24x4096x14336 36.0 / 36.2.
#: Where it lost: a K of 4096 (8x4096x4096 14.3 / 13.8, 24x4096x4096 15.9 / 13.7), whole
#: sectors (M of 16 or 32, 0.70-0.93x of reading across: 32x4096x14336 35.1 / 31.9, fp16 tt
#: 16x3072x12288 26.8 / 24.9), the transposed split route of fewer tiles (8x2048x8192 15.9 /
#: 14.2); level at 8192 (24x8192x8192 36.6 / 36.4, fp16 8x4096x8192 26.0 / 25.8).
_COPY_ACROSS_MIN_K = 12288


def copies_across(a_major: str, m: int, n: int, k: int, batch: int, num_sms: int) -> bool:
    """Whether a 16-bit product's M-major A is copied K-major first (``_COPY_ACROSS_MIN_K``)."""
    in_bytes = _RATES[16][1].in_bytes
    return (a_major == "m" and m <= SMALL_M and m * in_bytes % 16 == 0
            and not _whole_sectors(m, in_bytes) and k >= _COPY_ACROSS_MIN_K
            and _SWAP_SMALL_FILL * num_sms <= _row_tiles(n, batch) <= num_sms)


def _across_slow(tile: tuple, m: int) -> bool:
    """Whether tn (``_ACROSS_BOTH``) leaves this wide tile out for an M of ``m`` rows."""
    skinny_tile, most_rows = _ACROSS_SLOW_SKINNY
    return tile in _ACROSS_SLOW or (tile == skinny_tile and m <= most_rows)


def _whole_sectors(m: int, in_bytes: int) -> bool:
    """Whether an M-major A's rows of ``m`` elements are whole 32-byte sectors
    (``_ACROSS_BYTES``)."""
    return m * in_bytes % _ACROSS_BYTES == 0


def _row_tiles(n: int, batch: int, rows: int = 64) -> int:
    """N's tiles of ``rows`` rows (64 unless said) times the batch: what fills the SMs on the
    swapped tiles."""
    return -(-n // rows) * batch


#: 16-bit products with N at most ``SMALL_M`` (and M at least 4x larger) run on the narrow tiles
#: untransposed, through the workspace (``narrow_n``): the mirror image of the transposed small-M
#: route, the long M along the tile's rows.  H200, 2026-12-02, fp16, L2-cold rotated inputs, us,
#: the 64 x 128 (2x1) pick they replace / the best narrow tile forced / cuBLAS: nn 4096x8x4096
#: 22.5 / 12.8 / 14.5, 8192x16x8192 67.1 / 36.2 / 38.3, 4096x32x14336 59.8 / 32.8 / 33.2,
#: 14336x16x4096 44.6 (128 x 128) / 34.6 / 31.8; nt 4096x8x4096 21.7 / 12.0 / 14.3, 8192x8x8192
#: 70.5 / 35.7 / 40.6.  Up to N = 64 the 64 x 64 tile joins the untransposed ones (as for one
#: tile row of M; at N <= 32 that is a route's without a workspace): 4096x64x4096 nn
#: 21.0 / 12.9 (64 x 64 unsplit) / 13.8, 8192x64x8192 63.4 / 34.5 / 38.0; at N = 32 64 x 64
#: unsplit took 14.8 us at 4096x32x4096 against 20.9.
#: Unsplit, they store C themselves (no workspace, no reduction) in 2x1 clusters where M spans
#: two tiles, and 128 rows of them (64 CTAs and more) draw the bandwidth as the wide tiles do
#: (``waves.Rate.unsplit_saturation``); split, they write fp32 partials unclustered, as
#: before.  H200, 2026-12-02, fp16, us, through the workspace / C stored, 1x1 / C stored, 2x1
#: (cuBLAS): nn 14336x24x4096 37.0 / 35.9 / 33.2 (32.7), 16384x24x2048 25.9 / 22.1 / 19.3
#: (20.7), 30000x32x1024 26.2 / 19.0 / 18.3 (20.1), 8192x32x4096 22.7 (2 splits) / 19.9 / 19.5
#: (20.5); nt 14336x32x4096 35.6 / 32.4 / 32.0 (32.0).  Stream-K on them was slower (36.0,
#: 23.5, 22.7, 24.3, 35.5).  The picks before / after over 80 products (M 2048-30000, N 8, 16,
#: 24 and 32, K 1024 and 4096; same method): B N-major 0.933x / 1.088x, K-major 0.959x / 1.127x.
#: One-pass TF32 (fp32 C either way) takes them too, where its kernel does not swap (B K-major,
#: A either major): before, 64 x 128 tiles, H200, 2026-12-04, us (cuBLAS TF32): nt 4096x8x4096
#: 47.1, tt 42.1 (23.6, 23.9); nt 8192x16x8192 148.6, tt 134.9 (81.8, 71.4).  On the narrow
#: tiles, same day: nt 1500x8x4100 11.5 (15.1), tt 12.8 (14.5), 1400x16x1000 7.5 / 8.0 (8.9,
#: 9.2), 1000x24x2000 8.4 / 8.9 (10.2, 9.6), 8200x32x1032 11.5 / 12.1 (15.4, 17.9),
#: 6000x20x3000 22.9 / 25.4 (24.9, 26.8); tn (B copied K-major) 0.86-1.18x.
_NARROW_N_MATH = ("float16", "bfloat16", "tf32")
#: With the short operand stored along its short side (B N-major for small N, A M-major for
#: small M), the narrow tiles of fewer rows than this are not offered: each K-tile of that
#: operand is then rows of a few dozen bytes, and 128-row tiles (twice the work per such load)
#: won in that layout.  Same runs, nn (B N-major), best 128-row / best 64-row narrow tile, us:
#: 4096x8x4096 12.8 / 14.9, 8192x8x8192 37.0 / 44.8, 14336x16x4096 34.6 / 37.1, 4096x16x14336
#: 32.2 / 33.0; the K-major B (nt) was within 3% either way (4096x8x4096 12.2 / 12.0).  And for
#: small M stored M-major (tn; 2026-12-02), only where a row of A^T is no whole number of 32-byte
#: sectors (``_ACROSS_BYTES``): the 64 x 32 / 64 x 16 pick against 128-row tiles, us (cuBLAS):
#: 24x8192x8192 49.0 / 40.8 (38.9), 24x4096x14336 42.5 / 36.3 (34.0), 8x8192x8192 46.4 / 37.4
#: (42.0), 8x4096x4096 15.6 / 13.2 (15.4); but at M = 32 (64-byte rows) 14.5 / 16.7 (14.3) at
#: 32x4096x4096 and 38.2 / 40.6 (35.4) at 32x8192x8192, and at M = 16 within 4% either way.
_ACROSS_ROWS = 128
_ACROSS_BYTES = 32
#: The transposed products' rate: their narrow tiles keep few bytes in flight per CTA, so the
#: bandwidth grows with every CTA of the wave.  H200, same runs, us, for 64 x 32 tiles at 1, 2
#: and 4 splits (64, 128 and 256 CTAs over N = 4096): 24x4096x4096 15.7 / 14.6 / 15.7,
#: 24x4096x14336 39.3 / 33.6 / 35.4; at N = 8192 one split (128 CTAs) was best, and at N =
#: 14336 112 128-row tiles in one wave beat 224 64-row ones in two (16x14336x4096 34.0 / 35.5).
_TRANSPOSED_SATURATION = 1.2
# fp16/bf16 wgmma as this family sustains it on an H100/H200-class SM (~660 TFLOP/s on 132 SMs);
# TF32 wgmma runs at half that rate on fp32 (4-byte) operands and 32-wide K-tiles.
# A 16-bit product through the workspace costs ~6 us beyond the partials' traffic (the reduction's
# launch and latency): H200, 2026-12-01, 2 splits against none on 64x128 tiles: 768^3 +8.2 us,
# 1000^3 +10.6, 1024^3 +10.8, 128x4096x4096 +3.1 (where halving each CTA's K saved the rest).
# A deep split (``waves.DEEP_SPLITS``) keeps at least 8 K-tiles: at 4 the pipeline's fill and
# the persistent CTA's set-up outweighed the added CTAs (fp16 64x8x8192 nt 5.4 us at 30 splits
# against 4.5 at 16).
# The fp32 products (one-pass TF32 and 3xTF32) go through the same workspace and reduction, at
# the same fixed cost: priced at the default 2.5 us, small TF32 products split where unsplit ran
# faster.  H100, 2026-12-06, L2-cold tuner sweeps, us, the 2.5 us pick / unsplit (cuBLAS TF32):
# tt 60x5980x1464 64 x 128 in 2 splits 23.1 / 19.6 (21.4), tt 156x2780x1332 20.7 / 17.9 (18.8),
# tt 56x7432x6464 80.4 / 73.5 (79.4), tn 64x2236x1064 (A copied) 15.7 / 13.7 (12.8); where the
# split won it still does at 6 us (tt 104x1240x1756 12.9 at 5 splits against 18.0 unsplit, tt
# 192x1040x1836 14.6 at 4 against 17.0).  A further 2.5 us on the splits of tn small-M
# products (A copied, swapped: 64x2236x1064 15.7 us in 3 splits, 13.7 unsplit) lost held out
# (A/B, H100, 2026-12-06, the 135 tf32T products of seeds 1800-2599 whose pick it moved:
# 0.992x, 0.73x-1.29x): on these the model's times are off by -15% to +45% either way, split
# or not (tn 132x3024x1748 unsplit on 96 64 x 128 tiles 31.3 us, priced 21.6).
_RATES = {
    16: (64, waves.Rate(flops_per_sm=5.0e12, slots=1, in_bytes=2, out_bytes=2, min_k_tiles=4,
                        reduce_seconds=6e-6, deep_k_tiles=8)),
    32: (TF32_TILE_K,
         waves.Rate(flops_per_sm=2.5e12, slots=1, in_bytes=4, out_bytes=4, min_k_tiles=4,
                    reduce_seconds=6e-6, deep_k_tiles=8)),
}
#: Tiles of the promoting kernel (3xTF32), whose wgmma and register accumulators share the
#: consumer threads' 232 registers (so at most 192 wide).  H200, 2026-12-01, stages of both
#: parts (128x192: 2 stages, 128x128: 3), fp32 nn, unsplit: 4096^3 1246 us (128x192) against
#: 1217 (128x128), 8192^3 9352 against 10442.
_PROMOTED_EFFICIENCY = {(128, 192): 1.0, (128, 128): 0.94, (64, 128): 0.6}
#: The most promoted adds (``promoted_sums``) one split of a 3xTF32 product makes in sequence in
#: fp32 registers; split-K's fixed-order reduction adds the rest.  Each add rounds.  When the
#: kernel promoted after each K-tile of each of its three passes, the unsplit error grew to 1.6x
#: cuBLAS SGEMM's at K = 4096 (384 adds) and 2.85x at K = 16384 on an H200.  With the three
#: products of a K-tile promoted together (one add per 32 of K), unsplit, Gaussian data,
#: relative Frobenius error against float64 (SGEMM's): 8192^3 3.2e-7 (1.6e-6), 2048 x 2048 x
#: 16384 4.3e-7 (2.3e-6), i.e. 0.2x SGEMM's at 256 and 512 adds.
_PROMOTED_CHAIN = 512
#: The epilogue ring of TF32 products: fp32 sub-tiles are twice as large, and two stages leave
#: room for four A/B stages of a 128 x 256 x 32 tile.
_TF32_EPI_STAGES = 2


#: Why unsplit one-pass TF32 products of two 128-row tiles or more run in 2x1 clusters (the B
#: tile loaded once per cluster by TMA multicast): H200, 2026-12-01, one run, K-major operands,
#: against cuBLAS TF32: 4096^3 398 TFLOP/s (0.98x) clustered, 380 (0.94x) not; 8192^3 398
#: (1.03x) against 365 (0.94x).  TF32 reads twice the bytes of fp16 per flop, so L2 traffic
#: matters more than in the fp16 kernel (which runs unclustered).
_TF32_CLUSTER = (2, 1)
#: The 64-row tiles whose unsplit one-pass TF32 products run in 2x1 clusters, as 128-row ones
#: do, where the kernel does not swap (B K-major: the B tile multicast to two tile rows of M).
#: H100, 2026-12-06, ``tools/ab_compare.py``, the 106 tf32T products of seeds 2600-2699 whose
#: pick clustering every 64 x 128 tile moved, two calls of three rounds, gain (base / head):
#: tt 64 x 128 1x1 -> 2x1 (23) 1.106x (0.99-1.28x), tt split -> unsplit 64 x 128 in 2x1 (26)
#: 1.043x (0.86-1.29x); swapped (tn, the A tile multicast over two tile rows of N) 1x1 -> 2x1
#: (26) 1.006-1.013x, split -> 2x1 (31) 0.952x, hence not swapped.  A sweep over M (tn, N 3072
#: and 6144, K 1024 and 3072; ``docs/performance.md``, 64th session) found the swapped 64 x 128
#: K-tile slowest where the last tile column over M is nearly empty (M = 40: 0.35 us per K-tile
#: at 48 CTAs, M = 124: 0.23), which 2x1 helps at 48 CTAs (0.25) but not at 96 (0.45 -> 0.48).
_TF32_CLUSTER_SHORT = ((64, 128),)
#: The 64 x 64 tile (``_ONE_ROW_TILE``) offered to swapped one-pass TF32 products of M <= 64 at
#: this efficiency (priced unclustered, at ``_ONE_ROW_SATURATION``): one tile column over M, as
#: 64 x 128 has, with less of it empty, so the same CTAs at 0.6-0.7 of the time per K-tile.
#: H100, 2026-12-07, tn, unsplit, L2-cold, us, 64 x 64 / 64 x 128 / 128 x 128 (the pick before;
#: cuBLAS TF32): 40x3072x1024 12.4 / 14.8 / 16.5 (14.7; 13.1), 40x6144x1024 14.0 / 18.1 / 16.8
#: (18.2; 18.7), 40x6144x3072 33.0 / 46.9 / 46.5 (128 x 128 in 5 splits 42.9; 37.2),
#: 64x6144x3072 32.7 / 44.6 / 40.1 (45.0; 39.5), 40x3072x3072 25.8 / 37.2 / 36.5 (5 splits 25.4;
#: 23.8); 2x1 clusters within 1-3% either way.  At M = 96 (two tile columns) it lost: 96x6144x3072
#: 56.2 against 64 x 128's 40.8.  0.4 puts the model's 64 x 64 / 64 x 128 ratio at K = 3072 at
#: 0.69-0.73 (measured 0.69-0.73).  Held out (H100, 2026-12-07, ``tools/ab_compare.py``, two
#: rounds): the 84 tf32T tn products of seeds 3200-3399 whose pick it moves (34 to it
#: unsplit, 50 split) ran 1.158x faster, none slower (1.028-1.578x; 56x4492x1384 24.1 ->
#: 15.3 us), x cuBLAS TF32 0.878x -> 1.02-1.04x.
_TF32_ONE_ROW_EFFICIENCY = 0.4
#: One-pass TF32 schedules that run unclustered (split ones, 64-row tiles, one tile row, and
#: the unsplit variant ``_UNCLUSTERED``) are priced at this fraction of the tile's efficiency,
#: the level of 2x1 clusters.  H100, 2026-12-06, L2-cold tuner sweeps, us, 2x1 / 1x1:
#: nt 5888x2368x5440 128 x 192 439 / 579, 128 x 256 445 / 558, 128 x 128 523 / 644; nn
#: 7488x4096x2176 128 x 192 383 / 455, 128 x 256 406 / 465, 128 x 128 440 / 541; tn
#: 788x2796x2196 128 x 192 54.6 / 65.9 (0.76-0.87).  Before, odd counts of tile rows ran
#: unclustered and nothing was priced for it.  Same method, two runs each, the 44 TF32 class
#: products of seeds 300-399 whose pick clustering odd rows changed: tf32 (24) gain 1.15x (nn
#: 6784x2112x7168 843 -> 598 us, cuBLAS 601), but tf32T (20) 0.99x, where pricing the idle CTA
#: into split schedules (which run unclustered) moved small-M products to 64 x 128 (tt
#: 564x1124x6316 57.4 -> 82.2 us); hence clustered tiles are priced unsplit only, and every
#: unclustered schedule at this fraction.
_TF32_UNCLUSTERED = 0.82
#: The one-pass TF32 128 x 128 tile is priced at this fraction of its efficiency: per wave of
#: equal work it ran 0.87 of 128 x 192's speed where the model has 0.95 (same sweeps: nn
#: 7488x4096x2176 in clusters 440 us against 383, nt 5888x2368x5440 523 against 439; moving
#: 128 x 128 in clusters to 128 x 192 or 128 x 256 in clusters gained 1.11-1.15x on 17 of seeds
#: 300-399).  Both rules, held out: the 56 TF32 class products of seeds 400-499 whose pick
#: they change, x cuBLAS 0.947x / 0.951x -> 1.021x / 1.031x, least 0.62x -> 0.78x; tf32 (28)
#: gain 1.12x, tf32T (28) 1.04x (tt 668x6124x4236 308.5 -> 167.3 us, cuBLAS 191.0); it lost on
#: tiny split products whose split count moved (tt 196x1240x3172 21.9 -> 26.4 us).
_TF32_SQUARE = ((128, 128), 0.9)
#: One-pass TF32 products are also bounded by their tiles' reads through L2
#: (``waves.Rate.l2_bandwidth``): a 64 x 128 tile reads 24 KB per 32-wide K-tile for 0.5
#: MFLOP, so many of them over a long K outrun L2, not the SMs.  H100, 2026-12-06, L2-cold,
#: us: tt 196x3572x3788 on 112 unsplit 64 x 128 tiles 66.2 (326 MB read, 4.9 TB/s), on 128 x
#: 192 tiles in 3 splits 49.2 (cuBLAS TF32 40.1); tt 236x3700x3612 66.2 / 51.5; but tt
#: 60x5980x1464 on 47 unsplit 64 x 128 tiles 19.6, split in 2 23.1.  Fitted to the A/B of the
#: reduction's price (81 tf32T and high products of seeds 1200-1399, each timed on both
#: picks): the pick's time over the faster of the two 1.030 without the bound, 1.013 with it
#: (1.018 at 7e12, 1.013 at 5e12 where 9 picks left the measured pair).  5e12, held out (A/B,
#: three rounds, H100, 2026-12-06: 140 of the 270 TF32 class products of seeds 1800-1899 whose
#: pick it moves), lost: 0.982x, tf32 nt (23, large, 128 x 192 -> 128 x 256 in clusters)
#: 0.955x, nn (27) 0.985x, tf32T tt (42) 0.978x, tn (48) 0.999x.
_TF32_L2_BANDWIDTH = 6e12


def promoted_fits(k: int) -> bool:
    """Whether an unsplit 3xTF32 product of this K sums few enough K-tiles in sequence."""
    return promoted_sums(k) <= _PROMOTED_CHAIN


def promoted_sums(k: int) -> int:
    """The promoted fp32 adds of an unsplit 3xTF32 product: one per 32-wide K-tile (each stage
    holds both parts of A and B and runs the three products before its promotion)."""
    return -(-k // TF32_TILE_K)


def gemm_k(k: int, math: str) -> int:
    """The K of the MMA work the kernel does: 3xTF32 runs three products over K padded to whole
    TF32 tiles (all three on each K-tile it loads)."""
    return 3 * (-(-k // TF32_TILE_K) * TF32_TILE_K) if math == "tf32x3" else k


def choose_schedule(m: int, n: int, k: int, batch: int, num_sms: int,
                    max_splits: int = waves.MAX_SPLITS, math: str = "float16",
                    swapped: bool = False, majors: tuple[str, str] = ("k", "n"),
                    c_aligned: bool = True, streamk: bool = True) -> tuple[Config, int, bool]:
    """(configuration, K-splits, transposed) of least estimated time under the wave model.

    With persistent CTAs the last wave is what idles SMs: 128 tiles on 132 SMs use 97% of the
    machine, 256 tiles use 97% of two waves, 140 tiles only 53%.  When the output tiles cannot
    fill the machine (skinny products, long K), K is split: each split writes fp32 partial sums
    (``Config.partials``) that ``kernels/splitk_reduce.py`` adds up.  The raster group is a fixed
    compile-time bound that the kernel clamps to the number of tile rows at run time, so it
    never causes a recompile per size.

    Small-M products (``transposes``: M <= ``SMALL_M``, N >= 4 M) are computed transposed,
    C^T = B^T A^T, into the fp32 workspace (``transposed`` True, always partials, split or not):
    a 64- or 128-row tile then runs along N and a narrow tile (16 or 32 wide, all of M) along M,
    instead of a tile that is mostly padding.  This needs the workspace, so ``max_splits=1``
    (no workspace: a launch in pieces) never takes it.  16-bit ones over a long N run the same
    tiles swapped instead, C stored through its transpose (``_swapped_small_m``, below).

    Small-N 16-bit products (``narrow_n``: N <= ``SMALL_M``, M >= 4 N) run on the same narrow
    tiles untransposed (rows along M, all of N in the tile's width).  Unsplit they write C
    themselves, in 2x1 clusters where M spans two tiles (``_NARROW_N_MATH``); split, or with
    ``c_aligned`` False (C rows of no whole 16-byte vectors, which TMA cannot store), through
    the workspace.  ``majors`` (A's, B's) decide which narrow tiles are offered
    (``_narrow_tiles``).

    ``swapped``: the kernel computes C^T = B^T A^T itself (``swaps``), so unless the product is
    computed transposed its tiles are chosen over (N, M) (a small-M product's transposed route
    runs in that orientation already).

    16-bit products whose N is 65-112, with B K-major, are offered tiles 80, 96 or 112 wide
    beside the 128-wide ones (``_odd_width``).

    Skinny 16-bit products whose M fits one tile width that is no multiple of 128 (128 < M <=
    224) run swapped instead (``_swapped_skinny``): C^T = B^T A^T in the kernel, all of M in
    one 160-, 192- or 224-wide tile, no padded rows; so do M of 65-127, 33-63, and M of 32 or
    less whose N's 64-row tiles (over a long K, ``_SWAP_FILL_K_TILES``, the tiles as they
    would run) fill ``_SWAP_SMALL_FILL`` of the SMs (16 or 32 wide).

    ``math`` (``MATH_TYPES``) sets the K-tile and the rate; 3xTF32 is scheduled as the three
    products it runs (``gemm_k``).

    ``max_splits`` 1 means the route has no workspace (no split, transposed or partials
    schedule); ``streamk`` False that it has partials but no zeroed flags for stream-K (the
    XLA route, whose partials are an output of the custom call: ``xla.xla_plan``).
    """
    skinny = _swapped_skinny(m, n, k, batch, num_sms, max_splits, math, majors, c_aligned,
                             streamk)
    if skinny is not None:
        return skinny
    m, n, space = _oriented_space(m, n, k, batch, num_sms, max_splits, math, swapped, majors,
                                  c_aligned)
    tile, splits, config = _model_pick(m, n, batch, num_sms, max_splits, math, space)
    wide = _swapped_wide(m, n, batch, num_sms, math, majors, c_aligned, space, tile, splits,
                         config)
    if wide is not None:
        return wide[0], 1, False
    return config, splits, space.transposed


def _model_pick(m: int, n: int, batch: int, num_sms: int, max_splits: int, math: str,
                space: "_Space") -> tuple[tuple, int, Config]:
    """(tile, splits, configuration) the wave model picks among ``space``'s tiles
    (``_oriented_space``, whose ``m`` and ``n`` these are): the product transposed where
    ``space`` says so, an unsplit untransposed pick in 2x2 clusters where ``_quad`` takes it."""
    rows, cols = (n, m) if space.transposed else (m, n)
    tile, splits = waves.best(rows, cols, space.k, batch, num_sms, space.tile_k, space.tiles,
                              max_splits, workspace=space.workspace, min_splits=space.fewest)
    config = _config(space, math, m, tile, splits)
    if splits == 1 and not space.transposed:
        config = _quad(config, m, n, batch, num_sms)
    return tile, splits, config


#: 16-bit products of many tiles may run swapped (``Config.swap``: tiles over (N, M), C stored
#: through its transpose) where that orientation's 128-row tiles fill the SMs' waves better
#: (``_swapped_wide``).  cuBLAS fits a wave with tile shapes of every size (on an H100, 2026-12-05,
#: nvjet tiles 288x128, 176x192, 136x256 in our orientation on 1528x3144x1768,
#: 1872x2296x2520, 1176x3472x3360); our tiles are 128 rows by a width, and swapping puts the
#: width on M.  Measured on an H100, 2026-12-05, fp16, L2-cold rotated inputs, us, 15 mid
#: products whose pick was 128 x 160 in 2x1 clusters, every width of 128-256 in both
#: orientations (``tools/sweep_schedule.py --widths``; pick / this rule's choice (cuBLAS)): nn
#: 1376x3208x2912 61.8 / 51.6 (40.3), 1872x2296x2520 55.5 / 46.5 (37.0), 1576x2640x1984 38.0 /
#: 32.5 (26.2), 2848x3352x2760 116.5 / 94.1 (88.6), nt 1376x3208x2912 52.7 / 47.8 (38.7); over
#: the 30 (nn and nt), the chosen schedule's time over the fastest one measured: the pick's
#: 1.075 (geometric mean), this rule's 1.030.  The swapped tiles are priced as the same tiles
#: unswapped: a measured gain of both operands' 128-byte swizzle (1-2%) is left out, so a
#: product both orientations tile alike (a square) keeps its unswapped schedule unless a
#: ``_FINE_N`` width, swapped only, fills its waves better (1536^3: 132 tiles of 128 x 144 in
#: one wave against 120 of 128 x 160).  A K-major only (the widths along M are then 128-byte
#: swizzled rows of K; A M-major was not measured), data-parallel, 2x1 clusters where N spans
#: two tiles.  Batches alike: a batch's per-matrix M of 300-600 pads 128-row tiles by 10-23%
#: and leaves an odd count of tile rows (unclustered, ``_UNCLUSTERED``), where N swapped along
#: the rows pads less.  H100, 2026-12-06, L2-cold, us, the untransposed pick / the fastest of
#: every width 128-256 in both orientations, 1x1 and 2x1 (cuBLAS), nn: 53 x 336x1352x1480 226.2
#: / 165.7 swapped 128 x 192 (157.0), 61 x 320x1408x1272 195.6 / 157.1 (129.0), 47 x
#: 344x968x1448 140.8 / 102.9 (99.2), 48 x 584x728x376 58.4 / 45.0 (46.3); swapped was the
#: fastest on all 13 such products swept.  Then held out, two runs alternating
#: (``tools/ab_compare.py``), the 40 batched products of seeds 1000-1099 whose pick this
#: moves (fp16 nn, batches 4-62): 1.101x faster (geometric mean; least 0.966x, most 1.31x),
#: x cuBLAS 0.963x / 0.953x -> 1.045x / 1.062x.
_SWAPPED_WIDE_TILES = {**{(128, w): _CLUSTERED_EFFICIENCY[(128, w)] for w in (128, 192, 256)},
                       **_WIDE_EFFICIENCY, **_WIDE_UNSPLIT_EFFICIENCY}
#: The ``_FINE_N`` widths as wide swapped tiles: the mean of their neighbours' efficiencies, less
#: 2% for the 16-wide epilogue sub-tiles (``epilogue_width``).  Fitted to the measurements
#: above (0.96-1.0 alike).
_SWAPPED_FINE_TILES = {(128, 144): 0.94, (128, 176): 0.95, (128, 208): 0.965}


#: The swapped wide schedules the tuner times beside the others (``candidates``), the wave
#: model's best first.  On the 30 measured rows (``_SWAPPED_WIDE_TILES``, swapped in 2x1
#: clusters) the model's first width was the fastest swapped one 16 times, its first three held
#: it 28 times (H100, 2026-12-05).
_SWAPPED_WIDE_TIMED = 3


def _swapped_wide_tiles(n: int, math: str, majors: tuple[str, str],
                        c_aligned: bool, space: "_Space", tile: tuple, splits: int,
                        picked: Config) -> dict | None:
    """The swapped tiles (``waves`` form, over (N, M)) that ``_swapped_wide`` weighs against the
    untransposed pick (``tile``, ``splits`` in ``space``; ``picked`` its configuration), or
    None where the rule does not apply: only where the pick is what was measured (one matrix or
    a batch), unsplit, on a cooperative 128-row tile at least 128 wide (not pingpong, not 64
    rows), in 2x1 clusters or alone, not in 2x2 (measured faster than either orientation in
    2x1: 1728x1264x3440 25.2 against 28.1 us swapped); 16-bit with A K-major; not where C
    cannot be stored by TMA (``c_aligned``)."""
    measured = (tile[0] == 128 and tile[1] >= 128 and tile[2:] in ((), (_UNCLUSTERED,))
                and splits == 1)
    if (not measured or math not in _CLUSTERED_MATH or majors[0] != _ODD_MAJOR or not c_aligned
            or space.transposed or space.workspace or space.swapped or picked.cluster_n > 1):
        return None
    rate = _RATES[16][1]
    tiles = {}
    for (tm, tn), eff in {**_SWAPPED_WIDE_TILES, **_SWAPPED_FINE_TILES}.items():
        clustered = _cluster_m(math, (tm, tn), n, 1) > 1
        if (tm, tn) == _SQUARE_IN_CLUSTERS[0]:
            eff *= _SQUARE_IN_CLUSTERS[1]
        tiles[(tm, tn)] = (eff, rate._replace(cluster_rows=2) if clustered else rate)
    return tiles


def _swapped_config(tile: tuple, rate: waves.Rate) -> Config:
    """The swapped data-parallel configuration of a ``_swapped_wide_tiles`` tile."""
    return Config(tile_m=tile[0], tile_n=tile[1], raster_group=8, epi_n=epilogue_width(tile[1]),
                  cluster_m=rate.cluster_rows, pdl=_PDL, swap=True)


def _swapped_wide(m: int, n: int, batch: int, num_sms: int, math: str,
                  majors: tuple[str, str], c_aligned: bool, space: "_Space", tile: tuple,
                  splits: int, picked: Config) -> tuple[Config, float] | None:
    """(configuration, estimated seconds) of the swapped data-parallel schedule of a 16-bit
    product with A K-major where the wave model prices it below the untransposed pick
    (``tile``, ``splits`` in ``space``; ``picked`` its configuration) by more than
    ``waves.TOLERANCE``, else None (``_SWAPPED_WIDE_TILES``; where it applies:
    ``_swapped_wide_tiles``)."""
    tiles = _swapped_wide_tiles(n, math, majors, c_aligned, space, tile, splits, picked)
    if tiles is None:
        return None
    swapped_tile, _ = waves.best(n, m, space.k, batch, num_sms, space.tile_k, tiles, 1)
    eff, swapped_rate = tiles[swapped_tile]
    swapped = waves.estimate(n, m, space.k, batch, num_sms, *swapped_tile, space.tile_k, 1,
                             eff, swapped_rate)
    eff, picked_rate = space.tiles[tile]
    if tile[2:] == (_UNCLUSTERED,):
        # Against the swapped tiles an unclustered pick is priced as for one matrix at every
        # batch (the space keeps batches' price, so that they do not move to pingpong 128 x
        # 128).  H100, 2026-12-06, L2-cold, the 19 batched products of seeds 1000-1199 this
        # moves to swapped tiles in 2x1 clusters: 1.147x faster (least 0.98x), x cuBLAS 0.89x
        # -> 1.03x (48 x 584x728x376 58.2 -> 45.3 us, cuBLAS 46.3); held out, the 65 of seeds
        # 1200-1799: 1.142x (least 0.975x), x cuBLAS 0.90x -> 1.03x.
        eff = min(eff, _UNCLUSTERED_SINGLE_EFFICIENCY.get(tile[:2], eff))
    estimated = waves.estimate(m, n, space.k, batch, num_sms, *tile[:2], space.tile_k, splits,
                               eff, picked_rate, space.workspace)
    if swapped >= estimated * (1 - waves.TOLERANCE):
        return None
    return _swapped_config(swapped_tile, swapped_rate), swapped


def _swapped_wide_options(m: int, n: int, batch: int, num_sms: int, math: str,
                          majors: tuple[str, str], c_aligned: bool, space: "_Space",
                          tile: tuple, splits: int, picked: Config) -> list[Config]:
    """The ``_SWAPPED_WIDE_TIMED`` swapped schedules the wave model ranks best where
    ``_swapped_wide_tiles`` applies (whether or not they beat the pick), for the tuner."""
    tiles = _swapped_wide_tiles(n, math, majors, c_aligned, space, tile, splits, picked)
    if tiles is None:
        return []
    ranked = waves.ranked(n, m, space.k, batch, num_sms, space.tile_k, tiles, 1)
    return [_swapped_config(t, tiles[t][1]) for _, _, _, t in ranked[:_SWAPPED_WIDE_TIMED]]


#: The tall tiles the tuner times (``candidates``), never the wave model: 256 rows by these
#: widths, cuBLAS's tile shapes of mid products (256 x 160 on 3304x3160x1312 and
#: 2848x3352x2760, H100, docs/performance.md, 50th section).  On 30 mid products (H100,
#: 52nd section) one was fastest on 10, by 0.2-13.8%, mostly where its tiles make about one
#: wave, and 30-75% slower with half a wave: not yet a rule for the model.
_TALL_TIMED = (160, 192)


def _tall_options(m: int, math: str, c_aligned: bool, splits: int) -> list[Config]:
    """The ``_TALL_TIMED`` tiles, data-parallel, for a 16-bit product whose untransposed pick is
    unsplit (``splits``) and whose M spans two 256-row tiles or more (2x1 clusters: one B tile
    for both), with C storable by TMA; else none."""
    if math not in _CLUSTERED_MATH or splits != 1 or not c_aligned or m <= 256:
        return []
    return [Config(tile_m=256, tile_n=width, raster_group=8, epi_n=epilogue_width(width),
                   cluster_m=2, pdl=_PDL) for width in _TALL_TIMED]


#: Skinny 16-bit products whose M fits one tile width of ``_SWAP_WIDTHS`` run swapped
#: (``Config.swap``, C^T = B^T A^T in the kernel): the long N along the tile's rows, all of M in
#: the tile's width.  Untransposed, such an M is padded to whole 64- or 128-row tiles, and an
#: odd count of tile rows leaves the last 2x1 cluster's second CTA idle (M = 160 on 64-row
#: tiles: 4 CTA rows for 2.5 rows of data).  H200, 2026-12-02, fp16, L2-cold rotated inputs,
#: us, the untransposed pick / this rule's swapped schedule (cuBLAS), nn: 160x8192x8192 69.5 /
#: 38.5 (37.8), 160x10240x8192 105.7 / 56.5 (59.8), 160x16384x16384 323.1 / 139.4 (141.8),
#: 192x8192x8192 59.5 / 41.9 (49.8), 192x4096x14336 66.9 / 46.2 (46.4), 200x16384x16384 187.0 /
#: 173.5 (164.3), 224x4096x14336 58.3 / 50.7 (52.3); tn (A M-major, 2x1): 160x12288x12288
#: 109.2 / 92.4 (96.5), 192x10240x8192 101.8 / 60.6 (54.8).  Over 28 products per layout (M
#: 160, 192, 200, 224; seven (N, K) of 4096-16384), geometric mean x cuBLAS of the picks,
#: untransposed / this rule: nn 0.804x / 1.010x, tn 0.868x / 1.033x.  Where it lost:
#: 224x4096x4096 (nn 20.1 against 19.0, tn 20.4 against 17.6); 160x10240x8192 stream-K 56.5
#: against 54.4 data-parallel.  M of 256 (w 256) and of 96-128 measured no gain
#: (the untransposed tiles cover them as well).
_SWAP_WIDTHS = (160, 192, 224)
#: With A M-major, only M up to this runs swapped: there the untransposed schedule is three
#: 64-row tiles in 2x1 clusters, one CTA in four idle, while above it two 128-row tiles cover
#: M and measured as fast or faster (H200, 2026-12-03, fp16 tn, us, untransposed / swapped:
#: 208x7168x4096 26.4 / 32.6, 208x4096x11008 42.8 / 47.2, 224x4096x4096 17.6 / 20.4, but
#: 224x16384x16384 193.8 / 184.6).  With A's rows of no whole 32-byte sectors
#: (``_ACROSS_BYTES``) the swapped tiles are 128 rows (a 64-row one rereads those rows twice
#: as often).  Same runs, us, untransposed pick / 128-row swapped, 2x1, stream-K where the rule
#: takes it (best 64-row swapped; cuBLAS): 136x9216x9216 124.5 / 58.3 (72.1; 62.8),
#: 168x11008x4096 63.2 / 36.8 (40.8; 31.7), 184x4096x11008 58.9 / 41.3 (43.4; 42.7),
#: 168x5120x5120 47.6 / 38.4 (28.1; 20.9); 16 products: geometric mean x cuBLAS 0.608x / 0.91x.
_SWAP_ACROSS_M = 192
#: The rule needs N's 64-row tiles (times the batch) to fill this fraction of the SMs; below
#: that the untransposed schedule splits K (not measured swapped).
_SWAP_FILL = 0.45
#: Swapped products whose tiles fill less than this fraction of the SMs and walk at least
#: ``_SWAP_STREAMK_K_TILES`` K-tiles run stream-K in 2x1 clusters: same runs, nn, us,
#: data-parallel / stream-K: 192x4096x14336 53.3 / 46.2, 224x10240x8192 71.7 / 65.6,
#: 224x12288x12288 114.2 / 109.8, but 160x4096x4096 15.4 / 19.1 (64 K-tiles).
_SWAP_STREAMK_FILL = 0.75
_SWAP_STREAMK_K_TILES = 128
#: Where N's 64-row tiles fit one wave, A is K-major in rows of no whole 128-byte lines (the
#: 64-row tiles then run in 2x1 clusters, one consumer warpgroup each) and K walks at least
#: this many K-tiles, the swapped product runs stream-K on 128-row tiles of the 160-224 width
#: in 2x1 clusters: two consumer warpgroups per CTA on every SM.  H200, 2026-12-04, fp16/bf16,
#: L2-cold rotated inputs, us, 64-row data-parallel / 128-row stream-K (cuBLAS): 140x7064x13368
#: 75.0 / 67.7 (60.8), 208x6664x14600 99.4 / 89.4 (78.6), 198x8024x13144 98.1 / 87.2 (93.2),
#: 132x6912x14376 74.6 / 65.4 (65.4), 150x7552x9936 54.5 / 52.2 (43.0), but 175x7280x9128
#: (143 K-tiles) 54.1 / 54.7 and 158x8424x7832 (123) 49.5 / 50.4; with whole lines (64-row
#: tiles unclustered) stream-K lost each time (182x6936x10432 56.1 / 61.6, 201x7352x13888 80.3 /
#: 86.3, 172x6416x12800 55.6 / 60.7).  Then 12 products drawn after the rule was set (M
#: 130-213, N 6336-8352, K 9776-15632, rows of no whole lines, nn and nt): geometric mean gain
#: 1.072x (191x6432x11080 67.5 / 57.3, 170x8352x15048 93.2 / 82.6), losing at M of 130-138,
#: whose 144-wide data-parallel tile (``_FINE_N``) stream-K's 160 does not beat (136x6672x15120
#: 73.8 / 77.1, 130x6712x14248 76.8 / 79.0).
_SWAP_LONG_K_TILES = 150
#: M of 65-127 runs swapped on 128 x 128 tiles in 2x1 clusters (the A tile multicast) where
#: N's 128-row tiles, times the batch, fit one wave but their 64-row ones would not: there the
#: untransposed schedule is one 128-row tile row, partly padding, each CTA loading its own copy
#: of the A tile.  H200, 2026-12-03, fp16, L2-cold rotated inputs, us, the untransposed pick /
#: swapped 128 x 128 2x1 (swapped 1x1; cuBLAS): nn 67x15792x15224 171.6 / 145.6 (170.0;
#: 123.8), 69x11032x8664 85.1 / 73.6 (84.6; 61.2), 90x8640x5992 41.0 / 36.6 (43.2; 33.3),
#: 94x14736x7336 77.0 / 66.1 (77.0; 57.6), 112x11232x9536 68.0 / 66.8 (69.1; 68.6); tn
#: 88x14376x15984 187.3 / 139.2 (187.5; 128.4), 120x16152x5400 67.9 / 53.0 (67.5; 55.0); and
#: 2026-12-02: nn 96x12288x12288 99.0 / 90.4, 96x16384x16384 144.9 / 137.9, tn 96x14336x4096
#: 37.1 / 35.0, but tn 96x10240x8192 49.8 / 52.0.  At M = 128 (no padding) it won as often as
#: it lost (nn 128x10240x8192 49.9 / 54.7, 128x16384x16384 132.8 / 130.2).  Where N's 64-row
#: tiles fit one wave (two 64-row tile rows untransposed, 2x1) it did too (70x7144x2536 19.3 /
#: 17.6, 124x7168x5488 24.5 / 29.4), and on fewer tiles it lost (89x5120x11808, 40 tiles: 42.2
#: / 57.2); 64-row swapped tiles lost to 128-row ones.  With A K-major, M of 65-112 takes the
#: narrowest of 80, 96 and 112 that holds it instead of 128 (``_odd_width``).
_SWAP_ONE_ROW = 128
#: M of 33-63 over a long N runs swapped on 64-wide tiles in 2x1 clusters (the A tile
#: multicast), 64 rows where N's 64-row tiles (times the batch) fit one wave, else 128; never
#: stream-K.  Untransposed it was one row of 64 x 64 or 64 x 128 tiles, each CTA loading its own
#: copy of the A tile.  H200, 2026-12-03, fp16, L2-cold rotated inputs, us, the untransposed
#: pick / this rule's schedule (cuBLAS): nn 47x5960x5960 31.5 / 27.4 (24.6), 39x14184x14184
#: 121.2 / 110.7 (107.7), 43x4656x4656 18.1 / 16.9 (17.2), 33x13848x13848 139.3 / 107.7
#: (105.0), 35x11808x11808 77.8 / 79.1 (73.4); tn 47x5960x5960 38.7 / 30.3, 39x14184x14184
#: 156.2 / 120.3, 33x13848x13848 199.5 / 117.1, 35x11808x11808 98.2 / 80.6.  Stream-K lost on
#: each (35x11808x11808 nn 85.4, tn 90.1), and so did the 128-row tile where the 64-row ones fit
#: one wave, whether or not A's rows are whole sectors (tn 47x5960x5960 35.0 against 30.3).
#: Then on a fresh draw (13 products of M 33-60, N and K 4096-16384; rule set before it ran),
#: geometric mean x cuBLAS, previous picks / this rule: nn 0.866x / 0.957x (least 0.68 / 0.82),
#: tn 1.507x / 1.791x (53x15240x7080 nn 81.2 / 58.1 us, 37x5712x8792 42.9 / 35.9, 51x7320x8664
#: 52.3 / 41.2; where it lost, 60x12288x12288 nn 76.7 / 81.8 and 56x4096x14336 nn 34.4 / 36.3,
#: tn won both).  At M = 64 (no padded rows) it lost by 1-3% (64x8192x8192 nn 34.1 / 34.7,
#: 64x4096x4096 11.9 / 12.2): M = 64 stays untransposed, as M = 128 does.
_SWAP_NARROW = 64
#: With A stored M-major, M of 17-32 runs swapped on the same 64-wide tiles (64 or 128 rows
#: by the same fill, 2x1), not transposed through the workspace on 16- or 32-wide tiles: the A
#: tile is multicast and C needs no reduction launch.  H200, 2026-12-04, L2-cold rotated
#: inputs, us, the previous pick / this rule (cuBLAS), fp16 unless marked: tn 22x4880x7168
#: 29.9 / 26.6 (41.1), 30x13848x16200 152.4 / 130.0 (196.1), 22x11280x5760 52.0 / 38.4 (64.4),
#: bf16 25x9344x16352 95.6 / 85.0 (230.8), 32x8192x8192 39.1 / 36.0 (35.0); then a second
#: draw, rule set before it ran: tt 30x10336x10664 75.7 / 66.3 (104.7), bf16 tn 19x14192x8720
#: 85.8 / 67.8 (211.6), tn 18x8304x4520 32.1 / 27.3 (39.2), tt 18x11560x12216 95.0 / 82.1
#: (162.6), tn 26x6616x15368 73.5 / 67.8 (95.7), bf16 tn 26x9872x9016 66.4 / 52.8 (81.0), tt
#: 31x13312x9864 82.9 / 75.3 (216.3), tn 20x15968x12656 125.5 / 103.3 (169.3): faster on all
#: 13, geometric mean 1.171x (least 1.084x), the rule's tile the fastest timed on 12.  With A
#: K-major it was as often slower as faster (nn 32x8192x8192 37.5 / 38.3, 24x8192x8192 36.7 /
#: 39.3, 23x8792x15104 84.3 / over 84.7, but 27x9368x9424 63.4 / 60.6): those stay transposed.
#: At M of 16 or less it was mixed too (tn 4x12472x7256 61.3 / 57.5, 16x6848x5440 24.8 / 22.2,
#: but 4x5352x8632 34.0 / over 35.4, 1x4696x4952 18.6 / over 18.2).  Since 2026-12-04 (session
#: 36) the 16- and 32-wide swapped tiles take every small M, ``_SWAP_SMALL_FILL``.
#: A K-major A whose rows are no whole 128-byte lines (K x itemsize) is multicast too: each
#: TMA row of its tile then spans two lines, and the two CTAs of a cluster share one load.
#: H200, 2026-12-03, fp16 nn, us, unclustered / 2x1 (cuBLAS): 153x6264x6264 (64 x 160) 55.5 /
#: 38.7 (30.7), 167x5800x5800 (64 x 192) 53.5 / 38.7 (28.3), 135x10520x10520 (128 x 160)
#: 98.4 / 79.2 (63.5); with whole lines unclustered stays faster (200x4352x4352, 64 x 224:
#: 21.9 / 23.5; 192x8192x8192 41.9 / 48.5, 2026-12-02).  Then on a fresh draw (rule set before
#: it ran): 152x12696x12696 145.3 / 111.6 (97.8), 160x8200x8200 87.0 / 52.8 (54.7),
#: 202x4720x4720 29.0 / 26.7 (29.4), 136x4464x4464 21.2 / 19.8 (21.5), 220x4688x4688 27.6 /
#: 27.3 (28.4); and with whole lines 192x6144x6144 27.7 / 34.2 (28.3), kept unclustered.
_LINE_BYTES = 128
#: A short side of 65-112 (N untransposed, or M swapped) takes the narrowest tile width of
#: ``_ODD_N`` that holds it, in place of 128, where the operand along that side is K-major (B
#: of an untransposed product, A of a swapped one): its tile rows are K, 128-byte swizzled
#: whatever the width.  Stored along the short side, a tile 80 or 112 wide is 32-byte swizzled,
#: and it lost.  H200, 2026-12-03, fp16, L2-cold rotated inputs, us, the previous pick / the
#: odd width, same rows and cluster (cuBLAS): nt 6656x80x5680 37.5 (64 x 128) / 25.3 (64 x 80;
#: 128 x 80 25.0) (24.2), 3688x112x1416 8.2 / 7.8 (7.9), 2536x104x2616 11.5 / 11.1 (9.9),
#: 10704x104x4912 39.5 / 38.0 (32.4), 1592x72x3464 at 5 splits 12.1 / 11.4 at 4 (10.2); swapped
#: (``_SWAP_ONE_ROW``), A K-major: nn 72x12432x2296 24.7 / 20.2 (20.5), 96x10896x3608 31.5 /
#: 28.6 (25.2), 104x14056x9192 82.8 / 80.9 (71.3).  Stored along the short side it tied or
#: lost: nn 5768x80x7024 31.0 (64 x 128) / 31.0 (64 x 96) / 31.4 (64 x 80), 4304x112x5648 22.3
#: / 25.7 (64 x 112); swapped tn 72x8712x9048 52.6 (128 x 128) / 53.4 (128 x 96) / 58.1 (128 x
#: 80).
_ODD_MAJOR = "k"


def _odd_width(math: str, short: int, major: str) -> int | None:
    """The tile width for a 16-bit product's short side (N, or M swapped) of 65-112 whose
    operand along it is K-major (``_ODD_MAJOR``), else None."""
    if math not in _CLUSTERED_MATH or major != _ODD_MAJOR or not 64 < short <= _ODD_N[-1]:
        return None
    return next(width for width in _ODD_N if width >= short)


#: A swapped skinny product's M of 129-144, 161-176 or 193-208 with A K-major runs on tiles
#: 144, 176 or 208 wide (``_FINE_N``; data-parallel only) in place of 160, 192 or 224: at most
#: 15 padded columns of wgmma, not up to 31.  H200, 2026-12-04, fp16/bf16, L2-cold rotated
#: inputs, us, the 160-224 width / the fine one, same rows and cluster (cuBLAS): 200x8192x8192
#: 51.7 / 43.8 (43.3), 170x6232x2896 22.1 / 19.6 (16.1), 200x7168x5488 40.8 / 35.8 (28.5), bf16
#: 161x16384x16384 153.0 / 137.4 (137.7), 197x4096x4096 20.3 / 19.1 (18.8); geometric mean
#: gain 1.093x over the 16 products of a first draw the rule changes (least 1.04x), then
#: 1.167x over 10 of a second draw (least 1.11x: bf16 200x8384x8192 52.5 / 41.1 (40.4), nt
#: 172x6416x12800 67.0 / 55.8 (53.1)).
def _fine_width(math: str, m: int, major: str) -> int | None:
    """The ``_FINE_N`` width for a swapped skinny product's M (``_swapped_skinny``) where it is
    narrower than the ``_SWAP_WIDTHS`` width and A is K-major (``_ODD_MAJOR``: the tile's rows
    are K, 128-byte swizzled whatever the width), else None."""
    if math not in _CLUSTERED_MATH or major != _ODD_MAJOR:
        return None
    return next((width for width in _FINE_N if width >= m > width - 16), None)


def _swapped_skinny(m: int, n: int, k: int, batch: int, num_sms: int, max_splits: int,
                    math: str, majors: tuple[str, str], c_aligned: bool = True,
                    streamk: bool = True) -> tuple[Config, int, bool] | None:
    """The swapped schedule of a skinny 16-bit product (``_SWAP_ONE_ROW``, ``_SWAP_WIDTHS``,
    ``_SWAP_NARROW``; N at least 4 M), or None.

    M of 65-127 (``_SWAP_ONE_ROW``) runs on 128-row tiles in 2x1 clusters where N's 128-row
    tiles fit one wave and its 64-row ones would not: 128 wide, or 80, 96 or 112 for M of
    65-112 with A K-major (``_odd_width``); M of 65-96 with A K-major also where the 64-row
    tiles fit one wave, on them (``_SWAP_ODD_ROWS``).  Otherwise the tile is as wide as the
    narrowest width that holds M (64 for M of 33-63; 160, 192 or 224), and 64 rows where N's
    64-row tiles fit in one wave (else 128; always 128 with A M-major in rows of no whole
    sectors, but on 64-wide tiles).  The A tile is multicast in 2x1 clusters with A M-major (M
    up to ``_SWAP_ACROSS_M``), whose tile rows are read across, with A K-major in rows of no
    whole 128-byte lines (``_LINE_BYTES``), and on 64-wide tiles; unclustered otherwise, where
    that measured faster (192x8192x8192 41.9 against 48.5 us).  Data-parallel tiles with A
    K-major are the narrowest multiple of 16 that holds M (``_fine_width``: 144, 176, 208 as
    well).  Stream-K (``_SWAP_STREAMK_FILL``, and ``_SWAP_LONG_K_TILES`` on 128-row tiles; not
    on 64-wide tiles, always on a 160-224 width) needs the workspace and its zeroed flags, so
    a route without them (``max_splits`` 1 or ``streamk`` False: XLA) runs data-parallel.  C
    must be TMA-storable through its transpose (``c_aligned``)."""
    if math not in _CLUSTERED_MATH or not c_aligned or n < 4 * m:
        return None
    across = majors[0] == "m"
    width = next(w for w in _TILE_N if w >= m) if m <= _TILE_N[-1] else None
    # An M-major A's rows of whole 32-byte sectors (``_ACROSS_BYTES``: M = 16 or 32 in 16 bits).
    sectors = not across or _whole_sectors(m, _RATES[16][1].in_bytes)
    # The A tile is multicast with A M-major or in rows of no whole 128-byte lines; N's
    # 64-row tiles decide the fill and the tile rows.
    lines = across or _whole_lines(k)
    row_tiles = _row_tiles(n, batch)
    if width is not None and width <= SMALL_M:
        return _swapped_small_m(width, n, k, batch, num_sms, max_splits, sectors,
                                across or not lines)
    if width == _SWAP_ONE_ROW:
        if m == _SWAP_ONE_ROW:
            return None
        tiles = -(-n // _SWAP_ONE_ROW) * batch
        odd = _odd_width(math, m, majors[0])
        if not num_sms < 2 * tiles <= 2 * num_sms:
            return _swapped_odd_row(odd, n, k, batch, num_sms)
        return Config(tile_m=_SWAP_ONE_ROW, tile_n=odd or width, raster_group=8,
                      epi_n=epilogue_width(odd or width), cluster_m=2, pdl=_PDL,
                      swap=True), 1, False
    # M of 33-63 (64: no padded rows)
    narrow = width == _SWAP_NARROW and m < _SWAP_NARROW
    if width not in _SWAP_WIDTHS and not narrow:
        return None
    if across and m > _SWAP_ACROSS_M:
        return None
    if row_tiles < _SWAP_FILL * num_sms:
        return None
    # An M-major A in rows of no whole 32-byte sectors takes 128-row tiles (not on 64-wide ones).
    config = _swapped_tile(width, row_tiles, num_sms, sectors or narrow,
                           across or narrow or not lines)
    tile_m = config.tile_m
    tiles = -(-n // tile_m) * batch
    if (streamk and max_splits > 1 and not narrow and tiles < _SWAP_STREAMK_FILL * num_sms
            and -(-k // config.tile_k) >= _SWAP_STREAMK_K_TILES):
        streamk = replace(config, cluster_m=2, streamk=True, pdl=False)
        if streamk_fits(streamk, m, n, k, batch):
            return streamk, 1, False
    if (streamk and max_splits > 1 and not narrow and not lines and tile_m == 64
            and -(-k // config.tile_k) >= _SWAP_LONG_K_TILES):
        streamk = replace(config, tile_m=128, streamk=True, pdl=False)
        if streamk_fits(streamk, m, n, k, batch):
            return streamk, 1, False
    fine = _fine_width(math, m, majors[0])
    if fine is not None:
        config = replace(config, tile_n=fine, epi_n=epilogue_width(fine))
    return config, 1, False


#: Small-M 16-bit products (M <= ``SMALL_M``, N >= 4 M) whose N's 64-row tiles (over
#: ``_SWAP_FILL_K_TILES`` or more, the tiles as they would run: 64 or 128 rows,
#: ``_swapped_tile``; times the batch) fill at least this fraction of the SMs run swapped on
#: the narrow tiles
#: (``_swapped_small_m``), not transposed through the workspace: C^T = B^T A^T in the kernel,
#: all of M in one 16- or 32-wide tile, C stored through its transpose, so neither the fp32
#: workspace nor the reduction launch.  H200, 2026-12-04, L2-cold rotated inputs, us, the
#: transposed pick / this rule's tile (cuBLAS), fp16 unless marked: nn 1x8192x8192 35.1 / 32.5
#: (38.3), 5x8192x8192 35.1 / 32.9 (38.6), 16x8192x8192 36.0 / 33.1 (39.5), 24x8192x8192 36.6
#: / 33.2 (34.4), 32x8192x8192 37.4 / 33.2 (34.7), 32x4096x4096 15.2 / 11.7 (13.8),
#: 16x4096x4096 13.4 / 11.4 (13.9), 32x3072x4096 16.1 / 10.5 (12.3), bf16 9x12000x4000 30.5 /
#: 27.6 (28.7), bf16 28x11008x4096 32.4 / 29.8 (26.7), bf16 31x7000x9000 46.7 / 38.3 (36.0),
#: 32x14336x4096 (untransposed 64 x 128) 34.8 / 32.5 (31.5), bf16 20x16384x16384 136.2 /
#: 124.2 (123.1); nt 32x8192x8192 38.9 / 34.8 (35.6), 16x6000x3000 16.6 / 12.8 (13.8), bf16
#: 28x9000x5000 39.7 / 27.9 (32.7); A M-major: tn 16x8192x8192 37.9 / 33.7 (37.9), 8x8192x8192
#: 38.1 / 37.3 (41.3), 8x12472x7256 60.2 / 57.3 (53.4), 32x8192x8192 (64-wide swapped) 36.1 /
#: 33.5 (34.9), bf16 tt 32x10336x10664 64.8 / 61.2 (65.2).  Below the fill the split
#: transposed route won: 24x2560x8192 (40 row tiles) 16.4 / 17.8, 16x2048x8192 (32) 13.4 /
#: 16.9, 32x1536x8192 (24) 12.7 / 16.6, 16x1024x16384 (16) 13.5 / 29.7.  An M-major A of 17-31
#: rows (rows of no whole 32-byte sectors) takes them too, on 128-row tiles or, where those
#: are few, 64-row ones (``_SWAP_NARROW_ROWS``, with the timings against the 64-wide swapped
#: tiles of M 33-63).  Those M kept the 64-wide tiles from session 36 to 38 on a bf16 timing
#: (tn 24x8192x8192 38.9 here against 37.4) whose narrow kernels had every wgmma serialized by
#: ptxas (fixed in session 37, ``kernels/sm90_hgemm.fence_accumulators``); the tuner still
#: times the 64-wide tiles there (``candidates``).  Until the 59th session the fill was counted
#: in 64-row tiles even where the tile is 128 rows (16 wide over an M-major A of no whole
#: sectors): held out on an H100 (seed 20261211), tn and tt M 2-5 with N 3100-3450 ran unsplit
#: on 25-27 CTAs at 1.3-1.4 TB/s, 0.86-0.89x cuBLAS (tn 2x3096x10104 46.2 us against 41.3),
#: where the transposed split route moved 1.9-2.1 TB/s (tn 2x2712x13960 1.10x).
_SWAP_SMALL_FILL = 0.35
#: The fewest K-tiles over which the fill is counted in the swapped tiles as they run (128 rows
#: where ``_swapped_tile`` takes them), not in N's 64-row tiles: the split then pays for its
#: reduction.  H100, 2026-12-06, L2-cold, two runs alternating (``tools/ab_compare.py``), us,
#: swapped / split (cuBLAS).  First, 40 tn/tt products of M 2-14 and N 2984-5584 that the
#: 128-row count moves to the transposed split route (seeds 1000-1099): with K of 7088-15648
#: (26) the split ran 1.27x faster (geometric mean; fp16 tn 2x4192x15648 73.7 / 52.4 (66.6),
#: bf16 tn 4x3048x7728 43.0 / 24.8 (35.6); least bf16 tn 13x5584x10352 44.8 / 48.4 (104.2));
#: with K of 2176-5928 (14) it lost on 9 (fp16 tn 13x4288x2176 11.6 / 15.0, bf16 tn
#: 3x4688x5928 25.1 / 27.4).  Then, set at 96 K-tiles, held out on the 30 such products of
#: seeds 1100-1199 (K 6088-15088): K of 7104 and more (23) 1.21x faster (one product left out:
#: fp16 tn 12x3392x10840, one round 6x slower than the other, unexplained); K of 6088-6960 (7)
#: 0.96x (bf16 tn 6x4392x6552 31.4 / 43.8, 12x5768x6200 30.1 / 36.4): hence 110 (K > 6976).
_SWAP_FILL_K_TILES = 110
#: An M-major A of 17-31 rows (rows of no whole 32-byte sectors) on the 32-wide swapped tile:
#: 128 rows (``_swapped_tile``) where N's 128-row tiles fill ``_SWAP_SMALL_FILL`` of the SMs,
#: else 64, in 2x1 clusters either way.  H200, 2026-12-04, L2-cold rotated inputs, tn, us,
#: 128 / 64 rows (cuBLAS): N = 4096 (32 tiles of 128 rows): bf16 24x4096x14336 43.6 / 39.7
#: (33.3), bf16 24x4096x4096 14.1 / 12.2 (12.9), 24x4096x8192 23.9 / 23.4 (23.4), bf16 23.8 /
#: 23.3 (23.5), 24x4096x4096 11.8 / 11.8 (13.1); N of 6144 and 8192 (48 and 64 tiles): bf16
#: 24x6144x8192 28.6 / 30.2 (31.8), 24x8192x8192 35.3 / 37.5 (38.6), bf16 35.5 / 37.3 (38.3).
#: The 16-wide tile (M of 16 or less) keeps 128 rows: tn 8x4096x4096 bf16 11.7 / 13.5 (15.2),
#: 8x8192x8192 36.0 / 42.9 (43.6), fp16 36.4 / 42.9 (42.7).  Then 9 products drawn after the
#: rule was set (M 20-30, N 3072-7168), the rule's pick against the other row count: faster
#: on all 9 (e.g. bf16 24x5000x7000 26.6 / 32.5, 28x5120x4096 12.9 / 13.6, 24x7168x4096 17.8 /
#: 19.3); against the 64-wide swapped tiles of M 33-63 (the previous rule) faster on 7, within
#: 0.5% on 2 (docs/performance.md, thirty-eighth session).
_SWAP_NARROW_ROWS = NARROW_M


def _swapped_small_m(width: int, n: int, k: int, batch: int, num_sms: int, max_splits: int,
                     sectors: bool, clustered: bool) -> tuple[Config, int, bool] | None:
    """The swapped narrow schedule of a small-M 16-bit product (``_SWAP_SMALL_FILL``), or None
    where the transposed split route should run (few of N's 64-row tiles, or over a long K few
    of the tiles it would run: ``_SWAP_FILL_K_TILES``; and a workspace to split into; a route
    without one always takes it).  ``width``: 16 or 32, all of M.  The tile rows and clusters
    of the wider swapped tiles (``_swapped_tile``), but 64 rows on a 32-wide tile whose 128-row
    tiles would be few (``_SWAP_NARROW_ROWS``); unsplit, never stream-K."""
    row_tiles = _row_tiles(n, batch)
    # A 32-wide tile of an M-major A in rows of no whole sectors keeps 64 rows where 128-row
    # tiles would fill less than the same fraction of the SMs (``_SWAP_NARROW_ROWS``).
    few = (width > _SWAP_NARROW_ROWS
           and _row_tiles(n, batch, 128) < _SWAP_SMALL_FILL * num_sms)
    config = _swapped_tile(width, row_tiles, num_sms, sectors or few, clustered)
    # Over a long K the fill is counted in the tiles that run: 128-row ones (a 16-wide tile over
    # an M-major A of no whole sectors) fill half the CTAs of 64-row ones.
    long_k = -(-k // config.tile_k) >= _SWAP_FILL_K_TILES
    running = _row_tiles(n, batch, config.tile_m) if long_k else row_tiles
    if max_splits > 1 and running < _SWAP_SMALL_FILL * num_sms:
        return None
    return config, 1, False


#: A small M's swapped narrow tiles (16 or 32 wide) of 64 rows take a ring of this many stages
#: where N's 64-row tiles (times the batch) fill at most ``_NARROW_RING_FILL`` of the SMs: each
#: of those few CTAs must keep more bytes in flight to draw the bandwidth (8 stages of a 64 x
#: 32 tile moved about 50 GB/s per CTA: 64 CTAs, 3.1 TB/s).  H200, 2026-12-04, L2-cold rotated
#: inputs, us, 8 / 12 stages (cuBLAS): bf16 tn 24x4096x14336 39.7 / 36.1 (33.8), bf16 tn
#: 16x3408x14800 35.4 / 30.8 (33.5), nn 32x4096x4096 11.7 / 10.4 (13.8), nn 2x2824x14600 32.3 /
#: 30.0 (27.9), tn 8x3536x9152 26.4 / 25.1 (23.0), bf16 nn 26x3632x3872 11.0 / 10.4 (13.5),
#: bf16 nt 32x3304x2408 8.1 / 7.5 (8.5), nt 10x3656x5000 14.7 / 13.0 (15.2); within 1.5% on
#: five more, slower on none.  16 stages or more were slower than 12.  Above the fill it was
#: mixed (bf16 nt 7x4368x9616 27.0 / 23.2, but nn 10x5720x8280 28.4 / 30.8, bf16 nn
#: 25x6120x12800 49.6 / 53.9; 13 products, geometric mean 1.01x), and the 128-row tiles (9 or
#: 11 stages fit) were 0-4% slower on 11 products: those keep ``_RING_STAGES``.
_NARROW_RING_STAGES = 12
_NARROW_RING_FILL = 0.5


def _ring_deepens(tile_m: int, width: int) -> bool:
    """Whether a swapped tile may take ``_NARROW_RING_STAGES``: 64 rows, at most ``SMALL_M``
    wide (the pick where its tiles are few, the tuner at any fill)."""
    return tile_m == 64 and width <= SMALL_M


def _swapped_tile(width: int, row_tiles: int, num_sms: int, sectors: bool,
                  clustered: bool) -> Config:
    """A data-parallel swapped tile ``width`` wide: 64 rows where N's 64-row tiles
    (``row_tiles``) fit one wave and ``sectors`` (an M-major A's rows are whole 32-byte
    sectors, or the tile's rows need not be), else 128; in 2x1 clusters (the A tile
    multicast) where ``clustered``; a deeper ring for few narrow ones
    (``_NARROW_RING_STAGES``)."""
    tile_m = 64 if row_tiles <= num_sms and sectors else 128
    deep = _ring_deepens(tile_m, width) and row_tiles <= _NARROW_RING_FILL * num_sms
    return Config(tile_m=tile_m, tile_n=width, raster_group=8, epi_n=epilogue_width(width),
                  cluster_m=2 if clustered else 1, pdl=_PDL, swap=True,
                  stages=_NARROW_RING_STAGES if deep else 0)


def _whole_lines(k: int) -> bool:
    """Whether a K-major 16-bit operand's rows of ``k`` elements are whole 128-byte lines
    (``_LINE_BYTES``)."""
    return k * _RATES[16][1].in_bytes % _LINE_BYTES == 0


#: M of 65-96 with A K-major where N's 64-row tiles (times the batch) fit one wave and fill at
#: least ``_SWAP_FILL`` of the SMs runs swapped on 64-row tiles 80 or 96 wide (``_odd_width``),
#: in 2x1 clusters where A's rows are no whole 128-byte lines (``_LINE_BYTES``), else
#: unclustered.  Untransposed it was two 64-row tile rows, the second mostly padding, each
#: reading all of B.  H200, fp16 nn unless marked, L2-cold rotated inputs, us, the
#: untransposed pick / this rule (cuBLAS).  2026-12-04, first draw: 69x8024x7704 51.7 / 38.9
#: (39.1), 72x5120x5120 21.1 / 19.6 (16.9; 2x1 18.2), 100x6144x6144 24.3 / 24.4 (23.2).  Then
#: 13 products drawn after the rule was set (M 65-112, N 3808-8448, K 2048-16384): 76x4128x6136
#: 24.4 / 19.3 (21.9), 88x4384x7792 29.5 / 25.9 (27.9), 76x7768x14408 91.3 / 70.2 (70.0), bf16
#: 66x8008x15008 93.2 / 72.4 (72.4), 65x5976x13104 71.2 / 58.8 (48.8), 96x8192x8192 39.7 / 35.3
#: (37.2), 80x8192x8192 42.4 / 34.4 (36.1), 94x5672x15040 63.3 / 62.9 (53.9), but bf16
#: 88x6280x13112 60.8 / 63.2 (54.7) and 96x3944x8944 31.1 / 36.9 (30.1); geometric mean of the
#: gain 1.077x over the 13.  On the 112-wide tile it lost to the untransposed 2x2 pick twice
#: (111x5632x4264 17.6 / 21.3, 101x6088x4576 21.5 / 23.3) and gained once (bf16 112x4096x4096
#: 13.8 / 13.2), so M of 97-112 stays untransposed (over the 10 products left, 1.127x).
#: 128-row swapped tiles lost in this range (69x8024x7704 42.5), as 64 x 128 swapped did at M
#: = 113-127 (120x8192x8192 37.2 against 35.3) and with A M-major (tn 80x4096x4096 16.3
#: against 14.3).
_SWAP_ODD_ROWS = 64
_SWAP_ODD_WIDTHS = (80, 96)


def _swapped_odd_row(width: int | None, n: int, k: int, batch: int,
                     num_sms: int) -> tuple[Config, int, bool] | None:
    """``_SWAP_ODD_ROWS``'s schedule, or None (no width of ``_SWAP_ODD_WIDTHS``, or N's 64-row
    tiles outside [``_SWAP_FILL``, 1] waves)."""
    row_tiles = -(-n // _SWAP_ODD_ROWS) * batch
    if width not in _SWAP_ODD_WIDTHS or not _SWAP_FILL * num_sms <= row_tiles <= num_sms:
        return None
    return Config(tile_m=_SWAP_ODD_ROWS, tile_n=width, raster_group=8,
                  epi_n=epilogue_width(width), cluster_m=1 if _whole_lines(k) else 2, pdl=_PDL,
                  swap=True), 1, False


#: Math types with a stream-K schedule (3xTF32 keeps split-K, which bounds its promoted sums).
#: Stream-K is a candidate of the autotuner, and the wave model's pick only for swapped skinny
#: products (``_SWAP_STREAMK_FILL``), never from the model's estimates: forced on an H200
#: (2026-12-01, fp16 nn, us, best stream-K tile against the data-parallel pick) it won only
#: where the pick's last wave is about half full and every CTA has tens of microseconds of
#: work (2560^3: 53.4 against 56.5; TF32 2560^3: 127.2 against 132.6) and lost elsewhere
#: (1536^3 17.8 against 15.5, 2000^3 31.5 against 25.5, 3072^3 88.6 against 79.7, 1000^3 12.4
#: against 8.6): its fixed costs (the flags' memset, ~1 us, and each partial tile's round trip
#: through L2 on the critical path) exceed the partial wave it saves on small products, and
#: CTAs that walk contiguous runs of tiles share less of A and B in L2 on large ones.
_STREAMK_MATH = ("float16", "bfloat16", "tf32")
#: The data-parallel waves (tiles / CTAs) between which the tuner also times stream-K.
_STREAMK_WAVES = (1.1, 3.0)


def _streamk_candidate(m: int, n: int, space: "_Space", batch: int, num_sms: int, math: str):
    """The stream-K schedule the tuner times beside the others, or None: for products whose
    best tiles leave a partial last wave (``_STREAMK_WAVES``), the tile of least estimated
    stream-K time.  The kernel counts iterations (tiles x K-tiles) in 32 bits."""
    if math not in _STREAMK_MATH or space.workspace:
        return None
    found = []
    for order, (tile, (efficiency, rate)) in enumerate(space.tiles.items()):
        if tile in _WIDE_EFFICIENCY or tile[2:] or tile[1] < 64 or tile[1] in _ODD_N:
            continue  # stream-K: cooperative power-of-two tiles at least 64 wide, as clustered
        tiles, slots = -(-m // tile[0]) * -(-n // tile[1]) * batch, num_sms * rate.slots
        if tiles % slots == 0 or not _STREAMK_WAVES[0] <= tiles / slots <= _STREAMK_WAVES[1]:
            continue
        config = _config(space, math, m, tile, 1, streamk=True)
        if streamk_fits(config, m, n, space.k, batch):
            found.append((waves.estimate_streamk(m, n, space.k, batch, num_sms, *tile,
                                                 space.tile_k, efficiency, rate), order, config))
    return (min(found)[2], 1, False) if found else None


def candidates(m: int, n: int, k: int, batch: int, num_sms: int,
               max_splits: int = waves.MAX_SPLITS, math: str = "float16",
               limit: int = 8, swapped: bool = False, majors: tuple[str, str] = ("k", "n"),
               c_aligned: bool = True) -> list[tuple[Config, int, bool]]:
    """What the autotuner times (``cutematmul.tune``): the ``limit`` schedules the wave model
    ranks best, each 16-bit clustered one but the wide tiles also unclustered, a stream-K
    schedule where the tiles leave a partial wave (``_streamk_candidate``), and the pick in 2x2
    clusters where they are whole (``_quad_shape``) but span several waves; for a skinny
    product that runs swapped (``_swapped_skinny``), its 64- and 128-row tiles in 1x1 and 2x1
    clusters (64-row narrow ones with either ring, ``_NARROW_RING_STAGES``) and stream-K as
    well, the tall 256-row tiles where the pick is unsplit (``_tall_options``), and for a 16-bit M
    of 17-32 the swapped 64-wide tiles of
    M 33-63 (a small M swapped on 16- or 32-wide tiles, ``_swapped_small_m``, comes with the
    skinny swapped tiles); ``choose_schedule``'s pick first; ``swapped``, ``majors``
    and ``c_aligned`` as there.
    Every one computes the same product (the 3xTF32 split floor for accuracy included)."""
    found = [choose_schedule(m, n, k, batch, num_sms, max_splits, math, swapped, majors,
                             c_aligned)]
    skinny = _swapped_skinny(m, n, k, batch, num_sms, max_splits, math, majors, c_aligned)
    if skinny is not None:
        # A ``_FINE_N`` width's product also on the ``_SWAP_WIDTHS`` width it replaces, and
        # an M of 17-32 on a narrow tile also on the 64-wide tiles of M 33-63.
        widths = [skinny[0].tile_n] + ([next(w for w in _TILE_N if w >= m)]
                                       if skinny[0].tile_n in _FINE_N else [])
        if skinny[0].tile_n <= SMALL_M and m > NARROW_M:
            widths.append(_SWAP_NARROW)
        found += [(c, 1, False) for c in _swapped_variants(skinny[0], widths, m, n, k, batch,
                                                           max_splits)
                  if (c, 1, False) not in found]
    elif math in _CLUSTERED_MATH and c_aligned and m <= SMALL_M and n >= 4 * m:
        # A small M over a short N (picked transposed through the workspace: ``transposes``)
        # also on the swapped tiles, which need no workspace and no reduction; timed by the
        # tuner only: the narrow ones all of M wide (``_swapped_small_m``; below its fill the
        # transposed split route won each product measured), and for M of 17-32 the 64-wide
        # tiles of M 33-63 (``_SWAP_NARROW``).  Those measured against the pick (H200,
        # 2026-12-04, L2-cold, us): faster on nn 32x4096x4096 14.2 / 15.1, bf16 nn
        # 20x6144x6144 22.9 / 25.7, 28x12176x15680 109.8 / 118.5, slower on nn 32x8192x8192
        # 38.3 / 37.5 and nn 24x8192x8192 40.0 / 36.7: no rule (docs/performance.md).
        widths = [next(w for w in _TILE_N if w >= m)] + ([_SWAP_NARROW] if m > NARROW_M else [])
        base = Config(tile_m=64, tile_n=widths[0], raster_group=8, swap=True)
        found += [(c, 1, False) for c in _swapped_variants(base, widths, m, n, k, batch,
                                                           max_splits)
                  if (c, 1, False) not in found]
    m, n, space = _oriented_space(m, n, k, batch, num_sms, max_splits, math, swapped, majors,
                                  c_aligned)
    rows, cols = (n, m) if space.transposed else (m, n)
    scored = waves.ranked(rows, cols, space.k, batch, num_sms, space.tile_k, space.tiles,
                          max_splits, workspace=space.workspace, min_splits=space.fewest)
    for _, splits, _, tile in scored[:limit]:
        config = _config(space, math, m, tile, splits)
        choices = [(config, splits, space.transposed)]
        if tile not in _WIDE_EFFICIENCY:  # the wide tiles are built and tested clustered
            choices.append((replace(config, cluster_m=1), splits, space.transposed))
        for choice in choices:
            if choice not in found:
                found.append(choice)
    if skinny is None and not (space.transposed or space.workspace or space.swapped):
        # The swapped wide tiles (``_swapped_wide``), timed whether or not the model's pick.
        tile, splits, picked = _model_pick(m, n, batch, num_sms, max_splits, math, space)
        for config in (*_swapped_wide_options(m, n, batch, num_sms, math, majors, c_aligned,
                                              space, tile, splits, picked),
                       *_tall_options(m, math, c_aligned, splits)):
            if (config, 1, False) not in found:
                found.append((config, 1, False))
    streamk = _streamk_candidate(m, n, space, batch, num_sms, math) if max_splits > 1 else None
    if streamk is not None:
        found.append(streamk)
    # The pick in 2x2 clusters over several waves as well (``_QUAD`` takes them within one
    # wave): H200, 2026-12-03, fp16 nn, us, 2x1 / 2x2 on a grid of resident clusters (cuBLAS):
    # 4096x14336x4096 696.4 / 670.6 (678.0), but 4104^3 229.6 / 253.3 (199.6).
    config, splits, transposed = found[0]
    quad = _quad_shape(config, n) if splits == 1 and not transposed else None
    if quad is not None and (quad, 1, False) not in found:
        found.append((quad, 1, False))
    return found


def _swapped_variants(base: Config, widths: list[int], m: int, n: int, k: int, batch: int,
                      max_splits: int) -> list[Config]:
    """The swapped tiles the tuner times beside a pick: ``base`` in each of ``widths`` by 64
    and 128 rows, data-parallel in 1x1 and 2x1 clusters (64-row narrow ones with either ring,
    ``_NARROW_RING_STAGES``: mixed above its own fill), and stream-K in 2x1 clusters where the
    kernel has it (at least 64 wide, no ``_ODD_N`` or ``_FINE_N`` width; a workspace)."""
    found = []
    for width, tile_m in itertools.product(widths, (64, 128)):
        plain = replace(base, tile_m=tile_m, tile_n=width, epi_n=epilogue_width(width),
                        streamk=False, pdl=_PDL, stages=0)
        choices = [replace(plain, cluster_m=cluster) for cluster in (1, 2)]
        if _ring_deepens(tile_m, width):
            choices += [replace(c, stages=_NARROW_RING_STAGES) for c in choices]
        streamk = replace(plain, cluster_m=2, streamk=True, pdl=False)
        if (max_splits > 1 and width >= 64 and width not in _ODD_N + _FINE_N
                and streamk_fits(streamk, m, n, k, batch)):
            choices.append(streamk)
        found += choices
    return found


class _Space(NamedTuple):
    """What ``choose_schedule`` searches: tiles (``waves`` form), K as the kernel walks it, the
    K-tile, the fewest splits, the configuration fields every candidate shares, orientation
    (computed transposed through the workspace, or swapped by the kernel: ``Config.swap``),
    and whether every candidate writes fp32 partials (split or not: the narrow tiles)."""

    tiles: dict
    k: int
    tile_k: int
    fewest: int
    extra: dict
    transposed: bool
    workspace: bool
    swapped: bool = False


def transposes(m: int, n: int, batch: int, num_sms: int, max_splits: int) -> bool:
    """Whether a product is computed transposed (C^T = B^T A^T, through the fp32 workspace):
    M at most ``SMALL_M`` and N at least 4 M, but above ``NARROW_M`` only while the untransposed
    64 x 128 tiles of its one tile row would leave more than ``_UNTRANSPOSED_FILL`` of the SMs
    idle.  Never without the workspace (``max_splits`` 1)."""
    if max_splits <= 1 or m > SMALL_M or n < 4 * m:
        return False
    return m <= NARROW_M or -(-n // 128) * batch < _UNTRANSPOSED_FILL * num_sms


def narrow_n(m: int, n: int, max_splits: int, math: str, c_aligned: bool = True,
             swapped: bool = False) -> bool:
    """Whether a product runs on the narrow tiles untransposed: 16-bit or one-pass TF32
    (``_NARROW_N_MATH``), N at most ``SMALL_M`` and M at least 4 N, where the kernel may write
    C (``c_aligned``: rows of whole 16-byte vectors) or the workspace may (``max_splits`` > 1).
    Not ``swapped`` (``swaps``): a swapped kernel's narrow tiles write fp32 partials of a
    transposed product only."""
    return (math in _NARROW_N_MATH and not swapped and n <= SMALL_M and m >= 4 * n
            and (c_aligned or max_splits > 1))


def _oriented_space(m: int, n: int, k: int, batch: int, num_sms: int, max_splits: int,
                    math: str, swapped: bool, majors: tuple[str, str],
                    c_aligned: bool = True) -> tuple[int, int, _Space]:
    """(M, N, space) as the kernel covers the product: with ``swapped`` (``swaps``) and unless
    the product is computed transposed (small M), (N, M) and its space, never transposed."""
    space = _space(m, n, k, batch, num_sms, max_splits, math, majors, c_aligned=c_aligned)
    if swapped and not space.transposed:
        return n, m, _space(n, m, k, batch, num_sms, max_splits, math,
                            transposed_majors(*majors), transposable=False,
                            c_aligned=c_aligned, swapped=True)._replace(swapped=True)
    return m, n, space


def _space(m: int, n: int, k: int, batch: int, num_sms: int, max_splits: int,
           math: str, majors: tuple[str, str], transposable: bool = True,
           c_aligned: bool = True, swapped: bool = False) -> _Space:
    tf32 = math in TF32
    tile_k, rate = _RATES[32 if tf32 else 16]
    if math == "tf32":
        rate = rate._replace(l2_bandwidth=_TF32_L2_BANDWIDTH)
    walked = gemm_k(k, math)
    # 3xTF32 keeps a second accumulator in registers (the kernel's promotion): at most 192 wide;
    # its promoted sums run in sequence over a split's K-tiles, so long K is split for accuracy.
    efficiency, fewest = _TILE_EFFICIENCY, 1
    if math == "tf32":
        square, factor = _TF32_SQUARE
        efficiency = {**efficiency, square: efficiency[square] * factor}
    if math == "tf32x3":
        efficiency = _PROMOTED_EFFICIENCY
        fewest = -(-promoted_sums(k) // _PROMOTED_CHAIN) if max_splits > 1 else 1
    extra = tf32_fields(math)
    # Not where the kernel would swap the transposed product back (one-pass TF32 with A
    # M-major and B K-major: C^T's majors are (k, n), ``swaps``), which gains nothing.
    if (transposable and transposes(m, n, batch, num_sms, max_splits)
            and not swaps(math, *transposed_majors(*majors))):
        # A stored M-major: rows of M elements (``_ACROSS_ROWS``).
        across = majors[0] == "m" and not _whole_sectors(m, rate.in_bytes)
        tiles = _narrow_tiles(efficiency, rate, m, across)
        return _Space(tiles, walked, tile_k, fewest, extra, True, True)
    if narrow_n(m, n, max_splits, math, c_aligned, swapped):
        tiles = _narrow_tiles(efficiency, rate, n, majors[1] == "n")
        if c_aligned:  # unsplit 128-row tiles store C in 2x1 clusters (``_NARROW_N_MATH``)
            tiles = {tile: (eff, streaming._replace(unsplit_saturation=rate.saturation)
                            if tile[0] == 128 else streaming)
                     for tile, (eff, streaming) in tiles.items()}
        return _Space(tiles, walked, tile_k, fewest, extra, False, not c_aligned)
    tiles, unclustered = {}, {}
    in_clusters = rate._replace(cluster_rows=2)
    alone = {**_UNCLUSTERED_EFFICIENCY, **(_UNCLUSTERED_SINGLE_EFFICIENCY if batch == 1 else {})}
    for tile, eff in efficiency.items():
        if _cluster_m(math, tile, m, 1, swapped) < 2:
            tiles[tile] = (eff * _TF32_UNCLUSTERED if math == "tf32" else eff, rate)
        elif math == "tf32":  # its split schedules run unclustered (``_cluster_m``)
            tiles[tile] = (eff, in_clusters._replace(max_splits=1))
            unclustered[(*tile, _UNCLUSTERED)] = (eff * _TF32_UNCLUSTERED, rate)
        else:
            tiles[tile] = (_CLUSTERED_EFFICIENCY[tile], in_clusters)
            if -(-m // tile[0]) % 2:  # an odd count of tile rows: also offered unclustered
                unclustered[(*tile, _UNCLUSTERED)] = (alone.get(tile, eff),
                                                      rate._replace(max_splits=1))
    if math in _CLUSTERED_MATH and _cluster_m(math, (128, 256), m, 1) > 1:
        tiles.update((tile, (eff, in_clusters._replace(
            unsplit_efficiency=_WIDE_UNSPLIT_EFFICIENCY.get(tile, 0.0))))
                     for tile, eff in _WIDE_EFFICIENCY.items()
                     if majors != _ACROSS_BOTH or not _across_slow(tile, m))
    odd = _odd_width(math, n, majors[1])
    if odd is not None:
        # Priced as the 128-wide tiles of as many rows: the narrower tile costs less math for
        # the same bytes, and on a tie the least padding decides.
        tiles.update(((rows, odd), tiles[(rows, 128)]) for rows in (128, 64))
    one_row = _ONE_ROW_TILE[0][0]
    if math in _CLUSTERED_MATH and (ONE_ROW_M < m <= one_row or n <= one_row):
        # Priced unclustered: its split schedules run so, and unsplit over N <= 64 an odd count
        # of tile rows leaves one CTA idle in one tile column only.
        tiles[_ONE_ROW_TILE[0]] = (_ONE_ROW_TILE[1], rate._replace(saturation=_ONE_ROW_SATURATION))
    if math == "tf32" and swapped and n <= one_row:  # M <= 64, along the tile's N here
        tiles[_ONE_ROW_TILE[0]] = (_TF32_ONE_ROW_EFFICIENCY,
                                   rate._replace(saturation=_ONE_ROW_SATURATION))
    if math in _CLUSTERED_MATH and walked <= _PINGPONG_MAX_K:
        pingpong = in_clusters if _cluster_m(math, _PINGPONG_TILE[0][:2], m, 1) > 1 else rate
        tiles[_PINGPONG_TILE[0]] = (_PINGPONG_TILE[1], pingpong._replace(
            slots=2, wave_seconds=_PINGPONG_WAVE_SECONDS, max_splits=1))
    tiles.update(unclustered)  # last: a tie goes to the clustered tile
    # The cooperative 128 x 128 tile's price (not pingpong's): tn's, else the other layouts'
    # where M spans two tile rows.
    square_price = (_ACROSS_SQUARE if majors == _ACROSS_BOTH
                    else _SQUARE_IN_CLUSTERS if math in _CLUSTERED_MATH
                    and m > _SQUARE_IN_CLUSTERS[0][0] else None)
    if square_price is not None:
        square, factor = square_price
        tiles = {tile: (eff * factor if tile[:2] == square and not _is_pingpong(tile) else eff,
                        tile_rate) for tile, (eff, tile_rate) in tiles.items()}
    return _Space(tiles, walked, tile_k, fewest, extra, False, False)


def _narrow_tiles(efficiency: dict, rate: waves.Rate, short: int, across: bool) -> dict:
    """The tiles of a transposed small-M or untransposed small-N product (``waves`` form): those
    whose narrow side spans all of the short side (a narrower one would read the long operand
    once per column of tiles) and is at most twice the narrowest such width (wider ones only
    compute padding: the 64 x 128 tile took 21-67 us where a 16-wide one took 13-36, see
    ``_NARROW_N_MATH``), the narrowest first, so on a tie the least padding decides; at the
    streaming rate (``_TRANSPOSED_SATURATION``).  ``across``: the short operand is stored along
    its short side (A M-major, B N-major), rows of a few dozen bytes; then the 64-row narrow
    tiles are left out (``_ACROSS_ROWS``)."""
    every = {tile: eff for tile, eff in {**efficiency, **_NARROW_EFFICIENCY}.items()
             if tile[1] >= short and not (across and tile[0] < _ACROSS_ROWS and tile[1] < 64)}
    narrowest = min(tile[1] for tile in every)
    every = {tile: eff for tile, eff in every.items() if tile[1] <= 2 * narrowest}
    order = sorted(every, key=lambda t: (t[1], -t[0]))
    streaming = rate._replace(saturation=_TRANSPOSED_SATURATION)
    return {tile: (every[tile], streaming) for tile in order}


#: Why every schedule but stream-K is launched with programmatic dependent launch
#: (``Config.pdl``): H200, 2026-12-02, fp16 nn, 20 products back to back, us per product
#: without / with: 512^3 4.8 / 3.9, 768^3 5.7 / 4.8, 1000^3 8.6 / 7.5, 1024^3 6.8 / 6.1, 1536^3
#: 15.6 / 14.6, 2048^3 25.5 / 24.6, 128x8192x8192 37.0 / 35.6, 64x4096x4096 12.4 / 10.5, 16 x
#: 1024^3 batched 53.2 / 52.1; 4096^3 and 8192^3 within noise.  What it hides (the launch, the
#: barrier set-up, the descriptor prefetch) is a fixed ~1 us, the gap left at mid sizes.
#: Stream-K is not: the host zeroes its flags with a memset right before its launch.
_PDL = True


def _config(space: _Space, math: str, m: int, tile: tuple, splits: int,
            streamk: bool = False) -> Config:
    """The configuration of a ``waves`` tile key: (tile_m, tile_n), or with a third field the
    pingpong kernel's (``_PINGPONG_TILE``) or the tile unclustered (``_UNCLUSTERED``)."""
    (tm, tn), pingpong, alone = tile[:2], _is_pingpong(tile), tile[2:] == (_UNCLUSTERED,)
    tile = (tm, tn)
    pdl = _PDL and not streamk
    cluster_m = 1 if alone else _cluster_m(math, tile, m, splits, space.swapped)
    if space.workspace:
        return Config(tile_m=tm, tile_n=tn, raster_group=8, epi_n=epilogue_width(tn),
                      partials=True, cluster_m=1 if space.transposed else cluster_m,
                      pdl=pdl, swap=space.swapped, **space.extra)
    return Config(tile_m=tm, tile_n=tn, raster_group=8, epi_n=epilogue_width(tn),
                  partials=splits > 1, streamk=streamk, cluster_m=cluster_m, pdl=pdl,
                  pingpong=pingpong, swap=space.swapped, **space.extra)


#: Math types whose products run in 2x1 clusters whenever M spans two tiles or more.
_CLUSTERED_MATH = ("float16", "bfloat16")


def _cluster_m(math: str, tile: tuple[int, int], m: int, splits: int,
               swapped: bool = False) -> int:
    """2 when an (untransposed) product runs in 2x1 clusters, the B tile multicast to the CTAs
    of two adjacent tile rows, else 1.

    16-bit: whenever M spans two tiles or more (a product of one tile row would leave the
    second CTA of every cluster idle; with an odd count the last cluster's second CTA has no
    rows, its loads are zero-filled and its stores clipped by TMA), on tiles at least 128 wide,
    on the unsplit narrow tiles of small-N products (``_NARROW_N_MATH``), on the unsplit tiles
    80-112 wide (``_odd_width``) and on the unsplit
    64 x 64 tile (``_ONE_ROW_TILE``: N of at most 64 there); the narrow 128 x 64 tile was
    measured unclustered.  One-pass TF32: unsplit products of two tile rows or more on 128-row
    tiles, and on ``_TF32_CLUSTER_SHORT`` unless ``swapped`` (``_TF32_CLUSTER``).  3xTF32: never.
    """
    tile_m, tile_n = tile
    m_tiles = -(-m // tile_m)
    if math in _CLUSTERED_MATH:
        wide_enough = tile_n >= 128 or (splits == 1 and (tile_n < 64 or tile_n in _ODD_N
                                                          or tile == _ONE_ROW_TILE[0]))
        return 2 if m_tiles >= 2 and wide_enough else 1
    if math == "tf32" and splits == 1 and m_tiles >= 2 and (
            tile_m == 128 or (tile in _TF32_CLUSTER_SHORT and not swapped)):
        return _TF32_CLUSTER[0]
    return 1


#: Graphics processing clusters (GPCs) of a Hopper GPU.  A cluster's CTAs run on one GPC, and
#: a GPC's SMs come in pairs (TPCs): 2-CTA clusters fill every SM, while 4-CTA ones leave up to
#: 2 SMs of each GPC idle.  H200 (132 SMs), 2026-12-03, cuOccupancyMaxActiveClusters at one CTA
#: per SM: 132, 66, 30 and 15 clusters of 1, 2, 4 and 8 CTAs (this bound: 29 of 4).
_GPCS = 8


def resident_clusters(num_sms: int, size: int) -> int:
    """Clusters of ``size`` CTAs (one CTA per SM) that run at once on a Hopper GPU of
    ``num_sms`` SMs, at least: the persistent grid's size (``kernels/sm90_hgemm.py``).  A grid
    of more 4-CTA clusters than run at once leaves the last ones to start when the first
    finish: 3000^3 in 2x2 clusters took 147 us on 32 clusters, 100 on 30 (H200)."""
    if size <= 2:
        return num_sms // size
    return max(1, (num_sms - 2 * _GPCS) // size)


#: 16-bit products whose tiles fit one wave of 2x2 clusters run in them: each A tile is
#: multicast to the two CTAs of a cluster row, as each B tile is to the two of a column, so L2
#: serves half the bytes of A too.  H200, 2026-12-03, fp16, L2-cold rotated inputs, us, 2x1 /
#: 2x2 (cuBLAS): nn 1480x776x1960 17.4 / 15.0 (13.4), 928x744x1312 8.8 / 7.7 (7.3),
#: 1568x1448x3072 29.5 / 26.6 (27.6); tn alike.  Where the clusters do not fit one wave it lost,
#: even on a grid of only the clusters that run at once: 2632x752x1744 (33 clusters) 16.0 /
#: 21.5, 1000^3 (32) 7.8 / 10.5, 3000^3 84.0 / 99.9, 4104^3 229.6 / 253.3, 8192^3 1639 / 1718,
#: but 4096x14336x4096 696.4 / 670.6 (cuBLAS 678.0).  Then on a fresh draw of 36 products whose
#: 2x2 clusters fit one wave (M, N 256-3000, K 256-6000, six batched; rows of whole 128-byte
#: lines and not; nn, tn, nt): with an even count of tile columns 2x1 / 2x2 geometric mean
#: x cuBLAS 0.954x / 0.999x on whole lines (least gain 0.98), 0.956x / 1.048x on the others
#: (least 0.96; 2x648x968x2784 22.5 / 17.6 (17.4), 312x1944x1832 12.5 / 10.5 (10.2)); with an
#: odd count, where the last cluster column's second CTAs have no columns, it lost
#: (1224x280x1376, three columns: 7.8 / 10.2; 512x896x2176, seven: 8.2 / 9.0).  Out of sample
#: (16 products, M and N 200-3500, K 256-8192, four batched; rule set before they ran),
#: geometric mean x cuBLAS 2x1 / 2x2: nn 0.914x / 0.984x, tn 0.915x / 1.038x, nt 0.941x /
#: 1.026x (840x1728x1632 nn 13.8 / 11.7 us (12.0); least gain nn 296x712x2272 9.4 / 9.5).
_QUAD = (2, 2)


def _quad_shape(config: Config, n: int) -> Config | None:
    """``config`` in 2x2 clusters, or None where they are not built (``Config.quad_built``) or
    would idle CTAs: a tile in 2x1 clusters over an even count of tile columns."""
    if (config.cluster_m, config.cluster_n) != (2, 1) or not config.quad_built \
            or -(-n // config.tile_n) % 2:
        return None
    return replace(config, cluster_n=_QUAD[1])


def _quad(config: Config, m: int, n: int, batch: int, num_sms: int) -> Config:
    """``config`` in 2x2 clusters where they pay (``_QUAD``): ``_quad_shape``, and the 2x2
    clusters of the product (times the batch) no more than run at once
    (``resident_clusters``)."""
    quad = _quad_shape(config, n)
    if quad is None:
        return config
    rows, cols = -(-m // config.tile_m), -(-n // config.tile_n)
    if -(-rows // 2) * (cols // 2) * batch > resident_clusters(num_sms, 4):
        return config
    return quad


def choose_config(m: int, n: int, k: int, batch: int, num_sms: int, math: str = "float16",
                  swapped: bool = False, majors: tuple[str, str] = ("k", "n"),
                  c_aligned: bool = True) -> Config:
    """The configuration of an unsplit product (no workspace: a launch in pieces,
    ``dispatch.schedule`` with ``split_k`` False)."""
    return choose_schedule(m, n, k, batch, num_sms, max_splits=1, math=math, swapped=swapped,
                           majors=majors, c_aligned=c_aligned)[0]
