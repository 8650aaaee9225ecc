"""The Dots-and-Boxes and Battlesnake experiments on tiny settings: they run, write their files, and agree with the rules.

Expected values: on 1x1 the second mover always wins (by hand), and every
minimax variant must match the retrograde solver (checked inside the
experiment and here from its CSV). Every experiment follows the
results-folder rules (issue 10): each file is written under a temporary name
and renamed, a bad override fails before anything is written, a folder of
another configuration and a folder in use are refused without a write.
"""

from __future__ import annotations

import csv
import dataclasses
import fcntl
import importlib.util
import json
import os
import pathlib
import re
import sys

import pytest

from jaxgames import experiment
from tests.experiment_helpers import refused_on_the_command_line

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def renamed(monkeypatch):
    """Records every ``os.replace`` destination: the files that were written under a temporary name, then renamed."""
    seen: set[pathlib.Path] = set()
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        real(src, dst, *args, **kwargs)
        seen.add(pathlib.Path(dst).resolve())

    monkeypatch.setattr(os, "replace", replace)
    return seen


def assert_written_atomically(folder: pathlib.Path, renamed: set) -> None:
    files = {p.resolve() for p in folder.iterdir() if p.is_file() and p.name != ".lock"}
    assert files and files <= renamed, sorted(p.name for p in files - renamed)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_minimax_study(tmp_path, renamed):
    m = load("dab_minimax_study")
    cfg = experiment.parse_config(m.Config, ["boards=1x1,1x2", f"out={tmp_path}", "progress=false"])
    m.run(cfg)
    assert_written_atomically(tmp_path, renamed)
    rows = list(csv.DictReader(open(tmp_path / "minimax_study.csv")))
    assert len(rows) == 12 and all(r["agrees"] == "True" for r in rows)
    assert {r["solver_value"] for r in rows if r["board"] == "1x1"} == {"-1"}  # by hand
    assert (tmp_path / "figure2_search_time.png").exists() and (tmp_path / "figure3_table_keys.png").exists()
    with pytest.raises(ValueError, match="2x3"):
        experiment.parse_config(m.Config, ["boards=2by3"])


def test_agents_table(tmp_path, renamed):
    m = load("dab_agents_table")
    cfg = experiment.parse_config(m.Config, ["num_rows=1", "num_cols=1", "num_games=4", "opponents=random,first_open_edge", f"out={tmp_path}"])
    rows = m.run(cfg)
    assert_written_atomically(tmp_path, renamed)
    # 1x1: the second mover wins, so each side wins the two games it moves second.
    assert [(r["agent_wins"], r["opponent_wins"]) for r in rows] == [(2, 2), (2, 2)]
    assert "| random |" in (tmp_path / "table.md").read_text()
    with pytest.raises(ValueError, match="unknown opponent"):
        experiment.parse_config(m.Config, ["opponents=stockfish"])


def test_tournament(tmp_path, renamed):
    m = load("dab_tournament")
    cfg = experiment.parse_config(m.Config, ["num_rows=1", "num_cols=2", "num_rounds=4", "agents=random,greedy,alphabeta,perfect", f"out={tmp_path}"])
    t = m.run(cfg)
    assert_written_atomically(tmp_path, renamed)
    assert t.elo.shape == (5, 4)
    # The perfect player never loses to anyone over a pair of games with alternating seats:
    # its net wins are >= 0 in each pairing (it wins or draws whenever the position allows).
    p = t.names.index("perfect")
    assert all(t.net_wins[p, j] >= 0 for j in range(4))
    for f in ["ratings.csv", "elo_history.png", "net_wins.png", "mean_length.png", "ratings.png", "win_rate.png", "config.json"]:
        assert (tmp_path / f).exists()


def test_battlesnake_round_robin(tmp_path, renamed):
    """Two agents in 4-snake games on 7x7: every mix with both agents (3 lineups), tables and README written."""
    m = load("battlesnake_round_robin")
    cfg = experiment.parse_config(
        m.Config, ["agents=random,random_safe", "num_games=4", "board_size=7", "max_turns=30", "bootstrap_samples=10", f"out={tmp_path}"]
    )
    t = m.run(cfg)
    assert_written_atomically(tmp_path, renamed)
    assert t.lineups == ((0, 0, 0, 1), (0, 0, 1, 1), (0, 1, 1, 1))
    with open(tmp_path / "eliminations.csv") as f:
        rows = list(csv.DictReader(f))
    # Agent 0 holds 3, 2 and 1 of the 4 seats in the three lineups, agent 1 the rest: 6 seats each over
    # one game of every lineup, so 6 x 4 games = 24 seats each.
    assert [int(r["seats"]) for r in rows] == [24, 24]
    for r in rows:  # the shares of survival and every cause add up to 1
        assert abs(sum(float(v) for k, v in r.items() if k not in ("agent", "seats")) - 1.0) < 1e-3
    for f in ["README.md", "ratings.csv", "ratings.png", "net_wins.png", "config.json"]:
        assert (tmp_path / f).exists()
    with pytest.raises(ValueError, match="unknown agent"):
        m.Config(agents=("random", "nobody"))


def test_battlesnake_round_robin_search_agents_take_the_search_settings():
    m = load("battlesnake_round_robin")
    cfg = m.Config(agents=("search", "search_learned", "q_snake"), search_depth=1, search_opponents=1,
                   search_best_reply=False)
    search, learned, q = (m.make_agent(a, cfg) for a in cfg.agents)
    assert [a.name for a in (search, learned, q)] == ["search", "search_learned", "q_snake"]
    for a in (search, learned):
        assert (a.depth, a.opponents, a.best_reply) == (1, 1, False)
    assert search.learned is None and float(learned.learned_weight) == 1.0 and learned.learned is not None


# Per experiment: tiny valid overrides, and another configuration of it.
TINY = {
    "dab_minimax_study": (["boards=1x1", "progress=false"], ["boards=1x2"]),
    "dab_agents_table": (["num_rows=1", "num_cols=1", "num_games=2", "opponents=random"], ["num_games=4"]),
    "dab_tournament": (["num_rows=1", "num_cols=1", "num_rounds=1", "agents=random,greedy"], ["num_rounds=2"]),
    "battlesnake_round_robin": (["agents=random,random_safe", "num_games=1", "board_size=7", "max_turns=5",
                                "bootstrap_samples=2"], ["max_turns=6"]),
}


@pytest.mark.parametrize("name, arg, match", [
    ("dab_minimax_study", "boards=", "boards needs at least 1"),
    ("dab_minimax_study", "boards=1x2,1X2", "boards repeats"),
    ("dab_minimax_study", "variants=naive,naive", "variants repeats"),
    ("dab_minimax_study", "time_limit=0", "time_limit"),
    ("dab_agents_table", "opponents=", "opponents needs at least 1"),
    ("dab_agents_table", "opponents=random,random", "opponents repeats"),
    ("dab_agents_table", "num_games=0", "num_games"),
    ("dab_agents_table", "depth=0", "depth"),
    ("dab_agents_table", "mcts_simulations=0", "mcts_simulations"),
    ("dab_tournament", "agents=random,random,greedy", "agents repeats"),
    ("dab_tournament", "num_rounds=0", "num_rounds"),
    ("dab_tournament", "k=0", "k must be positive"),
    ("dab_tournament", "mcts_simulations=-1", "mcts_simulations"),
    ("battlesnake_round_robin", "agents=", "at least two"),
    ("battlesnake_round_robin", "num_games=0", "num_games"),
    ("battlesnake_round_robin", "max_turns=0", "max_turns"),
    ("battlesnake_round_robin", "search_depth=0", "search_depth"),
    ("battlesnake_round_robin", "search_opponents=4", "search_opponents"),
])
def test_bad_overrides_fail_before_anything_is_written(name, arg, match, tmp_path, capsys):
    m = load(name)
    with pytest.raises(SystemExit) as exit_:
        m.main(TINY[name][0] + [arg, f"out={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and re.search(match, err) and err.strip().count("\n") == 0
    assert not (tmp_path / "out").exists()


def _config_json(m, args: list[str]) -> str:
    return json.dumps(dataclasses.asdict(experiment.parse_config(m.Config, args)), indent=2, default=str)


@pytest.mark.parametrize("name", sorted(TINY))
def test_another_configuration_or_a_running_one_is_refused_untouched(name, tmp_path, capsys):
    m = load(name)
    args, other = TINY[name]
    # The folder holds the results of another configuration of the same experiment.
    (tmp_path / "config.json").write_text(_config_json(m, args + other + [f"out={tmp_path}"]))
    (tmp_path / "result.csv").write_text("theirs\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with refused_on_the_command_line(capsys, "(?s)holds results of another configuration.*overwrite=true"):
        m.main(args + [f"out={tmp_path}"])
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != ".lock"} == before

    # A run of the same configuration is under way (it holds the lock): a second one is refused.
    (tmp_path / "config.json").write_text(_config_json(m, args + [f"out={tmp_path}"]))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != ".lock"}
    with open(tmp_path / ".lock", "a+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with refused_on_the_command_line(capsys, f"{tmp_path} is in use by another run"):
            m.main(args + [f"out={tmp_path}"])
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != ".lock"} == before
