"""Donated carried state: the learners' compiled calls consume their buffers and give the same bits.

For each learner: one compiled self-play / update call with donation deletes
the arrays it was given (``is_deleted()``) and returns exactly what the call
without donation returns on the same state; and a tiny run on the training
spine (`jaxgames.learners.loop.train`), with checkpoints, an evaluation hook
that promotes every iteration (the best network then shares the current one's
arrays) and a resume, ends with the state of the run without donation.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxgames.learners import alphazero as az
from jaxgames.learners import ddpg as D
from jaxgames.learners import loop
from jaxgames.learners import q_snake as qs
from jaxgames.networks.dots_and_boxes import NetworkConfig

PROMOTE = loop.Evaluation(lambda state: ({}, True), every=1, name="gate")  # promotes after every iteration


def _leaves(tree) -> list:
    return [jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x
            for x in jax.tree.leaves(tree)]


def _deleted(tree) -> list[bool]:
    return [x.is_deleted() for x in jax.tree.leaves(tree)]


def _assert_same_bits(a, b):
    x, y = _leaves(a), _leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b) and len(x) == len(y)
    for u, v in zip(x, y):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def _strip(history):
    return [{k: v for k, v in row.items() if "second" not in k} for row in history]


def _spine(make, num_iterations, tmp_path, evaluations=(PROMOTE,)):
    """Donating run (checkpointed, stopped half way and resumed) against a straight run without donation."""
    key = jax.random.key(3)
    kept = loop.train(make(False), num_iterations=num_iterations, key=key, evaluations=evaluations)
    half = loop.train(make(True), num_iterations=num_iterations // 2, key=key, checkpoint_dir=tmp_path,
                      evaluations=evaluations)
    assert not any(_deleted(half.state))
    given = loop.train(make(True), num_iterations=num_iterations, key=key, checkpoint_dir=tmp_path,
                       evaluations=evaluations)
    assert given.resumed_from == num_iterations // 2
    assert not any(_deleted(given.state))  # the state the spine returns is whole
    _assert_same_bits(kept.state, given.state)
    assert _strip(kept.history) == _strip(given.history)
    assert kept.evaluations == given.evaluations
    return kept, given


# ----------------------------------------------------------------------------- AlphaZero
AZ = az.AlphaZeroConfig(board_sizes=((1, 2),), network=NetworkConfig(channels=4, num_blocks=1, value_channels=2,
                                                                     value_hidden=4),
                        num_envs=4, num_simulations=2, max_num_considered_actions=2, buffer_capacity=32,
                        batch_size=4, updates_per_iteration=2)


def test_alphazero_donates_buffers_games_and_optimizer_state():
    state = az.init_state(AZ, jax.random.key(0))
    kept, m_kept = az.train_iteration(AZ, state)
    assert not any(_deleted(state))  # the default keeps its input
    given, m_given = az.train_iteration(AZ, state, donate=True)
    for name in ("buffers", "env_states", "opt_state"):
        assert all(_deleted(getattr(state, name))), name
    for name in ("params", "best_params", "key", "iteration"):
        assert not any(_deleted(getattr(state, name))), name  # never donated: best_params may share params' arrays
    _assert_same_bits(kept, given)
    assert {k: v for k, v in m_kept.items() if "second" not in k} == {k: v for k, v in m_given.items()
                                                                          if "second" not in k}
    # the compiled self-play alone: the buffer and games passed in are deleted, the parameters are not
    fns = az.compiled(AZ, None, True)
    buffer, games = given.buffers[0], given.env_states[0]
    fns.selfplay[0](given.params, games, buffer, jax.random.key(1))
    assert all(_deleted(buffer)) and all(_deleted(games)) and not any(_deleted(given.params))


def test_alphazero_spine_with_promotion_and_resume(tmp_path):
    assert az.AlphaZeroLearner(AZ).donate  # the spine's learner donates by default
    _spine(lambda donate: az.AlphaZeroLearner(AZ, donate=donate), 4, tmp_path)


# ----------------------------------------------------------------------------- Q-snake
QS = qs.QSnakeConfig(board_size=7, num_snakes=4, max_turns=20, num_turns=8, features=(4,), num_games=4, batch_size=8,
                     train_steps=2, pit_team_games=8, pit_solo_games=0, pit_max_turns=10, eval_every=0,
                     walk_generations=1)


def test_q_snake_donates_the_trained_networks_and_keeps_the_given_state():
    learner, plain = qs.QSnakeLearner(QS), qs.QSnakeLearner(QS, donate=False)
    assert learner.donate and not plain.donate and learner == plain  # one config: the same traces
    state = learner.init(jax.random.key(0))  # candidate, best, reference and average share their arrays
    kept, m_kept = plain.update(state)
    given, m_given = learner.update(state)
    assert not any(_deleted(state))  # update copies what its steps consume: the state passed in stays valid
    _assert_same_bits(kept, given)
    assert _strip([m_kept]) == _strip([m_given])
    # one donated step: the trained fields passed in are deleted, the rest of the state is not
    data, keys, _ = learner.collect(given)
    trained = jax.tree.map(lambda x: x.copy(), {name: getattr(given, name) for name in qs.TRAINED})
    rest = given.replace(**{name: None for name in qs.TRAINED})
    out, _ = learner.train_step_donated(trained, rest, data, keys[0])
    read = ("params", "batch_stats", "opt_state")  # without ema_decay the step never reads the old average
    assert all(_deleted({name: trained[name] for name in read}))
    assert not any(_deleted(rest)) and not any(_deleted(out))
    step, _ = plain.train_step(given, data, keys[0])
    _assert_same_bits({name: getattr(step, name) for name in qs.TRAINED}, out)


def test_q_snake_spine_with_promotion_and_resume(tmp_path):
    kept, given = _spine(lambda donate: qs.QSnakeLearner(QS, donate=donate), 2, tmp_path)
    # the gate promoted after both generations, one before the stop and one after the resume
    assert [e["promoted"] for e in given.evaluations] == [True, True] and len(given.history) == 2


# ----------------------------------------------------------------------------- DDPG
DD = D.DDPGConfig(variants=("val_branch_actions_multiply", "actions_only"), num_seeds=1, num_envs=3, num_iterations=4,
                  chunk=2, buffer_size=16, batch_size=3, learning_starts=3, min_depth=1, max_depth=1, advance_wins=2, window=4,
                  conv_features=(4,), card_features=4, hidden=(8,), norm="layer")


def test_ddpg_donates_the_whole_state():
    learner = D.DDPGLearner(DD)
    state = learner.init(jax.random.key(0))
    kept, r_kept = learner.run(state, 2)
    assert not any(_deleted(state))
    given, r_given = learner.run(state, 2, donate=True)
    assert all(_deleted(state.buffer)) and all(_deleted(state))
    _assert_same_bits(kept, given)
    _assert_same_bits(r_kept, r_given)
    assert np.isfinite(r_given.critic_loss[-1]).all()  # the chunk trained (learning_starts reached)


def test_ddpg_spine_resume(tmp_path):
    assert D.DDPGLearner(DD).donate and D.DDPGLearner(DD) == D.DDPGLearner(DD, donate=False)
    _spine(lambda donate: D.DDPGLearner(DD, donate=donate), 4, tmp_path, evaluations=())
