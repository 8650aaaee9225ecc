"""AlphaSnake Zero throughput: self-play decisions per second (network included), the bare kernel beside it, training samples per second.

For each batch size ``B`` (games in parallel, 4 snakes on 11x11), in one run:

* ``kernel``: the Battlesnake `Env` step without observations
  (``observation="none"``), random legal moves, ``steps_per_call`` turns per
  jitted ``lax.scan`` (finished games are no-ops, not counted): the anchor;
* ``views``: the same with the rotated 21x21x3 views of every snake (what
  self-play's env computes);
* ``self_play``: `QSnakeLearner.self_play`: ``turns`` turns of ``B`` game
  slots (a finished game restarts in its slot), every snake choosing by the
  network (pi_n sampling), the chains recorded. A *step* is one turn of one
  game; a *decision* is one living snake choosing a move (the network
  evaluates every seat, dead ones included, so decisions/s is below 4x
  steps/s);
* ``train``: one jitted Adam step of ``train_batch_size`` positions on the
  sampled positions of the largest batch's self-play (`QSnakeLearner.collect`),
  views rebuilt from the boards and mirrored: samples (positions) per second.

Compilation is excluded (printed apart). The network is the 6-layer net of Siddiqui, Kraak,
Roesli, Daxini & Li, "Multiagent Reinforcement Learning in a Synchronous
Strategy Game" (University of Victoria report, undated), section 4, by default (``features=32,32,64,64,128,128``); on the 2-core CPU that is
slow (about 0.25 GFLOP per decision), so the default batch sizes are 1 and
256; add 4096 (``batch_sizes=1,256,4096``) on a GPU or with a small net
(``features=16,16,16``).

    python benchmarks/q_snake.py
    python benchmarks/q_snake.py features=16,16,16 batch_sizes=1,256,4096
    python benchmarks/q_snake.py batch_sizes=1,256,4096     # on a GPU
    python benchmarks/q_snake.py --help                     # every setting, its type, default and meaning

Writes ``results/benchmarks/q_snake/results.json`` and ``config.json``.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jaxgames import checks, experiment
from jaxgames.experiment import ResultsDir
from jaxgames.games.battlesnake import Battlesnake
from jaxgames.learners import q_snake as qs
from jaxgames.networks.q_snake import PAPER_FEATURES


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        batch_sizes: games in parallel, one row each.
        features: the network's filters.
        board_size, num_snakes: the game.
        max_turns: a self-play game's turn limit.
        turns: self-play turns per measured call (``num_turns`` of the learner).
        steps_per_call: turns per jitted call of the kernel loops.
        seconds: measuring time per row (at least one call).
        train_batch_size, train_steps: the training measurement.
        power: n of pi_n.
        seed: PRNG seed.
        out: results folder.
    """

    batch_sizes: tuple[int, ...] = (1, 256)
    features: tuple[int, ...] = PAPER_FEATURES
    board_size: int = 11
    num_snakes: int = 4
    max_turns: int = 500
    turns: int = 16
    steps_per_call: int = 32
    seconds: float = 5.0
    train_batch_size: int = 256
    train_steps: int = 10
    power: float = 6.0
    seed: int = 0
    out: str = "results/benchmarks/q_snake"

    def __post_init__(self):
        if not self.batch_sizes:
            raise ValueError("batch_sizes must name at least one batch size, e.g. 1,256")
        for b in self.batch_sizes:
            checks.positive_int("batch_sizes", b)
        for name in ("steps_per_call", "train_batch_size", "train_steps", "turns"):
            checks.positive_int(name, getattr(self, name))
        checks.positive_float("seconds", self.seconds)
        checks.non_negative_int("seed", self.seed)
        self.learner_config(max(self.batch_sizes))  # validates the learner's settings

    def learner_config(self, batch: int) -> qs.QSnakeConfig:
        return qs.QSnakeConfig(
            board_size=self.board_size, num_snakes=self.num_snakes, max_turns=self.max_turns, num_turns=self.turns,
            features=self.features,
            num_games=batch, power=self.power, batch_size=self.train_batch_size, train_steps=self.train_steps,
        )


def _timed(fn, seconds: float):
    """Calls ``fn() -> count`` until ``seconds`` pass (at least once); returns ``(count, seconds)``."""
    total, t0 = 0, time.perf_counter()
    while True:
        total += fn()
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return total, dt


def bench_kernel(cfg: Config, batch: int, observation: str) -> dict:
    """Random legal moves through ``env.step`` in a scan; steps (game turns) and snake moves per second."""
    env = Battlesnake(board_size=cfg.board_size, num_snakes=cfg.num_snakes, max_turns=cfg.max_turns, observation=observation)

    @jax.jit
    def run(key):
        states = jax.vmap(env.init)(jax.random.split(key, batch))

        def body(states, k):
            k_act, k_step = jax.random.split(k)
            live = ~(states.terminated | states.truncated)
            movers = jnp.sum(states.board.alive & live[:, None])
            logits = jnp.where(states.legal_action_mask, 0.0, -1e9)
            actions = jax.random.categorical(k_act, logits, axis=-1).astype(jnp.int32)
            states = jax.vmap(env.step)(states, actions, jax.random.split(k_step, batch))
            return states, (jnp.sum(live), movers)

        _, (played, moves) = jax.lax.scan(body, states, jax.random.split(key, cfg.steps_per_call))
        return jnp.stack([jnp.sum(played), jnp.sum(moves)])

    key = jax.random.key(cfg.seed)
    t0 = time.perf_counter()
    run(key).block_until_ready()
    compile_s = time.perf_counter() - t0
    counts = [0, 0]

    def once():
        nonlocal key
        key, sub = jax.random.split(key)
        s, m = (int(v) for v in run(sub))
        counts[1] += m
        return s

    steps, dt = _timed(once, cfg.seconds)
    return {"what": f"kernel ({observation})", "batch": batch, "steps_per_s": steps / dt, "decisions_per_s": counts[1] / dt,
            "first_call_s": compile_s}


def bench_self_play(cfg: Config, batch: int):
    """``turns`` turns of ``batch`` self-play slots per call; returns the row and the learner (for the training row)."""
    learner = qs.QSnakeLearner(cfg.learner_config(batch))
    state = learner.init(jax.random.key(cfg.seed))
    params = learner.params_for(1)
    key = jax.random.key(cfg.seed + 1)
    t0 = time.perf_counter()
    jax.block_until_ready(learner.self_play(state.best, params, key))
    compile_s = time.perf_counter() - t0

    def once():
        nonlocal key
        key, sub = jax.random.split(key)
        return int(jnp.sum(learner.self_play(state.best, params, sub).acting))

    calls = [0]

    def counted():
        calls[0] += 1
        return once()

    decisions, dt = _timed(counted, cfg.seconds)
    row = {"what": "self_play (network)", "batch": batch, "steps_per_s": cfg.turns * batch * calls[0] / dt,
           "decisions_per_s": decisions / dt, "first_call_s": compile_s}
    return row, learner, state


def bench_train(cfg: Config, learner: qs.QSnakeLearner, state) -> dict:
    data, keys, _ = learner.collect(state)
    t0 = time.perf_counter()
    jax.block_until_ready(learner.train_step(state, data, keys[0]))
    compile_s = time.perf_counter() - t0
    i = 0

    def once():
        nonlocal i
        i += 1
        jax.block_until_ready(learner.train_step(state, data, keys[i % len(keys)]))
        return cfg.train_batch_size

    samples, dt = _timed(once, cfg.seconds)
    return {"what": "train (Adam)", "batch": cfg.train_batch_size, "samples_per_s": samples / dt, "first_call_s": compile_s,
            "positions_sampled": int(data.count)}


def run(cfg: Config) -> list[dict]:
    rows, last = [], None
    for b in cfg.batch_sizes:
        for obs in ("none", "rotated"):
            rows.append(bench_kernel(cfg, b, obs))
            print(_fmt(rows[-1]), flush=True)
        row, learner, state = bench_self_play(cfg, b)
        rows.append(row)
        print(_fmt(row), flush=True)
        last = (learner, state)
    rows.append(bench_train(cfg, *last))
    print(_fmt(rows[-1]), flush=True)
    return rows


def _fmt(r: dict) -> str:
    if "samples_per_s" in r:
        return f"| {r['what']} | {r['batch']} | | | {r['samples_per_s']:,.0f} samples/s | {r['first_call_s']:.1f} |"
    return f"| {r['what']} | {r['batch']} | {r['steps_per_s']:,.0f} | {r['decisions_per_s']:,.0f} | | {r['first_call_s']:.1f} |"


def main(argv=None):
    """Entry point: ``python benchmarks/q_snake.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, record, argv, prog="benchmarks/q_snake.py", summary=__doc__.split("\n\n")[0])


def record(cfg: Config, argv=None) -> list[dict]:
    """The benchmark: prints the rows (`run`), then writes ``results.json`` into ``cfg.out``."""
    del argv
    dev = jax.devices()[0]
    print(f"device: {dev.platform} ({dev.device_kind}), features={list(cfg.features)}, {cfg.board_size}x{cfg.board_size}, "
          f"{cfg.num_snakes} snakes, jax {jax.__version__}")
    print("| loop | B | steps/s | decisions/s | training | first call s |\n|---|---:|---:|---:|---:|---:|")
    rows = run(cfg)
    with ResultsDir(cfg.out, cfg, overwrite=True) as rd:  # a new measurement replaces the last one
        rd.write_json("results.json", {"device": f"{dev.platform} {dev.device_kind}", "platform": platform.platform(),
                                       "cpu_count": os.cpu_count(), "jax": jax.__version__, "rows": rows,
                                       "recorded": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())})
    return rows


if __name__ == "__main__":
    main()
