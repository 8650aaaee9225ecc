"""All the randomness of Battlesnake: start positions, initial food, food spawning.

Source: the official engine, ``board.go`` (``PlaceSnakesFixed``,
``PlaceFoodFixed``, ``GetUnoccupiedPoints``) and ``maps/standard.go``
(``PostUpdateBoard``: ``checkFoodNeedingPlacement`` then
``placeFoodRandomly``). The distributions are the engine's; the random
streams are JAX's, so a game is replayed from its recorded food, not its seed.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.battlesnake import rules
from jaxgames.games.battlesnake.rules import DEFAULT_PARAMS, Board, Params

_PERMUTATIONS = np.array(list(itertools.permutations(range(4))), np.int32)


def _food_options(size: int) -> np.ndarray:
    """int32 ``[8, 4]``: for each start point, the diagonal cells allowed for its initial food (``PlaceFoodFixed``), -1 if not.

    A diagonal neighbour is allowed unless it is the centre, off the board,
    a corner, or not further from the centre than the head on any axis.

    Raises:
        AssertionError: if two start points share an allowed cell (then the
            engine's "not already food" rule would matter; it does not for
            the sizes 7..25 with the snake counts that get per-snake food).
    """
    corners, cardinals = start_points(size)
    centre = (size - 1) // 2
    out = np.full((8, 4), -1, np.int32)
    for i, (hx, hy) in enumerate(np.concatenate([corners, cardinals]).tolist()):
        for d, (dx, dy) in enumerate([(-1, -1), (-1, 1), (1, -1), (1, 1)]):
            px, py = hx + dx, hy + dy
            if not (0 <= px < size and 0 <= py < size) or (px, py) == (centre, centre):
                continue
            away = (px < hx < centre) or (centre < hx < px) or (py < hy < centre) or (centre < hy < py)
            corner = px in (0, size - 1) and py in (0, size - 1)
            if away and not corner:
                out[i, d] = px * size + py
    assert np.all((out >= 0).any(axis=1)), "a start point without a food option"
    if size * size >= 11 * 11:  # groups mix (more than 4 snakes) only on these boards
        cells = out[out >= 0]
        assert len(set(cells.tolist())) == len(cells), "start points share a food option"
    else:
        for group in (out[:4], out[4:]):
            cells = group[group >= 0]
            assert len(set(cells.tolist())) == len(cells), "start points share a food option"
    return out


def start_points(size: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed start points, ``(corners [4, 2], cardinals [4, 2])`` int32.

    Corners ``(1,1), (1,W-2), (W-2,1), (W-2,W-2)``; cardinal points ``(1,m),
    (m,1), (m,W-2), (W-2,m)`` with ``m = (W-1)//2`` (``PlaceSnakesFixed``).
    """
    lo, md, hi = 1, (size - 1) // 2, size - 2
    corners = np.array([[lo, lo], [lo, hi], [hi, lo], [hi, hi]], np.int32)
    cardinals = np.array([[lo, md], [md, lo], [md, hi], [hi, md]], np.int32)
    return corners, cardinals


def food_candidates(board: Board) -> jax.Array:
    """bool ``[size * size]``: cells where food may spawn.

    Free of food, of every segment of living snakes, and not next to a living
    head (``GetUnoccupiedPoints(b, false, false)``). Eliminated snakes block
    nothing.
    """
    x, y = rules.cell_coords(board.size)
    alive, hx, hy = rules.materialize((board.alive.astype(jnp.int32), board.head[:, 0], board.head[:, 1]))
    alive = alive[:, None] > 0
    dist = jnp.abs(x[None] - hx[:, None]) + jnp.abs(y[None] - hy[:, None])
    blocked = jnp.any(((board.body > 0) | (dist <= 1)) & alive, axis=0)  # bodies and cells next to heads
    return ~board.food & ~blocked


def _cumsum(v: jax.Array) -> jax.Array:
    """``jnp.cumsum(v, axis=-1)`` for short vectors, as a triangular masked sum.

    XLA's CPU cumulative sum (a reduce-window) cost more than the rest of the
    food sampler; ``n^2`` multiply-adds for ``n <= 25`` are cheaper.
    """
    n = v.shape[-1]
    tri = np.tril(np.ones((n, n), bool))
    return jnp.sum(jnp.where(tri, v[..., None, :], 0), axis=-1)


def _pick_uniform(u: jax.Array, cand: jax.Array) -> jax.Array:
    """The one-hot of one cell uniformly among ``cand`` (bool ``[size * size]``), given ``u ~ U[0, 1)``.

    Inverse-CDF in two levels (column counts, then the column), so the work
    is one pass over the board and two tiny cumulative sums. All False if
    ``cand`` is empty or ``u < 0``.
    """
    w = rules.isqrt(cand.shape[-1])
    c = cand.astype(jnp.int8).reshape(w, w)
    per_x = jnp.sum(c, axis=1, dtype=jnp.int32)  # [W]
    total = jnp.sum(per_x)
    k = jnp.minimum(jnp.floor(u * total).astype(jnp.int32), jnp.maximum(total - 1, 0))
    total = jnp.where(u < 0, 0, total)  # u < 0: pick nothing
    cum_x = _cumsum(per_x)
    px = jnp.sum(cum_x <= k).astype(jnp.int32)
    before = jnp.sum(jnp.where(jnp.arange(w) < px, per_x, 0))
    col = jax.lax.dynamic_slice(c, (jnp.minimum(px, w - 1), jnp.int32(0)), (1, w))[0].astype(jnp.int32)  # [H]
    py = jnp.sum(_cumsum(col) <= k - before).astype(jnp.int32)
    (chosen,) = rules.materialize((jnp.where(total > 0, px * w + py, -1),))  # see rules.materialize
    return jnp.arange(w * w) == chosen


def default_food_slots(params: Params = DEFAULT_PARAMS) -> int:
    """The static ``food_slots`` that spawns exactly what the engine spawns: ``max(minimum_food, 1)``.

    Args:
        params: settings with a concrete ``minimum_food`` (an int or a
            concrete integer array, scalar or batched: the maximum is taken).

    Returns:
        int >= 1.

    Raises:
        TypeError: ``params.minimum_food`` is traced (inside ``jit``/``vmap``
            when the params are an argument); pass ``food_slots`` then.
    """
    m = params.minimum_food
    if isinstance(m, jax.core.Tracer):
        raise TypeError(
            "params.minimum_food is traced, so the number of food slots cannot be derived from it; "
            "pass the static keyword food_slots=<max minimum_food over the batch> to the spawn function"
        )
    return max(int(np.max(np.asarray(m))), 1)


def _slots(params: Params, food_slots: int | None) -> int:
    if food_slots is None:
        return default_food_slots(params)
    if isinstance(food_slots, bool) or not isinstance(food_slots, (int, np.integer)) or food_slots < 1:
        raise ValueError(f"food_slots must be an int >= 1; got {food_slots!r}")
    return int(food_slots)


def num_uniforms(params: Params = DEFAULT_PARAMS, *, food_slots: int | None = None) -> int:
    """How many ``U[0, 1)`` variates `food_from_uniforms` takes (static): ``1 + food_slots``.

    Args:
        params: settings, used only for the default ``food_slots``.
        food_slots: static bound on the food placed in one turn (default
            `default_food_slots`).

    Raises:
        TypeError, ValueError: see `default_food_slots`; ``food_slots < 1``.
    """
    return 1 + _slots(params, food_slots)


def food_from_uniforms(
    u: jax.Array, board: Board, params: Params = DEFAULT_PARAMS, *, food_slots: int | None = None
) -> jax.Array:
    """`food_to_spawn` with its randomness given: ``u`` float32 ``[1 + food_slots]`` in ``[0, 1)``.

    ``u[0]`` is the engine's ``rand.Intn(100)`` (as ``floor(100 u)``), the
    rest pick the cells one after the other. ``params`` may be traced;
    ``food_slots`` is static (see `food_to_spawn`).
    """
    slots = _slots(params, food_slots)
    have = jnp.sum(board.food).astype(jnp.int32)
    roll = jnp.floor(u[0] * 100).astype(jnp.int32)
    by_chance = (params.food_spawn_chance > 0) & (100 - roll < params.food_spawn_chance)
    minimum = jnp.asarray(params.minimum_food, jnp.int32)
    need = jnp.where(have < minimum, minimum - have, by_chance.astype(jnp.int32))
    cand = food_candidates(board)
    new = jnp.zeros_like(cand)
    for i in range(slots):
        new = new | _pick_uniform(jnp.where(i < need, u[1 + i], -1.0), cand & ~new)
    return new


def food_to_spawn(
    key: jax.Array, board: Board, params: Params = DEFAULT_PARAMS, *, food_slots: int | None = None
) -> jax.Array:
    """The food the engine spawns after a turn's eliminations (stage 7).

    If there is less than ``minimum_food``, the shortfall; otherwise one food
    when ``100 - randint(0, 100) < food_spawn_chance``. Cells are distinct,
    uniform among `food_candidates` (fewer if there are not enough).

    Args:
        key: PRNG key.
        board: the board after `rules.resolve` (stages 1-6).
        params: settings, concrete or traced (vmap over a batch of them).
        food_slots: static, the most food placed in one turn; the shortfall
            is clipped to it, so it is exact when ``food_slots >=
            minimum_food`` for every params of a batch. Default:
            `default_food_slots` (``max(minimum_food, 1)``, which needs a
            concrete ``minimum_food``). It also fixes the number of uniforms
            drawn from ``key``, so two calls agree only with equal
            ``food_slots``.

    Returns:
        bool ``[size * size]``, the new food cells.

    Raises:
        TypeError: ``food_slots`` not given while ``params.minimum_food`` is traced.
        ValueError: ``food_slots < 1``.

    Source: ``maps/standard.go``, ``checkFoodNeedingPlacement`` and
    ``placeFoodRandomly``.
    """
    slots = _slots(params, food_slots)
    return food_from_uniforms(jax.random.uniform(key, (1 + slots,)), board, params, food_slots=slots)


def step(
    board: Board, moves: jax.Array, key: jax.Array, params: Params = DEFAULT_PARAMS, *, food_slots: int | None = None
) -> Board:
    """One full turn with the engine's random food spawn: `rules.resolve`, `food_to_spawn`, `rules.finish_turn`.

    Args:
        board: one board.
        moves: int32 ``[S]`` move codes.
        key: PRNG key for the food.
        params: settings, concrete or traced.
        food_slots: static bound on the food spawned in one turn (`food_to_spawn`).

    Returns:
        The next board.

    Raises:
        TypeError, ValueError: see `food_to_spawn`.
    """
    slots = _slots(params, food_slots)
    resolved = rules.resolve(board, moves, params)
    return rules.finish_turn(resolved, food_to_spawn(key, resolved.board, params, food_slots=slots))


def init_board(key: jax.Array, num_snakes: int, size: int, params: Params = DEFAULT_PARAMS) -> Board:
    """A start board of the standard map: snakes, then food.

    Snakes: health 100, length 3 stacked on a start point; the four corners
    and the four cardinal points are shuffled within their group, and a coin
    decides which group comes first (so 4 snakes use all corners or all
    cardinals). Food (``PlaceFoodFixed``): unless the board is smaller than
    11x11 with more than 4 snakes, one food per snake, in snake order, on a
    diagonal neighbour of its head that is not the centre, not already food,
    further from the centre than the head on at least one axis and not a
    corner; then one food on the centre ``((W-1)//2, (H-1)//2)``.
    ``params.minimum_food`` is not applied at turn 0 (the engine does not).

    Args:
        key: PRNG key.
        num_snakes: static, 1..8.
        size: static board size, 7..25.
        params: unused numeric settings (kept for a uniform signature; may
            be traced). The initial food count is fixed (one per snake plus
            the centre), so no ``food_slots`` is needed here.

    Returns:
        The turn-0 `Board`, no hazards.

    Raises:
        ValueError: bad ``size`` or ``num_snakes`` (`rules.validate_size`).
    """
    del params
    rules.validate_size(size, num_snakes)
    return init_from_uniforms(jax.random.uniform(key, (3 + num_snakes,)), num_snakes, size)


def init_from_uniforms(u: jax.Array, num_snakes: int, size: int) -> Board:
    """`init_board` with its randomness given: ``u`` float32 ``[3 + num_snakes]`` in ``[0, 1)``.

    ``u[0]``, ``u[1]``: the orders of the corners and of the cardinal points
    (one of the 24 permutations each); ``u[2] < 0.5``: corners first;
    ``u[3 + s]``: snake ``s``'s food among its allowed diagonal cells.
    """
    rules.validate_size(size, num_snakes)
    # Static tables: the 8 start points (corners 0-3, cardinals 4-7) and,
    # for each, its allowed initial food cells (-1: not allowed).
    corners, cardinals = start_points(size)
    table = np.concatenate([corners, cardinals])
    options = _food_options(size)
    perms = _PERMUTATIONS  # a uniform shuffle = a uniform row of all 24 orders
    first = jnp.asarray(perms)[jnp.minimum((u[0] * 24).astype(jnp.int32), 23)]
    second = jnp.asarray(perms)[jnp.minimum((u[1] * 24).astype(jnp.int32), 23)] + 4
    order = jnp.where(u[2] < 0.5, jnp.concatenate([first, second]), jnp.concatenate([second, first]))[:num_snakes]
    points = jnp.asarray(table)[order]
    (start,) = rules.materialize((points[:, 0] * size + points[:, 1],))  # see rules.materialize
    cells = jnp.arange(size * size, dtype=jnp.int32)
    body = jnp.where(cells[None] == start[:, None], rules.SNAKE_START_SIZE, 0).astype(rules.body_dtype(size))

    centre = (size - 1) // 2
    food = cells == centre * size + centre
    if num_snakes <= 4 or size * size >= 11 * 11:
        # One food per snake among its options. The options of different
        # start points never share a cell on these boards (asserted in
        # `_food_options`), so the engine's "not already food" never bites
        # and the snakes can choose at once.
        opts = jnp.asarray(options)[order]  # [S, 4]
        ok = opts >= 0
        n_ok = jnp.sum(ok, axis=1)
        k = jnp.minimum((u[3 : 3 + num_snakes] * n_ok).astype(jnp.int32), n_ok - 1)
        j = jnp.argmax(_cumsum(ok.astype(jnp.int32)) > k[:, None], axis=1)
        (chosen,) = rules.materialize((jnp.take_along_axis(opts, j[:, None], axis=1)[:, 0],))
        food = food | jnp.any(cells[None] == chosen[:, None], axis=0)
    return Board(
        head=points.astype(jnp.int32),
        length=jnp.full(num_snakes, rules.SNAKE_START_SIZE, jnp.int32),
        health=jnp.full(num_snakes, rules.SNAKE_MAX_HEALTH, jnp.int32),
        body=body,
        food=food,
        hazards=jnp.zeros(size * size, jnp.int8),
        eliminated_cause=jnp.zeros(num_snakes, jnp.int32),
        eliminated_on_turn=jnp.zeros(num_snakes, jnp.int32),
        eliminated_by=jnp.full(num_snakes, -1, jnp.int32),
        turn=jnp.int32(0),
    )
