"""The official Battlesnake API JSON, both ways, and exact replay of recorded games.

Source: the API reference (docs.battlesnake.com/api) and the engine's
``client/models.go``: a request is ``{"game", "turn", "board", "you"}``;
``board`` has ``height``, ``width``, ``snakes``, ``food``, ``hazards``; a
snake has ``id``, ``name``, ``health``, ``body`` (head first, ``{"x", "y"}``
points), ``head``, ``length``, ``latency``, ``shout``, ``squad``,
``customizations``. Only living snakes are sent.

Snakes are matched to board indices by id: `parse_request` keeps the order of
``board.snakes`` (or of ``ids`` when given) and pads to ``num_snakes`` with
eliminated snakes (cause ``unknown``) so that one compiled kernel serves every
request of a board size.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.battlesnake import rules
from jaxgames.games.battlesnake.rules import DEFAULT_PARAMS, Board, Params

MOVE_CODES = {name: code for code, name in enumerate(rules.MOVE_NAMES)}
"""``{"up": 0, "right": 1, "down": 2, "left": 3}``."""

MAX_VANISHED = 6
"""`replay` infers the moves of at most this many snakes eliminated in one turn (4^k combinations)."""


class Request(NamedTuple):
    """A parsed API request.

    Attributes:
        board: the `rules.Board` (snake ``i`` is ``ids[i]``; padding snakes
            are eliminated, cause ``unknown``).
        ids: tuple of the snake ids, ``""`` for padding.
        you: index of ``you`` in ``ids`` (-1 if ``you`` is not on the board,
            e.g. eliminated in an ``/end`` request).
        game: the ``game`` object as sent.
        turn: int.
    """

    board: Board
    ids: tuple
    you: int
    game: dict
    turn: int


def _need(obj: Any, key: str, kind, where: str):
    if not isinstance(obj, dict):  # malformed API input is a ValueError (400), whatever its kind
        raise ValueError(f"{where} must be a JSON object; got {type(obj).__name__}")  # noqa: TRY004
    if key not in obj:
        raise ValueError(f"{where} is missing the field {key!r}")
    v = obj[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise ValueError(f"{where}.{key} must be an integer; got {v!r}")
    if kind is not int and not isinstance(v, kind):
        raise ValueError(f"{where}.{key} must be a {kind.__name__}; got {type(v).__name__}")
    return v


def _point(p: Any, where: str) -> tuple[int, int]:
    return _need(p, "x", int, where), _need(p, "y", int, where)


def parse_request(
    request: Mapping | str | bytes,
    *,
    num_snakes: int | None = None,
    ids: Sequence[str] | None = None,
    host_arrays: bool = False,
) -> Request:
    """Parses an official API request body into a `Board`.

    Args:
        request: the JSON body (a dict, or text/bytes).
        num_snakes: pad to this many snakes (default: the number sent).
        ids: the game's snake ids in board order (so indices stay stable as
            snakes are eliminated); snakes not sent are padded as eliminated.
        host_arrays: leave the board's leaves as numpy arrays (for a caller
            that hands it straight to a compiled function, which moves it to
            the device faster than a separate `jax.device_put`: the server).

    Returns:
        A `Request`.

    Raises:
        ValueError: invalid JSON, a missing or mistyped field, a non-square
            board or a size outside 7..25, more snakes than ``num_snakes`` or
            8, an unknown or duplicate id, coordinates off the board, bodies
            that are empty, not contiguous, longer than the board holds
            (`rules.max_length`: ``width * height + 2``) or whose
            ``head``/``length`` disagree with ``body``, more than
            `rules.MAX_HAZARD_STACK` hazards on one cell, health outside
            0..100.
    """
    if isinstance(request, (str, bytes)):
        try:
            request = json.loads(request)
        except json.JSONDecodeError as e:
            raise ValueError(f"request is not valid JSON: {e}") from e
    game = _need(request, "game", dict, "request")
    turn = _need(request, "turn", int, "request")
    board = _need(request, "board", dict, "request")
    you = _need(request, "you", dict, "request")
    height, width = _need(board, "height", int, "board"), _need(board, "width", int, "board")
    if height != width:
        raise ValueError(f"only square boards are supported; got width {width}, height {height}")
    snakes = _need(board, "snakes", list, "board")
    food = [_point(p, "board.food[]") for p in _need(board, "food", list, "board")]
    hazards = [_point(p, "board.hazards[]") for p in board.get("hazards", [])]
    sent = {}
    for i, s in enumerate(snakes):
        where = f"board.snakes[{i}]"
        sid = _need(s, "id", str, where)
        if sid in sent:
            raise ValueError(f"duplicate snake id {sid!r}")
        body = [_point(p, f"{where}.body[]") for p in _need(s, "body", list, where)]
        if not body:
            raise ValueError(f"{where} has an empty body")
        if "head" in s and _point(s["head"], f"{where}.head") != body[0]:
            raise ValueError(f"{where}.head {s['head']} is not body[0] {body[0]}")
        if "length" in s and _need(s, "length", int, where) != len(body):
            raise ValueError(f"{where}.length {s['length']} != len(body) {len(body)}")
        sent[sid] = (body, _need(s, "health", int, where))
    if ids is None:
        ids = list(sent)
    else:
        ids = list(ids)
        unknown = set(sent) - set(ids)
        if unknown:
            raise ValueError(f"snake ids {sorted(unknown)} are not among the game's ids {ids}")
    n = len(ids) if num_snakes is None else num_snakes
    if len(ids) > n:
        raise ValueError(f"{len(ids)} snakes do not fit num_snakes={n}")
    ids = ids + [""] * (n - len(ids))
    rules.validate_size(width, max(n, 1))
    live = [i for i, sid in enumerate(ids) if sid in sent]
    # Placeholder bodies for snakes not sent; they are marked eliminated below.
    bodies = [sent[sid][0] if sid in sent else [(0, 0)] for sid in ids]
    health = [sent[sid][1] if sid in sent else 0 for sid in ids]
    # Built in numpy and moved in one device_put: this is the server's per-request path.
    b = rules.board_numpy(bodies, size=width, health=health, food=food, hazards=hazards, turn=turn)
    dead = np.array([i not in live for i in range(n)], bool)
    b.body[dead] = 0
    b.head[dead] = -1
    b.eliminated_cause[dead] = rules.UNKNOWN_CAUSE
    if not host_arrays:
        b = jax.device_put(b)
    you_id = _need(you, "id", str, "you")
    return Request(b, tuple(ids), ids.index(you_id) if you_id in sent else -1, game, turn)


def _pt(p) -> dict:
    return {"x": int(p[0]), "y": int(p[1])}


def snake_json(board: Board, s: int, sid: str, *, name: str | None = None) -> dict:
    """The API object of snake ``s`` (frozen body if eliminated)."""
    body = rules.body_list(board, s)
    return {
        "id": sid,
        "name": name or sid,
        "latency": "0",
        "health": int(board.health[s]),
        "body": [_pt(p) for p in body],
        "head": _pt(body[0]),
        "length": len(body),
        "shout": "",
        "squad": "",
        "customizations": {"color": "#888888", "head": "default", "tail": "default"},
    }


def default_game(params: Params = DEFAULT_PARAMS, *, game_id: str = "jaxgames", timeout: int = 500) -> dict:
    """A ``game`` object for the standard ruleset with ``params`` as its settings."""
    return {
        "id": game_id,
        "ruleset": {
            "name": "standard",
            "version": "jaxgames",
            "settings": {
                "foodSpawnChance": int(params.food_spawn_chance),
                "minimumFood": int(params.minimum_food),
                "hazardDamagePerTurn": int(params.hazard_damage),
            },
        },
        "map": "standard",
        "timeout": timeout,
        "source": "",
    }


def to_request(board: Board, you: int, ids: Sequence[str], *, game: dict | None = None) -> dict:
    """The API request body that snake ``you`` receives for ``board``.

    Args:
        board: one board.
        you: index of the receiving snake.
        ids: snake ids by index (padding snakes: any, they are not sent).
        game: the ``game`` object (default `default_game`).

    Returns:
        A JSON-ready dict; only living snakes are in ``board.snakes``.

    Raises:
        ValueError: ``you`` out of range or ``ids`` of the wrong length.
    """
    n = board.num_snakes
    if len(ids) != n:
        raise ValueError(f"expected {n} ids; got {len(ids)}")
    if not 0 <= you < n:
        raise ValueError(f"you={you} is not a snake index in [0, {n})")
    size = board.size
    alive = np.asarray(board.alive)
    food = np.argwhere(np.asarray(board.food).reshape(size, size))
    hz = np.asarray(board.hazards).reshape(size, size)
    hazards = [_pt(p) for p in np.argwhere(hz > 0) for _ in range(int(hz[tuple(p)]))]
    return {
        "game": game if game is not None else default_game(),
        "turn": int(board.turn),
        "board": {
            "height": size,
            "width": size,
            "snakes": [snake_json(board, s, ids[s]) for s in range(n) if alive[s]],
            "food": [_pt(p) for p in food],
            "hazards": hazards,
        },
        "you": snake_json(board, you, ids[you]),
    }


_resolve = jax.jit(rules.resolve)
_finish = jax.jit(rules.finish_turn)


def apply_turn(
    board: Board,
    moves: Mapping[str, str],
    spawned_food: Sequence,
    ids: Sequence[str],
    params: Params = DEFAULT_PARAMS,
) -> Board:
    """Applies one turn of the official engine: the moves by snake id and the food it spawned.

    Replays a recorded game exactly (`rules.resolve` then
    `rules.finish_turn`, under ``jit``). ``"up"``, ``"down"``, ``"left"`` and
    ``"right"`` (exact, lower case) move that way; any other string (``""``,
    ``"Up"``) is the engine's *default move*: the neck-to-head direction,
    ``up`` while the body is stacked (``standard.go``,
    ``MoveSnakesStandard`` and ``getDefaultMove``). The CLI
    (``cli/commands/play.go``, ``getSnakeUpdate``) replaces a server's
    invalid answer by the snake's previous move, so a recording holds that
    move.

    Args:
        board: the board before the turn.
        moves: ``{snake id: move string}`` for every living snake (moves of
            eliminated snakes are ignored).
        spawned_food: the ``(x, y)`` (or ``{"x", "y"}``) cells where the
            engine spawned food after the eliminations.
        ids: snake ids by board index.
        params: settings (``health_loss``, ``hazard_damage``).

    Returns:
        The next board.

    Raises:
        ValueError: a living snake without a move (the engine's
            ``ErrorNoMoveFound``), an unknown id, food off the board, a
            snake longer than `rules.max_length` before or after the turn
            (food the engine never spawns, on a snake's own cells, can grow
            one past it; its grid would wrap).
        TypeError: a move that is not a string (the engine's
            ``SnakeMove.Move`` is a Go ``string``).
    """
    ids = list(ids)
    _check_lengths(board, "before the turn")
    alive = np.asarray(board.alive)
    codes = np.zeros(board.num_snakes, np.int32)
    for sid, m in moves.items():
        if sid not in ids:
            raise ValueError(f"move for unknown snake id {sid!r}")
        if not isinstance(m, str):
            raise TypeError(f"move of snake {sid!r} must be a string; got {type(m).__name__} {m!r}")
        codes[ids.index(sid)] = MOVE_CODES.get(m, rules.MOVE_UNKNOWN)
    missing = [ids[i] for i in range(len(ids)) if alive[i] and ids[i] not in moves]
    if missing:
        raise ValueError(f"no move for living snakes {missing}")
    size = board.size
    new = np.zeros(size * size, bool)
    for p in spawned_food:
        x, y = _point(p, "spawned_food[]") if isinstance(p, dict) else (int(p[0]), int(p[1]))
        if not (0 <= x < size and 0 <= y < size):
            raise ValueError(f"spawned food {(x, y)} is off the {size}x{size} board")
        new[rules.cell_index(size, x, y)] = True
    out = _finish(_resolve(board, jnp.asarray(codes), params), jnp.asarray(new))
    _check_lengths(out, "after the turn")
    return out


def _check_lengths(board: Board, when: str) -> None:
    """Raises ValueError if a snake is longer than `rules.max_length` (what `Board.body` holds)."""
    length = np.asarray(board.length)
    limit = rules.max_length(board.size)
    if length.size and length.max() > limit:
        s = int(np.argmax(length))
        raise ValueError(
            f"snake {s} has {int(length[s])} segments {when}; a {board.size}x{board.size} board holds at most {limit}"
        )


def _frame_state(frame: Request) -> tuple:
    b = frame.board
    snakes = {
        sid: (rules.body_list(b, i), int(b.health[i])) for i, sid in enumerate(frame.ids) if sid and bool(b.alive[i])
    }
    size = b.size
    food = {tuple(int(v) for v in p) for p in np.argwhere(np.asarray(b.food).reshape(size, size))}
    return snakes, food


def replay(frames: Sequence[Mapping], *, params: Params = DEFAULT_PARAMS) -> list[Board]:
    """Replays a game recorded as consecutive API request bodies (turn 0, 1, ...), exactly.

    The moves of surviving snakes are read from their heads; for snakes that
    vanish between two frames every move combination is tried and the one
    reproducing the next frame is kept; the spawned food is what the next
    frame has beyond the food left after feeding. Every replayed board is
    checked against the recorded frame.

    Args:
        frames: request bodies of one game, consecutive turns; the first must
            show every snake (snake ids fix the board indices).
        params: settings.

    Returns:
        The replayed boards, one per frame (``boards[0]`` parsed from frame 0).

    Raises:
        ValueError: malformed frames, non-consecutive turns, more than
            `MAX_VANISHED` snakes eliminated in one turn, or a frame that no
            move combination reproduces (so the recording does not follow the
            standard rules).
    """
    if not frames:
        raise ValueError("no frames to replay")
    first = parse_request(frames[0])
    ids = first.ids
    boards = [first.board]
    for t in range(1, len(frames)):
        nxt = parse_request(frames[t], ids=ids)
        if nxt.turn != boards[-1].turn + 1:
            raise ValueError(f"frame {t} has turn {nxt.turn}, expected {int(boards[-1].turn) + 1}")
        want = _frame_state(nxt)
        cur = boards[-1]
        alive = [i for i in range(len(ids)) if bool(cur.alive[i])]
        known, unknown = {}, []
        for i in alive:
            if ids[i] in want[0]:
                (hx, hy), (nx, ny) = tuple(np.asarray(cur.head[i]).tolist()), want[0][ids[i]][0][0]
                delta = (nx - hx, ny - hy)
                match = [m for m, d in zip(rules.MOVE_NAMES, rules.DELTAS.tolist()) if tuple(d) == delta]
                if not match:
                    raise ValueError(f"frame {t}: snake {ids[i]!r} moved from {(hx, hy)} to {(nx, ny)}")
                known[ids[i]] = match[0]
            else:
                unknown.append(ids[i])
        if len(unknown) > MAX_VANISHED:
            raise ValueError(
                f"frame {t}: {len(unknown)} snakes vanished at once; replay tries 4^k move combinations "
                f"and stops at k = {MAX_VANISHED} (pass the moves to apply_turn instead)"
            )
        found = None
        for combo in itertools.product(rules.MOVE_NAMES, repeat=len(unknown)):
            moves = dict(known, **dict(zip(unknown, combo)))
            codes = np.asarray([MOVE_CODES[moves[sid]] if sid in moves else 0 for sid in ids], np.int32)
            resolved = _resolve(cur, jnp.asarray(codes), params)
            size = cur.size
            left = {tuple(int(v) for v in p) for p in np.argwhere(np.asarray(resolved.board.food).reshape(size, size))}
            spawned = sorted(want[1] - left)
            candidate = apply_turn(cur, moves, spawned, ids, params)
            got = _frame_state(Request(candidate, ids, -1, {}, int(candidate.turn)))
            if got == want:
                found = candidate
                break
        if found is None:
            raise ValueError(f"frame {t} (turn {nxt.turn}) is not reachable from frame {t - 1} by the standard rules")
        boards.append(found)
    return boards
