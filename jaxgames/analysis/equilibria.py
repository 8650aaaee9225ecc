"""Equilibrium analysis of two-player normal-form games, computed from the payoffs.

Nash equilibria are computed exactly, with no tolerance anywhere: the
extreme equilibria of a bimatrix game are the completely labelled vertex
pairs of the two best-response polytopes (Mangasarian 1964; von Stengel,
"Equilibrium computation for two-player games in strategic and extensive
form", *Algorithmic Game Theory* (2007), chapter 3, section 3.5; Avis,
Rosenberg, Savani & von Stengel, "Enumeration of Nash equilibria for
two-player games", *Economic Theory* 42 (2010)), and every vertex is found by
integer pivoting over the lexicographically feasible bases, so degenerate
games are handled exactly too. This is the method of Gambit's
``enummixed`` (https://www.gambit-project.org), the tests' reference; Gambit
is not called here because its exact mode is far slower, it has no wheel,
and version 16.7 returns no equilibria once the payoffs span 2**31 or more.

* Each payoff is read as an exact rational, a float as the shortest decimal
  that rounds to it in its own dtype (Python's ``str``, as Gambit reads
  floats), so ``0.05`` is 1/20 and ``np.float32(0.1)`` is 1/10.
* Each player's payoffs are mapped to positive integers by the positive
  affine map ``k (u - min u) + 1`` with the least ``k`` that clears
  denominators. Nash equilibria are invariant under such maps, so the
  answer does not depend on the payoff scale.

Degenerate games can have infinitely many equilibria. Their set is the finite
union of the maximal Nash subsets ``conv(X) x conv(Y)``, the maximal
bicliques of the bipartite graph whose edges are the extreme equilibria, and
its connected components are the connected components of that graph (Winkels
1979; Jansen, "Maximal Nash subsets for bimatrix games", *Naval Research
Logistics Quarterly* 28 (1981); Avis et al. 2010). `equilibrium_components`
reports them; `nash_equilibria` lists the extreme equilibria, which for a
non-degenerate game are all of its (isolated) equilibria.

Pareto optima come from pairwise dominance of the pure outcomes. Plain numpy
and Python fractions: these run once per game, not inside a trace.

Profiles are ``(x, y)``: ``x`` float64 ``[n]`` the row player's mixed
strategy, ``y`` float64 ``[m]`` the column player's; `Profile.point` prints
them as the tables of El Kaddouri, Rys & Gao, "Multi Agent Reinforcement
Learning With Dots And Boxes" (course report, undated), section 3.1.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from jaxgames.games.matrix import MatrixGame, validate_payoffs

# Largest deviation of a strategy's sum from 1 that `expected_payoffs` and
# `is_nash_equilibrium` accept (float32 policies over a few actions sum to 1
# within about 1e-7).
_SUM_TOL = 1e-5


class Profile(NamedTuple):
    """A mixed-strategy profile.

    Attributes:
        x: float64 ``[n]``, the row player's probabilities.
        y: float64 ``[m]``, the column player's probabilities.
    """

    x: np.ndarray
    y: np.ndarray

    def point(self) -> tuple[float, ...]:
        """The tuple notation of El Kaddouri et al., section 3.1, tables 1-2: P(first action) of
        each player for 2x2 games, otherwise every probability but the last of each player."""
        return tuple(np.round(np.concatenate([self.x[:-1], self.y[:-1]]), 6).tolist())

    def is_pure(self, atol: float = 1e-9) -> bool:
        return bool(np.isclose(self.x.max(), 1, atol=atol) and np.isclose(self.y.max(), 1, atol=atol))


class RationalProfile(NamedTuple):
    """A mixed-strategy profile in exact rational arithmetic.

    Attributes:
        x: ``n`` `fractions.Fraction`, the row player's probabilities.
        y: ``m`` `fractions.Fraction`, the column player's probabilities.
    """

    x: tuple[Fraction, ...]
    y: tuple[Fraction, ...]

    def to_float(self) -> Profile:
        """The float64 `Profile` (each probability rounded to the nearest float)."""
        return Profile(np.array([float(v) for v in self.x]), np.array([float(v) for v in self.y]))


class NashSubset(NamedTuple):
    """A maximal Nash subset ``conv(xs) x conv(ys)``: every ``(x, y)`` with ``x``
    a convex combination of the rows of ``xs`` and ``y`` one of the rows of
    ``ys`` is a Nash equilibrium, and no larger such product is (Jansen 1981).

    Attributes:
        xs: float64 ``[kx, n]``, its extreme row strategies.
        ys: float64 ``[ky, m]``, its extreme column strategies.
    """

    xs: np.ndarray
    ys: np.ndarray


class EquilibriumComponent(NamedTuple):
    """A connected component of the set of Nash equilibria.

    It is the union of its maximal Nash subsets (each a product of polytopes),
    so it is a single point exactly when it has one extreme equilibrium.

    Attributes:
        extreme_equilibria: the `Profile` vertices of the component (pure
            ones first), the extreme equilibria that lie in it.
        nash_subsets: its maximal Nash subsets, `NashSubset` list.
    """

    extreme_equilibria: list[Profile]
    nash_subsets: list[NashSubset]

    def is_isolated(self) -> bool:
        """True if the component is a single equilibrium (an isolated point)."""
        return len(self.extreme_equilibria) == 1


def _payoffs(game) -> np.ndarray:
    """float64 ``[2, n, m]`` (a raw array keeps its own precision, not float32's)."""
    if isinstance(game, MatrixGame):
        return game.payoffs_np.astype(np.float64)
    validate_payoffs(game, float32=False)
    return np.asarray(game, dtype=np.float64)


def _to_fraction(v) -> Fraction:
    if isinstance(v, (bool, np.bool_)):
        return Fraction(int(v))
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    if isinstance(v, (Fraction, Decimal)):
        return Fraction(v)
    # A float: the shortest decimal that rounds to it in its own dtype.
    return Fraction(str(v))


def _exact_payoffs(game) -> list[list[list[Fraction]]]:
    """Each payoff as a `Fraction`, ``[2][n][m]`` nested lists (module docstring)."""
    if isinstance(game, MatrixGame):
        arr = game.payoffs_np
    else:
        validate_payoffs(game, float32=False)  # rank, shape and finiteness checks
        arr = np.asarray(game)
        if arr.dtype.kind not in "biufO":
            arr = arr.astype(np.float64)
    return [[[_to_fraction(v) for v in row] for row in player] for player in arr]


def _integer_payoffs(table: list[list[Fraction]]) -> list[list[int]]:
    """The positive integer table ``k (u - min u) + 1`` with the least ``k > 0`` that clears
    every denominator and common factor: a positive affine image of ``table`` (a constant table
    becomes ones)."""
    low = min(min(row) for row in table)
    shifted = [[v - low for v in row] for row in table]
    den = math.lcm(*(v.denominator for row in shifted for v in row))
    ints = [[int(v * den) for v in row] for row in shifted]
    common = math.gcd(*(v for row in ints for v in row)) or 1
    return [[v // common + 1 for v in row] for row in ints]


def _lex_min_ratio_row(t: list[list[int]], col: int, lex_order: list[int]) -> int:
    """The leaving row of the lexicographic minimum-ratio test for entering column ``col``.

    Rows with a positive entry in ``col`` compete on ``(rhs, then the columns of the
    starting basis) / t[row][col]``, compared by cross-multiplication; the rows of the
    starting basis's inverse are independent, so the minimum is unique.
    """
    best = -1
    for r, row in enumerate(t):
        if row[col] <= 0:
            continue
        if best < 0:
            best = r
            continue
        lead = t[best]
        for j in lex_order:
            left, right = row[j] * lead[col], lead[j] * row[col]
            if left != right:
                if left < right:
                    best = r
                break
    return best


def _polytope_vertices(m: list[list[int]], labels: list[int]) -> dict[tuple[tuple[int, ...], int], int]:
    """Every vertex of ``{z >= 0 : M z <= 1}`` for a positive integer matrix ``M`` [k, d], exactly.

    Depth-first search over the lexicographically feasible bases (the vertices of the
    lexicographically perturbed, hence simple, polytope; each vertex of the original is one's
    limit) with integer pivoting: the tableau holds ``det * B^-1 [M | I | 1]``, every entry an
    integer subdeterminant (Edmonds 1967; von Stengel 2007, section 3.6 and 3.5 for the labels).

    Args:
        m: ``k`` rows of ``d`` positive ints.
        labels: the label (bit index) of ``z_0 .. z_{d-1}`` then of the slacks of the ``k`` rows.

    Returns:
        ``{(numerators of z, common denominator), in lowest terms: bit mask of the labels of the
        constraints tight there}``, the origin included.
    """
    k, d = len(m), len(m[0])
    ncol, rhs = d + k, d + k
    lex_order = [rhs, *range(d, d + k)]  # the perturbation: rhs first, then the starting basis's columns
    start = [list(row) + [int(i == r) for i in range(k)] + [1] for r, row in enumerate(m)]
    basis0 = tuple(range(d, d + k))
    seen = {frozenset(basis0)}
    stack = [(basis0, start, 1)]
    vertices: dict[tuple[tuple[int, ...], int], int] = {}
    while stack:
        basis, t, det = stack.pop()
        values = [0] * ncol
        for r, var in enumerate(basis):
            values[var] = t[r][rhs]
        g = math.gcd(det, *values[:d])
        key = (tuple(v // g for v in values[:d]), det // g)
        if key not in vertices:
            vertices[key] = sum(1 << labels[v] for v in range(ncol) if values[v] == 0)
        in_basis = set(basis)
        for col in range(ncol):
            if col in in_basis:
                continue
            r = _lex_min_ratio_row(t, col, lex_order)
            if r < 0:  # cannot happen: M > 0 makes the polytope bounded
                raise RuntimeError(f"unbounded edge in the best-response polytope of {m}")
            new_basis = basis[:r] + (col,) + basis[r + 1 :]
            frozen = frozenset(new_basis)
            if frozen in seen:
                continue
            seen.add(frozen)
            pivot_row = t[r]
            p = pivot_row[col]
            new_t = [
                pivot_row if i == r else [(a * p - row[col] * b) // det for a, b in zip(row, pivot_row)]
                for i, row in enumerate(t)
            ]
            stack.append((new_basis, new_t, p))
    return vertices


def _exact_sort_key(q: RationalProfile):
    pure = max(q.x) == 1 and max(q.y) == 1
    return (not pure, tuple(-v for v in q.x), tuple(-v for v in q.y))


def extreme_equilibria(game) -> list[RationalProfile]:
    """The extreme Nash equilibria of a two-player game, exactly.

    These are the vertices of the equilibrium set: all the equilibria of a
    non-degenerate game, and the corners of the components of a degenerate
    one (see `equilibrium_components`). They are the completely labelled
    vertex pairs ``(x, y) != (0, 0)`` of the best-response polytopes
    ``P = {x >= 0 : B^T x <= 1}`` and ``Q = {y >= 0 : A y <= 1}``, normalised
    (Mangasarian 1964; von Stengel 2007, section 3.5, theorem 3.4; Avis et
    al. 2010), with each player's payoffs first mapped to positive integers
    by a positive affine map of its own (module docstring). The work grows
    with the number of polytope vertices (the upper bound theorem: at most a
    few thousand for 10 actions each; timings in ``benchmarks/README.md``).

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]`` (ints, floats or
            `fractions.Fraction`; floats are read as their shortest decimal).

    Returns:
        `RationalProfile` list, each extreme equilibrium once: pure ones
        first, then by decreasing probabilities.

    Raises:
        ValueError: on invalid payoffs (see `jaxgames.games.matrix.validate_payoffs`).
    """
    a, b = (_integer_payoffs(t) for t in _exact_payoffs(game))
    n, m = len(a), len(a[0])
    # Labels: row action i is bit i (x_i = 0 in P; (A y)_i = 1 in Q), column action j is bit n + j.
    p_vertices = _polytope_vertices([[b[i][j] for i in range(n)] for j in range(m)], [*range(n), *range(n, n + m)])
    q_vertices = _polytope_vertices(a, [*range(n, n + m), *range(n)])
    xs = [(x, mask) for (x, _), mask in p_vertices.items() if any(x)]
    ys = [(y, mask) for (y, _), mask in q_vertices.items() if any(y)]
    everything = (1 << (n + m)) - 1
    if n + m <= 64:  # the labels as bit masks, all pairs at once in chunks of about 4M
        x_masks = np.array([mask for _, mask in xs], dtype=np.uint64)
        y_masks = np.array([mask for _, mask in ys], dtype=np.uint64)
        chunk = max(1, (1 << 22) // max(len(ys), 1))
        pairs = []
        for lo in range(0, len(xs), chunk):
            hits = np.argwhere((x_masks[lo : lo + chunk, None] | y_masks[None, :]) == np.uint64(everything))
            pairs += [(lo + i, j) for i, j in hits.tolist()]
    else:
        pairs = [(i, j) for i, (_, xm) in enumerate(xs) for j, (_, ym) in enumerate(ys) if xm | ym == everything]
    found = []
    for i, j in pairs:
        x, y = xs[i][0], ys[j][0]
        x_total, y_total = sum(x), sum(y)
        found.append(RationalProfile(tuple(Fraction(v, x_total) for v in x), tuple(Fraction(v, y_total) for v in y)))
    return sorted(found, key=_exact_sort_key)


def _sort_key(q: Profile):
    return (not q.is_pure(), tuple(-q.x), tuple(-q.y))


def nash_equilibria(game) -> list[Profile]:
    """The extreme Nash equilibria of a two-player game, as float64 profiles.

    For a non-degenerate game (every equilibrium isolated, e.g. every game
    whose payoffs are in general position) these are all of its equilibria,
    an odd number (Wilson 1971). A degenerate game can have infinitely many;
    then these are the finitely many vertices of its equilibrium set, and
    `equilibrium_components` tells which of them bound a continuum. Exact:
    no tolerance, the same at any payoff scale (see `extreme_equilibria`).

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.

    Returns:
        `Profile` list, pure equilibria first, then by decreasing
        probabilities; never empty (Nash 1951).

    Raises:
        ValueError: on invalid payoffs.
    """
    return [q.to_float() for q in extreme_equilibria(game)]


def equilibrium_components(game) -> list[EquilibriumComponent]:
    """The connected components of the set of Nash equilibria, with their maximal Nash subsets.

    The extreme equilibria are the edges of a bipartite graph between the
    extreme row strategies and the extreme column strategies that occur in
    them. Its maximal bicliques ``(X, Y)`` are the maximal Nash subsets
    ``conv(X) x conv(Y)``, whose union is the equilibrium set, and its
    connected components are the components of that set (Winkels 1979;
    Jansen 1981; Avis et al. 2010). A non-degenerate game has only isolated
    components, one per equilibrium; the all-zero game has one, the whole
    product of the two simplices.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.

    Returns:
        `EquilibriumComponent` list, ordered like their first extreme
        equilibrium in `nash_equilibria`.

    Raises:
        ValueError: on invalid payoffs.
    """
    eqs = extreme_equilibria(game)
    xs = list(dict.fromkeys(q.x for q in eqs))
    ys = list(dict.fromkeys(q.y for q in eqs))
    nbrs: dict[tuple, set] = {x: set() for x in xs}
    for q in eqs:
        nbrs[q.x].add(q.y)
    # Connected components of the bipartite graph (union-find over the x's through shared y's).
    parent = {x: x for x in xs}

    def root(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[tuple, tuple] = {}
    for q in eqs:
        if q.y in owner:
            parent[root(q.x)] = root(owner[q.y])
        else:
            owner[q.y] = q.x
    # Maximal bicliques: every nonempty intersection of neighbourhoods N(x) is the Y of one,
    # with X = {x : Y <= N(x)} (closure of the neighbourhood sets under intersection).
    closed: set[frozenset] = set()
    frontier = [frozenset(nbrs[x]) for x in xs]
    while frontier:
        y_set = frontier.pop()
        if y_set in closed:
            continue
        closed.add(y_set)
        for x in xs:
            meet = y_set & nbrs[x]
            if meet and meet not in closed:
                frontier.append(meet)
    subsets: dict[tuple, list] = {root(x): [] for x in xs}
    for y_set in closed:
        x_set = [x for x in xs if y_set <= nbrs[x]]
        subsets[root(x_set[0])].append((x_set, [y for y in ys if y in y_set]))

    def floats(vs):
        return np.array([[float(v) for v in vec] for vec in vs])

    out = []
    for r, parts in subsets.items():
        members = [q.to_float() for q in eqs if root(q.x) == r]
        parts.sort(key=lambda p: (xs.index(p[0][0]), ys.index(p[1][0]), -len(p[0]), -len(p[1])))
        out.append(
            EquilibriumComponent(
                sorted(members, key=_sort_key), [NashSubset(floats(px), floats(py)) for px, py in parts]
            )
        )
    out.sort(key=lambda c: _sort_key(c.extreme_equilibria[0]))
    return out


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


def _check_strategy(name: str, v, k: int) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (k,):
        raise ValueError(f"{name} must have shape ({k},); got {v.shape}")
    if not np.all(np.isfinite(v)) or np.any(v < 0) or abs(v.sum() - 1.0) > _SUM_TOL:
        raise ValueError(f"{name} must be a probability vector (finite, >= 0, sum 1); got {v.tolist()}")
    return v


def expected_payoffs(game, x, y) -> np.ndarray:
    """Expected payoff of each player under the mixed profile ``(x, y)``.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        x: ``[n]`` row strategy; y: ``[m]`` column strategy (probability vectors).

    Returns:
        float64 ``[2]``: ``(x^T A y, x^T B y)``.

    Raises:
        ValueError: if ``x``/``y`` have the wrong length or are not probability
            vectors (a non-finite or negative entry, or a sum off 1 by more than 1e-5).
    """
    p = _payoffs(game)
    x = _check_strategy("x", x, p.shape[1])
    y = _check_strategy("y", y, p.shape[2])
    return np.einsum("i,pij,j->p", x, p, y)


def is_nash_equilibrium(game, x, y, *, atol: float = 1e-7) -> bool:
    """True if no player gains more than ``atol`` of its own payoff range by a unilateral deviation.

    Scale-invariant: each player's payoffs ``u`` are first mapped to [0, 1] by
    ``(u - min u) / (max u - min u)`` (a constant table to zeros), a positive
    affine map that leaves the equilibria unchanged; then the row player's
    regret ``max_i (A y)_i - x^T A y`` and the column player's
    ``max_j (x^T B)_j - x^T B y`` must both be at most ``atol``.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        x: ``[n]`` row strategy; y: ``[m]`` column strategy (probability vectors).
        atol: finite, non-negative tolerance on the normalised regrets (a
            fraction of each player's payoff range).

    Returns:
        Whether ``(x, y)`` is an ``atol``-Nash equilibrium.

    Raises:
        ValueError: if ``x``/``y`` have the wrong length or are not probability
            vectors (a non-finite or negative entry, or a sum off 1 by more
            than 1e-5), or ``atol`` is negative, NaN or infinite.
        TypeError: if ``atol`` is not a real number.
    """
    if isinstance(atol, (bool, np.bool_)) or not isinstance(atol, numbers.Real):
        raise TypeError(f"atol must be a real number; got {atol!r}")
    if not (math.isfinite(atol) and atol >= 0):
        raise ValueError(f"atol must be a finite non-negative number; got {atol!r}")
    p = _payoffs(game)
    x = _check_strategy("x", x, p.shape[1])
    y = _check_strategy("y", y, p.shape[2])
    low = p.min(axis=(1, 2), keepdims=True)
    spread = p.max(axis=(1, 2), keepdims=True) - low
    a, b = np.where(spread > 0, (p - low) / np.where(spread > 0, spread, 1.0), 0.0)
    row_regret = (a @ y).max() - x @ a @ y
    col_regret = (x @ b).max() - x @ b @ y
    return bool(row_regret <= atol and col_regret <= atol)
