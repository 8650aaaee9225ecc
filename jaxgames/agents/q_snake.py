"""The AlphaSnake Zero snake: greedy on a trained `QSnakeNet`, and its shipped weights.

Source: Siddiqui, Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement
Learning in a Synchronous Strategy Game" (University of Victoria report,
undated), section 3: the snake turns its egocentric view (eqs. 1-3) to face
up and plays the relative action with the largest Q-value (estimated win
rate).

By default `QSnakeAgent` loads the weights shipped in
``jaxgames/weights/q_snake/`` (`jaxgames.weights_io` format; the metadata
gives the network's shape, the view multipliers and whether the weights are
trained: a placeholder, ``"trained": false``, loads with an
`UntrainedWeightsWarning` and a name ending in ``(untrained)``). The network
reads views of the board size it was trained on (``2 board_size - 1``);
other sizes are padded with wall cells or cropped around the head
(`fit_view`), and the multipliers do not depend on the board size, so values
mean the same.

    python -m jaxgames.serve.battlesnake --agent q_snake
"""

from __future__ import annotations

import pathlib
import warnings

import jax
import jax.numpy as jnp

import numpy as np

from jaxgames import checks, weights_io
from jaxgames.agents.base import array_signature
from jaxgames.agents.battlesnake import QAgent, greedy_relative_move
from jaxgames.games.battlesnake import rules
from jaxgames.networks.q_snake import QSnakeNet, init_variables, rotated_views, validate_features, variable_shapes

WEIGHTS_DIR = pathlib.Path(__file__).resolve().parent.parent / "weights" / "q_snake"
"""The shipped weights' folder (package data)."""


class UntrainedWeightsWarning(UserWarning):
    """The weights loaded are a placeholder, not a trained snake."""


def save_weights(variables: dict, directory, metadata: dict) -> pathlib.Path:
    """Writes ``variables`` and ``metadata`` into ``directory`` in the one weights format (`jaxgames.weights_io.save`).

    Args:
        variables: ``{"params", "batch_stats"}`` of a `QSnakeNet`.
        directory: the folder (created).
        metadata: must hold ``features`` (list of ints), ``board_size`` and
            ``trained`` (bool); add the command and budget that made them.

    Raises:
        ValueError: metadata without those keys, variables of another shape
            than they say, or non-finite values.
    """
    for k in ("features", "board_size", "trained"):
        if k not in metadata:
            raise ValueError(f"weights metadata needs {k!r}; got keys {sorted(metadata)}")
    variables = {"params": variables["params"], "batch_stats": variables["batch_stats"]}
    _check_shapes(variables, metadata, "variables to save")
    return weights_io.save(directory, variables, metadata)


def load_weights(directory=None) -> tuple[dict, dict]:
    """``(variables, metadata)`` from a weights folder (default: the shipped `WEIGHTS_DIR`).

    Raises:
        FileNotFoundError: no weights there (the message says how to make them).
        ValueError: the checks of `jaxgames.weights_io.load` (checksum, finite
            values, readable files); metadata without the network's shape, or
            variables of another shape than its ``features``/``board_size`` say.
    """
    directory = pathlib.Path(WEIGHTS_DIR if directory is None else directory)
    try:
        variables, metadata = weights_io.load(directory)
    except FileNotFoundError as err:
        raise FileNotFoundError(
            f"no q_snake weights in {directory} ({err}); train them with "
            "`python experiments/q_snake.py ship=trained` (see jaxgames/weights/q_snake/README.md)"
        ) from None
    _check_shapes(variables, metadata, f"variables in {directory / weights_io.PARAMS_FILE}")
    return variables, metadata


def _check_shapes(variables: dict, metadata: dict, what: str) -> None:
    """Raises ``ValueError`` unless ``variables`` are those of the `QSnakeNet` that ``metadata`` describes."""
    try:
        features = validate_features(tuple(metadata["features"]))
        board_size = int(metadata["board_size"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{what}: metadata must give the network's features and board_size ({err})") from None
    v = 2 * board_size - 1
    expected = variable_shapes(jax.eval_shape(lambda: init_variables(QSnakeNet(features), jax.random.key(0), (v, v, 3))))
    if expected != variable_shapes(variables):
        raise ValueError(f"{what} are of another shape than features={features}, board_size={board_size} say")


def fit_view(view: jax.Array, size: int) -> jax.Array:
    """A rotated view ``[v, v, 3]`` padded with walls (``v < size``) or cropped around its centre (``v > size``) to ``[size, size, 3]``."""
    v = view.shape[0]
    if v == size:
        return view
    if v < size:
        p = (size - v) // 2
        pads = ((p, p), (p, p))
        return jnp.stack(
            [jnp.pad(view[..., 0], pads), jnp.pad(view[..., 1], pads, constant_values=1.0), jnp.pad(view[..., 2], pads)], -1
        )
    o = (v - size) // 2
    return view[o : o + size, o : o + size]


class QSnakeAgent(QAgent):
    """Greedy on a trained `QSnakeNet` (module docstring).

    Args:
        variables: ``{"params", "batch_stats"}``; default: the shipped weights
            (`load_weights` of ``weights_dir``).
        features: the network's filters (required with ``variables``).
        board_size: the board size the network was trained on (required with ``variables``).
        head_multiplier, body_multiplier: the view's scale the network was
            trained with (with ``variables``; default 0.1, the learner's default).
        weights_dir: a weights folder to load instead of the shipped one.
        trained: whether ``variables`` are trained (given ``variables``; a
            loaded folder says it in its metadata).
        name: a label (default ``"q_snake"``; ``"q_snake(untrained)"`` for a placeholder).

    Attributes:
        metadata: the weights' metadata (``{}`` for variables passed in).
        trained: bool.

    Raises:
        FileNotFoundError, ValueError: see `load_weights`; ``variables``
            without ``features``/``board_size``.
    """

    def __init__(
        self,
        variables: dict | None = None,
        *,
        features=None,
        board_size: int | None = None,
        head_multiplier: float = 0.1,
        body_multiplier: float = 0.1,
        weights_dir=None,
        trained: bool = True,
        name: str | None = None,
    ):
        if variables is None:
            variables, metadata = load_weights(weights_dir)
            features, board_size = tuple(metadata["features"]), int(metadata["board_size"])
            trained = bool(metadata.get("trained", False))
            head_multiplier = float(metadata.get("head_multiplier", head_multiplier))
            body_multiplier = float(metadata.get("body_multiplier", body_multiplier))
        else:
            if features is None or board_size is None:
                raise ValueError("QSnakeAgent(variables=...) needs features= and board_size= (the network's shape)")
            metadata = {}
        rules.validate_size(board_size, 1)
        self.metadata = metadata
        self.trained = trained
        self.features = validate_features(features)
        self.board_size = int(board_size)
        self.view_size = 2 * self.board_size - 1
        self.head_multiplier = checks.real("head_multiplier", head_multiplier, 0.0, lo_open=True, dtype=np.float32)
        self.body_multiplier = checks.real("body_multiplier", body_multiplier, 0.0, lo_open=True, dtype=np.float32)
        self.variables = variables
        self.net = QSnakeNet(features=self.features)
        if not trained:
            warnings.warn(
                "the q_snake weights loaded are an UNTRAINED placeholder (metadata 'trained': false), not a trained snake; "
                "train them with experiments/q_snake.py (jaxgames/weights/q_snake/README.md)",
                UntrainedWeightsWarning,
                stacklevel=2,
            )
        label = name if name is not None else ("q_snake" if trained else "q_snake(untrained)")
        super().__init__(self.q_values, name=label)

    def arrays(self):
        """``{"variables": ...}``: the network's variables, an argument of the compiled arena match."""
        return {"variables": self.variables}

    def settings_key(self, env) -> tuple:
        """The class, the network's features, board size and view multipliers, and the variables' shapes and dtypes."""
        return (type(self), self.features, self.board_size, self.head_multiplier, self.body_multiplier,
                array_signature(self.variables))

    def _replace_arrays(self, arrays) -> None:
        self.variables = arrays["variables"]
        self.q_function = self.q_values  # bound to this copy (QAgent's Q-function)

    def q_values(self, view: jax.Array) -> jax.Array:
        """float32 ``[3]``: the network's win rates of turn left, straight, turn right for one rotated view ``[view_size, view_size, 3]``."""
        return self.net.apply(self.variables, view[None], train=False)[0]

    def view(self, board: rules.Board, player: jax.Array) -> jax.Array:
        """float32 ``[view_size, view_size, 3]``: snake ``player``'s view, rotated to face up and fitted to the network (`fit_view`)."""
        rotated = rotated_views(board, self.head_multiplier, self.body_multiplier)[player]
        return fit_view(rotated, self.view_size)

    def policy(self, env, state, key: jax.Array, player: jax.Array) -> jax.Array:
        """int32 ``[]``: the absolute move of the relative action with the largest Q-value (a legal move even
        for NaN Q-values: `jaxgames.agents.battlesnake.greedy_relative_move`)."""
        del env, key
        board = state.board
        return greedy_relative_move(self.q_values(self.view(board, player)), board, player)


def is_shipped() -> bool:
    """Whether weights are present in `WEIGHTS_DIR` (trained or a placeholder)."""
    return (WEIGHTS_DIR / weights_io.PARAMS_FILE).is_file() and (WEIGHTS_DIR / weights_io.METADATA_FILE).is_file()
