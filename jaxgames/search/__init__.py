"""Search for every two-player zero-sum game.

Modules: `sign` (the zero-sum sign convention, the only place it lives),
`mcts` (pure MCTS; the only module that talks to mctx), `alphabeta`
(depth-limited alpha-beta with iterative deepening over any sequential
`jaxgames.core.Env` and an evaluation function), `simultaneous` (SM-MCTS with
regret matching, maximin search and best-reply alpha-beta for
simultaneous-move games, N players). Game-specific search lives with its
game: Dots-and-Boxes' exact solver, bitboards, chain rules and minimax
variants are in `jaxgames.games.dots_and_boxes.search`. Imported on demand;
nothing here compiles at import time.
"""
