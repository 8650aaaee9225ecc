"""A Battlesnake snake that searches: best-reply or paranoid search over the nearest snakes, with a hand-written evaluation.

`SearchAgent.policy` runs `jaxgames.search.simultaneous.best_reply_alphabeta`
(by default, within a step budget) or `jaxgames.search.simultaneous.maximin` from one
board for snake ``player`` (traced): its own candidate moves (`candidate_moves`)
against the ``opponents`` living snakes whose heads are nearest (Manhattan),
the other snakes following a default policy (`greedy_moves` by default, or
`default_moves`), ``depth`` plies deep, leaves valued by
`jaxgames.games.battlesnake.evaluation.evaluate` (territory by a multi-source
breadth-first partition, length against the longest and nearest snakes,
starvation, head-to-head risk; a starving snake's leaf valued as a death).
By default one nearby snake answers at a time (best-reply search: Schadd &
Winands 2011, "Best Reply Search for Multiplayer Games"); ``best_reply=False``
takes their joint answers (paranoid search: Sturtevant & Korf 2000, "On
Pruning Techniques for Multi-Player Games"; Sturtevant 2002, "A Comparison
of Algorithms for Multi-player Games"). Cutting the enumeration to the
nearby snakes is the common practice of strong Battlesnakes (the others
cannot reach the searched snake's cells within a shallow horizon). Moves of
equal worst case go to the highest mean over the answers (default) or, with
``tie_break="random"``, to any of them.

The batched agent is one jitted call (`JaxAgent.compiled`); `act_in_time`
adds the wall-clock budget for one board: with alpha-beta, the search stopped
at a deadline it reads from the host clock (`compiled_in_time`); without,
iterative deepening, each depth started only while the time measured for it fits.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from jaxgames import checks
from jaxgames.agents.base import JaxAgent
from jaxgames.agents.battlesnake import move_targets, safe_moves, vacated_after
from jaxgames.agents.q_snake import QSnakeAgent
from jaxgames.games.battlesnake import evaluation, rules
from jaxgames.games.battlesnake.env import Battlesnake
from jaxgames.search import simultaneous

_BIG = 1 << 20

DEFAULT_WEIGHTS = {"food_weight": 0.6, "longest_weight": 0.4, "starvation_loss": True, "hungry_unless_longest": True}
"""The agent's evaluation settings where they differ from `evaluation.evaluate`'s: more weight on food and
length, chosen over trials of 48-100 games against `HeuristicAgent` snakes (starvation was the first cause
of death with the defaults); a starving leaf valued as a death, chosen by a rule written before 1,000 games
against them; and a food margin of 100 while not the longest (``hungry_unless_longest``), chosen by a rule
written before 1,000 games against `battlesnake_public.TailChaserAgent` snakes (a screen of 200 of them
included) and 1,000 against `HeuristicAgent` snakes (`benchmarks/README.md`). Overridden by `SearchAgent`'s
``**weights``."""

TIE_BREAKS = ("random", "mean")
"""`SearchAgent`'s ``tie_break`` settings."""

LEAF_BATCH = 64
"""Children stepped (and leaves valued) at a time (`simultaneous.maximin`'s ``leaf_batch``: only the real ones) when
the roots run one at a time (a CPU), where batches of tens run several times faster than all of them at once
(`benchmarks/README.md`)."""

MAX_STATES = 250_000
"""`SearchAgent`'s default bound on enumerated states without ``alphabeta``: depth 4 over the two nearest snakes
enumerates 204,204 (21 joint moves a node; a CPU steps only the real ones, about a twentieth)."""

STEP_BUDGET = 30_000
"""`SearchAgent`'s default ``step_budget`` with ``alphabeta``: states a move may step (depth - 1, then depth with the
rest; chosen for the p99 think time of depth 5 at B = 1, `benchmarks/README.md`)."""


def parse_weights(items: str | Sequence[str]) -> dict:
    """``name:value`` items as `SearchAgent` ``**weights``: keywords of `evaluation.evaluate`, each value converted
    to the type of its default there (``true``/``false`` for flags).

    Args:
        items: a str of comma-separated items (``"hungry_unless_longest:true,food_weight:0.8"``) or a sequence of
            items; empty: ``{}``.

    Returns:
        ``{name: value}``, each value a float, int or bool as the keyword's default in `evaluate`; validated
        further (ranges) by `SearchAgent`.

    Raises:
        ValueError: an item not ``name:value`` with a keyword of `evaluate` (``board`` and ``rounds`` excluded),
            a name given twice, or a value not of the keyword's type, naming it.
    """
    if isinstance(items, str):
        items = [i for i in items.split(",") if i.strip()]
    defaults = inspect.signature(evaluation.evaluate).parameters
    known = [k for k in defaults if k not in ("board", "rounds")]
    out = {}
    for item in items:
        name, sep, text = str(item).partition(":")
        name, text = name.strip(), text.strip()
        if not sep or name not in known:
            raise ValueError(f"evaluation item {item!r} must be name:value with a name from: {', '.join(known)}")
        if name in out:
            raise ValueError(f"evaluation names {name} twice")
        kind = type(defaults[name].default)
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError(f"evaluation {name} must be true or false; got {text!r}")
            out[name] = text.lower() == "true"
        else:
            try:
                out[name] = kind(text)
            except ValueError:
                raise ValueError(f"evaluation {name} must be {kind.__name__}; got {text!r}") from None
    return out


HEAD_TO_HEAD_PENALTY = 1.0
"""Subtracted from a move's value when a snake outside the search, at least as long, can enter the same cell
(paranoid at the first ply for every snake; a sure death is worth -2)."""


def _best_safe_moves(board: rules.Board, rank) -> jax.Array:
    """int32 ``[S]``: each snake's safe move of the highest ``rank(s, x, y, room)`` (int32 ``[4]``, >= 0, over the
    move targets' coordinates ``x``, ``y`` and free neighbours ``room``), ties to the lowest move code; a snake
    with no safe move takes its lowest legal move on the board, else its lowest legal move."""
    size, n = board.size, board.num_snakes
    grid = jnp.pad((vacated_after(board) <= 1).reshape(size, size), 1)  # free next turn, walls not
    legal = rules.legal_moves(board)

    def one(s):
        cells, on = move_targets(board, s)
        x, y = cells // size, cells % size
        room = grid[x + 2, y + 1].astype(jnp.int32) + grid[x, y + 1] + grid[x + 1, y + 2] + grid[x + 1, y]
        score = jnp.where(safe_moves(board, s), 2 + rank(s, x, y, room),
                          jnp.where(legal[s] & on, 1, jnp.where(legal[s], 0, -1)))
        return jnp.argmax(score).astype(jnp.int32)

    return jax.vmap(one)(jnp.arange(n))


def default_moves(board: rules.Board, key: jax.Array) -> jax.Array:
    """int32 ``[S]``: a cheap move for every snake: the safe move whose cell has the most free neighbours.

    Safe as in `jaxgames.agents.battlesnake.safe_moves`; ties go to the
    lowest move code; a snake with no safe move takes its lowest legal move.
    Used for the snakes a search does not enumerate.
    """
    del key
    return _best_safe_moves(board, lambda s, x, y, room: room)


def greedy_moves(board: rules.Board, key: jax.Array) -> jax.Array:
    """int32 ``[S]``: a cheap model of a typical snake's move for every snake: safe, then out of reach of a
    longer head, then nearer food, then room.

    Lexicographic over the safe moves (`jaxgames.agents.battlesnake.safe_moves`): a cell with a free
    neighbour; no living snake at least as long with its head next to the cell (a head-to-head it would lose);
    a smaller Manhattan distance to the nearest food; the most free neighbours; the lowest move code. A snake
    with no safe move takes its lowest legal move on the board (else its lowest legal move). The rules
    `HeuristicAgent` and the public write-up both state (avoid longer heads, eat), cheap enough for every node
    of a search: the move ordering of the opponents that do not answer in best-reply search (BRS+: Esser,
    Gras, Winands, Schadd & Lanctot 2013, "Improving Best-Reply Search").
    """
    del key
    size, n = board.size, board.num_snakes
    fx, fy = rules.cell_coords(size)
    far = 2 * size  # more than any distance on the board

    def rank(s, x, y, room):
        food_gap = jnp.min(jnp.where(board.food[None, :], jnp.abs(x[:, None] - fx[None, :])
                                     + jnp.abs(y[:, None] - fy[None, :]), far), axis=1)  # [4]
        rival = board.alive & (jnp.arange(n) != s) & (board.length >= board.length[s])
        near = jnp.abs(x[:, None] - board.head[None, :, 0]) + jnp.abs(y[:, None] - board.head[None, :, 1]) == 1
        calm = ~jnp.any(near & rival[None, :], axis=1)
        return (room > 0) * 4096 + calm * 2048 + (far - food_gap) * 8 + room  # room <= 4 < 8

    return _best_safe_moves(board, rank)


DEFAULT_POLICIES = {"room": default_moves, "greedy": greedy_moves}
"""`SearchAgent`'s ``default_policy`` settings: the moves of the snakes that do not answer."""


STOP_RESERVE = 0.05
"""The share of `SearchAgent.act_in_time`'s budget kept for the search's last clock period and its return."""

_CLOCK_ORIGIN = time.perf_counter()


def _deadline_ms(at: float) -> np.ndarray:
    """int32: ``time.perf_counter()`` value ``at`` as milliseconds since import, modulo ``2 ** 32`` (wrapping)."""
    return np.asarray((int((at - _CLOCK_ORIGIN) * 1000) + 2**31) % 2**32 - 2**31, np.int32)


def _clock_ms() -> np.ndarray:
    return _deadline_ms(time.perf_counter())


def _past(deadline: jax.Array) -> jax.Array:
    """bool ``[]``: whether the host clock (read by ``io_callback``) has reached ``deadline`` (`_deadline_ms`);
    wrapping int32 differences, right within 24 days of it."""
    return deadline - io_callback(_clock_ms, jax.ShapeDtypeStruct((), jnp.int32)) <= 0


def _policy_keys(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(search_key, tie_key)``: `SearchAgent.policy`'s split of its key."""
    search_key, tie_key = jax.random.split(key)
    return search_key, tie_key


def candidate_moves(board: rules.Board) -> jax.Array:
    """bool ``[S, 4]``: the moves a search enumerates: legal and not a certain death (`rules.certain_deaths`).

    A living snake whose every legal move is a certain death keeps its legal
    moves; an eliminated snake (or every snake of a finished game) keeps move 0 only.
    """
    legal = rules.legal_moves(board)
    keep = legal & ~rules.certain_deaths(board)
    keep = jnp.where(jnp.any(keep, axis=1, keepdims=True), keep, legal)
    active = board.alive & ~rules.is_game_over(board)
    return jnp.where(active[:, None], keep, jnp.arange(4)[None, :] == 0)


def nearest_snakes(board: rules.Board, player: jax.Array, count: int) -> jax.Array:
    """int32 ``[count + 1]``: ``player`` then the ``count`` other snakes nearest to its head.

    Distance is Manhattan between heads; eliminated snakes come last, ties go
    to the lowest index. ``count`` is static and at most ``S - 1``.
    """
    n = board.num_snakes
    d = jnp.sum(jnp.abs(board.head - board.head[player][None, :]), axis=-1)
    idx = jnp.arange(n)
    key = jnp.where(idx == player, -1, jnp.where(board.alive, d, _BIG + idx))
    return jnp.argsort(key * n + idx)[: count + 1].astype(jnp.int32)


class SearchAgent(JaxAgent):
    """Best-reply (default) or paranoid search over the nearest snakes with `evaluation.evaluate` at the leaves.

    Args (keyword-only):
        depth: plies (>= 1; default 5).
        opponents: snakes enumerated besides the player (>= 0; clipped to
            ``S - 1`` of the game); the others play the ``default_policy``.
        max_states: the search's bound on enumerated states (`maximin`; default `MAX_STATES`).
        branching: at most this many moves enumerated per searched snake and
            node (1-4), taken from `candidate_moves` (legal, not certain
            death; one for an eliminated snake; default 3). None: every legal
            move, certain deaths included.
        best_reply: best-reply search over the searched snakes (one of them
            answers at a time, the others on the ``default_policy``; `maximin`'s
            ``best_reply``; the default) instead of paranoid search over their
            joint moves.
        reply_depth: with ``best_reply``, the plies from the root at which
            the searched snakes' replies are enumerated; deeper plies
            enumerate the player's own moves only, every other snake on
            the ``default_policy`` (`maximin`'s ``reply_depth``; clipped to the depth
            searched). None (default): every ply.
        learned_weight: weight ``w`` in ``[0, 1]`` of the learned leaf value:
            a living snake's leaf is worth ``(1 - w) * evaluate + w *
            LIVE_BOUND * (2 max_a Q(a) - 1)``, ``Q`` the win rates of
            ``learned``'s network on the snake's view (eliminated -1, sole
            survivor +1, as `evaluate`). 0: the hand-written evaluation only.
        learned: the `QSnakeAgent` whose network values the leaves (default,
            when ``learned_weight > 0``: the shipped weights).
        time_budget: seconds per move for `act_in_time` (the HTTP server
            then deepens up to ``depth`` within it); None: always ``depth``.
        vmap_roots: the batched policy vmaps the search over roots (True) or
            runs one root at a time with ``lax.map`` (False); None (default):
            vmap on a GPU or TPU, ``lax.map`` on a CPU. One root at a time
            also steps and values each ply's children `LEAF_BATCH` at a time,
            only those of valid moves, and skips a root whose snake is
            eliminated or whose game is over (move 0). The moves are the same.
        **weights: keyword arguments of `evaluation.evaluate` (weights,
            ``length_scale``, ``rounds``, flags); unset ones take `DEFAULT_WEIGHTS`
            (a starving leaf worth -2, as a death; a food margin of 100 while
            not the longest), then `evaluate`'s defaults.
        tie_break: among moves of equal value, ``"mean"`` (default) takes the
            highest `simultaneous.MaximinOutput` ``mean_values`` (the move that
            loses against fewer answers), then any of those; ``"random"`` any,
            uniformly.
        alphabeta: prune the best-reply tree (`simultaneous.best_reply_alphabeta`:
            the same action values; mean ties at one ply); needs ``best_reply``,
            no ``reply_depth``; no ``max_states`` bound. None (default): True
            with ``best_reply`` and no ``reply_depth``, else False.
        step_budget: with ``alphabeta``, states a move may step (> 0): depth - 1
            first, then ``depth`` with the rest, used only if it finished. None:
            ``depth`` alone. ``"auto"`` (default): `STEP_BUDGET` with
            ``alphabeta``, None without.
        default_policy: the moves of the snakes that do not answer (those not
            searched, and in best-reply search the searched ones not deviating):
            ``"greedy"`` (default) `greedy_moves`, ``"room"`` `default_moves`.
        name: a label.

    Raises:
        TypeError, ValueError: a bad depth, opponent count, bound or weight,
            naming it.
    """

    def __init__(self, *, depth: int = 5, opponents: int = 2, max_states: int = MAX_STATES,
                 branching: int | None = 3, best_reply: bool = True, reply_depth: int | None = None,
                 learned_weight: float = 0.0,
                 learned=None, time_budget: float | None = None, vmap_roots: bool | None = None,
                 tie_break: str = "mean", default_policy: str = "greedy", alphabeta: bool | None = None,
                 step_budget: int | str | None = "auto", name: str = "search", **weights):
        self.depth = checks.positive_int("depth", depth)
        self.branching = None if branching is None else checks.integer("branching", branching, 1, 4)
        if not isinstance(best_reply, bool):
            raise TypeError(f"best_reply must be a bool; got {best_reply!r}")
        self.best_reply = best_reply
        if reply_depth is not None:
            reply_depth = checks.integer("reply_depth", reply_depth, 0, self.depth)
            if not best_reply:
                raise ValueError("reply_depth needs best_reply=True")
        self.reply_depth = reply_depth
        if alphabeta is None:
            alphabeta = best_reply and reply_depth is None
        if not isinstance(alphabeta, bool):
            raise TypeError(f"alphabeta must be a bool or None; got {alphabeta!r}")
        if alphabeta and (not best_reply or reply_depth is not None):
            raise ValueError("alphabeta needs best_reply=True and reply_depth=None (it prunes the best-reply tree)")
        self.alphabeta = alphabeta
        if isinstance(step_budget, str) and step_budget == "auto":
            step_budget = STEP_BUDGET if alphabeta else None
        if step_budget is not None:
            step_budget = checks.positive_int("step_budget", step_budget)
            if not alphabeta:
                raise ValueError("step_budget needs alphabeta=True")
        self.step_budget = step_budget
        if vmap_roots is not None and not isinstance(vmap_roots, bool):
            raise TypeError(f"vmap_roots must be a bool or None; got {vmap_roots!r}")
        self.vmap_roots = vmap_roots
        self.tie_break = checks.choice("tie_break", tie_break, TIE_BREAKS)
        self.default_policy = checks.choice("default_policy", default_policy, tuple(DEFAULT_POLICIES))
        self.time_budget = None if time_budget is None else checks.positive_float("time_budget", time_budget)
        self.opponents = checks.integer("opponents", opponents, 0, 7)
        self.max_states = checks.positive_int("max_states", max_states)
        self.weights = {**DEFAULT_WEIGHTS, **weights}
        self.learned_weight = checks.real("learned_weight", learned_weight, 0.0, 1.0, dtype=np.float32)
        if learned is not None and not isinstance(learned, QSnakeAgent):
            raise TypeError(f"learned must be a QSnakeAgent; got {type(learned).__name__}")
        self.learned = (learned or QSnakeAgent()) if self.learned_weight > 0 else None
        self.name = name
        evaluation.leaf_value(Battlesnake(num_snakes=2), **self.weights)  # checks the weights now

    def settings(self) -> dict:
        """The agent's settings (what its compiled policy depends on)."""
        return {"depth": self.depth, "opponents": self.opponents, "max_states": self.max_states,
                "branching": self.branching, "best_reply": self.best_reply, "reply_depth": self.reply_depth,
                "learned_weight": self.learned_weight,
                "vmap_roots": self._vmap_roots(), "tie_break": self.tie_break, "default_policy": self.default_policy,
                "alphabeta": self.alphabeta, "step_budget": self.step_budget, **self.weights}

    def _vmap_roots(self) -> bool:
        return jax.default_backend() != "cpu" if self.vmap_roots is None else self.vmap_roots

    def _searched(self, env) -> int:
        return min(self.opponents, int(env.num_players) - 1)

    def joint_actions(self, env) -> int:
        """Joint moves enumerated per node (`simultaneous.joint_action_count` of this agent's search)."""
        m = self._searched(env) + 1
        k = int(env.num_actions) if self.branching is None else self.branching
        return simultaneous.joint_action_count(k, m, best_reply=self.best_reply)

    def check(self, env, depth: int | None = None) -> int:
        """The states the search over ``env`` enumerates (`simultaneous.check_maximin_settings`); raises ValueError
        when they pass ``max_states``, TypeError when ``env`` is not Battlesnake."""
        if not isinstance(env, Battlesnake):
            raise TypeError(f"SearchAgent plays Battlesnake; got {type(env).__name__}")
        m = self._searched(env) + 1
        depth = self.depth if depth is None else depth
        return simultaneous.check_maximin_settings(
            env, player=0, depth=depth, max_states=None if self.alphabeta else self.max_states, searched=np.arange(m),
            default_policy=DEFAULT_POLICIES[self.default_policy], branching=self.branching,
            best_reply=self.best_reply, reply_depth=self._reply_depth(depth))

    def _reply_depth(self, depth: int) -> int | None:
        return None if self.reply_depth is None else min(self.reply_depth, depth)

    def search(self, env, state, key: jax.Array, player: jax.Array, depth: int | None = None):
        """The `maximin` output for snake ``player`` in one state (pure, jittable; ``depth`` static)."""
        return self._search(env, state, key, player, depth)[0]

    def _search(self, env, state, key, player, depth=None, stop=None):
        """``(MaximinOutput, reached int32 [])``: `search`, and the depth whose values it holds; with alpha-beta,
        ``stop`` as in `simultaneous.best_reply_alphabeta` (a stopped search: reached 0)."""
        depth = self.depth if depth is None else depth
        board = state.board
        searched = nearest_snakes(board, player, self._searched(env))
        leaf = self._player_leaf(player) if self.learned is None else self._mixed_leaf(player)

        moves = DEFAULT_POLICIES[self.default_policy]

        def default_policy(s, k):
            return moves(s.board, k)

        lean = env.without_observation()
        candidates = None if self.branching is None else (lambda s: candidate_moves(s.board))
        if self.alphabeta:
            def alphabeta(plies, max_steps=None):
                return simultaneous.best_reply_alphabeta(
                    lean, env.strip_observation(state), key, player=player, depth=plies, evaluate=leaf,
                    searched=searched, default_policy=default_policy, branching=self.branching,
                    candidates=candidates, max_steps=max_steps, stop=stop)

            if self.step_budget is None or depth == 1:
                out = alphabeta(depth)
                return out, jnp.where(out.num_steps >= 0, depth, 0).astype(jnp.int32)
            shallow = alphabeta(depth - 1)
            left = jnp.where(shallow.num_steps >= 0, self.step_budget - shallow.num_steps, 0)
            deep = alphabeta(depth, jnp.maximum(left, 1))
            use_deep = (deep.num_steps >= 0) & (deep.num_steps <= left)
            out = jax.tree.map(lambda x, y: jnp.where(use_deep, x, y), deep, shallow)
            stopped = (shallow.num_steps < 0) | (deep.num_steps < 0)
            reached = jnp.where(use_deep, depth, jnp.where(shallow.num_steps >= 0, depth - 1, 0)).astype(jnp.int32)
            return out._replace(num_steps=jnp.where(stopped, -1, shallow.num_steps + deep.num_steps)), reached
        return simultaneous.maximin(
            lean, env.strip_observation(state), key, player=player, depth=depth, evaluate=leaf, max_states=self.max_states,
            searched=searched, default_policy=default_policy, branching=self.branching,
            candidates=candidates, best_reply=self.best_reply, leaf_batch=None if self._vmap_roots() else LEAF_BATCH,
            reply_depth=self._reply_depth(depth)), jnp.int32(depth)

    def _player_value(self, board: rules.Board, player: jax.Array) -> jax.Array:
        """float32 ``[]``: `evaluation.evaluate` of ``player`` alone (its own BFS only: cheaper, the same value)."""
        return evaluation.evaluate(board, players=player[None], **self.weights)[0]

    def _as_death(self, board: rules.Board, player: jax.Array, own: jax.Array, value: jax.Array) -> jax.Array:
        """``value``, or -2 where ``starvation_loss`` values the living snake's evaluation ``own`` as lost (-1):
        a starving leaf is worth a death while other snakes play on (the loss reward plus an eliminated snake's
        -1; a death that ends the game is worth -1), so starving after the horizon never outranks dying in it."""
        if not self.weights.get("starvation_loss", False):
            return value
        return jnp.where(board.alive[player] & (own <= -1.0), -2.0, value)

    def _player_leaf(self, player: jax.Array):
        """The leaf evaluation: only ``player``'s entry is computed (the search reads no other)."""
        def fn(state, key):
            del key
            n = state.board.num_snakes
            own = self._player_value(state.board, player)
            return jnp.zeros(n, jnp.float32).at[player].set(self._as_death(state.board, player, own, own))

        return fn

    def _mixed_leaf(self, player: jax.Array):
        """The leaf evaluation with the learned value (``learned_weight``); only ``player``'s entry is computed."""
        w, learned = self.learned_weight, self.learned

        def fn(state, key):
            board = state.board
            q = learned.q_values(learned.view(board, player))
            value = evaluation.LIVE_BOUND * (2.0 * jnp.max(q) - 1.0)
            own = self._player_value(board, player) if w < 1.0 or self.weights.get("starvation_loss") else None
            if w < 1.0:
                value = (1.0 - w) * own + w * value
            alive = board.alive
            sole = alive[player] & (jnp.sum(alive) == 1) & (board.num_snakes > 1)
            value = self._as_death(board, player, own, jnp.where(alive[player], jnp.where(sole, 1.0, value), -1.0))
            return jnp.zeros(board.num_snakes, jnp.float32).at[player].set(value.astype(jnp.float32))

        return fn

    def move_values(self, env, state, key: jax.Array, player: jax.Array, depth: int | None = None) -> jax.Array:
        """float32 ``[4]``: each absolute move's value for snake ``player``, as `policy` ranks them (pure, jittable).

        The search's ``action_values`` less `HEAD_TO_HEAD_PENALTY` where a
        snake outside the search, at least as long, can enter the same cell.
        Rewards plus the leaf value: -2 (or ``finfo(float32).min`` for a move
        not enumerated) for a sure death up to +1 for a win.
        """
        return self._ranked_values(env, state, key, player, depth)[0]

    def _ranked_values(self, env, state, key, player, depth, stop=None):
        """``(values, means, reached)``: `move_values` and the search's ``mean_values`` less the same penalty
        (float32 ``[4]`` each), and `_search`'s depth reached."""
        out, reached = self._search(env, state, key, player, depth, stop)
        risk = HEAD_TO_HEAD_PENALTY * self._unsearched_risk(env, state.board, player)
        return out.action_values - risk, out.mean_values - risk, reached

    def batched_move_values(self, env, depth: int | None = None):
        """``(states [B, ...], keys [B], players int32 [B]) -> float32 [B, 4]``: `move_values` over roots
        (vmapped or one at a time, as ``vmap_roots`` says; not jitted)."""
        return self._over_roots(lambda s, k, p: self.move_values(env, s, k, p, depth))

    def policy_search(self, env, state, key: jax.Array, player: jax.Array, depth: int | None = None):
        """The `maximin` output behind `policy`'s move with the same ``key`` (pure, jittable; ``depth`` static)."""
        return self.search(env, state, _policy_keys(key)[0], player, depth)

    def batched_policy_search(self, env, depth: int | None = None):
        """``(states [B, ...], keys [B], players int32 [B]) -> MaximinOutput [B]``: `policy_search` over roots
        (vmapped or one at a time, as ``vmap_roots`` says; not jitted)."""
        return self._over_roots(lambda s, k, p: self.policy_search(env, s, k, p, depth))

    def policy(self, env, state, key: jax.Array, player: jax.Array, depth: int | None = None) -> jax.Array:
        """int32 ``[]``: the maximin move of snake ``player``; ties go to the highest mean value over the
        answers (``tie_break="mean"``), then uniformly at random with ``key``."""
        return self._decide(env, state, key, player, depth)[0]

    def _decide(self, env, state, key, player, depth=None, stop=None):
        """``(move, reached)``, int32 ``[]`` each: `policy`'s move and the depth it searched (`_search`)."""
        search_key, tie_key = _policy_keys(key)
        values, means, reached = self._ranked_values(env, state, search_key, player, depth, stop)
        best = values == jnp.max(values)
        if self.tie_break == "mean":
            best = best & (means == jnp.max(jnp.where(best, means, -jnp.inf)))
        return jnp.argmax(jnp.where(best, jax.random.uniform(tie_key, values.shape), -1.0)).astype(jnp.int32), reached

    def _unsearched_risk(self, env, board: rules.Board, player: jax.Array) -> jax.Array:
        """float32 ``[4]``: 1 for a move onto a cell that a snake not searched, at least as long, can also enter."""
        searched = nearest_snakes(board, player, self._searched(env))
        n = board.num_snakes
        others = board.alive & ~jnp.any(jnp.arange(n)[:, None] == searched[None, :], axis=1)
        rival = others & (board.length >= board.length[player])
        target = board.head[player][None, :] + jnp.asarray(rules.DELTAS)  # [4, 2]
        gap = jnp.sum(jnp.abs(target[:, None, :] - board.head[None, :, :]), axis=-1)  # [4, S]
        return jnp.any((gap == 1) & rival[None, :], axis=1).astype(jnp.float32)

    def arrays(self):
        """``{"learned": ...}``, the learned leaf's network variables (an argument of the compiled
        search, not constants in it); ``{}`` without a learned leaf."""
        return {} if self.learned is None else {"learned": self.learned.arrays()}

    def settings_key(self, env) -> tuple:
        """The class, `settings`, and the learned agent's `settings_key` (agents equal in these share compiled code)."""
        learned = None if self.learned is None else self.learned.settings_key(env)
        return (type(self), tuple(sorted(self.settings().items())), learned)

    def _replace_arrays(self, arrays) -> None:
        self.learned = self.learned.with_arrays(arrays["learned"])
        self.__dict__.pop("_ready", None)  # warmed up around the original's arrays
        self.__dict__.pop("_seconds_at_depth", None)

    def compiled_at_depth(self, env, depth: int):
        """The jitted batched policy at ``depth`` plies, built once per game and depth (`JaxAgent.compiled_variant`:
        shared, with the learned leaf's variables as an argument, by agents of equal `settings_key`)."""
        return self.compiled_variant(env, lambda agent: agent._batched(env, depth), tag=("depth", depth),
                                     on_build=lambda: self.check(env, depth))

    def _batched(self, env, depth: int):
        return self._over_roots(lambda s, k, p: self.policy(env, s, k, p, depth), skip_inactive=True)

    def _over_roots(self, one, skip_inactive: bool = False):
        if self._vmap_roots():
            return jax.vmap(one)
        # One root at a time: on a CPU, vmapping the search over roots makes its gathers and scatters
        # batched, about 10x slower per root. With ``skip_inactive``, a root whose snake is eliminated or
        # whose game is over is not searched (move 0, which the game ignores).
        def guarded(s, k, p):
            active = s.board.alive[p] & ~(s.terminated | s.truncated)
            return jax.lax.cond(active, one, lambda *_: jnp.int32(0), s, k, p)

        root = guarded if skip_inactive else one
        return lambda states, keys, players: jax.lax.map(lambda x: root(*x), (states, keys, players))

    def batched_policy(self, env):
        return self._batched(env, self.depth)

    def compiled(self, env):
        return self.compiled_at_depth(env, self.depth)

    def act_in_time(self, env, state, key: jax.Array, player: int, budget_seconds: float) -> tuple[int, int]:
        """One board's move within a wall-clock budget.

        Depth 1 always runs first. With ``alphabeta``, the full search follows
        (`policy`'s at ``depth``, within its ``step_budget``), reading the host
        clock each `simultaneous.STOP_EVERY` states stepped and stopping at
        ``budget_seconds`` from the call, less a `STOP_RESERVE` share: its move
        when it finished ``depth`` or (the step budget spent) ``depth - 1``,
        else depth 1's.
        Without, iterative deepening: depths 2, 3, ... each started only while
        the time spent plus its estimate fits, the estimate being the last
        depth's time times the growth seen so far, or the time the same depth
        took on the last move of this game size that ran it (cut by a fifth
        at each move that skips it), whichever is larger. The first call for
        a game compiles first (seconds, not counted: the server's warm-up).

        Args:
            env: the Battlesnake Env.
            state: one unbatched state.
            key: PRNG key.
            player: the snake (int).
            budget_seconds: seconds (> 0).

        Returns:
            ``(move, depth)``: the move of the deepest finished search and its depth.
        """
        checks.positive_float("budget_seconds", budget_seconds)
        batch = jax.tree.map(lambda x: jnp.asarray(x)[None], state)
        players = jnp.asarray([player], jnp.int32)
        keys = key[None]
        seen = self.__dict__.setdefault("_seconds_at_depth", {})  # (env, depth) -> seconds on the last move
        timed = self.alphabeta and self.depth > 1

        def run(d: int) -> tuple[int, float]:
            t0 = time.perf_counter()
            out = int(np.asarray(self.compiled_at_depth(env, d)(batch, keys, players))[0])
            return out, time.perf_counter() - t0

        ready = self.__dict__.setdefault("_ready", set())
        if env not in ready:  # the first call of a game compiles, untimed
            for d in (1,) if timed else range(1, self.depth + 1):
                run(d)
            if timed:
                self.compiled_in_time(env)(batch, keys, players, _deadline_ms(time.perf_counter() + 1e6))
            ready.add(env)
        start = time.perf_counter()
        move, last = run(1)
        if timed:
            deadline = _deadline_ms(start + budget_seconds * (1.0 - STOP_RESERVE))
            deep, reached = (int(x[0]) for x in self.compiled_in_time(env)(batch, keys, players, deadline))
            return (deep, reached) if reached > 0 else (move, 1)
        seen[(env, 1)] = last
        done, growth = 1, float(self.joint_actions(env))
        for d in range(2, self.depth + 1):
            estimate = max(last * growth, seen.get((env, d), 0.0))
            if time.perf_counter() - start + estimate > budget_seconds:
                if (env, d) in seen:
                    seen[(env, d)] *= 0.8
                break
            out, took = run(d)
            seen[(env, d)] = took
            growth = max(growth, took / max(last, 1e-6))
            move, done, last = out, d, took
        return move, done

    def compiled_in_time(self, env):
        """The jitted batched policy at ``depth`` with alpha-beta, stopped at a deadline, built once per game:
        ``(states [B, ...], keys [B], players int32 [B], deadline int32 []) -> (moves, depths)``, int32 ``[B]``
        each; ``deadline`` in `_deadline_ms`'s clock; depth 0 where it stopped before a search it can play finished
        (``depth``, or ``depth - 1`` with the step budget spent).

        Raises:
            ValueError: an agent without ``alphabeta`` (it has no search to stop).
        """
        if not self.alphabeta:
            raise ValueError("compiled_in_time needs alphabeta=True")
        cache = self.__dict__.setdefault("_in_time", {})
        if env not in cache:
            self.check(env)

            def policy(arrays, states, keys, players, deadline):
                agent = self.with_arrays(arrays)
                stop = lambda steps: _past(deadline)  # noqa: E731
                return agent._over_roots(lambda s, k, p: agent._decide(env, s, k, p, stop=stop))(states, keys, players)

            cache[env] = jax.jit(policy)
        fn = cache[env]
        return lambda states, keys, players, deadline: fn(self.arrays(), states, keys, players, deadline)
