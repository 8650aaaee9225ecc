"""The N-player arena and ratings from placements, with outcomes worked out by hand."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgames
from jaxgames.agents import HostAgent, JaxAgent
from jaxgames.evaluation import arena, elo


class Always(JaxAgent):
    """Plays one fixed action in every seat."""

    def __init__(self, action: int, name: str):
        self.action, self.name = action, name

    def policy(self, env, state, key, player):
        return jnp.int32(self.action)


class HostAlways(HostAgent):
    def __init__(self, action: int, name: str):
        self.action, self.name = action, name

    def act(self, env, state, rng, player):
        return self.action


@pytest.mark.parametrize("host", [False, True])
def test_matching_pennies_seats_rotate(host):
    """Heads-only vs tails-only: the row player wins on a match, so the column player wins every game.

    With seats rotating, the heads agent is the row player in even games (loses: (H, T) mismatch)
    and the column player in odd games (wins: (T, H) mismatch).
    """
    env = jaxgames.make("matching_pennies")
    heads = HostAlways(0, "heads") if host else Always(0, "heads")
    res = arena.play(env, [heads, Always(1, "tails")], 6, jax.random.key(0))
    assert res.agent_of_seat.tolist() == [[0, 1], [1, 0]] * 3
    assert res.returns.tolist() == [[-1.0, 1.0]] * 6
    assert res.placement.tolist() == [[2, 1]] * 6
    assert res.finished.all() and res.length.tolist() == [1] * 6
    per = res.per_agent()
    assert per["heads"]["wins"] == 3 and per["tails"]["wins"] == 3
    m = arena.play_match(env, heads, Always(1, "tails"), 6, jax.random.key(0))
    assert m.outcome.tolist() == [-1, 1] * 3


def test_placements_rank_by_return_then_tiebreak():
    returns = np.array([[1.0, -1.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
    tiebreak = np.array([[5.0, 3.0, 4.0, 3.0], [2.0, 2.0, 2.0, 2.0]])
    assert arena.placements(returns, tiebreak).tolist() == [[1, 3, 2, 3], [1, 1, 1, 1]]


def test_rotation_gives_every_seat_to_every_slot():
    plan = arena.seating_plan(8, 4, "rotate", jax.random.key(0))
    for slot in range(4):
        assert sorted(np.bincount(plan[:, slot], minlength=4).tolist()) == [2, 2, 2, 2]
    perm = arena.seating_plan(50, 4, "permute", jax.random.key(1))
    assert (np.sort(perm, axis=1) == np.arange(4)).all() and len({p.tobytes() for p in perm}) > 5


def test_battlesnake_four_seats_placements_follow_elimination_order():
    """1 agent against 3 copies of another in 4-snake games, seats rotated, compiled and host loops alike."""
    env = jaxgames.make("battlesnake", board_size=7, num_snakes=4, observation="none", max_turns=50)
    from jaxgames.agents import RandomAgent

    for agents in ([Always(0, "up"), RandomAgent()], [HostAlways(0, "up"), RandomAgent()]):
        res = arena.play(env, agents, 8, jax.random.key(2), lineup=(0, 1, 1, 1), max_steps=60)
        assert res.returns.shape == (8, 4) and res.placement.shape == (8, 4)
        assert (res.agent_of_seat == 0).sum(axis=0).tolist() == [2, 2, 2, 2]
        cause, turn = res.stats["eliminated_cause"], res.stats["eliminated_on_turn"]
        assert cause.shape == (8, 4) and res.stats["turn"].shape == (8,)
        for g in range(8):
            if res.timed_out[g]:
                continue
            alive = cause[g] == 0
            # Survival time: the turn of elimination, the final turn + 1 for survivors.
            lasted = np.where(alive, res.stats["turn"][g] + 1, turn[g])
            for s in range(4):
                for t in range(4):
                    if res.returns[g, s] == res.returns[g, t] and lasted[s] > lasted[t]:
                        assert res.placement[g, s] < res.placement[g, t]
        # "Always up" walks into the top wall within 6 turns on a 7x7 board (rules: a head off the board is
        # out), unless the game ended first: it never lasts beyond turn 6.
        final_turn = np.broadcast_to(res.stats["turn"][:, None], cause.shape)
        up = res.agent_of_seat == 0
        lasted = np.where(cause == 0, final_turn, turn)[up]
        assert (lasted >= 1).all() and (lasted <= 6).all(), lasted


def test_pairwise_outcomes_by_hand():
    res = arena.ArenaResult(
        names=("a", "b", "c"), agent_of_seat=np.array([[0, 1, 1, 2]]), returns=np.zeros((1, 4), np.float32),
        placement=np.array([[1, 2, 2, 4]]), length=np.array([3]), finished=np.array([True]),
        truncated=np.array([False]), timed_out=np.array([False]), max_move_seconds=np.zeros((1, 4)), stats={},
    )
    pairs = elo.pairwise_outcomes(res)
    # Seats (0,1), (0,2), (0,3), (1,3), (2,3); (1,2) is one agent against itself and is skipped.
    assert pairs.tolist() == [[0, 0, 1, 1.0], [0, 0, 1, 1.0], [0, 0, 2, 1.0], [0, 1, 2, 1.0], [0, 1, 2, 1.0]]
    w = elo.wins_matrix(pairs, 3)
    assert w.tolist() == [[0, 2, 1], [0, 0, 2], [0, 0, 0]]


def test_multiplayer_elo_by_hand():
    # Three players at 1000; 0 beats 1 and 2, 1 beats 2. E = 0.5 everywhere, K / (n - 1) = 16:
    # agent 0: 16 * (0.5 + 0.5) = +16, agent 1: 16 * (-0.5 + 0.5) = 0, agent 2: 16 * (-0.5 - 0.5) = -16.
    pairs = np.array([[0, 0, 1, 1.0], [0, 0, 2, 1.0], [0, 1, 2, 1.0]])
    assert elo.game_elo(3, pairs)[-1].tolist() == [1016.0, 1000.0, 984.0]
    # Two players: the Elo update of Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement Learning"
    # (NUS USP group report, 2021), equations 6.1-6.2, game by game.
    two = np.array([[0, 0, 1, 1.0], [1, 0, 1, 0.0], [2, 1, 0, 0.5]])
    np.testing.assert_allclose(elo.game_elo(2, two), elo.elo_history(2, two[:, 1:]))


def test_bootstrap_intervals_separate_a_dominant_agent():
    rng = np.random.default_rng(0)
    # 300 games: agent 0 beats 1 with probability 0.8.
    score = (rng.random(300) < 0.8).astype(float)
    pairs = np.column_stack([np.arange(300), np.zeros(300), np.ones(300), score])
    r = elo.bootstrap_ratings(pairs, ("strong", "weak"), num_samples=200)
    assert r.bradley_terry_ci[0, 0] <= r.bradley_terry[0] <= r.bradley_terry_ci[0, 1]
    assert r.bradley_terry_ci[0, 0] > r.bradley_terry_ci[1, 1]  # intervals do not overlap
    # The BT gap is 400 log10(p / (1 - p)) for the observed p (prior 0.5 each way), within the interval.
    p = (score.sum() + 0.5) / 301.0
    gap = r.bradley_terry[0] - r.bradley_terry[1]
    assert abs(gap - 400 * np.log10(p / (1 - p))) < 1e-6
    with pytest.raises(ValueError, match="no pairwise"):
        elo.bootstrap_ratings(np.zeros((0, 4)), ("a", "b"))


def test_bootstrap_ratings_with_too_few_names_names_the_counts():
    """Bug: agent ids beyond ``names`` raised a bare IndexError from deep inside the resampling."""
    three_agents = np.array([[0, 0, 1, 1.0], [1, 1, 2, 0.0], [2, 0, 2, 0.5]])  # ids 0, 1, 2
    with pytest.raises(ValueError, match=r"3 agents .* names has 2"):
        elo.bootstrap_ratings(three_agents, ("a", "b"), num_samples=2)
    with pytest.raises(ValueError, match="non-negative integers"):
        elo.bootstrap_ratings(np.array([[0, -1, 1, 1.0]]), ("a", "b"), num_samples=2)
    with pytest.raises(ValueError, match="non-negative integers"):
        elo.bootstrap_ratings(np.array([[0, 0.5, 1, 1.0]]), ("a", "b"), num_samples=2)


def test_four_seat_round_robin_lineups_and_ratings():
    assert len(elo.round_robin_lineups(3, 4)) == 12
    assert elo.round_robin_lineups(3, 2) == [(0, 1), (0, 2), (1, 2)]
    env = jaxgames.make("battlesnake", board_size=7, num_snakes=4, observation="none", max_turns=40)
    from jaxgames.agents import RandomAgent

    agents = [Always(0, "up"), RandomAgent()]
    t = elo.round_robin(env, agents, 4, jax.random.key(0), max_steps=50, bootstrap_samples=20)
    assert len(t.lineups) == 3 and t.elo.shape == (5, 2)
    # Walking into a wall loses to random play far more often than not.
    assert t.bradley_terry[1] > t.bradley_terry[0] and t.wins[1, 0] > t.wins[0, 1]


def _same_result(a, b):
    for field in ("agent_of_seat", "returns", "placement", "length", "finished", "truncated", "timed_out"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert a.stats.keys() == b.stats.keys()
    for k in a.stats:
        np.testing.assert_array_equal(a.stats[k], b.stats[k], err_msg=k)


def test_chunked_matches_equal_one_batch_bitwise():
    """Every game keeps its own key streams: chunks of any size (the last padded) give the same games."""
    from jaxgames.agents import RandomAgent
    from jaxgames.agents.battlesnake import RandomSafeAgent

    dab = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2)
    one = arena.play(dab, (RandomAgent(), RandomAgent()), 13, jax.random.key(4), seating="permute")
    for chunk in (5, 40):  # 5: three chunks, the last padded; 40: more than the 13 games, one batch
        _same_result(one, arena.play(dab, (RandomAgent(), RandomAgent()), 13, jax.random.key(4), seating="permute",
                                     chunk_size=chunk))
    snake = jaxgames.make("battlesnake", board_size=7, num_snakes=4)  # chance events (food) and 4 seats
    agents = (RandomSafeAgent(), RandomAgent())
    one = arena.play(snake, agents, 6, jax.random.key(5), lineup=(0, 1, 1, 1), max_steps=60)
    _same_result(one, arena.play(snake, agents, 6, jax.random.key(5), lineup=(0, 1, 1, 1), max_steps=60, chunk_size=4))
    assert len(set(one.length.tolist())) > 1  # the games differ (so a shared stream would have shown)


def test_chunk_size_bad_input():
    from jaxgames.agents import RandomAgent

    env = jaxgames.make("dots_and_boxes", num_rows=1, num_cols=1)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="chunk_size must be a positive int"):
            arena.play(env, (RandomAgent(), RandomAgent()), 4, jax.random.key(0), chunk_size=bad)

    class First(HostAgent):
        name = "host_first"

        def act(self, env, state, rng, player):
            return int(np.argmax(state.legal_action_mask))

    with pytest.raises(ValueError, match="chunk_size needs every agent to be a JaxAgent"):
        arena.play(env, (First(), RandomAgent()), 4, jax.random.key(0), chunk_size=2)


def test_round_robin_in_chunks_equals_one_batch():
    from jaxgames.agents import RandomAgent
    from jaxgames.agents.dots_and_boxes import GreedyAgent

    env = jaxgames.make("dots_and_boxes", num_rows=2, num_cols=2)
    agents = (RandomAgent(), GreedyAgent())
    whole = elo.round_robin(env, agents, 9, jax.random.key(6), bootstrap_samples=10)
    chunked = elo.round_robin(env, agents, 9, jax.random.key(6), bootstrap_samples=10, chunk_size=4)
    np.testing.assert_array_equal(whole.wins, chunked.wins)
    np.testing.assert_array_equal(whole.elo, chunked.elo)
    refilled = elo.round_robin(env, agents, 9, jax.random.key(6), bootstrap_samples=10, chunk_size=4, refill=True)
    np.testing.assert_array_equal(whole.wins, refilled.wins)
    np.testing.assert_array_equal(whole.elo, refilled.elo)


def test_a_solo_snake_that_dies_or_only_survives_has_not_won():
    """Bug: a 1-snake game placed the lone snake 1st alone, so ``won()`` was True after it hit the wall
    (return -1) and solo win rates read 100%. By hand: always moving up on a 7x7 board, the snake leaves the
    board within 7 moves (return -1, terminated); with ``max_turns=1`` its one move up from any start point
    (rows 1..5) stays on the board and the game is truncated alive (return 0). Neither is a win."""
    up = Always(0, "up")  # rules.UP
    dies = arena.play(jaxgames.make("battlesnake", board_size=7, num_snakes=1, observation="none", max_turns=100),
                      (up,), 3, jax.random.key(0), max_steps=50)
    assert dies.returns.tolist() == [[-1.0]] * 3
    assert dies.finished.all() and not dies.truncated.any() and not dies.timed_out.any()
    assert (dies.length <= 7).all()
    assert dies.placement.tolist() == [[1]] * 3  # alone, hence first
    assert not dies.won().any() and dies.per_agent()["up"]["win_rate"] == 0.0
    survives = arena.play(jaxgames.make("battlesnake", board_size=7, num_snakes=1, observation="none", max_turns=1),
                          (up,), 3, jax.random.key(1), max_steps=50)
    assert survives.returns.tolist() == [[0.0]] * 3 and survives.truncated.all() and not survives.timed_out.any()
    assert not survives.won().any()


def test_solo_won_counts_only_a_positive_return():
    """The one-seat rule on hand-made results: placed 1 alone, not timed out, and a positive return."""
    def result(returns, timed_out):
        g = len(returns)
        return arena.ArenaResult(("a",), np.zeros((g, 1), np.int32), np.array(returns, np.float32)[:, None],
                                 np.ones((g, 1), np.int32), np.ones(g, np.int32), ~np.array(timed_out),
                                 np.zeros(g, bool), np.array(timed_out), np.zeros((g, 1)), {})

    assert result([1.0, -1.0, 0.0, 1.0], [False, False, False, True]).won()[:, 0].tolist() == [True, False, False, False]
