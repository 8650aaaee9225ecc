"""Onitama agents: uniform random, and depth-limited alpha-beta with the seed's "Minimax" evaluation.

Source: seed 001 sections 5.6 and 6 (the "Minimax" opponent of depth 1, 2,
... used as the training curriculum and as tournament entrants; the seed
names it but gives neither its evaluation nor its weights). The evaluation
here is the one the issue asks for, material plus master distance, with our
own weights (`evaluate`, `MATERIAL_WEIGHT`, `DISTANCE_WEIGHT`).

* `RandomAgent` (a `JaxAgent`: jit/vmap-able) plays `Onitama.random_action`,
  uniform over the legal actions.
* `AlphaBetaAgent` (a `HostAgent`) searches ``depth`` plies (1-4) with the
  generic `jaxgames.search.alphabeta.search` (fail-soft negamax, a
  transposition table, captures searched first). The arena batches it the
  way it batches every host agent: each call answers a whole batch of games,
  and every node of every search is expanded by ONE jitted call that steps
  all actions of the state (`jaxgames.search.alphabeta.expander`), compiled
  once per env value. Ties between equally valued moves are broken by a
  random move order (captures still first), so two games from one deal
  differ. Without a time budget the search is a fixed-depth search and its
  root value equals full-width minimax of that depth
  (``tests/test_onitama_agents.py`` checks it against an independent one).

Values are from the side of the player to move, in the units of the
rewards: +1 a win, -1 a loss, 0 a draw (the 200-turn limit). Every
non-terminal leaf is worth at most ``4 * MATERIAL_WEIGHT + 5 *
DISTANCE_WEIGHT = 0.425`` in absolute value, so a win or a loss found within
the horizon always dominates the evaluation.

Both action spaces work; the seed's 40-action space (``action_space="seed"``)
is the practical one for search (an expansion steps 40 actions instead of
1250).

    >>> import jax, jaxgames
    >>> from jaxgames.agents.onitama import AlphaBetaAgent, RandomAgent
    >>> from jaxgames.evaluation import play_match
    >>> env = jaxgames.make("onitama", action_space="seed")
    >>> result = play_match(env, AlphaBetaAgent(depth=2), RandomAgent(), 8, jax.random.key(0))
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.agents.base import HostAgent, JaxAgent
from jaxgames.games.onitama import rules
from jaxgames.search import alphabeta

MAX_DEPTH = 4
"""The deepest search an `AlphaBetaAgent` accepts (issue 13: depths 1-4)."""

MATERIAL_WEIGHT = 0.1
"""Value of one student more than the opponent (`evaluate`)."""

DISTANCE_WEIGHT = 0.005
"""Value of one step (Manhattan) of master-distance advantage (`evaluate`).

Chosen so that the distance term only breaks material ties: the distance
difference of a non-terminal position lies in ``[-5, 5]`` (a master is 1 to
6 steps from the enemy temple; at 0 the game is over), so the term spans at
most ``10 * 0.005 = 0.05 < MATERIAL_WEIGHT``: one student always outweighs
any difference in master distance. A master closer to the enemy temple
threatens the Way of the Stream, so it is the natural positional tie-breaker;
the search itself sees the actual threats within its horizon."""

MAX_EVALUATION = 4 * MATERIAL_WEIGHT + 5 * DISTANCE_WEIGHT
"""0.425: the largest absolute value of `evaluate` (below 1, the value of a win)."""

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
    """The seed's "Minimax" evaluation of a non-terminal state, from its player to move's side.

    ``MATERIAL_WEIGHT * (own students - enemy students) + DISTANCE_WEIGHT *
    (enemy master's distance to our temple - our master's distance to its
    temple)``, distances Manhattan (`master_distance`). In ``[-0.425,
    0.425]`` (`MAX_EVALUATION`), so wins (+1) and losses (-1) dominate.

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
    if env.action_space == "seed":
        return np.asarray(state.move_target)[actions]
    to_view = actions % rules.NUM_SQUARES
    return np.where(int(state.current_player) == 0, to_view, rules.NUM_SQUARES - 1 - to_view)


class RandomAgent(JaxAgent):
    """Uniform over the legal actions (`Onitama.random_action`; the seed's "random AI").

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
    """Fixed-depth alpha-beta (1-4 plies) with the seed's material-plus-master-distance evaluation.

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
        if time_budget is not None and not time_budget > 0:
            raise ValueError(f"time_budget must be positive seconds or None; got {time_budget!r}")
        self.depth = int(depth)
        self.time_budget = None if time_budget is None else float(time_budget)
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


def _alphabeta(depth: int):
    return lambda **kwargs: AlphaBetaAgent(depth, **kwargs)


AGENTS = {"random": RandomAgent, **{f"alphabeta{d}": _alphabeta(d) for d in range(1, MAX_DEPTH + 1)}}
"""Onitama agents by name (built with keyword arguments only): ``random``, ``alphabeta1`` ... ``alphabeta4``."""
