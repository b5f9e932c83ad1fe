"""cutematmul: GEMM kernels written in the CuTe Python DSL, callable from CuPy, PyTorch, NumPy and
JAX.

    import cutematmul
    c = cutematmul.matmul(a, b)          # NumPy matmul semantics, on the caller's stream

Importing this package needs no GPU and does not import the CuTe DSL.  Kernels are compiled on
first use per configuration and cached in memory and on disk, so a later process loads them in
about a millisecond each (``cache_info``, ``precompile``, docs/cache.md).

Imports: ``api``, ``cache`` (the public names); ``adapters`` (registered as
``cutematmul.adapters``); lazily ``aot`` (``precompile``) and ``tuning`` (``tune``).
"""

import os as _os

# cutematmul.adapters is the checkout's top-level adapters/ folder, which pyproject's package-dir
# puts inside the package on install.  Run from a checkout's root (python -m pytest tests,
# python -m cutematmul.bench), Python imports this source folder even where a copy is installed:
# then import adapters/ from the checkout, once (its own __path__ serves its submodules).
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "adapters")) and _os.path.isfile(
        _os.path.join(_checkout, "adapters", "__init__.py")):
    __path__.append(_checkout)
    try:
        from . import adapters  # noqa: F401
    finally:
        __path__.remove(_checkout)
del _checkout

from .api import matmul  # noqa: E402
from .cache import cache_clear, cache_info  # noqa: E402


def __getattr__(name: str):
    # ``precompile`` loads ``aot`` (worker pools, multiprocessing) and ``tune`` its module only
    # when asked for: a warm start never needs them (docs/performance.md, start-up).
    if name == "precompile":
        from .aot import precompile

        return precompile
    if name == "tune":
        from .tuning import tune

        return tune
    raise AttributeError(f"module 'cutematmul' has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = ["matmul", "cache_info", "cache_clear", "precompile", "tune", "__version__"]
