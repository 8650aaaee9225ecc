"""Issue 30 at the learner/experiment boundary: every setting checked before a folder is claimed, memory
refused up front, a run that dies early leaves no folder, agents with NaN networks still play legal moves."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import jax
import jax.numpy as jnp
from flax import serialization
import numpy as np
import pytest

import jaxgames
from jaxgames import checks, experiment, weights_io
from jaxgames.agents.battlesnake import HeuristicAgent, greedy_relative_move
from jaxgames.agents.ddpg import DDPGAgent
from jaxgames.agents.dots_and_boxes import AlphaBetaAgent as DabAlphaBeta
from jaxgames.agents.mcts import MCTSAgent
from jaxgames.agents.onitama import AlphaBetaAgent as OnitamaAlphaBeta
from jaxgames.agents.q_snake import QSnakeAgent
from jaxgames.agents.simple import masked_argmax
from jaxgames.experiment import ResultsDir
from jaxgames.games.battlesnake import Battlesnake, rules
from jaxgames.learners import alphazero as az
from jaxgames.learners import q_snake as qs
from jaxgames.networks import onitama as onitama_nets
from jaxgames.networks.ddpg import VARIANTS, Actor, init_actor
from jaxgames.networks.dots_and_boxes import NetworkConfig
from jaxgames.networks.q_snake import QSnakeNet, init_variables
from tests.experiment_helpers import load_experiment

NAN, INF = float("nan"), float("inf")


# ----------------------------------------------------------------------------- masked argmax, NaN networks


@pytest.mark.parametrize("values,mask,want", [
    ([1.0, 5.0, 2.0], [True, False, True], 2),  # the best legal value, not the best value
    ([NAN, 1.0, 0.5], [True, True, True], 1),  # NaN is the lowest, not the highest (jnp.argmax would say 0)
    ([0.0, NAN, NAN], [False, True, True], 1),  # every legal value NaN: the lowest legal index
    ([9.0, -INF, NAN], [False, True, True], 1),  # -inf or NaN only: still a legal index
    ([3.0, 3.0, 3.0], [False, True, True], 1),  # ties: the lowest legal index
    ([INF, 2.0, 1.0], [False, False, True], 2),
])
def test_masked_argmax_never_leaves_the_mask(values, mask, want):
    values, mask = jnp.asarray(values, jnp.float32), jnp.asarray(mask)
    assert int(masked_argmax(values, mask)) == want
    assert int(jax.jit(masked_argmax)(values, mask)) == want
    many = jax.vmap(masked_argmax)(jnp.stack([values] * 3), jnp.stack([mask] * 3))
    assert np.asarray(many).tolist() == [want] * 3


def _nan_tree(tree):
    return jax.tree.map(lambda x: jnp.full(jnp.shape(x), jnp.nan, jnp.float32), tree)


def _onitama_states(n: int):
    """``n`` Onitama positions (``action_space="paper"``, the 40 actions) after random legal moves, some finished."""
    env = jaxgames.make("onitama", action_space="paper")
    keys = jax.random.split(jax.random.key(3), n)
    states = jax.vmap(env.init)(keys)
    for t in range(12):
        k = jax.random.split(jax.random.fold_in(jax.random.key(4), t), n)
        logits = jnp.where(states.legal_action_mask, 0.0, jnp.finfo(jnp.float32).min)
        acts = jax.vmap(jax.random.categorical)(k, logits)
        states = jax.vmap(env.step)(states, acts)
    return env, states


@pytest.mark.parametrize("greedy", [True, False])
def test_ddpg_agent_with_nan_parameters_plays_legal_moves(greedy):
    """NaN parameters passed straight to the agent (the loader would refuse them): every move is legal."""
    variant = VARIANTS[0]
    params = init_actor(jax.random.key(0), Actor(variant, (16, 32), 10, (64, 64), "layer"))
    agent = DDPGAgent(variant, _nan_tree(params), greedy=greedy)
    env, states = _onitama_states(64)
    live = ~np.asarray(states.terminated | states.truncated)
    assert live.any()
    acts = np.asarray(agent.compiled(env)(states, jax.random.split(jax.random.key(1), 64), states.current_player))
    legal = np.asarray(states.legal_action_mask)[np.arange(64), acts]
    assert legal[live].all()


def test_q_snake_agent_with_nan_variables_plays_legal_moves():
    net = QSnakeNet(features=(4,))
    variables = _nan_tree(init_variables(net, jax.random.key(0), (13, 13, 3)))
    agent = QSnakeAgent(variables, features=(4,), board_size=7)
    env = Battlesnake(board_size=7, num_snakes=2, observation="none")
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(2), 16))
    for t in range(3):  # past the stacked start, so each snake has a neck to avoid
        acts = jnp.stack([agent.compiled(env)(states, jax.random.split(jax.random.key(t), 16), jnp.full(16, p, jnp.int32))
                          for p in range(2)], axis=1)
        legal = np.asarray(jax.vmap(rules.legal_moves)(states.board))
        a = np.asarray(acts)
        assert legal[np.arange(16)[:, None], np.arange(2)[None, :], a].all()
        states = jax.vmap(env.step)(states, acts, jax.random.split(jax.random.key(10 + t), 16))


def test_greedy_relative_move_skips_nan_q_values():
    env = Battlesnake(board_size=7, num_snakes=2, observation="none")
    state = env.init(jax.random.key(0))
    state = env.step(state, jnp.array([0, 0], jnp.int32), jax.random.key(1))  # both snakes move up: facing up
    facing = int(rules.facing(state.board)[0])
    from jaxgames.games.battlesnake import observe

    want = int(observe.relative_to_absolute(jnp.int32(2), facing))  # turn right: the only non-NaN value
    assert int(greedy_relative_move(jnp.array([NAN, NAN, 0.1]), state.board, jnp.int32(0))) == want


# ----------------------------------------------------------------------------- settings finite and in range


@pytest.mark.parametrize("make,name", [
    (lambda: HeuristicAgent(food_weight=NAN), "food_weight"),
    (lambda: HeuristicAgent(risk_penalty=INF), "risk_penalty"),
    (lambda: HeuristicAgent(room_cap_factor=1e300), "room_cap_factor"),
    (lambda: MCTSAgent(pb_c_init=NAN), "pb_c_init"),
    (lambda: MCTSAgent(pb_c_init=INF), "pb_c_init"),
    (lambda: DabAlphaBeta(time_budget=INF), "time_budget"),
    (lambda: DabAlphaBeta(time_budget=NAN), "time_budget"),
    (lambda: OnitamaAlphaBeta(time_budget=INF), "time_budget"),
    (lambda: QSnakeAgent(_nan_free_q(), features=(4,), board_size=7, head_multiplier=INF), "head_multiplier"),
    (lambda: qs.QSnakeConfig(learning_rate=1e300), "learning_rate"),  # finite in float64, inf in float32
    (lambda: qs.QSnakeConfig(head_multiplier=1e39), "head_multiplier"),
    (lambda: qs.QSnakeConfig(max_turns=2**31), "max_turns"),
    (lambda: qs.QSnakeConfig(pit_max_turns=2**31), "pit_max_turns"),
    (lambda: az.AlphaZeroConfig(game="onitama", max_turns=2**31), "max_turns"),
])
def test_non_finite_or_out_of_range_settings_are_refused(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def _nan_free_q():
    return init_variables(QSnakeNet(features=(4,)), jax.random.key(0), (13, 13, 3))


# ----------------------------------------------------------------------------- memory up front


def test_check_memory_names_the_setting_what_it_needs_and_what_there_is():
    need = {"num_envs": (10, 3 * 2**30), "batch_size": (128, 2**30)}
    with pytest.raises(ValueError, match=r"num_envs=10 does not fit in memory: the first call needs about 4\.0 GiB "
                                         r"\(num_envs: 3\.0 GiB\) and the test machine is 2\.0 GiB; lower num_envs or x"):
        checks.check_memory(need, available=(2 * 2**30, "test machine"), hint={"num_envs": "x"})
    checks.check_memory(need, available=(8 * 2**30, "test machine"))  # 4 GiB of 8: fits in 80%


def test_alphazero_memory_estimate_scales_with_its_settings():
    small = az.AlphaZeroConfig(board_sizes=((2, 2),), network=NetworkConfig(8, 1, 4, 8), num_envs=4, batch_size=8,
                               buffer_capacity=64, num_simulations=2, max_num_considered_actions=2)
    m = az.memory_estimate(small)
    twice = az.memory_estimate(dataclasses.replace(small, num_envs=8, batch_size=16, buffer_capacity=128))
    for k in ("num_envs", "batch_size", "buffer_capacity"):
        assert m[k] > 0 and twice[k] == 2 * m[k]
    # a 2x2 position holds at least its 12 edges (bool) and a float32 policy over them
    assert m["buffer_capacity"] >= 64 * (12 + 4 * 12)


@pytest.mark.parametrize("setting,value", [("batch_size", 10**9), ("num_envs", 10**8), ("buffer_capacity", 10**10)])
def test_alphazero_learner_refuses_a_first_iteration_that_cannot_fit(setting, value):
    config = az.AlphaZeroConfig(board_sizes=((2, 2),), network=NetworkConfig(8, 1, 4, 8), **{setting: value})
    with pytest.raises(ValueError, match=rf"{setting}={value} does not fit in memory: .* GiB \({setting}: .*; lower {setting}"):
        az.AlphaZeroLearner(config)


def test_onitama_memory_estimate_is_finite():
    config = az.AlphaZeroConfig(game="onitama", network=onitama_nets.NetworkConfig(8, 1, 4, 8), num_envs=2,
                                batch_size=4, buffer_capacity=16, num_simulations=2, max_num_considered_actions=2,
                                selfplay_steps=2)
    assert all(v > 0 for v in az.memory_estimate(config).values())


# ----------------------------------------------------------------------------- experiments: nothing written


@pytest.mark.parametrize("name,argv,message", [
    ("alphazero_onitama", ["max_turns=2000000000"], "max_turns must be an int in"),
    ("alphazero_onitama", ["batch_size=1000000000"], "batch_size=1000000000 does not fit in memory"),
    ("alphazero_dab", ["num_envs=100000000"], "num_envs=100000000 does not fit in memory"),
    ("alphazero_dab", ["eval_games=-1"], "eval_games must be"),
    ("q_snake", ["baseline_max_turns=2000000000"], "baseline_max_turns must be an int in"),
])
def test_experiments_refuse_in_one_line_before_claiming_the_folder(name, argv, message, tmp_path, capsys):
    exp = load_experiment(name)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as err:
        exp.main(argv + [f"out={out}", "progress=false"])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not out.exists()


def test_nan_init_weights_are_refused_in_one_line_before_the_folder(tmp_path, capsys):
    from jaxgames.agents.alphazero import save_weights

    exp = load_experiment("alphazero_dab")
    lc = exp.default_learner()
    params = az.game_adapter(lc).nets.init_params(lc.network, jax.random.key(0))
    weights = tmp_path / "weights"
    save_weights(weights, params, network=lc.network, value_target=lc.value_target, trained=False, note="test")
    meta = json.loads((weights / weights_io.METADATA_FILE).read_text())
    # NaN parameters with a matching checksum (as a diverged run's weights would be): only the content check refuses them
    data = serialization.to_bytes(jax.tree.map(lambda x: np.full(np.shape(x), np.nan, np.float32), params))
    (weights / weights_io.PARAMS_FILE).write_bytes(data)
    meta["sha256"] = hashlib.sha256(data).hexdigest()
    (weights / weights_io.METADATA_FILE).write_text(json.dumps(meta))
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as err:
        exp.main([f"init_weights={weights}", f"out={out}", "progress=false"])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "non-finite" in lines[0], lines
    assert not out.exists()


# ----------------------------------------------------------------------------- a run that dies early leaves nothing


def test_a_run_dying_at_its_first_call_leaves_no_folder(tmp_path):
    out = tmp_path / "a" / "b" / "run"
    with pytest.raises(MemoryError):
        with ResultsDir(out, {"n": 1}) as rd:
            ckpt = rd.path / "checkpoints"  # a checkpoint folder claimed, without a step
            with ResultsDir(ckpt, {"n": 1}):
                pass
            raise MemoryError("RESOURCE_EXHAUSTED at the first call")
    assert not (tmp_path / "a").exists()  # the folders this run created are gone too
    with ResultsDir(out, {"n": 2}) as rd:  # the corrected command is not a ConfigMismatch
        rd.write_text("result.txt", "done\n")
    assert (out / "result.txt").exists()


def test_a_run_that_wrote_a_result_keeps_its_folder(tmp_path):
    with pytest.raises(RuntimeError):
        with ResultsDir(tmp_path / "run", {"n": 1}) as rd:
            rd.write_text("curves.csv", "a\n")
            raise RuntimeError("late")
    assert (tmp_path / "run" / "curves.csv").exists() and (tmp_path / "run" / "config.json").exists()


def test_an_earlier_run_and_other_files_are_kept(tmp_path):
    with ResultsDir(tmp_path / "run", {"n": 1}) as rd:
        rd.write_text("curves.csv", "a\n")
    with pytest.raises(RuntimeError):  # a resume that dies: the earlier run's folder stays as it was
        with ResultsDir(tmp_path / "run", {"n": 1}):
            raise RuntimeError("resume died")
    assert (tmp_path / "run" / "config.json").exists() and (tmp_path / "run" / "curves.csv").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's\n")
    with pytest.raises(RuntimeError):  # a folder the user made: only what this run wrote goes
        with ResultsDir(mine, {"n": 1}):
            raise RuntimeError("died")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_up_front_turns_a_check_into_a_one_line_exit_2(capsys):
    def run(config, argv):
        with experiment.up_front():
            raise FileNotFoundError("no weights folder /nowhere")

    @dataclasses.dataclass(frozen=True)
    class Config:
        n: int = 1

    with pytest.raises(SystemExit) as err:
        experiment.main(Config, run, [], prog="x.py")
    assert err.value.code == 2
    assert capsys.readouterr().err == "x.py: error: no weights folder /nowhere\n"
    with pytest.raises(experiment.SettingError):  # called directly: a ValueError subclass
        run(Config(), [])


def test_q_snake_readme_links_only_the_figures_written(tmp_path):
    from jaxgames.learners import loop

    exp = load_experiment("q_snake")
    config = exp.Config(out=str(tmp_path))
    result = loop.TrainResult(state=None, history=[], evaluations=[], resumed_from=0, stopped_by_budget=False)
    with ResultsDir(tmp_path, config) as rd:
        text = exp.write_readme(rd, config, result, [], 1.0, [])
        assert "game.gif" not in text and "win_rate.png" not in text and "Figures:" not in text
        text = exp.write_readme(rd, config, result, [], 1.0, [], ["deaths.png", "game.gif"])
        assert "[deaths.png](deaths.png)." in text and "[game.gif](game.gif)" in text and "win_rate.png" not in text


def test_an_experiment_dying_at_its_first_iteration_leaves_no_folder(tmp_path, monkeypatch):
    """End to end: the out-of-memory of a first call (simulated) after the folder and its checkpoint folder were claimed."""
    exp = load_experiment("alphazero_dab")

    def out_of_memory(self, state):
        raise MemoryError("RESOURCE_EXHAUSTED: out of memory at the first call")

    monkeypatch.setattr(az.AlphaZeroLearner, "update", out_of_memory)
    out = tmp_path / "results" / "run"
    config = experiment.parse_config(exp.Config, [f"out={out}", "progress=false", "eval_every=0", "report=false",
                                                  "board_sizes=2x2", "num_envs=2"])
    with pytest.raises(MemoryError):
        exp.run(config)
    assert not (tmp_path / "results").exists()
