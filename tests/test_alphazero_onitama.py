"""AlphaZero-lite on Onitama: network, search, mirror augmentation, learner, agent (issue 13).

Expected values come from outside the code under test:

* One-move win (Way of the Stone), by hand. Red (to move) has its master on
  row 3, col 2 (square 17) and holds Elephant (id 5, slot 0) and Boar (id
  13, slot 1); Blue's master stands on square 12, right in front. Boar's
  forward move takes the Blue master: canonical action ``1 * 625 + 17 * 25 +
  12 = 1062``, reward +1 for the mover. The other six moves (Boar left and
  right, Elephant's four) win nothing at once, and Blue's Crane then takes
  the Red master from 12 (its forward move, down for Blue) unless it moved.
* Mirror: mirroring a board left-right is ``col -> 4 - col`` for every
  piece and the mirror card (`cards.MIRROR_CARD`, checked against the
  plain-Python reference in ``tests/test_onitama.py``) for every card. The
  legal moves of the mirrored position are the mirrored legal moves,
  compared here move by move through a plain-Python decoding of the
  canonical ids (slot by card id, squares by arithmetic), not through the
  permutation under test; where no hand changes its slot order the
  observation is the old one with its columns reversed.
* Self-play targets with ``max_turns=2``: no card jumps two rows straight
  except Tiger, so nobody can take a master or reach the temple in the
  first two turns (the masters start four rows apart): every game is a
  two-turn draw, so each of 4 slots plays 8 / 2 = 4 games in 8 steps and
  every value target is 0.
* Shipped weights against the random agent: no better than it would give
  Binomial(20, 1/2) wins or fewer (draws and turn-limit stops count as not
  won); 19 wins or more of 20 has probability below 1e-4 under that.
"""

from __future__ import annotations

import functools

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
from jaxgames.evaluation.alphazero import ArenaEvaluator
from jaxgames.games.onitama import Onitama, cards
from jaxgames.learners import alphazero as az
from jaxgames.learners import loop
from jaxgames.networks import onitama as nets
from jaxgames.search import mcts
from tests.experiment_helpers import load_experiment

TINY_NET = nets.NetworkConfig(channels=8, num_blocks=1, value_channels=2, value_hidden=8)

TINY = az.AlphaZeroConfig(
    game="onitama",
    network=TINY_NET,
    num_envs=4,
    num_simulations=4,
    max_num_considered_actions=4,
    buffer_capacity=64,
    batch_size=8,
    updates_per_iteration=2,
    max_turns=2,
    selfplay_steps=8,
)

WIN_TEXT = """
.....
.....
..B..
..R..
.....
"""
WIN_ACTION = 1 * 625 + 17 * 25 + 12


def stack(*states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def win_state(env):
    return env.from_text(WIN_TEXT, (("Elephant", "Boar"), ("Crane", "Monkey")), "Ox", player=0)


@functools.lru_cache(maxsize=1)
def random_states(n=48, steps=14, seed=0):
    """States along random playouts of ``Onitama()`` (finished games frozen), flattened: ``[n * steps]`` (cached)."""
    env = Onitama()

    def play(k):
        def body(s, kk):
            a, b = jax.random.split(kk)
            nxt = env.step(s, env.random_action(a, s), b)
            return jax.tree.map(lambda x, y: jnp.where(s.terminated | s.truncated, x, y), s, nxt), s

        _, traj = jax.lax.scan(body, env.init(k), jax.random.split(k, steps))
        return traj

    traj = jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(seed), n))
    return jax.tree.map(lambda x: np.asarray(x.reshape((-1,) + x.shape[2:])), traj)


# ----------------------------------------------------------------------------- network
def test_network_shapes_and_policy_layout():
    env = Onitama()
    params = nets.init_params(TINY_NET, jax.random.key(0))
    obs = jax.vmap(env.init)(jax.random.split(jax.random.key(1), 3)).observation
    logits, value = jax.jit(nets.PolicyValueNet(TINY_NET).apply)(params, obs)
    assert logits.shape == (3, 1250) and value.shape == (3,)
    assert np.all(np.isfinite(logits)) and np.all(np.abs(value) <= 1.0)
    # Layout by hand: slot 1, from square 17 to 12 is the jump (-1, 0): offset (1, 2) -> 7; entry 17 * 50 + 25 + 7.
    assert nets.POLICY_INDEX[WIN_ACTION] == 17 * 50 + 25 + 7
    assert nets.POLICY_INDEX[0] == 0 * 50 + 0 + 12 and nets.POLICY_INDEX[625] == 25 + 12  # the passes: zero offset
    assert nets.POLICY_INDEX[0 * 625 + 0 * 25 + 24] == 1250  # a jump of 4 rows: outside the window, the zero logit
    assert len(set(nets.POLICY_INDEX[nets.POLICY_INDEX < 1250].tolist())) == int(np.sum(nets.POLICY_INDEX < 1250))


# ----------------------------------------------------------------------------- search
def zero_evaluate(params, states):
    """Uniform prior, value 0: the search knows only the rules and the terminal rewards."""
    B = states.current_player.shape[0]
    return jnp.zeros((B, 1250)), jnp.zeros((B,))


def test_search_finds_the_one_move_win():
    env = Onitama()
    state = win_state(env)
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    assert len(legal) == 7 and WIN_ACTION in legal
    out = jax.jit(
        lambda s, k: mcts.network_search(env, s, k, evaluate=zero_evaluate, params=None, num_simulations=16,
                                         algorithm="gumbel", gumbel_scale=0.0)
    )(stack(state, state), jax.random.key(0))
    assert np.asarray(out.action).tolist() == [WIN_ACTION, WIN_ACTION]
    q = np.asarray(out.search_tree.summary().qvalues)
    assert np.all(q[:, WIN_ACTION] == 1.0)  # the win's reward, from the mover's side
    w = np.asarray(out.action_weights)
    assert np.all(w[:, np.setdiff1d(np.arange(1250), legal)] == 0)  # illegal actions masked at the root
    # The agent searches the arena's own env (canonical actions, outcome rewards): the env searched above.
    agent = AlphaZeroAgent(nets.init_params(TINY_NET, jax.random.key(0)), network=TINY_NET, num_simulations=16)
    assert agent._search_env(env) is env


# ----------------------------------------------------------------------------- mirror
def _decode(action):
    slot, rest = divmod(int(action), 625)
    return slot, *divmod(rest, 25)


def test_mirror_maps_legal_moves_to_legal_moves():
    env = Onitama()
    s = random_states()
    live = ~(s.terminated | s.truncated)
    boards = jax.tree.map(lambda x: x[live], s.board)
    masks = s.legal_action_mask[live]
    mirrored = jax.jit(jax.vmap(nets.mirror_board))(boards)
    m_states = jax.jit(jax.vmap(env.state_from_board))(mirrored)
    perm = np.asarray(jax.jit(jax.vmap(nets.mirror_actions))(boards))
    m_mask, m_obs = np.asarray(m_states.legal_action_mask), np.asarray(m_states.observation)
    obs = s.observation[live]
    mirror_sq = lambda q: 5 * (q // 5) + 4 - q % 5  # noqa: E731
    swaps = 0
    for i in range(len(masks)):
        player = int(boards.player[i])
        hand, m_hand = np.asarray(boards.hands[i, player]), np.asarray(mirrored.hands[i, player])
        expected = set()
        for a in np.flatnonzero(masks[i]):
            slot, f, t = _decode(a)
            m_slot = int(np.flatnonzero(m_hand == cards.MIRROR_CARD[hand[slot]])[0])
            expected.add((m_slot, f, t) if f == t else (m_slot, mirror_sq(f), mirror_sq(t)))  # a pass keeps (0, 0)
        assert {_decode(a) for a in np.flatnonzero(m_mask[i])} == expected
        np.testing.assert_array_equal(masks[i][perm[i]], m_mask[i])  # the permutation used by the learner
        if np.array_equal(cards.MIRROR_CARD[np.asarray(boards.hands[i])], np.asarray(mirrored.hands[i])):
            np.testing.assert_array_equal(obs[i][:, ::-1], m_obs[i])  # no slot order changed: columns reversed
        else:
            swaps += 1
    assert swaps > 0 and len(masks) > 300  # both cases occur
    twice = jax.jit(jax.vmap(nets.mirror_board))(mirrored)
    for a, b in zip(jax.tree.leaves(twice), jax.tree.leaves(boards)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # an involution


def test_augment_moves_board_and_policy_together():
    env = Onitama()
    s = random_states()
    s = jax.tree.map(lambda x: x[~(s.terminated | s.truncated)][::40], s)  # unfinished states of several games and stages
    n = s.current_player.shape[0]
    policy = np.asarray(s.legal_action_mask, np.float32) * np.random.default_rng(0).random((n, 1250)).astype(np.float32)
    policy /= policy.sum(-1, keepdims=True)
    samples = az.Sample(board=jax.tree.map(jnp.asarray, s.board), policy=jnp.asarray(policy), value=jnp.linspace(-1, 1, n))
    g = jnp.asarray(np.arange(n) % 2, jnp.int32)
    game = az.game_adapter(TINY)
    out = jax.jit(lambda x, g: game.augment((5, 5), x, g))(samples, g)
    np.testing.assert_array_equal(np.asarray(out.value), np.asarray(samples.value))
    legal = np.asarray(jax.vmap(env.legal_mask)(out.board))
    for i in range(n):
        if i % 2 == 0:  # the identity
            np.testing.assert_array_equal(np.asarray(out.policy[i]), policy[i])
            continue
        assert np.all(np.asarray(out.policy[i])[~legal[i]] == 0)  # the mass stays on legal moves of the mirrored board
        np.testing.assert_allclose(np.sort(np.asarray(out.policy[i])), np.sort(policy[i]))
        f, t = divmod(int(np.argmax(policy[i])) % 625, 25)
        mf, mt = divmod(int(np.argmax(np.asarray(out.policy[i]))) % 625, 25)
        assert (mf, mt) == ((f, t) if f == t else (5 * (f // 5) + 4 - f % 5, 5 * (t // 5) + 4 - t % 5))


# ----------------------------------------------------------------------------- learner
def test_tiny_iteration_under_jit_has_closed_form_targets():
    state = az.init_state(TINY, jax.random.key(0))
    play = az.compiled(TINY).selfplay[0]
    env_states, buf, stats = play(state.params, state.env_states[0], state.buffers[0], jax.random.key(1))
    assert float(stats["games"]) == 16 and int(buf.size) == 32  # 4 slots x 4 two-turn games
    np.testing.assert_array_equal(np.asarray(buf.data.value[:32]), 0.0)  # every game a draw
    policy = np.asarray(buf.data.policy[:32])
    np.testing.assert_allclose(policy.sum(axis=1), 1.0, rtol=1e-5)
    legal = np.asarray(jax.vmap(Onitama(max_turns=2).legal_mask)(jax.tree.map(lambda x: x[:32], buf.data.board)))
    assert np.all(policy[~legal] == 0)
    new, metrics = az.train_iteration(TINY, state)
    assert int(new.iteration) == 1 and np.isfinite(metrics["loss"]) and metrics["onitama/positions"] == 32
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(state.params)))


def test_resumed_run_equals_a_straight_run(tmp_path):
    learner = az.AlphaZeroLearner(TINY)  # the compiled self-play and update of the test above are reused
    straight = loop.train(learner, num_iterations=2, key=jax.random.key(1), checkpoint_dir=tmp_path / "a")
    loop.train(learner, num_iterations=1, key=jax.random.key(1), checkpoint_dir=tmp_path / "b")
    resumed = loop.train(learner, num_iterations=2, key=jax.random.key(1), checkpoint_dir=tmp_path / "b")
    assert resumed.resumed_from == 1
    for a, b in zip(jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [h["loss"] for h in straight.history] == [h["loss"] for h in resumed.history]
    assert '"game": "onitama"' in (tmp_path / "b" / "config.json").read_text()  # the folder is tied to the game


# The experiment's learner settings that make `TINY` (its compiled self-play and update are reused).
TINY_ARGV = ["channels=8", "num_blocks=1", "value_channels=2", "value_hidden=8", "num_envs=4", "num_simulations=4",
             "max_num_considered_actions=4", "buffer_capacity=64", "batch_size=8", "updates_per_iteration=2",
             "max_turns=2", "selfplay_steps=8", "report=false", "progress=false", "eval_every=0"]


def test_experiment_runs_and_resumes(tmp_path):
    exp = load_experiment("alphazero_onitama")
    assert experiment.parse_config(exp.Config, TINY_ARGV).learner == TINY
    out = f"out={tmp_path / 'run'}"
    first = exp.main(TINY_ARGV + ["iterations=1", out])["result"]
    second = exp.main(TINY_ARGV + ["iterations=2", out])["result"]
    assert first.resumed_from == 0 and second.resumed_from == 1 and len(second.history) == 2
    assert len((tmp_path / "run" / "curves.csv").read_text().splitlines()) == 3
    assert "2 iterations in all (resumed at iteration 1)" in (tmp_path / "run" / "README.md").read_text()


# ----------------------------------------------------------------------------- agent, weights, bad input
def test_weights_round_trip_and_agent_errors(tmp_path):
    params = nets.init_params(TINY_NET, jax.random.key(0))
    agent_lib.save_weights(tmp_path, params, network=TINY_NET, value_target="outcome", trained=False, command="test")
    loaded, meta = agent_lib.load_weights(tmp_path)
    assert meta["game"] == "onitama" and meta["trained"] is False
    for a, b in zip(jax.tree.leaves(loaded), jax.tree.leaves(params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.warns(UserWarning, match="untrained"):
        agent = AlphaZeroAgent.from_weights(tmp_path, num_simulations=4)
    assert agent.name == "alphazero-untrained" and agent.game == "onitama"
    with pytest.raises(ValueError, match="canonical action space"):
        agent.batched_policy(Onitama(action_space="paper"))
    with pytest.raises(ValueError, match="plays onitama"):
        from jaxgames.games.dots_and_boxes import DotsAndBoxes

        agent.batched_policy(DotsAndBoxes(2, 2))
    with pytest.raises(ValueError, match="value_target must be one of \\('outcome',\\)"):
        AlphaZeroAgent(params, network=TINY_NET, value_target="margin")
    with pytest.raises(ValueError, match="do not fit the network"):
        AlphaZeroAgent(params, network=nets.NetworkConfig(channels=16, num_blocks=1, value_channels=2, value_hidden=8))
    with pytest.raises(ValueError, match="no AlphaZero network for game 'chess'"):
        agent_lib.load_weights(game="chess")


# ----------------------------------------------------------------------------- Dasgupta & Chong's 40 actions
PASS_TEXT = """
R...b
r....
r.B..
r....
r...b
"""
"""Red (to move) fills column 0; Tiger and Horse move only along it or off the board: Red must pass
(by hand; the same position as in ``tests/test_onitama.py``)."""


def test_paper_space_agent_plays_the_one_move_win():
    """All-zero parameters give a uniform prior and value 0, so the search finds Boar's capture (module
    docstring). In the 40-action space of Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement Learning"
    (NUS USP group report, 2021), section 4.2 (``piece * 8 + slot * 4 + move``), that move is, by hand:
    piece 4 (the master), slot 1 (Boar, the higher card id), move 0 (Boar's forward square is the first of its
    picture in reading order): 4 * 8 + 1 * 4 + 0 = 36."""
    paper_env = Onitama(action_space="paper")
    zeros = jax.tree.map(jnp.zeros_like, nets.init_params(TINY_NET, jax.random.key(0)))
    agent = agent_lib.PaperSpaceAlphaZero(AlphaZeroAgent(zeros, network=TINY_NET, num_simulations=16), Onitama())
    assert agent.name == "alphazero"
    state = win_state(paper_env)
    action = jax.jit(lambda s, k: agent.policy(paper_env, s, k, jnp.int32(0)))(state, jax.random.key(0))
    assert int(action) == 36
    after = paper_env.step(state, action, jax.random.key(1))
    assert bool(after.terminated) and np.asarray(after.rewards).tolist() == [1.0, -1.0]  # Red took the Blue master


def test_shipped_onitama_weights_are_trained_and_beat_random():
    """The raw policy of the shipped network against the random agent, 20 games (module docstring)."""
    params, meta = agent_lib.load_weights(game="onitama")
    assert meta["game"] == "onitama" and meta["trained"] is True and meta["iterations"] >= 50
    assert meta["command"].startswith("python experiments/alphazero_onitama.py")
    agent = AlphaZeroAgent.from_weights(game="onitama", search=False, name="raw")
    env = Onitama()
    res = arena.play_match(env, agent, RandomAgent(), 20, jax.random.key(0), max_steps=env.max_turns + 1)
    assert binomtest(res.wins, 20, 0.5, alternative="greater").pvalue < 1e-4, res


def test_paper_space_agent_plays_the_canonical_agents_move():
    """On random positions and a forced pass, the 40-space action is legal and is the canonical agent's move:
    the 40-action env stepped with it and the canonical env stepped with the canonical choice reach the same board
    (two different moves never do: they differ in the piece moved, its landing square or the card given up)."""
    cenv, paper_env = Onitama(), Onitama(action_space="paper")
    inner = AlphaZeroAgent(nets.init_params(TINY_NET, jax.random.key(5)), network=TINY_NET, num_simulations=4)
    agent = agent_lib.PaperSpaceAlphaZero(inner, cenv)
    pool = random_states()
    live = np.flatnonzero(~(pool.terminated | pool.truncated))[::25][:15]  # several games and stages
    forced = paper_env.from_text(PASS_TEXT, (("Tiger", "Horse"), ("Crane", "Ox")), "Boar", player=0).board
    boards = jax.tree.map(lambda x, f: jnp.concatenate([jnp.asarray(x[live]), jnp.asarray(f)[None]]), pool.board, forced)
    n = len(live) + 1
    paper_states = jax.vmap(paper_env.state_from_board)(boards)
    canon_states = jax.vmap(cenv.state_from_board)(boards)
    keys = jax.random.split(jax.random.key(2), n)
    players = paper_states.current_player
    paper_actions = np.asarray(jax.jit(agent.batched_policy(paper_env))(paper_states, keys, players))
    canon_actions = np.asarray(jax.jit(inner.batched_policy(cenv))(canon_states, keys, players))
    rows = np.arange(n)
    assert np.all(np.asarray(paper_states.legal_action_mask)[rows, paper_actions])
    assert np.all(np.asarray(canon_states.legal_action_mask)[rows, canon_actions])
    # The forced pass, by hand: Dasgupta & Chong's passes are the master's move 0 of each slot, 32 and 36.
    assert paper_actions[-1] == 32 + 4 * (canon_actions[-1] // 625)
    step_keys = jax.random.split(jax.random.key(3), n)
    after_paper = jax.vmap(paper_env.step)(paper_states, jnp.asarray(paper_actions), step_keys)
    after_canon = jax.vmap(cenv.step)(canon_states, jnp.asarray(canon_actions), step_keys)
    for a, b in zip(jax.tree.leaves(after_paper.board), jax.tree.leaves(after_canon.board)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="40-action space"):
        agent.batched_policy(cenv)
    with pytest.raises(ValueError, match="max_turns=200 differs"):
        agent.batched_policy(Onitama(action_space="paper", max_turns=50))
    with pytest.raises(ValueError, match="action_space='canonical'"):
        agent_lib.PaperSpaceAlphaZero(inner, paper_env)
    with pytest.raises(TypeError, match="JaxAgent"):
        agent_lib.PaperSpaceAlphaZero("alphazero", cenv)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="game must be one of"):
        az.AlphaZeroConfig(game="chess")
    with pytest.raises(ValueError, match="onitama has one board, 5x5; got board size \\(3, 3\\)"):
        az.AlphaZeroConfig(game="onitama", board_sizes=((3, 3),))
    with pytest.raises(TypeError, match="network must be a jaxgames.networks.onitama.NetworkConfig"):
        from jaxgames.networks.dots_and_boxes import NetworkConfig as DabNetwork

        az.AlphaZeroConfig(game="onitama", network=DabNetwork())
    with pytest.raises(ValueError, match="value_target must be one of \\('outcome',\\) for onitama; got 'margin'"):
        az.AlphaZeroConfig(game="onitama", value_target="margin")
    with pytest.raises(ValueError, match=r"max_turns must be an int in \[1, 1073741824\]; got 0"):  # Onitama's [1, 2**30]
        az.AlphaZeroConfig(game="onitama", max_turns=0)
    with pytest.raises(ValueError, match=r"selfplay_steps must be an int in \[0, inf\]; got -1"):
        az.AlphaZeroConfig(game="onitama", selfplay_steps=-1)
    with pytest.raises(ValueError, match="channels must be a positive int; got 0"):
        nets.NetworkConfig(channels=0)
    params = nets.init_params(TINY_NET, jax.random.key(0))
    with pytest.raises(ValueError, match="expected canonical Onitama observations"):
        nets.PolicyValueNet(TINY_NET).apply(params, jnp.zeros((2, 260)))
    with pytest.raises(ValueError, match="gate_win_rate must be a finite number in \\[0, 1\\]"):
        ArenaEvaluator(TINY, Onitama(), {}, gate_win_rate=1.5)


def test_experiment_refuses_bad_settings_before_writing(tmp_path):
    exp = load_experiment("alphazero_onitama")
    out = tmp_path / "run"
    cases = [
        (["colour=red"], "unknown key 'colour'"),
        (["num_simulations=0"], r"num_simulations must be an int in \[1, inf\]; got 0"),
        (["learning_rate=inf"], "learning_rate must be a finite float32 number"),
        (["game=dots_and_boxes"], "network must be a jaxgames.networks.dots_and_boxes.NetworkConfig"),
        (["channels=0"], "NetworkConfig.channels must be a positive int; got 0"),
        (["eval_opponents=random,alphabeta9"], "unknown opponent 'alphabeta9'"),
        (["final_opponent=gnugo"], "unknown opponent 'gnugo'"),
        (["ship=trained", "iterations=3"], "a smoke run is not a trained network"),
        (["weights=/no/such/folder"], "weights must be 'shipped' or a weights folder"),
    ]
    for argv, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            experiment.parse_config(exp.Config, argv + [f"out={out}"])
    assert not out.exists()
    assert experiment.parse_config(exp.Config, [f"out={out}"]).learner.game == "onitama"
    assert all(row["help"] for row in experiment.describe(exp.Config))  # every setting has a description
