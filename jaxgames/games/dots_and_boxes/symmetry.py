"""Symmetries of the Dots-and-Boxes board and the canonical (minimal) form.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With
Dots And Boxes" (course report), section 4.2, and Barker & Korf (2012): the mirror image of a
position is a position whose optimal play mirrors the original one; every
board has the horizontal and vertical mirror symmetries (and both together,
the 180 degree rotation), square boards also the diagonal reflections and the
90/270 degree rotations. Storing only the canonical image of each position
shrinks a transposition table, and the images augment training data.

Each symmetry ``g`` acts on the dots ``(i, j)``, ``i`` in ``[0, num_rows]``,
``j`` in ``[0, num_cols]`` (``n`` = the side of a square board):

===============  ===================  ===========
name             dot ``(i, j)`` to     boards
===============  ===================  ===========
identity         ``(i, j)``            all
flip_lr          ``(i, C - j)``        all (mirror in the vertical axis)
flip_ud          ``(R - i, j)``        all (mirror in the horizontal axis)
rot180           ``(R - i, C - j)``    all (both mirrors)
transpose        ``(j, i)``            square (main diagonal)
anti_transpose   ``(n - j, n - i)``    square (anti-diagonal)
rot90            ``(j, n - i)``        square (clockwise)
rot270           ``(n - j, i)``        square
===============  ===================  ===========

and so on edges (an edge goes to the edge joining the images of its dots),
actions (= edges) and boxes. Tables are static numpy; the functions take the
symmetry index as a Python or traced int and are jittable and vmappable.

Conventions: ``edge_map[g, e]`` is the image ``g(e)`` of edge (action) ``e``;
``edge_gather[g]`` is its inverse, so that ``edges[..., edge_gather[g]]`` is
the transformed board (``out[g(e)] = edges[e]``). A policy over actions
transforms like edges.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes import rules
from jaxgames.games.dots_and_boxes.rules import Board

RECTANGLE_SYMMETRIES = ("identity", "flip_lr", "flip_ud", "rot180")
"""The symmetries of every board."""

SQUARE_SYMMETRIES = RECTANGLE_SYMMETRIES + ("transpose", "anti_transpose", "rot90", "rot270")
"""The symmetries of a square board (the dihedral group of order 8)."""

_DOT_MAPS = {
    "identity": lambda i, j, R, C: (i, j),
    "flip_lr": lambda i, j, R, C: (i, C - j),
    "flip_ud": lambda i, j, R, C: (R - i, j),
    "rot180": lambda i, j, R, C: (R - i, C - j),
    "transpose": lambda i, j, R, C: (j, i),
    "anti_transpose": lambda i, j, R, C: (C - j, R - i),
    "rot90": lambda i, j, R, C: (j, R - i),
    "rot270": lambda i, j, R, C: (C - j, i),
}


class Symmetries(NamedTuple):
    """Static (numpy) tables of the symmetry group of one board size.

    Attributes:
        names: the ``G`` symmetry names (`RECTANGLE_SYMMETRIES` or `SQUARE_SYMMETRIES`).
        edge_map: int32 ``[G, num_edges]``: ``edge_map[g, e] = g(e)``.
        edge_gather: int32 ``[G, num_edges]``: the inverse permutations.
        box_map: int32 ``[G, num_boxes]``: ``box_map[g, b] = g(b)``.
        box_gather: int32 ``[G, num_boxes]``: the inverse permutations.
        inverse: int32 ``[G]``: the index of ``g^-1``.
    """

    names: tuple[str, ...]
    edge_map: np.ndarray
    edge_gather: np.ndarray
    box_map: np.ndarray
    box_gather: np.ndarray
    inverse: np.ndarray


@functools.lru_cache(maxsize=None)
def symmetries(num_rows: int, num_cols: int) -> Symmetries:
    """The symmetry tables of a ``num_rows`` x ``num_cols`` board (cached).

    Raises:
        TypeError, ValueError: for a bad size (`rules.validate_size`).
    """
    g = rules.geometry(num_rows, num_cols)
    R, C = g.num_rows, g.num_cols
    names = SQUARE_SYMMETRIES if R == C else RECTANGLE_SYMMETRIES
    edge_index = {frozenset(map(tuple, g.edge_dots[e].tolist())): e for e in range(g.num_edges)}
    box_index = {(r, c): r * C + c for r in range(R) for c in range(C)}
    edge_map = np.zeros((len(names), g.num_edges), np.int32)
    box_map = np.zeros((len(names), g.num_boxes), np.int32)
    for k, name in enumerate(names):
        f = _DOT_MAPS[name]
        for e in range(g.num_edges):
            (i0, j0), (i1, j1) = g.edge_dots[e].tolist()
            edge_map[k, e] = edge_index[frozenset((f(i0, j0, R, C), f(i1, j1, R, C)))]
        for (r, c), b in box_index.items():
            (a0, b0), (a1, b1) = f(r, c, R, C), f(r + 1, c + 1, R, C)  # opposite corners
            box_map[k, b] = box_index[(min(a0, a1), min(b0, b1))]
    edge_gather = np.argsort(edge_map, axis=1).astype(np.int32)
    box_gather = np.argsort(box_map, axis=1).astype(np.int32)
    inverse = np.array(
        [next(h for h in range(len(names)) if np.array_equal(edge_map[h], edge_gather[k])) for k in range(len(names))],
        np.int32,
    )
    for table in (edge_map, edge_gather, box_map, box_gather, inverse):
        table.setflags(write=False)
    return Symmetries(names, edge_map, edge_gather, box_map, box_gather, inverse)


def symmetry_index(num_rows: int, num_cols: int, name: str) -> int:
    """The index of symmetry ``name`` on this board.

    Raises:
        ValueError: ``name`` is unknown or not a symmetry of this board
            (the diagonal ones and the quarter turns need a square board).
    """
    names = symmetries(num_rows, num_cols).names
    if name not in names:
        raise ValueError(f"{name!r} is not a symmetry of a {num_rows}x{num_cols} board; choose from {names}")
    return names.index(name)


def transform_edges(sym: Symmetries, edges: jax.Array, g) -> jax.Array:
    """The image of a board's edges (or any per-edge array, e.g. a policy) under ``g``.

    Args:
        sym: `symmetries` of the board size.
        edges: ``[..., num_edges]``, any dtype.
        g: int (Python or traced int32 ``[]``), the symmetry index.

    Returns:
        Same shape and dtype; ``out[..., g(e)] = edges[..., e]``.
    """
    return jnp.take(edges, jnp.asarray(sym.edge_gather)[g], axis=-1)


def transform_action(sym: Symmetries, action: jax.Array, g) -> jax.Array:
    """int32 ``[...]``: the image ``g(action)`` of actions (edge ids)."""
    return jnp.asarray(sym.edge_map)[g, action]


def transform_board(sym: Symmetries, board: Board, g) -> Board:
    """The image of a `rules.Board` under symmetry ``g`` (one game; vmap for more).

    Edges, box sides and box owners are permuted; scores, the player to move,
    the last move's box count and the number of drawn edges are unchanged.
    """
    gather_boxes = jnp.asarray(sym.box_gather)[g]
    return board.replace(
        edges=transform_edges(sym, board.edges, g),
        box_sides=jnp.take(board.box_sides, gather_boxes, axis=-1),
        box_owner=jnp.take(board.box_owner, gather_boxes, axis=-1),
    )


def transform_state(env, state, g):
    """The image of a `DotsAndBoxesState` under symmetry ``g`` (one game; vmap for more).

    Args:
        env: the `DotsAndBoxes` the state belongs to.
        state: one unbatched state.
        g: int or traced int32 ``[]``.

    Returns:
        The state with board, legal-action mask and observation transformed;
        player, rewards, flags and step count unchanged.
    """
    sym = symmetries(env.num_rows, env.num_cols)
    board = transform_board(sym, state.board, g)
    return state.replace(
        board=board,
        legal_action_mask=transform_edges(sym, state.legal_action_mask, g),
        observation=env.observe_board(board, state.current_player),
    )


def all_images(sym: Symmetries, edges: jax.Array) -> jax.Array:
    """``[..., G, num_edges]``: the image of ``edges`` ``[..., num_edges]`` under every symmetry."""
    return jnp.take(edges, jnp.asarray(sym.edge_gather), axis=-1)


def canonical_index(sym: Symmetries, edges: jax.Array) -> jax.Array:
    """int32 ``[]``: the first symmetry whose image of ``edges`` is minimal.

    Minimal means the lexicographically smallest dbn string (``'0' < '1'``),
    the canonical form of El Kaddouri et al., section 4.2. One game; vmap for a batch.

    Args:
        sym: `symmetries` of the board size.
        edges: bool ``[num_edges]``.
    """
    images = all_images(sym, edges.astype(jnp.bool_))  # [G, E]
    differ = images[:, None, :] != images[None, :, :]  # [G, G, E]
    first = jnp.argmax(differ, axis=-1)  # first differing position
    bit_of_other = jnp.take_along_axis(images[None, :, :], first[..., None], axis=-1)[..., 0]  # images[h, first[g, h]]
    less = jnp.any(differ, axis=-1) & bit_of_other  # less[g, h]: image g < image h
    minimal = ~jnp.any(less.T, axis=-1)  # nobody is below g
    return jnp.argmax(minimal).astype(jnp.int32)


def canonical_edges(sym: Symmetries, edges: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The canonical (minimal) image of a board's edges, and the symmetry that gives it.

    Args:
        sym: `symmetries` of the board size.
        edges: bool ``[num_edges]`` (one game; vmap for a batch).

    Returns:
        ``(canonical, g)``: bool ``[num_edges]`` and int32 ``[]`` with
        ``canonical == transform_edges(sym, edges, g)``. Positions related by
        a symmetry have the same canonical edges (a transposition-table key).
    """
    g = canonical_index(sym, edges)
    return transform_edges(sym, edges, g), g
