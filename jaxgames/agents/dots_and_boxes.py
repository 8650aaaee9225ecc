"""Dots-and-Boxes agents: greedy, depth-limited alpha-beta, and the exact solver as a perfect player.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots
And Boxes" (course report), section 5 (the greedy opponent, the alpha-beta agent with
depth 9, the box-difference heuristic, chain rules and important moves
first; 200 ms per move) and section 4 (exact solving). All take a
`DotsAndBoxesState` from ``jaxgames.make("dots_and_boxes", ...)``.
"""

from __future__ import annotations

import gc

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks
from jaxgames.agents.base import HostAgent, JaxAgent, array_signature, masked_uniform_choice
from jaxgames.games.dots_and_boxes.search import minimax, solver
from jaxgames.games.dots_and_boxes.search.bitboard import bitboard, edge_set_index


def _check_env(env, expected=None):
    if getattr(env, "name", None) != "dots_and_boxes":
        raise ValueError(f"this agent plays dots_and_boxes; got {env!r}")
    if expected is not None and (env.num_rows, env.num_cols) != expected:
        raise ValueError(f"this agent was built for a {expected[0]}x{expected[1]} board; got {env!r}")


class GreedyAgent(JaxAgent):
    """Takes a box when it can, else plays a safe edge, else gives away as little as it sees.

    Per move (one state, vmapped by the arena): a uniformly random legal edge
    among those that complete a box; if none, among the *safe* edges (every
    adjacent box has at most one side drawn, so none becomes capturable);
    if none, among the edges that make the fewest boxes capturable (one
    look-ahead only, no chain counting). Source: El Kaddouri et al., sections 5.3 and 5.7.
    """

    name = "greedy"

    def policy(self, env, state, key, player=None):
        """int32 ``[]``: the greedy move for one `DotsAndBoxesState` (``player`` is the mover; unused).

        Raises:
            ValueError: ``env`` is not Dots-and-Boxes (checked at trace time).
        """
        _check_env(env)
        g = env.geometry
        nb = jnp.asarray(g.edge_boxes)  # [E, 2], -1 border
        sides = jnp.where(nb >= 0, state.board.box_sides[jnp.maximum(nb, 0)].astype(jnp.int32), -1)
        legal = state.legal_action_mask
        completes = legal & jnp.any(sides == 3, axis=1)
        gifts = jnp.sum(sides == 2, axis=1)  # boxes that drawing the edge makes capturable
        fewest = jnp.min(jnp.where(legal, gifts, 99))
        choice = jnp.where(jnp.any(completes), completes, legal & (gifts == fewest))
        return masked_uniform_choice(key, choice)


class PerfectAgent(JaxAgent):
    """Plays an optimal move of the exact solver (`jaxgames.games.dots_and_boxes.search.solver`), ties broken at random.

    Args:
        num_rows, num_cols: the board size it is built for (solved on construction).
        solution: an already computed `solver.Solution` (skips the solve).
        max_bytes: memory limit passed to `solver.solve`.

    Raises:
        ValueError: a board too large for the solver (the message gives the
            memory needed), or a solution of another size.
    """

    name = "perfect"

    def __init__(self, num_rows: int, num_cols: int, *, solution: solver.Solution | None = None, max_bytes: int | None = None):
        if solution is None:
            solution = solver.solve(num_rows, num_cols, max_bytes=max_bytes)
        if (solution.num_rows, solution.num_cols) != (num_rows, num_cols):
            raise ValueError(f"solution is for {solution.num_rows}x{solution.num_cols}, not {num_rows}x{num_cols}")
        self.solution = solution
        self.size = (num_rows, num_cols)
        self._values = jnp.asarray(solution.values)
        self._masks = jnp.asarray(solver._tables(num_rows, num_cols).edge_box_masks)

    def arrays(self):
        """``{"values", "masks"}``: the solver's table and edge masks, an argument of the compiled arena match."""
        return {"values": self._values, "masks": self._masks}

    def settings_key(self, env) -> tuple:
        """The class, the board size and the tables' shapes and dtypes: PerfectAgents of one board share compiled code."""
        return (type(self), self.size, array_signature(self.arrays()))

    def _replace_arrays(self, arrays) -> None:
        self._values, self._masks = arrays["values"], arrays["masks"]

    def action_values(self, state) -> jax.Array:
        """int32 ``[E]``: exact value of each move of one state, `solver.ILLEGAL` where drawn."""
        s = edge_set_index(jnp.asarray(state.board.edges))
        return solver.child_values(self._masks, self._values, s[None])[0]

    def policy(self, env, state, key, player=None):
        """int32 ``[]``: a uniformly random optimal move of one state (``player`` is the mover; unused)."""
        _check_env(env, self.size)
        av = self.action_values(state)
        best = (av == jnp.max(av)) & state.legal_action_mask
        return masked_uniform_choice(key, best)


class AlphaBetaAgent(HostAgent):
    """Depth-limited alpha-beta with El Kaddouri et al.'s heuristic, chain rules and important moves first.

    Iterative deepening (depth 1, 2, ..., ``depth``) with a transposition
    table, stopping at the per-move ``time_budget``: the move of the deepest
    finished search is played, so a decision never takes much longer than the
    budget (El Kaddouri et al., section 6.2, ask for < 200 ms per move). Leaves beyond
    the horizon are worth the boxes won along the path (the box-difference
    heuristic of section 5.1); positions searched to the end are exact.
    When nothing is capturable and safe edges exist, at most
    ``max_safe_edges`` of them are searched (section 5.3 proposes one; None
    searches all moves). Equal moves are broken at random.

    Args:
        depth: ply limit (El Kaddouri et al.: 9).
        time_budget: seconds per move (default 0.15, leaving margin under 200 ms).
        max_safe_edges: see above (default 6).
        name: label.

    Raises:
        ValueError: ``depth < 1`` or a non-positive ``time_budget``.
    """

    def __init__(self, *, depth: int = 9, time_budget: float = 0.15, max_safe_edges: int | None = 6, name: str = "alphabeta"):
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
            raise ValueError(f"depth must be a positive int; got {depth!r}")
        self.depth, self.time_budget, self.name = int(depth), checks.positive_float("time_budget", time_budget), name
        self.options = minimax.SearchOptions(
            transposition=True, symmetry=False, chain_rules=True, alpha_beta=True, ordering=True, max_safe_edges=max_safe_edges
        )
        self.last_depth = 0
        self.last_nodes = 0

    def act(self, env, state, rng, player=None):
        """The move for one state (numpy leaves; ``player`` is the mover, unused); see the class docstring."""
        _check_env(env)
        bb = bitboard(env.num_rows, env.num_cols)
        edges = edge_set_index(np.asarray(state.board.edges))
        # The search allocates many small tuples (table entries) that form no cycles; a cyclic
        # garbage collection in the middle of a move would only add latency.
        enabled = gc.isenabled()
        gc.disable()
        try:
            action, _, self.last_depth, self.last_nodes = minimax.iterative_deepening(
                bb, edges, max_depth=self.depth, time_limit=self.time_budget, options=self.options, rng=rng
            )
        finally:
            if enabled:
                gc.enable()
        return action
