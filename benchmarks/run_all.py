"""Every headline speed figure in one command: each benchmark's short form, its anchor, the README's figure beside it.

    python benchmarks/run_all.py                           # every entry, within budget_minutes=10
    python benchmarks/run_all.py only=dab_3x3,battlesnake  # some tasks (or figures: a figure runs its task)
    python benchmarks/run_all.py check=true                # exit status 1 if any figure drifted by > 15%
    python benchmarks/run_all.py --help                    # every setting, its type, default and meaning

The registry (`FIGURES`) holds one entry per speed figure that ``README.md`` or
``benchmarks/README.md`` states: what is measured, the regular expression that
reads the stated figure from the README's text (so editing the README changes
what is compared), and the sizes. A *task* (`TASKS`) measures one or more
figures by calling the benchmark's own functions (``benchmarks/<name>.py``,
imported by path), or, where the measuring code lives inside a benchmark's
``main``, by calling that ``main`` in-process with small settings and reading
what it writes or prints. The anchor is measured in the same task (OpenSpiel,
the plain-Python reference, mctx with a trivial model, the bare rollout, the
in-process decision, Gambit, the best square matmul), so the ratio is what to
compare on a shared machine.

Drift = measured / stated - 1 (for ratio figures the ratio, for absolute
figures such as seconds or milliseconds the value itself; against a stated
range, from its nearer end). The ``FLAG`` (``|drift| > tolerance``, 0.15) is
taken against this CPU model's quiet runs where ``benchmarks/README.md``
records some (`recorded_runs`, table "Quiet runs by CPU model"), else against
the stated figure: the ratios against a CPU anchor differ by a third or more
between CPU models. A figure measured at another size than the stated one says
so and gets no drift ("n/a (different size)"); a figure the READMEs do not
state (yet) is "not stated".

Each task runs in a fresh interpreter of its own (in a new session) with a
time limit: its share of what is left of ``budget_minutes``, in proportion to
its quiet-machine estimate (`Task.estimate_s`). Past it the task's process
group gets SIGTERM (the benchmarks' ``finally`` blocks stop what they
started), then SIGKILL, and its unmeasured figures read "timed out". A task's
figures are written as each is measured, so a task stopped halfway keeps the
ones it finished. The benchmarks' own output goes to ``log_<task>.txt``.

Writes ``run_all.json``, ``run_all.csv``, ``run_all.md`` (and ``config.json``)
into ``out_dir`` (default ``results/benchmarks/run_all``) and prints the table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import math
import os
import pathlib
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Sequence

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from jaxgames import checks, experiment  # noqa: E402

README = "README.md"
BENCH_README = "benchmarks/README.md"
TOLERANCE = 0.15
KILL_GRACE_S = 15.0  # at most this long from a task's time limit to the end of its process group
GO_TWO_CORE_STEPS_PER_S = 170_000.0  # the official Go engine's two-core figure (benchmarks/README.md, "Battlesnake")
_NUM = r"(\d[\d,]*(?:\.\d+)?)"  # a stated number: 1,013,043 or 16.4
_SPAN = r"(\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?)"  # a number or a range of them: 19.6 or 14.7-19.6
RECORDS_HEADING = "### Quiet runs by CPU model"  # benchmarks/README.md: the table `check` compares with


# ----------------------------------------------------------------------------- the registry
@dataclasses.dataclass(frozen=True)
class Figure:
    """One speed figure a README states, and how this script measures it.

    Attributes:
        name: the entry's name (a row of the table; ``only=`` takes it).
        task: the `Task` that measures it.
        work: what is measured, in words.
        metric: what the compared value is (``"x OpenSpiel C++ loop"``, ``"p99 ms"``).
        source: the file that states the figure, relative to the repository root.
        pattern: a regular expression (``re.M``) whose groups read the stated figure from ``source``.
        size: the size this script measures at, and the stated figure's if it differs.
        same_size: whether the stated figure was measured at the size this script measures.
        kind: ``"ratio"`` (the ratio to the anchor is compared) or ``"absolute"`` (the value itself).
        combine: the stated figure from the numbers the groups read (default: the first).
        optional: the README may not state this figure yet (then: "not stated").
    """

    name: str
    task: str
    work: str
    metric: str
    source: str
    pattern: str
    size: str
    same_size: bool = True
    kind: str = "ratio"
    combine: Callable[[list[float]], float] | None = None
    optional: bool = False


@dataclasses.dataclass(frozen=True)
class Task:
    """A measurement run in a process of its own: ``measure(emit)`` calls ``emit(figure_name, ...)`` once per figure.

    Attributes:
        name: the task's name (``only=`` takes it).
        estimate_s: its wall time on the quiet 2-core CPU, seconds (how the budget is shared).
        measure: the measurement (a module-level function: the worker process looks it up by name).
    """

    name: str
    estimate_s: float
    measure: Callable


def _bench(stem: str):
    """``benchmarks/<stem>.py`` imported by path (as ``benchmarks_<stem>``: ``q_snake`` is also an experiment's stem)."""
    name = f"benchmarks_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    return module


class _Tee(io.TextIOBase):
    """Writes to several text streams (a benchmark's printed table: into the log and into a buffer to parse)."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self):
        for st in self.streams:
            st.flush()


def _printed(fn, *args) -> str:
    """``fn(*args)``'s stdout (also passed on to this process's stdout, the task's log)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, buf)):
        fn(*args)
    return buf.getvalue()


# -- matrix-game learners (benchmarks/matrix_learners.py): the README's size, 10,000 runs x 20,000 iterations
MATRIX_RUNS, MATRIX_ITERATIONS = 10_000, 20_000


def _matrix(exploration: str, figure: str, emit) -> None:
    # The anchor is a short pure-Python loop and swings more than our one long call (benchmarks/README.md,
    # "Quiet runs by CPU model"): three windows around ours (one before, two after), their median.
    m = _bench("matrix_learners")
    anchors = [m.openspiel_iterations_per_second(MATRIX_ITERATIONS)]
    rate, compile_s = m.ours(exploration, MATRIX_RUNS, MATRIX_ITERATIONS)
    anchors += [m.openspiel_iterations_per_second(MATRIX_ITERATIONS) for _ in range(2)]
    emit(figure, ours=rate, ours_unit="learner-iterations/s", anchor=statistics.median(anchors),
         anchor_unit="iterations/s", anchor_label="OpenSpiel BoltzmannQLearner x2 (median of 3 windows)",
         note=f"compile {compile_s:.1f} s excluded; anchor windows " + ", ".join(f"{a:,.0f}" for a in anchors))


def measure_matrix_boltzmann(emit):
    _matrix("boltzmann", "matrix_boltzmann", emit)


def measure_matrix_epsilon_greedy(emit):
    _matrix("epsilon_greedy", "matrix_epsilon_greedy", emit)


def measure_matrix_lenient(emit):
    _matrix("lenient_boltzmann", "matrix_lenient", emit)


# -- Dots-and-Boxes random playouts (benchmarks/dots_and_boxes.py): batch 16,384, median of 3 windows of 1 s
DAB_BATCH, DAB_SECONDS = 16_384, 1.0


def _dab(size: int, emit) -> None:
    m = _bench("dots_and_boxes")
    m.REPEATS = 3
    anchor = m.openspiel_cpp(size, DAB_SECONDS)
    for kind, figure in (("jax_playout", f"dab_{size}x{size}_playout"), ("jax_env_step", f"dab_{size}x{size}_env_step")):
        sps, compile_s = m.jax_steps_per_second(kind, size, DAB_BATCH, DAB_SECONDS)
        emit(figure, ours=sps, ours_unit="steps/s", anchor=anchor, anchor_unit="steps/s",
             anchor_label="OpenSpiel all-C++ loop", note=f"compile {compile_s:.1f} s excluded")


def measure_dab_3x3(emit):
    _dab(3, emit)


def measure_dab_5x5(emit):
    _dab(5, emit)


# -- the exact solver (benchmarks/dab_solver.py)
def measure_dab_solver(emit):
    from jaxgames.games.dots_and_boxes.search import solver

    m = _bench("dab_solver")
    sol = solver.solve(3, 3, chunk_size=1 << 18)  # the benchmark's chunk for boards of <= 10 boxes; first call
    emit("dab_solver_3x3", ours=sol.seconds, ours_unit="s", note=f"value {sol.value(0)}; first call, compilation included")
    del sol
    value, states, python_s = m.plain_minimax_states(2, 3)
    solver.solve(2, 3, chunk_size=1 << 18)  # compiles
    seconds = statistics.median(solver.solve(2, 3, chunk_size=1 << 18).seconds for _ in range(3))
    emit("dab_solver_vs_python_2x3", ours=seconds, ours_unit="s", anchor=python_s, anchor_unit="s",
         anchor_label="plain-Python memoised minimax", ratio=python_s / seconds,
         note=f"{states:,} states; solver: median of 3 calls after the first")


# -- Battlesnake kernel (benchmarks/battlesnake.py): batch 1,024, the headline's batch
SNAKE_BATCH = 1024


def measure_battlesnake(emit):
    m = _bench("battlesnake")
    cfg = m.Config(batch_sizes=(SNAKE_BATCH,), env_batch_sizes=(), seconds=4.0, reference_seconds=3.0)
    ref = m.bench_reference(cfg)
    res = m.bench_jax(cfg, SNAKE_BATCH)
    emit("battlesnake_vs_reference", ours=res["steps_per_s"], ours_unit="steps/s", anchor=ref["steps_per_s"],
         anchor_unit="steps/s", anchor_label="plain-Python reference",
         note=f"CPU-seconds ratio {res['steps_per_cpu_s'] / ref['steps_per_cpu_s']:.1f}x")
    emit("battlesnake_vs_go", ours=res["steps_per_s"], ours_unit="steps/s", anchor=GO_TWO_CORE_STEPS_PER_S,
         anchor_unit="steps/s", anchor_label="Go engine, 2 cores (a recorded figure, not run here)")


# -- Onitama (benchmarks/onitama.py): batch 16,384, 16 steps a call, median of 3 windows of 1 s
def measure_onitama(emit):
    m = _bench("onitama")
    anchor = m.reference_python(1.0, 3)
    for method, figure in (("jax_rules", "onitama_rules"), ("jax_env_paper", "onitama_env_paper")):
        sps, compile_s, _ = m.jax_steps_per_second(method, 16_384, 16, 1.0, 3)
        emit(figure, ours=sps, ours_unit="steps/s", anchor=anchor, anchor_unit="steps/s",
             anchor_label="plain-Python reference", note=f"compile {compile_s:.1f} s excluded")


# -- the arena (benchmarks/arena.py)
def measure_arena_dab(emit):
    import jax

    m = _bench("arena")
    rows = m.bench_dab(m.Config(dab_games=512, repeats=2), jax.random.key(0))
    for (label, games, _, sps, bare, _, _), figure in zip(rows, ("arena_dab_random", "arena_dab_greedy")):
        emit(figure, ours=sps, ours_unit="steps/s", anchor=bare, anchor_unit="steps/s",
             anchor_label="wrappers.rollout, same agents", note=label)


def measure_arena_snake(emit):
    # The "4 random-safe" row of `arena.bench_snakes`, from the benchmark's own `_best`, `_seat_policy` and
    # `_rollout_rate` (bench_snakes also plays the heuristic rows: about 80 s of CPU, left out here).
    import jax

    import jaxgames
    from jaxgames.agents.battlesnake import RandomSafeAgent
    from jaxgames.evaluation import arena

    m = _bench("arena")
    key, games, repeats = jax.random.key(0), 128, 2
    env = jaxgames.make("battlesnake", num_snakes=4, board_size=11, observation="none")
    agents, lineup = [RandomSafeAgent()], (0, 0, 0, 0)
    seconds, res = m._best(lambda: arena.play(env, agents, games, key, lineup=lineup, max_steps=1000), repeats)
    longest = int(res.length.max())
    bare = m._rollout_rate(env, m._seat_policy(env, agents, lineup), games, longest, key, repeats)
    emit("arena_snake_random_safe", ours=int(res.length.sum()) / seconds, ours_unit="steps/s", anchor=bare,
         anchor_unit="steps/s", anchor_label="wrappers.rollout, same agents", note=f"longest game {longest} turns")


# -- the HTTP server (benchmarks/server.py): one round of 5,000 requests, kept-alive connections
def measure_server(emit):
    m = _bench("server")
    with tempfile.TemporaryDirectory() as tmp:
        m.main(["modes=keep_alive", "requests=5000", "clients=16", "repeats=1", f"out_dir={tmp}"])
        doc = json.loads((pathlib.Path(tmp) / "results.json").read_text())
    row = next(r for r in doc["summary"] if r["mode"] == "keep_alive" and r["clients"] == 16)
    bare = doc["bare"]["move_p50"]
    note = f"{row['errors']} errors, {row['fallbacks']} fallbacks, {row['requests_per_s']:.0f} req/s"
    for figure in ("server_p99_16_clients", "server_p99_worst"):
        emit(figure, ours=row["p99_ms"], ours_unit="ms", anchor=bare, anchor_unit="ms",
             anchor_label="bare decision p50, in-process", note=note)
    emit("server_cpu_per_request", ours=row["server_cpu_ms"], ours_unit="ms", anchor=bare, anchor_unit="ms",
         anchor_label="bare decision p50, in-process", note=note)


# -- AlphaZero search and self-play (benchmarks/alphazero.py at B = 1; its rows are printed, so read from stdout)
_AZ_ROW = re.compile(r"^\s*(mctx_trivial|search_rules|search_network|selfplay)\s+(\d+)\s+([\d,]+)\s+(?:([\d,]+)\s+)?"
                     r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", re.M)
_AZ_AGENT = re.compile(r"^# 5x5 time per move \(B=1, 64 simulations, median\): ([\d.]+) ms", re.M)


def parse_alphazero(text: str) -> dict:
    """``{row: simulations/s}`` of ``benchmarks/alphazero.py``'s printed rows (B = 1), and ``agent_ms``."""
    out = {m.group(1): _number(m.group(3)) for m in _AZ_ROW.finditer(text) if m.group(2) == "1"}
    agent = _AZ_AGENT.search(text)
    if agent:
        out["agent_ms"] = float(agent.group(1))
    return out


def measure_alphazero(emit):
    m = _bench("alphazero")
    rows = parse_alphazero(_printed(m.main, ["batch_sizes=1", "unjitted=false", "repeats=3"]))
    anchor = rows["mctx_trivial"]
    for row, figure in (("search_rules", "az_search_rules"), ("search_network", "az_search_network"),
                        ("selfplay", "az_selfplay")):
        emit(figure, ours=rows[row], ours_unit="simulations/s", anchor=anchor, anchor_unit="simulations/s",
             anchor_label="mctx, trivial model")
    emit("az_agent_5x5_move", ours=rows["agent_ms"], ours_unit="ms", note="untrained parameters of the shipped shape")


# -- Q-snake self-play (benchmarks/q_snake.py): B = 256, the CPU network (features=16,16,16)
def measure_q_snake(emit):
    m = _bench("q_snake")
    cfg = m.Config(batch_sizes=(256,), features=(16, 16, 16), seconds=3.0)
    kernel = m.bench_kernel(cfg, 256, "none")
    row, _, _ = m.bench_self_play(cfg, 256)
    emit("q_snake_selfplay", ours=row["steps_per_s"], ours_unit="steps/s", anchor=kernel["steps_per_s"],
         anchor_unit="steps/s", anchor_label="bare kernel (no observation), random moves",
         note=f"{row['decisions_per_s']:,.0f} decisions/s")


# -- exact equilibria (benchmarks/equilibria.py; rows printed): the README's random 6x6 and 8x8 games (seed 0)
_EQ_ROW = re.compile(r"^\s*random (\d+)x\1\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(True|False)\s*$", re.M)


def measure_equilibria(emit):
    m = _bench("equilibria")
    text = _printed(m.main, ["zero_sizes=", "random_sizes=4,6,8", "gambit_max=8", "lemke_howson_sizes="])
    for row in _EQ_ROW.finditer(text):
        n = int(row.group(1))
        if n in (6, 8):
            emit(f"equilibria_random_{n}x{n}", ours=float(row.group(3)), ours_unit="s", anchor=float(row.group(4)),
                 anchor_unit="s", anchor_label="Gambit enummixed (exact)", ratio=float(row.group(5)),
                 note=f"same set: {row.group(6)}")


# -- network training steps against the best square matmul (benchmarks/networks.py, quick=true: the default
#    settings, i.e. the README table's "new layout" column, with fewer timed calls)
NETWORKS = ("q_snake_small", "q_snake_paper", "az_dab", "az_onitama", "ddpg")
NETWORK_LABELS = {  # each network's row label in benchmarks/README.md's table ("Networks near the machine")
    "q_snake_small": "Q-snake small",
    "q_snake_paper": "Q-snake paper",
    "az_dab": "AlphaZero Dots-and-Boxes",
    "az_onitama": "AlphaZero Onitama",
    "ddpg": "DDPG",
}


def measure_networks(emit):
    m = _bench("networks")
    cfg = m.Config(quick=True)  # layout=new, malloc=default, ynn=true: as the README's "new layout" column

    def show(line: str) -> None:  # the benchmark's table, as each row is measured, into the task's log
        print(line, flush=True)

    show("| network | batch | params | FLOPs/step | ms/step | GFLOP/s | % of matmul | compile s |")
    for r in m.run(cfg, show=show):
        if r["kind"] == "network" and r["network"] in NETWORKS and r["multiplier"] == 1:
            emit(f"network_{r['network']}", ours=r["gflops"], ours_unit="GFLOP/s", anchor=r["matmul_gflops"],
                 anchor_unit="GFLOP/s", anchor_label="best square float32 matmul", ratio=r["fraction"],
                 note=f"batch {r['batch']:,}, {r['ms']:.1f} ms/step ({cfg.clock} time)")


TASKS = (
    Task("matrix_boltzmann", 45, measure_matrix_boltzmann),
    Task("matrix_epsilon_greedy", 45, measure_matrix_epsilon_greedy),
    Task("matrix_lenient", 55, measure_matrix_lenient),
    Task("dab_3x3", 18, measure_dab_3x3),
    Task("dab_5x5", 18, measure_dab_5x5),
    Task("dab_solver", 12, measure_dab_solver),
    Task("battlesnake", 16, measure_battlesnake),
    Task("onitama", 30, measure_onitama),
    Task("arena_dab", 15, measure_arena_dab),
    Task("arena_snake", 15, measure_arena_snake),
    Task("server", 35, measure_server),
    Task("alphazero", 50, measure_alphazero),
    Task("q_snake", 35, measure_q_snake),
    Task("equilibria", 15, measure_equilibria),
    Task("networks", 120, measure_networks),
)


def _ratio_of_two(values: list[float]) -> float:
    return values[1] / values[0]


def _percent(values: list[float]) -> float:
    return values[0] / 100.0


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _prose(pattern: str) -> str:
    """``pattern`` with each space matching any run of white space (a README's prose wraps anywhere)."""
    return pattern.replace(" ", r"\s+")


def _network_row(label: str) -> str:
    """The "% of matmul" of the "new layout" column (the default settings) in the row of ``label`` of
    benchmarks/README.md's table: ``| label (...) | batch | FLOPs/step | before | new layout | ...``, a cell
    reading ``31.6 (12.8%)`` or, in bold, ``**94.9 (38.5%)**``."""
    return (rf"^\| {re.escape(label)} [^|]*\| [\d,]+ \| [\d.]+ G \| [^|]+ \| "
            rf"(?:\*\*)?[\d.]+ \({_NUM}%\)(?:\*\*)? \|")


_B = r"[\d,]*"  # another cell of a table row: a number or empty
_MATRIX_SIZE = "10,000 runs x 20,000 iterations (as stated; stated: median of 3 runs)"
_DAB_SIZE = "batch 16,384, 3 windows of 1 s (as stated)"
FIGURES = (
    # README.md, "Headline results"
    Figure("matrix_boltzmann", "matrix_boltzmann", "tabular Boltzmann Q-learners, per-run throughput",
           "x OpenSpiel", README, _prose(rf"\bBoltzmann {_SPAN}x, epsilon-greedy"), _MATRIX_SIZE),
    Figure("matrix_epsilon_greedy", "matrix_epsilon_greedy", "tabular epsilon-greedy Q-learners, per-run throughput",
           "x OpenSpiel", README, _prose(rf"\bepsilon-greedy {_SPAN}x, lenient"), _MATRIX_SIZE),
    Figure("matrix_lenient", "matrix_lenient", "tabular lenient Boltzmann Q-learners, per-run throughput",
           "x OpenSpiel", README, _prose(rf"\blenient {_SPAN}x the per-run throughput of OpenSpiel"),
           _MATRIX_SIZE),
    Figure("dab_3x3_playout", "dab_3x3", "Dots-and-Boxes 3x3 random playouts, playout kernel", "x OpenSpiel C++ loop",
           README, _prose(rf"{_SPAN}x \(3x3\) and [\d.,-]+x \(5x5\) the steps/s of OpenSpiel's all-C\+\+ loop"),
           _DAB_SIZE),
    Figure("dab_5x5_playout", "dab_5x5", "Dots-and-Boxes 5x5 random playouts, playout kernel", "x OpenSpiel C++ loop",
           README, _prose(rf"[\d.,-]+x \(3x3\) and {_SPAN}x \(5x5\) the steps/s of OpenSpiel's all-C\+\+ loop"),
           _DAB_SIZE),
    Figure("dab_3x3_env_step", "dab_3x3", "Dots-and-Boxes 3x3 random playouts, full env.step", "x OpenSpiel C++ loop",
           README, _prose(rf"the full `env\.step` contract {_SPAN}x and [\d.,-]+x"), _DAB_SIZE),
    Figure("dab_5x5_env_step", "dab_5x5", "Dots-and-Boxes 5x5 random playouts, full env.step", "x OpenSpiel C++ loop",
           README, _prose(rf"the full `env\.step` contract [\d.,-]+x and {_SPAN}x"), _DAB_SIZE),
    Figure("dab_solver_3x3", "dab_solver", "exact 3x3 Dots-and-Boxes solve, first call (compilation included)",
           "seconds", README, rf"exact 3x3 Dots-and-Boxes solve[^|]*\| {_SPAN} s including compilation",
           "all 2^24 edge sets (as stated)", kind="absolute"),
    Figure("battlesnake_vs_reference", "battlesnake", "Battlesnake 11x11, 4 snakes, random games, steps/s",
           "x plain-Python reference", README, _prose(rf"{_SPAN}x our plain-Python reference"),
           "batch 1,024, 4 s (as stated)"),
    Figure("battlesnake_vs_go", "battlesnake", "Battlesnake 11x11, 4 snakes, random games, steps/s",
           "x Go engine (2 cores)", README, _prose(rf"{_SPAN}x the official Go engine's two-core figure"),
           "batch 1,024, 4 s (as stated)"),
    Figure("server_p99_worst", "server", "Battlesnake HTTP server, 16 kept-alive clients, p99 latency",
           "p99 ms", README, _prose(rf"p99 under 50 ms in \d+ of \d+ rounds \(worst {_NUM} ms\)"),
           "short form: 1 round x 5,000 requests (stated: the worst of 10 such rounds)", same_size=False,
           kind="absolute"),
    # benchmarks/README.md
    Figure("dab_solver_vs_python_2x3", "dab_solver", "exact 2x3 solve against a plain-Python memoised minimax",
           "x plain-Python minimax", BENCH_README,
           _prose(rf"On 2x3 the batched solver is about {_NUM}x faster than the plain-Python memoised minimax"),
           "2x3, 131,072 states (as stated)"),
    Figure("onitama_rules", "onitama", "Onitama random playouts, rules kernel", "x plain-Python reference",
           BENCH_README, rf"^\| jax_rules \| 16,384 \| [\d,]+ \| {_NUM} \|", "batch 16,384, steps=16 (as stated)"),
    Figure("onitama_env_paper", "onitama", "Onitama random playouts, full env (40-action space)",
           "x plain-Python reference", BENCH_README, rf"^\| jax_env_paper \| 16,384 \| [\d,]+ \| {_NUM} \|",
           "batch 16,384, steps=16 (as stated)"),
    Figure("arena_dab_random", "arena_dab", "arena match, Dots-and-Boxes 3x3 random vs random", "arena / rollout",
           BENCH_README, rf"^\| dots-and-boxes 3x3: random vs random \| 512 \| [\d,]+ \| [\d,]+ \| [\d,]+ \| {_NUM} \|",
           "512 games, best of 2 (as stated)"),
    Figure("arena_dab_greedy", "arena_dab", "arena match, Dots-and-Boxes 3x3 greedy vs random", "arena / rollout",
           BENCH_README, rf"^\| dots-and-boxes 3x3: greedy vs random \| 512 \| [\d,]+ \| [\d,]+ \| [\d,]+ \| {_NUM} \|",
           "512 games, best of 2 (as stated)"),
    Figure("arena_snake_random_safe", "arena_snake", "arena match, Battlesnake 11x11, 4 random-safe snakes",
           "arena / rollout", BENCH_README,
           rf"^\| battlesnake 11x11: 4 random-safe \| 128 \| [\d,]+ \| [\d,]+ \| [\d,]+ \| {_NUM} \|",
           "128 games, best of 2 (as stated)"),
    Figure("server_p99_16_clients", "server", "Battlesnake HTTP server, 16 kept-alive clients, p99 latency",
           "p99 ms", BENCH_README,
           r"^\| 1 \| ([\d., ]+) \| [\d.]+ \| [\d.]+ ms \| \d+ \| [\d.]+ \| [\d.]+ ms \|\n\| 2 \| ([\d., ]+) \|",
           "1 round x 5,000 requests (stated: the median of the 10 quiet rounds' p99)", kind="absolute",
           combine=_median),
    Figure("server_cpu_per_request", "server", "Battlesnake HTTP server, 16 kept-alive clients, server CPU per request",
           "server CPU ms/req", BENCH_README, _prose(rf"\({_NUM} ms in the quiet runs\)"),
           "short form: 1 round x 5,000 requests (stated: the median of 5 such rounds)", kind="absolute"),
    Figure("az_search_rules", "alphazero", "Gumbel MCTS with the 3x3 rules, zero evaluator, B = 1, 16 simulations",
           "x mctx trivial model", BENCH_README, rf"^\| search_rules \| 1 \| {_B} \| {_B} \| {_NUM} \|",
           "B = 1, best of 3 calls (as stated)"),
    Figure("az_search_network", "alphazero", "Gumbel MCTS with the 3x3 rules and the network, B = 1",
           "x mctx trivial model", BENCH_README, rf"^\| search_network \| 1 \| {_B} \| {_B} \| {_NUM} \|",
           "B = 1, best of 3 calls (as stated)"),
    Figure("az_selfplay", "alphazero", "AlphaZero self-play call (3x3, 24 moves), B = 1", "x mctx trivial model",
           BENCH_README, rf"^\| selfplay \| 1 \| {_B} \| {_B} \| {_NUM} \|", "B = 1, best of 3 calls (as stated)"),
    Figure("az_agent_5x5_move", "alphazero", "AlphaZero agent, one 5x5 move at 64 simulations (median)", "ms",
           BENCH_README, _prose(rf"{_NUM} ms at 64 \(the agent's default\)"), "B = 1 (as stated)", kind="absolute"),
    Figure("q_snake_selfplay", "q_snake", "Q-snake self-play with the network (features=16,16,16), B = 256",
           "x bare kernel", BENCH_README,
           rf"^\| kernel \(none\) \| 256 \| {_NUM} \|(?s:.*?)^\| self-play \(network\) \| 256 \| {_NUM} \|",
           "B = 256, 3 s a row (as stated, at 5 s a row; the stated ratio: the two rows of its table)",
           combine=_ratio_of_two),
    Figure("equilibria_random_6x6", "equilibria", "exact extreme equilibria, random 6x6 game", "x Gambit (speed-up)",
           BENCH_README, rf"^\| random 6x6 \| \d+ \| [\d.]+ \| [\d.]+ \| {_NUM} \|", "seed 0 (as stated)"),
    Figure("equilibria_random_8x8", "equilibria", "exact extreme equilibria, random 8x8 game", "x Gambit (speed-up)",
           BENCH_README, rf"^\| random 8x8 \| \d+ \| [\d.]+ \| [\d.]+ \| {_NUM} \|", "seed 0 (as stated)"),
) + tuple(
    Figure(f"network_{n}", "networks", f"training step of {n}, GFLOP/s", "fraction of matmul", BENCH_README,
           _network_row(NETWORK_LABELS[n]), "shipped batch; quick=true: 3 timed calls (paper net: 1), matmul "
           "n <= 1,024 (stated: 7 calls, n <= 2,048)", combine=_percent)
    for n in NETWORKS
)


# ----------------------------------------------------------------------------- the stated figures and the drift
def _number(text: str) -> float:
    """``"1,013,043"`` -> 1013043.0."""
    return float(text.replace(",", ""))


Stated = float | tuple[float, float]  # one figure, or the (low, high) of a range


def _span(text: str) -> Stated:
    """``"19.6"`` -> 19.6; ``"14.7-19.6"`` -> (14.7, 19.6)."""
    low, sep, high = text.partition("-")
    return (_number(low), _number(high)) if sep else _number(low)


def stated_figure(figure: Figure, texts: dict[str, str]) -> Stated | None:
    """The figure ``figure.source`` states (read by ``figure.pattern``), or None where the text does not match.

    A group reading a range (``14.7-19.6``, see `_SPAN`) gives ``(low, high)``.
    """
    text = texts.get(figure.source)
    match = re.search(figure.pattern, text, re.M) if text is not None else None
    if match is None:
        return None
    if figure.combine is None and "-" in match.group(1):
        return _span(match.group(1))
    values = [_number(v) for g in match.groups() for v in g.split(", ")]  # a group may hold a list: "41.4, 18.8"
    return figure.combine(values) if figure.combine else values[0]


def read_texts(root: pathlib.Path = ROOT) -> dict[str, str]:
    """The text of every file the figures are read from (a missing file reads as empty)."""
    out = {}
    for source in sorted({f.source for f in FIGURES} | {BENCH_README}):
        path = root / source
        out[source] = path.read_text() if path.exists() else ""
    return out


_CELL = re.compile(r"^(\d[\d,]*(?:\.\d+)?)\s*(x|%|s|ms)?$")


def recorded_runs(text: str) -> dict[str, dict[str, list[float]]]:
    """``{entry: {CPU model: [value, ...]}}`` from the table under `RECORDS_HEADING` in benchmarks/README.md.

    The table's header names one CPU model per column (as `cpu_model` prints it); a row is
    ``| `entry` | 564x; 786x | 15.3% | - |``: each cell the compared values of that model's quiet runs, separated
    by ``;`` (``%`` cells are fractions, ``s`` and ``ms`` cells the value itself; ``-`` or empty: none).

    Raises:
        ValueError: a cell that does not read as numbers, naming it.
    """
    start = text.find(RECORDS_HEADING)
    if start < 0:
        return {}
    lines = text[start:].splitlines()[1:]
    table = []
    for line in lines:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif table:
            break
    if len(table) < 2:
        return {}
    models, out = table[0][1:], {}
    for cells in table[2:]:
        entry = cells[0].strip("`")
        out[entry] = {}
        for model, cell in zip(models, cells[1:]):
            values = []
            for part in filter(None, (p.strip() for p in cell.split(";"))):
                if part == "-":
                    continue
                m = _CELL.match(part)
                if m is None:
                    raise ValueError(f"{RECORDS_HEADING!r}: entry {entry!r}, column {model!r}: {part!r} is not a value")
                values.append(_number(m.group(1)) / (100.0 if m.group(2) == "%" else 1.0))
            if values:
                out[entry][model] = values
    return out


def compared_value(figure: Figure, row: dict) -> float | None:
    """What is compared with the stated figure: the ratio (``kind="ratio"``) or the measured value itself."""
    value = row.get("ratio") if figure.kind == "ratio" else row.get("ours")
    return None if value is None or not math.isfinite(value) else float(value)


def drift(measured: float | None, stated: Stated | None, same_size: bool = True,
          tolerance: float = TOLERANCE) -> tuple[float | None, str, bool]:
    """``(drift, text, flagged)``: drift = measured / stated - 1, flagged where ``|drift| > tolerance``.

    Against a range ``(low, high)``: 0 inside it, else measured / (the nearer end) - 1. No drift (None) where
    nothing was measured, nothing is stated, or the sizes differ.
    """
    if measured is None:
        return None, "n/a (not measured)", False
    if stated is None:
        return None, "n/a (not stated)", False
    if not same_size:
        return None, "n/a (different size)", False
    low, high = stated if isinstance(stated, tuple) else (stated, stated)
    if low <= 0:
        return None, "n/a (stated 0)", False
    d = measured / low - 1.0 if measured < low else measured / high - 1.0 if measured > high else 0.0
    text = "within" if low != high and d == 0.0 else f"{100 * d:+.1f}%"
    return d, text, abs(d) > tolerance


# ----------------------------------------------------------------------------- formatting
def _fmt(value: float | None, unit: str = "") -> str:
    """A value with its unit, short (``2.27 M steps/s``, ``46.6 ms``, ``19.6x``)."""
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "x":
        return f"{value:,.0f}x" if value >= 100 else f"{value:.1f}x" if value >= 10 else f"{value:.3g}x"
    if unit.endswith("/s") and unit != "GFLOP/s":
        for scale, prefix in ((1e6, "M"), (1e3, "k")):
            if value >= scale:
                return f"{value / scale:.3g} {prefix} {unit}"
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}".strip()


def _fmt_compared(figure: Figure, value: float | None) -> str:
    if figure.kind == "absolute":
        return _fmt(value, "s" if figure.metric == "seconds" else "ms")
    if figure.metric.startswith("fraction"):
        return "-" if value is None else f"{100 * value:.1f}%"
    return _fmt(value, "x")


def rows_for(figures: Sequence[Figure], measured: dict[str, dict], texts: dict[str, str],
             tolerance: float = TOLERANCE, cpu: str | None = None) -> list[dict]:
    """One table row per figure: the measurement (``measured[name]``: ``ours``, ``anchor``, ``ratio``, units,
    ``status``), the stated figure read from ``texts`` and its drift, and this CPU model's quiet runs
    (`recorded_runs`, column ``cpu``) with the drift from their range.

    The flag is the drift from this CPU model's quiet runs where it has any, else from the stated figure: a
    ratio against a CPU anchor moves by a third or more from one CPU model to the next with nothing stale.
    """
    records = recorded_runs(texts.get(BENCH_README, ""))
    rows = []
    for f in figures:
        m = dict(measured.get(f.name, {}))
        if f.kind == "ratio" and m.get("ours") is not None and m.get("anchor") and m.get("ratio") is None:
            m["ratio"] = m["ours"] / m["anchor"]
        stated = stated_figure(f, texts)
        value = compared_value(f, m)
        d, d_text, flagged = drift(value, stated, f.same_size, tolerance)
        runs = records.get(f.name, {}).get(cpu, []) if cpu else []
        recorded = (min(runs), max(runs)) if runs else None
        rd, rd_text, r_flagged = drift(value, recorded, f.same_size, tolerance)
        if not runs:
            rd_text = "n/a (no record)"
        rows.append({
            "entry": f.name, "task": f.task, "work": f.work, "size": f.size, "same_size": f.same_size,
            "metric": f.metric, "kind": f.kind,
            "anchor_label": m.get("anchor_label", ""), "anchor": m.get("anchor"), "anchor_unit": m.get("anchor_unit", ""),
            "ours": m.get("ours"), "ours_unit": m.get("ours_unit", ""), "ratio": m.get("ratio"), "compared": value,
            "stated": list(stated) if isinstance(stated, tuple) else stated, "stated_source": f.source,
            "drift": d, "drift_text": d_text,
            "recorded": list(recorded) if recorded else None, "recorded_runs": len(runs),
            "record_drift": rd, "record_drift_text": rd_text,
            "flag": "FLAG" if (r_flagged if runs else flagged) else "",
            "status": m.get("status", "ok" if value is not None else "not measured"), "task_seconds": m.get("task_seconds"),
            "note": m.get("note", ""),
        })
    return rows


def _fmt_stated(figure: Figure, stated) -> str:
    if isinstance(stated, (list, tuple)):
        low, high = stated
        return _fmt_compared(figure, low) if low == high else \
            f"{_fmt_compared(figure, low)} - {_fmt_compared(figure, high)}"
    return _fmt_compared(figure, stated)


def table(rows: Sequence[dict], figures: Sequence[Figure] = FIGURES) -> str:
    """The Markdown table: entry, work, size, anchor, ours, ratio (what is compared), stated and its drift, this CPU
    model's quiet runs and the drift from them, flag."""
    by_name = {f.name: f for f in figures}
    shown = []
    for r in rows:
        f = by_name[r["entry"]]
        anchor = "-" if r["anchor"] is None else f"{r['anchor_label']}: {_fmt(r['anchor'], r['anchor_unit'])}"
        if r["anchor"] is None and r["anchor_label"]:
            anchor = r["anchor_label"]
        status = "" if r["status"] == "ok" else f" ({r['status']})"
        recorded = r.get("recorded")
        shown.append({
            "entry": r["entry"], "work": r["work"], "size": r["size"], "anchor (same run)": anchor,
            "ours": _fmt(r["ours"], r["ours_unit"]) + status,
            "compared": _fmt_compared(f, r["compared"]) + ("" if f.kind == "ratio" else " (absolute)"),
            "stated": "not stated" if r["stated"] is None else f"{_fmt_stated(f, r['stated'])} ({r['stated_source']})",
            "drift": r["drift_text"],
            "this CPU": "-" if not recorded else f"{_fmt_stated(f, recorded)} ({r['recorded_runs']} runs)",
            "vs this CPU": r.get("record_drift_text", "n/a (no record)"), "flag": r["flag"],
        })
    return experiment.markdown_table(shown, headers={"compared": "ratio / value", "drift": "drift from stated",
                                                     "this CPU": "this CPU model's quiet runs"})


def cpu_model(cpuinfo: pathlib.Path = pathlib.Path("/proc/cpuinfo")) -> str:
    """The CPU's model name with its family and model numbers (Linux ``/proc/cpuinfo``; else `platform.processor`).

    The ratios against a CPU anchor depend on the processor as well as on the load: a stated figure was
    measured on one model, and another model's run can drift past the tolerance with nothing stale.
    """
    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    if "model name" not in fields:
        return platform.processor() or "unknown"
    # A virtual machine may give only "Intel(R) Xeon(R) Processor": the family and model numbers tell the generation.
    return f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def exit_status(rows: Sequence[dict], check: bool) -> int:
    """1 where ``check`` and some row is flagged, else 0."""
    return int(check and any(r["flag"] for r in rows))


# ----------------------------------------------------------------------------- running the tasks
def task_limit(estimates: Sequence[float], remaining_s: float) -> float:
    """The first task's time limit: its share of ``remaining_s`` in proportion to the estimates of the tasks left."""
    total = sum(estimates)
    return max(0.0, remaining_s * estimates[0] / total) if total > 0 else max(0.0, remaining_s)


def _stop(signum, frame):  # SIGTERM in a worker: unwind, so that the benchmarks' finally blocks run
    raise KeyboardInterrupt(f"signal {signum}: the task's time limit")


# A worker: this file imported by path in a fresh interpreter, then `_worker(task, result path)`.
_WORKER = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('benchmarks_run_all', sys.argv[1]); "
           "m = importlib.util.module_from_spec(spec); sys.modules['benchmarks_run_all'] = m; spec.loader.exec_module(m); "
           "m._worker(sys.argv[2], sys.argv[3])")


def _worker(task_name: str, result_path: str) -> None:
    """A task in a process of its own: its figures are written to ``result_path`` as each is measured."""
    signal.signal(signal.SIGTERM, _stop)
    task = next(t for t in TASKS if t.name == task_name)
    results: dict[str, dict] = {}

    def emit(figure: str, **values) -> None:
        results[figure] = values
        tmp = result_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, default=float)
        os.replace(tmp, result_path)
        print(f"[run_all] {figure}: {values}", flush=True)

    task.measure(emit)


def run_task(task: Task, limit_s: float, work_dir: pathlib.Path) -> tuple[dict[str, dict], str, float, str]:
    """``(figures measured, status, seconds, log text)`` of ``task`` in a worker process stopped at ``limit_s``.

    The worker runs in a session of its own; past ``limit_s`` its process group (it and what it started,
    e.g. the HTTP server) gets SIGTERM, and SIGKILL 10 s later if still there.
    """
    result, log = work_dir / f"{task.name}.json", work_dir / f"log_{task.name}.txt"
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(pathlib.Path(__file__).resolve()), task.name,
                                 str(result)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        status = "ok"
        try:
            code = proc.wait(limit_s)
            if code != 0:
                status = f"error (exit status {code}; see log_{task.name}.txt)"
        except subprocess.TimeoutExpired:
            status = f"timed out after {limit_s:.0f} s"
            for sig, grace in ((signal.SIGTERM, KILL_GRACE_S - 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
    seconds = time.perf_counter() - start
    measured = json.loads(result.read_text()) if result.exists() else {}
    return measured, status, seconds, log.read_text() if log.exists() else ""


# ----------------------------------------------------------------------------- the command
@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        only: task or figure names to run, comma separated (a figure runs its whole task; empty: all).
        out_dir: where run_all.json, run_all.csv, run_all.md and the tasks' logs are written.
        budget_minutes: wall-time budget of the whole run; each task's time limit is its share of what is left.
        tolerance: the drift (|measured / stated - 1|, or from this CPU model's recorded range) above which a
            figure is flagged.
        check: exit with status 1 when any figure is flagged (for CI-like use).
    """

    only: tuple[str, ...] = ()
    out_dir: str = "results/benchmarks/run_all"
    budget_minutes: float = 10.0
    tolerance: float = TOLERANCE
    check: bool = False

    def __post_init__(self):
        checks.positive_float("budget_minutes", self.budget_minutes)
        checks.positive_float("tolerance", self.tolerance)
        known = list(dict.fromkeys([t.name for t in TASKS] + [f.name for f in FIGURES]))
        experiment.check_names("only", self.only, known, at_least=0)


def selected_tasks(only: Sequence[str]) -> list[Task]:
    """The tasks ``only`` names (directly or through one of their figures), in registry order; all if empty."""
    if not only:
        return list(TASKS)
    wanted = set(only) | {f.task for f in FIGURES if f.name in only}
    return [t for t in TASKS if t.name in wanted]


def run(cfg: Config, argv=None) -> list[dict]:
    """Runs the selected tasks within the budget, prints the table, writes the results; exits 1 under ``check``
    when a figure is flagged."""
    del argv
    from tqdm import tqdm

    import jax

    recorded_runs(read_texts().get(BENCH_README, ""))  # a malformed records table fails here, before any work
    start = time.perf_counter()
    budget = 60.0 * cfg.budget_minutes
    tasks = selected_tasks(cfg.only)
    figures = [f for t in tasks for f in FIGURES if f.task == t.name]  # in task order
    load_start = os.getloadavg()[0]
    measured: dict[str, dict] = {}
    logs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="run_all_") as tmp, \
            tqdm(total=len(tasks), desc="run_all", unit="task", file=sys.stderr) as bar:
        for i, task in enumerate(tasks):
            bar.set_postfix_str(task.name)
            # kept back: the stop of a task past its limit (KILL_GRACE_S) and 5 s for writing the results
            remaining = budget - (time.perf_counter() - start) - KILL_GRACE_S - 5.0
            limit = task_limit([t.estimate_s for t in tasks[i:]], remaining)
            if limit < 1.0:
                got, status, seconds, log = {}, "skipped (budget spent)", 0.0, ""
            else:
                got, status, seconds, log = run_task(task, limit, pathlib.Path(tmp))
            logs[task.name] = log
            for f in figures:
                if f.task == task.name:
                    entry = dict(got.get(f.name, {}))
                    entry.setdefault("status", "ok" if f.name in got else status if status != "ok" else "not measured")
                    entry["task_seconds"] = seconds
                    measured[f.name] = entry
            bar.update(1)
    cpu = cpu_model()
    rows = rows_for(figures, measured, read_texts(), cfg.tolerance, cpu)
    total = time.perf_counter() - start
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    header = (f"run_all: {len(tasks)} tasks, {len(rows)} figures in {total:.0f} s (budget {budget:.0f} s); "
              f"{jax.devices()[0].platform} ({jax.devices()[0].device_kind}), CPU {cpu}, "
              f"{cores} of {os.cpu_count()} CPU cores usable, "
              f"load average {load_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the end, jax {jax.__version__}")
    text = table(rows)
    flagged = [r["entry"] for r in rows if r["flag"]]
    recorded = sum(1 for r in rows if r["recorded_runs"])
    footer = (f"{len(flagged)} of {len(rows)} figures flagged (drift over {100 * cfg.tolerance:.0f}%)"
              + (f": {', '.join(flagged)}" if flagged else "")
              + f". {recorded} of them are compared with the quiet runs recorded for this CPU model ({cpu}) in "
              f"benchmarks/README.md, '{RECORDS_HEADING[4:]}', the others with the stated figure. Drift = measured / "
              "stated - 1 (0 inside a range); 'n/a (different size)': the short form measures another size.")
    print(f"\n{header}\n\n{text}\n\n{footer}")
    meta = {"recorded": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "seconds": total, "budget_s": budget,
            "platform": platform.platform(), "cpu_model": cpu, "cpu_count": os.cpu_count(), "cores_usable": cores,
            "load_average_start": load_start, "load_average_end": os.getloadavg()[0], "jax": jax.__version__,
            "device": f"{jax.devices()[0].platform} {jax.devices()[0].device_kind}", "tolerance": cfg.tolerance,
            "tasks": [t.name for t in tasks]}
    with experiment.ResultsDir(cfg.out_dir, cfg, overwrite=True) as rd:  # a new run replaces the last one
        rd.write_json("run_all.json", {**meta, "rows": rows})
        rd.write_csv("run_all.csv", rows)
        rd.write_text("run_all.md", f"{header}\n\n{text}\n\n{footer}\n")
        for name, log in logs.items():
            if log:
                rd.write_text(f"log_{name}.txt", log)
    print(f"results in {cfg.out_dir}")
    code = exit_status(rows, cfg.check)
    if code:
        raise SystemExit(code)
    return rows


def main(argv=None):
    """Entry point: ``python benchmarks/run_all.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, run, argv, prog="benchmarks/run_all.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
