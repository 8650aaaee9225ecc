"""`jaxgames.checkpoint.Checkpointer` on two JAX processes sharing one folder (a real multi-process run).

Two Python subprocesses on this machine, each with 2 forced CPU devices,
joined by ``jax.distributed.initialize`` (a coordinator on 127.0.0.1, gloo
CPU collectives) into one 4-device job. Both run `worker` (this file run as a
script) on the same folder: both create a `Checkpointer`, save one step of a
pytree with a leaf split over all 4 devices (each process holds half of it)
and replicated leaves, restore it onto the same shardings and also whole
(no template), fall back together past a damaged step (moved aside once, by
process 0), and then a `Checkpointer` with another config must raise
`ConfigMismatch`, and one on a folder another run holds `ResultsDirLocked`,
on BOTH processes (not only on process 0, which holds the
lock and reads ``config.json``). Each process prints ``WORKER <id> OK`` when
every check passed. Subprocess timeouts: a hang fails the test instead of
blocking CI.
"""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import time
import warnings

import pytest

TIMEOUT = 120  # seconds for both processes together; then both are killed and the test fails
DEVICES_PER_PROCESS = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _distributed_available() -> str | None:
    """None, or why a multi-process CPU job cannot run here."""
    try:
        import jax

        jax.distributed.initialize  # noqa: B018 - present in every supported JAX
        from jax.experimental import multihost_utils  # noqa: F401
    except (ImportError, AttributeError) as err:
        return f"jax.distributed is unavailable: {err}"
    return None


def test_two_processes_share_a_checkpoint_folder(tmp_path):
    reason = _distributed_available()
    if reason:
        pytest.skip(reason)
    port = _free_port()
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={DEVICES_PER_PROCESS}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    procs = [
        subprocess.Popen([sys.executable, os.path.abspath(__file__), str(i), str(port), str(tmp_path / "run")],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]
    deadline = time.monotonic() + TIMEOUT
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic()))[0])
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        logs = [p.communicate()[0] for p in procs]
        pytest.fail(f"the 2-process run did not finish in {TIMEOUT} s:\n" + "\n".join(l[-3000:] for l in logs))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if any("DISTRIBUTED UNAVAILABLE" in out for out in outputs):
        pytest.skip("jax.distributed.initialize failed on this machine: "
                    + next(out for out in outputs if "DISTRIBUTED UNAVAILABLE" in out)[-500:])
    for i, (p, out) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0 and f"WORKER {i} OK" in out, f"process {i} (exit {p.returncode}):\n{out[-6000:]}"


# ----------------------------------------------------------------------------- the worker (one per process)
def worker(process_id: int, port: int, directory: str) -> None:
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=process_id,
                                   initialization_timeout=60)
    except Exception as err:  # noqa: BLE001 - reported to the test, which skips
        print(f"DISTRIBUTED UNAVAILABLE: {type(err).__name__}: {err}", flush=True)
        sys.exit(0)

    import numpy as np
    from jax.experimental import multihost_utils

    from jaxgames import parallel
    from jaxgames.checkpoint import Checkpointer, CheckpointWarning
    from jaxgames.experiment import ConfigMismatch, DirectoryLock, ResultsDirLocked

    assert jax.process_count() == 2 and jax.process_index() == process_id
    assert len(jax.devices()) == 2 * DEVICES_PER_PROCESS and len(jax.local_devices()) == DEVICES_PER_PROCESS
    mesh = parallel.make_mesh()  # the 4 devices of both processes
    rows = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
    state = {
        "games": parallel.shard_batch(rows, mesh),  # 2 rows per device: each process holds half
        "params": parallel.replicate({"w": np.full((3, 2), 0.5, np.float32), "step": np.int32(7)}, mesh),
        "key": parallel.replicate(jax.random.key_data(jax.random.key(3)), mesh),
        "count": 5,  # a Python scalar
    }
    assert not state["games"].is_fully_addressable
    config = {"learning_rate": 0.1, "seed": 0}

    with Checkpointer(directory, config, max_to_keep=2) as ckpt:
        assert ckpt.latest(template=state) is None
        ckpt.save(1, state, wait=True)
        assert ckpt.steps() == [1]
        # onto the template's shardings: the batch still split over both processes' devices
        step, back = ckpt.latest(template=state)
        assert step == 1
        for name, leaf in (("games", back["games"]), ("w", back["params"]["w"]), ("key", back["key"])):
            want = {"games": state["games"], "w": state["params"]["w"], "key": state["key"]}[name]
            assert leaf.sharding == want.sharding, (name, leaf.sharding, want.sharding)
        np.testing.assert_array_equal(np.asarray(multihost_utils.process_allgather(back["games"], tiled=True)), rows)
        for shard in back["games"].addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), rows[shard.index])
        np.testing.assert_array_equal(np.asarray(back["params"]["w"]), np.full((3, 2), 0.5, np.float32))
        assert int(np.asarray(back["params"]["step"])) == 7
        # a template of this process's own unsharded arrays (a learner's freshly initialised state):
        # every leaf comes back whole on this process, so the learners' np.asarray copy works
        import jax.numpy as jnp

        local = ckpt.restore(1, template=jax.tree.map(lambda x: x if isinstance(x, int) else jnp.zeros(x.shape, x.dtype), state))
        assert local["games"].is_fully_addressable and local["games"].sharding.device_set <= set(jax.local_devices())
        np.testing.assert_array_equal(np.asarray(local["games"]), rows)
        # a later step, saved by both processes, is the latest
        ckpt.save(2, {**state, "games": parallel.shard_batch(rows + 1, mesh)}, wait=True)
        step, back = ckpt.latest(template=state)
        assert step == 2 and ckpt.steps() == [1, 2]
        np.testing.assert_array_equal(np.asarray(multihost_utils.process_allgather(back["games"], tiled=True)), rows + 1)

    # the folder was released by both: a reopening with the same config resumes it
    with Checkpointer(directory, config, max_to_keep=2) as ckpt:
        assert ckpt.steps() == [1, 2]
        # no template, by a manager that has not saved yet (q_snake's resume): every leaf whole on this process
        whole = ckpt.restore(1)
        assert whole["games"].is_fully_addressable and whole["games"].sharding.device_set <= set(jax.local_devices())
        np.testing.assert_array_equal(np.asarray(whole["games"]), rows)
        np.testing.assert_array_equal(np.asarray(whole["key"]), np.asarray(jax.random.key_data(jax.random.key(3))))
        assert int(np.asarray(whole["params"]["step"])) == 7 and whole["count"] == 5

    # a damaged step 2 (every data file truncated): every process falls back to step 1 together,
    # and step 2 is moved aside once (by process 0)
    if process_id == 0:
        files = [p for p in pathlib.Path(directory, "2").rglob("*") if p.is_file() and p.parent.name == "d"]
        assert files
        for p in files:
            with open(p, "r+b") as f:
                f.truncate(p.stat().st_size // 2)
    multihost_utils.sync_global_devices("test: step 2 damaged")
    with Checkpointer(directory, config, max_to_keep=2) as ckpt:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            step, back = ckpt.latest(template=state)
        assert step == 1 and ckpt.steps() == [1], (step, ckpt.steps())
        assert any(issubclass(w.category, CheckpointWarning) and "step 2" in str(w.message) for w in caught)
        np.testing.assert_array_equal(np.asarray(multihost_utils.process_allgather(back["games"], tiled=True)), rows)
        assert len(list(pathlib.Path(directory, ".corrupt").iterdir())) == 1
        ckpt.save(2, state, wait=True)  # training goes on and saves step 2 again
        assert ckpt.steps() == [1, 2]

    # another config is refused on BOTH processes (process 0 reads config.json, process 1 checks after it)
    try:
        Checkpointer(directory, {"learning_rate": 0.2, "seed": 0})
    except ConfigMismatch as err:
        assert "learning_rate" in str(err), str(err)
    else:
        raise AssertionError(f"process {process_id}: another config must raise ConfigMismatch")
    # a folder locked by another run (here a lock process 0 takes itself) is refused on BOTH processes
    other_run = DirectoryLock(pathlib.Path(directory))
    if process_id == 0:
        other_run.acquire()
    try:
        Checkpointer(directory, config)
    except ResultsDirLocked:
        pass
    else:
        raise AssertionError(f"process {process_id}: a locked folder must raise ResultsDirLocked")
    other_run.release()
    multihost_utils.sync_global_devices("test: other run released")
    # ... and the refusals left nothing locked or half-open: the right config still opens it
    with Checkpointer(directory, config, max_to_keep=2) as ckpt:
        assert ckpt.steps() == [1, 2]
    print(f"WORKER {process_id} OK", flush=True)


if __name__ == "__main__":
    worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
