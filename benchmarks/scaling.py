"""Strong and weak scaling of the batch mesh (`jaxgames.parallel`): tabular sweep and AlphaZero self-play.

Two workloads, each sharded over a one-axis ``"batch"`` mesh of 1, 2, 4, 8
devices:

* **sweep**: `jaxgames.learners.tabular.run_sweep` of lenient Boltzmann
  Q-learners on the stag hunt (one compiled chunk, gathered to the host);
* **self-play**: one call of AlphaZero-lite's jitted self-play
  (`jaxgames.learners.alphazero`, one board size, a small network): every
  game plays a whole game of Gumbel MCTS moves.

*Strong* scaling keeps the total batch fixed (``sweep_runs`` runs,
``selfplay_games`` games) and adds devices: the ideal ``t1 / tN`` is ``N``.
*Weak* scaling keeps the batch per device fixed (``sweep_runs_per_device``,
``selfplay_games_per_device``): the ideal ``t1 / tN`` is 1. The anchor is
the 1-device row, the same code without a mesh (``mesh=None``), the path
every caller had before.

JAX fixes the device count when it starts, so each device count runs in a
subprocess of its own (this file with ``worker=N``). With no accelerator the
devices are forced CPU host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=N``) that share the same
cores: there the figure to watch is the *overhead* of sharding (ratios near 1
in strong scaling mean little overhead, not a speed-up); on a machine with N
GPUs set ``platform=gpu`` and the ratios are the real speed-up. Each time is
the best of ``repeats`` timed calls after one untimed compile call.

    python benchmarks/scaling.py
    python benchmarks/scaling.py devices=1,2,4,8 sweep_runs=4096 selfplay_games=256 repeats=5
    python benchmarks/scaling.py --help   # every setting, its type, default and meaning
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jaxgames import checks, experiment  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        devices: comma-separated device counts, the first the anchor (1).
        platform: ``cpu`` (forced host devices) or ``gpu``/``tpu`` (real devices).
        sweep_runs: runs of the strong-scaling sweep (a multiple of every device count).
        sweep_runs_per_device: runs per device of the weak-scaling sweep.
        sweep_iterations: learner iterations per run.
        selfplay_games: games of the strong-scaling self-play.
        selfplay_games_per_device: games per device of the weak-scaling self-play.
        board: the self-play board, ``RxC``.
        num_simulations: Gumbel MCTS simulations per move.
        repeats: timed calls per figure (the best is reported).
        seed: PRNG seed.
        worker: internal: the device count of a worker subprocess (0: the driver).
    """

    devices: str = "1,2,4,8"
    platform: str = "cpu"
    sweep_runs: int = 1024
    sweep_runs_per_device: int = 128
    sweep_iterations: int = 500
    selfplay_games: int = 32
    selfplay_games_per_device: int = 4
    board: str = "2x2"
    num_simulations: int = 8
    repeats: int = 3
    seed: int = 0
    worker: int = 0

    def __post_init__(self):
        items = [x.strip() for x in str(self.devices).split(",") if x.strip()]
        if not items or not all(x.isdigit() and int(x) >= 1 for x in items):
            raise ValueError(f"devices must be positive ints, e.g. 1,2,4,8; got {self.devices!r}")
        counts = self.device_counts
        for name in ("sweep_runs", "sweep_runs_per_device", "sweep_iterations", "selfplay_games",
                     "selfplay_games_per_device", "num_simulations", "repeats"):
            checks.positive_int(name, getattr(self, name))
        checks.non_negative_int("seed", self.seed)
        checks.non_negative_int("worker", self.worker)
        parts = str(self.board).lower().split("x")
        if len(parts) != 2 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
            raise ValueError(f"board must look like 2x2; got {self.board!r}")
        for name in ("sweep_runs", "selfplay_games"):
            bad = [n for n in counts if getattr(self, name) % n]
            if bad:
                raise ValueError(f"{name}={getattr(self, name)} must be a multiple of every device count; not of {bad}")
        if self.platform not in ("cpu", "gpu", "tpu"):
            raise ValueError(f"platform must be cpu, gpu or tpu; got {self.platform!r}")

    @property
    def device_counts(self) -> list[int]:
        return [int(x) for x in str(self.devices).split(",") if x.strip()]


def _best_time(fn, repeats: int) -> float:
    import jax

    jax.block_until_ready(fn())  # compile
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best


def _worker(config: Config) -> dict:
    import jax

    from jaxgames import parallel
    from jaxgames.games import matrix
    from jaxgames.learners import alphazero as az
    from jaxgames.learners import tabular as tl
    from jaxgames.networks.dots_and_boxes import NetworkConfig, init_params

    n = config.worker
    mesh = None if n == 1 else parallel.make_mesh(n)
    out = {"devices": n, "device_kind": jax.devices()[0].device_kind, "platform": jax.default_backend(), "rows": []}

    # ---- sweep
    cfg = tl.LearnerConfig(exploration="lenient_boltzmann", num_iterations=config.sweep_iterations, max_leniency=5)
    for scaling, runs in (("strong", config.sweep_runs), ("weak", config.sweep_runs_per_device * n)):
        params = tl.stack_params([tl.learner_params(learning_rate=0.05, leniency=1 + i % 5) for i in range(runs)])
        keys = jax.random.split(jax.random.key(config.seed), runs)
        fn = lambda: tl.run_sweep(  # noqa: E731
            matrix.stag_hunt(), cfg, keys, params, progress=False, chunk_size=runs, mesh=mesh
        )
        out["rows"].append(dict(workload="sweep", scaling=scaling, batch=runs, seconds=_best_time(fn, config.repeats)))

    # ---- self-play
    size = tuple(int(x) for x in config.board.lower().split("x"))
    net = NetworkConfig(channels=16, num_blocks=2, value_channels=4, value_hidden=16)
    # Build the network's cached init outside any trace first: `networks.dots_and_boxes._jitted_init`
    # creates its example input when first called, and a first call inside `init_state`'s trace
    # caches a tracer that the next config's `init_state` then trips over.
    init_params(net, jax.random.key(0))
    for scaling, games in (("strong", config.selfplay_games), ("weak", config.selfplay_games_per_device * n)):
        azc = az.AlphaZeroConfig(
            board_sizes=(size,), network=net, num_envs=games, num_simulations=config.num_simulations,
            max_num_considered_actions=config.num_simulations, buffer_capacity=4096, batch_size=8 * n,
        )
        state = az.init_state(azc, jax.random.key(config.seed))
        if mesh is not None:
            state = parallel.replicate(state.replace(env_states=()), mesh).replace(
                env_states=parallel.shard_batch(state.env_states, mesh)
            )
        play = az.compiled(azc, mesh).selfplay[0]
        key = jax.random.key(config.seed + 1)
        fn = lambda: play(state.params, state.env_states[0], state.buffers[0], key, state.iteration)  # noqa: E731
        out["rows"].append(dict(workload="self-play", scaling=scaling, batch=games, seconds=_best_time(fn, config.repeats)))
    return out


def _run_worker(config: Config, n: int) -> dict:
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = config.platform
    if config.platform == "cpu":
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n}".strip()
    args = [f"{f.name}={getattr(config, f.name)}" for f in dataclasses.fields(config) if f.name != "worker"]
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), *args, f"worker={n}"], env=env, capture_output=True, text=True
    )
    if proc.returncode:
        raise RuntimeError(f"worker with {n} devices failed:\n{proc.stderr[-6000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(config: Config, argv=None) -> None:
    """The driver (one worker subprocess per device count, then the table) or, with ``worker=N``, one worker."""
    del argv
    if config.worker:
        print(json.dumps(_worker(config)))
        return
    results = {}
    for n in config.device_counts:
        print(f"running {n} device(s) ...", file=sys.stderr, flush=True)
        results[n] = _run_worker(config, n)
    first = results[config.device_counts[0]]
    print(
        f"device: {first['device_kind']} ({first['platform']}), {os.cpu_count()} CPU cores; "
        f"sweep: {config.sweep_iterations} iterations per run; self-play: {config.board} board, "
        f"{config.num_simulations} simulations per move"
    )
    print()
    print("| workload | scaling | devices | batch | seconds | t1 / tN | ideal |")
    print("|---|---|---:|---:|---:|---:|---:|")
    anchor = {(r["workload"], r["scaling"]): r["seconds"] for r in first["rows"]}
    for workload in ("sweep", "self-play"):
        for scaling in ("strong", "weak"):
            for n in config.device_counts:
                row = next(r for r in results[n]["rows"] if (r["workload"], r["scaling"]) == (workload, scaling))
                ratio = anchor[(workload, scaling)] / row["seconds"]
                ideal = n if scaling == "strong" else 1
                print(f"| {workload} | {scaling} | {n} | {row['batch']} | {row['seconds']:.4f} | {ratio:.2f} | {ideal} |")



def main(argv=None):
    """Entry point: ``python benchmarks/scaling.py [key=value ...]`` (``--help`` lists the settings)."""
    experiment.main(Config, run, argv, prog="benchmarks/scaling.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
