"""cutematmul inside jax.jit: a two-layer MLP step with grad and vmap, checked against
jnp.matmul."""

import sys

import jax
import jax.numpy as jnp
import numpy as np

import cutematmul

key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
x = jax.random.normal(k1, (256, 512), jnp.bfloat16)
w1 = jax.random.normal(k2, (512, 1024), jnp.bfloat16) / 24
w2 = jax.random.normal(k3, (1024, 128), jnp.bfloat16) / 32


def mlp(params, x, mm):
    w1, w2 = params
    return mm(jax.nn.relu(mm(x, w1)), w2)


def loss(params, x, mm):
    return jnp.mean(mlp(params, x, mm).astype(jnp.float32) ** 2)


ref_mm = lambda a, b: jnp.matmul(a, b,  # noqa: E731
                                 preferred_element_type=jnp.float32).astype(a.dtype)
ours = jax.jit(jax.grad(loss), static_argnums=2)((w1, w2), x, cutematmul.matmul)
ref = jax.jit(jax.grad(loss), static_argnums=2)((w1, w2), x, ref_mm)
errors = [float(jnp.linalg.norm((g - r).astype(jnp.float32))
                / jnp.linalg.norm(r.astype(jnp.float32)))
          for g, r in zip(ours, ref)]
print("gradient relative errors:", errors)

# vmap over a batch of weight matrices: one batched kernel, no Python loop.
ws = jax.random.normal(k2, (8, 512, 64), jnp.bfloat16)
batched = jax.jit(jax.vmap(cutematmul.matmul, in_axes=(None, 0)))(x, ws)
want = np.einsum("mk,bkn->bmn", np.asarray(x, np.float32), np.asarray(ws, np.float32))
vmap_err = float(np.linalg.norm(np.asarray(batched, np.float32) - want) / np.linalg.norm(want))
print("vmap relative error:", vmap_err)
sys.exit(0 if max(errors) < 3e-2 and vmap_err < 8e-3 else 1)
