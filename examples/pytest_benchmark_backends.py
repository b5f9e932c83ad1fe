"""cutematmul as one more backend beside CuPy, PyTorch and JAX, in a pytest-benchmark suite.

    pytest examples/pytest_benchmark_backends.py --benchmark-only
    pytest examples/pytest_benchmark_backends.py --benchmark-only --benchmark-group-by=param:shape

Every backend of ``cutematmul.bench.BACKENDS`` is a parameter; one that cannot run here (library
missing, no GPU, dtype not supported) is skipped with the reason.  pytest-benchmark times one
product plus a synchronize on the host clock, so small products include the host overhead;
``python -m cutematmul.bench`` times with CUDA events, in alternating rounds, for the real numbers.
"""

import pytest

from cutematmul.bench import BACKENDS, get_backend

SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096)]
DTYPES = ["float16", "float32"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_matmul(benchmark, backend, shape, dtype):
    b = get_backend(backend)
    ok, why = b.available()
    if not ok:
        pytest.skip(why)
    ok, why = b.supports(dtype)
    if not ok:
        pytest.skip(why)
    a, bm, out = b.make_inputs(shape, dtype, seed=0)

    def product():
        b.matmul(a, bm, out)
        b.synchronize()

    product()  # the first call compiles (cutematmul, XLA) or loads cuBLAS: not timed
    benchmark.pedantic(product, rounds=20, warmup_rounds=3, iterations=1)
    m, n, k = shape
    benchmark.extra_info["TFLOP/s (host clock, median)"] = round(
        2 * m * n * k / benchmark.stats.stats.median / 1e12, 1)
