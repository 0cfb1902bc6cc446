"""Zip files a user names (a PPO model's ``.zip``, a JAX policy's ``.npz``), read within bounds.

The central directory is checked before anything is decompressed: how many members there are, what each expands to
and what all expand to together. No member is read past the size it declares, and an array member's ``.npy`` header
must declare no more than the member holds: a zip bomb, or a header that asks for gigabytes, is refused at once, in
one line, before any memory is taken for it.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import zipfile
from collections.abc import Mapping

import numpy as np

#: What a file's own errors may be when it is damaged or not a zip (besides :class:`Refused`): the callers turn
#: them into one ``ValueError`` line naming the file.
READ_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError)

#: The ``.npy`` header readers, by format version (numpy writes 1.0, and 2.0 for headers over 64 KiB).
_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


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
