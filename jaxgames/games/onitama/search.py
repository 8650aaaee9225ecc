"""Fixed-depth negamax of Onitama in pure JAX, with a "Minimax" evaluation.

Source: Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
Learning" (NUS USP group report, 2021), sections 5.6 and 6: the "Minimax"
opponent of depth 1, 2, ..., named but given without its evaluation or
weights. Ours is material plus master distance with our own weights
(`MATERIAL_WEIGHT`, `DISTANCE_WEIGHT`). `move_values` is full-width over the
40 (piece, card slot, move) triples, no pruning, so it jits and vmaps
(`jaxgames.agents.onitama.MinimaxAgent` plays it).

Values are from the side of the player to move, in the units of the
rewards: +1 a win, -1 a loss, 0 a draw (the turn limit). Every non-terminal
leaf is worth at most `MAX_EVALUATION` = 0.425 in absolute value, so a win or
a loss found within the horizon always dominates the evaluation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.onitama import cards, rules

MATERIAL_WEIGHT = 0.1
"""Value of one student more than the opponent (`evaluate_board`)."""

DISTANCE_WEIGHT = 0.005
"""Value of one step (Manhattan) of master-distance advantage (`evaluate_board`).

Chosen so that the distance term only breaks material ties: the distance
difference of a non-terminal position lies in ``[-5, 5]``, so the term spans
at most ``10 * 0.005 = 0.05 < MATERIAL_WEIGHT``."""

MAX_EVALUATION = 4 * MATERIAL_WEIGHT + 5 * DISTANCE_WEIGHT
"""0.425: the largest absolute value of `evaluate_board` (below 1, the value of a win)."""

_PASS_MOVES = np.zeros(rules.NUM_MOVES, bool)
_PASS_MOVES[[rules.MASTER * 8, rules.MASTER * 8 + 4]] = True  # the 40-move space's passes: the master's move 0 of slot 0, 1
_PASS_MOVES.setflags(write=False)


def evaluate_board(board: rules.Board) -> jax.Array:
    """float32 ``[]``: the "Minimax" evaluation of one unfinished `rules.Board`, from ``board.player``'s side.

    ``MATERIAL_WEIGHT * (own students - enemy students) + DISTANCE_WEIGHT *
    (enemy master's distance to our temple - our master's distance to its
    temple)``, distances Manhattan; in ``[-MAX_EVALUATION, MAX_EVALUATION]``.
    (`jaxgames.agents.onitama.evaluate` is the same formula on the host.)
    """
    p = board.player
    own = jnp.where(p == 1, board.pieces[1], board.pieces[0])
    opp = jnp.where(p == 1, board.pieces[0], board.pieces[1])
    own_temple = jnp.where(p == 1, rules.TEMPLE[1], rules.TEMPLE[0])
    opp_temple = jnp.where(p == 1, rules.TEMPLE[0], rules.TEMPLE[1])

    def distance(square, temple):
        return jnp.abs(square // rules.SIZE - temple // rules.SIZE) + jnp.abs(square % rules.SIZE - temple % rules.SIZE)

    material = jnp.sum(own[: rules.MASTER] >= 0) - jnp.sum(opp[: rules.MASTER] >= 0)
    dist = distance(opp[rules.MASTER], own_temple) - distance(own[rules.MASTER], opp_temple)
    return (MATERIAL_WEIGHT * material + DISTANCE_WEIGHT * dist).astype(jnp.float32)


def move_values(board: rules.Board, depth: int, max_turns: int) -> tuple[jax.Array, jax.Array]:
    """Full-width negamax values of the 40 (piece, slot, move) triples of one board (pure JAX).

    Args:
        board: one unfinished `rules.Board`.
        depth: plies (static, >= 1).
        max_turns: the turn limit (static): a child at it without a winner is a draw (0).

    Returns:
        ``(values, valid)``: float32 ``[40]`` from the mover's side (a win
        +1, a loss -1, else the negated value of the child searched
        ``depth - 1`` plies, `evaluate_board` at the horizon) and bool
        ``[40]``, the moves that exist (where no move does, the 40-move space's
        two passes, master move 0 of each slot: `jaxgames.games.onitama.env.Onitama.pass_actions`).
    """
    legal, target = rules.move_targets(board)
    must_pass = ~jnp.any(legal)
    valid = legal | (must_pass & jnp.asarray(_PASS_MOVES))
    a = jnp.arange(rules.NUM_MOVES, dtype=jnp.int32)
    slot, piece = (a // cards.MAX_MOVES) % 2, a // (2 * cards.MAX_MOVES)
    children = jax.vmap(rules.apply_move, in_axes=(None, 0, 0, 0, None))(
        board, slot, piece, jnp.maximum(target, 0), must_pass
    )
    won = rules.is_won(children)  # [40]: the mover won (only the mover can win by moving)
    draw = children.turn >= max_turns
    if depth == 1:
        below = jax.vmap(evaluate_board)(children)
    else:
        sub, sub_valid = jax.vmap(lambda c: move_values(c, depth - 1, max_turns))(children)
        below = jnp.max(jnp.where(sub_valid, sub, -jnp.inf), axis=-1)
    values = jnp.where(won, 1.0, jnp.where(draw, 0.0, -below)).astype(jnp.float32)
    return values, valid
