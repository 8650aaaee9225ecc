"""Onitama (the official rulebook, Arcane Wonders 2014; Dasgupta & Chong,
"Mastering the game of Onitama with Reinforcement Learning", NUS USP group
report, 2021).

Modules: `cards` (the 16 cards: move patterns, stamp colours, mirror pairs),
`rules` (pure kernel: deal, move generation, one turn), `env` (the state
contract, registered as ``onitama``, with the canonical 1250-action space or
Dasgupta & Chong's 40-action space), `search` (fixed-depth negamax in JAX
with their "Minimax" evaluation), `render` (text and SVG).

    >>> import jax, jaxgames
    >>> env = jaxgames.make("onitama")                                  # random deal from the key
    >>> state = env.init(jax.random.key(0))
    >>> paper_env = jaxgames.make("onitama", action_space="paper",
    ...                          deal=("Dragon", "Elephant", "Goose", "Rooster", "Monkey"))
"""

from jaxgames.games.onitama.cards import CARD_NAMES, PAPER_CARDS
from jaxgames.games.onitama.env import Onitama, OnitamaParams, OnitamaState
from jaxgames.games.onitama.rules import Board

__all__ = ["Onitama", "OnitamaParams", "OnitamaState", "Board", "CARD_NAMES", "PAPER_CARDS"]
