"""Dots-and-Boxes text and SVG rendering; the text is checked against ``str(pyspiel_state)``."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.dots_and_boxes import DotsAndBoxes, render

pyspiel = pytest.importorskip("pyspiel")


@pytest.mark.parametrize("size", [(1, 1), (2, 3), (3, 2)])
def test_text_matches_openspiel_after_every_move(size):
    R, C = size
    env = DotsAndBoxes(R, C)
    game = pyspiel.load_game("dots_and_boxes", {"num_rows": R, "num_cols": C})
    E = env.num_actions
    rng = np.random.default_rng(5)
    order = np.stack([rng.permutation(E) for _ in range(3)]).astype(np.int32)

    def one(acts):
        return jax.lax.scan(lambda s, a: (env.step(s, a),) * 2, env.init(jax.random.key(0)), acts)[1]

    states = jax.jit(jax.vmap(one))(jnp.asarray(order))
    for i in range(order.shape[0]):
        ref = game.new_initial_state()
        assert render.to_text(env, env.init(jax.random.key(0))) == str(ref)
        for t, a in enumerate(order[i]):
            ref.apply_action(int(a))
            state_t = jax.tree.map(lambda x: x[i, t], states)
            assert render.to_text(env, state_t) == str(ref), (i, t)


def test_text_of_an_imported_board_leaves_complete_boxes_blank_as_openspiel():
    env = DotsAndBoxes(2, 2)
    dbn = "101000110000"  # box (0, 0) complete: h(0,0), h(1,0), v(0,0), v(0,1)
    ref = pyspiel.load_game("dots_and_boxes").new_initial_state(dbn)
    assert render.to_text(env, env.from_dbn(dbn, scores=(1, 0))) == str(ref)


def test_state_svg_is_well_formed():
    env = DotsAndBoxes(2, 2)
    state = env.init(jax.random.key(0))
    for a in (0, 2, 6, 7):  # player 0, 1, 0, then player 1 completes box (0, 0)
        state = env.step(state, a)
    svg = render.state_svg(env, state)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    drawn = [e for e in root.iter(ns + "line") if e.get("class") == "edge"]
    assert sorted(int(e.get("data-action")) for e in drawn) == [0, 2, 6, 7]
    assert len([e for e in root.iter(ns + "rect") if e.get("class") == "box"]) == 1
    assert "0 : 1" in svg
    with pytest.raises(ValueError, match="one state"):
        render.state_svg(env, jax.tree.map(lambda x: x[None], state))


def test_game_svg_numbers_every_move(tmp_path):
    env = DotsAndBoxes(2, 3)
    actions = np.random.default_rng(0).permutation(env.num_actions).tolist()
    svg = render.game_svg(env, actions)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    labels = sorted(int(t.text) for t in root.iter(ns + "text") if t.get("class") == "move")
    assert labels == list(range(1, env.num_actions + 1))
    assert len([e for e in root.iter(ns + "rect") if e.get("class") == "box"]) == 6
    (tmp_path / "game.svg").write_text(svg)
    with pytest.raises(ValueError, match="drawn twice"):
        render.game_svg(env, [0, 0])
    with pytest.raises(ValueError, match=r"in \[0, 17\)"):
        render.game_svg(env, [17])
