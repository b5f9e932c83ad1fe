"""The wave model and split-K planning, on a machine without a GPU.

``configs.waves`` ranks (tile, splits) candidates; ``dispatch.schedule`` turns the choice into a
kernel key and a split count; ``launch._resolve`` plans the split launch and its reduction.  No
kernel is compiled or run here (tests/test_gpu_splitk.py runs them).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cutematmul import cache, dispatch, launch
from cutematmul.configs import simt, sm80, sm90, waves
from cutematmul.plan import plan_gemm, transposed_majors
from helpers import LAYOUT_MAJORS

H200 = ((9, 0), 132)
SKINNY = [(1, 4096, 4096), (16, 8192, 8192), (16, 1024, 4096), (8, 2048, 16384)]
FULL = [(8192, 8192, 8192), (4096, 14336, 4096), (4097, 4095, 4093), (2048, 2048, 2048)]


@pytest.mark.parametrize("module", [sm90, simt], ids=["sm90", "simt"])
@pytest.mark.parametrize("shape", SKINNY, ids=lambda s: "x".join(map(str, s)))
def test_skinny_products_split_k(module, shape):
    m, n, k = shape
    config, splits, transposed = module.choose_schedule(m, n, k, 1, 132)
    assert splits > 1 or transposed or getattr(config, "swap", False), (shape, config)
    tile_k = getattr(config, "tile_k", 64)
    assert -(-k // tile_k) // splits >= 1, "a split without a K-tile"
    if module is sm90 and config.swap:  # a small M over N's tiles that fill the SMs
        assert splits == 1 and not config.partials and m <= config.tile_n <= 32, config
    elif module is sm90:
        assert config.partials, "a split sm90 product must write fp32 partials"
        assert transposed == (m <= sm90.SMALL_M), "small M is computed transposed"
        if transposed:
            assert config.tile_n <= 64, f"a transposed small-M product on a wide tile: {config}"


@pytest.mark.parametrize("math", ["float16", "tf32", "tf32x3"])
@pytest.mark.parametrize("m", [1, 9, 16, 17, 24, 31, 32])
@pytest.mark.parametrize("n, k", [(1000, 4100), (4096, 4096), (8192, 8192), (4096, 14336)])
def test_small_m_products_run_on_one_narrow_tile_column(math, m, n, k):
    """M <= 32 with an N that 64 x 128 tiles would leave mostly idle: C^T = B^T A^T on a tile
    whose narrow side spans all of M (a narrower one would read B once per tile column).
    16-bit products whose N's 64-row tiles fill ``_SWAP_SMALL_FILL`` of the SMs run it in the
    kernel (swapped, C stored through its transpose, unsplit: the XLA route too); the others
    through the workspace (transposed, which the XLA route never takes)."""
    config, splits, transposed = sm90.choose_schedule(m, n, k, 1, 132, math=math)
    assert m <= config.tile_n <= 32, f"M = {m} on a {config.tile_n}-wide tile"
    if math == "float16" and -(-n // 64) >= sm90._SWAP_SMALL_FILL * 132:
        assert config.swap and not transposed and splits == 1, (m, n, k, config)
        assert not config.partials and not config.streamk, config
        assert sm90.choose_schedule(m, n, k, 1, 132, max_splits=1, math=math) == \
            (config, 1, False)
        return
    assert transposed and config.partials and not config.swap, (m, n, k, config)
    assert sm90.choose_schedule(m, n, k, 1, 132, max_splits=1, math=math)[2] is False, \
        "the transposed path needs the workspace: never without splits (the XLA route)"


def test_small_m_above_16_stays_untransposed_where_its_tiles_fill_the_machine():
    """TF32, 17 <= M <= 32: transposed only while 64 x 128 tiles of the one tile row would
    leave a quarter of the SMs or more idle (112 tiles of N = 14336 do not); M <= 16 always.
    (16-bit products that fill the machine run swapped instead: ``_SWAP_SMALL_FILL``.)"""
    pick = lambda *shape: sm90.choose_schedule(*shape, 132, math="tf32")
    assert not pick(24, 14336, 4096, 1)[2]
    assert not pick(32, 4096, 4096, 8)[2], "a batch of 8 fills it"
    assert pick(16, 14336, 4096, 1)[2]
    assert pick(24, 8192, 8192, 1)[2]
    assert not pick(33, 4096, 4096, 1)[2]


def test_transposed_products_prefer_one_full_wave_of_narrow_tiles():
    """The transposed rate needs most SMs streaming: at N = 4096 the 64-row tile in 2 splits
    (128 CTAs), at N = 8192 unsplit (128 CTAs), at N = 14336 112 128-row tiles in one wave
    rather than 224 64-row ones in two (H200 measurements in ``configs/sm90.py``).  TF32: a
    16-bit product of these N runs swapped (``_SWAP_SMALL_FILL``)."""
    pick = lambda m, n, k: (lambda c, s, t: (c.tile_m, c.tile_n, s))(
        *sm90.choose_schedule(m, n, k, 1, 132, math="tf32"))
    assert pick(24, 4096, 4096) == (64, 32, 2)
    assert pick(24, 8192, 8192) == (64, 32, 1)
    assert pick(16, 14336, 4096) == (128, 16, 1)


@pytest.mark.parametrize("module", [sm90, simt], ids=["sm90", "simt"])
@pytest.mark.parametrize("shape", FULL, ids=lambda s: "x".join(map(str, s)))
def test_products_that_fill_the_machine_are_not_split(module, shape):
    config, splits, transposed = module.choose_schedule(*shape, 1, 132)
    assert splits == 1 and not transposed and not getattr(config, "partials", False), \
        (shape, config, splits)


@pytest.mark.parametrize("module", [sm90, simt, sm80], ids=["sm90", "simt", "sm80"])
def test_choose_config_is_the_unsplit_schedule(module):
    for m, n, k, batch in [(16, 8192, 8192, 1), (1000, 1000, 1000, 1), (64, 64, 64, 8)]:
        config = module.choose_config(m, n, k, batch, 132)
        assert not getattr(config, "partials", False)
        if hasattr(module, "choose_schedule"):
            assert module.choose_schedule(m, n, k, batch, 132, max_splits=1) == (config, 1, False)


def test_split_counts_respect_k_and_int32_limits():
    rate = waves.Rate(5e12, 1, 2, 2, min_k_tiles=4)
    assert list(waves.split_choices(16, 4096, 64 * 4 * 3, 1, 64, rate)) == [1, 2, 3]
    assert list(waves.split_choices(16, 4096, 100, 1, 64, rate)) == [1]
    huge = waves.split_choices(2**16, 2**15, 2**20, 1, 64, rate)  # m * n = 2**31: no split fits
    assert list(huge) == [1]


def test_the_model_prefers_a_full_wave_to_a_partial_one():
    rate = waves.Rate(5e12, 1, 2, 2, 4)
    full = waves.estimate(128 * 12, 128 * 11, 4096, 1, 132, 128, 128, 64, 1, 1.0, rate)
    partial = waves.estimate(128 * 12, 128 * 12, 4096, 1, 132, 128, 128, 64, 1, 1.0, rate)
    assert partial > 1.5 * full  # 144 tiles on 132 SMs take two waves


def test_a_partial_last_wave_costs_by_tail_scaling():
    """With tail_scaling 0 a partial last wave costs a full one; with s > 0 a wave leaving r of
    ``slots`` CTAs per SM costs (r / slots) ** s of it."""
    flat = waves.Rate(0.38e12, 4, 4, 4, 8)
    scaled = flat._replace(tail_scaling=0.65)

    def cost(rate, tiles):  # 64x128 tiles, 4 per SM: one wave is 528 of them
        return waves.estimate(64 * tiles, 128, 1024, 1, 132, 64, 128, 16, 1, 1.0, rate)

    one_wave = cost(flat, 528)
    assert cost(flat, 132) == cost(flat, 396) == one_wave == cost(scaled, 528)
    unit = one_wave - waves.WAVE_SECONDS
    for tiles, busiest in ((132, 1), (264, 2), (396, 3)):
        assert abs(cost(scaled, tiles) - unit * (busiest / 4) ** 0.65 - waves.WAVE_SECONDS) < 1e-12
    assert cost(scaled, 528 + 132) == one_wave + cost(scaled, 132)


def test_the_simt_model_scales_the_tails_of_multi_warp_8x8_tiles_only():
    """16 x 8 micro-tiles (128x256, 128x128) and one-warp CTAs (32x64, 32x32, 16x128, 16x64)
    keep a full wave's price for a partial one; the 8 x 8 (and 8 x 4, 4 x 16) tiles of 2-4
    warps do not."""
    _, tiles = simt._space(4096, 4096)
    scaled = {tile for tile, (_, rate) in tiles.items() if rate.tail_scaling}
    assert scaled == {(128, 64), (64, 128), (64, 64), (32, 128), (128, 32)}
    assert all(tiles[t][1].tail_scaling == simt._TAIL_SCALING for t in scaled)
    _, tiles = simt._space(16, 4096)
    assert {tile for tile, (_, rate) in tiles.items() if rate.tail_scaling and tile[0] == 16} == {
        (16, 256)}


def test_simt_ladder_k_tiling():
    """The 128x256 tile streams 8-deep k-tiles through 6 stages (its copies in smaller bursts);
    every other ladder tile keeps 16 x 3, and each configuration is valid."""
    for tm, tn, threads in simt._LADDER:
        config = simt._config(tm, tn, threads)
        config.validate()
        expected = (8, 6) if (tm, tn) == (128, 256) else (16, 3)
        assert (config.tile_k, config.stages) == expected, config.name
    assert (simt.choose_schedule(4096, 4096, 4096, 1, 132)[0].name
            == "simt_128x256x8_s6_t256_g8_b1_pdl")


def test_an_unsplit_key_never_writes_partials():
    """``split_k=False`` (a launch in pieces: no workspace) keeps C in the kernel; with a
    workspace the same small-M product runs transposed into partials."""
    family = dispatch.FAMILIES["sm90"]
    key = dispatch.schedule(family, *H200, "float16", "k", "n", (16, 16, 16), 16, 1024, 8192, 1,
                            split_k=False)[0]
    split_key, splits, transposed = dispatch.schedule(family, *H200, "float16", "k", "n",
                                                      (16, 16, 16), 16, 1024, 8192, 1)
    assert not key.config.partials and split_key.config.partials and transposed
    assert (key.a_major, key.b_major) == ("k", "n")
    assert (split_key.a_major, split_key.b_major) == ("m", "k"), "C^T = B^T A^T swaps the majors"


def test_sm80_never_splits():
    family = dispatch.FAMILIES["sm80"]
    _, splits, transposed = dispatch.schedule(family, (8, 0), 108, "float16", "k", "n",
                                              (16, 16, 16), 1, 8192, 8192, 1)
    assert splits == 1 and not transposed


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [1, 8, 9, 16, 24, 32])
@pytest.mark.parametrize("m, k", [(1000, 4100), (4096, 4096), (8192, 8192), (14336, 4096)])
def test_small_n_16bit_products_run_untransposed_on_one_narrow_tile_column(math, m, n, k):
    """N <= 32 (M >= 4 N): the narrow tiles untransposed, all of N in the tile's width, never
    more than twice the narrowest such width; with B N-major (its K-tiles rows of a few dozen
    bytes) 128-row tiles only.  Unsplit they write C themselves, in 2x1 clusters where M spans
    two tiles; split, through the workspace.  A C of rows that TMA cannot store
    (``c_aligned=False``) always goes through the workspace.  The XLA route (no workspace)
    takes them unsplit."""
    for majors in (("k", "n"), ("k", "k"), ("m", "n")):
        for c_aligned in (True, False):
            config, splits, transposed = sm90.choose_schedule(m, n, k, 1, 132, math=math,
                                                              majors=majors, c_aligned=c_aligned)
            assert not transposed, (majors, config)
            assert config.partials == (splits > 1 or not c_aligned), (majors, splits, config)
            two_rows = -(-m // config.tile_m) >= 2
            assert config.cluster_m == (2 if splits == 1 and two_rows else 1), (majors, config)
            narrowest = 16 if n <= 16 else 32
            assert n <= config.tile_n <= 2 * narrowest, f"N = {n} on a {config.tile_n}-wide tile"
            assert config.epi_n == min(32, config.tile_n), config
            config.validate()
            if majors[1] == "n" and config.tile_n < 64:
                assert config.tile_m == 128, (majors, config)
    xla = sm90.choose_config(m, n, k, 1, 132, math=math)
    assert not xla.partials and n <= xla.tile_n < 64, xla
    xla.validate()


@pytest.mark.parametrize("n", [1, 8, 16, 24, 32])
@pytest.mark.parametrize("m, k", [(1000, 4100), (8192, 8192), (16384, 2048)])
def test_small_n_one_pass_tf32_runs_on_the_narrow_tiles_unless_the_kernel_swaps(m, n, k):
    """One-pass TF32 with B K-major (A either major: an M-major A is the register operand) takes
    the narrow tiles of N <= 32 untransposed as 16-bit products do: unsplit it stores its fp32
    C itself, in 2x1 clusters only for an even count of 128-row tiles (``_cluster_m``).  With
    B N-major the kernel swaps (C^T = B^T A^T, tiles over (N, M)): no narrow tile there.
    3xTF32 keeps the wide tiles."""
    for majors in (("k", "k"), ("m", "k")):
        config, splits, transposed = sm90.choose_schedule(m, n, k, 1, 132, math="tf32",
                                                          majors=majors)
        assert not transposed and not config.swap, (majors, config)
        narrowest = 16 if n <= 16 else 32
        assert n <= config.tile_n <= 2 * narrowest, (majors, config)
        assert config.partials == (splits > 1), (majors, splits, config)
        even_rows = -(-m // config.tile_m) % 2 == 0
        assert config.cluster_m == (2 if splits == 1 and config.tile_m == 128 and even_rows
                                    else 1), (majors, config)
        config.validate()
    config, _, _ = sm90.choose_schedule(m, n, k, 1, 132, math="tf32", majors=("k", "n"),
                                        swapped=True)
    assert config.swap and config.tile_n >= 64, config
    config.validate()
    config, _, transposed = sm90.choose_schedule(m, n, k, 1, 132, math="tf32x3")
    assert not transposed and config.tile_n >= 128, config


@pytest.mark.parametrize("n", [40, 64])
def test_small_n_up_to_64_takes_the_64x64_tile_unsplit_in_2x1_clusters(n):
    """One tile column: every tile row rereads all of B, so unsplit the 64 x 64 tile runs in
    2x1 clusters (B multicast); split it writes fp32 partials unclustered."""
    config, splits, transposed = sm90.choose_schedule(4096, n, 4096, 1, 132)
    assert (config.tile_m, config.tile_n, config.cluster_m, transposed) == (64, 64, 2, False)
    assert splits == 1 and not config.partials
    for m, k in ((2640, 4272), (2048, 8192)):  # few tile rows over a long K: split
        config, splits, _ = sm90.choose_schedule(m, n, k, 1, 132)
        assert (config.tile_m, config.tile_n) == (64, 64) and splits > 1, (m, k, config, splits)
        assert config.partials and config.cluster_m == 1, config
    # M of one 64-row tile row (the tile's other use): nothing to share, unclustered.
    config, _, _ = sm90.choose_schedule(64, 4096, 4096, 1, 132)
    assert (config.tile_m, config.tile_n, config.cluster_m) == (64, 64, 1), config


#: Products of N 65-112 (B K-major): (M, N, K, the odd width); tile rows, clusters and splits
#: as the 128-wide tiles would take them.
ODD_N = [(3688, 112, 1416, 112), (6656, 80, 5680, 80), (10704, 104, 4912, 112),
         (2480, 65, 880, 80), (4000, 96, 3000, 96), (1592, 72, 3464, 80)]


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("m, n, k, width", ODD_N, ids=str)
def test_n_of_65_to_112_with_b_k_major_takes_the_narrowest_odd_width(math, m, n, k, width):
    """B K-major (its tile rows are K, 128-byte swizzled whatever the width): the narrowest of
    80, 96, 112 that holds N instead of 128, unsplit in 2x1 clusters where M spans two tiles
    (split: fp32 partials, unclustered); the XLA route (no workspace) too."""
    for max_splits in (waves.MAX_SPLITS, 1):
        config, splits, transposed = sm90.choose_schedule(m, n, k, 1, 132, max_splits,
                                                          math=math, majors=("k", "k"))
        config.validate()
        assert config.tile_n == width and not transposed and not config.swap, config
        assert config.epi_n == sm90.epilogue_width(width) and not config.streamk
        assert config.cluster_m == (1 if splits > 1 else 2) and config.partials == (splits > 1)


@pytest.mark.parametrize("majors", [("k", "n"), ("m", "n")])
@pytest.mark.parametrize("m, n, k, width", ODD_N, ids=str)
def test_n_of_65_to_112_with_b_n_major_keeps_128_wide_tiles(majors, m, n, k, width):
    """B stored along N: a tile 80 or 112 wide would be 32-byte swizzled, and it lost or tied;
    no odd width is offered, to the model or to the tuner."""
    config, _, _ = sm90.choose_schedule(m, n, k, 1, 132, majors=majors)
    assert config.tile_n not in (80, 96, 112), config
    assert all(c.tile_n not in (80, 96, 112)
               for c, _, _ in sm90.candidates(m, n, k, 1, 132, majors=majors))


@pytest.mark.parametrize("case", [dict(n=120), dict(n=64), dict(n=96, math="tf32"),
                                  dict(n=96, math="tf32x3")], ids=str)
def test_odd_widths_stay_out_of_other_products(case):
    """N past 112 (the 128-wide tile pads less than 16 columns), N of at most 64 (the 64 x 64
    tile), and fp32 inputs through TF32 (tile_k 32: not built)."""
    case = dict(case)
    n = case.pop("n")
    for c, _, _ in sm90.candidates(6000, n, 4000, 1, 132, majors=("k", "k"), **case):
        assert c.tile_n not in (80, 96, 112), (n, case, c)


def test_odd_widths_are_offered_to_the_tuner_without_stream_k():
    """The tuner times the odd width and the 128-wide tile, never an odd-width stream-K
    schedule (not built) nor one in 2x2 clusters."""
    found = sm90.candidates(10704, 104, 4912, 1, 132, majors=("k", "k"))
    widths = {c.tile_n for c, _, _ in found}
    assert 112 in widths and 128 in widths, found
    for c, _, _ in found:
        c.validate()
        if c.tile_n == 112:
            assert not c.streamk and c.cluster_n == 1, c
    swapped = sm90.candidates(72, 12432, 2296, 1, 132, majors=("k", "n"))
    assert swapped[0][0].swap and swapped[0][0].tile_n == 80, swapped[0]
    assert all(not (c.streamk and c.tile_n == 80) for c, _, _ in swapped)


def test_small_m_stored_m_major_runs_on_128_row_narrow_tiles_where_rows_split_sectors():
    """A small-M product whose A is M-major, rows of A^T no whole number of 32-byte sectors (M
    = 8, 12, 24, 31 in 16 bits): the 64-row narrow tiles are left out, transposed (a short N)
    or swapped (``_swapped_small_m``), but for the 32-wide swapped tile where 128-row tiles
    would fill under ``_SWAP_SMALL_FILL`` of the SMs (``_SWAP_NARROW_ROWS``: 24 x 3072 has 24
    such tiles); at M = 16 and 32 (32 and 64 bytes) they stay, as for a K-major A (swapped,
    the A tile multicast in 2x1 clusters)."""
    for m, n, k, rows in ((8, 2048, 4096, 128), (12, 2048, 8192, 128), (24, 3072, 14336, 64),
                          (31, 2048, 8192, 128), (8, 4096, 4096, 128), (12, 8192, 8192, 128),
                          (24, 8192, 8192, 128)):
        config, _, transposed = sm90.choose_schedule(m, n, k, 1, 132, majors=("m", "n"))
        assert transposed or config.swap, (m, n, k, config)
        assert config.tile_m == rows and config.tile_n <= 32, (m, n, k, config)
    for m, n, k in ((16, 4096, 4096), (16, 8192, 8192), (32, 2048, 4096), (32, 8192, 8192)):
        across = sm90.choose_schedule(m, n, k, 1, 132, majors=("m", "n"))
        kept = sm90.choose_schedule(m, n, k, 1, 132, majors=("k", "n"))
        if kept[0].swap:
            assert across == (replace(kept[0], cluster_m=2), 1, False), (m, n, k, across)
        else:
            assert across == kept, (m, n, k)


def test_a_small_n_launch_writes_c_itself_unsplit_and_through_the_workspace_split():
    """A narrow-tile launch with an aligned C: split (few tiles), fp32 partials and the
    reduction; unsplit (a long M), the kernel stores C in 2x1 clusters, no reduction."""
    for (m, n, k), split in (((4096, 8, 4096), True), ((14336, 16, 4096), False)):
        gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))
        spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
        resolved = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, "float16", 2,
                                   (True, True, True), spans, (False, False, False))
        splits = resolved.splits
        config = resolved.key.config
        assert (splits > 1) == split and config.tile_n < 64, (m, n, k, splits, config)
        assert config.partials == split and (resolved.reduce is not None) == split
        assert config.cluster_m == (1 if split else 2), config
        assert not resolved.transposed and resolved.key.align_c == 8
        assert dispatch.through_workspace(config, splits, False) == split


def test_an_under_aligned_c_is_written_by_the_reduction_never_staged_by_the_library():
    """C rows of 8 or 24 bytes: a product through the workspace (a small-N narrow tile) has C
    written by the reduction's scalar stores and takes C as it is.  An N-major B of such rows
    is copied by the operand prep into padded rows inside the launch (nothing staged), C then
    written by the reduction.  An unsplit product on a wide tile stores such a C itself,
    element by element (``Config.stores_any_c``, ``dispatch.copied_c``), at every size; only a
    stream-K schedule (a workspace of its own) still stages C."""
    def plan(m, n, k, b_k_major):
        b_strides = (1, k) if b_k_major else (n, 1)
        gemm = plan_gemm((m, k), (k, 1), (k, n), b_strides, (n, 1))
        spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
        return launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, "float16", 2,
                               (True, True, True), spans, (False, False, False))
    for n in (4, 12):
        direct = plan(4096, n, 4096, True)
        assert isinstance(direct, launch.Launch) and direct.reduce is not None, direct
        assert dispatch.through_workspace(direct.key.config, 1, direct.transposed)
        assert direct.prep is None
        copied = plan(4096, n, 4096, False)
        assert isinstance(copied, launch.Launch) and copied.reduce is not None, copied
        assert copied.prep == (None, dispatch.operand_copy(H200[0], "float16", "n", "n"))
        assert copied.key.b_major == "n" and copied.key.align_b == 8, copied.key
    for dtype in ("float16", "bfloat16"):
        for m, n in ((1024, 1001), (255, 4095), (8192, 8191)):
            gemm = plan_gemm((m, 4096), (4096, 1), (4096, n), (1, 4096), (n, 1))
            spans = [(0, m * 4096 * 2), (0, 4096 * n * 2), (0, m * n * 2)]
            copied = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, dtype, 2,
                                     (True, True, True), spans, (False, False, False))
            assert isinstance(copied, launch.Launch), copied
            assert not copied.key.config.partials and copied.splits == 1, copied.key
            assert copied.key.align_c == 1 and not copied.transposed  # C as it is
            assert copied.reduce is None and copied.key.config.stores_any_c, copied
            assert copied.prep is None and copied.calls[0][1][9] == n  # C's own row stride
            streamk = replace(copied.key.config, streamk=True, pdl=False, cluster_m=2)
            problem = copied.problem
            with cache.trial_tuned(problem, (streamk, 1, False)):
                launch.clear_plans()
                staged = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, dtype, 2,
                                         (True, True, True), spans, (False, False, False))
            launch.clear_plans()
            assert staged == launch.Staging(False, False, True)


def test_precompile_builds_the_kernels_of_an_unaligned_c_where_launches_take_them():
    """``aot`` names what ``launch._resolve`` runs for a C TMA cannot store (one decision:
    ``dispatch.copied_c``): the kernel storing C itself (C's alignment in its key), or, for a
    schedule that cannot (a tuned swapped tile), that kernel writing our padded rows and the
    16-bit copy; an aligned-only set of aligned shapes has neither, the default set (which
    plans the odd class's draws with every alignment) the first."""
    from cutematmul import aot

    every = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float16", "bfloat16"),
                                        alignments="all", families=("sm90",)))
    direct = {k.dtype for k in every if isinstance(k, dispatch.KernelKey) and k.align_c < 8}
    assert direct == {"float16", "bfloat16"}, direct
    aligned = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float16",),
                                          alignments="aligned", families=("sm90",),
                                          shapes=aot.default_shapes()))
    assert not [k for k in aligned if isinstance(k, dispatch.KernelKey) and k.align_c < 8]
    assert not [k for k in aligned if isinstance(k, dispatch.ReduceKey) and k.w_dtype != "float32"]
    default = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float16",),
                                          families=("sm90",)))
    assert [k for k in default if isinstance(k, dispatch.KernelKey) and k.align_c < 8]
    gemm = plan_gemm((1000, 1000), (1000, 1), (1000, 1001), (1001, 1), (1001, 1))
    spans = [(0, 2 * 10**6), (0, 2 * 1001000), (0, 2 * 1001000)]
    work = launch._resolve(("sm90",), H200[0], H200[1], gemm, "float16", 2, (True, True, True),
                           spans, (False, False, False))
    assert isinstance(work, launch.Launch) and work.reduce is None and work.key.align_c == 1
    problem = work.problem
    swapped = replace(work.key.config, tile_m=128, tile_n=256, cluster_m=1, swap=True)
    from unittest import mock

    for choice, wanted in (((work.key.config, 1, False), [work.key]),
                           ((swapped, 1, False),
                            list(dispatch.copied_c(H200[0], replace(work.key, config=swapped))))):
        with mock.patch.object(aot.cache, "tuned_table", lambda directory: {problem: choice}):
            tuned = aot.tuned_keys(None)
        assert all(key in tuned for key in wanted), (wanted, tuned)
    assert len(wanted) == 2 and wanted[0].align_c == 8 and wanted[1].w_dtype == "float16"


def _contiguous_16bit_launch(m: int, n: int, k: int, layout: str, dtype: str):
    """(``launch._resolve``'s plan, B's strides, the spans) of an m x n x k 16-bit product of
    contiguous operands in ``layout`` ("t": that operand a transposed view), 16-byte aligned
    pointers, on an H200."""
    a_strides = (k, 1) if layout[0] == "n" else (1, m)
    b_strides = (n, 1) if layout[1] == "n" else (1, k)
    gemm = plan_gemm((m, k), a_strides, (k, n), b_strides, (n, 1))
    spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
    resolved = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, dtype, 2,
                               (True, True, True), spans, (False, False, False))
    return resolved, b_strides, spans


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_16_bit_operands_tma_cannot_address_are_copied_in_their_own_major(dtype, layout):
    """A 16-bit operand whose rows are no whole 16-byte vectors (a long K over a few columns:
    M = 60, N = 98, K = 15985) is copied by the operand prep in its own major (the copy's rows
    padded to whole 128-byte lines), A and B alike, in every layout; the kernel reads the
    copies aligned, C (98 columns) goes through the workspace.  An operand of no unit stride is
    staged."""
    m, n, k = 60, 98, 15985
    resolved, b_strides, spans = _contiguous_16bit_launch(m, n, k, layout, dtype)
    assert isinstance(resolved, launch.Launch), resolved
    a_major = "k" if layout[0] == "n" else "m"
    b_major = "n" if layout[1] == "n" else "k"
    assert resolved.prep == tuple(dispatch.operand_copy(H200[0], dtype, x, x)
                                  for x in (a_major, b_major)), resolved.prep
    assert all(p.key.dtype == dtype and p.key.parts == 1 and p.key.k_major
               for p in resolved.prep)
    # Both copies in one launch (the straight copy twice), built with the product's keys.
    from cutematmul import aot

    pair = dispatch.paired(resolved.prep)
    assert pair == replace(resolved.prep[0].key, k_major_b=True), pair
    problem = dispatch.problem(dispatch.FAMILIES["sm90"], H200[0], H200[1], dtype, "k", "k",
                               (2, 2, 2), m, n, k, 1)
    assert pair in aot.schedule_keys(problem, None)
    key = resolved.key
    assert (key.align_a, key.align_b) == (8, 8) and resolved.reduce is not None, key
    strided = plan_gemm((m, k), (2 * k, 2), (k, n), b_strides, (n, 1))
    staged = launch._resolve(("sm90", "sm80"), H200[0], H200[1], strided, dtype, 2,
                             (True, True, True), [(0, 4 * m * k), *spans[1:]],
                             (False, False, False))
    assert isinstance(staged, launch.Staging) and staged.a, staged


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("shape", [(4097, 4095, 4093), (60, 98, 15985), (1000, 1001, 999)],
                         ids=lambda s: "x".join(map(str, s)))
def test_operand_copies_start_every_row_on_a_128_byte_line(dtype, layout, shape):
    """The operand prep's copies (``launch._prep_plan``) have rows of whole 128-byte lines, and
    the second copy starts on a line after the first: a TMA box row then reads one line, not
    two (in 16-byte rows the kernel over two copies ran at half speed, 47th session).  Each
    copy holds its operand, and the GEMM's sizes name the copies' pitches."""
    m, n, k = shape
    resolved = _contiguous_16bit_launch(m, n, k, layout, dtype)[0]
    assert isinstance(resolved, launch.Launch) and resolved.prep is not None, resolved
    for _, sizes in resolved.calls:
        launches, nbytes, offsets, gemm_sizes = launch._prep_plan(resolved.prep, sizes)
        lda, ldb = gemm_sizes[5], gemm_sizes[7]
        for index, (copy, ld, offset) in enumerate(zip(resolved.prep, (lda, ldb), offsets)):
            if copy is None:
                continue
            rows, extent = ((m, k) if index == 0 else (n, k)) if copy.to_major == "k" else \
                (k, m if index == 0 else n)
            assert ld * 2 % 128 == 0 and ld >= extent, (index, copy, ld)
            assert offset % 128 == 0, (index, offset)
            assert offset + rows * ld * 2 <= nbytes, (index, offset, rows, ld, nbytes)


@pytest.mark.parametrize("dtype,itemsize", [("float16", 2), ("float32", 4)])
def test_a_split_launch_carries_its_reduction_and_passes_the_launch_proof(dtype, itemsize):
    m, n, k = 130, 2040, 6000
    gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))  # row-major A, B and C
    spans = [(0, (m * k) * itemsize), (0, (k * n) * itemsize), (0, (m * n) * itemsize)]
    names = dispatch.choose_families(dtype, H200[0])
    resolved = launch._resolve(tuple(f.name for f in names), H200[0], H200[1], gemm, dtype,
                               itemsize, (True, True, True), spans, (False, False, False))
    assert isinstance(resolved, launch.Launch)
    assert resolved.reduce == dispatch.reduce_key(H200[0], dtype)
    (offsets, sizes), = resolved.calls
    assert sizes[4] > 1 and sizes[:4] == (m, n, k, 1) and not resolved.transposed


def test_a_small_m_launch_is_transposed_and_keeps_c_a_b_sizes_for_the_proof():
    m, n, k = 16, 1024, 8192  # N's 16 row tiles: under _SWAP_SMALL_FILL, so transposed
    gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))
    spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
    resolved = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, "float16", 2,
                               (True, True, True), spans, (False, False, False))
    assert resolved.transposed and resolved.reduce is not None
    (offsets, sizes), = resolved.calls
    assert sizes[:4] == (m, n, k, 1)


def test_a_small_m_swapped_launch_stores_c_itself():
    """Over N's tiles that fill the SMs a small M runs swapped on a narrow tile: the key holds
    the product's majors, one unsplit call of C = A B's sizes, no workspace, no reduction."""
    m, n, k = 16, 8192, 8192
    gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))
    spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
    resolved = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, "float16", 2,
                               (True, True, True), spans, (False, False, False))
    key = resolved.key
    assert key.config.swap and key.config.tile_n == 16 and not key.config.partials, key
    assert (key.a_major, key.b_major) == ("k", "n") and not resolved.transposed
    assert resolved.reduce is None
    (offsets, sizes), = resolved.calls
    assert sizes[:5] == (m, n, k, 1, 1)


def test_an_unsplit_launch_has_no_reduction():
    m = n = k = 4096
    gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))
    spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
    resolved = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, "float16", 2,
                               (True, True, True), spans, (False, False, False))
    assert resolved.reduce is None and all(s[4] == 1 for _, s in resolved.calls)


def test_sm90_config_refuses_stage_counts_that_do_not_fit_shared_memory():
    # 128x256 fp16 leaves room for 4 stages beside the epilogue ring; 6 once reached the driver
    # ("launch shared memory exceeds") from a forced schedule.
    sm90.Config(stages=4).validate()
    with pytest.raises(ValueError, match="stages=6 does not fit.*room for 4"):
        sm90.Config(stages=6).validate()
    with pytest.raises(ValueError, match="fewer than 2"):
        sm90.Config(stages=1).validate()
    # TF32 tiles (tile_k = 32) count 4-byte elements.
    with pytest.raises(ValueError, match="does not fit"):
        sm90.Config(tile_k=32, partials=True, stages=5).validate()
    # 3xTF32 kernels hold two parts per stage (the kernel asks stage_count with parts=2).
    three = sm90.Config(tile_n=192, tile_k=32, epi_stages=2, stages=3)
    three.validate()
    assert sm90.Config(tile_n=192, tile_k=32, epi_stages=2).stage_count(4, 2) == 2
    with pytest.raises(ValueError, match="stages=3 does not fit.*2 part.*room for 2"):
        three.stage_count(4, 2)


def _streamk_launch(m, n, k, tile=(128, 128), cluster_m=2):
    """The resolved launch of a row-major fp16 product under a forced stream-K schedule."""
    from cutematmul import cache

    gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))
    spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
    family = dispatch.FAMILIES["sm90"]
    problem = dispatch.problem(family, H200[0], H200[1], "float16", "k", "n", (16, 16, 16),
                               m, n, k, 1)
    config = sm90.Config(tile_m=tile[0], tile_n=tile[1], cluster_m=cluster_m, streamk=True)
    with cache.trial_tuned(problem, (config, 1, False)):
        return launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, "float16", 2,
                               (True, True, True), spans, (False, False, False)), config


def test_a_streamk_launch_carries_its_workspace_and_no_reduction():
    resolved, config = _streamk_launch(1000, 1000, 1000)
    assert resolved.key.config == config and resolved.reduce is None
    # One fp32 partial tile and one flag per SM: the most CTAs the persistent grid holds.
    assert resolved.streamk == sm90.streamk_workspace(config, H200[1]) == (132 * 128 * 128, 132)
    (offsets, sizes), = resolved.calls
    assert sizes[:5] == (1000, 1000, 1000, 1, 1)


def test_a_streamk_launch_is_not_taken_by_the_direct_path():
    """The direct path calls the kernel without a workspace; a stream-K plan must not take it."""
    resolved, _ = _streamk_launch(768, 768, 768)
    direct = (resolved.prep is None and resolved.reduce is None and resolved.streamk is None)
    assert not direct


def test_streamk_configs_refuse_partials_and_name_themselves():
    config = sm90.Config(streamk=True)
    config.validate()
    assert config.name.endswith("_streamk")
    with pytest.raises(ValueError, match="streamk"):
        sm90.Config(streamk=True, partials=True).validate()


def test_pdl_configs_name_themselves_refuse_streamk_and_are_picked_but_for_streamk():
    config = sm90.Config(pdl=True)
    config.validate()
    sm90.Config(pdl=True, partials=True).validate()
    assert config.name.endswith("_pdl")
    with pytest.raises(ValueError, match="pdl"):
        sm90.Config(pdl=True, streamk=True).validate()
    shapes = [(1000, 1000, 1000), (8192, 8192, 8192), (16, 8192, 8192), (64, 4096, 4096),
              (2560, 2560, 2560), (5, 300, 1000)]
    for shape in shapes:
        for math in ("float16", "tf32", "tf32x3"):
            assert sm90.choose_schedule(*shape, 1, 132, math=math)[0].pdl, (shape, math)
            assert sm90.choose_config(*shape, 1, 132, math=math).pdl, (shape, math)
            for config, _, _ in sm90.candidates(*shape, 1, 132, math=math):
                assert config.pdl != config.streamk, (shape, math, config)


def test_the_xla_route_never_gets_a_streamk_kernel():
    """The XLA custom call has no workspace: its configurations are never stream-K (nor is any
    wave-model pick, below)."""
    for m, n, k in ((1536, 1536, 1536), (768, 768, 768), (1000, 1000, 1000), (2560, 2560, 2560),
                    (64, 4096, 4096)):
        for math in ("float16", "bfloat16", "tf32"):
            assert not sm90.choose_config(m, n, k, 1, 132, math=math).streamk


def test_streamk_estimates_have_no_partial_wave():
    """Under stream-K the time follows the work, not the wave count: 133 tiles, which take the
    data-parallel schedule two waves, cost far less than those two waves."""
    rate = sm90._RATES[16][1]

    def streamk(tiles_m, tiles_n):
        return waves.estimate_streamk(tiles_m * 128, tiles_n * 128, 4096, 1, 132, 128, 128, 64,
                                      1.0, rate)

    def parallel(tiles_m, tiles_n):
        return waves.estimate(tiles_m * 128, tiles_n * 128, 4096, 1, 132, 128, 128, 64, 1, 1.0,
                              rate)

    assert parallel(7, 19) > 1.8 * parallel(12, 11) and streamk(7, 19) < 0.7 * parallel(7, 19)


def test_streamk_is_a_tuner_candidate_for_partial_waves_and_not_the_model_pick_there():
    for shape in ((1536, 1536, 1536), (2560, 2560, 2560), (3072, 3072, 3072)):
        for math in ("float16", "tf32"):
            assert not sm90.choose_schedule(*shape, 1, 132, math=math)[0].streamk
            found = [c for c, _, _ in sm90.candidates(*shape, 1, 132, math=math) if c.streamk]
            assert len(found) == 1, (shape, math)
            found[0].validate()
    # Many waves (8192^3) or 3xTF32: none.
    assert not [c for c, _, _ in sm90.candidates(8192, 8192, 8192, 1, 132) if c.streamk]
    assert not [c for c, _, _ in sm90.candidates(2560, 2560, 2560, 1, 132, math="tf32x3")
                if c.streamk]


def test_a_recorded_streamk_schedule_past_32_bit_iterations_is_not_taken():
    """The kernel counts (tile, K-tile) iterations in 32 bits: a tuned stream-K choice for a
    product past that falls back to the wave model."""
    family = dispatch.FAMILIES["sm90"]
    config = sm90.Config(tile_m=64, tile_n=128, streamk=True)
    small = (2560, 2560, 2560, 1)
    huge = (64 * 2**12, 128 * 2**8, 64 * 2**12, 1)  # 2**20 tiles x 2**12 K-tiles
    assert sm90.streamk_fits(config, *small) and not sm90.streamk_fits(config, *huge)
    for shape, expected in ((small, True), (huge, False)):
        key, _, _ = dispatch.schedule(family, H200[0], H200[1], "float16", "k", "n", (16, 16, 16),
                                      *shape, tuned=(config, 1, False))
        assert key.config.streamk is expected
    # A kernel that computes C^T = B^T A^T (``Config.swap``: TF32 with B N-major) counts its
    # iterations over (N, M): one 64-row tile by 2**19 128-wide ones is 2**19 tiles one way and
    # 2**20 the other.
    config = sm90.Config(tile_m=64, tile_n=128, tile_k=32, epi_stages=2, streamk=True)
    swapped = replace(config, swap=True)
    shape = (64, 128 * 2**19, 32 * 2**11, 1)
    assert sm90.streamk_fits(config, *shape) and not sm90.streamk_fits(swapped, *shape)
    assert sm90.streamk_fits(swapped, shape[1], shape[0], *shape[2:])
    for majors, recorded, expected in ((("m", "k"), config, True), (("k", "n"), swapped, False)):
        key, _, _ = dispatch.schedule(family, H200[0], H200[1], "tf32", *majors, (16, 16, 16),
                                      *shape, tuned=(recorded, 1, False))
        assert key.config.streamk is expected, majors


# ----------------------------------------------------------------------- launch-bound products


def _family_of(m, n, k, batch=1, names=("sm90", "sm80"), a_cols=None):
    """The family the launch plans for a row-major fp16 (batch, M, K) @ (K, N) product on an
    H200."""
    lda = a_cols or k
    a_shape, a_strides = ((batch, m, k), (m * lda, lda, 1)) if batch > 1 else ((m, k), (lda, 1))
    c_shape, c_strides = ((batch, m, n), (m * n, n, 1)) if batch > 1 else ((m, n), (n, 1))
    work = launch._plan_launch(names, *H200, a_shape, a_strides, (k, n), (n, 1), c_shape,
                               c_strides, "float16", 2, (True, True, True),
                               (False, False, False))[1]
    return work


@pytest.mark.parametrize("shape", [(64, 64, 64), (128, 128, 128), (1, 128, 8), (128, 16, 96)],
                         ids=lambda s: "x".join(map(str, s)))
def test_launch_bound_products_run_the_sm80_kernel(shape):
    work = _family_of(*shape)
    assert isinstance(work, launch.Launch) and work.key.family == "sm80", work


@pytest.mark.parametrize("case", ["side 129", "side 256", "batched", "forced sm90"])
def test_larger_batched_or_forced_products_keep_sm90(case):
    shape, batch, names = {"side 129": ((129, 128, 128), 1, ("sm90", "sm80")),
                           "side 256": ((256, 256, 256), 1, ("sm90", "sm80")),
                           "batched": ((64, 64, 64), 4, ("sm90", "sm80")),
                           "forced sm90": ((64, 64, 64), 1, ("sm90",))}[case]
    work = _family_of(*shape, batch=batch, names=names)
    assert isinstance(work, launch.Launch) and work.key.family == "sm90", work


def test_a_launch_bound_product_sm80_would_stage_keeps_sm90():
    # A's rows are 16-byte aligned (208 bytes apart) but K = 100 is no whole number of
    # 8-element vectors: sm80 would copy A first, sm90 reads it as it is.
    work = _family_of(64, 64, 100, a_cols=104)
    assert isinstance(work, launch.Launch) and work.key.family == "sm90", work
    assert dispatch.problem_order(("sm90", "sm80"), 64, 64, 100, 1, 132) == ("sm80", "sm90")


def test_the_default_precompile_set_holds_the_launch_bound_kernels():
    from cutematmul import aot

    keys = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float16",), layouts=("kn",),
                                       alignments="aligned",
                                       shapes=((64, 64, 64), (512, 512, 512))))
    assert [k.family for k in keys] == ["sm80", "sm90"], keys
    assert keys[0] == _family_of(64, 64, 64).key, "precompiled, but not the kernel the launch takes"


@pytest.mark.parametrize("shape", [(64, 4096, 4096), (64, 8192, 8192), (48, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_one_tile_row_products_take_the_64x64_tile(shape):
    """32 < M <= 64 with 64 x 128 tiles leaves SMs idle (32 or 64 CTAs on 132): 64 x 64 unsplit."""
    config, splits, transposed = sm90.choose_schedule(*shape, 1, 132)
    assert (config.tile_m, config.tile_n, splits, transposed) == (64, 64, 1, False), config


@pytest.mark.parametrize("shape", [(32, 4096, 4096), (96, 6144, 6144), (128, 4096, 4096),
                                   (64, 14336, 4096), (1000, 1000, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_64x64_tile_stays_out_where_it_did_not_win(shape):
    config, _, _ = sm90.choose_schedule(*shape, 1, 132)
    assert (config.tile_m, config.tile_n) != (64, 64), config


@pytest.mark.parametrize("math", ["tf32", "tf32x3"])
def test_the_64x64_tile_is_a_16_bit_tile(math):
    config, _, transposed = sm90.choose_schedule(64, 4096, 4096, 1, 132, math=math)
    assert transposed or (config.tile_m, config.tile_n) != (64, 64), config


def test_wide_tiles_fill_partial_waves_of_clustered_16bit_products_only():
    """128 x 160 and 128 x 224 (configs.sm90._WIDE_EFFICIENCY) where the power-of-two widths leave a
    wave partly idle; never for one tile row (unclustered), TF32, 3xTF32 or a stream-K candidate."""
    picks = {s: sm90.choose_schedule(s, s, s, 1, 132)[0] for s in (1536, 1792, 2560, 8192)}
    assert picks[1792].tile_n == 224 and not picks[1792].swap
    assert picks[8192].tile_n == 256 and not picks[8192].swap
    assert all(p.cluster_m == 2 for p in picks.values())
    # 1536^3 and 2560^3: the wide tiles fill a wave unswapped (120 tiles of 128 x 160; 220 of
    # 128 x 224; A M-major, which does not swap), the swapped fine widths fill it whole (132 of
    # 128 x 144; 260 of 128 x 208).  With B N-major as well 128 x 160 is not offered
    # (``_ACROSS_SLOW``): 96 tiles of 128 x 192 fill the same one wave.
    unswapped = {s: sm90.choose_schedule(s, s, s, 1, 132, majors=("m", "k"))[0]
                 for s in (1536, 2560)}
    assert (unswapped[1536].tile_n, unswapped[2560].tile_n) == (160, 224)
    across = {s: sm90.choose_schedule(s, s, s, 1, 132, majors=("m", "n"))[0]
              for s in (1536, 2560)}
    assert (across[1536].tile_n, across[2560].tile_n) == (192, 224)
    assert [(picks[s].tile_n, picks[s].swap) for s in (1536, 2560)] == [(144, True), (208, True)]
    for shape in [(128, 1536, 1536), (100, 2560, 2560)]:
        assert sm90.choose_schedule(*shape, 1, 132)[0].tile_n not in (160, 224), shape
    for math in ("tf32", "tf32x3"):
        for s in (1536, 1792, 2560):
            assert sm90.choose_schedule(s, s, s, 1, 132, math=math)[0].tile_n not in (160, 224)
    for s in (1536, 1792, 2560, 3000):
        for config, _, _ in sm90.candidates(s, s, s, 1, 132):
            if config.tile_n in (160, 224):  # built and tested clustered, never stream-K
                assert config.cluster_m == 2 and not config.streamk, config
    with pytest.raises(ValueError, match="tile_n"):
        sm90.Config(tile_n=176).validate()


def test_clustered_tile_rows_are_launched_in_whole_clusters():
    """An odd count of tile rows in 2x1 clusters launches one CTA more per tile column
    (``waves.Rate.cluster_rows``): 5 rows of 23 columns are 138 CTAs, two waves on 132 SMs."""
    rate = waves.Rate(5e12, 1, 2, 2, 4)
    clustered = rate._replace(cluster_rows=2)
    assert waves.launched_tiles(640, 2912, 1, 128, 128, rate) == 5 * 23
    assert waves.launched_tiles(640, 2912, 1, 128, 128, clustered) == 6 * 23
    assert waves.launched_tiles(768, 2912, 2, 128, 128, clustered) == 6 * 23 * 2
    one = waves.estimate(640, 2912, 1368, 1, 132, 128, 128, 64, 1, 1.0, rate)
    two = waves.estimate(640, 2912, 1368, 1, 132, 128, 128, 64, 1, 1.0, clustered)
    assert two > 1.8 * one


@pytest.mark.parametrize("layout", ["nn", "tn"])
def test_odd_tile_rows_that_spill_a_wave_in_clusters_run_unclustered(layout):
    """Where the last cluster's idle CTA would start another wave, the tile runs 1x1; an even
    count of tile rows, or many waves, keep the 2x1 cluster."""
    majors = LAYOUT_MAJORS[layout]
    config, splits, _ = sm90.choose_schedule(640, 2912, 1368, 1, 132, majors=majors)
    if layout == "nn":  # A K-major: swapped, N's 23 tile rows in 12 clusters fill one wave
        assert (config.tile_n, config.cluster_m, config.swap, splits) == (128, 2, True, 1)
        config, splits, _ = sm90.choose_schedule(640, 2912, 1368, 2, 132, majors=majors)
        assert not config.swap  # a batch: not swapped
        return
    assert (config.tile_m, config.tile_n, config.cluster_m, splits) == (128, 128, 1, 1)
    for shape in [(768, 2912, 1368), (8192, 8192, 8192), (4096, 14336, 4096)]:
        assert sm90.choose_schedule(*shape, 1, 132, majors=majors)[0].cluster_m == 2, shape
    # One-pass TF32 takes 64-row tiles instead, whose 10 rows make whole 2x1 clusters
    # (``_TF32_CLUSTER_SHORT``); 3xTF32 never clusters.
    config = sm90.choose_schedule(640, 2912, 1368, 1, 132, math="tf32")[0]
    assert (config.tile_m, config.cluster_m) == (64, 2), config
    assert sm90.choose_schedule(640, 2912, 1368, 1, 132, math="tf32x3")[0].cluster_m == 1
    # Split products keep their clusters (not measured unclustered): 5 rows of 64 in 2x1.
    config, splits, _ = sm90.choose_schedule(257, 1032, 9001, 1, 132, majors=majors)
    assert splits > 1 and config.cluster_m == 2, (config, splits)


def test_swapped_tf32_products_of_one_tile_column_take_the_64_wide_tile():
    """One-pass TF32 products of M <= 64 whose kernel swaps (nn, and tn through its K-major
    copy of A) run on 64 x 64 tiles over (N, M) (``_TF32_ONE_ROW_EFFICIENCY``): the same CTAs
    as 64 x 128, less of each empty.  M = 96 spans two such columns and keeps 64 x 128; the
    unswapped layouts (nt, tt) are never offered the tile."""
    for layout in ("nn", "tn", "nt", "tt"):
        swapped = layout in ("nn", "tn")
        for m, n, k in ((40, 6144, 3072), (64, 6144, 3072), (48, 3072, 1024), (96, 6144, 3072)):
            work = launch.contiguous_plan(("sm90",), (9, 0), 132, "tf32", m, n, k, 1,
                                          (layout[0] == "t", layout[1] == "t"))
            config = work.key.config
            assert config.swap == swapped and not work.transposed, (layout, m, config)
            narrow = (config.tile_m, config.tile_n) == (64, 64)
            assert narrow == (swapped and m <= 64), (layout, m, n, k, config, work.splits)
            if narrow:
                assert config.cluster_m == 1 and work.splits == 1, (layout, m, config)


def test_one_pass_tf32_clusters_odd_tile_rows_where_it_pays():
    """Unsplit one-pass TF32 runs in 2x1 clusters from two tile rows on (128 rows, or 64 where
    the kernel does not swap), an odd count too; what runs unclustered (splits, one tile row,
    swapped 64-row tiles, the unsplit variant for odd rows whose idle CTA
    would cost a wave) is priced at ``configs.sm90._TF32_UNCLUSTERED``, and the 128 x 128 tile
    at ``_TF32_SQUARE``."""
    for majors in LAYOUT_MAJORS.values():
        for shape in [(6016, 8000, 5184), (2368, 7616, 2176), (4224, 4224, 4224)]:
            config, splits, _ = sm90.choose_schedule(*shape, 1, 132, math="tf32", majors=majors)
            assert (config.tile_m, config.cluster_m, splits) == (128, 2, 1), (shape, config)
        tiles = dict(sm90._space(6016, 8000, 5184, 1, 132, 16, "tf32", majors).tiles)
        alone = tiles[(128, 256, sm90._UNCLUSTERED)]
        assert alone[0] == sm90._TILE_EFFICIENCY[(128, 256)] * sm90._TF32_UNCLUSTERED
        # Split schedules run unclustered: only the unclustered key prices them.
        assert tiles[(128, 256)][1].cluster_rows == 2 and tiles[(128, 256)][1].max_splits == 1
        assert alone[1].cluster_rows == 1 and alone[1].max_splits > 1
        # 64 x 128 as well (``_TF32_CLUSTER_SHORT``): clustered unsplit, else unclustered;
        # always unclustered where the kernel swaps.
        assert tiles[(64, 128)][0] == sm90._TILE_EFFICIENCY[(64, 128)]
        assert tiles[(64, 128)][1].cluster_rows == 2
        assert tiles[(64, 128, sm90._UNCLUSTERED)][0] == (
            sm90._TILE_EFFICIENCY[(64, 128)] * sm90._TF32_UNCLUSTERED)
        swapped = dict(sm90._space(6016, 8000, 5184, 1, 132, 16, "tf32", majors,
                                   swapped=True).tiles)
        assert swapped[(64, 128)][0] == (
            sm90._TILE_EFFICIENCY[(64, 128)] * sm90._TF32_UNCLUSTERED)
        assert swapped[(64, 128)][1].cluster_rows == 1
        square, factor = sm90._TF32_SQUARE
        if majors != sm90._ACROSS_BOTH:  # (TF32 reads no such pair: one operand is copied)
            assert tiles[square][0] == pytest.approx(sm90._TILE_EFFICIENCY[square] * factor)


def test_resident_clusters_leave_each_gpc_up_to_two_sms_under_4_cta_clusters():
    """1- and 2-CTA clusters fill every SM; 4-CTA ones lose up to 2 SMs in each of 8 GPCs
    (an H200 measured 30 resident of 33; the bound says 29)."""
    assert sm90.resident_clusters(132, 1) == 132 and sm90.resident_clusters(132, 2) == 66
    assert sm90.resident_clusters(132, 4) == 29
    assert sm90.resident_clusters(114, 4) == 24
    assert sm90.resident_clusters(8, 4) == 1


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_one_wave_of_2x2_clusters_takes_them_with_an_even_count_of_tile_columns(layout):
    """A 16-bit data-parallel product in 2x1 clusters moves to 2x2 (A multicast as well) where
    its tile columns are even and its 2x2 clusters (times the batch) all run at once."""
    majors = LAYOUT_MAJORS[layout]
    for shape, batch in (((928, 744, 1312), 1), ((1568, 1448, 3072), 1), ((648, 968, 2784), 2),
                         ((2816, 256, 2496), 1)):
        config, splits, transposed = sm90.choose_schedule(*shape, batch, 132, majors=majors)
        assert (config.cluster_m, config.cluster_n, splits, transposed) == (2, 2, 1, False), (
            shape, config)
        rows, cols = -(-shape[0] // config.tile_m), -(-shape[1] // config.tile_n)
        assert cols % 2 == 0 and -(-rows // 2) * cols // 2 * batch <= 29, (shape, config)
        config.validate()
        assert sm90.choose_config(*shape, batch, 132, majors=majors) == config  # the XLA route
    for shape, batch in (((1224, 280, 1376), 1),   # three tile columns
                         ((1000, 1000, 1000), 1),  # 32 clusters: more than run at once
                         ((4096, 4096, 4096), 1), ((8192, 8192, 8192), 1),
                         ((928, 744, 1312), 8)):   # batched past one wave
        config, _, _ = sm90.choose_schedule(*shape, batch, 132, majors=majors)
        assert config.cluster_n == 1, (shape, batch, config)
    for math in ("tf32", "tf32x3"):  # 16-bit only
        config, _, _ = sm90.choose_schedule(928, 744, 1312, 1, 132, math=math, majors=majors)
        assert config.cluster_n == 1, (math, config)


def test_the_tuner_also_times_the_pick_in_2x2_clusters_over_several_waves():
    """Past one wave the model keeps 2x1, and the tuner times the same tile in 2x2 too; not
    where the tile columns are odd, nor for split, transposed or TF32 picks."""
    for shape in ((4096, 14336, 4096), (8192, 8192, 8192), (1000, 1000, 1000)):
        pick, *rest = sm90.candidates(*shape, 1, 132)
        assert pick[0].cluster_n == 1, (shape, pick)
        quad = (replace(pick[0], cluster_n=2), 1, False)
        assert quad in rest, (shape, pick)
        assert quad in dispatch.tunable(dispatch.Problem("sm90", "sm_90a", "float16", "k", "n", 16,
                                                          16, 16, *shape, 1, 132),
                                        dispatch.EVERY_CANDIDATE), shape
    for shape, math in (((4104, 4104, 4104), "float16"), ((16, 8192, 8192), "float16"),
                        ((4096, 4096, 4096), "tf32")):
        assert not [c for c, _, _ in sm90.candidates(*shape, 1, 132, math=math) if c.cluster_n == 2]


def test_2x2_clusters_are_built_for_data_parallel_cooperative_16bit_tiles_only():
    sm90.Config(tile_m=64, tile_n=128, cluster_m=2, cluster_n=2, pdl=True).validate()
    for bad in ({"streamk": True}, {"pingpong": True, "tile_n": 128}, {"swap": True},
                {"partials": True}, {"tile_k": 32, "tile_n": 128}, {"tile_n": 64},
                {"tile_m": 256, "tile_n": 128}):
        fields = {"tile_m": 128, "tile_n": 256, "cluster_m": 2, "cluster_n": 2, **bad}
        with pytest.raises(ValueError, match="2x2 clusters are built for"):
            sm90.Config(**fields).validate()
    with pytest.raises(ValueError, match="must be 1x1, 2x1, 1x2 or 2x2"):
        sm90.Config(cluster_m=4).validate()


# ----------------------------------------------------------------------- SIMT few-row products

@pytest.mark.parametrize("layout", LAYOUT_MAJORS)
@pytest.mark.parametrize("m", [1, 2, 3, 5, 8])
def test_simt_products_of_at_most_8_rows_stream_rows_where_read_well(m, layout):
    """M <= 8: the FMA row-streaming kernel on the fewest rows that hold M, untransposed, over
    an N-major B, and over a K-major B where A is K-major and M is at most 2; the other products
    over a K-major B take the staged row-streaming kernel (``simt.staged_rows``: the FMA
    kernel's lanes would each load their own run of A, and an M-major A element by
    element)."""
    majors = LAYOUT_MAJORS[layout]
    config, splits, transposed = simt.choose_schedule(m, 4096, 4096, 1, 132, majors=majors)
    assert config.gemv and not transposed, config
    staged = layout == "tt" or (layout == "nt" and m >= simt.STAGED_MIN_K_MAJOR_M)
    assert config.staged == staged, config
    if not staged:
        assert config.tile_m == next(r for r in simt.GEMV_ROWS if r >= m)
    config.validate()


@pytest.mark.parametrize("layout", LAYOUT_MAJORS)
@pytest.mark.parametrize("n", [1, 6, 8])
def test_simt_products_of_at_most_8_columns_stream_transposed_where_read_well(n, layout):
    """N <= 8 < M: the row-streaming kernel on C^T = B^T A^T, unless B^T would be M-major and
    A^T K-major (an N-major B with a K-major A: the tiled kernel keeps it)."""
    config, _, transposed = simt.choose_schedule(4096, n, 4096, 1, 132,
                                                 majors=LAYOUT_MAJORS[layout])
    a_t, b_t = transposed_majors(*LAYOUT_MAJORS[layout])
    assert config.gemv == transposed == (layout != "nn") == simt.gemv_reads(a_t, b_t), config


def test_simt_row_streaming_splits_fill_one_wave():
    """The split count: the most whose CTAs fit one wave of CTA slots (H200: 132 SMs x 4 CTAs
    of 1-2 rows, x 2 of 4-8 rows), capped by K's 128-k granules and 16 splits."""
    cases = {(1, 4096, 4096): 16, (1, 14336, 4096): 4, (8, 4096, 14336): 8, (4, 14336, 4096): 2,
             (1, 1024, 1024): 8, (2, 8192, 8192): 8, (3, 5, 7): 1}
    for (m, n, k), want in cases.items():
        config, splits, _ = simt.choose_schedule(m, n, k, 1, 132)
        assert config.gemv and splits == want, ((m, n, k), config.name, splits)
        slots = 132 * config.min_blocks
        assert -(-n // config.tile_n) * splits <= slots or splits == 1


def test_row_streaming_deep_product_splits_to_its_cta_slots():
    """A deep product of a row-streaming tile or a few splits past ``waves.DEEP_SPLITS`` up to
    the CTA slots (two per SM on 8-64-row CTAs, one on 128-row ones), never past them, for
    either dtype and B major; a caller's cap stands."""
    cases = {(23, 93, 179080, "float16", "n"): 264, (17, 133, 63264, "float16", "n"): 132,
             (45, 265, 144736, "float16", "k"): 88, (100, 500, 50000, "float16", "n"): 33,
             (4, 64, 262144, "float32", "n"): 264}
    for (rows, cols, k, math, b_major), want in cases.items():
        config, splits, _ = simt._gemv_ranked(rows, cols, k, 1, 132, waves.MAX_SPLITS, False, 0,
                                              math, b_major)[0]
        tiles = -(-rows // config.tile_m) * -(-cols // config.tile_n)
        assert splits == want and tiles * splits <= 132 * config.min_blocks, (rows, splits)
        assert config.partials
    # 8 column tiles: 33 splits fill the slots, as before the deep splits.
    assert simt._gemv_ranked(8, 1024, 131072, 1, 132, waves.MAX_SPLITS, False, 0, "float16",
                             "n")[0][1] == 33
    # A caller's cap stands.
    assert simt._gemv_ranked(23, 93, 179080, 1, 132, 8, False, 0, "float16", "n")[0][1] == 8


def test_simt_unsplit_route_never_transposes_or_splits_a_row_streaming_product():
    config = simt.choose_config(4096, 1, 4096, 1, 132, majors=("k", "k"))
    assert not config.gemv, config  # transposing needs a workspace, which an unsplit route lacks
    config = simt.choose_config(1, 4096, 4096, 1, 132)
    assert config.gemv and config.tile_m == 1
    key, splits, transposed = dispatch.schedule(dispatch.FAMILIES["simt"], *H200, "float32", "k",
                                                "n", (16, 16, 16), 1, 4096, 4096, 1,
                                                split_k=False)
    assert key.config.gemv and splits == 1 and not transposed


def test_simt_sixteen_row_tiles_only_where_one_tile_row_holds_m():
    assert simt.choose_schedule(16, 4096, 4096, 1, 132)[0].tile_m == 16
    for m in (17, 24, 32, 48):
        configs, _ = simt._space(m, 4096)
        assert all(tm >= 32 for tm, _ in configs), (m, sorted(configs))


def test_simt_gemv_configs_refuse_what_the_kernel_cannot_run():
    """Every rule of a gemv config raises a ValueError that names it."""
    from dataclasses import replace

    good = simt.gemv_config(4)
    good.validate()
    for bad in (replace(good, tile_m=3), replace(good, tile_m=32), replace(good, tile_n=64),
                replace(good, threads=96), replace(good, min_blocks=9)):
        with pytest.raises(ValueError, match=r"gemv|min_blocks|threads"):
            bad.validate()
    assert good.name == "simtv_4x128_t256_b2_pdl"
    mma = simt.mma_config(16)
    mma.validate()
    for bad in (replace(mma, tile_m=24), replace(mma, threads=128), replace(mma, tile_n=64),
                replace(mma, gemv=False)):
        with pytest.raises(ValueError, match=r"mma"):
            bad.validate()
    assert mma.name == "simtm_16x128_t256_b2_pdl"
    staged = simt.staged_config(32)
    staged.validate()
    for bad in (replace(staged, tile_m=8), replace(staged, tile_n=96),
                replace(staged, threads=128), replace(staged, tile_n=256),
                replace(staged, stages=1), replace(staged, min_blocks=2),
                replace(staged, gemv=False), replace(staged, mma=True)):
        with pytest.raises(ValueError, match=r"staged|stages|shared memory"):
            bad.validate()
    assert staged.name == "simts_32x128_s3_t256_b1_pdl"


@pytest.mark.parametrize("layout", LAYOUT_MAJORS)
@pytest.mark.parametrize("n", [6, 4096])
@pytest.mark.parametrize("m", [1, 2, 3, 8, 9, 16, 17, 27, 32, 33])
def test_fp32_rows_over_a_k_major_b_run_staged(m, n, layout):
    """fp32 "highest" of up to ``STAGED_MAX_M`` rows over a K-major B (nt from
    ``STAGED_MIN_K_MAJOR_M`` rows, tt from one) and more than 8 columns: the staged
    row-streaming kernel on the fewest ``STAGED_ROWS`` that hold M, untransposed, both
    operands read as they are (no copy of A), its CTAs in one wave; over an N-major B, past
    ``STAGED_MAX_M`` rows and at 8 columns or fewer, another kernel."""
    majors = LAYOUT_MAJORS[layout]
    k = 4096
    config, splits, transposed = simt.choose_schedule(m, n, k, 1, 132, majors=majors)
    config.validate()
    if (majors[1] == "k" and m <= simt.STAGED_MAX_M and n > 8
            and (majors[0] == "m" or m >= simt.STAGED_MIN_K_MAJOR_M)):
        assert config.staged and not transposed, config
        assert config.tile_m == next(r for r in simt.STAGED_ROWS if r >= m), config
        assert -(-n // config.tile_n) * splits <= 132 * config.min_blocks, splits
        assert simt.operand_copies("float32", *majors, m, n, k, 1, 132) == (None, None)
    else:
        assert not config.staged, config


def _auto_plan(m, n, k, layout, dtype="float16", batch=1):
    """The launch auto plans on an H200 for contiguous operands in ``layout``; ``dtype`` a math
    type (16-bit by default, or "tf32" and the other fp32 modes)."""
    transposed = (layout[0] == "t", layout[1] == "t")
    return launch.contiguous_plan(("sm90", "sm80", "simt"), *H200, dtype, m, n, k, batch,
                                  transposed)


@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
@pytest.mark.parametrize("m", [1, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 100, 128, 129])
def test_16_bit_few_rows_over_a_b_of_no_whole_vectors_stream_it_in_place(m, layout):
    """A 16-bit product of at most ``HALF_GEMV_MAX_M`` rows whose B's rows are no whole
    16-byte vectors (odd N with B N-major, odd K with B K-major) runs on SIMT's row-streaming
    kernel, reading every operand as it is (no copy, nothing staged): on FMA up to
    ``HALF_FMA_MAX_M`` rows (2 over a K-major B, none over an N-major one), on tensor cores
    (``Config.mma``) past them, in the fewest rows of either that hold M, fp32 partials
    exactly where it splits (the reduction then writes C).  More rows stay on sm90."""
    n, k = (4099, 4096) if layout[1] == "n" else (4096, 4097)
    work = _auto_plan(m, n, k, layout)
    major = "n" if layout[1] == "n" else "k"
    if m > simt.HALF_GEMV_MAX_M[major]:
        assert work.key.family == "sm90", work.key
        return
    assert isinstance(work, launch.Launch), work
    config = work.key.config
    assert work.key.family == "simt" and config.gemv and work.prep is None, work.key
    mma = m > simt.HALF_FMA_MAX_M[major]
    rows = simt.MMA_ROWS if mma else simt.GEMV_ROWS
    assert config.mma == mma and config.tile_m == next(r for r in rows if r >= m), config
    assert not work.transposed
    assert config.partials == (work.splits > 1) == (work.reduce is not None), work
    assert work.key.dtype == "float16" and work.key.align_b == 1


@pytest.mark.parametrize("m, n, k, layout, streams", [
    (96, 4097, 8192, "nn", True),     # 33 column tiles x 4 splits: 132 CTAs
    (80, 4096, 4097, "nt", True),     # 32 x 4: 128 CTAs, 97% of the SMs
    (128, 11007, 4096, "nn", False),  # 86 tiles, one split: 65% of the SMs
    (72, 6145, 14336, "tn", False),   # 49 x 2: 74%
    (128, 3316, 1024, "tn", False),   # 26 x 5 = 130 CTAs, but partials 1.25x B's bytes
    (64, 11007, 1024, "nn", True),    # 64 rows: two CTAs per SM, no fill rule
])
def test_16_bit_products_of_65_to_128_rows_stream_where_their_grid_fills_the_machine(
        m, n, k, layout, streams):
    """M 65-128 over a B of no whole vectors runs on one 128-row CTA per SM
    (``configs.simt.STREAM_FILL``, ``STREAM_PARTIALS``) where those CTAs fill 85% of an
    H200's SMs and their fp32 partials stay within a quarter of B's bytes, else on sm90 over
    a copy of B."""
    work = _auto_plan(m, n, k, layout)
    assert (work.key.family == "simt") == streams, (m, n, k, layout, work.key)
    if streams:
        config = work.key.config
        assert config.mma and work.prep is None and config.tile_m == (64 if m <= 64 else 128)
    else:
        assert work.prep is not None, work


def test_16_bit_products_that_tma_reads_or_of_more_rows_stay_on_tensor_cores():
    """The same products with B's rows whole vectors, with M past ``HALF_GEMV_MAX_M``, or with
    an M-major A over a K-major B (which the row-streaming kernel reads poorly) run on sm90."""
    most = simt.HALF_GEMV_MAX_M
    for m, n, k, layout in ((8, 4096, 4096, "nn"), (most["n"] + 1, 4099, 4096, "nn"),
                            (most["k"] + 1, 4096, 4097, "nt"),
                            (8, 4096, 4097, "tt"), (1, 4096, 4104, "nt")):
        work = _auto_plan(m, n, k, layout, "bfloat16")
        assert isinstance(work, launch.Launch) and work.key.family == "sm90", (m, n, k, work)


@pytest.mark.parametrize("layout", ["tn", "nt"])
def test_16_bit_few_columns_over_an_a_of_no_whole_vectors_stream_c_transposed(layout):
    """N of at most ``HALF_GEMV_MAX_M`` over an A the kernel cannot read with TMA (odd M with A
    M-major, odd K with A K-major): C^T = B^T A^T on the row-streaming kernel, through the
    workspace, where the transposed majors read well; an N-major B under a K-major A ("nn")
    would make B^T M-major over a K-major A^T, so that stays on sm90."""
    m, k = (4097, 4096) if layout[0] == "t" else (4096, 4097)
    work = _auto_plan(m, 3, k, layout)
    assert work.key.family == "simt" and work.transposed and work.key.config.partials, work
    assert work.reduce is not None and work.prep is None
    assert _auto_plan(4096, 3, 4097, "nn").key.family == "sm90"


@pytest.mark.parametrize("case", ["rows", "columns"])
def test_16_bit_row_streaming_in_pieces_keeps_the_row_streaming_kernel(case):
    """A 16-bit product dispatch puts on the row-streaming kernel whose batch cannot be merged
    (A a slice of a larger stack) runs in pieces, unsplit: every piece still gets a row-streaming
    configuration of 16-bit rows (the tiled SIMT kernel computes only fp32, and refused it at
    build time), untransposed where C^T would need a workspace (N <= 8 over an A of odd M)."""
    m, n, k = (4, 4099, 4097) if case == "rows" else (4097, 3, 64)
    stack = (3, 3, m, k) if case == "rows" else (3, 3, k, m)
    outer = (stack[1] * stack[2] * stack[3], stack[2] * stack[3])
    a_strides = outer + ((k, 1) if case == "rows" else (1, m))  # A[:, :2], A M-major if columns
    c_shape = (3, 2, m, n)
    swapped, work = launch._plan_launch(
        ("sm90", "sm80", "simt"), *H200, (3, 2, m, k), a_strides, (k, n), (n, 1), c_shape,
        launch.row_major_strides(c_shape), "float16", 2, (True, True, True),
        (False, False, False))
    assert isinstance(work, launch.Launch) and len(work.calls) == 3, work
    config = work.key.config
    assert work.key.family == "simt" and config.gemv and not config.partials, work.key
    assert not swapped and not work.transposed and work.reduce is None and work.splits == 1
    # (M 4097 over N 3: row tiles of the tensor-core kernel's most rows)
    expected = simt._half_gemv_config(m, work.key.b_major)
    assert (config.tile_m, config.mma) == (expected.tile_m, expected.mma), config
    assert simt.choose_config(m, n, k, 1, 132, math="bfloat16", majors=(work.key.a_major,
                                                                          work.key.b_major)).gemv


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_xla_route_streams_16_bit_rows_in_place_as_the_pointer_route_does(dtype):
    """Inside jit (``xla.xla_plan``: XLA's buffers are aligned, so the rows' lengths decide)
    a 16-bit product of few rows over B rows of no whole vectors, or of few columns over such
    A rows, runs what the pointer route runs on contiguous operands: the same family,
    configuration, split and orientation, with no padded copy (``need`` 1).  The products the
    pointer route keeps on tensor cores stay there in both (their schedules may differ: no
    stream-K inside jit)."""
    from cutematmul import xla

    shapes = [(m, 4099, 4096, "nn") for m in (1, 3, 8, 9)] + [
        (4, 2053, 3001, "tn"), (2, 4096, 4097, "nt"), (5, 4096, 4097, "nt"),
        (4097, 3, 4096, "tn"), (4096, 3, 4097, "nt"), (4096, 3, 4097, "nn"),
        (8, 4096, 4096, "nn"), (1, 4096, 4104, "nt")]
    for m, n, k, layout in shapes:
        work = _auto_plan(m, n, k, layout, dtype)
        plan = xla.xla_plan((9, 0), 132, dtype, "highest", "auto", m, n, k, 1,
                            layout[0] == "t", layout[1] == "t", True, True)
        assert plan.family.name == work.key.family, (m, n, k, layout, plan, work.key)
        if plan.family.name == "simt":
            assert (plan.key.config, plan.splits, plan.transposed) == (
                work.key.config, work.splits, work.transposed), (m, n, k, layout)
            assert plan.need == 1 and plan.copies == (None, None), plan


def test_simt_partials_flag_marks_exactly_the_schedules_through_the_workspace():
    """``Config.partials`` (fp32 partial sums into the workspace) is set on every SIMT schedule
    that splits K or runs transposed, and only there, fp32 or 16-bit."""
    shapes = [(1, 4096, 4096), (4096, 4, 4096), (1000, 1000, 1000), (16, 8192, 8192),
              (64, 8, 65536), (3, 5, 7)]
    for math in ("float32", "float16"):
        for m, n, k in shapes:
            for config, splits, transposed in simt.candidates(m, n, k, 1, 132, math=math):
                assert config.partials == (splits > 1 or transposed), (math, m, n, k, config)
                assert dispatch.through_workspace(config, splits, transposed) == config.partials


def test_a_transposed_row_streaming_launch_carries_the_reduction():
    """A 4096 x 6 fp32 product of a K-major B (x @ w.T with 6 rows of w) is planned as C^T on
    the row-streaming kernel, through the workspace, and passes the launch proof."""
    m, n, k = 4096, 6, 4096
    gemm = plan_gemm((m, k), (k, 1), (k, n), (1, k), (n, 1))  # b = w.T, w (n, k) row-major
    spans = [(0, m * k * 4), (0, n * k * 4), (0, m * n * 4)]
    resolved = launch._resolve(("simt",), H200[0], H200[1], gemm, "float32", 4,
                               (True, True, True), spans, (False, False, False))
    assert isinstance(resolved, launch.Launch)
    assert resolved.key.config.gemv and resolved.transposed and resolved.reduce is not None
    assert (resolved.key.a_major, resolved.key.b_major) == ("k", "k")


@pytest.mark.parametrize("shape", [(1, 4096, 4096), (4096, 4, 4096), (1000, 1000, 1000),
                                   (16, 8192, 8192), (8192, 8192, 8192), (512, 512, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_simt_dependent_launches_on_sm90_only(shape):
    """The row-streaming kernel and tiles of one CTA per SM are programmatic dependent launches
    on sm_90 (``configs.simt._pdl``), split or not (a launch in pieces); nothing is before
    sm_90, which lacks griddepcontrol (``configs.simt.for_capability``, applied by
    ``dispatch.schedule``)."""
    family = dispatch.FAMILIES["simt"]
    m, n, k = shape
    for capability, num_sms in (((9, 0), 132), ((8, 0), 108)):
        for key in (dispatch.schedule(family, capability, num_sms, "float32", "k", "n",
                                      (16, 16, 16), m, n, k, 1)[0],
                    dispatch.schedule(family, capability, num_sms, "float32", "k", "n",
                                      (16, 16, 16), m, n, k, 1, split_k=False)[0]):
            config = key.config
            want = capability >= (9, 0) and (config.gemv or config.min_blocks == 1)
            assert config.pdl == want and config.name.endswith("_pdl") == want, key
    assert simt.choose_schedule(8192, 8192, 8192, 1, 132)[0].pdl  # the 128x256 tile
    assert simt.choose_schedule(1, 4096, 4096, 1, 132)[0].pdl  # row-streaming
    assert not simt.choose_schedule(512, 512, 512, 1, 132)[0].pdl  # 4 CTAs per SM
    # A recorded schedule keeps what it was timed with, but never PDL before sm_90.
    config = replace(simt.gemv_config(1), partials=True)
    for capability, want in (((9, 0), True), ((8, 0), False)):
        key, _, _ = dispatch.schedule(family, capability, 108, "float32", "k", "n", (16, 16, 16),
                                      1, 4096, 4096, 1, tuned=(config, 4, False))
        assert key.config.pdl == want and key.config.tile_m == 1, key


def test_deep_splits_only_where_16_splits_leave_sms_idle():
    """A few output tiles and a long K split past ``waves.MAX_SPLITS`` (each deep split keeping
    ``Rate.deep_k_tiles`` K-tiles); products whose 16-way splits already outnumber the SMs, the
    XLA route and a capped call do not."""
    # The SIMT kernel's tile or two split on until the CTAs make two per SM.
    splits = simt.choose_schedule(64, 8, 65536, 1, 132)[1]  # two 32 x 32 tiles
    assert waves.DEEP_SPLITS < splits <= 2 * 132 // 2, splits
    assert simt.choose_schedule(20, 82, 94856, 1, 132)[1] > 4 * waves.DEEP_SPLITS - 8
    config, splits, _ = simt.choose_schedule(78, 310, 45920, 1, 132)  # six tiles: as before
    assert (config.tile_m, config.tile_n, splits) == (64, 128, waves.DEEP_SPLITS)
    assert simt.choose_schedule(16, 8, 8192, 1, 132)[1] > waves.MAX_SPLITS
    assert sm90.choose_schedule(64, 8, 65536, 1, 132)[1] > waves.MAX_SPLITS
    assert sm90.choose_schedule(64, 8, 8192, 1, 132)[1] <= waves.MAX_SPLITS, "8 K-tiles a split"
    assert simt.choose_schedule(32, 4096, 16384, 1, 132)[1] <= waves.MAX_SPLITS
    assert simt.choose_schedule(64, 8, 65536, 1, 132, max_splits=8)[1] <= 8
    for math in ("float16", "tf32"):
        config, splits, _ = sm90.choose_schedule(64, 8, 65536, 1, 132, math=math)
        k_tiles = -(-65536 // config.tile_k)
        assert k_tiles // splits >= 8, (math, splits)
    assert waves.split_choices(64, 8, 65536, 1, 64, sm90._RATES[16][1], tiles=200,
                               num_sms=132)[-1] == waves.MAX_SPLITS


def test_the_default_precompile_set_holds_the_small_n_narrow_kernels_and_their_reduction():
    """The default shapes include few-column products (``aot.default_shapes``' tall ones): the
    narrow untransposed kernel the launch takes for them, in both B majors, and the reduction
    it writes through, are precompiled."""
    from cutematmul import aot

    keys = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float16",)))
    for layout, majors in (("kn", ("k", "n")), ("kk", ("k", "k"))):
        config, splits, transposed = sm90.choose_schedule(4096, 16, 4096, 1, 132, majors=majors)
        assert config.partials and config.tile_n == 16 and not transposed
        assert any(k.family == "sm90" and (k.a_major, k.b_major) == majors and k.config == config
                   for k in keys), (layout, config)
    assert dispatch.reduce_key((9, 0), "float16") in keys


def test_tn_products_price_the_cooperative_128x128_tile_down():
    """With A M-major and B N-major the cooperative 128 x 128 tile is priced at
    ``configs.sm90._ACROSS_SQUARE``'s fraction: tn products the model would put on it take a
    wider tile (10 held-out products 1.11x faster), while short-K tn products keep the pingpong
    128 x 128 tile, and the other layouts keep their price."""
    tn = ("m", "n")
    unscaled = dict(sm90._space(3392, 3712, 5376, 1, 132, 16, "bfloat16", ("k", "n")).tiles)
    scaled = dict(sm90._space(3392, 3712, 5376, 1, 132, 16, "bfloat16", tn).tiles)
    square, factor = sm90._ACROSS_SQUARE
    other = sm90._SQUARE_IN_CLUSTERS[1]  # the other layouts' price of it in clusters
    assert factor < 1 and scaled[square][0] == pytest.approx(unscaled[square][0] / other * factor)
    pingpong = sm90._PINGPONG_TILE[0]
    short = [dict(sm90._space(3392, 3712, 1024, 1, 132, 16, "bfloat16", majors).tiles)
             for majors in (("k", "n"), tn)]
    assert short[1][pingpong][0] == short[0][pingpong][0]
    for shape in [(3392, 3712, 5376), (2624, 3104, 984), (1720, 3552, 2720)]:
        config = sm90.choose_schedule(*shape, 1, 132, math="bfloat16", majors=tn)[0]
        assert config.tile_n > 128 and not config.pingpong, (shape, config)
    config = sm90.choose_schedule(4096, 4096, 512, 1, 132, majors=tn)[0]
    assert config.pingpong and (config.tile_m, config.tile_n) == (128, 128), config


def test_one_product_prices_the_wide_unclustered_variants_down():
    """The odd-row unclustered 128 x 192 and 128 x 256 variants are priced at
    ``configs.sm90._UNCLUSTERED_SINGLE_EFFICIENCY`` for one product (held out: 50 products 1.08x
    faster, then 78 products 1.09x) and keep the unclustered tile's price in a batch, where
    moving off them lost."""
    single = dict(sm90._space(7488, 5952, 12032, 1, 132, 16, "bfloat16", ("k", "n")).tiles)
    batched = dict(sm90._space(7488, 5952, 12032, 2, 132, 16, "bfloat16", ("k", "n")).tiles)
    for tile in [(128, 192), (128, 256)]:
        variant = (*tile, sm90._UNCLUSTERED)
        assert single[variant][0] == sm90._UNCLUSTERED_SINGLE_EFFICIENCY[tile] < 1
        assert batched[variant][0] == sm90._TILE_EFFICIENCY[tile]
    for majors in LAYOUT_MAJORS.values():
        for shape, math in [((7488, 5952, 12032, 1), "bfloat16"),
                            ((888, 3128, 2256, 1), "float16")]:
            config = sm90.choose_schedule(*shape, 132, math=math, majors=majors)[0]
            assert config.cluster_m == 2 and config.tile_n > 192, (shape, majors, config)
        config = sm90.choose_schedule(312, 1136, 152, 22, 132, majors=majors)[0]
        assert (config.tile_n, config.cluster_m) == (192, 1), (majors, config)


# ----------------------------------------------------------------------- pingpong (short K)

SHORT_K = [(4096, 4096, 512), (4096, 4096, 256), (8192, 8192, 512), (2048, 8192, 512),
           (6144, 6144, 384), (1024, 1024, 512, 32)]


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", SHORT_K, ids=lambda s: "x".join(map(str, s)))
def test_short_k_16bit_products_run_pingpong_unsplit(math, shape):
    """Many output tiles of a short K: each tile's epilogue is a large part of its work, and the
    pingpong kernel (configs.sm90._PINGPONG_TILE) hides it behind the other warpgroup's math."""
    m, n, k, *batch = shape
    for majors in LAYOUT_MAJORS.values():
        config, splits, transposed = sm90.choose_schedule(m, n, k, batch[0] if batch else 1, 132,
                                                          math=math, majors=majors)
        assert config.pingpong and (config.tile_m, config.tile_n) == (128, 128), config
        assert splits == 1 and not transposed and not config.partials and config.cluster_m == 2
        config.validate()


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
def test_pingpong_is_offered_only_up_to_its_longest_k(math):
    """Past ``configs.sm90._PINGPONG_MAX_K`` neither the model nor the tuner sees the pingpong
    tile (held out: 28 products 1.04x faster, bf16 tn 9024x6976x10752 1.32x); up to it, it is
    priced in every layout."""
    longest = sm90._PINGPONG_MAX_K
    for majors in LAYOUT_MAJORS.values():
        for m, n, k in [(9024, 6976, 10752), (11648, 3968, 9984), (4096, 4096, longest + 64)]:
            assert not any(c.pingpong for c, _, _ in
                           sm90.candidates(m, n, k, 1, 132, math=math, majors=majors)), (m, n, k)
        for k, offered in [(longest, True), (longest + 64, False)]:
            tiles = dict(sm90._space(4096, 4096, k, 1, 132, 16, math, majors).tiles)
            assert (sm90._PINGPONG_TILE[0] in tiles) == offered, (k, majors)


@pytest.mark.parametrize("math", ["float16", "bfloat16", "tf32", "tf32x3"])
@pytest.mark.parametrize("shape", [(8192, 8192, 8192), (4096, 14336, 4096), (4096, 4096, 4096),
                                   (1536, 1536, 1536), (1000, 1000, 1000), (128, 8192, 8192),
                                   (64, 64, 64), (4096, 4096, 1024)],
                         ids=lambda s: "x".join(map(str, s)))
def test_long_k_small_and_fp32_products_stay_cooperative(math, shape):
    """Pingpong's 128 x 128 tiles read more shared memory per flop than 128 x 256, so it loses
    once K is long; a product of a few tiles has no next tile to hide an epilogue behind; and
    the kernel is 16-bit only."""
    config, _, _ = sm90.choose_schedule(*shape, 1, 132, math=math)
    assert not config.pingpong, (shape, config)
    for candidate, splits, _ in sm90.candidates(*shape, 1, 132, math=math):
        assert not candidate.pingpong or (math in ("float16", "bfloat16") and splits == 1
                                          and not candidate.streamk), candidate


def test_pingpong_candidates_and_config_checks():
    """The tuner also times pingpong unclustered; stream-K never takes a pingpong tile; the
    configuration rejects what the kernel is not built for; the waves rate caps its splits."""
    found = sm90.candidates(4096, 4096, 512, 1, 132)
    assert found[0][0].pingpong and found[0][0].cluster_m == 2
    assert any(c.pingpong and c.cluster_m == 1 for c, _, _ in found)
    assert sm90.Config(tile_m=128, tile_n=128, pingpong=True).name.endswith("_pingpong")
    assert sm90.Config(tile_m=128, tile_n=128, pingpong=True).consumer_warpgroups == 2
    assert sm90.Config(tile_m=64, tile_n=128, pingpong=True).consumer_warpgroups == 2
    # Two epilogue rings of 64-row sub-tiles: 6 stages of 32 KiB fit, as in the cooperative tile.
    assert sm90.Config(tile_m=128, tile_n=128, pingpong=True).ab_stages(2) == 6
    for bad in ({"tile_n": 256}, {"streamk": True}):
        with pytest.raises(ValueError, match="pingpong"):
            sm90.Config(tile_m=128, **{"tile_n": 128, **bad}, pingpong=True).validate()
    rate = sm90._RATES[16][1]._replace(max_splits=1)
    assert waves.split_choices(64, 8, 65536, 1, 64, rate, tiles=1, num_sms=132) == range(1, 2)


def test_a_kernel_that_hides_epilogues_still_pays_the_last_one():
    """``Rate.wave_seconds`` replaces WAVE_SECONDS on every wave but the last, whose epilogue
    has no next tile's math to hide behind: one wave costs the same either way."""
    rate = sm90._RATES[16][1]
    hidden = rate._replace(wave_seconds=0.0)

    def cost(r, rows):  # rows x 11 tiles of 128 x 128, compute-bound
        return waves.estimate(128 * rows, 128 * 11, 8192, 1, 132, 128, 128, 64, 1, 1.0, r)

    assert cost(hidden, 12) == cost(rate, 12)  # one wave
    assert abs(cost(rate, 24) - cost(hidden, 24) - waves.WAVE_SECONDS) < 1e-12


def test_tall_tile_configuration():
    """256-row tiles (built, compile-checked, measured in the 52nd session): never the model's
    pick; the tuner times 256 x 160 and 256 x 192 in 2x1 clusters where the pick is unsplit and
    M spans two tall tiles, nothing tall for a skinny M, a split pick or TF32; each of the two
    consumer warpgroups owns 128 rows; the epilogue stores 128-row sub-tiles; 160 and 192 wide
    three ring stages deep; wider than 192, stream-K and pingpong are refused."""
    from cutematmul.configs.sm90 import Config

    for shape in [(8192, 8192, 8192), (4096, 14336, 4096), (1376, 3208, 2912)]:
        found = sm90.candidates(*shape, 1, 132)
        assert found[0][0].tile_m <= 128, shape
        tall = [(c.tile_n, c.cluster_m, s) for c, s, _ in found if c.tile_m == 256]
        assert tall == [(160, 2, 1), (192, 2, 1)], (shape, tall)
    for shape, math in [((200, 4096, 4096), "float16"), ((64, 1024, 16384), "float16"),
                        ((4096, 4096, 4096), "tf32")]:
        found = sm90.candidates(*shape, 1, 132, math=math)
        assert all(c.tile_m <= 128 for c, _, _ in found), (shape, math)
    tall = Config(tile_m=256, tile_n=128)
    tall.validate()
    assert (tall.consumer_warpgroups, tall.epi_m, tall.ab_stages(2)) == (2, 128, 4)
    assert (Config(tile_m=128).consumer_warpgroups, Config(tile_m=64).epi_m) == (2, 64)
    for width in (160, 192):
        wide = Config(tile_m=256, tile_n=width, epi_n=32, cluster_m=2)
        wide.validate()
        assert (wide.consumer_warpgroups, wide.epi_m, wide.ab_stages(2)) == (2, 128, 3)
    for bad in ({"tile_n": 256}, {"tile_n": 224}, {"streamk": True}, {"pingpong": True}):
        with pytest.raises(ValueError, match="tile_m=256|pingpong"):
            Config(tile_m=256, **{"tile_n": 128, **bad}).validate()


def test_simt_tiles_of_few_rows_give_way_to_taller_ones_when_b_is_k_major():
    """A K-major B is read 4 bytes per load and transposed once per tile, so with B K-major (as
    the kernel reads it) the 16-, 32- and 64-row tiles lose part of their efficiency
    (``simt._K_MAJOR_B``): M = 75 takes a 128-row tile, not the 32-row one it takes with B
    N-major; the 128-row tiles keep theirs."""
    for m, n, k in ((75, 2864, 3300), (81, 2424, 3524), (75, 12000, 8192)):
        assert simt.choose_schedule(m, n, k, 1, 132, majors=("m", "k"))[0].tile_m == 128
        assert simt.choose_schedule(m, n, k, 1, 132, majors=("k", "n"))[0].tile_m == 32
    _, n_major = simt._space(75, 2864)
    _, k_major = simt._space(75, 2864, "k")
    for tile, (efficiency, _) in n_major.items():
        factor = simt._K_MAJOR_B_TILES.get(tile, simt._K_MAJOR_B[tile[0]])
        assert k_major[tile][0] == pytest.approx(efficiency * factor)
    assert k_major[(128, 256)][0] == n_major[(128, 256)][0]


# ------------------------------------------------- skinny 16-bit products computed swapped

SWAP_M = [129, 150, 160, 176, 192, 200, 224]
SWAP_NK = [(4096, 4096), (4096, 14336), (8192, 8192), (10240, 8192), (12288, 12288),
           (16384, 16384), (6264, 6264), (10520, 10520)]


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("m", SWAP_M)
@pytest.mark.parametrize("n, k", SWAP_NK)
def test_skinny_16bit_products_of_m_129_to_224_run_swapped_on_one_tile_column(math, m, n, k):
    """All of M in one tile of the narrowest width that holds it: 160, 192 or 224, and with A
    K-major data-parallel the narrowest multiple of 16 (144, 176, 208 too); the long N along
    64-row tiles where they fit one wave (else 128-row), unsplit; stream-K (on the 160-224
    widths) in 2x1 clusters where the tiles fill under 3/4 of the SMs over at least 128
    K-tiles; A K-major unclustered, but in 2x1 clusters where its rows are no whole 128-byte
    lines (K of 6264 and 10520).  The XLA route (no workspace) keeps the data-parallel
    kernel."""
    config, splits, transposed = sm90.choose_schedule(m, n, k, 1, 132, math=math)
    config.validate()
    assert config.swap and splits == 1 and not transposed and not config.partials
    coarse = min(w for w in (160, 192, 224) if w >= m)
    assert config.tile_n == (coarse if config.streamk else -(-m // 16) * 16), config
    assert config.tile_m == (64 if -(-n // 64) <= 132 else 128), config
    tiles = -(-n // config.tile_m)
    streamk = tiles < 0.75 * 132 and k // 64 >= 128
    lines = k * 2 % 128 == 0
    assert config.streamk == streamk, config
    assert config.cluster_m == (2 if streamk or not lines else 1), config
    assert config.pdl != streamk
    unsplit = sm90.choose_config(m, n, k, 1, 132, math=math)
    assert unsplit.swap and not unsplit.streamk and not unsplit.partials, unsplit
    assert unsplit.tile_m == config.tile_m and unsplit.tile_n == -(-m // 16) * 16
    # A stored M-major runs swapped up to M = 192, in 2x1 clusters (the A tile multicast), on
    # the 160-224 widths; with rows of no whole 32-byte sectors (M no multiple of 16) on
    # 128-row tiles.
    across = sm90.choose_schedule(m, n, k, 1, 132, math=math, majors=("m", "n"))[0]
    assert across.swap == (m <= 192), across
    if across.swap:
        assert across.cluster_m == 2 and across.tile_n == coarse
        assert across.tile_m == (config.tile_m if m % 16 == 0 else 128), across


@pytest.mark.parametrize("case", [
    dict(m=128, n=8192, k=8192), dict(m=128, n=12288, k=12288), dict(m=120, n=8192, k=8192),
    dict(m=96, n=8192, k=8192, majors=("m", "n")), dict(m=96, n=2048, k=8192),
    dict(m=96, n=20000, k=8192), dict(m=256, n=8192, k=8192),
    dict(m=240, n=16384, k=4096), dict(m=160, n=2048, k=8192), dict(m=192, n=8192, k=8192,
                                                                     math="tf32"),
    dict(m=192, n=8192, k=8192, math="tf32x3"), dict(m=192, n=8192, k=8192, c_aligned=False),
    dict(m=160, n=192, k=8192), dict(m=8192, n=160, k=8192)], ids=str)
def test_products_outside_the_skinny_swap_class_keep_their_orientation(case):
    """M a whole number of 128-row tiles (128, 256), M of 65-127 where N's 64-row tiles fit
    one wave (but A K-major with M of 65-96: ``_SWAP_ODD_ROWS``) or its 128-row ones do not,
    past 224 (w 256: no gain), N too short to fill half the SMs with 64-row tiles, fp32
    inputs, a C that TMA cannot store, and long-M products: not swapped."""
    case = dict(case)
    m, n, k = case.pop("m"), case.pop("n"), case.pop("k")
    config = sm90.choose_schedule(m, n, k, 1, 132, **case)[0]
    assert not config.swap, (m, n, k, case, config)


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("majors", [("k", "n"), ("m", "n"), ("k", "k"), ("m", "k")])
@pytest.mark.parametrize("m, n, k, batch", [(67, 15792, 15224, 1), (94, 14736, 7336, 1),
                                            (120, 16152, 5400, 1), (65, 8500, 4096, 1),
                                            (100, 4400, 4096, 2)])
def test_skinny_16bit_products_of_m_65_to_127_run_swapped_on_128_row_tiles(math, majors, m, n,
                                                                          k, batch):
    """One tile width holds M; N's 128-row tiles (times the batch) fit one wave where its
    64-row ones would not: 128-row tiles swapped in 2x1 clusters, data-parallel, on the XLA
    route too; 128 wide, or with A K-major and M <= 112 the narrowest of 80, 96, 112."""
    config, splits, transposed = sm90.choose_schedule(m, n, k, batch, 132, math=math,
                                                      majors=majors)
    config.validate()
    assert config.swap and splits == 1 and not transposed, config
    width = next(w for w in (80, 96, 112) if w >= m) if majors[0] == "k" and m <= 112 else 128
    assert (config.tile_m, config.tile_n, config.cluster_m) == (128, width, 2), config
    assert not config.partials and not config.streamk and config.pdl
    assert sm90.choose_config(m, n, k, batch, 132, math=math, majors=majors) == config


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("b_major", ["n", "k"])
@pytest.mark.parametrize("m, n, k, batch", [(69, 8024, 7704, 1), (72, 5120, 5120, 1),
                                            (96, 8448, 8192, 1), (88, 4384, 7792, 1),
                                            (65, 3808, 13104, 1), (80, 2048, 2000, 2)])
def test_skinny_16bit_products_of_m_65_to_96_with_a_k_major_run_swapped_on_64_row_tiles(
        math, b_major, m, n, k, batch):
    """A K-major, N's 64-row tiles (times the batch) between 0.45 and 1 wave: swapped on
    64-row tiles 80 or 96 wide, 2x1 clusters where A's rows are no whole 128-byte lines,
    data-parallel, on the XLA route too.  A M-major, or M of 97-127 (measured no gain on the
    112-wide tile), keep the untransposed schedule."""
    majors = ("k", b_major)
    config, splits, transposed = sm90.choose_schedule(m, n, k, batch, 132, math=math,
                                                      majors=majors)
    config.validate()
    assert config.swap and splits == 1 and not transposed, config
    width = next(w for w in (80, 96) if w >= m)
    lines = k * 2 % 128 == 0
    assert (config.tile_m, config.tile_n, config.cluster_m) == (64, width, 1 if lines else 2)
    assert not config.partials and not config.streamk and config.pdl
    assert sm90.choose_config(m, n, k, batch, 132, math=math, majors=majors) == config
    across = sm90.choose_schedule(m, n, k, batch, 132, math=math, majors=("m", b_major))[0]
    assert not across.swap, across
    for wider in (100, 112, 120):
        other = sm90.choose_schedule(wider, n, k, batch, 132, math=math, majors=majors)[0]
        assert not other.swap, (wider, other)
    assert (config, splits, transposed) in sm90.candidates(m, n, k, batch, 132, math=math,
                                                           majors=majors)


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("majors", [("k", "n"), ("m", "n"), ("k", "k"), ("m", "k")])
@pytest.mark.parametrize("m, n, k, batch", [(47, 5960, 5960, 1), (33, 13848, 13848, 1),
                                            (63, 8192, 8192, 1), (36, 4528, 8608, 1),
                                            (57, 9000, 1000, 1), (40, 2048, 1024, 4)])
def test_skinny_16bit_products_of_m_33_to_63_run_swapped_on_64_wide_tiles(math, majors, m, n,
                                                                         k, batch):
    """All of M in one 64-wide tile, N along 64-row tiles where they fit one wave (else
    128-row, whatever A's layout), in 2x1 clusters (the A tile multicast), data-parallel, on
    the XLA route too."""
    config, splits, transposed = sm90.choose_schedule(m, n, k, batch, 132, math=math,
                                                      majors=majors)
    config.validate()
    assert config.swap and splits == 1 and not transposed, config
    tile_m = 64 if -(-n // 64) * batch <= 132 else 128
    assert (config.tile_m, config.tile_n, config.cluster_m) == (tile_m, 64, 2), config
    assert not config.partials and not config.streamk and config.pdl
    assert sm90.choose_config(m, n, k, batch, 132, math=math, majors=majors) == config


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("b_major", ["n", "k"])
@pytest.mark.parametrize("m, n, k, batch, rows", [(17, 8192, 8192, 1, 128),
                                                  (22, 4880, 7168, 1, 64),
                                                  (30, 13848, 16200, 1, 128),
                                                  (31, 4096, 4096, 1, 64),
                                                  (24, 2048, 4096, 2, 64),
                                                  (24, 7168, 4096, 1, 128)])
def test_skinny_16bit_products_of_m_17_to_31_with_a_m_major_run_swapped_on_32_wide_tiles(
        math, b_major, m, n, k, batch, rows):
    """A stored M-major in rows of no whole 32-byte sectors: all of M in one 32-wide swapped
    tile (``_swapped_small_m``), 128 rows (the sector rule) where N's 128-row tiles fill
    ``_SWAP_SMALL_FILL`` of the SMs (46 on 132: N = 4096 makes 32), else 64
    (``_SWAP_NARROW_ROWS``), 2x1 (the A tile multicast), no workspace (so on the XLA route
    too); a short N (under ``_SWAP_SMALL_FILL`` of the SMs in 64-row tiles) transposed
    through the workspace; M of 16 on a 16-wide tile.  The 64-wide tiles of M 33-63 stay
    among the tuner's candidates."""
    majors = ("m", b_major)
    for splits in (waves.MAX_SPLITS, 1):
        config, splits, transposed = sm90.choose_schedule(m, n, k, batch, 132, splits,
                                                          math=math, majors=majors)
        config.validate()
        assert config.swap and splits == 1 and not transposed, config
        assert (config.tile_m, config.tile_n, config.cluster_m) == (rows, 32, 2), config
        assert not config.partials and not config.streamk and config.pdl
    kept = sm90.choose_schedule(m, n, k, batch, 132, math=math, majors=("k", b_major))
    assert kept[0].swap and kept[0].tile_n == 32 and not kept[2], kept
    other = sm90.choose_schedule(m, 1024, k, 1, 132, math=math, majors=majors)
    assert not other[0].swap and other[2], other
    other = sm90.choose_schedule(16, n, k, batch, 132, math=math, majors=majors)
    assert other[0].swap and other[0].tile_n == 16 and not other[2], other
    found = sm90.candidates(m, n, k, batch, 132, math=math, majors=majors)
    assert (config, 1, False) in found
    assert any(c.swap and c.tile_n == 64 for c, _, _ in found), found


@pytest.mark.parametrize("math", ["float16", "bfloat16"])
@pytest.mark.parametrize("majors", [("k", "n"), ("k", "k"), ("m", "n"), ("m", "k")])
@pytest.mark.parametrize("m, n, k, batch", [(1, 8192, 8192, 1), (8, 4096, 4096, 1),
                                            (16, 14336, 4096, 1), (32, 8192, 8192, 1),
                                            (24, 3072, 4100, 1), (32, 1024, 1024, 8),
                                            (9, 12000, 4000, 1), (4, 3400, 9000, 1),
                                            (2, 3000, 4000, 1)])
def test_small_m_16bit_products_over_a_long_n_run_swapped_on_the_narrow_tiles(math, majors, m,
                                                                              n, k, batch):
    """M <= 32 where N's 64-row tiles (over a long K, the tiles that would run; times the batch)
    fill ``_SWAP_SMALL_FILL`` of the SMs: swapped, all of M in one 16- or 32-wide tile, 64 rows
    where those tiles fit one wave and an M-major A's rows are whole 32-byte sectors, else 128;
    2x1 with A M-major or in rows of no whole 128-byte lines; unsplit, C stored through its
    transpose (no workspace), the XLA route alike; a tuner candidate."""
    across = majors[0] == "m"
    row_tiles = -(-n // 64) * batch
    whole = not across or m * 2 % 32 == 0
    # 32 wide, 128-row tiles under the fill: 64 rows all the same (_SWAP_NARROW_ROWS)
    few = m > 16 and -(-n // 128) * batch < sm90._SWAP_SMALL_FILL * 132
    tile_m = 64 if row_tiles <= 132 and (whole or few) else 128
    for max_splits in (waves.MAX_SPLITS, 1):
        config, splits, transposed = sm90.choose_schedule(m, n, k, batch, 132, max_splits,
                                                          math=math, majors=majors)
        config.validate()
        # Over a long K the fill counts the tiles that would run: 128-row ones (16 wide over an
        # M-major A of no whole sectors) under it split transposed through the workspace.
        counted = tile_m if -(-k // 64) >= sm90._SWAP_FILL_K_TILES else 64
        if max_splits > 1 and -(-n // counted) * batch < sm90._SWAP_SMALL_FILL * 132:
            assert transposed and config.partials and splits > 1, config
            continue
        assert config.swap and splits == 1 and not transposed, config
        assert not config.partials and not config.streamk and config.pdl, config
        assert config.tile_n == (16 if m <= 16 else 32), config
        assert config.tile_m == tile_m, config
        assert config.cluster_m == (2 if across or k * 2 % 128 else 1), config
        assert config.epi_n == config.tile_n
        # Few 64-row tiles keep more bytes in flight (_NARROW_RING_STAGES).
        deep = config.tile_m == 64 and row_tiles <= sm90._NARROW_RING_FILL * 132
        assert config.stage_count(2) == (sm90._NARROW_RING_STAGES if deep else 8), config
    assert (config, 1, False) in sm90.candidates(m, n, k, batch, 132, math=math, majors=majors)
    # N's tiles under the fill: transposed and split through the workspace; the XLA route
    # (none) still swaps.
    short = sm90.choose_schedule(m, 1024, 8192, 1, 132, math=math, majors=majors)
    assert short[2] and short[0].partials and short[1] > 1, short
    assert sm90.choose_schedule(m, 1024, 8192, 1, 132, 1, math=math, majors=majors)[0].swap


@pytest.mark.parametrize("majors", [("k", "n"), ("m", "n"), ("k", "k")])
def test_few_narrow_swapped_tiles_take_the_deeper_ring(majors):
    """A small M's 64-row swapped narrow tiles take ``_NARROW_RING_STAGES`` where N's tiles
    fill at most ``_NARROW_RING_FILL`` of the SMs, the default ring above it and on 128-row
    tiles; wider swapped tiles keep the default; the tuner's other heights fit their ring."""
    few = sm90.choose_schedule(24, 4096, 14336, 1, 132, majors=majors)[0]
    assert few.swap and few.tile_m == 64 and few.stages == sm90._NARROW_RING_STAGES, few
    assert few.stage_count(2) == sm90._NARROW_RING_STAGES
    many = sm90.choose_schedule(24, 6144, 8192, 1, 132, majors=majors)[0]
    assert many.swap and many.tile_n == 32 and many.stages == 0, many
    assert many.stage_count(2) == 8
    wide = sm90.choose_schedule(48, 4096, 8192, 1, 132, majors=majors)[0]
    assert wide.swap and wide.tile_n == 64 and wide.stages == 0, wide
    for shape in ((24, 4096, 14336), (24, 6144, 8192)):
        found = [c for c, _, _ in sm90.candidates(*shape, 1, 132, majors=majors)]
        for config in found:
            config.validate()  # a 128-row tile would not fit 12 stages
            if config.stages:
                assert config.tile_m == 64 and config.tile_n <= 32, config
        # The tuner times 64-row narrow tiles with either ring, whatever the fill.
        deep = {c.cluster_m for c in found if c.swap and c.tile_n == 32 and c.tile_m == 64
                and c.stages == sm90._NARROW_RING_STAGES}
        assert deep == {1, 2}, found


@pytest.mark.parametrize("m, n, k", [(32, 2048, 8192), (48, 2048, 8192), (63, 3000, 1024),
                                     (48, 150, 8192), (64, 8192, 8192), (64, 16384, 4096)])
def test_m_of_33_to_64_with_a_short_n_or_m_of_32_or_64_is_not_swapped(m, n, k):
    """N's 64-row tiles fill under 0.45 of the SMs, or N under 4 M, or M = 64 (no padded rows):
    the one-row tiles (64 x 64, 64 x 128, split where K is long); M of 32 or less over such a
    short N runs transposed through the workspace."""
    config, splits, transposed = sm90.choose_schedule(m, n, k, 1, 132)
    assert not config.swap and transposed == (m <= 32), (config, splits, transposed)


def test_a_batch_of_products_with_short_n_is_not_swapped():
    """A batch fills the SMs with 64-row tiles of N, but N under 4 M would leave them mostly
    empty (N = 32 on 64 rows): not swapped; a batch of long N is."""
    assert not sm90.choose_schedule(160, 32, 4096, 64, 132)[0].swap
    assert not sm90.choose_schedule(160, 512, 4096, 16, 132)[0].swap
    assert sm90.choose_schedule(160, 2048, 1024, 4, 132)[0].swap


def test_a_skinny_swapped_launch_keeps_the_product_majors_and_stores_c_itself():
    """The kernel swaps A and B itself: the key holds the product's majors and alignments,
    no reduction; a stream-K schedule carries its workspace."""
    for (m, n, k), streamk in (((192, 8192, 8192), False), ((160, 4096, 14336), True)):
        gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))
        spans = [(0, m * k * 2), (0, k * n * 2), (0, m * n * 2)]
        resolved = launch._resolve(("sm90", "sm80"), H200[0], H200[1], gemm, "float16", 2,
                                   (True, True, True), spans, (False, False, False))
        key = resolved.key
        assert key.config.swap and (key.a_major, key.b_major) == ("k", "n"), key
        assert resolved.reduce is None and not resolved.transposed
        assert key.config.streamk == streamk and (resolved.streamk is not None) == streamk
        assert resolved.splits == 1


def test_skinny_candidates_hold_both_tile_heights_clusters_streamk_and_the_untransposed_pick():
    found = sm90.candidates(192, 8192, 8192, 1, 132)
    assert found[0] == sm90.choose_schedule(192, 8192, 8192, 1, 132)
    swapped = [(c.tile_m, c.cluster_m, c.streamk) for c, s, t in found if c.swap]
    assert sorted(swapped) == [(64, 1, False), (64, 2, False), (64, 2, True), (128, 1, False),
                               (128, 2, False), (128, 2, True)]
    assert any(not c.swap for c, _, _ in found)
    for config, _, _ in found:
        config.validate()
    # Without the workspace (the XLA route) there is no stream-K to time.
    assert not [c for c, _, _ in sm90.candidates(192, 8192, 8192, 1, 132, max_splits=1)
                if c.streamk]


@pytest.mark.parametrize("m", [8, 17, 24, 32])
def test_small_m_candidates_include_the_swapped_tiles(m):
    """A small M over a short N runs transposed through the workspace; the tuner also times the
    swapped tiles all of M wide (16 or 32) and, for M of 17-32, the 64-wide tiles of M 33-63
    (64 and 128 rows, 1x1 and 2x1; the 64-row narrow ones with either ring, the 64-wide ones
    stream-K too: ``_swapped_variants``), which need no workspace; fp32 and a C TMA cannot
    store through its transpose keep the list without them."""
    found = sm90.candidates(m, 2560, 8192, 1, 132)
    assert found[0][2] and found[0][0].partials, found[0]  # the pick: transposed
    width = 16 if m <= 16 else 32
    deep = sm90._NARROW_RING_STAGES
    for w in (width, 64) if m > 16 else (width,):
        swapped = sorted((c.tile_m, c.cluster_m, c.stages, c.streamk) for c, s, t in found
                         if c.swap and c.tile_n == w and s == 1 and not t and not c.partials)
        plain = [(64, 1, 0, False), (64, 2, 0, False), (128, 1, 0, False), (128, 2, 0, False)]
        extra = ([(64, 1, deep, False), (64, 2, deep, False)] if w < 64
                 else [(64, 2, 0, True), (128, 2, 0, True)])
        assert swapped == sorted(plain + extra), (w, swapped)
    if m <= 16:
        assert not [c for c, _, _ in found if c.swap and c.tile_n == 64], found
    for c, _, _ in found:
        c.validate()
    for kwargs in ({"math": "tf32"}, {"c_aligned": False}):
        args = {"m": m, "n": 2560, "k": 8192, "batch": 1, "num_sms": 132, **kwargs}
        assert not [c for c, _, _ in sm90.candidates(**args) if c.swap and c.tile_n <= 64]


def test_fine_swapped_widths_are_offered_beside_the_width_they_replace():
    """M of 200 (A K-major) runs on 208-wide tiles; the tuner also times the 224-wide ones it
    replaces, and stream-K on 224 only (``configs.sm90._FINE_N``)."""
    found = sm90.candidates(200, 8192, 8192, 1, 132)
    assert found[0][0].tile_n == 208 and found[0][0].epi_n == 16
    swapped = sorted((c.tile_n, c.tile_m, c.cluster_m, c.streamk) for c, _, _ in found if c.swap)
    assert swapped == [(208, 64, 1, False), (208, 64, 2, False), (208, 128, 1, False),
                       (208, 128, 2, False), (224, 64, 1, False), (224, 64, 2, False),
                       (224, 64, 2, True), (224, 128, 1, False), (224, 128, 2, False),
                       (224, 128, 2, True)]
    for width in (144, 176, 208):
        with pytest.raises(ValueError, match="swapped"):
            sm90.Config(tile_m=128, tile_n=width, epi_n=16).validate()
        with pytest.raises(ValueError, match="stream-K"):
            sm90.Config(tile_m=64, tile_n=width, epi_n=16, swap=True, streamk=True).validate()


@pytest.mark.parametrize("m, n, k, majors, streamk", [
    (150, 7000, 10000, ("k", "n"), True), (170, 7520, 11752, ("k", "k"), True),
    (132, 6912, 14376, ("k", "n"), True),
    (158, 8424, 7832, ("k", "n"), False),     # 123 K-tiles: short of _SWAP_LONG_K_TILES
    (182, 6936, 10432, ("k", "n"), False),    # A's rows whole 128-byte lines
    (170, 6000, 11752, ("m", "n"), False),    # A M-major
    (150, 16000, 10000, ("k", "n"), False)])  # N's 64-row tiles past one wave: 128-row tiles
def test_long_k_over_rows_of_no_whole_lines_runs_swapped_stream_k_on_128_row_tiles(m, n, k, majors,
                                                                                   streamk):
    """A swapped skinny product whose N's 64-row tiles fit one wave, A K-major in rows of no whole
    128-byte lines and at least ``_SWAP_LONG_K_TILES`` K-tiles runs stream-K on 128-row tiles of
    the 160-224 width in 2x1 clusters; the XLA route (no workspace) keeps the data-parallel tile."""
    config = sm90.choose_schedule(m, n, k, 1, 132, majors=majors)[0]
    assert config.swap
    if streamk:
        assert config.streamk and config.tile_m == 128 and config.cluster_m == 2, config
        assert config.tile_n == min(w for w in (160, 192, 224) if w >= m), config
        plain = sm90.choose_schedule(m, n, k, 1, 132, max_splits=1, majors=majors)[0]
        assert not plain.streamk and plain.tile_m == 64, plain
    else:
        assert not (config.streamk and config.tile_m == 128 and -(-n // 64) >= 99), config


def test_swap_configs_name_themselves_and_refuse_what_the_kernel_is_not_built_for():
    assert sm90.Config(tile_m=64, tile_n=192, swap=True).name.endswith("_swap")
    for bad in (dict(tile_m=256, tile_n=128), dict(tile_m=128, tile_n=32, tile_k=32,
                                                    epi_stages=2),
                dict(tile_m=128, tile_n=128, pingpong=True)):
        with pytest.raises(ValueError, match="swap"):
            sm90.Config(swap=True, **bad).validate()
    # A narrow swapped tile writing fp32 partials (a forced TF32 transposed small-M product) or
    # a 16-bit C (a small M over a long N, ``_swapped_small_m``).
    sm90.Config(tile_m=64, tile_n=32, tile_k=32, epi_stages=2, partials=True, swap=True).validate()
    sm90.Config(tile_m=128, tile_n=16, epi_n=16, cluster_m=2, swap=True).validate()


def test_the_default_precompile_set_holds_swapped_skinny_kernels():
    from cutematmul import aot

    keys = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float16",)))
    for m, n in ((192, 8192), (96, 16384), (48, 8192), (48, 32768)):
        config = sm90.choose_schedule(m, n, 8192, 1, 132)[0]
        assert config.swap and any(k.family == "sm90" and k.config == config for k in keys)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_small_m_read_across_in_split_sectors_is_copied_k_major(dtype):
    """An M-major A of 8 or 24 rows (tn, tt: rows of 16 or 48 bytes) whose product runs on a
    wave or less of swapped narrow tiles over a long K is copied K-major by the operand prep
    (``configs.sm90.copies_across``), and the GEMM is the one the same product with a K-major
    A runs; nn and nt, M of 16 or 32 (whole sectors), N's tiles past one wave or under
    ``_SWAP_SMALL_FILL`` (a batch counts) and a shorter K read A as it is.  The XLA route
    copies it too."""
    from cutematmul import xla

    def plan(m, n, k, layout, batch=1):
        return launch.contiguous_plan(("sm90",), (9, 0), 132, dtype, m, n, k, batch,
                                      (layout[0] == "t", layout[1] == "t"))

    k = sm90._COPY_ACROSS_MIN_K
    for m, n, batch in ((24, 64 * 132, 1), (8, 3000, 1), (8, 32 * 47, 2)):
        for layout in ("tn", "tt"):
            work = plan(m, n, k, layout, batch)
            copy = work.prep[0]
            assert copy.to_major == "k" and not copy.key.k_major and copy.key.dtype == dtype
            assert work.key == plan(m, n, k, "n" + layout[1], batch).key, work
        assert xla.xla_plan((9, 0), 132, dtype, "highest", "auto", m, n, k, batch, True, False,
                            False, False).copies == ("k", None)
    for m, n, kk, layout, batch in ((24, 4096, k, "nn", 1), (24, 4096, k, "nt", 1),
                                    (16, 4096, k, "tn", 1), (32, 4096, k, "tt", 1),
                                    (24, 64 * 133, k, "tn", 1), (24, 64 * 46, k, "tn", 1),
                                    (8, 64 * 67, k, "tn", 2), (24, 4096, k - 8, "tn", 1)):
        work = plan(m, n, kk, layout, batch)
        assert work.prep is None or work.prep[0] is None, (m, n, kk, layout, batch, work.prep)


#: Mid products whose pick was 128 x 160 and whose swapped tiles fill the waves better
#: (``configs.sm90._swapped_wide``, measured on an H100): (M, N, K, the swapped width along M).
SWAPPED_WIDE = [(1376, 3208, 2912, 144), (1872, 2296, 2520, 144), (1576, 2640, 1984, 144),
                (2848, 3352, 2760, 208)]


@pytest.mark.parametrize("layout", LAYOUT_MAJORS)
@pytest.mark.parametrize("shape", SWAPPED_WIDE, ids=lambda s: "x".join(map(str, s[:3])))
def test_mid_products_with_a_k_major_run_swapped_where_the_waves_fill_better(shape, layout):
    """A K-major (nn, nt): swapped 128-row tiles in 2x1 clusters, data-parallel, the width
    along M, a batch of them alike; A M-major (not measured), a C TMA cannot store and 16-bit
    only keep the untransposed schedule; the tuner's list holds the untransposed pick and three
    swapped widths."""
    m, n, k, width = shape
    majors = LAYOUT_MAJORS[layout]
    config, splits, transposed = sm90.choose_schedule(m, n, k, 1, 132, majors=majors)
    assert splits == 1 and not transposed
    if majors[0] == "k":
        assert (config.tile_m, config.tile_n, config.cluster_m, config.swap) == (128, width, 2,
                                                                                 True)
        assert config.pdl and not config.partials and not config.streamk
        config.validate()
        found = sm90.candidates(m, n, k, 1, 132, majors=majors)
        assert found[0] == (config, 1, False)
        assert any(c.tile_n == 160 and not c.swap for c, _, _ in found)
        # The tuner also times the next swapped widths the model ranks (the fastest measured
        # was among the first three on 28 of 30 rows).
        widths = [c.tile_n for c, s, t in found if c.swap]
        assert len(widths) == 3 and widths[0] == width and len(set(widths)) == 3, widths
        assert all(c.cluster_m == 2 and s == 1 and not t for c, s, t in found if c.swap)
        # The route without a workspace (``max_splits`` 1) runs the same data-parallel kernel.
        assert sm90.choose_config(m, n, k, 1, 132, majors=majors) == config
        batched = sm90.choose_schedule(m, n, k, 3, 132, majors=majors)
        assert batched[0].swap and batched[1:] == (1, False), batched
    else:
        assert not config.swap
        assert not sm90.choose_schedule(m, n, k, 3, 132, majors=majors)[0].swap
    for other in (sm90.choose_schedule(m, n, k, 1, 132, majors=majors, c_aligned=False)[0],
                  sm90.choose_schedule(m, n, k, 1, 132, math="tf32", majors=("k", "k"))[0]):
        assert not other.swap, other


@pytest.mark.parametrize("shape", [(53, 336, 1352, 1480), (61, 320, 1408, 1272),
                                   (11, 344, 768, 1216), (48, 584, 728, 376),
                                   (56, 816, 1424, 408)], ids=lambda s: "x".join(map(str, s)))
def test_a_batch_of_few_tile_rows_runs_swapped_where_n_pads_less(shape):
    """A batch whose per-matrix M pads 128-row tiles by 10-23% (an odd count of tile rows, so
    unclustered) runs swapped in 2x1 clusters, data-parallel, N along the tile's rows and M in a
    width of 144-208 (``_SWAPPED_WIDE_TILES``); nn and nt alike, tn keeps its tiles.  The last
    two were kept on unclustered 128 x 256 until their price against the swapped tiles became
    one matrix's (``_UNCLUSTERED_SINGLE_EFFICIENCY``, 61st session)."""
    batch, m, n, k = shape
    for majors in (("k", "n"), ("k", "k")):
        config, splits, transposed = sm90.choose_schedule(m, n, k, batch, 132, majors=majors)
        config.validate()
        assert config.swap and splits == 1 and not transposed, config
        assert config.tile_m == 128 and 144 <= config.tile_n <= 208, config
        assert config.cluster_m == 2 and not config.partials, config
    assert not sm90.choose_schedule(m, n, k, batch, 132, majors=("m", "n"))[0].swap


def test_swapped_wide_schedules_are_the_measured_kind_only():
    """Over a grid of mid and large products: a pick ``_swapped_wide`` swaps is a data-parallel
    cooperative 128-row tile 128-256 wide in 1x1 or 2x1 clusters (what was measured), and
    squares of a power-of-two size, which both orientations tile alike, stay unswapped."""
    swapped = 0
    for m in range(1024, 6145, 328):
        for n in range(1024, 6145, 296):
            config, splits, transposed = sm90.choose_schedule(m, n, 2048, 1, 132)
            if config.swap:
                swapped += 1
                assert (config.tile_m, config.cluster_n, splits, transposed) == (128, 1, 1, False)
                assert 128 <= config.tile_n <= 256 and not config.streamk and not config.pingpong
    assert swapped > 10
    for s in (1024, 2048, 4096, 8192):
        assert not sm90.choose_schedule(s, s, s, 1, 132)[0].swap


@pytest.mark.parametrize("m, n, k, layout", [(60, 5980, 1464, "tt"), (156, 2780, 1332, "tt"),
                                             (40, 6540, 1060, "tt"), (84, 2928, 1244, "tn")])
def test_small_tf32_products_run_unsplit_where_the_reduction_costs_more(m, n, k, layout):
    """One-pass TF32 pays the reduction's 6 us (``configs.sm90._RATES``, the 16-bit price): tt
    60x5980x1464 ran 19.6 us unsplit on 64 x 128 and 23.1 in 2 splits (H100, 62nd session)."""
    work = _auto_plan(m, n, k, layout, "tf32")
    config, splits = work.key.config, work.splits
    assert splits == 1 and (config.tile_m, config.tile_n) == (64, 128), config


@pytest.mark.parametrize("m, n, k", [(196, 3572, 3788), (236, 3700, 3612), (132, 4500, 7972)])
def test_many_narrow_tf32_tiles_over_a_long_k_are_bounded_by_l2(m, n, k):
    """Unsplit 64 x 128 TF32 tiles over a long K outrun L2 (``_TF32_L2_BANDWIDTH``) unclustered
    (tt 196x3572x3788 49.2 us on 128 x 192 in 3 splits, 66.2 on 64 x 128).  In 2x1 clusters
    (``_TF32_CLUSTER_SHORT``) they read half of B from L2 and take the first two (tt
    208x3560x3376: 40.5 us on 128 x 192 in 3 splits, 39.9 on 64 x 128 in 2x1); the longest K
    keeps a wide split tile."""
    work = _auto_plan(m, n, k, "tt", "tf32")
    config, splits = work.key.config, work.splits
    if k < 4096:
        assert (config.tile_m, config.tile_n, config.cluster_m, splits) == (64, 128, 2, 1)
    else:
        assert config.tile_n >= 192 and splits > 1, config
    no_bound = waves.Rate(2.5e12, 1, 4, 4, 4)
    bound = no_bound._replace(l2_bandwidth=6e12)
    args = (m, n, k, 1, 132, 64, 128, 32, 1, 0.5)
    assert waves.estimate(*args, bound) > waves.estimate(*args, no_bound)
    # The bound: every tile's (64 + 128) rows over the padded K, 4 bytes each, over 6 TB/s
    # (196x3572x3788: 112 tiles, 326 MB).
    tiles, padded_k = -(-m // 64) * -(-n // 128), -(-k // 32) * 32
    assert waves.estimate(*args, bound) == pytest.approx(tiles * 192 * padded_k * 4 / 6e12)


def test_the_unsplit_128x160_tile_has_its_own_price():
    """``_WIDE_UNSPLIT_EFFICIENCY``: nt 3184x3104x2648 ran 101.5 us on 128 x 160 and 88.3 on
    128 x 224 (H100, 62nd session); split products keep the tile's price, so a skinny N that
    fits one 160-wide column stays on it (nt 2456x157x4664: 21.1 us there, 26.4 on 64 x 128)."""
    work = _auto_plan(3184, 3104, 2648, "nt", "float16")
    config, splits = work.key.config, work.splits
    assert (config.tile_n, splits) == (224, 1), config
    work = _auto_plan(2456, 157, 4664, "nt", "float16")
    config, splits = work.key.config, work.splits
    assert config.tile_n == 160 and splits > 1, config
    rate = waves.Rate(5e12, 1, 2, 2, 4, unsplit_efficiency=0.5)
    args = (1024, 1024, 4096, 1, 132, 128, 160, 64)
    assert waves.estimate(*args, 1, 1.0, rate) > waves.estimate(*args, 1, 1.0, rate._replace(
        unsplit_efficiency=0.0))
    assert waves.estimate(*args, 2, 1.0, rate) == waves.estimate(*args, 2, 1.0, rate._replace(
        unsplit_efficiency=0.0))


def test_tn_skinny_products_leave_the_128x224_tile():
    """``_ACROSS_SLOW_SKINNY``: tn products of at most 256 rows leave 128 x 224, whose
    B tile is 64-byte swizzled (tn 214x13680x8416: 114.6 us on it, 99.2 on 128 x 256 in 2x2
    clusters; H100, 63rd session), while larger tn products keep it (they lost 0.987x off it)."""
    assert _auto_plan(214, 13680, 8416, "tn").key.config.tile_n != 224
    sizes = [(m, n, 8192) for m in range(129, 257, 17) for n in range(2048, 16385, 1792)]
    assert all(_auto_plan(m, n, k, "tn").key.config.tile_n != 224 for m, n, k in sizes)
    kept = [_auto_plan(m, 13680, 8416, "tn").key.config.tile_n for m in range(512, 4097, 384)]
    assert 224 in kept, kept
