"""Helpers shared by the lab's reports: confidence intervals, rounding for JSON, names cut to a column, progress
bars and matplotlib figures.

Used by the solo evaluation (:mod:`yacht_lab.measure.evaluation`), the head to head
(:mod:`yacht_lab.measure.head_to_head`, :mod:`yacht_lab.measure.calibration`,
:mod:`yacht_lab.measure.head_to_head_report`), the sweep's results (:mod:`yacht_lab.sweep.report`) and training.
Separate so that no report imports another one for its helpers: each imports only this small module (numpy; tqdm and
matplotlib only when a bar or a plot is asked for).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np

Z_95 = 1.959963984540054  # two-sided 95% quantile of the normal distribution
#: The formats the reports' plots are written in (matplotlib's vector and raster ones), named by file extension.
PLOT_FORMATS = ("png", "pdf", "svg")


def mean_ci(values: np.ndarray, low: float = -math.inf, high: float = math.inf) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the mean and its normal-approximation 95% confidence interval, clipped to the values'
    range ``[low, high]`` (a regret's is [0, inf): the normal approximation alone can leave it).
    """
    values = np.asarray(values, dtype=np.float64)
    mean = float(values.mean())
    half = Z_95 * sample_std(values) / math.sqrt(len(values))
    return mean, max(mean - half, low), min(mean + half, high)


def sample_std(values: np.ndarray) -> float:
    """The sample standard deviation (``ddof=1``); 0.0 for a single value."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def rounded_floats(value):
    """``value`` with every float rounded to 6 decimals (lists and dicts recursively)."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: rounded_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded_floats(v) for v in value]
    return value


#: Where a word of an agent's name ends (``selfplay_standard``, ``runs/x/model.zip``).
_WORD_ENDS = "_/-."


def short_name(name: str, width: int = 24) -> str:
    """An agent's name cut to a table column: its kind and its end (``ppo:...model.zip``, ``search:...standard``),
    which tell agents apart where the middle of a path does not.
    """
    if len(name) <= width:
        return name
    kind, colon, rest = name.partition(":")
    keep = width - len(kind) - len(":...")
    if colon and keep >= 4:
        tail = rest[-keep:]
        if rest[-keep - 1] not in _WORD_ENDS:  # from the next whole word: "...standard", not "...ay_standard"
            cuts = [at for at in map(tail.find, _WORD_ENDS) if 0 <= at < len(tail) - 1]
            tail = tail[min(cuts) + 1 :] if cuts else tail
        return f"{kind}:...{tail}"
    return "..." + name[-(width - 3) :]


def short_names(names: Sequence[str], width: int = 24) -> dict[str, str]:
    """Each name cut to ``width`` (:func:`short_name`), or every name whole where two cuts would read the same:
    distinct agents stay distinct in a table.
    """
    short = {name: short_name(name, width) for name in names}
    return short if len(set(short.values())) == len(short) else {name: name for name in names}


#: A progress bar counted in a game's turns and shown in whole games.
_BAR_FORMAT = "{l_bar}{bar}| {n:.0f}/{total:.0f} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


def progress_bar(total: int, turns: int = 1, description: str | None = None):
    """A tqdm bar of ``total`` games on stderr (only on a terminal), or ``None`` without tqdm (the train extra).

    Args:
        total: The games.
        turns: Steps a game is counted in (``bar.update`` takes them): a game's turns, so that the bar moves within
            games that all end together at their last turn; it shows whole games, and their rate.
        description: Shown before the bar (the agent playing).
    """
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    scale = {"unit_scale": 1 / turns, "bar_format": _BAR_FORMAT} if turns > 1 else {}
    return tqdm(total=total * turns, unit="game", disable=None, leave=False, desc=description, **scale)


def figure_bytes(fig, fmt: str) -> bytes:
    """A finished matplotlib figure as the bytes of a ``fmt`` file (laid out tight, 100 dpi)."""
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=100)
    return buffer.getvalue()


def pyplot_for(fmt: str):
    """``matplotlib.pyplot`` on the file-only Agg backend, once ``fmt`` is known to be a :data:`PLOT_FORMATS` one.

    Raises:
        ValueError: another format, or no matplotlib (the ``train`` extra).
    """
    if fmt not in PLOT_FORMATS:
        raise ValueError(f"plot format must be one of {', '.join(PLOT_FORMATS)}, got {fmt!r}")
    try:
        import matplotlib
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'yacht-rl[train]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
