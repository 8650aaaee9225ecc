"""Numerics of the tabular learners and the dynamics fields: no silent NaN, and the same results with x64 on and off.

Every check is in float32, the dtype the learners and fields compute in: a temperature that is 0 or
denormal in float32 is refused, large finite payoffs give a (nearly) greedy policy instead of NaN, and a
run that goes non-finite anyway is reported by `run_sweep` rather than returned silently.
"""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxgames.dynamics import empirical, fields
from jaxgames.games import matrix
from jaxgames.learners import tabular as tl

# Multiplying by a power of two is exact in floating point, so a learner on payoffs * 2^123 (~1.06e37)
# with temperature tau must do exactly what it does on the payoffs with temperature tau * 2^-123.
BIG = 2.0**123


def _sweep(game, cfg, params, q0=None, seed=0, **kw):
    n = jax.tree.leaves(params)[0].shape[0]
    return tl.run_sweep(game, cfg, jax.random.split(jax.random.key(seed), n), params, q0, progress=False, **kw)


# ----------------------------------------------------------------------------- settings checked in float32


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(temperature=1e-50, temperature_schedule="constant"), "tau"),  # 0 in float32
        (dict(temperature=1e-40, temperature_schedule="constant"), "tau"),  # denormal in float32
        (dict(temperature=(1.0, 1e-45), temperature_schedule="exponential"), "tau"),
        (dict(temperature=(1.0, 1e-39), temperature_schedule="linear"), "tau"),
        (dict(temperature=(1.0, 1e-9), temperature_schedule="linear"), "tau"),  # 1 + (1e-9 - 1) = 0 in float32
        (dict(temperature=(1e20, 1e-20), temperature_schedule="exponential"), "exponential"),  # end / start < 1e-30
        (dict(temperature=(0.5, 1e39), temperature_schedule="linear"), "finite"),  # inf in float32
        (dict(learning_rate=1e-50), "alpha"),  # 0 in float32: no learning at all
        (dict(faq_beta=1e-50), "beta"),
        (dict(leniency=float("inf")), "kappa"),
        (dict(leniency=2**40), "kappa"),  # does not fit the int32 leniency
    ],
)
def test_settings_that_break_in_float32_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tl.learner_params(**kwargs)


def test_tiny_valid_temperatures_run_greedy():
    # tau = 1e-30 is valid in float32: gaps of O(1) between Q-values make the policy exactly greedy, not NaN.
    exp = tl.learner_params(temperature=(1.0, 1e-30), temperature_schedule="exponential").temperature
    assert float(exp(100, 100)) == pytest.approx(1e-30, rel=1e-5)
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=200)
    params = tl.stack_params([tl.learner_params(learning_rate=0.1, temperature=1e-30, temperature_schedule="constant")] * 4)
    out = _sweep(matrix.prisoners_dilemma(), cfg, params, np.tile(np.array([[[-1.0, -0.5]] * 2], np.float32), (4, 1, 1)))
    assert not out.non_finite.any()
    assert set(np.unique(out.policy)) <= {0.0, 1.0}


def test_run_sweep_checks_params_built_by_hand():
    # Stacked params that never went through learner_params: run 1's tau is 0 in float32.
    good = tl.learner_params(temperature=0.5, temperature_schedule="constant")
    bad = good.replace(temperature=tl.Schedule(jnp.float32(1e-50), jnp.float32(1e-50), jnp.int32(0)))
    params = tl.stack_params([good, bad, good])
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=10)
    with pytest.raises(ValueError, match=r"tau.*1 run\(s\), e.g. runs \[1\]"):
        _sweep(matrix.stag_hunt(), cfg, params)
    # Epsilon-greedy learners ignore the temperature, so it is not checked for them.
    out = _sweep(matrix.stag_hunt(), tl.LearnerConfig(exploration="epsilon_greedy", num_iterations=10), params)
    assert not out.non_finite.any()


def test_payoffs_that_overflow_float32_raise():
    cfg = tl.LearnerConfig(num_iterations=10)
    # 1e39 is finite in float64 and inf in float32.
    with pytest.raises(ValueError, match="float32"):
        tl.make_train(np.array([[[1e39, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]), cfg)
    # Each payoff and each TD error (up to 1e38 - (-1e38)) is finite in float32, but the gradient of the
    # squared TD error, 2 (r - Q), is not.
    with pytest.raises(ValueError, match="TD errors"):
        tl.make_train(np.array([[[1e38, -1e38], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]), cfg)
    tl.make_train(np.array([[[0.8e38, -0.8e38], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]), cfg)  # 2 x 1.6e38 is fine


def test_initial_q_is_checked():
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=10)
    params = tl.stack_params([tl.learner_params()] * 2)
    game = matrix.stag_hunt()
    q0 = np.zeros((2, 2, 2), np.float32)
    with pytest.raises(ValueError, match="finite"):
        _sweep(game, cfg, params, np.where(np.arange(2)[:, None, None] == 1, np.nan, q0))
    with pytest.raises(ValueError, match="finite"):
        _sweep(game, cfg, params, np.full((2, 2, 2), 1e39))  # inf in float32
    with pytest.raises(ValueError, match=r"\[R, 2, A\]"):
        _sweep(game, cfg, params, np.zeros((2, 2, 1), np.float32))  # used to broadcast silently
    with pytest.raises(ValueError, match="TD errors"):
        _sweep(game, cfg, params, np.full((2, 2, 2), -1.8e38, np.float32))  # 2 (4 - (-1.8e38)) overflows
    with pytest.raises(ValueError, match=r"\[2, A\]"):
        jax.jit(tl.make_train(game, cfg))(jax.random.key(0), tl.learner_params(), np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("exploration", ["boltzmann", "epsilon_greedy"])
@pytest.mark.parametrize(
    "policy, match",
    [
        ([[0.5, 0.9], [0.3, 0.7]], "probability"),  # sums to 1.4
        ([[-0.5, 1.5], [0.3, 0.7]], "probability"),  # negative
        ([[np.nan, 1.0], [0.3, 0.7]], "probability"),
        ([[0.5, 0.5], [0.3, 0.7], [0.5, 0.5]], r"\[\.\.\., 2, A\]"),  # three players
    ],
)
def test_starting_policies_must_be_probability_vectors(exploration, policy, match):
    cfg = tl.LearnerConfig(exploration=exploration)
    with pytest.raises(ValueError, match=match):
        tl.initial_q_from_policy(cfg, np.asarray(policy)[None], tl.stack_params([tl.learner_params()]))


# ----------------------------------------------------------------------------- stable Boltzmann policy


@pytest.mark.parametrize("exploration, beta", [("boltzmann", 1.0), ("boltzmann", 0.1), ("lenient_boltzmann", 1.0)])
def test_large_payoffs_give_no_nan(exploration, beta):
    # The bug report's case: the prisoner's dilemma x 1e37 with the default schedule (tau 0.5 -> 0.01).
    # Every Q-value is a convex combination of its start (0) and the rewards, so it stays in [-4e37, 0].
    big = matrix.prisoners_dilemma().payoffs_np * np.float32(1e37)
    cfg = tl.LearnerConfig(exploration=exploration, num_iterations=500, record_every=50, max_leniency=3)
    params = tl.stack_params([tl.learner_params(learning_rate=0.1, leniency=3, faq_beta=beta)] * 8)
    out = _sweep(big, cfg, params)
    assert np.all(np.isfinite(out.trajectory)) and np.all(np.isfinite(out.q_values))
    assert not out.non_finite.any()
    np.testing.assert_allclose(out.trajectory.sum(-1), 1.0, rtol=1e-6)
    assert np.all((out.q_values >= -4e37 * (1 + 1e-6)) & (out.q_values <= 0))


@pytest.mark.parametrize("exploration, beta", [("boltzmann", 1.0), ("boltzmann", 0.1), ("lenient_boltzmann", 1.0)])
def test_boltzmann_learner_is_exactly_scale_invariant(exploration, beta):
    # Payoffs * 2^123 at tau = 0.3 against the payoffs at tau = 0.3 * 2^-123 (both tau valid in float32):
    # every logit (Q - max Q) / tau and every policy is the same bit for bit, and Q scales by 2^123 exactly.
    # With the old logits Q / tau (~1e37 here; tau not a power of two, so Q / tau rounds) both runs were NaN.
    game = matrix.stag_hunt().payoffs_np
    cfg = tl.LearnerConfig(exploration=exploration, num_iterations=300, record_every=30, max_leniency=2)
    hp = lambda tau: tl.learner_params(learning_rate=0.1, temperature=tau, temperature_schedule="constant",
                                       leniency=2, faq_beta=beta)
    small = _sweep(game, cfg, tl.stack_params([hp(0.3 / BIG)] * 8), seed=3)
    large = _sweep(game * np.float32(BIG), cfg, tl.stack_params([hp(0.3)] * 8), seed=3)
    assert np.all(np.isfinite(small.trajectory)) and np.all(np.isfinite(large.trajectory))
    np.testing.assert_array_equal(large.trajectory, small.trajectory)
    np.testing.assert_array_equal(large.q_values, small.q_values * np.float32(BIG))
    assert np.ptp(small.trajectory[:, -1, 0, 0]) > 0.5  # the runs went different ways: not a trivial check


def test_exploration_policy_in_closed_form_for_huge_logits():
    # softmax((Q - max Q) / tau): 1 on the best action when the gaps / tau overflow, never NaN.
    cfg = tl.LearnerConfig(exploration="boltzmann")
    legal = jnp.array([True, True, True, False])
    q = jnp.array([1e37, -1e37, 1e37 - 1e31, 3e38])  # the last action is illegal: its huge Q must not count
    policy = jax.jit(lambda q, tau: tl.exploration_policy(cfg, q, legal, tau, 0.0))
    np.testing.assert_array_equal(policy(q, jnp.float32(0.01)), [1.0, 0.0, 0.0, 0.0])
    # Two tied best actions share the mass; tau near TAU_MIN with O(1) Q-values (logits up to 1e38).
    np.testing.assert_array_equal(policy(jnp.array([2.0, 1.0, 2.0, 0.0]), jnp.float32(2e-38)), [0.5, 0.0, 0.5, 0.0])
    # Moderate logits are the plain softmax.
    q = jnp.array([0.3, 1.2, -0.4, 0.0])
    expected = np.exp(np.array([0.3, 1.2, -0.4]) / 0.7)
    np.testing.assert_allclose(policy(q, jnp.float32(0.7))[:3], expected / expected.sum(), rtol=1e-6)


@pytest.mark.parametrize("exploration", ["boltzmann", "epsilon_greedy"])
@pytest.mark.parametrize("num_actions", [2, 3, 5])
def test_exploration_policy_is_bitwise_the_textbook_formula(exploration, num_actions):
    # The policy is built from elementwise chains (issue 32: XLA's CPU reductions over a few actions were
    # slow); it must equal, bit for bit, the formula written with jnp.max, jnp.sum and jax.nn.softmax.
    cfg = tl.LearnerConfig(exploration=exploration)
    rng = np.random.default_rng(num_actions)
    q = jnp.asarray(rng.normal(0, 3, (64, num_actions)).round(1), jnp.float32)  # rounded: ties for the greedy case
    legal = jnp.asarray(rng.random((64, num_actions)) < 0.8).at[:, 0].set(True)
    tau = jnp.asarray(rng.uniform(0.01, 2.0, 64), jnp.float32)
    eps = jnp.asarray(rng.uniform(0.0, 1.0, 64), jnp.float32)

    def reference(q, legal, tau, eps):
        if exploration == "epsilon_greedy":
            greedy = (legal & (q == jnp.max(jnp.where(legal, q, -jnp.inf)))).astype(jnp.float32)
            uniform = legal.astype(jnp.float32) / jnp.sum(legal.astype(jnp.float32))
            return (1.0 - eps) * (greedy / jnp.sum(greedy)) + eps * uniform
        best = jnp.max(jnp.where(legal, q, jnp.finfo(jnp.float32).min))
        return jax.nn.softmax(jnp.where(legal, (q - best) / tau, jnp.finfo(jnp.float32).min))

    ours = lambda q, legal, tau, eps: tl.exploration_policy(cfg, q, legal, tau, eps)
    # Bit for bit on the CPU. In the gpu profile XLA fuses and rounds exp and the division its own way: on an
    # H200 (jax 0.11.2) the two formulas differed by at most 2 ulp (1.2e-7 near 1), so 2 ulp is allowed there.
    gpu = os.environ.get("JAXGAMES_TEST_PROFILE") == "gpu"
    same = (lambda a, b: np.testing.assert_array_max_ulp(a, b, maxulp=2)) if gpu else np.testing.assert_array_equal
    # Per legal mask, a constant as inside the learners (with a traced mask XLA may round the epsilon-greedy
    # mix of either formula differently, by 1 ulp).
    for mask in np.unique(np.asarray(legal), axis=0):
        rows = np.flatnonzero(np.all(np.asarray(legal) == mask, axis=1))
        args = (q[rows], tau[rows], eps[rows])
        on = lambda f: jax.jit(jax.vmap(lambda q, tau, eps: f(q, jnp.asarray(mask), tau, eps)))(*args)
        same(on(ours), on(reference))
        i = rows[0]  # and one run alone under jit
        one = lambda f: jax.jit(lambda q, tau, eps: f(q, jnp.asarray(mask), tau, eps))(q[i], tau[i], eps[i])
        same(one(ours), one(reference))


@pytest.mark.parametrize("exploration", tl.EXPLORATIONS)
def test_sweep_loop_has_no_gather_scatter_or_cumsum(exploration):
    # Issue 32: indexing by the played action is a chain of selects and every update a one-hot select, so
    # the vmapped loop lowers without gathers, scatters (the Q-table gradient, the lenient buffer) or cumsum.
    game = np.random.default_rng(0).normal(size=(2, 3, 2))  # payoffs [2, n, m]
    cfg = tl.LearnerConfig(exploration=exploration, num_iterations=10, max_leniency=3)
    params = tl.stack_params([tl.learner_params(leniency=2)] * 4)
    keys = jax.random.split(jax.random.key(0), 4)
    text = jax.jit(jax.vmap(tl.make_train(game, cfg), in_axes=(0, 0, None))).lower(keys, params, None).as_text()
    for op in ("stablehlo.gather", "stablehlo.scatter", "stablehlo.reduce_window"):
        assert op not in text, op


def test_schedule_ends_at_its_end_value_under_jit():
    # Under jit XLA computes t / T as t * (1 / T), which at t = T is not 1 for some T (e.g. 41): a linear
    # epsilon schedule to 0 then ended at 6e-9, and a linear tau schedule missed its end.
    eps = tl.Schedule.make(0.1, 0.0, "linear")
    tau = tl.Schedule.make(1.0, 1e-7, "linear")
    for horizon in (10, 41, 47, 55, 61, 83, 1000, 99_999):
        at_end = jax.jit(lambda s, t: s(t, horizon))
        assert float(at_end(eps, jnp.int32(horizon))) == 0.0, horizon
        assert float(at_end(tau, jnp.int32(horizon))) == float(np.float32(1.0) + (np.float32(1e-7) - np.float32(1.0)))


# ----------------------------------------------------------------------------- non-finite runs are reported


def test_run_sweep_reports_runs_that_went_non_finite():
    # An optimiser of one's own that blows up for learning rates above 0.5 (inputs are all valid).
    blow_up = lambda lr: optax.sgd(jnp.where(lr > 0.5, jnp.inf, lr))
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=50, optimizer=blow_up)
    rates = [0.1, 0.9, 0.2, 0.9]
    params = tl.stack_params([tl.learner_params(learning_rate=a) for a in rates])
    with pytest.warns(tl.NonFiniteRunsWarning, match=r"(?s)2 of 4 runs.*run 1: learning_rate=0.9,"):
        out = _sweep(matrix.stag_hunt(), cfg, params, chunk_size=3)
    assert out.non_finite.tolist() == [False, True, False, True]
    # The good runs are kept, and are what they are on their own.
    keys = jax.random.split(jax.random.key(0), 4)
    alone = tl.run_sweep(matrix.stag_hunt(), cfg, keys[::2], jax.tree.map(lambda x: x[::2], params), progress=False)
    np.testing.assert_array_equal(out.q_values[::2], alone.q_values)
    with pytest.raises(FloatingPointError, match="2 of 4 runs"):
        _sweep(matrix.stag_hunt(), cfg, params, on_non_finite="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = _sweep(matrix.stag_hunt(), cfg, params, on_non_finite="ignore")
    assert quiet.non_finite.tolist() == [False, True, False, True]
    with pytest.raises(ValueError, match="on_non_finite"):
        _sweep(matrix.stag_hunt(), cfg, params, on_non_finite="skip")


def test_train_flags_a_policy_that_went_non_finite_mid_run():
    # A hand-built tau that is 0 at iteration 20 (make_train's traced params are not checked).
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=40)
    hp = tl.learner_params(temperature=0.5, temperature_schedule="constant")
    hp = hp.replace(temperature=tl.Schedule(jnp.float32(0.5), jnp.float32(-0.5), jnp.int32(1)))  # 0 at t = T/2
    out = jax.jit(tl.make_train(matrix.stag_hunt(), cfg))(jax.random.key(0), hp, None)
    assert bool(out.non_finite)
    ok = jax.jit(tl.make_train(matrix.stag_hunt(), cfg))(jax.random.key(0), tl.learner_params(), None)
    assert not bool(ok.non_finite)


# ----------------------------------------------------------------------------- dynamics fields


@pytest.mark.parametrize(
    "kind, kwargs, x, match",
    [
        ("boltzmann_q", dict(temperature=1e-50), None, "tau"),
        ("boltzmann_q", dict(temperature=0.0), None, "tau"),
        ("boltzmann_q", dict(temperature=-1.0), None, "tau"),
        ("lenient_boltzmann", dict(leniency=0), None, "kappa"),
        ("lenient_boltzmann", dict(leniency=2.5), None, "kappa"),
        ("q_learning", dict(beta=0.0), None, "beta"),
        ("q_learning", dict(beta=1.5), None, "beta"),
        ("replicator", dict(learning_rate=float("nan")), None, "alpha"),
        ("boltzmann_q", {}, [0.9, 0.9], "probability"),
        ("boltzmann_q", {}, [1.5, -0.5], "probability"),
        ("replicator", {}, [0.2, 0.3, 0.5], "shape"),
    ],
)
def test_vector_field_checks_settings_like_the_learners(kind, kwargs, x, match):
    payoffs = matrix.stag_hunt().payoffs_np
    x = jnp.array([0.4, 0.6]) if x is None else jnp.asarray(x)
    with pytest.raises(ValueError, match=match):
        fields.vector_field(kind, payoffs, x, jnp.array([0.5, 0.5]), **kwargs)


def test_fields_check_payoffs_starts_and_schedules():
    payoffs = matrix.stag_hunt().payoffs_np
    half = np.array([0.5, 0.5])
    with pytest.raises(ValueError, match="float32"):
        fields.vector_field("replicator", payoffs.astype(np.float64) * 1e39, half, half)  # inf in float32
    with pytest.raises(ValueError, match="x0"):
        fields.integrate("boltzmann_q", payoffs, np.array([0.7, 0.7]), half, num_iterations=10, num_steps=2)
    with pytest.raises(ValueError, match=r"t=10.*tau"):  # a schedule that reaches 0 at the end
        fields.integrate("boltzmann_q", payoffs, half, half, num_iterations=10, num_steps=2,
                         temperature=lambda t: 1.0 - t / 10)
    with pytest.raises(ValueError, match="q0"):
        fields.integrate_q(payoffs, np.full((2, 2), np.nan), num_iterations=10, num_steps=2)
    with pytest.raises(ValueError, match="epsilon"):
        fields.integrate_q(payoffs, np.zeros((2, 2)), num_iterations=10, num_steps=2, exploration="epsilon_greedy",
                           epsilon=lambda t: 0.5 + t / 10)  # 1.5 at the end
    tau = tl.learner_params(temperature=(0.5, 0.01)).temperature  # a learner's schedule is checked too
    fields.integrate_q(payoffs, np.zeros((2, 2)), num_iterations=10, num_steps=2, temperature=lambda t: tau(t, 10))


def test_field_policies_are_stable_for_large_payoffs():
    q = jnp.array([[1e37, -1e37], [3e37, 0.0]])
    np.testing.assert_array_equal(fields.policy_of_q(q, temperature=0.01), [[1.0, 0.0], [1.0, 0.0]])
    # Exact scale invariance (see BIG): the field policies of Q * 2^123 at tau * 2^123 are those of Q at tau.
    q = jnp.array([[0.3, -0.2], [1.0, 1.1]])
    np.testing.assert_array_equal(fields.policy_of_q(q * BIG, temperature=0.4 * BIG), fields.policy_of_q(q, temperature=0.4))
    # The expected (idealised FAQ) dynamics of the prisoner's dilemma x 1e37 at an ordinary temperature used to
    # go NaN. Q_i -> u_i at rate alpha whatever the policies, and defecting earns 1e37 more against either
    # action, so Q(C) - Q(D) = -1e37 (1 - exp(-alpha t)): from the first step on, both players defect.
    big = matrix.prisoners_dilemma().payoffs_np * np.float32(1e37)
    xs, ys = fields.integrate_q(big, np.zeros((2, 2)), num_iterations=100, num_steps=20, temperature=0.1,
                                learning_rate=0.01)
    np.testing.assert_array_equal(np.asarray(xs)[0], [0.5, 0.5])
    np.testing.assert_array_equal(np.asarray(xs)[1:], np.tile([0.0, 1.0], (20, 1)))
    np.testing.assert_array_equal(np.asarray(ys)[1:], np.tile([0.0, 1.0], (20, 1)))


# ----------------------------------------------------------------------------- jax_enable_x64 on and off


def _learner_runs():
    out = {}
    for exploration in tl.EXPLORATIONS:
        cfg = tl.LearnerConfig(exploration=exploration, num_iterations=200, record_every=50, max_leniency=3)
        params = tl.stack_params([
            tl.learner_params(learning_rate=0.1, temperature=(0.5, 0.05), temperature_schedule=schedule,
                              epsilon=(0.3, 0.05), epsilon_schedule=schedule, leniency=3, faq_beta=beta)
            for beta in (1.0, 0.3) for schedule in ("linear", "exponential")
        ])
        start = np.broadcast_to([[0.3, 0.7], [0.6, 0.4]], (4, 2, 2))
        q0 = tl.initial_q_from_policy(cfg, start, params)
        out[exploration] = _sweep(matrix.stag_hunt(), cfg, params, q0)
        # One run through make_train directly (float32 params, python-float initial Q).
        single = jax.jit(tl.make_train(matrix.stag_hunt(), cfg))(jax.random.key(1), tl.learner_params(), None)
        out[exploration + "/single"] = jax.tree.map(np.asarray, single)
    return out


def _field_runs():
    game = matrix.stag_hunt()
    x0, y0 = np.array([0.3, 0.7]), np.array([0.6, 0.4])
    hp = tl.learner_params(temperature=(0.5, 0.05))
    return dict(
        field=fields.vector_field("q_learning", game.payoffs_np, x0, y0, temperature=0.5, leniency=2, beta=0.3),
        lenient=fields.vector_field("lenient_boltzmann", game.payoffs_np, x0, y0, temperature=np.float64(0.5),
                                    leniency=np.int64(3)),
        integrate=fields.integrate("boltzmann_q", game.payoffs_np, x0, y0, num_iterations=100, num_steps=20,
                                   temperature=0.5, learning_rate=0.1),
        integrate_q=fields.integrate_q(game.payoffs_np, 0.5 * np.log(np.stack([x0, y0])), num_iterations=100,
                                       num_steps=20, temperature=lambda t: hp.temperature(t, 100), learning_rate=0.1,
                                       beta=0.3, leniency=2),
        empirical=empirical.empirical_field(game, "lenient_boltzmann", tl.learner_params(temperature=0.5,
                                            temperature_schedule="constant", leniency=2),
                                            np.array([[[0.3, 0.7], [0.6, 0.4]]]), jax.random.key(1), horizon=50,
                                            runs_per_point=4),
    )


@pytest.mark.parametrize("runs", [_learner_runs, _field_runs], ids=["learners", "fields"])
def test_same_results_with_x64_on_and_off(runs):
    assert not jax.config.jax_enable_x64
    off = runs()
    with jax.enable_x64(True):
        on = runs()
    assert not jax.config.jax_enable_x64  # the context restored it
    for name in off:
        for a, b in zip(jax.tree.leaves(off[name]), jax.tree.leaves(on[name])):
            a, b = np.asarray(a), np.asarray(b)
            assert b.dtype == a.dtype and a.dtype in (np.float32, np.float64, np.bool_), (name, a.dtype, b.dtype)
            np.testing.assert_array_equal(a, b, err_msg=name)
