"""MCTS on mctx (`jaxgames.search.mcts`) and the MCTS agent: keys and degenerate roots.

The search's strength is tested through the agent in ``test_agents.py``
(captures, the extra-turn sign); here: every step gets a key (a game with
chance events refuses a missing one), a root with no legal action gives
finite weights instead of mctx's NaN, and the agent draws its search and
its tie-breaking from different keys.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.agents import mcts as mcts_agent
from jaxgames.agents.mcts import MCTSAgent
from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.search import mcts


class ChanceDotsAndBoxes(DotsAndBoxes):
    """Dots-and-Boxes declared stochastic: its `step` refuses a missing key (`jaxgames.core`)."""

    stochastic = True


def stack(*states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def test_keys_for_every_step_and_finite_weights_at_degenerate_roots():
    """One compiled search over three roots of a game that refuses a missing key.

    Roots: a live 1x1 position (edges 0 and 1 drawn), a terminal one (all-True
    mask, core's convention), and the same terminal one with the old all-False mask.
    """
    env = ChanceDotsAndBoxes(1, 1)
    live = env.from_dbn("1100")
    done = env.from_dbn("1111")
    maskless = done.replace(legal_action_mask=jnp.zeros(4, bool))
    search = jax.jit(lambda s, k: mcts.search(env, s, k, num_simulations=8))
    w = np.asarray(search(stack(live, done, maskless), jax.random.key(0)).action_weights)
    assert np.all(np.isfinite(w)), w
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-5)
    assert w[0, :2].sum() == 0.0  # drawn edges of the live root are never visited
    # Both terminal roots are searched as all-valid: equal priors and zero values give PUCT
    # even visits, 8 simulations over 4 actions (unguarded, the maskless root sends all 8 to action 0).
    np.testing.assert_allclose(w[1:], 0.25)


def test_agent_splits_search_and_tie_break_keys(monkeypatch):
    env = DotsAndBoxes(1, 1)
    state = env.from_dbn("0000")
    seen = {}

    def fake_search(env, states, key, **kwargs):
        seen["search"] = jax.random.key_data(key)
        weights = jnp.zeros(states.legal_action_mask.shape, jnp.float32)  # all tied: the noise decides
        return type("Out", (), {"action_weights": weights})()

    real_uniform = jax.random.uniform

    def recording_uniform(key, *args, **kwargs):
        seen["tie"] = jax.random.key_data(key)
        return real_uniform(key, *args, **kwargs)

    monkeypatch.setattr(mcts_agent.mcts, "search", fake_search)
    monkeypatch.setattr(jax.random, "uniform", recording_uniform)
    key = jax.random.key(7)
    agent = MCTSAgent(num_simulations=4)
    run = agent.batched_policy(env)  # eager: the recorded keys are concrete
    action = run(stack(state), key[None], jnp.zeros(1, jnp.int32))
    given = jax.random.key_data(key)
    assert not np.array_equal(seen["search"], seen["tie"])
    assert not np.array_equal(seen["search"], given) and not np.array_equal(seen["tie"], given)
    assert 0 <= int(action[0]) < 4
    # The one-state policy goes through the same path with the seat argument.
    assert 0 <= int(agent.policy(env, state, key, jnp.int32(0))) < 4
