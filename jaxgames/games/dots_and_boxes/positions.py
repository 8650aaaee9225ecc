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
    k_order, k_stop = jax.random.split(key)
    stops = jax.random.randint(k_stop, (num_positions,), 0, env.num_actions)
    keys = jax.random.split(k_order, num_positions)
    return jax.jit(jax.vmap(lambda k, n: after_random_moves(env, k, n)))(keys, stops)


def after_random_moves(env: DotsAndBoxes, key: jax.Array, num_moves: jax.Array) -> DotsAndBoxesState:
    """One game after ``num_moves`` uniformly random moves from the empty board (one unbatched state; vmap it).

    Args:
        env: the game (its size; ``utility_margin`` sets the rewards of a game that the moves end).
        key: PRNG key of the moves.
        num_moves: int ``[]`` in ``[0, num_edges - 1]`` (may be traced); the moves are a uniformly random
            order of the edges, cut after ``num_moves``, so the game is not over.

    Returns:
        The `DotsAndBoxesState` after the moves (scores and the player to move follow them).
    """
    order = jax.random.permutation(key, env.num_actions).astype(jnp.int32)

    def body(s, t):
        nxt = env.step(s, order[t])
        return jax.tree.map(lambda a, b: jnp.where(t < num_moves, a, b), nxt, s), None

    s, _ = jax.lax.scan(body, env.init(jax.random.key(0)), jnp.arange(env.num_actions))
    return s
