"""AlphaSnake Zero (Siddiqui et al., sections 3-4): the formulas on hand-worked cases, the curriculum, resume, bad input.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game" (University of Victoria report,
undated). Every expected number is worked out by hand in the test from its
equations (4: power-softmax; 6-7: the bounded backward update; 8: Psi) or
from exact binomial sums; none is copied from the code under test. The
learner runs on a tiny network (4 filters), 7x7 boards and a handful of
games, so one compile serves every learner test.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.evaluation import q_snake as qe
from jaxgames.experiment import ConfigMismatch, parse_config
from jaxgames.games.battlesnake import observe, rules
from jaxgames.games.battlesnake.rules import DOWN, LEFT, RIGHT, UP
from jaxgames.learners import loop
from jaxgames.learners import q_snake as qs
from jaxgames.networks.q_snake import rotated_views
from tests.experiment_helpers import ROOT, assert_help_and_one_line_errors, assert_resume_rules, load_experiment

TINY = qs.QSnakeConfig(
    board_size=7, num_snakes=4, max_turns=30, num_turns=16, features=(4,), num_games=4, batch_size=8, train_steps=2,
    pit_team_games=4, pit_solo_games=4, pit_max_turns=20, eval_every=0, walk_generations=1,
)


_views = jax.jit(rotated_views)  # the network's input: Siddiqui et al.'s views, heads and bodies x 0.1, clipped to [-1, 1]
_facing = jax.jit(rules.facing)


# ----------------------------------------------------------------------------- eq. 4
def test_power_softmax_closed_form_under_jit_and_vmap():
    q = jnp.array([[0.5, 0.25, 0.25], [0.2, 0.4, 0.4], [0.1, 0.3, 0.6]])
    # n = 2: squares (0.25, 0.0625, 0.0625) / 0.375; (0.04, 0.16, 0.16) / 0.36; (0.01, 0.09, 0.36) / 0.46.
    expected = np.array([[2 / 3, 1 / 6, 1 / 6], [1 / 9, 4 / 9, 4 / 9], [1 / 46, 9 / 46, 36 / 46]])
    np.testing.assert_allclose(jax.jit(qs.power_softmax, static_argnums=1)(q, 2.0), expected, rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(lambda v: qs.power_softmax(v, 2.0))(q), expected, rtol=1e-5)
    np.testing.assert_allclose(qs.power_softmax(q[0], 1.0), [0.5, 0.25, 0.25], rtol=1e-6)  # n = 1: v / sum v
    # n large: all the mass on the largest value; a traced n works too
    np.testing.assert_allclose(jax.jit(qs.power_softmax)(q[2], jnp.float32(200.0)), [0, 0, 1], atol=1e-6)
    # a Q-value that rounds to 0 gets a tiny, finite probability (no NaN from log 0)
    p = qs.power_softmax(jnp.array([0.0, 0.5, 0.5]), 4.0)
    assert np.all(np.isfinite(p)) and float(p[0]) < 1e-20 and abs(float(p[1]) - 0.5) < 1e-6


@pytest.mark.parametrize("n", [0, 0.0, -1.5])
def test_power_must_be_positive(n):
    with pytest.raises(ValueError, match="power"):
        qs.power_softmax(jnp.array([0.5, 0.5, 0.5]), n)
    with pytest.raises(ValueError, match="power"):
        qs.QSnakeConfig(power=n)


# ----------------------------------------------------------------------------- eq. 8
def test_psi_on_a_hand_built_step():
    # 7x7, four snakes. A (0) at the left wall facing left; B (1) and C (2) in open space; D (3) already eliminated.
    #   A: head (0, 3), neck (1, 3): facing LEFT; straight runs into the wall.
    #   B: head (3, 5), neck (3, 4): facing UP.   C: head (5, 1), neck (5, 2): facing DOWN.
    board = rules.board_from_bodies(
        [[(0, 3), (1, 3), (2, 3)], [(3, 5), (3, 4), (3, 3)], [(5, 1), (5, 2), (5, 3)], [(6, 6), (6, 5), (6, 4)]], size=7
    )
    board = board.replace(eliminated_cause=board.eliminated_cause.at[3].set(rules.WALL_COLLISION))
    np.testing.assert_array_equal(_facing(board)[:3], [LEFT, UP, DOWN])
    q = jnp.array([[0.5, 0.5, 0.5], [0.2, 0.4, 0.4], [0.1, 0.3, 0.6], [0.9, 0.05, 0.05]])
    rel = jnp.array([observe.STRAIGHT, observe.STRAIGHT, observe.TURN_RIGHT, observe.TURN_LEFT])
    moves = observe.relative_to_absolute(rel, _facing(board))
    np.testing.assert_array_equal(moves[:3], [LEFT, UP, LEFT])  # facing down, turning right is moving left
    after = jax.jit(rules.step)(board, moves, jnp.zeros(49, bool))
    acting = board.alive
    died = acting & ~after.alive
    np.testing.assert_array_equal(died, [True, False, False, False])  # A hit the wall
    logp = jnp.take_along_axis(qs.log_power_softmax(q, 2.0), rel[:, None], axis=1)[:, 0]
    psi = jax.jit(qs.transition_weights)(logp, acting, died)
    # pi_2: A (1/3, 1/3, 1/3), B (1/9, 4/9, 4/9), C (1/46, 9/46, 36/46); D is out (no factor).
    pi_a, pi_b, pi_c = 1 / 3, 4 / 9, 36 / 46
    np.testing.assert_allclose(psi, [0.0, pi_a * pi_c, pi_a * pi_b, 0.0], rtol=1e-5)
    # the same under vmap over a batch of two steps
    both = jax.vmap(qs.transition_weights)(jnp.stack([logp, logp]), jnp.stack([acting, acting]), jnp.stack([died, died]))
    np.testing.assert_allclose(both[1], psi, rtol=1e-6)


# ----------------------------------------------------------------------------- eqs. 5-7
def test_backward_recursion_on_hand_worked_chains():
    """One seat's 15 turns: six chains (win, death, dead turns, clip at 1, truncation, win, unfinished)."""
    far = 10**6
    rows = [
        # (q vector, action, psi, acting, died, won, chain_end)
        ([0.2, 0.5, 0.3], 1, 0.5, 1, 0, 0, 0),  # t0  chain A
        ([0.6, 0.4, 0.1], 1, 0.8, 1, 0, 0, 0),  # t1
        ([0.3, 0.7, 0.2], 2, 0.6, 1, 0, 1, 1),  # t2  A wins
        ([0.6, 0.8, 0.1], 0, 1.0, 1, 0, 0, 0),  # t3  chain B
        ([0.95, 0.2, 0.1], 0, 0.0, 1, 1, 0, 1),  # t4 B dies (Psi 0)
        ([0.0, 0.0, 0.0], 0, 0.0, 0, 0, 0, 0),  # t5  dead, the game goes on
        ([0.0, 0.0, 0.0], 0, 0.0, 0, 0, 0, 0),  # t6
        ([0.9, 0.1, 0.1], 0, 1.0, 1, 0, 0, 0),  # t7  chain C
        ([0.2, 0.3, 0.1], 1, 0.7, 1, 0, 1, 1),  # t8  C wins
        ([0.3, 0.5, 0.4], 2, 0.5, 1, 0, 0, 0),  # t9  chain D
        ([0.6, 0.2, 0.3], 0, 0.8, 1, 0, 0, 1),  # t10 D truncated (turn limit)
        ([0.1, 0.5, 0.1], 1, 1.0, 1, 0, 0, 0),  # t11 chain E
        ([0.2, 0.2, 0.2], 0, 0.9, 1, 0, 1, 1),  # t12 E wins
        ([0.3, 0.3, 0.4], 2, 0.7, 1, 0, 0, 0),  # t13 chain F, still running at the end of the record
        ([0.5, 0.1, 0.1], 0, 0.7, 1, 0, 0, 0),  # t14
    ]
    q, a, psi, acting, died, won, end = (np.array([r[i] for r in rows]) for i in range(7))
    # By hand (eq. 7: Q*(s_t, a_t) = clip(Psi_t [max Q*(s_{t+1}) - max Q(s_{t+1})] + Q(s_t, a_t), 0, 1)):
    #  A: t2 win -> 1; refined (0.3, 0.7, 1) max 1 vs 0.7: +0.3.  t1: 0.8 * 0.3 + 0.4 = 0.64; refined
    #     (0.6, 0.64, 0.1) max 0.64 vs 0.6: +0.04.  t0: 0.5 * 0.04 + 0.5 = 0.52.
    #  B: t4 death -> 0; refined (0, 0.2, 0.1) max 0.2 vs 0.95: -0.75.  t3: 1.0 * -0.75 + 0.6 = -0.15 -> clipped to 0.
    #  C: t8 win -> 1; +0.7.  t7: 1.0 * 0.7 + 0.9 = 1.6 -> clipped to 1.
    #  D: t10 truncated: own prediction 0.6 (E's +0.5 at t11 must not leak across games); t9: 0.5 * 0 + 0.4 = 0.4.
    #  E: t12 win -> 1; +0.8.  t11: 1.0 * 0.8 + 0.5 = 1.3 -> 1.
    #  F: unfinished: own predictions 0.4 (t13), 0.5 (t14), and not complete.
    expected = [0.52, 0.64, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.4, 0.6, 1.0, 1.0, 0.4, 0.5]
    _check_other_recursions(rows)
    args = (jnp.asarray(q, jnp.float32), jnp.asarray(a), jnp.asarray(psi, jnp.float32),
            *(jnp.asarray(x, bool) for x in (acting, died, won, end)))
    taken, vector, dist, complete = jax.jit(qs.chain_targets)(*args)
    np.testing.assert_allclose(taken, expected, atol=1e-6)
    np.testing.assert_allclose(vector[0], [0.2, 0.52, 0.3], atol=1e-6)  # only the taken entry changes
    np.testing.assert_allclose(vector[3], [0.0, 0.8, 0.1], atol=1e-6)
    np.testing.assert_allclose(vector[5], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(dist[:5], [2, 1, 0, 1, 0])
    np.testing.assert_array_equal(dist[7:13], [1, 0, 1, 0, 1, 0])
    assert np.all(np.asarray(dist)[[5, 6, 13, 14]] >= far)
    np.testing.assert_array_equal(complete, [1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0])
    # vmap over seats gives each seat its own chain
    batched = jax.vmap(qs.chain_targets, in_axes=1, out_axes=1)(*(jnp.stack([x, x[::-1]], axis=1) for x in args))
    np.testing.assert_allclose(batched[0][:, 0], expected, atol=1e-6)


def _check_other_recursions(rows):
    """The same chains under ``recursion="unbiased"`` and ``"peng"``, worked by hand."""
    q, a, psi, acting, died, won, end = (np.array([r[i] for r in rows]) for i in range(7))
    args = (jnp.asarray(q, jnp.float32), jnp.asarray(a), jnp.asarray(psi, jnp.float32),
            *(jnp.asarray(x, bool) for x in (acting, died, won, end)))
    # unbiased (eq. 7 with Psi = 1): A: t2 1, +0.3; t1 0.3 + 0.4 = 0.7, refined max 0.7 vs 0.6: +0.1; t0 0.1 + 0.5 = 0.6.
    #   B: t4 0, -0.75; t3 -0.15 -> 0.  C: t8 1, +0.7; t7 1.6 -> 1.  D: t10 own 0.6, +0; t9 0.4.
    #   E: t12 1, +0.8; t11 1.3 -> 1.  F: own 0.4, 0.5.
    unbiased = [0.6, 0.7, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.4, 0.6, 1.0, 1.0, 0.4, 0.5]
    taken, _, _, complete = jax.jit(qs.chain_targets, static_argnames=("recursion", "trace_lambda"))(*args, recursion="unbiased")
    np.testing.assert_allclose(taken, unbiased, atol=1e-6)
    # Peng's Q(lambda), lambda = 0.5: Q*_t = 0.5 max Q(s_{t+1}) + 0.5 Q*_{t+1}.
    #   A: t2 1; t1 0.5 * 0.7 + 0.5 * 1 = 0.85; t0 0.5 * 0.6 + 0.5 * 0.85 = 0.725.
    #   B: t4 0; t3 0.5 * 0.95 + 0 = 0.475.  C: t8 1; t7 0.5 * 0.3 + 0.5 = 0.65.
    #   D: t10 own 0.6; t9 0.5 * 0.6 + 0.5 * 0.6 = 0.6.  E: t12 1; t11 0.5 * 0.2 + 0.5 = 0.6.  F: own 0.4, 0.5.
    peng = [0.725, 0.85, 1.0, 0.475, 0.0, 0.0, 0.0, 0.65, 1.0, 0.6, 0.6, 0.6, 1.0, 0.4, 0.5]
    taken, vector, _, complete2 = qs.chain_targets(*args, recursion="peng", trace_lambda=0.5)
    np.testing.assert_allclose(taken, peng, atol=1e-6)
    np.testing.assert_allclose(vector[0], [0.2, 0.725, 0.3], atol=1e-6)
    np.testing.assert_array_equal(complete2, complete)
    # lambda = 1: the outcome itself (A wins: 1 all along; B dies: 0); lambda = 0: one-step Q-learning, max Q(s_{t+1})
    mc = qs.chain_targets(*args, recursion="peng", trace_lambda=1.0)[0]
    np.testing.assert_allclose(np.asarray(mc)[[0, 1, 2, 3, 4, 9]], [1.0, 1.0, 1.0, 0.0, 0.0, 0.6], atol=1e-6)
    one_step = qs.chain_targets(*args, recursion="peng", trace_lambda=0.0)[0]
    np.testing.assert_allclose(np.asarray(one_step)[[0, 1, 3, 7, 11]], [0.6, 0.7, 0.95, 0.3, 0.2], atol=1e-6)
    for bad in (dict(recursion="sarsa"), dict(recursion="peng", trace_lambda=1.5), dict(recursion="peng", trace_lambda=True)):
        with pytest.raises((ValueError, TypeError), match="recursion|trace_lambda"):
            qs.chain_targets(*args, **bad)


def test_exponential_sampler_gaps():
    # gaps 1, 2, 4, 8, ... from the end: distances 0, 1, 3, 7, 15, 31
    np.testing.assert_array_equal(qs.sample_distances(40), [0, 1, 3, 7, 15, 31])
    np.testing.assert_array_equal(qs.sample_distances(40, gap_growth=3.0), [0, 1, 4, 13])  # gaps 1, 3, 9
    np.testing.assert_array_equal(qs.sample_distances(5, "all"), [0, 1, 2, 3, 4])


# ----------------------------------------------------------------------------- the view
def test_network_view_values_by_hand():
    # 7x7. A (length 3, health 70) head (3, 3) facing UP (neck (3, 2), tail (3, 1));
    # B (length 5) head (5, 5), body down to (5, 1); food at (1, 3).
    board = rules.board_from_bodies(
        [[(3, 3), (3, 2), (3, 1)], [(5, 5), (5, 4), (5, 3), (5, 2), (5, 1)]], size=7, food=[(1, 3)], health=[70, 100]
    )
    v = np.asarray(_views(board)[0])  # A faces up: no rotation; centre (6, 6) is A's head
    assert v[6, 6, 0] == pytest.approx((3 - 3 + 0.5) * 0.1)  # eq. 1, own head
    assert v[4, 8, 0] == pytest.approx((5 - 3 + 0.5) * 0.1)  # B's head: two cells right, two up
    assert v[6, 6, 1] == pytest.approx(3 * 0.1) and v[7, 6, 1] == pytest.approx(2 * 0.1)  # eq. 2: turns until it leaves
    assert v[4, 8, 1] == pytest.approx(5 * 0.1)
    assert v[6, 2, 1] == 1.0 and v[6, 3, 1] == 0.0  # x = -1 is wall, x = 0 is free
    assert v[6, 4, 2] == pytest.approx((101 - 70) / 100)  # eq. 3, food two cells left
    long = rules.board_from_bodies([[(3, y) for y in range(6, -1, -1)] + [(4, y) for y in range(0, 7)]], size=7)
    assert float(jnp.max(_views(long))) == 1.0  # a 14-long body saturates at the wall's value


# ----------------------------------------------------------------------------- reflections
def _mirror(points, size):
    return [(size - 1 - x, y) for x, y in points]




def test_reflection_is_the_mirrored_position():
    size = 7
    bodies = [[(2, 3), (1, 3), (1, 2), (1, 1)], [(5, 5), (5, 4), (4, 4)]]  # A faces RIGHT; B faces UP
    food = [(3, 5), (4, 1)]
    board = rules.board_from_bodies(bodies, size=size, food=food, health=[70, 90])
    mirror = rules.board_from_bodies([_mirror(b, size) for b in bodies], size=size, food=_mirror(food, size), health=[70, 90])
    np.testing.assert_array_equal(_facing(board), [RIGHT, UP])
    np.testing.assert_array_equal(_facing(mirror), [LEFT, UP])
    views = _views(board)
    mviews = _views(mirror)
    for s in range(2):
        # the rotated view of the mirrored board is the mirrored rotated view
        np.testing.assert_array_equal(mviews[s], observe.reflect(views[s]))
        assert not np.array_equal(views[s], mviews[s])  # the board is not symmetric: the check has teeth
    # turning left facing right goes up; in the mirror image that is turning right facing left
    assert int(observe.relative_to_absolute(jnp.int32(observe.TURN_LEFT), jnp.int32(RIGHT))) == UP
    assert int(observe.relative_to_absolute(jnp.int32(observe.TURN_RIGHT), jnp.int32(LEFT))) == UP
    # targets: the mirrored chain (left and right swapped in the Q-vectors and the actions) refines to the mirrored vectors
    q = jnp.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.4]])
    a, psi = jnp.array([0, 2]), jnp.array([0.5, 0.3])
    flags = (jnp.array([True, True]), jnp.array([False, True]), jnp.array([False, False]), jnp.array([False, True]))
    _, vec, _, _ = qs.chain_targets(q, a, psi, *flags)
    _, mvec, _, _ = qs.chain_targets(q[:, ::-1], 2 - a, psi, *flags)
    np.testing.assert_allclose(mvec, vec[:, ::-1], atol=1e-7)
    # and reflect_example maps (view, target, mask) of the position to those of its mirror image
    mask = jnp.array([1.0, 0.0, 0.0])
    v2, t2, m2 = jax.jit(qs.reflect_example)(views[0], vec[0], mask, jnp.bool_(True))
    np.testing.assert_array_equal(v2, mviews[0])
    np.testing.assert_allclose(t2, mvec[0], atol=1e-7)
    np.testing.assert_array_equal(m2, [0.0, 0.0, 1.0])
    v3, t3, m3 = qs.reflect_example(views[0], vec[0], mask, jnp.bool_(False))
    np.testing.assert_array_equal(v3, views[0])
    np.testing.assert_array_equal(t3, vec[0])


# ----------------------------------------------------------------------------- the pit
def _exact_threshold(team, solo, snakes, alpha):
    """The smallest score k with P(W >= k) < alpha, in exact fractions: W = (snakes - 1) Bin(team, 1/2) + the sum of
    ``solo`` ranks uniform on 0..snakes-1 (counted by enumerating rank sums one game at a time); None if none."""
    step = snakes - 1
    ways = {0: Fraction(1)}
    for _ in range(solo):
        nxt = {}
        for total, p in ways.items():
            for r in range(snakes):
                nxt[total + r] = nxt.get(total + r, Fraction(0)) + p / snakes
        ways = nxt
    pmf = {}
    for i in range(team + 1):
        for total, p in ways.items():
            w = step * i + total
            pmf[w] = pmf.get(w, Fraction(0)) + Fraction(math.comb(team, i), 2**team) * p
    top = step * (team + solo)
    for k in range(top + 1):
        if sum(p for w, p in pmf.items() if w >= k) < Fraction(alpha).limit_denominator(10**9):
            return k
    return None


def test_pit_threshold_small_cases_by_hand():
    # 10 team games, 3 points a win: P(W >= 28) = P(10 wins) = 1/1024 < 1% <= P(W >= 27) = 11/1024 -> 28.
    assert qs.pit_threshold(10, 0, 4, 0.01) == 28
    # 2 solo games, ranks uniform on 0..3: P(sum = 6) = 1/16 < 0.1 <= P(sum >= 5) = 3/16 -> 6.
    assert qs.pit_threshold(0, 2, 4, 0.1) == 6
    # 5 solo games: P(15) = 1/1024; P(>= 14) = (1 + 5)/1024 < 1%; P(>= 13) = (1 + 5 + 5 + 10)/1024 = 2.05% -> 14.
    assert qs.pit_threshold(0, 5, 4, 0.01) == 14
    # 2 team + 1 solo: P(W >= 7) = P(2 wins) P(rank >= 1) = 1/4 * 3/4 = 0.1875 < 0.2;
    # P(W >= 6) = 1/4 + P(1 win) P(rank 3) = 1/4 + 1/2 * 1/4 = 0.375 -> 7.
    assert qs.pit_threshold(2, 1, 4, 0.2) == 7
    with pytest.raises(ValueError, match="pit_team_games=1, pit_solo_games=1"):
        qs.pit_threshold(1, 1, 4, 0.05)  # the top score, a win and rank 3, happens 1/8 of the time
    with pytest.raises(ValueError, match="pit"):
        qs.QSnakeConfig(pit_team_games=4, pit_solo_games=0)  # 4 wins of 4: 1/16 >= 1%


@pytest.mark.parametrize("team,solo,snakes", [(64, 64, 4), (30, 0, 2), (0, 40, 4), (17, 23, 6)])
def test_pit_threshold_equals_the_exact_tail(team, solo, snakes):
    k = qs.pit_threshold(team, solo, snakes, 0.01)
    assert k == _exact_threshold(team, solo, snakes, 0.01)
    tail = qs._tail_at_least(qs.pit_score_pmf(team, solo, snakes))
    assert tail[k] < 0.01 <= tail[k - 1]


def test_pit_threshold_table_counts_only_decided_team_games():
    table = qs.pit_threshold_table(10, 4, num_snakes=4, alpha=0.01)
    assert table.shape == (11,)
    # no team game decided, 4 solo ranks: P(12) = 1/256 < 1% <= P(>= 11) = 5/256 -> 12
    assert table[0] == 12
    # every team game decided: the pit's usual threshold
    assert table[10] == qs.pit_threshold(10, 4, 4, 0.01)
    assert np.all(np.diff(table) >= 0)  # more decided games, never a lower bar
    # 6 team games and no solo game: even 6 wins of 6 (score 18) has probability 1/64 >= 1%: unreachable (19)
    alone = qs.pit_threshold_table(6, 0, num_snakes=4, alpha=0.01)
    assert alone[6] == 19 and alone[0] == 1


def test_pit_pass_probability_by_hand():
    uniform = [0.25] * 4
    # one team game, a score of 3 needed: the team win rate itself
    assert qs.pit_pass_probability(1, 0, 3, 0.7, uniform) == pytest.approx(0.7)
    # 2 team + 1 solo, score >= 7: both team games won and rank >= 1: p^2 (1 - q0)
    p, q = 0.6, [0.1, 0.2, 0.3, 0.4]
    assert qs.pit_pass_probability(2, 1, 7, p, q) == pytest.approx(p * p * 0.9)
    # score >= 4: two wins (any rank), or one win (2 p (1 - p)) and rank >= 1; with no win the score is at most 3
    assert qs.pit_pass_probability(2, 1, 4, p, q) == pytest.approx(p * p + 2 * p * (1 - p) * 0.9)
    assert qs.pit_pass_probability(2, 1, 0, p, q) == pytest.approx(1.0)
    assert qs.pit_pass_probability(2, 1, 10, p, q) == 0.0  # above the top score, 9
    # 10 team games at 1/2 needing all 10 (test above): 1/1024, the false-promotion rate
    assert qs.pit_pass_probability(10, 0, 28, 0.5, uniform) == pytest.approx(1 / 1024)
    for bad, match in ((dict(team_games=-1), "team_games"), (dict(team_rate=1.5), "team_rate"),
                       (dict(solo_rank_pmf=[0.5, 0.5, 0.5, 0.5]), "solo_rank_pmf")):
        kw = {**dict(team_games=2, solo_games=1, threshold=2, team_rate=0.5, solo_rank_pmf=uniform), **bad}
        with pytest.raises(ValueError, match=match):
            qs.pit_pass_probability(**kw)


def test_rank_pmf_with_edge_by_hand():
    # S = 4, edge 0.1: (1 + 0.24 (r - 1.5)) / 4 = 0.16, 0.22, 0.28, 0.34; mean rank 1.8 = 3 x 0.6
    pmf = qs.rank_pmf_with_edge(4, 0.1)
    np.testing.assert_allclose(pmf, [0.16, 0.22, 0.28, 0.34])
    assert float(np.dot(pmf, np.arange(4))) == pytest.approx(1.8)
    np.testing.assert_allclose(qs.rank_pmf_with_edge(4, 0.0), [0.25] * 4)
    with pytest.raises(ValueError, match="too large"):
        qs.rank_pmf_with_edge(4, 0.3)  # rank 0: 1 + 12 x 0.3 x (-1.5) / 5 = -0.08


def test_pit_power_grows_with_the_candidate_edge():
    k = qs.pit_threshold(64, 64, 4, 0.01)
    powers = [qs.pit_pass_probability(64, 64, k, 0.5 + d, qs.rank_pmf_with_edge(4, d)) for d in (0.0, 0.05, 0.1, 0.2)]
    assert powers[0] < 0.01  # the threshold's own guarantee for an equal network
    assert all(a < b for a, b in zip(powers, powers[1:]))
    assert powers[-1] > 0.99


def test_solo_ranks_on_hand_built_final_boards():
    """Rank = others outlasted + a uniform draw over the others tied with the candidate (seat marked in ``mask``)."""
    from types import SimpleNamespace

    F, T = False, True
    final = SimpleNamespace(
        turn=jnp.array([10, 20, 12, 9]),
        alive=jnp.array([[F, T, T, F], [F, T, T, T], [F, F, F, T], [F, F, F, T]]),
        eliminated_on_turn=jnp.array([[5, 0, 0, 7], [3, 0, 0, 0], [8, 8, 4, 0], [2, 5, 9, 0]]),
    )
    mask = jnp.array([[T, F, F, F], [F, F, T, F], [F, T, F, F], [F, F, F, T]])
    # 0: out on turn 5, first of all -> 0; 1: alive at the limit with 2 others, 1 out before -> 1, 2 or 3;
    # 2: out on turn 8 with seat 0, seat 2 out on 4 -> 1 or 2; 3: the last snake -> 3
    allowed = [{0}, {1, 2, 3}, {1, 2}, {3}]
    ranks = np.asarray(jax.vmap(lambda k: qs.solo_ranks(final, mask, k))(jax.random.split(jax.random.key(0), 3000)))
    for g, want in enumerate(allowed):
        values, counts = np.unique(ranks[:, g], return_counts=True)
        assert set(values.tolist()) == want
        np.testing.assert_allclose(counts / 3000, 1 / len(want), atol=0.04)  # ties broken uniformly


def test_an_equal_network_takes_every_solo_rank_equally_often():
    """The null of `pit_score_pmf`: a network against itself (random seats) has a uniform solo rank and wins half the team games.

    512 games per format of a tiny untrained network against itself on 7x7
    boards: each rank's count within 4 standard deviations of 128
    (Binomial(512, 1/4): sd 9.8), the candidate's seat uniform too, and its
    2v2 wins within 4 sd of half the decided games. Under the old rule
    (a solo win counts, its fair share 1/4 of the decided games) the share
    of wins among decided games is what the stopping rule and turn limit
    bias; the rank is not.
    """
    learner = qs.QSnakeLearner(TINY)
    state = learner.init(jax.random.key(21))
    G = 512
    _, board, mask = learner.versus(state.best, state.best, jax.random.key(22), G, 1, learner.pit_env.default_params, True)
    ranks = np.asarray(qs.solo_ranks(board, mask, jax.random.key(23)))
    seats = np.argmax(np.asarray(mask), axis=1)
    for counts in (np.bincount(ranks, minlength=4), np.bincount(seats, minlength=4)):
        assert counts.shape == (4,) and np.all(np.abs(counts - G / 4) < 4 * math.sqrt(G * 0.25 * 0.75)), counts
    wins, board, mask = learner.versus(state.best, state.best, jax.random.key(24), G, 2, learner.pit_env.default_params, True)
    decided = int(np.sum(qs.decided(board, mask)))
    assert decided > G // 4 and abs(int(np.sum(wins)) - decided / 2) < 4 * math.sqrt(decided / 4), (int(np.sum(wins)), decided)


# ----------------------------------------------------------------------------- the learner
def test_curriculum_changes_health_loss_through_params_without_retracing():
    learner = qs.QSnakeLearner(TINY)
    state = learner.init(jax.random.key(1))
    state, m0 = learner.update(state)  # generation 0: learn to walk, health loss 9
    traces = dict(qs.TRACES)
    state, m1 = learner.update(state)  # generation 1: health loss 1
    assert dict(qs.TRACES) == traces  # the same compiled functions, no new trace
    assert (m0["health_loss"], m1["health_loss"]) == (9, 1)
    # no snake can eat on its first move (initial food is two moves away): health after turn 1 is 100 - loss
    assert (m0["first_turn_health"], m1["first_turn_health"]) == (91.0, 99.0)
    assert int(state.generation) == 2
    assert m0["decisions"] > 0 and m0["samples"] > 0 and np.isfinite(m0["loss_mean"])
    assert m0["deaths"] <= 4 * m0["games"] and m0["games"] >= 1 and m0["generation"] == 0


def _train(config, num_iterations, seed, checkpoint_dir):
    learner = qs.QSnakeLearner(config)
    return loop.train(learner, num_iterations=num_iterations, key=jax.random.key(seed), checkpoint_dir=checkpoint_dir,
                      evaluations=qe.hooks(learner))


def _assert_resume_equals_straight(config, seed, tmp_path):
    """Two generations in one call, and one call of one generation resumed by another: the same state and history."""
    straight = _train(config, 2, seed, tmp_path / "a")
    first = _train(config, 1, seed, tmp_path / "b")
    assert first.resumed_from == 0 and len(first.history) == 1
    resumed = _train(config, 2, seed, tmp_path / "b")
    assert resumed.resumed_from == 1 and len(resumed.history) == 2
    # bitwise: every array of the state (candidate, optimiser, best, reference, generation, keys)
    a, b = jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state)
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    timing = {"seconds", "decisions_per_second"}
    for r1, r2 in zip(straight.history, resumed.history, strict=True):
        assert {k: v for k, v in r1.items() if k not in timing} == {k: v for k, v in r2.items() if k not in timing}
        assert "pit_score" in r1 and "accepted" in r1  # the pit hook's figures join the history
    assert straight.evaluations == resumed.evaluations
    return straight, resumed


def test_resume_equals_an_uninterrupted_run(tmp_path):
    _, resumed = _assert_resume_equals_straight(TINY, 5, tmp_path)
    # nothing more to do: a third call restores and returns
    again = _train(TINY, 2, 5, tmp_path / "b")
    assert again.resumed_from == 2 and len(again.history) == 2


# ----------------------------------------------------------------------------- bad input
def _listing(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


def test_checkpoint_of_another_board_or_network_is_refused_untouched(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    stored = {**TINY.to_json(), "seed": 0}
    (folder / "config.json").write_text(json.dumps(stored))
    before = _listing(folder)
    other_board = qs.QSnakeConfig(**{**TINY.to_json(), "board_size": 8, "features": TINY.features})
    with pytest.raises(ValueError, match="board_size=7 there, 8 here"):
        qs.check_checkpoint_shapes(other_board, folder)
    other_net = qs.QSnakeConfig(**{**TINY.to_json(), "features": (8, 8)})
    with pytest.raises(ValueError, match=r"features=\[4\] there, \[8, 8\] here"):
        qs.check_checkpoint_shapes(other_net, folder)
    assert _listing(folder) == before
    with pytest.raises(ConfigMismatch):  # the driver refuses the folder as well (leaving only its lock file)
        loop.train(qs.QSnakeLearner(other_net), num_iterations=1, key=jax.random.key(0), checkpoint_dir=folder)
    assert [f for f in _listing(folder) if f != ".lock"] == before


def test_batch_that_does_not_fit_is_refused_before_anything_is_written(tmp_path):
    huge = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "num_games": 10**8})
    with pytest.raises(ValueError, match="num_games=100000000 does not fit"):
        qs.QSnakeLearner(huge)  # before loop.train could claim a folder
    big_batch = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "batch_size": 10**8})
    with pytest.raises(ValueError, match="batch_size=100000000 does not fit"):
        qs.check_memory(big_batch)
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.parametrize(
    "override,match",
    [
        (dict(num_snakes=3), "num_snakes"),
        (dict(features=()), "features"),
        (dict(features=(4, 0)), "features"),
        (dict(walk_health_loss=2), "walk_health_loss"),
        (dict(sampler="uniform"), "sampler"),
        (dict(gap_growth=1.0), "gap_growth"),
        (dict(gap_growth=float("inf")), "gap_growth"),
        (dict(power=float("nan")), "power"),
        (dict(learning_rate=float("inf")), "learning_rate"),
        (dict(pit_alpha=float("nan")), "pit_alpha"),
        (dict(num_turns=True), "num_turns"),
        (dict(num_games=0), "num_games"),
        (dict(learning_rate=-1e-3), "learning_rate"),
        (dict(pit_alpha=1.5), "pit_alpha"),
        (dict(recursion="td"), "recursion"),
        (dict(trace_lambda=-0.1), "trace_lambda"),
    ],
)
def test_bad_settings_name_the_value(override, match):
    with pytest.raises((ValueError, TypeError), match=match):
        qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, **override})


def test_experiment_rejects_unknown_settings_and_bad_values_before_writing(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("q_snake_experiment", os.path.join(os.path.dirname(__file__), "..", "experiments", "q_snake.py"))
    exp = importlib.util.module_from_spec(spec)
    sys.modules["q_snake_experiment"] = exp  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(exp)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="unknown key 'nope'"):
        parse_config(exp.Config, ["nope=1", f"out={out}"])
    with pytest.raises(ValueError, match="power"):
        parse_config(exp.Config, ["power=0", f"out={out}"])
    with pytest.raises(ValueError, match="baseline_games"):
        parse_config(exp.Config, ["baseline_games=6", f"out={out}"])
    with pytest.raises(ValueError, match="num_games=100000000 does not fit"):
        exp.run(parse_config(exp.Config, ["num_games=100000000", f"out={out}"]))
    assert not out.exists()


def test_experiment_readme_states_the_pit_power():
    import importlib.util

    spec = importlib.util.spec_from_file_location("q_snake_experiment", os.path.join(os.path.dirname(__file__), "..", "experiments", "q_snake.py"))
    exp = importlib.util.module_from_spec(spec)
    sys.modules["q_snake_experiment"] = exp
    spec.loader.exec_module(exp)
    config = parse_config(exp.Config, ["pit_team_games=10", "pit_solo_games=0"])
    history = [dict(generation=g, accepted=0, pit_threshold=28, pit_score=s, pit_decided_team=d)
               for g, (s, d) in enumerate(((9, 8), (15, 10), (21, 9)))]
    (line, blank) = exp._pit_power(config, history)
    # 10 team games, 3 points a win, all 10 needed (score 28): 0.5^10 = 0.001, 0.55^10 = 0.0025 -> "0.00", 0.6^10 = 0.006
    assert "expected score 15, threshold 28" in line and "probability 0.001" in line
    assert "5 points more often (`q_snake.rank_pmf_with_edge`) with 0.00" in line and "10 points with 0.01" in line
    # decided 8, 10, 9: mean 9.0 of 10; an equal network expects 3/2 per decided game: 12, 15, 13.5 -> 13.5
    assert "on average 9.0 of 10 were decided, where an equal network's expected score is 13.5" in line
    assert "mean 15.0, range 9-21" in line and blank == "" and "earlier rule" not in line
    # rows written by the earlier pit (no score) are named and left out
    (mixed, _) = exp._pit_power(config, [dict(generation=0, accepted=1, pit_threshold=10, pit_wins_team=4), *history])
    assert "1 generations were pitted by the earlier rule" in mixed and "mean 15.0, range 9-21" in mixed
    # after a promotion at generation 0: generations 1 and 2 scored 15 and 21 against 15 and 13.5 -> 0 of 2 below
    history[0]["accepted"] = 1
    table = exp._promotion_segments(config, history)
    assert "| 0 | 2 | 18.0 | 14.2 | 0 of 2 |" in table


def test_experiment_help_errors_and_resume_rules(tmp_path, capsys):
    """``--help`` documents every setting (the learner's nested as ``learner.<name>``); a bad value is one
    line and exit 2; a folder accepts a longer run and refuses another learner setting, naming its dotted key."""
    exp = load_experiment("q_snake")
    assert_help_and_one_line_errors(exp, ["learner.power=0"], r"^experiments/q_snake\.py: error: power must be", capsys)
    page = subprocess.run([sys.executable, "experiments/q_snake.py", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert page.returncode == 0 and "\n  learner.num_games: int = 32\n" in page.stdout and "  generations: int = 4" in page.stdout
    config = parse_config(exp.Config, ["num_games=64", "generations=3"])  # the flat spelling reaches the learner
    assert config.learner.num_games == 64 and config.learner.num_turns == 96 and config.generations == 3
    assert_resume_rules(exp, tmp_path / "run", ["features=8"], ["generations=9", "baseline_games=8", "ship=trained", "ship_dir=elsewhere"],
                        ["learner.num_games=16"], "learner.num_games")


# ----------------------------------------------------------------------------- the agent and its weights
def test_agent_plays_the_networks_greedy_move_and_flags_untrained_weights(tmp_path):
    from jaxgames.agents import q_snake as qa
    from jaxgames.networks.q_snake import QSnakeNet, init_variables

    net = QSnakeNet(features=(4,))
    variables = init_variables(net, jax.random.key(3), (13, 13, 3))
    qa.save_weights(variables, tmp_path, {"features": [4], "board_size": 7, "trained": False})
    with pytest.warns(qa.UntrainedWeightsWarning, match="UNTRAINED"):
        agent = qa.QSnakeAgent(weights_dir=tmp_path)
    assert agent.name == "q_snake(untrained)" and not agent.trained
    board = rules.board_from_bodies([[(2, 3), (1, 3), (1, 2)], [(5, 5), (5, 4), (5, 3)]], size=7, food=[(4, 1)])
    for player in (0, 1):
        view = _views(board)[player]
        q = net.apply(variables, view[None], train=False)[0]
        expected = observe.relative_to_absolute(jnp.argmax(q), _facing(board)[player])
        got = jax.jit(lambda b, p: agent.policy(None, _wrap(b), jax.random.key(0), p))(board, jnp.int32(player))
        assert int(got) == int(expected)
    # another board size: the view is padded with walls (smaller) or cropped (larger) to the network's 13x13
    small = np.asarray(_views(rules.board_from_bodies([[(3, 3), (3, 2), (3, 1)]], size=7))[0])
    padded = np.asarray(qa.fit_view(jnp.asarray(small), 21))
    np.testing.assert_array_equal(padded[4:17, 4:17], small)
    assert np.all(padded[:4, :, 1] == 1.0) and np.all(padded[:4, :, 0] == 0) and np.all(padded[:4, :, 2] == 0)
    np.testing.assert_array_equal(qa.fit_view(jnp.asarray(padded), 13), small)
    # a weights file of another shape than its metadata says is refused
    meta_path = tmp_path / "metadata.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "features": [8]}))
    with pytest.raises(ValueError, match="another shape"):
        qa.load_weights(tmp_path)
    with pytest.raises(FileNotFoundError, match="no q_snake weights"):
        qa.load_weights(tmp_path / "missing")


def _wrap(board):
    from jaxgames.games.battlesnake.env import BattlesnakeState

    n = board.num_snakes
    return BattlesnakeState(
        current_player=jnp.int32(-2), observation=jnp.zeros((n, 0)), rewards=jnp.zeros(n), terminated=jnp.bool_(False),
        truncated=jnp.bool_(False), legal_action_mask=jnp.ones((n, 4), bool), step_count=jnp.int32(0), board=board,
    )


def test_server_agent_table_serves_the_q_snake():
    from jaxgames.agents import q_snake as qa
    from jaxgames.serve.battlesnake import AGENTS

    assert AGENTS["q_snake"] is qa.QSnakeAgent


def test_candidate_bootstrap_refines_the_candidates_q_on_the_recorded_positions():
    """``bootstrap="candidate"``: eq. 7 runs on the candidate's Q-values of the recorded boards, Psi from the record."""
    config = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "bootstrap": "candidate"})
    learner = qs.QSnakeLearner(config)
    state = learner.init(jax.random.key(3))
    # a candidate that differs from the best (which plays the self-play)
    state = state.replace(params=jax.tree.map(lambda x: x * 1.5 + 0.05, state.params))
    data, _, _ = learner.collect(state)
    rec = data.record
    T, B, S = rec.acting.shape
    # the candidate's Q-values computed independently (one batched network call) from the recorded boards
    views = jax.vmap(jax.vmap(lambda board: rotated_views(board, config.head_multiplier, config.body_multiplier)))(rec.boards)
    q_cand = np.asarray(learner.net.apply(state.candidate, views.reshape((-1,) + views.shape[3:]), train=False)).reshape(T, B, S, 3)
    assert not np.allclose(q_cand, rec.q, atol=1e-3)  # the two networks really differ
    flags = (rec.acting, rec.died, rec.won, rec.chain_end)
    targets = jax.jit(qs.chain_targets)
    differs = []
    for b in range(B):
        for s in range(S):
            args = [np.asarray(x)[:, b, s] for x in (rec.action, rec.psi, *flags)]
            _, expect, _, _ = targets(q_cand[:, b, s], *args)
            np.testing.assert_allclose(np.asarray(data.vector)[:, b, s], expect, atol=2e-5)
            # Siddiqui et al.'s reading (the recorded, best network's values) would give other targets
            _, paper_reading, _, _ = targets(np.asarray(rec.q)[:, b, s], *args)
            differs.append(not np.allclose(paper_reading, expect, atol=1e-3))
    assert any(differs)
    with pytest.raises(ValueError, match="bootstrap"):
        qs.QSnakeConfig(bootstrap="best")


def _unreachable_pit(config):
    """The learner of ``config`` and its pit under an unreachable threshold, jitted as a new function.

    A new function, so its trace is its own: the cached pit of
    `jaxgames.evaluation.q_snake` is shared by every learner of the same config.
    """
    learner = qs.QSnakeLearner(config)
    learner.threshold_table = jnp.full_like(learner.threshold_table, 10**6)
    return learner, jax.jit(lambda state: qe.pit_games(learner, state))


def test_the_pit_gate_keeps_the_best_below_the_threshold_and_records_the_pit():
    """Siddiqui et al.'s gate: a candidate below the threshold (here an unreachable one) does not replace the best.

    ``pit_gate=False`` (the candidate promoted whatever it scores) is checked
    in `test_weight_averaging_updates_by_hand_and_the_pit_promotes_the_average`.
    """
    learner, pit = _unreachable_pit(TINY)
    state = learner.init(jax.random.key(4))
    state = state.replace(params=jax.tree.map(lambda x: x * 1.5 + 0.05, state.params))
    m = pit(state)
    leaves = jax.tree.leaves
    assert not bool(m["accepted"])  # the driver calls promote only on a pass; a pass makes the candidate the best
    new = learner.promote(state)
    assert all(np.array_equal(a, b) for a, b in zip(leaves(new.best_params), leaves(state.params)))
    new = state
    assert all(np.array_equal(a, b) for a, b in zip(leaves(new.best_params), leaves(state.best_params)))
    assert any(not np.array_equal(a, b) for a, b in zip(leaves(new.best_params), leaves(state.params)))
    _check_pit_record(m, TINY)
    with pytest.raises(TypeError, match="pit_gate"):
        qs.QSnakeConfig(pit_gate="no")


def _check_pit_record(m, config):
    """The pit's counts are consistent, its score is 3 per team win plus the solo ranks, its threshold unreachable."""
    wins = int(m["pit_wins_team"]) + int(m["pit_wins_solo"])
    decided = int(m["pit_decided_team"]) + int(m["pit_decided_solo"])
    assert 0 <= wins <= decided <= config.pit_team_games + config.pit_solo_games  # a win decides its game
    # each solo win is a rank of 3, every rank at most 3
    rank = int(m["pit_rank_solo"])
    assert int(m["pit_score"]) == 3 * int(m["pit_wins_team"]) + rank
    assert 3 * int(m["pit_wins_solo"]) <= rank <= 3 * config.pit_solo_games
    assert int(m["pit_threshold"]) == 10**6


def test_the_learner_uses_the_configured_recursion():
    """``recursion="peng"``: the training targets are `chain_targets` with Peng's recursion on the recorded chains."""
    config = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "recursion": "peng", "trace_lambda": 0.5})
    learner = qs.QSnakeLearner(config)
    data, _, _ = learner.collect(learner.init(jax.random.key(3)))
    rec = data.record
    _, B, S = rec.acting.shape
    targets = jax.jit(qs.chain_targets, static_argnames=("recursion", "trace_lambda"))
    differs = []
    for b in range(B):
        for s in range(S):
            args = [np.asarray(x)[:, b, s] for x in (rec.q, rec.action, rec.psi, rec.acting, rec.died, rec.won, rec.chain_end)]
            _, expect, _, _ = targets(*args, recursion="peng", trace_lambda=0.5)
            np.testing.assert_allclose(np.asarray(data.vector)[:, b, s], expect, atol=1e-6)
            differs.append(not np.allclose(targets(*args)[1], expect, atol=1e-4))
    assert any(differs)  # eq. 7 would have given other targets on these chains


def test_death_targets_train_the_certainly_deadly_entries_towards_zero():
    """``death_targets=True``: a training example's entries for moves that die whatever the others do get target 0.

    Hand-built 7x7 position (the one of ``test_certain_deaths_worked_by_hand``):
    snake 0 at (3, 3) faces up, so left/straight/right are (2, 3) free, (3, 4)
    free, (4, 3) snake 1's neck; snake 2 in the top-left corner faces up, so
    left and straight leave the board and right, (1, 6), is free.
    """
    bodies = [[(3, 3), (3, 2), (3, 1)], [(4, 4), (4, 3), (4, 2)], [(0, 6), (0, 5), (0, 4)], [(6, 0), (6, 1), (6, 2)]]
    board = jax.tree.map(lambda x: x[None, None], rules.board_from_bodies(bodies, size=7))
    vector = jnp.array([[[[0.3, 0.6, 0.8], [0.5, 0.5, 0.5], [0.5, 0.4, 0.7], [0.5, 0.5, 0.5]]]])  # [T=1, B=1, S=4, 3]
    action = jnp.array([[[1, 1, 2, 1]]], jnp.int8)
    zeros = jnp.zeros((1, 1, 4), bool)
    rec = qs.SelfPlayRecord(board, action, vector, ~zeros, zeros.astype(jnp.float32), zeros, zeros, zeros, {})
    data = qs.TrainingData(rec, vector, jnp.array([0, 0]), jnp.array([0, 0]), jnp.array([0, 2]), jnp.int32(2), jnp.int32(1))
    expected = {
        True: ([[0.3, 0.6, 0.0], [0.0, 0.0, 0.7]], [[0, 1, 1], [1, 1, 1]]),
        False: ([[0.3, 0.6, 0.8], [0.5, 0.4, 0.7]], [[0, 1, 0], [0, 0, 1]]),
    }
    for flag, (target, mask) in expected.items():
        learner = qs.QSnakeLearner(qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "death_targets": flag}))
        _, got_target, got_mask = jax.jit(jax.vmap(learner._example, in_axes=(None, 0)))(data, jnp.arange(2))
        np.testing.assert_allclose(got_target, target, atol=1e-7)
        np.testing.assert_array_equal(got_mask, mask)
    with pytest.raises(TypeError, match="death_targets"):
        qs.QSnakeConfig(death_targets=1)


# ----------------------------------------------------------------------------- heuristic opponents, weight averaging
OPPONENTS = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "opponent_games": 2, "num_turns": 24})


def test_heuristic_opponents_drive_every_seat_but_the_networks():
    """``opponent_games=2`` of 4 slots: slot g seats the network at g % 4 and heuristic snakes elsewhere.

    Checked on the record: the heuristic seats never act (no chain, no
    training position); every move they make is one of the best-scored
    moves of `HeuristicAgent.scores` (the scores are whole numbers and the
    tie noise is below 0.5, so the move played has the maximal score),
    which the network's sampled moves are not bound to; a game ends when the
    network's snake dies; the network's Psi in such a game is 1 (no other
    network snake acts: the empty product); the opponent counts are the
    network seat's chain ends and wins in those slots.
    """
    from jaxgames.agents.battlesnake import HeuristicAgent, safe_moves

    learner = qs.QSnakeLearner(OPPONENTS)
    state = learner.init(jax.random.key(11))
    rec = learner.self_play(state.best, learner.params_for(1), jax.random.key(12))
    acting, psi, died, won, ends = (np.asarray(x) for x in (rec.acting, rec.psi, rec.died, rec.won, rec.chain_end))
    boards = jax.tree.map(np.asarray, rec.boards)
    T, B, S = acting.shape
    net_seat = {0: 0, 1: 1}
    scores = jax.jit(HeuristicAgent().scores)
    safe = jax.jit(safe_moves)
    heuristic_moves = net_moves = net_not_best = 0
    for g in range(B):
        for s in range(S):
            if g in net_seat and s != net_seat[g]:
                assert not acting[:, g, s].any()
            elif g not in net_seat:
                assert acting[0, g, s]  # self-play slots: every seat is the network's
    for t in range(T - 1):
        for g in (0, 1):
            now = jax.tree.map(lambda x: x[t, g], boards)
            nxt = jax.tree.map(lambda x: x[t + 1, g], boards)
            n = net_seat[g]
            if acting[t, g, n] and died[t, g, n]:
                assert int(nxt.turn) == 0  # the game ended with the network's snake: a fresh one follows
            if int(nxt.turn) != int(now.turn) + 1:
                continue
            for s in range(S):
                if not (now.alive[s] and nxt.alive[s]):
                    continue
                delta = tuple(int(v) for v in nxt.head[s] - now.head[s])
                move = [tuple(d) for d in np.asarray(rules.DELTAS)].index(delta)
                sc = np.asarray(scores(now, jnp.int32(s)))
                if s == n:
                    net_moves += 1
                    net_not_best += sc[move] < sc.max()
                    assert psi[t, g, n] == 1.0  # it survived the step and no other network snake acted
                elif np.asarray(safe(now, jnp.int32(s))).any():
                    heuristic_moves += 1
                    assert sc[move] == sc.max()
    assert heuristic_moves >= 20 and net_moves >= 3
    assert net_not_best >= 1  # the network's moves are not the heuristic's: the test tells the seats apart
    totals = {k: float(v) for k, v in rec.totals.items()}
    assert totals["opponent_games"] == sum(ends[:, g, n].sum() for g, n in net_seat.items()) >= 2
    assert totals["opponent_wins"] == won[:, :2].sum()
    with pytest.raises(ValueError, match="opponent_games"):
        qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "opponent_games": TINY.num_games + 1})
    with pytest.raises(TypeError, match="opponent_games"):
        qs.QSnakeConfig(opponent_games=True)


def test_weight_averaging_updates_by_hand_and_the_pit_promotes_the_average():
    """``ema_decay=d``: after each training step ema <- d ema + (1 - d) params; the pit plays and promotes the average."""
    leaves = jax.tree.leaves
    decay = 0.75
    config = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "ema_decay": decay, "pit_gate": False})
    learner, pit = _unreachable_pit(config)
    state = learner.init(jax.random.key(8))
    data, keys, _ = learner.collect(state)
    ema = (state.ema_params, state.ema_batch_stats)
    for i in range(2):
        state, _ = learner.train_step(state, data, keys[i])
        new = (state.params, state.batch_stats)
        expect = jax.tree.map(lambda e, p: decay * np.asarray(e) + (1 - decay) * np.asarray(p), ema, new)
        for a, b in zip(leaves(expect), leaves((state.ema_params, state.ema_batch_stats))):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)
        ema = expect
    assert any(not np.allclose(a, b) for a, b in zip(leaves(state.ema_params), leaves(state.params)))
    m = pit(state)  # pit_gate=False: promoted past an unreachable threshold; the average
    assert bool(m["accepted"])
    promoted = learner.promote(state)
    _check_pit_record(m, config)
    assert all(np.array_equal(a, b) for a, b in zip(leaves(promoted.best_params), leaves(state.ema_params)))
    assert all(np.array_equal(a, b) for a, b in zip(leaves(promoted.best_batch_stats), leaves(state.ema_batch_stats)))
    for bad in (1.0, -0.1, True):
        with pytest.raises((ValueError, TypeError), match="ema_decay"):
            qs.QSnakeConfig(ema_decay=bad)


def test_resume_with_opponents_averaging_and_reference_equals_an_uninterrupted_run(tmp_path):
    config = qs.QSnakeConfig(**{**OPPONENTS.to_json(), "features": OPPONENTS.features, "ema_decay": 0.5,
                                "eval_every": 1, "eval_games": 4, "reference_generation": 1})
    straight, _ = _assert_resume_equals_straight(config, 6, tmp_path)
    assert all("opponent_games" in r for r in straight.history)
    rows = [r for r in straight.evaluations if r["evaluation"] == "reference"]
    # generation 1 is the reference: it is the best itself there, so its team games are an equal match
    assert [r["iteration"] for r in rows] == [1, 2] and "reference/team_win_rate" in rows[0]


# ----------------------------------------------------------------------------- the loss, by hand
def test_q_loss_by_hand():
    """Binary cross-entropy and squared error over the masked entries, computed here from the formula in numpy."""
    q = np.array([[0.8, 0.5, 0.3], [0.1, 0.9, 0.6]], np.float32)
    y = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.2]], np.float32)
    mask = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], np.float32)
    # masked entries: (0.8, 1), (0.3, 0.5), (0.9, 1), (0.6, 0.2)
    bce = -np.mean([np.log(0.8), 0.5 * np.log(0.3) + 0.5 * np.log(0.7), np.log(0.9), 0.2 * np.log(0.6) + 0.8 * np.log(0.4)])
    mse = np.mean([0.2**2, 0.2**2, 0.1**2, 0.4**2])
    loss = jax.jit(qs.q_loss, static_argnames="kind")
    np.testing.assert_allclose(loss(q, y, mask, kind="bce"), bce, rtol=1e-5)
    np.testing.assert_allclose(loss(q, y, mask, kind="mse"), mse, rtol=1e-5)
    assert bce > 0 and float(loss(q, y, np.zeros_like(mask))) == 0.0  # nothing masked in: 0, not NaN
    # the loss is smallest where q is the target: moving a masked entry towards its target lowers it
    better = q.copy()
    better[0, 2] = 0.5
    assert float(loss(better, y, mask)) < float(loss(q, y, mask))


def test_training_steps_lower_the_loss_on_a_fixed_batch():
    """Ten `train_step` s with one key (the same positions every step, no mirroring): the loss falls each step.

    A flipped sign anywhere in the loss or the update would make it rise.
    """
    config = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "reflect": False, "batch_size": 8})
    learner = qs.QSnakeLearner(config)
    state = learner.init(jax.random.key(0))
    data, keys, _ = learner.collect(state)
    assert int(data.count) >= 2
    losses = []
    for _ in range(10):
        state, loss = learner.train_step(state, data, keys[0])
        losses.append(float(loss))
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.9 * losses[0]


# ----------------------------------------------------------------------------- the shipped snake
def test_shipped_weights_beat_random_safe_snakes():
    """The shipped network alone against three random-safe snakes wins far above the fair share 1/4 (binomial test)."""
    from scipy.stats import binomtest

    from jaxgames.agents.battlesnake import RandomSafeAgent
    from jaxgames.agents.q_snake import QSnakeAgent
    from jaxgames.evaluation import arena
    from jaxgames.games.battlesnake import Battlesnake

    agent = QSnakeAgent()
    assert agent.name == "q_snake"  # trained weights, not the placeholder
    env = Battlesnake(board_size=11, num_snakes=4, max_turns=500, observation="none")
    res = arena.play(env, (agent, RandomSafeAgent()), 48, jax.random.key(123), lineup=(0, 1, 1, 1), seating="rotate",
                     max_steps=501)
    mine = res.agent_of_seat == 0
    wins, games = int(np.asarray(res.won())[mine].sum()), int(mine.sum())
    assert games == 48
    assert binomtest(wins, games, 0.25, alternative="greater").pvalue < 1e-6, wins


# ----------------------------------------------------------------------------- search targets (expert iteration)
SEARCHED = qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "walk_generations": 0, "search_depth": 1,
                              "search_positions": 8, "search_opponents": 1})


@pytest.mark.parametrize("learned_weight", [0.0, 0.5])
def test_search_targets_are_zero_for_sure_deaths_and_train_every_entry(learned_weight):
    """The hand-built position of the death-targets test: snake 0's right, (4, 3), is snake 1's neck, and its
    straight, (3, 4), is next to snake 1's head (4, 4), of equal length: the searched answer there is a
    head-to-head that kills both; its left, (2, 3), is out of every other head's reach. Snake 2 in the
    top-left corner dies going left or straight (off the board). The search's targets are 0 where the
    worst answer kills and above 0 elsewhere; every searched example trains all three entries."""
    bodies = [[(3, 3), (3, 2), (3, 1)], [(4, 4), (4, 3), (4, 2)], [(0, 6), (0, 5), (0, 4)], [(6, 0), (6, 1), (6, 2)]]
    board = jax.tree.map(lambda x: x[None, None], rules.board_from_bodies(bodies, size=7))
    vector = jnp.full((1, 1, 4, 3), 0.5)
    zeros = jnp.zeros((1, 1, 4), bool)
    rec = qs.SelfPlayRecord(board, jnp.ones((1, 1, 4), jnp.int8), vector, ~zeros, zeros.astype(jnp.float32), zeros,
                            zeros, zeros, {})
    pad = jnp.zeros(8, jnp.int32)
    data = qs.TrainingData(rec, vector, pad, pad, pad.at[1].set(2), jnp.int32(2), jnp.int32(1))
    config = qs.QSnakeConfig(**{**SEARCHED.to_json(), "features": SEARCHED.features, "search_learned_weight": learned_weight})
    learner = qs.QSnakeLearner(config)
    variables = learner.init(jax.random.key(0)).best
    out, metrics = jax.jit(learner._search_targets)(variables, data, jax.random.key(1))
    assert int(out.count) == 8
    seats = np.asarray(out.s[:8])
    assert set(seats) <= {0, 2} and len(set(seats)) == 2  # 8 draws of 2 positions (key 1)
    _, target, mask = jax.jit(jax.vmap(learner._example, in_axes=(None, 0)))(out, jnp.arange(8))
    target = np.asarray(target)
    np.testing.assert_array_equal(mask, np.ones((8, 3)))
    for seat, row in zip(seats, target):
        dies = [False, True, True] if seat == 0 else [True, True, False]
        np.testing.assert_array_equal(row[dies], 0.0)
        assert np.all(row[[not d for d in dies]] > 0.0) and np.all(row <= 1.0)
    assert 0.0 <= float(metrics["search_agreement"]) <= 1.0


def test_a_searched_generation_trains_from_the_given_weights_and_reports_the_search(tmp_path):
    from jaxgames.agents.q_snake import save_weights

    small = qs.QSnakeLearner(TINY)
    start = small.init(jax.random.key(5)).best
    save_weights(start, tmp_path / "w", {"features": list(TINY.features), "board_size": 7, "trained": False})
    config = qs.QSnakeConfig(**{**SEARCHED.to_json(), "features": SEARCHED.features, "init_weights": str(tmp_path / "w")})
    learner = qs.QSnakeLearner(config)
    state = learner.init(jax.random.key(0))
    for a, b in zip(jax.tree.leaves(state.best), jax.tree.leaves(start)):
        np.testing.assert_array_equal(a, b)
    state, row = learner.update(state)
    assert row["samples"] >= 1 and 0.0 <= row["search_target_mean"] <= 1.0 and 0.0 <= row["search_agreement"] <= 1.0
    assert np.isfinite(row["loss_mean"])


@pytest.mark.parametrize(
    "override, match",
    [
        (dict(walk_generations=1), "walk_generations"),
        (dict(search_positions=16 * 4 * 4 + 1), "search_positions"),
        (dict(search_opponents=4), "search_opponents"),
        (dict(search_learned_weight=1.5), "search_learned_weight"),
        (dict(search_depth=-1), "search_depth"),
        (dict(init_weights=3), "init_weights"),
    ],
)
def test_bad_search_settings_name_the_value(override, match):
    with pytest.raises((ValueError, TypeError), match=match):
        qs.QSnakeConfig(**{**SEARCHED.to_json(), "features": SEARCHED.features, **override})


def test_init_weights_of_another_network_are_refused_before_anything_runs():
    with pytest.raises(ValueError, match="init_weights='shipped' holds a network of"):
        qs.QSnakeLearner(qs.QSnakeConfig(**{**TINY.to_json(), "features": TINY.features, "init_weights": "shipped"}))


def test_ship_dir_writes_the_best_network_and_its_metadata_there(tmp_path):
    from jaxgames.agents.q_snake import load_weights

    exp = load_experiment("q_snake")
    config = parse_config(exp.Config, ["features=4", f"ship_dir={tmp_path / 'w'}", "ship=trained", "board_size=7"])
    learner = qs.QSnakeLearner(config.learner)
    state = learner.init(jax.random.key(2))
    result = loop.TrainResult(state=state, history=[{"accepted": 1, "seconds": 2.0}], evaluations=[], resumed_from=0,
                              stopped_by_budget=False)
    assert exp.ship_weights(config, result, [], ["ship=trained"]) == tmp_path / "w"
    variables, meta = load_weights(tmp_path / "w")
    for a, b in zip(jax.tree.leaves(variables), jax.tree.leaves(state.best)):
        np.testing.assert_array_equal(a, b)
    assert meta["trained"] and meta["features"] == [4] and meta["board_size"] == 7 and meta["accepted"] == 1
    with pytest.raises(TypeError, match="ship_dir"):
        exp.Config(ship_dir=3)
