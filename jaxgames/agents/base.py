"""The common agent interface that the arena plays (shared by every game).

An agent answers, for a batch of states, one action per state. Two kinds:

* `JaxAgent`: a pure JAX policy of ONE state, ``policy(state, key) -> action``;
  the arena vmaps and jits it once and may run a whole match inside one
  ``lax.while_loop`` when both players are JAX agents (house style rule 1:
  write for one example, vmap at one boundary).
* `HostAgent`: a Python policy of one state (numpy leaves), for algorithms
  that do not vectorise (alpha-beta with a transposition table). The arena
  calls it only for the games where it is to move, and times each call.

Both implement `Agent.act_batch`, so the arena needs nothing else.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np


class Agent:
    """Base class of every agent.

    Attributes:
        name: a short label for tables and plots.
    """

    name: str = "agent"

    def act_batch(self, env, states, key: jax.Array, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Actions for a batch of states.

        Args:
            env: the game (`jaxgames.core.Env`).
            states: a batched state, leading axis ``B``.
            key: a PRNG key for this call.
            active: bool numpy ``[B]``: the games where this agent is to move
                (other rows may be answered with anything).

        Returns:
            ``(actions, seconds)``: int32 numpy ``[B]`` and float64 numpy ``[B]``,
            the wall-clock seconds spent per active game (0 where not measured).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class JaxAgent(Agent):
    """An agent whose policy is a pure JAX function of one state.

    Subclasses implement `policy`. The arena uses `batched_policy`.
    """

    def policy(self, env, state, key: jax.Array) -> jax.Array:
        """int32 ``[]``: the action for one unbatched state (pure, jittable)."""
        raise NotImplementedError

    def batched_policy(self, env) -> Callable[[Any, jax.Array], jax.Array]:
        """``(states [B, ...], keys [B]) -> actions int32 [B]``, the vmapped policy (not jitted)."""
        return jax.vmap(lambda s, k: self.policy(env, s, k).astype(jnp.int32))

    def _compiled(self, env):
        cache = self.__dict__.setdefault("_jit_cache", {})
        fn = cache.get(id(env))
        if fn is None:
            fn = cache[id(env)] = (env, jax.jit(self.batched_policy(env)))
        return fn[1]

    def act_batch(self, env, states, key, active):
        """See `Agent.act_batch`; the whole batch is computed in one jitted call."""
        batch = int(np.shape(active)[0])
        actions = self._compiled(env)(states, jax.random.split(key, batch))
        return np.asarray(actions, np.int32), np.zeros(batch)


class HostAgent(Agent):
    """An agent that decides on the host, one state at a time.

    Subclasses implement `act` on one unbatched state whose leaves are numpy arrays.
    """

    def act(self, env, state, rng: np.random.Generator) -> int:
        """The action (an int) for one unbatched state with numpy leaves."""
        raise NotImplementedError

    def act_batch(self, env, states, key, active):
        """See `Agent.act_batch`; loops over the active games, timing each decision."""
        host = jax.device_get(states)
        batch = int(np.shape(active)[0])
        seed = int(jax.random.randint(key, (), 0, np.iinfo(np.int32).max))
        rng = np.random.default_rng(seed)
        actions = np.zeros(batch, np.int32)
        seconds = np.zeros(batch)
        for i in np.flatnonzero(active):
            one = jax.tree.map(lambda x: x[i], host)
            start = time.perf_counter()
            actions[i] = self.act(env, one, rng)
            seconds[i] = time.perf_counter() - start
        return actions, seconds


def masked_uniform_choice(key: jax.Array, mask: jax.Array) -> jax.Array:
    """int32 ``[]``: a uniform draw among the True entries of ``mask`` ``[A]`` (0 if none)."""
    logits = jnp.where(mask, 0.0, jnp.finfo(jnp.float32).min)
    choice = jax.random.categorical(key, logits)
    return jnp.where(jnp.any(mask), choice, 0).astype(jnp.int32)
