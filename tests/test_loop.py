"""The training spine (`jaxgames.learners.loop`) on a toy learner whose every number is known by hand.

The toy learner's state is ``(x, key, iteration)``; each update draws
``u ~ U(0, 1)`` from the state's key and sets ``x <- x + u`` with
``loss = x``. Resume must give the very same ``x``; the budget, the
non-finite stop and the evaluation hooks are read off counters.
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from jaxgames import checks
from jaxgames.experiment import ConfigMismatch
from jaxgames.learners import loop


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    scale: float = 1.0
    poison_at: int = -1  # the loss becomes NaN at this iteration


@struct.dataclass
class ToyState:
    x: jax.Array
    key: jax.Array
    iteration: jax.Array
    best_x: jax.Array


class Toy:
    name = "toy"

    def __init__(self, config: ToyConfig):
        self.config = config
        self.updates = 0

    def init(self, key):
        return ToyState(jnp.float32(0), jax.random.key_data(key), jnp.int32(0), jnp.float32(-1))

    def update(self, state):
        self.updates += 1
        key, sub = jax.random.split(jax.random.wrap_key_data(state.key))
        x = state.x + self.config.scale * jax.random.uniform(sub)
        it = state.iteration + 1
        loss = jnp.where(it == self.config.poison_at, jnp.nan, x)
        return (ToyState(x, jax.random.key_data(key), it, state.best_x),
                {"loss": loss, "trace": jnp.arange(3)})

    def iteration(self, state):
        return int(state.iteration)

    def promote(self, state):
        return state.replace(best_x=state.x)


def _expected_x(seed: int, n: int) -> float:
    """x after n updates, drawn in plain Python from the same key stream."""
    key, x = jax.random.key(seed), 0.0
    for _ in range(n):
        key, sub = jax.random.split(key)
        x += float(jax.random.uniform(sub))
    return x


def test_train_runs_and_records_history():
    res = loop.train(Toy(ToyConfig()), num_iterations=3, key=jax.random.key(1))
    assert [r["iteration"] for r in res.history] == [1, 2, 3]
    assert "trace" not in res.history[0]  # arrays reach the callback only
    assert res.history[-1]["loss"] == pytest.approx(_expected_x(1, 3), rel=1e-6)
    assert res.resumed_from == 0 and not res.stopped_by_budget


def test_resume_equals_not_stopping(tmp_path):
    straight = loop.train(Toy(ToyConfig()), num_iterations=4, key=jax.random.key(2), checkpoint_dir=tmp_path / "a")
    loop.train(Toy(ToyConfig()), num_iterations=2, key=jax.random.key(2), checkpoint_dir=tmp_path / "b")
    toy = Toy(ToyConfig())
    resumed = loop.train(toy, num_iterations=4, key=jax.random.key(2), checkpoint_dir=tmp_path / "b")
    assert toy.updates == 2 and resumed.resumed_from == 2
    assert float(resumed.state.x) == float(straight.state.x)
    assert [r["loss"] for r in resumed.history] == [r["loss"] for r in straight.history]
    stored = json.loads((tmp_path / "b" / loop.HISTORY_NAME).read_text())
    assert len(stored["history"]) == 4


def test_other_run_in_folder_is_refused(tmp_path):
    loop.train(Toy(ToyConfig()), num_iterations=1, key=jax.random.key(2), checkpoint_dir=tmp_path)
    with pytest.raises(ConfigMismatch):
        loop.train(Toy(ToyConfig(scale=2.0)), num_iterations=2, key=jax.random.key(2), checkpoint_dir=tmp_path)
    with pytest.raises(ConfigMismatch):
        loop.train(Toy(ToyConfig()), num_iterations=2, key=jax.random.key(3), checkpoint_dir=tmp_path)


def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
    toy = Toy(ToyConfig(poison_at=3))
    with pytest.raises(loop.NonFiniteLoss, match="iteration 3.*last good checkpoint is step 2"):
        loop.train(toy, num_iterations=5, key=jax.random.key(0), checkpoint_dir=tmp_path)
    steps = sorted(int(p.name) for p in tmp_path.iterdir() if p.name.isdigit())
    assert steps == [1, 2]


def test_budget_stops_before_overrunning(tmp_path):
    class Slow(Toy):
        def update(self, state):
            import time

            time.sleep(0.3)
            return super().update(state)

    warm = Toy(ToyConfig())  # the eager ops' one-time compiles (0.4 s on a GPU) would count in the first update
    jax.block_until_ready(warm.update(warm.init(jax.random.key(0))))
    res = loop.train(Slow(ToyConfig()), num_iterations=100, key=jax.random.key(0), budget_minutes=1.0 / 60,
                     checkpoint_dir=tmp_path, checkpoint_every=50)
    # 1 s budget, 0.3 s per update: the 4th would end past it, so 3 run (and are checkpointed at the stop)
    assert res.stopped_by_budget and len(res.history) == 3
    assert (tmp_path / "3").exists()


def test_evaluation_hooks_promote_and_are_not_repeated_on_resume(tmp_path):
    calls = []

    def gate(state):
        calls.append(int(state.iteration))
        return {"score": float(state.iteration) / 10}, int(state.iteration) == 2

    hook = loop.Evaluation(gate, every=2, at_start=True, name="gate")
    res = loop.train(Toy(ToyConfig()), num_iterations=3, key=jax.random.key(4), evaluations=[hook],
                     checkpoint_dir=tmp_path)
    assert calls == [0, 2]
    assert [(e["iteration"], e["gate/score"], e["promoted"]) for e in res.evaluations] == [(0, 0.0, False), (2, 0.2, True)]
    assert res.history[1]["gate/score"] == 0.2
    assert float(res.state.best_x) == pytest.approx(_expected_x(4, 2), rel=1e-6)
    res2 = loop.train(Toy(ToyConfig()), num_iterations=4, key=jax.random.key(4), evaluations=[hook],
                      checkpoint_dir=tmp_path)
    assert calls == [0, 2, 4] and len(res2.evaluations) == 3


def test_callback_sees_arrays_before_checkpoint(tmp_path):
    seen = []
    loop.train(Toy(ToyConfig()), num_iterations=2, key=jax.random.key(0), checkpoint_dir=tmp_path,
               callback=lambda it, m, r: seen.append((it, np.asarray(m["trace"]).tolist(), (tmp_path / str(it)).exists())))
    assert seen == [(1, [0, 1, 2], False), (2, [0, 1, 2], False)]


def test_update_of_several_iterations_keeps_the_cadences(tmp_path):
    """An update that does 3 iterations (a chunk, as DDPG's): checkpoints and evaluations every 4
    iterations fall due at each update that passes a multiple of 4 (6, and 9 = 8 passed and the end)."""
    class Chunk(Toy):
        def update(self, state):
            for _ in range(3):
                state, metrics = super().update(state)
            return state, metrics

    calls = []
    hook = loop.Evaluation(lambda s: (calls.append(int(s.iteration)) or {}, False), every=4)
    res = loop.train(Chunk(ToyConfig()), num_iterations=9, key=jax.random.key(5), checkpoint_dir=tmp_path,
                     checkpoint_every=4, max_to_keep=5, evaluations=[hook])
    assert [r["iteration"] for r in res.history] == [3, 6, 9] and calls == [6, 9]
    assert sorted(int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()) == [6, 9]
    assert float(res.state.x) == pytest.approx(_expected_x(5, 9), rel=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    ({"num_iterations": -1}, "num_iterations"),
    ({"num_iterations": 1, "budget_minutes": float("inf")}, "budget_minutes"),
    ({"num_iterations": 1, "budget_minutes": 0}, "budget_minutes"),
    ({"num_iterations": 1, "checkpoint_every": 0}, "checkpoint_every"),
])
def test_bad_arguments_are_refused(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        loop.train(Toy(ToyConfig()), key=jax.random.key(0), checkpoint_dir=tmp_path / "x", **kwargs)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0.0, True])
def test_positive_float_refuses_non_finite_and_bools(value):
    with pytest.raises((ValueError, TypeError)):
        checks.positive_float("learning_rate", value)
