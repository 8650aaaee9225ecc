"""AlphaZero on Onitama: self-play and tree search in place of a minimax curriculum.

Sources: Silver et al. 2018 (AlphaZero, Science 362:1140) and Danihelka et al.
2022 (Gumbel MuZero, ICLR), as implemented by `jaxgames.learners.alphazero`
with ``game="onitama"`` (`OnitamaAdapter`: the 1250 canonical actions, the
left-right mirror with mirrored cards as augmentation, the outcome +1/-1/0 as
value target, a draw at ``max_turns``); Dasgupta & Chong, "Mastering the game
of Onitama with Reinforcement Learning" (NUS USP group report, 2021), sections
6-7 (the opponents and the 200-turn limit).

The run: ``loop.train(AlphaZeroLearner(config.learner), ...)`` with Orbax
checkpoints in ``<out>/checkpoints`` (rerunning a command resumes it; raise
``iterations=`` or ``budget_minutes=`` to go on) and, every ``eval_every``
iterations, `jaxgames.evaluation.alphazero.ArenaEvaluator`: ``eval_games``
games (seats alternating, random deals) against each of ``eval_opponents``
and against the previous best (the gate). Then, unless ``report=false``, the
report on the reported network (the gate's last best, else the latest
parameters) or on ``weights=`` (``shipped`` or a weights folder): the target,
**wins >= 60% of 400 games against alpha-beta depth 2** (``final_games``,
``final_opponent``), the same against ``report_opponents``, each with its
95% Wilson interval, and seconds per move (B = 1).

Outputs in ``out`` (read ``README.md`` first): ``curves.csv``/``.png``,
``report.csv``/``.md``/``.png``, ``config.json``, ``checkpoints/``.
``ship=trained`` writes the reported network with its command and report to
``jaxgames/weights/alphazero_onitama/`` (refused for fewer than
``min_ship_iterations`` iterations); results of the shipped network are in
that folder's README.md.

    python experiments/alphazero_onitama.py                   # small CPU run (a few minutes on 2 cores)
    python experiments/alphazero_onitama.py iterations=20     # go on to iteration 20 (resumes)
    python experiments/alphazero_onitama.py --help            # every setting, its default and meaning

Learner settings take dotted keys (``learner.num_envs=128``) or, where the last
part is unique, the flat key (``num_envs=128``, ``channels=48``). The report's
settings and the run's length may change between calls on one folder
(`NEUTRAL`); every other setting must match. Bad settings fail before anything
is written.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
from typing import Optional

import jax
import numpy as np

from jaxgames import checks, experiment
from jaxgames.agents.alphazero import WEIGHTS_DIRS, AlphaZeroAgent, load_weights, save_weights, seconds_per_move
from jaxgames.agents.onitama import AGENTS
from jaxgames.evaluation import arena, report
from jaxgames.evaluation.alphazero import ArenaEvaluator
from jaxgames.evaluation.report import wilson_row
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, command_line
from jaxgames.games.onitama import Onitama
from jaxgames.learners import alphazero as az
from jaxgames.learners import loop
from jaxgames.networks.onitama import NetworkConfig

SHIP = ("none", "trained")
OPPONENTS = ("random", "minimax1", "minimax2", "minimax3", "alphabeta1", "alphabeta2", "alphabeta3", "alphabeta4")
"""Opponent names (`jaxgames.agents.onitama.AGENTS`)."""
REPORT_FIELDS = ("report", "weights", "agent_simulations", "final_games", "final_opponent", "report_opponents",
                 "report_games", "ship", "min_ship_iterations")
NEUTRAL = NEUTRAL_FIELDS + ("iterations", "budget_minutes", "checkpoint_every") + REPORT_FIELDS
"""Settings a resumed run may change (how long it trains, and the final report)."""
CITATION = (
    "Silver et al., 'A general reinforcement learning algorithm that masters chess, shogi, and Go through self-play' "
    "(Science 362:1140, 2018); Danihelka et al., 'Policy improvement by planning with Gumbel' (ICLR 2022); "
    "Dasgupta & Chong, 'Mastering the game of Onitama with Reinforcement Learning' (NUS USP group report, 2021), "
    "sections 6-7"
)
"""The sources in full, for the top of the results README."""


def default_learner() -> az.AlphaZeroConfig:
    """The learner of a small CPU run: 32 games of 32 moves per iteration, 16 simulations per move."""
    return az.AlphaZeroConfig(game="onitama", network=NetworkConfig(32, 3, 4, 64), num_envs=32, num_simulations=16,
                              max_num_considered_actions=16, buffer_capacity=1 << 14, selfplay_steps=32)


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override; ``--help`` lists them).

    Attributes:
        learner: the learner (`jaxgames.learners.alphazero.AlphaZeroConfig` with game onitama; its network
            `jaxgames.networks.onitama.NetworkConfig`).
        eval_every: iterations between evaluations during training (0: none, and so no gate).
        eval_games: arena games per opponent during training.
        eval_simulations: search simulations per move of the agents evaluated during training.
        gate_win_rate: score against the previous best from which the current network becomes the best.
        eval_opponents: fixed opponents during training, among random, minimax1-3, alphabeta1-4.
        iterations: stop after this many iterations in all (a resumed run goes on up to it; 0: no training).
        budget_minutes: wall-clock minutes of training in this call (none: no budget).
        seed: PRNG seed of the run (self-play, network, evaluation).
        checkpoint_every: iterations between checkpoints.
        report: measure the target after training.
        weights: shipped or a weights folder to report on instead of the run's network.
        agent_simulations: the reported agent's simulations per move.
        final_games: games of the target match (seats alternating, random deals).
        final_opponent: opponent of the target match (60% wins against alphabeta2).
        report_opponents: further opponents of the report.
        report_games: games against each further opponent.
        ship: none or trained: write the reported network to jaxgames/weights/alphazero_onitama/.
        min_ship_iterations: fewest iterations of a run that ship=trained accepts.
        out: results folder.
        overwrite: replace another configuration's results in out.
        progress: show progress bars.
    """

    learner: az.AlphaZeroConfig = dataclasses.field(default_factory=default_learner)
    eval_every: int = 4
    eval_games: int = 16
    eval_simulations: int = 16
    gate_win_rate: float = 0.55
    eval_opponents: tuple[str, ...] = ("random", "minimax1", "minimax2")
    iterations: int = 8
    budget_minutes: Optional[float] = None
    seed: int = 0
    checkpoint_every: int = 2
    report: bool = True
    weights: Optional[str] = None
    agent_simulations: int = 32
    final_games: int = 20
    final_opponent: str = "alphabeta2"
    report_opponents: tuple[str, ...] = ("random", "minimax1")
    report_games: int = 20
    ship: str = "none"
    min_ship_iterations: int = 50
    out: str = "results/alphazero_onitama"
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self):
        if self.learner.game != "onitama":
            raise ValueError(f"learner.game must be onitama here; got {self.learner.game!r} "
                             "(experiments/alphazero_dab.py trains Dots-and-Boxes)")
        for name in ("iterations", "eval_every", "final_games", "report_games", "min_ship_iterations"):
            checks.non_negative_int(name, getattr(self, name))
        for name in ("checkpoint_every", "agent_simulations", "eval_games", "eval_simulations"):
            checks.positive_int(name, getattr(self, name))
        if self.budget_minutes is not None:
            checks.positive_float("budget_minutes", self.budget_minutes)
        checks.probability("gate_win_rate", self.gate_win_rate)
        for name in ("eval_opponents", "report_opponents"):
            for o in getattr(self, name):
                if o not in OPPONENTS:
                    raise ValueError(f"{name}: unknown opponent {o!r}; choose from {OPPONENTS}")
        if self.final_opponent not in OPPONENTS:
            raise ValueError(f"final_opponent: unknown opponent {self.final_opponent!r}; choose from {OPPONENTS}")
        checks.choice("ship", self.ship, SHIP)
        if self.weights is not None and self.weights != "shipped" and not pathlib.Path(self.weights).is_dir():
            raise ValueError(f"weights must be 'shipped' or a weights folder; {self.weights!r} is not a folder")
        if self.ship != "none" and self.weights is not None:
            raise ValueError("ship= writes the run's network; it cannot be combined with weights=")
        if self.ship == "trained" and self.iterations < self.min_ship_iterations:
            raise ValueError(f"ship=trained needs iterations >= min_ship_iterations={self.min_ship_iterations}; "
                             f"got iterations={self.iterations} (a smoke run is not a trained network)")

    def env(self) -> Onitama:
        """The arena's game: Onitama, canonical actions, random deals, the run's turn limit."""
        return Onitama(max_turns=self.learner.max_turns)

    def evaluator(self) -> ArenaEvaluator:
        """The evaluation during training (its keys: ``seed`` and the iteration, so resume is exact)."""
        return ArenaEvaluator(
            self.learner, self.env(), {o: AGENTS[o]() for o in self.eval_opponents},
            num_games=self.eval_games, num_simulations=self.eval_simulations, gate_win_rate=self.gate_win_rate,
            seed=self.seed,
        )


# ----------------------------------------------------------------------------- measurements
def match_row(env, agent, opponent, games: int, key, *, target=None) -> dict:
    """``games`` arena games, seats alternating: the agent's win rate with its Wilson interval."""
    res = arena.play_match(env, agent, opponent, games, key, max_steps=env.max_turns + 1)
    return wilson_row(
        f"wins vs {opponent.name}", res.wins, games, agent=agent.name, opponent=opponent.name, target=target,
        losses=res.losses, draws=res.draws, timeouts=res.timeouts, mean_length=float(np.mean(res.length)),
        note="random deals, seats alternating (the first mover is the side card's colour)",
    )


def report_rows(agent, config: Config, key: jax.Array) -> list[dict]:
    """The target row (``final_games`` against ``final_opponent``), the other opponents, seconds per move."""
    env = config.env()
    keys = jax.random.split(key, 2 + len(config.report_opponents))
    rows = [{"measure": "seconds per move (B=1)", "agent": agent.name, "rate": seconds_per_move(agent, env),
             "note": f"median, {config.agent_simulations} simulations"}]
    if config.final_games:
        rows.append(match_row(env, agent, AGENTS[config.final_opponent](), config.final_games, keys[0], target=0.6))
    if config.report_games:
        for i, name in enumerate(config.report_opponents):
            rows.append(match_row(env, agent, AGENTS[name](), config.report_games, keys[2 + i]))
    return rows


# ----------------------------------------------------------------------------- figures and tables
def write_curves(rd: ResultsDir, history: list) -> None:
    """``curves.csv`` and ``curves.png``: losses, value error, policy accuracy, win rates per iteration."""

    def draw(axes, it, names):
        ax = axes[0, 1]
        ax.plot(it, [r["value_loss"] for r in history], label="value squared error")
        ax.plot(it, [r["policy_accuracy"] for r in history], label="policy accuracy (argmax = target's)")
        ax.set_title("Value error, policy accuracy")
        ax = axes[0, 2]
        ev = [r for r in history if any(k.startswith("win_rate_vs_") for k in r)]
        for k in [k for k in names if k.startswith("win_rate_vs_")]:
            ax.plot([r["iteration"] for r in ev], [r.get(k, np.nan) for r in ev], "o-", label=k.replace("win_rate_vs_", "vs "))
        ax.axhline(0.6, color="k", ls=":", lw=1, label="60%")
        ax.set_ylim(0, 1)
        ax.set_title("Win rate (arena, seats alternating)")

    report.write_curves(rd, history, draw, grid=(1, 3), size=(15, 3.8))


def write_readme(rd, config, result, source, report_lines, seconds, argv) -> str:
    """``README.md`` (`jaxgames.evaluation.report.write_run_readme`); returns its text."""
    lc = config.learner
    training = None if result is None else (
        f"Training: network {lc.network}; {lc.num_envs} self-play games in parallel, {lc.selfplay_steps} moves each per "
        f"iteration, {lc.num_simulations} Gumbel simulations per move; {lc.updates_per_iteration} AdamW steps of "
        f"{lc.batch_size} positions per iteration (mirror augmentation: {lc.augment}). {az.length_text(result)}"
        ". Curves: [curves.csv](curves.csv), [curves.png](curves.png).")
    return report.write_run_readme(
        rd, title="AlphaZero-lite on Onitama", command=command_line("experiments/alphazero_onitama.py", argv),
        seconds=seconds, training=training, source=source, report_heading="Report", report_lines=report_lines,
        citation=CITATION,
    )


# ----------------------------------------------------------------------------- run
def run(config: Config, argv=()) -> dict:
    """Trains (resuming), reports, writes every output into ``config.out``; returns a summary dict.

    Raises:
        jaxgames.experiment.ResultsDirLocked, ConfigMismatch: see `jaxgames.experiment.ResultsDir`.
        jaxgames.experiment.SettingError: settings that do not fit in memory, weights that cannot be read, are
            not finite, not Onitama's or do not fit their network (before anything is written).
        jaxgames.learners.loop.NonFiniteLoss: training diverged (the last good checkpoint is kept).
    """
    with experiment.up_front():  # every check before the folder is claimed
        learner = az.AlphaZeroLearner(config.learner)  # refuses settings that do not fit in memory
        given = None
        if config.weights is not None:
            given = load_weights(None if config.weights == "shipped" else config.weights, game="onitama")
            if given[1]["game"] != "onitama":
                raise ValueError(f"weights {config.weights!r} are for {given[1]['game']}, not onitama")
    start = time.perf_counter()
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:
        result = None
        if config.weights is None or config.iterations > 0:
            # name "": the evaluation's metrics keep their plain names in curves.csv (win_rate_vs_random, ...)
            evaluations = [loop.Evaluation(config.evaluator(), every=config.eval_every)] if config.eval_every else []
            result = loop.train(
                learner, num_iterations=config.iterations, key=jax.random.key(config.seed),
                checkpoint_dir=pathlib.Path(config.out) / "checkpoints", checkpoint_every=config.checkpoint_every,
                budget_minutes=config.budget_minutes, evaluations=evaluations, progress=config.progress,
                progress_keys=("loss", "value_loss"), overwrite=config.overwrite,
            )
            write_curves(rd, result.history)
        if given is not None:
            params, meta = given
            network = NetworkConfig(**meta["network"])
            source = f"weights {config.weights} ({'trained' if meta.get('trained') else 'UNTRAINED placeholder'})"
        else:
            params, source = az.reported_params(result.state)
            network = config.learner.network
        report_lines, rows = [], []
        if config.report:
            agent = AlphaZeroAgent(params, network=network, num_simulations=config.agent_simulations)
            rows = report_rows(agent, config, jax.random.key(config.seed + 7919))
            report_lines = report.write_targets(rd, rows)
        text = write_readme(rd, config, result, source, report_lines, time.perf_counter() - start, argv)
        if config.ship == "trained":
            ship_weights(config, result, params, rows, argv)
    print(text)
    return {"result": result, "rows": rows}


def ship_weights(config: Config, result, params, rows: list, argv) -> pathlib.Path:
    """Writes the reported network with its command, budget and report into ``jaxgames/weights/alphazero_onitama/``."""
    lc = config.learner
    h = result.history if result is not None else []
    save_weights(
        WEIGHTS_DIRS["onitama"], params, network=lc.network, value_target=lc.value_target, trained=True,
        note="trained by experiments/alphazero_onitama.py",
        command=command_line("experiments/alphazero_onitama.py", argv),
        iterations=len(h),
        training_seconds=az.training_seconds(h),
        budget_minutes=config.budget_minutes,
        device=jax.devices()[0].platform,
        recorded=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        config=dataclasses.asdict(config),
        report=rows,
    )
    return WEIGHTS_DIRS["onitama"]


def main(argv=None):
    """Entry point: ``python experiments/alphazero_onitama.py [key=value ...]`` (``--help`` lists every setting)."""
    return experiment.main(Config, run, argv, prog="experiments/alphazero_onitama.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
