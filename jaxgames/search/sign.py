"""The zero-sum sign convention of every search in jaxgames (house style rule 4).

Two-player zero-sum sequential games with extra turns (Dots-and-Boxes: a
move that completes a box moves again). Values are always from the side of
the player to move. Along an edge parent -> child of a search tree:

* ``reward``: what the move earned, from the *mover's* side;
* ``discount``: +1 when the same player moves again (extra turn), -1 when
  the turn passes to the opponent, 0 when the child is terminal;
* so ``Q(parent, a) = reward + discount * V(child)``.

This is how mctx backs values up (``value = reward + discount * value``),
and the same identity written for Dots-and-Boxes boxes is the solver's
recursion: ``g + V(child)`` if the move completed ``g > 0`` boxes (same
player again), ``-V(child)`` otherwise. Source: seed 000 sections 4-5 (the
extra-turn rule), mctx ``RecurrentFnOutput`` (discount per step), and the
minimax slides of seed 002 (values negate when the player changes).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def discount(mover: jax.Array, next_player: jax.Array, terminated: jax.Array) -> jax.Array:
    """float32 ``[...]``: +1 same player again, -1 turn passes, 0 at a terminal child.

    Args:
        mover: int32 ``[...]``: the player who made the move.
        next_player: int32 ``[...]``: the player to move in the child.
        terminated: bool ``[...]``: the child is terminal.
    """
    same = jnp.asarray(mover) == jnp.asarray(next_player)
    return jnp.where(terminated, 0.0, jnp.where(same, 1.0, -1.0)).astype(jnp.float32)


def mover_reward(rewards: jax.Array, mover: jax.Array) -> jax.Array:
    """float32 ``[...]``: the reward of the player who moved, from ``rewards`` ``[..., 2]``."""
    mover = jnp.asarray(mover, jnp.int32)
    return jnp.take_along_axis(rewards, mover[..., None], axis=-1)[..., 0].astype(jnp.float32)


def value_for(value: jax.Array, owner: jax.Array, viewer: jax.Array) -> jax.Array:
    """A value from ``owner``'s side seen from ``viewer``'s: itself if they agree, else negated."""
    return jnp.where(jnp.asarray(owner) == jnp.asarray(viewer), value, -value)


def child_value(boxes: int, child: int) -> int:
    """The host-side backup of Dots-and-Boxes search (ints): ``g + V(child)`` if ``g > 0`` else ``-V(child)``.

    Args:
        boxes: boxes the move completed, ``g`` (0, 1 or 2).
        child: the value of the child for *its* player to move.
    """
    return boxes + child if boxes else -child
