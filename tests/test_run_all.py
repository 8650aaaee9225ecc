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
    assert stated is not None and math.isfinite(stated) and stated > 0


@pytest.mark.parametrize("figure", [f for f in ra.FIGURES if f.optional], ids=lambda f: f.name)
def test_optional_entries_parse_where_stated(figure):
    # the networks' figures: "not stated" until benchmarks/README.md holds their table (the first row counts)
    stated = ra.stated_figure(figure, ra.read_texts())
    assert stated is None or (math.isfinite(stated) and stated > 0)


def test_network_entries_read_the_table_networks_py_prints():
    text = ("| network | batch | params | FLOPs/step | ms/step | GFLOP/s | % of matmul | compile s |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|\n"
            "| matmul n=1024 | 1,024 | 0 | 2.147 G | 9.93 | 216.4 | 100.0% | 0.2 |\n"
            "| az_dab | 384 | 89,139 | 2.207 G | 45.97 | 48.0 | 22.2% | 56.3 |\n"
            "| `ddpg` | 512 | 293,918 | 0.446 G | 49.34 | 9.0 | 4.2% | 99.3 |\n")
    figures = {f.name: f for f in ra.FIGURES}
    texts = {ra.BENCH_README: text}
    assert ra.stated_figure(figures["network_az_dab"], texts) == pytest.approx(0.222)
    assert ra.stated_figure(figures["network_ddpg"], texts) == pytest.approx(0.042)
    assert ra.stated_figure(figures["network_q_snake_small"], texts) is None


def test_the_headline_figures_read_as_the_readme_states_them():
    texts = ra.read_texts()
    by_name = {f.name: ra.stated_figure(f, texts) for f in ra.FIGURES}
    readme = texts["README.md"]
    for name in ("matrix_boltzmann", "dab_3x3_playout", "battlesnake_vs_reference", "server_p99_worst"):
        value = by_name[name]
        shown = f"{value:g}"
        assert shown in readme, (name, shown)
