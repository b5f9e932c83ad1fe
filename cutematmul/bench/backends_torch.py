"""PyTorch backends: ``torch`` (``torch.matmul``, i.e. cuBLAS), ``torch-tf32`` (the same with TF32,
float32 only) and ``cutematmul-torch``.

PyTorch would run float32 products in TF32 when ``torch.backends.cuda.matmul.allow_tf32`` is on;
the benchmark turns it off (and sets float32 matmul precision to "highest") the first time it
finds PyTorch usable, so float32 means IEEE fp32 for every backend but ``torch-tf32``, which
turns it on around each of its own calls only (cuBLAS TF32: the baseline of ``--precision tf32``).

Imports: ``base``, ``data`` of this package, ``cutematmul.api``; ``numpy``; lazily ``torch``.
"""

from __future__ import annotations

import functools

import numpy as np

from ..api import matmul as cutematmul_matmul
from .base import Backend, CutematmulBackend, unavailable_import
from .data import HostOperands, Sample


@functools.cache
def _torch():
    import torch

    return torch


def true_fp32() -> None:
    """No TF32 in PyTorch's float32 matmul (a process-wide PyTorch setting)."""
    torch = _torch()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


class TorchArrays(Backend):
    """PyTorch CUDA tensors on PyTorch's current stream (and caching allocator)."""

    library = "torch"

    def _probe(self):
        try:
            import torch
        except Exception as exc:
            return unavailable_import("torch", exc)
        if not torch.cuda.is_available():
            build = (f"built for CUDA {torch.version.cuda}" if torch.version.cuda
                     else "a CPU-only build")
            return False, f"PyTorch {torch.__version__} ({build}) sees no CUDA GPU"
        true_fp32()
        return True, ""

    def device(self):
        torch = _torch()
        return torch.device("cuda", torch.cuda.current_device())

    def upload(self, host: HostOperands):
        torch = _torch()
        true_fp32()
        device = self.device()
        dtype = getattr(torch, host.a.dtype)

        def put(op):
            storage = op.storage
            if op.dtype == "bfloat16":  # bit patterns: move as int16, then reinterpret
                x = torch.from_numpy(storage.view(np.int16)).to(device).view(torch.bfloat16)
            else:
                x = torch.from_numpy(storage).to(device)
            return x.transpose(-1, -2) if op.transposed else x

        out = torch.empty(host.out_shape, dtype=dtype, device=device)
        self.poison(out)
        return put(host.a), put(host.b), out

    def poison(self, out):
        if out is not None:
            out.fill_(float("nan"))

    def release(self):
        _torch().cuda.empty_cache()

    def synchronize(self):
        _torch().cuda.current_stream().synchronize()

    def stream_handle(self):
        return _torch().cuda.current_stream().cuda_stream

    def sample(self, result, sample: Sample):
        torch = _torch()
        r = result
        index = functools.partial(torch.as_tensor, device=r.device, dtype=torch.long)
        if sample.batches is not None:
            r = r[index(sample.batches)]
        r = r[..., index(sample.rows), :][..., index(sample.cols)]
        return r.float().cpu().numpy().astype(np.float64)

    def count_nonfinite(self, result):
        return int((~_torch().isfinite(result)).sum().item())


class TorchMatmul(TorchArrays):
    name = "torch"
    description = "cuBLAS through torch.matmul (TF32 off)"
    cublas = True

    def matmul(self, a, b, out):
        return _torch().matmul(a, b, out=out)


class TorchTF32Matmul(TorchArrays):
    """cuBLAS TF32: ``torch.matmul`` with ``allow_tf32`` on for its own calls (float32 only)."""

    name = "torch-tf32"
    description = "cuBLAS TF32 through torch.matmul (allow_tf32 on around each call; float32 only)"
    cublas = True
    precision = "tf32"

    def supports(self, dtype, batched=False):
        if dtype != "float32":
            return False, f"TF32 applies to float32 products only, not {dtype} (see the torch rows)"
        return True, ""

    def matmul(self, a, b, out):
        torch = _torch()
        flags = torch.backends.cuda.matmul
        flags.allow_tf32 = True
        try:
            return torch.matmul(a, b, out=out)
        finally:
            flags.allow_tf32 = False  # the benchmark's setting (true_fp32) for every other call


class CutematmulTorch(CutematmulBackend, TorchArrays):
    name = "cutematmul-torch"
    description = "cutematmul.matmul on PyTorch tensors"

    def matmul(self, a, b, out):
        return cutematmul_matmul(a, b, out=out, precision=self.precision, kernel=self.kernel)
