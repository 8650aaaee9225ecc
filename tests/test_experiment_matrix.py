"""The main job, end to end on a tiny setting: files, tables, resume, results-folder rules, CLI errors; convergence by hand."""

import csv
import dataclasses
import fcntl
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import warnings
from collections import defaultdict

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
import matrix_dynamics  # noqa: E402

from tests.experiment_helpers import refused_on_the_command_line  # noqa: E402

TINY = ["num_iterations=400", "record_every=100", "start_grid=2", "seeds=1", "progress=false",
        "empirical_grid=2", "empirical_runs=4", "empirical_horizon=20"]


def test_main_job_writes_tables_figures_and_config(tmp_path, monkeypatch):
    learners = "epsilon_greedy,lenient_boltzmann,faq_boltzmann"
    titles = {}
    save_figure = matrix_dynamics.ResultsDir.save_figure

    def record(rd, fig, name, **kwargs):  # the title each figure is saved with
        titles[name] = fig.get_suptitle()
        return save_figure(rd, fig, name, **kwargs)

    monkeypatch.setattr(matrix_dynamics.ResultsDir, "save_figure", record)
    out = matrix_dynamics.main(TINY + [f"out={tmp_path}", "games=subsidy_game,biased_rock_paper_scissors", f"learners={learners}"])
    figures = ["dynamics_epsilon_greedy_eps0.25.png", "dynamics_epsilon_greedy_eps0.5.png", "dynamics_epsilon_greedy_eps0.75.png",
               "dynamics_lenient_boltzmann_tau0.5_kappa5.png", "dynamics_faq_boltzmann_tau0.5.png",
               "basins_epsilon_greedy.png", "basins_lenient_boltzmann.png", "basins_faq_boltzmann.png",
               "empirical_fields.png"]
    for name in ["README.md", "convergence.csv", "convergence.md", "config.json"] + figures:
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "config.json").read_text())["num_iterations"] == 400
    rows = list(csv.DictReader(open(out / "convergence.csv")))
    # subsidy: (S1,S1) Nash and Pareto, (S2,S2), the mixed Nash, not_converged = 4; BRPS: 1 Nash + 9 Pareto + 1 = 11.
    # Settings: 3 eps + 1 (tau, kappa) + 1 tau = 5.
    assert len(rows) == (4 + 11) * 5
    totals = defaultdict(float)
    for r in rows:
        totals[(r["game"], r["learner"], r["setting"])] += float(r["fraction"])
        assert int(r["num_runs"]) == 4 and {"verdict", "paper_claim", "agrees"} <= set(r)
    assert all(abs(t - 1) < 1e-9 for t in totals.values()), totals
    claim = {(r["learner"], r["target"]): r["paper_claim"] for r in rows if r["game"] == "subsidy_game"}
    # The subsidy table of El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes" (course
    # report, undated): (0, 0) = (S2, S2) Yes/Yes/Yes, (1, 1) = (S1, S1) No/No/Yes; FAQ is not in the report.
    assert claim[("epsilon_greedy", "(S2, S2)")] == "Yes" and claim[("lenient_boltzmann", "(S1, S1)")] == "Yes"
    assert claim[("faq_boltzmann", "(S2, S2)")] == "-"
    md = (out / "convergence.md").read_text()
    assert "## El Kaddouri et al.'s tables 1-2, with ours" in md and "(0.909091, 0.909091)" in md
    readme = (out / "README.md").read_text()
    assert "1 - (1/2)^kappa" in readme and "convergence.md" in readme and "dynamics_faq_boltzmann_tau0.5.png" in readme
    # The source is named as a reader can find it; "seed" means a random seed only.
    assert 'El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes" (course report' in readme
    assert not re.search(r"\bseed\b(?! \d)|seed's|seed 000|the seed", readme + md, re.IGNORECASE), "seed as a document"
    # The disagreement count of the README, against an independent count of the CSV's rows.
    disagree = sum(r["agrees"] == "no" for r in rows)
    compared = sum(r["agrees"] in ("yes", "no") for r in rows)
    assert f"**{disagree} of {compared}** (game, learner, setting, target) verdicts disagree" in readme
    groups = {(r["game"], r["learner"], r["target"]) for r in rows if r["agrees"] == "no"}
    assert f"{disagree} of {compared} verdicts, in {len(groups)} groups" in readme
    assert readme.count("**: report ") == len(groups)  # one discussed paragraph per group
    assert "reused" not in readme  # a fresh folder: nothing was reused
    # Each field is named by the learner whose expected dynamics it draws, with its kappa and beta.
    assert set(figures) <= set(titles)
    lenient = titles["dynamics_lenient_boltzmann_tau0.5_kappa5.png"]
    assert "expected dynamics of lenient Boltzmann Q-learning (kappa = 5)" in lenient and "plain" not in lenient
    assert "expected dynamics of FAQ Boltzmann Q-learning (beta = 0.1)" in titles["dynamics_faq_boltzmann_tau0.5.png"]
    assert "no field drawn" in titles["dynamics_epsilon_greedy_eps0.25.png"]
    assert "points" in titles["dynamics_epsilon_greedy_eps0.25.png"]  # jumps drawn as points, not lines
    assert "expected dynamics of the same learner" in titles["empirical_fields.png"]
    for learner in learners.split(","):
        assert titles[f"basins_{learner}.png"].startswith(matrix_dynamics.SHORT[learner] + " Q-learning")


def test_cycling_runs_are_not_converged():
    # Prisoner's dilemma, epsilon-greedy eps = 0.25: (D, D) as played is P(C) = eps / 2 = 0.125 for both.
    cfg = matrix_dynamics.Config(games=("prisoners_dilemma",), learners=("epsilon_greedy",), epsilons=(0.25,))
    game = matrix_dynamics.jaxgames.make("prisoners_dilemma")
    dd = np.array([[0.125, 0.875], [0.125, 0.875]])
    cc = dd[:, ::-1]
    flipping = np.stack([dd, cc] * 5 + [dd])  # recorded second half: back and forth between (D, D) and (C, C)
    settled = np.stack([dd] * 11)
    data = dict(
        is_demo=np.array([False, False]), setting=np.array([0, 0]), start_index=np.array([0, 1]),
        window_min=np.stack([np.minimum(dd, cc), dd]), window_max=np.stack([np.maximum(dd, cc), dd]),
        window_mean=np.stack([(dd + cc) / 2, dd]), late_trajectory=np.stack([flipping, settled]),
    )
    cls = matrix_dynamics.classify_runs(cfg, game, "epsilon_greedy", data)
    labels = [matrix_dynamics.target_label(game, p) for _, p in matrix_dynamics.targets(game)]
    assert cls["outcome"][0] == -1 and cls["cycling"][0]
    assert labels[cls["outcome"][1]] == "(D, D)" and not cls["cycling"][1]
    rows = matrix_dynamics.convergence_rows(cfg, game, "epsilon_greedy", data, cls)
    nc = [r for r in rows if r["target"] == "not_converged"][0]
    assert nc["fraction"] == 0.5 and nc["cycling"] == 0.5
    assert sum(r["fraction"] for r in rows) == 1.0


def test_resume_reuses_runs_and_a_new_config_discards_them(tmp_path):
    args = TINY + [f"out={tmp_path}", "games=stag_hunt", "learners=boltzmann", "empirical_grid=0"]
    out = matrix_dynamics.main(args)
    (cached,) = out.glob("runs_stag_hunt_boltzmann_*.npz")
    stamp = cached.stat().st_mtime_ns
    assert "reused" not in (out / "README.md").read_text()
    matrix_dynamics.main(args + ["chunk_size=3"])  # a setting that does not change results
    assert cached.stat().st_mtime_ns == stamp  # resumed, not recomputed
    # The resumed README says so: 2x2 starts x 1 seed + 4 demo runs of one setting = 8 runs in the one piece.
    readme = (out / "README.md").read_text()
    assert "reused 8 cached runs (1 of the 1 game x learner pieces)" in readme
    stored = float(np.load(cached)["compute_seconds"])  # the piece's own compute time, reported, not the resume's
    assert stored > 0 and f"Compute time of these results: {stored:.0f} s of learner runs" in readme
    with pytest.warns(UserWarning, match="replacing the results of another configuration"):
        matrix_dynamics.main(args + ["learning_rate=0.01", "overwrite=true"])
    (fresh,) = out.glob("runs_stag_hunt_boltzmann_*.npz")  # the old settings' runs are gone, not mixed in
    assert fresh != cached
    data = np.load(fresh)
    assert data["final_policy"].shape[1:] == (2, 2)


def _snapshot(folder: pathlib.Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != ".lock"}


def test_one_configuration_per_folder_and_one_run_at_a_time(tmp_path, capsys):
    """Issue 10: a run with other settings, or a second concurrent run, is refused before it writes anything."""
    args = TINY + [f"out={tmp_path}", "learners=boltzmann", "empirical_grid=0"]
    matrix_dynamics.main(args + ["games=stag_hunt,prisoners_dilemma"])
    before = _snapshot(tmp_path)
    with refused_on_the_command_line(capsys, r"(?s)holds results of another configuration.*games.*out=.*overwrite=true"):
        matrix_dynamics.main(args + ["games=stag_hunt"])  # used to exit 0 and leave the other run's pieces
    assert _snapshot(tmp_path) == before  # nothing written, config.json untouched

    # A second run while the first still holds the lock (a separate open file: flock excludes it).
    with open(tmp_path / ".lock", "a+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.truncate(0)
        holder.write("4242\n")
        holder.flush()
        with refused_on_the_command_line(capsys, rf"{tmp_path} is in use by another run \(pid 4242\)"):
            matrix_dynamics.main(args + ["games=stag_hunt,prisoners_dilemma", "learning_rate=0.01"])
    assert _snapshot(tmp_path) == before  # its config.json did not replace the running one's

    with pytest.warns(UserWarning, match="overwrite=true"):
        matrix_dynamics.main(args + ["games=stag_hunt", "overwrite=true"])
    assert json.loads((tmp_path / "config.json").read_text())["games"] == ["stag_hunt"]
    assert not [p.name for p in tmp_path.iterdir() if "prisoners_dilemma" in p.name]  # no mixture
    assert {r["game"] for r in csv.DictReader(open(tmp_path / "convergence.csv"))} == {"stag_hunt"}


_KILL_MID_WRITE = """
import sys, time
import numpy as np
sys.path.insert(0, {experiments!r})
import matrix_dynamics
real = np.savez_compressed
def hang(file, **arrays):  # writes the whole piece, then stalls before the rename: the kill lands mid-write
    real(file, **arrays)
    file.flush()
    print("writing", flush=True)
    time.sleep(600)
np.savez_compressed = hang
matrix_dynamics.main({args!r})
"""


def test_a_kill_mid_write_or_a_truncated_piece_resumes_to_the_clean_result(tmp_path):
    """Issue 10: SIGKILL during the write of a cached piece, then resume; a truncated piece (an old non-atomic
    writer's leftover) is recomputed with a warning. Both give the tables of a clean run."""
    args = TINY + ["games=stag_hunt", "learners=boltzmann", "empirical_grid=0"]
    clean = matrix_dynamics.main(args + [f"out={tmp_path / 'clean'}"])
    expected = (clean / "convergence.csv").read_text()

    folder = tmp_path / "killed"
    script = _KILL_MID_WRITE.format(experiments=str(pathlib.Path(matrix_dynamics.__file__).parent),
                                    args=args + [f"out={folder}"])
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not list(folder.glob("runs_*.npz"))  # the final name never held a partial piece
    assert [p for p in folder.iterdir() if p.name.endswith(".tmp")]  # the killed writer's temporary file
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing corrupt to warn about; the lock died with the process
        matrix_dynamics.main(args + [f"out={folder}"])
    assert (folder / "convergence.csv").read_text() == expected
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]

    (piece,) = folder.glob("runs_*.npz")
    piece.write_bytes(piece.read_bytes()[: piece.stat().st_size // 2])  # what a kill did to the old writer
    (folder / "convergence.csv").unlink()
    with pytest.warns(UserWarning, match="unreadable.*recomputing"):  # used to crash every resume (BadZipFile)
        matrix_dynamics.main(args + [f"out={folder}"])
    assert (folder / "convergence.csv").read_text() == expected
    np.testing.assert_array_equal(np.load(piece)["final_policy"], np.load(next(clean.glob("runs_*.npz")))["final_policy"])


@pytest.mark.parametrize(
    "arg, match",
    [("num_iterations", "key=value"), ("nope=1", "unknown key"), ("seeds=x", "int"),
     ("games=chess", "unknown matrix game"), ("leniencies=0", "kappa"), ("epsilons=2", "epsilon"),
     ("temperature_starts=-1", "tau"), ("learning_rate=3", "alpha"), ("faq_beta=0", "faq_beta"),
     ("learners=sarsa", "unknown learner"), ("games=", "games needs at least 1"),
     ("games=stag_hunt,stag_hunt", "games repeats 'stag_hunt'"), ("learners=", "learners needs at least 1"),
     ("epsilons=", "epsilons needs"), ("leniencies=5,5", "leniencies repeats"), ("chunk_size=0", "chunk_size"),
     ("record_every=0", "record_every"), ("num_iterations=-5", "num_iterations"), ("devices=-1", "devices"),
     ("devices=99", "devices=99 but JAX sees 1 .*xla_force_host_platform_device_count")],
)
def test_bad_command_line_exits_2_with_one_line(arg, match, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        matrix_dynamics.main([arg, f"out={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and re.search(match, err) and err.strip().count("\n") == 0
    assert not (tmp_path / "out").exists()  # it failed before anything was written


def test_help_describes_every_setting(capsys):
    with pytest.raises(SystemExit) as exit_:
        matrix_dynamics.main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    for field in dataclasses.fields(matrix_dynamics.Config):
        line = next(i for i, l in enumerate(out.splitlines()) if l.startswith(f"  {field.name}: "))
        assert out.splitlines()[line + 1].startswith("      ") and out.splitlines()[line + 1].strip(), field.name
