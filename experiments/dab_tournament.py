"""Elo round-robin tournament of the Dots-and-Boxes agents (after Dasgupta & Chong, section 6.3).

Source of the tournament design: Dasgupta & Chong, "Mastering the game of
Onitama with Reinforcement Learning" (NUS USP group report, 2021), section 6.3.

Every pair of agents plays ``num_rounds`` games (first player alternating);
Elo ratings (start 1000, K = 32) are updated game by game, round by round,
and a Bradley-Terry maximum-likelihood rating is fitted to the same games
for comparison (`jaxgames.evaluation.elo`). Writes, under
``results/dab_tournament/``:

* ``ratings.csv``: final Elo and Bradley-Terry ratings with 95% bootstrap
  intervals over games, win rate and mean placement per agent
  (`jaxgames.evaluation.report`);
* ``elo_history.csv`` and ``elo_history.png`` (Dasgupta & Chong, figure 6.10);
* ``ratings.png`` (final Elo and Bradley-Terry, figure 6.11) and
  ``win_rate.png`` (figure 6.12);
* ``net_wins.csv`` / ``net_wins.png``: row agent's wins minus losses against
  the column agent (figure 6.13; the report reads it column-wise);
* ``mean_length.csv`` / ``mean_length.png``: mean game length in moves;
* ``config.json``.

The folder follows `jaxgames.experiment.ResultsDir` (a lock against a second
concurrent run, a refusal to mix in a run of other settings unless
``overwrite=true``, atomic writes).

Agents: random, first open edge, greedy, pure MCTS, alpha-beta and (where
the solver fits in memory) the exact solver as a perfect player. Run
``python experiments/dab_tournament.py`` (small default: 3x3, 10 rounds,
a few minutes on 2 CPU cores) or ``full=true`` (100 rounds, 200 MCTS
simulations, 100 ms alpha-beta moves).
"""

from __future__ import annotations

import dataclasses

import jax
from tqdm import tqdm

import jaxgames
from jaxgames.agents import FirstLegalAgent, RandomAgent
from jaxgames.agents.dots_and_boxes import AlphaBetaAgent, GreedyAgent, PerfectAgent
from jaxgames.evaluation import elo, report
from jaxgames import experiment
from jaxgames.experiment import ResultsDir, check_names, check_positive
from jaxgames.games.dots_and_boxes.search import solver

AGENTS = ("random", "first_open_edge", "greedy", "mcts", "alphabeta", "perfect")


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Attributes:
        num_rows, num_cols: board size in boxes.
        agents: subset of `AGENTS` (``perfect`` needs a board the solver fits).
        num_rounds: round robins (each pair plays this many games).
        mcts_simulations: simulations per MCTS move.
        time_budget: alpha-beta seconds per move.
        k: Elo K factor (Dasgupta & Chong: 32).
        seed: PRNG seed.
        full: 100 rounds, 200 simulations, 100 ms alpha-beta moves.
        out: results folder.
        overwrite: replace the results of another configuration in ``out``.
    """

    num_rows: int = 3
    num_cols: int = 3
    agents: tuple[str, ...] = AGENTS
    num_rounds: int = 10
    mcts_simulations: int = 64
    time_budget: float = 0.03
    k: float = 32.0
    seed: int = 0
    full: bool = False
    out: str = "results/dab_tournament"
    overwrite: bool = False

    def __post_init__(self):
        if self.full:
            for name, value in dict(num_rounds=100, mcts_simulations=200, time_budget=0.1).items():
                if getattr(self, name) == getattr(Config, name):
                    object.__setattr__(self, name, value)
        for a in self.agents:
            if a not in AGENTS:
                raise ValueError(f"unknown agent {a!r}; choose from {AGENTS}")
        if len(set(self.agents)) < 2:
            raise ValueError("a tournament needs at least two different agents")
        check_names("agents", self.agents, at_least=2)
        if self.num_rounds < 1:
            raise ValueError(f"num_rounds must be >= 1; got {self.num_rounds}")
        check_positive(mcts_simulations=self.mcts_simulations, time_budget=self.time_budget, k=self.k)
        jaxgames.make("dots_and_boxes", num_rows=self.num_rows, num_cols=self.num_cols)
        if "perfect" in self.agents:
            solver.check_size(self.num_rows, self.num_cols)


def _mcts_agent(num_simulations: int):
    from jaxgames.agents.mcts import MCTSAgent  # imports mctx only when MCTS plays

    return MCTSAgent(num_simulations=num_simulations)


def make_agent(name: str, config: Config):
    """The agent called ``name``."""
    return {
        "random": lambda: RandomAgent(),
        "first_open_edge": lambda: FirstLegalAgent("first_open_edge"),
        "greedy": lambda: GreedyAgent(),
        "mcts": lambda: _mcts_agent(config.mcts_simulations),
        "alphabeta": lambda: AlphaBetaAgent(time_budget=config.time_budget),
        "perfect": lambda: PerfectAgent(config.num_rows, config.num_cols),
    }[name]()


def run(config: Config) -> elo.Tournament:
    """Plays the tournament, writes tables and plots into ``config.out``, returns the `elo.Tournament` (raises as `jaxgames.experiment.in_results_dir`)."""
    return experiment.in_results_dir(config, _run)


def _run(config: Config, rd: ResultsDir) -> elo.Tournament:
    env = jaxgames.make("dots_and_boxes", num_rows=config.num_rows, num_cols=config.num_cols)
    agents = [make_agent(a, config) for a in config.agents]
    names = [a.name for a in agents]
    num_pairs = len(agents) * (len(agents) - 1) // 2
    with tqdm(total=num_pairs, desc="pairs") as bar:

        started = []

        def progress(lineup):  # called before each pair: count the previous one as done
            if started:
                bar.update(1)
            started.append(lineup)
            bar.set_postfix_str(" vs ".join(names[i] for i in lineup))

        t = elo.round_robin(
            env, agents, config.num_rounds, jax.random.key(config.seed), k=config.k,
            max_steps=env.num_actions + 1, progress=progress,
        )
        bar.update(1)
    with rd.staging() as tmp:  # write_tournament writes its own files: each is moved in atomically
        report.write_tournament(t, tmp, games_per_lineup=config.num_rounds)
    lo, hi = t.ratings.bradley_terry_ci.T
    for i, n in enumerate(names):
        print(f"{n:>16}: Elo {t.elo[-1, i]:7.1f}  BT {t.bradley_terry[i]:7.1f} [{lo[i]:.0f}, {hi[i]:.0f}]  win rate {t.win_rate[i]:.3f}")
    return t


def main(argv=None):
    """Entry point: ``python experiments/dab_tournament.py [key=value ...]``."""
    experiment.main(Config, lambda config, _: run(config), argv, summary=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
