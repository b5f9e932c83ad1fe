"""Split-K, transposed small-M and narrow small-N products on the GPU: correct against float64,
bitwise deterministic, every layout and tail.

Each case first asks the dispatcher (``dispatch.schedule``, no GPU time) whether the problem is
split, and fails if it is not: a shape that stopped splitting after a heuristic change would
otherwise test nothing.  Outputs are NaN-poisoned before each run.
"""

from __future__ import annotations

import pytest

import cutematmul
from conftest import require_module
from helpers import Maker, check_matmul, dispatched, layout_operands

pytestmark = pytest.mark.gpu

LAYOUTS = ["nn", "tn", "nt", "tt"]  # t: the operand is a transposed view
# (M, N, K): skinny products, tails in M, N and K, a long K with a handful of tiles.
# A small M (16-bit) over N's tiles that fill the SMs runs swapped instead
# (``configs.sm90._SWAP_SMALL_FILL``, tests/test_gpu_swap.py): these N stay under it.
SPLIT_SHAPES = [(16, 2048, 4096), (7, 1000, 8191), (130, 2040, 6000), (1, 512, 16384),
                (32, 2048, 16384),
                # 17 <= M <= 32, transposed onto 32-wide tiles: tails in M, N and K.
                (17, 1000, 4100), (31, 2056, 3001), (24, 2560, 4096),
                # A small C from a long K: a tile or two split deep, several reduction lanes
                # per output (``dispatch.reduce_lanes``).
                (28, 68, 40000), (9, 110, 30001)]


def _splits(m, n, k, batch, dtype) -> int:
    """The split count (2 for an unsplit transposed product: it takes the workspace path too)."""
    _, _, splits, transposed = dispatched(dtype, m, n, k, batch)
    return max(splits, 2 if transposed else 1)




@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=7)


@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_split_k_is_correct(mk, dtype, layout, shape):
    """Every layout of the split shapes is correct; the split itself is asserted of row-major
    operands (another layout may take another schedule: 16-bit tn/tt of a small M over a long N
    runs swapped, ``configs.sm90._swapped_small_m``)."""
    m, n, k = shape
    assert _splits(m, n, k, 1, dtype) > 1, f"{shape} {dtype} is no longer split: pick another shape"
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    out = mk.poisoned((m, n), dtype)
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)


@pytest.mark.parametrize("m", [16, 29])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_split_k_with_a_broadcast_batch_and_a_strided_out(mk, dtype, m):
    """A batch of 3 against one shared B, written into a column-major ``out`` (the planner then
    computes C^T = B^T A^T) and into a row-major view of a wider buffer."""
    import torch

    assert _splits(m, 512, 8192, 3, dtype) > 1
    a = mk.randn((3, m, 8192), dtype)
    b = mk.randn((8192, 512), dtype)
    wide = mk.poisoned((3, m, 512 + 40), dtype)
    out = wide[..., 8:512 + 8]
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)
    assert torch.isnan(wide[..., :8]).all() and torch.isnan(wide[..., 512 + 8:]).all(), \
        "split-K wrote outside the out view"
    col = mk.poisoned((3, 512, m), dtype).transpose(-1, -2)
    check_matmul(cutematmul.matmul(a, b, out=col), a, b, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("shape, shared", [((64, 2048, 16384), False), ((28, 68, 40000), True)],
                         ids=["one-lane", "shared-lanes"])
def test_split_k_is_bitwise_deterministic(mk, dtype, shape, shared):
    """The same inputs give bitwise-identical outputs, run to run and stream to stream: with
    one reduction thread per output, and with several sharing each output's splits."""
    import torch

    from cutematmul.dispatch import reduce_lanes

    m, n, k = shape
    splits = _splits(m, n, k, 1, dtype)
    assert splits > 1
    assert (reduce_lanes(m * n, splits) > 1) == shared, (shape, splits)
    a, b = layout_operands(mk, m, n, k, "nn", dtype)
    first = cutematmul.matmul(a, b)
    side = torch.cuda.Stream()
    for i in range(5):
        if i % 2:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                again = cutematmul.matmul(a, b)
            torch.cuda.current_stream().wait_stream(side)
        else:
            again = cutematmul.matmul(a, b)
        assert torch.equal(again.view(torch.int16 if dtype != "float32" else torch.int32),
                           first.view(torch.int16 if dtype != "float32" else torch.int32)), \
            f"run {i} differs bitwise from run 0"
    check_matmul(first, a, b, dtype)


#: (M, N, K) of 16-bit small-N products (``configs.sm90.narrow_n``): N <= 32 on the narrow tiles,
#: tails in M, N and K, split (through the workspace) and unsplit (C stored by the kernel in 2x1
#: clusters; 8300 and 14337 rows leave the last cluster's second CTA without rows); 32 < N <= 64
#: on 64 x 64 tiles.
SMALL_N_SHAPES = [(4096, 8, 4096), (1000, 7, 4100), (2056, 31, 3001), (8192, 16, 1024),
                  (4100, 24, 8192), (300, 1, 5000), (3000, 48, 2048), (1030, 64, 1000),
                  (8300, 24, 1000), (14337, 9, 4096), (16384, 32, 2050)]


@pytest.mark.parametrize("shape", SMALL_N_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_small_n_products_are_correct(mk, dtype, layout, shape):
    m, n, k = shape
    _, key, splits, transposed = dispatched(dtype, m, n, k)
    assert not transposed
    if n <= 32:
        assert key.config.tile_n < 64, f"{shape}: not a narrow tile"
        assert key.config.partials == (splits > 1), f"{shape}: {key.config.name}, {splits} splits"
    else:
        assert (key.config.tile_m, key.config.tile_n) == (64, 64), f"{shape}: {key.config.name}"
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    out = mk.poisoned((m, n), dtype)
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_small_n_with_a_broadcast_batch_a_strided_out_and_bitwise_repeats(mk, dtype):
    """A stack of 3 against one shared few-column B, into a view of a wider buffer (nothing
    outside it written) and into a column-major ``out``; the same inputs give bitwise-identical
    outputs run to run."""
    import torch

    m, n, k = 2000, 24, 4096
    _, key, splits, _ = dispatched(dtype, m, n, k, 3)
    assert key.config.tile_n == 32 and key.config.partials == (splits > 1)
    a = mk.randn((3, m, k), dtype)
    b = mk.randn((k, n), dtype)
    wide = mk.poisoned((3, m, n + 40), dtype)
    out = wide[..., 8:n + 8]
    first = cutematmul.matmul(a, b, out=out)
    check_matmul(first, a, b, dtype)
    assert torch.isnan(wide[..., :8]).all() and torch.isnan(wide[..., n + 8:]).all(), \
        "a small-N product wrote outside the out view"
    for _ in range(3):
        again = cutematmul.matmul(a, b)
        assert torch.equal(again.view(torch.int16), first.view(torch.int16))
    col = mk.poisoned((3, n, m), dtype).transpose(-1, -2)
    check_matmul(cutematmul.matmul(a, b, out=col), a, b, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("b_layout", ["n", "t"])
def test_small_n_unsplit_stores_c_itself_in_clusters_and_nothing_outside_out(mk, dtype, b_layout):
    """An unsplit narrow tile stores its 16-bit C by TMA in 2x1 clusters (an odd count of tile
    rows: the last cluster's second CTA has none).  Into a view of a wider buffer whose
    columns past N are inside the tile's width: TMA clips them, nothing outside the view is
    written; bitwise repeats."""
    import torch

    m, n, k = 8300, 24, 1000
    _, key, splits, transposed = dispatched(dtype, m, n, k)
    config = key.config
    assert (splits, transposed, config.partials) == (1, False, False), (splits, config)
    assert (config.tile_n, config.cluster_m) == (32, 2) and -(-m // config.tile_m) % 2 == 1
    a, b = layout_operands(mk, m, n, k, "n" + b_layout, dtype)
    wide = mk.poisoned((m, n + 40), dtype)
    out = wide[:, 8:n + 8]
    first = cutematmul.matmul(a, b, out=out)
    check_matmul(first, a, b, dtype)
    assert torch.isnan(wide[:, :8]).all() and torch.isnan(wide[:, n + 8:]).all(), \
        "a narrow tile wrote outside the out view"
    for _ in range(2):
        assert torch.equal(cutematmul.matmul(a, b).view(torch.int16), first.view(torch.int16))


@pytest.mark.parametrize("shape", [(4096, 4, 4096), (1000, 12, 3000), (257, 3, 999)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", ["nt", "tt"])
def test_small_n_with_an_under_aligned_c_is_written_by_the_reduction(mk, layout, shape):
    """C rows of 6-24 bytes (no TMA store can write them): with B K-major the product is not
    staged, the reduction writes C in place; into a view of a wider buffer, nothing outside it
    written."""
    import torch

    m, n, k = shape
    a, b = layout_operands(mk, m, n, k, layout, "float16")
    wide = mk.poisoned((m, n + 5), "float16")
    out = wide[:, 1:n + 1]
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, "float16")
    assert torch.isnan(wide[:, :1]).all() and torch.isnan(wide[:, n + 1:]).all()


@pytest.mark.parametrize("lib", ["cupy", "numpy"])
def test_split_k_through_other_libraries(lib):
    """CuPy (its memory pool) and NumPy (staged, stream-ordered workspace) take the split path."""
    if lib == "cupy":
        require_module("cupy")
    m, n, k = 16, 4096, 8192
    assert _splits(m, n, k, 1, "float32") > 1
    mk = Maker(lib, seed=3)
    a, b = mk.randn((m, k), "float32"), mk.randn((k, n), "float32")
    check_matmul(cutematmul.matmul(a, b), a, b, "float32")
