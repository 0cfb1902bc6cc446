"""What train.py and evaluate.py share on the command line: one-line errors and checked numbers."""

from __future__ import annotations

import argparse
import math


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def number(kind: type, low: float, inclusive: bool = True):
    """An argparse ``type``: a finite ``kind`` (``int`` or ``float``) that is >= ``low`` (or > ``low``)."""
    bound = f">= {low}" if inclusive else f"> {low}"
    noun = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun} {bound}, got {text!r}") from None
        if not math.isfinite(value) or not (value >= low if inclusive else value > low):
            raise argparse.ArgumentTypeError(f"expected {noun} {bound}, got {text!r}")
        return value

    return parse
