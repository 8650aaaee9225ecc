"""Dots-and-Boxes-specific search: exact solving, bitboards, chain rules, minimax.

Modules: `solver` (exact retrograde analysis over every edge set),
`bitboard` (edge sets as Python ints; `bitboard.edge_set_index`, the one
function that packs drawn edges into an edge-set index), `chains` (chain
rules and move ordering), `minimax` (the study's minimax variants and the
depth-limited alpha-beta of the agent), `endgame` (exact full-width search
over one position's last few undrawn edges, batched in JAX). Source: El Kaddouri, Rys & Gao,
"Multi Agent Reinforcement Learning With Dots And Boxes" (course report),
sections 4-5.

What serves every two-player zero-sum game stays in `jaxgames.search`: the
sign convention (`jaxgames.search.sign`, which these modules call), MCTS on
mctx, and the generic alpha-beta over any `Env`. Imported on demand;
nothing here compiles at import time.
"""
