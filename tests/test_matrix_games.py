"""Matrix game kernels: payoffs from El Kaddouri et al. and from OpenSpiel, validation, stepping.

Source of the payoffs: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes" (course report, undated),
section 2.1.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.games import matrix


@pytest.mark.parametrize(
    "name, spiel_name",
    [("matching_pennies", "matrix_mp"), ("rock_paper_scissors", "matrix_rps"), ("stag_hunt", "matrix_sh")],
)
def test_payoffs_match_openspiel(name, spiel_name):
    pyspiel = pytest.importorskip("pyspiel")
    ref = pyspiel.load_game(spiel_name)
    env = jaxgames.make(name)
    n, m = env.shape
    assert (n, m) == (ref.num_rows(), ref.num_cols())
    for i in range(n):
        assert env.action_names[0][i] == ref.row_action_name(i)
        for j in range(m):
            assert env.payoffs_np[0, i, j] == ref.row_utility(i, j)
            assert env.payoffs_np[1, i, j] == ref.col_utility(i, j)


def test_paper_payoff_tables():
    # El Kaddouri et al., section 2.1 (row player's payoff, column player's payoff).
    pd = matrix.prisoners_dilemma().payoffs_np
    assert pd[:, 0, 0].tolist() == [-1, -1] and pd[:, 0, 1].tolist() == [-4, 0]
    assert pd[:, 1, 0].tolist() == [0, -4] and pd[:, 1, 1].tolist() == [-3, -3]
    brps = matrix.biased_rock_paper_scissors().payoffs_np
    np.testing.assert_allclose(brps[0], [[0, -0.25, 0.5], [0.25, 0, -0.05], [-0.5, 0.05, 0]])
    np.testing.assert_allclose(brps[1], -brps[0])
    bos = matrix.battle_of_the_sexes().payoffs_np
    assert bos[:, 0, 0].tolist() == [3, 2] and bos[:, 1, 1].tolist() == [2, 3] and bos[:, 0, 1].tolist() == [0, 0]
    sub = matrix.subsidy_game().payoffs_np
    assert sub[0].tolist() == [[12, 0], [11, 10]] and sub[1].tolist() == [[12, 11], [0, 10]]


def test_step_gives_payoffs_and_terminates_under_jit_and_vmap():
    env = jaxgames.make("battle_of_the_sexes")
    keys = jax.random.split(jax.random.key(0), 4)
    states = jax.vmap(env.init)(keys)
    actions = jnp.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    out = jax.jit(jax.vmap(env.step))(states, actions)
    np.testing.assert_array_equal(np.asarray(out.rewards), [[3, 2], [0, 0], [0, 0], [2, 3]])
    assert bool(out.terminated.all())
    np.testing.assert_array_equal(np.asarray(out.last_actions), np.asarray(actions))
    # Own action first in each player's observation.
    np.testing.assert_array_equal(np.asarray(out.observation[1]), [[1, 0, 0, 1], [0, 1, 1, 0]])


def test_illegal_action_in_a_non_square_game_loses():
    env = jaxgames.make("matrix_game", row_payoffs=np.ones((2, 3)), col_payoffs=np.ones((2, 3)))
    state = env.init(jax.random.key(0))
    assert np.asarray(state.legal_action_mask).tolist() == [[True, True, False], [True, True, True]]
    out = jax.jit(env.step)(state, jnp.array([2, 0]))  # the row player has no action 2
    assert bool(out.terminated)
    assert np.asarray(out.rewards).tolist() == [-1.0, 1.0]


@pytest.mark.parametrize(
    "row, col, match",
    [
        ([[1, np.nan], [0, 0]], [[0, 0], [0, 0]], "finite"),
        ([[1, np.inf], [0, 0]], [[0, 0], [0, 0]], "finite"),
        # finite in float64, inf in float32 (float32's largest is about 3.4e38)
        ([[1, 1e39], [0, 0]], [[0, 0], [0, 0]], "finite in float32"),
        ([[1, 0], [0, 0]], [[0, -1e39], [0, 0]], "finite in float32"),
        ([[1, 0], [0, 0]], [[0, 0, 0], [0, 0, 0]], "differ in shape"),
        ([1, 0], [0, 1], "2-D"),
        (np.zeros((3, 2, 2)), None, r"\[2, n, m\]"),
    ],
)
def test_bad_payoffs_raise(row, col, match):
    with pytest.raises(ValueError, match=match):
        matrix.MatrixGame(row, col)


def test_custom_game_from_stacked_payoffs():
    payoffs = np.stack([np.eye(2), 1 - np.eye(2)])
    env = jaxgames.make("matrix_game", row_payoffs=payoffs, name="my_game")
    assert env.name == "my_game" and env.shape == (2, 2) and env.num_actions == 2


@pytest.mark.parametrize(
    "action, error, match",
    [([0, 2], ValueError, "outside"), ([0], ValueError, "shape"), ([0.0, 1.0], TypeError, "integers"),
     ([True, False], TypeError, "integers"), ([-1, 0], ValueError, "outside")],
)
def test_concrete_bad_actions_raise_at_the_python_boundary(action, error, match):
    env = jaxgames.make("stag_hunt")
    state = env.init(jax.random.key(0))
    with pytest.raises(error, match=match):
        env.step(state, np.asarray(action))


@pytest.mark.parametrize("action, error", [(np.array([np.nan, 0.0], np.float32), TypeError), (np.array([2.9, 0.0]), TypeError),
                                           (np.array([True, False]), TypeError), (np.array([[0, 1]]), ValueError)])
def test_traced_bad_actions_raise_at_trace_time(action, error):
    """dtype and shape are static: a float, bool or misshaped action fails when jit traces step."""
    env = jaxgames.make("stag_hunt")
    state = env.init(jax.random.key(0))
    with pytest.raises(error):
        jax.jit(env.step)(state, jnp.asarray(action))
