"""Orbax checkpoints of a training run, under the results-folder rules of `jaxgames.experiment`.

A thin wrapper over `orbax.checkpoint.CheckpointManager` (which writes each
step under a temporary name and renames it when complete, so a kill during a
save leaves no partial step under a step's name). It adds the rules every
results folder follows (``shared/STYLE.md``, "Results and checkpoints"):

* the config is saved beside the checkpoints (``config.json``) and a run with
  other settings is refused (`jaxgames.experiment.ConfigMismatch`), unless
  ``overwrite=True``, which deletes the old run's steps first;
* the same lock as the experiments: a second live run on the folder gets
  `jaxgames.experiment.ResultsDirLocked`;
* a content checksum per leaf of every saved step (``checksums.json``),
  verified on a restore with a template;
* a latest step that cannot be restored (a damaged or partial copy, or one
  whose content does not match its checksums) is moved
  aside to ``.corrupt/`` with a `CheckpointWarning` and the previous good step
  is restored instead.

Usage in a learner (the whole pattern; resume is exact if the training step
depends only on ``state``, which holds the PRNG key)::

    from jaxgames.checkpoint import Checkpointer

    with Checkpointer(directory, config, max_to_keep=3) as ckpt:
        restored = ckpt.latest(template=init_state)   # None, or (step, state)
        step, state = restored if restored is not None else (0, init_state)
        while step < num_steps:
            state = train_step(state)                    # state: params, opt_state, key, ...
            step += 1
            if step % save_every == 0:
                ckpt.save(step, state)

``state`` may be any pytree of arrays and scalars: Flax params, optax
states, step counters and typed JAX PRNG keys (``jax.random.key``; orbax
restores them as typed keys) or raw ``uint32`` keys. Restoring with
``template`` (a pytree of the same structure, concrete arrays or
``jax.ShapeDtypeStruct``; e.g. the freshly initialised state) gives back your
own containers (NamedTuples, ``flax.struct`` dataclasses) and dtypes; without
it the tree comes back as nested dicts and lists.

Several JAX processes (``jax.distributed.initialize``, one shared folder):
every process creates a `Checkpointer` and calls `save`, `restore`, `latest`
and `close` with the same arguments in the same order, as Orbax requires.
Process 0 alone takes the lock, writes ``config.json`` and moves damaged
steps aside; the others check their config against it after a barrier, so
every process raises the same kind of error. A template leaf with a
``sharding`` is restored on that sharding; any other leaf comes back whole
on the process's first local device.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import time
import warnings
import zlib
from typing import Any, Sequence

import jax
import numpy as np
import orbax.checkpoint as ocp
from jax.experimental import multihost_utils

from jaxgames.experiment import (ConfigMismatch, NEUTRAL_FIELDS, ResultsDir, ResultsDirError, ResultsDirLocked,
                                 atomic_write_bytes)

__all__ = ["Checkpointer", "CheckpointError", "CheckpointWarning"]

CORRUPT_DIR = ".corrupt"
CHECKSUMS_NAME = "checksums.json"
"""Per step, one CRC-32 per leaf of the saved pytree (None for a leaf not held whole by this process)."""
_STEP_RE = re.compile(r"^\d+$")
_ORBAX_TMP_RE = re.compile(r"^\d+\.orbax-checkpoint-tmp-\d+$")


class CheckpointError(ResultsDirError):
    """No step of the folder could be restored."""


class CheckpointWarning(UserWarning):
    """A damaged checkpoint step was skipped (and moved aside)."""


# Outcome codes of process 0 opening the folder, shared with the other processes.
_OPEN_OK, _OPEN_LOCKED, _OPEN_MISMATCH, _OPEN_OTHER = 0, 1, 2, 3


def _multiprocess() -> bool:
    return jax.process_count() > 1


def _barrier(name: str) -> None:
    """Every process waits here until all have arrived (a no-op with one process)."""
    if _multiprocess():
        multihost_utils.sync_global_devices(f"jaxgames.checkpoint.{name}")


def _allgather_int(value: int) -> list[int]:
    """``value`` of every process, in process order (a barrier too); ``[value]`` with one process."""
    if not _multiprocess():
        return [int(value)]
    return [int(v) for v in np.asarray(multihost_utils.process_allgather(np.int32(value))).reshape(-1)]


def _leaf_checksums(tree: Any) -> list:
    """CRC-32 of each array leaf's bytes (typed PRNG keys: of their key data); None for Python
    scalars and for arrays not held whole by this process."""
    out = []
    for leaf in jax.tree.leaves(tree):
        if hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        if not hasattr(leaf, "dtype") or (isinstance(leaf, jax.Array) and not leaf.is_fully_addressable):
            out.append(None)
            continue
        out.append(zlib.crc32(np.ascontiguousarray(np.asarray(leaf)).tobytes()))
    return out


class _CheckpointDir(ResultsDir):
    """A results folder whose overwrite also deletes the old run's checkpoint steps."""

    def _clear_previous(self, diffs: list[str]) -> None:
        for item in self.path.iterdir():
            if item.is_dir() and (_STEP_RE.match(item.name) or _ORBAX_TMP_RE.match(item.name) or item.name == CORRUPT_DIR):
                shutil.rmtree(item)
            elif item.name == CHECKSUMS_NAME:
                item.unlink()
        super()._clear_previous(diffs)


class Checkpointer:
    """Checkpoints of one run in ``directory``: save a pytree per step, restore the latest good one.

    Args:
        directory: the run's checkpoint folder (created). Holds
            ``config.json``, ``.lock`` and one sub-folder per step.
        config: the run's settings (dataclass, NamedTuple or mapping),
            compared with the folder's ``config.json``; fields in ``neutral``
            are not compared.
        max_to_keep: newest steps kept (older ones are deleted by orbax);
            None keeps all. At least 2 lets `latest` fall back past a
            damaged step.
        overwrite: the folder holds another configuration's run: delete it
            (steps and files) instead of refusing.
        neutral: config fields that do not change the run (default
            `jaxgames.experiment.NEUTRAL_FIELDS`).
        async_save: return from `save` once the arrays are copied to host and
            write in a background thread (orbax's default); `close` waits.

    Raises:
        jaxgames.experiment.ResultsDirLocked: another live process uses the folder.
        jaxgames.experiment.ConfigMismatch: the folder holds a run of other settings.
        ValueError: ``max_to_keep`` < 1.

    The lock is held until `close` (or the end of a ``with`` block, or the
    process's death).
    """

    def __init__(self, directory: str | os.PathLike, config: Any, *, max_to_keep: int | None = 3,
                 overwrite: bool = False, neutral: Sequence[str] = NEUTRAL_FIELDS, async_save: bool = True):
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"max_to_keep must be >= 1 or None; got {max_to_keep}")
        self._ocp = ocp
        self._primary = jax.process_index() == 0
        if _multiprocess():
            self._dir = self._open_shared(_CheckpointDir(directory, config, overwrite=overwrite, neutral=neutral))
        else:
            self._dir = _CheckpointDir(directory, config, overwrite=overwrite, neutral=neutral).open()
        self.directory = self._dir.path.resolve()
        # several processes: the handler named up front, so that item_metadata (a restore without a
        # template) can read a step this manager has not saved or restored yet
        handler = {"item_handlers": ocp.StandardCheckpointHandler()} if _multiprocess() else {}
        try:
            self._manager = ocp.CheckpointManager(
                self.directory,
                options=ocp.CheckpointManagerOptions(
                    max_to_keep=max_to_keep, create=True, cleanup_tmp_directories=True,
                    enable_async_checkpointing=async_save,
                ),
                **handler,
            )
        except BaseException:
            self._dir.close()
            raise

    def _open_shared(self, folder: _CheckpointDir) -> _CheckpointDir:
        """Several processes: process 0 locks, checks and claims the folder; the others check their config after it.

        Every process raises if any process cannot use the folder (the same
        class of error where the cause is shared), so none is left waiting at
        Orbax's barriers.
        """
        error: BaseException | None = None
        code = _OPEN_OK
        if self._primary:
            try:
                folder.open()
            except ResultsDirLocked as err:
                error, code = err, _OPEN_LOCKED
            except ConfigMismatch as err:
                error, code = err, _OPEN_MISMATCH
            except Exception as err:  # noqa: BLE001 - passed on to the other processes as a code, re-raised here
                error, code = err, _OPEN_OTHER
        first = _allgather_int(code)[0]  # the barrier: the others wait for process 0's outcome
        if self._primary and error is not None:
            raise error
        if not self._primary:
            try:
                if first == _OPEN_LOCKED:
                    raise ResultsDirLocked(f"checkpoint folder {folder.path}: process 0 could not take the lock "
                                           "(another run uses the folder; its error names the holder)")
                # process 0 has written config.json (or refused the folder's): this process's config must match it
                checker = _CheckpointDir(folder.path, folder.config, overwrite=False, neutral=folder.neutral)
                checker.check_config()
                if first == _OPEN_MISMATCH:
                    raise ConfigMismatch(f"checkpoint folder {folder.path}: process 0's config differs from the "
                                         "folder's config.json (see process 0's error)")
                if first != _OPEN_OK:
                    raise ResultsDirError(f"checkpoint folder {folder.path}: process 0 could not open it "
                                          "(see process 0's error)")
            except Exception as err:  # noqa: BLE001 - reported to every process by the gather below
                error, code = err, (_OPEN_MISMATCH if isinstance(err, ConfigMismatch) else _OPEN_OTHER)
            if first != _OPEN_OK:
                raise error
        codes = _allgather_int(code)  # every process's verdict, so that all go on or all stop
        bad = [i for i, c in enumerate(codes) if c != _OPEN_OK]
        if bad:
            folder.close()  # process 0 releases the lock
            if error is not None:
                raise error
            cls = ConfigMismatch if any(codes[i] == _OPEN_MISMATCH for i in bad) else ResultsDirError
            raise cls(f"checkpoint folder {folder.path}: process(es) {bad} cannot use it; their config differs "
                      f"from the one process 0 wrote to config.json (see their errors)")
        return folder

    # -- lifecycle

    def __enter__(self) -> "Checkpointer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Waits for a save in flight, closes the manager and releases the lock (idempotent)."""
        if self._manager is not None:
            try:
                self._manager.wait_until_finished()
                self._manager.close()
            finally:
                self._manager = None
                try:
                    _barrier("close")  # every process is done with the folder before process 0 unlocks it
                finally:
                    self._dir.close()  # a no-op on the processes other than 0 (they hold no lock)

    def _live(self):
        if self._manager is None:
            raise CheckpointError(f"the checkpointer of {self.directory} is closed")
        return self._manager

    # -- saving and restoring

    def steps(self) -> list[int]:
        """The saved steps, oldest first."""
        return sorted(self._live().all_steps())

    def save(self, step: int, pytree: Any, *, wait: bool = False) -> None:
        """Saves ``pytree`` as ``step`` (atomically: under a temporary name, renamed when complete).

        Args:
            step: a non-negative int, larger than every saved step.
            pytree: arrays and scalars (typed PRNG keys included).
            wait: block until it is on disk (else only until it is copied to host).

        Raises:
            ValueError: ``step`` negative or not above the latest saved step.
        """
        manager = self._live()
        step = int(step)
        latest = manager.latest_step()
        if step < 0 or (latest is not None and step <= latest):
            raise ValueError(f"step must be >= 0 and above the latest saved step {latest}; got {step}")
        manager.save(step, args=self._ocp.args.StandardSave(pytree), force=True)
        if self._primary:
            sums = {k: v for k, v in self._checksums().items() if int(k) in manager.all_steps() or int(k) == step}
            sums[str(step)] = _leaf_checksums(pytree)
            atomic_write_bytes(self.directory / CHECKSUMS_NAME, (json.dumps(sums) + "\n").encode())
        if wait:
            manager.wait_until_finished()

    def wait_until_finished(self) -> None:
        """Blocks until a save in flight is on disk."""
        self._live().wait_until_finished()

    def restore(self, step: int, template: Any = None) -> Any:
        """The pytree saved as ``step``; with ``template``, in its structure and dtypes, checked against
        the content checksums recorded when it was saved (`CHECKSUMS_NAME`).

        Raises:
            CheckpointError: with ``template``, content that does not match its checksums.
            whatever orbax raises for a missing or damaged step (FileNotFoundError, ValueError, ...).
        """
        manager = self._live()
        manager.wait_until_finished()
        if template is None:
            if not _multiprocess():
                return manager.restore(int(step), args=self._ocp.args.StandardRestore())
            # the saved shapes and dtypes, each leaf whole on this process's first local device
            metadata = manager.item_metadata(int(step))
            if metadata is None:
                raise FileNotFoundError(f"checkpoint step {step} in {self.directory} has no readable metadata")
            abstract = jax.tree.map(_whole_on_a_local_device, getattr(metadata, "tree", metadata))
            return manager.restore(int(step), args=self._ocp.args.StandardRestore(abstract))
        abstract = jax.tree.map(self._ocp.utils.to_shape_dtype_struct, template)
        if _multiprocess():
            abstract = jax.tree.map(_on_a_local_device_if_unsharded, abstract)
        return self._verified(step, manager.restore(int(step), args=self._ocp.args.StandardRestore(abstract)))

    def _checksums(self) -> dict:
        try:
            sums = json.loads((self.directory / CHECKSUMS_NAME).read_text())
            return sums if isinstance(sums, dict) else {}
        except (OSError, ValueError):
            return {}

    def _verified(self, step: int, tree: Any) -> Any:
        """``tree`` if its leaves match the checksums recorded when ``step`` was saved (or none were).

        Only restores with a template are checked: without one the leaves may come back in another order.
        """
        want = self._checksums().get(str(int(step)))
        if want is None:
            return tree
        got = _leaf_checksums(tree)
        if len(got) != len(want):
            raise CheckpointError(f"step {step} restored {len(got)} leaves; {len(want)} were saved")
        bad = [i for i, (w, g) in enumerate(zip(want, got)) if w is not None and g is not None and w != g]
        if bad:
            raise CheckpointError(f"step {step}: the content of {len(bad)} leaves (first: leaf {bad[0]}) does not "
                                  f"match the checksum recorded when it was saved ({CHECKSUMS_NAME}): damaged on disk")
        return tree

    def latest(self, template: Any = None) -> tuple[int, Any] | None:
        """``(step, pytree)`` of the newest step that restores, or None if nothing was saved yet.

        Steps newer than it that failed to restore are moved to
        ``<directory>/.corrupt/<step>-<unix time>`` with a `CheckpointWarning`
        (so training can save those step numbers again).

        Args:
            template: as in `restore`.

        Raises:
            CheckpointError: steps exist but none restores (nothing is moved:
                a wrong ``template`` must not discard good checkpoints).
        """
        manager = self._live()
        manager.wait_until_finished()
        failed: list[tuple[int, BaseException]] = []
        for step in reversed(self.steps()):
            try:
                tree, error = self.restore(step, template), None
            except Exception as err:  # noqa: BLE001 - orbax/tensorstore raise many types for a damaged step
                tree, error = None, err
            # several processes: a step counts as restored only if it restored on every process
            if min(_allgather_int(error is None)) == 0:
                failed.append((step, error if error is not None else CheckpointError(
                    f"step {step} could not be restored on another process")))
                continue
            for bad, err in failed:
                if self._primary:
                    where = str(self._quarantine(bad))
                else:
                    where = f"{self.directory / CORRUPT_DIR}/ (by process 0)"
                warnings.warn(f"checkpoint step {bad} in {self.directory} cannot be restored "
                              f"({type(err).__name__}: {str(err)[:300]}); moved to {where}; resuming from step {step}",
                              CheckpointWarning, stacklevel=2)
            if failed:
                _barrier("quarantine")  # the damaged steps are gone before any process re-reads the folder
                manager.reload()
            return step, tree
        if failed:
            step, err = failed[0]
            raise CheckpointError(
                f"no checkpoint in {self.directory} can be restored (steps {[s for s, _ in failed]}; newest error: "
                f"{type(err).__name__}: {str(err)[:300]}). If the template does not match the saved tree, fix it; "
                "if the steps are damaged, move them away or pass overwrite=True with another config to start over."
            ) from err
        return None

    def _quarantine(self, step: int) -> pathlib.Path:
        """Moves ``step`` to ``.corrupt/`` (process 0 only: it renames the shared folder's entries)."""
        corrupt = self.directory / CORRUPT_DIR
        corrupt.mkdir(exist_ok=True)
        target = corrupt / f"{step}-{int(time.time())}"
        os.replace(self.directory / str(step), target)
        return target


def _whole_on_a_local_device(meta):
    """The restore target of a saved leaf's metadata: whole, on this process's first local device."""
    if type(meta).__name__ == "ScalarMetadata":  # a Python scalar: restored as one
        kind = np.dtype(meta.dtype).kind
        return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}.get(kind, 0)
    if hasattr(meta, "shape") and hasattr(meta, "dtype"):
        return jax.ShapeDtypeStruct(tuple(meta.shape), meta.dtype,
                                    sharding=jax.sharding.SingleDeviceSharding(jax.local_devices()[0]))
    return meta


def _on_a_local_device_if_unsharded(x):
    """A restore target without a sharding (several processes): whole, on this process's first local device."""
    if isinstance(x, jax.ShapeDtypeStruct) and x.sharding is None:
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=jax.sharding.SingleDeviceSharding(jax.local_devices()[0]))
    return x
