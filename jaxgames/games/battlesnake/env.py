"""The Battlesnake `Env`: the official standard ruleset as a simultaneous-move game.

This module adds the state contract of `jaxgames.core` to `rules`
(deterministic turn), `spawn` (all randomness) and `observe` (encodings).

Actions: one move code per snake, `rules.UP`, `RIGHT`, `DOWN`, `LEFT`
(0..3, clockwise). ``legal_action_mask`` never allows the move back into
the neck, but such a move is *legal by the official rules* (a self
collision), so this Env plays it by the rules (the snake is eliminated,
reward ``loss_reward``; the others play on) rather than by the core's
illegal-action rule: games then replay the engine exactly. Moves of
eliminated snakes are ignored (their mask row is all True, and so is every
row once the game is over). Only an action outside ``0..3`` gets the core's
illegal-action rule (offender -1, game terminated).

Rewards (per step, float32 ``[S]``): ``loss_reward`` (-1) to each snake
eliminated in the step; ``win_reward`` (+1) to the last snake alive when the
game ends; when the last snakes are all eliminated in the same step (a draw)
they get ``draw_reward`` (0) instead. ``terminated`` once at most one snake
is alive (none in a one-snake game); ``truncated`` when ``turn`` reaches
``max_turns`` with the game still on.

Keys: food spawns at random, so the game is ``stochastic`` and ``step``
refuses a missing key. `BattlesnakeParams` (health loss, hazard damage, food
settings, the three rewards) may be traced, so the "learn to walk"
curriculum (health loss 9, then 1) of Siddiqui, Kraak, Roesli, Daxini & Li,
"Multiagent Reinforcement Learning in a Synchronous Strategy Game"
(University of Victoria report, undated), section 3, is a change of params,
not a recompile.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgames.core import SIMULTANEOUS, Env, EnvParams, State
from jaxgames.games.battlesnake import observe, rules, spawn
from jaxgames.games.battlesnake.rules import Board, Params

OBSERVATIONS = ("egocentric", "rotated", "none")


@struct.dataclass
class BattlesnakeState(State):
    """State of one Battlesnake game.

    Attributes (beyond `jaxgames.core.State`):
        current_player: int32 ``[]``, always ``SIMULTANEOUS``.
        observation: float32 ``[S, 2H-1, 2W-1, 3]`` (`observe.observe`), or
            ``[S, 0]`` with ``observation="none"``.
        rewards: float32 ``[S]`` (module docstring).
        legal_action_mask: bool ``[S, 4]``.
        board: `rules.Board`, the engine's board state.
    """

    board: Board = struct.field(default=None)


@struct.dataclass
class BattlesnakeParams(EnvParams):
    """Traced settings of a Battlesnake game (vmap over stacked params to sweep them).

    Attributes:
        rules: `rules.Params`: ``food_spawn_chance`` (percent), ``hazard_damage``
            and ``health_loss`` (health per turn), ``minimum_food``.
        win_reward, loss_reward, draw_reward: float32 ``[]`` (module docstring).
    """

    rules: Params
    win_reward: jax.Array = 1.0
    loss_reward: jax.Array = -1.0
    draw_reward: jax.Array = 0.0


def _int(name, v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int; got {v!r}")
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}]; got {v}")
    return int(v)


class Battlesnake(Env):
    """Battlesnake, standard ruleset (github.com/BattlesnakeOfficial/rules, ``standard.go``).

    Args:
        board_size: width = height, 7..25 (static).
        num_snakes: 1..8 (static).
        max_turns: turn limit (truncation).
        minimum_food: food kept on the board (``minimumFood``, default 1).
        max_minimum_food: the largest ``minimum_food`` that traced params
            may ask for (static: it bounds the food spawned in one turn);
            default ``minimum_food``. A params ``minimum_food`` above it
            spawns at most ``max(max_minimum_food, 1)`` food per turn.
        food_spawn_chance: percent, 0..100 (``foodSpawnChance``, default 15).
        hazard_damage: health per hazard per turn (``damagePerTurn``; the
            standard map has no hazards, so 0 by default).
        health_loss: health lost per turn: 1, or 3, 9, 11, 33, 99 for the
            "learn to walk" variant (Siddiqui et al., section 3).
        win_reward, loss_reward, draw_reward: rewards (module docstring).
        observation: ``"egocentric"`` (Siddiqui et al.'s views), ``"rotated"`` (the
            same, turned so each snake faces up) or ``"none"``.

    Raises:
        TypeError, ValueError: for any bad argument, naming it.
    """

    simultaneous = True
    stochastic = True

    def __init__(
        self,
        *,
        board_size: int = 11,
        num_snakes: int = 4,
        max_turns: int = 1000,
        minimum_food: int = 1,
        max_minimum_food: int | None = None,
        food_spawn_chance: int = 15,
        hazard_damage: int = 0,
        health_loss: int = 1,
        win_reward: float = 1.0,
        loss_reward: float = -1.0,
        draw_reward: float = 0.0,
        observation: str = "egocentric",
    ):
        rules.validate_size(board_size, num_snakes)
        self.board_size = int(board_size)
        self._num_snakes = int(num_snakes)
        self.max_turns = _int("max_turns", max_turns, 1, 2**30)
        _int("minimum_food", minimum_food, 0, board_size * board_size)
        if max_minimum_food is None:
            max_minimum_food = minimum_food
        _int("max_minimum_food", max_minimum_food, minimum_food, board_size * board_size)
        self.food_slots = max(int(max_minimum_food), 1)
        _int("food_spawn_chance", food_spawn_chance, 0, 100)
        _int("hazard_damage", hazard_damage, -100, 100)
        if health_loss not in rules.HEALTH_LOSS_CHOICES or isinstance(health_loss, bool):
            raise ValueError(f"health_loss must be one of {rules.HEALTH_LOSS_CHOICES}; got {health_loss!r}")
        for name, v in (("win_reward", win_reward), ("loss_reward", loss_reward), ("draw_reward", draw_reward)):
            if not np.isfinite(float(v)):
                raise ValueError(f"{name} must be finite; got {v!r}")
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation must be one of {OBSERVATIONS}; got {observation!r}")
        self.params = Params(
            food_spawn_chance=int(food_spawn_chance),
            hazard_damage=int(hazard_damage),
            health_loss=int(health_loss),
            minimum_food=int(minimum_food),
        )
        self.win_reward, self.loss_reward, self.draw_reward = float(win_reward), float(loss_reward), float(draw_reward)
        self.observation = observation

    @property
    def name(self) -> str:
        return "battlesnake"

    @property
    def num_players(self) -> int:
        return self._num_snakes

    @property
    def num_actions(self) -> int:
        return 4

    @property
    def default_params(self) -> BattlesnakeParams:
        """`BattlesnakeParams` with the constructor's settings."""
        return BattlesnakeParams(
            rules=self.params,
            win_reward=self.win_reward,
            loss_reward=self.loss_reward,
            draw_reward=self.draw_reward,
        )

    def without_observation(self) -> "Battlesnake":
        """This game with ``observation="none"`` (same rules, rewards and params): for search, which reads boards only."""
        if self.observation == "none":
            return self
        return Battlesnake(
            board_size=self.board_size, num_snakes=self._num_snakes, max_turns=self.max_turns,
            minimum_food=self.params.minimum_food, max_minimum_food=max(self.food_slots, self.params.minimum_food),
            food_spawn_chance=self.params.food_spawn_chance, hazard_damage=self.params.hazard_damage,
            health_loss=self.params.health_loss, win_reward=self.win_reward, loss_reward=self.loss_reward,
            draw_reward=self.draw_reward, observation="none")

    def strip_observation(self, state: BattlesnakeState) -> BattlesnakeState:
        """``state`` as a state of `without_observation` (observation ``[S, 0]``)."""
        return state.replace(observation=jnp.zeros((self._num_snakes, 0), jnp.float32))

    def state_from_board(self, board: Board) -> BattlesnakeState:
        """The unbatched state of a board in the middle of a game (pure, jittable).

        ``observation`` and ``legal_action_mask`` as `step` computes them
        (``legal_action_mask`` all True for eliminated snakes); ``rewards``
        zero; not terminated or truncated; ``step_count`` the board's turn.

        Args:
            board: one `rules.Board` of this game's size and number of snakes.
        """
        return BattlesnakeState(
            current_player=jnp.int32(SIMULTANEOUS),
            observation=self.observe_board(board),
            rewards=jnp.zeros(board.num_snakes, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            legal_action_mask=rules.legal_moves(board) | ~board.alive[:, None],
            step_count=jnp.asarray(board.turn, jnp.int32),
            board=board,
        )

    def observe(self, state: BattlesnakeState, player: jax.Array) -> jax.Array:
        """Snake ``player``'s row of ``state.observation``: float32 ``[2H-1, 2W-1, 3]`` (or ``[0]``)."""
        return state.observation[player]

    def observe_board(self, board: Board) -> jax.Array:
        """The observations of every snake on a board (see the ``observation`` argument)."""
        if self.observation == "none":
            return jnp.zeros((board.num_snakes, 0), jnp.float32)
        return observe.observe(board, rotated=self.observation == "rotated")

    def _mask(self, board: Board, over: jax.Array) -> jax.Array:
        return rules.legal_moves(board) | ~board.alive[:, None] | over

    def _init(self, key: jax.Array, params: BattlesnakeParams) -> BattlesnakeState:
        board = spawn.init_board(key, self._num_snakes, self.board_size, params.rules)
        over = rules.is_game_over(board)
        return BattlesnakeState(
            current_player=jnp.int32(SIMULTANEOUS),
            observation=self.observe_board(board),
            rewards=jnp.zeros(self._num_snakes, jnp.float32),
            terminated=over,
            truncated=jnp.bool_(False),
            legal_action_mask=self._mask(board, over),
            step_count=jnp.int32(0),
            board=board,
        )

    def _step(
        self, state: BattlesnakeState, action: jax.Array, key: jax.Array, params: BattlesnakeParams
    ) -> BattlesnakeState:
        before = state.board
        board = spawn.step(before, action, key, params.rules, food_slots=self.food_slots)
        newly = before.alive & ~board.alive
        over = rules.is_game_over(board)
        nobody = ~jnp.any(board.alive)
        draw = over & nobody & (self._num_snakes > 1)
        rewards = jnp.where(newly, jnp.where(draw, params.draw_reward, params.loss_reward), 0.0)
        rewards = jnp.where(over & board.alive, params.win_reward, rewards).astype(jnp.float32)
        truncated = ~over & (board.turn >= self.max_turns)
        return state.replace(
            observation=self.observe_board(board),
            rewards=rewards,
            terminated=over,
            truncated=truncated,
            legal_action_mask=self._mask(board, over | truncated),
            board=board,
        )

    def placement_tiebreak(self, state: BattlesnakeState) -> jax.Array:
        """float32 ``[S]``: the turn each snake was eliminated on; snakes alive rank above all (turn + 1).

        The arena ranks snakes by return, then by this: outlasting another
        snake places higher, as on the official leaderboards' game results.
        """
        b = state.board
        return jnp.where(b.alive, b.turn + 1, b.eliminated_on_turn).astype(jnp.float32)

    def game_statistics(self, state: BattlesnakeState) -> dict:
        """``eliminated_cause`` int32 ``[S]`` (codes of `rules.ELIMINATION_CAUSES`), ``eliminated_on_turn`` int32 ``[S]``,
        ``snake_length`` int32 ``[S]`` and ``turn`` int32 ``[]`` of a final state."""
        b = state.board
        return dict(
            eliminated_cause=b.eliminated_cause,
            eliminated_on_turn=b.eliminated_on_turn,
            snake_length=b.length,
            turn=b.turn,
        )

    def _is_legal(self, state: BattlesnakeState, action: jax.Array) -> jax.Array:
        """Every move code 0..3 is legal by the rules (module docstring); only codes outside are not."""
        del state
        return (action >= 0) & (action < 4)

    def __repr__(self) -> str:
        return f"Battlesnake(board_size={self.board_size}, num_snakes={self._num_snakes})"
