"""The one reader of the lab's YAML files (training configs, sweep files, saved sweeps): bounded and alias-free.

A configuration file is a few kilobytes of plain values. :func:`read_yaml` reads at most :data:`MAX_YAML_BYTES`
and refuses YAML aliases (a few lines of ``*name`` can expand into billions of values), so that no file handed to
``train.py`` or ``sweep.py`` can exhaust memory while it is read; every failure is one ``ValueError`` line.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

__all__ = ["MAX_YAML_BYTES", "read_yaml"]

#: The largest config or sweep file read (the shipped ones are a few KB).
MAX_YAML_BYTES = 1 << 20


class _PlainLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without aliases: ``*name`` can make a few lines expand into billions of values (a
    configuration file never needs one), so an alias is refused where it is read.
    """

    def compose_node(self, parent, index):  # noqa: D102 - PyYAML's hook
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"aliases (*{event.anchor}) are not accepted; write the values out", event.start_mark
            )
        return super().compose_node(parent, index)


def read_yaml(path: str | os.PathLike, what: str = "config") -> Any:
    """The contents of a YAML file (``what`` names it in errors: ``config``, ``sweep``).

    At most :data:`MAX_YAML_BYTES` (1 MiB) are read, and YAML aliases are refused: a small file cannot expand.

    Raises:
        ValueError: missing or unreadable file, too large, not UTF-8 text (a binary file), bad YAML or an alias
            (one line).
    """
    try:
        with open(path, "rb") as file:
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
        if isinstance(error, yaml.MarkedYAMLError) and error.problem and "aliases" in error.problem:
            first = f"{error.problem} (line {error.problem_mark.line + 1})"
        raise ValueError(f"{what} {str(path)!r} is not valid YAML: {first}") from None
