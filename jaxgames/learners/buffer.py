"""The project's replay buffer: a fixed-size ring of items on the device, filled through a valid mask.

A buffer holds one pytree of arrays with a leading ``[capacity, ...]`` axis.
`buffer_add` appends the rows of a batch that a bool mask marks valid (e.g.
self-play positions whose game ended inside the scan), in order, and
`buffer_sample` draws uniformly with replacement from the items held; both
are pure and jittable, so the buffer lives in a learner's state and its
checkpoints.

Donate the buffer to the jitted call that adds to it (``donate_argnums``):
otherwise `buffer_add`'s scatter cannot write over its input, and XLA copies
the whole ring into a new array on every call (0.33 GB for AlphaZero's
Onitama buffer of 65536 positions: 0.6-0.8 s against 12 ms per add of 4096
rows, medians on 2 busy CPU cores, jax 0.10.2). The learners do
(`jaxgames.learners.alphazero.compiled` with ``donate=True``); the donated
buffer is deleted, so read only the one returned.

Why not flashbax (Toledo et al. 2023, a maintained JAX replay-buffer
library): its item buffer has no valid-mask add, and the compaction it needs
made add+sample 25% slower at AlphaZero's shapes (320 against 255 us per
call on 2 CPU cores; 32 games x 24 moves added, 128 drawn) while writing the
discarded rows over held items, so the project keeps this ring.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxgames import checks


@struct.dataclass
class ReplayBuffer:
    """A fixed-size ring of items on the device (one pytree of arrays).

    Attributes:
        data: pytree whose leaves have a leading axis ``[capacity, ...]``.
        insert: int32 ``[]``: the slot the next item goes to.
        size: int32 ``[]``: items held, at most ``capacity``.
        capacity: static int.

    When full, each new item overwrites the oldest (first in, first out).
    """

    data: Any
    insert: jax.Array
    size: jax.Array
    capacity: int = struct.field(pytree_node=False)


def buffer_init(example, capacity: int) -> ReplayBuffer:
    """An empty buffer for items shaped like ``example`` (one item, no leading axis).

    Raises:
        TypeError, ValueError: ``capacity`` not an int >= 1.
    """
    capacity = checks.positive_int("capacity", capacity)
    data = jax.tree.map(lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example)
    return ReplayBuffer(data=data, insert=jnp.int32(0), size=jnp.int32(0), capacity=capacity)


def buffer_add(buffer: ReplayBuffer, items, valid: jax.Array | None = None) -> ReplayBuffer:
    """Appends the ``valid`` rows of ``items`` (leading axis ``[N]``) in order (jittable).

    Rows go to consecutive slots from ``buffer.insert`` on, wrapping around.
    If more than ``capacity`` rows are valid only the last ``capacity`` are
    kept (the others would be overwritten in the same call anyway).

    Args:
        buffer: the buffer.
        items: pytree with leaves ``[N, ...]`` matching ``buffer.data``'s item shapes.
        valid: bool ``[N]`` (default all True).
    """
    n = jax.tree.leaves(items)[0].shape[0]
    valid = jnp.ones((n,), bool) if valid is None else valid.astype(bool)
    cap = buffer.capacity
    rank = jnp.cumsum(valid.astype(jnp.int32)) - 1  # position among the valid rows
    count = jnp.sum(valid.astype(jnp.int32))
    keep = valid & (rank >= count - cap)
    slot = jnp.where(keep, (buffer.insert + rank) % cap, cap)  # cap = out of range: dropped
    data = jax.tree.map(lambda d, x: d.at[slot].set(x.astype(d.dtype), mode="drop"), buffer.data, items)
    return buffer.replace(
        data=data,
        insert=((buffer.insert + count) % cap).astype(jnp.int32),
        size=jnp.minimum(buffer.size + count, cap).astype(jnp.int32),
    )


def buffer_sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int):
    """``batch_size`` items drawn uniformly with replacement from the ``size`` held (jittable).

    An empty buffer gives copies of slot 0 (zeros); callers add before sampling.
    """
    idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda d: d[idx], buffer.data)
