"""A 4-snake round robin of Battlesnake snakes (baselines, the Q-snake, search) through the N-player arena.

Agents: ``random`` (uniform over the four moves the mask allows),
``random_safe`` (uniform over the moves that do not die at once) and
``heuristic`` (flood fill, food when hungry, avoids heads of snakes at least
as long), from `jaxgames.agents.battlesnake`; ``q_snake`` (the shipped
Q-snake network, greedy: `jaxgames.agents.q_snake.QSnakeAgent`);
``search`` (`jaxgames.agents.battlesnake_search.SearchAgent` with the
hand-written evaluation) and ``search_learned`` (the same search with the
Q-snake network's value at the leaves, ``learned_weight=1``), both at
``search_depth`` plies (enumerated by ``maximin``) over the ``search_opponents`` nearest snakes
(best-reply search, or paranoid with ``search_best_reply=false``). The
default plays the three baselines;
``agents=random_safe,heuristic,q_snake,search,search_learned`` plays search
against the baselines and the learned snake. Every mix of 4 snakes drawn
from the agents with at least two different agents
(`jaxgames.evaluation.elo.round_robin_lineups`: 12 mixes for 3 agents) plays ``num_games`` standard 11x11 games, seats
rotated over the games so that no agent keeps a spawn advantage (the engine
shuffles the spawn points too). Placements rank snakes by outcome, then by
how long they lasted (`Battlesnake.placement_tiebreak`); ratings come from
the pairwise outcomes of the placements with 95% bootstrap intervals over
games (`jaxgames.evaluation.elo`). A game still running at ``max_turns`` is
truncated by the rules: its survivors share the first place.

Writes, under ``results/battlesnake_round_robin/``: the tournament tables
and figures of `jaxgames.evaluation.report` (``ratings.csv``, ``ratings.png``,
``win_rate.png``, ``net_wins.csv/png``, ``mean_length.csv/png``,
``elo_history.csv/png``), ``eliminations.csv`` (per agent, the share of its
snakes eliminated by each cause), ``config.json`` and ``README.md``. The
folder follows `jaxgames.experiment.ResultsDir` (a lock against a second
concurrent run, a refusal to mix in a run of other settings unless
``overwrite=true``, atomic writes).

    python experiments/battlesnake_round_robin.py              # 24 games per mix (288 games)
    python experiments/battlesnake_round_robin.py num_games=200
    python experiments/battlesnake_round_robin.py agents=random_safe,heuristic,q_snake,search,search_learned \
        num_games=8 search_opponents=1 search_best_reply=false
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from tqdm import tqdm

import jaxgames
from jaxgames.agents.battlesnake import HeuristicAgent, RandomAgent, RandomSafeAgent
from jaxgames.agents.battlesnake_search import SearchAgent
from jaxgames.agents.q_snake import QSnakeAgent
from jaxgames.evaluation import elo, report
from jaxgames import experiment
from jaxgames.experiment import ResultsDir, check_positive
from jaxgames.games.battlesnake import rules

AGENTS = ("random", "random_safe", "heuristic", "q_snake", "search", "search_learned")
BASELINES = ("random", "random_safe", "heuristic")


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Attributes:
        agents: subset of `AGENTS`, at least two (default `BASELINES`).
        num_games: games per lineup (a multiple of 4 gives every slot every seat equally).
        board_size: board width = height.
        max_turns: turn limit (the game is truncated there).
        search_depth: plies of the ``search`` and ``search_learned`` snakes.
        search_opponents: nearest snakes their searches enumerate (0-3).
        search_best_reply: best-reply search (else paranoid) for both.
        seed: PRNG seed.
        bootstrap_samples: resamples for the rating intervals.
        out: results folder.
        overwrite: replace the results of another configuration in ``out``.
    """

    agents: tuple[str, ...] = BASELINES
    num_games: int = 24
    board_size: int = 11
    max_turns: int = 500
    search_depth: int = 2
    search_opponents: int = 2
    search_best_reply: bool = True
    seed: int = 0
    bootstrap_samples: int = 200
    out: str = "results/battlesnake_round_robin"
    overwrite: bool = False

    def __post_init__(self):
        for a in self.agents:
            if a not in AGENTS:
                raise ValueError(f"unknown agent {a!r}; choose from {AGENTS}")
        if len(set(self.agents)) < 2 or len(set(self.agents)) != len(self.agents):
            raise ValueError(f"agents must be at least two distinct names; got {self.agents}")
        if self.num_games < 1:
            raise ValueError(f"num_games must be >= 1; got {self.num_games}")
        if self.bootstrap_samples < 1:
            raise ValueError(f"bootstrap_samples must be >= 1; got {self.bootstrap_samples}")
        check_positive(max_turns=self.max_turns, search_depth=self.search_depth)
        if not 0 <= self.search_opponents <= 3:
            raise ValueError(f"search_opponents must be in 0..3; got {self.search_opponents}")
        if not isinstance(self.search_best_reply, bool):
            raise TypeError(f"search_best_reply must be a bool; got {self.search_best_reply!r}")
        jaxgames.make("battlesnake", board_size=self.board_size, max_turns=self.max_turns)


def make_agent(name: str, config: Config | None = None):
    """The agent called ``name`` (its ``name`` attribute is ``name``); ``config`` gives the search settings."""
    config = config or Config()
    search = {"depth": config.search_depth, "opponents": config.search_opponents,
              "best_reply": config.search_best_reply, "alphabeta": False}
    build = {
        "random": RandomAgent, "random_safe": RandomSafeAgent, "heuristic": HeuristicAgent,
        "q_snake": lambda: QSnakeAgent(name="q_snake"),
        "search": lambda: SearchAgent(name="search", **search),
        "search_learned": lambda: SearchAgent(name="search_learned", learned_weight=1.0, **search),
    }
    return build[name]()


def elimination_table(t: elo.Tournament) -> list[dict]:
    """Per agent: seats played and the share of its snakes eliminated by each cause (or surviving)."""
    causes = rules.ELIMINATION_CAUSES
    counts = np.zeros((len(t.names), len(causes)))
    for res in t.results:
        c = res.stats["eliminated_cause"]
        np.add.at(counts, (res.agent_of_seat.ravel(), c.ravel()), 1)
    rows = []
    for i, name in enumerate(t.names):
        total = counts[i].sum()
        row = {"agent": name, "seats": int(total)}
        for j, cause in enumerate(causes):
            row[cause or "survived"] = round(counts[i, j] / max(total, 1), 4)
        rows.append(row)
    return rows


def run(config: Config) -> elo.Tournament:
    """Plays the round robin, writes tables, figures and the README into ``config.out``; returns the `elo.Tournament` (raises as `jaxgames.experiment.in_results_dir`)."""
    return experiment.in_results_dir(config, _run)


def _run(config: Config, rd: ResultsDir) -> elo.Tournament:
    env = jaxgames.make("battlesnake", board_size=config.board_size, num_snakes=4, max_turns=config.max_turns, observation="none")
    agents = [make_agent(a, config) for a in config.agents]
    names = [a.name for a in agents]
    lineups = elo.round_robin_lineups(len(agents), env.num_players)
    with tqdm(total=len(lineups), desc="lineups") as bar:
        started = []

        def progress(lineup):
            if started:
                bar.update(1)
            started.append(lineup)
            bar.set_postfix_str("+".join(names[i] for i in lineup))

        t = elo.round_robin(
            env, agents, config.num_games, jax.random.key(config.seed), max_steps=config.max_turns + 1,
            bootstrap_samples=config.bootstrap_samples, progress=progress,
        )
        bar.update(1)
    with rd.staging() as tmp:  # write_tournament writes its own files: each is moved in atomically
        rows = report.write_tournament(t, tmp, games_per_lineup=config.num_games, what="lineup")
    elim = elimination_table(t)
    rd.write_csv("eliminations.csv", elim)
    games = sum(r.num_games for r in t.results)
    truncated = sum(int(r.truncated.sum()) for r in t.results)
    lines = [
        "# Battlesnake: 4-snake round robin",
        "",
        f"{games} standard {config.board_size}x{config.board_size} games: {len(lineups)} lineups of 4 snakes "
        f"(every mix of {', '.join(names)} with at least two different agents), {config.num_games} games each, "
        f"seats rotated. {truncated} games reached the {config.max_turns}-turn limit (survivors share first place).",
        "",
        "Ratings from the pairwise outcomes of the placements (outcome, then elimination turn), "
        f"{int(100 * t.ratings.confidence)}% bootstrap intervals over games "
        "([ratings.csv](ratings.csv), [ratings.png](ratings.png)):",
        "",
        "| agent | Bradley-Terry | interval | Elo | interval | win rate | mean placement | seats |",
        "|---|---:|---|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['agent']} | {r['bradley_terry']:.0f} | [{r['bt_low']:.0f}, {r['bt_high']:.0f}] | {r['elo']:.0f} | "
            f"[{r['elo_low']:.0f}, {r['elo_high']:.0f}] | {r['win_rate']:.3f} | {r['mean_placement']:.2f} | {r['seats']} |"
        )
    lines += ["", "How snakes were eliminated (share of each agent's seats, [eliminations.csv](eliminations.csv)):", ""]
    keys = [k for k in elim[0] if k not in ("agent", "seats")]
    lines.append("| agent | " + " | ".join(keys) + " |")
    lines.append("|---|" + "---:|" * len(keys))
    for r in elim:
        lines.append(f"| {r['agent']} | " + " | ".join(f"{r[k]:.3f}" for k in keys) + " |")
    lines += [
        "",
        "Figures: [win_rate.png](win_rate.png), [net_wins.png](net_wins.png) (row agent's pairwise wins minus losses), "
        "[mean_length.png](mean_length.png), [elo_history.png](elo_history.png). Settings: [config.json](config.json).",
        "",
    ]
    rd.write_text("README.md", "\n".join(lines))
    print("\n".join(lines))
    return t


def main(argv=None):
    """Entry point: ``python experiments/battlesnake_round_robin.py [key=value ...]``."""
    experiment.main(Config, lambda config, _: run(config), argv, summary=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
