"""ASCII boards (both ways) and pictures of Battlesnake games.

ASCII format (one row per ``y``, top row ``y = H-1``; cells separated by
spaces or not): ``.`` empty, ``*`` food, ``x`` hazard, ``A``-``H`` the head of
snake 0-7 and ``a``-``h`` its other segments. `from_ascii` orders a body by
walking from the head through the snake's cells, which must give a unique
path (draw scenario boards so it does); ``stack`` appends copies of the tail
(a tail doubled by eating, or the stacked start).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from matplotlib.animation import FuncAnimation, PillowWriter
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from jaxgames.games.battlesnake import rules
from jaxgames.games.battlesnake.rules import Board

HEADS = "ABCDEFGH"
BODIES = "abcdefgh"


def from_ascii(
    text: str,
    *,
    health: Sequence[int] | None = None,
    stack: dict[int, int] | None = None,
    turn: int = 0,
) -> Board:
    """Builds a board of living snakes from an ASCII drawing (module docstring).

    Args:
        text: the drawing, rows top (largest ``y``) first.
        health: per snake (default 100).
        stack: ``{snake: n}``, append ``n`` copies of the tail.
        turn: the turn number.

    Returns:
        A `rules.Board`.

    Raises:
        ValueError: a non-square drawing, an unknown character, a snake
            without a head or with gaps, or an ambiguous body path.
    """
    rows = [r.replace(" ", "") for r in text.strip().splitlines() if r.strip()]
    size = len(rows)
    if any(len(r) != size for r in rows):
        raise ValueError(f"the drawing must be square; got rows of lengths {[len(r) for r in rows]}")
    cells: dict[int, set] = {}
    heads: dict[int, tuple[int, int]] = {}
    food, hazards = [], []
    for r, row in enumerate(rows):
        y = size - 1 - r
        for x, ch in enumerate(row):
            if ch == ".":
                continue
            if ch == "*":
                food.append((x, y))
            elif ch == "x":
                hazards.append((x, y))
            elif ch in HEADS:
                heads[HEADS.index(ch)] = (x, y)
            elif ch in BODIES:
                cells.setdefault(BODIES.index(ch), set()).add((x, y))
            else:
                raise ValueError(f"unknown character {ch!r} at {(x, y)}")
    n = len(heads)
    if sorted(heads) != list(range(n)) or any(s >= n for s in cells):
        raise ValueError(f"snakes must be A, B, ... in order, each with a head; got heads {sorted(heads)}")
    bodies = []
    for s in range(n):
        body, rest = [heads[s]], set(cells.get(s, ()))
        while rest:
            x, y = body[-1]
            nxt = [p for p in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)) if p in rest]
            if len(nxt) != 1:
                raise ValueError(f"snake {s}: body path from {body[-1]} is {'ambiguous' if nxt else 'broken'}")
            body.append(nxt[0])
            rest.discard(nxt[0])
        body += [body[-1]] * (stack or {}).get(s, 0)
        bodies.append(body)
    return rules.board_from_bodies(bodies, size=size, health=health, food=food, hazards=hazards, turn=turn)


def to_ascii(board: Board) -> str:
    """The ASCII drawing of one board (living snakes only), with a status line per snake.

    Args:
        board: one (unbatched) board.

    Returns:
        A multi-line string; `from_ascii` reads its grid part back.
    """
    size = board.size
    grid = [["." for _ in range(size)] for _ in range(size)]
    hz = np.asarray(board.hazards).reshape(size, size)
    food = np.asarray(board.food).reshape(size, size)
    for x in range(size):
        for y in range(size):
            if hz[x, y]:
                grid[size - 1 - y][x] = "x"
            if food[x, y]:
                grid[size - 1 - y][x] = "*"
    alive = np.asarray(board.alive)
    lines = []
    for s in range(board.num_snakes):
        if alive[s]:
            for i, (x, y) in enumerate(rules.body_list(board, s)):
                if 0 <= x < size and 0 <= y < size:
                    grid[size - 1 - y][x] = HEADS[s] if i == 0 else BODIES[s]
        cause = rules.ELIMINATION_CAUSES[int(board.eliminated_cause[s])]
        status = f"eliminated: {cause} on turn {int(board.eliminated_on_turn[s])}" if cause else "alive"
        lines.append(f"{HEADS[s]}: length {int(board.length[s])}, health {int(board.health[s])}, {status}")
    return "\n".join([f"turn {int(board.turn)}"] + [" ".join(r) for r in grid] + lines)


COLORS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")


def draw(board: Board, ax=None):
    """Draws one board with matplotlib (food red dots, snakes coloured, heads larger).

    Args:
        board: one board.
        ax: a matplotlib Axes (default: one of a new pyplot-free
            `matplotlib.figure.Figure`; save it with ``ax.figure.savefig``).

    Returns:
        The Axes.
    """
    if ax is None:
        ax = Figure(figsize=(4, 4)).subplots()
    size = board.size
    ax.set_xlim(-0.5, size - 0.5)
    ax.set_ylim(-0.5, size - 0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(size))
    ax.set_yticks(range(size))
    ax.grid(True, lw=0.3)
    hz = np.argwhere(np.asarray(board.hazards).reshape(size, size) > 0)
    for x, y in hz:
        ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, color="0.85"))
    for x, y in np.argwhere(np.asarray(board.food).reshape(size, size)):
        ax.plot(x, y, "o", color="#d62728", ms=6)
    alive = np.asarray(board.alive)
    for s in range(board.num_snakes):
        if not alive[s]:
            continue
        pts = np.array(rules.body_list(board, s))
        ax.plot(pts[:, 0], pts[:, 1], "-", color=COLORS[s], lw=6, solid_capstyle="round")
        ax.plot(pts[0, 0], pts[0, 1], "s", color=COLORS[s], ms=10)
    ax.set_title(f"turn {int(board.turn)}")
    return ax


def save_game(boards: Sequence[Board], path: str, *, fps: int = 4) -> str:
    """Saves a game (a list of boards) as an animated GIF, or PNG frames if ``path`` has no ``.gif``.

    Args:
        boards: the boards, in order.
        path: ``something.gif``, or a directory for ``frame_0000.png``, ...
        fps: frames per second of the GIF.

    Returns:
        ``path``.

    Raises:
        ValueError: no boards.
    """
    # pyplot-free figures (`Figure.savefig` renders with Agg): the user's backend is left alone.
    if not boards:
        raise ValueError("no boards to draw")
    if not path.endswith(".gif"):
        os.makedirs(path, exist_ok=True)
        for i, b in enumerate(boards):
            ax = draw(b)
            ax.figure.savefig(os.path.join(path, f"frame_{i:04d}.png"), dpi=80)
        return path
    fig = Figure(figsize=(4, 4))
    ax = fig.subplots()

    def frame(i):
        ax.clear()
        draw(boards[i], ax)

    anim = FuncAnimation(fig, frame, frames=len(boards))
    anim.save(path, writer=PillowWriter(fps=fps))
    return path
