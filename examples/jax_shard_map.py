"""cutematmul across every local GPU with JAX's own sharding: shard_map, and jit +
custom_partitioning."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import cutematmul
from cutematmul.xla_sharding import sharded_matmul

devices = jax.devices()
mesh = Mesh(np.array(devices), ("data",))
n = len(devices)
a = jax.random.normal(jax.random.PRNGKey(0), (512 * n, 1024), jnp.float16)
b = jax.random.normal(jax.random.PRNGKey(1), (1024, 768), jnp.float16)
a = jax.device_put(a, NamedSharding(mesh, P("data", None)))  # rows split over the GPUs
b = jax.device_put(b, NamedSharding(mesh, P()))              # replicated

# 1. shard_map: each GPU multiplies its rows of A by B.
f = jax.jit(jax.shard_map(cutematmul.matmul, mesh=mesh, in_specs=(P("data", None), P()),
                          out_specs=P("data", None)))
c1 = f(a, b)

# 2. plain jit with sharded inputs: the custom_partitioning rule keeps A's rows sharded.
c2 = jax.jit(sharded_matmul)(a, b)

want = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
errs = [float(np.linalg.norm(np.asarray(c, np.float64) - want) / np.linalg.norm(want))
        for c in (c1, c2)]
print(f"{n} GPU(s); shard_map error {errs[0]:.2e}; jit+custom_partitioning error {errs[1]:.2e}; "
      f"output sharding {c2.sharding.spec}")
sys.exit(0 if max(errs) < 1e-3 else 1)
