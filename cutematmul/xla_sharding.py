"""Sharded cutematmul under ``jax.jit``: a ``custom_partitioning`` rule (the documented recipe).

Inside ``jax.shard_map`` nothing is needed: ``cutematmul.matmul`` sees per-device shards and runs
one kernel per device.  Under plain ``jax.jit`` with sharded inputs, XLA does not know how to split
a custom call and would gather the operands onto every device.  ``sharded_matmul`` tells it: keep
A's batch and row (M) sharding, replicate the contracted dimension K and the operand B, and run the
local product on each device, so the output comes out sharded like A's rows.

Imports: ``xla``; ``jax``.
"""

from __future__ import annotations

from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec

from .xla import matmul


def _specs(a_aval, b_aval):
    """(a, b, out) partition specs: A keeps all but K's sharding, B and K replicated."""
    a_spec = tuple(a_aval.sharding.spec) + (None,) * (a_aval.ndim - len(a_aval.sharding.spec))
    a_spec = a_spec[:-1] + (None,)
    b_spec = (None,) * b_aval.ndim
    out_spec = a_spec[:-1] + (None,)
    return PartitionSpec(*a_spec), PartitionSpec(*b_spec), PartitionSpec(*out_spec)


@custom_partitioning
def _partitioned(a, b):
    return matmul(a, b)


def _infer(mesh, arg_shapes, result_shape):
    return NamedSharding(mesh, _specs(*arg_shapes)[2])


def _partition(mesh, arg_shapes, result_shape):
    a_spec, b_spec, out_spec = _specs(*arg_shapes)
    shardings = (NamedSharding(mesh, a_spec), NamedSharding(mesh, b_spec))
    return mesh, matmul, NamedSharding(mesh, out_spec), shardings


_partitioned.def_partition(
    infer_sharding_from_operands=_infer,
    partition=_partition,
    sharding_rule="... m k, k n -> ... m n",
)


def sharded_matmul(a, b):
    """``matmul(a, b)`` for ``a`` (..., M, K) sharded over batch/rows and ``b`` (K, N), under jit.

    Each device multiplies its rows of A by the whole of B with cutematmul; no gather of A.
    """
    if b.ndim != 2:
        raise ValueError(f"sharded_matmul: b must be 2-D (K, N); got shape {b.shape}.")
    if a.ndim < 2:
        raise ValueError(f"sharded_matmul: a must be at least 2-D (..., M, K); got shape "
                         f"{a.shape}.")
    return _partitioned(a, b)
