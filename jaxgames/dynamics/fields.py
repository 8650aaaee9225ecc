"""Learning dynamics of two-player matrix games: vector fields and their integration.

For the row player with payoffs ``A`` [n, m] facing column strategy ``y``
(the column player uses ``B^T`` and ``x``), utility vector ``u``, learning
rate ``alpha`` and time in learner iterations:

* Replicator dynamics (Bloembergen et al. 2015, JAIR 53, eq. 5):
  ``x_i' = alpha x_i (u_i - x.u)``, ``u = A y``.
* Boltzmann Q-learning / FAQ dynamics (Tuyls, 't Hoen & Vanschoenwinkel 2006;
  Bloembergen et al. 2015, eq. 10):
  ``x_i' = (alpha x_i / tau)(u_i - x.u) + alpha x_i sum_j x_j ln(x_j / x_i)``.
* Lenient Boltzmann dynamics (Panait, Tuyls & Luke 2008, JMLR 9, eq. 9;
  Bloembergen et al. 2015, eq. 13): the FAQ field with ``u_i`` replaced by
  the expected maximum of ``kappa`` rewards of action i (`lenient_utility`).
* The expected dynamics of the tabular learners (`jaxgames.learners.tabular`)
  in Q-value space (`expected_q_update`; Gomes & Kowalczyk, ICML 2009, eq. 5
  for plain Q-learning; FAQ: Kaisers & Tuyls 2010)::

      E[dQ_i] = alpha min(x_i, beta) / kappa * (u_i - Q_i)   (beta = 1: plain Q-learning)

  with the policy ``softmax(Q / tau)`` or epsilon-greedy in Q. Where every
  x_i >= beta, at constant tau, the induced policy flow is the Boltzmann-Q /
  lenient field above times beta / kappa; otherwise it depends on the
  Q-values, not only on the policy, and is drawn on a slice.

Everything is written for one profile, is jit/vmap-able and computes in
float32 whether or not ``jax_enable_x64`` is on. The public functions check
concrete settings as `jaxgames.learners.tabular.learner_params` does; values
traced by ``jit``/``vmap`` (e.g. a swept temperature) are not checked.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

FIELDS = ("replicator", "boltzmann_q", "lenient_boltzmann", "q_learning")
POLICIES = ("boltzmann", "epsilon_greedy")

_F32 = np.finfo(np.float32)
# The smallest temperature (as `jaxgames.learners.tabular.TAU_MIN`): the smallest normal float32.
TAU_MIN = float(_F32.tiny)
_PROB_ATOL = 1e-4


def _concrete(value):
    """``value`` as a float64 numpy array, or None if it is traced (then it cannot be checked)."""
    if value is None or any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value)):
        return None
    return np.asarray(value, np.float64)


def _f32(value: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return value.astype(np.float32)


def _check_temperature(temperature, name: str = "temperature (tau)") -> None:
    t = _concrete(temperature)
    if t is not None and not np.all(np.isfinite(_f32(t)) & (_f32(t) >= TAU_MIN)):
        raise ValueError(
            f"{name} must be finite and at least {TAU_MIN:.3g} in float32 (the smallest normal float32; a smaller "
            f"tau is 0 or denormal in float32); got {temperature!r}"
        )


def _check_temperature_fn(tau_fn: Callable, num_iterations: int) -> None:
    """Checks a temperature schedule at t = 0 and t = num_iterations (the ends of a monotone schedule)."""
    for t in (0.0, float(num_iterations)):
        value = tau_fn(jnp.float32(t))
        try:
            _check_temperature(value)
        except ValueError as e:
            raise ValueError(f"the temperature schedule at t={t:g}: {e}") from None


def _check_leniency(leniency) -> None:
    k = _concrete(leniency)
    if k is not None and not np.all((k >= 1) & (k == np.round(k)) & np.isfinite(k)):
        raise ValueError(f"leniency (kappa) must be an integer >= 1; got {leniency!r}")


def _check_beta(beta) -> None:
    b = _concrete(beta)
    if b is not None and not np.all((_f32(b) > 0) & (b <= 1)):
        raise ValueError(f"beta (FAQ beta) must be None or in (0, 1] in float32; got {beta!r}")


def _check_epsilon(epsilon) -> None:
    e = _concrete(epsilon)
    if e is not None and not np.all((e >= 0) & (e <= 1)):
        raise ValueError(f"epsilon must be in [0, 1]; got {epsilon!r}")


def _check_learning_rate(learning_rate) -> None:
    a = _concrete(learning_rate)
    if a is not None and not np.all(np.isfinite(_f32(a)) & (_f32(a) > 0)):
        raise ValueError(f"learning_rate (alpha) must be finite and > 0 in float32; got {learning_rate!r}")


def _check_payoffs(payoffs, *, square: bool = False, who: str = "") -> None:
    p = _concrete(payoffs)
    if p is None:
        return
    if p.ndim != 3 or p.shape[0] != 2:
        raise ValueError(f"payoffs must be [2, n, m]; got shape {p.shape}")
    if square and p.shape[1] != p.shape[2]:
        raise ValueError(f"{who} needs a square game; got payoffs {p.shape}")
    if not np.all(np.isfinite(_f32(p))):
        raise ValueError(f"payoffs must be finite in float32 (|payoff| <= {_F32.max:.3g}); got {p.tolist()}")


def _check_policy(policy, length: int, name: str) -> None:
    """Raises ValueError unless a concrete ``policy`` is a probability vector ``[length]``."""
    x = _concrete(policy)
    if x is None:
        return
    if x.shape != (length,):
        raise ValueError(f"{name} must be a policy of shape ({length},) for this game; got shape {x.shape}")
    if not (np.all(np.isfinite(x) & (x >= 0)) and abs(x.sum() - 1) <= _PROB_ATOL):
        raise ValueError(f"{name} must be a probability vector (finite, >= 0, summing to 1 within {_PROB_ATOL:g}); got {x.tolist()}")


def _check_q(q, shape: tuple, name: str = "q") -> None:
    v = _concrete(q)
    if v is None:
        return
    if v.shape != shape:
        raise ValueError(f"{name} must be both players' Q-values {list(shape)}; got shape {v.shape}")
    if not np.all(np.isfinite(_f32(v))):
        raise ValueError(f"{name} must be finite in float32; got {v.tolist()}")


def _as_f32(value):
    """Float32 unless a Python number (weakly typed already), so x64 on or off computes the same."""
    if value is None or type(value) in (int, float):  # not np.float64, a float subclass that x64 keeps float64
        return value
    return jnp.asarray(value, jnp.float32)


def _as_leniency(leniency):
    """A Python int stays one (``f ** k`` is then an integer power); arrays become int32 or float32."""
    if isinstance(leniency, int):
        return leniency
    leniency = jnp.asarray(leniency)
    return leniency.astype(jnp.int32 if jnp.issubdtype(leniency.dtype, jnp.integer) else jnp.float32)


def lenient_utility(payoff_matrix: jax.Array, opponent: jax.Array, leniency) -> jax.Array:
    """Expected maximum of ``leniency`` rewards of each action (Panait et al. 2008, eq. 8).

    Action i's reward is ``payoff_matrix[i, j]`` with ``j ~ opponent``. With
    kappa i.i.d. draws, ``E[max] = sum_j A_ij y_j [F_le(ij)^k - F_lt(ij)^k] / F_eq(ij)``
    where ``F_le(ij) = sum_{k: A_ik <= A_ij} y_k`` (likewise ``<`` and ``==``);
    dividing by ``F_eq`` shares the probability of a tied maximum among the
    tied entries.

    Args:
        payoff_matrix: float ``[n, m]``, the learner's payoffs (row = own action).
        opponent: float ``[m]``, the opponent's mixed strategy.
        leniency: kappa >= 1 (scalar; may be traced).

    Returns:
        float32 ``[n]``. For kappa = 1 this is ``payoff_matrix @ opponent``.

    Raises:
        ValueError: for a (concrete) leniency that is not an integer >= 1.
    """
    _check_leniency(leniency)
    leniency = _as_leniency(leniency)
    a = jnp.asarray(payoff_matrix, jnp.float32)
    y = jnp.asarray(opponent, jnp.float32)
    le = a[:, None, :] <= a[:, :, None]  # [n, j, k]: A_ik <= A_ij
    lt = a[:, None, :] < a[:, :, None]
    eq = a[:, None, :] == a[:, :, None]
    f_le = jnp.sum(jnp.where(le, y, 0.0), axis=-1)
    f_lt = jnp.sum(jnp.where(lt, y, 0.0), axis=-1)
    f_eq = jnp.sum(jnp.where(eq, y, 0.0), axis=-1)
    weight = jnp.where(f_eq > 0, (f_le**leniency - f_lt**leniency) / jnp.where(f_eq > 0, f_eq, 1.0), 0.0)
    return jnp.sum(a * y * weight, axis=-1)


def _replicator_term(x, u):
    return x * (u - jnp.dot(x, u))


def _exploration_term(x):
    # sum_j x_j ln(x_j / x_i) = sum_j x_j ln x_j - ln x_i, with 0 ln 0 = 0.
    logx = jnp.log(jnp.where(x > 0, x, 1.0))
    return x * (jnp.sum(x * logx) - logx)


def _player_field(kind: str, x, u, temperature, learning_rate):
    if kind == "replicator":
        return learning_rate * _replicator_term(x, u)
    return learning_rate * (_replicator_term(x, u) / temperature + _exploration_term(x))


def _check_field_args(kind, payoffs, x, y, temperature, leniency, learning_rate, beta, names=("x", "y")) -> None:
    if kind not in FIELDS:
        raise ValueError(f"kind must be one of {FIELDS}; got {kind!r}")
    _check_payoffs(payoffs, square=kind == "q_learning", who="the q_learning field")
    n, m = np.shape(payoffs)[1:]
    _check_policy(x, n, f"{names[0]} (row strategy)")
    _check_policy(y, m, f"{names[1]} (column strategy)")
    _check_learning_rate(learning_rate)
    if kind != "replicator" and not callable(temperature):
        _check_temperature(temperature)
    if kind in ("lenient_boltzmann", "q_learning"):
        _check_leniency(leniency)
    if kind == "q_learning":
        _check_beta(beta)


def vector_field(
    kind: str, payoffs: jax.Array, x: jax.Array, y: jax.Array, *, temperature=1.0, leniency=1, learning_rate=1.0, beta=1.0
):
    """Time derivative ``(x', y')`` of both players' strategies.

    Args:
        kind: one of `FIELDS`. ``q_learning`` is the expected policy flow of
            the tabular Boltzmann learner (`expected_q_update`, with
            ``beta`` and ``leniency``) at constant tau on the slice
            ``Q = tau ln x`` (the Q-values the experiments start from);
            off that slice the flow of plain Q-learning differs, since its
            rates ``min(x_i, beta)`` differ between actions.
        payoffs: float ``[2, n, m]``.
        x: float ``[n]`` row strategy; y: float ``[m]`` column strategy.
        temperature: tau > 0 (Boltzmann fields).
        leniency: kappa >= 1 (lenient and q_learning fields).
        learning_rate: alpha; scales time (1 = OpenSpiel's ``egt.dynamics``).
        beta: FAQ beta in (0, 1] (q_learning field; 1 = plain Q-learning).

    Returns:
        ``(dx [n], dy [m])`` float32, per learner iteration.

    Raises:
        ValueError: for an unknown kind, payoffs that are not ``[2, n, m]``
            or not finite in float32, ``x`` or ``y`` not a probability
            vector of the right length, a temperature below `TAU_MIN`
            (~1.2e-38) or not finite in float32 (fields that use it), a
            leniency that is not an integer >= 1 (lenient and q_learning),
            a beta outside (0, 1] (q_learning), or a learning rate that is
            not finite and > 0. Only concrete values are checked (not values
            traced by jit or vmap).
    """
    _check_field_args(kind, payoffs, x, y, temperature, leniency, learning_rate, beta)
    x, y = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    temperature, learning_rate, beta = _as_f32(temperature), _as_f32(learning_rate), _as_f32(beta)
    leniency = _as_leniency(leniency)
    a, b = jnp.asarray(payoffs[0], jnp.float32), jnp.asarray(payoffs[1], jnp.float32)
    if kind == "q_learning":
        z = jnp.stack([x, y])
        q = temperature * jnp.log(jnp.clip(z, 1e-30, None))
        dq = expected_q_update(payoffs, q, temperature=temperature, leniency=leniency, learning_rate=learning_rate, beta=beta)
        v = boltzmann_policy_velocity(z, dq, temperature)
        return v[0], v[1]
    if kind == "lenient_boltzmann":
        ux = lenient_utility(a, y, leniency)
        uy = lenient_utility(b.T, x, leniency)
    else:
        ux, uy = a @ y, b.T @ x
    return (
        _player_field(kind, x, ux, temperature, learning_rate),
        _player_field(kind, y, uy, temperature, learning_rate),
    )


def integrate(
    kind: str,
    payoffs: jax.Array,
    x0: jax.Array,
    y0: jax.Array,
    *,
    num_iterations: int,
    num_steps: int = 1000,
    temperature: Callable[[jax.Array], jax.Array] | float = 1.0,
    leniency=1,
    learning_rate=1.0,
) -> tuple[jax.Array, jax.Array]:
    """Integrates a field with classical 4th-order Runge-Kutta over learner time.

    Args:
        kind, payoffs, leniency, learning_rate: as `vector_field`.
        x0: ``[n]``, y0: ``[m]``: the starting strategies (interior points).
        num_iterations: the time span, in learner iterations.
        num_steps: RK4 steps (static).
        temperature: tau, or a function of the iteration ``t`` (float32 ``[]``)
            giving tau (e.g. a learner's `Schedule` with its horizon).

    Returns:
        ``(xs [num_steps + 1, n], ys [num_steps + 1, m])``, states at the times
        ``linspace(0, num_iterations, num_steps + 1)``. The simplex is kept by
        clipping at 0 and renormalising after each step.

    Raises:
        ValueError: as `vector_field`, for ``x0`` and ``y0`` and the settings;
            a temperature function is checked at t = 0 and t = num_iterations
            (the ends of a monotone schedule) when it gives concrete values.
    """
    _check_field_args(kind, payoffs, x0, y0, temperature, leniency, learning_rate, 1.0, names=("x0", "y0"))
    if callable(temperature) and kind != "replicator":
        _check_temperature_fn(temperature, num_iterations)
    tau_fn = temperature if callable(temperature) else (lambda t: temperature)
    dt = num_iterations / num_steps

    def f(t, z):
        x, y = z
        return vector_field(kind, payoffs, x, y, temperature=tau_fn(t), leniency=leniency, learning_rate=learning_rate)

    def project(z):
        return tuple(jnp.clip(v, 0.0, None) / jnp.sum(jnp.clip(v, 0.0, None)) for v in z)

    z0 = (jnp.asarray(x0, jnp.float32), jnp.asarray(y0, jnp.float32))
    xs, ys = _rk4(f, z0, dt, num_steps, project)
    return xs, ys


def _rk4(f, z0, dt: float, num_steps: int, project=lambda z: z):
    """Classical 4th-order Runge-Kutta of ``z' = f(t, z)`` over a pytree ``z``.

    Returns the states at ``t = 0, dt, ..., num_steps * dt``, stacked on a
    new leading axis (``project`` applied after each step).
    """
    add = lambda z, k, h: jax.tree.map(lambda v, kv: v + h * kv, z, k)

    def step(z, i):
        t = i * dt
        k1 = f(t, z)
        k2 = f(t + dt / 2, add(z, k1, dt / 2))
        k3 = f(t + dt / 2, add(z, k2, dt / 2))
        k4 = f(t + dt, add(z, k3, dt))
        z = jax.tree.map(lambda v, a, b, c, d: v + dt / 6 * (a + 2 * b + 2 * c + d), z, k1, k2, k3, k4)
        z = project(z)
        return z, z

    _, zs = jax.lax.scan(step, z0, jnp.arange(num_steps, dtype=jnp.float32))
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), z0, zs)


def policy_of_q(q: jax.Array, *, exploration: str = "boltzmann", temperature=1.0, epsilon=0.0) -> jax.Array:
    """Both players' policies ``[2, n]`` from Q-values ``[2, n]`` (float32).

    ``boltzmann``: softmax(Q / tau), computed as softmax((Q - max Q) / tau)
    (every logit <= 0, so large finite Q-values or a tiny tau never give NaN;
    see `jaxgames.learners.tabular.exploration_policy`); ``epsilon_greedy``:
    1 - epsilon on the greedy action(s) (ties split evenly, as the learners)
    plus epsilon / n.

    Raises:
        ValueError: for an unknown exploration, or a concrete temperature
            below `TAU_MIN` or an epsilon outside [0, 1].
    """
    if exploration not in POLICIES:
        raise ValueError(f"exploration must be one of {POLICIES}; got {exploration!r}")
    q = jnp.asarray(q, jnp.float32)
    if exploration == "epsilon_greedy":
        _check_epsilon(epsilon)
        epsilon = _as_f32(epsilon)
        greedy = (q == jnp.max(q, axis=-1, keepdims=True)).astype(jnp.float32)
        greedy = greedy / jnp.sum(greedy, axis=-1, keepdims=True)
        return (1.0 - epsilon) * greedy + epsilon / q.shape[-1]
    _check_temperature(temperature)
    return jax.nn.softmax((q - jnp.max(q, axis=-1, keepdims=True)) / _as_f32(temperature), axis=-1)


def expected_q_update(
    payoffs: jax.Array,
    q: jax.Array,
    *,
    temperature=1.0,
    leniency=1,
    learning_rate=1.0,
    beta=None,
    exploration: str = "boltzmann",
    epsilon=0.0,
) -> jax.Array:
    """Expected change per iteration of both players' Q-values ``[2, n]``.

    ``E[dQ_i] = alpha r_i (u_i - Q_i)`` with ``u_i`` the (lenient) utility of
    action i against the other's policy and the rate

    * ``beta=None``: ``r_i = 1``, the idealised frequency-adjusted (FAQ)
      dynamics of Tuyls et al. 2006 / Kaisers & Tuyls 2010 / Bloembergen et
      al. 2015 in units where every action updates once per iteration
      (no 1/kappa: their lenient learners update at every play).
    * ``beta`` in (0, 1]: ``r_i = min(x_i, beta) / kappa``, the expected
      update of `jaxgames.learners.tabular` with ``faq_beta=beta``: action i
      is played with probability x_i, its Q-value moves once per kappa plays
      (lenient) by ``alpha min(beta / x_i, 1)`` of the TD error (FAQ; 1 for
      beta = 1, plain Q-learning). The lenient target is the maximum of
      kappa rewards drawn while the opponent's policy is (nearly) constant,
      whose mean is `lenient_utility`.

    Args:
        payoffs: float ``[2, n, n]`` (square game).
        q: float ``[2, n]``, both players' Q-values.
        temperature: tau (Boltzmann); epsilon: in [0, 1] (epsilon-greedy).
        leniency: kappa >= 1.
        learning_rate: alpha.
        beta: None or the FAQ beta (see above).
        exploration: one of `POLICIES`.

    Returns:
        float32 ``[2, n]``.

    Raises:
        ValueError: for payoffs that are not square or not finite in
            float32, Q-values that are not ``[2, n]`` or not finite, an
            unknown exploration, or a (concrete) setting out of range as in
            `vector_field` (epsilon in [0, 1]).
    """
    _check_payoffs(payoffs, square=True, who="expected_q_update")
    _check_q(q, (2, np.shape(payoffs)[1]))
    _check_leniency(leniency)
    _check_beta(beta)
    _check_learning_rate(learning_rate)
    learning_rate, beta, leniency = _as_f32(learning_rate), _as_f32(beta), _as_leniency(leniency)
    payoffs = jnp.asarray(payoffs, jnp.float32)
    q = jnp.asarray(q, jnp.float32)
    x, y = policy_of_q(q, exploration=exploration, temperature=temperature, epsilon=epsilon)
    u = jnp.stack([lenient_utility(payoffs[0], y, leniency), lenient_utility(payoffs[1].T, x, leniency)])
    if beta is None:
        rate = 1.0
    else:
        rate = jnp.minimum(jnp.stack([x, y]), beta) / leniency
    return learning_rate * rate * (u - q)


def boltzmann_policy_velocity(policy: jax.Array, dq: jax.Array, temperature) -> jax.Array:
    """``d/dt softmax(Q / tau)`` at constant tau: ``x_i (dQ_i - x . dQ) / tau`` (rows are players)."""
    policy, dq = jnp.asarray(policy, jnp.float32), jnp.asarray(dq, jnp.float32)
    mean = jnp.sum(policy * dq, axis=-1, keepdims=True)
    return policy * (dq - mean) / _as_f32(temperature)


def integrate_q(
    payoffs: jax.Array,
    q0: jax.Array,
    *,
    num_iterations: int,
    num_steps: int = 1000,
    temperature: Callable[[jax.Array], jax.Array] | float = 1.0,
    leniency=1,
    learning_rate=1.0,
    beta=None,
    exploration: str = "boltzmann",
    epsilon: Callable[[jax.Array], jax.Array] | float = 0.0,
) -> tuple[jax.Array, jax.Array]:
    """Integrates learning dynamics in Q-value space (`expected_q_update`), with schedules.

    ``Q_p' = E[dQ_p]`` with ``x_p = softmax(Q_p / tau(t))``, or epsilon-greedy
    in Q_p (Gomes & Kowalczyk 2009; the right-hand side jumps where the
    greedy action changes, and fixed-step RK4 resolves the sliding along the
    switching line to O(step)). ``beta=None`` is the idealised FAQ / lenient
    FAQ dynamics, equal to the x-space `vector_field` at constant tau; it is
    integrated in Q-space because, under a schedule, this form also carries
    the policy change caused by the change of tau, and it is not stiff at
    small tau. ``beta`` in (0, 1] gives the expected dynamics of the tabular
    learner with ``faq_beta=beta`` (1 = plain Q-learning), 1/kappa included.

    Args:
        payoffs: float ``[2, n, n]`` (square games: both players' Q ``[2, n]``).
        q0: float ``[2, n]``, starting Q-values (``tau_0 ln x_0`` starts at x_0).
        num_iterations: the time span, in learner iterations.
        num_steps: RK4 steps (static).
        temperature: tau, or a function of the iteration ``t`` (float32 ``[]``).
        leniency, learning_rate, beta, exploration: as `expected_q_update`.
        epsilon: epsilon, or a function of ``t`` (epsilon-greedy).

    Returns:
        ``(xs, ys)``, float32 ``[num_steps + 1, n]`` each: the policies at
        ``linspace(0, num_iterations, num_steps + 1)``.

    Raises:
        ValueError: if the game is not square or the exploration is unknown,
            and as `expected_q_update` for ``q0`` and the settings;
            temperature and epsilon functions are checked at t = 0 and
            t = num_iterations (the ends of a monotone schedule) when they
            give concrete values.
    """
    if np.ndim(payoffs) != 3 or np.shape(payoffs)[1] != np.shape(payoffs)[2]:
        raise ValueError(f"integrate_q needs a square game; got payoffs {np.shape(payoffs)}")
    if exploration not in POLICIES:
        raise ValueError(f"exploration must be one of {POLICIES}; got {exploration!r}")
    tau_fn = temperature if callable(temperature) else (lambda t: temperature)
    eps_fn = epsilon if callable(epsilon) else (lambda t: epsilon)
    _check_payoffs(payoffs, square=True, who="integrate_q")
    _check_q(q0, (2, np.shape(payoffs)[1]), "q0")
    _check_leniency(leniency)
    _check_beta(beta)
    _check_learning_rate(learning_rate)
    if exploration == "boltzmann":
        _check_temperature_fn(tau_fn, num_iterations)
    else:
        for t in (0.0, float(num_iterations)):
            _check_epsilon(eps_fn(jnp.float32(t)))
    payoffs = jnp.asarray(payoffs, jnp.float32)
    dt = num_iterations / num_steps

    def policies(t, q):
        return policy_of_q(q, exploration=exploration, temperature=tau_fn(t), epsilon=eps_fn(t))

    def f(t, q):
        return expected_q_update(
            payoffs, q, temperature=tau_fn(t), leniency=leniency, learning_rate=learning_rate, beta=beta,
            exploration=exploration, epsilon=eps_fn(t),
        )

    qs = _rk4(f, jnp.asarray(q0, jnp.float32), dt, num_steps)
    pols = jax.vmap(policies)(jnp.arange(num_steps + 1, dtype=jnp.float32) * dt, qs)
    return pols[:, 0], pols[:, 1]
