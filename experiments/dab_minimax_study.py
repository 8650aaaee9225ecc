"""El Kaddouri et al.'s minimax study on small Dots-and-Boxes boards (section 4, figures 2 and 3).

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots
And Boxes" (course report, undated), section 4.

For each board size and each minimax variant (`jaxgames.games.dots_and_boxes.search.minimax.VARIANTS`:
naive, + transposition table, + symmetry canonicalisation, + chain rules,
+ alpha-beta, + move ordering; each adds one idea to the previous one) it
solves the empty board, checks the value against the retrograde solver
(`jaxgames.games.dots_and_boxes.search.solver`), and records the search time and the number of
keys in the transposition table. It writes, under ``results/dab_minimax_study/``:

* ``minimax_study.csv``: one row per (board, variant): value, solver value,
  agreement, seconds, nodes, table keys, status (``ok`` or ``timeout``);
* ``figure2_search_time.png``: search time per variant per board (El Kaddouri et al., figure 2;
  a cross at the time limit marks a timeout);
* ``figure3_table_keys.png``: transposition-table keys per variant per board (figure 3);
* ``config.json``.

The folder follows `jaxgames.experiment.ResultsDir` (a lock against a second
concurrent run, a refusal to mix in a run of other settings unless
``overwrite=true``, atomic writes).

A variant that exceeds ``time_limit`` on a board is marked ``timeout`` and
skipped on the larger boards. Run ``python experiments/dab_minimax_study.py``
(small default: boards up to 3x3, 20 s per search, a few minutes on 2 CPU
cores) or ``full=true`` (10 minutes per search, boards up to 3x3 plus 2x4).
"""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from jaxgames import experiment  # noqa: E402
from jaxgames.experiment import ResultsDir, check_names  # noqa: E402
from jaxgames.games.dots_and_boxes import rules  # noqa: E402
from jaxgames.games.dots_and_boxes.search import minimax, solver  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Attributes:
        boards: board sizes ``RxC``, searched in order of edge count.
        variants: minimax variants (`minimax.VARIANTS`).
        time_limit: seconds per search before it counts as a timeout.
        full: the full setting (10 min per search, adds 2x4).
        out: results folder.
        progress: show a progress bar.
        overwrite: replace the results of another configuration in ``out``.
    """

    boards: tuple[str, ...] = ("1x1", "1x2", "1x3", "2x2", "2x3", "3x3")
    variants: tuple[str, ...] = minimax.VARIANTS
    time_limit: float = 20.0
    full: bool = False
    out: str = "results/dab_minimax_study"
    progress: bool = True
    overwrite: bool = False

    def __post_init__(self):
        if self.full:
            if self.time_limit == Config.time_limit:
                object.__setattr__(self, "time_limit", 600.0)
            if self.boards == Config.boards:
                object.__setattr__(self, "boards", Config.boards + ("2x4",))
        check_names("boards", [parse_board(b) for b in self.boards])  # 2x3 and 2X3 are one board
        for v in self.variants:
            minimax.SearchOptions.variant(v)
        check_names("variants", self.variants)
        if not self.time_limit > 0:
            raise ValueError(f"time_limit must be positive; got {self.time_limit}")


def parse_board(text: str) -> tuple[int, int]:
    """``"RxC"`` -> ``(R, C)``.

    Raises:
        ValueError: not of the form ``RxC`` or a size out of range.
    """
    try:
        r, c = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"board must look like 2x3; got {text!r}") from None
    return rules.validate_size(r, c)


def run(config: Config) -> list[dict]:
    """Runs the study and writes CSV and figures into ``config.out``; returns the rows (raises as `jaxgames.experiment.in_results_dir`)."""
    return experiment.in_results_dir(config, _run)


def _run(config: Config, rd: ResultsDir) -> list[dict]:
    boards = sorted((parse_board(b) for b in config.boards), key=lambda rc: (rules.geometry(*rc).num_edges, rc))
    rows = []
    timed_out: set[str] = set()
    jobs = [(b, v) for b in boards for v in config.variants]
    bar = tqdm(jobs, disable=not config.progress, desc="minimax study")
    solutions = {}
    for (R, C), variant in bar:
        bar.set_postfix_str(f"{R}x{C} {variant}")
        if (R, C) not in solutions:
            solutions[(R, C)] = solver.solve(R, C).value(0)
        row = dict(board=f"{R}x{C}", num_edges=rules.geometry(R, C).num_edges, variant=variant, solver_value=solutions[(R, C)])
        if variant in timed_out:
            row.update(value="", agrees="", seconds="", nodes="", table_keys="", status="skipped")
        else:
            try:
                res = minimax.solve_position(R, C, 0, variant=variant, time_limit=config.time_limit)
                row.update(value=res.value, agrees=res.value == row["solver_value"], seconds=res.seconds, nodes=res.nodes, table_keys=res.table_size, status="ok")
                if res.value != row["solver_value"]:
                    raise AssertionError(f"{variant} on {R}x{C}: {res.value} != solver {row['solver_value']}")
            except minimax.SearchTimeout:
                timed_out.add(variant)
                row.update(value="", agrees="", seconds=config.time_limit, nodes="", table_keys="", status="timeout")
        rows.append(row)
    rd.write_csv("minimax_study.csv", rows)
    labels = [f"{R}x{C}" for R, C in boards]
    for key, fname, ylabel, title in [
        ("seconds", "figure2_search_time.png", "search time (s)", "Search time of the minimax variants (El Kaddouri et al., fig. 2)"),
        ("table_keys", "figure3_table_keys.png", "keys in the transposition table", "Transposition-table keys (El Kaddouri et al., fig. 3)"),
    ]:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for variant in config.variants:
            if key == "table_keys" and variant == "naive":
                continue  # no table
            ys = []
            for lab in labels:
                r = next(r for r in rows if r["board"] == lab and r["variant"] == variant)
                ys.append(float(r[key]) if r["status"] == "ok" and r[key] != "" else np.nan)
            color = plt.get_cmap("tab10")(minimax.VARIANTS.index(variant))  # same colour in both figures
            line, = ax.plot(labels, ys, marker="o", label=variant, color=color)
            if key == "seconds":  # timeouts: hollow markers at the time limit
                tx = [lab for lab in labels if next(r for r in rows if r["board"] == lab and r["variant"] == variant)["status"] == "timeout"]
                ax.plot(tx, [config.time_limit] * len(tx), ls="", marker="x", color=line.get_color())
        ax.set_yscale("log")
        ax.set_xlabel("board (boxes)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        rd.save_figure(fig, fname, dpi=120)
        plt.close(fig)
    return rows


def main(argv=None):
    """Entry point: ``python experiments/dab_minimax_study.py [key=value ...]``."""
    rows = experiment.main(Config, lambda config, _: run(config), argv, summary=__doc__.splitlines()[0])
    for r in rows:
        print(f"{r['board']:>4} {r['variant']:>10} {r['status']:>8} value={r['value']!s:>3} solver={r['solver_value']:>3} "
              f"t={r['seconds']} keys={r['table_keys']}")


if __name__ == "__main__":
    main()
