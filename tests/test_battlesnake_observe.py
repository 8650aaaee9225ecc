"""The encodings of Siddiqui et al.: egocentric views (values by hand from eqs. 1-3), rotation, relative actions, symmetries.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement Learning in a Synchronous Strategy Game" (University of Victoria report, undated),
section 3.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.battlesnake import Battlesnake, observe, rules, spawn
from jaxgames.games.battlesnake.render import from_ascii
from jaxgames.games.battlesnake.rules import DOWN, LEFT, RIGHT, UP

BOARD = """
    . . . . . . .
    . . * . . . .
    . . . . . . .
    . . A a a . .
    . . . . . . .
    . . . . . . b
    . . . . B b b
"""
M = 1 / 50  # head and body multiplier on 7x7: 1 / (49 + 1)


@pytest.fixture(scope="module")
def views():
    b = from_ascii(BOARD, health=[50, 100])
    return b, np.asarray(jax.jit(observe.egocentric)(b))


def test_egocentric_values_by_hand(views):
    _, obs = views
    assert obs.shape == (2, 13, 13, 3)
    a = obs[0]  # A: length 3, health 50, head (2, 3) at the centre [6, 6]
    assert a[6, 6, 0] == pytest.approx(0.5 * M)  # own head: (3 - 3 + 0.5) M
    assert a[9, 8, 0] == pytest.approx(1.5 * M)  # B's head (4, 0): dx 2, dy -3; (4 - 3 + 0.5) M
    assert a[6, 6, 1] == pytest.approx(3 * M) and a[6, 7, 1] == pytest.approx(2 * M) and a[6, 8, 1] == pytest.approx(1 * M)
    assert [a[9, 8, 1], a[9, 9, 1], a[9, 10, 1], a[8, 10, 1]] == pytest.approx([4 * M, 3 * M, 2 * M, 1 * M])
    assert np.all(a[:, 3, 1] == 1.0) and np.all(a[2, :, 1] == 1.0)  # x = -1 and y = 7 are walls
    assert np.all(a[:, :3, :] [..., 1] == 1.0) and a[6, 5, 1] == 0.0
    assert a[4, 6, 2] == pytest.approx((101 - 50) / 100)  # food (2, 5): dy 2
    assert np.count_nonzero(a[..., 2]) == 1 and np.count_nonzero(a[..., 0]) == 2
    bview = obs[1]  # B: length 4, health 100
    assert bview[6, 6, 0] == pytest.approx(0.5 * M)
    assert bview[3, 4, 0] == pytest.approx(-0.5 * M)  # A's head: (3 - 4 + 0.5) M, dx -2, dy 3
    assert bview[1, 4, 2] == pytest.approx(0.01)  # (101 - 100) / 100
    assert np.all(np.abs(obs) <= 1.0)


def test_rotation_faces_up_and_relative_actions(views):
    b, obs = views
    facing = np.asarray(rules.facing(b))
    assert facing.tolist() == [LEFT, LEFT]  # A's neck is right of its head, B's too
    rot = np.asarray(observe.rotate_to_facing(jnp.asarray(obs[0]), LEFT))
    assert rot[7, 6, 1] == pytest.approx(2 * M)  # the neck is now straight behind (below)
    assert rot[6, 6, 0] == pytest.approx(0.5 * M)
    assert rot[5, 6, 1] == obs[0][6, 5, 1]  # straight ahead = the cell to the left before
    r2a = lambda r, f: int(observe.relative_to_absolute(jnp.int32(r), jnp.int32(f)))
    assert [r2a(r, LEFT) for r in range(3)] == [DOWN, LEFT, UP]
    assert [r2a(r, UP) for r in range(3)] == [LEFT, UP, RIGHT]
    a2r = lambda m, f: int(observe.absolute_to_relative(jnp.int32(m), jnp.int32(f)))
    assert [a2r(m, RIGHT) for m in (UP, RIGHT, DOWN, LEFT)] == [0, 1, 2, -1]
    for f in range(4):
        for r in range(3):
            assert a2r(r2a(r, f), f) == r
    # Reflection mirrors left-right and swaps the turns.
    assert np.array_equal(np.asarray(observe.reflect(rot)), rot[:, ::-1])
    assert [int(observe.reflect_relative(jnp.int32(r))) for r in range(3)] == [2, 1, 0]


def _transform_board(b, k, flip):
    """The board with every point mapped by k quarter turns counter-clockwise, then x -> n-1-x."""
    n = b.size

    def pt(x, y):
        for _ in range(k):
            x, y = n - 1 - y, x
        return (n - 1 - x, y) if flip else (x, y)

    perm = np.zeros(n * n, np.int64)  # new flat index -> old flat index
    for x in range(n):
        for y in range(n):
            nx, ny = pt(x, y)
            perm[nx * n + ny] = x * n + y
    head = np.array([pt(int(x), int(y)) for x, y in np.asarray(b.head)], np.int32)
    return b.replace(head=jnp.asarray(head), body=b.body[:, perm], food=b.food[perm], hazards=b.hazards[perm]), pt


def test_views_commute_with_the_board_symmetries():
    env = Battlesnake(board_size=7, num_snakes=2, observation="none")
    s = env.init(jax.random.key(3))
    step = jax.jit(env.step)
    for t in range(3):
        s = step(s, jnp.array([RIGHT if t else UP, LEFT if t else DOWN]), jax.random.key(t))
    b = s.board
    obs = jax.jit(observe.egocentric)(b)
    ego = jax.jit(observe.egocentric)
    for k in range(4):
        for flip in (False, True):
            tb, pt = _transform_board(b, k, flip)
            want = observe.transform_observation(obs, k, flip)
            np.testing.assert_allclose(np.asarray(ego(tb)), np.asarray(want), err_msg=f"k={k} flip={flip}")
            # Moves map the same way as points.
            hx, hy = np.asarray(b.head[0]).tolist()
            for m in range(4):
                dx, dy = rules.DELTAS[m]
                new = pt(hx + dx, hy + dy)
                head = pt(hx, hy)
                tm = int(observe.transform_move(jnp.int32(m), k, flip))
                assert (head[0] + rules.DELTAS[tm][0], head[1] + rules.DELTAS[tm][1]) == new


def test_env_rotated_observation_and_learn_to_walk_param():
    env = Battlesnake(observation="rotated", health_loss=33)
    s = env.init(jax.random.key(0))
    assert s.observation.shape == (4, 21, 21, 3) and env.params.health_loss == 33
    # Stacked start: facing up, so the rotated view is the egocentric one.
    np.testing.assert_array_equal(np.asarray(s.observation), np.asarray(observe.egocentric(s.board)))
    board = spawn.init_board(jax.random.key(1), 4, 11)
    assert observe.egocentric(board).shape == (4, 21, 21, 3)
