"""Monte Carlo tree search on mctx (the only module that calls mctx): pure MCTS and network-guided search.

Two searches share the sign convention, the masking and the key discipline
described below: `search` (pure MCTS, random rollouts at the leaves) and
`network_search` (AlphaZero-style: a policy-value network gives the priors
and the leaf values; ``mctx.gumbel_muzero_policy`` or ``mctx.muzero_policy``).

Sources: Janson, "Two-Player Games" (CS/Stat 184 lecture notes, 2024), the
MCTS slides (selection by an upper confidence bound, expansion, a random
rollout from the new node, backup); El Kaddouri, Rys & Gao, "Multi Agent
Reinforcement Learning With Dots And Boxes" (course report, undated),
section 5.7 (the "naive MCTS" opponent); and mctx (``mctx.muzero_policy``:
PUCT selection, here with uniform priors over the legal actions, no
Dirichlet noise, and one uniformly random playout as the leaf value).

Works for any two-player zero-sum sequential `jaxgames.core.Env`. Every tree
edge carries the mover's reward and the discount of `jaxgames.search.sign`,
so Dots-and-Boxes' extra turn needs no special case; a leaf's value is from
the side of *its* player to move. Legal-action masks (True = legal) become
mctx's ``invalid_actions`` (True = illegal) only at the mctx call; inside
the tree illegal actions get the prior logit ``finfo(float32).min``.

Every ``env.step`` gets its own subkey. A root whose mask has no True entry
is searched as if every action were legal, so mctx never normalises over an
empty set (NaN weights).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import mctx

from jaxgames.search import sign


def _logits(mask: jax.Array) -> jax.Array:
    return jnp.where(mask, 0.0, jnp.finfo(jnp.float32).min).astype(jnp.float32)


def random_rollout(env, state, key: jax.Array, *, max_steps: int) -> jax.Array:
    """float32 ``[]``: return of a uniformly random playout for ``state.current_player``.

    The rewards of every step until the game ends (or ``max_steps``) are
    summed for the player to move at ``state`` (0 if ``state`` is terminal).

    A ``lax.scan`` of exactly ``max_steps`` steps, as the Dots-and-Boxes
    playout (`jaxgames.games.dots_and_boxes.rules.random_playout`): a step
    from a terminal state adds nothing to the total (masked here, whatever
    the game's terminal step returns). Its loop has a trip count known at
    compile time, so no step reads a condition back to the host (a
    ``while_loop`` on the game's end would, on a GPU). The key is split as
    ``key, action_key, step_key = split(key, 3)`` at every step, so the
    return equals that of a loop stopping at the game's end. The price:
    every playout runs all ``max_steps`` steps (on the CPU, a 64-game 3x3
    Dots-and-Boxes move of 64 simulations took 1.1x the loop's time from the
    initial position and 1.9x with 8 edges left; jax 0.10.2, one core).

    Args:
        env: two-player sequential `Env`.
        state: one unbatched state.
        key: PRNG key (split into one subkey per action choice and per step).
        max_steps: static playout length (the bound on the game's remaining moves).
    """
    player = state.current_player

    def body(c, _):
        s, total, key = c
        key, action_key, step_key = jax.random.split(key, 3)
        action = jax.random.categorical(action_key, _logits(s.legal_action_mask)).astype(jnp.int32)
        done = s.terminated | s.truncated
        nxt = env.step(s, action, step_key)
        total = jnp.where(done, total, total + sign.mover_reward(nxt.rewards, player))
        return (nxt, total, key), None

    (_, total, _), _ = jax.lax.scan(body, (state, jnp.float32(0.0), key), None, length=int(max_steps))
    return total


def search(
    env,
    states,
    key: jax.Array,
    *,
    num_simulations: int,
    max_depth: int | None = None,
    pb_c_init: float = 1.25,
    max_rollout_steps: int | None = None,
):
    """Pure MCTS from a batch of root states.

    Args:
        env: two-player zero-sum sequential `Env` (rewards from each player's side).
        states: batched states ``[B, ...]``; a terminal root (or one with
            no legal action) gives finite but meaningless weights.
        key: PRNG key (split explicitly: root playouts, mctx's search, and
            inside the tree one subkey per step and per playout).
        num_simulations: simulations per root (static).
        max_depth: maximum tree depth (mctx), None = unbounded.
        pb_c_init: exploration constant of mctx's PUCT rule.
        max_rollout_steps: playout length, every playout runs exactly this many
            steps (`random_rollout`); default ``env.num_actions`` + 1, enough
            for Dots-and-Boxes, where a game has ``num_edges`` moves.

    Returns:
        ``mctx.PolicyOutput``: ``action`` int32 ``[B]``, ``action_weights``
        float32 ``[B, num_actions]`` (visit distribution), ``search_tree``.
    """
    B = states.current_player.shape[0]
    steps = int(max_rollout_steps or env.num_actions + 1)
    rollout = jax.vmap(lambda s, k: random_rollout(env, s, k, max_steps=steps))
    root_key, search_key = jax.random.split(key)
    # A root without any legal action would make mctx normalise over nothing (NaN): all valid there.
    mask = states.legal_action_mask
    root_mask = mask | ~jnp.any(mask, axis=-1, keepdims=True)
    root = mctx.RootFnOutput(
        prior_logits=_logits(root_mask),
        value=rollout(states, jax.random.split(root_key, B)),
        embedding=states,
    )

    def recurrent_fn(params, rng_key, action, embedding):
        del params
        step_key, rollout_key = jax.random.split(rng_key)
        nxt = jax.vmap(env.step)(embedding, action, jax.random.split(step_key, action.shape[0]))
        done = nxt.terminated | nxt.truncated
        value = jnp.where(done, 0.0, rollout(nxt, jax.random.split(rollout_key, action.shape[0])))
        out = mctx.RecurrentFnOutput(
            reward=sign.mover_reward(nxt.rewards, embedding.current_player),
            discount=sign.discount(embedding.current_player, nxt.current_player, done),
            prior_logits=_logits(nxt.legal_action_mask),
            value=value,
        )
        return out, nxt

    return mctx.muzero_policy(
        params=None,
        rng_key=search_key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        invalid_actions=~root_mask,  # mctx polarity: True = illegal
        max_depth=max_depth,
        dirichlet_fraction=0.0,
        pb_c_init=pb_c_init,
        temperature=0.0,
    )


SEARCH_ALGORITHMS = ("gumbel", "muzero")
"""The mctx policies `network_search` runs: ``mctx.gumbel_muzero_policy`` and ``mctx.muzero_policy``."""

Evaluate = Callable[[Any, Any], "tuple[jax.Array, jax.Array]"]
"""``evaluate(params, states [B]) -> (logits float32 [B, A], value float32 [B])``.

``value`` is the value of each state from the side of *its* player to move,
in the units of the environment's rewards (e.g. the final outcome, +1/-1/0,
or the final box margin); ``logits`` are the prior's logits over every
action (illegal ones are masked here, not by the network)."""


def _masked_logits(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """Network logits with illegal actions at ``finfo(float32).min`` (never -inf: mctx subtracts maxima)."""
    return jnp.where(mask, logits.astype(jnp.float32), jnp.finfo(jnp.float32).min)


def check_search_settings(*, num_simulations, algorithm: str = "gumbel", max_num_considered_actions: int = 16) -> None:
    """Raises for bad `network_search` settings, at the Python boundary (before any tracing).

    Raises:
        ValueError: ``num_simulations`` or ``max_num_considered_actions`` not a
            positive int, or an unknown ``algorithm`` (each message names the value).
    """
    for name, value in (("num_simulations", num_simulations), ("max_num_considered_actions", max_num_considered_actions)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int; got {value!r}")
    if algorithm not in SEARCH_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {SEARCH_ALGORITHMS}; got {algorithm!r}")


def network_search(
    env,
    states,
    key: jax.Array,
    *,
    evaluate: Evaluate,
    params,
    num_simulations: int,
    algorithm: str = "gumbel",
    max_depth: int | None = None,
    max_num_considered_actions: int = 16,
    gumbel_scale: float = 1.0,
    pb_c_init: float = 1.25,
    dirichlet_fraction: float = 0.0,
    dirichlet_alpha: float = 0.3,
    temperature: float = 0.0,
):
    """Network-guided search from a batch of root states (AlphaZero / Gumbel MuZero on mctx).

    The network's logits are the prior and its value the leaf evaluation;
    the environment itself is the model (the rules are known: AlphaZero,
    Silver et al. 2018, Science 362:1140, not a learned MuZero dynamics).
    Signs and masking as in the module docstring.

    * ``algorithm="gumbel"``: ``mctx.gumbel_muzero_policy`` (Danihelka et
      al. 2022, "Policy improvement by planning with Gumbel", ICLR): Gumbel
      top-k sampling of ``max_num_considered_actions`` root actions and
      sequential halving; ``action_weights`` is the improved policy
      ``softmax(logits + sigma(completed Q))``, the self-play policy
      target. ``gumbel_scale=0`` makes the choice deterministic (evaluation).
    * ``algorithm="muzero"``: ``mctx.muzero_policy`` (PUCT, AlphaZero's
      selection); ``action_weights`` is the visit distribution;
      ``temperature=0`` plays the most visited action, and
      ``dirichlet_fraction`` mixes Dirichlet noise into the root prior.

    Args:
        env: two-player zero-sum sequential `Env` (rewards from each player's side).
        states: batched root states ``[B, ...]``.
        key: PRNG key of mctx's search (mctx derives one key per simulation
            from it, split here into one key per game for ``env.step``).
        evaluate: see `Evaluate`.
        params: the network parameters handed to ``evaluate``.
        num_simulations: simulations per root (static, >= 1).
        algorithm: ``"gumbel"`` or ``"muzero"``.
        max_depth: maximum tree depth (mctx), None = unbounded.
        max_num_considered_actions: Gumbel's root candidates (static).
        gumbel_scale: scale of the Gumbel noise (Gumbel only).
        pb_c_init, dirichlet_fraction, dirichlet_alpha, temperature: PUCT
            settings (MuZero only).

    Returns:
        ``mctx.PolicyOutput``: ``action`` int32 ``[B]``, ``action_weights``
        float32 ``[B, num_actions]``, ``search_tree`` (``search_tree.summary()``
        gives visit counts, root Q-values and the root value).

    Raises:
        ValueError: see `check_search_settings` (before tracing).
    """
    check_search_settings(
        num_simulations=num_simulations, algorithm=algorithm, max_num_considered_actions=max_num_considered_actions
    )
    mask = states.legal_action_mask
    # A root without any legal action would make mctx normalise over nothing (NaN): all valid there.
    root_mask = mask | ~jnp.any(mask, axis=-1, keepdims=True)
    logits, value = evaluate(params, states)
    root_done = states.terminated | states.truncated
    root = mctx.RootFnOutput(
        prior_logits=_masked_logits(logits, root_mask),
        value=jnp.where(root_done, 0.0, value).astype(jnp.float32),
        embedding=states,
    )

    def recurrent_fn(params, rng_key, action, embedding):
        batch = action.shape[0]
        keys = jax.random.split(rng_key, batch)  # mctx derives rng_key per simulation from `key`
        nxt = jax.vmap(env.step)(embedding, action, keys)
        done = nxt.terminated | nxt.truncated
        logits, value = evaluate(params, nxt)
        out = mctx.RecurrentFnOutput(
            reward=sign.mover_reward(nxt.rewards, embedding.current_player),
            discount=sign.discount(embedding.current_player, nxt.current_player, done),
            prior_logits=_masked_logits(logits, nxt.legal_action_mask),
            value=jnp.where(done, 0.0, value).astype(jnp.float32),
        )
        return out, nxt

    invalid_actions = ~root_mask  # mctx polarity: True = illegal
    if algorithm == "gumbel":
        return mctx.gumbel_muzero_policy(
            params=params,
            rng_key=key,
            root=root,
            recurrent_fn=recurrent_fn,
            num_simulations=num_simulations,
            invalid_actions=invalid_actions,
            max_depth=max_depth,
            max_num_considered_actions=max_num_considered_actions,
            gumbel_scale=gumbel_scale,
        )
    return mctx.muzero_policy(
        params=params,
        rng_key=key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        invalid_actions=invalid_actions,
        max_depth=max_depth,
        dirichlet_fraction=dirichlet_fraction,
        dirichlet_alpha=dirichlet_alpha,
        pb_c_init=pb_c_init,
        temperature=temperature,
    )
