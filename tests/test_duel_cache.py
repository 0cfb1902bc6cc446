"""The two-player solution's files: what a resume builds on, what a load trusts, and what two builds at once, a
killed build and a folder that cannot be written end in.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest

from yacht_env import duel
from yacht_env import rules as R
from yacht_env.duel import builder as B

SMALL = R.Rules(name="ones-threes-yacht", categories=("ones", "threes", "yacht"))  # levels 0..6
TINY = R.Rules(name="ones-yacht", categories=("ones", "yacht"))  # levels 0..4


def _stop_at(level: int):
    def stop(n: int) -> None:
        if n == level:
            raise KeyboardInterrupt

    return stop


def _damage(path) -> None:
    """Flips the high byte of the file's last value (float32: its sign and exponent)."""
    with open(path, "r+b") as file:
        file.seek(-1, 2)
        byte = file.read(1)
        file.seek(-1, 2)
        file.write(bytes([byte[0] ^ 0xFF]))


def _same_files(folder, whole, manifest) -> None:
    for entry in manifest["levels"].values():
        assert (folder / entry["file"]).read_bytes() == (whole / entry["file"]).read_bytes(), entry["file"]


class StillRunning(Exception):
    """Not an ``OSError`` (as ``TimeoutError`` is), which a reader would take for a failed read."""


@contextlib.contextmanager
def _within(seconds: float):
    """Raises :class:`StillRunning` in the block past ``seconds`` (a read that never ends fails the test)."""

    def expire(*_):
        raise StillRunning(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _load(rules, cache, **options) -> duel.DuelSolution:
    duel._MEMO.clear()
    return duel.solve(rules, cache_dir=cache, build_missing=False, **options)


def test_a_resume_verifies_every_level_it_builds_on(tmp_path):
    """A level damaged while the build is stopped is rebuilt, not given a fresh checksum over the damage."""
    layout = duel.Layout(SMALL)
    whole = B.build(tmp_path / "whole", layout, "equilibrium", "k", progress=False, workers=1)
    folder = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        B.build(folder, layout, "equilibrium", "k", progress=False, workers=1, on_level=_stop_at(4))
    _damage(folder / "E01.npy")
    seen = []
    resumed = B.build(folder, layout, "equilibrium", "k", progress=False, workers=1, on_level=seen.append)
    assert seen == [1, 2, 3, 4, 5, 6]  # from the damaged level on
    assert resumed["values"] == whole["values"] and resumed["levels"] == whole["levels"]
    _same_files(folder, tmp_path / "whole", whole)


def test_a_level_damaged_during_the_build_is_not_stored_as_uint16(tmp_path):
    layout = duel.Layout(SMALL)
    whole = B.build(tmp_path / "whole", layout, "equilibrium", "k", progress=False, workers=1)
    folder = tmp_path / "damaged"

    def damage_at_the_end(n: int) -> None:
        if n == layout.num_levels - 1:
            _damage(folder / "E02.npy")

    with pytest.raises(ValueError, match="level E02 in .* changed after it was built: run the build again"):
        B.build(folder, layout, "equilibrium", "k", progress=False, workers=1, on_level=damage_at_the_end)
    assert not B.read_manifest(folder)["complete"]
    seen = []
    B.build(folder, layout, "equilibrium", "k", progress=False, workers=1, on_level=seen.append)
    assert seen == [2, 3, 4, 5, 6]
    _same_files(folder, tmp_path / "whole", whole)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX special files")
def test_a_level_or_manifest_that_is_a_device_or_a_fifo_is_refused_at_once(tmp_path):
    solution = duel.solve(TINY, cache_dir=tmp_path, precision="float64")
    level = solution.folder / "E02.npy"
    level.unlink()
    level.symlink_to("/dev/zero")  # endless: its checksum would never end
    with _within(10), pytest.raises(ValueError, match=r"is damaged \(level E02\)"):
        _load(TINY, tmp_path, precision="float64")
    level.unlink()
    os.mkfifo(level)  # opening it would wait for a writer
    with _within(10), pytest.raises(ValueError, match=r"is damaged \(level E02\)"):
        _load(TINY, tmp_path, precision="float64")
    manifest_path = solution.folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["levels"]["E02"]["file"] = "/dev/zero"
    manifest_path.write_text(json.dumps(manifest))
    with _within(10), pytest.raises(ValueError, match=r"its manifest: level 'E02': its file is not 'E02.npy'"):
        _load(TINY, tmp_path, precision="float64")
    manifest_path.unlink()
    os.mkfifo(manifest_path)
    with _within(10), pytest.raises(ValueError, match="no finished two-player solution"):
        _load(TINY, tmp_path, precision="float64")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m["values"].update(E=0.75), r"its manifest's value of E, 0.75, is not its top level's"),
        (lambda m: m.update(values={"E": "0.5"}), r"its manifest: values \{'E': '0.5'\}"),
        (lambda m: m.update(values=None), r"its manifest: values None"),
        (lambda m: m.update(levels=[]), r"its manifest: no levels"),
        (lambda m: m.update(complete="yes"), r"its manifest: no levels or no completion flag"),
        (lambda m: m.update(kind="other"), r"its manifest: no key or no kind"),
        (lambda m: m["levels"].update(E02q=7), r"its manifest: level 'E02q': its file is not 'E02.u16.npy'"),
        (lambda m: m["levels"]["E02q"].pop("crc32"), r"level 'E02q': its dtype, count or checksum"),
        (lambda m: m["levels"]["E02q"].update(dtype="object"), r"level 'E02q': its dtype, count or checksum"),
        (lambda m: m["levels"]["E02q"].update(count=10**12), r"is damaged \(level E02\)"),
        (lambda m: m["levels"].update(X02={}), r"level 'X02': not a level of this kind of solve"),
        (lambda m: m.update(seconds="long"), r"its manifest: its times"),
    ],
)
def test_an_edited_or_broken_manifest_is_one_value_error(edit, message, tmp_path):
    solution = duel.solve(TINY, cache_dir=tmp_path)  # float32, stored as uint16
    path = solution.folder / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=message):
        _load(TINY, tmp_path)
    with pytest.raises(ValueError, match="remove the folder to rebuild it"):
        _load(TINY, tmp_path)


def test_a_manifest_nested_past_the_parser_is_not_ours(tmp_path):
    solution = duel.solve(TINY, cache_dir=tmp_path)
    (solution.folder / "manifest.json").write_text('{"format": 1, "levels": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert B.read_manifest(solution.folder) is None
    with pytest.raises(ValueError, match="no finished two-player solution"):
        _load(TINY, tmp_path)


def test_a_second_build_of_one_solution_at_once_is_refused(tmp_path):
    layout = duel.Layout(SMALL)
    refused = []

    def second_build(n: int) -> None:
        if n == 2:
            with pytest.raises(ValueError, match="another build of this two-player solution is running in .*: let"):
                B.build(tmp_path, layout, "equilibrium", "k", progress=False, workers=1)
            refused.append(n)

    manifest = B.build(tmp_path, layout, "equilibrium", "k", progress=False, workers=1, on_level=second_build)
    assert refused == [2] and manifest["complete"]
    assert B.build(tmp_path, layout, "equilibrium", "k", progress=False, workers=1) == manifest  # the lock is gone


def test_a_resume_removes_the_temporary_file_of_a_killed_build(tmp_path):
    layout = duel.Layout(SMALL)
    with pytest.raises(KeyboardInterrupt):
        B.build(tmp_path, layout, "equilibrium", "k", progress=False, workers=1, on_level=_stop_at(2))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".E03.npy.{int(gone.stdout)}-0123abcd.tmp"  # as kill -9 leaves a level being written
    stale.write_bytes(b"\0" * 1000)
    others = tmp_path / ".notes.123.tmp"  # not a name of ours: left alone
    others.write_text("mine")
    B.build(tmp_path, layout, "equilibrium", "k", progress=False, workers=1)
    assert not stale.exists() and others.exists()


def test_a_folder_that_cannot_be_written_is_one_line_and_exit_code_2(tmp_path, capsys):
    from yacht_env.duel.__main__ import main

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="cannot build the two-player solution in .*: Not a directory"):
        duel.solve(TINY, cache_dir=blocker)
    assert main(["build", "--rules", "standard", "--cache-dir", str(blocker)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("python -m yacht_env.duel: error: cannot build") and error.count("\n") == 1
    if hasattr(os, "geteuid") and os.geteuid() != 0:  # root writes anyway
        read_only = tmp_path / "read-only"
        read_only.mkdir(mode=0o555)
        with pytest.raises(ValueError, match="cannot build the two-player solution in .*: Permission denied"):
            duel.solve(TINY, cache_dir=read_only)


def test_a_level_or_manifest_that_is_a_symlink_is_replaced_not_written_through(tmp_path):
    """A link planted in the cache (to a file outside it) is replaced by the build's own file; its target is kept."""
    layout = duel.Layout(TINY)
    folder, outside = tmp_path / "cache", tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(KeyboardInterrupt):
        B.build(folder, layout, "equilibrium", "k", progress=False, workers=1, on_level=_stop_at(1))
    targets = {name: outside / name for name in ("manifest.json", "E02.npy", "E03.npy.target")}
    for name in ("E02.npy", "E03.npy.target"):
        targets[name].write_text(f"the user's {name}")
    (folder / "manifest.json").replace(targets["manifest.json"])  # the link's target: the stopped build's manifest
    kept = targets["manifest.json"].read_text()
    (folder / "manifest.json").symlink_to(targets["manifest.json"])
    (folder / "E02.npy").symlink_to(targets["E02.npy"])  # the level the resume writes next
    (folder / "E03.npy").symlink_to(targets["E03.npy.target"])
    whole = B.build(tmp_path / "whole", layout, "equilibrium", "k", progress=False, workers=1)
    resumed = B.build(folder, layout, "equilibrium", "k", progress=False, workers=1)
    assert resumed["values"] == whole["values"]
    assert targets["manifest.json"].read_text() == kept
    assert [targets[name].read_text() for name in ("E02.npy", "E03.npy.target")] == [
        "the user's E02.npy",
        "the user's E03.npy.target",
    ]
    assert not any(path.is_symlink() for path in folder.iterdir())
    assert json.loads((folder / "manifest.json").read_text())["complete"]


_TERMINATED_BUILD = """
import os, signal, sys
from yacht_env import rules as R
from yacht_env.duel import builder, worker
from yacht_env.duel.__main__ import main

R.get_rules = lambda name: R.Rules(name="ones-threes-yacht", categories=("ones", "threes", "yacht"))
builder.WORKER_VALUES = 1  # every level goes to the workers
solve_level = worker.Workers.solve_level


def terminated(self, *args, **kwargs):
    print(*(process.pid for process in self.processes), flush=True)  # the workers, started
    os.kill(os.getpid(), signal.SIGTERM)
    return solve_level(self, *args, **kwargs)


worker.Workers.solve_level = terminated
sys.exit(main(["build", "--cache-dir", sys.argv[1], "--workers", "2", "--device", "numpy"]))
"""


def test_sigterm_stops_a_build_and_its_workers_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", _TERMINATED_BUILD, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "python -m yacht_env.duel: stopped (SIGTERM); the finished levels are kept, run it again to go on"
    )
    assert "Traceback" not in done.stderr and "Error" not in done.stderr
    workers = [int(pid) for pid in done.stdout.split()]
    assert len(workers) == 2
    for pid in workers:  # stopped with the build (and reaped by it)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_worker_ends_without_a_word_when_its_build_is_gone_or_terminated(capfd):
    from yacht_env.duel.worker import Workers

    bad_task = (99, [(0, 1)], 0, None, None, None)  # no level 99: the worker answers with its traceback
    with Workers(TINY, None, 2) as workers:
        gone, terminated = workers.processes
        for process in (gone, terminated):  # each is in its loop: it has answered a task
            Workers._send(process, bad_task)
            with pytest.raises(RuntimeError, match="a duel worker failed"):
                Workers._receive(process)
        gone.stdout.close()  # the build went away: the answer to the next task finds no reader
        Workers._send(gone, bad_task)
        gone.stdin.close()
        assert gone.wait(timeout=60) == 1
        terminated.send_signal(signal.SIGTERM)
        assert terminated.wait(timeout=60) == 130
    error = capfd.readouterr().err
    assert "Traceback" not in error and "BrokenPipeError" not in error, error
