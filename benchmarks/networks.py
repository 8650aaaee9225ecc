"""Networks near the machine: each network's training step in FLOP/s and as a fraction of the best square matmul.

For each network, ONE jitted training step at its training batch size, built
from the learner's own step function on a small learner state of the right
shapes (the loss, the gradient and the optimiser update are the learner's):

* ``q_snake_small``: AlphaSnake Zero with the shipped network
  (``jaxgames/weights/q_snake``: 3 x 16 filters, batch 128, the shipped
  settings), `jaxgames.learners.q_snake.QSnakeLearner._train_step`;
* ``q_snake_paper``: the same learner with the 6-layer net of Siddiqui,
  Kraak, Roesli, Daxini & Li, "Multiagent Reinforcement Learning in a
  Synchronous Strategy Game" (University of Victoria report, undated),
  section 4 (``features=32,32,64,64,128,128``, the learner's defaults, batch 256);
* ``az_dab``: AlphaZero for Dots-and-Boxes with the shipped network and
  settings (``jaxgames/weights/alphazero_dab``: 32 channels, 4 blocks, boards
  2x2, 3x3 and 4x4, 128 positions each), `jaxgames.learners.alphazero.make_update_step`;
* ``az_onitama``: AlphaZero for Onitama, shipped (``jaxgames/weights/alphazero_onitama``:
  48 channels, 3 blocks, 128 positions);
* ``ddpg``: the Onitama DDPG study's update (`jaxgames.learners.ddpg.DDPGLearner._update`),
  default config (8 actor variants and their critics, 64 transitions each),
  the widths the study and the tournament use.

FLOPs per step are XLA's (``jitted.lower(...).compile().cost_analysis()["flops"]``;
a multiply-add counts 2), counted on the old layout for the networks it
changed (`CHANGED`: the same work; XLA counts a loop body once). Each step is
timed as the median of ``repeats`` calls after ``warmup`` untimed ones
(compilation excluded, printed apart), in process CPU time by default: on a
core shared with other jobs that leaves out the time they ran (XLA runs these
steps on one thread). The anchor, measured in the same run: jitted float32
``a @ b`` of square ``n x n`` matrices, n = 256, 512, 1024, 2048 (2 n^3 FLOPs,
median of ``repeats`` calls). Each network's step is then timed alternately
with the best n's matmul (step, matmul, step, ...: a shared machine's speed
drifts within minutes), and its "% of matmul" is its GFLOP/s over
that matmul's GFLOP/s in the same window (printed beside it).

The levers (before/after in ``benchmarks/README.md``): ``layout=old`` traces
the networks as they were before `jaxgames.networks.conv` and
`jaxgames.networks.ddpg.max_pool_2x2`; ``malloc=retain`` keeps freed memory
in the process (`jaxgames.malloc.retain_freed_memory`); ``ynn=false`` compiles the steps
without XLA's YNNPACK fusions; ``batch_multipliers=1,4`` adds rows at 4 x the
training batch (the learners' batch size is a setting; the shipped batch stays
the headline); ``check=true`` first checks the new layout against the old;
``ceiling=true`` adds, under each network, its products alone (`product_ceiling`);
``pool_anchor=true`` adds, under each AlphaZero network, its step timed alternately
with the same step whose global pooling takes ``jnp.max``'s gradient (`pool_row`).

    python benchmarks/networks.py                        # every network, repeats=7 (about 3 min on a quiet core)
    python benchmarks/networks.py quick=true             # under ~90 s on a quiet core
    python benchmarks/networks.py layout=old             # before the layout changes
    python benchmarks/networks.py malloc=retain check=true json=/tmp/networks.json
    python benchmarks/networks.py --help                 # every setting, its type, default and meaning

XLA flags set in the environment (``XLA_FLAGS=...``) are printed in the header
and written with the rows. `rows` (``rows(quick)``) returns the rows (default
settings) for another script.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jex

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jaxgames import checks, experiment  # noqa: E402
from jaxgames.learners import alphazero as az  # noqa: E402
from jaxgames.learners import ddpg  # noqa: E402
from jaxgames.learners import q_snake as qs  # noqa: E402
from jaxgames.learners.buffer import ReplayBuffer  # noqa: E402
from jaxgames.malloc import retain_freed_memory  # noqa: E402
from jaxgames.networks import ddpg as ddpg_nets  # noqa: E402
from jaxgames.networks import dots_and_boxes as dab_nets  # noqa: E402
from jaxgames.networks import onitama as onitama_nets  # noqa: E402
from jaxgames.networks import q_snake as q_snake_nets  # noqa: E402
from jaxgames.networks.q_snake import PAPER_FEATURES  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
WEIGHTS = ROOT / "jaxgames" / "weights"
NETWORKS = ("q_snake_small", "q_snake_paper", "az_dab", "az_onitama", "ddpg")
MATMUL_SIZES = (256, 512, 1024, 2048)


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        networks: which networks, from q_snake_small, q_snake_paper, az_dab, az_onitama, ddpg.
        quick: a run under about 90 s on a quiet core: 3 repeats and 1 warm-up call (the paper-sized
            net: 1 and 0), the matmul anchor at n = 256, 512, 1024.
        repeats: timed calls per figure (the median is reported); quick=true caps it.
        warmup: untimed calls after the compile call, before the timed ones.
        matmul_sizes: n of the square float32 matmul anchor (2 n^3 FLOPs each).
        batch_multipliers: training batch = multiplier x the shipped batch, one row each (1 = shipped).
        layout: new (the networks as they are) or old (the convolutions' kernel gradient of
            jaxgames.networks.q_snake and the max-pool of jaxgames.networks.ddpg as XLA derives them:
            the layout before benchmarks/README.md's "Networks near the machine").
        malloc: default (glibc's) or retain: the process keeps freed memory instead of returning large
            blocks to the system (mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD=1 GiB), so a step whose
            temporaries exceed 32 MB does not page-fault them in again on every call.
        ynn: false compiles the network steps with XLA's YNNPACK fusions off (compiler option
            xla_cpu_experimental_ynn_fusion_type=''); the matmul anchor is compiled as it is.
        check: first check that the new layout computes what the old one does on random inputs
            (forward outputs bitwise, parameter gradients to float32 rounding).
        ceiling: also time each network's matrix products and convolutions alone, at its shapes
            (`product_ceiling`): the GFLOP/s its step would reach if it did nothing else.
        pool_anchor: also time each AlphaZero step against the same step with ``jnp.max``'s gradient in
            `jaxgames.networks.dots_and_boxes.global_pool` (before its custom gradient), alternately, and
            report the ratio (`pool_row`).
        clock: what a call's time is: cpu (the process's CPU time: on a core shared with other jobs
            it leaves out the time others ran; XLA runs these steps on one thread) or wall.
        seed: PRNG seed.
        json: also write the results to this file ('' = no).
        out: results folder (results.json and config.json).
    """

    networks: tuple[str, ...] = NETWORKS
    quick: bool = False
    repeats: int = 7
    warmup: int = 2
    matmul_sizes: tuple[int, ...] = MATMUL_SIZES
    batch_multipliers: tuple[int, ...] = (1,)
    layout: str = "new"
    malloc: str = "default"
    ynn: bool = True
    check: bool = False
    ceiling: bool = False
    pool_anchor: bool = False
    clock: str = "cpu"
    seed: int = 0
    json: str = ""
    out: str = "results/benchmarks/networks"

    def __post_init__(self):
        if not self.networks:
            raise ValueError(f"networks must name at least one of {NETWORKS}")
        for n in self.networks:
            checks.choice("networks", n, NETWORKS)
        for name in ("quick", "ynn", "check", "ceiling", "pool_anchor"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool; got {getattr(self, name)!r}")
        checks.positive_int("repeats", self.repeats)
        checks.non_negative_int("warmup", self.warmup)
        if not self.matmul_sizes:
            raise ValueError("matmul_sizes must name at least one size, e.g. 256,512")
        for n in self.matmul_sizes:
            checks.integer("matmul_sizes", n, 1, 8192)
        if not self.batch_multipliers:
            raise ValueError("batch_multipliers must name at least one multiplier, e.g. 1")
        for m in self.batch_multipliers:
            checks.integer("batch_multipliers", m, 1, 64)
        checks.choice("layout", self.layout, ("new", "old"))
        checks.choice("malloc", self.malloc, ("default", "retain"))
        checks.choice("clock", self.clock, ("cpu", "wall"))
        checks.non_negative_int("seed", self.seed)


# ----------------------------------------------------------------------------- the levers
def _reduce_window_pool(x):
    return nn.max_pool(x, (2, 2), strides=(2, 2), padding="VALID")


@contextlib.contextmanager
def layout(which: str):
    """Inside: the networks traced with the ``"old"`` layout (XLA's own gradients of the Q-snake and DDPG
    convolutions, ``nn.max_pool`` in DDPG's preprocess block) or the ``"new"`` one (as shipped)."""
    saved = (q_snake_nets.conv, ddpg_nets.conv, ddpg_nets.max_pool_2x2)
    if which == "old":
        q_snake_nets.conv, ddpg_nets.conv = lax.conv_general_dilated, lax.conv_general_dilated
        ddpg_nets.max_pool_2x2 = _reduce_window_pool
    try:
        yield
    finally:
        q_snake_nets.conv, ddpg_nets.conv, ddpg_nets.max_pool_2x2 = saved


@contextlib.contextmanager
def jnp_max_pool():
    """Inside: `dab_nets.global_pool` takes ``jnp.max`` itself (its gradient split over tied maxima), the
    pool of both AlphaZero networks before its custom gradient (values are the same)."""
    saved = dab_nets._grid_max
    dab_nets._grid_max = lambda x: jnp.max(x, axis=1)
    try:
        yield
    finally:
        dab_nets._grid_max = saved


def pool_row(name: str, multiplier: int, repeats: int, warmup: int, seed: int = 0, clock: str = "cpu") -> dict:
    """An AlphaZero network's step as shipped against the same step under `jnp_max_pool`, timed alternately.

    Returns ``{"ms": shipped, "anchor_ms": with jnp.max, "ratio": shipped / anchor}`` (medians of ``repeats``
    alternated calls after ``warmup`` untimed pairs; process CPU or wall time by ``clock``).
    """
    jitted, args, _, _ = build(name, multiplier, seed)
    compiled = _compile(jitted, *args)[0]
    with jnp_max_pool():
        ref, ref_args, _, _ = build(name, multiplier, seed)
        anchor = _compile(ref, *ref_args)[0]
    now = time.process_time if clock == "cpu" else time.perf_counter
    for _ in range(warmup):
        jax.block_until_ready(compiled(*args))
        jax.block_until_ready(anchor(*ref_args))
    ours, theirs = [], []
    for _ in range(repeats):
        for fn, a, out in ((compiled, args, ours), (anchor, ref_args, theirs)):
            t0 = now()
            jax.block_until_ready(fn(*a))
            out.append(now() - t0)
    ms, anchor_ms = 1e3 * statistics.median(ours), 1e3 * statistics.median(theirs)
    return {"ms": ms, "anchor_ms": anchor_ms, "ratio": ms / anchor_ms}


def check_layout(seed: int = 0) -> dict:
    """The new layout against the old on random inputs: ``{what: max relative difference}`` (0.0 = bitwise).

    Q-snake nets (3 x 16 and the paper's 6 layers): forward outputs in
    training and inference mode and the new batch statistics must be
    bitwise equal; parameter gradients equal to float32 rounding. DDPG actors
    (four variants) and critic: outputs bitwise, parameter gradients equal to
    float32 rounding.

    Raises:
        AssertionError: a difference beyond those bounds.
    """
    out = {}
    key = jax.random.key(seed)

    def rel(a, b):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))

    def both(fn):
        with layout("old"):
            old = fn()
        return fn(), old

    for feats, batch in (((16, 16, 16), 37), (PAPER_FEATURES, 16)):
        net = q_snake_nets.QSnakeNet(features=feats)
        variables = q_snake_nets.init_variables(net, key, (21, 21, 3))
        views = jax.random.uniform(jax.random.fold_in(key, 1), (batch, 21, 21, 3), minval=-1.0, maxval=1.0)
        target = jax.random.uniform(jax.random.fold_in(key, 2), (batch, 3))

        def q_run():
            train = jax.jit(lambda v, x: net.apply(v, x, train=True, mutable=["batch_stats"]))(variables, views)
            infer = jax.jit(lambda v, x: net.apply(v, x, train=False))(variables, views)
            def loss(p):
                q, _ = net.apply({"params": p, "batch_stats": variables["batch_stats"]}, views, train=True,
                                 mutable=["batch_stats"])
                return jnp.mean((q - target) ** 2)

            return train, infer, jax.jit(jax.grad(loss))(variables["params"])

        (train, infer, grads), (train0, infer0, grads0) = both(q_run)
        fwd = max(rel(a, b) for a, b in zip(jax.tree.leaves((train, infer)), jax.tree.leaves((train0, infer0))))
        grad = max(rel(a, b) for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(grads0)))
        name = f"q_snake {','.join(map(str, feats))}"
        out[f"{name}: forward"], out[f"{name}: gradients"] = fwd, grad
        assert fwd == 0.0, (name, fwd)
        assert grad < 1e-5, (name, grad)

    cfg = ddpg.DDPGConfig()
    obs = (jax.random.uniform(jax.random.fold_in(key, 3), (64, 260)) < 0.3).astype(jnp.float32)
    act = jax.nn.softmax(jax.random.normal(jax.random.fold_in(key, 4), (64, 40)))
    critic = cfg.critic()
    pc = ddpg_nets.init_critic(jax.random.fold_in(key, 5), critic)
    for variant in ("val_after_actions", "actions_after_val", "val_branch_actions", "dual"):
        actor = cfg.actor(variant)
        pa = ddpg_nets.init_actor(jax.random.fold_in(key, 6), actor)

        def d_run():
            ga = jax.jit(jax.grad(lambda p: jnp.sum(actor.apply(p, obs).policy ** 2)))(pa)
            gc = jax.jit(jax.grad(lambda p: jnp.sum(critic.apply(p, obs, act) ** 2)))(pc)
            return jax.jit(actor.apply)(pa, obs), jax.jit(critic.apply)(pc, obs, act), ga, gc

        new, old = both(d_run)
        fwd = max(rel(a, b) for a, b in zip(jax.tree.leaves(new[:2]), jax.tree.leaves(old[:2])))
        grad = max(rel(a, b) for a, b in zip(jax.tree.leaves(new[2:]), jax.tree.leaves(old[2:])))
        out[f"ddpg {variant}: outputs"], out[f"ddpg {variant}: gradients"] = fwd, grad
        assert fwd == 0.0, (variant, fwd)
        assert grad < 1e-5, (variant, grad)
    return out


# ----------------------------------------------------------------------------- timing
def _median_seconds(fn, repeats: int, warmup: int) -> tuple[float, float]:
    """``(cpu, wall)``: median process CPU time and median wall time of ``fn()`` (blocked until ready) over
    ``repeats`` calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        jax.block_until_ready(fn())
    cpu, wall = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(fn())
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(cpu), statistics.median(wall)


def _paired_seconds(fn, anchor, repeats: int, warmup: int, clock: str) -> tuple[float, float, dict]:
    """``(cpu, wall, extra)``: `_median_seconds` of ``fn``; with ``anchor`` (`matmul_anchor`'s ``(call, flops)``)
    the two are called alternately (``fn``, ``anchor``, ``fn``, ...), so a machine whose speed drifts slows both
    alike, and ``extra`` is ``{"matmul_gflops": the anchor's GFLOP/s at its median clock time}`` (else ``{}``)."""
    if anchor is None:
        return (*_median_seconds(fn, repeats, warmup), {})
    call, anchor_flops = anchor
    for _ in range(warmup):
        jax.block_until_ready(fn())
        jax.block_until_ready(call())
    cpu, wall, other = [], [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(fn())
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(call())
        other.append(time.process_time() - c0 if clock == "cpu" else time.perf_counter() - t0)
    return statistics.median(cpu), statistics.median(wall), {"matmul_gflops": anchor_flops / statistics.median(other) / 1e9}


def _compile(jitted, *args, options=None):
    """``(compiled, flops, compile seconds)`` of ``jitted`` at ``args`` (``options``: XLA compiler options)."""
    t0 = time.perf_counter()
    lowered = jitted.lower(*args)
    compiled = lowered.compile(compiler_options=options) if options else lowered.compile()
    seconds = time.perf_counter() - t0
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):  # older jax: one dict per computation
        cost = cost[0]
    return compiled, float(cost["flops"]), seconds


def matmul_anchor(n: int, seed: int = 0):
    """``(call, flops)``: a compiled float32 ``n x n`` matmul on fixed operands, and its 2 n^3 FLOPs."""
    ka, kb = jax.random.split(jax.random.key(seed + n))
    a = jax.random.normal(ka, (n, n), jnp.float32)
    b = jax.random.normal(kb, (n, n), jnp.float32)
    compiled = jax.jit(jnp.matmul).lower(a, b).compile()
    return (lambda: compiled(a, b)), 2.0 * n ** 3


def matmul_rows(sizes, repeats: int, warmup: int, seed: int = 0, clock: str = "cpu") -> list[dict]:
    """The anchor: jitted float32 ``a @ b`` of ``n x n`` matrices, 2 n^3 FLOPs, median of ``repeats`` calls."""
    rows = []
    for n in sizes:
        ka, kb = jax.random.split(jax.random.key(seed + n))
        a = jax.random.normal(ka, (n, n), jnp.float32)
        b = jax.random.normal(kb, (n, n), jnp.float32)
        compiled, flops, compile_s = _compile(jax.jit(jnp.matmul), a, b)
        cpu, wall = _median_seconds(lambda: compiled(a, b), repeats, warmup)
        s = cpu if clock == "cpu" else wall
        rows.append({"kind": "matmul", "network": f"matmul n={n}", "batch": n, "params": 0,
                     "flops": 2.0 * n ** 3, "xla_flops": flops, "ms": 1e3 * s, "cpu_ms": 1e3 * cpu,
                     "wall_ms": 1e3 * wall,
                     "gflops": 2.0 * n ** 3 / s / 1e9, "compile_s": compile_s})
    return rows


# ----------------------------------------------------------------------------- the training steps
def _count(tree) -> int:
    return int(sum(np.size(x) for x in jax.tree.leaves(tree)))


def _shipped_config(name: str) -> dict:
    return json.loads((WEIGHTS / name / "metadata.json").read_text())["config"]


def q_snake_step(paper: bool, multiplier: int, seed: int):
    """``(jitted, args, batch, params)``: `QSnakeLearner._train_step` of the shipped (or paper-sized) net.

    The learner's state is fresh; the training data have the shapes of a short
    self-play's (``num_games=4``, ``num_turns=16``; `_q_snake_data`): the
    minibatch is drawn from them, views rebuilt and mirrored as in training.
    """
    if paper:
        base = qs.QSnakeConfig(features=PAPER_FEATURES)
    else:
        shipped = _shipped_config("q_snake")
        known = {f.name for f in dataclasses.fields(qs.QSnakeConfig)}
        base = qs.QSnakeConfig.from_json({k: v for k, v in shipped.items() if k in known})
    cfg = dataclasses.replace(base, num_games=4, num_turns=16, batch_size=base.batch_size * multiplier,
                              pit_team_games=8, pit_solo_games=8, eval_games=4)
    learner = qs.QSnakeLearner(cfg)
    state = learner.init(jax.random.key(seed))
    jitted = jax.jit(functools.partial(qs.QSnakeLearner._train_step, learner))
    return jitted, (state, _q_snake_data(learner, state, seed), jax.random.key(seed + 1)), cfg.batch_size, \
        _count(state.params)


def _q_snake_data(learner: qs.QSnakeLearner, state, seed: int):
    """`TrainingData` of the shapes `QSnakeLearner.collect` gives, without playing: every turn of the record
    holds the games' start boards, every position is sampled (the step's work does not depend on which)."""
    shapes, _, _ = jax.eval_shape(learner.collect, state)
    data = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
    T, B, S = data.record.action.shape
    params = learner.params_for(1)
    start = jax.vmap(learner.env.init, in_axes=(0, None))(jax.random.split(jax.random.key(seed), B), params).board
    boards = jax.tree.map(lambda x: jnp.broadcast_to(x[None], (T,) + x.shape), start)
    t, b, s = (x.reshape(-1).astype(jnp.int32) for x in jnp.meshgrid(jnp.arange(T), jnp.arange(B), jnp.arange(S),
                                                                     indexing="ij"))
    action = jax.random.randint(jax.random.key(seed + 2), (T, B, S), 0, 3).astype(data.record.action.dtype)
    return data._replace(record=data.record._replace(boards=boards, action=action), t=t, b=b, s=s,
                        count=jnp.int32(T * B * S), vector=jnp.full(data.vector.shape, 0.5, data.vector.dtype),
                        health_loss=jnp.asarray(1, data.health_loss.dtype))


def _filled_buffer(buffer: ReplayBuffer, boards, legal) -> ReplayBuffer:
    """``buffer`` full of the positions ``boards`` (``[E]``, repeated), uniform policy over ``legal``, value 0."""
    cap = buffer.capacity
    n = jax.tree.leaves(boards)[0].shape[0]
    idx = jnp.arange(cap) % n
    policy = legal[idx].astype(jnp.float32)
    policy = policy / jnp.maximum(policy.sum(-1, keepdims=True), 1.0)
    data = az.Sample(board=jax.tree.map(lambda x: x[idx], boards), policy=policy, value=jnp.zeros((cap,), jnp.float32))
    return buffer.replace(data=data, size=jnp.int32(cap), insert=jnp.int32(0))


def alphazero_step(game: str, multiplier: int, seed: int):
    """``(jitted, args, batch, params)``: the learner's jitted ``update_step`` (`alphazero.compiled`), shipped config.

    The replay buffers are full of the self-play games' start positions (the
    step's cost does not depend on what the positions are).
    """
    meta_name = "alphazero_dab" if game == "dots_and_boxes" else "alphazero_onitama"
    meta = json.loads((WEIGHTS / meta_name / "metadata.json").read_text())
    shipped = meta["config"].get("learner", meta["config"])  # the experiment's config nests the learner's
    nets = dab_nets if game == "dots_and_boxes" else onitama_nets
    network = nets.NetworkConfig(**meta["network"])
    sizes = az.parse_board_sizes(",".join(meta["board_sizes"])) if "board_sizes" in meta else None
    cfg = az.AlphaZeroConfig(
        game=game, board_sizes=sizes, network=network, value_target=meta.get("value_target"),
        num_envs=8, buffer_capacity=shipped["buffer_capacity"], batch_size=shipped["batch_size"] * multiplier,
        learning_rate=shipped["learning_rate"], weight_decay=shipped["weight_decay"],
        max_grad_norm=shipped["max_grad_norm"], value_loss_weight=shipped["value_loss_weight"],
        augment=shipped["augment"],
    )
    state = az.init_state(cfg, jax.random.key(seed))
    adapter = az.game_adapter(cfg)
    buffers = []
    for size, buf, env_states in zip(cfg.board_sizes, state.buffers, state.env_states):
        boards = adapter.position(env_states)
        buffers.append(_filled_buffer(buf, boards, adapter.legal_mask(size, boards)))
    buffers = tuple(buffers)
    jitted = az.compiled(cfg).update_step
    batch = cfg.batch_size * len(cfg.board_sizes)
    return jitted, (state.params, state.opt_state, buffers, jax.random.key(seed + 1)), batch, _count(state.params)


def ddpg_step(multiplier: int, seed: int):
    """``(jitted, args, batch, params)``: `DDPGLearner._update` (every variant's actor and critic), default config.

    Batch is transitions per update summed over the runs (8 variants x 64).
    """
    base = ddpg.DDPGConfig()
    cfg = dataclasses.replace(base, batch_size=base.batch_size * multiplier,
                              learning_starts=max(base.learning_starts, base.batch_size * multiplier))
    learner = ddpg.DDPGLearner(cfg)
    ts = learner.init(jax.random.key(seed))
    ts = ts.replace(buffer=ts.buffer.replace(filled=jnp.ones_like(ts.buffer.filled)),
                    buffer_count=jnp.int32(cfg.buffer_size))
    jitted = jax.jit(functools.partial(ddpg.DDPGLearner._update, learner))
    params = _count((ts.actor, ts.critic))
    return jitted, (ts, jax.random.key(seed + 1)), cfg.batch_size * cfg.num_runs, params


def build(name: str, multiplier: int = 1, seed: int = 0):
    """``(jitted, args, batch, params)`` of network ``name`` (`NETWORKS`) at ``multiplier`` x its training batch."""
    if name == "q_snake_small":
        return q_snake_step(False, multiplier, seed)
    if name == "q_snake_paper":
        return q_snake_step(True, multiplier, seed)
    if name == "az_dab":
        return alphazero_step("dots_and_boxes", multiplier, seed)
    if name == "az_onitama":
        return alphazero_step("onitama", multiplier, seed)
    if name == "ddpg":
        return ddpg_step(multiplier, seed)
    raise ValueError(f"unknown network {name!r}; choose from {NETWORKS}")


CHANGED = ("q_snake_small", "q_snake_paper", "ddpg")
"""The networks whose new layout is another program than the old: their FLOPs are counted on the old layout
(the same work; XLA counts the body of the Q-snake kernel gradient's loop once)."""

NO_YNN = {"xla_cpu_experimental_ynn_fusion_type": ""}


PRODUCTS = ("dot_general", "conv_general_dilated")


def _products(jaxpr, times: int, out: dict) -> dict:
    """``{key: [equation, count]}``: the step's matrix products and convolutions, each distinct (primitive, operand
    shapes and dtypes, parameters) once, counted over nested jaxprs (a ``scan`` body ``length`` times)."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in PRODUCTS:
            key = (name, tuple((tuple(v.aval.shape), str(v.aval.dtype)) for v in eqn.invars),
                   repr(sorted(eqn.params.items(), key=lambda kv: kv[0])))
            out.setdefault(key, [eqn, 0])[1] += times
        if name in ("while", "cond"):
            bodies = jex.jaxprs_in_params(eqn.params)
            if any(e.primitive.name in PRODUCTS for b in bodies for e in getattr(b, "jaxpr", b).eqns):
                raise ValueError(f"a {name} holds products: its trip count is not known here")
        inner = times * int(eqn.params.get("length", 1)) if name == "scan" else times
        for sub in jex.jaxprs_in_params(eqn.params):
            _products(getattr(sub, "jaxpr", sub), inner, out)
    return out


def product_ceiling(name: str, repeats: int, warmup: int, seed: int = 0, clock: str = "cpu",
                    multiplier: int = 1, anchor=None) -> dict:
    """The step's own products alone: a bound on its GFLOP/s with XLA's kernels at the network's shapes.

    Every ``dot_general`` and ``conv_general_dilated`` of network ``name``'s step (the old layout: XLA's own
    convolution gradients), as many times as the step runs it, is compiled into one program of nothing else,
    each on operands of its own (random, of its shapes; so none is merged with another) and with its parameters,
    and timed (median of ``repeats`` calls). If the step did nothing else, and each product ran as fast as
    there, it would run at ``gflops``.

    Returns:
        ``{"products": count, "distinct": distinct count, "product_flops": XLA's FLOPs of the program,
        "product_ms": its median time, "gflops": the bound}``; with ``anchor`` (`matmul_anchor`'s pair)
        also ``"matmul_gflops"``, the anchor's timed alternately with the program (`_paired_seconds`).

    Raises:
        ValueError: a product inside a ``while`` or ``cond`` (its trip count is not known).
    """
    with layout("old"):
        jitted, args, _, _ = build(name, multiplier, seed)
        closed = jax.make_jaxpr(jitted)(*args)
    found = _products(closed.jaxpr, 1, {})
    key = jax.random.key(seed)
    calls, operands = [], []
    for eqn, n in found.values():
        for _ in range(n):
            calls.append((eqn.primitive, eqn.params, len(operands), len(eqn.invars)))
            for v in eqn.invars:
                key, sub = jax.random.split(key)
                operands.append(jax.random.normal(sub, v.aval.shape, v.aval.dtype))

    def products(*xs):
        return tuple(prim.bind(*xs[at:at + k], **params) for prim, params, at, k in calls)

    compiled, flops, _ = _compile(jax.jit(products), *operands)
    cpu, wall, extra = _paired_seconds(lambda: compiled(*operands), anchor, repeats, warmup, clock)
    seconds = cpu if clock == "cpu" else wall
    return {**extra, "products": len(calls), "distinct": len(found), "product_flops": flops,
            "product_ms": 1e3 * seconds, "gflops": flops / seconds / 1e9}


def network_row(name: str, multiplier: int, repeats: int, warmup: int, seed: int = 0, clock: str = "cpu",
                which: str = "new", ynn: bool = True, anchor=None) -> dict:
    """One network's row: batch, parameters, FLOPs per step, ms per step (``clock``), GFLOP/s.

    FLOPs are XLA's count of the compiled step; for the networks of `CHANGED`
    that of the old layout (``which="old"``), whatever ``which`` times: the work is
    the same, and XLA counts a loop's body once, so the new layout's
    kernel-gradient loop would read as fewer FLOPs. With ``anchor`` (`matmul_anchor`'s pair) the step and
    the anchor are timed alternately (`_paired_seconds`) and the row gets the anchor's ``matmul_gflops``.
    """
    with layout(which):
        jitted, args, batch, params = build(name, multiplier, seed)
        compiled, flops, compile_s = _compile(jitted, *args, options=None if ynn else NO_YNN)
    if which != "old" and name in CHANGED:
        with layout("old"):
            ref, ref_args, _, _ = build(name, multiplier, seed)
            flops = _compile(ref, *ref_args)[1]
    cpu, wall, extra = _paired_seconds(lambda: compiled(*args), anchor, repeats, warmup, clock)
    s = cpu if clock == "cpu" else wall
    return {**extra, "kind": "network", "network": name, "multiplier": multiplier, "batch": batch, "params": params,
            "layout": which, "ynn": ynn, "flops": flops, "ms": 1e3 * s, "cpu_ms": 1e3 * cpu, "wall_ms": 1e3 * wall,
            "gflops": flops / s / 1e9, "compile_s": compile_s}


def run(cfg: Config, show=print) -> list[dict]:
    """Every row of ``cfg`` (the matmul anchor first); each row gets ``matmul_gflops`` and ``fraction`` (of it).

    The matmul rows find the best ``n``; each network's step (and its products alone) is then timed alternately
    with that matmul, whose GFLOP/s in the same window is the row's ``matmul_gflops``.

    Applies ``cfg.malloc`` (process-wide) before anything is measured.
    """
    if cfg.malloc == "retain" and not retain_freed_memory():
        raise RuntimeError("malloc=retain needs glibc's mallopt; this C library has none")
    if cfg.check:
        for what, diff in check_layout(cfg.seed).items():
            show(f"check: {what}: max relative difference {diff:.1e}" + (" (bitwise)" if diff == 0.0 else ""))
    repeats = min(cfg.repeats, 3) if cfg.quick else cfg.repeats
    warmup = min(cfg.warmup, 1) if cfg.quick else cfg.warmup
    sizes = (tuple(n for n in cfg.matmul_sizes if n <= 1024) or cfg.matmul_sizes[:1]) if cfg.quick else cfg.matmul_sizes
    rows = matmul_rows(sizes, repeats, warmup, cfg.seed, cfg.clock)
    best = max(r["gflops"] for r in rows)
    for r in rows:
        r["matmul_gflops"], r["fraction"] = best, r["gflops"] / best
        show(_fmt(r))
    best_n = max(rows, key=lambda r: r["gflops"])["batch"]
    anchor = matmul_anchor(best_n, cfg.seed)
    for m in cfg.batch_multipliers:
        for name in cfg.networks:
            paper = cfg.quick and name == "q_snake_paper"
            row = network_row(name, m, 1 if paper else repeats, 0 if paper else warmup, cfg.seed, cfg.clock,
                              cfg.layout, cfg.ynn, anchor)
            row["fraction"] = row["gflops"] / row["matmul_gflops"]
            rows.append(row)
            show(_fmt(row))
            if cfg.ceiling:
                c = product_ceiling(name, 1 if paper else repeats, 0 if paper else warmup, cfg.seed, cfg.clock, m,
                                    anchor)
                row["ceiling"] = {**c, "fraction": c["gflops"] / c["matmul_gflops"],
                                  "flop_share": c["product_flops"] / row["flops"]}
                show(f"|   its {c['products']} products alone ({c['distinct']} distinct, "
                     f"{100 * c['product_flops'] / row['flops']:.0f}% of the FLOPs) | | | "
                     f"{c['product_flops'] / 1e9:.3f} G | {c['product_ms']:.2f} | {c['gflops']:.1f} | "
                     f"{100 * row['ceiling']['fraction']:.1f}% (matmul {c['matmul_gflops']:.0f}) | |")
            if cfg.pool_anchor and name.startswith("az_"):
                row["pool"] = p = pool_row(name, m, repeats, warmup, cfg.seed, cfg.clock)
                show(f"|   pool gradient: shipped {p['ms']:.2f} ms, jnp.max's {p['anchor_ms']:.2f} ms (alternated) "
                     f"| | | | | | shipped / jnp.max's: {p['ratio']:.3f} | |")
    return rows


def rows(quick: bool) -> list[dict]:
    """The rows of the default settings (``quick=True``: the quick run), without printing or writing files."""
    return run(Config(quick=quick), show=lambda _: None)


def _fmt(r: dict) -> str:
    paired = f" (matmul {r['matmul_gflops']:.0f})" if r["kind"] == "network" else ""
    return (f"| {r['network']} | {r['batch']:,} | {r['params']:,} | {r['flops'] / 1e9:.3f} G | {r['ms']:.2f} | "
            f"{r['gflops']:.1f} | {100 * r['fraction']:.1f}%{paired} | {r['compile_s']:.1f} |")


def main(argv=None):
    """Entry point: ``python benchmarks/networks.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, record, argv, prog="benchmarks/networks.py", summary=__doc__.split("\n\n")[0])


def record(cfg: Config, argv=None) -> list[dict]:
    """The benchmark: prints the table (`run`), then writes ``results.json`` into ``cfg.out`` (and ``cfg.json``)."""
    del argv
    dev = jax.devices()[0]
    flags = os.environ.get("XLA_FLAGS", "")
    print(f"device: {dev.platform} ({dev.device_kind}), {os.cpu_count()} CPUs, jax {jax.__version__}, "
          f"XLA_FLAGS={flags!r}, quick={cfg.quick}, layout={cfg.layout}, malloc={cfg.malloc}, ynn={cfg.ynn}, "
          f"ceiling={cfg.ceiling}, pool_anchor={cfg.pool_anchor}, "
          f"clock={cfg.clock}")
    print("| network | batch | params | FLOPs/step | ms/step | GFLOP/s | % of matmul | compile s |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|")
    out_rows = run(cfg, show=lambda line: print(line, flush=True))
    best = out_rows[0]["matmul_gflops"]
    print(f"best matmul: {best:.1f} GFLOP/s ({cfg.clock} time)")
    doc = {"device": f"{dev.platform} {dev.device_kind}", "platform": platform.platform(), "cpu_count": os.cpu_count(),
           "jax": jax.__version__, "xla_flags": flags, "layout": cfg.layout, "malloc": cfg.malloc, "ynn": cfg.ynn,
           "clock": cfg.clock, "matmul_gflops": best, "rows": out_rows,
           "recorded": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    with experiment.ResultsDir(cfg.out, cfg, overwrite=True) as rd:  # a new measurement replaces the last one
        rd.write_json("results.json", doc)
    if cfg.json:
        pathlib.Path(cfg.json).write_text(json.dumps(doc, indent=1) + "\n")
    return out_rows


if __name__ == "__main__":
    main()
