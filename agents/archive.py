"""Zip files a user names (a PPO model's ``.zip``, a JAX policy's ``.npz``), read within bounds.

The file's size on disk and its end record's count of members and size of central directory are checked before the
directory is parsed (a small zip of millions of empty members would take seconds and a gigabyte to list); the
central directory is checked before anything is decompressed: how many members there are, what each expands to and
what all expand to together. No member is read past the size it declares, and an array member's ``.npy`` header
must declare no more than the member holds: a zip bomb, or a header that asks for gigabytes, is refused at once, in
one line, before any memory is taken for it.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

#: What a file's own errors may be when it is damaged or not a zip (besides :class:`Refused`): the callers turn
#: them into one ``ValueError`` line naming the file.
READ_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError)

#: The ``.npy`` header readers, by format version (numpy writes 1.0, and 2.0 for headers over 64 KiB).
_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


#: The most bytes one member's entry may take in a central directory (46 bytes and its name, extra field and comment):
#: ours take under 200; the bound on a zip's central directory is this times its bound on members.
DIRECTORY_ENTRY_BYTES = 4096

#: The end of central directory record (22 bytes, then a comment of up to 65,535), and ZIP64's locator and record.
_END = struct.Struct("<4s4H2LH")
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")


class Refused(ValueError):
    """Why a file is not read (the reason alone: the caller names the file)."""


def path_kind(path: str | os.PathLike) -> str | None:
    """What is at ``path``: ``"file"``, ``"directory"``, ``"other"`` (a device, FIFO or socket) or ``None`` (nothing).

    Raises:
        Refused: a path the system cannot look up (too long, a loop of links, no permission), with its reason.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise Refused(f"its path cannot be looked up ({error.strerror or error})") from None
    except ValueError:  # a NUL byte in the path
        raise Refused("its path holds a NUL character") from None
    return "file" if stat.S_ISREG(mode) else "directory" if stat.S_ISDIR(mode) else "other"


_PACKAGE = Path(__file__).resolve().parent
#: Where shipped models lie: the package's data (installed), then a source checkout's ``models/`` (``agents/`` beside
#: it and ``pyproject.toml``).
SHIPPED = (_PACKAGE / "models",) + (
    (_PACKAGE.parent / "models",) if (_PACKAGE.parent / "pyproject.toml").is_file() else ()
)


def shipped_npz(name: str | os.PathLike, prefix: str) -> Path | None:
    """The shipped model ``<prefix><name>.npz`` that a bare ``name`` (letters, digits and ``_``, and no path here)
    names, as ``search:standard`` and ``jax:selfplay_standard`` do; ``None`` for anything else (a name that cannot
    be looked up too: the caller's own lookup of the path says why).
    """
    text = str(name)
    if not (text and text.replace("_", "").isalnum() and text.isascii()):
        return None
    try:
        if path_kind(text) is not None:
            return None
        found = [folder / f"{prefix}{text}.npz" for folder in SHIPPED if path_kind(folder / f"{prefix}{text}.npz")]
    except Refused:
        return None
    return found[0] if found else None


def npz_model_path(path: str | os.PathLike) -> tuple[Path, bool]:
    """``path``, or the ``model.npz`` of the run folder it names, and whether that is a ``.npz`` file.

    Raises:
        Refused: a path the system cannot look up (:func:`path_kind`).
    """
    kind = path_kind(path)
    if kind == "directory":
        path = Path(path) / "model.npz"
        kind = path_kind(path)
    path = Path(path)
    return path, kind == "file" and path.suffix == ".npz"


def missing_npz(text: str, kind: str, prefix: str) -> str:
    """Why the spec ``kind:text`` names no ``.npz`` model (:func:`npz_model_path` found none): the reason alone, with
    the model to give instead where one is plain. A model card's run folder (``models/search_standard_run``) keeps the
    run's record, not its model: that lies beside it (``models/search_standard.npz``, ``search:standard``).
    """
    try:
        folder = path_kind(text) == "directory"
    except Refused:
        folder = False
    if not folder:
        return "expected a .npz file (with its .json beside it), a run folder holding a model.npz, or a shipped name"
    reason = "it is a folder without a model.npz (a run folder holds one once its run has ended)"
    run = Path(text)
    beside = run.parent / f"{run.name.removesuffix('_run')}.npz"
    if run.name.endswith("_run") and path_kind(beside) == "file":
        name = beside.stem.removeprefix(prefix)
        shipped = shipped_npz(name, prefix)
        named = f" or {kind}:{name}" if shipped is not None and shipped.resolve() == beside.resolve() else ""
        return f"{reason}; this run's model lies beside it: give {beside}{named}"
    return f"{reason}; give the model's .npz file"


def resolve_npz(path: str | os.PathLike, kind: str, noun: str) -> Path:
    """The ``.npz`` a ``kind:PATH`` spec names: the file, a run folder's ``model.npz``, or a shipped model's name
    (``models/<kind>_<name>.npz``).

    Raises:
        ValueError: ``no <noun> at '<path>': <why>``: nothing there, or a path that cannot be looked up.
    """
    text = str(path)
    path = shipped_npz(text, f"{kind}_") or path
    try:
        path, found = npz_model_path(path)
    except Refused as error:
        raise ValueError(f"no {noun} at {text!r}: {error}") from None
    if not found:
        raise ValueError(f"no {noun} at {text!r}: {missing_npz(text, kind, f'{kind}_')}")
    return path


#: The most a model's JSON spec (the ``.json`` beside its arrays) may hold.
MAX_SPEC_BYTES = 2**16


def read_spec_json(path: str | os.PathLike, file_format: str) -> dict:
    """The JSON object of a model's spec file at ``path`` (the ``.json`` beside its arrays), read within
    :data:`MAX_SPEC_BYTES`, whose ``"format"`` is ``file_format``; the caller checks its other fields.

    Raises:
        Refused: no such file, one too large, not JSON, or not a ``file_format`` object.
    """
    name = os.path.basename(path)
    if path_kind(path) != "file":
        raise Refused(f"it has no {name} beside it (the network's spec)")
    with open(path, "rb") as file:
        content = file.read(MAX_SPEC_BYTES + 1)
    if len(content) > MAX_SPEC_BYTES:
        raise Refused(f"its {name} is larger than a spec may be ({MAX_SPEC_BYTES} bytes)")
    try:
        meta = json.loads(content)
    except (ValueError, RecursionError):
        raise Refused(f"its {name} is not JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != file_format:
        raise Refused(f"its {name} is not a {file_format!r} file")
    return meta


def open_zip(
    path: str | os.PathLike,
    *,
    what: str,
    max_bytes: int,
    max_members: int,
    member_bytes: Mapping[str, tuple[int, str]] | None = None,
) -> zipfile.ZipFile:
    """The zip at ``path``, once its central directory says it expands to at most ``max_bytes`` in at most
    ``max_members`` members (nothing is decompressed to find out).

    Args:
        path: The file.
        what: What the file is, for the reasons (``"a model"``).
        max_bytes: The most its members' declared sizes may add up to.
        max_members: The most members it may have.
        member_bytes: Tighter bounds of named members: name -> ``(bytes, what it holds)``.

    Raises:
        Refused: a bound passed.
        OSError, zipfile.BadZipFile, ...: no readable zip at ``path`` (:data:`READ_ERRORS`).
    """
    _check_end_record(path, what, max_bytes, max_members)
    archive = zipfile.ZipFile(path)
    try:
        members = archive.infolist()
        if len(members) > max_members:
            raise Refused(f"it has {len(members)} members ({what} has at most {max_members})")
        total = sum(member.file_size for member in members)
        if total > max_bytes:
            raise Refused(f"it expands to {total} bytes, more than {what} may ({max_bytes} bytes)")
        for name, (bound, holds) in (member_bytes or {}).items():
            size = sum(member.file_size for member in members if member.filename == name)
            if size > bound:
                raise Refused(f"its {name!r} takes {size} bytes, more than {holds} may ({bound} bytes)")
    except BaseException:
        archive.close()
        raise
    return archive


def _check_end_record(path: str | os.PathLike, what: str, max_bytes: int, max_members: int) -> None:
    """Refuses a zip whose size on disk, or whose end record's count of members or size of central directory, passes
    what ``max_bytes`` and ``max_members`` allow, reading only its last 64 KiB (and a ZIP64 record it points to).

    A file whose end record is not found is left to :mod:`zipfile`, which says it is not a zip.
    """
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        # Members' data (deflate may add a little), their local headers and directory entries, and the end records.
        most = max_bytes + max_bytes // 64 + 2 * max_members * DIRECTORY_ENTRY_BYTES + _END.size + 2**16
        if size > most:
            raise Refused(f"it takes {size} bytes on disk, more than {what} may ({most} bytes)")
        tail_start = max(0, size - _END.size - 2**16)
        file.seek(tail_start)
        tail = file.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < _END.size:
            return
        _, _, _, _, members, directory, _, _ = _END.unpack_from(tail, at)
        locator = tail_start + at - _END64_LOCATOR.size
        if (members == 0xFFFF or directory == 0xFFFFFFFF) and locator >= 0:  # ZIP64: the real values lie elsewhere
            file.seek(locator)
            signature, _, offset, _ = _END64_LOCATOR.unpack(file.read(_END64_LOCATOR.size))
            if signature == b"PK\x06\x07" and offset <= size - _END64.size:
                file.seek(offset)
                record = _END64.unpack(file.read(_END64.size))
                if record[0] == b"PK\x06\x06":
                    members, directory = record[7], record[8]
    if members > max_members:
        raise Refused(f"it has {members} members ({what} has at most {max_members})")
    if directory > max_members * DIRECTORY_ENTRY_BYTES:
        raise Refused(
            f"its central directory takes {directory} bytes, more than {what}'s {max_members} members may "
            f"({max_members * DIRECTORY_ENTRY_BYTES} bytes)"
        )


def read_member(archive: zipfile.ZipFile, name: str | zipfile.ZipInfo) -> bytes:
    """A member's bytes, never more than its declared size (which :func:`open_zip` bounded).

    Raises:
        Refused: no such member, or one whose data is not the size it declares.
    """
    try:
        info = name if isinstance(name, zipfile.ZipInfo) else archive.getinfo(name)
    except KeyError:
        raise Refused(f"it has no {name!r}") from None
    with archive.open(info) as member:
        content = member.read(info.file_size + 1)
    if len(content) != info.file_size:
        raise Refused(f"its {info.filename!r} is not the size the zip declares")
    return content


def read_arrays(archive: zipfile.ZipFile, kinds: str = "f") -> dict[str, np.ndarray]:
    """Every member of an ``.npz`` (``NAME.npy``) as an array, by ``NAME``: each header checked against the
    member's size before its data is read, plain numbers only (dtype kinds ``kinds``; no objects, no pickle).

    Raises:
        Refused: a member that is not an ``.npy`` array of those kinds whose header fits its bytes.
    """
    arrays = {}
    for info in archive.infolist():
        name = info.filename.removesuffix(".npy")
        content = read_member(archive, info)
        stream = io.BytesIO(content)
        try:
            read_header = _HEADERS.get(np.lib.format.read_magic(stream))
            if read_header is None:
                raise ValueError("an .npy format version other than 1.0 and 2.0")
            shape, fortran, dtype = read_header(stream)
        except (ValueError, TypeError, SyntaxError, EOFError) as error:
            detail = " ".join(str(error).split())[:120]
            raise Refused(f"its {info.filename!r} is not an .npy array ({detail})") from None
        if not info.filename.endswith(".npy") or dtype.kind not in kinds or dtype.hasobject or dtype.fields:
            raise Refused(f"its {info.filename!r} is not an array of plain numbers (dtype {str(dtype)[:40]})")
        count = int(np.prod(shape, dtype=object))  # Python ints: a header's huge shape cannot overflow
        if count * dtype.itemsize != len(content) - stream.tell():
            raise Refused(
                f"its {info.filename!r} declares a {shape} array of {dtype}, not the {len(content) - stream.tell()} "
                "bytes it holds"
            )
        array = np.frombuffer(content, dtype=dtype, count=count, offset=stream.tell())
        arrays[name] = array.reshape(shape, order="F" if fortran else "C")
    return arrays
