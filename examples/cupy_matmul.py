"""cutematmul.matmul on CuPy arrays: out=, a stream, a transposed view, a batch.

Prints each result's relative error against CuPy's own float32 matmul of the same inputs and
exits non-zero when one is too large.    python examples/cupy_matmul.py
"""

import sys

import cupy as cp

import cutematmul

cp.random.seed(0)
randn = lambda *shape, dtype="float16": cp.random.standard_normal(shape,  # noqa: E731
                                                                  dtype=cp.float32).astype(dtype)

a, b = randn(1000, 700), randn(700, 900)
out = cp.empty((1000, 900), dtype=cp.float16)
stream = cp.cuda.Stream()  # ordered after the default stream, where a and b were made
cutematmul.matmul(a, b, out=out, stream=stream)  # asynchronous on `stream`
stream.synchronize()
x = randn(512, 300, dtype="float32")
a3, b3 = randn(8, 128, 64), randn(8, 64, 96)
cases = {  # name: (result, a, b, tolerance)
    "fp16, out= on a stream": (out, a, b, 1e-3),
    "fp32, transposed view x.T @ x": (cutematmul.matmul(x.T, x), x.T, x, 2e-5),
    "fp16, batch of 8": (cutematmul.matmul(a3, b3), a3, b3, 1e-3),
}
worst = 0.0
for name, (c, p, q, tol) in cases.items():
    ref = cp.matmul(p.astype(cp.float32), q.astype(cp.float32))
    err = float(cp.linalg.norm(c.astype(cp.float32) - ref) / cp.linalg.norm(ref))
    print(f"{name:32} relative error {err:.2e}  (tolerance {tol:.0e})")
    worst = max(worst, err / tol)
print(f"max error / tolerance: {worst:.2f}")
sys.exit(0 if worst <= 1 else 1)
