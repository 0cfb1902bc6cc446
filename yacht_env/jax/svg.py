"""A Yacht table as an SVG picture: the dice of the player on turn and every player's sheet (``YachtPgx``'s).

pgx's own games draw through pgx's visualizer, which knows only the games pgx ships; a game outside pgx draws its
state itself, as pgx's MinAtar states do (``State.to_svg`` / ``save_svg``), so ``YachtPgx``'s ``State`` hands its
table to :func:`table_svg`: what a notebook shows (``State._repr_html_``) and what ``state.save_svg(path)``
writes. A batch of tables (a ``vmap``-ed state) is tiled in a grid, as pgx's visualizer tiles its games.

A table reads top to bottom: a title bar (the game, the turn of the player on turn, who plays or "game over"), the
five dice showing with the re-rolls left, then the sheet: a row per box, the preset's bonus rows
(:func:`yacht_env.render.bonus_rows`) and the totals, a column per player, the player on turn's column shaded. An
open box is blank. Plain SVG text: numpy and the rules only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from yacht_env import rules as R
from yacht_env.render import PIP_LAYOUTS, bonus_rows, game_title

THEMES: dict[str, dict[str, str]] = {
    "light": {
        "paper": "#f7f3e8",
        "band": "#eae4d4",
        "ink": "#191923",
        "faint": "#8c877d",
        "bar": "#283c5a",
        "bar_ink": "#fafafa",
        "turn": "#d2ddf0",
        "die": "#ffffff",
        "pip": "#141414",
    },
    "dark": {
        "paper": "#1e1e1e",
        "band": "#2a2a2a",
        "ink": "#e6e6e6",
        "faint": "#8c8c8c",
        "bar": "#283c5a",
        "bar_ink": "#fafafa",
        "turn": "#33415a",
        "die": "#e6e6e6",
        "pip": "#141414",
    },
}
"""The colours of pgx's two themes (``color_theme="light"`` or ``"dark"``)."""

_PAD = 12
_TITLE_H = 28
_DIE = 36
_DIE_GAP = 8
_DICE_TOP = _TITLE_H + 10
_INFO_Y = _DICE_TOP + _DIE + 18  # the baseline of "2 rolls left"
_SHEET_TOP = _INFO_Y + 12  # the top of the players' header row
_ROW = 20
_RULE = 3  # the line above the totals
_LABEL_W = 124
_COL_W = 44
_FONT = 'font-family="sans-serif" font-size="13"'


def tile_size(rules: R.Rules, num_players: int) -> tuple[int, int]:
    """Width and height of one table's picture (fixed per preset and table size, whatever the state)."""
    rows = rules.num_categories + _num_bonus_rows(rules) + 1
    width = max(2 * _PAD + 5 * _DIE + 4 * _DIE_GAP, 2 * _PAD + _LABEL_W + num_players * _COL_W)
    return width, _SHEET_TOP + (rows + 1) * _ROW + _RULE + _PAD


def table_svg(rules: R.Rules, game: Any, *, color_theme: str = "light", scale: float = 1.0) -> str:
    """Draws a table, or a batch of tables in a grid, as an SVG document.

    Args:
        rules: The preset the tables play.
        game: A :class:`yacht_env.jax.GameState` (jax or numpy arrays) of one table, or of a batch of tables (any
            leading batch shape: the tables are drawn in row-major order).
        color_theme: ``"light"`` or ``"dark"``.
        scale: The picture's size factor (the drawing is the same).

    Returns:
        The SVG text (``<svg ...>...</svg>``).

    Raises:
        ValueError: an unknown theme or a scale that is not a positive number.
    """
    if color_theme not in THEMES:
        raise ValueError(f"color_theme must be 'light' or 'dark', got {color_theme!r}")
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not 0 < scale < math.inf:
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    colors = THEMES[color_theme]
    batch = np.shape(game.current_player)
    n = math.prod(batch)
    tables = {
        name: np.asarray(value).reshape(n, *np.shape(value)[len(batch) :]) for name, value in game._asdict().items()
    }
    num_players = tables["sheet"].shape[1]
    # pgx's visualizer's grid: ceil(sqrt(n)) columns, and a row fewer where the last one would be empty.
    columns = math.ceil(math.sqrt(n - 0.1))
    grid_rows = columns if n - (columns - 1) ** 2 >= columns else columns - 1
    width, height = tile_size(rules, num_players)
    parts = []
    for i in range(n):
        x, y = (i % columns) * width, (i // columns) * height
        table = {name: value[i] for name, value in tables.items()}
        parts.append(f'<g transform="translate({x},{y})">{"".join(_table(rules, table, colors, width, height))}</g>')
    w, h = columns * width, grid_rows * height
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * scale:g}" height="{h * scale:g}" '
        f'viewBox="0 0 {w} {h}" {_FONT}>{"".join(parts)}</svg>'
    )


def _num_bonus_rows(rules: R.Rules) -> int:
    return len(bonus_rows(rules, np.full(rules.num_categories, -1), 0, 0))


def _text(x: float, y: float, text: str, fill: str, anchor: str = "start", bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return f'<text x="{x}" y="{y}" fill="{fill}" text-anchor="{anchor}"{weight}>{text}</text>'


def _rect(x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> str:
    return f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}"{extra}/>'


def _die(x: float, y: float, face: int, colors: dict[str, str]) -> str:
    pips = "".join(
        f'<circle cx="{x + _DIE * (1 + col) / 4:g}" cy="{y + _DIE * (1 + row) / 4:g}" r="{_DIE * 0.1:g}" '
        f'fill="{colors["pip"]}"/>'
        for row, col in PIP_LAYOUTS[face]
    )
    face_rect = _rect(x, y, _DIE, _DIE, colors["die"], f' rx="6" stroke="{colors["faint"]}" stroke-width="1.5"')
    return f'<g class="die">{face_rect}{pips}</g>'


def _table(rules: R.Rules, t: dict[str, np.ndarray], colors: dict[str, str], width: int, height: int) -> list[str]:
    """One table's elements, its top left corner at (0, 0)."""
    seat, over = int(t["current_player"]), bool(t["terminated"])
    num_players = t["sheet"].shape[0]
    turn = min(int(t["turn"][seat]) + 1, rules.num_turns)
    out = [_rect(0, 0, width, height, colors["paper"]), _rect(0, 0, width, _TITLE_H, colors["bar"])]
    out.append(_text(_PAD, 19, f"{game_title(rules)}, turn {turn}/{rules.num_turns}", colors["bar_ink"], bold=True))
    out.append(_text(width - _PAD, 19, "game over" if over else f"P{seat + 1} to play", colors["bar_ink"], "end"))
    if not over:
        for i, face in enumerate(R.ROLLS[int(t["roll"][seat])]):
            out.append(_die(_PAD + i * (_DIE + _DIE_GAP), _DICE_TOP, int(face), colors))
        left = int(t["rolls_left"][seat])
        out.append(_text(_PAD, _INFO_Y, f"{left} roll{'' if left == 1 else 's'} left", colors["ink"]))
    bonuses = [bonus_rows(rules, t["sheet"][p], int(t["total"][p]), int(t["upper"][p])) for p in range(num_players)]
    labels = [name.replace("_", " ") for name in rules.categories] + [label for label, _ in bonuses[0]]
    total_top = _SHEET_TOP + (len(labels) + 1) * _ROW + _RULE
    column = _PAD + _LABEL_W  # the first player's column
    for k in range(0, len(labels), 2):  # banded rows, so a name can be followed to its points
        out.append(_rect(_PAD, _SHEET_TOP + (k + 1) * _ROW, width - 2 * _PAD, _ROW, colors["band"]))
    if not over:
        out.append(_rect(column + seat * _COL_W, _SHEET_TOP, _COL_W, total_top + _ROW - _SHEET_TOP, colors["turn"]))
    for k, label in enumerate(labels):
        out.append(_text(_PAD + 4, _SHEET_TOP + (k + 2) * _ROW - 6, label, colors["ink"]))
    out.append(_rect(_PAD, total_top - _RULE, width - 2 * _PAD, _RULE, colors["ink"]))
    out.append(_text(_PAD + 4, total_top + _ROW - 6, "total", colors["ink"], bold=True))
    for p in range(num_players):
        right = column + (p + 1) * _COL_W - 6
        out.append(_text(right, _SHEET_TOP + _ROW - 6, f"P{p + 1}", colors["faint"], "end", bold=p == seat))
        points = [str(int(v)) if v >= 0 else "" for v in t["sheet"][p]] + [value for _, value in bonuses[p]]
        for k, shown in enumerate(points):
            if shown:
                out.append(_text(right, _SHEET_TOP + (k + 2) * _ROW - 6, shown, colors["ink"], "end"))
        out.append(_text(right, total_top + _ROW - 6, str(int(t["total"][p])), colors["ink"], "end", bold=True))
    return out
