"""Load test of the Battlesnake HTTP server on 127.0.0.1: latency, errors and throughput of ``/move``.

The server is the command line (``python -m jaxgames.serve.battlesnake``)
in its own process, listening on 127.0.0.1 only; this process is the client:
``clients`` concurrent asyncio clients (one thread, raw HTTP/1.1, one write
per request, TCP_NODELAY as the official engine's Go client) send
``requests`` ``/move`` requests in all, either on kept-alive connections or
on a new connection per request (``Connection: close``). The requests are
boards of real games (``num_snakes`` random-safe snakes on ``board_size``,
the engine's spawn and food rules), turn by turn.

Anchor, measured in the same run: the *bare decision*, `BattlesnakeServer.move`
called in this process on the same request texts (JSON decode, `api.parse_request`,
the jitted policy: everything the server does but HTTP), and the policy alone
(the jitted call on a parsed board). ``p50 - bare`` is what HTTP adds.

An error is anything but a ``200`` with a move (a refused or reset connection,
a ``4xx``/``5xx``); ``fallback`` counts moves the server answered by its
fallback because the agent was late (``game.timeout`` 500 ms less 100 ms).
At the end the server gets SIGINT and must exit with status 0.

A/B of uvicorn's HTTP protocols (``http=h11,httptools``): one server per
protocol, all started before the first measurement, measured in interleaved
rounds (``repeats``; the order of the protocols alternates from round to
round) so that load from other jobs falls on both; the summary gives each
protocol's median over the rounds and its paired ratio to the first protocol.

    python benchmarks/server.py                                   # 5000 requests, 16 clients, random_safe
    python benchmarks/server.py requests=1000 agent=heuristic workers=1
    python benchmarks/server.py modes=keep_alive http=h11,httptools repeats=5
    python benchmarks/server.py --help                            # every setting, its type, default and meaning

Targets (issue 10): zero errors; one kept-alive client's p50 within 2 ms of the
bare decision; p99 under 50 ms at 16 concurrent clients with the random-safe
agent. Writes ``results/benchmarks/server/results.json`` and ``config.json``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jaxgames.agents.battlesnake import RandomSafeAgent
from jaxgames import checks, experiment
from jaxgames.games.battlesnake import Battlesnake, api
from jaxgames.serve.battlesnake import AGENTS, HTTP_PROTOCOLS, BattlesnakeServer

MODES = ("keep_alive", "new_connection")


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` on the command line).

    Attributes:
        agent: a name of `jaxgames.serve.battlesnake.AGENTS`.
        requests: ``/move`` requests per scenario.
        clients: concurrent clients of the loaded scenarios (also measured: 1).
        modes: ``keep_alive`` and/or ``new_connection``.
        workers: the server's agent threads (``--workers``).
        http: uvicorn protocols to serve with (``--http``: ``auto``,
            ``httptools``, ``h11``), one server each, compared in the same run.
        repeats: rounds of every scenario on every server, interleaved.
        board_size, num_snakes: the games the requests come from.
        boards: distinct request bodies (turns of real games), sent in turn.
        bare_repeats: calls of the bare decision for the anchor.
        seed: PRNG seed of the games.
        out_dir: where the results go.
    """

    agent: str = "random_safe"
    requests: int = 5000
    clients: int = 16
    modes: tuple[str, ...] = MODES
    workers: int = 2
    http: tuple[str, ...] = ("auto",)
    repeats: int = 1
    board_size: int = 11
    num_snakes: int = 4
    boards: int = 64
    bare_repeats: int = 500
    seed: int = 0
    out_dir: str = "results/benchmarks/server"

    def __post_init__(self):
        if self.agent not in AGENTS:
            raise ValueError(f"unknown agent {self.agent!r}; choose from {sorted(AGENTS)}")
        for m in self.modes:
            if m not in MODES:
                raise ValueError(f"unknown mode {m!r}; choose from {MODES}")
        for h in self.http:
            if h not in HTTP_PROTOCOLS:
                raise ValueError(f"unknown http protocol {h!r}; choose from {HTTP_PROTOCOLS}")
        if not self.http or len(set(self.http)) != len(self.http):
            raise ValueError(f"http must name protocols without repeats; got {self.http}")
        for name in ("requests", "clients", "workers", "repeats", "boards", "bare_repeats"):
            checks.positive_int(name, getattr(self, name))
        checks.non_negative_int("seed", self.seed)
        Battlesnake(board_size=self.board_size, num_snakes=self.num_snakes)  # checks them
        if self.num_snakes < 2:
            raise ValueError(f"num_snakes must be >= 2 (requests come from games with a rival); got {self.num_snakes}")


def game_requests(cfg: Config) -> list[bytes]:
    """``cfg.boards`` request bodies: consecutive turns of random-safe games, for a living snake."""
    env = Battlesnake(board_size=cfg.board_size, num_snakes=cfg.num_snakes, observation="none")
    agent, n = RandomSafeAgent(), cfg.num_snakes
    ids = [f"snake-{i}" for i in range(n)]

    @jax.jit
    def turn(state, key):
        k_step, k_act = jax.random.split(key)
        acts = jax.vmap(lambda k, p: agent.policy(env, state, k, p))(jax.random.split(k_act, n), jnp.arange(n))
        return env.step(state, acts, k_step)

    key = jax.random.key(cfg.seed)
    key, k = jax.random.split(key)
    state = jax.jit(env.init)(k)
    out = []
    while len(out) < cfg.boards:
        alive = np.flatnonzero(np.asarray(state.board.alive))
        if state.terminated or state.truncated or len(alive) < 2:
            key, k = jax.random.split(key)
            state = jax.jit(env.init)(k)
            continue
        you = int(alive[len(out) % len(alive)])
        out.append(json.dumps(api.to_request(state.board, you, ids)).encode())
        key, k = jax.random.split(key)
        state = turn(state, k)
    return out


def bare_decision(cfg: Config, bodies: list[bytes]) -> dict:
    """Median and p99 (ms) of `BattlesnakeServer.move` and of the jitted policy alone, in this process."""
    srv = BattlesnakeServer(AGENTS[cfg.agent](), port=0, warmup_sizes=(cfg.board_size,), observation="none")
    try:
        _, decide = srv.for_size(cfg.board_size)
        parsed = [srv.parse(b) for b in bodies]
        move, policy = [], []
        for i in range(cfg.bare_repeats + 20):
            body = bodies[i % len(bodies)]
            t0 = time.perf_counter()
            srv.move(body)
            t1 = time.perf_counter()
            p = parsed[i % len(parsed)]
            decide(p.board, i, p.you)
            t2 = time.perf_counter()
            if i >= 20:  # the first calls warm caches
                move.append(t1 - t0)
                policy.append(t2 - t1)
    finally:
        srv.stop()
    ms = lambda xs, q: 1000 * float(np.percentile(xs, q))  # noqa: E731
    return {"move_p50": ms(move, 50), "move_p99": ms(move, 99), "policy_p50": ms(policy, 50), "policy_p99": ms(policy, 99)}


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = next((int(ln.split(b":", 1)[1]) for ln in lines[1:] if ln.lower().startswith(b"content-length:")), 0)
    return status, await reader.readexactly(length)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, from ``/proc`` (NaN where there is none)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


async def load(port: int, bodies: list[bytes], *, requests: int, clients: int, keep_alive: bool, pid: int | None = None) -> dict:
    """Sends ``requests`` ``/move`` requests over ``clients`` concurrent clients; latency in ms, errors, req/s.

    With the server's ``pid``, also its CPU time per request (ms, all its
    threads, ``/proc``): unlike latency, barely moved by other jobs' load;
    and the client's (this process's) CPU time per request.
    """
    heads = [
        (
            f"POST /move HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(b)}\r\n{'' if keep_alive else 'Connection: close' + chr(13) + chr(10)}\r\n"
        ).encode()
        + b
        for b in bodies
    ]
    latencies, errors, fallbacks = [], [], 0
    counter = iter(range(requests))

    async def client():
        nonlocal fallbacks
        reader = writer = None
        for i in counter:
            t0 = time.perf_counter()
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(heads[i % len(heads)])
                status, body = await _read_response(reader)
                if not keep_alive:
                    writer.close()
                    writer = None
                if status != 200 or b'"move"' not in body:
                    errors.append(f"status {status}")
                    continue
                fallbacks += b'"fallback"' in body
                latencies.append(time.perf_counter() - t0)
            except (OSError, asyncio.IncompleteReadError, ValueError) as e:
                errors.append(type(e).__name__)
                if writer is not None:
                    writer.close()
                writer = None
        if writer is not None:
            writer.close()

    cpu0 = cpu_seconds(pid) if pid is not None else float("nan")
    client0 = time.process_time()
    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    seconds = time.perf_counter() - t0
    client_cpu = time.process_time() - client0
    server_cpu = cpu_seconds(pid) - cpu0 if pid is not None else float("nan")
    lat = 1000 * np.asarray(latencies) if latencies else np.full(1, np.nan)
    return {
        "requests": requests,
        "clients": clients,
        "keep_alive": keep_alive,
        "ok": len(latencies),
        "errors": len(errors),
        "error_kinds": sorted(set(errors)),
        "fallbacks": int(fallbacks),
        "p50_ms": float(np.percentile(lat, 50)),
        "p99_ms": float(np.percentile(lat, 99)),
        "max_ms": float(np.max(lat)),
        "requests_per_s": requests / seconds,
        "server_cpu_ms": 1000 * server_cpu / requests,
        "client_cpu_ms": 1000 * client_cpu / requests,
    }


def start_server(cfg: Config, http: str = "auto") -> tuple[subprocess.Popen, int, str]:
    """The command-line server on 127.0.0.1, any free port, serving with ``http``; returns once it serves.

    Returns:
        ``(process, port, protocol)``, the protocol as the server names it
        (``auto`` resolved to ``httptools`` or ``h11``).
    """
    cmd = [sys.executable, "-m", "jaxgames.serve.battlesnake", "--host", "127.0.0.1", "--port", "0",
           "--agent", cfg.agent, "--warmup-sizes", str(cfg.board_size), "--workers", str(cfg.workers), "--http", http]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "http://127.0.0.1:" not in line:
        proc.kill()
        raise RuntimeError(f"the server did not start: {line!r}")
    protocol = line.split("(", 1)[1].split(")", 1)[0].split(", ")[-1]  # "Battlesnake server (agent, protocol) on ..."
    return proc, int(line.rsplit(":", 1)[1]), protocol


def stop_server(proc: subprocess.Popen) -> int | str:
    """SIGINT, then the exit status (``"killed after 30 s"`` if it did not exit)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return "killed after 30 s"


def measure(cfg: Config, bodies: list[bytes], ports: dict[str, int], pids: dict[str, int] | None = None) -> list[dict]:
    """Every scenario on every server (``label -> port``, ``label -> pid``), ``cfg.repeats`` interleaved rounds; one row each."""
    pids = pids or {}
    for port in ports.values():
        asyncio.run(load(port, bodies, requests=min(200, cfg.requests), clients=2, keep_alive=True))  # warm-up
    labels = list(ports)
    rows = []
    for repeat in range(cfg.repeats):
        for label in labels if repeat % 2 == 0 else labels[::-1]:
            for mode in cfg.modes:
                for clients in sorted({1, cfg.clients}):
                    r = asyncio.run(load(ports[label], bodies, requests=cfg.requests, clients=clients,
                                         keep_alive=mode == "keep_alive", pid=pids.get(label)))
                    rows.append({"http": label, "repeat": repeat, "mode": mode, **r})
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Per (mode, clients, protocol): medians over the rounds, and the paired ratios to the first protocol.

    A ratio is taken within a round (same scenario, minutes apart at most)
    and its median over the rounds reported: ``p99 / p99 of the first
    protocol`` below 1 means faster.
    """
    labels = list(dict.fromkeys(r["http"] for r in rows))
    out = []
    for mode, clients in dict.fromkeys((r["mode"], r["clients"]) for r in rows):
        mine = [r for r in rows if r["mode"] == mode and r["clients"] == clients]
        first = {r["repeat"]: r for r in mine if r["http"] == labels[0]}
        for label in labels:
            own = [r for r in mine if r["http"] == label]
            med = lambda k: float(np.median([r[k] for r in own]))  # noqa: E731
            ratio = lambda k: float(np.median([r[k] / first[r["repeat"]][k] for r in own]))  # noqa: E731
            out.append({
                "mode": mode, "clients": clients, "http": label, "rounds": len(own),
                "errors": int(sum(r["errors"] for r in own)), "fallbacks": int(sum(r["fallbacks"] for r in own)),
                "p50_ms": med("p50_ms"), "p99_ms": med("p99_ms"), "p99_ms_max": float(max(r["p99_ms"] for r in own)),
                "requests_per_s": med("requests_per_s"), "server_cpu_ms": med("server_cpu_ms"), "client_cpu_ms": med("client_cpu_ms"),
                "p50_ratio": ratio("p50_ms"), "p99_ratio": ratio("p99_ms"), "requests_per_s_ratio": ratio("requests_per_s"),
                "server_cpu_ratio": ratio("server_cpu_ms"),
            })
    return out


def run(cfg: Config, argv=None) -> None:
    """The benchmark: starts the servers, prints the tables, writes ``config.json`` and ``results.json``."""
    del argv
    os.makedirs(cfg.out_dir, exist_ok=True)
    with open(os.path.join(cfg.out_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=2)
    bodies = game_requests(cfg)
    procs, ports, exit_codes = {}, {}, {}
    try:
        for http in cfg.http:
            proc, port, protocol = start_server(cfg, http)
            label = protocol if http == "auto" and protocol not in cfg.http else http
            procs[label], ports[label] = proc, port
        bare = bare_decision(cfg, bodies)
        rows = measure(cfg, bodies, ports, {label: proc.pid for label, proc in procs.items()})
    finally:
        for label, proc in procs.items():
            exit_codes[label] = stop_server(proc)
    summary = summarize(rows)
    print(f"agent {cfg.agent}, {cfg.num_snakes} snakes on {cfg.board_size}x{cfg.board_size}, server workers {cfg.workers}, "
          f"{os.cpu_count()} CPUs, jax {jax.__version__} ({jax.default_backend()}), load average {os.getloadavg()[0]:.2f}")
    print(f"bare decision (server.move in-process): p50 {bare['move_p50']:.2f} ms, p99 {bare['move_p99']:.2f} ms; "
          f"policy alone: p50 {bare['policy_p50']:.2f} ms, p99 {bare['policy_p99']:.2f} ms")
    print(f"| {'http':9} | {'round':>5} | {'connections':14} | {'clients':>7} | {'requests':>8} | {'errors':>6} | {'fallbacks':>9} | "
          f"{'p50 ms':>7} | {'p99 ms':>7} | {'max ms':>7} | {'req/s':>7} | {'p50 - bare ms':>13} | {'server CPU ms/req':>17} |")
    print("|" + "|".join("-" * (w + 2) for w in (9, 5, 14, 7, 8, 6, 9, 7, 7, 7, 7, 13, 17)) + "|")
    for r in rows:
        print(f"| {r['http']:9} | {r['repeat']:5d} | {r['mode']:14} | {r['clients']:7d} | {r['requests']:8d} | {r['errors']:6d} | "
              f"{r['fallbacks']:9d} | {r['p50_ms']:7.2f} | {r['p99_ms']:7.2f} | {r['max_ms']:7.1f} | {r['requests_per_s']:7.0f} | "
              f"{r['p50_ms'] - bare['move_p50']:13.2f} | {r['server_cpu_ms']:17.3f} |")
    if cfg.repeats > 1 or len(ports) > 1:
        first = summary[0]["http"]
        print(f"\nmedians over {cfg.repeats} round(s); ratios paired by round, to {first}:")
        print(f"| {'connections':14} | {'clients':>7} | {'http':9} | {'errors':>6} | {'p50 ms':>7} | {'p99 ms':>7} | "
              f"{'worst p99':>9} | {'req/s':>7} | {'CPU ms/req':>10} | {'p50 ratio':>9} | {'p99 ratio':>9} | {'req/s ratio':>11} | "
              f"{'CPU ratio':>9} |")
        print("|" + "|".join("-" * (w + 2) for w in (14, 7, 9, 6, 7, 7, 9, 7, 10, 9, 9, 11, 9)) + "|")
        for r in summary:
            print(f"| {r['mode']:14} | {r['clients']:7d} | {r['http']:9} | {r['errors']:6d} | {r['p50_ms']:7.2f} | "
                  f"{r['p99_ms']:7.2f} | {r['p99_ms_max']:9.2f} | {r['requests_per_s']:7.0f} | {r['server_cpu_ms']:10.3f} | "
                  f"{r['p50_ratio']:9.3f} | {r['p99_ratio']:9.3f} | {r['requests_per_s_ratio']:11.3f} | {r['server_cpu_ratio']:9.3f} |")
    print("server exit status after SIGINT: " + ", ".join(f"{k} {v}" for k, v in exit_codes.items()))
    tmp = os.path.join(cfg.out_dir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"config": dataclasses.asdict(cfg), "bare": bare, "rows": rows, "summary": summary,
                   "server_exit_status": exit_codes}, f, indent=2)
    os.replace(tmp, os.path.join(cfg.out_dir, "results.json"))


def main(argv=None) -> None:
    """Entry point: ``python benchmarks/server.py [key=value ...]`` (``--help`` lists the settings)."""
    experiment.main(Config, run, argv, prog="benchmarks/server.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
