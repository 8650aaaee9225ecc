"""Pictures of learning dynamics: directional fields for 2x2 games, simplex plots for 3 actions.

2x2 games are drawn in the unit square with x = P(first action) of player 1
and y = P(first action) of player 2; trajectories start at a bullet and end
at a square (both as in El Kaddouri, Rys & Gao, "Multi Agent Reinforcement
Learning With Dots And Boxes", course report, undated, figure 1). 3-action
games are drawn on the probability simplex of one player, with the field of
the symmetric self-play dynamics (both players at the same strategy).

The field evaluations are compiled once per (field kind, grid size) at
module level (`_field_2x2_grid`, `_simplex_field`); payoffs and the numeric
settings are traced arguments, so drawing many panels does not re-jit.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

from jaxgames.dynamics.fields import vector_field

_SQRT3_2 = np.sqrt(3.0) / 2.0
# Simplex corners: action 0 bottom left, action 1 bottom right, action 2 top.
_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, _SQRT3_2]])
# Speed shading of fields: Greys from 0.45, so the slowest streamlines and arrows are mid grey, not white on white.
_GREYS = matplotlib.colors.ListedColormap(matplotlib.colormaps["Greys"](np.linspace(0.45, 1.0, 128)), name="greys_visible")


def simplex_to_xy(p: np.ndarray) -> np.ndarray:
    """Barycentric ``[..., 3]`` probabilities to 2-D points ``[..., 2]`` in the triangle."""
    return np.asarray(p) @ _CORNERS


@functools.partial(jax.jit, static_argnames=("kind", "grid"))
def _field_2x2_grid(kind, payoffs, grid, temperature, leniency, learning_rate, beta):
    ps = jnp.linspace(0.02, 0.98, grid, dtype=jnp.float32)
    px, py = jnp.meshgrid(ps, ps)

    def one(p, q):
        dx, dy = vector_field(
            kind, payoffs, jnp.stack([p, 1 - p]), jnp.stack([q, 1 - q]),
            temperature=temperature, leniency=leniency, learning_rate=learning_rate, beta=beta,
        )
        return dx[0], dy[0]

    u, v = jax.vmap(jax.vmap(one))(px, py)
    return px, py, u, v


def _field_2x2(kind, payoffs, grid, *, temperature=1.0, leniency=1, learning_rate=1.0, beta=1.0):
    px, py, u, v = _field_2x2_grid(
        kind, jnp.asarray(payoffs, jnp.float32), grid, jnp.float32(temperature), jnp.float32(leniency),
        jnp.float32(learning_rate), jnp.float32(beta),
    )
    return np.asarray(px), np.asarray(py), np.asarray(u), np.asarray(v)


@functools.partial(jax.jit, static_argnames=("kind",))
def _simplex_field(kind, payoffs, points, temperature, leniency, learning_rate, beta):
    kw = dict(temperature=temperature, leniency=leniency, learning_rate=learning_rate, beta=beta)
    return jax.vmap(lambda z: vector_field(kind, payoffs, z, z, **kw)[0])(points)


def plot_field_2x2(ax, kind: str, payoffs, *, grid: int = 21, action_names=None, color=None, linewidth: float = 0.8,
                   density: float = 0.9, **field_kw) -> None:
    """Streamlines of a learning field of a 2x2 game on ``ax``.

    Args:
        ax: a matplotlib Axes.
        kind: a field of `jaxgames.dynamics.fields.FIELDS`.
        payoffs: float ``[2, 2, 2]``.
        grid: points per axis.
        action_names: optional ``(row names, column names)`` for the labels.
        color: one colour for every streamline (None: shaded by speed, from
            mid grey (slowest) to black (fastest), so slow regions stay visible).
        linewidth, density: ``streamplot``'s.
        **field_kw: ``temperature``, ``leniency``, ``learning_rate``, ``beta``.

    Raises:
        ValueError: if the game is not 2x2.
    """
    payoffs = np.asarray(payoffs)
    if payoffs.shape != (2, 2, 2):
        raise ValueError(f"plot_field_2x2 needs a 2x2 game; got payoffs {payoffs.shape}")
    px, py, u, v = _field_2x2(kind, payoffs, grid, **field_kw)
    if color is None:
        speed = np.hypot(u, v)
        ax.streamplot(px, py, u, v, color=speed, cmap=_GREYS, density=density, linewidth=linewidth, arrowsize=0.9)
    else:
        ax.streamplot(px, py, u, v, color=color, density=density, linewidth=linewidth, arrowsize=0.9)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    first = ("first action", "first action") if action_names is None else (action_names[0][0], action_names[1][0])
    ax.set_xlabel(f"player 1: P({first[0]})")
    ax.set_ylabel(f"player 2: P({first[1]})")


def plot_trajectories_2x2(ax, trajectories: np.ndarray, *, color=None, label=None, alpha=0.9, lw: float = 1.4,
                          points: bool = False) -> None:
    """Trajectories ``[K, T, 2]`` of (P1 first action, P2 first action) on ``ax``.

    ``points=True`` draws only the recorded policies (markers, no lines): for
    a learner whose policy jumps (epsilon-greedy), a line between two records
    would draw policies no run took.
    """
    trajectories = np.asarray(trajectories)
    cmap = matplotlib.colormaps["tab10"]
    for k, tr in enumerate(trajectories):
        c = color or cmap(k % 10)
        if points:
            ax.plot(tr[:, 0], tr[:, 1], "o", color=c, ms=3, alpha=alpha, label=label if k == 0 else None)
        else:
            ax.plot(tr[:, 0], tr[:, 1], color=c, lw=lw, alpha=alpha, label=label if k == 0 else None)
        ax.plot(tr[0, 0], tr[0, 1], "o", color=c, ms=5)
        ax.plot(tr[-1, 0], tr[-1, 1], "s", color=c, ms=5, mec="k", mew=0.6)


def plot_simplex(ax, kind: str, payoffs, *, grid: int = 14, action_names=("0", "1", "2"), **field_kw) -> None:
    """Arrows of the symmetric self-play field of a 3-action game on its simplex.

    At each grid point p both players play p (the game's symmetric dynamics);
    the arrow is player 1's ``x'``. ``grid=0`` draws the triangle only.

    Raises:
        ValueError: if the game is not 3x3.
    """
    payoffs = np.asarray(payoffs)
    if payoffs.shape != (2, 3, 3):
        raise ValueError(f"plot_simplex needs a 3x3 game; got payoffs {payoffs.shape}")
    _draw_triangle(ax, action_names)
    if grid < 1:
        return
    pts = []
    for i in range(grid + 1):
        for j in range(grid + 1 - i):
            k = grid - i - j
            pts.append((i + 0.3, j + 0.3, k + 0.3))
    p = np.asarray(pts, np.float32)
    p /= p.sum(1, keepdims=True)
    kw = dict(temperature=1.0, leniency=1, learning_rate=1.0, beta=1.0) | field_kw
    d = _simplex_field(kind, jnp.asarray(payoffs, jnp.float32), jnp.asarray(p), *(jnp.float32(kw[k]) for k in
                       ("temperature", "leniency", "learning_rate", "beta")))
    d = np.asarray(d)
    xy = simplex_to_xy(p)
    dxy = d @ _CORNERS  # directions: the corners' linear map (sum of d is 0)
    speed = np.linalg.norm(dxy, axis=1)
    scale = np.where(speed > 0, 1.0 / (speed + 1e-12), 0.0)[:, None]
    ax.quiver(xy[:, 0], xy[:, 1], dxy[:, 0] * scale[:, 0], dxy[:, 1] * scale[:, 0], speed, cmap=_GREYS, scale=28,
              width=0.004)


def _draw_triangle(ax, action_names) -> None:
    tri = np.vstack([_CORNERS, _CORNERS[:1]])
    ax.plot(tri[:, 0], tri[:, 1], "k-", lw=1)
    for corner, name, off in zip(_CORNERS, action_names, ((-0.06, -0.05), (0.02, -0.05), (-0.02, 0.03))):
        ax.text(corner[0] + off[0], corner[1] + off[1], name)
    ax.set_aspect("equal")
    ax.axis("off")


def plot_trajectories_simplex(ax, trajectories: np.ndarray, *, color=None, label=None, alpha=1.0, lw: float = 1.2,
                              points: bool = False) -> None:
    """Trajectories ``[K, T, 3]`` of probabilities on the simplex drawn by `plot_simplex`.

    ``points=True`` draws only the recorded policies, as `plot_trajectories_2x2` does.
    """
    cmap = matplotlib.colormaps["tab10"]
    for k, tr in enumerate(np.asarray(trajectories)):
        xy = simplex_to_xy(tr)
        c = color or cmap(k % 10)
        if points:
            ax.plot(xy[:, 0], xy[:, 1], "o", color=c, ms=3, alpha=alpha, label=label if k == 0 else None)
        else:
            ax.plot(xy[:, 0], xy[:, 1], color=c, lw=lw, alpha=alpha, label=label if k == 0 else None)
        ax.plot(xy[0, 0], xy[0, 1], "o", color=c, ms=4)
        ax.plot(xy[-1, 0], xy[-1, 1], "s", color=c, ms=4, mec="k", mew=0.6)


def plot_arrows_2x2(ax, points: np.ndarray, velocity: np.ndarray, *, color="crimson", label=None, scale=None,
                    length: float = 0.08, power: float = 1.0, width: float = 0.005, zorder: float = 4) -> None:
    """Arrows of a measured (or any) flow of a 2x2 game on ``ax``.

    Args:
        ax: a matplotlib Axes (the unit square of `plot_field_2x2`).
        points: ``[P, 2]``, (P1 first action, P2 first action).
        velocity: ``[P, 2]``, their time derivatives (any unit); arrows are
            scaled together so their lengths compare.
        color, label, width, zorder: matplotlib arguments (``width`` in
            fractions of the plot width).
        scale: the speed drawn ``length`` long (None: this call's fastest),
            so that several calls can share one scale.
        length: the drawn length of an arrow of speed ``scale`` (axis units).
        power: drawn length proportional to speed**power (1: linear; 0.5
            lets slow arrows stay visible beside fast ones; the direction is
            never changed).
    """
    points, velocity = np.asarray(points, np.float64), np.asarray(velocity, np.float64)
    speed = np.hypot(velocity[:, 0], velocity[:, 1])
    scale = scale or float(np.max(speed)) or 1.0
    drawn = length * (speed / scale) ** power
    unit = velocity / np.where(speed > 0, speed, 1.0)[:, None]
    ax.quiver(points[:, 0], points[:, 1], unit[:, 0] * drawn, unit[:, 1] * drawn, color=color, label=label,
              angles="xy", scale_units="xy", scale=1.0, width=width, zorder=zorder)
