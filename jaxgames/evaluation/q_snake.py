"""The evaluation hooks of Q-snake training, for `jaxgames.learners.loop.train`.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game" (University of Victoria report,
undated).

* `pit_hook`: every generation, the candidate against the best (the
  report's pit, section 3): 2v2 "team" and 1v3 "solo" games, scored in
  `jaxgames.learners.q_snake.pit_score_pmf`'s units against
  `pit_threshold_table`; a pass promotes (`QSnakeLearner.promote`).
* `reference_hook`: every ``eval_every`` generations, the best network
  against the reference generation (the report's figures 6-10).

Both draw their randomness from the state (``pit_rng``, ``rng``), so a
resumed run evaluates exactly as one that never stopped.

    learner = QSnakeLearner(config)
    loop.train(learner, num_iterations=..., key=..., evaluations=hooks(learner))
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxgames.learners import loop
from jaxgames.learners.q_snake import LearnerState, QSnakeLearner, decided, game_metrics, solo_ranks

EVAL_STREAM = 0x5EED
"""Folded into the state's key to draw the reference games' key (the learner's own key is not consumed)."""


def pit_games(learner: QSnakeLearner, state: LearnerState) -> dict:
    """The pit of the generation just done: `QSnakeLearner.pitted` against the best, from ``state.pit_rng``.

    Each game's seating is drawn uniformly (``random_seats``), so for a
    network equal to the best its team wins are Binomial(decided, 1/2) and
    its solo ranks uniform (`pit_score_pmf`).

    Returns:
        int32 scalars ``pit_wins_team``, ``pit_wins_solo``, ``pit_decided_team``,
        ``pit_decided_solo``, ``pit_rank_solo``, ``pit_score`` (``S - 1`` per
        team win plus the solo ranks), ``pit_threshold`` (of the decided team
        games) and bool ``accepted`` (score reaches it, or ``pit_gate=False``).
    """
    c = learner.config
    team_key, solo_key = jax.random.split(jax.random.wrap_key_data(state.pit_rng))
    params = learner.pit_env.default_params
    wins_team = wins_solo = decided_team = decided_solo = rank_solo = jnp.int32(0)
    pitted = learner.pitted(state)
    if c.pit_team_games:
        w, board, mask = learner.versus(pitted, state.best, team_key, c.pit_team_games, c.num_snakes // 2, params, True)
        wins_team, decided_team = jnp.sum(w).astype(jnp.int32), jnp.sum(decided(board, mask)).astype(jnp.int32)
    if c.pit_solo_games:
        solo_key, tie_key = jax.random.split(solo_key)
        w, board, mask = learner.versus(pitted, state.best, solo_key, c.pit_solo_games, 1, params, True)
        wins_solo, decided_solo = jnp.sum(w).astype(jnp.int32), jnp.sum(decided(board, mask)).astype(jnp.int32)
        rank_solo = jnp.sum(solo_ranks(board, mask, tie_key)).astype(jnp.int32)
    score = (c.num_snakes - 1) * wins_team + rank_solo
    threshold = learner.threshold_table[decided_team]
    accepted = (score >= threshold) | (not c.pit_gate)
    return dict(pit_wins_team=wins_team, pit_wins_solo=wins_solo, accepted=accepted,
                pit_decided_team=decided_team, pit_decided_solo=decided_solo, pit_rank_solo=rank_solo,
                pit_score=score, pit_threshold=threshold)


_pit_games = jax.jit(pit_games, static_argnums=0)


def pit_hook(learner: QSnakeLearner) -> loop.Evaluation:
    """The pit as an unnamed hook after every generation (its metrics join the history as they are); a pass promotes."""

    def fn(state):
        m = {k: jax.device_get(v).item() for k, v in _pit_games(learner, state).items()}
        accepted = bool(m["accepted"])
        return {**m, "accepted": int(accepted), "pit_wins": m["pit_wins_team"] + m["pit_wins_solo"]}, accepted

    return loop.Evaluation(fn, every=1, name="")


@functools.partial(jax.jit, static_argnums=0)
def reference_games(learner: QSnakeLearner, vars_a: dict, vars_b: dict, key: jax.Array) -> dict:
    """A's win counts and its snakes' `game_metrics` in ``eval_games`` team and solo games against B (float32 sums)."""
    c = learner.config
    team_key, solo_key = jax.random.split(key)
    p = learner.pit_env.default_params
    out = {}
    for name, k, seats in (("team", team_key, c.num_snakes // 2), ("solo", solo_key, 1)):
        w, final, mask_a = learner.versus(vars_a, vars_b, k, c.eval_games, seats, p, False)
        out[f"{name}_wins"] = jnp.sum(w)
        for m, v in game_metrics(final, mask_a).items():
            out[f"{name}_{m}"] = v
    return out


def reference_hook(learner: QSnakeLearner) -> loop.Evaluation:
    """The best network against the reference generation every ``eval_every`` generations (named ``reference``).

    Generations before ``reference_generation`` record no metrics; at it the
    reference is the best itself (`QSnakeLearner.update` stores it at the
    start of the next generation).

    Raises:
        ValueError: ``eval_every`` is 0 (no evaluation).
    """
    c = learner.config
    if not c.eval_every:
        raise ValueError("eval_every=0: the config asks for no evaluation against the reference")

    def fn(state):
        g = learner.iteration(state)
        if g < c.reference_generation:
            return {}, False
        reference = state.best if g == c.reference_generation else state.reference
        key = jax.random.fold_in(jax.random.wrap_key_data(state.rng), EVAL_STREAM)
        e = {k: float(v) for k, v in jax.device_get(reference_games(learner, state.best, reference, key)).items()}
        row = {"reference_generation": c.reference_generation}
        for fmt in ("team", "solo"):
            n = c.eval_games
            row[f"{fmt}_win_rate"] = e[f"{fmt}_wins"] / n
            snakes = max(e[f"{fmt}_snakes"], 1.0)
            row[f"{fmt}_game_length"] = e[f"{fmt}_game_turns"] / n
            for m in ("food", "heads_hunted", "collisions"):
                row[f"{fmt}_{m}_per_snake"] = e[f"{fmt}_{m}"] / snakes
        return row, False

    return loop.Evaluation(fn, every=c.eval_every, at_start=c.reference_generation == 0, name="reference")


def hooks(learner: QSnakeLearner) -> list[loop.Evaluation]:
    """The hooks a Q-snake run passes to `loop.train`: the pit, then (``eval_every > 0``) the reference games."""
    return [pit_hook(learner)] + ([reference_hook(learner)] if learner.config.eval_every else [])
