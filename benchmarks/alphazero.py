"""AlphaZero for Dots-and-Boxes: self-play and search throughput, beside mctx with a trivial model, and time per move.

Rows, all measured in one run (the ratios are what to compare; absolute
figures move with the machine's load):

* ``mctx_trivial``: ``mctx.gumbel_muzero_policy`` over ``B`` roots with a
  trivial model (zero logits, zero values, the embedding an int counter;
  no game, no network): the anchor, mctx's own cost per simulation.
* ``search_rules``: `jaxgames.search.mcts.network_search` with the real
  Dots-and-Boxes rules in ``recurrent_fn`` but a trivial evaluator (zero
  logits and values): the cost of the game kernel inside the tree.
* ``search_network``: the same with the policy-value network
  (`jaxgames.networks.dots_and_boxes`, widths ``channels``/``num_blocks``):
  what one self-play or evaluation move costs.
* ``selfplay``: the learner's self-play (`jaxgames.learners.alphazero.make_selfplay`):
  ``B`` games of ``num_edges`` moves in one ``lax.scan`` with auto-reset,
  targets and the replay insert included. Positions/s counts moves played.

Simulations/s = ``B * num_simulations`` per search call / seconds. Each
figure is the best of ``repeats`` timed calls after one untimed compile call
(compilation time is printed apart). Then the agent's time per move on 5x5
at its default budget (`AlphaZeroAgent`, 64 simulations, one game: B = 1),
the requirement being <= 200 ms on this CPU (El Kaddouri, Rys & Gao, "Multi
Agent Reinforcement Learning With Dots And Boxes", course report, undated,
section 6.2); and the row ``unjitted``:
the shipped agent's ``AlphaZeroAgent.from_weights().policy(env, state, key)``
called as a user first would, without ``jax.jit`` (first move, compile
included; second move; median of the next ones) beside the same call inside
``jax.jit``, on 5x5 (target: the second un-jitted move within 2x of the jitted one).

    python benchmarks/alphazero.py                       # batch_sizes=1,64,256 (CPU default)
    python benchmarks/alphazero.py batch_sizes=1,256,4096 # the issue's sizes (GPU, or a patient CPU)
    python benchmarks/alphazero.py --help                 # every setting, its type, default and meaning

The CPU default stops at B = 256: at B = 4096 one self-play call on 3x3 is
24 searches of 4096 roots (about a minute per call on 2 cores, times
repeats + compile). ``selfplay_max_batch`` caps the self-play rows
separately (self-play is ``num_edges`` searches per call).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import mctx  # noqa: E402  (the anchor only: jaxgames calls mctx from search/mcts.py alone)

from jaxgames import checks, experiment  # noqa: E402
from jaxgames.agents.alphazero import AlphaZeroAgent, seconds_per_move  # noqa: E402
from jaxgames.games.dots_and_boxes import DotsAndBoxes  # noqa: E402
from jaxgames.games.dots_and_boxes.positions import random_positions  # noqa: E402
from jaxgames.learners import alphazero as az  # noqa: E402
from jaxgames.networks import dots_and_boxes as nets  # noqa: E402
from jaxgames.networks.dots_and_boxes import NetworkConfig  # noqa: E402
from jaxgames.search import mcts  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        board: ``"RxC"`` of the throughput rows.
        batch_sizes: the ``B`` values.
        selfplay_max_batch: largest ``B`` of the self-play rows.
        num_simulations: simulations per search (the self-play default of the experiment: 8-16).
        channels, num_blocks: network widths (the experiment's defaults).
        agent_simulations: the agent's default budget for the per-move time.
        repeats: timed calls per figure (the best is reported).
        seed: PRNG seed.
        unjitted: also time the shipped agent's un-jitted ``policy`` (first and
            second move) against the same call inside ``jax.jit`` (row ``unjitted``).
    """

    board: str = "3x3"
    batch_sizes: tuple[int, ...] = (1, 64, 256)
    selfplay_max_batch: int = 256
    num_simulations: int = 16
    channels: int = 32
    num_blocks: int = 4
    agent_simulations: int = 64
    repeats: int = 3
    seed: int = 0
    unjitted: bool = True

    def __post_init__(self):
        _check(self)


def _parse_size(text: str) -> tuple[int, int]:
    parts = str(text).lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"board must look like 3x3; got {text!r}")
    return int(parts[0]), int(parts[1])


def _check(config: Config) -> None:
    if not config.batch_sizes:
        raise ValueError("batch_sizes must name at least one batch size")
    for b in config.batch_sizes:
        checks.positive_int("batch_sizes", b)
    for name in ("selfplay_max_batch", "num_simulations", "channels", "num_blocks", "agent_simulations", "repeats"):
        checks.positive_int(name, getattr(config, name))
    checks.non_negative_int("seed", config.seed)
    _parse_size(config.board)


def _best(fn, repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())  # compile
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return min(times), compile_s


def trivial_mctx(batch: int, num_actions: int, num_simulations: int):
    """The anchor: Gumbel MuZero on a trivial model (zero logits and values, int embeddings)."""

    def recurrent_fn(params, rng_key, action, embedding):
        del params, rng_key
        zeros = jnp.zeros((batch,), jnp.float32)
        out = mctx.RecurrentFnOutput(
            reward=zeros, discount=-jnp.ones((batch,), jnp.float32),
            prior_logits=jnp.zeros((batch, num_actions), jnp.float32), value=zeros,
        )
        return out, embedding + 1 + 0 * action

    def run(key):
        root = mctx.RootFnOutput(
            prior_logits=jnp.zeros((batch, num_actions), jnp.float32),
            value=jnp.zeros((batch,), jnp.float32),
            embedding=jnp.zeros((batch,), jnp.int32),
        )
        return mctx.gumbel_muzero_policy(
            params=None, rng_key=key, root=root, recurrent_fn=recurrent_fn, num_simulations=num_simulations,
        ).action

    return jax.jit(run)


def unjitted_move_times(env, positions: int, key) -> dict:
    """Seconds of ``AlphaZeroAgent.from_weights().policy(env, state, key)`` un-jitted and inside ``jax.jit``.

    The states are ``positions + 2`` random positions of ``env``, sliced
    before timing (a caller has one state in hand). Un-jitted: the first move
    (compilation included, unless an agent of the same settings compiled it
    earlier in this process), the second, and the median of the next
    ``positions``; jitted (``jax.jit(lambda s, k: agent.policy(env, s, k))``,
    the parameters closed over): the first call (compile) and the median of
    the calls on every position after it.

    Returns:
        ``first_s``, ``second_s``, ``later_s``, ``jit_first_s``, ``jit_s``, ``simulations``.
    """
    agent = AlphaZeroAgent.from_weights()
    n = positions + 2
    batch = random_positions(env.num_rows, env.num_cols, key, n)
    states = [jax.tree.map(lambda x, i=i: x[i], batch) for i in range(n)]
    keys = list(jax.random.split(key, n))
    jax.block_until_ready((states, keys))

    def timed(fn, i):
        start = time.perf_counter()
        jax.block_until_ready(fn(states[i], keys[i]))
        return time.perf_counter() - start

    plain = lambda s, k: agent.policy(env, s, k)  # noqa: E731
    first, second = timed(plain, 0), timed(plain, 1)
    later = statistics.median(timed(plain, i) for i in range(2, n))
    jitted = jax.jit(plain)
    jit_first = timed(jitted, 0)
    jit = statistics.median(timed(jitted, i) for i in range(1, n))
    return dict(first_s=first, second_s=second, later_s=later, jit_first_s=jit_first, jit_s=jit,
                simulations=agent.simulations(env))


def run(config: Config, argv=None) -> None:
    """The benchmark: prints the tables (writes no files)."""
    del argv
    R, C = _parse_size(config.board)
    env = DotsAndBoxes(R, C, utility_margin=True)
    net = NetworkConfig(channels=config.channels, num_blocks=config.num_blocks)
    params = nets.init_params(net, jax.random.key(config.seed))
    evaluate = nets.make_evaluate(net, "margin")
    S = config.num_simulations
    print(f"# device: {jax.devices()[0].platform} ({jax.devices()[0].device_kind}); board {R}x{C}; "
          f"{S} simulations; network {net}; jax {jax.__version__}")
    print(f"{'row':>16} {'B':>6} {'sims/s':>12} {'positions/s':>12} {'x mctx_trivial':>15} {'call s':>9} {'compile s':>10}")

    def zero_eval(p, states):
        B = states.current_player.shape[0]
        return jnp.zeros((B, env.num_actions)), jnp.zeros((B,))

    key = jax.random.key(config.seed)
    for B in config.batch_sizes:
        roots = random_positions(R, C, key, B)
        trivial = trivial_mctx(B, env.num_actions, S)
        t_anchor, c_anchor = _best(lambda: trivial(key), config.repeats)
        anchor = B * S / t_anchor
        print(f"{'mctx_trivial':>16} {B:>6} {anchor:>12,.0f} {'':>12} {1.0:>15.2f} {t_anchor:>9.4f} {c_anchor:>10.1f}")
        for name, ev in (("search_rules", zero_eval), ("search_network", evaluate)):
            # the parameters are an argument, as self-play passes them (measured: no speed difference either way)
            fn = jax.jit(lambda p, s, k, ev=ev: mcts.network_search(env, s, k, evaluate=ev, params=p, num_simulations=S).action)
            t, c = _best(lambda: fn(params, roots, key), config.repeats)
            rate = B * S / t
            print(f"{name:>16} {B:>6} {rate:>12,.0f} {B / t:>12,.0f} {rate / anchor:>15.3f} {t:>9.4f} {c:>10.1f}")
        if B <= config.selfplay_max_batch:
            lc = az.AlphaZeroConfig(board_sizes=((R, C),), network=net, num_envs=B, num_simulations=S,
                                    buffer_capacity=max(B * env.num_actions, 1), batch_size=1)
            state = az.init_state(lc, key)
            play = jax.jit(az.make_selfplay(lc, (R, C)))
            t, c = _best(lambda: play(state.params, state.env_states[0], state.buffers[0], key), config.repeats)
            positions = B * env.num_actions / t
            print(f"{'selfplay':>16} {B:>6} {positions * S:>12,.0f} {positions:>12,.0f} {positions * S / anchor:>15.3f} {t:>9.4f} {c:>10.1f}")
    env5 = DotsAndBoxes(5, 5)
    for sims in sorted({config.agent_simulations, 16, 32}):
        agent = AlphaZeroAgent(params, network=net, num_simulations=sims)
        t = seconds_per_move(agent, env5, repeats=max(config.repeats, 5))
        mark = "  <- the agent's default" if sims == config.agent_simulations else ""
        print(f"# 5x5 time per move (B=1, {sims} simulations, median): {t * 1000:.1f} ms (target <= 200 ms){mark}")
    if config.unjitted:
        u = unjitted_move_times(env5, max(config.repeats, 3), jax.random.key(config.seed + 1))
        print(f"# unjitted: AlphaZeroAgent.from_weights().policy(env, state, key) on 5x5 ({u['simulations']} simulations): "
              f"first move {u['first_s']:.2f} s (compile), second {u['second_s'] * 1000:.1f} ms, "
              f"later median {u['later_s'] * 1000:.1f} ms; inside jax.jit {u['jit_s'] * 1000:.1f} ms "
              f"(first call {u['jit_first_s']:.2f} s); second / jitted {u['second_s'] / u['jit_s']:.2f}x (target <= 2x)")


def main(argv=None):
    """Entry point: ``python benchmarks/alphazero.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, run, argv, prog="benchmarks/alphazero.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
