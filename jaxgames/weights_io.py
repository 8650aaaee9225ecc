"""The one weights format of every shipped network: a folder with ``params.msgpack`` and ``metadata.json``.

* ``params.msgpack``: the parameter pytree (nested dicts of arrays, e.g.
  ``{"params": ..., "batch_stats": ...}``), `flax.serialization` msgpack;
* ``metadata.json``: what the caller records (network shape, command, budget,
  ``trained``, ...) plus ``"format"`` (`FORMAT`) and ``"sha256"`` (hex digest
  of the ``params.msgpack`` bytes).

`save` writes both atomically (`jaxgames.experiment.atomic_write_bytes`),
the parameters first, so a crash between the two leaves a folder that `load`
refuses as corrupted rather than one that loads mismatched parameters.
`load` verifies the checksum and refuses non-finite parameters (a network
with NaN weights would play arbitrary moves). The agents' ``save_weights``/``load_weights`` add their own
metadata checks (network shape, game) on top of these two functions.
Folders written before this format (no checksum; the Q-snake's
``q_snake.msgpack``/``q_snake.json``, the DDPG actors'
``actor.msgpack``/``actor.json``) are refused by `load` with a message that
points to `upgrade`.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from jaxgames.experiment import atomic_write_bytes

PARAMS_FILE = "params.msgpack"
METADATA_FILE = "metadata.json"
FORMAT = 1
"""Version of the folder layout and of the ``metadata.json`` keys this module adds (``format``, ``sha256``)."""

LEGACY_NAMES = (
    ("params.msgpack", "metadata.json"), ("q_snake.msgpack", "q_snake.json"), ("actor.msgpack", "actor.json"),
)
"""``(params, metadata)`` file names of the folders written before `FORMAT` 1 (`upgrade` reads them)."""


def save(directory, params: Any, metadata: dict) -> pathlib.Path:
    """Writes ``params`` and ``metadata`` into ``directory`` (created), each file atomically.

    Args:
        directory: the weights folder.
        params: a pytree of arrays (host or device; dicts, `flax.core.FrozenDict`, ...).
        metadata: JSON-able facts about them; its ``"format"`` and ``"sha256"``
            are replaced by this save's.

    Returns:
        The directory, as a `pathlib.Path`.

    Raises:
        ValueError: a non-finite parameter (names the leaf): such weights would not load.
        TypeError: ``metadata`` is not a dict.
    """
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict; got {type(metadata).__name__}")
    host = jax.tree.map(np.asarray, jax.device_get(params))
    directory = pathlib.Path(directory)
    _check_finite(host, f"parameters to save in {directory / PARAMS_FILE}")
    data = serialization.to_bytes(host)
    meta = {**metadata, "format": FORMAT, "sha256": hashlib.sha256(data).hexdigest()}
    text = json.dumps(meta, indent=2, default=str) + "\n"
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(directory / PARAMS_FILE, data)
    atomic_write_bytes(directory / METADATA_FILE, text.encode())
    return directory


def load(directory) -> tuple[Any, dict]:
    """Reads a folder written by `save`, checked.

    Args:
        directory: the weights folder.

    Returns:
        ``(params, metadata)``: the pytree as nested dicts of `jax.Array`
        (bitwise the saved values) and the metadata (with ``format`` and ``sha256``).

    Raises:
        FileNotFoundError: a missing folder or file (names it).
        ValueError: metadata that is not a JSON object, of an unknown or older
            format (no checksum: see `upgrade`); a ``params.msgpack`` whose
            bytes do not match the recorded checksum ("corrupted": flipped or
            truncated), that cannot be decoded, or with a non-finite leaf
            (each names the file, the last also the leaf).
    """
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"no weights folder {directory}")
    meta_path, params_path = directory / METADATA_FILE, directory / PARAMS_FILE
    for path in (meta_path, params_path):
        if not path.is_file():
            legacy = [n for pair in LEGACY_NAMES[1:] for n in pair if (directory / n).is_file()]
            hint = f"; it holds {legacy} of an older format: convert it with jaxgames.weights_io.upgrade"
            raise FileNotFoundError(f"no weights file {path}{hint if legacy else ''}")
    meta = _read_metadata(meta_path)
    if "format" not in meta or "sha256" not in meta:
        raise ValueError(
            f"{meta_path} has no checksum (written before weights format {FORMAT}): convert the folder once with "
            f"jaxgames.weights_io.upgrade({str(directory)!r})"
        )
    if meta["format"] != FORMAT:
        raise ValueError(f"{meta_path}: weights format {meta['format']!r}; this jaxgames reads format {FORMAT}")
    data = params_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != meta["sha256"]:
        raise ValueError(
            f"{params_path} is corrupted: its sha256 is {digest}, {meta_path} records {meta['sha256']} "
            f"({len(data)} bytes; damaged, truncated or replaced since it was saved)"
        )
    params = _restore(params_path, data)
    _check_finite(params, f"weights {params_path}")
    return jax.tree.map(jnp.asarray, params), meta


def upgrade(directory) -> pathlib.Path:
    """Re-saves a folder written before `FORMAT` 1 in this format, with the same parameters and metadata keys.

    Reads the first pair of `LEGACY_NAMES` present, writes `PARAMS_FILE` and
    `METADATA_FILE` with `save` (adding ``format`` and ``sha256``), then
    removes the old files if their names differ.

    Raises:
        FileNotFoundError: no legacy pair in ``directory``.
        ValueError: unreadable files or non-finite parameters (as `load`).
    """
    directory = pathlib.Path(directory)
    for params_name, meta_name in LEGACY_NAMES:
        params_path, meta_path = directory / params_name, directory / meta_name
        if params_path.is_file() and meta_path.is_file():
            break
    else:
        raise FileNotFoundError(f"no weights of an older format in {directory} (looked for {LEGACY_NAMES})")
    meta = _read_metadata(meta_path)
    params = _restore(params_path, params_path.read_bytes())
    save(directory, params, meta)
    for old in (params_path, meta_path):
        if old.name not in (PARAMS_FILE, METADATA_FILE):
            old.unlink()
    return directory


def _read_metadata(path: pathlib.Path) -> dict:
    try:
        meta = json.loads(path.read_text())
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise ValueError(f"{path} is not valid JSON (damaged or not a weights metadata file): {e}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path} must hold a JSON object; got {type(meta).__name__}")
    return meta


def _restore(path: pathlib.Path, data: bytes):
    try:
        return serialization.msgpack_restore(data)
    except Exception as e:  # noqa: BLE001 - msgpack raises several types for a damaged file
        raise ValueError(f"{path} cannot be decoded (truncated or damaged): {type(e).__name__}: {e}") from None


def _check_finite(tree, what: str) -> None:
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.inexact) and not np.isfinite(leaf).all():
            bad = int(leaf.size - np.isfinite(leaf).sum())
            raise ValueError(f"{what}: leaf {jax.tree_util.keystr(path)} has {bad} non-finite values (NaN or inf)")
