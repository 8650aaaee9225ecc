"""Tabular independent learners: the tabular rule, exploration, leniency, sweeps, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxgames.games import matrix
from jaxgames.learners import tabular as tl


def _sweep(game, cfg, params, q0=None, seed=0, chunk_size=4096):
    n = jax.tree.leaves(params)[0].shape[0]
    return tl.run_sweep(game, cfg, jax.random.split(jax.random.key(seed), n), params, q0, chunk_size=chunk_size, progress=False)


def test_sgd_step_is_the_tabular_rule():
    # epsilon = 0 makes the run deterministic: replay it in plain numpy with Q <- Q + alpha (r - Q).
    game = matrix.prisoners_dilemma()
    alpha, T = 0.05, 300
    cfg = tl.LearnerConfig(exploration="epsilon_greedy", num_iterations=T)
    q0 = np.array([[0.5, 0.0], [0.0, 0.3]], np.float32)
    out = _sweep(game, cfg, tl.stack_params([tl.learner_params(learning_rate=alpha, epsilon=0.0)]), q0[None])
    q = q0.astype(np.float64).copy()
    payoffs = game.payoffs_np.astype(np.float64)
    for _ in range(T):
        a = [int(np.argmax(q[0])), int(np.argmax(q[1]))]  # no ties arise from this start
        r = payoffs[:, a[0], a[1]]
        for p in range(2):
            q[p, a[p]] += alpha * (r[p] - q[p, a[p]])
    np.testing.assert_allclose(out.q_values[0], q, rtol=1e-4, atol=1e-5)


def test_other_optimisers_drop_in():
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=2000, optimizer=lambda lr: optax.adam(lr))
    params = tl.stack_params([tl.learner_params(learning_rate=0.05, temperature=50.0, temperature_schedule="constant")] * 8)
    out = _sweep(matrix.prisoners_dilemma(), cfg, params)
    # Near-uniform play: Q(C) -> (-1 - 4) / 2 = -2.5, Q(D) -> (0 - 3) / 2 = -1.5 for both players.
    np.testing.assert_allclose(out.q_values.mean(0), [[-2.5, -1.5], [-2.5, -1.5]], atol=0.35)


def test_boltzmann_q_values_converge_to_expected_rewards():
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=4000)
    params = tl.stack_params([tl.learner_params(learning_rate=0.02, temperature=1e3, temperature_schedule="constant")] * 64)
    out = _sweep(matrix.biased_rock_paper_scissors(), cfg, params)
    # Uniform opponent: Q(i) = mean_j A[i, j] = (0.25, 0.2, -0.45) / 3.
    expected = np.array([0.25, 0.2, -0.45]) / 3
    np.testing.assert_allclose(out.q_values[:, 0].mean(0), expected, atol=0.02)
    np.testing.assert_allclose(out.policy.mean(0), np.full((2, 3), 1 / 3), atol=0.01)


def test_lenient_q_values_converge_to_expected_maximum():
    # Uniform opponent in the PD: C gets -1 or -4, D gets 0 or -3, each with probability 1/2.
    # E[max of 5] = top - (top - bottom) / 2^5: C: -1 - 3/32, D: 0 - 3/32.
    kappa = 5
    cfg = tl.LearnerConfig(exploration="lenient_boltzmann", num_iterations=20_000, max_leniency=8)
    params = tl.stack_params([tl.learner_params(learning_rate=0.05, temperature=1e3, temperature_schedule="constant", leniency=kappa)] * 64)
    out = _sweep(matrix.prisoners_dilemma(), cfg, params)
    np.testing.assert_allclose(out.q_values.mean(0), [[-1 - 3 / 32, -3 / 32]] * 2, atol=0.03)


def test_leniency_one_is_boltzmann():
    params = tl.stack_params([tl.learner_params(learning_rate=0.1, temperature=0.7, temperature_schedule="constant", leniency=1)] * 3)
    q0 = np.zeros((3, 2, 2), np.float32)
    a = _sweep(matrix.stag_hunt(), tl.LearnerConfig(exploration="boltzmann", num_iterations=500), params, q0)
    b = _sweep(matrix.stag_hunt(), tl.LearnerConfig(exploration="lenient_boltzmann", num_iterations=500), params, q0)
    np.testing.assert_allclose(a.q_values, b.q_values, rtol=1e-6)


def test_exploration_policies_match_openspiel():
    pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import boltzmann_tabular_qlearner, tabular_qlearner

    q = np.array([0.3, 1.2, 1.2], np.float32)
    legal = np.ones(3, bool)
    greedy = tabular_qlearner.QLearner(0, 3)
    boltz = boltzmann_tabular_qlearner.BoltzmannQLearner(0, 3)
    for agent in (greedy, boltz):
        for a, v in enumerate(q):
            agent._q_values["s"][a] = float(v)
    _, ref_eps = greedy._epsilon_greedy("s", [0, 1, 2], 0.3)
    _, ref_boltz = boltz._softmax("s", [0, 1, 2], 0.4)
    ours_eps = tl.exploration_policy(tl.LearnerConfig(exploration="epsilon_greedy"), q, legal, 1.0, 0.3)
    ours_boltz = tl.exploration_policy(tl.LearnerConfig(exploration="boltzmann"), q, legal, 0.4, 0.0)
    np.testing.assert_allclose(ours_eps, ref_eps, atol=1e-6)
    np.testing.assert_allclose(ours_boltz, ref_boltz, atol=1e-6)


def test_schedules():
    T = 100
    lin = tl.Schedule.make(0.5, 0.01, "linear")
    exp = tl.Schedule.make(1.0, 0.01, "exponential")
    const = tl.Schedule.make(0.3)
    assert float(lin(0, T)) == pytest.approx(0.5) and float(lin(50, T)) == pytest.approx(0.255)
    assert float(lin(T, T)) == pytest.approx(0.01)
    assert float(exp(50, T)) == pytest.approx(0.1, rel=1e-5)  # geometric mean of 1 and 0.01
    assert float(const(77, T)) == pytest.approx(0.3)


def test_trajectory_starts_at_the_requested_policy_and_has_the_stride():
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=400, record_every=100)
    hp = tl.learner_params()
    start = np.array([[[0.2, 0.8], [0.7, 0.3]]])
    q0 = tl.initial_q_from_policy(cfg, start, tl.stack_params([hp]))
    out = _sweep(matrix.subsidy_game(), cfg, tl.stack_params([hp]), q0)
    assert out.trajectory.shape == (1, 5, 2, 2)
    np.testing.assert_allclose(out.trajectory[0, 0], start[0], atol=1e-5)
    np.testing.assert_allclose(out.trajectory[0, -1], out.policy[0])


def test_chunking_does_not_change_results():
    cfg = tl.LearnerConfig(exploration="lenient_boltzmann", num_iterations=200, max_leniency=5)
    params = tl.stack_params([tl.learner_params(learning_rate=0.1, leniency=k) for k in (1, 2, 3, 4, 5, 5, 2)])
    a = _sweep(matrix.battle_of_the_sexes(), cfg, params, chunk_size=3)
    b = _sweep(matrix.battle_of_the_sexes(), cfg, params, chunk_size=100)
    np.testing.assert_allclose(a.q_values, b.q_values)


def test_jit_vmap_train_single_run_agrees_with_batched():
    cfg = tl.LearnerConfig(exploration="epsilon_greedy", num_iterations=300)
    train = tl.make_train(matrix.stag_hunt(), cfg)
    hp = tl.learner_params(learning_rate=0.1, epsilon=0.2)
    key = jax.random.key(3)
    single = jax.jit(train)(key, hp, None)
    batched = jax.jit(jax.vmap(train, in_axes=(0, None, None)))(key[None], hp, None)
    np.testing.assert_allclose(single.q_values, batched.q_values[0], rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(temperature=0.0), "tau"),
        (dict(temperature=(0.5, -0.1)), "tau"),
        (dict(leniency=0), "kappa"),
        (dict(leniency=2.5), "kappa"),
        (dict(epsilon=1.5), "epsilon"),
        (dict(epsilon=(0.5, -0.1)), "epsilon"),
        (dict(learning_rate=0.0), "alpha"),
        (dict(learning_rate=1.5), "alpha"),
        (dict(temperature_schedule="cosine"), "schedule"),
    ],
)
def test_bad_hyperparameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tl.learner_params(**kwargs)


def test_bad_config_raises():
    with pytest.raises(ValueError, match="exploration"):
        tl.LearnerConfig(exploration="softmax")
    with pytest.raises(ValueError, match="divide"):
        tl.LearnerConfig(num_iterations=100, record_every=30)
    with pytest.raises(ValueError, match="finite"):
        tl.make_train([[[1, np.nan], [0, 0]], [[0, 0], [0, 0]]], tl.LearnerConfig())


def test_grid_params_is_the_cartesian_product():
    params, settings = tl.grid_params(temperature=[(0.5, 0.01), (1.0, 0.1)], leniency=[2, 5, 10], repeat=4)
    assert len(settings) == 6 and params.leniency.shape == (24,)
    assert params.leniency[:4].tolist() == [2] * 4 and params.leniency[4:8].tolist() == [5] * 4
    assert np.allclose(params.temperature.start[12:], 1.0) and np.allclose(params.temperature.end[12:], 0.1)
    with pytest.raises(ValueError, match="unknown hyperparameter"):
        tl.grid_params(kappa=[1])
    with pytest.raises(ValueError, match="kappa"):
        tl.grid_params(leniency=[0])


def test_leniency_above_the_buffer_size_raises():
    cfg = tl.LearnerConfig(exploration="lenient_boltzmann", num_iterations=10, max_leniency=5)
    with pytest.raises(ValueError, match="max_leniency"):
        _sweep(matrix.stag_hunt(), cfg, tl.stack_params([tl.learner_params(leniency=10)]))


def test_function_approximator_drops_in_and_initial_q_needs_a_table():
    import flax.linen as nn

    class LinearQ(nn.Module):  # Q = W 1 + b over a constant feature: two parameters per action
        num_actions: int

        @nn.compact
        def __call__(self):
            return nn.Dense(self.num_actions)(jnp.ones((1,)))[...]

    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=3000, q_module=LinearQ)
    params = tl.stack_params([tl.learner_params(learning_rate=0.02, temperature=1e3, temperature_schedule="constant")] * 16)
    out = _sweep(matrix.prisoners_dilemma(), cfg, params)
    # Uniform play: Q(C) -> -2.5, Q(D) -> -1.5 (as for the table).
    np.testing.assert_allclose(out.q_values.mean(0), [[-2.5, -1.5], [-2.5, -1.5]], atol=0.3)
    with pytest.raises(ValueError, match="initial_q"):
        _sweep(matrix.prisoners_dilemma(), cfg, params, np.zeros((16, 2, 2), np.float32))


def test_faq_step_with_a_greedy_policy_is_scaled_by_beta():
    # epsilon = 0: the played (greedy) action has x_a = 1, so FAQ scales every step by min(beta / 1, 1) = beta.
    game = matrix.prisoners_dilemma()
    alpha, beta, T = 0.05, 0.3, 200
    cfg = tl.LearnerConfig(exploration="epsilon_greedy", num_iterations=T)
    q0 = np.array([[0.5, 0.0], [0.0, 0.3]], np.float32)
    out = _sweep(game, cfg, tl.stack_params([tl.learner_params(learning_rate=alpha, epsilon=0.0, faq_beta=beta)]), q0[None])
    q = q0.astype(np.float64).copy()
    payoffs = game.payoffs_np.astype(np.float64)
    for _ in range(T):
        a = [int(np.argmax(q[0])), int(np.argmax(q[1]))]
        r = payoffs[:, a[0], a[1]]
        for p in range(2):
            q[p, a[p]] += alpha * beta * (r[p] - q[p, a[p]])
    np.testing.assert_allclose(out.q_values[0], q, rtol=1e-4, atol=1e-5)


def test_final_window_statistics_match_the_recorded_policies():
    # record_every=1: trajectory[t] is the policy that plays iteration t, so the window is trajectory[T - W : T].
    T, W = 200, 30
    cfg = tl.LearnerConfig(exploration="boltzmann", num_iterations=T, record_every=1, final_window=W)
    params = tl.stack_params([tl.learner_params(learning_rate=0.2, temperature=0.3, temperature_schedule="constant")] * 4)
    out = _sweep(matrix.battle_of_the_sexes(), cfg, params)
    window = out.trajectory[:, T - W : T]
    np.testing.assert_allclose(out.window_min, window.min(1), atol=1e-6)
    np.testing.assert_allclose(out.window_max, window.max(1), atol=1e-6)
    np.testing.assert_allclose(out.window_mean, window.mean(1), atol=1e-5)
    assert tl.LearnerConfig(num_iterations=1000).window == 100
    with pytest.raises(ValueError, match="final_window"):
        tl.LearnerConfig(num_iterations=100, final_window=101)
    with pytest.raises(ValueError, match="faq_beta"):
        tl.learner_params(faq_beta=0.0)


def _binomial_pmf(t: int, p: float) -> np.ndarray:
    from math import lgamma, log

    n = np.arange(t + 1)
    logs = [lgamma(t + 1) - lgamma(k + 1) - lgamma(t - k + 1) + k * log(p) + (t - k) * log(1 - p) for k in n]
    return np.exp(np.asarray(logs))


@pytest.mark.parametrize("exploration, kappa, beta", [("boltzmann", 1, 1.0), ("boltzmann", 1, 0.1), ("lenient_boltzmann", 3, 1.0), ("lenient_boltzmann", 3, 0.1)])
def test_expected_update_rate_in_closed_form(exploration, kappa, beta):
    # Every outcome pays 1 and tau = 1e3 keeps play uniform (x_i = 1/2). Action i is played N_i ~ Bin(t, 1/2)
    # times; each (kappa-th, for the lenient learner) play multiplies 1 - Q_i by 1 - alpha min(beta / x_i, 1)
    # = 1 - alpha w, w = min(2 beta, 1). So E[1 - Q_i(t)] = sum_n Bin(n; t, 1/2) (1 - alpha w)^floor(n / kappa).
    # Tolerance: 4 standard errors of the mean over 2 players x 128 runs.
    alpha, t, runs = 0.02, 300, 128
    cfg = tl.LearnerConfig(exploration=exploration, num_iterations=t, max_leniency=3)
    ones = np.ones((2, 2, 2), np.float32)
    hp = tl.learner_params(learning_rate=alpha, temperature=1e3, temperature_schedule="constant", leniency=kappa, faq_beta=beta)
    out = _sweep(ones, cfg, tl.stack_params([hp] * runs), np.zeros((runs, 2, 2), np.float32))
    gap = 1.0 - out.q_values.astype(np.float64).reshape(-1)
    w = min(2 * beta, 1.0)
    exact = float(np.sum(_binomial_pmf(t, 0.5) * (1 - alpha * w) ** (np.arange(t + 1) // kappa)))
    stderr = gap.std(ddof=1) / np.sqrt(gap.size)
    assert abs(gap.mean() - exact) <= 4 * stderr + 1e-6, (gap.mean(), exact, stderr)


def test_stack_params_puts_each_run_on_a_leading_axis_and_keeps_dtypes():
    runs = [tl.learner_params(learning_rate=0.01 * (i + 1), leniency=i + 1) for i in range(5)]
    stacked = tl.stack_params(runs)
    np.testing.assert_allclose(np.asarray(stacked.learning_rate), [0.01, 0.02, 0.03, 0.04, 0.05], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(stacked.leniency), [1, 2, 3, 4, 5])
    for one, many in zip(jax.tree.leaves(runs[0]), jax.tree.leaves(stacked)):
        assert many.shape == (5,) + one.shape and many.dtype == one.dtype
    with pytest.raises(ValueError, match="at least one"):
        tl.stack_params([])
