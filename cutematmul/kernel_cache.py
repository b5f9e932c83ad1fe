"""The compiled-kernel cache.

One tier: an in-process dictionary from ``KernelKey`` (family, DSL target arch, dtype, operand majors,
alignments, tile configuration, SM count) to the compiled TVM-FFI function.  Sizes, strides, pointers
and streams are runtime arguments, so they never cause a compile.  A compile takes about 1-2 s the
first time a key is seen in a process (plus ~3 s to import the DSL once).  ``cache_info()`` reports
hits, misses and compile time; ``cache_clear()`` drops every entry.
"""

from __future__ import annotations

import threading
import time

from .dispatch import KernelKey, build_kernel

_compiled: dict[KernelKey, object] = {}  # key -> raw TVM-FFI function (what calls use)
_modules: dict[KernelKey, object] = {}  # key -> the DSL's compiled object (keeps the module alive)
_stats = {"hits": 0, "misses": 0, "compile_seconds": 0.0}
_lock = threading.Lock()


def dsl_arch() -> str:
    """The target the CuTe DSL compiles for in this process (``CUTE_DSL_ARCH`` or the GPU's)."""
    from cutlass.cutlass_dsl import CuTeDSL

    return str(CuTeDSL._get_dsl().envar.arch)


def get_compiled(key: KernelKey):
    """The compiled kernel for ``key``, compiling it on first use."""
    fn = _compiled.get(key)
    if fn is not None:
        _stats["hits"] += 1
        return fn
    with _lock:
        fn = _compiled.get(key)
        if fn is None:
            from .kernels.compile import compile_gemm

            start = time.perf_counter()
            compiled = compile_gemm(build_kernel(key))
            _stats["compile_seconds"] += time.perf_counter() - start
            _stats["misses"] += 1
            # Call the TVM-FFI function directly: the DSL's Python kwargs wrapper costs ~5 us.
            fn = getattr(compiled, "_tvm_ffi_function", None) or compiled
            _modules[key] = compiled
            _compiled[key] = fn
        return fn


def cache_info() -> dict:
    """Entries, hits, misses and total compile seconds of the compiled-kernel cache."""
    return {"entries": len(_compiled), **_stats, "keys": list(_compiled)}


def cache_clear() -> None:
    """Forget every compiled kernel (the next call of each configuration recompiles)."""
    with _lock:
        _compiled.clear()
        _modules.clear()
        _stats.update(hits=0, misses=0, compile_seconds=0.0)
