"""Battlesnake agents on hand-drawn boards (expected moves by hand from the official rules), and in play.

Boards are written with `rules.board_from_bodies` (bodies head first, ``(x, y)``
with ``y`` up). What kills a snake (``standard.go``): after every snake has
moved, a head on any snake's ``body[1:]`` or off the board; a tail moves away
unless its snake ate on the previous turn (then the tail is doubled).
Policies run under ``jit`` and ``vmap`` (over keys) as the arena runs them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.agents.battlesnake import (
    HeuristicAgent,
    QAgent,
    RandomAgent,
    RandomSafeAgent,
    arrival_times,
    safe_moves,
)
from jaxgames.games.battlesnake import Battlesnake, rules
from jaxgames.games.battlesnake.rules import DOWN, LEFT, RIGHT, UP


class _State(NamedTuple):
    """The agents read only ``state.board``."""

    board: rules.Board


# A long snake B bends around a pocket {(1, 3), (2, 3)}; its head (2, 4) is next to (3, 4) and (2, 3).
# A (length 3) at (3, 3) faces left; its neck is on the right.
#   y=4  b b B . . . .
#   y=3  b . . A a a .
#   y=2  b b b . . . .
#   y=1  . . b b b b b
_B = [(2, 4), (1, 4), (0, 4), (0, 3), (0, 2), (1, 2), (2, 2), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)]
_A = [(3, 3), (4, 3), (5, 3)]


_COMPILED = {}


def _moves(agent, board, player, n=256, seed=0):
    """The agent's moves for ``n`` keys, under jit(vmap) (one compile per agent and board shape)."""
    fn = _COMPILED.get(id(agent))
    if fn is None:
        fn = _COMPILED[id(agent)] = (agent, jax.jit(jax.vmap(lambda b, k, p: agent.policy(None, _State(b), k, p), in_axes=(None, 0, None))))
    keys = jax.random.split(jax.random.key(seed), n)
    return np.asarray(fn[1](board, keys, jnp.int32(player)))


H, RS, RND = HeuristicAgent(), RandomSafeAgent(), RandomAgent()


def test_unbatched_policies_return_an_int32_scalar():
    board = rules.board_from_bodies([_A, _B], size=7)
    for agent in (H, RS, RND):
        one = jax.jit(lambda k, p, agent=agent: agent.policy(None, _State(board), k, p))(jax.random.key(0), jnp.int32(0))
        assert one.dtype == jnp.int32 and one.shape == ()
        assert int(one) in _moves(agent, board, 0)


def test_safe_moves_tails_necks_and_walls():
    # A coils: head (1, 1), neck (2, 1), then (2, 2), tail (1, 2) above the head.
    # B's tail (0, 1) is left of A's head.
    a = [(1, 1), (2, 1), (2, 2), (1, 2)]
    b = [(0, 3), (0, 2), (0, 1)]
    board = rules.board_from_bodies([a, b], size=7)
    # up: own tail, which moves away; right: the neck; down: empty; left: B's tail, moves away.
    assert safe_moves(board, 0).tolist() == [True, False, True, True]
    # A just ate (tail doubled): its tail stays, so up dies.
    assert safe_moves(rules.board_from_bodies([a + [(1, 2)], b], size=7), 0).tolist() == [False, False, True, True]
    # B just ate: B's tail stays, so left dies.
    assert safe_moves(rules.board_from_bodies([a, b + [(0, 1)]], size=7), 0).tolist() == [True, False, True, False]
    # B at (0, 3) facing up: left is the wall, down its neck.
    assert safe_moves(board, 1).tolist() == [True, True, False, False]


def test_random_safe_plays_every_safe_move_and_only_those():
    a = [(1, 1), (2, 1), (2, 2), (1, 2)]
    b = [(0, 3), (0, 2), (0, 1), (0, 1)]  # B just ate: left of A dies
    board = rules.board_from_bodies([a, b], size=7)
    moves = _moves(RS, board, 0)
    counts = np.bincount(moves, minlength=4)
    assert counts[RIGHT] == 0 and counts[LEFT] == 0
    assert counts[UP] > 80 and counts[DOWN] > 80  # uniform over 2: 128 each (sd 8)
    # Random (legal) plays the 3 moves that do not reverse into the neck, unsafe ones included.
    assert set(_moves(RND, board, 0).tolist()) == {UP, DOWN, LEFT}


def test_random_safe_falls_back_to_a_legal_move_when_all_die():
    # A at the corner (0, 0) facing down-left into it: left and down are walls, right is B, up is the neck.
    a = [(0, 0), (0, 1), (0, 2)]
    b = [(2, 0), (1, 0), (1, 1), (2, 1)]
    board = rules.board_from_bodies([a, b], size=7)
    assert not safe_moves(board, 0).any()
    for agent in (RS, H):
        assert set(_moves(agent, board, 0).tolist()) <= {RIGHT, DOWN, LEFT}  # never back into the neck


def test_timed_flood_fill_lets_bodies_recede():
    # B stands on column x = 1 from its tail (1, 0) to its head (1, 5): cell (1, y) is left after y + 1 moves.
    b = [(1, y) for y in range(5, -1, -1)]
    a = [(5, 5), (5, 6), (6, 6)]
    board = rules.board_from_bodies([a, b], size=7)
    t = np.asarray(arrival_times(board, jnp.array([0]), jnp.array([True]), iterations=30))[0].reshape(7, 7)
    # From (0, 0) at move 1: along column 0 one move per cell.
    assert [int(t[0, y]) for y in range(7)] == [1, 2, 3, 4, 5, 6, 7]
    # Column 1 is entered from column 0 exactly when each segment has left: (1, y) at move y + 2.
    assert [int(t[1, y]) for y in range(6)] == [2, 3, 4, 5, 6, 7]
    # A's cells: its tail (6, 6) is left after 1 move, its head (5, 5) after 3 -- all reachable later.
    assert (t < 10_000).all()
    # A cut-off: with 3 sweeps nothing further than 4 moves is reached.
    short = np.asarray(arrival_times(board, jnp.array([0]), jnp.array([True]), iterations=3))[0]
    assert int(np.sum(short < 10_000)) == int(np.sum(t <= 4))


def test_heuristic_avoids_the_pocket_and_the_longer_head():
    board = rules.board_from_bodies([_A, _B], size=7)
    # Left enters a 2-cell pocket whose walls stay 6+ moves (A, length 3, is trapped); up is next to
    # B's head (B is longer: a head-to-head there kills A); right is the neck. Only down is sound.
    assert safe_moves(board, 0).tolist() == [True, False, True, True]
    assert set(_moves(H, board, 0).tolist()) == {DOWN}
    assert set(_moves(RS, board, 0).tolist()) == {UP, DOWN, LEFT}
    # The timed flood fill from the left cell (2, 3) reaches only the pocket: A's own head cell
    # (3, 3) is left after 3 moves and B's walls after 6+, but A would be there on move 2.
    left = np.asarray(arrival_times(board, jnp.array([rules.cell_index(7, 2, 3)]), jnp.array([True]), iterations=21))[0]
    assert sorted(np.flatnonzero(left < 10_000).tolist()) == [rules.cell_index(7, 1, 3), rules.cell_index(7, 2, 3)]


def test_heuristic_head_to_head_only_against_shorter_snakes():
    # A (3, 3) faces up; B's head (3, 5) faces down. Up (3, 4) is next to B's head.
    a = [(3, 3), (3, 2), (3, 1)]
    longer = [(3, 5), (3, 6), (4, 6), (5, 6)]
    board = rules.board_from_bodies([a, longer], size=7)
    assert UP not in set(_moves(H, board, 0).tolist())


def test_heuristic_seeks_food_only_when_hungry_or_short():
    # A (3, 3) faces left; food two cells ahead at (1, 3). Up and down reach it on move 3, left on move 2.
    a = [(3, 3), (4, 3), (5, 3), (6, 3), (6, 4)]
    b = [(6, 0), (5, 0)]
    food = [(1, 3)]
    hungry = rules.board_from_bodies([a, b], size=7, health=[10, 100], food=food)
    assert set(_moves(H, hungry, 0).tolist()) == {LEFT}
    # Fed (health 100) and 3 longer than B: the food does not matter, plenty of room everywhere.
    fed = rules.board_from_bodies([a, b], size=7, health=[100, 100], food=food)
    assert set(_moves(H, fed, 0).tolist()) == {UP, DOWN, LEFT}
    # Fed but not longer than B by the length lead (2): B of length 4 makes A seek food again.
    b4 = [(6, 0), (5, 0), (4, 0), (3, 0)]
    short = rules.board_from_bodies([a, b4], size=7, health=[100, 100], food=food)
    assert set(_moves(H, short, 0).tolist()) == {LEFT}


def test_q_agent_plays_the_best_relative_action():
    # B at (5, 5) faces left (neck (6, 5)); "turn right" (relative action 2) is then up.
    board = rules.board_from_bodies([[(1, 1), (1, 2), (1, 3)], [(5, 5), (6, 5), (7, 5)]], size=11)
    agent = QAgent(lambda view: jnp.array([0.1, 0.2, 0.9]))
    assert set(_moves(agent, board, 1).tolist()) == {UP}


def test_heuristic_bad_settings():
    with pytest.raises(ValueError, match="iterations"):
        HeuristicAgent(iterations=0)


def test_heuristic_outlives_random_safe_snakes():
    """20 games of 1 heuristic vs 3 random-safe on 11x11 (fair share 5 wins; measured ~95%, see the benchmark)."""
    env = Battlesnake(board_size=11, num_snakes=4, max_turns=300, observation="none")
    h, r = H, RS

    def actions(state, key):
        k = jax.random.split(key, 4)
        first = h.policy(env, state, k[0], jnp.int32(0))
        rest = jax.vmap(lambda kk, p: r.policy(env, state, kk, p))(k[1:], jnp.arange(1, 4, dtype=jnp.int32))
        return jnp.concatenate([first[None], rest])

    @jax.jit
    def play(key):
        k0, k1 = jax.random.split(key)
        s = jax.vmap(env.init)(jax.random.split(k0, 20))

        def turn(carry, k):
            s = carry
            ka, ks = jax.random.split(k)
            acts = jax.vmap(actions)(s, jax.random.split(ka, 20))
            return jax.vmap(env.step)(s, acts, jax.random.split(ks, 20)), None

        s, _ = jax.lax.scan(turn, s, jax.random.split(k1, 300))
        return s.board

    b = jax.device_get(play(jax.random.key(3)))
    survived = np.where(b.alive, b.turn[:, None], b.eliminated_on_turn)  # [20, 4]
    assert survived[:, 0].mean() > survived[:, 1:].mean() + 10
    wins = int(np.sum(b.alive[:, 0] & (b.alive.sum(axis=1) == 1)))
    assert wins >= 12, wins
