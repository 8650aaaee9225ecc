"""AlphaZero's training-signal options: lambda-returns over search values, random starts, the curriculum.

Every expected value is worked out by hand in the test.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.evaluation.alphazero import stages
from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.games.dots_and_boxes.positions import after_random_moves
from jaxgames.learners import alphazero as az
from jaxgames.networks.dots_and_boxes import NetworkConfig

TINY_NET = NetworkConfig(channels=8, num_blocks=1, value_channels=4, value_hidden=8)


def _record():
    """Two game slots over T = 4 steps.

    Slot 0: one game, movers 0, 1, 1, 0 (an extra turn at step 1), ends at step 3 with
    player 0 two boxes ahead. Slot 1: a game ends at step 1 (player 1 one box ahead), then a
    new game runs steps 2-3 without ending (its root values, 9, must not leak into the first).
    """
    rewards = np.zeros((4, 2, 2), np.float32)
    rewards[3, 0] = [2.0, -2.0]
    rewards[1, 1] = [-1.0, 1.0]
    done = np.zeros((4, 2), bool)
    done[3, 0] = done[1, 1] = True
    root = np.array([[0.5, 0.2], [1.0, 0.4], [-1.5, 9.0], [3.0, 9.0]], np.float32)
    mover = np.array([[0, 1], [1, 0], [1, 0], [0, 1]], np.int32)
    return [jnp.asarray(x) for x in (rewards, done, root, mover)]


def test_lambda_one_is_the_final_result():
    returns, ended = az.lambda_returns(*_record(), 1.0)
    np.testing.assert_array_equal(np.asarray(returns[:, 0]), [[2, -2]] * 4)
    np.testing.assert_array_equal(np.asarray(returns[:2, 1]), [[-1, 1]] * 2)
    np.testing.assert_array_equal(np.asarray(ended), [[True, True], [True, True], [True, False], [True, False]])


def test_lambda_zero_is_the_next_search_value_signed_by_its_mover():
    returns, _ = az.lambda_returns(*_record(), 0.0)
    # slot 0: G3 = r3; G2 = V3 (mover 0, +3); G1 = V2 (mover 1, -1.5 -> +1.5 for player 0); G0 = V1 (mover 1, +1)
    np.testing.assert_allclose(np.asarray(returns[:, 0]), [[-1, 1], [1.5, -1.5], [3, -3], [2, -2]])
    # slot 1: G1 = r1 (the game ended); G0 = V1 (mover 0, 0.4), not the new game's values
    np.testing.assert_allclose(np.asarray(returns[:2, 1]), [[0.4, -0.4], [-1, 1]])


def test_lambda_half_mixes_by_hand():
    returns, _ = az.lambda_returns(*_record(), 0.5)
    # G2 = (3 + 2) / 2 = 2.5; G1 = (1.5 + 2.5) / 2 = 2; G0 = (-1 + 2) / 2 = 0.5 (player 0's view)
    np.testing.assert_allclose(np.asarray(returns[:, 0, 0]), [0.5, 2.0, 2.5, 2.0])
    np.testing.assert_allclose(np.asarray(returns[:, 0, 1]), [-0.5, -2.0, -2.5, -2.0])
    np.testing.assert_allclose(np.asarray(returns[:2, 1, 0]), [(0.4 - 1) / 2, -1.0])


def _config(**kw):
    return az.AlphaZeroConfig(board_sizes=((2, 2),), network=TINY_NET, num_envs=3, num_simulations=4,
                              max_num_considered_actions=4, buffer_capacity=256, batch_size=8, updates_per_iteration=1,
                              **kw)


def test_start_window_by_hand():
    E = 24  # 3x3; high = floor(0.95 * 23) = 21
    c = _config(random_start_fraction=0.95, curriculum_iterations=10)
    assert [(int(az.start_window(c, E, i)[0]), az.start_window(c, E, i)[1]) for i in (0, 5, 10, 20)] == [
        (21, 21), (10, 21), (0, 21), (0, 21)]
    assert (int(az.start_window(_config(random_start_fraction=0.5), E, 0)[0]), az.start_window(
        _config(random_start_fraction=0.5), E, 0)[1]) == (0, 11)
    assert az.start_window(_config(), E, 7)[1] == 0  # no random starts: k = 0


def test_after_random_moves_draws_a_prefix_of_a_random_order():
    env = DotsAndBoxes(3, 3)
    keys = jax.random.split(jax.random.key(4), 24)
    states = jax.jit(jax.vmap(lambda k, n: after_random_moves(env, k, n)))(keys, jnp.arange(24))
    edges = np.asarray(states.board.edges)
    for k in range(24):
        order = np.asarray(jax.random.permutation(keys[k], 24))
        assert set(np.flatnonzero(edges[k])) == set(order[:k].tolist())
    np.testing.assert_array_equal(np.asarray(states.board.num_drawn), np.arange(24))
    assert not np.asarray(states.terminated).any()
    # the scores add up to the boxes closed, and the player to move follows the extra-turn rule
    owners = np.asarray(states.board.box_owner)
    np.testing.assert_array_equal(np.asarray(states.board.scores).sum(1), (owners >= 0).sum(1))


def test_selfplay_starts_new_games_inside_the_window():
    """2x2 (12 edges), f = 0.95: high = floor(0.95 * 11) = 10, and at iteration 0 of a curriculum low = 10.

    The first call plays the three games from the empty board (all end at the 12th move, and their
    slots restart); in the second every game starts with 10 edges drawn, so every stored position has
    10 or 11 edges drawn and each slot finishes 6 two-move games.
    """
    c = _config(random_start_fraction=0.95, curriculum_iterations=10)
    state = az.init_state(c, jax.random.key(0))
    play = jax.jit(az.make_selfplay(c, (2, 2)))
    games, buf, stats = play(state.params, state.env_states[0], state.buffers[0], jax.random.key(1), jnp.int32(0))
    assert int(buf.size) == 3 * 12 and float(stats["games"]) == 3 and float(stats["start_low"]) == 10
    np.testing.assert_array_equal(np.asarray(games.board.num_drawn), [10, 10, 10])
    size = int(buf.size)
    games, buf, stats = play(state.params, games, buf, jax.random.key(2), jnp.int32(0))
    drawn = np.asarray(buf.data.board.num_drawn[size:int(buf.size)])
    assert float(stats["games"]) == 18 and len(drawn) == 36
    assert sorted(set(drawn.tolist())) == [10, 11]


def test_bad_training_signal_settings_are_refused():
    with pytest.raises(ValueError, match="td_lambda"):
        _config(td_lambda=1.5)
    with pytest.raises(ValueError, match="random_start_fraction"):
        _config(random_start_fraction=1.0)
    with pytest.raises(ValueError, match="curriculum_iterations needs random starts"):
        _config(curriculum_iterations=5)
    with pytest.raises(ValueError, match="random_start_fraction is for dots_and_boxes"):
        az.AlphaZeroConfig(game="onitama", random_start_fraction=0.5)


def test_stages_are_thirds_of_the_edges():
    drawn = [0, 7, 8, 15, 16, 23]
    edges = np.array([[e < n for e in range(24)] for n in drawn])
    s = stages(edges)
    assert s["opening"].tolist() == [True, True, False, False, False, False]
    assert s["middle"].tolist() == [False, False, True, True, False, False]
    assert s["endgame"].tolist() == [False, False, False, False, True, True]


def test_the_evaluation_knows_the_exact_final_margin_on_1x1():
    """1x1: no box closes before the 4th edge, so turns alternate and the 4th edge (and the box) falls to
    the second player: from the mover's side the final margin is +1 after an odd number of edges, -1 after an even."""
    from jaxgames.evaluation.alphazero import EvalConfig, ProgressEvaluator

    config = az.AlphaZeroConfig(board_sizes=((1, 1),), network=TINY_NET, value_target="margin")
    ev = ProgressEvaluator(config, EvalConfig(board=(1, 1), num_positions=40, num_games=2, num_simulations=2))
    drawn = np.asarray(ev.positions.board.num_drawn)
    assert set(drawn.tolist()) == {0, 1, 2, 3}
    np.testing.assert_array_equal(ev.exact_margin, np.where(drawn % 2 == 1, 1, -1))
    metrics, _ = ev(az.init_state(config, jax.random.key(0)))
    assert 0.0 <= metrics["value_rmse_boxes"] <= 2.0  # a tanh value in [-1, 1] box against +-1
    assert {"value_rmse_boxes_opening", "optimal_rate_search_endgame"} <= set(metrics)


def test_target_quality_by_hand_on_1x1():
    """1x1: every legal move keeps the value (the box always falls to the second player), so a policy
    target is optimal exactly when its top move is an undrawn edge; the exact final margin is +1 after an
    odd number of edges and -1 after an even one (from the mover's side)."""
    from jaxgames.evaluation.alphazero import target_quality
    from jaxgames.games.dots_and_boxes.search import solver

    env = DotsAndBoxes(1, 1)
    keys = jax.random.split(jax.random.key(0), 4)
    states = jax.vmap(lambda k, n: after_random_moves(env, k, n))(keys, jnp.arange(4))
    edges = np.asarray(states.board.edges)
    policy = np.where(edges, 0.0, 1.0)
    policy[1] = np.where(edges[1], 1.0, 0.0)  # all mass on the one drawn edge: not optimal
    policy /= policy.sum(1, keepdims=True)
    value = np.array([-1.0, 1.0, 1.0, 1.0], np.float32)  # exact: -1, +1, -1, +1; the third is 2 boxes off
    q = target_quality(solver.solve(1, 1), az.Sample(board=states.board, policy=jnp.asarray(policy, jnp.float32),
                                                     value=jnp.asarray(value)), num_boxes=1)
    assert q["target_policy_optimal"] == 0.75 and q["target_policy_mass"] == 0.75
    assert q["target_value_rmse_boxes"] == pytest.approx(np.sqrt(4 / 4))


def test_max_q_bootstrap_runs_and_is_checked():
    c = _config(td_lambda=0.0, bootstrap="max_q")
    state = az.init_state(c, jax.random.key(0))
    _, buf, _ = jax.jit(az.make_selfplay(c, (2, 2)))(state.params, state.env_states[0], state.buffers[0],
                                                      jax.random.key(1), jnp.int32(0))
    value = np.asarray(buf.data.value[:int(buf.size)])
    assert np.all(np.isfinite(value)) and np.all(np.abs(value) <= 1.0 + 1e-6)  # Q-values of a tanh network, /4 boxes
    with pytest.raises(ValueError, match="bootstrap"):
        _config(bootstrap="mean")


def test_exact_endgame_targets_and_moves_match_the_solver():
    """2x2 (12 edges), ``exact_endgame_edges=8``: every stored position with at most 8 undrawn edges has
    the judge's optimal moves as its (uniform) policy target and the judge's final margin as its value
    target (/ 4 boxes); and since every move from the 4th on is optimal, each game's final margin is the
    exact value of its position after 4 moves (seen through seat 0's mean final reward)."""
    from jaxgames.games.dots_and_boxes.search import solver

    c = _config(exact_endgame_edges=8)
    state = az.init_state(c, jax.random.key(0))
    _, buf, stats = jax.jit(az.make_selfplay(c, (2, 2)))(state.params, state.env_states[0], state.buffers[0],
                                                          jax.random.key(1), jnp.int32(0))
    n = int(buf.size)
    assert n == 3 * 12
    data = jax.tree.map(lambda x: np.asarray(x[:n]), buf.data)
    table = solver.solve(2, 2)
    av = np.asarray(table.batch_action_values(jnp.asarray(data.board.edges)))
    best = av.max(-1)
    rows = np.arange(n)
    lead = data.board.scores[rows, data.board.player] - data.board.scores[rows, 1 - data.board.player]
    late = data.board.num_drawn >= 4
    optimal = (av == best[:, None]) & ~data.board.edges
    np.testing.assert_allclose(data.policy[late], (optimal / optimal.sum(-1, keepdims=True))[late], atol=1e-6)
    np.testing.assert_allclose(data.value[late], ((lead + best) / 4.0)[late], atol=1e-6)
    at4 = data.board.num_drawn == 4
    seat0 = np.where(data.board.player[at4] == 0, 1.0, -1.0) * (lead + best)[at4]  # seat 0's exact final margin
    assert float(stats["first_player_margin"]) == pytest.approx(seat0.mean())


def test_exact_endgame_edges_is_checked():
    with pytest.raises(ValueError, match="exact_endgame_edges"):
        _config(exact_endgame_edges=15)
    with pytest.raises(ValueError, match="exact_endgame_edges is for dots_and_boxes"):
        az.AlphaZeroConfig(game="onitama", exact_endgame_edges=4)
