"""Evaluation shared by every game: the arena, Elo and Bradley-Terry ratings, plots.

Modules: `arena` (batched head-to-head matches), `elo` (Elo round robins,
Bradley-Terry MLE), `plots` (heatmaps, Elo curves). `plots` imports
matplotlib, so it is not imported here.
"""

from jaxgames.evaluation.arena import MatchResult, play_match
from jaxgames.evaluation.elo import Tournament, bradley_terry, elo_history, elo_update, round_robin

__all__ = ["MatchResult", "play_match", "Tournament", "bradley_terry", "elo_history", "elo_update", "round_robin"]
