"""A Battlesnake HTTP server (the official snake API) for any policy of this library.

Endpoints (docs.battlesnake.com/api): ``GET /`` (snake info), ``POST /start``,
``POST /move`` (answers ``{"move": ..., "shout": ...}``), ``POST /end``. A
malformed request is answered ``400`` with ``{"error": reason}``; the server
never crashes on input. Standard library only (``http.server``).

A *policy* is ``policy(board, you, key) -> move code`` (int32 ``[]``), pure
and jittable, where ``board`` is a `rules.Board` padded to ``num_snakes``
(default 8, so that one compile serves every request of a board size) and
``you`` the index of the snake to move. `random_policy`, `safe_policy`,
`q_policy` (a Q-function of the rotated egocentric view, seed 003) and
`agent_policy` (any ``JaxAgent`` of `jaxgames.agents`) are provided. The policy is compiled for the ``warmup_sizes`` when the server
starts, so that ``/move`` answers in milliseconds, well inside the 500 ms
timeout.

    python -m jaxgames.games.battlesnake.server --port 8000 --policy safe
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jax
import jax.numpy as jnp

from jaxgames.games.battlesnake import api, observe, rules, spawn
from jaxgames.games.battlesnake.rules import Board

Policy = Callable[[Board, jax.Array, jax.Array], jax.Array]


def _pick(key: jax.Array, ok: jax.Array) -> jax.Array:
    return jax.random.categorical(key, jnp.where(ok, 0.0, jnp.finfo(jnp.float32).min)).astype(jnp.int32)


def random_policy(board: Board, you: jax.Array, key: jax.Array) -> jax.Array:
    """Uniform among the moves that do not reverse into the neck."""
    return _pick(key, rules.legal_moves(board)[you])


def safe_moves(board: Board, you: jax.Array) -> jax.Array:
    """bool ``[4]``: moves of snake ``you`` onto the board and off every living body cell that stays next turn.

    A cell stays occupied if its value is at least 2 (module `rules`); tails
    that move away are safe. Head-to-head risks are not considered.
    """
    head = board.head[you]
    target = head[None, :] + jnp.asarray(rules.DELTAS)  # [4, 2]
    size = board.size
    on = jnp.all((target >= 0) & (target < size), axis=-1)
    flat = jnp.clip(target[:, 0], 0, size - 1) * size + jnp.clip(target[:, 1], 0, size - 1)
    occupied = jnp.any((board.body[:, flat] >= 2) & board.alive[:, None], axis=0)
    return on & ~occupied


def safe_policy(board: Board, you: jax.Array, key: jax.Array) -> jax.Array:
    """Uniform among `safe_moves` (among the legal moves if none is safe)."""
    safe = safe_moves(board, you)
    return _pick(key, jnp.where(jnp.any(safe), safe, rules.legal_moves(board)[you]))


def q_policy(q_function: Callable[[jax.Array], jax.Array]) -> Policy:
    """A greedy policy of a Q-function over relative actions (seed 003, section 3).

    Args:
        q_function: maps the rotated egocentric view float32 ``[2H-1, 2W-1,
            3]`` to float32 ``[3]`` (turn left, straight, turn right).

    Returns:
        A `Policy` playing the absolute move of the best relative action.
    """

    def policy(board: Board, you: jax.Array, key: jax.Array) -> jax.Array:
        del key
        facing = rules.facing(board)[you]
        view = observe.rotate_to_facing(observe.egocentric(board)[you], facing)
        return observe.relative_to_absolute(jnp.argmax(q_function(view)), facing)

    return policy


def agent_policy(agent, *, observation: str = "egocentric") -> Policy:
    """Adapts an agent of `jaxgames.agents` (a ``JaxAgent``) to a server `Policy`.

    The agent sees the game from its snake's side: a `env.BattlesnakeState`
    whose ``observation`` and ``legal_action_mask`` are the rows of ``you``
    (``[2H-1, 2W-1, 3]`` and ``[4]``) and whose ``current_player`` is
    ``you``, with the Env of the board's shape, so the single-player agents
    (e.g. ``RandomAgent``, ``FirstLegalAgent``) play as they are.

    Args:
        agent: an object with ``policy(env, state, key) -> int32 []``.
        observation: the Env's observation kind (``"egocentric"``, ``"rotated"``, ``"none"``).
    """
    from jaxgames.games.battlesnake.env import Battlesnake, BattlesnakeState

    def policy(board: Board, you: jax.Array, key: jax.Array) -> jax.Array:
        env = Battlesnake(board_size=board.size, num_snakes=board.num_snakes, observation=observation)
        state = BattlesnakeState(
            current_player=jnp.asarray(you, jnp.int32),
            observation=env.observe(board)[you],
            rewards=jnp.zeros(board.num_snakes, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            legal_action_mask=env._mask(board, jnp.bool_(False))[you],
            step_count=board.turn,
            board=board,
        )
        return jnp.asarray(agent.policy(env, state, key), jnp.int32)

    return policy


POLICIES = {"random": random_policy, "safe": safe_policy}


class BattlesnakeServer:
    """Serves a policy over HTTP; use as a context manager or `start`/`stop`.

    Args:
        policy: a `Policy`.
        host, port: where to listen (port 0: any free port, see `port`).
        info: the ``GET /`` answer (``apiversion`` "1" is added).
        num_snakes: boards are padded to this many snakes (1..8).
        warmup_sizes: board sizes to compile for at start-up.
        seed: seed of the policy's PRNG keys.

    Raises:
        ValueError: bad ``num_snakes`` or warm-up size.
    """

    def __init__(
        self,
        policy: Policy = safe_policy,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        info: dict | None = None,
        num_snakes: int = rules.MAX_SNAKES,
        warmup_sizes=(7, 11, 19),
        seed: int = 0,
    ):
        for size in warmup_sizes:
            rules.validate_size(size, num_snakes)
        self.num_snakes = num_snakes
        self.info = {"apiversion": "1", "author": "jaxgames", "color": "#3b7dd8", "head": "default", "tail": "default", "version": "0.1.0"}
        self.info.update(info or {})
        self._policy = jax.jit(policy)
        self._key = jax.random.key(seed)
        self._lock = threading.Lock()
        self._turns = 0
        for size in warmup_sizes:
            board = spawn.init_board(jax.random.key(0), num_snakes, size)
            request = api.to_request(board, 0, [f"s{i}" for i in range(num_snakes)])
            self.move(request)
        self.httpd = ThreadingHTTPServer((host, port), _handler(self))
        self._thread = None

    @property
    def port(self) -> int:
        """The port actually listened on."""
        return self.httpd.server_address[1]

    def move(self, request) -> dict:
        """The ``/move`` answer for a request body (dict or JSON text).

        Raises:
            ValueError: a malformed request (see `api.parse_request`), or
                ``you`` not among the living snakes.
        """
        parsed = api.parse_request(request, num_snakes=self.num_snakes)
        if parsed.you < 0:
            raise ValueError("'you' is not among the living snakes of the board")
        with self._lock:
            self._key, key = jax.random.split(self._key)
            self._turns += 1
        code = int(self._policy(parsed.board, jnp.int32(parsed.you), key))
        return {"move": rules.MOVE_NAMES[code], "shout": ""}

    def start(self) -> BattlesnakeServer:
        """Serves in a background thread."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and closes the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _handler(server: BattlesnakeServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/") == "":
                self._send(200, server.info)
            else:
                self._send(404, {"error": f"unknown path {self.path!r}"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.rstrip("/")
            if path not in ("/start", "/move", "/end"):
                self._send(404, {"error": f"unknown path {self.path!r}"})
                return
            try:
                if path == "/move":
                    t0 = time.perf_counter()
                    answer = server.move(raw)
                    answer["latency_ms"] = round(1000 * (time.perf_counter() - t0), 3)
                else:
                    api.parse_request(raw, num_snakes=server.num_snakes)  # validate
                    answer = {}
            except ValueError as e:
                self._send(400, {"error": str(e)})
                return
            except Exception as e:  # noqa: BLE001 -- never crash the server on a request
                self._send(500, {"error": f"{type(e).__name__}: {e}"})
                return
            self._send(200, answer)

    return Handler


def main(argv=None) -> None:
    """Command line: serve a built-in policy until interrupted."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--policy", choices=sorted(POLICIES), default="safe")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    srv = BattlesnakeServer(POLICIES[a.policy], host=a.host, port=a.port, seed=a.seed)
    print(f"Battlesnake server ({a.policy}) on http://{a.host}:{srv.port}", flush=True)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.httpd.server_close()


if __name__ == "__main__":
    main()
