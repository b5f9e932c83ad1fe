"""16-bit tiles 80, 96 and 112 wide (``configs.sm90._ODD_N``) on the GPU: correct against
float64 in every layout and both 16-bit dtypes, with tails in M, N and K; 64 and 128 rows, 1x1
and 2x1 clusters, split-K partials (deterministic), swapped (C^T = B^T A^T, the width along M);
a batch with a broadcast operand; a C view inside a wider buffer that nothing outside it may
touch.

Each case makes its configuration the problem's schedule through the tuned tier
(``cache.trial_tuned``) and first checks that the planned launch runs it, so a case never
silently tests another kernel.  Outputs are NaN-poisoned before each run.
"""

from __future__ import annotations

import pytest

from conftest import require_module
from helpers import (Maker, check_c_view, check_forced_twice, check_matmul,
                     forced_schedule_runs, layout_operands)

pytestmark = pytest.mark.gpu

#: (tile_m, tile_n, cluster_m, splits, swap)
TILES = [(128, 80, 2, 1, False), (64, 96, 1, 1, False), (128, 112, 1, 1, False),
         (128, 96, 2, 1, False), (64, 112, 2, 1, False), (128, 80, 1, 3, False),
         (64, 96, 1, 2, False), (128, 96, 2, 1, True), (64, 80, 1, 1, True),
         (128, 112, 2, 1, True)]
#: (M, N, K): the short side inside the tile's width (a tail), the long side with a tile-row
#: tail, K with a K-tile tail; and products of several tile columns.  Every extent a multiple
#: of 8, so that in every layout each operand's rows are whole 16-byte vectors (read in place,
#: not copied: the forced launch is the planned one).
SHAPES = [(3000, 72, 1000), (1000, 104, 2056), (88, 5000, 776), (776, 248, 296)]


def _config(tile):
    from cutematmul.configs.sm90 import Config, epilogue_width

    tm, tn, cluster, splits, swap = tile
    return Config(tile_m=tm, tile_n=tn, epi_n=epilogue_width(tn), cluster_m=cluster,
                  partials=splits > 1, swap=swap, pdl=True), splits


def _run(a, b, tile, repeats=1):
    return forced_schedule_runs(a, b, *_config(tile), repeats=repeats)


def _id(tile):
    tm, tn, cluster, splits, swap = tile
    return f"{tm}x{tn}c{cluster}s{splits}" + ("swap" if swap else "")


@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=31)


@pytest.mark.parametrize("tile", TILES, ids=_id)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_odd_width_tiles_are_correct(mk, shape, tile):
    check_forced_twice(mk, shape, *_config(tile))


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("tile", [TILES[0], TILES[2], TILES[5], TILES[7], TILES[8]], ids=_id)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_odd_width_layouts(mk, dtype, tile, layout):
    shape = (88, 4000, 1032) if tile[4] else (4000, 88, 1032)
    a, b = layout_operands(mk, *shape, layout, dtype)
    check_matmul(_run(a, b, tile)[0], a, b, dtype)


def test_odd_width_batch_with_a_broadcast_operand(mk):
    a = mk.randn((3, 1000, 2000), "bfloat16")
    b = mk.randn((2000, 104), "bfloat16")
    for tile in (TILES[3], TILES[5]):
        check_matmul(_run(a, b, tile)[0], a, b, "bfloat16")


@pytest.mark.parametrize("tile", [TILES[1], TILES[7]], ids=_id)
def test_odd_width_c_view_inside_a_wider_buffer(mk, tile):
    """A C that is a column slice of a wider row-major buffer is written inside the slice only:
    the columns around it keep their NaN poison."""
    config, splits = _config(tile)
    m, n = (96, 3000) if tile[4] else (3000, 96)
    check_c_view(mk, m, n, 1000, (config, splits, False))


# Products the dispatcher itself runs on odd widths (``configs.sm90._odd_width``): N of 65-112
# with B K-major ("nt", "tt"), M tails, K tails, 2x1 clusters and a split; M of 65-112 swapped
# with A K-major ("nn", "nt"): (M, N, K, layout, the width).
NATURAL = [(3688, 112, 1416, "nt", 112), (6656, 80, 5680, "tt", 80), (1592, 72, 3464, "nt", 80),
           (2480, 88, 880, "tt", 96), (72, 12432, 2296, "nn", 80), (96, 10896, 3608, "nt", 96),
           (104, 14056, 1000, "nn", 112), (768, 72, 9000, "nt", 80)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", NATURAL, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}{c[3]}")
def test_dispatcher_runs_odd_widths(mk, dtype, case):
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    m, n, k, layout, width = case
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    work = launch.planned_launch(adapter_for(a), a, b)
    assert work is not None and work.key.config.tile_n == width, work
    assert work.key.config.swap == (m < n), work.key.config
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((m, n), dtype)), a, b, dtype)
