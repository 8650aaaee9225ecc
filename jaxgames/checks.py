"""Argument checks at the Python boundary: one message style for every setting of every module.

Each check returns the value converted (``int``/``float``) or raises before any
work: `TypeError` for the wrong kind (a bool where an int is meant counts as
wrong), `ValueError` for a value out of range, naming the setting as the user
typed it. Floats must be finite unless a check says otherwise: ``inf`` and
``nan`` are refused as out of range.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

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
