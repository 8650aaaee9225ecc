"""jaxgames: pure-functional, jit/vmap-able JAX game kernels and learners.

    >>> import jax, jaxgames
    >>> env = jaxgames.make("prisoners_dilemma")
    >>> state = env.init(jax.random.key(0))
    >>> state = env.step(state, jax.numpy.array([1, 1]))
"""

from jaxgames.core import SIMULTANEOUS, Env, EnvParams, State
from jaxgames.registry import make, register, registered_games

__all__ = ["Env", "EnvParams", "State", "SIMULTANEOUS", "make", "register", "registered_games"]
__version__ = "0.1.0"
