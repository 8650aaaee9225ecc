"""AlphaZero-lite on Onitama (issue 13; seed 001 sections 6-7): self-play and MCTS instead of a minimax curriculum.

Trains with the Dots-and-Boxes learner's code, `jaxgames.learners.alphazero`
with ``game="onitama"`` (its `OnitamaAdapter`: Gumbel self-play on random
deals in the canonical 1250-action space -> device replay -> AdamW with the
left-right mirror (mirrored cards) as augmentation -> the arena gate against
the previous best), resumable from ``<out>/checkpoints`` (Orbax): rerunning
the same command continues where the last run stopped (``iterations=`` or
``budget_minutes=`` may be raised to go on). Every ``eval_every`` iterations
the current network (deterministic search, ``eval_simulations``) plays
``eval_games`` games against each of ``eval_opponents`` (random,
`MinimaxAgent` depth 1-3, `AlphaBetaAgent` depth 1-4; seats alternating) and
the previous best (the gate). The value target is the outcome (+1/-1/0 from
the mover's side; a draw at ``max_turns``).

Then, unless ``report=false``, the final report on the reported network (the
last best of the gate; the latest parameters if the gate never promoted) or
on ``weights=`` (``shipped`` or a weights folder): the issue's target,
**AlphaZero wins >= 60% of 400 games against alpha-beta depth 2** over random
deals, seats alternating (``final_games``, ``final_opponent``), and the same
against ``report_opponents``, each win rate with its 95% Wilson interval;
the agent's seconds per move (B = 1).

Outputs in ``out``: ``curves.csv``/``curves.png`` (losses, value error,
policy accuracy, win rates during training), ``report.csv``/``report.md``/
``report.png``, ``README.md`` (read it first), ``config.json``,
``checkpoints/``. With ``ship=trained`` the reported network goes to
``jaxgames/weights/alphazero_onitama/`` with the command, budget and report
(never the placeholder of a smoke run: ``ship=trained`` refuses a run of
fewer than ``min_ship_iterations`` iterations).

    python experiments/alphazero_onitama.py                   # small CPU run: a few minutes on 2 cores
    python experiments/alphazero_onitama.py iterations=20     # go on to iteration 20 (resumes)
    # the long run (hours; see jaxgames/weights/alphazero_onitama/README.md):
    python experiments/alphazero_onitama.py num_envs=128 num_simulations=32 max_num_considered_actions=16 \\
        channels=64 num_blocks=4 updates_per_iteration=32 buffer_capacity=32768 iterations=400 budget_minutes=480 \\
        eval_every=20 eval_games=64 final_games=400 out=results/alphazero_onitama_long ship=trained

``iterations=0`` (or a count already reached) trains nothing. Report
settings and the run's length may change between calls on one folder
(`NEUTRAL`); every other setting must match (`jaxgames.experiment.ResultsDir`).
Bad settings fail before anything is written.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time
from typing import Optional

import jax
import numpy as np

from jaxgames.evaluation.report import wilson_row
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, command_line, parse_config
from jaxgames.learners import alphazero as az
from jaxgames.networks.onitama import NetworkConfig

SHIP = ("none", "trained")
OPPONENTS = ("random", "minimax1", "minimax2", "minimax3", "alphabeta1", "alphabeta2", "alphabeta3", "alphabeta4")
"""Opponent names (`jaxgames.agents.onitama.AGENTS`)."""
REPORT_FIELDS = ("report", "weights", "agent_simulations", "final_games", "final_opponent", "report_opponents",
                 "report_games", "ship", "min_ship_iterations")
NEUTRAL = NEUTRAL_FIELDS + ("iterations", "budget_minutes", "checkpoint_every") + REPORT_FIELDS
"""Settings a resumed run may change (how long it trains, and the final report)."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Learner (`jaxgames.learners.alphazero.AlphaZeroConfig` with ``game="onitama"``; small CPU defaults):
        channels, num_blocks, value_channels, value_hidden: network widths (`jaxgames.networks.onitama.NetworkConfig`).
        num_envs, num_simulations, max_num_considered_actions, gumbel_scale, policy_target,
        buffer_capacity, batch_size, updates_per_iteration, learning_rate, weight_decay,
        max_grad_norm, value_loss_weight, augment, max_turns, selfplay_steps: see `AlphaZeroConfig`.

    Evaluation during training (`jaxgames.learners.alphazero.ArenaEvaluator`):
        eval_every: iterations between evaluations (0: none; then no gate).
        eval_games, eval_simulations, gate_win_rate, eval_opponents (names of `OPPONENTS`).

    Run:
        iterations, budget_minutes, seed, checkpoint_every.

    Report (module docstring):
        report, weights, agent_simulations, final_games, final_opponent, report_opponents,
        report_games, ship, min_ship_iterations; out, overwrite, progress.
    """

    channels: int = 32
    num_blocks: int = 3
    value_channels: int = 4
    value_hidden: int = 64
    num_envs: int = 32
    num_simulations: int = 16
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    policy_target: str = "gumbel"
    buffer_capacity: int = 1 << 14
    batch_size: int = 128
    updates_per_iteration: int = 8
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    value_loss_weight: float = 1.0
    augment: bool = True
    max_turns: int = 200
    selfplay_steps: int = 32
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
        self.learner_config()  # every learner setting checked (ValueError naming it)
        if isinstance(self.iterations, bool) or self.iterations < 0:
            raise ValueError(f"iterations must be an int >= 0; got {self.iterations!r}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0; got {self.eval_every}")
        if self.budget_minutes is not None and not self.budget_minutes > 0:
            raise ValueError(f"budget_minutes must be > 0 or none; got {self.budget_minutes!r}")
        for name in ("checkpoint_every", "agent_simulations", "eval_games", "eval_simulations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        for name in ("final_games", "report_games", "min_ship_iterations"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0; got {getattr(self, name)}")
        if not 0.0 <= self.gate_win_rate <= 1.0:
            raise ValueError(f"gate_win_rate must be in [0, 1]; got {self.gate_win_rate!r}")
        for name in ("eval_opponents", "report_opponents"):
            for o in getattr(self, name):
                if o not in OPPONENTS:
                    raise ValueError(f"{name}: unknown opponent {o!r}; choose from {OPPONENTS}")
        if self.final_opponent not in OPPONENTS:
            raise ValueError(f"final_opponent: unknown opponent {self.final_opponent!r}; choose from {OPPONENTS}")
        if self.ship not in SHIP:
            raise ValueError(f"ship must be one of {SHIP}; got {self.ship!r}")
        if self.weights is not None and self.weights != "shipped" and not pathlib.Path(self.weights).is_dir():
            raise ValueError(f"weights must be 'shipped' or a weights folder; {self.weights!r} is not a folder")
        if self.ship != "none" and self.weights is not None:
            raise ValueError("ship= writes the run's network; it cannot be combined with weights=")
        if self.ship == "trained" and self.iterations < self.min_ship_iterations:
            raise ValueError(f"ship=trained needs iterations >= min_ship_iterations={self.min_ship_iterations}; "
                             f"got iterations={self.iterations} (a smoke run is not a trained network)")

    def learner_config(self) -> az.AlphaZeroConfig:
        """The `AlphaZeroConfig` of these settings."""
        return az.AlphaZeroConfig(
            game="onitama",
            network=NetworkConfig(self.channels, self.num_blocks, self.value_channels, self.value_hidden),
            num_envs=self.num_envs, num_simulations=self.num_simulations,
            max_num_considered_actions=self.max_num_considered_actions, gumbel_scale=self.gumbel_scale,
            policy_target=self.policy_target, buffer_capacity=self.buffer_capacity,
            batch_size=self.batch_size, updates_per_iteration=self.updates_per_iteration,
            learning_rate=self.learning_rate, weight_decay=self.weight_decay, max_grad_norm=self.max_grad_norm,
            value_loss_weight=self.value_loss_weight, augment=self.augment, max_turns=self.max_turns,
            selfplay_steps=self.selfplay_steps,
        )

    def env(self):
        """The arena's game: Onitama, canonical actions, random deals, the run's turn limit."""
        from jaxgames.games.onitama import Onitama

        return Onitama(max_turns=self.max_turns)

    def evaluator(self) -> az.ArenaEvaluator:
        """The evaluation during training."""
        from jaxgames.agents.onitama import AGENTS

        return az.ArenaEvaluator(
            self.learner_config(), self.env(), {o: AGENTS[o]() for o in self.eval_opponents},
            num_games=self.eval_games, num_simulations=self.eval_simulations, gate_win_rate=self.gate_win_rate,
            seed=self.seed,
        )


# ----------------------------------------------------------------------------- measurements
def match_row(env, agent, opponent, games: int, key, *, target=None) -> dict:
    """``games`` arena games, seats alternating: the agent's win rate with its Wilson interval."""
    from jaxgames.evaluation import arena

    res = arena.play_match(env, agent, opponent, games, key, max_steps=env.max_turns + 1)
    return wilson_row(
        f"wins vs {opponent.name}", res.wins, games, agent=agent.name, opponent=opponent.name, target=target,
        losses=res.losses, draws=res.draws, timeouts=res.timeouts, mean_length=float(np.mean(res.length)),
        note="random deals, seats alternating (the first mover is the side card's colour)",
    )


def report_rows(agent, config: Config, key: jax.Array) -> list[dict]:
    """The target row (``final_games`` against ``final_opponent``), the other opponents, seconds per move."""
    from jaxgames.agents.alphazero import seconds_per_move
    from jaxgames.agents.onitama import AGENTS

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
    from jaxgames.evaluation import report

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


def write_report(rd: ResultsDir, rows: list) -> list[str]:
    """``report.csv``, ``report.md``, ``report.png``; returns the Markdown lines of the report."""
    from jaxgames.evaluation import report

    return report.write_targets(rd, rows)


def write_readme(rd, config, result, source, report_lines, seconds, argv) -> str:
    """``README.md`` (`jaxgames.evaluation.report.write_run_readme`); returns its text."""
    from jaxgames.evaluation import report

    lc = config.learner_config()
    training = None if result is None else (
        f"Training: network {lc.network}; {lc.num_envs} self-play games in parallel, {lc.selfplay_steps} moves each per "
        f"iteration, {lc.num_simulations} Gumbel simulations per move; {lc.updates_per_iteration} AdamW steps of "
        f"{lc.batch_size} positions per iteration (mirror augmentation: {lc.augment}). {result.length_text()}"
        ". Curves: [curves.csv](curves.csv), [curves.png](curves.png).")
    return report.write_run_readme(
        rd, title="AlphaZero-lite on Onitama (issue 13)", command=command_line("experiments/alphazero_onitama.py", argv),
        seconds=seconds, training=training, source=source, report_heading="Report", report_lines=report_lines,
    )


# ----------------------------------------------------------------------------- run
def run(config: Config, argv=()) -> dict:
    """Trains (resuming), reports, writes every output into ``config.out``; returns a summary dict.

    Raises:
        jaxgames.experiment.ResultsDirLocked, ConfigMismatch: see `jaxgames.experiment.ResultsDir`.
        ValueError: weights that are not Onitama's or do not fit their network.
    """
    from jaxgames.agents.alphazero import AlphaZeroAgent, load_weights

    lc = config.learner_config()
    ckpt_dir = pathlib.Path(config.out) / "checkpoints"
    start = time.perf_counter()
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:
        if config.overwrite:
            az.clear_other_run(ckpt_dir, lc, config.seed)
        result = None
        if config.weights is None or config.iterations > 0:
            result = az.train(
                lc, num_iterations=config.iterations, seed=config.seed, directory=ckpt_dir,
                checkpoint_every=config.checkpoint_every, eval_every=config.eval_every,
                evaluator=config.evaluator() if config.eval_every else None,
                budget_seconds=None if config.budget_minutes is None else 60.0 * config.budget_minutes,
                progress=config.progress,
            )
            write_curves(rd, result.history)
        if config.weights is not None:
            params, meta = load_weights(None if config.weights == "shipped" else config.weights, game="onitama")
            if meta["game"] != "onitama":
                raise ValueError(f"weights {config.weights!r} are for {meta['game']}, not onitama")
            network = NetworkConfig(**meta["network"])
            source = f"weights {config.weights} ({'trained' if meta.get('trained') else 'UNTRAINED placeholder'})"
        else:
            params, source = az.reported_params(result.state)
            network = lc.network
        report_lines, rows = [], []
        if config.report:
            agent = AlphaZeroAgent(params, network=network, num_simulations=config.agent_simulations)
            rows = report_rows(agent, config, jax.random.key(config.seed + 7919))
            report_lines = write_report(rd, rows)
        text = write_readme(rd, config, result, source, report_lines, time.perf_counter() - start, argv)
        if config.ship == "trained":
            ship_weights(config, result, params, rows, argv)
    print(text)
    return {"result": result, "rows": rows}


def ship_weights(config: Config, result, params, rows: list, argv) -> pathlib.Path:
    """Writes the reported network with its command, budget and report into ``jaxgames/weights/alphazero_onitama/``."""
    from jaxgames.agents.alphazero import WEIGHTS_DIRS, save_weights

    lc = config.learner_config()
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
    """Entry point: ``python experiments/alphazero_onitama.py [key=value ...]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run(parse_config(Config, argv), argv)


if __name__ == "__main__":
    main()
