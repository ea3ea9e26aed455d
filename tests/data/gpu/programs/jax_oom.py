import jax.numpy as jnp

x = jnp.ones((1 << 42,), dtype=jnp.float32)
print(x.sum())
