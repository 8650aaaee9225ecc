"""Independent stateless Q-learners in two-player matrix games, batched over runs.

Each player keeps its own Q-function over its actions (a Flax module; a
plain table by default) and never sees the other: independent learning (El
Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And
Boxes", course report, undated, section 3.1). In every iteration both
players pick an action from their exploration policy, receive
``payoffs[p, a_row, a_col]`` and take one Optax step on the squared TD
error of the action they played (stateless: no next state, no discount)::

    loss = 1/2 (r - Q(a))^2,   so with optax.sgd(alpha):  Q(a) <- Q(a) + alpha (r - Q(a))

Exploration:

* ``epsilon_greedy``: the greedy action (ties split evenly, as OpenSpiel's
  ``QLearner``) with probability 1 - epsilon, uniform with probability epsilon.
* ``boltzmann``: softmax(Q / temperature) (OpenSpiel's ``BoltzmannQLearner``).
* ``lenient_boltzmann``: Boltzmann exploration; each reward is stored in a
  per-action buffer and when an action has collected ``leniency`` (kappa)
  rewards, its Q-value takes one step towards the *maximum* of them and the
  buffer is emptied (Panait, Tuyls & Luke 2008, JMLR 9, section 3;
  Bloembergen et al. 2015, JAIR 53, section 4.4). kappa = 1 is Boltzmann.

Frequency adjustment (FAQ; Kaisers & Tuyls, AAMAS 2010, eq. 4): with
``faq_beta`` = beta < 1 every update of action i is scaled by
``min(beta / x_i, 1)``, x_i the updating player's current probability of i
(a weight on the squared TD error; beta = 1 is plain Q-learning). The
expected update per iteration of action i's Q-value is then::

    E[dQ_i] = alpha min(x_i, beta) / kappa * (u_i - Q_i)

(i is played with probability x_i; the lenient learner updates once per
kappa plays, towards the maximum of kappa rewards, whose mean is the lenient
utility u_i), the mean-field ODE that `jaxgames.dynamics.fields.integrate_q`
integrates.

Temperature and epsilon follow a `Schedule`. Numeric hyperparameters live in
the traced `LearnerParams` (sweep them with ``vmap``); what fixes shapes or
the algorithm lives in the static `LearnerConfig`. ``make_train(payoffs,
config)`` returns a pure ``train(key, params, initial_q) -> TrainOutput``
for ONE run, which `run_sweep` vmaps over runs and chunks.

The learners compute in float32 whether or not ``jax_enable_x64`` is on,
so every setting is checked in float32 at the Python boundary
(`learner_params`, `make_train`, `initial_q_from_policy`, `run_sweep`). A
run that still goes non-finite (e.g. with an optimizer or Q-module of one's
own) is flagged in `TrainOutput.non_finite` and reported by `run_sweep`.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
import warnings
from typing import Callable, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from tqdm.auto import tqdm

from jaxgames import parallel
from jaxgames.games.matrix import MatrixGame, validate_payoffs

EXPLORATIONS = ("epsilon_greedy", "boltzmann", "lenient_boltzmann")
SCHEDULE_KINDS = {"constant": 0, "linear": 1, "exponential": 2}
ON_NON_FINITE = ("warn", "raise", "ignore")

_F32 = np.finfo(np.float32)
# The smallest temperature: the smallest normal float32 (~1.18e-38). A smaller tau is 0 or denormal in
# float32 (XLA on CPU flushes denormals to 0), so Q / tau is 0 / 0; 1 / TAU_MIN (~8.5e37) is finite.
TAU_MIN = float(_F32.tiny)
# Exponential schedules clamp end / start here (so a schedule to 0 still decays; see `Schedule`).
_MIN_RATIO = 1e-30
# Starting policies must sum to 1 within this (float32 rounding of a few probabilities is ~1e-7).
_PROB_ATOL = 1e-4


class NonFiniteRunsWarning(RuntimeWarning):
    """`run_sweep` found runs whose policies or Q-values went NaN or infinite."""


def _f32(value) -> np.ndarray:
    """``value`` cast to float32 (values beyond float32's range become +-inf, without a warning)."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.asarray(value, np.float64).astype(np.float32)


def _fold(fn, x: jax.Array) -> jax.Array:
    """``fn`` folded along the last axis, left to right: ``fn(fn(x[..., 0], x[..., 1]), x[..., 2]) ...``.

    The learners' reductions run over a handful of actions (or lenient
    slots) of thousands of vmapped runs; as chains of elementwise ops they
    fuse with their neighbours, where XLA's CPU reductions over a tiny axis
    are one slow library call each (`benchmarks/README.md`, matrix learners).
    Sums keep the order of a sequential reduction.
    """
    out = x[..., 0]
    for i in range(1, x.shape[-1]):
        out = fn(out, x[..., i])
    return out


def _pick(x: jax.Array, index: jax.Array) -> jax.Array:
    """``x[..., index]`` for a traced int ``index`` of shape ``x.shape[:-1]``, as a chain of selects (no gather)."""
    out = x[..., 0]
    for i in range(1, x.shape[-1]):
        out = jnp.where(index == i, x[..., i], out)
    return out


@struct.dataclass
class Schedule:
    """A value annealed from ``start`` to ``end`` over the run (traced, vmappable).

    value(t) at iteration t of T (t / T is clipped to [0, 1], and is exactly 1 at t = T):
      constant: start; linear: start + (end - start) t / T;
      exponential: start (end / start)^(t / T), with end / start clamped
      at 1e-30 (so an exponential schedule to 0 decays by 30 decades;
      `learner_params` refuses a temperature schedule that the clamp would
      change).

    Every value lies between the values at t = 0 and t = T as computed in
    float32 (the rounding of both formulas is monotone in t / T), so
    checking those two checks them all (`learner_params`, `run_sweep`).

    Attributes:
        start: float32 ``[]``.
        end: float32 ``[]``.
        kind: int32 ``[]``, one of `SCHEDULE_KINDS` values.
    """

    start: jax.Array
    end: jax.Array
    kind: jax.Array

    @classmethod
    def make(cls, start: float, end: float | None = None, kind: str = "constant") -> "Schedule":
        """Builds a schedule.

        Raises:
            ValueError: for an unknown kind, or values that are not finite
                in float32.
        """
        if kind not in SCHEDULE_KINDS:
            raise ValueError(f"schedule kind must be one of {list(SCHEDULE_KINDS)}; got {kind!r}")
        end = start if end is None else end
        if not np.all(np.isfinite(_f32([start, end]))):
            raise ValueError(f"schedule values must be finite in float32 (|value| <= {_F32.max:.3g}); got start={start}, end={end}")
        return cls(jnp.float32(start), jnp.float32(end), jnp.int32(SCHEDULE_KINDS[kind]))

    def value_at(self, frac) -> jax.Array:
        """The value at the fraction ``frac`` of the run (float32; clipped to [0, 1]; broadcasts)."""
        frac = jnp.clip(jnp.asarray(frac, jnp.float32), 0.0, 1.0)
        linear = self.start + (self.end - self.start) * frac
        ratio = jnp.where(self.start > 0, self.end / jnp.where(self.start > 0, self.start, 1.0), 1.0)
        exponential = self.start * jnp.power(jnp.maximum(ratio, _MIN_RATIO), frac)
        return jnp.select([self.kind == 0, self.kind == 1], [self.start, linear], exponential)

    def __call__(self, t: jax.Array, horizon: int) -> jax.Array:
        t = jnp.asarray(t, jnp.float32)
        # Exactly 1 at t >= T: under jit XLA computes t / T as t * (1 / T), which at t = T is 1 -+ 2^-24 for
        # some T (e.g. T = 41), so a linear schedule would miss its end (epsilon 0.1 -> 0 would end at 6e-9).
        return self.value_at(jnp.where(t >= horizon, 1.0, t / horizon))


@struct.dataclass
class LearnerParams:
    """Numeric hyperparameters of one run (traced; stack them to sweep).

    Attributes:
        learning_rate: float32 ``[]``, alpha, in (0, 1].
        temperature: `Schedule` of tau > 0 (Boltzmann learners).
        epsilon: `Schedule` of epsilon in [0, 1] (epsilon-greedy).
        leniency: int32 ``[]``, kappa >= 1 (lenient learner); at most
            ``LearnerConfig.max_leniency`` (`run_sweep` checks; a traced
            ``train`` cannot, and would keep only the first max_leniency of
            each kappa rewards).
        faq_beta: float32 ``[]``, beta in (0, 1] of frequency-adjusted
            Q-learning (Kaisers & Tuyls 2010); 1 is plain Q-learning.
    """

    learning_rate: jax.Array
    temperature: Schedule
    epsilon: Schedule
    leniency: jax.Array
    faq_beta: jax.Array


def learner_params(
    *,
    learning_rate: float = 0.001,
    temperature: float | tuple[float, float] = (0.5, 0.01),
    temperature_schedule: str = "linear",
    epsilon: float | tuple[float, float] = 0.1,
    epsilon_schedule: str = "constant",
    leniency: int = 5,
    faq_beta: float = 1.0,
) -> LearnerParams:
    """Validated `LearnerParams` for one run (defaults: El Kaddouri et al., section 3.2.1).

    Args:
        learning_rate: alpha in (0, 1].
        temperature: tau > 0, or ``(start, end)`` for a schedule.
        temperature_schedule: ``constant``, ``linear`` or ``exponential``.
        epsilon: in [0, 1], or ``(start, end)``.
        epsilon_schedule: as ``temperature_schedule``.
        leniency: kappa >= 1, an integer.
        faq_beta: beta in (0, 1] of frequency-adjusted Q-learning; 1 (the
            default) is plain Q-learning.

    Raises:
        ValueError: for any value out of range, judged in float32 before
            anything is traced: e.g. a temperature below `TAU_MIN` (~1.2e-38)
            at any value of its schedule (a linear schedule from 1 to 1e-9
            ends at 0 in float32), an exponential temperature schedule with
            end / start < 1e-30, or a learning rate or beta that is 0 in
            float32.
    """
    if not (isinstance(learning_rate, (int, float)) and 0 < learning_rate <= 1):
        raise ValueError(f"learning_rate (alpha) must be in (0, 1]; got {learning_rate!r}")
    t0, t1 = temperature if isinstance(temperature, (tuple, list)) else (temperature, temperature)
    if not (t0 > 0 and t1 > 0) or not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError(f"temperature (tau) must be finite and > 0; got {temperature!r}")
    e0, e1 = epsilon if isinstance(epsilon, (tuple, list)) else (epsilon, epsilon)
    if not (0 <= e0 <= 1 and 0 <= e1 <= 1):
        raise ValueError(f"epsilon must be in [0, 1]; got {epsilon!r}")
    if (
        isinstance(leniency, bool)
        or not isinstance(leniency, (int, float, np.integer, np.floating))
        or not math.isfinite(leniency)
        or int(leniency) != leniency
        or not 1 <= leniency <= np.iinfo(np.int32).max
    ):
        raise ValueError(f"leniency (kappa) must be an integer in [1, 2^31 - 1]; got {leniency!r}")
    if isinstance(faq_beta, bool) or not (isinstance(faq_beta, (int, float)) and 0 < faq_beta <= 1):
        raise ValueError(f"faq_beta (FAQ beta) must be in (0, 1]; got {faq_beta!r}")
    params = LearnerParams(
        learning_rate=jnp.float32(learning_rate),
        temperature=Schedule.make(t0, t1, temperature_schedule),
        epsilon=Schedule.make(e0, e1, epsilon_schedule),
        leniency=jnp.int32(leniency),
        faq_beta=jnp.float32(faq_beta),
    )
    given = dict(learning_rate=learning_rate, temperature=temperature, temperature_schedule=temperature_schedule,
                 epsilon=epsilon, epsilon_schedule=epsilon_schedule, leniency=leniency, faq_beta=faq_beta)
    check_params(params, given=given)
    return params


@jax.jit
def _schedule_ends_jit(schedule: Schedule) -> tuple[jax.Array, jax.Array]:
    return schedule.value_at(0.0), schedule.value_at(1.0)


def _schedule_ends(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """The values at t = 0 and t = T, computed in float32 by the kernel's own (compiled) formula."""
    schedule = Schedule(_f32(schedule.start), _f32(schedule.end), np.asarray(schedule.kind, np.int32))
    return tuple(np.asarray(v) for v in _schedule_ends_jit(schedule))


def check_params(params: LearnerParams, *, exploration: str | None = None, given: dict | None = None) -> None:
    """Checks (possibly stacked ``[R]``) `LearnerParams` in float32, the dtype the learners use.

    Every value a schedule reaches lies between its values at t = 0 and
    t = T (see `Schedule`), which are computed here with the kernel's own
    float32 formula.

    Args:
        params: `LearnerParams`, scalars or with a leading ``[R]`` axis.
        exploration: one of `EXPLORATIONS`, or None: the temperature is
            checked unless it is ``epsilon_greedy`` (which ignores it).
        given: the arguments as the caller gave them, for the message
            (`learner_params`).

    Raises:
        ValueError: naming the setting, the runs and the values, for a
            learning rate or FAQ beta outside (0, 1] in float32, a leniency
            below 1, an epsilon outside [0, 1] at either end of its schedule,
            a temperature below `TAU_MIN` (~1.2e-38) or not finite at either
            end of its schedule, or an exponential temperature schedule whose
            end / start is below 1e-30 (the schedule's clamp would change it).
    """
    stacked = np.ndim(params.learning_rate) > 0
    lr, beta, kappa = _f32(params.learning_rate), _f32(params.faq_beta), np.asarray(params.leniency)
    eps0, eps1 = _schedule_ends(params.epsilon)
    problems = [
        (
            ~((lr > 0) & (lr <= 1)),
            "learning_rate (alpha) must be in (0, 1] in float32",
            lambda i: f"learning_rate={lr.reshape(-1)[i]:g}",
            ("learning_rate",),
        ),
        (
            ~((beta > 0) & (beta <= 1)),
            "faq_beta (FAQ beta) must be in (0, 1] in float32",
            lambda i: f"faq_beta={beta.reshape(-1)[i]:g}",
            ("faq_beta",),
        ),
        (~(kappa >= 1), "leniency (kappa) must be >= 1", lambda i: f"leniency={kappa.reshape(-1)[i]}", ("leniency",)),
        (
            ~((eps0 >= 0) & (eps0 <= 1) & (eps1 >= 0) & (eps1 <= 1)),
            "epsilon must be in [0, 1] at both ends of its schedule (float32)",
            lambda i: f"epsilon at t=0 and t=T: {eps0.reshape(-1)[i]:g}, {eps1.reshape(-1)[i]:g}",
            ("epsilon", "epsilon_schedule"),
        ),
    ]
    if exploration != "epsilon_greedy":
        tau = params.temperature
        tau0, tau1 = _schedule_ends(tau)
        start, end, kind = _f32(tau.start), _f32(tau.end), np.asarray(tau.kind)
        with np.errstate(all="ignore"):
            ratio = np.where(start > 0, end / np.where(start > 0, start, 1), 1).astype(np.float32)
        # The ends as computed, and the end as given (an exponential schedule's clamp could hide it).
        lowest = np.minimum(np.minimum(tau0, tau1), np.where(kind == SCHEDULE_KINDS["constant"], start, end))
        problems += [
            (
                ~(np.isfinite(tau0) & np.isfinite(tau1) & np.isfinite(end) & (lowest >= TAU_MIN)),
                f"temperature (tau) must be finite and at least {TAU_MIN:.3g} (the smallest normal float32; a "
                "smaller tau is 0 or denormal in float32 and the Boltzmann policy is NaN) at every value of its "
                "schedule, as computed in float32 (a linear schedule to a tiny end rounds to 0 at the end: use an "
                "exponential one)",
                lambda i: f"temperature start={start.reshape(-1)[i]:g}, end={end.reshape(-1)[i]:g}, float32 "
                f"values at t=0 and t=T: {tau0.reshape(-1)[i]:g}, {tau1.reshape(-1)[i]:g}",
                ("temperature", "temperature_schedule"),
            ),
            (
                (kind == SCHEDULE_KINDS["exponential"]) & ~(ratio >= _MIN_RATIO),
                f"an exponential temperature schedule needs end / start >= {_MIN_RATIO:g} in float32 (at most "
                "30 decades)",
                lambda i: f"temperature start={start.reshape(-1)[i]:g}, end={end.reshape(-1)[i]:g}",
                ("temperature", "temperature_schedule"),
            ),
        ]
    for bad, what, value, names in problems:
        bad = np.broadcast_to(bad, np.shape(params.learning_rate))
        if np.any(bad):
            runs = np.flatnonzero(bad)
            if given is not None:
                shown = ", ".join(f"{k}={given[k]!r}" for k in names if k in given)
                raise ValueError(f"{what}; got {shown} ({value(runs[0])})")
            where = f"{runs.size} run(s), e.g. runs {runs[:5].tolist()}: " if stacked else ""
            raise ValueError(f"{what}; {where}got {value(runs[0])}")


def stack_params(params: list[LearnerParams]) -> LearnerParams:
    """Stacks per-run params along a new leading axis ``[R]`` (each leaf keeps its dtype).

    Stacked on the host with NumPy (``jnp.stack`` of R arrays would compile one
    concatenation of R operands).

    Raises:
        ValueError: ``params`` is empty.
    """
    if not params:
        raise ValueError("stack_params needs at least one LearnerParams")
    host = jax.device_get(list(params))
    return jax.tree.map(lambda *xs: jnp.asarray(np.stack([np.asarray(x) for x in xs])), *host)


def grid_params(repeat: int = 1, **axes) -> tuple[LearnerParams, list[dict]]:
    """The Cartesian product of hyperparameter values, stacked for one sweep.

    Example: ``grid_params(temperature=[(0.5, 0.01), (1.0, 0.01)], leniency=[2, 5, 10], repeat=8)``
    gives 2 x 3 x 8 = 48 runs (``repeat`` runs per setting, e.g. seeds or
    starting points).

    Args:
        repeat: runs per setting (consecutive).
        **axes: `learner_params` argument name -> list of values.

    Returns:
        (`LearnerParams` with leading axis ``[settings * repeat]``, the list of
        settings as keyword dicts, one per setting).

    Raises:
        ValueError: for an unknown name, an empty axis, repeat < 1, or any
            invalid value (see `learner_params`).
    """
    known = set(inspect.signature(learner_params).parameters)
    for name, values in axes.items():
        if name not in known:
            raise ValueError(f"unknown hyperparameter {name!r}; known: {sorted(known)}")
        if not len(values):
            raise ValueError(f"hyperparameter {name!r} has no values")
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1; got {repeat}")
    names = list(axes)
    settings = [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]
    built = [learner_params(**setting) for setting in settings]
    params = [p for p in built for _ in range(repeat)]
    return stack_params(params), settings


class QTable(nn.Module):
    """A plain Q-table: one float32 parameter per action, ``__call__() -> [num_actions]``."""

    num_actions: int

    @nn.compact
    def __call__(self) -> jax.Array:
        return self.param("q", nn.initializers.zeros, (self.num_actions,), jnp.float32)


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
    """Static settings of a learner (they fix shapes or the algorithm).

    Attributes:
        exploration: one of `EXPLORATIONS`.
        num_iterations: iterations (joint plays) per run.
        record_every: record both policies every this many iterations
            (``num_iterations`` must be a multiple); None records the end only.
        max_leniency: size of the lenient reward buffer (largest kappa swept).
        q_module: ``num_actions -> flax Module`` whose ``__call__()`` returns
            the Q-values ``[num_actions]``; `QTable` by default.
        optimizer: ``learning_rate -> optax.GradientTransformation``;
            ``optax.sgd`` (the tabular rule) by default.
        final_window: iterations at the end of a run over which the policy's
            range and mean are tracked (`TrainOutput.window_min` etc.); None
            is the last 10% (at least 1).
    """

    exploration: str = "boltzmann"
    num_iterations: int = 100_000
    record_every: int | None = None
    max_leniency: int = 5
    q_module: Callable[[int], nn.Module] = QTable
    optimizer: Callable[[jax.Array], optax.GradientTransformation] = optax.sgd
    final_window: int | None = None

    def __post_init__(self):
        if self.exploration not in EXPLORATIONS:
            raise ValueError(f"exploration must be one of {EXPLORATIONS}; got {self.exploration!r}")
        if not isinstance(self.num_iterations, int) or self.num_iterations < 1:
            raise ValueError(f"num_iterations must be a positive int; got {self.num_iterations!r}")
        if self.record_every is not None:
            if self.record_every < 1 or self.num_iterations % self.record_every:
                raise ValueError(
                    f"record_every ({self.record_every}) must be >= 1 and divide num_iterations ({self.num_iterations})"
                )
        if self.max_leniency < 1:
            raise ValueError(f"max_leniency must be >= 1; got {self.max_leniency}")
        if self.final_window is not None and not 1 <= self.final_window <= self.num_iterations:
            raise ValueError(
                f"final_window must be in [1, num_iterations={self.num_iterations}]; got {self.final_window}"
            )

    @property
    def window(self) -> int:
        """Iterations in the final window (``final_window`` or the last 10%)."""
        return self.final_window or max(1, self.num_iterations // 10)

    @property
    def num_records(self) -> int:
        return 1 if self.record_every is None else self.num_iterations // self.record_every


class TrainOutput(NamedTuple):
    """What `train` returns for one run (add a leading ``[R]`` axis under vmap).

    Attributes:
        q_values: float32 ``[2, A]``: the final Q-values of both players
            (A = max actions; a player's padding actions hold 0).
        policy: float32 ``[2, A]``: the final exploration policies.
        trajectory: float32 ``[num_records + 1, 2, A]``: the policies at
            iteration 0, record_every, 2 record_every, ..., num_iterations.
        window_min: float32 ``[2, A]``: the smallest probability of each
            action over the policies that played the final
            ``LearnerConfig.window`` iterations (tracked at every iteration,
            so a run that flips between outcomes shows a wide range).
        window_max: float32 ``[2, A]``: the largest, likewise.
        window_mean: float32 ``[2, A]``: the time-averaged policy over the
            same window.
        non_finite: bool ``[]``: True if a policy (at any iteration) or any
            output of the run is NaN or infinite; `run_sweep` reports such
            runs.
    """

    q_values: jax.Array
    policy: jax.Array
    trajectory: jax.Array
    window_min: jax.Array
    window_max: jax.Array
    window_mean: jax.Array
    non_finite: jax.Array


def exploration_policy(config: LearnerConfig, q: jax.Array, legal: jax.Array, temperature, epsilon) -> jax.Array:
    """The action probabilities of one player.

    Boltzmann: ``softmax((Q - max Q) / tau)`` over the legal actions, so
    large finite Q-values or a tiny tau give a (nearly) greedy policy, never
    NaN. The max is subtracted before dividing by tau: ``Q / tau`` itself can
    overflow float32, and even finite logits near 1e10 give NaN under jit
    (XLA may round them differently in softmax's max and exp; one ulp there
    is exp(+1000)).
    Epsilon-greedy: 1 - epsilon on the greedy action(s), ties split evenly,
    plus epsilon spread uniformly over the legal actions.

    Args:
        config: gives the exploration.
        q: float32 ``[A]`` Q-values.
        legal: bool ``[A]``.
        temperature: float32 ``[]`` tau > 0 (Boltzmann); epsilon: float32 ``[]``.

    Returns:
        float32 ``[A]`` probabilities, zero on illegal actions.
    """
    q = jnp.asarray(q, jnp.float32)
    # Maxima and sums over the actions are elementwise chains (`_fold`); the softmax is jax.nn.softmax's formula.
    if config.exploration == "epsilon_greedy":
        best = _fold(jnp.maximum, jnp.where(legal, q, -jnp.inf))
        greedy = (legal & (q == best[..., None])).astype(jnp.float32)
        greedy = greedy / _fold(jnp.add, greedy)[..., None]
        uniform = legal.astype(jnp.float32) / _fold(jnp.add, legal.astype(jnp.float32))[..., None]
        return (1.0 - epsilon) * greedy + epsilon * uniform
    best = _fold(jnp.maximum, jnp.where(legal, q, jnp.finfo(jnp.float32).min))
    logits = jnp.where(legal, (q - best[..., None]) / temperature, jnp.finfo(jnp.float32).min)
    unnormalized = jnp.exp(logits - jnp.maximum(_fold(jnp.maximum, logits), -jnp.inf)[..., None])
    return unnormalized / _fold(jnp.add, unnormalized)[..., None]


class _Carry(NamedTuple):
    params: object  # Q-function params, leading axis [2]
    opt_state: object  # leading axis [2]
    buffer: jax.Array  # float32 [2, A, max_leniency]
    count: jax.Array  # int32 [2, A]
    t: jax.Array  # int32 []
    key: jax.Array
    window_min: jax.Array  # float32 [2, A]
    window_max: jax.Array  # float32 [2, A]
    window_sum: jax.Array  # float32 [2, A]
    finite: jax.Array  # bool []: every policy so far was finite


def _as_payoffs(game) -> np.ndarray:
    """Float32 payoffs ``[2, n, m]``; raises ValueError unless they and their range are finite in float32."""
    if isinstance(game, MatrixGame):
        payoffs = game.payoffs_np
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the overflow of the cast is reported below
            payoffs = validate_payoffs(game)
    payoffs = np.asarray(payoffs, np.float32)
    if not np.all(np.isfinite(payoffs)):
        given = game.payoffs_np if isinstance(game, MatrixGame) else np.asarray(game, np.float64)
        raise ValueError(
            f"payoffs must be finite in float32, the learners' dtype (|payoff| <= {_F32.max:.3g}); got a payoff "
            f"of magnitude {np.max(np.abs(given)):g}"
        )
    _check_range(payoffs, None)
    return payoffs


def _check_range(payoffs: np.ndarray, initial_q: np.ndarray | None) -> None:
    """Raises ValueError if a TD error (a payoff minus a Q-value), doubled, can overflow float32.

    Q-values stay between the smallest and largest of the payoffs and the
    starting Q-values (each step moves Q towards a payoff), so every TD error
    is bounded by that range; the gradient of the squared TD error computes
    twice the TD error.
    """
    values = [np.asarray(payoffs, np.float64).ravel()]
    if initial_q is not None:
        values.append(np.asarray(initial_q, np.float64).ravel())
    values = np.concatenate(values)
    lo, hi = float(values.min()), float(values.max())
    if not np.isfinite(_f32(2 * (hi - lo))):
        what = "payoffs" if initial_q is None else "payoffs and initial_q"
        raise ValueError(
            f"{what} span [{lo:g}, {hi:g}]: twice their differences (the TD errors, doubled in the gradient of "
            f"the squared TD error) overflow float32 (max {_F32.max:.3g}); rescale the payoffs"
        )


def make_train(game, config: LearnerConfig) -> Callable[..., TrainOutput]:
    """Builds the pure training function of ONE run of two independent learners.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        config: static `LearnerConfig`.

    Returns:
        ``train(key, params, initial_q) -> TrainOutput``: ``key`` a PRNG key,
        ``params`` `LearnerParams` (scalars), ``initial_q`` float32 ``[2, A]``
        starting Q-values (for a module whose only parameter is the table,
        like `QTable`; None uses the module's own initialiser). Jit and vmap
        it (see `run_sweep`). It raises ValueError at trace time for
        ``initial_q`` with any other module or shape than ``[2, A]``; it
        cannot check traced values, so pass params from `learner_params`
        (or `check_params`), or use `run_sweep`, which checks everything.

    Raises:
        ValueError: if the payoffs, or twice their range (max - min, the
            largest TD error), are not finite in float32 (and see
            `validate_payoffs`).
    """
    payoffs = jnp.asarray(_as_payoffs(game), jnp.float32)
    n, m = payoffs.shape[1:]
    num_actions = max(n, m)
    legal = jnp.arange(num_actions)[None, :] < jnp.array([[n], [m]])  # [2, A]
    module = config.q_module(num_actions)
    lenient = config.exploration == "lenient_boltzmann"
    horizon = config.num_iterations
    steps_per_record = config.record_every or config.num_iterations

    def q_values(params):
        return module.apply(params)

    def policies(params, t, hp: LearnerParams):
        q = jax.vmap(q_values)(params)
        tau = hp.temperature(t, horizon)
        eps = hp.epsilon(t, horizon)
        return jax.vmap(lambda qq, ll: exploration_policy(config, qq, ll, tau, eps))(q, legal)

    param_leaves = jax.tree.leaves(jax.eval_shape(module.init, jax.random.key(0)))
    is_table = len(param_leaves) == 1 and param_leaves[0].shape == (num_actions,)

    def init_player(key, q0):
        params = module.init(key)
        if q0 is not None:
            params = jax.tree.map(lambda _: q0, params)  # QTable has the single leaf "q"
        return params

    def update_player(tx, params, opt_state, action, target, do_update, weight):
        def loss_fn(p):
            # weight = min(beta / x_a, 1): the FAQ scaling (1 for plain Q-learning).
            return 0.5 * weight * jnp.square(target - _pick(q_values(p), action))  # selects: no scatter in the grad

        grads = jax.grad(loss_fn)(params)
        updates, new_opt_state = tx.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        # Skip the step entirely (also for stateful optimisers) when no update is due.
        keep = lambda new, old: jnp.where(do_update, new, old)
        return jax.tree.map(keep, new_params, params), jax.tree.map(keep, new_opt_state, opt_state)

    def train(key: jax.Array, hp: LearnerParams, initial_q: jax.Array | None) -> TrainOutput:
        hp = _working_dtypes(hp)
        tx = config.optimizer(hp.learning_rate)
        key, init_key = jax.random.split(key)
        init_keys = jax.random.split(init_key, 2)
        if initial_q is not None and not is_table:
            raise ValueError(
                "initial_q sets a plain table; this q_module's parameters are "
                f"{[x.shape for x in param_leaves]}: pass initial_q=None"
            )
        if initial_q is not None and np.shape(initial_q) != (2, num_actions):
            raise ValueError(f"initial_q must be [2, A] = [2, {num_actions}] for this game; got {np.shape(initial_q)}")
        if initial_q is None:
            params = jax.vmap(lambda k: init_player(k, None))(init_keys)
        else:
            initial_q = jnp.where(legal, jnp.asarray(initial_q, jnp.float32), 0.0)
            params = jax.vmap(init_player)(init_keys, initial_q)
        opt_state = jax.vmap(tx.init)(params)
        carry = _Carry(
            params=params,
            opt_state=opt_state,
            buffer=jnp.zeros((2, num_actions, config.max_leniency if lenient else 1), jnp.float32),
            count=jnp.zeros((2, num_actions), jnp.int32),
            t=jnp.int32(0),
            key=key,
            window_min=jnp.ones((2, num_actions), jnp.float32),
            window_max=jnp.zeros((2, num_actions), jnp.float32),
            window_sum=jnp.zeros((2, num_actions), jnp.float32),
            finite=jnp.bool_(True),
        )
        window_start = horizon - config.window

        def one_iteration(c: _Carry, _):
            # Gathers, scatters and reductions over the few actions are one-hot selects and elementwise chains
            # (`_pick`, `_fold`): the same values, in far fewer and cheaper ops under vmap.
            probs = policies(c.params, c.t, hp)  # [2, A]
            u = jax.random.uniform(jax.random.fold_in(c.key, c.t), (2, 1), jnp.float32)
            cumulative = jnp.stack([_fold(jnp.add, probs[:, : i + 1]) for i in range(num_actions)], axis=1)
            below = (cumulative < u).astype(jnp.int32)
            actions = jnp.minimum(_fold(jnp.add, below), jnp.array([n - 1, m - 1]))
            rewards = _pick(_pick(payoffs, jnp.broadcast_to(actions[1], (2, n))), actions[0])  # [2]
            played = jnp.arange(num_actions)[None, :] == actions[:, None]  # [2, A] one-hot
            if lenient:
                slot = _pick(c.count, actions)  # [2]
                slots = jnp.arange(config.max_leniency)
                into = played[:, :, None] & (slots == slot[:, None])[:, None, :]  # [2, A, K]: the slot to fill
                buffer = jnp.where(into, rewards[:, None, None], c.buffer)
                filled = slot + 1
                do_update = filled >= hp.leniency
                row = _pick(jnp.swapaxes(buffer, 1, 2), actions[:, None])  # [2, K]
                valid = slots[None, :] < filled[:, None]
                targets = _fold(jnp.maximum, jnp.where(valid, row, -jnp.inf))
                count = jnp.where(played, jnp.where(do_update, 0, filled)[:, None], c.count)
            else:
                buffer, count = c.buffer, c.count
                do_update = jnp.ones(2, bool)
                targets = rewards
            # FAQ: x_a of the policy now (for the lenient learner, at the update, not at each play).
            x_played = _pick(probs, actions)
            weight = jax.lax.stop_gradient(jnp.minimum(hp.faq_beta / x_played, 1.0))
            params, opt_state = jax.vmap(lambda p, s, a, y, d, w: update_player(tx, p, s, a, y, d, w))(
                c.params, c.opt_state, actions, targets, do_update, weight
            )
            in_window = c.t >= window_start
            return c._replace(
                params=params,
                opt_state=opt_state,
                buffer=buffer,
                count=count,
                t=c.t + 1,
                window_min=jnp.where(in_window, jnp.minimum(c.window_min, probs), c.window_min),
                window_max=jnp.where(in_window, jnp.maximum(c.window_max, probs), c.window_max),
                window_sum=jnp.where(in_window, c.window_sum + probs, c.window_sum),
                finite=c.finite & _fold(jnp.logical_and, jnp.isfinite(probs).reshape(-1)),
            ), None

        def one_record(c: _Carry, _):
            c, _ = jax.lax.scan(one_iteration, c, None, length=steps_per_record)
            return c, policies(c.params, c.t, hp)

        start = policies(carry.params, carry.t, hp)
        carry, records = jax.lax.scan(one_record, carry, None, length=config.num_records)
        trajectory = jnp.concatenate([start[None], records], axis=0)
        out = TrainOutput(
            q_values=jax.vmap(q_values)(carry.params),
            policy=records[-1],
            trajectory=trajectory,
            window_min=carry.window_min,
            window_max=carry.window_max,
            window_mean=carry.window_sum / config.window,
            non_finite=jnp.bool_(False),
        )
        finite = carry.finite
        for x in jax.tree.leaves(out._replace(non_finite=None)):
            finite = finite & jnp.all(jnp.isfinite(x))
        return out._replace(non_finite=~finite)

    return train


def _working_dtypes(hp: LearnerParams) -> LearnerParams:
    """``hp`` in the learners' dtypes (float32, int32), whatever ``jax_enable_x64`` made of them."""
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    i32 = lambda x: jnp.asarray(x, jnp.int32)
    schedule = lambda s: Schedule(f32(s.start), f32(s.end), i32(s.kind))
    return LearnerParams(
        learning_rate=f32(hp.learning_rate),
        temperature=schedule(hp.temperature),
        epsilon=schedule(hp.epsilon),
        leniency=i32(hp.leniency),
        faq_beta=f32(hp.faq_beta),
    )


def _check_policy(policy: np.ndarray, name: str) -> None:
    """Raises ValueError unless every row ``[..., A]`` of ``policy`` is a probability vector."""
    bad = ~np.all(np.isfinite(policy) & (policy >= 0), axis=-1) | ~(np.abs(policy.sum(-1) - 1) <= _PROB_ATOL)
    if np.any(bad):
        first = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} must hold probability vectors (finite, >= 0, summing to 1 within {_PROB_ATOL:g}); "
            f"{int(bad.sum())} of {bad.size} are not, e.g. {name}[{', '.join(map(str, first))}] = "
            f"{policy[tuple(first)].tolist()}"
        )


def initial_q_from_policy(config: LearnerConfig, policy: np.ndarray, params: LearnerParams) -> np.ndarray:
    """Starting Q-values that make the learners start at ``policy``.

    Boltzmann learners: Q = tau_0 ln(pi) (softmax(Q / tau_0) = pi exactly).
    Epsilon-greedy learners cannot start at an arbitrary mixed policy; their
    Q-values are set to the probabilities themselves, so the greedy action is
    the most likely one of ``policy``.

    Args:
        config: the learner's config.
        policy: float ``[..., 2, A]`` probabilities (> 0 for Boltzmann).
        params: `LearnerParams` broadcastable to ``policy[..., 0, 0]``.

    Returns:
        float32 ``[..., 2, A]``.

    Raises:
        ValueError: if ``policy`` is not ``[..., 2, A]``, a row is not a
            probability vector (finite, >= 0, summing to 1 within 1e-4), a
            Boltzmann start has a zero probability, or the Q-values are not
            finite in float32.
    """
    policy = np.asarray(policy, np.float64)
    if policy.ndim < 2 or policy.shape[-2] != 2:
        raise ValueError(f"policy must be [..., 2, A] (both players' policies); got shape {policy.shape}")
    _check_policy(policy, "policy")
    if config.exploration == "epsilon_greedy":
        return policy.astype(np.float32)
    if np.any(policy <= 0):
        raise ValueError("a Boltzmann learner cannot start at a policy with a zero probability")
    tau0 = np.asarray(params.temperature.start, np.float64)[..., None, None]
    q = _f32(tau0 * np.log(policy))
    if not np.all(np.isfinite(q)):
        raise ValueError(f"the starting Q-values tau_0 ln(policy) overflow float32 (tau_0 up to {np.max(tau0):g})")
    return q


def run_sweep(
    game,
    config: LearnerConfig,
    keys: jax.Array,
    params: LearnerParams,
    initial_q: np.ndarray | None = None,
    *,
    chunk_size: int = 4096,
    progress: bool = True,
    description: str = "runs",
    on_non_finite: str = "warn",
    mesh=None,
    devices=None,
) -> TrainOutput:
    """Trains R independent runs, vmapped and chunked to bound memory.

    One compiled ``jit(vmap(train))`` serves every chunk (the last one is
    padded), so a sweep of any size compiles once.

    With ``devices`` (local devices, e.g. one CPU device per core:
    `jaxgames.parallel.one_host_device_per_core`) the runs are cut into
    equal chunks of at most ``chunk_size``, a multiple of ``len(devices)``
    of them, which go to the devices in turn and run at once, each device
    running the same one-device program: the result equals the one-device
    result bitwise. With a ``mesh``
    (`jaxgames.parallel.make_mesh`, also across hosts) each chunk is
    sharded over its devices along the run axis (rounded up to a multiple
    of the device count, padded with the last run) as one SPMD program,
    which XLA may fuse and round differently: equal to one device up to
    float32 rounding (1 ulp in 1 of 104 runs of biased rock-paper-scissors
    with Boltzmann learners, 100,000 iterations, 2 CPU devices).

    A run that goes non-finite is not dropped: it keeps its place with
    ``non_finite[r] = True`` (accumulated inside the compiled loop, no host
    syncs), and by default a `NonFiniteRunsWarning` names its settings.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        config: static `LearnerConfig`.
        keys: ``[R]`` PRNG keys, one per run.
        params: `LearnerParams` with a leading ``[R]`` axis (`stack_params`).
        initial_q: float32 ``[R, 2, A]`` starting Q-values, or None.
        chunk_size: runs per compiled call.
        progress: show a tqdm progress bar over runs.
        description: the progress bar's label.
        on_non_finite: what to do about runs that went non-finite:
            ``warn`` (a `NonFiniteRunsWarning`), ``raise`` (a
            FloatingPointError once the sweep is done) or ``ignore``; they
            are flagged in ``non_finite`` in every case.
        mesh: a `jax.sharding.Mesh` with a ``"batch"`` axis to shard each
            chunk over (None: one device).
        devices: a sequence of local `jax.Device` to spread the chunks over
            (None: the default device); not with ``mesh``.

    Returns:
        `TrainOutput` of numpy arrays with a leading ``[R]`` axis.

    Raises:
        ValueError: if the leading axes disagree, chunk_size < 1,
            ``on_non_finite`` is unknown, both ``mesh`` and ``devices`` are
            given or ``devices`` is empty, a setting is invalid in float32
            (`check_params`), the payoffs are not finite in float32
            (`make_train`), or ``initial_q`` is not ``[R, 2, A]``, not finite
            in float32, or spans with the payoffs a range whose doubled
            differences overflow float32.
        FloatingPointError: with ``on_non_finite="raise"``, if a run went
            non-finite.
    """
    if on_non_finite not in ON_NON_FINITE:
        raise ValueError(f"on_non_finite must be one of {ON_NON_FINITE}; got {on_non_finite!r}")
    num_runs = keys.shape[0]
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in jax.tree.leaves(params)}
    if initial_q is not None:
        sizes.add(np.shape(initial_q)[0] if np.ndim(initial_q) else None)
    if sizes != {num_runs}:
        raise ValueError(f"keys, params and initial_q need the same leading axis; got {sizes | {num_runs}}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    payoffs = _as_payoffs(game)
    num_actions = max(payoffs.shape[1:])
    check_params(params, exploration=config.exploration)
    if initial_q is not None:
        if np.shape(initial_q) != (num_runs, 2, num_actions):
            raise ValueError(
                f"initial_q must be [R, 2, A] = [{num_runs}, 2, {num_actions}] for this game; got {np.shape(initial_q)}"
            )
        q32 = _f32(initial_q)
        if not np.all(np.isfinite(q32)):
            bad = np.flatnonzero(~np.all(np.isfinite(q32), axis=(1, 2)))
            raise ValueError(
                f"initial_q must be finite in float32; {bad.size} run(s) are not, e.g. runs {bad[:5].tolist()}: "
                f"{np.asarray(initial_q)[bad[0]].tolist()}"
            )
        _check_range(payoffs, q32)
    if config.exploration == "lenient_boltzmann" and int(np.max(params.leniency)) > config.max_leniency:
        raise ValueError(
            f"leniency (kappa) up to {int(np.max(params.leniency))} needs LearnerConfig(max_leniency>="
            f"{int(np.max(params.leniency))}); got max_leniency={config.max_leniency}"
        )
    if devices is not None:
        devices = list(devices)
        if mesh is not None or not devices:
            raise ValueError("devices must be a non-empty sequence of devices, and not given with mesh")
    batched = _compiled_sweep(game, config, initial_q is not None)
    chunk = min(chunk_size, num_runs)
    if mesh is not None:
        chunk = -(-chunk // parallel.num_shards(mesh)) * parallel.num_shards(mesh)
    if devices is not None:  # equal chunks, len(devices) of them per round: no device waits on a short last one
        rounds = -(-num_runs // (len(devices) * chunk))
        chunk = -(-num_runs // (len(devices) * rounds))
    outputs = []
    starts = list(range(0, num_runs, chunk))
    per_round = len(devices) if devices is not None else 1
    with tqdm(total=num_runs, desc=description, disable=not progress, unit="run", leave=False) as bar:
        for first in range(0, len(starts), per_round):
            inputs = []  # a round's inputs are all in place before any of its chunks runs (no queueing behind one)
            for j, lo in enumerate(starts[first:first + per_round]):
                hi = min(lo + chunk, num_runs)
                idx = np.minimum(np.arange(lo, lo + chunk), hi - 1)  # pad with the last run
                take = lambda x: np.asarray(x)[idx]
                args = (keys[idx], jax.tree.map(take, params), None if initial_q is None else take(initial_q))
                if mesh is not None:
                    args = parallel.shard_batch(args, mesh)
                elif devices is not None:
                    args = jax.block_until_ready(jax.device_put(args, devices[j]))
                inputs.append((hi - lo, args))
            pending = [(n, batched(*args)) for n, args in inputs]  # dispatched at once: the devices run together
            for n, out in pending:
                out = parallel.gather(out) if mesh is not None else out
                outputs.append(jax.tree.map(lambda x: np.asarray(x)[:n], out))
                bar.update(n)
    result = jax.tree.map(lambda *xs: np.concatenate(xs), *outputs)
    if on_non_finite != "ignore" and np.any(result.non_finite):
        message = _non_finite_message(result.non_finite, params)
        if on_non_finite == "raise":
            raise FloatingPointError(message)
        warnings.warn(message, NonFiniteRunsWarning, stacklevel=2)
    return result


def _non_finite_message(non_finite: np.ndarray, params: LearnerParams) -> str:
    runs = np.flatnonzero(non_finite)
    names = ("learning_rate", "leniency", "faq_beta")
    lines = []
    for r in runs[:5]:
        pick = lambda x: float(f"{np.asarray(x)[r].item():.6g}")
        setting = {k: pick(getattr(params, k)) for k in names}
        setting["leniency"] = int(setting["leniency"])
        for k in ("temperature", "epsilon"):
            sched = getattr(params, k)
            kind = {v: n for n, v in SCHEDULE_KINDS.items()}[int(np.asarray(sched.kind)[r])]
            setting[k] = f"{kind} {pick(sched.start):g} -> {pick(sched.end):g}"
        lines.append(f"  run {r}: " + ", ".join(f"{k}={v}" for k, v in setting.items()))
    more = f"\n  ... and {runs.size - 5} more" if runs.size > 5 else ""
    return (
        f"{runs.size} of {non_finite.size} runs went non-finite (NaN or inf in a policy or Q-value; "
        f"TrainOutput.non_finite marks them):\n" + "\n".join(lines) + more
    )


_SWEEP_CACHE: dict = {}


def _compiled_sweep(game, config: LearnerConfig, has_initial_q: bool):
    payoffs = _as_payoffs(game)
    cache_key = (payoffs.tobytes(), payoffs.shape, config, has_initial_q)
    if cache_key not in _SWEEP_CACHE:
        train = make_train(payoffs, config)
        in_axes = (0, 0, 0 if has_initial_q else None)
        _SWEEP_CACHE[cache_key] = jax.jit(jax.vmap(train, in_axes=in_axes))
    return _SWEEP_CACHE[cache_key]
