"""AlphaZero for Dots-and-Boxes (issue 12; seed 000 section 6, seed 004): train on small boards, play any board.

Trains with `jaxgames.learners.alphazero.train` (Gumbel self-play on every
size of ``board_sizes`` -> replay -> AdamW with symmetry augmentation ->
evaluation against the previous best), resumable from ``<out>/checkpoints``
(Orbax, `jaxgames.checkpoint`): rerunning the same command continues where
the last run stopped (``iterations=`` or ``budget_minutes=`` may be raised to
go on). Then, unless ``report=false``, it measures the issue's targets on the
final network (the last best of the arena gate; the latest parameters if the
gate never ran or never promoted) or on ``weights=`` (``shipped`` or a folder
of `jaxgames.agents.alphazero.save_weights`):

* exact play on 3x3 against the retrograde solver: the share of optimal
  (value-preserving) moves (a) over every position of ``perfect_games``
  games against the perfect player (first player alternating) and (b) over
  ``random_positions`` positions of random play, for the search agent and
  for the raw network policy beside it (target: >= 95% with search);
* 5x5 against alpha-beta (``alphabeta_budget`` seconds per move) over
  ``games_5x5`` games, first player alternating (target: >= 60% wins), and
  against pure MCTS with as many simulations as fit in the agent's own time
  per move (equal time, measured here; target: wins the match);
* 7x7 against pure MCTS (equal time) and greedy over ``games_7x7`` games;
* the agent's time per move on 5x5 (B = 1; target <= 200 ms on this CPU);
* an Elo tournament (alphazero, alphabeta, mcts, greedy, random) on
  ``tournament_board`` through the arena: ratings with bootstrap intervals and
  the pairwise net-wins heatmap (`jaxgames.evaluation.report`).

Every proportion has its 95% Wilson interval. Outputs in ``out``:
``curves.csv``/``curves.png`` (loss, value error, optimal-move rate on 3x3,
scores and Elo against the previous best and the fixed opponents, per
iteration), ``report.csv``/``report.md``/``report.png`` (the targets),
``ratings.csv``, ``net_wins.png`` (heatmap) and the other tournament tables,
``README.md`` (read it first), ``config.json``, ``checkpoints/``.

With ``ship=trained`` the reported network is written to
``jaxgames/weights/alphazero_dab/`` (what `AlphaZeroAgent.from_weights`
loads) with the command, budget and report beside it; ``ship=placeholder``
writes the same marked untrained (a smoke run).

    python experiments/alphazero_dab.py                        # small CPU run: about 10 minutes on 2 cores
    python experiments/alphazero_dab.py iterations=40          # go on to iteration 40 (resumes)
    # the long run (hours; see jaxgames/weights/alphazero_dab/README.md):
    python experiments/alphazero_dab.py board_sizes=2x2,3x3,4x4 num_envs=64 num_simulations=16 \\
        max_num_considered_actions=16 updates_per_iteration=32 iterations=3000 budget_minutes=240 \\
        eval_every=100 eval_games=64 eval_positions=1000 out=results/alphazero_dab_main ship=trained
    # the targets at full size, on the shipped weights:
    python experiments/alphazero_dab.py iterations=0 weights=shipped out=results/alphazero_dab_eval \\
        perfect_games=1000 random_positions=10000 games_5x5=200 games_7x7=100 tournament_rounds=20

``iterations=0`` (or a count already reached) trains nothing. The report's
settings and the run's length may change between calls on one folder
(`NEUTRAL`); every other setting must match (`jaxgames.experiment.ResultsDir`:
lock, config check, atomic writes). Bad settings fail before anything is written.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.evaluation.report import wilson_row
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, command_line, parse_config
from jaxgames.learners import alphazero as az
from jaxgames.networks.dots_and_boxes import NetworkConfig

SHIP = ("none", "trained", "placeholder")
REPORT_FIELDS = (
    "report", "weights", "agent_simulations", "perfect_games", "random_positions", "games_5x5", "alphabeta_budget",
    "games_7x7", "tournament_board", "tournament_rounds", "ship",
)
NEUTRAL = NEUTRAL_FIELDS + ("iterations", "budget_minutes", "checkpoint_every") + REPORT_FIELDS
"""Settings a resumed run may change (how long it trains, and the final report: not what training computes)."""


def parse_size(text: str, name: str) -> tuple[int, int]:
    """``"3x4"`` -> ``(3, 4)``; raises ValueError naming the setting for anything else (or a bad size)."""
    from jaxgames.games.dots_and_boxes import rules

    parts = str(text).lower().split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"{name} must be a board size like 3x3; got {text!r}")
    try:
        return rules.validate_size(int(parts[0]), int(parts[1]))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: {e}") from None


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Learner (`jaxgames.learners.alphazero.AlphaZeroConfig`; small defaults for a CPU run):
        board_sizes: training boards, e.g. ``2x2,3x3,4x4``.
        size_weights: loss weight per size (none: equal).
        channels, num_blocks, value_channels, value_hidden: network widths (`NetworkConfig`).
        num_envs, num_simulations, max_num_considered_actions, gumbel_scale,
        policy_target, value_target, buffer_capacity, batch_size,
        updates_per_iteration, learning_rate, weight_decay, max_grad_norm,
        value_loss_weight, augment: see `AlphaZeroConfig`.

    Evaluation during training (`jaxgames.learners.alphazero.EvalConfig`):
        eval_every: iterations between evaluations (0: none; then no gate).
        eval_board, eval_positions, eval_games, eval_simulations, gate_win_rate.

    Run:
        iterations: stop after this many iterations in all (resumed runs go on up to it; 0: no training).
        budget_minutes: stop training after this much wall-clock time in this call (checkpointing first).
        seed: PRNG seed of the run.
        checkpoint_every: iterations between checkpoints.
        init_weights: ``shipped`` or a weights folder whose parameters start the
            training instead of a fresh network (a fine-tune, e.g. at a lower
            ``learning_rate``); their widths and ``value_target`` must be this
            run's (ValueError otherwise). The optimiser state starts fresh.

    Report (module docstring):
        report: measure the targets after training.
        weights: ``shipped`` or a weights folder to report on instead of the run's network.
        agent_simulations: the agent's simulations per move.
        perfect_games, random_positions, games_5x5, alphabeta_budget, games_7x7,
        tournament_board, tournament_rounds: sizes of the measurements.
        ship: ``none``, ``trained`` or ``placeholder``.
        out: results folder; overwrite: replace another configuration's results; progress: bars.
    """

    board_sizes: tuple[str, ...] = ("2x2", "3x3")
    size_weights: Optional[tuple[float, ...]] = None
    channels: int = 32
    num_blocks: int = 4
    value_channels: int = 16
    value_hidden: int = 64
    num_envs: int = 32
    num_simulations: int = 8
    max_num_considered_actions: int = 8
    gumbel_scale: float = 1.0
    policy_target: str = "gumbel"
    value_target: str = "margin"
    buffer_capacity: int = 1 << 15
    batch_size: int = 128
    updates_per_iteration: int = 8
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    value_loss_weight: float = 1.0
    augment: bool = True
    eval_every: int = 5
    eval_board: str = "3x3"
    eval_positions: int = 500
    eval_games: int = 32
    eval_simulations: int = 16
    gate_win_rate: float = 0.55
    iterations: int = 10
    budget_minutes: Optional[float] = None
    seed: int = 0
    checkpoint_every: int = 1
    init_weights: Optional[str] = None
    report: bool = True
    weights: Optional[str] = None
    agent_simulations: int = 64
    perfect_games: int = 20
    random_positions: int = 1000
    games_5x5: int = 10
    alphabeta_budget: float = 0.15
    games_7x7: int = 6
    tournament_board: str = "5x5"
    tournament_rounds: int = 4
    ship: str = "none"
    out: str = "results/alphazero_dab"
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self):
        self.learner_config()  # every learner setting checked (ValueError naming it)
        self.eval_config()
        if isinstance(self.iterations, bool) or self.iterations < 0:
            raise ValueError(f"iterations must be an int >= 0; got {self.iterations!r}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0; got {self.eval_every}")
        if self.budget_minutes is not None and not self.budget_minutes > 0:
            raise ValueError(f"budget_minutes must be > 0 or none; got {self.budget_minutes!r}")
        for name in ("checkpoint_every", "agent_simulations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        for name in ("perfect_games", "random_positions", "games_5x5", "games_7x7", "tournament_rounds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0; got {getattr(self, name)}")
        if not self.alphabeta_budget > 0:
            raise ValueError(f"alphabeta_budget must be > 0 seconds; got {self.alphabeta_budget!r}")
        parse_size(self.tournament_board, "tournament_board")
        if self.ship not in SHIP:
            raise ValueError(f"ship must be one of {SHIP}; got {self.ship!r}")
        if self.weights is not None and self.weights != "shipped" and not pathlib.Path(self.weights).is_dir():
            raise ValueError(f"weights must be 'shipped' or a weights folder; {self.weights!r} is not a folder")
        if self.init_weights is not None and self.init_weights != "shipped" and not pathlib.Path(self.init_weights).is_dir():
            raise ValueError(f"init_weights must be 'shipped' or a weights folder; {self.init_weights!r} is not a folder")
        if self.ship != "none" and self.weights is not None:
            raise ValueError("ship= writes the run's network; it cannot be combined with weights=")

    def learner_config(self) -> az.AlphaZeroConfig:
        """The `AlphaZeroConfig` of these settings."""
        return az.AlphaZeroConfig(
            board_sizes=tuple(parse_size(s, "board_sizes") for s in self.board_sizes),
            size_weights=self.size_weights,
            network=NetworkConfig(self.channels, self.num_blocks, self.value_channels, self.value_hidden),
            num_envs=self.num_envs, num_simulations=self.num_simulations,
            max_num_considered_actions=self.max_num_considered_actions, gumbel_scale=self.gumbel_scale,
            policy_target=self.policy_target, value_target=self.value_target, buffer_capacity=self.buffer_capacity,
            batch_size=self.batch_size, updates_per_iteration=self.updates_per_iteration,
            learning_rate=self.learning_rate, weight_decay=self.weight_decay, max_grad_norm=self.max_grad_norm,
            value_loss_weight=self.value_loss_weight, augment=self.augment,
        )

    def eval_config(self) -> az.EvalConfig:
        """The `EvalConfig` of the evaluation during training."""
        return az.EvalConfig(
            board=parse_size(self.eval_board, "eval_board"), num_positions=self.eval_positions,
            num_games=self.eval_games, num_simulations=self.eval_simulations, gate_win_rate=self.gate_win_rate,
        )


# ----------------------------------------------------------------------------- measurements
def play_recorded(env, agent, opponent, num_games: int, key: jax.Array):
    """Plays ``num_games`` games of ``agent`` against ``opponent`` (JAX agents), agent first in even games.

    Returns:
        ``(edges, actions, margin)``: bool ``[M, E]`` and int ``[M]``, every
        position where the agent moved and its move; float ``[G]``, the
        agent's final box margin per game.
    """
    G, E = num_games, env.num_actions
    act_a, act_b = agent._compiled(env), opponent._compiled(env)
    step = jax.jit(jax.vmap(env.step))
    states = jax.vmap(env.init)(jax.random.split(key, G))
    seat = np.arange(G) % 2  # the agent's seat: 0 (moves first) in even games
    edges, actions = [], []
    for t in range(E):
        key, ka, kb = jax.random.split(key, 3)
        mover = np.asarray(states.current_player)
        live = ~np.asarray(states.terminated)
        mine = live & (mover == seat)
        a = np.asarray(act_a(states, jax.random.split(ka, G), jnp.asarray(mover)))
        b = np.asarray(act_b(states, jax.random.split(kb, G), jnp.asarray(mover)))
        edges.append(np.asarray(states.board.edges)[mine])
        actions.append(a[mine])
        states = step(states, jnp.asarray(np.where(mine, a, b), jnp.int32))
    scores = np.asarray(states.board.scores)
    margin = scores[np.arange(G), seat] - scores[np.arange(G), 1 - seat]
    return np.concatenate(edges), np.concatenate(actions), margin.astype(float)


def moves_on_positions(agent, env, states, chunk: int = 1000) -> np.ndarray:
    """The agent's move in each of a batch of states, in fixed-size chunks (one compile)."""
    n = int(states.current_player.shape[0])
    fn = agent._compiled(env)
    out = []
    for start in range(0, n, chunk):
        idx = np.arange(start, start + chunk) % n  # the last chunk is padded with repeats
        part = jax.tree.map(lambda x: x[idx], states)
        acts = fn(part, jax.random.split(jax.random.key(start), chunk), part.current_player)
        out.append(np.asarray(acts)[: min(chunk, n - start)])
    return np.concatenate(out)


def exact_play_rows(agents: dict, config: Config, key: jax.Array) -> list[dict]:
    """Optimal-move rates on 3x3 against the retrograde solver (targets (a) and (b))."""
    from jaxgames.agents.dots_and_boxes import PerfectAgent
    from jaxgames.games.dots_and_boxes import DotsAndBoxes
    from jaxgames.games.dots_and_boxes.search import solver

    env = DotsAndBoxes(3, 3)
    solution = solver.solve(3, 3)
    perfect = PerfectAgent(3, 3, solution=solution)
    rows = []
    k_games, k_pos = jax.random.split(key)
    if config.random_positions:
        positions = az.random_positions(3, 3, k_pos, config.random_positions)
        edges = np.asarray(positions.board.edges)
    for name, agent in agents.items():
        if config.perfect_games:
            e, a, margin = play_recorded(env, agent, perfect, config.perfect_games, k_games)
            _, ok = az.optimal_move_rate(solution, e, a)
            rows.append(wilson_row(
                "3x3 optimal moves, games vs perfect", int(ok.sum()), len(ok), agent=name, target=0.95,
                games=config.perfect_games, mean_margin=float(margin.mean()),
                note=f"positions of {config.perfect_games} games against the exact solver, first player alternating",
            ))
        if config.random_positions:
            acts = moves_on_positions(agent, env, positions)
            _, ok = az.optimal_move_rate(solution, edges, acts)
            rows.append(wilson_row(
                "3x3 optimal moves, random-play positions", int(ok.sum()), len(ok), agent=name, target=0.95,
                note=f"{config.random_positions} positions after k ~ U[0, 23] random moves",
            ))
    return rows


def match_row(env, agent, opponent, games: int, key, what: str, *, target=None, move_time_limit=None) -> dict:
    """``games`` arena games (first player alternating): the agent's win rate with its Wilson interval."""
    from jaxgames.evaluation import arena

    res = arena.play_match(env, agent, opponent, games, key, max_steps=env.num_actions + 1, move_time_limit=move_time_limit)
    return wilson_row(
        what, res.wins, games, agent=agent.name, opponent=opponent.name, target=target, losses=res.losses,
        draws=res.draws, timeouts=res.timeouts, agent_max_move_s=float(res.max_move_seconds[:, 0].max()),
        opponent_max_move_s=float(res.max_move_seconds[:, 1].max()),
    )


def equal_time_mcts(agent, env, name: str = "mcts"):
    """Pure MCTS with as many simulations as fit in the agent's own time per move on ``env`` (B = 1)."""
    from jaxgames.agents.alphazero import seconds_per_move, simulations_for_budget
    from jaxgames.agents.mcts import MCTSAgent

    seconds = seconds_per_move(agent, env)
    sims = simulations_for_budget(lambda n: MCTSAgent(num_simulations=n, name=name), env, seconds, margin=1.0)
    return MCTSAgent(num_simulations=sims, name=name), seconds


def report_rows(agent, raw, config: Config, key: jax.Array, progress: bool) -> tuple[list[dict], object]:
    """Every target row (module docstring) and the tournament."""
    from jaxgames.agents.alphazero import seconds_per_move
    from jaxgames.agents.dots_and_boxes import AlphaBetaAgent, GreedyAgent
    from jaxgames.agents.simple import RandomAgent
    from jaxgames.evaluation import elo
    from jaxgames.games.dots_and_boxes import DotsAndBoxes

    keys = jax.random.split(key, 8)
    rows = []
    steps = ["exact play 3x3", "5x5", "7x7", "tournament"]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(steps), desc="report")

    def done(step):
        if bar is not None:
            bar.set_postfix_str(step)
            bar.update(1)

    rows += exact_play_rows({"alphazero": agent, "raw_network": raw}, config, keys[0])
    done("exact play 3x3")
    env5 = DotsAndBoxes(5, 5)
    t5 = seconds_per_move(agent, env5)
    rows.append({"measure": "5x5 seconds per move (B=1)", "agent": agent.name, "rate": t5, "target": 0.2,
                 "note": f"median, {config.agent_simulations} simulations"})
    if config.games_5x5:
        ab = AlphaBetaAgent(time_budget=config.alphabeta_budget)
        rows.append(match_row(env5, agent, ab, config.games_5x5, keys[1], f"5x5 wins vs alpha-beta ({config.alphabeta_budget * 1000:.0f} ms)", target=0.6))
        mcts5, secs = equal_time_mcts(agent, env5)
        rows.append(match_row(env5, agent, mcts5, config.games_5x5, keys[2], f"5x5 wins vs MCTS at equal time ({mcts5.num_simulations} sims, {secs * 1000:.0f} ms)", target=0.5))
    done("5x5")
    if config.games_7x7:
        env7 = DotsAndBoxes(7, 7)
        mcts7, secs = equal_time_mcts(agent, env7)
        rows.append(match_row(env7, agent, mcts7, config.games_7x7, keys[3], f"7x7 wins vs MCTS at equal time ({mcts7.num_simulations} sims, {secs * 1000:.0f} ms)"))
        rows.append(match_row(env7, agent, GreedyAgent(), config.games_7x7, keys[4], "7x7 wins vs greedy"))
    done("7x7")
    tournament = None
    if config.tournament_rounds:
        R, C = parse_size(config.tournament_board, "tournament_board")
        env = DotsAndBoxes(R, C)
        mcts, _ = equal_time_mcts(agent, env)
        agents = [agent, AlphaBetaAgent(time_budget=config.alphabeta_budget), mcts, GreedyAgent(), RandomAgent()]
        tournament = elo.round_robin(env, agents, config.tournament_rounds, keys[5], max_steps=env.num_actions + 1)
    done("tournament")
    if bar is not None:
        bar.close()
    return rows, tournament


# ----------------------------------------------------------------------------- figures and tables
def write_curves(rd: ResultsDir, history: list) -> None:
    """``curves.csv`` and ``curves.png``: losses, value error, optimal-move rate, scores and Elo per iteration."""
    from jaxgames.evaluation import report

    def draw(axes, it, names):
        ax = axes[0, 1]
        ax.plot(it, [r["value_loss"] for r in history], label="value squared error (all sizes)")
        for k in names:
            if k.endswith("/value_loss"):
                ax.plot(it, [r[k] for r in history], lw=0.8, ls="--", label=k)
        ax.set_title("Value error")
        ev = [r for r in history if "optimal_rate_raw" in r]
        if ev:
            e = np.array([r["iteration"] for r in ev])
            ax = axes[1, 0]
            ax.plot(e, [r["optimal_rate_raw"] for r in ev], "o-", label="raw network")
            ax.plot(e, [r["optimal_rate_search"] for r in ev], "s-", label="with search")
            ax.axhline(0.95, color="k", ls=":", lw=1, label="target 95%")
            ax.set_ylim(0, 1)
            ax.set_title("Optimal-move rate, 3x3 random-play positions")
            ax = axes[1, 1]
            for k in [k for k in names if k.startswith("elo_vs_")]:
                ax.plot(e, [r.get(k, np.nan) for r in ev], "o-", label=k.replace("elo_vs_", "Elo vs "))
            ax.axhline(0, color="k", lw=0.5)
            ax.set_title("Elo difference (from the arena score)")

    report.write_curves(rd, history, draw, grid=(2, 2), size=(11, 7.5))


def write_report(rd: ResultsDir, rows: list, tournament, config: Config) -> list[str]:
    """``report.csv``, ``report.md``, ``report.png``, the tournament files; returns the Markdown lines of the report."""
    from jaxgames.evaluation import report

    more = []
    if tournament is not None:
        with rd.staging() as tmp:
            report.write_tournament(tournament, tmp, games_per_lineup=config.tournament_rounds)
        more += ["", f"Elo tournament on {config.tournament_board} ({config.tournament_rounds} games per pair, first player "
                 "alternating; [ratings.csv](ratings.csv), heatmap [net_wins.png](net_wins.png)):", "",
                 "| agent | Elo | 95% interval | Bradley-Terry | win rate |", "|---|---:|---|---:|---:|"]
        for r in report.ratings_rows(tournament):
            more.append(f"| {r['agent']} | {r['elo']:.0f} | [{r['elo_low']:.0f}, {r['elo_high']:.0f}] | {r['bradley_terry']:.0f} | {r['win_rate']:.3f} |")
    return report.write_targets(rd, rows, more)


def write_readme(rd, config, result, source, report_lines, seconds, argv) -> str:
    """``README.md`` (`jaxgames.evaluation.report.write_run_readme`); returns its text."""
    from jaxgames.evaluation import report

    lc = config.learner_config()
    training = None if result is None else (
        f"Training: boards {', '.join(config.board_sizes)}; network {lc.network}; {lc.num_envs} games per size per "
        f"iteration, {lc.num_simulations} Gumbel simulations per self-play move; {lc.updates_per_iteration} AdamW steps "
        f"of {lc.batch_size} positions per size per iteration. {result.length_text()}"
        ". Curves: [curves.csv](curves.csv), [curves.png](curves.png).")
    return report.write_run_readme(
        rd, title="AlphaZero for Dots-and-Boxes (issue 12)", command=command_line("experiments/alphazero_dab.py", argv),
        seconds=seconds, training=training, source=source, report_heading="Targets", report_lines=report_lines,
    )


# ----------------------------------------------------------------------------- run
def initial_params(config: Config, lc: az.AlphaZeroConfig):
    """The parameters of ``init_weights`` (a fine-tune's start), checked against the run's network.

    Raises:
        ValueError: weights of other widths or another ``value_target`` (both named).
    """
    from jaxgames.agents.alphazero import load_weights

    params, meta = load_weights(None if config.init_weights == "shipped" else config.init_weights)
    theirs = NetworkConfig(**meta["network"])
    if theirs != lc.network or meta["value_target"] != lc.value_target:
        raise ValueError(
            f"init_weights={config.init_weights!r} hold a network {theirs} with value_target={meta['value_target']!r}; "
            f"this run's is {lc.network} with value_target={lc.value_target!r}"
        )
    return params


def run(config: Config, argv=()) -> dict:
    """Trains (resuming), reports, writes every output into ``config.out``; returns a summary dict.

    Raises:
        jaxgames.experiment.ResultsDirLocked, ConfigMismatch: see `jaxgames.experiment.ResultsDir`.
        ValueError: weights that do not fit the network settings.
    """
    from jaxgames.agents.alphazero import AlphaZeroAgent, load_weights

    lc = config.learner_config()
    ckpt_dir = pathlib.Path(config.out) / "checkpoints"
    start = time.perf_counter()
    initial = None if config.init_weights is None else initial_params(config, lc)  # checked before anything is written
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:
        if config.overwrite:
            az.clear_other_run(ckpt_dir, lc, config.seed)
        result = None
        if config.weights is None or config.iterations > 0:
            evaluator = az.ProgressEvaluator(lc, config.eval_config(), seed=config.seed) if config.eval_every else None
            result = az.train(
                lc, num_iterations=config.iterations, seed=config.seed, directory=ckpt_dir,
                checkpoint_every=config.checkpoint_every, eval_every=config.eval_every, evaluator=evaluator,
                budget_seconds=None if config.budget_minutes is None else 60.0 * config.budget_minutes,
                progress=config.progress, initial_params=initial,
            )
            write_curves(rd, result.history)
        if config.weights is not None:
            params, meta = load_weights(None if config.weights == "shipped" else config.weights)
            network, value_target = NetworkConfig(**meta["network"]), meta["value_target"]
            source = f"weights {config.weights} ({'trained' if meta.get('trained') else 'UNTRAINED placeholder'})"
        else:
            params, source = az.reported_params(result.state)
            network, value_target = lc.network, lc.value_target
        report_lines, rows = [], []
        if config.report:
            agent = AlphaZeroAgent(params, network=network, value_target=value_target, num_simulations=config.agent_simulations)
            raw = AlphaZeroAgent(params, network=network, value_target=value_target, search=False, name="raw_network")
            rows, tournament = report_rows(agent, raw, config, jax.random.key(config.seed + 7919), config.progress)
            report_lines = write_report(rd, rows, tournament, config)
        text = write_readme(rd, config, result, source, report_lines, time.perf_counter() - start, argv)
        if config.ship != "none":
            ship_weights(config, result, params, rows, argv)
    print(text)
    return {"result": result, "rows": rows}


def ship_weights(config: Config, result, params, rows: list, argv) -> pathlib.Path:
    """Writes the reported network with its command, budget and report into ``jaxgames/weights/alphazero_dab/``."""
    from jaxgames.agents.alphazero import WEIGHTS_DIR, save_weights

    trained = config.ship == "trained"
    lc = config.learner_config()
    h = result.history if result is not None else []
    save_weights(
        WEIGHTS_DIR, params, network=lc.network, value_target=lc.value_target, trained=trained,
        note="trained by experiments/alphazero_dab.py" if trained else "UNTRAINED PLACEHOLDER: a smoke run, not a trained network",
        command=command_line("experiments/alphazero_dab.py", argv),
        iterations=len(h),
        training_seconds=az.training_seconds(h),
        budget_minutes=config.budget_minutes,
        board_sizes=list(config.board_sizes),
        device=jax.devices()[0].platform,
        recorded=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        config=dataclasses.asdict(config),
        report=rows,
    )
    return WEIGHTS_DIR


def main(argv=None):
    """Entry point: ``python experiments/alphazero_dab.py [key=value ...]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run(parse_config(Config, argv), argv)


if __name__ == "__main__":
    main()
