"""The main job, end to end on a tiny setting: files, tables, resume, CLI errors."""

import csv
import json
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
import matrix_dynamics  # noqa: E402

TINY = ["num_iterations=400", "record_every=100", "start_grid=2", "seeds=1", "progress=false"]


def test_main_job_writes_tables_figures_and_config(tmp_path):
    out = matrix_dynamics.main(TINY + [f"out={tmp_path}", "games=subsidy_game,biased_rock_paper_scissors"])
    for name in ("convergence.csv", "convergence.md", "config.json", "dynamics_epsilon_greedy.png",
                 "dynamics_boltzmann.png", "dynamics_lenient_boltzmann.png"):
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "config.json").read_text())["num_iterations"] == 400
    rows = list(csv.DictReader(open(out / "convergence.csv")))
    # subsidy: 3 Nash + 1 Pareto target; BRPS: 1 Nash + 9 Pareto; settings: 3 eps + 1 tau + 1 (tau, kappa).
    assert len(rows) == (4 + 10) * 5
    assert all(0.0 <= float(r["fraction"]) <= 1.0 and int(r["num_runs"]) == 4 for r in rows)
    assert {r["seed_claim"] for r in rows if r["game"] == "subsidy_game" and r["target"] == "(S2, S2)"} == {"Yes/Yes/Yes"}
    md = (out / "convergence.md").read_text()
    assert "## subsidy_game" in md and "(0.909091, 0.909091)" in md


def test_resume_reuses_runs_and_a_new_config_discards_them(tmp_path):
    args = TINY + [f"out={tmp_path}", "games=stag_hunt", "learners=boltzmann"]
    out = matrix_dynamics.main(args)
    cached = out / "runs_stag_hunt_boltzmann.npz"
    stamp = cached.stat().st_mtime_ns
    matrix_dynamics.main(args)
    assert cached.stat().st_mtime_ns == stamp  # resumed, not recomputed
    matrix_dynamics.main(args + ["learning_rate=0.01"])
    assert cached.stat().st_mtime_ns != stamp
    data = np.load(cached)
    assert data["final_policy"].shape[1:] == (2, 2)


@pytest.mark.parametrize(
    "arg, match",
    [("num_iterations", "key=value"), ("nope=1", "unknown key"), ("seeds=x", "int"),
     ("games=chess", "unknown matrix game"), ("leniencies=0", "kappa"), ("epsilons=2", "epsilon"),
     ("temperature_starts=-1", "tau"), ("learning_rate=3", "alpha")],
)
def test_bad_command_line_raises(arg, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        matrix_dynamics.main([arg, f"out={tmp_path}"])
