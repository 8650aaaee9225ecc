"""Auto-reset, time limit and rollout (jaxgames.wrappers), checked against hand-played games."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames import wrappers
from jaxgames.agents.base import masked_uniform_choice

DAB_1X1 = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=1)  # 4 edges: every game lasts exactly 4 moves


def test_auto_reset_keeps_final_observation_rewards_and_flags():
    env = DAB_1X1
    state = env.init(jax.random.key(0))
    key = jax.random.key(1)
    # Players alternate on 1x1 until the 4th edge: player 1 draws it and takes the only box.
    for t, edge in enumerate([0, 1, 2]):
        state, out = wrappers.auto_reset_step(env, state, jnp.int32(edge), jax.random.fold_in(key, t))
        assert not bool(out.terminated) and int(state.step_count) == t + 1
    final = env.step(state, jnp.int32(3))  # the same step without the wrapper, for the expected final observation
    nxt, out = wrappers.auto_reset_step(env, state, jnp.int32(3), key)
    assert bool(out.terminated) and not bool(out.truncated)
    assert out.rewards.tolist() == [-1.0, 1.0]
    np.testing.assert_array_equal(out.final_observation, final.observation)
    # The next state is a new game.
    assert int(nxt.step_count) == 0 and not bool(nxt.terminated) and bool(nxt.legal_action_mask.all())
    assert int(nxt.current_player) == 0 and float(jnp.abs(nxt.observation).sum()) == 0.0


def test_time_limit_truncates_and_keeps_rule_endings_terminated():
    env = wrappers.TimeLimit(jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2), max_steps=3)
    assert env.num_actions == 12 and env.num_rows == 2  # the game's own attributes pass through
    s = env.init(jax.random.key(0))
    for a in (0, 5, 11):
        assert not bool(s.truncated)
        s = env.step(s, jnp.int32(a))
    assert bool(s.truncated) and not bool(s.terminated) and bool(s.legal_action_mask.all())
    again = env.step(s, jnp.int32(1))  # a finished game is a no-op
    assert int(again.step_count) == 3
    # The 1x1 game ends by its rules at step 4: terminated, not truncated, with a limit of 4.
    one = wrappers.TimeLimit(DAB_1X1, max_steps=4)
    s = one.init(jax.random.key(0))
    for a in range(4):
        s = one.step(s, jnp.int32(a))
    assert bool(s.terminated) and not bool(s.truncated)
    assert one == wrappers.TimeLimit(jaxgames.make("dots_and_boxes", num_rows=1, num_cols=1), max_steps=4)
    with pytest.raises(ValueError, match="max_steps"):
        wrappers.TimeLimit(DAB_1X1, max_steps=0)


def _random_policy(state, key):
    return masked_uniform_choice(key, state.legal_action_mask)


ROLLOUT = jax.jit(wrappers.rollout, static_argnums=(0, 1, 4), static_argnames=("record_observations",))


def test_rollout_resets_every_four_moves_on_1x1():
    B, T = 8, 12
    states = wrappers.init_batch(DAB_1X1, jax.random.key(0), B)
    final, traj = ROLLOUT(DAB_1X1, _random_policy, states, jax.random.key(1), T)
    assert traj.observation.shape == (T, B) + DAB_1X1.observation_shape
    assert traj.action.shape == (T, B) and traj.rewards.shape == (T, B, 2)
    ended = np.asarray(traj.terminated)
    expected = np.zeros((T, B), bool)
    expected[[3, 7, 11]] = True
    np.testing.assert_array_equal(ended, expected)
    assert not np.asarray(traj.truncated).any()
    # Each step draws a new edge of the current game: the 4 actions of an episode are a permutation of 0..3.
    acts = np.asarray(traj.action).reshape(3, 4, B)
    assert (np.sort(acts, axis=1) == np.arange(4)[None, :, None]).all()
    # Zero-sum, one box: returns are +1/-1 at the ends.
    returns, done = wrappers.episode_returns(traj)
    r = np.asarray(returns)[expected]
    np.testing.assert_array_equal(np.sort(r, axis=-1), np.tile([-1.0, 1.0], (r.shape[0], 1)))
    # Inside an episode the next observation is the next step's observation.
    obs, nxt = np.asarray(traj.observation), np.asarray(traj.next_observation)
    live = ~ended[:-1]
    np.testing.assert_array_equal(nxt[:-1][live], obs[1:][live])
    assert np.asarray(final.step_count).tolist() == [0] * B


def test_rollout_with_time_limit_truncates():
    env = wrappers.TimeLimit(DAB_1X1, max_steps=3)
    B, T = 4, 9
    _, traj = ROLLOUT(env, _random_policy, wrappers.init_batch(env, jax.random.key(0), B), jax.random.key(2), T)
    expected = np.zeros((T, B), bool)
    expected[[2, 5, 8]] = True
    np.testing.assert_array_equal(np.asarray(traj.truncated), expected)
    assert not np.asarray(traj.terminated).any()
    assert not np.asarray(traj.rewards).any()  # no box is ever closed in 3 moves on 1x1


def test_rollout_of_a_stochastic_game_uses_a_key_per_game():
    env = jaxgames.make("battlesnake", board_size=7, num_snakes=2, observation="none")

    def policy(state, key):
        return jax.vmap(masked_uniform_choice)(jax.random.split(key, env.num_players), state.legal_action_mask)

    B = 6
    states = wrappers.init_batch(env, jax.random.key(0), B)
    # The same start board in every slot: only the keys of the rollout can tell the games apart.
    states = jax.tree.map(lambda x: jnp.stack([x[0]] * B), states)
    final, traj = ROLLOUT(env, policy, states, jax.random.key(3), 20, record_observations=False)
    assert traj.action.shape == (20, B, 2) and traj.observation.shape == (20, B, 0)
    food = np.asarray(final.board.food).reshape(B, -1)
    assert len({f.tobytes() for f in food}) > 1, "every game spawned the same food"
