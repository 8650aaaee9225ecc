"""Independent stateless Q-learners in two-player matrix games, batched over runs.

Each player keeps its own Q-function over its actions (a Flax module; a plain
table by default) and never sees the other: independent learning (seed 000,
section 3.1). In every iteration both players pick an action from their
exploration policy, receive ``payoffs[p, a_row, a_col]`` and take one Optax
step on the squared TD error of the action they played,

    loss = 1/2 (r - Q(a))^2,   so with optax.sgd(alpha):  Q(a) <- Q(a) + alpha (r - Q(a)),

the tabular rule of stateless Q-learning (there is no next state; the
discount is irrelevant). Exploration:

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
``min(beta / x_i, 1)``, x_i the probability with which the updating player's
current policy picks i (implemented as a weight on the squared TD error,
which with ``optax.sgd`` is exactly the FAQ rule). beta = 1 is plain
Q-learning (``min(1 / x_i, 1) = 1``), so one traced parameter covers both.
The expected update per iteration of action i's Q-value is then

    E[dQ_i] = alpha min(x_i, beta) / kappa * (u_i - Q_i)

(plain: alpha x_i (u_i - Q_i): i is played with probability x_i; lenient:
one update per kappa plays of i, towards the maximum of kappa rewards, whose
mean is the lenient utility u_i). `jaxgames.dynamics.fields.integrate_q`
integrates exactly this mean-field ODE.

Temperature and epsilon follow a `Schedule` over the iterations (constant,
linear or exponential). All numeric hyperparameters live in `LearnerParams`,
a traced pytree, so one jitted function sweeps over them with ``vmap``; the
things that fix shapes or the algorithm live in the static `LearnerConfig`.

The entry points: ``make_train(payoffs, config)`` returns a pure
``train(key, params, initial_q) -> TrainOutput`` for ONE run, which
`run_sweep` vmaps over runs and chunks to bound memory.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from jaxgames.games.matrix import MatrixGame, validate_payoffs

EXPLORATIONS = ("epsilon_greedy", "boltzmann", "lenient_boltzmann")
SCHEDULE_KINDS = {"constant": 0, "linear": 1, "exponential": 2}


@struct.dataclass
class Schedule:
    """A value annealed from ``start`` to ``end`` over the run (traced, vmappable).

    value(t) at iteration t of T:
      constant: start; linear: start + (end - start) t / T;
      exponential: start (end / start)^(t / T).

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
        """Builds a schedule. Raises ValueError for an unknown kind or non-finite values."""
        if kind not in SCHEDULE_KINDS:
            raise ValueError(f"schedule kind must be one of {list(SCHEDULE_KINDS)}; got {kind!r}")
        end = start if end is None else end
        if not (math.isfinite(start) and math.isfinite(end)):
            raise ValueError(f"schedule values must be finite; got start={start}, end={end}")
        return cls(jnp.float32(start), jnp.float32(end), jnp.int32(SCHEDULE_KINDS[kind]))

    def __call__(self, t: jax.Array, horizon: int) -> jax.Array:
        frac = jnp.asarray(t, jnp.float32) / horizon
        linear = self.start + (self.end - self.start) * frac
        ratio = jnp.where(self.start > 0, self.end / jnp.where(self.start > 0, self.start, 1.0), 1.0)
        exponential = self.start * jnp.power(jnp.maximum(ratio, 1e-30), frac)
        return jnp.select([self.kind == 0, self.kind == 1], [self.start, linear], exponential)


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
    """Validated `LearnerParams` for one run (defaults: seed 000 section 3.2.1).

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
        ValueError: for any value out of range, before anything is traced.
    """
    if not (isinstance(learning_rate, (int, float)) and 0 < learning_rate <= 1):
        raise ValueError(f"learning_rate (alpha) must be in (0, 1]; got {learning_rate!r}")
    t0, t1 = temperature if isinstance(temperature, (tuple, list)) else (temperature, temperature)
    if not (t0 > 0 and t1 > 0) or not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError(f"temperature (tau) must be finite and > 0; got {temperature!r}")
    e0, e1 = epsilon if isinstance(epsilon, (tuple, list)) else (epsilon, epsilon)
    if not (0 <= e0 <= 1 and 0 <= e1 <= 1):
        raise ValueError(f"epsilon must be in [0, 1]; got {epsilon!r}")
    if isinstance(leniency, bool) or int(leniency) != leniency or leniency < 1:
        raise ValueError(f"leniency (kappa) must be an integer >= 1; got {leniency!r}")
    if isinstance(faq_beta, bool) or not (isinstance(faq_beta, (int, float)) and 0 < faq_beta <= 1):
        raise ValueError(f"faq_beta (FAQ beta) must be in (0, 1]; got {faq_beta!r}")
    return LearnerParams(
        learning_rate=jnp.float32(learning_rate),
        temperature=Schedule.make(t0, t1, temperature_schedule),
        epsilon=Schedule.make(e0, e1, epsilon_schedule),
        leniency=jnp.int32(leniency),
        faq_beta=jnp.float32(faq_beta),
    )


def stack_params(params: list[LearnerParams]) -> LearnerParams:
    """Stacks per-run params along a new leading axis ``[R]``."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *params)


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
    import itertools
    import inspect

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
    params = [learner_params(**setting) for setting in settings for _ in range(repeat)]
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
    """

    q_values: jax.Array
    policy: jax.Array
    trajectory: jax.Array
    window_min: jax.Array
    window_max: jax.Array
    window_mean: jax.Array


def exploration_policy(config: LearnerConfig, q: jax.Array, legal: jax.Array, temperature, epsilon) -> jax.Array:
    """The action probabilities of one player.

    Args:
        config: gives the exploration.
        q: float32 ``[A]`` Q-values.
        legal: bool ``[A]``.
        temperature: float32 ``[]`` tau (Boltzmann); epsilon: float32 ``[]``.

    Returns:
        float32 ``[A]`` probabilities, zero on illegal actions.
    """
    if config.exploration == "epsilon_greedy":
        best = jnp.max(jnp.where(legal, q, -jnp.inf))
        greedy = legal & (q == best)
        greedy = greedy / jnp.sum(greedy)
        uniform = legal / jnp.sum(legal)
        return (1.0 - epsilon) * greedy + epsilon * uniform
    logits = jnp.where(legal, q / temperature, jnp.finfo(jnp.float32).min)
    return jax.nn.softmax(logits)


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


def _as_payoffs(game) -> np.ndarray:
    if isinstance(game, MatrixGame):
        return game.payoffs_np
    return validate_payoffs(game)


def make_train(game, config: LearnerConfig) -> Callable[..., TrainOutput]:
    """Builds the pure training function of ONE run of two independent learners.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        config: static `LearnerConfig`.

    Returns:
        ``train(key, params, initial_q) -> TrainOutput``: ``key`` a PRNG key,
        ``params`` `LearnerParams` (scalars), ``initial_q`` float32 ``[2, A]``
        starting Q-values (for a module whose only parameter is the table,
        like `QTable`; pass None to use the module's own initialiser). Jit
        and vmap it (see `run_sweep`). Raises ValueError (at trace time) for
        ``initial_q`` with any other module.
    """
    payoffs = jnp.asarray(_as_payoffs(game))
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
            return 0.5 * weight * jnp.square(target - q_values(p)[action])

        grads = jax.grad(loss_fn)(params)
        updates, new_opt_state = tx.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        # Skip the step entirely (also for stateful optimisers) when no update is due.
        keep = lambda new, old: jnp.where(do_update, new, old)
        return jax.tree.map(keep, new_params, params), jax.tree.map(keep, new_opt_state, opt_state)

    def train(key: jax.Array, hp: LearnerParams, initial_q: jax.Array | None) -> TrainOutput:
        tx = config.optimizer(hp.learning_rate)
        key, init_key = jax.random.split(key)
        init_keys = jax.random.split(init_key, 2)
        if initial_q is not None and not is_table:
            raise ValueError(
                "initial_q sets a plain table; this q_module's parameters are "
                f"{[x.shape for x in param_leaves]}: pass initial_q=None"
            )
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
        )
        window_start = horizon - config.window

        def one_iteration(c: _Carry, _):
            probs = policies(c.params, c.t, hp)  # [2, A]
            u = jax.random.uniform(jax.random.fold_in(c.key, c.t), (2, 1))
            actions = jnp.minimum(jnp.sum(jnp.cumsum(probs, axis=1) < u, axis=1), jnp.array([n - 1, m - 1]))
            rewards = payoffs[:, actions[0], actions[1]]  # [2]
            if lenient:
                slot = c.count[jnp.arange(2), actions]  # [2]
                buffer = c.buffer.at[jnp.arange(2), actions, slot].set(rewards)
                filled = slot + 1
                do_update = filled >= hp.leniency
                row = buffer[jnp.arange(2), actions]  # [2, K]
                valid = jnp.arange(config.max_leniency)[None, :] < filled[:, None]
                targets = jnp.max(jnp.where(valid, row, -jnp.inf), axis=1)
                count = c.count.at[jnp.arange(2), actions].set(jnp.where(do_update, 0, filled))
            else:
                buffer, count = c.buffer, c.count
                do_update = jnp.ones(2, bool)
                targets = rewards
            # FAQ: x_a of the policy now (for the lenient learner, at the update, not at each play).
            x_played = probs[jnp.arange(2), actions]
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
            ), None

        def one_record(c: _Carry, _):
            c, _ = jax.lax.scan(one_iteration, c, None, length=steps_per_record)
            return c, policies(c.params, c.t, hp)

        start = policies(carry.params, carry.t, hp)
        carry, records = jax.lax.scan(one_record, carry, None, length=config.num_records)
        trajectory = jnp.concatenate([start[None], records], axis=0)
        return TrainOutput(
            q_values=jax.vmap(q_values)(carry.params),
            policy=records[-1],
            trajectory=trajectory,
            window_min=carry.window_min,
            window_max=carry.window_max,
            window_mean=carry.window_sum / config.window,
        )

    return train


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
        ValueError: if a Boltzmann start has a zero probability.
    """
    policy = np.asarray(policy, np.float64)
    if config.exploration == "epsilon_greedy":
        return policy.astype(np.float32)
    if np.any(policy <= 0):
        raise ValueError("a Boltzmann learner cannot start at a policy with a zero probability")
    tau0 = np.asarray(params.temperature.start, np.float64)[..., None, None]
    return (tau0 * np.log(policy)).astype(np.float32)


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
) -> TrainOutput:
    """Trains R independent runs, vmapped and chunked to bound memory.

    One compiled ``jit(vmap(train))`` serves every chunk (the last one is
    padded), so a sweep of any size compiles once.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        config: static `LearnerConfig`.
        keys: ``[R]`` PRNG keys, one per run.
        params: `LearnerParams` with a leading ``[R]`` axis (`stack_params`).
        initial_q: float32 ``[R, 2, A]`` starting Q-values, or None.
        chunk_size: runs per compiled call.
        progress: show a tqdm progress bar over runs.
        description: the progress bar's label.

    Returns:
        `TrainOutput` of numpy arrays with a leading ``[R]`` axis.

    Raises:
        ValueError: if the leading axes disagree or chunk_size < 1.
    """
    from tqdm.auto import tqdm

    num_runs = keys.shape[0]
    sizes = {x.shape[0] for x in jax.tree.leaves(params)}
    if initial_q is not None:
        sizes.add(np.shape(initial_q)[0])
    if sizes != {num_runs}:
        raise ValueError(f"keys, params and initial_q need the same leading axis; got {sizes | {num_runs}}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    if config.exploration == "lenient_boltzmann" and int(np.max(params.leniency)) > config.max_leniency:
        raise ValueError(
            f"leniency (kappa) up to {int(np.max(params.leniency))} needs LearnerConfig(max_leniency>="
            f"{int(np.max(params.leniency))}); got max_leniency={config.max_leniency}"
        )
    batched = _compiled_sweep(game, config, initial_q is not None)
    chunk = min(chunk_size, num_runs)
    outputs = []
    with tqdm(total=num_runs, desc=description, disable=not progress, unit="run", leave=False) as bar:
        for lo in range(0, num_runs, chunk):
            hi = min(lo + chunk, num_runs)
            idx = np.minimum(np.arange(lo, lo + chunk), hi - 1)  # pad with the last run
            take = lambda x: jnp.asarray(x)[idx]
            out = batched(keys[idx], jax.tree.map(take, params), None if initial_q is None else take(initial_q))
            outputs.append(jax.tree.map(lambda x: np.asarray(x)[: hi - lo], out))
            bar.update(hi - lo)
    return jax.tree.map(lambda *xs: np.concatenate(xs), *outputs)


_SWEEP_CACHE: dict = {}


def _compiled_sweep(game, config: LearnerConfig, has_initial_q: bool):
    payoffs = _as_payoffs(game)
    cache_key = (payoffs.tobytes(), payoffs.shape, config, has_initial_q)
    if cache_key not in _SWEEP_CACHE:
        train = make_train(payoffs, config)
        in_axes = (0, 0, 0 if has_initial_q else None)
        _SWEEP_CACHE[cache_key] = jax.jit(jax.vmap(train, in_axes=in_axes))
    return _SWEEP_CACHE[cache_key]
