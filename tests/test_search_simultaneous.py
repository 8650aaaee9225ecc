"""Simultaneous-move search (`jaxgames.search.simultaneous`): closed-form equilibria and maximin values.

* SM-MCTS with regret matching: the root's average policy approaches the
  Nash equilibrium of matching pennies (1/2, 1/2) and of biased
  rock-paper-scissors (1/16, 10/16, 5/16) (`jaxgames.games.matrix`), and
  the game value 0, within stated tolerances at stated budgets, for every
  one of several keys (budgets and tolerances measured: see each test).
* Maximin: the pure security level of hand-solved one-shot games.
* jit and vmap over a batch of roots equal single calls; bad input raises
  before any work; Battlesnake (N = 1, 2, 4 on 7x7) gives legal moves.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.core import SIMULTANEOUS
from jaxgames.games.matrix import MatrixGame
from jaxgames.search import simultaneous as sim


def batch_of(state, b):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (b,) + x.shape), state)


def jitted(search, env, state, key, **settings):
    """``search(env, state, key, **settings)`` compiled (one compile; eagerly, each op would dispatch on its own)."""
    return jax.jit(lambda s, k: search(env, s, k, **settings))(state, key)


def run_sm_mcts(env, keys, **settings):
    state = env.init(jax.random.key(0))
    search = jax.jit(lambda s, k: sim.sm_mcts_batch(env, s, k, **settings))
    return search(batch_of(state, keys.shape[0]), keys)


def test_matching_pennies_average_policy_approaches_one_half():
    # Measured (128 keys, 5,000 simulations, exploration 0.1): largest policy error 0.082, |value| 0.087
    # (at 3,000 simulations: 0.099 over 64 keys, too close to the tolerance).
    out = run_sm_mcts(jaxgames.make("matching_pennies"), jax.random.split(jax.random.key(1), 8),
                      num_simulations=5000, exploration=0.1, rollout_steps=1)
    np.testing.assert_allclose(np.asarray(out.policy), 0.5, atol=0.1)
    np.testing.assert_allclose(np.asarray(out.value), 0.0, atol=0.15)  # the game's value
    assert out.policy.shape == (8, 2, 2) and out.value.shape == (8, 2)


def test_biased_rock_paper_scissors_average_policy_approaches_equilibrium():
    # Equilibrium of A y = 0 for the table of jaxgames.games.matrix (symmetric zero-sum: both players).
    env = jaxgames.make("biased_rock_paper_scissors")
    equilibrium = np.array([1, 10, 5]) / 16
    a = np.asarray(env.payoffs[0])
    np.testing.assert_allclose(a @ equilibrium, 0.0, atol=1e-7)  # every row action earns the value 0
    # Measured (128 keys, 30,000 simulations, exploration 0.1): largest error of one key 0.131, largest
    # error averaged over 8 keys 0.051. Slow because Paper and Scissors differ by only 0.05 against each other.
    out = run_sm_mcts(env, jax.random.split(jax.random.key(2), 8), num_simulations=30000, exploration=0.1, rollout_steps=1)
    policy = np.asarray(out.policy)
    np.testing.assert_allclose(policy, np.broadcast_to(equilibrium, policy.shape), atol=0.2)
    np.testing.assert_allclose(np.abs(policy - equilibrium).mean(axis=0), 0.0, atol=0.08)  # averaged over keys
    np.testing.assert_allclose(np.asarray(out.value), 0.0, atol=0.05)


def test_dominant_strategy_takes_the_average_policy():
    # Prisoner's dilemma: D strictly dominates C, so (D, D) is the unique equilibrium; with exploration
    # 0.1 the played policy keeps 0.05 on C. Measured (128 keys, 5,000 simulations): D's mass >= 0.87.
    out = run_sm_mcts(jaxgames.make("prisoners_dilemma"), jax.random.split(jax.random.key(3), 4),
                      num_simulations=5000, exploration=0.1, rollout_steps=1)
    assert np.all(np.asarray(out.policy)[..., 1] > 0.8), out.policy
    np.testing.assert_array_equal(np.asarray(out.action), 1)


def test_maximin_of_hand_solved_matrix_games():
    # 2x2, row payoffs [[3, 0], [1, 2]]: row minima 0, 1 -> action 1, value 1.
    # Column payoffs [[2, 1], [0, 4]]: column minima 0, 1 -> action 1, value 1.
    env = MatrixGame([[3, 0], [1, 2]], [[2, 1], [0, 4]])
    state = env.init(jax.random.key(0))
    key = jax.random.key(0)
    for player, values in ((0, [0.0, 1.0]), (1, [0.0, 1.0])):
        out = jax.jit(lambda s, k, p=player: sim.maximin(env, s, k, player=p, depth=1))(state, key)
        assert int(out.action) == 1 and float(out.value) == 1.0
        np.testing.assert_array_equal(np.asarray(out.action_values), values)
    # 3x2 zero-sum, row [[4, -1], [2, 1], [0, 3]]: row minima -1, 1, 0 -> action 1, value 1;
    # the column player's minima over rows are -4 and -3 -> action 1, value -3; its padding action 2 is illegal.
    env = MatrixGame(np.array([[4, -1], [2, 1], [0, 3]]), -np.array([[4, -1], [2, 1], [0, 3]]))
    state = env.init(jax.random.key(0))
    row = jitted(sim.maximin, env, state, key, player=0, depth=1)
    assert int(row.action) == 1 and float(row.value) == 1.0
    np.testing.assert_array_equal(np.asarray(row.action_values), [-1.0, 1.0, 0.0])
    col = jitted(sim.maximin, env, state, key, player=1, depth=1)
    assert int(col.action) == 1 and float(col.value) == -3.0
    assert float(col.action_values[2]) == np.finfo(np.float32).min
    # A one-shot game ends after one ply: deeper search adds nothing.
    deep = jitted(sim.maximin, env, state, key, player=0, depth=3)
    assert int(deep.action) == 1 and float(deep.value) == 1.0
    np.testing.assert_array_equal(np.asarray(deep.mean_values), np.asarray(row.mean_values))


def test_mean_values_average_the_answers_and_break_ties_of_the_worst_case():
    # Row payoffs [[-1, -1], [-1, 3], [-2, 9]]: row minima -1, -1, -2 (actions 0 and 1 tie), row means
    # -1, 1, 3.5. At depth 1 every node's own action is a leaf, so mean_values are the row means.
    a = np.array([[-1, -1], [-1, 3], [-2, 9]])
    env = MatrixGame(a, -a)
    state, key = env.init(jax.random.key(0)), jax.random.key(0)
    out = jax.jit(lambda s, k: sim.maximin(env, s, k, player=0, depth=1))(state, key)
    np.testing.assert_array_equal(np.asarray(out.action_values), [-1.0, -1.0, -2.0])
    np.testing.assert_array_equal(np.asarray(out.mean_values), [-1.0, 1.0, 3.5])
    assert int(out.action) == 0  # `action` stays the lowest index among the worst-case ties
    # Best reply with two players: the answers are "nobody deviates" (the default column 1) and each
    # column, so the default column counts twice: (-1 + 3 + 3) / 3 for row 1.
    default = lambda s, k: jnp.array([0, 1], jnp.int32)  # noqa: E731
    br = jitted(sim.maximin, env, state, key, player=0, depth=1, best_reply=True, default_policy=default)
    np.testing.assert_allclose(np.asarray(br.mean_values), [-1.0, 5.0 / 3.0, 16.0 / 3.0], rtol=1e-6)


def test_jit_and_vmap_equal_single_calls():
    env = jaxgames.make("biased_rock_paper_scissors")
    state = env.init(jax.random.key(0))
    keys = jax.random.split(jax.random.key(4), 3)
    settings = dict(num_simulations=64, exploration=0.2, rollout_steps=1)
    batched = jax.jit(lambda s, k: sim.sm_mcts_batch(env, s, k, **settings))(batch_of(state, 3), keys)
    vmapped = jax.vmap(lambda s, k: sim.sm_mcts(env, s, k, **settings))(batch_of(state, 3), keys)
    for i in range(3):
        single = jitted(sim.sm_mcts, env, state, keys[i], **settings)
        np.testing.assert_allclose(np.asarray(batched.policy[i]), np.asarray(single.policy), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(vmapped.value[i]), np.asarray(single.value), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(batched.tree.visits[i]), np.asarray(single.tree.visits))
    assert int(batched.tree.visits[0, 0]) == 64  # every simulation passes through the root
    games = MatrixGame([[3, 0], [1, 2]], [[2, 1], [0, 4]])
    root = games.init(jax.random.key(0))
    many = jax.jit(lambda s, k: sim.maximin_batch(games, s, k, player=0, depth=2))(batch_of(root, 2), keys[:2])
    one = jitted(sim.maximin, games, root, keys[0], player=0, depth=2)
    np.testing.assert_array_equal(np.asarray(many.action), [int(one.action)] * 2)
    np.testing.assert_array_equal(np.asarray(many.action_values[1]), np.asarray(one.action_values))


def test_bad_input_raises_before_any_work():
    env = jaxgames.make("matching_pennies")
    state = env.init(jax.random.key(0))
    key = jax.random.key(0)
    sequential = jaxgames.make("dots_and_boxes")
    seq_state = sequential.init(key)
    with pytest.raises(ValueError, match="sequential"):
        sim.sm_mcts(sequential, seq_state, key, num_simulations=4)
    with pytest.raises(ValueError, match="sequential"):
        sim.maximin(sequential, seq_state, key, player=0, depth=1)
    with pytest.raises(ValueError, match=r"current_player must be SIMULTANEOUS \(-2\); got \[0\]"):
        sim.sm_mcts(env, state.replace(current_player=jnp.int32(0)), key, num_simulations=4)
    for player in (2, -1):
        with pytest.raises(ValueError, match=rf"player must be in \[0, 2\); got {player}"):
            sim.maximin(env, state, key, player=player, depth=1)
    with pytest.raises(TypeError, match="player must be an int"):
        sim.maximin(env, state, key, player=0.0, depth=1)
    for bad in (0, -3):
        with pytest.raises(ValueError, match=rf"num_simulations must be >= 1; got {bad}"):
            sim.sm_mcts(env, state, key, num_simulations=bad)
        with pytest.raises(ValueError, match=rf"depth must be >= 1; got {bad}"):
            sim.maximin(env, state, key, player=0, depth=bad)
    with pytest.raises(ValueError, match="leaf_batch must be >= 1; got 0"):
        sim.maximin(env, state, key, player=0, depth=1, leaf_batch=0)
    with pytest.raises(TypeError, match="num_simulations must be an int; got 2.5"):
        sim.sm_mcts(env, state, key, num_simulations=2.5)
    for bad in (float("nan"), float("inf"), -0.1, 1.5):
        with pytest.raises(ValueError, match=f"exploration must be finite and in \\[0, 1\\]; got {bad}"):
            sim.sm_mcts(env, state, key, num_simulations=4, exploration=bad)
        with pytest.raises(ValueError, match="exploration"):
            sim.sm_mcts_batch(env, batch_of(state, 2), jax.random.split(key, 2), num_simulations=4, exploration=bad)
    with pytest.raises(ValueError, match=r"one unbatched state; got legal_action_mask of shape \(2, 2, 2\)"):
        sim.sm_mcts(env, batch_of(state, 2), key, num_simulations=4)
    snakes = jaxgames.make("battlesnake", board_size=7, num_snakes=4)
    with pytest.raises(ValueError, match=r"would step 4,311,810,304 states"):  # 256 + 256**2 + 256**3 + 256**4
        sim.maximin(snakes, None, key, player=0, depth=4)  # refused before the state is even looked at


@pytest.mark.parametrize("num_snakes", [1, 2, 4])
def test_battlesnake_search_gives_legal_moves_under_jit(num_snakes):
    env = jaxgames.make("battlesnake", board_size=7, num_snakes=num_snakes)
    keys = jax.random.split(jax.random.key(num_snakes), 2)
    states = jax.vmap(env.init)(keys)
    out = jax.jit(lambda s, k: sim.sm_mcts_batch(env, s, k, num_simulations=24, rollout_steps=4))(states, keys)
    mask = np.asarray(states.legal_action_mask)
    alive = np.asarray(states.board.alive)
    action = np.asarray(out.action)
    assert action.shape == (2, num_snakes)
    for b in range(2):
        for s in range(num_snakes):
            if alive[b, s]:
                assert mask[b, s, action[b, s]], (b, s, action[b, s])
    np.testing.assert_allclose(np.asarray(out.policy).sum(-1), 1.0, rtol=1e-5)
    assert np.all(np.asarray(out.policy)[~mask] == 0.0)
    if num_snakes <= 2:
        best = jax.jit(lambda s, k: sim.maximin(env, s, k, player=0, depth=1, rollout_steps=2))(
            jax.tree.map(lambda x: x[0], states), keys[0]
        )
        assert mask[0, 0, int(best.action)]
    assert int(np.asarray(states.current_player)[0]) == SIMULTANEOUS


def test_node_table_lookup_equals_dense_child_table(monkeypatch):
    # Above DENSE_CHILDREN_LIMIT (8 snakes: 65,536 joint actions) children are found by scanning the
    # node table; with the same keys both lookups must grow the same tree.
    env = jaxgames.make("biased_rock_paper_scissors")
    state, key = env.init(jax.random.key(0)), jax.random.key(5)
    dense = jitted(sim.sm_mcts, env, state, key, num_simulations=200, rollout_steps=1)
    monkeypatch.setattr(sim, "DENSE_CHILDREN_LIMIT", 0)
    table = jitted(sim.sm_mcts, env, state, key, num_simulations=200, rollout_steps=1)
    assert dense.tree.children.shape == (201, 9) and table.tree.children.shape == (1, 1)
    assert int(dense.tree.num_nodes) == 10  # the root and its 9 joint actions
    np.testing.assert_array_equal(np.asarray(table.tree.parent), np.asarray(dense.tree.parent))
    np.testing.assert_array_equal(np.asarray(table.tree.visits), np.asarray(dense.tree.visits))
    np.testing.assert_allclose(np.asarray(table.policy), np.asarray(dense.policy), rtol=1e-6)


def test_maximin_branching_enumerates_only_the_candidates():
    # Zero-sum 3x3, row payoffs [[1, -2, 4], [3, 0, -1], [2, 5, -3]]: row minima -2, -1, -3 -> action 1, value -1.
    # Candidates drop the column player's action 2: row minima over columns 0-1 are -2, 0, 2 -> action 2, value 2.
    # branching=2 keeps the row player's first two actions: over columns 0-1 the minima are -2, 0 -> action 1.
    a = np.array([[1, -2, 4], [3, 0, -1], [2, 5, -3]])
    env = MatrixGame(a, -a)
    state, key = env.init(jax.random.key(0)), jax.random.key(0)
    fmin = np.finfo(np.float32).min
    plain = jitted(sim.maximin, env, state, key, player=0, depth=1)
    assert int(plain.action) == 1 and float(plain.value) == -1.0
    full = jitted(sim.maximin, env, state, key, player=0, depth=1, branching=3)  # every action: the same values
    np.testing.assert_array_equal(np.asarray(full.action_values), np.asarray(plain.action_values))
    no_col2 = lambda s: jnp.array([[True, True, True], [True, True, False]])  # noqa: E731
    out = jax.jit(lambda s, k: sim.maximin(env, s, k, player=0, depth=1, candidates=no_col2))(state, key)
    np.testing.assert_array_equal(np.asarray(out.action_values), [-2.0, 0.0, 2.0])
    assert int(out.action) == 2 and float(out.value) == 2.0
    # States stepped: all 3 x 3 codes at once; in batches of 4, only the 3 x 2 codes of candidates, which fill 2 batches.
    assert int(plain.num_steps) == 9 and int(out.num_steps) == 9
    batched = jax.jit(lambda s, k: sim.maximin(env, s, k, player=0, depth=1, candidates=no_col2, leaf_batch=4))(state, key)
    np.testing.assert_array_equal(np.asarray(batched.action_values), [-2.0, 0.0, 2.0])
    assert int(batched.num_steps) == 8
    two = jitted(sim.maximin, env, state, key, player=0, depth=1, branching=2, candidates=no_col2)
    np.testing.assert_array_equal(np.asarray(two.action_values), [-2.0, 0.0, fmin])
    # A player with no candidate falls back to its legal actions: all three columns, the plain values.
    none_for_col = lambda s: jnp.array([[True, True, True], [False, False, False]])  # noqa: E731
    back = jitted(sim.maximin, env, state, key, player=0, depth=1, candidates=none_for_col)
    np.testing.assert_array_equal(np.asarray(back.action_values), np.asarray(plain.action_values))
    # The count of stepped states follows branching: (2 ** 2) + (2 ** 2) ** 2 = 20 at depth 2.
    assert sim.check_maximin_settings(env, player=0, depth=2, branching=2) == 20
    with pytest.raises(ValueError, match="branching must be at most num_actions=3; got 4"):
        sim.maximin(env, state, key, player=0, depth=1, branching=4)
    with pytest.raises(ValueError, match="branching must be >= 1; got 0"):
        sim.maximin(env, state, key, player=0, depth=1, branching=0)
    with pytest.raises(TypeError, match="candidates must be callable"):
        sim.maximin(env, state, key, player=0, depth=1, candidates=np.ones((2, 3), bool))


def test_best_reply_with_two_players_is_paranoid_and_counts_its_states():
    # Two players: the one opponent either keeps its default action or answers with any of its
    # actions, so the minimum over replies is the paranoid minimum (row minima -2, -1, -3 -> action 1).
    a = np.array([[1, -2, 4], [3, 0, -1], [2, 5, -3]])
    env = MatrixGame(a, -a)
    state, key = env.init(jax.random.key(0)), jax.random.key(0)
    default = lambda s, k: jnp.array([0, 2], jnp.int32)  # noqa: E731
    out = jax.jit(lambda s, k: sim.maximin(env, s, k, player=0, depth=1, best_reply=True,
                                           default_policy=default))(state, key)
    np.testing.assert_array_equal(np.asarray(out.action_values), [-2.0, -1.0, -3.0])
    col = jitted(sim.maximin, env, state, key, player=1, depth=1, best_reply=True, default_policy=default)
    np.testing.assert_array_equal(np.asarray(col.action_values), -a.max(axis=0).astype(np.float32))
    # K + K (M - 1) K joint actions a node: 3 + 3 * 1 * 3 = 12; 12 + 12 ** 2 = 156 states at depth 2.
    assert sim.check_maximin_settings(env, player=0, depth=2, best_reply=True, default_policy=default) == 156
    with pytest.raises(ValueError, match="best_reply needs a default_policy"):
        sim.maximin(env, state, key, player=0, depth=1, best_reply=True)


def test_leaf_batches_run_only_for_real_children():
    # The column player's default is action 0, so the repeats are the codes (o, 0) of its deviations and the last
    # of the 12 codes, (2, 2), is real: 9 real children, valued one at a time (leaf_batch=1). The batches after
    # the real ones are skipped even though the last code is real (each evaluation is counted on the host).
    a = np.array([[1, -2, 4], [3, 0, -1], [2, 5, -3]])
    env = MatrixGame(a, -a)
    state, key = env.init(jax.random.key(0)), jax.random.key(0)
    calls = []

    def evaluate(s, k):
        jax.debug.callback(lambda: calls.append(1))
        return jnp.zeros(2, jnp.float32)

    out = jitted(sim.maximin, env, state, key, player=0, depth=1, best_reply=True, evaluate=evaluate,
                 default_policy=lambda s, k: jnp.array([0, 0], jnp.int32), leaf_batch=1)
    jax.block_until_ready(out)
    jax.effects_barrier()
    assert int(out.num_steps) == 9 and len(calls) == 9


def test_best_reply_steps_a_repeated_answer_once():
    # The column player's default is action 2: its deviation onto action 2 repeats nobody deviating, so of the
    # 3 + 3 * 3 = 12 codes a node, 9 differ. One at a time (leaf_batch=1) the search steps 9 states at depth 1 and
    # 9 + 9 * 9 = 90 at depth 2 (the game ends after one step; a finished state steps as a no-op), not 12 and 156.
    # The mean still counts the repeat: row 0's answers 4 (nobody), 1, -2, 4 average 7/4; rows 1, 2: 1/4.
    a = np.array([[1, -2, 4], [3, 0, -1], [2, 5, -3]])
    env = MatrixGame(a, -a)
    state, key = env.init(jax.random.key(0)), jax.random.key(0)
    default = lambda s, k: jnp.array([0, 2], jnp.int32)  # noqa: E731
    for depth, steps in ((1, 9), (2, 90)):
        every = jitted(sim.maximin, env, state, key, player=0, depth=depth, best_reply=True, default_policy=default)
        once = jitted(sim.maximin, env, state, key, player=0, depth=depth, best_reply=True, default_policy=default,
                      leaf_batch=1)
        assert int(every.num_steps) == [12, 156][depth - 1] and int(once.num_steps) == steps
        for out in (every, once):
            np.testing.assert_array_equal(np.asarray(out.action_values), [-2.0, -1.0, -3.0])
            np.testing.assert_allclose(np.asarray(out.mean_values), [7 / 4, 1 / 4, 1 / 4], rtol=1e-6)


def test_alphabeta_best_reply_solves_a_matrix_game_and_means_its_answers_once():
    # Zero-sum, row payoffs [[4, -1], [2, 1], [0, 3]]: row minima -1, 1, 0 -> action 1, value 1; a one-shot game
    # ends after one ply, so depth 3 gives the same. The column player's default is column 1; its deviation onto
    # column 1 repeats "nobody deviates" and is counted once: the one-ply means are (-1 + 4) / 2, (1 + 2) / 2,
    # (3 + 0) / 2.
    a = np.array([[4, -1], [2, 1], [0, 3]])
    env = MatrixGame(a, -a)
    state, key = env.init(jax.random.key(0)), jax.random.key(0)
    default = lambda s, k: jnp.array([0, 1], jnp.int32)  # noqa: E731
    for depth in (1, 3):
        out = jax.jit(lambda s, k, d=depth: sim.best_reply_alphabeta(
            env, s, k, player=0, depth=d, evaluate=lambda st, kk: jnp.zeros(2), searched=jnp.arange(2),
            default_policy=default))(state, key)
        assert int(out.action) == 1 and float(out.value) == 1.0
        np.testing.assert_array_equal(np.asarray(out.action_values), [-1.0, 1.0, 0.0])
        np.testing.assert_allclose(np.asarray(out.mean_values), [1.5, 1.5, 1.5])
    # vmapped over two roots: the single call's values (the loop's expansions then run as selects).
    many = jax.jit(jax.vmap(lambda s, k: sim.best_reply_alphabeta(
        env, s, k, player=0, depth=2, evaluate=lambda st, kk: jnp.zeros(2), searched=jnp.arange(2),
        default_policy=default)))(batch_of(state, 2), jax.random.split(key, 2))
    np.testing.assert_array_equal(np.asarray(many.action_values), [[-1.0, 1.0, 0.0]] * 2)
    sequential = jaxgames.make("dots_and_boxes")
    with pytest.raises(ValueError, match="sequential"):
        sim.best_reply_alphabeta(sequential, sequential.init(key), key, player=0, depth=1,
                                 evaluate=lambda st, kk: jnp.zeros(2), searched=jnp.arange(2), default_policy=default)
    with pytest.raises(ValueError, match=r"depth must be >= 1; got 0"):
        sim.best_reply_alphabeta(env, state, key, player=0, depth=0, evaluate=lambda st, kk: jnp.zeros(2),
                                 searched=jnp.arange(2), default_policy=default)
