"""Onitama: hand-set rule scenarios, symmetry, perft and random games against a plain-Python oracle, bad input.

Expected values come from the official rulebook worked by hand on small ASCII
boards, or from `tests/reference/onitama_reference.py` (an independent
move generator with its own card table); never from the code under test.
"""

from __future__ import annotations

import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.games.onitama import cards, rules
from jaxgames.games.onitama.env import Onitama, OnitamaParams, canonical_action, paper_action, split_paper_observation
from tests.reference import onitama_reference as ref

CANON = Onitama()
PAPER = Onitama(action_space="paper")
PAPER_DEAL = ("Dragon", "Elephant", "Goose", "Rooster", "Monkey")
PERFT_DEALS = [
    PAPER_DEAL,
    ("Tiger", "Crab", "Frog", "Rabbit", "Eel"),
    ("Horse", "Ox", "Crane", "Boar", "Cobra"),
    ("Mantis", "Cobra", "Goose", "Tiger", "Ox"),
]


@pytest.fixture(scope="module")
def kernels():
    """Jitted single and batched kernels of both envs (compiled once for the module)."""
    out = {}
    for env in (CANON, PAPER):
        out[env.action_space] = dict(
            step=jax.jit(env.step),
            bstep=jax.jit(jax.vmap(env.step, in_axes=(0, 0, None, None))),
            from_board=jax.jit(jax.vmap(env.state_from_board, in_axes=(0, None, None, None))),
            init=jax.jit(jax.vmap(env.init, in_axes=(0, None))),
        )
    return out


def legal_set(env, state) -> set[int]:
    return set(np.flatnonzero(np.asarray(state.legal_action_mask)).tolist())


def moves_abs(state) -> set[tuple[str, int, int]]:
    """(card name, from square, to square) of every legal canonical move, in absolute squares."""
    out = set()
    p = int(state.current_player)
    hand = np.asarray(state.board.hands)[p]
    for a in legal_set(CANON, state):
        slot, fv, tv = a // 625, (a // 25) % 25, a % 25
        if fv == tv:
            out.add((cards.CARD_NAMES[hand[slot]], -1, -1))
            continue
        f, t = (fv, tv) if p == 0 else (24 - fv, 24 - tv)
        out.add((cards.CARD_NAMES[hand[slot]], int(f), int(t)))
    return out


def sq(r, c):
    return 5 * r + c


# --------------------------------------------------------------------------- cards


def test_card_table_matches_the_printed_cards():
    """Every pattern and stamp equals the oracle's independent table; the counts of Dasgupta & Chong, "Mastering the
    game of Onitama with Reinforcement Learning" (NUS USP group report, 2021), section 2.2 (1x2, 10x3, 5x4 moves) hold."""
    assert list(cards.CARD_NAMES) == ref.ORDER
    counts = []
    for k, name in enumerate(cards.CARD_NAMES):
        ours = [tuple(m) for m, ok in zip(cards.CARD_MOVES[k].tolist(), cards.CARD_MOVE_VALID[k]) if ok]
        # (d_row, d_col) owner's view = (-forward, right), in the picture's reading order.
        theirs = [(-f, r) for r, f in ref.card_moves(name)]
        assert ours == theirs, name
        assert cards.COLOR_NAMES[cards.CARD_COLORS[k]] == ref.CARDS[name][0], name
        assert cards.CARD_NAMES[cards.MIRROR_CARD[k]] == ref.MIRROR.get(name, name), name
        counts.append(len(ours))
    assert sorted(counts) == [2] + [3] * 10 + [4] * 5
    assert {cards.CARD_NAMES[k] for k in range(16) if cards.CARD_MOVE_VALID[k].sum() == 4} == set(PAPER_DEAL)
    assert int(np.sum(cards.CARD_COLORS == cards.RED)) == 8


# --------------------------------------------------------------------------- setup


def test_start_position_and_first_player_from_the_side_card_stamp(kernels):
    for side, first in (("Monkey", 1), ("Boar", 0)):  # blue, red stamps (every card: the random-deal test)
        env = Onitama(deal=("Crab", "Horse", "Ox", "Eel", side))
        s = jax.jit(env.init)(jax.random.key(0))
        assert int(s.current_player) == first, side
        assert env.dealt_names(s) == {"red": ("Crab", "Horse"), "blue": ("Ox", "Eel"), "side": side}
        pieces = np.asarray(s.board.pieces)
        np.testing.assert_array_equal(pieces[0], [20, 21, 23, 24, 22])  # Red: bottom row, master in the middle
        np.testing.assert_array_equal(pieces[1], [4, 3, 1, 0, 2])  # Blue: top row, numbered from its own left
        assert not bool(s.terminated) and not bool(s.truncated) and int(s.step_count) == 0


def test_random_deal_uses_the_key_and_the_deck(kernels):
    s = kernels["canonical"]["init"](jax.random.split(jax.random.key(3), 64), CANON.default_params)
    dealt = np.concatenate([np.asarray(s.board.hands).reshape(64, 4), np.asarray(s.board.side)[:, None]], axis=1)
    assert all(len(set(row)) == 5 for row in dealt.tolist())
    assert len({tuple(row) for row in dealt.tolist()}) > 50  # different deals
    assert len(set(dealt.reshape(-1).tolist())) == 16
    first = np.asarray(s.current_player)
    np.testing.assert_array_equal(first, cards.CARD_COLORS[dealt[:, 4]])
    paper_deck = Onitama(deck=cards.PAPER_CARDS)
    s = jax.jit(jax.vmap(paper_deck.init))(jax.random.split(jax.random.key(4), 16))
    for i in range(16):
        names = paper_deck.dealt_names(jax.tree.map(lambda x: x[i], s))
        assert {*names["red"], *names["blue"], names["side"]} == set(PAPER_DEAL)


# --------------------------------------------------------------------------- hand-set rules


def test_capture_and_card_exchange(kernels):
    s = CANON.from_text(
        """
        b.B.b
        .....
        ..b..
        ...r.
        r.R.r
        """,
        hands=(("Goose", "Ox"), ("Crane", "Boar")),
        side="Eel",
        player=0,
    )
    # Worked by hand: Goose (slot 0, id 6 < Ox 11) = up-left, left, right, down-right; Ox = up, right, down.
    got = moves_abs(s)
    assert ("Goose", sq(3, 3), sq(2, 2)) in got  # up-left onto the blue student: a capture
    assert ("Goose", sq(4, 0), sq(4, 1)) in got and ("Goose", sq(4, 4), sq(4, 3)) in got
    assert ("Goose", sq(4, 2), sq(4, 3)) in got and ("Goose", sq(4, 2), sq(4, 1)) in got
    assert ("Goose", sq(3, 3), sq(4, 4)) not in got  # down-right onto an own student
    assert ("Ox", sq(4, 4), sq(3, 4)) in got and ("Ox", sq(3, 3), sq(3, 4)) in got
    assert not any(f == sq(4, 4) and t % 5 == 0 for _, f, t in got)  # nothing wraps round the edge
    assert len(got) == len(ref.moves(ref.position(
        "b.B.b\n.....\n..b..\n...r.\nr.R.r", (("Goose", "Ox"), ("Crane", "Boar")), "Eel", 0)))
    n = kernels["canonical"]["step"](s, jnp.int32(canonical_action(0, sq(3, 3), sq(2, 2))))
    pieces = np.asarray(n.board.pieces)
    # Red's students in its reading order: (3,3), (4,0), (4,4); Blue's in its own: (2,2), (0,4), (0,0).
    np.testing.assert_array_equal(pieces[0], [sq(2, 2), sq(4, 0), sq(4, 4), -1, sq(4, 2)])
    np.testing.assert_array_equal(pieces[1], [-1, sq(0, 4), sq(0, 0), -1, sq(0, 2)])
    # Cards: Goose goes to the side (Blue receives it after its move), Red takes Eel; Blue to move; no reward.
    assert CANON.dealt_names(n) == {"red": ("Ox", "Eel"), "blue": ("Crane", "Boar"), "side": "Goose"}
    assert int(n.current_player) == 1 and not bool(n.terminated) and int(n.board.turn) == 1
    np.testing.assert_array_equal(np.asarray(n.rewards), [0, 0])


# Red to move can take Blue's master with Mantis (the Way of the Stone in one); used twice below.
STONE_POSITION = dict(
    text="""
        b...b
        .....
        .B...
        ..r..
        r.R.r
        """,
    hands=(("Mantis", "Horse"), ("Crane", "Boar")),
    side="Eel",
    player=0,
)


@pytest.mark.parametrize("space", ["canonical", "paper"])
def test_way_of_the_stone(space, kernels):
    env = CANON if space == "canonical" else PAPER
    s = env.from_text(**STONE_POSITION)
    # Red student on (3, 2) = its student 1 in reading order; Mantis (slot 0, id 9 < Horse 10) up-left hits (2, 1).
    a = canonical_action(0, sq(3, 2), sq(2, 1)) if space == "canonical" else paper_action(0, 0, 0)
    assert a in legal_set(env, s)
    n = kernels[space]["step"](s, jnp.int32(a))
    assert bool(n.terminated) and not bool(n.truncated)
    np.testing.assert_array_equal(np.asarray(n.rewards), [1.0, -1.0])
    assert int(n.board.winner) == 0 and int(n.board.pieces[1, 4]) == -1
    assert env.dealt_names(n) == env.dealt_names(s)  # the game ended before the cards moved
    assert bool(np.all(np.asarray(n.legal_action_mask)))
    again = kernels[space]["step"](n, jnp.int32(0))
    np.testing.assert_array_equal(np.asarray(again.rewards), [0, 0])
    assert int(again.step_count) == int(n.step_count)


def test_way_of_the_stream_needs_the_master_and_the_enemy_temple(kernels):
    text = """
        b...b
        .Br..
        ..R..
        .....
        r...r
        """
    s = PAPER.from_text(text, hands=(("Boar", "Tiger"), ("Crane", "Ox")), side="Eel", player=0)
    # Red students in reading order: (1,2)=1, (4,0)=2, (4,4)=3; master (2,2).
    # Tiger (slot 0) moves the master two up to (0, 2), the blue temple: a win for Red.
    master_up2 = paper_action(4, 0, 0)
    student_up = paper_action(0, 1, 0)  # Boar (slot 1) student 1 up to (0, 2): not a win
    assert {master_up2, student_up} <= legal_set(PAPER, s)
    won = kernels["paper"]["step"](s, jnp.int32(master_up2))
    assert bool(won.terminated) and int(won.board.winner) == 0
    np.testing.assert_array_equal(np.asarray(won.rewards), [1.0, -1.0])
    assert int(won.board.pieces[0, 4]) == sq(0, 2) and int(won.board.pieces[1, 4]) == sq(1, 1)
    on = kernels["paper"]["step"](s, jnp.int32(student_up))
    assert not bool(on.terminated) and int(on.board.pieces[0, 0]) == sq(0, 2)
    np.testing.assert_array_equal(np.asarray(on.rewards), [0, 0])
    # Blue wins the same way on Red's temple (square 22).
    blue = CANON.from_text(
        """
        b...b
        .....
        ..B..
        .R...
        r...r
        """,
        hands=(("Boar", "Mantis"), ("Tiger", "Ox")),
        side="Eel",
        player=1,
    )
    # Blue's Tiger (slot 0) moves two squares forward = down, from (2, 2) to (4, 2): Red's temple (Red's master is on (3,1)).
    a = canonical_action(0, 24 - sq(2, 2), 24 - sq(4, 2))
    assert a in legal_set(CANON, blue)
    n = kernels["canonical"]["step"](blue, jnp.int32(a))
    assert bool(n.terminated) and int(n.board.winner) == 1
    np.testing.assert_array_equal(np.asarray(n.rewards), [-1.0, 1.0])


def test_both_wins_at_once(kernels):
    """The master captures the enemy master standing on its own temple: one win, rewards +1/-1 (Dasgupta & Chong, figure 2.3)."""
    s = CANON.from_text(
        """
        b.B.b
        .R...
        .....
        .....
        r...r
        """,
        hands=(("Rabbit", "Boar"), ("Crane", "Ox")),
        side="Eel",
        player=0,
    )
    a = canonical_action(0, sq(1, 1), sq(0, 2))  # Rabbit (id 3) up-right
    assert a in legal_set(CANON, s)
    n = kernels["canonical"]["step"](s, jnp.int32(a))
    assert bool(n.terminated) and int(n.board.winner) == 0
    np.testing.assert_array_equal(np.asarray(n.rewards), [1.0, -1.0])
    assert int(n.board.pieces[1, 4]) == -1 and int(n.board.pieces[0, 4]) == sq(0, 2)


PASS_POSITION = """
    R...b
    r....
    r.B..
    r....
    r...b
    """


@pytest.mark.parametrize("space", ["canonical", "paper"])
def test_no_legal_move_passes_with_a_card_exchange(space, kernels):
    """Red's column is full and Tiger and Horse only move along it or off the board: Red must pass, giving up a card."""
    env = CANON if space == "canonical" else PAPER
    s = env.from_text(PASS_POSITION, hands=(("Tiger", "Horse"), ("Crane", "Ox")), side="Boar", player=0)
    assert ref.moves(ref.position(PASS_POSITION, (("Tiger", "Horse"), ("Crane", "Ox")), "Boar", 0)) == [
        ("pass", "Tiger"),
        ("pass", "Horse"),
    ]
    assert legal_set(env, s) == set(env.pass_actions)
    assert env.pass_actions == ((0, 625) if space == "canonical" else (32, 36))
    for slot, given, kept in ((0, "Tiger", "Horse"), (1, "Horse", "Tiger")):
        n = kernels[space]["step"](s, jnp.int32(env.pass_actions[slot]))
        np.testing.assert_array_equal(np.asarray(n.board.pieces), np.asarray(s.board.pieces))  # nothing moved
        names = env.dealt_names(n)
        assert set(names["red"]) == {kept, "Boar"} and names["side"] == given and names["blue"] == ("Ox", "Crane")
        assert int(n.current_player) == 1 and int(n.board.turn) == 1
        assert not bool(n.terminated) and not bool(n.truncated)
        np.testing.assert_array_equal(np.asarray(n.rewards), [0, 0])
    # Any other action is illegal: the mover loses (jaxgames.core's rule).
    bad = 1 if space == "canonical" else 0
    n = kernels[space]["step"](s, jnp.int32(bad))
    assert bool(n.terminated)
    np.testing.assert_array_equal(np.asarray(n.rewards), [-1.0, 1.0])


def test_used_card_is_rotated_for_the_opponent(kernels):
    """Red moves with Tiger (two up); Blue, after taking Tiger from the side, moves two *down* with it."""
    env = Onitama(deal=("Tiger", "Boar", "Ox", "Crane", "Dragon"))  # Dragon: red stamp, Red starts
    step = jax.jit(env.step)
    s = env.init(jax.random.key(0))
    assert int(s.current_player) == 0
    s = step(s, jnp.int32(canonical_action(0, sq(4, 0), sq(2, 0))))  # Tiger: student two up
    assert env.dealt_names(s) == {"red": ("Dragon", "Boar"), "blue": ("Ox", "Crane"), "side": "Tiger"}
    # Blue's moves with Ox: forward (down), right (Blue's right = our left), back.
    got = moves_abs(s)
    assert ("Ox", sq(0, 0), sq(1, 0)) in got and ("Ox", sq(0, 4), sq(1, 4)) in got
    assert {t - f for c, f, t in got if c == "Ox"} == {5}  # sideways squares hold own pieces; back is off the board
    s = step(s, jnp.int32(canonical_action(0, 24 - sq(0, 4), 24 - sq(1, 4))))  # Blue: Ox, student down one
    assert env.dealt_names(s)["blue"] == ("Tiger", "Crane") and env.dealt_names(s)["side"] == "Ox"
    s = step(s, jnp.int32(canonical_action(0, sq(2, 0), sq(1, 2))))  # Red: Dragon (slot 0), one up and two right
    assert not bool(s.terminated)
    tiger = {(f, t) for name, f, t in moves_abs(s) if name == "Tiger"}
    # Blue's Tiger: two forward = two rows down, one back = one row up.
    assert (sq(0, 0), sq(2, 0)) in tiger and (sq(1, 4), sq(3, 4)) in tiger and (sq(1, 4), sq(0, 4)) in tiger
    assert tiger and all(t - f in (10, -5) for f, t in tiger)


def test_turn_limit_truncates_with_a_draw(kernels):
    env = Onitama(deal=PAPER_DEAL, max_turns=3)
    step = jax.jit(env.step)
    s = env.init(jax.random.key(0))
    for t in range(3):
        assert not bool(s.truncated)
        a = int(np.flatnonzero(np.asarray(s.legal_action_mask))[0])
        s = step(s, jnp.int32(a))
    assert bool(s.truncated) and not bool(s.terminated) and int(s.board.turn) == 3
    np.testing.assert_array_equal(np.asarray(s.rewards), [0, 0])
    assert bool(np.all(np.asarray(s.legal_action_mask)))
    again = step(s, jnp.int32(5))
    assert int(again.step_count) == 3 and bool(again.truncated)
    # The limit is a traced parameter: the default env (200 turns) truncates at 3 when given params, no new env.
    params = OnitamaParams(max_turns=jnp.int32(3))
    s = CANON.init(jax.random.key(0), params)
    for _ in range(3):
        assert not bool(s.truncated)
        s = kernels["canonical"]["step"](s, jnp.argmax(s.legal_action_mask).astype(jnp.int32), None, params)
    assert bool(s.truncated) and int(s.board.turn) == 3


# --------------------------------------------------------------------------- observations


def test_paper_observation_layout():
    env = Onitama(action_space="paper", deal=PAPER_DEAL)  # Red: Dragon, Elephant; Blue: Goose, Rooster; side Monkey
    s = env.init(jax.random.key(0))
    assert int(s.current_player) == 1  # Monkey has a blue stamp
    planes, vec = split_paper_observation(s.observation)
    planes, vec = np.asarray(planes), np.asarray(vec)
    assert planes.shape == (10, 5, 5) and vec.shape == (10,)
    # Blue's view: its home row at the bottom, its student 1 at its bottom-left.
    for k, col in enumerate((0, 1, 3, 4)):
        assert planes[k, 4, col] == 1 and planes[k].sum() == 1
        assert planes[5 + k, 0, 4 - col] == 1 and planes[5 + k].sum() == 1  # Red's student k+1, seen from Blue
    assert planes[4, 4, 2] == 1 and planes[9, 0, 2] == 1
    # Cards in Dasgupta & Chong's order Dragon, Elephant, Goose, Rooster, Monkey: Blue holds Goose, Rooster.
    np.testing.assert_array_equal(vec, [0, 0, 1, 1, 0, 1, 1, 0, 0, 0])
    red_view = np.asarray(env.observe(s, jnp.int32(0)))
    np.testing.assert_array_equal(red_view[250:], [1, 1, 0, 0, 0, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(red_view[:250].reshape(10, 5, 5)[0], planes[5][::-1, ::-1])


def test_canonical_observation_layout():
    env = Onitama(deal=("Tiger", "Frog", "Ox", "Eel", "Crab"))  # Crab: blue stamp
    s = env.init(jax.random.key(0))
    obs = np.asarray(s.observation)
    assert obs.shape == (5, 5, 9) and int(s.current_player) == 1
    np.testing.assert_array_equal(obs[4, :, 0], [1, 1, 0, 1, 1])
    assert obs[4, 2, 1] == 1 and obs[0, 2, 3] == 1 and obs[0, :, 2].tolist() == [1, 1, 0, 1, 1]
    # Blue's hand sorted by id: Ox (11) then Eel (14); Ox moves up, right, down from the centre.
    assert {(r, c) for r, c in zip(*np.nonzero(obs[:, :, 4]))} == {(1, 2), (2, 3), (3, 2)}
    assert {(r, c) for r, c in zip(*np.nonzero(obs[:, :, 5]))} == {(1, 1), (2, 3), (3, 1)}
    assert {(r, c) for r, c in zip(*np.nonzero(obs[:, :, 6]))} == {(1, 2), (2, 0), (2, 4)}  # Crab, side card
    # Red's Tiger as Red uses it, seen from Blue's side: two toward Blue (down here), one back (up).
    assert {(r, c) for r, c in zip(*np.nonzero(obs[:, :, 7]))} == {(4, 2), (1, 2)}


# --------------------------------------------------------------------------- symmetry


def _mirror_board(board):
    """The board mirrored left-right (columns reversed), every card replaced by its mirror card (batched)."""
    pieces = np.asarray(board.pieces)
    mirrored = np.where(pieces >= 0, 5 * (pieces // 5) + 4 - pieces % 5, -1)
    hands = np.sort(cards.MIRROR_CARD[np.asarray(board.hands)], axis=-1)
    return board.replace(
        pieces=jnp.asarray(mirrored, jnp.int32),
        hands=jnp.asarray(hands, jnp.int32),
        side=jnp.asarray(cards.MIRROR_CARD[np.asarray(board.side)], jnp.int32),
    )


def test_left_right_mirror_gives_mirrored_moves(kernels):
    """Mirroring the board left-right and every card to its mirror card mirrors the legal moves (random positions)."""
    rng = random.Random(7)
    n = 16
    params = CANON.default_params
    states = kernels["canonical"]["init"](jax.random.split(jax.random.key(11), n), params)
    mirror_sq = lambda q: -1 if q < 0 else 5 * (q // 5) + 4 - q % 5
    checked = 0
    for t in range(25):
        mirrored = jax.tree.map(np.asarray, kernels["canonical"]["from_board"](_mirror_board(states.board), None, 0, params))
        host = jax.tree.map(np.asarray, states)
        for i in range(n):
            s = jax.tree.map(lambda x: x[i], host)
            if bool(s.terminated | s.truncated):
                continue
            m = jax.tree.map(lambda x: x[i], mirrored)
            mirror_card = lambda name: cards.CARD_NAMES[cards.MIRROR_CARD[cards.CARD_NAMES.index(name)]]
            expected = {(mirror_card(c), mirror_sq(f), mirror_sq(t)) for c, f, t in moves_abs(s)}
            assert moves_abs(m) == expected
            checked += 1
        acts = [rng.choice(np.flatnonzero(host.legal_action_mask[i]).tolist()) for i in range(n)]
        states = kernels["canonical"]["bstep"](states, jnp.asarray(acts, jnp.int32), None, params)
    assert checked > 150


# --------------------------------------------------------------------------- perft


def kernel_perft(space: str, kernels, deal, depth: int, chunk: int = 1024) -> list[int]:
    """Move-generation counts from the kernel: legal actions of each frontier, children stepped in vmapped chunks."""
    env = CANON if space == "canonical" else PAPER
    params = env.default_params
    board = rules.deal_board(jnp.asarray([cards.card_id(n) for n in deal], jnp.int32))
    frontier = jax.tree.map(lambda x: x[None], env.state_from_board(board))
    counts = []
    for d in range(depth):
        done = np.asarray(frontier.terminated | frontier.truncated)
        mask = np.asarray(frontier.legal_action_mask) & ~done[:, None]
        counts.append(int(mask.sum()))
        if d == depth - 1:
            break
        rows, acts = np.nonzero(mask)
        children = []
        for start in range(0, len(rows), chunk):
            r = rows[start : start + chunk]
            a = acts[start : start + chunk]
            pad = chunk - len(r)
            r = np.concatenate([r, np.zeros(pad, r.dtype)])
            a = np.concatenate([a, np.full(pad, a[0], a.dtype)])
            parents = jax.tree.map(lambda x: x[r], frontier)
            out = kernels[space]["bstep"](parents, jnp.asarray(a, jnp.int32), None, params)
            children.append(jax.tree.map(lambda x: x[: chunk - pad], out))
        frontier = jax.tree.map(lambda *xs: jnp.concatenate(xs), *children)
    return counts


@pytest.mark.parametrize("deal", PERFT_DEALS, ids=lambda d: "-".join(d))
def test_perft_against_the_reference(deal, kernels):
    expected = ref.perft_divide(ref.start(deal), 4)
    assert kernel_perft("paper", kernels, deal, 4) == expected
    if deal in PERFT_DEALS[:2]:  # the canonical space to depth 3 on two deals (same move generator, other encoding)
        assert kernel_perft("canonical", kernels, deal, 3) == expected[:3]


# --------------------------------------------------------------------------- random games against the oracle


def _ref_from_kernel_board(board, i) -> ref.Position:
    """The oracle's position of game ``i`` of a batch of boards (numpy leaves)."""
    pieces = board.pieces[i]
    hands = board.hands[i]
    return ref.Position(
        pieces=[[None if q < 0 else (int(q) // 5, int(q) % 5) for q in pieces[p]] for p in (0, 1)],
        hands=[[cards.CARD_NAMES[k] for k in hands[p]] for p in (0, 1)],
        side=cards.CARD_NAMES[int(board.side[i])],
        player=int(board.player[i]),
        turn=int(board.turn[i]),
    )


def _random_sparse_position(rng: random.Random) -> ref.Position:
    """A random position with few pieces, built for the oracle.

    One in four is a "blocked column": the player to move fills its left
    column (as it sees the board) and holds Tiger and Horse, which only move
    along that column or off the board, so it must pass (the rest is random).
    """
    blocked = rng.random() < 0.25
    mover = rng.randint(0, 1)
    names = rng.sample([n for n in ref.ORDER if n not in ("Tiger", "Horse")], 3)
    while True:
        squares = rng.sample([(r, c) for r in range(5) for c in range(1, 4)] if blocked else
                             [(r, c) for r in range(5) for c in range(5)], 2 + rng.randint(0, 8))
        masters, rest = squares[:2], squares[2:]
        if masters[0] != (0, 2) and masters[1] != (4, 2):
            break
    pieces = [[None] * 5, [None] * 5]
    pieces[0][4], pieces[1][4] = masters
    for j, s in enumerate(rest):
        pieces[j % 2][j // 2] = s
    if not blocked:
        five = rng.sample(ref.ORDER, 5)
        return ref.Position(pieces, [five[0:2], five[2:4]], five[4], mover)
    col = 0 if mover == 0 else 4
    column = [(r, col) for r in range(5)]
    rng.shuffle(column)
    pieces[mover] = column[:4] + [column[4]]
    hands = [None, None]
    hands[mover] = ["Tiger", "Horse"]
    hands[1 - mover] = names[0:2]
    return ref.Position(pieces, hands, names[2], mover)


def _kernel_boards(positions):
    pieces = np.array([[[-1 if s is None else 5 * s[0] + s[1] for s in pos.pieces[p]] for p in (0, 1)] for pos in positions])
    hands = np.array([[sorted(ref.ORDER.index(c) for c in pos.hands[p]) for p in (0, 1)] for pos in positions])
    n = len(positions)
    return rules.Board(
        pieces=jnp.asarray(pieces, jnp.int32),
        hands=jnp.asarray(hands, jnp.int32),
        side=jnp.asarray([ref.ORDER.index(pos.side) for pos in positions], jnp.int32),
        player=jnp.asarray([pos.player for pos in positions], jnp.int32),
        turn=jnp.zeros(n, jnp.int32),
        winner=jnp.full(n, -1, jnp.int32),
    )


def _check_against_reference(kernels, positions, states, max_turns: int, rng: random.Random) -> dict:
    """Steps the oracle's games and both kernels' batches in lockstep with uniformly random moves."""
    params = {space: OnitamaParams(max_turns=jnp.int32(max_turns)) for space in ("canonical", "paper")}
    stats = dict(steps=0, passes=0, wins=0, draws=0)
    n = len(positions)
    alive = [True] * n
    for _ in range(max_turns + 1):
        acts = {"canonical": [], "paper": []}
        reward_checks = []
        host = {space: jax.tree.map(np.asarray, st) for space, st in states.items()}
        for i, pos in enumerate(positions):
            done_ref = pos.winner is not None or pos.turn >= max_turns
            for space, st in host.items():
                assert bool(st.terminated[i]) == (pos.winner is not None), i
                assert bool(st.truncated[i]) == (pos.winner is None and pos.turn >= max_turns), i
                board = _ref_from_kernel_board(st.board, i)
                assert board.pieces == pos.pieces and board.side == pos.side and board.turn == pos.turn
                assert [sorted(h) for h in board.hands] == [sorted(h) for h in pos.hands]
                if not done_ref:
                    assert board.player == pos.player
            if done_ref:
                if alive[i]:
                    stats["wins" if pos.winner is not None else "draws"] += 1
                    alive[i] = False
                for space in acts:
                    acts[space].append(0)
                continue
            legal = ref.moves(pos)
            for space, to_id in (("canonical", ref.canonical_action), ("paper", ref.paper_action)):
                mask = np.zeros(host[space].legal_action_mask.shape[1], bool)
                mask[[to_id(pos, m) for m in legal]] = True
                np.testing.assert_array_equal(host[space].legal_action_mask[i], mask)
            move = rng.choice(legal)
            stats["passes"] += move[0] == "pass"
            stats["steps"] += 1
            acts["canonical"].append(ref.canonical_action(pos, move))
            acts["paper"].append(ref.paper_action(pos, move))
            nxt = ref.play(pos, move)
            positions[i] = nxt
            expected_rewards = [0.0, 0.0] if nxt.winner is None else [1.0 if p == nxt.winner else -1.0 for p in (0, 1)]
            reward_checks.append((i, expected_rewards))
        if not any(alive):
            break
        for space in states:
            states[space] = kernels[space]["bstep"](states[space], jnp.asarray(acts[space], jnp.int32), None, params[space])
            got = np.asarray(states[space].rewards)
            for i, r in reward_checks:
                np.testing.assert_array_equal(got[i], r)
    assert not any(alive)
    return stats


def test_random_games_against_the_reference(kernels):
    """48 random games from random deals (init by key) stepped in both kernels and the oracle, compared every step."""
    n, max_turns = 48, 40
    rng = random.Random(0)
    keys = jax.random.split(jax.random.key(5), n)
    states = {space: kernels[space]["init"](keys, OnitamaParams(max_turns=jnp.int32(max_turns))) for space in ("canonical", "paper")}
    board = states["canonical"].board
    positions = []
    for i in range(n):
        names = [cards.CARD_NAMES[k] for k in np.asarray(board.hands[i]).reshape(-1)] + [cards.CARD_NAMES[int(board.side[i])]]
        positions.append(ref.start(names))
    stats = _check_against_reference(kernels, positions, states, max_turns, rng)
    assert stats["wins"] > 10 and stats["draws"] > 0, stats


def test_random_sparse_positions_against_the_reference(kernels):
    """64 random positions with few pieces (where passes happen), played out in both kernels and the oracle."""
    n, max_turns = 64, 30
    rng = random.Random(1)
    positions = [_random_sparse_position(rng) for _ in range(n)]
    boards = _kernel_boards(positions)
    params = OnitamaParams(max_turns=jnp.int32(max_turns))
    states = {space: kernels[space]["from_board"](boards, None, 0, params) for space in ("canonical", "paper")}
    stats = _check_against_reference(kernels, positions, states, max_turns, rng)
    assert stats["passes"] >= 10 and stats["wins"] > 10, stats


def test_contract_in_the_paper_action_space():
    """`tests/test_contract.py` runs the registered default (canonical space); Dasgupta & Chong's 40-action space passes it too."""
    from jaxgames.testing.api_test import api_test

    api_test(Onitama(action_space="paper", deck=cards.PAPER_CARDS, max_turns=8), batch_size=2, max_steps=10)


# --------------------------------------------------------------------------- bad input


def test_bad_settings_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown Onitama card 'Dragonfly'"):
        Onitama(deal=("Dragonfly", "Tiger", "Crab", "Frog", "Eel"))
    with pytest.raises(ValueError, match="repeats the card 'Tiger'"):
        Onitama(deal=("Tiger", "tiger", "Crab", "Frog", "Eel"))
    with pytest.raises(ValueError, match="exactly 5 cards"):
        Onitama(deal=("Tiger", "Crab", "Frog", "Eel"))
    with pytest.raises(ValueError, match="exactly 5 cards"):
        Onitama(deal=("Tiger", "Crab", "Frog", "Eel", "Ox", "Boar"))
    with pytest.raises(TypeError, match="sequence of card names"):
        Onitama(deal="Tiger")
    with pytest.raises(TypeError, match="name"):
        Onitama(deal=("Tiger", 3, "Frog", "Eel", "Ox"))
    with pytest.raises(ValueError, match="at least 5"):
        Onitama(deck=("Tiger", "Crab", "Frog", "Eel"))
    with pytest.raises(ValueError, match="not both"):
        Onitama(deal=PAPER_DEAL, deck=PAPER_DEAL)
    with pytest.raises(ValueError, match="action_space"):
        Onitama(action_space="pieces")
    with pytest.raises(ValueError, match="max_turns"):
        Onitama(max_turns=0)
    with pytest.raises(TypeError, match="max_turns"):
        Onitama(max_turns=20.0)
    with pytest.raises(ValueError, match="unknown Onitama card"):
        jaxgames.make("onitama", deal=("Tiger", "Crab", "Frog", "Eel", "Phoenix"))
    assert Onitama(deal=PAPER_DEAL) == jaxgames.make("onitama", deal=[n.lower() for n in PAPER_DEAL])


def test_bad_positions_raise_clear_errors():
    good = "b.B.b\n.....\n.....\n.....\nr.R.r"
    hands = (("Tiger", "Crab"), ("Frog", "Eel"))
    with pytest.raises(ValueError, match="exactly one master"):
        CANON.from_text(good.replace("R", "r"), hands, "Ox")
    with pytest.raises(ValueError, match="5 lines"):
        CANON.from_text(good + "\n.....", hands, "Ox")
    with pytest.raises(ValueError, match="unknown square 'x'"):
        CANON.from_text(good.replace("b.B", "x.B"), hands, "Ox")
    with pytest.raises(ValueError, match="repeats the card"):
        CANON.from_text(good, hands, "Tiger")
    with pytest.raises(ValueError, match="enemy temple"):
        CANON.from_text("b.R.b\n.....\n..B..\n.....\nr...r", hands, "Ox")
    with pytest.raises(ValueError, match="two cards"):
        CANON.from_text(good, (("Tiger",), ("Frog", "Eel")), "Ox")


def test_bad_actions(kernels):
    s = PAPER.init(jax.random.key(0))
    with pytest.raises(ValueError, match=r"outside \[0, 40\)"):
        PAPER.step(s, 40)
    with pytest.raises(ValueError, match=r"outside \[0, 1250\)"):
        CANON.step(CANON.init(jax.random.key(0)), -1)
    with pytest.raises(TypeError, match="integers"):
        PAPER.step(s, 1.0)
    with pytest.raises(TypeError, match="integers"):
        jax.jit(PAPER.step)(s, jnp.float32(3))
    # A traced illegal action ends the game with the mover penalised (jaxgames.core's rule).
    illegal = int(np.flatnonzero(~np.asarray(s.legal_action_mask))[0])
    n = kernels["paper"]["step"](s, jnp.int32(illegal))
    mover = int(s.current_player)
    assert bool(n.terminated) and float(n.rewards[mover]) == -1.0 and float(n.rewards[1 - mover]) == 1.0


# --------------------------------------------------------------------------- renderers


def test_text_picture_of_the_start_and_round_trip(kernels):
    from jaxgames.games.onitama import render

    env = Onitama(deal=PAPER_DEAL)
    s = CANON.state_from_board(rules.deal_board(jnp.asarray([cards.card_id(n) for n in PAPER_DEAL], jnp.int32)))
    assert render.to_text(s) == (
        "blue: Goose, Rooster\n"
        "b b B b b\n"
        ". . . . .\n"
        ". . . . .\n"
        ". . . . .\n"
        "r r R r r\n"
        "red: Dragon, Elephant\n"
        "side: Monkey; turn 0: blue to move\n"
    )
    a = canonical_action(0, 24 - sq(0, 3), 24 - sq(1, 4))  # Blue's Goose: its student 2 forward-left (down-right here)
    assert render.action_to_text(env, s, a) == "blue Goose: (0, 3) -> (1, 4)"
    n = kernels["canonical"]["step"](s, jnp.int32(a))
    assert render.to_text(n).splitlines()[1:3] == ["b b B . b", ". . . . b"]
    text = render.game_text(env, [s, n], [a])
    assert "> blue Goose: (0, 3) -> (1, 4)" in text and text.count("side:") == 2
    with pytest.raises(ValueError, match="not legal"):
        render.action_to_text(env, s, 1)
    # The board lines read back to the same pieces (as sets: the parser numbers students by reading order).
    states = kernels["canonical"]["init"](jax.random.split(jax.random.key(2), 4), CANON.default_params)
    for t in range(12):
        acts = [int(np.flatnonzero(np.asarray(states.legal_action_mask[i]))[t % 2]) for i in range(4)]
        states = kernels["canonical"]["bstep"](states, jnp.asarray(acts, jnp.int32), None, CANON.default_params)
        host = jax.tree.map(np.asarray, states)
        for i in range(4):
            one = jax.tree.map(lambda x: x[i], host)
            if bool(one.terminated):
                continue
            back = rules.pieces_from_text("\n".join(render.to_text(one).splitlines()[1:6]))
            pieces = np.asarray(one.board.pieces)
            for p in (0, 1):
                assert back[p, 4] == pieces[p, 4] and set(back[p, :4].tolist()) == set(pieces[p, :4].tolist())


def test_svg_pictures_of_a_state_and_a_game(kernels):
    import xml.etree.ElementTree as ET

    from jaxgames.games.onitama import render

    ns = "{http://www.w3.org/2000/svg}"
    s = PAPER.from_text(**STONE_POSITION)
    won = kernels["paper"]["step"](s, jnp.int32(paper_action(0, 0, 0)))
    assert render.status(won) == "turn 1: red wins (Way of the Stone)"
    root = ET.fromstring(render.state_svg(s))
    assert len(root.findall(f".//{ns}circle")) == 7
    assert len(root.findall(f".//{ns}circle[@class='master']")) == 2
    assert sorted(g.get("data-card") for g in root.iter(f"{ns}g")) == sorted(["Mantis", "Horse", "Crane", "Boar", "Eel"])
    assert len(root.findall(f".//{ns}rect[@class='temple']")) == 2
    game = ET.fromstring(render.game_svg([s, won]))
    assert len([g for g in game.iter(f"{ns}g") if g.get("class") == "state"]) == 2
    assert "red wins" in "".join(game.itertext())
    with pytest.raises(ValueError, match="one state"):
        render.state_svg(jax.tree.map(lambda x: x[None], s))
    with pytest.raises(ValueError, match="at least one"):
        render.game_svg([])


def test_random_action_is_uniform_over_the_legal_actions():
    """`Onitama.random_action` draws every legal action (and only those) about equally often, passes included."""
    draws = 3000
    keys = jax.random.split(jax.random.key(9), draws)
    start = rules.deal_board(jnp.asarray([cards.card_id(n) for n in PAPER_DEAL], jnp.int32))
    blocked = rules.board_from_text(PASS_POSITION, (("Tiger", "Horse"), ("Crane", "Ox")), "Boar", player=0)
    for env in (CANON, PAPER):
        for board in (start, blocked):
            s = env.state_from_board(board)
            picks = np.asarray(jax.jit(jax.vmap(env.random_action, in_axes=(0, None)))(keys, s))
            legal = legal_set(env, s)
            assert set(picks.tolist()) == legal
            counts = np.bincount(picks, minlength=env.num_actions)[sorted(legal)]
            assert counts.min() > 0.6 * draws / len(legal), counts
