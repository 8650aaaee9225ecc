"""Exact full-width search over a position's last few undrawn edges (rules only), for one board; vmap it.

The minimax recursion of the retrograde solver (Torralba, "Multi-Agent
Systems: Adversarial Search and Game Theory", Aalborg lecture 12, 2022),
run from one position over the subsets of its ``k`` undrawn edges instead of
over every edge set of the board:

    W(S) = boxes the player to move nets from ``position + S`` on;  W(all drawn) = 0;
    W(S) = max over undrawn e of  g + W(S + e)  if e completes g > 0 boxes,  else  -W(S + e).

The ``2**k`` subsets are filled level by level (most edges first), each level
one vectorised step over static index tables. It reads only the rules'
incidence tables and the position: no table of the whole board (that is
`solver`, the judge), no chain rules. Cost: about ``2**k * k`` entries per
position, so ``k`` is limited to `MAX_FREE`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes import rules

MAX_FREE = 14  # 2**14 subsets x 14 moves per position


class EndgameResult(NamedTuple):
    """What `endgame_search` returns for one position.

    Attributes:
        exact: bool ``[]``: the position has at most ``max_free`` undrawn edges (else the rest is zero).
        margin: float32 ``[]``: the final box margin (all boxes, those already won included) from the
            view of the player to move, with optimal play by both from here.
        optimal: bool ``[num_edges]``: the undrawn edges that keep that margin (all False when the game
            is over or the position is not exact).
    """

    exact: jax.Array
    margin: jax.Array
    optimal: jax.Array


@functools.lru_cache(maxsize=None)
def _levels(k: int):
    """Static tables: the subsets of each size, their bits, and each subset's children."""
    subsets = np.arange(1 << k, dtype=np.int64)
    bits = ((subsets[:, None] >> np.arange(k)) & 1).astype(np.int32)  # [2**k, k]
    size = bits.sum(axis=1)
    levels = [np.nonzero(size == p)[0].astype(np.int32) for p in range(k + 1)]
    children = [(lv[:, None] | (1 << np.arange(k))[None, :]).astype(np.int32) for lv in levels]
    return bits, levels, children


def check_max_free(max_free) -> int:
    """``max_free`` as an int in ``[0, MAX_FREE]``.

    Raises:
        TypeError: not an integer.
        ValueError: outside ``[0, MAX_FREE]``.
    """
    if isinstance(max_free, bool) or not isinstance(max_free, (int, np.integer)):
        raise TypeError(f"max_free must be an integer; got {max_free!r}")
    if not 0 <= int(max_free) <= MAX_FREE:
        raise ValueError(f"max_free must be in [0, {MAX_FREE}] (2**max_free subsets per position); got {max_free}")
    return int(max_free)


def endgame_search(geom: rules.Geometry, board: rules.Board, max_free: int) -> EndgameResult:
    """The exact value and optimal moves of one position with at most ``max_free`` undrawn edges.

    Args:
        geom: static tables of the board size (`rules.geometry`).
        board: one position (unbatched `rules.Board`; vmap for a batch).
        max_free: a Python int in ``[0, MAX_FREE]``: positions with more undrawn edges are not searched
            (``exact`` False; the work is still done, on their first ``max_free`` undrawn edges).

    Returns:
        `EndgameResult`.

    Raises:
        TypeError, ValueError: at trace time, a bad ``max_free`` (`check_max_free`).
    """
    k = check_max_free(max_free)
    E = geom.num_edges
    free = ~board.edges
    num_free = jnp.sum(free, dtype=jnp.int32)
    exact = num_free <= k
    mover_lead = (board.scores[board.player] - board.scores[1 - board.player]).astype(jnp.float32)
    if k == 0:
        return EndgameResult(exact, jnp.where(exact, mover_lead, 0.0), jnp.zeros(E, bool))
    bits, levels, children = _levels(k)
    slot_edge = jnp.nonzero(free, size=k, fill_value=E)[0].astype(jnp.int32)  # [k]; E = no edge
    valid = slot_edge < E
    edge_boxes = jnp.asarray(np.concatenate([geom.edge_boxes, np.full((1, 2), -1, np.int32)]))  # row E: none
    slot_boxes = edge_boxes[slot_edge]  # [k, 2], -1 = none
    has_box = slot_boxes >= 0
    box = jnp.clip(slot_boxes, 0, geom.num_boxes - 1)
    # sides of each box drawn in position + S: the position's, plus the slots of S that are its sides
    side_of = (jnp.arange(geom.num_boxes)[None, None, :] == slot_boxes[:, :, None]).any(axis=1)  # [k, boxes]
    sides = board.box_sides.astype(jnp.int32)[None, :] + jnp.asarray(bits) @ side_of.astype(jnp.int32)  # [2**k, boxes]

    def moves(level):
        """Boxes completed by drawing each slot at each subset of ``level`` (int32 [n, k]), and which
        slots are undrawn there (bool [n, k])."""
        after = sides[jnp.asarray(level)][:, box] + 1  # [n, k, 2]
        g = jnp.sum(has_box[None] & (after == 4), axis=2)
        undrawn = valid[None, :] & (jnp.asarray(bits[level]) == 0)
        return g, undrawn

    W = jnp.zeros(1 << k, jnp.float32)
    for p in range(k - 1, -1, -1):  # level k is the all-drawn subset (or unreachable ones): W = 0
        g, undrawn = moves(levels[p])
        w_child = W[jnp.asarray(children[p])]  # [n, k]
        value = jnp.where(g > 0, g + w_child, -w_child)
        best = jnp.max(jnp.where(undrawn, value, -jnp.inf), axis=1)
        W = W.at[jnp.asarray(levels[p])].set(jnp.where(undrawn.any(axis=1), best, 0.0))
    g0, undrawn0 = moves(levels[0])
    root_values = jnp.where(g0 > 0, g0 + W[jnp.asarray(children[0])], -W[jnp.asarray(children[0])])[0]  # [k]
    keeps = undrawn0[0] & (root_values == W[0]) & exact
    optimal = jnp.zeros(E + 1, bool).at[slot_edge].max(keeps)[:E]
    return EndgameResult(exact, jnp.where(exact, mover_lead + W[0], 0.0), optimal)
