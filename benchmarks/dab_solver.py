"""Speed of the Dots-and-Boxes solvers and of the alpha-beta agent, with their anchors.

Measures, in one run (figures in ``benchmarks/README.md``):

1. the batched retrograde solver (`jaxgames.games.dots_and_boxes.search.solver.solve`) on 2x2 ..
   3x3 and 2x5: seconds (first call, compile included, and a second call)
   and edge sets per second;
2. anchors: a plain-Python memoised minimax over frozensets of edges (the
   test oracle's algorithm) on 2x2 and 2x3, and OpenSpiel's Python
   ``alpha_beta_search`` (no transposition table) on 1x2 and 2x2;
3. the minimax variants of the study in El Kaddouri, Rys & Gao, "Multi Agent
   Reinforcement Learning With Dots And Boxes" (course report, undated),
   section 4 (`jaxgames.games.dots_and_boxes.search.minimax`) on 2x3 and 3x3: seconds, nodes, nodes per second, table keys;
4. the alpha-beta agent on 5x5 (depth 9, 150 ms budget): positions
   (search nodes) per second, depth reached, slowest decision.

Run ``python benchmarks/dab_solver.py`` (about 3 minutes on 2 CPU cores);
``big=false`` skips 2x5, ``huge=true`` adds 3x4, ``variant_limit=SECONDS`` bounds each minimax search;
``--help`` lists every setting with its type, default and meaning.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time

import jax
import numpy as np

import jaxgames
from jaxgames import checks, experiment
from jaxgames.agents.dots_and_boxes import AlphaBetaAgent
from jaxgames.games.dots_and_boxes import rules
from jaxgames.games.dots_and_boxes.search import minimax, solver
from jaxgames.games.dots_and_boxes.search.bitboard import bitboard

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tests.reference.dots_and_boxes_reference import reference_solver  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        boards: retrograde boards ``RxC``.
        big: also solve 2x5 (27 edges, 134 M edge sets, ~0.2 GB).
        huge: also solve 3x4 (31 edges, 2.1 G edge sets, ~2.5 GB, ~75 s on 2 cores).
        variant_boards: boards for the minimax variants.
        variant_limit: seconds per minimax search.
        agent_positions: 5x5 positions timed for the alpha-beta agent.
    """

    boards: tuple[str, ...] = ("2x2", "2x3", "3x2", "2x4", "3x3")
    big: bool = True
    huge: bool = False
    variant_boards: tuple[str, ...] = ("2x3", "3x3")
    variant_limit: float = 60.0
    agent_positions: int = 40

    def __post_init__(self):
        for name, boards, check in (
            ("boards", self.boards + ("2x5",) * self.big + ("3x4",) * self.huge, solver.check_size),  # edges, memory
            ("variant_boards", self.variant_boards, rules.validate_size),
        ):
            for b in boards:
                size = _size(b, name)
                try:
                    check(*size)
                except (TypeError, ValueError) as err:
                    raise ValueError(f"{name}: {err}") from None
        checks.positive_float("variant_limit", self.variant_limit)
        checks.positive_int("agent_positions", self.agent_positions)


def _size(text: str, name: str = "board") -> tuple[int, int]:
    """``"RxC"`` as ``(R, C)``.

    Raises:
        ValueError: not two integers joined by ``x`` (names ``name``).
    """
    parts = str(text).lower().split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"{name} entries must look like 2x3; got {text!r}")
    return int(parts[0]), int(parts[1])


def plain_minimax_states(R, C):
    """The tests' plain-Python memoised minimax (frozenset keys); returns (value, states, seconds)."""
    value, _ = reference_solver(R, C)
    start = time.perf_counter()
    val = value(frozenset())
    return val, value.cache_info().currsize, time.perf_counter() - start


def run(cfg: Config, argv=None) -> None:
    """Runs every measurement and prints Markdown tables (writes no files)."""
    del argv
    print(f"jax {jax.__version__}, devices {jax.devices()}, {platform.processor() or platform.machine()}\n")

    print("## Retrograde solver\n")
    print("| board | edges | edge sets | value | first call (s) | second call (s) | edge sets/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    boards = [_size(b) for b in cfg.boards] + ([(2, 5)] if cfg.big else []) + ([(3, 4)] if cfg.huge else [])
    for R, C in boards:
        sol = solver.solve(R, C, chunk_size=1 << 20 if R * C > 10 else 1 << 18)
        first = sol.seconds
        second = solver.solve(R, C).seconds if R * C <= 9 else float("nan")
        best = second if second == second else first
        n = 1 << sol.num_edges
        print(f"| {R}x{C} | {sol.num_edges} | {n:,} | {sol.value(0)} | {first:.2f} | {second:.2f} | {n / best:,.0f} |", flush=True)
        del sol

    print("\n## Anchors\n")
    print("| algorithm | board | value | states or nodes | seconds | per second |")
    print("|---|---|---:|---:|---:|---:|")
    for R, C in [(2, 2), (2, 3)]:
        val, states, secs = plain_minimax_states(R, C)
        print(f"| plain-Python memoised minimax | {R}x{C} | {val} | {states:,} states | {secs:.2f} | {states / secs:,.0f} |", flush=True)
    try:
        import pyspiel
        from open_spiel.python.algorithms import minimax as os_minimax

        for R, C in [(1, 2), (2, 2)]:
            game = pyspiel.load_game(f"dots_and_boxes(num_rows={R},num_cols={C},utility_margin=true)")
            start = time.perf_counter()
            val, _ = os_minimax.alpha_beta_search(game, maximizing_player_id=0)
            secs = time.perf_counter() - start
            print(f"| OpenSpiel alpha_beta_search (Python) | {R}x{C} | {val:g} | - | {secs:.2f} | - |", flush=True)
    except ImportError:
        print("| OpenSpiel | - | not installed | | | |")

    print("\n## Minimax variants (empty board)\n")
    print("| board | variant | value | seconds | nodes | nodes/s | table keys |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for b in cfg.variant_boards:
        R, C = _size(b)
        for variant in minimax.VARIANTS:
            if variant == "naive" and R * C > 2:
                print(f"| {b} | naive | - | not run (E! leaves) | | | |")
                continue
            try:
                r = minimax.solve_position(R, C, 0, variant=variant, time_limit=cfg.variant_limit)
                print(f"| {b} | {variant} | {r.value} | {r.seconds:.2f} | {r.nodes:,} | {r.nodes / r.seconds:,.0f} | {r.table_size:,} |", flush=True)
            except minimax.SearchTimeout:
                print(f"| {b} | {variant} | - | > {cfg.variant_limit:g} | | | |", flush=True)

    print("\n## Alpha-beta agent on 5x5 (depth 9, 150 ms budget)\n")
    env = jaxgames.make("dots_and_boxes", num_rows=5, num_cols=5)
    bitboard(5, 5)
    agent = AlphaBetaAgent()
    rng = np.random.default_rng(0)
    nodes = secs = 0.0
    worst = 0.0
    depths = []
    positions = 0
    step = jax.jit(env.step)
    while positions < cfg.agent_positions:
        state = env.init(jax.random.key(positions))
        while not bool(state.terminated) and positions < cfg.agent_positions:
            host = jax.device_get(state)
            start = time.perf_counter()
            action = agent.act(env, host, rng, int(host.current_player))
            dt = time.perf_counter() - start
            nodes += agent.last_nodes
            secs += dt
            worst = max(worst, dt)
            depths.append(agent.last_depth)
            positions += 1
            # Alternate the agent's move with a random move to reach varied positions.
            state = step(state, action)
            if not bool(state.terminated):
                legal = np.flatnonzero(np.asarray(state.legal_action_mask))
                state = step(state, int(rng.choice(legal)))
    print("| decisions | nodes/s | mean depth | min depth | slowest decision (ms) |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {positions} | {nodes / secs:,.0f} | {np.mean(depths):.1f} | {min(depths)} | {1000 * worst:.0f} |")



def main(argv=None):
    """Entry point: ``python benchmarks/dab_solver.py [key=value ...]`` (``--help`` lists the settings)."""
    experiment.main(Config, run, argv, prog="benchmarks/dab_solver.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
