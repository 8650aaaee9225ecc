"""AlphaSnake Zero (Siddiqui et al., sections 3-4): Q-value self-play on 11x11 Battlesnake, its figures, and the trained snake against the baselines.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game" (University of Victoria report,
undated), sections 3-4.

Trains `jaxgames.learners.q_snake.QSnakeLearner` with `jaxgames.learners.loop.train`
(self-play -> backward-recursion targets -> Adam, then the pit hook of
`jaxgames.evaluation.q_snake`; the learn-to-walk curriculum first), resumable
from ``<out>/checkpoints``: rerunning the same command continues where the
last run stopped (``generations=``, the run's ``num_iterations``, or
``budget_minutes=`` may be raised to go on). Then:

* ``generations.csv``: per generation the report's figures 4-5 (deaths by
  cause, food eaten, game length), heads hunted and collisions of the
  self-play games, the pit's score and whether the candidate was accepted,
  the loss; ``evaluations.csv``: every ``eval_every`` generations the best
  network against the reference generation (figures 6-10: win rate in 2v2
  and 1v3 games, game length, food, collisions, heads hunted per snake);
* figures: ``deaths.png`` (deaths by cause, stacked shares),
  ``food_length.png`` (food eaten per game and game length),
  ``heads_hunted.png``, ``collisions.png``, ``win_rate.png`` (against the
  reference generation, fair shares dashed);
* with ``opponent_games > 0``: ``opponents.png``, the network's win rate in
  the training games against three heuristic snakes per generation;
* ``game.gif``: one game of the final snake (red, seat 0) against three
  heuristic snakes;
* ``baselines.csv``: the final snake and the baselines (random-safe,
  heuristic), each alone against three random-safe snakes and against three
  heuristic snakes: win rates over ``baseline_games`` 4-snake games
  (seats rotated, spawns drawn per game) with 95% Wilson intervals;
* ``README.md`` (read it first): the targets checked on this run
  (starvation and wall deaths under 5% of deaths from generation 6 on;
  self-play games growing longer), and after each promotion how the later
  candidates fared in the pit against the promoted network.

``ship=trained`` writes the final best network, with the command, budget and
evaluation, to ``jaxgames/weights/q_snake/`` (what ``--agent q_snake`` loads)
or ``ship_dir``; ``ship=placeholder`` the same, marked untrained.

    python experiments/q_snake.py                                   # small CPU run, a few minutes
    python experiments/q_snake.py generations=10                    # go on to generation 10 (resumes)
    python experiments/q_snake.py generations=0 baseline_games=1000 # evaluate the checkpoint, no training
    python experiments/q_snake.py --help                            # every setting, its default and meaning

The learner's settings nest under ``learner`` (`QSnakeConfig`):
``learner.num_games=64``, or ``num_games=64`` for short.

``generations=0`` (or any count already reached) trains nothing: it restores
the checkpoint and runs the evaluation, figures and shipping only. The
final evaluation's settings (``baseline_games``, ``baseline_max_turns``,
``gif_turns``) and the run's length (``generations``, ``budget_minutes``) may
differ between the calls on one folder; every other setting must match.

The default is a small network and few games so that it runs in minutes
on the 2-core CPU; Siddiqui et al.'s network is ``features=32,32,64,64,128,128``.
The folder follows `jaxgames.experiment.ResultsDir` (lock, config check,
atomic writes); every bad setting fails before anything is written.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
from typing import Sequence

import jax
import numpy as np

from jaxgames import checks, experiment
from jaxgames.evaluation import q_snake as qe
from jaxgames.evaluation.stats import wilson_interval
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, command_line, markdown_table
from jaxgames.learners import loop
from jaxgames.learners import q_snake as qs

BASELINES = ("random_safe", "heuristic")
SHIP = ("none", "trained", "placeholder")
NEUTRAL = NEUTRAL_FIELDS + ("generations", "budget_minutes", "ship", "ship_dir", "checkpoint_every", "baseline_games",
                            "baseline_max_turns", "gif_turns")
"""Settings a resumed run may change (how long it trains, and the final evaluation: not what training computes)."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override; the learner's as ``learner.<name>=`` or ``<name>=``).

    Attributes:
        learner: the learner's settings (`jaxgames.learners.q_snake.QSnakeConfig`), made small for a CPU run.
        generations: stop after this many generations in all (a resumed run goes on up to it;
            `loop.train`'s ``num_iterations``).
        budget_minutes: stop training after this many wall-clock minutes in this call
            (checkpointing first); none: no budget.
        seed: PRNG seed of the run.
        checkpoint_every: generations between checkpoints.
        baseline_games: games per lineup of the final evaluation (a multiple of 4: every seat equally).
        baseline_max_turns: turn limit of those games (turns).
        gif_turns: turns drawn at most in ``game.gif`` (0: no GIF).
        ship: ``none``, ``trained`` or ``placeholder``: write the final best network into
            ``ship_dir`` (module docstring).
        ship_dir: the weights folder ``ship`` writes (``""``: the shipped ``jaxgames/weights/q_snake/``).
        out: results folder (checkpoints in ``<out>/checkpoints``).
        overwrite: replace the results and checkpoints of another configuration in ``out``.
        progress: show progress bars.
    """

    learner: qs.QSnakeConfig = qs.QSnakeConfig(num_turns=96, features=(16, 16, 16), num_games=32, walk_generations=2,
                                               batch_size=128, train_steps=50, pit_team_games=16, pit_solo_games=16,
                                               eval_games=16)
    generations: int = 4
    budget_minutes: float | None = None
    seed: int = 0
    checkpoint_every: int = 1
    baseline_games: int = 32
    baseline_max_turns: int = 500
    gif_turns: int = 150
    ship: str = "none"
    ship_dir: str = ""
    out: str = "results/q_snake"
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self):
        if not isinstance(self.learner, qs.QSnakeConfig):
            raise TypeError(f"learner must be a QSnakeConfig; got {type(self.learner).__name__}")
        checks.non_negative_int("generations", self.generations)
        if self.budget_minutes is not None:
            checks.positive_float("budget_minutes", self.budget_minutes)
        checks.positive_int("checkpoint_every", self.checkpoint_every)
        if checks.non_negative_int("baseline_games", self.baseline_games) % 4:
            raise ValueError(f"baseline_games must be a multiple of 4 (every seat equally often), >= 0; got {self.baseline_games}")
        checks.integer("baseline_max_turns", self.baseline_max_turns, 1, 2**30)  # the game's range (`Battlesnake`)
        checks.non_negative_int("gif_turns", self.gif_turns)
        checks.choice("ship", self.ship, SHIP)
        if not isinstance(self.ship_dir, str):
            raise TypeError(f"ship_dir must be a folder name or ''; got {self.ship_dir!r}")
        if self.ship != "none" and self.learner.num_snakes != 4:
            raise ValueError("ship: the shipped snake is evaluated in 4-snake games; "
                             f"got learner.num_snakes={self.learner.num_snakes}")


# ----------------------------------------------------------------------------- evaluation against the baselines
def baseline_table(agents: dict, config: Config, key: jax.Array, progress: bool) -> list[dict]:
    """Each agent alone against three copies of each baseline: win rate with its 95% Wilson interval."""
    from jaxgames.agents.battlesnake import HeuristicAgent, RandomSafeAgent
    from jaxgames.evaluation import arena
    from jaxgames.games.battlesnake import Battlesnake

    env = Battlesnake(board_size=config.learner.board_size, num_snakes=4, max_turns=config.baseline_max_turns, observation="none")
    opponents = {"random_safe": RandomSafeAgent(), "heuristic": HeuristicAgent()}
    pairs = [(a, o) for o in BASELINES for a in agents]
    rows = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(pairs), desc="baselines")
    for i, (name, opp) in enumerate(pairs):
        res = arena.play(env, (agents[name], opponents[opp]), config.baseline_games, jax.random.fold_in(key, i),
                         lineup=(0, 1, 1, 1), seating="rotate", max_steps=config.baseline_max_turns + 1)
        mine = res.agent_of_seat == 0
        wins = int(res.won()[mine].sum())
        games = int(mine.sum())
        low, high = wilson_interval(wins, games)
        causes = res.stats["eliminated_cause"][mine]
        rows.append({"agent": name, "opponents": f"3x {opp}", "games": games, "wins": wins, "win_rate": wins / games,
                     "ci_low": low, "ci_high": high, "fair_share": 0.25,
                     "mean_length": float(res.length.mean()), "truncated": int(res.truncated.sum()),
                     "survived": float(np.mean(causes == 0))})
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return rows


def play_gif_game(agent, config: Config, key: jax.Array):
    """The boards of one game: ``agent`` in seat 0 against three heuristic snakes (at most ``gif_turns`` turns)."""
    from jaxgames.agents.battlesnake import HeuristicAgent
    from jaxgames.games.battlesnake import Battlesnake

    env = Battlesnake(board_size=config.learner.board_size, num_snakes=4, max_turns=config.baseline_max_turns, observation="none")
    heuristic = HeuristicAgent()
    pol_a, pol_h = jax.jit(agent.batched_policy(env)), jax.jit(heuristic.batched_policy(env))
    step = jax.jit(env.step)
    key, init_key = jax.random.split(key)
    state = env.init(init_key)
    boards = [state.board]
    batch = lambda s: jax.tree.map(lambda x: x[None], s)  # noqa: E731
    for _ in range(config.gif_turns):
        if bool(state.terminated | state.truncated):
            break
        key, ka, kh, ks = jax.random.split(key, 4)
        one = batch(state)
        a0 = pol_a(one, ka[None], jax.numpy.zeros((1,), jax.numpy.int32))[0]
        others = [pol_h(one, jax.random.fold_in(kh, s)[None], jax.numpy.full((1,), s, jax.numpy.int32))[0] for s in (1, 2, 3)]
        state = step(state, jax.numpy.stack([a0, *others]).astype(jax.numpy.int32), ks)
        boards.append(state.board)
    return boards


# ----------------------------------------------------------------------------- figures
def _figure(title: str, ylabel: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    ax.set_title(title)
    ax.set_xlabel("generation")
    ax.set_ylabel(ylabel)
    ax.grid(True, lw=0.3)
    return fig, ax


def write_figures(rd: ResultsDir, history: list, evaluations: list) -> list[str]:
    """Siddiqui et al.'s figures 4-10 from the per-generation rows (module docstring); returns the names written."""
    written = []
    if history:
        g = np.array([r["generation"] for r in history])
        fig, ax = _figure("Cause of death (self-play, Siddiqui et al. fig. 4)", "share of deaths")
        bottom = np.zeros(len(g))
        for name in qs.DEATH_CAUSES:
            share = np.array([r[f"deaths_{name}_share"] for r in history])
            if name == "hazard" and not share.any():
                continue
            ax.bar(g, share, bottom=bottom, label=name)
            bottom += share
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7, ncol=3)
        rd.save_figure(fig, "deaths.png", dpi=110, bbox_inches="tight")
        written.append("deaths.png")

        fig, ax = _figure("Food eaten and game length (self-play, Siddiqui et al. fig. 5)", "food eaten per game")
        ax.plot(g, [r["food_per_game"] for r in history], "o-", label="food per game")
        ax2 = ax.twinx()
        ax2.plot(g, [r["game_length"] for r in history], "s--", color="C1", label="game length (turns)")
        ax2.set_ylabel("game length (turns)")
        ax.legend(loc="upper left", fontsize=7)
        ax2.legend(loc="lower right", fontsize=7)
        rd.save_figure(fig, "food_length.png", dpi=110, bbox_inches="tight")
        written.append("food_length.png")

        fig, ax = _figure("Heads hunted (self-play, Siddiqui et al. fig. 10)", "per game")
        ax.plot(g, [r["heads_hunted_per_game"] for r in history], "o-")
        rd.save_figure(fig, "heads_hunted.png", dpi=110, bbox_inches="tight")
        written.append("heads_hunted.png")

        fig, ax = _figure("Collisions: wall, own body, other body (self-play, Siddiqui et al. fig. 9)", "per game")
        ax.plot(g, [r["collisions_per_game"] for r in history], "o-")
        rd.save_figure(fig, "collisions.png", dpi=110, bbox_inches="tight")
        written.append("collisions.png")
    played = [r for r in history if r.get("opponent_games")]
    if played:
        g = np.array([r["generation"] for r in played])
        n = np.array([r["opponent_games"] for r in played])
        wins = np.rint(np.array([r["opponent_win_rate"] for r in played]) * n).astype(int)
        low, high = np.array([wilson_interval(int(w), int(k)) for w, k in zip(wins, n)]).T
        rate = wins / n
        fig, ax = _figure("Network snake against 3 heuristic snakes (training games)", "win rate (95% Wilson)")
        ax.errorbar(g, rate, yerr=[rate - low, high - rate], fmt="o-", ms=3, capsize=2)
        ax.axhline(0.25, color="C1", ls=":", lw=1, label="fair share 1/4")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
        rd.save_figure(fig, "opponents.png", dpi=110, bbox_inches="tight")
        written.append("opponents.png")
    if evaluations:
        e = np.array([r["generation"] for r in evaluations])
        fig, ax = _figure(f"Win rate against generation {evaluations[0]['reference_generation']} (Siddiqui et al. fig. 6)", "win rate")
        ax.plot(e, [r["team_win_rate"] for r in evaluations], "o-", label="2v2 (team)")
        ax.plot(e, [r["solo_win_rate"] for r in evaluations], "s-", label="1v3 (solo)")
        ax.axhline(0.5, color="C0", ls=":", lw=1)
        ax.axhline(0.25, color="C1", ls=":", lw=1)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
        rd.save_figure(fig, "win_rate.png", dpi=110, bbox_inches="tight")
        written.append("win_rate.png")
    return written


# ----------------------------------------------------------------------------- README
def _targets(history: list) -> list[str]:
    lines = []
    late = [r for r in history if r["generation"] >= 6]
    if late:
        worst = max(r["starvation_wall_share"] for r in late)
        pooled = sum(r["deaths_starvation"] + r["deaths_wall"] for r in late) / max(sum(r["deaths"] for r in late), 1)
        lines.append(f"* starvation + wall deaths of the self-play games from generation 6 on (0-based, {len(late)} generations): "
                     f"pooled {pooled:.1%}, worst generation {worst:.1%} "
                     f"(target < 5%: {'met' if worst < 0.05 else 'not met'})")
    else:
        lines.append("* starvation + wall deaths from generation 6 on: not reached (fewer than 7 generations)")
    if len(history) >= 2:
        g = np.array([r["generation"] for r in history], float)
        length = np.array([r["game_length"] for r in history], float)
        slope = float(np.polyfit(g, length, 1)[0])
        lines.append(f"* mean game length: {length[0]:.1f} -> {length[-1]:.1f} turns, least-squares slope {slope:+.2f} "
                     f"turns per generation (target: rising: {'met' if slope > 0 else 'not met'})")
        late_g, late_len = g[g >= 6], length[g >= 6]
        if len(late_g) >= 3:
            late_slope, low, high = _slope_interval(late_g, late_len)
            trend = "rising" if low > 0 else "falling" if high < 0 else "flat (no trend distinguishable from zero)"
            lines.append(f"  * from generation 6 on: slope {late_slope:+.2f} turns per generation, 95% interval "
                         f"[{low:+.2f}, {high:+.2f}]: {trend}")
    return lines


def _slope_interval(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least-squares slope of ``y`` on ``x`` with its 95% interval (ordinary least squares, normal errors)."""
    from scipy import stats

    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.975, len(x) - 2) * fit.stderr
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)


def _pit_power(config: Config, h: list) -> list[str]:
    """README lines: how likely one pit promotes a candidate that is truly better by 5 or 10 points, and the scores seen."""
    lc = config.learner
    if not h or not (lc.pit_team_games + lc.pit_solo_games):
        return []
    S, team, solo = lc.num_snakes, lc.pit_team_games, lc.pit_solo_games
    th = qs.pit_threshold(team, solo, S, lc.pit_alpha)
    power = {d: qs.pit_pass_probability(team, solo, th, 0.5 + d, qs.rank_pmf_with_edge(S, d)) for d in (0.0, 0.05, 0.10)}
    lines = [
        f"Pit score (`q_snake.pit_score_pmf`): {S - 1} per 2v2 game won plus, per 1v3 game, the number of other snakes the "
        f"candidate outlasted (ties broken at random). Pit power (`q_snake.pit_pass_probability`), every team game decided: "
        f"a candidate equal to the best (expected score {_fair_score(config, team):.0f}, threshold {th}) passes one pit "
        f"with probability {power[0.0]:.3f}; one that wins 5 points more of the team games and outlasts each other snake "
        f"5 points more often (`q_snake.rank_pmf_with_edge`) with {power[0.05]:.2f}, by 10 points with {power[0.10]:.2f}."
    ]
    scored = [r for r in h if "pit_score" in r]
    if scored:
        decided = [int(r["pit_decided_team"]) for r in scored]
        scores = [int(r["pit_score"]) for r in scored]
        fair = np.mean([_fair_score(config, d) for d in decided])
        lines[0] += (f" Team games nobody won are left out (`q_snake.pit_threshold_table`): on average "
                     f"{np.mean(decided):.1f} of {team} were decided, where an equal network's expected score is "
                     f"{fair:.1f}. Pit scores seen: mean {np.mean(scores):.1f}, range {min(scores)}-{max(scores)}.")
    if len(scored) < len(h):
        lines[0] += (f" {len(h) - len(scored)} generations were pitted by the earlier rule (solo wins only, biased against "
                     "the candidate: `jaxgames.learners.q_snake`, \"Undecided pit games\") and are left out here.")
    return lines + [""]


def _fair_score(config: Config, decided_team: int) -> float:
    """The pit score a network equal to the best expects with ``decided_team`` decided team games: (S - 1)/2 per game."""
    return (config.learner.num_snakes - 1) * (decided_team + config.learner.pit_solo_games) / 2


def _promotion_segments(config: Config, h: list) -> list[str]:
    """README lines: after each promotion, the later candidates' pit scores against what a network equal to the best scores."""
    promoted = [r["generation"] for r in h if r["accepted"]]
    if not promoted or not any("pit_score" in r for r in h):
        return []
    lines = ["After each promotion, the candidates that met the promoted network (until the next promotion): their mean pit "
             "score against the mean score a network equal to the best expects with the same decided team games. "
             "Generations pitted by the earlier rule are left out.", ""]
    rows = []
    for i, p in enumerate(promoted):
        end = promoted[i + 1] if i + 1 < len(promoted) else h[-1]["generation"]
        seg = [r for r in h if p < r["generation"] <= end and "pit_score" in r]
        if seg:
            score = np.array([r["pit_score"] for r in seg], float)
            fair = np.array([_fair_score(config, int(r["pit_decided_team"])) for r in seg])
            rows.append({"promoted at": p, "candidates": len(seg), "mean pit score": score.mean(),
                         "equal network's": fair.mean(), "below it": f"{int(np.sum(score < fair))} of {len(seg)}"})
    table = markdown_table(rows, ["promoted at", "candidates", "mean pit score", "equal network's", "below it"],
                           formats={"mean pit score": ".1f", "equal network's": ".1f"})
    return lines + table.splitlines() + [""]


def _opponent_lines(h: list) -> list[str]:
    """README lines: the network against heuristic snakes in the training games (``opponent_games > 0``)."""
    played = [r for r in h if r.get("opponent_games")]
    if not played:
        return []
    out = ["", "## The network against heuristic snakes in training ([opponents.png](opponents.png))", "",
           "Games of the best network's snake against three heuristic snakes in the self-play slots (`opponent_games`; "
           "the network samples its power-softmax policy, as in self-play). Win rate pooled over generations, 95% Wilson:", ""]
    for lo, hi in ((0, 9), (10, 29), (30, 10**9)):
        rows = [r for r in played if lo <= r["generation"] <= hi]
        if rows:
            n = sum(r["opponent_games"] for r in rows)
            w = int(round(sum(r["opponent_win_rate"] * r["opponent_games"] for r in rows)))
            a, b = wilson_interval(w, n)
            last = min(hi, rows[-1]["generation"])
            out.append(f"* generations {lo}-{last}: {w} of {n} games won, {w / n:.1%} [{a:.1%}, {b:.1%}]")
    return out


def reference_rows(result: loop.TrainResult) -> list[dict]:
    """The evaluations against the reference generation, one row per evaluated generation (``generation`` first)."""
    prefix = "reference/"
    return [{"generation": r["iteration"], **{k[len(prefix):]: v for k, v in r.items() if k.startswith(prefix)}}
            for r in result.evaluations if r["evaluation"] == "reference" and prefix + "team_win_rate" in r]


_EVALUATION_COLUMNS = {"generation": "gen", "team_win_rate": "2v2 win rate", "solo_win_rate": "1v3 win rate",
                       "solo_game_length": "1v3 length", "solo_food_per_snake": "1v3 food/snake",
                       "solo_collisions_per_snake": "1v3 collisions/snake",
                       "solo_heads_hunted_per_snake": "1v3 hunted/snake"}
"""The README's table against the reference generation: column -> header."""


def write_readme(rd: ResultsDir, config: Config, result: loop.TrainResult, baselines: list, seconds: float, argv,
                 figures: Sequence[str] = ()) -> str:
    """``README.md``; ``figures``: the figure and GIF files this call wrote (only those are linked)."""
    h, lc = result.history, config.learner
    evaluations = reference_rows(result)
    accepted = sum(r["accepted"] for r in h)
    lines = [
        "# AlphaSnake Zero: Q-value self-play on Battlesnake",
        "",
        "Source: Siddiqui, Kraak, Roesli, Daxini & Li, \"Multiagent Reinforcement Learning in a Synchronous Strategy "
        "Game\" (University of Victoria report, undated), sections 3-4.",
        "",
        f"Command: `{command_line('experiments/q_snake.py', argv)}`; settings in [config.json](config.json). "
        f"Device: {jax.devices()[0].platform}. {len(h)} generations in all "
        f"({'resumed at generation ' + str(result.resumed_from) if result.resumed_from else 'fresh start'}; "
        f"stopped by {'the budget' if result.stopped_by_budget else 'generations'}); this call took {seconds / 60:.1f} min. Network: features {list(lc.features)}; "
        f"{lc.num_games} self-play slots x {lc.num_turns} turns per generation, {lc.train_steps} Adam steps of "
        f"{lc.batch_size}; the candidate replaced the best {accepted} times "
        + ("(every generation: `pit_gate=false`)." if not lc.pit_gate else
           f"(pit score threshold {qs.pit_threshold(lc.pit_team_games, lc.pit_solo_games, lc.num_snakes, lc.pit_alpha)} "
           f"in {lc.pit_team_games} 2v2 + {lc.pit_solo_games} 1v3 games when every 2v2 game is decided)."),
        "",
        *_pit_power(config, h),
        *_promotion_segments(config, h),
        "## Targets",
        "",
        *_targets(h),
        *_opponent_lines(h),
    ]
    if baselines:
        lines += ["", "## The final snake and the baselines, each alone against three copies of a baseline", "",
                  f"{config.baseline_games} standard {lc.board_size}x{lc.board_size} 4-snake games per row, seats rotated, "
                  "spawns drawn per game; a win is placing first alone (truncated games are no win). 95% Wilson intervals "
                  "([baselines.csv](baselines.csv)). Targets: q_snake >= 40% against 3x heuristic, >= 80% against 3x random_safe "
                  "(fair share 25%).", "",
                  markdown_table([{**r, "interval": f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"} for r in baselines],
                                 ["agent", "opponents", "games", "win_rate", "interval", "mean_length", "survived"],
                                 formats={"win_rate": ".3f", "mean_length": ".0f", "survived": ".2f"},
                                 headers={"win_rate": "win rate", "interval": "95% interval", "mean_length": "mean length"})]
    if h:
        lines += ["", "## Per generation (self-play; [generations.csv](generations.csv))", "",
                  markdown_table(
                      [{**r, "body_self_share": r["deaths_body_share"] + r["deaths_self_share"],
                        "pit_score": r.get("pit_score", "-")} for r in h],
                      ["generation", "health_loss", "games", "game_length", "starvation_wall_share", "deaths_head_share",
                       "body_self_share", "food_per_game", "heads_hunted_per_game", "pit_score", "accepted", "loss_mean"],
                      formats={"game_length": ".1f", "starvation_wall_share": ".2f", "deaths_head_share": ".2f",
                               "body_self_share": ".2f", "food_per_game": ".2f", "heads_hunted_per_game": ".2f",
                               "loss_mean": ".4f"},
                      headers={"generation": "gen", "health_loss": "health loss", "game_length": "length",
                               "starvation_wall_share": "starv+wall", "deaths_head_share": "head",
                               "body_self_share": "body+self", "food_per_game": "food/game",
                               "heads_hunted_per_game": "hunted/game", "pit_score": "pit score", "loss_mean": "loss"})]
    if evaluations:
        lines += ["", "## Against the reference generation ([evaluations.csv](evaluations.csv))", "",
                  markdown_table(evaluations, list(_EVALUATION_COLUMNS),
                                 formats=dict(zip(_EVALUATION_COLUMNS, ("", ".3f", ".3f", ".1f", ".2f", ".2f", ".2f"))),
                                 headers=_EVALUATION_COLUMNS)]
    pngs = [f"[{n}]({n})" for n in figures if n.endswith(".png")]
    if pngs:
        lines += ["", "Figures: " + ", ".join(pngs) + "."]
    if "game.gif" in figures:
        lines += ["", "A game of the final snake (red) against three heuristic snakes: [game.gif](game.gif)."]
    lines.append("")
    text = "\n".join(lines)
    rd.write_text("README.md", text)
    return text


# ----------------------------------------------------------------------------- run
def run(config: Config, argv=()) -> dict:
    """Trains (resuming), evaluates, writes every output into ``config.out``; returns a summary dict.

    Raises:
        jaxgames.experiment.SettingError: settings that do not fit in memory, a checkpoint of another
            board size or network shape (before anything is written).
        jaxgames.experiment.ResultsDirLocked, ConfigMismatch: see `jaxgames.experiment.ResultsDir`.
    """
    from jaxgames.agents.q_snake import QSnakeAgent

    lc = config.learner
    ckpt_dir = pathlib.Path(config.out) / "checkpoints"
    with experiment.up_front():  # every check before the folder is claimed
        learner = qs.QSnakeLearner(lc)  # refuses settings that do not fit in memory
        qs.check_checkpoint_shapes(lc, ckpt_dir)
    start = time.perf_counter()
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:

        def write_tables(result):
            if result.history:
                rd.write_csv("generations.csv", result.history, fieldnames=_fields(result.history))
            evaluations = reference_rows(result)
            if evaluations:
                rd.write_csv("evaluations.csv", evaluations, fieldnames=_fields(evaluations))

        result = loop.train(
            learner, num_iterations=config.generations, key=jax.random.key(config.seed), checkpoint_dir=ckpt_dir,
            checkpoint_every=config.checkpoint_every, budget_minutes=config.budget_minutes,
            evaluations=qe.hooks(learner), callback=lambda it, metrics, so_far: write_tables(so_far),
            progress=config.progress, progress_keys=("game_length", "starvation_wall_share", "accepted", "loss_mean"),
            overwrite=config.overwrite,
        )
        write_tables(result)
        figures = write_figures(rd, result.history, reference_rows(result))
        best = result.state.best
        snake = QSnakeAgent(best, features=lc.features, board_size=lc.board_size, head_multiplier=lc.head_multiplier,
                            body_multiplier=lc.body_multiplier, trained=True, name="q_snake")
        key = jax.random.key(config.seed + 7919)
        gif_key, base_key = jax.random.split(key)
        if config.gif_turns and lc.num_snakes == 4:
            from jaxgames.games.battlesnake import render

            boards = play_gif_game(snake, config, gif_key)
            with rd.staging() as tmp:
                render.save_game(boards, str(tmp / "game.gif"), fps=6)
            figures.append("game.gif")
        baselines = []
        if config.baseline_games and lc.num_snakes == 4:
            from jaxgames.agents.battlesnake import HeuristicAgent, RandomSafeAgent

            agents = {"q_snake": snake, "random_safe": RandomSafeAgent(), "heuristic": HeuristicAgent()}
            baselines = baseline_table(agents, config, base_key, config.progress)
            rd.write_csv("baselines.csv", baselines)
        text = write_readme(rd, config, result, baselines, time.perf_counter() - start, argv, figures)
        if config.ship != "none":
            ship_weights(config, result, baselines, argv)
    print(text)
    return {"result": result, "baselines": baselines}


def _fields(rows: list) -> list:
    names = []
    for r in rows:
        names += [k for k in r if k not in names]
    return names


def ship_weights(config: Config, result: loop.TrainResult, baselines: list, argv) -> pathlib.Path:
    """Writes the final best network and its metadata (command, budget, evaluation) into ``ship_dir`` (default the shipped folder)."""
    from jaxgames.agents.q_snake import WEIGHTS_DIR, save_weights

    trained = config.ship == "trained"
    h, lc = result.history, config.learner
    metadata = {
        "trained": trained,
        "note": "trained by experiments/q_snake.py" if trained else (
            f"UNTRAINED PLACEHOLDER: a {len(h)}-generation smoke run ({sum(r['seconds'] for r in h) / 60:.1f} min of "
            "training), not a trained snake"),
        "features": list(lc.features),
        "board_size": lc.board_size,
        "num_snakes": lc.num_snakes,
        "head_multiplier": lc.head_multiplier,
        "body_multiplier": lc.body_multiplier,
        "generations": len(h),
        "accepted": sum(r["accepted"] for r in h),
        "training_seconds": sum(r["seconds"] for r in h),
        "budget_minutes": config.budget_minutes,
        "command": command_line("experiments/q_snake.py", argv),
        "device": jax.devices()[0].platform,
        "recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "config": dataclasses.asdict(config),
        "baselines": baselines,
    }
    directory = pathlib.Path(config.ship_dir) if config.ship_dir else WEIGHTS_DIR
    save_weights(result.state.best, directory, metadata)
    return directory


def main(argv=None):
    """Entry point: ``python experiments/q_snake.py [key=value ...]`` (``--help`` lists every setting)."""
    return experiment.main(Config, run, argv, prog="experiments/q_snake.py", summary=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
