"""Tables and figures of a round-robin `elo.Tournament`, shared by the tournament experiments.

Writes into a results folder:

* ``ratings.csv``: per agent, Bradley-Terry and Elo ratings with their
  bootstrap intervals (`elo.bootstrap_ratings`), win rate (seats won
  outright), mean placement and the number of seats played;
* ``elo_history.csv`` / ``elo_history.png`` (figure 6.10 of Dasgupta &
  Chong, "Mastering the game of Onitama with Reinforcement Learning", NUS USP
  group report, 2021);
* ``ratings.png`` (their figure 6.11, with the intervals) and ``win_rate.png``
  (figure 6.12);
* ``net_wins.csv`` / ``net_wins.png``: the row agent's pairwise wins minus
  losses against the column agent (figure 6.13);
* ``mean_length.csv`` / ``mean_length.png``: mean game length in steps of the
  games in which both agents played.

And, for the training experiments (``experiments/alphazero_dab.py``,
``experiments/alphazero_onitama.py``): target rows with Wilson intervals
(`wilson_row`) and their ``report.csv`` / ``report.md`` / ``report.png``
(`write_targets`), ``curves.csv`` / ``curves.png`` (`write_curves`) and the
``README.md`` of a training run (`write_run_readme`).
"""

from __future__ import annotations

import csv
import pathlib

import jax
import numpy as np
from matplotlib.figure import Figure  # pyplot-free, like module `plots`

from jaxgames.evaluation import elo, plots
from jaxgames.evaluation.stats import wilson_interval


def write_matrix(path, matrix, names) -> None:
    """A labelled ``[K, K]`` CSV (row agent, column agent)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([""] + list(names))
        for name, row in zip(names, matrix):
            w.writerow([name] + [f"{x:g}" for x in row])


def ratings_rows(t: elo.Tournament) -> list[dict]:
    """One dict per agent: the columns of ``ratings.csv``, best Bradley-Terry rating first."""
    r = t.ratings
    placement = {}
    for res in t.results:
        for k, row in res.per_agent().items():
            n, mean = placement.get(k, (0, 0.0))
            if row["seats"]:
                placement[k] = (n + row["seats"], mean + row["mean_placement"] * row["seats"])
    rows = []
    for i, name in enumerate(t.names):
        seats, total = placement.get(name, (0, 0.0))
        rows.append(dict(
            agent=name,
            bradley_terry=round(float(r.bradley_terry[i]), 1),
            bt_low=round(float(r.bradley_terry_ci[i, 0]), 1),
            bt_high=round(float(r.bradley_terry_ci[i, 1]), 1),
            elo=round(float(r.elo[i]), 1),
            elo_low=round(float(r.elo_ci[i, 0]), 1),
            elo_high=round(float(r.elo_ci[i, 1]), 1),
            win_rate=round(float(t.win_rate[i]), 4),
            mean_placement=round(total / seats, 3) if seats else float("nan"),
            seats=int(seats),
        ))
    return sorted(rows, key=lambda row: -row["bradley_terry"])


def write_tournament(t: elo.Tournament, out, *, games_per_lineup: int, what: str = "pair") -> list[dict]:
    """Writes the tables and figures listed in the module docstring; returns `ratings_rows`.

    Args:
        t: the tournament.
        out: results folder (created if missing).
        games_per_lineup: games of each lineup, for the figure titles.
        what: the word for a lineup in titles ("pair", "lineup").
    """
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(t.names)
    rows = ratings_rows(t)
    with open(out / "ratings.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(out / "elo_history.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round"] + names)
        for i, row in enumerate(t.elo):
            w.writerow([i] + [f"{x:.2f}" for x in row])
    write_matrix(out / "net_wins.csv", t.net_wins, names)
    write_matrix(out / "mean_length.csv", t.mean_length, names)
    level = int(round(100 * t.ratings.confidence))
    plots.elo_curves(t.elo, names, out / "elo_history.png")
    plots.rating_bars(
        {"Elo": t.ratings.elo, "Bradley-Terry": t.ratings.bradley_terry}, names, out / "ratings.png",
        intervals={"Elo": t.ratings.elo_ci, "Bradley-Terry": t.ratings.bradley_terry_ci},
        title=f"Final ratings ({level}% bootstrap intervals over games)",
    )
    plots.rating_bars({"win rate": t.win_rate}, names, out / "win_rate.png", title="Win rate", ylabel="fraction of seats won outright", baseline=None)
    plots.heatmap(np.asarray(t.net_wins, float), names, out / "net_wins.png", title=f"Pairwise net wins of row vs column ({games_per_lineup} games per {what})")
    plots.heatmap(t.mean_length, names, out / "mean_length.png", title="Mean game length (steps)", cmap="viridis", symmetric=False, fmt="{:.1f}")
    return rows


# ----------------------------------------------------------------------------- target reports
def target_met(row: dict) -> str:
    """Whether a target row meets its target: ``"yes"``, ``"no"``, ``"not significant"`` or ``""`` (no target).

    A rate with a 95% interval (``ci_low``/``ci_high``) meets a lower bound
    when the whole interval lies at or above the target ("not significant":
    the rate does, the interval does not). A time (``"seconds"`` in the
    ``measure``) meets an upper bound when it is at most the target.
    """
    target = row.get("target")
    if target is None:
        return ""
    if "seconds" in row["measure"]:
        return "yes" if row["rate"] <= target else "no"
    if "ci_low" in row:
        return "yes" if row["ci_low"] >= target else ("not significant" if row["rate"] >= target else "no")
    return "yes" if row["rate"] >= target else "no"


def target_table(rows: list[dict]) -> list[str]:
    """Markdown lines of a table of target rows (``measure``, ``rate`` and optionally ``agent``,
    ``ci_low``/``ci_high``, ``trials``, ``successes``/``draws``/``losses``, ``target``), with a footnote."""
    wdl_col = any("draws" in r for r in rows)
    head = "| measure | agent | rate | 95% interval | n |" + (" W-D-L |" if wdl_col else "") + " target | met |"
    rule = "|---|---|---:|---|---:|" + ("---|" if wdl_col else "") + "---:|---|"
    lines = [head, rule]
    for r in rows:
        ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if "ci_low" in r else ""
        wdl = (f" {r['successes']}-{r['draws']}-{r['losses']} |" if "draws" in r else " |") if wdl_col else ""
        target = r.get("target")
        lines.append(f"| {r['measure']} | {r.get('agent', '')} | {r['rate']:.3f} | {ci} | {r.get('trials', '')} |{wdl} "
                     f"{'' if target is None else target} | {target_met(r)} |")
    lines += ["", "Met: a rate's whole 95% Wilson interval lies at or above the target ('not significant': the rate does, "
              "the interval does not); a time is at most the target."]
    return lines


def target_figure(rows: list[dict]):
    """A matplotlib Figure of the rows with a 95% interval (rate, interval, target in red); None if there are none."""
    shown = [r for r in rows if "ci_low" in r]
    if not shown:
        return None
    fig = Figure(figsize=(9, 0.6 + 0.45 * len(shown)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(shown))[::-1]
    rate = np.array([r["rate"] for r in shown])
    lo = np.maximum(rate - np.array([r["ci_low"] for r in shown]), 0.0)
    hi = np.maximum(np.array([r["ci_high"] for r in shown]) - rate, 0.0)
    ax.errorbar(rate, y, xerr=[lo, hi], fmt="o", capsize=3)
    for yi, r in zip(y, shown):
        if r.get("target") is not None:
            ax.plot([r["target"]] * 2, [yi - 0.35, yi + 0.35], color="C3", lw=2)
    ax.set_yticks(y, [f"{r['measure']} [{r.get('agent', '')}] (n={r.get('trials', '')})" for r in shown], fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_xlabel("rate (95% Wilson interval; red: target)")
    ax.grid(True, lw=0.3)
    return fig


def wilson_row(what: str, successes: float, trials: int, **extra) -> dict:
    """A target row: a proportion and its 95% Wilson interval, for `target_table` and `target_figure`.

    Args:
        what: the row's ``measure`` (its label in the table and the figure).
        successes: wins or optimal moves, a whole count (a score with draws as 1/2 is no binomial
            count: give the wins and report the draws in ``extra``).
        trials: games or positions; with 0, ``rate``, ``ci_low`` and ``ci_high`` are NaN.
        **extra: further columns (``agent``, ``target``, ``note``, ...), after the standard ones.

    Returns:
        ``{"measure", "successes", "trials", "rate", "ci_low", "ci_high", **extra}``; the interval is
        `jaxgames.evaluation.stats.wilson_interval` (Wilson 1927, JASA 22:209).

    Raises:
        ValueError: ``successes`` or ``trials`` not a whole count, or ``successes > trials``.
    """
    low, high = wilson_interval(successes, trials)
    rate = successes / trials if trials else float("nan")
    return {"measure": what, "successes": successes, "trials": trials, "rate": rate, "ci_low": low, "ci_high": high, **extra}


def write_targets(rd, rows: list[dict], more_lines=()) -> list[str]:
    """Writes ``report.csv`` (the rows), ``report.png`` (`target_figure`, if any row has an interval) and
    ``report.md`` (`target_table`, then ``more_lines``) into a results folder.

    Args:
        rd: a `jaxgames.experiment.ResultsDir` (open).
        rows: target rows (e.g. `wilson_row`); at least one.
        more_lines: Markdown lines appended to ``report.md`` after the table (e.g. a tournament's ratings).

    Returns:
        The Markdown lines of ``report.md`` (the table and ``more_lines``).

    Raises:
        ValueError: no rows (`ResultsDir.write_csv`).
    """
    rd.write_csv("report.csv", rows)
    lines = target_table(rows) + list(more_lines)
    fig = target_figure(rows)
    if fig is not None:
        rd.save_figure(fig, "report.png", dpi=110, bbox_inches="tight")
    rd.write_text("report.md", "\n".join(lines) + "\n")
    return lines


# ----------------------------------------------------------------------------- training curves and READMEs
def write_curves(rd, history: list[dict], draw, *, grid: tuple[int, int], size: tuple[float, float]) -> None:
    """Writes a training run's ``curves.csv`` and ``curves.png`` into a results folder (nothing for no history).

    ``curves.csv`` has one row per iteration and a column for every key of any
    row, in order of first appearance (a row without a key leaves its cell
    empty). ``curves.png`` is a ``grid`` of panels: the first shows the training
    loss (``policy_loss`` and ``loss`` against ``iteration``), ``draw`` fills the
    others; every panel gets the x label "iteration", a grid and, if it holds
    lines, a legend.

    Args:
        rd: a `jaxgames.experiment.ResultsDir` (open).
        history: one dict per iteration (`jaxgames.learners.loop.TrainResult.history`),
            each with ``iteration``, ``policy_loss`` and ``loss``.
        draw: ``draw(axes, iterations, names)``: ``axes`` the ``[rows, cols]`` array of
            matplotlib Axes, ``iterations`` int ``[N]``, ``names`` the CSV columns.
        grid: ``(rows, cols)`` of panels.
        size: figure size in inches.
    """
    if not history:
        return
    names = list(dict.fromkeys(k for row in history for k in row))
    rd.write_csv("curves.csv", history, fieldnames=names)
    it = np.array([r["iteration"] for r in history])
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(*grid, squeeze=False)
    ax = axes[0, 0]
    ax.plot(it, [r["policy_loss"] for r in history], label="policy cross-entropy")
    ax.plot(it, [r["loss"] for r in history], label="total loss", lw=0.8)
    ax.set_title("Training loss")
    draw(axes, it, names)
    for ax in axes.ravel():
        ax.set_xlabel("iteration")
        ax.grid(True, lw=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    rd.save_figure(fig, "curves.png", dpi=110, bbox_inches="tight")


def write_run_readme(rd, *, title: str, command: str, seconds: float, training: str | None, source: str,
                     report_heading: str, report_lines: list[str], citation: str | None = None) -> str:
    """Writes a training experiment's ``README.md`` (the file a reader opens first); returns its text.

    Layout: ``# title``; "Source: ``citation``." when given; the command with a link to ``config.json``, the device
    and the call's duration; the ``training`` paragraph (None: "No training in this call: the report is on the
    weights named below."); "Reported network:
    ``source``."; then, if there are ``report_lines``, a section ``## report_heading
    ([report.csv](report.csv), [report.png](report.png))`` holding them.

    Args:
        rd: a `jaxgames.experiment.ResultsDir` (open).
        title: the heading.
        command: the command line that made the folder (shell-quoted).
        seconds: wall-clock seconds of this call.
        training: one paragraph on the training; None when this call trained nothing.
        source: which network the report is on.
        report_heading: the report section's heading word(s), e.g. ``"Targets"``.
        report_lines: Markdown lines of the report (`write_targets`); empty: no section.
        citation: the documents the experiment follows, in full (authors, title, kind, year), so that a
            reader can find them; None: no source line.
    """
    lines = [f"# {title}", ""]
    if citation:
        lines += [f"Source: {citation}.", ""]
    lines += [
        f"Command: `{command}`; settings in [config.json](config.json). Device: {jax.devices()[0].platform}. "
        f"This call took {seconds / 60:.1f} min.",
        "",
        "No training in this call: the report is on the weights named below." if training is None else training,
        "",
        f"Reported network: {source}.",
    ]
    if report_lines:
        lines += ["", f"## {report_heading} ([report.csv](report.csv), [report.png](report.png))", "", *report_lines]
    text = "\n".join(lines) + "\n"
    rd.write_text("README.md", text)
    return text
