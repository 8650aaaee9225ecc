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
player again), ``-V(child)`` otherwise. Sources: El Kaddouri, Rys & Gao,
"Multi Agent Reinforcement Learning With Dots And Boxes" (course report,
undated), sections 4-5 (the extra-turn rule); mctx ``RecurrentFnOutput``
(discount per step); Torralba, "Multi-Agent Systems: Adversarial Search and
Game Theory" (Machine Intelligence lecture 12, Aalborg University, 2022),
the minimax slides (values negate when the player changes).
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


def backup(reward, discount, child):
    """The value of a move for its mover: ``reward + discount * child``.

    Pure arithmetic, so it serves Python numbers (host-side search), numpy
    arrays and ``jax.Array`` alike, with the usual broadcasting.

    Args:
        reward: the move's reward from the mover's side (`mover_reward`).
        discount: `discount` of the move (+1, -1, or 0 at a terminal child).
        child: the child's value from the side of *its* player to move.

    Returns:
        The move's value from the mover's side (``Q(parent, a)``).
    """
    return reward + discount * child


def child_window(reward, discount, alpha, beta):
    """The alpha-beta window of a child: ``Q = backup(reward, discount, V)`` lies in ``(alpha, beta)`` iff ``V`` lies in it.

    A negamax search over games with extra turns recurses into a child with
    this window instead of the usual ``(-beta, -alpha)``: for ``discount``
    -1 (turn passes) it is ``(reward - beta, reward - alpha)``, for +1 (same
    player again) ``(alpha - reward, beta - reward)``. Infinite bounds stay
    infinite. Source: Knuth & Moore 1975, "An analysis of alpha-beta
    pruning" (negamax form), with the extra-turn discount of this module.

    Args:
        reward: the move's reward from the mover's side (a Python number).
        discount: +1 or -1 (a terminal child, discount 0, is not searched).
        alpha, beta: the parent's window, ``alpha < beta``.

    Returns:
        ``(alpha_child, beta_child)`` for the child's search.

    Raises:
        ValueError: ``discount`` is not +1 or -1.
    """
    if discount == 1:
        return alpha - reward, beta - reward
    if discount == -1:
        return reward - beta, reward - alpha
    raise ValueError(f"child_window needs a discount of +1 or -1 (a terminal child is not searched); got {discount!r}")


def box_discount(boxes):
    """Dots-and-Boxes' discount of a move: +1 if it completed ``boxes > 0`` boxes (extra turn), else -1.

    The terminal case needs no 0 here: the value of a full board is 0.
    Works on ints, numpy arrays and ``jax.Array`` (int ``[...]`` in, same shape out).
    Source: El Kaddouri et al., sections 4-5 (a move completing a box moves again).
    """
    return 2 * (boxes > 0) - 1


def child_value(boxes, child):
    """The backup of Dots-and-Boxes search: ``g + V(child)`` if ``g > 0`` else ``-V(child)``.

    `backup` with the reward ``g`` (boxes completed) and `box_discount`;
    vectorised: ints (host search), numpy or ``jax.Array`` (the solver's
    batched kernel) of any broadcastable shapes.

    Args:
        boxes: boxes the move completed, ``g`` (0, 1 or 2), int ``[...]``.
        child: the value of the child for *its* player to move, int ``[...]``.

    Returns:
        The move's value for its mover, int ``[...]``.
    """
    return backup(boxes, box_discount(boxes), child)
