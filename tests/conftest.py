"""Session setup: cheaper XLA CPU compilation and one compilation cache, shared by the session's workers.

The suite is compile-bound: most of its time is XLA compiling small
programs that then run for milliseconds. Two settings cut that time; what
the tests assert is unchanged by either.

* **Cheaper compilation** (`FAST_COMPILE_FLAGS`: LLVM's expensive passes
  off, the classic emitters instead of the fusion emitters). It changes
  how fast the compiled code runs, not what it computes (up to float
  rounding, which every float comparison here allows for: bitwise
  comparisons are between two results compiled alike in one process). If
  this jaxlib does not know one of the flags (XLA aborts on unknown
  flags), a probe at session start notices and the session keeps XLA's
  defaults. Not used: ``--xla_backend_optimization_level=0``, which is
  faster still (``python -m pytest -q -n 2 tests/test_q_snake.py``: 106 s
  at XLA's defaults, 81 s with these two flags, 49 s with that one too,
  one run each on this 2-core machine), but under which the AlphaZero update's
  gradients come out NaN at the second step of the tiny Onitama config
  where XLA's defaults (and these flags) give finite ones with the same
  loss (2026-11-22, jax 0.10.2): tests under it would not test what users
  run.
* **Persistent compilation cache**, keyed on the lowered program, the
  compile options, the XLA flags and the jax/jaxlib versions. Many tests
  compile a program another test (often in the other xdist worker) has
  compiled already: a learner whose settings change only its pit compiles
  the same self-play. A hit runs the executable a miss would have built.
  (``python -m pytest -q tests/test_q_snake.py``, one process, XLA's
  default flags: 325 s without the cache, 279 s with it, one run each.)
  The cache is a directory made for this session, so a run never reads
  executables from an earlier one, and removed at its end.

Subprocesses the tests start inherit both. ``JAXGAMES_TEST_XLA_DEFAULTS=1``
runs the suite with XLA's default flags; ``JAXGAMES_TEST_COMPILATION_CACHE=0``
without the cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

FAST_COMPILE_FLAGS = "--xla_llvm_disable_expensive_passes=true --xla_cpu_use_fusion_emitters=false"
CACHE_MIN_COMPILE_SECONDS = 0.2  # compiles quicker than this are not written to the cache


def _switch(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes")


def _flags_known(flags: str) -> bool:
    """Whether this jaxlib compiles with ``flags`` (a subprocess: XLA aborts the process on an unknown flag)."""
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip(), "JAX_PLATFORMS": "cpu"}
    probe = "import jax, jax.numpy as jnp; jax.jit(lambda x: x + 1)(jnp.ones(2)).block_until_ready()"
    try:
        return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=120).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker: it inherited the environment the controller set below
        directory = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    else:
        if not _switch("JAXGAMES_TEST_XLA_DEFAULTS", False) and _flags_known(FAST_COMPILE_FLAGS):
            os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAGS}".strip()
        directory = None
        if _switch("JAXGAMES_TEST_COMPILATION_CACHE", True):
            directory = tempfile.mkdtemp(prefix="jaxgames-test-xla-cache-")
            config._jaxgames_cache_dir = directory
            os.environ["JAX_COMPILATION_CACHE_DIR"] = directory
            os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(CACHE_MIN_COMPILE_SECONDS)
            os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    if directory:  # also set in-process, in case jax was imported before the environment was
        import jax

        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECONDS)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_unconfigure(config):
    directory = getattr(config, "_jaxgames_cache_dir", None)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
