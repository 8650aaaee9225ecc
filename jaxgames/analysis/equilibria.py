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

Cost. The enumeration walks every vertex of both best-response polytopes,
which grows exponentially with the number of actions (random 14x14 games:
12-34 s; 20x20: over 90 s and 6 GB). So it is bounded up front: a game
whose worst case (`enumeration_cost`, the upper bound theorem) exceeds
``max_vertices`` (default `MAX_VERTICES`: every game up to 12x12) is refused
with `EquilibriumCostError` before any work. For larger games,
`lemke_howson` (``nash_equilibria(game, method="lemke_howson")``) finds ONE
equilibrium exactly, by complementary pivoting (Lemke & Howson 1964; von
Stengel, "Computing equilibria for two-person games", 2002), its path
capped at ``max_pivots``.

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

MAX_VERTICES = 50_000
"""Default cost bound of the exact enumeration: the most polytope vertices it may visit (`enumeration_cost`).

The worst case under it is a 12x12 game (49,504): about 10 s and 0.5 GB of
CPU (measured at 0.2-0.3 ms and about 10 kB per vertex on random 12x12 and
13x13 games, which visit far fewer). A random 14x14 game already visited
77,000 in 34 s and 1 GB; a random 20x20 game did not finish in 90 s."""

MAX_PIVOTS = 50_000
"""Default cap on the float64 path of `lemke_howson` (about 35 us a pivot at 50x50: under 2 s)."""

MAX_EXACT_PIVOTS = 1_000
"""Cap on the exact path `lemke_howson` falls back to (6-10 ms a pivot at 50x50: under 10 s)."""

METHODS = ("enumerate", "lemke_howson")
"""The methods of `nash_equilibria`."""


class EquilibriumCostError(ValueError):
    """The exact enumeration would exceed its cost bound; raised before any work (`enumeration_cost`)."""


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


def _upper_bound_vertices(d: int, f: int) -> int:
    """The most vertices a ``d``-polytope with ``f > d`` facets can have,
    ``C(f - floor((d+1)/2), f - d) + C(f - floor((d+2)/2), f - d)``, attained by the duals of cyclic
    polytopes (McMullen, "The maximum numbers of faces of a convex polytope", *Mathematika* 17 (1970);
    Ziegler, *Lectures on Polytopes* (1995), section 8.4). E.g. 4 for a quadrilateral (d = 2, f = 4),
    8 for d = 3, f = 6 (``2 f - 4``)."""
    return math.comb(f - (d + 1) // 2, f - d) + math.comb(f - (d + 2) // 2, f - d)


def enumeration_cost(game) -> int:
    """The most polytope vertices the exact enumeration can visit on ``game``: its worst-case cost.

    `extreme_equilibria` walks every vertex of the lexicographically perturbed
    best-response polytopes ``P`` (dimension ``n``, ``n + m`` facets) and ``Q``
    (dimension ``m``, ``n + m`` facets), both simple, so the upper bound
    theorem (McMullen 1970) bounds the walk by
    ``UBT(n, n + m) + UBT(m, n + m)``: 8,008 at 10x10, 49,504 at 12x12,
    310,080 at 14x14, about 8.0e7 at 20x20 and 1.4e20 at 50x50. Random
    games visit far fewer (see `MAX_VERTICES`).

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]`` (only the shape is read).

    Returns:
        The bound, an int.
    """
    n, m = _payoffs(game).shape[1:]
    return _upper_bound_vertices(n, n + m) + _upper_bound_vertices(m, n + m)


def _check_cost(game, max_vertices) -> None:
    if max_vertices is None:
        return
    if isinstance(max_vertices, (bool, np.bool_)) or not isinstance(max_vertices, (int, np.integer)) or max_vertices < 1:
        raise ValueError(f"max_vertices must be a positive int or None; got {max_vertices!r}")
    cost = enumeration_cost(game)
    if cost > max_vertices:
        n, m = _payoffs(game).shape[1:]
        raise EquilibriumCostError(
            f"enumerating every extreme equilibrium of this {n}x{m} game may visit up to {cost:.3g} vertices of the "
            f"best-response polytopes (upper bound theorem), over max_vertices={max_vertices} (about 0.3 ms and "
            f"10 kB each at 12x12, more in larger games); for one equilibrium pass method='lemke_howson' "
            f"(or call lemke_howson), or pass a larger max_vertices (None: no bound) to enumerate anyway"
        )


def _lh_tableaux(a: list[list[int]], b: list[list[int]]):
    """The starting tableaux ``[M | I | 1]`` of ``P`` (rows: column actions j, ``sum_i B[i][j] x_i + s_j = 1``)
    and ``Q`` (rows: row actions i, ``sum_j A[i][j] y_j + r_i = 1``), as (matrix, bases, lex orders).

    Variables: P's columns ``x_0..x_{n-1}, s_0..s_{m-1}``, Q's ``y_0..y_{m-1}, r_0..r_{n-1}``. Labels:
    ``x_i`` and ``r_i`` carry label ``i``, ``y_j`` and ``s_j`` label ``n + j``."""
    n, m = len(a), len(a[0])
    mats = ([[b[i][j] for i in range(n)] for j in range(m)], a)
    bases = [list(range(n, n + m)), list(range(m, m + n))]
    lex = [[n + m, *range(n, n + m)], [n + m, *range(m, m + n)]]
    return mats, bases, lex


def _lh_walk(a, b, missing_label: int, max_pivots: int | None, *, exact: bool) -> list[list[int]] | None:
    """The bases of P and Q where the Lemke-Howson path from ``missing_label`` ends (`lemke_howson`).

    ``exact``: integer pivoting with the lexicographic ratio test (the guarantee); otherwise float64
    pivoting with the same rule up to a tolerance (fast, a guide only: None if it loses its way).
    Raises `EquilibriumCostError` after ``max_pivots`` pivots."""
    n, m = len(a), len(a[0])
    mats, bases, lex = _lh_tableaux(a, b)
    if exact:
        tabs = [[list(row) + [int(i == r) for i in range(len(mat))] + [1] for r, row in enumerate(mat)] for mat in mats]
    else:
        tabs = []
        for mat in mats:
            f = np.array(mat, dtype=np.float64)
            tabs.append(np.hstack([f / f.max(), np.eye(len(mat)), np.ones((len(mat), 1))]))
    dets = [1, 1]
    side = 0 if missing_label < n else 1
    col = missing_label if side == 0 else missing_label - n  # P's column c has label c; y_j is Q's column j
    pivots = 0
    while True:
        if max_pivots is not None and pivots >= max_pivots:
            raise EquilibriumCostError(
                f"Lemke-Howson from missing_label={missing_label} did not end within max_pivots={max_pivots} pivots "
                f"({'exact' if exact else 'float64'} path) on this {n}x{m} game; pass a larger max_pivots "
                f"(None: no cap) or another missing_label"
            )
        t = tabs[side]
        if exact:
            r = _lex_min_ratio_row(t, col, lex[side])
            if r < 0:  # cannot happen: positive payoffs make both polytopes bounded
                raise RuntimeError(f"unbounded edge in Lemke-Howson on a {n}x{m} game")
            pivot_row, p = t[r], t[r][col]
            tabs[side] = [
                pivot_row if i == r else [(x * p - row[col] * y) // dets[side] for x, y in zip(row, pivot_row)]
                for i, row in enumerate(t)
            ]
            dets[side] = p
        else:
            rows = np.flatnonzero(t[:, col] > 1e-12)
            for j in lex[side]:
                if len(rows) <= 1:
                    break
                ratios = t[rows, j] / t[rows, col]
                best = ratios.min()
                rows = rows[ratios <= best + 1e-9 * max(1.0, abs(best))]
            if len(rows) == 0 or not np.all(np.isfinite(t)):
                return None
            r = int(rows[0])
            t[r] /= t[r, col]
            factors = t[:, col].copy()
            factors[r] = 0.0
            t -= np.outer(factors, t[r])
        leaving = bases[side][r]
        bases[side][r] = col
        pivots += 1
        left = leaving if side == 0 else (n + leaving if leaving < m else leaving - m)
        if left == missing_label:
            return bases
        side = 1 - side
        col = left if side == 0 else (m + left if left < n else left - n)


def _basic_solution(mat: list[list[int]], basis: list[int]) -> list[Fraction] | None:
    """The exact values of every variable of ``{z >= 0 : M z + s = 1}`` at the basis ``basis`` (None if singular)."""
    k, d = len(mat), len(mat[0])
    t = [list(row) + [int(i == r) for i in range(k)] + [1] for r, row in enumerate(mat)]
    det, current, target = 1, list(range(d, d + k)), set(basis)
    for col in basis:
        if col in current:
            continue
        r = next((i for i in range(k) if current[i] not in target and t[i][col] != 0), None)
        if r is None:
            return None
        pivot_row, p = t[r], t[r][col]  # any nonzero pivot: integer pivoting stays exact (Edmonds 1967)
        t = [pivot_row if i == r else [(x * p - row[col] * y) // det for x, y in zip(row, pivot_row)] for i, row in enumerate(t)]
        det, current[r] = p, col
    values = [Fraction(0)] * (d + k)
    for r, var in enumerate(current):
        values[var] = Fraction(t[r][-1], det)
    return values


def _certified(a, b, bases) -> RationalProfile | None:
    """The equilibrium at the end of a float path, if its bases are an exact completely labelled vertex pair."""
    n, m = len(a), len(a[0])
    mats, _, _ = _lh_tableaux(a, b)
    xs, ys = _basic_solution(mats[0], bases[0]), _basic_solution(mats[1], bases[1])
    if xs is None or ys is None or min(xs) < 0 or min(ys) < 0:
        return None
    x, y = xs[:n], ys[:m]
    labelled = all(x[i] == 0 or ys[m + i] == 0 for i in range(n)) and all(y[j] == 0 or xs[n + j] == 0 for j in range(m))
    if not labelled or sum(x) == 0 or sum(y) == 0:
        return None
    return RationalProfile(tuple(v / sum(x) for v in x), tuple(v / sum(y) for v in y))


def lemke_howson(game, *, missing_label: int = 0, max_pivots: int | None = MAX_PIVOTS) -> RationalProfile:
    """One Nash equilibrium of a two-player game, exactly, by the Lemke-Howson algorithm.

    Complementary pivoting from the artificial equilibrium ``(0, 0)`` of the
    best-response polytopes ``P = {x >= 0 : B^T x <= 1}`` and
    ``Q = {y >= 0 : A y <= 1}``: drop ``missing_label``, then alternately pivot
    in the tableau of ``P`` and of ``Q``, the entering variable each time the
    complement of the one that just left, until the variable with the missing
    label leaves (Lemke & Howson, "Equilibrium points of bimatrix games",
    *J. SIAM* 12 (1964); von Stengel, "Computing equilibria for two-person
    games", *Handbook of Game Theory* vol. 3 (2002), chapter 45, section 2).
    Payoffs are first mapped to positive integers as in `extreme_equilibria`
    and the minimum-ratio test is lexicographic, so degenerate games are
    handled too (von Stengel 2002, section 2, degenerate games).

    The path is walked in float64 (microseconds a pivot), and its end is
    certified exactly: the exact basic solution at its two bases (integer
    pivoting) must be a completely labelled vertex pair, hence an extreme
    equilibrium. Should it not be (rounding), the path is walked again in
    exact integer pivoting (6-10 ms a pivot at 50x50), at most
    `MAX_EXACT_PIVOTS` pivots.

    Guarantee: the path is finite and ends at a Nash equilibrium, an extreme
    one, for every game and every ``missing_label`` (Lemke & Howson 1964; von
    Stengel 2002, section 2), and what is returned is exactly one. The path
    can grow exponentially with the number of actions (Savani & von Stengel,
    "Hard-to-solve bimatrix games", *Econometrica* 74 (2006)), hence
    ``max_pivots``: with the defaults a 50x50 game is answered or refused
    within about 10 s and well under 1 GB. Fourteen random standard-normal
    50x50 games took 5 to 1,057 pivots from label 0, 0.1 to 0.35 s each
    (mostly reading the payoffs exactly and certifying).

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        missing_label: the label dropped first, ``0 .. n + m - 1``: row action
            ``i`` is label ``i``, column action ``j`` label ``n + j``.
            Different labels may end at different equilibria.
        max_pivots: the most pivots of the float64 path (None: no cap).

    Returns:
        The `RationalProfile` the path ends at.

    Raises:
        ValueError: on invalid payoffs, a ``missing_label`` outside
            ``0 .. n + m - 1`` or a ``max_pivots`` that is not a positive int;
            `EquilibriumCostError` (a ValueError) when the path is longer than
            ``max_pivots`` (or, exact, `MAX_EXACT_PIVOTS`).
    """
    n, m = _payoffs(game).shape[1:]
    if isinstance(missing_label, (bool, np.bool_)) or not isinstance(missing_label, (int, np.integer)):
        raise ValueError(f"missing_label must be an int in [0, {n + m}); got {missing_label!r}")
    if not 0 <= missing_label < n + m:
        raise ValueError(f"missing_label must be in [0, {n + m}) for a {n}x{m} game; got {missing_label}")
    if max_pivots is not None and (
        isinstance(max_pivots, (bool, np.bool_)) or not isinstance(max_pivots, (int, np.integer)) or max_pivots < 1
    ):
        raise ValueError(f"max_pivots must be a positive int or None; got {max_pivots!r}")
    a, b = (_integer_payoffs(t) for t in _exact_payoffs(game))
    bases = _lh_walk(a, b, int(missing_label), max_pivots, exact=False)
    found = None if bases is None else _certified(a, b, bases)
    if found is not None:
        return found
    exact_cap = MAX_EXACT_PIVOTS if max_pivots is None else min(max_pivots, MAX_EXACT_PIVOTS)
    bases = _lh_walk(a, b, int(missing_label), exact_cap, exact=True)
    found = _certified(a, b, bases)
    if found is None:  # cannot happen: the exact path ends at a completely labelled vertex pair
        raise RuntimeError(f"the exact Lemke-Howson path ended off an equilibrium on a {n}x{m} game")
    return found


def _exact_sort_key(q: RationalProfile):
    pure = max(q.x) == 1 and max(q.y) == 1
    return (not pure, tuple(-v for v in q.x), tuple(-v for v in q.y))


def extreme_equilibria(game, *, max_vertices: int | None = MAX_VERTICES) -> list[RationalProfile]:
    """The extreme Nash equilibria of a two-player game, exactly.

    These are the vertices of the equilibrium set: all the equilibria of a
    non-degenerate game, and the corners of the components of a degenerate
    one (see `equilibrium_components`). They are the completely labelled
    vertex pairs ``(x, y) != (0, 0)`` of the best-response polytopes
    ``P = {x >= 0 : B^T x <= 1}`` and ``Q = {y >= 0 : A y <= 1}``, normalised
    (Mangasarian 1964; von Stengel 2007, section 3.5, theorem 3.4; Avis et
    al. 2010), with each player's payoffs first mapped to positive integers
    by a positive affine map of its own (module docstring). The work grows
    with the number of polytope vertices, at most `enumeration_cost` (the
    upper bound theorem: 8,008 for 10 actions each, about 1e20 for 50);
    a game whose bound exceeds ``max_vertices`` is refused before any work.
    For one equilibrium of a larger game, use `lemke_howson`.

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]`` (ints, floats or
            `fractions.Fraction`; floats are read as their shortest decimal).
        max_vertices: the cost bound (default `MAX_VERTICES`, which admits
            every game up to 12x12); None: no bound (the run may not end in
            any useful time, nor fit in memory, from about 14x14).

    Returns:
        `RationalProfile` list, each extreme equilibrium once: pure ones
        first, then by decreasing probabilities.

    Raises:
        ValueError: on invalid payoffs (see `jaxgames.games.matrix.validate_payoffs`)
            or ``max_vertices``.
        EquilibriumCostError: (a ValueError) ``enumeration_cost(game) > max_vertices``;
            the message gives the bound and how to get one equilibrium instead.
    """
    _check_cost(game, max_vertices)
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


def nash_equilibria(
    game, *, method: str = "enumerate", max_vertices: int | None = MAX_VERTICES, missing_label: int = 0,
    max_pivots: int | None = MAX_PIVOTS,
) -> list[Profile]:
    """The extreme Nash equilibria of a two-player game (or one of them), as float64 profiles.

    ``method="enumerate"`` (default): all of them. For a non-degenerate game
    (every equilibrium isolated, e.g. every game whose payoffs are in general
    position) these are all of its equilibria, an odd number (Wilson 1971). A
    degenerate game can have infinitely many; then these are the finitely
    many vertices of its equilibrium set, and `equilibrium_components` tells
    which of them bound a continuum. Exact: no tolerance, the same at any
    payoff scale (see `extreme_equilibria`). A game whose worst-case cost
    (`enumeration_cost`) exceeds ``max_vertices`` is refused up front.

    ``method="lemke_howson"``: one equilibrium, exactly, found by
    `lemke_howson` from ``missing_label`` (at most ``max_pivots`` pivots);
    for games too large to enumerate (a random 50x50 game: seconds at most).

    Args:
        game: a `MatrixGame` or payoffs ``[2, n, m]``.
        method: one of `METHODS`.
        max_vertices: cost bound of ``"enumerate"`` (see `extreme_equilibria`).
        missing_label, max_pivots: settings of ``"lemke_howson"`` (see `lemke_howson`).

    Returns:
        `Profile` list, pure equilibria first, then by decreasing
        probabilities; never empty (Nash 1951). One profile for ``"lemke_howson"``.

    Raises:
        ValueError: on invalid payoffs, an unknown ``method`` or a bad setting.
        EquilibriumCostError: (a ValueError) the enumeration's bound exceeds
            ``max_vertices``, or Lemke-Howson's path ``max_pivots``; the
            message names the cost and what to pass instead.
    """
    if method == "lemke_howson":
        return [lemke_howson(game, missing_label=missing_label, max_pivots=max_pivots).to_float()]
    if method != "enumerate":
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    return [q.to_float() for q in extreme_equilibria(game, max_vertices=max_vertices)]


def equilibrium_components(game, *, max_vertices: int | None = MAX_VERTICES) -> list[EquilibriumComponent]:
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
        max_vertices: cost bound of the enumeration (see `extreme_equilibria`).

    Returns:
        `EquilibriumComponent` list, ordered like their first extreme
        equilibrium in `nash_equilibria`.

    Raises:
        ValueError: on invalid payoffs or ``max_vertices``.
        EquilibriumCostError: (a ValueError) ``enumeration_cost(game) > max_vertices``.
    """
    eqs = extreme_equilibria(game, max_vertices=max_vertices)
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
