"""The official API JSON (parse, emit, errors) and exact replay of recorded games.

Request bodies here are written by hand in the documented format
(docs.battlesnake.com/api; the engine's ``client/models.go``). The recorded
games are played by the plain-Python reference of the official rules and
exported by this file's own exporter, not by the code under test.
"""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest

from jaxgames.games.battlesnake import api, rules
from tests.reference import battlesnake_reference as ref


def _snake(sid, body, health=90):
    pts = [{"x": x, "y": y} for x, y in body]
    return {"id": sid, "name": sid.upper(), "latency": "12", "health": health, "body": pts, "head": pts[0],
            "length": len(pts), "shout": "", "squad": "", "customizations": {"color": "#ff0000", "head": "default", "tail": "default"}}


def _request(snakes, food, you, *, size=11, turn=7, hazards=()):
    return {
        "game": {"id": "g-1", "ruleset": {"name": "standard", "version": "v1.2.3", "settings": {"foodSpawnChance": 15, "minimumFood": 1, "hazardDamagePerTurn": 0}},
                 "map": "standard", "timeout": 500, "source": "league"},
        "turn": turn,
        "board": {"height": size, "width": size, "snakes": snakes, "food": [{"x": x, "y": y} for x, y in food],
                  "hazards": [{"x": x, "y": y} for x, y in hazards]},
        "you": copy.deepcopy(snakes[you]),
    }


REQUEST = _request(
    [
        _snake("alpha", [(1, 1), (1, 2), (1, 3), (1, 3)], 100),
        _snake("beta", [(5, 5), (6, 5), (7, 5)], 54),
        _snake("gamma", [(9, 0), (9, 1), (8, 1), (8, 2)], 3),
    ],
    food=[(5, 6), (0, 0)],
    you=1,
)


def test_parse_request():
    r = api.parse_request(json.dumps(REQUEST))
    assert r.ids == ("alpha", "beta", "gamma") and r.you == 1 and r.turn == 7
    assert [rules.body_list(r.board, i) for i in range(3)] == [
        [(1, 1), (1, 2), (1, 3), (1, 3)], [(5, 5), (6, 5), (7, 5)], [(9, 0), (9, 1), (8, 1), (8, 2)]]
    assert r.board.health.tolist() == [100, 54, 3] and r.board.length.tolist() == [4, 3, 4]
    food = np.asarray(r.board.food).reshape(11, 11)
    assert food[5, 6] and food[0, 0] and food.sum() == 2
    assert bool(r.board.alive.all())


def test_parse_pads_and_keeps_ids():
    r = api.parse_request(REQUEST, num_snakes=4, ids=["gamma", "x", "beta", "alpha"])
    assert r.ids == ("gamma", "x", "beta", "alpha", "")[:4] and r.you == 2
    assert r.board.alive.tolist() == [True, False, True, True]
    assert rules.ELIMINATION_CAUSES[int(r.board.eliminated_cause[1])] == "unknown"


def test_host_arrays_parse_the_same_board_as_numpy():
    import jax

    ids = ["gamma", "x", "beta", "alpha"]
    dev = api.parse_request(REQUEST, num_snakes=4, ids=ids)
    host = api.parse_request(REQUEST, num_snakes=4, ids=ids, host_arrays=True)
    for name, a in vars(dev.board).items():
        b = getattr(host.board, name)
        assert isinstance(a, jax.Array) and isinstance(b, np.ndarray), name
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(np.asarray(a), b), name
    # the eliminated padding: no body, head off the board, cause "unknown"
    assert host.board.body[1].sum() == 0 and host.board.head[1].tolist() == [-1, -1]
    assert rules.ELIMINATION_CAUSES[int(host.board.eliminated_cause[1])] == "unknown"


def test_round_trip_to_request():
    r = api.parse_request(REQUEST)
    out = api.to_request(r.board, 2, r.ids, game=r.game)
    assert out["you"]["id"] == "gamma" and out["turn"] == 7
    assert out["board"]["snakes"][0]["body"] == REQUEST["board"]["snakes"][0]["body"]
    assert sorted((p["x"], p["y"]) for p in out["board"]["food"]) == [(0, 0), (5, 6)]
    again = api.parse_request(out)
    for a, b in zip(again.board.body, r.board.body):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _broken(path, value=None, delete=False):
    req = copy.deepcopy(REQUEST)
    obj = req
    for k in path[:-1]:
        obj = obj[k]
    if delete:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return req


@pytest.mark.parametrize(
    "req, match",
    [
        (_broken(["board"], delete=True), "missing the field 'board'"),
        (_broken(["you"], delete=True), "missing the field 'you'"),
        (_broken(["board", "snakes", 0, "health"], delete=True), "health"),
        (_broken(["board", "snakes", 1, "body", 2], {"x": 11, "y": 5}), "off the"),
        (_broken(["board", "snakes", 1, "body", 1], {"x": 7, "y": 7}), "contiguous"),
        (_broken(["board", "snakes", 1, "body"], []), "empty body"),
        (_broken(["board", "snakes", 1, "id"], "alpha"), "duplicate"),
        (_broken(["board", "height"], 9), "square"),
        (_broken(["board", "food", 0], {"x": "a", "y": 1}), "integer"),
        (_broken(["board", "snakes", 1, "head"], {"x": 6, "y": 5}), "head"),
        (_broken(["board", "snakes", 1, "length"], 4), "length"),
        ("{not json", "valid JSON"),
    ],
)
def test_malformed_requests_raise(req, match):
    with pytest.raises(ValueError, match=match):
        api.parse_request(req)


def test_apply_turn_checks_moves():
    r = api.parse_request(REQUEST)
    moves = {"alpha": "right", "beta": "up", "gamma": "left"}
    b = api.apply_turn(r.board, moves, [], r.ids)
    assert rules.body_list(b, 1) == [(5, 6), (5, 5), (6, 5), (6, 5)] and int(b.health[1]) == 100  # beta ate (5, 6)
    with pytest.raises(TypeError, match="string"):
        api.apply_turn(r.board, dict(moves, beta=1), [], r.ids)
    with pytest.raises(ValueError, match="no move"):
        api.apply_turn(r.board, {"alpha": "up"}, [], r.ids)
    with pytest.raises(ValueError, match="off the"):
        api.apply_turn(r.board, moves, [(11, 0)], r.ids)


def test_apply_turn_plays_the_default_move_for_any_other_string():
    """``standard.go: MoveSnakesStandard``: a move outside the four names is ``getDefaultMove``."""
    r = api.parse_request(REQUEST)
    # By hand from REQUEST: alpha's neck (1, 2) is above its head (1, 1), so it faces down;
    # beta's neck (6, 5) is right of its head (5, 5): it faces left, to (4, 5);
    # gamma's neck (9, 1) is above its head (9, 0): it faces down, off the board.
    b = api.apply_turn(r.board, {"alpha": "", "beta": "north", "gamma": "Up"}, [], r.ids)
    assert rules.body_list(b, 0) == [(1, 0), (1, 1), (1, 2), (1, 3)]
    assert rules.body_list(b, 1) == [(4, 5), (5, 5), (6, 5)]
    assert [rules.ELIMINATION_CAUSES[int(c)] for c in b.eliminated_cause] == ["", "", "wall-collision"]
    # A stacked body (turn 0) has no direction: up.
    start = api.parse_request(_request([_snake("a", [(3, 3)] * 3), _snake("b", [(7, 7)] * 3)], food=[], you=0))
    b0 = api.apply_turn(start.board, {"a": "sideways", "b": "down"}, [], start.ids)
    assert rules.body_list(b0, 0) == [(3, 4), (3, 3), (3, 3)] and rules.body_list(b0, 1) == [(7, 6), (7, 7), (7, 7)]


def test_apply_turn_matches_the_reference_with_wild_move_strings():
    """Random games where snakes answer any string; the plain-Python rules decide the default move."""
    rng = random.Random(11)
    ids = ["s0", "s1", "s2", "s3"]
    words = ["up", "down", "left", "right", "", "UP", "Left", "north", " up", "stay"]
    for _ in range(4):
        b = ref.start_board(11, 4, rng)
        board = api.parse_request(_export(b, ids)).board
        while not ref.game_over(b):
            moves = [rng.choice(words) if rng.random() < 0.3 else ref.random_legal_move(s, rng) for s in b.snakes]
            new_food = [] if rng.random() < 0.8 else [rng.choice(sorted(ref.unoccupied_points(ref.resolve(b, moves)[0]) or {(0, 0)}))]
            b = ref.step(b, moves, new_food)
            board = api.apply_turn(board, dict(zip(ids, moves)), new_food, ids)
            for i, s in enumerate(b.snakes):
                assert bool(board.alive[i]) == s.alive
                if s.alive:
                    assert rules.body_list(board, i) == s.body and int(board.health[i]) == s.health


def _export(b: ref.Board, ids):
    """An API frame of a reference board (the engine's CLI export: you = the first snake)."""
    snakes = [_snake(ids[i], s.body, s.health) for i, s in enumerate(b.snakes) if s.alive]
    req = _request(snakes or [_snake(ids[0], b.snakes[0].body, b.snakes[0].health)], b.food, 0, size=b.size, turn=b.turn)
    if not snakes:
        req["board"]["snakes"] = []
    return req


def test_replay_reference_games_exactly():
    rng = random.Random(7)
    ids = ["s0", "s1", "s2", "s3"]
    for _ in range(12):
        b = ref.start_board(11, 4, rng)
        frames, boards = [_export(b, ids)], [b]
        while not ref.game_over(b):
            moves = [ref.random_legal_move(s, rng) if s.alive else "up" for s in b.snakes]
            b = ref.random_step(b, moves, rng)
            frames.append(_export(b, ids))
            boards.append(b)
        replayed = api.replay(frames)
        assert len(replayed) == len(boards)
        for got, want in zip(replayed, boards):
            assert int(got.turn) == want.turn
            for i, s in enumerate(want.snakes):
                assert bool(got.alive[i]) == s.alive
                if s.alive:
                    assert rules.body_list(got, i) == s.body and int(got.health[i]) == s.health
            food = {tuple(int(v) for v in p) for p in np.argwhere(np.asarray(got.food).reshape(11, 11))}
            assert food == set(want.food)


def test_replay_rejects_an_impossible_game():
    rng = random.Random(1)
    b = ref.start_board(11, 2, rng)
    f0 = _export(b, ["a", "b"])
    f1 = _export(ref.step(b, ["up", "up"], []), ["a", "b"])
    assert f1["board"]["snakes"][0]["health"] == 99
    f1["board"]["snakes"][0]["health"] = 100  # no health lost: not the standard rules
    with pytest.raises(ValueError, match="not reachable"):
        api.replay([f0, f1])


# Issue 10: lengths and hazard stacks beyond what the int8 grids hold.


def _serpentine(n, size):
    """``n`` cells boustrophedon by columns from (0, 0), listed tail first."""
    cells = [(x, y if x % 2 == 0 else size - 1 - y) for x in range(size) for y in range(size)]
    return cells[:n]


def test_bodies_as_long_as_the_board_parse_and_play_like_the_reference():
    """19x19: a coiled snake of 200 and a stacked one of 200 (both under 361 cells) play 3 turns exactly."""
    coiled = _serpentine(200, 19)[::-1]  # head first: (10, 9), neck (10, 8)
    assert coiled[0] == (10, 9) and coiled[1] == (10, 8)
    stacked = [(15, 15)] * 200
    req = _request([_snake("a", coiled, 80), _snake("b", stacked, 80)], food=[(10, 11)], you=0, size=19)
    r = api.parse_request(req)
    assert r.board.length.tolist() == [200, 200]
    assert rules.body_list(r.board, 0) == coiled and rules.body_list(r.board, 1) == stacked
    want = ref.Board(size=19, snakes=[ref.Snake(list(coiled), 80), ref.Snake(list(stacked), 80)], food=[(10, 11)], turn=7)
    board = r.board
    for moves in (["up", "right"], ["up", "up"], ["right", "up"]):  # a eats (10, 11) on the second turn
        want = ref.step(want, moves, [])
        board = api.apply_turn(board, dict(zip(r.ids, moves)), [], r.ids)
        for i, s in enumerate(want.snakes):
            assert s.alive and bool(board.alive[i])
            assert rules.body_list(board, i) == s.body and int(board.health[i]) == s.health
    assert board.length.tolist() == [201, 200]


def test_a_stack_longer_than_the_board_is_refused_not_wrapped():
    """11x11 holds 121 cells + 2 stacked segments: 123 works, 124 and 200 are ValueErrors (int8 wrapped 200 to -56)."""
    ok = api.parse_request(_request([_snake("a", [(3, 3)] * 123), _snake("b", [(7, 7)] * 3)], food=[], you=0))
    assert int(ok.board.length[0]) == 123
    b = api.apply_turn(ok.board, {"a": "up", "b": "up"}, [], ok.ids)
    assert rules.body_list(b, 0) == [(3, 4)] + [(3, 3)] * 122 and bool(b.alive.all())
    for n in (124, 200):
        with pytest.raises(ValueError, match=f"{n} segments; a 11x11 board holds at most 123"):
            api.parse_request(_request([_snake("a", [(3, 3)] * n), _snake("b", [(7, 7)] * 3)], food=[], you=0))


def test_apply_turn_refuses_growth_past_the_board():
    """7x7: a 51-stack (49 cells + 2) eating food would be 52, which no engine game reaches."""
    r = api.parse_request(_request([_snake("a", [(3, 3)] * 51), _snake("b", [(6, 6)] * 3)], food=[(3, 4)], you=0, size=7))
    with pytest.raises(ValueError, match="52 segments after the turn; a 7x7 board holds at most 51"):
        api.apply_turn(r.board, {"a": "up", "b": "down"}, [], r.ids)


@pytest.mark.parametrize(
    "stack, damage, health, cause",
    [
        (3, 7, 90 - 1 - 3 * 7, ""),  # standard.go: damage per stacked hazard, after the turn's health loss
        (127, 1, 0, "hazard"),  # 100 - 1 - 127 < 0: clamped to 0, eliminated
    ],
)
def test_stacked_hazards_damage_per_hazard(stack, damage, health, cause):
    req = _request([_snake("a", [(3, 3), (3, 2), (3, 1)], 100 if stack == 127 else 90), _snake("b", [(7, 7)] * 3)],
                   food=[], you=0, hazards=[(3, 4)] * stack)
    r = api.parse_request(req)
    assert int(np.asarray(r.board.hazards).reshape(11, 11)[3, 4]) == stack
    b = api.apply_turn(r.board, {"a": "up", "b": "up"}, [], r.ids, rules.Params(hazard_damage=damage))
    assert int(b.health[0]) == health and rules.ELIMINATION_CAUSES[int(b.eliminated_cause[0])] == cause
    assert len(api.to_request(r.board, 0, r.ids)["board"]["hazards"]) == stack


def test_a_hazard_stack_over_127_is_refused_not_wrapped():
    """int8 wrapped 130 hazards to -126, and the cell did no damage."""
    req = _request([_snake("a", [(3, 3), (3, 2), (3, 1)]), _snake("b", [(7, 7)] * 3)], food=[], you=0, hazards=[(3, 4)] * 128)
    with pytest.raises(ValueError, match=r"128 hazards on cell \(3, 4\); a cell holds at most 127"):
        api.parse_request(req)
