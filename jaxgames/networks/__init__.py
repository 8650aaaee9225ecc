"""Flax networks shared by learners and agents.

Modules: `q_snake` (the Q-value CNN over the rotated 21x21x3 Battlesnake
view of Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game", University of Victoria report),
`dots_and_boxes` and `onitama` (AlphaZero policy-value networks), `widths`
(their shared width config), `ddpg` (the Onitama DDPG actors and critic), `conv` (a
convolution with a cheaper gradient on XLA:CPU, used by `q_snake` and `ddpg`).
Import them directly; this package imports nothing at import time.
"""
