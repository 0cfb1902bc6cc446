"""A JAX run's memory: the estimate checked before anything is written, against the memory the process may really use,
and the device running out of memory all the same, as one line.

:func:`check_memory` compares :func:`yacht_lab.training.schema.jax_memory_bytes` with the device's limit: a GPU's
``bytes_limit``, or on the CPU :func:`memory_limit`, the least of this machine's memory, the address space the process
has left under its ``ulimit -v`` (``RLIMIT_AS``) and its cgroup's limit (v2 ``memory.max``, v1
``memory.limit_in_bytes``, of its own cgroup and those above it): a container or a job scheduler gives a process far
less than the machine has. What the estimate misses is caught where it happens: :func:`out_of_memory` tells XLA's
``RESOURCE_EXHAUSTED`` error (``jax.errors.JaxRuntimeError``, ``XlaRuntimeError`` before it) from others.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from yacht_agents.jax_policy import out_of_memory
from yacht_lab.training.config import TrainConfig
from yacht_lab.training.schema import jax_memory_bytes

__all__ = ["check_memory", "memory_limit", "out_of_memory"]

#: A cgroup limit at or above this is no limit (cgroup v1 writes 2 ** 63 rounded down to a page for "none").
UNLIMITED = 2**60


def check_memory(config: TrainConfig) -> None:
    """Refuses, before anything is allocated or written, a run whose estimated memory
    (:func:`yacht_lab.training.schema.jax_memory_bytes`) is more than its device has: a GPU's memory limit, or on the
    CPU the memory this process may use (:func:`memory_limit`).

    Raises:
        ValueError: one line with both figures.
    """
    import jax

    need = jax_memory_bytes(config)
    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    have = (stats or {}).get("bytes_limit") or memory_limit()
    if have and need > have:
        raise ValueError(
            f"this JAX run would take about {need / 2**30:,.1f} GiB (jax.seeds x the network, rollout and eval.games); "
            f"its device ({device.platform}) has {have / 2**30:,.1f} GiB for it: make it smaller"
        )


def memory_limit(cgroup_root: str | os.PathLike = "/sys/fs/cgroup", proc: str | os.PathLike = "/proc") -> int | None:
    """The most memory this process may use, in bytes: the least of the machine's memory, the address space left under
    its ``RLIMIT_AS`` (the limit less what it maps already), and its cgroup's memory limit; ``None``: none is known.
    """
    limits = [_machine_memory(), _address_space_left(Path(proc)), _cgroup_limit(Path(cgroup_root), Path(proc))]
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def _machine_memory() -> int | None:
    """This machine's memory in bytes, where the system says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _address_space_left(proc: Path) -> int | None:
    """``RLIMIT_AS`` (``ulimit -v``) less the address space the process maps now (``VmSize``); ``None``: no limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = 0
    try:
        for line in (proc / "self" / "status").read_text().splitlines():
            if line.startswith("VmSize:"):
                mapped = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - mapped, 0)


def _cgroup_limit(root: Path, proc: Path) -> int | None:
    """The least memory limit of this process's cgroup and those above it (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``); ``None``: no limit, or no cgroup file to read.
    """
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    candidates: list[Path] = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        relative = path.strip().lstrip("/")
        if controllers == "":  # cgroup v2: one unified hierarchy
            candidates += _up_from(root, relative, "memory.max")
        elif "memory" in controllers.split(","):
            candidates += _up_from(root / "memory", relative, "memory.limit_in_bytes")
    values = [value for value in map(_read_limit, candidates) if value is not None]
    return min(values) if values else None


def _up_from(base: Path, relative: str, name: str) -> list[Path]:
    """``name`` in the cgroup folder ``base/relative`` and each folder above it up to ``base`` (inside a container's
    cgroup namespace the path may not exist as such: ``base``'s own file is then the one that applies).
    """
    parts = [part for part in relative.split("/") if part]
    return [base.joinpath(*parts[:depth], name) for depth in range(len(parts), -1, -1)]


def _read_limit(path: Path) -> int | None:
    """One cgroup limit file's bytes; ``None``: missing, unreadable, ``max`` or no real limit."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text.isdigit():  # "max": no limit
        return None
    value = int(text)
    return value if value < UNLIMITED else None
