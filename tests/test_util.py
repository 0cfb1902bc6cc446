"""Specification of ``yacht_env.util``: the int check and the atomic writer every layer writes its files with."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from yacht_env import util
from yacht_env.rules import is_int
from yacht_env.util import atomic_output, atomic_write, check_writable, remove_stale_temps, writable_target


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def temp_of(path: Path, pid: int) -> Path:
    """A temporary file named as :func:`atomic_output` names one, for the process ``pid``."""
    return path.with_name(f".{path.name}.{pid}-0123abcd{util.TEMP_SUFFIX}")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, True), (np.int64(3), True), (np.uint8(0), True), (True, False), (np.bool_(True), False), (3.0, False)],
)
def test_is_int(value, expected):
    assert is_int(value) is expected


def test_a_new_file_gets_the_usual_mode_not_mkstemps_0600(tmp_path, umask_022):
    atomic_write(tmp_path / "a.txt", "hello")
    assert (tmp_path / "a.txt").read_text() == "hello"
    assert mode(tmp_path / "a.txt") == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_022):
    path = tmp_path / "a.txt"
    path.write_text("old")
    path.chmod(0o600)
    atomic_write(path, b"new")
    assert path.read_bytes() == b"new" and mode(path) == 0o600


def test_a_symlink_is_written_through(tmp_path):
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old")
    link.symlink_to(target)
    atomic_write(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert writable_target(link) == target


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "new.json")
    atomic_write(link, "x")
    assert link.is_symlink() and (tmp_path / "new.json").read_text() == "x"


def test_a_fifo_and_a_directory_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        atomic_write(fifo, "x")
    with pytest.raises(ValueError, match="is a directory"):
        atomic_write(tmp_path, "x")
    with pytest.raises(ValueError, match="not a regular file"):
        writable_target("/dev/null")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo"]


def test_the_temp_file_is_removed_on_error_and_the_target_untouched(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(path) as temp:
        temp.write_text("half")
        raise RuntimeError
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_temp_names_match_no_glob_of_the_real_files(tmp_path):
    # kill -9 mid-write leaves the temporary file: it must not pass for a checkpoint or a cache file.
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    names = []
    for real in ("step_1024.zip", "standard-0123456789abcdef.npz", "learning_curve.csv"):
        with pytest.raises(KeyboardInterrupt), atomic_output(checkpoints / real) as temp:
            names.append(temp.name)
            raise KeyboardInterrupt
    for name in names:
        (checkpoints / name).write_bytes(b"half")  # what kill -9 would leave behind
    assert all(name.startswith(".") and name.endswith(".tmp") for name in names), names
    for pattern in ("step_*.zip", "*.zip", "*.npz", "*.csv", "*.png"):
        assert list(checkpoints.glob(pattern)) == [], pattern


def test_stale_temps_are_removed_but_a_live_writers_are_kept(tmp_path):
    real = tmp_path / "standard.npz"
    real.write_bytes(b"real")
    stale, live = temp_of(real, dead_pid()), temp_of(real, os.getppid())
    stale.write_bytes(b"half")
    live.write_bytes(b"being written")
    other = tmp_path / ".notes.tmp"  # a hidden .tmp file that is not ours: no pid in its name
    other.write_text("x")
    assert remove_stale_temps(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([real.name, live.name, other.name])
    assert remove_stale_temps(tmp_path / "missing") == []


def test_only_this_projects_temp_names_are_removed_from_a_shared_folder(tmp_path):
    # A shared cache folder: other programs' hidden or .tmp files are theirs, even with a dead pid in the name
    # and an hour old; only the exact names of _temp_name (and of old versions' caches) are removed.
    dead = dead_pid()
    cache = tmp_path / "standard-0123456789abcdef.npz"
    ours = [temp_of(cache, dead), cache.with_name(f"{cache.name}k2j4h1x_.tmp")]  # today's, mkstemp's of old
    others = [
        f".notes.{dead}.tmp",
        f".notes.{dead}-draft.tmp",
        f".notes.{dead}-0123ABCD.tmp",
        f".x.{dead}-0123abcd.tmp.bak",
        "results.npz.bak.tmp",
        "standard.npz.old.tmp",
        f"standard-0123456789abcdef.npz.{dead}.tmp",
    ]
    an_hour_ago = time.time() - 3601
    for path in [*ours, *(tmp_path / name for name in others)]:
        path.write_bytes(b"x")
        os.utime(path, (an_hour_ago, an_hour_ago))
    assert util.load_arrays(cache, "key", {}) is None  # what the caches call on every read
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others)
    assert remove_stale_temps(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others)


def test_a_read_only_target_is_refused_not_replaced(tmp_path):
    # An atomic write renames a new file over the old one, which the old file's mode cannot stop: it is refused.
    path = tmp_path / "report.json"
    path.write_text("keep me")
    path.chmod(0o444)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    for target in (path, link):
        for check in (writable_target, check_writable, lambda p: atomic_write(p, "new")):
            with pytest.raises(ValueError, match=f"^cannot write '{target}': it is read-only"):
                check(target)
    assert path.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "report.json"]


def test_a_name_too_long_is_a_value_error(tmp_path):
    path = tmp_path / ("a" * 300 + ".json")
    for check in (writable_target, check_writable, lambda p: atomic_write(p, "x")):
        with pytest.raises(ValueError, match="^cannot write '.*': File name too long$"):
            check(path)
    assert list(tmp_path.iterdir()) == []


def test_legacy_temps_are_removed_only_once_old(tmp_path):
    old, new = tmp_path / "step_5.tmp.zip", tmp_path / "step_6.tmp.zip"
    old.write_bytes(b"")
    new.write_bytes(b"")
    an_hour_ago = time.time() - 3601
    os.utime(old, (an_hour_ago, an_hour_ago))
    assert remove_stale_temps(tmp_path, legacy=["*.tmp.zip"]) == [old]
    assert [p.name for p in tmp_path.iterdir()] == [new.name]


def test_check_writable_really_tries_and_leaves_nothing(tmp_path):
    assert check_writable(tmp_path / "out.json") == tmp_path / "out.json"
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match="is not a folder"):
        check_writable(tmp_path / "a_file" / "out.json")
    with pytest.raises(ValueError, match="does not exist"):
        check_writable(tmp_path / "missing" / "out.json")
    with pytest.raises(ValueError, match="is a directory"):
        check_writable(tmp_path)


def test_check_writable_refuses_a_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("this user (root) can write into a read-only folder")
        with pytest.raises(ValueError, match="Permission denied"):
            check_writable(folder / "out.json")
    finally:
        folder.chmod(0o755)


def test_check_writable_refuses_a_loop_of_symlinks_and_takes_a_255_byte_name(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(ValueError, match="cannot write '.*a': Too many levels of symbolic links"):
        check_writable(tmp_path / "a")
    for name in ("x" * 255, "é" * 127 + "x"):  # 255 bytes: the longest name the file system takes
        assert check_writable(tmp_path / name) == tmp_path / name
        atomic_write(tmp_path / name, "written")
        assert (tmp_path / name).read_text() == "written"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a", "b", "x" * 255, "é" * 127 + "x"])


def test_atomic_output_can_replace_a_link_instead_of_writing_through_it(tmp_path):
    """``follow_links=False`` (the duel cache's files): the link itself becomes the new file; its target is kept."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("kept")
    link = tmp_path / "cache.json"
    link.symlink_to(target)
    atomic_write(link, "new", follow_links=False)
    assert not link.is_symlink() and link.read_text() == "new" and target.read_text() == "kept"
    link.unlink()
    link.symlink_to(target)
    atomic_write(link, "through")  # the default: written through, the link stays
    assert link.is_symlink() and target.read_text() == "through"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "missing" / "file.json")
    atomic_write(dangling, "here", follow_links=False)
    assert dangling.read_text() == "here" and not (tmp_path / "missing").exists()
