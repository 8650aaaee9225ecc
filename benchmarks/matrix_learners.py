"""Learner-iterations per second of the batched tabular learners, against OpenSpiel in the same run.

    python benchmarks/matrix_learners.py [iterations=100000] [openspiel_iterations=100000] [runs=1,1000,10000]
    python benchmarks/matrix_learners.py --help   # every setting, its type, default and meaning

The anchor is OpenSpiel's own Python loop: two ``BoltzmannQLearner`` agents
on ``matrix_pd`` in an ``rl_environment``, one episode (one joint play) per
iteration, the way OpenSpiel's examples train matrix-game learners. Ours: R
independent runs of the same two-learner self-play (the prisoner's
dilemma of El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With
Dots And Boxes", course report, undated, section 2.1.1; alpha = 0.001, tau linear 0.5 -> 0.01) in one jitted, vmapped call;
throughput = R x iterations / wall time (compilation excluded, measured
separately). The ratio column divides by OpenSpiel's iterations per second.
"""

from __future__ import annotations

import dataclasses
import time

import jax

from jaxgames import checks, experiment


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        iterations: learner iterations per run of ours (one joint play each).
        openspiel_iterations: iterations of the OpenSpiel anchor.
        runs: numbers of independent runs ``R`` in one call, comma separated
            (the epsilon-greedy and lenient rows use the largest).
    """

    iterations: int = 100_000
    openspiel_iterations: int = 100_000
    runs: tuple[int, ...] = (1, 1000, 10000)

    def __post_init__(self):
        checks.positive_int("iterations", self.iterations)
        checks.positive_int("openspiel_iterations", self.openspiel_iterations)
        if not self.runs:
            raise ValueError("runs must name at least one number of runs, e.g. 1,1000")
        for r in self.runs:
            checks.positive_int("runs", r)


def openspiel_iterations_per_second(iterations: int) -> float:
    import pyspiel
    from open_spiel.python import rl_environment, rl_tools
    from open_spiel.python.algorithms import boltzmann_tabular_qlearner

    env = rl_environment.Environment(pyspiel.load_game("matrix_pd"))
    num_actions = env.action_spec()["num_actions"]
    agents = [
        boltzmann_tabular_qlearner.BoltzmannQLearner(
            p, num_actions, step_size=0.001, temperature_schedule=rl_tools.LinearSchedule(0.5, 0.01, iterations)
        )
        for p in range(2)
    ]
    start = time.perf_counter()
    for _ in range(iterations):
        time_step = env.reset()
        while not time_step.last():
            actions = [agent.step(time_step).action for agent in agents]
            time_step = env.step(actions)
        for agent in agents:
            agent.step(time_step)
    return iterations / (time.perf_counter() - start)


def ours(exploration: str, runs: int, iterations: int) -> tuple[float, float]:
    """(learner-iterations per second, compile seconds)."""
    from jaxgames.games.matrix import prisoners_dilemma
    from jaxgames.learners import tabular as tl

    cfg = tl.LearnerConfig(exploration=exploration, num_iterations=iterations)
    params = tl.stack_params([tl.learner_params()] * runs)
    train = jax.jit(jax.vmap(tl.make_train(prisoners_dilemma(), cfg), in_axes=(0, 0, None)))
    keys = jax.random.split(jax.random.key(0), runs)
    t0 = time.perf_counter()
    compiled = train.lower(keys, params, None).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = compiled(keys, params, None)
    jax.block_until_ready(out)
    return runs * iterations / (time.perf_counter() - t0), compile_s


def run(cfg: Config, argv=None) -> None:
    """The benchmark: prints the table (writes no files)."""
    del argv
    iterations = cfg.iterations
    runs = list(cfg.runs)
    print(f"device: {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), jax {jax.__version__}")
    anchor = openspiel_iterations_per_second(cfg.openspiel_iterations)
    print(f"OpenSpiel BoltzmannQLearner x2 on matrix_pd: {anchor:,.0f} iterations/s "
          f"({100_000 / anchor:.2f} s per 100,000 iterations)\n")
    rows = [("boltzmann", r) for r in runs] + [(e, max(runs)) for e in ("epsilon_greedy", "lenient_boltzmann")]
    print("| learner | runs | iterations/run | learner-iterations/s | x OpenSpiel | compile s |")
    print("|---|---:|---:|---:|---:|---:|")
    for exploration, r in rows:
        rate, compile_s = ours(exploration, r, iterations)
        print(f"| {exploration} | {r:,} | {iterations:,} | {rate:,.0f} | {rate / anchor:,.0f}x | {compile_s:.1f} |", flush=True)


def main(argv=None) -> None:
    """Entry point: ``python benchmarks/matrix_learners.py [key=value ...]`` (``--help`` lists the settings)."""
    experiment.main(Config, run, argv, prog="benchmarks/matrix_learners.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
