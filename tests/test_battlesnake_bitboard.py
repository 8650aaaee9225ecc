"""The bit-packed Battlesnake search (`bitboard`): packing, hand-derived neighbour sets, and equality with the
bool reference ``voronoi.search`` on random-play boards."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.games.battlesnake import Battlesnake, bitboard, evaluation, rules
from tests.reference import battlesnake_voronoi as voronoi
from jaxgames.games.battlesnake.rules import Board


def _cells(size: int, points) -> np.ndarray:
    """bool ``[size * size]`` with the ``(x, y)`` points set (flat index ``x * size + y``)."""
    g = np.zeros(size * size, bool)
    for x, y in points:
        g[x * size + y] = True
    return g


@functools.lru_cache(maxsize=None)
def _spread_cells(size: int):
    """jit: bool ``[..., C]`` -> pack, `bitboard.spread`, unpack (one compile per size)."""
    return jax.jit(lambda g: bitboard.unpack(bitboard.spread(bitboard.pack(g), size), size * size))


# ---------------------------------------------------------------- packing


@pytest.mark.parametrize("size", [7, 11, 25])
def test_pack_unpack_round_trip(size):
    cells = size * size
    w = bitboard.num_words(cells)
    assert w == -(-cells // 32)
    grid = np.random.default_rng(size).random((3, 2, cells)) < 0.4
    words, back, counts = jax.jit(lambda g: (bitboard.pack(g), bitboard.unpack(bitboard.pack(g), cells),
                                             bitboard.count(bitboard.pack(g))))(grid)
    assert words.shape == (3, 2, w) and words.dtype == jnp.uint32
    np.testing.assert_array_equal(np.asarray(back), grid)
    np.testing.assert_array_equal(np.asarray(counts), grid.sum(-1))
    # The layout: cell i is bit i % 32 of word i // 32; nothing beyond the last cell.
    probes = [0, 31, 32, cells - 1]
    packed = np.asarray(jax.jit(bitboard.pack)(np.arange(cells)[None, :] == np.array(probes)[:, None]))
    for i, one in zip(probes, packed):
        expected = np.zeros(w, np.uint32)
        expected[i // 32] = np.uint32(1) << np.uint32(i % 32)
        np.testing.assert_array_equal(one, expected)
    full = np.asarray(bitboard._pack_np(np.ones(cells, bool)))
    assert int(full[-1]) == (1 << (cells - 32 * (w - 1))) - 1
    np.testing.assert_array_equal(np.asarray(jax.jit(bitboard.pack)(np.ones(cells, bool))), full)


# ---------------------------------------------------------------- spread

# (size, cell, its 4-neighbours on the board), derived by hand; flat indices in comments where a case
# sits on a word boundary (bit 31 / bit 32) or on a column edge next to one.
SPREAD_CASES = [
    (7, (0, 0), [(0, 1), (1, 0)]),  # corner
    (7, (6, 6), [(6, 5), (5, 6)]),  # corner: flat 48, the last cell
    (7, (0, 6), [(0, 5), (1, 6)]),  # corner: flat 6, y+1 must not wrap to (1, 0)
    (7, (6, 0), [(5, 0), (6, 1)]),  # corner: flat 42, y-1 must not wrap to (5, 6)
    (7, (3, 3), [(2, 3), (4, 3), (3, 2), (3, 4)]),  # centre
    (7, (0, 3), [(0, 2), (0, 4), (1, 3)]),  # left edge
    (7, (3, 0), [(2, 0), (4, 0), (3, 1)]),  # bottom edge: flat 21
    (7, (4, 3), [(3, 3), (5, 3), (4, 2), (4, 4)]),  # flat 31 -> 24, 38, 30, 32
    (7, (4, 4), [(3, 4), (5, 4), (4, 3), (4, 5)]),  # flat 32 -> 25, 39, 31, 33
    (11, (2, 9), [(1, 9), (3, 9), (2, 8), (2, 10)]),  # flat 31 -> 20, 42, 30, 32
    (11, (2, 10), [(1, 10), (3, 10), (2, 9)]),  # flat 32, top edge: not to 33 = (3, 0)
    (11, (3, 0), [(2, 0), (4, 0), (3, 1)]),  # flat 33, bottom edge: not to 32 = (2, 10)
    (11, (10, 10), [(9, 10), (10, 9)]),  # flat 120, the last cell
    (25, (0, 0), [(0, 1), (1, 0)]),
    (25, (24, 24), [(23, 24), (24, 23)]),  # flat 624, the last cell
    (25, (12, 12), [(11, 12), (13, 12), (12, 11), (12, 13)]),
    (25, (1, 6), [(0, 6), (2, 6), (1, 5), (1, 7)]),  # flat 31 -> 6, 56, 30, 32
    (25, (24, 0), [(23, 0), (24, 1)]),  # flat 600
]


@pytest.mark.parametrize("size, cell, neighbours", SPREAD_CASES)
def test_spread_single_cell(size, cell, neighbours):
    out = _spread_cells(size)(_cells(size, [cell]))
    np.testing.assert_array_equal(np.asarray(out), _cells(size, neighbours))


@pytest.mark.parametrize("size", [7, 11, 19, 25])
def test_spread_matches_bool_spread(size):
    cells = size * size
    grid = np.random.default_rng(size).random((4, cells)) < 0.15
    grid[0], grid[1] = True, False
    out, ref = jax.jit(lambda g: (bitboard.spread(bitboard.pack(g), size), voronoi.spread(g, size)))(grid)
    np.testing.assert_array_equal(np.asarray(bitboard.unpack(out, cells)), np.asarray(ref))
    # Bits beyond the last cell stay 0 (the full board spreads to the full board).
    np.testing.assert_array_equal(np.asarray(out[0]), bitboard._pack_np(np.ones(cells, bool)))


# ---------------------------------------------------------------- search, by hand


def _board(size: int, heads, food) -> Board:
    """Stacked length-3 start snakes at ``heads``, food at ``food``."""
    n = len(heads)
    body = np.zeros((n, size * size), rules.body_dtype(size))
    for s, (x, y) in enumerate(heads):
        body[s, x * size + y] = 3
    return Board(
        head=jnp.asarray(np.array(heads, np.int32)),
        length=jnp.full(n, 3, jnp.int32),
        health=jnp.full(n, 100, jnp.int32),
        body=jnp.asarray(body),
        food=jnp.asarray(_cells(size, food)),
        hazards=jnp.zeros(size * size, jnp.int8),
        eliminated_cause=jnp.zeros(n, jnp.int32),
        eliminated_on_turn=jnp.zeros(n, jnp.int32),
        eliminated_by=jnp.full(n, -1, jnp.int32),
        turn=jnp.int32(0),
    )


def test_search_by_hand():
    # 7x7, A at (1, 3), B at (5, 3): column x = 3 is a tie, columns 0..2 are A's, 4..6 B's.
    # Food at (2, 0): 1 + 3 = 4 moves from A, 3 + 3 = 6 from B (each BFS ignores the other snake).
    board = _board(7, [(1, 3), (5, 3)], [(2, 0)])
    s = jax.jit(bitboard.search, static_argnums=1)(board, 49)
    np.testing.assert_array_equal(np.asarray(s.owned_count), [21, 21])
    np.testing.assert_array_equal(np.asarray(bitboard.unpack(s.owned, 49)),
                                  np.stack([_cells(7, [(x, y) for x in range(3) for y in range(7)]),
                                            _cells(7, [(x, y) for x in range(4, 7) for y in range(7)])]))
    assert np.asarray(bitboard.unpack(s.claimed, 49)).all()
    np.testing.assert_array_equal(np.asarray(s.food_distance), [4, 6])
    # Three rounds: A owns the cells of x <= 2 within 3 moves (x=0: 5, x=1: 7, x=2: 5), B likewise; the
    # 3 cells (3, 2..4) tie; no food within 3 moves.
    s = bitboard.search(board, 3)
    np.testing.assert_array_equal(np.asarray(s.owned_count), [17, 17])
    assert int(bitboard.count(s.claimed)) == 17 + 17 + 3
    np.testing.assert_array_equal(np.asarray(s.food_distance), [bitboard.UNREACHABLE] * 2)


def test_search_rejects_bad_rounds():
    board = _board(7, [(1, 3)], [])
    with pytest.raises(ValueError):
        bitboard.search(board, 0)
    with pytest.raises(ValueError):
        bitboard.search(board, 50)
    with pytest.raises(TypeError):
        bitboard.search(board, True)


# ---------------------------------------------------------------- search vs the bool reference


FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
"""Compiler options for the test scaffolding (random games, the reference): it runs once, compiling dominates."""


def _compiled(fn, *args, options=None):
    return jax.jit(fn).lower(*args).compile(compiler_options=options or {})(*args)


@functools.lru_cache(maxsize=None)
def _boards(size: int, num_snakes: int, turns: int, games: int, seed: int) -> Board:
    """The boards of ``games`` random games after each of ``turns`` turns, ``[turns * games]``.

    Half the games move uniformly among the legal moves (snakes die early: boards with eliminated snakes,
    heads off the board), half avoid certain deaths where they can (long mid-game positions).
    """
    env = Battlesnake(board_size=size, num_snakes=num_snakes, observation="none")

    def play(key, careful):
        k0, k1 = jax.random.split(key)

        def step(st, k):
            ka, ks = jax.random.split(k)
            safe = st.legal_action_mask & ~rules.certain_deaths(st.board)
            safe = jnp.where(jnp.any(safe, axis=1, keepdims=True), safe, st.legal_action_mask)
            mask = jnp.where(careful, safe, st.legal_action_mask)
            st = env.step(st, jax.random.categorical(ka, jnp.where(mask, 0.0, -jnp.inf)), ks)
            return st, st.board

        _, boards = jax.lax.scan(step, env.init(k0), jax.random.split(k1, turns))
        return boards

    keys = jax.random.split(jax.random.key(seed), games)
    boards = _compiled(jax.vmap(play), keys, jnp.arange(games) % 2 == 0, options=FAST_COMPILE)
    return jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), boards)


CONFIGS = [  # size, snakes, turns, games
    (7, 2, 24, 8),
    (11, 2, 40, 6),
    (11, 4, 40, 6),
    (19, 8, 40, 3),
]


@pytest.mark.parametrize("size, num_snakes, turns, games", CONFIGS)
def test_search_matches_reference(size, num_snakes, turns, games):
    boards = _boards(size, num_snakes, turns, games, seed=size + num_snakes)
    cells = size * size
    every = (cells, 3)  # every round (exact) and a short search
    refs = _compiled(lambda b: [jax.vmap(lambda x: voronoi.search(x, r))(b) for r in every], boards,
                     options=FAST_COMPILE)
    gots = _compiled(lambda b: [jax.vmap(lambda x: bitboard.search(x, r))(b) for r in every], boards)
    alive = np.asarray(boards.alive)
    # The boards exercise what matters: eliminated snakes and several living ones.
    assert (~alive).any() and (alive.sum(1) >= 2).any()

    for rounds, ref, got in zip(every, refs, gots):
        owned = np.asarray(ref.owned)
        assert got.owned.dtype == jnp.uint32 and got.owned.shape == owned.shape[:2] + (bitboard.num_words(cells),)
        np.testing.assert_array_equal(np.asarray(bitboard.unpack(got.owned, cells)), owned, err_msg=f"{rounds=}")
        np.testing.assert_array_equal(np.asarray(got.owned_count), owned.sum(-1), err_msg=f"{rounds=}")
        np.testing.assert_array_equal(np.asarray(bitboard.unpack(got.claimed, cells)), np.asarray(ref.claimed),
                                      err_msg=f"{rounds=}")
        np.testing.assert_array_equal(np.asarray(got.food_distance), np.asarray(ref.food_distance),
                                      err_msg=f"{rounds=}")
        np.testing.assert_array_equal(np.asarray(got.space), np.asarray(ref.solo_seen).sum(-1), err_msg=f"{rounds=}")
        assert got.owned_count.dtype == jnp.int32 and got.food_distance.dtype == jnp.int32 and got.space.dtype == jnp.int32
        # ... ties, found and unfound food.
        assert (np.asarray(ref.claimed) & ~owned.any(1)).any()
        fd = np.asarray(ref.food_distance)
        assert (fd < bitboard.UNREACHABLE).any() and (fd == bitboard.UNREACHABLE).any()


def test_search_matches_reference_on_random_25x25_grids():
    # Not game positions: random timed bodies (0..40, on a third of the cells), food, and 8 heads of which
    # some are eliminated (heads off the board or on it), on the largest board (20 words).
    size, n, count = 25, 8, 24
    cells = size * size
    rng = np.random.default_rng(0)
    body = np.where(rng.random((count, n, cells)) < 0.33, rng.integers(0, 41, (count, n, cells)), 0)
    head = rng.integers(0, size, (count, n, 2))
    cause = np.where(rng.random((count, n)) < 0.3, rules.COLLISION, 0)
    head[:, 0] = np.where(cause[:, :1] > 0, [-1, 5], head[:, 0])  # snake 0, when eliminated: off the board
    boards = Board(
        head=jnp.asarray(head, jnp.int32), length=jnp.full((count, n), 3, jnp.int32),
        health=jnp.full((count, n), 100, jnp.int32), body=jnp.asarray(body, rules.body_dtype(size)),
        food=jnp.asarray(rng.random((count, cells)) < 0.01), hazards=jnp.zeros((count, cells), jnp.int8),
        eliminated_cause=jnp.asarray(cause, jnp.int32), eliminated_on_turn=jnp.zeros((count, n), jnp.int32),
        eliminated_by=jnp.full((count, n), -1, jnp.int32), turn=jnp.zeros(count, jnp.int32))
    every = (cells, 3)
    refs = _compiled(lambda b: [jax.vmap(lambda x: voronoi.search(x, r))(b) for r in every], boards,
                     options=FAST_COMPILE)
    gots = _compiled(lambda b: [jax.vmap(lambda x: bitboard.search(x, r))(b) for r in every], boards)
    for ref, got in zip(refs, gots):
        np.testing.assert_array_equal(np.asarray(bitboard.unpack(got.owned, cells)), np.asarray(ref.owned))
        np.testing.assert_array_equal(np.asarray(got.owned_count), np.asarray(ref.owned).sum(-1))
        np.testing.assert_array_equal(np.asarray(bitboard.unpack(got.claimed, cells)), np.asarray(ref.claimed))
        np.testing.assert_array_equal(np.asarray(got.food_distance), np.asarray(ref.food_distance))
        np.testing.assert_array_equal(np.asarray(got.space), np.asarray(ref.solo_seen).sum(-1))
    assert np.asarray(refs[0].owned).sum() > 10 * count  # the heads got somewhere


def test_search_single_board_jit_and_eager():
    boards = _boards(11, 4, 40, 6, seed=15)
    for i in (37, 150):
        board = jax.tree.map(lambda a: a[i], boards)
        ref = voronoi.search(board, 121)
        for got in (bitboard.search(board), jax.jit(bitboard.search, static_argnums=1)(board, 121)):
            np.testing.assert_array_equal(np.asarray(bitboard.unpack(got.owned, 121)), np.asarray(ref.owned))
            np.testing.assert_array_equal(np.asarray(bitboard.unpack(got.claimed, 121)), np.asarray(ref.claimed))
            np.testing.assert_array_equal(np.asarray(got.food_distance), np.asarray(ref.food_distance))
            np.testing.assert_array_equal(np.asarray(got.space), np.asarray(ref.solo_seen).sum(-1))


def test_free_from_and_unreachable_match_evaluation():
    boards = _boards(11, 4, 40, 6, seed=15)
    np.testing.assert_array_equal(np.asarray(jax.vmap(bitboard.free_from)(boards)),
                                  np.asarray(jax.vmap(voronoi.free_from)(boards)))
    assert bitboard.UNREACHABLE == voronoi.UNREACHABLE == evaluation.UNREACHABLE


def test_solo_rows_and_players_equal_the_reference_rows():
    # The own BFS of some snakes only (`solo`), stopped at food (`space=False`): the reference's rows for those
    # snakes; the shared partition unchanged. `evaluate(players=...)` then equals the full evaluation's entries.
    boards = _boards(11, 4, 40, 6, seed=15)
    ref = _compiled(lambda b: jax.vmap(lambda x: voronoi.search(x, 121))(b), boards, options=FAST_COMPILE)
    picks = jnp.asarray([2, 0], jnp.int32)
    for space in (True, False):
        got = jax.jit(jax.vmap(lambda x, sp=space: bitboard.search(x, solo=picks, space=sp)))(boards)
        np.testing.assert_array_equal(np.asarray(bitboard.unpack(got.owned, 121)), np.asarray(ref.owned))
        np.testing.assert_array_equal(np.asarray(got.food_distance), np.asarray(ref.food_distance)[:, [2, 0]])
        if space:
            np.testing.assert_array_equal(np.asarray(got.space), np.asarray(ref.solo_seen).sum(-1)[:, [2, 0]])
    assert (np.asarray(ref.food_distance)[:, [2, 0]] < bitboard.UNREACHABLE).any()
    for weights in ({}, {"space_weight": 0.5, "won_food_weight": 0.3, "hungry_unless_longest": True,
                         "starvation_loss": True}):
        every = jax.jit(jax.vmap(lambda x, w=weights: evaluation.evaluate(x, **w)))(boards)
        for player in range(4):
            one = jax.jit(jax.vmap(lambda x, p=player, w=weights: evaluation.evaluate(
                x, players=jnp.asarray([p], jnp.int32), **w)))(boards)
            np.testing.assert_allclose(np.asarray(one)[:, 0], np.asarray(every)[:, player], rtol=0, atol=1e-6)
    feats = jax.jit(jax.vmap(lambda x: evaluation.features(x, players=picks)))(boards)
    full = jax.jit(jax.vmap(evaluation.features))(boards)
    for name, got, want in zip(evaluation.Features._fields, feats, full):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want)[:, [2, 0]], rtol=0, atol=1e-6, err_msg=name)
    with pytest.raises(TypeError, match="players is not one of its keywords"):
        evaluation.leaf_value(Battlesnake(num_snakes=2), players=jnp.zeros(1, jnp.int32))
