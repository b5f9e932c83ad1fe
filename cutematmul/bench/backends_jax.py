"""JAX backend: ``jax``, XLA's GEMM through ``jax.jit(jnp.matmul)`` at ``precision=HIGHEST``.

XLA runs on a stream of its own, so JAX is timed by the host clock around ``reps`` dispatches and
one ``block_until_ready`` (``clock = "wall"``).  JAX has no ``out=``: ``make_inputs`` returns
``out=None`` and ``matmul`` returns a fresh array.  A transposed operand is a ``TransposedView``
that the jitted function transposes inside the compiled program (as free as a view elsewhere).
A JAX backend overrides only ``product(a, b)``, which runs traced inside ``jax.jit``.

Before JAX is first imported here, ``XLA_PYTHON_CLIENT_PREALLOCATE`` is set to ``false`` (unless
already set): by default XLA takes 75% of GPU memory at start-up, starving CuPy and PyTorch.

Imports: ``base``, ``data`` of this package; ``numpy``; lazily ``jax``, ``ml_dtypes`` and
``cutematmul`` (its JAX entry point).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import (Backend, CutematmulBackend, describe_error,
                   unavailable_import)
from .data import HostOperands, Sample


@functools.cache
def _jax():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    return jax


@dataclass(frozen=True)
class TransposedView:
    """Stands for ``base`` with its last two axes swapped (JAX arrays have no free views)."""

    base: Any

    @property
    def shape(self):
        s = tuple(self.base.shape)
        return s[:-2] + (s[-1], s[-2])

    @property
    def dtype(self):
        return self.base.dtype


class JaxArrays(Backend):
    """JAX arrays on the first GPU; checked and synchronized through the last result."""

    library = "jax"
    clock = "wall"

    def __init__(self, **options):
        super().__init__(**options)
        self._last = None
        self._jitted = {}  # (transpose a, transpose b) -> jitted product

    def product(self, a, b):
        """C = a @ b on JAX arrays, traced inside ``jax.jit``: what a JAX backend overrides."""
        raise NotImplementedError

    def matmul(self, a, b, out=None):
        ta, tb = type(a) is TransposedView, type(b) is TransposedView
        fn = self._jitted.get((ta, tb)) or self._jit(ta, tb)
        self._last = fn(a.base if ta else a, b.base if tb else b)
        return self._last

    def _jit(self, transpose_a: bool, transpose_b: bool):
        jax = _jax()

        def product(a, b):
            a = jax.numpy.swapaxes(a, -1, -2) if transpose_a else a
            b = jax.numpy.swapaxes(b, -1, -2) if transpose_b else b
            return self.product(a, b)

        fn = self._jitted[transpose_a, transpose_b] = jax.jit(product)
        return fn

    def _probe(self):
        try:
            jax = _jax()
        except Exception as exc:
            return unavailable_import("jax", exc)
        try:
            gpus = jax.devices("gpu")
        except Exception as exc:
            return False, f"JAX {jax.__version__} sees no GPU ({describe_error(exc)})"
        return (True, "") if gpus else (False, f"JAX {jax.__version__} sees no GPU")

    def device(self):
        return _jax().devices("gpu")[0]

    def upload(self, host: HostOperands):
        jax = _jax()
        device = self.device()

        def put(op):
            storage = op.storage
            if op.dtype == "bfloat16":
                import ml_dtypes  # a dependency of JAX

                storage = storage.view(ml_dtypes.bfloat16)
            x = jax.device_put(storage, device)
            return TransposedView(x) if op.transposed else x

        return put(host.a), put(host.b), None

    def poison(self, out):
        pass  # every result is a fresh array

    def release(self):
        self._last = None

    def synchronize(self):
        if self._last is not None:
            self._last.block_until_ready()

    def sample(self, result, sample: Sample):
        jnp = _jax().numpy
        r = result
        if sample.batches is not None:
            r = r[jnp.asarray(sample.batches)]
        r = r[..., jnp.asarray(sample.rows), :][..., jnp.asarray(sample.cols)]
        return np.asarray(r).astype(np.float64)

    def count_nonfinite(self, result):
        jnp = _jax().numpy
        return int(jnp.count_nonzero(~jnp.isfinite(result)))


class JaxMatmul(JaxArrays):
    name = "jax"
    description = "XLA through jax.jit(jnp.matmul), precision=HIGHEST"

    def product(self, a, b):
        jax = _jax()
        return jax.numpy.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


class CutematmulJax(CutematmulBackend, JaxArrays):
    """cutematmul inside ``jax.jit``: the XLA custom call of ``cutematmul.xla``."""

    name = "cutematmul-jax"
    description = "cutematmul.matmul inside jax.jit (XLA FFI custom call)"

    def product(self, a, b):
        import cutematmul

        return cutematmul.matmul(a, b, precision=self.precision, kernel=self.kernel)
