"""A Battlesnake HTTP server (the official snake API) for any agent of `jaxgames.agents`.

Endpoints (docs.battlesnake.com/api): ``GET /`` (snake info), ``POST /start``,
``POST /move`` (answers ``{"move": ..., "shout": ...}``), ``POST /end``. A
plain ASGI application (`asgi_app`) on uvicorn, with httptools' C parser
when installed (`http_protocol`): the ``server`` extra, ``pip install -e
".[server]"``.

Whatever a client sends, the server answers: ``400`` with ``{"error":
reason}`` for a malformed request (bad JSON or Content-Length, a missing or
mistyped field, a board `api.parse_request` rejects; never a ``500`` on
input); ``413`` for a body over ``max_body_bytes``, unread; ``408`` and a
closed connection when the headers or the body come slower than
``header_timeout``/``body_timeout`` (a client trickling bytes cannot hold
the server); ``503`` beyond ``limit_concurrency``. ``/move`` is answered
within ``game.timeout`` (ms, 500 if absent) less ``answer_margin_ms``: a
late agent is replaced by `fallback_move` (``"fallback": true``), as are
the requests of a board size not in ``warmup_sizes`` while it compiles
(seconds). SIGINT or SIGTERM (`serve`) answers the requests in flight and
returns, exit status 0, within ``shutdown_timeout`` seconds.

A request becomes an unbatched `BattlesnakeState` of a `Battlesnake` Env
padded to ``num_snakes`` (default 8, so one compile serves a board size),
and the agent acts for seat ``you``: a ``JaxAgent``'s ``policy`` is jitted
once per board size, a ``HostAgent``'s ``act`` gets the state's numpy
leaves. Decisions run on ``workers`` threads, never on the event loop. A
board size first seen in a ``/start`` or ``/move`` compiles (`warm_up`) on
one thread of its own, one size at a time, so that the workers keep
answering the sizes already compiled within their timeout while it does.
`AGENTS` names the agents the command line serves.

    python -m jaxgames.serve.battlesnake --port 8000 --agent heuristic
    python -m jaxgames.serve.battlesnake --host 0.0.0.0 --agent random_safe   # reachable from outside
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import logging
import signal
import socket
import threading
import time
from typing import NamedTuple

import jax
import numpy as np

from jaxgames.agents.base import Agent, HostAgent, JaxAgent
from jaxgames.agents.battlesnake import HeuristicAgent, RandomAgent, RandomSafeAgent
from jaxgames.agents.battlesnake_search import DEFAULT_POLICIES, TIE_BREAKS, SearchAgent, parse_weights
from jaxgames.agents.q_snake import QSnakeAgent
from jaxgames.games.battlesnake import api, rules
from jaxgames.games.battlesnake.env import Battlesnake

_log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_MS = 500
"""The engine's default move timeout (``game.timeout``, ms), used when a request has none."""

AGENTS = {"random": RandomAgent, "random_safe": RandomSafeAgent, "heuristic": HeuristicAgent, "q_snake": QSnakeAgent,
          "search": SearchAgent}
"""Agents built without arguments, by name (the command line's ``--agent``). ``q_snake`` loads its
shipped weights only when built; ``search`` takes ``--depth``, ``--opponents``, ``--branching``,
``--tie-break``, ``--default-policy``, ``--alphabeta``, ``--step-budget``, ``--time-budget-ms`` and ``--evaluation``."""

SEARCH_TIME_BUDGET_MS = 0.8 * DEFAULT_TIMEOUT_MS
"""``--agent search``'s default think time per move (ms; 80% of `DEFAULT_TIMEOUT_MS`, 400): `SearchAgent.act_in_time`
(the search stopped at this deadline; without alpha-beta, iterative deepening up to the agent's depth)."""

_INT32_MAX = 2**31 - 1
_FALLBACK_ORDER = (("up", 0, 1), ("right", 1, 0), ("down", 0, -1), ("left", -1, 0))


def warmup_request(size: int) -> dict:
    """A ``/move`` request on a ``size`` x ``size`` board: one snake of length 3 stacked at (1, 1) on turn 0.

    Every request of a board size has the same array shapes once parsed
    (padded to ``num_snakes``), so this one compiles what all of them need;
    it is written by hand rather than spawned (`spawn.init_board` compiles
    for seconds).
    """
    body = [{"x": 1, "y": 1}] * 3
    snake = {"id": "warmup", "name": "warmup", "health": 100, "body": body, "head": body[0], "length": 3}
    board = {"height": size, "width": size, "snakes": [snake], "food": [{"x": 2, "y": 2}], "hazards": []}
    return {"game": api.default_game(), "turn": 0, "board": board, "you": snake}


def check_shape(request) -> int:
    """Checks the JSON shape of a decoded request beyond `api.parse_request`; returns its timeout.

    ``request`` must be an object; ``turn`` an integer in ``0..2**31-1``;
    ``game.timeout`` (when sent) an integer in ``1..2**31-1`` (ms);
    ``board.hazards`` (when sent) a list. Every other field is checked by
    `api.parse_request`.

    Returns:
        The move timeout in ms (`DEFAULT_TIMEOUT_MS` when not sent).

    Raises:
        ValueError: a field of the wrong JSON type or out of range.
    """
    if not isinstance(request, dict):
        raise ValueError(f"request must be a JSON object; got {_json_type(request)}")
    turn = request.get("turn")
    if _is_int(turn) and not 0 <= turn <= _INT32_MAX:
        raise ValueError(f"request.turn {turn} is outside [0, 2**31 - 1]")
    game = request.get("game")
    timeout = DEFAULT_TIMEOUT_MS
    if isinstance(game, dict) and "timeout" in game:
        timeout = game["timeout"]
        if not _is_int(timeout) or not 1 <= timeout <= _INT32_MAX:
            raise ValueError(f"game.timeout must be a positive integer (ms); got {json.dumps(timeout)[:40]}")
    board = request.get("board")
    if isinstance(board, dict) and "hazards" in board and not isinstance(board["hazards"], list):
        raise ValueError(f"board.hazards must be a list; got {_json_type(board['hazards'])}")
    return timeout


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _json_type(v) -> str:
    return {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string", list: "array"}.get(type(v), "object")


def fallback_move(request: dict) -> str:
    """A move that does not die this turn by a wall or a body, from the request JSON alone (no JAX).

    The first of up, right, down, left whose cell is on the board and not in
    any snake's ``body[:-1]`` (tails move away; a tail doubled by eating
    counts as occupied). Used when the agent is late. Never raises: ``"up"``
    when the request cannot be read or no move is safe.
    """
    try:
        board, you = request["board"], request["you"]
        width, height = board["width"], board["height"]
        occupied = set()
        for s in board["snakes"]:
            body = [(p["x"], p["y"]) for p in s["body"]]
            occupied.update(body[:-1])
            if len(body) >= 2 and body[-1] == body[-2]:
                occupied.add(body[-1])
        hx, hy = you["body"][0]["x"], you["body"][0]["y"]
        for name, dx, dy in _FALLBACK_ORDER:
            x, y = hx + dx, hy + dy
            if 0 <= x < width and 0 <= y < height and (x, y) not in occupied:
                return name
    except (KeyError, TypeError, IndexError, AttributeError):
        pass
    return "up"


class BattlesnakeServer:
    """Serves an agent over HTTP; use as a context manager, `start`/`stop`, or `serve` (blocking).

    The listening socket is bound when the server is built (``port`` 0: any
    free port, see `port`); `stop` closes it, whether or not serving began.

    Args:
        agent: a `jaxgames.agents.base.JaxAgent` or `HostAgent` (default:
            `jaxgames.agents.battlesnake.RandomSafeAgent`).
        host: interface to listen on (default 127.0.0.1, this machine only;
            ``0.0.0.0`` accepts outside connections).
        port: where to listen.
        info: the ``GET /`` answer (``apiversion`` "1" is added).
        num_snakes: boards are padded to this many snakes (1..8).
        warmup_sizes: board sizes to compile for at start-up.
        seed: seed of the agent's PRNG keys (and of a host agent's generator).
        observation: the served Env's observation kind (``"egocentric"``,
            ``"rotated"``, ``"none"``), for agents that read ``state.observation``.
        max_body_bytes: larger request bodies are answered ``413``.
        header_timeout: seconds for the request line and headers (from the
            connection's opening or the previous response).
        body_timeout: seconds for the body, from the end of the headers (``408``).
        keep_alive_timeout: an idle kept-alive connection is closed after
            this many seconds.
        limit_concurrency: most connections or requests at once (``503`` beyond).
        backlog: the listen backlog (connections not yet accepted).
        workers: threads that run the agent's decisions for compiled board
            sizes (a new size compiles on one more thread, `warm_up`).
        answer_margin_ms: ``/move`` is answered within ``game.timeout -
            answer_margin_ms`` ms (at least half the timeout), by the fallback
            move if the agent is late (module docstring).
        shutdown_timeout: seconds that requests in flight get on SIGINT,
            SIGTERM or `stop`; then they are cancelled.
        http: uvicorn's HTTP protocol, one of `HTTP_PROTOCOLS` (``"auto"``:
            httptools if installed, else h11; see `http_protocol`). The one
            used is `http`.

    Raises:
        TypeError: ``agent`` is not a `JaxAgent` or `HostAgent`.
        ValueError: bad ``num_snakes``, warm-up size, observation kind or
            limit (all limits must be positive).
        OSError: the address cannot be bound.
        ImportError: uvicorn missing (the ``server`` extra), or httptools
            missing with ``http="httptools"``.
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
        max_body_bytes: int = 1 << 20,
        header_timeout: float = 5.0,
        body_timeout: float = 5.0,
        keep_alive_timeout: float = 5.0,
        limit_concurrency: int = 128,
        backlog: int = 1024,
        workers: int = 2,
        answer_margin_ms: int = 100,
        shutdown_timeout: float = 5.0,
        http: str = "auto",
    ):
        if agent is None:
            agent = RandomSafeAgent()
        if not isinstance(agent, (JaxAgent, HostAgent)):
            raise TypeError(f"agent must be a JaxAgent or a HostAgent of jaxgames.agents; got {type(agent).__name__}")
        limits = dict(
            max_body_bytes=max_body_bytes,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            keep_alive_timeout=keep_alive_timeout,
            limit_concurrency=limit_concurrency,
            backlog=backlog,
            workers=workers,
            shutdown_timeout=shutdown_timeout,
        )
        for name, value in limits.items():
            if not value > 0:
                raise ValueError(f"{name} must be positive; got {value!r}")
        if answer_margin_ms < 0:
            raise ValueError(f"answer_margin_ms must be >= 0; got {answer_margin_ms}")
        for size in warmup_sizes:
            rules.validate_size(size, num_snakes)
        self.agent = agent
        self.num_snakes = num_snakes
        self.observation = observation
        Battlesnake(board_size=11, num_snakes=num_snakes, observation=observation)  # validates the kind
        self.info = {"apiversion": "1", "author": "jaxgames", "color": "#3b7dd8", "head": "default", "tail": "default", "version": "0.1.0"}
        self.info.update(info or {})
        self.max_body_bytes = max_body_bytes
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.answer_margin_ms = answer_margin_ms
        self.fallbacks = 0
        """How many ``/move`` answers were fallback moves (the agent was late)."""
        self._key = jax.random.key(seed)
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._per_size = {}
        self._compiled = set()  # sizes whose decision has run once (`move`)
        self._compiling = {}  # size -> concurrent Future of its `warm_up` on `_compiler`
        self._turns = 0
        self.http = http_protocol(http)
        """The uvicorn HTTP protocol serving: ``"httptools"`` or ``"h11"``."""
        self._uvicorn = _make_uvicorn(self, limits, self.http)  # first: a missing extra fails before the warm-up
        for size in warmup_sizes:
            self.warm_up(size)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="battlesnake-agent")
        # New sizes compile here, never on the workers: a burst of new sizes would otherwise hold every
        # worker for seconds and the compiled sizes' requests would queue past their timeout. One thread
        # bounds the compiles to one at a time (each takes CPU and memory from the serving threads).
        self._compiler = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="battlesnake-compile")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.create_server((host, port), family=family, backlog=backlog)
        self._thread = None
        self._stopped = threading.Event()  # set when serving has ended

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` actually listened on."""
        return self._socket.getsockname()[:2]

    @property
    def port(self) -> int:
        """The port actually listened on."""
        return self.address[1]

    def for_size(self, size: int):
        """``(env, decide)`` for a board size, built once: ``decide(board, turn_index, you) -> int``.

        A JAX agent's key is ``fold_in(key(seed), turn_index)``, derived inside
        the compiled call (no per-request key split on the host).
        """
        with self._lock:
            cached = self._per_size.get(size)
            if cached is not None:
                return cached
            env = Battlesnake(board_size=size, num_snakes=self.num_snakes, observation=self.observation)
            agent = self.agent
            if isinstance(agent, SearchAgent) and agent.time_budget is not None:
                build = jax.jit(lambda board: env.state_from_board(board))
                base_key = self._key

                def decide(board, index, you):
                    key = jax.random.fold_in(base_key, np.uint32(index))
                    return agent.act_in_time(env, build(board), key, int(you), agent.time_budget)[0]

            elif isinstance(agent, JaxAgent):
                base_key = self._key
                policy = jax.jit(
                    lambda board, index, you: agent.policy(env, env.state_from_board(board), jax.random.fold_in(base_key, index), you)
                )

                def decide(board, index, you):
                    return int(policy(board, np.uint32(index), np.int32(you)))

            else:
                build = jax.jit(lambda board: env.state_from_board(board))

                def decide(board, index, you):
                    del index
                    state = jax.device_get(build(board))
                    with self._lock:
                        rng = np.random.default_rng(self._rng.integers(2**63))
                    return int(agent.act(env, state, rng, you))

            self._per_size[size] = (env, decide)
            return env, decide

    def parse(self, request) -> api.Request:
        """`api.parse_request` of a request body (dict or JSON text), every input error as `ValueError`.

        The board's leaves are numpy arrays (``host_arrays=True``): the
        compiled decision moves them to the device.

        Raises:
            ValueError: a malformed request: invalid or too deeply nested
                JSON, a field of the wrong type or out of range (`check_shape`,
                `api.parse_request`).
        """
        try:
            if isinstance(request, (str, bytes)):
                request = json.loads(request)
            check_shape(request)
            parsed = api.parse_request(request, num_snakes=self.num_snakes, host_arrays=True)
        except RecursionError as e:
            raise ValueError("request JSON is nested too deeply") from e
        except (TypeError, KeyError, IndexError, AttributeError, OverflowError) as e:
            raise ValueError(f"malformed request ({type(e).__name__}: {e})") from e
        except ValueError as e:
            if isinstance(e, (json.JSONDecodeError, UnicodeDecodeError)):
                raise ValueError(f"request is not valid JSON: {e}") from e
            raise
        return parsed

    def move(self, request) -> dict:
        """The ``/move`` answer for a request body (dict or JSON text), computed here (no timeout).

        A board size not compiled yet compiles here first (seconds).

        Raises:
            ValueError: a malformed request (`parse`), or ``you`` not among
                the living snakes.
            RuntimeError: the agent answered a move code outside 0..3.
        """
        return self._decide(self._parse_move(request))

    def warm_up(self, size: int) -> None:
        """Compiles the decision for a ``size`` x ``size`` board (blocking, seconds; a no-op once compiled).

        Start-up runs it for ``warmup_sizes``; the server runs it on its
        compile thread for a size first seen in a request.

        Raises:
            ValueError: a size the server cannot play (`rules.validate_size`).
        """
        if size not in self._compiled:
            self.move(warmup_request(size))

    def _parse_move(self, request) -> api.Request:
        parsed = self.parse(request)
        if parsed.you < 0:
            raise ValueError("'you' is not among the living snakes of the board")
        return parsed

    def _decide(self, parsed: api.Request) -> dict:
        _, decide = self.for_size(parsed.board.size)
        with self._lock:
            index = self._turns
            self._turns += 1
        code = decide(parsed.board, index, parsed.you)
        if not 0 <= code < 4:
            raise RuntimeError(f"agent {self.agent!r} answered move code {code}, not one of 0..3")
        self._compiled.add(parsed.board.size)
        return {"move": rules.MOVE_NAMES[code], "shout": ""}

    def _compile_future(self, size: int) -> concurrent.futures.Future | None:
        """``None`` if ``size`` is compiled, else the Future of its `warm_up` on the compile thread (started once)."""
        with self._lock:
            if size in self._compiled:
                return None
            future = self._compiling.get(size)
            if future is None:
                future = self._compiling[size] = self._compiler.submit(self._compile, size)
            return future

    def _compile(self, size: int) -> None:
        try:
            self.warm_up(size)
        except Exception:
            _log.exception("compiling the %dx%d board failed", size, size)
            raise
        finally:
            with self._lock:  # a failed compile is tried again by the next request of its size
                self._compiling.pop(size, None)

    def _serve_move(self, request) -> dict | _Compiling:
        """On a worker: the ``/move`` answer of a compiled size, else `_Compiling` (never compiles here)."""
        parsed = self._parse_move(request)
        future = self._compile_future(parsed.board.size)
        return self._decide(parsed) if future is None else _Compiling(future, parsed)

    def _serve_start(self, request) -> api.Request:
        """On a worker: `parse`, and a new board size starts compiling before its first ``/move``."""
        parsed = self.parse(request)
        self._compile_future(parsed.board.size)
        return parsed

    async def _move_after_compile(self, compiling: _Compiling) -> dict:
        # shield: a request that runs out of time must not cancel a compile queued for its size.
        await asyncio.shield(asyncio.wrap_future(compiling.future))
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._decide, compiling.request)

    def start(self) -> BattlesnakeServer:
        """Serves in a background thread; returns once the server accepts connections.

        Raises:
            RuntimeError: the server did not start within 30 s.
        """
        self._thread = threading.Thread(target=self._run, name="battlesnake-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the Battlesnake server did not start")
            time.sleep(0.005)
        return self

    def _run(self) -> None:
        try:
            self._uvicorn.run(sockets=[self._socket])
        finally:
            self._stopped.set()

    def serve(self) -> None:
        """Serves in this thread until SIGINT or SIGTERM (main thread) or `stop`, then shuts down cleanly.

        Requests in flight are answered (within ``shutdown_timeout``), then
        the connections and the socket are closed and this returns normally.
        """
        in_main = threading.current_thread() is threading.main_thread()
        # uvicorn catches SIGINT/SIGTERM while serving and, once stopped, re-raises them into the
        # handlers it found. Ours ask for the stop as uvicorn's do (so a signal before uvicorn's are
        # installed is not lost) and raise nothing: a signal means "return", not KeyboardInterrupt or death.
        def ask_to_stop(*_):
            self._uvicorn.should_exit = True

        previous = {sig: signal.signal(sig, ask_to_stop) for sig in (signal.SIGINT, signal.SIGTERM)} if in_main else {}
        try:
            self._run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._close()

    def stop(self) -> None:
        """Stops serving (`start`, or `serve` in another thread): answers the requests in flight, closes
        the connections, the socket and the workers. A server that never served is just closed."""
        self._uvicorn.should_exit = True
        if self._uvicorn.started:
            self._stopped.wait()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._close()

    def _close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._compiler.shutdown(wait=False, cancel_futures=True)  # a compile in progress is not waited for
        self._socket.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def budget_s(self, timeout_ms: int) -> float:
        """Seconds within which ``/move`` is answered for an engine timeout of ``timeout_ms``."""
        return max(timeout_ms - self.answer_margin_ms, timeout_ms / 2) / 1000

    async def answer(self, path: str, body: bytes) -> tuple[int, dict]:
        """``(status, JSON answer)`` for a ``POST`` to ``/start``, ``/move`` or ``/end`` (the event loop's side)."""
        try:
            request = json.loads(body)
            timeout_ms = check_shape(request)
        except RecursionError:
            return 400, {"error": "request JSON is nested too deeply"}
        except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            message = f"request is not valid JSON: {e}" if isinstance(e, (json.JSONDecodeError, UnicodeDecodeError)) else str(e)
            return 400, {"error": message}
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        budget = self.budget_s(timeout_ms)
        work = {"/move": self._serve_move, "/start": self._serve_start}.get(path, self.parse)
        future = loop.run_in_executor(self._executor, work, request)
        try:
            # wait_for cancels a decision that has not started when the budget runs out.
            result = await asyncio.wait_for(future, budget)
            if isinstance(result, _Compiling):  # a new size: wait for its compile within what is left
                result = await asyncio.wait_for(self._move_after_compile(result), budget - (time.perf_counter() - t0))
        except asyncio.TimeoutError:
            if path != "/move":
                return 200, {}
            self.fallbacks += 1
            return 200, {"move": fallback_move(request), "shout": "", "fallback": True, "latency_ms": _ms(t0)}
        except ValueError as e:
            return 400, {"error": str(e)}
        except Exception as e:  # noqa: BLE001 -- an agent's bug is the server's error, never a crash
            _log.exception("agent failed on %s", path)
            return 500, {"error": f"{type(e).__name__}: {e}"}
        if path != "/move":
            return 200, {}
        return 200, {**result, "latency_ms": _ms(t0)}


class _Compiling(NamedTuple):
    """A ``/move`` request whose board size is compiling on the compile thread."""

    future: concurrent.futures.Future  # of `BattlesnakeServer.warm_up`
    request: api.Request  # parsed


def _ms(t0: float) -> float:
    return round(1000 * (time.perf_counter() - t0), 3)


HTTP_PROTOCOLS = ("auto", "httptools", "h11")
"""Values of ``BattlesnakeServer(http=...)``: uvicorn's HTTP/1.1 protocol (``auto``: httptools if importable, else h11)."""


def http_protocol(http: str = "auto") -> str:
    """The uvicorn HTTP protocol that ``http`` names on this machine: ``"httptools"`` or ``"h11"``.

    ``httptools`` (the C parser llhttp, Node.js's) costs less CPU per request
    than ``h11`` (pure Python); ``auto`` takes it when the package is
    importable and otherwise falls back to ``h11`` with a warning in the log
    (``pip install httptools``, part of the ``server`` extra).

    Raises:
        ValueError: ``http`` not one of `HTTP_PROTOCOLS`.
        ImportError: ``http="httptools"`` and the package is missing.
    """
    if http not in HTTP_PROTOCOLS:
        raise ValueError(f"http must be one of {HTTP_PROTOCOLS}; got {http!r}")
    if http == "h11":
        return "h11"
    try:
        import httptools  # noqa: F401  (optional: the 'server' extra; probed here, h11 otherwise)
    except ImportError as e:
        if http == "httptools":
            raise ImportError(f"http='httptools' needs the httptools package: pip install httptools ({e})") from e
        _log.warning("httptools is not installed: serving HTTP with uvicorn's slower pure-Python h11 protocol (pip install httptools)")
        return "h11"
    return "httptools"


_POST_PATHS = ("/start", "/move", "/end")


def _json_response(status: int, content: dict, *, close: bool = False, allow: bytes | None = None):
    """The two ASGI messages of a JSON response (``application/json``, UTF-8, compact, as Starlette's JSONResponse)."""
    body = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if close:
        headers.append((b"connection", b"close"))
    if allow is not None:
        headers.append((b"allow", allow))
    return {"type": "http.response.start", "status": status, "headers": headers}, {"type": "http.response.body", "body": body}


def asgi_app(server: BattlesnakeServer):
    """The ASGI application of a `BattlesnakeServer`: ``GET /`` and ``POST /start``, ``/move``, ``/end``.

    A plain ASGI callable (no framework: four fixed routes need no router):
    a body is read up to ``server.max_body_bytes`` (``413`` beyond, declared
    or streamed) within ``server.body_timeout`` seconds (``408``), then
    answered by `BattlesnakeServer.answer`; another path is ``404``, another
    method ``405`` (with ``Allow``); every answer is JSON (``{"error":
    reason}`` for errors) and an error before the body is read closes the
    connection.
    """
    timeout_at = getattr(asyncio, "timeout_at", None)  # Python 3.11+: a timer per receive, not a task as wait_for

    async def receive_by(receive, deadline):
        if timeout_at is not None:
            async with timeout_at(deadline):
                return await receive()
        return await asyncio.wait_for(receive(), max(0.0, deadline - asyncio.get_running_loop().time()))

    async def read_body(scope, receive):
        """The request body, or the ``(status, error)`` that answers it instead."""
        for name, value in scope["headers"]:
            if name == b"content-length":  # the protocols answer most bad ones 400 before we see them
                if not value.isdigit():
                    return 400, f"bad Content-Length {value[:40].decode('latin-1')!r}"
                if int(value) > server.max_body_bytes:
                    return 413, f"body of {int(value)} bytes is over the limit of {server.max_body_bytes}"
                break
        body = bytearray()
        deadline = asyncio.get_running_loop().time() + server.body_timeout
        while True:
            try:
                message = await receive_by(receive, deadline)
            except (asyncio.TimeoutError, TimeoutError):
                return 408, f"body not received within {server.body_timeout:g} s"
            if message["type"] == "http.disconnect":
                return 400, "client disconnected"
            body += message.get("body", b"")
            if len(body) > server.max_body_bytes:
                return 413, f"body is over the limit of {server.max_body_bytes} bytes"
            if not message.get("more_body", False):
                return bytes(body)

    async def app(scope, receive, send):
        if scope["type"] != "http":  # lifespan is off and websockets are not served
            return
        path, method = scope["path"], scope["method"]
        if path in _POST_PATHS:
            if method != "POST":
                messages = _json_response(405, {"error": f"Method Not Allowed: {method} {path}"}, allow=b"POST")
            else:
                body = await read_body(scope, receive)
                if isinstance(body, tuple):
                    messages = _json_response(body[0], {"error": body[1]}, close=True)
                else:
                    messages = _json_response(*await server.answer(path, body))
        elif path == "/":
            if method in ("GET", "HEAD"):
                messages = _json_response(200, server.info)
            else:
                messages = _json_response(405, {"error": f"Method Not Allowed: {method} {path}"}, allow=b"GET, HEAD")
        else:
            messages = _json_response(404, {"error": f"Not Found: {method} {path}"})
        for message in messages:
            await send(message)

    return app


class _HeaderDeadline:
    """A deadline for a request's line and headers, mixed into a uvicorn HTTP protocol; sets TCP_NODELAY.

    The deadline is armed when the connection opens and after every
    response; data arriving does not push it back (uvicorn's keep-alive
    timer does), so a client trickling a byte a second is cut off. When it
    passes while the connection still waits for a request's headers, the
    connection is closed (after a ``408`` if part of a request came).
    Subclasses say whether they wait for headers (`_waiting_for_headers`).
    """

    header_timeout = 5.0
    _header_timer = None

    def connection_made(self, transport):
        super().connection_made(transport)
        # asyncio sets TCP_NODELAY only on sockets made with proto=IPPROTO_TCP; ours may not be. Without
        # it a kept-alive connection waits for the delayed ACK between the response's head and body.
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._arm_header_timer()

    def on_response_complete(self):
        super().on_response_complete()
        self._arm_header_timer()

    def connection_lost(self, exc):
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def _arm_header_timer(self):
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_deadline)

    def _header_deadline(self):
        self._header_timer = None
        waiting, partial = self._waiting_for_headers()
        if self.transport.is_closing() or not waiting:
            return  # a request is being read or answered: the body deadline and the app take over
        if partial:
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
        self.transport.close()

    def _waiting_for_headers(self) -> tuple[bool, bool]:
        """``(no request is being read or answered, part of the next request's head has come)``."""
        raise NotImplementedError


def _protocol_class(http: str, header_timeout: float) -> type:
    """uvicorn's protocol class for ``http`` (``"httptools"`` or ``"h11"``) with `_HeaderDeadline`."""
    if http == "httptools":
        # uvicorn, httptools and h11 are the optional 'server' extra: imported when a server is built,
        # so this module (and its agent table) imports without them.
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        class Protocol(_HeaderDeadline, HttpToolsProtocol):
            _head_begun = False  # on_message_begin came, on_headers_complete not yet

            def on_message_begin(self):
                self._head_begun = True
                super().on_message_begin()

            def on_headers_complete(self):
                self._head_begun = False
                super().on_headers_complete()

            def _waiting_for_headers(self):
                idle = (self.cycle is None or self.cycle.response_complete) and not self.pipeline
                return idle, self._head_begun

    else:
        import h11
        from uvicorn.protocols.http.h11_impl import H11Protocol

        class Protocol(_HeaderDeadline, H11Protocol):
            def _waiting_for_headers(self):
                return self.conn.their_state is h11.IDLE, bool(self.conn.trailing_data[0])

    Protocol.header_timeout = header_timeout
    return Protocol


def _make_uvicorn(server: BattlesnakeServer, limits: dict, http: str):
    """The uvicorn server of a `BattlesnakeServer`: `asgi_app` on the ``http`` protocol with a header deadline."""
    try:
        import uvicorn  # optional: the 'server' extra (a clear ImportError below)
    except ImportError as e:
        raise ImportError(f"the Battlesnake server needs the 'server' extra (uvicorn, httptools): pip install -e '.[server]' ({e})") from e
    config = uvicorn.Config(
        asgi_app(server),
        http=_protocol_class(http, limits["header_timeout"]),
        ws="none",
        lifespan="off",
        loop="asyncio",
        interface="asgi3",
        proxy_headers=False,  # no proxy in front: the client's address is not read
        log_config=None,
        log_level="warning",
        access_log=False,
        server_header=False,
        limit_concurrency=limits["limit_concurrency"],
        backlog=limits["backlog"],
        timeout_keep_alive=limits["keep_alive_timeout"],
        timeout_graceful_shutdown=limits["shutdown_timeout"],
    )
    return uvicorn.Server(config)


def server_from_args(argv=None) -> tuple[BattlesnakeServer, str]:
    """The server the command line asks for (bound, not serving) and its description.

    Options: ``--host`` (default 127.0.0.1, this machine only; 0.0.0.0
    accepts outside connections), ``--port`` (8000; 0 picks a free port),
    ``--agent`` (a name of `AGENTS`, default
    ``random_safe``), ``--seed``, the search agent's ``--depth``,
    ``--opponents``, ``--branching``, ``--tie-break``, ``--default-policy``, ``--time-budget-ms`` (default
    `SEARCH_TIME_BUDGET_MS`) and ``--evaluation`` (`parse_weights`), ``--warmup-sizes`` (comma-separated board
    sizes compiled at start-up, default ``7,11,19``), ``--workers`` (threads
    running the agent, default 2), ``--limit-concurrency`` (128), ``--http``
    (uvicorn's protocol, `HTTP_PROTOCOLS`, default ``auto``).

    Raises:
        SystemExit: bad options (argparse's usage message).
        ValueError: a bad warm-up size or limit.
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 to accept outside connections)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--agent", choices=sorted(AGENTS), default="random_safe")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--depth", type=int, default=None, help="search: plies (default: the agent's)")
    p.add_argument("--opponents", type=int, default=None, help="search: nearest snakes enumerated (default: the agent's)")
    p.add_argument("--branching", type=int, default=None,
                   help="search: moves enumerated per searched snake and node, 1-4 (default: the agent's)")
    p.add_argument("--tie-break", choices=TIE_BREAKS, default=None,
                   help="search: among moves of equal value, the highest mean over the answers, or any (default: the agent's)")
    p.add_argument("--default-policy", choices=sorted(DEFAULT_POLICIES), default=None,
                   help="search: the moves of the snakes that do not answer (default: the agent's)")
    p.add_argument("--alphabeta", action=argparse.BooleanOptionalAction, default=None,
                   help="search: the best-reply tree searched depth first with alpha-beta pruning "
                        "(default: the agent's)")
    p.add_argument("--step-budget", type=int, default=None,
                   help="search, with --alphabeta: states a move may step (depth - 1 first, then depth with the rest; "
                        "default: the agent's)")
    p.add_argument("--time-budget-ms", type=float, default=None,
                   help=f"search: think time per move, a deadline for the search (default {SEARCH_TIME_BUDGET_MS:g})")
    p.add_argument("--evaluation", default=None,
                   help="search: leaf evaluation keywords of evaluate, name:value comma-separated "
                        "(e.g. hungry_unless_longest:false,food_weight:0.8; default: the agent's)")
    p.add_argument("--warmup-sizes", default="7,11,19", help="board sizes compiled at start-up, comma-separated")
    p.add_argument("--workers", type=int, default=2, help="threads running the agent's decisions")
    p.add_argument("--limit-concurrency", type=int, default=128, help="most connections or requests at once (503 beyond)")
    p.add_argument("--http", choices=HTTP_PROTOCOLS, default="auto", help="uvicorn's HTTP protocol (auto: httptools if installed)")
    a = p.parse_args(argv)
    try:
        sizes = tuple(int(v) for v in a.warmup_sizes.split(",") if v.strip())
    except ValueError:
        p.error(f"--warmup-sizes must be comma-separated integers; got {a.warmup_sizes!r}")
    options = {k: v for k, v in (("depth", a.depth), ("opponents", a.opponents), ("branching", a.branching),
                                 ("tie_break", a.tie_break), ("default_policy", a.default_policy),
                                 ("alphabeta", a.alphabeta), ("step_budget", a.step_budget)) if v is not None}
    if a.time_budget_ms is not None:
        options["time_budget"] = a.time_budget_ms / 1000
    if a.evaluation is not None:
        try:
            options.update(parse_weights(a.evaluation))
        except ValueError as e:
            p.error(f"--evaluation: {e}")
    if options and a.agent != "search":
        p.error(f"--depth, --opponents, --branching, --tie-break, --default-policy, --alphabeta, --step-budget, "
                f"--time-budget-ms and --evaluation are settings of --agent search, not {a.agent}")
    if a.agent == "search":
        options.setdefault("time_budget", SEARCH_TIME_BUDGET_MS / 1000)
    try:
        agent = AGENTS[a.agent](**options)
    except (TypeError, ValueError) as e:
        p.error(str(e))
    srv = BattlesnakeServer(
        agent,
        host=a.host,
        port=a.port,
        seed=a.seed,
        warmup_sizes=sizes,
        observation="none",
        workers=a.workers,
        limit_concurrency=a.limit_concurrency,
        http=a.http,
    )
    host, port = srv.address
    return srv, f"Battlesnake server ({a.agent}, {srv.http}) on http://{host}:{port}"


def main(argv=None) -> None:
    """Command line: serve a built-in agent until SIGINT or SIGTERM (`server_from_args`), exit status 0."""
    srv, line = server_from_args(argv)
    print(line, flush=True)
    srv.serve()
    print("Battlesnake server stopped", flush=True)


if __name__ == "__main__":
    main()
