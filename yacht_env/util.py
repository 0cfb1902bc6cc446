"""Atomic file writes and checked array files, shared by every layer that writes files (caches, evaluation, training).

(The project's other small shared check, "an int, not a bool", is :func:`yacht_env.rules.is_int`: the
rules core must load on its own, so it cannot import this module.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import time
import warnings
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

TEMP_SUFFIX = ".tmp"
#: The exact names :func:`_temp_name` gives: ``.<name>.<pid>-<8 hex digits>.tmp``. :func:`remove_stale_temps`
#: removes only these, never another program's ``.notes.123.tmp`` or ``results.npz.bak.tmp`` in a shared folder.
TEMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>[1-9][0-9]{0,9})-[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))


#: The longest file name the usual file systems take (ext4, XFS, btrfs, APFS, NTFS: 255 bytes or characters).
NAME_MAX = 255


#: The environment variable naming the cache folder of the solver and of everything kept beside it.
CACHE_DIR_ENV = "YACHT_RL_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/yacht-rl")


def cache_folder(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``cache_dir``, else ``$YACHT_RL_CACHE_DIR``, else ``~/.cache/yacht-rl``, its ``~`` expanded.

    Raises:
        ValueError: a folder whose ``~`` or ``~user`` cannot be expanded (no such user, no home).
    """
    source = ""
    if cache_dir is None:
        source = f" (from ${CACHE_DIR_ENV})" if os.environ.get(CACHE_DIR_ENV) else ""
        cache_dir = os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR
    try:
        return Path(cache_dir).expanduser()
    except RuntimeError:  # "~nosuchuser/x", or "~" without a home directory
        home = os.fspath(cache_dir).split("/", 1)[0]
        raise ValueError(
            f"cannot use the cache folder '{os.fspath(cache_dir)}'{source}: '{home}' names no user's home directory"
        ) from None


def cache_stem(name: str) -> str:
    """A rules name as the start of a cache file's name: other characters than ``A-Za-z0-9_.-`` as ``_``, 40 at
    most.
    """
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:40]


def _temp_name(path: Path) -> Path:
    # Hidden and ending in .tmp, so no glob of the real files (``step_*.zip``, ``*.npz``) matches it; the
    # pid lets a later run tell a stale file (its writer is gone) from one being written right now. The name's
    # part is cut so that the temporary name fits where the name itself does (a 255-byte name is a legal one).
    tail = f".{os.getpid()}-{secrets.token_hex(4)}{TEMP_SUFFIX}"
    name = path.name
    while name and len(os.fsencode(f".{name}{tail}")) > NAME_MAX:
        name = name[:-1]
    return path.with_name(f".{name or '_'}{tail}")


def _default_mode() -> int:
    umask = os.umask(0)  # the only way to read the umask is to set it; put it straight back
    os.umask(umask)
    return 0o666 & ~umask


def _refuse_a_loop(path: str | os.PathLike) -> None:
    """Raises ``OSError`` (ELOOP) where ``path`` is a loop of symlinks: ``realpath`` would return the path itself,
    and the write would replace the link.
    """
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise


def writable_target(path: str | os.PathLike) -> Path:
    """The file a write to ``path`` lands in: ``path`` itself, or the regular file a symlink points to.

    A read-only file (no write permission for this user, or no write bit at all, which root would otherwise
    ignore) is refused rather than replaced: an atomic write renames a new file over it, which its mode
    cannot stop, so the mode is honoured here.

    Raises:
        ValueError: ``path`` names a directory, a special file (FIFO, device, socket) or a read-only file, or
            cannot be looked at (a name too long, a loop of symlinks, no permission to search its folder).
    """
    try:
        _refuse_a_loop(path)
        target = Path(os.path.realpath(path))
        # The path itself too: /dev/stdout on a pipe resolves to a name that does not exist, "pipe:[...]".
        for candidate in (Path(path), target):
            if candidate.exists() and not candidate.is_file():
                kind = "a directory" if candidate.is_dir() else "not a regular file"
                raise ValueError(f"cannot write '{path}': it is {kind}")
        if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
            raise ValueError(f"cannot write '{path}': it is read-only (make it writable or remove it first)")
    except OSError as error:
        raise ValueError(f"cannot write '{path}': {error.strerror or error}") from None
    return target


def check_writable(path: str | os.PathLike) -> Path:
    """Checks, by really creating and removing a file beside it, that ``path`` can be written; returns its target.

    For checks before a long computation: a permission bit, a read-only file system or a full inode table
    shows here and not after the work is done. Only a hidden temporary file (see :func:`atomic_output`) is
    created, and it is removed at once.

    Raises:
        ValueError: ``path`` is a directory or a special file, its folder is missing or not a folder, or a
            file cannot be created there.
    """
    target = writable_target(path)
    folder = target.parent
    if not folder.is_dir():
        problem = "does not exist" if not folder.exists() else "is not a folder"
        raise ValueError(f"cannot write '{path}': folder '{folder}' {problem}")
    probe = _temp_name(target)
    try:
        probe.touch(exist_ok=False)
    except OSError as error:
        raise ValueError(f"cannot write '{path}': {error.strerror or error}") from None
    probe.unlink(missing_ok=True)
    return target


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, follow_links: bool = True) -> Iterator[Path]:
    """Yields a temporary path beside ``path``; when the block ends without error it replaces ``path``.

    The file is never seen half-written: readers get the old file or the whole new one. A symlink is
    written through (its target is replaced, the link stays), unless ``follow_links`` is false: then the
    link itself is replaced by the new file and its target is never touched (a cache's own files, where a
    link can only be planted). The new file gets the mode of the file it replaces, else the usual one
    (``0o666`` less the umask, not ``mkstemp``'s private ``0600``). On an error (or Ctrl-C) the temporary
    file is removed and ``path`` is untouched.

    Raises:
        ValueError: ``path`` is a directory or a special file.
    """
    if not follow_links and os.path.islink(path):
        target, mode = Path(path), _default_mode()
    else:
        target = writable_target(path)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else _default_mode()
    temp = _temp_name(target)
    try:
        yield temp
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike, data: bytes | str, follow_links: bool = True) -> None:
    """Writes ``data`` (text is UTF-8 encoded) to ``path`` atomically; see :func:`atomic_output`."""
    if isinstance(data, str):
        data = data.encode()
    with atomic_output(path, follow_links) as temp:
        temp.write_bytes(data)


def remove_stale_temps(folder: str | os.PathLike, legacy: Iterable[str] = (), legacy_age: float = 3600.0) -> list[Path]:
    """Removes temporary files of :func:`atomic_output` in ``folder`` whose writing process is gone.

    Only names of the exact form :data:`TEMP_NAME` (``.<name>.<pid>-<8 hex>.tmp``) are touched: other programs'
    files in a shared folder (``.notes.123.tmp``, ``results.npz.bak.tmp``) are left alone.

    A process killed with ``kill -9`` cannot clean up after itself; the next run calls this. Files of a
    process still alive (another run writing now) are left alone. A missing folder has nothing to clean.

    Args:
        folder: The folder (not searched recursively).
        legacy: Glob patterns of temporary files named by older versions, without a pid: they are removed
            once their last change is ``legacy_age`` seconds old (no write of this project takes that long).
        legacy_age: See ``legacy``.

    Returns:
        The paths removed.
    """
    removed = []
    folder = Path(folder)
    now = time.time()
    for pattern in legacy:
        for temp in folder.glob(pattern):
            with contextlib.suppress(OSError):
                if temp.is_file() and now - temp.stat().st_mtime >= legacy_age:
                    temp.unlink()
                    removed.append(temp)
    for temp in folder.glob(f".*{TEMP_SUFFIX}"):
        match = TEMP_NAME.fullmatch(temp.name)
        if match is None:
            continue  # not one of ours: only the exact names of _temp_name are removed
        pid = int(match["pid"])
        if pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            temp.unlink()
            removed.append(temp)
    return removed


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike, busy: str) -> Iterator[None]:
    """Holds ``folder`` exclusively while the block runs (one process writing in it at a time).

    The lock is the kernel's ``flock`` on the folder itself: nothing is written, and a process that dies (even by
    ``kill -9``) lets go of it at once, so no stale lock can outlive its writer. Where ``fcntl`` does not exist
    (Windows), nothing is locked.

    Raises:
        ValueError: ``busy``, where another process (or another block of this one) holds the folder now.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        yield
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(busy) from None
        yield
    finally:
        os.close(descriptor)  # closing the only descriptor releases the lock


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


# --------------------------------------------------------------------------------------------------
# Checked array files: the disk caches of the solver and of the score distributions
# --------------------------------------------------------------------------------------------------
def is_bare_name(value: object, suffixes: tuple[str, ...]) -> bool:
    """Whether ``value`` is a name of something shipped rather than a path: a string with no path separator that
    does not end in one of ``suffixes`` (``ppo:standard``, ``--config yahtzee``; ``./standard`` means the file).
    """
    if not isinstance(value, str):
        return False
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    return not any(sep in value for sep in separators) and not value.lower().endswith(suffixes)


def _crc(key: str, arrays: dict) -> int:
    """CRC-32 of the key and the arrays: catches damage (not tampering by an adversary), and is fast."""
    checksum = zlib.crc32(key.encode())
    for name in sorted(arrays):
        checksum = zlib.crc32(np.ascontiguousarray(arrays[name]).data, checksum)
    return checksum


#: Temporary names of the caches of old versions: mkstemp's ``<name>-<16 hex>.npz<8 random>.tmp`` beside the cache
#: files ``<name>-<16 hex>.npz`` (``<name>-dist-<16 hex>.npz``), exactly: no other ``*.npz*.tmp`` is touched.
LEGACY_CACHE_TEMPS = ("*-" + "[0-9a-f]" * 16 + ".npz" + "[a-z0-9_]" * 8 + TEMP_SUFFIX,)


def save_arrays(path: Path, key: str, arrays: dict) -> None:
    """Writes ``arrays`` (name -> numpy array) to an ``.npz`` at ``path`` with ``key`` and a checksum, atomically.

    Temporary files of writers killed earlier are removed first (never failing for that).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        remove_stale_temps(path.parent, legacy=LEGACY_CACHE_TEMPS)
    with atomic_output(path) as temp, open(temp, "wb") as file:  # a file object: np.savez adds no ".npz"
        np.savez(file, key=np.array(key), checksum=np.array(_crc(key, arrays), dtype=np.int64), **arrays)


def load_arrays(path: Path, key: str, specs: dict) -> dict | None:
    """The arrays saved by :func:`save_arrays` at ``path``, or ``None`` unless every check passes.

    Args:
        path: The file.
        key: The key it must carry (what was computed, and by which version).
        specs: name -> ``(shape, dtype)`` of every array expected; all must be finite.
    """
    with contextlib.suppress(OSError):
        remove_stale_temps(path.parent, legacy=LEGACY_CACHE_TEMPS)
    if not path.is_file():
        return None
    try:
        # Opened here, not by np.load: np.load leaves its file open when a truncated zip fails to parse.
        with open(path, "rb") as file, np.load(file, allow_pickle=False) as data:
            stored_key, checksum = str(data["key"][()]), int(data["checksum"][()])
            arrays = {name: data[name] for name in specs}
    except Exception:  # a damaged file can fail in many ways (zip, npy header, truncation); none is trusted
        return None
    ok = stored_key == key and all(
        arrays[name].shape == tuple(shape) and arrays[name].dtype == np.dtype(dtype)
        for name, (shape, dtype) in specs.items()
    )
    ok = ok and checksum == _crc(key, arrays) and all(np.isfinite(array).all() for array in arrays.values())
    return arrays if ok else None


def memoised_cache(memo: dict, what: str, key, path: Path, load, compute, save):
    """The memo's ``key`` entry, else ``load(path)`` (``None`` when missing or damaged), else ``compute()``
    saved with ``save(path, result)``; a cache folder that cannot be written, or a directory, FIFO, device or
    read-only file at ``path``, only warns (naming ``what``).
    """
    if key in memo:
        return memo[key]
    result = load(path)
    if result is None:
        result = compute()
        try:
            save(path, result)
        except (OSError, ValueError) as error:  # ValueError: a directory, FIFO or device at the path (writable_target)
            warnings.warn(f"could not write the {what} {path}: {error}", RuntimeWarning, stacklevel=3)
    memo[key] = result
    return result
