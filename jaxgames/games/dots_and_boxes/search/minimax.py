"""Minimax search for Dots-and-Boxes: the study's variants and the depth-limited agent search.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With
Dots And Boxes" (course report), section 4 (naive minimax, + transposition
table keyed by the dbn, + symmetry canonicalisation, + chain rules) and
section 5 (alpha-beta, "important moves first", depth limit 9 with the
box-difference heuristic); the minimax and alpha-beta slides of Torralba,
"Multi-Agent Systems: Adversarial Search and Game Theory" (Machine
Intelligence lecture 12, Aalborg University, 2022).

All searches return the *net value for the player to move* of the boxes
still to be won, exactly as `jaxgames.games.dots_and_boxes.search.solver`: a move completing
``g > 0`` boxes is worth ``g + V(child)`` (the mover moves again), any other
move ``-V(child)`` (the sign rule of `jaxgames.search.sign`). Without a
depth limit every variant returns the exact value. With one, a cut-off
position is worth 0 more boxes: the leaf value is the box difference
collected along the path, i.e. El Kaddouri et al.'s heuristic "boxes of max
minus boxes of min" (section 5.1) measured from the root.

Variants (`VARIANTS`, each adding one idea to the previous one, as the
report's figures 2 and 3): ``naive``, ``tt``, ``symmetry``, ``chains``,
``alphabeta``, ``ordering``.

Where the report is wrong for this value: section 5.4's "early termination"
(stop once a player holds more than half of the boxes) is sound for a
win/loss value but not for the net-box value computed here, so it is not
used; section 5.3's "propose only one safe edge" loses exactness, so it is
for the agent only (`SearchOptions.max_safe_edges`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import NamedTuple

from jaxgames.games.dots_and_boxes.search import chains
from jaxgames.games.dots_and_boxes.search.bitboard import BitBoard, bitboard
from jaxgames.search import sign
from jaxgames.search.alphabeta import SearchTimeout, bound_flag, decides

VARIANTS = ("naive", "tt", "symmetry", "chains", "alphabeta", "ordering")
"""The minimax variants of the study, cumulative (El Kaddouri et al., figures 2-3)."""

__all__ = ["VARIANTS", "SearchOptions", "SearchResult", "SearchTimeout", "solve_position", "iterative_deepening"]


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """Which ideas a search uses.

    Attributes:
        transposition: cache values by edge set (El Kaddouri et al., 4.1).
        symmetry: cache by the canonical image under the board symmetries (4.2).
        chain_rules: safe captures and the chain rule (4.3; `jaxgames.games.dots_and_boxes.search.chains`).
        alpha_beta: alpha-beta pruning (5.2); the cache then stores bounds.
        ordering: important moves first (5.3-5.4).
        max_safe_edges: when nothing is capturable and safe edges exist, search
            only safe edges, at most this many (section 5.3 proposes one). Not
            exact: for the depth-limited agent only. None: off.
    """

    transposition: bool = False
    symmetry: bool = False
    chain_rules: bool = False
    alpha_beta: bool = False
    ordering: bool = False
    max_safe_edges: int | None = None

    @staticmethod
    def variant(name: str) -> "SearchOptions":
        """The options of a study variant (`VARIANTS`).

        Raises:
            ValueError: an unknown name.
        """
        if name not in VARIANTS:
            raise ValueError(f"unknown minimax variant {name!r}; choose from {VARIANTS}")
        k = VARIANTS.index(name)
        return SearchOptions(transposition=k >= 1, symmetry=k >= 2, chain_rules=k >= 3, alpha_beta=k >= 4, ordering=k >= 5)


class SearchResult(NamedTuple):
    """Outcome of one search.

    Attributes:
        value: int, net boxes for the player to move (exact without a depth limit).
        nodes: positions visited.
        table_size: keys in the transposition table at the end (0 without one).
        seconds: wall-clock time.
        best_action: an optimal (or best-found) first move, -1 at the end of the game.
    """

    value: int
    nodes: int
    table_size: int
    seconds: float
    best_action: int


class _Searcher:
    def __init__(self, bb: BitBoard, options: SearchOptions, deadline: float | None, max_nodes: int | None, rng=None):
        self.bb, self.o, self.rng = bb, options, rng
        self.table: dict = {}
        self.nodes = 0
        self.deadline, self.max_nodes = deadline, max_nodes

    def key(self, edges):
        return self.bb.canonical(edges) if self.o.symmetry else edges

    def moves(self, edges, rng=None):
        bb = self.bb
        moves = chains.chain_moves(bb, edges) if self.o.chain_rules else None
        if moves is None:
            moves = bb.legal_moves(edges)
            if self.o.max_safe_edges is not None:
                safe = chains.safe_edges(bb, edges)
                if safe:
                    if self.rng is not None:
                        self.rng.shuffle(safe)
                    else:
                        rank = {e: i for i, e in enumerate(bb.centre_order)}
                        safe.sort(key=rank.__getitem__)
                    moves = safe[: self.o.max_safe_edges]
        if self.rng is not None and len(moves) > 1:
            moves = list(moves)
            self.rng.shuffle(moves)
        if self.o.ordering:
            moves = chains.ordered_moves(bb, edges, moves, stable=self.rng is not None)
        return moves

    def tick(self):
        self.nodes += 1
        if self.nodes & 15 == 0:
            if self.deadline is not None and time.perf_counter() > self.deadline:
                raise SearchTimeout
        if self.max_nodes is not None and self.nodes > self.max_nodes:
            raise SearchTimeout

    # Plain minimax (optionally with a table of exact values), no depth limit.
    def minimax(self, edges):
        self.tick()
        if edges == self.bb.full:
            return 0
        if self.o.transposition:
            k = self.key(edges)
            hit = self.table.get(k)
            if hit is not None:
                return hit
        best = -math.inf
        for e in self.moves(edges):
            g = self.bb.completes(edges, e)
            v = sign.child_value(g, self.minimax(edges | (1 << e)))
            if v > best:
                best = v
        if self.o.transposition:
            self.table[k] = best
        return best

    # Fail-soft alpha-beta with a bound table and an optional depth limit.
    def alphabeta(self, edges, alpha, beta, depth):
        self.tick()
        bb = self.bb
        if edges == bb.full:
            return 0
        if depth == 0:
            return 0  # the report's heuristic: nothing more is counted beyond the horizon
        k = self.key(edges) if self.o.transposition else None
        if k is not None:
            hit = self.table.get(k)
            if hit is not None and hit[0] >= depth and decides(hit[1], hit[2], alpha, beta):
                return hit[2]
        a0 = alpha
        best = -math.inf
        for e in self.moves(edges):
            g = bb.completes(edges, e)
            child_alpha, child_beta = sign.child_window(g, sign.box_discount(g), alpha, beta)
            v = sign.child_value(g, self.alphabeta(edges | (1 << e), child_alpha, child_beta, depth - 1))
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        break
        if k is not None:
            self.table[k] = (depth, bound_flag(best, a0, beta), best)
        return best

    def root(self, edges, depth):
        """(value, best_action) at the root, every root move searched with a full window."""
        bb = self.bb
        if edges == bb.full:
            return 0, -1
        best, best_e = -math.inf, -1
        for e in self.moves(edges):
            g = bb.completes(edges, e)
            child = edges | (1 << e)
            if self.o.alpha_beta:
                # Window (best, n + 1) with n = num_boxes: values lie in [-n, n].
                n = bb.num_boxes
                alpha = best if best > -math.inf else -n - 1
                child_alpha, child_beta = sign.child_window(g, sign.box_discount(g), alpha, n + 1)
                v = sign.child_value(g, self.alphabeta(child, child_alpha, child_beta, depth - 1))
            else:
                v = sign.child_value(g, self.minimax(child))
            if v > best:
                best, best_e = v, e
        return best, best_e


def solve_position(
    num_rows: int,
    num_cols: int,
    edges: int | str = 0,
    *,
    variant: str | SearchOptions = "ordering",
    time_limit: float | None = None,
    max_nodes: int | None = None,
) -> SearchResult:
    """Exact minimax value of a position with one of the study's variants.

    Args:
        num_rows, num_cols: board size in boxes.
        edges: the position, an int edge set (bit ``e`` = edge ``e``) or a dbn string.
        variant: a name in `VARIANTS` or a `SearchOptions`.
        time_limit: seconds, or None.
        max_nodes: node budget, or None.

    Returns:
        A `SearchResult` with the exact value.

    Raises:
        ValueError: an unknown variant, a bad size or dbn string, an edge set out of range.
        SearchTimeout: the time limit or node budget ran out.
    """
    bb = bitboard(num_rows, num_cols)
    if isinstance(edges, str):
        edges = bb.from_dbn(edges)
    if isinstance(edges, bool) or not isinstance(edges, int) or not 0 <= edges <= bb.full:
        raise ValueError(f"edges must be an int in [0, 2^{bb.num_edges}) or a dbn string; got {edges!r}")
    options = variant if isinstance(variant, SearchOptions) else SearchOptions.variant(variant)
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    s = _Searcher(bb, options, deadline, max_nodes)
    value, action = s.root(edges, depth=bb.num_edges + 1)
    return SearchResult(int(value), s.nodes, len(s.table), time.perf_counter() - start, int(action))


def iterative_deepening(
    bb: BitBoard,
    edges: int,
    *,
    max_depth: int = 9,
    time_limit: float = 0.15,
    table: dict | None = None,
    options: SearchOptions = SearchOptions(True, False, True, True, True),
    rng=None,
) -> tuple[int, int, int, int]:
    """Depth-limited alpha-beta with iterative deepening and a deadline (the agent's search).

    Searches depth 1, 2, ... up to ``max_depth`` plies (El Kaddouri et al., 5.1: 9) and
    returns the result of the deepest search that finished before the
    deadline; depth 1 always finishes (it is one pass over the moves).

    Args:
        bb: the board tables.
        edges: the position (int edge set), not terminal.
        max_depth: ply limit.
        time_limit: seconds for the whole decision.
        table: a transposition table to reuse (mutated), or None.
        options: what the search uses (default: table, chains, alpha-beta, ordering).
        rng: a ``numpy.random.Generator`` to shuffle moves of equal order
            (random tie-breaking between equally good moves), or None.

    Returns:
        ``(best_action, value, depth_reached, nodes)``; value is exact when
        the search reached the end of the game within the depth.
    """
    start = time.perf_counter()
    s = _Searcher(bb, options, None, None, rng)
    if table is not None:
        s.table = table
    best = (bb.legal_moves(edges)[0], 0, 0)
    remaining = bb.full.bit_count() - edges.bit_count()
    for depth in range(1, max_depth + 1):
        s.deadline = None if depth == 1 else start + time_limit
        try:
            value, action = s.root(edges, depth)
        except SearchTimeout:
            break
        best = (action, int(value), depth)
        if depth >= remaining:
            break  # the whole rest of the game was searched: exact
    return best[0], best[1], best[2], s.nodes
