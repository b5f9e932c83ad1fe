"""Mixed-dtype products on the GPU: float16, bfloat16 and float32 operands in any pairing promote
(``operand.result_dtype``) as NumPy, CuPy, JAX and the Array API do: float32 with a 16-bit
dtype, and float16 with bfloat16, give a float32 product, computed in the float32 mode asked
for.

Each result is held to the float32 bound against a float64 product of the operands as given
(their 16-bit values are exact in float32), outputs are NaN-poisoned, and every library's route
is taken: CuPy and PyTorch (device route, with a named stream too), PyTorch's operator (autograd),
NumPy (host route), JAX under ``jit`` and ``grad``, and a generic DLPack array.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import cutematmul
from conftest import require_module
from helpers import TOLERANCE, Maker, check_matmul, layout_operands, to_numpy

pytestmark = pytest.mark.gpu

PAIRS = [p for p in itertools.product(("float32", "float16", "bfloat16"), repeat=2)
         if p[0] != p[1]]
SHAPES = [(1, 1, 1), (33, 17, 9), (130, 70, 260), (1, 300, 500), (600, 8, 700), (512, 512, 512)]
LAYOUTS = ["nn", "tn", "nt", "tt"]


def _pair(mk, m, n, k, layout, dtypes, batch=()):
    a, _ = layout_operands(mk, m, n, k, layout, dtypes[0], batch)
    _, b = layout_operands(mk, m, n, k, layout, dtypes[1], batch)
    return a, b


def _is_float32(x) -> bool:
    return str(x.dtype).removeprefix("torch.") == "float32"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtypes", PAIRS, ids="@".join)
@pytest.mark.parametrize("lib", ["cupy", "torch", "numpy"])
def test_mixed_pairs_promote_to_float32(lib, dtypes, layout, shape):
    require_module(lib)
    mk = Maker(lib, seed=sum(shape))
    a, b = _pair(mk, *shape, layout, dtypes)
    before = (to_numpy(a).copy(), to_numpy(b).copy())
    out = mk.poisoned((shape[0], shape[1]), "float32")
    result = cutematmul.matmul(a, b, out=out)
    assert result is out and _is_float32(result)
    check_matmul(result, a, b, "float32")
    fresh = cutematmul.matmul(a, b)
    assert _is_float32(fresh)
    check_matmul(fresh, a, b, "float32")
    # The operands are read, never cast in place.
    assert np.array_equal(to_numpy(a), before[0]) and np.array_equal(to_numpy(b), before[1])


@pytest.mark.parametrize("shapes", [((3, 40, 50), (50, 30)), ((2, 1, 40, 50), (4, 50, 30)),
                                    ((50,), (2, 50, 30)), ((3, 40, 50), (50,))],
                         ids=lambda s: f"{s[0]}@{s[1]}")
@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_mixed_batches_broadcast(lib, shapes):
    require_module(lib)
    mk = Maker(lib, seed=7)
    a, b = mk.randn(shapes[0], "bfloat16"), mk.randn(shapes[1], "float32")
    result = cutematmul.matmul(a, b)
    assert _is_float32(result)
    check_matmul(result, a, b, "float32")


@pytest.mark.parametrize("precision", ["highest", "high", "tf32"])
def test_mixed_products_keep_the_precision(precision):
    """A promoted product is a float32 product: ``precision`` applies to it."""
    torch = require_module("torch")
    mk = Maker("torch", seed=3)
    a, b = mk.randn((256, 1024), "float16"), mk.randn((1024, 384), "float32")
    result = cutematmul.matmul(a, b, precision=precision)
    expected = np.matmul(to_numpy(a), to_numpy(b))
    err = np.linalg.norm(to_numpy(result) - expected) / np.linalg.norm(expected)
    same = cutematmul.matmul(a.float(), b, precision=precision)
    assert result.dtype == torch.float32
    assert torch.equal(result, same), "the promoted product differs from the cast one"
    assert err <= TOLERANCE["tf32" if precision == "tf32" else "float32"]


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_mixed_on_a_named_stream(lib):
    """The casts run on the stream the caller names, ordered before the product."""
    xp = require_module(lib)
    mk = Maker(lib, seed=11)
    a, b = mk.randn((700, 900), "float16"), mk.randn((900, 500), "float32")
    if lib == "torch":
        stream = xp.cuda.Stream()
        stream.wait_stream(xp.cuda.current_stream())
        result = cutematmul.matmul(a, b, stream=stream)
        stream.synchronize()
    else:
        stream = xp.cuda.Stream(non_blocking=True)
        xp.cuda.get_current_stream().synchronize()
        result = cutematmul.matmul(a, b, stream=stream)
        stream.synchronize()
    check_matmul(result, a, b, "float32")


def test_mixed_torch_autograd():
    """Through the operator: the cast is in the graph, so each input's gradient has its dtype."""
    torch = require_module("torch")
    mk = Maker("torch", seed=5)
    a = mk.randn((64, 96), "bfloat16").requires_grad_()
    b = mk.randn((96, 48), "float32").requires_grad_()
    result = cutematmul.matmul(a, b)
    assert result.dtype == torch.float32
    g = torch.randn_like(result)
    result.backward(g)
    assert a.grad.dtype == torch.bfloat16 and b.grad.dtype == torch.float32
    a64, b64, g64 = (x.detach().double() for x in (a, b, g))
    for got, ref in ((a.grad, g64 @ b64.T), (b.grad, a64.T @ g64)):
        err = ((got.double() - ref).norm() / ref.norm()).item()
        assert err <= TOLERANCE[str(got.dtype).removeprefix("torch.")], err


def test_mixed_jax_jit_and_grad():
    jax = require_module("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(9)
    a = jnp.asarray(rng.standard_normal((96, 128)), jnp.float16)
    b = jnp.asarray(rng.standard_normal((128, 80)), jnp.float32)
    c = jax.jit(cutematmul.matmul)(a, b)
    assert c.dtype == jnp.float32
    check_matmul(np.asarray(c), np.asarray(a), np.asarray(b), "float32")
    c2 = jax.jit(cutematmul.matmul)(a, b.astype(jnp.bfloat16))
    assert c2.dtype == jnp.float32
    ga = jax.grad(lambda x, y: cutematmul.matmul(x, y).sum())(a, b)
    assert ga.dtype == jnp.float16
    ref = np.ones((96, 80)) @ np.asarray(b, np.float64).T
    assert np.linalg.norm(np.asarray(ga, np.float64) - ref) / np.linalg.norm(ref) <= 1e-3


def test_mixed_generic_dlpack():
    """A DLPack array with an Array API namespace is cast by its library; one without (our own
    ``DeviceArray``) is refused with a sentence naming the remedy."""
    cupy = require_module("cupy")
    from cutematmul.dlpack import DeviceArray
    from cutematmul.streams import PER_THREAD_STREAM

    class Wrapped:  # a foreign array: DLPack and a namespace, no adapter of its own
        def __init__(self, x):
            self.x = x
            self.dtype, self.device, self.shape = x.dtype, x.device, x.shape

        def __dlpack__(self, **kw):
            return self.x.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.x.__dlpack_device__()

        def __array_namespace__(self, api_version=None):
            return _Namespace

    class _Namespace:
        float32 = cupy.float32

        @staticmethod
        def astype(x, dtype):
            return Wrapped(x.x.astype(dtype))

        @staticmethod
        def empty(shape, dtype, device=None):
            return Wrapped(cupy.empty(shape, dtype=dtype))

    mk = Maker("cupy", seed=2)
    a, b = mk.randn((40, 50), "float16"), mk.randn((50, 30), "float32")
    result = cutematmul.matmul(Wrapped(a), Wrapped(b))
    check_matmul(result.x, a, b, "float32")
    d = DeviceArray((40, 50), "float16", device=cupy.cuda.runtime.getDevice(),
                    stream=PER_THREAD_STREAM)
    with pytest.raises(TypeError, match="cast one of them to float32 first"):
        cutematmul.matmul(d, Wrapped(b))
