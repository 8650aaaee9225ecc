"""Elo round-robin tournaments and Bradley-Terry maximum-likelihood ratings.

Source: Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
Learning" (NUS USP group report, 2021), section 6.3, equations 6.1-6.2:
every player starts at 1000; after a game between A and B,

    E_A = 1 / (1 + 10 ** ((R_B - R_A) / 400)),   R_A' = R_A + K (S_A - E_A),

with ``S_A`` = 1 for a win, 0.5 for a draw, 0 for a loss, and K = 32 (and
symmetrically for B). One *round* is one game between every pair of players;
the report plays 2,500 rounds. A timeout counts as a draw (the report's
Onitama rule: a game that reaches the turn limit is a draw).

Elo depends on the order of the games; the Bradley-Terry model (Bradley &
Terry 1952; MM algorithm of Hunter 2004, "MM algorithms for generalized
Bradley-Terry models", Ann. Statist. 32(1)) does not: it fits strengths
``p_i`` with ``P(i beats j) = p_i / (p_i + p_j)`` by maximum likelihood, and we
report them on the Elo scale, ``1000 + 400 log10(p_i)`` with mean 1000.

Games of more than two players are rated from the *pairwise outcomes implied
by the placements* (`pairwise_outcomes`): in each game, every pair of seats
held by different agents is one comparison, won by the better-placed seat,
drawn on equal places. This is the "full pair" reduction of a ranking to
Bradley-Terry comparisons (Weng & Lin 2011, "A Bayesian approximation method
for online ranking", JMLR 12, section 3.1; Hunter 2004 section 5 fits it by
the same MM algorithm). Elo over such games updates every agent once per game
by ``K / (n - 1)`` times the sum of its pairwise ``S - E`` against the
pre-game ratings (``n`` players in the game), which reduces to equation 6.2
for two players. The comparisons of one game are not independent, so
confidence intervals come from a bootstrap over *games* (`bootstrap_ratings`,
Efron & Tibshirani 1993, percentile intervals), not from the pair count.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple, Sequence

import jax
import numpy as np

from jaxgames.evaluation import arena as arena_lib

START_RATING = 1000.0
"""Initial Elo rating (Dasgupta & Chong, section 6.3)."""

K_FACTOR = 32.0
"""Elo update factor K (Dasgupta & Chong, section 6.3)."""


def expected_score(rating_a, rating_b):
    """Expected score of A against B (Dasgupta & Chong, eq. 6.1), float or array, in [0, 1]."""
    return 1.0 / (1.0 + 10.0 ** ((np.asarray(rating_b, float) - np.asarray(rating_a, float)) / 400.0))


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float = K_FACTOR) -> tuple[float, float]:
    """Both ratings after one game (Dasgupta & Chong, eq. 6.2).

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


def pairwise_outcomes(result: arena_lib.ArenaResult) -> np.ndarray:
    """The pairwise comparisons implied by the placements of every game (module docstring).

    Args:
        result: an `arena.ArenaResult` (``[G, N]`` placements and agents by seat).

    Returns:
        float64 ``[P, 4]`` rows ``(game, agent_i, agent_j, score_i)`` in game order:
        one per pair of seats held by *different* agents; ``score_i`` is 1 if
        ``i`` placed better, 0 if worse, 0.5 on equal places (timed-out games
        place everyone 1: a draw).
    """
    G, N = result.placement.shape
    rows = []
    for s, t in itertools.combinations(range(N), 2):
        a, b = result.agent_of_seat[:, s], result.agent_of_seat[:, t]
        ps, pt = result.placement[:, s], result.placement[:, t]
        score = np.where(ps < pt, 1.0, np.where(ps > pt, 0.0, 0.5))
        keep = a != b
        rows.append(np.stack([np.arange(G), a, b, score], axis=1)[keep])
    out = np.concatenate(rows) if rows else np.zeros((0, 4))
    return out[np.argsort(out[:, 0], kind="stable")]


def wins_matrix(pairs: np.ndarray, num_agents: int) -> np.ndarray:
    """float64 ``[K, K]``: ``wins[i, j]`` = comparisons i won against j (draws 0.5 each) from `pairwise_outcomes` rows."""
    w = np.zeros((num_agents, num_agents))
    i, j, s = pairs[:, 1].astype(int), pairs[:, 2].astype(int), pairs[:, 3]
    np.add.at(w, (i, j), s)
    np.add.at(w, (j, i), 1.0 - s)
    return w


def game_elo(num_agents: int, pairs: np.ndarray, *, start: float = START_RATING, k: float = K_FACTOR) -> np.ndarray:
    """Elo ratings after each game of pairwise comparisons grouped by game (module docstring).

    Args:
        num_agents: ``K``.
        pairs: `pairwise_outcomes` rows ``(game, i, j, score_i)``, in game order.
        start, k: initial rating and K factor.

    Returns:
        float64 ``[G' + 1, K]``: row 0 the start, then the ratings after each
        game that has at least one comparison (``G'`` such games).
    """
    ratings = np.full(num_agents, float(start))
    history = [ratings.copy()]
    if len(pairs) == 0:
        return np.stack(history)
    games = pairs[:, 0].astype(int)
    bounds = np.flatnonzero(np.diff(games)) + 1
    if len(bounds) == len(pairs) - 1:  # one comparison per game (two players): the same update with plain floats, fast
        out = np.empty((len(pairs) + 1, num_agents))
        out[0] = ratings
        r = ratings.tolist()
        rows = zip(pairs[:, 1].astype(int).tolist(), pairs[:, 2].astype(int).tolist(), pairs[:, 3].tolist())
        for g, (i, j, s) in enumerate(rows, 1):
            e = float(expected_score(r[i], r[j]))
            r[i], r[j] = r[i] + k * (s - e), r[j] + k * ((1.0 - s) - (1.0 - e))
            out[g] = r
        return out
    for chunk in np.split(pairs, bounds):
        i, j, s = chunk[:, 1].astype(int), chunk[:, 2].astype(int), chunk[:, 3]
        players = np.unique(np.concatenate([i, j]))
        e = expected_score(ratings[i], ratings[j])
        delta = np.zeros(num_agents)
        np.add.at(delta, i, s - e)
        np.add.at(delta, j, (1.0 - s) - (1.0 - e))
        ratings = ratings + k / max(len(players) - 1, 1) * delta
        history.append(ratings.copy())
    return np.stack(history)


class Ratings(NamedTuple):
    """Ratings of ``K`` agents with bootstrap confidence intervals (Elo scale).

    Attributes:
        names: the agents' names.
        bradley_terry: float64 ``[K]``: Bradley-Terry MLE (mean 1000).
        bradley_terry_ci: float64 ``[K, 2]``: the bootstrap percentile interval.
        elo: float64 ``[K]``: Elo after the games in their playing order.
        elo_ci: float64 ``[K, 2]``: the bootstrap percentile interval of Elo
            (each resample is replayed in a random order).
        num_games: games rated.
        confidence: the intervals' level, e.g. 0.95.
    """

    names: tuple
    bradley_terry: np.ndarray
    bradley_terry_ci: np.ndarray
    elo: np.ndarray
    elo_ci: np.ndarray
    num_games: int
    confidence: float


def bootstrap_ratings(
    pairs: np.ndarray,
    names: Sequence[str],
    *,
    num_samples: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    prior: float = 0.5,
    k: float = K_FACTOR,
) -> Ratings:
    """Bradley-Terry and Elo ratings with confidence intervals from a bootstrap over games.

    Args:
        pairs: `pairwise_outcomes` rows ``(game, i, j, score_i)``; game ids may
            repeat across results concatenated with distinct ids.
        names: the ``K`` agents' names (index = agent id in ``pairs``).
        num_samples: bootstrap resamples (games drawn with replacement).
        confidence: level of the percentile intervals, in (0, 1).
        seed: numpy seed of the resampling.
        prior: `bradley_terry`'s virtual wins per direction of each pair that met.
        k: Elo K factor.

    Returns:
        `Ratings`.

    Raises:
        ValueError: no comparisons, agent ids in ``pairs`` that are not integers
            in ``[0, len(names))`` (too few names), ``num_samples < 1`` or
            ``confidence`` outside (0, 1).

    Note:
        When an agent wins (or loses) every comparison against another, every
        resample says the same and the percentile interval collapses to a
        point: the rating is then set by ``prior`` alone (a lower bound on the
        gap), not known to that precision. Read such an interval as "at least".
    """
    pairs = np.asarray(pairs, float).reshape(-1, 4)
    if len(pairs) == 0:
        raise ValueError("no pairwise comparisons to rate (every game was played by one agent?)")
    if isinstance(num_samples, bool) or int(num_samples) < 1:
        raise ValueError(f"num_samples must be a positive int; got {num_samples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")
    K = len(names)
    ids = pairs[:, 1:3]
    if not np.all(np.isfinite(ids) & (ids == np.round(ids))) or ids.min() < 0:
        raise ValueError(f"agent ids in pairs must be non-negative integers; got {np.unique(ids).tolist()}")
    if ids.max() >= K:
        raise ValueError(
            f"pairs name {int(ids.max()) + 1} agents (ids 0..{int(ids.max())}) but names has {K}: {tuple(names)}"
        )
    # the comparisons grouped by game in one pass (a stable sort keeps each game's rows in order)
    _, index, counts = np.unique(pairs[:, 0], return_inverse=True, return_counts=True)
    num_games = len(counts)
    grouped = pairs[np.argsort(index.reshape(-1), kind="stable")]
    starts = np.cumsum(counts) - counts
    rng = np.random.default_rng(seed)
    bt_samples, elo_samples = [], []
    for _ in range(int(num_samples)):
        pick = rng.integers(0, num_games, num_games)
        lens = counts[pick]  # the drawn games' rows, concatenated in the drawn order, renumbered 0, 1, ...
        rows = np.repeat(starts[pick] - (np.cumsum(lens) - lens), lens) + np.arange(lens.sum())
        sample = np.column_stack([np.repeat(np.arange(num_games), lens), grouped[rows, 1:]])
        bt_samples.append(bradley_terry(wins_matrix(sample, K), prior=prior))
        elo_samples.append(game_elo(K, sample, k=k)[-1])
    alpha = (1.0 - confidence) / 2.0
    q = [100 * alpha, 100 * (1 - alpha)]
    return Ratings(
        names=tuple(names),
        bradley_terry=bradley_terry(wins_matrix(pairs, K), prior=prior),
        bradley_terry_ci=np.percentile(np.stack(bt_samples), q, axis=0).T,
        elo=game_elo(K, pairs, k=k)[-1],
        elo_ci=np.percentile(np.stack(elo_samples), q, axis=0).T,
        num_games=num_games,
        confidence=float(confidence),
    )


class Tournament(NamedTuple):
    """Results of a round-robin tournament of ``K`` agents over ``R`` rounds.

    Attributes:
        names: the ``K`` agent names.
        elo: float64 ``[R + 1, K]``: Elo ratings after each round (row 0: 1000).
        bradley_terry: float64 ``[K]``: Bradley-Terry ratings (Elo scale).
        wins: float64 ``[K, K]``: ``wins[i, j]`` pairwise comparisons i won against j
            (draws and timeouts 0.5).
        net_wins: int64 ``[K, K]``: ``net_wins[i, j]`` = i's pairwise wins minus losses against j.
        mean_length: float64 ``[K, K]``: mean game length (steps) of the games in which
            both i and j played (symmetric; NaN on the diagonal if never together).
        win_rate: float64 ``[K]``: fraction of its seats each agent won outright.
        timeouts: int64 ``[K, K]``: timed-out games in which both i and j played.
        ratings: `Ratings` with bootstrap confidence intervals.
        lineups: the lineups played (agent index per seat), in order.
        results: the `arena.ArenaResult` of each lineup.
    """

    names: tuple
    elo: np.ndarray
    bradley_terry: np.ndarray
    wins: np.ndarray
    net_wins: np.ndarray
    mean_length: np.ndarray
    win_rate: np.ndarray
    timeouts: np.ndarray
    ratings: Ratings
    lineups: tuple
    results: tuple


def round_robin_lineups(num_agents: int, num_seats: int) -> list[tuple[int, ...]]:
    """Every multiset of ``num_seats`` agents with at least two different agents, in lexicographic order.

    Two seats: every pair ``(i, j)``, ``i < j`` (the classic round robin).
    Four seats and three agents: the 12 mixes such as ``(0, 0, 1, 2)``.
    """
    return [c for c in itertools.combinations_with_replacement(range(num_agents), num_seats) if len(set(c)) > 1]


def round_robin(
    env,
    agents: Sequence,
    num_rounds: int,
    key: jax.Array,
    *,
    k: float = K_FACTOR,
    max_steps: int = 1000,
    move_time_limit: float | None = None,
    seating: str = "rotate",
    lineups: Sequence[Sequence[int]] | None = None,
    bootstrap_samples: int = 200,
    progress=None,
    mesh=None,
    chunk_size: int | None = None,
    refill: bool = False,
) -> Tournament:
    """Plays every lineup ``num_rounds`` times (Dasgupta & Chong, section 6.3) and rates the agents.

    For a two-player game the lineups are the pairs (each pair plays
    ``num_rounds`` games, seats alternating); for an ``N``-seat game every
    mix of ``N`` agents with at least two different ones (`round_robin_lineups`),
    seats rotated (or permuted) over the games. Elo is updated game by game in
    playing order: round 0 (every lineup's game 0, lineups in order), round 1, ...

    Args:
        env: any `jaxgames.core.Env`.
        agents: ``K >= 2`` `jaxgames.agents.Agent` s with distinct names.
        num_rounds: ``R >= 1`` games per lineup.
        key: PRNG key.
        k: Elo K factor.
        max_steps, move_time_limit, seating: see `arena.play`.
        lineups: override the lineups (agent index per seat).
        bootstrap_samples: resamples for the confidence intervals.
        progress: optional callable ``progress(lineup)`` called before each lineup.
        mesh, chunk_size, refill: each lineup's games split over a device mesh
            and/or played in chunks or refilled rows (`arena.play`; the same
            result bitwise, JAX agents only).

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
    K, N = len(agents), env.num_players
    lineups = [tuple(l) for l in lineups] if lineups is not None else round_robin_lineups(K, N)
    keys = jax.random.split(key, len(lineups))
    results, all_pairs = [], []
    wins = np.zeros((K, K))
    length_sum, together, timeouts = np.zeros((K, K)), np.zeros((K, K)), np.zeros((K, K), np.int64)
    seats_held, seats_won = np.zeros(K), np.zeros(K)
    for li, lineup in enumerate(lineups):
        if progress is not None:
            progress(lineup)
        res = arena_lib.play(
            env, agents, num_rounds, keys[li], lineup=lineup, seating=seating,
            max_steps=max_steps, move_time_limit=move_time_limit, mesh=mesh, chunk_size=chunk_size,
            refill=refill,
        )
        results.append(res)
        pairs = pairwise_outcomes(res)
        wins += wins_matrix(pairs, K)
        # Playing order: game r of lineup li comes at position r * L + li.
        pairs[:, 0] = pairs[:, 0] * len(lineups) + li
        all_pairs.append(pairs)
        present = np.zeros((res.num_games, K), bool)
        np.put_along_axis(present, res.agent_of_seat, True, axis=1)
        both = present[:, :, None] & present[:, None, :]
        length_sum += np.einsum("gij,g->ij", both, res.length.astype(float))
        together += both.sum(axis=0)
        timeouts += np.einsum("gij,g->ij", both, res.timed_out.astype(np.int64))
        won = res.won()
        np.add.at(seats_held, res.agent_of_seat.ravel(), 1)
        np.add.at(seats_won, res.agent_of_seat.ravel(), won.ravel())
    pairs = np.concatenate(all_pairs)
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    history = game_elo(K, pairs, k=k)
    # Sample the history after each round (every lineup's game r); games without comparisons add no row.
    game_ids = np.unique(pairs[:, 0]).astype(int)
    round_of_row = np.concatenate([[-1], game_ids // len(lineups)])
    elo_rounds = np.stack([history[0]] + [history[np.flatnonzero(round_of_row <= r)[-1]] for r in range(num_rounds)])
    ratings = bootstrap_ratings(pairs, names, num_samples=bootstrap_samples, k=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_length = length_sum / together
    net = np.rint(wins - wins.T).astype(np.int64)
    return Tournament(
        names, elo_rounds, ratings.bradley_terry, wins, net, mean_length,
        seats_won / np.maximum(seats_held, 1), timeouts, ratings, tuple(lineups), tuple(results),
    )
