"""The exact endgame search (`jaxgames.games.dots_and_boxes.search.endgame`): by hand on 1x1, and against the
retrograde solver's table (the judge, an independent implementation) on random 2x2 and 3x3 positions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.dots_and_boxes import DotsAndBoxes, rules
from jaxgames.games.dots_and_boxes.positions import random_positions
from jaxgames.games.dots_and_boxes.search import endgame, solver


def _search(size, boards, k):
    geom = rules.geometry(*size)
    return jax.jit(jax.vmap(lambda b: endgame.endgame_search(geom, b, k)))(boards)


def _play(size, edges):
    env = DotsAndBoxes(*size)
    state = env.init(jax.random.key(0))
    for e in edges:
        state = env.step(state, jnp.int32(e), jax.random.key(0))
    return state.board


def test_one_box_by_hand():
    """1x1 (edges 0-3). With three edges drawn the mover closes the box: +1, only edge 3 is optimal. With
    two drawn, either move hands the box to the opponent: -1, both moves optimal. With one drawn, the
    mover's move leaves two: +1 for the mover whatever it draws. Over: the score difference from
    ``board.player``'s side, who after the end is the last mover (here the box's winner, +1), and no move."""
    boards = [_play((1, 1), edges) for edges in ([0, 1, 2], [0, 1], [0], [0, 1, 2, 3])]
    batch = jax.tree.map(lambda *x: jnp.stack(x), *boards)
    r = _search((1, 1), batch, 3)
    assert np.asarray(r.exact).tolist() == [True, True, True, True]
    np.testing.assert_array_equal(np.asarray(r.margin), [1.0, -1.0, 1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(r.optimal), [[0, 0, 0, 1], [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 0]])
    r2 = _search((1, 1), batch, 1)
    assert np.asarray(r2.exact).tolist() == [True, False, False, True]
    assert not np.asarray(r2.optimal)[1:3].any() and np.asarray(r2.margin)[1:3].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("size,k", [((2, 2), 8), ((3, 3), 8)])
def test_equals_the_solver_on_random_positions(size, k):
    table = solver.solve(*size)
    boards = random_positions(*size, jax.random.key(3), 400).board
    r = _search(size, boards, k)
    edges = np.asarray(boards.edges)
    exact = np.asarray(r.exact)
    np.testing.assert_array_equal(exact, (~edges).sum(-1) <= k)
    assert exact.sum() > 50 and (~exact).sum() > 50
    av = np.asarray(table.batch_action_values(boards.edges))
    value = av.max(-1)
    scores, player = np.asarray(boards.scores), np.asarray(boards.player)
    rows = np.arange(len(player))
    lead = scores[rows, player] - scores[rows, 1 - player]
    np.testing.assert_array_equal(np.asarray(r.margin)[exact], (lead + value)[exact])
    np.testing.assert_array_equal(np.asarray(r.optimal)[exact], ((av == value[:, None]) & ~edges)[exact])
    assert not np.asarray(r.optimal)[~exact].any() and not np.asarray(r.margin)[~exact].any()


def test_bad_max_free_is_refused():
    board = rules.empty_board(1, 1)
    geom = rules.geometry(1, 1)
    with pytest.raises(ValueError, match="max_free"):
        endgame.endgame_search(geom, board, endgame.MAX_FREE + 1)
    with pytest.raises(ValueError, match="max_free"):
        endgame.endgame_search(geom, board, -1)
    with pytest.raises(TypeError, match="max_free"):
        endgame.endgame_search(geom, board, 2.0)
