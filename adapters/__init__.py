"""One small adapter per array library, loaded when an array of that library first arrives.

``adapter_for(x)`` returns the adapter of ``x``'s library, or raises ``TypeError``.  The named
adapters (CuPy, PyTorch, NumPy, JAX; chosen by the top-level module of the array's type) are thin
specializations, for speed and for each library's own streams and allocator.  Any other array
that speaks DLPack (``__dlpack__`` and ``__dlpack_device__``) or ``__cuda_array_interface__``
gets the generic adapter (``dlpack``).  The adapters only translate (pointers, shapes, strides,
streams, allocation); all logic lives in the core.

Imports: nothing of ours at module level; each adapter (``adapters.*``) by its module name,
when the first array of its library arrives.
"""

from __future__ import annotations

import importlib
import sys

# Top-level module of an array type -> adapter module.
_MODULES = {
    "cupy": "cutematmul.adapters.cupy",
    "cupy_backends": "cutematmul.adapters.cupy",
    "torch": "cutematmul.adapters.torch",
    "numpy": "cutematmul.adapters.numpy",
    "jax": "cutematmul.adapters.jax",
    "jaxlib": "cutematmul.adapters.jax",
}
_GENERIC = "cutematmul.adapters.dlpack"

# Explicit cache: array type -> adapter instance.
_by_type: dict[type, object] = {}


def adapter_for(x, argument: str = "a"):
    """The adapter for ``x``'s array library; TypeError naming ``argument`` if there is none."""
    kind = type(x)
    adapter = _by_type.get(kind)
    if adapter is not None:
        return adapter
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        # An import statement, not importlib: torch.compile traces this function on a cold
        # registry (any tensor subclass, nn.Parameter included) and executes statements only.
        from . import torch as torch_adapter

        _by_type[kind] = torch_adapter.ADAPTER
        return torch_adapter.ADAPTER
    module = _adapter_module(x, kind)
    if module is None:
        raise TypeError(
            f"matmul: {argument} must be a CuPy, PyTorch, NumPy or JAX array, or any array with "
            f"__dlpack__ or __cuda_array_interface__; got {kind.__module__}.{kind.__qualname__}."
        )
    adapter = importlib.import_module(module).ADAPTER
    _by_type[kind] = adapter
    return adapter


def _adapter_module(x, kind: type) -> str | None:
    module = _MODULES.get(kind.__module__.split(".", 1)[0])
    if module is not None and hasattr(x, "shape") and hasattr(x, "dtype"):
        return module
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return _GENERIC
    if hasattr(x, "__cuda_array_interface__"):
        return _GENERIC
    return None
