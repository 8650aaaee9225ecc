"""The seed's DDPG validity study on Onitama (seed 001, sections 5-6.1): all actor variants side by side, one compiled run.

Trains every variant of `jaxgames.networks.ddpg` (``num_seeds`` runs each)
against the minimax curriculum with `jaxgames.learners.ddpg` (read its
docstring for the design: one ``lax.scan`` over all runs, the opponent's
depth chosen per run by ``lax.switch`` inside ``lax.map``), in compiled chunks
of ``chunk`` iterations with an Orbax checkpoint after each
(``<out>/checkpoints``): rerunning the same command resumes where the last
run stopped, bit for bit, and ``iterations=`` may be raised to go on. Writes
into ``out`` (`jaxgames.experiment.ResultsDir`: lock, config check, atomic
writes):

* ``curves.csv``: per run and iteration the seed's section 6.1 metrics:
  actor loss (and its policy and validity parts), critic loss, valid rate
  (share of the agent's moves whose policy argmax was legal), each with its
  moving average over 50 iterations (one iteration = one agent move in each
  of the run's ``num_envs`` games: the seed's "turns"), and the curriculum
  depth;
* ``episodes.csv``: per run and game: the iteration it ended, the result
  (+1/0/-1), the depth it was played at and the win rate's moving average
  over 50 games (the seed's "episodes");
* ``summary.csv``: per run: valid rate over the first and the last 10% of
  iterations, win rate over its last 50 games, depth reached, games played;
* ``training_curves.png``: actor loss, valid rate, win rate (moving averages
  of 50) and depth, one line per run (the seed's figures 6.1-6.8 in one);
* ``actors/<variant>_seed<k>/``: each trained actor (`jaxgames.agents.ddpg.save_weights`;
  load with `jaxgames.agents.ddpg.load_agent`) for the tournament;
* ``metrics_upto_<iteration>.npz``: the raw records of each chunk (kept for a resume); ``README.md``.

    python experiments/onitama_ddpg.py                               # default: a few minutes on 2 cores
    python experiments/onitama_ddpg.py iterations=3000               # go on (resumes)
    python experiments/onitama_ddpg.py validity_loss=bce out=results/onitama_ddpg_bce
    python experiments/onitama_ddpg.py conv_features=64,128 hidden=256,256 num_envs=32 iterations=100000  # the seed's widths

**Measured (does it learn?).** The default config (8 variants x 1 seed,
8 games per run, 1500 iterations = 12,000 agent moves per variant, about
1,500-1,850 games each, all against depth 1: no run reached 60 wins in 100),
on the 2-core CPU shared with other jobs (load average 6-9), ``seed=0``;
valid rate (share of moves whose policy argmax was legal) averaged over the
first and the last 10% of iterations, and the win rate over the last 50
games:

    python experiments/onitama_ddpg.py out=/tmp/ddpg_run                        # 388 s
    python experiments/onitama_ddpg.py validity_loss=bce out=/tmp/ddpg_run_bce  # 412 s

    variant                        MSE (the seed's)              BCE (seed section 7)
                                   valid first -> last, wins     valid first -> last, wins
    val_after_actions              0.412 -> 0.451   0.06         0.399 -> 0.364   0.18
    actions_after_val              0.699 -> 0.345   0.06         0.709 -> 0.283   0.12
    val_branch_actions             0.449 -> 0.391   0.12         0.405 -> 0.313   0.04
    val_after_actions_multiply     0.138 -> 0.115   0.10         0.147 -> 0.292   0.06
    actions_after_val_multiply     0.826 -> 0.407   0.16         0.822 -> 0.423   0.22
    val_branch_actions_multiply    0.307 -> 0.215   0.10         0.314 -> 0.566   0.10
    dual                           0.234 -> 0.384   0.16         0.236 -> 0.327   0.18
    actions_only                   0.440 -> 0.129   0.12         0.440 -> 0.129   0.12

What this short run shows: the validity *layers* learn the mask (the MSE
validity loss falls from about 0.19-0.25 in the first updates to 0.04-0.06
for the branched, ``actions_after_val`` and ``dual`` actors; 0.18 for
``val_after_actions``, whose validity layer sees only the 40 action
probabilities), but the *policy's* argmax becomes legal more often only for
some variants: with the seed's MSE ``dual`` (0.23 -> 0.38) and
``val_after_actions`` (0.41 -> 0.45); with BCE the three multiply forms that
rise (``val_branch_actions_multiply`` 0.31 -> 0.57,
``val_after_actions_multiply`` 0.15 -> 0.29, ``dual`` 0.24 -> 0.33),
consistent with the seed's section 7 argument that BCE pushes a wrong mask
entry harder. Variants whose random initial policy happened to favour legal
moves (``actions_after_val``: 0.70 at the start) drift down as the critic's
gradient moves the policy, and ``actions_only``, which has no validity
signal, falls to 0.13. The win rate against depth 1 stays at 0.04-0.22: far
from the seed's "reasonably quick" wins at depth 1, which took it 10,000
episodes with much wider networks; this is a 6-minute run, not a
reproduction.

The default is deliberately small (narrow networks, 8 games per run, depth
at most 2) so that it runs in a few minutes on 2 cores; the seed trained
each variant for 10,000 episodes with 128-channel convolutions and 256-unit
layers.

**The seed's episode budget, narrow networks** (2026-11-22, one pinned core
of the 2-core CPU, 882 s; the actors the tournament plays):

    python experiments/onitama_ddpg.py num_envs=16 iterations=6000 out=results/onitama_ddpg

96,000 agent moves per variant, 11,700-15,100 games each (the seed's
preliminary test: 10,000 episodes), all against depth 1 (no run ever had 60
wins in its last 100 games):

    variant                        valid first -> last 10%   wins, last 50 games
    val_after_actions              0.423 -> 0.381            0.08
    actions_after_val              0.449 -> 0.338            0.04
    val_branch_actions             0.365 -> 0.284            0.10
    val_after_actions_multiply     0.144 -> 0.208            0.14
    actions_after_val_multiply     0.733 -> 0.392            0.12
    val_branch_actions_multiply    0.290 -> 0.428            0.10
    dual                           0.177 -> 0.064            0.08
    actions_only                   0.444 -> 0.389            0.20

Eight times the default budget changed nothing of substance. The seed's
claim that the multiply forms reach a valid rate of 1 is NOT reproduced: the
policy argmax stays legal 6-43% of the time, and most variants end below
where they started, as the critic's gradient pulls the policy away from the
validity layer's mask. The win rate against depth 1 (0.04-0.20 over the last
50 games) sits inside the seed's "fluctuating between 0.1 and 0.5" for
depth 1 only at its low end. Untested difference that may matter: the
seed's widths (``conv_features=64,128 hidden=256,256``), several times the
cost of this run.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time

import jax
import numpy as np

from jaxgames.agents.ddpg import save_weights
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, parse_config, command_line
from jaxgames.games.onitama import cards
from jaxgames.learners import ddpg as D
from jaxgames.networks.ddpg import VARIANTS

NEUTRAL = NEUTRAL_FIELDS + ("iterations", "chunk")
"""Settings a resumed run may change (how long it trains and how often it checkpoints: not what an iteration computes)."""

MOVING_AVERAGE = 50
"""The seed's smoothing window (section 5.6: "the moving average of the last 50 turns and episodes")."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Learner settings (`jaxgames.learners.ddpg.DDPGConfig`, same names and
    meanings): variants, num_seeds, num_envs, buffer_size, batch_size,
    learning_starts, updates_per_iteration, actor_learning_rate,
    critic_learning_rate, gamma, tau, validity_loss, validity_weight,
    critic_action, conv_features, card_features, hidden, norm, min_depth,
    max_depth, advance_wins, window, max_turns, deck.

    Run settings:
        iterations: train up to this many iterations in all (a resumed run goes on up to it).
        chunk: iterations per compiled call, per checkpoint and per progress-bar step.
        seed: PRNG seed.
        out: results folder.
        overwrite: replace the results and checkpoints of another configuration in ``out``.
        progress: show a progress bar.
    """

    variants: tuple[str, ...] = VARIANTS
    num_seeds: int = 1
    num_envs: int = 8
    buffer_size: int = 4096
    batch_size: int = 64
    learning_starts: int = 256
    updates_per_iteration: int = 1
    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    validity_loss: str = "mse"
    validity_weight: float = 1.0
    critic_action: str = "policy"
    conv_features: tuple[int, ...] = (16, 32)
    card_features: int = 10
    hidden: tuple[int, ...] = (64, 64)
    norm: str = "layer"
    min_depth: int = 1
    max_depth: int = 2
    advance_wins: int = 60
    window: int = 100
    max_turns: int = 200
    deck: tuple[str, ...] = cards.SEED_CARDS
    iterations: int = 1500
    chunk: int = 100
    seed: int = 0
    out: str = "results/onitama_ddpg"
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self):
        self.learner_config()  # every learner setting checked (ValueError/TypeError naming it)
        for name in ("iterations", "chunk"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1; got {v!r}")

    def learner_config(self) -> D.DDPGConfig:
        """The `DDPGConfig` of these settings."""
        names = {f.name for f in dataclasses.fields(D.DDPGConfig)} - {"num_iterations"}
        return D.DDPGConfig(num_iterations=self.iterations, **{n: getattr(self, n) for n in names})


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
    """The seed's figure 6.1-6.8 metrics, one line per run, in one figure."""
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
    fig.suptitle(f"DDPG validity study (seed 001 section 6.1): {cfg.num_envs} games per run, "
                 f"validity loss {cfg.validity_loss}")
    fig.tight_layout()
    return fig


def run(config: Config, argv=()) -> dict:
    """Trains (or resumes), writes every output; returns ``{"summary": rows, "seconds": float}``."""
    cfg = config.learner_config()
    start = time.time()
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:
        bar = None
        if config.progress:
            from tqdm import tqdm

            bar = tqdm(total=config.iterations, desc="ddpg iterations", unit="it")

        def on_chunk(done, state, metrics):
            rd.save_npz(f"metrics_upto_{done:09d}.npz", jax.tree.map(np.asarray, metrics._asdict()))
            if bar is not None:
                bar.n = done
                bar.set_postfix(depth=",".join(map(str, np.asarray(state.curriculum.depth).tolist())))
                bar.refresh()

        state, _ = D.train(cfg, jax.random.key(config.seed), chunk=config.chunk,
                           checkpoint_dir=rd.path / "checkpoints", on_chunk=on_chunk, overwrite=config.overwrite)
        if bar is not None:
            bar.close()
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
        rd.write_csv("episodes.csv", episodes)
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
            "# DDPG validity study (seed 001, sections 5-6.1)", "",
            f"Command: `{command}`  ", f"Iterations: {upto} ({cfg.num_envs} games per run; this call: {seconds:.0f} s)",
            "", "Open `training_curves.png` first; `summary.csv`:", "",
            "| variant | seed | valid rate, first 10% | valid rate, last 10% | win rate, last 50 games | games | depth |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in summary:
            lines.append(f"| {r['variant']} | {r['seed']} | {r['valid_rate_first10pct']:.3f} | "
                         f"{r['valid_rate_last10pct']:.3f} | {r['win_rate_last50']:.2f} | {r['games']} | "
                         f"{r['depth_reached']} |")
        lines += ["", "Trained actors: `actors/<variant>_seed<k>/` (`jaxgames.agents.ddpg.load_agent`).", ""]
        rd.write_text("README.md", "\n".join(lines))
    return {"summary": summary, "seconds": seconds}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    config = parse_config(Config, argv)
    result = run(config, argv)
    for r in result["summary"]:
        print(f"{r['variant']:30s} seed {r['seed']}: valid rate {r['valid_rate_first10pct']:.3f} -> "
              f"{r['valid_rate_last10pct']:.3f}, win rate (last 50) {r['win_rate_last50']:.2f}, "
              f"depth {r['depth_reached']}, games {r['games']}")
    print(f"{result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
