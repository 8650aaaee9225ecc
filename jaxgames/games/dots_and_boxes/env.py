"""Dots-and-Boxes under the shared state contract (the RL adapter over `rules`).

Source: OpenSpiel ``dots_and_boxes`` (``open_spiel/games/dots_and_boxes``);
El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And
Boxes" (course report), sections 4-6. Parameters, defaults, action numbering, returns and the
dbn string are OpenSpiel's; the tests replay random games against ``pyspiel``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgames.core import Env, State
from jaxgames.games.dots_and_boxes import dbn as dbn_lib
from jaxgames.games.dots_and_boxes import rules
from jaxgames.games.dots_and_boxes.rules import NO_OWNER, Board

NUM_PLANES = 5
"""Channels of the observation (see `DotsAndBoxes`)."""


@struct.dataclass
class DotsAndBoxesState(State):
    """State of one Dots-and-Boxes game (vmap for a batch).

    Attributes (beyond `jaxgames.core.State`):
        current_player: int32 ``[]``, 0 or 1 (after the end: the last mover,
            or the offender of an illegal action).
        observation: float32 ``[num_rows + 1, num_cols + 1, 5]``, from
            ``current_player``'s point of view (see `DotsAndBoxes`).
        rewards: float32 ``[2]``: zero until the last move, then the returns
            (+1/-1/0, or the box margin with ``utility_margin``); -1 for the
            offender and +1 for the other after an illegal action.
        legal_action_mask: bool ``[num_edges]``: the undrawn edges (all True
            once the game is over: `jaxgames.core`'s terminal-mask convention).
        board: the rules state, `rules.Board`: ``edges`` bool ``[num_edges]``
            (dbn order), ``box_sides`` int8 ``[num_boxes]``, ``box_owner`` int8
            ``[num_boxes]`` (-1 none/unknown), ``scores`` int32 ``[2]``,
            ``player`` int32 ``[]``, ``last_boxes`` int8 ``[]`` (boxes completed
            by the last move: the per-step box count), ``num_drawn`` int32 ``[]``.
    """

    board: Board = struct.field(default=None)


class DotsAndBoxes(Env):
    """Dots-and-Boxes on a ``num_rows`` x ``num_cols`` board of boxes, two players.

    Player 0 moves first. Actions are OpenSpiel's edge ids: horizontal edges
    ``r * num_cols + c`` (``r`` in ``[0, num_rows]``), then vertical edges
    ``(num_rows + 1) * num_cols + r * (num_cols + 1) + c``. A move that
    completes a box keeps the turn; the game ends when all edges are drawn.

    Observation, float32 ``[num_rows + 1, num_cols + 1, 5]`` (channels last,
    indexed by dot ``(i, j)``), from the point of view of the player to move:

    ====  ===================================================================
    ch    meaning (cells outside the board are 0)
    ====  ===================================================================
    0     horizontal edge ``h(i, j)`` (dots ``(i, j)``-``(i, j+1)``) drawn; ``j < num_cols``
    1     vertical edge ``v(i, j)`` (dots ``(i, j)``-``(i+1, j)``) drawn; ``i < num_rows``
    2     box ``(i, j)`` owned by the player to move
    3     box ``(i, j)`` owned by the opponent
    4     number of drawn sides of box ``(i, j)``, 0..4 (not normalised)
    ====  ===================================================================

    Because Dots-and-Boxes is impartial the edge planes do not depend on the
    viewer; only channels 2 and 3 swap, so one network can play both seats.

    Args:
        num_rows: box rows, int in ``[1, 15]`` (OpenSpiel default 2).
        num_cols: box columns, int in ``[1, 15]`` (OpenSpiel default 2).
        utility_margin: final rewards are the box margin instead of +1/-1/0
            (OpenSpiel's parameter of the same name, default False).

    Raises:
        TypeError: a size that is not an int, or a non-bool ``utility_margin``.
        ValueError: a size outside ``[1, 15]``.
    """

    def __init__(self, num_rows: int = 2, num_cols: int = 2, *, utility_margin: bool = False):
        self.num_rows, self.num_cols = rules.validate_size(num_rows, num_cols)
        if not isinstance(utility_margin, (bool, np.bool_)):
            raise TypeError(f"utility_margin must be a bool; got {utility_margin!r}")
        self.utility_margin = bool(utility_margin)
        self.geometry = rules.geometry(self.num_rows, self.num_cols)

    @property
    def name(self) -> str:
        """``"dots_and_boxes"``, the registry name."""
        return "dots_and_boxes"

    @property
    def num_players(self) -> int:
        """2."""
        return 2

    @property
    def num_actions(self) -> int:
        """Number of edges, ``(R + 1) * C + R * (C + 1)`` (OpenSpiel ``NumDistinctActions``)."""
        return self.geometry.num_edges

    @property
    def num_boxes(self) -> int:
        """``num_rows * num_cols``."""
        return self.geometry.num_boxes

    @property
    def observation_shape(self) -> tuple[int, ...]:
        """``(num_rows + 1, num_cols + 1, 5)`` (layout in the class docstring)."""
        return (self.num_rows + 1, self.num_cols + 1, NUM_PLANES)

    # ----------------------------------------------------------------- kernels
    def observe(self, state: DotsAndBoxesState, player: jax.Array) -> jax.Array:
        """The observation of one state for ``player`` (layout in the class docstring).

        Args:
            state: one unbatched state.
            player: int ``[]``, 0 or 1 (may be traced).

        Returns:
            float32 ``[num_rows + 1, num_cols + 1, 5]``; equal to
            ``state.observation`` for ``player == state.current_player``.
        """
        return self.observe_board(state.board, jnp.asarray(player, jnp.int32))

    def observe_board(self, board: Board, player: jax.Array) -> jax.Array:
        """The observation of ``board`` for ``player`` (layout in the class docstring).

        Args:
            board: one game's `rules.Board`.
            player: int32 ``[]``, the viewer.

        Returns:
            float32 ``[num_rows + 1, num_cols + 1, 5]``.
        """
        R, C, nh = self.num_rows, self.num_cols, self.geometry.num_horizontal
        f = jnp.float32
        h = jnp.pad(board.edges[:nh].reshape(R + 1, C).astype(f), ((0, 0), (0, 1)))
        v = jnp.pad(board.edges[nh:].reshape(R, C + 1).astype(f), ((0, 1), (0, 0)))
        owner = board.box_owner.astype(jnp.int32)
        mine = (owner == player).astype(f)
        theirs = ((owner != NO_OWNER) & (owner != player)).astype(f)
        sides = board.box_sides.astype(f)
        boxes = jnp.stack([mine, theirs, sides], axis=-1).reshape(R, C, 3)
        boxes = jnp.pad(boxes, ((0, 1), (0, 1), (0, 0)))
        return jnp.concatenate([h[..., None], v[..., None], boxes], axis=-1)

    def _state_from_board(self, board: Board, rewards: jax.Array, step_count: jax.Array) -> DotsAndBoxesState:
        over = rules.is_over(self.geometry, board)
        return DotsAndBoxesState(
            current_player=board.player.astype(jnp.int32),
            observation=self.observe_board(board, board.player),
            rewards=rewards,
            terminated=over,
            truncated=jnp.bool_(False),
            legal_action_mask=~board.edges | over,
            step_count=step_count,
            board=board,
        )

    def _init(self, key: jax.Array, params) -> DotsAndBoxesState:
        del key, params
        board = rules.empty_board(self.num_rows, self.num_cols)
        return self._state_from_board(board, jnp.zeros(2, jnp.float32), jnp.int32(0))

    def _step(self, state: DotsAndBoxesState, action: jax.Array, key: jax.Array, params) -> DotsAndBoxesState:
        del key, params
        board = rules.apply_edge(self.geometry, state.board, action)
        over = rules.is_over(self.geometry, board)
        rewards = jnp.where(over, rules.outcome(board, utility_margin=self.utility_margin), 0.0)
        return self._state_from_board(board, rewards.astype(jnp.float32), state.step_count)

    def returns(self, state: DotsAndBoxesState) -> jax.Array:
        """float32 ``[..., 2]``: OpenSpiel's ``Returns()`` of a state.

        The final outcome from the scores (+1/-1/0, or the margin with
        ``utility_margin``) once every edge is drawn, else zeros. After an
        illegal action it is the illegal-action rewards (-1 for the offender).
        Works on one state or a batch.
        """
        def one(s):
            over = rules.is_over(self.geometry, s.board)
            final = rules.outcome(s.board, utility_margin=self.utility_margin)
            natural = jnp.where(over, final, 0.0)
            return jnp.where(s.terminated & ~over, s.rewards, natural)

        batch = state.current_player.shape
        fn = one
        for _ in batch:
            fn = jax.vmap(fn)
        return fn(state)

    # ------------------------------------------------------------ host side
    def from_dbn(self, dbn: str, *, current_player: int = 0, scores=None) -> DotsAndBoxesState:
        """A state from a dots-and-boxes notation string (Barker & Korf 2012; El Kaddouri et al., section 4.1).

        OpenSpiel's ``game.new_initial_state(dbn)`` starts such a board with
        player 0 to move and both scores 0; here the player and the scores
        can be given. Boxes already complete get the owner -1 (unknown),
        since the notation does not record who took them.

        Args:
            dbn: ``num_edges`` characters ``'0'``/``'1'`` in action order
                (horizontal edges, then vertical).
            current_player: 0 or 1, the player to move.
            scores: ``(score0, score1)`` non-negative ints summing to the
                number of complete boxes in ``dbn``; default ``(0, 0)`` as
                OpenSpiel.

        Returns:
            An unbatched state, ``step_count`` 0, zero rewards, terminated if
            every edge is drawn.

        Raises:
            TypeError: ``dbn`` not a str.
            ValueError: wrong length, characters other than 0/1, a bad
                player, or scores that are negative or do not sum to the
                number of complete boxes.
        """
        board = dbn_lib.board_from_dbn(self.num_rows, self.num_cols, dbn, current_player=current_player, scores=scores)
        return self._state_from_board(board, jnp.zeros(2, jnp.float32), jnp.int32(0))

    def to_dbn(self, state: DotsAndBoxesState) -> str | list:
        """The dbn string of a state (OpenSpiel ``DbnString``); a nested list for a batch."""
        return dbn_lib.to_dbn(state.board.edges)

    def __repr__(self) -> str:
        return (
            f"DotsAndBoxes(num_rows={self.num_rows}, num_cols={self.num_cols}, "
            f"utility_margin={self.utility_margin})"
        )
