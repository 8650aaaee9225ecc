"""Battlesnake agents: random, random-safe, a flood-fill heuristic, and a greedy Q-function snake.

Every agent is a `jaxgames.agents.base.JaxAgent`: ``policy(env, state, key,
player) -> int32 []`` is a pure, jittable function of ONE unbatched
`jaxgames.games.battlesnake.env.BattlesnakeState` (only ``state.board``, a
`rules.Board`, is read) answering the move code (`rules.UP`, `RIGHT`,
`DOWN`, `LEFT` = 0..3) of snake ``player`` (int32 ``[]``, may be traced).
The arena vmaps it over games and seats; the HTTP server
(`jaxgames.serve.battlesnake`) jits it once per board size. `QAgent` reads
the rotated egocentric view of Siddiqui, Kraak, Roesli, Daxini & Li,
"Multiagent Reinforcement Learning in a Synchronous Strategy Game"
(University of Victoria report, undated).

What a move "kills" (official rules, ``standard.go``; module
`jaxgames.games.battlesnake.rules`): the engine moves every snake, then
checks collisions against each snake's ``body[1:]`` *after* the move. In the
board's body grid a cell holding ``v`` is left after ``v`` moves, so a cell
with ``v >= 2`` is still occupied next turn (the neck, every inner segment,
and a tail doubled by eating on the previous turn) and a cell with ``v = 1``
(a plain tail) is free: its snake moves off it whatever it does, and a
snake that eats this turn doubles its *new* last segment, not the old tail.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxgames import checks
from jaxgames.agents.base import JaxAgent, masked_uniform_choice
from jaxgames.agents.simple import masked_argmax
from jaxgames.games.battlesnake import observe, rules
from jaxgames.games.battlesnake.rules import Board

NOT_REACHED = 10_000
"""`arrival_times` of a cell never reached: larger than any path on a 25x25 board (int32)."""


def move_targets(board: Board, player: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The cells snake ``player``'s four moves lead to.

    Args:
        board: one board.
        player: int32 ``[]``, the snake index.

    Returns:
        ``(cells, on_board)``: int32 ``[4]`` flat cell indices (clipped onto
        the board) and bool ``[4]``, in move-code order.
    """
    size = board.size
    target = board.head[player][None, :] + jnp.asarray(rules.DELTAS)  # [4, 2]
    on = jnp.all((target >= 0) & (target < size), axis=-1)
    cells = jnp.clip(target[:, 0], 0, size - 1) * size + jnp.clip(target[:, 1], 0, size - 1)
    return cells.astype(jnp.int32), on


def vacated_after(board: Board) -> jax.Array:
    """int32 ``[size * size]``: moves until each cell is free of every living snake (0: free now).

    The largest body value over the living snakes (module `rules`: a cell
    holding ``v`` is left after ``v`` moves; eating later adds one move).
    """
    alive = board.alive[:, None]
    return jnp.max(jnp.where(alive, board.body.astype(jnp.int32), 0), axis=0)


def safe_moves(board: Board, player: jax.Array) -> jax.Array:
    """bool ``[4]``: moves of snake ``player`` that do not die this turn by a wall or a body.

    A move is safe when it stays on the board and its cell is not in any
    living snake's ``body[1:]`` after the move: the cell holds at most 1
    (module docstring; the neck holds ``length - 1 >= 2``, so moving back is
    unsafe). Head-to-head collisions are not considered.
    """
    cells, on = move_targets(board, player)
    return on & (vacated_after(board)[cells] <= 1)


def _uniform_pick(key: jax.Array, preferred: jax.Array, fallback: jax.Array) -> jax.Array:
    """int32 ``[]``: uniform among ``preferred`` (bool ``[4]``), else among ``fallback``, else ``UP``."""
    return masked_uniform_choice(key, jnp.where(jnp.any(preferred), preferred, fallback))


class RandomAgent(JaxAgent):
    """Uniform among the moves that do not turn back into the neck (`rules.legal_moves`)."""

    name = "random"

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: a uniform legal move of snake ``player``."""
        del env
        return masked_uniform_choice(key, rules.legal_moves(state.board)[player])


class RandomSafeAgent(JaxAgent):
    """Uniform among the moves that do not die at once by a wall or a body (`safe_moves`).

    When every move dies, uniform among the legal moves (not back into the
    neck). Head-to-head risks are ignored.
    """

    name = "random_safe"

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the move of snake ``player``."""
        del env
        board = state.board
        return _uniform_pick(key, safe_moves(board, player), rules.legal_moves(board)[player])


def _neighbours(grid: jax.Array, size: int) -> jax.Array:
    """``[..., size * size]`` -> ``[4, ..., size * size]``: each cell's neighbour value in each direction (`NOT_REACHED` off the board)."""
    lead = grid.shape[:-1]
    g = grid.reshape(*lead, size, size)
    p = jnp.pad(g, [(0, 0)] * len(lead) + [(1, 1), (1, 1)], constant_values=NOT_REACHED)
    out = [p[..., 1:-1, 2:], p[..., 2:, 1:-1], p[..., 1:-1, :-2], p[..., :-2, 1:-1]]  # y+1, x+1, y-1, x-1
    return jnp.stack([o.reshape(*lead, size * size) for o in out])


def arrival_times(board: Board, start: jax.Array, start_ok: jax.Array, *, iterations: int) -> jax.Array:
    """Earliest move at which a head starting on ``start`` can reach each cell, by a timed flood fill.

    A breadth-first search from each start cell (entered at move 1) where a
    cell may be entered at move ``t`` only once it is vacated
    (`vacated_after` ``<= t``), so bodies recede as the search advances
    (their growth by eating, and the searching snake's own new body, are
    ignored; a snake cannot wait, so a cell entered too early is not
    entered). Each sweep relaxes every cell from its four neighbours; a
    fixed number of sweeps keeps it a plain vector loop under ``jit`` and
    ``vmap``.

    Args:
        board: one board.
        start: int32 ``[K]`` flat start cells.
        start_ok: bool ``[K]``: searches that start at all (others reach nothing).
        iterations: static, number of sweeps; cells further than
            ``iterations + 1`` moves count as unreachable.

    Returns:
        int32 ``[K, size * size]``: arrival move (1 at the start cell), `NOT_REACHED`
        where unreachable.
    """
    size = board.size
    free_at = vacated_after(board)[None, :]  # [1, C]
    cells = jnp.arange(size * size, dtype=jnp.int32)
    dist = jnp.where((cells[None, :] == start[:, None]) & start_ok[:, None], 1, NOT_REACHED).astype(jnp.int32)

    def sweep(_, d):
        t = _neighbours(d, size) + 1  # [4, K, C]
        t = jnp.min(jnp.where(t >= free_at[None], t, NOT_REACHED), axis=0)
        return jnp.minimum(d, t)

    return jax.lax.fori_loop(0, iterations, sweep, dist)


class HeuristicAgent(JaxAgent):
    """A flood-fill snake: safe moves first, then space, then food when it needs to grow.

    Each move is scored, lexicographically by the weights below:

    1. death at once (wall or a body cell still occupied next turn,
       `safe_moves`): excluded unless every move dies;
    2. head-to-head risk: the cell next to the head of a living snake at
       least as long (both could move there, and the shorter or equal snake
       dies), penalised by ``risk_penalty``;
    3. room: the cells reachable from the move's cell by `arrival_times`
       (bodies receding as it goes); fewer than the snake's length (plus
       ``room_margin``) is a trap, penalised by ``trap_penalty``; otherwise
       ``room_weight`` per reachable cell up to a cap of
       ``room_cap_factor * length``;
    4. food: when hungry (health below ``hunger_health``) or not longer than
       every other living snake by ``length_lead``, ``food_weight`` per move
       of the timed path to the nearest food (breadth-first distance, not
       Manhattan);
    5. ties: broken uniformly at random with the key.

    Args (keyword-only; the defaults were tuned in
    ``benchmarks/battlesnake_agents.py``):
        hunger_health: health below which the snake seeks food.
        length_lead: the snake also seeks food until it is this much longer
            than the longest other living snake.
        iterations: flood-fill sweeps (`arrival_times`); default
            ``3 * board_size``.
        risk_penalty, trap_penalty, room_weight, room_margin,
        room_cap_factor, food_weight: score weights (above).
        name: a label.
    """

    def __init__(
        self,
        *,
        hunger_health: int = 40,
        length_lead: int = 2,
        iterations: int | None = None,
        risk_penalty: float = 1000.0,
        trap_penalty: float = 10_000.0,
        room_weight: float = 1.0,
        room_margin: int = 1,
        room_cap_factor: float = 2.0,
        food_weight: float = 5.0,
        name: str = "heuristic",
    ):
        if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1):
            raise ValueError(f"iterations must be a positive int or None; got {iterations!r}")
        hunger_health = checks.integer("hunger_health", hunger_health)
        length_lead = checks.integer("length_lead", length_lead)
        room_margin = checks.integer("room_margin", room_margin)
        # the weights enter float32 scores: finite in float32 (inf or NaN would make every move tie or none win)
        risk_penalty, trap_penalty, room_weight, room_cap_factor, food_weight = (
            checks.real(n, v, dtype="float32") for n, v in (
                ("risk_penalty", risk_penalty), ("trap_penalty", trap_penalty), ("room_weight", room_weight),
                ("room_cap_factor", room_cap_factor), ("food_weight", food_weight)))
        self.hunger_health = hunger_health
        self.length_lead = length_lead
        self.iterations = iterations
        self.risk_penalty = risk_penalty
        self.trap_penalty = trap_penalty
        self.room_weight = room_weight
        self.room_margin = room_margin
        self.room_cap_factor = room_cap_factor
        self.food_weight = food_weight
        self.name = name

    def scores(self, board: Board, player: jax.Array) -> jax.Array:
        """float32 ``[4]``: the score of each move of snake ``player`` (higher is better, no tie noise)."""
        size, n = board.size, board.num_snakes
        cells, on = move_targets(board, player)
        safe = safe_moves(board, player)
        length = board.length[player]
        others = board.alive & (jnp.arange(n) != player)

        # Head-to-head risk: the cell is next to the head of a living snake at least as long.
        x, y = cells // size, cells % size
        hx, hy = board.head[:, 0], board.head[:, 1]
        adjacent = (jnp.abs(x[:, None] - hx[None, :]) + jnp.abs(y[:, None] - hy[None, :])) == 1  # [4, S]
        risky = jnp.any(adjacent & (others & (board.length >= length))[None, :], axis=1)

        # Room and food distance, one timed flood fill per move.
        iterations = self.iterations if self.iterations is not None else 3 * size
        times = arrival_times(board, cells, on & safe, iterations=iterations)  # [4, C]
        reached = times < NOT_REACHED
        room = jnp.sum(reached, axis=1).astype(jnp.float32)
        trapped = room < (length + self.room_margin).astype(jnp.float32)
        cap = self.room_cap_factor * length.astype(jnp.float32)
        food_dist = jnp.min(jnp.where(board.food[None, :] & reached, times, NOT_REACHED), axis=1).astype(jnp.float32)
        food_dist = jnp.minimum(food_dist, 2.0 * size * size)

        longest_other = jnp.max(jnp.where(others, board.length, 0))
        hungry = (board.health[player] < self.hunger_health) | (length < longest_other + self.length_lead)

        score = (
            -self.risk_penalty * risky.astype(jnp.float32)
            - self.trap_penalty * trapped.astype(jnp.float32)
            + self.room_weight * jnp.minimum(room, cap)
            - jnp.where(hungry, self.food_weight, 0.0) * food_dist
        )
        return jnp.where(on & safe, score, -1e9).astype(jnp.float32)

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the best-scored move of snake ``player`` (random among ties).

        Falls back to a uniform legal move when no move is safe.
        """
        del env
        board = state.board
        score = self.scores(board, player)
        key_tie, key_fallback = jax.random.split(key)
        noisy = score + 0.5 * jax.random.uniform(key_tie, (4,))  # < any weight step of 1
        best = jnp.argmax(noisy).astype(jnp.int32)
        fallback = masked_uniform_choice(key_fallback, rules.legal_moves(board)[player])
        return jnp.where(jnp.any(safe_moves(board, player)), best, fallback).astype(jnp.int32)


def greedy_relative_move(q: jax.Array, board: Board, player: jax.Array) -> jax.Array:
    """int32 ``[]``: the absolute move of the relative action (left, straight, right) with the largest Q-value.

    Only moves of `rules.legal_moves` count (a relative action never points
    back into the neck, so all three do once the snake has one), and NaN
    Q-values count as the lowest (`jaxgames.agents.simple.masked_argmax`):
    a network with NaN outputs still plays a legal move.

    Args:
        q: float32 ``[3]``: Q-values of turn left, straight, turn right.
        board: the board.
        player: int32 ``[]``: the snake.
    """
    facing = rules.facing(board)[player]
    moves = observe.relative_to_absolute(jnp.arange(3), facing)
    legal = rules.legal_moves(board)[player][moves]
    return moves[masked_argmax(q, legal)].astype(jnp.int32)


class QAgent(JaxAgent):
    """Greedy on a Q-function of the rotated egocentric view (Siddiqui et al., section 3).

    Args:
        q_function: maps float32 ``[2H-1, 2W-1, 3]`` (`observe.egocentric`
            of the snake, turned by `observe.rotate_to_facing`) to float32
            ``[3]``: turn left, straight, turn right.
        name: a label.
    """

    def __init__(self, q_function: Callable[[jax.Array], jax.Array], *, name: str = "q"):
        self.q_function = q_function
        self.name = name

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the absolute move of the relative action with the largest Q-value (`greedy_relative_move`)."""
        del env, key
        board = state.board
        facing = rules.facing(board)[player]
        view = observe.rotate_to_facing(observe.egocentric(board)[player], facing)
        return greedy_relative_move(self.q_function(view), board, player)
