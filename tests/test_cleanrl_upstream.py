"""CleanRL's own ``ppo.py`` with the patch of ``docs/integrations.md``: it trains on Yacht-v0 and plays no illegal
action, where upstream's file with only ``import yacht_env`` plays many (its loop samples every action).

Upstream's file is not part of this repository: the test reads it from the path in ``YACHT_CLEANRL_PPO`` (a copy of
https://github.com/vwxyzjn/cleanrl/blob/fe8d8a03c41a7ef5b523e2e354bd01c363e786bb/cleanrl/ppo.py, or a newer one the
patch still applies to) and skips without it. It runs in this process on a tiny budget (512 steps), with tyro where
it is installed and a stand-in for its ``tyro.cli`` where it is not.
"""

from __future__ import annotations

import dataclasses
import os
import re
import runpy
import sys
import types
import warnings
from pathlib import Path

import pytest
from helpers import REPO

from yacht_env import YachtEnv

torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils.tensorboard", reason="CleanRL's ppo.py logs to TensorBoard (the train extra)")

UPSTREAM = os.environ.get("YACHT_CLEANRL_PPO")
pytestmark = pytest.mark.skipif(
    not UPSTREAM or not Path(UPSTREAM).is_file(),
    reason="set YACHT_CLEANRL_PPO to a copy of CleanRL's cleanrl/ppo.py (it is not part of this repository)",
)

ARGS = ["--env-id", "Yacht-v0", "--total-timesteps", "512", "--num-envs", "2", "--num-steps", "64", "--seed", "1"]


def docs_patch() -> str:
    """The one ``diff`` block of ``docs/integrations.md``'s CleanRL section."""
    page = (REPO / "docs" / "integrations.md").read_text()
    section = page[page.index("## CleanRL") :]
    section = section[: section.index("\n## ", 1)]
    found = re.findall(r"```diff\n(.*?)```", section, flags=re.S)
    assert len(found) == 1, "the CleanRL section has one diff block"
    return found[0]


def apply(patch: str, source: str, hunks: slice = slice(None)) -> str:
    """``source`` with the unified diff's hunks applied: each hunk's old lines (context and removed) must occur in it
    exactly once, and are replaced by its new lines (context and added); the line numbers are not needed."""
    bodies = re.split(r"^@@ [^\n]*@@\n", patch, flags=re.M)[1:]
    assert bodies, "no hunks"
    for body in bodies[hunks]:
        old, new = [], []
        for line in body.splitlines(keepends=True):
            tag, text = line[:1], line[1:] or "\n"
            if tag in (" ", "-"):
                old.append(text)
            if tag in (" ", "+"):
                new.append(text)
        before, after = "".join(old), "".join(new)
        assert source.count(before) == 1, f"the patch does not apply to this ppo.py:\n{before}"
        source = source.replace(before, after)
    return source


def _tyro_stand_in() -> types.ModuleType:
    """``tyro.cli(Args)`` for the flags of :data:`ARGS` (``--kebab-case VALUE``, ``--no-FLAG``)."""

    def cli(cls):
        fields = {field.name: field for field in dataclasses.fields(cls)}
        values, argv = {}, sys.argv[1:]
        while argv:
            flag = argv.pop(0).removeprefix("--").replace("-", "_")
            if flag.startswith("no_") and flag[3:] in fields:
                values[flag[3:]] = False
                continue
            kind = fields[flag].type  # a type (upstream's file has no ``from __future__ import annotations``)
            values[flag] = {"int": int, "float": float, "str": str}.get(kind, kind)(argv.pop(0))
        return cls(**values)

    return types.SimpleNamespace(cli=cli)


def run_ppo(script: Path, monkeypatch) -> dict:
    """Runs ``script`` as ``python script ARGS --no-cuda`` in this process; counts the env's steps and the illegal
    actions among them (each checked against the env's own mask as it is played)."""
    counts = {"steps": 0, "illegal": 0}
    step = YachtEnv.step

    def counted(self, action):
        counts["steps"] += 1
        counts["illegal"] += int(not self.action_masks()[int(action)])
        return step(self, action)

    monkeypatch.setattr(YachtEnv, "step", counted)
    monkeypatch.setattr(sys, "argv", [str(script), *ARGS, "--no-cuda"])
    try:
        import tyro  # noqa: F401
    except ImportError:
        monkeypatch.setitem(sys.modules, "tyro", _tyro_stand_in())
    monkeypatch.chdir(script.parent)  # its runs/ folder
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TensorBoard's and torch's, and the env's warning on an illegal action
            runpy.run_path(str(script), run_name="__main__")
    finally:
        torch.set_num_threads(threads)
    return counts


def test_upstream_ppo_with_the_docs_patch_plays_no_illegal_action(tmp_path, monkeypatch):
    script = tmp_path / "ppo.py"
    script.write_text(apply(docs_patch(), Path(UPSTREAM).read_text()))
    counts = run_ppo(script, monkeypatch)
    # 512 vector steps, less the ones that reset a finished game (no step of the env: next_step autoreset)
    assert counts["illegal"] == 0 and 480 <= counts["steps"] < 512
    assert list((tmp_path / "runs").iterdir())  # it ran to its end: its TensorBoard run is written


def test_upstream_ppo_with_only_the_import_plays_illegal_actions(tmp_path, monkeypatch):
    """What the patch's masking is for: upstream's loop, unmasked, samples from all 44 actions."""
    script = tmp_path / "ppo.py"
    script.write_text(apply(docs_patch(), Path(UPSTREAM).read_text(), hunks=slice(0, 1)))
    counts = run_ppo(script, monkeypatch)
    assert 480 <= counts["steps"] < 512 and counts["illegal"] > counts["steps"] // 2
