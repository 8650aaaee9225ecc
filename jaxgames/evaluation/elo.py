"""Elo round-robin tournaments and Bradley-Terry maximum-likelihood ratings.

Source: seed 001 section 6.3 (equations 6.1-6.2): every player starts at
1000; after a game between A and B,

    E_A = 1 / (1 + 10 ** ((R_B - R_A) / 400)),   R_A' = R_A + K (S_A - E_A),

with ``S_A`` = 1 for a win, 0.5 for a draw, 0 for a loss, and K = 32 (and
symmetrically for B). One *round* is one game between every pair of players;
the seed plays 2,500 rounds. A timeout counts as a draw (the seed's Onitama
rule: a game that reaches the turn limit is a draw).

Elo depends on the order of the games; the Bradley-Terry model (Bradley &
Terry 1952; MM algorithm of Hunter 2004, "MM algorithms for generalized
Bradley-Terry models", Ann. Statist. 32(1)) does not: it fits strengths
``p_i`` with ``P(i beats j) = p_i / (p_i + p_j)`` by maximum likelihood, and we
report them on the Elo scale, ``1000 + 400 log10(p_i)`` with mean 1000.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple, Sequence

import jax
import numpy as np

from jaxgames.evaluation import arena as arena_lib

START_RATING = 1000.0
"""Initial Elo rating (seed 001 section 6.3)."""

K_FACTOR = 32.0
"""Elo update factor K (seed 001 section 6.3)."""


def expected_score(rating_a, rating_b):
    """Expected score of A against B (seed 001 eq. 6.1), float or array, in [0, 1]."""
    return 1.0 / (1.0 + 10.0 ** ((np.asarray(rating_b, float) - np.asarray(rating_a, float)) / 400.0))


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float = K_FACTOR) -> tuple[float, float]:
    """Both ratings after one game (seed 001 eq. 6.2).

    Args:
        rating_a, rating_b: ratings before the game (Elo points).
        score_a: A's score: 1 win, 0.5 draw, 0 loss (B's is ``1 - score_a``).
        k: the K factor.

    Returns:
        ``(rating_a', rating_b')``.

    Raises:
        ValueError: ``score_a`` outside [0, 1].
    """
    if not 0.0 <= score_a <= 1.0:
        raise ValueError(f"score_a must be in [0, 1]; got {score_a}")
    ea = float(expected_score(rating_a, rating_b))
    return rating_a + k * (score_a - ea), rating_b + k * ((1.0 - score_a) - (1.0 - ea))


def elo_history(num_players: int, games: np.ndarray, *, start: float = START_RATING, k: float = K_FACTOR) -> np.ndarray:
    """Ratings after each game of a sequence (sequential Elo updates).

    Args:
        num_players: ``N``.
        games: float ``[G, 3]`` rows ``(i, j, score_i)`` in playing order.
        start: initial rating of everyone.
        k: K factor.

    Returns:
        float64 ``[G + 1, N]``: row 0 the start, row ``g`` after game ``g``.

    Raises:
        ValueError: player ids outside ``[0, N)``, a player against itself,
            or a score outside [0, 1].
    """
    games = np.asarray(games, float).reshape(-1, 3)
    ids = games[:, :2].astype(int)
    if games.size and (ids.min() < 0 or ids.max() >= num_players):
        raise ValueError(f"player ids must be in [0, {num_players})")
    if np.any(ids[:, 0] == ids[:, 1]):
        raise ValueError("a game needs two different players")
    if np.any((games[:, 2] < 0) | (games[:, 2] > 1)):
        raise ValueError("scores must be in [0, 1]")
    ratings = np.full(num_players, float(start))
    out = [ratings.copy()]
    for (i, j), s in zip(ids, games[:, 2]):
        ratings[i], ratings[j] = elo_update(ratings[i], ratings[j], s, k)
        out.append(ratings.copy())
    return np.stack(out)


def bradley_terry(wins: np.ndarray, *, prior: float = 0.5, iterations: int = 10_000, tol: float = 1e-10) -> np.ndarray:
    """Bradley-Terry maximum-likelihood ratings on the Elo scale (MM algorithm, Hunter 2004).

    The MM update ``p_i <- W_i / sum_j n_ij / (p_i + p_j)`` increases the
    likelihood at every step and converges to the MLE when the comparison
    graph is strongly connected. To keep the MLE finite when a player wins (or
    loses) every game, ``prior`` virtual wins are added each way for every
    pair that played (a draw-like prior; ``prior=0`` gives the plain MLE).

    Args:
        wins: float ``[N, N]``: ``wins[i, j]`` = games i won against j (a draw
            counts 0.5 to each side; the diagonal is ignored).
        prior: virtual wins added to each direction of each pair that met, >= 0.
        iterations: maximum MM steps.
        tol: stop when the largest change of ``log p`` is below this.

    Returns:
        float64 ``[N]``: ``1000 + 400 log10(p_i)`` with ``log p`` centred (mean 1000).

    Raises:
        ValueError: a non-square or negative matrix, or a negative prior.
    """
    w = np.array(wins, float)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"wins must be a square [N, N] matrix; got shape {w.shape}")
    if np.any(w < 0) or prior < 0:
        raise ValueError("wins and prior must be non-negative")
    np.fill_diagonal(w, 0.0)
    met = (w + w.T) > 0
    w = w + prior * met
    n = w + w.T
    total = w.sum(axis=1)
    logp = np.zeros(len(w))
    for _ in range(iterations):
        p = np.exp(logp)
        denom = np.sum(n / (p[:, None] + p[None, :]), axis=1)
        new = np.where(total > 0, np.log(np.maximum(total, 1e-300) / np.maximum(denom, 1e-300)), logp)
        new -= new.mean()
        if np.max(np.abs(new - logp)) < tol:
            logp = new
            break
        logp = new
    return START_RATING + 400.0 * logp / np.log(10.0)


class Tournament(NamedTuple):
    """Results of a round-robin tournament of ``N`` agents over ``R`` rounds.

    Attributes:
        names: the ``N`` agent names.
        elo: float64 ``[R + 1, N]``: Elo ratings after each round (row 0: 1000).
        bradley_terry: float64 ``[N]``: Bradley-Terry ratings (Elo scale).
        wins: float64 ``[N, N]``: ``wins[i, j]`` games i won against j (draws and timeouts 0.5).
        net_wins: int64 ``[N, N]``: ``net_wins[i, j]`` = i's wins minus losses against j.
        mean_length: float64 ``[N, N]``: mean game length (steps) of i against j (symmetric).
        win_rate: float64 ``[N]``: fraction of its games each agent won.
        timeouts: int64 ``[N, N]``: timed-out games of each pair (symmetric).
    """

    names: tuple
    elo: np.ndarray
    bradley_terry: np.ndarray
    wins: np.ndarray
    net_wins: np.ndarray
    mean_length: np.ndarray
    win_rate: np.ndarray
    timeouts: np.ndarray


def round_robin(
    env,
    agents: Sequence,
    num_rounds: int,
    key: jax.Array,
    *,
    k: float = K_FACTOR,
    max_steps: int = 1000,
    move_time_limit: float | None = None,
    progress=None,
) -> Tournament:
    """Plays ``num_rounds`` round robins (seed 001 section 6.3) and rates the agents.

    Each pair plays its ``num_rounds`` games as one batched match (first
    player alternating); Elo is then updated game by game in playing order:
    round 0 (every pair's game 0, pairs in lexicographic order), round 1, ...

    Args:
        env: a two-player sequential `jaxgames.core.Env`.
        agents: ``N >= 2`` `jaxgames.agents.Agent` s with distinct names.
        num_rounds: ``R >= 1``.
        key: PRNG key.
        k: Elo K factor.
        max_steps, move_time_limit: see `arena.play_match`.
        progress: optional callable ``progress(i, j)`` called before each pair.

    Returns:
        A `Tournament`.

    Raises:
        ValueError: fewer than two agents, duplicate names, ``num_rounds < 1``.
    """
    names = tuple(a.name for a in agents)
    if len(agents) < 2:
        raise ValueError("a tournament needs at least two agents")
    if len(set(names)) != len(names):
        raise ValueError(f"agent names must be distinct; got {names}")
    if isinstance(num_rounds, bool) or not isinstance(num_rounds, (int, np.integer)) or num_rounds < 1:
        raise ValueError(f"num_rounds must be a positive int; got {num_rounds!r}")
    N = len(agents)
    pairs = list(itertools.combinations(range(N), 2))
    keys = jax.random.split(key, len(pairs))
    scores = np.zeros((len(pairs), num_rounds))
    wins = np.zeros((N, N))
    net = np.zeros((N, N), np.int64)
    length = np.zeros((N, N))
    timeouts = np.zeros((N, N), np.int64)
    for p, (i, j) in enumerate(pairs):
        if progress is not None:
            progress(i, j)
        res = arena_lib.play_match(env, agents[i], agents[j], num_rounds, keys[p], max_steps=max_steps, move_time_limit=move_time_limit)
        s = np.where(res.outcome == arena_lib.WIN, 1.0, np.where(res.outcome == arena_lib.LOSS, 0.0, 0.5))
        scores[p] = s
        wins[i, j] += s.sum()
        wins[j, i] += (1.0 - s).sum()
        net[i, j] = res.wins - res.losses
        net[j, i] = -net[i, j]
        length[i, j] = length[j, i] = float(np.mean(res.length))
        timeouts[i, j] = timeouts[j, i] = res.timeouts
    games = np.array([(i, j, scores[p, r]) for r in range(num_rounds) for p, (i, j) in enumerate(pairs)])
    history = elo_history(N, games, k=k)[:: len(pairs)]
    won = np.zeros(N)
    for p, (i, j) in enumerate(pairs):
        won[i] += np.sum(scores[p] == 1.0)
        won[j] += np.sum(scores[p] == 0.0)
    return Tournament(names, history, bradley_terry(wins), wins, net, length, won / (num_rounds * (N - 1)), timeouts)
