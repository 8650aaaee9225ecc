"""Helpers of the tests of ``experiments/*.py`` (the experiments are scripts, not a package)."""

from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import re
import sys

import pytest

from jaxgames.experiment import ConfigMismatch, ResultsDir, describe, parse_config

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_experiment(name: str):
    """Imports ``experiments/<name>.py`` as module ``name`` (registered in ``sys.modules``: dataclasses
    resolve annotations through it) and returns the module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def assert_refused_before_writing(experiment, cases, out: pathlib.Path) -> None:
    """Each ``(argv, message)`` of ``cases``, with ``out=<out>`` added, fails to parse into the experiment's
    ``Config`` (`jaxgames.experiment.parse_config`) with a ValueError matching ``message`` (a regex), and
    ``out`` is never created."""
    for argv, message in cases:
        with pytest.raises(ValueError, match=message):
            parse_config(experiment.Config, list(argv) + [f"out={out}"])
    assert not out.exists()  # nothing written


def assert_help_and_one_line_errors(experiment, bad_argv, message, capsys) -> None:
    """``main(["--help"])`` exits 0 and lists every setting of ``experiment.Config``, each with a non-empty
    description (`jaxgames.experiment.describe`); ``main(bad_argv)`` exits 2 with one line on stderr
    matching ``message`` (a regex)."""
    rows = describe(experiment.Config)
    assert rows and not [r["key"] for r in rows if not r["help"].strip()]
    with pytest.raises(SystemExit) as stop:
        experiment.main(["--help"])
    assert stop.value.code == 0
    page = capsys.readouterr().out
    for r in rows:
        assert f"\n  {r['key']}: {r['type']} = " in page and r["help"] in page
    with pytest.raises(SystemExit) as stop:
        experiment.main(list(bad_argv))
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and re.search(message, err) and "Traceback" not in err


def assert_resume_rules(experiment, folder: pathlib.Path, argv, neutral_argv, other_argv, key: str) -> None:
    """A results folder made with ``argv`` accepts ``argv + neutral_argv`` (settings a resume may change)
    and refuses ``argv + other_argv`` with a `ConfigMismatch` naming the dotted ``key``."""
    def open_close(extra):
        with ResultsDir(folder, parse_config(experiment.Config, list(argv) + list(extra)), neutral=experiment.NEUTRAL):
            pass

    open_close([])
    open_close(neutral_argv)
    with pytest.raises(ConfigMismatch, match=rf"\n  {re.escape(key)}: "):
        open_close(other_argv)


@contextlib.contextmanager
def refused_on_the_command_line(capsys, pattern: str):
    """The experiment's ``main`` inside exits 2 with a message matching ``pattern`` (regex) on stderr, no traceback."""
    with pytest.raises(SystemExit) as exit_info:
        yield
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, exit_info.value.code
    assert re.search(pattern, err) and "Traceback" not in err, err
