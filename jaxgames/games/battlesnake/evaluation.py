"""A hand-written Battlesnake position evaluation for search: territory, length, food, head-to-head risk.

Territory is the Voronoi heuristic of the Tron bots of the 2010 Google AI
Challenge (a1k0n, "Google AI Challenge post-mortem", 2010,
www.a1k0n.net/2010/03/04/google-ai-postmortem.html, "Phase 3: Minimax"): a
cell belongs to the player who reaches it strictly first; cells reached at
the same time by two players belong to no one (a neutral border). Search
Battlesnakes use it as their leaf evaluation (e.g. the JackSnake,
github.com/m9p909/jacksnake, README: "a breadth-first search to determine
how many squares my snake can reach before the other snakes", combined with
health) where simpler snakes flood-fill from their own head (Battlesnake
docs, "Useful algorithms", github.com/BattlesnakeOfficial/docs-old,
``references/useful-algorithms.md``). We follow a1k0n's partition and
compute it as one breadth-first search from every living head at once
(`owners`):

* round ``t`` (``t = 1, 2, ...``) claims every unclaimed, passable cell next
  to a cell first claimed by a snake in round ``t - 1`` (the BFS frontier);
  a cell reached in the same round by one snake is that snake's, by two or
  more snakes a tie (`TIE`): nobody's, and nobody expands from it;
* bodies recede (the timed rule): a cell that a living snake leaves after
  ``v`` moves (``Board.body`` holds ``v``; the maximum over living snakes)
  is passable from round ``v`` on. The official rules check collisions after
  every snake has moved (``standard.go``), so a plain tail (``v = 1``) is
  free at once, and a head that needs ``v`` moves to reach a body cell finds
  it empty: a wall of bodies opens from its tail end, as in play. Growth by
  eating is ignored (a snake that eats holds its tail one move longer).
  Only the frontier expands, so a snake cannot wait for a cell to free, as
  in play (its head moves every turn; `jaxgames.agents.battlesnake.
  arrival_times` makes the same choice);
* a snake's head cell is its own from round 0 and not counted in
  `territory`; eliminated snakes have no head and no body on the board.

Features (`features`, each ``[S]``): territory and its share among living
snakes; own length minus the longest and minus the nearest (Manhattan
head distance; ties: the longest of the nearest) other living snake; the
moves to the nearest food by the snake's own timed BFS (others ignored
but for their bodies) and starvation risk ``health < food_distance``;
head-to-head risk, the cells next to the head that are free next turn and
next to the head of a living snake at least as long (the rules: a
head-to-head kills the shorter snake, both when equal).

`evaluate` combines them with fixed weights into float32 ``[S]`` in
``[-1, 1]``: -1 for an eliminated snake, +1 for the sole survivor of a game
of two or more snakes, and within ``[-LIVE_BOUND, LIVE_BOUND]`` for a snake
still playing, so that any real win or loss outranks any heuristic value.
`leaf_value` adapts it to the simultaneous-move search's ``evaluate(state,
key) -> values [num_players]``. Everything is written for one board:
``jax.vmap`` it for a batch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks
from jaxgames.games.battlesnake import bitboard, rules
from jaxgames.games.battlesnake.env import Battlesnake, BattlesnakeState
from jaxgames.games.battlesnake.rules import Board

NOBODY = -1
"""`owners` value of a cell that no snake reaches (blocked for the whole search, or cut off)."""

TIE = -2
"""`owners` value of a cell reached first by two or more snakes in the same round."""

UNREACHABLE = bitboard.UNREACHABLE
"""`Features.food_distance` when no food is reachable (then ``starving`` is True)."""

LIVE_BOUND = 0.9
"""`evaluate` keeps a living snake's value within ``[-LIVE_BOUND, LIVE_BOUND]`` (a real win or loss outranks it)."""


class Features(NamedTuple):
    """The evaluation features of one board, per snake (zero or False for eliminated snakes).

    Attributes:
        territory: int32 ``[S]``, cells the snake reaches strictly first
            (`territory`; the head cell not counted).
        territory_share: float32 ``[S]``, ``territory / sum(territory)`` over
            living snakes (0 when nobody has any).
        length_vs_longest: int32 ``[S]``, own length minus the longest other
            living snake's (0 without one).
        length_vs_nearest: int32 ``[S]``, own length minus that of the other
            living snake whose head is nearest (Manhattan; ties: the longest
            of them; 0 without one).
        food_distance: int32 ``[S]``, moves to the nearest food by the
            snake's own timed breadth-first search (`UNREACHABLE` if none).
        starving: bool ``[S]``, ``health < food_distance``: the snake starves
            before it can eat.
        safe_moves: int32 ``[S]``, moves onto a cell on the board that is
            free next turn (no body there but plain tails).
        head_to_head_risk: int32 ``[S]``, those cells that the head of a
            living snake at least as long can also move to next turn.
        space: int32 ``[S]``, the cells the snake's own timed breadth-first
            search reaches (others ignored but for their bodies; the head
            not counted): a flood fill in which its own tail recedes.
        trapped: bool ``[S]``, ``space < length``: too little room to
            hold the snake.
        won_food_distance: int32 ``[S]``, moves to the nearest food the
            snake reaches strictly first (the food of its `territory`;
            `UNREACHABLE` if none).
    """

    territory: jax.Array
    territory_share: jax.Array
    length_vs_longest: jax.Array
    length_vs_nearest: jax.Array
    food_distance: jax.Array
    starving: jax.Array
    safe_moves: jax.Array
    head_to_head_risk: jax.Array
    space: jax.Array
    trapped: jax.Array
    won_food_distance: jax.Array


def _rounds(board: Board, rounds: int | None) -> int:
    """The static BFS bound, checked at the Python boundary (default: every cell, which is exact)."""
    cells = board.size * board.size
    if rounds is None:
        return cells
    return checks.integer("rounds", rounds, 1, cells)


def _check_board(board) -> None:
    if not isinstance(board, Board):
        raise TypeError(f"board must be a battlesnake rules.Board; got {type(board).__name__}")


free_from = bitboard.free_from


def owners(board: Board, *, rounds: int | None = None) -> jax.Array:
    """The Voronoi partition of one board: which snake reaches each cell strictly first.

    Args:
        board: one board (vmap for a batch).
        rounds: static, BFS rounds (default and at most ``size * size``,
            which is exact: every round claims a cell or the search stops);
            cells further away count as unreached.

    Returns:
        int32 ``[size * size]``: the snake index (head cells included),
        `TIE` where two or more snakes arrive in the same round, `NOBODY`
        where no snake arrives (module docstring for the rules).

    Raises:
        TypeError: ``board`` is not a `rules.Board`, or ``rounds`` not an int.
        ValueError: ``rounds`` outside ``[1, size * size]``.
    """
    _check_board(board)
    cells = board.size * board.size
    s = bitboard.search(board, _rounds(board, rounds))
    owned = bitboard.unpack(s.owned, cells)
    claimed = bitboard.unpack(s.claimed, cells)
    who = jnp.argmax(owned, axis=0).astype(jnp.int32)
    return jnp.where(jnp.any(owned, axis=0), who, jnp.where(claimed, TIE, NOBODY)).astype(jnp.int32)


def territory(board: Board, *, rounds: int | None = None) -> jax.Array:
    """int32 ``[S]``: the cells each living snake reaches strictly before every other snake.

    The count of `owners` cells per snake, the head cell not counted; 0 for
    an eliminated snake. Arguments and errors as `owners`.
    """
    _check_board(board)
    s = bitboard.search(board, _rounds(board, rounds))
    return (s.owned_count - board.alive).astype(jnp.int32)


def features(board: Board, *, rounds: int | None = None, players: jax.Array | None = None) -> Features:
    """The `Features` of one board (vmap for a batch).

    Args:
        board: one board.
        rounds: static BFS bound, as `owners`.
        players: int32 ``[R]`` (``R`` static, may be traced): the snakes whose
            features are computed, in this order (only their own BFS runs);
            default every snake.

    Returns:
        `Features`, each ``[R]`` (``[S]`` by default).

    Raises:
        TypeError, ValueError: as `owners`.
    """
    _check_board(board)
    return _features(board, _rounds(board, rounds), players, space=True)


def _rows(board: Board, players: jax.Array | None) -> jax.Array:
    """int32 ``[P]``: the snakes valued, ``players`` or every snake."""
    return jnp.arange(board.num_snakes, dtype=jnp.int32) if players is None else jnp.asarray(players, jnp.int32)


def _features(board: Board, rounds: int, players: jax.Array | None, space: bool) -> Features:
    """`features`; with ``space=False`` the ``space`` and ``trapped`` rows are not computed (meaningless)."""
    size, n = board.size, board.num_snakes
    rows = _rows(board, players)
    s = bitboard.search(board, rounds, solo=None if players is None else rows, space=space)
    alive = board.alive
    length = board.length.astype(jnp.int32)

    terr = jnp.where(alive, s.owned_count - 1, 0).astype(jnp.int32)
    total = jnp.sum(terr)
    share = jnp.where(total > 0, terr / jnp.maximum(total, 1), 0.0).astype(jnp.float32)

    others = alive[None, :] & alive[:, None] & ~jnp.eye(n, dtype=bool)  # [s, j]
    any_other = jnp.any(others, axis=1)
    longest = jnp.max(jnp.where(others, length[None, :], 0), axis=1)
    dist = jnp.sum(jnp.abs(board.head[:, None, :] - board.head[None, :, :]), axis=-1)  # [s, j]
    big = jnp.int32(4 * rules.MAX_BOARD_SIZE)
    dist = jnp.where(others, dist, big)
    nearest = others & (dist == jnp.min(dist, axis=1, keepdims=True))
    nearest_length = jnp.max(jnp.where(nearest, length[None, :], 0), axis=1)
    vs_longest = jnp.where(any_other, length - longest, 0).astype(jnp.int32)
    vs_nearest = jnp.where(any_other, length - nearest_length, 0).astype(jnp.int32)

    own_alive, own_length = alive[rows], length[rows]  # the solo rows' snakes
    food_distance = jnp.where(own_alive, s.food_distance, UNREACHABLE).astype(jnp.int32)
    starving = own_alive & (board.health[rows] < food_distance)
    own_space = jnp.where(own_alive, s.space - 1, 0).astype(jnp.int32)
    trapped = own_alive & (own_space < own_length)

    # Head-to-head: the four cells next to each head, free next turn, and next to a head at least as long.
    target = board.head[:, None, :] + jnp.asarray(rules.DELTAS)[None]  # [S, 4, 2]
    on = jnp.all((target >= 0) & (target < size), axis=-1)
    flat = jnp.clip(target[..., 0], 0, size - 1) * size + jnp.clip(target[..., 1], 0, size - 1)
    safe = alive[:, None] & on & (free_from(board)[flat] <= 1)  # [S, 4]
    gap = jnp.sum(jnp.abs(target[:, :, None, :] - board.head[None, None, :, :]), axis=-1)  # [s, 4, j]
    rival = others & (length[None, :] >= length[:, None])  # [s, j]
    risky = safe & jnp.any((gap == 1) & rival[:, None, :], axis=2)

    return Features(
        territory=terr[rows],
        territory_share=share[rows],
        length_vs_longest=vs_longest[rows],
        length_vs_nearest=vs_nearest[rows],
        food_distance=food_distance,
        starving=starving,
        safe_moves=jnp.sum(safe, axis=1).astype(jnp.int32)[rows],
        head_to_head_risk=jnp.sum(risky, axis=1).astype(jnp.int32)[rows],
        space=own_space,
        trapped=trapped,
        won_food_distance=jnp.where(alive, s.won_food_distance, UNREACHABLE).astype(jnp.int32)[rows],
    )


_TERMS = 9  # the leading `_Weights` fields that weigh a term


class _Weights(NamedTuple):
    territory: float
    length_vs_longest: float
    length_vs_nearest: float
    starvation: float
    head_to_head: float
    food: float
    space: float
    won_food: float
    cramped: float
    length_scale: float
    hunger_health: int
    hungry_unless_longest: bool
    starvation_loss: bool


def _weights(territory_weight, longest_weight, nearest_weight, starvation_weight, head_to_head_weight,
             food_weight, space_weight, won_food_weight, cramped_weight, length_scale, hunger_health,
             hungry_unless_longest, starvation_loss) -> _Weights:
    """Checks the weights at the Python boundary (finite, >= 0, not all 0; ``length_scale`` > 0; flags bool)."""
    w = _Weights(
        checks.real("territory_weight", territory_weight, lo=0.0, dtype="float32"),
        checks.real("longest_weight", longest_weight, lo=0.0, dtype="float32"),
        checks.real("nearest_weight", nearest_weight, lo=0.0, dtype="float32"),
        checks.real("starvation_weight", starvation_weight, lo=0.0, dtype="float32"),
        checks.real("head_to_head_weight", head_to_head_weight, lo=0.0, dtype="float32"),
        checks.real("food_weight", food_weight, lo=0.0, dtype="float32"),
        checks.real("space_weight", space_weight, lo=0.0, dtype="float32"),
        checks.real("won_food_weight", won_food_weight, lo=0.0, dtype="float32"),
        checks.real("cramped_weight", cramped_weight, lo=0.0, dtype="float32"),
        checks.real("length_scale", length_scale, lo=0.0, lo_open=True, dtype="float32"),
        checks.integer("hunger_health", hunger_health, 1, rules.SNAKE_MAX_HEALTH),
        hungry_unless_longest,
        starvation_loss,
    )
    for name in ("hungry_unless_longest", "starvation_loss"):
        if not isinstance(getattr(w, name), bool):
            raise TypeError(f"{name} must be a bool; got {getattr(w, name)!r}")
    if sum(w[:_TERMS]) <= 0.0:
        raise ValueError("the evaluation weights must not all be 0")
    return w


def evaluate(
    board: Board,
    *,
    territory_weight: float = 0.5,
    longest_weight: float = 0.15,
    nearest_weight: float = 0.1,
    starvation_weight: float = 0.15,
    head_to_head_weight: float = 0.1,
    food_weight: float = 0.2,
    space_weight: float = 0.0,
    won_food_weight: float = 0.0,
    cramped_weight: float = 0.0,
    length_scale: float = 3.0,
    hunger_health: int = 50,
    hungry_unless_longest: bool = False,
    starvation_loss: bool = False,
    rounds: int | None = None,
    players: jax.Array | None = None,
) -> jax.Array:
    """The value of one board for every snake (or ``players``), for a search's leaves.

    For a snake still playing, each term lies in ``[-1, 1]`` (higher is
    better) and the value is ``LIVE_BOUND * sum(w_i term_i) / sum(w_i)``:

    * territory: ``clip(share * alive - 1, -1, 1)``, 0 at a fair share
      (``1 / alive`` of the territory of ``alive`` living snakes), +1 from
      twice that, -1 with none;
    * longest, nearest: ``tanh(length_vs_longest / length_scale)``, the same
      for ``length_vs_nearest``;
    * starvation: -1 when ``starving`` (health below the moves to food);
    * head-to-head: ``-head_to_head_risk / safe_moves``, -1 with no safe move;
    * food: ``2 clip((health - food_distance) / hunger_health, 0, 1) - 1``,
      the health left on reaching the nearest food: +1 from
      ``hunger_health`` up, -1 when starving. Eating restores health to
      100, so it pays at once; a shallow search sees food only a few moves
      away, and this term carries the way to it;
    * space: -1 when ``trapped`` (its own flood fill holds fewer cells
      than its length), else 0;
    * won food: ``2 clip((health - won_food_distance) / 100, 0, 1) - 1``,
      the food term over the food the snake reaches strictly first, always
      hungry: it draws the snake to food no other snake can take first;
    * cramped: -1 when the snake's territory holds fewer cells than its
      length (the cells it reaches first cannot hold its body), else 0.

    An eliminated snake is worth -1 and the sole survivor of a game of two
    or more snakes +1 (the Env's loss and win rewards); with
    ``starvation_loss`` a starving snake is worth -1 too. The defaults are
    fixed by hand (territory first, as in a1k0n's Voronoi evaluation), not
    tuned against any opponent.

    Args:
        board: one board (vmap for a batch).
        territory_weight, longest_weight, nearest_weight, starvation_weight,
            head_to_head_weight, food_weight, space_weight, won_food_weight, cramped_weight: the weights,
            finite, >= 0, not all 0.
        length_scale: length difference (segments) at which a length term
            reaches ``tanh(1) = 0.76``; > 0.
        hunger_health: health margin (1..100) from which the food term is +1.
        hungry_unless_longest: a snake not longer than the longest other
            living snake (a snake alone included) takes a margin of 100
            instead: its food term saturates only at full health, so it is
            drawn to food while it is not the longest, as
            `jaxgames.agents.battlesnake.HeuristicAgent` goes for food "when
            hungry or not the longest". Default False.
        starvation_loss: value a starving snake (still playing, health
            below its moves to the nearest food, or no food reachable) as
            an eliminated one, -1. Default False.
        rounds: static BFS bound, as `owners`.
        players: as `features`: only these snakes' values, in this order
            (cheaper: only their own BFS runs; each stops at food unless
            ``space_weight > 0``).

    Returns:
        float32 ``[S]`` (or ``[R]``) in ``[-1, 1]``.

    Raises:
        TypeError, ValueError: a bad board, weight or ``rounds``, naming it.
    """
    w = _weights(territory_weight, longest_weight, nearest_weight, starvation_weight, head_to_head_weight,
                 food_weight, space_weight, won_food_weight, cramped_weight, length_scale, hunger_health,
                 hungry_unless_longest, starvation_loss)
    _check_board(board)
    f = _features(board, _rounds(board, rounds), players, space=bool(w.space > 0))
    rows = _rows(board, players)
    alive, health = board.alive[rows], board.health[rows]
    n_alive = jnp.sum(board.alive)
    hunger = jnp.float32(w.hunger_health)
    if w.hungry_unless_longest:
        hunger = jnp.where(f.length_vs_longest > 0, hunger, jnp.float32(rules.SNAKE_MAX_HEALTH))
    terms = (
        jnp.clip(f.territory_share * n_alive - 1.0, -1.0, 1.0),
        jnp.tanh(f.length_vs_longest / w.length_scale),
        jnp.tanh(f.length_vs_nearest / w.length_scale),
        -f.starving.astype(jnp.float32),
        jnp.where(f.safe_moves > 0, -f.head_to_head_risk / jnp.maximum(f.safe_moves, 1), -1.0),
        jnp.clip((health - jnp.minimum(f.food_distance, 2 * rules.SNAKE_MAX_HEALTH)) / hunger,
                 0.0, 1.0) * 2.0 - 1.0,
        -f.trapped.astype(jnp.float32),
        jnp.clip((health - jnp.minimum(f.won_food_distance, 2 * rules.SNAKE_MAX_HEALTH))
                 / rules.SNAKE_MAX_HEALTH, 0.0, 1.0) * 2.0 - 1.0,
        -(f.territory < board.length[rows]).astype(jnp.float32),
    )
    total = sum(w[:_TERMS])
    # terms of weight 0 left out (their features are then not computed): the same sum, bit for bit
    live = LIVE_BOUND * sum((wi / total) * term for wi, term in zip(w[:_TERMS], terms) if wi > 0)
    sole = alive & (n_alive == 1) & (board.num_snakes > 1)
    lost = ~alive | (f.starving if w.starvation_loss else False)
    return jnp.where(sole, 1.0, jnp.where(lost, -1.0, live)).astype(jnp.float32)


def leaf_value(env: Battlesnake, **weights) -> Callable[[BattlesnakeState, jax.Array], jax.Array]:
    """`evaluate` as a search's leaf evaluation: ``fn(state, key) -> values`` float32 ``[num_players]``.

    Args:
        env: the `Battlesnake` Env whose states will be evaluated.
        **weights: keyword arguments of `evaluate` (weights, ``length_scale``,
            ``rounds``), checked here, before any tracing.

    Returns:
        A pure function of one state and a key (unused: the evaluation is
        deterministic); jit and vmap it as the search does.

    Raises:
        TypeError: ``env`` is not a `Battlesnake`, or an unknown keyword.
        ValueError: a bad weight or ``rounds`` (as `evaluate`).
    """
    if not isinstance(env, Battlesnake):
        raise TypeError(f"leaf_value needs a Battlesnake env; got {type(env).__name__}")
    bound = inspect.signature(evaluate).bind(None, **weights)  # TypeError on an unknown keyword
    bound.apply_defaults()
    kw = {k: v for k, v in bound.arguments.items() if k != "board"}
    rounds = kw.pop("rounds")
    if kw.pop("players") is not None:
        raise TypeError("leaf_value values every snake: players is not one of its keywords")
    _weights(**kw)
    if rounds is not None:
        checks.integer("rounds", rounds, 1, env.board_size * env.board_size)

    def fn(state: BattlesnakeState, key: jax.Array) -> jax.Array:
        del key
        return evaluate(state.board, **weights)

    return fn
