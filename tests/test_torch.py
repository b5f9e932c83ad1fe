"""PyTorch integration: the ``cutematmul::matmul`` operator, its rules, and which path a call takes.

CPU tests (run anywhere PyTorch imports, CPU-only builds included):

* the fake implementation: result shapes, dtypes, devices and strides for NumPy ``matmul``
  cases, and cutematmul's own error sentences at trace time;
* ``torch.compile(fullgraph=True)`` and ``torch.export`` trace through ``cutematmul.matmul``
  into one graph holding the operator (meta tensors: nothing is launched);
* the autograd, forward-mode and vmap rules, checked against ``torch.matmul`` with the plain
  route replaced by a CPU reference (``cpu_reference``: ``torch.matmul`` on the host, recording
  every product cutematmul is asked for);
* routing: eager calls without autograd take the plain route, the others the operator.

GPU tests (``@pytest.mark.gpu``) run the real kernels on CUDA tensors: gradients against
``torch.matmul``'s, ``torch.compile`` with Inductor, ``torch.func``, ``out=`` under compile, and
``host_overhead_us``, a host-time measurement (printed, never asserted).
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

from conftest import require_module

torch = require_module("torch")

import cutematmul  # noqa: E402
from cutematmul.adapters import torch as torch_adapter  # noqa: E402
from cutematmul.adapters import torch_ops  # noqa: E402

OP = torch.ops.cutematmul.matmul.default

# (a shape, b shape): NumPy matmul cases, 1-D promotion, broadcast batches, empty dimensions.
CASES = [
    ((5, 7), (7, 3)),
    ((7,), (7, 3)),
    ((5, 7), (7,)),
    ((7,), (7,)),
    ((4, 5, 7), (7, 3)),
    ((5, 7), (4, 7, 3)),
    ((7,), (2, 7, 3)),
    ((2, 5, 7), (7,)),
    ((2, 1, 5, 7), (3, 7, 3)),
    ((2, 3, 5, 7), (1, 3, 7, 3)),
    ((0, 5, 7), (7, 3)),
    ((5, 0), (0, 3)),
]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _ids(case):
    return f"{case[0]}@{case[1]}".replace(" ", "")


def _expected_shape(a_shape, b_shape):
    return np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape


def _relative_error(got, expected) -> float:
    got, expected = got.detach().double().cpu(), expected.detach().double().cpu()
    assert got.shape == expected.shape, f"shape {tuple(got.shape)} != {tuple(expected.shape)}"
    denom = expected.norm().item()
    diff = (got - expected).norm().item()
    return diff / denom if denom else diff


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture
def cpu_reference(monkeypatch):
    """The core's plain route replaced by ``torch.matmul`` on the host.

    Like the core, it first asks ``data_pointer`` for every operand (so wrappers without memory
    are rerouted to the operator); then it records the product's shapes and computes it.
    Returns the list of recorded products.
    """
    products = []

    def plain(self, a, b, *, out, stream, precision, kernel):
        named = [("a", a), ("b", b)] + ([("out", out)] if out is not None else [])
        for argument, x in named:
            torch_adapter.data_pointer(x, argument)
        products.append((tuple(a.shape), tuple(b.shape)))
        with torch.no_grad():
            result = torch.matmul(a, b)
            if out is None:
                return result
            out.copy_(result)
        return out

    monkeypatch.setattr(torch_adapter.TorchAdapter, "plain_matmul", plain)
    return products


@pytest.fixture
def warm_registry():
    """Make the adapter registry know torch.Tensor and nn.Parameter before Dynamo traces.

    (Keeps the other compile tests independent of the cold-registry path, which
    ``test_compile_with_a_cold_registry`` checks on its own.)
    """
    meta = torch.empty(2, 2, device="meta")
    cutematmul.matmul(meta, meta)
    cutematmul.matmul(meta, torch.nn.Parameter(meta.clone()))


class GraphRecorder:
    """A ``torch.compile`` backend that keeps each FX graph and runs it as traced (no Inductor).

    ``boxed=True`` for AOTAutograd's forward and backward compilers (boxed calling convention).
    """

    def __init__(self, boxed: bool = False):
        self.graphs = []
        self.boxed = boxed

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        if self.boxed:
            from torch._functorch.aot_autograd import make_boxed_func

            return make_boxed_func(gm.forward)
        return gm.forward

    def targets(self):
        return [n.target for g in self.graphs for n in g.graph.nodes if n.op == "call_function"]


def _meta(shape, dtype=torch.float32, requires_grad=False):
    return torch.empty(shape, dtype=dtype, device="meta", requires_grad=requires_grad)


# ----------------------------------------------------------------------------- fake implementation


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_fake_result_metadata(case, dtype):
    a, b = _meta(case[0], dtype), _meta(case[1], dtype)
    shape = _expected_shape(*case)
    for result in (OP(a, b, "highest", "auto"), cutematmul.matmul(a, b)):
        assert tuple(result.shape) == shape
        assert result.dtype == dtype and result.device.type == "meta"
        assert result.stride() == torch.empty(shape).stride()  # row-major, like the real output


def test_fake_cuda_tensors_take_the_operator():
    """Fake CUDA tensors (a FakeTensorMode, no GPU needed) are traced by the fake impl."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(3, 5, 7, device="cuda", dtype=torch.bfloat16)
        b = torch.empty(7, 4, device="cuda", dtype=torch.bfloat16)
        result = cutematmul.matmul(a, b)
    assert tuple(result.shape) == (3, 5, 4) and result.device.type == "cuda"
    assert result.dtype == torch.bfloat16 and result.stride() == (20, 4, 1)


def test_fake_mixed_dtypes_promote():
    """float16 @ float32 (and float16 @ bfloat16) trace to a float32 product, as in NumPy."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        for da, db in ((torch.float16, torch.float32), (torch.bfloat16, torch.float16)):
            a = torch.empty(3, 5, 7, device="cuda", dtype=da)
            b = torch.empty(7, 4, device="cuda", dtype=db)
            result = cutematmul.matmul(a, b)
            assert result.dtype == torch.float32 and tuple(result.shape) == (3, 5, 4)


TRACE_ERRORS = [
    (((5, 7), (6, 3)), {}, ValueError, "contracted dimensions differ"),
    (((2, 5, 7), (3, 7, 3)), {}, ValueError, "do not broadcast"),
    (((5, 7), (7, 3)), {"b_dtype": torch.float64}, TypeError,
     "b must have dtype float32, float16 or bfloat16; got float64"),
    (((5, 7), (7, 3)), {"dtype": torch.float64}, TypeError, "got float64"),
    (((5, 7), (7, 3)), {"dtype": torch.int32}, TypeError, "got int32"),
    (((), (7, 3)), {}, ValueError, "at least 1 dimension"),
    (((5, 7), (7, 3)), {"device": "cpu"}, TypeError, "must be on a CUDA device; a is on 'cpu'"),
]


def _trace_operands(shapes, options):
    dtype = options.get("dtype", torch.float32)
    device = options.get("device", "meta")
    a = torch.empty(shapes[0], dtype=dtype, device=device)
    b = torch.empty(shapes[1], dtype=options.get("b_dtype", dtype), device=device)
    return a, b


@pytest.mark.parametrize("shapes,options,exc,message", TRACE_ERRORS, ids=lambda v: str(v)[:20])
def test_fake_errors_are_our_sentences(shapes, options, exc, message):
    a, b = _trace_operands(shapes, options)
    with pytest.raises(exc, match=message):
        OP(a, b, "highest", "auto")


@pytest.mark.parametrize("shapes,options,exc,message", TRACE_ERRORS, ids=lambda v: str(v)[:20])
def test_compile_errors_carry_our_sentences(shapes, options, exc, message, warm_registry):
    """Dynamo wraps errors raised while tracing; our sentence is in the message."""
    a, b = _trace_operands(shapes, options)
    torch._dynamo.reset()
    fn = torch.compile(lambda x, y: cutematmul.matmul(x, y), fullgraph=True,
                       backend=GraphRecorder())
    with pytest.raises(Exception, match=message):
        fn(a, b)


def test_device_mismatch_at_trace_time():
    from torch._subclasses.fake_tensor import FakeTensorMode

    if torch.cuda.device_count() == 1:  # fake cuda:1 needs a CPU-only build or two GPUs
        pytest.skip("fake tensors on cuda:1 cannot be made with exactly one GPU visible")

    with FakeTensorMode():
        a, b = torch.empty(2, 3, device="cuda:0"), torch.empty(3, 2, device="cuda:1")
        with pytest.raises(ValueError, match="same GPU; a is on cuda:0 and b on cuda:1"):
            cutematmul.matmul(a, b)


# ----------------------------------------------------------------------------- compile and export


def _mlp(x, w):
    return torch.relu(cutematmul.matmul(x, w))


@pytest.mark.parametrize("requires_grad", [False, True], ids=["inference", "training"])
def test_compile_fullgraph_holds_the_operator(requires_grad, warm_registry):
    torch._dynamo.reset()
    recorder = GraphRecorder()
    fn = torch.compile(_mlp, fullgraph=True, backend=recorder)
    x, w = _meta((4, 5, 7)), _meta((7, 3), requires_grad=requires_grad)
    y = fn(x, w)
    assert tuple(y.shape) == (4, 5, 3)
    assert len(recorder.graphs) == 1  # fullgraph: no graph break
    assert OP in recorder.targets()


def test_compile_with_parameters(warm_registry):
    torch._dynamo.reset()
    recorder = GraphRecorder()
    layer = _Linear("meta")
    y = torch.compile(layer, fullgraph=True, backend=recorder)(_meta((6, 7)))
    assert tuple(y.shape) == (6, 3) and OP in recorder.targets()


def test_compile_training_graphs_use_cutematmul_for_both_gradients(warm_registry):
    """AOTAutograd differentiates the operator with its registered rule: the backward graph
    holds two more cutematmul products (dX and dW), with the broadcast batch summed away."""
    from torch._dynamo.backends.common import aot_autograd

    forward, backward = GraphRecorder(boxed=True), GraphRecorder(boxed=True)
    backend = aot_autograd(fw_compiler=forward, bw_compiler=backward)
    torch._dynamo.reset()
    fn = torch.compile(_mlp, fullgraph=True, backend=backend)
    x, w = _meta((4, 5, 7), requires_grad=True), _meta((7, 3), requires_grad=True)
    fn(x, w).sum().backward()
    assert tuple(x.grad.shape) == (4, 5, 7) and tuple(w.grad.shape) == (7, 3)
    assert forward.targets().count(OP) == 1
    assert backward.targets().count(OP) == 2


def test_out_under_compile(warm_registry):
    torch._dynamo.reset()
    recorder = GraphRecorder()
    fn = torch.compile(lambda x, w, o: cutematmul.matmul(x, w, out=o), fullgraph=True,
                       backend=recorder)
    out = _meta((5, 3))
    assert fn(_meta((5, 7)), _meta((7, 3)), out) is out
    assert OP in recorder.targets() and len(recorder.graphs) == 1


def test_out_under_compile_checks_its_shape(warm_registry):
    torch._dynamo.reset()
    fn = torch.compile(lambda x, w, o: cutematmul.matmul(x, w, out=o), fullgraph=True,
                       backend=GraphRecorder())
    with pytest.raises(Exception, match=r"out must have shape \(5, 3\)"):
        fn(_meta((5, 7)), _meta((7, 3)), _meta((5, 4)))


def test_stream_is_refused_under_compile(warm_registry):
    torch._dynamo.reset()
    fn = torch.compile(lambda x, w: cutematmul.matmul(x, w, stream=0), fullgraph=True,
                       backend=GraphRecorder())
    with pytest.raises(Exception, match="stream= cannot be used under torch.compile"):
        fn(_meta((5, 7)), _meta((7, 3)))


class _Linear(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(7, 3, device=device))

    def forward(self, x):
        return _mlp(x, self.weight)


def test_export_non_strict():
    ep = torch.export.export(_Linear("meta"), (_meta((2, 6, 7)),), strict=False)
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert OP in targets


def test_export_strict(warm_registry):
    ep = torch.export.export(_Linear("meta"), (_meta((2, 6, 7)),), strict=True)
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert OP in targets


@pytest.mark.xfail(strict=False, reason=(
    "PyTorch's check: the autograd rule registered on a custom operator is not a torch.func-style "
    "autograd.Function, so torch.func.grad inside torch.compile is refused (documented in "
    "adapters/torch_ops.py; outside torch.compile it works)"))
def test_func_grad_inside_compile(warm_registry):
    from torch.func import grad

    w = _meta((7, 3))
    torch._dynamo.reset()
    fn = torch.compile(lambda x: grad(lambda x: cutematmul.matmul(x, w).sum())(x),
                       fullgraph=True, backend="aot_eager")
    assert tuple(fn(_meta((5, 7))).shape) == (5, 7)


def test_vmap_inside_compile(warm_registry):
    from torch.func import vmap

    torch._dynamo.reset()
    recorder = GraphRecorder()
    fn = torch.compile(lambda x, w: vmap(cutematmul.matmul, in_dims=(0, None))(x, w),
                       fullgraph=True, backend=recorder)
    assert tuple(fn(_meta((6, 5, 7)), _meta((7, 3))).shape) == (6, 5, 3)


def test_compile_with_a_cold_registry(monkeypatch):
    import cutematmul.adapters as registry

    monkeypatch.setattr(registry, "_by_type", {})
    torch._dynamo.reset()
    recorder = GraphRecorder()
    y = torch.compile(_Linear("meta"), fullgraph=True, backend=recorder)(_meta((6, 7)))
    assert tuple(y.shape) == (6, 3) and OP in recorder.targets()


# ------------------------------------------------------------------ autograd (CPU reference)


@pytest.mark.parametrize("needs", ["a", "b", "ab"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_gradients_match_torch(case, needs, cpu_reference):
    gen = torch.Generator().manual_seed(0)
    a0 = torch.randn(case[0], generator=gen)
    b0 = torch.randn(case[1], generator=gen)
    a, b = a0.clone().requires_grad_("a" in needs), b0.clone().requires_grad_("b" in needs)
    ra, rb = a0.clone().requires_grad_("a" in needs), b0.clone().requires_grad_("b" in needs)
    result, expected = cutematmul.matmul(a, b), torch.matmul(ra, rb)
    assert _relative_error(result, expected) <= 1e-6
    cotangent = torch.randn(expected.shape, generator=gen)
    result.backward(cotangent)
    expected.backward(cotangent)
    for name, ours, ref in (("a", a, ra), ("b", b, rb)):
        if name in needs:
            assert _relative_error(ours.grad, ref.grad) <= 1e-5, name
        else:
            assert ours.grad is None
    # One product forward, one per gradient asked for; all of them by cutematmul.
    assert len(cpu_reference) == 1 + len(needs)


def test_weight_gradient_of_a_stack_is_one_product(cpu_reference):
    """dW of x (batch, M, K) @ W (K, N) is one (K, batch*M) @ (batch*M, N) product."""
    x = torch.randn(4, 5, 7)
    w = torch.randn(7, 3, requires_grad=True)
    cutematmul.matmul(x, w).sum().backward()
    assert cpu_reference == [((4, 5, 7), (7, 3)), ((7, 20), (20, 3))]


def test_gradcheck_float64(cpu_reference):
    """The rule in double precision (the CPU reference computes any dtype)."""
    gen = torch.Generator().manual_seed(1)
    for shape_a, shape_b in (((2, 1, 3, 4), (3, 4, 2)), ((4,), (2, 4, 3)), ((3, 4), (4,))):
        a = torch.randn(shape_a, generator=gen, dtype=torch.float64, requires_grad=True)
        b = torch.randn(shape_b, generator=gen, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda x, y: cutematmul.matmul(x, y), (a, b))
        assert torch.autograd.gradgradcheck(lambda x, y: cutematmul.matmul(x, y), (a, b))


def test_forward_mode_ad(cpu_reference):
    import torch.autograd.forward_ad as fwad

    gen = torch.Generator().manual_seed(2)
    a, b = torch.randn(3, 5, 7, generator=gen), torch.randn(7, 4, generator=gen)
    ta, tb = torch.randn_like(a), torch.randn_like(b)
    with fwad.dual_level():
        y = cutematmul.matmul(fwad.make_dual(a, ta), fwad.make_dual(b, tb))
        tangent = fwad.unpack_dual(y).tangent
    assert _relative_error(tangent, ta @ b + a @ tb) <= 1e-5


def test_out_is_refused_when_a_gradient_is_needed(cpu_reference):
    a, b = torch.randn(5, 7, requires_grad=True), torch.randn(7, 3)
    with pytest.raises(TypeError, match="out= cannot be used when a or b requires grad"):
        cutematmul.matmul(a, b, out=torch.empty(5, 3))
    with torch.no_grad():
        out = torch.empty(5, 3)
        assert cutematmul.matmul(a, b, out=out) is out


# ---------------------------------------------------------------- torch.func (CPU reference)


@pytest.mark.parametrize("case", CASES[:10], ids=_ids)
def test_func_transforms_match_torch(case, cpu_reference):
    from torch.func import grad, hessian, jacfwd, jacrev, vjp

    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(case[0], generator=gen), torch.randn(case[1], generator=gen)

    def ours(x, y):
        return cutematmul.matmul(x, y)

    for transform in (jacrev, jacfwd):
        for argnums in (0, 1):
            got = transform(ours, argnums=argnums)(a, b)
            want = transform(torch.matmul, argnums=argnums)(a, b)
            assert _relative_error(got, want) <= 1e-5, (transform.__name__, argnums)
    got = grad(lambda x, y: ours(x, y).pow(2).sum(), argnums=(0, 1))(a, b)
    want = grad(lambda x, y: torch.matmul(x, y).pow(2).sum(), argnums=(0, 1))(a, b)
    assert all(_relative_error(g, w) <= 1e-5 for g, w in zip(got, want))
    out, pullback = vjp(ours, a, b)
    cotangent = torch.randn(out.shape, generator=gen)
    want = vjp(torch.matmul, a, b)[1](cotangent)
    assert all(_relative_error(g, w) <= 1e-5 for g, w in zip(pullback(cotangent), want))
    got = hessian(lambda x: ours(x, b).pow(2).sum())(a)
    want = hessian(lambda x: torch.matmul(x, b).pow(2).sum())(a)
    assert _relative_error(got, want) <= 1e-5


VMAPS = [  # (a shape, b shape, in_dims): mapped dimension anywhere, 1-D examples, broadcasting
    ((6, 5, 7), (7, 3), (0, None)),
    ((5, 6, 7), (7, 3), (1, None)),
    ((5, 7, 6), (7, 3), (2, None)),
    ((6, 7), (7, 3), (0, None)),
    ((5, 7), (6, 7), (None, 0)),
    ((6, 7), (6, 7), (0, 0)),
    ((4, 5, 7), (6, 7, 3), (None, 0)),
    ((6, 4, 5, 7), (7,), (0, None)),
    ((2, 1, 5, 7), (3, 7, 3, 6), (None, 3)),
]


@pytest.mark.parametrize("case", VMAPS, ids=lambda c: f"{c[0]}@{c[1]}-{c[2]}".replace(" ", ""))
def test_vmap_is_one_product(case, cpu_reference):
    from torch.func import vmap

    gen = torch.Generator().manual_seed(4)
    a, b = torch.randn(case[0], generator=gen), torch.randn(case[1], generator=gen)
    got = vmap(cutematmul.matmul, in_dims=case[2])(a, b)
    want = vmap(torch.matmul, in_dims=case[2])(a, b)
    assert _relative_error(got, want) <= 1e-6
    assert len(cpu_reference) == 1  # the mapped dimension became a batch dimension


def test_nested_vmap_and_vmap_of_grad(cpu_reference):
    from torch.func import grad, vmap

    gen = torch.Generator().manual_seed(5)
    a, b = torch.randn(3, 4, 5, 7, generator=gen), torch.randn(7, 2, generator=gen)
    got = vmap(vmap(cutematmul.matmul, in_dims=(0, None)), in_dims=(0, None))(a, b)
    assert _relative_error(got, a @ b) <= 1e-6 and len(cpu_reference) == 1
    per_example = vmap(grad(lambda x: cutematmul.matmul(x, b).sum()))(a[0])
    want = vmap(grad(lambda x: torch.matmul(x, b).sum()))(a[0])
    assert _relative_error(per_example, want) <= 1e-6


# ----------------------------------------------------------------------------- routing


def test_eager_without_autograd_takes_the_plain_route(cpu_reference, monkeypatch):
    def no_operator(*args):
        raise AssertionError("the operator was used on the eager fast path")

    monkeypatch.setattr(torch_ops, "product", no_operator)
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    weight = torch.nn.Parameter(torch.randn(7, 3))
    assert cutematmul.matmul(a, b).grad_fn is None
    with torch.no_grad():
        assert cutematmul.matmul(a, weight).grad_fn is None
    with torch.inference_mode():
        cutematmul.matmul(a, weight)
    assert len(cpu_reference) == 3


def test_autograd_takes_the_operator(cpu_reference):
    a = torch.randn(5, 7, requires_grad=True)
    result = cutematmul.matmul(a, torch.randn(7, 3))
    assert result.grad_fn is not None and "Matmul" in type(result.grad_fn).__name__


def test_cpu_tensors_are_refused_on_every_path():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    message = "must be on a CUDA device; a is on 'cpu'"
    with pytest.raises(TypeError, match=message) as plain:
        cutematmul.matmul(a, b)
    with pytest.raises(TypeError, match=message) as autograd:
        cutematmul.matmul(a.requires_grad_(), b)
    assert plain.value.__context__ is None and autograd.value.__context__ is None


def test_sparse_tensors_are_refused():
    sparse = torch.eye(3).to_sparse()
    with pytest.raises(TypeError, match="dense"):
        torch_adapter.ADAPTER.describe(sparse, "a")


def test_importing_the_operator_module_twice_is_harmless():
    spec = importlib.util.spec_from_file_location("second_copy_of_torch_ops", torch_ops.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.OP is OP


# ----------------------------------------------------------------------------- GPU


def _cuda(shape, dtype, gen, requires_grad=False):
    x = torch.randn(shape, generator=gen, dtype=torch.float32).to("cuda", dtype)
    return x.requires_grad_(requires_grad)


def _gradients(fn, a, b, cotangent):
    a, b = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    result = fn(a, b)
    result.backward(cotangent)
    return result, a.grad, b.grad


@pytest.fixture
def highest_precision():
    """torch.matmul in true fp32 (no TF32), as cutematmul computes."""
    old = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    yield
    torch.backends.cuda.matmul.allow_tf32 = old[0]
    torch.set_float32_matmul_precision(old[1])


GPU_CASES = [c for c in CASES if 0 not in c[0] + c[1]] + [((3, 64, 96), (96, 72)),
                                                           ((64, 96), (3, 96, 72))]


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=_ids)
def test_gpu_gradients_fp32(case, highest_precision):
    gen = torch.Generator().manual_seed(10)
    a, b = _cuda(case[0], torch.float32, gen), _cuda(case[1], torch.float32, gen)
    cotangent = _cuda(_expected_shape(*case), torch.float32, gen)
    ours = _gradients(cutematmul.matmul, a, b, cotangent)
    theirs = _gradients(torch.matmul, a, b, cotangent)
    for name, got, want in zip(("result", "dA", "dB"), ours, theirs):
        assert _relative_error(got, want) <= 1e-4, name


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", GPU_CASES, ids=_ids)
def test_gpu_gradients_16bit(case, dtype, highest_precision):
    """Within twice torch.matmul's own error against a float64 reference (or the dtype's
    rounding tolerance, whichever is larger)."""
    gen = torch.Generator().manual_seed(11)
    a, b = _cuda(case[0], dtype, gen), _cuda(case[1], dtype, gen)
    cotangent = _cuda(_expected_shape(*case), dtype, gen)
    reference = _gradients(torch.matmul, a.double(), b.double(), cotangent.double())
    ours = _gradients(cutematmul.matmul, a, b, cotangent)
    theirs = _gradients(torch.matmul, a, b, cotangent)
    floor = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    for name, got, want, ref in zip(("result", "dA", "dB"), ours, theirs, reference):
        assert got.dtype == dtype, name
        bound = max(2 * _relative_error(want, ref), floor)
        assert _relative_error(got, ref) <= bound, name


@pytest.mark.gpu
def test_gpu_eager_fast_path_unchanged(highest_precision):
    gen = torch.Generator().manual_seed(12)
    a, b = _cuda((3, 33, 17), torch.float32, gen), _cuda((17, 9), torch.float32, gen)
    result = cutematmul.matmul(a, b)
    assert result.grad_fn is None and result.is_contiguous()
    assert _relative_error(result, a @ b) <= 1e-5
    out = torch.full((3, 33, 9), float("nan"), device="cuda")
    assert cutematmul.matmul(a, b, out=out) is out
    assert _relative_error(out, a @ b) <= 1e-5


@pytest.mark.gpu
def test_gpu_compile_fullgraph_matches(highest_precision, warm_registry):
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(13)
    x = _cuda((4, 32, 48), torch.float32, gen, requires_grad=True)
    w = _cuda((48, 24), torch.float32, gen, requires_grad=True)
    compiled = torch.compile(_mlp, fullgraph=True)
    y = compiled(x, w)
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    yr = torch.relu(xr @ wr)
    assert _relative_error(y, yr) <= 1e-4
    cotangent = torch.randn_like(yr)
    y.backward(cotangent)
    yr.backward(cotangent)
    assert _relative_error(x.grad, xr.grad) <= 1e-4
    assert _relative_error(w.grad, wr.grad) <= 1e-4
    with torch.no_grad():
        assert _relative_error(compiled(x, w), yr) <= 1e-4


@pytest.mark.gpu
def test_gpu_out_under_compile(highest_precision, warm_registry):
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(14)
    a, b = _cuda((40, 24), torch.float32, gen), _cuda((24, 16), torch.float32, gen)
    out = torch.full((40, 16), float("nan"), device="cuda")
    fn = torch.compile(lambda x, y, o: cutematmul.matmul(x, y, out=o), fullgraph=True)
    assert fn(a, b, out) is out
    assert _relative_error(out, a @ b) <= 1e-5


@pytest.mark.gpu
def test_gpu_func_transforms(highest_precision):
    from torch.func import grad, jacrev, vmap

    gen = torch.Generator().manual_seed(15)
    a, b = _cuda((6, 5, 7), torch.float32, gen), _cuda((7, 3), torch.float32, gen)
    got = vmap(cutematmul.matmul, in_dims=(0, None))(a, b)
    assert _relative_error(got, a @ b) <= 1e-5
    got = grad(lambda x: cutematmul.matmul(x, b).pow(2).sum())(a[0])
    want = grad(lambda x: torch.matmul(x, b).pow(2).sum())(a[0])
    assert _relative_error(got, want) <= 1e-4
    got = jacrev(lambda y: cutematmul.matmul(a[0], y))(b)
    want = jacrev(lambda y: torch.matmul(a[0], y))(b)
    assert _relative_error(got, want) <= 1e-4


@pytest.mark.gpu
def test_gpu_stream_with_autograd(highest_precision):
    gen = torch.Generator().manual_seed(16)
    a = _cuda((33, 17), torch.float32, gen, requires_grad=True)
    b = _cuda((17, 9), torch.float32, gen)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    result = cutematmul.matmul(a, b, stream=stream)
    torch.cuda.current_stream().wait_stream(stream)
    result.sum().backward()
    assert _relative_error(result, a.detach() @ b) <= 1e-5
    assert _relative_error(a.grad, torch.ones(33, 9, device="cuda") @ b.T) <= 1e-5


def host_overhead_us(size: int = 64, calls: int = 2000, dtype=None) -> dict[str, float]:
    """Host microseconds per ``size``^3 call: cutematmul (eager fast path, fresh output and
    ``out=``) and ``torch.matmul``.  Measured, never asserted; the benchmark may call this."""
    from cutematmul.bench.timing import host_time_per_call

    dtype = dtype or torch.float16
    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    out = torch.empty(size, size, device="cuda", dtype=dtype)
    sync = torch.cuda.synchronize
    runs = {
        "cutematmul": lambda: cutematmul.matmul(a, b),
        "cutematmul out=": lambda: cutematmul.matmul(a, b, out=out),
        "torch.matmul": lambda: torch.matmul(a, b),
        "torch.matmul out=": lambda: torch.matmul(a, b, out=out),
    }
    return {name: host_time_per_call(run, calls, sync, warmup=200) * 1e6
            for name, run in runs.items()}


@pytest.mark.gpu
def test_gpu_host_overhead_is_measured():
    """Prints the host time per 64x64 call (run with -s to see it); speed is not asserted."""
    start = time.perf_counter()
    for dtype in (torch.float16, torch.float32):
        timings = host_overhead_us(dtype=dtype)
        line = ", ".join(f"{name} {us:.1f} us" for name, us in timings.items())
        print(f"\nhost time per 64^3 call ({dtype}): {line}")
        assert all(us > 0 for us in timings.values())
    assert time.perf_counter() - start < 120
