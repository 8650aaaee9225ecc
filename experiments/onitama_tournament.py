"""Dasgupta & Chong's Elo round-robin tournament on Onitama (section 6.3, figures 6.10-6.14).

Source: Dasgupta & Chong, "Mastering the game of Onitama with Reinforcement
Learning" (NUS USP group report, 2021), section 6.3.

**Entrants.** The report's 9 models: the 8 DDPG actor variants
(`jaxgames.networks.ddpg.VARIANTS`, trained by ``experiments/onitama_ddpg.py``,
loaded from ``<ddpg>/actors/<variant>_seed<ddpg_seed>/``; missing actors stop
the run before anything is written, naming the command that trains them, or
play without them with ``ddpg=none``) and the random AI; plus the entrants
named in ``agents``: batched minimax of depth 1-3 (`MinimaxAgent`, one compiled
loop per pairing; host ``alphabeta1``-``alphabeta4`` play the same values, far
slower) and AlphaZero-lite (trained weights only, played in the report's 40
actions through `jaxgames.agents.alphazero.PaperSpaceAlphaZero`; skipped with a
note, also in the README, when there are none).

**Games and ratings.** The report's rules: 200 turns without a winner is a
draw, cards dealt at random from ``deck`` (default the report's five). Each
pairing plays ``rounds`` games in one `jaxgames.evaluation.arena.play` batch,
seats alternating. Elo: start 1000, K = 32 (the report's equations 6.1-6.2),
draws 0.5, games rated in the order of a real round-robin series (the report
gives none; `jaxgames.evaluation.elo.round_robin`); Bradley-Terry (order-free)
with bootstrap intervals beside it.

**Outputs** (``out``, a `jaxgames.experiment.ResultsDir`): ``config.json``, the
tables and figures of `jaxgames.evaluation.report.write_tournament` (figures
6.10-6.14; ``net_wins`` reads ROW against COLUMN, the transpose of the
report's), ``outcomes.csv`` and ``README.md``. Each pairing's games are cached
(``pairing_*.npz``, keyed by everything that decides them), so a rerun after a
kill plays only the missing ones. Timings and results: ``benchmarks/README.md``.

    python experiments/onitama_tournament.py ddpg=results/onitama_ddpg      # default: 20 round robins
    python experiments/onitama_tournament.py ddpg=results/onitama_ddpg rounds=2500 agents=random \\
        out=results/onitama_tournament_2500                                 # the report's 90,000 games
    python experiments/onitama_tournament.py ddpg=none agents=random,minimax1,minimax2,minimax3
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import time
import zlib

import jax
import numpy as np

import jaxgames
from jaxgames import weights_io
from jaxgames.evaluation import arena, elo, report
from jaxgames import experiment
from jaxgames.experiment import NEUTRAL_FIELDS, ResultsDir, check_names, check_positive, config_key, command_line
from jaxgames.games.onitama import cards
from jaxgames.networks.ddpg import VARIANTS

AGENTS = ("random", "minimax1", "minimax2", "minimax3", "alphabeta1", "alphabeta2", "alphabeta3", "alphabeta4",
          "alphazero")
"""The non-DDPG entrants ``agents`` may name."""

NEUTRAL = NEUTRAL_FIELDS + ("chunk_size",)
"""Settings a resumed run may change (``chunk_size`` splits a batch without changing its games: `arena.play`)."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (every field is a ``key=value`` override).

    Attributes:
        ddpg: the DDPG results folder (``experiments/onitama_ddpg.py``'s ``out``);
            ``none`` plays without DDPG entrants.
        ddpg_seed: the random seed of the DDPG training run whose actors play (``actors/<variant>_seed<k>``).
        variants: the DDPG variants to enter (default all 8 of the report).
        agents: the other entrants, from `AGENTS` (``random`` is the report's 9th model).
        alphazero: AlphaZero-lite weights folder; empty: the package's shipped weights.
        alphazero_simulations: its MCTS simulations per move.
        rounds: round robins (each pair plays this many games; Dasgupta & Chong: 2,500).
        max_turns: the draw limit (Dasgupta & Chong: 200 turns).
        deck: the cards dealt from (default Dasgupta & Chong's five).
        k: Elo K factor (Dasgupta & Chong: 32).
        bootstrap_samples: resamples for the rating intervals (each replays every game's Elo: costly for long runs).
        chunk_size: play at most this many games of a pairing per compiled call (0: the whole pairing at once).
        seed: PRNG seed.
        out: results folder.
        overwrite: replace the results of another configuration in ``out``.
        progress: show a progress bar.
    """

    ddpg: str = "results/onitama_ddpg"
    ddpg_seed: int = 0
    variants: tuple[str, ...] = VARIANTS
    agents: tuple[str, ...] = ("random", "minimax1", "minimax2", "alphazero")
    alphazero: str = ""
    alphazero_simulations: int = 32
    rounds: int = 20
    max_turns: int = 200
    deck: tuple[str, ...] = cards.PAPER_CARDS
    k: float = 32.0
    bootstrap_samples: int = 50
    chunk_size: int = 0
    seed: int = 0
    out: str = "results/onitama_tournament"
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self):
        for name in ("rounds", "alphazero_simulations", "bootstrap_samples", "max_turns"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1; got {v!r}")
        for name in ("ddpg_seed", "chunk_size", "seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an int >= 0; got {v!r}")
        check_positive(k=self.k)
        check_names("agents", self.agents, AGENTS, at_least=0)
        if self.use_ddpg:
            check_names("variants", self.variants, VARIANTS, at_least=0)
        entrants = (len(self.variants) if self.use_ddpg else 0) + len(self.agents)
        if entrants < 2:
            raise ValueError(f"a tournament needs at least two entrants; got variants={self.variants if self.use_ddpg else ()} "
                             f"and agents={self.agents}")
        jaxgames.make("onitama", action_space="paper", deck=self.deck, max_turns=self.max_turns)  # bad cards: ValueError

    @property
    def use_ddpg(self) -> bool:
        """False when ``ddpg`` is ``none`` (or empty)."""
        return self.ddpg.strip().lower() not in ("", "none")


# ----------------------------------------------------------------------------- entrants
def _checksum(path: pathlib.Path) -> str:
    return f"{zlib.crc32(path.read_bytes()):08x}"


def make_entrants(config: Config, env) -> tuple[list, dict, list[str]]:
    """``(agents, identity by name, notes)``: the entrants in table order, what defines each (for the cache), skip notes.

    Order: the DDPG variants in ``variants`` order, then ``agents`` in order.

    Raises:
        FileNotFoundError: a DDPG actor is missing (the message gives the command that trains them).
    """
    from jaxgames.agents import onitama as oni

    agents, identity, notes = [], {}, []
    if config.use_ddpg:
        from jaxgames.agents.ddpg import load_agent

        folder = pathlib.Path(config.ddpg)
        missing = [v for v in config.variants
                   if not (folder / "actors" / f"{v}_seed{config.ddpg_seed}" / weights_io.PARAMS_FILE).is_file()]
        if missing:
            raise FileNotFoundError(
                f"no trained DDPG actor for {', '.join(missing)} in {folder / 'actors'} "
                f"(expected <variant>_seed{config.ddpg_seed}/{weights_io.PARAMS_FILE}). Train them first with\n"
                f"    python experiments/onitama_ddpg.py out={folder}\n"
                f"(about 6 minutes on 2 cores), or play without them: ddpg=none")
        for v in config.variants:
            actor = folder / "actors" / f"{v}_seed{config.ddpg_seed}"
            agent = load_agent(actor, name=v)
            meta = json.loads((actor / weights_io.METADATA_FILE).read_text())
            if meta.get("deck") not in (None, list(config.deck)) or meta.get("max_turns") not in (None, config.max_turns):
                notes.append(f"{v}: trained with other game settings than this tournament's")
            agents.append(agent)
            identity[v] = ("ddpg", v, _checksum(actor / weights_io.PARAMS_FILE), "greedy, legal actions only")
    for name in config.agents:
        if name == "alphazero":
            agent, why = _alphazero(config)
            if agent is None:
                note = f"AlphaZero-lite skipped: {why}"
                print(note)
                notes.append(note)
                continue
            agents.append(agent)
            identity[agent.name] = ("alphazero", why, config.alphazero_simulations)
            continue
        agents.append(oni.AGENTS[name]())
        identity[name] = (name,)
    return agents, identity, notes


def _alphazero(config: Config):
    """``(agent, weights checksum)`` or ``(None, why not)``."""
    import warnings

    from jaxgames.agents import alphazero as az

    folder = pathlib.Path(config.alphazero) if config.alphazero else az.WEIGHTS_DIRS["onitama"]
    params_path, meta_path = folder / weights_io.PARAMS_FILE, folder / weights_io.METADATA_FILE
    if not params_path.is_file() or not meta_path.is_file():
        return None, (f"no weights in {folder} (train and ship them with experiments/alphazero_onitama.py, "
                      f"or give alphazero=<folder>)")
    meta = json.loads(meta_path.read_text())
    if meta.get("game") != "onitama":
        return None, f"the weights in {folder} are for {meta.get('game')!r}, not onitama"
    if not meta.get("trained", False):
        return None, f"the weights in {folder} are an untrained placeholder"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inner = az.AlphaZeroAgent.from_weights(folder, game="onitama", num_simulations=config.alphazero_simulations,
                                               name="alphazero")
    cenv = jaxgames.make("onitama", action_space="canonical", deck=config.deck, max_turns=config.max_turns)
    return az.PaperSpaceAlphaZero(inner, cenv), _checksum(params_path)


# ----------------------------------------------------------------------------- results
_FIELDS = ("agent_of_seat", "returns", "placement", "length", "finished", "truncated", "timed_out", "max_move_seconds")


def pair_key(seed: int, name_a: str, name_b: str) -> jax.Array:
    """The PRNG key of the pairing ``a`` vs ``b``: depends on the random seed and the two names only (not on who else plays)."""
    return jax.random.fold_in(jax.random.key(seed), zlib.crc32(f"{name_a}|{name_b}".encode()) & 0x7FFFFFFF)


def to_global(result: arena.ArenaResult, names, pair: tuple[int, int]) -> arena.ArenaResult:
    """A pairing's `arena.ArenaResult` (agents 0, 1) re-indexed to the whole table (``names``, agents ``pair``)."""
    return result._replace(names=tuple(names), agent_of_seat=np.asarray(pair, np.int32)[result.agent_of_seat])


def summarise(names, lineups, results, num_rounds: int, *, k: float = elo.K_FACTOR,
              bootstrap_samples: int = 50) -> elo.Tournament:
    """The `elo.Tournament` of finished pairings (module docstring: the Elo order).

    Args:
        names: the ``K`` entrants.
        lineups: ``L`` pairs ``(i, j)``, ``i < j``, in the order the Elo updates visit them within a round.
        results: one `arena.ArenaResult` per lineup, indexed to the whole table (`to_global`),
            ``num_rounds`` games each; game ``r`` is that pairing's game of round robin ``r``.
        num_rounds: ``R``.
        k: Elo K factor.
        bootstrap_samples: resamples for the intervals.

    Returns:
        `elo.Tournament` with ``elo`` ``[R + 1, K]`` (row ``r``: after ``r`` round robins).
    """
    K, L = len(names), len(lineups)
    all_pairs = []
    wins = np.zeros((K, K))
    length_sum, together, timeouts = np.zeros((K, K)), np.zeros((K, K)), np.zeros((K, K), np.int64)
    seats_held, seats_won = np.zeros(K), np.zeros(K)
    for li, res in enumerate(results):
        if res.num_games != num_rounds:
            raise ValueError(f"pairing {lineups[li]} has {res.num_games} games, not {num_rounds}")
        pairs = elo.pairwise_outcomes(res)
        wins += elo.wins_matrix(pairs, K)
        pairs[:, 0] = pairs[:, 0] * L + li  # game r of lineup li is the (r * L + li)-th game rated
        all_pairs.append(pairs)
        i, j = lineups[li]
        for a, b in ((i, j), (j, i)):
            length_sum[a, b] += res.length.sum()
            together[a, b] += res.num_games
            timeouts[a, b] += int(res.timed_out.sum())
        np.add.at(seats_held, res.agent_of_seat.ravel(), 1)
        np.add.at(seats_won, res.agent_of_seat.ravel(), res.won().ravel())
    pairs = np.concatenate(all_pairs)
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    if len(pairs) != num_rounds * L:  # two different entrants in every game: one comparison each
        raise RuntimeError(f"{len(pairs)} comparisons from {num_rounds * L} games")
    history = elo.game_elo(K, pairs, k=k)  # one comparison per game: Dasgupta & Chong's update, one game at a time
    elo_rounds = history[::L]
    ratings = elo.bootstrap_ratings(pairs, names, num_samples=bootstrap_samples, k=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_length = length_sum / together
    net = np.rint(wins - wins.T).astype(np.int64)
    return elo.Tournament(tuple(names), elo_rounds, ratings.bradley_terry, wins, net, mean_length,
                          seats_won / np.maximum(seats_held, 1), timeouts, ratings, tuple(lineups), tuple(results))


def outcome_rows(t: elo.Tournament) -> list[dict]:
    """Per entrant: games, wins, draws, losses and win rate (Dasgupta & Chong, figure 6.12), from the pairwise wins."""
    rows, drawn = [], _draws(t)
    for i, name in enumerate(t.names):
        won = np.rint(t.wins[i] - 0.5 * drawn[i]).sum()
        draws = drawn[i].sum()
        games = (t.wins[i] + t.wins[:, i]).sum()
        rows.append(dict(agent=name, games=int(games), wins=int(won), draws=int(draws),
                         losses=int(games - won - draws), win_rate=round(float(won / max(games, 1)), 4)))
    return rows


def _draws(t: elo.Tournament) -> np.ndarray:
    """int ``[K, K]``: drawn games of each pair."""
    d = np.zeros((len(t.names),) * 2)
    for res, (i, j) in zip(t.results, t.lineups):
        n = int((~res.won().any(axis=1)).sum())
        d[i, j] = d[j, i] = n
    return d


def _markdown_matrix(m, names, fmt) -> list[str]:
    lines = ["| row vs column | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for name, row in zip(names, m):
        lines.append(f"| {name} | " + " | ".join("" if not np.isfinite(x) else fmt.format(x) for x in row) + " |")
    return lines


# ----------------------------------------------------------------------------- run
def run(config: Config, argv=()) -> elo.Tournament:
    """Plays (or resumes) the tournament, writes every output into ``config.out``; returns the `elo.Tournament`.

    Raises:
        FileNotFoundError: missing DDPG actors (before anything is written).
        jaxgames.experiment.ResultsDirLocked: another run writes into ``config.out``.
        jaxgames.experiment.ConfigMismatch: ``config.out`` holds another configuration's results.
    """
    env = jaxgames.make("onitama", action_space="paper", deck=config.deck, max_turns=config.max_turns)
    agents, identity, notes = make_entrants(config, env)  # raises before the folder is touched
    if len(agents) < 2:
        raise ValueError(f"fewer than two entrants are left ({[a.name for a in agents]}); {'; '.join(notes)}")
    with ResultsDir(config.out, config, overwrite=config.overwrite, neutral=NEUTRAL) as rd:
        return _run(config, rd, env, agents, identity, notes, argv)


def _play_pairings(config, rd, env, agents, identity, lineups):
    names = [a.name for a in agents]
    game = dict(deck=list(config.deck), max_turns=config.max_turns, action_space="paper")
    results, played, seconds = [], 0, 0.0
    bar = None
    if config.progress:
        from tqdm import tqdm

        bar = tqdm(total=len(lineups), desc="pairings", unit="pair")
    for li, (i, j) in enumerate(lineups):
        a, b = names[i], names[j]
        file = f"pairing_{i:02d}-{j:02d}_{a}_vs_{b}.npz"
        key = config_key(identity[a], identity[b], config.rounds, config.seed, game)
        cached = rd.load_npz(file, key=key)
        if cached is None:
            start = time.time()
            res = arena.play(env, (agents[i], agents[j]), config.rounds, pair_key(config.seed, a, b),
                             max_steps=config.max_turns + 1, chunk_size=config.chunk_size or None)
            seconds += time.time() - start
            played += 1
            rd.save_npz(file, {f: getattr(res, f) for f in _FIELDS}
                        | {f"stats_{s}": v for s, v in res.stats.items()}, key=key)
        else:
            stats = {f[len("stats_"):]: v for f, v in cached.items() if f.startswith("stats_")}
            res = arena.ArenaResult(names=(a, b), stats=stats, **{f: cached[f] for f in _FIELDS})
        results.append(to_global(res, names, (i, j)))
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"{a} vs {b}")
    if bar is not None:
        bar.close()
    return results, played, seconds


def _run(config, rd, env, agents, identity, notes, argv):
    start = time.time()
    names = [a.name for a in agents]
    lineups = [(i, j) for i in range(len(agents)) for j in range(i + 1, len(agents))]
    results, played, play_seconds = _play_pairings(config, rd, env, agents, identity, lineups)
    t = summarise(names, lineups, results, config.rounds, k=config.k, bootstrap_samples=config.bootstrap_samples)
    with rd.staging() as tmp:  # these writers write their own files: each is moved in atomically
        rows = report.write_tournament(t, tmp, games_per_lineup=config.rounds)
    outcomes = outcome_rows(t)
    rd.write_csv("outcomes.csv", outcomes)
    total = time.time() - start
    games = len(lineups) * config.rounds
    draws = sum(r["draws"] for r in outcomes) // 2
    command = command_line("experiments/onitama_tournament.py", argv)
    by_name = {r["agent"]: r for r in outcomes}
    lines = [
        "# Onitama Elo round-robin tournament", "",
        "Source: Dasgupta & Chong, \"Mastering the game of Onitama with Reinforcement Learning\" "
        "(NUS USP group report, 2021), section 6.3, figures 6.10-6.14.", "",
        f"Command: `{command.strip()}`  ",
        f"{config.rounds} round robins of {len(names)} entrants = {games} games ({len(lineups)} pairings); "
        f"{played} pairings played by this call in {play_seconds:.0f} s, {len(lineups) - played} read from the cache "
        f"(`pairing_*.npz`); {total:.0f} s in all. {draws} draws ({config.max_turns}-turn limit).", "",
        "Entrants: " + ", ".join(names) + ".",
    ]
    if config.use_ddpg:
        lines.append(f"DDPG actors from `{config.ddpg}/actors/<variant>_seed{config.ddpg_seed}/`, greedy over the legal actions.")
    lines += [f"*Note*: {n}." for n in notes]
    lines += [
        "", "Elo: start 1000, K = " + f"{config.k:g}" + ", one game at a time, round robin by round robin, pairings in "
        "table order within a round (`elo_history.png`, figure 6.10). Bradley-Terry: order-free maximum likelihood "
        f"on the same games; intervals: {int(100 * t.ratings.confidence)}% bootstrap over games "
        f"({config.bootstrap_samples} resamples). Win rate: games won / games played (figure 6.12). "
        f"Sequential Elo depends on the order of the games (each game moves a rating by up to K = {config.k:g}), so "
        "the final Elo of this one sequence may lie outside the interval of the final Elo over resampled sequences "
        "(it does when an entrant's last games went unusually well or badly); compare entrants by Bradley-Terry, "
        "which is order-free.", "",
        "| entrant | final Elo | Elo interval | Bradley-Terry | BT interval | wins | draws | losses | win rate |",
        "|---|---:|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: -r["elo"]):
        o = by_name[r["agent"]]
        lines.append(f"| {r['agent']} | {r['elo']:.0f} | [{r['elo_low']:.0f}, {r['elo_high']:.0f}] | "
                     f"{r['bradley_terry']:.0f} | [{r['bt_low']:.0f}, {r['bt_high']:.0f}] | {o['wins']} | "
                     f"{o['draws']} | {o['losses']} | {o['win_rate']:.3f} |")
    lines += ["", f"Net wins of the ROW entrant against the COLUMN entrant (`net_wins.csv`, figure 6.13; "
              f"Dasgupta & Chong's figure reads from the column's side; range +-{config.rounds}):", ""]
    lines += _markdown_matrix(t.net_wins, names, "{:+.0f}")
    lines += ["", "Mean game length in turns (`mean_length.csv`, figure 6.14):", ""]
    lines += _markdown_matrix(t.mean_length, names, "{:.1f}")
    lines += ["", "Files: `ratings.csv`, `outcomes.csv`, `elo_history.csv`, `net_wins.csv`, `mean_length.csv`, "
              "`elo_history.png`, `ratings.png`, `win_rate.png`, `net_wins.png`, `mean_length.png`, `config.json`, "
              "`pairing_*.npz` (the cached games of each pairing).", ""]
    rd.write_text("README.md", "\n".join(lines))
    print("\n".join(lines))
    return t


def main(argv=None):
    """Entry point: ``python experiments/onitama_tournament.py [key=value ...]``."""
    try:
        experiment.main(Config, run, argv, summary=__doc__.splitlines()[0])
    except FileNotFoundError as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
