"""Importing and using jaxgames' plotting leaves the user's matplotlib backend alone (no pyplot).

Run in a fresh interpreter, since pytest's own process may already have
imported pyplot or chosen a backend.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_plots_and_render_keep_the_backend_and_never_load_pyplot(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        import matplotlib
        matplotlib.use("svg")  # the user's choice
        import numpy as np
        import jax
        from jaxgames.evaluation import plots
        from jaxgames.games.battlesnake import render
        from jaxgames.games.battlesnake.env import Battlesnake
        assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
        out = plots.heatmap(np.array([[0, 1], [-1, 0]]), ["a", "b"], {str(tmp_path / "h.png")!r})
        assert out.stat().st_size > 0 and open(out, "rb").read(4) == b"\\x89PNG"
        board = Battlesnake(board_size=7, num_snakes=2, observation="none").init(jax.random.key(0)).board
        render.draw(board).figure.savefig({str(tmp_path / "b.png")!r})
        assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
        assert "matplotlib.pyplot" not in sys.modules
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
