"""Depth-limited alpha-beta over any two-player zero-sum sequential `Env`, with an evaluation function.

Sources: Knuth & Moore 1975, "An analysis of alpha-beta pruning" (negamax
form, fail-soft); the minimax, transposition-table and alpha-beta agent of
El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And
Boxes" (course report, undated), sections 4-5; Torralba, "Multi-Agent
Systems: Adversarial Search and Game Theory" (Machine Intelligence lecture
12, Aalborg University, 2022), the minimax slides. Any two-player game gets
a classical search from its `Env` alone.

Values are always from the side of the player to move, and every edge of
the tree is backed up by `jaxgames.search.sign` (the one owner of the
zero-sum sign rule): ``Q(s, a) = reward + discount * V(child)`` with the
mover's reward, discount -1 when the turn passes, +1 when the same player
moves again (Dots-and-Boxes' extra turn), 0 at a terminal child (whose
value is then the reward alone). At the depth limit a non-terminal state is
worth ``evaluate(state)``, from *its* player to move's side.

The search runs on the host (it is inherently sequential), but it never
re-implements the rules: a node is expanded by ONE jitted call that steps every action of the state
with ``jax.vmap(env.step)``; illegal actions are stepped too and ignored.
That function is compiled once per game *value* (`Env`s hash and compare by
their settings) and reused by every search on an equal env.

The search treats the game as deterministic: every step gets the same
``key`` (a per-node key would make transpositions disagree). A game with
chance events can still be searched with a fixed key ("determinised"), but
the value then holds for that one outcome of chance only.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, Callable, Hashable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.search import sign

EXACT, LOWER, UPPER = 0, 1, 2
"""Flags of a transposition-table entry: the stored value is exact, a lower bound, an upper bound."""


class SearchTimeout(Exception):
    """Raised inside a search when its deadline (or node budget) is exceeded."""


def bound_flag(value: float, alpha: float, beta: float) -> int:
    """The table flag of a fail-soft result ``value`` searched with the window ``(alpha, beta)``.

    `UPPER` if ``value <= alpha`` (every move failed low), `LOWER` if
    ``value >= beta`` (a cutoff), else `EXACT` (Knuth & Moore 1975).
    """
    return UPPER if value <= alpha else LOWER if value >= beta else EXACT


def decides(flag: int, value: float, alpha: float, beta: float) -> bool:
    """Whether a stored ``(flag, value)`` answers a search with the window ``(alpha, beta)`` without searching."""
    return flag == EXACT or (flag == LOWER and value >= beta) or (flag == UPPER and value <= alpha)


class AlphaBetaResult(NamedTuple):
    """Outcome of `search`.

    Attributes:
        value: float, the value of the root for its player to move (exact when ``exact``).
        best_action: int, the best root action of the deepest finished
            iteration; -1 when the root is terminal.
        depth: int, the ply limit of the deepest finished iteration (0 at a terminal root).
        nodes: int, states visited over all iterations.
        seconds: float, wall-clock time.
        exact: bool, no leaf of the last iteration was cut off by the depth
            limit, so ``value`` is the game-theoretic value.
    """

    value: float
    best_action: int
    depth: int
    nodes: int
    seconds: float
    exact: bool


class TableEntry(NamedTuple):
    """One transposition-table entry (the values of the ``table`` dict).

    Attributes:
        depth: plies searched below the state.
        flag: `EXACT`, `LOWER` or `UPPER`.
        value: float, the value or bound, for the state's player to move.
        best_action: int, the best action found (-1 none), tried first next time.
        horizon: bool, some leaf below was cut off by the depth limit (False:
            the entry holds for any depth).
    """

    depth: int
    flag: int
    value: float
    best_action: int
    horizon: bool


def _pack(leaves):
    """One uint8 vector holding the bytes of every leaf (one device-to-host transfer instead of one per leaf)."""
    parts = []
    for leaf in leaves:
        leaf = leaf.astype(jnp.uint8) if leaf.dtype == jnp.bool_ else leaf
        parts.append(jax.lax.bitcast_convert_type(leaf, jnp.uint8).reshape(-1))
    return jnp.concatenate(parts)


def _unpack(buf: np.ndarray, specs) -> list:
    """The numpy leaves of `_pack`'s vector, given their ``(shape, dtype, nbytes)``."""
    out, offset = [], 0
    for shape, dtype, nbytes in specs:
        out.append(buf[offset : offset + nbytes].view(dtype).reshape(shape))
        offset += nbytes
    return out


class _Expansion(NamedTuple):
    children: list  # numpy leaves, each [A, ...]
    treedef: Any
    reward: np.ndarray  # float32 [A]
    discount: np.ndarray  # float32 [A]

    def child(self, a: int):
        return jax.tree.unflatten(self.treedef, [leaf[a] for leaf in self.children])


@functools.lru_cache(maxsize=64)
def expander(env) -> Callable:
    """The jitted expansion of a game, built once per env value.

    Args:
        env: a two-player sequential `Env` (hashable: equal envs share the function).

    Returns:
        ``expand(state, key, params) -> (children, reward, discount)`` (jitted):
        ``children`` the states after each action ``0 .. num_actions - 1``
        (leading axis ``[A]``, illegal actions included), ``reward`` float32
        ``[A]`` the mover's reward of each step (`sign.mover_reward`),
        ``discount`` float32 ``[A]`` (`sign.discount`, 0 where the child is
        terminated or truncated). ``key`` may be None for a deterministic
        game, ``params`` None for the game's defaults.
    """
    num_actions = int(env.num_actions)

    def expand(state, key, params):
        actions = jnp.arange(num_actions, dtype=jnp.int32)
        if params is None:  # static: None is an empty pytree
            children = jax.vmap(lambda a: env.step(state, a, key))(actions)
        else:
            children = jax.vmap(lambda a: env.step(state, a, key, params))(actions)
        mover = jnp.broadcast_to(state.current_player, (num_actions,))
        done = children.terminated | children.truncated
        return children, sign.mover_reward(children.rewards, mover), sign.discount(mover, children.current_player, done)

    return jax.jit(expand)


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple((tuple(np.shape(x)), str(getattr(x, "dtype", type(x).__name__))) for x in leaves)


_HOST_EXPANDERS: dict = {}


def _host_expander(env, state, key, params) -> tuple[Callable, tuple, int]:
    """`expander` returning one packed byte vector per call (host search: one transfer per node).

    Cached on the env value and the structure, shapes and dtypes of the
    arguments, so neither tracing nor compiling is repeated between searches.

    Returns:
        ``(packed, specs, n)``: ``packed(state_leaves, key, params) -> uint8 [bytes]``
        (jitted), the ``(shape, dtype, nbytes)`` of its leaves (the ``n``
        children leaves, then reward and discount).
    """
    signature = (env, _signature(state), _signature(key), _signature(params))
    cached = _HOST_EXPANDERS.get(signature)
    if cached is not None:
        return cached
    expand, treedef = expander(env), jax.tree.structure(state)
    out = jax.tree.leaves(jax.eval_shape(expand, state, key, params))
    specs = tuple((tuple(s.shape), np.dtype(s.dtype), int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize) for s in out)

    def packed(leaves, key, params):
        children, reward, discount = expand(jax.tree.unflatten(treedef, leaves), key, params)
        return _pack(jax.tree.leaves(children) + [reward, discount])

    cached = _HOST_EXPANDERS[signature] = (jax.jit(packed), specs, len(out) - 2)
    return cached


class _Searcher:
    def __init__(self, env, state, evaluate, key, params, hash_fn, order_moves, table):
        self.evaluate, self.key, self.params = evaluate, key, params
        self.hash_fn, self.order_moves = hash_fn, order_moves
        self.table = table
        self.nodes = 0
        self.deadline: float | None = None
        self.treedef = jax.tree.structure(state)
        self.packed, self.specs, self.num_children_leaves = _host_expander(env, state, key, params)

    def expand(self, state) -> _Expansion:
        buf = np.asarray(self.packed(jax.tree.leaves(state), self.key, self.params))
        leaves = _unpack(buf, self.specs)
        n = self.num_children_leaves
        return _Expansion(leaves[:n], self.treedef, leaves[n], leaves[n + 1])

    def tick(self):
        self.nodes += 1
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise SearchTimeout

    def moves(self, state, first: int) -> Sequence[int]:
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        moves = [int(a) for a in (legal if self.order_moves is None else self.order_moves(state, legal))]
        if first >= 0 and first in moves:
            moves.remove(first)
            moves.insert(0, first)
        return moves

    def node(self, state, depth: int, alpha: float, beta: float, root: bool = False) -> tuple[float, bool, int]:
        """``(value, horizon, best_action)`` of a non-terminal state, fail-soft in ``(alpha, beta)``."""
        self.tick()
        if depth == 0:
            return float(self.evaluate(state)), True, -1
        key = None if self.hash_fn is None else self.hash_fn(state)
        first = -1
        if key is not None:
            hit = self.table.get(key)
            if hit is not None:
                first = hit.best_action
                if not root and (hit.depth >= depth or not hit.horizon) and decides(hit.flag, hit.value, alpha, beta):
                    return hit.value, hit.horizon, hit.best_action
        expansion = self.expand(state)
        alpha0 = alpha
        best, best_action, horizon = -math.inf, -1, False
        for a in self.moves(state, first):
            r, d = float(expansion.reward[a]), float(expansion.discount[a])
            if d == 0.0:
                v = r  # terminal child: nothing more to win
            else:
                child = expansion.child(a)
                child_alpha, child_beta = sign.child_window(r, d, alpha, beta)
                child_value, h, _ = self.node(child, depth - 1, child_alpha, child_beta)
                v = sign.backup(r, d, child_value)
                horizon |= h
            if v > best:
                best, best_action = v, a
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        break
        if key is not None:
            self.table[key] = TableEntry(depth, bound_flag(best, alpha0, beta), best, best_action, horizon)
        return best, horizon, best_action


def _check(env, state, max_depth, time_budget, key) -> None:
    if getattr(env, "simultaneous", False) or getattr(env, "num_players", None) != 2:
        raise ValueError(f"alpha-beta searches two-player sequential games; got {env!r}")
    if np.shape(state.current_player) != ():
        raise ValueError(f"search takes one unbatched state; got current_player of shape {np.shape(state.current_player)}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive int; got {max_depth!r}")
    if time_budget is not None and not time_budget > 0:
        raise ValueError(f"time_budget must be positive seconds or None; got {time_budget!r}")
    if key is None and getattr(env, "stochastic", False):
        raise ValueError(f"{env!r} has chance events: pass a key (the search then holds for that key's outcomes)")


def search(
    env,
    state,
    evaluate: Callable[[Any], float],
    *,
    max_depth: int,
    time_budget: float | None = None,
    key: jax.Array | None = None,
    params: Any = None,
    hash_fn: Callable[[Any], Hashable] | None = None,
    order_moves: Callable[[Any, np.ndarray], Sequence[int]] | None = None,
    table: dict | None = None,
) -> AlphaBetaResult:
    """Alpha-beta with iterative deepening from one state of a two-player zero-sum sequential game.

    With a ``time_budget``, searches depth 1, 2, ... ``max_depth`` plies
    (fail-soft negamax with the extra-turn rule of `jaxgames.search.sign`)
    and returns the deepest iteration that finished before the deadline;
    depth 1 always finishes. It stops early once an iteration reached the end
    of the game everywhere (``exact``). The best move of the previous
    iteration (kept in the transposition table) is searched first. Without a
    budget it searches ``max_depth`` plies at once (the shallower iterations
    would serve only move ordering).

    Args:
        env: a two-player sequential `Env` whose rewards are zero-sum, e.g.
            ``jaxgames.make("dots_and_boxes", utility_margin=True)``.
        state: one unbatched state (device or numpy leaves).
        evaluate: ``evaluate(state) -> float``, the heuristic value of a
            non-terminal state at the depth limit, from the side of its
            ``current_player`` and in the units of the rewards still to come
            (it receives one state with numpy leaves).
        max_depth: ply limit (a move that gives an extra turn is a ply too).
        time_budget: seconds for the whole decision, or None (no deadline).
        key: PRNG key passed to every step (needed when ``env.stochastic``);
            None for a deterministic game.
        params: the game's `EnvParams` for every step, or None (defaults).
        hash_fn: ``hash_fn(state) -> hashable``: enables the transposition
            table. It must identify everything the value of the state
            depends on (board, player to move, and e.g. scores when the final
            reward depends on them).
        order_moves: ``order_moves(state, legal_actions) -> actions``, the
            order in which to search the legal actions (int numpy ``[n]``,
            ascending); returning a subset prunes the others (inexact).
            Default: ascending.
        table: a dict to use as the transposition table (mutated; pass the
            same dict between moves to reuse it), or None (a fresh one).

    Returns:
        An `AlphaBetaResult`; at a terminal root value 0.0 and action -1.

    Raises:
        ValueError: a simultaneous or non-two-player game, a batched state,
            ``max_depth < 1``, a non-positive ``time_budget``, a stochastic
            game without a key.
    """
    _check(env, state, max_depth, time_budget, key)
    start = time.perf_counter()
    state = jax.device_get(state)
    if bool(state.terminated | state.truncated):
        return AlphaBetaResult(0.0, -1, 0, 0, time.perf_counter() - start, True)
    s = _Searcher(env, state, evaluate, key, params, hash_fn, order_moves, {} if table is None else table)
    best = None
    # Without a deadline, shallower iterations would only order moves: search max_depth at once.
    first_depth = 1 if time_budget is not None else int(max_depth)
    for depth in range(first_depth, int(max_depth) + 1):
        s.deadline = None if depth == 1 or time_budget is None else start + time_budget
        try:
            value, horizon, action = s.node(state, depth, -math.inf, math.inf, root=True)
        except SearchTimeout:
            break
        best = (float(value), int(action), depth, not horizon)
        if not horizon:
            break  # the whole rest of the game was searched: exact
    value, action, depth, exact = best
    return AlphaBetaResult(value, action, depth, s.nodes, time.perf_counter() - start, exact)
