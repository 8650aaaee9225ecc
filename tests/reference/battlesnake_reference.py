"""A plain-Python Battlesnake standard ruleset, written straight from the official engine.

Source: github.com/BattlesnakeOfficial/rules, ``standard.go`` (stages),
``board.go`` (``GetUnoccupiedPoints``, ``PlaceFoodFixed``),
``maps/standard.go`` (food after the ruleset) and ``cli/commands/play.go``
(ruleset, then map food, then ``turn + 1``). Bodies are lists of ``(x, y)``,
head first, as in the engine; nothing here shares code with the JAX kernel.
It is the oracle of ``tests/test_battlesnake_differential.py`` and the
plain-Python baseline of ``benchmarks/battlesnake.py``.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

MAX_HEALTH = 100
MOVES = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}


@dataclass
class Snake:
    """One snake: ``body`` head first, ``eliminated_by`` a snake index or -1."""

    body: list
    health: int = MAX_HEALTH
    eliminated_cause: str = ""
    eliminated_on_turn: int = 0
    eliminated_by: int = -1

    @property
    def alive(self) -> bool:
        return self.eliminated_cause == ""


@dataclass
class Board:
    """The engine's ``BoardState`` (square boards; ``hazards`` may repeat points)."""

    size: int
    snakes: list
    food: list = field(default_factory=list)
    hazards: list = field(default_factory=list)
    turn: int = 0


def game_over(b: Board) -> bool:
    """``GameOverStandard`` (``GameOverSolo`` for one snake)."""
    n = sum(s.alive for s in b.snakes)
    return n == 0 if len(b.snakes) == 1 else n <= 1


def default_move(body) -> str:
    """``getDefaultMove``: continue from neck to head; ``up`` when stacked."""
    if len(body) >= 2:
        (hx, hy), (nx, ny) = body[0], body[1]
        if hx == nx + 1:
            return "right"
        if hx == nx - 1:
            return "left"
        if hy == ny + 1:
            return "up"
        if hy == ny - 1:
            return "down"
    return "up"


def resolve(b: Board, moves, *, health_loss: int = 1, hazard_damage: int = 0) -> tuple[Board, bool]:
    """Stages 1-6 on a copy of ``b``; returns ``(board, game_over_on_entry)``.

    ``moves[i]`` is a move string for snake ``i`` (anything but the four
    directions is the default move); eliminated snakes' moves are ignored.
    """
    if game_over(b):
        return copy.deepcopy(b), True
    b = copy.deepcopy(b)
    alive_at_start = [s.alive for s in b.snakes]
    # Movement.
    for i, s in enumerate(b.snakes):
        if not s.alive:
            continue
        m = moves[i] if moves[i] in MOVES else default_move(s.body)
        dx, dy = MOVES[m]
        s.body = [(s.body[0][0] + dx, s.body[0][1] + dy)] + s.body[:-1]
    # Starvation.
    for s in b.snakes:
        if s.alive:
            s.health -= health_loss
    # Hazards.
    for s in b.snakes:
        if not s.alive:
            continue
        for p in b.hazards:
            if s.body[0] == p and p not in b.food:
                s.health = min(max(s.health - hazard_damage, 0), MAX_HEALTH)
                if s.health <= 0:
                    s.eliminated_cause, s.eliminated_on_turn = "hazard", b.turn + 1
    # Feeding.
    remaining = []
    for f in b.food:
        eaten = False
        for s in b.snakes:
            if s.alive and s.body[0] == f:
                s.body.append(s.body[-1])
                s.health = MAX_HEALTH
                eaten = True
        if not eaten:
            remaining.append(f)
    b.food = remaining
    # Elimination, phase 1.
    for s in b.snakes:
        if not s.alive:
            continue
        if s.health <= 0:
            s.eliminated_cause, s.eliminated_on_turn = "out-of-health", b.turn + 1
        elif any(not (0 <= x < b.size and 0 <= y < b.size) for x, y in s.body):
            s.eliminated_cause, s.eliminated_on_turn = "wall-collision", b.turn + 1
    # Phase 2: decide for all, then apply. Longest first (stable: lowest index on ties).
    order = sorted(range(len(b.snakes)), key=lambda j: -len(b.snakes[j].body))
    found = []
    for i, s in enumerate(b.snakes):
        if not s.alive:
            continue
        if s.body[0] in s.body[1:]:
            found.append((i, "snake-self-collision", i))
            continue
        hit = next((j for j in order if j != i and b.snakes[j].alive and s.body[0] in b.snakes[j].body[1:]), None)
        if hit is not None:
            found.append((i, "snake-collision", hit))
            continue
        lost = next(
            (
                j
                for j in order
                if j != i and b.snakes[j].alive and b.snakes[j].body[0] == s.body[0] and len(s.body) <= len(b.snakes[j].body)
            ),
            None,
        )
        if lost is not None:
            found.append((i, "head-collision", lost))
    for i, cause, by in found:
        s = b.snakes[i]
        s.eliminated_cause, s.eliminated_by, s.eliminated_on_turn = cause, by, b.turn + 1
    del alive_at_start
    return b, False


def unoccupied_points(b: Board) -> set:
    """``GetUnoccupiedPoints(b, includePossibleMoves=false, includeHazards=false)``."""
    taken = set(b.food)
    for s in b.snakes:
        if not s.alive:
            continue
        taken.update(s.body)
        hx, hy = s.body[0]
        taken.update([(hx - 1, hy), (hx + 1, hy), (hx, hy - 1), (hx, hy + 1)])
    return {(x, y) for x in range(b.size) for y in range(b.size)} - taken


def food_needed(b: Board, roll: int, *, minimum_food: int = 1, food_spawn_chance: int = 15) -> int:
    """``checkFoodNeedingPlacement`` with ``roll = rand.Intn(100)``."""
    if len(b.food) < minimum_food:
        return minimum_food - len(b.food)
    if food_spawn_chance > 0 and 100 - roll < food_spawn_chance:
        return 1
    return 0


def step(b: Board, moves, new_food, **kw) -> Board:
    """One turn: `resolve`, then add ``new_food`` (the engine's spawn) and ``turn + 1``."""
    r, over = resolve(b, moves, **kw)
    if over:
        return r
    r.food = r.food + [tuple(p) for p in new_food]
    r.turn += 1
    return r


def random_step(b: Board, moves, rng: random.Random, *, minimum_food: int = 1, food_spawn_chance: int = 15, **kw) -> Board:
    """One turn with the engine's random food (``placeFoodRandomly``), for the benchmark."""
    r, over = resolve(b, moves, **kw)
    if over:
        return r
    n = food_needed(r, rng.randrange(100), minimum_food=minimum_food, food_spawn_chance=food_spawn_chance)
    if n:
        free = sorted(unoccupied_points(r))
        rng.shuffle(free)
        r.food = r.food + free[:n]
    r.turn += 1
    return r


def start_board(size: int, num_snakes: int, rng: random.Random) -> Board:
    """``PlaceSnakesFixed`` + ``PlaceFoodFixed`` (square boards of size >= 7, up to 8 snakes)."""
    lo, md, hi = 1, (size - 1) // 2, size - 2
    corners = [(lo, lo), (lo, hi), (hi, lo), (hi, hi)]
    cardinals = [(lo, md), (md, lo), (md, hi), (hi, md)]
    rng.shuffle(corners)
    rng.shuffle(cardinals)
    points = corners + cardinals if rng.randrange(2) == 0 else cardinals + corners
    b = Board(size, [Snake([points[i]] * 3) for i in range(num_snakes)])
    c = (size - 1) // 2
    if num_snakes <= 4 or size * size >= 121:
        for s in b.snakes:
            hx, hy = s.body[0]
            options = []
            for px, py in [(hx - 1, hy - 1), (hx - 1, hy + 1), (hx + 1, hy - 1), (hx + 1, hy + 1)]:
                if (px, py) == (c, c) or (px, py) in b.food:
                    continue
                away = (px < hx < c) or (c < hx < px) or (py < hy < c) or (c < hy < py)
                corner = px in (0, size - 1) and py in (0, size - 1)
                if away and not corner:
                    options.append((px, py))
            if not options:
                raise ValueError("no room for food")
            b.food.append(rng.choice(options))
    b.food.append((c, c))
    return b


def random_legal_move(s: Snake, rng: random.Random) -> str:
    """A uniform move among those not back into the neck (the benchmark policy)."""
    options = [m for m, (dx, dy) in MOVES.items() if len(s.body) < 2 or (s.body[0][0] + dx, s.body[0][1] + dy) != s.body[1]]
    return rng.choice(options)
