"""The bounded zip reader (yacht_agents.archive): a zip too big on disk, or whose end record declares too many members
or too big a central directory, is refused from its last bytes, before its directory is parsed.
"""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from yacht_agents import archive


def _parse(*args, **kwargs):
    raise AssertionError("the central directory was parsed")


@pytest.fixture
def unparsed(monkeypatch):
    """``zipfile.ZipFile`` failing the test if it is reached (the directory parsed): set up the files before."""
    monkeypatch.setattr(archive.zipfile, "ZipFile", _parse)


def _end_record(members: int, directory: int, offset: int = 0) -> bytes:
    count = min(members, 0xFFFF)
    return struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, directory, offset, 0)


def _open(path, max_members: int = 16, max_bytes: int = 2**20):
    return archive.open_zip(path, what="a model", max_bytes=max_bytes, max_members=max_members)


def test_many_members_are_refused_from_the_end_record(tmp_path, monkeypatch):
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as many:
        for i in range(5000):
            many.writestr(f"x{i}", b"")
    monkeypatch.setattr(archive.zipfile, "ZipFile", _parse)
    with pytest.raises(archive.Refused, match=r"^it has 5000 members \(a model has at most 16\)$"):
        _open(path)
    monkeypatch.undo()
    with _open(path, max_members=5000) as within:  # within the bound it opens as before
        assert len(within.infolist()) == 5000


def test_a_zip64_end_record_of_millions_of_members_is_refused(tmp_path, unparsed):
    """The count a ZIP64 record declares (an end record's 0xFFFF says to look there), as a zip of 2,000,000 empty
    members (166 MB, 15-31 s and 1.3 GB to list) has it; here without the members."""
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 2_000_000, 2_000_000, 100, 0)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, 0, 1)
    path = tmp_path / "zip64.zip"
    path.write_bytes(record + locator + _end_record(0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF))
    with pytest.raises(archive.Refused, match=r"^it has 2000000 members \(a model has at most 16\)$"):
        _open(path)


def test_a_central_directory_bigger_than_its_members_may_take_is_refused(tmp_path, unparsed):
    path = tmp_path / "lying.zip"
    path.write_bytes(_end_record(3, 16 * archive.DIRECTORY_ENTRY_BYTES + 1))
    with pytest.raises(archive.Refused, match=r"^its central directory takes 65537 bytes, more than a model's 16 "):
        _open(path)


def test_a_file_bigger_on_disk_than_its_bound_is_refused_unread(tmp_path, unparsed):
    path = tmp_path / "big.zip"
    with open(path, "wb") as file:
        file.truncate(4 * 2**20)  # sparse: nothing is read but its last bytes
    with pytest.raises(archive.Refused, match=r"^it takes 4194304 bytes on disk, more than a model may \("):
        _open(path)


def test_a_file_without_an_end_record_is_left_to_zipfile(tmp_path):
    path = tmp_path / "not.zip"
    path.write_bytes(b"not a zip at all")
    with pytest.raises(zipfile.BadZipFile):
        _open(path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as small:
        small.writestr("data", b"x" * 1000)
    path.write_bytes(buffer.getvalue())
    with _open(path) as opened:
        assert opened.read("data") == b"x" * 1000


def test_a_bare_name_finds_the_shipped_model_and_a_path_here_wins(tmp_path, monkeypatch):
    from helpers import REPO

    monkeypatch.chdir(tmp_path)
    assert archive.shipped_npz("standard", "jax_") == REPO / "models" / "jax_standard.npz"
    assert archive.shipped_npz("selfplay_standard", "search_") == REPO / "models" / "search_selfplay_standard.npz"
    for name in ("nope", "", "../models/jax_standard", "models/jax_standard", "standard.npz", "stándard", "a" * 5000):
        assert archive.shipped_npz(name, "jax_") is None
    (tmp_path / "standard").mkdir()  # a run folder of that name here: the spec names it, not the shipped model
    assert archive.shipped_npz("standard", "jax_") is None


def test_a_name_too_long_to_look_up_is_the_resolvers_one_value_error():
    from yacht_agents.search import resolve_value

    with pytest.raises(ValueError, match=r"^no search model at 'a.*': its path cannot be looked up \(File name"):
        resolve_value("a" * 5000)
