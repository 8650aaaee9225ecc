"""The DDPG validity study on Onitama: every actor variant side by side in one compiled run.

Source: A. Dasgupta and Y. Q. Chong, "Mastering the game of Onitama with
Reinforcement Learning" (NUS USP group report, 2021), sections 5-6.1. Trains
every variant of `jaxgames.networks.ddpg` (``num_seeds`` runs each) against
the minimax curriculum with `jaxgames.learners.ddpg` (its docstring has the
design) on the training spine `jaxgames.learners.loop`: compiled chunks of
``chunk`` iterations, an Orbax checkpoint after each (``<out>/checkpoints``),
so rerunning the same command resumes where the last run stopped, bit for
bit, and ``iterations=`` may be raised to go on. Writes into ``out``
(`jaxgames.experiment.ResultsDir`: lock, config check, atomic writes):

* ``curves.csv``: per run and iteration the report's section 6.1 metrics:
  actor loss (and its policy and validity parts), critic loss, valid rate
  (share of the agent's moves whose policy argmax was legal), each with its
  moving average over 50 iterations (one iteration = one agent move in each
  of the run's ``num_envs`` games: the report's "turns"), and the curriculum
  depth;
* ``episodes.csv``: per run and game: the iteration it ended, the result
  (+1/0/-1), the depth it was played at and the win rate's moving average
  over 50 games (the report's "episodes"); only a header if no game ended;
* ``summary.csv``: per run: valid rate over the first and the last 10% of
  iterations, win rate over its last 50 games, depth reached, games played;
* ``training_curves.png``: actor loss, valid rate, win rate (moving averages
  of 50) and depth, one line per run (the report's figures 6.1-6.8 in one);
* ``actors/<variant>_seed<k>/``: each trained actor (`jaxgames.agents.ddpg.save_weights`;
  load with `jaxgames.agents.ddpg.load_agent`) for the tournament;
* ``metrics_upto_<iteration>.npz``: the raw records of each chunk (kept for a resume); ``README.md``.

    python experiments/onitama_ddpg.py                               # default: a few minutes on 2 cores
    python experiments/onitama_ddpg.py iterations=3000               # go on (resumes)
    python experiments/onitama_ddpg.py validity_loss=bce out=results/onitama_ddpg_bce
    python experiments/onitama_ddpg.py conv_features=64,128 hidden=256,256 num_envs=32 iterations=100000  # the report's widths
    python experiments/onitama_ddpg.py --help                        # every setting, its default and meaning

The learner's settings nest under ``learner`` (`DDPGConfig`): ``learner.num_envs=32``,
or ``num_envs=32`` for short; the run's length is ``iterations`` (it sets
``learner.num_iterations``).

The default is small (narrow networks, 8 games per run, depth at most 2) so
that it runs in a few minutes on 2 cores; measured runs and what they show:
``benchmarks/README.md``, "Onitama DDPG validity study".
"""

from __future__ import annotations

import dataclasses
import time

import jax
import numpy as np

from jaxgames import checks, experiment
from jaxgames.agents.ddpg import save_weights
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, command_line, markdown_table
from jaxgames.learners import ddpg as D
from jaxgames.learners import loop

NEUTRAL = NEUTRAL_FIELDS + ("iterations", "learner.num_iterations", "learner.chunk")
"""Settings a resumed run may change (how long it trains and how often it checkpoints: not what an iteration computes)."""

MOVING_AVERAGE = 50
"""The report's smoothing window (section 5.6: "the moving average of the last 50 turns and episodes")."""

EPISODE_FIELDS = ("variant", "seed", "episode", "iteration", "outcome", "depth", "win_rate_ma50")
"""The columns of ``episodes.csv`` (written even when no game ended)."""


_LEARNER = D.DDPGConfig(num_iterations=1500)
"""The experiment's learner defaults: `DDPGConfig`'s, for ``iterations`` iterations."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override; the learner's as ``learner.<name>=`` or ``<name>=``).

    Attributes:
        learner: the learner's settings (`jaxgames.learners.ddpg.DDPGConfig`); its ``num_iterations``
            follows ``iterations``.
        iterations: train up to this many iterations in all (one agent move per game each; a resumed
            run goes on up to it); sets ``learner.num_iterations``.
        seed: PRNG seed.
        out: results folder (checkpoints in ``<out>/checkpoints``).
        overwrite: replace the results and checkpoints of another configuration in ``out``.
        progress: show a progress bar.

    Raises:
        ValueError: ``learner.num_iterations`` set to another value than ``iterations`` (the run's
            length is given once, as ``iterations``).
    """

    learner: D.DDPGConfig = _LEARNER
    iterations: int = _LEARNER.num_iterations
    seed: int = 0
    out: str = "results/onitama_ddpg"
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self):
        if not isinstance(self.learner, D.DDPGConfig):
            raise TypeError(f"learner must be a DDPGConfig; got {type(self.learner).__name__}")
        checks.positive_int("iterations", self.iterations)
        if self.learner.num_iterations not in (self.iterations, _LEARNER.num_iterations):
            raise ValueError(f"learner.num_iterations={self.learner.num_iterations} differs from iterations="
                             f"{self.iterations}: give the run's length as iterations={self.learner.num_iterations}")
        object.__setattr__(self, "learner", dataclasses.replace(self.learner, num_iterations=self.iterations))


def moving_average(x: np.ndarray, n: int = MOVING_AVERAGE) -> np.ndarray:
    """The trailing mean of the last ``min(n, i + 1)`` finite entries at each ``i`` (NaN where none)."""
    x = np.asarray(x, np.float64)
    ok = np.isfinite(x)
    c = np.concatenate([[0.0], np.cumsum(np.where(ok, x, 0.0))])
    k = np.concatenate([[0], np.cumsum(ok)])
    i = np.arange(1, len(x) + 1)
    lo = np.maximum(i - n, 0)
    count = k[i] - k[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, (c[i] - c[lo]) / np.maximum(count, 1), np.nan)


def tables(cfg: D.DDPGConfig, m: D.Metrics) -> tuple[list, list, list]:
    """``(curves, episodes, summary)`` rows from the stacked metrics ``[T, ...]`` of the whole run."""
    T = m.valid_rate.shape[0]
    curves, episodes, summary = [], [], []
    tenth = max(T // 10, 1)
    for v in cfg.variants:
        for s in range(cfg.num_seeds):
            r = D.run_index(cfg, v, s)
            vr, al = m.valid_rate[:, r], m.actor_loss[:, r]
            vr_ma, al_ma = moving_average(vr), moving_average(al)
            for t in range(T):
                curves.append(dict(variant=v, seed=s, iteration=t + 1, valid_rate=float(vr[t]),
                                   valid_rate_ma50=float(vr_ma[t]), actor_loss=float(al[t]),
                                   actor_loss_ma50=float(al_ma[t]), policy_loss=float(m.policy_loss[t, r]),
                                   validity_loss=float(m.validity_loss[t, r]), critic_loss=float(m.critic_loss[t, r]),
                                   depth=int(m.depth[t, r])))
            it, env = np.nonzero(m.ended[:, r])  # games in the order they ended (iteration, then game slot)
            outcome = m.outcome[it, r, env]
            wins_ma = moving_average((outcome == 1).astype(float))
            for k in range(len(it)):
                episodes.append(dict(variant=v, seed=s, episode=k + 1, iteration=int(it[k]) + 1,
                                     outcome=int(outcome[k]), depth=int(m.depth[it[k], r]),
                                     win_rate_ma50=float(wins_ma[k])))
            last = outcome[-MOVING_AVERAGE:]
            summary.append(dict(variant=v, seed=s, valid_rate_first10pct=float(np.nanmean(vr[:tenth])),
                                valid_rate_last10pct=float(np.nanmean(vr[-tenth:])),
                                win_rate_last50=float(np.mean(last == 1)) if len(last) else float("nan"),
                                games=int(len(it)), depth_reached=int(m.depth[-1, r])))
    return curves, episodes, summary


def plot(cfg: D.DDPGConfig, curves: list, episodes: list):
    """The report's figure 6.1-6.8 metrics, one line per run, in one figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
    for v in cfg.variants:
        for s in range(cfg.num_seeds):
            label = v if cfg.num_seeds == 1 else f"{v} #{s}"
            rows = [c for c in curves if c["variant"] == v and c["seed"] == s]
            it = [c["iteration"] for c in rows]
            axes[0, 0].plot(it, [c["actor_loss_ma50"] for c in rows], label=label, lw=1)
            axes[0, 1].plot(it, [c["valid_rate_ma50"] for c in rows], label=label, lw=1)
            axes[1, 1].plot(it, [c["depth"] for c in rows], label=label, lw=1)
            eps = [e for e in episodes if e["variant"] == v and e["seed"] == s]
            axes[1, 0].plot([e["episode"] for e in eps], [e["win_rate_ma50"] for e in eps], label=label, lw=1)
    titles = [("actor loss (MA 50 iterations)", "iteration"), ("valid rate (MA 50 iterations)", "iteration"),
              ("win rate (MA 50 games)", "game"), ("minimax depth", "iteration")]
    for ax, (title, xlabel) in zip(axes.flat, titles):
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0, 1].set_ylim(0, 1)
    axes[1, 0].set_ylim(0, 1)
    axes[1, 1].set_yticks(range(cfg.min_depth, cfg.max_depth + 1))
    axes[1, 1].set_ylim(cfg.min_depth - 0.5, cfg.max_depth + 0.5)
    axes[0, 1].legend(fontsize=7)
    fig.suptitle(f"DDPG validity study (Dasgupta and Chong 2021, section 6.1): {cfg.num_envs} games per run, "
                 f"validity loss {cfg.validity_loss}")
    fig.tight_layout()
    return fig


def run(config: Config, argv=()) -> dict:
    """Trains (or resumes), writes every output; returns ``{"summary": rows, "seconds": float}``."""
    cfg = config.learner
    with experiment.up_front():  # every check before the folder is claimed
        learner = D.DDPGLearner(cfg)
    start = time.time()
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:
        def store(done, metrics, result):  # before the chunk's checkpoint: every checkpointed chunk has its records
            rd.save_npz(f"metrics_upto_{done:09d}.npz", jax.tree.map(np.asarray, metrics["records"]._asdict()))

        state = loop.train(learner, num_iterations=config.iterations, key=jax.random.key(config.seed),
                           checkpoint_dir=rd.path / "checkpoints", callback=store, progress=config.progress,
                           progress_keys=("valid_rate", "actor_loss", "depth"), overwrite=config.overwrite,
                           neutral=("num_iterations", "chunk")).state
        # every chunk's records, this call's and earlier calls' (up to the state's iteration)
        upto = int(state.iteration)
        files = sorted(rd.path.glob("metrics_upto_*.npz"))
        pieces = []
        for f in files:
            n = int(f.stem.split("_")[-1])
            if n <= upto:
                piece = rd.load_npz(f.name)
                if piece is not None:
                    pieces.append((n, piece))
        pieces.sort(key=lambda p: p[0])
        merged = {k: np.concatenate([p[k] for _, p in pieces]) for k in D.Metrics._fields}
        metrics = D.Metrics(**merged)
        if metrics.valid_rate.shape[0] != upto:
            raise RuntimeError(f"the stored records cover {metrics.valid_rate.shape[0]} iterations, the checkpoint "
                               f"{upto}: rerun with overwrite=true")
        curves, episodes, summary = tables(cfg, metrics)
        rd.write_csv("curves.csv", curves)
        rd.write_csv("episodes.csv", episodes, fieldnames=EPISODE_FIELDS)
        rd.write_csv("summary.csv", summary)
        rd.save_figure(plot(cfg, curves, episodes), "training_curves.png", dpi=110)
        command = command_line("experiments/onitama_ddpg.py", argv)
        network = dict(conv_features=list(cfg.conv_features), card_features=cfg.card_features,
                       hidden=list(cfg.hidden), norm=cfg.norm)
        for row in summary:
            params = D.actor_params(cfg, state, row["variant"], row["seed"])
            save_weights(rd.path / "actors" / f"{row['variant']}_seed{row['seed']}", row["variant"], params, network,
                         {"command": command, "iterations": upto, "agent_moves": int(metrics.moves[:, D.run_index(
                             cfg, row["variant"], row["seed"])].sum()), "depth_reached": row["depth_reached"],
                          "validity_loss": cfg.validity_loss, "trained": True})
        seconds = time.time() - start
        lines = [
            "# DDPG validity study on Onitama", "",
            "Source: Dasgupta & Chong, \"Mastering the game of Onitama with Reinforcement Learning\" "
            "(NUS USP group report, 2021), sections 5-6.1.", "",
            f"Command: `{command}`  ", f"Iterations: {upto} ({cfg.num_envs} games per run; this call: {seconds:.0f} s)",
            "", "Open `training_curves.png` first; `summary.csv`:", "",
            markdown_table(summary, ["variant", "seed", "valid_rate_first10pct", "valid_rate_last10pct",
                                     "win_rate_last50", "games", "depth_reached"],
                           formats={"valid_rate_first10pct": ".3f", "valid_rate_last10pct": ".3f",
                                    "win_rate_last50": ".2f"},
                           headers={"valid_rate_first10pct": "valid rate, first 10%",
                                    "valid_rate_last10pct": "valid rate, last 10%",
                                    "win_rate_last50": "win rate, last 50 games", "depth_reached": "depth"}),
            "", "Trained actors: `actors/<variant>_seed<k>/` (`jaxgames.agents.ddpg.load_agent`).", "",
        ]
        rd.write_text("README.md", "\n".join(lines))
    return {"summary": summary, "seconds": seconds}


def main(argv=None):
    """Entry point: ``python experiments/onitama_ddpg.py [key=value ...]`` (``--help`` lists every setting)."""
    result = experiment.main(Config, run, argv, prog="experiments/onitama_ddpg.py", summary=__doc__.splitlines()[0])
    for r in result["summary"]:
        print(f"{r['variant']:30s} seed {r['seed']}: valid rate {r['valid_rate_first10pct']:.3f} -> "
              f"{r['valid_rate_last10pct']:.3f}, win rate (last 50) {r['win_rate_last50']:.2f}, "
              f"depth {r['depth_reached']}, games {r['games']}")
    print(f"{result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
