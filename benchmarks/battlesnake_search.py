"""The search snake measured: win rates against three heuristic snakes, think time at B = 1, search speed.

* **Strength**: `SearchAgent` in standard 4-snake 11x11 games against three
  snakes of each opponent kind (``heuristic``: `HeuristicAgent`; ``public``:
  `jaxgames.agents.battlesnake_public`, written from a public description of
  good play and never tuned against; ``random_safe``). Seats rotate over the
  games (`arena.play`, ``seating="rotate"``), spawns are drawn per game. A
  win is placing first alone (`ArenaResult.won`); 95% Wilson intervals. The
  search snake's deaths are counted by cause (starvation + wall share).
  Games are played in chunks of ``chunk`` and saved as they finish, so an
  interrupted run continues where it stopped.
* **Think time**: one board at a time (B = 1) through the jitted policy the
  HTTP server runs, on positions of heuristic-snake games; p50, p99 and max
  in ms against the server's 500 ms default timeout. With ``think_anchor``,
  a second search is timed on the same boards, board by board, and the
  ratios are reported (a speed claim with its anchor in the same run).
* **Search speed**: kernel steps inside the search per second at B = 1 and
  B = ``speed_batch`` roots, beside the bare kernel's rate (jitted, vmapped
  `env.step` over ``speed_batch`` states) in the same run.

    python benchmarks/battlesnake_search.py                       # 1000 games per opponent kind
    python benchmarks/battlesnake_search.py games=100 opponents=heuristic
    python benchmarks/battlesnake_search.py games=1000 depth=2 opponents=heuristic  # a CPU-sized run
    python benchmarks/battlesnake_search.py games=4 chunk=4 opponents=random_safe speed_batch=0 \
        think_anchor=alphabeta:false,step_budget:none,depth:4 think_served=true  # think time against depth 4
    python benchmarks/battlesnake_search.py --help

The shipped snake's search (depth 5 with alpha-beta within a step budget)
costs about a fifth of a second a move on one CPU core: 1,000 games take
hours on a CPU (games against ``public`` snakes last longest).

Writes ``results.json``, ``config.json`` and ``README.md`` into ``out_dir``
(default ``results/benchmarks/battlesnake_search``), and per opponent
``games_<kind>.npz`` as the chunks finish.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jaxgames import checks, experiment
from jaxgames.agents.battlesnake import HeuristicAgent, RandomSafeAgent
from jaxgames.agents.battlesnake_public import TailChaserAgent
from jaxgames.agents.battlesnake_search import (DEFAULT_POLICIES, DEFAULT_WEIGHTS, MAX_STATES, STEP_BUDGET,
                                                TIE_BREAKS, SearchAgent, parse_weights)
from jaxgames.agents.q_snake import QSnakeAgent
from jaxgames.evaluation import arena
from jaxgames.evaluation.stats import sign_test, wilson_interval
from jaxgames.games.battlesnake import Battlesnake, rules
from jaxgames.serve.battlesnake import SEARCH_TIME_BUDGET_MS

OPPONENTS = {"heuristic": HeuristicAgent, "public": TailChaserAgent, "random_safe": RandomSafeAgent}
# The settings of the search snake itself (those a think-time anchor may change).
AGENT_SETTINGS = ("depth", "search_opponents", "branching", "best_reply", "reply_depth", "learned_weight",
                  "learned_dir", "tie_break", "default_policy", "alphabeta", "step_budget", "max_states")


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` on the command line).

    Attributes:
        games: games per opponent kind (rounded up to a multiple of ``chunk``).
        chunk: games per compiled call and per save (a multiple of 4 rotates every seat equally).
        slots: batch rows for a chunk's games (0: all of them at once). The games stream through the rows,
            a row taking the next game as soon as its game ends (`arena.play`'s ``refill``): the same games,
            game for game. It is meant for a search vmapped over roots (a GPU: `SearchAgent`'s
            ``vmap_roots``), which searches finished games too (not yet measured on one). On a CPU the roots
            are searched one at a time and finished games skipped: there it was slower (``benchmarks/README.md``).
        opponents: kinds from `OPPONENTS`, comma separated.
        depth: the search's plies.
        search_opponents: the snakes the search enumerates besides its own.
        branching: moves enumerated per searched snake and node, from
            `candidate_moves` (1-4; 0: every legal move, certain deaths included).
        best_reply: best-reply search over the searched snakes instead of paranoid.
        reply_depth: `SearchAgent`'s ``reply_depth``: the plies at which the searched snakes' replies are
            enumerated, the player's own moves only below (``none``: every ply).
        learned_weight: the learned value's share of the leaf (`SearchAgent`'s ``learned_weight``; 0: the
            hand-written evaluation only).
        learned_dir: the Q-snake weights folder whose network values the leaves (``""``: the shipped one).
        tie_break: `SearchAgent`'s ``tie_break`` (``random`` or ``mean``).
        default_policy: `SearchAgent`'s ``default_policy`` (``greedy``, the default, or ``room``).
        alphabeta: `SearchAgent`'s ``alphabeta`` (the best-reply tree searched depth first with pruning).
        step_budget: `SearchAgent`'s ``step_budget`` (with ``alphabeta``: states a move may step; ``none``: no bound).
        evaluation: `evaluation.evaluate` keywords for the search snake's leaves, ``name:value`` comma
            separated (e.g. ``hungry_unless_longest:false,food_weight:0.8``); unset ones keep
            `SearchAgent`'s defaults.
        max_states: the search's bound on enumerated states (`SearchAgent`'s ``max_states``).
        max_turns: turn limit (the game is truncated there).
        think_positions: boards drawn for the think time, every 10th turn of the first 200 of
            ``ceil(think_positions / 20)`` heuristic games; those where the timed snake is alive and the game
            not over are timed, one at a time (``157``: 71 boards). 0: no think-time measurement.
        think_anchor: an anchor search timed on the same boards in the same run, interleaved board by board:
            this run's agent settings with these ``name:value`` changes (e.g. ``alphabeta:false,depth:4``);
            its times and the ratios to them are reported beside this search's. ``()``: none.
        think_served: also time the snake as the HTTP server runs it on the same boards (`SearchAgent.act_in_time`
            within ``served_budget_ms``): its p50 and p99 and the share of boards on which it finished ``depth``.
        served_budget_ms: the served snake's think time per move (ms, > 0; default ``--agent search``'s,
            `serve.battlesnake.SEARCH_TIME_BUDGET_MS`).
        speed_batch: roots per call in the batched speed measurement (0: none).
        seed: PRNG seed.
        out_dir: results folder.
        paired_with: another run's results folder of the same ``seed``, ``chunk`` and ``max_turns`` (the same
            spawns and seats, game for game): each opponent kind it played is compared game for game (the games
            only one run won, two-sided sign test). ``""``: none.
        first_chunk, last_chunk: the first and last chunk this run plays (``last_chunk=none``: the last of
            ``games``): a shard of the full run (e.g. one per core, each with its own ``out_dir``), whose games
            are those chunks of the full run (the same keys: keep ``games``).
        merge: a shard's results folder (the same settings, its ``first_chunk`` at most the chunks this run has
            played): its later chunks are appended to this run's games before play resumes; chunks both played
            must agree game for game. ``""``: none.
    """

    games: int = 1000
    chunk: int = 100
    slots: int = 0
    opponents: tuple[str, ...] = ("heuristic", "public", "random_safe")
    depth: int = 5
    search_opponents: int = 2
    branching: int = 3
    best_reply: bool = True
    reply_depth: int | None = None
    learned_weight: float = 0.0
    learned_dir: str = ""
    tie_break: str = "mean"
    default_policy: str = "greedy"
    alphabeta: bool = True
    step_budget: int | None = STEP_BUDGET
    evaluation: tuple[str, ...] = ()
    max_states: int = MAX_STATES
    max_turns: int = 1000
    think_positions: int = 300
    think_anchor: tuple[str, ...] = ()
    think_served: bool = False
    served_budget_ms: float = SEARCH_TIME_BUDGET_MS
    speed_batch: int = 256
    seed: int = 0
    out_dir: str = "results/benchmarks/battlesnake_search"
    paired_with: str = ""
    first_chunk: int = 0
    last_chunk: int | None = None
    merge: str = ""

    def __post_init__(self):
        for name in ("games", "chunk", "depth", "max_states", "max_turns"):
            checks.positive_int(name, getattr(self, name))
        for name in ("think_positions", "speed_batch", "slots"):
            checks.non_negative_int(name, getattr(self, name))
        checks.non_negative_int("search_opponents", self.search_opponents)
        checks.integer("branching", self.branching, 0, 4)
        for name in ("best_reply", "think_served"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool; got {getattr(self, name)!r}")
        checks.positive_float("served_budget_ms", self.served_budget_ms)
        if self.think_served and not self.think_positions:
            raise ValueError("think_served=true needs think_positions > 0")
        checks.non_negative_int("seed", self.seed)
        checks.integer("first_chunk", self.first_chunk, 0, self.num_chunks - 1)
        if self.last_chunk is not None:
            checks.integer("last_chunk", self.last_chunk, self.first_chunk, self.num_chunks - 1)
        if self.merge and (os.path.abspath(self.merge) == os.path.abspath(self.out_dir)
                           or not os.path.isdir(self.merge)):
            raise ValueError(f"merge must be another run's existing folder than out_dir; got {self.merge!r}")
        checks.real("learned_weight", self.learned_weight, 0.0, 1.0)
        if self.learned_dir and not self.learned_weight:
            raise ValueError(f"learned_dir={self.learned_dir!r} needs learned_weight > 0")
        if self.learned_dir:
            QSnakeAgent(weights_dir=self.learned_dir)  # a missing or malformed folder fails here, before any game
        experiment.check_names("opponents", self.opponents, tuple(OPPONENTS))
        checks.choice("tie_break", self.tie_break, TIE_BREAKS)
        checks.choice("default_policy", self.default_policy, tuple(DEFAULT_POLICIES))
        # an unknown name or a bad value fails here, before any game
        SearchAgent(depth=self.depth, best_reply=self.best_reply, reply_depth=self.reply_depth,
                    alphabeta=self.alphabeta, step_budget=self.step_budget, **self.weights())
        if self.paired_with:
            self._check_pair()
        self.anchor()  # a bad anchor fails here too

    @property
    def num_chunks(self) -> int:
        """Chunks of the full run: ``ceil(games / chunk)`` (each chunk's key is split from this count)."""
        return -(-self.games // self.chunk)

    def anchor(self) -> Config | None:
        """The think-time anchor: this config with ``think_anchor``'s agent settings changed (None: no anchor)."""
        if not self.think_anchor:
            return None
        if not self.think_positions:
            raise ValueError(f"think_anchor={','.join(self.think_anchor)!r} needs think_positions > 0")
        argv = []
        for item in self.think_anchor:
            name, sep, text = item.partition(":")
            if not sep or name.strip() not in AGENT_SETTINGS:
                raise ValueError(f"think_anchor item {item!r} must be name:value with a name from: "
                                 f"{', '.join(AGENT_SETTINGS)}")
            argv.append(f"{name.strip()}={text.strip()}")
        base = dataclasses.replace(self, think_anchor=(), paired_with="")
        try:
            return experiment.parse_config(Config, argv, base=base)
        except (TypeError, ValueError) as e:
            raise ValueError(f"think_anchor={','.join(self.think_anchor)!r}: {e}") from None

    def _check_pair(self) -> None:
        path = os.path.join(self.paired_with, "config.json")
        if os.path.abspath(self.paired_with) == os.path.abspath(self.out_dir):
            raise ValueError(f"paired_with must be another run's folder than out_dir; got {self.paired_with!r}")
        if not os.path.exists(path):
            raise ValueError(f"paired_with={self.paired_with!r} holds no config.json of a run of this benchmark")
        with open(path) as f:
            other = json.load(f)
        for name in ("seed", "chunk", "max_turns"):
            if other.get(name) != getattr(self, name):
                raise ValueError(f"paired_with={self.paired_with!r} was played with {name}={other.get(name)!r}, "
                                 f"this run with {getattr(self, name)!r}: its games are not the same games")

    def weights(self) -> dict:
        """``evaluation`` as keyword arguments (`parse_weights`)."""
        return parse_weights(self.evaluation)

    def agent(self) -> SearchAgent:
        learned = QSnakeAgent(weights_dir=self.learned_dir or None) if self.learned_weight else None
        return SearchAgent(depth=self.depth, opponents=self.search_opponents, branching=self.branching or None,
                           best_reply=self.best_reply, reply_depth=self.reply_depth,
                           learned_weight=self.learned_weight, learned=learned,
                           tie_break=self.tie_break, default_policy=self.default_policy, max_states=self.max_states,
                           alphabeta=self.alphabeta, step_budget=self.step_budget,
                           **self.weights())


def _env(cfg: Config) -> Battlesnake:
    return Battlesnake(board_size=11, num_snakes=4, max_turns=cfg.max_turns, observation="none")


def play_games(cfg: Config, kind: str, key: jax.Array) -> dict:
    """Plays (or resumes) ``cfg.games`` games of the search snake against three ``kind`` snakes."""
    env, agent, other = _env(cfg), cfg.agent(), OPPONENTS[kind]()
    path = os.path.join(cfg.out_dir, f"games_{kind}.npz")
    chunks = cfg.num_chunks
    settings = games_settings(cfg)
    done = _games(path, settings)
    first = int(done.get("first_chunk", 0)) if done else cfg.first_chunk
    if first != cfg.first_chunk:
        raise ValueError(f"{path} holds the chunks from {first}; this run starts at first_chunk={cfg.first_chunk}")
    if cfg.merge:
        shard = _games(os.path.join(cfg.merge, f"games_{kind}.npz"), settings, what="merge")
        done = merge_games(done, shard, cfg.chunk, first)
        if done:
            _save_games(path, done)
    have = int(done["chunks"]) if done else first
    keys = jax.random.split(key, chunks)  # split by the chunk count: shards keep ``games``
    end = chunks if cfg.last_chunk is None else cfg.last_chunk + 1
    for c in tqdm(range(have, end), desc=f"vs 3x {kind}", unit="chunk", initial=have - first, total=end - first):
        r = arena.play(env, [agent, other], cfg.chunk, keys[c], lineup=(0, 1, 1, 1), max_steps=cfg.max_turns + 1,
                       chunk_size=cfg.slots or cfg.chunk, refill=cfg.slots > 0)
        mine = r.agent_of_seat == 0  # [G, 4], one seat per game
        new = {
            "won": r.won()[mine],
            "cause": r.stats["eliminated_cause"][mine],
            "length": r.length,
            "truncated": r.truncated,
            "turn_died": r.stats["eliminated_on_turn"][mine],
        }
        done = {f: np.concatenate([done[f], new[f]]) if f in done else new[f] for f in GAME_FIELDS}
        done.update(chunks=np.int64(c + 1), first_chunk=np.int64(first), settings=np.asarray(settings))
        _save_games(path, done)
    won, cause = done["won"], done["cause"]
    n, wins = int(won.size), int(won.sum())
    lo, hi = wilson_interval(wins, n)
    died = cause != 0
    causes = collections.Counter(rules.ELIMINATION_CAUSES[c] for c in cause[died])
    avoidable = causes.get("out-of-health", 0) + causes.get("wall-collision", 0)
    return {
        "opponent": kind,
        "first_game": first * cfg.chunk,
        "games": n,
        "wins": wins,
        "win_rate": wins / n,
        "wilson95": [lo, hi],
        "fair_share": 0.25,
        "deaths": int(died.sum()),
        "death_causes": dict(causes),
        "starvation_plus_wall_share_of_deaths": avoidable / max(int(died.sum()), 1),
        "truncated_games": int(done["truncated"].sum()),
        "mean_game_length": float(np.mean(done["length"])),
    }


GAME_FIELDS = ("won", "cause", "length", "truncated", "turn_died")  # per game, in a games file


def games_settings(cfg: Config) -> str:
    """The settings a games file holds (JSON): a file of other settings is refused, never resumed.

    A setting newer than the file format is named only where it differs from the default it had before, so
    earlier files still resume: ``tie_break`` unless ``random``, ``default_policy`` unless ``room``,
    ``hungry_unless_longest`` and ``starvation_loss`` (on by default now, off before) as ``name:true`` among the
    ``evaluation`` items when on, in that order after the others, and not at all when off.
    """
    flags = ("hungry_unless_longest", "starvation_loss")
    weights = {**DEFAULT_WEIGHTS, **cfg.weights()}
    evaluation = [i for i in cfg.evaluation if i.partition(":")[0].strip() not in flags]
    evaluation += [f"{flag}:true" for flag in flags if weights.get(flag)]
    named = {k: v for k, v in dataclasses.asdict(cfg).items()
             if k in ("chunk", "depth", "search_opponents", "branching", "best_reply", "max_turns", "seed")
             or (cfg.learned_weight and k in ("learned_weight", "learned_dir"))
             or (cfg.tie_break != "random" and k == "tie_break")
             or (cfg.reply_depth is not None and k == "reply_depth")
             or (cfg.default_policy != "room" and k == "default_policy")
             or (cfg.alphabeta and k in ("alphabeta", "step_budget"))}
    return json.dumps(named | ({"evaluation": evaluation} if evaluation else {}), sort_keys=True)


def _games(path: str, settings: str, what: str = "out_dir") -> dict:
    """A games file's arrays (``{}`` if there is none); ValueError if it holds games of other settings."""
    done = dict(np.load(path)) if os.path.exists(path) else {}
    if done and str(done.get("settings")) != settings:
        raise ValueError(f"{path} holds games of other settings ({done.get('settings')}); "
                         f"use another {what} or delete it")
    return done


def _save_games(path: str, done: dict) -> None:
    tmp = path + ".tmp.npz"
    np.savez(tmp, **done)
    os.replace(tmp, path)


def merge_games(done: dict, shard: dict, chunk: int, first: int = 0) -> dict:
    """``done``'s games (chunks ``[a, b)``; none: ``[first, first)``) and those of ``shard`` (``[c, d)``,
    ``c <= b``) after ``b``.

    Args:
        done, shard: the arrays of a games file (``{}``: none): `GAME_FIELDS`, each ``[games]`` (``chunk`` per
            chunk), with ``chunks`` (the end chunk), ``first_chunk`` (0 if absent) and ``settings``.
        chunk: games per chunk.
        first: the first chunk of ``done`` when it holds none.

    Returns:
        The arrays of the merged file (``done`` itself when the shard adds nothing).

    Raises:
        ValueError: the shard starts after ``b`` (a gap), or a chunk both played differs.
    """
    if not shard:
        return done
    a, b = (int(done.get("first_chunk", 0)), int(done["chunks"])) if done else (first, first)
    c, d = int(shard.get("first_chunk", 0)), int(shard["chunks"])
    if c > b:
        raise ValueError(f"the shard to merge starts at chunk {c}, after the chunks played here ({a}-{b - 1}): a gap")
    lo, hi = max(a, c), min(b, d)  # the chunks both played
    for f in GAME_FIELDS:
        if hi > lo and not np.array_equal(shard[f][(lo - c) * chunk:(hi - c) * chunk],
                                          done[f][(lo - a) * chunk:(hi - a) * chunk]):
            raise ValueError(f"the shard to merge differs from this run's games in chunks {lo}-{hi - 1} ({f})")
    if d <= b:
        return done
    later = {f: shard[f][(b - c) * chunk:] for f in GAME_FIELDS}
    return {**{f: np.concatenate([done[f], later[f]]) if done else later[f] for f in GAME_FIELDS},
            "chunks": np.int64(d), "first_chunk": np.int64(a), "settings": shard["settings"]}


def paired(cfg: Config, kind: str) -> dict | None:
    """This run's games against ``kind`` beside ``cfg.paired_with``'s, game for game (None if it played none)."""
    other = os.path.join(cfg.paired_with, f"games_{kind}.npz")
    if not cfg.paired_with or not os.path.exists(other):
        return None
    files = np.load(os.path.join(cfg.out_dir, f"games_{kind}.npz")), np.load(other)
    starts = [int(f["first_chunk"]) * cfg.chunk if "first_chunk" in f else 0 for f in files]
    lo, hi = max(starts), min(s + f["won"].size for s, f in zip(starts, files))
    if hi <= lo:
        return None
    mine, theirs = (f["won"][lo - s:hi - s] for s, f in zip(starts, files))
    n = hi - lo
    only_this, only_that = int(np.sum(mine & ~theirs)), int(np.sum(theirs & ~mine))
    return {"with": cfg.paired_with, "games": n, "win_rate": float(mine.mean()), "their_win_rate": float(theirs.mean()),
            "only_this_won": only_this, "only_they_won": only_that, "sign_test_p": sign_test(only_this, only_that)}


def positions(cfg: Config, count: int, key: jax.Array):
    """``count`` boards of 4-snake heuristic games (turns 0-200, the timed snake alive), as a batched state."""
    env = _env(cfg)
    h = HeuristicAgent()
    games = max(1, -(-count // 20))
    states = jax.vmap(env.init)(jax.random.split(key, games))
    act = jax.jit(jax.vmap(jax.vmap(lambda s, k, p: h.policy(env, s, k, p), in_axes=(None, 0, 0)), in_axes=(0, 0, None)))
    step = jax.jit(jax.vmap(env.step))
    picked = []
    for t in range(200):
        key, k_act, k_step = jax.random.split(key, 3)
        if t % 10 == 0:
            picked.append(states)
        a = act(states, jax.random.split(k_act, games * 4).reshape(games, 4), jnp.arange(4))
        states = step(states, a, jax.random.split(k_step, games))
    flat = jax.tree.map(lambda *x: jnp.concatenate(x), *picked)
    alive = np.asarray(flat.board.alive[:, 0] & ~flat.terminated)
    idx = np.flatnonzero(alive)[:count]
    return jax.tree.map(lambda x: x[idx], flat)


def _one_board_policy(cfg: Config, env: Battlesnake, first):
    """The jitted one-board policy (what the server runs), compiled on ``first``: a function timing one call (ms)."""
    agent = cfg.agent()
    policy = jax.jit(lambda s, k: agent.policy(env, s, k, jnp.int32(0)))
    policy(first, jax.random.key(0)).block_until_ready()

    def timed(state, key) -> float:
        jax.block_until_ready(state)
        t0 = time.perf_counter()
        int(policy(state, key))
        return (time.perf_counter() - t0) * 1000

    return timed


def time_summary(ms: np.ndarray, anchor_ms: np.ndarray | None = None) -> dict:
    """Percentiles of per-board times; with the anchor's times on the same boards, theirs and the ratios
    (this search's over the anchor's: of the p50s, of the p99s, and the median of the per-board ratios).

    Args:
        ms: float ``[N]``, milliseconds per board (N >= 1).
        anchor_ms: float ``[N]``, the anchor's on the same boards, or None.

    Returns:
        ``{"positions", "p50_ms", "p99_ms", "max_ms"}`` (percentiles by linear interpolation), with an anchor
        also ``"anchor"`` (its three figures) and ``"p50_ratio"``, ``"p99_ratio"``, ``"median_ratio"``.
    """
    out = {"positions": int(ms.size), "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
           "max_ms": float(ms.max())}
    if anchor_ms is not None:
        a = time_summary(anchor_ms)
        out["anchor"] = {k: v for k, v in a.items() if k != "positions"}
        out["p50_ratio"] = out["p50_ms"] / a["p50_ms"]
        out["p99_ratio"] = out["p99_ms"] / a["p99_ms"]
        out["median_ratio"] = float(np.median(ms / anchor_ms))
    return out


def think_time(cfg: Config, key: jax.Array) -> dict:
    """Per-board think time (ms) of the jitted one-board policy, and of ``cfg.anchor()``'s on the same boards
    (the two timed board by board, in alternating order)."""
    env, anchor = _env(cfg), cfg.anchor()
    states = positions(cfg, cfg.think_positions, key)
    one = lambda i: jax.tree.map(lambda x: x[i], states)
    timers = [_one_board_policy(c, env, one(0)) for c in ((cfg, anchor) if anchor else (cfg,))]
    n = int(states.rewards.shape[0])
    times = np.zeros((n, len(timers)))
    for i in range(n):
        s, k = one(i), jax.random.fold_in(key, i)
        for j in (range(len(timers)) if i % 2 == 0 else reversed(range(len(timers)))):
            times[i, j] = timers[j](s, k)
    out = time_summary(times[:, 0], times[:, 1] if anchor else None)
    if anchor:
        out["anchor"]["settings"] = ",".join(cfg.think_anchor)
    if cfg.think_served:
        out["served"] = served_time(cfg, env, [one(i) for i in range(n)], key)
    return {**out, "server_timeout_ms": 500, "target_p99_ms": 400}


def served_time(cfg: Config, env: Battlesnake, boards: list, key: jax.Array) -> dict:
    """The snake as ``--agent search`` serves it (`SearchAgent.act_in_time` within ``cfg.served_budget_ms``), timed
    on ``boards`` one at a time, in order (without alpha-beta its depth estimates carry over from board to board, as
    within a game)."""
    budget = cfg.served_budget_ms / 1000
    agent = cfg.agent()
    agent.act_in_time(env, boards[0], key, 0, budget)  # compiles (the server's warm-up)
    ms, depths = np.zeros(len(boards)), np.zeros(len(boards), np.int32)
    for i, s in enumerate(boards):
        jax.block_until_ready(s)
        t0 = time.perf_counter()
        depths[i] = agent.act_in_time(env, s, jax.random.fold_in(key, i), 0, budget)[1]
        ms[i] = (time.perf_counter() - t0) * 1000
    return {**time_summary(ms), "budget_ms": cfg.served_budget_ms,
            "full_depth_share": float(np.mean(depths == cfg.depth)),
            "depths": {int(d): int(np.sum(depths == d)) for d in np.unique(depths)}}


def _median_seconds(fn, *args, repeats=5):
    jax.block_until_ready(fn(*args))
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        out.append(time.perf_counter() - t0)
    return float(np.median(out))


def search_speed(cfg: Config, key: jax.Array) -> dict:
    """Kernel steps per second inside the search (B = 1 and ``speed_batch``) and of the bare kernel.

    Steps are those the search took (`simultaneous.MaximinOutput.num_steps`, with the policy's keys); on a
    CPU it steps only the real children, fewer than the states it enumerates (with ``alphabeta``, far fewer: the
    count of the whole tree is then the tree it prunes).
    """
    env, agent = _env(cfg), cfg.agent()
    per_search = agent.check(env)
    leaves = per_search - (agent.check(env, cfg.depth - 1) if cfg.depth > 1 else 0)
    states = positions(cfg, cfg.speed_batch, key)
    b = int(states.rewards.shape[0])
    keys = jax.random.split(key, b)
    players = jnp.zeros(b, jnp.int32)
    batched = agent.compiled(env)
    steps = np.asarray(jax.jit(agent.batched_policy_search(env))(states, keys, players).num_steps, np.int64)
    one = jax.tree.map(lambda x: x[:1], states)
    t1 = _median_seconds(batched, one, keys[:1], players[:1])
    tb = _median_seconds(batched, states, keys, players)
    step = jax.jit(jax.vmap(env.step))
    acts = jax.random.randint(key, (b, 4), 0, 4)
    tk = _median_seconds(step, states, acts, keys)
    return {
        "states_enumerated_per_search": per_search,
        "leaves_enumerated_per_search": leaves,
        "states_stepped_per_search_mean": float(steps.mean()),
        "search_b1": {"seconds_per_search": t1, "kernel_steps_per_s": int(steps[0]) / t1},
        f"search_b{b}": {"seconds_per_search": tb / b, "kernel_steps_per_s": int(steps.sum()) / tb},
        f"bare_kernel_b{b}": {"kernel_steps_per_s": b / tk},
    }


def _readme(cfg: Config, results: dict) -> str:
    lines = [f"# The search snake (`SearchAgent(depth={cfg.depth}, opponents={cfg.search_opponents}, "
             f"branching={cfg.branching or None}, best_reply={cfg.best_reply}"
             + ("" if cfg.reply_depth is None else f", reply_depth={cfg.reply_depth}")
             + f", tie_break={cfg.tie_break!r}, default_policy={cfg.default_policy!r}"
             + (f", alphabeta=True, step_budget={cfg.step_budget}" if cfg.alphabeta else "")
             + "".join(f", {k}={v}" for k, v in cfg.weights().items()) + ")`)", "",
             "Command: `python benchmarks/battlesnake_search.py " + " ".join(
                 f"{k}={','.join(v) if isinstance(v, tuple) else v}" for k, v in dataclasses.asdict(cfg).items()) + "`",
             f"Device: {jax.devices()[0].device_kind} ({os.cpu_count()} cores).", "",
             "| opponents (3 of them) | games | search snake wins | 95% Wilson | starvation + wall share of its deaths | deaths by cause |",
             "| --- | ---: | ---: | --- | ---: | --- |"]
    for r in results.get("strength", []):
        shard = f" (games from {r['first_game']} on)" if r.get("first_game") else ""
        lines.append(f"| {r['opponent']}{shard} | {r['games']} | {100 * r['win_rate']:.1f}% | "
                     f"[{100 * r['wilson95'][0]:.1f}, {100 * r['wilson95'][1]:.1f}] | "
                     f"{100 * r['starvation_plus_wall_share_of_deaths']:.1f}% | "
                     + ", ".join(f"{k} {v}" for k, v in sorted(r["death_causes"].items())) + " |")
    for r in results.get("strength", []):
        pr = r.get("paired")
        if pr:
            lines += ["", f"Paired with `{pr['with']}` against {r['opponent']} (the same spawns and seats, game for game), "
                      f"{pr['games']} games: this run {100 * pr['win_rate']:.1f}%, that run {100 * pr['their_win_rate']:.1f}%; "
                      f"games only this run won {pr['only_this_won']}, only that run {pr['only_they_won']} "
                      f"(two-sided sign test p = {pr['sign_test_p']:.3f})."]
    th = results.get("think_time")
    if th:
        lines += ["", f"Think time, one board (B = 1, {th['positions']} positions of heuristic games): "
                  f"p50 {th['p50_ms']:.1f} ms, p99 {th['p99_ms']:.1f} ms, max {th['max_ms']:.1f} ms "
                  f"(target: p99 under {th['target_p99_ms']} ms = 80% of the {th['server_timeout_ms']} ms timeout)."]
        an = th.get("anchor")
        if an:
            lines += ["", f"The anchor (`{an['settings']}`) on the same boards, in the same run: "
                      f"p50 {an['p50_ms']:.1f} ms, p99 {an['p99_ms']:.1f} ms, max {an['max_ms']:.1f} ms. "
                      f"This search over the anchor: p50 {th['p50_ratio']:.2f}x, p99 {th['p99_ratio']:.2f}x, "
                      f"median per board {th['median_ratio']:.2f}x."]
        sv = th.get("served")
        if sv:
            lines += ["", f"Served as the HTTP server runs it (iterative deepening within {sv['budget_ms']:g} ms), "
                      f"the same boards: p50 {sv['p50_ms']:.1f} ms, p99 {sv['p99_ms']:.1f} ms, "
                      f"max {sv['max_ms']:.1f} ms; "
                      f"depth {cfg.depth} finished on {100 * sv['full_depth_share']:.1f}% of the boards (boards by "
                      "depth: " + ", ".join(f"{d}: {c}" for d, c in sorted(sv["depths"].items())) + ")."]
    sp = results.get("speed")
    if sp:
        tree = "in the tree that alpha-beta prunes" if cfg.alphabeta else "enumerated"
        lines += ["", f"Search speed ({sp['states_enumerated_per_search']} states {tree}, "
                  f"{sp['leaves_enumerated_per_search']} of them leaves, and "
                  f"{sp['states_stepped_per_search_mean']:,.0f} stepped on average per search):", ""]
        for k, v in sp.items():
            if isinstance(v, dict):
                lines.append(f"- {k}: {v['kernel_steps_per_s']:,.0f} kernel steps/s"
                             + (f", {1000 * v['seconds_per_search']:.2f} ms per search" if "seconds_per_search" in v else ""))
    return "\n".join(lines) + "\n"


def run(cfg: Config, argv=None) -> dict:
    """The benchmark; returns and writes the results."""
    del argv
    os.makedirs(cfg.out_dir, exist_ok=True)
    with open(os.path.join(cfg.out_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=2)
    key_games, key_think, key_speed = jax.random.split(jax.random.key(cfg.seed), 3)
    results = {"device": jax.devices()[0].device_kind}
    if cfg.speed_batch:
        results["speed"] = search_speed(cfg, key_speed)
    if cfg.think_positions:
        results["think_time"] = think_time(cfg, key_think)
        th = results["think_time"]
        an = th.get("anchor")
        print(f"think time p50 {th['p50_ms']:.1f} ms, p99 {th['p99_ms']:.1f} ms"
              + (f"; anchor p50 {an['p50_ms']:.1f} ms, p99 {an['p99_ms']:.1f} ms" if an else ""), flush=True)
    results["strength"] = []
    for kind, k in zip(cfg.opponents, jax.random.split(key_games, len(cfg.opponents))):
        r = play_games(cfg, kind, k)
        r["paired"] = paired(cfg, kind)
        results["strength"].append(r)
        print(f"vs 3x {kind}: {100 * r['win_rate']:.1f}% [{100 * r['wilson95'][0]:.1f}, {100 * r['wilson95'][1]:.1f}] "
              f"of {r['games']} games; starvation + wall {100 * r['starvation_plus_wall_share_of_deaths']:.1f}% of "
              f"{r['deaths']} deaths", flush=True)
    tmp = os.path.join(cfg.out_dir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"config": dataclasses.asdict(cfg), "results": results}, f, indent=2)
    os.replace(tmp, os.path.join(cfg.out_dir, "results.json"))
    with open(os.path.join(cfg.out_dir, "README.md"), "w") as f:
        f.write(_readme(cfg, results))
    print(_readme(cfg, results))
    return results


def main(argv=None) -> None:
    """Entry point: ``python benchmarks/battlesnake_search.py [key=value ...]``."""
    experiment.main(Config, run, argv, prog="benchmarks/battlesnake_search.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
