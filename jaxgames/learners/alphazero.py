"""AlphaZero-lite for two-player board games: batched Gumbel self-play, replay on device, symmetry augmentation.

Written first for Dots-and-Boxes (several board sizes, one size-agnostic
network) and generalised through a small *game adapter* (`GameAdapter`, one
per ``config.game``): the environment of each training board, the network
module, the observation and legal mask of a stored position, and the
board's symmetries as transforms. Two adapters: `DotsAndBoxesAdapter`
(``game="dots_and_boxes"``, the default; everything below describes it) and
`OnitamaAdapter` (``game="onitama"``: one 5x5 board, the canonical 1250
actions, the outcome as the value target, the left-right mirror with mirrored
cards as augmentation, ``selfplay_steps`` moves per iteration; games that
have not ended at the end of the scan go on in the next iteration, their
positions before the cut get no target and are dropped).

Source: seed 004 (AlphaZero: MCTS guided by a policy-value network, self-play,
a squared-error value loss against game outcomes and a cross-entropy policy
loss, one network), seed 000 section 6 (AlphaZero for Dots-and-Boxes with a
network that does not depend on the board size), Silver et al. 2018
(AlphaZero, Science 362:1140) and Danihelka et al. 2022 (Gumbel MuZero,
ICLR: the improved policy as the policy target, few simulations).

One *iteration* (`train_iteration`):

1. **Self-play**, for each board size in ``config.board_sizes`` (one jitted
   function per size, since shapes differ): ``num_envs`` games in parallel in
   one ``lax.scan`` over ``num_edges`` steps with auto-reset
   (`jaxgames.wrappers.auto_reset_step`). Every game of Dots-and-Boxes lasts
   exactly ``num_edges`` moves, so each slot plays one whole game per
   iteration (slots restart together); the code does not rely on it:
   positions whose game has not ended inside the scan get no value target
   and are dropped. Each move is chosen by ``mctx.gumbel_muzero_policy``
   (`jaxgames.search.mcts.network_search`) with ``num_simulations``.
2. **Targets**: the policy target is Gumbel's improved policy
   (``policy_target="gumbel"``) or the visit distribution (``"visits"``);
   the value target is the final box margin / num_boxes
   (``value_target="margin"``) or the final result +1/-1/0 (``"outcome"``),
   from the side of the position's player to move.
3. **Replay**: each size has its own device-resident ring buffer
   (`ReplayBuffer`) holding compact positions (`rules.Board`) with their
   targets.
4. **Updates**: ``updates_per_iteration`` Optax steps (AdamW, gradient
   clipping; one jitted call each, `make_update_step`), each on a minibatch of ``batch_size`` positions *from every
   size*, the sizes' losses weighted by ``size_weights`` (equal by default):
   so mixed sizes are trained in fixed proportion, whatever number of
   positions each size produces. Every sampled position is mapped through
   a uniformly drawn symmetry of its board (8 on square boards, 4
   otherwise; `jaxgames.games.dots_and_boxes.symmetry`): the board and the
   policy target are transformed together (``policy'[g(e)] = policy[e]``);
   the value is invariant.

`train` is the host driver: checkpoints (Orbax) with exact resume, a
wall-clock budget, and every ``eval_every`` iterations an evaluation
(`ProgressEvaluator`: optimal-move rate against the exact solver on 3x3,
win rates against the previous best through the arena, which then becomes
the new best if it wins at least ``gate_win_rate``, and against greedy and
random). Self-play always uses the latest parameters (AlphaZero, not
AlphaGo Zero's gated self-play); ``best_params`` are what the experiment
ships.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import pathlib
import time
from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from jaxgames.games.dots_and_boxes import rules, symmetry
from jaxgames.games.dots_and_boxes.env import DotsAndBoxes
from jaxgames.games.dots_and_boxes.rules import Board
from jaxgames.networks import dots_and_boxes as nets
from jaxgames.networks.dots_and_boxes import NetworkConfig
from jaxgames.search import mcts
from jaxgames.wrappers import auto_reset_step

POLICY_TARGETS = ("gumbel", "visits")
"""Policy targets: Gumbel MuZero's improved policy, or the root visit distribution."""

GAMES = ("dots_and_boxes", "onitama")
"""The games the learner has an adapter for (`GameAdapter`)."""

ADDED_FIELDS = {"game": "dots_and_boxes", "max_turns": 200, "selfplay_steps": 0}
"""Config fields added with the game adapters, and their defaults: `run_identity` leaves them out at
these values, so checkpoint folders of Dots-and-Boxes runs made before them stay valid."""


# ----------------------------------------------------------------------------- config
def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")
    return int(value)


def _positive_float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or not value > 0:
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class AlphaZeroConfig:
    """Settings of the learner (all fix shapes or the algorithm: a new config is a new compile).

    Attributes:
        board_sizes: ``(num_rows, num_cols)`` of each training board, e.g. ``((2, 2), (3, 3), (4, 4))``
            (None: the game's default, ``((2, 2), (3, 3))`` for Dots-and-Boxes, ``((5, 5),)``, the only
            board, for Onitama).
        size_weights: loss weight of each size (None: equal).
        network: the network module's ``NetworkConfig`` (widths; None: its defaults):
            `jaxgames.networks.dots_and_boxes.NetworkConfig` or `jaxgames.networks.onitama.NetworkConfig`.
        num_envs: games played in parallel per size and iteration (``B``).
        num_simulations: Gumbel MuZero simulations per self-play move.
        max_num_considered_actions: Gumbel's root candidates.
        gumbel_scale: scale of the Gumbel noise in self-play (exploration).
        policy_target: one of `POLICY_TARGETS`.
        value_target: one of the network module's ``VALUE_TARGETS`` (None: ``"margin"`` for
            Dots-and-Boxes, ``"outcome"`` for Onitama).
        buffer_capacity: positions kept per size (ring buffer).
        batch_size: positions per size per update.
        updates_per_iteration: Optax steps per iteration.
        learning_rate: AdamW learning rate.
        weight_decay: AdamW decoupled weight decay.
        max_grad_norm: global gradient-norm clip.
        value_loss_weight: weight of the value loss beside the policy loss.
        augment: map every sampled position through a random board symmetry.
        game: one of `GAMES`.
        max_turns: Onitama: turns before a self-play game is a draw (seed 001: 200).
        selfplay_steps: moves per game slot per iteration (0: the game's own: ``num_edges``
            for Dots-and-Boxes, a whole game; 64 for Onitama).

    Raises:
        ValueError, TypeError: a bad size, a non-positive count or rate, an
            unknown target (each message names the field and the value).
    """

    board_sizes: tuple | None = None
    size_weights: tuple | None = None
    network: Any = None
    num_envs: int = 64
    num_simulations: int = 16
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    policy_target: str = "gumbel"
    value_target: str | None = None
    buffer_capacity: int = 1 << 16
    batch_size: int = 128
    updates_per_iteration: int = 8
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    value_loss_weight: float = 1.0
    augment: bool = True
    game: str = "dots_and_boxes"
    max_turns: int = 200
    selfplay_steps: int = 0

    def __post_init__(self):
        if self.game not in GAMES:
            raise ValueError(f"game must be one of {GAMES}; got {self.game!r}")
        adapter_cls = ADAPTERS[self.game]
        for name, value in adapter_cls.defaults().items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        sizes = tuple(tuple(s) for s in self.board_sizes)
        if not sizes:
            raise ValueError("board_sizes must name at least one board")
        for s in sizes:
            if len(s) != 2:
                raise ValueError(f"each board size is (num_rows, num_cols); got {s!r}")
            adapter_cls.check_board(s)
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"board_sizes has duplicates: {sizes}")
        object.__setattr__(self, "board_sizes", tuple((int(r), int(c)) for r, c in sizes))
        if self.size_weights is not None:
            w = tuple(float(x) for x in self.size_weights)
            if len(w) != len(sizes) or any(not x > 0 for x in w):
                raise ValueError(f"size_weights must be {len(sizes)} positive numbers; got {self.size_weights!r}")
            object.__setattr__(self, "size_weights", w)
        if not isinstance(self.network, adapter_cls.nets.NetworkConfig):
            raise TypeError(f"network must be a {adapter_cls.nets.__name__}.NetworkConfig; got {type(self.network).__name__}")
        for name in ("num_envs", "num_simulations", "max_num_considered_actions", "buffer_capacity", "batch_size", "updates_per_iteration"):
            _positive_int(name, getattr(self, name))
        for name in ("learning_rate", "max_grad_norm"):
            _positive_float(name, getattr(self, name))
        for name in ("gumbel_scale", "weight_decay", "value_loss_weight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"{name} must be a non-negative number; got {v!r}")
        if self.policy_target not in POLICY_TARGETS:
            raise ValueError(f"policy_target must be one of {POLICY_TARGETS}; got {self.policy_target!r}")
        adapter_cls.nets.check_value_target(self.value_target)
        if not isinstance(self.augment, bool):
            raise TypeError(f"augment must be a bool; got {self.augment!r}")
        _positive_int("max_turns", self.max_turns)
        if isinstance(self.selfplay_steps, bool) or not isinstance(self.selfplay_steps, (int, np.integer)) or self.selfplay_steps < 0:
            raise ValueError(f"selfplay_steps must be an int >= 0; got {self.selfplay_steps!r}")

    def to_json(self) -> dict:
        """A JSON-able dict of the settings (`from_json` inverts it)."""
        d = dataclasses.asdict(self)
        d["board_sizes"] = [list(s) for s in self.board_sizes]
        d["size_weights"] = None if self.size_weights is None else list(self.size_weights)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "AlphaZeroConfig":
        """The config written by `to_json`."""
        d = dict(d)
        d["board_sizes"] = tuple(tuple(s) for s in d["board_sizes"])
        d["size_weights"] = None if d.get("size_weights") is None else tuple(d["size_weights"])
        d["network"] = ADAPTERS[d.get("game", "dots_and_boxes")].nets.NetworkConfig(**d["network"])
        return cls(**d)


# ----------------------------------------------------------------------------- game adapters
class GameAdapter:
    """What the learner needs of a game, for one config (`game_adapter`). Subclasses per game.

    A *board* is an entry of ``config.board_sizes`` (one compiled self-play per
    board). Self-play stores each position as the state's compact ``board``
    field (a rules pytree with the player to move as ``.player``), so the
    replay buffer holds small integer arrays; the network input and the legal
    mask are recomputed from it at training time (`observe`, `legal_mask`).

    Class attributes:
        nets: the network module (``NetworkConfig``, ``PolicyValueNet``,
            ``init_params``, ``check_params``, ``check_value_target``,
            ``value_scale``, ``make_evaluate``).
    """

    nets: Any = None

    def __init__(self, config: "AlphaZeroConfig"):
        self.config = config

    @classmethod
    def defaults(cls) -> dict:
        """Values of the config fields left None (``board_sizes``, ``network``, ``value_target``)."""
        raise NotImplementedError

    @classmethod
    def check_board(cls, board: tuple) -> None:
        """Raises ValueError for a board the game cannot train on."""
        raise NotImplementedError

    def tag(self, board) -> str:
        """The board's prefix in metric names (``"3x3"``)."""
        return f"{board[0]}x{board[1]}"

    def env(self, board):
        """The environment self-play and search run on (rewards in the units of the value target)."""
        raise NotImplementedError

    def selfplay_steps(self, board) -> int:
        """Moves per game slot and iteration (``config.selfplay_steps``, or the game's own when 0)."""
        return self.config.selfplay_steps or self._default_steps(board)

    def _default_steps(self, board) -> int:
        raise NotImplementedError

    def value_scale(self, board) -> float:
        """Reward units per unit of network value."""
        return float(self.nets.value_scale(self.config.value_target, getattr(self.env(board), "num_boxes", 1)))

    def example_sample(self, board) -> "Sample":
        """One zero `Sample` of the board (shapes and dtypes of the replay buffer's items)."""
        env = self.env(board)
        position = self.position(env.init(jax.random.key(0)))
        return Sample(jax.tree.map(jnp.zeros_like, position), jnp.zeros(env.num_actions, jnp.float32), jnp.float32(0.0))

    def position(self, states):
        """The compact position stored for each state (its ``board`` field)."""
        return states.board

    def observe(self, board, positions) -> jax.Array:
        """The network input of each position ``[N, ...]``, from its mover's view."""
        env = self.env(board)
        return jax.vmap(env.observe_board)(positions, positions.player)

    def legal_mask(self, board, positions) -> jax.Array:
        """bool ``[N, num_actions]``: the legal actions of each (non-terminal) position."""
        raise NotImplementedError

    def num_symmetries(self, board) -> int:
        """How many transforms `augment` draws from (the identity is transform 0)."""
        raise NotImplementedError

    def augment(self, board, samples: "Sample", g: jax.Array) -> "Sample":
        """``samples`` ``[N]`` mapped through transforms ``g`` (int32 ``[N]``): position and policy together."""
        raise NotImplementedError


class DotsAndBoxesAdapter(GameAdapter):
    """Dots-and-Boxes on every size of ``board_sizes``: the 8 (square) or 4 symmetries of `symmetry`."""

    nets = nets

    @classmethod
    def defaults(cls) -> dict:
        return {"board_sizes": ((2, 2), (3, 3)), "network": NetworkConfig(), "value_target": "margin"}

    @classmethod
    def check_board(cls, board) -> None:
        rules.validate_size(*board)

    def env(self, board) -> DotsAndBoxes:
        return DotsAndBoxes(board[0], board[1], utility_margin=self.config.value_target == "margin")

    def _default_steps(self, board) -> int:
        return self.env(board).num_actions  # a game lasts exactly num_edges moves: one game per slot

    def example_sample(self, board) -> "Sample":
        g = rules.geometry(*board)
        return Sample(rules.empty_board(*board), jnp.zeros(g.num_edges, jnp.float32), jnp.float32(0.0))

    def legal_mask(self, board, positions) -> jax.Array:
        return ~positions.edges

    def num_symmetries(self, board) -> int:
        return len(symmetry.symmetries(*board).names)

    def augment(self, board, samples, g):
        return augment(board, samples, g)


class OnitamaAdapter(GameAdapter):
    """Onitama (canonical 1250 actions, outcome values): the identity and the left-right mirror with mirrored cards."""

    @classmethod
    def _nets(cls):
        from jaxgames.networks import onitama as onitama_nets

        return onitama_nets

    @classmethod
    def defaults(cls) -> dict:
        return {"board_sizes": ((5, 5),), "network": cls.nets.NetworkConfig(), "value_target": "outcome"}

    @classmethod
    def check_board(cls, board) -> None:
        if tuple(board) != (5, 5):
            raise ValueError(f"onitama has one board, 5x5; got board size {tuple(board)!r}")

    def tag(self, board) -> str:
        return "onitama"

    def env(self, board):
        from jaxgames.games.onitama import Onitama

        return Onitama(action_space="canonical", max_turns=int(self.config.max_turns))

    def _default_steps(self, board) -> int:
        return 64

    def legal_mask(self, board, positions) -> jax.Array:
        return jax.vmap(self.env(board).legal_mask)(positions)

    def num_symmetries(self, board) -> int:
        return 2

    def augment(self, board, samples, g):
        mirrored = jax.vmap(self.nets.mirror_board)(samples.board)
        perm = jax.vmap(self.nets.mirror_actions)(samples.board)
        flip = g == 1
        board_out = jax.tree.map(lambda m, b: jnp.where(flip.reshape(flip.shape + (1,) * (b.ndim - 1)), m, b), mirrored, samples.board)
        policy = jnp.where(flip[:, None], jnp.take_along_axis(samples.policy, perm, axis=1), samples.policy)
        return Sample(board=board_out, policy=policy, value=samples.value)


class _LazyNets:
    """Class attribute that imports the Onitama network module on first use (no work at import time)."""

    def __get__(self, obj, cls):
        return cls._nets()


OnitamaAdapter.nets = _LazyNets()

ADAPTERS = {"dots_and_boxes": DotsAndBoxesAdapter, "onitama": OnitamaAdapter}
"""The adapter class of each game of `GAMES`."""


@functools.lru_cache(maxsize=16)
def game_adapter(config: "AlphaZeroConfig") -> GameAdapter:
    """The `GameAdapter` of ``config.game`` for ``config`` (one per config value)."""
    return ADAPTERS[config.game](config)


def selfplay_env(config: AlphaZeroConfig, size: tuple[int, int]):
    """The environment self-play and search run on: rewards in the units of ``config.value_target``."""
    return game_adapter(config).env(size)


# ----------------------------------------------------------------------------- replay buffer
@struct.dataclass
class ReplayBuffer:
    """A fixed-size ring of items on the device (one pytree of arrays).

    Attributes:
        data: pytree whose leaves have a leading axis ``[capacity, ...]``.
        insert: int32 ``[]``: the slot the next item goes to.
        size: int32 ``[]``: items held, at most ``capacity``.
        capacity: static int.

    When full, each new item overwrites the oldest (first in, first out).
    """

    data: Any
    insert: jax.Array
    size: jax.Array
    capacity: int = struct.field(pytree_node=False)


def buffer_init(example, capacity: int) -> ReplayBuffer:
    """An empty buffer for items shaped like ``example`` (one item, no leading axis).

    Raises:
        ValueError: ``capacity`` not a positive int.
    """
    capacity = _positive_int("capacity", capacity)
    data = jax.tree.map(lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example)
    return ReplayBuffer(data=data, insert=jnp.int32(0), size=jnp.int32(0), capacity=capacity)


def buffer_add(buffer: ReplayBuffer, items, valid: jax.Array | None = None) -> ReplayBuffer:
    """Appends the ``valid`` rows of ``items`` (leading axis ``[N]``) in order (jittable).

    Rows go to consecutive slots from ``buffer.insert`` on, wrapping around.
    If more than ``capacity`` rows are valid only the last ``capacity`` are
    kept (the others would be overwritten in the same call anyway).

    Args:
        buffer: the buffer.
        items: pytree with leaves ``[N, ...]`` matching ``buffer.data``'s item shapes.
        valid: bool ``[N]`` (default all True).
    """
    n = jax.tree.leaves(items)[0].shape[0]
    valid = jnp.ones((n,), bool) if valid is None else valid.astype(bool)
    cap = buffer.capacity
    rank = jnp.cumsum(valid.astype(jnp.int32)) - 1  # position among the valid rows
    count = jnp.sum(valid.astype(jnp.int32))
    keep = valid & (rank >= count - cap)
    slot = jnp.where(keep, (buffer.insert + rank) % cap, cap)  # cap = out of range: dropped
    data = jax.tree.map(lambda d, x: d.at[slot].set(x.astype(d.dtype), mode="drop"), buffer.data, items)
    return buffer.replace(
        data=data,
        insert=((buffer.insert + count) % cap).astype(jnp.int32),
        size=jnp.minimum(buffer.size + count, cap).astype(jnp.int32),
    )


def buffer_sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int):
    """``batch_size`` items drawn uniformly with replacement from the ``size`` held (jittable).

    An empty buffer gives copies of slot 0 (zeros); callers add before sampling.
    """
    idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda d: d[idx], buffer.data)


class Sample(NamedTuple):
    """One training position (``[N, ...]`` batched).

    Attributes:
        board: the position (the state's ``board``: for Dots-and-Boxes `rules.Board`, edges, box
            sides and owners, scores, player to move; for Onitama `jaxgames.games.onitama.rules.Board`).
        policy: float32 ``[num_actions]``: the search's policy target (0 on illegal actions).
        value: float32 ``[]``: the value target from the mover's side, in network units (``[-1, 1]``).
    """

    board: Board
    policy: jax.Array
    value: jax.Array


# ----------------------------------------------------------------------------- train state
@struct.dataclass
class TrainState:
    """Everything training carries from one iteration to the next (one checkpoint).

    Attributes:
        params: the network parameters (trained).
        opt_state: Optax state.
        best_params: the parameters that last won the evaluation against the previous best.
        buffers: one `ReplayBuffer` of `Sample` per board size.
        env_states: one batched env state ``[num_envs]`` per board size (`DotsAndBoxesState`, `OnitamaState`).
        key: uint32 ``[2]``: raw PRNG key data (raw so Orbax saves it as a plain array).
        iteration: int32 ``[]``: iterations done.
        best_iteration: int32 ``[]``: the iteration whose parameters are ``best_params``.
    """

    params: Any
    opt_state: Any
    best_params: Any
    buffers: tuple
    env_states: tuple
    key: jax.Array
    iteration: jax.Array
    best_iteration: jax.Array


def make_optimizer(config: AlphaZeroConfig) -> optax.GradientTransformation:
    """Gradient clipping, then AdamW (Loshchilov & Hutter 2019)."""
    return optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm),
        optax.adamw(config.learning_rate, weight_decay=config.weight_decay),
    )


def init_state(config: AlphaZeroConfig, key: jax.Array) -> TrainState:
    """The state before the first iteration: fresh network, empty buffers, new games (jitted once per config)."""
    return _jitted_init_state(config)(key)


@functools.lru_cache(maxsize=8)
def _jitted_init_state(config: AlphaZeroConfig):
    return jax.jit(functools.partial(_init_state, config))


def _init_state(config: AlphaZeroConfig, key: jax.Array) -> TrainState:
    game = game_adapter(config)
    net_key, env_key, key = jax.random.split(key, 3)
    params = game.nets.init_params(config.network, net_key)
    env_states = []
    for i, size in enumerate(config.board_sizes):
        env = game.env(size)
        keys = jax.random.split(jax.random.fold_in(env_key, i), config.num_envs)
        env_states.append(jax.vmap(env.init)(keys))
    buffers = tuple(buffer_init(game.example_sample(s), config.buffer_capacity) for s in config.board_sizes)
    return TrainState(
        params=params,
        opt_state=make_optimizer(config).init(params),
        best_params=params,
        buffers=buffers,
        env_states=tuple(env_states),
        key=jax.random.key_data(key),
        iteration=jnp.int32(0),
        best_iteration=jnp.int32(0),
    )


# ----------------------------------------------------------------------------- self-play
def make_selfplay(config: AlphaZeroConfig, size: tuple[int, int]) -> Callable:
    """The self-play of one board size (pure; jit it).

    Returns:
        ``selfplay(params, env_states, buffer, key) -> (env_states, buffer, stats)``:
        plays `GameAdapter.selfplay_steps` moves (``num_edges`` for
        Dots-and-Boxes) in each of the ``num_envs`` games (one
        ``lax.scan``, auto-reset), computes the targets, adds the positions
        whose game ended to ``buffer``; ``stats`` is a dict of float32
        scalars (``positions``, ``games``, ``root_value``, ``first_player_margin``:
        seat 0's mean final reward).
    """
    game = game_adapter(config)
    env = game.env(size)
    T, B = game.selfplay_steps(size), config.num_envs
    evaluate = game.nets.make_evaluate(config.network, config.value_target)
    scale = game.value_scale(size)
    step_fn = jax.vmap(functools.partial(auto_reset_step, env))

    def selfplay(params, states, buffer, key):
        def one_move(states, k):
            search_key, step_key = jax.random.split(k)
            out = mcts.network_search(
                env, states, search_key, evaluate=evaluate, params=params,
                num_simulations=config.num_simulations, algorithm="gumbel",
                max_num_considered_actions=config.max_num_considered_actions, gumbel_scale=config.gumbel_scale,
            )
            summary = out.search_tree.summary()
            target = out.action_weights if config.policy_target == "gumbel" else summary.visit_probs
            target = jnp.where(states.legal_action_mask, target, 0.0)
            target = target / jnp.maximum(jnp.sum(target, axis=-1, keepdims=True), 1e-12)
            nxt, outcome = step_fn(states, out.action, jax.random.split(step_key, B))
            done = outcome.terminated | outcome.truncated
            return nxt, (game.position(states), target, outcome.rewards, done, summary.value)

        states, (boards, targets, rewards, done, root_value) = jax.lax.scan(one_move, states, jax.random.split(key, T))

        # Returns from every step to the end of its game, for both players (reverse scan).
        def back(carry, x):
            ret_next, ended_next = carry
            r, d = x
            ret = r + jnp.where(d[:, None], 0.0, ret_next)
            ended = d | ended_next
            return (ret, ended), (ret, ended)

        init = (jnp.zeros((B, 2), jnp.float32), jnp.zeros((B,), bool))
        _, (returns, ended) = jax.lax.scan(back, init, (rewards, done), reverse=True)
        mover = boards.player
        value = jnp.take_along_axis(returns, mover[..., None], axis=-1)[..., 0] / scale
        samples = Sample(board=boards, policy=targets, value=value)
        flat = jax.tree.map(lambda x: x.reshape((T * B,) + x.shape[2:]), samples)
        buffer = buffer_add(buffer, flat, ended.reshape(-1))
        games = jnp.sum(done)
        first = jnp.sum(jnp.where(done, rewards[:, :, 0], 0.0)) / jnp.maximum(games, 1)  # seat 0's final reward
        stats = dict(
            positions=jnp.sum(ended).astype(jnp.float32),
            games=games.astype(jnp.float32),
            root_value=jnp.mean(root_value) / scale,
            first_player_margin=first,
        )
        return states, buffer, stats

    return selfplay


# ----------------------------------------------------------------------------- updates
def augment(size: tuple[int, int], samples: Sample, g: jax.Array) -> Sample:
    """``samples`` (``[N]``) mapped through symmetries ``g`` (int32 ``[N]``) of the board.

    The board (edges, box sides and owners) and the policy target transform
    together (``policy'[..., g(e)] = policy[..., e]``,
    `symmetry.transform_edges`); the value target is invariant.
    """
    sym = symmetry.symmetries(*size)
    board = jax.vmap(lambda b, k: symmetry.transform_board(sym, b, k))(samples.board, g)
    policy = jax.vmap(lambda p, k: symmetry.transform_edges(sym, p, k))(samples.policy, g)
    return Sample(board=board, policy=policy, value=samples.value)


def sample_observations(config: AlphaZeroConfig, size: tuple[int, int], samples: Sample) -> jax.Array:
    """The network input of each sampled position (mover's view): float32 ``[N, R + 1, C + 1, 5]``
    for Dots-and-Boxes, ``[N, 5, 5, 9]`` for Onitama."""
    return game_adapter(config).observe(size, samples.board)


def losses(config: AlphaZeroConfig, params, size: tuple[int, int], samples: Sample) -> dict:
    """Policy cross-entropy and value squared error of one size's batch (float32 scalars).

    ``policy_loss = -sum_a target(a) log softmax(masked logits)(a)``, the mean
    over the batch; ``value_loss = mean (v - z)^2`` (seed 004's AlphaZero
    losses); ``policy_accuracy``: the share of positions where the network's
    argmax is the target's argmax.
    """
    game = game_adapter(config)
    obs = sample_observations(config, size, samples)
    logits, value = game.nets.PolicyValueNet(config.network).apply(params, obs)
    legal = game.legal_mask(size, samples.board)
    logits = jnp.where(legal, logits, jnp.finfo(jnp.float32).min)
    logp = jax.nn.log_softmax(logits, axis=-1)
    policy_loss = -jnp.mean(jnp.sum(jnp.where(legal, samples.policy * logp, 0.0), axis=-1))
    value_loss = jnp.mean((value - samples.value) ** 2)
    accuracy = jnp.mean(jnp.argmax(logits, -1) == jnp.argmax(samples.policy, -1))
    return dict(policy_loss=policy_loss, value_loss=value_loss, policy_accuracy=accuracy)


def make_update_step(config: AlphaZeroConfig, *, batch_sharding=None) -> Callable:
    """One gradient step (pure; jit it).

    With ``batch_sharding`` (`jaxgames.parallel.batch_sharding`) each sampled
    minibatch is constrained to it, so every device computes the loss and
    gradients of its slice of the positions and XLA all-reduces the
    gradients (data parallelism; the parameters stay replicated). The
    minibatch itself (indices, symmetries) is drawn exactly as without it.

    `train_iteration` calls it ``updates_per_iteration`` times from Python
    rather than scanning over the steps: XLA on CPU runs the convolution
    gradients about 18 times slower inside a ``lax.scan``/``while`` loop than
    in a jitted call of its own (measured here: 0.43 s against 0.024 s per
    step of 2 x 128 positions, 32 channels, 4 blocks).

    Returns:
        ``update_step(params, opt_state, buffers, key) -> (params, opt_state, metrics)``:
        a minibatch of ``batch_size`` positions from every size's buffer,
        each mapped through a random symmetry (if ``augment``); metrics are
        float32 scalars (``loss``, ``policy_loss``, ``value_loss``,
        ``policy_accuracy``, ``grad_norm``, and per size ``"{R}x{C}/..."``,
        `GameAdapter.tag`).
    """
    game = game_adapter(config)
    optimizer = make_optimizer(config)
    sizes = config.board_sizes
    weights = np.asarray(config.size_weights or (1.0,) * len(sizes), np.float64)
    weights = weights / weights.sum()
    num_syms = [game.num_symmetries(s) for s in sizes]

    def loss_fn(params, batches, g_keys):
        total, metrics = 0.0, {}
        agg = dict(policy_loss=0.0, value_loss=0.0, policy_accuracy=0.0)
        for i, (size, batch) in enumerate(zip(sizes, batches)):
            if config.augment:
                g = jax.random.randint(g_keys[i], (config.batch_size,), 0, num_syms[i])
                batch = game.augment(size, batch, g)
            m = losses(config, params, size, batch)
            total = total + weights[i] * (m["policy_loss"] + config.value_loss_weight * m["value_loss"])
            for k, v in m.items():
                metrics[f"{game.tag(size)}/{k}"] = v
                agg[k] = agg[k] + weights[i] * v
        metrics.update(agg)
        metrics["loss"] = total
        return total, metrics

    def update_step(params, opt_state, buffers, key):
        keys = jax.random.split(key, 2 * len(sizes))
        batches = [buffer_sample(b, keys[i], config.batch_size) for i, b in enumerate(buffers)]
        if batch_sharding is not None:
            batches = [jax.lax.with_sharding_constraint(b, batch_sharding) for b in batches]
        grads, metrics = jax.grad(loss_fn, has_aux=True)(params, batches, keys[len(sizes):])
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return params, opt_state, metrics

    return update_step


class _Compiled(NamedTuple):
    selfplay: tuple
    update_step: Callable


@functools.lru_cache(maxsize=8)
def _compiled(config: AlphaZeroConfig, mesh=None) -> _Compiled:
    """The jitted self-play (one per size) and update of a config, built once per config value (and mesh)."""
    if mesh is not None:
        from jaxgames import parallel

        rep, bat = parallel.replicated(mesh), parallel.batch_sharding(mesh)
        return _Compiled(
            selfplay=tuple(
                jax.jit(make_selfplay(config, s), in_shardings=(rep, bat, rep, rep), out_shardings=(bat, rep, rep))
                for s in config.board_sizes
            ),
            update_step=jax.jit(make_update_step(config, batch_sharding=bat), in_shardings=rep, out_shardings=rep),
        )
    return _Compiled(
        selfplay=tuple(jax.jit(make_selfplay(config, s)) for s in config.board_sizes),
        update_step=jax.jit(make_update_step(config)),
    )


def train_iteration(config: AlphaZeroConfig, state: TrainState, *, mesh=None) -> tuple[TrainState, dict]:
    """One iteration: self-play on every size, then the updates (see the module docstring).

    Deterministic given ``state`` (its key), so a resumed run repeats a straight one exactly.

    Data parallelism: with ``mesh`` (`jaxgames.parallel.make_mesh`) the
    ``num_envs`` self-play games of each size are split over the devices
    (``env_states`` sharded along the game axis), and so is every update's
    minibatch; the parameters, optimizer state and replay buffers are
    replicated, and XLA all-reduces the gradients. Versus one device:
    self-play runs the same per-game program with the same per-game keys, so
    its games agree, up to float32 rounding of the network's convolutions
    (XLA may tile a per-device batch of another size differently), which
    can tip an MCTS choice between near-equal actions only rarely; the
    losses and gradients are means over the minibatch summed per device then
    across devices, another float32 summation order. So the result equals
    one device up to float32 rounding, not bitwise (`tests/test_parallel.py`
    checks one iteration of a tiny config with a tolerance). The returned
    state stays on the mesh.

    Raises:
        ValueError: with ``mesh``, ``num_envs`` or ``batch_size`` not a
            multiple of the number of devices.

    Returns:
        ``(state, metrics)``: metrics as Python floats (losses, per-size
        self-play statistics as ``"{R}x{C}/..."``, ``buffer_size``, seconds).
    """
    if mesh is not None:
        from jaxgames import parallel

        d = parallel.num_shards(mesh)
        for name in ("num_envs", "batch_size"):
            if getattr(config, name) % d:
                raise ValueError(f"{name}={getattr(config, name)} must be a multiple of the mesh's {d} devices")
        state = parallel.replicate(state.replace(env_states=()), mesh).replace(
            env_states=parallel.shard_batch(state.env_states, mesh)
        )
    fns = _compiled(config, mesh)
    key = jax.random.wrap_key_data(state.key)
    key, update_key, *play_keys = jax.random.split(key, 2 + len(config.board_sizes))
    buffers, env_states, metrics = list(state.buffers), list(state.env_states), {}
    start = time.perf_counter()
    for i, size in enumerate(config.board_sizes):
        env_states[i], buffers[i], stats = fns.selfplay[i](state.params, env_states[i], buffers[i], play_keys[i])
        tag = game_adapter(config).tag(size)
        for k, v in stats.items():
            metrics[f"{tag}/{k}"] = v
        metrics[f"{tag}/buffer_size"] = buffers[i].size
    jax.block_until_ready(buffers)
    selfplay_seconds = time.perf_counter() - start
    params, opt_state, steps = state.params, state.opt_state, []
    for k in jax.random.split(update_key, config.updates_per_iteration):
        params, opt_state, m = fns.update_step(params, opt_state, tuple(buffers), k)
        steps.append(m)
    metrics.update(jax.tree.map(lambda *xs: jnp.mean(jnp.stack(xs)), *steps))  # means over the steps
    state = state.replace(
        params=params,
        opt_state=opt_state,
        buffers=tuple(buffers),
        env_states=tuple(env_states),
        key=jax.random.key_data(key),
        iteration=state.iteration + 1,
    )
    out = {k: float(v) for k, v in jax.device_get(metrics).items()}
    out["selfplay_seconds"] = selfplay_seconds
    out["update_seconds"] = time.perf_counter() - start - selfplay_seconds
    return state, out


# ----------------------------------------------------------------------------- evaluation helpers
def random_positions(num_rows: int, num_cols: int, key: jax.Array, num_positions: int) -> Any:
    """``num_positions`` non-terminal positions of uniformly random play (batched `DotsAndBoxesState`).

    Each position is the board after ``k`` uniformly random moves, ``k``
    uniform in ``[0, num_edges - 1]`` (so every stage of the game is
    equally represented); scores and the player to move follow the moves.
    """
    env = DotsAndBoxes(num_rows, num_cols)
    E = env.num_actions
    k_order, k_stop = jax.random.split(key)
    orders = jax.vmap(lambda k: jax.random.permutation(k, E))(jax.random.split(k_order, num_positions)).astype(jnp.int32)
    stops = jax.random.randint(k_stop, (num_positions,), 0, E)

    def one(order, stop):
        def body(s, t):
            nxt = env.step(s, order[t])
            return jax.tree.map(lambda a, b: jnp.where(t < stop, a, b), nxt, s), None

        s, _ = jax.lax.scan(body, env.init(jax.random.key(0)), jnp.arange(E))
        return s

    return jax.jit(jax.vmap(one))(orders, stops)


def optimal_move_rate(solution, edges, actions) -> tuple[float, np.ndarray]:
    """Share of ``actions`` that keep the exact value of their position (seed 000 section 4's solver).

    Args:
        solution: a `solver.Solution` of the board.
        edges: bool ``[N, num_edges]``: the positions (drawn edges).
        actions: int ``[N]``: the move played in each.

    Returns:
        ``(rate, optimal)``: the share, and bool ``[N]`` per position. A
        move is optimal when its value ``g + V(child)`` or ``-V(child)``
        equals the position's value (the maximum over legal moves).
    """
    edges = np.asarray(edges, bool)
    actions = np.asarray(actions, np.int64)
    values = []
    for start in range(0, len(edges), 4096):  # eager chunks: the solver's JAX lookup, no jit (its table is cached on first use)
        values.append(np.asarray(solution.batch_action_values(jnp.asarray(edges[start:start + 4096]))))
    av = np.concatenate(values) if values else np.zeros((0, edges.shape[-1]), np.int32)
    from jaxgames.games.dots_and_boxes.search.solver import ILLEGAL

    best = np.where(av == ILLEGAL, np.iinfo(np.int32).min, av).max(axis=1)
    chosen = av[np.arange(len(actions)), actions]
    optimal = (chosen != ILLEGAL) & (chosen == best)
    return (float(optimal.mean()) if len(optimal) else float("nan")), optimal


def wilson_interval(successes: float, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score 95% interval of a binomial proportion (Wilson 1927, JASA 22:209).

    Returns ``(nan, nan)`` for no trials. ``successes`` may be fractional (draws counted as 1/2).
    """
    if trials <= 0:
        return float("nan"), float("nan")
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))  # contains p despite rounding


def elo_difference(score: float, games: int) -> float:
    """Elo difference implied by a mean score (wins + draws/2 over games), clipped to half a game.

    ``400 log10(s / (1 - s))`` (the logistic Elo model), with ``s`` kept in
    ``[1/(2 games), 1 - 1/(2 games)]`` so a clean sweep gives a finite number.
    """
    s = min(max(score, 0.5 / games), 1 - 0.5 / games)
    return 400.0 * math.log10(s / (1 - s))


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Settings of the evaluation during training (`ProgressEvaluator`).

    Attributes:
        board: ``(num_rows, num_cols)`` of the arena games and the optimal-move
            rate (must be solvable by `solver.solve`: at most 31 edges, e.g. 3x3).
        num_positions: random-play positions for the optimal-move rate.
        num_games: arena games per opponent (first player alternating).
        num_simulations: search simulations per move of the agents evaluated.
        gate_win_rate: score (wins + draws/2) against the previous best from
            which the current parameters become the new best.
        opponents: fixed opponents among ``"greedy"``, ``"random"``.
    """

    board: tuple = (3, 3)
    num_positions: int = 1000
    num_games: int = 64
    num_simulations: int = 16
    gate_win_rate: float = 0.55
    opponents: tuple = ("greedy", "random")

    def __post_init__(self):
        rules.validate_size(*self.board)
        for name in ("num_positions", "num_games", "num_simulations"):
            _positive_int(name, getattr(self, name))
        if not 0.0 <= self.gate_win_rate <= 1.0:
            raise ValueError(f"gate_win_rate must be in [0, 1]; got {self.gate_win_rate!r}")
        for o in self.opponents:
            if o not in ("greedy", "random"):
                raise ValueError(f"unknown fixed opponent {o!r}; choose from ('greedy', 'random')")


class ProgressEvaluator:
    """The evaluation that `train` runs every ``eval_every`` iterations.

    Measures, on ``eval_config.board``: the optimal-move rate of the raw
    network policy and of the search (`AlphaZeroAgent`) on a fixed set of
    random-play positions (against the exact solver); the score of the
    current parameters against the previous best (both sampling their root
    move, Gumbel noise of scale 1, so the games differ) and against each
    fixed opponent (deterministic search) through the arena
    (`jaxgames.evaluation.arena.play_match`), with the Elo difference each
    implies.

    Args:
        config: the learner's config (network, value target).
        eval_config: `EvalConfig`.
        seed: the positions and the arena games are drawn from it (fixed
            over the run, so the curves compare like with like).

    Raises:
        ValueError: a board the solver cannot solve in memory.
    """

    def __init__(self, config: AlphaZeroConfig, eval_config: EvalConfig = EvalConfig(), *, seed: int = 0):
        from jaxgames.games.dots_and_boxes.search import solver

        self.config, self.eval_config, self.seed = config, eval_config, seed
        R, C = eval_config.board
        solver.check_size(R, C)
        self.solution = solver.solve(R, C)
        self.env = DotsAndBoxes(R, C)
        self.positions = random_positions(R, C, jax.random.key(seed), eval_config.num_positions)
        self.edges = np.asarray(self.positions.board.edges)

    def _agent(self, params, name, *, search=True, gumbel_scale=0.0):
        from jaxgames.agents.alphazero import AlphaZeroAgent

        return AlphaZeroAgent(
            params, network=self.config.network, value_target=self.config.value_target,
            num_simulations=self.eval_config.num_simulations, search=search, name=name, gumbel_scale=gumbel_scale,
        )

    def __call__(self, state: TrainState) -> tuple[dict, bool]:
        """Metrics of ``state`` and whether its parameters become the new best.

        Returns:
            ``(metrics, promote)``: floats ``optimal_rate_raw``, ``optimal_rate_search``,
            ``score_vs_best``, ``elo_vs_best``, ``score_vs_{opponent}``, ``elo_vs_{opponent}``.
        """
        from jaxgames.agents.dots_and_boxes import GreedyAgent
        from jaxgames.agents.simple import RandomAgent
        from jaxgames.evaluation import arena

        ec = self.eval_config
        it = int(state.iteration)
        key = jax.random.fold_in(jax.random.key(self.seed + 1), it)
        out = {}
        batch = jax.tree.map(jnp.asarray, self.positions)
        n = ec.num_positions
        for search in (False, True):
            agent = self._agent(state.params, "az", search=search)
            actions = agent._compiled(self.env)(batch, jax.random.split(jax.random.fold_in(key, int(search)), n), batch.current_player)
            rate, _ = optimal_move_rate(self.solution, self.edges, np.asarray(actions))
            out["optimal_rate_search" if search else "optimal_rate_raw"] = rate
        # Against the previous best both sides sample their root move (Gumbel noise, scale 1):
        # two deterministic searches would replay the same two games num_games / 2 times each.
        sampled = self._agent(state.params, "current", gumbel_scale=1.0)
        opponents = {"best": self._agent(state.best_params, "best", gumbel_scale=1.0)}
        for o in ec.opponents:
            opponents[o] = GreedyAgent() if o == "greedy" else RandomAgent()
        current = self._agent(state.params, "current")
        promote = False
        for j, (name, opp) in enumerate(opponents.items()):
            me = sampled if name == "best" else current
            res = arena.play_match(self.env, me, opp, ec.num_games, jax.random.fold_in(key, 10 + j), max_steps=self.env.num_actions + 1)
            score = (res.wins + 0.5 * (res.draws + res.timeouts)) / ec.num_games
            out[f"score_vs_{name}"] = score
            out[f"elo_vs_{name}"] = elo_difference(score, ec.num_games)
            if name == "best":
                promote = score >= ec.gate_win_rate
        return out, promote


class ArenaEvaluator:
    """An evaluation for any game through the arena: the gate against the previous best, and fixed opponents.

    Every call plays, through `jaxgames.evaluation.arena.play_match` (seats
    alternating), the current parameters against the previous best (both
    sampling their root move, Gumbel noise of scale 1, so the games differ)
    and against each fixed opponent (the current parameters with a
    deterministic search). The current parameters become the new best when
    their score (wins + draws/2) against the best is at least ``gate_win_rate``.
    The games' keys depend only on ``seed`` and the iteration (exact resume).

    Args:
        config: the learner's config (network, value target).
        env: the arena's environment (e.g. ``Onitama()``, canonical actions).
        opponents: fixed opponents by name (agents of `jaxgames.agents`).
        num_games: games per opponent.
        num_simulations: search simulations per move of the agents evaluated.
        gate_win_rate: the promotion threshold in ``[0, 1]``.
        seed: seed of the games.
        max_steps: turns before the arena stops a game (default ``env.max_turns + 1``
            where the env has a turn limit, else 1000).

    Raises:
        ValueError: a non-positive count, a threshold outside ``[0, 1]``.
    """

    def __init__(self, config: AlphaZeroConfig, env, opponents: dict, *, num_games: int = 32, num_simulations: int = 16,
                 gate_win_rate: float = 0.55, seed: int = 0, max_steps: int | None = None):
        self.config, self.env, self.opponents = config, env, dict(opponents)
        self.num_games = _positive_int("num_games", num_games)
        self.num_simulations = _positive_int("num_simulations", num_simulations)
        if not 0.0 <= gate_win_rate <= 1.0:
            raise ValueError(f"gate_win_rate must be in [0, 1]; got {gate_win_rate!r}")
        self.gate_win_rate, self.seed = float(gate_win_rate), int(seed)
        self.max_steps = int(max_steps or getattr(env, "max_turns", 999) + 1)

    def agent(self, params, name: str, *, gumbel_scale: float = 0.0):
        """The `AlphaZeroAgent` of ``params`` with this evaluation's simulations."""
        from jaxgames.agents.alphazero import AlphaZeroAgent

        return AlphaZeroAgent(params, network=self.config.network, value_target=self.config.value_target,
                              num_simulations=self.num_simulations, name=name, gumbel_scale=gumbel_scale)

    def __call__(self, state: TrainState) -> tuple[dict, bool]:
        """``(metrics, promote)``: ``score_vs_{name}``, ``elo_vs_{name}``, ``win_rate_vs_{name}`` for ``best`` and each opponent."""
        from jaxgames.evaluation import arena

        key = jax.random.fold_in(jax.random.key(self.seed + 1), int(state.iteration))
        opponents = {"best": self.agent(state.best_params, "best", gumbel_scale=1.0), **self.opponents}
        sampled = self.agent(state.params, "current", gumbel_scale=1.0)
        current = self.agent(state.params, "current")
        out, promote = {}, False
        for j, (name, opp) in enumerate(opponents.items()):
            me = sampled if name == "best" else current
            res = arena.play_match(self.env, me, opp, self.num_games, jax.random.fold_in(key, 10 + j), max_steps=self.max_steps)
            score = (res.wins + 0.5 * (res.draws + res.timeouts)) / self.num_games
            out[f"score_vs_{name}"] = score
            out[f"win_rate_vs_{name}"] = res.wins / self.num_games
            out[f"elo_vs_{name}"] = elo_difference(score, self.num_games)
            if name == "best":
                promote = score >= self.gate_win_rate
        return out, promote


# ----------------------------------------------------------------------------- driver
class TrainResult(NamedTuple):
    """What `train` returns.

    Attributes:
        state: the final `TrainState`.
        history: one dict per iteration (metrics; evaluation metrics where evaluated).
        resumed_from: the iteration the run resumed from (0 for a fresh run).
        stopped_by_budget: the wall-clock budget ended the run early.
    """

    state: TrainState
    history: list
    resumed_from: int
    stopped_by_budget: bool

    def length_text(self) -> str:
        """The run's length for a README: ``"N iterations in all"``, then `` (resumed at iteration R)``
        and `` (stopped by the wall-clock budget)`` where they apply (N: rows of ``history``)."""
        return (f"{len(self.history)} iterations in all"
                + (f" (resumed at iteration {self.resumed_from})" if self.resumed_from else "")
                + (" (stopped by the wall-clock budget)" if self.stopped_by_budget else ""))


def reported_params(state: TrainState) -> tuple[Any, str]:
    """The parameters a run reports (and ships), and a phrase naming them for its README.

    The last best of the arena gate (``best_params``) if the gate ever promoted
    (``best_iteration > 0``); otherwise the latest ``params``.

    Args:
        state: a `TrainState` (e.g. `TrainResult.state`).

    Returns:
        ``(params, source)``: a parameter pytree and, e.g., ``"best parameters (iteration 40, the last
        promoted by the arena gate)"`` or ``"latest parameters (iteration 8; the gate never promoted)"``.
    """
    if int(state.best_iteration) > 0:
        return state.best_params, f"best parameters (iteration {int(state.best_iteration)}, the last promoted by the arena gate)"
    return state.params, f"latest parameters (iteration {int(state.iteration)}; the gate never promoted)"


def training_seconds(history: list) -> float:
    """Seconds of self-play and updates over a run's ``history`` rows (``selfplay_seconds`` + ``update_seconds``;
    evaluation and checkpointing excluded): the training budget recorded beside shipped weights."""
    return float(sum(r.get("selfplay_seconds", 0) + r.get("update_seconds", 0) for r in history))


def run_identity(config: AlphaZeroConfig, seed: int) -> dict:
    """The flat settings a checkpoint folder is tied to (``network.channels``, ..., ``seed``).

    The fields of `ADDED_FIELDS` are left out at their defaults, so a
    Dots-and-Boxes folder written before they existed keeps its identity.
    """
    d = config.to_json()
    for name, default in ADDED_FIELDS.items():
        if d.get(name) == default:
            del d[name]
    network = d.pop("network")
    d.update({f"network.{k}": v for k, v in network.items()})
    d["seed"] = int(seed)
    return d


def clear_other_run(directory: str | os.PathLike, config: AlphaZeroConfig, seed: int) -> None:
    """Deletes the checkpoint steps in ``directory`` if they are another run's (another config or seed).

    What an experiment's ``overwrite=true`` does to its checkpoint folder before
    `train`: a folder of this very run (its `run_identity`) is kept, so the run
    resumes; a missing folder is left missing.

    Raises:
        jaxgames.experiment.ResultsDirLocked: another live run uses ``directory``.
    """
    if pathlib.Path(directory).exists():
        from jaxgames.checkpoint import Checkpointer

        Checkpointer(directory, run_identity(config, seed), overwrite=True).close()


HISTORY_NAME = "history.json"
"""The per-iteration metrics beside the checkpoints (rows past the restored step are dropped on resume)."""


def train(
    config: AlphaZeroConfig,
    *,
    num_iterations: int,
    seed: int = 0,
    directory: str | os.PathLike | None = None,
    checkpoint_every: int = 1,
    eval_every: int = 0,
    evaluator: Callable[[TrainState], tuple[dict, bool]] | None = None,
    budget_seconds: float | None = None,
    progress: bool = False,
    on_iteration: Callable[[int, dict], None] | None = None,
    max_to_keep: int = 2,
    mesh=None,
    initial_params=None,
) -> TrainResult:
    """Trains for ``num_iterations`` iterations, resuming from ``directory``'s latest checkpoint.

    Checkpoints are `jaxgames.checkpoint.Checkpointer` steps (Orbax; the run's
    identity, ``config`` and ``seed``, saved beside them as ``config.json``;
    a lock against a second live run; a damaged latest step set aside for
    the previous one). The metrics go to ``history.json`` in the same folder,
    written before each checkpoint, so a resume keeps exactly the rows up to
    the restored step. Everything an iteration does depends only on the
    restored `TrainState` (the PRNG key is in it) and the evaluation's keys
    on the iteration number, so a resumed run ends with exactly the state and
    history of a run that never stopped (tested).

    Args:
        config: `AlphaZeroConfig`.
        num_iterations: total iterations of the run (a resumed run does the rest;
            one already reached, e.g. 0, restores the latest checkpoint and trains nothing).
        seed: PRNG seed.
        directory: the checkpoint folder (None: no checkpoints).
        checkpoint_every: save every this many iterations (and at the last
            one, and when the budget stops the run).
        eval_every: call ``evaluator`` every this many iterations (0: never).
        evaluator: ``evaluator(state) -> (metrics, promote)`` (default for
            Dots-and-Boxes: `ProgressEvaluator` on 3x3 when ``eval_every > 0``;
            other games must pass one, e.g. `ArenaEvaluator`); ``promote``
            makes the current parameters the new ``best_params``.
        budget_seconds: stop (after checkpointing) once an iteration ends
            past this wall-clock budget; None: no budget.
        progress: show a tqdm bar.
        on_iteration: called as ``on_iteration(iteration, metrics)`` after each iteration.
        max_to_keep: checkpoint steps kept.
        mesh: None, or a `jax.sharding.Mesh` to train data-parallel on
            (`train_iteration`; equal to one device up to float32 rounding).
            Checkpoints hold the sharded state (Orbax writes each shard).
        initial_params: None (a fresh network), or parameters of exactly
            ``config.network``'s shapes to start from (a fine-tune: they become
            the current and the best parameters at iteration 0; the optimiser
            state starts fresh). A restored checkpoint holds its own and wins.

    Returns:
        A `TrainResult`.

    Raises:
        ValueError: a negative ``num_iterations`` or ``eval_every``, a
            non-positive ``checkpoint_every`` or budget, ``eval_every > 0``
            without an evaluator for a game other than Dots-and-Boxes.
        jaxgames.experiment.ConfigMismatch: ``directory`` holds a run of another
            config or seed (e.g. another network shape; the message lists the
            differences; nothing is written).
        jaxgames.experiment.ResultsDirLocked: another live run uses ``directory``.
    """
    if isinstance(num_iterations, bool) or not isinstance(num_iterations, (int, np.integer)) or num_iterations < 0:
        raise ValueError(f"num_iterations must be an int >= 0; got {num_iterations!r}")
    num_iterations = int(num_iterations)
    checkpoint_every = _positive_int("checkpoint_every", checkpoint_every)
    if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 0:
        raise ValueError(f"eval_every must be a non-negative int; got {eval_every!r}")
    if budget_seconds is not None:
        _positive_float("budget_seconds", budget_seconds)
    if eval_every and evaluator is None and config.game != "dots_and_boxes":
        raise ValueError(f"eval_every={eval_every} needs an evaluator for {config.game} (e.g. ArenaEvaluator)")
    if initial_params is not None:
        game_adapter(config).nets.check_params(initial_params, config.network, what="initial_params")
        initial_params = jax.tree.map(jnp.asarray, initial_params)
    started = time.perf_counter()
    ckpt = None
    if directory is not None:
        from jaxgames.checkpoint import Checkpointer

        ckpt = Checkpointer(directory, run_identity(config, seed), max_to_keep=max_to_keep)
    try:
        if eval_every and evaluator is None:
            evaluator = ProgressEvaluator(config, seed=seed)
        state = init_state(config, jax.random.key(seed))
        if initial_params is not None:
            state = state.replace(params=initial_params, best_params=initial_params)
        history: list = []
        resumed_from = 0
        if ckpt is not None:
            restored = ckpt.latest(template=state)
            if restored is not None:
                resumed_from, state = restored
                # Orbax hands back arrays committed to a device; jit caches compiled code per
                # input commitment, so take uncommitted copies like a fresh run's (no recompile).
                # The template (a fresh, unsharded state) makes every restored leaf whole on this
                # process, also on several processes (`Checkpointer`), so the host copy works.
                state = jax.tree.map(lambda x: jnp.asarray(np.asarray(x)), state)
                game_adapter(config).nets.check_params(state.params, config.network, what=f"checkpoint {resumed_from} in {directory}")
                history = [h for h in _read_history(ckpt.directory) if h.get("iteration", 0) <= resumed_from]
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=num_iterations, initial=resumed_from, desc="alphazero", unit="it")
        stopped = False
        it = int(state.iteration)
        while it < num_iterations:
            state, metrics = train_iteration(config, state, mesh=mesh)
            it = int(state.iteration)
            metrics["iteration"] = it
            if eval_every and it % eval_every == 0:
                ev, promote = evaluator(state)
                metrics.update(ev)
                if promote:
                    state = state.replace(best_params=state.params, best_iteration=jnp.int32(it))
            metrics["best_iteration"] = int(state.best_iteration)
            history.append(metrics)
            over_budget = budget_seconds is not None and time.perf_counter() - started >= budget_seconds
            if ckpt is not None and (it % checkpoint_every == 0 or it == num_iterations or over_budget):
                from jaxgames.experiment import atomic_write_bytes

                if jax.process_index() == 0:  # several processes: one writer (every process saves the checkpoint)
                    atomic_write_bytes(ckpt.directory / HISTORY_NAME, (json.dumps(history) + "\n").encode())
                ckpt.save(it, state)
            if on_iteration is not None:
                on_iteration(it, metrics)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{metrics['loss']:.3f}", value=f"{metrics['value_loss']:.3f}")
            if over_budget and it < num_iterations:
                stopped = True
                break
        if bar is not None:
            bar.close()
    finally:
        if ckpt is not None:
            ckpt.close()
    return TrainResult(state=state, history=history, resumed_from=resumed_from, stopped_by_budget=stopped)


def _read_history(directory: pathlib.Path) -> list:
    try:
        rows = json.loads((directory / HISTORY_NAME).read_text())
        return rows if isinstance(rows, list) else []
    except (OSError, ValueError):
        return []


