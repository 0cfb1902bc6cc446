"""Checkpoints are kept by count, whatever their size: every checkpoint and model write first asks the disk for room
(the write's size and a margin), and is refused in one line, nothing half-written, where it would not fit.
"""

from __future__ import annotations

import shutil

import pytest

from yacht_lab.training import runs
from yacht_lab.training.config import from_dict, validate

pytest.importorskip("torch")

SEARCH = {
    "rules": "standard",
    "reward": "score",
    "total_timesteps": 480,
    "eval": {"every_timesteps": 480, "games": 4, "seed": 1000},
    "checkpoint_every_timesteps": 480,
    "search": {"players": 1, "net_arch": [16], "tables": 40, "epochs": 1, "batch_size": 64},
}


def full_after(monkeypatch, writes: int) -> list[int]:
    """The disk has room for ``writes`` writes, then too little; returns the list of the sizes asked about."""
    asked: list[int] = []
    real = shutil.disk_usage

    def disk_usage(path):
        usage = real(path)
        asked.append(usage.free)
        free = usage.free if len(asked) <= writes else runs.MIN_FREE_BYTES + 1000
        return usage._replace(free=free)

    monkeypatch.setattr(runs.shutil, "disk_usage", disk_usage)
    return asked


@pytest.mark.parametrize(("writes", "refused"), [(0, "checkpoints/step_480.npz"), (1, "model.npz")])
def test_a_write_that_would_not_fit_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, writes, refused):
    from yacht_lab.training.search.trainer import train_search

    full_after(monkeypatch, writes)
    with pytest.raises(ValueError, match=rf"^not enough free space to write {refused} in '.*': .* MiB free") as error:
        train_search(validate(from_dict(SEARCH)), tmp_path, name="run", progress=False)
    assert "\n" not in str(error.value)
    files = sorted(p.relative_to(tmp_path / "run").as_posix() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert not any(name.endswith(".tmp") for name in files)
    assert ("checkpoints/step_480.npz" in files) == (writes == 1) and "model.npz" not in files


def test_the_estimate_is_the_newest_checkpoint_or_the_states(tmp_path, monkeypatch):
    from yacht_lab.training.run_context import RunContext

    class State:
        checkpoint_suffix = ".npz"

        def checkpoint_bytes(self) -> int:
            return 5 * 2**20

    config = validate(from_dict(SEARCH))
    asked = []
    monkeypatch.setattr(
        "yacht_lab.training.run_context.check_free_space", lambda folder, needed, what: asked.append((needed, what))
    )
    with RunContext(config, tmp_path, name="run", progress=False) as run:
        run.check_free_space(State(), "model.npz")
        (run.dir / "checkpoints").mkdir()
        (run.dir / "checkpoints" / "step_480.npz").write_bytes(bytes(7 * 2**20))
        run.check_free_space(State(), "model.npz")
    assert asked == [(5 * 2**20, "model.npz"), (7 * 2**20, "model.npz")]
