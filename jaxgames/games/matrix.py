"""Two-player normal-form (matrix) games.

``payoffs[p, i, j]`` is player ``p``'s payoff when the row player (player 0)
plays action ``i`` and the column player (player 1) plays action ``j``.

The four games of `PAPER_GAMES` are those of El Kaddouri, Rys & Gao, "Multi
Agent Reinforcement Learning With Dots And Boxes" (course report, undated),
section 2.1, with one correction:

* Subsidy game: the report prints the table ``[[-1, 1], [1, -1]]`` (an
  anti-coordination game whose equilibria are the off-diagonal outcomes and
  (1/2, 1/2)), which contradicts its own equilibrium table: pure equilibria at
  (S1, S1) and (S2, S2), a mixed one at about (0.9, 0.9), and (S1, S1) the
  Pareto optimum. The classic subsidy game of the multi-agent learning
  literature, row payoffs ``[[12, 0], [11, 10]]`` and column payoffs the
  transpose, has exactly those equilibria (the mixed one at 10/11 = 0.909),
  so that is the game here.

The other classics (matching pennies, rock-paper-scissors, stag hunt) use
OpenSpiel's payoffs (``matrix_mp``, ``matrix_rps``, ``matrix_sh``), which the
tests compare against ``pyspiel``.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgames.core import SIMULTANEOUS, Env, EnvParams, State


@struct.dataclass
class MatrixGameState(State):
    """State of a one-shot matrix game.

    Attributes (beyond `jaxgames.core.State`):
        current_player: int32 ``[]``, always ``SIMULTANEOUS``.
        observation: float32 ``[2, 2 * num_actions]``: for each player, the
            one-hot of its own last action then of the opponent's (zeros
            before the game is played).
        legal_action_mask: bool ``[2, num_actions]``; row ``p`` masks the
            padding actions of a player with fewer actions.
        last_actions: int32 ``[2]``, the joint action played (-1 before).
    """

    last_actions: jax.Array = struct.field(default=None)


@struct.dataclass
class MatrixGameParams(EnvParams):
    """Traced settings of a matrix game: vmap over stacked payoffs to sweep games of one shape.

    Attributes:
        payoffs: float32 ``[2, n, m]``, ``payoffs[p, i, j]`` (module docstring).
    """

    payoffs: jax.Array


def payoff(payoffs: jax.Array, actions: jax.Array) -> jax.Array:
    """Payoffs of a joint action: the rules layer of every matrix game.

    Args:
        payoffs: float32 ``[2, n, m]``.
        actions: int ``[..., 2]`` (row action, column action).

    Returns:
        float32 ``[..., 2]``, the payoff of each player.
    """
    return jnp.moveaxis(payoffs[:, actions[..., 0], actions[..., 1]], 0, -1)


def validate_payoffs(row_payoffs, col_payoffs=None, *, float32: bool = True) -> np.ndarray:
    """Checks and stacks payoff tables.

    Args:
        row_payoffs: array-like ``[n, m]``, or ``[2, n, m]`` with both players.
        col_payoffs: array-like ``[n, m]``; omitted when ``row_payoffs`` is
            ``[2, n, m]``.
        float32: the payoffs will be used in float32 (the games' and learners'
            dtype): a payoff finite in float64 but not in float32 (``1e39``)
            is refused. `jaxgames.analysis.equilibria` passes False (it
            computes exactly, at any scale).

    Returns:
        float32 numpy ``[2, n, m]`` (float64 when ``float32=False``).

    Raises:
        ValueError: on wrong ranks or shapes, fewer than 1 action, or
            non-finite values (in float32 unless ``float32=False``).
    """
    row = np.asarray(row_payoffs, dtype=np.float64)
    if col_payoffs is None:
        if row.ndim != 3 or row.shape[0] != 2:
            raise ValueError(
                f"payoffs must be [2, n, m] (or give row and column payoffs [n, m]); got shape {row.shape}"
            )
        stacked = row
    else:
        col = np.asarray(col_payoffs, dtype=np.float64)
        if row.ndim != 2 or col.ndim != 2:
            raise ValueError(f"row and column payoffs must be 2-D [n, m]; got shapes {row.shape} and {col.shape}")
        if row.shape != col.shape:
            raise ValueError(f"row payoffs {row.shape} and column payoffs {col.shape} differ in shape")
        stacked = np.stack([row, col])
    if min(stacked.shape[1:]) < 1:
        raise ValueError(f"each player needs at least one action; got payoff shape {stacked.shape}")
    if not np.all(np.isfinite(stacked)):
        raise ValueError(f"payoffs must be finite; got {stacked.tolist()}")
    if not float32:
        return stacked
    with np.errstate(over="ignore"):
        single = stacked.astype(np.float32)
    if not np.all(np.isfinite(single)):
        raise ValueError(
            f"payoffs must be finite in float32 (|payoff| <= {float(np.finfo(np.float32).max):.4g}); "
            f"got a largest magnitude of {float(np.max(np.abs(stacked))):.4g}"
        )
    return single


class MatrixGame(Env):
    """A two-player normal-form game played once per episode (simultaneous moves).

    ``state = env.step(state, jnp.array([row_action, col_action]))`` ends the
    game with ``rewards = payoffs[:, row_action, col_action]``.

    Args:
        row_payoffs: ``[n, m]`` payoffs of the row player, or ``[2, n, m]``.
        col_payoffs: ``[n, m]`` payoffs of the column player.
        name: registry-style name.
        action_names: optional ``(row names, column names)``.

    Raises:
        ValueError: see `validate_payoffs`; action names of the wrong length.
    """

    simultaneous = True

    def __init__(
        self,
        row_payoffs,
        col_payoffs=None,
        *,
        name: str = "matrix_game",
        action_names: tuple[Sequence[str], Sequence[str]] | None = None,
    ):
        self.payoffs_np = validate_payoffs(row_payoffs, col_payoffs)
        n, m = self.payoffs_np.shape[1:]
        if action_names is None:
            action_names = ([str(i) for i in range(n)], [str(j) for j in range(m)])
        action_names = (tuple(action_names[0]), tuple(action_names[1]))
        if len(action_names[0]) != n or len(action_names[1]) != m:
            raise ValueError(f"action_names must have {n} and {m} entries; got {action_names}")
        self.action_names = action_names
        self._name = name

    @property
    def payoffs(self) -> jax.Array:
        """float32 ``[2, n, m]``."""
        return jnp.asarray(self.payoffs_np)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, m)``: the number of actions of the row and of the column player."""
        return tuple(self.payoffs_np.shape[1:])

    @property
    def name(self) -> str:
        return self._name

    @property
    def num_players(self) -> int:
        return 2

    @property
    def num_actions(self) -> int:
        return max(self.shape)

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (2, 2 * self.num_actions)

    def _legal(self) -> jax.Array:
        n, m = self.shape
        a = jnp.arange(self.num_actions)
        return jnp.stack([a < n, a < m])

    @property
    def default_params(self) -> MatrixGameParams:
        """`MatrixGameParams` with the constructor's payoffs."""
        return MatrixGameParams(payoffs=self.payoffs)

    def observe(self, state: MatrixGameState, player: jax.Array) -> jax.Array:
        """float32 ``[2 * num_actions]``: row ``player`` of ``state.observation``."""
        return state.observation[player]

    def _init(self, key: jax.Array, params: MatrixGameParams) -> MatrixGameState:
        del key, params
        return MatrixGameState(
            current_player=jnp.int32(SIMULTANEOUS),
            observation=jnp.zeros(self.observation_shape, jnp.float32),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            legal_action_mask=self._legal(),
            step_count=jnp.int32(0),
            last_actions=jnp.full(2, -1, jnp.int32),
        )

    def _step(self, state: MatrixGameState, action: jax.Array, key: jax.Array, params: MatrixGameParams) -> MatrixGameState:
        del key
        own = jax.nn.one_hot(action, self.num_actions, dtype=jnp.float32)
        obs = jnp.concatenate([own, own[::-1]], axis=-1)
        return state.replace(
            observation=obs,
            rewards=payoff(jnp.asarray(params.payoffs, jnp.float32), action),
            terminated=jnp.bool_(True),
            last_actions=action,
        )

    def __repr__(self) -> str:
        return f"MatrixGame(name={self._name!r}, shape={self.shape})"


def _symmetric(row, name, names) -> MatrixGame:
    row = np.asarray(row, np.float64)
    return MatrixGame(row, row.T, name=name, action_names=(names, names))


def _zero_sum(row, name, names) -> MatrixGame:
    row = np.asarray(row, np.float64)
    return MatrixGame(row, -row, name=name, action_names=(names, names))


def prisoners_dilemma() -> MatrixGame:
    """Prisoner's dilemma, El Kaddouri et al., section 2.1.1: C/D, (C,C) = (-1,-1), (D,D) = (-3,-3)."""
    return _symmetric([[-1, -4], [0, -3]], "prisoners_dilemma", ("C", "D"))


def biased_rock_paper_scissors() -> MatrixGame:
    """Biased rock-paper-scissors, El Kaddouri et al., section 2.1.2 (zero-sum).

    Note: the report states the equilibrium (10/16, 5/16, 1/16) for (R, P, S).
    Solving ``A y = 0`` for its own table gives (1/16, 10/16, 5/16), which
    `jaxgames.analysis.equilibria.nash_equilibria` computes.
    """
    return _zero_sum([[0, -0.25, 0.5], [0.25, 0, -0.05], [-0.5, 0.05, 0]], "biased_rock_paper_scissors", ("R", "P", "S"))


def subsidy_game() -> MatrixGame:
    """Subsidy game (El Kaddouri et al., section 2.1.3, corrected: module docstring): row payoffs
    [[12, 0], [11, 10]], column the transpose."""
    return _symmetric([[12, 0], [11, 10]], "subsidy_game", ("S1", "S2"))


def battle_of_the_sexes() -> MatrixGame:
    """Battle of the sexes, El Kaddouri et al., section 2.1.4: O/M, (O,O) = (3,2), (M,M) = (2,3)."""
    return MatrixGame([[3, 0], [0, 2]], [[2, 0], [0, 3]], name="battle_of_the_sexes", action_names=(("O", "M"), ("O", "M")))


def matching_pennies() -> MatrixGame:
    """Matching pennies (OpenSpiel ``matrix_mp``): the row player wins on a match."""
    return _zero_sum([[1, -1], [-1, 1]], "matching_pennies", ("Heads", "Tails"))


def rock_paper_scissors() -> MatrixGame:
    """Rock-paper-scissors (OpenSpiel ``matrix_rps``), win +1, loss -1."""
    return _zero_sum([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], "rock_paper_scissors", ("Rock", "Paper", "Scissors"))


def stag_hunt() -> MatrixGame:
    """Stag hunt (OpenSpiel ``matrix_sh``): (Stag, Stag) = (2, 2), Hare safe at 1."""
    return _symmetric([[2, 0], [1, 1]], "stag_hunt", ("Stag", "Hare"))


PAPER_GAMES = ("prisoners_dilemma", "biased_rock_paper_scissors", "subsidy_game", "battle_of_the_sexes")
"""The four games of El Kaddouri et al., section 2.1, in its order."""
