"""A policy-value network for Onitama, and the left-right mirror used to augment its training data.

It plays the **canonical 1250 actions** (hand slot x from-square x
to-square, mover's view; `jaxgames.games.onitama.env.Onitama`), not Dasgupta
& Chong's 40 (piece x slot x card move; "Mastering the game of Onitama with
Reinforcement Learning", NUS USP group report, 2021, section 4.2): those name
pieces by identity and card moves by picture order, so the same board move
changes index with the piece and card, and the left-right mirror permutes
them position by position. Here a move is where it goes, and the policy head
is translation equivariant (AlphaZero's chess head, Silver et al. 2018): a
1x1 convolution gives, per from-square, one logit per (hand slot, jump offset
in ``[-2, 2]^2``), scattered into the 1250 actions by `POLICY_INDEX`; jumps
outside the window are never legal (logit 0), and the pass ``(slot, 0, 0)``
reads the unused zero-offset logit of square 0.

Trunk: the canonical observation float32 ``[5, 5, 9]`` plus a plane of ones
(so ``SAME`` padding shows the border), a 3x3 convolution and ``num_blocks``
residual blocks with a global-pooling bias (shared with
`jaxgames.networks.dots_and_boxes`). Value head: a flattened 1x1 convolution
beside the trunk's global mean and max, a hidden layer and tanh: the final
outcome (+1/-1/0) from the mover's side (their section 4.3). The interface is
that of `jaxgames.networks.dots_and_boxes`, so the learner and the agent use
either through one code path.

Symmetry (`mirror_board`, `mirror_actions`): mirroring the board left-right
(``c -> 4 - c``, also in the mover's view) and replacing every card by its
mirror card (`cards.MIRROR_CARD`) maps legal moves to legal moves and keeps
every game value. Mirror pairs differ in stamp colour, which only decides
who starts; mid-game the player to move is kept.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.onitama import cards, env as onitama_env, rules
from jaxgames.games.onitama.rules import Board

# The residual block and pooling of the Dots-and-Boxes network are reused as they are (one definition).
from jaxgames.networks.dots_and_boxes import ResidualBlock, global_pool
from jaxgames.networks.widths import NetworkWidths

NUM_ACTIONS = onitama_env.NUM_CANONICAL_ACTIONS
"""1250: the canonical action space."""

OBSERVATION_SHAPE = (rules.SIZE, rules.SIZE, onitama_env.CANONICAL_PLANES)
"""``(5, 5, 9)``: the canonical observation."""

NUM_OFFSETS = 25
"""Jump offsets ``(dr, dc)`` in ``[-2, 2]^2``, index ``(dr + 2) * 5 + (dc + 2)``."""


def _policy_index() -> np.ndarray:
    n = rules.NUM_SQUARES
    index = np.full(NUM_ACTIONS, n * 2 * NUM_OFFSETS, np.int32)  # default: the appended zero logit
    for slot in range(2):
        for f in range(n):
            for t in range(n):
                dr, dc = t // 5 - f // 5, t % 5 - f % 5
                if abs(dr) <= 2 and abs(dc) <= 2:
                    index[slot * n * n + f * n + t] = f * 2 * NUM_OFFSETS + slot * NUM_OFFSETS + (dr + 2) * 5 + (dc + 2)
    index.setflags(write=False)
    return index


POLICY_INDEX = _policy_index()
"""int32 ``[1250]``: for each canonical action, its entry in the flattened
``[from-square 25, slot 2, offset 25]`` head output, or ``1250`` (an appended
zero) where the jump leaves the ``[-2, 2]^2`` window (never a legal move)."""


def _mirror_square(q: np.ndarray) -> np.ndarray:
    return 5 * (q // 5) + 4 - q % 5


def _mirror_tables() -> tuple[np.ndarray, np.ndarray]:
    """int32 ``[2, 1250]``: the image of every action without / with the slot swap (module docstring)."""
    n = rules.NUM_SQUARES
    out = np.zeros((2, NUM_ACTIONS), np.int32)
    for swap in (0, 1):
        for slot in range(2):
            for f in range(n):
                for t in range(n):
                    # from = to is never a move; (slot, 0, 0) is the pass: keep the squares, map the slot only.
                    mf, mt = (f, t) if f == t else (_mirror_square(f), _mirror_square(t))
                    out[swap, slot * n * n + f * n + t] = (slot ^ swap) * n * n + mf * n + mt
    out.setflags(write=False)
    return out


MIRROR_ACTIONS = _mirror_tables()
"""int32 ``[2, 1250]``: ``MIRROR_ACTIONS[swap, a]`` is the mirror image of
canonical action ``a`` when the mirrored hand keeps (``swap=0``) or
exchanges (``swap=1``) its slot order. Each row is an involution."""


@dataclasses.dataclass(frozen=True)
class NetworkConfig(NetworkWidths):
    """Widths of `PolicyValueNet` (they fix the parameter shapes).

    Fields, checks and errors: `jaxgames.networks.widths.NetworkWidths` (errors name
    ``onitama NetworkConfig.<field>``). Defaults: 32 channels (small enough for CPU),
    3 residual blocks, 4 value channels, 64 value hidden units. A distinct type
    from the Dots-and-Boxes ``NetworkConfig``: the type names the game.
    """

    channels: int = 32
    num_blocks: int = 3
    value_channels: int = 4
    value_hidden: int = 64

    error_name: ClassVar[str] = "onitama NetworkConfig"


class PolicyValueNet(nn.Module):
    """Policy logits over the 1250 canonical actions and a value (module docstring).

    Call:
        ``net.apply(params, observation)`` with observation float32
        ``[..., 5, 5, 9]`` (`Onitama` canonical observations, mover's view)
        returns ``(logits, value)``: float32 ``[..., 1250]`` and float32
        ``[...]`` in ``[-1, 1]``.

    Raises:
        ValueError: an observation whose last three axes are not ``(5, 5, 9)``
            (e.g. the 260-entry ``action_space="paper"`` observation; at trace time).
    """

    config: NetworkConfig = NetworkConfig()

    @nn.compact
    def __call__(self, observation):
        if observation.ndim < 3 or tuple(observation.shape[-3:]) != OBSERVATION_SHAPE:
            raise ValueError(
                f"expected canonical Onitama observations [..., 5, 5, 9] (action_space='canonical'); got shape {observation.shape}"
            )
        batch = observation.shape[:-3]
        x = observation.astype(jnp.float32).reshape((-1,) + OBSERVATION_SHAPE)
        x = jnp.concatenate([x, jnp.ones(x.shape[:-1] + (1,), jnp.float32)], axis=-1)
        cfg = self.config
        x = nn.Conv(cfg.channels, (3, 3), padding="SAME")(x)
        for i in range(cfg.num_blocks):
            x = ResidualBlock(cfg.channels, name=f"_Block_{i}")(x)
        x = nn.relu(nn.LayerNorm()(x))
        n = x.shape[0]
        p = nn.Conv(2 * NUM_OFFSETS, (1, 1))(x).reshape((n, rules.NUM_SQUARES * 2 * NUM_OFFSETS))
        p = jnp.concatenate([p, jnp.zeros((n, 1), p.dtype)], axis=-1)
        logits = p[:, jnp.asarray(POLICY_INDEX)]
        v = nn.relu(nn.Conv(cfg.value_channels, (1, 1))(x)).reshape((n, -1))
        v = nn.relu(nn.Dense(cfg.value_hidden)(jnp.concatenate([v, global_pool(x)], axis=-1)))
        value = jnp.tanh(nn.Dense(1)(v)[:, 0])
        chex.assert_shape(logits, (n, NUM_ACTIONS))
        return logits.reshape(batch + (NUM_ACTIONS,)), value.reshape(batch)


def init_params(config: NetworkConfig, key: jax.Array) -> dict:
    """Fresh parameters of `PolicyValueNet` (jitted once per config)."""
    return _jitted_init(config)(key)


@functools.lru_cache(maxsize=16)
def _jitted_init(config: NetworkConfig):
    # The example input is made inside the jitted function (a first call under another trace caches no tracer).
    return jax.jit(lambda key: PolicyValueNet(config).init(key, jnp.zeros((1,) + OBSERVATION_SHAPE, jnp.float32)))


@functools.lru_cache(maxsize=16)
def _expected_leaves(config: NetworkConfig) -> tuple:
    obs = jax.ShapeDtypeStruct((1,) + OBSERVATION_SHAPE, jnp.float32)
    shapes = jax.eval_shape(lambda k, o: PolicyValueNet(config).init(k, o), jax.random.key(0), obs)
    return tuple(jax.tree_util.tree_leaves_with_path(shapes))


def check_params(params, config: NetworkConfig, *, what: str = "parameters") -> None:
    """Raises unless ``params`` have exactly the tree and shapes of `PolicyValueNet(config)`.

    Raises:
        ValueError: another tree (names missing/unexpected leaves) or a leaf
            of another shape (names the leaf and both shapes).
    """
    exp_leaves = _expected_leaves(config)
    try:
        got_leaves = jax.tree_util.tree_leaves_with_path(params)
    except Exception as e:  # pragma: no cover - a non-pytree
        raise ValueError(f"{what} are not a parameter tree: {e}") from None
    exp = {jax.tree_util.keystr(p): tuple(s.shape) for p, s in exp_leaves}
    got = {jax.tree_util.keystr(p): tuple(np.shape(x)) for p, x in got_leaves}
    if exp.keys() != got.keys():
        raise ValueError(
            f"{what} do not fit the network {config}: missing leaves {sorted(exp.keys() - got.keys())[:3]}, "
            f"unexpected leaves {sorted(got.keys() - exp.keys())[:3]}"
        )
    for name, shape in exp.items():
        if got[name] != shape:
            raise ValueError(f"{what} do not fit the network {config}: leaf {name} has shape {got[name]}, the network needs {shape}")


VALUE_TARGETS = ("outcome",)
"""The value is trained on the final result, +1/-1/0, from the mover's side (Onitama has no margin)."""


def check_value_target(value_target: str) -> str:
    """Returns ``value_target`` or raises ``ValueError`` naming it (choices: `VALUE_TARGETS`)."""
    if value_target not in VALUE_TARGETS:
        raise ValueError(f"value_target must be one of {VALUE_TARGETS} for onitama; got {value_target!r}")
    return value_target


def value_scale(value_target: str, *_) -> float:
    """Reward units per unit of network value: 1 (the rewards are the outcome)."""
    check_value_target(value_target)
    return 1.0


def make_evaluate(config: NetworkConfig, value_target: str = "outcome"):
    """The ``evaluate(params, states) -> (logits [B, 1250], value [B])`` of `jaxgames.search.mcts.network_search`.

    Raises:
        ValueError: a value target other than ``"outcome"``.
    """
    check_value_target(value_target)
    net = PolicyValueNet(config)

    def evaluate(params, states):
        return net.apply(params, states.observation)

    return evaluate


# ----------------------------------------------------------------------------- symmetry
def mirror_board(board: Board) -> Board:
    """One board mirrored left-right with every card replaced by its mirror card (pure, vmappable).

    Pieces keep their owner; squares map ``c -> 4 - c`` (captured stay -1);
    the students are renumbered in reverse, so they stay numbered left to
    right as at the start. Hands are re-sorted (slot 0 = the lower id); the
    player to move, the turn and the winner are kept.
    """
    pieces = board.pieces
    mirrored = jnp.where(pieces >= 0, 5 * (pieces // 5) + 4 - pieces % 5, pieces)
    mirrored = jnp.concatenate([mirrored[:, rules.MASTER - 1 :: -1], mirrored[:, rules.MASTER :]], axis=1)
    mc = jnp.asarray(cards.MIRROR_CARD)
    hands = jnp.sort(mc[board.hands], axis=-1)
    return board.replace(pieces=mirrored.astype(jnp.int32), hands=hands.astype(jnp.int32), side=mc[board.side])


def slot_swap(board: Board) -> jax.Array:
    """bool ``[]``: the mirror exchanges the order of the mover's two cards (their mirror ids sort the other way)."""
    hand = jnp.where(board.player == 1, board.hands[1], board.hands[0])
    mc = jnp.asarray(cards.MIRROR_CARD)
    return mc[hand[0]] > mc[hand[1]]


def mirror_actions(board: Board) -> jax.Array:
    """int32 ``[1250]``: the mirror image of every canonical action of ``board``'s mover.

    An involution: ``x_mirrored = x[mirror_actions(board)]`` maps any
    per-action array (policy, legal mask) of ``board`` to the one of
    `mirror_board` ``(board)``, and applying it twice is the identity.
    """
    return jnp.asarray(MIRROR_ACTIONS)[slot_swap(board).astype(jnp.int32)]
