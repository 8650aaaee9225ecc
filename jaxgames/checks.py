"""Argument checks at the Python boundary: one message style for every setting of every module.

Each check returns the value converted (``int``/``float``) or raises before any
work: `TypeError` for the wrong kind (a bool where an int is meant counts as
wrong), `ValueError` for a value out of range, naming the setting as the user
typed it. Floats must be finite unless a check says otherwise: ``inf`` and
``nan`` are refused as out of range.

`check_memory` refuses, up front, settings whose first call would not fit in
the device's memory (each learner estimates its own arrays per setting; this
module compares them with what the machine has and names the setting).
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence

import jax
import numpy as np


def integer(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]`` (None: unbounded).

    Raises:
        TypeError: not an int (bools are refused).
        ValueError: out of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int; got {value!r}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be an int in [{'-inf' if lo is None else lo}, "
                         f"{'inf' if hi is None else hi}]; got {value}")
    return value


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int >= 1 (raises as `integer`)."""
    return integer(name, value, lo=1)


def non_negative_int(name: str, value: Any) -> int:
    """``value`` as an int >= 0 (raises as `integer`)."""
    return integer(name, value, lo=0)


def real(name: str, value: Any, lo: float | None = None, hi: float | None = None, *,
         lo_open: bool = False, hi_open: bool = False, dtype: Any = None) -> float:
    """``value`` as a finite float in the interval from ``lo`` to ``hi`` (open ends where asked; None: unbounded).

    With ``dtype`` (e.g. ``np.float32``, what a jitted learner computes in) the
    value must also be finite in that dtype: ``1e300`` is a finite Python float
    but overflows float32 to ``inf``.

    Raises:
        TypeError: not a real number (bools are refused).
        ValueError: NaN, infinite (in ``dtype`` too, if given) or out of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number; got {value!r}")
    value = float(value)
    below = lo is not None and (value < lo or (lo_open and value == lo))
    above = hi is not None and (value > hi or (hi_open and value == hi))
    overflows = dtype is not None and math.isfinite(value) and abs(value) > float(np.finfo(dtype).max)
    if not math.isfinite(value) or overflows or below or above:
        left = "(-inf" if lo is None else f"{'(' if lo_open else '['}{lo:g}"
        right = "inf)" if hi is None else f"{hi:g}{')' if hi_open else ']'}"
        finite = f"finite {np.dtype(dtype).name} number" if dtype is not None else "finite number"
        raise ValueError(f"{name} must be a {finite} in {left}, {right}; got {value!r}")
    return value


def positive_float(name: str, value: Any) -> float:
    """``value`` as a finite float > 0 (raises as `real`)."""
    return real(name, value, lo=0.0, lo_open=True)


def non_negative_float(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0 (raises as `real`)."""
    return real(name, value, lo=0.0)


def probability(name: str, value: Any) -> float:
    """``value`` as a float in [0, 1] (raises as `real`)."""
    return real(name, value, lo=0.0, hi=1.0)


def choice(name: str, value: Any, choices: Sequence) -> Any:
    """``value`` if it is one of ``choices``.

    Raises:
        ValueError: another value (the message lists the choices).
    """
    if value not in tuple(choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}; got {value!r}")
    return value


def available_memory() -> tuple[int, str]:
    """``(bytes, where)``: what the default device can still hold, and a phrase naming it.

    An accelerator's ``bytes_limit`` less its ``bytes_in_use``
    (``Device.memory_stats``); on the CPU (or a device without statistics) the
    host's ``MemAvailable`` (``/proc/meminfo``), else its physical memory.
    """
    dev = jax.devices()[0]
    if dev.platform != "cpu":
        stats = dev.memory_stats() or {}
        limit = stats.get("bytes_limit")
        if limit:
            return int(limit) - int(stats.get("bytes_in_use", 0)), f"{dev.platform} memory"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "available host memory"
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")), "host memory"


def check_memory(need: Mapping[str, tuple[Any, float]], *, what: str = "the first call", fraction: float = 0.8,
                 available: tuple[int, str] | None = None, hint: Mapping[str, str] | None = None) -> None:
    """Raises ``ValueError`` naming the setting that needs most memory when the total exceeds ``fraction`` of it.

    Args:
        need: per setting (as the user types it) ``(value, bytes)``: its value and the
            estimated bytes of the arrays it scales.
        what: the work estimated, for the message (e.g. ``"a generation"``).
        fraction: share of the available memory the estimate may use, in (0, 1].
        available: ``(bytes, where)`` (default `available_memory`).
        hint: per setting, further settings to lower (e.g. ``{"num_games": "num_turns"}``).

    Raises:
        ValueError: the estimate does not fit (message: the setting and its value, what
            it needs, the total, and what the machine has).
    """
    fraction = real("fraction", fraction, 0.0, 1.0, lo_open=True)
    avail, where = available_memory() if available is None else available
    total = float(sum(b for _, b in need.values()))
    if not need or total <= fraction * avail:
        return
    worst = max(need, key=lambda k: need[k][1])
    value, size = need[worst]
    more = (hint or {}).get(worst)
    raise ValueError(
        f"{worst}={value} does not fit in memory: {what} needs about {_gib(total)} ({worst}: {_gib(size)}) "
        f"and the {where} is {_gib(avail)}; lower {worst}" + (f" or {more}" if more else "")
    )


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**27 else f"{n / 2**20:.0f} MiB"
