"""Shipped network weights (package data), one `jaxgames.weights_io` folder each.

``alphazero_dab/`` and ``alphazero_onitama/`` (`jaxgames.agents.alphazero`), ``q_snake/`` (`jaxgames.agents.q_snake`).
"""
