"""The 16 move cards of base-game Onitama: names, move patterns, stamp colours.

Source: the official rulebook of Onitama (Shimpei Sato, Arcane Wonders,
2014), whose card pictures we read square by square; Dasgupta & Chong,
"Mastering the game of Onitama with Reinforcement Learning" (NUS USP group
report, 2021), sections 2.1 and 8.1, name the cards and their move counts,
which agree.

Each card is drawn as its 5x5 picture from its **owner's** point of view:
``o`` is the moving piece, ``x`` a square it may jump to, the top row is
"forward" (toward the opponent), left is the owner's left. The other player
uses the same card rotated 180 degrees (`jaxgames.games.onitama.rules`).

**Move order.** A card's moves are numbered in the reading order of its
picture (top row first, left to right in each row). This order defines the
``move`` index of Dasgupta & Chong's 40-action space (their section 4.2
fixes "4 moves in a consistent order" without giving one). Cards with fewer
than 4 moves leave the last slots empty (never legal).

**Card order.** Card ids are the positions in `CARD_NAMES`, the rulebook's
card list. Dasgupta & Chong's five cards (`PAPER_CARDS`, section 4.1) appear
in this order in their card vector, so "sort by card id" gives their order
for their deal and a consistent order for any other.

**Stamp colour.** The side card's stamp colour (Dasgupta & Chong, figure
8.2) decides who moves first: the player of that colour (section 8.1.1).
Player 0 is Red, player 1 is Blue.
"""

from __future__ import annotations

import numpy as np

RED, BLUE = 0, 1
"""Player ids by colour: player 0 is Red (bottom of the board), player 1 Blue (top)."""

COLOR_NAMES = ("red", "blue")
"""Colour name of each player id."""

MAX_MOVES = 4
"""Most moves on one card (Dragon, Elephant, Goose, Rooster, Monkey)."""

# name, stamp colour, picture (owner's view, forward = up).
_CARD_PICTURES: tuple[tuple[str, int, str], ...] = (
    ("Tiger", BLUE, """
        . . x . .
        . . . . .
        . . o . .
        . . x . .
        . . . . .
    """),
    ("Dragon", RED, """
        . . . . .
        x . . . x
        . . o . .
        . x . x .
        . . . . .
    """),
    ("Frog", RED, """
        . . . . .
        . x . . .
        x . o . .
        . . . x .
        . . . . .
    """),
    ("Rabbit", BLUE, """
        . . . . .
        . . . x .
        . . o . x
        . x . . .
        . . . . .
    """),
    ("Crab", BLUE, """
        . . . . .
        . . x . .
        x . o . x
        . . . . .
        . . . . .
    """),
    ("Elephant", RED, """
        . . . . .
        . x . x .
        . x o x .
        . . . . .
        . . . . .
    """),
    ("Goose", BLUE, """
        . . . . .
        . x . . .
        . x o x .
        . . . x .
        . . . . .
    """),
    ("Rooster", RED, """
        . . . . .
        . . . x .
        . x o x .
        . x . . .
        . . . . .
    """),
    ("Monkey", BLUE, """
        . . . . .
        . x . x .
        . . o . .
        . x . x .
        . . . . .
    """),
    ("Mantis", RED, """
        . . . . .
        . x . x .
        . . o . .
        . . x . .
        . . . . .
    """),
    ("Horse", RED, """
        . . . . .
        . . x . .
        . x o . .
        . . x . .
        . . . . .
    """),
    ("Ox", BLUE, """
        . . . . .
        . . x . .
        . . o x .
        . . x . .
        . . . . .
    """),
    ("Crane", BLUE, """
        . . . . .
        . . x . .
        . . o . .
        . x . x .
        . . . . .
    """),
    ("Boar", RED, """
        . . . . .
        . . x . .
        . x o x .
        . . . . .
        . . . . .
    """),
    ("Eel", BLUE, """
        . . . . .
        . x . . .
        . . o x .
        . x . . .
        . . . . .
    """),
    ("Cobra", RED, """
        . . . . .
        . . . x .
        . x o . .
        . . . x .
        . . . . .
    """),
)

CARD_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _CARD_PICTURES)
"""The 16 card names; a card's id is its index here."""

NUM_CARDS = len(CARD_NAMES)
"""16."""

PAPER_CARDS: tuple[str, ...] = ("Dragon", "Elephant", "Goose", "Rooster", "Monkey")
"""The five cards of Dasgupta & Chong's experiments, in their order (section 4.1)."""


def _parse_picture(picture: str) -> list[tuple[int, int]]:
    rows = [line.split() for line in picture.strip().splitlines()]
    assert len(rows) == 5 and all(len(r) == 5 for r in rows) and rows[2][2] == "o", picture
    return [(r - 2, c - 2) for r in range(5) for c in range(5) if rows[r][c] == "x"]


def _tables():
    moves = np.zeros((NUM_CARDS, MAX_MOVES, 2), np.int32)
    valid = np.zeros((NUM_CARDS, MAX_MOVES), bool)
    for k, (_, _, picture) in enumerate(_CARD_PICTURES):
        deltas = _parse_picture(picture)
        moves[k, : len(deltas)] = deltas
        valid[k, : len(deltas)] = True
    for t in (moves, valid):
        t.setflags(write=False)
    return moves, valid


CARD_MOVES, CARD_MOVE_VALID = _tables()
"""int32 ``[16, 4, 2]``: each move as ``(d_row, d_col)`` in the owner's view
(``d_row = -1`` is one square forward, ``d_col = +1`` one to the owner's
right), padded with zeros; bool ``[16, 4]``: which slots hold a move."""

CARD_COLORS = np.array([color for _, color, _ in _CARD_PICTURES], np.int32)
"""int32 ``[16]``: the stamp colour of each card, `RED` (0) or `BLUE` (1) =
the player who starts when the card is the side card."""
CARD_COLORS.setflags(write=False)


def _mirror_table() -> np.ndarray:
    moves, valid = CARD_MOVES, CARD_MOVE_VALID
    sets = [frozenset(map(tuple, moves[k][valid[k]].tolist())) for k in range(NUM_CARDS)]
    out = np.zeros(NUM_CARDS, np.int32)
    for k in range(NUM_CARDS):
        mirrored = frozenset((dr, -dc) for dr, dc in sets[k])
        out[k] = sets.index(mirrored)
    out.setflags(write=False)
    return out


MIRROR_CARD = _mirror_table()
"""int32 ``[16]``: the id of each card's left-right mirror image (itself for
the eight symmetric cards; Frog-Rabbit, Goose-Rooster, Horse-Ox, Eel-Cobra).
Each mirror pair has one red and one blue card."""


def card_id(name: str) -> int:
    """The id of a card from its name (case-insensitive).

    Args:
        name: a card name, e.g. ``"Tiger"`` or ``"tiger"`` (Dasgupta & Chong write them in lower case).

    Returns:
        The index in `CARD_NAMES`, a Python int in ``[0, 16)``.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: no card has that name (the message lists the 16).
    """
    if not isinstance(name, str):
        raise TypeError(f"a card is given by its name (a str); got {name!r} ({type(name).__name__})")
    lowered = [n.lower() for n in CARD_NAMES]
    key = name.strip().lower()
    if key not in lowered:
        raise ValueError(f"unknown Onitama card {name!r}; the cards are {', '.join(CARD_NAMES)}")
    return lowered.index(key)


def card_ids(names, *, what: str, count: int | None = None, at_least: int | None = None) -> tuple[int, ...]:
    """Ids of a sequence of distinct card names, checked at the Python boundary.

    Args:
        names: a sequence (not a str) of card names.
        what: the setting's name, for the messages (``"deal"``, ``"deck"``).
        count: the exact number of cards required, or None.
        at_least: the fewest cards allowed, or None.

    Returns:
        A tuple of card ids, in the order given.

    Raises:
        TypeError: ``names`` is a str or not a sequence, or holds a non-str.
        ValueError: an unknown name, a repeated card, or the wrong number of cards.
    """
    if isinstance(names, str) or not hasattr(names, "__len__"):
        raise TypeError(f"{what} must be a sequence of card names; got {names!r}")
    ids = tuple(card_id(n) for n in names)
    if count is not None and len(ids) != count:
        raise ValueError(f"{what} must name exactly {count} cards; got {len(ids)}: {list(names)}")
    if at_least is not None and len(ids) < at_least:
        raise ValueError(f"{what} must name at least {at_least} cards; got {len(ids)}: {list(names)}")
    seen = set()
    for n, k in zip(names, ids):
        if k in seen:
            raise ValueError(f"{what} repeats the card {CARD_NAMES[k]!r} ({list(names)}); each card exists once")
        seen.add(k)
    return ids
