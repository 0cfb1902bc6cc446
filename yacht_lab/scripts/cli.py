"""What the command-line programs share: one-line errors, checked numbers and output paths, and descriptions in plain
text.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

#: A Sphinx role in a docstring (``:func:`yacht_lab.train```, ``:class:`~x.Y```): ``--help`` shows its target alone.
_ROLE = re.compile(r":[a-z]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")


def description(doc: str) -> str:
    """A module docstring's first paragraph as ``--help`` shows it: plain text, without reST's double backticks or
    Sphinx's roles (``:func:`x``` shows as ``x``).
    """
    return _ROLE.sub(r"\1", doc.split("\n\n")[0]).replace("``", "")


def error_line(prog: str, error: BaseException, advice: str) -> str:
    """The one line a program prints for an error it ends on with status 2: a ``ValueError`` or ``OSError``'s message
    on one line, or XLA's ``RESOURCE_EXHAUSTED`` (a JAX computation out of device memory: a ``RuntimeError`` whose
    message runs to many lines) with ``advice``. Any other error is raised again.
    """
    if isinstance(error, (ValueError, OSError)):
        return f"{prog}: error: " + " ".join(str(error).split())
    if isinstance(error, RuntimeError) and "RESOURCE_EXHAUSTED" in str(error):
        first = " ".join(str(error).split("\n")[0].split())
        return f"{prog}: error: the device ran out of memory ({first}): {advice}"
    raise error


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Prints the one-line error and exits with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


#: What a number on the command line may be written as: plain ASCII digits (``int()`` and ``float()`` also take
#: spaces around them, ``_`` between digits and other scripts' digits, so ``' 2'``, ``1_0`` and ``'٢'`` would pass).
_INT_TEXT = re.compile(r"-?[0-9]+")
_FLOAT_TEXT = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


def number(kind: type, low: float, inclusive: bool = True, high: float | None = None):
    """An argparse ``type``: a finite ``kind`` (``int`` or ``float``) that is >= ``low`` (or > ``low``) and, if
    ``high`` is given, <= ``high``, written in plain ASCII digits (an int: ``-?[0-9]+``; a float may add a point
    and an exponent). ``' 2'``, ``1_000`` or ``'２'`` are refused, not read as 2, 1000 and 2.
    """
    bound = f">= {low}" if inclusive else f"> {low}"
    if high is not None:
        bound += f" and <= {high:,}"
    noun = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            if not (_INT_TEXT if kind is int else _FLOAT_TEXT).fullmatch(text):
                raise ValueError(text)
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun} {bound}, got {text!r}") from None
        ok = math.isfinite(value) and (value >= low if inclusive else value > low)
        if not ok or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {noun} {bound}, got {text!r}")
        return value

    return parse


def output_file(text: str) -> Path:
    """An argparse ``type``: a path where a file can be written now, checked before the work whose results it will
    hold, so that a bad path costs no time: a regular file, or a new one in an existing folder where a file can
    really be created (a symlink is written through). See :func:`yacht_env.util.check_writable`.
    """
    from yacht_env.util import check_writable

    try:
        check_writable(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return Path(text)
