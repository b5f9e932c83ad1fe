"""JAX arrays (and tracers): routed to ``cutematmul.xla``, which lowers to an XLA custom call."""

from __future__ import annotations

from cutematmul.operand import ArrayAdapter


class JaxAdapter(ArrayAdapter):
    name = "jax"

    def matmul(self, a, b, *, out, stream, precision, kernel):
        if out is not None:
            raise TypeError(
                "matmul: out= cannot be used with JAX arrays, which are immutable; "
                "use the returned array (XLA reuses buffers itself, e.g. with donate_argnums)."
            )
        if stream is not None:
            raise TypeError(
                "matmul: stream= cannot be used with JAX arrays: the product runs on XLA's "
                "stream, ordered with the rest of the JAX computation."
            )
        from cutematmul.xla import matmul

        return matmul(a, b, precision=precision, kernel=kernel)


ADAPTER = JaxAdapter()
