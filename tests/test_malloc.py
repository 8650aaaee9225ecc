"""`jaxgames.malloc.retain_freed_memory`: a bool, no crash, and the process still allocates and frees.

In a fresh interpreter: the setting is process-wide and not undone, so it must not reach the test session.
"""

from __future__ import annotations

import pathlib
import platform
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_retain_freed_memory_returns_a_bool_in_a_subprocess():
    script = textwrap.dedent(
        """
        import numpy as np
        from jaxgames.malloc import retain_freed_memory
        ok = retain_freed_memory()
        assert isinstance(ok, bool), type(ok)
        for _ in range(3):  # blocks above glibc's mmap threshold, allocated and freed again
            a = np.ones(64 << 20, np.uint8)
            assert int(a[::4096].sum()) == (64 << 20) // 4096
            del a
        print(ok)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() in ("True", "False"), done.stdout
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert done.stdout.strip() == "True"
