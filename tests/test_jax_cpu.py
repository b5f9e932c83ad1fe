"""JAX at trace time (no GPU needed): shapes, errors, autodiff and vmap rules of the primitive.

Runs wherever JAX is importable, CPU-only jaxlib included; nothing is lowered or launched.
"""

from __future__ import annotations

import pytest

from conftest import require_module

jax = require_module("jax")
import jax.numpy as jnp  # noqa: E402

import cutematmul  # noqa: E402

F16 = jnp.float16


def _s(shape, dtype=F16):
    return jax.ShapeDtypeStruct(shape, dtype)


@pytest.mark.parametrize("a,b,out", [
    ((4, 8), (8, 5), (4, 5)), ((8,), (8, 5), (5,)), ((4, 8), (8,), (4,)), ((8,), (8,), ()),
    ((3, 4, 8), (8, 5), (3, 4, 5)), ((2, 1, 4, 8), (3, 8, 5), (2, 3, 4, 5)),
])
def test_shapes(a, b, out):
    assert jax.eval_shape(cutematmul.matmul, _s(a), _s(b)).shape == out


def test_symbolic_batch():
    (b,) = jax.export.symbolic_shape("b")
    assert jax.eval_shape(cutematmul.matmul, _s((b, 4, 8)), _s((8, 5))).shape == (b, 4, 5)


@pytest.mark.parametrize("da,db", [(F16, jnp.float32), (jnp.bfloat16, F16),
                                   (jnp.float32, jnp.bfloat16)])
def test_mixed_dtypes_promote_to_float32(da, db):
    """As ``jnp.matmul``: a 16-bit operand with float32, or float16 with bfloat16, is float32."""
    out = jax.eval_shape(cutematmul.matmul, _s((4, 8), da), _s((3, 8, 5), db))
    assert out.shape == (3, 4, 5) and out.dtype == jnp.float32


@pytest.mark.parametrize("a,b,exc,msg", [
    (_s((4, 8)), _s((9, 5)), ValueError, "contracted dimensions differ"),
    (_s((2, 4, 8)), _s((3, 8, 5)), ValueError, "do not broadcast"),
    (_s((4, 8)), _s((8, 5), jnp.int32), TypeError,
     "b must have dtype float32, float16 or bfloat16; got int32"),
    (_s((4, 8), jnp.int32), _s((8, 5), jnp.int32), TypeError, "got int32"),
])
def test_trace_time_errors(a, b, exc, msg):
    with pytest.raises(exc, match=msg):
        jax.eval_shape(cutematmul.matmul, a, b)


def test_out_and_stream_rejected():
    x = jnp.ones((2, 2), F16)
    with pytest.raises(TypeError, match="immutable"):
        cutematmul.matmul(x, x, out=x)
    with pytest.raises(TypeError, match="XLA's"):
        cutematmul.matmul(x, x, stream=0)


def _prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def test_transpose_inside_jit_is_read_in_place():
    jaxpr = jax.make_jaxpr(lambda x, y: cutematmul.matmul(x.T, y.T))(jnp.ones((8, 4), F16),
                                                                      jnp.ones((5, 8), F16))
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "cutematmul_matmul"]
    assert eqn.params["trans_a"] and eqn.params["trans_b"]
    assert eqn.invars[0] is jaxpr.jaxpr.invars[0] and eqn.invars[1] is jaxpr.jaxpr.invars[1]


def test_backward_products_are_cutematmul_with_transposed_reads():
    f = lambda x, y: cutematmul.matmul(x, y).astype(jnp.float32).sum()  # noqa: E731
    jaxpr = jax.make_jaxpr(jax.grad(f, argnums=(0, 1)))(jnp.ones((4, 8), F16),
                                                        jnp.ones((8, 5), F16))
    eqns = [e for e in jaxpr.eqns if e.primitive.name == "cutematmul_matmul"]
    assert (len(eqns) == 3 and "dot_general" not in _prims(jaxpr)
            and "transpose" not in _prims(jaxpr))
    assert ({(e.params["trans_a"], e.params["trans_b"]) for e in eqns[1:]}
            == {(True, False), (False, True)})


def test_jvp_and_second_order_trace():
    a, b = jnp.ones((4, 8), jnp.float32), jnp.ones((8, 5), jnp.float32)
    jax.make_jaxpr(lambda x: jax.jvp(lambda u: cutematmul.matmul(u, b), (x,), (x,)))(a)
    jax.make_jaxpr(jax.hessian(lambda x: (cutematmul.matmul(x, b) ** 2).sum()))(a)


def test_nested_vmap_is_one_primitive():
    f = jax.vmap(jax.vmap(cutematmul.matmul, in_axes=(0, None)), in_axes=(0, None))
    jaxpr = jax.make_jaxpr(f)(jnp.ones((5, 3, 4, 8), F16), jnp.ones((8, 6), F16))
    assert _prims(jaxpr).count("cutematmul_matmul") == 1
    assert jax.eval_shape(f, _s((5, 3, 4, 8)), _s((8, 6))).shape == (5, 3, 4, 6)


@pytest.mark.parametrize("a_shape, b_shape, name", [
    ((2, 2**31 - 2**20 + 1), (2**31 - 2**20 + 1, 4), "K"),  # past validate.MAX_K
    ((2**31 + 3, 8), (8, 4), "M"),
    ((4, 8), (8, 2**31 + 7), "N"),
    ((2**16, 2**15 + 1, 1, 8), (8, 4), "the batch"),
], ids=["K", "M", "N", "batch"])
def test_extents_one_launch_cannot_index_are_refused_inside_jit(a_shape, b_shape, name):
    """Inside jit a product is one launch and ``cutlass.jax`` hands the kernel 32-bit extents:
    M, N or the batch past 2**31 - 1, or K past ``validate.MAX_K``, is refused when the
    product is lowered, with the extent named (a truncated extent would index wrongly)."""
    f = jax.jit(cutematmul.matmul)
    with pytest.raises(ValueError, match=f"{name} = [0-9]+ exceeds"):
        f.trace(jax.ShapeDtypeStruct(a_shape, F16), jax.ShapeDtypeStruct(b_shape, F16)).lower(
            lowering_platforms=("cuda",))


#: Lowered in ``test_lowering_for_cuda_makes_what_the_plan_assumed``: (dtype, precision, A's
#: stored shape, B's, A stored transposed, B stored transposed).
LOWERED = [
    ("float16", "highest", (256, 512), (512, 384), False, False),
    ("bfloat16", "highest", (3, 100, 129), (100, 37), True, False),  # padded rows, shared B
    ("float16", "highest", (1000, 999), (1001, 999), False, True),  # odd K and N
    ("float32", "highest", (2, 700, 600), (2, 500, 700), True, True),  # SIMT's transposed copy
    ("float32", "tf32", (200, 300), (200, 100), True, False),  # a K-major copy for TF32
    ("float32", "high", (64, 1000), (1000, 96), False, False),  # 3xTF32's split, padded K
    # Through partial sums that XLA adds up (``XlaPlan.partials``):
    ("float16", "highest", (24, 8192), (8192, 2048), False, False),  # C^T, split
    ("bfloat16", "highest", (40000, 64), (40000, 96), True, False),  # a small C of a long K
    ("float16", "highest", (3, 16, 20000), (20000, 40), False, False),  # split, B shared
    ("float16", "highest", (16, 20000), (3, 20000, 40), False, False),  # split, A shared
    ("bfloat16", "highest", (9, 6000), (2, 6000, 100), False, False),  # C^T, A shared
    ("float32", "highest", (4096, 4096), (6, 4096), False, True),  # SIMT row-streaming C^T
    ("float32", "highest", (20, 50000), (50000, 30), False, False),  # SIMT deep split
    ("float32", "high", (512, 20000), (20000, 512), False, False),  # 3xTF32 split for accuracy
    ("float16", "highest", (100, 64), (37, 64), False, True),  # sm80: C as wide as B's 37 rows
    ("float16", "highest", (100, 37), (37, 64), False, False),  # sm80: B's K rows padded as A's
    ("bfloat16", "highest", (12288, 24), (12288, 4096), True, False),  # A copied K-major
    # 16-bit rows of no whole vectors, read in place by SIMT's row-streaming kernel:
    ("float16", "highest", (1, 768), (768, 50257), False, False),  # C itself, odd N
    ("bfloat16", "highest", (4097, 4), (4097, 3001), True, False),  # split, odd K and N
]

_LOWER = r"""
import json, sys
import jax, jax.numpy as jnp
from cutematmul import cache, device, xla
device.device_info = lambda index: device.DeviceInfo(0, "stand-in H200", (9, 0), 132)
import cutematmul
results = []
for dtype, precision, a_shape, b_shape, ta, tb in json.loads(sys.argv[1]):
    def f(x, y, ta=ta, tb=tb, precision=precision):
        return cutematmul.matmul(x.mT if ta else x, y.mT if tb else y, precision=precision)
    before = set(cache.cache_info()["jax"]["keys"])
    jax.jit(f).trace(jax.ShapeDtypeStruct(a_shape, getattr(jnp, dtype)),
                     jax.ShapeDtypeStruct(b_shape, getattr(jnp, dtype))).lower(
        lowering_platforms=("cuda",))
    m, k = (a_shape[-1], a_shape[-2]) if ta else (a_shape[-2], a_shape[-1])
    n = b_shape[-2] if tb else b_shape[-1]
    batch = ((a_shape if len(a_shape) > 2 else b_shape)[0]
             if max(len(a_shape), len(b_shape)) > 2 else 1)
    bcast = (len(a_shape) == 2, len(b_shape) == 2)
    plan = xla.xla_plan((9, 0), 132, dtype, precision, "auto", m, n, k, batch, ta, tb, *bcast)
    made = set(cache.cache_info()["jax"]["keys"]) - before
    results.append([made == {(plan.key, *plan.bcast)} or repr(made), plan.key.family,
                    plan.splits, plan.transposed, plan.partials])
print("RESULT=" + json.dumps(results))
"""


def test_lowering_for_cuda_makes_what_the_plan_assumed(tmp_path):
    """``xla.xla_plan`` decides the kernel, its split and its alignment hints without arrays;
    the lowering for CUDA makes the operands, checks them against the plan (raising on a
    mismatch), embeds the planned kernel and, for partial sums, their reduction: in a child
    Python on this machine (no GPU: an H200 stand-in for the device query), for each of
    ``LOWERED``."""
    import importlib.util
    import json
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("cutlass") is None:
        pytest.skip("nvidia-cutlass-dsl is not installed; the lowering compiles the kernel")
    env = {**os.environ, "CUTEMATMUL_CACHE_DIR": str(tmp_path), "CUTE_DSL_ARCH": "sm_90a",
           "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", _LOWER, json.dumps(LOWERED)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT="))
    results = json.loads(line[len("RESULT="):])
    assert [r[0] for r in results] == [True] * len(LOWERED), results
    # The list covers each kind of lowering: split, transposed, unsplit partials, sm80.
    assert any(r[2] > 1 and not r[3] for r in results) and any(r[2] > 1 and r[3] for r in results)
    assert any(r[1] == "simt" and r[4] for r in results) and any(r[1] == "sm80" for r in results)
    assert any(r[1] == "simt" and not r[4] for r in results), results


#: (A stored transposed, B stored transposed, A's shape, B's, what ``_same_k`` pads): K-major
#: operands padded to K = 40, the other stored with K = 37.
SAME_K = [
    (False, False, (2, 24, 40), (2, 37, 56), "b"),  # K-major A, N-major B: B's rows padded
    (True, True, (2, 37, 24), (2, 56, 40), "a"),  # M-major A, K-major B: A's rows padded
    (False, True, (2, 24, 40), (2, 56, 40), None),  # both K-major: both padded already
    (True, False, (2, 37, 24), (2, 37, 56), None),  # neither K-major: K = 37 in both
]


@pytest.mark.parametrize("trans_a, trans_b, a_shape, b_shape, padded", SAME_K)
def test_operands_of_a_kernel_bounded_by_the_product_agree_on_k(trans_a, trans_b, a_shape,
                                                                 b_shape, padded):
    """sm80 and SIMT bound their reads of B by A's K (``Family.own_extents`` False): after the
    XLA route pads K-major rows to 16 bytes, the other operand gets zero rows up to the same K
    (``xla._same_k``); unit-stride rows never change."""
    from cutematmul import xla

    a, b = jnp.ones(a_shape, F16), jnp.ones(b_shape, F16)
    a2, b2 = xla._same_k(a, trans_a, b, trans_b)
    k_a = a2.shape[-2] if trans_a else a2.shape[-1]
    k_b = b2.shape[-1] if trans_b else b2.shape[-2]
    assert k_a == k_b
    assert (a2.shape != a.shape, b2.shape != b.shape) == (padded == "a", padded == "b")
    assert a2.shape[-1] == a.shape[-1] and b2.shape[-1] == b.shape[-1]
    assert float(jnp.sum(a2)) == float(jnp.sum(a)) and float(jnp.sum(b2)) == float(jnp.sum(b))


#: Products whose XLA plans cover each kind of kernel output: (dtype, m, n, k, batch, B stored
#: transposed, (split, C^T, partial sums)).
OUTPUTS = [
    ("float16", 24, 2048, 8192, 1, False, (True, True, True)),
    ("bfloat16", 64, 96, 40000, 2, False, (True, False, True)),
    ("float32", 4096, 6, 4096, 1, True, (True, True, True)),  # the row-streaming kernel
    ("float32", 20, 30, 50000, 1, False, (True, False, True)),  # rows of 30 in 32
    ("float16", 300, 500, 700, 2, False, (False, False, False)),  # C, rows of 500 in 504
]


@pytest.mark.parametrize("case", OUTPUTS, ids=lambda c: "-".join(map(str, c[:6])))
def test_the_kernel_output_becomes_c(case):
    """``xla.from_kernel_output`` turns what the kernel writes (``xla.kernel_output``: C, or
    fp32 partial sums of C or C^T, ``splits`` per batch entry) into C: emulated here with the
    partial products of ``splits`` runs of K and NaN in every padding column, which must not
    reach C."""
    import numpy as np

    from cutematmul import xla

    dtype, m, n, k, batch, trans_b, kind = case
    plan = xla.xla_plan((9, 0), 132, dtype, "highest", "auto", m, n, k, batch, False, trans_b,
                        batch == 1, True)
    assert (plan.splits > 1, plan.transposed, plan.partials) == kind, plan
    rng = np.random.default_rng(7)
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = xla.kernel_output(plan, batch, m, n, jnp.dtype(dtype))
    c_cols = m if plan.transposed else n
    written = np.full(out.shape, np.nan, np.float32)
    bounds = np.linspace(0, k, plan.splits + 1).astype(int)
    for entry in range(batch):
        for s in range(plan.splits):
            lo, hi = bounds[s], bounds[s + 1]
            part = a[entry, :, lo:hi].astype(np.float64) @ b[lo:hi].astype(np.float64)
            written[entry * plan.splits + s, :, :c_cols] = part.T if plan.transposed else part
    c = xla.from_kernel_output(jnp.asarray(written).astype(out.dtype), plan, batch, m, n,
                               jnp.dtype(dtype))
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = np.asarray(c.astype(jnp.float32), np.float64)
    assert c.shape == (batch, m, n) and c.dtype == jnp.dtype(dtype)
    assert np.isfinite(got).all(), "a padding column reached C"
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err <= {"float32": 1e-6, "float16": 1e-3, "bfloat16": 8e-3}[dtype], err
