"""evaluate.py's numbers are pinned: the JSON of a solo benchmark and of two head to heads, byte for byte, as the
code before 0.2's move of the lab out of ``agents/`` wrote them (``tests/data/evaluate_pinned/``, written by
``python evaluate.py`` at commit 850948f with the arguments below). A refactor must not change a number.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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
    assert out.read_bytes() == (PINNED / name).read_bytes()
