"""Text and SVG pictures of Dots-and-Boxes states and games (host side).

`to_text` draws a board in the box-drawing style of OpenSpiel's
``DotsAndBoxesState::ToString`` (the tests compare the two character for
character); `state_svg` and `game_svg` draw SVG pictures (a state; a whole
game with every edge numbered by the move that drew it and coloured by its
player). Nothing here is jitted; pass one unbatched state.
"""

from __future__ import annotations

from typing import Sequence
from xml.sax.saxutils import escape

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes import rules

PLAYER_COLORS = ("#1f77b4", "#d62728")
"""SVG colours of player 0 (blue) and player 1 (red)."""

_EMPTY_H = "╴ ╶"
_DRAWN_H = "───"


def _corner(r: int, c: int, R: int, C: int) -> str:
    top, bottom, left, right = r == 0, r == R, c == 0, c == C
    if top:
        return "┌" if left else ("┐" if right else "┬")
    if bottom:
        return "└" if left else ("┘" if right else "┴")
    return "├" if left else ("┤" if right else "┼")


def board_to_text(num_rows: int, num_cols: int, edges, box_owner) -> str:
    """OpenSpiel-style text of a board.

    Args:
        num_rows, num_cols: board size in boxes.
        edges: bool ``[num_edges]`` (dbn order).
        box_owner: int ``[num_boxes]``: 0, 1, or -1 (none or unknown: blank).

    Returns:
        ``2 * num_rows + 1`` lines, each ending in a newline: dots as box
        corners, ``───`` a drawn horizontal edge, ``╴ ╶`` an undrawn one, ``│`` a
        drawn vertical edge, and ``1``/``2`` in boxes taken by player 0/1.

    Raises:
        ValueError: arrays of the wrong size.
    """
    g = rules.geometry(num_rows, num_cols)
    R, C = g.num_rows, g.num_cols
    e = np.asarray(edges).astype(bool)
    owner = np.asarray(box_owner).astype(int)
    if e.shape != (g.num_edges,) or owner.shape != (g.num_boxes,):
        raise ValueError(f"expected edges [{g.num_edges}] and box_owner [{g.num_boxes}]; got {e.shape}, {owner.shape}")
    lines = []
    for r in range(R + 1):
        row = ""
        for c in range(C + 1):
            row += _corner(r, c, R, C)
            if c < C:
                row += _DRAWN_H if e[rules.h_edge(R, C, r, c)] else _EMPTY_H
        lines.append(row)
        if r == R:
            break
        row = ""
        for c in range(C + 1):
            row += "│" if e[rules.v_edge(R, C, r, c)] else " "
            if c < C:
                o = owner[r * C + c]
                row += f" {o + 1} " if o in (0, 1) else "   "
        lines.append(row)
    return "".join(line + "\n" for line in lines)


def to_text(env, state) -> str:
    """OpenSpiel-style text of one `DotsAndBoxesState` (``str(pyspiel_state)``).

    Args:
        env: the `DotsAndBoxes` of the state.
        state: one unbatched state.

    Raises:
        ValueError: a batched state.
    """
    if np.ndim(state.current_player) != 0:
        raise ValueError("to_text draws one state; index the batch first")
    return board_to_text(env.num_rows, env.num_cols, state.board.edges, state.board.box_owner)


def _svg(num_rows, num_cols, edges, box_owner, *, edge_player=None, edge_move=None, title="", cell=48):
    g = rules.geometry(num_rows, num_cols)
    R, C = g.num_rows, g.num_cols
    pad = cell // 2
    top = pad + (18 if title else 0)
    width, height = 2 * pad + C * cell, top + pad + R * cell

    def xy(i, j):
        return pad + j * cell, top + i * cell

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    if title:
        out.append(f'<text x="{width / 2}" y="{pad}" text-anchor="middle" font-size="13">{escape(title)}</text>')
    for b in range(g.num_boxes):
        r, c = divmod(b, C)
        o = int(box_owner[b])
        x, y = xy(r, c)
        if o in (0, 1):
            out.append(
                f'<rect class="box" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="{PLAYER_COLORS[o]}" fill-opacity="0.25"/>'
            )
            out.append(
                f'<text x="{x + cell / 2}" y="{y + cell / 2 + 5}" text-anchor="middle" font-size="14" '
                f'fill="{PLAYER_COLORS[o]}">{o + 1}</text>'
            )
    for e in range(g.num_edges):
        (i0, j0), (i1, j1) = g.edge_dots[e].tolist()
        (x0, y0), (x1, y1) = xy(i0, j0), xy(i1, j1)
        if edges[e]:
            color = "black" if edge_player is None else PLAYER_COLORS[int(edge_player[e])]
            out.append(
                f'<line class="edge" data-action="{e}" x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" '
                f'stroke="{color}" stroke-width="4" stroke-linecap="round"/>'
            )
            if edge_move is not None:
                out.append(
                    f'<text class="move" x="{(x0 + x1) / 2 + (4 if i0 != i1 else 0)}" '
                    f'y="{(y0 + y1) / 2 - (4 if i0 == i1 else -4)}" font-size="10" fill="{color}">'
                    f"{int(edge_move[e])}</text>"
                )
        else:
            out.append(
                f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#bbbbbb" stroke-width="1" stroke-dasharray="3,3"/>'
            )
    for i in range(R + 1):
        for j in range(C + 1):
            x, y = xy(i, j)
            out.append(f'<circle cx="{x}" cy="{y}" r="4" fill="black"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def state_svg(env, state, *, cell: int = 48) -> str:
    """An SVG picture of one state: drawn edges, dots, boxes shaded by owner, scores.

    Args:
        env: the `DotsAndBoxes` of the state.
        state: one unbatched state.
        cell: box side in pixels.

    Returns:
        The SVG document as a str (write it to a ``.svg`` file).

    Raises:
        ValueError: a batched state.
    """
    if np.ndim(state.current_player) != 0:
        raise ValueError("state_svg draws one state; index the batch first")
    b = state.board
    s = np.asarray(b.scores)
    status = "game over" if bool(state.terminated) else f"player {int(state.current_player) + 1} to move"
    title = f"{s[0]} : {s[1]}, {status}"
    return _svg(env.num_rows, env.num_cols, np.asarray(b.edges), np.asarray(b.box_owner), title=title, cell=cell)


def game_svg(env, actions: Sequence[int], *, cell: int = 48) -> str:
    """An SVG picture of a whole game from the initial state.

    Each edge is coloured by the player who drew it and labelled with its
    move number (1-based); boxes are shaded by owner; the title gives the
    final scores.

    Args:
        env: a `DotsAndBoxes`.
        actions: the edge ids played, in order (legal, at most ``num_actions``).
        cell: box side in pixels.

    Returns:
        The SVG document as a str.

    Raises:
        ValueError: an action out of range, repeated, or too many actions.
    """
    acts = np.asarray(list(actions), np.int64)
    E = env.num_actions
    if acts.ndim != 1 or len(acts) > E:
        raise ValueError(f"actions must be a sequence of at most {E} edge ids; got shape {acts.shape}")
    if len(acts) and (acts.min() < 0 or acts.max() >= E):
        raise ValueError(f"actions must lie in [0, {E}); got {acts.tolist()}")
    if len(set(acts.tolist())) != len(acts):
        raise ValueError(f"an edge is drawn twice in {acts.tolist()}")
    state = env.init(jax.random.key(0))
    movers = []
    if len(acts):

        def body(s, a):
            return env.step(s, a), s.current_player

        state, movers = jax.lax.scan(body, state, jnp.asarray(acts, jnp.int32))
        movers = np.asarray(movers)
    edge_player = np.zeros(E, int)
    edge_move = np.zeros(E, int)
    edge_player[acts] = movers
    edge_move[acts] = np.arange(1, len(acts) + 1)
    s = np.asarray(state.board.scores)
    title = f"{env.num_rows}x{env.num_cols}, {len(acts)} moves, score {s[0]} : {s[1]}"
    return _svg(
        env.num_rows,
        env.num_cols,
        np.asarray(state.board.edges),
        np.asarray(state.board.box_owner),
        edge_player=edge_player,
        edge_move=edge_move,
        title=title,
        cell=cell,
    )
