"""Every benchmark's command line (issue 31): ``--help`` lists each setting with its type, default and meaning
(exit 0), and a bad value is one line naming it on stderr (exit 2), not a traceback, before any work.

Each benchmark runs as a user runs it, as ``__main__`` with its command line in ``sys.argv``, so a benchmark that
does work at import (or parses ``sys.argv`` itself) fails here. All of them run in ONE fresh interpreter, started
once for the whole module (`runpy.run_path` each in turn), not one interpreter start-up and JAX import per command.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCHMARKS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py"))

# One value each benchmark must refuse (out of range, not only of the wrong type), and the key its message names.
BAD_VALUES = {
    "alphazero": "repeats=0",
    "arena": "snake_games=0",
    "battlesnake": "seconds=inf",
    "battlesnake_agents": "matchups=3v1",
    "battlesnake_search": "depth=0",
    "dab_solver": "variant_limit=nan",
    "dots_and_boxes": "sizes=0",
    "equilibria": "random_sizes=0",
    "matrix_learners": "iterations=-5",
    "networks": "repeats=0",
    "onitama": "alphabeta_depths=7",
    "q_snake": "seconds=nan",
    "run_all": "budget_minutes=0",
    "scaling": "devices=0",
    "server": "requests=0",
}

ROW = re.compile(r"^  (?P<key>[\w.]+): (?P<type>.+) = (?P<default>.*)$")


# Run in the subprocess: each job as `python benchmarks/<name>.py <arg>`, its exit status and output as JSON.
_DRIVER = """
import contextlib, io, json, runpy, sys, traceback
out = {}
for name, arg in json.loads(sys.argv[1]):
    path = f"benchmarks/{name}.py"
    stdout, stderr, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [path, arg]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
            if not isinstance(exit.code, (int, type(None))):
                print(exit.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
    out[f"{name} {arg}"] = [code, stdout.getvalue(), stderr.getvalue()]
print("\\nRESULTS " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def answers():
    """``(name, "help" | "bad") -> CompletedProcess`` for every benchmark, all run in one fresh interpreter."""
    jobs = {(n, "help"): "--help" for n in BENCHMARKS}
    jobs.update({(n, "bad"): BAD_VALUES[n] for n in BENCHMARKS if n in BAD_VALUES})
    done = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps([[n, a] for (n, _), a in jobs.items()])],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "\nRESULTS " in done.stdout, done.stderr[-3000:]
    results = json.loads(done.stdout.rsplit("\nRESULTS ", 1)[1])
    return {job: subprocess.CompletedProcess(arg, *results[f"{job[0]} {arg}"]) for job, arg in jobs.items()}


def test_every_benchmark_has_a_bad_value_here():
    assert set(BENCHMARKS) == set(BAD_VALUES), "add the new benchmark and a value it refuses to BAD_VALUES"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_help_lists_every_setting_with_type_default_and_meaning(name, answers):
    done = answers[(name, "help")]
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == f"usage: python benchmarks/{name}.py [key=value ...]"
    rows = [(i, ROW.match(line)) for i, line in enumerate(lines)]
    rows = [(i, m) for i, m in rows if m]
    assert rows, done.stdout
    for i, m in rows:
        assert m["type"].strip() and m["default"] is not None
        meaning = lines[i + 1] if i + 1 < len(lines) else ""
        assert meaning.startswith("      ") and meaning.strip(), f"{name}: setting {m['key']} has no description"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_bad_value_is_one_line_naming_it_and_exit_2(name, answers):
    done = answers[(name, "bad")]
    key = BAD_VALUES[name].split("=")[0]
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stdout == ""  # nothing ran
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert errors[0].startswith(f"benchmarks/{name}.py: error: ") and key in errors[0], errors[0]


def _search_benchmark():
    name = "benchmarks_battlesnake_search"
    if name not in sys.modules:  # dataclasses look their module up there
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "battlesnake_search.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def test_search_benchmark_evaluation_setting_reaches_the_agent_and_refuses_bad_items():
    bs = _search_benchmark()
    cfg = bs.Config(evaluation=("hungry_unless_longest:false", "food_weight:0.8", "hunger_health:70"))
    assert cfg.weights() == {"hungry_unless_longest": False, "food_weight": 0.8, "hunger_health": 70}
    agent = cfg.agent()
    assert agent.weights["hungry_unless_longest"] is False and agent.weights["food_weight"] == 0.8
    assert agent.weights["longest_weight"] == 0.4  # the agent's own default, untouched
    for bad, words in ((("speed:1",), "name:value"), (("food_weight",), "name:value"), (("board:1",), "name:value"),
                       (("hunger_health:7.5",), "int"), (("hungry_unless_longest:1",), "true or false"),
                       (("food_weight:1", "food_weight:2"), "twice"), (("food_weight:-1",), "food_weight")):
        with pytest.raises(ValueError, match=words):
            bs.Config(evaluation=bad)
    assert bs.Config(default_policy="greedy").agent().default_policy == "greedy"
    with pytest.raises(ValueError, match="default_policy"):
        bs.Config(default_policy="random")


def test_search_benchmark_games_files_of_the_defaults_before_still_resume_and_only_theirs():
    bs = _search_benchmark()
    # The default since session 39 (depth 5, alpha-beta, 30,000 states) resumes session 33's D5 files: their settings,
    # as written then into benchmarks/games/s33_d5/d5_a/games_public.npz.
    d5 = ('{"alphabeta": true, "best_reply": true, "branching": 3, "chunk": 50, "default_policy": "greedy", '
          '"depth": 5, "evaluation": ["hungry_unless_longest:true", "starvation_loss:true"], "max_turns": 1000, '
          '"search_opponents": 2, "seed": 0, "step_budget": 30000, "tie_break": "mean"}')
    assert bs.games_settings(bs.Config(games=1000, chunk=50, think_positions=0, speed_batch=0)) == d5
    base = dict(games=1000, chunk=50, think_positions=0, speed_batch=0, depth=4, alphabeta=False, step_budget=None)
    # As the code before this change wrote them into games files: the room default without starvation_loss,
    # and default_policy=greedy evaluation=starvation_loss:true (session 27's results/s27/sl_p).
    room = ('{"best_reply": true, "branching": 3, "chunk": 50, "depth": 4, "max_turns": 1000, "search_opponents": 2, '
            '"seed": 0, "tie_break": "mean"}')
    greedy_sl = ('{"best_reply": true, "branching": 3, "chunk": 50, "default_policy": "greedy", "depth": 4, '
                 '"evaluation": ["starvation_loss:true"], "max_turns": 1000, "search_opponents": 2, "seed": 0, '
                 '"tie_break": "mean"}')
    # and evaluation=hungry_unless_longest:true with that default (session 30's results/s30/h_a).
    hungry = greedy_sl.replace('["starvation_loss:true"]', '["hungry_unless_longest:true", "starvation_loss:true"]')
    off = ("hungry_unless_longest:false",)
    assert bs.games_settings(bs.Config(**base)) == hungry  # the default of sessions 32-38
    assert bs.games_settings(bs.Config(**base, evaluation=("hungry_unless_longest:true",))) == hungry
    assert bs.games_settings(bs.Config(**base, evaluation=off)) == greedy_sl
    assert bs.games_settings(bs.Config(**base, evaluation=(*off, "starvation_loss:true"))) == greedy_sl
    assert bs.games_settings(bs.Config(**base, default_policy="room",
                                       evaluation=(*off, "starvation_loss:false"))) == room
    assert bs.games_settings(bs.Config(**base, default_policy="room", evaluation=off)) != room  # starvation_loss
    both = bs.games_settings(bs.Config(**base, evaluation=("cramped_weight:0.5",)))
    assert json.loads(both)["evaluation"] == ["cramped_weight:0.5", "hungry_unless_longest:true",
                                              "starvation_loss:true"]


def test_search_benchmark_pairs_runs_game_for_game_and_refuses_other_games(tmp_path):
    bs = _search_benchmark()
    this, that = tmp_path / "this", tmp_path / "that"
    for folder, won in ((this, [1, 1, 1, 1, 1, 0]), (that, [0, 0, 0, 0, 0, 0, 1])):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"seed": 0, "chunk": 100, "max_turns": 1000}))
        np.savez(folder / "games_heuristic.npz", won=np.asarray(won, bool))
    cfg = bs.Config(out_dir=str(this), paired_with=str(that))
    # The first 6 games: only this run won 5, that run none: two-sided p = 2 / 2^5.
    assert bs.paired(cfg, "heuristic") == {"with": str(that), "games": 6, "win_rate": 5 / 6, "their_win_rate": 0.0,
                                           "only_this_won": 5, "only_they_won": 0, "sign_test_p": 0.0625}
    assert bs.paired(cfg, "public") is None  # that run played no such games
    with pytest.raises(ValueError, match="seed=0, this run with 3"):
        bs.Config(out_dir=str(this), paired_with=str(that), seed=3)
    with pytest.raises(ValueError, match="no config.json"):
        bs.Config(out_dir=str(this), paired_with=str(tmp_path))
    with pytest.raises(ValueError, match="another run's folder"):
        bs.Config(out_dir=str(that), paired_with=str(that))


def test_search_benchmark_anchor_changes_only_the_named_agent_settings():
    bs = _search_benchmark()
    cfg = bs.Config(depth=5, alphabeta=True, step_budget=40000, default_policy="greedy", think_positions=10,
                    think_anchor=("alphabeta:false", "depth:4", "step_budget:none"))
    assert cfg.anchor() == bs.Config(depth=4, alphabeta=False, step_budget=None, default_policy="greedy",
                                     think_positions=10)
    assert bs.Config().anchor() is None
    for anchor, words in ((("games:5",), "name from"), (("depth",), "name from"), (("depth:0",), "depth"),
                          (("alphabeta:false",), "step_budget")):  # a budget without alpha-beta
        with pytest.raises(ValueError, match=words):
            bs.Config(alphabeta=True, step_budget=40000, think_anchor=anchor)
    with pytest.raises(ValueError, match="think_positions"):
        bs.Config(think_positions=0, think_anchor=("depth:2",))


def test_search_benchmark_time_summary_against_an_anchor():
    bs = _search_benchmark()
    out = bs.time_summary(np.array([10.0, 20.0, 30.0]), np.array([5.0, 5.0, 60.0]))
    # p99 by linear interpolation between the two largest: 20 + 0.98 * 10 and 5 + 0.98 * 55.
    assert out["p50_ms"] == 20.0 and out["anchor"]["p50_ms"] == 5.0 and out["p50_ratio"] == 4.0
    assert out["p99_ratio"] == pytest.approx(29.8 / 58.9)
    assert out["median_ratio"] == 2.0  # the per-board ratios 2, 4, 0.5
    assert "anchor" not in bs.time_summary(np.array([1.0]))


def _games_file(first, chunks, won, settings="s"):
    won = np.asarray(won, bool)
    return {"won": won, "cause": (~won).astype(np.int32), "length": np.full(won.size, 9, np.int32),
            "truncated": np.zeros(won.size, bool), "turn_died": np.zeros(won.size, np.int32),
            "chunks": np.int64(chunks), "first_chunk": np.int64(first), "settings": np.asarray(settings)}


def test_search_benchmark_merges_a_shard_after_the_games_played():
    bs = _search_benchmark()
    done = _games_file(0, 2, [1, 0, 1, 1])  # chunks 0-1 of 2 games each
    shard = _games_file(1, 4, [1, 1, 0, 0, 1, 0])  # chunks 1-3; chunk 1 as played here
    merged = bs.merge_games(done, shard, chunk=2)
    assert merged["won"].tolist() == [True, False, True, True, False, False, True, False]
    assert int(merged["chunks"]) == 4 and int(merged["first_chunk"]) == 0 and merged["cause"].dtype == np.int32
    assert bs.merge_games(done, _games_file(0, 1, [1, 0]), chunk=2) is done  # nothing later than chunk 1
    assert bs.merge_games(done, {}, chunk=2) is done
    alone = bs.merge_games({}, shard, chunk=2, first=1)  # nothing played here yet, from chunk 1
    assert alone["won"].tolist() == shard["won"].tolist() and int(alone["first_chunk"]) == 1
    with pytest.raises(ValueError, match="differs .* chunks 1-1"):
        bs.merge_games(done, _games_file(1, 3, [0, 1, 1, 1]), chunk=2)
    with pytest.raises(ValueError, match="a gap"):
        bs.merge_games(done, _games_file(3, 4, [1, 1]), chunk=2)


def test_search_benchmark_pairs_a_shard_by_game_index_and_refuses_bad_chunks(tmp_path):
    bs = _search_benchmark()
    this, that = tmp_path / "this", tmp_path / "that"
    for folder in (this, that):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"seed": 0, "chunk": 2, "max_turns": 1000}))
    np.savez(this / "games_heuristic.npz", **_games_file(2, 4, [1, 1, 1, 0]))  # games 4-7
    np.savez(that / "games_heuristic.npz", won=np.asarray([0, 0, 0, 0, 1, 0, 0], bool))  # games 0-6
    cfg = bs.Config(chunk=2, games=8, out_dir=str(this), paired_with=str(that))
    # Games 4-6: this run won all three, that run game 4 only.
    pr = bs.paired(cfg, "heuristic")
    assert (pr["games"], pr["only_this_won"], pr["only_they_won"]) == (3, 2, 0)
    for bad, key in ((dict(first_chunk=4), "first_chunk"), (dict(first_chunk=2, last_chunk=1), "last_chunk"),
                     (dict(merge=str(tmp_path / "none")), "merge"), (dict(merge=str(this)), "merge")):
        with pytest.raises(ValueError, match=key):
            bs.Config(chunk=2, games=8, out_dir=str(this), **bad)


def test_search_benchmark_times_the_served_snake_and_counts_its_depths():
    import jax

    from jaxgames.games.battlesnake import Battlesnake
    bs = _search_benchmark()
    with pytest.raises(ValueError, match="think_positions"):
        bs.Config(think_served=True, think_positions=0)
    with pytest.raises(ValueError, match="served_budget_ms"):
        bs.Config(think_served=True, served_budget_ms=0.0)
    cfg = bs.Config(depth=2, alphabeta=False, step_budget=None, search_opponents=1, think_positions=2)
    env = Battlesnake(board_size=7, num_snakes=2)
    boards = [env.init(jax.random.key(i)) for i in range(3)]
    out = bs.served_time(cfg, env, boards, jax.random.key(0))
    assert out["positions"] == 3 and out["budget_ms"] == 400  # --agent search's default
    assert sum(out["depths"].values()) == 3 and set(out["depths"]) <= {1, 2}
    assert out["full_depth_share"] == out["depths"].get(2, 0) / 3
