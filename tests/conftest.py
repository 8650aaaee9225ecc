"""Session setup: a CPU or GPU profile of XLA settings and one compilation cache, shared by the session's workers.

The suite is compile-bound: most of its time is XLA compiling small
programs that then run for milliseconds. Two settings cut that time; what
the tests assert is unchanged by either.

* **Cheaper compilation** (`FAST_COMPILE_FLAGS`: LLVM's optimization level
  0 and its expensive passes off, the classic emitters instead of the
  fusion emitters). It changes how fast the compiled code runs, not what
  it computes (up to float rounding, which every float comparison here
  allows for: bitwise comparisons are between two results compiled alike
  in one process). If this jaxlib does not know one of the flags (XLA
  aborts on unknown flags), a probe at session start notices and the
  session keeps XLA's defaults. The whole suite (``python -m pytest -q -n 2``,
  one run each, back to back on a 2-core Intel Xeon, 2026-11-30): 1354 s
  with the last two flags alone, 867 s with level 0 too. Level 0 once made
  the AlphaZero update's gradients NaN on the tiny Onitama config:
  ``jnp.max``'s gradient found no cell equal to the max, XLA having
  computed its input twice with different rounding.
  `jaxgames.networks.dots_and_boxes.global_pool` now sends the max's
  gradient to its first arg-max.
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

**Profiles** (`select_profile`, from the environment, without starting a
backend): the compile flags above are for XLA's CPU backend and apply only
in the *cpu* profile (``JAX_PLATFORMS`` unset with no usable GPU plugin, or
naming ``cpu`` first). In the *gpu* profile (``JAX_PLATFORMS`` naming
``cuda``/``rocm``/``gpu`` first, or unset with a CUDA/ROCm jax plugin
installed and a GPU device node present) the bitwise-equality tests need
GPU results that repeat: `GPU_DETERMINISM_FLAGS` (deterministic GPU ops)
and ``JAX_DEFAULT_MATMUL_PRECISION=highest`` (recent GPUs multiply float32
in TF32 by default), for the session and its subprocesses; values the
caller already set are kept. Any other first platform (TPU) gets neither.
``JAXGAMES_TEST_PROFILE=cpu|gpu|other`` overrides the detection (the
session sets it, so its workers and subprocesses keep its profile).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
from typing import Iterable, Mapping

import pytest

FAST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
                      "--xla_cpu_use_fusion_emitters=false")
GPU_DETERMINISM_FLAGS = "--xla_gpu_deterministic_ops=true"
GPU_MATMUL_PRECISION = "highest"
PROFILES = ("cpu", "gpu", "other")
_GPU_PLATFORMS = ("cuda", "rocm", "gpu")
_GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")  # NVIDIA driver; AMD ROCm
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


def select_profile(environ: Mapping[str, str], *, plugins: Iterable[str], gpu_device: bool) -> str:
    """The test profile, ``"cpu"``, ``"gpu"`` or ``"other"``, from the environment alone (starts no backend).

    Args:
        environ: the environment (``os.environ``).
        plugins: names of the installed jax PJRT plugins (`installed_jax_plugins`);
            a name containing ``cuda`` or ``rocm`` is a GPU plugin.
        gpu_device: a GPU device node exists (`gpu_device_present`).

    Returns:
        ``JAXGAMES_TEST_PROFILE`` if set; else the first platform of
        ``JAX_PLATFORMS`` (or the older ``JAX_PLATFORM_NAME``) decides:
        ``cpu`` -> cpu, ``cuda``/``rocm``/``gpu`` -> gpu, another -> other;
        unset, jax's own choice: gpu when a GPU plugin is installed, a
        device node exists and ``CUDA_VISIBLE_DEVICES`` hides no GPU by
        being empty or ``-1``, else cpu.

    Raises:
        ValueError: ``JAXGAMES_TEST_PROFILE`` not one of `PROFILES`.
    """
    forced = environ.get("JAXGAMES_TEST_PROFILE", "").strip().lower()
    if forced:
        if forced not in PROFILES:
            raise ValueError(f"JAXGAMES_TEST_PROFILE must be one of {PROFILES}; got {forced!r}")
        return forced
    requested = environ.get("JAX_PLATFORMS", "").strip() or environ.get("JAX_PLATFORM_NAME", "").strip()
    platforms = [p.strip().lower() for p in requested.split(",") if p.strip()]
    if platforms:  # jax's default backend is the first platform listed
        return "cpu" if platforms[0] == "cpu" else "gpu" if platforms[0] in _GPU_PLATFORMS else "other"
    gpu_plugin = any("cuda" in name.lower() or "rocm" in name.lower() for name in plugins)
    hidden = environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1")
    return "gpu" if gpu_plugin and gpu_device and not hidden else "cpu"


def installed_jax_plugins() -> list[str]:
    """Names of the installed jax PJRT plugins, found as jax finds them (namespace ``jax_plugins``, entry points); none imported."""
    names = []
    spec = importlib.util.find_spec("jax_plugins")
    if spec is not None and spec.submodule_search_locations:
        names += [name for _, name, _ in pkgutil.iter_modules(list(spec.submodule_search_locations))]
    names += [entry.name for entry in importlib.metadata.entry_points(group="jax_plugins")]
    return names


def gpu_device_present() -> bool:
    """Whether a GPU device node exists (a GPU plugin without one makes jax fall back to the CPU)."""
    return any(os.path.exists(node) for node in _GPU_DEVICE_NODES)


def gpu_profile_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the gpu profile sets: `GPU_DETERMINISM_FLAGS` appended to ``XLA_FLAGS`` and
    ``JAX_DEFAULT_MATMUL_PRECISION`` (each left alone where the caller already set it)."""
    updates = {}
    flags = environ.get("XLA_FLAGS", "")
    if "xla_gpu_deterministic_ops" not in flags:
        updates["XLA_FLAGS"] = f"{flags} {GPU_DETERMINISM_FLAGS}".strip()
    if not environ.get("JAX_DEFAULT_MATMUL_PRECISION"):
        updates["JAX_DEFAULT_MATMUL_PRECISION"] = GPU_MATMUL_PRECISION
    return updates


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker: it inherited the environment the controller set below
        directory = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    else:
        try:
            profile = select_profile(os.environ, plugins=installed_jax_plugins(), gpu_device=gpu_device_present())
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
        os.environ["JAXGAMES_TEST_PROFILE"] = profile  # workers and subprocesses: the same profile, no re-detection
        if profile == "cpu":
            if not _switch("JAXGAMES_TEST_XLA_DEFAULTS", False) and _flags_known(FAST_COMPILE_FLAGS):
                os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAGS}".strip()
        elif profile == "gpu":
            os.environ.update(gpu_profile_environment(os.environ))
        directory = None
        if _switch("JAXGAMES_TEST_COMPILATION_CACHE", True):
            directory = tempfile.mkdtemp(prefix="jaxgames-test-xla-cache-")
            config._jaxgames_cache_dir = directory
            os.environ["JAX_COMPILATION_CACHE_DIR"] = directory
            os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(CACHE_MIN_COMPILE_SECONDS)
            os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    if os.environ.get("JAXGAMES_TEST_PROFILE") == "gpu":  # in-process too, in case jax was imported before
        import jax

        jax.config.update("jax_default_matmul_precision", os.environ["JAX_DEFAULT_MATMUL_PRECISION"])
    if directory:  # also set in-process, in case jax was imported before the environment was
        import jax

        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECONDS)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


# Modules whose tests share an expensive module-scoped fixture (the 8-device subprocess, DDPG's full run, the one
# interpreter of every benchmark's command line). A module-scoped fixture is built once per xdist worker, so under
# `-n 2` one worker runs each of these modules whole. (xdist's `xdist_group` marks with `--dist loadgroup` do not
# here: that mode renames the items' node ids, which pytest 9 ignores, and the group's tests still split.)
WHOLE_MODULES = ("tests/test_parallel.py", "tests/test_ddpg.py", "tests/test_benchmarks_cli.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``-n`` (xdist's default ``load`` mode): load balancing with `WHOLE_MODULES` as single work units."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WholeModules(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return module if module in WHOLE_MODULES else nodeid

    return WholeModules(config, log)


def pytest_unconfigure(config):
    directory = getattr(config, "_jaxgames_cache_dir", None)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)


def pytest_report_header(config):
    flags = os.environ.get("XLA_FLAGS", "")
    return f"jaxgames test profile: {os.environ.get('JAXGAMES_TEST_PROFILE', '?')} (XLA_FLAGS={flags or 'unset'})"
