"""Learning dynamics: fields against OpenSpiel and closed forms, leniency against Monte Carlo."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.dynamics import fields
from jaxgames.games import matrix


def test_replicator_and_boltzmann_q_match_openspiel():
    pytest.importorskip("pyspiel")
    from open_spiel.python.egt import dynamics as egt

    game = matrix.biased_rock_paper_scissors()
    payoffs = game.payoffs_np.astype(np.float64)
    ref = egt.MultiPopulationDynamics(payoffs, [egt.replicator, egt.replicator])
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
        dx, dy = fields.vector_field("replicator", payoffs, jnp.asarray(x), jnp.asarray(y))
        np.testing.assert_allclose(np.concatenate([dx, dy]), ref(np.concatenate([x, y])), atol=1e-6)
        tau = 0.3
        u = payoffs[0] @ y
        dx_b, _ = fields.vector_field("boltzmann_q", payoffs, jnp.asarray(x), jnp.asarray(y), temperature=tau)
        np.testing.assert_allclose(dx_b, egt.boltzmannq(x, u, tau), rtol=1e-4, atol=1e-6)


def test_learning_rate_scales_time():
    game = matrix.battle_of_the_sexes()
    x, y = jnp.array([0.3, 0.7]), jnp.array([0.6, 0.4])
    a = fields.vector_field("lenient_boltzmann", game.payoffs, x, y, temperature=0.5, leniency=3, learning_rate=1.0)
    b = fields.vector_field("lenient_boltzmann", game.payoffs, x, y, temperature=0.5, leniency=3, learning_rate=0.01)
    np.testing.assert_allclose(np.asarray(b[0]), 0.01 * np.asarray(a[0]), rtol=1e-5)


def test_lenient_utility_matches_monte_carlo():
    rng = np.random.default_rng(1)
    a = np.array([[1.0, 3.0, 3.0, -2.0], [0.0, 0.0, 5.0, 1.0]])  # ties on purpose
    y = np.array([0.1, 0.2, 0.3, 0.4])
    for kappa in (1, 2, 5, 10):
        draws = rng.choice(4, p=y, size=(200_000, kappa))
        mc = a[:, draws].max(axis=-1).mean(axis=-1)
        exact = np.asarray(fields.lenient_utility(a, y, kappa))
        np.testing.assert_allclose(exact, mc, atol=0.02)


def test_lenient_with_kappa_one_is_boltzmann_q():
    game = matrix.subsidy_game()
    x, y = jnp.array([0.3, 0.7]), jnp.array([0.55, 0.45])
    a = fields.vector_field("lenient_boltzmann", game.payoffs, x, y, temperature=0.4, leniency=1)
    b = fields.vector_field("boltzmann_q", game.payoffs, x, y, temperature=0.4)
    np.testing.assert_allclose(np.concatenate(a), np.concatenate(b), rtol=1e-5, atol=1e-7)


def test_replicator_rests_at_the_mixed_equilibrium():
    dx, dy = fields.vector_field("replicator", matrix.battle_of_the_sexes().payoffs, jnp.array([0.6, 0.4]), jnp.array([0.4, 0.6]))
    np.testing.assert_allclose(np.concatenate([dx, dy]), 0, atol=1e-7)


def test_rk4_matches_the_logistic_solution():
    # Action 0 always earns 1 more: x' = alpha x (1 - x), so x(t) = 1 / (1 + (1 - x0) / x0 * exp(-alpha t)).
    payoffs = np.stack([np.array([[1.0, 1.0], [0.0, 0.0]])] * 2)
    x0, alpha, T = 0.1, 0.01, 1000
    xs, ys = fields.integrate("replicator", payoffs, jnp.array([x0, 1 - x0]), jnp.array([x0, 1 - x0]),
                              num_iterations=T, num_steps=200, learning_rate=alpha)
    t = np.linspace(0, T, 201)
    exact = 1 / (1 + (1 - x0) / x0 * np.exp(-alpha * t))
    np.testing.assert_allclose(np.asarray(xs)[:, 0], exact, atol=1e-5)


def test_unknown_field_raises():
    with pytest.raises(ValueError, match="kind"):
        fields.vector_field("cross", matrix.stag_hunt().payoffs, jnp.ones(2) / 2, jnp.ones(2) / 2)


def test_q_space_integration_matches_x_space_field_at_constant_temperature():
    game = matrix.battle_of_the_sexes()
    x0, y0, tau, alpha, T = np.array([0.3, 0.7]), np.array([0.6, 0.4]), 0.8, 0.01, 500
    for kappa in (1, 3):
        xs, ys = fields.integrate("lenient_boltzmann" if kappa > 1 else "boltzmann_q", game.payoffs, x0, y0,
                                  num_iterations=T, num_steps=2000, temperature=tau, leniency=kappa, learning_rate=alpha)
        q0 = tau * np.log(np.stack([x0, y0]))
        xq, yq = fields.integrate_q(game.payoffs, q0, num_iterations=T, num_steps=500, temperature=tau,
                                    leniency=kappa, learning_rate=alpha)
        np.testing.assert_allclose(np.asarray(xq)[::5], np.asarray(xs)[::20], atol=2e-4)
        np.testing.assert_allclose(np.asarray(yq)[::5], np.asarray(ys)[::20], atol=2e-4)


def test_expected_q_update_in_closed_form():
    # Battle of the sexes, Q chosen so that x = softmax(Q / tau) = (0.2, 0.8) and y = (0.7, 0.3) exactly.
    payoffs = matrix.battle_of_the_sexes().payoffs_np
    tau, alpha, kappa = 0.5, 0.01, 2
    x, y = np.array([0.2, 0.8]), np.array([0.7, 0.3])
    q = tau * np.log(np.stack([x, y])) + np.array([[1.0], [-2.0]])  # offsets do not change the policy
    u = np.stack([payoffs[0] @ y, payoffs[1].T @ x])  # [[3 * 0.7, 2 * 0.3], [2 * 0.2, 3 * 0.8]]
    for beta, rate in ((None, np.ones((2, 2))), (1.0, np.stack([x, y])), (0.25, np.minimum(np.stack([x, y]), 0.25))):
        got = fields.expected_q_update(payoffs, jnp.asarray(q), temperature=tau, learning_rate=alpha, beta=beta)
        np.testing.assert_allclose(got, alpha * rate * (u - q), rtol=1e-5, atol=1e-7)
    # Lenient: two draws; row player's O pays 3 unless both draws are M (prob 0.3^2), M pays 2 unless both O.
    ulen = np.array([[3 * (1 - 0.3**2), 2 * (1 - 0.7**2)], [2 * (1 - 0.8**2), 3 * (1 - 0.2**2)]])
    got = fields.expected_q_update(payoffs, jnp.asarray(q), temperature=tau, learning_rate=alpha, beta=1.0, leniency=kappa)
    np.testing.assert_allclose(got, alpha * np.stack([x, y]) / kappa * (ulen - q), rtol=1e-5, atol=1e-7)
    # Epsilon-greedy: greedy action gets 1 - eps + eps / 2.
    got = fields.expected_q_update(payoffs, jnp.asarray(q), exploration="epsilon_greedy", epsilon=0.2, learning_rate=alpha, beta=1.0)
    xe = np.array([[0.1, 0.9], [0.9, 0.1]])  # Q-argmax: M for the row player, O for the column player
    ue = np.stack([payoffs[0] @ xe[1], payoffs[1].T @ xe[0]])
    np.testing.assert_allclose(got, alpha * xe * (ue - q), rtol=1e-5, atol=1e-7)


def test_q_learning_field_with_small_beta_is_the_scaled_faq_field():
    # Where every x_i >= beta the FAQ learner's rate is alpha beta for all actions: beta times the Boltzmann-Q field.
    game = matrix.subsidy_game()
    x, y = jnp.array([0.3, 0.7]), jnp.array([0.6, 0.4])
    for kappa, kind in ((1, "boltzmann_q"), (3, "lenient_boltzmann")):
        a = fields.vector_field("q_learning", game.payoffs, x, y, temperature=0.5, beta=0.2, leniency=kappa)
        b = fields.vector_field(kind, game.payoffs, x, y, temperature=0.5, leniency=kappa)
        np.testing.assert_allclose(np.concatenate(a), 0.2 / kappa * np.concatenate(b), rtol=1e-4, atol=1e-7)


def test_learner_means_follow_their_expected_dynamics():
    """Monte Carlo: the mean policy of 256 runs from one start against `integrate_q` over the whole run.

    Prisoner's dilemma from (P(C), P(C)) = (0.8, 0.7), alpha = 0.01, 10,000 iterations. Tolerance at each of
    the 21 recorded times: 4 standard errors of the mean (over runs) + 0.01, an allowance for the O(alpha)
    gap between the mean of a stochastic approximation and its ODE (it halves when alpha halves). The
    idealised FAQ dynamics at the same speed (the curve the figures used to draw for every learner) must be
    off by more than 0.1 for the plain learners, so the test tells the two models apart.
    """
    from jaxgames.learners import tabular as tl

    import jax

    game = matrix.prisoners_dilemma()
    runs, T, rec, alpha = 256, 10_000, 500, 0.01
    start = np.array([[0.8, 0.2], [0.7, 0.3]])
    cases = {  # exploration -> [(kappa, beta, temperature, schedule)]
        "boltzmann": [(1, 1.0, (0.5, 0.05), "linear"), (1, 0.1, (0.5, 0.05), "linear")],
        "lenient_boltzmann": [(3, 1.0, 1.0, "constant"), (3, 0.1, (0.5, 0.05), "linear")],
    }
    for exploration, settings in cases.items():
        cfg = tl.LearnerConfig(exploration=exploration, num_iterations=T, record_every=rec, max_leniency=3)
        hps = [tl.learner_params(learning_rate=alpha, temperature=tau, temperature_schedule=sk, leniency=k, faq_beta=b)
               for k, b, tau, sk in settings]
        params = tl.stack_params([hp for hp in hps for _ in range(runs)])
        q0 = tl.initial_q_from_policy(cfg, np.broadcast_to(start, (len(hps) * runs, 2, 2)), params)
        out = tl.run_sweep(game, cfg, jax.random.split(jax.random.key(7), len(hps) * runs), params, q0, progress=False)
        traj = out.trajectory[..., 0].reshape(len(hps), runs, T // rec + 1, 2)
        for i, ((kappa, beta, _, _), hp, tr) in enumerate(zip(settings, hps, traj)):
            q_start = q0[i * runs]  # tau_0 ln x_0 with this setting's tau_0
            mean, stderr = tr.mean(0), tr.std(0, ddof=1) / np.sqrt(runs)
            tau = lambda t, hp=hp: hp.temperature(t, T)
            own = fields.integrate_q(game.payoffs, q_start, num_iterations=T, num_steps=1000, temperature=tau,
                                     leniency=kappa, learning_rate=alpha, beta=beta)
            own = np.stack([np.asarray(v)[:: rec // 10, 0] for v in own], -1)
            assert np.all(np.abs(mean - own) <= 4 * stderr + 0.01), (exploration, beta, np.abs(mean - own).max())
            if beta == 1.0:
                ideal = fields.integrate_q(game.payoffs, q_start, num_iterations=T, num_steps=1000, temperature=tau,
                                           leniency=kappa, learning_rate=alpha / kappa, beta=None)
                ideal = np.stack([np.asarray(v)[:: rec // 10, 0] for v in ideal], -1)
                assert np.abs(mean - ideal).max() > 0.1, (exploration, np.abs(mean - ideal).max())


def test_field_plots_compile_once():
    # Payoffs and settings are traced: new games and temperatures reuse one compiled field per (kind, grid).
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxgames.dynamics import plots

    fig, ax = plt.subplots()
    before = plots._field_2x2_grid._cache_size()
    for game, tau in ((matrix.subsidy_game(), 0.5), (matrix.stag_hunt(), 0.2), (matrix.battle_of_the_sexes(), 1.0)):
        plots.plot_field_2x2(ax, "q_learning", game.payoffs_np, grid=5, temperature=tau, beta=0.1, leniency=2)
    assert plots._field_2x2_grid._cache_size() - before <= 1
    plt.close(fig)
