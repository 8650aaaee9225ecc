"""The contract every registered game passes (after Pgx's ``api_test``).

Call ``api_test(env)`` from a test; it raises ``AssertionError`` naming the
first broken clause of the state contract (see :mod:`jaxgames.core`). Run it
inside ``x64_mode(True)`` to check a game with ``jax_enable_x64`` on.
"""

from __future__ import annotations

import contextlib
import copy

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.core import SIMULTANEOUS, Env, EnvParams, State


def x64_mode(enabled: bool = True) -> contextlib.AbstractContextManager:
    """A context manager that sets ``jax_enable_x64`` inside its block only.

    ``jax.enable_x64(flag)`` on JAX versions that have it (0.10 does), else
    ``jax.experimental.enable_x64()``/``disable_x64()``, which older versions
    have instead. Compiled functions are cached per mode, so a block does not
    disturb code outside it.

    Args:
        enabled: the value of ``jax_enable_x64`` inside the block.
    """
    manager = getattr(jax, "enable_x64", None)
    if manager is not None:
        return manager(enabled)
    from jax import experimental  # older JAX only (a fallback where jax.enable_x64 is missing)

    return experimental.enable_x64() if enabled else experimental.disable_x64()


def random_legal_action(key: jax.Array, state: State) -> jax.Array:
    """A uniformly random legal action for one state (one per player if simultaneous).

    Args:
        key: PRNG key.
        state: one (unbatched) state.

    Returns:
        int32 ``[]`` or ``[num_players]``.
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
    # The terminal-mask convention (jaxgames.core): all True once the game is over.
    assert np.all(mask.all(axis=reduce_axes) | ~done), "a finished state whose legal_action_mask is not all True"
    cp = np.asarray(state.current_player)
    if env.simultaneous:
        assert np.all(cp == SIMULTANEOUS), cp
    else:
        assert np.all((cp >= 0) & (cp < n) | done), cp


def _check_value_semantics(env: Env) -> None:
    """An Env is a frozen, hashable value (so compiled functions can be cached on it)."""
    assert env == env and hash(env) == hash(env)
    twin = copy.copy(env)
    assert twin == env and hash(twin) == hash(env), "a copy of an env must equal it"
    try:
        env.some_new_setting = 1
    except AttributeError:
        pass
    else:
        raise AssertionError("an Env must be frozen: setting an attribute did not raise")


def _check_actions_refused(env: Env, state: State) -> None:
    """Float, bool and wrongly shaped actions raise at the Python boundary, also under jit."""
    shape = (env.num_players,) if env.simultaneous else ()
    bad = [
        (jnp.zeros(shape, jnp.float32), TypeError),
        (jnp.zeros(shape, jnp.bool_), TypeError),
        (jnp.zeros(shape + (2,), jnp.int32), ValueError),
    ]
    key = jax.random.key(0)
    for action, error in bad:
        for fn in (env.step, jax.jit(env.step)):
            try:
                fn(state, action, key)
            except error:
                continue
            raise AssertionError(f"step accepted a bad action {action.dtype}{list(action.shape)} (expected {error.__name__})")


def _dtypes(tree) -> dict:
    return {jax.tree_util.keystr(path): leaf.dtype for path, leaf in jax.tree_util.tree_leaves_with_path(tree)}


def _check_dtypes(env: Env, state: State, action: jax.Array, key: jax.Array) -> None:
    """Every state leaf has one dtype: through ``step``, and with ``jax_enable_x64`` on or off.

    The contract fixes ``current_player`` int32, ``rewards`` float32 and so
    on; a game that lets x64 widen a leaf (a Python int or float promoted to
    64 bits) breaks it, and a ``lax.scan`` over its steps (dtype of the
    carry changed) too. Checked by abstract evaluation: nothing is compiled.
    """
    want = _dtypes(state)
    for enabled in (False, True):
        with x64_mode(enabled):
            for what, got in (
                ("init", jax.eval_shape(env.init, key)),
                ("step", jax.eval_shape(env.step, state, action, key)),
            ):
                changed = {k: (want[k], v) for k, v in _dtypes(got).items() if want.get(k) != v}
                assert not changed, f"{env.name}: {what} with jax_enable_x64={enabled} changes dtypes {changed}"


def _check_keys(env: Env, state: State, action: jax.Array, step, choose, batch_size: int) -> None:
    """Stochastic games refuse a missing key; different keys give different trajectories.

    ``step`` and ``choose`` are the batched kernels of `api_test` (reused,
    so nothing is compiled again).
    """
    if not env.stochastic:
        jax.eval_shape(env.step, state, action)  # a deterministic game steps without a key
        return
    try:
        jax.eval_shape(env.step, state, action)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{env.name} is stochastic but step without a key did not raise ValueError")
    # Two batches of games from the same start, stepped with the same actions and
    # different keys, must not be identical everywhere (chance events differ).
    n = batch_size
    a = b = _broadcast(state, n)
    differs = False
    for t in range(30):
        acts = choose(jax.random.split(jax.random.key(1000 + t), n), a)
        a = step(a, acts, jax.random.split(jax.random.key(2 * t), n))
        b = step(b, acts, jax.random.split(jax.random.key(2 * t + 1), n))
        differs = any(not np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
        if differs:
            break
    assert differs, f"{env.name} is stochastic but different keys gave identical trajectories"


def _broadcast(tree, n: int):
    """``n`` copies of every leaf, stacked on a new leading axis."""
    return jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * n), tree)


def _check_observe(env: Env, state: State) -> None:
    """``observe(state, player)`` matches the observation field, under jit and vmap over players."""
    n = env.num_players
    players = jnp.arange(n, dtype=jnp.int32)
    views = jax.jit(jax.vmap(env.observe, in_axes=(None, 0)))(state, players)
    if env.simultaneous:
        assert views.shape == (n,) + env.observation_shape[1:], views.shape
        np.testing.assert_array_equal(np.asarray(views), np.asarray(state.observation))
    else:
        assert views.shape == (n,) + env.observation_shape, views.shape
        mover = int(state.current_player)
        if 0 <= mover < n:
            np.testing.assert_array_equal(np.asarray(views[mover]), np.asarray(state.observation))


def api_test(env: Env, *, batch_size: int = 8, max_steps: int = 200, seed: int = 0) -> None:
    """Checks ``env`` against the state contract under ``jit`` and ``vmap``.

    Plays ``batch_size`` random games for up to ``max_steps`` steps and checks
    dtypes and shapes (every state leaf keeps its dtype through ``step`` and
    whether ``jax_enable_x64`` is on or off), legal-action masks (all True
    once the game is over),
    the terminal no-op with zero rewards, agreement of the batched and the
    single-game kernels, that repeated calls do not retrace, ``observe``
    against the observation field, keys (a stochastic game refuses a missing
    key and different keys give different trajectories), traced and vmapped
    params, refusal of float/bool/misshaped actions, and that the env is a
    frozen hashable value.

    Args:
        env: the game.
        batch_size: random games played at once.
        max_steps: steps per game at most.
        seed: the random seed of the games' keys.

    Raises:
        AssertionError: on the first broken clause.
    """
    assert isinstance(env.num_players, int) and env.num_players >= 1
    assert isinstance(env.num_actions, int) and env.num_actions >= 1
    assert isinstance(env.observation_shape, tuple)
    assert isinstance(env.name, str)
    _check_value_semantics(env)

    key = jax.random.key(seed)
    keys = jax.random.split(key, batch_size)

    # Single-game kernels under jit.
    single = jax.jit(env.init)(keys[0])
    _check_state(env, single, ())
    assert int(single.step_count) == 0

    # Params: a pytree step takes explicitly and traced; the batched kernel
    # vmaps over one params per game (a sweep is one vmap), and game 0 of
    # each batched step must equal the single-game kernel with the implicit
    # default params.
    params = env.default_params
    assert isinstance(params, EnvParams), type(params)
    batch_params = _broadcast(params, batch_size)
    traces = []

    def _batched_step(state, action, key, params):
        traces.append(1)  # runs once per trace, not per call
        return jax.vmap(env.step)(state, action, key, params)

    batched_step = jax.jit(_batched_step)

    def step(state, action, key):
        return batched_step(state, action, key, batch_params)

    single_step = jax.jit(env.step)
    init = jax.jit(jax.vmap(env.init))
    choose = jax.jit(jax.vmap(random_legal_action))

    state = init(keys)
    _check_state(env, state, (batch_size,))
    np.testing.assert_array_equal(np.asarray(state.observation[0]), np.asarray(single.observation))
    first_action = choose(jax.random.split(jax.random.key(seed + 1), batch_size), _broadcast(single, batch_size))[0]
    _check_dtypes(env, single, first_action, keys[0])
    _check_actions_refused(env, single)
    _check_keys(env, single, first_action, step, choose, batch_size)
    # Another params pytree of the same structure must not retrace (params are traced leaves).
    batched_step(state, choose(keys, state), keys, jax.tree.map(lambda x: x + jnp.zeros_like(x), batch_params))
    assert len(traces) == 1, "step retraced for new params values: params must be traced leaves"
    _check_observe(env, single)

    finished = 0
    for t in range(max_steps):
        key, k_act, k_step = jax.random.split(key, 3)
        action = choose(jax.random.split(k_act, batch_size), state)
        step_keys = jax.random.split(k_step, batch_size)
        was_done = np.asarray(state.terminated | state.truncated)
        nxt = step(state, action, step_keys)
        _check_state(env, nxt, (batch_size,))
        assert _dtypes(nxt) == _dtypes(state), "step changed the dtype of a state leaf"
        # Batched (explicit params, vmapped) and single-game (default params) kernels agree (game 0).
        one = single_step(jax.tree.map(lambda x: x[0], state), action[0], step_keys[0])
        for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(jax.tree.map(lambda x: x[0], nxt))):
            assert a.dtype == b.dtype, (a.dtype, b.dtype)
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        # Terminal no-op: the same state with zero rewards.
        if was_done.any():
            assert np.all(np.asarray(nxt.rewards)[was_done] == 0), "rewards after the end"
            expected = state.replace(rewards=jnp.zeros_like(state.rewards))
            for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(nxt)):
                a, b = np.asarray(a), np.asarray(b)
                np.testing.assert_array_equal(a[was_done], b[was_done], err_msg="terminal state changed")
        state = nxt
        if t % 5 == 0:
            _check_observe(env, jax.tree.map(lambda x: x[0], state))
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
