"""Pingpong products on the GPU (``Config.pingpong``): correct against float64, bitwise repeatable,
every layout, tails in M, N and K, batches with a broadcast operand, 1x1 and 2x1 clusters, the
64-row tiles the kernel also builds, a split, and the wave model's own pick.

Each forced case makes a pingpong configuration the problem's schedule through the tuned tier
(``cache.trial_tuned``, what ``cutematmul.tune`` uses) and first checks that the planned launch
really is pingpong, so a case never silently tests another kernel.  Outputs are NaN-poisoned
before each run.  The shapes give a CTA's two warpgroups many units in turn (the order barrier
and the skipped stages), one unit or none (a warpgroup that only skips), and a K shorter than
one K-tile.
"""

from __future__ import annotations

import pytest

import cutematmul
from conftest import require_module
from helpers import Maker, check_matmul, forced_runs, layout_operands

pytestmark = pytest.mark.gpu

# Operands stay 16-byte aligned (the planned launch then reads them in place, no staging copy):
# the tails are in tiles, not in 16-byte rows.
SHAPES = [(2048, 2048, 256), (1000, 1000, 200), (257, 392, 136), (4096, 4096, 512),
          (136, 4104, 72), (3000, 200, 8)]
TILES = [(128, 128, 2), (128, 128, 1), (64, 256, 1), (64, 128, 2)]


def _pingpong(tile, splits=1):
    from cutematmul.configs.sm90 import Config

    tm, tn, cluster = tile
    return Config(tile_m=tm, tile_n=tn, cluster_m=cluster, pingpong=True, pdl=True,
                  partials=splits > 1)


def _run(a, b, tile, repeats=1, splits=1):
    """The products of ``a @ b`` under a forced pingpong schedule (``repeats`` runs)."""
    def holds(forced):
        return forced.key.config.pingpong and forced.splits == splits

    return forced_runs(a, b, lambda work: (_pingpong(tile, splits), splits, False), holds,
                       repeats, kernel="sm90")


@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=17)


@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"{t[0]}x{t[1]}c{t[2]}")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pingpong_is_correct_and_repeatable(mk, dtype, shape, tile):
    import torch

    a, b = layout_operands(mk, *shape, "nn", dtype)
    first, second = _run(a, b, tile, repeats=2)
    check_matmul(first, a, b, dtype)
    assert torch.equal(first, second), "two runs of the same pingpong product differ"


@pytest.mark.parametrize("tile", [(128, 128, 2), (128, 128, 1)], ids=lambda t: f"c{t[2]}")
@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pingpong_layouts(mk, dtype, layout, tile):
    a, b = layout_operands(mk, 1032, 904, 520, layout, dtype)
    check_matmul(_run(a, b, tile)[0], a, b, dtype)


@pytest.mark.parametrize("layout", ["nn", "tn"])
def test_pingpong_batched_with_a_broadcast_operand(mk, layout):
    a, b = layout_operands(mk, 304, 504, 520, layout, "float16", batch=(3,))
    check_matmul(_run(a, b, (128, 128, 2))[0], a, b, "float16")
    b2 = mk.randn((520, 504), "float16")
    check_matmul(_run(a, b2, (128, 128, 1))[0], a, b2, "float16")


def test_pingpong_split_k_partials(mk):
    """The kernel also writes fp32 partial sums (the wave model never splits it; the kernel
    keeps the option): reduced in a fixed order, so repeats are bitwise equal."""
    import torch

    a, b = layout_operands(mk, 704, 520, 4104, "nn", "bfloat16")
    first, second = _run(a, b, (128, 128, 2), repeats=2, splits=3)
    check_matmul(first, a, b, "bfloat16")
    assert torch.equal(first, second)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_wave_models_short_k_pick_is_pingpong_and_correct(mk, dtype):
    """4096 x 4096 x 512: the launch runs the wave model's pick for this GPU, which on 132 SMs
    (an H200 or H100 SXM) is pingpong."""
    import torch

    from cutematmul import launch
    from cutematmul.adapters import adapter_for
    from cutematmul.configs import sm90

    a, b = layout_operands(mk, 4096, 4096, 512, "nn", dtype)
    work = launch.planned_launch(adapter_for(a), a, b)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    pick = sm90.choose_schedule(4096, 4096, 512, 1, sms, math=dtype, majors=("k", "n"))[0]
    assert work.key.config == pick
    if sms == 132:
        assert pick.pingpong, pick
    out = torch.full((4096, 4096), float("nan"), dtype=a.dtype, device="cuda")
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)
