"""Programmatic dependent launch (``Config.pdl``) on the GPU: back-to-back products that depend
on each other stay correct.

A PDL kernel may start while the kernel ahead of it on the stream is still running; it must not
read an input that kernel is still writing (read after write) nor overwrite a buffer that kernel
is still reading (write after read).  Each case forces a PDL configuration as the problem's
schedule through the tuned tier (``cache.trial_tuned``, what ``cutematmul.tune`` uses), checks
that the planned launch really is PDL, then launches a chain of dependent products with no
synchronization in between: every buffer is NaN-poisoned first, so a product that ran early
reads NaN.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cutematmul
from conftest import require_module
from helpers import check_matmul, to_numpy

pytestmark = pytest.mark.gpu

STEPS = 6
# (M, N, dtype) of x_{i+1} = x_i @ b, b N x N: one wave, a tail in every mode, a clustered
# large product; small M computed transposed into the workspace (N under
# ``configs.sm90._SWAP_SMALL_FILL``'s tiles), whose reduction is a dependent launch too
# (``dispatch.reduce_key``), and swapped on a narrow tile over a long N.  float32: the SIMT
# family's tiled kernel (one wave with tails, several waves) and its row-streaming kernel
# split along K (a reduction after it).
CASES = [(512, 512, "float16"), (1000, 1000, "bfloat16"), (2048, 2048, "float16"),
         (24, 2048, "float16"), (8, 1024, "bfloat16"), (16, 8192, "float16"),
         (1000, 1000, "float32"),
         (2048, 2048, "float32"), (4, 4096, "float32")]


def _forced(torch, x, b, pdl: bool):
    """The (tuned choice, problem) that makes ``x @ b``'s schedule its own pick with ``pdl``."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    work = launch.planned_launch(adapter_for(x), x, b)
    assert work is not None and work.problem is not None, "the product is not one launch"
    splits = work.splits
    config = dataclasses.replace(work.key.config, pdl=pdl)
    return work.problem, (config, splits, work.transposed)


def _operands(torch, m, n, dtype):
    gen = torch.Generator(device="cuda").manual_seed(n)
    dt = getattr(torch, dtype)
    x = torch.randn(m, n, device="cuda", generator=gen).to(dt)
    # Scaled so the chain's values stay near 1 (no fp16 overflow).
    b = (torch.randn(n, n, device="cuda", generator=gen) / n ** 0.5).to(dt)
    return x, b


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}-{c[2]}")
def test_a_chain_reads_each_product_after_it_is_written(case):
    """x_{i+1} = x_i @ b, launched back to back: each step against float64 from its own input."""
    torch = require_module("torch")
    from cutematmul import cache, launch
    from cutematmul.adapters import adapter_for

    m, n, dtype = case
    x, b = _operands(torch, m, n, dtype)
    problem, choice = _forced(torch, x, b, pdl=True)
    chain = [x] + [torch.full_like(x, float("nan")) for _ in range(STEPS)]
    with cache.trial_tuned(problem, choice):
        work = launch.planned_launch(adapter_for(x), x, b)
        assert work.key.config.pdl
        assert (work.reduce is not None) == (work.splits > 1 or work.transposed), work
        if dtype != "float32":
            assert (work.reduce is not None) == work.transposed == (m < 32 and n < 4096), \
                "a small M over a short N goes through the reduction, over a long N swapped"
        assert work.reduce is None or work.reduce.pdl, "the reduction is no dependent launch"
        torch.cuda.synchronize()
        for i in range(STEPS):
            cutematmul.matmul(chain[i], b, out=chain[i + 1])
        torch.cuda.synchronize()
    for i in range(STEPS):
        check_matmul(chain[i + 1], chain[i], b, dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}-{c[2]}")
def test_ping_pong_buffers_match_the_serialized_launch_bitwise(case):
    """q = p @ b, p = q @ b, ...: each product overwrites the buffer the one before it read.  PDL
    changes the launch, not the arithmetic: the result equals the same kernel without PDL
    bit for bit, eagerly and replayed from a CUDA graph."""
    torch = require_module("torch")
    from cutematmul import cache

    m, n, dtype = case
    x, b = _operands(torch, m, n, dtype)

    def run(pdl: bool):
        problem, choice = _forced(torch, x, b, pdl)
        p, q = x.clone(), torch.full_like(x, float("nan"))
        with cache.trial_tuned(problem, choice):
            torch.cuda.synchronize()
            for _ in range(STEPS // 2):
                cutematmul.matmul(p, b, out=q)
                cutematmul.matmul(q, b, out=p)
            torch.cuda.synchronize()
        return to_numpy(p)

    def graph_run():
        problem, choice = _forced(torch, x, b, pdl=True)
        p, q = x.clone(), torch.full_like(x, float("nan"))
        with cache.trial_tuned(problem, choice):
            cutematmul.matmul(p, b, out=q)  # compiled and planned before the capture
            p.copy_(x)
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                for _ in range(STEPS // 2):
                    cutematmul.matmul(p, b, out=q)
                    cutematmul.matmul(q, b, out=p)
            p.copy_(x)
            q.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
        return to_numpy(p)

    serialized = run(pdl=False)
    assert np.isfinite(serialized).all()
    assert np.array_equal(run(pdl=True), serialized), "PDL changed the products"
    assert np.array_equal(graph_run(), serialized), "the captured PDL chain changed the products"
