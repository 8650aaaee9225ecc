"""Arena, Elo and Bradley-Terry.

Sources: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes" (course report, undated),
section 5.7; Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement Learning" (NUS USP group report, 2021),
section 6.3.

Expected values come from the rules and the formulas, worked by hand:

* on a 1x1 Dots-and-Boxes board the first three moves never complete the box
  and the fourth (always by the second mover) does, so whatever the agents
  play, the player who moves second wins 1-0 in exactly 4 steps;
* Elo: 1000 vs 1000, a win moves 16 points (E = 0.5, K = 32);
* Bradley-Terry with two players: the MLE strength ratio is the win ratio.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxgames
from jaxgames.agents import FirstLegalAgent, HostAgent, RandomAgent
from jaxgames.evaluation import arena, elo


class HostFirst(HostAgent):
    """First legal action, decided on the host (exercises the host path)."""

    name = "host_first"

    def act(self, env, state, rng, player):
        return int(np.argmax(state.legal_action_mask))


class AlwaysZero(HostAgent):
    """Always plays action 0 (illegal once edge 0 is drawn)."""

    name = "zero"

    def act(self, env, state, rng, player):
        return 0


@pytest.fixture(scope="module")
def env11():
    return jaxgames.make("dots_and_boxes", num_rows=1, num_cols=1)


def test_second_mover_always_wins_1x1(env11):
    res = arena.play_match(env11, RandomAgent(), FirstLegalAgent(), 6, jax.random.key(0))
    # A moves first in even games, so A loses those and wins the odd ones.
    np.testing.assert_array_equal(res.outcome, [-1, 1, -1, 1, -1, 1])
    np.testing.assert_array_equal(res.length, [4] * 6)
    np.testing.assert_array_equal(res.a_first, [True, False] * 3)
    assert res.summary() == dict(games=6, wins=3, losses=3, draws=0, timeouts=0, mean_length=4.0)


def test_host_path_agrees_and_times(env11):
    res = arena.play_match(env11, HostFirst(), RandomAgent(), 4, jax.random.key(1))
    np.testing.assert_array_equal(res.outcome, [-1, 1, -1, 1])
    assert np.all(res.max_move_seconds[:, 0] > 0) and np.all(res.max_move_seconds[:, 1] == 0)


def test_jax_and_host_paths_agree_2x2():
    """Deterministic agents: the one-loop JAX path and the host loop play the same games."""
    env = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2, utility_margin=True)
    jax_res = arena.play_match(env, FirstLegalAgent(), FirstLegalAgent("first_b"), 2, jax.random.key(0))
    host_res = arena.play_match(env, HostFirst(), FirstLegalAgent("first_b"), 2, jax.random.key(0))
    np.testing.assert_array_equal(jax_res.outcome, host_res.outcome)
    np.testing.assert_array_equal(jax_res.returns, host_res.returns)
    # By hand: edges are drawn in order 0..11. Moves 0-6 alternate P0, P1, ... (no box
    # completes); 7 (P1) completes the top-left box, 8 (P1) the top-right, 9 (P1) completes
    # nothing, so P0 plays 10 (bottom-left) and 11 (bottom-right): 2-2, a draw.
    np.testing.assert_array_equal(jax_res.outcome, [0, 0])
    np.testing.assert_array_equal(jax_res.returns, np.zeros((2, 2)))
    np.testing.assert_array_equal(jax_res.length, [12, 12])


def test_timeouts_and_illegal_moves(env11):
    res = arena.play_match(env11, FirstLegalAgent(), RandomAgent(), 4, jax.random.key(2), max_steps=3)
    assert res.timeouts == 4
    # AlwaysZero repeats edge 0 on its second turn (or first, moving second): illegal = loss.
    res = arena.play_match(env11, AlwaysZero(), FirstLegalAgent(), 4, jax.random.key(3))
    assert res.losses == 4
    # A host agent over the per-move time limit: every game is a timeout.
    res = arena.play_match(env11, HostFirst(), FirstLegalAgent(), 2, jax.random.key(4), move_time_limit=1e-12)
    assert res.timeouts == 2


def test_arena_bad_input(env11):
    with pytest.raises(ValueError, match="two-player"):
        arena.play_match(jaxgames.make("battlesnake"), RandomAgent(), RandomAgent(), 2, jax.random.key(0))
    with pytest.raises(ValueError, match="lineup"):
        arena.play(jaxgames.make("battlesnake"), [RandomAgent(), RandomAgent()], 2, jax.random.key(0))
    with pytest.raises(ValueError, match="lineup"):
        arena.play(jaxgames.make("battlesnake"), [RandomAgent(), RandomAgent()], 2, jax.random.key(0), lineup=(0, 1, 2, 0))
    with pytest.raises(ValueError, match="seating"):
        arena.play(env11, [RandomAgent()], 2, jax.random.key(0), seating="shuffle")
    with pytest.raises(ValueError, match="num_games"):
        arena.play_match(env11, RandomAgent(), RandomAgent(), 0, jax.random.key(0))
    with pytest.raises(TypeError, match="Agent"):
        arena.play_match(env11, RandomAgent(), "random", 2, jax.random.key(0))


def test_elo_update_by_hand():
    assert elo.elo_update(1000.0, 1000.0, 1.0) == (1016.0, 984.0)
    assert elo.elo_update(1000.0, 1000.0, 0.5) == (1000.0, 1000.0)
    # Second win: E_A = 1 / (1 + 10^(-32/400)) = 0.545922...
    ra, rb = elo.elo_update(1016.0, 984.0, 1.0)
    assert ra == pytest.approx(1016 + 32 * (1 - 0.5459219), abs=1e-4)
    assert ra + rb == pytest.approx(2000.0)
    hist = elo.elo_history(2, [(0, 1, 1.0), (0, 1, 1.0)])
    np.testing.assert_allclose(hist[:, 0], [1000.0, 1016.0, ra])
    with pytest.raises(ValueError):
        elo.elo_history(2, [(0, 0, 1.0)])
    with pytest.raises(ValueError):
        elo.elo_update(1000.0, 1000.0, 1.5)


def test_bradley_terry_mle():
    # Two players, 3 wins to 1: p0 / p1 = 3, a gap of 400 log10(3) Elo points.
    r = elo.bradley_terry(np.array([[0, 3], [1, 0]]), prior=0.0)
    assert r[0] - r[1] == pytest.approx(400 * np.log10(3), abs=1e-6)
    assert r.mean() == pytest.approx(1000.0)
    # Three players: the MLE satisfies the score equations sum_j n_ij p_i / (p_i + p_j) = W_i.
    w = np.array([[0, 7, 9], [3, 0, 6], [1, 4, 0]], float)
    p = 10 ** ((elo.bradley_terry(w, prior=0.0) - 1000) / 400)
    n = w + w.T
    expected = (n * p[:, None] / (p[:, None] + p[None, :])).sum(1)
    np.testing.assert_allclose(expected, w.sum(1), rtol=1e-6)
    # A clean sweep stays finite with the prior.
    assert np.all(np.isfinite(elo.bradley_terry(np.array([[0, 5], [0, 0]]))))
    with pytest.raises(ValueError):
        elo.bradley_terry(np.ones((2, 3)))


def test_round_robin_1x1(env11):
    agents = [RandomAgent(), FirstLegalAgent(), HostFirst()]
    t = elo.round_robin(env11, agents, 4, jax.random.key(5))
    assert t.elo.shape == (5, 3)
    np.testing.assert_allclose(t.elo.sum(1), 3000.0)  # Elo updates are zero-sum
    np.testing.assert_array_equal(t.net_wins, np.zeros((3, 3)))  # seat decides every 1x1 game
    np.testing.assert_allclose(t.mean_length[~np.eye(3, dtype=bool)], 4.0)
    np.testing.assert_allclose(t.win_rate, 0.5)
    np.testing.assert_allclose(t.bradley_terry, 1000.0, atol=1e-6)
    with pytest.raises(ValueError, match="distinct"):
        elo.round_robin(env11, [RandomAgent(), RandomAgent()], 2, jax.random.key(0))


def test_plots(tmp_path):
    from jaxgames.evaluation import plots

    names = ["a", "b"]
    assert plots.heatmap(np.array([[0, 2], [-2, 0]]), names, tmp_path / "h.png").stat().st_size > 0
    assert plots.elo_curves(np.full((3, 2), 1000.0), names, tmp_path / "e.png").exists()
    assert plots.rating_bars({"Elo": [1010, 990]}, names, tmp_path / "r.png").exists()
    with pytest.raises(ValueError):
        plots.heatmap(np.zeros((2, 3)), names, tmp_path / "x.png")


def test_target_rows_met_table_and_figure():
    from jaxgames.evaluation import report

    rows = [
        {"measure": "wins vs A", "agent": "az", "rate": 0.70, "ci_low": 0.61, "ci_high": 0.78, "trials": 100, "target": 0.6},
        {"measure": "wins vs B", "agent": "az", "rate": 0.62, "ci_low": 0.55, "ci_high": 0.69, "trials": 200, "target": 0.6},
        {"measure": "wins vs C", "agent": "az", "rate": 0.50, "ci_low": 0.40, "ci_high": 0.60, "trials": 100, "target": 0.6},
        {"measure": "5x5 seconds per move", "agent": "az", "rate": 0.026, "target": 0.2},
        {"measure": "7x7 seconds per move", "agent": "az", "rate": 0.25, "target": 0.2},
        {"measure": "wins vs D", "agent": "az", "rate": 0.30, "ci_low": 0.2, "ci_high": 0.4, "trials": 10},
    ]
    assert [report.target_met(r) for r in rows] == ["yes", "not significant", "no", "yes", "no", ""]
    lines = report.target_table(rows)
    assert lines[0] == "| measure | agent | rate | 95% interval | n | target | met |"
    assert lines[2] == "| wins vs A | az | 0.700 | [0.610, 0.780] | 100 | 0.6 | yes |"
    assert lines[5] == "| 5x5 seconds per move | az | 0.026 |  |  | 0.2 | yes |"
    # W-D-L column when a row has draws
    wdl = report.target_table([{**rows[0], "successes": 70, "draws": 5, "losses": 25}])
    assert wdl[2] == "| wins vs A | az | 0.700 | [0.610, 0.780] | 100 | 70-5-25 | 0.6 | yes |"
    fig = report.target_figure(rows)
    assert len(fig.axes[0].get_yticklabels()) == 4  # the four rows with an interval
    assert report.target_figure(rows[3:5]) is None


def test_rating_bars_accept_a_point_outside_its_interval(tmp_path):
    # a final Elo (games in playing order) may lie outside its bootstrap interval (resamples in random order)
    from jaxgames.evaluation import plots

    path = plots.rating_bars({"Elo": [1010.0, 990.0]}, ["a", "b"], tmp_path / "r.png",
                             intervals={"Elo": [[1012.0, 1020.0], [980.0, 995.0]]})
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
