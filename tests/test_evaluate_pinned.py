"""evaluate.py's numbers are pinned: the JSON of a solo benchmark and of two head to heads, byte for byte, as the
code before 0.2's move of the lab out of ``agents/`` wrote them (``tests/data/evaluate_pinned/``, written by
``python evaluate.py`` at commit 850948f with the arguments below). A refactor must not change a number.

Keys added since are checked apart and left out of the comparison: the head to head's ``"paired"`` (the paired
differences against a common opponent, whose means are the differences of the pinned win rates).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

PINNED = Path(__file__).resolve().parent / "data" / "evaluate_pinned"

CASES = {
    "solo.json": ["--games", "500", "--seed", "7", "--agents", "random", "greedy", "optimal"]
    + ["ppo:models/ppo_standard.zip"],
    "head_to_head_2.json": ["--players", "2", "--games", "60", "--seed", "7", "--agents", "greedy", "optimal", "win"]
    + ["ppo:models/ppo_standard.zip"],
    "head_to_head_3.json": ["--players", "3", "--games", "40", "--seed", "3", "--agents", "random", "greedy", "win:3"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_evaluate_writes_the_pinned_json(tmp_path, name):
    out = tmp_path / name
    done = subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), *CASES[name], "--json", str(out), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_bytes())
    paired = report.pop("paired", None)
    assert (json.dumps(report, indent=2) + "\n").encode() == (PINNED / name).read_bytes()
    assert (paired is not None) == (name == "head_to_head_2.json")  # at 2 players with three agents or more
    if paired is not None:
        pairs = report["head_to_head"]

        def rate(x: str, c: str) -> float:
            key = f"{x} vs {c}"
            return pairs[key]["win_rate_a"] if key in pairs else 1 - pairs[f"{c} vs {x}"]["win_rate_a"]

        names = list(report["agents"])
        assert list(paired) == names
        for c, rows in paired.items():
            assert len(rows) == (len(names) - 1) * (len(names) - 2) // 2
            for key, row in rows.items():
                a, b = key.split(" - ")
                assert row["difference"] == pytest.approx(rate(a, c) - rate(b, c), abs=3e-6)
                assert row["difference_ci95"][0] <= row["difference"] <= row["difference_ci95"][1]
