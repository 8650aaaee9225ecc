"""Text and SVG pictures of Onitama states and games (host side).

`to_text` draws a state as the five board lines that `rules.pieces_from_text`
reads back (``r``/``R`` Red student/master, ``b``/``B`` Blue, ``.`` empty; row 0
on top, Blue's side) between the players' cards and a status line;
`game_text` joins the texts of a game's states with the moves between them.
`state_svg` and `game_svg` draw SVG pictures: the board with both temple
arches marked, each card's move picture (Blue's cards turned toward Blue, as
on the table), and for a game a strip of boards numbered by turn. Nothing
here is jitted; pass unbatched states.
"""

from __future__ import annotations

from typing import Sequence
from xml.sax.saxutils import escape

import jax.numpy as jnp
import numpy as np

from jaxgames.games.onitama import cards, rules

PLAYER_COLORS = ("#c0392b", "#2471a3")
"""SVG colours of player 0 (Red) and player 1 (Blue)."""

_CHARS = {(0, False): "r", (0, True): "R", (1, False): "b", (1, True): "B"}


def _check_one(state, what: str) -> None:
    if np.ndim(state.current_player) != 0:
        raise ValueError(f"{what} draws one state; index the batch first")


def _grid(pieces: np.ndarray) -> list[list[str]]:
    grid = [["."] * rules.SIZE for _ in range(rules.SIZE)]
    for p in (0, 1):
        for i, sq in enumerate(pieces[p].tolist()):
            if sq >= 0:
                grid[sq // rules.SIZE][sq % rules.SIZE] = _CHARS[(p, i == rules.MASTER)]
    return grid


def status(state) -> str:
    """One line: who is to move, or who won and how (Way of the Stone / Stream), or the turn-limit draw."""
    _check_one(state, "status")
    b = state.board
    turn = int(b.turn)
    winner = int(b.winner)
    if bool(state.terminated) and winner >= 0:
        pieces = np.asarray(b.pieces)
        ways = []
        if pieces[1 - winner, rules.MASTER] < 0:
            ways.append("Way of the Stone")
        if pieces[winner, rules.MASTER] == rules.TEMPLE[1 - winner]:
            ways.append("Way of the Stream")
        return f"turn {turn}: {cards.COLOR_NAMES[winner]} wins ({' and '.join(ways)})"
    if bool(state.terminated):
        return f"turn {turn}: game over (illegal action by {cards.COLOR_NAMES[int(state.current_player)]})"
    if bool(state.truncated):
        return f"turn {turn}: draw (turn limit)"
    return f"turn {turn}: {cards.COLOR_NAMES[int(state.current_player)]} to move"


def to_text(state) -> str:
    """The text picture of one `OnitamaState` (or anything with its ``board`` and flags).

    Returns:
        Eight lines, each ending in a newline: Blue's cards, the five board
        lines (squares separated by spaces; `rules.pieces_from_text` reads
        them back), Red's cards, then the side card and `status`.

    Raises:
        ValueError: a batched state.
    """
    _check_one(state, "to_text")
    b = state.board
    hands = np.asarray(b.hands)
    name = lambda k: cards.CARD_NAMES[int(k)]
    lines = [f"blue: {name(hands[1, 0])}, {name(hands[1, 1])}"]
    lines += [" ".join(row) for row in _grid(np.asarray(b.pieces))]
    lines.append(f"red: {name(hands[0, 0])}, {name(hands[0, 1])}")
    lines.append(f"side: {name(b.side)}; {status(state)}")
    return "".join(line + "\n" for line in lines)


def action_to_text(env, state, action: int) -> str:
    """A legal action of one state in words, e.g. ``"red Tiger: (4, 0) -> (2, 0)"`` or ``"blue passes, gives up Crab"``.

    Squares are absolute ``(row, col)``, row 0 on top.

    Raises:
        ValueError: a batched state, or an action that is not legal in ``state``.
    """
    _check_one(state, "action_to_text")
    action = int(action)
    if not (0 <= action < env.num_actions) or not bool(np.asarray(state.legal_action_mask)[action]):
        raise ValueError(f"action {action} is not legal in this state")
    if bool(state.terminated | state.truncated):
        raise ValueError("the game is over: no action moves anything")
    slot, piece, target, is_pass = (np.asarray(x) for x in env.decode(state, jnp.int32(action)))
    p = int(state.current_player)
    card = cards.CARD_NAMES[int(np.asarray(state.board.hands)[p, int(slot)])]
    who = cards.COLOR_NAMES[p]
    if bool(is_pass):
        return f"{who} passes, gives up {card}"
    source = int(np.asarray(state.board.pieces)[p, int(piece)])
    divmod5 = lambda s: divmod(int(s), rules.SIZE)
    return f"{who} {card}: {divmod5(source)} -> {divmod5(target)}"


def game_text(env, states: Sequence, actions: Sequence[int] | None = None) -> str:
    """The texts of a game's states (a list of unbatched states), with the moves between them when given.

    Args:
        env: the `Onitama` of the states.
        states: the states in order, e.g. the initial state and one per step.
        actions: ``len(states) - 1`` actions (``actions[t]`` leads from
            ``states[t]`` to ``states[t + 1]``), or None.

    Raises:
        ValueError: a wrong number of actions, or a batched state.
    """
    if actions is not None and len(actions) != len(states) - 1:
        raise ValueError(f"need {len(states) - 1} actions between {len(states)} states; got {len(actions)}")
    parts = []
    for t, s in enumerate(states):
        parts.append(to_text(s))
        if actions is not None and t < len(actions):
            parts.append(f"> {action_to_text(env, s, actions[t])}\n")
    return "\n".join(parts)


# ----------------------------------------------------------------------------- SVG


def _card_svg(card: int, x: float, y: float, cell: float, *, rotated: bool, color: str) -> list[str]:
    """A card: its 5x5 move picture (turned 180 degrees when ``rotated``), name and stamp colour."""
    out = [
        f'<g class="card" data-card="{escape(cards.CARD_NAMES[card])}">',
        f'<rect x="{x}" y="{y}" width="{5 * cell + 8}" height="{5 * cell + 22}" rx="4" fill="#fdf6e3" '
        f'stroke="{PLAYER_COLORS[int(cards.CARD_COLORS[card])]}" stroke-width="2"/>',
    ]
    marked = {(2 + dr, 2 + dc) for (dr, dc), ok in zip(cards.CARD_MOVES[card].tolist(), cards.CARD_MOVE_VALID[card]) if ok}
    for r in range(5):
        for c in range(5):
            rr, cc = (4 - r, 4 - c) if rotated else (r, c)
            fill = color if (rr, cc) in marked else ("#555555" if (rr, cc) == (2, 2) else "white")
            out.append(
                f'<rect x="{x + 4 + c * cell}" y="{y + 4 + r * cell}" width="{cell}" height="{cell}" '
                f'fill="{fill}" stroke="#999999" stroke-width="0.5"/>'
            )
    out.append(
        f'<text x="{x + 4 + 2.5 * cell}" y="{y + 5 * cell + 18}" text-anchor="middle" font-size="11">'
        f"{escape(cards.CARD_NAMES[card])}</text>"
    )
    out.append("</g>")
    return out


def _board_svg(pieces: np.ndarray, x: float, y: float, cell: float, *, label: str = "") -> list[str]:
    out = []
    for r in range(rules.SIZE):
        for c in range(rules.SIZE):
            sq = rules.SIZE * r + c
            fill = "#efe4c8" if (r + c) % 2 == 0 else "#e3d3ad"
            out.append(f'<rect x="{x + c * cell}" y="{y + r * cell}" width="{cell}" height="{cell}" fill="{fill}" stroke="#8d7b55"/>')
            for p in (0, 1):
                if sq == rules.TEMPLE[p]:  # the temple arch, in its owner's colour
                    out.append(
                        f'<rect class="temple" x="{x + c * cell + 2}" y="{y + r * cell + 2}" width="{cell - 4}" '
                        f'height="{cell - 4}" fill="none" stroke="{PLAYER_COLORS[p]}" stroke-width="2" stroke-dasharray="4,2"/>'
                    )
    for p in (0, 1):
        for i, sq in enumerate(pieces[p].tolist()):
            if sq < 0:
                continue
            cx, cy = x + (sq % rules.SIZE + 0.5) * cell, y + (sq // rules.SIZE + 0.5) * cell
            master = i == rules.MASTER
            radius = cell * (0.38 if master else 0.28)
            out.append(
                f'<circle class="{"master" if master else "student"}" data-player="{p}" cx="{cx}" cy="{cy}" '
                f'r="{radius}" fill="{PLAYER_COLORS[p]}" stroke="black" stroke-width="{2 if master else 1}"/>'
            )
            text = "M" if master else str(i + 1)
            out.append(
                f'<text x="{cx}" y="{cy + cell * 0.12}" text-anchor="middle" font-size="{cell * 0.32}" fill="white">{text}</text>'
            )
    if label:
        out.append(
            f'<text x="{x + 2.5 * cell}" y="{y + 5 * cell + 14}" text-anchor="middle" font-size="11">{escape(label)}</text>'
        )
    return out


def state_svg(state, *, cell: int = 48) -> str:
    """An SVG picture of one state: board, temples, pieces (students numbered 1-4, masters ``M``), all five cards.

    Blue's cards are drawn above the board turned 180 degrees (as Blue sees
    them across the table), Red's below, the side card to the right; each
    card's border has its stamp colour. The title is `status`.

    Args:
        state: one unbatched `OnitamaState`.
        cell: board square side in pixels.

    Returns:
        The SVG document as a str.

    Raises:
        ValueError: a batched state.
    """
    _check_one(state, "state_svg")
    b = state.board
    hands = np.asarray(b.hands)
    small = cell / 4
    card_w, card_h = 5 * small + 8, 5 * small + 22
    pad = 12
    board_x, board_y = pad, pad + 18 + card_h + pad
    width = int(board_x + 5 * cell + pad + card_w + pad)
    height = int(board_y + 5 * cell + pad + card_h + pad)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="{pad + 10}" text-anchor="middle" font-size="13">{escape(status(state))}</text>',
    ]
    for k in range(2):
        out += _card_svg(int(hands[1, k]), board_x + k * (card_w + pad), pad + 18, small, rotated=True, color=PLAYER_COLORS[1])
        out += _card_svg(int(hands[0, k]), board_x + k * (card_w + pad), board_y + 5 * cell + pad, small, rotated=False,
                         color=PLAYER_COLORS[0])
    mover = int(state.current_player)
    out += _card_svg(int(b.side), board_x + 5 * cell + pad, board_y + 2.5 * cell - card_h / 2, small,
                     rotated=mover == 1, color="#7f8c8d")
    out += _board_svg(np.asarray(b.pieces), board_x, board_y, cell)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def game_svg(states: Sequence, *, cell: int = 24, per_row: int = 8) -> str:
    """An SVG strip of a game: one small board per state, labelled with its turn and the cards used.

    Args:
        states: the game's unbatched states in order.
        cell: board square side in pixels.
        per_row: boards per row.

    Returns:
        The SVG document as a str; the title gives the final `status`.

    Raises:
        ValueError: no states, a batched state, or ``per_row < 1``.
    """
    if not len(states):
        raise ValueError("game_svg needs at least one state")
    if per_row < 1:
        raise ValueError(f"per_row must be >= 1; got {per_row}")
    for s in states:
        _check_one(s, "game_svg")
    pad = 10
    box_w, box_h = 5 * cell + pad, 5 * cell + pad + 18
    rows = (len(states) + per_row - 1) // per_row
    width = int(pad + min(len(states), per_row) * box_w)
    height = int(pad + 22 + rows * box_h)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="{pad + 8}" text-anchor="middle" font-size="13">'
        f"{escape(f'{len(states)} states; ' + status(states[-1]))}</text>",
    ]
    for t, s in enumerate(states):
        r, c = divmod(t, per_row)
        x, y = pad + c * box_w, pad + 22 + r * box_h
        mover = cards.COLOR_NAMES[int(s.current_player)][0].upper()
        out.append(f'<g class="state" data-turn="{int(s.board.turn)}">')
        out += _board_svg(np.asarray(s.board.pieces), x, y, cell, label=f"turn {int(s.board.turn)} ({mover})")
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
