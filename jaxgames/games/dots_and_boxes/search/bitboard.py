"""Dots-and-Boxes positions as Python ints, for host-side tree search.

A position is the set of drawn edges as an int: bit ``e`` is edge ``e`` in
OpenSpiel's action order (the dbn order; El Kaddouri, Rys & Gao, "Multi
Agent Reinforcement Learning With Dots And Boxes", course report, section
4.1), exactly the index of the retrograde solver's table. The minimax
variants and the alpha-beta agent are inherently sequential, so they run on
the host over Python ints; JAX is kept for the batched kernels.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes import dbn as dbn_lib
from jaxgames.games.dots_and_boxes import rules
from jaxgames.games.dots_and_boxes import symmetry as symmetry_lib


class BitBoard:
    """Static tables of one board size for int edge sets.

    Attributes:
        num_rows, num_cols, num_edges (``E``), num_boxes (``B``): the size.
        full: int, every edge drawn (``2**E - 1``).
        box_masks: ``B`` ints: the four sides of each box as a bit mask.
        edge_boxes: ``E`` tuples of the (one or two) boxes beside each edge.
        box_edges: ``B`` tuples of the four sides of each box.
        centre_order: the ``E`` edges sorted from the centre of the board
            outwards (El Kaddouri et al., section 5.4, "move ordering").
    """

    def __init__(self, num_rows: int, num_cols: int):
        g = rules.geometry(*rules.validate_size(num_rows, num_cols))
        self.num_rows, self.num_cols = g.num_rows, g.num_cols
        self.num_edges, self.num_boxes = g.num_edges, g.num_boxes
        self.full = (1 << g.num_edges) - 1
        self.box_edges = tuple(tuple(int(e) for e in g.box_edges[b]) for b in range(g.num_boxes))
        self.box_masks = tuple(sum(1 << e for e in sides) for sides in self.box_edges)
        self.edge_boxes = tuple(tuple(int(b) for b in g.edge_boxes[e] if b >= 0) for e in range(g.num_edges))
        mid = np.array([g.num_rows / 2.0, g.num_cols / 2.0])
        centre = g.edge_dots.mean(axis=1)  # [E, 2]
        dist = np.abs(centre - mid).sum(axis=1)
        self.centre_order = tuple(int(e) for e in np.lexsort((np.arange(g.num_edges), dist)))
        sym = symmetry_lib.symmetries(g.num_rows, g.num_cols)
        # Byte tables: image of the 8 edges [8j, 8j + 8) of a set under each symmetry.
        self._sym_bytes = []
        for perm in sym.edge_map[1:]:  # skip the identity
            tables = []
            for j in range(0, g.num_edges, 8):
                t = [0] * 256
                for byte in range(256):
                    out = 0
                    for k in range(8):
                        if byte >> k & 1 and j + k < g.num_edges:
                            out |= 1 << int(perm[j + k])
                    t[byte] = out
                tables.append(t)
            self._sym_bytes.append(tables)

    def sides(self, edges: int, box: int) -> int:
        """Drawn sides (0..4) of ``box`` in the edge set ``edges``."""
        return (edges & self.box_masks[box]).bit_count()

    def completes(self, edges: int, e: int) -> int:
        """Boxes (0, 1 or 2) completed by drawing the undrawn edge ``e``."""
        child = edges | (1 << e)
        return sum(1 for b in self.edge_boxes[e] if child & self.box_masks[b] == self.box_masks[b])

    def legal_moves(self, edges: int) -> list[int]:
        """The undrawn edges, ascending."""
        return [e for e in range(self.num_edges) if not edges >> e & 1]

    def image(self, edges: int, k: int) -> int:
        """The image of ``edges`` under the ``k``-th non-identity symmetry (`symmetry.symmetries` order)."""
        out = 0
        for j, table in enumerate(self._sym_bytes[k]):
            out |= table[(edges >> (8 * j)) & 255]
        return out

    def canonical(self, edges: int) -> int:
        """The smallest image of ``edges`` over the board's symmetry group (El Kaddouri et al., section 4.2).

        The group is `jaxgames.games.dots_and_boxes.symmetry`'s: 4 symmetries
        of a rectangle, 8 of a square. Erratum in the source: section 4.2 lists the
        mirrors, both mirrors, and the 90/270 degree rotations for square
        boards, which misses the two diagonal reflections (``transpose`` and
        ``anti_transpose``) of the dihedral group of order 8; we use all 8.
        """
        best = edges
        for k in range(len(self._sym_bytes)):
            img = self.image(edges, k)
            if img < best:
                best = img
        return best

    def from_dbn(self, dbn: str) -> int:
        """The int edge set of a dbn string (bit ``e`` = character ``e``).

        Raises:
            TypeError, ValueError: see `jaxgames.games.dots_and_boxes.dbn.parse_dbn`.
        """
        edges = dbn_lib.parse_dbn(self.num_rows, self.num_cols, dbn)
        return edge_set_index(edges)


def edge_set_index(edges):
    """The edge-set index of drawn edges: bit ``e`` is set iff edge ``e`` is drawn.

    The one function that packs edges into an index (the solver's table
    index, the bitboards' ints, the perfect agent's lookup). Edge ``e`` is
    OpenSpiel's action ``e``, the dbn string's character ``e`` (Barker &
    Korf 2012), so ``'1100...'`` has index 3.

    Args:
        edges: bool ``[..., E]``. A ``jax.Array`` (also traced, e.g.
            ``state.board.edges`` inside a jitted policy) gives a
            ``jax.Array``; anything else (numpy array, list) must be one
            position ``[E]`` and gives a Python int (any ``E``).

    Returns:
        int32 ``jax.Array`` ``[...]`` for a ``jax.Array`` input; else a
        Python int in ``[0, 2**E)``.

    Raises:
        ValueError: a ``jax.Array`` with more than 31 edges (an int32 index
            would overflow; checked from the static shape before tracing),
            or a non-JAX input that is not one-dimensional.
    """
    if isinstance(edges, jax.Array):
        E = edges.shape[-1]
        if E > 31:
            raise ValueError(f"an int32 edge-set index holds at most 31 edges; got {E} (use a numpy array for a Python int)")
        bits = jnp.left_shift(jnp.int32(1), jnp.arange(E, dtype=jnp.int32))
        return jnp.sum(jnp.where(edges.astype(bool), bits, 0), axis=-1, dtype=jnp.int32)
    e = np.asarray(edges).astype(bool)
    if e.ndim != 1:
        raise ValueError(f"expected one position, a bool array [num_edges]; got shape {e.shape}")
    return int.from_bytes(np.packbits(e, bitorder="little").tobytes(), "little")


@functools.lru_cache(maxsize=None)
def bitboard(num_rows: int, num_cols: int) -> BitBoard:
    """The cached `BitBoard` of a size.

    Raises:
        TypeError, ValueError: a bad size (`rules.validate_size`).
    """
    return BitBoard(num_rows, num_cols)
