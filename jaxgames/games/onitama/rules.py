"""The pure rules of Onitama: the board, the deal, move generation and one turn.

No rewards, observations or action numbering here (that is
`jaxgames.games.onitama.env`). Every kernel is written for ONE game and is
branch-free, so callers ``jax.vmap`` it.

Source: the official Onitama rulebook (Arcane Wonders, 2014) and Dasgupta &
Chong, "Mastering the game of Onitama with Reinforcement Learning" (NUS USP
group report, 2021), sections 2 and 8.1. Where the report is silent or
contradicts the rulebook we follow the rulebook:

* **No legal move.** The player passes but still exchanges one of their two
  cards (their choice) with the side card; the report's 8.1.2 omits this.
* **Names of the wins.** The report's section 2 text and its figures 2.1/2.2
  swap "Conquer" and "Destroy"; we use the rulebook's Way of the Stone
  (capture the enemy master) and Way of the Stream (own master onto the
  enemy's temple arch). Both at once (figure 2.3) is a win.
* **The side card** is one card (2 + 2 + 1 = 5 in play); the report's 8.1.1
  says "deal the next cards".

Geometry. Squares are ``5 * row + col``, row 0 at the top. Player 0 (Red)
starts on row 4 and moves up; player 1 (Blue) starts on row 0 (Dasgupta &
Chong, figure 2.4). Card patterns are from the owner's view, "forward" = up;
player 1 uses them rotated 180 degrees, and `view_square` maps a square to
``24 - square`` for player 1.

Pieces. ``pieces[p, i]``: ``i`` in 0..3 the students (the report's "pawns"
1-4, left to right on the home row as their owner sees it), ``i = 4`` the
master; `CAPTURED` (-1) once taken.

A turn (rulebook; the report's 8.1.2): the mover picks a card, one of its
moves and a piece, which jumps, capturing an enemy piece on the landing
square. A win (Stone or Stream) ends the game at once with the cards left
where they are (the report checks victory before the card phase); otherwise
the used card becomes the side card and the mover takes the old side card.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgames.games.onitama import cards

SIZE = 5
"""Board side (squares)."""

NUM_SQUARES = SIZE * SIZE
"""25."""

NUM_PIECES = 5
"""Pieces per player: four students then the master."""

MASTER = 4
"""Index of the master in ``pieces[p]``."""

CAPTURED = -1
"""Square of a captured piece."""

NO_WINNER = -1
"""`Board.winner` while nobody has won."""

TEMPLE = np.array([22, 2], np.int32)
"""int32 ``[2]``: the temple arch of each player (where its master starts):
Red (0) on square 22 (row 4, col 2), Blue (1) on square 2 (row 0, col 2)."""

START_PIECES = np.array([[20, 21, 23, 24, 22], [4, 3, 1, 0, 2]], np.int32)
"""int32 ``[2, 5]``: the starting squares of the students (numbered left to
right as their owner sees the board) and the master (last)."""

for _t in (TEMPLE, START_PIECES):
    _t.setflags(write=False)


@struct.dataclass
class Board:
    """The rules state of one game (vmap for a batch).

    Attributes:
        pieces: int32 ``[2, 5]``: square of each player's students 1-4 and
            master (last), `CAPTURED` (-1) once taken.
        hands: int32 ``[2, 2]``: the card ids each player holds, sorted
            ascending (slot 0 is the lower id: Dasgupta & Chong's card order).
        side: int32 ``[]``: the side card (the next one the mover receives).
        player: int32 ``[]``: the player to move (after a win: the winner).
        turn: int32 ``[]``: turns played (moves and passes).
        winner: int32 ``[]``: the winner, or `NO_WINNER` (-1).
    """

    pieces: jax.Array
    hands: jax.Array
    side: jax.Array
    player: jax.Array
    turn: jax.Array
    winner: jax.Array


def _sorted_pair(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.stack([jnp.minimum(a, b), jnp.maximum(a, b)]).astype(jnp.int32)


def deal_board(dealt: jax.Array) -> Board:
    """The starting board for five dealt card ids.

    Args:
        dealt: int ``[5]``: player 0's two cards, player 1's two cards, the side card.

    Returns:
        The set-up board (rulebook "Setup"; Dasgupta & Chong, section 8.1.1): masters on
        their temples, students beside them; the first player is the colour
        of the side card's stamp (`cards.CARD_COLORS`).
    """
    dealt = jnp.asarray(dealt, jnp.int32)
    chex.assert_shape(dealt, (5,))
    side = dealt[4]
    return Board(
        pieces=jnp.asarray(START_PIECES),
        hands=jnp.stack([_sorted_pair(dealt[0], dealt[1]), _sorted_pair(dealt[2], dealt[3])]),
        side=side,
        player=jnp.asarray(cards.CARD_COLORS)[side],
        turn=jnp.int32(0),
        winner=jnp.int32(NO_WINNER),
    )


def shuffle_deal(key: jax.Array, deck: jax.Array) -> jax.Array:
    """Five cards dealt from a shuffled deck (rulebook "Setup": shuffle, deal 2 + 2 + 1).

    Five steps of a Fisher-Yates shuffle (statically unrolled, one-hot
    selects instead of gathers): the five cards are distinct, uniformly
    random and in uniformly random order, as the top five of a shuffled
    deck. Each step picks ``bits % (n - k)``, whose bias is below
    ``n / 2**32``. Not ``jax.random.permutation``: its sort dominated
    auto-reset playouts.

    Args:
        key: PRNG key.
        deck: int32 ``[n]``, ``n >= 5`` distinct card ids (static length).

    Returns:
        int32 ``[5]``: player 0's two cards, player 1's two, the side card.
    """
    deck = jnp.asarray(deck, jnp.int32)
    n = deck.shape[0]
    bits = jax.random.bits(key, (5,), jnp.uint32)
    idx = jnp.arange(n, dtype=jnp.int32)
    dealt = []
    for k in range(5):
        j = k + (bits[k] % jnp.uint32(n - k)).astype(jnp.int32)
        picked = jnp.sum(jnp.where(idx == j, deck, 0), dtype=jnp.int32)
        deck = jnp.where(idx == j, deck[k], deck)  # the card at k takes the picked card's place
        deck = jnp.where(idx == k, picked, deck)
        dealt.append(picked)
    return jnp.stack(dealt)


def _select(pred: jax.Array, rows: jax.Array) -> jax.Array:
    """``rows[1] if pred else rows[0]`` for a two-row array (a select, not a gather, under vmap)."""
    return jnp.where(pred, rows[1], rows[0])


def view_square(square: jax.Array, player: jax.Array) -> jax.Array:
    """A square as ``player`` sees it: itself for player 0, ``24 - square`` for player 1.

    Its own inverse. Works elementwise on int arrays; `CAPTURED` is not
    special-cased (mask it first).
    """
    return jnp.where(player == 0, square, NUM_SQUARES - 1 - square).astype(jnp.int32)


NUM_MOVES = NUM_PIECES * 2 * cards.MAX_MOVES
"""40: the (piece, hand slot, card move) triples, flattened as ``piece * 8 + slot * 4 + move`` (Dasgupta & Chong, section 4.2)."""

_SLOT_OF = np.tile(np.repeat(np.arange(2), cards.MAX_MOVES), NUM_PIECES).astype(np.int32)  # [40]
_SLOT_OF.setflags(write=False)


def _target_table() -> np.ndarray:
    table = np.full((cards.NUM_CARDS, 2, NUM_SQUARES, cards.MAX_MOVES), -1, np.int32)
    for k in range(cards.NUM_CARDS):
        for player in (0, 1):
            turn_sign = 1 if player == 0 else -1  # player 1 uses the card rotated 180 degrees
            for square in range(NUM_SQUARES):
                for m in range(cards.MAX_MOVES):
                    if cards.CARD_MOVE_VALID[k, m]:
                        r = square // SIZE + turn_sign * int(cards.CARD_MOVES[k, m, 0])
                        c = square % SIZE + turn_sign * int(cards.CARD_MOVES[k, m, 1])
                        if 0 <= r < SIZE and 0 <= c < SIZE:
                            table[k, player, square, m] = SIZE * r + c
    table.setflags(write=False)
    return table


TARGETS = _target_table()
"""int32 ``[16, 2, 25, 4]``: the landing square of move ``m`` of card ``k``
for a piece of player ``p`` on ``square`` (patterns rotated 180 degrees for
player 1), or -1 where the move does not exist or leaves the board."""


def move_targets(board: Board) -> tuple[jax.Array, jax.Array]:
    """Every move of the player to move, vectorised over the 40 (piece, card slot, card move) triples.

    Args:
        board: one game.

    Returns:
        ``(legal, target)``: bool ``[40]`` and int32 ``[40]``, indexed
        ``piece * 8 + slot * 4 + move`` (Dasgupta & Chong's section 4.2
        layout; `NUM_MOVES`): whether piece ``piece`` (students 1-4, then the master)
        may jump with move ``move`` of the card in hand slot ``slot``, and the
        absolute landing square (-1 or meaningless where not legal). Legal =
        the piece is on the board, the card has that move, the landing square
        is on the board and holds none of the mover's pieces. A finished game
        still reports its moves (the `Env` masks them).

    One gather from the static `TARGETS` table and a 25-bit occupancy
    bitboard; arrays stay flat because XLA's CPU backend reduces over one
    axis much faster than over ``[5, 2, 4]``.
    """
    chex.assert_shape(board.pieces, (2, NUM_PIECES))
    p = board.player
    own = _select(p == 1, board.pieces)  # [5]
    hand = _select(p == 1, board.hands)  # [2]
    alive = own >= 0
    square = jnp.where(alive, own, 0)
    target = jnp.asarray(TARGETS)[
        hand[None, :, None], p, square[:, None, None], jnp.arange(cards.MAX_MOVES)[None, None, :]
    ].reshape(-1)  # [40]
    one = jnp.uint32(1)
    occupied = jnp.sum(jnp.where(alive, jnp.left_shift(one, square.astype(jnp.uint32)), jnp.uint32(0)), dtype=jnp.uint32)
    onto_own = (jnp.right_shift(occupied, jnp.maximum(target, 0).astype(jnp.uint32)) & one) > 0
    source_alive = jnp.repeat(alive, 2 * cards.MAX_MOVES)  # [40]
    legal = source_alive & (target >= 0) & ~onto_own
    return legal, target


def apply_move(board: Board, slot: jax.Array, piece: jax.Array, target: jax.Array, is_pass: jax.Array) -> Board:
    """One turn of the player to move: a move, or a pass that exchanges a card.

    Branch-free; does not check legality (the `Env` does).

    Args:
        board: one game, not finished.
        slot: int32 ``[]``, 0 or 1: the hand slot of the card used (for a
            pass: the card given up).
        piece: int32 ``[]`` in ``[0, 5)``: the piece that moves (ignored for a pass).
        target: int32 ``[]`` in ``[0, 25)``: its absolute landing square
            (ignored for a pass).
        is_pass: bool ``[]``: the mover has no legal move and passes,
            exchanging the card in ``slot`` with the side card (official
            rule; see the module docstring).

    Returns:
        The board after the turn: pieces moved and captured, ``winner`` set
        on a win (the cards then stay), otherwise the used card becomes the
        side card, the mover takes the old side card, and the turn passes.
        ``turn`` counts every call.
    """
    p = board.player
    q = 1 - p
    moves = ~is_pass
    own = _select(p == 1, board.pieces)
    opp = _select(p == 0, board.pieces)
    moved = jnp.where((jnp.arange(NUM_PIECES) == piece) & moves, target, own)
    captured = (opp == target) & moves
    stone = captured[MASTER]  # Way of the Stone: the enemy master is taken
    stream = moves & (piece == MASTER) & (target == jnp.where(q == 0, TEMPLE[0], TEMPLE[1]))  # Way of the Stream
    win = stone | stream
    opp = jnp.where(captured, CAPTURED, opp)
    pieces = jnp.where(p == 0, jnp.stack([moved, opp]), jnp.stack([opp, moved])).astype(jnp.int32)
    hand = _select(p == 1, board.hands)
    used = _select(slot == 1, hand)
    kept = _select(slot == 0, hand)
    new_hand = _sorted_pair(kept, board.side)
    hands = jnp.where((jnp.arange(2) == p)[:, None] & ~win, new_hand[None, :], board.hands)
    return Board(
        pieces=pieces,
        hands=hands.astype(jnp.int32),
        side=jnp.where(win, board.side, used).astype(jnp.int32),
        player=jnp.where(win, p, q).astype(jnp.int32),
        turn=(board.turn + 1).astype(jnp.int32),
        winner=jnp.where(win, p, board.winner).astype(jnp.int32),
    )


def is_won(board: Board) -> jax.Array:
    """bool ``[]``: someone has won (the only way the rules end a game; the turn limit is the `Env`'s)."""
    return board.winner != NO_WINNER


def in_play(board: Board) -> jax.Array:
    """bool ``[16]``: the five cards of this game (both hands and the side card)."""
    ids = jnp.arange(cards.NUM_CARDS, dtype=jnp.int32)
    held = jnp.concatenate([board.hands.reshape(-1), board.side[None]])
    return jnp.any(ids[:, None] == held[None, :], axis=-1)


def card_rank(board: Board, card: jax.Array) -> jax.Array:
    """int32 ``[...]``: the position of ``card`` among the five cards in play, sorted by id (0..4).

    Dasgupta & Chong's card order (section 4.1): with their deal
    (`cards.PAPER_CARDS`) the ranks of Dragon, Elephant, Goose, Rooster, Monkey are 0..4.
    """
    ids = jnp.arange(cards.NUM_CARDS, dtype=jnp.int32)
    below = in_play(board) & (ids < jnp.asarray(card)[..., None])
    return jnp.sum(below, axis=-1, dtype=jnp.int32)


# ----------------------------------------------------------------------------- host side

PIECE_CHARS = {"r": (0, False), "R": (0, True), "b": (1, False), "B": (1, True)}
"""Characters of `board_from_text`/`render.to_text`: Red (player 0) student
``r`` and master ``R``, Blue (player 1) student ``b`` and master ``B``; ``.`` is empty."""


def pieces_from_text(text: str) -> np.ndarray:
    """The ``pieces`` array of a board drawn as five lines of five characters.

    Row 0 (the first line) is the top, Blue's side. Characters: see
    `PIECE_CHARS`; spaces between characters are ignored. Students are
    numbered in their owner's reading order (the board as the owner sees it,
    far row first, left to right), which numbers the starting students 1-4
    from the owner's left, as `START_PIECES`.

    Args:
        text: the board, e.g. the starting position::

            bbBbb
            .....
            .....
            .....
            rrRrr

    Returns:
        int32 ``[2, 5]`` (numpy), `CAPTURED` for missing students.

    Raises:
        TypeError: ``text`` is not a str.
        ValueError: not 5 lines of 5 squares, an unknown character, a side
            without exactly one master or with more than four students, or a
            master already on the enemy temple (a finished game).
    """
    if not isinstance(text, str):
        raise TypeError(f"a board is a str of five lines; got {type(text).__name__}")
    lines = [ln.replace(" ", "") for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) != SIZE or any(len(ln) != SIZE for ln in lines):
        raise ValueError(f"a board is {SIZE} lines of {SIZE} squares; got {lines!r}")
    students: list[list[int]] = [[], []]
    masters: list[list[int]] = [[], []]
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            if ch == ".":
                continue
            if ch not in PIECE_CHARS:
                raise ValueError(f"unknown square {ch!r} at row {r}, col {c}; use . r R b B")
            player, is_master = PIECE_CHARS[ch]
            (masters if is_master else students)[player].append(SIZE * r + c)
    out = np.full((2, NUM_PIECES), CAPTURED, np.int32)
    for p in (0, 1):
        if len(masters[p]) != 1:
            raise ValueError(f"{cards.COLOR_NAMES[p]} needs exactly one master on the board; got {len(masters[p])}")
        if len(students[p]) > 4:
            raise ValueError(f"{cards.COLOR_NAMES[p]} has {len(students[p])} students; at most 4")
        if masters[p][0] == TEMPLE[1 - p]:
            raise ValueError(f"the {cards.COLOR_NAMES[p]} master already stands on the enemy temple (a finished game)")
        own_view = sorted(students[p], key=lambda s: s if p == 0 else NUM_SQUARES - 1 - s)
        out[p, : len(own_view)] = own_view
        out[p, MASTER] = masters[p][0]
    return out


def board_from_text(text: str, hands, side: str, *, player: int | None = None, turn: int = 0) -> Board:
    """A board from a text picture and card names (hand-set test positions).

    Args:
        text: the pieces, see `pieces_from_text`.
        hands: ``((red card, red card), (blue card, blue card))`` names.
        side: the side card's name.
        player: the player to move, 0 (Red) or 1 (Blue); default: the side
            card's stamp colour (as at the start of a game).
        turn: turns already played, int ``>= 0``.

    Returns:
        An unbatched `Board` (jax arrays), ``winner`` -1.

    Raises:
        TypeError, ValueError: a bad board (`pieces_from_text`), unknown or
            repeated card names, hands that are not two pairs, a bad player or turn.
    """
    pieces = pieces_from_text(text)
    if isinstance(hands, str) or len(hands) != 2:
        raise ValueError(f"hands are two pairs of card names (Red's, Blue's); got {hands!r}")
    names = [*hands[0], *hands[1], side] if all(len(h) == 2 and not isinstance(h, str) for h in hands) else None
    if names is None:
        raise ValueError(f"each hand holds exactly two cards; got {hands!r}")
    ids = cards.card_ids(names, what="hands and side card", count=5)
    if player is None:
        player = int(cards.CARD_COLORS[ids[4]])
    if player not in (0, 1) or isinstance(player, bool):
        raise ValueError(f"player must be 0 (red) or 1 (blue); got {player!r}")
    if isinstance(turn, bool) or not isinstance(turn, (int, np.integer)) or turn < 0:
        raise ValueError(f"turn must be an int >= 0; got {turn!r}")
    return Board(
        pieces=jnp.asarray(pieces),
        hands=jnp.asarray([sorted(ids[0:2]), sorted(ids[2:4])], jnp.int32),
        side=jnp.int32(ids[4]),
        player=jnp.int32(player),
        turn=jnp.int32(turn),
        winner=jnp.int32(NO_WINNER),
    )
