"""The dots-and-boxes notation (dbn) of Barker & Korf (2012): import and export.

A dbn string has one character per edge, ``'1'`` drawn and ``'0'`` not, in
OpenSpiel's action order: the ``(num_rows + 1) * num_cols`` horizontal edges
row by row, then the ``num_rows * (num_cols + 1)`` vertical edges row by row
(OpenSpiel ``DotsAndBoxesState::DbnString``; El Kaddouri, Rys & Gao, "Multi
Agent Reinforcement Learning With Dots And Boxes", course report, section 4.1). It records
the board only, not the scores or the player to move: Dots-and-Boxes is
impartial, so the value of the rest of the game depends on the edges alone,
which is why it is the transposition-table key.

These are host-side (Python/numpy) functions for the boundary; inside jitted
code the dbn *is* ``board.edges``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes import rules
from jaxgames.games.dots_and_boxes.rules import NO_OWNER, Board


def to_dbn(edges) -> str | list:
    """The dbn string of drawn edges.

    Args:
        edges: bool ``[..., num_edges]`` (numpy or JAX), e.g. ``state.board.edges``.

    Returns:
        A str of ``num_edges`` ``'0'``/``'1'`` characters for one board, a
        (nested) list of them for a batch.
    """
    e = np.asarray(edges).astype(bool)
    if e.ndim == 1:
        return "".join("1" if x else "0" for x in e)
    return [to_dbn(row) for row in e]


def parse_dbn(num_rows: int, num_cols: int, dbn: str) -> np.ndarray:
    """Checks a dbn string and returns its edges.

    Args:
        num_rows, num_cols: board size in boxes, ints in ``[1, 15]``.
        dbn: the notation string.

    Returns:
        bool numpy ``[num_edges]``.

    Raises:
        TypeError: ``dbn`` is not a str, or a bad size type.
        ValueError: a size out of range, a length other than ``num_edges``,
            or a character other than ``'0'``/``'1'``.
    """
    g = rules.geometry(*rules.validate_size(num_rows, num_cols))
    if not isinstance(dbn, str):
        raise TypeError(f"dbn must be a str; got {type(dbn).__name__}")
    if len(dbn) != g.num_edges:
        raise ValueError(
            f"dbn string for a {g.num_rows}x{g.num_cols} board must have {g.num_edges} characters; got {len(dbn)}"
        )
    bad = sorted(set(dbn) - {"0", "1"})
    if bad:
        raise ValueError(f"dbn string may contain only '0' and '1'; got {''.join(bad)!r} in {dbn!r}")
    return np.frombuffer(dbn.encode("ascii"), np.uint8) == ord("1")


def board_from_dbn(num_rows: int, num_cols: int, dbn: str, *, current_player: int = 0, scores=None) -> Board:
    """A `rules.Board` from a dbn string, the player to move and the scores.

    Boxes complete in ``dbn`` get owner `rules.NO_OWNER` (the notation does
    not say who took them). With ``scores=None`` both scores are 0, which is
    what OpenSpiel's ``game.new_initial_state(dbn)`` does.

    Args:
        num_rows, num_cols: board size in boxes, ints in ``[1, 15]``.
        dbn: the notation string (see `parse_dbn`).
        current_player: 0 or 1.
        scores: ``None`` or two non-negative ints whose sum is the number of
            complete boxes of ``dbn``.

    Returns:
        An unbatched `rules.Board`; ``last_boxes`` is 0.

    Raises:
        TypeError, ValueError: see `parse_dbn`; a player other than 0/1;
            scores of the wrong length, negative, or not summing to the
            number of complete boxes.
    """
    g = rules.geometry(*rules.validate_size(num_rows, num_cols))
    edges = parse_dbn(num_rows, num_cols, dbn)
    if isinstance(current_player, (bool, np.bool_)) or current_player not in (0, 1):
        raise ValueError(f"current_player must be 0 or 1; got {current_player!r}")
    sides = edges[g.box_edges].sum(axis=-1)
    complete = int(np.sum(sides == 4))
    if scores is None:
        scores = (0, 0)
    else:
        scores = tuple(scores)
        if len(scores) != 2 or any(isinstance(s, (bool, np.bool_)) or int(s) != s or s < 0 for s in scores):
            raise ValueError(f"scores must be two non-negative ints; got {scores!r}")
        if sum(scores) != complete:
            raise ValueError(f"scores {scores} must sum to the {complete} complete boxes of the dbn string {dbn!r}")
    return Board(
        edges=jnp.asarray(edges),
        box_sides=jnp.asarray(sides, jnp.int8),
        box_owner=jnp.full(g.num_boxes, NO_OWNER, jnp.int8),
        scores=jnp.asarray(scores, jnp.int32),
        player=jnp.int32(current_player),
        last_boxes=jnp.int8(0),
        num_drawn=jnp.int32(edges.sum()),
    )
