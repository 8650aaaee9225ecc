"""`TailChaserAgent` (Noah Spriggs' "Rough Strategy") on hand-drawn boards, and in play.

Expected moves are read off the drawings by the official rules (a cell
holding ``v`` in a body is left after ``v`` moves; a head-to-head kills the
shorter or equal snake) and the write-up's rules, never off the code.
Drawings: top row ``y = 6``; ``up`` is ``y + 1``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.agents.battlesnake import RandomSafeAgent
from jaxgames.agents.battlesnake_public import TailChaserAgent
from jaxgames.evaluation.arena import play
from jaxgames.games.battlesnake import Battlesnake, rules
from jaxgames.games.battlesnake.render import from_ascii

UP, RIGHT, DOWN, LEFT = rules.UP, rules.RIGHT, rules.DOWN, rules.LEFT


class _State(NamedTuple):
    """The agent reads only ``state.board``."""

    board: rules.Board


AGENT = TailChaserAgent()
_ONE = jax.jit(lambda b, k, p: AGENT.policy(None, _State(b), k, p))
_KEYS = jax.jit(jax.vmap(lambda b, k, p: AGENT.policy(None, _State(b), k, p), in_axes=(None, 0, None)))


def _moves(text, player=0, n=32, **kw):
    """The set of moves over ``n`` keys (one compile per board shape)."""
    board = from_ascii(text, **kw)
    return set(np.asarray(_KEYS(board, jax.random.split(jax.random.key(1), n), jnp.int32(player))).tolist())


# A (0,3) against the left wall: up (0,4) is B's body for 2 more moves (B's tail is (0,5)); right is A's neck.
ONE_SAFE = """
. . . . . . .
b . . . . . .
b b b B . . .
A a a . . . .
. . . . . . .
. . . . . . .
. . * . . . .
"""

# B (length 5, its tail doubled) walls x = 4; (4,3) stays 2 moves. The food (5,3) lies behind it.
BEHIND_BODY = """
. . . . . . .
. . . . . . .
. . . . . . .
. . . A b * .
. . . a b . .
. . . a b . .
. . . . B . .
"""

# A (length 4) faces up; its tail (5,2) is nearest by right (4,3). B's head (4,4) faces down:
# it may move to (3,4) (A's up) and (4,3) (A's right).
NEAR_HEAD = {
    5: """
. . . . b b b
. . . . b . .
. . . . B . .
. . . A . . .
. . . a a a .
. . . . . . .
. . . . . . .
""",
    4: """
. . . . b b .
. . . . b . .
. . . . B . .
. . . A . . .
. . . a a a .
. . . . . . .
. . . . . . .
""",
    3: """
. . . . b . .
. . . . b . .
. . . . B . .
. . . A . . .
. . . a a a .
. . . . . . .
. . . . . . .
""",
}

# A (1,1) faces left: food (0,1) one move left, food (3,4) near the centre. B's head is next to
# (3,4) (1 move; A needs 5 up), or far away (7 moves).
TWO_FOODS = {
    "near": """
. . . b b . .
. . . B . . .
. . . * . . .
. . . . . . .
. . . . . . .
* A a a . . .
. . . . . . .
""",
    "far": """
. . . . . . .
. . . . . . .
. . . * . . .
. . . . . . .
. . . . . . b
* A a a . . b
. . . . . . B
""",
}

# The food (0,0) ends a corridor along y = 0 under B's body (values 8, 7, 6 on (0,1), (1,1), (2,1)).
# A (3,0) eats it at move 3, then its head's neighbours are its own body (4) and B's (5): no way
# back to its tail. Up (3,1) leads round to its tail (6,0) in 5 moves.
TRAP = """
. . b . . . .
. . b . . . .
. . b . . . .
. . b . . . .
B . b . . . .
b b b . . . .
* . . A a a a
"""


def test_policy_is_an_int32_scalar_and_deterministic_given_the_key():
    board = from_ascii(BEHIND_BODY, stack={1: 1})
    one = _ONE(board, jax.random.key(3), jnp.int32(0))
    assert one.dtype == jnp.int32 and one.shape == ()
    assert int(one) == int(_ONE(board, jax.random.key(3), jnp.int32(0)))


def test_the_only_safe_move_is_taken():
    assert _moves(ONE_SAFE) == {DOWN}


def test_never_into_a_body_for_the_food_behind_it():
    # Right (4,3) is B's body for 2 more moves; down is the neck. The food is not A's (B reaches
    # (5,3) at move 4, as A does, and is longer), but the move into the body is excluded anyway.
    board_moves = _moves(BEHIND_BODY, stack={1: 1})
    assert board_moves and board_moves <= {UP, LEFT}


def test_no_safe_move_falls_back_to_a_legal_one():
    # A in the corner (0,0), neck up (0,1); right (1,0) is B's body for 2 more moves.
    moves = _moves("""
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        a . . . . . .
        a b b b . . .
        A b . B . . .
    """, stack={1: 1})
    assert moves and moves <= {RIGHT, DOWN, LEFT}


@pytest.mark.parametrize("b_length,expected", [(5, {LEFT}), (4, {LEFT}), (3, {RIGHT})])
def test_cells_next_to_an_equal_or_longer_head_are_avoided(b_length, expected):
    # Tail chasing (no food) goes right, 3 moves to the tail; up and left take 5. Against B of
    # length >= 4 (A's) both up and right may meet B's head, so only left is taken.
    assert _moves(NEAR_HEAD[b_length]) == expected


@pytest.mark.parametrize("where,expected", [("near", {LEFT}), ("far", {UP})])
def test_the_central_food_unless_another_snake_gets_there_first(where, expected):
    # The food (3,4) is nearer the centre, so it comes first (by up, 5 moves; left takes 7). With
    # B's head next to it, B gets there first: A takes (0,1) instead.
    assert _moves(TWO_FOODS[where]) == expected


def test_food_that_cuts_off_the_tail_is_skipped():
    # Left goes for the food (3 moves); after it A is walled in. Up reaches the tail.
    assert _moves(TRAP) == {UP}


def test_jit_vmap_over_boards_keys_and_players_equals_single_calls():
    texts = [ONE_SAFE, NEAR_HEAD[5], NEAR_HEAD[3], TWO_FOODS["near"], TWO_FOODS["far"], TRAP]
    boards = [from_ascii(t) for t in texts]
    batch = jax.tree.map(lambda *x: jnp.stack(x), *boards)
    keys = jax.random.split(jax.random.key(7), len(boards))
    players = jnp.array([0, 1, 0, 1, 0, 1], jnp.int32)
    fn = jax.jit(jax.vmap(lambda b, k, p: AGENT.policy(None, _State(b), k, p)))
    got = np.asarray(fn(batch, keys, players))
    want = [int(_ONE(b, k, p)) for b, k, p in zip(boards, keys, players)]
    assert got.tolist() == want


@pytest.mark.parametrize("kwargs,error", [
    (dict(iterations=0), ValueError), (dict(iterations=2.0), TypeError), (dict(iterations=True), TypeError),
    (dict(max_goals=0), ValueError), (dict(max_goals="3"), TypeError), (dict(name=3), TypeError),
])
def test_bad_arguments_are_refused_by_name(kwargs, error):
    with pytest.raises(error, match=next(iter(kwargs))):
        TailChaserAgent(**kwargs)


def test_beats_three_random_safe_snakes():
    env = Battlesnake(num_snakes=4)
    result = play(env, [AGENT, RandomSafeAgent()], 64, jax.random.key(0), lineup=(0, 1, 1, 1), chunk_size=64)
    assert result.per_agent()[AGENT.name]["win_rate"] >= 0.5  # fair share: 0.25 (measured 0.98)
