"""Independent learners in the seed's matrix games: sweeps, learning dynamics, convergence tables.

Reproduces section 3 of the course report (``shared/seeds/000``, tables 1-2
and figure 1) and goes further: every learner (epsilon-greedy, Boltzmann,
lenient Boltzmann Q-learning) runs from a grid of starting policies with
several seeds and parameter settings, all runs of a (game, learner) pair in
one jitted, vmapped call. It writes

* ``convergence.csv`` / ``convergence.md``: for every Nash equilibrium and
  Pareto-optimal outcome of each game (computed from the payoffs), the
  fraction of runs whose final policies are within ``tolerance`` (max-abs
  over all probabilities) of it, per learner and parameter setting, next to
  the seed's Yes/No claims;
* ``dynamics_<learner>.png``: the learner's directional field for each game
  (replicator field for epsilon-greedy, Boltzmann Q (FAQ) field for
  Boltzmann, lenient field for lenient Boltzmann, drawn at the starting
  temperature), with empirical learner trajectories (solid; start = bullet,
  end = square) and the integrated dynamics from the same starts (dashed);
* ``runs_<game>_<learner>.npz`` (final policies, settings, starts; lets an
  interrupted run resume) and ``config.json``.

Run ``python experiments/matrix_dynamics.py`` for the small default (the
seed's settings: alpha = 0.001, 100,000 iterations, tau linear 0.5 -> 0.01,
kappa = 5; a 5x5 grid of starts x 4 seeds), or add ``full=true`` for the
full sweep (9x9 starts x 10 seeds, four temperatures, three leniencies).
Any field of `Config` can be overridden as ``key=value``.

Seed errata, followed here as computed (see also ``jaxgames.games.matrix``):
the biased RPS equilibrium is (1/16, 10/16, 5/16) for (R, P, S), not the
printed (10/16, 5/16, 1/16); the subsidy game uses the payoffs that match
the seed's own equilibrium table; in the prisoner's dilemma (C, D) and
(D, C) are Pareto optimal too (the seed lists only (C, C)); and in the
zero-sum biased RPS every pure outcome is Pareto optimal (the seed lists the
mixed equilibrium, which is not an outcome).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import time
import zlib

import jax
import jax.numpy as jnp
import numpy as np

import jaxgames
from jaxgames.analysis import equilibria
from jaxgames.dynamics import fields
from jaxgames.experiment import output_dir, parse_config
from jaxgames.games import matrix
from jaxgames.learners import tabular

FIELD_OF = {"epsilon_greedy": "replicator", "boltzmann": "boltzmann_q", "lenient_boltzmann": "lenient_boltzmann"}
SHORT = {"epsilon_greedy": "eps-greedy", "boltzmann": "Boltzmann", "lenient_boltzmann": "lenient Boltzmann"}

# The seed's tables 1-2 (section 3.1): target point -> (eps-greedy, Boltzmann, lenient) convergence claims.
# Points in the seed's notation (P(first action) of each player). The BRPS point is the seed's
# erroneous equilibrium; it is matched to the true mixed equilibrium below.
SEED_CLAIMS = {
    ("prisoners_dilemma", "nash"): {(0.0, 0.0): "Yes/Yes/Yes"},
    ("prisoners_dilemma", "pareto"): {(1.0, 1.0): "No/No/No"},
    ("biased_rock_paper_scissors", "nash"): {"mixed": "No/No/No"},
    ("subsidy_game", "nash"): {(1.0, 1.0): "No/No/Yes", (0.0, 0.0): "Yes/Yes/Yes", (0.9, 0.9): "Yes/No/No"},
    ("subsidy_game", "pareto"): {(1.0, 1.0): "No/No/Yes"},
    ("battle_of_the_sexes", "nash"): {(0.6, 0.4): "No/No/No", (1.0, 1.0): "No/Yes/Yes", (0.0, 0.0): "Yes/Yes/Yes"},
    ("battle_of_the_sexes", "pareto"): {(1.0, 1.0): "No/Yes/Yes", (0.0, 0.0): "Yes/Yes/Yes"},
}
DEMO_STARTS_2X2 = ((0.2, 0.3), (0.35, 0.85), (0.75, 0.15), (0.6, 0.65))


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of the experiment (every field is a ``key=value`` override)."""

    games: tuple[str, ...] = matrix.SEED_GAMES
    learners: tuple[str, ...] = tabular.EXPLORATIONS
    num_iterations: int = 100_000
    learning_rate: float = 0.001
    temperature_starts: tuple[float, ...] = (0.5,)
    temperature_end: float = 0.01
    temperature_schedule: str = "linear"
    epsilons: tuple[float, ...] = (0.25, 0.5, 0.75)
    epsilon_end: float = 0.01
    epsilon_schedule: str = "linear"
    leniencies: tuple[int, ...] = (5,)
    start_grid: int = 5
    seeds: int = 4
    tolerance: float = 0.05
    record_every: int = 1000
    chunk_size: int = 4096
    full: bool = False
    out: str = "results/matrix_dynamics"
    resume: bool = True
    progress: bool = True

    def __post_init__(self):
        if self.full:
            # The full sweep: one flag away from the small default.
            for name, value in dict(
                temperature_starts=(0.2, 0.5, 1.0, 5.0), leniencies=(2, 5, 10), start_grid=9, seeds=10
            ).items():
                if getattr(self, name) == getattr(Config, name):
                    object.__setattr__(self, name, value)
        for g in self.games:
            if g not in matrix.SEED_GAMES + ("matching_pennies", "rock_paper_scissors", "stag_hunt"):
                raise ValueError(f"unknown matrix game {g!r}")
        for name in self.learners:
            if name not in tabular.EXPLORATIONS:
                raise ValueError(f"unknown learner {name!r}; choose from {tabular.EXPLORATIONS}")
        if self.start_grid < 1 or self.seeds < 1:
            raise ValueError("start_grid and seeds must be >= 1")
        if not 0 < self.tolerance < 1:
            raise ValueError(f"tolerance must be in (0, 1); got {self.tolerance}")
        # Validates every hyperparameter before anything is traced.
        for setting in self.settings("lenient_boltzmann") + self.settings("epsilon_greedy"):
            tabular.learner_params(**setting[1])
        tabular.LearnerConfig(num_iterations=self.num_iterations, record_every=self.record_every)

    def settings(self, learner: str) -> list[tuple[str, dict]]:
        """(label, `learner_params` kwargs) of each parameter setting of ``learner``."""
        base = dict(
            learning_rate=self.learning_rate,
            temperature_schedule=self.temperature_schedule,
            epsilon_schedule=self.epsilon_schedule,
        )
        if learner == "epsilon_greedy":
            return [(f"eps={e}", dict(base, epsilon=(e, self.epsilon_end))) for e in self.epsilons]
        taus = [(f"tau={t}", dict(base, temperature=(t, self.temperature_end))) for t in self.temperature_starts]
        if learner == "boltzmann":
            return taus
        return [(f"{lab},kappa={k}", dict(kw, leniency=k)) for lab, kw in taus for k in self.leniencies]


def starting_policies(game: matrix.MatrixGame, grid: int, rng: np.random.Generator) -> np.ndarray:
    """Starting policies ``[S, 2, A]``: a grid over (x, y) for 2x2 games, random interior points otherwise."""
    n, m = game.shape
    if (n, m) == (2, 2):
        ps = np.linspace(0.1, 0.9, grid)
        px, py = np.meshgrid(ps, ps, indexing="ij")
        x = np.stack([px.ravel(), 1 - px.ravel()], -1)
        y = np.stack([py.ravel(), 1 - py.ravel()], -1)
        return np.stack([x, y], 1)
    a = max(n, m)
    count = grid * grid
    out = np.zeros((count, 2, a))
    for p, k in enumerate((n, m)):
        draw = rng.dirichlet(np.ones(k), size=count)
        draw = np.clip(draw, 0.03, None)
        out[:, p, :k] = draw / draw.sum(1, keepdims=True)
    return out


def demo_starts(game: matrix.MatrixGame) -> np.ndarray:
    """The four demonstration starts drawn in the figures ``[4, 2, A]``."""
    if game.shape == (2, 2):
        return np.array([[[x, 1 - x], [y, 1 - y]] for x, y in DEMO_STARTS_2X2])
    n = game.shape[0]
    base = np.array([[0.7, 0.2, 0.1], [0.1, 0.7, 0.2], [0.2, 0.1, 0.7], [0.45, 0.45, 0.1]])[:, :n]
    base /= base.sum(1, keepdims=True)
    return np.stack([base, np.roll(base, 1, axis=1)], 1)


def targets(game: matrix.MatrixGame) -> list[tuple[str, equilibria.Profile]]:
    """The Nash equilibria and Pareto-optimal pure outcomes, as (kind, profile)."""
    out = [("nash", q) for q in equilibria.nash_equilibria(game)]
    out += [("pareto", equilibria.pure_profile(game, i, j)) for i, j in equilibria.pareto_optimal_outcomes(game)]
    return out


def target_label(game: matrix.MatrixGame, prof: equilibria.Profile) -> str:
    """A pure profile by its action names, e.g. ``(D, D)``; a mixed one in the seed's point notation."""
    if prof.is_pure():
        return f"({game.action_names[0][int(np.argmax(prof.x))]}, {game.action_names[1][int(np.argmax(prof.y))]})"
    if game.shape == (2, 2):
        return str(prof.point())
    fmt = lambda v: "(" + ", ".join(f"{p:.4g}" for p in v) + ")"
    return f"x={fmt(prof.x)} y={fmt(prof.y)}"


def seed_claim(game_name: str, kind: str, profile: equilibria.Profile) -> str:
    claims = SEED_CLAIMS.get((game_name, kind), {})
    for point, claim in claims.items():
        if point == "mixed" and not profile.is_pure():
            return claim + " (seed's point is wrong)"
        if point != "mixed" and np.max(np.abs(np.asarray(point) - np.asarray(profile.point()))) < 0.02:
            return claim
    return "-"


def run_game_learner(cfg: Config, game: matrix.MatrixGame, learner: str, out: pathlib.Path, key) -> dict:
    """All runs of one (game, learner) pair; cached in ``runs_<game>_<learner>.npz``."""
    path = out / f"runs_{game.name}_{learner}.npz"
    if cfg.resume and path.exists():
        data = np.load(path, allow_pickle=False)
        return {k: data[k] for k in data.files}
    rng = np.random.default_rng(zlib.crc32(f"{game.name}/{learner}".encode()))
    starts = starting_policies(game, cfg.start_grid, rng)
    demos = demo_starts(game)
    settings = cfg.settings(learner)
    lcfg = tabular.LearnerConfig(
        exploration=learner,
        num_iterations=cfg.num_iterations,
        record_every=cfg.record_every,
        max_leniency=max(cfg.leniencies),
    )
    params, init_policy, setting_idx, is_demo = [], [], [], []
    for s, (_, kwargs) in enumerate(settings):
        p = tabular.learner_params(**kwargs)
        block = [starts] * cfg.seeds + [demos]
        for b, pol in enumerate(block):
            params += [p] * len(pol)
            init_policy.append(pol)
            setting_idx += [s] * len(pol)
            is_demo += [b == cfg.seeds] * len(pol)
    stacked = tabular.stack_params(params)
    init_policy = np.concatenate(init_policy)
    initial_q = tabular.initial_q_from_policy(lcfg, init_policy, stacked)
    keys = jax.random.split(key, len(params))
    res = tabular.run_sweep(
        game,
        lcfg,
        keys,
        stacked,
        initial_q,
        chunk_size=cfg.chunk_size,
        progress=cfg.progress,
        description=f"{game.name}/{learner}",
    )
    is_demo = np.asarray(is_demo)
    data = dict(
        final_policy=res.policy,
        setting=np.asarray(setting_idx),
        is_demo=is_demo,
        initial_policy=init_policy,
        demo_trajectory=res.trajectory[is_demo],
        demo_setting=np.asarray(setting_idx)[is_demo],
    )
    np.savez_compressed(path, **data)
    return data


def convergence_rows(cfg: Config, game: matrix.MatrixGame, learner: str, data: dict) -> list[dict]:
    n, m = game.shape
    rows = []
    sweep = ~data["is_demo"]
    final = data["final_policy"][sweep]
    setting = data["setting"][sweep]
    for kind, prof in targets(game):
        target = np.zeros(final.shape[1:])
        target[0, :n] = prof.x
        target[1, :m] = prof.y
        close = np.max(np.abs(final - target), axis=(1, 2)) <= cfg.tolerance
        for s, (label, _) in enumerate(cfg.settings(learner)):
            sel = setting == s
            rows.append(
                dict(
                    game=game.name,
                    learner=learner,
                    setting=label,
                    target_kind=kind,
                    target=target_label(game, prof),
                    x=" ".join(f"{v:.4f}" for v in prof.x),
                    y=" ".join(f"{v:.4f}" for v in prof.y),
                    fraction=float(close[sel].mean()),
                    num_runs=int(sel.sum()),
                    seed_claim=seed_claim(game.name, kind, prof),
                )
            )
    return rows


def write_tables(cfg: Config, rows: list[dict], out: pathlib.Path) -> None:
    import csv

    with open(out / "convergence.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# Convergence of independent learners in the seed's matrix games",
        "",
        f"Fraction of runs whose final policies lie within {cfg.tolerance} (max-abs) of each target, "
        f"over a {cfg.start_grid}x{cfg.start_grid} grid of starting policies x {cfg.seeds} seeds; "
        f"{cfg.num_iterations:,} iterations, alpha = {cfg.learning_rate}, tau {cfg.temperature_schedule} "
        f"{list(cfg.temperature_starts)} -> {cfg.temperature_end}, epsilon {cfg.epsilon_schedule} "
        f"{list(cfg.epsilons)} -> {cfg.epsilon_end}. Targets are computed from the payoffs; the "
        "'seed' column is the course report's claim (eps-greedy/Boltzmann/lenient).",
        "",
    ]
    columns = [(lr, lab) for lr in cfg.learners for lab, _ in cfg.settings(lr)]
    for game in cfg.games:
        lines += [f"## {game}", ""]
        head = "| target | kind | seed | " + " | ".join(f"{SHORT[lr]} {lab}" for lr, lab in columns) + " |"
        lines += [head, "|" + "---|" * (3 + len(columns))]
        game_rows = [r for r in rows if r["game"] == game]
        seen = []
        for r in game_rows:
            if (r["target_kind"], r["target"]) in seen:
                continue
            seen.append((r["target_kind"], r["target"]))
            cells = []
            for lr, lab in columns:
                match = [
                    q for q in game_rows
                    if q["learner"] == lr and q["setting"] == lab and q["target_kind"] == r["target_kind"] and q["target"] == r["target"]
                ]
                cells.append(f"{100 * match[0]['fraction']:.0f}%" if match else "-")
            lines.append(f"| {r['target']} | {r['target_kind']} | {r['seed_claim']} | " + " | ".join(cells) + " |")
        lines.append("")
    (out / "convergence.md").write_text("\n".join(lines))


def integrated_dynamics(cfg: Config, learner: str, game, starts, tau0, schedule, kappa):
    """The learning dynamics from the learners' starts ``[K, 2, A]``: (xs, ys), each ``[K, steps + 1, n]``.

    Boltzmann learners: the FAQ / lenient dynamics in Q-space with the
    learner's temperature schedule (`fields.integrate_q`); epsilon-greedy:
    the replicator dynamics, with steps small enough to be stable.
    """
    n = game.shape[0]
    starts = jnp.asarray(starts[:, :, :n])
    if learner == "epsilon_greedy":
        one = lambda s: fields.integrate(
            "replicator", game.payoffs, s[0], s[1], num_iterations=cfg.num_iterations,
            num_steps=4000, learning_rate=cfg.learning_rate,
        )
    else:
        one = lambda s: fields.integrate_q(
            game.payoffs, tau0 * jnp.log(jnp.clip(s, 1e-12, None)), num_iterations=cfg.num_iterations,
            num_steps=2000, temperature=lambda t: schedule(t, cfg.num_iterations), leniency=kappa,
            learning_rate=cfg.learning_rate,
        )
    xs, ys = jax.jit(jax.vmap(one))(starts)
    return np.asarray(xs), np.asarray(ys)


def plot_learner(cfg: Config, learner: str, results: dict, out: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxgames.dynamics import plots

    label, kwargs = cfg.settings(learner)[0]
    tau0, tau1 = kwargs.get("temperature", (cfg.temperature_starts[0], cfg.temperature_end))
    kappa = kwargs.get("leniency", 1)
    field_kind = FIELD_OF[learner]
    games = [g for g in cfg.games if (g, learner) in results]
    fig, axes = plt.subplots(1, len(games), figsize=(4.2 * len(games), 4.4), squeeze=False)
    schedule = tabular.Schedule.make(tau0, tau1, cfg.temperature_schedule)
    for ax, name in zip(axes[0], games):
        game = jaxgames.make(name)
        data = results[(name, learner)]
        demo = data["demo_trajectory"][data["demo_setting"] == 0]  # [K, R+1, 2, A]
        n = game.shape[0]
        field_kw = dict(temperature=tau0, leniency=kappa, learning_rate=cfg.learning_rate)
        ode = list(zip(*integrated_dynamics(cfg, learner, game, demo[:, 0], tau0, schedule, kappa)))
        if game.shape == (2, 2):
            plots.plot_field_2x2(ax, field_kind, game.payoffs_np, action_names=game.action_names, **field_kw)
            plots.plot_trajectories_2x2(ax, demo[:, :, :, 0])
            cmap = matplotlib.colormaps["tab10"]
            for k, (xs, ys) in enumerate(ode):
                ax.plot(np.asarray(xs)[:, 0], np.asarray(ys)[:, 0], "--", color=cmap(k), lw=1, alpha=0.8)
            for kind, prof in targets(game):
                marker = dict(nash="*", pareto="D")[kind]
                ax.plot(prof.x[0], prof.y[0], marker, color="crimson" if kind == "nash" else "gold",
                        ms=13 if kind == "nash" else 7, mec="k", mew=0.5, zorder=5, clip_on=False)
        else:
            plots.plot_simplex(ax, field_kind, game.payoffs_np, action_names=game.action_names[0], **field_kw)
            plots.plot_trajectories_simplex(ax, demo[:, :, 0, :n])
            cmap = matplotlib.colormaps["tab10"]
            for k, (xs, _) in enumerate(ode):
                xy = plots.simplex_to_xy(np.asarray(xs))
                ax.plot(xy[:, 0], xy[:, 1], "--", color=cmap(k), lw=1, alpha=0.8)
            for kind, prof in targets(game):
                if kind == "nash":
                    xy = plots.simplex_to_xy(prof.x)
                    ax.plot(xy[0], xy[1], "*", color="crimson", ms=13, mec="k", mew=0.5, zorder=5)
        ax.set_title(name.replace("_", " "))
    fig.suptitle(
        f"{SHORT[learner]} Q-learning ({label}): {field_kind.replace('_', ' ')} field"
        f"{'' if learner == 'epsilon_greedy' else f' at tau={tau0}'}, "
        f"learner trajectories (solid), integrated dynamics (dashed); * Nash, \u25c6 Pareto",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out / f"dynamics_{learner}.png", dpi=130)
    plt.close(fig)


def main(argv: list[str]) -> pathlib.Path:
    cfg = parse_config(Config, argv)
    out = output_dir(cfg, cfg.out)
    config_hash = json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=str)
    marker = out / ".config_for_cached_runs.json"
    if marker.exists() and marker.read_text() != config_hash:
        # Cached runs belong to another configuration: do not mix them in.
        for stale in out.glob("runs_*.npz"):
            stale.unlink()
    marker.write_text(config_hash)
    key = jax.random.key(0)
    results, rows = {}, []
    t0 = time.time()
    from tqdm.auto import tqdm

    pairs = [(g, lr) for g in cfg.games for lr in cfg.learners]
    for i, (name, learner) in enumerate(tqdm(pairs, desc="game x learner", disable=not cfg.progress)):
        game = jaxgames.make(name)
        data = run_game_learner(cfg, game, learner, out, jax.random.fold_in(key, i))
        results[(name, learner)] = data
        rows += convergence_rows(cfg, game, learner, data)
    write_tables(cfg, rows, out)
    for learner in cfg.learners:
        plot_learner(cfg, learner, results, out)
    print(f"done in {time.time() - t0:.0f} s; results in {out}/ (convergence.md, convergence.csv, dynamics_*.png)")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
