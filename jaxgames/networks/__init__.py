"""Flax networks shared by learners and agents.

Modules: `q_snake` (seed 003's Q-value CNN over the rotated 21x21x3
Battlesnake view). Import them directly; this package imports nothing at
import time.
"""
