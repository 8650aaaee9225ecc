"""The state contract every jaxgames game follows, and the `Env` base class.

The contract is Pgx's (``pgx/core.py``), which users of JAX game libraries
already know, extended to simultaneous-move games:

=====================  ==========================================================
field                  meaning
=====================  ==========================================================
``current_player``     int32 ``[]``: the player to move; ``SIMULTANEOUS`` (-2,
                       OpenSpiel's ``kSimultaneousPlayerId``) when all move at once.
``observation``        any dtype, ``env.observation_shape``: for sequential games
                       from the mover's point of view; for simultaneous games one
                       row per player, ``[num_players, ...]``.
``rewards``            float32 ``[num_players]``: the rewards of the last step.
``terminated``         bool ``[]``: the game reached a terminal state.
``truncated``          bool ``[]``: the game was cut off (turn limit).
``legal_action_mask``  bool, True = legal: ``[num_actions]`` for sequential games,
                       ``[num_players, num_actions]`` for simultaneous games.
``step_count``         int32 ``[]``: steps taken since ``init``.
=====================  ==========================================================

Stepping a state that is already terminated or truncated is a no-op that
returns the same state with zero rewards. A terminal state has no legal
action (its mask is all False). An illegal action ends the game: the offender
gets -1 and every other player +1/(n-1) (Pgx's rule), so a buggy policy can
never silently play on.
"""

from __future__ import annotations

import abc
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

SIMULTANEOUS = -2
"""`current_player` of a state in which every player moves at once (OpenSpiel's id)."""

ILLEGAL_ACTION_PENALTY = -1.0
"""Reward of a player who takes an illegal action in a sequential game."""


@struct.dataclass
class State:
    """Base state; each game subclasses it and adds its own fields.

    Attributes:
        current_player: int32 ``[]``.
        observation: ``env.observation_shape``.
        rewards: float32 ``[num_players]``.
        terminated: bool ``[]``.
        truncated: bool ``[]``.
        legal_action_mask: bool ``[num_actions]`` or ``[num_players, num_actions]``.
        step_count: int32 ``[]``.
    """

    current_player: jax.Array
    observation: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    legal_action_mask: jax.Array
    step_count: jax.Array


class Env(abc.ABC):
    """A game: pure ``init`` and ``step`` over a `State` subclass.

    Subclasses implement `_init`, `_step` and the static properties. The public
    `init`/`step` add the shared contract (terminal no-op, zero rewards after the
    end, illegal-action rule, step counting), so no game re-implements it.

    Write the game for ONE state; batch with ``jax.vmap(env.step)``.
    """

    #: True when every player acts in every step (``action`` is ``[num_players]``).
    simultaneous: bool = False

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The registry name of the game."""

    @property
    @abc.abstractmethod
    def num_players(self) -> int:
        """Number of players (static)."""

    @property
    @abc.abstractmethod
    def num_actions(self) -> int:
        """Size of the action space of one player (static)."""

    @property
    def observation_shape(self) -> tuple[int, ...]:
        """Shape of ``state.observation`` (static, computed by abstract evaluation)."""
        shape = jax.eval_shape(self.init, jax.random.key(0)).observation.shape
        return tuple(shape)

    @abc.abstractmethod
    def _init(self, key: jax.Array) -> State:
        """The initial state for one game."""

    @abc.abstractmethod
    def _step(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """One step of the rules on a non-terminal state with a legal action."""

    def init(self, key: jax.Array) -> State:
        """Returns the initial state of one game.

        Args:
            key: a PRNG key (for games with a random start; others ignore it).
        """
        return self._init(key)

    def step(self, state: State, action: jax.Array, key: jax.Array | None = None) -> State:
        """Applies ``action`` to ``state``.

        Args:
            state: the state of one game (vmap for a batch).
            action: int32 ``[]`` for a sequential game; ``[num_players]`` (one per
                player) for a simultaneous game.
            key: PRNG key for games with chance events; may be omitted otherwise.

        Returns:
            The next state. If ``state`` was already terminated or truncated,
            ``state`` itself with zero rewards. An illegal action (masked out, or
            outside ``[0, num_actions)``) terminates the game with the offender
            penalised (`_illegal_action_outcome`).

        Raises:
            ValueError: for a concrete (not traced) action that is not an
                integer, has the wrong shape, or lies outside ``[0, num_actions)``.
        """
        self._check_concrete_action(action)
        if key is None:
            key = jax.random.key(0)
        action = jnp.asarray(action, dtype=jnp.int32)
        done = state.terminated | state.truncated
        legal = self._is_legal(state, action)
        # _step always gets legal actions, so shapes and invariants hold; its
        # result is replaced where some action was illegal.
        safe_action = jnp.where(legal, action, self._any_legal_action(state))
        stepped = self._step(state, safe_action, key).replace(step_count=state.step_count + 1)
        stepped = tree_select(jnp.all(legal), stepped, self._illegal_action_outcome(state, legal))
        frozen = state.replace(rewards=jnp.zeros_like(state.rewards))
        return tree_select(done, frozen, stepped)

    def _check_concrete_action(self, action) -> None:
        """Raises ValueError for a concrete (non-traced) action of the wrong kind.

        Traced actions cannot be checked in Python; they follow the
        illegal-action rule instead. Batched (vmapped) calls are traced.
        """
        if isinstance(action, jax.core.Tracer):
            return
        value = np.asarray(action)
        if not np.issubdtype(value.dtype, np.integer):
            raise ValueError(f"{self.name}: actions must be integers; got {action!r} (dtype {value.dtype})")
        expected = (self.num_players,) if self.simultaneous else ()
        if value.shape != expected:
            what = "one action per player" if self.simultaneous else "a single action"
            raise ValueError(f"{self.name}: step takes {what}, shape {expected}; got shape {value.shape}")
        if value.size and (value.min() < 0 or value.max() >= self.num_actions):
            raise ValueError(f"{self.name}: action {value.tolist()} outside [0, {self.num_actions})")

    def _is_legal(self, state: State, action: jax.Array) -> jax.Array:
        """Whether each action falls under the illegal-action rule (override to change which do).

        Default: legal = in ``[0, num_actions)`` and allowed by ``legal_action_mask``.

        Returns:
            bool ``[]`` (sequential) or ``[num_players]`` (simultaneous).
        """
        in_range = (action >= 0) & (action < self.num_actions)
        safe = jnp.clip(action, 0, self.num_actions - 1)
        if self.simultaneous:
            return jnp.take_along_axis(state.legal_action_mask, safe[:, None], axis=1)[:, 0] & in_range
        return state.legal_action_mask[safe] & in_range

    def _any_legal_action(self, state: State) -> jax.Array:
        return jnp.argmax(state.legal_action_mask, axis=-1).astype(jnp.int32)

    def _illegal_action_outcome(self, state: State, legal: jax.Array) -> State:
        """The terminal state after an illegal action (override to change the rule).

        Sequential games: the mover gets ``ILLEGAL_ACTION_PENALTY`` (-1) and every
        other player ``+1/(n-1)``. Simultaneous games: each player who acted
        illegally gets -1, each who acted legally +1/(n-1).

        Args:
            state: the state the illegal action was taken in.
            legal: bool ``[]`` (sequential) or ``[num_players]`` (simultaneous).
        """
        n = self.num_players
        bonus = -ILLEGAL_ACTION_PENALTY / max(n - 1, 1)
        if self.simultaneous:
            rewards = jnp.where(legal, bonus, ILLEGAL_ACTION_PENALTY).astype(jnp.float32)
        else:
            rewards = jnp.full((n,), bonus, jnp.float32).at[state.current_player].set(ILLEGAL_ACTION_PENALTY)
        return state.replace(
            rewards=rewards,
            terminated=jnp.bool_(True),
            legal_action_mask=jnp.zeros_like(state.legal_action_mask),
            step_count=state.step_count + 1,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def tree_select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """``jnp.where(pred, a, b)`` leaf by leaf over two pytrees of the same structure."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)
