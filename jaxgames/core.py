"""The state contract every jaxgames game follows, and the `Env` base class.

The contract is Pgx's (``pgx/core.py``), which users of JAX game libraries
already know, extended to simultaneous-move games and to traced game
parameters (gymnax's ``EnvParams``):

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

These dtypes, and those of every field a game adds, are the same with
``jax_enable_x64`` on or off and through ``step`` (so a ``lax.scan`` over
steps keeps its carry): games give explicit dtypes wherever a Python number
would otherwise become 64-bit. `jaxgames.testing.api_test` checks both modes.

The rules every game shares, enforced here once:

* **Terminal no-op.** Stepping a state that is already terminated or
  truncated returns the same state with zero rewards.
* **Terminal mask.** A terminated or truncated state has an *all-True*
  ``legal_action_mask`` (Pgx's convention: normalising a policy by the mask
  never divides by zero, and any action is a no-op). A player who has no
  say in a simultaneous game still running (an eliminated snake) also has an
  all-True row. "No legal action" is therefore never encoded by the mask:
  read ``terminated | truncated``.
* **Illegal actions.** An illegal action ends the game: the offender gets -1
  and every other player +1/(n-1) (Pgx's rule), so a buggy policy can never
  silently play on.
* **Keys.** A game with chance events (``env.stochastic``, e.g. Battlesnake's
  food) *requires* a key in ``step``: omitting it raises ``ValueError``,
  since a silent default key would spawn the same food in every game of a
  batch. Deterministic games accept ``key=None``: unlike Pgx v2, which
  requires a key everywhere, because exact solvers and search step them on
  the host, where a key is noise.
* **Parameters.** Numeric settings that fix no shape (rewards, Battlesnake's
  health loss, matrix payoffs) live in ``env.default_params``, a
  ``flax.struct`` pytree that ``init``/``step`` take as an optional, possibly
  traced, argument: a curriculum or a sweep over them is a ``vmap``, not a
  recompile. Settings that fix a shape stay constructor arguments.
* **Values, not objects.** An `Env` is a frozen value of its static settings:
  two envs built with the same settings are equal and hash alike, so
  compiled functions are cached on the game's value (``jax.jit(...,
  static_argnums=...)``), never rebuilt per call.
"""

from __future__ import annotations

import abc
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

SIMULTANEOUS = -2
"""`current_player` of a state in which every player moves at once (OpenSpiel's id)."""

ILLEGAL_ACTION_PENALTY = -1.0
"""Reward of a player who takes an illegal action in a sequential game."""

_NO_KEY_SEED = 0
"""Seed of the fixed key handed to deterministic games stepped without a key (never used by them)."""


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


@struct.dataclass
class EnvParams:
    """Numeric game settings that fix no shape, as a pytree ``step`` may take traced.

    Games subclass it (``flax.struct.dataclass``) and return theirs from
    `Env.default_params`; games without such settings use it empty. vmap over
    a stacked params pytree to sweep a setting without recompiling
    (gymnax's ``EnvParams``).
    """


def _freeze(value: Any) -> Any:
    """A hashable image of a constructor setting (arrays by dtype, shape and bytes)."""
    if isinstance(value, (np.ndarray, jax.Array)):
        a = np.asarray(value)
        return ("array", a.dtype.str, a.shape, a.tobytes())
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_freeze(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return (type(value).__name__,) + tuple(_freeze(getattr(value, f)) for f in value.__dataclass_fields__)
    hash(value)  # raises TypeError for anything else unhashable
    return value


_BOOKKEEPING = frozenset({"_frozen", "_init_depth", "_value_key"})


class Env(abc.ABC):
    """A game: pure ``init`` and ``step`` over a `State` subclass.

    Subclasses implement `_init`, `_step`, `observe` and the static
    properties, and may override `default_params`. The public `init`/`step`
    add the shared contract (module docstring: terminal no-op and mask,
    illegal-action rule, keys, params, step counting), so no game
    re-implements it.

    Write the game for ONE state; batch with ``jax.vmap(env.step)``.

    An `Env` is frozen once its constructor returns (setting an attribute
    raises ``AttributeError``) and compares and hashes by its type and
    constructor settings, so it can be a static argument of ``jax.jit``.
    """

    #: True when every player acts in every step (``action`` is ``[num_players]``).
    simultaneous: bool = False

    #: True when ``init`` or ``step`` draws random numbers (chance events): ``step`` then requires a key.
    stochastic: bool = False

    # ------------------------------------------------------------ value semantics
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def frozen_init(self, *args, **kw):
            depth = self.__dict__.get("_init_depth", 0)
            object.__setattr__(self, "_init_depth", depth + 1)
            try:
                init(self, *args, **kw)
            finally:
                object.__setattr__(self, "_init_depth", depth)
            if depth == 0:
                object.__setattr__(self, "_frozen", True)

        cls.__init__ = frozen_init

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_frozen", False):
            raise AttributeError(f"{self!r} is a frozen value: build a new env instead of setting {name!r}")
        object.__setattr__(self, name, value)

    def _value(self) -> tuple:
        """The hashable value of this env: its type and constructor settings (every attribute)."""
        cached = self.__dict__.get("_value_key")
        if cached is not None:
            return cached
        items = tuple(sorted((k, _freeze(v)) for k, v in self.__dict__.items() if k not in _BOOKKEEPING))
        value = (type(self).__module__, type(self).__qualname__, items)
        if self.__dict__.get("_frozen", False):
            object.__setattr__(self, "_value_key", value)
        return value

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        return self._value() == other._value()

    def __hash__(self) -> int:
        return hash(self._value())

    # ------------------------------------------------------------ static properties
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

    @property
    def default_params(self) -> EnvParams:
        """The game's numeric settings as given to the constructor (an `EnvParams` pytree)."""
        return EnvParams()

    # ------------------------------------------------------------ what games implement
    @abc.abstractmethod
    def _init(self, key: jax.Array, params: EnvParams) -> State:
        """The initial state for one game."""

    @abc.abstractmethod
    def _step(self, state: State, action: jax.Array, key: jax.Array, params: EnvParams) -> State:
        """One step of the rules on a non-terminal state with a legal action."""

    @abc.abstractmethod
    def observe(self, state: State, player: jax.Array) -> jax.Array:
        """The observation of one state from ``player``'s point of view.

        Args:
            state: one (unbatched) state.
            player: int ``[]`` in ``[0, num_players)``; may be traced.

        Returns:
            For a sequential game, ``observation_shape`` (equal to
            ``state.observation`` when ``player == state.current_player``);
            for a simultaneous game, ``observation_shape[1:]`` (row ``player``
            of ``state.observation``).
        """

    def placement_tiebreak(self, state: State) -> jax.Array:
        """float32 ``[num_players]``: how the arena ranks players with equal returns (higher is better).

        Default: zeros (equal returns share a place). Games override it where
        their rules rank players beyond the rewards (Battlesnake: the later a
        snake was eliminated, the better).
        """
        del state
        return jnp.zeros((self.num_players,), jnp.float32)

    def game_statistics(self, state: State) -> dict:
        """Per-game statistics of one final state that the arena reports (name -> array).

        Default: none. Games override it (Battlesnake: elimination causes and turns).
        """
        del state
        return {}

    # ------------------------------------------------------------ the public kernels
    def init(self, key: jax.Array, params: EnvParams | None = None) -> State:
        """Returns the initial state of one game.

        Args:
            key: a PRNG key (for games with a random start; others ignore it).
            params: the game's `EnvParams` (default `default_params`); may be traced.
        """
        params = self.default_params if params is None else params
        return self._finish(self._init(key, params))

    def step(
        self,
        state: State,
        action: jax.Array,
        key: jax.Array | None = None,
        params: EnvParams | None = None,
    ) -> State:
        """Applies ``action`` to ``state``.

        Args:
            state: the state of one game (vmap for a batch).
            action: an integer array, ``[]`` for a sequential game and
                ``[num_players]`` (one per player) for a simultaneous game.
            key: PRNG key; required when ``env.stochastic`` (chance events),
                may be omitted otherwise.
            params: the game's `EnvParams` (default `default_params`); may be traced.

        Returns:
            The next state. If ``state`` was already terminated or truncated,
            ``state`` itself with zero rewards. An illegal action (masked out, or
            outside ``[0, num_actions)``) terminates the game with the offender
            penalised (`_illegal_action_outcome`).

        Raises:
            ValueError: a missing key for a stochastic game; an action of the
                wrong shape (checked at trace time too); a concrete action
                outside ``[0, num_actions)``.
            TypeError: an action whose dtype is not an integer (float or bool),
                checked at trace time too, since a float would be truncated
                silently.
        """
        self._check_action(action)
        if key is None:
            if self.stochastic:
                raise ValueError(
                    f"{self.name} has chance events: step(state, action, key) needs a PRNG key "
                    "(split one per game and per step; a shared default key would repeat the same "
                    "chance outcome in every game of a batch)"
                )
            key = jax.random.key(_NO_KEY_SEED)
        params = self.default_params if params is None else params
        action = jnp.asarray(action).astype(jnp.int32)
        done = state.terminated | state.truncated
        legal = self._is_legal(state, action)
        # _step always gets legal actions, so shapes and invariants hold; its
        # result is replaced where some action was illegal.
        safe_action = jnp.where(legal, action, self._any_legal_action(state))
        stepped = self._step(state, safe_action, key, params).replace(step_count=state.step_count + 1)
        stepped = tree_select(jnp.all(legal), stepped, self._illegal_action_outcome(state, legal))
        frozen = state.replace(rewards=jnp.zeros_like(state.rewards))
        return tree_select(done, frozen, self._finish(stepped))

    def _finish(self, state: State) -> State:
        """Applies the terminal-mask convention: all True once terminated or truncated."""
        done = state.terminated | state.truncated
        return state.replace(legal_action_mask=state.legal_action_mask | done)

    def _check_action(self, action) -> None:
        """Raises for an action of the wrong kind, before tracing where it can.

        dtype and shape are static, so they are checked for traced actions
        too; the range can be checked only for concrete actions (traced ones
        outside the range follow the illegal-action rule). Under ``vmap`` the
        check sees one game's action.
        """
        dtype = getattr(action, "dtype", None)
        if dtype is None:
            dtype = np.asarray(action).dtype
        shape = tuple(np.shape(action))
        if dtype == np.bool_ or not np.issubdtype(dtype, np.integer):
            raise TypeError(f"{self.name}: actions must be integers; got dtype {dtype} ({action!r})")
        expected = (self.num_players,) if self.simultaneous else ()
        if shape != expected:
            what = "one action per player" if self.simultaneous else "a single action"
            raise ValueError(f"{self.name}: step takes {what}, shape {expected}; got shape {shape}")
        if isinstance(action, jax.core.Tracer):
            return
        value = np.asarray(action)
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
            legal_action_mask=jnp.ones_like(state.legal_action_mask),
            step_count=state.step_count + 1,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def tree_select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """``jnp.where(pred, a, b)`` leaf by leaf over two pytrees of the same structure."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)
