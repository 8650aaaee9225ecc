"""The deterministic Battlesnake rules: the official ``standard`` ruleset in JAX.

Source: the official engine, github.com/BattlesnakeOfficial/rules, files
``standard.go`` (the pipeline stages), ``board.go`` (bodies, food candidates),
``maps/standard.go`` (food spawning after each turn) and
``cli/commands/play.go`` (the order: ruleset stages, then the map's food
spawn, then ``turn + 1``). Where the docs page and the code disagree, this
module follows the code. The "learn to walk" health losses
(`HEALTH_LOSS_CHOICES`) are from Siddiqui, Kraak, Roesli, Daxini & Li,
"Multiagent Reinforcement Learning in a Synchronous Strategy Game"
(University of Victoria report, undated), section 3.

One turn (`step`) applies, in the engine's order:

1. game over: if at most one snake is alive in the *incoming* board (none
   alive for a one-snake "solo" game, ``GameOverSolo``), nothing changes;
2. movement: every living snake moves at once, ``body = [head + delta] +
   body[:-1]``; ``up`` is ``y + 1``; a move code outside ``0..3`` is an
   *unknown* move and continues in the neck-to-head direction (``up`` while
   the body is stacked), the engine's ``getDefaultMove``;
3. starvation: each living snake loses ``health_loss`` health (1 in the
   standard game);
4. hazard damage: a living snake whose head is on a hazard cell without food
   loses ``hazard_damage`` per hazard on that cell, clamped to ``[0, 100]``,
   and is eliminated (cause ``hazard``) at 0;
5. feeding: a living snake whose head is on food eats it: health 100 and a
   copy of its last segment appended; the food is removed (both snakes of a
   head-to-head on food eat);
6. elimination, recording cause, turn (``turn + 1``) and eliminating snake:
   first out-of-health (``health <= 0``) then wall collisions, snake by snake;
   then, among the survivors of that first phase only and decided for all
   before any is removed, self collision, collision with another snake's
   ``body[1:]``, and head-to-head (lose if ``length <= other length``). The
   eliminating snake of a body or head collision is the longest such snake
   (ties: the lowest index; the engine's ``sort.Slice`` leaves ties unordered);
7. food spawn (randomness, outside this module): the new food cells are an
   input of `step`, produced by `jaxgames.games.battlesnake.spawn`;
8. ``turn + 1``.

Representation (all shapes static). Boards are square, ``size x size``;
grids are flat over the cells, cell ``(x, y)`` (Battlesnake coordinates, ``y``
up) at index ``x * size + y`` (`cell_index`; ``grid.reshape(size, size)[x,
y]``). Flat grids keep every per-cell operation a plain vector loop (XLA's
CPU loops over a trailing ``[11, 11]`` are far slower). A snake's body is
not stored as a list: ``body[s, c]`` is the number of moves until snake
``s`` leaves cell ``c`` (0: not there). With ``n`` the length, the head cell holds ``n``, the neck ``n - 1``, ..., the tail 1 (2 for
a tail doubled by eating); a stacked start cell holds 3. Each move decrements
every cell of a living snake and writes ``n`` at the new head; eating adds 1
to every occupied cell; `body_list` recovers the ordered list exactly.
This makes every stage a few elementwise operations over the board, which is
what vectorises well. ``head`` is stored separately, so that a snake that
died off the board keeps its off-board head, as the engine keeps it.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3
"""Move codes, clockwise, so that turning right is ``+1 (mod 4)``."""

MOVE_NAMES = ("up", "right", "down", "left")
"""API names of the move codes."""

MOVE_UNKNOWN = -1
"""A move code outside ``0..3``: the engine applies its default move."""

DELTAS = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]], dtype=np.int32)
"""int32 ``[4, 2]``: the ``(dx, dy)`` of each move code (``up`` is ``y + 1``)."""

NOT_ELIMINATED = 0
COLLISION = 1
SELF_COLLISION = 2
OUT_OF_HEALTH = 3
HEAD_COLLISION = 4
WALL_COLLISION = 5
HAZARD = 6
ELIMINATION_CAUSES = (
    "",
    "snake-collision",
    "snake-self-collision",
    "out-of-health",
    "head-collision",
    "wall-collision",
    "hazard",
    "unknown",
)
"""The engine's ``EliminatedCause`` strings (``constants.go``), indexed by cause code.

``unknown`` (code 7) is ours: a snake absent from an API request, eliminated
earlier for a reason the request does not say (`jaxgames.games.battlesnake.api`).
"""
UNKNOWN_CAUSE = 7

SNAKE_MAX_HEALTH = 100
SNAKE_START_SIZE = 3
MIN_BOARD_SIZE = 7
MAX_BOARD_SIZE = 25
MAX_SNAKES = 8
HEALTH_LOSS_CHOICES = (1, 3, 9, 11, 33, 99)
"""Allowed health losses per turn: 1 (standard) and the factors of 99 (Siddiqui et al., section 3, "learn to walk")."""


@struct.dataclass
class Board:
    """The board of one game (the engine's ``BoardState``).

    Attributes:
        head: int32 ``[S, 2]``, ``(x, y)`` of each head (off the board for a
            snake eliminated by a wall).
        length: int32 ``[S]``, number of body segments.
        health: int32 ``[S]``, 0..100.
        body: int8 (int16 on boards over 11x11, `body_dtype`) ``[S, size *
            size]``: moves until snake ``s`` leaves the cell (module
            docstring); lengths up to `max_length`. Frozen when the snake is
            eliminated.
        food: bool ``[size * size]``.
        hazards: int8 ``[size * size]``, number of hazards on each cell (at
            most `MAX_HAZARD_STACK`).
        eliminated_cause: int32 ``[S]``, a code of `ELIMINATION_CAUSES`.
        eliminated_on_turn: int32 ``[S]``, 0 while alive.
        eliminated_by: int32 ``[S]``, index of the eliminating snake, -1 if none.
        turn: int32 ``[]``.
    """

    head: jax.Array
    length: jax.Array
    health: jax.Array
    body: jax.Array
    food: jax.Array
    hazards: jax.Array
    eliminated_cause: jax.Array
    eliminated_on_turn: jax.Array
    eliminated_by: jax.Array
    turn: jax.Array

    @property
    def num_snakes(self) -> int:
        """Number of snakes ``S`` (static)."""
        return self.body.shape[-2]

    @property
    def size(self) -> int:
        """Board width = height (static)."""
        return isqrt(self.body.shape[-1])

    @property
    def alive(self) -> jax.Array:
        """bool ``[S]``: not eliminated."""
        return self.eliminated_cause == NOT_ELIMINATED


@struct.dataclass
class Params:
    """Numeric game settings (traced, so they can be vmapped over).

    Attributes:
        food_spawn_chance: int32, percent; the engine spawns one food when
            ``100 - randint(0, 100) < chance`` (so 15 means 14%).
        hazard_damage: int32, health lost per turn per hazard under the head
            (``damagePerTurn``; no hazards in the standard map).
        health_loss: int32, health lost per turn (1; 3, 9, 11, 33, 99 for the
            "learn to walk" variant of Siddiqui et al., section 3).
        minimum_food: int32, food kept on the board (``minimumFood``). Traced
            like the others; the spawn functions of
            `jaxgames.games.battlesnake.spawn` bound the food placed in one
            turn by their static ``food_slots`` argument (by default
            ``max(minimum_food, 1)`` when ``minimum_food`` is concrete).

    Every field may be a Python int, a concrete array or a tracer, so a batch
    of settings is a `Params` of ``[B]`` arrays and ``jax.vmap`` runs it (a
    curriculum or a sweep without recompiling).
    """

    food_spawn_chance: jax.Array = 15
    hazard_damage: jax.Array = 0
    health_loss: jax.Array = 1
    minimum_food: jax.Array = 1


DEFAULT_PARAMS = Params()
"""The standard game's settings (an immutable default argument)."""


def validate_size(size: int, num_snakes: int) -> None:
    """Checks the static board parameters at the Python boundary.

    Args:
        size: board width = height, cells.
        num_snakes: number of snakes.

    Raises:
        TypeError: if either is not an int.
        ValueError: size outside ``[7, 25]`` (the standard map's sizes) or
            ``num_snakes`` outside ``[1, 8]`` (the fixed start points,
            ``board.go: PlaceSnakesFixed``).
    """
    for name, v in (("board_size", size), ("num_snakes", num_snakes)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int; got {v!r}")
    if not MIN_BOARD_SIZE <= size <= MAX_BOARD_SIZE:
        raise ValueError(f"board_size must be in [{MIN_BOARD_SIZE}, {MAX_BOARD_SIZE}]; got {size}")
    if not 1 <= num_snakes <= MAX_SNAKES:
        raise ValueError(f"num_snakes must be in [1, {MAX_SNAKES}]; got {num_snakes}")


MAX_HAZARD_STACK = int(np.iinfo(np.int8).max)
"""The most hazards one cell may hold (127: `Board.hazards` is int8; real maps stack a few)."""


def max_length(size: int) -> int:
    """The longest body a ``size x size`` board holds: ``size * size + 2`` segments.

    No game of the engine gets longer. A snake eats only on a free cell, so
    the number of stacked segments beyond its distinct cells never grows past
    the two of the stacked start (eating adds one segment and one cell, or
    doubles a tail that was not doubled): length <= cells + 2.
    `board_from_bodies` and `jaxgames.games.battlesnake.api.apply_turn`
    reject longer bodies, which `body_dtype` could not hold.
    """
    return size * size + 2


def body_dtype(size: int):
    """The dtype of `Board.body` for a board size: int8 while `max_length` + 1 fits, else int16.

    The extra 1 is the growth of one turn: a turn applied to a board within
    `max_length` never wraps the grid (`api.apply_turn` checks the result).
    Small boards keep int8 because int16 grids slow the kernel.
    """
    return jnp.int8 if max_length(size) + 1 <= np.iinfo(np.int8).max else jnp.int16


def isqrt(n: int) -> int:
    """The side of a square flat grid of ``n`` cells (ValueError if ``n`` is not a square)."""
    r = round(n**0.5)
    if r * r != n:
        raise ValueError(f"a flat grid of {n} cells is not square")
    return r


def cell_index(size: int, x, y):
    """The flat index of cell ``(x, y)``: ``x * size + y``."""
    return x * size + y


def cell_coords(size: int) -> tuple[jax.Array, jax.Array]:
    """int32 ``[size * size]`` each: the ``x`` and ``y`` of every flat cell."""
    c = np.arange(size * size, dtype=np.int32)
    return jnp.asarray(c // size), jnp.asarray(c % size)


def _at(grid: jax.Array, xy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``grid[..., cell(x, y)]`` at points ``xy`` ``[..., K, 2]`` and whether each is on the board."""
    size = isqrt(grid.shape[-1])
    on = jnp.all((xy >= 0) & (xy < size), axis=-1)
    flat = jnp.clip(xy[..., 0], 0, size - 1) * size + jnp.clip(xy[..., 1], 0, size - 1)
    return jnp.take_along_axis(grid, flat, axis=-1), on


def materialize(values: tuple) -> tuple:
    """The same int32 arrays, each passed through a trivial max-reduction (a speed device).

    A reduction is computed once and stored; XLA's CPU backend would
    otherwise fuse the chain of cheap operations producing a per-snake value
    into every per-cell loop that broadcasts it, and redo it for each cell.
    ``jax.lax.optimization_barrier`` does not prevent that fusion on CPU.

    Args:
        values: tuple of int32 arrays.

    Returns:
        A tuple of equal arrays.
    """
    low = jnp.iinfo(jnp.int32).min
    return tuple(jnp.max(jnp.stack([v, jnp.full_like(v, low)]), axis=0) for v in values)


def neck_move(board: Board) -> jax.Array:
    """The move code that would put each head onto its neck, -1 while stacked.

    Args:
        board: one board.

    Returns:
        int32 ``[S]``. The neck is ``body[1]``: the neighbour of the head
        holding ``length - 1`` in the snake's own grid.
    """
    neighbours = board.head[:, None, :] + jnp.asarray(DELTAS)[None]  # [S, 4, 2]
    value, on = _at(board.body, neighbours)  # [S, 4]
    is_neck = on & (value.astype(jnp.int32) == (board.length - 1)[:, None]) & (board.length >= 2)[:, None]
    (neck,) = materialize((jnp.where(jnp.any(is_neck, axis=1), jnp.argmax(is_neck, axis=1), -1).astype(jnp.int32),))
    return neck


def facing(board: Board) -> jax.Array:
    """int32 ``[S]``: the neck-to-head direction, ``UP`` while stacked (``getDefaultMove``)."""
    neck = neck_move(board)
    return jnp.where(neck >= 0, (neck + 2) % 4, UP).astype(jnp.int32)


def legal_moves(board: Board) -> jax.Array:
    """bool ``[S, 4]``: every move except back into the neck (all four while stacked).

    Moving into the neck is allowed by the rules (it is a self collision);
    this mask is what a sensible policy samples from.
    """
    return jnp.arange(4)[None, :] != neck_move(board)[:, None]


def certain_deaths(board: Board, params: Params = DEFAULT_PARAMS) -> jax.Array:
    """bool ``[S, 4]``: the moves that eliminate snake ``s`` whatever the other snakes move.

    Read off `resolve` (the official ``standard.go`` stages): move ``m`` of a
    living snake ``s`` in a game not yet over is certain death when its new
    head cell

    * is off the board (wall collision), or
    * holds no food and the health left after the health loss and that
      cell's hazard damage is <= 0 (out of health; hazard), or
    * lies in ``s``'s own ``body[:-1]`` before the move (self collision), or
    * lies in ``body[:-1]`` of another living snake ``j`` that certainly
      survives the first elimination phase: ``j``'s health after the health
      loss and the largest hazard damage on the board stays > 0 (it cannot
      starve) and its head is at least one cell from every edge (no move of
      ``j`` leaves the board). A body of a snake that might leave the board
      or starve this turn does not count: its owner would be removed before
      the collision check.

    Head-to-head collisions are never certain (they depend on the other's
    move). The set is sound, not complete: a move it does not flag can
    still be deadly for every reply (e.g. into the body of a snake on the
    edge that would survive anyway).

    Args:
        board: one board (vmap for a batch).
        params: the game's settings (health loss and hazard damage used).

    Returns:
        bool ``[S, 4]`` over the move codes `UP`, `RIGHT`, `DOWN`, `LEFT`;
        all False for an eliminated snake or a board whose game is over.
    """
    size = board.size
    active = board.alive & ~is_game_over(board)  # [S]
    n = board.num_snakes
    cells = (board.head[:, None, :] + jnp.asarray(DELTAS)[None]).reshape(1, n * 4, 2)  # snake-major
    occupied, on = _at(board.body, jnp.broadcast_to(cells, (n, n * 4, 2)))
    occupied, on = occupied.reshape(n, n, 4), on[0].reshape(n, 4)  # [j, s, 4], [s, 4]
    hz, _ = _at(board.hazards[None], cells)
    food, _ = _at(board.food[None], cells)
    health = board.health[:, None] - params.health_loss - params.hazard_damage * hz.reshape(n, 4).astype(jnp.int32)
    starves = ~food.reshape(n, 4) & (health <= 0)
    worst = board.health - params.health_loss - params.hazard_damage * jnp.max(board.hazards).astype(jnp.int32)
    inner = jnp.all((board.head >= 1) & (board.head <= size - 2), axis=-1)
    survives = board.alive & (worst > 0) & inner  # [j]: certainly in the collision phase
    counts = jnp.eye(n, dtype=bool) | survives[:, None]  # [j, s]: j's body kills s for sure
    hit = jnp.any((occupied >= 2) & counts[:, :, None], axis=0)  # [s, 4]
    return active[:, None] & (~on | starves | hit)


def is_game_over(board: Board) -> jax.Array:
    """bool ``[]``: at most one snake alive (none, for a one-snake game).

    Source: ``standard.go: GameOverStandard``, ``solo.go: GameOverSolo``.
    """
    n = jnp.sum(board.alive)
    return n == 0 if board.num_snakes == 1 else n <= 1


class Resolved(NamedTuple):
    """A board after stages 2-6 of a turn (food not yet spawned, turn not advanced)."""

    board: Board
    game_over: jax.Array  # bool []: the incoming board was already over (stage 1)


def resolve(board: Board, moves: jax.Array, params: Params = DEFAULT_PARAMS) -> Resolved:
    """Stages 1-6 of a turn: game over, move, starve, hazards, feed, eliminate.

    Args:
        board: one board (vmap for a batch).
        moves: int32 ``[S]`` move codes (`UP`, `RIGHT`, `DOWN`, `LEFT`; any
            other value is an unknown move, see module docstring). Moves of
            eliminated snakes are ignored.
        params: numeric settings.

    Returns:
        `Resolved`; if the incoming board is over, its board is the incoming one.
    """
    # Speed: every decision is taken on per-snake scalars gathered from the
    # incoming grids; the body grid is then rewritten in one elementwise pass.
    size, n_snakes = board.size, board.num_snakes
    moves = jnp.asarray(moves, jnp.int32)
    over = is_game_over(board)
    active = board.alive & ~over  # snakes that move this turn
    turn_next = board.turn + 1

    # 2. Movement.
    move = jnp.where((moves >= 0) & (moves < 4), moves, facing(board))
    new_head = jnp.where(active[:, None], board.head + jnp.asarray(DELTAS)[move], board.head)

    # 3. Starvation.
    health = jnp.where(active, board.health - params.health_loss, board.health)

    # 4. Hazard damage (a hazard cell with food does no damage).
    hz, on_board = _at(board.hazards[None], new_head[None])
    hz, on_board = hz[0].astype(jnp.int32), on_board[0]
    food_at, _ = _at(board.food[None], new_head[None])
    food_at = food_at[0] & on_board
    hit = active & on_board & (hz > 0) & ~food_at
    health = jnp.where(hit, jnp.clip(health - params.hazard_damage * hz, 0, SNAKE_MAX_HEALTH), health)
    by_hazard = hit & (health <= 0)
    alive1 = active & ~by_hazard

    # 5. Feeding.
    eats = alive1 & food_at
    health = jnp.where(eats, SNAKE_MAX_HEALTH, health)
    length = board.length + eats.astype(jnp.int32)

    # 6. Elimination, phase 1: out of health, then out of bounds.
    starved = alive1 & (health <= 0)
    walled = alive1 & ~starved & ~on_board
    alive2 = alive1 & ~starved & ~walled

    # Phase 2 among alive2, all decided before any is applied. hits[i, j]:
    # head i lies in body[1:] of snake j after the move, i.e. on a cell that
    # j held with a value >= 2 before it (old body[:-1]); eating only doubles
    # the last segment, so it changes no cell's occupancy.
    old, _ = _at(board.body, jnp.broadcast_to(new_head[None], (n_snakes, n_snakes, 2)))  # [j, i]
    hits = (old >= 2).T & on_board[:, None]  # [i, j]
    eye = jnp.eye(n_snakes, dtype=bool)
    self_hit = alive2 & jnp.diagonal(hits)
    others = alive2[None, :] & ~eye
    body_hit = hits & others  # [i, j]
    same_head = jnp.all(new_head[:, None, :] == new_head[None, :, :], axis=-1)
    head_lost = same_head & others & (length[:, None] <= length[None, :])
    # Attribution: the longest eliminating snake, lowest index on ties.
    rank = length[None, :] * (n_snakes + 1) - jnp.arange(n_snakes)[None, :]

    def _by(m):
        return jnp.argmax(jnp.where(m, rank, -1), axis=1).astype(jnp.int32)

    by_body = alive2 & ~self_hit & jnp.any(body_hit, axis=1)
    by_head = alive2 & ~self_hit & ~by_body & jnp.any(head_lost, axis=1)

    cause = board.eliminated_cause
    cause = jnp.where(by_hazard, HAZARD, cause)
    cause = jnp.where(starved, OUT_OF_HEALTH, cause)
    cause = jnp.where(walled, WALL_COLLISION, cause)
    cause = jnp.where(self_hit, SELF_COLLISION, cause)
    cause = jnp.where(by_body, COLLISION, cause)
    cause = jnp.where(by_head, HEAD_COLLISION, cause).astype(jnp.int32)
    newly = active & (cause != NOT_ELIMINATED)
    by = jnp.where(self_hit, jnp.arange(n_snakes), board.eliminated_by)
    by = jnp.where(by_body, _by(body_hit), by)
    by = jnp.where(by_head, _by(head_lost), by).astype(jnp.int32)

    # The body grids, one elementwise pass: moving snakes count down, eaters
    # add 1 to every cell they keep, and the new head gets the new length
    # unless the snake already holds that cell (a self collision: the frozen
    # body then stays exact).
    dt = board.body.dtype
    # The per-snake inputs of the per-cell pass: see `materialize`.
    head_flat = jnp.where(active & on_board, new_head[:, 0] * size + new_head[:, 1], -1)
    head_flat, grow, value, keep = materialize(
        (head_flat, eats.astype(jnp.int32), length, (~active).astype(jnp.int32))
    )
    head_cell = jnp.arange(size * size, dtype=jnp.int32)[None] == head_flat[:, None]  # [S, cells]
    dec = jnp.maximum(board.body - 1, 0).astype(dt)
    grown = dec + ((dec > 0) & (grow[:, None] > 0)).astype(dt)
    moved = jnp.where(head_cell & (dec == 0), value[:, None].astype(dt), grown)
    body = jnp.where(keep[:, None] > 0, board.body, moved)
    eaten = jnp.any(head_cell & (grow[:, None] > 0), axis=0)

    out = board.replace(
        head=new_head.astype(jnp.int32),
        length=length,
        health=health.astype(jnp.int32),
        body=body,
        food=board.food & ~eaten,
        eliminated_cause=cause,
        eliminated_on_turn=jnp.where(newly, turn_next, board.eliminated_on_turn).astype(jnp.int32),
        eliminated_by=by,
    )
    return Resolved(out, over)


def finish_turn(resolved: Resolved, new_food: jax.Array) -> Board:
    """Stages 7-8: add the spawned food and advance the turn (nothing if the game was over).

    Args:
        resolved: the output of `resolve`.
        new_food: bool ``[size * size]``, the cells where the engine spawned
            food this turn (see `jaxgames.games.battlesnake.spawn`).

    Returns:
        The next board.
    """
    b, over = resolved
    return b.replace(food=b.food | (jnp.asarray(new_food, bool) & ~over), turn=b.turn + (~over).astype(jnp.int32))


def step(board: Board, moves: jax.Array, new_food: jax.Array, params: Params = DEFAULT_PARAMS) -> Board:
    """One full turn of the standard ruleset, with the spawned food given.

    Deterministic: replaying the moves and spawned food of a recorded game
    reproduces it exactly.

    Args:
        board: one board (vmap for a batch).
        moves: int32 ``[S]`` move codes (unknown codes: the default move).
        new_food: bool ``[size * size]``, food spawned after the eliminations.
        params: numeric settings.

    Returns:
        The next board (the same board if it was already over).
    """
    return finish_turn(resolve(board, moves, params), new_food)


def board_from_bodies(
    bodies,
    *,
    size: int,
    health=None,
    food=(),
    hazards=(),
    turn: int = 0,
) -> Board:
    """Builds a board of living snakes from body lists (head first), at the Python boundary.

    Args:
        bodies: sequence of ``S`` bodies, each a sequence of ``(x, y)``, head first.
        size: board width = height.
        health: sequence of ``S`` ints (default 100 each).
        food: sequence of ``(x, y)``.
        hazards: sequence of ``(x, y)`` (repeats stack).
        turn: the turn number.

    Returns:
        A `Board` of jax arrays (built in numpy and moved to the device in one
        `jax.device_put`: this is on the server's per-request path).

    Raises:
        ValueError: a point off the board, an empty or non-contiguous body
            (consecutive segments must be equal or adjacent), a body that
            overlaps itself other than by stacking at the tail or start, a
            body longer than `max_length` (``size * size + 2``), more than
            `MAX_HAZARD_STACK` hazards on one cell, or health outside
            ``[0, 100]``.
    """
    return jax.device_put(board_numpy(bodies, size=size, health=health, food=food, hazards=hazards, turn=turn))


def board_numpy(bodies, *, size: int, health=None, food=(), hazards=(), turn: int = 0) -> Board:
    """`board_from_bodies` with numpy leaves (same checks and errors), for callers that edit it before `jax.device_put`."""
    validate_size(size, max(len(bodies), 1))
    n = len(bodies)
    health = [SNAKE_MAX_HEALTH] * n if health is None else list(health)
    if len(health) != n:
        raise ValueError(f"expected {n} health values; got {len(health)}")

    def _pt(p, what):
        try:
            x, y = int(p[0]), int(p[1])
        except (TypeError, ValueError, IndexError) as e:
            raise ValueError(f"{what}: bad point {p!r}") from e
        if not (0 <= x < size and 0 <= y < size):
            raise ValueError(f"{what}: point {(x, y)} is off the {size}x{size} board")
        return x, y

    body = np.zeros((n, size, size), np.int32)
    heads = np.zeros((n, 2), np.int32)
    for s, b in enumerate(bodies):
        pts = [_pt(p, f"snake {s} body") for p in b]
        if not pts:
            raise ValueError(f"snake {s} has an empty body")
        if len(pts) > max_length(size):
            raise ValueError(
                f"snake {s} body has {len(pts)} segments; a {size}x{size} board holds at most "
                f"{max_length(size)} (its {size * size} cells plus 2 stacked segments)"
            )
        for a, c in itertools.pairwise(pts):
            if abs(a[0] - c[0]) + abs(a[1] - c[1]) > 1:
                raise ValueError(f"snake {s} body is not contiguous between {a} and {c}")
        seen = set()
        for i, p in enumerate(pts):
            if p in seen and pts[i - 1] != p:
                raise ValueError(f"snake {s} body crosses itself at {p}")
            seen.add(p)
        L = len(pts)
        for i in range(L - 1, -1, -1):  # earliest index wins: value = L - first index
            body[s, pts[i][0], pts[i][1]] = L - i
        if not 0 <= int(health[s]) <= SNAKE_MAX_HEALTH:
            raise ValueError(f"snake {s} health {health[s]} is outside [0, {SNAKE_MAX_HEALTH}]")
        heads[s] = pts[0]
    food_grid = np.zeros((size, size), bool)
    for p in food:
        x, y = _pt(p, "food")
        food_grid[x, y] = True
    hz = np.zeros((size, size), np.int32)
    for p in hazards:
        x, y = _pt(p, "hazard")
        hz[x, y] += 1
    if hz.max(initial=0) > MAX_HAZARD_STACK:
        x, y = np.unravel_index(np.argmax(hz), hz.shape)
        raise ValueError(f"{int(hz[x, y])} hazards on cell {(int(x), int(y))}; a cell holds at most {MAX_HAZARD_STACK}")
    return Board(
        head=heads,
        length=np.asarray([len(b) for b in bodies], np.int32),
        health=np.asarray(health, np.int32),
        body=body.reshape(n, size * size).astype(body_dtype(size)),
        food=food_grid.reshape(-1),
        hazards=hz.reshape(-1).astype(np.int8),
        eliminated_cause=np.zeros(n, np.int32),
        eliminated_on_turn=np.zeros(n, np.int32),
        eliminated_by=np.full(n, -1, np.int32),
        turn=np.asarray(turn, np.int32),
    )


def body_list(board: Board, s: int) -> list[tuple[int, int]]:
    """Snake ``s``'s body as the engine's list, head first (Python, not traced).

    Args:
        board: one (unbatched) board.
        s: snake index.

    Returns:
        ``length`` points ``(x, y)``; segment ``i > 0`` is the cell with the
        smallest value ``>= length - i`` in the snake's grid, segment 0 the
        stored head (which may be off the board for a wall collision).
    """
    size = board.size
    grid = np.asarray(board.body[s]).astype(np.int64).reshape(size, size)
    n = int(board.length[s])
    cells = np.argwhere(grid > 0)
    values = grid[grid > 0]
    order = np.argsort(values)
    cells, values = cells[order], values[order]
    out = [tuple(int(v) for v in np.asarray(board.head[s]))]
    for i in range(1, n):
        k = int(np.searchsorted(values, n - i, side="left"))
        if k >= len(values):
            raise ValueError(f"snake {s}: inconsistent body grid")
        out.append((int(cells[k][0]), int(cells[k][1])))
    return out
