"""The Battlesnake HTTP server, with real HTTP requests on localhost.

Request bodies are written by hand in the documented API format
(docs.battlesnake.com/api).
"""

from __future__ import annotations

import copy
import http.client
import json
import time

import pytest

from jaxgames.games.battlesnake import rules
from jaxgames.games.battlesnake.server import BattlesnakeServer, safe_policy
from tests.test_battlesnake_api import REQUEST, _request, _snake


@pytest.fixture(scope="module")
def server():
    with BattlesnakeServer(safe_policy, port=0, warmup_sizes=(11,), info={"author": "tests"}) as srv:
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


def test_q_policy_plays_the_best_relative_action():
    import jax.numpy as jnp

    from jaxgames.games.battlesnake.server import q_policy

    # A Q-function preferring "turn right" (relative action 2).
    srv = BattlesnakeServer(q_policy(lambda view: jnp.array([0.1, 0.2, 0.9])), port=0, warmup_sizes=())
    try:
        # beta's head (5, 5), neck (6, 5): it faces left, so turning right is "up".
        assert srv.move(REQUEST)["move"] == "up"
    finally:
        srv.httpd.server_close()


def test_library_agents_are_served():
    from jaxgames.agents import FirstLegalAgent, RandomAgent
    from jaxgames.games.battlesnake.server import agent_policy

    srv = BattlesnakeServer(agent_policy(FirstLegalAgent()), port=0, warmup_sizes=())
    try:
        # beta faces left (neck on the right): legal [up, down, left]; the first is "up".
        assert srv.move(REQUEST)["move"] == "up"
    finally:
        srv.httpd.server_close()
    with BattlesnakeServer(agent_policy(RandomAgent()), port=0, warmup_sizes=()) as srv2:
        for _ in range(5):
            status, answer = _call(srv2, "POST", "/move", REQUEST)
            assert status == 200 and answer["move"] in ("up", "down", "left")
