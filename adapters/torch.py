"""PyTorch tensors: ``data_ptr()``, PyTorch's current stream, its caching allocator, and the way
into autograd, ``torch.compile``, ``torch.export`` and ``torch.func``.

``TorchAdapter.matmul`` sends each call one of two ways:

* the plain route (``plain_matmul`` = ``ArrayAdapter.matmul``, straight to the core's device
  route): eager calls whose result needs no derivative.  No dispatcher, no autograd node: the
  host cost of the core plus the test that picks the way (``is_compiling()``, two
  ``requires_grad`` reads, the forward-AD level);
* the operator ``torch.ops.cutematmul.matmul`` (``torch_ops.product``):
  - under ``torch.compile`` and ``torch.export`` (the fake implementation traces it; Dynamo
    reaches this test before anything it cannot trace);
  - when a derivative may be asked: grad mode on and ``a`` or ``b`` requiring grad (which
    includes ``torch.func.grad``/``vjp``/``jacrev``), or forward-mode AD (``jvp``, ``jacfwd``);
  - for tensors with no memory of their own: ``torch.func.vmap`` wrappers, fake, functional and
    meta tensors.  ``describe`` finds them at no cost to the plain route: ``data_pointer`` raises
    ``Reroute`` before any GPU work and ``matmul`` retries through the operator.

With the operator, ``out=`` is written by copying the result into it (refused when the result
needs a gradient, as ``torch.matmul`` refuses it), and ``stream=`` is made the current stream
around the call (refused under ``torch.compile``/``torch.export``: a compiled graph runs on the
current stream).  Mixed dtypes are promoted on both ways (``operand.result_dtype``): the plain
route casts through ``astype``, the operator's caller with ``Tensor.to`` (so autograd and
compiled graphs see the cast).  CPU tensors are refused with the same TypeError on every path:
cutematmul stages NumPy arrays, not CPU tensors.

Imports: ``torch``, ``cutematmul.operand``, ``cutematmul.streams``, ``torch_ops``.
"""

from __future__ import annotations

import contextlib

import torch
import torch.autograd.forward_ad as _fwad
from torch.compiler import is_compiling, is_dynamo_compiling

from cutematmul.operand import ArrayAdapter, Operand, result_dtype
from cutematmul.streams import explicit_handle

from . import torch_ops
from .torch_ops import dtype_name, not_on_cuda, torch_dtype

# The raw handle of the current stream without building a torch.cuda.Stream (CUDA builds only).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
# The current device's ordinal without torch.cuda's Python wrapper (CUDA builds only).
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_NO_SCOPE = contextlib.nullcontext()
# How many TorchDispatchModes are active (FakeTensorMode, non-strict export, FlopCounterMode...).
_dispatch_modes = torch._C._len_torch_dispatch_stack


class Reroute(Exception):
    """Raised by ``describe`` for a tensor that has no memory of its own (internal)."""


class TorchAdapter(ArrayAdapter):
    name = "torch"
    route = "device"

    plain_matmul = ArrayAdapter.matmul  # the core's route, called by the operator too

    def matmul(self, a, b, *, out, stream, precision, kernel):
        # The hot path: Dynamo, a dispatch mode (export, fake tensors), torch_ops.differentiable.
        if (is_dynamo_compiling() or _dispatch_modes() or (a.requires_grad or b.requires_grad)
                and torch.is_grad_enabled() or _fwad._current_level >= 0):
            return self.operator_matmul(a, b, out=out, stream=stream, precision=precision,
                                        kernel=kernel)
        try:
            return self.plain_matmul(a, b, out=out, stream=stream, precision=precision,
                                     kernel=kernel)
        except Reroute:
            pass  # outside the handler: errors of the operator are not chained to Reroute
        return self.operator_matmul(a, b, out=out, stream=stream, precision=precision,
                                    kernel=kernel)

    def operator_matmul(self, a, b, *, out, stream, precision, kernel):
        """The product through ``torch.ops.cutematmul.matmul`` (autograd, compile, func)."""
        grad = torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)
        if out is not None and grad:
            raise TypeError(
                "matmul: out= cannot be used when a or b requires grad (functions with out= "
                "do not support automatic differentiation); use the returned tensor, or call "
                "under torch.no_grad()."
            )
        with self._stream_scope(stream, a):
            if a.dtype != b.dtype:  # promoted as the plain route does, the casts in the graph
                dtype = torch_dtype(result_dtype(dtype_name(a.dtype), dtype_name(b.dtype)))
                a, b = a.to(dtype), b.to(dtype)
            result = torch_ops.product(a, b, precision, kernel)
            if out is None:
                return result
            _check_out(out, result)
            out.copy_(result)
        return out

    def _stream_scope(self, stream, a):
        """``stream`` made current for the operator (it runs on the current stream)."""
        if stream is None:
            return contextlib.nullcontext()
        if is_compiling():
            raise TypeError(
                "matmul: stream= cannot be used under torch.compile or torch.export: the "
                "compiled graph runs on the current stream; call it inside "
                "`with torch.cuda.stream(s):` instead."
            )
        handle = explicit_handle(stream, self)
        if not a.is_cuda:  # refused by the operator with the CPU sentence
            return contextlib.nullcontext()
        return self.on_stream(handle, a.get_device())

    def describe(self, x, argument: str = "a", stream: int | None = None) -> Operand:
        try:
            ptr = x.data_ptr()
        except RuntimeError:
            ptr = 0
        if not ptr:  # no memory behind it, or an empty tensor: data_pointer decides which
            ptr = data_pointer(x, argument)
        device = x.get_device()  # -1 for CPU tensors: one call instead of is_cuda and get_device
        if device < 0:
            raise not_on_cuda(argument, x.device.type)
        dtype = x.dtype
        return Operand(x, ptr, tuple(x.shape), x.stride(), dtype_name(dtype), dtype.itemsize,
                       device)

    def signature(self, a, b, out):
        try:
            key = (a.shape, a.stride(), a.dtype, a.get_device(),
                   b.shape, b.stride(), b.dtype, b.get_device())
            if out is None:
                return key
            return key + (out.shape, out.stride(), out.dtype, out.get_device())
        except RuntimeError:  # no strides (sparse, nested): describe says why
            return None

    def pointer(self, x) -> int:
        try:
            return x.data_ptr()
        except RuntimeError:  # no storage (torch.func wrappers, fakes): describe reroutes
            return 0

    def current_device(self) -> int:
        return _current_device()

    def current_stream(self, device: int) -> int:
        if _raw_stream is not None:
            return _raw_stream(device)
        return torch.cuda.current_stream(device).cuda_stream

    def stream_handle(self, stream):
        if isinstance(stream, torch.cuda.Stream):
            return stream.cuda_stream
        return None

    def empty(self, shape, like):
        return like.new_empty(shape)

    def empty_operand(self, shape, strides, like, template):
        out = like.new_empty(shape)  # contiguous, of like's dtype and device
        return out, Operand(out, out.data_ptr(), shape, strides, template.dtype, template.itemsize,
                            template.device)

    def workspace(self, count: int, like, stream: int):
        buf = torch.empty(count, dtype=torch.float32, device=like.device)
        return buf, buf.data_ptr()

    def copy(self, dst, src) -> None:
        dst.copy_(src)

    def astype(self, x, dtype: str):
        return x.to(torch_dtype(dtype))

    def fill_zero(self, x) -> None:
        x.zero_()

    def on_device(self, device: int):
        if _current_device() == device:
            return _NO_SCOPE
        return torch.cuda.device(device)

    def on_stream(self, handle: int, device: int):
        if self.current_stream(device) == handle:
            return contextlib.nullcontext()
        return torch.cuda.stream(torch.cuda.ExternalStream(handle, device=device))


def data_pointer(x, argument: str) -> int:
    """``x.data_ptr()``; ``Reroute`` for a tensor without memory of its own (a ``torch.func``
    wrapper, a fake, functional or meta tensor), TypeError for a sparse one."""
    try:
        ptr = x.data_ptr()
    except RuntimeError:
        if x.layout != torch.strided:
            raise TypeError(
                f"matmul: {argument} must be a dense (strided) tensor; got layout {x.layout} "
                "(convert it with .to_dense())."
            ) from None
        raise Reroute(argument) from None
    if ptr == 0 and (x.is_meta or x.numel()):  # no memory behind a non-empty tensor
        raise Reroute(argument)
    return ptr


def _check_out(out, result) -> None:
    """``out`` must take ``result`` as it is: a copy would broadcast or cast silently."""
    if out.shape != result.shape:
        raise ValueError(
            f"matmul: out must have shape {tuple(result.shape)}; got {tuple(out.shape)}."
        )
    if out.dtype != result.dtype:
        raise TypeError(
            f"matmul: out must have dtype {dtype_name(result.dtype)}; got {dtype_name(out.dtype)}."
        )
    if out.device != result.device:
        raise ValueError(
            f"matmul: out must be on the operands' device {result.device}; it is on {out.device}."
        )


ADAPTER = TorchAdapter()
