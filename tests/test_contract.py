"""The shared state contract, run on every registered game, with ``jax_enable_x64`` off and on."""

import pytest

import jaxgames
from jaxgames.testing.api_test import api_test, x64_mode

# Parameters for games whose constructor needs arguments.
GAME_PARAMS = {
    "matrix_game": dict(row_payoffs=[[1.0, 0.0, 2.0], [0.0, 1.0, 0.5]], col_payoffs=[[0.0, 1.0, 0.0], [1.0, 0.0, 3.0]]),
}


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
@pytest.mark.parametrize("name", jaxgames.registered_games())
def test_contract(name, x64):
    """The contract; with x64 on, the state keeps the same dtypes (int32, float32, bool) as with it off."""
    with x64_mode(x64):
        env = jaxgames.make(name, **GAME_PARAMS.get(name, {}))
        assert env.name == name or name == "matrix_game"
        api_test(env, batch_size=4, max_steps=20)


def test_unknown_game_lists_known_ones():
    with pytest.raises(ValueError, match="prisoners_dilemma"):
        jaxgames.make("no_such_game")


@pytest.mark.parametrize("name", jaxgames.registered_games())
def test_envs_are_values(name):
    """Two envs built with the same settings are equal and hash alike; other settings differ."""
    params = GAME_PARAMS.get(name, {})
    a, b = jaxgames.make(name, **params), jaxgames.make(name, **params)
    assert a is not b and a == b and hash(a) == hash(b)
    assert len({a, b}) == 1


def test_env_value_tells_settings_apart():
    assert jaxgames.make("dots_and_boxes", num_rows=2, num_cols=3) != jaxgames.make("dots_and_boxes", num_rows=3, num_cols=2)
    assert jaxgames.make("battlesnake", health_loss=9) != jaxgames.make("battlesnake", health_loss=1)
    assert jaxgames.make("prisoners_dilemma") != jaxgames.make("stag_hunt")
