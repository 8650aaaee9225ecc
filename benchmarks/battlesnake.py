"""Battlesnake kernel throughput: full random games, steps per second, with the Python reference in the same run.

A *step* is one turn of one game (all snakes move), as in the official Go
engine's figure. Games are full standard games on 11x11 with 4 snakes:
random moves among those that do not reverse into the neck, the engine's
food spawning (minimum 1, 15% chance rule), and a finished game restarted at
once from a fresh standard start (stacked snakes, fixed start points,
initial food), so every slot of a batch is always playing.

    python benchmarks/battlesnake.py                       # defaults
    python benchmarks/battlesnake.py batch_sizes=1,1024,16384 seconds=5
    python benchmarks/battlesnake.py --help                # every setting, its type, default and meaning

Writes ``results/benchmarks/battlesnake/results.json`` and ``config.json``.
Anchors (benchmarks/README.md): the official Go engine with the same random
policy, about 89,000 steps/s on one core and 170,000 on two (games average 11
turns); the plain-Python reference of ``tests/reference`` is measured here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jaxgames import checks, experiment
from jaxgames.games.battlesnake import Battlesnake, rules, spawn
from jaxgames.games.battlesnake.rules import Params
from tests.reference import battlesnake_reference as ref


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        board_size, num_snakes: the game (standard: 4 snakes on 11x11).
        batch_sizes: games per jitted call of the kernel rows, one row each.
        steps_per_call: turns per jitted call (a ``lax.scan``; a multiple of ``reset_every``).
        seconds: measuring time per batch size, seconds.
        reference_seconds: measuring time of the plain-Python reference, seconds.
        reset_every: finished games restart every this many turns.
        env_batch_sizes: batch sizes of the `Battlesnake` Env rows (egocentric
            observations included); empty: none.
        seed: PRNG seed.
        out_dir: where ``config.json`` and ``results.json`` are written.
    """

    board_size: int = 11
    num_snakes: int = 4
    batch_sizes: tuple[int, ...] = (1, 1024, 16384)
    steps_per_call: int = 64
    seconds: float = 4.0
    reference_seconds: float = 4.0
    reset_every: int = 2
    env_batch_sizes: tuple[int, ...] = (1024,)
    seed: int = 0
    out_dir: str = "results/benchmarks/battlesnake"

    def __post_init__(self):
        rules.validate_size(self.board_size, self.num_snakes)  # its messages name board_size and num_snakes
        for name in ("batch_sizes", "env_batch_sizes"):
            for b in getattr(self, name):
                checks.positive_int(name, b)
        for name in ("steps_per_call", "reset_every"):
            checks.positive_int(name, getattr(self, name))
        if self.steps_per_call % self.reset_every:
            raise ValueError(f"steps_per_call={self.steps_per_call} must be a multiple of reset_every={self.reset_every}")
        for name in ("seconds", "reference_seconds"):
            checks.positive_float(name, getattr(self, name))
        checks.non_negative_int("seed", self.seed)


def random_moves(u, board):
    """A uniform move per snake among those not back into the neck (all four while stacked).

    ``u``: float32 ``[S]`` in ``[0, 1)``.
    """
    neck = rules.neck_move(board)
    r3 = jnp.minimum((u * 3).astype(jnp.int32), 2)
    r4 = jnp.minimum((u * 4).astype(jnp.int32), 3)
    return jnp.where(neck < 0, r4, (neck + 1 + r3) % 4).astype(jnp.int32)


def make_run(cfg: Config):
    """``init(keys) -> boards`` and ``run(boards, key) -> (boards, steps played, games finished)``, jitted.

    All the random numbers of a turn come from one ``uniform`` call for the
    whole batch (per-game key splitting costs more than the rules). Every
    ``reset_every`` turns, each finished game restarts from a fresh standard
    start board (`spawn.init_from_uniforms`); in between, finished games wait
    (a no-op that is not counted). Only turns actually played are counted.
    """
    params = Params()
    s = cfg.num_snakes
    nf = spawn.num_uniforms(params)
    r = cfg.reset_every
    if cfg.steps_per_call % r:
        raise ValueError(f"steps_per_call={cfg.steps_per_call} must be a multiple of reset_every={r}")

    def one_turn(board, u):
        played = ~rules.is_game_over(board)
        moves = random_moves(u[:s], board)
        resolved = rules.resolve(board, moves, params)
        nxt = rules.finish_turn(resolved, spawn.food_from_uniforms(u[s : s + nf], resolved.board, params))
        return nxt, played

    def reset(board, u):
        over = rules.is_game_over(board)
        fresh = spawn.init_from_uniforms(u, s, cfg.board_size)
        return jax.tree.map(lambda a, b: jnp.where(over, a, b), fresh, board), over

    def run(boards, key):
        batch = boards.turn.shape[0]

        def turn(boards, k):
            u = jax.random.uniform(k, (batch, s + nf))
            boards, played = jax.vmap(one_turn)(boards, u)
            return boards, jnp.sum(played)

        def block(boards, k):
            k_turns, k_reset = jax.random.split(k)
            boards, played = jax.lax.scan(turn, boards, jax.random.split(k_turns, r))
            boards, over = jax.vmap(reset)(boards, jax.random.uniform(k_reset, (batch, 3 + s)))
            return boards, (jnp.sum(played), jnp.sum(over))

        boards, (played, games) = jax.lax.scan(block, boards, jax.random.split(key, cfg.steps_per_call // r))
        return boards, jnp.sum(played), jnp.sum(games)

    init = jax.jit(jax.vmap(lambda k: spawn.init_board(k, cfg.num_snakes, cfg.board_size)))
    return init, jax.jit(run, donate_argnums=0)


def bench_jax(cfg: Config, batch: int) -> dict:
    init, run = make_run(cfg)
    key = jax.random.key(cfg.seed)
    boards = init(jax.random.split(key, batch))
    t0 = time.perf_counter()
    boards, _, _ = run(boards, key)
    jax.block_until_ready(boards)
    compile_s = time.perf_counter() - t0
    steps, games, t0, c0 = 0, 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < cfg.seconds:
        key, sub = jax.random.split(key)
        boards, played, g = run(boards, sub)
        steps += int(played)  # also blocks
        games += int(g)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"batch": batch, "steps": steps, "seconds": dt, "cpu_seconds": cpu, "steps_per_s": steps / dt,
                "steps_per_cpu_s": steps / cpu, "games_finished": games,
                "mean_game_length": steps / max(games, 1), "first_call_s": compile_s}


def bench_env(cfg: Config, batch: int) -> dict:
    """The `Battlesnake` Env (state contract, rewards, observations), random legal moves.

    The observations are those of Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement Learning in a
    Synchronous Strategy Game" (University of Victoria report, undated), section 3.

    Games start together and run ``steps_per_call`` steps (finished games
    are no-ops, not counted).
    """
    env = Battlesnake(board_size=cfg.board_size, num_snakes=cfg.num_snakes)

    def run(key):
        states = jax.vmap(env.init)(jax.random.split(key, batch))

        def body(states, k):
            k_act, k_step = jax.random.split(k)
            live = ~(states.terminated | states.truncated)
            logits = jnp.where(states.legal_action_mask, 0.0, -1e9)
            actions = jax.random.categorical(k_act, logits, axis=-1).astype(jnp.int32)
            states = jax.vmap(env.step)(states, actions, jax.random.split(k_step, batch))
            return states, jnp.sum(live)

        states, played = jax.lax.scan(body, states, jax.random.split(key, cfg.steps_per_call))
        return jnp.sum(played)

    run = jax.jit(run)
    key = jax.random.key(cfg.seed)
    int(run(key))
    steps, calls, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < cfg.seconds:
        key, sub = jax.random.split(key)
        steps += int(run(sub))
        calls += 1
    dt = time.perf_counter() - t0
    return {"batch": batch, "steps": steps, "seconds": dt, "steps_per_s": steps / dt, "observation_shape": list(env.observation_shape)}


def bench_reference(cfg: Config) -> dict:
    rng = random.Random(cfg.seed)
    steps = games = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < cfg.reference_seconds:
        b = ref.start_board(cfg.board_size, cfg.num_snakes, rng)
        while not ref.game_over(b):
            moves = [ref.random_legal_move(s, rng) if s.alive else "up" for s in b.snakes]
            b = ref.random_step(b, moves, rng)
            steps += 1
        games += 1
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"steps": steps, "seconds": dt, "cpu_seconds": cpu, "steps_per_s": steps / dt, "steps_per_cpu_s": steps / cpu,
                "games": games, "mean_game_length": steps / games}


def run(cfg: Config, argv=None) -> dict:
    """The benchmark: prints the rows, writes ``config.json`` and ``results.json`` into ``cfg.out_dir``."""
    del argv
    os.makedirs(cfg.out_dir, exist_ok=True)
    with open(os.path.join(cfg.out_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=1)
    results = {
        "device": str(jax.devices()[0]),
        "backend": jax.default_backend(),
        "cpu_count": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "jax": jax.__version__,
        "reference": bench_reference(cfg),
        "jax_runs": [],
    }
    r = results["reference"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    results["load_average_1min_at_start"] = load
    print(f"load average {load:.1f} on {os.cpu_count()} cores (other processes share the CPU)")
    print(
        f"python reference: {r['steps_per_s']:12,.0f} steps/s, {r['steps_per_cpu_s']:12,.0f} per CPU-second "
        f"({r['games']} games, mean length {r['mean_game_length']:.1f})"
    )
    for b in cfg.batch_sizes:
        res = bench_jax(cfg, b)
        res["speedup_vs_reference"] = res["steps_per_s"] / r["steps_per_s"]
        res["ratio_vs_go_2core_170k"] = res["steps_per_s"] / 170_000
        results["jax_runs"].append(res)
        print(
            f"jax batch {b:6d}: {res['steps_per_s']:12,.0f} steps/s ({res['steps_per_cpu_s']:12,.0f} per CPU-s)  "
            f"x{res['speedup_vs_reference']:8.1f} reference  "
            f"x{res['ratio_vs_go_2core_170k']:6.2f} Go(2 cores)  mean game {res['mean_game_length']:.1f} turns  "
            f"(first call {res['first_call_s']:.1f}s)",
            flush=True,
        )
    results["env_runs"] = []
    for b in cfg.env_batch_sizes:
        res = bench_env(cfg, b)
        results["env_runs"].append(res)
        print(f"env batch {b:6d}: {res['steps_per_s']:12,.0f} steps/s (Env with observations {res['observation_shape']})", flush=True)
    with open(os.path.join(cfg.out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    return results


def main(argv=None):
    """Entry point: ``python benchmarks/battlesnake.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, run, argv, prog="benchmarks/battlesnake.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
