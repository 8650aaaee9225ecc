"""Dots-and-Boxes: differential test against OpenSpiel, scenarios, bad input.

Expected values come from ``pyspiel`` (OpenSpiel ``dots_and_boxes``), from the
rules (El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And
Boxes", course report, undated, section 4) worked by hand on small ASCII boards, or from the
dbn definition; never from the code under test.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.games.dots_and_boxes.dbn import to_dbn

pyspiel = pytest.importorskip("pyspiel")

# --------------------------------------------------------------------------- helpers


def num_edges(R, C):
    return (R + 1) * C + R * (C + 1)


def ascii_to_dbn(board: str) -> str:
    """A dbn string from an ASCII board (a test-side parser, independent of the package).

    Dots are ``+`` at even columns of even lines; ``-`` between two dots is a
    drawn horizontal edge, ``|`` below a dot a drawn vertical edge. Anything
    else (spaces, box labels) is ignored::

        +-+-+
        |   |
        +-+ +
    """
    lines = [ln for ln in board.strip("\n").split("\n")]
    lines = [ln.strip() for ln in lines]
    width = max(len(ln) for ln in lines)
    lines = [ln.ljust(width) for ln in lines]
    R = (len(lines) - 1) // 2
    C = (width - 1) // 2
    h = [lines[2 * r][2 * c + 1] == "-" for r in range(R + 1) for c in range(C)]
    v = [lines[2 * r + 1][2 * c] == "|" for r in range(R) for c in range(C + 1)]
    return "".join("1" if x else "0" for x in h + v)


def spiel_scores(state, R, C):
    """Scores and box owners from OpenSpiel's observation tensor [cellstate, cell, (h, v, box)]."""
    t = np.asarray(state.observation_tensor(0), np.float32).reshape(3, (R + 1) * (C + 1), 3)
    box = t[:, :, 2].reshape(3, R + 1, C + 1)[:, :R, :C].reshape(3, R * C)
    owner = np.where(box[1] == 1, 0, np.where(box[2] == 1, 1, -1))
    return np.array([np.sum(owner == 0), np.sum(owner == 1)]), owner


def spiel_replay(R, C, utility_margin, action_rows):
    """Replays each row of actions in pyspiel; records the state after every move."""
    game = pyspiel.load_game("dots_and_boxes", {"num_rows": R, "num_cols": C, "utility_margin": utility_margin})
    N, T = action_rows.shape
    E = num_edges(R, C)
    rec = dict(
        legal=np.zeros((N, T, E), bool),
        player=np.full((N, T), -9, np.int64),
        scores=np.zeros((N, T, 2), np.int64),
        owner=np.zeros((N, T, R * C), np.int64),
        terminal=np.zeros((N, T), bool),
        returns=np.zeros((N, T, 2)),
        dbn=np.empty((N, T), object),
    )
    for i in range(N):
        s = game.new_initial_state()
        for t in range(T):
            s.apply_action(int(action_rows[i, t]))
            rec["legal"][i, t, s.legal_actions()] = True
            rec["player"][i, t] = s.current_player()
            rec["scores"][i, t], rec["owner"][i, t] = spiel_scores(s, R, C)
            rec["terminal"][i, t] = s.is_terminal()
            rec["returns"][i, t] = s.returns()
            rec["dbn"][i, t] = s.dbn_string()
    return rec


def jax_replay(env, action_rows):
    """Replays each row of actions with one jitted, vmapped scan over env.step."""

    def one(actions):
        state = env.init(jax.random.key(0))

        def body(s, a):
            s = env.step(s, a)
            return s, (s, env.returns(s))

        _, (states, returns) = jax.lax.scan(body, state, actions)
        return states, returns

    states, returns = jax.jit(jax.vmap(one))(jnp.asarray(action_rows, jnp.int32))
    return jax.tree.map(np.asarray, states), np.asarray(returns)


# Board sizes of the issue, square and not; the games per size sum to 1,010.
DIFF_CASES = [
    ((1, 1), 120, False),
    ((2, 2), 300, False),
    ((2, 3), 250, True),
    ((3, 3), 200, False),
    ((3, 5), 80, True),
    ((5, 5), 60, False),
]


@pytest.mark.parametrize("size,num_games,utility_margin", DIFF_CASES, ids=lambda x: str(x))
def test_differential_against_openspiel(size, num_games, utility_margin):
    R, C = size
    E = num_edges(R, C)
    rng = np.random.default_rng(R * 100 + C)
    # Uniformly random legal play = a uniformly random order of all edges.
    actions = np.stack([rng.permutation(E) for _ in range(num_games)])
    ref = spiel_replay(R, C, utility_margin, actions)
    env = jaxgames.make("dots_and_boxes", num_rows=R, num_cols=C, utility_margin=utility_margin)
    states, returns = jax_replay(env, actions)

    # OpenSpiel lists no legal action at a terminal state; our convention (jaxgames.core) is an all-True mask.
    expected_mask = ref["legal"] | ref["terminal"][..., None]
    np.testing.assert_array_equal(states.legal_action_mask, expected_mask, err_msg="legal actions")
    np.testing.assert_array_equal(states.terminated, ref["terminal"], err_msg="terminal flag")
    live = ~ref["terminal"]
    np.testing.assert_array_equal(states.current_player[live], ref["player"][live], err_msg="current player")
    np.testing.assert_array_equal(states.board.scores, ref["scores"], err_msg="scores")
    np.testing.assert_array_equal(states.board.box_owner, ref["owner"], err_msg="box owners")
    np.testing.assert_allclose(returns, ref["returns"], err_msg="returns")
    # Rewards: zero until the end, then OpenSpiel's returns.
    np.testing.assert_allclose(states.rewards.sum(axis=1), ref["returns"][:, -1], err_msg="summed rewards")
    assert np.all(states.rewards[:, :-1] == 0)
    np.testing.assert_array_equal(states.step_count, np.broadcast_to(np.arange(1, E + 1), (num_games, E)))
    dbn = np.array(to_dbn(states.board.edges), dtype=object)
    np.testing.assert_array_equal(dbn, ref["dbn"], err_msg="dbn strings")

    # Observation, mover's view: planes derived here from OpenSpiel's dbn and owners.
    obs = states.observation
    edges = np.array([[list(map(int, d)) for d in row] for row in ref["dbn"]], bool)
    nh = (R + 1) * C
    np.testing.assert_array_equal(obs[..., :, :C, 0], edges[..., :nh].reshape(num_games, E, R + 1, C))
    np.testing.assert_array_equal(obs[..., :R, :, 1], edges[..., nh:].reshape(num_games, E, R, C + 1))
    mover = states.current_player[..., None]
    mine = (ref["owner"] == mover).reshape(num_games, E, R, C)
    theirs = ((ref["owner"] >= 0) & (ref["owner"] != mover)).reshape(num_games, E, R, C)
    np.testing.assert_array_equal(obs[..., :R, :C, 2], mine)
    np.testing.assert_array_equal(obs[..., :R, :C, 3], theirs)
    sides = np.zeros((num_games, E, R, C))
    h = edges[..., :nh].reshape(num_games, E, R + 1, C).astype(int)
    v = edges[..., nh:].reshape(num_games, E, R, C + 1).astype(int)
    sides += h[..., :-1, :] + h[..., 1:, :] + v[..., :, :-1] + v[..., :, 1:]
    np.testing.assert_array_equal(obs[..., :R, :C, 4], sides)
    assert np.all(obs[..., R, :, 1:] == 0) and np.all(obs[..., :, C, [0, 2, 3, 4]] == 0)


def test_dbn_import_matches_openspiel():
    """Start mid-game from a dbn string in both, then play the same random moves."""
    R, C = 3, 3
    E = num_edges(R, C)
    rng = np.random.default_rng(7)
    game = pyspiel.load_game("dots_and_boxes", {"num_rows": R, "num_cols": C})
    env = DotsAndBoxes(R, C)
    step = jax.jit(env.step)
    for _ in range(4):
        order = rng.permutation(E)
        k = int(rng.integers(0, E))
        dbn = "".join("1" if e in set(order[:k]) else "0" for e in range(E))
        ref = game.new_initial_state(dbn)
        state = env.from_dbn(dbn)  # OpenSpiel's convention: player 0, scores 0
        assert env.to_dbn(state) == dbn
        assert bool(state.terminated) == ref.is_terminal()
        for a in order[k:]:
            if not ref.is_terminal():
                assert sorted(np.flatnonzero(np.asarray(state.legal_action_mask))) == ref.legal_actions()
            assert int(state.current_player) == ref.current_player()
            ref.apply_action(int(a))
            state = step(state, int(a))
            assert env.to_dbn(state) == ref.dbn_string()
        assert bool(state.terminated) and ref.is_terminal()
        np.testing.assert_allclose(np.asarray(env.returns(state)), ref.returns())


def test_default_params_are_openspiels():
    game = pyspiel.load_game("dots_and_boxes")
    params = game.get_parameters()
    env = jaxgames.make("dots_and_boxes")
    assert (env.num_rows, env.num_cols, env.utility_margin) == (
        params["num_rows"],
        params["num_cols"],
        params["utility_margin"],
    )
    assert env.num_actions == game.num_distinct_actions() == 12
    assert env.observation_shape == (3, 3, 5)


# --------------------------------------------------------------------------- scenarios

ENV_2X2 = DotsAndBoxes(2, 2)
STEP_2X2 = jax.jit(ENV_2X2.step)


def action_of(R, C, kind, r, c):
    """OpenSpiel's action id of edge ``kind`` in {'h', 'v'} at (r, c), from the numbering in the issue."""
    return r * C + c if kind == "h" else (R + 1) * C + r * (C + 1) + c


def test_one_box_keeps_the_turn_and_a_plain_move_passes_it():
    board = """
    +-+ +
    |
    +-+ +

    + + +
    """
    state = ENV_2X2.from_dbn(ascii_to_dbn(board), current_player=1)
    # Player 1 draws the right side of box (0, 0): completes it and moves again.
    state = STEP_2X2(state, action_of(2, 2, "v", 0, 1))
    assert int(state.current_player) == 1
    assert np.asarray(state.board.scores).tolist() == [0, 1]
    assert int(state.board.last_boxes) == 1
    assert np.asarray(state.board.box_owner).tolist() == [1, -1, -1, -1]
    # A move that completes nothing passes the turn.
    state = STEP_2X2(state, action_of(2, 2, "h", 2, 1))
    assert int(state.current_player) == 0 and int(state.board.last_boxes) == 0


def test_double_cross_completes_two_boxes_with_one_edge():
    # A hard-hearted handout was declined: two boxes share the one open edge
    # between them (v(0, 1)); taking it is a double-cross.
    board = """
    +-+-+
    |   |
    + + +
          
    + + +
    """
    state = ENV_2X2.from_dbn(ascii_to_dbn(board), current_player=0)
    state = STEP_2X2(state, action_of(2, 2, "h", 1, 0))  # box (0,0) now has 3 sides; turn passes
    assert int(state.current_player) == 1
    state = STEP_2X2(state, action_of(2, 2, "h", 1, 1))  # box (0,1) 3 sides; turn passes
    assert int(state.current_player) == 0
    state = STEP_2X2(state, action_of(2, 2, "v", 0, 1))  # the middle edge closes both
    assert int(state.board.last_boxes) == 2
    assert np.asarray(state.board.scores).tolist() == [2, 0]
    assert int(state.current_player) == 0, "a double completion keeps the turn"
    assert np.asarray(state.board.box_owner).tolist() == [0, 0, -1, -1]
    # Observation from player 0's view: both boxes in the "mine" plane.
    obs = np.asarray(state.observation)
    assert obs[0, 0, 2] == 1 and obs[0, 1, 2] == 1 and obs[..., 3].sum() == 0


def test_last_move_ends_the_game_with_the_returns():
    # Every edge but the bottom of box (1, 1); player 0 has 2 boxes, player 1 one.
    board = """
    +-+-+
    | | |
    +-+-+
    | | |
    +-+ +
    """
    dbn = ascii_to_dbn(board)
    assert dbn.count("0") == 1
    state = ENV_2X2.from_dbn(dbn, current_player=1, scores=(2, 1))
    assert not bool(state.terminated)
    state = STEP_2X2(state, action_of(2, 2, "h", 2, 1))
    assert bool(state.terminated)
    assert np.asarray(state.board.scores).tolist() == [2, 2]
    assert np.asarray(state.rewards).tolist() == [0.0, 0.0]  # a 2-2 draw
    assert np.asarray(state.legal_action_mask).all()  # the terminal-mask convention
    # Margin utility: same board, player 0 closes the last box, wins 3-1.
    env = DotsAndBoxes(2, 2, utility_margin=True)
    end = env.step(env.from_dbn(dbn, current_player=0, scores=(2, 1)), action_of(2, 2, "h", 2, 1))
    assert np.asarray(end.rewards).tolist() == [2.0, -2.0]
    # The terminal state is a no-op with zero rewards.
    again = env.step(end, 0)
    assert np.asarray(again.rewards).tolist() == [0.0, 0.0]
    assert int(again.step_count) == int(end.step_count)


def test_win_loss_rewards_after_a_full_game():
    # Player 0 draws everything in order 0..11 on 2x2; replay it in OpenSpiel for the outcome.
    game = pyspiel.load_game("dots_and_boxes")
    ref = game.new_initial_state()
    state = ENV_2X2.init(jax.random.key(0))
    for a in range(12):
        ref.apply_action(a)
        state = STEP_2X2(state, a)
    assert ref.is_terminal() and bool(state.terminated)
    np.testing.assert_allclose(np.asarray(state.rewards), ref.returns())


# --------------------------------------------------------------------------- illegal actions


def test_illegal_action_in_jit_loses_for_the_mover():
    env = ENV_2X2
    state = env.init(jax.random.key(0))
    state = STEP_2X2(state, 0)  # player 0 draws edge 0; player 1 to move
    assert int(state.current_player) == 1

    @jax.jit
    def play(s, a):
        return env.step(s, a)

    for bad in (0, -1, 12, 1000):  # drawn edge, out of range below and above
        out = play(state, jnp.int32(bad))
        assert bool(out.terminated)
        assert np.asarray(out.rewards).tolist() == [1.0, -1.0], bad
        assert np.asarray(out.legal_action_mask).all()
    # Batched: one illegal game among legal ones.
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    out = jax.jit(jax.vmap(env.step))(batch, jnp.array([0, 5], jnp.int32))
    assert np.asarray(out.terminated).tolist() == [True, False]
    assert np.asarray(out.rewards).tolist() == [[1.0, -1.0], [0.0, 0.0]]
    np.testing.assert_allclose(np.asarray(env.returns(out))[0], [1.0, -1.0])


def test_bad_action_at_the_python_boundary_raises():
    state = ENV_2X2.init(jax.random.key(0))
    for bad in (-1, 12, np.int32(99), jnp.int32(12)):
        with pytest.raises(ValueError, match=r"outside \[0, 12\)"):
            ENV_2X2.step(state, bad)
    with pytest.raises(TypeError, match="integer"):
        ENV_2X2.step(state, 1.5)


@pytest.mark.parametrize(
    "params",
    [dict(num_rows=0), dict(num_cols=16), dict(num_rows=-3, num_cols=2), dict(num_rows=2, num_cols=100)],
)
def test_board_size_out_of_range_raises(params):
    with pytest.raises(ValueError, match="must be in \\[1, 15\\]"):
        jaxgames.make("dots_and_boxes", **params)


def test_bad_types_raise():
    with pytest.raises(TypeError):
        DotsAndBoxes(2.0, 2)
    with pytest.raises(TypeError):
        DotsAndBoxes(True, 2)
    with pytest.raises(TypeError):
        DotsAndBoxes(2, 2, utility_margin="yes")


@pytest.mark.parametrize(
    "dbn,match",
    [
        ("0" * 11, "must have 12 characters; got 11"),
        ("0" * 13, "must have 12 characters; got 13"),
        ("0" * 11 + "2", "only '0' and '1'"),
        ("01x101010101", "only '0' and '1'"),
        ("", "must have 12 characters"),
    ],
)
def test_malformed_dbn_raises(dbn, match):
    with pytest.raises(ValueError, match=match):
        ENV_2X2.from_dbn(dbn)


def test_dbn_import_checks_player_and_scores():
    full_box = ascii_to_dbn(
        """
        +-+ +
        | |
        +-+ +

        + + +
        """
    )
    with pytest.raises(ValueError, match="current_player"):
        ENV_2X2.from_dbn(full_box, current_player=2)
    with pytest.raises(ValueError, match="sum to the 1 complete boxes"):
        ENV_2X2.from_dbn(full_box, scores=(1, 1))
    with pytest.raises(ValueError, match="non-negative"):
        ENV_2X2.from_dbn(full_box, scores=(-1, 2))
    state = ENV_2X2.from_dbn(full_box, current_player=1, scores=(0, 1))
    assert np.asarray(state.board.scores).tolist() == [0, 1]
    assert int(state.current_player) == 1
    assert np.asarray(state.board.box_owner).tolist() == [-1, -1, -1, -1]  # owner unknown
    assert int(state.board.box_sides[0]) == 4


def test_dbn_export_of_a_hand_built_board():
    # On 2x3: h(0,0)=0, h(2,2)=8, v(0,0)=9, v(1,3)=16 (numbering from the issue).
    env = DotsAndBoxes(2, 3)
    state = env.init(jax.random.key(0))
    for a in (0, 8, 9, 16):
        state = env.step(state, a)
    assert env.to_dbn(state) == "10000000110000001"


# --------------------------------------------------------------------------- random playouts


def test_random_playout_is_uniform_over_move_orders():
    """On 1x1 a uniformly random game is a uniformly random order of the 4 edges (24 orders)."""
    from jaxgames.games.dots_and_boxes import rules

    geom = rules.geometry(1, 1)
    n = 24_000
    bits = jax.random.bits(jax.random.key(1), (n, 4), jnp.uint32)
    board = jax.vmap(lambda _: rules.empty_board(1, 1))(jnp.arange(n))
    final, actions = jax.jit(jax.vmap(lambda b, k: rules.random_playout(geom, b, k, with_actions=True)))(board, bits)
    actions = np.asarray(actions)
    assert np.all(np.sort(actions, axis=1) == np.arange(4))
    codes = actions @ (4 ** np.arange(4))
    counts = np.unique(codes, return_counts=True)[1]
    assert len(counts) == 24
    chi2 = np.sum((counts - n / 24) ** 2 / (n / 24))
    assert chi2 < 49.7, chi2  # 23 degrees of freedom, p = 0.001
    # The last mover takes the only box.
    assert np.all(np.asarray(final.scores).sum(axis=1) == 1)


def test_random_playout_from_mid_game_matches_openspiel():
    from jaxgames.games.dots_and_boxes import rules
    from jaxgames.games.dots_and_boxes.dbn import board_from_dbn

    R, C = 3, 3
    E = num_edges(R, C)
    geom = rules.geometry(R, C)
    # Margin utility: the final margin and the number of boxes taken during
    # the playout give both scores. (Not the observation tensor: on a state
    # started from a dbn string OpenSpiel indexes it with CellState::kSet = 3
    # in a dimension of size 3, writing out of bounds and corrupting the heap.)
    game = pyspiel.load_game("dots_and_boxes", {"num_rows": R, "num_cols": C, "utility_margin": True})
    rng = np.random.default_rng(2)
    dbns = []
    for k in (0, 5, 17, 23, 24):
        drawn = set(rng.permutation(E)[:k].tolist())
        dbns.append("".join("1" if e in drawn else "0" for e in range(E)))
    boards = jax.tree.map(lambda *x: jnp.stack(x), *[board_from_dbn(R, C, d) for d in dbns])
    bits = jax.random.bits(jax.random.key(3), (len(dbns), E), jnp.uint32)
    final, actions = jax.jit(jax.vmap(lambda b, k: rules.random_playout(geom, b, k, with_actions=True)))(boards, bits)
    for i, d in enumerate(dbns):
        played = [int(a) for a in np.asarray(actions[i]) if a >= 0]
        assert sorted(played) == [e for e in range(E) if d[e] == "0"]
        ref = game.new_initial_state(d)
        for a in played:
            ref.apply_action(a)
        assert ref.is_terminal()
        edges = np.array([c == "1" for c in d])
        h, v = edges[: (R + 1) * C].reshape(R + 1, C), edges[(R + 1) * C :].reshape(R, C + 1)
        closed_before = int(np.sum(h[:-1] & h[1:] & v[:, :-1] & v[:, 1:]))
        taken, margin = R * C - closed_before, int(ref.returns()[0])
        expected = [(taken + margin) // 2, (taken - margin) // 2]
        np.testing.assert_array_equal(np.asarray(final.scores[i]), expected)
        assert int(final.num_drawn[i]) == E


@pytest.mark.parametrize("params", [dict(num_rows=1, num_cols=1), dict(num_rows=2, num_cols=3, utility_margin=True)])
def test_contract_on_other_sizes(params):
    from jaxgames.testing.api_test import api_test

    api_test(jaxgames.make("dots_and_boxes", **params), batch_size=4, max_steps=20)
