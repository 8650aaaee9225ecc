"""Minimax variants, chain rules and the sign convention against the retrograde solver.

The solver itself is checked against an independent plain-Python minimax in
``test_search_solver.py``; here every variant must return the solver's value
(El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes",
course report, undated, section 4: all optimisations keep the exact value). Chain-rule
scenarios are small ASCII-free hand positions with values worked by hand.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.dots_and_boxes.search import chains, minimax, solver
from jaxgames.games.dots_and_boxes.search.bitboard import bitboard
from jaxgames.search import sign


@pytest.fixture(scope="module")
def solutions():
    return {size: solver.solve(*size) for size in [(1, 1), (1, 2), (2, 1), (2, 2), (1, 3), (2, 3), (3, 3)]}


@pytest.mark.parametrize("variant", minimax.VARIANTS)
def test_variants_agree_on_empty_boards(solutions, variant):
    for size in [(1, 1), (1, 2), (2, 1)] + ([] if variant == "naive" else [(2, 2), (1, 3)]):
        res = minimax.solve_position(*size, 0, variant=variant)
        assert res.value == solutions[size].value(0), size
        assert res.best_action in solutions[size].optimal_actions(0)


@pytest.mark.parametrize("size", [(1, 2), (2, 1), (2, 2), (1, 3)])
def test_chain_rules_exact_on_every_position(solutions, size):
    """Safe captures and the chain rule never lose value: every edge set of the board."""
    sol = solutions[size]
    E = sol.num_edges
    for s in range(1 << E):
        for variant in ("chains", "ordering"):
            assert minimax.solve_position(*size, s, variant=variant).value == sol.value(s), (variant, s)


def test_random_positions_larger_boards(solutions):
    rng = np.random.default_rng(0)
    for size, drawn_min in [((2, 3), 4), ((3, 3), 13)]:
        sol = solutions[size]
        E = sol.num_edges
        for _ in range(15):
            drawn = rng.choice(E, size=rng.integers(drawn_min, E), replace=False)
            s = int(sum(1 << int(e) for e in drawn))
            res = minimax.solve_position(*size, s, variant="ordering")
            assert res.value == sol.value(s)
            if s != (1 << E) - 1:
                assert res.best_action in sol.optimal_actions(s)


def test_chain_scenarios_by_hand():
    # 1x3 board: h(0,c) = c, h(1,c) = 3 + c, v(0,c) = 6 + c.
    bb = bitboard(1, 3)
    # All tops and bottoms drawn plus the left end: box 0 is capturable and its capture
    # (edge v(0,1) = 7) opens box 1: a half-open chain of 3.
    edges = sum(1 << e for e in [0, 1, 2, 3, 4, 5, 6])
    assert chains.capturable_boxes(bb, edges) == [0]
    assert chains.safe_capture(bb, edges) is None
    # Capture (7) or hand out the last two boxes: box 1's far side is v(0,2) = 8.
    assert chains.chain_moves(bb, edges) == [7, 8]
    # With v(0,3) = 9 drawn as well (closed chain) the mover takes all three: value +3.
    assert minimax.solve_position(1, 3, edges | (1 << 9)).value == 3
    # Half-open chain of 3, mover's last chain: take all 3.
    assert minimax.solve_position(1, 3, edges).value == 3
    # A lone capturable box at the border is a safe capture: the only move considered.
    bb11 = bitboard(1, 1)
    assert chains.chain_moves(bb11, 0b0111) == [3]
    # Safe edges on an empty 2x2 board: every edge.
    assert chains.safe_edges(bitboard(2, 2), 0) == list(range(12))
    # Ordering puts the capture first.
    assert chains.ordered_moves(bb, edges)[0] == 7


def test_symmetric_images_share_values(solutions):
    bb = bitboard(3, 3)
    sol = solutions[(3, 3)]
    rng = np.random.default_rng(1)
    for _ in range(50):
        s = int(rng.integers(0, 1 << 24))
        c = bb.canonical(s)
        assert c <= s and sol.value(c) == sol.value(s)
        assert bin(c).count("1") == bin(s).count("1")


def test_iterative_deepening_deadline_and_exactness(solutions):
    bb = bitboard(2, 2)
    action, value, depth, _ = minimax.iterative_deepening(bb, 0, max_depth=20, time_limit=5.0)
    assert value == solutions[(2, 2)].value(0) and depth == 12
    assert action in solutions[(2, 2)].optimal_actions(0)
    bb55 = bitboard(5, 5)
    import time

    start = time.perf_counter()
    action, _, depth, _ = minimax.iterative_deepening(bb55, 0, max_depth=9, time_limit=0.1)
    assert time.perf_counter() - start < 0.5 and depth >= 1 and 0 <= action < 60


def test_sign_convention():
    # Closed forms of the rule: +1 same mover, -1 turn passes, 0 terminal.
    d = sign.discount(jnp.array([0, 0, 1]), jnp.array([0, 1, 1]), jnp.array([False, False, True]))
    np.testing.assert_array_equal(d, [1.0, -1.0, 0.0])
    np.testing.assert_array_equal(sign.mover_reward(jnp.array([[1.0, -1.0], [1.0, -1.0]]), jnp.array([0, 1])), [1.0, -1.0])
    assert sign.child_value(2, 1) == 3 and sign.child_value(0, 1) == -1
    np.testing.assert_array_equal(sign.value_for(jnp.array([2.0, 2.0]), jnp.array([0, 1]), jnp.array([0, 0])), [2.0, -2.0])
    # Vectorised Dots-and-Boxes backup, numpy and jnp, by hand: g = 0 -> -V; g = 1, V = 3 -> 4; g = 2, V = -1 -> 1.
    g, v = [0, 1, 2], [3, 3, -1]
    np.testing.assert_array_equal(sign.child_value(np.array(g), np.array(v)), [-3, 4, 1])
    out = sign.child_value(jnp.array(g, jnp.int32), jnp.array(v, jnp.int32))
    assert out.dtype == jnp.int32
    np.testing.assert_array_equal(out, [-3, 4, 1])


def test_child_window_brackets_exactly_the_backed_up_values():
    """Q = r + d * V lies strictly inside (alpha, beta) iff V lies strictly inside the child window."""
    rng = np.random.default_rng(0)
    values = np.arange(-6, 7)
    for _ in range(200):
        r, d = int(rng.integers(-2, 3)), int(rng.choice([-1, 1]))
        alpha, beta = sorted(rng.choice(np.arange(-8, 9), size=2, replace=False))
        lo, hi = sign.child_window(r, d, alpha, beta)
        assert lo < hi
        q = r + d * values  # written out here, not through sign.backup
        np.testing.assert_array_equal((alpha < q) & (q < beta), (lo < values) & (values < hi))
    assert sign.child_window(1.0, -1, -np.inf, np.inf) == (-np.inf, np.inf)
    with pytest.raises(ValueError, match="discount"):
        sign.child_window(0, 0, -1, 1)


def test_bad_input():
    with pytest.raises(ValueError, match="unknown minimax variant"):
        minimax.solve_position(1, 1, 0, variant="magic")
    with pytest.raises(ValueError):
        minimax.solve_position(1, 1, 16)
    with pytest.raises(ValueError):
        minimax.solve_position(1, 1, "01")
    with pytest.raises(minimax.SearchTimeout):
        minimax.solve_position(2, 2, 0, variant="naive", max_nodes=1000)
