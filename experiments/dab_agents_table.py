"""El Kaddouri et al.'s section 5.7 table: our alpha-beta agent against four opponents on Dots-and-Boxes.

Source: El Kaddouri, Rys & Gao, "Multi Agent Reinforcement Learning With Dots
And Boxes" (course report, undated). Its section 5.7 plays the alpha-beta
agent 500 games against itself, a naive MCTS agent, a random agent and a
first-open-edge agent, and reports wins, opponent wins and timeouts. This
experiment plays the same matches with `jaxgames.agents` in the batched arena
(first player alternating) and writes, under ``results/dab_agents_table/``:

* ``table.csv`` / ``table.md``: per opponent, games, agent wins, opponent
  wins, draws, timeouts, mean game length, slowest alpha-beta move, next to
  the report's numbers;
* ``config.json``.

The folder follows `jaxgames.experiment.ResultsDir` (a lock against a second
concurrent run, a refusal to mix in a run of other settings unless
``overwrite=true``, atomic writes).

A *timeout* is a game in which the alpha-beta agent (or a host opponent)
took longer than ``move_time_limit`` (the report's 200 ms) on one move, or a
game that did not end within the step limit. JAX agents (MCTS, random,
first open edge) decide for the whole batch at once and are not timed per
game, so they cannot time out here (the report's MCTS timed out 69 times).

Note on the report: its text says the agent "won 431 out of 431 matches" against
MCTS while its table lists 500 games with 69 timeouts; both hold if the
431 counts only the games that finished. We report all games.

Run ``python experiments/dab_agents_table.py`` for the small default (3x3,
100 games per opponent, 50 ms per alpha-beta move: about 3 minutes on 2 CPU
cores) or ``full=true`` for the report's setting (5x5, 500 games, 150 ms per
move under the 200 ms limit; hours on 2 cores).
"""

from __future__ import annotations

import dataclasses
import time

import jax
from tqdm import tqdm
import numpy as np

import jaxgames
from jaxgames.agents import FirstLegalAgent, RandomAgent
from jaxgames.agents.dots_and_boxes import AlphaBetaAgent
from jaxgames.evaluation import arena
from jaxgames import experiment
from jaxgames.experiment import ResultsDir, check_names, check_positive
from jaxgames.games.dots_and_boxes.search.bitboard import bitboard

PAPER_TABLE = {
    # opponent: (agent wins, opponent wins, timeouts) over 500 games (El Kaddouri et al., section 5.7)
    "alphabeta": (245, 255, 0),
    "mcts": (431, 0, 69),
    "random": (499, 0, 1),
    "first_open_edge": (500, 0, 0),
}


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Attributes:
        num_rows, num_cols: board size in boxes.
        num_games: games per opponent (first player alternating).
        opponents: subset of ``alphabeta, mcts, random, first_open_edge``.
        depth: alpha-beta ply limit (El Kaddouri et al.: 9).
        time_budget: alpha-beta seconds per move.
        move_time_limit: seconds; a slower host move is a timeout (El Kaddouri et al.: 0.2).
        mcts_simulations: simulations per MCTS move.
        seed: PRNG seed.
        full: El Kaddouri et al.'s setting (5x5, 500 games, 150 ms budget, 400 simulations).
        out: results folder.
        overwrite: replace the results of another configuration in ``out``.
    """

    num_rows: int = 3
    num_cols: int = 3
    num_games: int = 100
    opponents: tuple[str, ...] = tuple(PAPER_TABLE)
    depth: int = 9
    time_budget: float = 0.05
    move_time_limit: float = 0.2
    mcts_simulations: int = 200
    seed: int = 0
    full: bool = False
    out: str = "results/dab_agents_table"
    overwrite: bool = False

    def __post_init__(self):
        if self.full:
            for name, value in dict(num_rows=5, num_cols=5, num_games=500, time_budget=0.15, mcts_simulations=400).items():
                if getattr(self, name) == getattr(Config, name):
                    object.__setattr__(self, name, value)
        for o in self.opponents:
            if o not in PAPER_TABLE:
                raise ValueError(f"unknown opponent {o!r}; choose from {tuple(PAPER_TABLE)}")
        check_names("opponents", self.opponents)
        if self.num_games < 1:
            raise ValueError(f"num_games must be >= 1; got {self.num_games}")
        check_positive(depth=self.depth, mcts_simulations=self.mcts_simulations)
        if not 0 < self.time_budget <= self.move_time_limit:
            raise ValueError(f"need 0 < time_budget <= move_time_limit; got {self.time_budget}, {self.move_time_limit}")
        jaxgames.make("dots_and_boxes", num_rows=self.num_rows, num_cols=self.num_cols)


def make_opponent(name: str, config: Config):
    """The opponent agent called ``name``."""
    if name == "alphabeta":
        return AlphaBetaAgent(depth=config.depth, time_budget=config.time_budget, name="alphabeta_opponent")
    if name == "mcts":
        from jaxgames.agents.mcts import MCTSAgent  # imports mctx only when MCTS plays

        return MCTSAgent(num_simulations=config.mcts_simulations)
    if name == "random":
        return RandomAgent()
    return FirstLegalAgent("first_open_edge")


def run(config: Config) -> list[dict]:
    """Plays every match, writes the table into ``config.out``, returns its rows (raises as `jaxgames.experiment.in_results_dir`)."""
    return experiment.in_results_dir(config, _run)


def _run(config: Config, rd: ResultsDir) -> list[dict]:
    env = jaxgames.make("dots_and_boxes", num_rows=config.num_rows, num_cols=config.num_cols)
    bitboard(config.num_rows, config.num_cols)  # build the tables outside the timed moves
    agent = AlphaBetaAgent(depth=config.depth, time_budget=config.time_budget)
    rows = []
    keys = jax.random.split(jax.random.key(config.seed), len(config.opponents))
    for name, key in tqdm(list(zip(config.opponents, keys)), desc="opponents"):
        start = time.perf_counter()
        res = arena.play_match(
            env, agent, make_opponent(name, config), config.num_games, key,
            max_steps=env.num_actions + 1, move_time_limit=config.move_time_limit,
        )
        paper = PAPER_TABLE[name]
        rows.append(dict(
            opponent=name, games=config.num_games, agent_wins=res.wins, opponent_wins=res.losses, draws=res.draws,
            timeouts=res.timeouts, mean_length=float(np.mean(res.length)),
            slowest_move_ms=1000 * float(res.max_move_seconds[:, 0].max()),
            paper_agent_wins=paper[0], paper_opponent_wins=paper[1], paper_timeouts=paper[2],
            seconds=time.perf_counter() - start,
        ))
        tqdm.write(str(rows[-1]))
    rd.write_csv("table.csv", rows)
    lines = [
        f"Alpha-beta (depth {config.depth}, {1000 * config.time_budget:.0f} ms/move) on {config.num_rows}x{config.num_cols}, "
        f"{config.num_games} games per opponent; El Kaddouri, Rys & Gao, 'Multi Agent Reinforcement Learning With Dots And Boxes' "
        "(course report, undated), section 5.7 (500 games, board size not stated) in brackets.",
        "",
        "| opponent | agent wins | opponent wins | draws | timeouts | mean length | slowest move (ms) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['opponent']} | {r['agent_wins']} ({r['paper_agent_wins']}) | {r['opponent_wins']} ({r['paper_opponent_wins']}) "
            f"| {r['draws']} | {r['timeouts']} ({r['paper_timeouts']}) | {r['mean_length']:.1f} | {r['slowest_move_ms']:.0f} |"
        )
    rd.write_text("table.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return rows


def main(argv=None):
    """Entry point: ``python experiments/dab_agents_table.py [key=value ...]``."""
    experiment.main(Config, lambda config, _: run(config), argv, summary=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
