"""An arena agent playing a trained DDPG actor for Onitama, and its weight files.

Source: Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
Learning" (NUS USP group report, 2021), sections 5.1 (the "hand of god" mask)
and 6.3 (the tournament of the trained variants); the learner is
`jaxgames.learners.ddpg`.

**How `DDPGAgent` picks a move** (one state, the seat ``player`` to move):

1. The seat's observation (`Onitama.observe`, 260 inputs) goes through the
   actor; its ``policy`` is a probability vector over the 40 actions
   (`jaxgames.networks.ddpg.ActorOutput`).
2. ``mask_illegal=True`` (default; the hand of god): the policy is restricted
   to the legal actions and renormalised; ``greedy=True`` (default) plays its
   argmax (ties, and an all-zero policy, go to the lowest legal index),
   ``greedy=False`` samples it (`jaxgames.networks.ddpg.hand_of_god`).
3. ``mask_illegal=False``: the raw policy's argmax (or a draw), legal or not;
   an illegal move loses the game (`jaxgames.core`), which measures what the
   actor's valid rate costs in real games.

The report does not say whether its tournament agents played greedily;
greedy is our default (a deterministic player for the Elo table).

**Weight files** (`save_weights`, `load_weights`, `load_agent`): a folder
in the `jaxgames.weights_io` format, ``params.msgpack`` (the actor's
``{"params": ...}``) and ``metadata.json`` (the variant, the network widths,
and whatever the trainer adds: command, iterations, curriculum depth reached).
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import weights_io
from jaxgames.agents.base import JaxAgent, array_signature
from jaxgames.agents.simple import masked_argmax
from jaxgames.networks.ddpg import VARIANTS, Actor, check_widths, hand_of_god, init_actor

_NETWORK_KEYS = ("variant", "conv_features", "card_features", "hidden", "norm")


def _check_env(env) -> None:
    if getattr(env, "name", None) != "onitama" or getattr(env, "action_space", None) != "paper":
        raise ValueError(f"a DDPG actor plays onitama with action_space='paper' (40 actions, 260 inputs); got {env!r}")


class DDPGAgent(JaxAgent):
    """Plays a trained DDPG actor (module docstring: exactly how).

    Args:
        variant: one of `jaxgames.networks.ddpg.VARIANTS`.
        params: the actor's variables ``{"params": ...}`` (one run, no seed axis).
        conv_features, card_features, hidden, norm: the widths it was trained with.
        mask_illegal: restrict to the legal actions (the hand of god); False plays the raw policy.
        greedy: argmax (True) or a draw from the policy (False).
        name: label (default the variant).

    Raises:
        ValueError, TypeError: an unknown variant, bad widths, or ``params``
            whose shapes do not match the network (checked here, before tracing).
        ValueError: at trace time, an env other than Onitama with ``action_space="paper"``.
    """

    def __init__(self, variant: str, params: dict, *, conv_features=(16, 32), card_features: int = 10,
                 hidden=(64, 64), norm: str = "layer", mask_illegal: bool = True, greedy: bool = True,
                 name: str | None = None):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
        conv_features, hidden = tuple(conv_features), tuple(hidden)
        check_widths(conv_features, card_features, hidden, norm)
        self.actor = Actor(variant, conv_features, card_features, hidden, norm)
        expected = jax.eval_shape(lambda: init_actor(jax.random.key(0), self.actor))
        got = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), jnp.float32), params)
        want = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, jnp.float32), expected)
        if jax.tree.structure(got) != jax.tree.structure(want) or jax.tree.leaves(got) != jax.tree.leaves(want):
            raise ValueError(f"params do not fit a {variant!r} actor with conv_features={conv_features}, "
                             f"card_features={card_features}, hidden={hidden}")
        self.variant = variant
        self.params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), params)
        self.network = {"variant": variant, "conv_features": list(conv_features), "card_features": int(card_features),
                        "hidden": list(hidden), "norm": norm}
        self.mask_illegal = bool(mask_illegal)
        self.greedy = bool(greedy)
        self.name = variant if name is None else name

    def arrays(self):
        """``{"params": ...}``: the actor's variables, an argument of the compiled arena match."""
        return {"params": self.params}

    def settings_key(self, env) -> tuple:
        """The class, the actor's variant and widths, ``mask_illegal``, ``greedy`` and the parameters' shapes and dtypes."""
        net = self.network
        return (type(self), net["variant"], tuple(net["conv_features"]), net["card_features"], tuple(net["hidden"]),
                net["norm"], self.mask_illegal, self.greedy, array_signature(self.params))

    def _replace_arrays(self, arrays) -> None:
        self.params = arrays["params"]

    def action_probabilities(self, env, state, player: jax.Array) -> jax.Array:
        """float32 ``[40]``: the actor's raw policy for seat ``player`` of one state (before any mask)."""
        _check_env(env)
        return self.actor.apply(self.params, env.observe(state, player)).policy

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the move of seat ``player`` in one unbatched state (module docstring)."""
        probs = self.action_probabilities(env, state, player)
        if self.mask_illegal:
            # never an illegal move, even from a network with NaN outputs (masked_argmax; a NaN probability
            # counts as 0, so an all-NaN policy draws uniformly among the legal moves)
            legal = state.legal_action_mask
            if self.greedy:
                return masked_argmax(probs, legal)
            drawn = hand_of_god(key, jnp.where(jnp.isnan(probs), 0.0, probs), legal)
            return jnp.where(legal[drawn], drawn, masked_argmax(probs, legal)).astype(jnp.int32)
        if self.greedy:
            return jnp.argmax(probs).astype(jnp.int32)
        return hand_of_god(key, probs, jnp.ones_like(probs, jnp.bool_))


def save_weights(directory, variant: str, params: dict, network: dict, metadata: dict | None = None) -> pathlib.Path:
    """Writes one actor to ``directory`` (created) in the one weights format (`jaxgames.weights_io.save`).

    Args:
        directory: the folder.
        variant: the actor variant.
        params: its ``{"params": ...}`` (host or device arrays, no seed axis).
        network: ``conv_features``, ``card_features``, ``hidden``, ``norm``.
        metadata: anything else to record (command, iterations, depth reached).

    Raises:
        ValueError: ``network`` lacks a width, the params do not fit it
            (`DDPGAgent`), or they are not finite.
    """
    missing = [k for k in _NETWORK_KEYS[1:] if k not in network]
    if missing:
        raise ValueError(f"network needs {missing}; got keys {sorted(network)}")
    agent = DDPGAgent(variant, params, **{k: network[k] for k in _NETWORK_KEYS[1:]})  # checks the shapes
    return weights_io.save(directory, agent.params, {**(metadata or {}), **agent.network})


def load_weights(directory) -> tuple[dict, dict]:
    """``(params, metadata)`` of an actor folder written by `save_weights`.

    Raises:
        FileNotFoundError: a missing folder or file.
        ValueError: the checks of `jaxgames.weights_io.load` (checksum, finite
            values, readable files); metadata without the network's settings.
    """
    params, meta = weights_io.load(directory)
    missing = [k for k in _NETWORK_KEYS if k not in meta]
    if missing:
        raise ValueError(f"{pathlib.Path(directory) / weights_io.METADATA_FILE} lacks {missing}")
    return params, meta


def load_agent(directory, **kwargs) -> DDPGAgent:
    """A `DDPGAgent` from an actor folder; ``kwargs`` (``mask_illegal``, ``greedy``, ``name``) are passed on."""
    params, meta = load_weights(directory)
    return DDPGAgent(meta["variant"], params, conv_features=tuple(meta["conv_features"]),
                     card_features=int(meta["card_features"]), hidden=tuple(meta["hidden"]), norm=meta["norm"],
                     **kwargs)
