"""The game registry: ``make(name, **params)`` and ``registered_games()``.

Games are registered by import path, so importing :mod:`jaxgames` imports no
game module and compiles nothing; a game's module is imported on first `make`.
"""

from __future__ import annotations

import importlib
from typing import Callable

from jaxgames.core import Env

_REGISTRY: dict[str, str | Callable[..., Env]] = {
    "prisoners_dilemma": "jaxgames.games.matrix:prisoners_dilemma",
    "biased_rock_paper_scissors": "jaxgames.games.matrix:biased_rock_paper_scissors",
    "subsidy_game": "jaxgames.games.matrix:subsidy_game",
    "battle_of_the_sexes": "jaxgames.games.matrix:battle_of_the_sexes",
    "matching_pennies": "jaxgames.games.matrix:matching_pennies",
    "rock_paper_scissors": "jaxgames.games.matrix:rock_paper_scissors",
    "stag_hunt": "jaxgames.games.matrix:stag_hunt",
    "matrix_game": "jaxgames.games.matrix:MatrixGame",
    "battlesnake": "jaxgames.games.battlesnake:Battlesnake",
    "dots_and_boxes": "jaxgames.games.dots_and_boxes:DotsAndBoxes",
    "onitama": "jaxgames.games.onitama:Onitama",
}


def register(name: str, factory: str | Callable[..., Env]) -> None:
    """Registers a game constructor under ``name``.

    Args:
        name: the registry name.
        factory: a callable returning an `Env`, or its import path ``"module:attr"``.

    Raises:
        ValueError: if ``name`` is already registered.
    """
    if name in _REGISTRY:
        raise ValueError(f"game {name!r} is already registered")
    _REGISTRY[name] = factory


def registered_games() -> tuple[str, ...]:
    """The names `make` accepts, sorted."""
    return tuple(sorted(_REGISTRY))


def make(name: str, /, **params) -> Env:
    """Builds the game ``name`` with its static parameters (Pgx's ``pgx.make``).

    Args:
        name: one of `registered_games()`.
        **params: the game's constructor arguments (board size, payoffs, ...).

    Raises:
        ValueError: for an unknown name (the message lists the known ones), or
            bad parameters (raised by the game's constructor).
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown game {name!r}; registered games: {', '.join(registered_games())}")
    factory = _REGISTRY[name]
    if isinstance(factory, str):
        module, attr = factory.split(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(**params)
