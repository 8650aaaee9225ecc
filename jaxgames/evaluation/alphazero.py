"""The evaluation hooks of AlphaZero training, passed to the spine as ``loop.Evaluation(evaluator, every=...)``.

A hook is ``evaluator(state) -> (metrics, promote)`` of a `TrainState`:
`ProgressEvaluator` (Dots-and-Boxes: the optimal-move rate against the exact
solver, and arena scores against the previous best and fixed opponents) and
`ArenaEvaluator` (any game: arena scores only). ``promote`` asks the driver
to make the current parameters the new best (`AlphaZeroLearner.promote`, the
arena gate). Every key is drawn from a fixed seed and the state's iteration,
never from the clock, so a resumed run evaluates exactly as a straight one.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks
from jaxgames.agents.alphazero import AlphaZeroAgent
from jaxgames.agents.dots_and_boxes import GreedyAgent
from jaxgames.agents.simple import RandomAgent
from jaxgames.evaluation import arena
from jaxgames.games.dots_and_boxes import rules
from jaxgames.games.dots_and_boxes.env import DotsAndBoxes
from jaxgames.games.dots_and_boxes.positions import random_positions
from jaxgames.games.dots_and_boxes.search import solver
from jaxgames.learners.alphazero import AlphaZeroConfig, TrainState
from jaxgames.networks import dots_and_boxes as nets


def elo_difference(score: float, games: int) -> float:
    """Elo difference implied by a mean score (wins + draws/2 over games), clipped to half a game.

    ``400 log10(s / (1 - s))`` (the logistic Elo model), with ``s`` kept in
    ``[1/(2 games), 1 - 1/(2 games)]`` so a clean sweep gives a finite number.
    """
    s = min(max(score, 0.5 / games), 1 - 0.5 / games)
    return 400.0 * math.log10(s / (1 - s))


STAGES = ("opening", "middle", "endgame")
"""The thirds of a game by edges drawn (`stages`)."""


def stages(edges) -> dict:
    """bool masks ``[N]`` of the positions in each third of the game: edges drawn ``< E/3`` (opening),
    ``< 2E/3`` (middle), the rest (endgame); on 3x3 (``E = 24``) 0-7, 8-15 and 16-23.

    Args:
        edges: bool ``[N, E]``: the drawn edges of each position.
    """
    edges = np.asarray(edges, bool)
    E = edges.shape[-1]
    drawn = edges.sum(-1)
    return {"opening": drawn < E // 3, "middle": (drawn >= E // 3) & (drawn < 2 * E // 3), "endgame": drawn >= 2 * E // 3}


def exact_margins(solution: solver.Solution, edges, scores, mover) -> np.ndarray:
    """The exact final box margin of positions, from the mover's side: boxes already won plus the solver's value.

    Args:
        solution: the board's `solver.Solution`.
        edges: bool ``[N, E]``: drawn edges of positions not yet over.
        scores: int ``[N, 2]``: boxes each player has won.
        mover: int ``[N]``: the player to move.

    Returns:
        int32 ``[N]``, in boxes.
    """
    edges, scores, mover = np.asarray(edges, bool), np.asarray(scores), np.asarray(mover)
    rest = np.asarray(solution.batch_action_values(jnp.asarray(edges))).max(axis=1)  # ILLEGAL is below every value
    n = np.arange(len(mover))
    return scores[n, mover] - scores[n, 1 - mover] + rest


def target_quality(solution: solver.Solution, samples, num_boxes: int) -> dict:
    """How good the training targets are: a replay buffer's self-play targets against the exact solver.

    Args:
        solution: the board's `solver.Solution`.
        samples: `jaxgames.learners.alphazero.Sample` ``[N]`` with the margin value target (numpy or JAX).
        num_boxes: boxes of the board (the value target's scale).

    Returns:
        floats, overall and by stage (`stages`, suffix ``_opening`` ...): ``target_value_rmse_boxes``, the
        value targets' root-mean-square error against the exact final margin, in boxes;
        ``target_policy_optimal``, the share of policy targets whose most likely move keeps the exact value;
        ``target_policy_mass``, their mean probability on such moves.
    """
    edges = np.asarray(samples.board.edges, bool)
    n = len(edges)
    av = np.asarray(solution.batch_action_values(jnp.asarray(edges)))
    exact = exact_margins(solution, edges, samples.board.scores, samples.board.player)
    err = (np.asarray(samples.value, np.float64) * num_boxes - exact) ** 2
    policy = np.asarray(samples.policy, np.float64)
    on_optimal = av == av.max(axis=1, keepdims=True)  # ILLEGAL (-128) is below every value
    argmax_ok = on_optimal[np.arange(n), policy.argmax(axis=1)]
    mass = (policy * on_optimal).sum(axis=1)
    out = {}
    for stage, where in {"": np.ones(n, bool), **{f"_{k}": v for k, v in stages(edges).items()}}.items():
        nan = not where.any()
        out[f"target_value_rmse_boxes{stage}"] = float("nan") if nan else float(np.sqrt(err[where].mean()))
        out[f"target_policy_optimal{stage}"] = float("nan") if nan else float(argmax_ok[where].mean())
        out[f"target_policy_mass{stage}"] = float("nan") if nan else float(mass[where].mean())
    return out


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Settings of the evaluation during training (`ProgressEvaluator`).

    Attributes:
        board: ``(num_rows, num_cols)`` of the arena games and the optimal-move
            rate (must be solvable by `solver.solve`: at most 31 edges, e.g. 3x3).
        num_positions: random-play positions for the optimal-move rate.
        num_games: arena games per opponent (first player alternating).
        num_simulations: search simulations per move of the agents evaluated.
        gate_win_rate: score (wins + draws/2) against the previous best from
            which the current parameters become the new best.
        opponents: fixed opponents among ``"greedy"``, ``"random"``.
    """

    board: tuple = (3, 3)
    num_positions: int = 1000
    num_games: int = 64
    num_simulations: int = 16
    gate_win_rate: float = 0.55
    opponents: tuple = ("greedy", "random")

    def __post_init__(self):
        rules.validate_size(*self.board)
        for name in ("num_positions", "num_games", "num_simulations"):
            checks.positive_int(name, getattr(self, name))
        checks.probability("gate_win_rate", self.gate_win_rate)
        for o in self.opponents:
            checks.choice("fixed opponent", o, ("greedy", "random"))


class ProgressEvaluator:
    """The evaluation of Dots-and-Boxes training (a `jaxgames.learners.loop.Evaluation` hook).

    Measures, on ``eval_config.board``: the optimal-move rate of the raw
    network policy and of the search (`AlphaZeroAgent`) on a fixed set of
    random-play positions (against the exact solver); the score of the
    current parameters against the previous best (both sampling their root
    move, Gumbel noise of scale 1, so the games differ) and against each
    fixed opponent (deterministic search) through the arena
    (`jaxgames.evaluation.arena.play_match`), with the Elo difference each
    implies.

    Args:
        config: the learner's config (network, value target).
        eval_config: `EvalConfig`.
        seed: the positions and the arena games are drawn from it (fixed
            over the run, so the curves compare like with like).

    Raises:
        ValueError: a board the solver cannot solve in memory.
    """

    def __init__(self, config: AlphaZeroConfig, eval_config: EvalConfig = EvalConfig(), *, seed: int = 0):
        self.config, self.eval_config, self.seed = config, eval_config, seed
        R, C = eval_config.board
        solver.check_size(R, C)
        self.solution = solver.solve(R, C)
        self.env = DotsAndBoxes(R, C)
        self.positions = random_positions(R, C, jax.random.key(seed), eval_config.num_positions)
        self.edges = np.asarray(self.positions.board.edges)
        self.stages = stages(self.edges)
        self.exact_margin = exact_margins(self.solution, self.edges, self.positions.board.scores,
                                          self.positions.current_player)
        self._evaluate = jax.jit(nets.make_evaluate(config.network, "margin")) if config.value_target == "margin" else None

    def _agent(self, params, name, *, search=True, gumbel_scale=0.0):
        return AlphaZeroAgent(
            params, network=self.config.network, value_target=self.config.value_target,
            num_simulations=self.eval_config.num_simulations, search=search, name=name, gumbel_scale=gumbel_scale,
        )

    def __call__(self, state: TrainState) -> tuple[dict, bool]:
        """Metrics of ``state`` and whether its parameters become the new best.

        Returns:
            ``(metrics, promote)``: floats ``optimal_rate_raw``, ``optimal_rate_search``, each also by
            stage (`stages`: ``optimal_rate_raw_opening``, ``_middle``, ``_endgame``), with the margin
            value target ``value_rmse_boxes`` (and by stage): the root-mean-square error, in boxes, of the
            network's value against the exact final margin, and when the board is trained on, the quality
            of the replay buffer's targets (`target_quality`),
            ``score_vs_best``, ``elo_vs_best``, ``score_vs_{opponent}``, ``elo_vs_{opponent}``.
        """
        ec = self.eval_config
        it = int(state.iteration)
        key = jax.random.fold_in(jax.random.key(self.seed + 1), it)
        out = {}
        batch = jax.tree.map(jnp.asarray, self.positions)
        n = ec.num_positions
        for search in (False, True):
            agent = self._agent(state.params, "az", search=search)
            actions = agent.compiled(self.env)(batch, jax.random.split(jax.random.fold_in(key, int(search)), n), batch.current_player)
            rate, ok = solver.optimal_move_rate(self.solution, self.edges, np.asarray(actions))
            name = "optimal_rate_search" if search else "optimal_rate_raw"
            out[name] = rate
            for stage, where in self.stages.items():
                out[f"{name}_{stage}"] = float(ok[where].mean()) if where.any() else float("nan")
        if self.config.value_target == "margin":
            _, value = self._evaluate(state.params, batch)
            err = (np.asarray(value, np.float64) - self.exact_margin) ** 2
            out["value_rmse_boxes"] = float(np.sqrt(err.mean()))
            for stage, where in self.stages.items():
                out[f"value_rmse_boxes_{stage}"] = float(np.sqrt(err[where].mean())) if where.any() else float("nan")
        if self.config.value_target == "margin" and ec.board in self.config.board_sizes:
            buffer = state.buffers[self.config.board_sizes.index(ec.board)]
            held = int(buffer.size)
            if held:
                samples = jax.tree.map(lambda x: np.asarray(x[:held]), buffer.data)
                out.update(target_quality(self.solution, samples, ec.board[0] * ec.board[1]))
        # Against the previous best both sides sample their root move (Gumbel noise, scale 1):
        # two deterministic searches would replay the same two games num_games / 2 times each.
        sampled = self._agent(state.params, "current", gumbel_scale=1.0)
        opponents = {"best": self._agent(state.best_params, "best", gumbel_scale=1.0)}
        for o in ec.opponents:
            opponents[o] = GreedyAgent() if o == "greedy" else RandomAgent()
        current = self._agent(state.params, "current")
        promote = False
        for j, (name, opp) in enumerate(opponents.items()):
            me = sampled if name == "best" else current
            res = arena.play_match(self.env, me, opp, ec.num_games, jax.random.fold_in(key, 10 + j), max_steps=self.env.num_actions + 1)
            score = (res.wins + 0.5 * (res.draws + res.timeouts)) / ec.num_games
            out[f"score_vs_{name}"] = score
            out[f"elo_vs_{name}"] = elo_difference(score, ec.num_games)
            if name == "best":
                promote = score >= ec.gate_win_rate
        return out, promote


class ArenaEvaluator:
    """An evaluation for any game through the arena: the gate against the previous best, and fixed opponents.

    Every call plays, through `jaxgames.evaluation.arena.play_match` (seats
    alternating), the current parameters against the previous best (both
    sampling their root move, Gumbel noise of scale 1, so the games differ)
    and against each fixed opponent (the current parameters with a
    deterministic search). The current parameters become the new best when
    their score (wins + draws/2) against the best is at least ``gate_win_rate``.
    The games' keys depend only on ``seed`` and the iteration (exact resume).

    Args:
        config: the learner's config (network, value target).
        env: the arena's environment (e.g. ``Onitama()``, canonical actions).
        opponents: fixed opponents by name (agents of `jaxgames.agents`).
        num_games: games per opponent.
        num_simulations: search simulations per move of the agents evaluated.
        gate_win_rate: the promotion threshold in ``[0, 1]``.
        seed: seed of the games.
        max_steps: turns before the arena stops a game (default ``env.max_turns + 1``
            where the env has a turn limit, else 1000).

    Raises:
        ValueError: a non-positive count, a threshold outside ``[0, 1]``.
    """

    def __init__(self, config: AlphaZeroConfig, env, opponents: dict, *, num_games: int = 32, num_simulations: int = 16,
                 gate_win_rate: float = 0.55, seed: int = 0, max_steps: int | None = None):
        self.config, self.env, self.opponents = config, env, dict(opponents)
        self.num_games = checks.positive_int("num_games", num_games)
        self.num_simulations = checks.positive_int("num_simulations", num_simulations)
        self.gate_win_rate = checks.probability("gate_win_rate", gate_win_rate)
        self.seed = checks.integer("seed", seed)
        self.max_steps = int(max_steps or getattr(env, "max_turns", 999) + 1)

    def agent(self, params, name: str, *, gumbel_scale: float = 0.0):
        """The `AlphaZeroAgent` of ``params`` with this evaluation's simulations."""
        return AlphaZeroAgent(params, network=self.config.network, value_target=self.config.value_target,
                              num_simulations=self.num_simulations, name=name, gumbel_scale=gumbel_scale)

    def __call__(self, state: TrainState) -> tuple[dict, bool]:
        """``(metrics, promote)``: ``score_vs_{name}``, ``elo_vs_{name}``, ``win_rate_vs_{name}`` for ``best`` and each opponent."""
        key = jax.random.fold_in(jax.random.key(self.seed + 1), int(state.iteration))
        opponents = {"best": self.agent(state.best_params, "best", gumbel_scale=1.0), **self.opponents}
        sampled = self.agent(state.params, "current", gumbel_scale=1.0)
        current = self.agent(state.params, "current")
        out, promote = {}, False
        for j, (name, opp) in enumerate(opponents.items()):
            me = sampled if name == "best" else current
            res = arena.play_match(self.env, me, opp, self.num_games, jax.random.fold_in(key, 10 + j), max_steps=self.max_steps)
            score = (res.wins + 0.5 * (res.draws + res.timeouts)) / self.num_games
            out[f"score_vs_{name}"] = score
            out[f"win_rate_vs_{name}"] = res.wins / self.num_games
            out[f"elo_vs_{name}"] = elo_difference(score, self.num_games)
            if name == "best":
                promote = score >= self.gate_win_rate
        return out, promote

