"""Tests of ``experiments/onitama_tournament.py``: the Elo order in closed form, the matrices, a tiny run, bad settings.

Elo as in Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement Learning" (NUS USP group report, 2021),
section 6.3, equations 6.1-6.2.
"""

from __future__ import annotations

import csv
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

from jaxgames import experiment
from jaxgames.evaluation import arena

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location("onitama_tournament", ROOT / "experiments" / "onitama_tournament.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


T = _load()


def _fake_pairing(names, pair, scores):
    """An `ArenaResult` of one pairing: game r scores ``scores[r]`` for ``pair[0]`` (1 win, 0.5 draw, 0 loss)."""
    G = len(scores)
    seat_of_first = np.arange(G) % 2  # the pair's first entrant in seat 0 in even games
    agent_of_seat = np.where(seat_of_first[:, None] == np.arange(2)[None, :], 0, 1).astype(np.int32)
    placement = np.ones((G, 2), np.int32)
    for g, s in enumerate(scores):
        if s != 0.5:
            loser = (seat_of_first[g] if s == 0 else 1 - seat_of_first[g])
            placement[g, loser] = 2
    returns = np.where(placement == 1, 1.0, -1.0).astype(np.float32)
    res = arena.ArenaResult(
        names=(names[pair[0]], names[pair[1]]), agent_of_seat=agent_of_seat, returns=returns, placement=placement,
        length=np.full(G, 10 + pair[0] + pair[1], np.int32), finished=np.ones(G, bool),
        truncated=np.asarray([s == 0.5 for s in scores]), timed_out=np.zeros(G, bool),
        max_move_seconds=np.zeros((G, 2)), stats={},
    )
    return T.to_global(res, names, pair)


def test_elo_follows_the_paper_equations_in_round_robin_order():
    names = ("a", "b", "c")
    lineups = [(0, 1), (0, 2), (1, 2)]
    # round 0: a beats b, a beats c, b and c draw; round 1: b beats a, c beats a, c beats b
    scores = {(0, 1): [1, 0], (0, 2): [1, 0], (1, 2): [0.5, 0]}
    results = [_fake_pairing(names, p, scores[p]) for p in lineups]
    t = T.summarise(names, lineups, results, 2, k=32.0, bootstrap_samples=2)

    def expected(ra, rb):  # Dasgupta & Chong, eq. 6.1
        return 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0))

    r = {"a": 1000.0, "b": 1000.0, "c": 1000.0}
    after_round = [dict(r)]
    for rnd in range(2):
        for i, j in lineups:
            a, b = names[i], names[j]
            s = scores[(i, j)][rnd]
            ea = expected(r[a], r[b])
            r[a], r[b] = r[a] + 32 * (s - ea), r[b] + 32 * ((1 - s) - (1 - ea))  # Dasgupta & Chong, eq. 6.2
            if rnd == 0 and (i, j) == (0, 1):
                assert (r["a"], r["b"]) == (1016.0, 984.0)  # 1000 + 32 * (1 - 1/2)
        after_round.append(dict(r))
    assert t.elo.shape == (3, 3)
    for rnd, ratings in enumerate(after_round):
        np.testing.assert_allclose(t.elo[rnd], [ratings[n] for n in names], rtol=0, atol=1e-9)
    np.testing.assert_allclose(t.elo.sum(axis=1), 3000.0)  # every update is zero-sum
    np.testing.assert_array_equal(t.net_wins, [[0, 0, 0], [0, 0, -1], [0, 1, 0]])
    np.testing.assert_allclose(t.mean_length[0, 1], 11.0)


def _read_matrix(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0][1:], np.array([[float(x) for x in row[1:]] for row in rows[1:]])


def test_tiny_tournament_minimax_beats_random_and_the_tables_add_up(tmp_path, monkeypatch):
    rounds = 16
    out = tmp_path / "tour"
    config = T.Config(ddpg="none", agents=("random", "minimax1"), rounds=rounds, bootstrap_samples=3,
                      out=str(out), progress=False)
    t = T.run(config)
    names = list(t.names)
    assert names == ["random", "minimax1"]
    m, r = names.index("minimax1"), names.index("random")
    # minimax depth 1 won 14 of 16 against random in a trial; net > 0 fails only if it won at most 8 (p < 1e-3)
    assert t.net_wins[m, r] > 0 and t.elo[-1, m] > t.elo[-1, r]
    # matrices: antisymmetric net wins, every pair's games counted once from each side
    np.testing.assert_array_equal(t.net_wins, -t.net_wins.T)
    np.testing.assert_allclose(t.wins + t.wins.T, rounds * (1 - np.eye(2)))
    np.testing.assert_allclose(t.mean_length, t.mean_length.T, equal_nan=True)
    assert t.elo.shape == (rounds + 1, 2)
    np.testing.assert_allclose(t.elo.sum(axis=1), 2000.0)
    rows = {row["agent"]: row for row in T.outcome_rows(t)}
    for row in rows.values():
        assert row["wins"] + row["draws"] + row["losses"] == row["games"] == rounds
    assert rows["minimax1"]["wins"] == rows["random"]["losses"]
    assert rows["minimax1"]["wins"] - rows["random"]["wins"] == t.net_wins[m, r]
    np.testing.assert_allclose(t.win_rate[m], rows["minimax1"]["wins"] / rounds)
    # the files
    for name in ("README.md", "config.json", "ratings.csv", "outcomes.csv", "elo_history.csv", "elo_history.png",
                 "ratings.png", "win_rate.png", "net_wins.csv", "net_wins.png", "mean_length.csv", "mean_length.png"):
        assert (out / name).is_file(), name
    header, net = _read_matrix(out / "net_wins.csv")
    assert header == names
    np.testing.assert_array_equal(net, t.net_wins)
    assert len(list(out.glob("pairing_*.npz"))) == 1

    # a rerun reads the cached pairing instead of playing it, and gives the same tables
    def no_play(*args, **kwargs):
        raise AssertionError("the cached pairing was played again")

    monkeypatch.setattr(T.arena, "play", no_play)
    again = T.run(config)
    np.testing.assert_array_equal(again.net_wins, t.net_wins)
    np.testing.assert_allclose(again.elo, t.elo)


@pytest.mark.parametrize("overrides, error", [
    (dict(rounds=0), ValueError),
    (dict(agents=("random", "minimax9")), ValueError),
    (dict(agents=("random", "random")), ValueError),
    (dict(agents=("random",)), ValueError),
    (dict(k=0.0), ValueError),
    (dict(deck=("Dragon", "Elephant", "Goose", "Rooster", "Nope")), ValueError),
    (dict(variants=("no_such_variant",), ddpg="somewhere"), ValueError),
])
def test_bad_settings_raise_before_anything_is_written(tmp_path, overrides, error):
    out = tmp_path / "never"
    with pytest.raises(error):
        T.run(T.Config(out=str(out), **{"ddpg": "none", "agents": ("random", "minimax1"), **overrides}))
    assert not out.exists()


def test_missing_ddpg_actors_name_the_training_command(tmp_path):
    out = tmp_path / "never"
    with pytest.raises(FileNotFoundError, match="experiments/onitama_ddpg.py out="):
        T.run(T.Config(ddpg=str(tmp_path / "no_ddpg"), agents=("random",), out=str(out)))
    assert not out.exists()
    with pytest.raises(ValueError, match="unknown key"):
        experiment.parse_config(T.Config, ["round=3"])
    with pytest.raises(ValueError, match="rounds must be int"):
        experiment.parse_config(T.Config, ["rounds=many"])
