"""A second hand-written Battlesnake snake, from a public write-up: food goals it can win, else its tail.

Source: Noah Spriggs, "Rough Strategy", the README of
github.com/noahspriggs/battlesnake-python (a 2017 Sendwithus Battlesnake
entry). Nothing here was tuned against this repository's agents.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgames import checks
from jaxgames.agents.base import JaxAgent, masked_uniform_choice
from jaxgames.agents.battlesnake import NOT_REACHED, arrival_times, move_targets, safe_moves
from jaxgames.games.battlesnake import rules
from jaxgames.games.battlesnake.rules import Board


def _noisy_argmin(values: jax.Array, ok: jax.Array, noise: jax.Array) -> jax.Array:
    """int32 ``[]``: the index of the smallest int ``values`` among ``ok`` (``noise`` in [0, 1) breaks ties)."""
    v = jnp.where(ok, values.astype(jnp.float32) + 0.5 * noise, jnp.inf)
    return jnp.argmin(v).astype(jnp.int32)


def _tail_cell(body_row: jax.Array) -> jax.Array:
    """int32 ``[]``: the cell of a body row left first (the smallest positive value: the tail)."""
    v = body_row.astype(jnp.int32)
    return jnp.argmin(jnp.where(v > 0, v, NOT_REACHED)).astype(jnp.int32)


class TailChaserAgent(JaxAgent):
    """Goes for the food it is closest to when its tail stays reachable, else chases its tail.

    Follows Noah Spriggs, "Rough Strategy" (README of
    https://github.com/noahspriggs/battlesnake-python), one rule per line:

    1. never a wall or a body cell still occupied next turn (`safe_moves`);
    2. "danger": a cell that a living snake at least as long could move to
       next turn is avoided unless every safe move is one (the write-up avoids
       larger snakes and ignores smaller ones; equal lengths also kill in the
       standard rules, so they count as larger);
    3. goals: food cells, by distance to the board centre (ties: our
       distance, then the key); a food that another snake reaches sooner
       (equal time: and is at least as long) is skipped. Distances are timed
       breadth-first searches (`arrival_times`, bodies receding);
    4. of the first ``max_goals`` goals, the first whose path (the shortest
       timed path, traced back) leaves, once eaten, a timed path from the
       food to our own tail (the board replayed along the path: our body
       following it and grown by one, the others receded) is taken;
    5. no goal: the shortest path to our own tail ("loop forever");
    6. own tail unreachable: the shortest path to another snake's tail (the
       write-up's suggested alternative); else a uniform non-dangerous safe
       move; no safe move: a uniform legal move (`rules.legal_moves`).

    Ties between moves are broken with the key. Health is not consulted:
    the write-up takes every goal it can win.

    Args (keyword-only):
        iterations: sweeps of each timed search (`arrival_times`), a positive
            int or None for ``3 * board_size``.
        max_goals: goals checked for a path to the tail (rule 4), >= 1.
        name: a label.

    Raises:
        TypeError, ValueError: a bad argument, naming it.
    """

    def __init__(self, *, iterations: int | None = None, max_goals: int = 3, name: str = "tail_chaser"):
        self.iterations = None if iterations is None else checks.positive_int("iterations", iterations)
        self.max_goals = checks.positive_int("max_goals", max_goals)
        if not isinstance(name, str):
            raise TypeError(f"name must be a str; got {name!r}")
        self.name = name

    def _tail_after_goal(self, board: Board, player, times: jax.Array, goal: jax.Array, iterations: int) -> jax.Array:
        """bool ``[]``: after following the timed path ``times`` (int32 ``[C]``) to ``goal`` and eating, our tail is reachable."""
        size, n = board.size, board.num_snakes
        t = times[goal]
        deltas = jnp.asarray(rules.DELTAS)

        def back(_, carry):
            cur, entry = carry
            k = times[cur]
            entry = entry.at[cur].set(k)
            nxt = jnp.stack([cur // size, cur % size])[None, :] + deltas  # [4, 2]
            on = jnp.all((nxt >= 0) & (nxt < size), axis=-1)
            cells = jnp.clip(nxt[:, 0], 0, size - 1) * size + jnp.clip(nxt[:, 1], 0, size - 1)
            ok = on & (times[cells] == k - 1)
            cur = jnp.where(jnp.any(ok) & (k > 1), cells[jnp.argmax(ok)], cur)
            return cur, entry

        # entry[c]: the move at which the path enters c (0: off the path)
        _, entry = jax.lax.fori_loop(0, iterations + 1, back, (goal, jnp.zeros(size * size, jnp.int32)))
        length = board.length[player]
        body = board.body.astype(jnp.int32)
        own = body[player]
        # a cell entered at move k (an old segment: k = v - length) holds length - (t - k) before eating,
        # and one more after it where still occupied
        path = length - t + entry
        own = jnp.maximum(jnp.where(own > t, own - t + 1, 0), jnp.where((entry > 0) & (path > 0), path + 1, 0))
        others = board.alive & (jnp.arange(n) != player)
        rest = jnp.max(jnp.where(others[:, None], jnp.maximum(body - t, 0), 0), axis=0)
        sim = Board(  # one snake holding every occupied cell: what `vacated_after` reads
            head=jnp.stack([goal // size, goal % size])[None, :].astype(jnp.int32),
            length=(length + 1)[None],
            health=board.health[player][None],
            body=jnp.maximum(own, rest)[None, :],
            food=board.food,
            hazards=board.hazards,
            eliminated_cause=jnp.zeros(1, jnp.int32),
            eliminated_on_turn=jnp.zeros(1, jnp.int32),
            eliminated_by=jnp.full(1, -1, jnp.int32),
            turn=board.turn,
        )
        zero = jnp.int32(0)
        cells, on = move_targets(sim, zero)
        reach = arrival_times(sim, cells, on & safe_moves(sim, zero), iterations=iterations)
        return (t < NOT_REACHED) & jnp.any(reach[:, _tail_cell(own)] < NOT_REACHED)

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the move code (`rules.UP` .. `rules.LEFT`) of snake ``player`` (int32 ``[]``, may be traced).

        Reads only ``state.board`` (one unbatched `rules.Board`); jit- and
        vmap-able; the same key gives the same move.
        """
        del env
        board = state.board
        size, n = board.size, board.num_snakes
        iterations = self.iterations if self.iterations is not None else 3 * size
        k_goal, k_move, k_rand, k_legal = jax.random.split(key, 4)
        snakes = jnp.arange(n, dtype=jnp.int32)
        length = board.length[player]
        others = board.alive & (snakes != player)

        # Rules 1-2: safe moves, then the cells a snake at least as long may enter next turn.
        cells_all, on_all = jax.vmap(lambda s: move_targets(board, s))(snakes)  # [S, 4]
        safe_all = jax.vmap(lambda s: safe_moves(board, s))(snakes) & on_all
        threat = others & (board.length >= length)
        danger_grid = jnp.zeros(size * size, bool).at[cells_all.reshape(-1)].max(
            (safe_all & threat[:, None]).reshape(-1))
        cells, on = cells_all[player], on_all[player]
        safe = safe_all[player]
        calm = safe & ~danger_grid[cells]
        allowed = jnp.where(jnp.any(calm), calm, safe)

        # Timed distances: ours by first move [4, C]; every other snake's best [S, C].
        start_ok = (safe_all & (board.alive | (snakes == player))[:, None]).reshape(-1)
        times = arrival_times(board, cells_all.reshape(-1), start_ok, iterations=iterations).reshape(n, 4, -1)
        mine = jnp.where(allowed[:, None], times[player], NOT_REACHED)
        d_me = jnp.min(mine, axis=0)
        d_other = jnp.where(others[:, None], jnp.min(times, axis=1), NOT_REACHED)
        beaten = (d_other < d_me[None]) | ((d_other == d_me[None]) & (board.length >= length)[:, None])

        # Rule 3: goals by distance to the centre, then our distance, then the key.
        x, y = rules.cell_coords(size)
        centre = jnp.abs(2 * x - (size - 1)) + jnp.abs(2 * y - (size - 1))
        goal_ok = board.food & (d_me < NOT_REACHED) & ~jnp.any(beaten, axis=0)
        priority = (centre * (iterations + 2) + d_me).astype(jnp.float32) + 0.5 * jax.random.uniform(k_goal, d_me.shape)
        k = min(self.max_goals, size * size)
        top, goals = jax.lax.top_k(jnp.where(goal_ok, -priority, -jnp.inf), k)

        # Rule 4: the first goal whose path keeps our tail reachable.
        noise = jax.random.uniform(k_move, (4,))
        first = jax.vmap(lambda g: _noisy_argmin(mine[:, g], mine[:, g] < NOT_REACHED, noise))(goals)  # [k]
        tail_ok = jax.vmap(lambda g, m: self._tail_after_goal(board, player, mine[m], g, iterations))(goals, first)
        good = (top > -jnp.inf) & tail_ok
        goal_move = first[jnp.argmax(good)]

        # Rules 5-6: own tail, else the nearest other tail, else random.
        d_tail = mine[:, _tail_cell(board.body[player])]
        tails = jax.vmap(_tail_cell)(board.body)
        d_tails = jnp.min(jnp.where(others[None, :], mine[:, tails], NOT_REACHED), axis=1)
        tail_move = _noisy_argmin(d_tail, d_tail < NOT_REACHED, noise)
        other_move = _noisy_argmin(d_tails, d_tails < NOT_REACHED, noise)
        random_move = masked_uniform_choice(k_rand, allowed)
        move = jnp.where(jnp.any(good), goal_move,
                         jnp.where(jnp.any(d_tail < NOT_REACHED), tail_move,
                                   jnp.where(jnp.any(d_tails < NOT_REACHED), other_move, random_move)))
        legal = masked_uniform_choice(k_legal, rules.legal_moves(board)[player])
        return jnp.where(jnp.any(safe), move, legal).astype(jnp.int32)
