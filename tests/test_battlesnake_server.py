"""The Battlesnake HTTP server, with real HTTP requests on 127.0.0.1 only.

Request bodies are written by hand in the documented API format
(docs.battlesnake.com/api); expected moves are derived by hand from the
official rules (``standard.go``). Malformed and hostile requests are written
as raw bytes on a socket. The tests of the shared ``server`` fixture run on
both of uvicorn's HTTP protocols (httptools, the default, and h11).
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.agents.base import HostAgent
from jaxgames.agents.battlesnake import HeuristicAgent, QAgent, RandomSafeAgent
from jaxgames.games.battlesnake import rules
from jaxgames.serve.battlesnake import BattlesnakeServer, http_protocol, server_from_args
from tests.test_battlesnake_api import REQUEST, _request, _snake


MAX_BODY = 64 * 1024
TIMEOUT = 0.5  # the test server's header and body timeouts, s


@pytest.fixture(scope="module", params=["httptools", "h11"])
def server(request):
    with BattlesnakeServer(
        RandomSafeAgent(),
        host="127.0.0.1",
        port=0,
        warmup_sizes=(11,),
        info={"author": "tests"},
        observation="none",
        max_body_bytes=MAX_BODY,
        header_timeout=TIMEOUT,
        body_timeout=TIMEOUT,
        http=request.param,
    ) as srv:
        assert srv.http == request.param
        yield srv


def _connection(server, timeout=5.0):
    """A kept-alive client connection with TCP_NODELAY, as the official engine's Go client has."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def _call(server, method, path, body=None, conn=None):
    own = conn is None
    conn = _connection(server) if own else conn
    data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read() or b"{}")
    if own:
        conn.close()
    return out


def _raw(port, data: bytes, *, wait: float = 5.0) -> bytes:
    """Sends raw bytes and reads until the server closes, a full response arrives, or ``wait`` s pass."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    out = b""
    try:
        s.sendall(data)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            head, sep, body = out.partition(b"\r\n\r\n")
            lengths = [ln for ln in head.lower().split(b"\r\n") if ln.startswith(b"content-length:")]
            if sep and lengths and len(body) >= int(lengths[0].split(b":")[1]):
                break
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        pass
    finally:
        s.close()
    return out


def _status(response: bytes) -> int:
    """The status code of a raw response (0: none)."""
    parts = response.split(b" ", 2)
    return int(parts[1]) if len(parts) > 2 and parts[0].startswith(b"HTTP/") else 0


def test_info(server):
    status, info = _call(server, "GET", "/")
    assert status == 200 and info["apiversion"] == "1" and info["author"] == "tests"


def test_start_move_end(server):
    assert _call(server, "POST", "/start", REQUEST) == (200, {})
    status, answer = _call(server, "POST", "/move", REQUEST)
    assert status == 200 and answer["move"] in rules.MOVE_NAMES
    assert _call(server, "POST", "/end", REQUEST) == (200, {})


def test_move_avoids_walls_and_bodies_and_answers_fast(server):
    # You (beta) at (0, 5) facing left along the wall, a body above: only "down" is safe.
    snakes = [
        _snake("alpha", [(0, 6), (1, 6), (2, 6), (3, 6)]),
        _snake("beta", [(0, 5), (1, 5), (2, 5)]),
    ]
    req = _request(snakes, food=[(5, 5)], you=1)
    latencies = []
    for _ in range(20):
        t0 = time.perf_counter()
        status, answer = _call(server, "POST", "/move", req)
        latencies.append(time.perf_counter() - t0)
        assert status == 200 and answer["move"] == "down"
    latencies.sort()
    # A compile per request (seconds) would fail this; the speed itself is measured in benchmarks/, not here:
    # the slowest of 20 calls once took 0.57 s on a loaded 2-core machine (typical: 2 ms).
    assert latencies[len(latencies) // 2] < 0.5, latencies  # the median within the engine's 500 ms timeout


@pytest.mark.parametrize(
    "body, match",
    [
        ("{broken", "valid JSON"),
        ({"game": {}, "turn": 0}, "missing the field 'board'"),
        ({**copy.deepcopy(REQUEST), "board": {**REQUEST["board"], "width": 12}}, "square"),
    ],
)
def test_bad_requests_get_400_with_a_reason(server, body, match):
    status, answer = _call(server, "POST", "/move", body)
    assert status == 400 and match in answer["error"]
    assert _call(server, "GET", "/")[0] == 200  # still serving


def test_off_board_and_unknown_path(server):
    req = copy.deepcopy(REQUEST)
    req["board"]["snakes"][0]["body"][3] = {"x": -1, "y": 3}
    status, answer = _call(server, "POST", "/move", req)
    assert status == 400 and "off the" in answer["error"]
    assert _call(server, "POST", "/nowhere", REQUEST)[0] == 404


def test_end_without_living_snakes(server):
    req = copy.deepcopy(REQUEST)
    req["board"]["snakes"] = []
    assert _call(server, "POST", "/end", req) == (200, {})
    status, answer = _call(server, "POST", "/move", req)
    assert status == 400 and "you" in answer["error"]


def test_q_agent_plays_the_best_relative_action():
    # A Q-function preferring "turn right" (relative action 2).
    srv = BattlesnakeServer(QAgent(lambda view: jnp.array([0.1, 0.2, 0.9])), port=0, warmup_sizes=(), observation="none")
    try:
        # beta's head (5, 5), neck (6, 5): it faces left, so turning right is "up".
        assert srv.move(REQUEST)["move"] == "up"
    finally:
        srv.stop()


# On 11x11: "beta" (length 3) at (3, 3) faces left (neck (4, 3)). A long "alpha" bends around the
# pocket {(1, 3), (2, 3)} with its head at (2, 4), next to (3, 4) and (2, 3); its tail is far.
# Left: trapped in the pocket (alpha's walls stay 6+ turns); up: head-to-head with a longer snake;
# right: the neck. Only down is sound.
_ALPHA = [(2, 4), (1, 4), (0, 4), (0, 3), (0, 2), (1, 2), (2, 2), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)]
POCKET = _request([_snake("alpha", _ALPHA, 80), _snake("beta", [(3, 3), (4, 3), (5, 3)], 80)], food=[(9, 9)], you=1)


def test_heuristic_agent_is_served_over_http():
    with BattlesnakeServer(HeuristicAgent(), host="127.0.0.1", port=0, warmup_sizes=(11,), observation="none") as srv:
        for _ in range(10):
            status, answer = _call(srv, "POST", "/move", POCKET)
            assert status == 200 and answer["move"] == "down"


def test_random_safe_agent_is_served_over_http(server):
    seen = set()
    for _ in range(30):
        status, answer = _call(server, "POST", "/move", POCKET)
        assert status == 200
        seen.add(answer["move"])
    assert seen == {"up", "down", "left"}  # the safe moves (head-to-head risks ignored), each at 1/3


class _FirstOnBoardHostAgent(HostAgent):
    """A host agent: the lowest move code whose target cell is on the board (numpy, no JAX)."""

    def act(self, env, state, rng, player):
        head = np.asarray(state.board.head)[player]
        for code, (dx, dy) in enumerate(rules.DELTAS.tolist()):
            if 0 <= head[0] + dx < env.board_size and 0 <= head[1] + dy < env.board_size:
                return code
        return 0


def test_host_agents_and_library_agents_are_served():
    from jaxgames.agents import FirstLegalAgent

    # gamma's head (9, 0) is on the bottom edge: up (9, 1) stays on the board.
    req = copy.deepcopy(REQUEST)
    req["you"] = copy.deepcopy(req["board"]["snakes"][2])
    with BattlesnakeServer(_FirstOnBoardHostAgent(), port=0, warmup_sizes=(11,), observation="none") as srv:
        status, answer = _call(srv, "POST", "/move", req)
        assert status == 200 and answer["move"] == "up" and "fallback" not in answer
    # FirstLegalAgent: beta faces left (neck on the right): legal [up, down, left]; the first is "up".
    srv = BattlesnakeServer(FirstLegalAgent(), port=0, warmup_sizes=())
    try:
        assert srv.move(REQUEST)["move"] == "up"
    finally:
        srv.stop()
    with pytest.raises(TypeError, match="JaxAgent or a HostAgent"):
        BattlesnakeServer(lambda board, you, key: 0, port=0, warmup_sizes=())


def test_command_line_serves_the_named_agent():
    srv, line = server_from_args(["--port", "0", "--agent", "heuristic", "--warmup-sizes", "11"])
    assert "heuristic" in line and srv.address[0] == "127.0.0.1"
    with srv:
        status, answer = _call(srv, "POST", "/move", POCKET)
        assert status == 200 and answer["move"] == "down"
    with pytest.raises(SystemExit):
        server_from_args(["--agent", "nobody"])


# --- Hardening (issue 10): each test below failed on the http.server version of the server. ---


def test_kept_alive_move_pays_no_delayed_ack(server):
    # Headers and body written separately with Nagle's algorithm on made the body wait for the
    # client's delayed ACK: about 44 ms a turn on a kept-alive connection. Anchor: the bare decision.
    text = json.dumps(REQUEST)
    bare = []
    for _ in range(50):
        t0 = time.perf_counter()
        server.move(text)
        bare.append(time.perf_counter() - t0)
    conn = _connection(server)
    over_http = []
    for _ in range(50):
        t0 = time.perf_counter()
        status, _ = _call(server, "POST", "/move", text, conn=conn)
        over_http.append(time.perf_counter() - t0)
        assert status == 200
    conn.close()
    bare_p50, http_p50 = np.median(bare), np.median(over_http)
    assert http_p50 < bare_p50 + 0.020, (http_p50, bare_p50)


@pytest.mark.parametrize("length", ["abc", "-5", "1.5", "5, 6"])
def test_bad_content_length_gets_400(server, length):
    response = _raw(server.port, f"POST /move HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n{{}}".encode())
    assert _status(response) == 400


def test_oversized_bodies_get_413_unread(server):
    # Declared: answered at once, before any of the body is sent (10**12 bytes are never allocated).
    for length in (MAX_BODY + 1, 10**12):
        t0 = time.perf_counter()
        response = _raw(server.port, f"POST /move HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n".encode())
        assert _status(response) == 413 and b"connection: close" in response.lower()
        assert time.perf_counter() - t0 < 2.0
    # Chunked (no declared length): cut off once the stream passes the cap.
    chunk = b"x" * 16384
    stream = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(MAX_BODY // len(chunk) + 2)) + b"0\r\n\r\n"
    response = _raw(server.port, b"POST /move HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + stream)
    assert _status(response) == 413
    assert _call(server, "POST", "/move", REQUEST)[0] == 200  # still serving


def _trickle(port, data: bytes, *, interval: float, give_up: float) -> tuple[float, bytes]:
    """Sends ``data`` a byte every ``interval`` s; returns (seconds until the server answered or closed, answer)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(interval)
    t0 = time.perf_counter()
    got = b""
    try:
        for i in range(10**6):
            if time.perf_counter() - t0 > give_up:
                break
            if i < len(data):
                s.sendall(data[i : i + 1])
            try:
                chunk = s.recv(4096)
            except socket.timeout:
                continue
            got += chunk
            break  # an answer, or b"" = closed
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        s.close()
    return time.perf_counter() - t0, got


def test_slow_clients_are_cut_off(server):
    # One byte every 0.1 s: the request line and headers never finish within the header timeout.
    elapsed, got = _trickle(server.port, b"POST /move HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 100, interval=0.1, give_up=5)
    assert TIMEOUT - 0.05 < elapsed < TIMEOUT + 1.5, elapsed
    assert got == b"" or _status(got) == 408
    # Headers at once, the body a byte at a time: 408 once the body timeout passes.
    head = b"POST /move HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(head)
    elapsed, got = _trickle(server.port, head + b"{" * 1000, interval=0.1, give_up=5)
    s.close()
    assert TIMEOUT - 0.05 < elapsed < TIMEOUT + 1.5, elapsed
    assert _status(got) == 408
    # A kept-alive connection that stays idle is closed as well.
    conn = _connection(server)
    assert _call(server, "GET", "/", conn=conn)[0] == 200
    conn.sock.settimeout(5)
    t0 = time.perf_counter()
    assert conn.sock.recv(1) == b""
    assert time.perf_counter() - t0 < TIMEOUT + 1.5
    conn.close()


def test_idle_connections_hold_no_threads(server):
    before = threading.active_count()
    socks = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(100)]
    time.sleep(0.2)
    assert threading.active_count() <= before + 2  # the worker pool may start its threads
    assert _call(server, "POST", "/move", REQUEST)[0] == 200
    for s in socks:
        s.close()


def test_concurrent_requests_are_bounded_and_the_backlog_is_realistic():
    srv = BattlesnakeServer(port=0, warmup_sizes=(), limit_concurrency=4)
    with srv:
        held = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(4)]
        time.sleep(0.2)
        assert _status(_raw(srv.port, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")) == 503
        for s in held:
            s.close()
        time.sleep(0.2)
        assert _call(srv, "GET", "/")[0] == 200
    # A burst of connections queues in the backlog: none waits for a SYN retransmission (1 s).
    srv = BattlesnakeServer(port=0, warmup_sizes=())
    with srv:
        socks = []
        t0 = time.perf_counter()
        for _ in range(100):  # under limit_concurrency (128): connections count towards it
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", srv.port))
            socks.append(s)
        for s in socks:
            s.setblocking(True)
            s.settimeout(5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        answers = [_recv_or_nothing(s) for s in socks]
        elapsed = time.perf_counter() - t0
        for s in socks:
            s.close()
    assert all(_status(a) == 200 for a in answers)
    assert elapsed < 0.9, elapsed


def _recv_or_nothing(s) -> bytes:
    try:
        return s.recv(64)
    except OSError:
        return b""


def _with(path, value):
    req = copy.deepcopy(REQUEST)
    obj = req
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value
    return req


@pytest.mark.parametrize(
    "body, match",
    [
        (_with(("board", "hazards"), None), "hazards must be a list"),
        (_with(("turn",), 2**40), "turn"),
        (_with(("turn",), -1), "turn"),
        (_with(("game", "timeout"), "fast"), "game.timeout"),
        (_with(("game", "timeout"), 0), "game.timeout"),
        (_with(("board", "food"), None), "food"),
        (_with(("board", "width"), 10**30), "square"),
        (_with(("board", "snakes", 0, "body", 0, "x"), 2**40), "off the"),
        (_with(("board", "food"), [{"x": 2**63, "y": 0}]), "off the"),
        ({**REQUEST, "board": {**REQUEST["board"], "width": 1000, "height": 1000}}, "board_size"),
        (_with(("board", "snakes"), [copy.deepcopy(REQUEST["board"]["snakes"][0])] * 9), "duplicate"),
        (_with(("board", "snakes"), [None]), "JSON object"),
        (_with(("you",), []), "you"),
        ("[" * 20_000 + "]" * 20_000, "nested too deeply"),
        ('{"game": ' * 5_000 + "{}" + "}" * 5_000, "nested too deeply"),
        ([REQUEST], "JSON object"),
        ("null", "JSON object"),
        (b"\xff\xfe{}", "valid JSON"),
        ("", "valid JSON"),
    ],
)
def test_malformed_requests_get_400_never_500(server, body, match):
    for path in ("/move", "/start", "/end"):
        status, answer = _call(server, "POST", path, body)
        assert status == 400 and match in answer["error"], (path, answer)


def test_unknown_paths_and_methods_get_json_errors(server):
    assert _call(server, "GET", "/nowhere")[0] == 404
    status, answer = _call(server, "GET", "/move")
    assert status == 405 and "error" in answer


def test_default_address_is_localhost():
    srv = BattlesnakeServer(port=0, warmup_sizes=())
    try:
        assert srv.address[0] == "127.0.0.1"
    finally:
        srv.stop()


class _SlowAgent(_FirstOnBoardHostAgent):
    """A host agent that thinks for ``seconds`` before its move."""

    seconds = 1.0

    def act(self, env, state, rng, player):
        time.sleep(self.seconds)
        return super().act(env, state, rng, player)


@pytest.mark.parametrize("warmup_sizes", [(), (11,)], ids=["new_size", "compiled_size"])
def test_a_late_agent_is_answered_by_a_safe_fallback_within_the_timeout(warmup_sizes):
    # beta (you) at (0, 5) facing left along the wall, alpha's body above: only "down" is safe.
    snakes = [_snake("alpha", [(0, 6), (1, 6), (2, 6), (3, 6)]), _snake("beta", [(0, 5), (1, 5), (2, 5)])]
    req = _request(snakes, food=[(5, 5)], you=1)
    req["game"]["timeout"] = 300
    agent = _SlowAgent()
    agent.seconds = 0.0  # no wait in the warm-up
    srv = BattlesnakeServer(agent, port=0, warmup_sizes=warmup_sizes, answer_margin_ms=100)
    agent.seconds = 1.0
    with srv:
        t0 = time.perf_counter()
        status, answer = _call(srv, "POST", "/move", req)
        elapsed = time.perf_counter() - t0
        assert status == 200 and answer["move"] == "down" and answer["fallback"] is True
        assert 0.2 <= elapsed < 0.6, elapsed  # budget: 300 - 100 ms; the agent alone takes 1 s
        assert srv.fallbacks == 1


def _corner_request(size: int) -> dict:
    """You alone on a ``size`` x ``size`` board, head in the top-left corner facing left: only "down" is safe.

        y=size-1  H b b . .
                  . . . . .
    """
    return _request([_snake("beta", [(0, size - 1), (1, size - 1), (2, size - 1)])], food=[(size - 1, 0)], you=0, size=size)


def _timed_call(server, path, body):
    t0 = time.perf_counter()
    status, answer = _call(server, "POST", path, body)
    return status, answer, time.perf_counter() - t0


def test_compiled_sizes_are_answered_in_time_while_new_sizes_compile():
    # Issue 30: a burst of new sizes compiled on the workers, so a compiled size's moves waited past
    # their timeout. Here each new size "compiles" for 5 s (cut short at the end) with a single worker.
    srv = BattlesnakeServer(RandomSafeAgent(), port=0, warmup_sizes=(11,), observation="none", workers=1)
    real_warm_up, release, lock = srv.warm_up, threading.Event(), threading.Lock()
    compiled, running = [], [0, 0]  # sizes whose compile began; [compiles running now, most at once]

    def slow_warm_up(size):
        with lock:
            compiled.append(size)
            running[0] += 1
            running[1] = max(running)
        release.wait(5)
        with lock:
            running[0] -= 1
        real_warm_up(size)

    srv.warm_up = slow_warm_up
    # beta (you) at (0, 5) facing left along the wall, alpha's body above: only "down" is safe.
    snakes = [_snake("alpha", [(0, 6), (1, 6), (2, 6), (3, 6)]), _snake("beta", [(0, 5), (1, 5), (2, 5)])]
    compiled_size = _request(snakes, food=[(5, 5)], you=1)
    with srv:
        assert _call(srv, "POST", "/start", _corner_request(7)) == (200, {})  # 7 starts compiling
        deadline = time.monotonic() + 5
        while compiled != [7] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert compiled == [7]
        burst = []  # a /move per new size, then another for 7: more than the one worker
        clients = [threading.Thread(target=lambda s=s: burst.append((s, _timed_call(srv, "/move", _corner_request(s))))) for s in (7, 9, 7)]
        for c in clients:
            c.start()
        time.sleep(0.05)
        for _ in range(5):
            status, answer, elapsed = _timed_call(srv, "/move", compiled_size)
            assert status == 200 and answer["move"] == "down" and "fallback" not in answer, answer
            assert elapsed < 0.5, elapsed  # within game.timeout (500 ms): the agent answered, not the fallback
        for c in clients:
            c.join()
        assert not release.is_set() and compiled == [7] and running == [1, 1]  # 7 still compiling, 9 waits its turn
        assert sorted(s for s, _ in burst) == [7, 7, 9]
        for size, (status, answer, elapsed) in burst:
            assert status == 200 and answer["move"] == "down" and answer["fallback"] is True, (size, answer)
            assert elapsed < 0.5, (size, elapsed)  # the safe fallback within game.timeout
        release.set()
        deadline = time.monotonic() + 60
        while True:  # once compiled, the new sizes are answered by the agent
            status, answer = _call(srv, "POST", "/move", _corner_request(9))
            if "fallback" not in answer or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert status == 200 and answer["move"] == "down" and "fallback" not in answer, answer
        assert sorted(compiled) == [7, 9] and running[1] == 1  # each size compiled once, one at a time


def test_stop_with_requests_in_flight_answers_them():
    agent = _SlowAgent()
    agent.seconds = 0.0  # no wait in the warm-up
    srv = BattlesnakeServer(agent, port=0, warmup_sizes=(11,))
    agent.seconds = 1.0
    req = copy.deepcopy(REQUEST)
    req["game"]["timeout"] = 5000  # the agent's own answer comes in time, during the shutdown
    srv.start()
    answers = []
    client = threading.Thread(target=lambda: answers.append(_call(srv, "POST", "/move", req)))
    client.start()
    time.sleep(0.3)  # the request is in the agent's hands
    t0 = time.perf_counter()
    srv.stop()
    client.join()
    assert time.perf_counter() - t0 < 3
    assert answers and answers[0][0] == 200 and "fallback" not in answers[0][1]
    assert answers[0][1]["move"] == "up"  # beta at (5, 5): up (5, 6) is on the board, the first move code


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_command_line_shuts_down_cleanly_on_sigint_and_sigterm():
    # Both servers start at once (each compiles for 11x11); then each gets its signal under load.
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    procs = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        port = _free_port()
        cmd = [sys.executable, "-m", "jaxgames.serve.battlesnake", "--port", str(port), "--warmup-sizes", "11"]
        procs[sig] = port, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for sig, (port, proc) in procs.items():
            assert f"127.0.0.1:{port}" in proc.stdout.readline()
            body = json.dumps(REQUEST)
            stop, outcomes = threading.Event(), []

            def hammer(port=port, stop=stop, outcomes=outcomes):
                while not stop.is_set():
                    try:
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                        conn.request("POST", "/move", body=body)
                        outcomes.append(conn.getresponse().status)
                        conn.close()
                    except OSError:  # refused or reset once the server stops listening
                        outcomes.append("closed")
                        time.sleep(0.01)

            clients = [threading.Thread(target=hammer) for _ in range(6)]
            for c in clients:
                c.start()
            deadline = time.monotonic() + 30
            while outcomes.count(200) < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert outcomes.count(200) >= 20, outcomes[-5:]
            proc.send_signal(sig)
            t0 = time.perf_counter()
            last = proc.stdout.readline()
            stop.set()
            for c in clients:
                c.join()
            code = proc.wait(timeout=20)
            assert time.perf_counter() - t0 < 10
            stderr = proc.stderr.read()
            assert code == 0 and "stopped" in last, (sig, code, stderr[-2000:])
            assert "Traceback" not in stderr, stderr[-2000:]
            assert set(outcomes) <= {200, "closed"}, set(outcomes)
    finally:
        for _, proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# --- The HTTP protocol: httptools when installed, h11 otherwise. ---


def test_http_protocol_is_httptools_when_installed_and_can_be_named():
    assert http_protocol("auto") == "httptools" and http_protocol("httptools") == "httptools"
    assert http_protocol("h11") == "h11"
    with pytest.raises(ValueError, match="http must be one of"):
        http_protocol("h2")
    with pytest.raises(ValueError, match="http must be one of"):
        BattlesnakeServer(port=0, warmup_sizes=(), http="zttp")
    srv = BattlesnakeServer(port=0, warmup_sizes=())
    try:
        assert srv.http == "httptools"
    finally:
        srv.stop()


def test_without_httptools_the_server_falls_back_to_h11_and_says_so(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "httptools", None)  # `import httptools` now raises ImportError
    with caplog.at_level("WARNING", logger="jaxgames.serve.battlesnake"):
        assert http_protocol("auto") == "h11"
    assert "pip install httptools" in caplog.text
    with pytest.raises(ImportError, match="pip install httptools"):
        http_protocol("httptools")
    with pytest.raises(ImportError, match="pip install httptools"):
        BattlesnakeServer(port=0, warmup_sizes=(), http="httptools")
    with BattlesnakeServer(port=0, warmup_sizes=(11,), observation="none") as srv:
        assert srv.http == "h11"
        status, answer = _call(srv, "POST", "/move", POCKET)
        assert status == 200 and answer["move"] in ("up", "down", "left")


def test_command_line_names_and_takes_the_protocol():
    srv, line = server_from_args(["--port", "0", "--warmup-sizes", ""])
    srv.stop()
    assert "httptools" in line and srv.http == "httptools"
    srv, line = server_from_args(["--port", "0", "--warmup-sizes", "", "--http", "h11"])
    srv.stop()
    assert "h11" in line and srv.http == "h11"
    with pytest.raises(SystemExit):
        server_from_args(["--http", "h2"])


def test_405_names_the_allowed_methods_and_head_gets_no_body(server):
    conn = _connection(server)
    conn.request("DELETE", "/move")
    resp = conn.getresponse()
    assert resp.status == 405 and resp.getheader("allow") == "POST"
    assert json.loads(resp.read())["error"] == "Method Not Allowed: DELETE /move"
    conn.request("HEAD", "/")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type") == "application/json" and resp.read() == b""
    conn.request("PUT", "/")
    resp = conn.getresponse()
    assert resp.status == 405 and resp.getheader("allow") == "GET, HEAD"
    resp.read()
    conn.close()


def test_body_deadline_without_asyncio_timeout_at(monkeypatch):
    # Python 3.10 has no asyncio.timeout_at: the app then waits for each body message with wait_for.
    import asyncio

    monkeypatch.delattr(asyncio, "timeout_at")
    with BattlesnakeServer(port=0, warmup_sizes=(), body_timeout=TIMEOUT) as srv:
        t0 = time.perf_counter()
        response = _raw(srv.port, b"POST /move HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{")
        assert _status(response) == 408 and TIMEOUT - 0.05 < time.perf_counter() - t0 < TIMEOUT + 1.5
