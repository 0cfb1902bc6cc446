"""Specification of the evaluation: ``yacht_lab.measure.evaluation`` (statistics, common dice, regret) and the
``evaluate.py`` script end to end (outputs, determinism, and one clean error line for each bad input)."""

from __future__ import annotations

import json
import math
import os
import signal
import stat
import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO, run_script

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_env.solver import solve
from yacht_lab.measure.evaluation import MAX_GAMES, evaluate, format_report
from yacht_lab.measure.report import Z_95

SUMMARY_KEYS = {
    "mean",
    "std",
    "ci95",
    "median",
    "p5",
    "p95",
    "percent_of_optimal",
    "mean_regret",
    "regret_ci95",
    "yacht_rate",
    "category_means",
    "category_regret",
}
TOP_KEYS = {"rules", "games", "seed", "optimal_expected_score", "agents", "paired_differences"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# Runs a script as ``python script.py ARGS`` would, but sends the process SIGINT while it imports MODULE.
INTERRUPT_AT_IMPORT = """
import os, runpy, signal, sys

class InterruptAt:
    def find_spec(self, name, path=None, target=None):
        if name == module:
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptAt())
module, sys.argv = sys.argv[1], sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture(scope="module")
def library_run():
    """2,000 games of each built-in agent through the library, seed 0."""
    agents = [make_agent(spec, seed=0) for spec in ("random", "greedy", "optimal")]
    return evaluate(agents, 2_000, seed=0)


# --------------------------------------------------------------------------------------------------
# The library: regret, common dice, statistics
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["random", "greedy", "optimal"])
def test_mean_score_plus_mean_regret_is_the_optimal_expected_score(library_run, name):
    # E[score + regret] = optimal expected score for any policy; the tolerance is the 95% CI of the mean of
    # score + regret over these games.
    result = library_run.results[name]
    total = result.scores + result.regret
    half_width = Z_95 * total.std(ddof=1) / math.sqrt(len(total))
    assert abs(total.mean() - library_run.optimal_expected_score) < half_width


def test_optimal_agent_has_zero_regret_in_every_game(library_run):
    assert np.abs(library_run.results["optimal"].regret).max() <= 1e-9


@pytest.mark.parametrize("name", ["random", "greedy"])
def test_suboptimal_agents_have_positive_regret(library_run, name):
    assert library_run.results[name].regret.mean() > 1.0


def test_category_regret_charges_each_turn_to_the_category_it_ends_in(library_run):
    for name, result in library_run.results.items():
        np.testing.assert_allclose(result.category_regret.sum(axis=1), result.regret, atol=1e-9, err_msg=name)
        assert (result.category_regret >= -1e-12).all()
    assert np.abs(library_run.results["optimal"].category_regret).max() <= 1e-9
    assert library_run.results["random"].category_regret.mean(axis=0).min() > 0


def test_scores_are_the_sum_of_the_category_scores(library_run):
    for result in library_run.results.values():
        assert (result.category_scores.sum(axis=1) == result.scores).all()
        assert ((result.decisions >= R.NUM_CATEGORIES) & (result.decisions <= 3 * R.NUM_CATEGORIES)).all()


def test_paired_differences_are_the_differences_of_the_means(library_run):
    pairs = {(p["a"], p["b"]): p for p in library_run.paired_differences()}
    assert list(pairs) == [("greedy", "random"), ("optimal", "random"), ("optimal", "greedy")]
    for (a, b), pair in pairs.items():
        diff = library_run.results[a].scores.mean() - library_run.results[b].scores.mean()
        assert pair["mean_diff"] == pytest.approx(diff, abs=1e-6)
        assert pair["ci95"][0] < pair["mean_diff"] < pair["ci95"][1]


@pytest.mark.parametrize("spec", ["greedy", "optimal"])
def test_games_do_not_depend_on_the_batch_size(spec):
    # Game g always rolls game_streams(seed, [g]): a deterministic agent scores the same game by game.
    whole = evaluate([make_agent(spec)], 300, seed=5).results[spec]
    batched = evaluate([make_agent(spec)], 300, seed=5, batch_size=7).results[spec]
    assert whole.scores.tolist() == batched.scores.tolist()
    assert np.array_equal(whole.regret, batched.regret)


def test_optimal_first_game_replays_in_the_single_env():
    # Game 0 of seed 3 is the single env on game_streams(3, [0]) played by the solver's best action.
    from yacht_env import YachtEnv
    from yacht_env.game import game_streams

    env = YachtEnv()
    obs, info = env.reset(options={"dice_stream": game_streams(3, [0])[0]})
    agent, total, done = make_agent("optimal"), 0.0, False
    while not done:
        obs, reward, done, _, info = env.step(agent.act(obs, env.action_masks()))
        total += reward
    assert evaluate([agent], 1, seed=3).results["optimal"].scores.tolist() == [total]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"games": 0}, "games must be an int >= 1"),
        ({"games": 2.5}, "games must be an int >= 1"),
        ({"games": True}, "games must be an int >= 1"),
        ({"games": MAX_GAMES + 1}, "games must be an int >= 1 and <= 10,000,000, got 10000001"),
        ({"games": 10**15}, "games must be an int >= 1 and <= 10,000,000"),
        ({"seed": -1}, "seed must be an int >= 0"),
        ({"batch_size": 0}, "batch_size must be an int >= 1"),
        ({"batch_size": 20_001}, "batch_size must be an int >= 1 and <= 20,000, got 20001"),
        ({"batch_size": 10_000_000}, "batch_size must be an int >= 1 and <= 20,000"),
        ({"rules": "classic"}, "plays the 'standard' rules, not 'classic'"),
    ],
)
def test_evaluate_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate([make_agent("greedy")], **{"games": 10, **kwargs})


def test_an_illegal_action_is_a_value_error_naming_the_agent_and_game():
    from yacht_agents import Agent

    class KeepNothing(Agent):  # mask 0 is illegal once no re-rolls are left
        def _act(self, observations, action_masks):
            return np.zeros(len(observations), dtype=np.intp)

    with pytest.raises(ValueError, match="^agent 'keep-nothing' chose illegal action 0 in game 0$"):
        evaluate([KeepNothing("keep-nothing")], 3)


def test_evaluate_refuses_an_agent_of_a_table_naming_the_head_to_head():
    for spec, players in (("win", 2), ("win:3", 3)):
        message = f"agent '{spec}' plays at a table of {players} players, and evaluating plays each agent alone"
        with pytest.raises(ValueError, match=message):
            evaluate([make_agent("greedy"), make_agent(spec)], 5)


def test_evaluate_rejects_duplicate_names():
    with pytest.raises(ValueError, match="agent names must be distinct"):
        evaluate([make_agent("greedy"), make_agent("greedy")], 10)


def test_report_shows_every_statistic(library_run):
    report = format_report(library_run)
    statistics = ["mean score", "95% CI", "std", "median", "5th / 95th percentile", "% of optimal", "Yacht rate"]
    statistics += ["mean regret / game", "games / s", "E[score] = optimal expected score - E[regret]"]
    statistics += ["mean regret per category"]
    for text in [*statistics, "optimal - greedy", *R.CATEGORIES]:
        assert text in report


# --------------------------------------------------------------------------------------------------
# evaluate.py end to end
# --------------------------------------------------------------------------------------------------
def test_script_writes_the_report_json_and_plot(tmp_path):
    json_path, plot_path = tmp_path / "results.json", tmp_path / "scores.png"
    args = ["--agents", "random", "greedy", "optimal", "--games", "200", "--no-progress"]
    done = run_script("evaluate.py", *args, "--json", str(json_path), "--plot", str(plot_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "paired differences" in done.stdout and f"wrote {json_path}" in done.stdout
    report = json.loads(json_path.read_text())
    assert set(report) == TOP_KEYS
    assert (report["rules"], report["games"], report["seed"]) == ("standard", 200, 0)
    assert report["optimal_expected_score"] == round(solve("standard").expected_score, 6)
    assert list(report["agents"]) == ["random", "greedy", "optimal"]
    for summary in report["agents"].values():
        assert set(summary) == SUMMARY_KEYS
        assert list(summary["category_means"]) == list(R.CATEGORIES)
        assert list(summary["category_regret"]) == list(R.CATEGORIES)
        assert sum(summary["category_regret"].values()) == pytest.approx(summary["mean_regret"], abs=1e-4)
        assert summary["ci95"][0] < summary["mean"] < summary["ci95"][1]
        assert summary["p5"] <= summary["median"] <= summary["p95"]
        assert 0.0 <= summary["yacht_rate"] <= 1.0
        percent = 100 * summary["mean"] / report["optimal_expected_score"]
        assert summary["percent_of_optimal"] == pytest.approx(percent, abs=1e-4)
    assert report["agents"]["optimal"]["mean_regret"] == 0.0
    assert plot_path.read_bytes().startswith(PNG_MAGIC)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json", "scores.png"]  # no temp files left


def test_script_json_is_byte_identical_for_the_same_seed_and_differs_for_another(tmp_path):
    outputs = {}
    for label, seed in (("a", "4"), ("b", "4"), ("c", "5")):
        path = tmp_path / f"{label}.json"
        done = run_script(
            "evaluate.py",
            "--agents",
            "random",
            "greedy",
            "--games",
            "200",
            "--seed",
            seed,
            "--json",
            str(path),
            "--no-progress",
        )
        assert done.returncode == 0, done.stderr
        outputs[label] = path.read_bytes()
    assert outputs["a"] == outputs["b"]
    assert outputs["a"] != outputs["c"]


@pytest.mark.slow
def test_script_runs_the_classic_rules_and_a_ppo_model(tmp_path):
    from sb3_contrib import MaskablePPO

    from yacht_env.sb3 import YachtSB3VecEnv

    model = tmp_path / "tiny.zip"
    MaskablePPO("MlpPolicy", YachtSB3VecEnv(2), n_steps=32, batch_size=32, n_epochs=1, device="cpu").save(model)
    path = tmp_path / "classic.json"
    args = ["--rules", "classic", "--games", "100", "--json", str(path), "--no-progress"]
    done = run_script("evaluate.py", "--agents", "greedy", f"ppo:{model}", *args)
    assert done.returncode == 0, done.stderr
    report = json.loads(path.read_text())
    assert report["rules"] == "classic"
    assert report["optimal_expected_score"] == round(solve("classic").expected_score, 6)
    assert list(report["agents"]) == ["greedy", f"ppo:{model}"]


# Each bad command line (besides its --json/--plot outputs), given the test's folder. "corrupt.zip" (garbage
# bytes) and "a_file.txt" exist in that folder.
BAD_INPUTS = {
    "unknown agent": lambda tmp: ["--agents", "greedy", "nope"],
    "missing model": lambda tmp: ["--agents", f"ppo:{tmp / 'missing.zip'}"],
    "corrupt model": lambda tmp: ["--agents", f"ppo:{tmp / 'corrupt.zip'}"],
    "duplicate agent": lambda tmp: ["--agents", "greedy", "greedy"],
    "zero games": lambda tmp: ["--games", "0"],
    "negative games": lambda tmp: ["--games", "-5"],
    "non-integer games": lambda tmp: ["--games", "abc"],
    "fractional games": lambda tmp: ["--games", "2.5"],
    "negative seed": lambda tmp: ["--seed", "-1"],
    "unknown rules": lambda tmp: ["--rules", "nope"],
    "json in a missing folder": lambda tmp: ["--json", str(tmp / "missing" / "r.json")],
    "json under a file": lambda tmp: ["--json", str(tmp / "a_file.txt" / "r.json")],
    "json is a folder": lambda tmp: ["--json", str(tmp)],
    "plot in a missing folder": lambda tmp: ["--plot", str(tmp / "missing" / "s.png")],
    "absurdly many games": lambda tmp: ["--games", "1000000000000000"],
    "more games than the limit": lambda tmp: ["--games", str(MAX_GAMES + 1)],
    "json is a FIFO": lambda tmp: ["--json", str(tmp / "a_fifo")],
    "json is a symlink to a FIFO": lambda tmp: ["--json", str(tmp / "link_to_fifo.json")],
    "json is stdout (a pipe)": lambda tmp: ["--json", "/dev/stdout"],
    "plot is a device": lambda tmp: ["--plot", "/dev/null"],
    "json and plot the same file": lambda tmp: ["--json", str(tmp / "same.png"), "--plot", str(tmp / "same.png")],
    "plot a symlink to the json": lambda tmp: ["--plot", str(tmp / "link_to_out_json.png")],
    "plot in an unknown format": lambda tmp: ["--plot", str(tmp / "s.jpg")],
    "plot without an extension": lambda tmp: ["--plot", str(tmp / "scores")],
    "batch size over the limit": lambda tmp: ["--batch-size", "20001"],
    "json name too long": lambda tmp: ["--json", str(tmp / ("a" * 300 + ".json"))],
    "json is read-only": lambda tmp: ["--json", str(tmp / "read_only.json")],
    "win agent alone": lambda tmp: ["--players", "1", "--agents", "greedy", "win"],
    "win agent of a superscript size": lambda tmp: ["--agents", "win:²"],
    "model is /dev/null": lambda tmp: ["--agents", "ppo:/dev/null"],
    # A loop of symlinks exited 0 and replaced the link; int() reads " 2", "1_0" and "２" as numbers.
    "json through a loop of symlinks": lambda tmp: ["--json", str(tmp / "loop_a.json")],
    "players with a space": lambda tmp: ["--players", " 2", "--agents", "greedy", "optimal"],
    "players in fullwidth digits": lambda tmp: ["--players", "２", "--agents", "greedy", "optimal"],
    "games with an underscore": lambda tmp: ["--games", "1_0"],
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_error_line_exit_2_and_no_output_file(tmp_path, case):
    (tmp_path / "corrupt.zip").write_bytes(b"\x00garbage bytes, not a model" * 8)
    (tmp_path / "a_file.txt").write_text("not a folder")
    (tmp_path / "read_only.json").write_text("{}")
    (tmp_path / "read_only.json").chmod(0o444)
    os.mkfifo(tmp_path / "a_fifo")
    (tmp_path / "link_to_fifo.json").symlink_to(tmp_path / "a_fifo")
    (tmp_path / "link_to_out_json.png").symlink_to(tmp_path / "out.json")  # dangling until out.json is written
    (tmp_path / "loop_a.json").symlink_to(tmp_path / "loop_b.json")
    (tmp_path / "loop_b.json").symlink_to(tmp_path / "loop_a.json")
    args = BAD_INPUTS[case](tmp_path)
    for option, name in (("--json", "out.json"), ("--plot", "out.png"), ("--games", "50")):
        if option not in args:
            args += [option, name if option == "--games" else str(tmp_path / name)]
    before = sorted(tmp_path.rglob("*"))
    done = run_script("evaluate.py", *args, "--no-progress")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate.py: error: "), done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(tmp_path.rglob("*")) == before  # no output, not even a temporary file
    assert stat.S_ISFIFO((tmp_path / "a_fifo").stat().st_mode)
    assert (tmp_path / "link_to_out_json.png").is_symlink() and (tmp_path / "loop_a.json").is_symlink()
    assert (tmp_path / "read_only.json").read_text() == "{}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--batch-size", "10000000"],  # with --games 10000000: a MemoryError traceback under a 3 GB cap
            "argument --batch-size: expected an integer >= 1 and <= 20,000, got '10000000'",
        ),
        (
            ["--players", "1", "--agents", "win"],
            "agent 'win' plays at a table of 2 players, and evaluating plays each agent alone: "
            "seat it in a head to head of 2 players (evaluate.py --players 2)",
        ),
        (
            ["--agents", "win:²"],
            "unknown agent 'win:²'; the win agent is 'win' or 'win:P' with P in 2..10 players",
        ),
        (
            ["--agents", "ppo:/dev/null"],
            "cannot load PPO model '/dev/null': it is not a regular file (a device, FIFO or socket)",
        ),
        (
            ["--json", "TMP/" + "a" * 300 + ".json"],
            "argument --json: cannot write 'TMP/" + "a" * 300 + ".json': File name too long",
        ),
        (
            ["--players", " 2", "--agents", "greedy", "optimal"],
            "argument --players: expected an integer >= 1 and <= 10, got ' 2'",
        ),
        (
            ["--json", "TMP/loop.json"],
            "argument --json: cannot write 'TMP/loop.json': Too many levels of symbolic links",
        ),
        (
            ["--players", "4", "--agents", "greedy", "random", "optimal"],
            "argument --agents: --players 4 seats every 4 of the agents at a table; give at least 4, got 3: "
            "greedy random optimal",
        ),
        (
            ["--json", "TMP/read_only.json"],
            "argument --json: cannot write 'TMP/read_only.json': it is read-only (make it writable or remove it first)",
        ),
    ],
)
def test_bad_input_says_what_is_wrong(tmp_path, args, message):
    if "TMP/loop.json" in args:
        (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    (tmp_path / "read_only.json").write_text("{}")
    (tmp_path / "read_only.json").chmod(0o444)
    done = run_script(
        "evaluate.py", "--games", "5", "--no-progress", *(arg.replace("TMP", str(tmp_path)) for arg in args)
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"evaluate.py: error: {message.replace('TMP', str(tmp_path))}\n"
    assert (tmp_path / "read_only.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) in (["read_only.json"], ["loop.json", "read_only.json"])


def test_the_outputs_take_a_name_of_255_bytes(tmp_path):
    """The file system takes a 255-byte name: so do --json and --plot (their temporary names were longer)."""
    json_path, plot_path = tmp_path / ("j" * 250 + ".json"), tmp_path / ("p" * 251 + ".png")
    done = run_script(
        "evaluate.py",
        "--agents",
        "greedy",
        "--games",
        "5",
        "--no-progress",
        "--json",
        str(json_path),
        "--plot",
        str(plot_path),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(json_path.read_text())["agents"] and plot_path.read_bytes().startswith(PNG_MAGIC)
    assert sorted(tmp_path.iterdir()) == sorted([json_path, plot_path])


@pytest.mark.parametrize("fmt", ["pdf", "svg"])
def test_the_plot_is_written_in_the_format_its_extension_names_through_a_symlink(tmp_path, fmt):
    # The JSON through a symlink: the link stays, its target is replaced and keeps its mode; new files get
    # the usual mode (0644 under umask 022).
    (tmp_path / "report.json").write_text("old")
    (tmp_path / "report.json").chmod(0o640)
    (tmp_path / "link.json").symlink_to("report.json")
    plot = tmp_path / f"scores.{fmt.upper()}"
    args = ["--agents", "greedy", "--games", "50", "--no-progress"]
    done = run_script("evaluate.py", *args, "--json", str(tmp_path / "link.json"), "--plot", str(plot), umask=0o022)
    assert done.returncode == 0, done.stderr
    assert os.readlink(tmp_path / "link.json") == "report.json"
    assert json.loads((tmp_path / "report.json").read_text())["games"] == 50
    assert stat.S_IMODE((tmp_path / "report.json").stat().st_mode) == 0o640
    assert stat.S_IMODE(plot.stat().st_mode) == 0o644
    magic = {"pdf": b"%PDF-", "svg": b"<?xml"}[fmt]
    assert plot.read_bytes().startswith(magic)
    if fmt == "svg":
        assert b"<svg" in plot.read_bytes()[:1000]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "report.json", plot.name]


def test_new_output_files_get_the_usual_mode(tmp_path):
    args = ["--agents", "greedy", "--games", "50", "--no-progress"]
    done = run_script(
        "evaluate.py", *args, "--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "s.png"), umask=0o022
    )
    assert done.returncode == 0, done.stderr
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {"r.json": 0o644, "s.png": 0o644}


def test_ctrl_c_during_the_imports_is_one_line_exit_130(tmp_path):
    args = ["--agents", "greedy", "--games", "50", "--json", str(tmp_path / "r.json"), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPT_AT_IMPORT, "numpy", "evaluate.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "evaluate.py: interrupted\n", "")
    assert list(tmp_path.iterdir()) == []


def test_the_ctrl_c_tests_pass_when_the_suite_starts_with_sigint_ignored():
    ignored = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731 (as nohup or a background job)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_evaluate.py::test_ctrl_c_during_the_imports_is_one_line_exit_130",
            "tests/test_train.py::test_a_signal_before_training_starts_aborts_and_removes_the_claimed_folder",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=ignored,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "2 passed" in done.stdout


# Where the presets are listed for a reader (the scripts' docstrings, the config's field, the play page), every preset
# of yacht_env.rules.PRESETS is named: clubhouse was missing from all of them.
PRESET_LISTS = {
    "yacht_lab/scripts/evaluate.py": "Every preset plays:",
    "yacht_lab/scripts/play.py": "takes every preset:",
    "yacht_lab/training/schema.py": "Rules preset: a name of",
    "docs/play.md": "`--rules` a preset",
}


@pytest.mark.parametrize("path", list(PRESET_LISTS))
def test_every_list_of_the_presets_names_each(path):
    from yacht_env.rules import PRESETS

    text = (REPO / path).read_text()
    start = text.index(PRESET_LISTS[path])
    listing = text[start : start + 600]
    assert [name for name in PRESETS if f"`{name}`" not in listing] == []


def test_script_plays_the_clubhouse_preset(tmp_path):
    done = run_script(
        "evaluate.py", "--rules", "clubhouse", "--agents", "greedy", "optimal", "--games", "100", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "optimal - greedy" in done.stdout


def test_the_default_agents_say_when_the_shipped_model_is_left_out(monkeypatch, capsys):
    """Without the train extra the default table once lost ``ppo:standard`` without a word."""
    import importlib.util

    from yacht_lab.scripts.evaluate import parse_args

    args = parse_args(["--games", "10"], prog="evaluate.py")
    assert args.agents == ["random", "greedy", "optimal", "ppo:standard"] and capsys.readouterr().err == ""
    find_spec = importlib.util.find_spec

    def without_sb3_contrib(name, *args):
        return None if name == "sb3_contrib" else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_sb3_contrib)
    args = parse_args(["--games", "10", "--rules", "classic"], prog="evaluate.py")
    assert args.agents == ["random", "greedy", "optimal"]
    assert capsys.readouterr().err == (
        "evaluate.py: note: the default agents leave out ppo:classic, the shipped model: it needs the train extra "
        "(pip install 'yacht-rl[train]')\n"
    )
    args = parse_args(["--games", "10", "--rules", "knizia"], prog="evaluate.py")  # no shipped model: nothing to say
    assert args.agents == ["random", "greedy", "optimal"] and capsys.readouterr().err == ""
    # A refused command says its one error line and nothing else (the web-only venv has no train extra).
    with pytest.raises(SystemExit) as exit:
        parse_args(["--games", "100001", "--record", "r.jsonl"], prog="evaluate.py")
    assert exit.value.code == 2
    assert capsys.readouterr().err == (
        "evaluate.py: error: argument --record: a record keeps at most 100,000 games per agent, got 100,001\n"
    )
