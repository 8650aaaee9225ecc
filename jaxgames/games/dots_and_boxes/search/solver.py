"""Exact Dots-and-Boxes solver by batched retrograde analysis in JAX.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With
Dots And Boxes" (course report), section 4 (solving small boards; the dbn key
of Barker & Korf 2012, "Solving Dots-and-Boxes", AAAI) and the minimax
recursion of Torralba, "Multi-Agent Systems: Adversarial Search and Game
Theory" (Machine Intelligence lecture 12, Aalborg University, 2022). Dots-and-Boxes is impartial: what is still to
be won depends only on the set of drawn edges, not on the scores or on who
is to move. So one value per edge set suffices:

    V(s) = net boxes (mover's minus opponent's) that the player to move wins
           from the edge set ``s`` on, with optimal play by both;
    V(all edges drawn) = 0;
    V(s) = max over undrawn edges e of  g + V(s + e)   if e completes g > 0 boxes
                                        -V(s + e)      otherwise (turn passes).

An edge set is an integer: bit ``e`` is edge ``e`` in OpenSpiel's action
order (the order of the dbn string's characters), so the index of the board
``'1100...'`` has bits 0 and 1 set. Every child ``s | (1 << e)`` has one edge
more, so the table is filled level by level (number of drawn edges
descending, ``num_edges - 1`` down to 0). The edge sets of one level are
enumerated without any sort by unranking the combinatorial number system
(rank ``r`` in ``[0, C(E, k))`` -> the ``r``-th ``k``-subset), in fixed-size
chunks so that one compiled kernel serves every level. Box completion uses
static bit masks of each box's four sides: box ``b`` is complete in ``s``
iff ``s & mask_b == mask_b``.

The table is int8 (values lie in ``[-num_boxes, num_boxes]``): ``2**E``
bytes, 16.8 MB for 3x3 (24 edges), 2.1 GB for 3x4 (31 edges, `MAX_EDGES`);
larger boards are refused with a ValueError. Timings: ``benchmarks/README.md``.
"""

from __future__ import annotations

import functools
import math
import os
import time
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes import dbn as dbn_lib
from jaxgames.games.dots_and_boxes import rules
from jaxgames.games.dots_and_boxes.search.bitboard import bitboard, edge_set_index
from jaxgames.search import sign

MAX_EDGES = 31
"""Largest number of edges the solver indexes (edge sets are int32: bit 31 would be the sign)."""

ILLEGAL = -128
"""Entry of `Solution.action_values` for an edge that is already drawn."""


def table_bytes(num_rows: int, num_cols: int) -> int:
    """Bytes of the value table of a board: ``2 ** num_edges`` (one int8 per edge set)."""
    g = rules.geometry(*rules.validate_size(num_rows, num_cols))
    return 1 << g.num_edges


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def check_size(num_rows: int, num_cols: int, *, max_bytes: int | None = None, chunk_size: int = 1 << 18) -> int:
    """Checks that a board can be solved in memory, before anything is allocated.

    Args:
        num_rows, num_cols: board size in boxes.
        max_bytes: memory the solver may use; default 80% of the available
            host memory (``MemAvailable`` of ``/proc/meminfo``). On a GPU the
            table lives in device memory: pass the device's free memory here.
        chunk_size: states per kernel call (working memory ~ ``40 * E * chunk_size`` bytes).

    Returns:
        The bytes needed (table plus working memory).

    Raises:
        TypeError, ValueError: a bad size (`rules.validate_size`); a board with
            more than `MAX_EDGES` edges or whose need exceeds ``max_bytes``
            (the message says how much memory it would need).
    """
    g = rules.geometry(*rules.validate_size(num_rows, num_cols))
    need = (1 << g.num_edges) + 40 * g.num_edges * chunk_size
    if g.num_edges > MAX_EDGES:
        raise ValueError(
            f"a {num_rows}x{num_cols} board has {g.num_edges} edges: the retrograde solver would need "
            f"2^{g.num_edges} int8 values = {_human(1 << g.num_edges)} of memory, and it indexes at most "
            f"{MAX_EDGES} edges (3x4 or 2x5 at most); use the minimax or alpha-beta search instead"
        )
    limit = int(0.8 * _available_bytes()) if max_bytes is None else int(max_bytes)
    if need > limit:
        raise ValueError(
            f"solving a {num_rows}x{num_cols} board needs {_human(need)} (2^{g.num_edges} int8 values plus "
            f"working memory) but only {_human(limit)} is allowed; pass a larger max_bytes or use a machine with more memory"
        )
    return need


class _Tables(NamedTuple):
    E: int
    edge_box_masks: np.ndarray  # int32 [E, 2]: bit masks of the boxes beside each edge, 0 = none
    binom: np.ndarray  # int32 [E + 1, E + 1]: C(n, k)


@functools.lru_cache(maxsize=None)
def _tables(num_rows: int, num_cols: int) -> _Tables:
    g = rules.geometry(num_rows, num_cols)
    box_mask = bitboard(num_rows, num_cols).box_masks
    m = np.zeros((g.num_edges, 2), np.int64)
    for e in range(g.num_edges):
        for k in range(2):
            b = g.edge_boxes[e, k]
            m[e, k] = box_mask[b] if b >= 0 else 0
    binom = np.array([[math.comb(n, k) for k in range(g.num_edges + 1)] for n in range(g.num_edges + 1)], np.int64)
    return _Tables(g.num_edges, m.astype(np.int32), np.minimum(binom, np.iinfo(np.int32).max).astype(np.int32))


LOW_BITS = 30
"""The value table is stored as ``[2**(E - 30), 2**30]`` when ``E > 30``, so that no
array axis reaches 2**31 entries (JAX indexes an axis with int32)."""


def _split(values_shape, idx):
    """(row, column) of flat indices ``idx`` in a table of shape ``values_shape``."""
    if len(values_shape) == 1:
        return (idx,)
    return (jnp.right_shift(idx, LOW_BITS), idx & ((1 << LOW_BITS) - 1))


def child_values(tables_masks: jax.Array, values: jax.Array, s: jax.Array) -> jax.Array:
    """Values of every move from edge sets ``s`` (the recursion above), int32 ``[N, E]``.

    Args:
        tables_masks: int32 ``[E, 2]``: bit masks of the boxes beside each edge (0: no box).
        values: int8 ``[2**E]``, or ``[2**(E - 30), 2**30]`` for ``E > 30``: the
            value table (children must be filled).
        s: int32 ``[N]``: edge sets.

    Returns:
        int32 ``[N, E]``: ``g + V(child)`` or ``-V(child)`` per edge, `ILLEGAL`
        where the edge is already drawn.
    """
    E = tables_masks.shape[0]
    bits = jnp.left_shift(jnp.int32(1), jnp.arange(E, dtype=jnp.int32))  # [E]
    child = s[:, None] | bits[None, :]  # [N, E]
    legal = (s[:, None] & bits[None, :]) == 0
    v = values[_split(values.shape, child)].astype(jnp.int32)
    m0, m1 = tables_masks[:, 0], tables_masks[:, 1]
    g = ((m0 != 0) & ((child & m0) == m0)).astype(jnp.int32) + ((m1 != 0) & ((child & m1) == m1)).astype(jnp.int32)
    return jnp.where(legal, sign.child_value(g, v), ILLEGAL)


def _unrank(binom: jax.Array, E: int, k: jax.Array, rank: jax.Array) -> jax.Array:
    """int32 ``[N]``: the ``rank``-th ``k``-subset of ``E`` bits (combinatorial number system)."""

    def body(i, carry):
        s, r, left = carry
        p = E - 1 - i
        c = binom[p, left]
        take = (left > 0) & (r >= c)
        s = jnp.where(take, s | jnp.left_shift(jnp.int32(1), p), s)
        r = jnp.where(take, r - c, r)
        left = jnp.where(take, left - 1, left)
        return s, r, left

    zeros = jnp.zeros_like(rank)
    s, _, _ = jax.lax.fori_loop(0, E, body, (zeros, rank, jnp.broadcast_to(k, rank.shape)))
    return s


@functools.lru_cache(maxsize=None)
def _level_kernel(num_rows: int, num_cols: int, chunk_size: int) -> Callable:
    t = _tables(num_rows, num_cols)
    masks, binom = jnp.asarray(t.edge_box_masks), jnp.asarray(t.binom)

    def kernel(values, k, start, count):
        rank = jnp.minimum(start + jnp.arange(chunk_size, dtype=jnp.int32), count - 1)  # pad: repeat the last
        s = _unrank(binom, t.E, k, rank)
        best = jnp.max(child_values(masks, values, s), axis=1)
        return values.at[_split(values.shape, s)].set(best.astype(jnp.int8))

    return jax.jit(kernel, donate_argnums=0)


class Solution:
    """The solved value table of one board size, answering positions.

    Attributes:
        num_rows, num_cols: the board size.
        num_edges: ``E``.
        values: int8 numpy ``[2**E]``: ``values[s]`` is the value of edge set
            ``s`` (net boxes still to be won by the player to move).
        seconds: wall-clock seconds the solve took.
    """

    def __init__(self, num_rows: int, num_cols: int, values: np.ndarray, seconds: float = 0.0):
        self.num_rows, self.num_cols = num_rows, num_cols
        self.geometry = rules.geometry(num_rows, num_cols)
        self.num_edges = self.geometry.num_edges
        if values.shape != (1 << self.num_edges,):
            raise ValueError(f"values must have shape [2^{self.num_edges}]; got {values.shape}")
        self.values = values
        self.seconds = seconds
        self._masks = _tables(num_rows, num_cols).edge_box_masks

    # ----------------------------------------------------------- positions
    def index(self, position) -> int:
        """The edge-set index of a position.

        Args:
            position: a dbn string, a `DotsAndBoxesState`, a `rules.Board`, a
                bool array ``[num_edges]`` of drawn edges, or an int index.

        Returns:
            int in ``[0, 2**E)``: bit ``e`` set iff edge ``e`` is drawn.

        Raises:
            TypeError: an unsupported type. ValueError: a bad dbn string, a
                wrong number of edges, an index out of range, or a batched state.
        """
        if isinstance(position, (int, np.integer)) and not isinstance(position, bool):
            if not 0 <= position < (1 << self.num_edges):
                raise ValueError(f"index {position} outside [0, 2^{self.num_edges})")
            return int(position)
        if isinstance(position, str):
            edges = dbn_lib.parse_dbn(self.num_rows, self.num_cols, position)
        else:
            board = getattr(position, "board", position)
            edges = getattr(board, "edges", board)
            if not hasattr(edges, "shape"):
                raise TypeError(f"position must be a dbn string, a state, a Board, an edge array or an int; got {type(position).__name__}")
            edges = np.asarray(edges).astype(bool)  # numpy: `edge_set_index` gives a Python int
            if edges.shape != (self.num_edges,):
                raise ValueError(f"expected one position with {self.num_edges} edges; got shape {edges.shape}")
        return edge_set_index(edges)

    def value(self, position) -> int:
        """Net boxes still to be won by the player to move (see the module docstring).

        Args:
            position: see `index`.

        Returns:
            int in ``[-num_boxes, num_boxes]``; 0 when every edge is drawn.
        """
        return int(self.values[self.index(position)])

    def action_values(self, position) -> np.ndarray:
        """int32 ``[E]``: the value of each move for the player to move, `ILLEGAL` if drawn.

        A move completing ``g > 0`` boxes is worth ``g + V(child)``, any other
        ``-V(child)``; the maximum over the legal moves is `value`.
        """
        s = self.index(position)
        out = np.full(self.num_edges, ILLEGAL, np.int32)
        for e in range(self.num_edges):
            if s >> e & 1:
                continue
            child = s | (1 << e)
            g = sum(1 for m in self._masks[e] if m and (child & int(m)) == int(m))
            out[e] = sign.child_value(g, int(self.values[child]))
        return out

    def batch_action_values(self, edges: jax.Array) -> jax.Array:
        """Exact move values of many positions at once, in JAX (jittable; e.g. learning targets).

        Args:
            edges: bool ``[..., E]``: drawn edges (``state.board.edges`` of a batch).

        Returns:
            int32 ``[..., E]``: ``g + V(child)`` or ``-V(child)`` per move,
            `ILLEGAL` where the edge is drawn; the row maximum is the value.

        Raises:
            ValueError: the last axis is not ``E`` (checked before tracing).
        """
        if edges.shape[-1:] != (self.num_edges,):
            raise ValueError(f"edges must end with {self.num_edges} edges; got shape {edges.shape}")
        if self.num_edges > LOW_BITS:
            raise ValueError(f"batch_action_values supports boards of at most {LOW_BITS} edges")
        s = edge_set_index(jnp.asarray(edges))
        table = self.__dict__.get("_device_values")
        if table is None:
            # Concrete even when the first call is being traced (a cached tracer would leak).
            with jax.ensure_compile_time_eval():
                table = self.__dict__["_device_values"] = jnp.asarray(self.values)
        out = child_values(jnp.asarray(self._masks), table, s.reshape(-1))
        return out.reshape(edges.shape)

    def optimal_actions(self, position) -> list[int]:
        """The edges that achieve the value, ascending (empty when the game is over)."""
        av = self.action_values(position)
        legal = av != ILLEGAL
        if not legal.any():
            return []
        return [int(e) for e in np.flatnonzero(legal & (av == av[legal].max()))]

    def final_margin(self, state) -> int:
        """Optimal final box margin ``score[mover] - score[other]`` of a state (scores so far plus `value`)."""
        board = getattr(state, "board", state)
        scores = np.asarray(board.scores)
        mover = int(np.asarray(board.player))
        return int(scores[mover] - scores[1 - mover]) + self.value(board)

    def __repr__(self) -> str:
        return f"Solution({self.num_rows}x{self.num_cols}, {self.num_edges} edges, value of the empty board {self.value(0)})"


def solve(
    num_rows: int,
    num_cols: int,
    *,
    max_bytes: int | None = None,
    chunk_size: int = 1 << 18,
    progress: bool = False,
) -> Solution:
    """Solves a board exactly: the value of every edge set, by retrograde analysis.

    Args:
        num_rows, num_cols: board size in boxes (ints in ``[1, 15]``; at most
            `MAX_EDGES` edges, e.g. 3x3, 2x5, 3x4).
        max_bytes: memory allowed, see `check_size`.
        chunk_size: states per compiled kernel call (a power of two is best).
        progress: print one line per level.

    Returns:
        A `Solution`.

    Raises:
        TypeError, ValueError: a bad size, or a board too large for the
            memory (the message gives the memory needed); see `check_size`.
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int; got {chunk_size!r}")
    check_size(num_rows, num_cols, max_bytes=max_bytes, chunk_size=chunk_size)
    R, C = rules.validate_size(num_rows, num_cols)
    t = _tables(R, C)
    E = t.E
    chunk = int(min(chunk_size, max(math.comb(E, E // 2), 1)))
    kernel = _level_kernel(R, C, chunk)
    start_time = time.perf_counter()
    shape = (1 << E,) if E <= LOW_BITS else (1 << (E - LOW_BITS), 1 << LOW_BITS)
    values = jnp.zeros(shape, jnp.int8)  # V(full board) = 0; every other entry is overwritten
    for k in range(E - 1, -1, -1):
        count = math.comb(E, k)
        for start in range(0, count, chunk):
            values = kernel(values, jnp.int32(k), jnp.int32(start), jnp.int32(count))
        if progress:
            print(f"level {k:2d}: {count:>12,d} edge sets, {time.perf_counter() - start_time:8.2f} s", flush=True)
    host = np.asarray(jax.device_get(values)).reshape(-1)
    return Solution(R, C, host, time.perf_counter() - start_time)


def optimal_move_rate(solution: Solution, edges, actions) -> tuple[float, np.ndarray]:
    """Share of ``actions`` that keep the exact value of their position (El Kaddouri et al., section 4).

    Args:
        solution: the `Solution` of the board.
        edges: bool ``[N, num_edges]``: the positions (drawn edges).
        actions: int ``[N]``: the move played in each.

    Returns:
        ``(rate, optimal)``: the share (NaN for no positions), and bool ``[N]``
        per position. A move is optimal when its value ``g + V(child)`` or
        ``-V(child)`` equals the position's value (the maximum over legal moves).
    """
    edges = np.asarray(edges, bool)
    actions = np.asarray(actions, np.int64)
    values = []
    for start in range(0, len(edges), 4096):  # eager chunks: the solver's JAX lookup, no jit (its table is cached on first use)
        values.append(np.asarray(solution.batch_action_values(jnp.asarray(edges[start:start + 4096]))))
    av = np.concatenate(values) if values else np.zeros((0, edges.shape[-1]), np.int32)
    best = np.where(av == ILLEGAL, np.iinfo(np.int32).min, av).max(axis=1)
    chosen = av[np.arange(len(actions)), actions]
    optimal = (chosen != ILLEGAL) & (chosen == best)
    return (float(optimal.mean()) if len(optimal) else float("nan")), optimal
