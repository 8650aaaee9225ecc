"""The one training spine: every learner is ``init(key) -> state`` and ``update(state) -> (state, metrics)``.

`train` alone owns what every learner needs around its iterations: Orbax
checkpoints and exact resume, the wall-clock budget, the metric history,
the progress bar, evaluation hooks and the stop on a non-finite loss. In
PureJaxRL's spirit the learner is pure where it can be (its jitted pieces
take and return the state, and the PRNG key lives in the state), so an
iteration depends on nothing but the state it is given, and a run that is
stopped and resumed ends with exactly the state and history of one that never
stopped.

Vocabulary, used by every learner and experiment:

* ``num_iterations``: the run's total iterations (an AlphaZero iteration, a
  Q-snake generation, a DDPG iteration: one agent move in every game); a
  resumed run does the rest.
* ``key``: the run's PRNG key (`jax.random.key`); only a fresh run uses it.
* ``checkpoint_dir``: the run's checkpoint folder (`jaxgames.checkpoint`).
* ``budget_minutes``: wall-clock minutes of this call.
* ``callback``: ``callback(iteration, metrics, result_so_far)`` after each iteration.
* an evaluation hook (`Evaluation`): ``fn(state) -> (metrics, promote)``
  every ``every`` iterations; ``promote`` asks the learner to make the
  current network its best (``learner.promote``).

Adding a learner: write a config (a frozen dataclass, hashable) and a class with

* ``config``: the config (its fields tie a checkpoint folder to the run);
* ``init(key) -> state``: a pytree of arrays (`flax.struct` dataclass), raw
  key data inside it rather than a typed key;
* ``update(state) -> (state, metrics)``: one iteration, or a chunk of several
  (DDPG); metrics a dict whose scalar entries go into the history (one row
  per update; other entries reach only ``callback``). It may donate (delete)
  the arrays of the state it is given: `train` reads only the returned state;
* ``iteration(state) -> int``: iterations the state has done;
* optionally ``promote(state) -> state`` (for evaluation hooks that promote)
  and ``name`` (the progress bar's label).

Then ``train(learner, num_iterations=..., key=...)`` gives it everything above.
The tabular learners (`jaxgames.learners.tabular`) stay outside it: a whole
sweep of theirs is one compiled call, which an iteration-level driver would
split into many.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import time
from typing import Any, Callable, NamedTuple, Protocol, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from jaxgames import checks
from jaxgames.checkpoint import Checkpointer
from jaxgames.experiment import NEUTRAL_FIELDS, atomic_write_bytes, config_dict

HISTORY_NAME = "history.json"
"""The metric history beside the checkpoints; rows past the restored step are dropped on resume."""


class Learner(Protocol):
    """What `train` drives (see the module docstring)."""

    config: Any

    def init(self, key: jax.Array) -> Any: ...

    def update(self, state: Any) -> tuple[Any, dict]: ...

    def iteration(self, state: Any) -> int: ...


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """An evaluation hook: ``fn(state) -> (metrics, promote)`` after every ``every``-th iteration.

    Attributes:
        fn: the evaluation. It must draw its randomness from the state (or a
            fixed key and the iteration), so a resumed run evaluates alike.
        every: iterations between calls (>= 1).
        at_start: also evaluate the state a fresh run starts from (iteration 0).
        name: prefix of its metrics in the history (``name/metric``); "" for none.
    """

    fn: Callable[[Any], tuple[dict, bool]]
    every: int = 1
    at_start: bool = False
    name: str = ""

    def __post_init__(self):
        checks.positive_int("every", self.every)


class TrainResult(NamedTuple):
    """What `train` returns.

    Attributes:
        state: the final learner state.
        history: one dict per update done (restored ones included), oldest
            first: the learner's scalar metrics, ``iteration``, ``seconds``
            and the metrics of evaluations run after that iteration.
        evaluations: one dict per evaluation: ``iteration``, ``evaluation`` (the
            hook's name), its metrics and ``promoted``.
        resumed_from: the iteration restored from the checkpoint (0 for a fresh run).
        stopped_by_budget: the wall-clock budget ended the run before ``num_iterations``.
    """

    state: Any
    history: list
    evaluations: list
    resumed_from: int
    stopped_by_budget: bool


class NonFiniteLoss(FloatingPointError):
    """A loss became NaN or infinite; the run stopped before checkpointing that state."""


def _is_key(x) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _uncommitted(tree):
    """Host round trip: restored arrays come back committed to a device, and jit caches
    compiled code per input commitment, so take uncommitted copies like a fresh state's."""
    def copy(x):
        if _is_key(x):
            data = jnp.asarray(np.asarray(jax.random.key_data(x)))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
        return jnp.asarray(np.asarray(x))

    return jax.tree.map(copy, tree)


def _scalar(v):
    """``v`` as a JSON scalar, or None if it is not a scalar."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    a = np.asarray(v) if isinstance(v, (np.ndarray, np.generic, jax.Array)) else None
    if a is None or a.shape != () or a.dtype == object:
        return None
    if a.dtype == np.bool_:
        return bool(a)
    if np.issubdtype(a.dtype, np.integer):
        return int(a)
    return float(a)


def scalars(metrics: dict) -> dict:
    """The scalar entries of ``metrics`` as Python bools, ints, floats and strings (arrays dropped)."""
    out = {}
    for k, v in metrics.items():
        s = _scalar(v)
        if s is not None or v is None:
            out[k] = s
    return out


def _bad_losses(row: dict) -> list[str]:
    return [f"{k}={v}" for k, v in row.items()
            if "loss" in k and isinstance(v, float) and not math.isfinite(v)]


def run_identity(config: Any, key: jax.Array) -> dict:
    """The settings a checkpoint folder is tied to: the config's fields and the key's data."""
    d = config_dict(config)
    d["key"] = np.asarray(jax.random.key_data(key)).tolist()
    return d


def _read_json(path: pathlib.Path) -> dict:
    try:
        d = json.loads(path.read_text())
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def train(
    learner: Learner,
    *,
    num_iterations: int,
    key: jax.Array,
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_every: int = 1,
    budget_minutes: float | None = None,
    evaluations: Sequence[Evaluation] = (),
    callback: Callable[[int, dict, TrainResult], None] | None = None,
    progress: bool = False,
    progress_keys: Sequence[str] = ("loss",),
    max_to_keep: int = 2,
    overwrite: bool = False,
    neutral: Sequence[str] = (),
    initial_state: Callable[[Any], Any] | None = None,
) -> TrainResult:
    """Runs ``learner`` to ``num_iterations`` iterations, resuming from ``checkpoint_dir``'s latest step.

    Each step of the checkpoint holds the whole state; ``history.json``
    beside it holds the history and evaluations, written before the step, so a
    resume keeps exactly the rows up to the restored step. A checkpoint is saved
    every ``checkpoint_every`` iterations, at the last one and when the budget
    stops the run. The budget never starts an iteration that the last one's
    duration says would overrun it.

    Args:
        learner: a `Learner`.
        num_iterations: total iterations (>= 0); one already reached trains nothing.
        key: PRNG key of a fresh run (part of the checkpoint's identity).
        checkpoint_dir: the checkpoint folder, or None for none.
        checkpoint_every: iterations between checkpoints (>= 1).
        budget_minutes: wall-clock minutes for this call (> 0), or None.
        evaluations: `Evaluation` hooks.
        callback: ``callback(iteration, metrics, result)`` after each iteration
            (``metrics`` as the learner returned them, arrays included), before
            its checkpoint.
        progress: show a tqdm bar.
        progress_keys: history entries shown on the bar.
        max_to_keep: checkpoint steps kept (>= 1).
        overwrite: replace a checkpoint folder of another run instead of refusing it.
        neutral: config fields that do not tie the folder (e.g. a report's settings).
        initial_state: ``initial_state(state) -> state`` applied to a fresh
            run's state (e.g. a fine-tune's starting parameters).

    Returns:
        A `TrainResult`.

    Raises:
        ValueError: a bad ``num_iterations``, ``checkpoint_every``, ``budget_minutes``.
        NonFiniteLoss: a loss became NaN or infinite (the run stops; the last
            checkpoint is the last good state).
        jaxgames.experiment.ConfigMismatch: ``checkpoint_dir`` holds a run of
            another config or key (nothing is written).
        jaxgames.experiment.ResultsDirLocked: another live run uses ``checkpoint_dir``.
    """
    num_iterations = checks.non_negative_int("num_iterations", num_iterations)
    checkpoint_every = checks.positive_int("checkpoint_every", checkpoint_every)
    max_to_keep = checks.positive_int("max_to_keep", max_to_keep)
    budget_seconds = None if budget_minutes is None else 60.0 * checks.positive_float("budget_minutes", budget_minutes)
    for ev in evaluations:
        if not isinstance(ev, Evaluation):
            raise TypeError(f"evaluations must be Evaluation hooks; got {type(ev).__name__}")
    promote = getattr(learner, "promote", None)
    started = time.perf_counter()
    ckpt = None
    if checkpoint_dir is not None:
        ckpt = Checkpointer(checkpoint_dir, run_identity(learner.config, key), max_to_keep=max_to_keep,
                            overwrite=overwrite, neutral=tuple(NEUTRAL_FIELDS) + tuple(neutral))
    bar = None
    try:
        state = learner.init(key)
        history: list = []
        evals: list = []
        resumed_from = 0
        restored = ckpt.latest(template=state) if ckpt is not None else None
        if restored is not None:
            resumed_from, state = restored
            state = _uncommitted(state)
            stored = _read_json(ckpt.directory / HISTORY_NAME)
            history = [r for r in stored.get("history", []) if r.get("iteration", 0) <= resumed_from]
            evals = [r for r in stored.get("evaluations", []) if r.get("iteration", 0) <= resumed_from]
        elif initial_state is not None:
            state = initial_state(state)

        def result(stopped=False):
            return TrainResult(state, history, evals, resumed_from, stopped)

        def evaluate(it: int, row: dict | None):
            nonlocal state
            for ev in evaluations:
                due = (it == 0 and ev.at_start) or (it > 0 and it // ev.every > before // ev.every)
                if not due or any(r["iteration"] == it and r["evaluation"] == ev.name for r in evals):
                    continue
                metrics, promoted = ev.fn(state)
                prefix = f"{ev.name}/" if ev.name else ""
                metrics = {prefix + k: v for k, v in scalars(metrics).items()}
                if promoted:
                    if promote is None:
                        raise TypeError(f"{type(learner).__name__} has no promote(state) for evaluation {ev.name!r}")
                    state = promote(state)
                evals.append({"iteration": it, "evaluation": ev.name, **metrics, "promoted": bool(promoted)})
                if row is not None:
                    row.update(metrics)

        def save(it: int):
            if ckpt is None or it in ckpt.steps():
                return
            if jax.process_index() == 0:  # several processes: one writer (every process saves the step)
                blob = json.dumps({"history": history, "evaluations": evals}) + "\n"
                atomic_write_bytes(ckpt.directory / HISTORY_NAME, blob.encode())
            ckpt.save(it, state)

        it = before = int(learner.iteration(state))
        if it == 0:
            evaluate(0, None)
        if progress:
            bar = tqdm(total=num_iterations, initial=min(it, num_iterations), desc=getattr(learner, "name", "train"),
                       unit="it")
        last = 0.0
        stopped = False
        while it < num_iterations:
            if budget_seconds is not None and time.perf_counter() - started + last > budget_seconds:
                stopped = True
                break
            before = it  # an update may do several iterations: cadences count the multiples it passed
            t0 = time.perf_counter()
            state, metrics = learner.update(state)
            it = int(learner.iteration(state))
            last = time.perf_counter() - t0
            row = {"iteration": it, **scalars(metrics), "seconds": last}
            bad = _bad_losses(row)
            if bad:
                good = ckpt.steps()[-1] if ckpt is not None and ckpt.steps() else None
                raise NonFiniteLoss(
                    f"iteration {it}: non-finite loss ({', '.join(bad)}); the run stopped"
                    + (f"; the last good checkpoint is step {good} in {ckpt.directory}" if good is not None else "")
                    + ". Lower the learning rate or check the settings and the starting weights.")
            evaluate(it, row)
            history.append(row)
            if callback is not None:
                callback(it, metrics, result())
            if it // checkpoint_every > before // checkpoint_every or it >= num_iterations:
                save(it)
            if bar is not None:
                bar.update(min(it, num_iterations) - min(before, num_iterations))
                shown = {k: row[k] for k in progress_keys if isinstance(row.get(k), (int, float))}
                bar.set_postfix({k: f"{v:.3g}" for k, v in shown.items()})
        save(it)
        return result(stopped)
    finally:
        if bar is not None:
            bar.close()
        if ckpt is not None:
            ckpt.close()
