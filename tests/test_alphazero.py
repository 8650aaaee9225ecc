"""AlphaZero for Dots-and-Boxes: network, network-guided search, learner, agent (issue 12).

Expected values come from outside the code under test:

* Search. 1x2 board (h(0,0)=0, h(0,1)=1, h(1,0)=2, h(1,1)=3, v(0,0)=4,
  v(0,1)=5, v(0,2)=6; box 0 = {0, 2, 4, 5}, box 1 = {1, 3, 5, 6}) with only
  edges 0 and 5 undrawn: 5 completes box 1 and gives box 0 its third side,
  so the mover takes both (+1 outcome); 0 hands both boxes over (-1).
  1x5 board (h(0,c)=c, h(1,c)=5+c, v(0,c)=10+c) with edges 1, 2, 4, 11,
  13, 14 undrawn: boxes 0-1 are a two-chain opened at box 0 (box 0 has
  three sides, box 1 two), boxes 2-4 a closed three-chain. Capturing (11,
  then 1) keeps the turn and forces the mover to open the three-chain: net
  2 - 3 = -1. Declining with 1 (a hard-hearted handout) gives the opponent
  two boxes and the obligation to open the chain: net 3 - 2 = +1. Every
  move in the three-chain hands it over first: 0 - 3 - 2 = -5. A search
  that passed the turn after a capture (discount -1) would score 11 at
  1 - (-2) = +3 and play it. The retrograde solver agrees (checked below).
* Self-play targets. On 1x1 nobody completes the box before the fourth
  edge, so the turns alternate P0, P1, P0, P1 and P1 always wins 1-0: the
  margin value target is +1 in P1's positions and -1 in P0's.
* Symmetry: the solver's move values (`tests/reference`'s independent
  minimax) of a transformed position are the transformed move values.
* Replay buffer: a plain Python ring (write at a pointer, advance it mod capacity).
* Losses (AlphaZero, Silver et al. 2018): the policy cross-entropy
  ``-sum_a pi(a) log softmax(logits)(a)`` over the legal moves and the value
  squared error ``(v - z)^2``, both batch means, recomputed in numpy from the
  network's outputs; with all-zero parameters the policy is uniform over the
  ``n`` legal moves and the value 0, so the losses are ``mean log n`` and
  ``mean z^2``.
* Shipped weights against the random agent: if they were no better than it,
  the wins of 40 games would be Binomial(40, 1/2) or worse (3x3 has 9 boxes,
  no draws); 35 wins or more has probability below 1e-6 under that.
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import binomtest

from jaxgames import experiment
from jaxgames.agents import alphazero as agent_lib
from jaxgames.agents.alphazero import AlphaZeroAgent
from jaxgames.agents.simple import RandomAgent
from jaxgames.evaluation import arena
from jaxgames.experiment import ConfigMismatch
from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.games.dots_and_boxes import symmetry
from jaxgames.games.dots_and_boxes.search import solver
from jaxgames.learners import alphazero as az
from jaxgames.learners import buffer as replay
from jaxgames.learners import loop
from jaxgames.networks import dots_and_boxes as nets
from jaxgames.networks.dots_and_boxes import NetworkConfig
from jaxgames.search import mcts
from tests.experiment_helpers import load_experiment
from tests.reference.dots_and_boxes_reference import reference_solver

TINY_NET = NetworkConfig(channels=8, num_blocks=1, value_channels=4, value_hidden=8)

# One tiny learner config shared by the tests that train (compiled once per config value).
TINY = az.AlphaZeroConfig(
    board_sizes=((1, 1), (1, 2)),
    network=TINY_NET,
    num_envs=4,
    num_simulations=4,
    max_num_considered_actions=4,
    buffer_capacity=64,
    batch_size=8,
    updates_per_iteration=2,
)


def stack(*states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def dbn_of(num_edges, drawn):
    return "".join("1" if e in drawn else "0" for e in range(num_edges))


# ----------------------------------------------------------------------------- network
def test_one_parameter_set_plays_every_board_size():
    params = nets.init_params(TINY_NET, jax.random.key(0))
    sizes = [(2, 2), (3, 3), (5, 5), (7, 7)]
    envs = [DotsAndBoxes(R, C) for R, C in sizes]
    # One compiled program applies the same parameters to every size (one compile, not five).
    outputs = jax.jit(
        lambda p: [nets.PolicyValueNet(TINY_NET).apply(p, jax.vmap(e.init)(jax.random.split(jax.random.key(1), 3)).observation) for e in envs]
    )(params)
    for (R, C), (logits, value) in zip(sizes, outputs):
        assert logits.shape == (3, (R + 1) * C + R * (C + 1))
        assert value.shape == (3,)
        assert np.all(np.isfinite(logits)) and np.all(np.abs(value) <= 1.0)


def test_features_by_hand_on_1x1():
    """1x1, edges h(0,0)=0 and v(0,1)=3 drawn: the box has two sides; masks mark the real cells."""
    env = DotsAndBoxes(1, 1)
    f = np.asarray(jax.jit(nets.features)(env.from_dbn("1001").observation))
    assert f.shape == (2, 2, nets.NUM_FEATURES)
    np.testing.assert_array_equal(f[..., 0], [[1, 0], [0, 0]])  # h(0,0) drawn, h(1,0) not
    np.testing.assert_array_equal(f[..., 1], [[0, 1], [0, 0]])  # v(0,1) drawn
    assert f[0, 0, 4] == 0.5 and f[0, 0, 6] == 1.0 and f[0, 0, 5] == 0.0  # two sides of four
    np.testing.assert_array_equal(f[..., 7], [[1, 0], [1, 0]])  # cells holding a horizontal edge
    np.testing.assert_array_equal(f[..., 8], [[1, 1], [0, 0]])  # ... a vertical edge
    np.testing.assert_array_equal(f[..., 9], [[1, 0], [0, 0]])  # ... a box
    np.testing.assert_array_equal(f[..., 11], 1.0)  # the one box is still open


# ----------------------------------------------------------------------------- search
def zero_evaluate(num_actions):
    """Uniform prior, value 0: the search knows only the rules and the terminal rewards."""

    def evaluate(params, states):
        B = states.current_player.shape[0]
        return jnp.zeros((B, num_actions)), jnp.zeros((B,))

    return evaluate


def test_global_pool_by_hand():
    # One channel [[1, 3], [3, 2]]: mean 9 / 4, max 3. The max's gradient goes to its first cell (row 0,
    # column 1) alone, where jnp.max's would split it between the two cells equal to 3.
    x = jnp.asarray([[1.0, 3.0], [3.0, 2.0]], jnp.float32)[None, :, :, None]
    np.testing.assert_array_equal(np.asarray(nets.global_pool(x)), [[2.25, 3.0]])
    grad = jax.jit(jax.grad(lambda x: nets.global_pool(x)[0, 1]))(x)
    np.testing.assert_array_equal(np.asarray(grad)[0, :, :, 0], [[0.0, 1.0], [0.0, 0.0]])
    batch = jnp.stack([x[0], -x[0]])  # a batch of two: each row pooled alone
    np.testing.assert_array_equal(np.asarray(jax.jit(nets.global_pool)(batch)), [[2.25, 3.0], [-2.25, -1.0]])


def test_search_finds_the_one_move_win():
    """Gumbel search here; PUCT (``algorithm="muzero"``) through the agent in `test_agent_...`."""
    env = DotsAndBoxes(1, 2)
    state = env.from_dbn(dbn_of(7, {1, 2, 3, 4, 6}))
    out = jax.jit(
        lambda s, k: mcts.network_search(
            env, s, k, evaluate=zero_evaluate(7), params=None, num_simulations=8, algorithm="gumbel", gumbel_scale=0.0
        )
    )(stack(state, state), jax.random.key(0))
    assert np.asarray(out.action).tolist() == [5, 5]
    q = np.asarray(out.search_tree.summary().qvalues)
    assert np.all(q[:, 5] > 0) and np.all(q[:, 0] < 0)  # the win for the mover, the loss
    w = np.asarray(out.action_weights)
    assert np.all(w[:, [1, 2, 3, 4, 6]] == 0)  # drawn edges: masked at the root


def test_search_extra_turn_decides_with_an_exact_value():
    """With exact leaf values, one visit per root move gives each move's exact value (module docstring)."""
    env = DotsAndBoxes(1, 5, utility_margin=True)
    undrawn = {1, 2, 4, 11, 13, 14}
    dbn = dbn_of(16, set(range(16)) - undrawn)
    sol = solver.solve(1, 5)
    expected = {1: 1, 11: -1, 2: -5, 4: -5, 13: -5, 14: -5}
    assert {e: int(v) for e, v in enumerate(sol.action_values(dbn)) if e in undrawn} == expected
    masks = jnp.asarray(solver._tables(1, 5).edge_box_masks)
    table = jnp.asarray(sol.values)

    def exact(params, states):  # final margin for the mover: boxes so far + exact value still to win
        s = jax.vmap(lambda e: jnp.sum(jnp.where(e, 1 << jnp.arange(16), 0)))(states.board.edges)
        av = solver.child_values(masks, table, s)
        rest = jnp.max(jnp.where(av == solver.ILLEGAL, -99, av), axis=-1)
        p = states.current_player
        sc = states.board.scores
        mine = jnp.take_along_axis(sc, p[:, None], 1)[:, 0] - jnp.take_along_axis(sc, 1 - p[:, None], 1)[:, 0]
        value = jnp.where(states.terminated, 0, mine + rest).astype(jnp.float32)
        return jnp.zeros((p.shape[0], 16)), value

    state = env.from_dbn(dbn)
    out = jax.jit(
        lambda s, k: mcts.network_search(
            env, s, k, evaluate=exact, params=None, num_simulations=6, algorithm="gumbel", gumbel_scale=0.0
        )
    )(stack(state), jax.random.key(0))
    summary = out.search_tree.summary()
    q = np.asarray(summary.qvalues[0])
    visits = np.asarray(summary.visit_counts[0])
    assert set(np.flatnonzero(visits)) == undrawn
    assert {e: float(q[e]) for e in undrawn} == {e: float(v) for e, v in expected.items()}
    assert int(out.action[0]) == 1


def test_search_settings_are_checked_before_tracing():
    env = DotsAndBoxes(1, 1)
    with pytest.raises(ValueError, match="num_simulations must be a positive int; got 0"):
        mcts.network_search(env, stack(env.init(jax.random.key(0))), jax.random.key(0), evaluate=zero_evaluate(4), params=None, num_simulations=0)
    with pytest.raises(ValueError, match="'alphabeta'"):
        mcts.network_search(env, stack(env.init(jax.random.key(0))), jax.random.key(0), evaluate=zero_evaluate(4), params=None, num_simulations=2, algorithm="alphabeta")


# ----------------------------------------------------------------------------- replay buffer
def test_replay_buffer_is_a_ring():
    cap = 5
    buf = replay.buffer_init(jnp.int32(0), cap)
    ref, ptr, size = [0] * cap, 0, 0
    add = jax.jit(replay.buffer_add)
    for items, valid in [
        (np.arange(3), None),
        (np.arange(3, 7), np.array([True, False, True, True])),
        (np.arange(10, 18), None),
    ]:
        buf = add(buf, jnp.asarray(items, jnp.int32), None if valid is None else jnp.asarray(valid))
        for x, v in zip(items, np.ones(len(items), bool) if valid is None else valid):
            if v:
                ref[ptr] = int(x)
                ptr, size = (ptr + 1) % cap, min(size + 1, cap)
        assert np.asarray(buf.data).tolist() == ref
        assert int(buf.insert) == ptr and int(buf.size) == size
    assert ref == [14, 15, 16, 17, 13]  # by hand: the last five, the oldest (13) next to go
    small = add(replay.buffer_init(jnp.int32(0), cap), jnp.asarray([7, 8], jnp.int32))
    drawn = np.asarray(replay.buffer_sample(small, jax.random.key(0), 64))
    assert set(drawn.tolist()) == {7, 8}  # only the items held, never the empty slots


# ----------------------------------------------------------------------------- symmetry augmentation
@pytest.mark.parametrize("size", [(2, 2), (1, 3)])
def test_augmentation_moves_board_and_policy_together(size):
    """The transformed position's exact move values are the transformed move values."""
    ref, E = reference_solver(*size)
    env = DotsAndBoxes(*size)
    rng = np.random.default_rng(0)
    drawn = set(rng.choice(E, size=E // 3, replace=False).tolist())
    state = env.from_dbn(dbn_of(E, drawn))

    def move_values(edges):
        d = frozenset(np.flatnonzero(np.asarray(edges)).tolist())
        out = np.full(E, -100.0)
        for e in set(range(E)) - d:
            child = d | {e}
            g = sum(1 for b in ref.boxes if e in b and b <= child)
            out[e] = g + ref(child) if g else -ref(child)
        return out

    values = move_values(state.board.edges)
    policy = np.where(values > -100, np.exp(values - values.max()), 0.0)
    policy /= policy.sum()
    sym = symmetry.symmetries(*size)
    G = len(sym.names)
    samples = az.Sample(
        board=stack(*[state.board] * G), policy=jnp.asarray(np.stack([policy] * G), jnp.float32), value=jnp.zeros(G)
    )
    out, obs = jax.jit(
        lambda s: (lambda o: (o, az.sample_observations(TINY, size, o)))(az.augment(size, s, jnp.arange(G, dtype=jnp.int32)))
    )(samples)
    best = np.flatnonzero(policy == policy.max())
    for g in range(G):
        new_values = move_values(out.board.edges[g])
        expected = np.where(new_values > -100, np.exp(new_values - new_values.max()), 0.0)
        np.testing.assert_allclose(np.asarray(out.policy[g]), expected / expected.sum(), rtol=1e-5, atol=1e-7)
        new_best = np.flatnonzero(np.asarray(out.policy[g]) == np.asarray(out.policy[g]).max())
        assert set(new_best.tolist()) == set(np.asarray(symmetry.transform_action(sym, jnp.asarray(best), g)).tolist())
        # The network input is the observation of the transformed position.
        direct = symmetry.transform_state(env, state, g).observation
        np.testing.assert_array_equal(np.asarray(obs[g]), np.asarray(direct))
    assert len({tuple(np.asarray(b)) for b in out.board.edges}) > 1  # the images differ


# ----------------------------------------------------------------------------- learner
def test_selfplay_value_targets_on_1x1_are_closed_form():
    """1x1: P1 always takes the box (module docstring), so value targets are +1 for P1, -1 for P0."""
    state = az.init_state(TINY, jax.random.key(0))
    play = az.compiled(TINY).selfplay[0]
    env_states, buf, stats = play(state.params, state.env_states[0], state.buffers[0], jax.random.key(1))
    n = int(buf.size)
    assert n == 4 * 4 and float(stats["games"]) == 4  # 4 games of 4 moves
    player = np.asarray(buf.data.board.player[:n])
    np.testing.assert_array_equal(np.asarray(buf.data.value[:n]), np.where(player == 1, 1.0, -1.0))
    policy = np.asarray(buf.data.policy[:n])
    np.testing.assert_allclose(policy.sum(axis=1), 1.0, rtol=1e-5)
    assert np.all(policy[np.asarray(buf.data.board.edges[:n])] == 0)  # no mass on drawn edges
    assert np.all(np.asarray(env_states.step_count) == 0)  # every slot restarted


def _train(config, directory, num_iterations, seed=3, **kwargs):
    return loop.train(az.AlphaZeroLearner(config), num_iterations=num_iterations, key=jax.random.key(seed),
                      checkpoint_dir=directory, **kwargs)


def test_resumed_run_equals_a_straight_run(tmp_path):
    straight = _train(TINY, tmp_path / "a", 3)
    first = _train(TINY, tmp_path / "b", 1)
    assert first.resumed_from == 0 and int(first.state.iteration) == 1
    resumed = _train(TINY, tmp_path / "b", 3)
    assert resumed.resumed_from == 1
    for a, b in zip(jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [h["loss"] for h in straight.history] == [h["loss"] for h in resumed.history]
    # A checkpoint of another config or key is refused, naming the difference, and left untouched.
    other = dataclasses.replace(TINY, network=NetworkConfig(channels=4, num_blocks=1, value_channels=4, value_hidden=8))
    before = sorted(p.name for p in (tmp_path / "b").iterdir())
    with pytest.raises(ConfigMismatch, match="network.channels: 8 in the folder, 4 in this run"):
        _train(other, tmp_path / "b", 4)
    with pytest.raises(ConfigMismatch, match="key: "):
        _train(TINY, tmp_path / "b", 4, seed=4)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == before


def _batch_1x2():
    """Four 1x2 positions (3, 2, 5 and 0 of 7 edges drawn), random legal policy targets and values in [-1, 1]."""
    env = DotsAndBoxes(1, 2)
    states = stack(*[env.from_dbn(dbn_of(7, d)) for d in ({0, 3, 6}, {1, 4}, {0, 1, 2, 4, 6}, set())])
    rng = np.random.default_rng(7)
    legal = ~np.asarray(states.board.edges)
    policy = np.where(legal, rng.random(legal.shape), 0.0)
    policy /= policy.sum(-1, keepdims=True)
    value = rng.uniform(-1, 1, len(legal))
    samples = az.Sample(board=states.board, policy=jnp.asarray(policy, jnp.float32), value=jnp.asarray(value, jnp.float32))
    return states, samples, legal, policy, value


def test_losses_by_hand_on_a_fixed_batch():
    """Cross-entropy and squared error recomputed in numpy (module docstring), and in closed form at zero parameters."""
    states, samples, legal, policy, value = _batch_1x2()
    params = nets.init_params(TINY_NET, jax.random.key(5))
    zeros = jax.tree.map(jnp.zeros_like, params)
    got, got_zero = jax.jit(lambda p, z, s: (az.losses(TINY, p, (1, 2), s), az.losses(TINY, z, (1, 2), s)))(params, zeros, samples)
    logits, v = nets.PolicyValueNet(TINY_NET).apply(params, states.observation)
    logits, v = np.asarray(logits, np.float64), np.asarray(v, np.float64)
    masked = np.where(legal, logits, -np.inf)
    logp = masked - masked.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    policy_loss = -np.mean([np.sum(policy[i][legal[i]] * logp[i][legal[i]]) for i in range(len(policy))])
    np.testing.assert_allclose(float(got["policy_loss"]), policy_loss, rtol=1e-5)
    np.testing.assert_allclose(float(got["value_loss"]), np.mean((v - value) ** 2), rtol=1e-5)
    np.testing.assert_allclose(float(got_zero["policy_loss"]), np.mean(np.log(legal.sum(-1))), rtol=1e-6)
    np.testing.assert_allclose(float(got_zero["value_loss"]), np.mean(value ** 2), rtol=1e-6)


def test_updates_lower_the_loss_on_a_fixed_batch():
    """Ten update steps on the positions of one self-play call: the loss on those positions falls every step
    (a flipped sign anywhere in the loss or the step would make it rise)."""
    state = az.init_state(TINY, jax.random.key(0))
    fns = az.compiled(TINY)  # the compiled self-play and update the other tests use
    buffers = tuple(fns.selfplay[i](state.params, state.env_states[i], state.buffers[i], jax.random.key(1 + i))[1]
                    for i in range(len(TINY.board_sizes)))
    held = [jax.tree.map(lambda x: x[:int(b.size)], b.data) for b in buffers]

    @jax.jit
    def fixed_loss(params):
        total = 0.0
        for size, batch in zip(TINY.board_sizes, held):
            m = az.losses(TINY, params, size, batch)
            total = total + m["policy_loss"] + TINY.value_loss_weight * m["value_loss"]
        return total

    params, opt_state = state.params, state.opt_state
    seen = [float(fixed_loss(params))]
    for k in jax.random.split(jax.random.key(2), 10):
        params, opt_state, _ = fns.update_step(params, opt_state, buffers, k)
        seen.append(float(fixed_loss(params)))
    assert all(b < a for a, b in zip(seen, seen[1:])), seen
    assert seen[-1] < 0.95 * seen[0]


def test_a_non_finite_loss_stops_the_run(tmp_path):
    """NaN parameters (e.g. a corrupted fine-tune start) give NaN losses: the driver stops at iteration 1."""
    learner = az.AlphaZeroLearner(TINY)
    nan_params = jax.tree.map(lambda x: jnp.full_like(x, jnp.nan), nets.init_params(TINY_NET, jax.random.key(0)))
    with pytest.raises(loop.NonFiniteLoss, match="iteration 1: non-finite loss"):
        loop.train(learner, num_iterations=2, key=jax.random.key(3), checkpoint_dir=tmp_path,
                   initial_state=lambda s: s.replace(params=nan_params, best_params=nan_params))
    assert not any(p.name.isdigit() for p in tmp_path.iterdir())  # no checkpoint of the NaN state


# ----------------------------------------------------------------------------- agent and bad input
def test_agent_plays_any_board_and_loads_weights(tmp_path):
    params = nets.init_params(TINY_NET, jax.random.key(0))
    agent_lib.save_weights(tmp_path, params, network=TINY_NET, value_target="margin", trained=False, command="test")
    with pytest.warns(UserWarning, match="untrained"):
        agent = AlphaZeroAgent.from_weights(tmp_path, num_simulations=8, algorithm="muzero")
    assert agent.name == "alphazero-untrained"
    env = DotsAndBoxes(1, 2)
    state = env.from_dbn(dbn_of(7, {1, 2, 3, 4, 6}))
    acts, _ = agent.act_batch(env, stack(state, state), jax.random.key(0), np.zeros(2, np.int32), np.ones(2, bool))
    assert acts.tolist() == [5, 5]  # the one-move win: 8 simulations reach its terminal rewards
    raw = AlphaZeroAgent(params, network=TINY_NET, search=False)
    env = DotsAndBoxes(3, 4)  # a board it was never built for: the same parameters play it
    s = env.from_dbn("1" * (env.num_actions - 2) + "00")  # two edges left: the last two
    acts, _ = raw.act_batch(env, stack(s), jax.random.key(1), np.zeros(1, np.int32), np.ones(1, bool))
    assert acts[0] in (env.num_actions - 2, env.num_actions - 1)
    # Weights of another shape: refused, naming the file and the leaf.
    meta = json.loads((tmp_path / "metadata.json").read_text())
    meta["network"]["channels"] = 16
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="params.msgpack.*shape"):
        agent_lib.load_weights(tmp_path)


def test_bad_inputs_raise_clear_errors():
    params = nets.init_params(TINY_NET, jax.random.key(0))
    with pytest.raises(ValueError, match="num_simulations must be a positive int; got 0"):
        AlphaZeroAgent(params, network=TINY_NET, num_simulations=0)
    with pytest.raises(ValueError, match="time_budget must be positive seconds or None; got 0"):
        AlphaZeroAgent(params, network=TINY_NET, time_budget=0)
    with pytest.raises(ValueError, match="do not fit the network"):
        AlphaZeroAgent(params, network=NetworkConfig(channels=16, num_blocks=1, value_channels=4, value_hidden=8))
    with pytest.raises(ValueError, match="dots_and_boxes"):
        import jaxgames

        AlphaZeroAgent(params, network=TINY_NET).batched_policy(jaxgames.make("matrix_pd"))
    with pytest.raises(ValueError, match="channels must be a positive int; got 0"):
        NetworkConfig(channels=0)
    with pytest.raises(ValueError, match=r"board_sizes: num_rows must be in \[1, 15\]; got 0"):
        az.AlphaZeroConfig(board_sizes=((0, 2),))
    with pytest.raises(ValueError, match="value_target"):
        az.AlphaZeroConfig(value_target="score")
    with pytest.raises(ValueError, match=r"num_simulations must be an int in \[1, inf\]; got -1"):
        az.AlphaZeroConfig(num_simulations=-1)
    with pytest.raises(TypeError, match="config must be an AlphaZeroConfig"):
        az.AlphaZeroLearner({"num_envs": 4})
    assert az.AlphaZeroConfig() == az.AlphaZeroConfig(board_sizes=((2, 2), (3, 3)), network=NetworkConfig(), value_target="margin")


@pytest.mark.parametrize("field, value", [
    ("learning_rate", float("inf")), ("learning_rate", 1e300), ("learning_rate", 0.0), ("weight_decay", float("nan")),
    ("value_loss_weight", float("inf")), ("gumbel_scale", float("nan")), ("max_grad_norm", -1.0),
    ("size_weights", (1.0, float("inf"))),
])
def test_non_finite_settings_are_refused(field, value):
    """Issue 30: every float must be finite in float32 (1e300 overflows it) and in range."""
    with pytest.raises(ValueError, match=f"{field} must be a finite float32 number"):
        dataclasses.replace(TINY, **{field: value})


def refused_before_writing(exp, cases, out):
    """Each ``(argv, message)``, with ``out=<out>`` added, fails in the config's parser with a ValueError matching
    ``message``, and ``out`` is never created."""
    for argv, message in cases:
        with pytest.raises(ValueError, match=message):
            experiment.parse_config(exp.Config, list(argv) + [f"out={out}"])
    assert not out.exists()


def test_experiment_refuses_bad_settings_before_writing(tmp_path):
    exp = load_experiment("alphazero_dab")
    refused_before_writing(exp, [
        (["colour=red"], "unknown key 'colour'"),
        (["board_sizes=0x2"], r"board_sizes: num_rows must be in \[1, 15\]; got 0"),
        (["board_sizes=3by3"], "board_sizes must be a board size like 3x3; got '3by3'"),
        (["num_simulations=0"], r"num_simulations must be an int in \[1, inf\]; got 0"),
        (["learner.learning_rate=inf"], "learning_rate must be a finite float32 number"),
        (["learning_rate=1e300"], "learning_rate must be a finite float32 number"),
        (["weight_decay=nan"], "weight_decay must be a finite float32 number"),
        (["value_loss_weight=inf"], "value_loss_weight must be a finite float32 number"),
        (["gumbel_scale=nan"], "gumbel_scale must be a finite float32 number"),
        (["alphabeta_budget=0"], r"alphabeta_budget must be a finite number in \(0, inf\); got 0.0"),
        (["budget_minutes=-1"], r"budget_minutes must be a finite number in \(0, inf\); got -1.0"),
        (["channels=0"], "NetworkConfig.channels must be a positive int; got 0"),
        (["weights=/no/such/folder"], "weights must be 'shipped' or a weights folder"),
        (["init_weights=/no/such/folder"], "init_weights must be 'shipped' or a weights folder"),
    ], tmp_path / "run")
    # the flat spellings of the README's commands and the dotted keys name the same settings
    flat = experiment.parse_config(exp.Config, ["board_sizes=3x3,4x4", "size_weights=3,1", "channels=16", "num_envs=8"])
    dotted = experiment.parse_config(exp.Config, ["learner.board_sizes=3x3,4x4", "learner.size_weights=3,1",
                                           "learner.network.channels=16", "learner.num_envs=8"])
    assert flat == dotted and flat.learner.board_sizes == ((3, 3), (4, 4)) and flat.learner.network.channels == 16
    assert experiment.parse_config(exp.Config, ["network.channels=16"]).learner.network.channels == 16  # a dotted suffix
    assert all(row["help"] for row in experiment.describe(exp.Config))  # every setting has a description
    page = experiment.help_text(exp.Config, "experiments/alphazero_dab.py")
    assert "learner.board_sizes: tuple | None = 2x2,3x3" in page and "channels of the trunk" in page


def test_a_fine_tune_starts_from_the_given_parameters(tmp_path):
    start = nets.init_params(TINY_NET, jax.random.key(42))
    learner = az.AlphaZeroLearner(TINY)
    fresh = loop.train(learner, num_iterations=0, key=jax.random.key(3))
    tuned = loop.train(learner, num_iterations=0, key=jax.random.key(3), initial_state=learner.start_from(start))
    for got in (tuned.state.params, tuned.state.best_params):
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(start)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(fresh.state.params), jax.tree.leaves(start)))
    # parameters of another network: refused, naming the leaf, before any folder exists
    other = nets.init_params(NetworkConfig(channels=4, num_blocks=1, value_channels=4, value_hidden=8), jax.random.key(0))
    with pytest.raises(ValueError, match="starting parameters do not fit the network.*shape"):
        learner.start_from(other)
    # the experiment: init_weights of other widths are refused before its results folder is written
    agent_lib.save_weights(tmp_path / "w", start, network=TINY_NET, value_target="margin", trained=False, command="test")
    exp = load_experiment("alphazero_dab")
    config = experiment.parse_config(exp.Config, [f"init_weights={tmp_path / 'w'}", f"out={tmp_path / 'run'}"])
    with pytest.raises(ValueError, match="init_weights=.* hold a network .*channels=8.*this run's is"):
        exp.run(config)
    assert not (tmp_path / "run").exists()


# The experiment's learner settings that make `TINY` (its compiled self-play and update are reused).
TINY_ARGV = ["board_sizes=1x1,1x2", "channels=8", "num_blocks=1", "value_channels=4", "value_hidden=8", "num_envs=4",
             "num_simulations=4", "max_num_considered_actions=4", "buffer_capacity=64", "batch_size=8",
             "updates_per_iteration=2", "report=false", "progress=false"]


def test_experiment_runs_resumes_and_stops_on_a_non_finite_loss(tmp_path):
    exp = load_experiment("alphazero_dab")
    assert experiment.parse_config(exp.Config, TINY_ARGV).learner == TINY
    out = f"out={tmp_path / 'run'}"
    first = exp.main(TINY_ARGV + ["iterations=1", "eval_every=0", out])["result"]
    second = exp.main(TINY_ARGV + ["iterations=2", "eval_every=0", out])["result"]
    assert first.resumed_from == 0 and second.resumed_from == 1 and len(second.history) == 2
    curves = (tmp_path / "run" / "curves.csv").read_text().splitlines()
    assert len(curves) == 3 and "policy_loss" in curves[0]
    assert "2 iterations in all (resumed at iteration 1)" in (tmp_path / "run" / "README.md").read_text()
    # AdamW steps of 1e30 (finite in float32) overflow the network: the run stops, naming the iteration
    with pytest.raises(loop.NonFiniteLoss, match="iteration [12]: non-finite loss"):
        exp.main(TINY_ARGV + ["iterations=3", "eval_every=0", "learning_rate=1e30", f"out={tmp_path / 'nan'}"])
    with pytest.raises(SystemExit) as stop:  # the command line: a bad setting is one line and exit 2
        exp.main(["learning_rate=inf"])
    assert stop.value.code == 2


def test_reported_network_is_the_latest_or_best_and_interpolates_towards_init_weights(tmp_path):
    """``reported=latest`` and ``interpolate=a``: a * latest + (1 - a) * init_weights, leaf by leaf (WiSE-FT)."""
    exp = load_experiment("alphazero_dab")
    start = nets.init_params(TINY_NET, jax.random.key(42))
    agent_lib.save_weights(tmp_path / "w", start, network=TINY_NET, value_target="margin", trained=False, command="test")
    argv = TINY_ARGV + [f"init_weights={tmp_path / 'w'}", "iterations=1", "eval_every=0", f"out={tmp_path / 'run'}"]
    state = exp.main(argv)["result"].state
    latest, source = exp.reported_network(experiment.parse_config(exp.Config, argv + ["reported=latest"]), state)
    assert source == "latest parameters (iteration 1)"
    for a, b in zip(jax.tree.leaves(latest), jax.tree.leaves(state.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    mixed, source = exp.reported_network(
        experiment.parse_config(exp.Config, argv + ["reported=latest", "interpolate=0.25"]), state)
    assert source.startswith("0.25 x the latest parameters (iteration 1) + 0.75 x init_weights=") and "WiSE-FT" in source
    moved = 0
    for got, end, begin in zip(jax.tree.leaves(mixed), jax.tree.leaves(state.params), jax.tree.leaves(start)):
        end, begin = np.asarray(end, np.float64), np.asarray(begin, np.float64)
        np.testing.assert_allclose(np.asarray(got, np.float64), 0.25 * end + 0.75 * begin, rtol=0, atol=1e-7)
        moved += int(not np.array_equal(end, begin))
    assert moved > 0  # one update moved the network, so the mix differs from both ends
    # interpolate needs init_weights (and no weights=), and lies in (0, 1]; reported is best or latest
    refused_before_writing(exp, [
        (["interpolate=0.5"], "interpolate= mixes the run's network with its init_weights: it needs init_weights="),
        ([f"init_weights={tmp_path / 'w'}", "interpolate=0"], r"interpolate must be a finite number in \(0, 1\]"),
        ([f"init_weights={tmp_path / 'w'}", "interpolate=1.5"], r"interpolate must be a finite number in \(0, 1\]"),
        (["reported=middle"], "reported must be one of"),
    ], tmp_path / "bad")


def test_shipped_weights_are_trained_and_beat_random_on_3x3():
    """The raw policy of the shipped network against the random agent, 40 games on 3x3 (module docstring)."""
    _, meta = agent_lib.load_weights()
    assert meta["trained"] is True and meta["command"].startswith("python experiments/alphazero_dab.py")
    agent = AlphaZeroAgent.from_weights(search=False, name="raw")
    res = arena.play_match(DotsAndBoxes(3, 3), agent, RandomAgent(), 40, jax.random.key(0), max_steps=25)
    assert res.wins + res.losses == 40
    assert binomtest(res.wins, 40, 0.5, alternative="greater").pvalue < 1e-6, res


def test_simulations_for_budget_climbs_the_ladder(monkeypatch):
    """Seconds per move faked as 1 ms per simulation: the largest count within 80% of the budget."""
    monkeypatch.setattr(agent_lib, "seconds_per_move", lambda n, env: 0.001 * n)
    make = lambda n: n  # noqa: E731  (the fake agent is its simulation count)
    assert agent_lib.simulations_for_budget(make, None, 0.02) == 16  # 16 ms <= 16 ms < 32 ms
    assert agent_lib.simulations_for_budget(make, None, 0.1) == 64  # 64 ms <= 80 ms < 128 ms
    assert agent_lib.simulations_for_budget(make, None, 10.0) == 1024  # the top of the ladder
    with pytest.warns(UserWarning, match="even 4 simulations"):
        assert agent_lib.simulations_for_budget(make, None, 0.001) == 4
    with pytest.raises(ValueError, match="time_budget must be positive"):
        agent_lib.simulations_for_budget(make, None, 0)


def test_init_params_first_called_under_another_trace():
    """The compiled init is cached per config: a first call inside a jitted function must not cache a tracer."""
    config = NetworkConfig(channels=4, num_blocks=1, value_channels=2, value_hidden=4)  # used by no other test
    inside = jax.jit(lambda k: nets.init_params(config, k))(jax.random.key(3))
    outside = nets.init_params(config, jax.random.key(3))  # a cached tracer would raise UnexpectedTracerError
    for a, b in zip(jax.tree.leaves(inside), jax.tree.leaves(outside)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ----------------------------------------------------------------------------- the agent: un-jitted calls, NaN, settings
# One search setting for the tests below: they share its compiled function (the parameters are an argument).
TINY_SEARCH = dict(network=TINY_NET, num_simulations=4, max_num_considered_actions=4)


def test_unjitted_policy_compiles_once_and_matches_the_jitted_call(monkeypatch):
    """Issue 31: an un-jitted ``policy`` ran the search op by op (1.7 s a move); it now calls one compiled function,
    shared by agents of other parameters, and still traces inside the caller's jit and vmap."""
    env = DotsAndBoxes(1, 2)
    state = env.from_dbn(dbn_of(7, {1, 2, 3, 4, 6}))
    other = env.from_dbn(dbn_of(7, {0}))
    params = [nets.init_params(TINY_NET, jax.random.key(i)) for i in (0, 1)]
    keys = jax.random.split(jax.random.key(5), 3)
    traces = []
    choose = agent_lib.masked_uniform_choice
    monkeypatch.setattr(agent_lib, "masked_uniform_choice", lambda k, m: (traces.append(1), choose(k, m))[1])
    raw = [AlphaZeroAgent(p, network=TINY_NET, search=False) for p in params]
    moves = [raw[0].policy(env, state, keys[0]), raw[0].policy(env, other, keys[1]), raw[1].policy(env, state, keys[2])]
    assert len(traces) <= 1  # op by op, every call traced the choice again (3)
    for agent in (*raw, AlphaZeroAgent(params[0], **TINY_SEARCH)):
        jitted = jax.jit(lambda s, k, agent=agent: agent.policy(env, s, k))
        for s, k in ((state, keys[0]), (other, keys[1])):
            move = agent.policy(env, s, k)
            assert move.dtype == jnp.int32 and move.shape == ()
            assert int(move) == int(jitted(s, k)) and bool(s.legal_action_mask[int(move)])
    assert int(moves[0]) == int(jax.jit(lambda s, k: raw[0].policy(env, s, k))(state, keys[0]))
    batch = jax.vmap(lambda s, k: raw[0].policy(env, s, k))(stack(state, other), keys[:2])
    assert batch.tolist() == [int(moves[0]), int(moves[1])]


def test_agent_with_nan_parameters_plays_legal_moves():
    """Issue 30: with NaN parameters the raw policy answered action 0 whatever the mask (here illegal)."""
    env = DotsAndBoxes(1, 2)
    state = env.from_dbn(dbn_of(7, {0}))  # edge 0 drawn: illegal
    legal = set(np.flatnonzero(np.asarray(state.legal_action_mask)).tolist())
    params = jax.tree.map(lambda x: jnp.full_like(x, jnp.nan), nets.init_params(TINY_NET, jax.random.key(0)))
    raw = AlphaZeroAgent(params, network=TINY_NET, search=False)
    searching = AlphaZeroAgent(params, **TINY_SEARCH)
    keys = jax.random.split(jax.random.key(2), 6)
    for agent in (raw, searching):
        moves = {int(agent.policy(env, state, k)) for k in keys}
        acts, _ = agent.act_batch(env, stack(state, state), keys[0], np.zeros(2, np.int32), np.ones(2, bool))
        assert moves | set(acts.tolist()) <= legal, (agent, moves, acts)
    assert len({int(raw.policy(env, state, k)) for k in keys}) > 1  # a uniform draw among the legal moves


@pytest.mark.parametrize("field, value", [
    ("gumbel_scale", float("nan")), ("gumbel_scale", float("inf")), ("gumbel_scale", 1e300), ("gumbel_scale", -1.0),
    ("time_budget", float("inf")), ("time_budget", float("nan")), ("time_budget", -0.1),
])
def test_agent_float_settings_are_finite_and_in_range(field, value):
    """Issue 30: ``gumbel_scale=nan`` (and ``time_budget=inf``) were accepted by the agent."""
    params = nets.init_params(TINY_NET, jax.random.key(0))
    with pytest.raises(ValueError, match=f"{field} must be"):
        AlphaZeroAgent(params, network=TINY_NET, **{field: value})


def test_exact_play_rows_give_each_agent_its_target_and_the_opening():
    """The perfect player plays 100% optimal moves, overall and in the opening; the opening row counts the
    random-play positions with 0-7 of 3x3's 24 edges drawn (counted here from the edges)."""
    exp = load_experiment("alphazero_dab")
    config = experiment.parse_config(exp.Config, ["perfect_games=2", "random_positions=60"])
    perfect = exp.PerfectAgent(3, 3)
    rows = exp.exact_play_rows({"alphazero": perfect, "raw_network": RandomAgent()}, config, jax.random.key(3))
    by = {(r["measure"], r["agent"]): r for r in rows}
    assert len(by) == 6
    _, k_pos = jax.random.split(jax.random.key(3))
    drawn = np.asarray(exp.random_positions(3, 3, k_pos, 60).board.edges).sum(-1)
    opening = by[("3x3 optimal moves, random-play positions, opening", "alphazero")]
    assert opening["trials"] == int((drawn <= 7).sum()) > 0 and opening["rate"] == 1.0
    assert opening["target"] == 0.90
    assert by[("3x3 optimal moves, random-play positions, opening", "raw_network")]["target"] is None
    for measure in ("3x3 optimal moves, games vs perfect", "3x3 optimal moves, random-play positions"):
        assert by[(measure, "alphazero")]["rate"] == 1.0 and by[(measure, "alphazero")]["target"] == 0.95
        assert by[(measure, "raw_network")]["target"] == 0.93 and by[(measure, "raw_network")]["rate"] < 1.0
    assert by[("3x3 optimal moves, random-play positions", "alphazero")]["trials"] == 60
