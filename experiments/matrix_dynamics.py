"""Independent learners in El Kaddouri et al.'s matrix games: sweeps, learning dynamics, convergence tables.

Reproduces section 3 of El Kaddouri, Rys & Gao, "Multi Agent Reinforcement
Learning With Dots And Boxes" (course report, undated; tables 1-2 and
figure 1) and goes further. Five learners (epsilon-greedy, Boltzmann and
lenient Boltzmann Q-learning, as in the report, plus frequency-adjusted (FAQ;
Kaisers & Tuyls 2010) Boltzmann and lenient Boltzmann, the learners whose
dynamics the lenient-dynamics papers describe) run from a grid of starting
policies with several seeds and every parameter setting, all runs of a
(game, learner) pair in one jitted, vmapped call. It writes, into ``out``:

* ``README.md``: the page to open first: settings, the tables in the layout
  of El Kaddouri et al.'s, what reproduced and what did not (with the count
  of disagreeing verdicts), a discussion of every disagreement and of the
  surprising results, and the compute time of the results.
* ``convergence.csv`` / ``convergence.md``: one row per (game, learner,
  setting, target). A run has converged to a target (a Nash equilibrium or
  Pareto-optimal outcome, computed from the payoffs; for epsilon-greedy
  learners the target as played with exploration, (1 - eps) target + eps
  uniform) only if its policy stays within ``tolerance`` (max-abs over all
  probabilities) of it over the whole final window (the last 10% of the
  iterations, checked at every iteration); other runs are ``not_converged``,
  and among them ``cycling`` counts those that keep swinging back and forth
  over the window. Fractions add up to 1 per (game, learner, setting).
  ``verdict`` is Yes where at least ``verdict_share`` of the runs converge
  there; ``paper_claim`` (the report's claim) and ``agrees`` compare it with
  El Kaddouri et al.'s tables.
  ``time_avg_fraction`` classifies the time-averaged policy of the window.
* ``dynamics_<learner>_<setting>.png``, ``basins_<learner>.png``,
  ``empirical_fields.png`` and ``overlay_check.csv``: the learners' runs
  against their own expected dynamics (the README says what each draws);
* ``runs_<game>_<learner>_<hash>.npz``: cached runs keyed by the settings
  that made them (an unreadable one is recomputed with a warning), and
  ``config.json``.

Run ``python experiments/matrix_dynamics.py`` for the small default (the
report's settings: alpha = 0.001, 100,000 iterations, tau linear 0.5 -> 0.01,
kappa = 5, epsilon constant 0.25 / 0.5 / 0.75; a 5x5 grid of starts x 4
seeds), or add ``full=true`` for the full sweep (9x9 starts x 10 seeds, four
temperatures, three leniencies). Any field of `Config` can be overridden as
``key=value`` (``epsilon_schedule=linear`` anneals epsilon to ``epsilon_end``).

Errata in the report, followed here as computed (see also ``jaxgames.games.matrix``):
the biased RPS equilibrium is (1/16, 10/16, 5/16) for (R, P, S), not the
printed (10/16, 5/16, 1/16); the subsidy game uses the payoffs that match
the report's own equilibrium table; in the prisoner's dilemma (C, D) and
(D, C) are Pareto optimal too (the report lists only (C, C)); in the
zero-sum biased RPS every pure outcome is Pareto optimal (the report lists the
mixed equilibrium, which is not an outcome); and the "1/4 chance of
obtaining the highest reward" of section 3.2.1 is 1 - (1/2)^kappa.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import time
import zlib

import jax
import jax.numpy as jnp
import numpy as np

import jaxgames
from jaxgames.analysis import equilibria
from jaxgames.dynamics import empirical, fields
from jaxgames import checks, experiment, parallel
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, check_names, check_positive, config_key
from jaxgames.games import matrix
from jaxgames.learners import tabular

# Learner name -> (tabular exploration, frequency-adjusted?).
LEARNERS = {
    "epsilon_greedy": ("epsilon_greedy", False),
    "boltzmann": ("boltzmann", False),
    "lenient_boltzmann": ("lenient_boltzmann", False),
    "faq_boltzmann": ("boltzmann", True),
    "faq_lenient_boltzmann": ("lenient_boltzmann", True),
}
SHORT = {
    "epsilon_greedy": "eps-greedy",
    "boltzmann": "Boltzmann",
    "lenient_boltzmann": "lenient Boltzmann",
    "faq_boltzmann": "FAQ Boltzmann",
    "faq_lenient_boltzmann": "FAQ lenient Boltzmann",
}
# The source report's learners (El Kaddouri, Rys & Gao), in the order of its tables' columns.
PAPER_LEARNERS = ("epsilon_greedy", "boltzmann", "lenient_boltzmann")

# The report's tables 1-2 (section 3.1): target point -> (eps-greedy, Boltzmann, lenient) convergence claims.
# Points in the report's notation (P(first action) of each player). The BRPS point is the report's
# erroneous equilibrium; it is matched to the true mixed equilibrium below.
PAPER_CLAIMS = {
    ("prisoners_dilemma", "nash"): {(0.0, 0.0): "Yes/Yes/Yes"},
    ("prisoners_dilemma", "pareto"): {(1.0, 1.0): "No/No/No"},
    ("biased_rock_paper_scissors", "nash"): {"mixed": "No/No/No"},
    ("subsidy_game", "nash"): {(1.0, 1.0): "No/No/Yes", (0.0, 0.0): "Yes/Yes/Yes", (0.9, 0.9): "Yes/No/No"},
    ("subsidy_game", "pareto"): {(1.0, 1.0): "No/No/Yes"},
    ("battle_of_the_sexes", "nash"): {(0.6, 0.4): "No/No/No", (1.0, 1.0): "No/Yes/Yes", (0.0, 0.0): "Yes/Yes/Yes"},
    ("battle_of_the_sexes", "pareto"): {(1.0, 1.0): "No/Yes/Yes", (0.0, 0.0): "Yes/Yes/Yes"},
}
DEMO_STARTS_2X2 = ((0.2, 0.3), (0.35, 0.85), (0.75, 0.15), (0.6, 0.65))
NOT_CONVERGED = "not_converged"
SOURCE = 'El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes" (course report, undated)'
GAMES = matrix.PAPER_GAMES + ("matching_pennies", "rock_paper_scissors", "stag_hunt")
# Settings that do not change results: a resume may change them (chunk_size and devices only split the runs).
NEUTRAL = NEUTRAL_FIELDS + ("chunk_size", "devices")


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of the experiment (every field is a ``key=value`` override).

    ``out`` is the results folder; a run into a folder that holds another
    configuration's results is refused unless ``overwrite=true``; ``resume``
    reuses the cached runs of this configuration; ``chunk_size`` (runs per
    compiled call), ``progress``, ``out``, ``resume`` and ``overwrite`` do not
    change results (`NEUTRAL`). Every value is checked here, before anything
    is written: tuples must be non-empty without repeats, sizes positive.

    Attributes:
        games: matrix games (`jaxgames.registered_games`), comma-separated.
        learners: learners (epsilon_greedy, boltzmann, lenient_boltzmann, faq_boltzmann, faq_lenient_boltzmann).
        num_iterations: iterations of every run.
        learning_rate: alpha of every learner.
        temperature_starts: Boltzmann temperatures tau at the start, one setting each.
        temperature_end: tau at the end of a ``linear``/``exponential`` schedule.
        temperature_schedule: constant, linear or exponential.
        epsilons: epsilon-greedy exploration rates, one setting each.
        epsilon_end: epsilon at the end of a non-constant schedule.
        epsilon_schedule: constant, linear or exponential.
        leniencies: lenient learners' kappa (rewards collected per update), one setting each.
        faq_beta: the FAQ learners' beta (1 = no frequency adjustment).
        start_grid: starting policies per player axis (a grid of start_grid^2 starts in 2x2 games).
        seeds: random seeds per start.
        tolerance: max-abs distance of a policy from a target that counts as converged.
        verdict_share: share of runs that must converge to a target for a Yes verdict.
        cycling_range: swing of the policy over the final window above which a run counts as cycling.
        record_every: iterations between recorded policies (the trajectory figures).
        chunk_size: runs per compiled call (memory only; does not change results).
        devices: devices each sweep's chunks of runs are spread over (`tabular.run_sweep`; 0: every device
            JAX sees: on the command line one CPU device per core, on a GPU machine the GPUs). Does not
            change results: each device runs the one-device program, so they equal one device's bit for bit.
        empirical_grid: grid points per axis of the measured flow (0: no empirical fields).
        empirical_runs: short runs per grid point of the measured flow.
        empirical_horizon: iterations of each such run.
        full: the full sweep (9x9 starts x 10 seeds, four temperatures, three leniencies).
        out: results folder.
        resume: reuse this configuration's cached runs in ``out``.
        progress: show progress bars.
        overwrite: replace another configuration's results in ``out``.
    """

    games: tuple[str, ...] = matrix.PAPER_GAMES
    learners: tuple[str, ...] = tuple(LEARNERS)
    num_iterations: int = 100_000
    learning_rate: float = 0.001
    temperature_starts: tuple[float, ...] = (0.5,)
    temperature_end: float = 0.01
    temperature_schedule: str = "linear"
    epsilons: tuple[float, ...] = (0.25, 0.5, 0.75)
    epsilon_end: float = 0.01
    epsilon_schedule: str = "constant"
    leniencies: tuple[int, ...] = (5,)
    faq_beta: float = 0.1
    start_grid: int = 5
    seeds: int = 4
    tolerance: float = 0.05
    verdict_share: float = 0.1
    cycling_range: float = 0.1
    record_every: int = 1000
    chunk_size: int = 4096
    devices: int = 0
    empirical_grid: int = 7
    empirical_runs: int = 64
    empirical_horizon: int = 2000
    full: bool = False
    out: str = "results/matrix_dynamics"
    resume: bool = True
    progress: bool = True
    overwrite: bool = False

    def __post_init__(self):
        if self.full:
            # The full sweep: one flag away from the small default.
            for name, value in dict(
                temperature_starts=(0.2, 0.5, 1.0, 5.0), leniencies=(2, 5, 10), start_grid=9, seeds=10
            ).items():
                if getattr(self, name) == getattr(Config, name):
                    object.__setattr__(self, name, value)
        for g in self.games:
            if g not in GAMES:
                raise ValueError(f"unknown matrix game {g!r}; choose from {GAMES}")
        for name in self.learners:
            if name not in LEARNERS:
                raise ValueError(f"unknown learner {name!r}; choose from {tuple(LEARNERS)}")
        for name in ("games", "learners", "temperature_starts", "epsilons", "leniencies"):
            check_names(name, getattr(self, name))
        if self.start_grid < 1 or self.seeds < 1:
            raise ValueError("start_grid and seeds must be >= 1")
        check_positive(num_iterations=self.num_iterations, record_every=self.record_every, chunk_size=self.chunk_size)
        checks.non_negative_int("devices", self.devices)
        sweep_devices(self.devices)  # more devices than JAX sees: refused here, before anything is written
        if not 0 < self.tolerance < 1:
            raise ValueError(f"tolerance must be in (0, 1); got {self.tolerance}")
        if not 0 < self.verdict_share <= 1:
            raise ValueError(f"verdict_share must be in (0, 1]; got {self.verdict_share}")
        if self.empirical_grid < 0 or self.empirical_runs < 2 or self.empirical_horizon < 1:
            raise ValueError("empirical_grid must be >= 0 (0: no empirical fields), empirical_runs >= 2, empirical_horizon >= 1")
        # Validates every hyperparameter before anything is traced.
        for learner in LEARNERS:
            for _, kwargs in self.settings(learner):
                tabular.learner_params(**kwargs)
        tabular.LearnerConfig(num_iterations=self.num_iterations, record_every=self.record_every)

    def settings(self, learner: str) -> list[tuple[str, dict]]:
        """(label, `learner_params` kwargs) of each parameter setting of ``learner``."""
        base = dict(
            learning_rate=self.learning_rate,
            temperature_schedule=self.temperature_schedule,
            epsilon_schedule=self.epsilon_schedule,
        )
        if LEARNERS[learner][1]:
            base["faq_beta"] = self.faq_beta
        if learner == "epsilon_greedy":
            end = lambda e: e if self.epsilon_schedule == "constant" else self.epsilon_end
            return [(f"eps={e}", dict(base, epsilon=(e, end(e)))) for e in self.epsilons]
        taus = [(f"tau={t}", dict(base, temperature=(t, self.temperature_end))) for t in self.temperature_starts]
        if LEARNERS[learner][0] == "boltzmann":
            return taus
        return [(f"{lab},kappa={k}", dict(kw, leniency=k)) for lab, kw in taus for k in self.leniencies]

    def learner_config(self, learner: str) -> tabular.LearnerConfig:
        return tabular.LearnerConfig(
            exploration=LEARNERS[learner][0],
            num_iterations=self.num_iterations,
            record_every=self.record_every,
            max_leniency=max(self.leniencies),
        )


def starting_policies(game: matrix.MatrixGame, grid: int, rng: np.random.Generator) -> np.ndarray:
    """Starting policies ``[S, 2, A]``: a grid over (x, y) for 2x2 games, random interior points otherwise.

    For 3-action games both players start at the same (random) policy, so the
    symmetric field drawn on the simplex is the one that applies.
    """
    n, m = game.shape
    if (n, m) == (2, 2):
        ps = np.linspace(0.1, 0.9, grid)
        px, py = np.meshgrid(ps, ps, indexing="ij")
        x = np.stack([px.ravel(), 1 - px.ravel()], -1)
        y = np.stack([py.ravel(), 1 - py.ravel()], -1)
        return np.stack([x, y], 1)
    a = max(n, m)
    count = grid * grid
    draw = np.clip(rng.dirichlet(np.ones(a), size=count), 0.03, None)
    draw /= draw.sum(1, keepdims=True)
    return np.stack([draw, draw], 1)


def demo_starts(game: matrix.MatrixGame) -> np.ndarray:
    """The four demonstration starts drawn in the figures ``[4, 2, A]`` (symmetric for 3-action games)."""
    if game.shape == (2, 2):
        return np.array([[[x, 1 - x], [y, 1 - y]] for x, y in DEMO_STARTS_2X2])
    n = game.shape[0]
    base = np.array([[0.7, 0.2, 0.1], [0.1, 0.7, 0.2], [0.2, 0.1, 0.7], [0.45, 0.45, 0.1]])[:, :n]
    base /= base.sum(1, keepdims=True)
    return np.stack([base, base], 1)


def targets(game: matrix.MatrixGame) -> list[tuple[str, equilibria.Profile]]:
    """The distinct target points: Nash equilibria and Pareto-optimal pure outcomes, as (kind, profile).

    A point that is both is listed once with kind ``nash+pareto``.
    """
    out: list[tuple[str, equilibria.Profile]] = [("nash", q) for q in equilibria.nash_equilibria(game)]
    for i, j in equilibria.pareto_optimal_outcomes(game):
        prof = equilibria.pure_profile(game, i, j)
        for k, (kind, other) in enumerate(out):
            if np.allclose(other.x, prof.x) and np.allclose(other.y, prof.y):
                out[k] = ("nash+pareto", other)
                break
        else:
            out.append(("pareto", prof))
    return out


def target_label(game: matrix.MatrixGame, prof: equilibria.Profile) -> str:
    """A pure profile by its action names, e.g. ``(D, D)``; a mixed one in El Kaddouri et al.'s point notation."""
    if prof.is_pure():
        return f"({game.action_names[0][int(np.argmax(prof.x))]}, {game.action_names[1][int(np.argmax(prof.y))]})"
    if game.shape == (2, 2):
        return str(prof.point())
    fmt = lambda v: "(" + ", ".join(f"{p:.4g}" for p in v) + ")"
    return f"x={fmt(prof.x)} y={fmt(prof.y)}"


def paper_claim(game_name: str, kind: str, profile: equilibria.Profile, learner: str) -> str:
    """El Kaddouri et al.'s Yes/No for this target and learner ('-' where the report makes no claim)."""
    if learner not in PAPER_LEARNERS:
        return "-"
    col = PAPER_LEARNERS.index(learner)
    for k in kind.split("+"):
        for point, claim in PAPER_CLAIMS.get((game_name, k), {}).items():
            if point == "mixed" and not profile.is_pure():
                return claim.split("/")[col]
            if point != "mixed" and np.max(np.abs(np.asarray(point) - np.asarray(profile.point()))) < 0.02:
                return claim.split("/")[col]
    return "-"


def sweep_devices(devices: int):
    """The devices the sweeps' chunks are spread over: the first ``devices`` of JAX's (0: all); None for one.

    Raises:
        ValueError: more devices than JAX sees (naming the XLA flag that gives CPU devices).
    """
    available = jax.devices()
    n = devices or len(available)
    if n > len(available):
        raise ValueError(f"devices={n} but JAX sees {len(available)} ({available[0].platform}); on CPU, "
                         f"XLA_FLAGS={parallel.HOST_DEVICE_FLAG}=N set before JAX starts gives N devices")
    return available[:n] if n > 1 else None


def run_game_learner(cfg: Config, game: matrix.MatrixGame, learner: str, rd: ResultsDir, key) -> dict:
    """All runs of one (game, learner) pair; cached in ``runs_<game>_<learner>_<hash>.npz``.

    The hash covers every setting that changes the runs, so a resume with
    other settings recomputes instead of mixing. A cached file that cannot be
    read (e.g. truncated by a kill during an old non-atomic write) is
    recomputed with a `jaxgames.experiment.CachedPieceWarning`. The piece
    stores its own compute time (``compute_seconds``, float64 scalar, s), so
    a resumed run can report what its results cost, not only what the
    resume did; ``reused`` (bool scalar, not stored) says whether it came
    from the cache.
    """
    lcfg = cfg.learner_config(learner)
    settings = cfg.settings(learner)
    digest = config_key(game.payoffs_np.tolist(), dataclasses.asdict(lcfg) | {"q_module": None, "optimizer": None},
                          settings, cfg.start_grid, cfg.seeds)
    name = f"runs_{game.name}_{learner}_{digest}.npz"
    for stale in rd.path.glob(f"runs_{game.name}_{learner}_*.npz"):
        if stale.name != name:
            stale.unlink()
    cached = rd.load_npz(name) if cfg.resume else None
    if cached is not None and "compute_seconds" in cached:  # a piece without its time (older version): recompute
        return dict(cached, reused=np.asarray(True))
    started = time.perf_counter()
    rng = np.random.default_rng(zlib.crc32(f"{game.name}/{learner}".encode()))
    starts = starting_policies(game, cfg.start_grid, rng)
    demos = demo_starts(game)
    params, init_policy, setting_idx, is_demo, start_idx = [], [], [], [], []
    for s, (_, kwargs) in enumerate(settings):
        p = tabular.learner_params(**kwargs)
        block = [starts] * cfg.seeds + [demos]
        for b, pol in enumerate(block):
            params += [p] * len(pol)
            init_policy.append(pol)
            setting_idx += [s] * len(pol)
            is_demo += [b == cfg.seeds] * len(pol)
            start_idx += list(range(len(pol)))
    stacked = tabular.stack_params(params)
    init_policy = np.concatenate(init_policy)
    initial_q = tabular.initial_q_from_policy(lcfg, init_policy, stacked)
    keys = jax.random.split(key, len(params))
    sweep_runs, demo_runs = len(settings) * cfg.seeds * len(starts), len(settings) * len(demos)
    res = tabular.run_sweep(game, lcfg, keys, stacked, initial_q, chunk_size=cfg.chunk_size,
                            progress=cfg.progress, devices=sweep_devices(cfg.devices),
                            description=f"{game.name}/{learner} ({sweep_runs} sweep + {demo_runs} demo runs)",
                            on_non_finite="raise")  # a NaN run would be counted as "not converged": stop instead
    is_demo = np.asarray(is_demo)
    late_records = lcfg.num_records // 2 + 1  # the second half of the run, for telling orbits apart
    data = dict(
        final_policy=res.policy,
        window_min=res.window_min,
        window_max=res.window_max,
        window_mean=res.window_mean,
        late_trajectory=res.trajectory[:, -late_records:],
        setting=np.asarray(setting_idx),
        start_index=np.asarray(start_idx),
        is_demo=is_demo,
        initial_policy=init_policy,
        demo_trajectory=res.trajectory[is_demo],
        demo_setting=np.asarray(setting_idx)[is_demo],
    )
    data["compute_seconds"] = np.asarray(time.perf_counter() - started)
    rd.save_npz(name, data)
    return dict(data, reused=np.asarray(False))


def played_target(cfg: Config, learner: str, setting: dict, game: matrix.MatrixGame, prof) -> np.ndarray:
    """The target ``[2, A]`` as the learner plays it: epsilon-greedy explores, (1 - eps) target + eps uniform."""
    n, m = game.shape
    target = np.zeros((2, max(n, m)))
    target[0, :n], target[1, :m] = prof.x, prof.y
    if learner == "epsilon_greedy":
        e0, e1 = setting["epsilon"]
        eps = e0 if cfg.epsilon_schedule == "constant" else e1
        target[0, :n] = (1 - eps) * target[0, :n] + eps / n
        target[1, :m] = (1 - eps) * target[1, :m] + eps / m
    return target


def _reversals(window_trajectory: np.ndarray, threshold: float) -> np.ndarray:
    """Per run, the largest number of direction changes (steps beyond ``threshold``) of any probability ``[R, K, 2, A]``."""
    steps = np.diff(window_trajectory, axis=1)  # [R, K-1, 2, A]
    sign = np.where(steps > threshold, 1, np.where(steps < -threshold, -1, 0))
    count = np.zeros(sign.shape[:1] + sign.shape[2:], int)
    last = np.zeros_like(count)
    for k in range(sign.shape[1]):
        s = sign[:, k]
        count += (s != 0) & (last != 0) & (s != last)
        last = np.where(s != 0, s, last)
    return count.reshape(count.shape[0], -1).max(axis=1)


def classify_runs(cfg: Config, game: matrix.MatrixGame, learner: str, data: dict) -> dict:
    """Outcome of every sweep run: index into `targets` (or -1 = not converged), cycling flag, time-average outcome."""
    sweep = ~data["is_demo"]
    wmin, wmax, wmean = data["window_min"][sweep], data["window_max"][sweep], data["window_mean"][sweep]
    setting = data["setting"][sweep]
    settings = cfg.settings(learner)
    tlist = targets(game)
    outcome = np.full(len(setting), -1)
    avg_outcome = np.full(len(setting), -1)
    for s, (_, kw) in enumerate(settings):
        sel = setting == s
        for k, (_, prof) in enumerate(tlist):
            t = played_target(cfg, learner, kw, game, prof)
            worst = np.maximum(np.abs(wmin[sel] - t), np.abs(wmax[sel] - t)).max(axis=(1, 2))
            idx = np.flatnonzero(sel)
            outcome[idx[(worst <= cfg.tolerance) & (outcome[idx] < 0)]] = k
            close_avg = np.abs(wmean[sel] - t).max(axis=(1, 2)) <= cfg.tolerance
            avg_outcome[idx[close_avg & (avg_outcome[idx] < 0)]] = k
    late = data["late_trajectory"][sweep]  # [R, K, 2, A], the recorded second half of each run
    spread = np.maximum((wmax - wmin).max(axis=(1, 2)), (late.max(axis=1) - late.min(axis=1)).max(axis=(1, 2)))
    reversals = _reversals(late, cfg.tolerance / 2)
    cycling = (outcome < 0) & (spread > cfg.cycling_range) & (reversals >= 2)
    # Not converged, not (yet) seen to swing back, but moving by more than cycling_range in the final window.
    moving = (outcome < 0) & ~cycling & ((wmax - wmin).max(axis=(1, 2)) > cfg.cycling_range)
    return dict(outcome=outcome, avg_outcome=avg_outcome, cycling=cycling, moving=moving, setting=setting,
                start=data["start_index"][sweep], window_mean=wmean)


def convergence_rows(cfg: Config, game: matrix.MatrixGame, learner: str, data: dict, cls: dict) -> list[dict]:
    n, m = game.shape
    rows = []
    fmt = lambda v: " ".join(f"{p:.4f}" for p in v)
    for s, (label, kw) in enumerate(cfg.settings(learner)):
        sel = cls["setting"] == s
        num = int(sel.sum())
        for k, (kind, prof) in enumerate(targets(game)):
            frac = float((cls["outcome"][sel] == k).mean())
            verdict = "Yes" if frac >= cfg.verdict_share else "No"
            claim = paper_claim(game.name, kind, prof, learner)
            played = played_target(cfg, learner, kw, game, prof)
            rows.append(dict(
                game=game.name, learner=learner, setting=label, target_kind=kind, target=target_label(game, prof),
                x=fmt(prof.x), y=fmt(prof.y), played_x=fmt(played[0, :n]), played_y=fmt(played[1, :m]),
                fraction=frac, time_avg_fraction=float((cls["avg_outcome"][sel] == k).mean()), cycling="", moving="",
                mean_time_avg_x="", mean_time_avg_y="", num_runs=num, verdict=verdict, paper_claim=claim,
                agrees="-" if claim == "-" else ("yes" if claim == verdict else "no"),
            ))
        nc = sel & (cls["outcome"] < 0)
        avg = cls["window_mean"][nc].mean(axis=0) if nc.any() else None
        rows.append(dict(
            game=game.name, learner=learner, setting=label, target_kind="none", target=NOT_CONVERGED, x="", y="",
            played_x="", played_y="", fraction=float(nc.sum() / num),
            time_avg_fraction=float((cls["avg_outcome"][sel] < 0).mean()),
            cycling=float((cls["cycling"] & sel).sum() / num), moving=float((cls["moving"] & sel).sum() / num),
            mean_time_avg_x="" if avg is None else fmt(avg[0, :n]), mean_time_avg_y="" if avg is None else fmt(avg[1, :m]),
            num_runs=num, verdict="-", paper_claim="-", agrees="-",
        ))
    return rows


# ----------------------------------------------------------------------------- tables


def write_tables(cfg: Config, rows: list[dict], rd: ResultsDir) -> None:
    """``convergence.csv`` (every row) and ``convergence.md`` (the report's layout, then every setting)."""
    rd.write_csv("convergence.csv", rows)
    rd.write_text("convergence.md", "\n".join(
        ["# Convergence of independent learners in the matrix games of El Kaddouri et al.", "", f"Source: {SOURCE}, "
         "section 3.", "", settings_text(cfg), ""]
        + paper_layout_tables(cfg, rows) + ["", "## Every setting", ""] + setting_tables(cfg, rows)
    ))


def settings_text(cfg: Config) -> str:
    eps = (f"epsilon constant {list(cfg.epsilons)}" if cfg.epsilon_schedule == "constant"
           else f"epsilon {cfg.epsilon_schedule} {list(cfg.epsilons)} -> {cfg.epsilon_end}")
    return (
        f"Runs: {cfg.start_grid}x{cfg.start_grid} starting policies (a grid over (P1, P2) = P(first action) in "
        f"[0.1, 0.9] for 2x2 games; random symmetric interior points for biased RPS) x {cfg.seeds} random seeds "
        f"per setting; {cfg.num_iterations:,} iterations, alpha = {cfg.learning_rate}, tau {cfg.temperature_schedule} "
        f"{list(cfg.temperature_starts)} -> {cfg.temperature_end}, kappa {list(cfg.leniencies)}, {eps}, "
        f"FAQ beta = {cfg.faq_beta}. A run converged to a target if its policy stayed within {cfg.tolerance} "
        f"(max-abs) of it over the last {max(1, cfg.num_iterations // 10):,} iterations (checked at every "
        f"iteration; epsilon-greedy targets include the exploration). Verdict Yes: at least "
        f"{100 * cfg.verdict_share:.0f}% of the runs converged there. Cycling: not converged, and over the second half "
        f"of the run some probability swung back and forth (range > {cfg.cycling_range}, at least two reversals of "
        f"the recorded policy, sampled every {cfg.record_every:,} iterations). Moving: not converged, not cycling, "
        f"but the policy's range over the final window exceeds {cfg.cycling_range}. The rest of the not-converged "
        "runs stalled away from every target."
    )


def _cell(rs: list[dict]) -> str:
    return "/".join(f"{100 * r['fraction']:.0f}%" for r in rs)


def paper_layout_tables(cfg: Config, rows: list[dict]) -> list[str]:
    """Tables 1-2 of El Kaddouri et al., one per game and kind: ours (verdict per setting), their claim, agreement."""
    lines = [
        "## El Kaddouri et al.'s tables 1-2, with ours",
        "",
        "Each cell: our verdict per setting (settings in the order of the learner's sweep, e.g. eps = "
        f"{', '.join(map(str, cfg.epsilons))}), the fractions of runs that converged there, El Kaddouri et al.'s "
        "claim ('report'), "
        "and agreement (all settings agree: yes; none: **no**; some: partly).",
        "",
    ]
    learners = [lr for lr in cfg.learners]
    for game in cfg.games:
        g_rows = [r for r in rows if r["game"] == game]
        for kind, title in (("nash", "Nash equilibria"), ("pareto", "Pareto optima")):
            tgts = []
            for r in g_rows:
                if kind in r["target_kind"].split("+") and r["target"] not in tgts:
                    tgts.append(r["target"])
            if not tgts:
                continue
            lines += [f"### {game}: {title}", "", "| target | " + " | ".join(SHORT[lr] for lr in learners) + " |",
                      "|---|" + "---|" * len(learners)]
            for t in tgts:
                cells = []
                for lr in learners:
                    rs = [r for r in g_rows if r["learner"] == lr and r["target"] == t]
                    if not rs:
                        cells.append("-")
                        continue
                    verdicts = "/".join(r["verdict"] for r in rs)
                    claim = rs[0]["paper_claim"]
                    agree = [r["agrees"] for r in rs]
                    mark = "" if claim == "-" else (
                        " · agrees: yes" if all(a == "yes" for a in agree)
                        else " · agrees: **no**" if all(a == "no" for a in agree) else " · agrees: partly")
                    cells.append(f"{verdicts} ({_cell(rs)}) · report {claim}{mark}")
                lines.append(f"| {t} | " + " | ".join(cells) + " |")
            nc = []
            for lr in learners:
                rs = [r for r in g_rows if r["learner"] == lr and r["target"] == NOT_CONVERGED]
                cyc = "/".join(f"{100 * r['cycling']:.0f}%" for r in rs)
                mov = "/".join(f"{100 * r['moving']:.0f}%" for r in rs)
                nc.append(f"{_cell(rs)} (cycling {cyc}; moving {mov})" if rs else "-")
            lines += ["| not converged | " + " | ".join(nc) + " |", ""]
    return lines


def setting_tables(cfg: Config, rows: list[dict]) -> list[str]:
    lines = []
    columns = [(lr, lab) for lr in cfg.learners for lab, _ in cfg.settings(lr)]
    for game in cfg.games:
        g_rows = [r for r in rows if r["game"] == game]
        lines += [f"### {game}", "", "| target | kind | " + " | ".join(f"{SHORT[lr]} {lab}" for lr, lab in columns) + " |",
                  "|---|---|" + "---|" * len(columns)]
        order = []
        for r in g_rows:
            if (r["target_kind"], r["target"]) not in order:
                order.append((r["target_kind"], r["target"]))
        order.sort(key=lambda kt: kt[1] == NOT_CONVERGED)
        for kind, t in order:
            cells = []
            for lr, lab in columns:
                m = [q for q in g_rows if q["learner"] == lr and q["setting"] == lab and q["target"] == t]
                if not m:
                    cells.append("-")
                elif t == NOT_CONVERGED:
                    cells.append(f"{100 * m[0]['fraction']:.0f}% (cyc. {100 * m[0]['cycling']:.0f}%, "
                                 f"mov. {100 * m[0]['moving']:.0f}%)")
                else:
                    cells.append(f"{100 * m[0]['fraction']:.0f}% {m[0]['verdict']}"
                                 + ("" if m[0]["agrees"] == "-" else " ✓" if m[0]["agrees"] == "yes" else " ✗"))
            lines.append(f"| {t} | {kind} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _is_mixed(row: dict) -> bool:
    """Whether a target row's profile is mixed (some probability strictly between 0 and 1)."""
    probs = [float(v) for v in (row["x"] + " " + row["y"]).split()]
    return any(1e-6 < p < 1 - 1e-6 for p in probs)


def discussion_groups(rows: list[dict]) -> dict:
    """The disagreeing rows (``agrees`` = no), grouped by (game, learner, target), in table order."""
    keyed: dict = {}
    for r in rows:
        if r["agrees"] == "no":
            keyed.setdefault((r["game"], r["learner"], r["target"]), []).append(r)
    return keyed


def discussion(cfg: Config, rows: list[dict]) -> list[str]:
    """One paragraph per (game, learner, target) where our verdicts disagree with El Kaddouri et al.'s, with its cause."""
    lines = []
    for (game, learner, target), rs in discussion_groups(rows).items():
        nc = {q["setting"]: q for q in rows if q["game"] == game and q["learner"] == learner and q["target"] == NOT_CONVERGED}
        settings = ", ".join(f"{r['setting']} ({100 * r['fraction']:.0f}%)" for r in rs)
        ours, claim = rs[0]["verdict"], rs[0]["paper_claim"]
        head = f"- **{game}, {SHORT[learner]}, {target}**: report {claim}, ours {ours} at {settings}. "
        mixed = _is_mixed(rs[0])
        cyc = max(nc[r["setting"]]["cycling"] for r in rs)
        notc = max(nc[r["setting"]]["fraction"] for r in rs)
        if mixed and claim == "Yes":
            avg = max(r["time_avg_fraction"] for r in rs)
            cause = ("Cause: an unstable mixed equilibrium. In a 2x2 coordination game it is a saddle of the replicator "
                     "and Boltzmann dynamics (repelling except along its stable manifold, which has measure zero), so "
                     "no run stays there" + ("; an epsilon-greedy policy cannot even take that value (its "
                     "probabilities are eps/2, 1/2 or 1 - eps/2)" if learner == "epsilon_greedy" else "")
                     + (f". {100 * avg:.0f}% of the runs have a time-averaged policy near it." if avg > 0 else
                        ". No run's time-averaged policy is near it either."))
        elif claim == "Yes" and cyc >= cfg.verdict_share:
            cause = (f"Cause: cycling. Up to {100 * cyc:.0f}% of the runs still swing between outcomes over the final "
                     "window and are counted as not converged; a last-iterate check would count some of them here.")
        elif claim == "Yes" and notc >= 0.5:
            cause = (f"Cause: up to {100 * notc:.0f}% of the runs have not settled by the end of the run (an open "
                     "parameter: the report fixes the iterations but not the criterion or the starts).")
        elif claim == "Yes":
            cause = ("Cause: the basin of this outcome holds fewer than the verdict share of our starts (see "
                     "basins_*.png); the report does not state its starting policies (an open parameter), and from "
                     "starts inside the basin its Yes reproduces.")
        else:
            cause = ("Cause: starting policies, an open parameter. The report does not state its starts; from our grid, "
                     "which covers the whole square, this outcome has a basin of attraction (see basins_*.png), so "
                     "runs started there end there. A 'No' claim can only hold for starts outside it.")
        if game == "subsidy_game":
            cause += " (The report's subsidy payoff table is an erratum; we use the game its equilibria describe.)"
        lines.append(head + cause)
    return lines or ["- None: every verdict agrees with El Kaddouri et al."]


# ----------------------------------------------------------------------------- dynamics and figures


@functools.partial(jax.jit, static_argnames=("exploration", "num_iterations", "num_steps"))
def _expected_dynamics(payoffs, q0s, temperature, epsilon, leniency, learning_rate, beta, *, exploration,
                       num_iterations, num_steps):
    """`fields.integrate_q` from each of ``q0s`` ``[K, 2, n]``, compiled once per static setting."""

    def one(q0):
        return fields.integrate_q(
            payoffs, q0, num_iterations=num_iterations, num_steps=num_steps,
            temperature=lambda t: temperature(t, num_iterations), epsilon=lambda t: epsilon(t, num_iterations),
            leniency=leniency, learning_rate=learning_rate, beta=beta, exploration=exploration,
        )

    return jax.vmap(one)(q0s)


def integrated_dynamics(cfg: Config, learner: str, game: matrix.MatrixGame, kwargs: dict, starts: np.ndarray):
    """The expected dynamics of the learner that ran, from its starts ``[K, 2, A]``: (xs, ys), each ``[K, steps + 1, n]``.

    Plain learners: rate alpha x_i / kappa (beta = 1); FAQ learners: alpha
    min(x_i, beta) / kappa; epsilon-greedy: the same Q-dynamics with the
    epsilon-greedy policy (Gomes & Kowalczyk 2009). Starting Q-values are
    the learners' own (`tabular.initial_q_from_policy`).
    """
    n = game.shape[0]
    lcfg = cfg.learner_config(learner)
    hp = tabular.learner_params(**kwargs)
    q0 = tabular.initial_q_from_policy(lcfg, starts, hp)[:, :, :n]
    xs, ys = _expected_dynamics(
        # kappa only for lenient learners (learner_params' default leniency is ignored by the others).
        game.payoffs, jnp.asarray(q0), hp.temperature, hp.epsilon, jnp.float32(kwargs.get("leniency", 1)), hp.learning_rate,
        hp.faq_beta, exploration="epsilon_greedy" if learner == "epsilon_greedy" else "boltzmann",
        num_iterations=cfg.num_iterations, num_steps=2000,
    )
    return np.asarray(xs), np.asarray(ys)


def _field_kw(kwargs: dict) -> dict:
    tau0 = kwargs.get("temperature", (1.0, 1.0))[0]
    return dict(temperature=tau0, leniency=kwargs.get("leniency", 1), learning_rate=kwargs["learning_rate"],
                beta=kwargs.get("faq_beta", 1.0))


def _slug(label: str) -> str:
    return label.replace("=", "").replace(",", "_")


def field_title(cfg: Config, learner: str, label: str, kwargs: dict) -> str:
    """The first line of a dynamics figure's title: the learner, its setting, and which field is drawn behind it.

    The field is named by the learner whose expected dynamics it draws (not
    by the formula's family), with the temperature it is drawn at.
    """
    head = f"{SHORT[learner]} Q-learning ({label})"
    if learner == "epsilon_greedy":
        return (f"{head}: no field drawn (the policy jumps between greedy corners; "
                "the dynamics live in Q-space)")
    tau0 = _field_kw(kwargs)["temperature"]
    extras = []
    if "leniency" in kwargs:
        extras.append(f"kappa = {kwargs['leniency']}")
    if LEARNERS[learner][1]:
        extras.append(f"beta = {cfg.faq_beta}")
    params = f" ({', '.join(extras)})" if extras else ""
    return (f"{head}: field = expected dynamics of {SHORT[learner]} Q-learning{params} at the start temperature "
            f"tau = {tau0} (the runs anneal tau to {cfg.temperature_end}), on the slice Q = tau ln x")


def _greedy_steps(ax, times, actions, ode_times, ode_actions, names, k, color):
    """Greedy action over iterations: the learner's run as steps (solid) and the expected dynamics (dashed)."""
    off = (k - 1.5) * 0.09  # the demo starts side by side, not on top of each other
    ax.step(times, actions + off, where="post", color=color, lw=2.2, alpha=0.5)
    ax.step(ode_times, ode_actions + off, where="post", color=color, lw=1.0, ls=(0, (3, 2)), zorder=3)
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.5, len(names) - 0.5)


def plot_dynamics(cfg: Config, learner: str, results: dict, rd: ResultsDir) -> tuple[list[str], list[dict]]:
    """``dynamics_<learner>_<setting>.png`` for every setting.

    Boltzmann-family learners: the field of the learner (`field_title`),
    each demo run (wide, pale, solid) and the integrated expected dynamics
    of that learner from the same start (thin, dashed, on top). Epsilon-greedy:
    no field; the recorded policies as points (the policy jumps between
    corners, so a line would draw policies no run took), and two rows of the
    greedy action of each player over the iterations, as steps.

    Returns:
        (file names, overlay rows): for each demo start, the largest and the
        final distance (max-abs over all probabilities, at the recorded
        times) between the learner's one run and the integrated expected
        dynamics of that learner.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxgames.dynamics import plots

    names, overlay = [], []
    games = [g for g in cfg.games if (g, learner) in results]
    cmap = matplotlib.colormaps["tab10"]
    jumps = learner == "epsilon_greedy"
    solid = dict(lw=2.4, alpha=0.45)  # the learner's run: wide and pale, so the dashed curve on top shows
    dashed = dict(ls=(0, (3, 2)), lw=1.1, alpha=1.0, zorder=3)
    for s, (label, kwargs) in enumerate(cfg.settings(learner)):
        rows = 3 if jumps else 1
        fig, axes = plt.subplots(rows, len(games), figsize=(4.2 * len(games), 4.6 + 2.0 * (rows - 1)), squeeze=False,
                                 gridspec_kw=dict(height_ratios=[2.6] + [1] * (rows - 1)))
        field_kw = _field_kw(kwargs)
        for col, name in enumerate(games):
            ax = axes[0, col]
            game = jaxgames.make(name)
            data = results[(name, learner)]
            demo = data["demo_trajectory"][data["demo_setting"] == s]  # [K, R+1, 2, A]
            n = game.shape[0]
            xs, ys = integrated_dynamics(cfg, learner, game, kwargs, demo_starts(game))
            at = np.round(np.linspace(0, xs.shape[1] - 1, demo.shape[1])).astype(int)  # record times in ODE steps
            ode = np.stack([xs[:, at], ys[:, at]], 2)  # [K, R+1, 2, n]
            gap = np.abs(demo[..., :n] - ode).max(axis=(2, 3))  # [K, R+1]
            for k in range(len(gap)):
                overlay.append(dict(game=name, learner=learner, setting=label, start=k,
                                    start_policy=" ".join(f"{v:.2f}" for v in demo[k, 0, :, 0]),
                                    max_gap=float(gap[k].max()), final_gap=float(gap[k, -1])))
            if game.shape == (2, 2):
                if not jumps:
                    plots.plot_field_2x2(ax, "q_learning", game.payoffs_np, action_names=game.action_names, **field_kw)
                else:
                    ax.set_xlim(0, 1), ax.set_ylim(0, 1), ax.set_aspect("equal")
                    ax.set_xlabel(f"player 1: P({game.action_names[0][0]})")
                    ax.set_ylabel(f"player 2: P({game.action_names[1][0]})")
                plots.plot_trajectories_2x2(ax, demo[:, :, :, 0], points=jumps, **({} if jumps else solid))
                for k in range(len(xs)):
                    if jumps:  # the expected dynamics jump too: its recorded points, as crosses
                        ax.plot(ode[k, :, 0, 0], ode[k, :, 1, 0], "x", color=cmap(k), ms=7, mew=1.0, zorder=3)
                    else:
                        ax.plot(xs[k, :, 0], ys[k, :, 0], color=cmap(k), **dashed)
                for kind, prof in targets(game):
                    ax.plot(prof.x[0], prof.y[0], "*" if "nash" in kind else "D",
                            color="crimson" if "nash" in kind else "gold", ms=13 if "nash" in kind else 7,
                            mec="k", mew=0.5, zorder=5, clip_on=False)
            else:
                if not jumps:
                    plots.plot_simplex(ax, "q_learning", game.payoffs_np, action_names=game.action_names[0], **field_kw)
                else:
                    plots.plot_simplex(ax, "q_learning", game.payoffs_np, grid=0, action_names=game.action_names[0])
                plots.plot_trajectories_simplex(ax, demo[:, :, 0, :n], points=jumps, **({} if jumps else solid))
                for k in range(len(xs)):
                    if jumps:
                        xy = plots.simplex_to_xy(ode[k, :, 0])
                        ax.plot(xy[:, 0], xy[:, 1], "x", color=cmap(k), ms=7, mew=1.0, zorder=3)
                    else:
                        xy = plots.simplex_to_xy(xs[k])
                        ax.plot(xy[:, 0], xy[:, 1], color=cmap(k), **dashed)
                for kind, prof in targets(game):
                    if "nash" in kind:
                        xy = plots.simplex_to_xy(prof.x)
                        ax.plot(xy[0], xy[1], "*", color="crimson", ms=13, mec="k", mew=0.5, zorder=5)
            ax.set_title(name.replace("_", " "), fontsize=10)
            if jumps:
                times = np.arange(demo.shape[1]) * cfg.record_every
                ode_times = np.linspace(0, cfg.num_iterations, xs.shape[1])
                for player, (row_ax, z) in enumerate(zip(axes[1:, col], (xs, ys))):
                    for k in range(len(xs)):
                        _greedy_steps(row_ax, times, np.argmax(demo[k, :, player, :n], -1), ode_times,
                                      np.argmax(z[k], -1), game.action_names[player], k, cmap(k))
                    row_ax.set_ylabel(f"player {player + 1}\ngreedy action", fontsize=8)
                    row_ax.tick_params(labelsize=8)
                axes[2, col].set_xlabel("iteration", fontsize=8)
        if jumps:
            how = (f"points = the run's policy, recorded every {cfg.record_every:,} iterations (no lines: it jumps), "
                   "crosses = the integrated expected dynamics of this learner at the same times;\nbelow: each "
                   "player's greedy action over the iterations, run (wide, pale) and expected dynamics (dashed), "
                   "the four demo starts side by side")
        else:
            how = ("learner runs (wide, pale; bullet = start, square = end), integrated expected dynamics of this learner "
                   "from the same starts (thin, dashed, on top)")
        fig.suptitle(f"{field_title(cfg, learner, label, kwargs)}\n{how}; * Nash, \u25c6 Pareto", fontsize=9)
        fig.tight_layout()
        fname = f"dynamics_{learner}_{_slug(label)}.png"
        rd.save_figure(fig, fname, dpi=110, bbox_inches="tight")
        plt.close(fig)
        names.append(fname)
    return names, overlay


def plot_basins(cfg: Config, learner: str, results: dict, classes: dict, rd: ResultsDir) -> str | None:
    """``basins_<learner>.png``: each start coloured by the outcome most of its seeds reached.

    2x2 games: the grid of starts as cells of the unit square. 3-action games
    (random symmetric starts, not a grid): one dot per start on the simplex
    of player 1's starting policy (player 2 starts at the same policy).
    """
    from jaxgames.dynamics import plots

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    games = [g for g in cfg.games if (g, learner) in results]
    if not games:
        return None
    settings = cfg.settings(learner)
    fig, axes = plt.subplots(len(settings), len(games), figsize=(3.4 * len(games), 3.2 * len(settings) + 0.8),
                             squeeze=False)
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#17becf", "#bcbd22"]
    edges = np.linspace(0.1, 0.9, cfg.start_grid)
    half = (edges[1] - edges[0]) / 2 if cfg.start_grid > 1 else 0.4
    for col, name in enumerate(games):
        game = jaxgames.make(name)
        cls = classes[(name, learner)]
        tl_ = targets(game)
        # More targets than the palette (biased RPS: 10): tab10 without orange and grey (cycling, not converged),
        # then dark tab20b colours; no pale colours, which would read as "seeds disagree".
        pal = palette if len(tl_) <= len(palette) else (
            [c for i, c in enumerate(matplotlib.colormaps["tab10"].colors) if i not in (1, 7)]
            + [matplotlib.colormaps["tab20b"].colors[i] for i in (0, 4, 8, 12, 16)])
        colours = {k: pal[k % len(pal)] for k in range(len(tl_))}
        colours[-1], colours[-2] = "#9a9a9a", "#ff7f0e"  # not converged, cycling
        square = game.shape == (2, 2)
        data = results[(name, learner)]
        start_policy = data["initial_policy"][~data["is_demo"]]  # [R, 2, A], in the order of cls["start"]
        seen = set()
        for s, (label, _) in enumerate(settings):
            ax = axes[s, col]
            sel = cls["setting"] == s
            code = np.where(cls["cycling"], -2, cls["outcome"])
            if not square:
                plots.plot_simplex(ax, "q_learning", game.payoffs_np, grid=0, action_names=game.action_names[0])
            for i in np.unique(cls["start"][sel]):
                vals = code[sel & (cls["start"] == i)]
                uniq, counts = np.unique(vals, return_counts=True)
                top = int(uniq[np.argmax(counts)])
                seen.add(top)
                share = counts.max() / len(vals)
                if square:
                    px, py = edges[i // cfg.start_grid], edges[i % cfg.start_grid]
                    ax.add_patch(plt.Rectangle((px - half, py - half), 2 * half, 2 * half, color=colours[top],
                                               alpha=0.35 + 0.65 * share, lw=0))
                else:
                    xy = plots.simplex_to_xy(start_policy[np.flatnonzero(sel & (cls["start"] == i))[0], 0, :3])
                    ax.plot(xy[0], xy[1], "o", color=colours[top], alpha=0.35 + 0.65 * share, ms=7, mec="none")
            if square:
                lim = (max(0.0, 0.1 - half), min(1.0, 0.9 + half))  # probabilities: cells clipped to [0, 1]
                ax.set_xlim(*lim), ax.set_ylim(*lim), ax.set_aspect("equal")
                ax.set_xlabel(f"P1 start P({game.action_names[0][0]})", fontsize=8)
                ax.set_ylabel(f"P2 start P({game.action_names[1][0]})", fontsize=8)
            ax.set_title(f"{name.replace('_', ' ')}" + ("" if square else " (dot = a start, both players)")
                         + f"\n{label}", fontsize=8)
        handles = [Patch(color=colours[k], label=f"{target_label(game, p)}") for k, (_, p) in enumerate(tl_)
                   if square or k in seen]
        handles += [Patch(color=colours[c], label=t) for c, t in ((-1, "not converged"), (-2, "cycling"))
                    if square or c in seen]
        axes[-1, col].legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2)
    fig.suptitle(f"{SHORT[learner]} Q-learning: basins of attraction (colour = outcome of most random seeds from "
                 "that start; paler = seeds disagree)" + ("; eps-greedy outcomes as played, with exploration"
                                                          if learner == "epsilon_greedy" else ""), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fname = f"basins_{learner}.png"
    rd.save_figure(fig, fname, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return fname


def plot_empirical_fields(cfg: Config, rd: ResultsDir, key) -> str | None:
    """``empirical_fields.png``: measured mean flow (red) and the theoretical field at the same points (blue).

    Boltzmann-family learners at constant tau = the first temperature start
    and the first kappa, from Q = tau ln x; 2x2 games only.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxgames.dynamics import plots

    learners = [lr for lr in cfg.learners if lr != "epsilon_greedy"]
    games = [g for g in cfg.games if jaxgames.make(g).shape == (2, 2)]
    if not learners or not games or cfg.empirical_grid < 1:
        return None
    ps = np.linspace(0.1, 0.9, cfg.empirical_grid)
    px, py = np.meshgrid(ps, ps, indexing="ij")
    points = np.stack([np.stack([px.ravel(), 1 - px.ravel()], -1), np.stack([py.ravel(), 1 - py.ravel()], -1)], 1)
    length = 0.85 * (0.8 / (cfg.empirical_grid - 1) if cfg.empirical_grid > 1 else 0.4)  # the fastest: 85% of a cell
    fig, axes = plt.subplots(len(learners), len(games), figsize=(3.8 * len(games), 3.9 * len(learners)), squeeze=False)
    for r, learner in enumerate(learners):
        label, kwargs = cfg.settings(learner)[0]
        kwargs = dict(kwargs, temperature_schedule="constant", temperature=kwargs["temperature"][0])
        hp = tabular.learner_params(**kwargs)
        fkw = dict(temperature=kwargs["temperature"], leniency=kwargs.get("leniency", 1),
                   learning_rate=kwargs["learning_rate"], beta=kwargs.get("faq_beta", 1.0))
        for c, name in enumerate(games):
            game = jaxgames.make(name)
            ax = axes[r, c]
            emp = empirical.empirical_field(game, LEARNERS[learner][0], hp, points,
                                            jax.random.fold_in(key, 100 * r + c), horizon=cfg.empirical_horizon,
                                            runs_per_point=cfg.empirical_runs, max_leniency=max(cfg.leniencies))
            theory = _theory_at(game, points, fkw)
            plots.plot_field_2x2(ax, "q_learning", game.payoffs_np, action_names=game.action_names, color="0.6",
                                 linewidth=0.7, density=0.8, **fkw)
            # One scale per panel for both arrows; length ~ sqrt(speed), so slow arrows stay visible.
            arrows = dict(scale=float(np.max(np.hypot(theory[:, 0], theory[:, 1]))) or 1.0, length=length, power=0.5)
            plots.plot_arrows_2x2(ax, points[:, :, 0], theory, color="tab:blue", label="expected", width=0.014,
                                  **arrows)
            plots.plot_arrows_2x2(ax, points[:, :, 0], emp.velocity[:, :, 0], color="crimson", label="measured",
                                  width=0.006, zorder=5, **arrows)
            kappa_txt = f", kappa={kwargs['leniency']}" if "leniency" in kwargs and LEARNERS[learner][0] != "boltzmann" else ""
            ax.set_title(f"{SHORT[learner]} Q-learning (tau={fkw['temperature']} const{kappa_txt})\n"
                         f"{name.replace('_', ' ')}", fontsize=8)
            if r == 0 and c == 0:
                ax.legend(fontsize=7, loc="lower left", framealpha=0.9)
    fig.suptitle(f"Measured mean flow of each learner (red, thin: {cfg.empirical_runs} runs x {cfg.empirical_horizon} "
                 "iterations from each point) against the expected dynamics of the same learner (blue, wide; grey "
                 "streamlines: the same field)\narrow length ~ sqrt(speed), one scale per panel for both colours; "
                 "constant tau, on the slice Q = tau ln x", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.985))  # room for the two-line title
    fname = "empirical_fields.png"
    rd.save_figure(fig, fname, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return fname


@jax.jit
def _theory_points(payoffs, xs, ys, temperature, leniency, learning_rate, beta):
    def one(x, y):
        dx, dy = fields.vector_field("q_learning", payoffs, x, y, temperature=temperature, leniency=leniency,
                                     learning_rate=learning_rate, beta=beta)
        return jnp.stack([dx[0], dy[0]])

    return jax.vmap(one)(xs, ys)


def _theory_at(game, points: np.ndarray, fkw: dict) -> np.ndarray:
    return np.asarray(_theory_points(game.payoffs, jnp.asarray(points[:, 0, :2], jnp.float32),
                                     jnp.asarray(points[:, 1, :2], jnp.float32), *(jnp.float32(fkw[k]) for k in
                                     ("temperature", "leniency", "learning_rate", "beta"))))


# ----------------------------------------------------------------------------- report and main


def overlay_summary(cfg: Config, overlay: list[dict]) -> list[str]:
    """A table: how closely each learner's demo runs follow the dashed (expected-dynamics) curves."""
    lines = ["| learner | setting | starts | median largest gap | same end point (final gap < 0.1) |",
             "|---|---|---:|---:|---:|"]
    for learner in cfg.learners:
        for label, _ in cfg.settings(learner):
            rs = [r for r in overlay if r["learner"] == learner and r["setting"] == label]
            if rs:
                lines.append(f"| {SHORT[learner]} | {label} | {len(rs)} | {np.median([r['max_gap'] for r in rs]):.2f} | "
                             f"{sum(r['final_gap'] < 0.1 for r in rs)}/{len(rs)} |")
    return lines


def agreement_summary(cfg: Config, rows: list[dict]) -> list[str]:
    """One line per (game, target) El Kaddouri et al. make claims on: which learners agree, with our fractions."""
    lines = []
    for game in cfg.games:
        targets_seen = []
        for r in rows:
            if r["game"] == game and r["paper_claim"] != "-" and r["target"] not in targets_seen:
                targets_seen.append(r["target"])
        for t in targets_seen:
            parts = []
            for lr in cfg.learners:
                rs = [r for r in rows if r["game"] == game and r["learner"] == lr and r["target"] == t]
                if not rs or rs[0]["paper_claim"] == "-":
                    continue
                ok = all(r["agrees"] == "yes" for r in rs)
                parts.append(f"{SHORT[lr]} report {rs[0]['paper_claim']}, ours {'/'.join(r['verdict'] for r in rs)} "
                             f"({_cell(rs)}){'' if ok else ' **disagrees**'}")
            lines.append(f"- {game} {t}: " + "; ".join(parts))
    return lines


def _played_payoffs(row: dict):
    """Expected payoffs of each action against the opponent's policy as played (with exploration), and the greedy actions."""
    a, b = jaxgames.make(row["game"]).payoffs_np.astype(np.float64)
    px = np.array([float(v) for v in row["played_x"].split()])
    py = np.array([float(v) for v in row["played_y"].split()])
    return a @ py, b.T @ px, int(np.argmax(px)), int(np.argmax(py))


def _perturbed_rest_point(row: dict) -> bool:
    """Whether each player's greedy action is a best response to the other's exploring policy (a rest point)."""
    ux, uy, i, j = _played_payoffs(row)
    return bool(ux[i] >= ux.max() - 1e-9 and uy[j] >= uy.max() - 1e-9)


def other_findings(cfg: Config, rows: list[dict]) -> list[str]:
    """Findings El Kaddouri et al.'s tables have no row for: exploration-perturbed rest points, orbits around mixed
    equilibria."""
    lines = []
    for r in rows:
        if not (r["learner"] == "epsilon_greedy" and r["verdict"] == "Yes" and r["target_kind"] == "pareto"):
            continue
        game = jaxgames.make(r["game"])
        ux, uy, i, j = _played_payoffs(r)
        if _perturbed_rest_point(r):
            lines.append(
                f"- **{r['game']}, eps-greedy {r['setting']}**: {100 * r['fraction']:.0f}% of the runs settle at "
                f"{r['target']}, which is not a Nash equilibrium: against an opponent who explores with probability "
                f"eps, {game.action_names[0][i]} is a best response (row payoffs {np.round(ux, 4).tolist()}, column "
                f"{np.round(uy, 4).tolist()}), so the outcome as played is an equilibrium of the exploration-perturbed "
                "game, a rest point of constant-epsilon Q-learning.")
    for r in rows:
        if not (r["learner"] == "epsilon_greedy" and r["verdict"] == "No" and "nash" in r["target_kind"]
                and r["target"] != NOT_CONVERGED and not _is_mixed(r)):
            continue
        if not _perturbed_rest_point(r):
            lines.append(
                f"- **{r['game']}, eps-greedy {r['setting']}**: {r['target']} is a Nash equilibrium but not a rest point "
                "of constant-epsilon Q-learning: against the opponent's exploring policy its action is no longer a "
                "best response, so no run can stay there.")
    for r in rows:
        if r["target"] != NOT_CONVERGED and _is_mixed(r) and r["time_avg_fraction"] > 0:
            nc = [q for q in rows if q["game"] == r["game"] and q["learner"] == r["learner"]
                  and q["setting"] == r["setting"] and q["target"] == NOT_CONVERGED][0]
            lines.append(
                f"- **{r['game']}, {SHORT[r['learner']]} {r['setting']}**: {100 * r['fraction']:.0f}% of the runs "
                f"converge to the mixed equilibrium, but {100 * r['time_avg_fraction']:.0f}% have a time-averaged "
                f"policy (final window) within {cfg.tolerance} of it; {100 * nc['fraction']:.0f}% are not converged "
                f"(mean time-averaged row policy {nc['mean_time_avg_x']}).")
    return lines or ["- None."]


def disagreement_count(rows: list[dict]) -> tuple[int, int]:
    """(disagreeing, compared): verdicts that differ from El Kaddouri et al.'s, of those they make a claim on."""
    compared = [r for r in rows if r["agrees"] != "-"]
    return sum(r["agrees"] == "no" for r in compared), len(compared)


def _pct(v: float) -> str:
    return f"{100 * float(v):.0f}%"


def _row(rows: list[dict], **match) -> dict | None:
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    return found[0] if found else None


def _same_end(overlay: list[dict], game: str, learner: str, setting: str) -> str:
    rs = [r for r in overlay if r["game"] == game and r["learner"] == learner and r["setting"] == setting]
    return f"{sum(r['final_gap'] < 0.1 for r in rs)} of {len(rs)}"


def surprises(cfg: Config, rows: list[dict], overlay: list[dict]) -> list[str]:
    """Results a reader would not expect, each with the numbers of this run's ``convergence.csv``.

    Two kinds, found in the table (nothing here is a fixed percentage):
    Boltzmann-family settings where most runs (>= 50%) converge nowhere, and
    Boltzmann-family verdicts Yes at a pure outcome that is no Nash
    equilibrium (e.g. lenient learners at (R, R) in biased RPS).
    """
    lines = []
    boltz = [lr for lr in cfg.learners if lr != "epsilon_greedy"]
    for game_name in cfg.games:
        game = jaxgames.make(game_name)
        nash = [p for k, p in targets(game) if "nash" in k]
        for learner in boltz:
            for label, _ in cfg.settings(learner):
                nc = _row(rows, game=game_name, learner=learner, setting=label, target=NOT_CONVERGED)
                if nc is None or nc["fraction"] < 0.5:
                    continue
                stalled = nc["fraction"] - nc["cycling"] - nc["moving"]
                near = [r for r in rows if r["game"] == game_name and r["learner"] == learner and r["setting"] == label
                        and r["target"] != NOT_CONVERGED and r["time_avg_fraction"] > 0]
                avg = ("; the time-averaged policy over the final window is within " f"{cfg.tolerance} of "
                       + ", ".join(f"{r['target']} in {_pct(r['time_avg_fraction'])}" for r in near)
                       if near else f"; not even the time-averaged policy over the final window is within "
                       f"{cfg.tolerance} of any target")
                text = (f"- **{game_name}, {SHORT[learner]} {label}: {_pct(nc['fraction'])} of the runs converge "
                        f"nowhere** ({_pct(nc['cycling'])} cycling, {_pct(nc['moving'])} moving, {_pct(stalled)} "
                        f"stalled){avg}. Mean time-averaged row policy of those runs: ({nc['mean_time_avg_x']}) over "
                        f"{game.action_names[0]}. The integrated expected dynamics end where the demo run ends for "
                        f"{_same_end(overlay, game_name, learner, label)} demo starts (dynamics_{learner}_"
                        f"{_slug(label)}.png)" + (", so this is the learner's expected behaviour, not sampling noise."
                                                  if _same_end(overlay, game_name, learner, label).split()[0]
                                                  == _same_end(overlay, game_name, learner, label).split()[-1]
                                                  else "; single runs carry noise near a separatrix."))
                if len(nash) == 1 and nash[0].is_pure():
                    faq = _row(rows, game=game_name, learner="faq_" + learner, setting=label,
                               target=target_label(game, nash[0]))
                    text += (f" {target_label(game, nash[0])} is the only Nash equilibrium. A reading of the expected "
                             "dynamics, E[dQ_i] = alpha x_i / kappa (u_i - Q_i): the Q-value of an action that is "
                             "rarely played moves slowly, so after one player has defected the other's Q-value of "
                             "the abandoned action keeps the value it learned earlier (for a lenient learner the best "
                             "of kappa rewards) while the Q-value of the played action falls; the abandoned action "
                             "comes back for a while (in the figure: one player's probability rises along an axis "
                             f"and returns late), and the final {max(1, cfg.num_iterations // 10):,} iterations "
                             "catch it on the way back.")
                    if faq is not None:
                        text += (f" The frequency-adjusted variant ({SHORT['faq_' + learner]}, same setting), whose "
                                 f"rates are min(x_i, beta), converges there in {_pct(faq['fraction'])} of its runs.")
                elif nash and not any(p.is_pure() for p in nash):
                    eq = nash[0].x
                    tavg = np.array([float(v) for v in str(nc["mean_time_avg_x"]).split()]) if nc["mean_time_avg_x"] \
                        else None
                    text += (" The only Nash equilibrium is mixed, x* = (" + ", ".join(f"{v:.4g}" for v in eq) + ")")
                    if tavg is not None and len(tavg) == len(eq):
                        text += f"; the mean time-averaged policy is {np.abs(tavg - eq).max():.2f} (max-abs) from it"
                    if LEARNERS[learner][1] and stalled >= 0.5:
                        text += (f". For scale: FAQ caps every action's expected rate at alpha beta = "
                                 f"{cfg.learning_rate * cfg.faq_beta:.3g} per iteration (a time constant of "
                                 f"{1 / (cfg.learning_rate * cfg.faq_beta):,.0f} iterations; the final window is "
                                 f"{max(1, cfg.num_iterations // 10):,}), so a run that still drifts moves little within "
                                 f"the window: {_pct(stalled)} are 'stalled' (not converged, range below "
                                 f"{cfg.cycling_range} over the window) away from every target, i.e. still on their way, "
                                 "not at a rest point we can name")
                    text += "."
                lines.append(text)
    for r in rows:
        if not (r["learner"] != "epsilon_greedy" and r["verdict"] == "Yes" and "nash" not in r["target_kind"]):
            continue
        game = jaxgames.make(r["game"])
        a, b = game.payoffs_np.astype(np.float64)
        (i,) = [k for k, v in enumerate(r["x"].split()) if float(v) == 1.0]
        (j,) = [k for k, v in enumerate(r["y"].split()) if float(v) == 1.0]
        if a[:, j].max() > a[i, j]:  # the row player gains by deviating
            who, br, mine, other, gain, now = 1, int(np.argmax(a[:, j])), i, game.action_names[1][j], a[:, j], a[i, j]
            names = game.action_names[0]
        else:
            who, br, mine, other, gain, now = 2, int(np.argmax(b[i])), j, game.action_names[0][i], b[i], b[i, j]
            names = game.action_names[1]
        why = "Pareto optimal only because the game is zero-sum" if np.allclose(a + b, 0) else "Pareto optimal"
        text = (f"- **{r['game']}, {SHORT[r['learner']]} {r['setting']}: {_pct(r['fraction'])} of the runs settle on "
                f"{r['target']}, which is no Nash equilibrium** (a pure outcome, {why}): against {other}, player "
                f"{who}'s {names[br]} earns {gain[br]:.4g} and {names[mine]} {now:.4g}. Runs can stay there because tau "
                f"anneals to {cfg.temperature_end}: the Q-value of the better reply, almost never played, is updated "
                "at a rate proportional to its probability (E[dQ_i] = alpha min(x_i, beta) / kappa (u_i - Q_i)) and "
                "does not catch up before the policy is frozen.")
        nash = [p for k, p in targets(game) if "nash" in k]
        if "leniency" in dict(cfg.settings(r["learner"])).get(r["setting"], {}) and nash and not nash[0].is_pure():
            kappa = dict(cfg.settings(r["learner"]))[r["setting"]]["leniency"]
            u = np.asarray(fields.lenient_utility(jnp.asarray(a, jnp.float32), jnp.asarray(nash[0].y, jnp.float32),
                                                  kappa))
            text += (f" Why there: at the mixed equilibrium the lenient utilities (the best of kappa = {kappa} rewards) "
                     "are " + ", ".join(f"{n}: {v:.3g}" for n, v in zip(game.action_names[0], u))
                     + f" (the plain expected payoffs are all equal there), so leniency pulls both players towards "
                     f"{game.action_names[0][int(np.argmax(u))]}, the action whose best reward is the largest.")
        lines.append(text)
    return lines or ["- None found in this run's table (no Boltzmann-family setting with most runs converging "
                     "nowhere, no Yes at a non-equilibrium outcome)."]


def write_report(cfg: Config, rows: list[dict], figures: dict, rd: ResultsDir, timing: dict,
                 overlay: list[dict]) -> None:
    """``README.md`` of the results folder: what to open first.

    Args:
        timing: ``wall`` (s, this call), ``this_call_runs`` (s, of it loading or computing the runs), ``runs``
            (s, the learner runs' own compute time, summed over the cached pieces, reused or not), ``pieces``,
            ``reused`` (pieces from the cache) and ``reused_runs`` (the runs they hold, demo runs included).
    """
    disagree, compared = disagreement_count(rows)
    kappas = sorted(set(cfg.leniencies) | {5})
    pd_eps = [r for r in rows if r["game"] == "prisoners_dilemma" and r["learner"] == "epsilon_greedy"
              and r["target"] == NOT_CONVERGED]
    starts = cfg.start_grid * cfg.start_grid
    resumed = (f"; it reused {timing['reused_runs']} cached runs ({timing['reused']} of the {timing['pieces']} "
               "game x learner pieces) from an earlier call" if timing["reused"] else "")
    lines = [
        "# Independent learners in the matrix games of El Kaddouri et al. (section 3)",
        "",
        f"Source: {SOURCE}, section 3 (tables 1-2, figure 1).",
        "",
        f"Made by `python experiments/matrix_dynamics.py` with `config.json` ({'full' if cfg.full else 'small default'} "
        f"sweep). Compute time of these results: {timing['runs']:.0f} s of learner runs (each piece's own time, "
        f"stored with it) plus {timing['wall'] - timing['this_call_runs']:.0f} s of tables, figures and measured "
        f"fields (this call: {timing['wall']:.0f} s wall{resumed}; the sweeps on {timing['devices']} device(s)). "
        f"Each setting runs {starts} starts x "
        f"{cfg.seeds} random seeds = {starts * cfg.seeds} sweep runs, counted in the tables, plus 4 demo runs (the "
        f"trajectories drawn in the dynamics figures, not counted): the progress bars count both "
        f"({starts * cfg.seeds + 4} per setting). Read in this order:",
        "",
        "1. this page: settings, what reproduced, the disagreements and their causes, the surprising results;",
        "2. [`convergence.md`](convergence.md): El Kaddouri et al.'s tables 1-2 with our fractions and verdicts, then every "
        "setting ([`convergence.csv`](convergence.csv): one row per game, learner, setting and target);",
        "3. the dynamics figures, one per learner and setting: "
        + ", ".join(f"[`{f}`]({f})" for f in figures["dynamics"]) + ";",
        "4. basins of attraction (2x2 games: the grid of starts; biased RPS: its random starts as dots on the simplex, "
        "since they form no grid): " + ", ".join(f"[`{f}`]({f})" for f in figures["basins"]) + ";",
    ]
    if figures.get("empirical"):
        lines.append(f"5. [`{figures['empirical']}`]({figures['empirical']}): the learners' measured flow against "
                     "their expected dynamics.")
    lines += [
        "",
        "## Settings",
        "",
        settings_text(cfg),
        "",
        "Learners (`jaxgames.learners.tabular`): stateless independent Q-learning, Q(a) <- Q(a) + alpha (r - Q(a)), "
        "with epsilon-greedy or Boltzmann exploration; the lenient learner updates once per kappa plays of an action, "
        "towards the maximum of the kappa rewards; the FAQ learners scale each update by min(beta / x_a, 1) "
        "(Kaisers & Tuyls 2010). Targets are computed from the payoffs (`jaxgames.analysis.equilibria`).",
        "",
        "Dashed curves are the expected dynamics of the learner that ran, E[dQ_i] = alpha min(x_i, beta) / kappa "
        "(u_i - Q_i) (beta = 1 for plain learners, u_i the lenient utility for lenient ones), integrated in Q-space "
        "with the learner's own temperature schedule (`jaxgames.dynamics.fields.integrate_q`; tested against the mean "
        "of 256 learner runs in `tests/test_dynamics.py`); they are drawn thin and on top of the learner's run (wide, "
        "pale), so both stay visible where they coincide. The background field is the expected dynamics of the "
        "learner that ran (its kappa and beta included; each figure's title names it) at the start temperature, "
        "drawn on the slice Q = tau ln x (the Q-values the runs start from): with unequal rates the policy flow "
        "depends on the Q-values, not only on the policy; the runs then anneal tau, so late in a run the flow is "
        "that of a colder field. Epsilon-greedy panels draw no field: the policy is a step function of Q (Gomes & "
        "Kowalczyk 2009), so a policy-space field does not exist. Their runs jump between the corner policies "
        "(1 - eps) greedy + eps uniform, so they are drawn as the recorded points (crosses: the expected dynamics, "
        "the same Q-dynamics integrated with the epsilon-greedy policy), with each player's greedy action over the "
        "iterations as steps below: a line between two corners would draw policies no run took.",
        "",
        "## What reproduced",
        "",
        f"**{disagree} of {compared}** (game, learner, setting, target) verdicts disagree with El Kaddouri et al.'s "
        f"tables 1-2 ({compared - disagree} agree; a row of `convergence.csv` with `agrees` = no each). They fall into "
        f"{len(discussion_groups(rows))} groups, discussed under \"Disagreements and their causes\" below. See "
        "`convergence.md` for each one. Per claim of the report (all settings of a learner agreeing counts as agree):",
        "",
        *agreement_summary(cfg, rows),
        "",
    ]
    if pd_eps:
        lines.append("Prisoner's dilemma, epsilon-greedy: " + "; ".join(
            f"{r['setting']}: {100 * r['fraction']:.0f}% not converged, {100 * r['cycling']:.0f}% cycling"
            for r in pd_eps) + " (runs that flip between outcomes in the final window are not counted as converged).")
        lines.append("")
    lines += [
        "## Do the learners follow the dashed curves?",
        "",
        "For each demo start (four per game), the largest and the final max-abs distance between the learner's single "
        "run and the integrated expected dynamics of that learner ([`overlay_check.csv`](overlay_check.csv)). A single "
        "run carries noise, and near a separatrix run and curve may go to different outcomes; the mean of many runs "
        "follows the curve (tested in `tests/test_dynamics.py`).",
        "",
        *overlay_summary(cfg, overlay),
        "",
        "## Surprising results",
        "",
        *surprises(cfg, rows, overlay),
        "",
        "## Other findings",
        "",
        *other_findings(cfg, rows),
        "",
        "## Disagreements and their causes",
        "",
        f"{disagree} of {compared} verdicts, in {len(discussion_groups(rows))} groups (one per game, learner and target; "
        "the verdicts of a group are its settings):",
        "",
        *discussion(cfg, rows),
        "",
        "## The report's '1/4 chance' (section 3.2.1)",
        "",
        "El Kaddouri et al. say that with two actions per agent there is a 1/4 chance of obtaining the highest reward for each "
        "action if the other agent plays uniformly. Each reward an action receives is one draw from two equally likely "
        "outcomes, so one draw has chance 1/2 of being the highest; the lenient learner keeps the best of kappa draws, "
        "which is the highest with chance 1 - (1/2)^kappa: "
        + ", ".join(f"kappa = {k}: {1 - 0.5 ** k:.4g}" for k in kappas)
        + ". 1/4 is the chance that BOTH players' single draws are their best (1/2 x 1/2), not a per-action chance.",
        "",
        "## Errata in the report, followed as computed",
        "",
        "- Subsidy game: the printed table contradicts the report's own equilibria; we use [[12, 0], [11, 10]] (row), "
        "whose equilibria are (S1, S1), (S2, S2) and (10/11, 10/11).",
        "- Biased RPS: the equilibrium is (1/16, 10/16, 5/16) for (R, P, S), not (10/16, 5/16, 1/16); every pure "
        "outcome of a zero-sum game is Pareto optimal, the report's Pareto row lists the mixed equilibrium.",
        "- Prisoner's dilemma: (C, D) and (D, C) are Pareto optimal too.",
        "",
    ]
    rd.write_text("README.md", "\n".join(lines))


def run(cfg: Config, argv=()) -> pathlib.Path:
    """Runs the experiment into ``cfg.out`` and returns that folder (raises as `jaxgames.experiment.ResultsDir`)."""
    with ResultsDir(cfg.out, cfg, overwrite=cfg.overwrite, neutral=NEUTRAL) as rd:
        key = jax.random.key(0)
        results, classes, rows = {}, {}, []
        t0 = time.time()
        timing = dict(runs=0.0, reused=0, reused_runs=0, pieces=0, devices=len(sweep_devices(cfg.devices) or [0]))
        from tqdm.auto import tqdm

        pairs = [(g, lr) for g in cfg.games for lr in cfg.learners]
        for name, learner in tqdm(pairs, desc="game x learner", disable=not cfg.progress):
            game = jaxgames.make(name)
            pair_key = jax.random.fold_in(key, zlib.crc32(f"{name}/{learner}".encode()) & 0x7FFFFFFF)
            data = run_game_learner(cfg, game, learner, rd, pair_key)
            timing["runs"] += float(data["compute_seconds"])
            timing["reused"] += bool(data["reused"])
            timing["reused_runs"] += len(data["final_policy"]) if bool(data["reused"]) else 0
            timing["pieces"] += 1
            results[(name, learner)] = data
            classes[(name, learner)] = classify_runs(cfg, game, learner, data)
            rows += convergence_rows(cfg, game, learner, data, classes[(name, learner)])
        timing["this_call_runs"] = time.time() - t0  # loading or computing the pieces
        write_tables(cfg, rows, rd)
        figures = {"dynamics": [], "basins": []}
        overlay = []
        for learner in cfg.learners:
            names, gaps = plot_dynamics(cfg, learner, results, rd)
            figures["dynamics"] += names
            overlay += gaps
            b = plot_basins(cfg, learner, results, classes, rd)
            if b:
                figures["basins"].append(b)
        figures["empirical"] = plot_empirical_fields(cfg, rd, jax.random.fold_in(key, 999))
        rd.write_csv("overlay_check.csv", overlay)
        timing["wall"] = time.time() - t0
        write_report(cfg, rows, figures, rd, timing, overlay)
    out = rd.path
    print(f"done in {time.time() - t0:.0f} s; results in {out}/ (README.md, convergence.md/.csv, dynamics_*.png, "
          "basins_*.png, empirical_fields.png)")
    return out


def main(argv=None) -> pathlib.Path:
    """The command line (`jaxgames.experiment.main`): ``--help``, and a bad setting exits 2 before anything is written."""
    return experiment.main(Config, run, argv, summary=__doc__.splitlines()[0])


if __name__ == "__main__":
    parallel.one_host_device_per_core()  # before JAX starts: the sweeps then use every core (`devices`)
    main()
