"""The DDPG study of Dasgupta and Chong's Onitama report (2021, sections 4-7): networks, losses,
curriculum, learner, resume on the training spine, agent, and the experiment end to end.

Expected values are derived by hand here (loss values and gradients from the
formulas, the TD target, actor loss and soft update recomputed in numpy from
the networks' outputs, the curriculum's advance points from the rule "60 of
the last 100 games since the last advance"), or from an independent
plain-Python reference (`_reference_depths`), never copied from the code under
test. Every network and run is tiny so the file runs in about a minute on 2 cores.
"""

from __future__ import annotations

import csv
import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.agents.ddpg import DDPGAgent, load_agent, save_weights
from jaxgames.evaluation import play_match
from jaxgames.experiment import ConfigMismatch, parse_config
from jaxgames.games.onitama import PAPER_CARDS
from jaxgames.learners import ddpg as L
from jaxgames.learners import loop
from jaxgames.networks.ddpg import VARIANTS, Actor, Critic, hand_of_god, init_actor, init_critic
from tests.experiment_helpers import (ROOT, assert_help_and_one_line_errors, assert_refused_before_writing,
                                      assert_resume_rules, load_experiment)

ENV = jaxgames.make("onitama", action_space="paper", deck=PAPER_CARDS)
TINY = dict(conv_features=(4,), card_features=4, hidden=(8,), norm="layer")
OPENINGS = jax.jit(jax.vmap(ENV.init))(jax.random.split(jax.random.key(9), 200))  # 200 deals of the five cards
OBS = np.asarray(OPENINGS.observation[:3])  # [3, 260]


# ----------------------------------------------------------------------------- networks
@pytest.mark.parametrize("variant", VARIANTS)
def test_actor_variant_shapes_and_layers(variant):
    actor = Actor(variant, **TINY)
    params = jax.eval_shape(lambda: init_actor(jax.random.key(0), actor))["params"]
    out = jax.eval_shape(lambda p, x: actor.apply({"params": p}, x), params, jax.ShapeDtypeStruct((2, 3, 260), jnp.float32))
    assert out.policy.shape == (2, 3, 40) and out.actions.shape == (2, 3, 40)
    single = jax.eval_shape(lambda p, x: actor.apply({"params": p}, x), params, jax.ShapeDtypeStruct((260,), jnp.float32))
    assert single.policy.shape == (40,)
    blocks = sorted(k for k in params if k.startswith("preprocess"))
    if variant == "actions_only":
        assert out.validity is None and "validity" not in params
    else:
        assert out.validity.shape == (2, 3, 40) and "validity" in params
    assert blocks == (["preprocess_actions", "preprocess_validity"] if variant == "dual" else ["preprocess"])
    # which layer feeds which (the report's figures 5.5-5.6): the second layer of a linear variant reads 40 inputs
    if variant.startswith("val_after_actions"):
        assert params["validity"]["kernel"].shape == (40, 40) and params["actions"]["kernel"].shape == (8, 40)
    if variant.startswith("actions_after_val"):
        assert params["actions"]["kernel"].shape == (40, 40) and params["validity"]["kernel"].shape == (8, 40)
    if variant.startswith("val_branch_actions"):
        assert params["actions"]["kernel"].shape == params["validity"]["kernel"].shape == (8, 40)


def test_actor_values_multiply_and_plain():
    for variant in ("val_branch_actions_multiply", "dual", "actions_only"):
        actor = Actor(variant, **TINY)
        out = jax.jit(actor.apply)(init_actor(jax.random.key(1), actor), OBS)
        policy, actions = np.asarray(out.policy, np.float64), np.asarray(out.actions, np.float64)
        np.testing.assert_allclose(policy.sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(actions.sum(-1), 1.0, rtol=1e-5)
        if variant == "actions_only":
            np.testing.assert_allclose(policy, actions)
        else:  # the renormalised product of section 5.4, recomputed here
            v = np.asarray(out.validity, np.float64)
            assert np.all((v > 0) & (v < 1))
            product = actions * v
            np.testing.assert_allclose(policy, product / product.sum(-1, keepdims=True), rtol=1e-5)


def test_critic_shape_and_vmap():
    critic = Critic(**TINY)
    params = init_critic(jax.random.key(0), critic)

    @jax.jit
    def both(p, obs):  # the batched call, and one example vmapped
        return critic.apply(p, obs, jnp.full((3, 40), 1 / 40)), jax.vmap(lambda o: critic.apply(p, o, jnp.full((40,), 1 / 40)))(obs)

    q, qv = both(params, OBS)
    assert q.shape == (3,) and q.dtype == jnp.float32
    np.testing.assert_allclose(qv, q, rtol=1e-5, atol=1e-6)
    # the action enters: a different action changes Q (40 inputs, not the report's misprinted 4)
    assert params["params"]["preprocess"]["Dense_1"]["kernel"].shape[0] == 40


# ----------------------------------------------------------------------------- losses by hand
def test_validity_losses_by_hand():
    legal = jnp.arange(40) < 20
    half = jnp.full((40,), 0.5)
    assert float(L.validity_loss(half, legal, "mse")) == pytest.approx(0.25)
    assert float(L.validity_loss(half, legal, "bce")) == pytest.approx(math.log(2.0), rel=1e-6)
    v = jnp.where(legal, 0.9, 0.2)  # legal entries predicted 0.9, illegal 0.2
    assert float(L.validity_loss(v, legal, "mse")) == pytest.approx((20 * 0.01 + 20 * 0.04) / 40, rel=1e-5)
    assert float(L.validity_loss(v, legal, "bce")) == pytest.approx(-(math.log(0.9) + math.log(0.8)) / 2, rel=1e-5)
    # gradients with respect to the prediction (the report's section 7.2, corrected): MSE 2 (v - m) / N,
    # BCE (v - m) / (v (1 - v) N), N = 40 outputs
    g_mse = jax.grad(lambda x: L.validity_loss(x, legal, "mse"))(v)
    g_bce = jax.grad(lambda x: L.validity_loss(x, legal, "bce"))(v)
    assert float(g_mse[0]) == pytest.approx(2 * (0.9 - 1) / 40, rel=1e-4)
    assert float(g_mse[-1]) == pytest.approx(2 * 0.2 / 40, rel=1e-4)
    assert float(g_bce[0]) == pytest.approx((0.9 - 1) / (0.9 * 0.1 * 40), rel=1e-4)
    assert float(g_bce[-1]) == pytest.approx(0.2 / (0.2 * 0.8 * 40), rel=1e-4)
    # through the sigmoid, at a saturated wrong output z = -10 for a legal move: BCE's logit gradient
    # stays (v - 1) / N, MSE's 2 (v - 1) v (1 - v) / N vanishes
    z = jnp.where(legal, -10.0, 0.0)
    s = 1 / (1 + math.exp(10.0))
    gz_bce = jax.grad(lambda x: L.validity_loss(jax.nn.sigmoid(x), legal, "bce"))(z)
    gz_mse = jax.grad(lambda x: L.validity_loss(jax.nn.sigmoid(x), legal, "mse"))(z)
    assert float(gz_bce[0]) == pytest.approx((s - 1) / 40, rel=1e-4)
    assert float(gz_mse[0]) == pytest.approx(2 * (s - 1) * s * (1 - s) / 40, rel=1e-4)
    with pytest.raises(ValueError, match="kind"):
        L.validity_loss(v, legal, "hinge")


# ----------------------------------------------------------------------------- curriculum
def _reference_depths(wins, *, advance=60, window=100, start=1, max_depth=3):
    """Plain Python: the depth after each game under the report's 5.6 (window emptied on each advance)."""
    depth, recent, out = start, [], []
    for w in wins:
        recent = (recent + [bool(w)])[-window:]
        if sum(recent) >= advance and depth < max_depth:
            depth, recent = depth + 1, []
        out.append(depth)
    return out


def _depths(wins, **kw):
    cur = L.init_curriculum(1, 100)

    def body(c, w):
        c = L.curriculum_step(c, jnp.bool_(True), w, advance_wins=60, max_depth=3)
        return c, c.depth
    return np.asarray(jax.jit(lambda ws: jax.lax.scan(body, cur, ws)[1])(jnp.asarray(wins, bool)))


def test_curriculum_closed_form():
    # 60 straight wins: the 60th game (index 59) advances
    d = _depths([1] * 60 + [0] * 5)
    assert list(d[:59]) == [1] * 59 and list(d[59:]) == [2] * 6
    # 40 losses then wins: at game 100 the window holds exactly 60 wins
    d = _depths([0] * 40 + [1] * 60)
    assert d[98] == 1 and d[99] == 2
    # 41 losses then wins: game 100's window has 59 wins; game 101's (games 2-101) has 60
    d = _depths([0] * 41 + [1] * 61)
    assert d[99] == 1 and d[100] == 2
    # alternating: 50 of every 100, never advances
    assert set(_depths([1, 0] * 150).tolist()) == {1}
    # after an advance the window is empty: 59 more wins are not enough, the 60th is
    d = _depths([1] * 60 + [1] * 59 + [1])
    assert d[118] == 2 and d[119] == 3
    # capped at max_depth
    assert _depths([1] * 400)[-1] == 3


def test_curriculum_random_sequences_match_reference_under_vmap():
    rng = np.random.default_rng(0)
    seqs = (rng.random((6, 400)) < rng.uniform(0.45, 0.75, (6, 1))).astype(bool)

    def one(ws):
        def body(c, w):
            c = L.curriculum_step(c, jnp.bool_(True), w, advance_wins=60, max_depth=3)
            return c, c.depth
        return jax.lax.scan(body, L.init_curriculum(1, 100), ws)[1]

    got = np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(seqs)))
    for row, seq in zip(got, seqs):
        assert row.tolist() == _reference_depths(seq.tolist())
    assert got.max() > 1  # the sequences did exercise an advance


def test_curriculum_ignores_rows_without_a_game():
    cur = L.init_curriculum(1, 100)
    for _ in range(80):
        cur = L.curriculum_step(cur, jnp.bool_(False), jnp.bool_(True), advance_wins=60, max_depth=3)
    assert int(cur.depth) == 1 and int(cur.games) == 0 and not bool(cur.results.any())


# ----------------------------------------------------------------------------- hand of god
def test_hand_of_god_never_illegal_and_uniform_fallback():
    legal = jnp.zeros(40, bool).at[jnp.array([3, 7, 11, 30])].set(True)
    policy = jnp.zeros(40).at[0].set(0.9).at[7].set(0.1)  # most mass on an illegal move
    keys = jax.random.split(jax.random.key(0), 2000)
    draws = np.asarray(jax.jit(jax.vmap(lambda k: hand_of_god(k, policy, legal)))(keys))
    assert set(draws.tolist()) == {7}  # the only legal action with mass
    zero = jnp.zeros(40).at[0].set(1.0)  # no mass on any legal move: uniform over the 4
    draws = np.asarray(jax.vmap(lambda k: hand_of_god(k, zero, legal))(keys))
    counts = np.bincount(draws, minlength=40)
    assert set(np.flatnonzero(counts)) == {3, 7, 11, 30}
    assert counts[[3, 7, 11, 30]].min() > 400  # 500 expected each; 400 is > 5 standard deviations below


# ----------------------------------------------------------------------------- bad settings
@pytest.mark.parametrize(
    "kw, err, match",
    [
        (dict(variants=("val_branch",)), ValueError, "unknown variant"),
        (dict(variants=("dual", "dual")), ValueError, "repeats"),
        (dict(variants=()), ValueError, "non-empty"),
        (dict(batch_size=64, learning_starts=32), ValueError, "learning_starts"),
        (dict(min_depth=2, max_depth=1), ValueError, "min_depth"),
        (dict(max_depth=4), ValueError, "max_depth"),
        (dict(validity_loss="l1"), ValueError, "validity_loss"),
        (dict(critic_action="argmax"), ValueError, "critic_action"),
        (dict(norm="batch"), ValueError, "norm"),
        (dict(conv_features=(4, 4, 4)), ValueError, "conv_features"),
        (dict(advance_wins=101), ValueError, "advance_wins"),
        (dict(tau=0.0), ValueError, "tau"),
        (dict(tau=float("nan")), ValueError, "tau"),
        (dict(gamma=float("inf")), ValueError, "gamma"),
        (dict(actor_learning_rate=float("inf")), ValueError, "actor_learning_rate"),
        (dict(critic_learning_rate=float("nan")), ValueError, "critic_learning_rate"),
        (dict(validity_weight=float("inf")), ValueError, "validity_weight"),
        (dict(buffer_size=64, batch_size=64, learning_starts=128), ValueError, "learning_starts"),
        (dict(chunk=0), ValueError, "chunk"),
        (dict(num_envs="8"), TypeError, "num_envs"),
        (dict(deck=("Dragon", "Elephant", "Goose", "Rooster", "Unicorn")), ValueError, "Unicorn"),
    ],
)
def test_bad_config(kw, err, match):
    with pytest.raises(err, match=match):
        L.DDPGConfig(**kw)


def test_learner_needs_a_config():
    with pytest.raises(TypeError, match="DDPGConfig"):
        L.DDPGLearner({"num_envs": 4})


# ----------------------------------------------------------------------------- the learner, tiny
CFG = L.DDPGConfig(variants=("val_branch_actions_multiply", "actions_only"), num_seeds=2, num_envs=3,
                   num_iterations=6, chunk=3, buffer_size=32, batch_size=4, learning_starts=6, min_depth=1,
                   max_depth=2, advance_wins=2, window=4, **TINY)


def _train(config, num_iterations, **kw):
    """`loop.train` of ``config`` with key 7; returns ``(result, metrics of this call's chunks)``."""
    records = []
    result = loop.train(L.DDPGLearner(config), num_iterations=num_iterations, key=jax.random.key(7),
                        callback=lambda it, m, r: records.append(jax.device_get(m["records"])), **kw)
    return result, L.Metrics(*(np.concatenate(x) for x in zip(*records)))


@pytest.fixture(scope="module")
def full_driver_run():
    """The uninterrupted 6-iteration run on the spine, in chunks of 3 (no checkpoints)."""
    return _train(CFG, 6)


@pytest.fixture(scope="module")
def full_run(full_driver_run):
    result, metrics = full_driver_run
    return result.state, metrics


def test_run_records_are_sane(full_run):
    state, m = full_run
    R, E = CFG.num_runs, CFG.num_envs
    assert m.valid_rate.shape == (6, R) and m.ended.shape == (6, R, E)
    assert np.all(m.moves[0] == 0)  # the first iteration deals the games; nobody has moved yet
    assert np.all(m.moves[1:] <= E) and m.moves[1:].sum() > 0
    vr = m.valid_rate[1:]
    assert np.all((vr[np.isfinite(vr)] >= 0) & (vr[np.isfinite(vr)] <= 1))
    assert set(np.unique(m.outcome).tolist()) <= {-1, 0, 1}
    assert np.all(m.outcome[~m.ended] == 0)
    # updates start once learning_starts (6) transitions are stored: rows written E = 3 per iteration
    assert np.all(np.isnan(m.actor_loss[:1])) and np.all(np.isfinite(m.actor_loss[2:]))
    assert np.all(m.validity_loss[2:, CFG.num_seeds:] == 0)  # actions_only has no validity loss
    assert np.all((m.depth >= 1) & (m.depth <= 2))
    assert int(state.iteration) == 6 and int(state.buffer_count) == 18
    # the run's two seeds of a variant differ (independent keys)
    a = jax.tree.leaves(state.actor[0])[0]
    assert not np.allclose(a[0], a[1])


def test_make_train_traces_under_jit_and_vmap():
    """``make_train(config)(key)`` is one pure function: it traces under vmap over keys (shapes only, no compile)."""
    train = L.make_train(CFG)
    state, m = jax.eval_shape(jax.vmap(train), jax.random.split(jax.random.key(0), 2))
    R, E = CFG.num_runs, CFG.num_envs
    assert m.valid_rate.shape == (2, CFG.num_iterations, R) and m.outcome.shape == (2, CFG.num_iterations, R, E)
    assert state.curriculum.depth.shape == (2, R) and state.env_state.board.pieces.shape == (2, R, E, 2, 5)
    assert jax.tree.leaves(state.actor[0])[0].shape[:2] == (2, CFG.num_seeds)


def test_history_rows_summarise_each_chunk(full_driver_run):
    result, m = full_driver_run
    assert [r["iteration"] for r in result.history] == [3, 6]  # one row per update of chunk = 3 iterations
    first, second = result.history
    # iteration 1 stores nothing (the games are dealt), so the first update runs at iteration 2 (6 rows stored)
    assert first["actor_loss"] == pytest.approx(float(np.mean(m.actor_loss[1:3])), rel=1e-6)
    assert second["critic_loss"] == pytest.approx(float(np.mean(m.critic_loss[3:6])), rel=1e-6)
    assert first["games"] + second["games"] == int(m.ended.sum())
    valid = np.nansum(m.valid_rate[3:] * m.moves[3:]) / m.moves[3:].sum()
    assert second["valid_rate"] == pytest.approx(float(valid), rel=1e-6)
    # a chunk before learning_starts has no loss to report (None, not a NaN that would stop the run)
    early = L.chunk_summary(CFG, jax.tree.map(lambda x: x[:1], m), 0)
    assert early["actor_loss"] is None and early["critic_loss"] is None and early["valid_rate"] is None


def test_resume_equals_uninterrupted(full_driver_run, tmp_path):
    full, full_metrics = full_driver_run
    folder = tmp_path / "ckpt"
    stopped, _ = _train(CFG, 3, checkpoint_dir=folder)  # "stopped" after 3 iterations
    assert int(stopped.state.iteration) == 3
    resumed, metrics = _train(CFG, 6, checkpoint_dir=folder)
    assert resumed.resumed_from == 3
    a, b = jax.tree.leaves(full.state), jax.tree.leaves(resumed.state)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for name in L.Metrics._fields:
        np.testing.assert_array_equal(getattr(full_metrics, name)[3:], getattr(metrics, name))
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert strip(resumed.history) == strip(full.history)
    # a folder of another configuration is refused
    with pytest.raises(ConfigMismatch):
        _train(L.DDPGConfig(**{**CFG.__dict__, "gamma": 0.9}), 6, checkpoint_dir=folder)


# ----------------------------------------------------------------------------- one update by hand
HAND = L.DDPGConfig(variants=("actions_only", "val_branch_actions"), num_envs=2, buffer_size=8, batch_size=4,
                    learning_starts=4, gamma=0.9, tau=0.25, validity_weight=0.5, actor_learning_rate=1e-4,
                    critic_learning_rate=1e-4, **TINY)


def _hand_batch() -> L.Buffer:
    """Four fixed transitions: a win and a loss that end the game, two that go on; the last row unfilled."""
    obs = np.asarray(OPENINGS.observation[:4]) > 0.5
    legal = np.asarray(OPENINGS.legal_action_mask[:4])
    action = legal / legal.sum(-1, keepdims=True)  # a policy as played: uniform over the legal moves
    return L.Buffer(observation=obs, action=action.astype(np.float32),
                    reward=np.array([1.0, -1.0, 0.0, 0.0], np.float32),
                    next_observation=np.asarray(OPENINGS.observation[4:8]) > 0.5,
                    done=np.array([True, True, False, False]), legal=legal,
                    filled=np.array([True, True, True, False]))


def _hand_update(i: int):
    """One `update_run` of variant ``i`` on `_hand_batch`, targets distinct from the online networks."""
    learner = L.DDPGLearner(HAND)
    actor_net, critic_net = learner.actors[i], learner.critic
    actor, actor_target = init_actor(jax.random.key(1), actor_net), init_actor(jax.random.key(2), actor_net)
    critic, critic_target = init_critic(jax.random.key(3), critic_net), init_critic(jax.random.key(4), critic_net)
    before = (actor, actor_target, critic, critic_target)
    out = jax.jit(lambda *a: learner.update_run(i, *a))(
        actor, actor_target, critic, critic_target, learner.actor_tx.init(actor), learner.critic_tx.init(critic),
        _hand_batch())
    return learner, before, out


def _weighted_mean(x, w):
    return float(np.sum(w * x) / np.sum(w))


@pytest.mark.parametrize("i", [0, 1])
def test_update_by_hand(i):
    """TD target r + gamma (1 - done) Q'(s', mu'(s')), critic MSE, actor -Q (+ validity), soft update tau."""
    learner, (actor, actor_target, critic, critic_target), out = _hand_update(i)
    new_actor, new_actor_target, new_critic, new_critic_target, _, _, losses = out
    actor_net, critic_net = learner.actors[i], learner.critic
    b = _hand_batch()
    obs, next_obs = b.observation.astype(np.float32), b.next_observation.astype(np.float32)
    w = b.filled.astype(np.float64)
    f64 = lambda x: np.asarray(x, np.float64)
    q_next = f64(critic_net.apply(critic_target, next_obs, actor_net.apply(actor_target, next_obs).policy))
    y = f64(b.reward) + 0.9 * (1.0 - b.done) * q_next
    assert y[0] == pytest.approx(1.0) and y[1] == pytest.approx(-1.0)  # a game's end: no bootstrap
    q = f64(critic_net.apply(critic, obs, b.action))
    assert float(losses.critic_loss) == pytest.approx(_weighted_mean((y - q) ** 2, w), rel=1e-5)
    # the actor's loss uses the critic just updated, at the actor's own (pre-update) policy
    out_actor = actor_net.apply(actor, obs)
    q_pi = f64(critic_net.apply(new_critic, obs, out_actor.policy))
    assert float(losses.policy_loss) == pytest.approx(-_weighted_mean(q_pi, w), rel=1e-5, abs=1e-7)
    if HAND.variants[i] == "actions_only":
        v_loss = 0.0
    else:  # the MSE validity loss: mean over the 40 outputs of (v - legal)^2
        v_loss = _weighted_mean(np.mean((f64(out_actor.validity) - b.legal) ** 2, axis=-1), w)
    assert float(losses.validity_loss) == pytest.approx(v_loss, rel=1e-5, abs=1e-8)
    assert float(losses.actor_loss) == pytest.approx(-_weighted_mean(q_pi, w) + 0.5 * v_loss, rel=1e-5, abs=1e-7)
    # the targets: theta' <- tau theta + (1 - tau) theta' with the updated online parameters
    for new, old, tgt in ((new_actor, actor_target, new_actor_target), (new_critic, critic_target, new_critic_target)):
        for n, o, t in zip(jax.tree.leaves(new), jax.tree.leaves(old), jax.tree.leaves(tgt)):
            np.testing.assert_allclose(f64(t), 0.25 * f64(n) + 0.75 * f64(o), rtol=1e-6, atol=1e-7)
    # the online networks moved (one Adam step) and their targets did not equal them before
    assert not np.allclose(jax.tree.leaves(new_critic)[0], jax.tree.leaves(critic)[0])


def test_update_descends_both_losses():
    """One update lowers the critic's error against the same TD target and raises Q(s, mu(s)):
    flipping the sign of either loss (or of its step) fails this test."""
    learner, (actor, actor_target, critic, critic_target), out = _hand_update(0)
    new_actor, _, new_critic, _, _, _, _ = out
    actor_net, critic_net = learner.actors[0], learner.critic
    b = _hand_batch()
    obs, next_obs = b.observation.astype(np.float32), b.next_observation.astype(np.float32)
    w = b.filled.astype(np.float64)
    q_next = np.asarray(critic_net.apply(critic_target, next_obs, actor_net.apply(actor_target, next_obs).policy))
    y = b.reward + 0.9 * (1.0 - b.done) * q_next
    error = lambda c: _weighted_mean((y - np.asarray(critic_net.apply(c, obs, b.action), np.float64)) ** 2, w)
    assert error(new_critic) < error(critic)
    value = lambda a: _weighted_mean(np.asarray(critic_net.apply(new_critic, obs, actor_net.apply(a, obs).policy),
                                                np.float64), w)
    assert value(new_actor) > value(actor)


# ----------------------------------------------------------------------------- the experiment, tiny
EXP = load_experiment("onitama_ddpg")
EXP_ARGS = ["variants=val_branch_actions_multiply,actions_only", "num_seeds=2", "num_envs=3", "buffer_size=32",
            "batch_size=4", "learning_starts=6", "min_depth=1", "max_depth=2", "advance_wins=2", "window=4",
            "conv_features=4", "card_features=4", "hidden=8", "norm=layer", "seed=7", "progress=false"]
"""The experiment's settings of `CFG` (so it shares the compiled functions of the learner tests)."""


def _csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_experiment_one_iteration_writes_its_readme(tmp_path):
    """Issue 30: ``iterations=1 chunk=1`` ends no game (the first iteration deals them) and must still finish."""
    out = tmp_path / "one"
    EXP.main(EXP_ARGS + ["iterations=1", "chunk=1", f"out={out}"])
    assert (out / "README.md").read_text().count("| val_branch_actions_multiply |") == 2
    assert (out / "episodes.csv").read_text().strip() == ",".join(EXP.EPISODE_FIELDS)  # header only
    assert len(_csv(out / "curves.csv")) == CFG.num_runs and (out / "training_curves.png").exists()


def test_experiment_resume_equals_uninterrupted(full_run, tmp_path):
    """3 iterations, then a rerun raised to 6: the same actors and records as the uninterrupted run."""
    state, m = full_run
    out = tmp_path / "run"
    EXP.main(EXP_ARGS + ["iterations=3", "chunk=3", f"out={out}"])
    assert "Iterations: 3" in (out / "README.md").read_text()
    EXP.main(EXP_ARGS + ["iterations=6", "chunk=3", f"out={out}"])
    assert "Iterations: 6" in (out / "README.md").read_text()
    for variant in CFG.variants:
        for seed in range(CFG.num_seeds):
            agent = load_agent(out / "actors" / f"{variant}_seed{seed}")
            for a, b in zip(jax.tree.leaves(agent.params), jax.tree.leaves(L.actor_params(CFG, state, variant, seed))):
                np.testing.assert_array_equal(np.asarray(a), b)
    curves = _csv(out / "curves.csv")
    assert len(curves) == 6 * CFG.num_runs
    for row in curves:
        r, t = L.run_index(CFG, row["variant"], int(row["seed"])), int(row["iteration"]) - 1
        assert float(row["critic_loss"]) == pytest.approx(float(m.critic_loss[t, r]), rel=1e-7, nan_ok=True)
    assert len(_csv(out / "episodes.csv")) == int(m.ended.sum())


def test_experiment_refuses_bad_settings_before_writing(tmp_path):
    assert_refused_before_writing(EXP, [(["iterations=0"], "iterations"), (["chunk=0"], "chunk"),
                                        (["gamma=nan"], "gamma"), (["tau=inf"], "tau"),
                                        (["critic_learning_rate=inf"], "critic_learning_rate")], tmp_path / "bad")


def test_experiment_help_errors_and_resume_rules(tmp_path, capsys):
    """``--help`` documents every setting; a bad value is one line and exit 2 (also as a script); ``iterations``
    sets ``learner.num_iterations``; a folder accepts a longer run and refuses another learner setting."""
    assert_help_and_one_line_errors(EXP, ["gamma=2"], r"^experiments/onitama_ddpg\.py: error: gamma", capsys)
    bad = subprocess.run([sys.executable, "experiments/onitama_ddpg.py", "iterations=0"], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "iterations" in bad.stderr
    config = parse_config(EXP.Config, ["iterations=40", "chunk=8"])
    assert config.learner.num_iterations == 40 and config.learner.chunk == 8
    with pytest.raises(ValueError, match="give the run's length as iterations=40"):
        parse_config(EXP.Config, ["learner.num_iterations=40"])
    assert_resume_rules(EXP, tmp_path / "run", EXP_ARGS, ["iterations=9", "chunk=3", "progress=true"],
                        ["learner.gamma=0.5"], "learner.gamma")


# ----------------------------------------------------------------------------- the agent
def _agent_from_bias(j: int, **kw) -> DDPGAgent:
    """An actions_only actor whose policy puts (almost) all mass on action ``j`` whatever the input."""
    actor = Actor("actions_only", **TINY)
    params = jax.tree.map(np.zeros_like, jax.device_get(init_actor(jax.random.key(0), actor)))
    params["params"]["actions"]["bias"] = np.where(np.arange(40) == j, 30.0, 0.0).astype(np.float32)
    return DDPGAgent("actions_only", params, **TINY, **kw)


def test_agent_masks_or_loses_by_the_core_rule():
    state = jax.tree.map(lambda x: x[0], OPENINGS)
    legal = np.asarray(state.legal_action_mask)
    j = int(np.flatnonzero(~legal)[0])  # an illegal action of the opening position
    masked = _agent_from_bias(j)
    raw = _agent_from_bias(j, mask_illegal=False)

    both = jax.jit(lambda s, k: (masked.policy(ENV, s, k, s.current_player), raw.policy(ENV, s, k, s.current_player)))
    a, b = (int(x) for x in both(state, jax.random.key(1)))
    assert legal[a] and a == int(np.flatnonzero(legal)[0])  # all legal entries tie: lowest legal index
    assert b == j  # played raw; what the env then does (the offender loses) is checked in the arena test
    canonical = jaxgames.make("onitama")
    with pytest.raises(ValueError, match="action_space='paper'"):
        jax.eval_shape(lambda k: masked.policy(canonical, canonical.init(k), k, 0), jax.random.key(0))


def test_agent_bad_params_and_save_load(full_run, tmp_path):
    state, _ = full_run
    params = L.actor_params(CFG, state, "val_branch_actions_multiply", seed=1)
    with pytest.raises(ValueError, match="do not fit"):
        DDPGAgent("dual", params, **TINY)
    with pytest.raises(ValueError, match="was not trained"):
        L.actor_params(CFG, state, "dual")
    save_weights(tmp_path / "a", "val_branch_actions_multiply", params, TINY, {"iterations": 6})
    agent = load_agent(tmp_path / "a", greedy=False)
    assert agent.variant == "val_branch_actions_multiply" and agent.network["conv_features"] == [4] and not agent.greedy
    assert jax.tree.structure(agent.params) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(agent.params), jax.tree.leaves(params)):
        np.testing.assert_array_equal(np.asarray(a), b)


def test_trained_agent_in_the_arena(full_run):
    """The trained (masked) actor against the same kind of actor playing its raw argmax, in the arena.

    The raw agent's argmax is an action illegal in every opening (checked over 200 deals of the five
    cards), so by the core rule it loses on its first move; the masked trained agent never plays an
    illegal move, so it wins every game, in at most 2 moves (one each).
    """
    state, _ = full_run
    trained = DDPGAgent("actions_only", L.actor_params(CFG, state, "actions_only"), **TINY, name="trained")
    openings = np.asarray(OPENINGS.legal_action_mask)
    j = int(np.flatnonzero(~openings.any(axis=0))[0])
    raw = _agent_from_bias(j, mask_illegal=False)
    result = play_match(ENV, trained, raw, 6, jax.random.key(0), max_steps=10)
    assert result.outcome.tolist() == [1] * 6
    assert np.all(result.length <= 2) and np.all(result.returns[:, 1] == -1.0)
