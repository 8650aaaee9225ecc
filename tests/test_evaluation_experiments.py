"""The Dots-and-Boxes experiments on tiny settings: they run, write their files, and agree with the rules.

Expected values: on 1x1 the second mover always wins (by hand), and every
minimax variant must match the retrograde solver (checked inside the
experiment and here from its CSV).
"""

from __future__ import annotations

import csv
import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_minimax_study(tmp_path):
    m = load("dab_minimax_study")
    cfg = m.parse_config(m.Config, ["boards=1x1,1x2", f"out={tmp_path}", "progress=false"])
    m.run(cfg)
    rows = list(csv.DictReader(open(tmp_path / "minimax_study.csv")))
    assert len(rows) == 12 and all(r["agrees"] == "True" for r in rows)
    assert {r["solver_value"] for r in rows if r["board"] == "1x1"} == {"-1"}  # by hand
    assert (tmp_path / "figure2_search_time.png").exists() and (tmp_path / "figure3_table_keys.png").exists()
    with pytest.raises(ValueError, match="2x3"):
        m.parse_config(m.Config, ["boards=2by3"])


def test_agents_table(tmp_path):
    m = load("dab_agents_table")
    cfg = m.parse_config(m.Config, ["num_rows=1", "num_cols=1", "num_games=4", "opponents=random,first_open_edge", f"out={tmp_path}"])
    rows = m.run(cfg)
    # 1x1: the second mover wins, so each side wins the two games it moves second.
    assert [(r["agent_wins"], r["opponent_wins"]) for r in rows] == [(2, 2), (2, 2)]
    assert "| random |" in (tmp_path / "table.md").read_text()
    with pytest.raises(ValueError, match="unknown opponent"):
        m.parse_config(m.Config, ["opponents=stockfish"])


def test_tournament(tmp_path):
    m = load("dab_tournament")
    cfg = m.parse_config(m.Config, ["num_rows=1", "num_cols=2", "num_rounds=4", "agents=random,greedy,alphabeta,perfect", f"out={tmp_path}"])
    t = m.run(cfg)
    assert t.elo.shape == (5, 4)
    # The perfect player never loses to anyone over a pair of games with alternating seats:
    # its net wins are >= 0 in each pairing (it wins or draws whenever the position allows).
    p = t.names.index("perfect")
    assert all(t.net_wins[p, j] >= 0 for j in range(4))
    for f in ["ratings.csv", "elo_history.png", "net_wins.png", "mean_length.png", "ratings.png", "win_rate.png", "config.json"]:
        assert (tmp_path / f).exists()


def test_battlesnake_round_robin(tmp_path):
    """Two agents in 4-snake games on 7x7: every mix with both agents (3 lineups), tables and README written."""
    m = load("battlesnake_round_robin")
    cfg = m.parse_config(
        m.Config, ["agents=random,random_safe", "num_games=4", "board_size=7", "max_turns=30", "bootstrap_samples=10", f"out={tmp_path}"]
    )
    t = m.run(cfg)
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
