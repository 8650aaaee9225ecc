"""Checkpointer: exact round trips and resumes, one config per folder, the lock, damaged and killed saves."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxgames.checkpoint import CheckpointError, Checkpointer, CheckpointWarning
from jaxgames.experiment import ConfigMismatch, ResultsDirLocked

ROOT = pathlib.Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    learning_rate: float = 0.1
    num_steps: int = 6
    progress: bool = True  # neutral: does not change results


OPT = optax.adam(0.1)


def init_state(seed: int = 0) -> dict:
    params = {"w": jnp.zeros((3,), jnp.float32), "b": jnp.float32(0.0)}
    return {"params": params, "opt_state": OPT.init(params), "step": jnp.int32(0), "key": jax.random.key(seed)}


@jax.jit
def train_step(state: dict) -> dict:
    """One noisy least-squares step: the noise comes from the state's key, so a resume must restore it exactly."""
    key, batch_key = jax.random.split(state["key"])
    x = jax.random.normal(batch_key, (8, 3))
    y = x @ jnp.array([1.0, -2.0, 0.5]) + 0.3

    def loss(p):
        return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

    grads = jax.grad(loss)(state["params"])
    updates, opt_state = OPT.update(grads, state["opt_state"])
    return {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state,
            "step": state["step"] + 1, "key": key}


def assert_same_tree(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        if jnp.issubdtype(getattr(x, "dtype", None), jax.dtypes.prng_key):
            assert jnp.issubdtype(y.dtype, jax.dtypes.prng_key) and jax.random.key_impl(x) == jax.random.key_impl(y)
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_round_trip_of_params_optimiser_state_step_and_keys(tmp_path):
    state = train_step(train_step(init_state()))
    state["keys"] = jax.random.split(jax.random.key(7, impl="rbg"), 3)  # a batch of typed keys, another impl
    state["raw_key"] = jax.random.key_data(jax.random.key(9))  # a raw uint32 key
    with Checkpointer(tmp_path / "ckpt", TrainConfig()) as ckpt:
        assert ckpt.latest(template=state) is None  # nothing saved yet
        ckpt.save(2, state)
        step, restored = ckpt.latest(template=jax.tree.map(jnp.zeros_like, state))
    assert step == 2
    assert_same_tree(state, restored)  # optax NamedTuples, int32 step, typed keys of both impls, bitwise
    assert isinstance(restored["opt_state"][0], optax.ScaleByAdamState)
    with Checkpointer(tmp_path / "ckpt", TrainConfig()) as ckpt:
        step, plain = ckpt.latest()  # no template: dicts and lists, keys still typed
    assert step == 2 and jax.random.key_impl(plain["key"]) == jax.random.key_impl(state["key"])
    np.testing.assert_array_equal(plain["params"]["w"], state["params"]["w"])
    assert json_config(tmp_path / "ckpt")["learning_rate"] == 0.1


def json_config(folder: pathlib.Path) -> dict:
    import json

    return json.loads((folder / "config.json").read_text())


def test_resume_is_exact(tmp_path):
    """Six steps straight equal three steps, a restart from the checkpoint, and three more (bitwise)."""
    straight = init_state()
    for _ in range(6):
        straight = train_step(straight)

    folder = tmp_path / "run"
    with Checkpointer(folder, TrainConfig()) as ckpt:
        state = init_state()
        for _ in range(3):
            state = train_step(state)
        ckpt.save(int(state["step"]), state)
    # A new process would start here: same config (a neutral field may differ).
    with Checkpointer(folder, TrainConfig(progress=False)) as ckpt:
        step, state = ckpt.latest(template=init_state())
        assert step == 3
        for _ in range(3):
            state = train_step(state)
        ckpt.save(6, state, wait=True)
        assert ckpt.steps() == [3, 6]
    assert_same_tree(straight, state)


def test_another_config_is_refused_and_overwrite_starts_over(tmp_path):
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:
        ckpt.save(1, init_state())
    with pytest.raises(ConfigMismatch, match=r"(?s)learning_rate: 0.1 in the folder, 0.2 in this run.*overwrite=true"):
        Checkpointer(tmp_path, TrainConfig(learning_rate=0.2))
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:  # the refusal touched nothing
        assert ckpt.steps() == [1]
    with pytest.warns(UserWarning, match="overwrite"):
        ckpt = Checkpointer(tmp_path, TrainConfig(learning_rate=0.2), overwrite=True)
    with ckpt:
        assert ckpt.latest() is None and ckpt.steps() == []
    assert json_config(tmp_path)["learning_rate"] == 0.2


def test_a_second_live_checkpointer_is_refused(tmp_path):
    first = Checkpointer(tmp_path, TrainConfig())
    try:
        with pytest.raises(ResultsDirLocked, match=rf"{tmp_path}.*pid {os.getpid()}"):
            Checkpointer(tmp_path, TrainConfig())
    finally:
        first.close()
    with Checkpointer(tmp_path, TrainConfig()):  # free again after close
        pass


def test_steps_must_increase(tmp_path):
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:
        ckpt.save(5, init_state())
        with pytest.raises(ValueError, match="above the latest saved step 5"):
            ckpt.save(5, init_state())


def _damage(step_dir: pathlib.Path) -> None:
    """Truncates every data file of a step to half its size (a disk error or a partial copy)."""
    files = [p for p in step_dir.rglob("*") if p.is_file() and p.parent.name == "d"]
    assert files
    for p in files:
        with open(p, "r+b") as f:
            f.truncate(p.stat().st_size // 2)


def test_a_damaged_latest_step_falls_back_to_the_previous_one(tmp_path):
    states = [init_state()]
    for _ in range(3):
        states.append(train_step(states[-1]))
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:
        for s in (1, 2, 3):
            ckpt.save(s, states[s])
    _damage(tmp_path / "3")
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:
        with pytest.warns(CheckpointWarning, match="step 3 .* cannot be restored.*resuming from step 2"):
            step, state = ckpt.latest(template=init_state())
        assert step == 2
        assert_same_tree(states[2], state)
        assert ckpt.steps() == [1, 2] and len(list((tmp_path / ".corrupt").iterdir())) == 1
        ckpt.save(3, train_step(state), wait=True)  # training goes on and saves step 3 again
        step, state = ckpt.latest(template=init_state())
    assert step == 3
    assert_same_tree(states[3], state)


def test_a_silently_flipped_byte_is_caught_by_the_checksum_and_falls_back(tmp_path):
    """Random bits do not compress, so Orbax stores them raw: one flipped bit restores without an error and
    with one value changed unless the content checksum recorded at save time catches it."""
    w = np.random.default_rng(0).integers(0, 2**32, 4096, dtype=np.uint32)
    tree = {"w": jnp.asarray(w), "n": jnp.int32(3)}
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:
        ckpt.save(1, tree)
        ckpt.save(2, tree, wait=True)
    flipped = 0
    for f in (tmp_path / "2").rglob("*"):
        data = bytearray(f.read_bytes()) if f.is_file() else b""
        i = data.find(w[100:104].tobytes())
        if i >= 0:
            data[i] ^= 1
            f.write_bytes(bytes(data))
            flipped += 1
    assert flipped == 1
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:
        with pytest.warns(CheckpointWarning, match="checksum"):
            step, restored = ckpt.latest(template=tree)
    assert step == 1
    np.testing.assert_array_equal(np.asarray(restored["w"]), w)


def test_nothing_restorable_raises_and_moves_nothing(tmp_path):
    with Checkpointer(tmp_path, TrainConfig()) as ckpt:
        ckpt.save(1, init_state())
        ckpt.save(2, init_state())
        with pytest.raises(CheckpointError, match="no checkpoint .* can be restored"):
            ckpt.latest(template={"something": jnp.zeros(4)})  # a wrong template
        assert ckpt.steps() == [1, 2]


def test_a_save_killed_midway_leaves_the_previous_step(tmp_path):
    """SIGKILL a process while it writes a large step: the next run restores the last complete one."""
    script = textwrap.dedent(f"""
        import sys, jax, jax.numpy as jnp, numpy as np
        sys.path.insert(0, {str(ROOT)!r})
        from jaxgames.checkpoint import Checkpointer
        ckpt = Checkpointer({str(tmp_path)!r}, {{"learning_rate": 0.1}})
        ckpt.save(1, {{"w": jnp.arange(4.0)}}, wait=True)
        big = np.random.default_rng(0).standard_normal((16, 1 << 20)).astype(np.float32)  # 64 MiB
        print("saving", flush=True)
        ckpt.save(2, {{"w": big}}, wait=True)
        print("saved", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().strip() == "saving"
        deadline = time.time() + 60
        while not list(tmp_path.glob("2.orbax-checkpoint-tmp*")) and time.time() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert not (tmp_path / "2").exists(), "the save finished before the kill; use a larger array"
    with Checkpointer(tmp_path, {"learning_rate": 0.1}) as ckpt:  # the lock died with the process
        step, tree = ckpt.latest()
        assert step == 1 and ckpt.steps() == [1]
        np.testing.assert_array_equal(tree["w"], np.arange(4.0))
    assert not list(tmp_path.glob("*.orbax-checkpoint-tmp*"))  # the partial step was cleaned up
