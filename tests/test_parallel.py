"""Scale-out (`jaxgames.parallel`): 8 devices give the same results as 1.

The rest of the suite runs on ONE device, and JAX fixes the device count when
it starts, so every multi-device check runs in a subprocess: this file run
as a script (``python tests/test_parallel.py CHECK``) with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``. The expected values
are the one-device results of the same call in the same process, never
numbers copied from the code under test.

* sweep and arena: rows are independent and each has its own key, so 8
  devices == 1 device BITWISE, also with a batch that is not a multiple of 8
  (padding) and with chunks;
* data-parallel training steps: the loss and gradients are means over the
  minibatch, summed per device and then all-reduced, i.e. in another order
  than on one device, so they agree only up to float32 rounding (tolerance
  justified at the check).

Speed: all the 8-device checks run in ONE subprocess (one JAX start-up, one
import of the learners), started once by the ``eight_devices`` fixture (one
xdist worker runs this module: `tests/conftest.py`); each test then reports
its own check's outcome. That subprocess inherits the session's XLA flags
(`tests/conftest.py`: cheaper CPU compilation unless
``JAXGAMES_TEST_XLA_DEFAULTS=1``). Both sides of every comparison (1 device
and 8) are compiled with the same flags in the same process.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

from jaxgames import parallel

NUM_DEVICES = 8


CHECKS = ("helpers", "sweep", "arena", "alphazero", "q_snake")
SUBPROCESS_TIMEOUT = 600  # seconds; a hang fails the tests instead of blocking CI


@pytest.fixture(scope="module")
def eight_devices():
    """Runs every check in one 8-device subprocess; returns ``(outcomes, log)``, outcomes[name] in {"OK", "FAILED"}."""
    env = dict(os.environ)  # the session's XLA flags (tests/conftest.py) and 8 host devices
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={NUM_DEVICES}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), *CHECKS], env=env, capture_output=True,
                              text=True, timeout=SUBPROCESS_TIMEOUT)
    except subprocess.TimeoutExpired as err:  # subprocess.run has killed it
        pytest.fail(f"the 8-device checks did not finish in {SUBPROCESS_TIMEOUT} s:\n{err.stdout}\n{err.stderr}")
    outcomes = dict(m.groups() for m in re.finditer(r"^CHECK (\w+) (OK|FAILED)$", proc.stdout, re.M))
    log = f"exit status {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-8000:]}"
    return outcomes, log


def _run_check(results, name: str):
    outcomes, log = results
    assert outcomes.get(name) == "OK", f"check {name}: {outcomes.get(name, 'did not run')}\n{log}"


# ----------------------------------------------------------------------------- in-process (one device)
def test_make_mesh_bad_input():
    n = len(jax.devices())
    with pytest.raises(ValueError, match="only"):
        parallel.make_mesh(n + 1)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="positive int"):
            parallel.make_mesh(bad)
    mesh = parallel.make_mesh()
    assert mesh.axis_names == ("batch",) and parallel.num_shards(mesh) == n
    with pytest.raises(TypeError, match="Mesh"):
        parallel.batch_sharding("cpu")


def test_one_host_device_per_core_sets_the_flag_once(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    env = {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}
    assert parallel.one_host_device_per_core(env) == cores
    assert env["XLA_FLAGS"] == f"--xla_dump_to=/tmp/x --xla_force_host_platform_device_count={cores}"
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}  # a count already set is kept
    assert parallel.one_host_device_per_core(env) == 3 and env["XLA_FLAGS"].endswith("=3")
    with pytest.raises(ValueError, match="positive device count"):
        parallel.one_host_device_per_core({"XLA_FLAGS": "--xla_force_host_platform_device_count=0"})
    empty = {}
    assert parallel.one_host_device_per_core(empty) == cores and "XLA_FLAGS" in empty
    # this process's backend has started: asking now would be ignored, so it is refused
    jax.devices()
    monkeypatch.setenv("XLA_FLAGS", "")
    with pytest.raises(RuntimeError, match="before JAX starts"):
        parallel.one_host_device_per_core()


def test_run_sweep_refuses_bad_devices():
    from jaxgames.games import matrix
    from jaxgames.learners import tabular as tl

    cfg = tl.LearnerConfig(num_iterations=5)
    params, keys = tl.stack_params([tl.learner_params()] * 2), jax.random.split(jax.random.key(0), 2)
    with pytest.raises(ValueError, match="devices must be a non-empty"):
        tl.run_sweep(matrix.stag_hunt(), cfg, keys, params, progress=False, devices=[])
    with pytest.raises(ValueError, match="not given with mesh"):
        tl.run_sweep(matrix.stag_hunt(), cfg, keys, params, progress=False, devices=jax.devices(),
                     mesh=parallel.make_mesh(1))


def test_initialize_distributed_passes_the_coordinator_settings_on(monkeypatch):
    """The environment's coordinator address, process count and id, and the bind address (a private
    interface instead of JAX's default of every interface) reach ``jax.distributed.initialize``."""
    seen = {}
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kw: seen.update(kw))
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.1:1234")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    monkeypatch.setenv("JAX_PROCESS_ID", "1")
    monkeypatch.setenv("JAX_COORDINATOR_BIND_ADDRESS", "10.0.0.1:1234")
    parallel.initialize_distributed()
    assert seen == {"coordinator_address": "10.0.0.1:1234", "num_processes": 2, "process_id": 1,
                    "coordinator_bind_address": "10.0.0.1:1234"}
    monkeypatch.setenv("JAX_PROCESS_ID", "one")
    with pytest.raises(ValueError, match="JAX_PROCESS_ID must be an integer"):
        parallel.initialize_distributed()


def test_pad_unpad_by_hand():
    tree = {"a": np.arange(5), "b": np.arange(10).reshape(5, 2)}
    padded, n = parallel.pad_batch(tree, 4)
    assert n == 5
    np.testing.assert_array_equal(padded["a"], [0, 1, 2, 3, 4, 4, 4, 4])  # the last row repeated
    np.testing.assert_array_equal(padded["b"][5:], [[8, 9]] * 3)
    back = parallel.unpad(padded, n)
    np.testing.assert_array_equal(back["a"], tree["a"])
    np.testing.assert_array_equal(back["b"], tree["b"])
    same, n = parallel.pad_batch(tree, 5)
    assert same is tree and n == 5
    with pytest.raises(ValueError, match="disagree"):
        parallel.pad_batch({"a": np.zeros(3), "b": np.zeros(4)}, 2)
    with pytest.raises(ValueError, match="scalar"):
        parallel.batch_size_of({"a": np.zeros(3), "b": np.float32(1)})
    with pytest.raises(ValueError, match="empty"):
        parallel.pad_batch(np.zeros((0, 2)), 2)


def test_arena_mesh_refuses_host_agents():
    import jaxgames
    from jaxgames.agents import HostAgent, RandomAgent
    from jaxgames.evaluation import arena

    class First(HostAgent):
        name = "host_first"

        def act(self, env, state, rng, player):
            return int(np.argmax(state.legal_action_mask))

    env = jaxgames.make("matching_pennies")
    with pytest.raises(ValueError, match="JaxAgent"):
        arena.play(env, [First(), RandomAgent()], 2, jax.random.key(0), mesh=parallel.make_mesh())


def test_map_batched_chunks_equal_one_call():
    fn = jax.jit(lambda b, w: {"y": b["x"] * w + jax.vmap(jax.random.uniform)(b["k"])[:, None], "s": b["x"].sum(-1)})
    batch = {"x": np.arange(21.0, dtype=np.float32).reshape(7, 3), "k": jax.random.split(jax.random.key(0), 7)}
    whole = parallel.gather(fn(batch, 2.0))
    mesh = parallel.make_mesh()
    for chunk in (1, 3, 7, 100):
        out = parallel.map_batched(fn, batch, mesh=mesh, chunk_size=chunk, shared=(2.0,))
        for k in whole:
            np.testing.assert_array_equal(out[k], whole[k])
    with pytest.raises(ValueError, match="chunk_size"):
        parallel.map_batched(fn, batch, chunk_size=0, shared=(2.0,))


# ----------------------------------------------------------------------------- subprocess (8 devices)
def test_helpers_on_8_devices(eight_devices):
    _run_check(eight_devices, "helpers")


def test_sweep_8_devices_bitwise(eight_devices):
    _run_check(eight_devices, "sweep")


def test_arena_8_devices_bitwise(eight_devices):
    _run_check(eight_devices, "arena")


def test_alphazero_8_devices_close(eight_devices):
    _run_check(eight_devices, "alphazero")


def test_q_snake_8_devices_close(eight_devices):
    _run_check(eight_devices, "q_snake")


# ----------------------------------------------------------------------------- the checks
def _assert_trees_equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
        np.testing.assert_array_equal(x, y)


def check_helpers():
    assert len(jax.devices()) == NUM_DEVICES
    mesh = parallel.make_mesh()
    assert parallel.num_shards(mesh) == NUM_DEVICES
    assert parallel.num_shards(parallel.make_mesh(2)) == 2
    x = np.arange(13 * 3, dtype=np.float32).reshape(13, 3)
    try:
        parallel.shard_batch(x, mesh)
    except ValueError as err:
        assert "13" in str(err) and "pad=True" in str(err)
    else:
        raise AssertionError("a batch of 13 on 8 devices without padding must raise")
    xs = parallel.shard_batch(x, mesh, pad=True)
    assert xs.shape == (16, 3) and len(xs.sharding.device_set) == NUM_DEVICES
    assert {s.data.shape for s in xs.addressable_shards} == {(2, 3)}  # 2 rows per device
    np.testing.assert_array_equal(parallel.unpad(parallel.gather(xs), 13), x)
    w = parallel.replicate({"w": np.ones((3, 2), np.float32)}, mesh)["w"]
    assert w.sharding.is_fully_replicated
    fn = jax.jit(lambda b, w: b @ w)
    np.testing.assert_array_equal(parallel.map_batched(fn, x, mesh=mesh, chunk_size=5, shared=(np.ones((3, 2), np.float32),)),
                                  x @ np.ones((3, 2), np.float32))


def check_sweep():
    from jaxgames.games import matrix
    from jaxgames.learners import tabular as tl

    cfg = tl.LearnerConfig(exploration="lenient_boltzmann", num_iterations=200, max_leniency=5)
    R = 13  # not a multiple of 8: the chunks are padded
    params = tl.stack_params([tl.learner_params(learning_rate=0.05 + 0.01 * i, leniency=1 + i % 5) for i in range(R)])
    keys = jax.random.split(jax.random.key(0), R)
    one = tl.run_sweep(matrix.stag_hunt(), cfg, keys, params, progress=False)
    for devices, chunk in ((8, 4096), (8, 5), (4, 3)):
        out = tl.run_sweep(matrix.stag_hunt(), cfg, keys, params, progress=False,
                           mesh=parallel.make_mesh(devices), chunk_size=chunk)
        _assert_trees_equal(one, out)
    # chunks spread over devices, each running the one-device program: 13 runs on 8 devices (chunks of 2, the
    # last padded) and on 3 with chunks of 4; and a 3-action game with Boltzmann learners
    for devices, chunk in ((8, 4096), (3, 4)):
        out = tl.run_sweep(matrix.stag_hunt(), cfg, keys, params, progress=False, devices=jax.devices()[:devices],
                           chunk_size=chunk)
        _assert_trees_equal(one, out)
    game, cfg = matrix.biased_rock_paper_scissors(), tl.LearnerConfig(exploration="boltzmann", num_iterations=500)
    params = tl.stack_params([tl.learner_params(learning_rate=0.01 * (1 + i)) for i in range(R)])
    one = tl.run_sweep(game, cfg, keys, params, progress=False)
    _assert_trees_equal(one, tl.run_sweep(game, cfg, keys, params, progress=False, devices=jax.devices()))


def check_arena():
    import jaxgames
    from jaxgames.agents import FirstLegalAgent, RandomAgent
    from jaxgames.evaluation import arena

    mesh = parallel.make_mesh()
    env = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2, utility_margin=True)
    agents = [RandomAgent(), FirstLegalAgent()]
    whole = arena.play(env, agents, 13, jax.random.key(0))
    _assert_trees_equal(whole, arena.play(env, agents, 13, jax.random.key(0), mesh=mesh))
    # chunks on the mesh (5 rounds up to 8 per chunk: two chunks, the second padded)
    _assert_trees_equal(whole, arena.play(env, agents, 13, jax.random.key(0), mesh=mesh, chunk_size=5))
    # games streamed through 8 rows, one a device (5 rounds up to 8), refilled as they end
    _assert_trees_equal(whole, arena.play(env, agents, 13, jax.random.key(0), mesh=mesh, chunk_size=5, refill=True))
    # A simultaneous game, random actions and random seating, 8 games on 2 devices.
    env = jaxgames.make("rock_paper_scissors")
    kw = dict(seating="permute")
    one = arena.play(env, [RandomAgent()], 8, jax.random.key(2), **kw)
    _assert_trees_equal(one, arena.play(env, [RandomAgent()], 8, jax.random.key(2),
                                        mesh=parallel.make_mesh(2), **kw))
    assert len(set(map(tuple, one.returns.tolist()))) > 1  # the games differ: the keys really are per game


# Float tolerance of the data-parallel checks. One device sums a minibatch mean
# in one order, 8 devices sum 8 partial sums and then all-reduce them: both
# are float32 sums of at most a few hundred terms, whose rounding differs by
# at most ~n * eps_f32 relative (n <= 64 terms per sum here, eps = 1.2e-7, so
# <= 8e-6). After one optimizer step the parameters then differ by a
# learning-rate-scaled amount far below that (measured: < 3e-8 absolute), and
# self-play targets by a few float32 ulps (measured: < 1e-6). rtol=1e-5 with
# atol=1e-6 covers those and would still catch a real error (a gradient not
# averaged over devices, or taken from one device only, changes the loss and
# the parameters at the 1e-2..1e-4 level). Integer and boolean leaves (boards,
# counts, moves) must match exactly.
RTOL, ATOL = 1e-5, 1e-6


def _assert_trees_close(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)
        else:
            np.testing.assert_array_equal(x, y)


def check_alphazero():
    from jaxgames.learners import alphazero as az
    from jaxgames.networks.dots_and_boxes import NetworkConfig

    net = NetworkConfig(channels=8, num_blocks=1, value_channels=4, value_hidden=8)
    config = az.AlphaZeroConfig(board_sizes=((1, 2),), network=net, num_envs=8, num_simulations=4,
                                max_num_considered_actions=4, buffer_capacity=64, batch_size=8, updates_per_iteration=1)
    mesh = parallel.make_mesh()
    state = az.init_state(config, jax.random.key(0))
    one, m_one = az.train_iteration(config, state)
    out, m_out = az.train_iteration(config, state, mesh=mesh)
    assert out.env_states[0].board.edges.sharding == parallel.batch_sharding(mesh)  # games split over the devices
    assert jax.tree.leaves(out.params)[0].sharding.is_fully_replicated  # parameters replicated
    _assert_trees_close(parallel.gather(one), parallel.gather(out))
    assert not np.array_equal(np.asarray(jax.tree.leaves(one.params)[0]), np.asarray(jax.tree.leaves(state.params)[0]))
    for k in ("loss", "grad_norm", "1x2/root_value"):
        assert np.isfinite(m_one[k]), (k, m_one[k])  # assert_allclose would pass NaN against NaN
        np.testing.assert_allclose(m_out[k], m_one[k], rtol=RTOL, atol=ATOL)
    for k in ("1x2/games", "1x2/positions", "1x2/buffer_size"):
        assert m_out[k] == m_one[k]
    bad = az.AlphaZeroConfig(board_sizes=((1, 2),), network=net, num_envs=6, batch_size=8)
    try:
        az.train_iteration(bad, state, mesh=mesh)  # refused before the state is read
    except ValueError as err:
        assert "num_envs=6" in str(err)
    else:
        raise AssertionError("num_envs=6 on 8 devices must raise")


def check_q_snake():
    from jaxgames.learners import q_snake as qs

    config = qs.QSnakeConfig(
        board_size=7, num_snakes=4, max_turns=30, num_turns=8, features=(4,), num_games=8, batch_size=8,
        train_steps=1, pit_team_games=8, pit_solo_games=0, pit_max_turns=20, eval_every=0, walk_generations=1,
    )
    mesh = parallel.make_mesh()
    one_learner, learner = qs.QSnakeLearner(config), qs.QSnakeLearner(config, mesh=mesh)
    assert one_learner != learner and hash(one_learner) != hash(learner)  # separate jit traces
    state = one_learner.init(jax.random.key(0))
    one, m_one = one_learner.update(state)
    out, m_out = learner.update(state)
    data, _, _ = learner.collect(state)  # cached: the self-play slots are split over the devices
    assert data.record.q.sharding.spec[1] == parallel.BATCH_AXIS, data.record.q.sharding
    _assert_trees_close(parallel.gather(one), parallel.gather(out))
    assert m_one.keys() == m_out.keys()
    for k in m_one:
        if k in ("seconds", "decisions_per_second") or m_one[k] is None:  # wall-clock; no games of that kind
            assert (m_out[k] is None) == (m_one[k] is None), k
            continue
        np.testing.assert_allclose(m_out[k], m_one[k], rtol=RTOL, atol=ATOL, err_msg=k)


if __name__ == "__main__":
    import traceback

    failed = False
    for name in sys.argv[1:]:  # every check runs, even after one fails; each prints its own outcome
        try:
            globals()[f"check_{name}"]()
        except Exception:  # noqa: BLE001 - reported to the test of that check
            traceback.print_exc()
            print(f"CHECK {name} FAILED", flush=True)
            failed = True
        else:
            print(f"CHECK {name} OK", flush=True)
    sys.exit(1 if failed else 0)
