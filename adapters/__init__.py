"""One small adapter per array library, loaded when an array of that library first arrives.

``adapter_for(x)`` returns the adapter of ``x``'s library, or raises ``TypeError``.  The adapters
only translate (pointers, shapes, strides, streams, allocation); all logic lives in the core.
"""

from __future__ import annotations

import importlib

# Top-level module of an array type -> adapter module.
_MODULES = {
    "cupy": "cutematmul.adapters.cupy",
    "cupy_backends": "cutematmul.adapters.cupy",
    "torch": "cutematmul.adapters.torch",
    "numpy": "cutematmul.adapters.numpy",
    "jax": "cutematmul.adapters.jax",
    "jaxlib": "cutematmul.adapters.jax",
}

# Explicit cache: array type -> adapter instance.
_by_type: dict[type, object] = {}


def adapter_for(x, argument: str = "a"):
    """The adapter for ``x``'s array library; TypeError naming ``argument`` if there is none."""
    kind = type(x)
    adapter = _by_type.get(kind)
    if adapter is not None:
        return adapter
    root = kind.__module__.split(".", 1)[0]
    module = _MODULES.get(root)
    if module is None or not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(
            f"matmul: {argument} must be a CuPy, PyTorch, NumPy or JAX array; "
            f"got {kind.__module__}.{kind.__qualname__}."
        )
    adapter = importlib.import_module(module).ADAPTER
    _by_type[kind] = adapter
    return adapter
