"""Agents with one interface (`base.Agent`), for the arena and tournaments.

Modules: `base` (the interface: `JaxAgent` for pure JAX policies, batched
by vmap; `HostAgent` for Python policies), `simple` (random, first legal
action: any sequential game), `dots_and_boxes` (greedy, depth-limited
alpha-beta, the exact solver as a perfect player), `mcts` (pure MCTS with
random rollouts on mctx). The last two are imported on demand:

    >>> from jaxgames.agents.dots_and_boxes import AlphaBetaAgent, GreedyAgent, PerfectAgent
    >>> from jaxgames.agents.mcts import MCTSAgent
"""

from jaxgames.agents.base import Agent, HostAgent, JaxAgent
from jaxgames.agents.simple import FirstLegalAgent, RandomAgent

__all__ = ["Agent", "HostAgent", "JaxAgent", "FirstLegalAgent", "RandomAgent"]
