"""Export a function that uses cutematmul (symbolic batch), serialize it, and run it again."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from cutlass.jax import get_export_disabled_safety_checks

import cutematmul
from cutematmul.xla import register_ffi_targets


def layer(x, w):
    return jax.nn.gelu(cutematmul.matmul(x, w))


batch = jax.export.symbolic_shape("batch")[0]
exported = jax.export.export(jax.jit(layer), disabled_checks=get_export_disabled_safety_checks())(
    jax.ShapeDtypeStruct((batch, 64, 256), jnp.float16),
    jax.ShapeDtypeStruct((256, 128), jnp.float16))
blob = exported.serialize()
print(f"exported {len(blob)} bytes; input shapes {exported.in_avals}")

# In another process: register the FFI targets, deserialize, call with any batch size.
register_ffi_targets()
restored = jax.export.deserialize(blob)
x = jax.random.normal(jax.random.PRNGKey(0), (5, 64, 256), jnp.float16)
w = jax.random.normal(jax.random.PRNGKey(1), (256, 128), jnp.float16) / 16
got = np.asarray(restored.call(x, w), np.float32)
want = np.asarray(jax.nn.gelu(jnp.matmul(x.astype(jnp.float32), w.astype(jnp.float32))))
err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
print("relative error after the round trip:", err)
sys.exit(0 if err < 2e-3 else 1)
