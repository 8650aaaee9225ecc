"""Every experiment answers ``--help`` with each setting's meaning, type and default (exit 0)."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest

from jaxgames import experiment

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.py"))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"experiment_{name}", ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_setting_is_described(name):
    rows = experiment.describe(_load(name).Config)
    assert rows and [r["key"] for r in rows if not r["help"].strip()] == []


def test_help_exits_0_and_lists_every_setting():
    """One interpreter for all of them: ``main(["--help"])`` raises SystemExit(0) before any work."""
    code = (
        "import importlib.util, sys, pathlib\n"
        f"root = pathlib.Path({str(ROOT)!r})\n"
        "for name in sys.argv[1:]:\n"
        "    spec = importlib.util.spec_from_file_location('m_' + name, root / 'experiments' / (name + '.py'))\n"
        "    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m)\n"
        "    try:\n"
        "        m.main(['--help'])\n"
        "    except SystemExit as e:\n"
        "        print('EXIT', name, e.code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *EXPERIMENTS], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for name in EXPERIMENTS:
        assert f"EXIT {name} 0" in out.stdout, (name, out.stdout[-2000:])
        for row in experiment.describe(_load(name).Config):
            assert f"  {row['key']}: " in out.stdout, (name, row["key"])
