"""JAX arrays (and tracers): the XLA route, which lowers the product to an XLA custom call."""

from __future__ import annotations

from cutematmul.operand import ArrayAdapter


class JaxAdapter(ArrayAdapter):
    name = "jax"
    route = "xla"


ADAPTER = JaxAdapter()
