"""README.md as a user meets it: every Python block runs as pasted, every command line parses.

* Each ```python block runs alone in a fresh interpreter (a subprocess whose
  working directory is an empty temporary folder, so nothing is written into
  the repository), two at a time; a failure shows the block's README line,
  its first lines and the end of its stderr. Bash blocks are not run.
* Each command line the README shows (bash blocks and inline code) parses,
  without running: an experiment's or benchmark's ``key=value`` settings go
  through its ``Config`` (`jaxgames.experiment.parse_config`, after importing
  the script by path), ``--help`` prints its page; the Battlesnake server's
  ``--help`` exits 0 and names every option and choice the command uses.
* The test command of the quick start is the one CI runs (``.ci/run``), the
  relative links point at files that exist, and no "seed" stands for a source
  document (inside the project "seed" means a random seed only), neither in
  the README nor in the package's, experiments' and benchmarks' sources.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from jaxgames.experiment import help_text, parse_config

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK_TIMEOUT_S = 300
PARALLEL_BLOCKS = 2  # the CI machine has 2 cores


def _fenced_blocks(language: str) -> list[tuple[int, str]]:
    """``(first code line number, code)`` of every fenced block of ``language`` in README.md."""
    text = README.read_text()
    pattern = re.compile(rf"^```{language}[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in pattern.finditer(text)]


def _run_block(line: int, code: str, folder: pathlib.Path) -> str | None:
    """Runs ``code`` in a fresh interpreter inside ``folder``; None if it succeeds, else a report."""
    folder.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)  # this checkout's jaxgames
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"README.md line {line}: timed out after {BLOCK_TIMEOUT_S} s"
    if proc.returncode == 0:
        return None
    head = "\n".join("    " + s for s in code.splitlines()[:4])
    return (f"README.md line {line}: exit status {proc.returncode}\n{head}\n    ...\n"
            f"stderr (end):\n{proc.stderr[-3000:]}")


def test_readme_has_python_blocks_with_their_own_imports():
    blocks = _fenced_blocks("python")
    assert len(blocks) >= 8, len(blocks)
    for line, code in blocks:
        first = next(s for s in code.splitlines() if s.strip() and not s.lstrip().startswith("#"))
        assert first.startswith(("import ", "from ")), f"README.md line {line}: a block starts with its imports; got {first!r}"


def test_every_python_block_runs_as_pasted(tmp_path):
    blocks = _fenced_blocks("python")
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_BLOCKS) as pool:
        reports = list(pool.map(lambda b: _run_block(b[1][0], b[1][1], tmp_path / f"block{b[0]}"), enumerate(blocks)))
    failures = [r for r in reports if r is not None]
    assert not failures, f"{len(failures)} of {len(blocks)} README blocks fail:\n\n" + "\n\n".join(failures)


# ----------------------------------------------------------------------------- command lines
def _inline_commands() -> list[str]:
    """Inline code spans that are a Python command line."""
    text = re.sub(r"^```.*?^```", "", README.read_text(), flags=re.S | re.M)
    return [m.group(1) for m in re.finditer(r"`(python3? [^`]+)`", text)]


def _bash_commands() -> list[str]:
    """Command lines of the bash blocks, continuation lines joined, comments dropped."""
    out = []
    for _, code in _fenced_blocks("bash"):
        for line in code.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def readme_commands() -> list[list[str]]:
    """Every ``python ...`` command the README shows, as argv lists (``&&``-chains split)."""
    commands = []
    for line in _bash_commands() + _inline_commands():
        for part in re.split(r"&&|;", line):
            argv = shlex.split(part)
            if argv and argv[0] in ("python", "python3"):
                commands.append(argv)
    return commands


def _load_script(path: pathlib.Path):
    """Imports ``experiments/<name>.py`` or ``benchmarks/<name>.py`` by path (registered in ``sys.modules``,
    as dataclasses resolve annotations through it; benchmarks under a prefixed name, since
    ``benchmarks/q_snake.py`` and ``experiments/q_snake.py`` share a stem)."""
    name = path.stem if path.parent.name == "experiments" else f"{path.parent.name}_{path.stem}"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _check_script(argv: list[str]) -> None:
    path = ROOT / argv[1]
    assert path.is_file(), f"{' '.join(argv)}: no file {argv[1]}"
    module = _load_script(path)
    args = argv[2:]
    config_cls = getattr(module, "Config", None)
    if config_cls is None:  # a script without a Config (benchmarks/matrix_learners.py): shown without settings
        assert not args, f"{' '.join(argv)}: {argv[1]} has no Config to check its settings against"
        return
    if any(a in ("-h", "--help", "help") for a in args):
        assert help_text(config_cls, argv[1]).strip()
        if path.parent.name == "experiments":  # every experiment's main is `jaxgames.experiment.main`: prints, exits 0
            with pytest.raises(SystemExit) as stop:
                module.main(args)
            assert stop.value.code == 0, f"{' '.join(argv)}: exit status {stop.value.code}"
        return
    parse = getattr(module, "parse", None)  # a benchmark's own key=value parser (benchmarks/battlesnake.py)
    config = parse(args) if callable(parse) else parse_config(config_cls, args)
    assert isinstance(config, config_cls)


def _check_server(argv: list[str], page: str) -> None:
    args = argv[3:]
    for i, a in enumerate(args):
        if a.startswith("--"):
            option = a.split("=", 1)[0]
            assert option in page, f"{' '.join(argv)}: --help does not know {option}"
            value = a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else "")
            if option in ("--agent", "--http"):
                choices = re.search(rf"{option} \{{([^}}]*)\}}", page)
                assert choices and value in choices.group(1).split(","), f"{' '.join(argv)}: {value!r} is not a choice of {option}"


def test_readme_shows_commands():
    commands = readme_commands()
    scripts = {c[1] for c in commands if len(c) > 1 and c[1].endswith(".py")}
    assert "experiments/matrix_dynamics.py" in scripts and len(scripts) >= 6, scripts
    assert any(c[1:3] == ["-m", "jaxgames.serve.battlesnake"] for c in commands)


def test_every_readme_command_line_parses():
    server_page = None
    checked = 0
    for argv in readme_commands():
        if argv[1:3] == ["-m", "pytest"] or argv[1:3] == ["-m", "venv"]:
            continue  # the test command itself (CI runs it: test_quick_start_test_command_is_what_ci_runs)
        if argv[1:3] == ["-m", "jaxgames.serve.battlesnake"]:
            if server_page is None:
                proc = subprocess.run([sys.executable, "-m", "jaxgames.serve.battlesnake", "--help"], cwd=ROOT,
                                      capture_output=True, text=True, timeout=120)
                assert proc.returncode == 0, proc.stderr[-2000:]
                server_page = proc.stdout
            _check_server(argv, server_page)
        else:
            assert argv[1].startswith(("experiments/", "benchmarks/")), f"unchecked command: {' '.join(argv)}"
            try:
                _check_script(argv)
            except (ValueError, TypeError) as err:
                pytest.fail(f"README command does not parse: {' '.join(argv)}\n{type(err).__name__}: {err}")
        checked += 1
    assert checked >= 10, checked


def test_override_examples_use_their_own_folders():
    """A command with other settings than the main job's default must not reuse its folder (ConfigMismatch)."""
    default = _load_script(ROOT / "experiments" / "matrix_dynamics.py").Config().out
    for argv in readme_commands():
        if argv[1:2] == ["experiments/matrix_dynamics.py"]:
            settings = [a for a in argv[2:] if a not in ("--help", "-h")]
            if settings:
                assert any(a.startswith("out=") and a != f"out={default}" for a in settings), " ".join(argv)


# ----------------------------------------------------------------------------- the page itself
def test_quick_start_test_command_is_what_ci_runs():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line]
    assert ci and all(line.strip() in README.read_text() for line in ci)


def test_relative_links_point_at_files():
    text = README.read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [link for link in links if not link.startswith(("http://", "https://")) and not (ROOT / link).exists()]
    assert links and not missing, missing


def test_no_seed_stands_for_a_document():
    text = README.read_text()
    bad = re.findall(r"[^\n]*(?:\bseed\s+\d{3}|\bseeds?/|\bthe seed\b|\bseed's)[^\n]*", text, flags=re.I)
    assert not bad, bad


# "seed" standing for the source paper in code and docs: ``action_space="seed"``, ``SEED_CARDS``-style constants,
# ``SeedSpace...`` classes, ``seed_action``-style helpers, "seed space", "the seed", "seed's" (the paper's: "paper").
_SEED_AS_PAPER = re.compile(
    r"""action_space\s*(?:=|==|!=)\s*["']seed["']|\bSEED_[A-Z]|\bSeed[A-Z]\w*"""
    r"""|\bseed_(?:action|space|observation|claim|env|deck|layout|table)|\bseed[ -]space|\bseed's|\bthe seed\b"""
    r"""|\bseed (?:paper|report|id)\b""")


def test_no_seed_stands_for_the_paper_in_the_sources():
    bad = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
           for folder in ("jaxgames", "experiments", "benchmarks")
           for path in sorted((ROOT / folder).rglob("*")) if path.suffix in (".py", ".md") and path.is_file()
           for i, line in enumerate(path.read_text().splitlines(), 1) if _SEED_AS_PAPER.search(line)]
    assert not bad, bad
    # The pattern catches the old names and leaves PRNG seeds alone.
    assert all(_SEED_AS_PAPER.search(s) for s in ('make("onitama", action_space="seed")', "cards.SEED_CARDS",
                                                   "SeedSpaceAlphaZero(agent, env)", "seed_action(4, 0, 0)",
                                                   "in the seed space", "the seed's table"))
    assert not any(_SEED_AS_PAPER.search(s) for s in ("jax.random.key(seed)", 'checks.integer("seed", seed)',
                                                      "_NO_KEY_SEED = 0", "seed: int = 0", "actors/<variant>_seed<k>"))
