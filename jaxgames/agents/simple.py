"""Baseline agents for any game: uniform random and first legal action.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots
And Boxes" (course report), section 5.7 (the "random" and "first open edge"
opponents).
For Dots-and-Boxes the first legal action is the first open edge in
OpenSpiel's action order (horizontal edges first).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgames.agents.base import JaxAgent, masked_uniform_choice, seat_mask


def masked_argmax(values: jax.Array, mask: jax.Array) -> jax.Array:
    """int32 ``[]``: the index of the largest of ``values`` ``[A]`` among the True entries of ``mask`` ``[A]``.

    Never an index outside ``mask`` (while it has a True entry), whatever the
    values: NaN counts as the dtype's lowest value (``jnp.argmax`` would pick
    the first NaN, wherever it is), ties go to the lowest index, and where no
    legal value stands above the masked ones (every legal value NaN or
    ``-inf``) the lowest legal index is returned. 0 if ``mask`` is all False.
    Masking with ``finfo.min``, never ``-inf`` (``shared/STYLE.md``, after mctx).
    """
    values = jnp.asarray(values)
    dtype = values.dtype if jnp.issubdtype(values.dtype, jnp.floating) else jnp.float32
    low = jnp.finfo(dtype).min
    clean = jnp.where(jnp.isnan(values), low, values.astype(dtype))
    best = jnp.argmax(jnp.where(mask, clean, low))
    return jnp.where(mask[best], best, jnp.argmax(mask)).astype(jnp.int32)


class RandomAgent(JaxAgent):
    """Plays uniformly among the legal actions (``state.legal_action_mask``)."""

    name = "random"

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: a uniform legal action of seat ``player`` (any action on a finished game)."""
        return masked_uniform_choice(key, seat_mask(env, state, player))


class FirstLegalAgent(JaxAgent):
    """Plays the legal action with the lowest index (Dots-and-Boxes: the first open edge).

    Args:
        name: label (default ``"first_open_edge"``, El Kaddouri et al.'s name).
    """

    def __init__(self, name: str = "first_open_edge"):
        self.name = name

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the lowest legal action of seat ``player`` (0 on a finished game)."""
        del key
        return jnp.argmax(seat_mask(env, state, player)).astype(jnp.int32)
