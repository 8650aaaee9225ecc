"""The supervised ceiling of 3x3 Dots-and-Boxes: the AlphaZero network trained on exact solver labels.

A diagnostic for the self-play learner: the same network
(`jaxgames.networks.dots_and_boxes.PolicyValueNet`), loss, optimiser and
symmetry augmentation as `jaxgames.learners.alphazero`, trained by plain
supervised learning on positions labelled by the project's retrograde solver
(`jaxgames.games.dots_and_boxes.search.solver`), so that the self-play curve
can be read against what the architecture reaches with perfect targets at
equal training time.

Data: ``train_positions`` random-play positions (`random_positions`, drawn
once per run from a subkey of the run key, not the evaluation's key), each a
`jaxgames.learners.alphazero.Sample` with (`solver_targets`)

* ``policy`` float32 ``[24]``: uniform over the moves that keep the exact value;
* ``value`` float32 ``[]``: ``(scores[mover] - scores[opponent] + V) / 9``,
  with ``V`` the solver's value (net boxes the mover still wins). This is the
  mover's final box margin under optimal play over ``num_boxes``: exactly
  what a perfect self-play game gives the position (``make_selfplay`` with
  ``value_target=margin``: the only reward is the whole game's margin, at
  the end). ``V`` alone would leave out the boxes already won.

One iteration is ``steps_per_iteration`` AdamW steps (`az.make_optimizer`)
on ``batch_size`` positions sampled with replacement, each through a random
symmetry (`az.augment`), loss `az.losses` (policy cross-entropy plus value
squared error). Every ``eval_every`` iterations: the raw network's optimal-move
rate on ``eval_positions`` held-out positions ``random_positions(3, 3,
key(seed), eval_positions)`` (the construction of
`jaxgames.evaluation.alphazero.ProgressEvaluator`), overall and by stage
(opening 0-7 drawn edges, middle 8-15, endgame 16-23). ``compare=`` a folder
of ``experiments/alphazero_dab.py`` puts its curve beside this one at equal
training minutes (``selfplay_seconds + update_seconds``, summed).

Outputs in ``out`` (``README.md`` first): ``curves.csv``, ``ceiling.png``,
``comparison.csv`` (with ``compare=``), ``config.json``, ``checkpoints/``
(rerunning a command resumes it). Bad settings raise ValueError/TypeError
before anything is written.

Sources: Silver et al., "A general reinforcement learning algorithm that
masters chess, shogi, and Go through self-play" (Science 362:1140, 2018) for
the loss; the labels are the project's retrograde solver (El Kaddouri, Rys &
Gao, "Multi Agent Reinforcement Learning With Dots And Boxes", course report,
section 4).

    python experiments/dab_supervised_ceiling.py budget_minutes=13 iterations=100000 eval_every=20
    python experiments/dab_supervised_ceiling.py iterations=<last> compare=results/alphazero_dab  # adds the comparison
    python experiments/dab_supervised_ceiling.py --help
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import pathlib
import time
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from matplotlib.figure import Figure

from jaxgames import checks, experiment
from jaxgames.agents.alphazero import AlphaZeroAgent
from jaxgames.evaluation.alphazero import stages
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, command_line
from jaxgames.games.dots_and_boxes import DotsAndBoxes, rules, symmetry
from jaxgames.games.dots_and_boxes.positions import random_positions
from jaxgames.games.dots_and_boxes.search import solver
from jaxgames.games.dots_and_boxes.search.bitboard import edge_set_index
from jaxgames.learners import alphazero as az
from jaxgames.learners import loop
from jaxgames.networks import dots_and_boxes as nets
from jaxgames.networks.dots_and_boxes import NetworkConfig

SIZE = (3, 3)
"""The board: the largest the exact solver's table covers cheaply (2**24 edge sets, 16.8 MB)."""

STAGES = (("opening", 0, 7), ("middle", 8, 15), ("endgame", 16, 23))
"""Labels of `jaxgames.evaluation.alphazero.stages` on 3x3 (drawn edges, inclusive ranges), for tables and plots."""

CHUNK = 1 << 18
"""Positions per generation call (`make_dataset`)."""

NEUTRAL = NEUTRAL_FIELDS + ("iterations", "budget_minutes", "checkpoint_every", "compare")
"""Settings a resumed run may change (how long it trains, and the comparison: not what training computes)."""

CITATION = (
    "Silver et al., 'A general reinforcement learning algorithm that masters chess, shogi, and Go through self-play' "
    "(Science 362:1140, 2018) for the loss; labels from the project's retrograde solver (El Kaddouri, Rys & Gao, "
    "'Multi Agent Reinforcement Learning With Dots And Boxes', course report, section 4)"
)


# ----------------------------------------------------------------------------- settings
def default_network() -> NetworkConfig:
    """The self-play run's network (`experiments/alphazero_dab.py`): 32 channels, 4 blocks, 16/64 value widths."""
    return NetworkConfig(32, 4, 16, 64)


@dataclasses.dataclass(frozen=True)
class CeilingConfig:
    """Settings of `CeilingLearner` (they tie a checkpoint folder).

    Attributes:
        network: the network's widths (`jaxgames.networks.dots_and_boxes.NetworkConfig`).
        learning_rate: AdamW learning rate.
        weight_decay: AdamW decoupled weight decay.
        max_grad_norm: global gradient-norm clip (as the self-play learner's).
        batch_size: positions per AdamW step.
        steps_per_iteration: AdamW steps per iteration.
        train_positions: labelled random-play positions drawn once per run.

    Raises:
        ValueError, TypeError: a count that is not a positive int, a rate that is not finite and positive
            (weight decay: not negative), a training set that does not fit in memory.
    """

    network: NetworkConfig = dataclasses.field(default_factory=default_network)
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    batch_size: int = 256
    steps_per_iteration: int = 50
    train_positions: int = 1_500_000

    def __post_init__(self):
        if not isinstance(self.network, NetworkConfig):
            raise TypeError(f"network must be a dots_and_boxes NetworkConfig; got {type(self.network).__name__}")
        for name in ("batch_size", "steps_per_iteration", "train_positions"):
            checks.positive_int(name, getattr(self, name))
        self.alphazero_config()  # the learning rate and weight decay, checked as the self-play learner checks them
        board = _nbytes(jax.eval_shape(lambda: rules.empty_board(*SIZE)))
        E = rules.geometry(*SIZE).num_edges
        checks.check_memory({"train_positions": (self.train_positions, self.train_positions * (board + E + 4)
                                                 + min(self.train_positions, CHUNK) * 4096)},
                            what="the training set")

    def alphazero_config(self) -> az.AlphaZeroConfig:
        """The self-play learner's config of the same network, loss and optimiser (3x3, margin values)."""
        return az.AlphaZeroConfig(board_sizes=(SIZE,), network=self.network, value_target="margin",
                                  learning_rate=self.learning_rate, weight_decay=self.weight_decay,
                                  max_grad_norm=self.max_grad_norm, batch_size=self.batch_size)


def _nbytes(tree) -> int:
    return int(sum(np.prod(x.shape, dtype=np.int64) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree)))


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override; ``--help`` lists them).

    Attributes:
        learner: the supervised learner (`CeilingConfig`; flat keys work: ``channels=64``, ``batch_size=128``).
        iterations: stop after this many iterations in all (a resumed run goes on up to it).
        budget_minutes: wall-clock minutes of this call (none: no budget); the data, evaluations and
            checkpoints count too, the curve's minutes only the training steps.
        eval_every: iterations between evaluations (the untrained network is evaluated too).
        eval_positions: held-out random-play positions of the optimal-move rate.
        seed: PRNG seed: the held-out positions are random_positions(3, 3, key(seed), eval_positions), as in
            experiments/alphazero_dab.py; the network and the training set come from subkeys.
        checkpoint_every: iterations between checkpoints.
        compare: a results folder of experiments/alphazero_dab.py (its checkpoints/history.json or
            curves.csv) to compare with at equal training minutes, or several separated by commas, the
            consecutive stages of one training (`selfplay_curve`; none: no comparison).
        out: results folder.
        overwrite: replace another configuration's results in out.
        progress: show a progress bar.
    """

    learner: CeilingConfig = dataclasses.field(default_factory=CeilingConfig)
    iterations: int = 600
    budget_minutes: Optional[float] = None
    eval_every: int = 50
    eval_positions: int = 5000
    seed: int = 0
    checkpoint_every: int = 10
    compare: Optional[str] = None
    out: str = "results/dab_supervised_ceiling"
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self):
        if not isinstance(self.learner, CeilingConfig):
            raise TypeError(f"learner must be a CeilingConfig; got {type(self.learner).__name__}")
        checks.non_negative_int("iterations", self.iterations)
        for name in ("eval_every", "eval_positions", "checkpoint_every"):
            checks.positive_int(name, getattr(self, name))
        checks.integer("seed", self.seed, 0, 2**31 - 1)
        if self.budget_minutes is not None:
            checks.positive_float("budget_minutes", self.budget_minutes)
        if self.compare is not None:
            for folder in compare_folders(self.compare):
                selfplay_history_file(folder)


# ----------------------------------------------------------------------------- labels and data
def solver_targets(solution: solver.Solution, boards: rules.Board) -> tuple[jax.Array, jax.Array]:
    """The targets a perfect self-play would give positions (module docstring).

    Args:
        solution: the 3x3 `solver.Solution`.
        boards: `rules.Board` ``[N]`` of non-terminal positions.

    Returns:
        ``(optimal, value)``: bool ``[N, E]``, the moves that keep the exact value; float32 ``[N]``,
        ``(scores[mover] - scores[opponent] + V) / num_boxes``.
    """
    av = solution.batch_action_values(boards.edges)  # int32 [N, E]
    legal = av != solver.ILLEGAL
    best = jnp.max(jnp.where(legal, av, jnp.iinfo(jnp.int32).min), axis=-1)
    best = jnp.where(jnp.any(legal, axis=-1), best, 0)  # a finished game: nothing left to win
    optimal = legal & (av == best[:, None])
    mover = boards.player.astype(jnp.int32)
    scores = boards.scores.astype(jnp.int32)
    margin = jnp.take_along_axis(scores, mover[:, None], 1)[:, 0] - jnp.take_along_axis(scores, 1 - mover[:, None], 1)[:, 0]
    scale = nets.value_scale("margin", rules.geometry(*SIZE).num_boxes)
    return optimal, ((margin + best) / scale).astype(jnp.float32)


class Dataset(NamedTuple):
    """Labelled positions (the training set; ``N = train_positions``).

    Attributes:
        board: `rules.Board` ``[N]``: the positions (stored as `az.Sample.board`).
        optimal: bool ``[N, E]``: the value-keeping moves (the policy target is uniform over them).
        value: float32 ``[N]``: the value target in network units (`solver_targets`).
    """

    board: rules.Board
    optimal: jax.Array
    value: jax.Array


def make_dataset(solution: solver.Solution, key: jax.Array, num_positions: int) -> Dataset:
    """``num_positions`` random-play 3x3 positions with their `solver_targets`, drawn in chunks of `CHUNK`."""
    parts = []
    for i, start in enumerate(range(0, num_positions, CHUNK)):
        states = random_positions(*SIZE, jax.random.fold_in(key, i), min(CHUNK, num_positions - start))
        optimal, value = solver_targets(solution, states.board)
        parts.append(Dataset(states.board, optimal, value))
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)


@functools.lru_cache(maxsize=1)
def solution_3x3() -> solver.Solution:
    """The solved 3x3 table (about 2 s; 16.8 MB), solved once per process."""
    return solver.solve(*SIZE)


# ----------------------------------------------------------------------------- the learner
@struct.dataclass
class CeilingState:
    """What training carries between iterations (one checkpoint; the training set is not in it).

    Attributes:
        params: the network parameters.
        opt_state: Optax state of `az.make_optimizer`.
        key: uint32 ``[2]``: raw PRNG key data.
        iteration: int32 ``[]``: iterations done.
    """

    params: dict
    opt_state: tuple
    key: jax.Array
    iteration: jax.Array


@functools.lru_cache(maxsize=8)
def make_step(config: CeilingConfig):
    """The jitted AdamW step of a config (built once per config value).

    Returns:
        ``step(params, opt_state, data, key) -> (params, opt_state, metrics)``: ``batch_size``
        positions of the `Dataset` ``data`` (an argument, not a constant) drawn with replacement,
        each through a random symmetry; metrics float32 scalars ``loss``, ``policy_loss``,
        ``value_loss``, ``policy_accuracy``, ``grad_norm``. Consumes ``params`` and ``opt_state``.
    """
    azc = config.alphazero_config()
    optimizer = az.make_optimizer(azc)
    num_syms = len(symmetry.symmetries(*SIZE).names)

    def loss_fn(params, samples):
        m = az.losses(azc, params, SIZE, samples)
        loss = m["policy_loss"] + azc.value_loss_weight * m["value_loss"]
        return loss, {**m, "loss": loss}

    def step(params, opt_state, data, key):
        idx_key, sym_key = jax.random.split(key)
        n = data.value.shape[0]
        idx = jax.random.randint(idx_key, (config.batch_size,), 0, n)
        batch = jax.tree.map(lambda x: x[idx], data)
        target = batch.optimal.astype(jnp.float32)
        target = target / jnp.maximum(jnp.sum(target, axis=-1, keepdims=True), 1.0)
        samples = az.Sample(board=batch.board, policy=target, value=batch.value)
        samples = az.augment(SIZE, samples, jax.random.randint(sym_key, (config.batch_size,), 0, num_syms))
        grads, metrics = jax.grad(loss_fn, has_aux=True)(params, samples)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return optax.apply_updates(params, updates), opt_state, metrics

    return jax.jit(step, donate_argnums=(0, 1))


_EXECUTABLES: dict = {}
"""The compiled `make_step` per ``(config, train_positions)``: compiled once per process, before the timed steps."""


class CeilingLearner:
    """Supervised learning on solver labels as a learner of the spine (`jaxgames.learners.loop.train`).

    ``init(key)`` initialises the network from a subkey and draws the training set (`make_dataset`)
    from another; the set is held here, not in the state: it is a function of the key, so a resumed
    run redraws the same one. ``update(state)`` does ``steps_per_iteration`` jitted steps
    (`make_step`: separate calls, since XLA on CPU runs the convolution gradients much slower
    inside a loop, `az.make_update_step`); its metrics are the steps' means, ``update_seconds``
    (the steps' wall-clock seconds) and, in the update that compiles the step (once per process, config
    and training-set size), ``compile_seconds``, spent before the timed steps and so outside ``update_seconds``.

    Args:
        config: `CeilingConfig`.
        solution: the 3x3 `solver.Solution` (default: `solution_3x3`).

    Attributes:
        data: the `Dataset` (after ``init``). data_seconds: seconds its drawing and labelling took.
    """

    name = "supervised_ceiling"

    def __init__(self, config: CeilingConfig, solution: solver.Solution | None = None):
        if not isinstance(config, CeilingConfig):
            raise TypeError(f"config must be a CeilingConfig; got {type(config).__name__}")
        self.config = config
        self.solution = solution if solution is not None else solution_3x3()
        self.step = make_step(config)
        self.data, self.data_seconds, self._data_key = None, 0.0, None

    def init(self, key: jax.Array) -> CeilingState:
        net_key, data_key, key = jax.random.split(key, 3)
        raw = np.asarray(jax.random.key_data(data_key)).tobytes()
        if self._data_key != raw:
            start = time.perf_counter()
            self.data = jax.block_until_ready(make_dataset(self.solution, data_key, self.config.train_positions))
            self.data_seconds, self._data_key = time.perf_counter() - start, raw
        params = nets.init_params(self.config.network, net_key)
        return CeilingState(params=params, opt_state=az.make_optimizer(self.config.alphazero_config()).init(params),
                            key=jax.random.key_data(key), iteration=jnp.int32(0))

    def update(self, state: CeilingState) -> tuple[CeilingState, dict]:
        if self.data is None:
            raise RuntimeError("call init(key) first: it draws the training set")
        key = jax.random.wrap_key_data(state.key)
        key, *step_keys = jax.random.split(key, 1 + self.config.steps_per_iteration)
        params, opt_state, steps = state.params, state.opt_state, []
        compile_seconds = None
        cache_key = (self.config, int(self.data.value.shape[0]))
        executable = _EXECUTABLES.get(cache_key)
        if executable is None:  # compiled outside the timed steps (class docstring)
            start = time.perf_counter()
            executable = _EXECUTABLES[cache_key] = self.step.lower(params, opt_state, self.data, step_keys[0]).compile()
            compile_seconds = time.perf_counter() - start
        start = time.perf_counter()
        for k in step_keys:
            params, opt_state, m = executable(params, opt_state, self.data, k)
            steps.append(m)
        steps = jax.device_get(steps)  # waits for the last step
        seconds = time.perf_counter() - start
        metrics = {k: float(np.mean([m[k] for m in steps])) for k in steps[0]}
        metrics["update_seconds"] = seconds
        if compile_seconds is not None:
            metrics["compile_seconds"] = compile_seconds
        return state.replace(params=params, opt_state=opt_state, key=jax.random.key_data(key),
                             iteration=state.iteration + 1), metrics

    def iteration(self, state: CeilingState) -> int:
        return int(state.iteration)


# ----------------------------------------------------------------------------- evaluation
class CeilingEvaluator:
    """The raw network's optimal-move rate on fixed held-out positions (a `loop.Evaluation` hook).

    The positions are ``random_positions(3, 3, key(seed), num_positions)`` and the raw policy is
    ``AlphaZeroAgent(search=False)`` with the tie keys of `ProgressEvaluator`, so the rates
    compare with the self-play run's ``optimal_rate_raw`` like with like.

    Returns (call): ``({"optimal_rate_raw": ..., "optimal_rate_raw_<stage>": ...}, False)``, floats
    (NaN for a stage without positions); stages `STAGES`.
    """

    def __init__(self, network: NetworkConfig, solution: solver.Solution, num_positions: int, seed: int):
        self.network, self.solution, self.seed = network, solution, seed
        self.env = DotsAndBoxes(*SIZE)
        self.positions = random_positions(*SIZE, jax.random.key(seed), checks.positive_int("num_positions", num_positions))
        self.edges = np.asarray(self.positions.board.edges)
        self.stages = stages(self.edges)

    def optimal(self, params, iteration: int) -> np.ndarray:
        """bool ``[num_positions]``: whether the raw network's move keeps the exact value."""
        key = jax.random.fold_in(jax.random.fold_in(jax.random.key(self.seed + 1), int(iteration)), 0)
        agent = AlphaZeroAgent(params, network=self.network, value_target="margin", search=False, name="raw")
        n = self.edges.shape[0]
        actions = agent.compiled(self.env)(self.positions, jax.random.split(key, n), self.positions.current_player)
        return solver.optimal_move_rate(self.solution, self.edges, np.asarray(actions))[1]

    def __call__(self, state) -> tuple[dict, bool]:
        ok = self.optimal(state.params, int(state.iteration))
        out = {"optimal_rate_raw": float(ok.mean())}
        for name, mask in self.stages.items():
            out[f"optimal_rate_raw_{name}"] = float(ok[mask].mean()) if mask.any() else float("nan")
        return out, False


# ----------------------------------------------------------------------------- the comparison
def selfplay_history_file(folder) -> pathlib.Path:
    """The history of a self-play results folder: ``checkpoints/history.json``, else ``curves.csv``.

    Raises:
        ValueError: ``folder`` is not a folder or holds neither file (the message names ``compare``).
    """
    path = pathlib.Path(folder)
    if not path.is_dir():
        raise ValueError(f"compare must be a results folder of experiments/alphazero_dab.py; {str(folder)!r} is not a folder")
    for f in (path / "checkpoints" / loop.HISTORY_NAME, path / "curves.csv"):
        if f.is_file():
            return f
    raise ValueError(f"compare={str(folder)!r} holds neither checkpoints/{loop.HISTORY_NAME} nor curves.csv")


def _number(v):
    if v is None or v == "":
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def compare_folders(compare) -> list[str]:
    """The folders of ``compare``: one, or several separated by commas (consecutive stages of one training)."""
    return [part.strip() for part in str(compare).split(",")]


def selfplay_curve(compare) -> list[dict]:
    """The evaluation rows of a self-play run, each with ``training_minutes`` (the sum of
    ``selfplay_seconds + update_seconds`` over the iterations up to it, / 60).

    ``compare`` may name several folders separated by commas: consecutive stages of one training
    (a later stage started from an earlier one's network, e.g. with ``init_weights=``). Each later
    stage's iterations and minutes then count on from the end of the stages before it.

    Raises:
        ValueError: an unreadable history, or one without those columns or ``optimal_rate_raw``.
    """
    out, offset_minutes, offset_iterations = [], 0.0, 0
    for folder in compare_folders(compare):
        rows, minutes, iterations = _stage_curve(folder)
        out += [{**r, "iteration": r["iteration"] + offset_iterations,
                 "training_minutes": r["training_minutes"] + offset_minutes} for r in rows]
        offset_minutes += minutes
        offset_iterations += iterations
    return out


def _stage_curve(folder) -> tuple[list[dict], float, int]:
    """One folder of `selfplay_curve`: its evaluation rows, its training minutes and its last iteration."""
    path = selfplay_history_file(folder)
    try:
        if path.suffix == ".json":
            rows = json.loads(path.read_text())["history"]
        else:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"compare: {path} is unreadable ({err})") from None
    rows = [{k: _number(v) for k, v in r.items()} for r in rows]
    missing = [c for c in ("iteration", "selfplay_seconds", "update_seconds") if not rows or c not in rows[0]]
    if missing:
        raise ValueError(f"compare: {path} has no {', '.join(missing)} (not a history of experiments/alphazero_dab.py)")
    out, seconds = [], 0.0
    for r in sorted(rows, key=lambda r: r["iteration"]):
        seconds += (r.get("selfplay_seconds") or 0.0) + (r.get("update_seconds") or 0.0)
        if r.get("optimal_rate_raw") is not None:
            out.append({**r, "training_minutes": seconds / 60})
    if not out:
        raise ValueError(f"compare: {path} has no evaluation rows (optimal_rate_raw)")
    return out, seconds / 60, int(max(r["iteration"] for r in rows))


def ceiling_at(curve: list[dict], minutes: float, key: str = "optimal_rate_raw") -> tuple[float, bool]:
    """The ceiling's ``key`` at ``minutes`` of training: linear interpolation between its evaluations,
    and past the last one that last value; also whether it was held so (the ceiling ran shorter)."""
    pts = sorted((r["training_minutes"], r[key]) for r in curve if r.get(key) is not None)
    if not pts:
        return float("nan"), False
    m, v = np.array(pts, dtype=float).T
    return float(np.interp(minutes, m, v)), bool(minutes > m[-1])


def comparison_rows(ceiling: list[dict], selfplay: list[dict]) -> list[dict]:
    """One row per self-play evaluation: its rates and the ceiling's at the same training minutes."""
    keys = ["optimal_rate_raw"] + [f"optimal_rate_raw_{name}" for name, _, _ in STAGES]
    rows = []
    for r in selfplay:
        row = {"iteration": int(r["iteration"]), "training_minutes": r["training_minutes"],
               "selfplay_raw": r.get("optimal_rate_raw"), "selfplay_search": r.get("optimal_rate_search")}
        for k in keys:
            tag = k.replace("optimal_rate_raw", "raw")
            value, held = ceiling_at(ceiling, r["training_minutes"], k)
            row[f"ceiling_{tag}"] = value
            if k == "optimal_rate_raw":
                row["ceiling_held"] = held
                row["gap_raw"] = value - r["optimal_rate_raw"]
            elif r.get(k) is not None:
                row[f"selfplay_{tag}"] = r[k]
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- outputs
def ceiling_curve(result: loop.TrainResult) -> list[dict]:
    """The evaluations of a run with their ``training_minutes`` (``update_seconds`` summed, / 60)."""
    minutes, seconds = {0: 0.0}, 0.0
    for r in result.history:
        seconds += r.get("update_seconds", 0.0)
        minutes[r["iteration"]] = seconds / 60
    return [{"iteration": e["iteration"], "training_minutes": minutes.get(e["iteration"], float("nan")),
             **{k: v for k, v in e.items() if k.startswith("optimal_rate")}} for e in result.evaluations]


def draw(rd: ResultsDir, curve: list[dict], selfplay: list[dict] | None) -> None:
    """``ceiling.png``: the optimal-move rate against training minutes, overall (with the self-play run's)
    and by stage."""
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_all, ax_stage = fig.subplots(1, 2)
    m = [r["training_minutes"] for r in curve]
    ax_all.plot(m, [r["optimal_rate_raw"] for r in curve], "o-", label="supervised ceiling, raw network")
    if selfplay:
        sm = [r["training_minutes"] for r in selfplay]
        ax_all.plot(sm, [r["optimal_rate_raw"] for r in selfplay], "s-", label="self-play, raw network")
        if all(r.get("optimal_rate_search") is not None for r in selfplay):
            ax_all.plot(sm, [r["optimal_rate_search"] for r in selfplay], "^--", label="self-play, with search")
    ax_all.set_title("Optimal-move rate, 3x3 random-play positions")
    for name, lo, hi in STAGES:
        k = f"optimal_rate_raw_{name}"
        line, = ax_stage.plot(m, [r[k] for r in curve], "o-", label=f"ceiling, {name} ({lo}-{hi} edges)")
        if selfplay and all(r.get(k) is not None for r in selfplay):
            ax_stage.plot(sm, [r[k] for r in selfplay], "s--", color=line.get_color(), label=f"self-play, {name}")
    ax_stage.set_title("Raw network by stage")
    for ax in (ax_all, ax_stage):
        ax.axhline(0.95, color="k", ls=":", lw=1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("training minutes (update steps; self-play: self-play + updates)")
        ax.grid(True, lw=0.3)
        ax.legend(fontsize=7)
    rd.save_figure(fig, "ceiling.png", dpi=110, bbox_inches="tight")


def readme_text(config: Config, argv, seconds: float, learner: CeilingLearner, result: loop.TrainResult,
                curve: list[dict], seen_rows: list[dict], comparison: list[dict] | None) -> str:
    """``README.md``: the command, the training, the ceiling's curve and the comparison."""
    lc = config.learner
    pct = {"optimal_rate_raw": ".3f", **{f"optimal_rate_raw_{n}": ".3f" for n, _, _ in STAGES},
           "training_minutes": ".2f"}
    lines = [
        "# Supervised ceiling: the AlphaZero network on exact solver labels (3x3 Dots-and-Boxes)", "",
        f"Source: {CITATION}.", "",
        f"Command: `{command_line('experiments/dab_supervised_ceiling.py', argv)}`; settings in "
        f"[config.json](config.json). Device: {jax.devices()[0].platform}. This call took {seconds / 60:.1f} min.", "",
        f"Training: network {lc.network}; {lc.train_positions:,} random-play positions labelled by the solver "
        f"(drawn and labelled in {learner.data_seconds:.0f} s); {lc.steps_per_iteration} AdamW steps (learning rate {lc.learning_rate:g}, weight decay "
        f"{lc.weight_decay:g}) of {lc.batch_size} positions per iteration, a random symmetry each. "
        f"{az.length_text(result)}; {sum(r.get('update_seconds', 0.0) for r in result.history) / 60:.2f} training "
        f"minutes (the update steps only: not the step's compilation, "
        f"{sum(r.get('compile_seconds', 0.0) for r in result.history):.0f} s, which a self-play run's first iteration "
        "includes, nor data, evaluations and checkpoints). Curves: [curves.csv](curves.csv), [ceiling.png](ceiling.png).", "",
        f"## Raw optimal-move rate, {config.eval_positions:,} held-out random-play positions (seed {config.seed})", "",
        experiment.markdown_table(curve, ["iteration", "training_minutes", "optimal_rate_raw"]
                                  + [f"optimal_rate_raw_{n}" for n, _, _ in STAGES], formats=pct,
                                  headers={"training_minutes": "training min", "optimal_rate_raw": "all",
                                           **{f"optimal_rate_raw_{n}": f"{n} ({lo}-{hi} edges)" for n, lo, hi in STAGES}}),
    ]
    lines += ["", "Memorisation check: the final network on the held-out positions whose edge set occurs in the "
              "training set (seen) and on the others (unseen):", "",
              experiment.markdown_table(seen_rows, ["stage", "positions", "in_training_set", "rate_seen", "rate_unseen"],
                                        formats={"in_training_set": ".3f", "rate_seen": ".3f", "rate_unseen": ".3f"})]
    if comparison is not None:
        cols = [c for c in comparison[0] if c not in ("ceiling_held",)]
        lines += ["", f"## Beside the self-play run `{config.compare}` at equal training minutes "
                  "([comparison.csv](comparison.csv))", "",
                  "Self-play minutes are `selfplay_seconds + update_seconds` summed; the ceiling's rate is "
                  "interpolated between its evaluations (* : held at its last one, it ran shorter). The held-out "
                  "positions are the same set only if both runs used the same seed and eval_positions.", "",
                  experiment.markdown_table(
                      [{**r, **{c: f"{r[c]:.3f}{'*' if r['ceiling_held'] else ''}" for c in cols if c.startswith("ceiling")}}
                       for r in comparison],
                      cols, formats={c: ".3f" for c in cols if c != "iteration" and not c.startswith("ceiling")})]
    return "\n".join(lines) + "\n"


def run(config: Config, argv=()) -> dict:
    """Trains (resuming), evaluates, writes every output into ``config.out``; returns a summary dict.

    Raises:
        jaxgames.experiment.SettingError: an unreadable ``compare`` history (before anything is written).
        jaxgames.experiment.ResultsDirLocked, ConfigMismatch: see `jaxgames.experiment.ResultsDir`.
        jaxgames.learners.loop.NonFiniteLoss: training diverged (the last good checkpoint is kept).
    """
    with experiment.up_front():
        selfplay = None if config.compare is None else selfplay_curve(config.compare)
    start = time.perf_counter()
    solution = solution_3x3()
    learner = CeilingLearner(config.learner, solution)
    evaluator = CeilingEvaluator(config.learner.network, solution, config.eval_positions, config.seed)
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:
        result = loop.train(
            learner, num_iterations=config.iterations, key=jax.random.key(config.seed),
            checkpoint_dir=pathlib.Path(config.out) / "checkpoints", checkpoint_every=config.checkpoint_every,
            budget_minutes=config.budget_minutes, progress=config.progress, progress_keys=("loss", "value_loss"),
            evaluations=[loop.Evaluation(evaluator, every=config.eval_every, at_start=True)],
            overwrite=config.overwrite, neutral=NEUTRAL,
        )
        curve = ceiling_curve(result)
        minutes = {r["iteration"]: r["training_minutes"] for r in curve}
        seconds = 0.0
        rows = [dict(curve[0])] if curve and curve[0]["iteration"] == 0 else []
        for r in result.history:
            seconds += r.get("update_seconds", 0.0)
            rows.append({"iteration": r["iteration"], "training_minutes": minutes.get(r["iteration"], seconds / 60),
                         **{k: v for k, v in r.items() if k != "iteration"}})
        rd.write_csv("curves.csv", rows)
        comparison = None if selfplay is None else comparison_rows(curve, selfplay)
        if comparison is not None:
            rd.write_csv("comparison.csv", comparison)
        draw(rd, curve, selfplay)
        seen = np.isin(np.asarray(edge_set_index(jnp.asarray(evaluator.edges))),
                       np.asarray(edge_set_index(learner.data.board.edges)))
        ok = evaluator.optimal(result.state.params, int(result.state.iteration))
        seen_rows = [{"stage": name, "positions": int(mask.sum()), "in_training_set": float(seen[mask].mean()),
                      "rate_seen": float(ok[mask & seen].mean()) if (mask & seen).any() else None,
                      "rate_unseen": float(ok[mask & ~seen].mean()) if (mask & ~seen).any() else None}
                     for name, mask in {"all": np.ones_like(seen), **evaluator.stages}.items()]
        text = readme_text(config, argv, time.perf_counter() - start, learner, result, curve, seen_rows, comparison)
        rd.write_text("README.md", text)
    print(text)
    return {"result": result, "curve": curve, "comparison": comparison, "seen": seen_rows}


def main(argv=None):
    """Entry point: ``python experiments/dab_supervised_ceiling.py [key=value ...]`` (``--help`` lists every setting)."""
    return experiment.main(Config, run, argv, prog="experiments/dab_supervised_ceiling.py",
                           summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
