"""16-bit products the sm90 kernel computes as C^T = B^T A^T (``Config.swap``) on the GPU:
correct against float64, every layout, tails in M, N and K, data-parallel in 1x1 and 2x1
clusters, stream-K (bitwise repeatable), split-K partials, a batch with a broadcast operand, and
a C view inside a wider buffer that nothing outside the view may touch.

Each case makes a swapped configuration the problem's schedule through the tuned tier
(``cache.trial_tuned``) and first checks that the planned launch really is swapped, so a case
never silently tests another kernel.  Outputs are NaN-poisoned before each run.  The last tests
check that the dispatcher itself picks the swapped kernel for skinny products.
"""

from __future__ import annotations

import pytest

from conftest import require_module
from helpers import (Maker, check_c_view, check_forced_twice, check_matmul, dispatched,
                     forced_schedule_runs, layout_operands)

pytestmark = pytest.mark.gpu

# (M, N, K): M short (its tail inside one tile width), N with and without a tile-row tail, K
# with a K-tile tail; one product of several tile widths of M (M > 256).
SHAPES = [(150, 10000, 4104), (200, 4096, 1000), (97, 3000, 776), (256, 8192, 512),
          (300, 2000, 3000)]
#: (tile_m, tile_n, cluster_m, kind): kind "dp" data-parallel, "sk" stream-K, "s3" three splits.
TILES = [(128, 160, 2, "dp"), (128, 192, 1, "sk"), (64, 224, 2, "sk"), (128, 256, 1, "dp"),
         (128, 128, 1, "s3"), (64, 208, 1, "dp"), (128, 144, 2, "dp")]


def _config(tile):
    from cutematmul.configs.sm90 import Config, epilogue_width

    tm, tn, cluster, kind = tile
    splits = 3 if kind == "s3" else 1
    return Config(tile_m=tm, tile_n=tn, epi_n=epilogue_width(tn), cluster_m=cluster, swap=True,
                  streamk=kind == "sk", partials=splits > 1, pdl=kind != "sk"), splits


def _run(a, b, tile, repeats=1):
    return forced_schedule_runs(a, b, *_config(tile), repeats=repeats)


def _id(tile):
    return f"{tile[0]}x{tile[1]}c{tile[2]}{tile[3]}"


@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=23)


@pytest.mark.parametrize("tile", TILES, ids=_id)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_swapped_kernels_are_correct(mk, shape, tile):
    check_forced_twice(mk, shape, *_config(tile))


@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
@pytest.mark.parametrize("tile", [(128, 160, 2, "dp"), (128, 192, 2, "sk"), (64, 176, 1, "dp")],
                         ids=_id)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_swapped_layouts(mk, dtype, tile, layout):
    a, b = layout_operands(mk, 176, 5000, 2056, layout, dtype)
    check_matmul(_run(a, b, tile)[0], a, b, dtype)


def test_swapped_batch_with_a_broadcast_operand(mk):
    a = mk.randn((3, 200, 2000), "float16")
    b = mk.randn((2000, 3000), "float16")
    for tile in ((128, 224, 2, "dp"), (128, 224, 1, "sk")):
        check_matmul(_run(a, b, tile)[0], a, b, "float16")


@pytest.mark.parametrize("tile,m", [((128, 160, 2, "dp"), 150), ((128, 160, 2, "sk"), 150),
                                    ((64, 16, 1, "dp"), 11), ((128, 32, 2, "dp"), 27)],
                         ids=lambda x: _id(x) if isinstance(x, tuple) else f"m{x}")
def test_swapped_c_view_inside_a_wider_buffer(mk, tile, m):
    """C^T's TMA stores run along N: a C that is a column slice of a wider row-major buffer is
    written inside the slice only (the columns around it keep their NaN poison); the narrow
    tiles of a small M too."""
    config, splits = _config(tile)
    check_c_view(mk, m, 4104, 2000, (config, splits, False))


# Skinny products the dispatcher itself runs swapped (``configs.sm90._swapped_skinny``):
# 64-row tiles in one wave, 128-row tiles, stream-K (few tiles, >= 128 K-tiles) with N and K
# tails, a product of a few 64-row tiles per batch that fill the SMs together, M of 65-127
# on 128 x 128 tiles in 2x1 clusters (an M tail inside the tile's width, N and K tails), A's
# rows of no whole 128-byte lines (2x1 clusters, 6008), M of 33-63 on 64-wide tiles in 2x1
# clusters, 64 and 128 rows, and M of 65-96 on 64-row tiles 80 or 96 wide (N's 64-row tiles
# in one wave; unclustered on whole lines, 2x1 on K = 1000); M of 129-144, 161-176 and
# 193-208 on tiles 144, 176 and 208 wide (176, 200, 129, 140), and a long K over A's rows of
# no whole lines on 128-row stream-K tiles (150 x 7000 x 10000).
NATURAL = [(160, 8192, 2048), (176, 10240, 1024), (224, 5000, 8200), (200, 4096, 8192),
           (129, 6000, 3000), (97, 10000, 3000), (160, 6000, 6008), (48, 6000, 3000),
           (40, 16000, 2056), (69, 4104, 1000), (90, 3904, 2048), (140, 7000, 4104),
           (150, 7000, 10000)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", NATURAL, ids=lambda s: "x".join(map(str, s)))
def test_skinny_products_run_swapped_by_default(mk, dtype, shape):
    import torch

    import cutematmul

    family, key, splits, transposed = dispatched(dtype, *shape)
    assert family.name == "sm90" and key.config.swap and splits == 1 and not transposed, key
    a, b = layout_operands(mk, *shape, "nn", dtype)
    first = cutematmul.matmul(a, b, out=mk.poisoned(shape[:2], dtype))
    check_matmul(first, a, b, dtype)
    if key.config.streamk:  # the in-kernel reduction adds in a fixed order
        assert torch.equal(first, cutematmul.matmul(a, b, out=mk.poisoned(shape[:2], dtype)))


#: Mid products whose swapped 128-row tiles fill the waves better (``configs.sm90._swapped_wide``):
#: (M, N, K, width along M).  Tails in M (inside the last tile column), N and K; an odd count of
#: 128-row tiles along N in 2x1 clusters (2640: 21, 3352: 27: the last cluster's second CTA has
#: no rows); the fine widths 144 and 208.
WIDE = [(1376, 3208, 2912, 144), (1576, 2640, 1984, 144), (2848, 3352, 2760, 208),
        (1100, 2000, 3000, 144)]


@pytest.mark.parametrize("layout", ["nn", "nt"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", WIDE, ids=lambda s: "x".join(map(str, s[:3])))
def test_mid_products_run_swapped_where_the_waves_fill_better(mk, dtype, shape, layout):
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    m, n, k, width = shape
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    work = launch.planned_launch(adapter_for(a), a, b)
    config = work.key.config
    assert config.swap and config.tile_n == width and config.cluster_m == 2, config
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((m, n), dtype)), a, b, dtype)


@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
@pytest.mark.parametrize("m", [192, 168, 48])  # 168: A^T rows of no whole 32-byte sectors
def test_skinny_swapped_by_default_in_every_layout(mk, m, layout):
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    a, b = layout_operands(mk, m, 8192, 2056, layout, "float16")
    work = launch.planned_launch(adapter_for(a), a, b)
    assert work is not None and work.key.config.swap, work
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((m, 8192), "float16")), a, b,
                 "float16")


def test_skinny_batched_broadcast_runs_swapped(mk):
    import cutematmul

    family, key, _, _ = dispatched("float16", 160, 2048, 1024, batch=4)
    assert key.config.swap, key
    a = mk.randn((4, 160, 1024), "float16")
    b = mk.randn((1024, 2048), "float16")
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((4, 160, 2048), "float16")), a, b,
                 "float16")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["tn", "tt"])
@pytest.mark.parametrize("m, n, k", [(17, 8200, 2056), (24, 5000, 1000), (32, 9000, 4104)])
def test_m_of_17_to_32_with_a_m_major_runs_swapped_by_default(mk, dtype, layout, m, n, k):
    """A stored M-major: all of M in one 32-wide swapped tile (``configs.sm90._swapped_small_m``),
    where A^T's rows are no whole 32-byte sectors (M = 17, 24) 128 rows, or 64 where N's
    128-row tiles are few (5000: 40, ``_SWAP_NARROW_ROWS``), tails in N and K; M = 17 is A^T
    in rows of 34 bytes, which the operand prep copies first."""
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    a, b = layout_operands(mk, m, n, k, layout, dtype)
    work = launch.planned_launch(adapter_for(a), a, b)
    assert work is not None and work.key.config.swap, work
    assert work.key.config.tile_n == 32, work.key
    if m != 32:  # A^T's rows of 64 bytes (M = 32) are whole sectors
        assert work.key.config.tile_m == (64 if n == 5000 else 128), work.key
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((m, n), dtype)), a, b, dtype)


def test_m_of_17_to_32_with_a_m_major_batched_broadcast_runs_swapped(mk):
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    a = mk.randn((3, 1000, 24), "float16").swapaxes(-1, -2)  # M-major A, batch of 3
    b = mk.randn((1000, 4096), "float16")                    # broadcast over the batch
    work = launch.planned_launch(adapter_for(a), a, b)
    assert work is not None and work.key.config.swap, work
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((3, 24, 4096), "float16")), a, b,
                 "float16")


#: Small M over a long N (``configs.sm90._swapped_small_m``): all of M in one 16- or 32-wide
#: swapped tile, C stored through its transpose, no workspace and no reduction; tails in N and
#: K, 64- and 128-row tiles (9000 and 12000 past one wave of 64-row ones), 2x1 clusters (an
#: M-major A, or K-major rows of no whole 128-byte lines); an M-major A of 9 or 24 rows (rows
#: of no whole 32-byte sectors; 9: copied into padded rows first) on 128-row tiles.
SMALL_M = [(8, 9000, 1000), (16, 5000, 4104), (24, 6000, 776), (32, 12000, 3000),
           (9, 4104, 4100)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("shape", SMALL_M, ids=lambda s: "x".join(map(str, s)))
def test_small_m_runs_swapped_on_a_narrow_tile_by_default(mk, dtype, layout, shape):
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    m, n, k = shape
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    work = launch.planned_launch(adapter_for(a), a, b)
    if layout == "nt" and k % 8:
        # B's K-major rows are no whole 16-byte vectors: SIMT's row-streaming kernel reads
        # them in place on tensor cores (tests/test_gpu_row_streaming16.py) where the swapped
        # tile would copy B.
        assert work is not None and work.key.family == "simt" and work.key.config.mma, work
        check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((m, n), dtype)), a, b, dtype)
        return
    assert work is not None and work.key.config.swap and work.reduce is None, work
    assert not work.transposed and work.splits == 1, work
    assert work.key.config.tile_n == (16 if m <= 16 else 32), work.key
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((m, n), dtype)), a, b, dtype)


def test_small_m_vector_and_batched_broadcast_run_swapped_on_a_narrow_tile(mk):
    """M = 1 (a vector-matrix product of 16-bit inputs), and a batch of 3 small-M products
    sharing one B (a broadcast operand) whose 64-row tiles fill the SMs together."""
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    cases = [(mk.randn((1, 4104), "float16"), mk.randn((4104, 8200), "float16"), (1, 8200)),
             (mk.randn((3, 16, 1000), "bfloat16"), mk.randn((1000, 4096), "bfloat16"),
              (3, 16, 4096))]
    for a, b, shape in cases:
        work = launch.planned_launch(adapter_for(a), a, b)
        assert work is not None and work.key.config.swap and work.key.config.tile_n == 16, work
        assert work.reduce is None, work
        dtype = str(a.dtype).removeprefix("torch.")
        check_matmul(cutematmul.matmul(a, b, out=mk.poisoned(shape, dtype)), a, b, dtype)
