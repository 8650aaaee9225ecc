"""The contract every registered game passes (after Pgx's ``api_test``).

Call ``api_test(env)`` from a test; it raises ``AssertionError`` naming the
first broken clause of the state contract (see :mod:`jaxgames.core`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.core import SIMULTANEOUS, Env, State


def random_legal_action(key: jax.Array, state: State) -> jax.Array:
    """A uniformly random legal action for one state (one per player if simultaneous).

    Args:
        key: PRNG key.
        state: one (unbatched) state.

    Returns:
        int32 ``[]`` or ``[num_players]``. Where nothing is legal (terminal
        states) action 0.
    """
    mask = state.legal_action_mask
    logits = jnp.where(mask, 0.0, jnp.finfo(jnp.float32).min)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def _check_state(env: Env, state: State, batch: tuple[int, ...]) -> None:
    n = env.num_players
    a = env.num_actions
    assert state.current_player.dtype == jnp.int32, state.current_player.dtype
    assert state.current_player.shape == batch, state.current_player.shape
    assert state.rewards.dtype == jnp.float32, state.rewards.dtype
    assert state.rewards.shape == batch + (n,), state.rewards.shape
    assert state.terminated.dtype == jnp.bool_ and state.terminated.shape == batch
    assert state.truncated.dtype == jnp.bool_ and state.truncated.shape == batch
    assert state.step_count.dtype == jnp.int32 and state.step_count.shape == batch
    mask_shape = (n, a) if env.simultaneous else (a,)
    assert state.legal_action_mask.dtype == jnp.bool_, state.legal_action_mask.dtype
    assert state.legal_action_mask.shape == batch + mask_shape, state.legal_action_mask.shape
    assert state.observation.shape == batch + env.observation_shape, (
        state.observation.shape,
        env.observation_shape,
    )
    assert np.all(np.isfinite(np.asarray(state.rewards))), "non-finite rewards"
    done = np.asarray(state.terminated | state.truncated)
    mask = np.asarray(state.legal_action_mask)
    reduce_axes = tuple(range(len(batch), mask.ndim))
    # A live state has a legal action (every player, if simultaneous); a terminal one none.
    live_ok = mask.any(axis=-1).all(axis=-1) if env.simultaneous else mask.any(axis=-1)
    assert np.all(live_ok | done), "a non-terminal state without legal actions"
    assert not np.any(mask.any(axis=reduce_axes) & np.asarray(state.terminated)), (
        "a terminated state with legal actions"
    )
    cp = np.asarray(state.current_player)
    if env.simultaneous:
        assert np.all(cp == SIMULTANEOUS), cp
    else:
        assert np.all((cp >= 0) & (cp < n) | done), cp


def api_test(env: Env, *, batch_size: int = 8, max_steps: int = 200, seed: int = 0) -> None:
    """Checks ``env`` against the state contract under ``jit`` and ``vmap``.

    Plays ``batch_size`` random games for up to ``max_steps`` steps and checks
    dtypes and shapes, legal-action masks, the terminal no-op with zero rewards,
    agreement of the batched and the single-game kernels, and that repeated
    calls do not retrace.

    Raises:
        AssertionError: on the first broken clause.
    """
    assert isinstance(env.num_players, int) and env.num_players >= 1
    assert isinstance(env.num_actions, int) and env.num_actions >= 1
    assert isinstance(env.observation_shape, tuple)
    assert isinstance(env.name, str)

    key = jax.random.key(seed)
    keys = jax.random.split(key, batch_size)

    # Single-game kernels under jit.
    single = jax.jit(env.init)(keys[0])
    _check_state(env, single, ())
    assert int(single.step_count) == 0

    traces = []

    def _batched_step(state, action, key):
        traces.append(1)  # runs once per trace, not per call
        return jax.vmap(env.step)(state, action, key)

    step = jax.jit(_batched_step)
    init = jax.jit(jax.vmap(env.init))
    choose = jax.jit(jax.vmap(random_legal_action))
    single_step = jax.jit(env.step)

    state = init(keys)
    _check_state(env, state, (batch_size,))
    np.testing.assert_array_equal(np.asarray(state.observation[0]), np.asarray(single.observation))

    finished = 0
    for t in range(max_steps):
        key, k_act, k_step = jax.random.split(key, 3)
        action = choose(jax.random.split(k_act, batch_size), state)
        step_keys = jax.random.split(k_step, batch_size)
        was_done = np.asarray(state.terminated | state.truncated)
        nxt = step(state, action, step_keys)
        _check_state(env, nxt, (batch_size,))
        # Batched and single-game kernels agree (game 0).
        one = single_step(jax.tree.map(lambda x: x[0], state), action[0], step_keys[0])
        for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(jax.tree.map(lambda x: x[0], nxt))):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        # Terminal no-op: the same state with zero rewards.
        if was_done.any():
            assert np.all(np.asarray(nxt.rewards)[was_done] == 0), "rewards after the end"
            expected = state.replace(rewards=jnp.zeros_like(state.rewards))
            for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(nxt)):
                a, b = np.asarray(a), np.asarray(b)
                np.testing.assert_array_equal(a[was_done], b[was_done], err_msg="terminal state changed")
        state = nxt
        finished = int(np.sum(np.asarray(state.terminated | state.truncated)))
        if finished == batch_size:
            break
    assert len(traces) == 1, f"env.step was traced {len(traces)} times for one input signature"
    # More steps on finished games must also be no-ops.
    if finished:
        k = jax.random.split(key, batch_size)
        again = step(state, choose(k, state), k)
        done = np.asarray(state.terminated | state.truncated)
        np.testing.assert_array_equal(np.asarray(again.step_count)[done], np.asarray(state.step_count)[done])
