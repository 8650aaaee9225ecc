"""Arena throughput against the bare rollout kernel, measured in the same run.

Two workloads:

* Battlesnake, 4 snakes on 11x11: games per second through `arena.play`
  (one compiled match loop) with the random-safe and heuristic agents;
* Dots-and-Boxes 3x3: two-agent matches through `arena.play_match`.

The anchor is `jaxgames.wrappers.rollout` driving the *same agents* over
the same batch size for the same number of steps (auto-reset, no arena
bookkeeping): its steps per second is the bare rate. The arena's figure to
keep small is its overhead: ``1 - arena steps/s / rollout steps/s``, where
the arena's steps are the game steps it played (the sum of game lengths;
its loop also runs until the *longest* game of the batch ends, which the
rollout, resetting games, does not pay: the "loop" columns count every
game slot of every loop step, so ``loop/rollout`` is the per-step overhead
and ``arena/rollout`` adds the wait for the longest game). Each figure is the best of
``repeats`` timed calls after one untimed compile call.

A second table removes that wait: the same Battlesnake games played in chunks of
``rows`` games (`arena.play`'s ``chunk_size``) and streamed through ``rows`` batch
rows (``refill=True``, a row taking the next game as its game ends). Both equal the
one-batch games bitwise (checked in the run), so the ratio of their times is the
refill's gain alone.

    python benchmarks/arena.py                  # 256 snake games, 1024 Dots-and-Boxes games
    python benchmarks/arena.py snake_games=1024 repeats=5
    python benchmarks/arena.py --help           # every setting, its type, default and meaning
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import jaxgames  # noqa: E402
from jaxgames import checks, experiment, wrappers  # noqa: E402
from jaxgames.agents import RandomAgent  # noqa: E402
from jaxgames.agents.battlesnake import HeuristicAgent, RandomSafeAgent  # noqa: E402
from jaxgames.agents.dots_and_boxes import GreedyAgent  # noqa: E402
from jaxgames.evaluation import arena  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        snake_games: Battlesnake games per arena call (the batch).
        rows: batch rows of the refill table (0: ``snake_games // 4``).
        dab_games: Dots-and-Boxes games per match.
        repeats: timed calls per figure (the best is reported).
        seed: PRNG seed.
    """

    snake_games: int = 256
    rows: int = 0
    dab_games: int = 1024
    repeats: int = 3
    seed: int = 0

    def __post_init__(self):
        for name in ("snake_games", "dab_games", "repeats"):
            checks.positive_int(name, getattr(self, name))
        checks.integer("rows", self.rows, 0, self.snake_games)
        checks.non_negative_int("seed", self.seed)


def _best(fn, repeats):
    fn()  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def _seat_policy(env, agents, lineup):
    """A rollout policy of one state: seat s played by ``agents[lineup[s]]`` (simultaneous game)."""

    def policy(state, key):
        keys = jax.random.split(key, env.num_players)
        return jnp.stack([agents[k].policy(env, state, keys[s], jnp.int32(s)) for s, k in enumerate(lineup)])

    return policy


def _turn_policy(env, agents):
    """A rollout policy of one state for a two-player turn-taking game: agent 0 plays seat 0."""

    def policy(state, key):
        a = agents[0].policy(env, state, key, state.current_player)
        b = agents[1].policy(env, state, key, state.current_player)
        return jnp.where(state.current_player == 0, a, b)

    return policy


def _rollout_rate(env, policy, batch, steps, key, repeats):
    run = jax.jit(lambda s, k: wrappers.rollout(env, policy, s, k, steps, record_observations=False)[1].rewards)
    states = wrappers.init_batch(env, key, batch)
    seconds, _ = _best(lambda: jax.block_until_ready(run(states, key)), repeats)
    return batch * steps / seconds


def bench_snakes(config, key):
    env = jaxgames.make("battlesnake", num_snakes=4, board_size=11, observation="none")
    rows = []
    for label, agents, lineup in (
        ("4 random-safe", [RandomSafeAgent()], (0, 0, 0, 0)),
        ("heuristic vs 3 random-safe", [HeuristicAgent(), RandomSafeAgent()], (0, 1, 1, 1)),
        ("4 heuristic", [HeuristicAgent()], (0, 0, 0, 0)),
    ):
        G = config.snake_games
        seconds, res = _best(lambda: arena.play(env, agents, G, key, lineup=lineup, max_steps=1000), config.repeats)
        played = int(res.length.sum())
        longest = int(res.length.max())
        bare = _rollout_rate(env, _seat_policy(env, agents, lineup), G, longest, key, config.repeats)
        rows.append((f"battlesnake 11x11: {label}", G, G / seconds, played / seconds, bare, float(res.length.mean()), longest))
    return rows


def bench_refill(config, key):
    """The same snake games in chunks of ``rows`` and streamed through ``rows`` refilled rows: seconds of each."""
    env = jaxgames.make("battlesnake", num_snakes=4, board_size=11, observation="none")
    G = config.snake_games
    R = config.rows or max(G // 4, 1)
    rows = []
    for label, agents, lineup in (
        ("4 random-safe", [RandomSafeAgent()], (0, 0, 0, 0)),
        ("heuristic vs 3 random-safe", [HeuristicAgent(), RandomSafeAgent()], (0, 1, 1, 1)),
    ):
        kw = dict(lineup=lineup, max_steps=1000, chunk_size=R)
        chunked, a = _best(lambda: arena.play(env, agents, G, key, **kw), config.repeats)
        refilled, b = _best(lambda: arena.play(env, agents, G, key, refill=True, **kw), config.repeats)
        if not (np.array_equal(a.returns, b.returns) and np.array_equal(a.length, b.length)):
            raise RuntimeError(f"{label}: the refilled games differ from the chunked ones")
        chunk_steps = sum(int(a.length[i:i + R].max()) for i in range(0, G, R))
        rows.append((f"battlesnake 11x11: {label}", G, R, chunked, refilled, chunk_steps, int(a.length.sum())))
    return rows


def bench_dab(config, key):
    env = jaxgames.make("dots_and_boxes", num_rows=3, num_cols=3)
    rows = []
    for label, agents in (("random vs random", [RandomAgent(), RandomAgent()]), ("greedy vs random", [GreedyAgent(), RandomAgent()])):
        G = config.dab_games
        seconds, res = _best(lambda: arena.play_match(env, agents[0], agents[1], G, key), config.repeats)
        played = int(res.length.sum())
        bare = _rollout_rate(env, _turn_policy(env, agents), G, env.num_actions, key, config.repeats)
        rows.append((f"dots-and-boxes 3x3: {label}", G, G / seconds, played / seconds, bare, float(res.length.mean()), int(res.length.max())))
    return rows


def run(config: Config, argv=None) -> None:
    """The benchmark: prints the table (writes no files)."""
    del argv
    key = jax.random.key(config.seed)
    print(f"device: {jax.devices()[0].device_kind} ({jax.default_backend()}), {os.cpu_count()} CPU cores, jax {jax.__version__}")
    rows = bench_snakes(config, key) + bench_dab(config, key)
    header = (
        "| workload | games per call | arena games/s | arena steps/s | rollout steps/s (anchor) | arena/rollout "
        "| arena loop steps/s (G x longest) | loop/rollout | mean length | longest |"
    )
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, g, gps, sps, bare, mean_len, longest in rows:
        loop = gps * longest
        print(
            f"| {label} | {g} | {gps:,.0f} | {sps:,.0f} | {bare:,.0f} | {sps / bare:.2f} | {loop:,.0f} | {loop / bare:.2f} "
            f"| {mean_len:.1f} | {longest} |"
        )
    print()
    print("| workload | games | rows | chunked: s | refilled: s | chunked / refilled | loop steps: chunks' longest, "
          "summed | game steps / rows |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, g, r, chunked, refilled, chunk_steps, played in bench_refill(config, key):
        print(f"| {label} | {g} | {r} | {chunked:.3f} | {refilled:.3f} | {chunked / refilled:.2f} | {chunk_steps:,} "
              f"| {played / r:,.0f} |")



def main(argv=None):
    """Entry point: ``python benchmarks/arena.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, run, argv, prog="benchmarks/arena.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
