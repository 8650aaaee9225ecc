"""A plain-Python Onitama move generator: the independent oracle of the kernel tests.

Written straight from the official rulebook (Arcane Wonders, 2014) with its
own card table (below, as (right, forward) steps read off the printed
cards), its own board (``(row, col)`` tuples, lists of pieces) and its own
encoding of the two action spaces from the docstring of
`jaxgames.games.onitama.env.Onitama` (no import of the package). Perft counts
and random games from here are compared with the JAX kernel.

Conventions shared with the kernel only through the documented spec:
player 0 = Red at the bottom (row 4) moving toward row 0, player 1 = Blue at
the top; students numbered 1-4 left to right as their owner sees its home row;
a win (enemy master captured, or own master on the enemy's starting master
square) ends the game before the cards move; a player without a move passes
and gives up one card for the side card.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Optional

# name: (stamp colour, [(right, forward), ...]) -- the printed cards, owner's view.
CARDS = {
    "Tiger": ("blue", [(0, 2), (0, -1)]),
    "Dragon": ("red", [(-2, 1), (2, 1), (-1, -1), (1, -1)]),
    "Frog": ("red", [(-2, 0), (-1, 1), (1, -1)]),
    "Rabbit": ("blue", [(2, 0), (1, 1), (-1, -1)]),
    "Crab": ("blue", [(0, 1), (-2, 0), (2, 0)]),
    "Elephant": ("red", [(-1, 1), (1, 1), (-1, 0), (1, 0)]),
    "Goose": ("blue", [(-1, 1), (-1, 0), (1, 0), (1, -1)]),
    "Rooster": ("red", [(1, 1), (-1, 0), (1, 0), (-1, -1)]),
    "Monkey": ("blue", [(-1, 1), (1, 1), (-1, -1), (1, -1)]),
    "Mantis": ("red", [(-1, 1), (1, 1), (0, -1)]),
    "Horse": ("red", [(0, 1), (-1, 0), (0, -1)]),
    "Ox": ("blue", [(0, 1), (1, 0), (0, -1)]),
    "Crane": ("blue", [(0, 1), (-1, -1), (1, -1)]),
    "Boar": ("red", [(0, 1), (-1, 0), (1, 0)]),
    "Eel": ("blue", [(-1, 1), (-1, -1), (1, 0)]),
    "Cobra": ("red", [(1, 1), (1, -1), (-1, 0)]),
}
ORDER = list(CARDS)  # card ids, in the order
MIRROR = {"Frog": "Rabbit", "Rabbit": "Frog", "Goose": "Rooster", "Rooster": "Goose", "Horse": "Ox", "Ox": "Horse",
          "Eel": "Cobra", "Cobra": "Eel"}


def card_moves(name: str) -> list[tuple[int, int]]:
    """The card's moves as (right, forward) in the reading order of its picture (forward-most row first, then left to right)."""
    return sorted(CARDS[name][1], key=lambda m: (-m[1], m[0]))


@dataclasses.dataclass
class Position:
    pieces: list  # [player][0..4] -> (row, col) or None; 0-3 students, 4 master
    hands: list  # [player] -> [name, name]
    side: str
    player: int
    turn: int = 0
    winner: Optional[int] = None

    def copy(self) -> "Position":
        return Position([list(p) for p in self.pieces], [list(h) for h in self.hands], self.side, self.player,
                        self.turn, self.winner)


def start(deal) -> Position:
    """The set-up board for five card names: Red's two, Blue's two, the side card."""
    red = [(4, 0), (4, 1), (4, 3), (4, 4), (4, 2)]
    blue = [(0, 4), (0, 3), (0, 1), (0, 0), (0, 2)]  # numbered from Blue's own left
    first = 0 if CARDS[deal[4]][0] == "red" else 1
    return Position([red, blue], [list(deal[0:2]), list(deal[2:4])], deal[4], first)


def position(text: str, hands, side: str, player: int) -> Position:
    """A position from five lines of ``. r R b B`` (row 0 on top)."""
    rows = [ln.replace(" ", "") for ln in text.strip().splitlines()]
    studs, masters = [[], []], [None, None]
    for r, line in enumerate(rows):
        for c, ch in enumerate(line):
            if ch in "rR":
                (studs[0].append((r, c)) if ch == "r" else masters.__setitem__(0, (r, c)))
            elif ch in "bB":
                (studs[1].append((r, c)) if ch == "b" else masters.__setitem__(1, (r, c)))
    studs[0].sort()  # Red reads the board as printed
    studs[1].sort(reverse=True)  # Blue reads it upside down
    pieces = [studs[p] + [None] * (4 - len(studs[p])) + [masters[p]] for p in (0, 1)]
    return Position(pieces, [list(hands[0]), list(hands[1])], side, player)


def _step(player: int, right: int, forward: int) -> tuple[int, int]:
    """(d_row, d_col) on the board of a card step for ``player``."""
    return (-forward, right) if player == 0 else (forward, -right)


def moves(pos: Position) -> list[tuple]:
    """Legal moves ``("move", card, piece, src, dst)``; if none, ``("pass", card)`` for each card; [] when won."""
    if pos.winner is not None:
        return []
    me = pos.player
    mine = {sq for sq in pos.pieces[me] if sq is not None}
    out = []
    for card in pos.hands[me]:
        for i, sq in enumerate(pos.pieces[me]):
            if sq is None:
                continue
            for right, forward in CARDS[card][1]:
                dr, dc = _step(me, right, forward)
                dst = (sq[0] + dr, sq[1] + dc)
                if 0 <= dst[0] < 5 and 0 <= dst[1] < 5 and dst not in mine:
                    out.append(("move", card, i, sq, dst))
    if not out:
        out = [("pass", card) for card in pos.hands[me]]
    return out


def play(pos: Position, move: tuple) -> Position:
    """The position after a legal move or pass."""
    nxt = pos.copy()
    me, you = pos.player, 1 - pos.player
    card = move[1]
    if move[0] == "move":
        _, _, i, src, dst = move
        nxt.pieces[me][i] = dst
        for j, sq in enumerate(nxt.pieces[you]):
            if sq == dst:
                nxt.pieces[you][j] = None
                if j == 4:
                    nxt.winner = me  # the master is taken
        enemy_temple = (0, 2) if me == 0 else (4, 2)
        if i == 4 and dst == enemy_temple:
            nxt.winner = me  # the master reached the temple
    nxt.turn += 1
    if nxt.winner is not None:
        return nxt  # the game ends before the cards move
    nxt.hands[me] = [c for c in pos.hands[me] if c != card] + [pos.side]
    nxt.side = card
    nxt.player = you
    return nxt


def slots(pos: Position, player: int) -> list[str]:
    """A player's two cards in card-id order (hand slot 0, 1)."""
    return sorted(pos.hands[player], key=ORDER.index)


def _view(sq, player):
    r, c = sq
    return 5 * r + c if player == 0 else 24 - (5 * r + c)


def canonical_action(pos: Position, move: tuple) -> int:
    """The documented canonical id: slot * 625 + from * 25 + to (mover's view); a pass is (slot, 0, 0)."""
    slot = slots(pos, pos.player).index(move[1])
    if move[0] == "pass":
        return slot * 625
    return slot * 625 + _view(move[3], pos.player) * 25 + _view(move[4], pos.player)


def paper_action(pos: Position, move: tuple) -> int:
    """The documented paper id: piece * 8 + slot * 4 + move index; a pass is the master's move 0 (32 + 4 * slot)."""
    slot = slots(pos, pos.player).index(move[1])
    if move[0] == "pass":
        return 32 + 4 * slot
    _, card, i, src, dst = move
    dr, dc = dst[0] - src[0], dst[1] - src[1]
    k = [_step(pos.player, r, f) for r, f in card_moves(card)].index((dr, dc))
    return 8 * i + 4 * slot + k


def perft(pos: Position, depth: int) -> int:
    """Number of move sequences of length ``depth`` (passes count; a won game has none)."""
    if depth == 0:
        return 1
    return sum(perft(play(pos, m), depth - 1) for m in moves(pos))


def perft_divide(pos: Position, depth: int) -> list[int]:
    """``[perft(pos, d) for d in 1..depth]``, one tree walk."""
    counts = [0] * (depth + 1)

    def walk(p, d):
        counts[d] += 1
        if d < depth:
            for m in moves(p):
                walk(play(p, m), d + 1)

    walk(pos, 0)
    return counts[1:]


def random_game(rng: random.Random, deal, max_turns: int = 200) -> int:
    """Plays one uniformly random game; returns the number of turns played."""
    pos = start(deal)
    while pos.winner is None and pos.turn < max_turns:
        pos = play(pos, rng.choice(moves(pos)))
    return pos.turn


# ----------------------------------------------------------------------------- plain minimax (agents' oracle)
def evaluate_position(pos: Position, material_weight: float, distance_weight: float) -> float:
    """The documented evaluation of `jaxgames.agents.onitama.evaluate`, from the player to move's side.

    ``material_weight * (own students - enemy students) + distance_weight *
    (enemy master's Manhattan distance to our starting master square - our
    master's distance to the enemy's)``, rewritten here from the docstring.
    """
    me, you = pos.player, 1 - pos.player
    home = {0: (4, 2), 1: (0, 2)}  # each side's temple arch: where its master starts

    def distance(player):
        (r, c), (tr, tc) = pos.pieces[player][4], home[1 - player]
        return abs(r - tr) + abs(c - tc)

    students = [sum(sq is not None for sq in pos.pieces[p][:4]) for p in (0, 1)]
    return material_weight * (students[me] - students[you]) + distance_weight * (distance(you) - distance(me))


def minimax_value(pos: Position, depth: int, material_weight: float, distance_weight: float, max_turns: int = 200) -> float:
    """Full-width depth-limited negamax (no pruning), from the player to move's side.

    A move that wins is worth +1 to its mover; a position at the turn limit
    without a winner is a draw (0); at depth 0 a position is worth
    `evaluate_position`. Passes are moves like any other.
    """
    best = -float("inf")
    for m in moves(pos):
        nxt = play(pos, m)
        if nxt.winner is not None:
            v = 1.0 if nxt.winner == pos.player else -1.0
        elif nxt.turn >= max_turns:
            v = 0.0
        elif depth == 1:
            v = -evaluate_position(nxt, material_weight, distance_weight)
        else:
            v = -minimax_value(nxt, depth - 1, material_weight, distance_weight, max_turns)
        best = max(best, v)
    return best
