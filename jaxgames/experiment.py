"""Shared plumbing of the experiment scripts: ``key=value`` overrides and result folders.

Each experiment defines a frozen dataclass ``Config``; `parse_config` builds
it from command-line ``key=value`` pairs (typed by the dataclass fields;
tuples as comma-separated lists), and `output_dir` makes the results folder
and saves the config beside the results as ``config.json``.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import typing
from typing import Any, Sequence, TypeVar

C = TypeVar("C")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(text: str, annotation: Any, name: str):
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or str(origin) == "types.UnionType":
        non_none = [a for a in args if a is not type(None)]
        if text.lower() in {"none", "null"} and type(None) in args:
            return None
        return _convert(text, non_none[0], name)
    if origin in (tuple, Sequence, list):
        inner = args[0] if args else str
        items = [s for s in text.split(",") if s.strip()]
        return tuple(_convert(s.strip(), inner, name) for s in items)
    if annotation is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{name} must be a boolean (true/false); got {text!r}")
    if annotation in (int, float, str):
        try:
            return annotation(text)
        except ValueError:
            raise ValueError(f"{name} must be {annotation.__name__}; got {text!r}") from None
    return text


def parse_config(cls: type[C], argv: Sequence[str]) -> C:
    """Builds ``cls`` from ``key=value`` strings.

    Args:
        cls: a dataclass type.
        argv: e.g. ``["num_iterations=1000", "games=subsidy_game,stag_hunt"]``.

    Returns:
        ``cls(**overrides)`` (its ``__post_init__`` validates the values).

    Raises:
        ValueError: for an argument that is not ``key=value``, an unknown
            key (the message lists the known ones) or a value of the wrong type.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    overrides = {}
    for arg in argv:
        if "=" not in arg:
            raise ValueError(f"arguments are key=value; got {arg!r}. Known keys: {', '.join(sorted(fields))}")
        key, value = arg.split("=", 1)
        key = key.strip().lstrip("-").replace("-", "_")
        if key not in fields:
            raise ValueError(f"unknown key {key!r}; known keys: {', '.join(sorted(fields))}")
        overrides[key] = _convert(value, hints[key], key)
    return cls(**overrides)


def output_dir(config, root: str | pathlib.Path) -> pathlib.Path:
    """Creates ``root`` and writes ``config.json`` (the dataclass as JSON) into it."""
    path = pathlib.Path(root)
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2, default=str) + "\n")
    return path
