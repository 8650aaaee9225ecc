"""ResultsDir (jaxgames.experiment): the lock, one configuration per folder, atomic writes, checked cache loads.

Fast: no JAX work; the concurrent runs and the kill are real subprocesses.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from jaxgames.experiment import (
    CachedPieceWarning,
    ConfigMismatch,
    ResultsDir,
    ResultsDirError,
    ResultsDirLocked,
    check_names,
    check_positive,
    config_differences,
    parse_config,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Config:
    games: tuple[str, ...] = ("stag_hunt",)
    num_iterations: int = 100
    out: str = "results/x"
    progress: bool = True
    overwrite: bool = False


def files(folder: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".lock"}


def spawn(script: str) -> subprocess.Popen:
    """Runs ``script`` in a fresh interpreter, with `ResultsDir` imported from the module file (no JAX import)."""
    code = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("experiment", {str(ROOT / "jaxgames" / "experiment.py")!r})
        experiment = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(experiment)
        ResultsDir = experiment.ResultsDir
    """) + textwrap.dedent(script)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# ----------------------------------------------------------------------------- writers


def test_writers_write_every_kind_atomically(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    with ResultsDir(tmp_path, Config()) as rd:
        rd.write_text("README.md", "# hello\n")
        rd.write_json("summary.json", {"a": (1, 2)})
        rd.write_csv("table.csv", [{"x": 1, "y": "b"}, {"x": 2, "y": "c"}])
        rd.write_csv("ragged.csv", [{"x": 1}, {"x": 2, "z": 5}, {"y": 3}])  # header: every key, first seen first
        rd.save_npz("runs.npz", {"p": np.arange(6.0).reshape(2, 3)})
        fig = Figure()
        fig.add_subplot().plot([0, 1], [1, 0])
        rd.save_figure(fig, "figure.png", dpi=50)
        rd.save_figure(fig, "figure.pdf")
    assert (tmp_path / "README.md").read_text() == "# hello\n"
    assert json.loads((tmp_path / "summary.json").read_text()) == {"a": [1, 2]}
    assert (tmp_path / "table.csv").read_text().splitlines() == ["x,y", "1,b", "2,c"]
    assert (tmp_path / "ragged.csv").read_text().splitlines() == ["x,z,y", "1,,", "2,5,", ",,3"]
    np.testing.assert_array_equal(np.load(tmp_path / "runs.npz")["p"], np.arange(6.0).reshape(2, 3))
    assert (tmp_path / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "figure.pdf").read_bytes()[:5] == b"%PDF-"
    assert json.loads((tmp_path / "config.json").read_text())["games"] == ["stag_hunt"]
    manifest = json.loads((tmp_path / ".manifest.json").read_text())["files"]
    assert set(manifest) == {"config.json", "README.md", "summary.json", "table.csv", "ragged.csv", "runs.npz", "figure.png",
                             "figure.pdf"}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_failing_write_leaves_the_old_file(tmp_path):
    with ResultsDir(tmp_path, Config()) as rd:
        rd.write_text("table.csv", "old\n")
        with pytest.raises(ZeroDivisionError):
            with rd.open_write("table.csv") as f:
                f.write(b"half a ta")
                1 / 0
        with pytest.raises(ValueError, match="plain name"):
            rd.write_text("../escape.txt", "x")
    assert (tmp_path / "table.csv").read_text() == "old\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ResultsDirError, match="not open"):
        rd.write_text("late.txt", "x")


def test_staging_moves_files_in_on_success_only(tmp_path):
    with ResultsDir(tmp_path, Config()) as rd:
        with rd.staging() as tmp:
            (tmp / "ratings.csv").write_text("a\n")
            (tmp / "plot.png").write_bytes(b"png")
        with pytest.raises(RuntimeError):
            with rd.staging() as tmp:
                (tmp / "ratings.csv").write_text("half\n")
                raise RuntimeError("crashed")
    assert (tmp_path / "ratings.csv").read_text() == "a\n" and (tmp_path / "plot.png").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staging")]


def test_a_kill_in_the_middle_of_a_write(tmp_path):
    """SIGKILL while a piece is half written: the old piece survives, and the next run cleans up and proceeds."""
    with ResultsDir(tmp_path, {"n": 1}) as rd:
        rd.write_text("piece.txt", "complete old piece\n")
    proc = spawn(f"""
        import time
        with ResultsDir({str(tmp_path)!r}, {{"n": 1}}) as rd:
            with rd.open_write("piece.txt") as f:
                f.write(b"the first half of a new pie")
                f.flush()
                print("writing", flush=True)
                time.sleep(600)
    """)
    try:
        assert proc.stdout.readline().strip() == "writing", proc.stderr.read()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert (tmp_path / "piece.txt").read_text() == "complete old piece\n"
    (leftover,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftover.read_bytes() == b"the first half of a new pie"
    with ResultsDir(tmp_path, {"n": 1}) as rd:  # the lock died with the process; the leftover is removed
        assert not leftover.exists()
        rd.write_text("piece.txt", "complete new piece\n")
    assert (tmp_path / "piece.txt").read_text() == "complete new piece\n"


# ----------------------------------------------------------------------------- lock


def test_a_second_concurrent_run_is_refused_with_the_holders_pid(tmp_path):
    proc = spawn(f"""
        import time
        with ResultsDir({str(tmp_path)!r}, {{"n": 1}}) as rd:
            print("holding", flush=True)
            time.sleep(600)
    """)
    try:
        assert proc.stdout.readline().strip() == "holding", proc.stderr.read()
        before = files(tmp_path)
        with pytest.raises(ResultsDirLocked, match=rf"{tmp_path} is in use by another run \(pid {proc.pid}\)"):
            ResultsDir(tmp_path, {"n": 2}).open()  # even with other settings: the lock comes first
        assert files(tmp_path) == before  # the running run's config.json is untouched
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with ResultsDir(tmp_path, {"n": 1}):  # free once the holder is gone, even killed
        pass


def test_the_lock_is_released_on_exit_and_on_error(tmp_path):
    with pytest.raises(KeyError):
        with ResultsDir(tmp_path, Config()):
            raise KeyError("boom")
    with ResultsDir(tmp_path, Config()):
        with pytest.raises(ResultsDirLocked):
            ResultsDir(tmp_path, Config()).open()
    with pytest.raises(ConfigMismatch):  # a refused run releases the lock it took
        ResultsDir(tmp_path, Config(num_iterations=5)).open()
    with ResultsDir(tmp_path, Config()):
        pass


# ----------------------------------------------------------------------------- one configuration per folder


def test_another_configuration_is_refused_and_a_resume_proceeds(tmp_path):
    with ResultsDir(tmp_path, Config(out=str(tmp_path))) as rd:
        rd.write_text("table.csv", "ours\n")
    before = files(tmp_path)
    with pytest.raises(ConfigMismatch) as err:
        ResultsDir(tmp_path, Config(games=("stag_hunt", "prisoners_dilemma"), num_iterations=7)).open()
    message = str(err.value)
    assert str(tmp_path) in message and "out=" in message and "overwrite=true" in message
    assert "games: ['stag_hunt'] in the folder, ['stag_hunt', 'prisoners_dilemma'] in this run" in message
    assert "num_iterations: 100 in the folder, 7 in this run" in message
    assert files(tmp_path) == before
    # A resume: the same settings, or different only in settings that do not change results.
    with ResultsDir(tmp_path, Config(out="elsewhere", progress=False)) as rd:
        rd.write_text("more.csv", "ours too\n")
    assert json.loads((tmp_path / "config.json").read_text())["progress"] is False


def test_overwrite_replaces_the_other_runs_files_and_keeps_the_rest(tmp_path):
    with ResultsDir(tmp_path, Config()) as rd:
        rd.write_text("table.csv", "old\n")
        rd.save_npz("runs_a.npz", {"x": np.zeros(2)})
    (tmp_path / "notes.txt").write_text("the user's own notes\n")  # not written by a run: kept
    with pytest.warns(UserWarning, match=r"(?s)replacing.*num_iterations.*deleted 3 files.*kept: notes.txt"):
        with ResultsDir(tmp_path, Config(num_iterations=5), overwrite=True) as rd:
            rd.write_text("new.csv", "new\n")
    assert sorted(files(tmp_path)) == [".manifest.json", "config.json", "new.csv", "notes.txt"]
    assert json.loads((tmp_path / "config.json").read_text())["num_iterations"] == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ResultsDir(tmp_path, Config(num_iterations=5), overwrite=True):  # same config: nothing to replace
            pass
    assert (tmp_path / "new.csv").exists()


def test_config_differences_rules():
    stored = {"games": ["stag_hunt"], "num_iterations": 100, "out": "a", "progress": True}
    # overwrite is missing from the stored config but equals its default: equal. out, progress: neutral.
    assert config_differences(stored, Config(out="b", progress=False)) == []
    assert config_differences(stored, Config(num_iterations=3)) == ["num_iterations: 100 in the folder, 3 in this run"]
    assert config_differences(dict(stored, seeds=4), Config()) == ["seeds: 4 in the folder, absent in this run"]
    assert config_differences(stored, {"games": ["stag_hunt"], "num_iterations": 100, "extra": 1}) == [
        "extra: absent in the folder, 1 in this run"]


def test_an_unreadable_config_json_is_refused(tmp_path):
    (tmp_path / "config.json").write_text('{"games": ["stag')  # a torn write by an old, non-atomic writer
    with pytest.raises(ConfigMismatch, match="unreadable"):
        ResultsDir(tmp_path, Config()).open()


# ----------------------------------------------------------------------------- cached pieces


def test_a_truncated_or_foreign_cached_piece_is_recomputed_with_a_warning(tmp_path):
    with ResultsDir(tmp_path, Config()) as rd:
        assert rd.load_npz("runs.npz") is None  # missing: no warning
        rd.save_npz("runs.npz", {"x": np.arange(1000.0)}, key="k1")
        np.testing.assert_array_equal(rd.load_npz("runs.npz", key="k1")["x"], np.arange(1000.0))
        with pytest.warns(CachedPieceWarning, match="made by other settings"):
            assert rd.load_npz("runs.npz", key="k2") is None
        path = tmp_path / "runs.npz"
        for keep in (0.001, 0.5, 0.999):
            rd.save_npz("runs.npz", {"x": np.arange(1000.0)})
            data = path.read_bytes()
            path.write_bytes(data[: int(keep * len(data))])
            with pytest.warns(CachedPieceWarning, match="unreadable.*recomputing"):
                assert rd.load_npz("runs.npz") is None
            assert not path.exists()
        rd.save_json("rows.json", [{"a": 1}], key="k1")
        assert rd.load_json("rows.json", key="k1") == [{"a": 1}]
        (tmp_path / "rows.json").write_text('{"key": "k1", "val')
        with pytest.warns(CachedPieceWarning, match="unreadable"):
            assert rd.load_json("rows.json", key="k1") is None


# ----------------------------------------------------------------------------- validation helpers


def test_check_names_and_check_positive():
    check_names("games", ("a", "b"), ("a", "b", "c"))
    with pytest.raises(ValueError, match=r"games needs at least 1 entry; got \(\)"):
        check_names("games", ())
    with pytest.raises(ValueError, match="agents needs at least 2 entries"):
        check_names("agents", ("a",), at_least=2)
    with pytest.raises(ValueError, match="games repeats 'a'"):
        check_names("games", ("a", "b", "a"))
    with pytest.raises(ValueError, match=r"unknown games entry 'z'; choose from \('a', 'b'\)"):
        check_names("games", ("z",), ("a", "b"))
    check_positive(chunk_size=1, rate=0.5)
    with pytest.raises(ValueError, match="chunk_size must be positive; got 0"):
        check_positive(chunk_size=0)
    with pytest.raises(ValueError, match="games needs at least 1"):  # an empty override parses to ()
        cfg = parse_config(Config, ["games="])
        check_names("games", cfg.games)


@dataclasses.dataclass(frozen=True)
class _OptionalSettings:
    budget_minutes: float | None = None
    rounds: "int | None" = 3


def test_parse_config_converts_pep604_optionals():
    """``float | None`` was returned as the string '2' (the union check compared the wrong name)."""
    from jaxgames.experiment import parse_config

    cfg = parse_config(_OptionalSettings, ["budget_minutes=2", "rounds=none"])
    assert cfg.budget_minutes == 2.0 and isinstance(cfg.budget_minutes, float)
    assert cfg.rounds is None
    with pytest.raises(ValueError, match="budget_minutes"):
        parse_config(_OptionalSettings, ["budget_minutes=abc"])


def test_release_deletes_the_lock_file_and_a_deleted_file_is_never_trusted(tmp_path, monkeypatch):
    """A run leaves no ``.lock`` behind; a run that locked the file just as its holder deleted it locks
    the new file instead, so a third run is refused (two runs never hold locks on two files)."""
    import fcntl

    from jaxgames import experiment
    from jaxgames.experiment import DirectoryLock

    holder = DirectoryLock(tmp_path)
    holder.acquire()
    real, calls = fcntl.flock, []

    def flock(fd, op):
        calls.append(op)
        if len(calls) == 1:  # the second run has opened the file; the holder finishes before it locks
            holder.release()
        return real(fd, op)

    monkeypatch.setattr(experiment.fcntl, "flock", flock)
    second = DirectoryLock(tmp_path)
    second.acquire()
    monkeypatch.setattr(experiment.fcntl, "flock", real)
    assert (tmp_path / ".lock").read_text().strip() == str(os.getpid())
    with pytest.raises(ResultsDirLocked):
        DirectoryLock(tmp_path).acquire()
    second.release()
    assert not (tmp_path / ".lock").exists()


@dataclasses.dataclass(frozen=True)
class CliConfig:
    """A command-line experiment's settings (for `main`)."""

    rate: float = 0.1
    out: str = "x"


def test_main_prints_a_folder_of_another_configuration_without_a_traceback(tmp_path, capsys):
    from jaxgames import experiment

    def run(config, argv):
        with ResultsDir(config.out, config):
            return "ran"

    out = str(tmp_path / "r")
    assert experiment.main(CliConfig, run, [f"out={out}"], prog="exp.py") == "ran"
    with pytest.raises(SystemExit) as err:
        experiment.main(CliConfig, run, [f"out={out}", "rate=0.2"], prog="exp.py")
    assert err.value.code == 2
    text = capsys.readouterr().err
    assert text.startswith("exp.py: error: ") and "Traceback" not in text
    assert "rate: 0.1 in the folder, 0.2 in this run" in text
