"""Generic alpha-beta (`jaxgames.search.alphabeta`) on Dots-and-Boxes.

References: the exact retrograde solver (checked against an independent
plain-Python minimax and OpenSpiel in ``test_search_solver.py``; it shares
no code with the generic search, which steps `env.step` only): from a
position, the optimal final box margin for the player to move is the score
difference so far plus the solver's value of the edge set. Small positions
are worked by hand below.

1x2 board edge numbering (OpenSpiel): h(0,0)=0, h(0,1)=1, h(1,0)=2, h(1,1)=3,
v(0,0)=4, v(0,1)=5, v(0,2)=6; box 0 = {0, 2, 4, 5}, box 1 = {1, 3, 5, 6}.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.games.dots_and_boxes.search import solver
from jaxgames.search import alphabeta


def score_margin(state) -> float:
    """Box difference so far, from the side of the player to move (the heuristic of El Kaddouri, Rys & Gao,
    "Multi Agent Reinforcement Learning With Dots And Boxes", course report, undated, section 5.1)."""
    scores, p = np.asarray(state.board.scores), int(state.current_player)
    return float(scores[p] - scores[1 - p])


def position_key(state):
    """Everything the margin still to come depends on: edges, scores, player to move."""
    return (np.asarray(state.board.edges).tobytes(), tuple(np.asarray(state.board.scores)), int(state.current_player))


@functools.lru_cache(maxsize=None)
def jitted_step(env):
    return jax.jit(env.step)


def random_position(env, rng, drawn: int):
    """A state after ``drawn`` uniformly random legal moves from the start (scores and player consistent)."""
    state, step = env.init(jax.random.key(0)), jitted_step(env)
    for _ in range(drawn):
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        state = step(state, int(rng.choice(legal)))
    return jax.device_get(state)


@pytest.mark.parametrize("size, use_table", [((1, 2), False), ((2, 2), True)])
def test_full_depth_equals_the_exact_solver(size, use_table):
    margin_env = DotsAndBoxes(*size, utility_margin=True)
    win_env = DotsAndBoxes(*size)  # +1/-1/0 rewards
    sol = solver.solve(*size)
    rng = np.random.default_rng(0)
    E = sol.num_edges
    for _ in range(8):
        state = random_position(margin_env, rng, int(rng.integers(max(0, E - 8), E - 1)))
        exact = sol.final_margin(state)  # the solver's independent answer
        res = alphabeta.search(
            margin_env, state, score_margin, max_depth=E, hash_fn=position_key if use_table else None
        )
        assert res.exact and res.value == exact
        # The chosen move is optimal for the solver too.
        optimal = sol.action_values(state.board.edges)
        assert optimal[res.best_action] == optimal.max()
        res = alphabeta.search(win_env, state, lambda s: 0.0, max_depth=E, hash_fn=position_key if use_table else None)
        assert res.exact and res.value == np.sign(exact)


def test_one_move_win_and_the_extra_turn():
    env = DotsAndBoxes(1, 1)
    state = env.from_dbn("1110", current_player=1)  # the last edge completes the box: player 1 wins
    res = alphabeta.search(env, state, lambda s: 0.0, max_depth=5, time_budget=10.0)  # deepening stops when exact
    assert (res.value, res.best_action, res.depth, res.exact) == (1.0, 3, 1, True)
    # 1x2, all drawn but 5 and 6: drawing 5 takes box 0 and moves again, then 6 takes box 1 (+2);
    # drawing 6 hands both boxes over with 5 (-2).
    env = DotsAndBoxes(1, 2, utility_margin=True)
    state = env.from_dbn("1111100")
    res = alphabeta.search(env, state, lambda s: 0.0, max_depth=5, time_budget=10.0)
    assert (res.value, res.best_action, res.depth, res.exact) == (2.0, 5, 2, True)
    res = alphabeta.search(env, state, lambda s: 0.0, max_depth=5)  # no budget: one search at max_depth
    assert (res.value, res.best_action, res.depth, res.exact) == (2.0, 5, 5, True)


def test_depth_limited_with_a_hand_computed_evaluation():
    """Same 1x2 position at depth 1: the leaves are evaluated, from their own mover's side.

    evaluate = box margin + 3 if player 1 is to move. Drawing 5: box taken, player 0 again,
    scores (1, 0): Q = 0 + (+1) * (1 + 0) = 1. Drawing 6: turn passes to player 1, scores
    (0, 0): Q = 0 + (-1) * (0 + 3) = -3. So value 1 with move 5; a search that ignored the
    change of player would prefer 6 (Q = +3).
    """
    env = DotsAndBoxes(1, 2, utility_margin=True)
    state = env.from_dbn("1111100")
    seen = []

    def evaluate(s):
        seen.append(int(s.current_player))
        return score_margin(s) + (3.0 if int(s.current_player) == 1 else 0.0)

    res = alphabeta.search(env, state, evaluate, max_depth=1)
    assert (res.value, res.best_action, res.depth, res.exact) == (1.0, 5, 1, False)
    assert sorted(seen) == [0, 1]
    # Two plies reach the end of the game: the evaluation is no longer needed.
    res = alphabeta.search(env, state, evaluate, max_depth=2)
    assert (res.value, res.best_action, res.exact) == (2.0, 5, True)


def test_deadline_ordering_hook_and_one_compile_per_game():
    env = DotsAndBoxes(3, 3, utility_margin=True)
    state = env.init(jax.random.key(0))
    alphabeta.search(env, state, score_margin, max_depth=1)  # compile outside the budget
    res = alphabeta.search(env, state, score_margin, max_depth=24, time_budget=0.3, hash_fn=position_key)
    assert 1 <= res.depth < 24 and not res.exact and res.seconds < 3.0
    assert np.asarray(state.legal_action_mask)[res.best_action]
    # The ordering hook decides what is searched: only edge 7 offered -> edge 7 played.
    res = alphabeta.search(env, state, score_margin, max_depth=2, order_moves=lambda s, legal: [7])
    assert res.best_action == 7
    # One compiled expansion per game value: an equal env reuses it.
    assert alphabeta.expander(DotsAndBoxes(3, 3, utility_margin=True)) is alphabeta.expander(env)
    packed, _, _ = alphabeta._host_expander(env, jax.device_get(state), None, None)
    # Traced and compiled once over all the searches above (at most one entry: in a long run of the whole suite,
    # jax's process-wide cache of compiled calls may already have dropped it, as in a one-core run of 1,263 tests).
    assert packed._cache_size() <= 1


def test_terminal_root_and_bad_input():
    env = DotsAndBoxes(1, 1)
    done = env.from_dbn("1111")
    res = alphabeta.search(env, done, score_margin, max_depth=3)
    assert (res.value, res.best_action, res.depth) == (0.0, -1, 0)
    state = env.init(jax.random.key(0))
    with pytest.raises(ValueError, match="max_depth"):
        alphabeta.search(env, state, score_margin, max_depth=0)
    with pytest.raises(ValueError, match="time_budget"):
        alphabeta.search(env, state, score_margin, max_depth=2, time_budget=0)
    batch = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 2))
    with pytest.raises(ValueError, match="unbatched"):
        alphabeta.search(env, batch, score_margin, max_depth=2)
