"""Stream-K products on the GPU: correct against float64, bitwise deterministic, every layout,
tails in M, N and K, batches, 1x1 and 2x1 clusters, and a replayed CUDA graph.

Each case makes a stream-K configuration the problem's schedule through the tuned tier
(``cache.trial_tuned``, what ``cutematmul.tune`` uses) and first checks that the planned launch
really is stream-K, so a case never silently tests another kernel.  Outputs are NaN-poisoned
before each run.
"""

from __future__ import annotations

import numpy as np
import pytest

import cutematmul
from conftest import require_module
from helpers import (TOLERANCE, Maker, check_matmul, forced_runs, layout_operands, relative_error,
                     to_numpy)

pytestmark = pytest.mark.gpu

TF32_BOUND = TOLERANCE["tf32"]

# (M, N, K): tiles whose iterations straddle CTAs (few tiles, long K), tails in every mode, a
# share shorter than a tile's K (several CTAs per tile) and one longer (CTAs across tiles).
SHAPES = [(1000, 1000, 1000), (257, 392, 4104), (64, 4096, 4096), (1536, 1536, 1536),
          (130, 200, 20000), (2048, 512, 776)]
TILES = [(128, 256, 2), (128, 128, 1), (64, 128, 2), (64, 256, 1)]


def _streamk(config, tile):
    from cutematmul.configs.sm90 import Config, epilogue_width

    tm, tn, cluster = tile
    # TF32: the natural schedule's swap, which the kernel's majors decide (``Config.swap``).
    extra = ({"tile_k": 32, "epi_stages": 2, "swap": config.swap} if config.tile_k == 32
             else {})
    return Config(tile_m=tm, tile_n=tn, cluster_m=cluster, epi_n=epilogue_width(tn),
                  streamk=True, **extra)


def _run(a, b, tile, precision="highest", repeats=1):
    """The products of ``a @ b`` under a forced stream-K schedule (``repeats`` runs)."""
    def holds(forced):
        return forced.key.config.streamk and forced.streamk is not None

    return forced_runs(a, b, lambda work: (_streamk(work.key.config, tile), 1, False), holds,
                       repeats, precision=precision)


@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=11)


@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"{t[0]}x{t[1]}c{t[2]}")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_streamk_is_correct_and_deterministic(mk, dtype, shape, tile):
    import torch

    a, b = layout_operands(mk, *shape, "nn", dtype)
    first, second = _run(a, b, tile, repeats=2)
    check_matmul(first, a, b, dtype)
    assert torch.equal(first, second), "two runs of the same stream-K product differ"


@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
def test_streamk_layouts(mk, layout):
    a, b = layout_operands(mk, 704, 904, 3000, layout, "float16")
    check_matmul(_run(a, b, (128, 128, 2))[0], a, b, "float16")


def test_streamk_batched_with_a_broadcast_operand(mk):
    a = mk.randn((3, 300, 2000), "float16")
    b = mk.randn((2000, 504), "float16")
    check_matmul(_run(a, b, (128, 256, 2))[0], a, b, "float16")


@pytest.mark.parametrize("tile", [(128, 256, 2), (64, 128, 1)],
                         ids=lambda t: f"{t[0]}x{t[1]}c{t[2]}")
def test_streamk_tf32(mk, tile):
    """One-pass TF32 (K-major copies made by the prep kernel) under stream-K."""
    import torch

    a, b = layout_operands(mk, 1000, 768, 3000, "nn", "float32")
    first, second = _run(a, b, tile, precision="tf32", repeats=2)
    expected = np.matmul(to_numpy(a), to_numpy(b))
    assert relative_error(first, expected) <= TF32_BOUND
    assert torch.equal(first, second)


def test_streamk_in_a_replayed_cuda_graph(mk):
    """A graph repeats the launch's flag value: each replay must still wait for its partials
    (the kernel clears every flag it read), so replays on new inputs stay correct."""
    import torch

    from cutematmul import cache, launch
    from cutematmul.adapters import adapter_for

    a, b = layout_operands(mk, 1000, 1000, 4000, "nn", "float16")
    work = launch.planned_launch(adapter_for(a), a, b)
    out = torch.empty(1000, 1000, dtype=a.dtype, device="cuda")
    with cache.trial_tuned(work.problem, (_streamk(work.key.config, (128, 128, 2)), 1, False)):
        cutematmul.matmul(a, b, out=out)  # compiled and planned outside the capture
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            cutematmul.matmul(a, b, out=out)
    for seed in range(3):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        a.copy_(torch.randn(a.shape, device="cuda", generator=gen))
        b.copy_(torch.randn(b.shape, device="cuda", generator=gen))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check_matmul(out, a, b, "float16")

