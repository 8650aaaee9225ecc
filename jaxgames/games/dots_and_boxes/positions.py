"""Positions of uniformly random play: the fixed test sets of the evaluations and benchmarks."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgames.games.dots_and_boxes.env import DotsAndBoxes, DotsAndBoxesState


def random_positions(num_rows: int, num_cols: int, key: jax.Array, num_positions: int) -> DotsAndBoxesState:
    """``num_positions`` non-terminal positions of uniformly random play (batched `DotsAndBoxesState`).

    Each position is the board after ``k`` uniformly random moves, ``k``
    uniform in ``[0, num_edges - 1]`` (so every stage of the game is
    equally represented); scores and the player to move follow the moves.
    """
    env = DotsAndBoxes(num_rows, num_cols)
    E = env.num_actions
    k_order, k_stop = jax.random.split(key)
    orders = jax.vmap(lambda k: jax.random.permutation(k, E))(jax.random.split(k_order, num_positions)).astype(jnp.int32)
    stops = jax.random.randint(k_stop, (num_positions,), 0, E)

    def one(order, stop):
        def body(s, t):
            nxt = env.step(s, order[t])
            return jax.tree.map(lambda a, b: jnp.where(t < stop, a, b), nxt, s), None

        s, _ = jax.lax.scan(body, env.init(jax.random.key(0)), jnp.arange(E))
        return s

    return jax.jit(jax.vmap(one))(orders, stops)
