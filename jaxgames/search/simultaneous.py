"""Search for simultaneous-move games with N players: SM-MCTS with regret matching, and maximin search.

Generic over any `jaxgames.core.Env` whose ``current_player`` is
``SIMULTANEOUS`` (matrix games, Battlesnake with 1-8 snakes): masks are bool
``[num_players, num_actions]``, ``env.step`` takes int32 ``[num_players]``,
rewards are float32 ``[num_players]``, each player's own (no zero-sum sign).
Both searches are written for ONE root, pure JAX; `sm_mcts_batch` and
`maximin_batch` check the settings and vmap (shapes gain a leading ``[B]``).

* `sm_mcts`: simultaneous-move MCTS with decoupled regret matching (Lanctot,
  Lisy & Winands 2013, "Monte Carlo Tree Search in Simultaneous Move Games
  with Applications to Goofspiel"; Tak, Lanctot & Winands 2014, "Monte Carlo
  Tree Search Variants for Simultaneous Move Games"). Each player samples
  from ``(1 - exploration) * sigma + exploration / |legal|``, sigma its
  regret-matching policy; regrets get the sampled estimate
  ``R_i(a) += 1[a = a_i] G_i / sigma'_i(a_i) - G_i``. Returns the root's
  average policy ``[num_players, num_actions]`` (approaches a Nash equilibrium
  in two-player zero-sum games: Lisy, Kovarik, Lanctot & Bosansky 2013) and
  mean returns. The average is of the policies *played*, exploration
  included: without it, it converges to the equilibrium of a game perturbed
  by the exploration.
* `maximin`: paranoid depth-limited search (Sturtevant & Korf 2000; Sturtevant
  2002): one player maximises, each ply, the minimum over the others' joint
  actions; ``(num_actions ** num_players) ** depth`` states are enumerated,
  refused up front above ``max_states``. One key per ply (chance events are
  one outcome per ply). ``branching=K`` enumerates at most ``K`` candidate
  actions per player and node (``candidates``: e.g. the moves that are not
  certain deaths), ``(K ** num_players) ** depth`` states. ``best_reply``
  lets one opponent at a time answer (Schadd & Winands 2011), the others on
  a default policy: ``K + K (M - 1) K`` joint actions a node.
* `best_reply_alphabeta`: the same best-reply tree searched depth first with
  alpha-beta pruning (Knuth & Moore 1975): equal root values, far fewer
  states, an optional budget of stepped states and a ``stop`` predicate
  (e.g. a wall-clock deadline).

Errors (before tracing): ``TypeError``/``ValueError`` naming the value for a
sequential env, a batched root given to a one-root function, a root not
``SIMULTANEOUS``, a ``player`` out of range, a budget < 1, an exploration rate
not finite or outside ``[0, 1]``, a too large enumeration.

Design: the tree is open-loop (Perez Liebana et al. 2015, "Open Loop Search
for General Video Game Playing"): nodes store statistics, not states, and each
simulation re-steps the game from the root with fresh keys, so memory does
not grow with the state size and chance events are averaged over. Children
are found in a dense ``[nodes, num_actions ** num_players]`` table up to
`DENSE_CHILDREN_LIMIT`, else by scanning ``(parent, joint action)`` pairs.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgames.core import SIMULTANEOUS

Evaluate = Callable[[Any, jax.Array], jax.Array]
"""``evaluate(state, key) -> float32 [num_players]``: the rewards still to come from a
non-terminal ``state`` for each player, in the units of the env's rewards."""

DEFAULT_ROLLOUT_STEPS = 16
"""Length of the default random rollout (steps; the game's own end stops it earlier)."""

DEFAULT_MAX_DEPTH = 64
"""Default bound on the plies of one `sm_mcts` simulation inside the tree."""

DENSE_CHILDREN_LIMIT = 2**22
"""Largest ``[num_nodes, num_actions ** num_players]`` child table `sm_mcts` keeps (int32 entries, 16 MiB)."""

DEFAULT_MAX_STATES = 100_000
"""Default bound on the states `maximin` enumerates."""

STOP_EVERY = 512
"""`best_reply_alphabeta` asks its ``stop`` each time the states stepped pass a multiple of this (a few ms of search
on a CPU at one root)."""

_FMIN = float(np.finfo(np.float32).min)
_FMAX = float(np.finfo(np.float32).max)


# ---------------------------------------------------------------- checks at the boundary
def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int; got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1; got {value!r}")
    return int(value)


def _check_env(env) -> None:
    if not getattr(env, "simultaneous", False):
        raise ValueError(
            f"simultaneous-move search needs an env whose current_player is SIMULTANEOUS ({SIMULTANEOUS}); "
            f"got the sequential {env!r} (use jaxgames.search.mcts or alphabeta)"
        )
    n, a = int(env.num_players), int(env.num_actions)
    if a**n >= 2**31:
        raise ValueError(f"{env!r}: {a}**{n} joint actions do not fit an int32 code")


def _check_state(env, state, batched: bool) -> None:
    expected = (env.num_players, env.num_actions)
    shape = tuple(np.shape(state.legal_action_mask))
    lead = shape[:1] if batched else ()
    if shape != lead + expected or (batched and len(shape) != 3):
        what = "a batch of states [B, num_players, num_actions]" if batched else "one unbatched state"
        raise ValueError(
            f"{env!r}: the search takes {what}; got legal_action_mask of shape {shape} "
            f"(num_players={expected[0]}, num_actions={expected[1]})"
        )
    player = state.current_player
    if not isinstance(player, jax.core.Tracer):
        values = np.unique(np.asarray(player))
        if values.size and (values != SIMULTANEOUS).any():
            raise ValueError(
                f"{env!r}: the root's current_player must be SIMULTANEOUS ({SIMULTANEOUS}); got {values.tolist()}"
            )


def _check_exploration(exploration) -> None:
    if isinstance(exploration, jax.core.Tracer):
        return  # traced (a vmapped sweep): checked by whoever made it concrete
    if isinstance(exploration, bool):
        raise TypeError(f"exploration must be a float in [0, 1]; got {exploration!r}")
    try:
        value = float(exploration)
    except (TypeError, ValueError):
        raise TypeError(f"exploration must be a float in [0, 1]; got {exploration!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"exploration must be finite and in [0, 1]; got {exploration!r}")


def check_sm_mcts_settings(
    env, *, num_simulations, exploration=0.1, rollout_steps=DEFAULT_ROLLOUT_STEPS, max_depth=None
) -> None:
    """Raises for bad `sm_mcts` settings (the checks `sm_mcts` runs before tracing).

    Raises:
        ValueError: a sequential env; ``num_simulations``, ``rollout_steps``
            or ``max_depth`` (unless None) < 1; ``exploration`` not finite or
            outside ``[0, 1]``.
        TypeError: a non-int budget, a non-number exploration.
    """
    _check_env(env)
    _positive_int("num_simulations", num_simulations)
    _positive_int("rollout_steps", rollout_steps)
    if max_depth is not None:
        _positive_int("max_depth", max_depth)
    _check_exploration(exploration)


def check_maximin_settings(
    env, *, player, depth, max_states=DEFAULT_MAX_STATES, rollout_steps=DEFAULT_ROLLOUT_STEPS, searched=None,
    default_policy=None, branching=None, candidates=None, best_reply=False, leaf_batch=None, reply_depth=None,
) -> int:
    """Raises for bad `maximin` settings; returns the number of states it would step (``max_states=None``: no bound,
    as for `best_reply_alphabeta`, which holds one path of nodes).

    Returns:
        ``sum_{k=1..depth} (K ** M) ** k``, ``M`` the number of searched
        players (all ``num_players`` unless ``searched`` is given), ``K`` the
        ``branching`` (``num_actions`` unless given); with ``best_reply``,
        ``J = K + K (M - 1) K`` joint actions a node instead of ``K ** M``,
        and ``K`` below ``reply_depth``: ``sum_k J ** min(k, R) * K ** (k - min(k, R))``.

    Raises:
        ValueError: a sequential env; a concrete ``player`` outside
            ``[0, num_players)``; ``depth`` or ``rollout_steps`` < 1; more
            states than ``max_states`` (the message names the count); a
            ``searched`` that is not 1-D of 1 to ``num_players`` entries, or
            (concrete) repeats a player, is out of range or lacks ``player``;
            fewer searched players than ``num_players`` without a
            ``default_policy``; a ``branching`` outside ``[1, num_actions]``;
            ``best_reply`` without a ``default_policy``; a ``leaf_batch`` < 1;
            a ``reply_depth`` outside ``[0, depth]`` or without ``best_reply``.
        TypeError: a non-int player, depth, bound, branching, leaf batch or
            reply depth; a ``candidates`` that is not callable.
    """
    _check_env(env)
    n = int(env.num_players)
    if isinstance(player, jax.Array) and isinstance(player, jax.core.Tracer):
        if player.shape != () or not jnp.issubdtype(player.dtype, jnp.integer):
            raise TypeError(f"player must be an int or an integer scalar array; got {player!r}")
    else:
        if isinstance(player, bool) or not (isinstance(player, (int, np.integer))
                                            or (np.ndim(player) == 0 and np.issubdtype(np.asarray(player).dtype, np.integer))):
            raise TypeError(f"player must be an int or an integer scalar array; got {player!r}")
        if not 0 <= int(player) < n:
            raise ValueError(f"player must be in [0, {n}); got {player!r}")
    depth = _positive_int("depth", depth)
    if max_states is not None:
        max_states = _positive_int("max_states", max_states)
    _positive_int("rollout_steps", rollout_steps)
    m = n
    if searched is not None:
        shape = np.shape(searched)
        if len(shape) != 1 or not 1 <= shape[0] <= n:
            raise ValueError(f"searched must be 1-D with 1 to {n} player indices; got shape {shape}")
        m = shape[0]
        if not isinstance(searched, jax.core.Tracer):
            values = np.asarray(searched)
            if not np.issubdtype(values.dtype, np.integer):
                raise TypeError(f"searched must hold integer player indices; got dtype {values.dtype}")
            if len(set(values.tolist())) != m or values.min() < 0 or values.max() >= n:
                raise ValueError(f"searched must hold distinct players in [0, {n}); got {values.tolist()}")
            if not isinstance(player, jax.core.Tracer) and int(player) not in values.tolist():
                raise ValueError(f"searched must include the player {int(player)}; got {values.tolist()}")
    if m < n and default_policy is None:
        raise ValueError(f"searching {m} of {n} players needs a default_policy for the others")
    k_actions = int(env.num_actions)
    if branching is not None:
        branching = _positive_int("branching", branching)
        if branching > k_actions:
            raise ValueError(f"branching must be at most num_actions={k_actions}; got {branching}")
        k_actions = branching
    if candidates is not None and not callable(candidates):
        raise TypeError(f"candidates must be callable (state -> bool [num_players, num_actions]); got {candidates!r}")
    if not isinstance(best_reply, bool):
        raise TypeError(f"best_reply must be a bool; got {best_reply!r}")
    if best_reply and default_policy is None:
        raise ValueError("best_reply needs a default_policy (the move of the opponents that do not deviate)")
    if leaf_batch is not None:
        _positive_int("leaf_batch", leaf_batch)
    if reply_depth is not None:
        if isinstance(reply_depth, bool) or not isinstance(reply_depth, (int, np.integer)):
            raise TypeError(f"reply_depth must be an int or None; got {reply_depth!r}")
        if not 0 <= reply_depth <= depth:
            raise ValueError(f"reply_depth must be in [0, depth={depth}] or None; got {reply_depth!r}")
        if not best_reply:
            raise ValueError("reply_depth needs best_reply (below it only nobody deviating is enumerated)")
    joint = joint_action_count(k_actions, m, best_reply=best_reply)
    counts = _ply_codes(joint, k_actions, depth, reply_depth)
    count = sum(math.prod(counts[:k]) for k in range(1, depth + 1))
    if max_states is not None and count > max_states:
        where = f"{joint} joint actions a node" + ("" if reply_depth is None else f" in the first {reply_depth} plies, "
                                                   f"{k_actions} below")
        raise ValueError(
            f"maximin over {env!r} at depth {depth} would step {count:,} states ({where}, multiplied over the "
            f"plies, summed over k = 1..{depth}); more than max_states={max_states:,}: lower depth, search fewer "
            "players or raise max_states"
        )
    return count


def _ply_codes(joint: int, k: int, depth: int, reply_depth: int | None) -> list[int]:
    """Joint actions enumerated at each ply: ``joint`` above ``reply_depth``, ``k`` (own actions only) below."""
    return [joint if reply_depth is None or ply < reply_depth else k for ply in range(depth)]


def joint_action_count(k: int, m: int, *, best_reply: bool = False) -> int:
    """Joint actions enumerated at one node: ``k ** m`` (paranoid), or ``k + k (m - 1) k`` with ``best_reply``
    (each own move against nobody deviating, and against each opponent's each deviation).

    Args:
        k: actions per searched player and node (``branching``, else ``num_actions``).
        m: searched players, the root player included.
        best_reply: one searched opponent deviates at a time (Schadd & Winands 2011).
    """
    return k + k * (m - 1) * k if best_reply else k**m


# ---------------------------------------------------------------- leaf evaluation
def random_rollout(env, *, num_steps: int = DEFAULT_ROLLOUT_STEPS, params=None) -> Evaluate:
    """The default leaf evaluation: the rewards of one uniformly random playout of ``num_steps`` steps.

    Each player draws uniformly among its legal actions every step; the
    playout is a ``lax.scan`` of exactly ``num_steps`` steps in which the
    steps after the end of the game add nothing (a terminal state steps
    as a no-op with zero rewards, and is masked here as well).

    Args:
        env: a simultaneous-move `Env`.
        num_steps: static playout length (>= 1).
        params: the game's `EnvParams` for every step, or None (defaults).

    Returns:
        ``evaluate(state, key) -> float32 [num_players]`` (see `Evaluate`).

    Raises:
        TypeError, ValueError: ``num_steps`` not a positive int.
    """
    num_steps = _positive_int("num_steps", num_steps)
    num_players = int(env.num_players)

    def evaluate(state, key):
        def body(carry, step_key):
            s, total = carry
            action_key, chance_key = jax.random.split(step_key)
            logits = jnp.where(s.legal_action_mask, 0.0, _FMIN).astype(jnp.float32)
            actions = jax.random.categorical(action_key, logits, axis=-1).astype(jnp.int32)
            nxt = env.step(s, actions, chance_key, params)
            done = s.terminated | s.truncated
            return (nxt, total + jnp.where(done, 0.0, nxt.rewards).astype(jnp.float32)), None

        (_, total), _ = jax.lax.scan(body, (state, jnp.zeros(num_players, jnp.float32)), jax.random.split(key, num_steps))
        return total

    return evaluate


def _leaf_value(evaluate: Evaluate, state, key, num_players: int) -> jax.Array:
    """float32 ``[num_players]``: ``evaluate`` at a non-terminal state, 0 at a terminal one."""
    done = state.terminated | state.truncated
    value = jnp.asarray(evaluate(state, key), jnp.float32)
    if value.shape != (num_players,):
        raise ValueError(f"evaluate must return float32 [num_players={num_players}]; got shape {value.shape}")
    return jnp.where(done, 0.0, value)


# ---------------------------------------------------------------- SM-MCTS
@struct.dataclass
class Tree:
    """The fixed-shape open-loop tree of `sm_mcts` (M = ``num_simulations + 1`` nodes, node 0 the root).

    Attributes:
        parent: int32 ``[M]``: parent node; -1 at the root, -2 for an unused slot.
        code: int32 ``[M]``: the joint action from the parent,
            ``sum_i a_i * num_actions ** (num_players - 1 - i)``.
        visits: int32 ``[M]``: simulations through the node.
        value_sum: float32 ``[M, num_players]``: sum of each player's returns from the node.
        regret: float32 ``[M, num_players, num_actions]``: cumulative regrets.
        cumulative_policy: float32 ``[M, num_players, num_actions]``: sum of the
            policies played at the node (exploration included).
        children: int32 ``[M, num_actions ** num_players]``: the child of each
            joint action (-1 none) when that table is at most
            `DENSE_CHILDREN_LIMIT` entries (a child is then found in O(1));
            otherwise ``[1, 1]`` unused, and a child is found by scanning
            ``parent`` and ``code``.
        num_nodes: int32 ``[]``: slots in use.
    """

    parent: jax.Array
    code: jax.Array
    visits: jax.Array
    value_sum: jax.Array
    regret: jax.Array
    cumulative_policy: jax.Array
    children: jax.Array
    num_nodes: jax.Array


class SMMCTSOutput(NamedTuple):
    """Result of `sm_mcts` for one root (a leading ``[B]`` under vmap / `sm_mcts_batch`).

    Attributes:
        policy: float32 ``[num_players, num_actions]``: each player's average
            (cumulative) regret-matching policy at the root, zero on illegal
            actions; uniform over the legal actions of a terminal root.
        value: float32 ``[num_players]``: each player's mean return over the
            root's simulations.
        action: int32 ``[num_players]``: each player's most probable legal
            action under ``policy`` (sample from ``policy`` to play the mixed strategy).
        tree: the final `Tree`.
    """

    policy: jax.Array
    value: jax.Array
    action: jax.Array
    tree: Tree


def regret_matching(regret: jax.Array, mask: jax.Array) -> jax.Array:
    """float32 ``[..., num_actions]``: positive regrets normalised over the legal actions, uniform if none is positive.

    Hart & Mas-Colell 2000, "A Simple Adaptive Procedure Leading to
    Correlated Equilibrium", Econometrica 68(5), eq. 2.1.

    Args:
        regret: float32 ``[..., num_actions]``.
        mask: bool ``[..., num_actions]``, True = legal (at least one per row).
    """
    positive = jnp.where(mask, jnp.maximum(regret, 0.0), 0.0)
    total = positive.sum(-1, keepdims=True)
    uniform = mask / jnp.maximum(mask.sum(-1, keepdims=True), 1)
    return jnp.where(total > 0, positive / jnp.where(total > 0, total, 1.0), uniform).astype(jnp.float32)


def _joint_code(actions: jax.Array, num_actions: int) -> jax.Array:
    n = actions.shape[-1]
    weights = jnp.asarray([num_actions ** (n - 1 - i) for i in range(n)], jnp.int32)
    return jnp.sum(actions.astype(jnp.int32) * weights, axis=-1).astype(jnp.int32)


def _empty_tree(num_nodes: int, num_players: int, num_actions: int, dense: bool) -> Tree:
    m, n, a = num_nodes, num_players, num_actions
    return Tree(
        parent=jnp.full(m, -2, jnp.int32).at[0].set(-1),
        code=jnp.full(m, -1, jnp.int32),
        visits=jnp.zeros(m, jnp.int32),
        value_sum=jnp.zeros((m, n), jnp.float32),
        regret=jnp.zeros((m, n, a), jnp.float32),
        cumulative_policy=jnp.zeros((m, n, a), jnp.float32),
        children=jnp.full((m, a**n) if dense else (1, 1), -1, jnp.int32),
        num_nodes=jnp.int32(1),
    )


def sm_mcts(
    env,
    state,
    key: jax.Array,
    *,
    num_simulations: int,
    exploration: float = 0.1,
    evaluate: Evaluate | None = None,
    rollout_steps: int = DEFAULT_ROLLOUT_STEPS,
    max_depth: int | None = None,
    params=None,
) -> SMMCTSOutput:
    """Simultaneous-move MCTS with decoupled regret matching from one root (module docstring).

    Args:
        env: a simultaneous-move `Env` (``env.simultaneous``), N players.
        state: one unbatched state (``legal_action_mask`` ``[N, num_actions]``).
        key: PRNG key (one subkey per simulation, per step and per playout).
        num_simulations: simulations (static, >= 1); the tree has
            ``num_simulations + 1`` node slots.
        exploration: the rate ``gamma`` in ``[0, 1]`` mixed uniformly into
            each player's selection policy (Lanctot et al. 2013, section 3);
            may be traced.
        evaluate: leaf evaluation (`Evaluate`); default
            ``random_rollout(env, num_steps=rollout_steps, params=params)``.
        rollout_steps: length of the default random rollout (static, >= 1).
        max_depth: static bound on a simulation's path in the tree (plies);
            a simulation that reaches it evaluates the node there without
            expanding. Default ``min(num_simulations, DEFAULT_MAX_DEPTH)``.
        params: the game's `EnvParams` for every step, or None (defaults).

    Returns:
        `SMMCTSOutput`: ``policy`` float32 ``[N, num_actions]``, ``value``
        float32 ``[N]``, ``action`` int32 ``[N]``, ``tree``.

    Raises:
        ValueError, TypeError: see `check_sm_mcts_settings`; a state of the
            wrong shape or whose concrete ``current_player`` is not
            ``SIMULTANEOUS``.
    """
    check_sm_mcts_settings(
        env, num_simulations=num_simulations, exploration=exploration, rollout_steps=rollout_steps, max_depth=max_depth
    )
    _check_state(env, state, batched=False)
    depth = min(int(num_simulations), DEFAULT_MAX_DEPTH) if max_depth is None else int(max_depth)
    return _sm_mcts(env, state, key, int(num_simulations), exploration, evaluate, int(rollout_steps), params, depth)


def sm_mcts_batch(env, states, keys: jax.Array, **settings) -> SMMCTSOutput:
    """`sm_mcts` over a batch of roots: the checks, then ``jax.vmap``.

    Args:
        env: as in `sm_mcts`.
        states: states ``[B, ...]`` (``legal_action_mask`` ``[B, N, num_actions]``).
        keys: PRNG keys ``[B]``, one per root.
        **settings: the keyword arguments of `sm_mcts` (shared by the batch).

    Returns:
        `SMMCTSOutput` with a leading ``[B]``: ``policy`` float32
        ``[B, N, num_actions]``, ``value`` float32 ``[B, N]``, ``action`` int32 ``[B, N]``.

    Raises:
        As `sm_mcts`.
    """
    check_sm_mcts_settings(
        env,
        num_simulations=settings.get("num_simulations"),
        exploration=settings.get("exploration", 0.1),
        rollout_steps=settings.get("rollout_steps", DEFAULT_ROLLOUT_STEPS),
        max_depth=settings.get("max_depth"),
    )
    _check_state(env, states, batched=True)
    return jax.vmap(lambda s, k: sm_mcts(env, s, k, **settings))(states, keys)


class _Path(NamedTuple):
    """One simulation's path through the tree (D = max_depth entries; unused ones point at slot M, dropped)."""

    node: jax.Array  # int32 [D]
    action: jax.Array  # int32 [D, N]
    probability: jax.Array  # float32 [D, N], the sampling probability of each action
    policy: jax.Array  # float32 [D, N, A], the policy sampled from
    reward: jax.Array  # float32 [D, N], the rewards of each step
    code: jax.Array  # int32 [], the joint-action code of the node created (if any)


def _sm_mcts(env, state, key, num_simulations, exploration, evaluate, rollout_steps, params, max_depth) -> SMMCTSOutput:
    n, a = int(env.num_players), int(env.num_actions)
    if evaluate is None:
        evaluate = random_rollout(env, num_steps=rollout_steps, params=params)
    exploration = jnp.asarray(exploration, jnp.float32)
    m, d = num_simulations + 1, max_depth
    dense = m * a**n <= DENSE_CHILDREN_LIMIT
    slots = jnp.arange(m)

    def simulate(i, tree):
        descend_key, leaf_key = jax.random.split(jax.random.fold_in(key, i))

        # Descent: reads the tree (loop-invariant), writes only the path of this simulation:
        # under vmap a while_loop selects its whole carry each step, so the tree stays out of it.
        def descend_step(c):
            depth, node, s, key, _, created, path = c
            key, select_key, step_key = jax.random.split(key, 3)
            done = s.terminated | s.truncated
            mask = s.legal_action_mask
            sigma = regret_matching(tree.regret[node], mask)  # [N, A]
            explored = (1.0 - exploration) * sigma + exploration * mask / jnp.maximum(mask.sum(-1, keepdims=True), 1)
            logits = jnp.where(mask & (explored > 0), jnp.log(jnp.where(explored > 0, explored, 1.0)), _FMIN)
            actions = jax.random.categorical(select_key, logits, axis=-1).astype(jnp.int32)  # [N]
            probability = jnp.take_along_axis(explored, actions[:, None], axis=-1)[:, 0]
            nxt = env.step(s, actions, step_key, params)
            code = _joint_code(actions, a)
            if dense:
                child = tree.children[node, code]
                found = child >= 0
            else:
                match = (tree.parent == node) & (tree.code == code) & (slots < tree.num_nodes)
                found = jnp.any(match)
                child = jnp.argmax(match).astype(jnp.int32)
            live = ~done
            path = _Path(
                node=path.node.at[depth].set(jnp.where(live, node, m)),
                action=path.action.at[depth].set(actions),
                probability=path.probability.at[depth].set(probability),
                policy=path.policy.at[depth].set(explored),
                reward=path.reward.at[depth].set(jnp.where(live, nxt.rewards, 0.0).astype(jnp.float32)),
                code=jnp.where(live & ~found, code, path.code),
            )
            child = jnp.where(found, child, tree.num_nodes).astype(jnp.int32)
            s = jax.tree.map(lambda x, y: jnp.where(done, x, y), s, nxt)
            return (
                depth + live.astype(jnp.int32),
                jnp.where(done, node, child),
                s,
                key,
                done | ~found,
                live & ~found,
                path,
            )

        path = _Path(
            node=jnp.full(d, m, jnp.int32),  # m: out of range, dropped by the scatters below
            action=jnp.zeros((d, n), jnp.int32),
            probability=jnp.ones((d, n), jnp.float32),
            policy=jnp.zeros((d, n, a), jnp.float32),
            reward=jnp.zeros((d, n), jnp.float32),
            code=jnp.int32(-1),
        )
        carry = (jnp.int32(0), jnp.int32(0), state, descend_key, jnp.bool_(False), jnp.bool_(False), path)
        length, leaf, leaf_state, _, _, created, path = jax.lax.while_loop(
            lambda c: ~c[4] & (c[0] < d), descend_step, carry
        )
        value = _leaf_value(evaluate, leaf_state, leaf_key, n)
        # Each player's return from each node of the path: the rewards below it plus the leaf value.
        ret = value + jnp.cumsum(path.reward[::-1], axis=0)[::-1]  # [D, N]; entries past the path are dropped
        estimate = jax.nn.one_hot(path.action, a, dtype=jnp.float32) * (ret / path.probability)[..., None]
        new = tree.num_nodes
        parent_of_leaf = path.node[jnp.maximum(length - 1, 0)]
        if dense:
            row = jnp.where(created, parent_of_leaf, m)
            tree = tree.replace(children=tree.children.at[row, path.code].set(new, mode="drop"))
        return tree.replace(
            parent=tree.parent.at[jnp.where(created, new, m)].set(parent_of_leaf, mode="drop"),
            code=tree.code.at[jnp.where(created, new, m)].set(path.code, mode="drop"),
            num_nodes=new + created.astype(jnp.int32),
            visits=tree.visits.at[path.node].add(1, mode="drop").at[leaf].add(1),
            value_sum=tree.value_sum.at[path.node].add(ret, mode="drop").at[leaf].add(value),
            regret=tree.regret.at[path.node].add(estimate - ret[..., None], mode="drop"),
            cumulative_policy=tree.cumulative_policy.at[path.node].add(path.policy, mode="drop"),
        )

    tree = jax.lax.fori_loop(0, num_simulations, simulate, _empty_tree(m, n, a, dense))
    mask = state.legal_action_mask
    cumulative = jnp.where(mask, tree.cumulative_policy[0], 0.0)
    total = cumulative.sum(-1, keepdims=True)
    uniform = mask / jnp.maximum(mask.sum(-1, keepdims=True), 1)
    policy = jnp.where(total > 0, cumulative / jnp.where(total > 0, total, 1.0), uniform).astype(jnp.float32)
    value = tree.value_sum[0] / jnp.maximum(tree.visits[0], 1).astype(jnp.float32)
    action = jnp.argmax(jnp.where(mask, policy, -1.0), axis=-1).astype(jnp.int32)
    return SMMCTSOutput(policy=policy, value=value, action=action, tree=tree)


# ---------------------------------------------------------------- maximin (paranoid)
class MaximinOutput(NamedTuple):
    """Result of `maximin` for one root (a leading ``[B]`` under vmap / `maximin_batch`).

    Attributes:
        action: int32 ``[]``: the player's maximin action (lowest index among ties).
        value: float32 ``[]``: its maximin value (rewards over ``depth`` plies
            plus the leaf evaluation, for ``player``).
        action_values: float32 ``[num_actions]``: each own action's value
            against the worst joint action of the others; ``finfo(float32).min``
            for illegal actions.
        mean_values: float32 ``[num_actions]``: each own action's mean over
            the others' enumerated answers of reward plus the next node's
            mean value, where each node takes the action of highest value,
            ties to the highest mean (a tie-break among actions of equal
            worst case: the one that loses against fewer answers);
            ``finfo(float32).min`` where ``action_values`` is.
        num_steps: int32 ``[]``: the states the search stepped (with
            ``leaf_batch``: the children in the batches it ran).
    """

    action: jax.Array
    value: jax.Array
    action_values: jax.Array
    mean_values: jax.Array
    num_steps: jax.Array


def maximin(
    env,
    state,
    key: jax.Array,
    *,
    player: int,
    depth: int,
    evaluate: Evaluate | None = None,
    rollout_steps: int = DEFAULT_ROLLOUT_STEPS,
    params=None,
    max_states: int = DEFAULT_MAX_STATES,
    searched: jax.Array | None = None,
    default_policy: Callable[[Any, jax.Array], jax.Array] | None = None,
    branching: int | None = None,
    candidates: Callable[[Any], jax.Array] | None = None,
    best_reply: bool = False,
    leaf_batch: int | None = None,
    reply_depth: int | None = None,
) -> MaximinOutput:
    """Paranoid / maximin depth-limited search from one root, for one player (module docstring).

    ``V_0(s) = evaluate(s)[player]`` (0 at a terminal state);
    ``V_k(s) = max_{a_p} min_{a_-p} r_p(s, a) + V_{k-1}(s')`` over the
    legal actions of each player (a terminal state steps as a no-op with
    zero rewards, so it is worth 0 at every depth). The others are assumed
    to answer the player's action together (paranoid; the pure-strategy
    security level of a one-shot game at ``depth=1``). With ``searched``,
    only those players' actions are enumerated and the others play
    ``default_policy`` at every node (paranoid over the nearby opponents, a
    common cut in many-player games).

    Args:
        env: a simultaneous-move `Env`, N players, A actions.
        state: one unbatched state.
        key: PRNG key: ply ``k`` steps every state with the same subkey
            (determinised chance), the leaves get one subkey each.
        player: the maximising player in ``[0, N)``: an int or an int32 ``[]``
            array (may be traced, e.g. an agent's seat).
        depth: plies (static, >= 1).
        evaluate: leaf evaluation (`Evaluate`), read at ``player``'s entry;
            default ``random_rollout(env, num_steps=rollout_steps, params=params)``.
        rollout_steps: length of the default random rollout (static, >= 1).
        params: the game's `EnvParams`, or None (defaults).
        max_states: refuse searches that would step more states than this
            (``sum_{k=1..depth} (A ** M) ** k``; each is held in memory).
        searched: int32 ``[M]``, the players whose actions are enumerated,
            ``player`` among them (may be traced; ``M`` is static). None: all.
        default_policy: ``fn(state, key) -> int32 [N]``, legal actions of the
            players not searched, called at every node; needed when ``M < N``.
        branching: at most this many actions per searched player and node
            (static, ``1..A``): the lowest-indexed ``branching`` of its
            ``candidates``. None: every legal action.
        candidates: ``fn(state) -> bool [N, A]``, the actions worth
            enumerating (e.g. legal moves that are not certain deaths); a
            player with none falls back to its legal actions. None: the legal
            actions. Actions left out are worth ``finfo(float32).min`` to the
            player and are never the others' answer.
        best_reply: best-reply search (Schadd & Winands 2011, "Best Reply
            Search for Multiplayer Games"): at each node only one searched
            opponent answers the player's move (each in turn, each of its
            candidates), the others play ``default_policy``; the player
            takes the minimum over these replies (and over nobody
            deviating). ``K + K (M - 1) K`` joint actions a node instead of ``K ** M``.
        leaf_batch: step (and value) each ply's children ``leaf_batch`` at a
            time (``lax.map``; static), only those of valid actions at every
            ply, a deviation onto the default action stepped once (it repeats
            nobody deviating). None: all at once (``vmap``; use it under
            ``vmap``). The values are the same; on a CPU this is several times faster.
        reply_depth: with ``best_reply``, the plies (static, ``0..depth``) whose opponents'
            replies are enumerated; below, only the player's actions. None: every ply.

    Returns:
        `MaximinOutput` (shapes and dtypes in its docstring).

    Raises:
        ValueError, TypeError: see `check_maximin_settings`; a state of the
            wrong shape or whose concrete ``current_player`` is not ``SIMULTANEOUS``.
    """
    check_maximin_settings(env, player=player, depth=depth, max_states=max_states, rollout_steps=rollout_steps,
                           searched=searched, default_policy=default_policy, branching=branching,
                           candidates=candidates, best_reply=best_reply, leaf_batch=leaf_batch,
                           reply_depth=reply_depth)
    _check_state(env, state, batched=False)
    return _maximin(env, state, key, jnp.asarray(player, jnp.int32), int(depth), evaluate, int(rollout_steps), params,
                    searched, default_policy, None if branching is None else int(branching), candidates, best_reply,
                    leaf_batch, None if reply_depth is None else int(reply_depth))


def maximin_batch(env, states, keys: jax.Array, **settings) -> MaximinOutput:
    """`maximin` over a batch of roots: the checks, then ``jax.vmap``.

    Args:
        env: as in `maximin`.
        states: states ``[B, ...]`` (``legal_action_mask`` ``[B, N, A]``).
        keys: PRNG keys ``[B]``.
        **settings: the keyword arguments of `maximin` (shared by the batch).

    Returns:
        `MaximinOutput` with a leading ``[B]`` on every field (e.g. ``action_values`` float32 ``[B, A]``).

    Raises:
        As `maximin`.
    """
    check_maximin_settings(
        env,
        player=settings.get("player"),
        depth=settings.get("depth"),
        max_states=settings.get("max_states", DEFAULT_MAX_STATES),
        rollout_steps=settings.get("rollout_steps", DEFAULT_ROLLOUT_STEPS),
        searched=settings.get("searched"),
        default_policy=settings.get("default_policy"),
        branching=settings.get("branching"),
        candidates=settings.get("candidates"),
        best_reply=settings.get("best_reply", False),
        leaf_batch=settings.get("leaf_batch"),
        reply_depth=settings.get("reply_depth"),
    )
    _check_state(env, states, batched=True)
    return jax.vmap(lambda s, k: maximin(env, s, k, **settings))(states, keys)


def _layout(b: int, m: int, own_slot: jax.Array, best_reply: bool):
    """The joint actions one node enumerates, as codes: ``(count, combos int32 [C, M], enumerated bool [C, M],
    deviator int32 [C] or None, canonical int32 [C] or None)``.

    Paranoid: ``combos[c]`` = the searched players' slots of code c (first searched player most significant); a slot
    is an action index, or (branching / candidates) a place in the node's list of candidate actions. Best reply:
    first (o, nobody) for each of the player's slots o; then (o, j, k): the player takes its slot o, the j-th
    searched opponent (the deviator, at place ``deviator[c]`` in ``searched``; ``own_slot`` for nobody) its slot k,
    the other searched players the default policy; ``canonical[c]`` = o, the code a deviation onto the deviator's
    default action repeats.
    """
    position = jnp.arange(m)[None, :]
    if not best_reply:
        c = b**m
        combos = jnp.asarray(np.stack(np.unravel_index(np.arange(c), (b,) * m), axis=-1), jnp.int32)  # [C, M]
        return c, combos, jnp.ones((c, m), bool), None, None
    c = joint_action_count(b, m, best_reply=True)
    o, j, kk = np.unravel_index(np.arange(b * (m - 1) * b), (b, m - 1, b))
    o, j, kk = (jnp.asarray(np.concatenate([head, x]), jnp.int32)
                for head, x in ((np.arange(b), o), (np.full(b, -1), j), (np.zeros(b), kk)))
    d = jnp.where(j < 0, own_slot, j + (j >= own_slot))
    enumerated = (position == own_slot) | (position == d[:, None])  # [C, M]
    combos = jnp.where(position == own_slot, o[:, None], kk[:, None])  # [C, M]
    return c, combos, enumerated, d, o


def _slots(searched: jax.Array, a: int, branching: int | None, candidates) -> Callable:
    """``slots(s) -> (actions int32 [M, b], valid bool [M, b])``: each searched player's enumerated actions at ``s``
    (every action without ``branching`` and ``candidates``; else its candidates first, lowest index first, at most
    ``b = branching``)."""
    b = a if branching is None else branching
    m = int(searched.shape[0])

    def slots(s):
        legal = s.legal_action_mask[searched]  # [M, A]
        if branching is None and candidates is None:
            return jnp.broadcast_to(jnp.arange(a, dtype=jnp.int32), (m, a)), legal
        want = legal if candidates is None else jnp.asarray(candidates(s), bool)[searched] & legal
        want = jnp.where(jnp.any(want, axis=-1, keepdims=True), want, legal)
        order = jnp.argsort(~want, axis=-1, stable=True)[:, :b].astype(jnp.int32)
        return order, jnp.take_along_axis(want, order, axis=-1)

    return slots


def _joint_action(searched, combos, enumerated, base, acts, code) -> jax.Array:
    """int32 ``[N]``: ``base`` with each searched player's slot of ``code`` where it is enumerated."""
    m = int(searched.shape[0])
    chosen = jnp.where(enumerated[code], acts[jnp.arange(m), combos[code]], base[searched])  # [M]
    return base.at[searched].set(chosen)


def _maximin(env, state, key, player, depth, evaluate, rollout_steps, params, searched=None,
             default_policy=None, branching=None, candidates=None, best_reply=False, leaf_batch=None,
             reply_depth=None) -> MaximinOutput:
    n, a = int(env.num_players), int(env.num_actions)
    searched = jnp.arange(n, dtype=jnp.int32) if searched is None else jnp.asarray(searched, jnp.int32)
    m = int(searched.shape[0])
    b = a if branching is None else branching
    if evaluate is None:
        evaluate = random_rollout(env, num_steps=rollout_steps, params=params)
    own_slot = jnp.argmax(searched == player)
    c, combos, enumerated, d, canonical = _layout(b, m, own_slot, best_reply)
    ply_codes = _ply_codes(c, b, depth, reply_depth)  # codes at ply k: the first ply_codes[k] (own moves come first)
    ply_keys = jax.random.split(key, depth + 1)
    slots = _slots(searched, a, branching, candidates)

    def default_actions(s, k):
        """int32 ``[N]``: every player's action by the default policy (0 without one)."""
        return jnp.zeros(n, jnp.int32) if default_policy is None else jnp.asarray(default_policy(s, k), jnp.int32)

    def joint_action(base, acts, code):
        return _joint_action(searched, combos, enumerated, base, acts, code)

    def slot_valid(valid, ck):
        """bool ``[K, M, ck]``: each searched player's slot of each of the first ``ck`` codes is valid or not
        enumerated."""
        index = jnp.broadcast_to(combos[:ck].T[None], (valid.shape[0], m, ck))
        return jnp.take_along_axis(valid, index, axis=2) | ~enumerated[:ck].T[None]

    def repeats(acts, base, ck):
        """bool ``[K, ck]``: best-reply codes whose deviator takes its default action (the joint action of the code
        ``canonical``: the same child, stepped and valued once)."""
        if canonical is None:
            return jnp.zeros((acts.shape[0], ck), bool)
        dk = d[:ck]
        deviator = jnp.take_along_axis(acts, jnp.broadcast_to(combos[:ck].T[None], (acts.shape[0], m, ck)), axis=2)
        deviator = jnp.take_along_axis(deviator, jnp.broadcast_to(dk[None, None, :], (acts.shape[0], 1, ck)),
                                       axis=1)[:, 0]
        default = base[:, searched][:, dk]  # [K, ck]
        return (dk != own_slot)[None, :] & (deviator == default)

    def with_repeats(x, repeated):
        """``x`` float32 ``[K, ck]`` with each repeated code's entry taken from its canonical code."""
        return x if canonical is None else jnp.where(repeated, x[:, canonical[:x.shape[1]]], x)

    one_leaf = lambda s, k: _leaf_value(evaluate, s, k, n)[player]  # noqa: E731
    policy_keys = [jax.random.fold_in(ply_keys[k], 1) for k in range(depth)]
    # per ply: [K * C], ([K, M, b], [K, M, b]), [K, C], [K, M, C] (`slot_valid`, read again by the backup)
    rewards, level_slots, level_repeats, level_valid = [], [], [], []
    if leaf_batch is None:
        parents = jax.tree.map(lambda x: x[None], state)
        for k in range(depth):
            level_slots.append(jax.vmap(slots)(parents))
            bases = jax.vmap(lambda s, policy_key=policy_keys[k]: default_actions(s, policy_key))(parents)  # [K, N]
            level_repeats.append(repeats(level_slots[-1][0], bases, ply_codes[k]))
            level_valid.append(slot_valid(level_slots[-1][1], ply_codes[k]))

            def children_of(s, acts, base, step_key=ply_keys[k], ck=ply_codes[k]):
                return jax.vmap(lambda code: env.step(s, joint_action(base, acts, code), step_key, params))(
                    jnp.arange(ck))

            children = jax.vmap(children_of)(parents, level_slots[-1][0], bases)  # [K, C, ...]
            parents = jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:]), children)
            rewards.append(parents.rewards[:, player])
        value = jax.vmap(one_leaf)(parents, jax.random.split(ply_keys[depth], parents.rewards.shape[0]))
        num_steps = jnp.int32(sum(math.prod(ply_codes[:k]) for k in range(1, depth + 1)))
    else:
        # On a CPU: each ply steps only its real children (every slot valid at every ply above, no repeat),
        # ``leaf_batch`` at a time, real ones first; a batch with none is skipped (`lax.cond`). A ply's states are
        # kept in that order (``where[i]``: node i's place); the others' entries are never read by the backup
        # (their codes are masked there, or repeats of a real code).
        parents, where = jax.tree.map(lambda x: x[None], state), jnp.zeros(1, jnp.int32)
        real = jnp.ones(1, bool)
        acts_valid, bases = slots(state), default_actions(state, policy_keys[0])
        level_slots.append(jax.tree.map(lambda x: x[None], acts_valid))
        bases = bases[None]
        num_steps = jnp.int32(0)
        for k in range(depth):
            acts, valid = level_slots[k]
            ck = ply_codes[k]
            level_repeats.append(repeats(acts, bases, ck))
            level_valid.append(slot_valid(valid, ck))
            real = (real[:, None] & jnp.all(level_valid[k], axis=1) & ~level_repeats[k]).reshape(-1)
            count, last = real.shape[0], k == depth - 1
            leaf_keys = jax.random.split(ply_keys[depth], count) if last else None

            def one(i, k=k, last=last, parents=parents, where=where, acts=acts, bases=bases, leaf_keys=leaf_keys,
                    ck=ck):
                p, code = i // ck, i % ck
                parent = jax.tree.map(lambda x: x[where[p]], parents)
                child = env.step(parent, joint_action(bases[p], acts[p], code), ply_keys[k], params)
                r = child.rewards[player].astype(jnp.float32)
                if last:
                    return r, one_leaf(child, leaf_keys[i]).astype(jnp.float32)
                return r, (child, slots(child), default_actions(child, policy_keys[k + 1]))

            batches = -(-count // leaf_batch)
            # the real nodes in order, then ``count`` (out of range: computed in a batch's tail, dropped when stored)
            order = jnp.nonzero(real, size=batches * leaf_batch, fill_value=count)[0].astype(jnp.int32)
            order = order.reshape(batches, leaf_batch)
            shapes = jax.eval_shape(jax.vmap(one), order[0])
            skip = lambda: jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)  # noqa: E731,B023
            # a batch runs when its first entry is real (fill entries are ``count``: an index into ``real`` would clamp)
            out = jax.lax.map(lambda idx: jax.lax.cond(idx[0] < count, lambda: jax.vmap(one)(idx), skip), order)
            out = jax.tree.map(lambda x: x.reshape((batches * leaf_batch,) + x.shape[2:]), out)
            flat = order.reshape(-1)
            num_steps = num_steps + (jnp.sum(real, dtype=jnp.int32) + leaf_batch - 1) // leaf_batch * leaf_batch
            rewards.append(jnp.zeros(count, jnp.float32).at[flat].set(out[0], mode="drop"))
            if last:
                value = jnp.zeros(count, jnp.float32).at[flat].set(out[1], mode="drop")
            else:
                parents, child_slots, child_bases = out[1]
                where = jnp.zeros(count, jnp.int32).at[flat].set(jnp.arange(flat.shape[0], dtype=jnp.int32),
                                                                 mode="drop")
                level_slots.append(jax.tree.map(lambda x: jnp.zeros((count,) + x.shape[1:], x.dtype).at[flat].set(
                    x, mode="drop"), child_slots))
                bases = jnp.zeros((count, n), jnp.int32).at[flat].set(child_bases, mode="drop")
    mean = value

    action_values = mean_values = None
    for k in reversed(range(depth)):
        acts = level_slots[k][0]  # [K, M, b]
        ck = ply_codes[k]
        q = with_repeats((rewards[k] + value).reshape(-1, ck), level_repeats[k])  # [K, ck]
        index = jnp.broadcast_to(combos[:ck].T[None], (acts.shape[0], m, ck))
        code_valid = level_valid[k]  # [K, M, ck]
        own_act = jnp.take_along_axis(acts, index, axis=2)[:, own_slot]  # [K, C]
        others_valid = jnp.all(jnp.where((searched == player)[None, :, None], True, code_valid), axis=1)  # [K, C]
        q = jnp.where(others_valid, q, _FMAX)
        own_valid = code_valid[:, own_slot][:, None, :]
        groups = (own_act[:, None, :] == jnp.arange(a)[None, :, None]) & own_valid  # [K, A, C]
        worst = jnp.min(jnp.where(groups, q[:, None, :], _FMAX), axis=2)  # [K, A]
        answers = groups & (q < _FMAX)[:, None, :]  # [K, A, C]: the enumerated answers
        q_mean = with_repeats((rewards[k] + mean).reshape(-1, ck), level_repeats[k])[:, None, :]
        average = jnp.sum(jnp.where(answers, q_mean, 0.0), axis=2) / jnp.maximum(jnp.sum(answers, axis=2), 1)
        enumerated_action = jnp.any(groups, axis=2)
        action_values = jnp.where(enumerated_action, worst, _FMIN)
        mean_values = jnp.where(enumerated_action, average, _FMIN)
        value = action_values.max(axis=1)
        mean = jnp.max(jnp.where(action_values == value[:, None], mean_values, _FMIN), axis=1)
    action_values = action_values[0].astype(jnp.float32)
    return MaximinOutput(
        action=jnp.argmax(action_values).astype(jnp.int32),
        value=action_values.max().astype(jnp.float32),
        action_values=action_values,
        mean_values=mean_values[0].astype(jnp.float32),
        num_steps=num_steps,
    )


# ---------------------------------------------------------------- best-reply search with alpha-beta pruning
def best_reply_alphabeta(
    env,
    state,
    key: jax.Array,
    *,
    player: int,
    depth: int,
    evaluate: Evaluate,
    searched: jax.Array,
    default_policy: Callable[[Any, jax.Array], jax.Array],
    branching: int | None = None,
    candidates: Callable[[Any], jax.Array] | None = None,
    params=None,
    max_steps: int | jax.Array | None = None,
    stop: Callable[[jax.Array], jax.Array] | None = None,
) -> MaximinOutput:
    """`maximin`'s best-reply search, depth first with alpha-beta pruning: the same values, far fewer states.

    The tree is `maximin`'s with ``best_reply=True`` (the same joint actions,
    one key per ply for stepping and the default policy): the player's move
    (a max node) against one searched opponent's deviation at a time or
    nobody's (a min node), ``depth`` plies. Best-reply search turns the
    many-player game into a two-player one, so alpha-beta applies (Schadd &
    Winands 2011, "Best Reply Search for Multiplayer Games"; Knuth & Moore
    1975, fail-soft). A node steps its valid joint actions in one ``vmap``
    over the fewest thirds of the codes that hold them, and values every child with ``evaluate``: a
    child at the last ply is a leaf; above it the values order the search
    (the player's moves by their best child, the answers worst first). The
    root is searched with an open window for each own action, so
    ``action_values`` are exact: equal to `maximin`'s up to float rounding.

    One root, pure JAX (a ``lax.while_loop`` of one node expansion an
    iteration): jit it, and map it over roots with ``lax.map`` (under
    ``vmap`` every iteration runs the expansion: use `maximin` there).

    Args:
        env, state, key, player, depth, searched, default_policy, branching,
            candidates, params: as in `maximin` (``searched`` and
            ``default_policy`` required). Leaves take ``fold_in(key_depth, code)``
            keys (`maximin` splits its leaf key otherwise: equal values for a
            deterministic ``evaluate``).
        evaluate: the leaf evaluation (`Evaluate`), read at ``player``'s entry.
        max_steps: a budget of stepped states (int or int32 ``[]``, may be
            traced): the search stops once ``num_steps`` passes it, and its
            values are then incomplete (use them only if ``num_steps <=
            max_steps``). None: no budget.
        stop: ``steps int32 [] -> bool []``, asked each time the states
            stepped pass a multiple of `STOP_EVERY` (e.g. a clock read by
            ``io_callback``); True ends the search, whose values are then
            incomplete and ``num_steps`` -1. None: never asked.

    Returns:
        `MaximinOutput`; ``mean_values`` here is each own action's mean over
        its answers at the root of reward plus the answer's ``evaluate`` (a
        one-ply tie-break, not `maximin`'s recursive mean); ``num_steps`` the
        states stepped, padding included (each node counts its valid codes in whole thirds), -1 if stopped.

    Raises:
        As `check_maximin_settings` with ``best_reply=True``; ValueError: no
        ``searched``, a ``max_steps`` < 1; TypeError: an ``evaluate`` or a
        ``stop`` that is not callable.
    """
    if searched is None:
        raise ValueError("best_reply_alphabeta needs searched: the players whose moves are enumerated")
    check_maximin_settings(env, player=player, depth=depth, max_states=None, searched=searched,
                           default_policy=default_policy, branching=branching, candidates=candidates,
                           best_reply=True)
    if evaluate is None or not callable(evaluate):
        raise TypeError(f"evaluate must be callable (state, key) -> float32 [num_players]; got {evaluate!r}")
    if stop is not None and not callable(stop):
        raise TypeError(f"stop must be callable (steps) -> bool or None; got {stop!r}")
    if max_steps is None:
        max_steps = np.iinfo(np.int32).max
    elif not isinstance(max_steps, jax.core.Tracer):
        max_steps = _positive_int("max_steps", max_steps)
    _check_state(env, state, batched=False)
    return _best_reply_alphabeta(env, state, key, jnp.asarray(player, jnp.int32), int(depth), evaluate,
                                 jnp.asarray(searched, jnp.int32), default_policy,
                                 None if branching is None else int(branching), candidates, params,
                                 jnp.asarray(max_steps, jnp.int32), stop)


def _best_reply_alphabeta(env, state, key, player, depth, evaluate, searched, default_policy, branching, candidates,
                          params, max_steps, stop=None) -> MaximinOutput:
    n, a = int(env.num_players), int(env.num_actions)
    m = int(searched.shape[0])
    own_slot = jnp.argmax(searched == player)
    c, combos, enumerated, d, _ = _layout(a if branching is None else branching, m, own_slot, True)
    slots = _slots(searched, a, branching, candidates)
    ply_keys = jax.random.split(key, depth + 1)
    codes = jnp.arange(c)
    inf = jnp.float32(jnp.inf)
    sub = -(-c // 3)
    batches = -(-c // sub)

    def expand(s, ply):
        """One node at ``ply``: the node, its joint actions and, per code, valid, reward, static value, own action,
        the search order, the end of each code's own-action group in that order, the valid count and finished."""
        ply_key = jax.lax.dynamic_index_in_dim(ply_keys, ply, keepdims=False)
        acts, valid = slots(s)
        base = jnp.asarray(default_policy(s, jax.random.fold_in(ply_key, 1)), jnp.int32)
        joints = jax.vmap(lambda code: _joint_action(searched, combos, enumerated, base, acts, code))(codes)
        deviator = acts[d, combos[codes, d]]
        repeat = (d != own_slot) & (deviator == base[searched[d]])
        ok = jnp.all(jnp.take_along_axis(valid, combos.T, axis=1) | ~enumerated.T, axis=0) & ~repeat  # [C]
        n_valid = jnp.sum(ok, dtype=jnp.int32)

        def step(ids):
            """The children of codes ``ids`` (``c``: none) stepped and valued: reward, reward + leaf, finished."""
            code = jnp.minimum(ids, c - 1)
            child = jax.vmap(lambda j: env.step(s, j, ply_key, params))(joints[code])
            leaf = jax.vmap(lambda ch, k: _leaf_value(evaluate, ch, jax.random.fold_in(ply_keys[depth], k), n)[player])(
                child, code)
            reward = child.rewards[:, player].astype(jnp.float32)
            return reward, reward + leaf, child.terminated | child.truncated

        # the valid codes first, stepped in one call of the fewest whole batches of ``sub`` that hold them
        ids = jnp.concatenate([jnp.argsort(~ok, stable=True), jnp.full(batches * sub - c, c)]).astype(jnp.int32)

        shapes = jax.eval_shape(step, ids[:sub])

        def first(k):
            """The first ``k`` batches stepped at once, the rest zeros."""
            def run(ids):
                if not k:
                    return jax.tree.map(lambda x: jnp.zeros((batches * sub,), x.dtype), shapes)
                pad = (batches - k) * sub
                return jax.tree.map(lambda x: jnp.concatenate([x, jnp.zeros((pad,), x.dtype)]), step(ids[:k * sub]))
            return run

        stepped = jax.lax.switch((n_valid + sub - 1) // sub, [first(k) for k in range(batches + 1)], ids)
        reward, static, done = jax.tree.map(lambda x: jnp.zeros(c, x.dtype).at[ids].set(x, mode="drop"), stepped)
        own = acts[own_slot, combos[:, own_slot]]  # [C]
        best_of = jnp.max(jnp.where(ok[None, :] & (own[None, :] == jnp.arange(a)[:, None]), static[None, :], -inf),
                          axis=1)  # [A]
        order = jnp.lexsort((static, own, -best_of[own], ~ok)).astype(jnp.int32)  # valid first, best move first
        own_sorted = own[order]
        pos = jnp.arange(c)
        closes = (pos + 1 >= n_valid) | (jnp.roll(own_sorted, -1) != own_sorted)  # the last code of its group
        end = jax.lax.cummin(jnp.where(closes, pos, c), reverse=True) + 1
        return s, joints, ok, reward, static, own, order, end, n_valid, done

    def last_ply_value(ok, static, own):
        """The exact value of a node whose children are leaves: max over own actions of min over answers."""
        worst = jnp.min(jnp.where(ok[None, :] & (own[None, :] == jnp.arange(a)[:, None]), static[None, :], inf),
                        axis=1)
        return jnp.max(jnp.where(worst < inf, worst, -inf)), worst

    def stepped(n_valid):
        """int32: the states a node of ``n_valid`` valid codes steps (whole batches of ``sub``)."""
        return (n_valid + sub - 1) // sub * sub

    root = expand(state, 0)
    r_ok, _, r_static, r_own = root[2:6]
    groups = r_ok[None, :] & (r_own[None, :] == jnp.arange(a)[:, None])  # [A, C]
    enumerated_action = jnp.any(groups, axis=1)
    mean_values = jnp.where(enumerated_action, jnp.sum(jnp.where(groups, r_static[None, :], 0.0), axis=1)
                            / jnp.maximum(jnp.sum(groups, axis=1), 1), _FMIN)

    if depth == 1:
        worst = last_ply_value(r_ok, r_static, r_own)[1]
        steps = stepped(root[8])
    else:
        child_of = lambda s, joint, ply: env.step(s, joint, ply_keys[ply], params)  # noqa: E731
        worst, steps = _alphabeta_loop(root, expand, child_of, last_ply_value, stepped, depth, c, a, max_steps, stop)
    action_values = jnp.where(enumerated_action, worst, _FMIN).astype(jnp.float32)
    return MaximinOutput(
        action=jnp.argmax(action_values).astype(jnp.int32),
        value=action_values.max(),
        action_values=action_values,
        mean_values=mean_values.astype(jnp.float32),
        num_steps=steps,
    )


class _Ply(NamedTuple):
    """The stack of `_alphabeta_loop`: one entry per ply ``0 .. depth - 2`` (the nodes with children to enter)."""

    node: Any  # states [P, ...]: each ply's node (a child is stepped again when entered)
    joints: jax.Array  # int32 [P, C, N]
    ok: jax.Array  # bool [P, C]
    reward: jax.Array  # float32 [P, C]
    static: jax.Array  # float32 [P, C]
    own: jax.Array  # int32 [P, C]
    order: jax.Array  # int32 [P, C]
    end: jax.Array  # int32 [P, C]
    n_valid: jax.Array  # int32 [P]
    done: jax.Array  # bool [P, C]
    pos: jax.Array  # int32 [P]: the next place in ``order``
    group: jax.Array  # int32 [P]: the own action being searched (-1: none)
    worst: jax.Array  # float32 [P]: its minimum so far over the answers
    best: jax.Array  # float32 [P]: the node's maximum so far
    alpha: jax.Array  # float32 [P]
    beta: jax.Array  # float32 [P]


def _alphabeta_loop(root, expand, child_of, last_ply_value, stepped, depth, c, a, max_steps, stop=None):
    """The depth-first search under the root: ``(worst float32 [A] per own action at the root, states stepped)``;
    -1 states when ``stop`` ended it."""
    inf = jnp.float32(jnp.inf)
    plies = depth - 1

    def put(stack, p, node, alpha, beta):
        """``node`` written at ply ``p`` (nothing when ``p`` is past the stack)."""
        fields = dict(zip(("node", "joints", "ok", "reward", "static", "own", "order", "end", "n_valid", "done"), node))
        fields.update(pos=0, group=-1, worst=inf, best=-inf, alpha=alpha, beta=beta)
        return stack._replace(**{k: jax.tree.map(lambda s, v: s.at[p].set(v, mode="drop"), getattr(stack, k), v)
                                 for k, v in fields.items()})

    empty = jax.tree.map(lambda x: jnp.zeros((plies,) + x.shape, x.dtype), root)
    stack = _Ply(*empty, pos=jnp.zeros(plies, jnp.int32), group=jnp.full(plies, -1, jnp.int32),
                 worst=jnp.full(plies, inf), best=jnp.full(plies, -inf), alpha=jnp.full(plies, -inf),
                 beta=jnp.full(plies, inf))
    stack = put(stack, 0, root, -inf, inf)
    root_worst = jnp.full(a, inf)

    def cond(carry):
        return ~carry[3] & (carry[4] <= max_steps) & ~carry[5]

    def body(carry):
        stack, p, root_worst, finished, steps, stopped = carry
        at = lambda x: x[p]  # noqa: E731
        i = at(stack.pos)
        at_end = i >= at(stack.n_valid)
        code = at(stack.order)[jnp.minimum(i, c - 1)]
        g = at(stack.own)[code]
        in_group = at(stack.group) >= 0
        finalize = in_group & (at_end | (g != at(stack.group)))
        cutoff = (p > 0) & (at(stack.best) >= at(stack.beta))
        leave = ~finalize & (at_end | cutoff)
        start = ~finalize & ~leave & ~in_group
        pruned = at(stack.worst) <= jnp.maximum(at(stack.alpha), at(stack.best))  # this own move cannot be better
        skip = ~finalize & ~leave & in_group & (p > 0) & pruned
        visit = ~finalize & ~leave & ~start & ~skip
        terminal = at(stack.done)[code]
        enter = visit & ~terminal  # the child is expanded
        q = p + 1
        reward = at(stack.reward)[code]

        # finalize: the group's minimum is known
        best_f = jnp.maximum(at(stack.best), at(stack.worst))
        root_worst = jnp.where(finalize & (p == 0), root_worst.at[jnp.maximum(at(stack.group), 0)].set(
            at(stack.worst)), root_worst)
        # leave: the node's value goes to its parent's current answer
        parent = jnp.maximum(p - 1, 0)
        parent_code = stack.order[parent, jnp.minimum(stack.pos[parent], c - 1)]
        up_value = stack.reward[parent, parent_code] + at(stack.best)
        # visit: a terminal child, or one whose children are leaves, is valued now; another is entered (pushed)
        resolved = visit & (terminal | (q == plies))
        push = visit & ~resolved
        alpha = jnp.where(p == 0, -inf, jnp.maximum(at(stack.alpha), at(stack.best))) - reward
        beta = jnp.minimum(at(stack.beta), at(stack.worst)) - reward

        def enter_child(stack):
            node = expand(child_of(jax.tree.map(lambda x: x[p], stack.node), stack.joints[p, code], p), q)
            value = reward + last_ply_value(node[2], node[4], node[5])[0]
            return put(stack, q, node, alpha, beta), value, stepped(node[8])  # at q == plies nothing is written

        stack, entered_value, more = jax.lax.cond(enter, enter_child, lambda st: (st, jnp.float32(0.0), jnp.int32(0)),
                                                  stack)
        if stop is not None:  # asked when the steps pass a multiple of STOP_EVERY
            passed = steps // STOP_EVERY != (steps + more) // STOP_EVERY
            stopped = jax.lax.cond(passed, lambda: jnp.asarray(stop(steps + more), jnp.bool_),
                                   lambda: jnp.bool_(False))
        steps = steps + more
        resolved_value = jnp.where(terminal, at(stack.static)[code], entered_value)

        new_worst = jnp.where(start, inf, jnp.where(resolved, jnp.minimum(at(stack.worst), resolved_value),
                                                    at(stack.worst)))
        new_pos = jnp.where(skip, at(stack.end)[jnp.minimum(i, c - 1)], jnp.where(resolved, i + 1, i))
        stack = stack._replace(
            best=stack.best.at[p].set(jnp.where(finalize, best_f, at(stack.best))),
            group=stack.group.at[p].set(jnp.where(finalize, -1, jnp.where(start, g, at(stack.group)))),
            worst=stack.worst.at[p].set(new_worst),
            pos=stack.pos.at[p].set(new_pos),
        )
        # leave to the parent
        leave_up = leave & (p > 0)
        stack = stack._replace(
            worst=jnp.where(leave_up, stack.worst.at[parent].set(jnp.minimum(stack.worst[parent], up_value)),
                            stack.worst),
            pos=jnp.where(leave_up, stack.pos.at[parent].add(1), stack.pos),
        )
        finished = leave & ~leave_up
        p = jnp.where(push, q, jnp.where(leave_up, parent, p))
        return stack, p, root_worst, finished, steps, stopped

    carry = (stack, jnp.int32(0), root_worst, jnp.bool_(False), stepped(root[8]), jnp.bool_(False))
    _, _, root_worst, finished, steps, stopped = jax.lax.while_loop(cond, body, carry)
    steps = jnp.where(stopped & ~finished, -1, steps)
    return jnp.where(root_worst < inf, root_worst, _FMIN), steps
