"""The Battlesnake HTTP server, with real HTTP requests on 127.0.0.1 only.

Request bodies are written by hand in the documented API format
(docs.battlesnake.com/api); expected moves are derived by hand from the
official rules (``standard.go``).
"""

from __future__ import annotations

import copy
import http.client
import json
import time

import jax.numpy as jnp
import numpy as np
import pytest

from jaxgames.agents.base import HostAgent
from jaxgames.agents.battlesnake import HeuristicAgent, QAgent, RandomSafeAgent
from jaxgames.games.battlesnake import rules
from jaxgames.games.battlesnake.server import BattlesnakeServer
from tests.test_battlesnake_api import REQUEST, _request, _snake


@pytest.fixture(scope="module")
def server():
    with BattlesnakeServer(RandomSafeAgent(), host="127.0.0.1", port=0, warmup_sizes=(11,), info={"author": "tests"}, observation="none") as srv:
        yield srv


def _call(server, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read() or b"{}")
    conn.close()
    return out


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
    assert latencies[-1] < 0.5, latencies  # the engine's timeout
    assert latencies[len(latencies) // 2] < 0.1, latencies


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
        srv.httpd.server_close()


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
    with BattlesnakeServer(_FirstOnBoardHostAgent(), port=0, warmup_sizes=(), observation="none") as srv:
        status, answer = _call(srv, "POST", "/move", req)
        assert status == 200 and answer["move"] == "up"
    # FirstLegalAgent: beta faces left (neck on the right): legal [up, down, left]; the first is "up".
    srv = BattlesnakeServer(FirstLegalAgent(), port=0, warmup_sizes=())
    try:
        assert srv.move(REQUEST)["move"] == "up"
    finally:
        srv.httpd.server_close()
    with pytest.raises(TypeError, match="JaxAgent or a HostAgent"):
        BattlesnakeServer(lambda board, you, key: 0, port=0, warmup_sizes=())


def test_command_line_serves_the_named_agent():
    from jaxgames.games.battlesnake.server import server_from_args

    srv, line = server_from_args(["--port", "0", "--agent", "heuristic", "--warmup-sizes", "11"])
    assert "heuristic" in line and srv.httpd.server_address[0] == "127.0.0.1"
    with srv:
        status, answer = _call(srv, "POST", "/move", POCKET)
        assert status == 200 and answer["move"] == "down"
    with pytest.raises(SystemExit):
        server_from_args(["--agent", "nobody"])
