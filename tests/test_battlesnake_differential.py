"""Differential tests: the JAX kernel against the plain-Python reference of the official rules.

Thousands of random games are played by one jitted, vmapped ``lax.scan``
(moves: mostly random among the masked moves, sometimes any code including
moves into the neck and unknown codes); every recorded turn is replayed by
``tests/reference/battlesnake_reference.py`` with the same moves and the
food the JAX sampler spawned, and the whole board is compared. The sampler
itself is checked against the reference's candidate cells and count rule.
"""

from __future__ import annotations

import collections
import itertools
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.battlesnake import rules, spawn
from jaxgames.games.battlesnake.rules import Params
from tests.reference import battlesnake_reference as ref

T = 48  # turns recorded per game (random games rarely last longer)


def _policy(key, board):
    k1, k2, k3 = jax.random.split(key, 3)
    mask = rules.legal_moves(board)
    masked = jax.random.categorical(k1, jnp.where(mask, 0.0, -1e9), axis=-1)
    wild = jax.random.randint(k2, (board.num_snakes,), -1, 4)  # -1: unknown move
    return jnp.where(jax.random.uniform(k3, (board.num_snakes,)) < 0.1, wild, masked).astype(jnp.int32)


def _play_one(key, hazards, params, *, food_slots):
    k0, key = jax.random.split(key)
    board = spawn.init_board(k0, NUM[0], NUM[1])
    board = board.replace(hazards=hazards)

    def turn(board, k):
        k_move, k_food = jax.random.split(k)
        moves = _policy(k_move, board)
        resolved = rules.resolve(board, moves, params)
        new_food = spawn.food_to_spawn(k_food, resolved.board, params, food_slots=food_slots) & ~resolved.game_over
        nxt = rules.finish_turn(resolved, new_food)
        return nxt, (board, moves, new_food)

    last, (boards, moves, food) = jax.lax.scan(turn, board, jax.random.split(key, T))
    return boards, moves, food, last


NUM = [2, 7]  # (num_snakes, size), set per test before tracing


def _record(num_snakes, size, n_games, seed, hazards=None, params=rules.DEFAULT_PARAMS):
    NUM[:] = [num_snakes, size]
    if hazards is None:
        hazards = jnp.zeros((n_games, size * size), jnp.int8)
    # params are traced here, so the static food bound is given (spawn.food_to_spawn).
    play_one = functools.partial(_play_one, food_slots=spawn.default_food_slots(params))
    play = jax.jit(jax.vmap(play_one, in_axes=(0, 0, None)))
    out = play(jax.random.split(jax.random.key(seed), n_games), hazards, params)
    return jax.tree.map(np.asarray, out)


def _ref_board(boards, g, t):
    b = jax.tree.map(lambda a: a[g, t], boards) if t is not None else jax.tree.map(lambda a: a[g], boards)
    size = b.size
    snakes = []
    for s in range(b.num_snakes):
        snakes.append(
            ref.Snake(
                body=rules.body_list(b, s),
                health=int(b.health[s]),
                eliminated_cause=rules.ELIMINATION_CAUSES[int(b.eliminated_cause[s])],
                eliminated_on_turn=int(b.eliminated_on_turn[s]),
                eliminated_by=int(b.eliminated_by[s]),
            )
        )
    grid_food, grid_hz = b.food.reshape(size, size), b.hazards.reshape(size, size)
    food = [tuple(int(v) for v in p) for p in np.argwhere(grid_food)]
    hazards = [tuple(int(v) for v in p) for p in np.argwhere(grid_hz > 0) for _ in range(int(grid_hz[tuple(p)]))]
    return ref.Board(size=size, snakes=snakes, food=food, hazards=hazards, turn=int(b.turn))


def _same(a: ref.Board, b: ref.Board, where: str) -> None:
    assert a.turn == b.turn, where
    assert sorted(a.food) == sorted(b.food), where
    for i, (x, y) in enumerate(zip(a.snakes, b.snakes)):
        assert x.body == y.body, f"{where} snake {i} body {x.body} != {y.body}"
        assert x.health == y.health, f"{where} snake {i} health"
        assert x.eliminated_cause == y.eliminated_cause, f"{where} snake {i} cause {x.eliminated_cause!r} != {y.eliminated_cause!r}"
        if x.eliminated_cause:
            assert x.eliminated_on_turn == y.eliminated_on_turn, f"{where} snake {i} turn"
        if x.eliminated_cause in ("snake-collision", "snake-self-collision", "head-collision"):
            assert x.eliminated_by == y.eliminated_by, f"{where} snake {i} by"


def _replay_all(rec, *, params=rules.DEFAULT_PARAMS, min_games_over=0.5):
    boards, moves, food, last = rec
    n_games = moves.shape[0]
    causes = collections.Counter()
    over = 0
    kw = {"health_loss": int(params.health_loss), "hazard_damage": int(params.hazard_damage)}
    for g in range(n_games):
        cur = _ref_board(boards, g, 0)
        for t in range(T):
            where = f"game {g} turn {t}"
            mv = [rules.MOVE_NAMES[m] if 0 <= m < 4 else "unknown" for m in moves[g, t]]
            mid, was_over = ref.resolve(cur, mv, **kw)
            spawned = [tuple(int(v) for v in p) for p in np.argwhere(food[g, t].reshape(cur.size, cur.size))]
            if not was_over:
                free = ref.unoccupied_points(mid)
                assert set(spawned) <= free, f"{where}: food {spawned} outside the candidates"
                shortfall = max(params.minimum_food - len(mid.food), 0)
                if shortfall:
                    assert len(spawned) == min(shortfall, len(free)), where
                else:
                    assert len(spawned) in (0, 1) if free else len(spawned) == 0, where
            nxt = ref.step(cur, mv, spawned, **kw)
            got = _ref_board(boards, g, t + 1) if t + 1 < T else _ref_board(last, g, None)
            _same(nxt, got, where)
            cur = nxt
            if was_over:
                over += 1
                break
        causes.update(s.eliminated_cause for s in cur.snakes)
    assert over >= min_games_over * n_games, f"only {over}/{n_games} games finished in {T} turns"
    return causes


def test_differential_7x7_two_snakes():
    causes = _replay_all(_record(2, 7, 1500, seed=1))
    # The random games exercise every standard cause of elimination.
    for c in ("snake-collision", "snake-self-collision", "head-collision", "wall-collision"):
        assert causes[c] > 0, causes


def test_differential_11x11_four_snakes():
    causes = _replay_all(_record(4, 11, 1000, seed=2))
    for c in ("snake-collision", "snake-self-collision", "head-collision", "wall-collision"):
        assert causes[c] > 0, causes


def test_differential_19x19_eight_snakes():
    """Eight snakes (corners and cardinal points mixed) on 19x19: int16 body grids."""
    causes = _replay_all(_record(8, 19, 200, seed=5), min_games_over=0.2)
    assert causes["snake-collision"] > 0 and causes["head-collision"] > 0, causes


def test_differential_solo_7x7():
    """One snake: the game ends when it is eliminated (``GameOverSolo``)."""
    causes = _replay_all(_record(1, 7, 300, seed=6), min_games_over=0.9)
    # Alone on the board, the snake can only die by wall, self collision or starvation.
    assert sum(causes.values()) > 0 and set(causes) <= {"wall-collision", "snake-self-collision", "out-of-health"}, causes


def test_differential_11x11_hazards_learn_to_walk():
    """Random hazard cells (some doubled) with damage 14, and health lost 9 per turn."""
    n = 500
    k1, k2 = jax.random.split(jax.random.key(3))
    hazards = (jax.random.uniform(k1, (n, 121)) < 0.25).astype(jnp.int8)
    hazards = hazards + (jax.random.uniform(k2, (n, 121)) < 0.05).astype(jnp.int8)
    params = Params(food_spawn_chance=15, hazard_damage=14, health_loss=9, minimum_food=2)
    causes = _replay_all(_record(4, 11, n, seed=4, hazards=hazards, params=params), params=params)
    assert causes["hazard"] > 0 and causes["out-of-health"] > 0, causes


def test_initial_boards_match_reference_rule():
    """Start positions and initial food follow ``PlaceSnakesFixed``/``PlaceFoodFixed``."""
    for num_snakes, size in ((2, 7), (4, 11), (5, 7), (8, 19)):
        boards = jax.vmap(lambda k, n=num_snakes, w=size: spawn.init_board(k, n, w))(jax.random.split(jax.random.key(5), 200))
        boards = jax.tree.map(np.asarray, boards)
        lo, md, hi = 1, (size - 1) // 2, size - 2
        corners = {(lo, lo), (lo, hi), (hi, lo), (hi, hi)}
        cardinals = {(lo, md), (md, lo), (md, hi), (hi, md)}
        c = (size - 1) // 2
        seen_first = set()
        for g in range(200):
            b = _ref_board(boards, g, None)
            heads = [s.body[0] for s in b.snakes]
            assert all(s.body == [s.body[0]] * 3 and s.health == 100 for s in b.snakes)
            first = set(heads[: min(4, num_snakes)])
            assert first <= corners or first <= cardinals, heads
            seen_first.add(frozenset(first) <= corners)
            if num_snakes > 4:
                assert set(heads) - (corners | cardinals) == set()
            assert (c, c) in b.food
            if num_snakes <= 4 or size >= 11:
                assert len(b.food) == num_snakes + 1
                for s in b.snakes:
                    hx, hy = s.body[0]
                    near = [f for f in b.food if abs(f[0] - hx) == 1 and abs(f[1] - hy) == 1]
                    assert near, (s.body[0], b.food)
                    assert all(f[0] not in (0, size - 1) or f[1] not in (0, size - 1) for f in near)
            else:
                assert b.food == [(c, c)]
        if num_snakes >= 2:
            assert seen_first == {True, False}, "corners and cardinals should both occur"


def test_food_spawn_chance_is_fourteen_percent():
    """``100 - randint(0, 100) < 15`` fires with probability 14/100 (``maps/standard.go``)."""
    board = spawn.init_board(jax.random.key(0), 2, 7)  # 3 food on the board: no shortfall
    n = 20000
    new = jax.jit(jax.vmap(lambda k: spawn.food_to_spawn(k, board, Params())))(jax.random.split(jax.random.key(1), n))
    rate = float(jnp.mean(jnp.sum(new, axis=1)))
    assert abs(rate - 0.14) < 4 * np.sqrt(0.14 * 0.86 / n), rate
    # Uniform over the candidates (chi-square against the reference's candidate set).
    cand = np.asarray(spawn.food_candidates(board))
    ref_board = _ref_board(jax.tree.map(lambda a: np.asarray(a)[None], board), 0, None)
    assert {tuple(int(v) for v in p) for p in np.argwhere(cand.reshape(7, 7))} == ref.unoccupied_points(ref_board)
    counts = np.asarray(jnp.sum(new, axis=0))
    assert np.all(counts[~cand] == 0)
    cand, counts = cand.reshape(7, 7), counts.reshape(7, 7)
    k = cand.sum()
    expected = counts.sum() / k
    chi2 = float(((counts[cand] - expected) ** 2 / expected).sum())
    assert chi2 < k + 6 * np.sqrt(2 * k), chi2


def _dies_whatever_others_do(board: ref.Board, s: int, move: str, kw) -> bool:
    """The oracle: snake ``s`` playing ``move`` is eliminated for every combination of the others' moves."""
    others = [j for j in range(len(board.snakes)) if j != s and board.snakes[j].alive]
    for combo in itertools.product(ref.MOVES, repeat=len(others)):
        mv = ["up"] * len(board.snakes)
        mv[s] = move
        for j, m in zip(others, combo):
            mv[j] = m
        after, _ = ref.resolve(board, mv, **kw)
        if after.snakes[s].alive:
            return False
    return True


# [games, turns] boards -> [games, turns, S, 4]; built once for the module.
_certain_deaths_batch = jax.jit(jax.vmap(jax.vmap(rules.certain_deaths, in_axes=(0, None)), in_axes=(0, None)))


def _certain_deaths_against_oracle(num_snakes, size, seed, n_boards, hazards=None, params=rules.DEFAULT_PARAMS):
    boards, _, _, _ = _record(num_snakes, size, n_boards, seed, hazards=hazards, params=params)
    flags = np.asarray(_certain_deaths_batch(boards, params))
    kw = {"health_loss": int(params.health_loss), "hazard_damage": int(params.hazard_damage)}
    flagged = certain = 0
    for g in range(n_boards):
        for t in (2, 9, 20):  # three turns of each game, over before or not
            board = _ref_board(boards, g, t)
            for s, snake in enumerate(board.snakes):
                for m, name in enumerate(rules.MOVE_NAMES):
                    if not snake.alive or ref.game_over(board):
                        assert not flags[g, t, s, m], f"game {g} turn {t}: flags for a snake that does not move"
                        continue
                    truth = _dies_whatever_others_do(board, s, name, kw)
                    certain += truth
                    if flags[g, t, s, m]:
                        flagged += 1
                        assert truth, f"game {g} turn {t} snake {s} {name}: flagged certain, but some reply survives"
    return flagged, certain


def test_certain_deaths_are_certain_by_the_reference_rules():
    """Soundness of `rules.certain_deaths` against exhaustive replies of the plain-Python rules.

    Every flagged move must eliminate the snake for all 4^(S-1) replies of
    the others; and the set must be useful: most truly certain deaths of
    these random games (walls, bodies; starvation under learn-to-walk) are
    flagged (the misses are bodies of snakes that could leave the board).
    """
    flagged, certain = _certain_deaths_against_oracle(4, 7, 11, 24)
    assert certain > 100 and flagged >= 0.8 * certain, (flagged, certain)
    params = Params(health_loss=33, hazard_damage=14)
    hz = jnp.zeros((16, 49), jnp.int8).at[:, ::3].set(1)
    flagged, certain = _certain_deaths_against_oracle(3, 7, 12, 16, hazards=hz, params=params)
    assert certain > 50 and flagged >= 0.7 * certain, (flagged, certain)
