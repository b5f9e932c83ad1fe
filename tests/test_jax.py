"""JAX: cutematmul.matmul inside jax.jit as an XLA custom call, with grad, vmap, scan, export,
compile-once caching, and multi-GPU sharding.  References: jnp.matmul at precision=HIGHEST on
float32 (or float64 on the host) copies of the same inputs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import require_module
from helpers import TOLERANCE

jax = require_module("jax")
import jax.numpy as jnp  # noqa: E402

import cutematmul  # noqa: E402


def _cuda_devices():
    try:
        return jax.devices("cuda")
    except RuntimeError:
        return []


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _cuda_devices(),
                       reason="JAX sees no CUDA device (CPU-only jaxlib or no GPU)"),
]

HI = jax.lax.Precision.HIGHEST


def _randn(shape, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return jnp.asarray(x).astype(dtype)


def _check(got, expected, dtype):
    got = np.asarray(got.astype(jnp.float32), dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape
    assert np.isfinite(got).all()
    err = np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-30)
    assert err <= TOLERANCE[dtype], f"relative error {err:.3g} for {dtype}"


def _ref(a, b):
    return np.matmul(np.asarray(a.astype(jnp.float32), np.float64),
                     np.asarray(b.astype(jnp.float32), np.float64))


DTYPES = ["float32", "float16", "bfloat16"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 3), (128, 256, 64), (257, 129, 95),
                                   (1000, 1000, 1000),
                                   (2048, 4096, 384),  # 16-bit: the pingpong kernel, also in XLA
                                   (8300, 24, 1000), (4100, 5, 777),  # 16-bit: narrow tiles, 2x1
                                   (176, 8200, 1000),  # 16-bit: swapped (C^T in the kernel)
                                   (16, 8200, 1000)],  # 16-bit: swapped on a 16-wide tile
                         ids=lambda s: "x".join(map(str, s)))
def test_jit_and_eager(dtype, shape):
    m, n, k = shape
    a, b = _randn((m, k), dtype, 0), _randn((k, n), dtype, 1)
    _check(jax.jit(cutematmul.matmul)(a, b), _ref(a, b), dtype)
    _check(cutematmul.matmul(a, b), _ref(a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
def test_transposed_views_inside_jit_are_not_copied(dtype, layout):
    a = _randn((96, 160) if layout[0] == "t" else (160, 96), dtype, 2)
    b = _randn((200, 96) if layout[1] == "t" else (96, 200), dtype, 3)

    def f(x, y):
        return cutematmul.matmul(x.T if layout[0] == "t" else x, y.T if layout[1] == "t" else y)

    got = jax.jit(f)(a, b)
    ea = a.T if layout[0] == "t" else a
    eb = b.T if layout[1] == "t" else b
    _check(got, _ref(ea, eb), dtype)
    hlo = jax.jit(f).lower(a, b).compile().as_text()
    assert "custom-call" in hlo
    assert " transpose(" not in hlo and " copy(" not in hlo, (
        "the transpose was materialized:\n" + hlo)


@pytest.mark.parametrize("shapes", [((3, 64, 32), (3, 32, 48)), ((3, 64, 32), (32, 48)),
                                    ((64, 32), (2, 3, 32, 48)), ((2, 1, 16, 8), (3, 8, 4)),
                                    ((32,), (3, 32, 8)), ((5, 16, 32), (32,)),
                                    ((2, 3000, 256), (256, 24))])
def test_batched_broadcast(shapes):
    a, b = _randn(shapes[0], "float16", 4), _randn(shapes[1], "float16", 5)
    _check(jax.jit(cutematmul.matmul)(a, b), _ref(a, b), "float16")


def test_odd_unaligned():
    a, b = _randn((333, 101), "bfloat16", 6), _randn((101, 77), "bfloat16", 7)
    _check(jax.jit(cutematmul.matmul)(a, b), _ref(a, b), "bfloat16")


def test_grad_jvp_and_second_order():
    from jax.test_util import check_grads

    a, b = _randn((24, 16), "float32", 8), _randn((16, 12), "float32", 9)
    f = lambda x, y: jnp.tanh(cutematmul.matmul(x, y))  # noqa: E731
    check_grads(f, (a, b), order=2, modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)
    # Batched with a broadcast operand, and transposed operands.
    a3 = _randn((3, 24, 16), "float32", 10)
    check_grads(lambda x, y: cutematmul.matmul(x, y.T), (a3, b.T), order=1, modes=("rev",),
                atol=2e-2, rtol=2e-2)
    # The backward products run through cutematmul too.
    jaxpr = jax.make_jaxpr(jax.grad(lambda x, y: cutematmul.matmul(x, y).sum(),
                                    argnums=(0, 1)))(a, b)
    prims = [e.primitive.name for e in jaxpr.eqns]
    assert prims.count("cutematmul_matmul") == 3 and "dot_general" not in prims


def test_grad_matches_jnp():
    a, b = _randn((64, 48), "float32", 11), _randn((48, 32), "float32", 12)
    loss = lambda mm: lambda x, y: jnp.sum(jnp.sin(mm(x, y)))  # noqa: E731
    ours = jax.grad(loss(cutematmul.matmul), argnums=(0, 1))(a, b)
    ref = jax.grad(loss(lambda x, y: jnp.matmul(x, y, precision=HI)), argnums=(0, 1))(a, b)
    for g, r in zip(ours, ref):
        _check(g, np.asarray(r), "float32")
    jf = jax.jacfwd(cutematmul.matmul)(a[:4, :3], b[:3, :2])
    jr = jax.jacrev(cutematmul.matmul)(a[:4, :3], b[:3, :2])
    np.testing.assert_allclose(np.asarray(jf), np.asarray(jr), rtol=1e-5, atol=1e-5)


def test_vmap_is_one_batched_launch():
    a, b = _randn((5, 3, 32, 16), "float16", 13), _randn((16, 24), "float16", 14)
    f = jax.vmap(jax.vmap(cutematmul.matmul, in_axes=(0, None)), in_axes=(0, None))
    _check(jax.jit(f)(a, b), _ref(a, b), "float16")
    prims = [e.primitive.name for e in jax.make_jaxpr(f)(a, b).eqns]
    assert prims.count("cutematmul_matmul") == 1 and "while" not in prims and "scan" not in prims


def test_scan_fori_donate():
    a, b = _randn((64, 64), "float32", 15) / 8, _randn((64, 64), "float32", 16) / 8

    def body(carry, _):
        return cutematmul.matmul(carry, b), None

    got, _ = jax.jit(lambda x: jax.lax.scan(body, x, None, length=4))(a)
    want = a
    for _ in range(4):
        want = jnp.matmul(want, b, precision=HI)
    _check(got, np.asarray(want), "float32")
    got2 = jax.jit(lambda x: jax.lax.fori_loop(0, 4, lambda i, c: cutematmul.matmul(c, b), x))(a)
    _check(got2, np.asarray(want), "float32")
    donated = jax.jit(lambda x, y: cutematmul.matmul(x, y), donate_argnums=0)(jnp.array(a), b)
    _check(donated, _ref(a, b), "float32")


def test_compiles_once_per_configuration():
    from cutematmul import xla

    f = jax.jit(lambda x, y: cutematmul.matmul(x, y))
    f(_randn((4096, 512), "float16", 17), _randn((512, 4096), "float16", 18))
    before = xla.cache_info()["entries"]
    shapes = [(4000, 600, 4096), (4352, 256, 3840)]
    from cutematmul import device  # the shapes must share the first one's kernel

    info = device.device_info(0)

    def key(m, n, k):
        return xla.xla_plan(info.capability, info.num_sms, "float16", "highest", "auto", m, n, k,
                            1, False, False, True, True).key

    assert all(key(m, n, k) == key(4096, 4096, 512) for m, k, n in shapes), \
        "pick shapes the XLA route maps to one kernel"
    for m, k, n in shapes:
        a, b = _randn((m, k), "float16", m), _randn((k, n), "float16", n)
        _check(f(a, b), _ref(a, b), "float16")
    assert xla.cache_info()["entries"] == before


_RUN_CHILD = textwrap.dedent("""
    import sys, numpy as np, jax, jax.numpy as jnp
    import cutematmul
    from cutematmul import xla
    xla.register_ffi_targets()
    exported = jax.export.deserialize(open(sys.argv[1], "rb").read())
    a = jnp.asarray(np.load(sys.argv[2])); b = jnp.asarray(np.load(sys.argv[3]))
    np.save(sys.argv[4], np.asarray(exported.call(a, b)).astype(np.float32))
""")


def test_export_roundtrip_in_fresh_process(tmp_path):
    from cutlass.jax import get_export_disabled_safety_checks

    batch = jax.export.symbolic_shape("b")[0]
    f = jax.jit(lambda x, y: cutematmul.matmul(x, y))
    exp = jax.export.export(f, disabled_checks=get_export_disabled_safety_checks())(
        jax.ShapeDtypeStruct((batch, 128, 96), jnp.float16),
        jax.ShapeDtypeStruct((96, 64), jnp.float16))
    (tmp_path / "f.bin").write_bytes(exp.serialize())
    a, b = _randn((3, 128, 96), "float16", 19), _randn((96, 64), "float16", 20)
    np.save(tmp_path / "a.npy", np.asarray(a)); np.save(tmp_path / "b.npy", np.asarray(b))
    proc = subprocess.run([sys.executable, "-c", _RUN_CHILD, str(tmp_path / "f.bin"),
                           str(tmp_path / "a.npy"), str(tmp_path / "b.npy"),
                           str(tmp_path / "c.npy")], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _check(jnp.asarray(np.load(tmp_path / "c.npy")), _ref(a, b), "float16")


_JIT_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.numpy as jnp
    import cutematmul
    from cutematmul import cache
    a, b = (jnp.asarray(np.load(p)).astype(jnp.float16) for p in sys.argv[1:3])
    c = jax.jit(lambda x, y: cutematmul.matmul(x, y))(a, b)
    np.save(sys.argv[3], np.asarray(c.astype(jnp.float32)))
    print("RESULT=" + json.dumps({"compiles": cache.cache_info()["jax"]["compiles"]}))
""")


def test_objects_precompiled_without_a_gpu_run_on_this_one(tmp_path):
    """``precompile --jax`` in a process that sees no GPU (the target named: this GPU's arch and
    SM count), then a jitted product in a fresh process on this GPU: no compile, right values."""
    from cutematmul import device
    from cutematmul.dispatch import target_arch

    info = device.device_info(0)
    cache_dir = tmp_path / "cache"
    env = {**os.environ, "CUTEMATMUL_CACHE_DIR": str(cache_dir)}
    env.pop("CUTE_DSL_ARCH", None)
    built = subprocess.run(
        [sys.executable, "-m", "cutematmul", "precompile", "--arch", target_arch(info.capability),
         "--num-sms", str(info.num_sms), "--dtypes", "float16", "--layouts", "kn",
         "--shapes", "256x384x512", "--jax", "--jobs", "1", "--quiet"],
        env={**env, "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    a, b = _randn((256, 512), "float16", 23), _randn((512, 384), "float16", 24)
    np.save(tmp_path / "a.npy", np.asarray(a.astype(jnp.float32)))
    np.save(tmp_path / "b.npy", np.asarray(b.astype(jnp.float32)))
    proc = subprocess.run([sys.executable, "-c", _JIT_CHILD, str(tmp_path / "a.npy"),
                           str(tmp_path / "b.npy"), str(tmp_path / "c.npy")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT="))
    assert line == 'RESULT={"compiles": 0}', proc.stdout
    _check(jnp.asarray(np.load(tmp_path / "c.npy")), _ref(a, b), "float16")


def test_under_cuda_graphs(tmp_path):
    code = textwrap.dedent("""
        import numpy as np, jax, jax.numpy as jnp, cutematmul
        a = jnp.asarray(np.random.default_rng(0).standard_normal((256, 128), dtype=np.float32))
        b = jnp.asarray(np.random.default_rng(1).standard_normal((128, 64), dtype=np.float32))
        f = jax.jit(lambda x, y: jnp.sin(cutematmul.matmul(x, y)) + 1)
        for _ in range(5):
            c = f(a, b)
        ref = np.sin(np.asarray(a, np.float64) @ np.asarray(b, np.float64)) + 1
        err = np.linalg.norm(np.asarray(c) - ref) / np.linalg.norm(ref)
        print("ERR", err)
        assert err < 1e-5
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL "
               "--xla_gpu_graph_min_graph_size=1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_trace_time_errors():
    a = jnp.ones((4, 8), jnp.float16)
    with pytest.raises(ValueError, match="contracted dimensions differ"):
        jax.jit(cutematmul.matmul)(a, jnp.ones((9, 3), jnp.float16))
    with pytest.raises(TypeError,
                       match="b must have dtype float32, float16 or bfloat16; got int32"):
        jax.jit(cutematmul.matmul)(a, jnp.ones((8, 3), jnp.int32))
    with pytest.raises(TypeError, match="immutable"):
        cutematmul.matmul(a, a.T, out=a)


@pytest.mark.multigpu
def test_shard_map_data_parallel_and_row_sharded():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    devices = _cuda_devices()
    mesh = Mesh(np.array(devices), ("d",))
    n = len(devices)
    a, b = _randn((2 * n, 64, 32), "bfloat16", 21), _randn((32, 48), "bfloat16", 22)
    f = jax.jit(jax.shard_map(cutematmul.matmul, mesh=mesh, in_specs=(P("d"), P()),
                              out_specs=P("d")))
    _check(f(a, b), _ref(a, b), "bfloat16")
    a2 = _randn((128 * n, 64), "float32", 23)
    g = jax.jit(jax.shard_map(cutematmul.matmul, mesh=mesh, in_specs=(P("d", None), P()),
                              out_specs=P("d", None)))
    _check(g(a2, _randn((64, 40), "float32", 24)), _ref(a2, _randn((64, 40), "float32", 24)),
           "float32")
    del NamedSharding


@pytest.mark.multigpu
def test_custom_partitioning_keeps_rows_sharded():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from cutematmul.xla_sharding import sharded_matmul

    devices = _cuda_devices()
    mesh = Mesh(np.array(devices), ("d",))
    a = jax.device_put(_randn((256 * len(devices), 64), "float16", 25),
                       NamedSharding(mesh, P("d", None)))
    b = jax.device_put(_randn((64, 32), "float16", 26), NamedSharding(mesh, P()))
    f = jax.jit(sharded_matmul)
    c = f(a, b)
    _check(c, _ref(a, b), "float16")
    assert c.sharding.spec[0] == "d", c.sharding
    hlo = f.lower(a, b).compile().as_text()
    assert "all-gather" not in hlo, "A was gathered instead of partitioned"


def _err(got, expected):
    got = np.asarray(got, dtype=np.float64)
    return float(np.linalg.norm(got - expected) / np.linalg.norm(expected))


@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
def test_precision_modes_inside_jit_grad_and_vmap(layout):
    """The primitive carries the mode: jit, the backward products of grad, and vmap keep it.
    "tf32" is measurably coarser than fp32 and within its bound; "high" is fp32-accurate.
    A "t" operand is passed stored transposed and transposed back inside the jitted function."""
    a, b = _randn((3, 256, 2048), "float32", 20), _randn((2048, 192), "float32", 21)
    want = _ref(a, b)
    sa = jnp.swapaxes(a, -1, -2) if layout[0] == "t" else a
    sb = b.T if layout[1] == "t" else b

    def product(x, y, precision):
        x = jnp.swapaxes(x, -1, -2) if layout[0] == "t" else x
        y = y.T if layout[1] == "t" else y
        kernel = "auto" if precision == "highest" else "sm90"  # auto may pick fp32 here
        return cutematmul.matmul(x, y, precision=precision, kernel=kernel)

    a64, b64 = np.asarray(a[0], np.float64), np.asarray(b, np.float64)
    ref_grad = 2 * a64.T @ (a64 @ b64)
    errors = {}
    for precision in ("high", "tf32", "highest"):
        f = jax.jit(jax.vmap(lambda x, y, p=precision: product(x, y, p), in_axes=(0, None)))
        errors[precision] = _err(f(sa, sb), want)
        g = jax.jit(jax.grad(lambda x, y, p=precision: jnp.sum(product(x, y, p) ** 2),
                             argnums=1))(sa[0], sb)
        errors[precision + "-grad"] = _err(g.T if layout[1] == "t" else g, ref_grad)
    assert errors["highest"] <= 2e-6 and errors["high"] <= 2e-6, errors
    assert errors["highest-grad"] <= 2e-6 and errors["high-grad"] <= 2e-6, errors
    assert all(1e-5 <= errors[k] <= TOLERANCE["tf32"] for k in ("tf32", "tf32-grad")), errors


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("k, n", [(1000, 4104), (12288, 4096)])
def test_m_of_17_to_32_with_a_m_major_inside_jit(dtype, k, n):
    """``x.T @ y`` of 24 rows inside jit: the XLA route runs it swapped on a 32-wide tile
    (``configs.sm90._swapped_small_m``), A read M-major in place, or over a long K and few of
    N's tiles through XLA's K-major copy of it (``configs.sm90.copies_across``)."""
    from cutematmul import device, xla
    from cutematmul.configs import sm90

    info = device.device_info(0)
    plan = xla.xla_plan(info.capability, info.num_sms, dtype, "highest", "auto", 24, n, k, 1,
                        True, False, False, False)
    across = plan.family.name == "sm90" and sm90.copies_across("m", 24, n, k, 1, info.num_sms)
    assert plan.copies[0] == ("k" if across else None), plan
    assert across == (k == 12288) or info.capability != (9, 0), (k, info)
    x, y = _randn((k, 24), dtype, 42), _randn((k, n), dtype, 43)
    got = jax.jit(lambda x, y: cutematmul.matmul(x.T, y))(x, y)
    _check(got, _ref(x.T, y), dtype)


#: (layout, M, N, K, batch): 16-bit products of few rows whose B rows are no whole 16-byte
#: vectors (odd N under an N-major B, odd K under a K-major one).
ODD_ROWS = [("nn", 1, 3001, 777, ()), ("tn", 4, 1027, 4097, ()), ("nn", 8, 2053, 3001, (2,)),
            ("nt", 3, 515, 1025, ())]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", ODD_ROWS, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}x{c[3]}b{c[4]}")
def test_few_rows_over_odd_b_rows_read_in_place_inside_jit(dtype, case):
    """``x @ W`` of up to 8 rows with W's rows no whole 16-byte vectors inside jit: the XLA
    route runs SIMT's row-streaming kernel with no padded copy (``xla.xla_plan`` passes the
    rows' vector test to ``dispatch.problem_order``), its partial sums added up by XLA where it
    splits K; within the 16-bit bound, with its gradient."""
    from cutematmul import device, xla

    layout, m, n, k, batch = case
    info = device.device_info(0)
    plan = xla.xla_plan(info.capability, info.num_sms, dtype, "highest", "auto", m, n, k,
                        int(np.prod(batch)), layout[0] == "t", layout[1] == "t", not batch, True)
    if info.capability == (9, 0):
        assert plan.family.name == "simt" and plan.need == 1, plan
    x = _randn(batch + ((k, m) if layout[0] == "t" else (m, k)), dtype, 44)
    w = _randn((n, k) if layout[1] == "t" else (k, n), dtype, 45)

    def f(x, w):
        return cutematmul.matmul(x.mT if layout[0] == "t" else x, w.T if layout[1] == "t" else w)

    x_logical = x.mT if layout[0] == "t" else x
    w_logical = w.T if layout[1] == "t" else w
    _check(jax.jit(f)(x, w), _ref(x_logical, w_logical), dtype)
    g = _randn(batch + (m, n), dtype, 46)
    dx, dw = jax.jit(jax.grad(lambda x, w: jnp.sum(f(x, w).astype(jnp.float32)
                                                   * g.astype(jnp.float32)), (0, 1)))(x, w)
    ref_dx = _ref(g, w_logical.T)
    ref_dw = _ref(x_logical.reshape(-1, k).T, g.reshape(-1, n))  # summed over the batch
    _check(dx.mT if layout[0] == "t" else dx, ref_dx, dtype)
    _check(dw.T if layout[1] == "t" else dw, ref_dw, dtype)


@pytest.mark.parametrize("layout", ["nt", "tt"])
def test_tf32_small_n_inside_jit_runs_on_the_narrow_tiles(layout):
    """One-pass "tf32" of N = 24 with B K-major inside jit: the XLA route runs the narrow
    32-wide tile (``configs.sm90.narrow_n``), its partial sums added up by XLA where it splits
    K; an M-major A is the register operand.  Within the TF32 bound."""
    from cutematmul import xla

    plan = xla.xla_plan((9, 0), 132, "float32", "tf32", "sm90", 4100, 24, 1000, 1,
                        layout[0] == "t", True, True, True)
    config = plan.key.config
    assert config.tile_n == 32 and not config.swap and not plan.transposed, config
    x = _randn((1000, 4100) if layout[0] == "t" else (4100, 1000), "float32", 44)
    y = _randn((24, 1000), "float32", 45)
    got = jax.jit(lambda x, y: cutematmul.matmul(x.T if layout[0] == "t" else x, y.T,
                                                 precision="tf32", kernel="sm90"))(x, y)
    xa = np.asarray(x, np.float64)
    err = _err(got, (xa.T if layout[0] == "t" else xa) @ np.asarray(y, np.float64).T)
    assert 1e-5 <= err <= TOLERANCE["tf32"], err


@pytest.mark.parametrize("m, n", [(72, 1000), (1000, 72)], ids=["a-copied", "b-copied"])
def test_tf32_of_both_transposed_copies_the_smaller_operand_inside_jit(m, n):
    """One-pass "tf32" of ``x.T @ y.T`` inside jit: XLA makes the K-major copy of the smaller
    operand (A where M < N, ``configs.sm90.operand_copies``), within the TF32 bound."""
    from cutematmul.configs import sm90

    assert sm90.operand_copies("tf32", "m", "n", m, n, 300, 1, 132) == (
        ("k", None) if m < n else (None, "k"))
    x, y = _randn((300, m), "float32", 40), _randn((n, 300), "float32", 41)
    got = jax.jit(lambda x, y: cutematmul.matmul(x.T, y.T, precision="tf32", kernel="sm90"))(
        x, y)
    err = _err(got, np.asarray(x, np.float64).T @ np.asarray(y, np.float64).T)
    assert 1e-5 <= err <= TOLERANCE["tf32"], err


@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("copied", ["a", "b"])
def test_highest_with_k_major_operands_on_large_products(batch, copied):
    """fp32 "highest" of x @ w.T (both operands K-major) inside jit, on products where the
    route hands the kernel an M-major A or an N-major B made by XLA
    (``dispatch.operand_copies``); M, N and K not multiples of 4, within the fp32 bound."""
    from cutematmul.configs import simt

    m, n = ((simt.COPY_A_MIN_M + 5, simt.COPY_A_MIN_N + 5) if copied == "a"
            else (simt.COPY_B_MIN_M + 5, simt.COPY_B_MIN_N + 3))
    x, w = _randn(batch + (m, 70), "float32", 30), _randn((n, 70), "float32", 31)
    got = jax.jit(lambda x, w: cutematmul.matmul(x, w.T))(x, w)
    _check(got, _ref(x, w.T), "float32")


#: Jitted products the XLA route runs through partial sums that XLA adds up
#: (``xla.XlaPlan.partials``): (dtype, precision, A's stored shape, B's, A stored transposed, B
#: stored transposed, the plan's kind: "split", "transposed" (C^T, split or not) or "sm80").
PARTIAL_SUMS = [
    ("float16", "highest", (24, 8192), (8192, 2048), False, False, "transposed"),
    ("bfloat16", "highest", (40000, 64), (40000, 96), True, False, "split"),
    ("float16", "highest", (3, 16, 20000), (20000, 40), False, False, "split"),
    ("bfloat16", "highest", (2, 9, 6000), (2, 6000, 104), False, False, "transposed"),
    ("float16", "highest", (16, 20000), (3, 20000, 40), False, False, "split"),  # A shared
    ("bfloat16", "highest", (9, 6000), (2, 6000, 104), False, False, "transposed"),  # A shared
    # B's rows of 200 bytes: SIMT's row-streaming kernel (tensor cores) reads them in place.
    ("bfloat16", "highest", (9, 6000), (2, 6000, 100), False, False, "rows"),  # A shared
    ("float32", "highest", (4096, 4096), (6, 4096), False, True, "transposed"),
    ("float32", "highest", (20, 50000), (50000, 30), False, False, "split"),
    ("float32", "high", (512, 20000), (20000, 512), False, False, "split"),
    ("float32", "tf32", (8, 12000), (12000, 3000), False, False, "transposed"),
    ("float16", "highest", (100, 64), (37, 64), False, True, "sm80"),
]


def _stored(a_shape, b_shape, ta, tb, dtype, seed):
    return _randn(a_shape, dtype, seed), _randn(b_shape, dtype, seed + 1)


@pytest.mark.parametrize("case", PARTIAL_SUMS, ids=lambda c: f"{c[0]}-{c[1]}-{c[6]}-"
                         + "x".join(map(str, c[2])) + "-" + "x".join(map(str, c[3])))
def test_split_and_transposed_products_inside_jit(case):
    """Inside jit the XLA route splits K, runs small M as C^T and writes the narrow tiles'
    partials as the pointer route does: the kernel's fp32 partial sums are the custom call's
    output and XLA adds (and transposes) them into C.  Each case's plan is of its kind; the
    result is within the dtype's bound of a float64 product and bitwise the same on a second
    run (the sums have a fixed shape and order).  The sm80 case: a K-major B of 37 rows under
    C padded to 40 columns, which the kernel must not read past."""
    from cutematmul import device, xla

    dtype, precision, a_shape, b_shape, ta, tb, kind = case
    a, b = _stored(a_shape, b_shape, ta, tb, dtype, 60)
    m, k = (a_shape[-1], a_shape[-2]) if ta else (a_shape[-2], a_shape[-1])
    n = b_shape[-2] if tb else b_shape[-1]
    batch = max(a_shape[0] if len(a_shape) > 2 else 1, b_shape[0] if len(b_shape) > 2 else 1)
    info = device.device_info(0)
    plan = xla.xla_plan(info.capability, info.num_sms, dtype, precision, "auto", m, n, k, batch,
                        ta, tb, len(a_shape) == 2, len(b_shape) == 2)
    if info.capability == (9, 0):
        assert {"split": plan.splits > 1 and not plan.transposed, "transposed": plan.transposed,
                "sm80": plan.key.family == "sm80",
                "rows": plan.key.family == "simt" and plan.key.config.mma and plan.splits > 1,
                }[kind], plan

    def f(x, y):
        return cutematmul.matmul(jnp.swapaxes(x, -1, -2) if ta else x,
                                 jnp.swapaxes(y, -1, -2) if tb else y, precision=precision)

    got = jax.jit(f)(a, b)
    again = jax.jit(f)(a, b)
    ea = jnp.swapaxes(a, -1, -2) if ta else a
    eb = jnp.swapaxes(b, -1, -2) if tb else b
    _check(got, _ref(ea, eb), "tf32" if precision == "tf32" else dtype)
    assert np.array_equal(np.asarray(got), np.asarray(again)), "a second run differs"


def test_weight_gradient_of_a_long_batch_is_split_inside_jit():
    """``grad`` of a layer over 40000 rows: dW = X^T dY is a small C of a long K (split inside
    jit), dX = dY W^T is not; both within the fp32 bound of float64."""
    x, w = _randn((40000, 64), "float32", 70), _randn((64, 96), "float32", 71)
    gx, gw = jax.jit(jax.grad(lambda x, w: jnp.sum(cutematmul.matmul(x, w) ** 2),
                              argnums=(0, 1)))(x, w)
    x64, w64 = np.asarray(x, np.float64), np.asarray(w, np.float64)
    dy = 2 * x64 @ w64
    _check(gw, x64.T @ dy, "float32")
    _check(gx, dy @ w64.T, "float32")
