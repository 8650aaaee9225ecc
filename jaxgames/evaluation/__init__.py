"""Evaluation shared by every game: the arena, ratings, plots.

Modules: `arena` (batched games of any game, 1-8 seats, rotated seating,
placements), `elo` (Elo and Bradley-Terry from pairwise outcomes of
placements, bootstrap confidence intervals, round robins), `plots`
(heatmaps, Elo curves), `stats` (the Wilson interval), `report` (tables
and figures of tournaments and training runs), `alphazero` and `q_snake`
(the evaluation hooks of those learners' training). Only `arena` and `elo`
are imported here.
"""

from jaxgames.evaluation.arena import ArenaResult, MatchResult, play, play_match
from jaxgames.evaluation.elo import (
    Ratings,
    Tournament,
    bootstrap_ratings,
    bradley_terry,
    elo_history,
    elo_update,
    pairwise_outcomes,
    round_robin,
)

__all__ = [
    "ArenaResult", "MatchResult", "play", "play_match", "Ratings", "Tournament", "bootstrap_ratings",
    "bradley_terry", "elo_history", "elo_update", "pairwise_outcomes", "round_robin",
]
