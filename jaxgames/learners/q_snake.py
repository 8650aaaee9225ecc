"""AlphaSnake Zero: Q-value self-play for Battlesnake, thousands of snakes learning at once.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game" (University of Victoria report, undated), section 3 (method) and
section 4 (network). `QSnakeLearner` is a `jaxgames.learners.loop` learner;
one ``update`` is one generation:

1. **Self-play** (`QSnakeLearner.self_play`): ``B`` game slots of ``S`` snakes
   for ``T = num_turns`` turns in one ``lax.scan``, every snake driven by the
   *best* network, sampling the power-softmax pi_n of its Q-vector (eq. 4).
   A finished game restarts at once in its slot, so no slot sits idle; chains
   still running when the record ends have no outcome and are not trained on.
   The record keeps boards; the sampled positions' views are recomputed.
2. **Targets** (`chain_targets`): the backward recursion of eqs. 5-7 along
   each snake's chain, with Psi of eq. 8 (`transition_weights`).
3. **Training**: ``train_steps`` Optax steps of the *candidate* on positions
   drawn at exponentially growing distances from each chain's end
   (`sample_distances`), mirrored left-right with probability 1/2
   (`reflect_example`).

The **pit** (the paper's promotion gate: the candidate against the best in
2v2 "team" and 1v3 "solo" games, scored by `pit_score_pmf` against
`pit_threshold_table`) is an evaluation hook built outside the learner
(`jaxgames.evaluation.q_snake.pit_hook`); a pass calls `QSnakeLearner.promote`.
The curriculum ("learn to walk", section 3) is health loss
``walk_health_loss`` for the first ``walk_generations`` generations, then 1,
through the traced `BattlesnakeParams` (one compiled generation serves both).

Where the report is ambiguous (measurements behind each choice:
``jaxgames/weights/q_snake/README.md``):

* **View scale**: heads and bodies scaled by 0.1 and clipped to [-1, 1]
  instead of the strict 1 / (H W + 1), which made bodies nearly invisible.
* **Psi at a death** is 0 and the target 0, whatever the others did; Psi of a
  living snake is the product over the other snakes that acted.
* **Chain ends**: a death (a draw included) is 0, the last snake alive 1; a
  game cut at ``max_turns`` keeps the network's own prediction.
* **Untaken entries** get no gradient (``targets="taken"``): ``"vector"``
  would anchor them to the stale data-generating network.
* **Recursion**: ``"eq7"`` (the report's) weights a correction by Psi, which
  regression over sampled chains counts twice; ``"unbiased"`` uses weight 1;
  ``"peng"`` is Peng's Q(lambda) (Peng & Williams, Machine Learning 22, 1996).
* **Loss**: binary cross-entropy on the sigmoid outputs (the targets are win
  rates whose chain ends sit at 0 and 1, where a squared error's gradient
  through the sigmoid vanishes); ``"mse"`` is kept as a setting.
* **Pit**: both sides sample pi_n (greedy copies mirror each other into
  head-to-head deaths); team games nobody wins are left out of the test;
  solo games score the candidate's rank, uniform for an equal network.
* Additions off by default: ``death_targets`` (moves that die whatever the
  others do, `rules.certain_deaths`, trained towards 0), ``opponent_games``
  (slots against `HeuristicAgent` snakes, Psi 1 for the network's snake),
  ``ema_decay`` (the pit plays and promotes a Polyak average).

**Search targets** (``search_depth >= 1``; expert iteration: Anthony, Tian &
Barber 2017): step 2 becomes a best-reply search (`SearchAgent.move_values`,
leaves partly valued by the best network) at ``search_positions`` sampled
positions; ``(v + 1) / 2`` of each relative move's value is its target.
Records are ``[T, B, S]``: turns, game slots, snakes.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import math
import os
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from scipy.stats import binom

from jaxgames import checks, parallel
from jaxgames.agents.battlesnake import HeuristicAgent
from jaxgames.agents.battlesnake_search import SearchAgent
from jaxgames.agents.q_snake import QSnakeAgent, load_weights
from jaxgames.games.battlesnake import observe, rules
from jaxgames.games.battlesnake.env import Battlesnake, BattlesnakeParams, BattlesnakeState
from jaxgames.games.battlesnake.rules import Board
from jaxgames.networks.q_snake import PAPER_FEATURES, QSnakeNet, init_variables, rotated_views, validate_features

Q_FLOOR = 1e-7
"""Q-values are clipped to ``[Q_FLOOR, 1]`` before the logarithm of the power-softmax (a sigmoid can round to 0)."""

TRACES: collections.Counter = collections.Counter()
"""How many times each compiled piece was traced (name -> count): tests check that a curriculum or a resume does not retrace."""

SAMPLERS = ("exponential", "all")
LOSSES = ("bce", "mse")
TARGETS = ("taken", "vector")
BOOTSTRAPS = ("recorded", "candidate")
RECURSIONS = ("eq7", "unbiased", "peng")
OPTIMIZERS = ("adam", "sgd")
PIT_POLICIES = ("sample", "greedy")

# Death causes reported per generation (codes of `rules.ELIMINATION_CAUSES`).
DEATH_CAUSES = {
    "starvation": rules.OUT_OF_HEALTH,
    "wall": rules.WALL_COLLISION,
    "self": rules.SELF_COLLISION,
    "body": rules.COLLISION,
    "head": rules.HEAD_COLLISION,
    "hazard": rules.HAZARD,
}
"""Metric name -> elimination cause. ``self`` and ``body`` are the report's "body" deaths (own body, another's)."""


# ----------------------------------------------------------------------------- settings
@dataclasses.dataclass(frozen=True)
class QSnakeConfig:
    """Every setting of the learner (static: a config value compiles its own functions once).

    Sections named below are those of the module docstring.

    Attributes:
        board_size: board width = height (the views are ``2 board_size - 1`` wide).
        num_snakes: snakes per game, ``S`` (even, >= 2: the team pit gives each side half the seats).
        head_multiplier, body_multiplier: the scale of the view's heads (eq. 1) and bodies (eq. 2), > 0
            ("View scale").
        max_turns: a self-play game's turn limit (a longer game is truncated).
        num_turns: turns of self-play per generation, ``T`` (slots restart ended games; chains still
            running at the end are not trained on).
        features: filters of the conv stack (`jaxgames.networks.q_snake`; default the report's).
        num_games: self-play game slots, ``B`` (games played in parallel).
        power: n of the power-softmax pi_n(v) = v^n / sum_j v_j^n (eq. 4), > 0.
        walk_generations: generations played with ``walk_health_loss`` ("learn to walk"), then health loss 1.
        walk_health_loss: 3, 9 (the report's), 11, 33 or 99 (a factor of 99).
        sampler: ``"exponential"`` (the report's gaps) or ``"all"`` positions.
        gap_growth: ratio of successive gaps of the exponential sampler, > 1.
        targets: ``"taken"`` (default) or ``"vector"``.
        bootstrap: whose Q-values eqs. 5-7 refine: ``"recorded"`` (default, the best network's in
            self-play) or ``"candidate"`` (the trained network's, on the recorded positions) ("Bootstrap").
        recursion: the refinement along a chain (`chain_targets`, "Recursion"): ``"eq7"`` (the report's),
            ``"unbiased"`` (eq. 7 with the Psi weight 1) or ``"peng"`` (Peng's Q(lambda)).
        trace_lambda: lambda of ``recursion="peng"``, in [0, 1].
        loss: ``"bce"`` (default) or ``"mse"``.
        optimizer: ``"adam"`` (default) or ``"sgd"`` (Optax).
        learning_rate: the optimiser's step size.
        batch_size: training minibatch (positions).
        train_steps: optimiser steps per generation.
        reflect: mirror each training position with probability 1/2.
        pit_team_games: candidate-versus-best games with half the seats each (2v2).
        pit_solo_games: games of one candidate against ``S - 1`` best (1v3).
        pit_max_turns: turn limit of pit and evaluation games.
        pit_policy: ``"sample"`` (pi_n, as self-play) or ``"greedy"`` (argmax Q) in pit and evaluation games.
        pit_alpha: the chance a network equal to the best passes the pit, in (0, 1).
        pit_gate: True (the report's): the candidate replaces the best only when it passes the pit;
            False: after every generation, the pit still played and recorded ("Gate").
        death_targets: False (the report's); True also trains towards 0 the moves that die whatever the
            others move (`jaxgames.games.battlesnake.rules.certain_deaths`; "Certain deaths").
        opponent_games: self-play slots, in 0..``num_games``, that seat one network snake against ``S - 1``
            `jaxgames.agents.battlesnake.HeuristicAgent` snakes (0: the report's pure self-play; only the
            network's snakes are trained on and counted; "Heuristic opponents").
        ema_decay: in [0, 1): 0 pits and promotes the candidate's own weights; otherwise an exponential
            moving average of them with this decay, updated every step ("Weight averaging").
        eval_every: every this many generations the best network plays ``eval_games`` games of each
            format against the reference network (0: never).
        eval_games: games per format of that evaluation.
        reference_generation: the fixed earlier generation evaluated against (0: the initial network).
        search_depth: 0 (the report's targets) or the plies of the search whose move values are the
            targets ("Search targets"): ``search_positions`` of the sampled positions a generation,
            every relative move trained (``targets`` and the chain targets are then unused).
        search_positions: positions searched per generation (``search_depth >= 1``).
        search_opponents: snakes the search enumerates besides the player (the nearest; best reply).
        search_learned_weight: in [0, 1], the best network's share of the search's leaf value
            (`jaxgames.agents.battlesnake_search.SearchAgent`'s ``learned_weight``; 0: the
            hand-written evaluation only).
        init_weights: ``""`` (a random network) or a weights folder (`jaxgames.agents.q_snake.load_weights`;
            ``"shipped"``: the package's) that a fresh run starts from, as candidate, best and reference.
    """

    board_size: int = 11
    num_snakes: int = 4
    head_multiplier: float = 0.1
    body_multiplier: float = 0.1
    max_turns: int = 500
    num_turns: int = 256
    features: tuple[int, ...] = PAPER_FEATURES
    num_games: int = 256
    power: float = 6.0
    walk_generations: int = 5
    walk_health_loss: int = 9
    sampler: str = "exponential"
    gap_growth: float = 2.0
    targets: str = "taken"
    bootstrap: str = "recorded"
    recursion: str = "eq7"
    trace_lambda: float = 0.8
    loss: str = "bce"
    optimizer: str = "adam"
    learning_rate: float = 1e-3
    batch_size: int = 256
    train_steps: int = 200
    reflect: bool = True
    pit_team_games: int = 64
    pit_solo_games: int = 64
    pit_max_turns: int = 300
    pit_policy: str = "sample"
    pit_alpha: float = 0.01
    pit_gate: bool = True
    death_targets: bool = False
    opponent_games: int = 0
    ema_decay: float = 0.0
    eval_every: int = 5
    eval_games: int = 64
    reference_generation: int = 0
    search_depth: int = 0
    search_positions: int = 1024
    search_opponents: int = 1
    search_learned_weight: float = 0.5
    init_weights: str = ""

    def __post_init__(self):
        rules.validate_size(self.board_size, self.num_snakes)
        if self.num_snakes < 2 or self.num_snakes % 2:
            raise ValueError(f"num_snakes must be even and >= 2 (the pit's team games split the seats); got {self.num_snakes}")
        object.__setattr__(self, "features", validate_features(self.features))
        for name in ("num_turns", "num_games", "batch_size", "train_steps", "eval_games"):
            checks.positive_int(name, getattr(self, name))
        for name in ("max_turns", "pit_max_turns"):  # the game's range (`Battlesnake`), checked before any folder
            checks.integer(name, getattr(self, name), 1, 2**30)
        for name in ("walk_generations", "pit_team_games", "pit_solo_games", "reference_generation", "eval_every"):
            checks.non_negative_int(name, getattr(self, name))
        if self.pit_team_games + self.pit_solo_games < 1:
            raise ValueError("the pit needs games: pit_team_games + pit_solo_games must be >= 1; got 0")
        for name in ("power", "head_multiplier", "body_multiplier", "learning_rate"):  # float32 inside the jitted code
            checks.real(name, getattr(self, name), lo=0.0, lo_open=True, dtype=np.float32)
        checks.integer("walk_health_loss", self.walk_health_loss)
        checks.choice("walk_health_loss", self.walk_health_loss, rules.HEALTH_LOSS_CHOICES)
        for name, choices in (("sampler", SAMPLERS), ("loss", LOSSES), ("targets", TARGETS), ("bootstrap", BOOTSTRAPS),
                              ("recursion", RECURSIONS), ("optimizer", OPTIMIZERS), ("pit_policy", PIT_POLICIES)):
            checks.choice(name, getattr(self, name), choices)
        checks.real("gap_growth", self.gap_growth, lo=1.0, lo_open=True)
        checks.probability("trace_lambda", self.trace_lambda)
        for name in ("reflect", "pit_gate", "death_targets"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool; got {getattr(self, name)!r}")
        checks.integer("opponent_games", self.opponent_games, lo=0, hi=self.num_games)
        checks.real("ema_decay", self.ema_decay, lo=0.0, hi=1.0, hi_open=True)
        checks.real("pit_alpha", self.pit_alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        pit_threshold(self.pit_team_games, self.pit_solo_games, self.num_snakes, self.pit_alpha)  # raises if unreachable
        checks.non_negative_int("search_depth", self.search_depth)
        checks.positive_int("search_positions", self.search_positions)
        checks.integer("search_opponents", self.search_opponents, 0, self.num_snakes - 1)
        checks.real("search_learned_weight", self.search_learned_weight, 0.0, 1.0, dtype=np.float32)
        if self.search_depth and self.walk_generations:
            raise ValueError(f"search_depth={self.search_depth} needs walk_generations=0 (the search plays the "
                             f"standard health loss 1); got walk_generations={self.walk_generations}")
        records = self.num_turns * self.num_games * self.num_snakes
        if self.search_depth and self.search_positions > records:
            raise ValueError(f"search_positions={self.search_positions} exceeds the positions a generation records "
                             f"(num_turns * num_games * num_snakes = {records})")
        if not isinstance(self.init_weights, str):
            raise TypeError(f"init_weights must be a folder name or ''; got {self.init_weights!r}")

    @property
    def view_shape(self) -> tuple[int, int, int]:
        """``(2H-1, 2W-1, 3)``: the network's input."""
        v = 2 * self.board_size - 1
        return (v, v, 3)

    def shape_settings(self) -> dict:
        """The settings that fix the shapes of a checkpoint (board, snakes, network)."""
        return {"board_size": self.board_size, "num_snakes": self.num_snakes, "features": list(self.features)}

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict) -> "QSnakeConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown QSnakeConfig settings {unknown}")
        d = dict(d)
        if "features" in d:
            d["features"] = tuple(d["features"])
        return cls(**d)


# ----------------------------------------------------------------------------- the report's formulas
def log_power_softmax(q: jax.Array, power) -> jax.Array:
    """log pi_n(v) of the power-softmax pi_n(v)_i = v_i^n / sum_j v_j^n (Siddiqui et al., eq. 4), computed stably.

    In log space, ``n log v - logsumexp(n log v)``, with ``v`` clipped to
    ``[Q_FLOOR, 1]`` so that a Q-value that rounds to 0 gets a tiny positive
    probability instead of a NaN.

    Args:
        q: float32 ``[..., A]``, Q-values in ``[0, 1]``.
        power: n > 0 (float, may be traced; checked at the Python boundary by `QSnakeConfig`).

    Returns:
        float32 ``[..., A]``: log-probabilities.
    """
    z = power * jnp.log(jnp.clip(q, Q_FLOOR, 1.0))
    return z - jax.nn.logsumexp(z, axis=-1, keepdims=True)


def power_softmax(q: jax.Array, power) -> jax.Array:
    """pi_n(v) (eq. 4), float32 ``[..., A]``; see `log_power_softmax`.

    Raises:
        ValueError: a concrete ``power <= 0`` (pi_n would favour the worst actions or be uniform).
    """
    if not isinstance(power, jax.core.Tracer) and not float(np.asarray(power)) > 0:
        raise ValueError(f"the power n of pi_n must be > 0; got {power!r}")
    return jnp.exp(log_power_softmax(q, power))


def q_loss(q: jax.Array, target: jax.Array, mask: jax.Array, kind: str = "bce") -> jax.Array:
    """The training loss: the mean over the ``mask``-ed entries of the per-entry error of ``q`` against ``target``.

    ``"bce"``: binary cross-entropy ``-(y log q + (1 - y) log(1 - q))``, ``q``
    clipped to ``[Q_FLOOR, 1 - Q_FLOOR]``; ``"mse"``: ``(q - y)^2`` (module
    docstring, "Loss"). The mean is ``sum(err * mask) / max(sum(mask), 1)``.

    Args:
        q, target, mask: float32 ``[N, 3]``: Q-values, targets in [0, 1], 1 where trained.
        kind: ``"bce"`` or ``"mse"`` (static).

    Returns:
        float32 ``[]``.
    """
    if kind == "mse":
        err = (q - target) ** 2
    else:
        qc = jnp.clip(q, Q_FLOOR, 1.0 - Q_FLOOR)
        err = -(target * jnp.log(qc) + (1.0 - target) * jnp.log(1.0 - qc))
    return jnp.sum(err * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def transition_weights(logp_taken: jax.Array, acting: jax.Array, died: jax.Array) -> jax.Array:
    """Psi of each snake's step (Siddiqui et al., eq. 8): the product of the other acting snakes' policy entries.

    Psi_i = prod_{j != i, j acted} pi_n(Q_j)[a_j]; 0 for a snake that died in
    the step (the report's exception) and for one that did not act.

    Args:
        logp_taken: float32 ``[S]``: log pi_n(Q_j)[a_j] of each snake's taken action.
        acting: bool ``[S]``: the snake was alive (and the game on) before the step.
        died: bool ``[S]``: the snake was eliminated by the step.

    Returns:
        float32 ``[S]``.
    """
    S = logp_taken.shape[-1]
    others = acting[None, :] & ~jnp.eye(S, dtype=bool)  # [i, j]: j counts for i
    log_psi = jnp.sum(jnp.where(others, logp_taken[None, :], 0.0), axis=-1)
    return jnp.where(acting & ~died, jnp.exp(log_psi), 0.0).astype(jnp.float32)


def chain_targets(
    q: jax.Array,
    action: jax.Array,
    psi: jax.Array,
    acting: jax.Array,
    died: jax.Array,
    won: jax.Array,
    chain_end: jax.Array,
    recursion: str = "eq7",
    trace_lambda: float = 0.8,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Targets along one seat's turns by the backward recursion of Siddiqui et al., eqs. 5-7.

    The turns of one seat hold one or more chains (one per game the seat
    played: self-play restarts finished games). From each chain's last step
    to its first:

        Q*(s_t, a_t) = min(max(Psi_t [max_a Q*(s_{t+1}, a) - max_a Q(s_{t+1}, a)] + Q(s_t, a_t), 0), 1)   (eq. 7)

    where the refined vector Q*(s_{t+1}, .) is Q(s_{t+1}, .) with its taken
    entry replaced by Q*(s_{t+1}, a_{t+1}). Chain ends (module docstring):
    ``died`` -> 0, ``won`` -> 1; any other last step (the game truncated at
    its turn limit) starts from ``max Q* - max Q = 0``, i.e. keeps its own
    prediction. A chain still running at the last recorded turn has no end:
    it is marked incomplete (its targets carry no outcome).

    ``recursion`` (static) picks the refinement (module docstring,
    "Recursion"): ``"eq7"``, the report's, as above; ``"unbiased"``, eq. 7
    with ``Psi_t`` replaced by 1 (the unbiased sample of eq. 6 when the
    targets are fitted by regression over sampled chains); ``"peng"``,
    Peng's Q(lambda) return without the Psi weight,

        Q*(s_t, a_t) = (1 - lambda) max_a Q(s_{t+1}, a) + lambda Q*(s_{t+1}, a_{t+1}),

    with the same chain ends (``lambda = 0``: one-step Q-learning, ``1``: the
    Monte-Carlo outcome of the sampled play).

    Args:
        q: float32 ``[T, 3]``: the Q-vector the snake computed at each turn.
        action: int ``[T]``: the relative action taken.
        psi: float32 ``[T]``: `transition_weights` of each step.
        acting: bool ``[T]``: the snake acted at that turn.
        died, won: bool ``[T]``: the step eliminated the snake / left it the last one alive.
        chain_end: bool ``[T]``: the step was the chain's last (died, won, or the game ended).
        recursion: ``"eq7"`` (default), ``"unbiased"`` or ``"peng"`` (Python str, static).
        trace_lambda: lambda of ``"peng"``, in [0, 1] (Python float, static).

    Raises:
        ValueError: an unknown ``recursion`` or a ``trace_lambda`` outside [0, 1].

    Returns:
        ``(taken, vector, distance, complete)``: float32 ``[T]``, Q*(s_t,
        a_t); float32 ``[T, 3]``, the refined vectors; int32 ``[T]``, steps
        from ``t`` to its chain's last step; bool ``[T]``, the chain ended
        within the record. Turns where the snake did not act hold 0, a huge
        distance and False.
    """
    if recursion not in RECURSIONS:
        raise ValueError(f"recursion must be one of {RECURSIONS}; got {recursion!r}")
    checks.probability("trace_lambda", trace_lambda)
    far = jnp.int32(2**30)
    lam = jnp.float32(trace_lambda)

    def back(carry, x):
        # back_next: eq7/unbiased, max Q*(s_{t+1}) - max Q(s_{t+1}); peng, the backed-up value of s_{t+1}
        back_next, dist_next, complete_next = carry
        q_t, a_t, psi_t, acting_t, died_t, won_t, end_t = x
        onehot = jnp.arange(q_t.shape[-1]) == a_t
        q_taken = jnp.sum(jnp.where(onehot, q_t, 0.0))
        if recursion == "peng":  # a chain unfinished at the record's end keeps its own predictions, as eq. 7 does
            star = jnp.where(end_t | ~complete_next, q_taken, back_next)
        else:
            weight = psi_t if recursion == "eq7" else 1.0
            star = jnp.clip(weight * jnp.where(end_t, 0.0, back_next) + q_taken, 0.0, 1.0)
        star = jnp.where(died_t, 0.0, jnp.where(won_t, 1.0, star))
        refined = jnp.where(onehot, star, q_t)
        if recursion == "peng":
            back_t = (1.0 - lam) * jnp.max(q_t) + lam * star
        else:
            back_t = jnp.max(refined) - jnp.max(q_t)
        delta = jnp.where(acting_t, back_t, 0.0)  # a dead seat's turns: the death step before them starts afresh
        dist = jnp.where(acting_t, jnp.where(end_t, 0, jnp.minimum(dist_next, far - 1) + 1), far)
        complete = acting_t & (end_t | complete_next)
        out = (jnp.where(acting_t, star, 0.0), jnp.where(acting_t, refined, 0.0), dist, complete)
        return (delta, dist, complete), out

    xs = (q.astype(jnp.float32), action.astype(jnp.int32), psi.astype(jnp.float32), acting, died, won, chain_end)
    init = (jnp.float32(0.0), far, jnp.bool_(False))
    _, (taken, vector, dist, complete) = jax.lax.scan(back, init, xs, reverse=True)
    return taken, vector, dist, complete


def sample_distances(num_turns: int, sampler: str = "exponential", gap_growth: float = 2.0) -> np.ndarray:
    """int32 ``[K]``: distances from a chain's last step of the positions used for training.

    ``"exponential"`` (Siddiqui et al., section 3): 0, then gaps 1, g, g^2, ...
    (rounded up): 0, 1, 3, 7, 15, ... for ``g = 2``; ``"all"``: 0 .. T-1.
    Distances beyond a chain's length are dropped for that chain.
    """
    if sampler == "all":
        return np.arange(num_turns, dtype=np.int32)
    out, d, gap = [0], 0, 1.0
    while True:
        d += int(math.ceil(gap - 1e-9))
        if d >= num_turns:
            break
        out.append(d)
        gap *= gap_growth
    return np.asarray(out, np.int32)


def reflect_example(view: jax.Array, target: jax.Array, mask: jax.Array, flip: jax.Array):
    """The mirrored training example where ``flip``: view mirrored left-right, turn left and turn right swapped.

    Mirroring the board swaps the snake's left and right and keeps
    straight (`observe.reflect`, `observe.reflect_relative`), so Q(mirrored
    view) = Q(view) reversed.

    Args:
        view: float32 ``[V, V, 3]`` (rotated view).
        target, mask: float32 ``[3]`` (relative actions).
        flip: bool ``[]``.
    """
    return (
        jnp.where(flip, observe.reflect(view), view),
        jnp.where(flip, target[::-1], target),
        jnp.where(flip, mask[::-1], mask),
    )


def _tail_at_least(pmf: np.ndarray) -> np.ndarray:
    """``tail[k] = P(X >= k)`` for k = 0..n+1 from a pmf over 0..n (summed from the top, exactly in float64)."""
    return np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])


def pit_score_pmf(team_games: int, solo_games: int, num_snakes: int = 4, team_rate: float = 0.5,
                  solo_rank_pmf=None) -> np.ndarray:
    """float64 ``[(S - 1) (team_games + solo_games) + 1]``: pmf of the pit score of a candidate.

    The pit score (`QSnakeLearner._pit`) is ``W = (S - 1) * team wins + sum
    of solo ranks``: a team (2v2) game won counts ``S - 1``, a solo (1v3)
    game counts the candidate's rank ``R`` in ``0..S-1``, the number of
    the ``S - 1`` other snakes it outlasted, ties broken uniformly at random
    (`solo_ranks`). Team wins are Binomial(``team_games``, ``team_rate``)
    and the ranks independent draws from ``solo_rank_pmf``; the pmf is the
    convolution (exact in float64).

    With the defaults it is the null distribution: a network equal to the
    best wins a decided team game with probability 1/2 and takes each solo
    rank with probability 1/S. The pit draws each game's seating uniformly
    (``random_seats`` of `QSnakeLearner._versus`) and, the networks being
    equal, which seats carry the candidate's label changes no move: in a
    team game the candidate's half is then as likely to be either half, and
    in a solo game its rank among the S snakes is uniform once ties are
    broken at random. No symmetry of the spawn rules is assumed. Neither the early stop of a solo game (at the candidate's
    elimination) nor the turn limit changes that: both are decided by the
    death order up to the candidate's own death, which the full game shares.

    Args:
        team_games, solo_games: games of each format (ints >= 0).
        num_snakes: S, snakes per game (>= 2).
        team_rate: the candidate's team win rate, in [0, 1].
        solo_rank_pmf: float ``[S]``, the candidate's solo rank distribution
            (None: uniform, the null); `rank_pmf_with_edge` makes one.

    Raises:
        ValueError: a negative game count, a rate outside [0, 1], or a rank
            pmf that is not S non-negative numbers summing to 1.
    """
    checks.non_negative_int("team_games", team_games)
    checks.non_negative_int("solo_games", solo_games)
    checks.integer("num_snakes", num_snakes, lo=2)
    checks.probability("team_rate", team_rate)
    ranks = np.full(num_snakes, 1.0 / num_snakes) if solo_rank_pmf is None else np.asarray(solo_rank_pmf, np.float64)
    if ranks.shape != (num_snakes,) or np.any(ranks < 0) or not np.isclose(ranks.sum(), 1.0):
        raise ValueError(f"solo_rank_pmf must be {num_snakes} non-negative probabilities summing to 1; got {solo_rank_pmf!r}")
    step = num_snakes - 1
    team = np.zeros(step * team_games + 1)
    team[::step] = binom.pmf(np.arange(team_games + 1), team_games, float(team_rate))
    solo = np.ones(1)
    for _ in range(solo_games):
        solo = np.convolve(solo, ranks)
    return np.convolve(team, solo)


def rank_pmf_with_edge(num_snakes: int, edge: float) -> np.ndarray:
    """float64 ``[S]``: a solo rank pmf whose candidate outlasts each other snake with probability 1/2 + ``edge``.

    The uniform pmf tilted linearly, ``p_r = (1 + 12 edge (r - (S-1)/2) /
    (S + 1)) / S``, so the mean rank is ``(S - 1)(1/2 + edge)``: a model of a
    better candidate for the pit's power (`pit_pass_probability`), not a
    measurement.

    Raises:
        ValueError: an edge so large that some rank's probability is negative.
    """
    r = np.arange(num_snakes, dtype=np.float64)
    pmf = (1.0 + 12.0 * edge * (r - (num_snakes - 1) / 2) / (num_snakes + 1)) / num_snakes
    if np.any(pmf < 0):
        raise ValueError(f"edge={edge} is too large for {num_snakes} snakes (a rank probability would be negative)")
    return pmf


def pit_pass_probability(team_games: int, solo_games: int, threshold: int, team_rate: float,
                         solo_rank_pmf) -> float:
    """The pit's power: P(score >= ``threshold``) for a candidate with the given team rate and solo rank pmf.

    The score's pmf is `pit_score_pmf` (S is ``len(solo_rank_pmf)``). With
    ``team_rate`` = 1/2 and uniform ranks this is the false-promotion rate
    that `pit_threshold` keeps below ``pit_alpha``; above it, the chance that
    a genuinely better candidate is promoted in one pit.

    Args:
        team_games, solo_games: pit games of each format (ints >= 0), every
            team game decided.
        threshold: score needed (`pit_threshold`).
        team_rate: the candidate's team win rate, in [0, 1].
        solo_rank_pmf: float ``[S]``, its solo rank distribution (`rank_pmf_with_edge`).

    Returns:
        float in [0, 1].

    Raises:
        ValueError: as `pit_score_pmf`.
    """
    ranks = np.asarray(solo_rank_pmf, np.float64)
    tail = _tail_at_least(pit_score_pmf(team_games, solo_games, len(ranks), team_rate, ranks))
    return float(np.clip(tail[min(max(int(threshold), 0), len(tail) - 1)], 0.0, 1.0))


def pit_threshold(team_games: int, solo_games: int, num_snakes: int = 4, alpha: float = 0.01) -> int:
    """The smallest pit score that promotes the candidate when every team game is decided.

    The smallest ``k`` with P(W >= k) < ``alpha`` where W is the score of a
    network equal to the best (`pit_score_pmf` with its defaults). Such a
    network passes with probability below ``alpha`` (a worse one, whose win
    rate and ranks are lower, less often), as Siddiqui et al., section 3, asks: "a
    worse network ... has a negligible chance of surpassing it". The score
    is in the units of `pit_score_pmf`: ``S - 1`` per team game won, the
    rank per solo game.

    Raises:
        ValueError: if even the highest score is not rare enough for a network
            equal to the best (too few pit games for ``alpha``), naming the counts.
    """
    k, tail = _smallest_rare_score(team_games, solo_games, num_snakes, alpha)
    if k >= len(tail) - 1:
        raise ValueError(
            f"pit_team_games={team_games}, pit_solo_games={solo_games}: a network equal to the best reaches the highest "
            f"pit score with probability {tail[-2]:.3g} >= pit_alpha={alpha}; play more pit games"
        )
    return k


def _smallest_rare_score(team_games: int, solo_games: int, num_snakes: int, alpha: float) -> tuple[int, np.ndarray]:
    """``(k, tail)``: the smallest score ``k`` with P(W >= k) < ``alpha`` for an equal network (``len(tail) - 1``,
    the highest score plus one, if none), and the tail P(W >= j) it was read from."""
    tail = _tail_at_least(pit_score_pmf(team_games, solo_games, num_snakes))
    return int(np.flatnonzero(tail < alpha)[0]), tail


def pit_threshold_table(team_games: int, solo_games: int, num_snakes: int = 4, alpha: float = 0.01) -> np.ndarray:
    """int32 ``[team_games + 1]``: the pit's threshold for every count of *decided* team games.

    Entry ``n`` is the smallest score a network equal to the best reaches
    with probability below ``alpha`` in ``n`` team games and all
    ``solo_games`` solo games (`pit_score_pmf`), or the highest score plus
    one (unreachable) where even that is not rare enough. A team game that
    nobody wins (the last snakes of both sides fall together, or both sides
    survive ``pit_max_turns``) says nothing about which network is better,
    and an equal network wins half of the *decided* ones, so the pit
    compares the score with the threshold of the team games decided (a
    conditional test: given the count, an equal network passes with
    probability below ``alpha``, so it does overall). Counting every game,
    as if draws were losses, made the pit unpassable once games got long
    (module docstring, "Undecided pit games"). Every solo game has a rank
    (`solo_ranks`), so none is left out.

    Args:
        team_games, solo_games: pit games of each format (ints >= 0).
        num_snakes: snakes per game.
        alpha: the pit's ``pit_alpha``, in (0, 1).

    Returns:
        int32 ``[team_games + 1]``, read-only, cached per arguments.
    """
    return _threshold_table(int(team_games), int(solo_games), int(num_snakes), float(alpha))


@functools.lru_cache(maxsize=16)
def _threshold_table(team_games: int, solo_games: int, num_snakes: int, alpha: float) -> np.ndarray:
    """`pit_threshold_table`, computed once per config; read-only."""
    table = np.array([_smallest_rare_score(n, solo_games, num_snakes, alpha)[0] for n in range(team_games + 1)], np.int32)
    table.setflags(write=False)
    return table


# ----------------------------------------------------------------------------- records
class SelfPlayRecord(NamedTuple):
    """The self-play turns of one generation; turn-major ``[T, B, ...]`` (``T = num_turns``, ``B = num_games`` slots).

    Each slot plays game after game (a finished game restarts at once), so
    one seat's turns hold several chains, separated by ``chain_end``.

    Attributes:
        boards: `rules.Board` with leaves ``[T, B, ...]``: the board before each turn
            (the rotated views are `QSnakeLearner.views` of it).
        action: int8 ``[T, B, S]``: the relative action taken (0 left, 1 straight, 2 right).
        q: float32 ``[T, B, S, 3]``: the Q-vector computed.
        acting: bool ``[T, B, S]``: the snake was alive and its game on before the turn.
        psi: float32 ``[T, B, S]``: `transition_weights`.
        died, won: bool ``[T, B, S]``: the turn eliminated the snake / left it the winner.
        chain_end: bool ``[T, B, S]``: the turn was the snake's last in its game.
        totals: `game_metrics` summed over the games that ended in the record.
    """

    boards: Board
    action: jax.Array
    q: jax.Array
    acting: jax.Array
    psi: jax.Array
    died: jax.Array
    won: jax.Array
    chain_end: jax.Array
    totals: dict


class TrainingData(NamedTuple):
    """What the training steps of one generation read.

    Attributes:
        record: the `SelfPlayRecord`.
        vector: float32 ``[T, B, S, 3]``: the refined Q-vectors (`chain_targets`).
        t, b, s: int32 ``[T * B * S]``: the sampled positions first (turn, slot, seat).
        count: int32 ``[]``: how many positions were sampled (``search_positions`` with search targets).
        health_loss: int32 ``[]``: the self-play's health loss per turn (for `rules.certain_deaths`).
    """

    record: SelfPlayRecord
    vector: jax.Array
    t: jax.Array
    b: jax.Array
    s: jax.Array
    count: jax.Array
    health_loss: jax.Array


@struct.dataclass
class LearnerState:
    """Everything the generation loop needs to go on: the checkpoint's content.

    Attributes:
        params, batch_stats: the candidate network (trained every generation).
        opt_state: the optimiser's state of the candidate.
        best_params, best_batch_stats: the best network (plays self-play).
        reference_params, reference_batch_stats: the fixed earlier generation evaluated against.
        generation: int32 ``[]``: generations completed.
        rng: uint32 ``[2]``: the key data of the loop's PRNG key (``jax.random.key_data``).
        pit_rng: uint32 ``[2]``: key data of the last generation's pit
            (drawn with ``rng``'s advance, so the pit hook draws what an
            in-generation pit would).
        ema_params, ema_batch_stats: the moving average of the candidate
            (``ema_decay > 0``: what the pit plays and promotes); equal to
            the candidate when ``ema_decay = 0``.
    """

    params: Any
    batch_stats: Any
    opt_state: Any
    best_params: Any
    best_batch_stats: Any
    reference_params: Any
    reference_batch_stats: Any
    generation: jax.Array
    rng: jax.Array
    ema_params: Any
    ema_batch_stats: Any
    pit_rng: jax.Array

    @property
    def candidate(self) -> dict:
        return {"params": self.params, "batch_stats": self.batch_stats}

    @property
    def averaged(self) -> dict:
        """``{"params", "batch_stats"}`` of the candidate's moving average (``ema_decay``)."""
        return {"params": self.ema_params, "batch_stats": self.ema_batch_stats}

    @property
    def best(self) -> dict:
        return {"params": self.best_params, "batch_stats": self.best_batch_stats}

    @property
    def reference(self) -> dict:
        return {"params": self.reference_params, "batch_stats": self.reference_batch_stats}


TRAINED = ("params", "batch_stats", "opt_state", "ema_params", "ema_batch_stats")
"""The `LearnerState` fields a training step replaces (what `QSnakeLearner.train_step_donated` consumes)."""


# ----------------------------------------------------------------------------- statistics
def game_metrics(final: Board, seats: jax.Array) -> dict:
    """Sums over games of the report's per-game figures (4-10) for the snakes in ``seats``.

    Args:
        final: `rules.Board` ``[G]``: final boards.
        seats: bool ``[G, S]``: the snakes counted.

    Returns:
        float32 sums: ``deaths_<cause>`` for each of `DEATH_CAUSES`, ``deaths``
        (all causes), ``food`` (segments grown: length - 3), ``heads_hunted``
        (head-to-head eliminations of other snakes that the counted snake
        survived), ``collisions`` (deaths by running into something deadly:
        a wall, its own body or another's; head-to-head losses are counted
        apart), ``snakes`` and ``game_turns`` (sum of the lengths of the games with a counted snake).
    """
    cause = final.eliminated_cause
    turn_out = final.eliminated_on_turn
    alive = cause == rules.NOT_ELIMINATED
    out = {}
    for name, code in DEATH_CAUSES.items():
        out[f"deaths_{name}"] = jnp.sum((cause == code) & seats)
    out["deaths"] = jnp.sum(~alive & seats)
    out["collisions"] = out["deaths_wall"] + out["deaths_self"] + out["deaths_body"]
    out["food"] = jnp.sum(jnp.where(seats, final.length - rules.SNAKE_START_SIZE, 0))
    by = jnp.clip(final.eliminated_by, 0, final.num_snakes - 1)
    hunter_alive = jnp.take_along_axis(alive, by, axis=1)
    hunter_out = jnp.take_along_axis(turn_out, by, axis=1)
    hunted = (cause == rules.HEAD_COLLISION) & (final.eliminated_by >= 0) & (hunter_alive | (hunter_out > turn_out))
    hunter_counted = jnp.take_along_axis(seats, by, axis=1)
    out["heads_hunted"] = jnp.sum(hunted & hunter_counted)
    out["snakes"] = jnp.sum(seats)
    out["game_turns"] = jnp.sum(jnp.where(jnp.any(seats, axis=1), final.turn, 0))
    return {k: v.astype(jnp.float32) for k, v in out.items()}


def survival(final: Board) -> jax.Array:
    """int32 ``[G, S]``: the turn each snake was eliminated on, ``turn + 1`` for snakes alive at the end."""
    return jnp.where(final.alive, final.turn[:, None] + 1, final.eliminated_on_turn)


def sidesurvival(final: Board, mask_a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """int32 ``([G], [G])``: the longest `survival` on side A's seats (``mask_a`` bool ``[G, S]``) and on the others'."""
    surv = survival(final)
    return jnp.max(jnp.where(mask_a, surv, -1), axis=1), jnp.max(jnp.where(mask_a, -1, surv), axis=1)


def decided(final: Board, mask_a: jax.Array) -> jax.Array:
    """bool ``[G]``: one side outlasted the other (`QSnakeLearner.versus`); False for a draw or both alive at the limit."""
    best_a, best_b = sidesurvival(final, mask_a)
    return best_a != best_b


def solo_ranks(final: Board, mask_a: jax.Array, key: jax.Array) -> jax.Array:
    """int32 ``[G]``: the rank of side A's one snake (``mask_a`` one seat per game) among the S snakes, ties broken at random.

    The number of other snakes it outlasted (`survival`: eliminated on an
    earlier turn) plus a uniform draw from ``0..t``, ``t`` the others tied
    with it (eliminated on its turn, or alive with it at the end). So 0:
    out first, alone; ``S - 1``: the winner. Pit scoring, `pit_score_pmf`.
    """
    surv = survival(final)
    mine = jnp.max(jnp.where(mask_a, surv, -1), axis=1, keepdims=True)
    others = ~mask_a
    outlasted = jnp.sum(others & (surv < mine), axis=1)
    ties = jnp.sum(others & (surv == mine), axis=1)
    return (outlasted + jax.random.randint(key, outlasted.shape, 0, ties + 1)).astype(jnp.int32)


def _seating(num_games: int, num_snakes: int, seats_a: int) -> tuple[np.ndarray, np.ndarray]:
    """Static seat lists ``([G, seats_a], [G, S - seats_a])`` int32: side A's seats rotate over the games."""
    g = np.arange(num_games)[:, None]
    order = (g + np.arange(num_snakes)[None, :]) % num_snakes
    return order[:, :seats_a].astype(np.int32), order[:, seats_a:].astype(np.int32)


# ----------------------------------------------------------------------------- memory
def memory_estimate(config: QSnakeConfig) -> dict:
    """Bytes of the largest arrays of a generation, per setting that scales them (an estimate, within ~2x).

    Returns:
        ``{"num_games": ..., "batch_size": ..., "pit_games": ...}``: the self-play
        record plus its network activations, the training step's activations
        (kept for the gradient), the pit's activations.
    """
    S, C = config.num_snakes, config.board_size**2
    v = config.view_shape
    cells = v[0] * v[1]
    widest = max(max(config.features), 3)
    board = S * C * np.dtype(np.int8 if C + 2 <= 127 else np.int16).itemsize + 2 * C + S * 24 + 4
    per_turn = board + S * (1 + 12 + 1 + 4 + 1 + 1)
    record = config.num_turns * config.num_games * per_turn * 2  # the record, and the refined targets beside it
    # a forward pass keeps a few maps of the widest layer alive, plus the views of every snake
    infer = lambda n: n * cells * (3 * widest + 3 * 2) * 4  # noqa: E731
    train = config.batch_size * cells * (3 + 4 * sum(config.features)) * 4 * 2  # activations and their cotangents
    pit = max(config.pit_team_games, config.pit_solo_games, config.eval_games)
    return {
        "num_games": int(record + infer(config.num_games * S)),
        "batch_size": int(train),
        "pit_games": int(infer(pit * S)),
    }


def check_memory(config: QSnakeConfig, fraction: float = 0.8) -> None:
    """Raises ``ValueError`` naming the setting when a generation would not fit in ``fraction`` of memory.

    Checked at the Python boundary, before anything is compiled or written.
    """
    need = memory_estimate(config)
    pit = max(config.pit_team_games, config.pit_solo_games, config.eval_games)
    checks.check_memory({"num_games": (config.num_games, need["num_games"]),
                         "batch_size": (config.batch_size, need["batch_size"]),
                         "pit_games": (pit, need["pit_games"])},
                        what="a generation", fraction=fraction, hint={"num_games": "num_turns"})


def _reraise_oom(err: Exception, config: QSnakeConfig):
    if "RESOURCE_EXHAUSTED" in str(err) or "Out of memory" in str(err):
        raise MemoryError(
            f"out of memory with num_games={config.num_games}, batch_size={config.batch_size}, "
            f"num_turns={config.num_turns}: lower them ({str(err).splitlines()[0][:200]})"
        ) from err
    raise err


# ----------------------------------------------------------------------------- the learner
class QSnakeLearner:
    """AlphaSnake Zero for one `QSnakeConfig`: a `jaxgames.learners.loop` learner (module docstring).

    ``update`` is one generation without its pit (host code: ``collect``,
    then ``train_steps`` training steps); the pit is the evaluation
    hook `jaxgames.evaluation.q_snake.pit_hook`, which calls `promote`.
    Every piece is jitted once per config (equal configs share compiled
    functions; `TRACES` counts the traces) and takes the game's numeric
    settings as traced `BattlesnakeParams`.

    Jitted: ``self_play(variables, params, key) -> SelfPlayRecord``;
    ``collect(state) -> (TrainingData, keys [train_steps], metrics)``;
    ``train_step(state, data, key) -> (state, loss)``;
    ``train_step_donated(trained, rest, data, key) -> (trained, loss)``, the
    same step on the `TRAINED` fields ``trained`` (a dict) of the state
    ``rest`` (those fields None), which it donates: XLA writes the new
    networks and optimiser state over them and deletes the arrays passed in;
    ``versus(vars_a, vars_b, key, num_games, seats_a, params, random_seats)``
    (pit and evaluation games).

    Attributes:
        config: the settings.
        env: the self-play `Battlesnake` (rotated egocentric observations).
        pit_env: the same game with ``pit_max_turns``.
        net: the `QSnakeNet`.
        tx: the Optax optimiser.
        threshold: `pit_threshold` of the config's pit when every team game
            is decided; ``threshold_table``: `pit_threshold_table`, the one used.
        distances: `sample_distances` of the config; ``sample_table`` bool
            ``[num_turns + 1]`` marks them.
        mesh: None, or the `jax.sharding.Mesh` (`jaxgames.parallel.make_mesh`)
            the games and training batches are split over.
        initial: the ``init_weights`` network ``{"params", "batch_stats"}``, or None.
        searcher: the `SearchAgent` of the search targets (``search_depth >= 1``), or None.

    Data parallelism (``mesh``): self-play slots, pit games and training
    minibatches are split over the mesh's batch sharding; the networks stay
    replicated and XLA all-reduces gradients and BatchNorm statistics. The
    results agree with one device up to float32 rounding, not bitwise
    (`tests/test_parallel.py`).

    Donation (``donate``, the default): ``update`` copies the `TRAINED`
    fields of the state it is given once and runs its steps through
    ``train_step_donated`` on those copies, so the state passed in stays
    valid and the results are the same bits either way.

    Raises:
        TypeError: ``config`` is not a `QSnakeConfig`.
        ValueError: a generation would not fit in memory (`check_memory`),
            before anything is compiled or written.
    """

    name = "q_snake"

    def __init__(self, config: QSnakeConfig, *, mesh=None, donate: bool = True):
        if not isinstance(config, QSnakeConfig):
            raise TypeError(f"config must be a QSnakeConfig; got {type(config).__name__}")
        check_memory(config)
        self.config = config
        self.mesh = mesh
        self.donate = bool(donate)  # picks a compiled function, not a trace: not part of the equality below
        self._batch_sharding = None
        if mesh is not None:
            self._batch_sharding = parallel.batch_sharding(mesh)
            self._num_shards = parallel.num_shards(mesh)
        c = config
        # the views are computed here (`views`), not by the env (its observation uses the default multipliers)
        self.env = Battlesnake(board_size=c.board_size, num_snakes=c.num_snakes, max_turns=c.max_turns, observation="none")
        self.pit_env = Battlesnake(board_size=c.board_size, num_snakes=c.num_snakes, max_turns=c.pit_max_turns, observation="none")
        self.net = QSnakeNet(features=c.features)
        opt = {"adam": optax.adam, "sgd": optax.sgd}[c.optimizer]
        self.tx = opt(c.learning_rate)
        self.threshold = pit_threshold(c.pit_team_games, c.pit_solo_games, c.num_snakes, c.pit_alpha)
        self.threshold_table = jnp.asarray(pit_threshold_table(c.pit_team_games, c.pit_solo_games, c.num_snakes, c.pit_alpha))
        self.distances = sample_distances(c.num_turns, c.sampler, c.gap_growth)
        self.sample_table = np.zeros(c.num_turns + 1, bool)
        self.sample_table[self.distances] = True
        # heuristic opponents (module docstring): slot g < opponent_games seats the network at g % S only
        slot = np.arange(c.num_games)[:, None]
        self.heuristic_seats = (slot < c.opponent_games) & (np.arange(c.num_snakes)[None, :] != slot % c.num_snakes)
        self.heuristic = HeuristicAgent() if c.opponent_games else None
        self.initial = self._initial_variables()
        self.searcher = None
        if c.search_depth:  # the learned leaf's network is an argument (`with_arrays`): these variables only give shapes
            learned = None
            if c.search_learned_weight > 0:
                learned = QSnakeAgent(self.initial or init_variables(self.net, jax.random.key(0), c.view_shape),
                                      features=c.features, board_size=c.board_size, head_multiplier=c.head_multiplier,
                                      body_multiplier=c.body_multiplier)
            self.searcher = SearchAgent(depth=c.search_depth, opponents=c.search_opponents, alphabeta=False,
                                        learned_weight=c.search_learned_weight, learned=learned)  # vmapped: maximin
            self.searcher.check(self.env)
        jitted = _jitted(config)
        self.self_play = functools.partial(jitted["self_play"], self)
        self.versus = functools.partial(jitted["versus"], self)
        self.collect = functools.partial(jitted["collect"], self)
        self.train_step = functools.partial(jitted["train_step"], self)
        self.train_step_donated = functools.partial(jitted["train_step_donated"], self)

    # learners of one config (and mesh) are interchangeable (jit caches on them as static arguments)
    def __hash__(self):
        return hash((self.config, self.mesh))

    def __eq__(self, other):
        return isinstance(other, QSnakeLearner) and other.config == self.config and other.mesh == self.mesh

    def _constrain(self, tree):
        """``tree`` (leading batch axis) split over the mesh; unchanged without a mesh or when not divisible."""
        if self._batch_sharding is None or jax.tree.leaves(tree)[0].shape[0] % self._num_shards:
            return tree
        return jax.lax.with_sharding_constraint(tree, self._batch_sharding)

    # ------------------------------------------------------------ params and state
    def params_for(self, health_loss) -> BattlesnakeParams:
        """The game's `BattlesnakeParams` with ``health_loss`` (may be traced) per turn."""
        p = self.env.default_params
        return p.replace(rules=p.rules.replace(health_loss=jnp.asarray(health_loss, jnp.int32)))

    def health_loss(self, generation) -> jax.Array:
        """int32: the curriculum's health loss in ``generation`` (``walk_health_loss`` for the first ``walk_generations``)."""
        return jnp.where(jnp.asarray(generation) < self.config.walk_generations, self.config.walk_health_loss, 1).astype(jnp.int32)

    def _initial_variables(self) -> dict | None:
        """The network of ``init_weights`` (None for ``""``), checked against the config's shapes."""
        c = self.config
        if not c.init_weights:
            return None
        variables, meta = load_weights(None if c.init_weights == "shipped" else c.init_weights)
        theirs = {"features": tuple(meta["features"]), "board_size": int(meta["board_size"]),
                  "head_multiplier": float(meta.get("head_multiplier", 0.1)),
                  "body_multiplier": float(meta.get("body_multiplier", 0.1))}
        ours = {"features": tuple(c.features), "board_size": c.board_size, "head_multiplier": float(c.head_multiplier),
                "body_multiplier": float(c.body_multiplier)}
        if theirs != ours:
            raise ValueError(f"init_weights={c.init_weights!r} holds a network of {theirs}; this config needs {ours}")
        return {"params": variables["params"], "batch_stats": variables["batch_stats"]}

    def init(self, key: jax.Array) -> LearnerState:
        """A fresh `LearnerState`: one network (random, or ``init_weights``) as candidate, best and reference; generation 0."""
        key, net_key = jax.random.split(key)
        variables = self.initial or init_variables(self.net, net_key, self.config.view_shape)
        return LearnerState(
            params=variables["params"],
            batch_stats=variables["batch_stats"],
            opt_state=self.tx.init(variables["params"]),
            best_params=variables["params"],
            best_batch_stats=variables["batch_stats"],
            reference_params=variables["params"],
            reference_batch_stats=variables["batch_stats"],
            generation=jnp.int32(0),
            rng=jax.random.key_data(key),
            ema_params=variables["params"],
            ema_batch_stats=variables["batch_stats"],
            pit_rng=jax.random.key_data(key),
        )

    def views(self, board: Board) -> jax.Array:
        """float32 ``[S, V, V, 3]``: every snake's `jaxgames.networks.q_snake.rotated_views` with the config's multipliers."""
        return rotated_views(board, self.config.head_multiplier, self.config.body_multiplier)

    def q_values(self, variables: dict, views: jax.Array) -> jax.Array:
        """float32 ``[..., 3]``: the network's Q-values in inference mode."""
        return self.net.apply(variables, views, train=False)

    # ------------------------------------------------------------ pieces (traced)
    def _self_play(self, variables: dict, params: BattlesnakeParams, key: jax.Array) -> SelfPlayRecord:
        """``num_turns`` turns of ``num_games`` self-play slots in one ``lax.scan`` (module docstring, step 1)."""
        TRACES["self_play"] += 1
        c, env = self.config, self.env
        B, G = c.num_games, c.opponent_games
        heuristic_seats = jnp.asarray(self.heuristic_seats)  # [B, S]
        opponent_slot = jnp.arange(B) < G
        key, init_key = jax.random.split(key)
        states = self._constrain(jax.vmap(env.init, in_axes=(0, None))(jax.random.split(init_key, B), params))
        zero_totals = jax.tree.map(jnp.zeros_like, game_metrics(states.board, jnp.zeros(states.board.alive.shape, bool)))

        def turn(carry, k):
            states, totals = carry
            act_key, step_key, reset_key = jax.random.split(k, 3)
            board = states.board
            acting = board.alive & ~(states.terminated | states.truncated)[:, None]
            q = self.q_values(variables, jax.vmap(self.views)(board))  # [B, S, 3]
            logpi = log_power_softmax(q, c.power)
            rel = jax.random.categorical(act_key, logpi).astype(jnp.int32)  # [B, S]
            moves = observe.relative_to_absolute(rel, jax.vmap(rules.facing)(board))
            if G:  # the heuristic snakes' moves replace the network's on their seats; only the network's seats act
                moves = jnp.where(heuristic_seats, self._heuristic_moves(states, jax.random.fold_in(k, 1)), moves)
                acting = acting & ~heuristic_seats
            nxt = jax.vmap(env.step, in_axes=(0, 0, 0, None))(states, moves, jax.random.split(step_key, B), params)
            died = acting & ~nxt.board.alive
            won = acting & nxt.board.alive & nxt.terminated[:, None]
            done = nxt.terminated | nxt.truncated
            if G:  # a game against heuristic snakes ends with the network's snake: nothing is left to learn from it
                done = done | (opponent_slot & ~jnp.any(nxt.board.alive & ~heuristic_seats, axis=1))
            chain_end = acting & (died | done[:, None])
            logp_taken = jnp.take_along_axis(logpi, rel[..., None], axis=-1)[..., 0]
            psi = jax.vmap(transition_weights)(logp_taken, acting, died)
            ended = game_metrics(nxt.board, done[:, None] & ~heuristic_seats)
            ended["games"] = jnp.sum(done).astype(jnp.float32)
            ended["opponent_games"] = jnp.sum(done & opponent_slot).astype(jnp.float32)
            ended["opponent_wins"] = jnp.sum(won & opponent_slot[:, None]).astype(jnp.float32)
            ended["truncated"] = jnp.sum(nxt.truncated & ~nxt.terminated).astype(jnp.float32)
            totals = jax.tree.map(lambda a, b: a + b, totals, ended)
            fresh = jax.vmap(env.init, in_axes=(0, None))(jax.random.split(reset_key, B), params)
            nxt = jax.tree.map(lambda f, n: jnp.where(done.reshape((-1,) + (1,) * (n.ndim - 1)), f, n), fresh, nxt)
            nxt = self._constrain(nxt)
            out = (board, rel.astype(jnp.int8), q, acting, psi, died, won, chain_end)
            return (nxt, totals), out

        zero_totals = {**zero_totals, **{k: jnp.float32(0) for k in ("games", "truncated", "opponent_games", "opponent_wins")}}
        (_, totals), out = jax.lax.scan(turn, (states, zero_totals), jax.random.split(key, c.num_turns))
        return SelfPlayRecord(*out, totals=totals)

    def _heuristic_moves(self, states: BattlesnakeState, key: jax.Array) -> jax.Array:
        """int32 ``[B, S]``: the heuristic snake's move for every seat of the first ``opponent_games`` slots (0 elsewhere)."""
        G, S = self.config.opponent_games, self.config.num_snakes
        first = jax.tree.map(lambda x: x[:G], states)
        keys = jax.random.split(key, G * S).reshape((G, S) + key.shape)
        seat = lambda st, p, k: self.heuristic.policy(None, st, k, p)  # noqa: E731
        per_slot = jax.vmap(lambda st, ks: jax.vmap(functools.partial(seat, st))(jnp.arange(S), ks))
        moves = per_slot(first, keys).astype(jnp.int32)
        return jnp.zeros((self.config.num_games, S), jnp.int32).at[:G].set(moves)

    def _targets(self, rec: SelfPlayRecord, q: jax.Array | None = None):
        """`chain_targets` of every seat: ``(taken, vector, distance, complete)``, ``[T, B, S, ...]``.

        ``q`` (float32 ``[T, B, S, 3]``): the Q-values the recursion refines; the recorded ones if None.
        """
        fn = functools.partial(chain_targets, recursion=self.config.recursion, trace_lambda=float(self.config.trace_lambda))
        for _ in range(2):  # over seats, then slots (axis 1 of the [T, B, S] arrays)
            fn = jax.vmap(fn, in_axes=1, out_axes=1)
        return fn(rec.q if q is None else q, rec.action, rec.psi, rec.acting, rec.died, rec.won, rec.chain_end)

    def _record_q(self, variables: dict, boards: Board) -> jax.Array:
        """float32 ``[T, B, S, 3]``: ``variables``' Q-values on every recorded board (one turn at a time)."""
        return jax.lax.map(lambda board: self.q_values(variables, jax.vmap(self.views)(board)), boards)

    def _collect(self, state: LearnerState):
        """Self-play with the best network under the curriculum, targets and sampled positions (steps 1-2).

        Returns:
            ``(data, train_keys [train_steps], metrics)``: `TrainingData`, one key
            per training step, the self-play metrics.
        """
        TRACES["collect"] += 1
        c = self.config
        key = jax.random.wrap_key_data(state.rng)
        _, play_key, train_key, _ = jax.random.split(key, 4)
        health = self.health_loss(state.generation)
        rec = self._self_play(state.best, self.params_for(health), play_key)
        q_boot = rec.q if c.bootstrap == "recorded" else self._record_q(state.candidate, rec.boards)
        taken, vector, dist, complete = self._targets(rec, q_boot)
        pick = jnp.asarray(self.sample_table)[jnp.minimum(dist, c.num_turns)]
        sampled = rec.acting & complete & pick  # [T, B, S]
        T, B, S = sampled.shape
        t, b, s = (x.reshape(-1) for x in jnp.meshgrid(jnp.arange(T), jnp.arange(B), jnp.arange(S), indexing="ij"))
        order = jnp.argsort(~sampled.reshape(-1), stable=True)  # sampled positions first
        count = jnp.sum(sampled).astype(jnp.int32)
        data = TrainingData(
            rec, vector, t[order].astype(jnp.int32), b[order].astype(jnp.int32), s[order].astype(jnp.int32), count, health
        )
        search_metrics = {}
        if c.search_depth:
            data, search_metrics = self._search_targets(state.best, data, jax.random.fold_in(play_key, 1))
        decisions = jnp.maximum(jnp.sum(rec.acting), 1)
        q_taken = jnp.take_along_axis(rec.q, rec.action[..., None].astype(jnp.int32), -1)[..., 0]
        t1 = min(1, c.num_turns - 1)
        metrics = dict(
            health_loss=health,
            decisions=jnp.sum(rec.acting),
            samples=count,
            complete_decisions=jnp.sum(rec.acting & complete),
            mean_q_taken=jnp.sum(jnp.where(rec.acting, q_taken, 0.0)) / decisions,
            mean_target_taken=jnp.sum(jnp.where(rec.acting & complete, taken, 0.0)) / jnp.maximum(jnp.sum(rec.acting & complete), 1),
            # 100 - the health loss applied on the first turn (no snake can eat on its first move)
            first_turn_health=jnp.sum(jnp.where(rec.acting[t1], rec.boards.health[t1], 0)) / jnp.maximum(jnp.sum(rec.acting[t1]), 1),
            **rec.totals,
            **search_metrics,
        )
        return data, jax.random.split(train_key, c.train_steps), metrics

    def _search_targets(self, variables: dict, data: TrainingData, key: jax.Array):
        """``data`` whose training positions are ``search_positions`` of the sampled ones, each with the search's targets.

        A position's target for each relative move is ``clip((v + 1) / 2, 0, 1)``
        of its value ``v`` (`SearchAgent.move_values` with ``variables`` as the
        learned leaf): 0 for a sure death, 1 for a win. Positions are drawn
        uniformly, with replacement, from the sampled ones.

        Returns:
            ``(data, metrics)``: ``search_target_mean`` (the targets' mean) and
            ``search_agreement`` (the share of positions whose recorded
            network's best move is the search's best).
        """
        P = self.config.search_positions
        pick_key, search_key = jax.random.split(key)
        j = jax.random.randint(pick_key, (P,), 0, jnp.maximum(data.count, 1))
        t, b, s = data.t[j], data.b[j], data.s[j]
        boards = jax.tree.map(lambda x: x[t, b], data.record.boards)
        agent = self.searcher
        if self.searcher.learned is not None:
            agent = agent.with_arrays({"learned": {"variables": variables}})
        values = agent.batched_move_values(self.env)(
            jax.vmap(self.env.state_from_board)(boards), jax.random.split(search_key, P), s)  # [P, 4]
        moves = jax.vmap(lambda board, seat: observe.relative_to_absolute(jnp.arange(3), rules.facing(board)[seat]))(boards, s)
        target = jnp.clip((jnp.take_along_axis(values, moves, axis=1) + 1.0) / 2.0, 0.0, 1.0)  # [P, 3]
        q = data.record.q[t, b, s]
        agree = jnp.argmax(target, axis=1) == jnp.argmax(q, axis=1)
        data = data._replace(vector=data.vector.at[t, b, s].set(target), t=data.t.at[:P].set(t),
                             b=data.b.at[:P].set(b), s=data.s.at[:P].set(s),
                             count=jnp.where(data.count > 0, P, 0).astype(jnp.int32))
        return data, {"search_target_mean": jnp.mean(target), "search_agreement": jnp.mean(agree)}

    def _example(self, data: TrainingData, i):
        """Training example ``i`` of the sampled positions: rotated view ``[V, V, 3]``, target ``[3]``, loss mask ``[3]``."""
        t, b, s = data.t[i], data.b[i], data.s[i]
        board = jax.tree.map(lambda x: x[t, b], data.record.boards)
        view = self.views(board)[s]
        target = data.vector[t, b, s]
        if self.config.targets == "vector" or self.config.search_depth:
            mask = jnp.ones((3,), jnp.float32)
        else:
            mask = (jnp.arange(3) == data.record.action[t, b, s]).astype(jnp.float32)
        if self.config.death_targets:
            certain = rules.certain_deaths(board, self.params_for(data.health_loss).rules)[s]  # [4] absolute moves
            dead = certain[observe.relative_to_absolute(jnp.arange(3), rules.facing(board)[s])]  # [3] relative
            target = jnp.where(dead, 0.0, target)
            mask = jnp.where(dead, 1.0, mask)
        return view, target, mask

    def batch_loss(self, params, batch_stats, views, target, mask):
        """``(q_loss, new batch_stats)`` of the network in training mode on views float32 ``[N, V, V, 3]``."""
        q, updates = self.net.apply(
            {"params": params, "batch_stats": batch_stats}, views, train=True, mutable=["batch_stats"]
        )
        return q_loss(q, target, mask, self.config.loss), updates["batch_stats"]

    def _train_step(self, state: LearnerState, data: TrainingData, key: jax.Array):
        """One Optax step of the candidate on ``batch_size`` positions drawn uniformly from the sampled ones (step 3).

        One jitted call per step, not a ``lax.scan`` of steps: XLA's CPU
        backend runs the convolutions' gradients far slower inside a loop.
        """
        TRACES["train_step"] += 1
        c = self.config
        pick_key, flip_key = jax.random.split(key)
        i = jax.random.randint(pick_key, (c.batch_size,), 0, jnp.maximum(data.count, 1))
        views, target, mask = jax.vmap(functools.partial(self._example, data))(i)
        if c.reflect:
            flip = jax.random.bernoulli(flip_key, 0.5, (c.batch_size,))
            views, target, mask = jax.vmap(reflect_example)(views, target, mask, flip)
        views, target, mask = self._constrain((views, target, mask))
        (loss, batch_stats), grads = jax.value_and_grad(self.batch_loss, has_aux=True)(
            state.params, state.batch_stats, views, target, mask
        )
        updates, opt_state = self.tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        if c.ema_decay:
            ema = optax.incremental_update((params, batch_stats), (state.ema_params, state.ema_batch_stats), 1.0 - c.ema_decay)
        else:
            ema = (params, batch_stats)
        return state.replace(params=params, batch_stats=batch_stats, opt_state=opt_state,
                             ema_params=ema[0], ema_batch_stats=ema[1]), loss

    def _train_step_donated(self, trained: dict, rest: LearnerState, data: TrainingData, key: jax.Array):
        """`_train_step` of ``rest`` with its `TRAINED` fields ``trained``; returns only those (jitted donating ``trained``)."""
        state, loss = self._train_step(rest.replace(**trained), data, key)
        return {name: getattr(state, name) for name in TRAINED}, loss

    def _versus(self, vars_a: dict, vars_b: dict, key: jax.Array, num_games: int, seats_a: int, params,
                random_seats: bool = False):
        """Games of network A (``seats_a`` seats) against B playing ``pit_policy``; a game stops once one side is out.

        A's seats rotate over the games (`_seating`); with ``random_seats``
        (static) each game's seating is also turned by a uniform random
        number of seats, so A's seats are uniform in every game.

        Returns:
            ``(a_wins bool [G], final boards [G], seat mask of A bool [G, S])``.
        """
        TRACES["versus"] += 1
        env, S, G = self.pit_env, self.config.num_snakes, num_games
        idx_a, idx_b = (jnp.asarray(x) for x in _seating(G, S, seats_a))
        if random_seats:
            key, seat_key = jax.random.split(key)
            turn = jax.random.randint(seat_key, (G, 1), 0, S)
            idx_a, idx_b = (idx_a + turn) % S, (idx_b + turn) % S
        mask_a = jnp.zeros((G, S), bool).at[jnp.arange(G)[:, None], idx_a].set(True)
        key, init_key = jax.random.split(key)
        states = self._constrain(jax.vmap(env.init, in_axes=(0, None))(jax.random.split(init_key, G), params))

        def decided(states):
            alive = states.board.alive
            one_side_out = ~jnp.any(alive & mask_a, axis=1) | ~jnp.any(alive & ~mask_a, axis=1)
            return states.terminated | states.truncated | one_side_out

        def cond(carry):
            states, _ = carry
            return ~jnp.all(decided(states))

        def body(carry):
            states, key = carry
            key, step_key, act_key = jax.random.split(key, 3)
            obs = jax.vmap(self.views)(states.board)  # [G, S, V, V, 3]
            take = lambda idx: jnp.take_along_axis(obs, idx[:, :, None, None, None], axis=1)  # noqa: E731
            rows = jnp.arange(G)[:, None]
            q = jnp.zeros((G, S, 3), jnp.float32).at[rows, idx_a].set(self.q_values(vars_a, take(idx_a)))
            q = q.at[rows, idx_b].set(self.q_values(vars_b, take(idx_b)))
            if self.config.pit_policy == "greedy":
                rel = jnp.argmax(q, axis=-1).astype(jnp.int32)
            else:
                rel = jax.random.categorical(act_key, log_power_softmax(q, self.config.power)).astype(jnp.int32)
            moves = observe.relative_to_absolute(rel, jax.vmap(rules.facing)(states.board))
            nxt = jax.vmap(env.step, in_axes=(0, 0, 0, None))(states, moves, jax.random.split(step_key, G), params)
            frozen = decided(states)
            nxt = jax.tree.map(lambda n, s: jnp.where(frozen.reshape((-1,) + (1,) * (n.ndim - 1)), s, n), nxt, states)
            return self._constrain(nxt), key

        states, _ = jax.lax.while_loop(cond, body, (states, key))
        best_a, best_b = sidesurvival(states.board, mask_a)
        return best_a > best_b, states.board, mask_a

    def pitted(self, state: LearnerState) -> dict:
        """``{"params", "batch_stats"}`` that the pit plays and a pass promotes: the candidate, or its average (``ema_decay``)."""
        return state.averaged if self.config.ema_decay else state.candidate

    def promote(self, state: LearnerState) -> LearnerState:
        """``state`` with `pitted` as the best network (the pit hook's pass)."""
        pitted = self.pitted(state)
        return state.replace(best_params=pitted["params"], best_batch_stats=pitted["batch_stats"])

    def iteration(self, state: LearnerState) -> int:
        """Generations done."""
        return int(state.generation)

    def update(self, state: LearnerState) -> tuple[LearnerState, dict]:
        """One generation before its pit: self-play, targets, ``train_steps`` training steps.

        Every random draw comes from ``state.rng``, so the result depends on
        ``state`` alone. The reference network (``reference_generation > 0``)
        is taken from the best at the start of the generation after it, i.e.
        after that generation's pit.

        Returns:
            ``(next state, metrics)``: host scalars, per generation ``generation``
            (its 0-based index) and the report's figures 4-5 (deaths by cause,
            food, game length) of its self-play.

        Raises:
            MemoryError: the device ran out of memory (naming the settings to lower).
        """
        t0 = time.perf_counter()
        c = self.config
        g = self.iteration(state)
        if c.reference_generation and g == c.reference_generation:
            state = state.replace(reference_params=state.best_params, reference_batch_stats=state.best_batch_stats)
        try:
            data, keys, metrics = self.collect(state)
            losses = []
            if self.donate:  # copies the steps may consume (class docstring, "Donation")
                trained = jax.tree.map(jnp.copy, {name: getattr(state, name) for name in TRAINED})
                rest = state.replace(**{name: None for name in TRAINED})
                for i in range(c.train_steps):
                    trained, loss = self.train_step_donated(trained, rest, data, keys[i])
                    losses.append(loss)
                state = rest.replace(**trained)
            else:
                for i in range(c.train_steps):
                    state, loss = self.train_step(state, data, keys[i])
                    losses.append(loss)
            losses = jnp.stack(losses)
            metrics = jax.device_get({**metrics, "loss_first": losses[0], "loss_last": losses[-1],
                                      "loss_mean": jnp.mean(losses)})
        except jax.errors.JaxRuntimeError as err:
            _reraise_oom(err, c)
        next_key, _, _, pit_key = jax.random.split(jax.random.wrap_key_data(state.rng), 4)
        state = state.replace(generation=state.generation + 1, rng=jax.random.key_data(next_key),
                              pit_rng=jax.random.key_data(pit_key))
        return state, _summary(g, {k: np.asarray(v).item() for k, v in metrics.items()}, time.perf_counter() - t0)


@functools.lru_cache(maxsize=16)
def _jitted(config: QSnakeConfig) -> dict:
    """The jitted methods of `QSnakeLearner` for one config (the learner is a static argument: it hashes by config)."""
    return {
        "self_play": jax.jit(QSnakeLearner._self_play, static_argnums=0),
        "collect": jax.jit(QSnakeLearner._collect, static_argnums=0),
        "train_step": jax.jit(QSnakeLearner._train_step, static_argnums=0),
        "train_step_donated": jax.jit(QSnakeLearner._train_step_donated, static_argnums=0, donate_argnums=1),
        "versus": jax.jit(QSnakeLearner._versus, static_argnums=(0, 4, 5, 7)),
    }


def _summary(generation: int, m: dict, seconds: float) -> dict:
    """The per-generation figures of `QSnakeLearner.update` from the summed self-play metrics ``m``."""
    games, snakes = max(m["games"], 1), max(m["snakes"], 1.0)
    deaths = m["deaths"]
    row = {"generation": generation, "health_loss": m["health_loss"],
           "games": int(m["games"]), "decisions": m["decisions"], "complete_decisions": m["complete_decisions"],
           "truncated": int(m["truncated"]),
           "game_length": m["game_turns"] / games,
           "opponent_games": int(m["opponent_games"]),
           "opponent_win_rate": m["opponent_wins"] / m["opponent_games"] if m["opponent_games"] else None}
    for name in DEATH_CAUSES:
        row[f"deaths_{name}"] = m[f"deaths_{name}"]
        row[f"deaths_{name}_share"] = m[f"deaths_{name}"] / deaths if deaths else 0.0
    row["deaths"] = deaths
    row["starvation_wall_share"] = (m["deaths_starvation"] + m["deaths_wall"]) / deaths if deaths else 0.0
    row["food_per_game"] = m["food"] / games
    row["food_per_snake"] = m["food"] / snakes
    row["heads_hunted_per_game"] = m["heads_hunted"] / games
    row["collisions_per_game"] = m["collisions"] / games
    for k in ("samples", "loss_first", "loss_last", "loss_mean", "mean_q_taken", "mean_target_taken"):
        row[k] = m[k]
    row["decisions_per_second"] = m["decisions"] / seconds if seconds > 0 else float("nan")
    row["first_turn_health"] = m["first_turn_health"]
    for k in ("search_target_mean", "search_agreement"):
        if k in m:
            row[k] = m[k]
    return row


def check_checkpoint_shapes(config: QSnakeConfig, checkpoint_dir) -> None:
    """Raises ``ValueError`` if ``checkpoint_dir`` holds a run of another board size, snake count or network shape.

    Reads the folder's ``config.json`` only (nothing is written). Other
    differences are refused later by `jaxgames.checkpoint.Checkpointer`
    (``ConfigMismatch``, listing them).
    """
    path = os.path.join(os.fspath(checkpoint_dir), "config.json")
    if not os.path.exists(path):
        return
    try:
        with open(path) as f:
            stored = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"checkpoint folder {checkpoint_dir}: unreadable config.json ({err})") from err
    here = config.shape_settings()
    diffs = [f"{k}={stored.get(k)!r} there, {v!r} here" for k, v in here.items() if stored.get(k) != v]
    if diffs:
        raise ValueError(
            f"checkpoint folder {checkpoint_dir} holds a run of another board size or network shape ({'; '.join(diffs)}); "
            "give this run another folder"
        )
