"""Agents: scenario positions worked by hand, and matches whose outcome the rules fix.

1x2 board numbering (OpenSpiel): h(0,0)=0, h(0,1)=1, h(1,0)=2, h(1,1)=3,
v(0,0)=4, v(0,1)=5, v(0,2)=6; box 0 has sides {0, 2, 4, 5}, box 1 {1, 3, 5, 6}.
2x2: the first player wins 3-1 with perfect play (independent plain minimax
in ``test_search_solver.py``).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.agents import RandomAgent
from jaxgames.agents.dots_and_boxes import AlphaBetaAgent, GreedyAgent, PerfectAgent
from jaxgames.evaluation import arena
from jaxgames.games.dots_and_boxes.search.bitboard import bitboard

# Box 0 has three sides (0, 2, 4), box 1 one (1). Capturing with 5 is safe (box 1 gets only
# two sides), after which the mover must open box 1: net 1 - 1 = 0. Drawing 3 or 6 instead
# lets the opponent take both boxes: net -2. So the only good move is 5.
CAPTURE_1X2 = "".join("1" if e in (0, 1, 2, 4) else "0" for e in range(7))


def batch_of(state, n):
    return jax.tree.map(lambda x: jnp.stack([x] * n), state)


def test_greedy_takes_box_then_safe_edge():
    env = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=2)
    state = env.from_dbn(CAPTURE_1X2)
    acts, _ = GreedyAgent().act_batch(env, batch_of(state, 8), jax.random.key(0), np.zeros(8, np.int32), np.ones(8, bool))
    assert set(acts.tolist()) == {5}
    # Empty 2x2: every edge is safe; greedy picks legal edges.
    env22 = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2)
    s = env22.step(env22.init(jax.random.key(0)), 0)  # box 0 has one side
    acts, _ = GreedyAgent().act_batch(env22, batch_of(s, 64), jax.random.key(1), np.zeros(64, np.int32), np.ones(64, bool))
    assert 0 not in acts.tolist()
    # An edge of box 0 would give it a second side: still safe (<= 2 sides, not capturable).
    assert len(set(acts.tolist())) > 3


def test_perfect_player_selfplay_2x2():
    env = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2, utility_margin=True)
    p = PerfectAgent(2, 2)
    res = arena.play_match(env, p, PerfectAgent(2, 2, solution=p.solution), 6, jax.random.key(0))
    # The first mover wins 3-1 every time: margin +2.
    np.testing.assert_array_equal(res.outcome, [1, -1, 1, -1, 1, -1])
    np.testing.assert_array_equal(np.abs(res.returns[:, 0]), 2.0)
    env12 = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=2)
    acts, _ = PerfectAgent(1, 2).act_batch(env12, batch_of(env12.from_dbn(CAPTURE_1X2), 4), jax.random.key(0), np.zeros(4, np.int32), np.ones(4, bool))
    assert set(acts.tolist()) == {5}
    with pytest.raises(ValueError, match="TiB"):
        PerfectAgent(4, 4)


def test_alphabeta_exact_on_2x2_and_scenario():
    env = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2)
    ab = AlphaBetaAgent(depth=12, time_budget=5.0, max_safe_edges=None)
    res = arena.play_match(env, ab, PerfectAgent(2, 2), 4, jax.random.key(0))
    # Searching the whole game, alpha-beta wins when it moves first and loses otherwise.
    np.testing.assert_array_equal(res.outcome, [1, -1, 1, -1])
    env12 = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=2)
    state = jax.device_get(env12.from_dbn(CAPTURE_1X2))
    assert AlphaBetaAgent(depth=3).act(env12, state, np.random.default_rng(0), 0) == 5
    with pytest.raises(ValueError):
        AlphaBetaAgent(depth=0)


def test_alphabeta_respects_its_time_budget_on_5x5():
    """The per-move deadline works: with a 20 ms budget, every early 5x5 decision returns a legal move fast.

    Without the deadline these depth-9 searches take about 0.3-0.5 s each on this
    CPU (measured once by hand), so a bound of 0.2 s fails if the deadline is
    ignored, with room for a loaded machine. The 200 ms requirement at the
    default budget is measured in ``benchmarks/dab_solver.py``: speed targets
    live in benchmarks.
    """
    env = jaxgames.make("dots_and_boxes", num_rows=5, num_cols=5)
    bitboard(5, 5)  # built once per size, outside the per-move budget
    ab = AlphaBetaAgent(time_budget=0.02)
    rng = np.random.default_rng(0)
    state = env.init(jax.random.key(0))
    worst = 0.0
    for action in [0, 30, 12, 45, 7, 50, 22, 3, 36, 58, 17, 40, 25, 1, 33]:
        start = time.perf_counter()
        move = ab.act(env, jax.device_get(state), rng, int(state.current_player))
        worst = max(worst, time.perf_counter() - start)
        assert bool(np.asarray(state.legal_action_mask)[move])
        state = env.step(state, action)
    assert worst < 0.2


def test_mcts_finds_the_capture():
    from jaxgames.agents.mcts import MCTSAgent

    env = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=2)
    state = env.from_dbn(CAPTURE_1X2)
    acts, _ = MCTSAgent(num_simulations=64).act_batch(env, batch_of(state, 4), jax.random.key(0), np.zeros(4, np.int32), np.ones(4, bool))
    assert set(acts.tolist()) == {5}
    with pytest.raises(ValueError):
        MCTSAgent(num_simulations=0)


def test_mcts_extra_turn_sign():
    """A half-open chain of three on 1x3, mover to play: only the capture (edge 7) wins.

    1x3 numbering: h(0,c) = c, h(1,c) = 3 + c, v(0,c) = 6 + c. Edges 0-6 drawn: box 0 has
    three sides. Capturing with 7 keeps the turn (discount +1) and wins 3-0; 8 or 9 hand
    the opponent all three boxes. With a discount of -1 after the capture (the wrong sign)
    the capture's backed-up value flips; tried once by hand, 3 of these 16 searches then
    picked 8 or 9, so 16 consistent 7s test the sign rule.
    """
    from jaxgames.agents.mcts import MCTSAgent

    env = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=3)
    state = env.from_dbn("1111111000")
    acts, _ = MCTSAgent(num_simulations=32).act_batch(env, batch_of(state, 16), jax.random.key(1), np.zeros(16, np.int32), np.ones(16, bool))
    assert set(acts.tolist()) == {7}


def test_agents_refuse_other_games():
    env = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2)
    with pytest.raises(ValueError, match="built for a 1x2"):
        PerfectAgent(1, 2).policy(env, env.init(jax.random.key(0)), jax.random.key(0), 0)
    assert RandomAgent().name == "random"
