"""PyTorch tensors: ``data_ptr()``, PyTorch's current stream, its caching allocator."""

from __future__ import annotations

import contextlib

import torch

from cutematmul.operand import ArrayAdapter, Operand


class TorchAdapter(ArrayAdapter):
    name = "torch"

    def describe(self, x) -> Operand:
        if x.requires_grad and torch.is_grad_enabled():
            raise TypeError(
                "matmul: PyTorch tensors that require grad are not supported (cutematmul has no "
                "autograd rule); pass tensor.detach() or call under torch.no_grad()."
            )
        device = x.device
        if device.type != "cuda":
            raise TypeError(
                f"matmul: PyTorch tensors must be on a CUDA device, got one on {device.type!r} "
                "(move it with .cuda(), or pass a NumPy array to have cutematmul stage it)."
            )
        return Operand(
            x, x.data_ptr(), tuple(x.shape), tuple(x.stride()),
            str(x.dtype).removeprefix("torch."), x.element_size(), device.index,
        )

    def current_stream(self, device: int) -> int:
        return torch.cuda.current_stream(device).cuda_stream

    def stream_handle(self, stream):
        if isinstance(stream, torch.cuda.Stream):
            return stream.cuda_stream
        return None

    def empty(self, shape, like):
        return torch.empty(shape, dtype=like.dtype, device=like.device)

    def copy(self, dst, src) -> None:
        dst.copy_(src)

    def fill_zero(self, x) -> None:
        x.zero_()

    def on_device(self, device: int):
        if torch.cuda.current_device() == device:
            return contextlib.nullcontext()
        return torch.cuda.device(device)

    def on_stream(self, handle: int, device: int):
        if torch.cuda.current_stream(device).cuda_stream == handle:
            return contextlib.nullcontext()
        return torch.cuda.stream(torch.cuda.ExternalStream(handle, device=device))


ADAPTER = TorchAdapter()
