"""float32 precision modes on the GPU: "highest" (SIMT fp32), "high" (3xTF32) and "tf32".

Each mode is held to its error bound against a float64 product of the same inputs, beside cuBLAS
SGEMM's own error on those inputs (PyTorch with TF32 off): Gaussian data and data with a wide
exponent range (rows of A and columns of B scaled by 2^-20..2^20), K from 1 to 16384, every
layout, batches and a broadcast operand.  Outputs are NaN-poisoned before each run.

Bounds: "high" <= 2x cuBLAS SGEMM's relative Frobenius error (plus 2^-24, the rounding of a
single product, so a K = 1 product is not held to less than its last bit); "tf32" <= 4e-3 (one
TF32 pass: 11 significant bits per operand); "highest" the suite-wide fp32 bound.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np
import pytest

import cutematmul
from conftest import require_module
from cutematmul.configs import simt
from helpers import (TF32_NARROW, TF32_SCHEDULES, TOLERANCE, dispatched, relative_error,
                     tf32_forced_choice, to_numpy)

pytestmark = pytest.mark.gpu

LAYOUTS = ["nn", "tn", "nt", "tt"]  # t: the operand is a transposed view
KS = [1, 7, 64, 1000, 4096, 16384]
TF32_BOUND = TOLERANCE["tf32"]
UNIT = 2.0**-24


@pytest.fixture(scope="module")
def torch():
    torch = require_module("torch")
    old = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    yield torch
    torch.backends.cuda.matmul.allow_tf32 = old[0]
    torch.set_float32_matmul_precision(old[1])


def _tf32_capable() -> bool:
    from cutematmul import device

    return device.device_info(device.current_device()).capability == (9, 0)


def _operands(torch, m, n, k, layout, seed, batch=(), wide=False):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a_shape = batch + ((k, m) if layout[0] == "t" else (m, k))
    b_shape = batch + ((n, k) if layout[1] == "t" else (k, n))
    a = torch.randn(a_shape, device="cuda", generator=g)
    b = torch.randn(b_shape, device="cuda", generator=g)
    if layout[0] == "t":
        a = a.transpose(-1, -2)
    if layout[1] == "t":
        b = b.transpose(-1, -2)
    if wide:  # rows of A and columns of B over 40 binades
        ea = torch.randint(-20, 21, (m, 1), device="cuda", generator=g).float()
        eb = torch.randint(-20, 21, (1, n), device="cuda", generator=g).float()
        a = a * torch.exp2(ea)
        b = b * torch.exp2(eb)
    return a, b


def _errors(torch, a, b, precision):
    """(cutematmul's error, cuBLAS SGEMM's error) against float64, relative Frobenius.  The TF32
    modes are forced onto their kernel (kernel="sm90"): with "auto", small and skinny products
    take the fp32 kernel instead (``dispatch._fp32_is_faster``), which would test nothing."""
    expected = np.matmul(to_numpy(a), to_numpy(b))
    out = torch.full(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                     + (a.shape[-2], b.shape[-1]),
                     float("nan"), device="cuda")
    kernel = "auto" if precision == "highest" or not _tf32_capable() else "sm90"
    got = cutematmul.matmul(a, b, out=out, precision=precision, kernel=kernel)
    return relative_error(got, expected), relative_error(torch.matmul(a, b), expected)


@contextlib.contextmanager
def _forced(a, b, choice, precision: str = "highest", kernel: str = "simt"):
    """``choice`` (config, splits, transposed) made the product's schedule through the tuned
    tier (what ``cutematmul.tune`` records) inside the block; yields the planned launch, checked
    to be exactly that schedule."""
    from cutematmul import cache, launch
    from cutematmul.adapters import adapter_for

    work = launch.planned_launch(adapter_for(a), a, b, precision=precision, kernel=kernel)
    assert work.problem is not None, f"not one {kernel} launch"
    with cache.trial_tuned(work.problem, choice):
        forced = launch.planned_launch(adapter_for(a), a, b, precision=precision, kernel=kernel)
        assert (forced.key.config, forced.splits, forced.transposed) == choice, forced.key
        yield forced


def _check(err, sgemm_err, precision):
    if precision == "high":
        assert err <= 2 * sgemm_err + UNIT, f"3xTF32 error {err:.3g} > 2 x SGEMM's {sgemm_err:.3g}"
    elif precision == "tf32":
        assert err <= TF32_BOUND, f"TF32 error {err:.3g} > {TF32_BOUND}"
    else:
        assert err <= TOLERANCE["float32"], f"fp32 error {err:.3g}"


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("precision", ["high", "tf32", "highest"])
@pytest.mark.parametrize("wide", [False, True], ids=["gauss", "wide"])
def test_error_bound_over_k(torch, precision, k, wide):
    err, sgemm = _errors(torch, *_operands(torch, 136, 200, k, "nn", k, wide=wide), precision)
    _check(err, sgemm, precision)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("precision", ["high", "tf32"])
@pytest.mark.parametrize("shape", [(300, 260, 777), (16, 2048, 4096), (1, 129, 70),
                                   (24, 1030, 2000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_layouts_and_tails(torch, precision, layout, shape):
    m, n, k = shape
    err, sgemm = _errors(torch, *_operands(torch, m, n, k, layout, 11), precision)
    _check(err, sgemm, precision)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_clustered_tf32_with_tails(torch, layout):
    """Unsplit one-pass TF32 products of two 128-row tiles or more run in 2x1 clusters (the
    shared tile multicast); N and K tails included.  The dispatcher must still pick a cluster
    here.  (64 x 128 in 2x1: the forced ``cluster-64`` schedule below.)"""
    from cutematmul.configs import sm90

    m, n, k = 2048, 2000, 1000
    assert sm90.choose_schedule(m, n, k, 1, 132, math="tf32")[0].cluster_m == 2
    err, _ = _errors(torch, *_operands(torch, m, n, k, layout, 13), "tf32")
    assert err <= TF32_BOUND


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("schedule", TF32_SCHEDULES, ids=lambda s: s[0])
def test_tf32_reads_transposed_operands_in_place(torch, schedule, layout):
    """One-pass TF32 reads an M-major A from registers, and an N-major B as the register operand
    of C^T = B^T A^T (only "tn", both transposed, copies B): every layout under each schedule
    the kernel has, forced through the tuned tier and checked to be the planned launch."""
    if not _tf32_capable():
        pytest.skip("the TF32 kernels need an sm_90 GPU")
    _, m, n, k, *_ = schedule
    a, b = _operands(torch, m, n, k, layout, 17)
    with _forced(a, b, tf32_forced_choice(schedule, layout), "tf32", "sm90") as forced:
        # nt reads both operands K-major from shared memory; the others have a register operand.
        registers = (forced.key.a_major, forced.key.b_major) != ("k", "k")
        assert registers == (layout != "nt"), forced.key
        assert (forced.prep is not None) == (layout == "tn"), forced.prep
        err, _ = _errors(torch, a, b, "tf32")
    assert err <= TF32_BOUND, f"{schedule[0]} {layout}: TF32 error {err:.3g}"


@pytest.mark.parametrize("layout", ["nt", "tt", "tn"])
@pytest.mark.parametrize("schedule", TF32_NARROW, ids=lambda s: s[0])
def test_tf32_small_n_runs_on_the_narrow_tiles(torch, schedule, layout):
    """A small-N one-pass TF32 product whose kernel does not swap (B K-major, or copied K-major:
    "tn", both transposed, copies the smaller B) is planned on a narrow tile untransposed, and
    each forced variant matches float64."""
    if not _tf32_capable():
        pytest.skip("the TF32 kernels need an sm_90 GPU")
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    _, m, n, k, *_ = schedule
    a, b = _operands(torch, m, n, k, layout, 19)
    planned = launch.planned_launch(adapter_for(a), a, b, precision="tf32", kernel="sm90")
    assert planned.key.config.tile_n <= 32 and not planned.transposed, planned.key
    assert not planned.key.config.swap, planned.key
    with _forced(a, b, tf32_forced_choice(schedule, layout), "tf32", "sm90") as forced:
        assert (forced.prep is not None) == (layout == "tn"), forced.prep
        err, _ = _errors(torch, a, b, "tf32")
    assert err <= TF32_BOUND, f"{schedule[0]} {layout}: TF32 error {err:.3g}"


#: (id, layout, M, N, which operand is copied, its copy's major): ``configs.simt
#: .operand_copies``'s cases, with M and N not multiples of 4 (the copies' rows are padded).
COPIES = [("a", "nt", simt.COPY_A_MIN_M + 3, simt.COPY_A_MIN_N + 5, 0, "m"),
          ("b", "nt", simt.COPY_B_MIN_M + 3, simt.COPY_B_MIN_N + 45, 1, "n"),
          ("b-tt", "tt", simt.COPY_B_MIN_M + 3, simt.COPY_B_MIN_N + 45, 1, "n")]


@pytest.mark.parametrize("copy", COPIES, ids=lambda c: c[0])
@pytest.mark.parametrize("batch,shared", [((), False), ((2,), False), ((2,), True)],
                         ids=["single", "batched", "broadcast"])
def test_highest_reads_k_major_operands_through_copies(torch, copy, batch, shared):
    """fp32 "highest" on large products reads a K-major A (both operands K-major) M-major, or a
    K-major B N-major, through a copy the prep kernel makes (``configs.simt.operand_copies``):
    tails in M, N and K, a batch and a broadcast operand, within the fp32 bound."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    _, layout, m, n, which, major = copy
    a, b = _operands(torch, m, n, 67, layout, 23, batch=batch)
    if shared:  # one copied operand for the whole batch: copied once
        a, b = (a[0], b) if which == 0 else (a, b[0])
    work = launch.planned_launch(adapter_for(a), a, b, precision="highest", kernel="simt")
    assert work.prep is not None and work.prep[1 - which] is None, work.prep
    assert work.prep[which].to_major == major, work
    _check(*_errors(torch, a, b, "highest"), "highest")


@pytest.mark.parametrize("m,n,k", [(-(-simt.COPY_B_GEMV_MIN_MK // 4099), 8, 4099),
                                   (1027, 3, 32771), (16411, 2, simt.COPY_B_GEMV_MIN_K)])
@pytest.mark.parametrize("batch,shared", [((), False), ((3,), False), ((3,), True)],
                         ids=["single", "batched", "broadcast"])
def test_highest_few_columns_of_n_major_b(torch, m, n, k, batch, shared):
    """fp32 "highest" of ``a @ x`` with x of shape (K, 2..8) stored row-major: B is copied
    K-major and the row-streaming kernel computes C^T = B^T A^T (``configs.simt
    .operand_copies``); tails in M, N and K, a batch and one x shared by the batch."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    a, b = _operands(torch, m, n, k, "nn", 31, batch=batch)
    if shared:
        b = b[0]
    work = launch.planned_launch(adapter_for(a), a, b, precision="highest", kernel="simt")
    assert work.prep is not None and work.prep[0] is None and work.prep[1].to_major == "k", work
    assert work.transposed and work.key.config.gemv, work
    _check(*_errors(torch, a, b, "highest"), "highest")


@pytest.mark.parametrize("precision", ["high", "tf32"])
def test_batched_and_broadcast(torch, precision):
    a, b = _operands(torch, 96, 80, 300, "nn", 3, batch=(3,))
    _check(*_errors(torch, a, b, precision), precision)
    shared = b[0]  # one B for the whole batch (stride 0 after broadcasting)
    _check(*_errors(torch, a, shared, precision), precision)
    at = a.transpose(-1, -2).contiguous().transpose(-1, -2)  # M-major batch of A
    _check(*_errors(torch, at, shared, precision), precision)


def test_modes_differ_where_they_should(torch):
    """The mode reaches the kernel: TF32 is measurably coarser than fp32, 3xTF32 is not."""
    if not _tf32_capable():
        pytest.skip("the TF32 modes run only on sm_90a; elsewhere they compute 'highest'")
    a, b = _operands(torch, 512, 512, 4096, "nn", 5)
    tf32, sgemm = _errors(torch, a, b, "tf32")
    high, _ = _errors(torch, a, b, "high")
    assert tf32 > 20 * sgemm, (tf32, sgemm)
    assert high <= 2 * sgemm, (high, sgemm)


@pytest.mark.parametrize("precision", ["high", "tf32"])
def test_repeatable_bitwise(torch, precision):
    """Split and unsplit TF32 products give bitwise-identical results run to run."""
    for m, n, k in ((16, 4096, 8192), (1024, 1024, 1024)):
        a, b = _operands(torch, m, n, k, "nn", 9)
        first = cutematmul.matmul(a, b, precision=precision, kernel="sm90")
        for _ in range(3):
            assert torch.equal(cutematmul.matmul(a, b, precision=precision, kernel="sm90"), first)


def test_high_non_finite_inputs_stay_non_finite(torch):
    """3xTF32 splits x into big + small, and an infinite x gets small = 0 (not Inf - Inf).  What
    it cannot keep is IEEE's Inf * 1 = Inf where the other operand's small part is 0: the cross
    term Inf * 0 gives NaN (as in CUTLASS's 3xTF32; docs/api.md).  Rows without a non-finite
    input are unaffected and accurate; rows with one are all non-finite."""
    a, b = _operands(torch, 64, 64, 64, "nn", 2)
    a[3, 5] = float("inf")
    a[9, 1] = float("nan")
    got = cutematmul.matmul(a, b, precision="high", kernel="sm90")
    bad = torch.zeros(64, dtype=torch.bool, device="cuda")
    bad[3] = bad[9] = True
    assert not torch.isfinite(got[bad]).any()
    expected = np.matmul(to_numpy(a[~bad]), to_numpy(b))
    assert relative_error(got[~bad], expected) <= 2e-6


def test_cupy_and_host_routes_take_the_mode(torch):
    """The same mode through CuPy arrays and NumPy (host) arrays."""
    cupy = require_module("cupy")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((200, 3000), dtype=np.float32)
    b = rng.standard_normal((3000, 150), dtype=np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    for precision, bound in (("high", 1e-6), ("tf32", TF32_BOUND)):
        got = cutematmul.matmul(cupy.asarray(a), cupy.asarray(b), precision=precision,
                                kernel="sm90")
        assert relative_error(got, expected) <= bound
        host = cutematmul.matmul(a, b, precision=precision, kernel="sm90")
        assert relative_error(host, expected) <= bound


def test_auto_takes_the_fp32_kernel_where_it_is_faster(torch):
    """Under "auto", skinny 3xTF32 products and one-pass TF32 matrix-vector products run the
    SIMT fp32 kernel (more accurate and, there, faster): their error is fp32's.  A skinny
    one-pass TF32 product of 16 rows runs TF32 (its error is TF32's)."""
    for m, precision in ((16, "high"), (1, "tf32")):
        a, b = _operands(torch, m, 4096, 4096, "nn", 8)
        expected = np.matmul(to_numpy(a), to_numpy(b))
        got = cutematmul.matmul(a, b, precision=precision)
        assert relative_error(got, expected) <= TOLERANCE["float32"], (m, precision)
    a, b = _operands(torch, 16, 4096, 4096, "nn", 8)
    expected = np.matmul(to_numpy(a), to_numpy(b))
    err = relative_error(cutematmul.matmul(a, b, precision="tf32"), expected)
    assert TOLERANCE["float32"] < err <= TF32_BOUND, err


@pytest.mark.parametrize("wide", [False, True], ids=["gauss", "wide"])
def test_high_unsplit_at_the_promoted_add_budget(torch, wide):
    """The longest chain of promoted adds the scheduler allows one split: K = 32 x
    _PROMOTED_CHAIN, forced unsplit, still within 2x SGEMM's error."""
    if not _tf32_capable():
        pytest.skip("3xTF32 needs an sm_90 GPU")
    from dataclasses import replace

    from cutematmul import cache, launch
    from cutematmul.adapters import adapter_for
    from cutematmul.configs import sm90

    k = 32 * sm90._PROMOTED_CHAIN
    a, b = _operands(torch, 256, 384, k, "nn", 5, wide=wide)
    work = launch.planned_launch(adapter_for(a), a, b, precision="high", kernel="sm90")
    assert work is not None and work.problem is not None and work.key.dtype == "tf32x3"
    unsplit = (replace(work.key.config, partials=False), 1, False)
    with cache.trial_tuned(work.problem, unsplit):
        assert launch.planned_launch(adapter_for(a), a, b, precision="high",
                                     kernel="sm90").reduce is None
        err, sgemm = _errors(torch, a, b, "high")
    _check(err, sgemm, "high")


#: The SIMT ladder's 16-row tiles (one 4 x 8-lane warp row: 4 accumulators per thread along M),
#: for fp32 products of M <= 16.  Forced: M inside one tile and across two (M tails), N and K
#: tails, unsplit and split; every layout (an M-major A is copied 16 bytes at a time).
SIXTEEN_ROWS = [tile for tile in simt._LADDER if tile[0] == 16]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mnk_splits", [(1, 300, 1000, 1), (7, 777, 4099, 4), (16, 520, 64, 1),
                                        (29, 1030, 2000, 3)],
                         ids=lambda c: "x".join(map(str, c[:3])) + f"s{c[3]}")
@pytest.mark.parametrize("tile", SIXTEEN_ROWS, ids=lambda t: f"{t[0]}x{t[1]}")
def test_simt_sixteen_row_tiles(torch, tile, mnk_splits, layout):
    m, n, k, splits = mnk_splits
    a, b = _operands(torch, m, n, k, layout, 19)
    with _forced(a, b, (replace(simt._config(*tile), partials=splits > 1), splits, False)):
        err, _ = _errors(torch, a, b, "highest")
    _check(err, None, "highest")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(9, 4096, 4096), (13, 2056, 8200), (16, 8192, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_simt_small_m_picks_sixteen_rows(torch, shape, layout):
    """The scheduler's own pick for fp32 products of 8 < M <= 16 is a 16-row tile over an
    N-major B, the staged row-streaming kernel's 16-row CTA over a K-major one
    (``configs.simt.staged_rows``), and it is right in every layout, also as a batch against
    one broadcast B."""
    m, n, k = shape
    _, key, _, _ = dispatched("float32", m, n, k)
    assert key.config.tile_m == 16 and not key.config.gemv, key.config
    _, key, _, _ = dispatched("float32", m, n, k, majors=("k", "k"))
    assert key.config.staged and key.config.tile_m == 16, key.config
    a, b = _operands(torch, m, n, k, layout, 23)
    _check(*_errors(torch, a, b, "highest"), "highest")
    batch = torch.randn((3, m, k), device="cuda")
    _check(*_errors(torch, batch, b, "highest"), "highest")


#: Forced staged row-streaming schedules (fp32 over a K-major B): (rows, columns, M, N, K,
#: splits).  M of one row, below, at and past the CTA's rows (two row tiles), N of two
#: columns, N tails, K = 3 and 7 (one partial vector), K whole vectors (A and B read by
#: 16-byte copies) and not (4-byte copies), stages that wrap the ring, splits whose runs are
#: empty (K = 3 in 3 splits), every column count.  (K = 1 and N = 1 leave B's major to the
#: dispatcher, which reads it N-major: the kernel is never planned there.)
STAGED_CASES = [(16, 128, 9, 300, 1000, 1), (16, 128, 16, 129, 4099, 3),
                (32, 128, 17, 777, 7, 1), (32, 128, 32, 130, 1001, 2),
                (32, 128, 27, 2288, 3944, 7), (16, 128, 5, 64, 3, 3),
                (32, 128, 40, 258, 2048, 1), (16, 128, 13, 2, 300, 2),
                (32, 64, 20, 1030, 515, 2), (16, 256, 12, 600, 704, 1),
                (16, 128, 1, 4100, 2000, 4)]


@pytest.mark.parametrize("layout", ["nt", "tt"])
@pytest.mark.parametrize("case", STAGED_CASES, ids=lambda c: "r{}x{}_{}x{}x{}_s{}".format(*c))
def test_simt_staged_forced(torch, case, layout):
    rows, cols, m, n, k, splits = case
    a, b = _operands(torch, m, n, k, layout, 31)
    config = replace(simt.staged_config(rows, cols), partials=splits > 1)
    with _forced(a, b, (config, splits, False)):
        err, _ = _errors(torch, a, b, "highest")
    _check(err, None, "highest")


@pytest.mark.parametrize("layout", ["nt", "tt"])
@pytest.mark.parametrize("shape", [(27, 2288, 3944), (20, 3000, 4000), (32, 4096, 1023),
                                   (11, 50, 9000)], ids=lambda s: "x".join(map(str, s)))
def test_simt_staged_picked(torch, shape, layout):
    """The planned launch of an fp32 product of 9-32 rows over a K-major B is the staged
    row-streaming kernel, reading both operands as they are; right as it is and as a batch of
    3 against one broadcast B."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    m, n, k = shape
    a, b = _operands(torch, m, n, k, layout, 37)
    work = launch.planned_launch(adapter_for(a), a, b, precision="highest")
    assert work.key.config.staged and work.prep is None, work
    _check(*_errors(torch, a, b, "highest"), "highest")
    batch = torch.randn((3, m, k), device="cuda")
    if layout[0] == "t":
        batch = batch.mT.contiguous().mT
    _check(*_errors(torch, batch, b, "highest"), "highest")


#: Forced row-streaming (gemv) schedules: (rows, M, N, K, splits).  M at the tile's rows and
#: below them, M across several row tiles (5 rows on 2-row CTAs), N tails inside a lane's 4
#: columns and past the last warp's group, K = 1, K tails inside a 128-k step and inside an
#: unrolled run of 4 k-rows, splits whose runs are empty (K = 1 in 3 splits).  N of whole
#: 4-column vectors short of a whole tile (300, 260, 2052): the last tile's lanes past N read
#: N's last vector (an N-major B read by vectors).
GEMV_CASES = [(1, 1, 300, 1000, 1), (1, 1, 129, 4099, 3), (2, 2, 777, 7, 1), (2, 5, 130, 1001, 2),
              (4, 3, 1030, 4100, 4), (4, 4, 64, 1, 3), (8, 8, 258, 2049, 1), (8, 6, 1, 300, 2),
              (8, 7, 260, 515, 2), (2, 2, 2052, 999, 3)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", GEMV_CASES, ids=lambda c: "r{}_{}x{}x{}_s{}".format(*c))
def test_simt_gemv_forced(torch, case, layout):
    rows, m, n, k, splits = case
    a, b = _operands(torch, m, n, k, layout, 29)
    with _forced(a, b, (replace(simt.gemv_config(rows), partials=splits > 1), splits, False)):
        err, _ = _errors(torch, a, b, "highest")
    _check(err, None, "highest")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(1, 4096, 4096), (3, 1000, 777), (8, 5000, 20000),
                                   (4096, 1, 4096), (2000, 6, 3001)],
                         ids=lambda s: "x".join(map(str, s)))
def test_simt_gemv_picked(torch, shape, layout):
    """The planned launch of an fp32 product of at most 8 rows, or 8 columns (computed as C^T),
    is a row-streaming kernel: the FMA one wherever it reads the majors well (not an M-major A
    with a K-major B, in the kernel's orientation), the staged one over a K-major B from 3 rows
    (``configs.simt.staged_rows``); right in every layout, as a batch with a broadcast
    operand, and with 1-D operands (a vector times a matrix, a matrix times a vector)."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    m, n, k = shape
    a, b = _operands(torch, m, n, k, layout, 31)
    work = launch.planned_launch(adapter_for(a), a, b)
    # Where the layout fixes the majors (a 1-row A or 1-column B is either major, and N = 1 may
    # be planned as the row vector C^T): the kernel's majors are read well exactly when it runs.
    if 1 < m <= 8 and n > 8:
        assert work.key.config.gemv and not work.transposed, (layout, work.key)
        staged = layout[1] == "t" and (layout == "tt" or m >= simt.STAGED_MIN_K_MAJOR_M)
        assert work.key.config.staged == staged, (layout, work.key)
    elif 8 < m and 1 < n <= 8:
        assert work.key.config.gemv == (layout != "nn"), (layout, work.key)
        assert work.transposed == work.key.config.gemv, (layout, work.transposed)
    if work.key.config.gemv and not work.key.config.staged:
        assert simt.gemv_reads(work.key.a_major, work.key.b_major), work.key
    _check(*_errors(torch, a, b, "highest"), "highest")
    if layout == "nn":
        _check(*_errors(torch, torch.randn((3, m, k), device="cuda"), b, "highest"), "highest")
        _check(*_errors(torch, a, torch.randn((2, 1, k, n), device="cuda"), "highest"), "highest")
        vectors = [(a[0], b)] if m == 1 else [(a, b[:, 0])] if n == 1 else []
        for x, y in vectors:  # NumPy's promotion: the product drops the vector's dimension
            expected = np.matmul(to_numpy(x), to_numpy(y))
            got = cutematmul.matmul(x, y)
            assert tuple(got.shape) == expected.shape
            assert relative_error(got, expected) <= TOLERANCE["float32"]


@pytest.mark.parametrize("m, n, batch, shared, copied",
                         [(64, 256, (3,), True, 0), (64, 256, (8,), True, 1),
                          (300, 256, (2,), False, 1), (64, 1001, (), False, 1)],
                         ids=["batch-a-smaller", "batch-a-larger", "both-batched",
                              "b-unreadable"])
def test_tf32_of_both_transposed_copies_the_smaller_operand(torch, m, n, batch, shared, copied):
    """One-pass "tf32" of A M-major and B N-major copies the operand whose matrices hold fewer
    elements K-major (``configs.sm90.operand_copies``: a broadcast B counts once), then runs
    swapped (A copied) or reads A from registers (B copied); a B it cannot read (N = 1001) is
    the one copy whatever the sizes; within the TF32 bound."""
    if not _tf32_capable():
        pytest.skip("the TF32 kernels need an sm_90 GPU")
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    a, b = _operands(torch, m, n, 300, "tn", 29, batch=batch)
    if shared:
        b = b[0]
    work = launch.planned_launch(adapter_for(a), a, b, precision="tf32", kernel="sm90")
    assert work is not None and work.prep is not None, work
    assert work.prep[copied] is not None and work.prep[1 - copied] is None, work.prep
    assert work.key.config.swap == (copied == 0), work.key.config
    _check(*_errors(torch, a, b, "tf32"), "tf32")
