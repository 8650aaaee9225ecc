"""The AlphaSnake Zero Q-network: a conv stack over the rotated egocentric view, 3 sigmoid win rates.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game" (University of Victoria report,
undated), section 3 (the 21x21x3 view, the three relative actions, Q read
as a win rate) and section 4 (6 convolutions of 32, 32, 64, 64, 128, 128
filters of 3x3, batch normalisation between the weights and the ``selu``
activation).

The report does not say how the conv stack reaches the 3 outputs: here the
last feature map ``[2H-1, 2W-1, C]`` is flattened into a dense layer. The
view is egocentric and rotated, so *where* a feature lies relative to the
head is what tells turn left from turn right; global pooling would lose it,
and the centre cell alone sees only 13x13 cells. The price: the readout is
tied to the view size (`jaxgames.agents.q_snake.fit_view` pads or crops
views of other board sizes).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxgames.games.battlesnake import observe, rules
from jaxgames.games.battlesnake.rules import Board
from jaxgames.networks.conv import conv

PAPER_FEATURES = (32, 32, 64, 64, 128, 128)
"""Filters of the six 3x3 convolutions of Siddiqui et al., section 4."""

NUM_RELATIVE_ACTIONS = 3
"""Turn left, straight, turn right (`jaxgames.games.battlesnake.observe.TURN_LEFT` ...)."""


def rotated_views(board: Board, head_multiplier: float = 0.1, body_multiplier: float = 0.1) -> jax.Array:
    """Every snake's egocentric view (Siddiqui et al., eqs. 1-3), clipped to [-1, 1] and rotated to face up: the network's input.

    `observe.egocentric` with the given head and body multipliers (food:
    ``1 / 100``, eq. 3), clipped to [-1, 1], then `observe.rotate_to_facing`
    each snake's `rules.facing`. The default 0.1 rather than the strict
    ``1 / (H W + 1)``, which makes bodies nearly invisible to the network
    (``jaxgames/weights/q_snake/README.md``, "View scale").

    Args:
        board: one board.
        head_multiplier, body_multiplier: the scale of eqs. 1 and 2.

    Returns:
        float32 ``[S, 2H-1, 2W-1, 3]``.
    """
    ego = observe.egocentric(board, head_multiplier=head_multiplier, body_multiplier=body_multiplier, food_multiplier=0.01)
    ego = jnp.clip(ego, -1.0, 1.0)
    return jax.vmap(observe.rotate_to_facing)(ego, rules.facing(board))


def validate_features(features) -> tuple[int, ...]:
    """Checks a conv stack's filter counts at the Python boundary.

    Args:
        features: a non-empty sequence of positive ints.

    Returns:
        The features as a tuple of ints.

    Raises:
        TypeError, ValueError: naming the bad value.
    """
    if isinstance(features, (str, bytes)) or not isinstance(features, Sequence):
        raise TypeError(f"features must be a sequence of positive ints; got {features!r}")
    out = tuple(features)
    if not out:
        raise ValueError("features must name at least one convolution; got ()")
    for f in out:
        if isinstance(f, bool) or not isinstance(f, int) or f < 1:
            raise ValueError(f"features must be positive ints; got {features!r}")
    return out


class QSnakeNet(nn.Module):
    """Conv stack -> flatten -> dense -> sigmoid: Q-values of the three relative actions (Siddiqui et al., section 4).

    Each block is ``Conv(f, 3x3, SAME, no bias) -> BatchNorm -> selu`` (the
    bias is dropped because batch norm's shift replaces it). The convolutions
    are XLA's; only their kernel gradient is computed another way
    (`jaxgames.networks.conv`: the same sum, about 3-5x faster on the CPU at
    64-128 filters; equal up to float32 rounding). Batch
    statistics live in the ``batch_stats`` collection: ``train=True`` uses
    the minibatch's statistics and updates the running averages
    (``mutable=["batch_stats"]``); ``train=False`` uses the running averages
    (self-play, the pit, agents).

    Attributes:
        features: filters per convolution (`PAPER_FEATURES` by default; a
            smaller stack, e.g. ``(16, 16, 16)``, for CPU runs).
        momentum: batch norm's running-average momentum.

    Call:
        views: float32 ``[..., 2H-1, 2W-1, 3]``: rotated egocentric views
            (`jaxgames.games.battlesnake.observe.observe` with ``rotated=True``).
        train: bool (static).

    Returns:
        float32 ``[..., 3]`` in ``(0, 1)``: the estimated win rate of turn
        left, straight and turn right.
    """

    features: tuple[int, ...] = PAPER_FEATURES
    momentum: float = 0.9

    @nn.compact
    def __call__(self, views: jax.Array, *, train: bool = False) -> jax.Array:
        lead = views.shape[:-3]
        x = views.reshape((-1,) + views.shape[-3:]).astype(jnp.float32)
        for f in self.features:
            x = nn.Conv(f, (3, 3), padding="SAME", use_bias=False, conv_general_dilated=conv)(x)
            x = nn.BatchNorm(use_running_average=not train, momentum=self.momentum)(x)
            x = nn.selu(x)
        x = x.reshape((x.shape[0], -1))
        logits = nn.Dense(NUM_RELATIVE_ACTIONS)(x)
        return jax.nn.sigmoid(logits).reshape(lead + (NUM_RELATIVE_ACTIONS,))


def init_variables(net: QSnakeNet, key: jax.Array, view_shape: tuple[int, int, int]) -> dict:
    """``{"params", "batch_stats"}`` of a fresh network for views of ``view_shape`` ``(2H-1, 2W-1, 3)``."""
    variables = net.init(key, jnp.zeros((1,) + tuple(view_shape), jnp.float32), train=False)
    return {"params": variables["params"], "batch_stats": variables["batch_stats"]}


def variable_shapes(variables) -> dict:
    """``{path: shape}`` of every leaf: what a checkpoint or a weights file must match."""
    flat = jax.tree_util.tree_flatten_with_path(variables)[0]
    return {jax.tree_util.keystr(p): tuple(getattr(v, "shape", ())) for p, v in flat}
