"""Onitama agents: wins in one, defence, values against an independent minimax, arena strength, jit/vmap, bad input.

Alpha-beta (host) and the batched JAX minimax are both checked against the
plain negamax of the reference.

Expected values: hand-set ASCII positions worked by hand from the rulebook
(which move wins, which capture is poisoned), the plain full-width negamax
of `tests/reference/onitama_reference.py` (its own move generator and its
own copy of the documented evaluation), and a binomial bound for the arena
match (see `test_depth2_beats_random_in_the_arena`).
"""

from __future__ import annotations

import math
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.agents.onitama import (
    AGENTS,
    AlphaBetaAgent,
    MinimaxAgent,
    RandomAgent,
    evaluate,
)
from jaxgames.evaluation import play_match
from jaxgames.games.onitama.search import DISTANCE_WEIGHT, MATERIAL_WEIGHT, MAX_EVALUATION
from tests.reference import onitama_reference as ref

PAPER = jaxgames.make("onitama", action_space="paper")
STEP = jax.jit(PAPER.step)

# Red (bottom, moving up) to move. Red's master on (3, 2) reaches Blue's master
# on (1, 2) with Tiger's two-forward (Way of the Stone); Ox's forward step lets
# the student on (3, 0) take the student on (2, 0) instead (material, no win).
STONE = """
. . . . b
. . B . .
b . . . .
r . R . .
. . . . .
"""
# Red's master on (1, 2) steps forward onto Blue's temple arch (0, 2) with Ox
# (Way of the Stream); Ox also lets the student on (2, 0) take the one on (1, 0).
STREAM = """
. . . . B
b . R . .
r . . . .
. . . . .
. . . . b
"""
# The poisoned capture: Red's master can take the student on (2, 2) (with Ox
# or Boar, forward), but then Blue's student on (0, 2) jumps two down with
# Tiger onto (2, 2) and takes the master. Red has safe moves (its student).
POISON = """
. . b . B
. . . . .
. . b . .
. . R . .
r . . . .
"""


# Red cannot move: Boar and Crab step sideways or forward only, and every such
# square is off the board or Red's own, so Red must pass (giving up a card).
PASS = """
R r r r r
. . . . .
. . b . .
. . . . .
B . . . .
"""
PASS_HANDS = (("Boar", "Crab"), ("Tiger", "Eel"))


def _state(text, hands, side, player=0):
    return PAPER.from_text(text, hands, side, player=player)


def _wins(state, action) -> bool:
    nxt = STEP(state, jnp.int32(action))
    return bool(nxt.terminated) and float(nxt.rewards[int(state.current_player)]) == 1.0


def _reply_wins(state, action) -> bool:
    """After ``action``, the opponent has a move that wins at once."""
    nxt = STEP(state, jnp.int32(action))
    if bool(nxt.terminated):
        return False
    return any(_wins(nxt, b) for b in np.flatnonzero(np.asarray(nxt.legal_action_mask)))


def _captures(state, action) -> bool:
    enemy = np.asarray(state.board.pieces)[1 - int(state.current_player)]
    return int(np.asarray(state.move_target)[action]) in set(enemy[enemy >= 0].tolist())


@pytest.mark.parametrize(
    "text,hands", [(STONE, (("Tiger", "Ox"), ("Crab", "Eel"))), (STREAM, (("Ox", "Horse"), ("Crab", "Eel")))], ids=["stone", "stream"]
)
def test_depth1_takes_a_win_in_one(text, hands):
    state = _state(text, hands, "Crane")
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    # The position is what the comment says: a plain capture and at least one winning move.
    assert any(_captures(state, a) and not _wins(state, a) for a in legal)
    assert any(_wins(state, a) for a in legal)
    agent = AlphaBetaAgent(1)
    for seed in range(3):  # whatever the random tie-break order
        result = agent.search(PAPER, state, np.random.default_rng(seed))
        assert result.value == 1.0 and _wins(state, result.best_action)
        assert _wins(state, agent.act(PAPER, state, np.random.default_rng(seed), 0))


def test_depth1_takes_the_win_in_the_canonical_space_too():
    env = jaxgames.make("onitama")
    state = env.from_text(STONE, (("Tiger", "Ox"), ("Crab", "Eel")), "Crane", player=0)
    action = AlphaBetaAgent(1).act(env, jax.device_get(state), np.random.default_rng(0), 0)
    nxt = jax.jit(env.step)(state, jnp.int32(action))
    assert bool(nxt.terminated) and float(nxt.rewards[0]) == 1.0


def test_depth2_avoids_the_poisoned_capture():
    state = _state(POISON, (("Ox", "Boar"), ("Tiger", "Eel")), "Crane")
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    poisoned = [a for a in legal if _captures(state, a)]
    assert poisoned and all(_reply_wins(state, a) for a in poisoned)  # every capture loses at once
    assert any(not _reply_wins(state, a) for a in legal)  # a safe move exists (the student's)
    shallow = AlphaBetaAgent(1).search(PAPER, state)
    assert shallow.best_action in poisoned  # depth 1 sees only the student it wins
    # Material even after the capture (1 student each); Blue's master is 6 steps from
    # Red's temple, Red's master 2 from Blue's: 0.005 * (6 - 2).
    assert math.isclose(shallow.value, 4 * DISTANCE_WEIGHT)
    must_pass = jax.device_get(_state(PASS, PASS_HANDS, "Crane"))
    assert AlphaBetaAgent(2).act(PAPER, must_pass, np.random.default_rng(0), 0) in PAPER.pass_actions
    for seed in range(3):
        result = AlphaBetaAgent(2).search(PAPER, state, np.random.default_rng(seed))
        assert not _reply_wins(state, result.best_action)
        assert result.value > -1.0


def _random_positions(count: int, seed: int):
    """``(reference Position, env state)`` pairs reached by random play from random deals (no finished games)."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        deal = rng.sample(ref.ORDER, 5)
        env = jaxgames.make("onitama", action_space="paper", deal=deal)
        pos, state = ref.start(deal), jax.jit(env.init)(jax.random.key(0))
        for _ in range(rng.randrange(0, 12)):
            m = rng.choice(ref.moves(pos))
            state = STEP(state, jnp.int32(ref.paper_action(pos, m)))
            pos = ref.play(pos, m)
            if pos.winner is not None:
                break
        if pos.winner is None:
            assert not bool(state.terminated)
            out.append((pos, state))
    return out


def test_alphabeta_equals_plain_minimax():
    positions = _random_positions(6, seed=7)
    must_pass = _state(PASS, PASS_HANDS, "Crane")
    assert not np.any(np.asarray(must_pass.move_mask))  # the position is what the comment says
    positions.append((ref.position(PASS, PASS_HANDS, "Crane", 0), must_pass))
    for i, (pos, state) in enumerate(positions):
        assert math.isclose(evaluate(jax.device_get(state)), ref.evaluate_position(pos, MATERIAL_WEIGHT, DISTANCE_WEIGHT))
        for depth in (1, 2, 3, 4) if i == 5 else (1, 2, 3):
            want = ref.minimax_value(pos, depth, MATERIAL_WEIGHT, DISTANCE_WEIGHT)
            got = AlphaBetaAgent(depth).search(PAPER, state, np.random.default_rng(i))
            assert math.isclose(got.value, want, abs_tol=1e-9), (i, depth, got.value, want)
    # The batched JAX twin (full width, float32) gives the same values, all positions in one call.
    batch = jax.tree.map(lambda *x: np.stack(x), *[jax.device_get(st) for _, st in positions])
    for depth in (1, 3):
        agent = MinimaxAgent(depth)
        got = jax.jit(jax.vmap(lambda st: agent.value(PAPER, st)))(batch)
        want = [ref.minimax_value(pos, depth, MATERIAL_WEIGHT, DISTANCE_WEIGHT) for pos, _ in positions]
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-6)
    # At turn 199 every move ends the game: a win in one is still worth 1, anything else draws (0).
    for text, hands, want in [(STONE, (("Tiger", "Ox"), ("Crab", "Eel")), 1.0), (POISON, (("Ox", "Boar"), ("Tiger", "Eel")), 0.0)]:
        state = PAPER.from_text(text, hands, "Crane", player=0, turn=199)
        pos = ref.position(text, hands, "Crane", 0)
        pos.turn = 199
        for depth in (1, 3):
            assert AlphaBetaAgent(depth).search(PAPER, state).value == want
            assert ref.minimax_value(pos, depth, MATERIAL_WEIGHT, DISTANCE_WEIGHT) == want


def test_evaluation_is_bounded_below_a_win():
    assert MAX_EVALUATION < 1.0
    assert 10 * DISTANCE_WEIGHT < MATERIAL_WEIGHT  # one student outweighs any master-distance difference
    # Four students up, our master 1 step from Blue's temple, Blue's 6 from ours: the largest evaluation.
    best = _state(
        """
        B . . . .
        . . R . .
        r r . r r
        . . . . .
        . . . . .
        """,
        (("Tiger", "Ox"), ("Crab", "Eel")),
        "Crane",
    )
    assert math.isclose(evaluate(jax.device_get(best)), MAX_EVALUATION)


def test_depth2_beats_random_in_the_arena():
    """Depth 2 against uniform random, 40 games, seats alternating: at least 36 wins (90%).

    The threshold is a binomial bound, not a copy of a run: in 200 games with
    other keys depth 2 won 199 (so its win rate p is at least 0.97 with 95%
    confidence, Clopper-Pearson); with p = 0.97 the chance of 5 or more losses
    in 40 games is ``1 - sum_{k<5} C(40,k) 0.03^k 0.97^(40-k)`` = 0.007. Depth 1
    (which does not see the reply) won 168 of 200 (p about 0.84), which would
    pass this threshold with probability 0.21 only: the test tells the two apart.
    """
    result = play_match(PAPER, AlphaBetaAgent(2), RandomAgent(), 40, jax.random.key(2024))
    assert result.timeouts == 0
    assert np.sum(result.a_first) == 20  # seats alternate
    assert result.wins >= 36, result.summary()


@pytest.mark.parametrize("agent", [RandomAgent(), MinimaxAgent(1)], ids=["random", "minimax1"])
def test_jax_agents_under_jit_and_vmap(agent):
    states = jax.jit(jax.vmap(PAPER.init))(jax.random.split(jax.random.key(0), 16))
    stone = _state(STONE, (("Tiger", "Ox"), ("Crab", "Eel")), "Crane")
    states = jax.tree.map(lambda b, one: b.at[0].set(one), states, stone)  # game 0: a win in one
    states = jax.tree.map(lambda b, one: b.at[1].set(one), states, _state(PASS, PASS_HANDS, "Crane"))  # game 1: must pass
    keys = jax.random.split(jax.random.key(1), 16)
    actions = jax.jit(jax.vmap(lambda s, k: agent.policy(PAPER, s, k, s.current_player)))(states, keys)
    assert actions.dtype == jnp.int32 and actions.shape == (16,)
    assert np.all(np.asarray(states.legal_action_mask)[np.arange(16), np.asarray(actions)])
    assert int(actions[1]) in PAPER.pass_actions
    if isinstance(agent, MinimaxAgent):
        assert _wins(stone, int(actions[0]))
        canon = jaxgames.make("onitama")
        state = canon.from_text(STONE, (("Tiger", "Ox"), ("Crab", "Eel")), "Crane", player=0)
        action = jax.jit(lambda s, k: agent.policy(canon, s, k, s.current_player))(state, jax.random.key(0))
        nxt = jax.jit(canon.step)(state, action)
        assert bool(nxt.terminated) and float(nxt.rewards[0]) == 1.0
    # (The arena's host loop calls the same vmapped policy, jitted: test_depth2_beats_random_in_the_arena.)


def test_registry_and_bad_input():
    assert set(AGENTS) == {"random", "alphabeta1", "alphabeta2", "alphabeta3", "alphabeta4", "minimax1", "minimax2", "minimax3"}
    assert AGENTS["minimax2"]().name == "minimax2"
    for depth in (0, 4, True):
        with pytest.raises(ValueError, match="depth"):
            MinimaxAgent(depth)
    assert AGENTS["alphabeta3"]().depth == 3 and AGENTS["alphabeta3"]().name == "alphabeta3"
    assert isinstance(AGENTS["random"](), RandomAgent)
    for depth in (0, 5, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match="depth"):
            AlphaBetaAgent(depth)
    with pytest.raises(ValueError, match="time_budget"):
        AlphaBetaAgent(2, time_budget=0)
    dab = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2)
    dab_state = jax.device_get(dab.init(jax.random.key(0)))
    with pytest.raises(ValueError, match="onitama"):
        AlphaBetaAgent(1).act(dab, dab_state, np.random.default_rng(0), 0)
    with pytest.raises(ValueError, match="onitama"):
        RandomAgent().policy(dab, dab_state, jax.random.key(0), 0)
    with pytest.raises(ValueError, match="onitama"):
        MinimaxAgent(1).policy(dab, dab_state, jax.random.key(0), 0)
