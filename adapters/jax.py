"""JAX arrays (and tracers): the XLA route, which lowers the product to an XLA custom call.

Imports: ``cutematmul.operand`` (the adapter interface) only: the XLA route itself is
``cutematmul.xla``, which ``routes`` loads.
"""

from __future__ import annotations

from cutematmul.operand import ArrayAdapter


class JaxAdapter(ArrayAdapter):
    name = "jax"
    route = "xla"


ADAPTER = JaxAdapter()
