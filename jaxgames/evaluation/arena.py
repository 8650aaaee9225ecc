"""The arena: batched games of any registered game between agents, 1 to 8 seats, rated by placement.

`play` plays ``G`` games of a *lineup* (which agent fills each of the game's
``N`` seats) with the seats rotated or permuted over the games, so that no
agent keeps the first-mover or spawn advantage, and returns per game and
seat ``[G, N]`` returns, placements, the game length and the per-game
statistics the game reports (`jaxgames.core.Env.game_statistics`, e.g.
Battlesnake's elimination causes). Turn-taking and simultaneous games alike:
in a turn-taking game the agent holding ``current_player`` acts; in a
simultaneous game every seat's agent acts and the joint action is stepped.

When every agent is a `JaxAgent` the whole match is ONE compiled
``lax.while_loop`` (built once per game value, agents' settings and sizes,
then cached); an agent computes only in the steps where it is to move
somewhere in the batch (``lax.cond``). The agents' device arrays (network
parameters, solver tables: `JaxAgent.arrays`) are an argument of the
compiled match, which is keyed on the agents' `JaxAgent.settings_key`: fresh
agents of equal settings (e.g. new parameters at every evaluation during
training) reuse it and compile nothing. With ``refill`` the games stream
through fewer batch rows, a row taking the next game as its game ends
(`play`). With a `HostAgent` the loop runs on the host and the host agent
decides only for the games where its seat is to move, each decision timed.

Outcomes. A seat's *return* is the sum of its rewards. Its *placement* is 1
+ the number of seats ranked strictly above it (standard competition
ranking, "1224"): ranked by return, then by the game's tie-break
(`jaxgames.core.Env.placement_tiebreak`: in Battlesnake, the later a snake
was eliminated, the better). A game still running after ``max_steps``
steps, or in which a host agent overran ``move_time_limit`` seconds on one
move, is *timed out*; every seat of it is placed 1 (a draw, as Dasgupta &
Chong count an Onitama game that reaches the turn limit). A seat has *won*
a game it placed 1 alone that did not time out (`ArenaResult.won`). A solo
(one-seat) game is won only with a positive return: a solo Battlesnake
that dies (return -1) or survives to the turn limit (return 0) has not
won, so its win rate is 0 and its returns and game lengths are what to read.

`play_match` is the two-agent view of `play` (results from agent A's side),
kept for two-player games: game ``i`` has A in seat 0, moving first, when
``i`` is even and in seat 1 when odd.

Sources: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With
Dots And Boxes" (course report, undated), section 5.7 (wins, losses, draws
and timeouts against each opponent); Dasgupta & Chong, "Mastering the game
of Onitama with Reinforcement Learning" (NUS USP group report, 2021),
section 6.3.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry_2x32

from jaxgames import parallel
from jaxgames.agents.base import Agent, JaxAgent
from jaxgames.core import Env

WIN, LOSS, DRAW, TIMEOUT = 1, -1, 0, 2
"""Per-game outcome codes of `MatchResult`, from agent A's side."""

SEATINGS = ("rotate", "permute", "fixed")
"""How seats are assigned over the games of `play` (see `seating_plan`)."""


class ArenaResult(NamedTuple):
    """The games of one `play` call; arrays by game ``[G]`` and by seat (player id) ``[G, N]``.

    Attributes:
        names: the agents' names, by agent index ``k`` (``len(agents)``).
        agent_of_seat: int32 ``[G, N]``: the agent index in each seat.
        returns: float32 ``[G, N]``: summed rewards of each seat.
        placement: int32 ``[G, N]``: 1 = best; ties share a place (module docstring).
        length: int32 ``[G]``: steps played.
        finished: bool ``[G]``: the game ended by its own rules (terminated, or
            truncated by the game's own turn limit).
        truncated: bool ``[G]``: the game was truncated by its own turn limit.
        timed_out: bool ``[G]``: the arena stopped it (``max_steps``, or a host
            agent over ``move_time_limit``); placements are then all 1.
        max_move_seconds: float64 ``[G, N]``: slowest decision of each seat's
            host agent (0 for JAX agents, which are not timed per game).
        stats: the game's per-game statistics, name -> ``[G, ...]`` numpy array.
    """

    names: tuple
    agent_of_seat: np.ndarray
    returns: np.ndarray
    placement: np.ndarray
    length: np.ndarray
    finished: np.ndarray
    truncated: np.ndarray
    timed_out: np.ndarray
    max_move_seconds: np.ndarray
    stats: dict

    @property
    def num_games(self) -> int:
        return int(self.length.shape[0])

    def won(self) -> np.ndarray:
        """bool ``[G, N]``: the seat won outright (placed 1 alone, game not timed out).

        A one-seat (solo) game has no one to place above, so placing 1 alone
        means nothing there: a solo seat has won only when its return is
        positive, i.e. the game's rules paid it a win. A solo Battlesnake
        (default rewards) never wins: it dies (return ``loss_reward``, -1) or
        is still alive at the turn limit (return 0). Read a solo run's
        `returns`, `length` and ``stats["eliminated_cause"]`` instead: the
        official rules' solo mode (``solo.go``) ends when the snake is
        eliminated and names no winner.
        """
        first = self.placement == 1
        alone = first & (first.sum(axis=1, keepdims=True) == 1) & ~self.timed_out[:, None]
        if self.placement.shape[1] == 1:
            alone &= self.returns > 0
        return alone

    def per_agent(self) -> dict:
        """Per agent ``k``: ``{"seats", "wins", "win_rate", "mean_return", "mean_placement"}`` over its seats."""
        won = self.won()
        out = {}
        for k, name in enumerate(self.names):
            mine = self.agent_of_seat == k
            n = int(mine.sum())
            out[name] = dict(
                seats=n,
                wins=int(won[mine].sum()),
                win_rate=float(won[mine].mean()) if n else float("nan"),
                mean_return=float(self.returns[mine].mean()) if n else float("nan"),
                mean_placement=float(self.placement[mine].mean()) if n else float("nan"),
            )
        return out


class MatchResult(NamedTuple):
    """The games of one two-agent match, from agent A's side.

    Attributes:
        outcome: int8 ``[G]``: `WIN` (1), `LOSS` (-1), `DRAW` (0) or `TIMEOUT` (2).
        length: int32 ``[G]``: steps (turns, i.e. actions) played.
        a_first: bool ``[G]``: agent A held seat 0 (moves first in a turn-taking game).
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


# ----------------------------------------------------------------------------- checks
def _positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be a positive int; got {v!r}")
    return int(v)


def _check(env, agents, lineup, num_games, max_steps, move_time_limit, seating):
    if not isinstance(env, Env):
        raise TypeError(f"env must be a jaxgames Env; got {type(env).__name__}")
    agents = tuple(agents)
    if not agents:
        raise ValueError("the arena needs at least one agent")
    for i, agent in enumerate(agents):
        if not isinstance(agent, Agent):
            raise TypeError(f"agents[{i}] must be a jaxgames.agents.Agent; got {type(agent).__name__}")
    n = env.num_players
    if lineup is None:
        if len(agents) == n:
            lineup = tuple(range(n))
        elif len(agents) == 1:
            lineup = (0,) * n
        else:
            raise ValueError(f"{env.name} has {n} seats and {len(agents)} agents were given: pass lineup=(agent index per seat)")
    lineup = tuple(int(k) for k in lineup)
    if len(lineup) != n:
        raise ValueError(f"lineup must name an agent for each of the {n} seats; got {lineup}")
    if any(k < 0 or k >= len(agents) for k in lineup):
        raise ValueError(f"lineup entries must be agent indices in [0, {len(agents)}); got {lineup}")
    num_games = _positive_int("num_games", num_games)
    max_steps = _positive_int("max_steps", max_steps)
    if move_time_limit is not None and not move_time_limit > 0:
        raise ValueError(f"move_time_limit must be positive seconds or None; got {move_time_limit!r}")
    if seating not in SEATINGS:
        raise ValueError(f"seating must be one of {SEATINGS}; got {seating!r}")
    return agents, lineup, num_games, max_steps


def seating_plan(num_games: int, num_seats: int, seating: str, key: jax.Array) -> np.ndarray:
    """int32 ``[G, N]``: the seat of each lineup slot in each game.

    ``"rotate"``: slot ``s`` sits in seat ``(s + g) mod N`` in game ``g`` (every
    slot holds every seat equally often when ``G`` is a multiple of ``N``);
    ``"permute"``: a uniformly random permutation per game (from ``key``);
    ``"fixed"``: slot ``s`` in seat ``s``.
    """
    g = np.arange(num_games)[:, None]
    s = np.arange(num_seats)[None, :]
    if seating == "rotate":
        return ((s + g) % num_seats).astype(np.int32)
    if seating == "permute":
        keys = jax.random.split(key, num_games)
        return np.asarray(jax.vmap(lambda k: jax.random.permutation(k, num_seats))(keys), np.int32)
    return np.broadcast_to(s, (num_games, num_seats)).astype(np.int32)


def placements(returns: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    """int32 ``[G, N]``: 1 + the number of seats ranked strictly above (by return, then tie-break)."""
    r, t = returns[:, None, :], tiebreak[:, None, :]
    ri, ti = returns[:, :, None], tiebreak[:, :, None]
    above = (r > ri) | ((r == ri) & (t > ti))
    return (1 + above.sum(axis=2)).astype(np.int32)


# ----------------------------------------------------------------------------- compiled kernels
@functools.lru_cache(maxsize=64)
def _batched_step(env: Env):
    """``jit(vmap(env.step))`` with params shared by the batch, built once per game value."""
    return jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))


@functools.lru_cache(maxsize=64)
def _batched_init(env: Env):
    return jax.jit(jax.vmap(env.init, in_axes=(0, None)))


def _tiebreak_and_stats(env: Env, states):
    """The game's tie-break ``[G, N]`` and per-game statistics ``{name: [G, ...]}`` of final states."""
    return jax.vmap(lambda s: (env.placement_tiebreak(s), env.game_statistics(s)))(states)


@functools.lru_cache(maxsize=64)
def _final_stats(env: Env):
    """`_tiebreak_and_stats` jitted once per game value (the host loop's end)."""
    return jax.jit(functools.partial(_tiebreak_and_stats, env))


def _agent_actions(env, agents, holders, states, seat_of_slot, agent_of_seat, live, game_keys):
    """Joint actions ``[G]`` or ``[G, N]`` of every agent for one step, inside the compiled match.

    ``game_keys(k, j) -> [G]`` keys: agent ``k``'s keys for one step, one per
    game, for its ``j``-th lineup slot (simultaneous games) or ``j=None``
    (turn-taking games); see `_shared_game_keys` and `_slot_game_keys`.
    """
    G = states.current_player.shape[0]
    if env.simultaneous:
        actions = jnp.zeros((G, env.num_players), jnp.int32)
        rows = jnp.arange(G)
        for k, agent in enumerate(agents):
            pol = agent.batched_policy(env)
            for j, slot in enumerate(holders[k]):
                seats = seat_of_slot[:, slot]
                act = pol(states, game_keys(k, j), seats)
                actions = actions.at[rows, seats].set(act.astype(jnp.int32))
        return actions
    mover = jnp.clip(states.current_player, 0, env.num_players - 1)
    owner = jnp.take_along_axis(agent_of_seat, mover[:, None], axis=1)[:, 0]
    actions = jnp.zeros((G,), jnp.int32)
    for k, agent in enumerate(agents):
        pol = agent.batched_policy(env)
        mine = live & (owner == k)
        k_keys = game_keys(k, None)
        act = jax.lax.cond(
            jnp.any(mine),
            lambda: pol(states, k_keys, mover).astype(jnp.int32),
            lambda: jnp.zeros((G,), jnp.int32),
        )
        actions = jnp.where(mine, act, actions)
    return actions


def _agent_key(agent_keys, k: int, j):
    """Agent ``k``'s key of one step: row ``k`` of ``split(act_key, K)``, folded with slot ``j`` unless None."""
    return agent_keys[k] if j is None else jax.random.fold_in(agent_keys[k], j)


def _shared_game_keys(act_key, num_agents: int, split_games):
    """`_agent_actions`' ``game_keys`` when every game of the batch is at the same step (one ``act_key``)."""
    agent_keys = jax.random.split(act_key, num_agents)
    return lambda k, j: split_games(_agent_key(agent_keys, k, j))


def _slot_game_keys(act_keys, games, num_agents: int, total: int):
    """`_agent_actions`' ``game_keys`` for slots at their own steps: ``act_keys`` ``[S]``, game indices ``[S]``."""
    agent_keys = jax.vmap(lambda a: jax.random.split(a, num_agents))(act_keys)  # [S, K]
    return lambda k, j: _split_rows(jax.vmap(lambda a: _agent_key(a, k, j))(agent_keys), games, total)


def _split_rows(keys, rows, n: int):
    """Keys ``[S]``: row ``rows[s]`` of ``jax.random.split(keys[s], n)``.

    With partitionable threefry keys (JAX's default) row ``r`` of a split is
    the threefry hash of the counter ``(0, r)``, whatever ``n``: it is
    computed alone (`tests/test_arena_refill.py` checks the identity). Other
    PRNGs split all ``n`` rows and take one.
    """
    typed = jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)
    if typed and jax.random.key_impl(keys) == "threefry2x32" and jax.config.jax_threefry_partitionable and n < 2**32:
        counts = jnp.stack([jnp.zeros(rows.shape, jnp.uint32), rows.astype(jnp.uint32)], axis=-1)
        bits = jax.vmap(threefry_2x32)(jax.random.key_data(keys), counts)
        return jax.random.wrap_key_data(bits, impl=jax.random.key_impl(keys))
    return jax.vmap(lambda k, r: jax.random.split(k, n)[r])(keys, rows)


_MATCHES: dict = {}
"""`_compiled_match`'s cache: jitted matches by (env, agents' settings keys, sizes); the oldest dropped past `_MAX_MATCHES`."""
_MAX_MATCHES = 32


def _compiled_match(env: Env, agents: tuple, lineup: tuple, num_games: int, max_steps: int, sharding=None,
                    total_games: int | None = None, refill: bool = False):
    """The jitted match of `_build_match` (``refill``: `_build_refill_match` with ``num_games`` rows and
    ``total_games`` games), cached on ``(env, settings keys of agents, lineup, sizes, sharding, refill)``.

    Agents of equal `JaxAgent.settings_key` share it: the compiled function
    takes their `JaxAgent.arrays` as its 4th argument,
    ``match(key, seat_of_slot, params, arrays, start=0)``; the agents it
    was built with (the first ones of these settings) lend their code only.
    """
    settings = tuple(agent.settings_key(env) for agent in agents)
    cache_key = (env, settings, lineup, num_games, max_steps, sharding, total_games, refill)
    fn = _MATCHES.pop(cache_key, None)
    if fn is None:
        if refill:
            fn = _build_refill_match(env, agents, lineup, num_games, total_games, max_steps, sharding)
        else:
            fn = _build_match(env, agents, lineup, num_games, max_steps, sharding, total_games)
        while len(_MATCHES) >= _MAX_MATCHES:
            _MATCHES.pop(next(iter(_MATCHES)))
    _MATCHES[cache_key] = fn  # most recently used last
    return fn


def _agent_arrays(agents) -> tuple:
    """The compiled match's ``arrays`` argument: `JaxAgent.arrays` of each agent."""
    return tuple(agent.arrays() for agent in agents)


def _build_match(env: Env, agents: tuple, lineup: tuple, num_games: int, max_steps: int, sharding=None,
                 total_games: int | None = None):
    """The whole match of JAX agents as one jitted ``while_loop`` (`_compiled_match` caches it).

    The agents' arrays are the argument ``arrays`` (`JaxAgent.with_arrays`
    rebuilds each agent around them), not constants of the compiled code.

    ``sharding``: a batch `NamedSharding` (`jaxgames.parallel.batch_sharding`)
    the game states are constrained to, so the games are split over its
    devices; None: no constraint (one device).

    ``total_games``: the match is games ``start .. start + num_games - 1`` of
    ``total_games`` (a chunk; ``start`` is the compiled function's 4th
    argument): every per-game key is row ``start + g`` of a split into
    ``total_games``, so a game's random streams do not depend on the chunk
    it is played in. None: ``num_games`` (one chunk).
    """
    total = num_games if total_games is None else total_games

    def split_games(k, start):
        if total == num_games:
            return jax.random.split(k, num_games)
        return jax.lax.dynamic_slice_in_dim(jax.random.split(k, total), start, num_games)

    constrain = (lambda t: t) if sharding is None else (lambda t: jax.lax.with_sharding_constraint(t, sharding))
    holders = tuple(tuple(s for s, a in enumerate(lineup) if a == k) for k in range(len(agents)))
    lineup_arr = jnp.asarray(lineup, jnp.int32)

    def run(key, seat_of_slot, params, arrays, start=0):
        G, N = num_games, env.num_players
        players = tuple(agent.with_arrays(a) for agent, a in zip(agents, arrays))
        agent_of_seat = jnp.zeros((G, N), jnp.int32).at[jnp.arange(G)[:, None], seat_of_slot].set(lineup_arr[None, :])
        key, init_key = jax.random.split(key)
        states = constrain(jax.vmap(env.init, in_axes=(0, None))(split_games(init_key, start), params))

        def cond(carry):
            states, _, t, _ = carry
            return (t < max_steps) & ~jnp.all(states.terminated | states.truncated)

        def body(carry):
            states, returns, t, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            live = ~(states.terminated | states.truncated)
            game_keys = _shared_game_keys(act_key, len(players), lambda k: split_games(k, start))
            actions = _agent_actions(env, players, holders, states, seat_of_slot, agent_of_seat, live, game_keys)
            states = jax.vmap(env.step, in_axes=(0, 0, 0, None))(states, actions, split_games(step_key, start), params)
            states = constrain(states)
            return states, returns + states.rewards, t + 1, key

        returns = jnp.zeros((G, N), jnp.float32)
        states, returns, _, _ = jax.lax.while_loop(cond, body, (states, returns, jnp.int32(0), key))
        tiebreak, stats = _tiebreak_and_stats(env, states)
        return states.terminated, states.truncated, states.step_count, returns, agent_of_seat, tiebreak, stats

    return jax.jit(run)


def _build_refill_match(env: Env, agents: tuple, lineup: tuple, slots: int, total: int, max_steps: int,
                        sharding=None):
    """``total`` games through ``slots`` batch rows: a row whose game ends takes the next game at once.

    Game ``g`` draws what it draws in `_build_match` over ``total`` games in
    one batch: row ``g`` of the init split, and at its own step ``t`` row ``g``
    of the splits of the match's step-``t`` keys (the loop's key chain,
    computed before the loop). So the result equals the one-batch match's
    bitwise, while no row steps a finished game as long as games are left.
    Returns ``match(key, seat_of_game, params, arrays)``, ``seat_of_game``
    int32 ``[total, N]``; outputs as `_build_match`'s, by game.
    """
    constrain = (lambda t: t) if sharding is None else (lambda t: jax.lax.with_sharding_constraint(t, sharding))
    holders = tuple(tuple(s for s, a in enumerate(lineup) if a == k) for k in range(len(agents)))
    lineup_arr = jnp.asarray(lineup, jnp.int32)
    N = env.num_players
    init = jax.vmap(env.init, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def select(rows, a, b):
        return jax.tree.map(lambda x, y: jnp.where(jnp.reshape(rows, (-1,) + (1,) * (x.ndim - 1)), x, y), a, b)

    def run(key, seat_of_game, params, arrays):
        players = tuple(agent.with_arrays(a) for agent, a in zip(agents, arrays))
        agent_of_game = jnp.zeros((total, N), jnp.int32).at[jnp.arange(total)[:, None], seat_of_game].set(
            lineup_arr[None, :])
        key, init_key = jax.random.split(key)
        init_keys = jax.random.split(init_key, total)

        def chain(k, _):
            k, act_key, step_key = jax.random.split(k, 3)
            return k, (act_key, step_key)

        _, (act_keys, step_keys) = jax.lax.scan(chain, key, None, length=max_steps)

        def start(games):  # rows past the last game hold a copy of it, ended (agents may skip it), never recorded
            fresh = init(init_keys[jnp.minimum(games, total - 1)], params)
            return constrain(fresh.replace(terminated=fresh.terminated | (games >= total)))

        games = jnp.arange(slots, dtype=jnp.int32)
        states = start(games)
        final, stats = jax.eval_shape(functools.partial(_tiebreak_and_stats, env), states)
        blank = lambda x: jnp.zeros((total,) + x.shape[1:], x.dtype)  # noqa: E731
        out = dict(terminated=jnp.zeros(total, bool), truncated=jnp.zeros(total, bool),
                   length=jnp.zeros(total, jnp.int32), returns=jnp.zeros((total, N), jnp.float32),
                   tiebreak=blank(final), stats=jax.tree.map(blank, stats))
        carry = (states, jnp.zeros((slots, N), jnp.float32), jnp.zeros(slots, jnp.int32), games,
                 jnp.int32(min(slots, total)), out)

        def finish(carry, ended):
            states, returns, t, games, next_game, out = carry
            rows = jnp.where(ended, games, total)  # out of range: dropped
            tiebreak, stats = _tiebreak_and_stats(env, states)
            put = lambda acc, x: acc.at[rows].set(x, mode="drop")  # noqa: E731
            out = dict(terminated=put(out["terminated"], states.terminated),
                       truncated=put(out["truncated"], states.truncated),
                       length=put(out["length"], states.step_count), returns=put(out["returns"], returns),
                       tiebreak=put(out["tiebreak"], tiebreak), stats=jax.tree.map(put, out["stats"], stats))
            games = jnp.where(ended, next_game + jnp.cumsum(ended) - 1, games).astype(jnp.int32)
            states = select(ended, start(games), states)
            returns = jnp.where(ended[:, None], 0.0, returns)
            t = jnp.where(ended, 0, t)
            return states, returns, t, games, next_game + jnp.sum(ended, dtype=jnp.int32), out

        def body(carry):
            states, returns, t, games, next_game, out = carry
            busy = games < total
            g = jnp.minimum(games, total - 1)
            live = busy & ~(states.terminated | states.truncated)
            now = jnp.minimum(t, max_steps - 1)
            game_keys = _slot_game_keys(act_keys[now], g, len(players), total)
            actions = _agent_actions(env, players, holders, states, seat_of_game[g], agent_of_game[g], live,
                                     game_keys)
            states = constrain(step(states, actions, _split_rows(step_keys[now], g, total), params))
            carry = (states, returns + states.rewards, t + 1, games, next_game, out)
            ended = busy & (states.terminated | states.truncated | (t + 1 >= max_steps))
            return jax.lax.cond(jnp.any(ended), finish, lambda c, _: c, carry, ended)

        *_, out = jax.lax.while_loop(lambda c: jnp.any(c[3] < total), body, carry)
        return (out["terminated"], out["truncated"], out["length"], out["returns"], agent_of_game, out["tiebreak"],
                out["stats"])

    return jax.jit(run)


# ----------------------------------------------------------------------------- play
def play(
    env: Env,
    agents: Sequence[Agent],
    num_games: int,
    key: jax.Array,
    *,
    lineup: Sequence[int] | None = None,
    seating: str = "rotate",
    max_steps: int = 1000,
    move_time_limit: float | None = None,
    params=None,
    mesh=None,
    chunk_size: int | None = None,
    refill: bool = False,
) -> ArenaResult:
    """Plays ``num_games`` games of ``env`` between ``agents`` in one batch (or in chunks).

    Args:
        env: any `jaxgames.core.Env`: turn-taking or simultaneous, 1 to 8 seats.
        agents: ``K >= 1`` `jaxgames.agents.Agent` s (the same object may appear twice).
        num_games: ``G``.
        key: PRNG key (seating, starts, agents' decisions and chance events are
            all drawn from subkeys of it).
        lineup: the agent index filling each of the ``N`` lineup slots, e.g.
            ``(0, 1, 1, 1)`` for one agent against three copies of another.
            Default: ``range(N)`` when ``K == N``, all zeros when ``K == 1``.
        seating: how slots map to seats over the games (`seating_plan`):
            ``"rotate"`` (default), ``"permute"`` or ``"fixed"``.
        max_steps: steps after which an unfinished game is timed out.
        move_time_limit: seconds; a host agent over it on one move times the
            game out (None: no limit). JAX agents are not timed.
        params: the game's params for every game (default ``env.default_params``).
        mesh: a `jax.sharding.Mesh` with a ``"batch"`` axis
            (`jaxgames.parallel.make_mesh`): the games are split over its
            devices (padded to a multiple of the device count). Every game
            draws from its own subkeys, so the result equals the one-device
            result bitwise. JAX agents only.
        chunk_size: play at most this many games per compiled call (bounds
            device memory); the result equals the unchunked one bitwise. With
            a mesh it is rounded up to a multiple of the device count. JAX
            agents only. None: one batch.
        refill: play every game in one compiled loop over ``chunk_size``
            batch rows (all ``num_games`` if None): as soon as a game ends,
            its row takes the next game, so no row steps a finished game
            while games are left. The result equals the one-batch result
            bitwise; the time is about the sum of the games' lengths over
            the rows, not the sum of each chunk's longest game. JAX agents
            only.

    Returns:
        An `ArenaResult`.

    Raises:
        TypeError: ``env`` not an Env, an agent not an Agent.
        ValueError: no agents, a bad lineup (wrong length or agent index),
            a non-positive ``num_games``/``max_steps``/``move_time_limit``, an
            unknown seating, a ``mesh``, ``chunk_size`` or ``refill`` with a
            host agent, a ``chunk_size`` that is not a positive int, a
            ``refill`` that is not a bool.
    """
    agents, lineup, num_games, max_steps = _check(env, agents, lineup, num_games, max_steps, move_time_limit, seating)
    params = env.default_params if params is None else params
    seat_key, play_key = jax.random.split(key)
    seat_of_slot = seating_plan(num_games, env.num_players, seating, seat_key)
    names = tuple(a.name for a in agents)
    N = env.num_players
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive int or None; got {chunk_size!r}")
    if not isinstance(refill, (bool, np.bool_)):
        raise ValueError(f"refill must be a bool; got {refill!r}")
    all_jax = all(isinstance(a, JaxAgent) for a in agents)
    if (mesh is not None or chunk_size is not None or refill) and not all_jax:
        what = "a mesh" if mesh is not None else "chunk_size" if chunk_size is not None else "refill"
        raise ValueError(f"arena.play with {what} needs every agent to be a JaxAgent (host agents run on the host)")
    if refill:
        terminated, truncated, length, returns, agent_of_seat, tiebreak, stats = _refill_match(
            env, agents, lineup, np.asarray(seat_of_slot), max_steps, params, play_key, mesh, chunk_size
        )
        slowest = np.zeros((num_games, N))
        overran = np.zeros(num_games, bool)
    elif mesh is not None or (chunk_size is not None and chunk_size < num_games):
        terminated, truncated, length, returns, agent_of_seat, tiebreak, stats = _chunked_match(
            env, agents, lineup, np.asarray(seat_of_slot), max_steps, params, play_key, mesh, chunk_size
        )
        slowest = np.zeros((num_games, N))
        overran = np.zeros(num_games, bool)
    elif all_jax:
        match = _compiled_match(env, agents, lineup, num_games, max_steps)
        out = jax.device_get(match(play_key, jnp.asarray(seat_of_slot), params, _agent_arrays(agents)))
        terminated, truncated, length, returns, agent_of_seat, tiebreak, stats = out
        slowest = np.zeros((num_games, N))
        overran = np.zeros(num_games, bool)
    else:
        terminated, truncated, length, returns, agent_of_seat, tiebreak, stats, slowest, overran = _host_match(
            env, agents, lineup, seat_of_slot, num_games, max_steps, move_time_limit, params, play_key
        )
    terminated, truncated = np.asarray(terminated), np.asarray(truncated)
    finished = (terminated | truncated) & ~overran
    timed_out = ~finished
    returns = np.asarray(returns, np.float32)
    place = placements(returns, np.asarray(tiebreak, np.float32))
    place[timed_out] = 1
    return ArenaResult(
        names=names,
        agent_of_seat=np.asarray(agent_of_seat, np.int32),
        returns=returns,
        placement=place,
        length=np.asarray(length, np.int32),
        finished=finished,
        truncated=truncated & ~terminated & finished,
        timed_out=timed_out,
        max_move_seconds=slowest,
        stats={k: np.asarray(v) for k, v in stats.items()},
    )


def _chunked_match(env, agents, lineup, seat_of_slot, max_steps, params, play_key, mesh, chunk_size):
    """The compiled match in chunks of ``chunk_size`` games (the last padded), optionally over a mesh; host numpy outputs."""
    num_games = seat_of_slot.shape[0]
    shards = 1 if mesh is None else parallel.num_shards(mesh)
    size = num_games if chunk_size is None else min(int(chunk_size), num_games)
    size = -(-size // shards) * shards
    seats, _ = parallel.pad_batch(seat_of_slot, size)  # the last game repeated: every chunk has one shape
    total = seats.shape[0]
    sharding = None if mesh is None else parallel.batch_sharding(mesh)
    match = _compiled_match(env, agents, lineup, size, max_steps, sharding, None if total == size else total)
    arrays = _agent_arrays(agents)
    if mesh is not None:
        params = parallel.replicate(params, mesh)
        arrays = parallel.replicate(arrays, mesh)
    outs = []
    for start in range(0, total, size):
        rows = seats[start:start + size]
        rows = jnp.asarray(rows) if mesh is None else parallel.shard_batch(rows, mesh)
        outs.append(parallel.gather(match(play_key, rows, params, arrays, np.int32(start))))
    out = jax.tree.map(lambda *xs: np.concatenate(xs, axis=0), *outs)
    return parallel.unpad(out, num_games)


def _refill_match(env, agents, lineup, seat_of_slot, max_steps, params, play_key, mesh, chunk_size):
    """`_build_refill_match` over ``chunk_size`` rows (rounded up to the mesh's devices); host numpy outputs."""
    num_games = seat_of_slot.shape[0]
    shards = 1 if mesh is None else parallel.num_shards(mesh)
    rows = num_games if chunk_size is None else min(int(chunk_size), num_games)
    rows = -(-rows // shards) * shards
    sharding = None if mesh is None else parallel.batch_sharding(mesh)
    match = _compiled_match(env, agents, lineup, rows, max_steps, sharding, num_games, refill=True)
    arrays = _agent_arrays(agents)
    seats = jnp.asarray(seat_of_slot)
    if mesh is not None:
        params, arrays, seats = parallel.replicate((params, arrays, seats), mesh)
    return parallel.gather(match(play_key, seats, params, arrays))


def _host_match(env, agents, lineup, seat_of_slot, G, max_steps, move_time_limit, params, key):
    """The match loop on the host (some agent is a `HostAgent`)."""
    N = env.num_players
    agent_of_seat = np.zeros((G, N), np.int32)
    agent_of_seat[np.arange(G)[:, None], seat_of_slot] = np.asarray(lineup)[None, :]
    key, init_key = jax.random.split(key)
    states = _batched_init(env)(jax.random.split(init_key, G), params)
    step = _batched_step(env)
    returns = np.zeros((G, N), np.float32)
    slowest = np.zeros((G, N))
    overran = np.zeros(G, bool)
    rows = np.arange(G)
    for _ in range(max_steps):
        done = np.asarray(states.terminated | states.truncated) | overran
        if done.all():
            break
        key, act_key, step_key = jax.random.split(key, 3)
        agent_keys = jax.random.split(act_key, len(agents) * N)
        if env.simultaneous:
            actions = np.zeros((G, N), np.int32)
            for slot, k in enumerate(lineup):
                seats = seat_of_slot[:, slot]
                act, secs = agents[k].act_batch(env, states, agent_keys[k * N + slot], seats, ~done)
                actions[rows, seats] = act
                slowest[rows, seats] = np.maximum(slowest[rows, seats], np.where(~done, secs, 0.0))
                if move_time_limit is not None:
                    overran |= ~done & (secs > move_time_limit)
        else:
            actions = np.zeros(G, np.int32)
            mover = np.clip(np.asarray(states.current_player), 0, N - 1)
            owner = agent_of_seat[rows, mover]
            for k, agent in enumerate(agents):
                turn = ~done & (owner == k)
                if not turn.any():
                    continue
                act, secs = agent.act_batch(env, states, agent_keys[k * N], mover, turn)
                actions = np.where(turn, act, actions)
                slowest[rows, mover] = np.maximum(slowest[rows, mover], np.where(turn, secs, 0.0))
                if move_time_limit is not None:
                    overran |= turn & (secs > move_time_limit)
        live = ~done & ~overran
        nxt = step(states, jnp.asarray(actions), jax.random.split(step_key, G), params)
        live_j = jnp.asarray(live)
        states = jax.tree.map(lambda n, s: jnp.where(jnp.reshape(live_j, (-1,) + (1,) * (n.ndim - 1)), n, s), nxt, states)
        returns += np.where(live[:, None], np.asarray(states.rewards), 0.0)
    tiebreak, stats = _final_stats(env)(states)
    return (
        states.terminated, states.truncated, states.step_count, returns, agent_of_seat,
        tiebreak, stats, slowest, overran,
    )


def play_match(
    env,
    agent_a: Agent,
    agent_b: Agent,
    num_games: int,
    key: jax.Array,
    *,
    max_steps: int = 1000,
    move_time_limit: float | None = None,
    mesh=None,
    chunk_size: int | None = None,
    refill: bool = False,
) -> MatchResult:
    """Plays ``num_games`` games of A against B in a two-player game, alternating seats.

    Args:
        env: a two-player `jaxgames.core.Env` (turn-taking or simultaneous).
        agent_a, agent_b: `jaxgames.agents.Agent` instances (may be the same object).
        num_games: games to play, ``G``; A holds seat 0 (moves first) in even games.
        key: PRNG key.
        max_steps, move_time_limit, mesh, chunk_size, refill: see `play`.

    Returns:
        A `MatchResult` from A's side.

    Raises:
        ValueError: a game without exactly two players, and see `play`.
        TypeError: see `play`.
    """
    if isinstance(env, Env) and env.num_players != 2:
        raise ValueError(f"play_match is for two-player games; {env!r} has {env.num_players} players (use arena.play)")
    res = play(env, (agent_a, agent_b), num_games, key, max_steps=max_steps, move_time_limit=move_time_limit, mesh=mesh,
               chunk_size=chunk_size, refill=refill)
    seat_a = np.argmax(res.agent_of_seat == 0, axis=1)
    rows = np.arange(res.num_games)
    pa, pb = res.placement[rows, seat_a], res.placement[rows, 1 - seat_a]
    outcome = np.where(pa < pb, WIN, np.where(pa > pb, LOSS, DRAW))
    outcome = np.where(res.timed_out, TIMEOUT, outcome).astype(np.int8)
    returns = np.stack([res.returns[rows, seat_a], res.returns[rows, 1 - seat_a]], axis=1)
    slowest = np.stack([res.max_move_seconds[rows, seat_a], res.max_move_seconds[rows, 1 - seat_a]], axis=1)
    return MatchResult(outcome, res.length, seat_a == 0, returns, slowest)
