"""The Battlesnake search snake and maximin over a subset of players, on hand-drawn boards.

Expected moves are read off the drawings by the official rules (a cell
holding ``v`` in a body is left after ``v`` moves; a head-to-head kills the
shorter or equal snake), never off the code under test.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.agents.battlesnake_search import (
    SearchAgent,
    _deadline_ms,
    candidate_moves,
    default_moves,
    greedy_moves,
    nearest_snakes,
)
from jaxgames.games.battlesnake import Battlesnake, rules
from jaxgames.games.battlesnake.render import from_ascii
from jaxgames.games.matrix import MatrixGame
from jaxgames.search import simultaneous as sim

UP, RIGHT, DOWN, LEFT = rules.UP, rules.RIGHT, rules.DOWN, rules.LEFT


# A at (0,3) on the left wall: up (0,4) is B's tail, doubled (it stays next turn), right (1,3) A's own
# neck, left the wall: only down lives (with stack={1: 1}).
ONLY_DOWN = """
    . . . . . . .
    . . . . . . .
    b b b B . . .
    A a a . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
"""

# Left leads A into the corner (0,6), whose other neighbour (0,5) is B's tail doubled twice (with
# stack={1: 2}: it stays 3 moves): at the next ply every move dies; down leaves open space.
TRAP_AT_DEPTH_2 = """
    . A a a a . .
    b . . . . . .
    b . . . . . .
    b . . . . . .
    B . . . . . .
    . . . . . . .
    . . . . . . .
"""


def jitted(search, env, state, key, **settings):
    """``search(env, state, key, **settings)`` compiled (one compile; eagerly, each op would dispatch on its own)."""
    return jax.jit(lambda s, k: search(env, s, k, **settings))(state, key)


def _state(text, num_snakes, **kw):
    board = from_ascii(text, **kw)
    env = Battlesnake(board_size=board.size, num_snakes=num_snakes, observation="none")
    return env, jax.device_put(env.state_from_board(board))


_POLICIES = {}  # id(agent) -> (agent, env, jitted policy): one compile per agent and game


def _move(agent, env, state, player=0, seed=0):
    held = _POLICIES.get(id(agent))
    if held is None or held[0] is not agent or held[1] is not env:
        held = _POLICIES[id(agent)] = (agent, env, jax.jit(lambda s, k, p: agent.policy(env, s, k, p)))
    return int(held[2](state, jax.random.key(seed), jnp.int32(player)))


def test_every_move_but_one_dies():
    # A at (0,3) on the left wall: up (0,4) is B's tail, doubled (it stays next turn), right (1,3)
    # A's own neck, left the wall.
    env, state = _state(ONLY_DOWN, 2, stack={1: 1})
    for depth in (1, 2):
        assert _move(SearchAgent(depth=depth, opponents=1), env, state) == DOWN


def test_move_values_rank_the_only_living_move_first_and_sure_deaths_at_minus_two_or_below():
    # ONLY_DOWN: up and left die at once (B's doubled tail, the wall), right is A's neck (not
    # enumerated); down lives. A sure death costs the -1 loss reward plus an eliminated snake's -1.
    env, state = _state(ONLY_DOWN, 2, stack={1: 1})
    agent = SearchAgent(depth=1, opponents=1)
    values = np.asarray(jax.jit(lambda s, k: agent.move_values(env, s, k, jnp.int32(0)))(state, jax.random.key(0)))
    assert values.shape == (4,)
    assert np.argmax(values) == DOWN and -1.0 < values[DOWN] < 1.0
    for move in (UP, LEFT, RIGHT):
        assert values[move] <= -2.0
    batched = agent.batched_move_values(env)
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    keys = jnp.stack([jax.random.key(0)] * 2)  # the same key: food spawned in the search depends on it
    both = np.asarray(jax.jit(batched)(states, keys, jnp.zeros(2, jnp.int32)))
    np.testing.assert_allclose(both, [values, values], rtol=1e-6)


def test_state_from_board_is_the_state_the_env_starts_with():
    env = Battlesnake(board_size=7, num_snakes=2, observation="egocentric")
    start = env.init(jax.random.key(3))
    made = env.state_from_board(start.board)
    for field in ("current_player", "observation", "rewards", "terminated", "truncated", "legal_action_mask",
                  "step_count"):
        np.testing.assert_array_equal(np.asarray(getattr(made, field)), np.asarray(getattr(start, field)), err_msg=field)


# A (length 3, health 2) and B (length 4: its tail doubled) both next to the food at (3,2); another food
# at (0,6), 5 moves from A's up or down cell; C far off in the corner. No food spawns. Up or down, A has
# 1 health left and food 2 or more moves away (the near food eaten by B or still 2 away): it starves
# after the horizon of depth 1. Right eats unless B takes the same cell, where the longer B wins the
# head-to-head (and B and C play on: the loss reward plus an eliminated snake's -1).
CONTESTED_FOOD = """
    * . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    a a A * B b b
    . . . . . . .
    . . . . c c C
"""


def test_starvation_loss_contests_food_rather_than_starve_beyond_the_horizon():
    board = from_ascii(CONTESTED_FOOD, health=[2, 100, 100], stack={1: 1})
    env = Battlesnake(board_size=7, num_snakes=3, minimum_food=0, food_spawn_chance=0, observation="none")
    state = jax.device_put(env.state_from_board(board))
    # Without the flag a starving leaf is a live value (> -0.9): up and down beat right's worst case, a death.
    assert _move(SearchAgent(depth=1, opponents=1, starvation_loss=False), env, state) in (UP, DOWN)
    # With it (the default), up and down are worth a death against every answer, right only against B's left:
    # all three tie at -2 and the mean tie-break takes right.
    agent = SearchAgent(depth=1, opponents=1)
    values = np.asarray(jax.jit(lambda s, k: agent.move_values(env, s, k, jnp.int32(0)))(state, jax.random.key(0)))
    np.testing.assert_array_equal(values[[UP, RIGHT, DOWN]], [-2.0, -2.0, -2.0])
    assert _move(agent, env, state) == RIGHT


def test_head_to_head_against_a_shorter_snake_wins():
    # B (length 3) can only leave its corner by (1,1): down is A's doubled tail, up its neck.
    # A (length 5) takes (1,1): B dies whatever it does, and A wins at once.
    env, state = _state("""
        . . . . . . .
        . . . . . . .
        . . . . . . .
        b . . . . . .
        b . . . . . .
        B . A . . . .
        a a a . . . .
    """, 2, stack={0: 1})
    agent = SearchAgent(depth=1, opponents=1)
    out = jax.jit(lambda s, k: agent.search(env, s, k, jnp.int32(0)))(state, jax.random.key(0))
    assert int(out.action) == LEFT
    assert float(out.value) == 1.0  # the win reward, whatever B answers


def test_a_trap_visible_only_at_depth_two():
    # Left leads A into the corner (0,6), whose other neighbour (0,5) is B's tail doubled twice
    # (it stays 3 moves): at the next ply every move dies. Down leaves open space. With a
    # constant leaf value, depth 1 cannot tell the two apart; depth 2 can.
    env, state = _state(TRAP_AT_DEPTH_2, 2, stack={1: 2})
    flat = lambda s, k: jnp.zeros(2, jnp.float32)
    for depth, trap_seen in ((1, False), (2, True)):
        out = jitted(sim.maximin, env, state, jax.random.key(0), player=0, depth=depth, evaluate=flat)
        v = np.asarray(out.action_values)
        if trap_seen:
            assert v[LEFT] == -1.0 and v[DOWN] == 0.0, v  # A's death is the loss reward; B is left alone
        else:
            assert v[LEFT] == v[DOWN] == 0.0, v


# A (length 3) between two longer snakes: up (3,4) can be entered by B (moving right) and by C (moving
# left), left (2,3) only by B (moving down), right (4,3) only by C (moving down); down is A's neck.
# Each of A's moves dies against the worst answer.
BETWEEN_TWO = """
    b b b . c c c
    . . b . c . .
    . . B . C . .
    . . . A . . .
    . . . a . . .
    . . . a . . .
    . . . . . . .
"""


def test_mean_values_count_the_answers_that_kill():
    # Best reply over B and C, defaults B left and C right (away from A), a flat leaf: the 7 answers
    # are "nobody deviates" and the 3 legal moves of each of B and C. A's death costs the -1 loss
    # reward (B and C live on, the leaf is 0). Up dies against 2 answers, left and right against 1.
    env, state = _state(BETWEEN_TWO, 3)
    flat = lambda s, k: jnp.zeros(3, jnp.float32)  # noqa: E731
    default = lambda s, k: jnp.array([UP, LEFT, RIGHT], jnp.int32)  # noqa: E731
    out = jitted(sim.maximin, env, state, jax.random.key(0), player=0, depth=1, evaluate=flat, best_reply=True,
                      default_policy=default)
    np.testing.assert_array_equal(np.asarray(out.action_values)[[UP, RIGHT, LEFT]], [-1.0, -1.0, -1.0])
    np.testing.assert_allclose(np.asarray(out.mean_values)[[UP, RIGHT, LEFT]], [-2 / 7, -1 / 7, -1 / 7], rtol=1e-6)
    assert float(out.mean_values[DOWN]) == np.finfo(np.float32).min  # the neck
    # The agent with tie_break="mean" (the default) never takes up (it loses to the most answers); "random" does.
    mean_agent = SearchAgent(depth=1, opponents=2)
    random_agent = SearchAgent(depth=1, opponents=2, tie_break="random")
    assert {_move(random_agent, env, state, seed=s) for s in range(12)} >= {UP}
    assert UP not in {_move(mean_agent, env, state, seed=s) for s in range(12)}
    with pytest.raises(ValueError, match="tie_break"):
        SearchAgent(tie_break="first")


def test_candidate_moves_and_the_searches_over_them():
    # The first drawing: A's left is the wall, right its neck, up B's doubled tail (B, inside the board
    # with full health, certainly survives): only down is left. B's neck is left; up, right and down are free.
    env, state = _state(ONLY_DOWN, 2, stack={1: 1})
    np.testing.assert_array_equal(np.asarray(candidate_moves(state.board)),
                                  [[False, False, True, False], [True, True, True, False]])
    for depth in (1, 2):
        assert _move(SearchAgent(depth=depth, opponents=1, branching=3), env, state) == DOWN
        assert _move(SearchAgent(depth=depth, opponents=1, best_reply=True), env, state) == DOWN
    # A snake with only certain deaths keeps its legal moves; an eliminated snake keeps move 0.
    dead = state.board.replace(eliminated_cause=state.board.eliminated_cause.at[1].set(1))  # any cause
    np.testing.assert_array_equal(np.asarray(candidate_moves(dead))[1], [True, False, False, False])
    trapped = from_ascii("""
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        b B . . . . .
        A a . . . . .
    """, stack={1: 2})  # A at (0,0): down and left are walls, up is B's tail doubled twice, right its neck
    np.testing.assert_array_equal(np.asarray(candidate_moves(trapped))[0], np.asarray(rules.legal_moves(trapped))[0])
    # The depth-2 trap of the drawing above, with branching 3: still seen (left is the loss reward).
    env, state = _state(TRAP_AT_DEPTH_2, 2, stack={1: 2})
    flat = lambda s, k: jnp.zeros(2, jnp.float32)  # noqa: E731
    out = jitted(sim.maximin, env, state, jax.random.key(0), player=0, depth=2, evaluate=flat, branching=3,
                      candidates=lambda s: candidate_moves(s.board))
    v = np.asarray(out.action_values)
    assert v[LEFT] == -1.0 and v[DOWN] == 0.0, v


def test_maximin_over_a_subset_is_the_best_reply_to_the_default_policy():
    # Matching pennies (row wins on a match); the column player fixed on action 1 by the default
    # policy: the row player's only searched best reply is 1, worth +1 (a paranoid search of both is -1).
    row = np.array([[1.0, -1.0], [-1.0, 1.0]], np.float32)
    env = MatrixGame(row, -row)
    state = env.init(jax.random.key(0))
    fixed = lambda s, k: jnp.array([0, 1], jnp.int32)
    out = jitted(sim.maximin, env, state, jax.random.key(1), player=0, depth=1, searched=jnp.array([0]),
                 default_policy=fixed)
    assert int(out.action) == 1 and float(out.value) == 1.0
    both = jitted(sim.maximin, env, state, jax.random.key(1), player=0, depth=1)
    assert float(both.value) == -1.0
    traced = jax.jit(lambda p: sim.maximin(env, state, jax.random.key(1), player=p, depth=1,
                                           searched=jnp.array([0]), default_policy=fixed).value)
    assert float(traced(jnp.int32(0))) == 1.0


def test_bad_subset_settings_raise_up_front():
    env = Battlesnake(board_size=7, num_snakes=4)
    fixed = lambda s, k: jnp.zeros(4, jnp.int32)
    with pytest.raises(ValueError, match="must include the player 0"):
        sim.check_maximin_settings(env, player=0, depth=1, searched=np.array([1, 2]), default_policy=fixed)
    with pytest.raises(ValueError, match="distinct players"):
        sim.check_maximin_settings(env, player=0, depth=1, searched=np.array([0, 0]), default_policy=fixed)
    with pytest.raises(ValueError, match="needs a default_policy"):
        sim.check_maximin_settings(env, player=0, depth=1, searched=np.array([0, 1]))
    with pytest.raises(ValueError, match=r"would step 4,368 states"):  # 16 + 16**2 + 16**3
        sim.check_maximin_settings(env, player=0, depth=3, searched=np.array([0, 1]), default_policy=fixed,
                                   max_states=4000)
    for bad in ({"depth": 0}, {"opponents": -1}, {"time_budget": 0.0}, {"food_weight": -1.0}, {"best_reply": 1},
                {"vmap_roots": 1}, {"reply_depth": 5, "depth": 4}, {"reply_depth": 1, "best_reply": False}):
        with pytest.raises((TypeError, ValueError), match=next(iter(bad))):
            SearchAgent(**bad)
    # Replies in the first 2 of 3 plies: 21 + 21**2 + 21**2 * 3 states over the two nearest snakes; the
    # iterative deepening's depth 1 clips the reply depth to 1 (21 states).
    agent = SearchAgent(depth=3, reply_depth=2, max_states=21 + 21**2 + 21**2 * 3)
    assert agent.check(env) == 21 + 21**2 + 21**2 * 3
    assert agent.check(env, depth=1) == 21
    with pytest.raises(ValueError, match=r"would step 1,785 states"):
        SearchAgent(depth=3, reply_depth=2, max_states=1784).check(env)
    with pytest.raises(TypeError, match="plays Battlesnake"):
        SearchAgent().check(MatrixGame(np.eye(2, dtype=np.float32), -np.eye(2, dtype=np.float32)))


def test_nearest_snakes_and_default_moves():
    board = from_ascii("""
        . . . . . . .
        . . . . . C c
        . . . . . . c
        . . . A a . .
        B b . . . . .
        . . . . . D d
        . . . . . . d
    """)
    # Heads: A (3,3), B (0,2), C (5,5), D (5,1); distances from A: B 4, C 4, D 4 -> ties by index.
    assert np.asarray(nearest_snakes(board, jnp.int32(0), 2)).tolist() == [0, 1, 2]
    assert np.asarray(nearest_snakes(board, jnp.int32(3), 3)).tolist() == [3, 0, 2, 1]  # D: A 4, C 4, B 6
    moves = np.asarray(default_moves(board, jax.random.key(0)))
    # A: left is its neck; up (3,4), right (4,3)... every safe move has room; each is a safe move.
    for s, move in enumerate(moves):
        target = np.asarray(board.head[s]) + np.asarray(rules.DELTAS)[move]
        assert (0 <= target).all() and (target < 7).all(), (s, move)


# A (3,3) length 3 heads into B's reach: down (3,2) and left (2,3) are next to B's head (2,2), and B is longer.
# B (2,2) length 4: its neck is down; the food (4,0) is nearest by right (3,2), the most free neighbours by left.
GREEDY = """
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . A a a .
    . . B . . . .
    . . b . . . .
    . . b b * . .
"""


def test_greedy_moves_avoid_longer_heads_then_seek_food():
    board = from_ascii(GREEDY)
    greedy = jax.jit(greedy_moves)
    # A: the food is nearer down (distance 3) than up (5), but down and left are next to the longer B's head.
    # B: no snake is as long as it; right is nearest the food (3 against 5 and 5), left has the most room.
    assert np.asarray(greedy(board, jax.random.key(0))).tolist() == [UP, RIGHT]
    assert np.asarray(default_moves(board, jax.random.key(0)))[1] == LEFT
    # A one longer (6,3): as long as B, so B keeps out of reach of A's head too: up (2,3) and right (3,2)
    # are next to (3,3); left is the calm move.
    longer = from_ascii(GREEDY.replace("A a a .", "A a a a"))
    assert np.asarray(greedy(longer, jax.random.key(0))).tolist() == [UP, LEFT]
    # The food in the corner (0,0) is a dead end: its neighbours are A's head and a body cell left after 3
    # moves. Right (2,0) has two free neighbours; up is the neck.
    corner = from_ascii("""
        . . . . . . .
        . . . . . . .
        . . . . . . .
        a . . . . . .
        a . . . . . .
        a a . . . . .
        * A . . . . .
    """)
    assert np.asarray(greedy(corner, jax.random.key(0))).tolist() == [RIGHT]
    # Under vmap over boards, the same moves.
    both = jax.tree.map(lambda a, b: jnp.stack([a, b]), board, longer)
    assert np.asarray(jax.vmap(greedy_moves)(both, jax.random.split(jax.random.key(1), 2))).tolist() == [
        [UP, RIGHT], [UP, LEFT]]


@pytest.mark.parametrize("num_snakes", [1, 2, 4, 8])
def test_legal_moves_under_jit_and_the_batched_policy(num_snakes):
    env = Battlesnake(board_size=7, num_snakes=num_snakes)
    keys = jax.random.split(jax.random.key(num_snakes), 3)
    states = jax.vmap(env.init)(keys)
    agent = SearchAgent(depth=1, opponents=min(2, num_snakes - 1))
    players = jnp.zeros(3, jnp.int32)
    batched = np.asarray(agent.compiled(env)(states, keys, players))
    mask = np.asarray(states.legal_action_mask)
    for b in range(3):
        assert mask[b, 0, batched[b]]
        one = jax.tree.map(lambda x: x[b], states)
        assert _move(agent, env, one, 0, 0) in range(4)
    assert np.array_equal(batched, np.asarray(agent.compiled(env)(states, keys, players)))  # same keys, same moves


def test_vmapped_roots_give_the_moves_of_one_root_at_a_time():
    env = Battlesnake(board_size=7, num_snakes=4)
    keys = jax.random.split(jax.random.key(7), 4)
    states = jax.vmap(env.init)(keys)
    players = jnp.arange(4, dtype=jnp.int32)
    mapped = SearchAgent(depth=1, opponents=2, vmap_roots=False)
    vmapped = SearchAgent(depth=1, opponents=2, vmap_roots=True)
    assert mapped.settings_key(env) != vmapped.settings_key(env)  # separate compiled code
    want = np.asarray(mapped.compiled(env)(states, keys, players))
    assert np.array_equal(np.asarray(vmapped.compiled(env)(states, keys, players)), want)
    one = jax.jit(lambda s, k, p: mapped.policy(env, s, k, p, 1))
    for b in range(4):  # and each is the one-board policy's move
        assert int(one(jax.tree.map(lambda x: x[b], states), keys[b], players[b])) == want[b]
    # On a CPU a root whose snake is eliminated (root 1), or whose game is over (root 2), is not searched:
    # move 0. The other roots keep their moves.
    board = states.board.replace(eliminated_cause=states.board.eliminated_cause.at[1, 1].set(1))
    inactive = states.replace(board=board, terminated=states.terminated.at[2].set(True))
    got = np.asarray(mapped.compiled(env)(inactive, keys, players))
    assert got[1] == 0 and got[2] == 0 and got[0] == want[0] and got[3] == want[3]
    assert want[1] != 0 or want[2] != 0  # searched, they would not both have been move 0


def test_act_in_time_deepens_within_the_budget():
    env = Battlesnake(board_size=7, num_snakes=2)
    state = env.init(jax.random.key(0))
    agent = SearchAgent(depth=2, opponents=1, alphabeta=False)  # without alpha-beta: iterative deepening
    agent.act_in_time(env, state, jax.random.key(0), 0, 60.0)  # compiles both depths
    move, depth = agent.act_in_time(env, state, jax.random.key(0), 0, 60.0)
    assert depth == 2 and move in range(4)
    move, depth = agent.act_in_time(env, state, jax.random.key(0), 0, 1e-9)
    assert depth == 1  # depth 1 always runs; depth 2 is not started past the budget
    # A depth is not started when the time it took on the game's last move that ran it does not fit,
    # even where the growth estimate (depth 1's milliseconds x 12) would.
    agent._seconds_at_depth[(env, 2)] = 10.0
    assert agent.act_in_time(env, state, jax.random.key(0), 0, 5.0)[1] == 1
    assert agent._seconds_at_depth[(env, 2)] == pytest.approx(8.0)  # cut by a fifth at each skip
    assert agent.act_in_time(env, state, jax.random.key(0), 0, 60.0)[1] == 2
    # The first growth estimate is the joint moves per node. Paranoid: 3 ** 2 (two snakes, 3 candidates
    # each), 4 ** 2 with every legal move. Best reply: 3 moves against nobody deviating, and against the
    # other snake's 3: 3 + 3 x 3; over 4 snakes, 3 + 3 x 3 x 3.
    four = Battlesnake(board_size=7, num_snakes=4)
    assert SearchAgent(opponents=1, best_reply=False).joint_actions(env) == 9
    assert SearchAgent(opponents=1, best_reply=False, branching=None).joint_actions(env) == 16
    assert agent.joint_actions(env) == 12
    assert SearchAgent(opponents=3).joint_actions(four) == 30


def test_server_serves_the_search_agent_and_refuses_its_settings_for_others():
    from jaxgames.serve.battlesnake import server_from_args, warmup_request

    srv, line = server_from_args(["--agent", "search", "--depth", "1", "--time-budget-ms", "300", "--port", "0",
                                  "--warmup-sizes", "7", "--branching", "2", "--tie-break", "mean",
                                  "--default-policy", "greedy"])
    assert "search" in line
    assert srv.agent.depth == 1 and srv.agent.time_budget == 0.3 and srv.agent.branching == 2
    assert srv.agent.tie_break == "mean" and srv.agent.default_policy == "greedy"
    assert srv.move(warmup_request(7))["move"] in ("up", "down", "left", "right")
    with pytest.raises(SystemExit):
        server_from_args(["--agent", "heuristic", "--depth", "2", "--port", "0", "--warmup-sizes", ""])
    for bad in (["--depth", "0"], ["--branching", "5"], ["--tie-break", "first"], ["--default-policy", "random"]):
        with pytest.raises(SystemExit):
            server_from_args(["--agent", "search", *bad, "--port", "0", "--warmup-sizes", ""])
    srv, _ = server_from_args(["--agent", "search", "--port", "0", "--warmup-sizes", ""])
    assert srv.agent.depth == 5 and srv.agent.time_budget == 0.4  # the shipped snake: depth 5 within 400 ms
    assert srv.agent.alphabeta and srv.agent.step_budget == 30_000
    srv, _ = server_from_args(["--agent", "search", "--step-budget", "500", "--port", "0", "--warmup-sizes", ""])
    assert srv.agent.alphabeta and srv.agent.step_budget == 500
    srv, _ = server_from_args(["--agent", "search", "--no-alphabeta", "--depth", "4", "--port", "0",
                               "--warmup-sizes", ""])
    assert not srv.agent.alphabeta and srv.agent.step_budget is None
    with pytest.raises(SystemExit):  # a step budget without alpha-beta
        server_from_args(["--agent", "search", "--no-alphabeta", "--step-budget", "500", "--port", "0",
                          "--warmup-sizes", ""])
    srv, _ = server_from_args(["--agent", "search", "--evaluation", "hungry_unless_longest:false, food_weight:0.8",
                               "--port", "0", "--warmup-sizes", ""])
    assert srv.agent.weights["hungry_unless_longest"] is False and srv.agent.weights["food_weight"] == 0.8
    assert srv.agent.weights["longest_weight"] == 0.4  # the agent's own default, untouched
    for bad in ("food_weight", "speed:1", "hungry_unless_longest:1", "food_weight:-1"):
        with pytest.raises(SystemExit):
            server_from_args(["--agent", "search", "--evaluation", bad, "--port", "0", "--warmup-sizes", ""])
    with pytest.raises(SystemExit):  # a search setting for another agent
        server_from_args(["--agent", "heuristic", "--evaluation", "food_weight:0.8", "--port", "0",
                          "--warmup-sizes", ""])


def test_learned_leaf_value_is_the_networks_best_win_rate():
    # A network whose dense layer is zero outputs sigmoid(bias) for every action whatever the view:
    # with learned_weight=1 a living snake's leaf is LIVE_BOUND * (2 sigmoid(b) - 1), and on the first
    # drawing (every move of A but down dies; B lives on whatever it does) down is worth exactly that.
    from jaxgames.agents.q_snake import QSnakeAgent
    from jaxgames.games.battlesnake import evaluation
    from jaxgames.networks.q_snake import QSnakeNet, init_variables

    env, state = _state(ONLY_DOWN, 2, stack={1: 1})
    variables = init_variables(QSnakeNet(features=(4,)), jax.random.key(0), (13, 13, 3))
    dense = variables["params"]["Dense_0"]
    bias = np.array([0.3, 1.2, -0.5], np.float32)  # the best win rate: sigmoid(1.2)
    variables["params"]["Dense_0"] = {"kernel": jnp.zeros_like(dense["kernel"]), "bias": jnp.asarray(bias)}
    learned = QSnakeAgent(variables, features=(4,), board_size=7)
    agent = SearchAgent(depth=1, opponents=1, branching=3, learned_weight=1.0, learned=learned)
    out = jax.jit(lambda s, k: agent.search(env, s, k, jnp.int32(0)))(state, jax.random.key(0))
    expected = evaluation.LIVE_BOUND * (2.0 / (1.0 + np.exp(-1.2)) - 1.0)
    np.testing.assert_allclose(float(out.action_values[DOWN]), expected, rtol=1e-6)
    assert int(out.action) == DOWN
    with pytest.raises(ValueError, match="learned_weight"):
        SearchAgent(learned_weight=1.5, learned=learned)
    with pytest.raises(TypeError, match="learned must be a QSnakeAgent"):
        SearchAgent(learned_weight=0.5, learned=object())


def test_learned_leaf_values_a_starving_snake_as_a_death():
    # CONTESTED_FOOD with the constant network above: up and down leave A starving but alive, worth the
    # network's value LIVE_BOUND * (2 sigmoid(1.2) - 1) whatever B answers; with starvation_loss (the
    # default) they are worth a death, -2, as right is against B's left.
    from jaxgames.agents.q_snake import QSnakeAgent
    from jaxgames.games.battlesnake import evaluation
    from jaxgames.networks.q_snake import QSnakeNet, init_variables

    board = from_ascii(CONTESTED_FOOD, health=[2, 100, 100], stack={1: 1})
    env = Battlesnake(board_size=7, num_snakes=3, minimum_food=0, food_spawn_chance=0, observation="none")
    state = jax.device_put(env.state_from_board(board))
    variables = init_variables(QSnakeNet(features=(4,)), jax.random.key(0), (13, 13, 3))
    dense = variables["params"]["Dense_0"]
    variables["params"]["Dense_0"] = {"kernel": jnp.zeros_like(dense["kernel"]),
                                      "bias": jnp.asarray([0.3, 1.2, -0.5], jnp.float32)}
    learned = QSnakeAgent(variables, features=(4,), board_size=7)
    live = evaluation.LIVE_BOUND * (2.0 / (1.0 + np.exp(-1.2)) - 1.0)
    for flag, want in ((False, live), (True, -2.0)):
        agent = SearchAgent(depth=1, opponents=1, learned_weight=1.0, learned=learned, starvation_loss=flag)
        values = np.asarray(jax.jit(lambda s, k, a=agent: a.move_values(env, s, k, jnp.int32(0)))(
            state, jax.random.key(0)))
        np.testing.assert_allclose(values[[UP, DOWN]], [want, want], rtol=1e-6)
        assert values[RIGHT] == -2.0


def test_learned_leaf_variables_are_an_argument_of_one_shared_compile():
    """Two search agents whose learned leaves differ only in their variables compile once, and each plays
    as its own policy traced with its variables as constants does."""
    from jaxgames.agents import base
    from jaxgames.agents.q_snake import QSnakeAgent
    from jaxgames.networks.q_snake import QSnakeNet, init_variables

    env = Battlesnake(board_size=7, num_snakes=2, observation="none")
    keys = jax.random.split(jax.random.key(1), 24)
    states = jax.vmap(env.init)(keys)
    players = jnp.zeros(24, jnp.int32)

    def agent(seed):
        variables = init_variables(QSnakeNet(features=(4,)), jax.random.key(seed), (13, 13, 3))
        learned = QSnakeAgent(variables, features=(4,), board_size=7)
        return SearchAgent(depth=1, opponents=1, learned_weight=1.0, learned=learned)

    a, b = agent(0), agent(1)
    assert a.settings_key(env) == b.settings_key(env)
    key = (a.settings_key(env), env, ("depth", 1))
    shared = [np.asarray(a.compiled(env)(states, keys, players))]
    built = base._SHARED_POLICIES[key]
    shared.append(np.asarray(b.compiled(env)(states, keys, players)))
    assert base._SHARED_POLICIES[key] is built  # b ran a's compiled search, with its own variables
    own = [np.asarray(jax.jit(jax.vmap(lambda s, k, p, x=x: x.policy(env, s, k, p)))(states, keys, players)) for x in (a, b)]
    np.testing.assert_array_equal(shared[0], own[0])
    np.testing.assert_array_equal(shared[1], own[1])
    assert (own[0] != own[1]).any()  # the variables matter: a constant baked in would show


# Three snakes close together (C's head two cells from A's, B's three): every move of each meets the others'.
THREE_CLOSE = """
    . . . . . . .
    . . . . . . .
    . . c C . . .
    . . . . . . .
    A a . . B b .
    . . . . . b .
    . . . . . . .
"""


def _best_reply_oracle(env, state, keys, player, searched, depth, leaf, ply=0, reply_depth=None,
                       policy=default_moves):
    """float ``[4]``: each own legal move's best-reply value (Schadd & Winands 2011) by plain enumeration: the
    worst, over nobody deviating from ``policy`` (default `default_moves`) and (at plies before ``reply_depth``) each other searched
    snake's each legal move, of the player's reward plus the value below (a finished game is worth 0, a leaf
    ``leaf``); -inf for an illegal move. The joint moves of a node are listed here and stepped in one vmapped
    call."""
    legal = np.asarray(state.legal_action_mask)
    values = np.where(legal[player], np.inf, -np.inf)
    base = np.asarray(_jit_once(policy)(state.board, keys[ply]))
    own, joints = [], []
    for o in np.flatnonzero(legal[player]):
        answers = [base.copy()]
        for d in searched if reply_depth is None or ply < reply_depth else ():
            if d != player:
                for k in np.flatnonzero(legal[d]):
                    answers.append(base.copy())
                    answers[-1][d] = k
        for joint in answers:
            joint[player] = o
            own.append(o)
            joints.append(joint)
    most = 4 * (1 + (len(searched) - 1) * 4)  # every node pads to the most joint moves: one compile
    padded = np.stack(joints + joints[-1:] * (most - len(joints)))
    stepped = _stepper(env)(state, jnp.asarray(padded, jnp.int32), keys[ply])
    children = jax.tree.map(lambda x: x[:len(joints)], stepped)
    done = np.asarray(children.terminated | children.truncated)
    rewards = np.asarray(children.rewards)[:, player]
    if depth == 1:
        below = np.asarray(_leaves(leaf)(stepped, keys[-1]))[:len(joints), player]
    else:
        below = np.array([_best_reply_oracle(env, jax.tree.map(lambda x: x[i], children), keys, player, searched,
                                             depth - 1, leaf, ply + 1, reply_depth, policy).max()
                          if not done[i] else 0.0
                          for i in range(len(joints))])
    q = rewards + np.where(done, 0.0, below)
    for o, v in zip(own, q):
        values[o] = min(values[o], v)
    return values


_STEPS, _LEAF_FNS, _JITTED = {}, {}, {}


def _jit_once(fn):
    """``fn`` jitted, once per function: eagerly, each of its ops would dispatch on its own (about 50 ms a call)."""
    return _JITTED.setdefault(fn, jax.jit(fn))


def _stepper(env):
    """``(state, joints int32 [J, S], key) -> J children``, jitted once per env."""
    return _STEPS.setdefault(env, jax.jit(jax.vmap(env.step, in_axes=(None, 0, None))))


def _leaves(leaf):
    """``(states [J], key) -> float32 [J, S]``: ``leaf`` vmapped and jitted once per leaf function."""
    return _LEAF_FNS.setdefault(leaf, jax.jit(jax.vmap(leaf, in_axes=(0, None))))


def _three_close_best_reply():
    """``(env, state, leaf, searched, key, default)``: THREE_CLOSE with the player (B, snake 1) amid ``searched``
    ``[2, 1, 0]``, the hand-written leaf and `default_moves` for the snakes that do not answer."""
    from jaxgames.games.battlesnake import evaluation

    env, state = _state(THREE_CLOSE, 3)
    default = lambda s, k: default_moves(s.board, k)  # noqa: E731
    return env, state, evaluation.leaf_value(env), np.array([2, 1, 0], np.int32), jax.random.key(5), default


def test_best_reply_values_equal_a_plain_enumeration_with_the_player_amid_the_searched():
    # The player (B, snake 1) is the middle of `searched`, so the deviators are the snakes before and after it.
    env, state, leaf, searched, key, default = _three_close_best_reply()
    out = jitted(sim.maximin, env, state, key, player=1, depth=2, evaluate=leaf, searched=jnp.asarray(searched),
                 default_policy=default, best_reply=True)
    keys = jax.random.split(key, 3)  # maximin's ply keys (the default policy ignores its key)
    legal = np.asarray(state.legal_action_mask)[1]
    got = np.asarray(out.action_values)
    assert got[~legal].tolist() == [float(np.finfo(np.float32).min)] * int((~legal).sum())
    want = _best_reply_oracle(env, state, keys, 1, searched.tolist(), 2, leaf)
    np.testing.assert_allclose(got[legal], want[legal], atol=1e-5)
    assert len(set(np.round(want[legal], 4))) > 1  # the moves differ in value: the comparison can fail
    # Each ply's real children stepped 5 at a time, a deviation onto the default move once: the same values.
    batched = jitted(sim.maximin, env, state, key, player=1, depth=2, evaluate=leaf, searched=jnp.asarray(searched),
                     default_policy=default, best_reply=True, leaf_batch=5)
    np.testing.assert_allclose(np.asarray(batched.action_values)[legal], want[legal], atol=1e-5)
    assert int(batched.num_steps) < int(out.num_steps) == 36 + 36**2
    # At depth 1, the leaves valued 5 at a time (36 leaves: the last batch is short) give the plain values.
    batched = jitted(sim.maximin, env, state, key, player=1, depth=1, evaluate=leaf, searched=jnp.asarray(searched),
                     default_policy=default, best_reply=True, leaf_batch=5)
    keys = jax.random.split(key, 2)
    want = _best_reply_oracle(env, state, keys, 1, searched.tolist(), 1, leaf)
    np.testing.assert_allclose(np.asarray(batched.action_values)[legal], want[legal], atol=1e-5)
    # 4 legal moves each: 4 + 4 * 2 * 4 = 36 joint moves a node, 36 + 36 ** 2 states at depth 2.
    assert sim.check_maximin_settings(env, player=1, depth=2, searched=searched, default_policy=default,
                                      best_reply=True) == 36 + 36**2


@pytest.mark.parametrize("reply_depth", [0, 1])
def test_replies_only_near_the_root_equal_a_plain_enumeration(reply_depth):
    # Below `reply_depth` only the player's own moves are enumerated, every other snake on `default_moves`.
    env, state, leaf, searched, key, default = _three_close_best_reply()
    want = _best_reply_oracle(env, state, jax.random.split(key, 3), 1, searched.tolist(), 2, leaf,
                              reply_depth=reply_depth)
    full = _best_reply_oracle(env, state, jax.random.split(key, 3), 1, searched.tolist(), 2, leaf)
    legal = np.asarray(state.legal_action_mask)[1]
    assert np.all(want[legal] >= full[legal] - 1e-6)  # fewer answers: never a worse worst case
    for leaf_batch in (5, None):
        out = jitted(sim.maximin, env, state, key, player=1, depth=2, evaluate=leaf, searched=jnp.asarray(searched),
                     default_policy=default, best_reply=True, leaf_batch=leaf_batch, reply_depth=reply_depth)
        np.testing.assert_allclose(np.asarray(out.action_values)[legal], want[legal], atol=1e-5)
    # 36 joint moves a node above the reply depth, the player's 4 below: 36 + 36 * 4 or 4 + 4 * 4 states.
    count = [4 + 4 * 4, 36 + 36 * 4][reply_depth]
    assert sim.check_maximin_settings(env, player=1, depth=2, searched=searched, default_policy=default,
                                      best_reply=True, reply_depth=reply_depth) == count
    assert int(out.num_steps) == count  # the loop's last search: every leaf in one batch
    for bad, error in (({"reply_depth": 3}, ValueError), ({"reply_depth": -1}, ValueError),
                       ({"reply_depth": 1.0}, TypeError), ({"reply_depth": 1, "best_reply": False}, ValueError)):
        settings = {"best_reply": True, **bad}
        with pytest.raises(error, match="reply_depth"):
            sim.check_maximin_settings(env, player=1, depth=2, searched=searched, default_policy=default, **settings)


def test_the_agents_default_policy_moves_the_snakes_that_do_not_answer():
    # Every legal move enumerated (branching=None), the nearest two snakes searched: the agent's values are the
    # plain best-reply enumeration with `default_moves` or `greedy_moves` for the snakes that do not deviate.
    env, state = _state(THREE_CLOSE, 3)
    legal = np.asarray(state.legal_action_mask)[1]
    key = jax.random.key(3)
    got, want = {}, {}
    for name, policy in (("room", default_moves), ("greedy", greedy_moves)):
        agent = SearchAgent(depth=2, opponents=2, branching=None, default_policy=name)
        got[name] = np.asarray(jax.jit(lambda s, k, a=agent: a.search(env, s, k, jnp.int32(1)))(state, key).action_values)
        want[name] = _best_reply_oracle(env, state, jax.random.split(key, 3), 1, [1, 0, 2], 2,
                                        agent._player_leaf(jnp.int32(1)), policy=policy)
        np.testing.assert_allclose(got[name][legal], want[name][legal], atol=1e-5)
    assert not np.allclose(want["room"][legal], want["greedy"][legal])  # the policies differ here: can fail
    with pytest.raises(ValueError, match="default_policy"):
        SearchAgent(default_policy="random")


@pytest.mark.parametrize("best_reply", [True, False])
def test_real_children_only_give_the_values_of_every_child(best_reply):
    # One root at a time (a CPU) steps and values only the children whose every slot is a valid candidate,
    # `LEAF_BATCH` at a time, skipping batches with none; vmapped roots step all of them. Snake A (by
    # the wall, its body behind) has fewer candidates than the branching, so some codes are padding.
    env, state = _state(THREE_CLOSE, 3)
    assert int(np.asarray(candidate_moves(state.board)).sum(axis=1).min()) < 3  # padding codes exist at the root
    key = jax.random.key(2)
    outs = [jax.jit(lambda s, k, a=a: a.search(env, s, k, jnp.int32(0)))(state, key)
            for a in (SearchAgent(depth=2, best_reply=best_reply, vmap_roots=v) for v in (True, False))]
    for name in ("action_values", "mean_values"):
        every, real = (np.asarray(getattr(o, name)) for o in outs)
        np.testing.assert_allclose(real, every, atol=1e-6)
    assert len(set(np.round(np.asarray(outs[0].action_values)[np.asarray(state.legal_action_mask)[0]], 4))) > 1


def test_policy_search_is_the_search_behind_the_policys_move():
    # `policy` searches with the first key of `jax.random.split(key)`: `policy_search` with the same key is that
    # search, its move has the best `move_values`, and the batched form gives each root's search.
    env, state = _state(THREE_CLOSE, 3)
    agent = SearchAgent(depth=1)
    key = jax.random.key(7)
    policy_search = jax.jit(lambda s, k, p: agent.policy_search(env, s, k, p))
    out = policy_search(state, key, jnp.int32(0))
    want = jax.jit(lambda s, k: agent.search(env, s, k, jnp.int32(0)))(state, jax.random.split(key)[0])
    np.testing.assert_array_equal(np.asarray(out.action_values), np.asarray(want.action_values))
    values = np.asarray(jax.jit(lambda s, k: agent.move_values(env, s, k, jnp.int32(0)))(state, jax.random.split(key)[0]))
    move = int(jax.jit(lambda s, k: agent.policy(env, s, k, jnp.int32(0)))(state, key))
    assert values[move] == values.max()
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    both = jax.jit(agent.batched_policy_search(env))(states, jnp.stack([key, jax.random.key(8)]),
                                                     jnp.asarray([0, 1], jnp.int32))
    np.testing.assert_array_equal(np.asarray(both.action_values)[0], np.asarray(out.action_values))
    one = policy_search(state, jax.random.key(8), jnp.int32(1))
    np.testing.assert_array_equal(np.asarray(both.num_steps), [int(out.num_steps), int(one.num_steps)])


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_alphabeta_values_equal_a_plain_best_reply_enumeration(depth):
    # The same best-reply tree as the plain-Python enumeration, searched depth first with pruning: the root's
    # action values are exact (each own move gets an open window), and from depth 3 subtrees are cut.
    env, state, leaf, searched, key, default = _three_close_best_reply()
    # The budget a traced argument: one compile for both runs. Without one it is int32's largest, as for None.
    search = jax.jit(lambda s, k, m: sim.best_reply_alphabeta(env, s, k, player=1, depth=depth, evaluate=leaf,
                                                              searched=jnp.asarray(searched), default_policy=default,
                                                              max_steps=m))
    out = search(state, key, jnp.int32(np.iinfo(np.int32).max))
    want = _best_reply_oracle(env, state, jax.random.split(key, depth + 1), 1, searched.tolist(), depth, leaf)
    legal = np.asarray(state.legal_action_mask)[1]
    np.testing.assert_allclose(np.asarray(out.action_values)[legal], want[legal], atol=1e-5)
    assert np.all(np.asarray(out.action_values)[~legal] == np.finfo(np.float32).min)
    assert int(out.action) == int(np.argmax(np.where(legal, want, -np.inf)))
    # 36 joint moves a node (4 own x (1 + 2 deviators x 4)): the enumeration steps 36 + 36^2 + 36^3 at depth 3.
    full = sim.check_maximin_settings(env, player=1, depth=depth, searched=searched, default_policy=default,
                                      best_reply=True)
    if depth == 3:
        assert int(out.num_steps) < full // 4
    # A budget it passes stops the search, marked unfinished by its count.
    if depth > 1:
        small = search(state, key, jnp.int32(40))
        assert 40 < int(small.num_steps) < int(out.num_steps)


def test_alphabeta_stop_ends_the_search_and_marks_it_unfinished():
    env, state, leaf, searched, key, default = _three_close_best_reply()
    search = jax.jit(lambda s, k, t: sim.best_reply_alphabeta(
        env, s, k, player=1, depth=3, evaluate=leaf, searched=jnp.asarray(searched), default_policy=default,
        stop=lambda steps: steps >= t))
    plain = jax.jit(lambda s, k: sim.best_reply_alphabeta(env, s, k, player=1, depth=3, evaluate=leaf,
                                                          searched=jnp.asarray(searched), default_policy=default))(
        state, key)
    assert int(plain.num_steps) > sim.STOP_EVERY  # so the stop is asked
    never = search(state, key, jnp.int32(np.iinfo(np.int32).max))
    for got, want in zip(never, plain):  # never true: the search unchanged
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert int(search(state, key, jnp.int32(0)).num_steps) == -1  # true at the first asking: stopped
    with pytest.raises(TypeError, match="stop"):
        sim.best_reply_alphabeta(env, state, key, player=1, depth=2, evaluate=leaf, searched=jnp.asarray(searched),
                                 default_policy=default, stop=1)


def test_alphabeta_agent_plays_the_forced_move_and_sees_the_trap():
    agent = SearchAgent(depth=3, opponents=1, alphabeta=True)
    env, state = _state(ONLY_DOWN, 2, stack={1: 1})
    values = jax.jit(lambda s, k: agent.move_values(env, s, k, jnp.int32(0)))
    assert np.argmax(np.asarray(values(state, jax.random.key(0)))) == DOWN
    env_trap, state = _state(TRAP_AT_DEPTH_2, 2, stack={1: 2})
    assert env_trap == env  # one compile for both boards
    v = np.asarray(values(state, jax.random.key(0)))
    assert v[LEFT] == -1.0 < v[DOWN]  # left: every move dies at the next ply (the loss reward; B wins)


def test_alphabeta_agent_with_a_step_budget_falls_back_one_ply():
    # 2 snakes on 7x7: depth 1 steps 12 states (3 own moves, each against the other snake's default move and its
    # 3 answers), depth 2 then needs more than the 18 left of 30, so the move comes from the depth-1 search.
    env = Battlesnake(board_size=7, num_snakes=2, observation="none")
    state = env.init(jax.random.key(2))
    key = jax.random.key(0)

    def search(**kw):
        agent = SearchAgent(default_policy="greedy", alphabeta=True, **kw)
        return jax.jit(lambda s, k: agent.policy_search(env, s, k, jnp.int32(0)))(state, key)

    one, two = search(depth=1), search(depth=2)
    assert not np.array_equal(np.asarray(one.action_values), np.asarray(two.action_values))
    assert int(one.num_steps) == 12 and int(two.num_steps) > 30
    tight = search(depth=2, step_budget=30)
    np.testing.assert_array_equal(np.asarray(tight.action_values), np.asarray(one.action_values))
    assert int(tight.num_steps) > 30


def test_alphabeta_settings_raise_up_front():
    with pytest.raises(ValueError, match="best_reply"):
        SearchAgent(alphabeta=True, best_reply=False)
    with pytest.raises(ValueError, match="reply_depth"):
        SearchAgent(alphabeta=True, reply_depth=2)
    with pytest.raises(ValueError, match="step_budget needs alphabeta"):
        SearchAgent(alphabeta=False, step_budget=100)
    with pytest.raises(ValueError, match="step_budget needs alphabeta"):
        SearchAgent(best_reply=False, step_budget=100)  # alphabeta's default is off without best reply
    with pytest.raises(ValueError, match="step_budget"):
        SearchAgent(alphabeta=True, step_budget=0)
    with pytest.raises(TypeError, match="alphabeta"):
        SearchAgent(alphabeta=1)
    env, state = _state(THREE_CLOSE, 3)
    default = lambda s, k: default_moves(s.board, k)  # noqa: E731
    with pytest.raises(ValueError, match="max_steps"):
        sim.best_reply_alphabeta(env, state, jax.random.key(0), player=0, depth=2, evaluate=lambda s, k: s.rewards,
                                 searched=jnp.arange(3), default_policy=default, max_steps=0)
    with pytest.raises(TypeError, match="evaluate"):
        sim.best_reply_alphabeta(env, state, jax.random.key(0), player=0, depth=2, evaluate=None,
                                 searched=jnp.arange(3), default_policy=default)
    with pytest.raises(ValueError, match="default_policy"):
        sim.best_reply_alphabeta(env, state, jax.random.key(0), player=0, depth=2, evaluate=lambda s, k: s.rewards,
                                 searched=jnp.arange(2), default_policy=None)


def test_act_in_time_with_alphabeta_stops_the_full_search_at_the_deadline(monkeypatch):
    # The clock is read each STOP_EVERY states: 1 here, so even this small search is asked at once.
    monkeypatch.setattr(sim, "STOP_EVERY", 1)
    env = Battlesnake(board_size=7, num_snakes=2)
    state = env.init(jax.random.key(0))
    agent = SearchAgent(depth=3, opponents=1, alphabeta=True, step_budget=10_000)
    batch, keys, players = jax.tree.map(lambda x: x[None], state), jax.random.key(0)[None], jnp.zeros(1, jnp.int32)
    want = int(agent.compiled(env)(batch, keys, players)[0])
    assert agent.act_in_time(env, state, jax.random.key(0), 0, 60.0) == (want, 3)  # the batched policy's move
    assert set(agent._seconds_at_depth) == set()  # no depth was timed: the deadline bounds the search
    # A deadline already past: the full search stops at its first clock reading; depth 1's move is played.
    shallow = int(agent.compiled_at_depth(env, 1)(batch, keys, players)[0])
    assert agent.act_in_time(env, state, jax.random.key(0), 0, 1e-9) == (shallow, 1)
    past = _deadline_ms(time.perf_counter() - 1.0)
    assert int(agent.compiled_in_time(env)(batch, keys, players, past)[1][0]) == 0  # stopped before depth 2
    future = _deadline_ms(time.perf_counter() + 60.0)
    assert [int(x[0]) for x in agent.compiled_in_time(env)(batch, keys, players, future)] == [want, 3]
    with pytest.raises(ValueError, match="alphabeta"):
        SearchAgent(alphabeta=False).compiled_in_time(env)


def test_the_default_is_depth_5_with_alpha_beta_within_the_step_budget():
    from jaxgames.agents.battlesnake_search import STEP_BUDGET
    agent = SearchAgent()
    assert (agent.depth, agent.alphabeta, agent.step_budget) == (5, True, STEP_BUDGET)
    # without best reply (or with reply_depth) alpha-beta does not apply: off, and no step budget
    for kw in ({"best_reply": False}, {"reply_depth": 2}):
        other = SearchAgent(**kw)
        assert (other.alphabeta, other.step_budget) == (False, None)
    assert SearchAgent(step_budget=None).step_budget is None
