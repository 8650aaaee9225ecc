"""experiments/dab_supervised_ceiling.py: its labels, its run and resume, its learning, its checks.

The labels are checked against hand-derived scenarios and against the plain-Python minimax of
``tests/reference`` (not the solver under the labels); the run against the spine's promise of
exact resume.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.games.dots_and_boxes.positions import random_positions
from jaxgames.learners import alphazero as az
from jaxgames.networks import dots_and_boxes as nets
from tests.experiment_helpers import assert_help_and_one_line_errors, assert_refused_before_writing, load_experiment
from tests.reference.dots_and_boxes_reference import reference_solver

exp = load_experiment("dab_supervised_ceiling")

TINY = ["channels=8", "num_blocks=1", "value_channels=4", "value_hidden=8", "batch_size=16", "steps_per_iteration=3",
        "train_positions=1024", "eval_positions=64", "eval_every=1", "checkpoint_every=1", "progress=false"]

# 3x3 edge numbers (OpenSpiel order): horizontal h(r, c) = 3 r + c (0-11), vertical v(r, c) = 12 + 4 r + c (12-23);
# box (r, c) has sides h(r, c), h(r + 1, c), v(r, c), v(r, c + 1).
#
# Drawing edges 0, 1, ..., k in order: the 12 horizontals capture nothing (player 0 to move after them). Then
# 12 (P0, no box, pass), 13 14 15 (P1 completes boxes (0,0) (0,1) (0,2), moves on), 16 (P1, no box, pass),
# 17 18 19 (P0 completes row 1), 20 (P0, no box, pass), 21 22 (P1 completes (2,0) (2,1)), 23 completes (2,2):
#
#   +--+--+--+
#   |P1|P1|P1|
#   +--+--+--+
#   |P0|P0|P0|
#   +--+--+--+
#   |P1|P1|  |   <- after edges 0..22: P1 to move, 5-3 up, edge 23 left
#   +--+--+--+
SCENARIOS = [
    # (edges drawn 0..k-1, mover, scores, optimal moves, value target): by hand, from the comment above.
    # one edge left: it completes box (2,2), the game ends 6-3 for P1: +3.
    (23, 1, (3, 5), {23}, 3 / 9),
    # two left: 22 completes (2,1) and P1 goes on to take (2,2) (+2, final 6-3); 23 would hand both to P0 (-2).
    (22, 1, (3, 4), {22}, 3 / 9),
    # four left, row 2 a 3-chain open at both ends, P0 to move at 3-3: every move hands P1 all three: 3-6.
    (20, 0, (3, 3), {20, 21, 22, 23}, -3 / 9),
]


def play(env, k):
    step = jax.jit(env.step)
    state = env.init(jax.random.key(0))
    for e in range(k):
        state = step(state, jnp.int32(e))
    return state


@pytest.mark.parametrize("k, mover, scores, optimal, value", SCENARIOS)
def test_labels_of_hand_derived_positions(k, mover, scores, optimal, value):
    env = DotsAndBoxes(3, 3)
    state = play(env, k)
    assert int(state.board.player) == mover and tuple(np.asarray(state.board.scores)) == scores  # the scenario
    boards = jax.tree.map(lambda x: x[None], state.board)
    got_optimal, got_value = exp.solver_targets(exp.solution_3x3(), boards)
    assert set(np.flatnonzero(np.asarray(got_optimal[0]))) == optimal
    assert float(got_value[0]) == pytest.approx(value)


def test_labels_match_a_plain_python_minimax_on_late_positions():
    """Value = (mover's boxes - opponent's so far + the minimax value of the rest) / 9; policy = the
    moves achieving that minimax value (`tests/reference`: memoised minimax written from the rules)."""
    value_of, E = reference_solver(3, 3)
    states = random_positions(3, 3, jax.random.key(11), 400)
    late = np.flatnonzero(np.asarray(states.board.num_drawn) >= 15)[:40]
    boards = jax.tree.map(lambda x: x[late], states.board)
    optimal, value = (np.asarray(a) for a in exp.solver_targets(exp.solution_3x3(), boards))
    edges, scores, player = (np.asarray(a) for a in (boards.edges, boards.scores, boards.player))
    assert len(late) == 40
    for i in range(len(late)):
        drawn = frozenset(np.flatnonzero(edges[i]).tolist())
        best = value_of(drawn)
        moves = set()
        for e in set(range(E)) - drawn:
            child = drawn | {e}
            gained = sum(1 for b in value_of.boxes if e in b and b <= child)
            if (gained + value_of(child) if gained else -value_of(child)) == best:
                moves.add(e)
        margin = int(scores[i, player[i]]) - int(scores[i, 1 - player[i]])
        assert set(np.flatnonzero(optimal[i])) == moves
        assert value[i] == pytest.approx((margin + best) / 9)


def test_augmented_targets_are_the_targets_of_the_augmented_positions():
    """The random symmetry of training keeps the labels exact: labelling a transformed position gives
    the transformed policy target and the same value."""
    states = random_positions(3, 3, jax.random.key(5), 64)
    optimal, value = exp.solver_targets(exp.solution_3x3(), states.board)
    samples = az.Sample(states.board, optimal / optimal.sum(-1, keepdims=True), value)
    g = jnp.arange(64, dtype=jnp.int32) % 8  # every symmetry of the square board
    moved = az.augment(exp.SIZE, samples, g)
    optimal2, value2 = exp.solver_targets(exp.solution_3x3(), moved.board)
    np.testing.assert_array_equal(np.asarray(optimal2), np.asarray(moved.policy) > 0)
    np.testing.assert_allclose(np.asarray(value2), np.asarray(value))


def test_comparison_interpolates_at_equal_minutes():
    ceiling = [{"training_minutes": 0.0, "optimal_rate_raw": 0.2}, {"training_minutes": 2.0, "optimal_rate_raw": 0.6}]
    assert exp.ceiling_at(ceiling, 0.5) == (pytest.approx(0.3), False)
    assert exp.ceiling_at(ceiling, 3.0) == (pytest.approx(0.6), True)  # past its last evaluation: held
    rows = exp.comparison_rows(ceiling, [{"iteration": 4, "training_minutes": 1.0, "optimal_rate_raw": 0.3,
                                          "optimal_rate_search": 0.35}])
    assert rows[0]["ceiling_raw"] == pytest.approx(0.4) and rows[0]["gap_raw"] == pytest.approx(0.1)


def test_selfplay_curve_reads_curves_csv_when_there_is_no_history(tmp_path):
    (tmp_path / "curves.csv").write_text(
        "iteration,selfplay_seconds,update_seconds,optimal_rate_raw,optimal_rate_search\n"
        "1,50,10,,\n2,50,10,0.5,0.6\n")
    (row,) = exp.selfplay_curve(tmp_path)  # evaluated rows only, minutes summed over every iteration
    assert row["iteration"] == 2 and row["training_minutes"] == pytest.approx(2.0) and row["optimal_rate_search"] == 0.6


def fake_selfplay_folder(path):
    """A results folder as experiments/alphazero_dab.py leaves it: 3 iterations of 30 s, evaluated at 2."""
    (path / "checkpoints").mkdir(parents=True)
    history = [{"iteration": i, "selfplay_seconds": 20.0, "update_seconds": 10.0, "loss": 1.0} for i in (1, 2, 3)]
    history[1].update(optimal_rate_raw=0.5, optimal_rate_search=0.55)
    (path / "checkpoints" / "history.json").write_text(json.dumps({"history": history, "evaluations": []}))
    return path


def test_selfplay_curve_counts_a_later_stage_on_from_the_earlier_one(tmp_path):
    first = fake_selfplay_folder(tmp_path / "first")  # 3 iterations of 30 s, evaluated at 2
    second = fake_selfplay_folder(tmp_path / "second")
    rows = exp.selfplay_curve(f"{first},{second}")
    # the second stage's iteration 2 is iteration 3 + 2 = 5 of the whole, after 90 s + 60 s = 2.5 minutes
    assert [r["iteration"] for r in rows] == [2, 5]
    assert [r["training_minutes"] for r in rows] == [pytest.approx(1.0), pytest.approx(2.5)]
    with pytest.raises(ValueError, match="not a folder"):
        exp.Config(compare=f"{first},{tmp_path / 'missing'}")


def test_tiny_run_writes_its_outputs_and_resumes_exactly(tmp_path):
    selfplay = fake_selfplay_folder(tmp_path / "selfplay")
    straight = exp.main(TINY + ["iterations=3", f"out={tmp_path / 'a'}", f"compare={selfplay}"])
    for name in ("curves.csv", "README.md", "ceiling.png", "comparison.csv", "config.json"):
        assert (tmp_path / "a" / name).is_file(), name
    curve = straight["curve"]
    assert [r["iteration"] for r in curve] == [0, 1, 2, 3]
    for r in curve:
        for k in ("optimal_rate_raw", "optimal_rate_raw_opening", "optimal_rate_raw_middle", "optimal_rate_raw_endgame"):
            assert 0.0 <= r[k] <= 1.0
    assert all(r["update_seconds"] > 0 for r in straight["result"].history)
    (row,) = straight["comparison"]
    assert row["iteration"] == 2 and row["training_minutes"] == pytest.approx(1.0) and row["selfplay_raw"] == 0.5

    exp.main(TINY + ["iterations=1", f"out={tmp_path / 'b'}"])
    resumed = exp.main(TINY + ["iterations=3", f"out={tmp_path / 'b'}"])
    assert resumed["result"].resumed_from == 1
    a, b = straight["result"].state, resumed["result"].state
    for x, y in zip(jax.tree.leaves((a.params, a.opt_state, a.key)), jax.tree.leaves((b.params, b.opt_state, b.key))):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert [r["optimal_rate_raw"] for r in straight["curve"]] == [r["optimal_rate_raw"] for r in resumed["curve"]]


def test_training_lowers_the_loss_and_raises_the_optimal_rate():
    config = exp.CeilingConfig(network=nets.NetworkConfig(16, 2, 8, 32), train_positions=512, batch_size=64,
                               steps_per_iteration=10)
    learner = exp.CeilingLearner(config)
    state = learner.init(jax.random.key(3))
    data = learner.data
    samples = az.Sample(board=data.board, policy=data.optimal / data.optimal.sum(-1, keepdims=True), value=data.value)
    azc = config.alphazero_config()

    @jax.jit
    def measure(params):  # the whole training set, no symmetry: loss and share of argmax moves that are optimal
        m = az.losses(azc, params, exp.SIZE, samples)
        obs = az.sample_observations(azc, exp.SIZE, samples)
        logits, _ = nets.PolicyValueNet(config.network).apply(params, obs)
        logits = jnp.where(data.board.edges, jnp.finfo(jnp.float32).min, logits)
        hit = jnp.take_along_axis(data.optimal, jnp.argmax(logits, -1)[:, None], 1)
        return m["policy_loss"] + m["value_loss"], jnp.mean(hit)

    loss0, rate0 = (float(x) for x in measure(state.params))
    for _ in range(3):  # 30 steps
        state, metrics = learner.update(state)
    loss1, rate1 = (float(x) for x in measure(state.params))
    assert int(state.iteration) == 3 and np.isfinite(metrics["loss"])
    assert loss1 < loss0 - 0.1 and rate1 > rate0 + 0.05, (loss0, loss1, rate0, rate1)


def test_bad_settings_are_refused_before_anything_is_written(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_refused_before_writing(exp, [
        (["batch_size=0"], "batch_size"),
        (["eval_positions=0"], "eval_positions"),
        (["steps_per_iteration=0"], "steps_per_iteration"),
        (["learning_rate=0"], "learning_rate"),
        ([f"compare={tmp_path / 'missing'}"], "compare.*not a folder"),
        ([f"compare={empty}"], "holds neither"),
    ], tmp_path / "out")
    assert_help_and_one_line_errors(exp, ["batch_size=0", f"out={tmp_path / 'out'}"], "batch_size", capsys)
    assert not (tmp_path / "out").exists()


def test_stage_labels_match_the_evaluations_stages():
    from jaxgames.evaluation.alphazero import stages

    drawn = np.arange(24)
    edges = np.arange(24)[None, :] < drawn[:, None]  # a position with k edges drawn, k = 0..23
    got = stages(edges)
    for name, lo, hi in exp.STAGES:
        assert got[name].tolist() == [lo <= k <= hi for k in drawn], name
