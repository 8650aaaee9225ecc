"""Equilibrium analysis of two-player normal-form games, computed from the payoffs.

Nothing here is hard-coded per game: Nash equilibria come from support
enumeration (Nisan et al., *Algorithmic Game Theory* (2007), section 3.3;
Shoham & Leyton-Brown (2008), section 4.2), Pareto optima from pairwise
dominance of the pure outcomes. Plain numpy in float64: these run once per
game, not inside a trace.

Profiles are ``(x, y)``: ``x`` float64 ``[n]`` the row player's mixed
strategy, ``y`` float64 ``[m]`` the column player's.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from jaxgames.games.matrix import MatrixGame, validate_payoffs


class Profile(NamedTuple):
    """A mixed-strategy profile.

    Attributes:
        x: float64 ``[n]``, the row player's probabilities.
        y: float64 ``[m]``, the column player's probabilities.
    """

    x: np.ndarray
    y: np.ndarray

    def point(self) -> tuple[float, ...]:
        """The seed's tuple notation: (P(first action) of each player) for 2x2 games,
        otherwise every probability but the last of each player."""
        return tuple(np.round(np.concatenate([self.x[:-1], self.y[:-1]]), 6).tolist())

    def is_pure(self, atol: float = 1e-9) -> bool:
        return bool(np.isclose(self.x.max(), 1, atol=atol) and np.isclose(self.y.max(), 1, atol=atol))


def _payoffs(game) -> np.ndarray:
    if isinstance(game, MatrixGame):
        return game.payoffs_np.astype(np.float64)
    return validate_payoffs(game).astype(np.float64)


def expected_payoffs(game, x, y) -> np.ndarray:
    """Expected payoff of each player under the mixed profile ``(x, y)``.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        x: ``[n]`` row strategy; y: ``[m]`` column strategy (probability vectors).

    Returns:
        float64 ``[2]``: ``(x^T A y, x^T B y)``.

    Raises:
        ValueError: if ``x``/``y`` have the wrong length or are not probability vectors.
    """
    p = _payoffs(game)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    for name, v, k in (("x", x, p.shape[1]), ("y", y, p.shape[2])):
        if v.shape != (k,):
            raise ValueError(f"{name} must have shape ({k},); got {v.shape}")
        if np.any(v < -1e-12) or not np.isclose(v.sum(), 1.0):
            raise ValueError(f"{name} must be a probability vector; got {v}")
    return np.einsum("i,pij,j->p", x, p, y)


def _solve_indifference(m: np.ndarray) -> np.ndarray | None:
    """Probabilities z >= 0 on the columns of ``m`` [k, s] making every row of ``m z`` equal.

    Solves [m, -1; 1, 0] [z; v] = [0; 1] by least squares and returns z if the
    system is solved exactly, else None.
    """
    k, s = m.shape
    lhs = np.zeros((k + 1, s + 1))
    lhs[:k, :s] = m
    lhs[:k, s] = -1.0
    lhs[k, :s] = 1.0
    rhs = np.zeros(k + 1)
    rhs[k] = 1.0
    sol, *_ = np.linalg.lstsq(lhs, rhs, rcond=None)
    if not np.allclose(lhs @ sol, rhs, atol=1e-9):
        return None
    return sol[:s]


def nash_equilibria(game, *, atol: float = 1e-9) -> list[Profile]:
    """All Nash equilibria of a two-player game, by support enumeration.

    For every pair of supports (I, J) it solves the indifference conditions
    (the column strategy on J makes the row player indifferent on I and vice
    versa), then keeps the solutions that are probability vectors and from
    which no action outside the support is a profitable deviation. Exact for
    non-degenerate games (every equilibrium is isolated). For degenerate games
    with a continuum of equilibria it returns representatives of the
    continuum (the least-norm solution of each support pair), deduplicated.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]`` (up to about 12 actions
            each; the enumeration is exponential).
        atol: tolerance of the feasibility and best-response checks.

    Returns:
        `Profile` list, pure equilibria first, each rounded to 12 decimals.

    Raises:
        ValueError: on invalid payoffs or more than 12 actions for a player.
    """
    p = _payoffs(game)
    a, b = p
    n, m = a.shape
    if max(n, m) > 12:
        raise ValueError(f"support enumeration is exponential; at most 12 actions each, got {(n, m)}")
    found: list[Profile] = []
    for size_i in range(1, n + 1):
        for rows in itertools.combinations(range(n), size_i):
            for size_j in range(1, m + 1):
                for cols in itertools.combinations(range(m), size_j):
                    # y on cols makes the row player indifferent over rows; x on rows likewise.
                    y_s = _solve_indifference(a[np.ix_(rows, cols)])
                    x_s = _solve_indifference(b[np.ix_(rows, cols)].T)
                    if y_s is None or x_s is None or y_s.min() < -atol or x_s.min() < -atol:
                        continue
                    x = np.zeros(n)
                    y = np.zeros(m)
                    x[list(rows)] = np.clip(x_s, 0, None)
                    y[list(cols)] = np.clip(y_s, 0, None)
                    x /= x.sum()
                    y /= y.sum()
                    row_values = a @ y
                    col_values = x @ b
                    if row_values.max() > x @ row_values + atol or col_values.max() > col_values @ y + atol:
                        continue
                    prof = Profile(np.round(x, 12), np.round(y, 12))
                    if not any(np.allclose(prof.x, q.x, atol=1e-7) and np.allclose(prof.y, q.y, atol=1e-7) for q in found):
                        found.append(prof)
    found.sort(key=lambda q: (not q.is_pure(), tuple(-q.x), tuple(-q.y)))
    return found


def pareto_optimal_outcomes(game) -> list[tuple[int, int]]:
    """The pure outcomes no other pure outcome Pareto-dominates.

    ``(i, j)`` is dominated by ``(k, l)`` if both players get at least as much
    there and one strictly more.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.

    Returns:
        ``(row action, column action)`` pairs in row-major order.
    """
    p = _payoffs(game)
    flat = p.reshape(2, -1).T  # [n*m, 2]
    m = p.shape[2]
    out = []
    for idx, v in enumerate(flat):
        dominated = np.any(np.all(flat >= v, axis=1) & np.any(flat > v, axis=1))
        if not dominated:
            out.append((idx // m, idx % m))
    return out


def pure_profile(game, i: int, j: int) -> Profile:
    """The pure profile (i, j) as a `Profile` of one-hot vectors."""
    n, m = _payoffs(game).shape[1:]
    return Profile(np.eye(n)[i], np.eye(m)[j])


def is_nash_equilibrium(game, x, y, *, atol: float = 1e-7) -> bool:
    """True if no player gains more than ``atol`` by a unilateral deviation."""
    a, b = _payoffs(game)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return bool((a @ y).max() <= x @ a @ y + atol and (x @ b).max() <= x @ b @ y + atol)
