"""The loop every learner and evaluator shares: auto-reset, a time limit, and a rollout.

* `auto_reset_step`: one step of one game; where the game ends, the next
  state is a fresh game, and what a learner needs of the step that ended it
  (the rewards, ``terminated`` and ``truncated`` kept apart, and the final
  observation) is returned beside it. A bootstrap target needs the two flags
  apart: ``terminated`` means no future value, ``truncated`` means the
  future value of ``final_observation`` (Pardo et al. 2018, "Time Limits in
  Reinforcement Learning", ICML). Pgx's ``auto_reset`` drops the final
  observation; gymnax keeps it in ``info`` only.
* `TimeLimit`: an `Env` that truncates another after ``max_steps`` steps.
* `rollout`: a ``lax.scan`` of a policy over a batch of games with
  auto-reset, recording a `Trajectory` ``[T, B, ...]``.

Everything is written for one game and vmapped at one boundary; nothing here
is jitted (callers jit with the env as a static argument: Envs are values).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from jaxgames.core import Env, EnvParams, State, tree_select


@struct.dataclass
class StepOutcome:
    """What a learner needs of the step just taken (one game; ``[B, ...]`` batched).

    Attributes:
        rewards: float32 ``[num_players]``: the step's rewards.
        terminated: bool ``[]``: the step ended the game (no future value).
        truncated: bool ``[]``: the step cut the game off (the future value is that
            of ``final_observation``).
        final_observation: the observation after the step and before any reset
            (``env.observation_shape``).
    """

    rewards: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_observation: jax.Array


def auto_reset_step(
    env: Env, state: State, action: jax.Array, key: jax.Array, params: EnvParams | None = None,
    reset: Callable[[jax.Array], State] | None = None,
) -> tuple[State, StepOutcome]:
    """Steps one game and starts a new one where it ended.

    Args:
        env: the game.
        state: one unbatched, non-finished state (finished states are reset too).
        action: as for ``env.step``.
        key: PRNG key; split into the step's key and the reset's key.
        params: the game's params (default ``env.default_params``).
        reset: ``reset(key) -> state``, the new game (default ``env.init(key, params)``; e.g. a start
            after random moves).

    Returns:
        ``(next_state, outcome)``: ``next_state`` is ``env.init`` of a new game
        where the step ended the game (or the state was already finished), the
        stepped state otherwise; ``outcome`` is the step's `StepOutcome`.
    """
    step_key, reset_key = jax.random.split(key)
    stepped = env.step(state, action, step_key, params)
    done = stepped.terminated | stepped.truncated
    outcome = StepOutcome(
        rewards=stepped.rewards,
        terminated=stepped.terminated,
        truncated=stepped.truncated & ~stepped.terminated,
        final_observation=stepped.observation,
    )
    fresh = env.init(reset_key, params) if reset is None else reset(reset_key)
    return tree_select(done, fresh, stepped), outcome


class TimeLimit(Env):
    """``env`` cut off after ``max_steps`` steps: ``truncated`` (never ``terminated``) at the limit.

    A game that ends by its rules on the last step stays ``terminated`` only.
    Everything else (name, players, actions, params, observe and the game's
    own attributes) is the wrapped env's.

    Args:
        env: the game to limit.
        max_steps: int >= 1, steps (``state.step_count``) after which the game is truncated.

    Raises:
        TypeError: ``env`` is not an `Env`.
        ValueError: ``max_steps`` is not a positive int.
    """

    def __init__(self, env: Env, max_steps: int):
        if not isinstance(env, Env):
            raise TypeError(f"TimeLimit wraps a jaxgames Env; got {type(env).__name__}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int; got {max_steps!r}")
        self.env = env
        self.max_steps = max_steps
        self.simultaneous = env.simultaneous
        self.stochastic = env.stochastic

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("env")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    @property
    def name(self) -> str:
        return self.env.name

    @property
    def num_players(self) -> int:
        return self.env.num_players

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return self.env.observation_shape

    @property
    def default_params(self) -> EnvParams:
        return self.env.default_params

    def observe(self, state: State, player: jax.Array) -> jax.Array:
        return self.env.observe(state, player)

    def _init(self, key, params):
        return self.env.init(key, params)

    def _step(self, state, action, key, params):  # pragma: no cover - step is overridden
        raise NotImplementedError

    def step(self, state, action, key=None, params=None):
        """``env.step``, then ``truncated`` where ``step_count`` reached ``max_steps`` (see `jaxgames.core.Env.step`)."""
        nxt = self.env.step(state, action, key, params)
        cut = ~nxt.terminated & (nxt.step_count >= self.max_steps)
        return self._finish(nxt.replace(truncated=nxt.truncated | cut))

    def __repr__(self) -> str:
        return f"TimeLimit({self.env!r}, max_steps={self.max_steps})"


@struct.dataclass
class Trajectory:
    """A rollout of ``T`` steps over ``B`` games (time-major, as `rollout` returns it).

    Attributes:
        observation: ``[T, B, *observation_shape]``: the observation the policy saw.
        legal_action_mask: bool ``[T, B, ...]``: the mask the policy saw.
        current_player: int32 ``[T, B]``.
        action: int32 ``[T, B]`` (``[T, B, num_players]`` for simultaneous games).
        rewards: float32 ``[T, B, num_players]``.
        terminated: bool ``[T, B]``: the step ended the game.
        truncated: bool ``[T, B]``: the step cut the game off.
        next_observation: ``[T, B, *observation_shape]``: the observation after the
            step, before any reset (the final one where a game ended).
    """

    observation: jax.Array
    legal_action_mask: jax.Array
    current_player: jax.Array
    action: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_observation: jax.Array


def init_batch(env: Env, key: jax.Array, batch_size: int, params: EnvParams | None = None) -> State:
    """``batch_size`` initial states ``[B, ...]`` (one key per game)."""
    return jax.vmap(lambda k: env.init(k, params))(jax.random.split(key, batch_size))


def rollout(
    env: Env,
    policy: Callable[[State, jax.Array], jax.Array],
    states: State,
    key: jax.Array,
    num_steps: int,
    *,
    params: EnvParams | None = None,
    record_observations: bool = True,
) -> tuple[State, Trajectory]:
    """Plays ``policy`` for ``num_steps`` steps on a batch of games, starting new games as they end.

    Pure (jit it with ``env``, ``policy`` and ``num_steps`` static).

    Args:
        env: the game.
        policy: ``policy(state, key) -> action`` for ONE state (vmapped here):
            int32 ``[]``, or ``[num_players]`` for a simultaneous game.
        states: ``[B, ...]`` states to start from (`init_batch`).
        key: PRNG key (split per step, then per game).
        num_steps: ``T`` (static).
        params: the game's params, shared by every game (default ``env.default_params``).
        record_observations: record ``observation``/``next_observation`` (set False
            to save memory when only rewards and flags are needed; they are then
            empty ``[T, B, 0]`` arrays).

    Returns:
        ``(states, trajectory)``: the batch after the last step and the `Trajectory`.
    """
    batch = states.current_player.shape[0]

    def one_game(state, k):
        k_act, k_step = jax.random.split(k)
        action = policy(state, k_act).astype(jnp.int32)
        nxt, out = auto_reset_step(env, state, action, k_step, params)
        return nxt, (state, action, out)

    def scan_step(states, k):
        nxt, (before, action, out) = jax.vmap(one_game)(states, jax.random.split(k, batch))
        empty = jnp.zeros((batch, 0), jnp.float32)
        rec = Trajectory(
            observation=before.observation if record_observations else empty,
            legal_action_mask=before.legal_action_mask,
            current_player=before.current_player,
            action=action,
            rewards=out.rewards,
            terminated=out.terminated,
            truncated=out.truncated,
            next_observation=out.final_observation if record_observations else empty,
        )
        return nxt, rec

    return jax.lax.scan(scan_step, states, jax.random.split(key, num_steps))


def episode_returns(trajectory: Trajectory) -> tuple[jax.Array, jax.Array]:
    """Sums of rewards per finished episode, for learning curves.

    Args:
        trajectory: a `Trajectory` ``[T, B, ...]`` from `rollout`.

    Returns:
        ``(returns, ended)``: float32 ``[T, B, num_players]``, at step ``t`` of game
        slot ``b`` the return of the episode that ended there (0 elsewhere), and
        bool ``[T, B]`` where an episode ended. Episodes already running at the
        rollout's start count only their rewards inside it.
    """
    ended = trajectory.terminated | trajectory.truncated

    def body(acc, x):
        r, e = x
        total = acc + r
        return jnp.where(e[:, None], 0.0, total), jnp.where(e[:, None], total, 0.0)

    zero = jnp.zeros_like(trajectory.rewards[0])
    _, returns = jax.lax.scan(body, zero, (trajectory.rewards, ended))
    return returns, ended
