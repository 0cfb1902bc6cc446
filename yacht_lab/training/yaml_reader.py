"""The one reader of the lab's YAML files (training configs, sweep files, saved sweeps): bounded and alias-free.

A configuration file is a few kilobytes of plain values. :func:`read_yaml` reads at most :data:`MAX_YAML_BYTES`,
refuses YAML aliases (a few lines of ``*name`` can expand into billions of values) and values nested deeper than
:data:`MAX_YAML_DEPTH` (PyYAML builds nested values by recursion), so that no file handed to ``train.py`` or
``sweep.py`` can exhaust memory or the stack while it is read; and a key written twice in one mapping (PyYAML keeps
the last silently, so an edit further down a file would undo one above it unseen). Every failure is one
``ValueError`` line.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import yaml

__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "read_yaml"]

#: The largest config or sweep file read (the shipped ones are a few KB).
MAX_YAML_BYTES = 1 << 20
#: The deepest nesting of values read (a config or sweep file nests three or four levels; ``[[[...]]]`` 100,000
#: levels deep is 200 KB, and PyYAML's composer recurses once a level).
MAX_YAML_DEPTH = 64


class _Refused(yaml.composer.ComposerError):
    """What the reader refuses in a file that is valid YAML (its ``problem`` is the one line to show)."""


class _PlainLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without aliases and of bounded depth: ``*name`` can make a few lines expand into billions
    of values (a configuration file never needs one), so an alias is refused where it is read; a value nested past
    :data:`MAX_YAML_DEPTH` levels is refused before the composer's recursion reaches Python's limit.
    """

    _depth = 0

    def compose_node(self, parent, index):  # noqa: D102 - PyYAML's hook
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(
                None, None, f"aliases (*{event.anchor}) are not accepted; write the values out", event.start_mark
            )
        if self._depth >= MAX_YAML_DEPTH:
            event = self.peek_event()
            raise _Refused(None, None, f"values are nested more than {MAX_YAML_DEPTH} levels deep", event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):  # noqa: D102 - PyYAML's hook
        mapping = super().construct_mapping(node, deep=deep)
        if isinstance(node, yaml.MappingNode) and len(mapping) < len(node.value):  # a key written twice
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise _Refused(None, None, f"the key {key!r} is written twice; keep one", key_node.start_mark)
                seen.add(key)
        return mapping


def read_yaml(path: str | os.PathLike, what: str = "config") -> Any:
    """The contents of a YAML file (``what`` names it in errors: ``config``, ``sweep``).

    At most :data:`MAX_YAML_BYTES` (1 MiB) are read, YAML aliases are refused (a small file cannot expand), and so
    are values nested more than :data:`MAX_YAML_DEPTH` (64) levels deep, and a key written twice in one mapping.

    Only a regular file is read (a FIFO or a device is refused at once, never waited on).

    Raises:
        ValueError: missing or unreadable file, not a regular file, too large, not UTF-8 text (a binary file), bad
            YAML, an alias, too deep a nesting or a duplicate key (one line).
    """
    try:
        # Without blocking: a FIFO (or a device) would wait for a writer forever; only a regular file is read.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            os.close(descriptor)
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise ValueError(f"cannot read {what} {str(path)!r}: it is {kind}")
        with os.fdopen(descriptor, "rb") as file:
            data = file.read(MAX_YAML_BYTES + 1)
    except OSError as error:
        raise ValueError(f"cannot read {what} {str(path)!r}: {error.strerror or error}") from None
    if len(data) > MAX_YAML_BYTES:
        raise ValueError(f"{what} {str(path)!r} is over {MAX_YAML_BYTES:,} bytes: not a config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{what} {str(path)!r} is not a YAML text file: byte {error.start} is not UTF-8 (a binary file?)"
        ) from None
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - a SafeLoader without aliases
    except yaml.YAMLError as error:
        first = str(error).splitlines()[0] if str(error) else "invalid YAML"
        if isinstance(error, _Refused):
            first = f"{error.problem} (line {error.problem_mark.line + 1})"
        raise ValueError(f"{what} {str(path)!r} is not valid YAML: {first}") from None
