"""The float32 precision modes on a machine without a GPU: which math runs, what gets prepared,
and the TF32 rounding of the XLA route against a bit-level NumPy model.

``dispatch.math_type`` is the one place a precision becomes a math type; ``launch._resolve`` plans
the K-major preparation (``kernels/operand_prep.py``) of the operands TF32 wgmma cannot read.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cutematmul import dispatch, launch
from cutematmul.configs import simt, sm90
from cutematmul.plan import plan_gemm
from helpers import TF32_NARROW, TF32_SCHEDULES, forced_tf32_plan, tf32_forced_choice

HOPPER, AMPERE = (9, 0), (8, 0)
SM90, SIMT = dispatch.FAMILIES["sm90"], dispatch.FAMILIES["simt"]


@pytest.mark.parametrize("precision,math", [("highest", "float32"), ("high", "tf32x3"),
                                            ("tf32", "tf32")])
def test_math_type_per_precision(precision, math):
    assert dispatch.math_type("float32", precision, HOPPER) == math
    # Without TF32 wgmma the fp32 modes compute true fp32: never less accurate than asked.
    assert dispatch.math_type("float32", precision, AMPERE) == "float32"
    for half in ("float16", "bfloat16"):  # 16-bit inputs ignore the mode
        assert dispatch.math_type(half, precision, HOPPER) == half


def _resolve(m, n, k, math, a_major="k", b_major="n", batch=()):
    a_shape, b_shape = batch + (m, k), batch + (k, n)
    a_strides = (m * k,) * len(batch) + ((k, 1) if a_major == "k" else (1, m))
    b_strides = (k * n,) * len(batch) + ((n, 1) if b_major == "n" else (1, k))
    c_strides = (m * n,) * len(batch) + (n, 1)
    gemm = plan_gemm(a_shape, a_strides, b_shape, b_strides, c_strides)
    count = max(1, int(np.prod(batch)))
    spans = [(0, count * m * k * 4), (0, count * k * n * 4), (0, count * m * n * 4)]
    families = dispatch.choose_families(math, HOPPER)
    return launch._resolve(tuple(f.name for f in families), HOPPER, 132, gemm, math, 4,
                           (True, True, True), spans, (False, False, False))


# (caller's majors) -> (the kernel's majors, which operands the prep copies K-major first).
_TF32_READS = {("k", "n"): (("k", "n"), (False, False)),  # C^T = B^T A^T, B from registers
               ("k", "k"): (("k", "k"), (False, False)),
               ("m", "k"): (("m", "k"), (False, False)),  # A from registers
               ("m", "n"): (("m", "k"), (False, True))}


def test_tf32_copies_the_smaller_operand_when_neither_is_k_major():
    """Both transposed (A M-major, B N-major): the smaller of one A and one B matrix is copied
    K-major; where it is A the kernel reads (k, n) and computes C^T = B^T A^T itself."""
    for (m, n), copies, majors, swap in (((128, 8192), (True, False), ("k", "n"), True),
                                         ((1000, 700), (False, True), ("m", "k"), False),
                                         ((512, 512), (False, True), ("m", "k"), False)):
        resolved = _resolve(m, n, 1024, "tf32", "m", "n")
        assert tuple(p is not None for p in resolved.prep) == copies, (m, n, resolved.prep)
        assert (resolved.key.a_major, resolved.key.b_major) == majors, (m, n)
        assert resolved.key.config.swap == swap, (m, n, resolved.key.config)
        assert sm90.operand_copies("tf32", "m", "n", m, n, 1024, 1, 132) == tuple(
            "k" if c else None for c in copies)


def test_tf32_weighs_a_batch_against_a_broadcast_operand():
    """A batch of 64 M-major A (M = 128) against one N-major B (N = 1024) shared by all: A's
    64 matrices hold more than B's one, so B is copied (once), though one A is the smaller."""
    m, n, k, count = 128, 1024, 512, 64
    gemm = plan_gemm((count, m, k), (m * k, 1, m), (k, n), (n, 1), (m * n, n, 1))
    assert (gemm.a.major, gemm.b.major, gemm.b.batch_stride) == ("m", "n", 0)
    spans = [(0, count * m * k * 4), (0, k * n * 4), (0, count * m * n * 4)]
    families = dispatch.choose_families("tf32", HOPPER)
    resolved = launch._resolve(tuple(f.name for f in families), HOPPER, 132, gemm, "tf32", 4,
                               (True, True, True), spans, (False, False, False))
    assert tuple(p is not None for p in resolved.prep) == (False, True), resolved.prep
    assert sm90.operand_copies("tf32", "m", "n", m, n, k, 1, 132, counts=(count, 1)) == (None, "k")
    assert sm90.operand_copies("tf32", "m", "n", m, n, k, 1, 132, counts=(1, 1)) == ("k", None)


def test_tf32_of_both_transposed_copies_only_an_operand_it_cannot_read():
    """Where an operand must be copied anyway (not readable), that copy is the K-major one, and
    the other is read as it is, whichever is smaller."""
    gpu = (1, 132)  # batch, SMs
    assert sm90.operand_copies("tf32", "m", "n", 128, 8192, 512, *gpu, (True, False)) == (None, "k")
    assert sm90.operand_copies("tf32", "m", "n", 8192, 128, 512, *gpu, (False, True)) == ("k", None)
    assert sm90.operand_copies("tf32", "m", "n", 128, 8192, 512, *gpu, (False, False)) == ("k", "k")


@pytest.mark.parametrize("a_major,b_major", sorted(_TF32_READS))
def test_tf32_copies_only_when_neither_operand_is_k_major(a_major, b_major):
    """One-pass TF32 reads an M-major A (from registers) and an N-major B (as the register
    operand of C^T = B^T A^T) as they are; with both transposed it copies B K-major (N < M
    here)."""
    resolved = _resolve(1000, 700, 900, "tf32", a_major, b_major)
    assert isinstance(resolved, launch.Launch)
    assert (resolved.key.family, resolved.key.dtype) == ("sm90", "tf32")
    majors, copies = _TF32_READS[(a_major, b_major)]
    assert (resolved.key.a_major, resolved.key.b_major) == majors
    prep = resolved.prep or (None, None)
    assert tuple(p is not None for p in prep) == copies
    for p in prep:
        if p is not None:
            assert p.key.parts == 1 and not p.key.k_major and p.to_major == "k"
    assert sm90.supports(1000, 700, 900, 1, "tf32", *majors, 4, 4, 4) is None


@pytest.mark.parametrize("a_major,b_major", sorted(_TF32_READS))
def test_tf32_copies_an_operand_it_cannot_read(a_major, b_major):
    """A misaligned operand is read through an aligned K-major copy; the other keeps its
    layout as far as the kernel can read it."""
    for which in (0, 1):
        readable = (which != 0, which != 1)
        copies = dispatch.operand_copies(SM90, "tf32", a_major, b_major, 64, 64, 64, 1, 132,
                                         readable)
        assert copies[which] == "k"
        majors = tuple(c or major for c, major in zip(copies, (a_major, b_major)))
        assert sm90.supports(64, 64, 64, 1, "tf32", *majors, 4, 4, 4) is None
        if (a_major, b_major) != ("m", "n"):
            assert copies[1 - which] is None  # the other operand is read as it is
    assert dispatch.operand_copies(SM90, "tf32x3", a_major, b_major, 64, 64, 64, 1,
                                   132) == ("k", "k")
    assert dispatch.operand_copies(SM90, "float16", a_major, b_major, 8192, 8192, 8192, 1,
                                   132) == (None, None)
    refused = sm90.supports(64, 64, 64, 1, "tf32x3", a_major, b_major, 4, 4, 4)
    assert (refused is None) == ((a_major, b_major) == ("k", "k"))


@pytest.mark.parametrize("a_major,b_major", [("k", "n"), ("k", "k"), ("m", "n")])
def test_tf32x3_splits_both_operands(a_major, b_major):
    resolved = _resolve(1000, 700, 900, "tf32x3", a_major, b_major, batch=(3,))
    assert resolved.key.dtype == "tf32x3" and resolved.key.config.tile_k == 32
    assert all(p.key.parts == 2 for p in resolved.prep)
    assert [p.key.k_major for p in resolved.prep] == [a_major == "k", b_major == "k"]
    (offsets, sizes), = resolved.calls  # the launch proof ran on the caller's sizes
    assert sizes[:4] == (1000, 700, 900, 3)


def test_run_prep_lays_out_big_and_small_parts(monkeypatch):
    """The GEMM after the prep reads (big | small) operands of width 2 * kp, K-major, from one
    workspace (A's copy, then B's); a broadcast operand is prepared once; both copies are one
    launch of the pair (``dispatch.paired``), A's arguments then B's."""

    class Recorder:
        def __init__(self):
            self.calls = []

        def workspace(self, count, like, stream):
            self.calls.append(count)
            return object(), 4096 * len(self.calls)

    calls = []
    monkeypatch.setattr(launch, "get_compiled",
                        lambda key: lambda *args: calls.append((key, args)))
    rec = Recorder()
    keys = (dispatch.prep_key(HOPPER, 2, True), dispatch.prep_key(HOPPER, 2, False))
    copies = tuple(dispatch.OperandCopy(key, "k") for key in keys)
    m, n, k, batch = 100, 60, 70, 3
    sizes = (m, n, k, batch, 1, k, m * k, n, 0, n, m * n)  # B (N-major) broadcast
    held = []
    pa, pb, out = launch._run_prep(rec, copies, 1 << 20, 2 << 20, sizes, None, 7, held)
    kp = 96
    a_bytes = m * 2 * kp * batch * 4
    assert rec.calls == [(a_bytes + n * 2 * kp * 4) // 4] and len(held) == 1
    assert (pa, pb) == (4096, 4096 + a_bytes)  # the GEMM reads the workspace
    assert out == (m, n, 2 * kp, batch, 1, 2 * kp, m * 2 * kp, 2 * kp, 0, n, m * n)
    (key, args), = calls
    assert key == replace(keys[0], k_major_b=False) == dispatch.paired(copies)
    assert args[:2] == (1 << 20, pa) and args[11:13] == (2 << 20, pb) and args[-1] == 7
    assert args[2:11] == (m, k, batch, 2 * kp, k, 1, m * k, 2 * kp, m * 2 * kp)
    assert args[13:22] == (n, k, 1, 2 * kp, 1, n, 0, 2 * kp, n * 2 * kp)


N_SMALL = simt.COPY_A_MIN_N - 1  # too few columns to copy A for
M_SMALL = simt.COPY_B_MIN_M - 1  # too few rows to copy B for


@pytest.mark.parametrize("capability", [HOPPER, AMPERE])
@pytest.mark.parametrize("m,n,a_major,b_major,copies", [
    (simt.STAGED_MAX_M + 1, simt.COPY_A_MIN_N, "k", "k", ("m", None)),  # x @ w.T: A copied
    # ... but not where the staged row-streaming kernel reads both as they are.
    (simt.STAGED_MAX_M, simt.COPY_A_MIN_N, "k", "k", (None, None)),
    (M_SMALL, simt.COPY_A_MIN_N, "k", "k", ("m", None)),
    (simt.COPY_A_MIN_M - 1, simt.COPY_A_MIN_N, "k", "k", (None, None)),
    (simt.COPY_B_MIN_M, simt.COPY_B_MIN_N, "k", "k", (None, "n")),  # many rows: B copied
    (simt.COPY_B_MIN_M, 8192, "k", "k", (None, "n")),
    (simt.COPY_B_MIN_M, simt.COPY_B_MIN_N, "m", "k", (None, "n")),  # a.T @ w.T
    (M_SMALL, N_SMALL, "k", "k", (None, None)),  # each copy costs more than it saves
    (simt.COPY_B_MIN_M, simt.COPY_B_MIN_N - 1, "k", "k", (None, None)),
    (M_SMALL, 8192, "m", "k", (None, None)),  # A M-major already, too few rows for B's copy
    (8192, 8192, "k", "n", (None, None)),  # B N-major already
    (8192, 8192, "m", "n", (None, None)),
])
def test_highest_copies_k_major_operands_on_large_products(capability, m, n, a_major, b_major,
                                                           copies):
    """fp32 "highest": the SIMT kernel reads a K-major A (both operands K-major) through an
    M-major copy of ours, or a K-major B through an N-major copy, on products large enough to
    earn the copy back (``configs.simt.operand_copies``); the kernel key is the copy's major."""
    k = 512
    gemm = plan_gemm((m, k), (k, 1) if a_major == "k" else (1, m),
                     (k, n), (n, 1) if b_major == "n" else (1, k), (n, 1))
    spans = [(0, m * k * 4), (0, k * n * 4), (0, m * n * 4)]
    resolved = launch._resolve(("simt",), capability, 132, gemm, "float32", 4,
                               (True, True, True), spans, (False, False, False))
    prep = resolved.prep or (None, None)
    for want, got, read in ((copies[0], prep[0], resolved.key.a_major),
                            (copies[1], prep[1], resolved.key.b_major)):
        if want is None:
            assert got is None
        else:
            assert got == (dispatch.prep_key(capability, 1, False), want) and read == want
    assert dispatch.operand_copies(SIMT, "float32", "m", b_major, m, n, k, 1, 132,
                                   (True, False)) == (None, None)  # unreadable: staged instead
    # Few columns: the row-streaming kernel reads a K-major B as C^T = B^T A^T.
    assert dispatch.operand_copies(SIMT, "float32", "k", "k", 8192, simt.COPY_B_MIN_N - 1, k, 1,
                                   132) == (
        None, None)


GEMV_K = simt.COPY_B_GEMV_MIN_K
GEMV_M = -(-simt.COPY_B_GEMV_MIN_MK // GEMV_K)  # the fewest rows of A that earn the copy back


@pytest.mark.parametrize("m,n,k,a_major,copied", [
    (GEMV_M, 8, GEMV_K, "k", True),  # a @ x, x (K, 8) row-major: x copied K-major
    (8192, 2, 8192, "k", True),
    (GEMV_M - 1, 8, GEMV_K, "k", False),  # A too small to earn the copy back
    (4 * GEMV_M, 8, GEMV_K - 1, "k", False),  # K too short for the row-streaming kernel
    (8192, 9, 8192, "k", False),  # past the row-streaming kernel's rows
    (8, 8, 8192, "k", False),  # at most 8 rows: the row-streaming kernel reads B as it is
    (8192, 8, 8192, "m", False),  # B^T of a transposed product under an N-major A^T: read as is
])
def test_highest_copies_few_columns_k_major(m, n, k, a_major, copied):
    """fp32 "highest" of a K-major A and an N-major B of at most 8 columns: B is copied K-major
    so that the row-streaming kernel computes C^T = B^T A^T (``configs.simt.operand_copies``)."""
    gemm = plan_gemm((m, k), (k, 1) if a_major == "k" else (1, m), (k, n), (n, 1), (n, 1))
    spans = [(0, m * k * 4), (0, k * n * 4), (0, m * n * 4)]
    resolved = launch._resolve(("simt",), HOPPER, 132, gemm, "float32", 4,
                               (True, True, True), spans, (False, False, False))
    prep = resolved.prep or (None, None)
    assert prep[0] is None
    if copied:
        assert prep[1] == (dispatch.prep_key(HOPPER, 1, False), "k")
        assert resolved.transposed and resolved.key.config.gemv
        assert (resolved.key.a_major, resolved.key.b_major) == ("k", "k")
    else:
        assert prep[1] is None


def test_run_prep_transposes_a_k_major_b(monkeypatch):
    """The N-major copy of a K-major B: the prep reads B's transpose (K, N), writes K rows of
    N padded to 16 bytes, and the GEMM reads that; a broadcast B is copied once."""
    recorded, calls = [], []
    monkeypatch.setattr(launch, "get_compiled",
                        lambda key: lambda *args: calls.append((key, args)))

    class Recorder:
        def workspace(self, count, like, stream):
            recorded.append(count)
            return object(), 4096

    copy = dispatch.OperandCopy(dispatch.prep_key(HOPPER, 1, False), "n")
    m, n, k, batch, ldb = 3000, 61, 70, 2, 75
    for bsb, count in ((0, 1), (n * ldb, batch)):
        recorded.clear(), calls.clear()
        sizes = (m, n, k, batch, 1, k, m * k, ldb, bsb, n, m * n)
        pa, pb, out = launch._run_prep(Recorder(), (None, copy), 1 << 20, 2 << 20, sizes, None,
                                       7, [])
        assert (pa, pb) == (1 << 20, 4096) and recorded == [k * 64 * count]
        assert out == (m, n, k, batch, 1, k, m * k, 64, k * 64 if bsb else 0, n, m * n)
        (key, args), = calls
        assert (key == copy.key
                and args[:11] == (2 << 20, 4096, k, n, count, 64, 1, ldb, bsb, 64, k * 64))


def test_sm90_tf32_schedule_uses_32_wide_k_tiles_and_three_passes():
    config, splits, _ = sm90.choose_schedule(4096, 4096, 4096, 1, 132, math="tf32")
    assert config.tile_k == 32 and config.ab_stages(4) >= 4
    assert sm90.gemm_k(70, "tf32x3") == 3 * 96 and sm90.gemm_k(70, "tf32") == 70
    assert sm90.supports(64, 64, 64, 1, "tf32", "m", "n", 4, 4, 4) is not None
    assert sm90.supports(64, 64, 64, 1, "tf32", "k", "k", 4, 4, 4) is None


def _rna_model(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32 in NumPy bits: add half an ulp of TF32, clear the low 13 bits."""
    bits = x.astype(np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).astype(np.uint32)
    return np.where(finite, rounded, bits).view(np.float32)


def test_xla_route_rounding_matches_the_bit_model():
    jax = pytest.importorskip("jax")
    from cutematmul import xla

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(4096) * np.exp2(rng.integers(-40, 40, 4096))).astype(np.float32)
    x[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, np.finfo(np.float32).max]
    got = np.asarray(jax.jit(xla._tf32_round)(x))
    np.testing.assert_array_equal(got.view(np.uint32), _rna_model(x).view(np.uint32))
    # big + small carries x to ~2^-22 relative; Inf gives small = 0 (not Inf - Inf = NaN).
    parts = np.asarray(xla._tf32_operand(jax.numpy.asarray(x[None, None, 6:]), True, "tf32x3"))
    k = x.size - 6
    kp = -(-k // 32) * 32
    big, small = parts[0, 0, :k], parts[0, 0, kp:kp + k]
    rel = np.abs((big.astype(np.float64) + small) - x[6:]) / np.abs(x[6:].astype(np.float64))
    assert rel.max() <= 2.0**-22
    assert (big.view(np.uint32) & 0x1FFF == 0).all() and (small.view(np.uint32) & 0x1FFF == 0).all()
    inf_parts = np.asarray(xla._tf32_operand(jax.numpy.asarray(x[None, None, :3]), True, "tf32x3"))
    assert np.isinf(inf_parts[0, 0, 0]) and inf_parts[0, 0, 32] == 0.0


@pytest.mark.parametrize("shape,precision,math", [
    ((16, 8192, 8192, 1), "high", "float32"), ((128, 8192, 8192, 1), "high", "float32"),
    ((1000, 1000, 1000, 1), "high", "float32"), ((4096, 4096, 4096, 1), "high", "tf32x3"),
    ((1, 8192, 8192, 1), "tf32", "float32"), ((4096, 1, 4096, 3), "tf32", "float32"),
    ((2, 8192, 8192, 1), "tf32", "tf32"), ((16, 8192, 8192, 1), "tf32", "tf32"),
    ((8192, 8, 8192, 1), "tf32", "tf32"), ((64, 64, 64, 1), "tf32", "tf32"),
    ((128, 8192, 8192, 1), "tf32", "tf32"),
])
def test_auto_takes_the_fp32_kernel_where_it_is_faster(shape, precision, math):
    """Skinny and small 3xTF32 products run true fp32 under "auto" (more accurate, and there
    faster), one-pass TF32 only a matrix-vector product (min(M, N) = 1: the GEMV kernel); a
    forced kernel keeps the mode."""
    assert dispatch.math_type("float32", precision, HOPPER, shape) == math
    assert dispatch.math_type("float32", precision, HOPPER, shape, "sm90") == \
        dispatch.PRECISIONS[precision]


def test_precompile_builds_the_tf32_kernels_a_user_names():
    """precisions= adds the TF32 kernels (every layout they read as it is) and 3xTF32 kernels
    (K-major only), both prep variants, the fp32
    reduction and the fp32 kernels the small products fall back to; the default set has none."""
    from cutematmul import aot

    keys = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float32",),
                                       precisions=("high", "tf32")))
    gemms = [k for k in keys if isinstance(k, dispatch.KernelKey)]
    maths = {k.dtype for k in gemms}
    assert maths == {"tf32", "tf32x3", "float32"}
    assert all((k.a_major, k.b_major) == ("k", "k") for k in gemms if k.dtype == "tf32x3")
    assert {(k.a_major, k.b_major) for k in gemms if k.dtype == "tf32"} == {
        ("k", "k"), ("k", "n"), ("m", "k")}
    preps = {(k.parts, k.k_major) for k in keys if isinstance(k, dispatch.PrepKey)}
    assert preps == {(1, True), (1, False), (2, True), (2, False)}
    default = aot.plan_keys(aot.Selection(archs=("sm_90a",)))
    assert not any(getattr(k, "dtype", "") in ("tf32", "tf32x3") for k in default)
    with pytest.raises(ValueError, match="precisions must be among"):
        aot.Selection(precisions=("fast",))


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 16384),
                                   (300, 260, 16384), (16, 8192, 8192)],
                         ids=lambda s: "x".join(map(str, s)))
def test_3xtf32_splits_long_k_so_each_split_sums_few_k_tiles(shape):
    """Promoted sums round once per 32-wide K-tile (its three products together) in sequence: a
    split sums at most _PROMOTED_CHAIN of them (where the split count allows); the XLA route
    cannot split."""
    m, n, k = shape
    config, splits, _ = sm90.choose_schedule(m, n, k, 1, 132, math="tf32x3")
    sums = sm90.promoted_sums(k)
    assert sums == -(-k // 32)
    assert -(-sums // splits) <= max(sm90._PROMOTED_CHAIN, -(-sums // 16))
    assert config.tile_n <= 192
    assert sm90.choose_config(m, n, k, 1, 132, math="tf32x3").partials is False


@pytest.mark.parametrize("k", [32 * sm90._PROMOTED_CHAIN + 1, 65536])
def test_the_xla_route_splits_long_k_high_products_for_accuracy(k):
    """Past K = 32 * _PROMOTED_CHAIN unsplit 3xTF32 makes more promoted adds than
    _PROMOTED_CHAIN; the XLA route splits K as the pointer route does (its partials are an
    output of the custom call), so a jitted "high" product stays 3xTF32 at fp32 accuracy."""
    from cutematmul import xla

    plan = xla.xla_plan(HOPPER, 132, "float32", "high", "auto", 4096, 4096, k, 1, False, False,
                        True, True)
    assert plan.arithmetic == "tf32x3" and plan.partials
    assert plan.splits >= -(-sm90.promoted_sums(k) // sm90._PROMOTED_CHAIN), plan.splits
    with pytest.raises(ValueError, match="precision='high' takes K up to"):
        xla.xla_plan(HOPPER, 132, "float32", "high", "sm90", 64, 64, sm90.TF32X3_MAX_K + 1, 1,
                     False, False, True, True)


@pytest.mark.parametrize("shape", [(4096, 1000, 4096), (520, 4096, 2048), (8192, 8192, 8192)],
                         ids=lambda s: "x".join(map(str, s)))
def test_tf32_kernel_that_swaps_is_scheduled_over_n_by_m(shape):
    """With an N-major B the one-pass TF32 kernel computes C^T = B^T A^T itself, so its tiles
    (and the 2x1 cluster, which pairs tile rows) are chosen for the (N, M) product, and the
    configuration says so (``Config.swap``); an M-major A keeps the (M, N) orientation."""
    m, n, k = shape
    family = dispatch.FAMILIES["sm90"]
    swapped, splits, transposed = dispatch.schedule(family, HOPPER, 132, "tf32", "k", "n",
                                                    (16, 16, 16), m, n, k, 1)
    config, want_splits, _ = sm90.choose_schedule(n, m, k, 1, 132, math="tf32")
    assert not config.swap and swapped.config.swap
    assert (swapped.config, splits, transposed) == (replace(config, swap=True), want_splits, False)
    assert sm90.choose_schedule(m, n, k, 1, 132, math="tf32", swapped=True)[:2] == (
        replace(config, swap=True), want_splits)
    kept = dispatch.schedule(family, HOPPER, 132, "tf32", "m", "k", (16, 16, 16), m, n, k, 1)[0]
    assert not kept.config.swap
    # The autotuner times the dispatcher's pick first, in the same orientation.
    assert sm90.candidates(m, n, k, 1, 132, math="tf32", swapped=True)[0] == (
        replace(config, swap=True), want_splits, False)
    assert sm90.swaps("tf32", "k", "n") and not sm90.swaps("tf32", "m", "k")
    plain, splits, _ = dispatch.schedule(family, HOPPER, 132, "tf32", "m", "k", (16, 16, 16),
                                         m, n, k, 1)
    assert (plain.config, splits) == sm90.choose_schedule(m, n, k, 1, 132, math="tf32")[:2]
    # The unsplit key (a launch in pieces) follows the same orientation.
    unsplit = dispatch.schedule(family, HOPPER, 132, "tf32", "k", "n", (16, 16, 16), m, n, k, 1,
                                split_k=False)[0]
    assert unsplit.config == replace(sm90.choose_config(n, m, k, 1, 132, math="tf32"), swap=True)


def test_precompile_builds_the_fp32_copies_and_the_kernels_that_read_them():
    """A precompiled x @ w.T ("kk") fp32 product has what its process will load: the prep
    kernel of its copy and the GEMM over the copy's majors (not the K-major one)."""
    from cutematmul import aot

    for (m, n, k), copied in (((4096, 4096, 4096), (None, "n")), ((128, 8192, 8192), ("m", None)),
                              ((1000, 1000, 1000), (None, None))):
        keys = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float32",),
                                           layouts=("kk",), alignments="aligned",
                                           shapes=((m, n, k),)))
        preps = [key for key in keys if isinstance(key, dispatch.PrepKey)]
        majors = tuple(c or "k" for c in copied)
        assert preps == [dispatch.operand_copy(HOPPER, "float32", "k", c).key for c in copied if c]
        gemms = [key for key in keys if isinstance(key, dispatch.KernelKey)]
        assert {(g.a_major, g.b_major) for g in gemms} == {majors}, gemms


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_forced_tf32_gpu_cases_are_the_planned_launches(layout):
    """Each forced one-pass TF32 schedule of ``test_gpu_fp32_modes.py`` (``TF32_SCHEDULES`` in
    every layout, ``TF32_NARROW`` in the three it runs) is exactly the launch planned on an
    H200 with it in the tuned tier (``forced_tf32_plan``), so a GPU run never spends its time
    on a case the planner would turn into another kernel; the narrow-N products are planned
    untransposed on a narrow tile, unswapped, without it."""
    narrow = [s for s in TF32_NARROW if layout != "nn"]
    for schedule in [*TF32_SCHEDULES, *narrow]:
        _, m, n, k, *_ = schedule
        if schedule in narrow:
            planned = launch.contiguous_plan(("sm90",), (9, 0), 132, "tf32", m, n, k, 1,
                                             (layout[0] == "t", layout[1] == "t"))
            config = planned.key.config
            assert config.tile_n <= 32 and not config.swap and not planned.transposed, (
                schedule[0], layout, config)
        forced_tf32_plan(tf32_forced_choice(schedule, layout), m, n, k, layout)
