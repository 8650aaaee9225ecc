"""Plain-Python memoised minimax for Dots-and-Boxes: the independent oracle of the solver tests.

Written straight from the rules (El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots And Boxes", section 4; OpenSpiel's edge numbering):
the value of a set of drawn edges is the best net number of the remaining
boxes the player to move can win; a move completing g > 0 boxes is worth
g + V(child) (the mover moves again), any other move -V(child).
"""

from __future__ import annotations

import functools


def reference_solver(R: int, C: int):
    """Returns ``(value, E)``: ``value(frozenset of drawn edges) -> int`` (memoised) and the edge count.

    ``value.boxes`` lists each box as the frozenset of its four edge ids.
    """
    h = lambda r, c: r * C + c
    v = lambda r, c: (R + 1) * C + r * (C + 1) + c
    E = (R + 1) * C + R * (C + 1)
    boxes = [frozenset({h(r, c), h(r + 1, c), v(r, c), v(r, c + 1)}) for r in range(R) for c in range(C)]

    @functools.lru_cache(maxsize=None)
    def value(drawn: frozenset) -> int:
        if len(drawn) == E:
            return 0
        best = None
        for e in range(E):
            if e in drawn:
                continue
            child = drawn | {e}
            gained = sum(1 for b in boxes if e in b and b <= child)
            score = gained + value(child) if gained else -value(child)
            best = score if best is None else max(best, score)
        return best

    value.boxes = boxes
    return value, E
