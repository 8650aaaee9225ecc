"""The retrograde solver against an independent plain-Python minimax and OpenSpiel.

The reference below rebuilds the board from OpenSpiel's edge numbering
(h(r, c) = r * C + c, v(r, c) = (R + 1) * C + r * (C + 1) + c) on its own and
runs the textbook minimax recursion over frozensets of edges (Torralba,
"Multi-Agent Systems: Adversarial Search and Game Theory", Machine Intelligence
lecture 12, Aalborg University, 2022, "Minimax"): it shares no code with `jaxgames.games.dots_and_boxes.search.solver`. By hand: on
1x1 the second mover takes the only box, so the value of the empty board for
the player to move is -1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.games.dots_and_boxes.search import solver
from jaxgames.games.dots_and_boxes.search.bitboard import bitboard, edge_set_index
from tests.reference.dots_and_boxes_reference import reference_solver


def reference_move_value(ref, drawn: frozenset, e: int) -> int:
    """The reference value of drawing edge ``e`` in ``drawn``."""
    child = drawn | {e}
    gained = sum(1 for b in ref.boxes if e in b and b <= child)
    return gained + ref(child) if gained else -ref(child)


@pytest.mark.parametrize("size", [(1, 1), (1, 2), (2, 1), (2, 2)])
def test_every_state_matches_reference(size):
    ref, E = reference_solver(*size)
    sol = solver.solve(*size)
    expected = np.array([ref(frozenset(e for e in range(E) if s >> e & 1)) for s in range(1 << E)])
    np.testing.assert_array_equal(sol.values.astype(int), expected)


def test_known_values():
    # By hand: 1x1, the second mover wins the box.
    assert solver.solve(1, 1).value("0000") == -1
    # 2x2 from the reference minimax: the first player wins 3-1.
    sol = solver.solve(2, 2)
    assert sol.value("0" * 12) == 2


def test_positions_and_optimal_actions():
    sol = solver.solve(2, 2)
    env = DotsAndBoxes(2, 2)
    ref, E = reference_solver(2, 2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        drawn = set(rng.choice(E, size=rng.integers(0, E), replace=False).tolist())
        dbn = "".join("1" if e in drawn else "0" for e in range(E))
        state = env.from_dbn(dbn)
        assert sol.value(dbn) == sol.value(state) == ref(frozenset(drawn))
        # Optimal actions: exactly the moves whose reference value equals the position's value.
        legal = sorted(set(range(E)) - drawn)
        move_values = {e: reference_move_value(ref, frozenset(drawn), e) for e in legal}
        best = max(move_values.values())
        assert sol.optimal_actions(state) == [e for e in legal if move_values[e] == best]
        av = sol.action_values(dbn)
        assert all(av[e] == solver.ILLEGAL for e in drawn)
        assert all(av[e] == move_values[e] for e in legal)
    assert sol.optimal_actions("1" * 12) == []


def test_optimal_line_in_openspiel():
    """Both sides play the solver's first optimal move in OpenSpiel: the margin is the value."""
    pyspiel = pytest.importorskip("pyspiel")
    for R, C in [(1, 2), (2, 2), (2, 3)]:
        sol = solver.solve(R, C)
        game = pyspiel.load_game(f"dots_and_boxes(num_rows={R},num_cols={C},utility_margin=true)")
        state = game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(sol.optimal_actions(state.dbn_string())[0])
        assert state.returns()[0] == sol.value("0" * sol.num_edges)


def test_bad_input_reports_memory():
    with pytest.raises(ValueError, match=r"1\.0 TiB"):
        solver.solve(4, 4)  # 40 edges: 2^40 bytes
    with pytest.raises(ValueError, match="needs .* but only"):
        solver.solve(3, 3, max_bytes=1 << 20)
    with pytest.raises(ValueError):
        solver.solve(0, 2)
    with pytest.raises(TypeError):
        solver.solve(2.0, 2)
    sol = solver.solve(1, 1)
    with pytest.raises(ValueError, match="4 characters"):
        sol.value("000")
    with pytest.raises(ValueError, match="outside"):
        sol.value(16)


def test_value_matches_openspiel_alpha_beta():
    """OpenSpiel's own alpha-beta (utility_margin: returns are the box margin) on 1x1, 1x2, 2x2.

    2x2 gives +2 for the first player: optimal play ends 3-1 (about 2 s).
    """
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import minimax as os_minimax

    for R, C, expected in [(1, 1, -1), (1, 2, 0), (2, 2, 2)]:
        game = pyspiel.load_game(f"dots_and_boxes(num_rows={R},num_cols={C},utility_margin=true)")
        value, _ = os_minimax.alpha_beta_search(game, maximizing_player_id=0)
        assert value == expected
        assert solver.solve(R, C).value(0) == value


def test_two_dimensional_table_path(monkeypatch):
    """Boards over 30 edges store the table as [2^(E-30), 2^30]; the same code on 2x2 with a 5-bit split."""
    flat = solver.solve(2, 2).values
    monkeypatch.setattr(solver, "LOW_BITS", 5)
    split = solver.solve(2, 2, chunk_size=100)  # another chunk size: a fresh trace with the patched split
    np.testing.assert_array_equal(split.values, flat)


def test_batch_action_values_and_single_compile():
    sol = solver.solve(2, 3, chunk_size=4096)
    # One compiled kernel serves every level of the solve.
    assert solver._level_kernel(2, 3, 4096)._cache_size() == 1
    rng = np.random.default_rng(3)
    edges = rng.random((5, sol.num_edges)) < 0.5
    batch = np.asarray(sol.batch_action_values(jnp.asarray(edges)))
    for row, e in zip(batch, edges):
        np.testing.assert_array_equal(row, sol.action_values(e))
    with pytest.raises(ValueError, match="17 edges"):
        sol.batch_action_values(jnp.zeros((2, 5), bool))


def test_batch_action_values_first_called_under_jit():
    """The device table cached on the first call must be concrete even when that call is traced."""
    sol = solver.solve(1, 2)
    rng = np.random.default_rng(5)
    edges = rng.random((4, sol.num_edges)) < 0.5
    inside = np.asarray(jax.jit(sol.batch_action_values)(jnp.asarray(edges)))
    outside = np.asarray(sol.batch_action_values(jnp.asarray(edges)))  # a leaked tracer would fail here
    for row_in, row_out, e in zip(inside, outside, edges):
        np.testing.assert_array_equal(row_in, sol.action_values(e))
        np.testing.assert_array_equal(row_out, sol.action_values(e))


def test_final_margin_by_hand():
    # 1x2, box 0 complete and owned by player 0 (edges 0, 2, 4, 5), box 1 has sides 5 and 1:
    # player 1 to move must draw 3 or 6, giving box 1 to player 0: final margin for player 1 is -2.
    env = DotsAndBoxes(1, 2)
    state = env.from_dbn("1110110", current_player=1, scores=(1, 0))
    sol = solver.solve(1, 2)
    assert sol.value(state) == -1
    assert sol.final_margin(state) == -2


def test_edge_set_index_one_function_for_every_caller():
    # By hand: bit e is the dbn character e. 1x1 '1100' -> 0b0011; '0001' -> 8.
    assert edge_set_index(np.array([1, 1, 0, 0], bool)) == 3
    assert edge_set_index([0, 0, 0, 1]) == 8
    # 4x4 has 40 edges: the host path is a Python int past int32.
    last = np.zeros(40, bool)
    last[39] = True
    assert edge_set_index(last) == 2**39
    # JAX path: batched, traced under jit and vmap, equal to the hand sum over drawn edges.
    rng = np.random.default_rng(1)
    edges = rng.random((6, 12)) < 0.5
    expected = [sum(2**e for e in range(12) if row[e]) for row in edges]
    np.testing.assert_array_equal(edge_set_index(jnp.asarray(edges)), expected)
    np.testing.assert_array_equal(jax.jit(edge_set_index)(jnp.asarray(edges)), expected)
    np.testing.assert_array_equal(jax.vmap(edge_set_index)(jnp.asarray(edges)), expected)
    assert edge_set_index(jnp.asarray(edges)).dtype == jnp.int32
    # Its callers agree: the solver's index, the bitboard's dbn parser.
    sol = solver.solve(2, 2)
    dbn = "".join("1" if x else "0" for x in edges[0])
    assert sol.index(edges[0]) == sol.index(dbn) == bitboard(2, 2).from_dbn(dbn) == expected[0]
    with pytest.raises(ValueError, match="31 edges"):
        edge_set_index(jnp.zeros(40, bool))
    with pytest.raises(ValueError, match="one position"):
        edge_set_index(edges)
