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


@pytest.mark.parametrize("da,db", [(F16, jnp.float32), (jnp.bfloat16, F16), (jnp.float32, jnp.bfloat16)])
def test_mixed_dtypes_promote_to_float32(da, db):
    """As ``jnp.matmul``: a 16-bit operand with float32, or float16 with bfloat16, is float32."""
    out = jax.eval_shape(cutematmul.matmul, _s((4, 8), da), _s((3, 8, 5), db))
    assert out.shape == (3, 4, 5) and out.dtype == jnp.float32


@pytest.mark.parametrize("a,b,exc,msg", [
    (_s((4, 8)), _s((9, 5)), ValueError, "contracted dimensions differ"),
    (_s((2, 4, 8)), _s((3, 8, 5)), ValueError, "do not broadcast"),
    (_s((4, 8)), _s((8, 5), jnp.int32), TypeError, "b must have dtype float32, float16 or bfloat16; got int32"),
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
    jaxpr = jax.make_jaxpr(lambda x, y: cutematmul.matmul(x.T, y.T))(jnp.ones((8, 4), F16), jnp.ones((5, 8), F16))
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "cutematmul_matmul"]
    assert eqn.params["trans_a"] and eqn.params["trans_b"]
    assert eqn.invars[0] is jaxpr.jaxpr.invars[0] and eqn.invars[1] is jaxpr.jaxpr.invars[1]


def test_backward_products_are_cutematmul_with_transposed_reads():
    f = lambda x, y: cutematmul.matmul(x, y).astype(jnp.float32).sum()  # noqa: E731
    jaxpr = jax.make_jaxpr(jax.grad(f, argnums=(0, 1)))(jnp.ones((4, 8), F16), jnp.ones((8, 5), F16))
    eqns = [e for e in jaxpr.eqns if e.primitive.name == "cutematmul_matmul"]
    assert len(eqns) == 3 and "dot_general" not in _prims(jaxpr) and "transpose" not in _prims(jaxpr)
    assert {(e.params["trans_a"], e.params["trans_b"]) for e in eqns[1:]} == {(True, False), (False, True)}


def test_jvp_and_second_order_trace():
    a, b = jnp.ones((4, 8), jnp.float32), jnp.ones((8, 5), jnp.float32)
    jax.make_jaxpr(lambda x: jax.jvp(lambda u: cutematmul.matmul(u, b), (x,), (x,)))(a)
    jax.make_jaxpr(jax.hessian(lambda x: (cutematmul.matmul(x, b) ** 2).sum()))(a)


def test_nested_vmap_is_one_primitive():
    f = jax.vmap(jax.vmap(cutematmul.matmul, in_axes=(0, None)), in_axes=(0, None))
    jaxpr = jax.make_jaxpr(f)(jnp.ones((5, 3, 4, 8), F16), jnp.ones((8, 6), F16))
    assert _prims(jaxpr).count("cutematmul_matmul") == 1
    assert jax.eval_shape(f, _s((5, 3, 4, 8)), _s((8, 6))).shape == (5, 3, 4, 6)
