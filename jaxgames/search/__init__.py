"""Search for two-player zero-sum games, Dots-and-Boxes first.

Modules: `sign` (the zero-sum sign convention, the only place it lives),
`solver` (exact retrograde analysis of Dots-and-Boxes), `bitboard` (edge
sets as Python ints), `chains` (chain rules and move ordering), `minimax`
(the seed's minimax variants and the depth-limited alpha-beta), `mcts` (the
only module that talks to mctx). Imported on demand; nothing here compiles
at import time.
"""
