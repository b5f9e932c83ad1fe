"""GPU correctness: library x dtype x layout x shape, batched and broadcast, kernels, out=.

Every check compares with a float64 product of the same inputs (``helpers.check_matmul``) on fresh
Gaussian data, and writes into a NaN-poisoned ``out`` so an unwritten element fails.
"""

from __future__ import annotations

import numpy as np
import pytest

import cutematmul
from conftest import require_module
from helpers import Maker, check_matmul, dispatched, forced_schedule_runs, layout_operands

pytestmark = pytest.mark.gpu

LIBS = ["cupy", "torch", "numpy"]
DTYPES = ["float32", "float16", "bfloat16"]
LAYOUTS = ["nn", "tn", "nt", "tt"]  # t: the operand is a transposed view (a.T / b.T)
SHAPES = [  # (M, N, K)
    (1, 1, 1), (1, 7, 3), (7, 1, 5), (2, 3, 1), (17, 33, 65), (64, 64, 64),
    (127, 129, 131), (256, 512, 128), (300, 200, 1000), (8, 1024, 24),
]


def _lib(lib):
    if lib != "numpy":
        require_module(lib)
    return Maker(lib)


def _skip_unsupported(lib, dtype):
    if lib == "cupy" and dtype == "bfloat16":
        import cupy

        try:
            cupy.zeros(1, dtype=Maker("numpy").dtype("bfloat16"))
        except Exception as exc:
            pytest.skip(f"this CuPy cannot hold bfloat16 arrays ({exc})")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", LIBS)
def test_matmul_2d(lib, dtype, layout, shape):
    mk = _lib(lib)
    _skip_unsupported(lib, dtype)
    m, n, k = shape
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    out = mk.poisoned((m, n), dtype)
    res = cutematmul.matmul(a, b, out=out)
    assert res is out
    check_matmul(res, a, b, dtype)
    fresh = cutematmul.matmul(a, b)
    assert type(fresh) is type(a)
    check_matmul(fresh, a, b, dtype)


@pytest.mark.parametrize("kernel", ["sm80", "sm90"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 9), (128, 256, 64), (257, 129, 520),
                                   (1000, 1000, 1000)], ids=lambda s: "x".join(map(str, s)))
def test_forced_kernel(kernel, dtype, layout, shape):
    mk = _lib("torch")
    m, n, k = shape
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    out = mk.poisoned((m, n), dtype)
    check_matmul(cutematmul.matmul(a, b, out=out, kernel=kernel), a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_odd_large(dtype):
    """4097 x 4095 x 4093: unaligned leading dimensions everywhere."""
    mk = _lib("torch")
    a, b = layout_operands(mk, 4097, 4095, 4093, "nn", dtype)
    out = mk.poisoned((4097, 4095), dtype)
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)


BATCHED = [  # (a shape, b shape)
    ((3, 4, 5), (3, 5, 6)),
    ((3, 4, 5), (5, 6)),
    ((4, 5), (3, 5, 6)),
    ((2, 1, 4, 5), (3, 5, 6)),
    ((2, 3, 4, 5), (1, 3, 5, 6)),
    ((5,), (3, 5, 6)),
    ((3, 4, 5), (5,)),
    ((5,), (5, 6)),
    ((4, 5), (5,)),
    ((5,), (5,)),
    ((64, 128, 96), (64, 96, 72)),
    ((0, 4, 5), (5, 6)),
]


@pytest.mark.parametrize("shapes", BATCHED, ids=lambda s: f"{s[0]}@{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", LIBS)
def test_batched_broadcast(lib, dtype, shapes):
    mk = _lib(lib)
    _skip_unsupported(lib, dtype)
    a, b = mk.randn(shapes[0], dtype), mk.randn(shapes[1], dtype)
    expected = np.matmul(np.zeros(shapes[0]), np.zeros(shapes[1])).shape
    out = mk.poisoned(expected, dtype)
    res = cutematmul.matmul(a, b, out=out)
    assert tuple(res.shape) == expected
    if np.prod(expected):
        check_matmul(res, a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_strided_and_unaligned_views(lib, dtype):
    mk = _lib(lib)
    _skip_unsupported(lib, dtype)
    big_a = mk.randn((70, 90), dtype)
    big_b = mk.randn((90, 80), dtype)
    cases = [
        (big_a[:33, :45], big_b[:45, :31]),          # leading dims 90 / 80, odd extents
        (big_a[1:34, 3:48], big_b[5:50, 7:38]),      # unaligned base pointers
        (big_a[:, ::2], big_b[::2, :]),              # no unit stride: copied
        (big_a[::3, :].T[:40], big_b[:24, ::2]),     # transposed and strided
    ]
    for a, b in cases:
        check_matmul(cutematmul.matmul(a, b), a, b, dtype)


@pytest.mark.parametrize("lib", ["cupy", "torch", "numpy"])
def test_k_zero_gives_zeros(lib):
    mk = _lib(lib)
    a, b = mk.randn((5, 0), "float32"), mk.randn((0, 7), "float32")
    out = mk.poisoned((5, 7), "float32")
    res = cutematmul.matmul(a, b, out=out)
    assert np.all(_np(res) == 0)


def _np(x):
    from helpers import to_numpy

    return to_numpy(x)


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_out_column_major_and_transposed(lib):
    mk = _lib(lib)
    a, b = mk.randn((37, 21), "float16"), mk.randn((21, 45), "float16")
    out = mk.poisoned((45, 37), "float16").T  # column-major output view
    res = cutematmul.matmul(a, b, out=out)
    check_matmul(res, a, b, "float16")


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_out_overlap_is_rejected(lib):
    mk = _lib(lib)
    a = mk.randn((8, 8), "float32")
    with pytest.raises(ValueError, match="overlaps a"):
        cutematmul.matmul(a, mk.randn((8, 8), "float32"), out=a)


def test_mixed_libraries_rejected():
    cupy = require_module("cupy")
    torch = require_module("torch")
    with pytest.raises(TypeError, match="same array library"):
        cutematmul.matmul(cupy.ones((2, 2), "float32"), torch.ones(2, 2, device="cuda"))


def test_compiled_kernels_are_reused_across_sizes():
    torch = require_module("torch")
    a, b = torch.randn(1000, 1000, device="cuda"), torch.randn(1000, 1000, device="cuda")
    cutematmul.matmul(a, b)
    before = cutematmul.cache_info()["memory"]["misses"]
    for m, n, k in [(1008, 992, 1016), (992, 1024, 984)]:
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        check_matmul(cutematmul.matmul(a, b), a, b, "float32")
    assert cutematmul.cache_info()["memory"]["misses"] == before


# Shapes whose tiles leave a partial wave with 128x256, so the dispatcher picks 128x192 (tails in
# M, N and K; checked against the dispatcher so the test cannot silently stop covering it).
# With A K-major the dispatcher may run such products swapped instead (``configs.sm90
# ._swapped_wide``, tests/test_gpu_swap.py), so the pick is read for an M-major A and forced in
# every layout.
WAVE_FILL = [(770, 2890, 1001), (789, 2890, 77)]
# The widths that are no power of two (configs.sm90._WIDE_EFFICIENCY): (shape, tile_n, split).
# An N-major B tile of these widths is 64-byte swizzled; tails in M, N and K, odd tile-row
# counts, and split-K partials.
WIDE = [((1530, 1540, 700), 160, False), ((1500, 1500, 77), 160, False),
        ((1807, 1581, 333), 224, False), ((383, 1600, 9001), 160, True),
        ((721, 666, 9001), 224, True)]


def _sm90_pick(dtype: str, m: int, n: int, k: int, what: str, batch: int = 1,
               majors: tuple[str, str] = ("k", "n")):
    """(KernelKey, splits) the dispatcher picks for the shape (operands of ``majors``); a skip
    where the GPU runs another family than sm90 (``what`` names the configuration under test)."""
    family, key, splits, _ = dispatched(dtype, m, n, k, batch, majors)
    if family.name != "sm90":
        pytest.skip(f"{what} is an sm90 configuration; this GPU runs {family.name}")
    return key, splits


def _check_torch_product(dtype: str, layout: str, m: int, n: int, k: int) -> None:
    mk = _lib("torch")
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    out = mk.poisoned((m, n), dtype)
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)


def _check_picked(dtype: str, layout: str, shape, what: str, splits: int | None = None,
                  **fields) -> None:
    """The dispatcher's sm90 pick for ``shape`` has these config ``fields`` (and ``splits``,
    unless None), and the product in ``layout`` is correct."""
    key, picked = _sm90_pick(dtype, *shape, what)
    found = {name: getattr(key.config, name) for name in fields}
    assert found == fields and splits in (None, picked), (key.config, picked)
    _check_torch_product(dtype, layout, *shape)


@pytest.mark.parametrize("shape", WAVE_FILL, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wave_filling_tile(dtype, layout, shape):
    _check_unswapped_tile(dtype, layout, shape, 192, False)


def _check_unswapped_tile(dtype: str, layout: str, shape, tile_n: int, split: bool) -> None:
    """The dispatcher's pick for ``shape`` with an M-major A (where no mid product runs
    swapped) and a K-major B (an N-major one does not take 128 x 160 under an M-major A:
    ``configs.sm90._ACROSS_SLOW``) is an unswapped 128 x ``tile_n`` tile, split or not; that
    schedule, forced in ``layout``, gives the right product."""
    key, splits = _sm90_pick(dtype, *shape, f"the 128x{tile_n} tile", majors=("m", "k"))
    config = key.config
    assert (config.tile_m, config.tile_n, config.swap, splits > 1) == (128, tile_n, False, split), \
        (config, splits)
    a, b = layout_operands(_lib("torch"), *shape, layout, dtype)
    (out,) = forced_schedule_runs(a, b, config, splits)
    check_matmul(out, a, b, dtype)


@pytest.mark.parametrize("case", WIDE, ids=lambda c: "x".join(map(str, c[0])))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wide_tiles(dtype, layout, case):
    shape, tile_n, split = case
    _check_unswapped_tile(dtype, layout, shape, tile_n, split)


# 16-bit products of one 64-row tile row (32 < M <= 64) whose N is too short to run swapped
# take the 64x64 tile (the last one split in K): M tails, N and K tails, every layout; each
# checked against the dispatcher.
ONE_ROW = [(64, 2048, 2048), (48, 1000, 2056), (33, 520, 4104)]


@pytest.mark.parametrize("shape", ONE_ROW, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_one_tile_row_products(dtype, layout, shape):
    key, splits = _sm90_pick(dtype, *shape, "the 64x64 tile")
    assert (key.config.tile_m, key.config.tile_n) == (64, 64), key.config
    assert not key.config.swap and (splits > 1) == (shape == ONE_ROW[-1]), (splits, key.config)
    _check_torch_product(dtype, layout, *shape)


# 16-bit products whose M spans two tiles or more run in 2x1 clusters (B multicast): even and odd
# tile-row counts (the last cluster's second CTA then has no rows), tails in M, N and K, every
# tile shape the dispatcher clusters; each checked against the dispatcher.
CLUSTERED = [(128, 2000, 3000), (200, 1000, 999), (300, 777, 555), (1000, 1000, 1000),
             (1537, 1531, 1000), (2100, 2200, 1100)]


@pytest.mark.parametrize("shape", CLUSTERED, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_clustered_products(dtype, layout, shape):
    _check_picked(dtype, layout, shape, "a 2x1 cluster", cluster_m=2)


# 16-bit products whose 2x2 clusters fit one wave with an even count of tile columns run in 2x2
# clusters (configs.sm90._QUAD: A and B multicast): 64- and 128-row tiles, tails in M, N and K,
# odd tile rows (the last cluster row's second CTAs have no rows), every layout.
QUAD = [(200, 1000, 999), (1537, 1531, 1000), (2816, 256, 2496), (648, 968, 2784)]


@pytest.mark.parametrize("shape", QUAD, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_2x2_clustered_products(dtype, layout, shape):
    _check_picked(dtype, layout, shape, "a 2x2 cluster", splits=1, cluster_m=2, cluster_n=2)


def test_2x2_clustered_batch_with_broadcast():
    """A batch of 2x2-clustered products against one shared B (batch stride 0)."""
    m, n, k = 648, 968, 2784
    key, _ = _sm90_pick("bfloat16", m, n, k, "a 2x2 cluster", batch=2)
    assert key.config.cluster_n == 2, key.config
    mk = _lib("torch")
    a, b = mk.randn((2, m, k), "bfloat16"), mk.randn((k, n), "bfloat16")
    out = mk.poisoned((2, m, n), "bfloat16")
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, "bfloat16")


# N of at most 64 over many tile rows: the 64 x 64 tile in 2x1 clusters (B multicast,
# configs.sm90._ONE_ROW_TILE); odd tile rows and tails in M, N and K.
ONE_COLUMN = [(2352, 40, 1056), (4097, 64, 1000), (1001, 33, 77), (3000, 57, 2000)]


@pytest.mark.parametrize("shape", ONE_COLUMN, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_one_tile_column_products_in_clusters(dtype, layout, shape):
    _check_picked(dtype, layout, shape, "the 64x64 tile in 2x1 clusters", splits=1, tile_m=64,
                  tile_n=64, cluster_m=2)


def test_clustered_batch_with_broadcast():
    """A batch of clustered products against one shared B (batch stride 0), odd tile rows."""
    m, n, k = 300, 520, 260
    assert _sm90_pick("float16", m, n, k, "a 2x1 cluster", batch=3)[0].config.cluster_m == 2
    mk = _lib("torch")
    a, b = mk.randn((3, m, k), "float16"), mk.randn((k, n), "float16")
    out = mk.poisoned((3, m, n), "float16")
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, "float16")
