"""Dots-and-Boxes (OpenSpiel ``dots_and_boxes``; El Kaddouri, Rys & Gao,
"Multi Agent Reinforcement Learning With Dots And Boxes", course report,
sections 4-6).

Modules: `rules` (pure kernel: geometry, one move), `env` (the state-contract
adapter, registered as ``dots_and_boxes``), `dbn` (Barker & Korf notation),
`symmetry` (board symmetries, canonical form), `positions` (random test
positions), `search` (exact solver, minimax), `render` (text and SVG).

    >>> import jax, jaxgames
    >>> env = jaxgames.make("dots_and_boxes", num_rows=3, num_cols=3)
    >>> state = env.step(env.init(jax.random.key(0)), 0)
"""

from jaxgames.games.dots_and_boxes.env import DotsAndBoxes, DotsAndBoxesState
from jaxgames.games.dots_and_boxes.rules import Board

__all__ = ["DotsAndBoxes", "DotsAndBoxesState", "Board"]
