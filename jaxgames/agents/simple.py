"""Baseline agents for any sequential game: uniform random and first legal action.

Source: seed 000 section 5.7 (the "random" and "first open edge" opponents).
For Dots-and-Boxes the first legal action is the first open edge in
OpenSpiel's action order (horizontal edges first).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgames.agents.base import JaxAgent, masked_uniform_choice


class RandomAgent(JaxAgent):
    """Plays uniformly among the legal actions (``state.legal_action_mask``)."""

    name = "random"

    def policy(self, env, state, key: jax.Array) -> jax.Array:
        """int32 ``[]``: a uniform legal action (0 on a terminal state)."""
        return masked_uniform_choice(key, state.legal_action_mask)


class FirstLegalAgent(JaxAgent):
    """Plays the legal action with the lowest index (Dots-and-Boxes: the first open edge).

    Args:
        name: label (default ``"first_open_edge"``, the seed's name).
    """

    def __init__(self, name: str = "first_open_edge"):
        self.name = name

    def policy(self, env, state, key: jax.Array) -> jax.Array:
        """int32 ``[]``: ``argmax(legal_action_mask)`` (0 on a terminal state)."""
        del key
        return jnp.argmax(state.legal_action_mask).astype(jnp.int32)
