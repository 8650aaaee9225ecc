"""Helpers of the tests of ``experiments/*.py`` (the experiments are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

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
    """Each ``(argv, message)`` of ``cases``, with ``out=<out>`` added, fails in the experiment's
    ``parse_config`` with a ValueError matching ``message`` (a regex), and ``out`` is never created."""
    for argv, message in cases:
        with pytest.raises(ValueError, match=message):
            experiment.parse_config(experiment.Config, list(argv) + [f"out={out}"])
    assert not out.exists()  # nothing written
