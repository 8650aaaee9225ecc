"""The AlphaZero agent: network-guided search for Dots-and-Boxes (any board size) and Onitama.

Built on a network module, `jaxgames.networks.dots_and_boxes` (one parameter
set for every board) or `jaxgames.networks.onitama` (the canonical 1250
actions), chosen by the type of the ``network`` config, and
`jaxgames.search.mcts.network_search` (mctx). Trained by
`jaxgames.learners.alphazero`; the package ships weights in
``jaxgames/weights/alphazero_dab/`` and ``jaxgames/weights/alphazero_onitama/``
(the `jaxgames.weights_io` format: ``params.msgpack``, ``metadata.json`` with
the game, the network widths, the value target, the command and budget that
trained them, and ``trained``: False for a placeholder).

    >>> from jaxgames.agents.alphazero import AlphaZeroAgent
    >>> agent = AlphaZeroAgent.from_weights()              # shipped Dots-and-Boxes weights, 64 simulations
    >>> agent = AlphaZeroAgent.from_weights(time_budget=0.15)  # as many simulations as fit in 150 ms
    >>> agent = AlphaZeroAgent.from_weights(game="onitama", num_simulations=32)
    >>> paper_space = PaperSpaceAlphaZero(agent, jaxgames.make("onitama"))  # plays Onitama(action_space="paper")
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import pathlib
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks, weights_io
from jaxgames.agents.base import JaxAgent, array_signature, masked_uniform_choice
from jaxgames.games.dots_and_boxes.env import DotsAndBoxes
from jaxgames.games.dots_and_boxes.positions import random_positions
from jaxgames.networks.dots_and_boxes import NetworkConfig
from jaxgames.search import mcts

WEIGHTS_DIR = pathlib.Path(__file__).resolve().parent.parent / "weights" / "alphazero_dab"
"""Where the shipped Dots-and-Boxes weights live (``params.msgpack`` + ``metadata.json``)."""

WEIGHTS_DIRS = {"dots_and_boxes": WEIGHTS_DIR, "onitama": WEIGHTS_DIR.parent / "alphazero_onitama"}
"""The shipped weights of each game."""

NETWORK_MODULES = {"dots_and_boxes": "jaxgames.networks.dots_and_boxes", "onitama": "jaxgames.networks.onitama"}
"""The network module of each game (same interface: ``NetworkConfig``, ``check_params``, ``make_evaluate``, ...)."""

DEFAULT_VALUE_TARGETS = {"dots_and_boxes": "margin", "onitama": "outcome"}


def network_module(game: str):
    """The network module of ``game`` (imported on first use).

    Raises:
        ValueError: a game without an AlphaZero network.
    """
    if game not in NETWORK_MODULES:
        raise ValueError(f"no AlphaZero network for game {game!r}; choose from {tuple(NETWORK_MODULES)}")
    return importlib.import_module(NETWORK_MODULES[game])


def game_of(network) -> str:
    """The game whose ``NetworkConfig`` ``network`` is.

    Raises:
        TypeError: not a ``NetworkConfig`` of a network module.
    """
    for game in NETWORK_MODULES:
        if isinstance(network, network_module(game).NetworkConfig):
            return game
    raise TypeError(f"network must be the NetworkConfig of one of {tuple(NETWORK_MODULES.values())}; got {network!r}")

_SHARED_JIT: dict = {}
"""Compiled agent policies by (kind, settings, env), kind ``"batch"`` (`AlphaZeroAgent.compiled`) or ``"one"``
(`AlphaZeroAgent.policy`): parameters are an argument, so agents of equal settings share them."""


def _traced(*trees) -> bool:
    """Whether any leaf of ``trees`` is a tracer (the call is inside someone's ``jit``/``vmap``/``grad``)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(trees))

SIMULATION_LADDER = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
"""Simulation counts tried by `simulations_for_budget`."""


# ----------------------------------------------------------------------------- weights files
def save_weights(directory, params, *, network, value_target: str, trained: bool, **info) -> pathlib.Path:
    """Writes ``params`` and their metadata into ``directory`` in the one weights format (`jaxgames.weights_io.save`).

    Args:
        directory: target folder (created).
        params: ``PolicyValueNet`` parameters (checked against ``network``).
        network: their ``NetworkConfig`` (Dots-and-Boxes or Onitama: the game is recorded).
        value_target: what the value head predicts (the network module's ``VALUE_TARGETS``).
        trained: False marks placeholder (untrained) weights; agents loading
            them warn and carry ``-untrained`` in their name.
        **info: JSON-able facts recorded beside them (command, budget, iterations, ...).

    Returns:
        The directory.

    Raises:
        ValueError: parameters that do not fit ``network`` or non-finite, an unknown value target.
    """
    game = game_of(network)
    module = network_module(game)
    module.check_params(params, network)
    module.check_value_target(value_target)
    meta = dict(game=game, network=dataclasses.asdict(network), value_target=value_target, trained=bool(trained), **info)
    return weights_io.save(directory, params, meta)


def load_weights(directory=None, *, game: str = "dots_and_boxes") -> tuple[dict, dict]:
    """Reads weights written by `save_weights` (default: the shipped ones of ``game``).

    Args:
        directory: a folder of `save_weights`, or None for ``WEIGHTS_DIRS[game]``.
        game: the game of the shipped weights (``directory=None`` only; a
            folder names its own game in its metadata, Dots-and-Boxes when absent).

    Returns:
        ``(params, metadata)``; ``metadata["game"]`` is always set.

    Raises:
        FileNotFoundError: a missing folder or file (names it).
        ValueError: the checks of `jaxgames.weights_io.load` (checksum, finite
            values, readable files); an unknown game, metadata without a valid
            network, or parameters of another shape (names the file and the first mismatching leaf).
    """
    if directory is None:
        network_module(game)  # an unknown game: ValueError naming it
    directory = pathlib.Path(WEIGHTS_DIRS[game] if directory is None else directory)
    params, meta = weights_io.load(directory)
    meta_path = directory / weights_io.METADATA_FILE
    meta.setdefault("game", "dots_and_boxes")  # files written before Onitama had no game
    module = network_module(meta["game"])
    try:
        network = module.NetworkConfig(**meta["network"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"{meta_path}: 'network' must hold the NetworkConfig widths; got {meta.get('network')!r} ({e})") from None
    module.check_value_target(meta.get("value_target"))
    module.check_params(params, network, what=f"weights {directory / weights_io.PARAMS_FILE}")
    return params, meta


# ----------------------------------------------------------------------------- the agent
class AlphaZeroAgent(JaxAgent):
    """Plays the move of a network-guided search (or of the raw network policy): Dots-and-Boxes on any board, or Onitama.

    The game is the one of ``network`` (`game_of`). Onitama is played in
    the canonical action space (``jaxgames.make("onitama")``); the search
    runs on the arena's own env (its rewards are the outcome the value head
    predicts; its ``max_turns`` is the draw rule the search sees).

    The search is Gumbel MuZero, deterministic by default (``gumbel_scale=0``: sequential
    halving over the ``max_num_considered_actions`` most likely moves) or
    PUCT (``algorithm="muzero"``, the most visited move), on a copy of the
    arena's `DotsAndBoxes` whose rewards are in the units of the value
    target (the network module's ``make_evaluate``). With ``search=False`` the agent plays the
    argmax of the network's policy over the legal moves (ties at random):
    the "raw network" of the reports.

    Args:
        params: ``PolicyValueNet`` parameters.
        network: their ``NetworkConfig`` (`jaxgames.networks.dots_and_boxes` or `jaxgames.networks.onitama`).
        value_target: what the value head predicts (``"margin"`` or ``"outcome"``; None: the game's
            default, ``"margin"`` for Dots-and-Boxes, ``"outcome"``, the only one, for Onitama).
        num_simulations: simulations per move (default 64). Ignored when
            ``time_budget`` is given.
        time_budget: seconds per move: the simulation count is the largest of
            `SIMULATION_LADDER` whose search of one game fits in it on this
            machine, measured once per board size (`simulations_for_budget`).
        algorithm: ``"gumbel"`` or ``"muzero"``.
        max_num_considered_actions: Gumbel's root candidates.
        gumbel_scale: Gumbel noise of the root choice (default 0: deterministic,
            the strongest play; 1 samples from the improved policy, for varied
            games between two copies of the agent).
        search: False plays the raw policy (no search).
        name: label.

    Calls: `policy` (one state) and `batched_policy` run a jitted function,
    compiled once per settings and env and shared by every agent of equal
    settings (the parameters are an argument), when called with concrete
    arrays; inside someone else's ``jit``/``vmap`` they trace inline. An
    un-jitted ``policy`` call therefore costs a compile on the first move
    only (``benchmarks/alphazero.py``, row ``unjitted``).

    Moves are always legal where a legal move exists, whatever the
    parameters: NaN logits count as the lowest logit (the raw policy then
    draws among the legal moves) and a search answer outside the mask (NaN
    values) is replaced by the first legal move.

    Raises:
        ValueError: ``num_simulations < 1``, ``time_budget`` not finite and
            > 0, an unknown algorithm or value target, a ``gumbel_scale``
            that is negative or not finite in float32, parameters that do not fit ``network``.
        TypeError: ``network`` is no network module's ``NetworkConfig``;
            ``gumbel_scale`` not a number.
    """

    def __init__(
        self,
        params,
        *,
        network=NetworkConfig(),
        value_target: str | None = None,
        num_simulations: int = 64,
        time_budget: float | None = None,
        algorithm: str = "gumbel",
        max_num_considered_actions: int = 16,
        gumbel_scale: float = 0.0,
        search: bool = True,
        name: str = "alphazero",
    ):
        mcts.check_search_settings(
            num_simulations=num_simulations, algorithm=algorithm, max_num_considered_actions=max_num_considered_actions
        )
        if time_budget is not None:
            try:
                time_budget = checks.positive_float("time_budget", time_budget)  # finite: inf and nan are refused
            except (TypeError, ValueError):
                raise ValueError(f"time_budget must be positive seconds or None; got {time_budget!r}") from None
        # Traced as float32 inside the search: finite in float32 and >= 0.
        gumbel_scale = checks.real("gumbel_scale", gumbel_scale, lo=0.0, dtype=np.float32)
        self.game = game_of(network)
        module = network_module(self.game)
        value_target = DEFAULT_VALUE_TARGETS[self.game] if value_target is None else value_target
        module.check_value_target(value_target)
        module.check_params(params, network)
        self.params = params
        self.network, self.value_target = network, value_target
        self.num_simulations, self.time_budget = int(num_simulations), time_budget
        self.algorithm, self.max_num_considered_actions = algorithm, int(max_num_considered_actions)
        self.search, self.name, self.gumbel_scale = bool(search), name, float(gumbel_scale)
        self._budget_sims: dict = {}

    @classmethod
    def from_weights(cls, directory=None, *, game: str = "dots_and_boxes", **kwargs) -> "AlphaZeroAgent":
        """The agent with weights from `load_weights` (default: the shipped ones of ``game``).

        Placeholder weights (``trained: false`` in their metadata) load with a
        warning, and the agent's default name becomes ``alphazero-untrained``.
        """
        params, meta = load_weights(directory, game=game)
        if not meta.get("trained", False):
            warnings.warn(f"{directory or WEIGHTS_DIRS[game]}: these weights are an untrained placeholder", stacklevel=2)
            kwargs.setdefault("name", "alphazero-untrained")
        network = network_module(meta["game"]).NetworkConfig(**meta["network"])
        return cls(params, network=network, value_target=meta["value_target"], **kwargs)

    # ------------------------------------------------------------------ policy
    def _search_env(self, env):
        if getattr(env, "name", None) != self.game:
            raise ValueError(f"this AlphaZeroAgent plays {self.game}; got {env!r}")
        if self.game == "onitama":
            if env.action_space != "canonical":
                raise ValueError(f"AlphaZeroAgent plays Onitama in the canonical action space; got {env!r}")
            return env
        return DotsAndBoxes(env.num_rows, env.num_cols, utility_margin=self.value_target == "margin")

    def simulations(self, env) -> int:
        """The simulations per move on ``env``'s board (calibrated once per size under a time budget)."""
        if self.time_budget is None:
            return self.num_simulations
        size = (env.num_rows, env.num_cols) if self.game == "dots_and_boxes" else env
        if size not in self._budget_sims:
            self._search_env(env)  # another game: a ValueError naming it, not a failed measurement
            self._budget_sims[size] = simulations_for_budget(self._with_simulations, env, self.time_budget)
        return self._budget_sims[size]

    def _with_simulations(self, n: int) -> "AlphaZeroAgent":
        return AlphaZeroAgent(
            self.params, network=self.network, value_target=self.value_target, num_simulations=n,
            algorithm=self.algorithm, max_num_considered_actions=self.max_num_considered_actions,
            gumbel_scale=self.gumbel_scale, name=self.name,
        )

    def policy(self, env, state, key, player=None):
        """int32 ``[]``: the move for one state (a batch of one of the search).

        With concrete arrays, a jitted function compiled once per settings and
        env (`_SHARED_JIT`); under a transformation (any argument or the
        parameters a tracer) the same computation, traced inline.

        Raises:
            ValueError: ``env`` is not the network's game (or Onitama not in the canonical space).
        """
        del player  # two-player sequential: the seat to act for is the player to move
        if _traced(self.params, state, key):
            return self._one_fn(env)(self.params, state, key)
        return self._jitted(env, "one")(self.params, state, key)

    def batched_policy(self, env):
        """``(states [B], keys [B], players [B]) -> actions int32 [B]``: one search over the batch.

        The batch is searched with the first game's key (mctx searches a
        batch with one key); the raw policy breaks ties with each game's key.
        Called with concrete arrays it runs `compiled`; under a transformation it traces inline.

        Raises:
            ValueError: ``env`` is not the network's game (or Onitama not in the canonical space).
        """
        fn = self._policy_fn(env)

        def run(states, keys, players):
            if _traced(self.params, states, keys, players):
                return fn(self.params, states, keys, players)
            return self._jitted(env, "batch")(self.params, states, keys, players)

        return run

    # ------------------------------------------------------------------ shared compiled code (JaxAgent protocol)
    def arrays(self):
        """``{"params": ...}``: the network parameters, an argument of the compiled arena match."""
        return {"params": self.params}

    def settings_key(self, env) -> tuple:
        """The class, the game, the search settings on ``env`` (network, value target, search, simulations,
        algorithm, considered actions, Gumbel scale) and the parameters' shapes and dtypes."""
        return (type(self), self.game, self._settings(env), array_signature(self.params))

    def _replace_arrays(self, arrays) -> None:
        self.params = arrays["params"]

    def compiled(self, env):
        """The jitted policy with the parameters as an *argument*: shared by every agent of the same
        settings (new parameters, e.g. each evaluation during training, compile nothing new)."""
        fn = self._jitted(env, "batch")
        return lambda states, keys, players: fn(self.params, states, keys, players)

    def _jitted(self, env, kind: str):
        """The shared jitted ``(params, ...)`` function of ``kind`` (``"batch"``: `_policy_fn`; ``"one"``: `_one_fn`)."""
        cache_key = (kind, self._settings(env), env)
        fn = _SHARED_JIT.get(cache_key)
        if fn is None:
            fn = _SHARED_JIT[cache_key] = jax.jit(self._policy_fn(env) if kind == "batch" else self._one_fn(env))
        return fn

    def _one_fn(self, env):
        """``(params, state, key) -> action int32 []``: `_policy_fn` on a batch of one (not jitted)."""
        run = self._policy_fn(env)

        def one(params, state, key):
            batched = jax.tree.map(lambda x: x[None], state)
            return run(params, batched, key[None], jnp.zeros((1,), jnp.int32))[0]

        return one

    def _settings(self, env) -> tuple:
        sims = self.simulations(env) if self.search else 0
        return (self.network, self.value_target, self.search, sims, self.algorithm, self.max_num_considered_actions, self.gumbel_scale)

    def _policy_fn(self, env):
        """``(params, states, keys, players) -> actions``, built from the settings only (not jitted)."""
        search_env = self._search_env(env)
        network, value_target, search, num_simulations, algorithm, considered, gumbel_scale = self._settings(env)
        evaluate = network_module(self.game).make_evaluate(network, value_target)

        def run(params, states, keys, players):
            del players  # two-player sequential: the seat to act for is the player to move
            mask = states.legal_action_mask
            if not search:
                logits, _ = evaluate(params, states)
                # NaN (non-finite parameters) compares False with everything: without this, no move would be
                # "best" and the uniform choice over nothing would answer action 0, legal or not.
                logits = jnp.where(mask & ~jnp.isnan(logits), logits, jnp.finfo(logits.dtype).min)
                best = mask & (logits >= jnp.max(logits, axis=-1, keepdims=True))
                best = jnp.where(jnp.any(best, axis=-1, keepdims=True), best, mask)  # e.g. every legal logit -inf
                return jax.vmap(masked_uniform_choice)(keys, best)
            out = mcts.network_search(
                search_env, states, keys[0], evaluate=evaluate, params=params,
                num_simulations=num_simulations, algorithm=algorithm,
                max_num_considered_actions=considered, gumbel_scale=gumbel_scale, temperature=0.0,
            )
            action = out.action.astype(jnp.int32)
            legal = jnp.take_along_axis(mask, action[:, None], axis=-1)[:, 0]
            first_legal = jnp.argmax(mask, axis=-1).astype(jnp.int32)  # 0 where nothing is legal (a finished game)
            return jnp.where(legal, action, first_legal)

        return run

    def __repr__(self) -> str:
        what = "raw policy" if not self.search else (f"{self.time_budget}s/move" if self.time_budget else f"{self.num_simulations} sims")
        return f"AlphaZeroAgent(name={self.name!r}, {self.algorithm}, {what})"


class PaperSpaceAlphaZero(JaxAgent):
    """A canonical-action Onitama agent (e.g. `AlphaZeroAgent`) playing in Dasgupta & Chong's 40-action space.

    `AlphaZeroAgent` plays Onitama only in the canonical 1250-action space
    (``slot * 625 + from * 25 + to``, squares in the mover's view;
    `jaxgames.games.onitama.env.canonical_action`); the Elo tournament of
    Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
    Learning" (2021), section 6.3, plays in their 40-action space (``piece * 8
    + slot * 4 + move``, section 4.2; `jaxgames.games.onitama.env.paper_action`).
    Each state is rebuilt as the canonical env's state of the same board
    (`Onitama.state_from_board`, with its rewards and step count), the inner
    agent chooses there, and its move is mapped back to the (piece, slot,
    move) triple with the same card slot, from-square and to-square (unique
    among the legal triples: one piece stands on a square, and a card's moves
    go to distinct squares). Where the mover has no legal move, the canonical
    pass of a card slot maps to the paper space's pass of the same slot
    (`Onitama.pass_actions`). The inner agent must answer a legal canonical
    action (`AlphaZeroAgent` does); the image of an illegal one is action 0.

    Args:
        inner: the canonical-space agent (a `JaxAgent`; its ``name`` is this agent's name).
        canonical_env: the canonical twin of the arena's env (``action_space="canonical"``,
            the same ``max_turns``, which decides when a rebuilt state is a draw).

    Raises:
        TypeError: ``inner`` is not a `JaxAgent`.
        ValueError: ``canonical_env`` is not Onitama in the canonical action space;
            (`batched_policy`) an arena env that is not Onitama in the paper space,
            or one with another ``max_turns``.
    """

    def __init__(self, inner: JaxAgent, canonical_env):
        if not isinstance(inner, JaxAgent):
            raise TypeError(f"inner must be a JaxAgent of the canonical action space; got {inner!r}")
        if getattr(canonical_env, "name", None) != "onitama" or canonical_env.action_space != "canonical":
            raise ValueError(f"canonical_env must be Onitama with action_space='canonical'; got {canonical_env!r}")
        self.inner, self.canonical_env, self.name = inner, canonical_env, inner.name

    # ------------------------------------------------------------------ shared compiled code (JaxAgent protocol)
    def arrays(self):
        """The inner agent's arrays (`JaxAgent.arrays`), an argument of the compiled arena match."""
        return self.inner.arrays()

    def settings_key(self, env) -> tuple:
        """The class, the canonical env and the inner agent's settings key on it."""
        return (type(self), self.canonical_env, self.inner.settings_key(self.canonical_env))

    def _replace_arrays(self, arrays) -> None:
        self.inner = self.inner.with_arrays(arrays)

    def batched_policy(self, env):
        """``(states [B], keys [B], players int32 [B]) -> actions int32 [B]``: paper-space actions (in ``[0, 40)``).

        Args:
            env: the arena's Onitama in the paper space (``action_space="paper"``).

        Raises:
            ValueError: see the class docstring.
        """
        cenv = self.canonical_env
        if getattr(env, "name", None) != "onitama" or env.action_space != "paper":
            raise ValueError(f"PaperSpaceAlphaZero plays Onitama in Dasgupta & Chong's 40-action space (action_space='paper'); got {env!r}")
        if env.max_turns != cenv.max_turns:
            raise ValueError(f"canonical_env.max_turns={cenv.max_turns} differs from the arena env's {env.max_turns}")
        inner = self.inner.batched_policy(cenv)
        paper_passes = jnp.asarray(env.pass_actions, jnp.int32)
        per_slot = cenv.num_actions // 2

        def to_paper(state, action):
            ids = cenv.canonical_ids(state.board, state.move_target)  # [40]
            match = state.move_mask & (ids == action)
            must_pass = ~jnp.any(state.move_mask)
            return jnp.where(must_pass, paper_passes[jnp.clip(action // per_slot, 0, 1)],
                             jnp.argmax(match)).astype(jnp.int32)

        def run(states, keys, players):
            canonical = jax.vmap(lambda s: cenv.state_from_board(s.board, s.rewards, s.step_count))(states)
            return jax.vmap(to_paper)(states, inner(canonical, keys, players))

        return run

    def policy(self, env, state, key, player):
        """int32 ``[]``: one state's move (a batch of one through `batched_policy`)."""
        batched = jax.tree.map(lambda x: x[None], state)
        return self.batched_policy(env)(batched, key[None], jnp.zeros((1,), jnp.int32))[0]


# ----------------------------------------------------------------------------- time budgets
def seconds_per_move(agent: JaxAgent, env, *, repeats: int = 5, key=None) -> float:
    """Median wall-clock seconds of one decision of ``agent`` on one game (B = 1), compilation excluded.

    The positions are the empty board of ``env`` and boards after a few
    random moves (early moves have the most legal actions, so the longest
    searches). Used to calibrate time budgets and by the benchmark.
    """
    key = jax.random.key(0) if key is None else key
    fn = agent.compiled(env)
    if env.name == "dots_and_boxes":
        states = random_positions(env.num_rows, env.num_cols, key, repeats)
    else:  # opening positions of several deals (the most pieces: the most legal moves)
        states = jax.vmap(env.init)(jax.random.split(key, repeats))
    one = lambda i: jax.tree.map(lambda x: x[i:i + 1], states)  # noqa: E731
    keys = jax.random.split(key, 1)
    jax.block_until_ready(fn(one(0), keys, jnp.zeros((1,), jnp.int32)))  # compile
    times = []
    for i in range(repeats):
        s = one(i)
        start = time.perf_counter()
        jax.block_until_ready(fn(s, keys, jnp.zeros((1,), jnp.int32)))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def simulations_for_budget(make_agent, env, time_budget: float, *, ladder=SIMULATION_LADDER, margin: float = 0.8) -> int:
    """The largest simulation count of ``ladder`` whose decision fits ``margin * time_budget`` (B = 1).

    Args:
        make_agent: ``make_agent(num_simulations) -> JaxAgent``.
        env: the board to measure on.
        time_budget: seconds per move.
        ladder: increasing simulation counts; the climb stops at the first that is too slow.
        margin: share of the budget the median decision may use (load noise).

    Returns:
        The count (the smallest of the ladder if even that is too slow; a warning says so).

    Raises:
        ValueError: ``time_budget`` not a finite number > 0.
    """
    if not 0 < time_budget < math.inf:
        raise ValueError(f"time_budget must be positive seconds (finite); got {time_budget!r}")
    chosen = None
    for n in ladder:
        if seconds_per_move(make_agent(n), env) <= margin * time_budget:
            chosen = n
        else:
            break
    if chosen is None:
        warnings.warn(f"even {ladder[0]} simulations take longer than {margin:.0%} of {time_budget}s on {env!r}", stacklevel=2)
        chosen = ladder[0]
    return chosen
