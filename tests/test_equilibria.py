"""Equilibrium analysis against equilibria derived by hand (closed form)."""

import numpy as np
import pytest

from jaxgames.analysis import equilibria as eq
from jaxgames.games import matrix


def points(game):
    return sorted(tuple(np.round(np.concatenate([p.x, p.y]), 6)) for p in eq.nash_equilibria(game))


def test_prisoners_dilemma_has_only_defect_defect():
    assert points(matrix.prisoners_dilemma()) == [(0, 1, 0, 1)]


def test_biased_rps_equilibrium_solves_Ay_equals_zero():
    # By hand: -0.25 y_P + 0.5 y_S = 0, 0.25 y_R - 0.05 y_S = 0, sum = 1 -> (1, 10, 5) / 16.
    # (The seed prints (10/16, 5/16, 1/16), which is wrong.)
    expected = np.array([1, 10, 5]) / 16
    (p,) = eq.nash_equilibria(matrix.biased_rock_paper_scissors())
    np.testing.assert_allclose(p.x, expected, atol=1e-9)
    np.testing.assert_allclose(p.y, expected, atol=1e-9)
    np.testing.assert_allclose(eq.expected_payoffs(matrix.biased_rock_paper_scissors(), p.x, p.y), [0, 0], atol=1e-12)


def test_subsidy_game_equilibria():
    # Row indifferent when 12 q = 11 q + 10 (1 - q), i.e. q = 10/11 (the seed's "0.9").
    q = 10 / 11
    assert points(matrix.subsidy_game()) == sorted(
        [(0, 1, 0, 1), (1, 0, 1, 0), tuple(np.round([q, 1 - q, q, 1 - q], 6))]
    )


def test_battle_of_the_sexes_equilibria_and_mixed_payoff():
    # Column makes row indifferent: 3 q = 2 (1 - q) -> q = 2/5; row makes column indifferent: 2 p = 3 (1 - p) -> p = 3/5.
    assert points(matrix.battle_of_the_sexes()) == sorted([(0, 1, 0, 1), (1, 0, 1, 0), (0.6, 0.4, 0.4, 0.6)])
    # Expected payoff at the mixed equilibrium: 3 * 3/5 * 2/5 = 6/5 for the row player, 2 * 3/5 * 2/5 + ... = 6/5.
    np.testing.assert_allclose(eq.expected_payoffs(matrix.battle_of_the_sexes(), [0.6, 0.4], [0.4, 0.6]), [1.2, 1.2])
    # The seed's miscoordination probability 13/25.
    assert abs(1 - (0.6 * 0.4 + 0.4 * 0.6) - 13 / 25) < 1e-12


def test_classics():
    assert points(matrix.matching_pennies()) == [(0.5, 0.5, 0.5, 0.5)]
    assert points(matrix.rock_paper_scissors()) == [tuple([round(1 / 3, 6)] * 6)]
    # Stag hunt: 2 q = 1 -> q = 1/2.
    assert points(matrix.stag_hunt()) == sorted([(0, 1, 0, 1), (1, 0, 1, 0), (0.5, 0.5, 0.5, 0.5)])


def test_pareto_optima_by_hand():
    # PD: only (D, D) is dominated (by (C, C)); the seed lists (C, C) only.
    assert eq.pareto_optimal_outcomes(matrix.prisoners_dilemma()) == [(0, 0), (0, 1), (1, 0)]
    assert eq.pareto_optimal_outcomes(matrix.subsidy_game()) == [(0, 0)]
    assert eq.pareto_optimal_outcomes(matrix.battle_of_the_sexes()) == [(0, 0), (1, 1)]
    assert eq.pareto_optimal_outcomes(matrix.stag_hunt()) == [(0, 0)]
    # Zero-sum: nothing dominates anything.
    assert len(eq.pareto_optimal_outcomes(matrix.biased_rock_paper_scissors())) == 9


def test_random_games_every_equilibrium_is_a_best_response_and_count_is_odd():
    rng = np.random.default_rng(0)
    for _ in range(30):
        n, m = rng.integers(2, 4, size=2)
        payoffs = rng.normal(size=(2, n, m))
        found = eq.nash_equilibria(payoffs)
        assert found, "every finite game has an equilibrium (Nash 1951)"
        for p in found:
            assert eq.is_nash_equilibrium(payoffs, p.x, p.y)
        # Generic (non-degenerate) games have an odd number of equilibria (Wilson 1971).
        assert len(found) % 2 == 1


def test_expected_payoffs_validates():
    with pytest.raises(ValueError, match="probability"):
        eq.expected_payoffs(matrix.stag_hunt(), [0.7, 0.7], [0.5, 0.5])
    with pytest.raises(ValueError, match="shape"):
        eq.expected_payoffs(matrix.stag_hunt(), [1.0], [0.5, 0.5])
