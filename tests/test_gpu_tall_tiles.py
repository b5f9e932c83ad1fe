"""16-bit 256-row (tall) tiles, 128 to 192 wide, on the GPU: each consumer warpgroup owns 128
rows (two m64 wgmma rows per k16 step), up to 192 fp32 accumulators per thread, three ring
stages deep at 160 and 192 wide.  cuBLAS runs tiles of 256 x 160 and similar on mid products
(docs/performance.md, 50th session); the wave model does not offer ours, the tuner times
them (measured: docs/performance.md, 52nd session).

Correct against float64 in every layout and both 16-bit dtypes, with tails in M, N and K;
unclustered and in 2x1 clusters (an odd count of tile rows: the last cluster's second CTA has
no rows), split-K partials (deterministic); a batch with a broadcast operand; a C view inside a
wider buffer that nothing outside it may touch.  Each case makes its configuration the
problem's schedule through the tuned tier (``cache.trial_tuned``) and first checks that the
planned launch runs it.  Outputs are NaN-poisoned before each run.
"""

from __future__ import annotations

import pytest

from conftest import require_module
from helpers import (Maker, check_c_view, check_forced_twice, check_matmul,
                     forced_schedule_runs, layout_operands)

pytestmark = pytest.mark.gpu

#: (width, cluster_m, splits)
TILES = [(160, 1, 1), (160, 2, 1), (192, 2, 1), (192, 1, 3), (128, 2, 1)]
#: (M, N, K): tails in M (1000 = 3 x 256 + 232), N and K; three tile rows (odd, in 2x1
#: clusters); fewer rows than one tile; every extent a multiple of 8, so each operand's rows
#: are whole 16-byte vectors in every layout (read in place: the forced launch is the planned
#: one).
SHAPES = [(1000, 1000, 1000), (600, 2056, 520), (136, 712, 4104)]


def _config(tile):
    from cutematmul.configs.sm90 import Config, epilogue_width

    width, cluster, splits = tile
    return Config(tile_m=256, tile_n=width, epi_n=epilogue_width(width), cluster_m=cluster,
                  partials=splits > 1, pdl=True), splits


def _run(a, b, tile, repeats=1):
    return forced_schedule_runs(a, b, *_config(tile), repeats=repeats)


def _id(tile):
    width, cluster, splits = tile
    return f"256x{width}c{cluster}s{splits}"


@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=51)


@pytest.mark.parametrize("tile", TILES, ids=_id)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_tall_tiles_are_correct_and_deterministic(mk, shape, tile):
    check_forced_twice(mk, shape, *_config(tile))


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("tile", [TILES[1], TILES[3]], ids=_id)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tall_tiles_in_every_layout(mk, dtype, tile, layout):
    a, b = layout_operands(mk, 1376, 776, 1032, layout, dtype)
    check_matmul(_run(a, b, tile)[0], a, b, dtype)


def test_tall_tiles_batch_with_a_broadcast_operand(mk):
    a = mk.randn((3, 400, 2000), "bfloat16")
    b = mk.randn((2000, 712), "bfloat16")
    for tile in (TILES[2], TILES[3]):
        check_matmul(_run(a, b, tile)[0], a, b, "bfloat16")


def test_tall_tiles_write_inside_a_c_view(mk):
    """C a column slice of a wider buffer: its TMA stores stay inside the slice."""
    check_c_view(mk, 1000, 712, 520, (_config(TILES[2])[0], 1, False))
