"""cutematmul.matmul on NumPy arrays (staged through the GPU): out=, a stream, a transposed view,
a batch.

Prints each result's relative error against NumPy's float64 matmul of the same inputs and exits
non-zero when one is too large.    python examples/numpy_matmul.py
"""

import sys

import numpy as np
from cuda.bindings import runtime

import cutematmul

rng = np.random.default_rng(0)
randn = lambda *shape, dtype="float16": rng.standard_normal(shape,  # noqa: E731
                                                            dtype=np.float32).astype(dtype)

a, b = randn(1000, 700), randn(700, 900)
out = np.empty((1000, 900), dtype=np.float16)
_, stream = runtime.cudaStreamCreate()  # any CUDA stream handle works; NumPy results are
cutematmul.matmul(a, b, out=out, stream=int(stream))  # copied back before matmul returns
runtime.cudaStreamDestroy(stream)
x = randn(512, 300, dtype="float32")
a3, b3 = randn(8, 128, 64), randn(8, 64, 96)
cases = {  # name: (result, a, b, tolerance)
    "fp16, out= on a stream": (out, a, b, 1e-3),
    "fp32, transposed view x.T @ x": (cutematmul.matmul(x.T, x), x.T, x, 2e-5),
    "fp16, batch of 8": (cutematmul.matmul(a3, b3), a3, b3, 1e-3),
}
worst = 0.0
for name, (c, p, q, tol) in cases.items():
    ref = np.matmul(p.astype(np.float64), q.astype(np.float64))
    err = float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))
    print(f"{name:32} relative error {err:.2e}  (tolerance {tol:.0e})")
    worst = max(worst, err / tol)
print(f"max error / tolerance: {worst:.2f}")
sys.exit(0 if worst <= 1 else 1)
