"""AlphaZero for two-player board games: Gumbel self-play on device, replay, symmetry augmentation.

Sources: Silver et al. 2018, "A general reinforcement learning algorithm that
masters chess, shogi, and Go through self-play" (Science 362:1140), after
Silver et al. 2017, "Mastering the game of Go without human knowledge"
(Nature 550:354): one policy-value network, search-guided self-play with the
latest parameters, the loss ``(z - v)^2 - pi . log p`` plus weight decay.
Danihelka et al. 2022, "Policy improvement by planning with Gumbel" (ICLR;
Gumbel MuZero): the improved policy as the policy target, few simulations.
El Kaddouri, Rys and Gao, "Multi Agent Reinforcement Learning With Dots And
Boxes", section 6: one network for every board size.

`AlphaZeroLearner` is the learner of the training spine
(`jaxgames.learners.loop.train`, which owns checkpoints, resume, budget,
history and the evaluation hooks of `jaxgames.evaluation.alphazero`). One
iteration (`train_iteration`):

1. **Self-play**, per board of ``board_sizes`` (one jitted `make_selfplay`
   each, since shapes differ): ``B = num_envs`` games, ``T`` moves in one
   ``lax.scan`` with auto-reset, every move chosen by
   ``mctx.gumbel_muzero_policy`` (`jaxgames.search.mcts.network_search`).
   Positions whose game ends inside the scan get a policy target ``pi``
   (float32 ``[A]``; the improved policy or the visit distribution) and a
   value target ``z`` (float32 ``[]``, the mover's final box margin /
   num_boxes or outcome +1/-1/0) and go into the board's replay buffer
   (`jaxgames.learners.buffer`); the others are dropped.
2. **Updates**: ``updates_per_iteration`` AdamW steps, each on ``batch_size``
   positions of every board, the boards' losses weighted by ``size_weights``,
   each position mapped through a random symmetry of its board (board and
   ``pi`` together; ``z`` is invariant).

A `GameAdapter` per ``game`` supplies the environment, the network module, the
observation and legal mask of a stored position and the symmetries:
`DotsAndBoxesAdapter` (any size; 8 symmetries on square boards, 4 otherwise;
``T = num_edges``, one whole game per slot) and `OnitamaAdapter` (5x5, the
1250 canonical actions, the left-right mirror with mirrored cards;
``T = selfplay_steps``, unfinished games go on in the next iteration).

Design: the buffers hold compact boards (small ints), not observations, and
the network input is recomputed at update time, so 65k positions fit in a
few MB; the update steps are separate jitted calls, not a ``lax.scan``
(`make_update_step` says why). Results of trained networks are in
``jaxgames/weights/alphazero_dab/README.md`` and ``alphazero_onitama/README.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from jaxgames import checks, parallel
from jaxgames.games.dots_and_boxes import rules, symmetry
from jaxgames.games.dots_and_boxes.env import DotsAndBoxes
from jaxgames.games.dots_and_boxes.positions import after_random_moves
from jaxgames.games.dots_and_boxes.rules import Board
from jaxgames.games.dots_and_boxes.search import endgame
from jaxgames.games.onitama import Onitama
from jaxgames.learners.buffer import buffer_add, buffer_init, buffer_sample
from jaxgames.networks import dots_and_boxes as nets
from jaxgames.networks import onitama as onitama_nets
from jaxgames.networks.dots_and_boxes import NetworkConfig
from jaxgames.search import mcts
from jaxgames.wrappers import auto_reset_step

POLICY_TARGETS = ("gumbel", "visits")
"""Policy targets: Gumbel MuZero's improved policy, or the root visit distribution."""

BOOTSTRAPS = ("root", "max_q")
"""The search values a lambda-return bootstraps from (`AlphaZeroConfig.bootstrap`)."""

GAMES = ("dots_and_boxes", "onitama")
"""The games the learner has an adapter for (`GameAdapter`)."""


# ----------------------------------------------------------------------------- config
def parse_board_sizes(text: str) -> tuple:
    """``"2x2,3x3"`` -> ``((2, 2), (3, 3))``: the command-line form of ``board_sizes`` (the config checks the sizes).

    Raises:
        ValueError: an entry that is not ``RxC`` (the message names ``board_sizes``).
    """
    sizes = []
    for part in str(text).split(","):
        rc = part.strip().lower().split("x")
        if len(rc) != 2 or not all(p.strip().isdigit() for p in rc):
            raise ValueError(f"board_sizes must be a board size like 3x3; got {part.strip()!r}")
        sizes.append((int(rc[0]), int(rc[1])))
    return tuple(sizes)


def show_board_sizes(sizes) -> str:
    """``((2, 2), (3, 3))`` -> ``"2x2,3x3"`` (``"none"`` for None): what `parse_board_sizes` reads."""
    return "none" if sizes is None else ",".join(f"{r}x{c}" for r, c in sizes)


@dataclasses.dataclass(frozen=True)
class AlphaZeroConfig:
    """Settings of the learner (all fix shapes or the algorithm: a new config is a new compile).

    Attributes:
        board_sizes: training boards, ``(num_rows, num_cols)`` each, e.g. ``2x2,3x3,4x4`` on the command
            line (none: the game's default, 2x2 and 3x3 for Dots-and-Boxes, 5x5, the only board, for Onitama).
        size_weights: loss weight of each board (none: equal).
        network: the network's widths, `jaxgames.networks.dots_and_boxes.NetworkConfig` or
            `jaxgames.networks.onitama.NetworkConfig` (None: its defaults).
        num_envs: self-play games in parallel per board (B).
        num_simulations: Gumbel MuZero simulations per self-play move.
        max_num_considered_actions: root candidates of Gumbel's sequential halving.
        gumbel_scale: scale of the Gumbel noise in self-play (exploration; 0: none).
        policy_target: gumbel (the improved policy) or visits (the root visit distribution).
        value_target: margin (final box margin / num_boxes) or outcome (+1/-1/0) (none: margin for
            Dots-and-Boxes, outcome for Onitama).
        td_lambda: the value target is the lambda-return of the self-play game over the searches' values
            (``bootstrap``; Sutton 1988, TD(lambda); search values as in Schrittwieser et al. 2020, MuZero):
            1 is the game's final result alone (AlphaZero), 0 the search's value one move later.
        bootstrap: the search's value of a position in the lambda-return: root (mctx's root value, the
            mean over its simulations) or max_q (the largest Q-value of a visited root action: a one-ply
            Bellman backup through the network's values).
        random_start_fraction: Dots-and-Boxes: a new self-play game starts after ``k`` uniformly random
            moves (not searched, not stored), ``k`` uniform in ``[low, floor(f * (num_edges - 1))]``
            (0: every game starts on the empty board).
        exact_endgame_edges: Dots-and-Boxes: at positions with at most this many undrawn edges, a
            full-width exact search over them (`jaxgames.games.dots_and_boxes.search.endgame`: the
            rules only, not the solver's table) gives the policy target (uniform over its optimal moves),
            the value target and the bootstrap value (its final margin), and the move played (uniform
            over its optimal moves). 0: none; at most `endgame.MAX_FREE`.
        curriculum_iterations: the start window opens from the end of the game to its beginning over
            this many iterations: ``low = floor(high * max(0, 1 - iteration / curriculum_iterations))``
            (an endgame-first curriculum, as in BoxesZero, Entropy 27(3):285, 2025; 0: ``low = 0`` from the start).
        buffer_capacity: positions kept per board (a ring buffer).
        batch_size: positions per board per update.
        updates_per_iteration: AdamW steps per iteration.
        learning_rate: AdamW learning rate.
        weight_decay: AdamW decoupled weight decay.
        max_grad_norm: global gradient-norm clip.
        value_loss_weight: weight of the value loss beside the policy loss.
        augment: map every sampled position through a random symmetry of its board.
        game: dots_and_boxes or onitama.
        max_turns: Onitama: turns before a self-play game is a draw (Dasgupta and Chong 2021: 200).
        selfplay_steps: moves per game slot per iteration (0: the game's own, num_edges for
            Dots-and-Boxes, a whole game; 64 for Onitama).

    Raises:
        ValueError, TypeError: a bad board, count or rate (floats must be finite in float32), an
            unknown target or game (each message names the field and the value).
    """

    board_sizes: tuple | None = dataclasses.field(
        default=None, metadata={"parse": parse_board_sizes, "show": show_board_sizes})
    size_weights: tuple[float, ...] | None = None
    network: Any = None
    num_envs: int = 64
    num_simulations: int = 16
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    policy_target: str = "gumbel"
    value_target: str | None = None
    td_lambda: float = 1.0
    bootstrap: str = "root"
    random_start_fraction: float = 0.0
    exact_endgame_edges: int = 0
    curriculum_iterations: int = 0
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
        checks.choice("game", self.game, GAMES)
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
            try:
                adapter_cls.check_board(s)
            except (TypeError, ValueError) as e:
                raise type(e)(f"board_sizes: {e}") from None
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"board_sizes has duplicates: {sizes}")
        object.__setattr__(self, "board_sizes", tuple((int(r), int(c)) for r, c in sizes))
        if self.size_weights is not None:
            w = tuple(checks.real("size_weights", x, lo=0.0, lo_open=True, dtype=np.float32) for x in self.size_weights)
            if len(w) != len(sizes):
                raise ValueError(f"size_weights must be {len(sizes)} positive numbers; got {self.size_weights!r}")
            object.__setattr__(self, "size_weights", w)
        if not isinstance(self.network, adapter_cls.nets.NetworkConfig):
            raise TypeError(f"network must be a {adapter_cls.nets.__name__}.NetworkConfig; got {type(self.network).__name__}")
        for name in ("num_envs", "num_simulations", "max_num_considered_actions", "buffer_capacity", "batch_size",
                     "updates_per_iteration"):
            checks.positive_int(name, getattr(self, name))
        checks.integer("max_turns", self.max_turns, 1, 2**30)  # Onitama's range, checked before any folder
        checks.non_negative_int("selfplay_steps", self.selfplay_steps)
        for name, lo_open in (("learning_rate", True), ("max_grad_norm", True), ("gumbel_scale", False),
                              ("weight_decay", False), ("value_loss_weight", False)):
            checks.real(name, getattr(self, name), lo=0.0, lo_open=lo_open, dtype=np.float32)
        checks.choice("policy_target", self.policy_target, POLICY_TARGETS)
        checks.probability("td_lambda", self.td_lambda)
        checks.choice("bootstrap", self.bootstrap, BOOTSTRAPS)
        checks.real("random_start_fraction", self.random_start_fraction, lo=0.0, hi=1.0, hi_open=True, dtype=np.float32)
        checks.non_negative_int("curriculum_iterations", self.curriculum_iterations)
        if self.random_start_fraction and self.game != "dots_and_boxes":
            raise ValueError(f"random_start_fraction is for dots_and_boxes; got game={self.game!r}")
        if self.curriculum_iterations and not self.random_start_fraction:
            raise ValueError("curriculum_iterations needs random starts (random_start_fraction > 0)")
        try:
            endgame.check_max_free(self.exact_endgame_edges)
        except (TypeError, ValueError) as e:
            raise type(e)(f"exact_endgame_edges: {e}") from None
        if self.exact_endgame_edges and self.game != "dots_and_boxes":
            raise ValueError(f"exact_endgame_edges is for dots_and_boxes; got game={self.game!r}")
        adapter_cls.nets.check_value_target(self.value_target)
        if not isinstance(self.augment, bool):
            raise TypeError(f"augment must be a bool; got {self.augment!r}")


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

    nets = onitama_nets

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


ADAPTERS = {"dots_and_boxes": DotsAndBoxesAdapter, "onitama": OnitamaAdapter}
"""The adapter class of each game of `GAMES`."""


@functools.lru_cache(maxsize=16)
def game_adapter(config: "AlphaZeroConfig") -> GameAdapter:
    """The `GameAdapter` of ``config.game`` for ``config`` (one per config value)."""
    return ADAPTERS[config.game](config)


def selfplay_env(config: AlphaZeroConfig, size: tuple[int, int]):
    """The environment self-play and search run on: rewards in the units of ``config.value_target``."""
    return game_adapter(config).env(size)


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
        buffers: one `jaxgames.learners.buffer.ReplayBuffer` of `Sample` per board size.
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
        ``selfplay(params, env_states, buffer, key, iteration=0) -> (env_states, buffer, stats)``:
        plays `GameAdapter.selfplay_steps` moves (``num_edges`` for
        Dots-and-Boxes) in each of the ``num_envs`` games (one
        ``lax.scan``, auto-reset; new games start as `start_window` says at
        ``iteration``), computes the targets (the value: `lambda_returns`), adds
        the positions whose game ended to ``buffer``; ``stats`` is a dict of float32
        scalars (``positions``, ``games``, ``root_value``, ``first_player_margin``:
        seat 0's mean final reward, ``start_low``: the window's low end).
    """
    game = game_adapter(config)
    env = game.env(size)
    T, B = game.selfplay_steps(size), config.num_envs
    evaluate = game.nets.make_evaluate(config.network, config.value_target)
    scale = game.value_scale(size)
    k_exact = config.exact_endgame_edges
    if k_exact:
        geom = rules.geometry(*size)
        search_all = jax.vmap(lambda b: endgame.endgame_search(geom, b, k_exact))

        def exact_search(boards):
            """`endgame.EndgameResult` of every game ``[B]``, searched only when one of them is in reach."""
            in_reach = jnp.any(jnp.sum(~boards.edges, axis=-1) <= k_exact)
            none = endgame.EndgameResult(jnp.zeros(B, bool), jnp.zeros(B, jnp.float32),
                                         jnp.zeros((B, env.num_actions), bool))
            return jax.lax.cond(in_reach, search_all, lambda _: none, boards)

    def selfplay(params, states, buffer, key, iteration=0):
        low, high = start_window(config, env.num_actions, iteration)
        if config.random_start_fraction:
            def reset(k):
                k_num, k_moves = jax.random.split(k)
                return after_random_moves(env, k_moves, jax.random.randint(k_num, (), low, high + 1))
        else:
            reset = None
        step_fn = jax.vmap(functools.partial(auto_reset_step, env, reset=reset))

        def one_move(states, k):
            if k_exact:
                search_key, step_key, pick_key = jax.random.split(k, 3)
            else:
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
            action = out.action
            if config.bootstrap == "max_q":
                searched = jnp.where(summary.visit_counts > 0, summary.qvalues, -jnp.inf)
                boot = jnp.max(searched, axis=-1)
            else:
                boot = summary.value
            exact, exact_margin = jnp.zeros(B, bool), jnp.zeros(B, jnp.float32)
            if k_exact:
                found = exact_search(states.board)
                n_opt = jnp.sum(found.optimal, axis=-1, keepdims=True)
                exact = found.exact & (n_opt[:, 0] > 0)  # a searched position with a move left
                target = jnp.where(exact[:, None], found.optimal / jnp.maximum(n_opt, 1), target)
                pick = jax.random.categorical(pick_key, jnp.where(found.optimal, 0.0, -jnp.inf))
                action = jnp.where(exact, pick, action)
                exact_margin = found.margin
                boot = jnp.where(exact, exact_margin, boot)
            nxt, outcome = step_fn(states, action, jax.random.split(step_key, B))
            done = outcome.terminated | outcome.truncated
            return nxt, (game.position(states), target, outcome.rewards, done, summary.value, boot, exact,
                         exact_margin)

        states, (boards, targets, rewards, done, root_value, boot, exact, exact_margin) = jax.lax.scan(
            one_move, states, jax.random.split(key, T))

        mover = boards.player
        returns, ended = lambda_returns(rewards, done, boot, mover, config.td_lambda)
        value = jnp.take_along_axis(returns, mover[..., None], axis=-1)[..., 0] / scale
        value = jnp.where(exact, exact_margin / scale, value)
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
            start_low=jnp.asarray(low, jnp.float32),
        )
        return states, buffer, stats

    return selfplay


def start_window(config: AlphaZeroConfig, num_edges: int, iteration) -> tuple[jax.Array, int]:
    """``(low, high)``: new self-play games start after ``k ~ U[low, high]`` random moves at ``iteration``.

    ``high = floor(random_start_fraction * (num_edges - 1))``; ``low = floor(high * max(0, 1 - iteration /
    curriculum_iterations))`` (``low = 0`` without a curriculum). ``low`` is int32 ``[]`` (``iteration`` may be traced).
    """
    high = int(np.floor(config.random_start_fraction * (num_edges - 1)))
    if not config.curriculum_iterations:
        return jnp.int32(0), high
    opened = jnp.clip(jnp.asarray(iteration, jnp.float32) / config.curriculum_iterations, 0.0, 1.0)
    return jnp.floor(high * (1.0 - opened)).astype(jnp.int32), high


def lambda_returns(rewards, done, root_value, mover, td_lambda: float) -> tuple[jax.Array, jax.Array]:
    """The lambda-returns of a self-play record, for both players (two-player zero-sum games).

    ``G_t = r_t + (1 - lambda) V_{t+1} + lambda G_{t+1}`` from each player's view, with nothing after a
    step that ends the game (``done``); ``V_{t+1}`` is the search's value at ``t + 1``, ``+`` for
    its mover and ``-`` for the other player. ``lambda = 1`` is the plain return to the end of the game
    (computed without the values, bit for bit the sum of rewards).

    Args:
        rewards: float32 ``[T, B, 2]``: each step's rewards.
        done: bool ``[T, B]``: the step ended its game (the next state is a new game).
        root_value: float32 ``[T, B]``: the search's value at each step (`AlphaZeroConfig.bootstrap`), mover's
            view, reward units.
        mover: int32 ``[T, B]``: the player to move at each step.
        td_lambda: lambda in ``[0, 1]`` (a Python float).

    Returns:
        ``(returns, ended)``: float32 ``[T, B, 2]``; bool ``[T, B]``, whether the step's game ends
        within the record (only those returns are complete).
    """
    B = done.shape[1]
    seat = jnp.arange(2)
    values = jnp.where(mover[..., None] == seat, root_value[..., None], -root_value[..., None])  # [T, B, 2]
    next_values = jnp.concatenate([values[1:], jnp.zeros_like(values[:1])], axis=0)

    def back(carry, x):
        ret_next, ended_next = carry
        r, d, v_next = x
        if td_lambda == 1.0:
            future = ret_next
        else:
            future = (1.0 - td_lambda) * v_next + td_lambda * ret_next
        ret = r + jnp.where(d[:, None], 0.0, future)
        ended = d | ended_next
        return (ret, ended), (ret, ended)

    init = (jnp.zeros((B, 2), jnp.float32), jnp.zeros((B,), bool))
    _, (returns, ended) = jax.lax.scan(back, init, (rewards, done, next_values), reverse=True)
    return returns, ended


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
    over the batch; ``value_loss = mean (v - z)^2`` (Silver et al. 2018's AlphaZero
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


class Compiled(NamedTuple):
    """The jitted functions of one config: ``selfplay`` (one per board size) and ``update_step``."""

    selfplay: tuple
    update_step: Callable


SELFPLAY_DONATED = (1, 2)
"""Arguments a donating ``selfplay(params, env_states, buffer, key)`` consumes: the games and the replay buffer."""

UPDATE_DONATED = (1,)
"""Arguments a donating ``update_step(params, opt_state, buffers, key)`` consumes: the optimizer state.

Not the parameters: ``best_params`` is often the very same arrays (`AlphaZeroLearner.promote`,
`AlphaZeroLearner.start_from`), and donating them would delete the best network. Not the buffers:
every update step of an iteration samples them."""


@functools.lru_cache(maxsize=8)
def compiled(config: AlphaZeroConfig, mesh=None, donate: bool = False) -> Compiled:
    """The jitted self-play (one per size) and update of a config, built once per config value (and mesh).

    With ``donate`` the calls consume their carried inputs (`SELFPLAY_DONATED`, `UPDATE_DONATED`):
    XLA writes the new games, buffer and optimizer state over the old ones instead of copying them
    (the buffer is most of the state: 0.33 GB for Onitama's default 65536 positions), and the arrays
    passed in are deleted (``is_deleted()``), so a caller must not read them again. The results are
    the same bits either way. The default keeps its inputs (tests and benchmarks call it repeatedly
    on one state).
    """
    play_donated, update_donated = (SELFPLAY_DONATED, UPDATE_DONATED) if donate else ((), ())
    if mesh is not None:
        rep, bat = parallel.replicated(mesh), parallel.batch_sharding(mesh)
        return Compiled(  # donated inputs keep their sharding in the outputs (games split, buffer and opt state whole)
            selfplay=tuple(
                jax.jit(make_selfplay(config, s), in_shardings=(rep, bat, rep, rep, rep), out_shardings=(bat, rep, rep),
                        donate_argnums=play_donated)
                for s in config.board_sizes
            ),
            update_step=jax.jit(make_update_step(config, batch_sharding=bat), in_shardings=rep, out_shardings=rep,
                                donate_argnums=update_donated),
        )
    return Compiled(
        selfplay=tuple(jax.jit(make_selfplay(config, s), donate_argnums=play_donated) for s in config.board_sizes),
        update_step=jax.jit(make_update_step(config), donate_argnums=update_donated),
    )


def _check_mesh(config: AlphaZeroConfig, mesh) -> None:
    if mesh is not None:
        d = parallel.num_shards(mesh)
        for name in ("num_envs", "batch_size"):
            if getattr(config, name) % d:
                raise ValueError(f"{name}={getattr(config, name)} must be a multiple of the mesh's {d} devices")


def train_iteration(config: AlphaZeroConfig, state: TrainState, *, mesh=None,
                    donate: bool = False) -> tuple[TrainState, dict]:
    """One iteration: self-play on every size, then the updates (see the module docstring).

    Deterministic given ``state`` (its key), so a resumed run repeats a straight one exactly.

    With ``donate`` the iteration consumes ``state``: its replay buffers, game states and optimizer
    state are donated to the compiled calls (`compiled`), which update them in place rather than
    copying them, and are deleted; read only the returned state afterwards. Its parameters,
    ``best_params`` and key stay valid. The returned state is the same bits either way.
    `AlphaZeroLearner.update` donates (the training spine drops the old state); the default does not.

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
        _check_mesh(config, mesh)
        state = parallel.replicate(state.replace(env_states=()), mesh).replace(
            env_states=parallel.shard_batch(state.env_states, mesh)
        )
    fns = compiled(config, mesh, bool(donate))
    key = jax.random.wrap_key_data(state.key)
    key, update_key, *play_keys = jax.random.split(key, 2 + len(config.board_sizes))
    buffers, env_states, metrics = list(state.buffers), list(state.env_states), {}
    start = time.perf_counter()
    for i, size in enumerate(config.board_sizes):
        env_states[i], buffers[i], stats = fns.selfplay[i](state.params, env_states[i], buffers[i], play_keys[i],
                                                           state.iteration)
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


# ----------------------------------------------------------------------------- memory
def _nbytes(tree) -> int:
    return int(sum(np.prod(x.shape, dtype=np.int64) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree)))


def _intermediate_bytes(fn, *args) -> int:
    """Bytes of every value the top level of ``fn``'s jaxpr computes (abstract ``args``; nothing runs)."""
    jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    return int(sum(_nbytes(v.aval) for eqn in jaxpr.eqns for v in eqn.outvars if hasattr(v.aval, "shape")))


@functools.lru_cache(maxsize=16)
def memory_estimate(config: AlphaZeroConfig) -> dict:
    """Bytes of the largest arrays of the first iteration, per setting that scales them (an estimate, within a few x).

    Sizes are read off abstract shapes (`jax.eval_shape`, `jax.make_jaxpr`; nothing
    is allocated or compiled): a stored position and a game's state per board,
    and the per-position activations of the loss (the jaxpr's values at batch 2
    less those at batch 1, which drops the parameters' share).

    Returns:
        ``{"num_envs": ..., "batch_size": ..., "buffer_capacity": ...}``: the
        self-play games with their ``T`` recorded moves and search trees
        (``num_simulations + 1`` nodes of states and ``[A]`` statistics) and one
        network evaluation of every game; the update's minibatch (augmented
        copy, activations and their cotangents); the replay buffers.
    """
    game = game_adapter(config)
    params = jax.eval_shape(lambda: game.nets.init_params(config.network, jax.random.key(0)))
    out = {"num_envs": 0, "batch_size": 0, "buffer_capacity": 0}
    for size in config.board_sizes:
        env = game.env(size)
        A = env.num_actions
        sample = jax.eval_shape(lambda: game.example_sample(size))  # noqa: B023 - evaluated at once
        position = _nbytes(sample)
        state = _nbytes(jax.eval_shape(lambda: env.init(jax.random.key(0))))  # noqa: B023

        def batch(n):
            return jax.tree.map(lambda x: jax.ShapeDtypeStruct((n,) + x.shape, x.dtype), sample)  # noqa: B023

        def loss(p, b):
            return losses(config, p, size, b)  # noqa: B023

        activations = max(_intermediate_bytes(loss, params, batch(2)) - _intermediate_bytes(loss, params, batch(1)), 0)
        T = game.selfplay_steps(size)
        record = T * (position + 4 * A + 4 * 2 + 1 + 4) * 2  # the scan's outputs, and the targets made from them
        tree = (config.num_simulations + 1) * (state + 4 * 6 * A + 32)  # mctx: node embeddings and per-action statistics
        out["num_envs"] += config.num_envs * (state + record + tree + activations)
        out["batch_size"] += config.batch_size * (2 * position + 2 * activations)
        out["buffer_capacity"] += config.buffer_capacity * position
    return out


def check_memory(config: AlphaZeroConfig, fraction: float = 0.8) -> None:
    """Raises ``ValueError`` naming the setting when the first iteration would not fit in ``fraction`` of memory
    (`memory_estimate`, `jaxgames.checks.check_memory`). Checked at the Python boundary, before anything is
    compiled or written."""
    need = memory_estimate(config)
    checks.check_memory({name: (getattr(config, name), need[name]) for name in need}, what="the first iteration",
                        fraction=fraction, hint={"num_envs": "selfplay_steps or num_simulations"})


# ----------------------------------------------------------------------------- the learner
class AlphaZeroLearner:
    """AlphaZero as a learner of the training spine: ``loop.train(AlphaZeroLearner(config), ...)``.

    ``init(key)`` is `init_state`, ``update(state)`` is `train_iteration`
    (deterministic given the state, whose key it carries, so a resumed run
    repeats a straight one exactly), ``promote(state)`` makes the current
    parameters ``best_params`` (what the arena gate of
    `jaxgames.evaluation.alphazero` asks).

    ``update`` consumes its state (``donate``): the replay buffers, games and
    optimizer state it is given are updated in place and deleted, as the
    spine reads only the state returned. The parameters are never donated, so
    `promote` and the evaluation hooks may share them freely.

    Args:
        config: `AlphaZeroConfig`.
        mesh: None, or a `jax.sharding.Mesh` to train data-parallel on
            (`train_iteration`; equal to one device up to float32 rounding;
            checkpoints hold the sharded state, Orbax writing each shard).
        donate: ``update`` donates the old state's buffers, games and
            optimizer state (`train_iteration`); False keeps them (the same results, a copy
            of every buffer per iteration).

    Raises:
        TypeError: ``config`` not an `AlphaZeroConfig`.
        ValueError: with ``mesh``, ``num_envs`` or ``batch_size`` not a multiple of its devices; the first
            iteration would not fit in memory (`check_memory`: the message names the setting).
    """

    name = "alphazero"

    def __init__(self, config: AlphaZeroConfig, *, mesh=None, donate: bool = True):
        if not isinstance(config, AlphaZeroConfig):
            raise TypeError(f"config must be an AlphaZeroConfig; got {type(config).__name__}")
        _check_mesh(config, mesh)
        check_memory(config)
        self.config, self.mesh, self.donate = config, mesh, bool(donate)

    def init(self, key: jax.Array) -> TrainState:
        return init_state(self.config, key)

    def update(self, state: TrainState) -> tuple[TrainState, dict]:
        return train_iteration(self.config, state, mesh=self.mesh, donate=self.donate)

    def iteration(self, state: TrainState) -> int:
        return int(state.iteration)

    def promote(self, state: TrainState) -> TrainState:
        return state.replace(best_params=state.params, best_iteration=jnp.int32(state.iteration))

    def start_from(self, params) -> Callable[[TrainState], TrainState]:
        """The ``initial_state`` of a fine-tune (`loop.train`): ``params`` become the current and the best
        parameters of a fresh run (the optimiser state starts fresh; a restored checkpoint holds its own).

        Raises:
            ValueError: ``params`` of another tree or shape than ``config.network``'s (checked now,
                before any folder is claimed).
        """
        game_adapter(self.config).nets.check_params(params, self.config.network, what="the starting parameters")
        params = jax.tree.map(jnp.asarray, params)
        return lambda state: state.replace(params=params, best_params=params)


def reported_params(state: TrainState) -> tuple[Any, str]:
    """The parameters a run reports (and ships), and a phrase naming them for its README.

    The last best of the arena gate (``best_params``) if the gate ever promoted
    (``best_iteration > 0``); otherwise the latest ``params``.

    Args:
        state: a `TrainState` (e.g. ``loop.train(...).state``).

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


def length_text(result) -> str:
    """A run's length for a README, from a `jaxgames.learners.loop.TrainResult`: ``"N iterations in all"``,
    then `` (resumed at iteration R)`` and `` (stopped by the wall-clock budget)`` where they apply."""
    return (f"{len(result.history)} iterations in all"
            + (f" (resumed at iteration {result.resumed_from})" if result.resumed_from else "")
            + (" (stopped by the wall-clock budget)" if result.stopped_by_budget else ""))
