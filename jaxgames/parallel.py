"""Scale-out: a device mesh over the batch axis, batch sharding, padding, chunking and gathering.

Every batched kernel of jaxgames has ONE ``vmap`` boundary (runs of a sweep,
games of an arena, self-play games of a learner). This module spreads that
leading axis over the devices of a one-axis mesh (``jax.make_mesh``, axis
name ``"batch"``): inputs are placed with ``NamedSharding(mesh, P("batch"))``,
parameters with ``NamedSharding(mesh, P())`` (replicated), and the jitted
function runs as one SPMD program; XLA inserts the collectives (for
data-parallel training: the all-reduce of the gradients). No ``pmap``, no
``device_put_replicated``.

`pad_batch` pads with copies of the last row (a real row, so padding never
computes NaNs from zero-filled settings); `map_batched` runs any batch size in
sharded chunks, equal to one call when rows are independent.

Which results equal one device's: a computation whose rows are independent
(the tabular sweep, the arena with JAX agents) gets the same random numbers
per row on any number of devices (one key per row; with
``jax_threefry_partitionable``, ``split(key, n)[:m] == split(key, m)``), and
the tests find it bitwise equal. But the sharded SPMD program is partitioned
and fused anew, so XLA may round it differently: one run in 104 of a
100,000-iteration Boltzmann sweep on biased rock-paper-scissors differed by
1 ulp on 2 CPU devices. Where bits must match, run the one-device program on
each device (``tabular.run_sweep(devices=...)``). A reduction across the
batch (a minibatch loss, gradients, BatchNorm statistics) is summed in
another order once split over devices, so learners agree with one device up
to float32 rounding only.

Multi-host recipe
-----------------
One process per host, every process runs the same script and, before any
other JAX call::

    import jax
    from jaxgames import parallel

    parallel.initialize_distributed()      # SLURM / TPU pods / Open MPI: auto-detected
    mesh = parallel.make_mesh()            # every device of every process
    out = run_sweep(..., mesh=mesh)        # each process passes the SAME global inputs
    if jax.process_index() == 0:
        save(out)                           # results were gathered to every process

Inputs are global: every process builds the same host arrays and `shard_batch`
hands each device its slice (``jax.make_array_from_callback``). Under SLURM,
``srun .venv/bin/python my_sweep.py`` (``jax.distributed.initialize()`` reads
``SLURM_*`` itself). Without a cluster manager, on every host with its own id::

    JAX_COORDINATOR_ADDRESS=10.0.0.1:1234 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=0 \\
        .venv/bin/python my_sweep.py      # JAX_PROCESS_ID=1 on the 2nd host

The coordinator listens on every network interface by default (JAX's
default); for a run that must stay private add
``JAX_COORDINATOR_BIND_ADDRESS=10.0.0.1:1234`` (the address of a private
interface) on process 0. Checkpoints on several processes: every process
creates the same `jaxgames.checkpoint.Checkpointer` on a folder all of them
reach and calls it in the same order (its docstring); the learners' resume
through `jaxgames.learners.loop.train` follows that rule
(``tests/test_checkpoint_multiprocess.py``).
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

__all__ = [
    "BATCH_AXIS",
    "make_mesh",
    "batch_sharding",
    "replicated",
    "pad_batch",
    "unpad",
    "shard_batch",
    "replicate",
    "map_batched",
    "gather",
    "batch_size_of",
    "num_shards",
    "initialize_distributed",
]

BATCH_AXIS = "batch"
"""The name of the mesh axis the batch is split over."""


def make_mesh(num_devices: int | None = None, *, devices=None) -> Mesh:
    """A one-axis mesh ``("batch",)`` over ``num_devices`` devices.

    Args:
        num_devices: how many devices (default: all of ``devices``).
        devices: the devices to take them from, in order (default
            ``jax.devices()``: every device of every process).

    Returns:
        A `jax.sharding.Mesh` of shape ``(num_devices,)``.

    Raises:
        ValueError: ``num_devices`` not a positive int, or more than available.
    """
    devices = list(jax.devices() if devices is None else devices)
    if num_devices is None:
        num_devices = len(devices)
    if isinstance(num_devices, bool) or not isinstance(num_devices, (int, np.integer)) or num_devices < 1:
        raise ValueError(f"num_devices must be a positive int; got {num_devices!r}")
    if num_devices > len(devices):
        raise ValueError(
            f"num_devices={num_devices} but only {len(devices)} device(s) are available "
            f"({devices[0].platform if devices else 'none'}); on CPU, XLA_FLAGS=--xla_force_host_platform_device_count=N "
            "set before JAX starts gives N host devices"
        )
    # Auto axis types: jit sees ordinary (unsharded-typed) arrays and XLA's
    # partitioner propagates the input shardings, so the kernels run unchanged
    # (Explicit axes would demand out_sharding annotations inside them).
    return jax.make_mesh(
        (int(num_devices),), (BATCH_AXIS,), axis_types=(AxisType.Auto,), devices=devices[: int(num_devices)]
    )


def _check_mesh(mesh) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh (parallel.make_mesh); got {type(mesh).__name__}")
    if BATCH_AXIS not in mesh.axis_names:
        raise ValueError(f"mesh needs an axis named {BATCH_AXIS!r}; got axes {mesh.axis_names}")
    return mesh


def num_shards(mesh: Mesh) -> int:
    """The number of slices the batch axis is cut into (devices along ``"batch"``)."""
    return int(_check_mesh(mesh).shape[BATCH_AXIS])


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """``NamedSharding(mesh, P("batch"))``: leading axis split over the devices, the rest whole."""
    return NamedSharding(_check_mesh(mesh), P(BATCH_AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    """``NamedSharding(mesh, P())``: a full copy on every device (parameters, keys, scalars)."""
    return NamedSharding(_check_mesh(mesh), P())


def batch_size_of(tree) -> int:
    """The common leading axis ``B`` of every leaf of ``tree``.

    Raises:
        ValueError: no leaves, a scalar leaf, or leaves disagreeing on ``B``.
    """
    leaves = jax.tree.leaves(tree)
    if not leaves:
        raise ValueError("the batch has no array leaves")
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in leaves}
    if None in sizes:
        raise ValueError("every leaf of a batch needs a leading batch axis; got a scalar leaf")
    if len(sizes) != 1:
        raise ValueError(f"the leaves of a batch disagree on the leading axis: {sorted(sizes)}")
    return int(sizes.pop())


def pad_batch(tree, multiple: int):
    """Pads the leading axis to a multiple of ``multiple`` by repeating the last row.

    Args:
        tree: pytree of arrays ``[B, ...]`` (numpy or JAX; typed PRNG keys too).
        multiple: positive int (e.g. the device count).

    Returns:
        ``(padded, B)``: leaves ``[ceil(B / multiple) * multiple, ...]`` (the
        same objects when no padding is needed) and the original ``B`` for
        `unpad`.

    Raises:
        ValueError: ``multiple < 1``, an empty batch, or see `batch_size_of`.
    """
    if multiple < 1:
        raise ValueError(f"multiple must be >= 1; got {multiple}")
    n = batch_size_of(tree)
    if n == 0:
        raise ValueError("cannot pad an empty batch (B = 0)")
    target = math.ceil(n / multiple) * multiple
    if target == n:
        return tree, n
    idx = np.minimum(np.arange(target), n - 1)
    return jax.tree.map(lambda x: x[idx], tree), n


def unpad(tree, num_valid: int):
    """The first ``num_valid`` rows of every leaf (undoes `pad_batch`)."""
    return jax.tree.map(lambda x: x[:num_valid], tree)


def _place(x, sharding: NamedSharding):
    """One leaf onto ``sharding``; works across processes when ``x`` is the same global array everywhere."""
    if isinstance(x, jax.Array) and jax.process_count() == 1:
        return jax.device_put(x, sharding)
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        impl = jax.random.key_impl(x)
        data = _place(jax.random.key_data(x), sharding)
        return jax.random.wrap_key_data(data, impl=impl)
    if isinstance(x, jax.Array) and x.is_fully_addressable:
        x = np.asarray(x)
    if isinstance(x, jax.Array):  # already global (non-addressable): let jit-style resharding do it
        return jax.device_put(x, sharding)
    x = np.asarray(x)
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def shard_batch(tree, mesh: Mesh, *, pad: bool = False):
    """Places ``tree`` on ``mesh`` with its leading axis split over the devices.

    Args:
        tree: pytree of arrays ``[B, ...]``, the same global values on every process.
        mesh: from `make_mesh`.
        pad: pad ``B`` up to a multiple of the device count (`pad_batch`)
            instead of refusing; cut the results with `unpad`.

    Returns:
        The pytree with every leaf a `jax.Array` sharded ``P("batch")``
        (``[B_padded, ...]`` with ``pad=True``).

    Raises:
        ValueError: ``B`` not a multiple of the device count and ``pad=False``,
            or see `batch_size_of`.
    """
    d = num_shards(mesh)
    n = batch_size_of(tree)
    if n % d:
        if not pad:
            raise ValueError(
                f"batch size {n} is not a multiple of the {d} devices of the mesh; pass pad=True "
                f"(pads to {math.ceil(n / d) * d} by repeating the last row) or change the batch size"
            )
        tree, _ = pad_batch(tree, d)
    sharding = batch_sharding(mesh)
    return jax.tree.map(lambda x: _place(x, sharding), tree)


def replicate(tree, mesh: Mesh):
    """Places ``tree`` (parameters, optimizer state, scalars) whole on every device of ``mesh``."""
    sharding = replicated(mesh)
    return jax.tree.map(lambda x: _place(x, sharding), tree)


def gather(tree):
    """Every leaf back on the host as a numpy array, whole (on every process).

    With one process this is ``jax.device_get``; with several, leaves that
    span other processes' devices are collected with
    ``multihost_utils.process_allgather`` (a collective: every process must
    call it). Write files from ``jax.process_index() == 0`` only.
    """
    if jax.process_count() == 1:
        return jax.tree.map(np.asarray, jax.device_get(tree))

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(one, tree)


def map_batched(
    fn: Callable,
    batch,
    *,
    mesh: Mesh | None = None,
    chunk_size: int | None = None,
    shared: Any = (),
):
    """``fn(batch_chunk, *shared)`` over a batch of any size, in chunks, sharded over ``mesh``.

    Every chunk is padded to the same number of rows (one compilation of
    ``fn``): ``chunk_size`` rounded up to a multiple of the device count
    (the whole batch, padded, if ``chunk_size`` is None). The results of the
    chunks are gathered to the host and concatenated, so if ``fn`` treats its
    rows independently the result equals one unchunked, unsharded call
    bitwise.

    Args:
        fn: a jitted function of a batch ``[C, ...]`` (and the ``shared``
            arguments) returning a pytree with a leading ``[C]`` axis.
        batch: pytree of arrays ``[B, ...]``.
        mesh: from `make_mesh` (None: the default device, unsharded).
        chunk_size: rows per call (None: all of them).
        shared: tuple of further arguments, replicated on the mesh (parameters).

    Returns:
        The concatenated outputs as numpy arrays ``[B, ...]``.

    Raises:
        ValueError: ``chunk_size < 1``, or see `batch_size_of`.
    """
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    n = batch_size_of(batch)
    d = 1 if mesh is None else num_shards(mesh)
    chunk = math.ceil(min(n, chunk_size or n) / d) * d
    if mesh is not None:
        shared = replicate(shared, mesh)
    outputs = []
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        idx = np.minimum(np.arange(lo, lo + chunk), hi - 1)  # pad with the chunk's last row
        piece = jax.tree.map(lambda x: x[idx], batch)
        if mesh is not None:
            piece = shard_batch(piece, mesh)
        outputs.append(unpad(gather(fn(piece, *shared)), hi - lo))
    return jax.tree.map(lambda *xs: np.concatenate(xs), *outputs)


HOST_DEVICE_FLAG = "--xla_force_host_platform_device_count"


def one_host_device_per_core(environ=None) -> int:
    """Asks XLA for one CPU device per usable core, so a mesh can spread a batch over the cores.

    Appends ``--xla_force_host_platform_device_count=N`` (``N``: the cores
    this process may run on) to ``XLA_FLAGS`` unless it already sets a
    count. XLA reads the flag when JAX starts its first backend, so call this
    first (a script's ``if __name__ == "__main__":`` block). It adds CPU
    devices only: on a GPU, ``jax.devices()`` still lists the GPUs.

    Args:
        environ: the environment to change (default ``os.environ``).

    Returns:
        The CPU device count asked for (the one already set, if any).

    Raises:
        RuntimeError: a JAX backend has already started (the flag would be ignored).
        ValueError: ``XLA_FLAGS`` already sets a count that is not a positive integer.
    """
    from jax._src import xla_bridge

    environ = os.environ if environ is None else environ
    flags = environ.get("XLA_FLAGS", "")
    for flag in flags.split():
        if flag.startswith(HOST_DEVICE_FLAG + "="):
            value = flag.split("=", 1)[1]
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"XLA_FLAGS sets {flag!r}: not a positive device count")
            return int(value)
    started = getattr(xla_bridge, "backends_are_initialized", lambda: False)  # private: absent in some versions
    if environ is os.environ and started():
        raise RuntimeError("one_host_device_per_core must run before JAX starts a backend (before the first "
                           "array is made); the CPU device count is fixed from then on")
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    environ["XLA_FLAGS"] = f"{flags} {HOST_DEVICE_FLAG}={cores}".strip()
    return cores


def initialize_distributed(**kwargs) -> None:
    """``jax.distributed.initialize`` for multi-host runs (call first, on every process).

    Without arguments JAX detects SLURM, Open MPI and TPU pods itself; the
    environment variables ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``,
    ``JAX_PROCESS_ID`` and ``JAX_COORDINATOR_BIND_ADDRESS`` are passed on when
    set (hosts without a cluster manager). Keyword arguments go to ``jax.distributed.initialize`` and win.

    Raises:
        ValueError: ``JAX_NUM_PROCESSES``/``JAX_PROCESS_ID`` not integers.
    """
    env = {
        "coordinator_address": os.environ.get("JAX_COORDINATOR_ADDRESS"),
        "num_processes": os.environ.get("JAX_NUM_PROCESSES"),
        "process_id": os.environ.get("JAX_PROCESS_ID"),
        "coordinator_bind_address": os.environ.get("JAX_COORDINATOR_BIND_ADDRESS"),
    }
    for name in ("num_processes", "process_id"):
        if env[name] is not None:
            try:
                env[name] = int(env[name])
            except ValueError:
                raise ValueError(f"JAX_{name.upper()} must be an integer; got {env[name]!r}") from None
    args = {k: v for k, v in env.items() if v is not None}
    args.update(kwargs)
    jax.distributed.initialize(**args)
