"""The three ways a product is computed, by the route an adapter declares (``ArrayAdapter.route``).

* ``"device"``: GPU memory, launched here (``launch.run_device``);
* ``"host"``: host memory staged through the GPU, NumPy semantics (``staging.run_host``);
* ``"xla"``: JAX values, lowered to an XLA custom call (``xla.run_xla``).

Each route module is imported on its first use (JAX's only when a JAX array arrives).

Imports: ``launch``, ``staging``, ``xla`` (lazily).
"""

from __future__ import annotations

import functools
import importlib

_ROUTES = {
    "device": ("cutematmul.launch", "run_device"),
    "host": ("cutematmul.staging", "run_host"),
    "xla": ("cutematmul.xla", "run_xla"),
}


@functools.cache
def route_function(route: str):
    """The function that computes products along ``route`` (cached after the first import)."""
    module, name = _ROUTES[route]
    return getattr(importlib.import_module(module), name)
