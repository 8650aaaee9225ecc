"""Empirical learning fields: the learners' own mean flow, measured from many short runs.

From each point of a grid of policies, ``runs_per_point`` independent runs
of the batched tabular learners (`jaxgames.learners.tabular`) start there
and play ``horizon`` iterations at a constant temperature (epsilon); the
mean displacement of the policy divided by ``horizon`` estimates the
learner's flow at that point, per iteration, with its standard error. It is
the quantity the theoretical fields (`jaxgames.dynamics.fields`) predict, so
the two can be drawn together; for plain Q-learning it is measured on the
same slice ``Q = tau ln x`` that the ``q_learning`` field is drawn on.

All points and runs are one `tabular.run_sweep` call (one compilation per
learner config, cached there).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from jaxgames.learners import tabular


class EmpiricalField(NamedTuple):
    """A measured flow.

    Attributes:
        points: float32 ``[P, 2, A]``, the starting policies.
        velocity: float64 ``[P, 2, A]``, mean policy change per iteration.
        stderr: float64 ``[P, 2, A]``, its standard error over the runs.
    """

    points: np.ndarray
    velocity: np.ndarray
    stderr: np.ndarray


def empirical_field(
    game,
    exploration: str,
    params: tabular.LearnerParams,
    points: np.ndarray,
    key: jax.Array,
    *,
    horizon: int = 2000,
    runs_per_point: int = 64,
    max_leniency: int | None = None,
    chunk_size: int = 8192,
) -> EmpiricalField:
    """Measures the mean flow of a learner at each of ``points``.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        exploration: one of `tabular.EXPLORATIONS`.
        params: one run's `LearnerParams` (scalars); its schedules should be
            constant (a schedule would run over ``horizon`` only).
        points: float ``[P, 2, A]`` starting policies (interior points for
            Boltzmann learners; Q-values start at ``tau_0 ln x``).
        key: PRNG key.
        horizon: iterations per run (short against the time the policy takes
            to move, long enough that the mean moves well beyond its noise).
        runs_per_point: independent runs from each point.
        max_leniency: the lenient buffer size (default: the params' kappa).
        chunk_size: runs per compiled call.

    Returns:
        `EmpiricalField`.

    Raises:
        ValueError: for a horizon or runs_per_point below 1 (and see
            `tabular.run_sweep`).
    """
    if horizon < 1 or runs_per_point < 1:
        raise ValueError(f"horizon and runs_per_point must be >= 1; got {horizon}, {runs_per_point}")
    points = np.asarray(points, np.float32)
    num_points = points.shape[0]
    kappa = int(np.asarray(params.leniency))
    config = tabular.LearnerConfig(
        exploration=exploration, num_iterations=horizon, record_every=None, max_leniency=max_leniency or kappa
    )
    starts = np.repeat(points, runs_per_point, axis=0)  # [P * N, 2, A]
    stacked = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (starts.shape[0],) + np.shape(x)), params)
    initial_q = tabular.initial_q_from_policy(config, starts, stacked)
    keys = jax.random.split(key, starts.shape[0])
    out = tabular.run_sweep(game, config, keys, stacked, initial_q, chunk_size=chunk_size, progress=False)
    # The policy the learner starts from (epsilon-greedy runs start at their greedy policy, not at `points`).
    start_policy = out.trajectory[:, 0]
    moves = (out.policy.astype(np.float64) - start_policy) / horizon
    moves = moves.reshape(num_points, runs_per_point, *moves.shape[1:])
    velocity = moves.mean(axis=1)
    stderr = moves.std(axis=1, ddof=1) / np.sqrt(runs_per_point) if runs_per_point > 1 else np.zeros_like(velocity)
    return EmpiricalField(points, velocity, stderr)
