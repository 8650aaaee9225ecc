"""A plain bool-array Voronoi search of a Battlesnake board: the reference the packed `bitboard.search` is tested against.

The same rules as `jaxgames.games.battlesnake.evaluation` (a cell holding
``v`` in a body is passable from breadth-first round ``v``; a cell two
snakes reach in the same round is nobody's and blocks; each snake's own
search to the nearest food ignores the others' frontiers), written the
direct way on ``[S, size * size]`` bool arrays (the library's first version,
about 30x slower than the packed one).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.battlesnake.rules import Board

UNREACHABLE = np.iinfo(np.int32).max


def spread(grid: jax.Array, size: int) -> jax.Array:
    """bool ``[K, size * size]`` -> the cells with a 4-neighbour set in ``grid`` (same shape)."""
    k = grid.shape[0]
    p = jnp.pad(grid.reshape(k, size, size), ((0, 0), (1, 1), (1, 1)))
    out = p[:, 1:-1, 2:] | p[:, 1:-1, :-2] | p[:, 2:, 1:-1] | p[:, :-2, 1:-1]  # y+1, y-1, x+1, x-1
    return out.reshape(k, size * size)


def free_from(board: Board) -> jax.Array:
    """int32 ``[size * size]``: the first BFS round at which each cell is passable (0: free now).

    The largest ``Board.body`` value over the living snakes: a cell holding
    ``v`` is left after ``v`` moves (module docstring, the timed rule).
    """
    return jnp.max(jnp.where(board.alive[:, None], board.body.astype(jnp.int32), 0), axis=0)


class Search(NamedTuple):
    t: jax.Array  # int32 []: the last round done
    frontier: jax.Array  # bool [S, C]: cells first owned in round t (the shared partition)
    owned: jax.Array  # bool [S, C]
    claimed: jax.Array  # bool [C]: owned by someone or tied
    solo_frontier: jax.Array  # bool [S, C]: each snake's own BFS, others ignored but for their bodies
    solo_seen: jax.Array  # bool [S, C]
    food_distance: jax.Array  # int32 [S]


def search(board: Board, rounds: int) -> Search:
    """The shared Voronoi partition and each snake's own BFS, in one loop of at most ``rounds`` rounds."""
    size, n = board.size, board.num_snakes
    cells = size * size
    free_at = free_from(board)
    on = jnp.all((board.head >= 0) & (board.head < size), axis=-1)
    head_flat = jnp.where(board.alive & on, board.head[:, 0] * size + board.head[:, 1], -1)
    heads = jnp.arange(cells, dtype=jnp.int32)[None, :] == head_flat[:, None]  # [S, C]
    init = Search(
        t=jnp.int32(0),
        frontier=heads,
        owned=heads,
        claimed=jnp.any(heads, axis=0),
        solo_frontier=heads,
        solo_seen=heads,
        food_distance=jnp.full((n,), UNREACHABLE, jnp.int32),
    )

    def cond(s: _Search) -> jax.Array:
        return (s.t < rounds) & (jnp.any(s.frontier) | jnp.any(s.solo_frontier))

    def body(s: _Search) -> Search:
        t = s.t + 1
        passable = (free_at <= t)[None, :]
        reach = spread(s.frontier, size) & passable & ~s.claimed[None, :]
        count = jnp.sum(reach, axis=0)
        new = reach & (count == 1)[None, :]
        solo = spread(s.solo_frontier, size) & passable & ~s.solo_seen
        ate = jnp.any(solo & board.food[None, :], axis=1)
        return Search(
            t=t,
            frontier=new,
            owned=s.owned | new,
            claimed=s.claimed | (count > 0),
            solo_frontier=solo,
            solo_seen=s.solo_seen | solo,
            food_distance=jnp.where(ate & (s.food_distance == UNREACHABLE), t, s.food_distance),
        )

    return jax.lax.while_loop(cond, body, init)
