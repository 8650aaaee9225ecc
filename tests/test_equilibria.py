"""Equilibrium analysis against equilibria derived by hand (closed form), Gambit, and an exact oracle.

Two independent references for `extreme_equilibria` on thousands of small
random, degenerate and rescaled games:

* Gambit's exact rational ``enummixed`` (``pygambit``; McKelvey, McLennan &
  Turocy, https://www.gambit-project.org), handed each player's payoffs
  mapped to [0, 1] (Gambit 16.7 loses every equilibrium once payoffs span
  2**31, see `test_gambit_reference_survives_large_payoffs`);
* `oracle_extreme_equilibria`, a plain-Python brute force sharing no code
  with either: integer Cramer's rule on every square subsystem of the
  best-response polytopes P = {x >= 0, B^T x <= 1} and Q = {A y <= 1, y >= 0}
  (payoffs shifted to be positive), then every completely labelled vertex
  pair (von Stengel, *Algorithmic Game Theory* (2007), section 3.5).
  It is exponential, so it checks games of up to 3x3 actions.
"""

import itertools
import math
import os
import subprocess
import sys
import time
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from jaxgames.analysis import equilibria as eq
from jaxgames.games import matrix


# --- the oracle -------------------------------------------------------------------------------------------


def _det(rows):
    if len(rows) == 1:
        return rows[0][0]
    if len(rows) == 2:
        return rows[0][0] * rows[1][1] - rows[0][1] * rows[1][0]
    return sum((-1) ** c * rows[0][c] * _det([r[:c] + r[c + 1 :] for r in rows[1:]]) for c in range(len(rows)) if rows[0][c])


def _vertices(cons, dim):
    """Vertices of {z : c.z <= b for (c, b, label) in cons} (integer c, b) -> their labels (tight constraints)."""
    out = {}
    for subset in itertools.combinations(cons, dim):
        mat = [list(c) for c, _, _ in subset]
        det = _det(mat)
        if det == 0:
            continue
        rhs = [b for _, b, _ in subset]
        nums = [_det([r[:i] + [bb] + r[i + 1 :] for r, bb in zip(mat, rhs)]) for i in range(dim)]
        if det < 0:
            det, nums = -det, [-v for v in nums]
        slack = [b * det - sum(ci * zi for ci, zi in zip(c, nums)) for c, b, _ in cons]
        if min(slack) < 0:
            continue
        g = math.gcd(det, *nums)
        key = tuple(v // g for v in nums)
        if key not in out:
            out[key] = frozenset(lab for (_, _, lab), s in zip(cons, slack) if s == 0)
    return out


def oracle_extreme_equilibria(a, b) -> set:
    """Exact extreme equilibria {((x as Fractions), (y as Fractions))} of the integer bimatrix game (a, b)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    n, m = a.shape
    a = (a - a.min() + 1).tolist()
    b = (b - b.min() + 1).tolist()
    minus_unit = lambda k, i: [-int(j == i) for j in range(k)]
    # Labels: i < n for row action i (x_i = 0 in P, (A y)_i = 1 in Q); n + j for column action j.
    p_cons = [(minus_unit(n, i), 0, i) for i in range(n)] + [([b[i][j] for i in range(n)], 1, n + j) for j in range(m)]
    q_cons = [(a[i], 1, i) for i in range(n)] + [(minus_unit(m, j), 0, n + j) for j in range(m)]
    everything = frozenset(range(n + m))
    found = set()
    for x, x_labels in _vertices(p_cons, n).items():
        for y, y_labels in _vertices(q_cons, m).items():
            if any(x) and any(y) and x_labels | y_labels == everything:
                found.add((tuple(Fraction(v, sum(x)) for v in x), tuple(Fraction(v, sum(y)) for v in y)))
    return found


def _unit_fractions(table):
    table = [[Fraction(int(v)) for v in row] for row in table]
    low, high = min(map(min, table)), max(map(max, table))
    return [[(v - low) / (high - low) if high > low else Fraction(0) for v in row] for row in table]


def gambit_extreme_equilibria(a, b) -> set:
    """Gambit's exact extreme equilibria of the integer bimatrix game (a, b), each player's payoffs mapped to [0, 1]."""
    gbt = pytest.importorskip("pygambit")
    a, b = _unit_fractions(a), _unit_fractions(b)
    game = gbt.Game.new_table([len(a), len(a[0])])
    row_player, col_player = game.players
    for i, j in itertools.product(range(len(a)), range(len(a[0]))):
        game[i, j][row_player] = a[i][j]
        game[i, j][col_player] = b[i][j]
    return {
        (tuple(Fraction(e[s]) for s in row_player.strategies), tuple(Fraction(e[s]) for s in col_player.strategies))
        for e in gbt.nash.enummixed_solve(game, rational=True).equilibria
    }


def exact_set(game) -> set:
    return {(tuple(p.x), tuple(p.y)) for p in eq.extreme_equilibria(game)}


def _as_set(vectors):
    return {tuple(v) for v in np.asarray(vectors).tolist()}


def points(game):
    return sorted(tuple(np.round(np.concatenate([p.x, p.y]), 6)) for p in eq.nash_equilibria(game))


def test_oracle_on_battle_of_the_sexes():
    f = Fraction
    assert oracle_extreme_equilibria([[3, 0], [0, 2]], [[2, 0], [0, 3]]) == {
        ((1, 0), (1, 0)), ((0, 1), (0, 1)), ((f(3, 5), f(2, 5)), (f(2, 5), f(3, 5)))
    }


# --- hand-derived equilibria -----------------------------------------------------------------------------


def test_prisoners_dilemma_has_only_defect_defect():
    assert points(matrix.prisoners_dilemma()) == [(0, 1, 0, 1)]


def test_biased_rps_equilibrium_solves_Ay_equals_zero():
    # By hand: -0.25 y_P + 0.5 y_S = 0, 0.25 y_R - 0.05 y_S = 0, sum = 1 -> (1, 10, 5) / 16.
    # (El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes" (course report, undated),
    # section 2.1.2, prints (10/16, 5/16, 1/16), which is wrong.) Exact: 0.05 is read as 1/20.
    expected = tuple(Fraction(k, 16) for k in (1, 10, 5))
    assert exact_set(matrix.biased_rock_paper_scissors()) == {(expected, expected)}
    (p,) = eq.nash_equilibria(matrix.biased_rock_paper_scissors())
    np.testing.assert_allclose(p.x, np.array([1, 10, 5]) / 16, atol=1e-15)
    np.testing.assert_allclose(eq.expected_payoffs(matrix.biased_rock_paper_scissors(), p.x, p.y), [0, 0], atol=1e-7)


def test_subsidy_game_equilibria():
    # Row indifferent when 12 q = 11 q + 10 (1 - q), i.e. q = 10/11 (El Kaddouri et al.'s "0.9").
    q = Fraction(10, 11)
    assert exact_set(matrix.subsidy_game()) == {((1, 0), (1, 0)), ((0, 1), (0, 1)), ((q, 1 - q), (q, 1 - q))}


def test_battle_of_the_sexes_equilibria_and_mixed_payoff():
    # Column makes row indifferent: 3 q = 2 (1 - q) -> q = 2/5; row makes column indifferent: 2 p = 3 (1 - p) -> p = 3/5.
    assert points(matrix.battle_of_the_sexes()) == sorted([(0, 1, 0, 1), (1, 0, 1, 0), (0.6, 0.4, 0.4, 0.6)])
    # Expected payoff at the mixed equilibrium: 3 * 3/5 * 2/5 = 6/5 for the row player, 2 * 3/5 * 2/5 + ... = 6/5.
    np.testing.assert_allclose(eq.expected_payoffs(matrix.battle_of_the_sexes(), [0.6, 0.4], [0.4, 0.6]), [1.2, 1.2])
    # El Kaddouri et al.'s miscoordination probability 13/25.
    assert abs(1 - (0.6 * 0.4 + 0.4 * 0.6) - 13 / 25) < 1e-12


def test_classics():
    assert points(matrix.matching_pennies()) == [(0.5, 0.5, 0.5, 0.5)]
    assert points(matrix.rock_paper_scissors()) == [tuple([round(1 / 3, 6)] * 6)]
    # Stag hunt: 2 q = 1 -> q = 1/2.
    assert points(matrix.stag_hunt()) == sorted([(0, 1, 0, 1), (1, 0, 1, 0), (0.5, 0.5, 0.5, 0.5)])


BOS = np.array([[[3, 0], [0, 2]], [[2, 0], [0, 3]]])
SUBSIDY = np.array([[[12, 0], [11, 10]], [[12, 11], [0, 10]]])


@pytest.mark.parametrize("scale", [1e2, 1e4, 1e6, 1e12, 1e-6, 1e-12, 1e-300])
@pytest.mark.parametrize("as_matrix_game", [False, True])
def test_rescaled_games_keep_their_equilibria(scale, as_matrix_game):
    """Multiplying every payoff by a positive constant changes no equilibrium (bug: x100 and x1e6 subsidy,
    x1e4 battle of the sexes lost their mixed equilibrium; x1e-12 gave 9 'equilibria')."""
    if as_matrix_game and not 1e-30 < scale < 1e30:
        pytest.skip("outside float32, which MatrixGame stores")
    make = (lambda p: matrix.MatrixGame(p[0], p[1])) if as_matrix_game else (lambda p: p)
    q = 10 / 11
    subsidy = [(0, 1, 0, 1), (1, 0, 1, 0), tuple(np.round([q, 1 - q, q, 1 - q], 6))]
    assert points(make(scale * SUBSIDY)) == sorted(subsidy)
    assert points(make(scale * BOS)) == sorted([(0, 1, 0, 1), (1, 0, 1, 0), (0.6, 0.4, 0.4, 0.6)])


def test_each_player_may_be_rescaled_and_shifted_separately():
    # Row payoffs x 1e6 + 250, column payoffs x 1e-12 - 3e-12 (written out: in floats 2e-12 - 3e-12 is not -1e-12):
    # the same equilibria, exactly.
    p = np.array([[[3000250.0, 250.0], [250.0, 2000250.0]], [[-1e-12, -3e-12], [-3e-12, 0.0]]])
    f = Fraction
    assert exact_set(p) == {((1, 0), (1, 0)), ((0, 1), (0, 1)), ((f(3, 5), f(2, 5)), (f(2, 5), f(3, 5)))}


def test_payoff_types_read_exactly():
    # ints, Fractions and floats (as their shortest decimal, so 0.1 is 1/10) give the same game.
    f = Fraction
    ints = np.array([[[2, 0], [1, 3]], [[0, 2], [3, 1]]])
    as_fractions = np.array([[[f(v, 10) for v in row] for row in t] for t in ints], dtype=object)
    as_floats = ints / 10
    assert exact_set(ints) == exact_set(as_fractions) == exact_set(as_floats) == exact_set(as_floats.astype(np.float32))
    # By hand: no pure equilibrium (each outcome has a profitable deviation); row indifferent when 2 q = q + 3 (1 - q)
    # -> q = 3/4; column when 3 (1 - p) = 2 p + (1 - p) -> p = 1/2.
    assert exact_set(ints) == {((f(1, 2), f(1, 2)), (f(3, 4), f(1, 4)))}


def test_one_action_games():
    assert points(np.zeros((2, 1, 1))) == [(1, 1)]
    # The row player alone chooses: its best action against the only column.
    assert points(np.array([[[1], [3], [2]], [[0], [0], [0]]])) == [(0, 1, 0, 1)]


# --- degenerate games: components, not a flood of points -------------------------------------------------


def test_zero_game_is_one_component_the_whole_product_of_simplices():
    """All-zero 6x6: every profile is an equilibrium. One component, one maximal Nash subset, vertices the 36
    pure profiles (bug: 227 s and a flood of arbitrary points; speed is measured in benchmarks/equilibria.py)."""
    (comp,) = eq.equilibrium_components(np.zeros((2, 6, 6)))
    found = eq.nash_equilibria(np.zeros((2, 6, 6)))
    assert not comp.is_isolated()
    assert len(comp.extreme_equilibria) == 36 and len(found) == 36
    assert all(p.is_pure() for p in found)
    (subset,) = comp.nash_subsets
    assert _as_set(subset.xs) == _as_set(subset.ys) == _as_set(np.eye(6))


def test_one_component_of_three_segments():
    """Column indifferent (B = 0), row coordinates (A = I). By hand: row plays 1 when y_1 > 1/2, 2 when y_1 < 1/2,
    anything when y_1 = 1/2, so the equilibria are {e1} x [(1/2,1/2), (1,0)], [e1, e2] x {(1/2,1/2)} and
    {e2} x [(0,1), (1/2,1/2)]: one connected component made of three maximal Nash subsets."""
    game = np.stack([np.eye(2), np.zeros((2, 2))])
    half = Fraction(1, 2)
    assert exact_set(game) == {((1, 0), (1, 0)), ((1, 0), (half, half)), ((0, 1), (half, half)), ((0, 1), (0, 1))}
    (comp,) = eq.equilibrium_components(game)
    subsets = {(frozenset(_as_set(s.xs)), frozenset(_as_set(s.ys))) for s in comp.nash_subsets}
    e1, e2, mid = (1.0, 0.0), (0.0, 1.0), (0.5, 0.5)
    assert subsets == {
        (frozenset({e1}), frozenset({e1, mid})),
        (frozenset({e1, e2}), frozenset({mid})),
        (frozenset({e2}), frozenset({mid, e2})),
    }


def test_an_isolated_equilibrium_and_a_segment():
    """A = [[2, 0], [0, 1]], B = [[1, 0], [0, 0]]. By hand: column 1 is strictly better for the column player
    whenever x_1 > 0, and then row 1 is the row player's best reply: (e1, e1), isolated. With x_1 = 0 the column
    player is indifferent and row 2 is a best reply iff 2 y_1 <= 1 - y_1, i.e. y_1 <= 1/3: the segment
    {e2} x [(0, 1), (1/3, 2/3)]."""
    game = np.array([[[2, 0], [0, 1]], [[1, 0], [0, 0]]])
    third = Fraction(1, 3)
    assert exact_set(game) == {((1, 0), (1, 0)), ((0, 1), (0, 1)), ((0, 1), (third, 1 - third))}
    isolated, segment = eq.equilibrium_components(game)
    assert isolated.is_isolated() and not segment.is_isolated()
    np.testing.assert_array_equal(isolated.extreme_equilibria[0].x, [1, 0])
    (subset,) = segment.nash_subsets
    assert _as_set(subset.xs) == {(0.0, 1.0)}
    assert _as_set(subset.ys) == {(0.0, 1.0), (1 / 3, 2 / 3)}


def test_non_degenerate_games_have_only_isolated_components():
    for game in (matrix.battle_of_the_sexes(), matrix.rock_paper_scissors(), matrix.subsidy_game()):
        comps = eq.equilibrium_components(game)
        assert all(c.is_isolated() for c in comps)
        assert len(comps) == len(eq.nash_equilibria(game))


# --- thousands of games against the oracle ---------------------------------------------------------------


def _random_small_games(rng, count, max_actions):
    """Integer games: random (ties likely), zero, constant, duplicated rows and columns, one player indifferent."""
    for k in range(count):
        n, m = (int(v) for v in rng.integers(1, max_actions + 1, size=2))
        kind = k % 5
        if kind == 0:
            g = rng.integers(-20, 21, size=(2, n, m))  # mostly non-degenerate
        elif kind == 1:
            g = rng.integers(0, 2, size=(2, n, m))  # heavy ties
        elif kind == 2:
            g = rng.integers(0, 3, size=(2, n, m))
            g[:, -1] = g[:, 0]  # a duplicated row
            g[:, :, -1] = g[:, :, 0]  # and column
        elif kind == 3:
            g = np.zeros((2, n, m), dtype=np.int64)
            g[rng.integers(2)] = rng.integers(-2, 3, size=(n, m))  # one player indifferent everywhere
        else:
            g = np.full((2, n, m), int(rng.integers(-5, 6)))  # constant, or nearly
            g[0] += rng.integers(0, 2) * rng.integers(0, 2, size=(n, m))
        yield g


# Positive affine maps u -> s u + c written in decimals, so that floats read back as the same decimals.
AFFINE = [(Decimal(1), Decimal(0)), (Decimal("1e6"), Decimal(250)), (Decimal("1e-12"), Decimal("-3e-12")), (Decimal("0.5"), Decimal(1))]


def _rescaled(g, k):
    """Game ``g`` with player 0's payoffs under one map of AFFINE and player 1's under another, as float64."""
    (sa, ca), (sb, cb) = AFFINE[k % 4], AFFINE[(k // 4) % 4]
    return np.array([[[float(s * int(v) + c) for v in row] for row in t] for t, s, c in ((g[0], sa, ca), (g[1], sb, cb))])


def test_matches_oracle_on_a_thousand_small_random_degenerate_and_rescaled_games():
    rng = np.random.default_rng(0)
    for k, g in enumerate(_random_small_games(rng, 1000, max_actions=3)):
        expected = sorted(tuple(np.round(np.array(x + y, dtype=float), 9)) for x, y in oracle_extreme_equilibria(g[0], g[1]))
        found = sorted(tuple(np.round(np.concatenate([p.x, p.y]), 9)) for p in eq.nash_equilibria(_rescaled(g, k)))
        assert found == expected, (g.tolist(), k)


def test_matches_gambit_on_a_thousand_small_random_degenerate_and_rescaled_games():
    rng = np.random.default_rng(1)
    for k, g in enumerate(_random_small_games(rng, 1000, max_actions=4)):
        assert exact_set(_rescaled(g, k)) == gambit_extreme_equilibria(g[0], g[1]), (g.tolist(), k)
    for k, g in enumerate(_random_small_games(rng, 10, max_actions=7)):
        assert exact_set(g) == gambit_extreme_equilibria(g[0], g[1]), (g.tolist(), k)


def test_gambit_reference_survives_large_payoffs():
    """Why the Gambit reference maps payoffs to [0, 1]: handed battle of the sexes times 2**31 in integers,
    Gambit 16.7's exact enummixed finds none of its three equilibria (its scale factor 1 / (max - min) passes
    through an int). Mapped to [0, 1], it finds all three, as derived by hand above."""
    f = Fraction
    assert gambit_extreme_equilibria(BOS[0] * 2**31, BOS[1] * 2**31) == {
        ((1, 0), (1, 0)), ((0, 1), (0, 1)), ((f(3, 5), f(2, 5)), (f(2, 5), f(3, 5)))
    }


def test_random_games_every_equilibrium_is_a_best_response_and_count_is_odd():
    rng = np.random.default_rng(0)
    for _ in range(30):
        n, m = rng.integers(2, 5, size=2)
        payoffs = rng.normal(size=(2, n, m))
        found = eq.nash_equilibria(payoffs)
        assert found, "every finite game has an equilibrium (Nash 1951)"
        for p in found:
            assert eq.is_nash_equilibrium(payoffs, p.x, p.y, atol=1e-12)
        # Generic (non-degenerate) games have an odd number of equilibria (Wilson 1971).
        assert len(found) % 2 == 1


def test_random_10x10_every_point_is_an_equilibrium():
    """Bug: a random 10x10 game took 159 s (speed: benchmarks/equilibria.py)."""
    payoffs = np.random.default_rng(1).normal(size=(2, 10, 10))
    found = eq.nash_equilibria(payoffs)
    assert len(found) % 2 == 1
    for p in found:
        assert eq.is_nash_equilibrium(payoffs, p.x, p.y, atol=1e-12)


# --- is_nash_equilibrium ---------------------------------------------------------------------------------


def test_is_nash_equilibrium_is_scale_invariant():
    mixed = ([0.6, 0.4], [0.4, 0.6])
    for scale in (1e-12, 1, 1e12):
        assert eq.is_nash_equilibrium(scale * BOS, *mixed)
        # (e1, e2) miscoordinates: the row player gains 2/3 of its payoff range by switching to row 2.
        assert not eq.is_nash_equilibrium(scale * BOS, [1, 0], [0, 1])
    # A deviation worth 1e-3 of the payoff range fails the default tolerance at every scale.
    for scale in (1e-12, 1e12):
        assert not eq.is_nash_equilibrium(scale * BOS, [0.6, 0.4], [0.4 + 1e-3, 0.6 - 1e-3])
    # A constant game: every profile is an equilibrium.
    assert eq.is_nash_equilibrium(np.full((2, 2, 3), 5e20), [0.5, 0.5], [1, 0, 0], atol=0)


@pytest.mark.parametrize(
    "x, y",
    [
        ([0.7, 0.7], [0.5, 0.5]),  # sums to 1.4
        ([1.5, -0.5], [0.5, 0.5]),  # negative
        ([1.0], [0.5, 0.5]),  # wrong length
        ([np.nan, 1.0], [0.5, 0.5]),  # not finite
        ([0.5, 0.5], [np.inf, 0.0]),
        ([[0.5, 0.5]], [0.5, 0.5]),  # wrong rank
    ],
)
def test_is_nash_equilibrium_rejects_non_probability_profiles(x, y):
    with pytest.raises(ValueError, match="probability|shape"):
        eq.is_nash_equilibrium(matrix.stag_hunt(), x, y)


@pytest.mark.parametrize("atol", [-1e-9, np.nan, np.inf, -np.inf])
def test_is_nash_equilibrium_rejects_bad_atol(atol):
    with pytest.raises(ValueError, match="atol"):
        eq.is_nash_equilibrium(matrix.stag_hunt(), [1, 0], [1, 0], atol=atol)


def test_is_nash_equilibrium_rejects_non_numeric_atol():
    with pytest.raises(TypeError, match="atol"):
        eq.is_nash_equilibrium(matrix.stag_hunt(), [1, 0], [1, 0], atol="1e-9")


# --- the rest ---------------------------------------------------------------------------------------------


def test_pareto_optima_by_hand():
    # PD: only (D, D) is dominated (by (C, C)); El Kaddouri et al. list (C, C) only.
    assert eq.pareto_optimal_outcomes(matrix.prisoners_dilemma()) == [(0, 0), (0, 1), (1, 0)]
    assert eq.pareto_optimal_outcomes(matrix.subsidy_game()) == [(0, 0)]
    assert eq.pareto_optimal_outcomes(matrix.battle_of_the_sexes()) == [(0, 0), (1, 1)]
    assert eq.pareto_optimal_outcomes(matrix.stag_hunt()) == [(0, 0)]
    # Zero-sum: nothing dominates anything.
    assert len(eq.pareto_optimal_outcomes(matrix.biased_rock_paper_scissors())) == 9


def test_expected_payoffs_validates():
    with pytest.raises(ValueError, match="probability"):
        eq.expected_payoffs(matrix.stag_hunt(), [0.7, 0.7], [0.5, 0.5])
    with pytest.raises(ValueError, match="shape"):
        eq.expected_payoffs(matrix.stag_hunt(), [1.0], [0.5, 0.5])
    with pytest.raises(ValueError, match="probability"):
        eq.expected_payoffs(matrix.stag_hunt(), [np.nan, 1.0], [0.5, 0.5])


# --- large games: a bounded enumeration, or one equilibrium by Lemke-Howson -------------------------------


def _ubt_closed_form(d, f):
    """Facets of the cyclic polytope C(f, d) (= the most vertices of a d-polytope with f facets, by duality):
    f / (f - k) * C(f - k, k) for d = 2k, 2 C(f - k - 1, k) for d = 2k + 1 (Ziegler, Lectures on Polytopes, 0.7, 8.4)."""
    k = d // 2
    return f * math.comb(f - k, k) // (f - k) if d % 2 == 0 else 2 * math.comb(f - k - 1, k)


def test_enumeration_cost_is_the_upper_bound_theorem():
    assert _ubt_closed_form(2, 4) == 4 and _ubt_closed_form(3, 6) == 8  # a quadrilateral; 2f - 4 in 3D
    for n, m in [(1, 1), (2, 2), (3, 4), (10, 10), (12, 12), (20, 20), (5, 50), (50, 50)]:
        expected = _ubt_closed_form(n, n + m) + _ubt_closed_form(m, n + m)
        assert eq.enumeration_cost(np.zeros((2, n, m))) == expected, (n, m)
    assert eq.enumeration_cost(np.zeros((2, 12, 12))) == 49_504 <= eq.MAX_VERTICES  # 12x12 enumerates by default
    assert eq.enumeration_cost(np.zeros((2, 13, 13))) > eq.MAX_VERTICES


@pytest.mark.parametrize("n", [20, 50])
def test_large_game_enumeration_is_refused_up_front_naming_its_cost(n):
    """Bug: a random 20x20 or 50x50 game ran over 90 s and grew to 6-10 GB. Now refused before any work."""
    payoffs = np.random.default_rng(0).normal(size=(2, n, n))
    cost = _ubt_closed_form(n, 2 * n) * 2
    for call in (eq.nash_equilibria, eq.extreme_equilibria, eq.equilibrium_components):
        start = time.perf_counter()
        with pytest.raises(eq.EquilibriumCostError, match="lemke_howson") as info:
            call(payoffs)
        assert time.perf_counter() - start < 1.0
        assert f"{cost:.3g}" in str(info.value) and "max_vertices=50000" in str(info.value)
        assert isinstance(info.value, ValueError)
    # A 2x2 game: each polytope a 2-polytope with 4 facets, at most 4 vertices: cost 8.
    with pytest.raises(eq.EquilibriumCostError, match="up to 8 vertices.*max_vertices=7"):
        eq.nash_equilibria(matrix.stag_hunt(), max_vertices=7)
    assert len(eq.nash_equilibria(matrix.stag_hunt(), max_vertices=8)) == 3
    assert points(matrix.stag_hunt()) == sorted(tuple(np.round(np.concatenate([p.x, p.y]), 6))
                                                for p in eq.nash_equilibria(matrix.stag_hunt(), max_vertices=None))


def test_cost_bound_and_method_are_validated():
    for bad in (0, -5, 2.5, True, "10"):
        with pytest.raises(ValueError, match="max_vertices"):
            eq.nash_equilibria(matrix.stag_hunt(), max_vertices=bad)
    with pytest.raises(ValueError, match="method"):
        eq.nash_equilibria(matrix.stag_hunt(), method="support_enumeration")
    for bad in (-1, 4, 1.0, None):
        with pytest.raises(ValueError, match="missing_label"):
            eq.lemke_howson(matrix.stag_hunt(), missing_label=bad)
    for bad in (0, -1, 2.0, False):
        with pytest.raises(ValueError, match="max_pivots"):
            eq.lemke_howson(matrix.stag_hunt(), max_pivots=bad)


def test_lemke_howson_by_hand_on_battle_of_the_sexes():
    """Positive integer payoffs (the documented map k (u - min u) + 1): A = [[4, 1], [1, 3]], B = [[3, 1], [1, 4]].
    Label 0: x_0 enters P (rows 3 x0 + x1 <= 1, x0 + 4 x1 <= 1): ratios 1/3 < 1, s_0 (label 2) leaves; y_0 enters Q
    (rows 4 y0 + y1 <= 1, y0 + 3 y1 <= 1): 1/4 < 1, r_0 (label 0) leaves: done at (e1, e1).
    Label 3: y_1 enters Q: ratios 1 > 1/3, r_1 (label 1) leaves; x_1 enters P: 1 > 1/4, s_1 (label 3) leaves: (e2, e2)."""
    assert eq.lemke_howson(matrix.battle_of_the_sexes(), missing_label=0) == ((1, 0), (1, 0))
    assert eq.lemke_howson(matrix.battle_of_the_sexes(), missing_label=3) == ((0, 1), (0, 1))
    (p,) = eq.nash_equilibria(matrix.battle_of_the_sexes(), method="lemke_howson", missing_label=3)
    np.testing.assert_array_equal(p.x, [0, 1])
    # A game with one equilibrium: every label ends there (rock-paper-scissors: uniform, by symmetry).
    third = Fraction(1, 3)
    for label in range(6):
        assert eq.lemke_howson(matrix.rock_paper_scissors(), missing_label=label) == ((third,) * 3, (third,) * 3)


@pytest.fixture(params=["float_guided", "exact_only"])
def path(request, monkeypatch):
    """Both ways `lemke_howson` walks: the float64 path certified exactly, and (float path disabled, as when
    rounding leads it astray) the exact integer-pivoting path."""
    if request.param == "exact_only":
        walk = eq._lh_walk
        monkeypatch.setattr(eq, "_lh_walk", lambda *args, exact, **kw: walk(*args, exact=True, **kw) if exact else None)
    return request.param


def test_lemke_howson_ends_at_an_oracle_equilibrium_from_every_label_on_degenerate_games(path):
    """The path ends at an extreme equilibrium (a completely labelled vertex pair) even in degenerate games."""
    rng = np.random.default_rng(2)
    for k, g in enumerate(_random_small_games(rng, 300, max_actions=3)):
        expected = oracle_extreme_equilibria(g[0], g[1])
        n, m = g.shape[1:]
        for label in range(n + m):
            assert tuple(eq.lemke_howson(_rescaled(g, k), missing_label=label)) in expected, (g.tolist(), k, label)


def test_lemke_howson_paths_agree_on_random_games_with_a_best_response_check(path):
    rng = np.random.default_rng(3)
    for _ in range(10):
        n, m = (int(v) for v in rng.integers(2, 9, size=2))
        a, b = rng.normal(size=(2, n, m))
        for label in (0, n + m - 1):
            p = eq.lemke_howson(np.stack([a, b]), missing_label=label).to_float()
            assert (a @ p.y).max() - p.x @ a @ p.y <= 1e-12 and (p.x @ b).max() - p.x @ b @ p.y <= 1e-12


def test_lemke_howson_refuses_a_path_longer_than_max_pivots(path):
    payoffs = np.random.default_rng(6).normal(size=(2, 50, 50))  # a long path from label 0 (hundreds of pivots)
    start = time.perf_counter()
    with pytest.raises(eq.EquilibriumCostError, match="max_pivots=20"):
        eq.lemke_howson(payoffs, max_pivots=20)
    assert time.perf_counter() - start < 5.0
    if path == "float_guided":  # uncapped, the same game answers
        p = eq.lemke_howson(payoffs, max_pivots=None).to_float()
        a, b = payoffs
        assert (a @ p.y).max() - p.x @ a @ p.y <= 1e-9 and (p.x @ b).max() - p.x @ b @ p.y <= 1e-9


_LH_50 = """
import resource, sys, time
import numpy as np
from jaxgames.analysis import equilibria as eq
payoffs = np.random.default_rng(0).normal(size=(2, 50, 50))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
(p,) = eq.nash_equilibria(payoffs, method="lemke_howson")
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)
np.save(sys.argv[1], np.concatenate([p.x, p.y]))
"""


def test_random_50x50_game_answers_within_10_s_and_1_gb_with_a_verified_equilibrium(tmp_path):
    """Lemke-Howson on a random 50x50 game, in a fresh process (its peak memory is its own): under 10 s and 1 GB,
    and the profile passes a best-response check written here (no pure strategy gains more than 1e-9)."""
    out = tmp_path / "profile.npy"
    run = subprocess.run([sys.executable, "-c", _LH_50, str(out)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert run.returncode == 0, run.stderr[-2000:]
    seconds, extra_kib = (float(v) for v in run.stdout.split())
    assert seconds < 10.0 and extra_kib < 1024 * 1024, (seconds, extra_kib)
    profile = np.load(out)
    x, y = profile[:50], profile[50:]
    a, b = np.random.default_rng(0).normal(size=(2, 50, 50))
    for s in (x, y):
        assert np.all(s >= 0) and abs(s.sum() - 1) < 1e-12
    assert (a @ y).max() - x @ a @ y <= 1e-9
    assert (x @ b).max() - x @ b @ y <= 1e-9
