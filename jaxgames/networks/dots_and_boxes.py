"""A policy-value network for Dots-and-Boxes that plays every board size with one parameter set.

A **fully convolutional residual network over the dot grid** with global
pooling. El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With
Dots And Boxes" (course report), section 6.2, propose a GNN for size
independence; on this regular lattice a 3x3 convolution already is a
message-passing layer with one weight per neighbour direction (which a GNN
would need edge types for), and nothing depends on the board size: ``SAME``
convolutions with mask planes, per-edge policy logits from two 1x1
convolution planes, and a value from global mean/max pooling. Each residual
block adds a global-pooling bias (KataGo: Wu 2019, arXiv:1902.10565, section
3.2), so every cell sees the whole board after one block, which chain
counting (El Kaddouri et al., sections 4.3 and 5.4) needs on boards wider
than the receptive field.

Input features, float32 ``[R + 1, C + 1, NUM_FEATURES]`` computed from the
observation by `features` (cells beyond a row/column of edges or boxes are 0):

====  =============================================================
ch    meaning
====  =============================================================
0-1   horizontal / vertical edge drawn (observation channels 0-1)
2-3   box owned by the player to move / by the opponent
4     drawn sides of the box / 4
5     box has 3 sides (capturable now)
6     box has 2 sides (a move on it makes it capturable)
7-9   cell holds a horizontal edge / a vertical edge / a box (masks)
10    (boxes of the mover - boxes of the opponent) / num_boxes, broadcast
11    boxes still open / num_boxes, broadcast
====  =============================================================

Outputs: policy logits float32 ``[num_edges]`` in the environment's action
order (horizontal edges ``r * C + c``, then vertical edges) and a value in
``[-1, 1]`` (tanh) from the side of the player to move. The learner decides
what the value means (final outcome, or final box margin / num_boxes).
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes.env import NUM_PLANES
from jaxgames.networks.widths import NetworkWidths

NUM_FEATURES = 12
"""Input channels of the trunk (see the module docstring)."""


@dataclasses.dataclass(frozen=True)
class NetworkConfig(NetworkWidths):
    """Widths of `PolicyValueNet` (they fix the parameter shapes; the board size does not).

    Fields, checks and errors: `jaxgames.networks.widths.NetworkWidths` (errors name
    ``NetworkConfig.<field>``). Defaults: 32 channels (small enough for CPU), 4
    residual blocks, 16 value channels, 64 value hidden units.
    """

    channels: int = 32
    num_blocks: int = 4
    value_channels: int = 16
    value_hidden: int = 64


def features(observation: jax.Array) -> jax.Array:
    """The trunk's input planes from observations (layout in the module docstring).

    Args:
        observation: float32 ``[..., R + 1, C + 1, 5]``: `DotsAndBoxes` observations
            (any leading batch shape; the board size is read from the shape).

    Returns:
        float32 ``[..., R + 1, C + 1, NUM_FEATURES]``.

    Raises:
        ValueError: the last axis is not 5 or the grid is smaller than 2x2
            (checked at trace time).
    """
    if observation.ndim < 3 or observation.shape[-1] != NUM_PLANES or min(observation.shape[-3:-1]) < 2:
        raise ValueError(
            f"expected Dots-and-Boxes observations [..., R + 1, C + 1, {NUM_PLANES}] with R, C >= 1; got shape {observation.shape}"
        )
    obs = observation.astype(jnp.float32)
    Rp1, Cp1 = obs.shape[-3], obs.shape[-2]
    i = np.arange(Rp1)[:, None]
    j = np.arange(Cp1)[None, :]
    h_mask = np.broadcast_to(j < Cp1 - 1, (Rp1, Cp1))
    v_mask = np.broadcast_to(i < Rp1 - 1, (Rp1, Cp1))
    box_mask = h_mask & v_mask
    masks = jnp.asarray(np.stack([h_mask, v_mask, box_mask], axis=-1).astype(np.float32))
    masks = jnp.broadcast_to(masks, obs.shape[:-1] + (3,))
    sides = obs[..., 4]
    box = jnp.asarray(box_mask, jnp.float32)
    num_boxes = float((Rp1 - 1) * (Cp1 - 1))
    mine = jnp.sum(obs[..., 2], axis=(-2, -1))
    theirs = jnp.sum(obs[..., 3], axis=(-2, -1))
    open_boxes = jnp.sum(box * (sides < 4), axis=(-2, -1))
    margin = (mine - theirs) / num_boxes
    remaining = open_boxes / num_boxes
    plane = lambda x: jnp.broadcast_to(x[..., None, None], obs.shape[:-1])  # noqa: E731
    out = jnp.concatenate(
        [
            obs[..., :4],
            (sides / 4.0)[..., None],
            (box * (sides == 3))[..., None],
            (box * (sides == 2))[..., None],
            masks,
            plane(margin)[..., None],
            plane(remaining)[..., None],
        ],
        axis=-1,
    )
    chex.assert_shape(out, obs.shape[:-1] + (NUM_FEATURES,))
    return out


@jax.custom_jvp
def _grid_max(x: jax.Array) -> jax.Array:
    """``[N, P, F] -> [N, F]``: ``jnp.max`` over axis 1; its derivative is the tangent at the first arg-max."""
    return jnp.max(x, axis=1)


@_grid_max.defjvp
def _grid_max_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    first = jnp.arange(x.shape[1])[None, :, None] == jnp.argmax(x, axis=1)[:, None, :]  # [N, P, F]: one True per (n, f)
    return jnp.max(x, axis=1), jnp.sum(jnp.where(first, dx, 0.0), axis=1)


def global_pool(x: jax.Array) -> jax.Array:
    """float ``[N, H, W, F] -> [N, 2F]``: mean and max over the grid (KataGo's global pooling, Wu 2019).

    The max's gradient goes to its first arg-max cell. ``jnp.max``'s own
    divides by the number of cells equal to the max, and XLA may compute
    ``x`` twice with different rounding (on CPU at
    ``--xla_backend_optimization_level=0``): no cell equals it, and the
    gradient is 0 / 0. The values are ``jnp.max``'s.
    """
    return jnp.concatenate([jnp.mean(x, axis=(1, 2)), _grid_max(x.reshape(x.shape[0], -1, x.shape[-1]))], axis=-1)


class ResidualBlock(nn.Module):
    """Pre-activation residual block with a global-pooling bias (KataGo, Wu 2019).

    Built with ``name=f"_Block_{i}"`` by the networks: the parameter names of the shipped weights.
    """

    channels: int

    @nn.compact
    def __call__(self, x):
        y = nn.relu(nn.LayerNorm()(x))
        y = nn.Conv(self.channels, (3, 3), padding="SAME")(y)
        bias = nn.Dense(self.channels)(global_pool(y))
        y = y + bias[:, None, None, :]
        y = nn.relu(nn.LayerNorm()(y))
        y = nn.Conv(self.channels, (3, 3), padding="SAME", kernel_init=nn.initializers.zeros)(y)
        return x + y


class PolicyValueNet(nn.Module):
    """Policy logits per edge and a value, for any board size (module docstring).

    Attributes:
        config: the `NetworkConfig` (widths).

    Call:
        ``net.apply(params, observation)`` with observation float32
        ``[..., R + 1, C + 1, 5]`` returns ``(logits, value)``: float32
        ``[..., num_edges]`` (``num_edges = (R + 1) C + R (C + 1)``, action
        order of `DotsAndBoxes`) and float32 ``[...]`` in ``[-1, 1]``.
    """

    config: NetworkConfig = NetworkConfig()

    @nn.compact
    def __call__(self, observation):
        x = features(observation)
        batch = x.shape[:-3]
        Rp1, Cp1 = x.shape[-3], x.shape[-2]
        R, C = Rp1 - 1, Cp1 - 1
        x = x.reshape((-1, Rp1, Cp1, NUM_FEATURES))
        cfg = self.config
        x = nn.Conv(cfg.channels, (3, 3), padding="SAME")(x)
        for i in range(cfg.num_blocks):
            x = ResidualBlock(cfg.channels, name=f"_Block_{i}")(x)
        x = nn.relu(nn.LayerNorm()(x))
        # Policy: one logit plane for horizontal edges, one for vertical edges.
        p = nn.Conv(2, (1, 1))(x)
        h_logits = p[:, :, :C, 0].reshape((-1, Rp1 * C))
        v_logits = p[:, :R, :, 1].reshape((-1, R * Cp1))
        logits = jnp.concatenate([h_logits, v_logits], axis=-1)
        # Value: 1x1 convolution, global mean and max pooling, a hidden layer, tanh.
        v = nn.relu(nn.Conv(cfg.value_channels, (1, 1))(x))
        v = nn.relu(nn.Dense(cfg.value_hidden)(global_pool(v)))
        value = jnp.tanh(nn.Dense(1)(v)[:, 0])
        return logits.reshape(batch + logits.shape[-1:]), value.reshape(batch)


def init_params(config: NetworkConfig, key: jax.Array) -> dict:
    """Fresh parameters of `PolicyValueNet` (independent of the board; initialised on a 2x2 board).

    Jitted once per config (one compile instead of one per primitive of Flax's eager init).
    """
    return _jitted_init(config)(key)


@functools.lru_cache(maxsize=16)
def _jitted_init(config: NetworkConfig):
    # The example input is made inside the jitted function: built outside, a first call under
    # another trace (init_state in a jitted learner) would close over, and cache, a tracer.
    return jax.jit(lambda key: PolicyValueNet(config).init(key, jnp.zeros((1, 3, 3, NUM_PLANES), jnp.float32)))


@functools.lru_cache(maxsize=16)
def _expected_leaves(config: NetworkConfig) -> tuple:
    """``(path, ShapeDtypeStruct)`` of every parameter of `PolicyValueNet(config)` (abstract: nothing computed)."""
    obs = jax.ShapeDtypeStruct((1, 3, 3, NUM_PLANES), jnp.float32)
    shapes = jax.eval_shape(lambda k, o: PolicyValueNet(config).init(k, o), jax.random.key(0), obs)
    return tuple(jax.tree_util.tree_leaves_with_path(shapes))


def check_params(params, config: NetworkConfig, *, what: str = "parameters") -> None:
    """Raises unless ``params`` have exactly the tree and shapes of `PolicyValueNet(config)`.

    Args:
        params: a parameter pytree (e.g. loaded from a checkpoint or a weights file).
        config: the `NetworkConfig` they are claimed to belong to.
        what: how to name them in the message (e.g. the file they came from).

    Raises:
        ValueError: a different tree structure or a leaf of another shape or
            dtype (the message names the first mismatching leaf and both shapes).
    """
    exp_leaves = _expected_leaves(config)
    try:
        got_leaves = jax.tree_util.tree_leaves_with_path(params)
    except Exception as e:  # pragma: no cover - a non-pytree
        raise ValueError(f"{what} are not a parameter tree: {e}") from None
    exp_paths = [jax.tree_util.keystr(p) for p, _ in exp_leaves]
    got_paths = [jax.tree_util.keystr(p) for p, _ in got_leaves]
    if exp_paths != got_paths:
        missing = sorted(set(exp_paths) - set(got_paths))[:3]
        extra = sorted(set(got_paths) - set(exp_paths))[:3]
        raise ValueError(
            f"{what} do not fit the network {config}: missing leaves {missing}, unexpected leaves {extra}"
        )
    for (path, e), (_, g) in zip(exp_leaves, got_leaves):
        if tuple(np.shape(g)) != tuple(e.shape):
            raise ValueError(
                f"{what} do not fit the network {config}: leaf {jax.tree_util.keystr(path)} has shape "
                f"{tuple(np.shape(g))}, the network needs {tuple(e.shape)}"
            )


VALUE_TARGETS = ("margin", "outcome")
"""What the value output is trained to predict, from the side of the player to move:
``"margin"``: the final box margin / num_boxes; ``"outcome"``: the final result +1/-1/0."""


def check_value_target(value_target: str) -> str:
    """Returns ``value_target`` or raises ``ValueError`` naming it (choices: `VALUE_TARGETS`)."""
    if value_target not in VALUE_TARGETS:
        raise ValueError(f"value_target must be one of {VALUE_TARGETS}; got {value_target!r}")
    return value_target


def value_scale(value_target: str, num_boxes: int) -> float:
    """Reward units per unit of network value: ``num_boxes`` for ``"margin"``, 1 for ``"outcome"``."""
    return float(num_boxes) if check_value_target(value_target) == "margin" else 1.0


def make_evaluate(config: NetworkConfig, value_target: str = "margin"):
    """The ``evaluate(params, states)`` that `jaxgames.search.mcts.network_search` calls.

    The search runs on a `DotsAndBoxes` whose rewards are in the units the
    value was trained on: ``utility_margin=True`` for ``"margin"`` (the final
    reward is the box margin, so the value is scaled by num_boxes) and
    ``utility_margin=False`` for ``"outcome"``.

    Args:
        config: the network's widths.
        value_target: one of `VALUE_TARGETS`.

    Returns:
        ``evaluate(params, states) -> (logits float32 [B, num_edges], value float32 [B])``,
        the value from the side of each state's player to move, in reward units.

    Raises:
        ValueError: an unknown ``value_target``.
    """
    check_value_target(value_target)
    net = PolicyValueNet(config)

    def evaluate(params, states):
        obs = states.observation
        num_boxes = (obs.shape[-3] - 1) * (obs.shape[-2] - 1)
        logits, value = net.apply(params, obs)
        return logits, value * value_scale(value_target, num_boxes)

    return evaluate
