"""Speed of exact Nash equilibrium enumeration, beside Gambit's exact ``enummixed`` in the same run.

`jaxgames.analysis.equilibria.extreme_equilibria` enumerates the extreme
equilibria of a bimatrix game exactly (integer pivoting on per-player
normalised payoffs). The anchor is Gambit's exact rational ``enummixed``
(``pygambit``, installed with the ``test`` extra), handed the same payoffs
mapped to ``[0, 1]`` (its exact mode loses every equilibrium once payoffs
span 2**31; see ``tests/test_equilibria.py``). Both report the same set of
extreme equilibria; the table checks it on every game.

Games: the all-zero ``n x n`` game (every profile is an equilibrium; the old
tolerance-based code took 227 s at 6x6) and random standard-normal games
(the old code took 159 s at 10x10).

Run ``python benchmarks/equilibria.py`` (about a minute on 2 CPU cores with the
default sizes); ``random_sizes=6,8,10`` and ``gambit_max=8`` (larger games are
not handed to Gambit: its exact mode took 431 s on a random 10x10 game); ``--help``
lists every setting with its type, default and meaning. The sizes given are
enumerated whatever their cost bound (``max_vertices=None``).

Then `jaxgames.analysis.equilibria.lemke_howson` (one equilibrium, exact) on
random games too large to enumerate (``lemke_howson_sizes``, default 20 and
50), from missing label 0: seconds, support sizes, and the largest regret of
its profile (a float64 best-response check: 0 up to rounding). No anchor.
"""

from __future__ import annotations

import dataclasses
import platform
import time
from fractions import Fraction

import numpy as np

from jaxgames import checks, experiment
from jaxgames.analysis import equilibria as eq


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings (``key=value`` overrides).

    Attributes:
        zero_sizes: sizes ``n`` of all-zero ``n x n`` games.
        random_sizes: sizes ``n`` of random ``n x n`` games.
        seed: numpy seed of the random games.
        gambit_max: largest ``n`` handed to Gambit (the anchor).
        lemke_howson_sizes: sizes ``n`` of random ``n x n`` games solved by Lemke-Howson.
    """

    zero_sizes: tuple[int, ...] = (4, 6)
    random_sizes: tuple[int, ...] = (4, 6, 8, 10)
    seed: int = 0
    gambit_max: int = 8
    lemke_howson_sizes: tuple[int, ...] = (20, 50)

    def __post_init__(self):
        for name in ("zero_sizes", "random_sizes", "lemke_howson_sizes"):
            for n in getattr(self, name):
                checks.positive_int(name, n)
        checks.non_negative_int("seed", self.seed)
        checks.non_negative_int("gambit_max", self.gambit_max)


def _unit(table: np.ndarray) -> list[list[Fraction]]:
    fr = [[Fraction(repr(float(v))) for v in row] for row in table]  # shortest decimal, as ours reads floats
    lo = min(min(r) for r in fr)
    hi = max(max(r) for r in fr)
    span = hi - lo or Fraction(1)
    return [[(v - lo) / span for v in row] for row in fr]


def _gambit(a: np.ndarray, b: np.ndarray):
    import pygambit as gbt

    game = gbt.Game.from_arrays(_unit(a), _unit(b))
    result = gbt.nash.enummixed_solve(game, rational=True)
    out = set()
    for prof in result.equilibria:
        p1, p2 = game.players
        out.add((tuple(Fraction(prof[s]) for s in p1.strategies), tuple(Fraction(prof[s]) for s in p2.strategies)))
    return out


def _ours(payoffs: np.ndarray):
    return {(tuple(x), tuple(y)) for x, y in eq.extreme_equilibria(payoffs, max_vertices=None)}


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def run(cfg: Config, argv=None) -> None:
    """The benchmark: prints one row per game (writes no files)."""
    del argv
    try:
        import pygambit  # noqa: F401

        have_gambit = True
    except ImportError:
        have_gambit = False
    print(f"# exact equilibrium enumeration; {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"# anchor: pygambit enummixed (exact) {'installed' if have_gambit else 'NOT installed: anchor skipped'}")
    rng = np.random.default_rng(cfg.seed)
    games = [(f"zero {n}x{n}", np.zeros((2, n, n))) for n in cfg.zero_sizes]
    games += [(f"random {n}x{n}", rng.normal(size=(2, n, n))) for n in cfg.random_sizes]
    print(f"{'game':>14} {'extreme eq.':>11} {'ours s':>9} {'gambit s':>9} {'gambit/ours':>11} {'same set':>8}")
    for label, payoffs in games:
        mine, t_ours = _timed(_ours, payoffs)
        n = payoffs.shape[1]
        if have_gambit and n <= cfg.gambit_max:
            theirs, t_gbt = _timed(_gambit, payoffs[0], payoffs[1])
            ratio, same, tg = f"{t_gbt / t_ours:11.1f}", str(mine == theirs), f"{t_gbt:9.3f}"
        else:
            ratio, same, tg = f"{'-':>11}", "-", f"{'-':>9}"
        print(f"{label:>14} {len(mine):>11} {t_ours:9.3f} {tg} {ratio} {same:>8}")
    if cfg.lemke_howson_sizes:
        print(f"\n{'game':>14} {'LH s':>9} {'support':>9} {'max regret':>11}")
    for n in cfg.lemke_howson_sizes:
        a, b = rng.normal(size=(2, n, n))
        (p,), t_lh = _timed(lambda: eq.nash_equilibria(np.stack([a, b]), method="lemke_howson"))
        regret = max((a @ p.y).max() - p.x @ a @ p.y, (p.x @ b).max() - p.x @ b @ p.y)
        support = f"{int((p.x > 0).sum())}x{int((p.y > 0).sum())}"
        print(f"{f'random {n}x{n}':>14} {t_lh:9.3f} {support:>9} {regret:11.2e}")


def main(argv=None) -> None:
    """Entry point: ``python benchmarks/equilibria.py [key=value ...]`` (``--help`` lists the settings)."""
    experiment.main(Config, run, argv, prog="benchmarks/equilibria.py", summary=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
