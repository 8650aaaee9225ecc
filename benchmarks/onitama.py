"""Random-playout steps per second of the Onitama kernel, against the plain-Python reference in the same run.

    python benchmarks/onitama.py [batch_sizes=1,1024,16384] [steps=64] [seconds=1.0] \
        [repeats=3] [methods=reference_python,jax_rules,jax_env_paper,jax_env_canonical] \
        [alphabeta_depths=1,2,3] [alphabeta_positions=20] [minimax_batch=64] [out_dir=results/onitama_benchmark]
    python benchmarks/onitama.py --help    # every setting, its type, default and meaning

A step is one turn of one game (a move or a pass); every move is uniform among
the legal ones, from random deals of all 16 cards, games ending by a win or at
the 200-turn draw. Measured, in one run:

* ``reference_python``: the plain-Python move generator of the tests
  (``tests/reference/onitama_reference.py``: ``moves``, ``random.choice``,
  ``play``), whole games, one at a time.
* ``jax_rules``: the rules kernel alone (`rules.move_targets`, a uniform pick
  among the legal (piece, card, move) triples, `rules.apply_move`), no
  observation, no contract; a finished game is dealt again in place.
* ``jax_env_paper`` / ``jax_env_canonical``: the full contract, `Onitama.step`
  in the 40-action space of Dasgupta & Chong, "Mastering the game of Onitama
  with Reinforcement Learning" (NUS USP group report, 2021), section 4.2
  (``action_space="paper"``), or the canonical 1250-action space
  (observation, legal-action mask, illegal-action check, terminal no-op),
  with `jaxgames.wrappers.auto_reset_step` starting a new game where one ends;
  the random move is `Onitama.random_action` (uniform over the legal
  actions, drawn from the state's cached 40-move list).
* ``jax_env_canonical_mask_pick``: the same in the canonical space with the
  move drawn from the 1250-entry ``legal_action_mask`` (`_pick`), what a
  generic agent that reads only the mask pays.

Alpha-beta (``alphabeta_depths``): `jaxgames.agents.onitama.AlphaBetaAgent`
(the generic host search `jaxgames.search.alphabeta` with a
material-plus-master-distance evaluation, a transposition table, captures
first) in Dasgupta & Chong's 40-action space, one decision from each of
``alphabeta_positions`` positions (random deals, then 0-11 uniformly random
turns; no finished game); nodes/s = nodes visited (`AlphaBetaResult.nodes`,
leaves included) / wall time over all of them, after one untimed search
that compiles the node expansion. Its batched twin, the JAX
`jaxgames.agents.onitama.MinimaxAgent` (full width, no pruning, depths <= 3
of the same list), is measured as decisions/s over ``minimax_batch``
positions in one jitted vmapped call, and leaves/s = 40**depth x
decisions/s (every (piece, card, move) triple is expanded, legal or not).
Empty ``alphabeta_depths`` skips both.

JAX rows: a jitted ``lax.scan`` of ``steps`` steps over a batch vmapped at one
boundary, one call per measurement; steps/s = batch x steps x calls / wall
time (compilation excluded, reported apart), the median of ``repeats``
windows of ``seconds``. Random legal picks draw one uniform number per game
and step (the ``k``-th legal action of ``legal_action_mask``: `_pick`).

Config: ``key=value`` overrides of `Config`; results go to ``out_dir`` as
``results.json``, ``results.csv`` and ``config.json``, with a markdown table on stdout.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxgames import checks, experiment

METHODS = ("reference_python", "jax_rules", "jax_env_paper", "jax_env_canonical", "jax_env_canonical_mask_pick")


@dataclasses.dataclass(frozen=True)
class Config:
    """Benchmark settings (``key=value`` on the command line).

    Attributes:
        batch_sizes: games per jitted call, comma separated.
        steps: steps per game in one jitted call (the ``lax.scan`` length).
        seconds: minimum wall time of each measurement window.
        repeats: measurement windows per figure (the median is reported).
        methods: which rows to measure, comma separated (see the module docstring).
        alphabeta_depths: alpha-beta depths to measure, comma separated (1-4; empty: none).
        alphabeta_positions: positions searched per depth.
        minimax_batch: positions per call of the JAX minimax rows.
        out_dir: where results are written.
    """

    batch_sizes: str = "1,1024,16384"
    steps: int = 64
    seconds: float = 1.0
    repeats: int = 3
    methods: str = ",".join(METHODS)
    alphabeta_depths: str = "1,2,3"
    alphabeta_positions: int = 20
    minimax_batch: int = 64
    out_dir: str = "results/onitama_benchmark"

    def __post_init__(self):
        for name in ("steps", "repeats", "alphabeta_positions", "minimax_batch"):
            checks.positive_int(name, getattr(self, name))
        checks.positive_float("seconds", self.seconds)
        unknown = set(self.methods.split(",")) - set(METHODS)
        if unknown:
            raise ValueError(f"unknown methods {sorted(unknown)}; known: {', '.join(METHODS)}")
        for b in _ints("batch_sizes", self.batch_sizes):
            checks.positive_int("batch_sizes", b)
        for d in _ints("alphabeta_depths", self.alphabeta_depths, allow_empty=True):
            checks.integer("alphabeta_depths", d, 1, 4)


def _ints(name: str, text: str, *, allow_empty: bool = False) -> list[int]:
    """A comma-separated list of ints.

    Raises:
        ValueError: an entry that is not an int, or no entry unless ``allow_empty`` (names ``name``).
    """
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if (not items and not allow_empty) or not all(t.lstrip("-").isdigit() for t in items):
        raise ValueError(f"{name} must be comma-separated ints, e.g. 1,2; got {text!r}")
    return [int(t) for t in items]


def _timed(fn, seconds: float, repeats: int) -> float:
    """Calls ``fn`` (which returns the number of steps it made) in ``repeats`` windows; the median steps/s."""
    rates = []
    for _ in range(repeats):
        steps, start = 0, time.perf_counter()
        while True:
            steps += fn()
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates.append(steps / elapsed)
    return sorted(rates)[len(rates) // 2]


def reference_python(seconds: float, repeats: int) -> float:
    """Steps/s of the plain-Python reference generator, whole random games from random deals."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from tests.reference import onitama_reference as ref

    rng = random.Random(0)

    def one_game():
        return ref.random_game(rng, rng.sample(ref.ORDER, 5), max_turns=200)

    return _timed(one_game, seconds, repeats)


def _pick(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random True index of ``mask`` (bool ``[n]``; int32 ``[]``), from one uniform number.

    The ``k``-th True entry, ``k = floor(u * count)``. For long masks (the
    canonical space's 1250) in two levels, rows of ``ceil(sqrt(n))`` entries:
    a cumulative count over the rows picks the row, then one over that row
    (cumulative sums are slow on XLA's CPU backend over 1250 entries).
    """
    n = mask.shape[0]
    count = jnp.sum(mask, dtype=jnp.int32)
    k = jnp.minimum(jnp.floor(jax.random.uniform(key) * count).astype(jnp.int32), jnp.maximum(count - 1, 0))
    if n <= 64:
        return jnp.argmax(jnp.cumsum(mask, dtype=jnp.int32) > k).astype(jnp.int32)
    width = int(np.ceil(np.sqrt(n)))
    rows = -(-n // width)
    grid = jnp.pad(mask, (0, rows * width - n)).reshape(rows, width)
    before = jnp.cumsum(jnp.sum(grid, axis=1, dtype=jnp.int32))  # [rows]
    row = jnp.argmax(before > k).astype(jnp.int32)
    k_in_row = k - (before[row] - jnp.sum(grid[row], dtype=jnp.int32))
    col = jnp.argmax(jnp.cumsum(grid[row], dtype=jnp.int32) > k_in_row).astype(jnp.int32)
    return row * width + col


def _env_runner(env, batch: int, steps: int, mask_pick: bool = False):
    from jaxgames.wrappers import auto_reset_step

    def one(state, key):
        def body(state, key):
            pick_key, step_key = jax.random.split(key)
            if mask_pick:
                action = _pick(pick_key, state.legal_action_mask)
            else:
                action = env.random_action(pick_key, state)
            state, outcome = auto_reset_step(env, state, action, step_key)
            return state, outcome.terminated

        state, ended = jax.lax.scan(body, state, jax.random.split(key, steps))
        return state, jnp.sum(ended)

    init = jax.jit(jax.vmap(env.init))
    run = jax.jit(jax.vmap(one))
    return init, run


def _rules_runner(batch: int, steps: int, max_turns: int = 200):
    from jaxgames.games.onitama import rules

    deck = jnp.arange(16, dtype=jnp.int32)

    def deal(key):
        return rules.deal_board(rules.shuffle_deal(key, deck))

    def one(board, key):
        def body(board, key):
            pick_key, deal_key = jax.random.split(key)
            legal, target = rules.move_targets(board)  # [40]
            must_pass = ~jnp.any(legal)
            index = _pick(pick_key, jnp.where(must_pass, jnp.arange(40) % 4 == 0, legal))  # a pass: either slot
            piece, slot = index // 8, (index // 4) % 2
            to = jnp.sum(jnp.where(jnp.arange(40) == index, target, 0), dtype=jnp.int32)
            nxt = rules.apply_move(board, slot, piece, to, must_pass)
            over = rules.is_won(nxt) | (nxt.turn >= max_turns)
            fresh = deal(deal_key)
            nxt = jax.tree.map(lambda a, b: jnp.where(over, a, b), fresh, nxt)
            return nxt, over

        board, ended = jax.lax.scan(body, board, jax.random.split(key, steps))
        return board, jnp.sum(ended)

    return jax.jit(jax.vmap(deal)), jax.jit(jax.vmap(one))


def jax_steps_per_second(method: str, batch: int, steps: int, seconds: float, repeats: int) -> tuple[float, float, float]:
    """(steps/s, compile seconds, games finished per 1000 steps) of one JAX row."""
    from jaxgames.games.onitama import Onitama

    if method == "jax_rules":
        init, run = _rules_runner(batch, steps)
    else:
        env = Onitama(action_space="paper" if method == "jax_env_paper" else "canonical")
        init, run = _env_runner(env, batch, steps, mask_pick=method == "jax_env_canonical_mask_pick")
    key = jax.random.key(0)
    state = init(jax.random.split(key, batch))
    t0 = time.perf_counter()
    state, ended = jax.block_until_ready(run(state, jax.random.split(jax.random.key(1), batch)))  # compiles
    compile_s = time.perf_counter() - t0
    carry = [state, jax.random.key(2), 0, 0]

    def call():
        carry[1], sub = jax.random.split(carry[1])
        carry[0], ended = jax.block_until_ready(run(carry[0], jax.random.split(sub, batch)))
        carry[2] += int(np.sum(np.asarray(ended)))
        carry[3] += batch * steps
        return batch * steps

    sps = _timed(call, seconds, repeats)
    return sps, compile_s, 1000.0 * carry[2] / max(carry[3], 1)


def _search_positions(count: int, seed: int = 0) -> list:
    """``count`` unfinished states in the 40-action space: random deals, then 0-11 uniformly random turns (numpy leaves)."""
    from jaxgames.games.onitama import Onitama

    env = Onitama(action_space="paper")
    init, step, pick = jax.jit(env.init), jax.jit(env.step), jax.jit(env.random_action)
    rng, key, out = random.Random(seed), jax.random.key(seed), []
    while len(out) < count:
        key, k = jax.random.split(key)
        state = init(k)
        for _ in range(rng.randrange(12)):
            key, k = jax.random.split(key)
            state = step(state, pick(k, state), k)
        if not bool(state.terminated | state.truncated):
            out.append(jax.device_get(state))
    return out


def alphabeta_nodes_per_second(depths: list[int], positions: int) -> list[dict]:
    """One row per depth: nodes/s, nodes and milliseconds per decision of `AlphaBetaAgent` (see the module docstring)."""
    from jaxgames.agents.onitama import AlphaBetaAgent
    from jaxgames.games.onitama import Onitama

    env = Onitama(action_space="paper")
    states = _search_positions(positions)
    AlphaBetaAgent(1).search(env, states[0])  # compiles the expansion (untimed)
    rows = []
    for depth in depths:
        agent, nodes, start = AlphaBetaAgent(depth), 0, time.perf_counter()
        for i, state in enumerate(states):
            nodes += agent.search(env, state, np.random.default_rng(i)).nodes
        seconds = time.perf_counter() - start
        rows.append(dict(depth=depth, positions=len(states), nodes_per_s=nodes / seconds,
                         nodes_per_move=nodes / len(states), ms_per_move=1000.0 * seconds / len(states)))
        print(f"alphabeta depth {depth}: {nodes / seconds:,.0f} nodes/s", flush=True)
    return rows


def minimax_decisions_per_second(depths: list[int], batch: int, seconds: float, repeats: int) -> list[dict]:
    """One row per depth (<= 3): decisions/s of the JAX `MinimaxAgent` over a batch of positions, and leaves/s."""
    from jaxgames.agents.onitama import MAX_JAX_DEPTH, MinimaxAgent
    from jaxgames.games.onitama import Onitama

    env = Onitama(action_space="paper")
    states = _search_positions(batch, seed=1)
    batched = jax.tree.map(lambda *x: jnp.asarray(np.stack(x)), *states)
    rows = []
    for depth in [d for d in depths if d <= MAX_JAX_DEPTH]:
        agent = MinimaxAgent(depth)
        fn = jax.jit(jax.vmap(lambda s: agent.value(env, s)))
        t0 = time.perf_counter()
        jax.block_until_ready(fn(batched))
        compile_s = time.perf_counter() - t0

        def call():
            jax.block_until_ready(fn(batched))
            return batch

        dps = _timed(call, seconds, repeats)
        rows.append(dict(depth=depth, batch=batch, decisions_per_s=dps, leaves_per_s=dps * 40**depth, compile_s=compile_s))
        print(f"minimax (JAX) depth {depth} B={batch}: {dps:,.0f} decisions/s", flush=True)
    return rows


def run(cfg: Config, argv=None) -> list[dict]:
    """The benchmark: prints the tables, writes ``results.json``, ``results.csv``, ``config.json`` (and ``alphabeta.csv``)."""
    del argv
    batches = _ints("batch_sizes", cfg.batch_sizes)
    methods = cfg.methods.split(",")
    dev = jax.devices()[0]
    device = (
        f"{dev.platform} ({dev.device_kind}), {os.cpu_count()} CPU cores visible, "
        f"load average {os.getloadavg()[0]:.2f}, jax {jax.__version__}"
    )
    print(f"device: {device}", flush=True)
    rows = []
    for method in methods:
        if method == "reference_python":
            sps = reference_python(cfg.seconds, cfg.repeats)
            rows.append(dict(method=method, batch=1, steps_per_s=sps, compile_s=0.0, games_per_1000_steps=float("nan")))
            print(f"{method}: {sps:,.0f} steps/s", flush=True)
            continue
        for batch in batches:
            sps, compile_s, games = jax_steps_per_second(method, batch, cfg.steps, cfg.seconds, cfg.repeats)
            rows.append(dict(method=method, batch=batch, steps_per_s=sps, compile_s=compile_s, games_per_1000_steps=games))
            print(f"{method} B={batch}: {sps:,.0f} steps/s (compile {compile_s:.1f} s)", flush=True)
    depths = _ints("alphabeta_depths", cfg.alphabeta_depths, allow_empty=True)
    ab_rows = alphabeta_nodes_per_second(depths, cfg.alphabeta_positions) if depths else []
    mm_rows = minimax_decisions_per_second(depths, cfg.minimax_batch, cfg.seconds, cfg.repeats) if depths else []
    anchor = next((r["steps_per_s"] for r in rows if r["method"] == "reference_python"), None)
    for r in rows:
        r["x_reference"] = r["steps_per_s"] / anchor if anchor else float("nan")
    load_after = os.getloadavg()[0]

    print(f"\nload average at the end {load_after:.2f}")
    print("\n| method | batch | steps/s | x reference | compile s | games ended / 1000 steps |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['method']} | {r['batch']:,} | {r['steps_per_s']:,.0f} | {r['x_reference']:.1f} "
            f"| {r['compile_s']:.1f} | {r['games_per_1000_steps']:.1f} |"
        )
    if ab_rows:
        print("\n| alpha-beta depth | positions | nodes/s | nodes per move | ms per move |")
        print("|---:|---:|---:|---:|---:|")
        for r in ab_rows:
            print(
                f"| {r['depth']} | {r['positions']} | {r['nodes_per_s']:,.0f} | {r['nodes_per_move']:,.0f} "
                f"| {r['ms_per_move']:.1f} |"
            )
    if mm_rows:
        print("\n| JAX minimax depth | batch | decisions/s | leaves/s | compile s |")
        print("|---:|---:|---:|---:|---:|")
        for r in mm_rows:
            print(
                f"| {r['depth']} | {r['batch']} | {r['decisions_per_s']:,.0f} | {r['leaves_per_s']:,.0f} "
                f"| {r['compile_s']:.1f} |"
            )

    os.makedirs(cfg.out_dir, exist_ok=True)
    with open(os.path.join(cfg.out_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=2)
    with open(os.path.join(cfg.out_dir, "results.json"), "w") as f:
        json.dump(dict(device=device, load_after=load_after, rows=rows, alphabeta=ab_rows, minimax=mm_rows), f, indent=2)
    with open(os.path.join(cfg.out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if ab_rows:
        with open(os.path.join(cfg.out_dir, "alphabeta.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(ab_rows[0]))
            w.writeheader()
            w.writerows(ab_rows)
    print(f"results in {cfg.out_dir}")
    return rows


def main(argv=None) -> list[dict]:
    """Entry point: ``python benchmarks/onitama.py [key=value ...]`` (``--help`` lists the settings)."""
    return experiment.main(Config, run, argv, prog="benchmarks/onitama.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
