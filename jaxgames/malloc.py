"""The C allocator's settings for long-running XLA:CPU processes (``benchmarks/networks.py``'s ``malloc=retain``)."""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD = -1
"""glibc's ``mallopt`` parameter: free memory at the top of the heap above this many bytes goes back to the system."""

M_MMAP_MAX = -4
"""glibc's ``mallopt`` parameter: how many blocks may be served by ``mmap`` at once (0: none, all from the heap)."""

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter: how many allocation arenas the threads may share (1: the main heap only)."""

TRIM_THRESHOLD_BYTES = 1 << 30
"""The trim threshold `retain_freed_memory` sets: 1 GiB."""


def retain_freed_memory() -> bool:
    """Makes glibc's ``malloc`` serve every block from the heap and keep freed memory; True if every setting took.

    XLA:CPU allocates a compiled step's temporaries afresh on every call; glibc
    hands blocks above its mmap threshold (at most 32 MB) to ``mmap`` and unmaps
    them on ``free``, so each call page-faults them in again (figures:
    ``benchmarks/README.md``, "Networks near the machine"). This sets ``mallopt(M_MMAP_MAX, 0)`` and
    ``mallopt(M_TRIM_THRESHOLD, 1 GiB)``: the process keeps up to 1 GiB of freed
    memory for its next allocations instead of returning it to the system.
    ``mallopt(M_ARENA_MAX, 1)`` keeps every thread on that one heap: a thread's
    own arena holds at most 64 MiB, so a step run on a pool thread could
    still get its temporaries mapped and unmapped afresh (the step's speed
    then varied from one process to the next; ``benchmarks/README.md``).
    It is process-wide and not undone here; call it before the first step. It
    returns False, and changes nothing, where the C library is not glibc (musl,
    macOS, Windows), and False where glibc refuses a setting.
    """
    try:
        libc = ctypes.CDLL(None)  # the C library this process already runs on
    except (OSError, TypeError):  # TypeError: Windows has no "the process itself" handle
        return False
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return False
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    return (bool(libc.mallopt(M_ARENA_MAX, 1)) and bool(libc.mallopt(M_MMAP_MAX, 0))
            and bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)))
