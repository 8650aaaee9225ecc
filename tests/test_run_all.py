"""``benchmarks/run_all.py`` without running a benchmark: reading the stated figures from README text, the drift
and its flag, the budget shares, the exit status, and that every registry entry finds its figure in the READMEs
as they are now (a README edit that breaks an entry's pattern fails here, not silently in a run)."""

from __future__ import annotations

import importlib.util
import math
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load():
    name = "benchmarks_run_all"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


ra = _load()


def _figure(**kw):
    base = dict(name="x", task="t", work="w", metric="x anchor", source="R.md", pattern=r"", size="s")
    base.update(kw)
    return ra.Figure(**base)


# ----------------------------------------------------------------------------- reading the stated figure
def test_numbers_with_thousands_separators():
    assert ra._number("1,013,043") == 1013043.0
    assert ra._number("16.4") == 16.4
    assert ra._number("817") == 817.0


def test_stated_figure_reads_the_group_of_its_pattern():
    text = "Battlesnake: 2.27 M game steps/s: 156.7x our plain-Python reference, 13.4x the official Go engine"
    fig = _figure(pattern=ra._prose(rf"{ra._NUM}x our plain-Python reference"))
    assert ra.stated_figure(fig, {"R.md": text}) == 156.7


def test_prose_patterns_match_across_a_line_break():
    text = "measured 4.1 ms at 16 simulations, 7.7 ms at 32, 13.6 ms at 64 (the\nagent's default)."
    fig = _figure(pattern=ra._prose(rf"{ra._NUM} ms at 64 \(the agent's default\)"))
    assert ra.stated_figure(fig, {"R.md": text}) == 13.6


def test_a_table_row_with_thousands_separators():
    text = ("| method | batch | steps/s | x reference |\n|---|---:|---:|---:|\n"
            "| jax_rules | 1,024 | 914,527 | 14.8 | 3.3 |\n| jax_rules | 16,384 | 1,013,043 | 16.4 | 3.9 |\n")
    fig = _figure(pattern=rf"^\| jax_rules \| 16,384 \| [\d,]+ \| {ra._NUM} \|")
    assert ra.stated_figure(fig, {"R.md": text}) == 16.4


def test_combine_two_rows_into_a_ratio():
    text = ("| kernel (none) | 256 | 64,000 | 184,448 | | 10.2 |\n| kernel (rotated views) | 256 | 43,873 |\n"
            "| self-play (network) | 256 | 800 | 2,141 | | 27.0 |\n")
    fig = _figure(pattern=rf"^\| kernel \(none\) \| 256 \| {ra._NUM} \|(?s:.*?)^\| self-play \(network\) \| 256 \| {ra._NUM} \|",
                  combine=ra._ratio_of_two)
    assert ra.stated_figure(fig, {"R.md": text}) == pytest.approx(800 / 64000)  # 0.0125


def test_a_group_may_hold_a_list_of_numbers():
    text = "| 1 | 41.4, 18.8, 46.6 | 46.6 |\n| 2 | 16.1, 1,037.8 | 40.1 |\n"
    fig = _figure(pattern=r"^\| 1 \| ([\d., ]+) \|(?s:.*?)^\| 2 \| ([\d., ]+) \|", combine=ra._median)
    assert ra.stated_figure(fig, {"R.md": text}) == 41.4  # the median of 16.1, 18.8, 41.4, 46.6, 1037.8


def test_percent_figure_is_a_fraction():
    text = "| az_dab | 384 | 12,345 | 1.234 G | 10.00 | 123.4 | 45.6% | 3.0 |\n"
    fig = _figure(pattern=rf"^\| az_dab \| [\d,]+ \| [\d,]+ \| [\d.]+ G \| [\d.]+ \| [\d.]+ \| {ra._NUM}% \|",
                  combine=ra._percent)
    assert ra.stated_figure(fig, {"R.md": text}) == pytest.approx(0.456)


def test_no_match_or_no_file_is_none():
    fig = _figure(pattern=rf"{ra._NUM}x our plain-Python reference")
    assert ra.stated_figure(fig, {"R.md": "nothing stated here"}) is None
    assert ra.stated_figure(fig, {}) is None


def test_editing_the_text_changes_the_stated_figure():
    fig = _figure(pattern=ra._prose(rf"\bBoltzmann {ra._NUM}x, epsilon-greedy"))
    assert ra.stated_figure(fig, {"R.md": "Boltzmann 817x, epsilon-greedy 794x"}) == 817.0
    assert ra.stated_figure(fig, {"R.md": "Boltzmann 700x, epsilon-greedy 794x"}) == 700.0


def test_a_range_reads_as_its_two_ends():
    fig = _figure(pattern=ra._prose(rf"\bBoltzmann {ra._SPAN}x, epsilon-greedy"))
    assert ra.stated_figure(fig, {"R.md": "Boltzmann 564-897x, epsilon-greedy"}) == (564.0, 897.0)
    assert ra.stated_figure(fig, {"R.md": "Boltzmann 1,100x, epsilon-greedy"}) == 1100.0


# ----------------------------------------------------------------------------- drift and flag
@pytest.mark.parametrize("measured, stated, expected, flagged", [
    (18.0, 20.0, -0.10, False),   # 18 / 20 - 1
    (22.0, 20.0, 0.10, False),
    (16.0, 20.0, -0.20, True),
    (24.0, 20.0, 0.20, True),
    (0.5, 0.64, -0.21875, True),  # 0.5 / 0.64 - 1
    (500.0, 433.0, 67 / 433, True),  # +15.47%
    (495.0, 433.0, 62 / 433, False),  # +14.32%
])
def test_drift_is_measured_over_stated_minus_one(measured, stated, expected, flagged):
    d, text, flag = ra.drift(measured, stated)
    assert d == pytest.approx(expected)
    assert flag is flagged
    assert text == f"{100 * expected:+.1f}%"


def test_drift_tolerance_is_a_setting():
    assert ra.drift(24.0, 20.0, tolerance=0.25)[2] is False
    assert ra.drift(24.0, 20.0, tolerance=0.1)[2] is True


@pytest.mark.parametrize("measured, stated, same_size, text", [
    (None, 20.0, True, "n/a (not measured)"),
    (18.0, None, True, "n/a (not stated)"),
    (10.0, 20.0, False, "n/a (different size)"),
])
def test_no_drift_and_no_flag_without_a_comparison(measured, stated, same_size, text):
    assert ra.drift(measured, stated, same_size) == (None, text, False)


def test_rows_compare_the_ratio_or_the_absolute_value():
    texts = {"R.md": "the kernel is 20x our reference; one move takes 10 ms at 64"}
    ratio_fig = _figure(name="r", pattern=rf"{ra._NUM}x our reference")
    abs_fig = _figure(name="a", pattern=rf"{ra._NUM} ms at 64", kind="absolute", metric="ms")
    small_fig = _figure(name="s", pattern=rf"{ra._NUM}x our reference", same_size=False)
    measured = {
        "r": dict(ours=1200.0, anchor=50.0, ours_unit="steps/s", anchor_unit="steps/s"),  # ratio 24 -> +20%
        "a": dict(ours=11.0, ours_unit="ms"),                                              # 11 ms -> +10%
        "s": dict(ours=1200.0, anchor=50.0),
    }
    rows = {r["entry"]: r for r in ra.rows_for([ratio_fig, abs_fig, small_fig], measured, texts)}
    assert rows["r"]["ratio"] == 24.0 and rows["r"]["compared"] == 24.0 and rows["r"]["stated"] == 20.0
    assert rows["r"]["drift"] == pytest.approx(0.2) and rows["r"]["flag"] == "FLAG"
    assert rows["a"]["compared"] == 11.0 and rows["a"]["drift"] == pytest.approx(0.1) and rows["a"]["flag"] == ""
    assert rows["s"]["drift"] is None and rows["s"]["drift_text"] == "n/a (different size)" and rows["s"]["flag"] == ""


def test_a_measured_ratio_wins_over_ours_over_anchor():
    # speed-ups measured as times: ours 0.01 s, anchor 2.5 s, ratio anchor / ours = 250
    fig = _figure(name="t", pattern=rf"about {ra._NUM}x faster")
    rows = ra.rows_for([fig], {"t": dict(ours=0.01, anchor=2.5, ratio=250.0)}, {"R.md": "about 250x faster"})
    assert rows[0]["compared"] == 250.0 and rows[0]["drift"] == pytest.approx(0.0)


def test_unmeasured_rows_keep_their_status_and_are_not_flagged():
    fig = _figure(name="t", pattern=rf"{ra._NUM}x")
    rows = ra.rows_for([fig], {"t": {"status": "timed out after 40 s"}}, {"R.md": "3x"})
    assert rows[0]["status"] == "timed out after 40 s" and rows[0]["flag"] == "" and rows[0]["compared"] is None
    assert "timed out after 40 s" in ra.table(rows, [fig])


def test_exit_status_under_check():
    flagged, clean = [{"flag": "FLAG"}, {"flag": ""}], [{"flag": ""}, {"flag": ""}]
    assert ra.exit_status(flagged, check=True) == 1
    assert ra.exit_status(flagged, check=False) == 0
    assert ra.exit_status(clean, check=True) == 0


def test_table_shows_every_column():
    fig = ra.FIGURES[0]
    rows = ra.rows_for([fig], {fig.name: dict(ours=2.56e7, anchor=3.2e4, ours_unit="learner-iterations/s",
                                              anchor_unit="iterations/s", anchor_label="OpenSpiel")}, ra.read_texts())
    text = ra.table(rows)
    header = text.splitlines()[0]
    for column in ("entry", "work", "size", "anchor (same run)", "ours", "ratio / value", "stated", "drift", "flag"):
        assert column in header
    assert "| 800x |" in text and "25.6 M learner-iterations/s" in text  # 2.56e7 / 3.2e4 = 800


@pytest.mark.parametrize("measured, expected, text, flagged", [
    (15.0, 0.0, "within", False),                 # inside 12-20
    (12.0, 0.0, "within", False),                 # an end
    (24.0, 0.2, "+20.0%", True),                  # 24 / 20 - 1: from the nearer end
    (10.5, -0.125, "-12.5%", False),              # 10.5 / 12 - 1
    (9.0, -0.25, "-25.0%", True),
])
def test_drift_from_a_range_is_from_its_nearer_end(measured, expected, text, flagged):
    d, shown, flag = ra.drift(measured, (12.0, 20.0))
    assert d == pytest.approx(expected) and shown == text and flag is flagged


_RECORDS = f"""
{ra.RECORDS_HEADING}

Some prose.

| entry | stated (CPU model not recorded) | Fast CPU (family 1, model 2) | Slow CPU (family 3, model 4) |
|---|---:|---:|---:|
| `r` | 20x | 1,100x; 786x | - |
| `p` | 12.8% | 15.5%; 15.3% | 23.0% |
| `a` | 13.6 ms | 11.1 ms; 16.5 ms | |

## The next section
| `r` | 1x | 1x | 1x |
"""


def test_recorded_runs_read_each_cpu_models_column():
    got = ra.recorded_runs(_RECORDS)
    assert got["r"] == {"stated (CPU model not recorded)": [20.0], "Fast CPU (family 1, model 2)": [1100.0, 786.0]}
    assert got["p"]["Fast CPU (family 1, model 2)"] == pytest.approx([0.155, 0.153])
    assert got["p"]["Slow CPU (family 3, model 4)"] == pytest.approx([0.23])
    assert got["a"]["Fast CPU (family 1, model 2)"] == [11.1, 16.5] and "Slow CPU (family 3, model 4)" not in got["a"]
    assert ra.recorded_runs("no such table") == {}
    with pytest.raises(ValueError, match="'r'.*about 3"):
        ra.recorded_runs(_RECORDS.replace("1,100x; 786x", "about 3"))


def test_the_flag_follows_this_cpu_models_runs_where_it_has_any():
    texts = {"R.md": "the kernel is 20x our reference", ra.BENCH_README: _RECORDS}
    fig = _figure(name="r", pattern=rf"{ra._NUM}x our reference")
    measured = {"r": dict(ratio=900.0)}  # 45x the stated 20x, inside the fast CPU's 786-1,100x
    fast = ra.rows_for([fig], measured, texts, cpu="Fast CPU (family 1, model 2)")[0]
    assert fast["recorded"] == [786.0, 1100.0] and fast["recorded_runs"] == 2
    assert fast["drift"] == pytest.approx(44.0) and fast["record_drift"] == 0.0 and fast["flag"] == ""
    slow = ra.rows_for([fig], measured, texts, cpu="Slow CPU (family 3, model 4)")[0]  # no runs: the stated figure
    assert slow["recorded"] is None and slow["record_drift_text"] == "n/a (no record)" and slow["flag"] == "FLAG"
    low = ra.rows_for([fig], {"r": dict(ratio=600.0)}, texts, cpu="Fast CPU (family 1, model 2)")[0]
    assert low["record_drift"] == pytest.approx(600 / 786 - 1) and low["flag"] == "FLAG"
    assert "786x - 1,100x (2 runs)" in ra.table([fast], [fig])


# ----------------------------------------------------------------------------- the budget
def test_task_limit_is_a_share_of_what_is_left():
    assert ra.task_limit([100.0, 200.0, 300.0], 600.0) == pytest.approx(100.0)   # 600 x 100 / 600
    assert ra.task_limit([50.0, 150.0], 300.0) == pytest.approx(75.0)            # 300 x 50 / 200
    assert ra.task_limit([30.0], 90.0) == pytest.approx(90.0)                    # the last task gets what is left
    assert ra.task_limit([30.0, 30.0], -5.0) == 0.0


def test_estimates_fit_the_default_budget():
    assert sum(t.estimate_s for t in ra.TASKS) < 60 * ra.Config().budget_minutes


# ----------------------------------------------------------------------------- the registry and the READMEs
def test_registry_names_are_unique_and_every_figure_has_a_task():
    names = [f.name for f in ra.FIGURES]
    assert len(names) == len(set(names))
    tasks = {t.name for t in ra.TASKS}
    assert {f.task for f in ra.FIGURES} == tasks
    for f in ra.FIGURES:
        assert f.kind in ("ratio", "absolute")
        re.compile(f.pattern)


def test_only_selects_tasks_and_the_tasks_of_figures():
    assert [t.name for t in ra.selected_tasks(())] == [t.name for t in ra.TASKS]
    assert [t.name for t in ra.selected_tasks(("dab_3x3_env_step", "battlesnake"))] == ["dab_3x3", "battlesnake"]
    with pytest.raises(ValueError, match="only"):
        ra.Config(only=("no_such_entry",))


@pytest.mark.parametrize("figure", [f for f in ra.FIGURES if not f.optional], ids=lambda f: f.name)
def test_every_entry_finds_its_figure_in_the_readmes(figure):
    texts = ra.read_texts()
    matches = re.findall(figure.pattern, texts[figure.source], re.M)
    assert len(matches) == 1, f"{figure.name}: {len(matches)} matches of its pattern in {figure.source}"
    stated = ra.stated_figure(figure, texts)
    assert stated is not None
    for value in stated if isinstance(stated, tuple) else (stated,):
        assert math.isfinite(value) and value > 0


def test_network_entries_read_the_new_layout_column_of_the_readme_table():
    # benchmarks/README.md, "Networks near the machine": run_all runs the default settings (quick=true), so it
    # compares the "new layout" column's share of matmul, in plain or bold cells, not the "before" column's
    text = ("| network | batch | FLOPs/step | before: GFLOP/s (% of matmul) | new layout | + `malloc=retain` | "
            "+ `ynn=false` | target | met by |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---|\n"
            "| best matmul (same run) | | | 237.7 | 246.5 | 249.0 | 236.9 | | |\n"
            "| Q-snake small (3 x 16, shipped) | 128 | 1.69 G | 31.1 (13.1%) | 31.6 (12.8%) | **49.7 (19.9%)** | "
            "42.1 (17.8%) | 26.2% | not met (1.5x) |\n"
            "| Q-snake paper (6 layers, 32-128) | 256 | 184.2 G | 49.7 (20.9%) | **94.9 (38.5%)** | 96.3 (38.7%) | "
            "96.1 (40.6%) | 30% | new layout |\n"
            "| DDPG (8 variants, default widths) | 512 | 0.45 G | 13.0 (5.5%) | 17.4 (7.1%) | 16.5 (6.6%) | "
            "**19.6 (8.3%)** | 11.0% | not met (1.5x) |\n")
    figures = {f.name: f for f in ra.FIGURES}
    texts = {ra.BENCH_README: text}
    assert ra.stated_figure(figures["network_q_snake_small"], texts) == pytest.approx(0.128)
    assert ra.stated_figure(figures["network_q_snake_paper"], texts) == pytest.approx(0.385)
    assert ra.stated_figure(figures["network_ddpg"], texts) == pytest.approx(0.071)
    assert ra.stated_figure(figures["network_az_dab"], texts) is None  # no row of its own here
    assert {f.name for f in ra.FIGURES if f.task == "networks"} == {f"network_{n}" for n in ra.NETWORKS}


def test_network_task_emits_every_network_from_the_benchmark_rows(monkeypatch):
    # measure_networks runs benchmarks/networks.py's `run` (default settings, quick) and emits each network's
    # share of the same run's matmul; the benchmark itself is replaced here by two of its rows
    calls = {}

    class FakeNetworks:
        class Config:
            def __init__(self, **kw):
                calls["config"] = kw
                self.clock = "cpu"

        @staticmethod
        def run(cfg, show=print):
            show("| az_dab | ... |")
            return [{"kind": "matmul", "network": "matmul n=512", "gflops": 200.0, "matmul_gflops": 200.0,
                     "fraction": 1.0},
                    {"kind": "network", "network": "az_dab", "multiplier": 1, "batch": 384, "gflops": 50.0,
                     "ms": 44.0, "matmul_gflops": 200.0, "fraction": 0.25}]

    monkeypatch.setattr(ra, "_bench", lambda stem: FakeNetworks if stem == "networks" else None)
    emitted = {}
    ra.measure_networks(lambda name, **values: emitted.__setitem__(name, values))
    assert calls["config"] == {"quick": True}
    assert list(emitted) == ["network_az_dab"]
    got = emitted["network_az_dab"]
    assert got["ratio"] == 0.25 and got["ours"] == 50.0 and got["anchor"] == 200.0
    row = ra.rows_for([f for f in ra.FIGURES if f.name == "network_az_dab"], emitted, ra.read_texts())[0]
    assert row["compared"] == 0.25 and row["stated"] is not None


def test_the_headline_figures_read_as_the_readme_states_them():
    texts = ra.read_texts()
    by_name = {f.name: ra.stated_figure(f, texts) for f in ra.FIGURES}
    readme = texts["README.md"]
    for name in ("matrix_boltzmann", "dab_3x3_playout", "battlesnake_vs_reference", "server_p99_worst"):
        value = by_name[name]
        shown = "-".join(f"{v:,g}" for v in value) if isinstance(value, tuple) else f"{value:,g}"
        assert shown in readme, (name, shown)


def _shown(value: float) -> float:
    """A value as the front page writes it: whole from 100 up, else 3 significant digits."""
    return float(round(value)) if value >= 100 else float(f"{value:.3g}")


def test_front_page_ranges_are_the_envelope_of_the_recorded_quiet_runs():
    # README.md states a figure as the range of its quiet runs on every CPU model recorded in benchmarks/README.md:
    # a new record outside it, or a front-page edit, fails here until the two agree
    texts = ra.read_texts()
    records = ra.recorded_runs(texts[ra.BENCH_README])
    ranged = []
    for f in ra.FIGURES:
        stated = ra.stated_figure(f, texts)
        if f.source == ra.README and isinstance(stated, tuple):
            values = [v for runs in records[f.name].values() for v in runs]
            assert stated == (_shown(min(values)), _shown(max(values))), f.name
            ranged.append(f.name)
    assert len(ranged) >= 10, ranged


def test_the_records_name_cpu_models_as_the_run_header_does_and_cover_every_entry():
    records = ra.recorded_runs(ra.read_texts()[ra.BENCH_README])
    models = {m for runs in records.values() for m in runs}
    measured_models = [m for m in models if not m.startswith("stated")]
    assert len(measured_models) >= 2
    for m in measured_models:  # as `cpu_model` prints it, so that a run on that model finds its column
        assert re.fullmatch(r".+ \(family \d+, model \d+\)", m), m
    same_size = {f.name for f in ra.FIGURES if f.same_size}
    assert set(records) == same_size


def test_cpu_model_names_the_generation_a_virtual_machine_hides(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n"
                    "model name\t: Intel(R) Xeon(R) Processor\n\nprocessor\t: 1\nmodel\t\t: 1\n")
    assert ra.cpu_model(info) == "Intel(R) Xeon(R) Processor (family 6, model 207)"  # the first processor's
    assert ra.cpu_model(tmp_path / "absent") == (ra.platform.processor() or "unknown")


def test_alphazero_step_builds_from_the_shipped_metadata_whose_config_nests_the_learner():
    # benchmarks/networks.py reads the shipped learner's batch size and board sizes from the weights' metadata,
    # whose config is the learner's own (Onitama) or nests it under "learner" (Dots-and-Boxes, an experiment's:
    # the case that broke; Onitama's plain form is built by every networks run)
    game, weights = "dots_and_boxes", "alphazero_dab"
    import json

    meta = json.loads((ROOT / "jaxgames" / "weights" / weights / "metadata.json").read_text())
    learner = meta["config"].get("learner", meta["config"])
    boards = len(learner.get("board_sizes") or [None])
    _, _, batch, params = ra._bench("networks").alphazero_step(game, 1, 0)
    assert batch == learner["batch_size"] * boards and params > 0


def test_product_ceiling_counts_each_product_as_often_as_the_step_runs_it():
    # benchmarks/networks.py's `_products`: a scan's body runs `length` times, so its product counts 5 times;
    # the same product outside the scan is the same distinct entry; a product in a while loop is refused
    import jax
    import jax.numpy as jnp

    nw = ra._bench("networks")
    a, b = jnp.ones((4, 3)), jnp.ones((3, 2))

    def step(a, b):
        def body(carry, _):
            return carry, carry @ b
        _, ys = jax.lax.scan(body, a, None, length=5)
        return ys.sum() + (a @ b).sum() + (b.T @ a.T).sum()

    found = nw._products(jax.make_jaxpr(step)(a, b).jaxpr, 1, {})
    counts = sorted(n for _, n in found.values())
    assert counts == [1, 6]  # a @ b six times (5 in the scan, 1 outside); b^T @ a^T once
    with pytest.raises(ValueError, match="while"):
        nw._products(jax.make_jaxpr(lambda a: jax.lax.while_loop(lambda c: c[0, 0] < 3, lambda c: c @ b[:, :1] @ jnp.ones((1, 3)), a))(a).jaxpr, 1, {})
