"""Specification of a sweep's aggregate statistics (``yacht_lab.sweep.report``): final values, mean and IQM
with stratified bootstrap CIs, probability of improvement, IQM learning curves at the common steps, the
table and the plot. The expected values are worked out by hand; bootstraps run few repetitions here."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from yacht_lab.sweep.report import TrialResult, format_table, metric_label, render_curves, summarise

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
METRIC = "percent_of_optimal"
REPS = 200  # bootstrap repetitions: enough for the bounds checked here, and quick
TOP_KEYS = {"metric", "confidence", "reps", "curve_reps", "seed", "configurations", "probability_of_improvement"}
CONFIGURATION_KEYS = {
    "name",
    "seeds",
    "runs",
    "final",
    "final_timesteps",
    "mean",
    "iqm",
    "mean_ci95",
    "iqm_ci95",
    "stopped_early",
    "failed",
}
CURVE_KEYS = {"name", "timesteps", "iqm", "lo", "hi", "mean"}


def curve(values, steps=None, metric=METRIC) -> list[dict[str, float]]:
    """Learning-curve rows with ``values`` of ``metric`` at ``steps`` (every 1,000 steps by default)."""
    steps = steps if steps is not None else [1_000 * (i + 1) for i in range(len(values))]
    return [
        {"timesteps": step, "wall_minutes": 0.5 * i, metric: value}
        for i, (step, value) in enumerate(zip(steps, values, strict=True))
    ]


def trial(configuration, seed, values, status="finished", steps=None, metric=METRIC) -> TrialResult:
    return TrialResult(configuration, seed, f"{configuration}/seed_{seed}", status, curve(values, steps, metric))


def finals_trials(configuration, finals, first_seed=0) -> list[TrialResult]:
    """One trial per final value (seeds ``first_seed, first_seed + 1, ...``), each a two-row curve ending there."""
    return [trial(configuration, first_seed + i, [0.0, value]) for i, value in enumerate(finals)]


def summarise_finals(finals_by_configuration: dict[str, list[float]], **kwargs) -> dict:
    trials = [t for name, finals in finals_by_configuration.items() for t in finals_trials(name, finals)]
    kwargs = {"reps": REPS, "curve_reps": 50, **kwargs}
    return summarise(trials, METRIC, list(finals_by_configuration), **kwargs)


def entry(summary: dict, name: str) -> dict:
    (found,) = [e for e in summary["configurations"] if e["name"] == name]
    return found


def curve_of(summary: dict, name: str) -> dict:
    (found,) = [c for c in summary["curves"] if c["name"] == name]
    return found


@pytest.fixture(scope="module")
def sweep():
    """A small sweep: a baseline of 8 seeds, a variant of 4 (one stopped early, one failed), one lone seed."""
    trials = [
        *finals_trials("default", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0]),
        trial("ppo.n_epochs=4", 0, [10.0, 20.0, 30.0]),
        trial("ppo.n_epochs=4", 1, [12.0, 22.0], status="stopped early"),
        trial("ppo.n_epochs=4", 2, [11.0, 21.0, 31.0]),
        trial("ppo.n_epochs=4", 3, [9.0, 19.0, 29.0]),
        trial("ppo.n_epochs=4", 4, [50.0], status="error"),
        trial("lone", 7, [3.0, 4.0]),
    ]
    return summarise(trials, METRIC, ["default", "ppo.n_epochs=4", "lone"], reps=REPS, curve_reps=200, seed=3)


# --------------------------------------------------------------------------------------------------
# Shape
# --------------------------------------------------------------------------------------------------
def test_the_summary_is_plain_json_in_the_given_order(sweep):
    assert json.loads(json.dumps(sweep)) == sweep  # plain lists, floats, ints, strings and None only
    assert TOP_KEYS | {"curves"} == set(sweep)
    assert (sweep["metric"], sweep["confidence"], sweep["reps"], sweep["curve_reps"], sweep["seed"]) == (
        METRIC,
        0.95,
        REPS,
        200,
        3,
    )
    assert [e["name"] for e in sweep["configurations"]] == ["default", "ppo.n_epochs=4", "lone"]
    assert [c["name"] for c in sweep["curves"]] == ["default", "ppo.n_epochs=4", "lone"]
    for e in sweep["configurations"]:
        assert set(e) == CONFIGURATION_KEYS
    for c in sweep["curves"]:
        assert set(c) == CURVE_KEYS


# --------------------------------------------------------------------------------------------------
# Final values: mean, IQM and their CIs
# --------------------------------------------------------------------------------------------------
def test_iqm_trims_a_quarter_at_each_end_and_the_mean_does_not(sweep):
    default = entry(sweep, "default")
    assert default["seeds"] == list(range(8))
    assert default["final"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0]
    assert default["final_timesteps"] == [2_000] * 8
    assert default["iqm"] == pytest.approx((3 + 4 + 5 + 6) / 4)  # 1, 2 and 7, 100 trimmed
    assert default["mean"] == pytest.approx(128 / 8)


@pytest.mark.parametrize(
    ("finals", "iqm"),
    [
        ([5.0, 1.0], 3.0),  # a quarter of 2 runs is half a run: nothing trimmed
        ([4.0, 1.0, 2.0, 3.0], 2.5),  # one run at each end
        ([1.0, 2.0, 9.0], 4.0),  # rliable's IQM (scipy's trim_mean) trims whole runs only: 0.75 of one is none
        ([1.0, 2.0, 3.0, 4.0, 50.0], 3.0),  # 1.25 runs: one at each end
    ],
)
def test_iqm_of_few_runs(finals, iqm):
    assert entry(summarise_finals({"a": finals}), "a")["iqm"] == pytest.approx(iqm)


@pytest.mark.parametrize("name", ["default", "ppo.n_epochs=4"])
def test_cis_hold_the_estimate_and_lie_within_the_finals(sweep, name):
    e = entry(sweep, name)
    for estimate, (lo, hi) in ((e["mean"], e["mean_ci95"]), (e["iqm"], e["iqm_ci95"])):
        assert min(e["final"]) <= lo <= estimate <= hi <= max(e["final"])
        assert lo < hi


def test_the_iqm_ci_is_narrower_than_the_mean_ci_with_an_outlier(sweep):
    default = entry(sweep, "default")
    assert np.ptp(default["iqm_ci95"]) < np.ptp(default["mean_ci95"])


def test_equal_finals_have_a_ci_of_zero_width():
    a = entry(summarise_finals({"a": [7.5] * 5}), "a")
    assert a["mean"] == a["iqm"] == 7.5
    assert a["mean_ci95"] == a["iqm_ci95"] == [7.5, 7.5]


def test_a_wider_confidence_gives_a_wider_interval():
    finals = {"a": [1.0, 3.0, 4.0, 8.0, 9.0, 15.0]}
    narrow = entry(summarise_finals(finals, confidence=0.5), "a")["mean_ci95"]
    wide = entry(summarise_finals(finals, confidence=0.99), "a")["mean_ci95"]
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_the_final_value_is_the_last_row_of_the_curve_even_below_the_best():
    trials = [trial("a", 0, [10.0, 90.0, 40.0]), trial("a", 1, [10.0, 80.0], status="stopped early")]
    a = entry(summarise(trials, METRIC, ["a"], reps=REPS, curve_reps=200), "a")
    assert a["final"] == [40.0, 80.0]
    assert a["final_timesteps"] == [3_000, 2_000]  # the stopped run ended earlier
    assert a["stopped_early"] == 1


def test_seeds_are_sorted_and_finals_follow_them():
    trials = [trial("a", 9, [0.0, 9.0]), trial("a", 2, [0.0, 2.0]), trial("a", 5, [0.0, 5.0])]
    a = entry(summarise(trials, METRIC, ["a"], reps=REPS, curve_reps=200), "a")
    assert a["seeds"] == [2, 5, 9]
    assert a["final"] == [2.0, 5.0, 9.0]


def test_failed_trials_are_counted_and_left_out(sweep):
    variant = entry(sweep, "ppo.n_epochs=4")
    assert variant["runs"] == 5
    assert variant["failed"] == 1  # the error, whose 50.0 would otherwise be the top final
    assert variant["stopped_early"] == 1  # counted, and its last value is a final
    assert variant["seeds"] == [0, 1, 2, 3]
    assert variant["final"] == [30.0, 22.0, 31.0, 29.0]
    assert variant["iqm"] == pytest.approx((29 + 30) / 2)
    assert variant["mean"] == pytest.approx(112 / 4)


@pytest.mark.parametrize(
    ("status", "values"), [("error", [1.0, 2.0]), ("pending", []), ("finished", []), ("stopped early", [])]
)
def test_what_counts_as_failed(status, values):
    trials = [*finals_trials("a", [1.0, 2.0]), trial("a", 5, values, status=status)]
    a = entry(summarise(trials, METRIC, ["a"], reps=REPS, curve_reps=200), "a")
    assert (a["runs"], a["failed"], a["stopped_early"], a["seeds"]) == (3, 1, 0, [0, 1])


def test_one_seed_has_no_ci(sweep):
    lone = entry(sweep, "lone")
    assert (lone["seeds"], lone["final"], lone["mean"], lone["iqm"]) == ([7], [4.0], 4.0, 4.0)
    assert lone["mean_ci95"] is None and lone["iqm_ci95"] is None


def test_no_seed_has_no_statistics():
    trials = [*finals_trials("a", [1.0, 2.0]), trial("b", 0, [3.0], status="error"), trial("b", 1, [], "pending")]
    summary = summarise(trials, METRIC, ["a", "b"], reps=REPS, curve_reps=200)
    b = entry(summary, "b")
    assert (b["seeds"], b["runs"], b["failed"], b["final"], b["final_timesteps"]) == ([], 2, 2, [], [])
    assert b["mean"] is b["iqm"] is b["mean_ci95"] is b["iqm_ci95"] is None
    assert curve_of(summary, "b") == {"name": "b", "timesteps": [], "iqm": [], "lo": [], "hi": [], "mean": []}
    assert summary["probability_of_improvement"] == []


def test_a_configuration_without_trials_is_reported_empty():
    summary = summarise(finals_trials("a", [1.0, 2.0]), METRIC, ["a", "never ran"], reps=REPS, curve_reps=200)
    assert entry(summary, "never ran")["runs"] == 0
    assert entry(summary, "never ran")["mean"] is None


def test_curve_rows_read_from_csv_as_strings_are_numbers():
    rows = [{"timesteps": "1000", "wall_minutes": "0.5", METRIC: "12.25"}]
    summary = summarise([TrialResult("a", 0, "a/0", "finished", rows)], METRIC, ["a"], reps=REPS)
    assert entry(summary, "a")["final"] == [12.25]
    assert entry(summary, "a")["final_timesteps"] == [1_000]


# --------------------------------------------------------------------------------------------------
# Probability of improvement
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("x", "y", "p"),
    [
        # pairs (x_i, y_j) with x_i > y_j, ties counting half, over all pairs
        ([1.0, 2.0, 3.0], [0.0, 2.0, 4.0], (1 + 1.5 + 2) / 9),
        ([1.0, 2.0, 3.0], [0.0, 2.0, 2.0], (1 + 2 + 3) / 9),
        ([2.0, 4.0], [1.0, 2.0, 3.0], (1.5 + 3) / 6),
        ([5.0, 6.0], [1.0, 2.0], 1.0),
        ([1.0, 2.0], [5.0, 6.0], 0.0),
        ([3.0, 3.0, 3.0], [3.0, 3.0], 0.5),
        ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 0.5),
    ],
)
def test_probability_of_improvement_counts_pairs(x, y, p):
    summary = summarise_finals({"x": x, "y": y}, reps=50)
    (pair,) = summary["probability_of_improvement"]
    assert (pair["x"], pair["y"]) == ("x", "y")
    assert pair["p"] == pytest.approx(p)
    lo, hi = pair["ci95"]
    assert 0.0 <= lo <= hi <= 1.0
    reverse = summarise_finals({"y": y, "x": x}, reps=50)["probability_of_improvement"][0]
    assert (reverse["x"], reverse["y"], reverse["p"]) == ("y", "x", pytest.approx(1 - p))


def test_separated_samples_have_a_certain_improvement():
    # every resample of x stays above every resample of y
    (pair,) = summarise_finals({"x": [5.0, 6.0, 7.0], "y": [1.0, 2.0]})["probability_of_improvement"]
    assert pair["p"] == 1.0
    assert pair["ci95"] == [1.0, 1.0]


def test_pairs_come_in_order_and_only_with_two_finals_on_each_side(sweep):
    pairs = sweep["probability_of_improvement"]
    assert [(p["x"], p["y"]) for p in pairs] == [("default", "ppo.n_epochs=4")]  # "lone" has one seed
    (pair,) = pairs
    # 7 of the baseline's 8 finals (all but 100) are below all 4 of the variant's
    assert pair["p"] == pytest.approx(4 / 32)
    assert pair["ci95"][0] <= pair["p"] <= pair["ci95"][1]


def test_every_pair_of_three_configurations():
    summary = summarise_finals({"a": [1.0, 2.0], "b": [3.0, 4.0], "c": [0.0, 5.0]})
    pairs = [(p["x"], p["y"], p["p"]) for p in summary["probability_of_improvement"]]
    assert pairs == [("a", "b", 0.0), ("a", "c", 0.5), ("b", "c", 0.5)]


# --------------------------------------------------------------------------------------------------
# Learning curves
# --------------------------------------------------------------------------------------------------
def test_curves_use_only_the_steps_every_seed_evaluated():
    trials = [
        trial("a", 0, [0.0, 10.0, 20.0, 30.0], steps=[100, 200, 300, 400]),
        trial("a", 1, [1.0, 11.0, 21.0], steps=[100, 200, 300], status="stopped early"),  # ASHA stopped it
        trial("a", 2, [2.0, 22.0, 32.0, 42.0], steps=[100, 300, 400, 500]),  # skipped 200
        trial("a", 3, [1000.0, 1000.0, 1000.0, 1000.0], steps=[100, 200, 300, 400]),
        trial("a", 4, [-5.0], steps=[100], status="error"),  # failed: does not limit the steps
    ]
    c = curve_of(summarise(trials, METRIC, ["a"], reps=REPS, curve_reps=300), "a")
    assert c["timesteps"] == [100, 300]
    # four seeds at each step: the IQM is the mean of the middle two
    assert c["iqm"] == pytest.approx([(1 + 2) / 2, (21 + 22) / 2])
    assert c["mean"] == pytest.approx([(0 + 1 + 2 + 1000) / 4, (20 + 21 + 22 + 1000) / 4])
    step_values = ([0, 1, 2, 1000], [20, 21, 22, 1000])
    for values, lo, estimate, hi in zip(step_values, c["lo"], c["iqm"], c["hi"], strict=True):
        assert min(values) <= lo <= estimate <= hi <= max(values)


def test_curve_steps_are_sorted_whatever_the_row_order():
    trials = [trial("a", s, [3.0 + s, 1.0 + s, 2.0 + s], steps=[300, 100, 200]) for s in range(2)]
    c = curve_of(summarise(trials, METRIC, ["a"], reps=REPS, curve_reps=200), "a")
    assert c["timesteps"] == [100, 200, 300]
    assert c["mean"] == pytest.approx([1.5, 2.5, 3.5])


def test_the_curve_ends_at_the_final_values(sweep):
    c = curve_of(sweep, "ppo.n_epochs=4")
    assert c["timesteps"] == [1_000, 2_000]  # the stopped-early seed evaluated twice
    assert c["iqm"] == pytest.approx([(10 + 11) / 2, (20 + 21) / 2])
    default = curve_of(sweep, "default")
    assert default["iqm"][-1] == pytest.approx(entry(sweep, "default")["iqm"])
    assert default["mean"][-1] == pytest.approx(entry(sweep, "default")["mean"])


def test_one_seed_curve_is_its_own_band(sweep):
    c = curve_of(sweep, "lone")
    assert c["timesteps"] == [1_000, 2_000]
    assert c["iqm"] == c["mean"] == c["lo"] == c["hi"] == [3.0, 4.0]


# --------------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------------
def test_same_seed_same_json_and_another_seed_other_cis():
    finals = {"a": [1.0, 3.0, 4.0, 8.0, 9.0, 15.0], "b": [2.0, 5.0, 6.0, 7.0, 12.0]}
    first, again = summarise_finals(finals, seed=1), summarise_finals(finals, seed=1)
    assert json.dumps(first) == json.dumps(again)
    other = summarise_finals(finals, seed=2)
    assert entry(other, "a")["mean"] == entry(first, "a")["mean"]
    assert entry(other, "a")["mean_ci95"] != entry(first, "a")["mean_ci95"]


def test_numpys_global_generator_is_left_as_it_was():
    np.random.seed(123)  # noqa: NPY002 - rliable resamples with this generator; summarise must restore it
    expected = np.random.random()  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002
    summarise_finals({"a": [1.0, 2.0, 3.0], "b": [2.0, 3.0, 4.0]})
    assert np.random.random() == expected  # noqa: NPY002


def test_a_configurations_cis_do_not_move_when_another_joins():
    alone = summarise_finals({"a": [1.0, 3.0, 4.0, 8.0, 9.0]})
    joined = summarise_finals({"b": [2.0, 5.0, 6.0], "a": [1.0, 3.0, 4.0, 8.0, 9.0]})
    assert entry(alone, "a") == entry(joined, "a")
    assert curve_of(alone, "a") == curve_of(joined, "a")


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------
GOOD = [trial("a", 0, [1.0, 2.0])]


@pytest.mark.parametrize(
    ("trials", "configurations", "kwargs", "match"),
    [
        ([trial("a", 0, [1.0], metric="win_rate")], ["a"], {}, "row 0 of its learning curve has no 'percent_of"),
        ([TrialResult("a", 0, "a/0", "finished", [{METRIC: 1.0}])], ["a"], {}, "no 'timesteps' column"),
        ([trial("a", 0, [1.0, math.nan])], ["a"], {}, "row 1 .* not two finite numbers"),
        ([TrialResult("a", 0, "a/0", "finished", [{"timesteps": 1, METRIC: "n/a"}])], ["a"], {}, "finite"),
        ([trial("b", 0, [1.0])], ["a"], {}, "configuration 'b', not one of 'a'"),
        (GOOD, [], {}, "at least one configuration"),
        (GOOD, ["a", "a"], {}, "distinct"),
        ([trial("a", 0, [1.0], status="running")], ["a"], {}, "status 'running'"),
        ([trial("a", 0, [1.0]), trial("a", 0, [2.0], status="stopped early")], ["a"], {}, "two trials .* seed 0"),
        (GOOD, ["a"], {"reps": 0}, "reps must be an int >= 1"),
        (GOOD, ["a"], {"reps": 10.0}, "reps must be an int >= 1"),
        (GOOD, ["a"], {"curve_reps": 0}, "curve_reps must be an int >= 1"),
        (GOOD, ["a"], {"seed": -1}, "seed must be an int >= 0"),
        (GOOD, ["a"], {"confidence": 1.0}, r"confidence must be a number in \(0, 1\)"),
        (GOOD, ["a"], {"confidence": 0.0}, "confidence"),
    ],
)
def test_bad_input_is_one_clear_value_error(trials, configurations, kwargs, match):
    with pytest.raises(ValueError, match=match):
        summarise(trials, METRIC, configurations, **kwargs)


def test_a_failed_trial_of_a_seed_beside_its_result_is_no_duplicate():
    trials = [trial("a", 0, [1.0], status="error"), trial("a", 0, [2.0])]
    a = entry(summarise(trials, METRIC, ["a"], reps=REPS), "a")
    assert (a["final"], a["failed"], a["runs"]) == ([2.0], 1, 2)


# --------------------------------------------------------------------------------------------------
# Table and plot
# --------------------------------------------------------------------------------------------------
def row(table: str, name: str) -> list[str]:
    (line,) = [line for line in table.splitlines() if line.startswith(name + " ")]
    return line.split()


def test_table_has_a_header_and_a_row_per_configuration(sweep):
    table = format_table(sweep)
    lines = table.splitlines()
    assert "% of optimal" in lines[0] and "3 configurations, 14 runs" in lines[0]
    assert lines[2].split()[:3] == ["configuration", "seeds", "mean"]
    lo, hi = entry(sweep, "default")["iqm_ci95"]
    assert row(table, "default") == ["default", "8/8", "16.00", "4.50", f"[{lo:.2f},", f"{hi:.2f}]", "0", "0"]
    lo, hi = entry(sweep, "ppo.n_epochs=4")["iqm_ci95"]
    assert row(table, "ppo.n_epochs=4") == ["ppo.n_epochs=4", "4/5", "28.00", "29.50"] + [
        f"[{lo:.2f},",
        f"{hi:.2f}]",
        "1",
        "1",
    ]
    assert row(table, "lone") == ["lone", "1/1", "4.00", "4.00", "-", "0", "0"]


def test_table_columns_line_up(sweep):
    lines = format_table(sweep).splitlines()[2:6]
    assert len({len(line) for line in lines}) == 1


def test_table_lists_the_probabilities_of_improvement(sweep):
    (pair,) = sweep["probability_of_improvement"]
    lo, hi = pair["ci95"]
    assert f"P(default > ppo.n_epochs=4) = 0.12 [{lo:.2f}, {hi:.2f}]" in format_table(sweep)


def test_table_of_win_rates_and_of_another_metric():
    trials = [trial("a", s, [0.1, v], metric="win_rate") for s, v in enumerate([0.25, 0.5, 0.625])]
    summary = summarise(trials, "win_rate", ["a"], reps=REPS, curve_reps=200)
    table = format_table(summary)
    assert "win rate" in table.splitlines()[0]
    assert row(table, "a")[:4] == ["a", "3/3", "0.458", "0.458"]
    trials = [trial("a", 0, [1.0, 171.25], metric="mean_score")]
    table = format_table(summarise(trials, "mean_score", ["a"], reps=REPS))
    assert table.splitlines()[0].startswith("final mean_score")
    assert row(table, "a")[:4] == ["a", "1/1", "171.2", "171.2"]


@pytest.mark.parametrize(
    ("metric", "label"), [("percent_of_optimal", "% of optimal"), ("win_rate", "win rate"), ("loss", "loss")]
)
def test_metric_labels(metric, label):
    assert metric_label(metric) == label


def test_render_curves_png_and_svg(sweep):
    assert render_curves(sweep).startswith(PNG_MAGIC)
    svg = render_curves(sweep, "svg")
    assert svg.startswith(b"<?xml") and b"<svg" in svg
    with pytest.raises(ValueError, match="plot format"):
        render_curves(sweep, "gif")


def test_render_curves_with_a_configuration_that_never_ran():
    summary = summarise(finals_trials("a", [1.0, 2.0]), METRIC, ["a", "b"], reps=REPS, curve_reps=200)
    assert render_curves(summary).startswith(PNG_MAGIC)
