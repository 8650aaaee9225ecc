"""Encodings for learning: the egocentric observation, rotation, relative actions, reflections.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game" (University of Victoria report,
undated), section 3, equations (1)-(3).

Observation layout. An egocentric view is float32 ``[2H-1, 2W-1, 3]`` (21 x 21
x 3 on 11 x 11) in image orientation: row 0 is up (largest ``y``), column 0
is left (smallest ``x``), and the observer's head is the centre
``[H-1, W-1]``; row ``r``, column ``c`` shows the cell ``(head_x + c - (W-1),
head_y + (H-1) - r)``. Channels:

0. heads of living snakes (the observer's own included):
   ``(length - own length + 0.5) * head_multiplier`` (eq. 1);
1. walls (every cell off the board) 1, and every segment of a living snake
   ``turns until the segment leaves * body_multiplier`` (eq. 2; the head
   counts ``length``, a tail doubled by eating 2);
2. food: ``(101 - own health) * food_multiplier`` (eq. 3).

The default multipliers keep values in ``[-1, 1]``: ``1 / (H W + 1)`` for
heads and bodies (only a snake at `rules.max_length`, ``H W + 2``, goes just
past 1), ``1 / 100`` for food.

Rotation: `rotate_to_facing` turns the view so the snake faces up (row 0);
then the actions are relative, `TURN_LEFT`, `STRAIGHT`, `TURN_RIGHT`
(0, 1, 2), mapped to and from absolute moves by `relative_to_absolute` and
`absolute_to_relative`. Reflections (`reflect`) mirror left-right and swap
``TURN_LEFT``/``TURN_RIGHT``; `transform_observation`/`transform_move` give
all eight symmetries of an unrotated view.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgames.games.battlesnake import rules
from jaxgames.games.battlesnake.rules import Board

TURN_LEFT, STRAIGHT, TURN_RIGHT = 0, 1, 2
"""Relative actions of the rotated view (Siddiqui et al., section 3)."""


def default_multipliers(size: int) -> tuple[float, float, float]:
    """``(head, body, food)`` multipliers keeping the channels in ``[-1, 1]``."""
    m = 1.0 / (size * size + 1)
    return m, m, 1.0 / 100.0


def _image(grid: jax.Array, size: int) -> jax.Array:
    """A flat grid ``[size * size]`` -> ``[H, W]`` image, row 0 = largest ``y``."""
    return jnp.flip(jnp.swapaxes(grid.reshape(size, size), -1, -2), axis=-2)


def egocentric(
    board: Board,
    *,
    head_multiplier: float | None = None,
    body_multiplier: float | None = None,
    food_multiplier: float | None = None,
) -> jax.Array:
    """Every snake's egocentric view of one board (Siddiqui et al., eqs. 1-3).

    Args:
        board: one board.
        head_multiplier, body_multiplier, food_multiplier: scale factors
            (default: `default_multipliers`).

    Returns:
        float32 ``[S, 2H-1, 2W-1, 3]`` (module docstring). An eliminated
        snake's view is centred on its frozen head (which may be one cell
        off the board).
    """
    size = board.size
    dh, db, dfood = default_multipliers(size)
    mh = dh if head_multiplier is None else head_multiplier
    mb = db if body_multiplier is None else body_multiplier
    mf = dfood if food_multiplier is None else food_multiplier
    alive = board.alive
    x, y = rules.cell_coords(size)
    is_head = (x[None] == board.head[:, 0, None]) & (y[None] == board.head[:, 1, None]) & alive[:, None]
    head_len = jnp.max(jnp.where(is_head, board.length[:, None], 0), axis=0).astype(jnp.float32)
    head_present = jnp.any(is_head, axis=0).astype(jnp.float32)
    body = jnp.sum(jnp.where(alive[:, None], board.body.astype(jnp.float32), 0.0), axis=0) * mb
    flat = [head_present, head_len, body, board.food.astype(jnp.float32)]
    layers = jnp.stack([_image(g, size) for g in flat], -1)
    # Pad by `size` (not size - 1) so that a head one cell off the board (a
    # snake eliminated by a wall) still gets an exact view.
    pad = size
    padded = jnp.pad(layers, ((pad, pad), (pad, pad), (0, 0)))
    padded = padded.at[..., 2].set(jnp.pad(layers[..., 2], pad, constant_values=1.0))

    def view(head, length, health):
        top = size - head[1]
        left = head[0] + 1
        w = jax.lax.dynamic_slice(padded, (top, left, jnp.zeros_like(top)), (2 * size - 1, 2 * size - 1, 4))
        heads = w[..., 0] * (w[..., 1] - length.astype(jnp.float32) + 0.5) * mh
        food = w[..., 3] * (101.0 - health.astype(jnp.float32)) * mf
        return jnp.stack([heads, w[..., 2], food], -1)

    return jax.vmap(view)(board.head, board.length, board.health)


def _rot(obs: jax.Array, k: jax.Array) -> jax.Array:
    """``np.rot90(obs, k)`` (counter-clockwise) over the two view axes, traced ``k``."""
    return jax.lax.switch(jnp.asarray(k, jnp.int32) % 4, [lambda o, i=i: jnp.rot90(o, i, axes=(-3, -2)) for i in range(4)], obs)


def rotate_to_facing(obs: jax.Array, facing: jax.Array) -> jax.Array:
    """Rotates one view ``[2H-1, 2W-1, C]`` so a snake facing ``facing`` (a move code) faces up.

    Facing right, the view turns a quarter counter-clockwise, and so on
    (``k = facing``). Use `jaxgames.games.battlesnake.rules.facing` for
    ``facing`` (``UP`` while the body is stacked).
    """
    return _rot(obs, facing)


def relative_to_absolute(relative: jax.Array, facing: jax.Array) -> jax.Array:
    """int32: the absolute move code of a relative action (0 left, 1 straight, 2 right)."""
    return ((facing + relative - 1) % 4).astype(jnp.int32)


def absolute_to_relative(move: jax.Array, facing: jax.Array) -> jax.Array:
    """int32: the relative action of an absolute move, or -1 for the move back into the neck."""
    r = (move - facing + 1) % 4
    return jnp.where(r == 3, -1, r).astype(jnp.int32)


def reflect(obs: jax.Array) -> jax.Array:
    """Mirrors a view left-right (``[..., rows, cols, C]``); pair with `reflect_relative`."""
    return jnp.flip(obs, axis=-2)


def reflect_relative(relative: jax.Array) -> jax.Array:
    """Swaps turn-left and turn-right (also reverses a ``[..., 3]`` Q-vector with ``q[..., ::-1]``)."""
    return (2 - relative).astype(jnp.int32)


def transform_observation(obs: jax.Array, k: int, flip: bool) -> jax.Array:
    """One of the eight symmetries of an unrotated view: ``k`` quarter turns counter-clockwise, then a left-right mirror if ``flip``."""
    out = jnp.rot90(obs, k, axes=(-3, -2))
    return reflect(out) if flip else out


def transform_move(move: jax.Array, k: int, flip: bool) -> jax.Array:
    """The absolute move code matching `transform_observation` (``RIGHT`` -> ``UP`` for ``k = 1``)."""
    out = (move - k) % 4
    return jnp.where(flip, (4 - out) % 4, out).astype(jnp.int32)


def observe(board: Board, *, rotated: bool = False, **multipliers) -> jax.Array:
    """The Env observation: `egocentric` views, optionally rotated to face up.

    Args:
        board: one board.
        rotated: rotate each view by the snake's `rules.facing`.
        **multipliers: passed to `egocentric`.

    Returns:
        float32 ``[S, 2H-1, 2W-1, 3]``.
    """
    obs = egocentric(board, **multipliers)
    if rotated:
        obs = jax.vmap(rotate_to_facing)(obs, rules.facing(board))
    return obs
