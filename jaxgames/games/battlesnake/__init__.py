"""Battlesnake, the official standard ruleset (github.com/BattlesnakeOfficial/rules).

Modules: `rules` (deterministic turn), `spawn` (randomness), `observe`
(seed 003 encodings), `env` (the `Battlesnake` Env), `api` (official JSON),
`server` (HTTP snake server), `render` (ASCII and pictures). Importing this
package imports only `env` and what it needs.
"""

from jaxgames.games.battlesnake.env import Battlesnake, BattlesnakeState
from jaxgames.games.battlesnake.rules import Board, Params

__all__ = ["Battlesnake", "BattlesnakeState", "Board", "Params"]
