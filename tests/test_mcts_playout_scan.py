"""Pure MCTS's random playout (`jaxgames.search.mcts.random_rollout`) is a fixed-length masked scan.

A ``while_loop`` on the game's end would read its condition back to the
host at every step on a GPU; the scan runs exactly ``max_steps`` steps, and
steps after the end add nothing. Checked: the traced playout has no
``while`` (inside a whole search, the only ``while`` loops left are mctx's
own), every loop of its compiled code has a trip count known at compile
time, and its returns are bitwise those of the ``while_loop`` it replaced.
"""

from __future__ import annotations

import re

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp
import numpy as np

from jaxgames.games.dots_and_boxes import DotsAndBoxes
from jaxgames.games.dots_and_boxes.positions import random_positions
from jaxgames.search import mcts, sign

ENV = DotsAndBoxes(2, 2)  # 12 edges


def while_rollout(env, state, key, *, max_steps):
    """The playout before the scan: a ``while_loop`` until the game's end (the reference)."""
    player = state.current_player

    def cond(c):
        s, _, t, _ = c
        return (t < max_steps) & ~(s.terminated | s.truncated)

    def body(c):
        s, total, t, key = c
        key, action_key, step_key = jax.random.split(key, 3)
        action = jax.random.categorical(action_key, mcts._logits(s.legal_action_mask)).astype(jnp.int32)
        s = env.step(s, action, step_key)
        return s, total + sign.mover_reward(s.rewards, player), t + 1, key

    _, total, _, _ = jax.lax.while_loop(cond, body, (state, jnp.float32(0.0), jnp.int32(0), key))
    return total


def primitives(jaxpr) -> list[str]:
    """Names of every primitive in a jaxpr, sub-jaxprs included (scan and cond bodies, pjit calls)."""
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.primitive.name)
        for sub in jax_core.jaxprs_in_params(eqn.params):
            names += primitives(sub)
    return names


def batch():
    """Roots of every kind: random positions, the initial one, and a terminal one."""
    positions = random_positions(2, 2, jax.random.key(3), 13)
    start = ENV.init(jax.random.key(0))
    over = ENV.from_dbn("1" * 12)
    extra = jax.tree.map(lambda *xs: jnp.stack(xs), start, over)
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), positions, extra)


def test_same_returns_as_the_while_loop_bitwise():
    states = batch()
    keys = jax.random.split(jax.random.key(11), states.current_player.shape[0])
    for max_steps in (3, ENV.num_actions + 1):  # cut short, and the search's default (whole games)
        run = lambda f: np.asarray(jax.jit(jax.vmap(lambda s, k: f(ENV, s, k, max_steps=max_steps)))(states, keys))
        new, old = run(mcts.random_rollout), run(while_rollout)
        np.testing.assert_array_equal(new, old)
        assert new[-1] == 0.0  # the terminal root
    assert np.any(new != 0.0)


class LeakyTerminal(DotsAndBoxes):
    """Dots-and-Boxes whose step from a terminal state pays both players 7 (core's step pays 0)."""

    def step(self, state, action, key=None, params=None):
        nxt = super().step(state, action, key, params)
        done = state.terminated | state.truncated
        return nxt.replace(rewards=jnp.where(done, jnp.float32(7.0), nxt.rewards))


def test_steps_after_the_end_add_nothing():
    """Three times the game's length: the extra steps, whatever they return, leave the total as it was."""
    leaky = LeakyTerminal(2, 2)
    states = batch()
    keys = jax.random.split(jax.random.key(5), states.current_player.shape[0])
    exact = jax.vmap(lambda s, k: mcts.random_rollout(ENV, s, k, max_steps=12))(states, keys)
    long = jax.vmap(lambda s, k: mcts.random_rollout(leaky, s, k, max_steps=36))(states, keys)
    np.testing.assert_array_equal(np.asarray(long), np.asarray(exact))


def test_the_playout_has_no_while():
    state = ENV.init(jax.random.key(0))
    rollout = lambda s, k: mcts.random_rollout(ENV, s, k, max_steps=13)
    names = primitives(jax.make_jaxpr(rollout)(state, jax.random.key(1)).jaxpr)
    assert "while" not in names and names.count("scan") == 1
    # Compiled: every loop has a known trip count (on the CPU, XLA's threefry
    # rounds are loops of 5; on a GPU they are unrolled); the playout's is 13.
    text = jax.jit(rollout).lower(state, jax.random.key(1)).compile().as_text()
    loops = [line for line in text.splitlines() if re.search(r"\) while\(", line)]
    counts = [re.search(r'"known_trip_count":\{"n":"(\d+)"', line) for line in loops]
    assert loops and all(counts), [line[:200] for line, n in zip(loops, counts) if n is None]
    assert "13" in {n.group(1) for n in counts}


def test_a_whole_search_has_only_mctx_while_loops():
    """As many ``while`` loops as the same search whose leaves are valued without any playout."""
    states = batch()

    def whiles(rollout):
        original = mcts.random_rollout
        mcts.random_rollout = rollout
        try:
            jaxpr = jax.make_jaxpr(lambda s, k: mcts.search(ENV, s, k, num_simulations=4))(states, jax.random.key(0))
        finally:
            mcts.random_rollout = original
        return primitives(jaxpr.jaxpr).count("while")

    no_playout = whiles(lambda env, state, key, *, max_steps: jnp.float32(0.0))
    assert whiles(mcts.random_rollout) == no_playout
    assert whiles(while_rollout) > no_playout  # the check sees a playout's while loop
