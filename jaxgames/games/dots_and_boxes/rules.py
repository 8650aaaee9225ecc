"""The pure rules of Dots-and-Boxes: board geometry and one move.

No rewards, observations or RL contract here (that is
`jaxgames.games.dots_and_boxes.env`); search code and playout loops call it
directly.

Geometry (OpenSpiel ``dots_and_boxes``; El Kaddouri, Rys & Gao, "Multi Agent
Reinforcement Learning With Dots And Boxes", course report, section 4.1). A board of
``num_rows`` x ``num_cols`` boxes has ``(num_rows + 1) x (num_cols + 1)``
dots. Edges, which are also the actions, are numbered horizontal first::

    h(r, c) = r * num_cols + c                                  r in [0, num_rows], c in [0, num_cols)
    v(r, c) = (num_rows + 1) * num_cols + r * (num_cols + 1) + c  r in [0, num_rows), c in [0, num_cols]

``h(r, c)`` joins dots ``(r, c)`` and ``(r, c + 1)``; ``v(r, c)`` joins dots
``(r, c)`` and ``(r + 1, c)``. Box ``(r, c)`` (index ``r * num_cols + c``) has
the sides ``h(r, c)`` (top), ``h(r + 1, c)`` (bottom), ``v(r, c)`` (left) and
``v(r, c + 1)`` (right). This edge order is also the order of the characters
of the dots-and-boxes notation (dbn) of Barker & Korf (2012).

Rules: the players alternately draw one undrawn edge; a move that completes
one or two boxes scores them for the mover, who then moves again; otherwise
the turn passes. The game ends when every edge is drawn.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

MIN_SIZE = 1
"""Smallest number of box rows or columns."""

MAX_SIZE = 15
"""Largest number of box rows or columns (a static bound of this library)."""

NO_OWNER = -1
"""`Board.box_owner` of a box that is not complete, or whose owner is unknown
(a box already complete in an imported dbn string)."""


def validate_size(num_rows, num_cols) -> tuple[int, int]:
    """Checks a board size at the Python boundary.

    Args:
        num_rows: number of box rows, a Python int in ``[1, 15]``.
        num_cols: number of box columns, a Python int in ``[1, 15]``.

    Returns:
        ``(num_rows, num_cols)`` as Python ints.

    Raises:
        TypeError: if either is not an integer (bools are refused).
        ValueError: if either is outside ``[1, 15]``.
    """
    out = []
    for name, value in (("num_rows", num_rows), ("num_cols", num_cols)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int; got {value!r} ({type(value).__name__})")
        if not MIN_SIZE <= int(value) <= MAX_SIZE:
            raise ValueError(f"{name} must be in [{MIN_SIZE}, {MAX_SIZE}]; got {value}")
        out.append(int(value))
    return out[0], out[1]


class Geometry(NamedTuple):
    """Static (numpy) incidence tables of one board size.

    Attributes:
        num_rows: box rows.
        num_cols: box columns.
        num_edges: ``(num_rows + 1) * num_cols + num_rows * (num_cols + 1)``,
            also the number of actions.
        num_boxes: ``num_rows * num_cols``.
        num_horizontal: ``(num_rows + 1) * num_cols``; edges below it are horizontal.
        box_edges: int32 ``[num_boxes, 4]``: the sides (top, bottom, left, right) of each box.
        edge_boxes: int32 ``[num_edges, 2]``: the boxes on either side of each
            edge (above/left first), ``-1`` where the edge is on the border.
        incidence: bool ``[num_edges, num_boxes]``: edge ``e`` is a side of box ``b``.
        edge_dots: int32 ``[num_edges, 2, 2]``: the ``(row, col)`` of the two dots each edge joins.
    """

    num_rows: int
    num_cols: int
    num_edges: int
    num_boxes: int
    num_horizontal: int
    box_edges: np.ndarray
    edge_boxes: np.ndarray
    incidence: np.ndarray
    edge_dots: np.ndarray


def h_edge(num_rows: int, num_cols: int, r: int, c: int) -> int:
    """Index of the horizontal edge from dot ``(r, c)`` to ``(r, c + 1)``.

    OpenSpiel's action id ``r * num_cols + c`` (``Move::ActionId``).

    Args:
        num_rows, num_cols: board size in boxes.
        r: dot row in ``[0, num_rows]``.
        c: dot column in ``[0, num_cols)``.

    Returns:
        A Python int in ``[0, (num_rows + 1) * num_cols)``. Arguments are not
        checked (a host-side helper for tables and tests).
    """
    del num_rows
    return r * num_cols + c


def v_edge(num_rows: int, num_cols: int, r: int, c: int) -> int:
    """Index of the vertical edge from dot ``(r, c)`` to ``(r + 1, c)``.

    OpenSpiel's action id ``(num_rows + 1) * num_cols + r * (num_cols + 1) + c``.

    Args:
        num_rows, num_cols: board size in boxes.
        r: dot row in ``[0, num_rows)``.
        c: dot column in ``[0, num_cols]``.

    Returns:
        A Python int in ``[(num_rows + 1) * num_cols, num_edges)``; not checked.
    """
    return (num_rows + 1) * num_cols + r * (num_cols + 1) + c


@functools.lru_cache(maxsize=None)
def geometry(num_rows: int, num_cols: int) -> Geometry:
    """The static tables of a ``num_rows`` x ``num_cols`` board (cached).

    Raises:
        TypeError, ValueError: see `validate_size`.
    """
    R, C = validate_size(num_rows, num_cols)
    nh = (R + 1) * C
    E = nh + R * (C + 1)
    B = R * C
    box_edges = np.zeros((B, 4), np.int32)
    for r in range(R):
        for c in range(C):
            box_edges[r * C + c] = (h_edge(R, C, r, c), h_edge(R, C, r + 1, c), v_edge(R, C, r, c), v_edge(R, C, r, c + 1))
    incidence = np.zeros((E, B), bool)
    for b in range(B):
        incidence[box_edges[b], b] = True
    edge_boxes = np.full((E, 2), -1, np.int32)
    for e in range(E):
        boxes = np.flatnonzero(incidence[e])
        edge_boxes[e, : len(boxes)] = boxes
    edge_dots = np.zeros((E, 2, 2), np.int32)
    for r in range(R + 1):
        for c in range(C):
            edge_dots[h_edge(R, C, r, c)] = ((r, c), (r, c + 1))
    for r in range(R):
        for c in range(C + 1):
            edge_dots[v_edge(R, C, r, c)] = ((r, c), (r + 1, c))
    for table in (box_edges, edge_boxes, incidence, edge_dots):
        table.setflags(write=False)
    return Geometry(R, C, E, B, nh, box_edges, edge_boxes, incidence, edge_dots)


@struct.dataclass
class Board:
    """The rules state of one game (vmap for a batch).

    Attributes:
        edges: bool ``[num_edges]``: drawn edges, in action (= dbn) order.
        box_sides: int8 ``[num_boxes]``: number of drawn sides of each box, 0..4.
        box_owner: int8 ``[num_boxes]``: the player (0 or 1) who completed
            each box, `NO_OWNER` (-1) if open or of unknown owner.
        scores: int32 ``[2]``: boxes won by each player.
        player: int32 ``[]``: the player to move (after the end: the last mover).
        last_boxes: int8 ``[]``: boxes completed by the last move (0, 1 or 2);
            the per-step box count for search and learning.
        num_drawn: int32 ``[]``: number of drawn edges.
    """

    edges: jax.Array
    box_sides: jax.Array
    box_owner: jax.Array
    scores: jax.Array
    player: jax.Array
    last_boxes: jax.Array
    num_drawn: jax.Array


def empty_board(num_rows: int, num_cols: int) -> Board:
    """The initial board: no edge drawn, player 0 to move, scores 0.

    Raises:
        TypeError, ValueError: for a bad size (`validate_size`).
    """
    g = geometry(num_rows, num_cols)
    return Board(
        edges=jnp.zeros(g.num_edges, jnp.bool_),
        box_sides=jnp.zeros(g.num_boxes, jnp.int8),
        box_owner=jnp.full(g.num_boxes, NO_OWNER, jnp.int8),
        scores=jnp.zeros(2, jnp.int32),
        player=jnp.int32(0),
        last_boxes=jnp.int8(0),
        num_drawn=jnp.int32(0),
    )


def apply_edge(geom: Geometry, board: Board, action: jax.Array) -> Board:
    """Draws edge ``action`` (which must be undrawn) for ``board.player``.

    The kernel of every step: branch-free, written for one game, vmapped by
    the caller. It does not check legality (the `Env` adapter does).

    Args:
        geom: static tables of the board size.
        board: one game.
        action: int32 ``[]`` in ``[0, num_edges)``, an undrawn edge.

    Returns:
        The board after the move: the mover scores each box it completes
        (0, 1 or 2) and moves again if it completed one, else the turn passes
        (OpenSpiel ``DotsAndBoxesState::DoApplyAction``; El Kaddouri et al., section 4).
    """
    chex.assert_shape(board.edges, (geom.num_edges,))  # trace time: one unbatched game
    chex.assert_shape(board.box_sides, (geom.num_boxes,))
    chex.assert_shape(action, ())
    hit = jnp.arange(geom.num_edges, dtype=jnp.int32) == action  # one-hot, [E]
    # The (at most two) boxes on either side of the edge: two scalar lookups
    # in the static table, then a compare against the box ids (no gather
    # over the per-game arrays).
    sides_of = jnp.asarray(geom.edge_boxes)[jnp.clip(action, 0, geom.num_edges - 1)]  # [2], -1 = border
    box_ids = jnp.arange(geom.num_boxes, dtype=jnp.int32)
    adjacent = (box_ids == sides_of[0]) | (box_ids == sides_of[1])  # [B]
    box_sides = board.box_sides + adjacent.astype(jnp.int8)
    completed = adjacent & (box_sides == 4)
    n = jnp.sum(completed, dtype=jnp.int32)
    player = board.player
    return Board(
        edges=board.edges | hit,
        box_sides=box_sides,
        box_owner=jnp.where(completed, player.astype(jnp.int8), board.box_owner),
        scores=board.scores + jnp.where(jnp.arange(2) == player, n, 0),
        player=jnp.where(n > 0, player, 1 - player),
        last_boxes=n.astype(jnp.int8),
        num_drawn=board.num_drawn + 1,
    )


def random_playout(geom: Geometry, board: Board, bits: jax.Array, *, with_actions: bool = False):
    """Plays ``board`` to the end, each move uniform among the undrawn edges.

    The compact playout loop of search rollouts and of the benchmark. The
    undrawn edges are kept in an array that a Fisher-Yates shuffle consumes:
    at step ``k`` a uniform index ``j`` in ``[k, L)`` (``L`` = undrawn edges
    at the start) picks ``remaining[j]``, which is then overwritten with
    ``remaining[k]``: exactly the uniformly random policy, at O(num_edges)
    elementwise work per move and no sort. The randomness comes in as
    ``bits``, so the kernel stays deterministic.

    Args:
        geom: static tables of the board size.
        board: one game, possibly mid-game or finished.
        bits: uint32 ``[num_edges]`` uniform random words (one per move;
            ``jax.random.bits(key, (num_edges,), jnp.uint32)``).

        with_actions: also return the moves played (static).

    Returns:
        The finished board (every edge drawn); with ``with_actions`` the pair
        ``(board, actions)``, ``actions`` int32 ``[num_edges]`` in the order
        played, padded with -1 after the last move. Moves are picked with
        ``bits[k] % (L - k)``, whose bias is below ``num_edges / 2**32``.
    """
    E = geom.num_edges
    chex.assert_shape(bits, (E,))
    idx = jnp.arange(E, dtype=jnp.int32)
    undrawn = ~board.edges
    # Stable partition: undrawn edges first, in increasing order.
    position = jnp.where(undrawn, jnp.cumsum(undrawn) - 1, E)
    remaining = jnp.zeros(E + 1, jnp.int32).at[position].set(idx)[:E]
    num_left = E - board.num_drawn

    def body(carry, k):
        board, remaining = carry
        m = jnp.maximum(num_left - k, 1).astype(jnp.uint32)
        j = k + (bits[k] % m).astype(jnp.int32)
        pick = idx == j
        action = jnp.sum(jnp.where(pick, remaining, 0))
        moved = remaining[k]  # k is the shared loop counter: a static-shape slice
        remaining = jnp.where(pick, moved, remaining)
        nxt = apply_edge(geom, board, action)
        live = k < num_left
        board = jax.tree.map(lambda a, b: jnp.where(live, a, b), nxt, board)
        return (board, remaining), (jnp.where(live, action, -1) if with_actions else None)

    (board, _), actions = jax.lax.scan(body, (board, remaining), jnp.arange(E, dtype=jnp.int32))
    return (board, actions) if with_actions else board


def is_over(geom: Geometry, board: Board) -> jax.Array:
    """bool ``[]``: every edge is drawn (the only way the game ends)."""
    return board.num_drawn >= geom.num_edges


def outcome(board: Board, *, utility_margin: bool = False) -> jax.Array:
    """float32 ``[2]``: the final returns from the scores (OpenSpiel ``Returns``).

    Args:
        board: a finished game (the value is meaningless before the end).
        utility_margin: if True, the box margin ``scores[0] - scores[1]``
            (and its negation); else +1/-1 for the winner/loser, 0/0 for a draw.
    """
    margin = (board.scores[0] - board.scores[1]).astype(jnp.float32)
    value = margin if utility_margin else jnp.sign(margin)
    return jnp.stack([value, -value])
