"""Onitama under the shared state contract (the RL adapter over `rules`).

Source: the official Onitama rulebook (Arcane Wonders, 2014) and Dasgupta &
Chong, "Mastering the game of Onitama with Reinforcement Learning" (NUS USP
group report, 2021): section 8.1 (rules), 4.1 (the 10x5x5 board planes and
the 10-entry card vector), 4.2 (the 40-action space), 4.3 (rewards +1/-1/0).
Deviations from the report, all toward the official rules, are listed in
`rules`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgames.core import Env, EnvParams, State
from jaxgames.games.onitama import cards, rules
from jaxgames.games.onitama.rules import Board
from jaxgames.search import sign

ACTION_SPACES = ("canonical", "paper")
"""The two action spaces (see `Onitama`)."""

NUM_CANONICAL_ACTIONS = 2 * rules.NUM_SQUARES * rules.NUM_SQUARES
"""1250: hand slot (2) x from-square (25) x to-square (25)."""

NUM_PAPER_ACTIONS = rules.NUM_PIECES * 2 * cards.MAX_MOVES
"""40: piece (5) x hand slot (2) x card move (4) (Dasgupta & Chong, section 4.2)."""

CANONICAL_PLANES = 9
"""Channels of the canonical observation (see `Onitama`)."""

PAPER_OBSERVATION_SIZE = 10 * rules.NUM_SQUARES + 10
"""260: Dasgupta & Chong's 10x5x5 board planes, flattened, then their 10-entry card vector."""


def _card_planes() -> np.ndarray:
    planes = np.zeros((cards.NUM_CARDS, rules.SIZE, rules.SIZE), np.float32)
    for k in range(cards.NUM_CARDS):
        for (dr, dc), ok in zip(cards.CARD_MOVES[k], cards.CARD_MOVE_VALID[k]):
            if ok:
                planes[k, 2 + dr, 2 + dc] = 1.0
    planes.setflags(write=False)
    return planes


CARD_PLANES = _card_planes()
"""float32 ``[16, 5, 5]``: each card's picture in its user's view (1 where the
piece at the centre ``(2, 2)`` may land)."""


def canonical_action(slot: int, from_view: int, to_view: int) -> int:
    """The canonical action id ``slot * 625 + from_view * 25 + to_view`` (host side).

    Squares are in the mover's view (`rules.view_square`); ``(slot, 0, 0)`` is
    the pass that gives up the card in ``slot``.
    """
    return int(slot) * rules.NUM_SQUARES**2 + int(from_view) * rules.NUM_SQUARES + int(to_view)


def paper_action(piece: int, slot: int, move: int) -> int:
    """Dasgupta & Chong's action id ``piece * 8 + slot * 4 + move`` (host side; their section 4.2).

    ``paper_action(4, slot, 0)`` (the master's first move) is the pass that
    gives up the card in ``slot`` when the mover has no legal move.
    """
    return int(piece) * 2 * cards.MAX_MOVES + int(slot) * cards.MAX_MOVES + int(move)


@struct.dataclass
class OnitamaParams(EnvParams):
    """Numeric settings that fix no shape (may be traced and vmapped).

    Attributes:
        max_turns: int32 ``[]``: the game is a draw, reported as ``truncated``,
            once this many turns are played without a win (Dasgupta & Chong: 200).
    """

    max_turns: jax.Array


@struct.dataclass
class OnitamaState(State):
    """State of one Onitama game (vmap for a batch).

    Attributes (beyond `jaxgames.core.State`):
        current_player: int32 ``[]``: 0 (Red) or 1 (Blue); after a win, the winner.
        observation: float32 ``[5, 5, 9]`` (canonical) or ``[260]`` (``"paper"``),
            from ``current_player``'s view (see `Onitama`).
        rewards: float32 ``[2]``: +1 for the winner and -1 for the loser on
            the winning step, 0 otherwise (draws too); -1/+1 after an
            illegal action.
        terminated: bool ``[]``: a player won.
        truncated: bool ``[]``: ``max_turns`` turns were played without a win (a draw).
        legal_action_mask: bool ``[1250]`` or ``[40]`` (all True once the game is over).
        board: `rules.Board`: ``pieces`` int32 ``[2, 5]``, ``hands`` int32
            ``[2, 2]``, ``side``, ``player``, ``turn``, ``winner`` int32 ``[]``.
        move_mask: bool ``[40]``: the mover's moves as (piece, slot, move)
            triples, `rules.move_targets` of ``board`` (cached: the step and
            search read it instead of generating moves again; all False = pass).
        move_target: int32 ``[40]``: their landing squares (absolute).
    """

    board: Board = struct.field(default=None)
    move_mask: jax.Array = struct.field(default=None)
    move_target: jax.Array = struct.field(default=None)


class Onitama(Env):
    """Two-player Onitama on the 5x5 board with the 16 base-game cards.

    Player 0 is Red (bottom row), player 1 Blue (top row). Rules, wins and
    the pass: `rules`; cards: `cards`. Rewards (Dasgupta & Chong, section
    4.3): +1 for the winner and -1 for the loser on the winning step, 0
    otherwise; after ``max_turns`` turns without a win the game is a draw,
    reported as ``truncated`` with zero rewards. Illegal actions follow
    `jaxgames.core` (the mover loses).

    **Canonical action space** (``action_space="canonical"``, 1250 actions):
    ``slot * 625 + from * 25 + to`` (`canonical_action`): the hand slot of the
    card used (0 = the lower card id), the square of the piece and its landing
    square, both in the mover's view (``5 * row + col`` on the board as the
    mover sees it, its home row at the bottom: `rules.view_square`). A move
    is legal if some move of that card takes the piece there. The pass that
    gives up the card in ``slot`` is ``(slot, 0, 0)``, i.e. actions 0 and
    625, legal only when no move is (from-square = to-square is never a move).

    Observation, float32 ``[5, 5, 9]``, channels last, from the mover's view:

    ====  =================================================================
    ch    meaning
    ====  =================================================================
    0     the mover's students
    1     the mover's master
    2     the opponent's students
    3     the opponent's master
    4, 5  the mover's cards (hand slots 0, 1): 1 where a piece on the
          centre square (2, 2) would land
    6     the side card (the mover receives it next), same picture
    7, 8  the opponent's cards (its slots 0, 1) as the opponent uses them,
          seen from the mover's side (rotated 180 degrees)
    ====  =================================================================

    **Dasgupta & Chong's action space** (``action_space="paper"``, 40
    actions, their section 4.2): ``piece * 8 + slot * 4 + move`` (`paper_action`): piece 0-3
    the students ("pawns 1 to 4", numbered left to right on the home row as
    the owner sees it, keeping their numbers as they move), 4 the master;
    slot 0/1 the mover's cards in card-id order (their order for their
    deal: `cards.PAPER_CARDS`); move 0-3 the card's moves in the reading
    order of its picture (`cards`; empty slots never legal). The pass that
    gives up the card in ``slot`` is ``paper_action(4, slot, 0)``, i.e.
    actions 32 and 36, legal only when no move is (the report has no pass).

    Observation (their section 4.1), float32 ``[260]``: the 10x5x5 board planes
    (channels first, flattened in C order), from the mover's view: planes
    0-3 the mover's students 1-4, 4 its master, 5-8 the opponent's students
    1-4, 9 its master; then the 10-entry card vector: entries 0-4 are the
    five cards in play sorted by id (their order), 1 where the mover
    holds the card, entries 5-9 the same for the opponent (the side card is
    implied). `split_paper_observation` splits it.

    Args:
        action_space: ``"canonical"`` (default) or ``"paper"``.
        deal: None (default: deal from the shuffled ``deck`` with the key),
            or five card names: Red's two, Blue's two, the side card (then
            ``init`` ignores its key), e.g. ``deal=("Tiger", "Crab", "Frog",
            "Rabbit", "Eel")``.
        deck: the cards to shuffle and deal from (default: all 16); at least
            five distinct names, e.g. `cards.PAPER_CARDS` for Dasgupta &
            Chong's experiments (their five cards in random hands). Not with ``deal``.
        max_turns: turns before a draw (``truncated``), int in ``[1, 2**30]``
            (Dasgupta & Chong: 200). The default of `default_params`; may be traced.

    Raises:
        TypeError: a non-str card name, a deal/deck that is not a sequence,
            a non-int ``max_turns``.
        ValueError: an unknown action space or card name, repeated cards, a
            deal without exactly 5 cards, a deck with fewer than 5, both
            ``deal`` and ``deck``, ``max_turns`` out of range.
    """

    def __init__(
        self,
        *,
        action_space: str = "canonical",
        deal=None,
        deck=None,
        max_turns: int = 200,
    ):
        if action_space not in ACTION_SPACES:
            raise ValueError(f"action_space must be one of {ACTION_SPACES}; got {action_space!r}")
        self.action_space = action_space
        if deal is not None and deck is not None:
            raise ValueError("give either a fixed deal or a deck to deal from, not both")
        self.deal = None if deal is None else cards.card_ids(deal, what="deal", count=5)
        deck = cards.CARD_NAMES if deck is None else deck
        self.deck = cards.card_ids(deck, what="deck", at_least=5)
        if isinstance(max_turns, (bool, np.bool_)) or not isinstance(max_turns, (int, np.integer)):
            raise TypeError(f"max_turns must be an int; got {max_turns!r}")
        if not 1 <= int(max_turns) <= 2**30:
            raise ValueError(f"max_turns must be in [1, 2**30]; got {max_turns}")
        self.max_turns = int(max_turns)

    # ------------------------------------------------------------ static properties
    @property
    def name(self) -> str:
        """``"onitama"``, the registry name."""
        return "onitama"

    @property
    def num_players(self) -> int:
        """2."""
        return 2

    @property
    def num_actions(self) -> int:
        """1250 (canonical) or 40 (``"paper"``)."""
        return NUM_CANONICAL_ACTIONS if self.action_space == "canonical" else NUM_PAPER_ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        """``(5, 5, 9)`` (canonical) or ``(260,)`` (``"paper"``)."""
        if self.action_space == "canonical":
            return (rules.SIZE, rules.SIZE, CANONICAL_PLANES)
        return (PAPER_OBSERVATION_SIZE,)

    @property
    def default_params(self) -> OnitamaParams:
        """`OnitamaParams` with the constructor's ``max_turns``."""
        return OnitamaParams(max_turns=jnp.int32(self.max_turns))

    @property
    def pass_actions(self) -> tuple[int, int]:
        """The two pass actions (give up the card in slot 0, in slot 1)."""
        if self.action_space == "canonical":
            return canonical_action(0, 0, 0), canonical_action(1, 0, 0)
        return paper_action(rules.MASTER, 0, 0), paper_action(rules.MASTER, 1, 0)

    # ------------------------------------------------------------ observation
    def observe(self, state: OnitamaState, player: jax.Array) -> jax.Array:
        """The observation of one state for ``player`` (layouts in the class docstring).

        Args:
            state: one unbatched state.
            player: int ``[]``, 0 or 1 (may be traced).

        Returns:
            float32 ``observation_shape``; equal to ``state.observation``
            for ``player == state.current_player``.
        """
        return self.observe_board(state.board, jnp.asarray(player, jnp.int32))

    def observe_board(self, board: Board, player: jax.Array) -> jax.Array:
        """The observation of ``board`` from ``player``'s view (see `observe`)."""
        own = board.pieces[player]
        opp = board.pieces[1 - player]
        squares = jnp.arange(rules.NUM_SQUARES, dtype=jnp.int32)

        def planes(pos):  # [k] absolute squares -> [k, 25] one-hot in the viewer's frame
            view = rules.view_square(pos, player)
            return ((view[:, None] == squares[None, :]) & (pos[:, None] >= 0)).astype(jnp.float32)

        own_planes, opp_planes = planes(own), planes(opp)  # [5, 25] each
        if self.action_space == "paper":
            board_planes = jnp.concatenate([own_planes, opp_planes]).reshape(-1)  # [10 * 25]
            rank_own = rules.card_rank(board, board.hands[player])  # [2]
            rank_opp = rules.card_rank(board, board.hands[1 - player])
            slots = jnp.arange(5, dtype=jnp.int32)
            vec_own = jnp.any(slots[:, None] == rank_own[None, :], axis=-1)
            vec_opp = jnp.any(slots[:, None] == rank_opp[None, :], axis=-1)
            return jnp.concatenate([board_planes, vec_own.astype(jnp.float32), vec_opp.astype(jnp.float32)])
        size = (rules.SIZE, rules.SIZE)
        pieces = jnp.stack(
            [
                own_planes[:4].sum(0).reshape(size),
                own_planes[4].reshape(size),
                opp_planes[:4].sum(0).reshape(size),
                opp_planes[4].reshape(size),
            ]
        )
        card_planes = jnp.asarray(CARD_PLANES)
        mine = card_planes[board.hands[player]]  # [2, 5, 5]
        side = card_planes[board.side][None]
        theirs = card_planes[board.hands[1 - player]][:, ::-1, ::-1]  # the opponent's use, seen from here
        return jnp.moveaxis(jnp.concatenate([pieces, mine, side, theirs]), 0, -1)

    # ------------------------------------------------------------ actions
    def legal_mask(self, board: Board) -> jax.Array:
        """bool ``[num_actions]``: the legal actions of the player to move (before the terminal convention).

        Computed from `rules.move_targets` (all 40 piece x card x move
        combinations at once); in the canonical space scattered to
        ``slot * 625 + from * 25 + to`` (a scatter of 40 updates, faster on
        XLA's CPU backend than building the ``[2, 25, 25]`` mask
        elementwise). Where no move is legal, the two pass actions
        (`pass_actions`) are.
        """
        legal, target = rules.move_targets(board)  # [40] each
        return self._mask_from_moves(board, legal, target)

    def canonical_ids(self, board: Board, target: jax.Array) -> jax.Array:
        """int32 ``[40]``: the canonical id of each (piece, slot, move) triple (meaningless where not legal)."""
        p = board.player
        n = rules.NUM_SQUARES
        own = jnp.where(p == 1, board.pieces[1], board.pieces[0])
        from_view = jnp.repeat(rules.view_square(own, p), 2 * cards.MAX_MOVES)  # [40]
        return jnp.asarray(rules._SLOT_OF) * n * n + from_view * n + rules.view_square(target, p)

    def _mask_from_moves(self, board: Board, legal: jax.Array, target: jax.Array) -> jax.Array:
        must_pass = ~jnp.any(legal)
        passes = jnp.asarray(self.pass_actions, jnp.int32)
        ids = jnp.arange(self.num_actions, dtype=jnp.int32)
        pass_mask = must_pass & ((ids == passes[0]) | (ids == passes[1]))
        if self.action_space == "paper":
            return legal | pass_mask
        index = jnp.where(legal, self.canonical_ids(board, target), self.num_actions)  # out of range: dropped
        return jnp.zeros(self.num_actions, jnp.bool_).at[index].set(True, mode="drop") | pass_mask

    def decode(self, state: OnitamaState, action: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        """``(slot, piece, target, is_pass)`` of a legal action (int32, int32, int32 absolute square, bool).

        Traceable; the action must be legal in ``state`` (the result is
        meaningless otherwise). Reads the move list cached in the state
        (``move_mask``, ``move_target``) instead of generating moves again.
        """
        board = state.board
        p = board.player
        if self.action_space == "canonical":
            n = rules.NUM_SQUARES
            slot = action // (n * n)
            from_view = (action // n) % n
            to_view = action % n
            source = rules.view_square(from_view, p)
            own = jnp.where(p == 1, board.pieces[1], board.pieces[0])
            piece = jnp.sum(jnp.where(own == source, jnp.arange(rules.NUM_PIECES), 0), dtype=jnp.int32)
            return slot, piece, rules.view_square(to_view, p), from_view == to_view
        piece = action // (2 * cards.MAX_MOVES)
        slot = (action // cards.MAX_MOVES) % 2
        hit = jnp.arange(NUM_PAPER_ACTIONS, dtype=jnp.int32) == action  # one-hot select, not a gather
        target = jnp.sum(jnp.where(hit, state.move_target, 0), dtype=jnp.int32)
        return slot, piece, target, ~jnp.any(state.move_mask)

    def _any_legal_action(self, state: OnitamaState) -> jax.Array:
        """A legal action from the cached 40-move list (the base class's argmax over 1250 entries is slow on CPU)."""
        first = jnp.min(jnp.where(state.move_mask, jnp.arange(rules.NUM_MOVES, dtype=jnp.int32), rules.NUM_MOVES))
        first = jnp.minimum(first, rules.NUM_MOVES - 1)
        hit = jnp.arange(rules.NUM_MOVES, dtype=jnp.int32) == first
        if self.action_space == "paper":
            move = first
        else:
            move = jnp.sum(jnp.where(hit, self.canonical_ids(state.board, state.move_target), 0), dtype=jnp.int32)
        return jnp.where(jnp.any(state.move_mask), move, self.pass_actions[0]).astype(jnp.int32)

    def random_action(self, key: jax.Array, state: OnitamaState) -> jax.Array:
        """A uniformly random legal action of one state, drawn over the cached 40-move list.

        The same distribution as a uniform draw over ``legal_action_mask``
        (legal moves and actions correspond one to one; where the mover must
        pass, each pass action has probability 1/2), but it reads 40 entries
        instead of 1250 in the canonical space.

        Args:
            key: PRNG key.
            state: one unbatched, non-finished state (for a finished one the
                result is some action, and any action is a no-op).

        Returns:
            int32 ``[]``.
        """
        legal = state.move_mask
        count = jnp.sum(legal, dtype=jnp.int32)
        u = jax.random.uniform(key)
        k = jnp.minimum(jnp.floor(u * count).astype(jnp.int32), jnp.maximum(count - 1, 0))
        index = jnp.argmax(jnp.cumsum(legal, dtype=jnp.int32) > k).astype(jnp.int32)  # the k-th legal move
        if self.action_space == "paper":
            move = index
        else:
            hit = jnp.arange(rules.NUM_MOVES, dtype=jnp.int32) == index
            move = jnp.sum(jnp.where(hit, self.canonical_ids(state.board, state.move_target), 0), dtype=jnp.int32)
        passes = jnp.asarray(self.pass_actions, jnp.int32)
        give_up = jnp.where(u < 0.5, passes[0], passes[1])
        return jnp.where(count > 0, move, give_up).astype(jnp.int32)

    # ------------------------------------------------------------ kernels
    def state_from_board(
        self, board: Board, rewards: jax.Array | None = None, step_count=0, params: OnitamaParams | None = None
    ) -> OnitamaState:
        """The contract state of a board (observation, mask, flags), for one game.

        Args:
            board: one game's `rules.Board`.
            rewards: float32 ``[2]`` (default zeros).
            step_count: int ``[]``.
            params: `OnitamaParams` (default `default_params`), for the turn limit.
        """
        params = self.default_params if params is None else params
        won = rules.is_won(board)
        truncated = ~won & (board.turn >= params.max_turns)
        rewards = jnp.zeros(2, jnp.float32) if rewards is None else rewards
        legal, target = rules.move_targets(board)
        return OnitamaState(
            current_player=board.player.astype(jnp.int32),
            observation=self.observe_board(board, board.player),
            rewards=rewards.astype(jnp.float32),
            terminated=won,
            truncated=truncated,
            legal_action_mask=self._mask_from_moves(board, legal, target) | won | truncated,
            step_count=jnp.asarray(step_count, jnp.int32),
            board=board,
            move_mask=legal,
            move_target=target,
        )

    def _init(self, key: jax.Array, params: OnitamaParams) -> OnitamaState:
        if self.deal is not None:
            dealt = jnp.asarray(self.deal, jnp.int32)
        else:
            dealt = rules.shuffle_deal(key, jnp.asarray(self.deck, jnp.int32))
        return self.state_from_board(rules.deal_board(dealt), params=params)

    def _step(self, state: OnitamaState, action: jax.Array, key: jax.Array, params: OnitamaParams) -> OnitamaState:
        del key
        board = state.board
        slot, piece, target, is_pass = self.decode(state, action)
        nxt = rules.apply_move(board, slot, piece, target, is_pass)
        won = rules.is_won(nxt)
        players = jnp.arange(2, dtype=jnp.int32)
        # +1 for the winner, -1 for the other: the zero-sum sign of jaxgames.search.sign.
        rewards = jnp.where(won, sign.value_for(jnp.float32(1.0), nxt.winner, players), 0.0)
        return self.state_from_board(nxt, rewards.astype(jnp.float32), state.step_count, params)

    # ------------------------------------------------------------ host side
    def from_text(self, text: str, hands, side: str, *, player: int | None = None, turn: int = 0) -> OnitamaState:
        """A state from a text board and card names (hand-set positions; see `rules.board_from_text`).

        Args:
            text: five lines of ``. r R b B`` (row 0 = top = Blue's side).
            hands: ``((red, red), (blue, blue))`` card names.
            side: the side card's name.
            player: the player to move (default: the side card's stamp colour).
            turn: turns already played (for the turn limit).

        Returns:
            An unbatched `OnitamaState`, ``step_count`` 0.

        Raises:
            TypeError, ValueError: see `rules.board_from_text`.
        """
        board = rules.board_from_text(text, hands, side, player=player, turn=turn)
        return self.state_from_board(board)

    def dealt_names(self, state: OnitamaState) -> dict:
        """The cards of one unbatched state by name: ``{"red": (a, b), "blue": (c, d), "side": e}``."""
        h = np.asarray(state.board.hands)
        name = lambda k: cards.CARD_NAMES[int(k)]
        return {"red": (name(h[0, 0]), name(h[0, 1])), "blue": (name(h[1, 0]), name(h[1, 1])), "side": name(state.board.side)}

    def __repr__(self) -> str:
        deal = None if self.deal is None else tuple(cards.CARD_NAMES[k] for k in self.deal)
        return f"Onitama(action_space={self.action_space!r}, deal={deal!r}, max_turns={self.max_turns})"


def split_paper_observation(observation: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Dasgupta & Chong's two inputs from an observation ``[..., 260]``: board planes ``[..., 10, 5, 5]`` and cards ``[..., 10]``."""
    board = observation[..., : 10 * rules.NUM_SQUARES]
    return board.reshape(board.shape[:-1] + (10, rules.SIZE, rules.SIZE)), observation[..., 10 * rules.NUM_SQUARES :]
