"""Specification of :mod:`yacht_env.render`: the score sheet as an RGB image (``render_mode="rgb_array"``)."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from yacht_env import rules as R
from yacht_env.render import WIDTH, die_box, image_height, row_box, sheet_image, text_mask

N = len(R.CATEGORIES)
OPEN_SHEET = (-1,) * N
DICE = (2, 3, 3, 5, 6)


def score_now(dice: tuple[int, ...], rules: R.Rules = R.PRESETS["standard"]) -> list[int]:
    return R.score_table(rules)[R.ROLL_TUPLES.index(tuple(sorted(dice)))].tolist()


def draw(
    dice: tuple[int, ...] = DICE,
    rolls_left: int = 2,
    sheet: tuple[int, ...] = OPEN_SHEET,
    total: int = 0,
    turn: int = 1,
    rules: R.Rules = R.PRESETS["standard"],
    **kwargs,
) -> np.ndarray:
    return sheet_image(
        dice, rolls_left, rules.categories, sheet, score_now(dice, rules), total, turn, rules.num_turns, **kwargs
    )


def count_blobs(dark: np.ndarray) -> int:
    """Connected components (4-neighbour) of ``True`` pixels: a tiny flood-fill labeler, as scipy is not a dep."""
    seen = np.zeros_like(dark)
    blobs = 0
    for y, x in zip(*np.nonzero(dark), strict=True):
        if seen[y, x]:
            continue
        blobs += 1
        seen[y, x] = True
        queue = deque([(y, x)])
        while queue:
            cy, cx = queue.popleft()
            for ny, nx in ((cy - 1, cx), (cy + 1, cx), (cy, cx - 1), (cy, cx + 1)):
                if 0 <= ny < dark.shape[0] and 0 <= nx < dark.shape[1] and dark[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    queue.append((ny, nx))
    return blobs


def test_shape_and_dtype():
    image = draw()
    assert image.dtype == np.uint8
    assert image.shape == (image_height(N), WIDTH, 3)
    assert 400 <= WIDTH <= 500


def test_same_size_for_every_state():
    shapes = {
        draw(dice, rolls_left, sheet, total, turn).shape
        for dice, rolls_left, sheet, total, turn in [
            ((1, 1, 1, 1, 1), 2, OPEN_SHEET, 0, 1),
            ((6, 6, 6, 6, 6), 0, (999,) * N, 9999, N),
            ((1, 2, 3, 4, 5), 1, (0,) * 6 + (-1,) * (N - 6), 17, 7),
        ]
    }
    assert shapes == {(image_height(N), WIDTH, 3)}


def test_deterministic_and_fresh():
    first = draw(sheet=(3,) + OPEN_SHEET[1:], total=3, turn=2)
    first_bytes = first.tobytes()
    first[:] = 0  # the caller owns its frame: scribbling on it must not leak into the next one
    assert draw(sheet=(3,) + OPEN_SHEET[1:], total=3, turn=2).tobytes() == first_bytes


def test_different_dice_change_the_dice_area_only_there():
    a, b = draw(dice=(1, 2, 3, 4, 5)), draw(dice=(1, 2, 3, 4, 6))
    top, bottom, left, right = die_box(4)
    assert not np.array_equal(a[top:bottom, left:right], b[top:bottom, left:right])
    for i in range(4):
        top, bottom, left, right = die_box(i)
        assert np.array_equal(a[top:bottom, left:right], b[top:bottom, left:right])


def test_filled_score_changes_its_row_only():
    k = R.CATEGORIES.index("choice")
    open_image = draw()
    filled = list(OPEN_SHEET)
    filled[k] = score_now(DICE)[k]  # the same number, now scored: must still look different
    filled_image = draw(sheet=tuple(filled))
    changed_rows = np.nonzero((open_image != filled_image).any(axis=(1, 2)))[0]
    top, bottom = row_box(k, N)
    assert changed_rows.size > 0
    assert top <= changed_rows.min() and changed_rows.max() < bottom


def test_total_is_drawn_in_its_row():
    a, b = draw(total=0), draw(total=123)
    changed_rows = np.nonzero((a != b).any(axis=(1, 2)))[0]
    top, bottom = row_box(N, N)
    assert changed_rows.size > 0 and top <= changed_rows.min() and changed_rows.max() < bottom <= a.shape[0]


@pytest.mark.parametrize("face", range(1, 7))
def test_pip_count(face):
    image = draw(dice=(face,) * 5)
    top, bottom, left, right = die_box(2)
    inset = 6  # stay inside the die's dark border, so only pips are dark
    die = image[top + inset : bottom - inset, left + inset : right - inset].astype(int)
    assert count_blobs(die.mean(axis=2) < 100) == face


def test_thirteen_categories_make_a_taller_image():
    rules = R.Rules("thirteen", categories=R.CATEGORIES + ("three_of_a_kind",))
    image = draw(sheet=(-1,) * 13, rules=rules)
    assert image.shape == (image_height(13), WIDTH, 3)
    assert image.shape[0] > draw().shape[0]


def test_extreme_values_do_not_crash():
    image = sheet_image(
        (0, 7, -1, 6, 1), 99, R.CATEGORIES, (999,) * N, (999,) * N, 99999, 1000, 1000, title="x" * 200 + "é漢ß~"
    )
    assert image.shape == (image_height(N), WIDTH, 3)


def test_font():
    assert text_mask("").shape == (14, 0)
    assert np.array_equal(text_mask("four_of_a_kind"), text_mask("FOUR_OF_A_KIND"))
    assert not text_mask("~漢").any()  # unknown characters are blank
    for char in "ABCXYZ0123456789_-/:.()":
        assert text_mask(char).any(), char
