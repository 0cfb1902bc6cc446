"""The ``jax`` extra trains on its own: ``train.py`` with a ``jax`` section (the library's dispatch,
``yacht_lab.train``) trains, evaluates and saves, and ``evaluate.py`` plays the model, with torch and
Stable-Baselines3 impossible to import. Skipped without jax; ``.ci/run`` also runs it in a venv with the jax extra
alone, where they are not installed at all.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import REPO, TINY_PPO, write_config

pytest.importorskip("jax")
pytest.importorskip("optax")
pytest.importorskip("gymnax")

# Runs train.py, then evaluate.py on the run it made, in one process where importing torch, Stable-Baselines3 or
# sb3-contrib fails (as where they are not installed), then prints the torch modules loaded (none).
WITHOUT_TORCH = """
import importlib.abc, pathlib, runpy, sys

BLOCKED = ("torch", "stable_baselines3", "sb3_contrib")

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None

sys.meta_path.insert(0, Blocked())
repo, config, output = sys.argv[1:]

def run(script, *args):
    sys.argv = [script, *args]
    try:
        runpy.run_path(f"{repo}/{script}", run_name="__main__")
    except SystemExit as done:
        assert done.code in (0, None), f"{script} exited with {done.code}"

run("train.py", "--config", config, "--output-dir", output, "--no-progress")
(folder,) = pathlib.Path(output).iterdir()
run("evaluate.py", "--agents", "greedy", f"jax:{folder}", "--games", "20", "--no-progress")
print("loaded:", sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED))
"""


def test_a_jax_run_trains_evaluates_and_saves_without_torch(tmp_path):
    config = write_config(tmp_path / "jax.yaml", TINY_PPO, jax={"seeds": 1})
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH, str(REPO), str(config), str(tmp_path / "runs")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert f"run folder: {run}" in done.stdout and f"jax:{run}" in done.stdout
    assert done.stdout.rstrip().endswith("loaded: []")
    assert {p.name for p in run.iterdir()} >= {"config.yaml", "command.txt", "learning_curve.csv", "model.npz"}
