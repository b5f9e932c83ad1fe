"""cutematmul.matmul on PyTorch CUDA tensors: out=, a stream, a transposed view, a batch.

Prints each result's relative error against torch.matmul in float32 (TF32 off) on the same inputs
and exits non-zero when one is too large.    python examples/torch_matmul.py
"""

import sys

import torch

import cutematmul

torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
randn = lambda *shape, dtype=torch.float16: torch.randn(*shape,  # noqa: E731
                                                        device="cuda").to(dtype)

a, b = randn(1000, 700), randn(700, 900)
out = torch.empty(1000, 900, device="cuda", dtype=torch.float16)
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())  # a and b were made on the current stream
cutematmul.matmul(a, b, out=out, stream=stream)  # asynchronous on `stream`
torch.cuda.current_stream().wait_stream(stream)
x = randn(512, 300, dtype=torch.float32)
a3, b3 = randn(8, 128, 64, dtype=torch.bfloat16), randn(8, 64, 96, dtype=torch.bfloat16)
cases = {  # name: (result, a, b, tolerance)
    "fp16, out= on a stream": (out, a, b, 1e-3),
    "fp32, transposed view x.T @ x": (cutematmul.matmul(x.T, x), x.T, x, 2e-5),
    "bf16, batch of 8": (cutematmul.matmul(a3, b3), a3, b3, 8e-3),
}
worst = 0.0
for name, (c, p, q, tol) in cases.items():
    ref = torch.matmul(p.float(), q.float())
    err = ((c.float() - ref).norm() / ref.norm()).item()
    print(f"{name:32} relative error {err:.2e}  (tolerance {tol:.0e})")
    worst = max(worst, err / tol)
print(f"max error / tolerance: {worst:.2f}")
sys.exit(0 if worst <= 1 else 1)
