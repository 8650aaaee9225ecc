"""DDPG with a validity head on Onitama: every actor variant trained side by side in one compiled run.

Source: A. Dasgupta and Y. Q. Chong, "Mastering the game of Onitama with
Reinforcement Learning" (NUS USP group report, 2021; "the report" below):
section 3.2 (DDPG after Lillicrap et al. 2015: the pseudocode of its figure
3.1, eqs. 3.5-3.6), 4.1-4.3 (observation, 40 actions, rewards, the rollout),
5.1 (the "hand of god" mask and the valid rate), 5.2-5.5 (the networks,
`jaxgames.networks.ddpg`), 5.6 (the minimax curriculum, sampling as
exploration), 6.1 (the metrics) and 7.2 (MSE versus binary cross-entropy for
the validity loss).

Shapes: ``R = V * S`` runs (``V = len(variants)`` actor variants times
``S = num_seeds`` seeds), each with its own ``E = num_envs`` games, actor,
critic, targets, Adam states, replay buffer of ``N = buffer_size``
transitions and curriculum; observations are 0/1 ``[260]``, actions ``[40]``.

One iteration (`DDPGLearner`), per game; at its start every game is either
live with the agent to move, or over:

1. The actor maps the observation to its policy over the 40 actions (the
   DDPG action). The move is drawn from the policy masked to the legal
   actions and renormalised (`jaxgames.networks.ddpg.hand_of_god`), so
   training never plays an illegal move; *valid* (the valid rate) is whether
   the policy's argmax was legal.
2. Finished games restart (a new deal; the agent's seat drawn at random).
3. The opponent (`MinimaxAgent` at the run's curriculum depth) moves in every
   live game where it is to move; a game it ends waits one iteration (the
   agent's step on a finished state is a no-op) before it restarts.
4. The transition ``(s_t, a_t, r_t, s_{t+1}, done)`` of every game live at
   the start is stored: ``s_{t+1}`` after the opponent's reply (the opponent
   is part of the environment, section 4.3); ``r_t`` +1 if the agent won in
   the iteration, -1 if it lost, else 0; a draw at ``max_turns`` is terminal.
5. Each game that ended updates its run's curriculum (`curriculum_step`).
6. Once ``learning_starts`` transitions are stored, ``updates_per_iteration``
   updates per run, each on ``batch_size`` transitions drawn uniformly from
   the run's buffer:

   * critic: ``mean (y - Q(s, a))^2``, ``y = r + gamma (1 - done) Q'(s', mu'(s'))``
     (eq. 3.6, which omits the ``(1 - done)`` that a game's end needs);
   * actor: ``-mean Q(s, mu(s)) + validity_weight * L_val(v(s), mask(s))``
     with the just-updated critic (the validity loss of sections 5.3 and
     7.2, `validity_loss`; none for ``actions_only``);
   * targets: ``theta' <- tau theta + (1 - tau) theta'`` (eq. 3.5; they
     start as copies).

The critic's action is the actor's probability vector ``mu(s)`` as played
(``critic_action="policy"``), so ``dQ/dp`` is taken where the critic was
trained; ``"one_hot"`` stores the move played instead (for comparison).
Where the report's letter is wrong or silent: eq. 7.2 is bracketed so the
minus and the ``1/N`` apply to both terms; the curriculum follows section
5.6 (at least 60 wins in the last 100 games) and empties its window on an
advance; the replay sizes of section 3.2 count transitions, not episodes.

Design: variants differ in parameter *structure*, so parameters are tuples
over variants with a leading seed axis ``[S, ...]``, each ``vmap``-ed over its
seeds. Everything else is one ``vmap`` over the ``R`` runs, except the
opponent: ``lax.switch`` under ``vmap`` runs every depth's search, so its moves
go through ``lax.map`` over the runs, where only the selected depth runs.

"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

import jaxgames
from jaxgames import checks
from jaxgames.agents.onitama import MAX_JAX_DEPTH, MinimaxAgent
from jaxgames.games.onitama import cards
from jaxgames.games.onitama.env import NUM_PAPER_ACTIONS, PAPER_OBSERVATION_SIZE
from jaxgames.networks.ddpg import (
    VARIANTS, Actor, Critic, check_widths, hand_of_god, has_validity, init_actor, init_critic,
)

VALIDITY_LOSSES = ("mse", "bce")
CRITIC_ACTIONS = ("policy", "one_hot")
BCE_EPSILON = 1e-7
"""The validity output is clipped to ``[BCE_EPSILON, 1 - BCE_EPSILON]`` inside the BCE's logarithms."""


# ----------------------------------------------------------------------------- settings
@dataclasses.dataclass(frozen=True)
class DDPGConfig:
    """Every setting of the study (static: one config compiles its functions once).

    Attributes:
        variants: actor variants trained side by side (`jaxgames.networks.ddpg.VARIANTS`).
        num_seeds: independent runs per variant, ``S``.
        num_envs: games played in parallel per run, ``E``.
        num_iterations: iterations of the run (one agent move per game each): `make_train`'s
            length, and where `DDPGLearner.update` cuts its last chunk short.
        chunk: iterations per `DDPGLearner.update` (one compiled ``lax.scan``; under
            `jaxgames.learners.loop.train` a history row and a checkpoint each).
        buffer_size: transitions kept per run (FIFO), ``N``.
        batch_size: transitions per update.
        learning_starts: stored transitions per run before the first update (in [batch_size, buffer_size]).
        updates_per_iteration: DDPG updates per run per iteration.
        actor_learning_rate, critic_learning_rate: Adam step sizes.
        gamma: discount in [0, 1] (the report gives none; 0.99).
        tau: soft target update in (0, 1] (the report: 0.005).
        validity_loss: ``"mse"`` (the report's) or ``"bce"`` (its section 7.2 proposal).
        validity_weight: weight of the validity loss in the actor loss, in [0, 1e6] (the report adds them: 1).
        critic_action: ``"policy"`` or ``"one_hot"`` (module docstring).
        conv_features: filters of the 3x3 convolutions, 1 or 2 layers (`jaxgames.networks.ddpg`;
            the report's ``(64, 128)``; small defaults for the CPU).
        card_features: units of the card layer (the report's 10).
        hidden: units of the dense layers after the concatenation (the report's ``(256, 256)``).
        norm: ``"layer"`` or ``"none"`` after each convolution.
        min_depth, max_depth: the curriculum's first and last `MinimaxAgent` depth (1-3).
        advance_wins, window: the curriculum advances after ``advance_wins`` wins
            in the last ``window`` games (the report's section 5.6: 60 of 100).
        max_turns: the draw limit of a game (the report: 200).
        deck: the cards dealt from (the report's section 4.1: its five cards, dealt at random).

    Raises:
        ValueError, TypeError: on construction, naming the bad setting.
    """

    variants: tuple[str, ...] = VARIANTS
    num_seeds: int = 1
    num_envs: int = 8
    num_iterations: int = 1000
    chunk: int = 100
    buffer_size: int = 4096
    batch_size: int = 64
    learning_starts: int = 256
    updates_per_iteration: int = 1
    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    validity_loss: str = "mse"
    validity_weight: float = 1.0
    critic_action: str = "policy"
    conv_features: tuple[int, ...] = (16, 32)
    card_features: int = 10
    hidden: tuple[int, ...] = (64, 64)
    norm: str = "layer"
    min_depth: int = 1
    max_depth: int = 2
    advance_wins: int = 60
    window: int = 100
    max_turns: int = 200
    deck: tuple[str, ...] = cards.PAPER_CARDS

    def __post_init__(self):
        if isinstance(self.variants, str) or not isinstance(self.variants, (tuple, list)) or not self.variants:
            raise ValueError(f"variants must be a non-empty tuple of names from {VARIANTS}; got {self.variants!r}")
        for v in self.variants:
            if v not in VARIANTS:
                raise ValueError(f"unknown variant {v!r}; choose from {VARIANTS}")
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants repeats an entry: {self.variants!r}")
        for name in ("num_seeds", "num_envs", "num_iterations", "chunk", "buffer_size", "batch_size",
                     "updates_per_iteration", "advance_wins", "window"):
            checks.positive_int(name, getattr(self, name))
        checks.non_negative_int("learning_starts", self.learning_starts)
        if self.learning_starts < self.batch_size:
            raise ValueError(f"learning_starts ({self.learning_starts}) must be >= batch_size ({self.batch_size})")
        if self.buffer_size < self.batch_size:
            raise ValueError(f"buffer_size ({self.buffer_size}) must be >= batch_size ({self.batch_size})")
        if self.learning_starts > self.buffer_size:  # the buffer never holds more: no update would ever run
            raise ValueError(f"learning_starts ({self.learning_starts}) must be <= buffer_size ({self.buffer_size})")
        if self.advance_wins > self.window:
            raise ValueError(f"advance_wins ({self.advance_wins}) cannot exceed window ({self.window})")
        checks.real("actor_learning_rate", self.actor_learning_rate, 0.0, 1.0, lo_open=True)
        checks.real("critic_learning_rate", self.critic_learning_rate, 0.0, 1.0, lo_open=True)
        checks.probability("gamma", self.gamma)
        checks.real("tau", self.tau, 0.0, 1.0, lo_open=True)
        checks.real("validity_weight", self.validity_weight, 0.0, 1e6)
        checks.choice("validity_loss", self.validity_loss, VALIDITY_LOSSES)
        checks.choice("critic_action", self.critic_action, CRITIC_ACTIONS)
        check_widths(tuple(self.conv_features), self.card_features, tuple(self.hidden), self.norm)
        for name in ("min_depth", "max_depth"):
            checks.integer(name, getattr(self, name), 1, MAX_JAX_DEPTH)  # MinimaxAgent's depths
        if self.min_depth > self.max_depth:
            raise ValueError(f"min_depth ({self.min_depth}) must be <= max_depth ({self.max_depth})")
        checks.integer("max_turns", self.max_turns, 2)
        jaxgames.make("onitama", action_space="paper", deck=tuple(self.deck), max_turns=self.max_turns)  # checks the deck

    @property
    def num_runs(self) -> int:
        """``R = len(variants) * num_seeds``; run ``r`` is variant ``r // num_seeds``, seed ``r % num_seeds``."""
        return len(self.variants) * self.num_seeds

    def actor(self, variant: str) -> Actor:
        """The `Actor` module of ``variant`` with this config's widths."""
        return Actor(variant, tuple(self.conv_features), self.card_features, tuple(self.hidden), self.norm)

    def critic(self) -> Critic:
        """The `Critic` module with this config's widths."""
        return Critic(tuple(self.conv_features), self.card_features, tuple(self.hidden), self.norm)

    def env(self):
        """The Onitama env of the study (the report's 40 actions and observation, ``action_space="paper"``)."""
        return jaxgames.make("onitama", action_space="paper", deck=tuple(self.deck), max_turns=self.max_turns)


# ----------------------------------------------------------------------------- losses and the curriculum
def validity_loss(validity: jax.Array, legal: jax.Array, kind: str = "mse") -> jax.Array:
    """float32 ``[...]``: the validity loss of one example per leading index, mean over the 40 actions.

    Args:
        validity: float32 ``[..., 40]`` in (0, 1): the validity layer's output.
        legal: bool ``[..., 40]``: the legal-action mask (the target).
        kind: ``"mse"`` (the report's eq. 7.1) or ``"bce"`` (its eq. 7.2, bracketed correctly).

    Why BCE (section 7.2, whose gradients are misprinted): with respect to the
    prediction the MSE's gradient is ``2 (v - m) / N`` and the BCE's
    ``(v - m) / (v (1 - v) N)``; through the sigmoid the BCE's logit gradient
    ``(v - m) / N`` stays large where a saturated output is wrong, while the
    MSE's ``2 (v - m) v (1 - v) / N`` vanishes there.

    Raises:
        ValueError: an unknown ``kind``.
    """
    m = legal.astype(jnp.float32)
    if kind == "mse":
        return jnp.mean((validity - m) ** 2, axis=-1)
    if kind == "bce":
        v = jnp.clip(validity, BCE_EPSILON, 1.0 - BCE_EPSILON)
        return -jnp.mean(m * jnp.log(v) + (1.0 - m) * jnp.log1p(-v), axis=-1)
    raise ValueError(f"kind must be one of {VALIDITY_LOSSES}; got {kind!r}")


@struct.dataclass
class Curriculum:
    """The minimax curriculum of one run (the report's section 5.6; batched ``[R]`` in `TrainState`).

    Attributes:
        depth: int32 ``[]``: the opponent's current depth.
        results: bool ``[window]``: wins of the games played since the last
            advance, a ring (False where no game was played yet).
        position: int32 ``[]``: the ring's next slot.
        games: int32 ``[]``: games played at the current depth.
    """

    depth: jax.Array
    results: jax.Array
    position: jax.Array
    games: jax.Array


def init_curriculum(depth: int, window: int) -> Curriculum:
    """A curriculum at ``depth`` with an empty window of ``window`` games."""
    return Curriculum(jnp.int32(depth), jnp.zeros((window,), jnp.bool_), jnp.int32(0), jnp.int32(0))


def curriculum_step(cur: Curriculum, ended: jax.Array, won: jax.Array, *, advance_wins: int, max_depth: int) -> Curriculum:
    """The curriculum after one game (or none: ``ended`` False leaves it unchanged).

    The game's result enters the window; if the window then holds at least
    ``advance_wins`` wins and the depth is below ``max_depth``, the depth
    advances by one and the window empties (the report does not say; kept, the
    wins against the old depth would advance it again at the next game).

    Args:
        cur: one run's `Curriculum`.
        ended: bool ``[]``: a game ended.
        won: bool ``[]``: the agent won it.
        advance_wins, max_depth: static settings.
    """
    window = cur.results.shape[0]
    results = jnp.where(ended, cur.results.at[cur.position].set(won), cur.results)
    position = jnp.where(ended, (cur.position + 1) % window, cur.position)
    games = cur.games + ended.astype(jnp.int32)
    advance = ended & (jnp.sum(results, dtype=jnp.int32) >= advance_wins) & (cur.depth < max_depth)
    return Curriculum(
        depth=cur.depth + advance.astype(jnp.int32),
        results=jnp.where(advance, False, results),
        position=jnp.where(advance, 0, position).astype(jnp.int32),
        games=jnp.where(advance, 0, games).astype(jnp.int32),
    )


# ----------------------------------------------------------------------------- state
@struct.dataclass
class Buffer:
    """The replay buffers of all runs, on device (FIFO rings of ``N`` rows).

    Attributes:
        observation: bool ``[R, N, 260]``: ``s_t`` (the report's observation is 0/1; stored as bool).
        action: float32 ``[R, N, 40]``: the critic's action (``critic_action``).
        reward: float32 ``[R, N]``.
        next_observation: bool ``[R, N, 260]``: ``s_{t+1}``, after the opponent's reply.
        done: bool ``[R, N]``.
        legal: bool ``[R, N, 40]``: the legal mask of ``s_t`` (the validity target).
        filled: bool ``[R, N]``: the row holds a transition (rows of games idle
            for an iteration are written with False and never trained on).
    """

    observation: jax.Array
    action: jax.Array
    reward: jax.Array
    next_observation: jax.Array
    done: jax.Array
    legal: jax.Array
    filled: jax.Array


@struct.dataclass
class TrainState:
    """Everything a run of the study carries from one iteration to the next (a checkpoint).

    Network entries are tuples with one item per variant (``config.variants``
    order), each a parameter pytree with a leading seed axis ``[S, ...]``.

    Attributes:
        actor, actor_target, critic, critic_target: parameters (tuples over variants).
        actor_opt, critic_opt: Adam states (tuples over variants, ``[S, ...]``).
        env_state: `OnitamaState` ``[R, E]``.
        seat: int32 ``[R, E]``: the agent's seat (0 Red, 1 Blue) in each game.
        buffer: `Buffer`.
        buffer_position: int32 ``[]``: the next row written (the same for all runs).
        buffer_count: int32 ``[]``: rows written so far, at most ``N``.
        curriculum: `Curriculum` ``[R]``.
        iteration: int32 ``[]``.
        key: PRNG key.
    """

    actor: tuple
    actor_target: tuple
    critic: tuple
    critic_target: tuple
    actor_opt: tuple
    critic_opt: tuple
    env_state: Any
    seat: jax.Array
    buffer: Buffer
    buffer_position: jax.Array
    buffer_count: jax.Array
    curriculum: Curriculum
    iteration: jax.Array
    key: jax.Array


class Metrics(NamedTuple):
    """Per-iteration records (`DDPGLearner.run` and ``update`` stack them ``[T, ...]``).

    Attributes:
        valid_rate: float32 ``[R]``: share of the agent's moves whose policy
            argmax was legal (the report's "valid rate", 5.1, 6.1); NaN if none was made.
        moves: int32 ``[R]``: agent moves made (games live at the start).
        actor_loss: float32 ``[R]``: policy loss + weighted validity loss of
            the last update (NaN before ``learning_starts``).
        policy_loss: float32 ``[R]``: ``-mean Q(s, mu(s))``.
        validity_loss: float32 ``[R]`` (0 for ``actions_only``).
        critic_loss: float32 ``[R]``.
        depth: int32 ``[R]``: the opponent's depth during the iteration.
        ended: bool ``[R, E]``: a game ended in the iteration.
        outcome: int8 ``[R, E]``: its result for the agent, +1 win, -1 loss, 0 draw (0 where none ended).
    """

    valid_rate: jax.Array
    moves: jax.Array
    actor_loss: jax.Array
    policy_loss: jax.Array
    validity_loss: jax.Array
    critic_loss: jax.Array
    depth: jax.Array
    ended: jax.Array
    outcome: jax.Array


def _select(pred: jax.Array, on_true, on_false):
    """``jnp.where(pred, a, b)`` leaf by leaf, ``pred`` ``[...]`` broadcast over each leaf's trailing axes."""
    def pick(a, b):
        p = pred.reshape(pred.shape + (1,) * (a.ndim - pred.ndim))
        return jnp.where(p, a, b)
    return jax.tree.map(pick, on_true, on_false)


class Losses(NamedTuple):
    """The losses of one update (float32 ``[]`` per run; `Metrics` has their meaning)."""

    actor_loss: jax.Array
    policy_loss: jax.Array
    validity_loss: jax.Array
    critic_loss: jax.Array


# ----------------------------------------------------------------------------- the learner
class DDPGLearner:
    """The study for one `DDPGConfig` as a `jaxgames.learners.loop` learner (module docstring).

    ``loop.train(DDPGLearner(config), num_iterations=config.num_iterations, key=key)``
    runs the study with checkpoints, exact resume and a wall-clock budget (with
    ``neutral=("num_iterations", "chunk")`` a resume may change those two). Learners
    of configs that differ only in ``num_iterations`` and ``chunk`` compare equal
    and share their compiled functions (a resume in the same process compiles nothing).

    ``update`` consumes its state (``donate``): the compiled chunk writes the
    new state (replay buffers, networks, Adam states, games) over the one it
    is given, which is deleted, as the spine reads only the state returned.

    Args:
        config: a `DDPGConfig`.
        donate: ``update`` donates the old state to the compiled run (`run`'s
            ``donate``); False keeps it (the same results, a copy of the whole
            state, buffers included, per chunk).

    Attributes:
        config, env, actors (one `Actor` per variant), critic, actor_tx, critic_tx, donate.

    Raises:
        TypeError: ``config`` is not a `DDPGConfig`.
    """

    name = "ddpg"

    def __init__(self, config: DDPGConfig, *, donate: bool = True):
        if not isinstance(config, DDPGConfig):
            raise TypeError(f"config must be a DDPGConfig; got {type(config).__name__}")
        self.config = config
        self.donate = bool(donate)  # picks a compiled function, not a trace: not part of the equality below
        self.env = config.env()
        self.actors = tuple(config.actor(v) for v in config.variants)
        self.critic = config.critic()
        self.actor_tx = optax.adam(config.actor_learning_rate)
        self.critic_tx = optax.adam(config.critic_learning_rate)
        self.opponents = tuple(MinimaxAgent(d) for d in range(config.min_depth, config.max_depth + 1))
        self._compiled_for = dataclasses.replace(config, num_iterations=1, chunk=1)

    def __hash__(self):
        return hash(self._compiled_for)

    def __eq__(self, other):  # jit's static-argument cache: equal learners trace alike
        return isinstance(other, DDPGLearner) and self._compiled_for == other._compiled_for

    # -- the loop protocol
    def init(self, key: jax.Array) -> TrainState:
        """The initial `TrainState` (jitted): fresh networks, targets equal to them, empty buffers.

        Every game starts "over", so the first iteration deals them (and lets
        the opponent open where it starts); it stores no transition.
        """
        return self._init(key)

    def update(self, state: TrainState) -> tuple[TrainState, dict]:
        """The next ``config.chunk`` iterations in one compiled call, cut short at ``config.num_iterations``.

        Returns:
            ``(state, metrics)``: ``metrics["records"]`` is the chunk's `Metrics`
            ``[T, ...]``; the scalars are `chunk_summary`'s.
        """
        done = int(state.iteration)
        left = self.config.num_iterations - done
        state, records = self.run(state, min(self.config.chunk, left) if left > 0 else self.config.chunk,
                                  donate=self.donate)
        return state, {"records": records, **chunk_summary(self.config, records, done)}

    def iteration(self, state: TrainState) -> int:
        """Iterations done (one agent move per game each), so ``num_iterations`` means the same everywhere."""
        return int(state.iteration)

    def _init_impl(self, key: jax.Array) -> TrainState:
        cfg = self.config
        S, E, R, N = cfg.num_seeds, cfg.num_envs, cfg.num_runs, cfg.buffer_size
        key, actor_key, critic_key, env_key = jax.random.split(key, 4)
        actor_keys = jax.random.split(actor_key, (len(self.actors), S))
        critic_keys = jax.random.split(critic_key, (len(self.actors), S))
        actor = tuple(jax.vmap(functools.partial(init_actor, actor=a))(actor_keys[i]) for i, a in enumerate(self.actors))
        critic = tuple(jax.vmap(functools.partial(init_critic, critic=self.critic))(critic_keys[i])
                       for i in range(len(self.actors)))
        actor_opt = tuple(jax.vmap(self.actor_tx.init)(p) for p in actor)
        critic_opt = tuple(jax.vmap(self.critic_tx.init)(p) for p in critic)
        states = jax.vmap(jax.vmap(self.env.init))(jax.random.split(env_key, (R, E)))
        states = states.replace(terminated=jnp.ones((R, E), jnp.bool_),
                                legal_action_mask=jnp.ones_like(states.legal_action_mask))
        obs = jnp.zeros((R, N, PAPER_OBSERVATION_SIZE), jnp.bool_)
        mask = jnp.zeros((R, N, NUM_PAPER_ACTIONS), jnp.bool_)
        buffer = Buffer(obs, jnp.zeros((R, N, NUM_PAPER_ACTIONS), jnp.float32), jnp.zeros((R, N), jnp.float32), obs,
                        jnp.zeros((R, N), jnp.bool_), mask, jnp.zeros((R, N), jnp.bool_))
        curriculum = jax.vmap(lambda _: init_curriculum(cfg.min_depth, cfg.window))(jnp.arange(R))
        return TrainState(actor=actor, actor_target=actor, critic=critic, critic_target=critic, actor_opt=actor_opt,
                          critic_opt=critic_opt, env_state=states, seat=jnp.zeros((R, E), jnp.int32), buffer=buffer,
                          buffer_position=jnp.int32(0), buffer_count=jnp.int32(0), curriculum=curriculum,
                          iteration=jnp.int32(0), key=key)

    # -- the compiled loop
    def run(self, state: TrainState, num_iterations: int, *, donate: bool = False) -> tuple[TrainState, Metrics]:
        """``num_iterations`` iterations from ``state`` in one compiled ``lax.scan`` (one trace per length).

        Args:
            state: a `TrainState`.
            num_iterations: iterations to run (>= 1).
            donate: consume ``state``: XLA reuses its arrays for the new state
                instead of copying it (replay buffers included), and every
                array of ``state`` is deleted, so read only the state returned.
                The results are the same bits either way.

        Returns:
            ``(state, metrics)``, `Metrics` stacked ``[num_iterations, ...]``.
        """
        checks.positive_int("num_iterations", num_iterations)
        return (self._run_donated if donate else self._run)(state, int(num_iterations))

    def _run_impl(self, state: TrainState, num_iterations: int):
        return jax.lax.scan(lambda s, _: self._iteration(s), state, None, length=num_iterations)

    _init = jax.jit(_init_impl, static_argnums=0)
    _run = jax.jit(_run_impl, static_argnums=(0, 2))
    _run_donated = jax.jit(_run_impl, static_argnums=(0, 2), donate_argnums=1)

    def _per_variant(self, fn: Callable, *trees):
        """``fn(variant_index, *variant_slices)`` for each variant, vmapped over its seeds; outputs concatenated over runs.

        ``trees`` are per-variant tuples (parameters) or run-batched arrays
        ``[R, ...]`` (sliced to the variant's ``[S, ...]`` rows).
        """
        S = self.config.num_seeds
        outs = []
        for i in range(len(self.actors)):
            args = [t[i] if isinstance(t, tuple) else jax.tree.map(lambda x: x[i * S:(i + 1) * S], t) for t in trees]
            outs.append(jax.vmap(functools.partial(fn, i))(*args))
        return outs

    def _policies(self, actor: tuple, observation: jax.Array) -> jax.Array:
        """float32 ``[R, E, 40]``: every run's actor policy for its games' observations ``[R, E, 260]``."""
        outs = self._per_variant(lambda i, p, o: self.actors[i].apply(p, o).policy, actor, observation)
        return jnp.concatenate(outs, axis=0)

    def _opponent_actions(self, states, keys: jax.Array, depth: jax.Array) -> jax.Array:
        """int32 ``[R, E]``: the minimax move of every game, at each run's depth (``lax.map`` over runs, module docstring)."""
        env = self.env
        branches = [
            (lambda agent: lambda s, k: jax.vmap(lambda s1, k1: agent.policy(env, s1, k1, s1.current_player))(s, k))(a)
            for a in self.opponents
        ]

        def one_run(args):
            s, k, d = args
            return jax.lax.switch(d - self.config.min_depth, branches, s, k)

        return jax.lax.map(one_run, (states, keys, depth)).astype(jnp.int32)

    def _iteration(self, ts: TrainState) -> tuple[TrainState, Metrics]:
        cfg = self.config
        env = self.env
        R, E, N = cfg.num_runs, cfg.num_envs, cfg.buffer_size
        key, act_key, reset_key, opp_key, update_key = jax.random.split(ts.key, 5)
        step = jax.vmap(jax.vmap(env.step))
        seat_reward = jax.vmap(jax.vmap(lambda s, p: s.rewards[p]))

        depth_played = ts.curriculum.depth
        # 1. the agent moves in the live games
        s0 = ts.env_state
        live = ~(s0.terminated | s0.truncated)  # [R, E]
        policy = self._policies(ts.actor, s0.observation)  # [R, E, 40]
        legal = s0.legal_action_mask
        greedy = jnp.argmax(policy, axis=-1)
        valid = jnp.take_along_axis(legal, greedy[..., None], axis=-1)[..., 0]
        action = jax.vmap(jax.vmap(hand_of_god))(jax.random.split(act_key, (R, E)), policy, legal)
        s1 = step(s0, action)
        r1 = seat_reward(s1, ts.seat)
        done1 = s1.terminated | s1.truncated

        # 2. finished games restart, the agent's seat drawn at random
        deal_key, seat_key = jax.random.split(reset_key)
        fresh = jax.vmap(jax.vmap(env.init))(jax.random.split(deal_key, (R, E)))
        s2 = _select(done1, fresh, s1)
        seat = jnp.where(done1, jax.random.bernoulli(seat_key, 0.5, (R, E)).astype(jnp.int32), ts.seat)

        # 3. the opponent replies where it is to move
        opp_turn = ~(s2.terminated | s2.truncated) & (s2.current_player != seat)
        opp_action = self._opponent_actions(s2, jax.random.split(opp_key, (R, E)), ts.curriculum.depth)
        s3_moved = step(s2, opp_action)
        s3 = _select(opp_turn, s3_moved, s2)
        r3 = jnp.where(opp_turn, seat_reward(s3_moved, seat), 0.0)
        done3 = opp_turn & (s3.terminated | s3.truncated)

        # 4. the transitions of the games live at the start
        reward = jnp.where(live, r1 + jnp.where(done1, 0.0, r3), 0.0)
        done = done1 | done3
        ended = live & done
        if cfg.critic_action == "policy":
            stored = policy
        else:
            stored = jax.nn.one_hot(action, NUM_PAPER_ACTIONS, dtype=jnp.float32)
        rows = (ts.buffer_position + jnp.arange(E, dtype=jnp.int32)) % N
        b = ts.buffer
        buffer = Buffer(
            observation=b.observation.at[:, rows].set(s0.observation > 0.5),
            action=b.action.at[:, rows].set(stored),
            reward=b.reward.at[:, rows].set(reward),
            next_observation=b.next_observation.at[:, rows].set(s3.observation > 0.5),
            done=b.done.at[:, rows].set(done),
            legal=b.legal.at[:, rows].set(legal),
            filled=b.filled.at[:, rows].set(live),
        )
        buffer_position = (ts.buffer_position + E) % N
        buffer_count = jnp.minimum(ts.buffer_count + E, N)

        # 5. the curriculum, game by game
        won = ended & (reward > 0)

        def run_curriculum(cur, ended_r, won_r):
            step_fn = functools.partial(curriculum_step, advance_wins=cfg.advance_wins, max_depth=cfg.max_depth)
            return jax.lax.scan(lambda c, x: (step_fn(c, *x), None), cur, (ended_r, won_r))[0]

        curriculum = jax.vmap(run_curriculum)(ts.curriculum, ended, won)

        ts = ts.replace(env_state=s3, seat=seat, buffer=buffer, buffer_position=buffer_position,
                        buffer_count=buffer_count, curriculum=curriculum, key=key)

        # 6. the DDPG updates
        nan = jnp.full((R,), jnp.nan, jnp.float32)
        losses = Losses(nan, nan, nan, nan)
        for u in range(cfg.updates_per_iteration):
            ts, losses = jax.lax.cond(
                buffer_count >= cfg.learning_starts,
                functools.partial(self._update, key=jax.random.fold_in(update_key, u)),
                lambda t: (t, Losses(nan, nan, nan, nan)),
                ts,
            )
        moves = jnp.sum(live, axis=-1, dtype=jnp.int32)
        valid_rate = jnp.sum(valid & live, axis=-1) / jnp.where(moves > 0, moves, jnp.nan)
        metrics = Metrics(
            valid_rate=valid_rate.astype(jnp.float32),
            moves=moves,
            actor_loss=losses.actor_loss,
            policy_loss=losses.policy_loss,
            validity_loss=losses.validity_loss,
            critic_loss=losses.critic_loss,
            depth=depth_played,
            ended=ended,
            outcome=jnp.where(ended, jnp.sign(reward), 0).astype(jnp.int8),
        )
        return ts.replace(iteration=ts.iteration + 1), metrics

    def _update(self, ts: TrainState, key: jax.Array) -> tuple[TrainState, Losses]:
        """One DDPG update of every run on a minibatch of its own buffer (module docstring, step 6)."""
        cfg = self.config
        R, B = cfg.num_runs, cfg.batch_size
        index = jax.random.randint(key, (R, B), 0, ts.buffer_count)
        batch = jax.tree.map(lambda x: jnp.take_along_axis(x, index.reshape((R, B) + (1,) * (x.ndim - 2)), axis=1),
                             ts.buffer)
        new = self._per_variant(self.update_run, ts.actor, ts.actor_target, ts.critic, ts.critic_target,
                                ts.actor_opt, ts.critic_opt, batch)
        fields = list(zip(*new))  # per output, per variant
        actor, actor_target, critic, critic_target, actor_opt, critic_opt = (tuple(f) for f in fields[:6])
        out = Losses(*(jnp.concatenate(x, axis=0) for x in zip(*fields[6])))
        return ts.replace(actor=actor, actor_target=actor_target, critic=critic, critic_target=critic_target,
                          actor_opt=actor_opt, critic_opt=critic_opt), out

    def update_run(self, i: int, actor, actor_target, critic, critic_target, actor_opt, critic_opt, batch: Buffer):
        """One DDPG update of ONE run of variant ``i`` on ``batch`` (module docstring, step 6).

        Written for one run (the learner vmaps it over each variant's seeds).

        Args:
            i: the variant's index in ``config.variants`` (static).
            actor, actor_target, critic, critic_target: the run's parameters.
            actor_opt, critic_opt: its Adam states.
            batch: a `Buffer` of ``B`` rows (``[B, ...]``, no run axis); rows
                with ``filled`` False weigh nothing in the means.

        Returns:
            ``(actor, actor_target, critic, critic_target, actor_opt, critic_opt, losses)``, `Losses`.
        """
        cfg = self.config
        net = self.actors[i]
        obs = batch.observation.astype(jnp.float32)
        next_obs = batch.next_observation.astype(jnp.float32)
        weight = batch.filled.astype(jnp.float32)
        total = jnp.maximum(jnp.sum(weight), 1.0)

        def wmean(x):
            return jnp.sum(weight * x) / total

        next_policy = net.apply(actor_target, next_obs).policy
        target = batch.reward + cfg.gamma * (1.0 - batch.done.astype(jnp.float32)) * self.critic.apply(
            critic_target, next_obs, next_policy)
        target = jax.lax.stop_gradient(target)

        def critic_loss_fn(p):
            return wmean((target - self.critic.apply(p, obs, batch.action)) ** 2)

        critic_loss, grads = jax.value_and_grad(critic_loss_fn)(critic)
        updates, critic_opt = self.critic_tx.update(grads, critic_opt, critic)
        critic = optax.apply_updates(critic, updates)

        def actor_loss_fn(p):
            out = net.apply(p, obs)
            policy_loss = -wmean(self.critic.apply(critic, obs, out.policy))
            if has_validity(cfg.variants[i]):
                vloss = wmean(validity_loss(out.validity, batch.legal, cfg.validity_loss))
            else:
                vloss = jnp.float32(0.0)
            return policy_loss + cfg.validity_weight * vloss, (policy_loss, vloss)

        (actor_loss, (policy_loss, vloss)), grads = jax.value_and_grad(actor_loss_fn, has_aux=True)(actor)
        updates, actor_opt = self.actor_tx.update(grads, actor_opt, actor)
        actor = optax.apply_updates(actor, updates)
        soft = lambda new, old: jax.tree.map(lambda a, b: cfg.tau * a + (1.0 - cfg.tau) * b, new, old)
        return (actor, soft(actor, actor_target), critic, soft(critic, critic_target), actor_opt, critic_opt,
                Losses(actor_loss, policy_loss, vloss, critic_loss))


# ----------------------------------------------------------------------------- entry points
def chunk_summary(config: DDPGConfig, records: Metrics, done: int) -> dict:
    """The scalars of a chunk's `Metrics` ``[T, ...]`` that began after ``done`` iterations (its history row).

    Returns:
        ``actor_loss``, ``critic_loss``: means over the chunk's iterations that
        updated and over the runs (None before ``learning_starts``; NaN if one
        became NaN, which stops `jaxgames.learners.loop.train`); ``valid_rate``:
        valid moves over moves (None if none); ``games``: games ended;
        ``depth``: the deepest opponent among the runs in its last iteration.
    """
    m = jax.device_get(records)
    t = done + 1 + np.arange(m.moves.shape[0])  # the chunk's iterations, counted from 1
    updated = np.minimum(t * config.num_envs, config.buffer_size) >= config.learning_starts  # step 6's condition
    moves = int(m.moves.sum())
    valid = float(np.nansum(m.valid_rate * m.moves))
    return {
        "actor_loss": float(np.mean(m.actor_loss[updated])) if updated.any() else None,
        "critic_loss": float(np.mean(m.critic_loss[updated])) if updated.any() else None,
        "valid_rate": valid / moves if moves else None,
        "games": int(m.ended.sum()),
        "depth": int(m.depth[-1].max()),
    }


def make_train(config: DDPGConfig) -> Callable[[jax.Array], tuple[TrainState, Metrics]]:
    """``train(key) -> (state, metrics)``: the whole study of ``config.num_iterations`` iterations, one jitted function.

    PureJaxRL's ``make_train``: pure, so it can be vmapped over keys (note the
    module docstring on the opponent's ``lax.switch`` under ``vmap``). It
    takes only the key, so it has nothing to donate: the state is born and
    carried inside the one compiled call.

    Raises:
        TypeError: ``config`` is not a `DDPGConfig` (its own checks ran when it was built).
    """
    learner = DDPGLearner(config)

    def train_fn(key: jax.Array) -> tuple[TrainState, Metrics]:
        return learner._run_impl(learner._init_impl(key), config.num_iterations)

    return jax.jit(train_fn)


def actor_params(config: DDPGConfig, state: TrainState, variant: str, seed: int = 0) -> dict:
    """The actor parameters (``{"params": ...}``, host numpy) of one run of a `TrainState`.

    Raises:
        ValueError: ``variant`` not trained in ``config``, or ``seed`` out of range.
    """
    if variant not in config.variants:
        raise ValueError(f"variant {variant!r} was not trained; the config has {config.variants}")
    if not 0 <= seed < config.num_seeds:
        raise ValueError(f"seed must be in [0, {config.num_seeds}); got {seed}")
    i = config.variants.index(variant)
    return jax.tree.map(lambda x: np.asarray(x[seed]), state.actor[i])


def run_index(config: DDPGConfig, variant: str, seed: int = 0) -> int:
    """The run axis index ``r`` of (variant, seed) in `Metrics` and `TrainState` run-batched fields."""
    return config.variants.index(variant) * config.num_seeds + seed
