"""Random-playout steps per second of the Dots-and-Boxes kernel, against OpenSpiel in the same run.

    python benchmarks/dots_and_boxes.py [sizes=3,5] [batch_sizes=1,1024,16384,65536] [seconds=1.0] \
        [repeats=3] [devices=1] [out_dir=results/dots_and_boxes_benchmark]
    python benchmarks/dots_and_boxes.py --help    # every setting, its type, default and meaning

A step is one move of a game; a playout plays a game from the empty board to
the end, every move uniform among the undrawn edges. Measured, in one run:

* ``openspiel_python``: OpenSpiel's Python loop (``legal_actions``,
  ``random.choice``, ``apply_action``) on ``pyspiel``'s ``dots_and_boxes``.
* ``openspiel_cpp``: the all-C++ loop ``pyspiel.evaluate_bots`` with two
  ``make_uniform_random_bot`` bots (one game per call).
* ``jax_playout``: `rules.random_playout` vmapped over the batch, one jitted
  call per batch of games (the compact playout loop: the rules kernel,
  branch-free, with a Fisher-Yates pick among the undrawn edges).
* ``jax_env_step``: the full contract, `DotsAndBoxes.step` (observation,
  legal-action mask, illegal-action check, terminal no-op) in a ``lax.scan``
  with the same Fisher-Yates pick, vmapped over the batch.

JAX figures exclude compilation (reported separately) and include the
generation of the random bits. Steps/s = batch x moves per game x calls / wall
time; each figure is the median of ``repeats`` windows of ``seconds``. Memory
per game state = bytes of one unbatched state's arrays.

``devices=2`` splits the host into two XLA CPU devices
(``jax_num_cpu_devices``, set before the first JAX computation) and runs half of each batch on
each with ``jax.pmap`` (XLA's CPU backend otherwise runs these loops on one
thread). OpenSpiel's loops are single-threaded either way.

Config: ``key=value`` overrides of `Config`; results go to ``out_dir`` as
``results.json``, ``results.csv`` and ``config.json``, with a markdown table
on stdout.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks, experiment
from jaxgames.games.dots_and_boxes import rules


@dataclasses.dataclass(frozen=True)
class Config:
    """Benchmark settings (``key=value`` on the command line).

    Attributes:
        sizes: square board sides to measure, comma separated.
        batch_sizes: games per jitted call, comma separated.
        seconds: minimum wall time of each measurement window.
        repeats: measurement windows per figure (the median is reported).
        devices: XLA CPU devices to split each JAX batch over (pmap; set before the first JAX computation).
        out_dir: where results are written.
    """

    sizes: str = "3,5"
    batch_sizes: str = "1,1024,16384,65536"
    seconds: float = 1.0
    repeats: int = 3
    devices: int = 1
    out_dir: str = "results/dots_and_boxes_benchmark"

    def __post_init__(self):
        for name in ("devices", "repeats"):
            checks.positive_int(name, getattr(self, name))
        checks.positive_float("seconds", self.seconds)
        for size in _ints("sizes", self.sizes):
            try:
                rules.validate_size(size, size)
            except (TypeError, ValueError) as err:
                raise ValueError(f"sizes: {err}") from None
        for batch in _ints("batch_sizes", self.batch_sizes):
            checks.positive_int("batch_sizes", batch)


def _ints(name: str, text: str) -> list[int]:
    """A comma-separated list of ints (at least one).

    Raises:
        ValueError: an entry that is not an int, or no entry (names ``name``).
    """
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items or not all(t.lstrip("-").isdigit() for t in items):
        raise ValueError(f"{name} must be comma-separated ints, e.g. 1,1024; got {text!r}")
    return [int(t) for t in items]


REPEATS = 3


def _timed(fn, seconds):
    """Calls ``fn`` in `REPEATS` windows of ``seconds``; returns (calls, wall seconds) of the median window."""
    rates = []
    for _ in range(REPEATS):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates.append((calls / elapsed, calls, elapsed))
    _, calls, elapsed = sorted(rates)[len(rates) // 2]
    return calls, elapsed


def openspiel_python(size: int, seconds: float) -> float:
    """Steps/s of OpenSpiel's Python loop (``legal_actions``, ``random.choice``, ``apply_action``)."""
    import pyspiel

    game = pyspiel.load_game("dots_and_boxes", {"num_rows": size, "num_cols": size})
    rng = random.Random(0)

    def one_game():
        state = game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(rng.choice(state.legal_actions()))

    calls, elapsed = _timed(one_game, seconds)
    return calls * game.num_distinct_actions() / elapsed  # every game draws every edge


def openspiel_cpp(size: int, seconds: float) -> float:
    """Steps/s of ``pyspiel.evaluate_bots`` with two uniform random bots (all C++)."""
    import pyspiel

    game = pyspiel.load_game("dots_and_boxes", {"num_rows": size, "num_cols": size})
    bots = [pyspiel.make_uniform_random_bot(0, 1), pyspiel.make_uniform_random_bot(1, 2)]
    seed = 0

    def one_game():
        nonlocal seed
        pyspiel.evaluate_bots(game.new_initial_state(), bots, seed)
        seed += 1

    calls, elapsed = _timed(one_game, seconds)
    return calls * game.num_distinct_actions() / elapsed


def _fisher_yates_env_playout(env, batch):
    """Batched playouts through ``env.step`` with the pick of `rules.random_playout`."""
    E = env.num_actions

    def one(bits):
        idx = jnp.arange(E, dtype=jnp.int32)

        def body(carry, k):
            state, remaining = carry
            j = k + (bits[k] % (E - k).astype(jnp.uint32)).astype(jnp.int32)
            pick = idx == j
            action = jnp.sum(jnp.where(pick, remaining, 0))
            remaining = jnp.where(pick, remaining[k], remaining)
            return (env.step(state, action), remaining), None

        (state, _), _ = jax.lax.scan(body, (env.init(jax.random.key(0)), idx), jnp.arange(E, dtype=jnp.int32))
        return state.board.scores

    def run(key):
        return jax.vmap(one)(jax.random.bits(key, (batch, E), jnp.uint32))

    return run


def _kernel_playout(env, batch):
    from jaxgames.games.dots_and_boxes import rules

    geom = env.geometry

    def run(key):
        bits = jax.random.bits(key, (batch, geom.num_edges), jnp.uint32)
        boards = jax.vmap(lambda _: rules.empty_board(env.num_rows, env.num_cols))(jnp.arange(batch))
        return jax.vmap(lambda b, k: rules.random_playout(geom, b, k))(boards, bits).scores

    return run


def jax_steps_per_second(kind: str, size: int, batch: int, seconds: float, devices: int = 1) -> tuple[float, float]:
    """(steps/s, compile seconds) of one JAX variant; ``batch`` is split over ``devices``."""
    from jaxgames.games.dots_and_boxes import DotsAndBoxes

    env = DotsAndBoxes(size, size)
    make = _kernel_playout if kind == "jax_playout" else _fisher_yates_env_playout
    devices = min(devices, batch)
    if devices > 1:
        fn = jax.pmap(make(env, batch // devices))
        batch = devices * (batch // devices)
        keys = lambda k: jax.random.split(k, devices)
    else:
        fn = jax.jit(make(env, batch))
        keys = lambda k: k
    t0 = time.perf_counter()
    jax.block_until_ready(fn(keys(jax.random.key(0))))  # compiles
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(fn(keys(jax.random.key(0))))
    key = [jax.random.key(1)]

    def call():
        key[0], sub = jax.random.split(key[0])
        jax.block_until_ready(fn(keys(sub)))

    calls, elapsed = _timed(call, seconds)
    return calls * batch * env.num_actions / elapsed, compile_s


def state_bytes(size: int) -> dict:
    """Bytes of one unbatched `DotsAndBoxesState` and of its `rules.Board`."""
    from jaxgames.games.dots_and_boxes import DotsAndBoxes

    env = DotsAndBoxes(size, size)
    state = jax.eval_shape(env.init, jax.random.key(0))
    nbytes = lambda tree: int(sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(tree)))
    return dict(state=nbytes(state), board=nbytes(state.board), observation=nbytes(state.observation))


def run(cfg: Config, argv=None) -> list[dict]:
    """The benchmark: prints the table, writes ``results.json``, ``results.csv``, ``config.json`` and a plot."""
    del argv
    from tqdm import tqdm

    if cfg.devices > 1:
        jax.config.update("jax_num_cpu_devices", cfg.devices)  # before the first computation fixes the count
    global REPEATS
    REPEATS = cfg.repeats

    sizes = _ints("sizes", cfg.sizes)
    batches = _ints("batch_sizes", cfg.batch_sizes)
    dev = jax.devices()[0]
    device = (
        f"{dev.platform} ({dev.device_kind}) x{len(jax.devices())} device(s) used {cfg.devices}, "
        f"{os.cpu_count()} CPU cores visible, load average {os.getloadavg()[0]:.2f}, jax {jax.__version__}"
    )
    print(f"device: {device}")
    rows = []
    jobs = [(s, "openspiel_python", 1) for s in sizes] + [(s, "openspiel_cpp", 1) for s in sizes]
    jobs += [(s, kind, b) for s in sizes for kind in ("jax_playout", "jax_env_step") for b in batches]
    for size, kind, batch in tqdm(jobs, desc="benchmark", file=sys.stderr):
        compile_s = 0.0
        if kind == "openspiel_python":
            sps = openspiel_python(size, cfg.seconds)
        elif kind == "openspiel_cpp":
            sps = openspiel_cpp(size, cfg.seconds)
        else:
            sps, compile_s = jax_steps_per_second(kind, size, batch, cfg.seconds, cfg.devices)
        rows.append(dict(board=f"{size}x{size}", method=kind, batch=batch, steps_per_s=sps, compile_s=compile_s))
    for r in rows:
        anchor = next(x["steps_per_s"] for x in rows if x["board"] == r["board"] and x["method"] == "openspiel_cpp")
        r["x_openspiel_cpp"] = r["steps_per_s"] / anchor
    memory = {f"{s}x{s}": state_bytes(s) for s in sizes}

    print("\n| board | method | batch | steps/s | x C++ loop | compile s |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['board']} | {r['method']} | {r['batch']:,} | {r['steps_per_s'] / 1e6:.2f} M "
            f"| {r['x_openspiel_cpp']:.2f} | {r['compile_s']:.1f} |"
        )
    print("\nmemory per game state (bytes):", json.dumps(memory))

    os.makedirs(cfg.out_dir, exist_ok=True)
    with open(os.path.join(cfg.out_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=2)
    with open(os.path.join(cfg.out_dir, "results.json"), "w") as f:
        json.dump(dict(device=device, rows=rows, memory_bytes=memory), f, indent=2)
    with open(os.path.join(cfg.out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, os.path.join(cfg.out_dir, "steps_per_second.png"))
    print(f"results in {cfg.out_dir}")
    return rows


def plot(rows: list[dict], path: str) -> None:
    """Steps/s against batch size, one panel per board, OpenSpiel's loops as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    boards = sorted({r["board"] for r in rows})
    fig, axes = plt.subplots(1, len(boards), figsize=(5 * len(boards), 4), squeeze=False)
    for ax, board in zip(axes[0], boards):
        for method, style in (("jax_playout", "o-"), ("jax_env_step", "s-")):
            pts = [(r["batch"], r["steps_per_s"]) for r in rows if r["board"] == board and r["method"] == method]
            if pts:
                ax.plot(*zip(*pts), style, label=method)
        for method, style in (("openspiel_cpp", "k--"), ("openspiel_python", "k:")):
            for r in rows:
                if r["board"] == board and r["method"] == method:
                    ax.axhline(r["steps_per_s"], linestyle=style[1:], color="k", label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("batch size (games)")
        ax.set_ylabel("steps / s")
        ax.set_title(f"Dots-and-Boxes {board}, random playouts")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> list[dict]:
    """Entry point: ``python benchmarks/dots_and_boxes.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, run, argv, prog="benchmarks/dots_and_boxes.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
