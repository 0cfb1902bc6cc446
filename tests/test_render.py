"""Specification of :mod:`yacht_env.render`: the score sheet as an RGB image (``render_mode="rgb_array"``)."""

from __future__ import annotations

import hashlib
from collections import deque

import gymnasium as gym
import numpy as np
import pytest

from yacht_env import env_id
from yacht_env import rules as R
from yacht_env.env import YachtEnv
from yacht_env.game import game_streams
from yacht_env.render import (
    WIDTH,
    bonus_rows,
    die_box,
    game_title,
    image_height,
    row_box,
    score_now,
    sheet_image,
    text_mask,
)
from yacht_env.vector import YachtVectorEnv

N = len(R.CATEGORIES)
OPEN_SHEET = (-1,) * N
DICE = (2, 3, 3, 5, 6)


def scores(dice: tuple[int, ...], rules: R.Rules = R.PRESETS["standard"]) -> list[int]:
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
        dice, rolls_left, rules.categories, sheet, scores(dice, rules), total, turn, rules.num_turns, **kwargs
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
    filled[k] = scores(DICE)[k]  # the same number, now scored: must still look different
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


# --------------------------------------------------------------------------------------------------
# Every preset's sheet: the family's bonus rows, joker values and titles, in the env's text and image
# --------------------------------------------------------------------------------------------------
YACHT_SHEET = """\
Yacht (standard)  turn 2/12  rolls left: 2
dice: 2 2 4 4 5
  action  category         score   now
      32  ones                 -     0
      33  twos                 -     4
      34  threes               -     0
      35  fours                -     8
      36  fives                -     5
      37  sixes                -     0
      38  full_house           -     0
      39  four_of_a_kind       -     0
      40  little_straight      -     0
      41  big_straight         -     0
      42  choice              19
      43  yacht                -     0
          total               19"""


def sheet_text(env) -> str:
    """``env.render()`` with the blank "now" column of filled boxes stripped (as the pinned sheets are written,
    without trailing spaces), once every box row is checked to be as wide as the header: so nothing else is lost."""
    lines = env.render().splitlines()
    boxes = lines[3 : 3 + env.unwrapped.rules.num_categories]
    assert {len(line) for line in boxes} == {len(lines[2])} == {38}
    return "\n".join(line.rstrip() for line in lines)


def test_yacht_sheet_text_and_image_are_pinned():
    """Yacht's sheet is as it always was, byte for byte and pixel for pixel (the image's SHA-256)."""
    env = YachtEnv(render_mode="ansi")
    env.reset(seed=0)
    env.step(R.PICK_OFFSET + R.CATEGORIES.index("choice"))
    assert sheet_text(env) == YACHT_SHEET
    env = YachtEnv(render_mode="rgb_array")
    env.reset(seed=0)
    env.step(R.PICK_OFFSET + R.CATEGORIES.index("choice"))
    digest = hashlib.sha256(env.render().tobytes()).hexdigest()
    assert digest == "de57beda29ddde14977d667cd23b08ae024a69c8026b51913bf1c8a4092d3ea6"


#: A Yahtzee game picked on each turn's first roll: (first roll, box). Yahtzee 50, then three extra fives of a kind
#: (Sixes, Fives: a Yahtzee bonus each), Fours reach 63 (the upper bonus), then two jokers (sixes and fives of a kind
#: with their upper boxes filled: Full House 25, Large Straight 40, a Yahtzee bonus each).
YAHTZEE_GAME = (
    ((6, 6, 6, 6, 6), "yahtzee"),
    ((6, 6, 6, 6, 6), "sixes"),
    ((5, 5, 5, 5, 5), "fives"),
    ((4, 4, 4, 4, 1), "fours"),
    ((6, 6, 6, 6, 6), "full_house"),
    ((5, 5, 5, 5, 5), "large_straight"),
    ((1, 2, 3, 4, 5), "small_straight"),
    ((3, 3, 3, 4, 5), "three_of_a_kind"),
    ((2, 2, 2, 2, 6), "four_of_a_kind"),
    ((1, 1, 2, 3, 6), "ones"),
    ((2, 2, 3, 5, 6), "twos"),
    ((3, 3, 3, 5, 6), "threes"),
    ((6, 6, 5, 5, 4), "chance"),
)
YAHTZEE_TOTALS = (50, 180, 305, 356, 481, 621, 651, 669, 683, 685, 689, 698, 724)


def yahtzee_stream() -> np.ndarray:
    """The dice of :data:`YAHTZEE_GAME` (rows of re-rolls are never used: all ones)."""
    stream = np.ones(R.PRESETS["yahtzee"].stream_shape, dtype=np.int64)
    for turn, (dice, _) in enumerate(YAHTZEE_GAME):
        stream[turn, 0] = dice
    return stream


def play_yahtzee_game(env, turns: int) -> None:
    env.reset(options={"dice_stream": yahtzee_stream()})
    for turn, (_, box) in enumerate(YAHTZEE_GAME[:turns]):
        _, _, _, _, info = env.step(R.PICK_OFFSET + env.unwrapped.rules.categories.index(box))
        assert info["total"] == YAHTZEE_TOTALS[turn]


YAHTZEE_SHEETS = {
    3: """\
Yahtzee (yahtzee)  turn 4/13  rolls left: 2
dice: 1 4 4 4 4
  action  category         score   now
      32  ones                 -     1
      33  twos                 -     0
      34  threes               -     0
      35  fours                -    16
      36  fives               25
      37  sixes               30
      38  three_of_a_kind      -    17
      39  four_of_a_kind       -    17
      40  full_house           -     0
      41  small_straight       -     0
      42  large_straight       -     0
      43  yahtzee             50
      44  chance               -    17
          upper bonus      55/63
          yahtzee bonus      200
          total              305""",
    5: """\
Yahtzee (yahtzee)  turn 6/13  rolls left: 2
dice: 5 5 5 5 5
  action  category         score   now
      32  ones                 -     0
      33  twos                 -     0
      34  threes               -     0
      35  fours               16
      36  fives               25
      37  sixes               30
      38  three_of_a_kind      -    25
      39  four_of_a_kind       -    25
      40  full_house          25
      41  small_straight       -    30
      42  large_straight       -    40
      43  yahtzee             50
      44  chance               -    25
          upper bonus         35
          yahtzee bonus      300
          total              481""",
}


@pytest.mark.parametrize("turns", sorted(YAHTZEE_SHEETS))
def test_yahtzee_sheet_text(turns):
    """After three picks the upper subtotal is 55 of 63 and two Yahtzee bonuses are in; after five the bonus is
    earned (Fours: 16), four Yahtzee bonuses are in, and five fives (Fives filled) are a joker: Full House 25,
    Small Straight 30, Large Straight 40 in the "now" column."""
    env = YachtEnv(rules="yahtzee", render_mode="ansi")
    play_yahtzee_game(env, turns)
    assert sheet_text(env) == YAHTZEE_SHEETS[turns]


def test_yahtzee_final_sheet_and_vector_line():
    env = YachtEnv(rules="yahtzee", render_mode="ansi")
    play_yahtzee_game(env, len(YAHTZEE_GAME))
    assert env.render().splitlines()[-3:] == [
        "          upper bonus         35",
        "          yahtzee bonus      400",
        "          total              724",
    ]
    vector = YachtVectorEnv(num_envs=2, rules="yahtzee", render_mode="ansi")
    vector.reset(options={"dice_stream": np.stack([yahtzee_stream()] * 2)})
    for _, box in YAHTZEE_GAME[:3]:
        vector.step(np.full(2, R.PICK_OFFSET + R.YAHTZEE_CATEGORIES.index(box)))
    assert vector.render()[1] == "game 1: dice 1 4 4 4 4  rolls left 2  total 305  upper bonus 55/63  yahtzee bonus 200"
    standard = YachtVectorEnv(num_envs=1, render_mode="ansi")
    standard.reset(seed=0)
    assert standard.render() == ("game 0: dice 1 3 4 5 6  rolls left 2  total 0",)


@pytest.mark.parametrize(
    ("preset", "height"), [("standard", 489), ("yahtzee", 561), ("yatzy", 585), ("clubhouse", 513)]
)
def test_vector_rgb_array_frames_are_the_single_envs_frames(preset, height):
    """A tuple of N frames, as Gymnasium's vector envs render, each the very frame ``Yacht-v0`` draws of the same game,
    at every step of whole games (keeps and picks at random, until the first game ends)."""
    n = 3
    streams = game_streams(7, range(n), preset)
    envs = gym.make_vec(env_id(preset), num_envs=n, vectorization_mode="vector_entry_point", render_mode="rgb_array")
    assert envs.metadata["render_modes"] == ["ansi", "rgb_array"] and envs.metadata["render_fps"] == 4
    singles = [YachtEnv(rules=preset, render_mode="rgb_array") for _ in range(n)]
    _, info = envs.reset(options={"dice_stream": streams})
    for single, stream in zip(singles, streams, strict=True):
        single.reset(options={"dice_stream": stream})
    rng, done, steps = np.random.default_rng(0), np.zeros(n, dtype=bool), 0
    while True:
        frames = envs.render()
        assert type(frames) is tuple and len(frames) == n
        for frame, single in zip(frames, singles, strict=True):
            assert frame.dtype == np.uint8 and frame.shape == (height, WIDTH, 3)
            assert np.array_equal(frame, single.render())
        if done.any():
            break
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in info["action_mask"]])
        _, _, terminated, truncated, info = envs.step(actions)
        for single, action in zip(singles, actions, strict=True):
            single.step(int(action))
        done, steps = terminated | truncated, steps + 1
    assert terminated.any() and steps >= R.PRESETS[preset].num_turns


def test_vector_rgb_array_follows_sync_vector_envs_convention():
    """The native vector env's frames are those of Gymnasium's ``SyncVectorEnv`` over ``Yacht-v0``: a tuple of N."""
    stream = game_streams(3, [0], "yahtzee")[0]
    native = gym.make_vec("Yahtzee-v0", num_envs=2, vectorization_mode="vector_entry_point", render_mode="rgb_array")
    sync = gym.make_vec("Yahtzee-v0", num_envs=2, vectorization_mode="sync", render_mode="rgb_array")
    native.reset(options={"dice_stream": np.stack([stream] * 2)})
    sync.reset(options={"dice_stream": stream})  # every sub-env gets the one stream
    for envs in (native, sync):
        envs.step(np.array([3, R.PICK_OFFSET]))
    native_frames, sync_frames = native.render(), sync.render()
    assert type(native_frames) is type(sync_frames) is tuple
    assert all(np.array_equal(a, b) for a, b in zip(native_frames, sync_frames, strict=True))
    assert not np.array_equal(*native_frames)  # a keep and a pick: two states, two frames


@pytest.mark.parametrize("mode", ["rgb", "human", None])
def test_vector_env_without_a_mode_it_renders_warns_and_renders_nothing(mode):
    """As ``Yacht-v0`` (and Gymnasium's own envs): a mode the env cannot render warns, and ``render()`` returns
    ``None``; it never raises, and never returns another mode's frames."""
    if mode is None:
        envs = YachtVectorEnv(num_envs=2)
    else:
        with pytest.warns(UserWarning, match=f"render_mode={mode!r} is not one of \\['ansi', 'rgb_array'\\]"):
            envs = YachtVectorEnv(num_envs=2, render_mode=mode)
    envs.reset(seed=0)
    with pytest.warns(UserWarning, match=f"render\\(\\) called with render_mode={mode!r}"):
        assert envs.render() is None
    envs.step(np.full(2, R.PICK_OFFSET))  # the env plays on


def test_the_forced_joker_shows_only_its_legal_picks():
    """Sixes of a kind with Sixes and Yahtzee filled: the forced joker sends them outside the upper section, so the
    open upper boxes (Ones, Twos, Threes) show no "now" value; every lower box takes them in full."""
    env = YachtEnv(rules="yahtzee_forced_joker", render_mode="ansi")
    play_yahtzee_game(env, 4)
    rows = {line.split()[1]: line.split()[2:] for line in sheet_text(env).splitlines()[3:16]}
    assert {name: now for name, (score, *now) in rows.items() if score == "-"} == {
        "ones": [],
        "twos": [],
        "threes": [],
        "three_of_a_kind": ["30"],
        "four_of_a_kind": ["30"],
        "full_house": ["25"],
        "small_straight": ["30"],
        "large_straight": ["40"],
        "chance": ["30"],
    }
    rules = R.PRESETS["yahtzee_forced_joker"]
    open_mask = R.open_mask_from(["ones", "twos", "threes", *rules.categories[6:11], "chance"], rules)
    sixes = R.roll_index([6] * 5)
    assert score_now(rules, sixes, open_mask, upper=63, armed=1) == [-1] * 6 + [30, 30, 25, 30, 40, -1, 30]
    assert score_now(R.PRESETS["yahtzee"], sixes, open_mask, 63, 1) == [0] * 3 + [-1] * 3 + [30, 30, 25, 30, 40, -1, 30]


@pytest.mark.parametrize(
    ("preset", "title", "rows", "height"),
    [
        ("standard", "Yacht", (), 489),
        ("classic", "Yacht", (), 489),
        ("knizia", "Yacht", (), 489),
        ("yahtzee", "Yahtzee", ("upper bonus", "yahtzee bonus"), 561),
        ("yahtzee_forced_joker", "Yahtzee", ("upper bonus", "yahtzee bonus"), 561),
        ("yahtzee_no_joker", "Yahtzee", ("upper bonus", "yahtzee bonus"), 561),
        ("yahtzee_no_bonus", "Yahtzee", ("upper bonus",), 537),
        ("yatzy", "Yatzy", ("upper bonus",), 585),
    ],
)
def test_every_preset_has_its_title_rows_and_fixed_image_size(preset, title, rows, height):
    rules = R.PRESETS[preset]
    assert game_title(rules) == title
    open_sheet = [-1] * rules.num_categories
    assert tuple(label for label, _ in bonus_rows(rules, open_sheet, 0, 0)) == rows
    assert image_height(rules.num_categories, len(rows)) == height
    env = YachtEnv(rules=preset, render_mode="rgb_array")
    _, info = env.reset(seed=0)
    shapes = {env.render().shape}
    for _ in range(5):
        _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))  # the last open box
        shapes.add(env.render().shape)
    assert shapes == {(height, WIDTH, 3)}
    above_the_rows = row_box(0, rules.num_categories)[0]  # the title bar (naming the game), the dice, the headers
    expected = sheet_image(
        info["dice"], info["rolls_left"], rules.categories, info["scores"], [0] * rules.num_categories, 0, 6,
        rules.num_turns, title=f"{title} ({preset})", bonus_rows=bonus_rows(rules, info["scores"], 0, 0),
    )  # fmt: skip
    assert np.array_equal(env.render()[:above_the_rows], expected[:above_the_rows])


def test_upper_bonus_row_text():
    rules = R.PRESETS["yatzy"]
    upper_filled = [3, 6, 9, 12, 10, 6] + [-1] * 9
    assert bonus_rows(rules, [-1] * 15, 0, 0) == (("upper bonus", "0/63"),)
    assert bonus_rows(rules, [3, 6, 9, -1, 10, 6] + [-1] * 9, 34, 34) == (("upper bonus", "34/63"),)
    assert bonus_rows(rules, upper_filled, 46, 46) == (("upper bonus", "0"),)  # every upper box filled short
    assert bonus_rows(rules, [3, 6, 9, 16, 25, 30] + [-1] * 9, 139, 63) == (("upper bonus", "50"),)
    assert bonus_rows(R.PRESETS["standard"], [-1] * 12, 0, 0) == ()


def test_bonus_rows_are_drawn_in_their_rows_and_change_when_earned():
    """The upper bonus row's value is drawn in that row only: ``55/63`` and ``35`` differ there and nowhere else;
    the env's frame changes there when a pick earns the bonus."""
    rules = R.PRESETS["yahtzee"]
    n, sheet = rules.num_categories, [-1] * rules.num_categories
    pending = draw(sheet=sheet, rules=rules, bonus_rows=(("upper bonus", "55/63"), ("yahtzee bonus", "0")))
    earned = draw(sheet=sheet, rules=rules, bonus_rows=(("upper bonus", "35"), ("yahtzee bonus", "0")))
    assert pending.shape == (image_height(n, 2), WIDTH, 3)
    changed = np.nonzero((pending != earned).any(axis=(1, 2)))[0]
    top, bottom = row_box(n, n, 2)
    assert changed.size > 0 and top <= changed.min() and changed.max() < bottom
    assert row_box(n + 2, n, 2)[1] <= pending.shape[0]  # the total's row fits below the bonus rows
    env = YachtEnv(rules="yahtzee", render_mode="rgb_array")
    play_yahtzee_game(env, 3)
    before = env.render()
    env.step(R.PICK_OFFSET + rules.categories.index("fours"))  # 55 + 16: the upper bonus
    after = env.render()
    top, bottom = row_box(n, n, 2)
    assert not np.array_equal(before[top:bottom], after[top:bottom])
    top, bottom = row_box(n + 1, n, 2)  # no Yahtzee bonus this pick: its row stays as it was
    assert np.array_equal(before[top:bottom], after[top:bottom])


def test_the_env_docstring_lists_every_preset():
    doc = YachtEnv.__doc__
    line = doc[doc.index("* ``rules``:") : doc.index("* ``observation_type``:")]
    assert all(f'``"{name}"``' in line for name in R.PRESETS)
