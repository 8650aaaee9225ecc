"""Plots of tournaments: heatmaps of pairwise matrices, Elo curves, rating bars.

Source: Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
Learning" (NUS USP group report, 2021), section 6.3, figures 6.10-6.13 (Elo
during the round robins, final Elo, win rates, pairwise net wins; and the
average game length). Figures are `matplotlib.figure.Figure` objects saved
with ``Figure.savefig``, so nothing here touches pyplot or the user's
backend.
"""

from __future__ import annotations

import pathlib

import matplotlib
import numpy as np
from matplotlib.figure import Figure


def _figure(figsize):
    """A pyplot-free figure and its one Axes."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def heatmap(matrix: np.ndarray, labels, path, *, title: str = "", cmap: str = "RdBu", fmt: str = "{:.0f}", symmetric: bool = True) -> pathlib.Path:
    """Writes an annotated heatmap of a pairwise ``[N, N]`` matrix.

    The cell in row ``i`` (y axis) and column ``j`` (x axis) shows ``matrix[i, j]``.

    Args:
        matrix: float ``[N, N]``.
        labels: ``N`` names.
        path: output file (PNG or any matplotlib format).
        title: figure title.
        cmap: colour map; with ``symmetric`` the colour range is centred on 0.
        fmt: format of the cell annotations.
        symmetric: centre the colours on 0 (for net wins).

    Returns:
        The path written.

    Raises:
        ValueError: a non-square matrix or a label count that does not match.
    """
    m = np.asarray(matrix, float)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] != len(labels):
        raise ValueError(f"matrix must be [N, N] with N = {len(labels)} labels; got {m.shape}")
    n = len(labels)
    fig, ax = _figure((1.0 + 0.9 * n, 0.8 + 0.8 * n))
    if symmetric:
        lim = max(float(np.nanmax(np.abs(m))), 1e-9)
        im = ax.imshow(m, cmap=cmap, vmin=-lim, vmax=lim)
    else:
        im = ax.imshow(m, cmap=cmap)
    ax.set_xticks(range(n), labels, rotation=45, ha="right")
    ax.set_yticks(range(n), labels)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, fmt.format(m[i, j]), ha="center", va="center", fontsize=8)
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.046)
    return _save(fig, path)


def elo_curves(history: np.ndarray, labels, path, *, title: str = "Elo during the round robins") -> pathlib.Path:
    """Writes the Elo ratings ``[R + 1, N]`` against the round number (Dasgupta & Chong, fig. 6.10)."""
    h = np.asarray(history, float)
    fig, ax = _figure((7, 4))
    colors = matplotlib.colormaps["tab20"].colors if len(labels) > 10 else [f"C{i}" for i in range(10)]
    for i, name in enumerate(labels):
        ax.plot(np.arange(h.shape[0]), h[:, i], label=name, lw=1, color=colors[i % len(colors)])
    ax.set_xlabel("round robin")
    ax.set_ylabel("Elo")
    ax.set_title(title)
    if len(labels) > 6:  # beside the axes: inside, a long legend hides the top curves
        fig.set_size_inches(9, 4)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=8)
    return _save(fig, path)


def rating_bars(
    ratings: dict,
    labels,
    path,
    *,
    title: str = "Final ratings",
    ylabel: str = "rating (Elo points)",
    baseline: float | None = 1000.0,
    intervals: dict | None = None,
) -> pathlib.Path:
    """Writes grouped bars of several values per agent (Dasgupta & Chong, figures 6.11-6.12).

    Args:
        ratings: ``{series name: N values}``, e.g. ``{"Elo": [...], "Bradley-Terry": [...]}``.
        labels: the ``N`` agent names.
        path: output file.
        title, ylabel: texts.
        baseline: a horizontal reference line (1000 for ratings), or None.
        intervals: optional ``{series name: [N, 2] (low, high)}`` drawn as error bars.
    """
    n = len(labels)
    fig, ax = _figure((1.5 + 0.9 * n, 4))
    width = 0.8 / max(len(ratings), 1)
    for k, (name, values) in enumerate(ratings.items()):
        values = np.asarray(values, float)
        err = None
        if intervals is not None and name in intervals:
            lo, hi = np.asarray(intervals[name], float).T
            # a final Elo may lie outside its bootstrap interval (each resample replays the games in another
            # order): the bar is drawn to the interval's near end, not a negative length (matplotlib refuses those)
            err = np.maximum(np.stack([values - lo, hi - values]), 0.0)
        ax.bar(np.arange(n) + k * width, values, width, label=name, yerr=err, capsize=3 if err is not None else 0)
    ax.set_xticks(np.arange(n) + 0.4 - width / 2, labels, rotation=45, ha="right")
    if baseline is not None:
        ax.axhline(baseline, color="k", lw=0.5)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path) -> pathlib.Path:
    """Writes ``fig`` as a PNG at ``path`` (120 dpi) and returns the path (no pyplot figure to close)."""
    fig.tight_layout()
    path = pathlib.Path(path)
    fig.savefig(path, dpi=120)
    return path
