"""The test session's CPU/GPU profile (`tests.conftest`): which one the environment selects, and what each sets.

The selection is a pure function of the environment, the installed jax
plugins and whether a GPU device node exists, so every case is checked
here without a GPU; the running session's own profile is checked against
what it set (on a CPU-only machine: the CPU compile flags, as before).
"""

from __future__ import annotations

import os

import pytest

from tests import conftest
from tests.conftest import select_profile

CUDA = ["xla_cuda12"]


@pytest.mark.parametrize(
    "environ, plugins, device, expected",
    [
        ({}, [], False, "cpu"),  # nothing asked, no plugin: jax runs on the CPU
        ({}, CUDA, False, "cpu"),  # a plugin without a GPU: jax falls back to the CPU
        ({}, [], True, "cpu"),  # a GPU without a plugin: jax cannot use it
        ({}, CUDA, True, "gpu"),  # jax's own choice: the GPU
        ({}, ["xla_rocm7"], True, "gpu"),
        ({}, ["xla_tpu_something", "other"], True, "cpu"),  # not a GPU plugin
        ({"CUDA_VISIBLE_DEVICES": ""}, CUDA, True, "cpu"),  # every GPU hidden
        ({"CUDA_VISIBLE_DEVICES": "-1"}, CUDA, True, "cpu"),
        ({"CUDA_VISIBLE_DEVICES": "0"}, CUDA, True, "gpu"),
        ({"JAX_PLATFORMS": "cpu"}, CUDA, True, "cpu"),  # asked for: the CPU, even with a GPU
        ({"JAX_PLATFORMS": ""}, CUDA, True, "gpu"),  # empty is unset
        ({"JAX_PLATFORMS": " CPU , cuda"}, CUDA, True, "cpu"),  # the first platform is the default backend
        ({"JAX_PLATFORMS": "cuda,cpu"}, [], False, "gpu"),  # asked for: detection is not consulted
        ({"JAX_PLATFORMS": "rocm"}, [], False, "gpu"),
        ({"JAX_PLATFORMS": "gpu"}, [], False, "gpu"),
        ({"JAX_PLATFORMS": "tpu,cpu"}, [], False, "other"),
        ({"JAX_PLATFORM_NAME": "gpu"}, [], False, "gpu"),  # the older variable, when JAX_PLATFORMS is unset
        ({"JAX_PLATFORMS": "cpu", "JAX_PLATFORM_NAME": "gpu"}, [], False, "cpu"),
        ({"JAXGAMES_TEST_PROFILE": "gpu", "JAX_PLATFORMS": "cpu"}, [], False, "gpu"),  # the override wins
        ({"JAXGAMES_TEST_PROFILE": " CPU "}, CUDA, True, "cpu"),
        ({"JAXGAMES_TEST_PROFILE": "other"}, CUDA, True, "other"),
    ],
)
def test_select_profile(environ, plugins, device, expected):
    assert select_profile(environ, plugins=plugins, gpu_device=device) == expected


def test_select_profile_refuses_an_unknown_override():
    with pytest.raises(ValueError, match="JAXGAMES_TEST_PROFILE must be one of .*'tpu'"):
        select_profile({"JAXGAMES_TEST_PROFILE": "tpu"}, plugins=[], gpu_device=False)


def test_gpu_profile_environment_appends_and_keeps_what_the_caller_set():
    assert conftest.gpu_profile_environment({}) == {
        "XLA_FLAGS": "--xla_gpu_deterministic_ops=true",
        "JAX_DEFAULT_MATMUL_PRECISION": "highest",
    }
    assert conftest.gpu_profile_environment({"XLA_FLAGS": "--xla_dump_to=/tmp/x"})["XLA_FLAGS"] == (
        "--xla_dump_to=/tmp/x --xla_gpu_deterministic_ops=true"
    )
    kept = {"XLA_FLAGS": "--xla_gpu_deterministic_ops=false", "JAX_DEFAULT_MATMUL_PRECISION": "tensorfloat32"}
    assert conftest.gpu_profile_environment(kept) == {}
    # The CPU compile flags are never part of the gpu profile.
    assert "xla_cpu" not in conftest.gpu_profile_environment({})["XLA_FLAGS"]


def test_detection_helpers_run_without_a_backend():
    plugins = conftest.installed_jax_plugins()
    assert isinstance(plugins, list) and all(isinstance(name, str) for name in plugins)
    assert isinstance(conftest.gpu_device_present(), bool)


def test_this_session_applied_its_profile():
    """The running session: the profile it recorded, and the flags that profile sets (cpu: as before this change)."""
    profile = os.environ.get("JAXGAMES_TEST_PROFILE")
    assert profile in conftest.PROFILES
    flags = os.environ.get("XLA_FLAGS", "")
    if profile == "cpu":
        assert "xla_gpu_deterministic_ops" not in flags
        defaults = os.environ.get("JAXGAMES_TEST_XLA_DEFAULTS", "").strip().lower() in ("1", "true", "yes")
        if not defaults and conftest.FAST_COMPILE_FLAGS not in flags:  # only if this jaxlib refuses them
            assert not conftest._flags_known(conftest.FAST_COMPILE_FLAGS)
    elif profile == "gpu":
        import jax

        assert "xla_gpu_deterministic_ops" in flags and conftest.FAST_COMPILE_FLAGS not in flags
        assert os.environ.get("JAX_DEFAULT_MATMUL_PRECISION")
        assert jax.config.jax_default_matmul_precision == os.environ["JAX_DEFAULT_MATMUL_PRECISION"]
    else:
        assert conftest.FAST_COMPILE_FLAGS not in flags
