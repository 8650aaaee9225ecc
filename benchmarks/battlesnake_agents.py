"""Battlesnake baselines head to head: win rates of the heuristic snake against random-safe snakes.

Standard 4-snake games on 11x11 (``jaxgames.make``-equivalent
`Battlesnake` Env, the engine's food rules), every game played to the end
(at most one snake left) or to ``max_turns`` (then nobody wins). Matchups:

* ``1v3``: one `HeuristicAgent` against three `RandomSafeAgent` (fair share 25%);
* ``2v2``: two heuristic snakes against two random-safe ones (fair share of
  the heuristic side 50%);
* ``0v4``: four random-safe snakes (a sanity check: each seat near 25%).

Start positions are shuffled by the engine's rule at every reset, so the
seat a snake holds carries no advantage. A game's winner is the last snake
alive; win rates come with a 95% Wilson score interval (Wilson 1927,
"Probable inference, the law of succession, and statistical inference",
JASA 22(158)). Each batch of games is one jitted ``lax.while_loop`` over
``jax.vmap(env.step)``, the agents' policies vmapped over games and seats.

    python benchmarks/battlesnake_agents.py                     # 1000 games per matchup
    python benchmarks/battlesnake_agents.py games=200 matchups=1v3
    python benchmarks/battlesnake_agents.py --help              # every setting, its type, default and meaning

Writes ``results/benchmarks/battlesnake_agents/results.json`` and ``config.json``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jaxgames.agents.battlesnake import HeuristicAgent, RandomSafeAgent
from jaxgames.evaluation.stats import wilson_interval
from jaxgames import checks, experiment
from jaxgames.games.battlesnake import Battlesnake

MATCHUPS = {"1v3": 1, "2v2": 2, "0v4": 0}
"""Matchup name -> number of heuristic snakes (seats 0..k-1) among 4."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` on the command line).

    Attributes:
        games: games per matchup (a multiple of ``batch``, rounded up).
        batch: games per jitted call.
        max_turns: turn limit of a game (then no winner).
        board_size, num_snakes: the game (4 snakes on 11x11 is the standard duel-of-four).
        matchups: names from `MATCHUPS` (``1v3``, ``2v2``, ``0v4``), comma separated.
        seed: PRNG seed.
        out_dir: where the results go.
    """

    games: int = 1000
    batch: int = 250
    max_turns: int = 1000
    board_size: int = 11
    num_snakes: int = 4
    matchups: tuple[str, ...] = ("1v3", "2v2", "0v4")
    seed: int = 0
    out_dir: str = "results/benchmarks/battlesnake_agents"

    def __post_init__(self):
        for name in ("games", "batch"):
            checks.positive_int(name, getattr(self, name))
        checks.non_negative_int("seed", self.seed)
        Battlesnake(board_size=self.board_size, num_snakes=self.num_snakes, max_turns=self.max_turns)  # checks them
        experiment.check_names("matchups", self.matchups, tuple(MATCHUPS))
        for m in self.matchups:
            if MATCHUPS[m] > self.num_snakes:
                raise ValueError(f"matchups: {m} needs {MATCHUPS[m]} heuristic snakes; num_snakes={self.num_snakes}")


def make_play(env, seat_agents, batch: int):
    """``play(key) -> (winner int32 [B], turns int32 [B], death_turn int32 [B, S])``, jitted.

    ``seat_agents[s]`` plays seat ``s``; each distinct agent's policy is
    vmapped over the seats it holds and over the games. ``winner`` is -1
    for a draw or a game cut by the turn limit; ``death_turn`` is the turn a
    snake was eliminated, the final turn for survivors.
    """
    n = env.num_players
    groups = {}
    for seat, agent in enumerate(seat_agents):
        groups.setdefault(id(agent), (agent, []))[1].append(seat)

    def actions(state, key):
        keys = jax.random.split(key, n)
        acts = jnp.zeros(n, jnp.int32)
        for agent, seats in groups.values():
            idx = jnp.asarray(seats, jnp.int32)
            a = jax.vmap(lambda k, p, agent=agent: agent.policy(env, state, k, p))(keys[idx], idx)
            acts = acts.at[idx].set(a)
        return acts

    def play(key):
        key_init, key_loop = jax.random.split(key)
        states = jax.vmap(env.init)(jax.random.split(key_init, batch))

        def running(carry):
            s, _ = carry
            return jnp.any(~(s.terminated | s.truncated))

        def turn(carry):
            s, k = carry
            k, k_act, k_step = jax.random.split(k, 3)
            acts = jax.vmap(actions)(s, jax.random.split(k_act, batch))
            s = jax.vmap(env.step)(s, acts, jax.random.split(k_step, batch))
            return s, k

        final, _ = jax.lax.while_loop(running, turn, (states, key_loop))
        b = final.board
        alive = b.alive
        winner = jnp.where(jnp.sum(alive, axis=1) == 1, jnp.argmax(alive, axis=1), -1).astype(jnp.int32)
        winner = jnp.where(final.truncated, -1, winner)
        death = jnp.where(alive, b.turn[:, None], b.eliminated_on_turn)
        return winner, b.turn, death

    return jax.jit(play)


def run_matchup(cfg: Config, heuristic: int, key: jax.Array, *, heuristic_agent=None) -> dict:
    """Plays ``cfg.games`` games with ``heuristic`` heuristic snakes in seats ``0..heuristic-1``.

    Returns:
        A dict: games, heuristic-side wins, per-seat wins, draws/timeouts,
        mean game length, mean survival turns per seat, the Wilson interval
        of the heuristic side's win rate, seconds.
    """
    env = Battlesnake(board_size=cfg.board_size, num_snakes=cfg.num_snakes, max_turns=cfg.max_turns, observation="none")
    h = heuristic_agent if heuristic_agent is not None else HeuristicAgent()
    r = RandomSafeAgent()
    seats = [h] * heuristic + [r] * (cfg.num_snakes - heuristic)
    play = make_play(env, seats, cfg.batch)
    rounds = max(1, -(-cfg.games // cfg.batch))
    winners, turns, deaths = [], [], []
    t0 = time.perf_counter()
    for k in jax.random.split(key, rounds):
        w, t, d = jax.device_get(play(k))
        winners.append(w)
        turns.append(t)
        deaths.append(d)
    seconds = time.perf_counter() - t0
    w, t, d = np.concatenate(winners), np.concatenate(turns), np.concatenate(deaths)
    n = len(w)
    per_seat = [int(np.sum(w == s)) for s in range(cfg.num_snakes)]
    side = int(np.sum((w >= 0) & (w < heuristic)))
    lo, hi = wilson_interval(side, n) if heuristic else (float("nan"), float("nan"))
    return {
        "heuristic_snakes": heuristic,
        "games": n,
        "heuristic_wins": side,
        "heuristic_win_rate": side / n if heuristic else float("nan"),
        "wilson95": [lo, hi],
        "fair_share": heuristic / cfg.num_snakes,
        "wins_per_seat": per_seat,
        "no_winner": int(np.sum(w < 0)),
        "mean_turns": float(np.mean(t)),
        "mean_survival_per_seat": [float(x) for x in np.mean(d, axis=0)],
        "seconds": seconds,
    }


def run(cfg: Config, argv=None) -> None:
    """The benchmark: prints a row per matchup, writes ``config.json`` and ``results.json`` into ``cfg.out_dir``."""
    del argv
    os.makedirs(cfg.out_dir, exist_ok=True)
    with open(os.path.join(cfg.out_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=2)
    key = jax.random.key(cfg.seed)
    results = {}
    print(f"{'matchup':8} {'games':>6} {'heur. wins':>10} {'win rate':>9} {'95% Wilson':>17} {'fair':>5} {'no winner':>9} {'turns':>6} {'s':>6}")
    for m, k in zip(cfg.matchups, jax.random.split(key, len(cfg.matchups))):
        r = results[m] = run_matchup(cfg, MATCHUPS[m], k)
        rate = "n/a" if not r["heuristic_snakes"] else f"{100 * r['heuristic_win_rate']:.1f}%"
        ci = "per seat " + "/".join(str(x) for x in r["wins_per_seat"]) if not r["heuristic_snakes"] else (
            f"[{100 * r['wilson95'][0]:.1f}, {100 * r['wilson95'][1]:.1f}]%")
        print(f"{m:8} {r['games']:6d} {r['heuristic_wins']:10d} {rate:>9} {ci:>17} {100 * r['fair_share']:4.0f}% "
              f"{r['no_winner']:9d} {r['mean_turns']:6.1f} {r['seconds']:6.1f}", flush=True)
    tmp = os.path.join(cfg.out_dir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"config": dataclasses.asdict(cfg), "results": results}, f, indent=2)
    os.replace(tmp, os.path.join(cfg.out_dir, "results.json"))


def main(argv=None) -> None:
    """Entry point: ``python benchmarks/battlesnake_agents.py [key=value ...]`` (``--help`` lists the settings)."""
    experiment.main(Config, run, argv, prog="benchmarks/battlesnake_agents.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
