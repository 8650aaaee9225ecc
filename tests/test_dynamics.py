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
