"""DDPG networks for Onitama: eight actor variants and the shared critic (Flax linen).

Source: Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
Learning" (NUS USP group report, 2021), section 5 (5.2 the
``Actor_Preprocess`` / ``Critic_Preprocess`` blocks and the critic, 5.3-5.5
the variants); inputs are their observation of section 4.1 (260 floats,
``jaxgames.make("onitama", action_space="paper")``), outputs their 40 actions
(section 4.2). Every module takes observations ``[..., 260]`` (any leading
axes, none included) and returns float32 arrays with the same leading axes.

**Actor variants** (`VARIANTS`). ``P`` is the preprocess block (`Preprocess`),
``A`` the *actions layer* (``Dense(40)`` then softmax: a probability vector)
and ``V`` the *validity layer* (``Dense(40)`` then sigmoid: the predicted
legal-move mask, trained towards the true mask by the validity loss).
``normalise(u) = u / sum(u)`` (the report's re-normalisation, section 5.4).

======================================  ==================================================  ============
variant                                 structure (``policy`` is what the agent plays)     section
======================================  ==================================================  ============
``val_after_actions``                   ``a = A(P(s))``, ``v = V(a)``, policy ``a``        5.3, fig 5.5a
``actions_after_val``                   ``v = V(P(s))``, ``a = A(v)``, policy ``a``        5.3, fig 5.5b
``val_branch_actions``                  ``a = A(P(s))``, ``v = V(P(s))``, policy ``a``     5.3, fig 5.6
``val_after_actions_multiply``          as ``val_after_actions``, policy ``normalise(a*v)``  5.4, fig 5.7
``actions_after_val_multiply``          as ``actions_after_val``, policy ``normalise(a*v)``  5.4, fig 5.8
``val_branch_actions_multiply``         as ``val_branch_actions``, policy ``normalise(a*v)`` 5.4, fig 5.9
``dual``                                ``a = A(P_a(s))``, ``v = V(P_v(s))`` with two      5.5, fig 5.10
                                        preprocess blocks (no shared weights), policy
                                        ``normalise(a*v)``
``actions_only``                        ``a = A(P(s))``, policy ``a``, no validity layer   5.5, fig 5.11
======================================  ==================================================  ============

"Then" in ``val_after_actions`` / ``actions_after_val`` means the second
layer reads the first layer's *output* (softmax, resp. sigmoid), as figures
5.5a-b draw it. The hand of god (section 5.1) is `hand_of_god`.

**Deviations from the report:**

* *Normalisation.* The report batch-normalises each convolution; here
  ``norm="layer"`` (default) or ``"none"``, because BatchNorm would make an
  example's output depend on the rest of the batch and add a mutable
  collection to every call. A choice, not a claim of equal results.
* *Critic action width.* Section 5.2 says the action enters the critic as a
  "(4,1) vector"; it is the 40-entry action vector (section 4.2), as the
  report's own total of 178 = 128 + 10 + 40 confirms.
* ``dual``: the report plans to freeze the validity network at a valid rate
  of e.g. 95% but uses no threshold in section 6.1; nothing is frozen here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.onitama.env import NUM_PAPER_ACTIONS, PAPER_OBSERVATION_SIZE, split_paper_observation
from jaxgames.networks.conv import conv

VARIANTS: tuple[str, ...] = (
    "val_after_actions",
    "actions_after_val",
    "val_branch_actions",
    "val_after_actions_multiply",
    "actions_after_val_multiply",
    "val_branch_actions_multiply",
    "dual",
    "actions_only",
)
"""Dasgupta & Chong's eight actor variants (section 5; the order of their figures 6.1-6.8 differs)."""

NORMS = ("layer", "none")
"""Normalisations after each convolution (module docstring: why not BatchNorm)."""

NUM_ACTIONS = NUM_PAPER_ACTIONS
"""40: Dasgupta & Chong's action space (section 4.2)."""

KERNEL_INIT = nn.initializers.lecun_uniform()
"""Kernels start LeCun-uniform (the variance of Flax's default LeCun-normal); `init_variables`
draws them all at once, which is how the learner and tests initialise (compile time)."""


def has_validity(variant: str) -> bool:
    """True for every variant with a validity layer (all but ``actions_only``)."""
    return variant != "actions_only"


def is_multiply(variant: str) -> bool:
    """True for the variants whose policy is the renormalised product ``a * v`` (section 5.4, 5.5)."""
    return variant.endswith("_multiply") or variant == "dual"


def normalise(u: jax.Array) -> jax.Array:
    """``u / sum(u)`` over the last axis (the report's re-normalisation, section 5.4); zeros stay zeros.

    Args:
        u: float32 ``[..., 40]``, non-negative.

    Returns:
        float32 ``[..., 40]`` summing to 1 (or all zeros where ``u`` is all zeros,
        e.g. a product that underflowed; the agent then falls back to the
        legal mask, `jaxgames.agents.ddpg`).
    """
    total = jnp.sum(u, axis=-1, keepdims=True)
    return u / jnp.maximum(total, jnp.finfo(u.dtype).tiny)


def max_pool_2x2(x: jax.Array) -> jax.Array:
    """``nn.max_pool(x, (2, 2), strides=(2, 2), padding="VALID")`` over ``[N, H, W, C]``, as three selects.

    The same values, and the same gradient: each window's cotangent goes to its
    first maximum in row-major order, as XLA's ``select_and_scatter`` (the
    gradient of ``reduce_window``) gives it. On XLA's CPU backend the
    ``reduce_window`` and its ``select_and_scatter`` gradient on these 5x5 and
    2x2 maps cost about a seventh of a DDPG update (``benchmarks/networks.py``);
    the selects fuse with their neighbours.
    """
    h, w = (x.shape[1] // 2) * 2, (x.shape[2] // 2) * 2
    m = x[:, 0:h:2, 0:w:2]
    for i, j in ((0, 1), (1, 0), (1, 1)):
        y = x[:, i:h:2, j:w:2]
        m = jnp.where(m >= y, m, y)
    return m


def check_widths(conv_features: Sequence[int], card_features: int, hidden: Sequence[int], norm: str) -> None:
    """Raises at the Python boundary for network settings that cannot build a network.

    Raises:
        ValueError: ``conv_features`` not 1 or 2 positive ints (a third 2x2
            pool would shrink the 1x1 map to nothing), ``hidden`` empty or
            not positive, ``card_features`` < 1, ``norm`` not in `NORMS`.
        TypeError: a width that is not an int.
    """
    for name, widths in (("conv_features", conv_features), ("hidden", hidden)):
        if not isinstance(widths, (tuple, list)):
            raise TypeError(f"{name} must be a tuple of ints; got {widths!r}")
        for w in widths:
            if isinstance(w, bool) or not isinstance(w, int):
                raise TypeError(f"{name} entries must be ints; got {w!r}")
            if w < 1:
                raise ValueError(f"{name} entries must be >= 1; got {tuple(widths)!r}")
    if not 1 <= len(conv_features) <= 2:
        raise ValueError(f"conv_features needs 1 or 2 layers (5x5 -> 2x2 -> 1x1 after the pools); got {tuple(conv_features)!r}")
    if len(hidden) < 1:
        raise ValueError("hidden needs at least one layer")
    if isinstance(card_features, bool) or not isinstance(card_features, int):
        raise TypeError(f"card_features must be an int; got {card_features!r}")
    if card_features < 1:
        raise ValueError(f"card_features must be >= 1; got {card_features}")
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}; got {norm!r}")


class Preprocess(nn.Module):
    """Dasgupta & Chong's ``Actor_Preprocess`` / ``Critic_Preprocess`` block (section 5.2, figures 5.2-5.3).

    The board planes (channels-last ``[5, 5, 10]``) go through 3x3 SAME
    convolutions, each followed by the norm, ReLU and a 2x2 stride-2 max-pool
    (`max_pool_2x2`; two layers reach ``1 x 1 x conv_features[-1]``; on the
    2x2 map the input gradient is `jaxgames.networks.conv`'s), flattened; the card
    vector through ``Dense(card_features)`` + ReLU; the critic's action vector
    through ``Dense(40)`` + ReLU; all concatenated, then ``Dense(hidden[i])``
    + ReLU layers. The report names no activation: ReLU here.

    Attributes:
        conv_features: widths of the 3x3 convolutions (1 or 2; the report: last 128).
        card_features: width of the card layer (the report: 10).
        hidden: widths of the dense layers after the concatenation (the report: two, the last 256).
        norm: ``"layer"`` or ``"none"`` after each convolution (module docstring).

    Call: ``(observation [..., 260], action [..., 40] or None) -> float32 [..., hidden[-1]]``.
    """

    conv_features: Sequence[int] = (64, 128)
    card_features: int = 10
    hidden: Sequence[int] = (256, 256)
    norm: str = "layer"

    @nn.compact
    def __call__(self, observation: jax.Array, action: Optional[jax.Array] = None) -> jax.Array:
        lead = observation.shape[:-1]
        obs = observation.reshape((-1, PAPER_OBSERVATION_SIZE)).astype(jnp.float32)
        board, card = split_paper_observation(obs)  # [N, 10, 5, 5], [N, 10]
        x = jnp.moveaxis(board, 1, -1)  # [N, 5, 5, 10] channels last
        for width in self.conv_features:
            x = nn.Conv(width, (3, 3), padding="SAME", kernel_init=KERNEL_INIT, conv_general_dilated=conv)(x)
            if self.norm == "layer":
                x = nn.LayerNorm()(x)
            x = nn.relu(x)
            x = max_pool_2x2(x)
        parts = [x.reshape((x.shape[0], -1)), nn.relu(nn.Dense(self.card_features, kernel_init=KERNEL_INIT)(card))]
        if action is not None:
            act = action.reshape((-1, NUM_ACTIONS)).astype(jnp.float32)
            parts.append(nn.relu(nn.Dense(NUM_ACTIONS, kernel_init=KERNEL_INIT)(act)))
        h = jnp.concatenate(parts, axis=-1)
        for width in self.hidden:
            h = nn.relu(nn.Dense(width, kernel_init=KERNEL_INIT)(h))
        return h.reshape(lead + (h.shape[-1],))


class ActorOutput(NamedTuple):
    """What an actor returns (leading axes as the observation's).

    Attributes:
        policy: float32 ``[..., 40]``, sums to 1 (or all zeros, see
            `normalise`): the distribution the agent plays (the DDPG action).
        actions: float32 ``[..., 40]``: the actions layer's softmax.
        validity: float32 ``[..., 40]`` in (0, 1): the validity layer's
            sigmoid (the predicted legal mask); None for ``actions_only``.
    """

    policy: jax.Array
    actions: jax.Array
    validity: Optional[jax.Array]


class Actor(nn.Module):
    """One of Dasgupta & Chong's actor variants (module docstring table; sections 5.3-5.5).

    Attributes:
        variant: one of `VARIANTS`.
        conv_features, card_features, hidden, norm: of the preprocess block(s) (`Preprocess`).

    Call: ``observation [..., 260] -> ActorOutput``.
    """

    variant: str = "val_branch_actions"
    conv_features: Sequence[int] = (64, 128)
    card_features: int = 10
    hidden: Sequence[int] = (256, 256)
    norm: str = "layer"

    def _block(self, name: str) -> Preprocess:
        return Preprocess(self.conv_features, self.card_features, self.hidden, self.norm, name=name)

    @nn.compact
    def __call__(self, observation: jax.Array) -> ActorOutput:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}; got {self.variant!r}")
        actions_layer = nn.Dense(NUM_ACTIONS, kernel_init=KERNEL_INIT, name="actions")
        validity_layer = nn.Dense(NUM_ACTIONS, kernel_init=KERNEL_INIT, name="validity")
        base = self.variant.removesuffix("_multiply")
        if base == "dual":
            a = nn.softmax(actions_layer(self._block("preprocess_actions")(observation)))
            v = nn.sigmoid(validity_layer(self._block("preprocess_validity")(observation)))
        else:
            x = self._block("preprocess")(observation)
            if base == "actions_only":
                a = nn.softmax(actions_layer(x))
                return ActorOutput(policy=a, actions=a, validity=None)
            if base == "val_after_actions":
                a = nn.softmax(actions_layer(x))
                v = nn.sigmoid(validity_layer(a))
            elif base == "actions_after_val":
                v = nn.sigmoid(validity_layer(x))
                a = nn.softmax(actions_layer(v))
            else:  # val_branch_actions
                a = nn.softmax(actions_layer(x))
                v = nn.sigmoid(validity_layer(x))
        policy = normalise(a * v) if is_multiply(self.variant) else a
        return ActorOutput(policy=policy, actions=a, validity=v)


def hand_of_god(key: jax.Array, policy: jax.Array, legal: jax.Array) -> jax.Array:
    """int32 ``[]``: a move drawn from ``policy`` ``[40]`` masked to ``legal`` ``[40]`` and renormalised (Dasgupta & Chong, 5.1, 5.6).

    Where every legal entry of ``policy`` is 0 the draw is uniform over the legal moves.
    """
    tiny = jnp.finfo(jnp.float32).tiny
    logits = jnp.where(legal, jnp.log(jnp.maximum(policy, tiny)), jnp.finfo(jnp.float32).min)
    return jax.random.categorical(key, logits).astype(jnp.int32)


class Critic(nn.Module):
    """Dasgupta & Chong's critic (section 5.2, figures 5.3-5.4): ``Critic_Preprocess`` then one linear unit, Q(s, a).

    The same architecture for every actor variant (the report varies only the actor).

    Attributes:
        conv_features, card_features, hidden, norm: of its preprocess block (`Preprocess`).

    Call: ``(observation [..., 260], action [..., 40]) -> float32 [...]``.
    """

    conv_features: Sequence[int] = (64, 128)
    card_features: int = 10
    hidden: Sequence[int] = (256, 256)
    norm: str = "layer"

    @nn.compact
    def __call__(self, observation: jax.Array, action: jax.Array) -> jax.Array:
        h = Preprocess(self.conv_features, self.card_features, self.hidden, self.norm, name="preprocess")(observation, action)
        return nn.Dense(1, kernel_init=KERNEL_INIT, name="q")(h)[..., 0]


def init_variables(key: jax.Array, module: nn.Module, *example: jax.Array) -> dict:
    """The variables ``{"params": ...}`` of ``module`` for ``example`` inputs, from ONE uniform draw.

    The same distribution as `KERNEL_INIT` with Flax's other defaults (kernels
    LeCun-uniform: uniform on ``[-sqrt(3 / fan_in), sqrt(3 / fan_in)]`` with
    ``fan_in`` the product of all but the last axis; biases 0; LayerNorm
    scales 1), but all kernels are cut from a single ``jax.random.uniform``
    call: Flax's ``module.init`` draws each kernel with its own threefry
    kernel, each compiled separately, which dominated start-up on CPU.

    Args:
        key: PRNG key.
        module: an `Actor` or a `Critic`.
        *example: example inputs (one example, no batch axis).
    """
    shapes = jax.eval_shape(module.init, jax.random.key(0), *example)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(shapes)
    sizes = [int(np.prod(leaf.shape)) for _, leaf in leaves]
    draw = jax.random.uniform(key, (sum(sizes),), jnp.float32, -1.0, 1.0)
    out, start = [], 0
    for (path, leaf), size in zip(leaves, sizes):
        name = getattr(path[-1], "key", str(path[-1]))
        if name == "kernel":
            fan_in = int(np.prod(leaf.shape[:-1]))
            value = draw[start:start + size].reshape(leaf.shape) * np.float32(np.sqrt(3.0 / fan_in))
        elif name == "scale":
            value = jnp.ones(leaf.shape, leaf.dtype)
        else:
            value = jnp.zeros(leaf.shape, leaf.dtype)
        out.append(value.astype(leaf.dtype))
        start += size
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shapes), out)


def init_actor(key: jax.Array, actor: Actor) -> dict:
    """The parameters ``{"params": ...}`` of ``actor`` (`init_variables`)."""
    return init_variables(key, actor, jnp.zeros((PAPER_OBSERVATION_SIZE,), jnp.float32))


def init_critic(key: jax.Array, critic: Critic) -> dict:
    """The parameters ``{"params": ...}`` of ``critic`` (`init_variables`)."""
    return init_variables(key, critic, jnp.zeros((PAPER_OBSERVATION_SIZE,), jnp.float32),
                          jnp.zeros((NUM_ACTIONS,), jnp.float32))
