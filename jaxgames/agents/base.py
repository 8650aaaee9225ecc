"""The one agent protocol that the arena, the server and the learners use, for every game.

An agent acts for the *seats it holds*: asked for seat ``player`` of a
state, it answers that seat's action. In a turn-taking game the arena asks
the agent holding ``state.current_player``; in a simultaneous game (matrix
games, Battlesnake) it asks, for every seat, the agent holding that seat
and assembles the joint action ``[num_players]``. One agent may hold several
seats (self-play, 2v2). Two kinds:

* `JaxAgent`: a pure JAX policy of ONE state and ONE seat,
  ``policy(env, state, key, player) -> int32 []``; the arena vmaps it over
  games (and seats) and may run a whole match inside one compiled loop
  when every agent is a JAX agent.
* `HostAgent`: a Python policy of one state (numpy leaves) and one seat,
  ``act(env, state, rng, player) -> int``, for algorithms that do not
  vectorise (alpha-beta with a transposition table). The arena calls it
  only for the games where its seat is to move, and times each call.

Both implement `Agent.act_batch`, so the arena needs nothing else. Keys:
every call gets its own key and splits it explicitly (one subkey per game).

Compiled code shared by agents of equal settings. A `JaxAgent` that holds
device arrays (network parameters, a solver's table) can let every agent of
the same *settings* share one compiled function (the arena's match,
`JaxAgent.compiled`), with the arrays passed as arguments instead of baked
in as constants: it returns them from `JaxAgent.arrays`, rebuilds itself
around other (traced) arrays in `JaxAgent.with_arrays`, and names everything
else its compiled code depends on in `JaxAgent.settings_key`. An agent that
does not opt in is keyed by its own identity (today's one compile per agent
object), except a stateless one (no instance attributes but ``name``), which
is keyed by its class.
"""

from __future__ import annotations

import collections
import copy
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np


class Agent:
    """Base class of every agent.

    Attributes:
        name: a short label for tables and plots.
    """

    name: str = "agent"

    def act_batch(
        self, env, states, key: jax.Array, players: np.ndarray, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Actions of one seat per game for a batch of states.

        Args:
            env: the game (`jaxgames.core.Env`).
            states: a batched state, leading axis ``B``.
            key: a PRNG key for this call.
            players: int32 numpy ``[B]``: the seat to act for in each game
                (``states.current_player`` in a turn-taking game).
            active: bool numpy ``[B]``: the games where this agent must act
                (other rows may be answered with anything).

        Returns:
            ``(actions, seconds)``: int32 numpy ``[B]`` and float64 numpy ``[B]``,
            the wall-clock seconds spent per active game (0 where not measured).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


_IGNORED_ATTRIBUTES = frozenset({"name", "_jit_cache"})
"""Instance attributes that never change an agent's compiled code (the default `JaxAgent.settings_key`)."""


def array_signature(tree) -> tuple:
    """Hashable ``(treedef, ((shape, dtype), ...))`` of a pytree of arrays: what a compiled function depends on."""
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple((tuple(np.shape(x)), np.dtype(getattr(x, "dtype", np.asarray(x).dtype)).str) for x in leaves)


_SHARED_POLICIES: "collections.OrderedDict" = collections.OrderedDict()
"""`JaxAgent.compiled_variant` of agents with arrays, by ``(settings_key, env, tag)`` (least recently used dropped past 64)."""
_SHARED_MAX = 64


class JaxAgent(Agent):
    """An agent whose policy is a pure JAX function of one state and one seat.

    Subclasses implement `policy`; agents that search a whole batch at once
    (MCTS) override `batched_policy` instead. The arena uses `batched_policy`.

    Agents holding device arrays opt in to shared compiled code (module
    docstring) by overriding `arrays`, `settings_key` and `_replace_arrays`.
    """

    # ------------------------------------------------------------------ shared compiled code
    def arrays(self):
        """The agent's device arrays (parameters, tables) as a pytree; ``{}`` (default) for none.

        Compiled code shared by agents of equal `settings_key` takes them as
        an argument (the arena's match, `compiled`).
        """
        return {}

    def settings_key(self, env):
        """A hashable key: agents with equal keys (on ``env``) compile to the same code, given `arrays` as arguments.

        It must hold everything the compiled policy depends on but the
        *values* of `arrays` (the class, network architecture, search
        settings, the arrays' shapes and dtypes, ...). Default: the agent
        itself (identity: one compile per agent object), or its class for
        a stateless agent (no instance attributes but ``name``).
        """
        attributes = getattr(self, "__dict__", None)
        if attributes is not None and not set(attributes) - _IGNORED_ATTRIBUTES and not jax.tree.leaves(self.arrays()):
            return (type(self),)
        return self

    def with_arrays(self, arrays) -> "JaxAgent":
        """This agent with ``arrays`` (a pytree like `arrays`, e.g. tracers) in place of its own.

        A shallow copy (the agent itself when it has no arrays); its settings are shared.
        """
        if not jax.tree.leaves(self.arrays()) and not jax.tree.leaves(arrays):
            return self
        new = copy.copy(self)
        new.__dict__.pop("_jit_cache", None)  # compiled around the original's arrays
        new._replace_arrays(arrays)
        return new

    def _replace_arrays(self, arrays) -> None:
        """Sets ``arrays`` (see `arrays`) on this fresh copy (`with_arrays`); agents with arrays override it."""
        raise NotImplementedError(f"{type(self).__name__} returns arrays() but does not implement _replace_arrays")

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the action of seat ``player`` (int32 ``[]``) in one unbatched state (pure, jittable)."""
        raise NotImplementedError

    def batched_policy(self, env) -> Callable[[Any, jax.Array, jax.Array], jax.Array]:
        """``(states [B, ...], keys [B], players int32 [B]) -> actions int32 [B]``, vmapped (not jitted)."""
        return jax.vmap(lambda s, k, p: self.policy(env, s, k, p).astype(jnp.int32))

    def compiled(self, env):
        """The jitted `batched_policy`, built once per game value (Envs hash by their settings).

        An agent with `arrays` shares it with every agent of equal
        `settings_key` (the arrays are an argument); others compile once per agent object.
        """
        return self.compiled_variant(env, lambda agent: agent.batched_policy(env))

    def compiled_variant(self, env, batched, tag=(), on_build=None):
        """The jitted ``batched(agent)`` (a batched policy like `batched_policy`'s), built once per game and ``tag``.

        The mechanism of `compiled` for agents with several compiled policies (e.g. one per search
        depth): with `arrays`, shared by agents of equal `settings_key` and ``tag``, the arrays an
        argument; without, cached on the agent.

        Args:
            env: the game (hashable by its settings).
            batched: ``agent -> policy``, the policy ``(states [B, ...], keys [B], players int32 [B]) ->
                actions int32 [B]``, not jitted; traced with ``self`` or an agent of equal settings.
            tag: hashable, telling apart several policies of one agent and game.
            on_build: called with no argument before a build (e.g. checks that raise); not on a cache hit.

        Returns:
            The compiled policy, with `batched`'s signature.
        """
        if not jax.tree.leaves(self.arrays()):
            cache = self.__dict__.setdefault("_jit_cache", {})
            fn = cache.get((env, tag))
            if fn is None:
                if on_build is not None:
                    on_build()
                fn = cache[(env, tag)] = jax.jit(batched(self))
            return fn
        key = (self.settings_key(env), env, tag)
        fn = _SHARED_POLICIES.get(key)
        if fn is None:
            if on_build is not None:
                on_build()
            template = self
            fn = _SHARED_POLICIES[key] = jax.jit(
                lambda arrays, states, keys, players: batched(template.with_arrays(arrays))(states, keys, players)
            )
            if len(_SHARED_POLICIES) > _SHARED_MAX:
                _SHARED_POLICIES.popitem(last=False)
        else:
            _SHARED_POLICIES.move_to_end(key)
        return lambda states, keys, players: fn(self.arrays(), states, keys, players)

    def act_batch(self, env, states, key, players, active):
        """See `Agent.act_batch`; the whole batch is computed in one jitted call."""
        batch = int(np.shape(active)[0])
        players = jnp.asarray(np.asarray(players, np.int32))
        actions = self.compiled(env)(states, jax.random.split(key, batch), players)
        return np.asarray(actions, np.int32), np.zeros(batch)


class HostAgent(Agent):
    """An agent that decides on the host, one state at a time.

    Subclasses implement `act` on one unbatched state whose leaves are numpy arrays.
    """

    def act(self, env, state, rng: np.random.Generator, player: int) -> int:
        """The action (an int) of seat ``player`` in one unbatched state with numpy leaves."""
        raise NotImplementedError

    def act_batch(self, env, states, key, players, active):
        """See `Agent.act_batch`; loops over the active games, timing each decision."""
        host = jax.device_get(states)
        batch = int(np.shape(active)[0])
        seed = int(jax.random.randint(key, (), 0, np.iinfo(np.int32).max))
        rng = np.random.default_rng(seed)
        actions = np.zeros(batch, np.int32)
        seconds = np.zeros(batch)
        for i in np.flatnonzero(active):
            one = jax.tree.map(lambda x: x[i], host)
            start = time.perf_counter()
            actions[i] = self.act(env, one, rng, int(players[i]))
            seconds[i] = time.perf_counter() - start
        return actions, seconds


def masked_uniform_choice(key: jax.Array, mask: jax.Array) -> jax.Array:
    """int32 ``[]``: a uniform draw among the True entries of ``mask`` ``[A]`` (0 if none)."""
    logits = jnp.where(mask, 0.0, jnp.finfo(jnp.float32).min)
    choice = jax.random.categorical(key, logits)
    return jnp.where(jnp.any(mask), choice, 0).astype(jnp.int32)


def seat_mask(env, state, player: jax.Array) -> jax.Array:
    """bool ``[num_actions]``: the legal actions of seat ``player`` in one state.

    The row ``player`` of the mask in a simultaneous game, the mask itself in
    a turn-taking game (where only the player to move acts).
    """
    if getattr(env, "simultaneous", False):
        return state.legal_action_mask[player]
    return state.legal_action_mask
