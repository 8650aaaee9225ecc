"""Battlesnake, the official standard ruleset (github.com/BattlesnakeOfficial/rules).

Modules: `rules` (deterministic turn), `spawn` (randomness), `observe`
(the encodings of Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent
Reinforcement Learning in a Synchronous Strategy Game", University of
Victoria report, undated), `env` (the `Battlesnake` Env), `api` (official
JSON), `render` (ASCII and pictures). Importing this package imports only
`env` and what it needs. The HTTP snake server is an application on top of the agents:
`jaxgames.serve.battlesnake`.

    >>> import jax, jax.numpy as jnp, jaxgames
    >>> env = jaxgames.make("battlesnake")               # 11x11, 4 snakes
    >>> state = env.init(jax.random.key(0))
    >>> state = env.step(state, jnp.array([0, 1, 2, 3]), jax.random.key(1))
    >>> state.observation.shape                           # Siddiqui et al.'s egocentric views
    (4, 21, 21, 3)

Replaying the official engine: `api.parse_request` a recorded request body,
then `api.apply_turn(board, {"id": "up", ...}, spawned_food, ids)` per turn,
or `api.replay(frames)` for a whole recorded game.
"""

from jaxgames.games.battlesnake.env import Battlesnake, BattlesnakeState
from jaxgames.games.battlesnake.rules import Board, Params

__all__ = ["Battlesnake", "BattlesnakeState", "Board", "Params"]
