"""`arena.play(refill=True)`: games stream through fewer batch rows and come out as in one batch, bitwise."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.agents import RandomAgent
from jaxgames.agents.base import HostAgent
from jaxgames.agents.battlesnake import HeuristicAgent, RandomSafeAgent
from jaxgames.evaluation import arena
from tests.test_arena_nplayer import _same_result


def test_a_split_row_is_computed_alone():
    """The identity `_split_rows` relies on: row r of split(k, n) does not depend on n, nor on the other rows."""
    keys = jax.random.split(jax.random.key(9), 5)
    rows = jnp.array([0, 3, 17, 1000, 4095], jnp.int32)
    got = arena._split_rows(keys, rows, 4096)
    want = jnp.stack([jax.random.split(k, 4096)[r] for k, r in zip(keys, rows.tolist())])
    np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(want))
    raw = jax.random.split(jax.random.PRNGKey(9), 5)  # legacy uint32 keys: the fallback splits all rows
    np.testing.assert_array_equal(arena._split_rows(raw, rows, 4096),
                                  jnp.stack([jax.random.split(k, 4096)[r] for k, r in zip(raw, rows.tolist())]))


def test_battlesnake_games_of_many_lengths_come_out_as_in_one_batch():
    """4 snakes (chance events, simultaneous moves): 11 games through 3 rows, and through 1, equal one batch."""
    env = jaxgames.make("battlesnake", board_size=7, num_snakes=4, observation="none")
    agents = (HeuristicAgent(), RandomSafeAgent())
    kw = dict(lineup=(0, 1, 1, 1), max_steps=60)
    one = arena.play(env, agents, 11, jax.random.key(5), **kw)
    assert len(set(one.length.tolist())) > 3 and one.timed_out.any() and not one.timed_out.all()
    _same_result(one, arena.play(env, agents, 11, jax.random.key(5), chunk_size=3, refill=True, **kw))
    _same_result(one, arena.play(env, agents, 11, jax.random.key(5), chunk_size=1, refill=True, **kw))
    _same_result(one, arena.play(env, agents, 11, jax.random.key(5), chunk_size=40, refill=True, **kw))


def test_turn_taking_games_and_play_match_come_out_as_in_one_batch():
    dab = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2)
    one = arena.play(dab, (RandomAgent(), RandomAgent()), 13, jax.random.key(4), seating="permute")
    _same_result(one, arena.play(dab, (RandomAgent(), RandomAgent()), 13, jax.random.key(4), seating="permute",
                                 chunk_size=5, refill=True))
    m = arena.play_match(dab, RandomAgent(), RandomAgent(), 7, jax.random.key(1))
    r = arena.play_match(dab, RandomAgent(), RandomAgent(), 7, jax.random.key(1), chunk_size=2, refill=True)
    np.testing.assert_array_equal(m.outcome, r.outcome)
    np.testing.assert_array_equal(m.length, r.length)


def test_refill_bad_input():
    env = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=1)
    with pytest.raises(ValueError, match="refill must be a bool"):
        arena.play(env, (RandomAgent(), RandomAgent()), 4, jax.random.key(0), refill=1)

    class First(HostAgent):
        name = "host_first"

        def act(self, env, state, rng, player):
            return int(np.argmax(state.legal_action_mask))

    with pytest.raises(ValueError, match="refill needs every agent to be a JaxAgent"):
        arena.play(env, (First(), RandomAgent()), 4, jax.random.key(0), refill=True)
