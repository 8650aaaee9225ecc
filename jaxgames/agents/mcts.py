"""Pure MCTS agent with random rollouts.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots
And Boxes" (course report), section 5.7 ("naive MCTS"); Janson, "Two-Player
Games" (CS/Stat 184 lecture notes, 2024), the MCTS part.

Built on `jaxgames.search.mcts` (mctx). Batched: the arena's whole batch of
games is searched in one call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks
from jaxgames.agents.base import JaxAgent
from jaxgames.search import mcts


class MCTSAgent(JaxAgent):
    """Plays the most visited root action of a pure MCTS search (ties broken at random).

    Args:
        num_simulations: simulations per move (default 200).
        pb_c_init: exploration constant of the PUCT rule (mctx).
        name: label.

    Raises:
        ValueError: ``num_simulations < 1``; ``pb_c_init`` negative or not finite (in float32).
    """

    def __init__(self, *, num_simulations: int = 200, pb_c_init: float = 1.25, name: str = "mcts"):
        if isinstance(num_simulations, bool) or not isinstance(num_simulations, int) or num_simulations < 1:
            raise ValueError(f"num_simulations must be a positive int; got {num_simulations!r}")
        pb_c_init = checks.real("pb_c_init", pb_c_init, 0.0, dtype=np.float32)  # a float32 constant of the search
        self.num_simulations, self.pb_c_init, self.name = num_simulations, pb_c_init, name

    def policy(self, env, state, key, player):
        """int32 ``[]``: the move for one state (a batch of one through `batched_policy`).

        ``player`` is the seat to act for; in a two-player sequential game it
        is ``state.current_player``, so the search does not need it.
        """
        batched = jax.tree.map(lambda x: x[None], state)
        return self.batched_policy(env)(batched, key[None], jnp.asarray(player, jnp.int32)[None])[0]

    def batched_policy(self, env):
        """``(states [B], keys [B], players [B]) -> actions [B]``: one mctx search over the batch.

        Each game's key is split into a search key and a tie-breaking key;
        the search of the batch uses the first game's search key (mctx
        searches a batch with one key). ``players`` is unused (sequential
        games: the seat to act for is the player to move).

        Raises:
            ValueError: a simultaneous or non-two-player game.
        """
        if getattr(env, "simultaneous", False) or getattr(env, "num_players", 2) != 2:
            raise ValueError(f"MCTS here searches two-player sequential games; got {env!r}")

        def run(states, keys, players):
            del players
            subkeys = jax.vmap(jax.random.split)(keys)  # [B, 2]: search, tie-breaking
            search_keys, tie_keys = subkeys[:, 0], subkeys[:, 1]
            out = mcts.search(env, states, search_keys[0], num_simulations=self.num_simulations, pb_c_init=self.pb_c_init)
            w = out.action_weights
            noise = jax.vmap(lambda k: jax.random.uniform(k, w.shape[-1:], maxval=1e-6))(tie_keys)
            w = jnp.where(states.legal_action_mask, w + noise, -1.0)
            return jnp.argmax(w, axis=-1).astype(jnp.int32)

        return run
