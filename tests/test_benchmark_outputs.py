"""The benchmarks' output files: a path that cannot be written is one line and exit status 2 before anything is
measured (a benchmark once ran its whole measurement and then ended in a traceback, writing nothing), and what is
written is written whole.
"""

from __future__ import annotations

import json
import runpy
import sys
import time

import pytest
from helpers import REPO, run_script

#: Each benchmark that writes files, with the option that names one and any argument it requires.
OUTPUTS = [
    ("two_players.py", "--json", ["--agents", "win"]),
    ("duel.py", "--json", []),
    ("duel_rate.py", "--json", []),
    ("jax_speed.py", "--json", []),
    ("mctx_search.py", "--json", []),
    ("multiplayer_speed.py", "--json", []),
    ("recipe_seeds.py", "--json", ["RUN"]),
    ("recipe_seeds.py", "--plot", ["RUN"]),
    ("throughput.py", "--json", []),
    ("win_agreement.py", "--json", ["--agents", "optimal"]),
]


def _run(script: str, *args: str, monkeypatch) -> int:
    """``python benchmarks/<script> ARGS``, in this process (the imports are shared: milliseconds each); its code."""
    monkeypatch.setattr(sys, "argv", [script, *args])
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    try:
        runpy.run_path(str(REPO / "benchmarks" / script), run_name="__main__")
    except SystemExit as done:
        return done.code
    return 0


@pytest.mark.parametrize(("script", "option", "args"), OUTPUTS, ids=[f"{s}{o}" for s, o, _ in OUTPUTS])
def test_an_output_in_a_missing_folder_is_one_line_before_any_work(script, option, args, tmp_path, monkeypatch, capsys):
    target = tmp_path / "missing" / "out.json"
    start = time.monotonic()
    code = _run(script, *args, option, str(target), monkeypatch=monkeypatch)
    assert code == 2 and time.monotonic() - start < 5
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.endswith(f"error: argument {option}: cannot write '{target}': folder '{target.parent}' does not exist\n")
    assert not (tmp_path / "missing").exists()


def test_yacht_chasing_checks_its_folder_before_the_games(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert _run("yacht_chasing.py", "--out", str(blocker / "win"), monkeypatch=monkeypatch) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "yacht_chasing.py: error: argument --out: Not a directory\n"


def test_a_benchmark_writes_its_json_whole(tmp_path):
    target = tmp_path / "speed.json"
    args = ["--seconds", "0.02", "--rounds", "1", "--h2h-deals", "0", "--json", str(target)]
    done = run_script("benchmarks/multiplayer_speed.py", *args)
    assert done.returncode == 0, done.stderr
    figures = json.loads(target.read_text())
    assert figures["rounds"] == 1 and set(figures["players"]) == {"2"}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["speed.json"]  # no temporary file left beside it
