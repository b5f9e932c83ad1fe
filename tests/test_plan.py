"""CPU tests of the planning layer: NumPy matmul shapes, broadcasting, majors, batching, swaps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutematmul.plan import alignment, plan_gemm, result_shape


def _elem_strides(x: np.ndarray):
    return tuple(s // x.itemsize for s in x.strides)


def _simulate(a: np.ndarray, b: np.ndarray, out_strides=None) -> np.ndarray:
    """Execute a plan on the host by walking its pointers/strides exactly as a kernel would."""
    shape = result_shape(a.shape, b.shape)
    if out_strides is None:
        out = np.full(shape, np.nan)
        c_strides = None
    else:
        out = np.lib.stride_tricks.as_strided(np.full(10_000, np.nan), shape,
                                              tuple(s * 8 for s in out_strides))
        c_strides = out_strides
    g = plan_gemm(a.shape, _elem_strides(a), b.shape, _elem_strides(b), c_strides)
    flat = {
        "a": np.lib.stride_tricks.as_strided(a, (a.size * 50,), (a.itemsize,)) if a.size else a,
        "b": np.lib.stride_tricks.as_strided(b, (b.size * 50,), (b.itemsize,)) if b.size else b,
    }
    base_a, base_b = (flat["b"], flat["a"]) if g.swapped else (flat["a"], flat["b"])
    cflat = np.lib.stride_tricks.as_strided(out, (10_000,), (8,))
    for oa, ob, oc in g.offsets:
        for l, m, n in itertools.product(range(g.batch), range(g.m), range(g.n)):
            acc = 0.0
            for k in range(g.k):
                ia = oa + l * g.a.batch_stride + (m * g.a.ld + k if g.a.major == "k"
                                                  else m + k * g.a.ld)
                ib = ob + l * g.b.batch_stride + (n * g.b.ld + k if g.b.major == "k"
                                                  else n + k * g.b.ld)
                acc += base_a[ia] * base_b[ib]
            cflat[oc + l * g.c.batch_stride + m * g.c.ld + n] = acc
    return out


CASES = [
    ((4, 5), (5, 3)), ((5,), (5, 3)), ((4, 5), (5,)), ((5,), (5,)),
    ((2, 4, 5), (5, 3)), ((4, 5), (2, 5, 3)), ((2, 1, 4, 5), (3, 5, 3)),
    ((2, 3, 4, 5), (1, 3, 5, 2)), ((3, 5), (2, 3, 5, 4)), ((1, 1), (1, 1)), ((2, 6, 1), (1, 3)),
]


@pytest.mark.parametrize("a_shape,b_shape", CASES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_plan_matches_numpy(a_shape, b_shape, ta, tb):
    rng = np.random.default_rng(0)

    def make(shape, t):
        if t and len(shape) >= 2:
            return np.swapaxes(rng.standard_normal(shape[:-2] + shape[-2:][::-1]), -1, -2)
        return rng.standard_normal(shape)

    a, b = make(a_shape, ta), make(b_shape, tb)
    np.testing.assert_allclose(_simulate(a, b), np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_plan_column_major_output_swaps():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    g = plan_gemm(a.shape, _elem_strides(a), b.shape, _elem_strides(b), (1, 4))
    assert g.swapped and (g.m, g.n) == (3, 4) and g.c.major == "n"
    np.testing.assert_allclose(_simulate(a, b, (1, 4)), a @ b)


def test_batch_dims_merge_into_one_launch():
    g = plan_gemm((2, 3, 4, 5), (60, 20, 5, 1), (5, 6), (6, 1))
    assert g.batch == 6 and len(g.offsets) == 1 and g.b.batch_stride == 0


def test_unmergeable_broadcast_enumerates_launches():
    g = plan_gemm((2, 1, 4, 5), (20, 20, 5, 1), (3, 5, 6), (30, 6, 1))
    assert g.batch == 3 and len(g.offsets) == 2


def test_strided_operand_is_reported():
    assert plan_gemm((4, 5), (10, 2), (5, 3), (3, 1)).a.major == "strided"


def test_size_one_modes_get_aligned_leading_dimension():
    g = plan_gemm((1, 7), (7, 1), (7, 1), (1, 1))
    assert g.a.ld % 16 == 0 and g.b.ld % 16 == 0


@pytest.mark.parametrize("a_shape,b_shape,msg", [
    ((), (3,), "at least 1 dimension"),
    ((3, 4), (5, 6), "contracted dimensions differ"),
    ((2, 3, 4), (3, 4, 5), "do not broadcast"),
])
def test_result_shape_errors(a_shape, b_shape, msg):
    with pytest.raises(ValueError, match=msg):
        result_shape(a_shape, b_shape)


@settings(max_examples=60, deadline=None)
@given(
    a_batch=st.lists(st.integers(1, 3), max_size=2),
    b_batch=st.lists(st.integers(1, 3), max_size=2),
    m=st.integers(1, 4), n=st.integers(1, 4), k=st.integers(0, 4),
    ta=st.booleans(), tb=st.booleans(), a1=st.booleans(), b1=st.booleans(),
)
def test_plan_property(a_batch, b_batch, m, n, k, ta, tb, a1, b1):
    rng = np.random.default_rng(2)
    a_shape = (k,) if a1 else tuple(a_batch) + (m, k)
    b_shape = (k,) if b1 else tuple(b_batch) + (k, n)
    try:
        expected = np.matmul(np.ones(a_shape), np.ones(b_shape)).shape
    except ValueError:
        with pytest.raises(ValueError):
            result_shape(a_shape, b_shape)
        return
    assert result_shape(a_shape, b_shape) == expected
    a = rng.standard_normal(a_shape)
    b = rng.standard_normal(b_shape)
    if ta and a.ndim >= 2:
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if tb and b.ndim >= 2:
        b = np.ascontiguousarray(np.swapaxes(b, -1, -2)).swapaxes(-1, -2)
    np.testing.assert_allclose(_simulate(a, b), np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_alignment():
    assert alignment(2, 0, 32, 4096) == 16
    assert alignment(2, 0, 10) == 2
    assert alignment(4, 4, 8) == 4


# ----------------------------------------------------------------------------- pitched copies


def test_pitched_rows_of_a_staging_copy():
    from cutematmul.plan import pitched_rows

    # A 2049 x 1023 fp16 operand into a buffer whose rows are padded to 1024 elements.
    assert (pitched_rows((2049, 1023), (2048, 2), (2049, 1023), (2046, 2), 2)
            == (2049, 2046, 2048, 2046))
    # A stack of whole matrices is one copy of batch x rows rows.
    assert pitched_rows((4, 10, 7), (160, 16, 2), (4, 10, 7), (140, 14, 2), 2) == (40, 14, 16, 14)
    # One row: its pitch is irrelevant.
    assert pitched_rows((1, 7), (16, 2), (1, 7), (0, 2), 2) == (1, 14, 14, 14)


@pytest.mark.parametrize("case", ["gapped batch", "broadcast batch", "column-major", "negative",
                                  "overlapping rows", "shapes differ", "1-d", "empty"])
def test_pitched_rows_refuses_what_one_2d_copy_cannot_do(case):
    from cutematmul.plan import pitched_rows

    args = {"gapped batch": ((4, 10, 7), (160, 16, 2), (4, 10, 7), (150, 14, 2)),
            "broadcast batch": ((4, 10, 7), (160, 16, 2), (4, 10, 7), (0, 14, 2)),
            "column-major": ((10, 7), (16, 2), (10, 7), (2, 20)),
            "negative": ((10, 7), (-16, 2), (10, 7), (14, 2)),
            "overlapping rows": ((10, 7), (16, 2), (10, 7), (8, 2)),
            "shapes differ": ((10, 7), (16, 2), (7, 10), (20, 2)),
            "1-d": ((7,), (2,), (7,), (2,)),
            "empty": ((0, 7), (16, 2), (0, 7), (14, 2))}[case]
    assert pitched_rows(*args, 2) is None
