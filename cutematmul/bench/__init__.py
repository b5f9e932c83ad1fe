"""Benchmark cutematmul beside cuBLAS (through CuPy and PyTorch) and XLA (through JAX).

    python -m cutematmul.bench --help

It is also a library: the backends form a small registry that other suites import,

    from cutematmul.bench import BACKENDS, get_backend
    b = get_backend("cutematmul-cupy")
    a, bm, out = b.make_inputs((m, n, k), "float16", layout="nn", seed=0)
    b.matmul(a, bm, out)
    b.synchronize()

Modules: ``shapes`` (shapes, suites, dtypes, layouts), ``data`` (identical Gaussian inputs, the
float64 reference), ``base`` and ``backends_*`` (the backends), ``backends`` (the registry),
``timing`` (CUDA events, the spin kernel, the host clock), ``stats`` (medians and ratios),
``runner`` (points, rounds), ``results``/``report``/``plot``/``environment`` (output), ``host``
(host overhead per call), ``cli`` (the command line).  Importing this package imports no array
library and needs no GPU.

Imports: ``backends``, ``base``, ``results``, ``runner``, ``shapes`` of this package (the
names it exports); no array library until a backend runs.
"""

from .backends import BACKENDS, get_backend, register
from .base import Backend
from .results import Point, Result
from .runner import Settings, run_point, run_suite
from .shapes import SUITES, Shape, parse_shape, parse_shapes

__all__ = ["BACKENDS", "get_backend", "register", "Backend", "Point", "Result", "Settings",
           "run_point", "run_suite", "SUITES", "Shape", "parse_shape", "parse_shapes"]
