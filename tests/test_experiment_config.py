"""Nested experiment configs: dotted overrides, flat aliases, --help, one-line errors, Markdown tables."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from typing import Optional

import pytest

from jaxgames import experiment


@dataclasses.dataclass(frozen=True)
class Inner:
    """Learner settings.

    Attributes:
        num_envs: games played at once.
        sizes, rate: shared text for two
            settings, on two lines.
    """

    num_envs: int = 8
    sizes: tuple[int, ...] = (2, 3)
    rate: float = 0.5

    def __post_init__(self):
        if self.num_envs < 1:
            raise ValueError(f"num_envs must be >= 1; got {self.num_envs}")


@dataclasses.dataclass(frozen=True)
class Outer:
    """Experiment settings.

    Attributes:
        learner: the learner.
        out: results folder.
        budget_minutes: wall-clock minutes.
    """

    learner: Inner = Inner(num_envs=4)
    out: str = "results/x"
    budget_minutes: Optional[float] = None
    label: str = dataclasses.field(default="a", metadata={"help": "a label", "parse": str.upper})


def test_dotted_and_flat_keys_reach_the_nested_config():
    c = experiment.parse_config(Outer, ["learner.num_envs=64", "rate=0.25", "label=b", "budget_minutes=none"])
    assert c.learner == Inner(num_envs=64, sizes=(2, 3), rate=0.25)
    assert c.label == "B" and c.budget_minutes is None
    # the nested default is the Outer's (num_envs=4), not Inner's own (8)
    assert experiment.parse_config(Outer, ["sizes=5"]).learner == Inner(num_envs=4, sizes=(5,))


def test_a_base_instance_keeps_its_values_for_the_unnamed_keys():
    base = Outer(learner=Inner(num_envs=16, rate=0.1), out="results/y")
    c = experiment.parse_config(Outer, ["sizes=7", "budget_minutes=3"], base=base)
    assert c == Outer(learner=Inner(num_envs=16, sizes=(7,), rate=0.1), out="results/y", budget_minutes=3.0)
    with pytest.raises(ValueError, match="num_envs"):  # an override of the base is validated as any other
        experiment.parse_config(Outer, ["num_envs=0"], base=base)


def test_unknown_key_names_it_and_suggests_the_nested_spelling():
    @dataclasses.dataclass(frozen=True)
    class Two:
        a: Inner = Inner()
        b: Inner = Inner()

    with pytest.raises(ValueError, match="unknown key 'num_envs'; did you mean one of a.num_envs, b.num_envs"):
        experiment.parse_config(Two, ["num_envs=3"])
    with pytest.raises(ValueError, match="learner.num_envs must be int; got 'x'"):
        experiment.parse_config(Outer, ["num_envs=x"])


def test_describe_gives_type_default_and_help_for_every_key():
    rows = {r["key"]: r for r in experiment.describe(Outer)}
    assert set(rows) == {"learner.num_envs", "learner.sizes", "learner.rate", "out", "budget_minutes", "label"}
    assert rows["learner.num_envs"]["default"] == 4 and rows["learner.num_envs"]["help"] == "games played at once."
    assert rows["learner.rate"]["help"] == "shared text for two settings, on two lines."
    assert rows["label"]["help"] == "a label"


def test_config_differences_are_per_dotted_key():
    stored = experiment.config_dict(Outer())
    diffs = experiment.config_differences(stored, Outer(learner=Inner(num_envs=5)))
    assert diffs == ["learner.num_envs: 4 in the folder, 5 in this run"]


def test_main_help_exits_0_and_bad_value_one_line_exit_2(tmp_path):
    script = tmp_path / "exp.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(pathlib_parent())!r})
        from test_experiment_config import Outer
        from jaxgames import experiment
        experiment.main(Outer, lambda c, argv: print("ran", c.learner.num_envs), summary="A toy.")
    """))
    ok = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True)
    assert ok.returncode == 0 and "learner.num_envs: int = 4" in ok.stdout and "games played at once." in ok.stdout
    bad = subprocess.run([sys.executable, str(script), "learner.num_envs=0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "num_envs must be >= 1; got 0" in bad.stderr and "Traceback" not in bad.stderr
    run = subprocess.run([sys.executable, str(script), "num_envs=9"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ran 9"


def pathlib_parent():
    import pathlib

    return pathlib.Path(__file__).parent


def test_markdown_table():
    text = experiment.markdown_table([{"a": 1, "b": 0.12345}, {"a": 2, "b": None}], formats={"b": ".2f"},
                                     headers={"a": "A"})
    assert text.splitlines() == ["| A | b |", "| --- | --- |", "| 1 | 0.12 |", "| 2 |  |"]
