"""The widths of a residual policy-value network, shared by the game networks' ``NetworkConfig``.

`jaxgames.networks.dots_and_boxes` and `jaxgames.networks.onitama` each
subclass `NetworkWidths` as their own ``NetworkConfig`` with their own
defaults. The subclasses stay distinct types (neither is an instance of the
other), since the AlphaZero learner and agent tell the game from the type of
the config (`jaxgames.agents.alphazero.game_of`); equal widths of two games
are not equal configs.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np


@dataclasses.dataclass(frozen=True)
class NetworkWidths:
    """Widths of a residual policy-value network (they fix the parameter shapes).

    Subclass it as a frozen dataclass that redeclares the four fields with
    the game's defaults (the field order stays the one below, so positional
    construction, ``dataclasses.asdict`` and the weights metadata keep it).

    Attributes:
        channels: channels of the trunk.
        num_blocks: residual blocks (each two 3x3 convolutions and a global-pooling bias).
        value_channels: channels of the value head's 1x1 convolution.
        value_hidden: units of the value head's hidden dense layer.

    Raises:
        ValueError: a width that is not a positive int (a bool is not one);
            the message names the field, as ``<error_name>.<field>``, and the value.
    """

    channels: int
    num_blocks: int
    value_channels: int
    value_hidden: int

    error_name: ClassVar[str] = "NetworkConfig"
    """How error messages name the config class (e.g. ``"onitama NetworkConfig"``)."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{self.error_name}.{f.name} must be a positive int; got {v!r}")
