"""Onitama agents: uniform random, depth-limited alpha-beta (host) and batched minimax (JAX).

Source: Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
Learning" (NUS USP group report, 2021), sections 5.6 and 6: the "Minimax"
opponent of depth 1, 2, ..., named without its evaluation or weights. Ours
is material plus master distance (`evaluate`; the weights of
`jaxgames.games.onitama.search`).

* `RandomAgent` (`JaxAgent`) plays `Onitama.random_action`.
* `AlphaBetaAgent` (`HostAgent`) searches 1-4 plies with the generic
  `jaxgames.search.alphabeta.search` (fail-soft negamax, transposition
  table, captures first, random tie-breaks); without a time budget its root
  value equals full-width minimax of that depth.
* `MinimaxAgent` (`JaxAgent`, 1-3 plies) is its batched twin in pure JAX
  (`jaxgames.games.onitama.search.move_values`): no pruning, so it jits and
  vmaps and the arena runs whole matches against it in one compiled loop.

Values are from the mover's side: +1 a win, -1 a loss, 0 a draw (the turn
limit); a non-terminal leaf is worth at most 0.425 in absolute value.
Both action spaces work; the 40-action one (``action_space="paper"``) is
cheaper for search (an expansion steps 40 actions instead of 1250).

    >>> import jax, jaxgames
    >>> from jaxgames.agents.onitama import AlphaBetaAgent, RandomAgent
    >>> from jaxgames.evaluation import play_match
    >>> env = jaxgames.make("onitama", action_space="paper")
    >>> result = play_match(env, AlphaBetaAgent(depth=2), RandomAgent(), 8, jax.random.key(0))
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks
from jaxgames.agents.base import HostAgent, JaxAgent, masked_uniform_choice
from jaxgames.games.onitama import cards, rules
from jaxgames.games.onitama.search import DISTANCE_WEIGHT, MATERIAL_WEIGHT, move_values
from jaxgames.search import alphabeta

MAX_DEPTH = 4
"""The deepest search an `AlphaBetaAgent` accepts."""

_TEMPLE_RC = np.array([[rules.TEMPLE[p] // rules.SIZE, rules.TEMPLE[p] % rules.SIZE] for p in (0, 1)])


def _check_env(env) -> None:
    if getattr(env, "name", None) != "onitama":
        raise ValueError(f"this agent plays onitama; got {env!r}")


def master_distance(pieces: np.ndarray, player: int) -> int:
    """Manhattan distance (rows + columns) from ``player``'s master to the enemy's temple arch.

    Args:
        pieces: int ``[2, 5]`` squares (`rules.Board.pieces`), the master alive.
        player: 0 or 1.
    """
    sq = int(pieces[player, rules.MASTER])
    enemy_temple = _TEMPLE_RC[1 - player]
    return abs(sq // rules.SIZE - int(enemy_temple[0])) + abs(sq % rules.SIZE - int(enemy_temple[1]))


def evaluate(state) -> float:
    """The "Minimax" evaluation of a non-terminal state, from its player to move's side.

    ``MATERIAL_WEIGHT * (own students - enemy students) + DISTANCE_WEIGHT *
    (enemy master's distance to our temple - our master's distance to its
    temple)``, distances Manhattan (`master_distance`). In ``[-0.425,
    0.425]`` (`jaxgames.games.onitama.search.MAX_EVALUATION`), so wins (+1)
    and losses (-1) dominate. Host twin of `search.evaluate_board`.

    Args:
        state: one unbatched `OnitamaState` (numpy or device leaves), not terminal.

    Returns:
        A Python float.
    """
    pieces = np.asarray(state.board.pieces)
    p = int(state.current_player)
    q = 1 - p
    students = np.sum(pieces[:, : rules.MASTER] >= 0, axis=1)
    material = int(students[p]) - int(students[q])
    distance = master_distance(pieces, q) - master_distance(pieces, p)
    return MATERIAL_WEIGHT * material + DISTANCE_WEIGHT * distance


def state_key(state) -> bytes:
    """A transposition-table key of one state: pieces, hands, side card, player, turn (the turn limit).

    Everything the value of a position depends on: the turn counts toward the
    200-turn draw, and within one fixed-depth search two transpositions reach
    the same turn anyway.
    """
    b = state.board
    return np.concatenate(
        [np.asarray(b.pieces).reshape(-1), np.asarray(b.hands).reshape(-1), np.asarray([b.side, b.player, b.turn])]
    ).astype(np.int32).tobytes()


def _landing_squares(env, state, actions: np.ndarray) -> np.ndarray:
    """int ``[n]``: the absolute landing square of each legal action (meaningless for a pass)."""
    if env.action_space == "paper":
        return np.asarray(state.move_target)[actions]
    to_view = actions % rules.NUM_SQUARES
    return np.where(int(state.current_player) == 0, to_view, rules.NUM_SQUARES - 1 - to_view)


class RandomAgent(JaxAgent):
    """Uniform over the legal actions (`Onitama.random_action`; Dasgupta & Chong's "random AI").

    Raises:
        ValueError: the env is not Onitama (at trace time).
    """

    name = "random"

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: a uniform legal action of one unbatched state (``player`` is the mover; unused)."""
        _check_env(env)
        del player
        return env.random_action(key, state).astype(jnp.int32)


class AlphaBetaAgent(HostAgent):
    """Fixed-depth alpha-beta (1-4 plies) with the material-plus-master-distance evaluation (`evaluate`).

    See the module docstring. Each decision searches ``depth`` plies with a
    fresh transposition table (`state_key`), captures first, the rest in a
    random order from the arena's generator (random tie-breaks among equal
    moves). A time budget, if given, turns it into iterative deepening that
    plays the deepest finished depth (depth 1 always finishes).

    Args:
        depth: plies, 1 to 4.
        time_budget: seconds per move, or None (default: always the full depth).
        name: label (default ``"alphabeta{depth}"``).

    Attributes:
        last_nodes, last_depth, last_value: of the last decision.

    Raises:
        ValueError: ``depth`` not an int in ``[1, 4]``; a non-positive ``time_budget``.
    """

    def __init__(self, depth: int = 2, *, time_budget: float | None = None, name: str | None = None):
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth must be an int in [1, {MAX_DEPTH}]; got {depth!r}")
        self.depth = int(depth)
        self.time_budget = None if time_budget is None else checks.positive_float("time_budget", time_budget)
        self.name = f"alphabeta{self.depth}" if name is None else name
        self.last_nodes = self.last_depth = 0
        self.last_value = 0.0

    def search(self, env, state, rng: np.random.Generator | None = None) -> alphabeta.AlphaBetaResult:
        """The `alphabeta.AlphaBetaResult` of one unbatched state (numpy or device leaves).

        ``rng`` None: moves in ascending order after the captures (deterministic).

        Raises:
            ValueError: ``env`` is not Onitama, or a batched state.
        """
        _check_env(env)

        def order(s, legal):
            legal = np.asarray(legal)
            if rng is not None:
                legal = rng.permutation(legal)
            squares = _landing_squares(env, s, legal)
            enemy = np.asarray(s.board.pieces)[1 - int(s.current_player)]
            captures = np.isin(squares, enemy[enemy >= 0])
            return [int(a) for a in legal[np.argsort(~captures, kind="stable")]]

        result = alphabeta.search(
            env, state, evaluate, max_depth=self.depth, time_budget=self.time_budget, hash_fn=state_key, order_moves=order
        )
        self.last_nodes, self.last_depth, self.last_value = result.nodes, result.depth, result.value
        return result

    def act(self, env, state, rng: np.random.Generator, player: int | None = None) -> int:
        """The chosen action of one unbatched state (numpy leaves); ``player`` is the mover (unused)."""
        del player
        result = self.search(env, state, rng)
        return max(int(result.best_action), 0)


MAX_JAX_DEPTH = 3
"""The deepest `MinimaxAgent` (depth d visits ``40**d`` leaves per state: 64,000 at depth 3)."""

class MinimaxAgent(JaxAgent):
    """Full-width fixed-depth minimax (1-3 plies) in pure JAX: the batched twin of `AlphaBetaAgent`.

    Same evaluation and values (float32) as `AlphaBetaAgent`, without
    pruning (`jaxgames.games.onitama.search.move_values`): all 40 (piece,
    card, move) triples at every level, ``40**depth`` leaves per decision, in
    one vmapped kernel. Ties between equal best moves are broken uniformly
    at random. The turn limit is ``env.max_turns``.

    Args:
        depth: plies, 1 to 3.
        name: label (default ``"minimax{depth}"``).

    Raises:
        ValueError: ``depth`` not an int in ``[1, 3]``; the env is not Onitama (at trace time).
    """

    def __init__(self, depth: int = 2, *, name: str | None = None):
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or not 1 <= depth <= MAX_JAX_DEPTH:
            raise ValueError(f"depth must be an int in [1, {MAX_JAX_DEPTH}]; got {depth!r}")
        self.depth = int(depth)
        self.name = f"minimax{self.depth}" if name is None else name

    def value(self, env, state) -> jax.Array:
        """float32 ``[]``: the depth-limited value of one unfinished state for its player to move."""
        _check_env(env)
        values, valid = move_values(state.board, self.depth, env.max_turns)
        return jnp.max(jnp.where(valid, values, -jnp.inf))

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: a uniformly random best move of one state, in the env's action space (``player`` unused)."""
        _check_env(env)
        del player
        values, valid = move_values(state.board, self.depth, env.max_turns)
        best = valid & (values >= jnp.max(jnp.where(valid, values, -jnp.inf)) - 1e-6)
        index = masked_uniform_choice(key, best)
        if env.action_space == "paper":
            return index
        must_pass = ~jnp.any(state.move_mask)
        passes = jnp.asarray(env.pass_actions, jnp.int32)
        ids = env.canonical_ids(state.board, state.move_target)
        move = jnp.sum(jnp.where(jnp.arange(rules.NUM_MOVES) == index, ids, 0), dtype=jnp.int32)
        return jnp.where(must_pass, passes[(index // cards.MAX_MOVES) % 2], move).astype(jnp.int32)


def _alphabeta(depth: int):
    return lambda **kwargs: AlphaBetaAgent(depth, **kwargs)


def _minimax(depth: int):
    return lambda **kwargs: MinimaxAgent(depth, **kwargs)


AGENTS = {
    "random": RandomAgent,
    **{f"alphabeta{d}": _alphabeta(d) for d in range(1, MAX_DEPTH + 1)},
    **{f"minimax{d}": _minimax(d) for d in range(1, MAX_JAX_DEPTH + 1)},
}
"""Onitama agents by name (built with keyword arguments only): ``random``,
``alphabeta1`` ... ``alphabeta4`` (host), ``minimax1`` ... ``minimax3`` (JAX)."""
