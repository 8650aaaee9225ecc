"""Battlesnake, the official standard ruleset (github.com/BattlesnakeOfficial/rules).

Modules: `rules` (deterministic turn), `spawn` (randomness), `observe`
(seed 003 encodings), `env` (the `Battlesnake` Env), `api` (official JSON),
`server` (HTTP snake server), `render` (ASCII and pictures). Importing this
package imports only `env` and what it needs.

    >>> import jax, jax.numpy as jnp, jaxgames
    >>> env = jaxgames.make("battlesnake")               # 11x11, 4 snakes
    >>> state = env.init(jax.random.key(0))
    >>> state = env.step(state, jnp.array([0, 1, 2, 3]), jax.random.key(1))
    >>> state.observation.shape                           # seed-003 egocentric views
    (4, 21, 21, 3)

Replaying the official engine: `api.parse_request` a recorded request body,
then `api.apply_turn(board, {"id": "up", ...}, spawned_food, ids)` per turn,
or `api.replay(frames)` for a whole recorded game.
"""

from jaxgames.games.battlesnake.env import Battlesnake, BattlesnakeState
from jaxgames.games.battlesnake.rules import Board, Params

__all__ = ["Battlesnake", "BattlesnakeState", "Board", "Params"]
