"""The hand-written Battlesnake evaluation: territory (Voronoi partition) and features counted by hand on ASCII boards.

Every expected number below is counted by hand from the drawing and the rules
stated in `jaxgames.games.battlesnake.evaluation` (the timed rule: a body cell
holding ``v`` is passable from BFS round ``v``; ties block; only the frontier
expands), never read off the code under test.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.battlesnake import Battlesnake, evaluation, rules
from jaxgames.games.battlesnake.evaluation import TIE, UNREACHABLE
from jaxgames.games.battlesnake.render import from_ascii
from jaxgames.games.battlesnake.rules import Board


EVALUATE = jax.jit(evaluation.evaluate)
FEATURES = jax.jit(evaluation.features)
TERRITORY = jax.jit(evaluation.territory)
OWNERS = jax.jit(evaluation.owners)


def _heads_only(text: str) -> Board:
    """A board of any size (from_ascii needs 7x7 or more) with heads only, each a stacked length-3 start snake."""
    rows = [r.replace(" ", "") for r in text.strip().splitlines() if r.strip()]
    size = len(rows)
    heads = {}
    for r, row in enumerate(rows):
        for x, ch in enumerate(row):
            if ch in "ABCDEFGH":
                heads["ABCDEFGH".index(ch)] = (x, size - 1 - r)
            else:
                assert ch == "."
    n = len(heads)
    body = np.zeros((n, size * size), np.int8)
    head = np.zeros((n, 2), np.int32)
    for s, (x, y) in heads.items():
        body[s, x * size + y] = 3
        head[s] = (x, y)
    return jax.device_put(
        Board(
            head=head,
            length=np.full(n, 3, np.int32),
            health=np.full(n, 100, np.int32),
            body=body,
            food=np.zeros(size * size, bool),
            hazards=np.zeros(size * size, np.int8),
            eliminated_cause=np.zeros(n, np.int32),
            eliminated_on_turn=np.zeros(n, np.int32),
            eliminated_by=np.full(n, -1, np.int32),
            turn=np.int32(0),
        )
    )


def _map(owner: jax.Array, size: int) -> str:
    """`owners` as a drawing, top row first: A, B, ... own the cell, ``+`` a tie, ``.`` nobody."""
    o = np.asarray(owner).reshape(size, size)  # [x, y]
    ch = lambda v: "ABCDEFGH"[v] if v >= 0 else ("+" if v == TIE else ".")  # noqa: E731
    return "\n".join(" ".join(ch(int(o[x, y])) for x in range(size)) for y in range(size - 1, -1, -1))


def _drawing(text: str) -> str:
    return "\n".join(" ".join(r.split()) for r in text.strip().splitlines())


def _kill(board: Board, s: int) -> Board:
    return board.replace(
        eliminated_cause=board.eliminated_cause.at[s].set(rules.COLLISION),
        eliminated_on_turn=board.eliminated_on_turn.at[s].set(1),
    )


CORNERS = """
    . . . . B
    . . . . .
    . . . . .
    . . . . .
    A . . . .
"""

# A at (2, 3) and B at (6, 3), length 1; C's body is the wall x = 3, head (3, 6) on top, tail (3, 0):
# the wall cell (3, y) holds y + 1, so it opens from the bottom as the rounds pass.
WALL = """
    . . . C . . .
    . . . c . . .
    . . . c . . .
    . . A c . . B
    . . . c . . .
    . . . c . . .
    . . . c . . .
"""

# A (length 3) is boxed into the corner by B's neck: 3 free cells, (1, 0), (2, 0), (2, 1), plus A's own
# body as it leaves it; B's wall holds 5..10 next to the pocket, and B's tail end is far up the left edge.
# C (length 3, like A) has open space.
POCKET = """
    b . . . . . .
    b . . . . C .
    b . . . . c .
    b . . . . c .
    b b b b . . .
    a A . b . . .
    a . . b B . .
"""


def test_territory_empty_5x5_two_corners_ties_on_the_diagonal():
    b = _heads_only(CORNERS)
    # d_A = x + y, d_B = 8 - x - y: A is strictly first where x + y <= 3 (1 + 2 + 3 + 4 = 10 cells,
    # its head among them), B where x + y >= 5 (10), and the 5 cells of the diagonal x + y = 4 tie.
    expected = """
        + B B B B
        A + B B B
        A A + B B
        A A A + B
        A A A A +
    """
    assert _map(OWNERS(b), 5) == _drawing(expected)
    assert TERRITORY(b).tolist() == [9, 9]


def test_territory_asymmetric_5x5_no_ties():
    b = _heads_only("""
        . . . . .
        . . . . .
        . A . . B
        . . . . .
        . . . . .
    """)
    # Same row term, so compare |x - 1| with |x - 4|: x <= 2 is A's (15 cells), x >= 3 B's (10); no ties.
    expected = """
        A A A B B
        A A A B B
        A A A B B
        A A A B B
        A A A B B
    """
    assert _map(OWNERS(b), 5) == _drawing(expected)
    assert TERRITORY(b).tolist() == [14, 9]
    f = FEATURES(b)
    np.testing.assert_allclose(f.territory_share, [14 / 23, 9 / 23], rtol=1e-6)


def test_territory_rounds_bound_the_search():
    b = _heads_only(CORNERS)
    # One round: each head claims its two on-board neighbours.
    assert jax.jit(functools.partial(evaluation.territory, rounds=1))(b).tolist() == [2, 2]
    with pytest.raises(ValueError, match="rounds"):
        evaluation.territory(b, rounds=26)
    with pytest.raises(ValueError, match="rounds"):
        evaluation.territory(b, rounds=0)
    with pytest.raises(TypeError, match="board"):
        evaluation.territory({"head": 0})


def test_territory_wall_of_bodies_splits_the_board_and_opens_from_its_tail():
    b = from_ascii(WALL)
    # Round by round (module rules): ties (2,5) r2; (1,5), (4,4), (5,5), (6,6) r3; (0,5), (3,2), (4,1)
    # r4; (4,0) r5. The wall's tail (3,0) (free from r1) and (3,1) (free from r2) are A's at r4 and r3,
    # through which A ties B on (4,1) and (4,0); (3,3..5) free at r4..6, after every frontier passed.
    expected = """
        C C C C C C +
        + + + . C + B
        A A A . + B B
        A A A . B B B
        A A A + B B B
        A A A A + B B
        A A A A + B B
    """
    assert _map(OWNERS(b), 7) == _drawing(expected)
    assert TERRITORY(b).tolist() == [16, 12, 6]


def test_dead_snake_has_no_territory_and_no_body():
    b = _kill(_heads_only(CORNERS), 1)
    assert TERRITORY(b).tolist() == [24, 0]  # every cell but A's head
    v = EVALUATE(b)
    assert v.tolist() == [1.0, -1.0]  # sole survivor, eliminated


def test_length_features():
    b = from_ascii("""
        . b b b b B .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . A . C c . .
        a a . . . . .
    """)
    f = FEATURES(b)
    # lengths A 3, B 5, C 2; head distances A-C 2, A-B 9, B-C 7.
    assert f.length_vs_longest.tolist() == [3 - 5, 5 - 3, 2 - 5]
    assert f.length_vs_nearest.tolist() == [3 - 2, 5 - 2, 2 - 3]


def test_nearest_snake_ties_go_to_the_longest():
    b = from_ascii("""
        . . . . . . .
        . . . B b b b
        . . . . . . .
        c C . A . . .
        . . . a . . .
        . . . a . . .
        . . . . . . .
    """)
    # A (length 3) has B (length 4) and C (length 2) both 2 away: the longer one counts.
    assert int(FEATURES(b).length_vs_nearest[0]) == 3 - 4


FOOD = """
    . . . . . . .
    . . . . . . .
    . . . . . . .
    a A . . * . .
    . . . . . . .
    . . . . . . b
    . . . . . . B
"""


def test_food_distance_and_starvation():
    f = FEATURES(from_ascii(FOOD, health=[2, 50]))
    assert f.food_distance.tolist() == [3, 5]  # (1,3) -> (4,3); (6,0) -> (4,3), Manhattan on an open board
    assert f.starving.tolist() == [True, False]
    f = FEATURES(from_ascii(FOOD, health=[3, 50]))
    assert f.starving.tolist() == [False, False]  # health 3 lasts 3 moves: just enough


def test_food_out_of_reach_is_starvation():
    b = from_ascii(POCKET.replace("b . . . . . .", "b . . . . . *", 1))
    f = FEATURES(b)
    # A cannot leave its pocket; C goes (5,5) -> (6,5) -> (6,6); B (4,0) -> (6,0) -> (6,6) up the free edge.
    assert f.food_distance.tolist() == [UNREACHABLE, 8, 2]
    assert f.starving.tolist() == [True, False, False]


def test_starvation_loss_values_a_starving_snake_as_eliminated():
    # FOOD with health [2, 50]: A is 3 moves from the food with 2 health (starving), B 5 moves with 50.
    board = from_ascii(FOOD, health=[2, 50])
    off = np.asarray(EVALUATE(board))
    on = np.asarray(jax.jit(functools.partial(evaluation.evaluate, starvation_loss=True))(board))
    assert -evaluation.LIVE_BOUND <= off[0] <= evaluation.LIVE_BOUND  # a live value without the flag
    assert on[0] == -1.0  # as an eliminated snake
    assert on[1] == off[1]  # B does not starve: unchanged
    # POCKET with food: A cannot reach any food (starving at any health), B and C can.
    pocket = from_ascii(POCKET.replace("b . . . . . .", "b . . . . . *", 1))
    np.testing.assert_array_equal(
        np.asarray(jax.jit(functools.partial(evaluation.evaluate, starvation_loss=True))(pocket)) == -1.0,
        [True, False, False])
    # a sole survivor has won, starving or not
    alone = _kill(board, 1)
    assert float(jax.jit(functools.partial(evaluation.evaluate, starvation_loss=True))(alone)[0]) == 1.0
    with pytest.raises(TypeError, match="starvation_loss"):
        evaluation.evaluate(board, starvation_loss=1)


H2H = """
    . . . . . . .
    . . . . . . .
    . . . . B b b
    . . . A . . .
    . . . a . . .
    . . . a . . .
    . . . . . . .
"""


def test_head_to_head_risk():
    f = FEATURES(from_ascii(H2H))
    # A (3,3) may go to (3,4), (2,3), (4,3); B (4,4) to (4,5), (3,4), (4,3). Both length 3:
    # (3,4) and (4,3) are next to both heads.
    assert f.safe_moves.tolist() == [3, 3]
    assert f.head_to_head_risk.tolist() == [2, 2]
    shorter = from_ascii(H2H.replace("B b b", "B b ."))
    f = FEATURES(shorter)
    # B has length 2: its tail (5,4) leaves at once, so 4 safe moves; A risks nothing from a shorter snake.
    assert f.safe_moves.tolist() == [3, 4]
    assert f.head_to_head_risk.tolist() == [0, 2]


def test_evaluate_ranks_a_boxed_snake_below_open_space():
    b = from_ascii(POCKET)
    # A reaches (1,0), (2,1) at r1, (0,0), (2,0) at r2, its own neck (0,1) at r3; B's wall next to the
    # pocket frees at r5 or later, after A's frontier died.
    assert int(TERRITORY(b)[0]) == 5
    v = EVALUATE(b)
    assert float(v[0]) < float(v[2]) and float(v[0]) < float(v[1])
    assert np.all(np.abs(np.asarray(v)) <= evaluation.LIVE_BOUND + 1e-6)


def test_evaluate_dead_snake_and_symmetry():
    b = from_ascii(WALL)
    v = EVALUATE(_kill(b, 1))
    assert float(v[1]) == -1.0
    assert np.all(np.abs(np.asarray(v)[[0, 2]]) <= evaluation.LIVE_BOUND + 1e-6)
    v = EVALUATE(_heads_only(CORNERS))
    assert float(v[0]) == pytest.approx(float(v[1]))  # mirror images of each other
    everyone_dead = _kill(_kill(_heads_only(CORNERS), 0), 1)
    assert EVALUATE(everyone_dead).tolist() == [-1.0, -1.0]


FOOD_UP = """
    . . . * . . .
    . . . . . . .
    . . . . . . .
    . . . A . . .
    . . . a . . .
    . . . a . . .
    . . . . . . .
"""


@pytest.mark.parametrize("health, term", [(100, 1.0), (30, 2 * (30 - 3) / 50 - 1), (3, -1.0), (2, -1.0)])
def test_food_term_is_the_health_left_at_the_nearest_food(health, term):
    # The food is 3 moves up; the term is 2 clip((health - 3) / 50, 0, 1) - 1 (hunger_health 50).
    only_food = dict(territory_weight=0.0, longest_weight=0.0, nearest_weight=0.0, starvation_weight=0.0,
                     head_to_head_weight=0.0, food_weight=1.0)
    v = evaluation.evaluate(from_ascii(FOOD_UP, health=[health]), **only_food)
    assert float(v[0]) == pytest.approx(evaluation.LIVE_BOUND * term, abs=1e-6)


LONGER_A = """
    . . . * . . .
    . . . . . . .
    . . . . . . .
    . . . A . . .
    . . . a . . B
    . . . a . . b
    . . . a . . .
"""


def test_hungry_unless_longest_takes_a_margin_of_100_for_a_snake_that_is_not_the_longest():
    # Health 80. A (length 4, the longest) is 3 moves from the food: 2 clip(77 / 50, 0, 1) - 1 = 1 either
    # way. B (length 2) is 7 moves away (3 left, 4 up): 1 by default, 2 (73 / 100) - 1 = 0.46 when hungry
    # unless longest.
    only_food = dict(territory_weight=0.0, longest_weight=0.0, nearest_weight=0.0, starvation_weight=0.0,
                     head_to_head_weight=0.0, food_weight=1.0)
    board = from_ascii(LONGER_A, health=[80, 80])
    assert FEATURES(board).food_distance.tolist() == [3, 7]
    v = evaluation.evaluate(board, **only_food)
    np.testing.assert_allclose(np.asarray(v), evaluation.LIVE_BOUND * np.array([1.0, 1.0]), rtol=1e-6)
    v = jax.jit(functools.partial(evaluation.evaluate, hungry_unless_longest=True, **only_food))(board)
    np.testing.assert_allclose(np.asarray(v), evaluation.LIVE_BOUND * np.array([1.0, 0.46]), rtol=1e-6)
    with pytest.raises(TypeError, match="hungry_unless_longest"):
        evaluation.evaluate(board, hungry_unless_longest=1)


def test_evaluate_weights_checked():
    b = _heads_only(CORNERS)
    with pytest.raises(ValueError, match="territory_weight"):
        evaluation.evaluate(b, territory_weight=-1.0)
    with pytest.raises(ValueError, match="all be 0"):
        evaluation.evaluate(b, territory_weight=0.0, longest_weight=0.0, nearest_weight=0.0,
                            starvation_weight=0.0, head_to_head_weight=0.0, food_weight=0.0)
    with pytest.raises(ValueError, match="hunger_health"):
        evaluation.evaluate(b, hunger_health=0)
    with pytest.raises(ValueError, match="length_scale"):
        evaluation.evaluate(b, length_scale=0.0)


def _stack(boards):
    return jax.tree.map(lambda *x: jnp.stack(x), *boards)


def test_jit_and_vmap_equal_single_calls():
    boards = [from_ascii(WALL), from_ascii(POCKET), _kill(from_ascii(WALL), 2)]
    batch = _stack(boards)
    for fn in (EVALUATE, TERRITORY, OWNERS):
        batched = np.asarray(jax.jit(jax.vmap(fn))(batch))
        single = np.stack([np.asarray(fn(b)) for b in boards])
        np.testing.assert_allclose(batched, single, rtol=0, atol=1e-6)  # floats: fusion may change the last bit
    feats = jax.jit(jax.vmap(evaluation.features))(batch)
    for i, b in enumerate(boards):
        for got, want in zip(feats, FEATURES(b)):
            np.testing.assert_allclose(np.asarray(got)[i], np.asarray(want), rtol=0, atol=1e-6)


def test_leaf_value_adapter():
    env = Battlesnake(board_size=7, num_snakes=3, observation="none")
    keys = jax.random.split(jax.random.key(0), 4)
    states = jax.jit(jax.vmap(env.init))(keys)
    fn = evaluation.leaf_value(env, territory_weight=0.6)
    values = jax.jit(jax.vmap(fn))(states, keys)
    assert values.shape == (4, 3) and values.dtype == jnp.float32
    single = jax.jit(functools.partial(evaluation.evaluate, territory_weight=0.6))
    for i in range(4):
        want = single(jax.tree.map(lambda x: x[i], states.board))
        np.testing.assert_allclose(np.asarray(values[i]), np.asarray(want), rtol=0, atol=1e-6)
    wall = jax.tree.map(lambda x: x[0], states).replace(board=from_ascii(WALL))
    want = single(from_ascii(WALL))
    np.testing.assert_allclose(np.asarray(jax.jit(fn)(wall, keys[0])), np.asarray(want), rtol=0, atol=1e-6)


def test_leaf_value_bad_input():
    env = Battlesnake(board_size=7, num_snakes=2, observation="none")
    with pytest.raises(TypeError, match="Battlesnake"):
        evaluation.leaf_value(object())
    with pytest.raises(TypeError):
        evaluation.leaf_value(env, bogus_weight=1.0)
    with pytest.raises(ValueError, match="starvation_weight"):
        evaluation.leaf_value(env, starvation_weight=float("nan"))
    with pytest.raises(ValueError, match="rounds"):
        evaluation.leaf_value(env, rounds=50)


def _timed(size: int, snakes: list[dict]) -> Board:
    """A board given cell by cell: each snake ``{"head": (x, y), "length": L, "cells": {(x, y): v}}``, ``v`` the
    moves until the cell is free (the timed rule; the head's cell included). Cells need not form a path."""
    n, cells = len(snakes), size * size
    body = np.zeros((n, cells), np.int8)
    for s, snake in enumerate(snakes):
        for (x, y), v in snake["cells"].items():
            body[s, x * size + y] = v
    return jax.device_put(Board(
        head=np.asarray([s["head"] for s in snakes], np.int32), length=np.asarray([s["length"] for s in snakes], np.int32),
        health=np.full(n, 100, np.int32), body=body, food=np.zeros(cells, bool), hazards=np.zeros(cells, np.int8),
        eliminated_cause=np.zeros(n, np.int32), eliminated_on_turn=np.zeros(n, np.int32),
        eliminated_by=np.full(n, -1, np.int32), turn=np.int32(0)))


def _walled(wall_end: int) -> Board:
    # 5x5. A (length 3): head (2,0), neck (1,0) free from round 2, tail (0,0) from round 1. Above row y=0, B's
    # body is a wall (0,1) .. (4,1) freeing from the right: (4,1) from round ``wall_end``, then 6, 7, 8, 9.
    wall = {(4, 1): wall_end, (3, 1): 6, (2, 1): 7, (1, 1): 8, (0, 1): 9}
    return _timed(5, [{"head": (2, 0), "length": 3, "cells": {(2, 0): 3, (1, 0): 2, (0, 0): 1}},
                      {"head": (2, 4), "length": 6, "cells": {(2, 4): 10, **wall}}])


def test_space_counts_the_own_timed_flood_fill_and_trapped_compares_it_with_the_length():
    # wall_end 5: A's own BFS takes (3,0) in round 1 and (4,0) in round 2; in round 3 (4,1) is still B's
    # (free from 5), (3,1) and (2,1) later still, and A's neck (1,0) is behind its head: 2 cells < length 3.
    f = FEATURES(_walled(5))
    assert f.space[0] == 2 and bool(f.trapped[0])
    # B reaches the free rows y = 2..4 alone, 14 cells besides its head (and more as the wall opens): >= 6.
    assert f.space[1] >= 14 and not bool(f.trapped[1])
    # wall_end 3: (4,1) is free in round 3, when A's frontier is at (4,0): the way up opens, A is not trapped.
    f = FEATURES(_walled(3))
    assert f.space[0] > 3 and not bool(f.trapped[0])


def test_space_weight_scores_a_trapped_snake_minus_live_bound():
    alone = dict(territory_weight=0.0, longest_weight=0.0, nearest_weight=0.0, starvation_weight=0.0,
                 head_to_head_weight=0.0, food_weight=0.0, space_weight=1.0)
    v = jax.jit(functools.partial(evaluation.evaluate, **alone))(_walled(5))
    np.testing.assert_allclose(np.asarray(v), [-evaluation.LIVE_BOUND, 0.0])  # the space term alone: -1, 0
    # the default weight 0 leaves the evaluation as it was without the term
    zero = jax.jit(functools.partial(evaluation.evaluate, space_weight=0.0))
    np.testing.assert_array_equal(np.asarray(EVALUATE(_walled(5))), np.asarray(zero(_walled(5))))
    with pytest.raises(ValueError, match="space_weight"):
        evaluation.evaluate(_walled(5), space_weight=-1.0)


CONTESTED_FOOD = """
    * . . . . . .
    . . . . . . .
    . . . . . . .
    a A . . * B .
    . . . . . b .
    . . . . . . .
    . . . . . . .
"""


def test_won_food_distance_counts_only_food_reached_first():
    # A's nearest food (4,3) is 3 moves away but B's head is next to it: B owns it (round 1). The food
    # A reaches first is (0,6): up three, left one, 4 moves (B needs 8).
    f = FEATURES(from_ascii(CONTESTED_FOOD))
    assert f.food_distance.tolist() == [3, 1]
    assert f.won_food_distance.tolist() == [4, 1]
    # Without food no snake wins any.
    f = FEATURES(from_ascii(CONTESTED_FOOD.replace("*", ".")))
    assert f.won_food_distance.tolist() == [UNREACHABLE, UNREACHABLE]


def test_won_food_term_is_the_health_left_at_the_won_food_always_hungry():
    # 2 clip((health - won_food_distance) / 100, 0, 1) - 1: A (4 moves) 0.92, B (1 move) 0.98, health 100.
    alone = dict(territory_weight=0.0, longest_weight=0.0, nearest_weight=0.0, starvation_weight=0.0,
                 head_to_head_weight=0.0, food_weight=0.0, won_food_weight=1.0)
    v = jax.jit(functools.partial(evaluation.evaluate, **alone))(from_ascii(CONTESTED_FOOD))
    np.testing.assert_allclose(np.asarray(v), evaluation.LIVE_BOUND * np.array([0.92, 0.98]), rtol=1e-6)
    zero = jax.jit(functools.partial(evaluation.evaluate, won_food_weight=0.0))  # the default: as before
    np.testing.assert_array_equal(np.asarray(EVALUATE(from_ascii(CONTESTED_FOOD))),
                                  np.asarray(zero(from_ascii(CONTESTED_FOOD))))
    with pytest.raises(ValueError, match="won_food_weight"):
        evaluation.evaluate(from_ascii(CONTESTED_FOOD), won_food_weight=float("nan"))


def _stacked(board: Board, lengths) -> Board:
    """``board`` (heads only, from `_heads_only`) with each snake stacked at its head to ``lengths``."""
    lengths = np.asarray(lengths, np.int32)
    body = np.where(np.asarray(board.body) > 0, lengths[:, None], 0).astype(np.int8)
    return board.replace(length=jnp.asarray(lengths), body=jnp.asarray(body))


@pytest.mark.parametrize("lengths, term", [((9, 3), [0.0, 0.0]), ((10, 3), [-1.0, 0.0]), ((10, 10), [-1.0, -1.0])])
def test_cramped_term_is_minus_one_when_the_territory_cannot_hold_the_snake(lengths, term):
    # Two corners of an empty 5x5 (the territory test above): each snake reaches 9 cells first; a
    # stacked snake's own cell is its head, so its length does not change the partition.
    b = _stacked(_heads_only(CORNERS), lengths)
    assert TERRITORY(b).tolist() == [9, 9]
    alone = dict(territory_weight=0.0, longest_weight=0.0, nearest_weight=0.0, starvation_weight=0.0,
                 head_to_head_weight=0.0, food_weight=0.0, cramped_weight=1.0)
    v = jax.jit(functools.partial(evaluation.evaluate, **alone))(b)
    np.testing.assert_allclose(np.asarray(v), evaluation.LIVE_BOUND * np.asarray(term))
    # the agent's path: only the ``players`` rows, in their order
    rows = jax.jit(functools.partial(evaluation.evaluate, players=jnp.array([1, 0]), **alone))(b)
    np.testing.assert_allclose(np.asarray(rows), evaluation.LIVE_BOUND * np.asarray(term)[::-1])


def test_cramped_weight_default_zero_and_checked():
    board = _walled(5)  # A's territory (at most its 2 cells of space) is below its length 3
    on = jax.jit(functools.partial(evaluation.evaluate, cramped_weight=0.5))(board)
    off = EVALUATE(board)
    assert float(on[0]) < float(off[0])
    np.testing.assert_array_equal(np.asarray(off), np.asarray(
        jax.jit(functools.partial(evaluation.evaluate, cramped_weight=0.0))(board)))
    with pytest.raises(ValueError, match="cramped_weight"):
        evaluation.evaluate(board, cramped_weight=-0.5)
