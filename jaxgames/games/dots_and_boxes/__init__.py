"""Dots-and-Boxes (OpenSpiel ``dots_and_boxes``; seed 000, sections 4-6).

Modules: `rules` (pure kernel: geometry, one move), `env` (the state-contract
adapter, registered as ``dots_and_boxes``), `dbn` (Barker & Korf notation),
`symmetry` (board symmetries, canonical form), `render` (text and SVG).

    >>> import jax, jaxgames
    >>> env = jaxgames.make("dots_and_boxes", num_rows=3, num_cols=3)
    >>> state = env.step(env.init(jax.random.key(0)), 0)
"""

from jaxgames.games.dots_and_boxes.env import DotsAndBoxes, DotsAndBoxesState
from jaxgames.games.dots_and_boxes.rules import Board

__all__ = ["DotsAndBoxes", "DotsAndBoxesState", "Board"]
