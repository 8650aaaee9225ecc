"""The suite's own imports (``from tests.reference ...``) resolve to this repository, whatever else is installed.

Bug: with no ``tests/__init__.py``, ``tests`` was a namespace package, and a
regular package of that name anywhere on ``sys.path`` wins over a namespace
one: with Pgx 2.6 installed (it ships a top-level ``tests`` package), 205 of
732 tests failed to collect under ``python -m pytest -q -n 2``. Here a
throwaway ``tests`` package with a dummy ``reference`` module is put first on
``PYTHONPATH`` and the files that import ``tests.*`` are collected in a
subprocess, in one process and under pytest-xdist.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _importing_files() -> list[str]:
    out = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        if any(line.startswith(("from tests.", "import tests")) for line in path.read_text().splitlines()):
            out.append(str(path.relative_to(ROOT)))
    return out


@pytest.mark.parametrize("workers", [None, "2"])
def test_collection_ignores_an_installed_tests_package(tmp_path, workers):
    files = _importing_files()
    assert "tests/test_battlesnake_differential.py" in files and len(files) >= 8
    shadow = tmp_path / "tests"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("SHADOW = True\n")
    (shadow / "reference.py").write_text("DUMMY = True  # a module, not the package holding the reference oracles\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "JAXGAMES_TEST_XLA_DEFAULTS": "1", "JAXGAMES_TEST_COMPILATION_CACHE": "0", "JAX_PLATFORMS": "cpu"}
    env = {k: v for k, v in env.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    # The shadow really is what a bare `import tests` finds from outside the repository.
    probe = subprocess.run([sys.executable, "-c", "import tests; print(tests.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == str(shadow / "__init__.py"), probe.stderr
    cmd = [sys.executable, "-m", "pytest", "-q", "--co", "-p", "no:cacheprovider", *files]
    if workers:
        cmd[4:4] = ["-n", workers]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    tail = (run.stdout + run.stderr)[-3000:]
    assert run.returncode == 0, tail
    assert "error" not in run.stdout.lower().splitlines()[-1], tail
    assert " collected" in tail, tail
