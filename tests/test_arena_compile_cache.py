"""The arena compiles one match per agents' *settings*, with the agents' arrays passed as arguments.

Fresh agents of equal settings (new AlphaZero parameters at every evaluation,
a second PerfectAgent of the same board) reuse the compiled match: their
parameters and tables are an argument (`JaxAgent.arrays`), not constants,
so they play by their own values. Agents of other settings compile their own.
"""

from __future__ import annotations

import contextlib

import jax
import numpy as np
import pytest

from jaxgames.agents import base
from jaxgames.agents.alphazero import AlphaZeroAgent
from jaxgames.agents.base import JaxAgent, masked_uniform_choice
from jaxgames.agents.dots_and_boxes import GreedyAgent, PerfectAgent
from jaxgames.agents.simple import FirstLegalAgent
from jaxgames.evaluation import arena
from jaxgames.games.dots_and_boxes.env import DotsAndBoxes
from jaxgames.games.dots_and_boxes.search import solver
from jaxgames.networks import dots_and_boxes as nets

ENV = DotsAndBoxes(2, 2)
TINY_NET = nets.NetworkConfig(channels=4, num_blocks=1, value_channels=2, value_hidden=4)
GAMES = 4
MAX_STEPS = ENV.num_actions + 1


@contextlib.contextmanager
def backend_compiles():
    """Counts XLA compiles (every jit cache miss) inside the block."""
    events = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def tiny_alphazero(seed: int, **kwargs) -> AlphaZeroAgent:
    kwargs = {"num_simulations": 4, "max_num_considered_actions": 4, **kwargs}
    return AlphaZeroAgent(nets.init_params(TINY_NET, jax.random.key(seed)), network=TINY_NET, **kwargs)


def outcome(res: arena.MatchResult) -> tuple:
    return tuple(np.asarray(x).tobytes() for x in (res.outcome, res.length, res.returns))


def test_three_alphazero_agents_with_equal_settings_compile_one_match():
    agents = [tiny_alphazero(seed) for seed in (0, 1, 2)]  # built separately: different parameter values
    assert len({a.settings_key(ENV) for a in agents}) == 1
    play = lambda agent: arena.play_match(ENV, agent, agent, GAMES, jax.random.key(7), max_steps=MAX_STEPS)  # noqa: E731
    before = len(arena._MATCHES)
    results = [play(agents[0])]
    with backend_compiles() as compiles:
        results += [play(a) for a in agents[1:]]
    assert len(arena._MATCHES) == before + 1  # one compiled match for the three agents
    assert compiles == []  # the second and third agents compiled nothing
    # Their parameters are arguments, not constants: different parameters, different games ...
    assert len({outcome(r) for r in results}) > 1
    # ... and each agent's games are those of a match compiled for it alone.
    arena._MATCHES.clear()
    assert outcome(play(agents[2])) == outcome(results[2])


def test_agents_of_other_settings_compile_their_own_match():
    four, eight = tiny_alphazero(0), tiny_alphazero(0, num_simulations=8)
    raw = tiny_alphazero(0, search=False)
    assert len({a.settings_key(ENV) for a in (four, eight, raw)}) == 3
    before = len(arena._MATCHES)
    for agent in (four, eight):
        arena.play_match(ENV, agent, GreedyAgent(), 2, jax.random.key(0), max_steps=MAX_STEPS)
    assert len(arena._MATCHES) == before + 2


def test_two_perfect_agents_share_the_match_and_play_their_own_tables():
    perfect = PerfectAgent(2, 2)
    twin = PerfectAgent(2, 2, solution=perfect.solution)
    sol = perfect.solution  # the worst player: the same table, negated (a different argument, equal settings)
    worst = PerfectAgent(2, 2, solution=solver.Solution(2, 2, (-sol.values.astype(np.int16)).astype(sol.values.dtype)))
    assert perfect.settings_key(ENV) == twin.settings_key(ENV) == worst.settings_key(ENV)
    greedy = GreedyAgent()
    before = len(arena._MATCHES)
    best = arena.play_match(ENV, perfect, greedy, GAMES, jax.random.key(3), max_steps=MAX_STEPS)
    with backend_compiles() as compiles:
        same = arena.play_match(ENV, twin, GreedyAgent(), GAMES, jax.random.key(3), max_steps=MAX_STEPS)
        bad = arena.play_match(ENV, worst, GreedyAgent(), GAMES, jax.random.key(3), max_steps=MAX_STEPS)
    assert compiles == [] and len(arena._MATCHES) == before + 1
    assert outcome(same) == outcome(best)
    assert best.losses == 0 and bad.wins < best.wins  # the negated table plays by its own values
    # chunked: the same games
    chunked = arena.play_match(ENV, twin, greedy, GAMES, jax.random.key(3), max_steps=MAX_STEPS, chunk_size=3)
    assert outcome(chunked) == outcome(best)


def test_compiled_policy_is_shared_by_agents_with_arrays():
    perfect = PerfectAgent(1, 2)
    sol = perfect.solution
    worst = PerfectAgent(1, 2, solution=solver.Solution(1, 2, (-sol.values.astype(np.int16)).astype(sol.values.dtype)))
    env = DotsAndBoxes(1, 2)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 3))
    keys, players = jax.random.split(jax.random.key(1), 3), states.current_player
    good = np.asarray(perfect.compiled(env)(states, keys, players))
    with backend_compiles() as compiles:
        bad = np.asarray(worst.compiled(env)(states, keys, players))
    assert compiles == []
    # each plays its own table: the best and the worst moves of the empty 1x2 board differ
    assert np.array_equal(good, np.asarray(jax.vmap(lambda s, k: perfect.policy(env, s, k))(states, keys)))
    assert np.array_equal(bad, np.asarray(jax.vmap(lambda s, k: worst.policy(env, s, k))(states, keys)))
    assert not np.array_equal(good, bad)


class _Biased(JaxAgent):
    """An agent with settings but no opt-in: keyed by its identity (one compile per object)."""

    def __init__(self, edge: int):
        self.edge, self.name = edge, f"biased{edge}"

    def policy(self, env, state, key, player=None):
        mask = state.legal_action_mask
        return masked_uniform_choice(key, mask.at[self.edge].set(False) if mask.shape[0] > 1 else mask)


def test_agents_that_do_not_opt_in():
    # stateless (only a name): keyed by class, fresh ones share; with other state: one match per object
    assert FirstLegalAgent("a").settings_key(ENV) == FirstLegalAgent("b").settings_key(ENV) == (FirstLegalAgent,)
    assert GreedyAgent().settings_key(ENV) == GreedyAgent().settings_key(ENV)
    a, b = _Biased(0), _Biased(0)
    assert a.settings_key(ENV) is a and a.with_arrays(a.arrays()) is a
    before = len(arena._MATCHES)
    for x, y in ((FirstLegalAgent("a"), GreedyAgent()), (FirstLegalAgent("b"), GreedyAgent()), (a, GreedyAgent()),
                 (b, GreedyAgent())):
        arena.play_match(ENV, x, y, 2, jax.random.key(0), max_steps=MAX_STEPS)
    assert len(arena._MATCHES) == before + 3


def test_the_protocol_defaults():
    agent = GreedyAgent()
    assert agent.arrays() == {} and agent.with_arrays({}) is agent
    assert base.array_signature({"w": np.zeros((2, 3), np.float32)}) == base.array_signature({"w": np.ones((2, 3), np.float32)})
    assert base.array_signature({"w": np.zeros((2, 3), np.float32)}) != base.array_signature({"w": np.zeros((2, 3), np.int32)})
    az = tiny_alphazero(0)
    copy = az.with_arrays(tiny_alphazero(1).arrays())
    assert copy is not az and copy.params is not az.params and copy.settings_key(ENV) == az.settings_key(ENV)

    class Incomplete(JaxAgent):
        def arrays(self):
            return {"w": np.zeros(2)}

    with pytest.raises(NotImplementedError, match="_replace_arrays"):
        Incomplete().with_arrays({"w": np.ones(2)})


def test_paper_space_alphazero_passes_its_inner_agents_parameters():
    from jaxgames.agents.alphazero import PaperSpaceAlphaZero
    from jaxgames.games.onitama.env import Onitama
    from jaxgames.networks import onitama as onitama_nets

    net = onitama_nets.NetworkConfig(channels=4, num_blocks=1, value_channels=2, value_hidden=4)
    paper_env, cenv = Onitama(action_space="paper"), Onitama()
    make = lambda seed, sims=4: PaperSpaceAlphaZero(  # noqa: E731
        AlphaZeroAgent(onitama_nets.init_params(net, jax.random.key(seed)), network=net, num_simulations=sims), cenv)
    a, b = make(0), make(1)
    assert a.settings_key(paper_env) == b.settings_key(paper_env) != make(0, sims=8).settings_key(paper_env)
    copy = a.with_arrays(b.arrays())
    assert copy.inner.params is b.inner.params and a.inner.params is not b.inner.params
    assert copy.canonical_env is cenv and copy.settings_key(paper_env) == a.settings_key(paper_env)
