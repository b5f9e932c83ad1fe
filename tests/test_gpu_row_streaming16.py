"""16-bit products of few rows over a long operand of no whole 16-byte rows, on the GPU: SIMT's
row-streaming kernel reads every operand as it is (``configs.simt.streams_in_place``), on FMA
for the fewest rows and on tensor cores (``Config.mma``) for more.

Each case first asserts that the planned launch is that kernel (so a case never silently tests
another), then checks the result against float64 on fresh Gaussian data into a NaN-poisoned
``out``, and a second run for bitwise equality (the split-K reduction adds in a fixed order).
Covered: both 16-bit dtypes, B N-major (odd N) and K-major (odd K), A K- or M-major, every row
count of either kernel's CTA, tails in M, N and K, C^T for few columns, a batch with a
broadcast operand, B at an unaligned base, and C a view inside a wider buffer whose other
elements must keep their poison.
"""

from __future__ import annotations

import pytest

from conftest import require_module
from cutematmul.configs.simt import streams_in_place
from helpers import LAYOUT_MAJORS, Maker, check_matmul, layout_operands

pytestmark = pytest.mark.gpu

#: (M, N, K): N and K odd, so that in every layout the long operand's rows are no whole
#: 16-byte vectors; M of every CTA row count either kernel has (FMA 1, 2, 4, 8; tensor cores
#: 8, 16, 32, 64; which takes which M is ``configs.simt.HALF_FMA_MAX_M``'s, by B's major),
#: and inside one (3, 7, 12, 17, 20, 30, 33, 50, 57); 20 and 50 rows unsplit; 100 rows on a
#: 128-row CTA whose grid fills the SMs (``configs.simt.STREAM_FILL``).
SHAPES = [(1, 3001, 4097), (2, 515, 777), (3, 1027, 9001), (7, 4099, 2049), (8, 2053, 3001),
          (4, 8191, 1025), (12, 2051, 3001), (16, 1027, 4097), (17, 4099, 1025),
          (30, 515, 777), (32, 3001, 2049), (20, 8001, 100), (33, 2051, 3001), (64, 1027, 4097),
          (57, 515, 2049), (50, 8001, 100), (100, 4099, 8193)]
#: (layout, shape) pairs the dispatcher runs on the row-streaming kernel
#: (``streams_in_place``: M within the limit of B's major, N-major in "nn" and "tn", K-major
#: in "nt", and a grid that fills the 132 SMs of an H100 or H200; ``_streams_here`` skips a
#: case whose grid would not fill another GPU's SMs).
CASES = [(layout, shape) for layout in ("nn", "tn", "nt") for shape in SHAPES
         if streams_in_place(*shape, 1, 132, LAYOUT_MAJORS[layout], (False, False))]


@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=47)


def _streams_here(shape, layout):
    """Skip unless the dispatcher streams this product on the current GPU's SM count."""
    from cutematmul import device

    sms = device.device_info(device.current_device()).num_sms
    if not streams_in_place(*shape, 1, sms, LAYOUT_MAJORS[layout], (False, False)):
        pytest.skip(f"{layout} {shape}: its grid does not fill this GPU's {sms} SMs, so the "
                    "dispatcher takes the copy route (configs.simt.STREAM_FILL)")


def _planned(a, b, transposed=False):
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    work = launch.planned_launch(adapter_for(a), a, b)
    assert work.key.family == "simt" and work.key.config.gemv, work.key
    assert work.prep is None and work.transposed == transposed, work
    return work


def _twice(a, b, mk, shape=None):
    """Two products into fresh NaN-poisoned outputs; the first checked against float64."""
    import torch

    import cutematmul

    shape = shape or (a.shape[:-1] + b.shape[-1:])
    runs = []
    for _ in range(2):
        out = mk.poisoned(shape, str(a.dtype).replace("torch.", ""))
        runs.append(cutematmul.matmul(a, b, out=out))
    dtype = str(a.dtype).replace("torch.", "")
    check_matmul(runs[0], a, b, dtype)
    assert torch.equal(runs[0], runs[1]), "two runs of the same product differ"


@pytest.mark.parametrize("layout,shape", CASES,
                         ids=[f"{lay}-{'x'.join(map(str, s))}" for lay, s in CASES])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_few_rows_over_an_unaligned_b_are_correct(mk, dtype, shape, layout):
    _streams_here(shape, layout)
    a, b = layout_operands(mk, *shape, layout, dtype)
    _planned(a, b)
    _twice(a, b, mk)


#: (layout, (M, N, K)): a deep product of one or a few row-streaming tiles, which splits K
#: past ``configs.waves.DEEP_SPLITS`` up to its CTA slots (``configs.simt._gemv_ranked``).
DEEP = [("nn", (17, 133, 63265)), ("tn", (23, 93, 40001)), ("nt", (9, 70, 50001)),
        ("nn", (100, 130, 60001))]


@pytest.mark.parametrize("layout,shape", DEEP, ids=[f"{lay}-{'x'.join(map(str, s))}"
                                                      for lay, s in DEEP])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_deep_products_split_past_64_ways(mk, dtype, layout, shape):
    from cutematmul.configs import waves

    a, b = layout_operands(mk, *shape, layout, dtype)
    splits = _planned(a, b).splits
    assert splits > waves.DEEP_SPLITS, (shape, splits)
    _twice(a, b, mk)


#: (M, N, K) past the dispatcher's rows, for the 128-row CTA of sixteen warps on
#: ``kernel="simt"``: a tail row, one whole tile, three row tiles, unsplit (K 100).
WIDE_SHAPES = [(100, 2051, 3001), (128, 1027, 777), (300, 515, 100)]


@pytest.mark.parametrize("shape", WIDE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_128_row_ctas_are_correct(mk, dtype, layout, shape):
    """The tensor-core row-streaming kernel's 128-row CTA (two rows of eight warps), which
    ``kernel="simt"`` runs past the dispatcher's ``HALF_GEMV_MAX_M`` rows: every layout (tt as
    C^T), split and unsplit, twice, the same bits."""
    import torch

    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    a, b = layout_operands(mk, *shape, layout, dtype)
    work = launch.planned_launch(adapter_for(a), a, b, kernel="simt")
    assert work.key.config.mma and work.key.config.tile_m == 128 and work.prep is None, work
    runs = [cutematmul.matmul(a, b, out=mk.poisoned(shape[:2], dtype), kernel="simt")
            for _ in range(2)]
    check_matmul(runs[0], a, b, dtype)
    assert torch.equal(runs[0], runs[1]), "two runs of the same product differ"


@pytest.mark.parametrize("layout", ["tn", "nt"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_few_columns_over_an_unaligned_a_run_transposed(mk, dtype, layout):
    m, k = (3001, 4096) if layout == "tn" else (4096, 3001)
    a, b = layout_operands(mk, m, 3, k, layout, dtype)
    _planned(a, b, transposed=True)
    _twice(a, b, mk)


@pytest.mark.parametrize("shared", ["a", "b", "neither"])
def test_batches_with_a_broadcast_operand(mk, shared):
    _batched(mk, shared, 6, 1031, 2063, 3)


@pytest.mark.parametrize("shared", ["a", "b", "neither"])
def test_batches_of_more_rows_on_tensor_cores_with_a_broadcast_operand(mk, shared):
    _batched(mk, shared, 20, 1031, 2063, 3)


def _batched(mk, shared, m, n, k, batch):
    import torch

    a = mk.randn((m, k) if shared == "a" else (batch, m, k), "bfloat16")
    b = mk.randn((k, n) if shared == "b" else (batch, k, n), "bfloat16")
    _planned(a, b)
    _twice(a, b, mk, shape=(batch, m, n))
    assert torch.isfinite(a).all() and torch.isfinite(b).all()


@pytest.mark.parametrize("m", [8, 24])
def test_unaligned_base_and_c_view_stay_inside_their_arrays(mk, m):
    """B starts 2 bytes past a 16-byte boundary (a column slice) and C is a column slice of a
    NaN-poisoned buffer: the product is right and no element around C's view is written."""
    import torch

    import cutematmul

    n, k = 2047, 3000
    wide = mk.randn((k, n + 3), "float16")
    b = wide[:, 1:1 + n]
    a = mk.randn((m, k), "float16")
    buffer = torch.full((m, n + 9), float("nan"), dtype=torch.float16, device="cuda")
    out = buffer[:, 5:5 + n]
    _planned(a, b)  # (planned for a fresh C; the view's C changes only how C is written)
    cutematmul.matmul(a, b, out=out)
    torch.cuda.synchronize()
    check_matmul(out, a, b, "float16")
    assert torch.isnan(buffer[:, :5]).all() and torch.isnan(buffer[:, 5 + n:]).all()
