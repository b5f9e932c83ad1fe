"""cutematmul: GEMM kernels written in the CuTe Python DSL, callable from CuPy, PyTorch, NumPy and JAX.

    import cutematmul
    c = cutematmul.matmul(a, b)          # NumPy matmul semantics, on the caller's stream

Importing this package needs no GPU and does not import the CuTe DSL; kernels are compiled on
first use per configuration and cached in memory (see ``cache_info``).
"""

from .api import matmul
from .kernel_cache import cache_clear, cache_info

__version__ = "0.1.0"
__all__ = ["matmul", "cache_info", "cache_clear", "__version__"]
