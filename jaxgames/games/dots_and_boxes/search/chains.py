"""Chain rules and move ordering for Dots-and-Boxes search.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With
Dots And Boxes" (course report), sections 4.3, 5.3 and 5.4.

Terms (Berlekamp, "The Dots and Boxes Game", 2000; Barker & Korf 2012):
a box with three drawn sides is *capturable*; a *chain* is a run of boxes
with two drawn sides each that the capture of one box opens up box after
box; a *half-open* chain has one capturable end, a *closed* chain both; a
*hard-hearted handout* is two boxes that one line captures together.

Move filters used by the exact minimax variants:

1. *Safe capture* (El Kaddouri et al., 5.3, "safe capturing moves should be taken first"):
   a move that completes a box and leaves no box with three sides (an
   isolated box, a box on the border, or both boxes of a hard-hearted
   handout) is always at least as good as any alternative: the only move
   considered.
2. *Chain rule* (El Kaddouri et al., 4.3, rules 1-3): otherwise, when some box is
   capturable, the mover either keeps capturing, or declines the last two
   boxes of the chain by drawing the far side of the second-to-last box,
   leaving a hard-hearted handout (in a closed chain the same move leaves
   two handouts: "all but four"). So the moves considered are the captures
   plus these handout moves; the report's "capture all / capture all but 2"
   are the two lines this generates. The report states the rules without
   proof; ``tests/test_search_minimax.py`` checks them against the
   retrograde solver.
3. *Important moves first* (El Kaddouri et al., 5.3-5.4): captures, then safe edges (that
   give no box away), centre first, then the rest by the number of boxes
   they make capturable. Only an ordering, so search stays exact.
"""

from __future__ import annotations

from jaxgames.games.dots_and_boxes.search.bitboard import BitBoard


def capturable_boxes(bb: BitBoard, edges: int) -> list[int]:
    """Boxes with exactly three drawn sides."""
    return [b for b in range(bb.num_boxes) if bb.sides(edges, b) == 3]


def missing_edge(bb: BitBoard, edges: int, box: int) -> int:
    """The undrawn side of a capturable box (the lowest one if several)."""
    free = bb.box_masks[box] & ~edges
    return (free & -free).bit_length() - 1


def creates_capturable(bb: BitBoard, edges: int, e: int) -> int:
    """Boxes that drawing ``e`` leaves with exactly three sides (new capturable boxes)."""
    child = edges | (1 << e)
    return sum(1 for b in bb.edge_boxes[e] if (child & bb.box_masks[b]).bit_count() == 3)


def safe_capture(bb: BitBoard, edges: int) -> int | None:
    """A capturing move that leaves no capturable box behind (rule 1), or None."""
    for b in capturable_boxes(bb, edges):
        e = missing_edge(bb, edges, b)
        if creates_capturable(bb, edges, e) == 0:
            return e
    return None


def chain_moves(bb: BitBoard, edges: int) -> list[int] | None:
    """The moves rules 1-2 leave, or None when no box is capturable.

    Returns:
        ``[e]`` for a safe capture; else the capturing moves followed by the
        handout moves (ascending within each group, no duplicates); None if
        there is nothing to capture (every move must then be searched).
    """
    boxes = capturable_boxes(bb, edges)
    if not boxes:
        return None
    captures, handouts = [], []
    for b in boxes:
        e = missing_edge(bb, edges, b)
        if creates_capturable(bb, edges, e) == 0:
            return [e]
        if e not in captures:
            captures.append(e)
        # The box across e (two sides now, three after e): decline by drawing its other free side.
        for n in bb.edge_boxes[e]:
            if n != b and bb.sides(edges, n) == 2:
                free = bb.box_masks[n] & ~edges & ~(1 << e)
                f = (free & -free).bit_length() - 1
                if free and f not in handouts:
                    handouts.append(f)
    captures.sort()
    return captures + sorted(h for h in handouts if h not in captures)


def safe_edges(bb: BitBoard, edges: int) -> list[int]:
    """Undrawn edges that neither complete nor make capturable any box (El Kaddouri et al., 5.3)."""
    out = []
    for e in range(bb.num_edges):
        if edges >> e & 1:
            continue
        if all((edges & bb.box_masks[b]).bit_count() <= 1 for b in bb.edge_boxes[e]):
            out.append(e)
    return out


def ordered_moves(bb: BitBoard, edges: int, moves: list[int] | None = None, *, stable: bool = False) -> list[int]:
    """``moves`` (default: all legal) with the important ones first (rule 3).

    Order: captures (most boxes first), then moves that make no box
    capturable (centre first), then the rest by how many boxes they make
    capturable (fewest first), each group in `BitBoard.centre_order`; with
    ``stable`` the groups keep the given order instead (for shuffled moves).
    """
    if moves is None:
        moves = [e for e in bb.centre_order if not edges >> e & 1]
    rank = {e: i for i, e in enumerate(bb.centre_order)}

    def key(e):
        g = bb.completes(edges, e)
        r = 0 if stable else rank[e]
        if g:
            return (0, -g, r)
        return (1 + creates_capturable(bb, edges, e), 0, r)

    return sorted(moves, key=key)
