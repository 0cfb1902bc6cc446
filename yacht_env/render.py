"""A pure-numpy picture of a Yacht game: the five dice and the score sheet as an RGB image.

This is what ``render_mode="rgb_array"`` returns (:func:`game_image`, one game's frame in every env), so video recorders
(Gymnasium's ``RecordVideo``, SB3's ``VecVideoRecorder``) and ``gymnasium.utils.play`` can show a game. It needs nothing
but numpy: text is drawn with a small 5x7 bitmap font defined below, scaled up by an integer factor.

It is also the one place that says what a sheet shows beyond the boxes' own points, for every view of a game (the
envs' ``ansi`` text and image, the terminal table): :func:`game_title` (Yacht, Yahtzee or Yatzy),
:func:`score_now` (what each open box would hold with the dice showing, the joker included, and only where the
forced joker allows a pick) and :func:`bonus_rows` (the upper bonus and the Yahtzee bonus of the family's sheets).

Frames are cheap (well under a millisecond on one core): everything that does not change during a game (the
background, row bands, category names, labels) is drawn once per sheet layout and cached, every die face and
every string is rasterised once and cached, and a frame is one copy of the background plus a few slice writes.

The image size depends only on the preset (its categories and bonus rows), never on the state, since video encoders
need every frame of a clip to have the same size.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from yacht_env import rules as R
from yacht_env.game import GameState

__all__ = [
    "FONT_SCALE",
    "PIP_LAYOUTS",
    "WIDTH",
    "bonus_rows",
    "die_box",
    "game_image",
    "game_title",
    "image_height",
    "row_box",
    "score_now",
    "sheet_image",
    "text_mask",
]


# --------------------------------------------------------------------------------------------------
# What a sheet shows: the game's name, what the dice would score now, the bonus rows
# --------------------------------------------------------------------------------------------------
_GAME_NAMES = {"yacht": "Yacht", "yahtzee": "Yahtzee", "yatzy": "Yatzy"}


def game_title(rules: R.Rules) -> str:
    """The game a preset plays, named after its five-of-a-kind box: ``"Yahtzee"``, ``"Yatzy"``, else ``"Yacht"``."""
    five = rules.five_of_a_kind_category
    return "Yacht" if five is None else _GAME_NAMES[rules.categories[five]]


def score_now(rules: R.Rules, roll: int, open_mask: int, upper: int = 0, armed: int = 0) -> list[int]:
    """Per box, what it would hold if the dice showing were scored there now (a joker's full points included):
    the sheet's entry-to-be (:func:`yacht_env.rules.pick_outcome`'s ``box``, bonuses apart); ``-1`` for a filled
    box and for an open one the forced joker's placement rules out (:func:`yacht_env.rules.legal_picks`).
    """
    k = np.arange(rules.num_categories)
    if rules.has_bonuses:
        box = R.pick_outcome(rules, roll, k, open_mask, upper, armed)[1]
        legal = R.legal_picks(rules, roll, open_mask)
    else:
        box, legal = R.score_table(rules)[roll], open_mask
    return np.where(legal >> k & 1, box, -1).tolist()


def bonus_rows(rules: R.Rules, sheet: Sequence[int], total: int, upper: int) -> tuple[tuple[str, str], ...]:
    """The rows a sheet shows after its boxes, as ``(label, value)`` text; none for Yacht's presets.

    * ``("upper bonus", ...)`` where the preset has an upper bonus: the upper subtotal toward it (``"45/63"``) while
      it can still be earned, then its points: ``"35"`` once earned, ``"0"`` once every upper box is filled short.
    * ``("yahtzee bonus", "100")`` where it has a Yahtzee bonus (named after the five-of-a-kind box): the points
      earned so far, ``total`` less the boxes' points and the upper bonus.

    Args:
        rules: The preset.
        sheet: One game's sheet (each box's own points, ``-1`` while open).
        total: The game's total, bonuses included.
        upper: The game's upper subtotal, capped at the threshold (``GameState.upper``).
    """
    rows = []
    sheet = np.asarray(sheet)
    earned = bool(rules.upper_bonus) and upper >= rules.upper_bonus_threshold
    if rules.upper_bonus:
        upper_boxes = [k for k, name in enumerate(rules.categories) if name in R.UPPER_CATEGORIES]
        if earned:
            shown = str(rules.upper_bonus)
        elif (sheet[upper_boxes] >= 0).all():
            shown = "0"
        else:
            shown = f"{int(upper)}/{rules.upper_bonus_threshold}"
        rows.append(("upper bonus", shown))
    if rules.yahtzee_bonus:
        five = rules.categories[rules.five_of_a_kind_category]
        so_far = int(total) - int(sheet[sheet >= 0].sum()) - rules.upper_bonus * earned
        rows.append((f"{five} bonus", str(so_far)))
    return tuple(rows)


# --------------------------------------------------------------------------------------------------
# Font: 5x7 glyphs, one string per glyph, rows separated by spaces ('#' = ink)
# --------------------------------------------------------------------------------------------------
_GLYPH_ROWS, _GLYPH_COLS = 7, 5
_FONT_SOURCE: dict[str, str] = {
    "A": ".###. #...# #...# ##### #...# #...# #...#",
    "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.",
    "D": "####. #...# #...# #...# #...# #...# ####.",
    "E": "##### #.... #.... ####. #.... #.... #####",
    "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####",
    "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
    "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
    "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.",
    "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
    "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.",
    "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.",
    "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
    "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
    "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
    "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####",
    "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
    "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.",
    "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.",
    "9": ".###. #...# #...# .#### ....# ...#. .##..",
    " ": "..... ..... ..... ..... ..... ..... .....",
    "_": "..... ..... ..... ..... ..... ..... #####",
    "-": "..... ..... ..... ##### ..... ..... .....",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    "=": "..... ..... ##### ..... ##### ..... .....",
    "/": "..... ....# ...#. ..#.. .#... #.... .....",
    ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    ".": "..... ..... ..... ..... ..... .##.. .##..",
    ",": "..... ..... ..... ..... .##.. ..#.. .#...",
    "'": "..#.. ..#.. .#... ..... ..... ..... .....",
    "!": "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..",
    "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
    "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
}


def _parse_glyph(char: str, source: str) -> np.ndarray:
    rows = source.split()
    if len(rows) != _GLYPH_ROWS or any(len(row) != _GLYPH_COLS for row in rows):
        raise ValueError(f"glyph {char!r} must be {_GLYPH_ROWS} rows of {_GLYPH_COLS} cells")  # a typo in the table
    return np.array([[cell == "#" for cell in row] for row in rows], dtype=bool)


_GLYPHS: dict[str, np.ndarray] = {char: _parse_glyph(char, source) for char, source in _FONT_SOURCE.items()}
_BLANK = np.zeros((_GLYPH_ROWS, _GLYPH_COLS), dtype=bool)

FONT_SCALE = 2
"""Pixels per font cell: glyphs are 10x14 px, one character advances 12 px."""


def _glyph(char: str) -> np.ndarray:
    # Lower case shares the upper-case glyphs; anything the font lacks is a blank cell, so odd input never crashes.
    found = _GLYPHS.get(char)
    if found is None:
        upper = char.upper()
        found = _GLYPHS.get(upper, _BLANK) if len(upper) == 1 else _BLANK
    return found


@functools.lru_cache(maxsize=4096)  # bounded: titles are arbitrary strings; scores and totals are < 10 000 strings
def text_mask(text: str, scale: int = FONT_SCALE) -> np.ndarray:
    """Rasterises a line of text with the built-in 5x7 font.

    Args:
        text: The characters to draw; lower case is drawn as upper case, unknown characters as blanks.
        scale: Pixels per font cell (an integer >= 1).

    Returns:
        A read-only bool array of shape ``(7 * scale, 6 * scale * len(text))``: ``True`` where there is ink. Each
        character takes 6 cells, its 5 glyph columns and one column of spacing. Empty text gives zero columns.
    """
    cells = np.zeros((_GLYPH_ROWS, (_GLYPH_COLS + 1) * len(text)), dtype=bool)
    for i, char in enumerate(text):
        cells[:, i * (_GLYPH_COLS + 1) : i * (_GLYPH_COLS + 1) + _GLYPH_COLS] = _glyph(char)
    mask = np.kron(cells, np.ones((scale, scale), dtype=bool))
    mask.flags.writeable = False  # shared through the cache
    return mask


# --------------------------------------------------------------------------------------------------
# Layout (pixels) and colours
# --------------------------------------------------------------------------------------------------
WIDTH = 480
"""Image width in pixels, the same for every sheet."""

_MARGIN = 16
_TEXT_H = _GLYPH_ROWS * FONT_SCALE
_TITLE_Y = 12
_DIE_SIZE = 64
_DIE_GAP = 16
_DICE_TOP = 40
_DICE_LEFT = (WIDTH - (5 * _DIE_SIZE + 4 * _DIE_GAP)) // 2
_ROLLS_Y = _DICE_TOP + _DIE_SIZE + 12
_HEADER_Y = _ROLLS_Y + _TEXT_H + 14
_ROWS_TOP = _HEADER_Y + _TEXT_H + 6
_ROW_H = 24
_ROW_TEXT_DY = (_ROW_H - _TEXT_H) // 2
_RULE_H = 3  # the line that separates the category rows from the total
_BOTTOM = 10
_SCORE_RIGHT = WIDTH - _MARGIN  # scores are right-aligned here, so digits line up in a column
_NOW_RIGHT = WIDTH - _MARGIN - 96  # open rows' "would score now" column, left of the filled scores

_PAPER = np.array([247, 243, 232], dtype=np.uint8)
_BAND = np.array([234, 228, 212], dtype=np.uint8)  # every other row, so a name can be followed to its score
_INK = np.array([25, 25, 35], dtype=np.uint8)
_OPEN_INK = np.array([70, 110, 200], dtype=np.uint8)  # what an open category would score now: a hint, not a score
_FAINT_INK = np.array([140, 135, 125], dtype=np.uint8)  # headers and the open-row dash
_TITLE_BAR = np.array([40, 60, 90], dtype=np.uint8)
_TITLE_INK = np.array([250, 250, 250], dtype=np.uint8)
_DIE_FACE = np.array([255, 255, 255], dtype=np.uint8)
_DIE_EDGE = np.array([30, 30, 30], dtype=np.uint8)
_PIP = np.array([20, 20, 20], dtype=np.uint8)

# Pip centres of each face on a 3x3 grid (row, col in 0..2), the usual layouts (the SVG picture draws them too).
PIP_LAYOUTS: dict[int, tuple[tuple[int, int], ...]] = {
    1: ((1, 1),),
    2: ((0, 2), (2, 0)),
    3: ((0, 2), (1, 1), (2, 0)),
    4: ((0, 0), (0, 2), (2, 0), (2, 2)),
    5: ((0, 0), (0, 2), (1, 1), (2, 0), (2, 2)),
    6: ((0, 0), (0, 2), (1, 0), (1, 2), (2, 0), (2, 2)),
}


def image_height(num_categories: int, num_bonus_rows: int = 0) -> int:
    """Image height in pixels for a sheet of ``num_categories`` boxes and ``num_bonus_rows`` bonus rows (fixed per
    preset, whatever the state).
    """
    return _ROWS_TOP + (num_categories + num_bonus_rows + 1) * _ROW_H + _RULE_H + _BOTTOM


def die_box(i: int) -> tuple[int, int, int, int]:
    """Pixel box ``(top, bottom, left, right)`` (half-open) of die ``i`` (0..4) in every image."""
    left = _DICE_LEFT + i * (_DIE_SIZE + _DIE_GAP)
    return _DICE_TOP, _DICE_TOP + _DIE_SIZE, left, left + _DIE_SIZE


def _row_top(k: int) -> int:
    return _ROWS_TOP + k * _ROW_H


def row_box(k: int, num_categories: int, num_bonus_rows: int = 0) -> tuple[int, int]:
    """Pixel rows ``(top, bottom)`` (half-open) of row ``k``: category ``k`` below ``num_categories``, then the
    bonus rows, then (``k == num_categories + num_bonus_rows``) the total's.
    """
    rows = num_categories + num_bonus_rows
    if k < rows:
        return _row_top(k), _row_top(k) + _ROW_H
    top = _row_top(rows) + _RULE_H  # the total sits below the rule that ends the sheet's rows
    return top, top + _ROW_H


def _display_name(name: str) -> str:
    return name.replace("_", " ").upper()


# --------------------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------------------
def _draw_text(
    image: np.ndarray, text: str, x: int, y: int, color: np.ndarray, align: str = "left", scale: int = FONT_SCALE
) -> None:
    """Paints ``text`` with its top at ``y``; ``x`` is the left edge, or the right edge if ``align == "right"``.

    Whatever falls outside the image is clipped, so an over-long title or number degrades instead of raising.
    """
    mask = text_mask(text, scale)
    height, width = mask.shape
    if align == "right":
        x -= width - scale  # the last character's trailing spacing column should not push the text left
    top, left = max(y, 0), max(x, 0)
    bottom, right = min(y + height, image.shape[0]), min(x + width, image.shape[1])
    if top >= bottom or left >= right:
        return
    image[top:bottom, left:right][mask[top - y : bottom - y, left - x : right - x]] = color


@functools.cache
def _die_tile(face: int) -> np.ndarray:
    """The picture of one die showing ``face`` (1..6; anything else is drawn as a blank die), on paper colour."""
    size, edge = _DIE_SIZE, 3
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    # Rounded corners: distance from the nearest corner-circle centre, measured only in the corner squares.
    radius = 9.0
    cy = np.clip(yy, radius, size - radius)
    cx = np.clip(xx, radius, size - radius)
    dist = np.hypot(yy - cy, xx - cx)
    tile = np.empty((size, size, 3), dtype=np.uint8)
    tile[:] = _PAPER
    tile[dist <= radius] = _DIE_EDGE
    tile[dist <= radius - edge] = _DIE_FACE
    pip_radius = size * 0.1
    for row, col in PIP_LAYOUTS.get(face, ()):
        py, px = size * (1 + row) / 4, size * (1 + col) / 4
        tile[np.hypot(yy - py, xx - px) <= pip_radius] = _PIP
    tile.flags.writeable = False
    return tile


@functools.cache
def _background(categories: tuple[str, ...], bonus_labels: tuple[str, ...] = ()) -> np.ndarray:
    """Everything that stays put during a game of this sheet: paper, title bar, labels, row bands, names."""
    rows = len(categories) + len(bonus_labels)
    height = image_height(len(categories), len(bonus_labels))
    image = np.empty((height, WIDTH, 3), dtype=np.uint8)
    image[:] = _PAPER
    image[: _DICE_TOP - 8] = _TITLE_BAR
    _draw_text(image, "ROLLS LEFT:", _DICE_LEFT, _ROLLS_Y, _INK)
    _draw_text(image, "CATEGORY", _MARGIN, _HEADER_Y, _FAINT_INK)
    _draw_text(image, "NOW", _NOW_RIGHT, _HEADER_Y, _FAINT_INK, align="right")
    _draw_text(image, "SCORE", _SCORE_RIGHT, _HEADER_Y, _FAINT_INK, align="right")
    for k, name in enumerate((*categories, *bonus_labels)):
        top = _row_top(k)
        if k % 2 == 0:
            image[top : top + _ROW_H] = _BAND
        _draw_text(image, _display_name(name), _MARGIN, top + _ROW_TEXT_DY, _INK)
    rule_top = _row_top(rows)
    image[rule_top : rule_top + _RULE_H, _MARGIN // 2 : WIDTH - _MARGIN // 2] = _INK
    _draw_text(image, "TOTAL", _MARGIN, row_box(rows, rows)[0] + _ROW_TEXT_DY, _INK)
    image.flags.writeable = False
    return image


def sheet_image(
    dice: Sequence[int],
    rolls_left: int,
    categories: Sequence[str],
    sheet: Sequence[int],
    score_now: Sequence[int],
    total: int,
    turn: int,
    num_turns: int,
    title: str = "Yacht",
    bonus_rows: Sequence[tuple[str, str]] = (),
) -> np.ndarray:
    """Draws the dice and the score sheet of a Yacht game.

    Args:
        dice: The five dice showing (values 1..6, drawn left to right as given; other values draw a blank die).
        rolls_left: Re-rolls still allowed this turn.
        categories: The sheet's category names in order (e.g. ``"four_of_a_kind"``, shown as ``FOUR OF A KIND``).
        sheet: Per category, the points scored in it, or ``-1`` while it is open.
        score_now: Per category, what the dice showing would score there now (shown for open categories only;
            a negative value shows nothing: a box the forced joker rules out, see :func:`score_now`).
        total: The points scored so far.
        turn: The current turn, 1-based.
        num_turns: Turns in the game.
        title: The heading drawn left of ``TURN turn/num_turns`` in the title bar.
        bonus_rows: ``(label, value)`` rows drawn between the categories and the total (:func:`bonus_rows`); the
            labels are part of the layout, so one preset passes the same labels in every frame.

    Returns:
        A new uint8 array of shape ``(image_height(len(categories), len(bonus_rows)), WIDTH, 3)``: the same size for
        every state of a preset, as video encoders need. Filled scores are dark in the ``SCORE`` column; an open
        category shows a dash there and, in blue in the ``NOW`` column, what it would score with these dice.
    """
    labels = tuple(label for label, _ in bonus_rows)
    image = _background(tuple(categories), labels).copy()
    turn_text = f"TURN {int(turn)}/{int(num_turns)}"
    _draw_text(image, turn_text, _SCORE_RIGHT, _TITLE_Y, _TITLE_INK, align="right")
    # A long title is cut short rather than run into the turn counter, which matters more in a video.
    advance = (_GLYPH_COLS + 1) * FONT_SCALE
    room = (_SCORE_RIGHT - len(turn_text) * advance - _MARGIN) // advance - 1
    _draw_text(image, title[: max(room, 0)], _MARGIN, _TITLE_Y, _TITLE_INK)
    for i, face in enumerate(list(dice)[:5]):
        top, bottom, left, right = die_box(i)
        image[top:bottom, left:right] = _die_tile(int(face))
    label_end = _DICE_LEFT + len("ROLLS LEFT: ") * (_GLYPH_COLS + 1) * FONT_SCALE
    _draw_text(image, str(int(rolls_left)), label_end, _ROLLS_Y, _INK)
    for k, filled in enumerate(sheet):
        y = _row_top(k) + _ROW_TEXT_DY
        if filled >= 0:
            _draw_text(image, str(int(filled)), _SCORE_RIGHT, y, _INK, align="right")
        else:
            _draw_text(image, "-", _SCORE_RIGHT, y, _FAINT_INK, align="right")
            if score_now[k] >= 0:
                _draw_text(image, str(int(score_now[k])), _NOW_RIGHT, y, _OPEN_INK, align="right")
    for j, (_, value) in enumerate(bonus_rows):
        _draw_text(image, str(value), _SCORE_RIGHT, _row_top(len(categories) + j) + _ROW_TEXT_DY, _INK, align="right")
    rows = len(categories) + len(labels)
    total_y = row_box(rows, rows)[0] + _ROW_TEXT_DY
    _draw_text(image, str(int(total)), _SCORE_RIGHT, total_y, _INK, align="right")
    return image


def game_image(game: GameState, i: int | None = None) -> np.ndarray:
    """The frame ``render_mode="rgb_array"`` returns for one game: a one-game ``game``, or game ``i`` of a batch
    (the vector env's frame of a game is the single env's frame of the same state).

    Args:
        game: The games (:class:`yacht_env.game.GameState`).
        i: The game to draw, for a batch; ``None`` for one game.
    """
    rules = game.rules

    def one(field):
        return field if i is None else field[i]

    roll, rolls_left, open_mask = int(one(game.roll)), int(one(game.rolls_left)), int(one(game.open_mask))
    sheet, total, upper = one(game.sheet), int(one(game.total)), int(one(game.upper))
    return sheet_image(
        dice=R.ROLL_TUPLES[roll],
        rolls_left=rolls_left,
        categories=rules.categories,
        sheet=sheet.tolist(),
        score_now=score_now(rules, roll, open_mask, upper, int(one(game.armed))),
        total=total,
        turn=min(int(one(game.turn)) + 1, rules.num_turns),
        num_turns=rules.num_turns,
        title=f"{game_title(rules)} ({rules.name})",
        bonus_rows=bonus_rows(rules, sheet, total, upper),
    )
