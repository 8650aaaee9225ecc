"""A Battlesnake HTTP server (the official snake API) for any agent of `jaxgames.agents`.

Endpoints (docs.battlesnake.com/api): ``GET /`` (snake info), ``POST /start``,
``POST /move`` (answers ``{"move": ..., "shout": ...}``), ``POST /end``. A
malformed request (bad JSON, a missing or mistyped field, a board the rules
reject) is answered ``400`` with ``{"error": reason}``; the server never
crashes on input. Standard library only (``http.server``).

Any agent is served (`jaxgames.agents.base`): the request becomes an
unbatched `BattlesnakeState` of a `Battlesnake` Env of the board's size,
padded to ``num_snakes`` (default 8, so that one compile serves every request
of a board size), and the agent acts for seat ``you``. A ``JaxAgent``'s
``policy(env, state, key, player)`` is jitted once per board size, together
with the state's construction, when the server starts (``warmup_sizes``) so
that ``/move`` answers in milliseconds, well inside the 500 ms timeout; a
``HostAgent``'s ``act(env, state, rng, player)`` is called on the state's
numpy leaves. The Battlesnake agents are in `jaxgames.agents.battlesnake`
(random, random-safe, the flood-fill heuristic, a greedy Q-function).

    python -m jaxgames.games.battlesnake.server --port 8000 --agent heuristic
    python -m jaxgames.games.battlesnake.server --host 0.0.0.0 --agent random_safe   # reachable from outside
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.agents.base import Agent, HostAgent, JaxAgent
from jaxgames.core import SIMULTANEOUS
from jaxgames.games.battlesnake import api, rules, spawn
from jaxgames.games.battlesnake.env import Battlesnake, BattlesnakeState
from jaxgames.games.battlesnake.rules import Board


def state_of(env: Battlesnake, board: Board) -> BattlesnakeState:
    """The unbatched `BattlesnakeState` of a board in the middle of a game (pure, jittable).

    ``observation`` and ``legal_action_mask`` are computed as the Env does
    (``legal_action_mask`` all True for eliminated snakes); ``rewards`` are
    zero, the game is not terminated or truncated, ``step_count`` is the
    board's turn.

    Args:
        env: a `Battlesnake` Env of the board's size and number of snakes.
        board: one `rules.Board`.
    """
    return BattlesnakeState(
        current_player=jnp.int32(SIMULTANEOUS),
        observation=env.observe_board(board),
        rewards=jnp.zeros(board.num_snakes, jnp.float32),
        terminated=jnp.bool_(False),
        truncated=jnp.bool_(False),
        legal_action_mask=rules.legal_moves(board) | ~board.alive[:, None],
        step_count=jnp.asarray(board.turn, jnp.int32),
        board=board,
    )


class BattlesnakeServer:
    """Serves an agent over HTTP; use as a context manager or `start`/`stop`.

    Args:
        agent: a `jaxgames.agents.base.JaxAgent` or `HostAgent` (default:
            `jaxgames.agents.battlesnake.RandomSafeAgent`).
        host, port: where to listen (port 0: any free port, see `port`).
        info: the ``GET /`` answer (``apiversion`` "1" is added).
        num_snakes: boards are padded to this many snakes (1..8).
        warmup_sizes: board sizes to compile for at start-up.
        seed: seed of the agent's PRNG keys (and of a host agent's generator).
        observation: the served Env's observation kind (``"egocentric"``,
            ``"rotated"``, ``"none"``), for agents that read ``state.observation``.

    Raises:
        TypeError: ``agent`` is not a `JaxAgent` or `HostAgent`.
        ValueError: bad ``num_snakes``, warm-up size or observation kind.
    """

    def __init__(
        self,
        agent: Agent | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        info: dict | None = None,
        num_snakes: int = rules.MAX_SNAKES,
        warmup_sizes=(7, 11, 19),
        seed: int = 0,
        observation: str = "egocentric",
    ):
        if agent is None:
            from jaxgames.agents.battlesnake import RandomSafeAgent

            agent = RandomSafeAgent()
        if not isinstance(agent, (JaxAgent, HostAgent)):
            raise TypeError(f"agent must be a JaxAgent or a HostAgent of jaxgames.agents; got {type(agent).__name__}")
        for size in warmup_sizes:
            rules.validate_size(size, num_snakes)
        self.agent = agent
        self.num_snakes = num_snakes
        self.observation = observation
        Battlesnake(board_size=11, num_snakes=num_snakes, observation=observation)  # validates the kind
        self.info = {"apiversion": "1", "author": "jaxgames", "color": "#3b7dd8", "head": "default", "tail": "default", "version": "0.1.0"}
        self.info.update(info or {})
        self._key = jax.random.key(seed)
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._per_size = {}
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

    def _for_size(self, size: int):
        """``(env, decide)`` for a board size, built once: ``decide(board, key, you) -> int``."""
        with self._lock:
            cached = self._per_size.get(size)
            if cached is not None:
                return cached
            env = Battlesnake(board_size=size, num_snakes=self.num_snakes, observation=self.observation)
            agent = self.agent
            if isinstance(agent, JaxAgent):
                policy = jax.jit(lambda board, key, you: agent.policy(env, state_of(env, board), key, you))

                def decide(board, key, you):
                    return int(policy(board, key, jnp.int32(you)))

            else:
                build = jax.jit(lambda board: state_of(env, board))

                def decide(board, key, you):
                    del key
                    state = jax.device_get(build(board))
                    with self._lock:
                        rng = np.random.default_rng(self._rng.integers(2**63))
                    return int(agent.act(env, state, rng, you))

            self._per_size[size] = (env, decide)
            return env, decide

    def move(self, request) -> dict:
        """The ``/move`` answer for a request body (dict or JSON text).

        Raises:
            ValueError: a malformed request (see `api.parse_request`), or
                ``you`` not among the living snakes.
        """
        parsed = api.parse_request(request, num_snakes=self.num_snakes)
        if parsed.you < 0:
            raise ValueError("'you' is not among the living snakes of the board")
        _, decide = self._for_size(parsed.board.size)
        with self._lock:
            self._key, key = jax.random.split(self._key)
            self._turns += 1
        code = decide(parsed.board, key, parsed.you)
        if not 0 <= code < 4:
            raise RuntimeError(f"agent {self.agent!r} answered move code {code}, not one of 0..3")
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


def server_from_args(argv=None) -> tuple[BattlesnakeServer, str]:
    """The server the command line asks for (not started) and its description.

    Options: ``--host`` (default 127.0.0.1; 0.0.0.0 accepts outside
    connections), ``--port`` (8000), ``--agent`` (a name of
    `jaxgames.agents.battlesnake.AGENTS`, default ``random_safe``),
    ``--seed``, ``--warmup-sizes`` (comma-separated board sizes compiled at
    start-up, default ``7,11,19``).

    Raises:
        SystemExit: bad options (argparse's usage message).
        ValueError: a bad warm-up size.
    """
    from jaxgames.agents.battlesnake import AGENTS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 to accept outside connections)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--agent", choices=sorted(AGENTS), default="random_safe")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup-sizes", default="7,11,19", help="board sizes compiled at start-up, comma-separated")
    a = p.parse_args(argv)
    try:
        sizes = tuple(int(v) for v in a.warmup_sizes.split(",") if v.strip())
    except ValueError:
        p.error(f"--warmup-sizes must be comma-separated integers; got {a.warmup_sizes!r}")
    srv = BattlesnakeServer(AGENTS[a.agent](), host=a.host, port=a.port, seed=a.seed, warmup_sizes=sizes, observation="none")
    return srv, f"Battlesnake server ({a.agent}) on http://{a.host}:{srv.port}"


def main(argv=None) -> None:
    """Command line: serve a built-in agent until interrupted (`server_from_args`)."""
    srv, line = server_from_args(argv)
    print(line, flush=True)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.httpd.server_close()


if __name__ == "__main__":
    main()
