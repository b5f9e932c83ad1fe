"""cutematmul as a PyTorch operator: ``torch.ops.cutematmul.matmul`` and its autograd rule.

The operator ``cutematmul::matmul(Tensor a, Tensor b, str precision, str kernel) -> Tensor`` has
NumPy ``matmul`` semantics (1-D promotion, broadcast batch dimensions) and

* one implementation for every device: the Torch adapter's plain route (``plain_matmul``), which
  launches on CUDA tensors and refuses others with cutematmul's sentence;
* a fake implementation (``register_fake``, also the Meta kernel): shape, dtype, device and
  row-major strides of the result, raising cutematmul's errors at trace time, so
  ``torch.compile``, ``torch.export`` and meta tensors see the product without running it;
* a vmap rule (``register_vmap``): the mapped dimension goes in front as one more batch
  dimension, so ``torch.func.vmap`` becomes one batched product;
* an autograd rule, given twice from the same functions: on the operator (``register_autograd``:
  eager, ``torch.compile`` and ``torch.export`` training graphs) and as ``Matmul``, an
  ``autograd.Function`` with ``setup_context``, ``jvp`` and the generated vmap rule, which is the
  form the ``torch.func`` transforms (``grad``, ``vjp``, ``jacrev``, ``jacfwd``, ``hessian``)
  accept.  Both gradients are products computed by cutematmul again:
  dA = dC @ B^T, dB = A^T @ dC, summed over the batch dimensions the input broadcast.

``product`` picks between them: ``Matmul`` for eager calls that may be differentiated, the
bare operator otherwise and under ``torch.compile``/``torch.export`` (Dynamo cannot trace an
``autograd.Function`` that has a ``jvp``; AOTAutograd uses the registered rule instead).

Known limit: ``torch.func.grad``/``vjp``/``jacrev``/``jvp``/``jacfwd`` *inside* a
``torch.compile``d function fail in PyTorch's own check (the rule registered on a custom
operator is not a ``torch.func``-style ``autograd.Function``, and Dynamo cannot tell those
transforms apart from ``vmap``, which works).  Applied outside ``torch.compile`` they work.

Importing this module twice (two module objects) defines the operator once.

Imports: ``torch``, ``cutematmul.operand``, ``cutematmul.plan``; the adapter
(``cutematmul.adapters.torch``) only when the operator runs.
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as _fwad
from torch.compiler import is_compiling

from cutematmul.operand import check_dtypes
from cutematmul.plan import result_shape

NAME = "cutematmul::matmul"
SCHEMA = "(Tensor a, Tensor b, str precision, str kernel) -> Tensor"
DEVICES = ("cuda", "meta")  # where the fake implementation lets a product be traced
_DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_HALF = (torch.float16, torch.bfloat16)


def dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype) or str(dtype).removeprefix("torch.")


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a supported dtype name (``cutematmul.operand.DTYPES``)."""
    return next(dtype for dtype, n in _DTYPE_NAMES.items() if n == name)


# ----------------------------------------------------------------------------- implementations


def _impl(a, b, precision, kernel):
    """The product of real tensors: the Torch adapter's plain route, on the current stream."""
    from cutematmul.adapters.torch import ADAPTER  # imports this module first: no cycle

    return ADAPTER.plain_matmul(a.detach(), b.detach(), out=None, stream=None,
                                precision=precision, kernel=kernel)


def _fake(a, b, precision, kernel):
    """The result's metadata, with cutematmul's checks (run by fake tensors and meta tensors)."""
    for argument, x in (("a", a), ("b", b)):
        if x.device.type not in DEVICES:
            raise not_on_cuda(argument, x.device.type)
    check_dtypes(dtype_name(a.dtype), dtype_name(b.dtype))
    if a.device != b.device:
        raise ValueError(
            f"matmul: a and b must be on the same GPU; a is on {a.device} and b on {b.device}."
        )
    return a.new_empty(result_shape(tuple(a.shape), tuple(b.shape)))


def not_on_cuda(argument: str, device_type: str) -> TypeError:
    """The error for a tensor that is not on a CUDA device (the same on every path)."""
    return TypeError(
        f"matmul: PyTorch tensors must be on a CUDA device; {argument} is on {device_type!r} "
        "(move it with .cuda(), or pass a NumPy array to have cutematmul stage it)."
    )


# ----------------------------------------------------------------------------- autodiff


def _setup_context(ctx, inputs, output) -> None:
    """Save what the backward needs: B for dA, A for dB, both shapes, the options."""
    a, b, precision, kernel = inputs
    need_a, need_b = ctx.needs_input_grad[:2]
    ctx.save_for_backward(b if need_a else None, a if need_b else None)
    ctx.shapes = (tuple(a.shape), tuple(b.shape))
    ctx.options = (precision, kernel)


def _backward(ctx, grad):
    """(dA, dB, None, None): both products through cutematmul, only those that are needed."""
    b, a = ctx.saved_tensors
    a_shape, b_shape = ctx.shapes
    precision, kernel = ctx.options
    need_a, need_b = ctx.needs_input_grad[:2]
    g = _as_matrices(grad, len(a_shape) == 1, len(b_shape) == 1)
    grad_a = grad_b = None
    if need_a:
        b2 = b.unsqueeze(-1) if b.dim() == 1 else b
        grad_a = _reduce_to(product(g, b2.mT, precision, kernel), a_shape)
    if need_b:
        a2 = a.unsqueeze(0) if a.dim() == 1 else a
        if len(b_shape) <= 2 and a2.dim() > 2:
            # B was shared by every matrix of the stack: one product over the stacked rows.
            stacked = product(a2.flatten(0, -2).mT, g.flatten(0, -2), precision, kernel)
            grad_b = stacked.reshape(b_shape)
        else:
            grad_b = _reduce_to(product(a2.mT, g, precision, kernel), b_shape)
    return grad_a, grad_b, None, None


def _as_matrices(grad, a_vec: bool, b_vec: bool):
    """The result's cotangent with the dimensions that 1-D promotion removed put back."""
    if b_vec:
        grad = grad.unsqueeze(-1)
    if a_vec:
        grad = grad.unsqueeze(-2)
    return grad


def _reduce_to(x, shape: tuple):
    """Sum ``x`` (a promoted operand's gradient) over the dimensions ``shape`` broadcast."""
    matrix = shape if len(shape) >= 2 else (1,) * (2 - len(shape)) + shape
    lead = x.dim() - len(matrix)
    dims = list(range(lead))
    dims += [lead + i for i, d in enumerate(matrix[:-2]) if d == 1 and x.shape[lead + i] != 1]
    if dims:
        # 16-bit gradients are summed in fp32, as one product over the whole stack would.
        wide = torch.float32 if x.dtype in _HALF else x.dtype
        x = x.sum(dim=dims, keepdim=True, dtype=wide).to(x.dtype)
    return x.reshape(shape)


def _jvp(ctx, a_dot, b_dot, precision_dot, kernel_dot):
    """Forward mode: d(A @ B) = dA @ B + A @ dB."""
    a, b = ctx.saved_tensors
    precision, kernel = ctx.options
    terms = []
    if a_dot is not None:
        terms.append(product(a_dot, b, precision, kernel))
    if b_dot is not None:
        terms.append(product(a, b_dot, precision, kernel))
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


class Matmul(torch.autograd.Function):
    """The operator with its autograd rule in the form ``torch.func`` transforms accept."""

    generate_vmap_rule = True  # vmap of forward runs the operator's own vmap rule

    @staticmethod
    def forward(a, b, precision, kernel):
        return OP(a, b, precision, kernel)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _setup_context(ctx, inputs, output)
        ctx.save_for_forward(*inputs[:2])

    backward = staticmethod(_backward)
    jvp = staticmethod(_jvp)


def differentiable(a, b) -> bool:
    """Whether a derivative may be asked of ``a @ b``: a gradient (grad mode on and an operand
    that requires grad) or a tangent (forward-mode AD, ``torch.func.jvp``/``jacfwd``)."""
    grad = (a.requires_grad or b.requires_grad) and torch.is_grad_enabled()
    return grad or _fwad._current_level >= 0


def product(a, b, precision: str, kernel: str):
    """``a @ b`` by cutematmul, differentiable when a derivative may be asked of it."""
    if is_compiling() or not differentiable(a, b):
        return OP(a, b, precision, kernel)
    return Matmul.apply(a, b, precision, kernel)


# ----------------------------------------------------------------------------- vmap


def _vmap(info, in_dims, a, b, precision, kernel):
    """Batch rule: move each mapped dimension in front, pad batch ranks, one product."""
    dim_a, dim_b = in_dims[:2]
    a_vec = a.dim() - (dim_a is not None) == 1
    b_vec = b.dim() - (dim_b is not None) == 1
    if dim_a is None and dim_b is None:
        return OP(a, b, precision, kernel), None
    a = _front(a, dim_a, -2 if a_vec else None)
    b = _front(b, dim_b, -1 if b_vec else None)
    rank_a, rank_b = a.dim() - 2 - (dim_a is not None), b.dim() - 2 - (dim_b is not None)
    rank = max(rank_a, rank_b)  # batch dimensions of one example, after broadcasting
    out = OP(_pad_batch(a, dim_a, rank - rank_a), _pad_batch(b, dim_b, rank - rank_b),
             precision, kernel)
    if b_vec:
        out = out.squeeze(-1)
    if a_vec:
        out = out.squeeze(-1 if b_vec else -2)
    return out, 0


def _front(x, dim, promote):
    """``x`` with its mapped dimension first and a 1-D example promoted to a matrix."""
    if dim is not None and dim != 0:
        x = x.movedim(dim, 0)
    return x if promote is None else x.unsqueeze(promote)


def _pad_batch(x, dim, missing: int):
    """Insert ``missing`` size-1 batch dimensions after the mapped one (none if unmapped)."""
    if dim is None or missing <= 0:
        return x
    return x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:])


# ----------------------------------------------------------------------------- registration


def _define() -> None:
    """Define the operator and its rules, once per process."""
    if hasattr(torch.ops.cutematmul, "matmul"):  # defined by another copy of this module
        return
    torch.library.custom_op(NAME, _impl, mutates_args=(), schema=SCHEMA)
    torch.library.register_fake(NAME, _fake)
    torch.library.register_vmap(NAME, _vmap)
    torch.library.register_autograd(NAME, _backward, setup_context=_setup_context)


_define()
OP = torch.ops.cutematmul.matmul.default
