"""Scenario tests of the Battlesnake rules (ASCII boards, expected values by hand from the official rules).

Each scenario turn runs under ``jit`` and under ``vmap`` and both must agree.
Source of every expectation: ``standard.go`` of github.com/BattlesnakeOfficial/rules.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.games.battlesnake import Battlesnake, rules, spawn
from jaxgames.games.battlesnake.render import from_ascii, to_ascii
from jaxgames.games.battlesnake.rules import DOWN, LEFT, RIGHT, UP, Params

_step = jax.jit(rules.step)
_vstep = jax.jit(jax.vmap(rules.step, in_axes=(0, 0, 0, None)))


def turn(board, moves, food=(), params=rules.DEFAULT_PARAMS):
    """One turn under jit and under vmap (batch of one); returns the jit result."""
    moves = jnp.asarray(moves, jnp.int32)
    new_food = np.zeros(board.size * board.size, bool)
    for x, y in food:
        new_food[rules.cell_index(board.size, x, y)] = True
    a = _step(board, moves, new_food, params)
    b = _vstep(jax.tree.map(lambda v: v[None], board), moves[None], new_food[None], params)
    for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v)[0])
    return a


def bodies(board):
    return [rules.body_list(board, s) for s in range(board.num_snakes)]


def cause(board, s):
    return rules.ELIMINATION_CAUSES[int(board.eliminated_cause[s])]


def test_movement_up_is_y_plus_one_and_body_follows():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . A a a . .
        . . . . . . .
        . . . . . B .
        . . . . . b b
        """
    )
    assert bodies(b)[0] == [(2, 3), (3, 3), (4, 3)]
    n = turn(b, [UP, LEFT])
    assert bodies(n) == [[(2, 4), (2, 3), (3, 3)], [(4, 1), (5, 1), (5, 0)]]
    assert n.health.tolist() == [99, 99] and int(n.turn) == 1


def test_unknown_move_continues_neck_to_head_and_up_when_stacked():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . A a a . .
        . . . . . . .
        . . . . . . .
        . B . . . . .
        """,
        stack={1: 2},
    )
    assert bodies(b)[1] == [(1, 0)] * 3
    n = turn(b, [rules.MOVE_UNKNOWN, 7])  # A faces left (neck to head); B stacked: up
    assert bodies(n) == [[(1, 3), (2, 3), (3, 3)], [(1, 1), (1, 0), (1, 0)]]


def test_head_to_head_on_food_both_grow_and_equal_lengths_both_die():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        a A * B b . .
        a . . . b . .
        . . . . . . .
        . . . . . . .
        """
    )
    n = turn(b, [RIGHT, LEFT])
    assert n.length.tolist() == [4, 4]  # both ate before elimination
    assert n.health.tolist() == [100, 100]
    assert not bool(n.food[rules.cell_index(7, 2, 3)])  # the food is gone
    assert [cause(n, 0), cause(n, 1)] == ["head-collision", "head-collision"]
    assert n.eliminated_by.tolist() == [1, 0] and n.eliminated_on_turn.tolist() == [1, 1]


def test_head_to_head_longer_wins_lengths_after_feeding():
    b = from_ascii(
        """
        . a . . . . .
        . a . . . . .
        . a . . . . .
        . A * B b . .
        . . . . b . .
        . . . . . . .
        . . . . . . .
        """
    )
    n = turn(b, [RIGHT, LEFT])
    assert n.length.tolist() == [5, 4]
    assert cause(n, 0) == "" and cause(n, 1) == "head-collision" and int(n.eliminated_by[1]) == 0


def test_moving_into_a_tail_that_moves_away_is_safe():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . A b b B . .
        . a . . . . .
        . a . . . . .
        . . . . . . .
        """
    )
    # B's tail is (2,3)... B = [(4,3), (3,3), (2,3)]; A moves right into (2,3) as B moves up.
    assert bodies(b)[1] == [(4, 3), (3, 3), (2, 3)]
    n = turn(b, [RIGHT, UP])
    assert [cause(n, 0), cause(n, 1)] == ["", ""]
    assert bodies(n)[0][0] == (2, 3)


def test_own_tail_moves_away_too():
    # A coiled in a 2x2 square (a loop cannot be drawn unambiguously in ASCII).
    b = rules.board_from_bodies([[(2, 4), (3, 4), (3, 3), (2, 3)], [(4, 0), (5, 0), (6, 0)]], size=7)
    n = turn(b, [DOWN, UP])  # A's head onto its own tail, which moves away
    assert cause(n, 0) == "" and bodies(n)[0] == [(2, 3), (2, 4), (3, 4), (3, 3)]


def test_tail_stays_when_its_snake_just_ate():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . A b b B . .
        . a . . . . .
        . a . . . . .
        . . . . . . .
        """,
        stack={1: 1},  # B ate last turn: its tail (2,3) is doubled
    )
    n = turn(b, [RIGHT, UP])
    assert cause(n, 0) == "snake-collision" and int(n.eliminated_by[0]) == 1
    assert cause(n, 1) == ""


def test_stacked_tail_at_the_start_stays_two_turns():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . A . . . . .
        . . B . . . .
        """,
        stack={0: 2, 1: 2},
    )
    n = turn(b, [UP, UP])  # A [(1,2),(1,1),(1,1)], B [(2,1),(2,0),(2,0)]
    assert bodies(n) == [[(1, 2), (1, 1), (1, 1)], [(2, 1), (2, 0), (2, 0)]]
    n2 = turn(n, [UP, LEFT])  # B into (1,1): still A's tail after A's second move
    assert cause(n2, 1) == "snake-collision" and cause(n2, 0) == ""


def test_back_into_the_neck_is_self_collision_and_masked():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . A a a . .
        . . . . . . .
        . . . . . . .
        . . . . B b b
        """
    )
    assert np.asarray(rules.legal_moves(b)).tolist() == [[True, False, True, True], [True, False, True, True]]
    n = turn(b, [RIGHT, UP])
    assert cause(n, 0) == "snake-self-collision" and int(n.eliminated_by[0]) == 0


def test_mutual_body_collision_kills_both():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . a A . . . .
        . a B b b . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        """
    )
    # A = [(2,4),(1,4),(1,3)] B = [(2,3),(3,3),(4,3)]: A moves down onto (2,3), B moves up onto (2,4):
    # heads swap; each head lands on the other's neck (body[1]).
    n = turn(b, [DOWN, UP])
    assert [cause(n, 0), cause(n, 1)] == ["snake-collision", "snake-collision"]
    assert n.eliminated_by.tolist() == [1, 0]
    assert bool(rules.is_game_over(n))


def test_starvation_on_the_turn_of_eating():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . * A a a . .
        . . . . . . .
        . . . . . . .
        . . . . B b b
        """,
        health=[1, 1],
    )
    n = turn(b, [LEFT, UP])
    assert cause(n, 0) == "" and int(n.health[0]) == 100 and int(n.length[0]) == 4
    assert cause(n, 1) == "out-of-health" and int(n.health[1]) == 0


def test_phase_one_eliminations_are_no_obstacle():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . A a a . .
        . . . B . . .
        . . . b . . .
        . . . b . . .
        """,
        health=[1, 50],
    )
    # A starves; B moves up into A's body[1] (3,3), which would be deadly if A were alive.
    n = turn(b, [UP, UP])
    assert cause(n, 0) == "out-of-health" and cause(n, 1) == ""


def test_wall_collision_keeps_the_off_board_head():
    b = from_ascii(
        """
        . . . . A . .
        . . . . a . .
        . . . . a . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . B b b
        """
    )
    n = turn(b, [UP, UP])
    assert cause(n, 0) == "wall-collision" and bodies(n)[0][0] == (4, 7)
    n2 = turn(n, [UP, UP])  # the game is over on the incoming board: nothing changes
    for u, v in zip(jax.tree.leaves(n), jax.tree.leaves(n2)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_three_way_head_to_head_credits_the_longest():
    b = from_ascii(
        """
        . . . . . . .
        . . . a . . .
        . . . a . . .
        . . . A . . .
        . b B . C c .
        . b . . . c .
        . . . . . . .
        """,
        stack={0: 2},
    )
    # Lengths 5, 3, 3; all heads move to (3,2)... A moves down to (3,3)? A's head is (3,3): heads meet at (3,2).
    n = turn(b, [DOWN, RIGHT, LEFT])
    assert cause(n, 0) == ""
    assert [cause(n, 1), cause(n, 2)] == ["head-collision", "head-collision"]
    assert n.eliminated_by.tolist()[1:] == [0, 0]


def test_hazard_damage_skipped_on_food_and_can_eliminate():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . x A a a . .
        . . . . . . .
        . . . . . . .
        . . . . B b b
        """,
        health=[10, 10],
    )
    n = turn(b, [LEFT, UP], params=Params(hazard_damage=14))
    assert cause(n, 0) == "hazard" and int(n.health[0]) == 0
    b2 = b.replace(food=b.food.at[rules.cell_index(7, 1, 3)].set(True))
    n2 = turn(b2, [LEFT, UP], params=Params(hazard_damage=14))
    assert cause(n2, 0) == "" and int(n2.health[0]) == 100


def test_food_spawn_shortfall_and_candidates():
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . A a a . .
        . . . . . . .
        . . . . . . .
        . . . . B b b
        """
    )
    new = spawn.food_to_spawn(jax.random.key(0), b, Params(minimum_food=3, food_spawn_chance=0))
    assert int(new.sum()) == 3
    cand = np.asarray(spawn.food_candidates(b))
    assert np.all(cand[np.asarray(new)])
    cand = cand.reshape(7, 7)
    # By hand: A's cells, B's cells and the cells next to the heads are excluded.
    for p in [(2, 3), (3, 3), (4, 3), (1, 3), (2, 4), (2, 2), (4, 0), (3, 0), (4, 1), (5, 0), (6, 0)]:
        assert not cand[p], p
    assert int(cand.sum()) == 49 - 11


def test_params_are_traced_and_vmap_over_settings_equals_separate_calls():
    """A batch of two settings (health loss 9 vs 1, minimum food 1 vs 3) under one vmap."""
    b = from_ascii(
        """
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . A a a . .
        . . . . . . .
        . . . . . . .
        . . . . B b b
        """
    )
    settings = [Params(health_loss=9, minimum_food=1, food_spawn_chance=0), Params(health_loss=1, minimum_food=3, food_spawn_chance=0)]
    batch = jax.tree.map(lambda *v: jnp.asarray(v, jnp.int32), *settings)
    keys = jax.random.split(jax.random.key(4), 2)
    moves = jnp.array([UP, UP])
    vstep = jax.jit(jax.vmap(lambda p, k: spawn.step(b, moves, k, p, food_slots=3)))
    together = vstep(batch, keys)
    with pytest.raises(TypeError, match="food_slots"):
        jax.jit(lambda p: spawn.food_to_spawn(keys[0], b, p))(settings[0])
    for i, p in enumerate(settings):
        alone = spawn.step(b, moves, keys[i], p, food_slots=3)
        for u, v in zip(jax.tree.leaves(alone), jax.tree.leaves(together)):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v)[i])
    # By hand: 100 - 9 and 100 - 1 health; no food on the board, so the shortfall is 1 and 3.
    assert np.asarray(together.health).tolist() == [[91, 91], [99, 99]]
    assert np.asarray(together.food).sum(axis=1).tolist() == [1, 3]
    # The default bound comes from concrete params and keeps the old random stream.
    assert spawn.num_uniforms(settings[1]) == 4 and spawn.num_uniforms() == 2
    default = spawn.food_to_spawn(keys[1], b, settings[1])
    np.testing.assert_array_equal(np.asarray(default), np.asarray(spawn.food_to_spawn(keys[1], b, settings[1], food_slots=3)))


def test_ascii_round_trip():
    text = """
        . . . . . . .
        . . * . . . .
        . . . . . . .
        . . A a a . .
        . x . . . . .
        . . . . . . .
        . . . . B b b
        """
    b = from_ascii(text)
    grid = to_ascii(b).splitlines()[1:8]
    assert grid == [" ".join(r.split()) for r in text.strip().splitlines()]


def test_bad_boards_raise():
    with pytest.raises(ValueError, match="contiguous"):
        rules.board_from_bodies([[(1, 1), (3, 1), (4, 1)]], size=7)
    with pytest.raises(ValueError, match="off the"):
        rules.board_from_bodies([[(7, 1), (6, 1), (5, 1)]], size=7)
    with pytest.raises(ValueError, match="board_size"):
        rules.validate_size(5, 2)
    with pytest.raises(ValueError, match="num_snakes"):
        rules.validate_size(11, 9)
    with pytest.raises(TypeError):
        rules.validate_size(11.0, 2)


# ---------------------------------------------------------------- the Env


def test_env_defaults_and_registry():
    env = jaxgames.make("battlesnake")
    assert env.num_players == 4 and env.num_actions == 4 and env.observation_shape == (4, 21, 21, 3)
    s = env.init(jax.random.key(0))
    assert s.board.size == 11 and s.legal_action_mask.all()


@pytest.mark.parametrize(
    "kwargs",
    [{"board_size": 6}, {"board_size": 26}, {"num_snakes": 0}, {"num_snakes": 9}, {"health_loss": 2},
     {"food_spawn_chance": 101}, {"observation": "pixels"}, {"max_turns": 0}, {"minimum_food": -1}],
)
def test_env_bad_params(kwargs):
    with pytest.raises(ValueError):
        Battlesnake(**kwargs)


def _env_from(board, **kw):
    env = Battlesnake(board_size=board.size, num_snakes=board.num_snakes, observation="none", food_spawn_chance=0, minimum_food=0, **kw)
    s = env.init(jax.random.key(0))
    return env, s.replace(board=board, legal_action_mask=env._mask(board, jnp.bool_(False)))


H2H = """
    . . . . . . .
    . . . . . . .
    . . . . . . .
    a A . B b . .
    a . . . b . .
    . . . . . . .
    . . . . . . .
"""


def test_env_draw_rewards_zero_and_win_loss():
    env, s = _env_from(from_ascii(H2H))
    step = jax.jit(env.step)
    n = step(s, jnp.array([RIGHT, LEFT]), jax.random.key(436))  # heads meet at (2,3), equal lengths: draw
    assert bool(n.terminated) and n.rewards.tolist() == [0.0, 0.0]
    n = step(s, jnp.array([UP, LEFT]), jax.random.key(438))  # B keeps going, A survives: nothing yet
    assert not bool(n.terminated) and n.rewards.tolist() == [0.0, 0.0]
    n = step(s, jnp.array([LEFT, DOWN]), jax.random.key(440))  # A backs into its neck, B alive
    assert bool(n.terminated) and n.rewards.tolist() == [-1.0, 1.0]
    env3, s3 = _env_from(from_ascii(H2H), draw_reward=-0.5)
    assert jax.jit(env3.step)(s3, jnp.array([RIGHT, LEFT]), jax.random.key(0)).rewards.tolist() == [-0.5, -0.5]


def test_env_neck_move_is_played_by_the_rules_out_of_range_by_the_core():
    env, s = _env_from(from_ascii(H2H))
    step = jax.jit(env.step)
    assert not bool(s.legal_action_mask[0, LEFT])
    n = step(s, jnp.array([LEFT, UP]), jax.random.key(450))  # A backs into its neck: self collision
    assert cause(n.board, 0) == "snake-self-collision" and n.rewards.tolist() == [-1.0, 1.0]
    n = step(s, jnp.array([7, UP]), jax.random.key(452))  # outside 0..3: the core's illegal-action rule
    assert bool(n.terminated) and n.rewards.tolist() == [-1.0, 1.0] and int(n.board.turn) == 0


def test_env_truncates_at_the_turn_limit():
    env, s = _env_from(from_ascii(H2H), max_turns=2)
    step = jax.jit(env.step)
    s = step(s, jnp.array([UP, UP]), jax.random.key(459))
    assert not bool(s.truncated)
    s = step(s, jnp.array([UP, UP]), jax.random.key(461))
    assert bool(s.truncated) and not bool(s.terminated) and s.legal_action_mask.all()
    assert s.rewards.tolist() == [0.0, 0.0]


def test_learn_to_walk_health_loss():
    """health_loss = 9: 100 - 11 * 9 = 1 after 11 turns, out of health on turn 12 (Siddiqui et al., section 3)."""
    # Two snakes circling in 2x2 squares (RIGHT, DOWN, LEFT, UP), never eating.
    b = rules.board_from_bodies([[(1, 2), (1, 1), (2, 1)], [(4, 5), (4, 4), (5, 4)]], size=7)
    env, s = _env_from(b, health_loss=9)
    step = jax.jit(env.step)
    cycle = [RIGHT, DOWN, LEFT, UP]
    for t in range(11):
        s = step(s, jnp.array([cycle[t % 4]] * 2), jax.random.key(t))
    assert s.board.health.tolist() == [1, 1] and bool(s.board.alive.all())
    s = step(s, jnp.array([cycle[11 % 4]] * 2), jax.random.key(11))
    assert [cause(s.board, 0), cause(s.board, 1)] == ["out-of-health"] * 2 and bool(s.terminated)


def test_render_ascii_and_pictures(tmp_path):
    from jaxgames.games.battlesnake.render import save_game

    env = Battlesnake(board_size=7, num_snakes=2, observation="none")
    s = env.init(jax.random.key(0))
    boards = [s.board]
    step = jax.jit(env.step)
    for t in range(3):
        s = step(s, jnp.array([UP, DOWN]) if t == 0 else jnp.array([RIGHT, LEFT]), jax.random.key(t))
        boards.append(s.board)
    text = to_ascii(boards[-1])
    assert text.startswith("turn 3") and text.count("\n") == 7 + 2
    gif = save_game(boards, str(tmp_path / "game.gif"))
    assert (tmp_path / "game.gif").stat().st_size > 1000 and gif.endswith(".gif")
    save_game(boards[:2], str(tmp_path / "frames"))
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == ["frame_0000.png", "frame_0001.png"]


@pytest.mark.parametrize("size, num_snakes", [(7, 8), (25, 3)])
def test_env_other_sizes(size, num_snakes):
    env = Battlesnake(board_size=size, num_snakes=num_snakes)
    s = jax.jit(env.init)(jax.random.key(1))
    assert s.observation.shape == (num_snakes, 2 * size - 1, 2 * size - 1, 3)
    food = int(s.board.food.sum())
    # PlaceFoodFixed: per-snake food unless the board is under 11x11 with more than 4 snakes.
    assert food == (1 if size < 11 and num_snakes > 4 else num_snakes + 1)
    step = jax.jit(env.step)
    for t in range(2):
        s = step(s, jnp.argmax(s.legal_action_mask, axis=1).astype(jnp.int32), jax.random.key(t))
    assert int(s.board.turn) == 2 or bool(s.terminated)


def test_short_snakes_from_the_api_have_no_neck():
    # Length 1 and 2 snakes (possible in API requests): no phantom neck.
    b = rules.board_from_bodies([[(3, 3)], [(5, 5), (5, 4)]], size=7)
    assert np.asarray(rules.legal_moves(b)).tolist() == [[True] * 4, [True, True, False, True]]
    n = turn(b, [rules.MOVE_UNKNOWN, rules.MOVE_UNKNOWN])  # up (no neck), up (neck below)
    assert bodies(n) == [[(3, 4)], [(5, 6), (5, 5)]]


def test_learn_to_walk_curriculum_is_a_change_of_env_params():
    """Siddiqui et al.'s curriculum (health loss 9, then 1) through env.step's traced params: one compile, one vmap.

    Stepping the standard env with params asking for health loss 9 equals the env built with
    health_loss=9, and a batch of the two settings under one vmap gives 100 - 9 and 100 - 1 health.
    """
    standard = jaxgames.make("battlesnake", board_size=7, num_snakes=2, observation="none")
    walking = jaxgames.make("battlesnake", board_size=7, num_snakes=2, observation="none", health_loss=9)
    s = standard.init(jax.random.key(0))
    moves, key = jnp.array([UP, DOWN]), jax.random.key(1)
    p9 = standard.default_params.replace(rules=standard.default_params.rules.replace(health_loss=9))
    step = jax.jit(standard.step)
    ours = step(s, moves, key, p9)
    theirs = jax.jit(walking.step)(s, moves, key)
    for u, v in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    both = jax.tree.map(lambda a, b: jnp.stack([jnp.asarray(a), jnp.asarray(b)]), p9, standard.default_params)
    out = jax.jit(jax.vmap(standard.step, in_axes=(None, None, None, 0)))(s, moves, key, both)
    alive = np.asarray(out.board.alive)
    health = np.asarray(out.board.health)
    assert alive.all() and health[0].tolist() == [91, 91] and health[1].tolist() == [99, 99]


def test_certain_deaths_worked_by_hand():
    """`rules.certain_deaths` on a 7x7 board, every entry derived from the standard rules by hand.

    Columns: up, right, down, left (y up). Snake 0 at (3,3) facing up; snake 1
    at (4,4) with its neck (4,3); snake 2 in the top-left corner facing up.
    """
    bodies = [[(3, 3), (3, 2), (3, 1)], [(4, 4), (4, 3), (4, 2)], [(0, 6), (0, 5), (0, 4)]]
    got = np.asarray(rules.certain_deaths(rules.board_from_bodies(bodies, size=7)))
    expected = np.array(
        [
            # (3,4) free (a head-to-head with snake 1 is possible, never certain); (4,3) snake 1's neck;
            # (3,2) own neck; (2,3) free
            [False, True, True, False],
            # (4,5), (5,4) free; (4,3) own neck; (3,4) free
            [False, False, True, False],
            # (0,7) off the board; (1,6) free; (0,5) own neck; (-1,6) off the board
            [True, False, True, True],
        ]
    )
    np.testing.assert_array_equal(got, expected)

    # Snake 1 on the edge: it may leave the board, be removed before the collision check, and
    # then its body does not kill; so moving into it is not certain.
    bodies = [[(3, 3), (3, 2), (3, 1)], [(6, 3), (5, 3), (4, 3), (4, 2)]]
    got = np.asarray(rules.certain_deaths(rules.board_from_bodies(bodies, size=7)))
    assert not got[0, rules.RIGHT] and got[0, rules.DOWN]
    # ... nor when it starves this turn (health 1, no food next to it): its body is removed too.
    bodies = [[(3, 3), (3, 2), (3, 1)], [(4, 4), (4, 3), (4, 2)]]
    got = np.asarray(rules.certain_deaths(rules.board_from_bodies(bodies, size=7, health=[100, 1])))
    assert not got[0, rules.RIGHT]
    # Starvation of the mover: health 1, every move without food is deadly; food at (2,3) saves "left".
    got = np.asarray(rules.certain_deaths(rules.board_from_bodies(bodies, size=7, health=[1, 100], food=[(2, 3)])))
    np.testing.assert_array_equal(got[0], [True, True, True, False])
    # With health loss 9 (learn to walk), health 9 starves too; health 10 does not.
    walk = rules.Params(health_loss=9)
    got = np.asarray(rules.certain_deaths(rules.board_from_bodies(bodies, size=7, health=[9, 10]), walk))
    np.testing.assert_array_equal(got[:, rules.LEFT], [True, False])
    # An eliminated snake flags nothing while the game goes on (snake 0 still does) ...
    three = rules.board_from_bodies([[(3, 3), (3, 2), (3, 1)], [(4, 4), (4, 3), (4, 2)], [(0, 6), (0, 5), (0, 4)]], size=7)
    out = three.replace(eliminated_cause=three.eliminated_cause.at[2].set(rules.WALL_COLLISION))
    got = np.asarray(rules.certain_deaths(out))
    assert not got[2].any() and got[0, rules.DOWN]
    # ... and a finished game (one snake left) flags nothing at all.
    board = rules.board_from_bodies(bodies, size=7)
    dead = board.replace(eliminated_cause=board.eliminated_cause.at[1].set(rules.WALL_COLLISION))
    assert not np.asarray(rules.certain_deaths(dead)).any()
