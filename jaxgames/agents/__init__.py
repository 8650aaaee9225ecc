"""Agents with one interface (`base.Agent`), for the arena and tournaments.

`simple` (random, first legal action: any game), and for Dots-and-Boxes
`greedy`, `alphabeta`, `mcts`, `perfect` (exact solver). Heavy modules are
imported on demand.
"""

from jaxgames.agents.base import Agent, HostAgent, JaxAgent
from jaxgames.agents.simple import FirstLegalAgent, RandomAgent

__all__ = ["Agent", "HostAgent", "JaxAgent", "FirstLegalAgent", "RandomAgent"]
