"""Batched head-to-head matches between two agents, for any sequential game.

Source: seed 000 section 5.7 (wins, losses, draws and timeouts of an agent
against each opponent over 500 games) and seed 001 section 6.3 (the games
of a round robin). Game ``i`` of a match has agent A move first when ``i``
is even and agent B when it is odd (alternating first player).

The outcome of a game is read from the rewards that the `Env` hands out
(accumulated over the steps, so games with intermediate rewards work too):
the seat with the larger total wins, equal totals are a draw. An illegal
action ends the game with the offender at -1 (`jaxgames.core`), so it counts
as a loss. A game still running after ``max_steps`` steps, or in which a host
agent overran ``move_time_limit`` seconds on one move, is a *timeout*.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.agents.base import Agent, JaxAgent

WIN, LOSS, DRAW, TIMEOUT = 1, -1, 0, 2
"""Per-game outcome codes, from agent A's side."""


class MatchResult(NamedTuple):
    """The games of one match, from agent A's side.

    Attributes:
        outcome: int8 ``[G]``: `WIN` (1), `LOSS` (-1), `DRAW` (0) or `TIMEOUT` (2).
        length: int32 ``[G]``: steps (turns, i.e. actions) played.
        a_first: bool ``[G]``: agent A moved first.
        returns: float32 ``[G, 2]``: summed rewards of (A, B).
        max_move_seconds: float64 ``[G, 2]``: slowest single decision of (A, B)
            in seconds (0 for JAX agents, which are not timed per game).
    """

    outcome: np.ndarray
    length: np.ndarray
    a_first: np.ndarray
    returns: np.ndarray
    max_move_seconds: np.ndarray

    @property
    def wins(self) -> int:
        """Games won by A."""
        return int(np.sum(self.outcome == WIN))

    @property
    def losses(self) -> int:
        """Games lost by A."""
        return int(np.sum(self.outcome == LOSS))

    @property
    def draws(self) -> int:
        """Drawn games."""
        return int(np.sum(self.outcome == DRAW))

    @property
    def timeouts(self) -> int:
        """Games that timed out."""
        return int(np.sum(self.outcome == TIMEOUT))

    def summary(self) -> dict:
        """``{"games", "wins", "losses", "draws", "timeouts", "mean_length"}`` (A's side)."""
        return dict(
            games=int(self.outcome.shape[0]),
            wins=self.wins,
            losses=self.losses,
            draws=self.draws,
            timeouts=self.timeouts,
            mean_length=float(np.mean(self.length)) if self.length.size else 0.0,
        )


def _check(env, agent_a, agent_b, num_games, max_steps, move_time_limit):
    if getattr(env, "simultaneous", False):
        raise ValueError(f"the arena plays sequential games; {env!r} is simultaneous")
    if getattr(env, "num_players", 2) != 2:
        raise ValueError(f"the arena plays two-player games; {env!r} has {env.num_players} players")
    for name, agent in (("agent_a", agent_a), ("agent_b", agent_b)):
        if not isinstance(agent, Agent):
            raise TypeError(f"{name} must be a jaxgames.agents.Agent; got {type(agent).__name__}")
    if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
        raise ValueError(f"num_games must be a positive int; got {num_games!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive int; got {max_steps!r}")
    if move_time_limit is not None and not move_time_limit > 0:
        raise ValueError(f"move_time_limit must be positive seconds or None; got {move_time_limit!r}")


def _outcome(returns, finished, seat_a):
    """Outcome codes from A's side: returns [G, 2] by player id, seat_a [G] player id of A."""
    ra = np.take_along_axis(returns, seat_a[:, None], 1)[:, 0]
    rb = np.take_along_axis(returns, 1 - seat_a[:, None], 1)[:, 0]
    out = np.where(ra > rb, WIN, np.where(ra < rb, LOSS, DRAW))
    return np.where(finished, out, TIMEOUT).astype(np.int8), np.stack([ra, rb], 1).astype(np.float32)


def _jit_match(env, agent_a: JaxAgent, agent_b: JaxAgent, num_games: int, max_steps: int):
    """The whole match as one jitted ``while_loop`` (both agents pure JAX)."""
    pol_a, pol_b = agent_a.batched_policy(env), agent_b.batched_policy(env)
    seat_a = jnp.arange(num_games, dtype=jnp.int32) % 2  # A is player 0 in even games

    def run(key):
        states = jax.vmap(env.init)(jax.random.split(key, num_games))
        returns = jnp.zeros((num_games, 2), jnp.float32)

        def cond(carry):
            states, _, t, _ = carry
            return (t < max_steps) & ~jnp.all(states.terminated | states.truncated)

        def body(carry):
            states, returns, t, key = carry
            key, ka, kb = jax.random.split(key, 3)
            act_a = pol_a(states, jax.random.split(ka, num_games))
            act_b = pol_b(states, jax.random.split(kb, num_games))
            actions = jnp.where(states.current_player == seat_a, act_a, act_b)
            states = jax.vmap(env.step)(states, actions)
            return states, returns + states.rewards, t + 1, key

        states, returns, _, _ = jax.lax.while_loop(cond, body, (states, returns, jnp.int32(0), key))
        return states.terminated | states.truncated, states.step_count, returns

    return jax.jit(run)


def play_match(
    env,
    agent_a: Agent,
    agent_b: Agent,
    num_games: int,
    key: jax.Array,
    *,
    max_steps: int = 1000,
    move_time_limit: float | None = None,
) -> MatchResult:
    """Plays ``num_games`` games of A against B in one batch, alternating the first player.

    Args:
        env: a two-player sequential `jaxgames.core.Env`.
        agent_a, agent_b: `jaxgames.agents.Agent` instances (may be the same object).
        num_games: games to play, ``G``; even games have A first, odd games B first.
        key: PRNG key.
        max_steps: steps after which an unfinished game is a timeout.
        move_time_limit: seconds; a host agent taking longer on one move loses
            the game as a timeout (None: no limit). JAX agents are not timed.

    Returns:
        A `MatchResult` from A's side.

    Raises:
        ValueError: a simultaneous or non-two-player game, a non-positive
            ``num_games``/``max_steps``/``move_time_limit``.
        TypeError: an agent that is not an `Agent`.
    """
    _check(env, agent_a, agent_b, num_games, max_steps, move_time_limit)
    seat_a = (np.arange(num_games) % 2).astype(np.int32)
    if isinstance(agent_a, JaxAgent) and isinstance(agent_b, JaxAgent):
        cache = agent_a.__dict__.setdefault("_match_cache", {})
        ck = (id(env), id(agent_b), num_games, max_steps)
        if ck not in cache:
            cache[ck] = (env, agent_b, _jit_match(env, agent_a, agent_b, num_games, max_steps))
        finished, length, returns = jax.device_get(cache[ck][2](key))
        outcome, ret = _outcome(np.asarray(returns), np.asarray(finished), seat_a)
        return MatchResult(outcome, np.asarray(length, np.int32), seat_a == 0, ret, np.zeros((num_games, 2)))

    step = jax.jit(jax.vmap(env.step))
    states = jax.vmap(env.init)(jax.random.split(key, num_games))
    returns = np.zeros((num_games, 2), np.float32)
    slowest = np.zeros((num_games, 2))
    overran = np.zeros(num_games, bool)
    for _ in range(max_steps):
        done = np.asarray(states.terminated | states.truncated) | overran
        if done.all():
            break
        player = np.asarray(states.current_player)
        a_turn = ~done & (player == seat_a)
        b_turn = ~done & (player != seat_a)
        key, ka, kb = jax.random.split(key, 3)
        actions = np.zeros(num_games, np.int32)
        for col, agent, turn, k in ((0, agent_a, a_turn, ka), (1, agent_b, b_turn, kb)):
            if turn.any():
                act, secs = agent.act_batch(env, states, k, turn)
                actions = np.where(turn, act, actions)
                slowest[:, col] = np.maximum(slowest[:, col], np.where(turn, secs, 0.0))
                if move_time_limit is not None:
                    overran |= turn & (secs > move_time_limit)
        live = ~done & ~overran
        nxt = step(states, jnp.asarray(actions))
        states = jax.tree.map(lambda n, s: jnp.where(jnp.reshape(jnp.asarray(live), (-1,) + (1,) * (n.ndim - 1)), n, s), nxt, states)
        returns += np.where(live[:, None], np.asarray(states.rewards), 0.0)
    finished = np.asarray(states.terminated | states.truncated) & ~overran
    outcome, ret = _outcome(returns, finished, seat_a)
    return MatchResult(outcome, np.asarray(states.step_count, np.int32), seat_a == 0, ret, slowest)
