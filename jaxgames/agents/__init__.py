"""Agents with one protocol (`base.Agent`), for the arena, tournaments, the server and learners.

An agent acts for the seat it is asked for: ``JaxAgent.policy(env, state,
key, player)`` (pure JAX, vmapped over games and seats) or
``HostAgent.act(env, state, rng, player)`` (Python, timed per move).

Modules: `base` (the protocol), `simple` (random, first legal action: any
game), `dots_and_boxes` (greedy, depth-limited alpha-beta, the exact solver
as a perfect player), `battlesnake` (random, random-safe, heuristic, greedy
Q), `mcts` (pure MCTS with random rollouts on mctx), `onitama` (random,
host alpha-beta of depth 1-4 and batched JAX minimax of depth 1-3, by name in
its ``AGENTS``), `alphazero` (network-guided search for Dots-and-Boxes and
Onitama, and its adapter to the 40 Onitama actions of Dasgupta & Chong,
"Mastering the game of Onitama with Reinforcement Learning", NUS USP group
report, 2021). The last five are
imported on demand:

    >>> from jaxgames.agents.dots_and_boxes import AlphaBetaAgent, GreedyAgent, PerfectAgent
    >>> from jaxgames.agents.battlesnake import HeuristicAgent, RandomSafeAgent
    >>> from jaxgames.agents.mcts import MCTSAgent
    >>> from jaxgames.agents.onitama import AlphaBetaAgent, MinimaxAgent
    >>> from jaxgames.agents.alphazero import AlphaZeroAgent, PaperSpaceAlphaZero
"""

from jaxgames.agents.base import Agent, HostAgent, JaxAgent
from jaxgames.agents.simple import FirstLegalAgent, RandomAgent

__all__ = ["Agent", "HostAgent", "JaxAgent", "FirstLegalAgent", "RandomAgent"]
