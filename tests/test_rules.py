"""Specification of the rules core (``yacht_env.rules``): scoring, naming, validation, tables, legality.

Expected values come from the rules page (docs/rules.md) and from brute force written here, never from the
module's own tables, so a wrong table cannot agree with itself.
"""

from __future__ import annotations

import ast
import itertools
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from reference import EXPECTED_CATEGORIES, kept_dice, reference_score

import yacht_env
from yacht_env import rules as R

RULES_DIR = Path(R.__file__).parent  # the rules layer is one package: yacht_env/rules/
RULES_SOURCES = sorted(RULES_DIR.glob("*.py"))
PRESET_NAMES = ("standard", "classic")
FAMILY = ("yahtzee", "yahtzee_forced_joker", "yahtzee_no_joker", "yahtzee_no_bonus", "yatzy", "clubhouse")

#: Every ordered roll of five dice.
ALL_ORDERED_ROLLS = list(itertools.product(range(1, 7), repeat=5))


def brute_canonical(dice: tuple[int, ...]) -> list[bool]:
    """For each mask 0..31: not 31, and no smaller mask keeps the same multiset of ``dice``."""
    kept = [tuple(sorted(kept_dice(dice, m))) for m in range(32)]
    return [m != 31 and kept[m] not in kept[:m] for m in range(32)]


# --------------------------------------------------------------------------------------------------
# 1. Scoring: every ordered roll x every category x both presets
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("category", EXPECTED_CATEGORIES)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_score_matches_rules_for_every_ordered_roll(preset, category):
    """``score()`` and ``score_table()`` agree with the rules page (docs/rules.md) on all 7,776 ordered rolls.

    ``score()`` is called on every ordered roll (about 190k calls over the 24 cases, a second or two),
    and the table row of every roll's sorted index is compared too.
    """
    k = EXPECTED_CATEGORIES.index(category)
    table = R.score_table(preset)
    wrong = []
    for dice in ALL_ORDERED_ROLLS:
        expected = reference_score(dice, category, preset)
        got = yacht_env.score(dice, category, preset)
        from_table = int(table[R.roll_index(dice), k])
        if got != expected or from_table != expected:
            wrong.append((dice, expected, got, from_table))
    assert not wrong, f"{len(wrong)} rolls wrong, e.g. (dice, expected, score(), table): {wrong[:5]}"


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_score_table_shape_dtype_and_read_only(preset):
    table = R.score_table(preset)
    assert table.shape == (252, 12)
    assert table.dtype == np.int16
    assert not table.flags.writeable
    assert R.score_table(preset) is table  # built once per preset
    expected = [
        [reference_score(tuple(int(v) for v in dice), c, preset) for c in EXPECTED_CATEGORIES] for dice in R.ROLLS
    ]
    np.testing.assert_array_equal(table, expected)


def test_knizia_differs_from_classic_only_in_full_houses_of_five_of_a_kind():
    classic, knizia = R.score_table("classic"), R.score_table("knizia")
    differs = np.argwhere(classic != knizia)
    assert set(differs[:, 1].tolist()) == {EXPECTED_CATEGORIES.index("full_house")}
    assert sorted(R.ROLL_TUPLES[r] for r in differs[:, 0]) == [(f,) * 5 for f in range(1, 7)]
    assert [R.score((f,) * 5, "full_house", "knizia") for f in range(1, 7)] == [5, 10, 15, 20, 25, 30]


def test_presets_differ_only_in_four_of_a_kind():
    standard, classic = R.score_table("standard"), R.score_table("classic")
    differs = np.argwhere(standard != classic)
    assert set(differs[:, 1].tolist()) == {EXPECTED_CATEGORIES.index("four_of_a_kind")}
    # Every roll with at least four of a kind scores differently (the fifth die is always >= 1):
    # 6 yachts + 6 x 5 four-of-a-kinds.
    assert len(differs) == 36


# --------------------------------------------------------------------------------------------------
# 2. Worked examples of the rules page (docs/rules.md)
# --------------------------------------------------------------------------------------------------
WORKED_EXAMPLES = [
    # dice, category, standard, classic  (the rules page's table, then the worked turn's final roll)
    ((5, 5, 5, 2, 1), "fives", 15, 15),
    ((4, 4, 4, 4, 1), "four_of_a_kind", 16, 17),
    ((6, 6, 6, 6, 6), "four_of_a_kind", 24, 30),
    ((3, 3, 3, 6, 6), "full_house", 21, 21),
    ((4, 4, 4, 1, 1), "full_house", 14, 14),
    ((2, 2, 2, 2, 2), "full_house", 0, 0),
    ((6, 5, 4, 3, 2), "big_straight", 30, 30),
    ((1, 2, 3, 4, 6), "little_straight", 0, 0),
    ((1, 4, 4, 4, 4), "four_of_a_kind", 16, 17),
]


def _as(form: str, category: str):
    k = EXPECTED_CATEGORIES.index(category)
    return {"name": category, "index": k, "member": yacht_env.Category[category.upper()]}[form]


@pytest.mark.parametrize("form", ["name", "index", "member"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize(("dice", "category", "standard", "classic"), WORKED_EXAMPLES)
def test_worked_examples(dice, category, standard, classic, preset, form):
    expected = standard if preset == "standard" else classic
    got = yacht_env.score(dice, _as(form, category), rules=preset)
    assert got == expected
    assert type(got) is int
    # The same preset passed as a Rules object scores the same.
    assert yacht_env.score(dice, _as(form, category), rules=yacht_env.PRESETS[preset]) == expected


@pytest.mark.parametrize(("dice", "category", "standard", "classic"), WORKED_EXAMPLES)
def test_reference_oracle_agrees_with_worked_examples(dice, category, standard, classic):
    """Guards the oracle of the exhaustive test: it too must reproduce the rules page's examples."""
    assert reference_score(dice, category, "standard") == standard
    assert reference_score(dice, category, "classic") == classic


def test_default_rules_are_standard():
    assert yacht_env.score((6, 6, 6, 6, 6), "four_of_a_kind") == 24
    assert R.get_rules() is R.PRESETS["standard"]


def test_dice_order_never_matters():
    for dice in [(1, 2, 3, 4, 5), (3, 3, 6, 6, 3), (4, 1, 4, 4, 4)]:
        for perm in itertools.permutations(dice):
            for k in range(12):
                assert yacht_env.score(perm, k) == yacht_env.score(dice, k)


def test_score_accepts_numpy_dice_and_category():
    assert yacht_env.score(np.array([4, 4, 4, 4, 1], dtype=np.int8), np.int64(7), "classic") == 17


def test_custom_rules_object_sets_fixed_scores():
    rules = yacht_env.Rules("house", four_of_a_kind="all_dice", little_straight=25, big_straight=40, yacht=100)
    assert yacht_env.score((5, 4, 3, 2, 1), "little_straight", rules) == 25
    assert yacht_env.score((6, 5, 4, 3, 2), "big_straight", rules) == 40
    assert yacht_env.score((3, 3, 3, 3, 3), "yacht", rules) == 100
    assert yacht_env.score((3, 3, 3, 3, 2), "four_of_a_kind", rules) == 14
    assert R.get_rules(rules) is rules
    assert rules.as_dict() == {
        "name": "house",
        "four_of_a_kind": "all_dice",
        "little_straight": 25,
        "big_straight": 40,
        "yacht": 100,
        "yacht_is_full_house": False,
        "categories": R.CATEGORIES,
    }


def test_presets():
    assert set(R.PRESETS) == {"standard", "classic", "knizia", *FAMILY}
    assert R.YACHT_PRESETS == ("standard", "classic", "knizia")
    assert R.PRESETS["standard"].four_of_a_kind == "four_dice"
    assert R.PRESETS["classic"].four_of_a_kind == "all_dice"
    assert R.PRESETS["knizia"].four_of_a_kind == "all_dice" and R.PRESETS["knizia"].yacht_is_full_house
    assert not R.PRESETS["standard"].yacht_is_full_house and not R.PRESETS["classic"].yacht_is_full_house
    for name, rules in R.PRESETS.items():
        assert rules.name == name
        assert (rules.little_straight, rules.big_straight, rules.yacht) == (30, 30, 50)
        assert rules.has_bonuses == (name in FAMILY)
    for name in R.YACHT_PRESETS:  # Yacht's presets keep their fields, so their cache keys and run configs
        assert R.PRESETS[name].categories == R.CATEGORIES and R.PRESETS[name].bonus_shape == (1, 1)
        assert set(R.PRESETS[name].as_dict()) == {
            "name",
            "four_of_a_kind",
            "little_straight",
            "big_straight",
            "yacht",
            "yacht_is_full_house",
            "categories",
        }


# --------------------------------------------------------------------------------------------------
# 3. Category naming
# --------------------------------------------------------------------------------------------------
def test_categories_are_the_twelve_names_in_order():
    assert yacht_env.CATEGORIES == EXPECTED_CATEGORIES
    assert isinstance(yacht_env.CATEGORIES, tuple)


def test_category_enum_matches_names():
    assert [member.name.lower() for member in yacht_env.Category] == list(EXPECTED_CATEGORIES)
    assert [member.value for member in yacht_env.Category] == list(range(12))
    for k, name in enumerate(EXPECTED_CATEGORIES):
        assert yacht_env.Category[name.upper()] == k
        assert R.category_index(name) == k
        assert R.category_index(k) == k
        assert R.category_index(yacht_env.Category(k)) == k


def test_action_constants():
    assert (R.NUM_ACTIONS, R.PICK_OFFSET, R.KEEP_ALL, R.MAX_ROLLS_LEFT) == (44, 32, 31, 2)
    assert (R.NUM_ROLLS, R.NUM_KEPT, R.ALL_OPEN) == (252, 462, 4095)


# --------------------------------------------------------------------------------------------------
# 4. Bad input raises ValueError saying what was wrong and what is accepted
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dice", "shown"),
    [
        ([1, 2, 3, 4, 7], "[1, 2, 3, 4, 7]"),
        ([0, 1, 2, 3, 4], "[0, 1, 2, 3, 4]"),
        ((1, 2, 3, 4, 7), "[1, 2, 3, 4, 7]"),
        ([1, 2, 3, 4], "[1, 2, 3, 4]"),
        ([1, 2, 3, 4, 5, 6], "[1, 2, 3, 4, 5, 6]"),
        ([], "[]"),
        ([1, 2, 2.5, 4, 5], "[1, 2, 2.5, 4, 5]"),
        (["1", "2", "3", "4", "5"], "['1', '2', '3', '4', '5']"),
        ("12345", "'12345'"),
        (None, "None"),
        ([None] * 5, "[None, None, None, None, None]"),
        (5, "5"),
        ([[1, 2, 3, 4, 5]], "[[1, 2, 3, 4, 5]]"),
    ],
)
def test_bad_dice_raise(dice, shown):
    with pytest.raises(ValueError, match=f"^{re.escape(f'dice must be 5 values in 1..6, got {shown}')}$"):
        yacht_env.score(dice, "ones")


def test_bad_numpy_dice_raise():
    with pytest.raises(ValueError, match=r"^dice must be 5 values in 1\.\.6, got "):
        yacht_env.score(np.array([1, 2, 3, 4, 7]), "ones")
    with pytest.raises(ValueError, match=r"^dice must be 5 values in 1\.\.6, got "):
        yacht_env.score(np.array([1.0, 2.0, 3.5, 4.0, 5.0]), "ones")


@pytest.mark.parametrize("category", ["nope", "Ones", "", -1, 12, True, False, 1.5, None, np.bool_(True)])
def test_unknown_category_raises(category):
    message = f"unknown category {category!r}; expected a name in {EXPECTED_CATEGORIES}, an index 0..11 or a Category"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        yacht_env.score([1, 2, 3, 4, 5], category)


@pytest.mark.parametrize("rules", ["nope", "Standard", None, 0])
def test_unknown_rules_raise(rules):
    names = (
        "['classic', 'clubhouse', 'knizia', 'standard', 'yahtzee', 'yahtzee_forced_joker', 'yahtzee_no_bonus', "
        "'yahtzee_no_joker', 'yatzy']"
    )
    message = f"unknown rules {rules!r}; expected one of {names} or a Rules object"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        yacht_env.score([1, 2, 3, 4, 5], "ones", rules=rules)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        yacht_env.get_rules(rules)
    with pytest.raises(ValueError, match=re.escape(f"unknown rules {rules!r}")):
        R.score_table(rules)


@pytest.mark.parametrize("value", ["sum", "four", None, 4])
def test_rules_bad_four_of_a_kind_raises(value):
    message = f"four_of_a_kind must be 'four_dice' or 'all_dice', got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        yacht_env.Rules("house", four_of_a_kind=value)


@pytest.mark.parametrize("field", ["little_straight", "big_straight", "yacht"])
@pytest.mark.parametrize("value", [-1, 1001, True, 1.5, "30", None])
def test_rules_bad_fixed_score_raises(field, value):
    message = f"{field} must be an int in 0..1000, got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        yacht_env.Rules("house", **{field: value})


# --------------------------------------------------------------------------------------------------
# 5. Tables
# --------------------------------------------------------------------------------------------------
def test_rolls_are_the_252_distinct_sorted_rolls():
    assert R.ROLLS.shape == (252, 5)
    assert R.ROLLS.dtype == np.int8
    assert not R.ROLLS.flags.writeable
    rows = [tuple(int(v) for v in row) for row in R.ROLLS]
    assert len(set(rows)) == 252
    assert all(list(row) == sorted(row) for row in rows)
    assert set(rows) == {tuple(sorted(dice)) for dice in ALL_ORDERED_ROLLS}
    assert R.ROLL_TUPLES == tuple(rows)


def test_roll_index_inverts_rolls_for_every_ordering():
    for dice in ALL_ORDERED_ROLLS:
        r = R.roll_index(dice)
        assert type(r) is int
        assert tuple(R.ROLLS[r]) == tuple(sorted(dice)), dice
    # Batched over leading axes, same answers.
    batch = np.array(ALL_ORDERED_ROLLS, dtype=np.int64)
    indices = R.roll_index(batch.reshape(6, 1296, 5))
    assert indices.shape == (6, 1296)
    np.testing.assert_array_equal(R.ROLLS[indices.reshape(-1)], np.sort(batch, axis=1))


def test_roll_counts():
    for r, dice in enumerate(R.ROLL_TUPLES):
        counts = Counter(dice)
        assert R.ROLL_COUNTS[r].tolist() == [counts[f] for f in range(1, 7)]


def test_kept_lists_every_multiset_of_zero_to_five_dice():
    expected = {tuple(sorted(d)) for n in range(6) for d in itertools.product(range(1, 7), repeat=n)}
    assert len(R.KEPT) == len(expected) == 462
    assert set(R.KEPT) == expected
    assert [len(k) for k in R.KEPT] == sorted(len(k) for k in R.KEPT)  # ordered by size
    assert R.KEPT[0] == ()


def test_transition_rows_are_distributions():
    assert R.TRANSITION.shape == (462, 252)
    assert R.TRANSITION.dtype == np.float64
    assert (R.TRANSITION >= 0).all()
    np.testing.assert_allclose(R.TRANSITION.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_first_roll_distribution_is_exact_enumeration():
    counts = Counter(tuple(sorted(dice)) for dice in ALL_ORDERED_ROLLS)
    expected = [counts[row] / 7776 for row in R.ROLL_TUPLES]
    np.testing.assert_allclose(R.TRANSITION[0], expected, rtol=0, atol=1e-15)
    assert R.TRANSITION[0, R.roll_index((1, 1, 1, 1, 1))] == pytest.approx(1 / 7776)
    assert R.TRANSITION[0, R.roll_index((1, 2, 3, 4, 5))] == pytest.approx(120 / 7776)


def test_every_transition_row_is_exact_enumeration():
    for index, kept in enumerate(R.KEPT):
        n = 5 - len(kept)
        counts = Counter(tuple(sorted(kept + rolled)) for rolled in itertools.product(range(1, 7), repeat=n))
        expected = np.zeros(252)
        for dice, count in counts.items():
            expected[R.ROLL_TUPLES.index(dice)] = count / 6**n
        np.testing.assert_allclose(R.TRANSITION[index], expected, rtol=0, atol=1e-15, err_msg=f"kept {kept}")


def test_keep_bits():
    assert R.KEEP_BITS.shape == (32, 5)
    for m in range(32):
        assert R.KEEP_BITS[m].tolist() == [bool(m >> i & 1) for i in range(5)]


def test_keep_is_the_kept_multiset_for_every_roll_and_mask():
    assert R.KEEP.shape == (252, 32)
    for r, dice in enumerate(R.ROLL_TUPLES):
        for m in range(32):
            assert R.KEPT[R.KEEP[r, m]] == tuple(sorted(kept_dice(dice, m))), (dice, m)


def test_canonical_keeps_by_brute_force():
    assert R.CANONICAL_KEEPS.shape == (252, 32)
    assert R.CANONICAL_KEEPS.dtype == bool
    for r, dice in enumerate(R.ROLL_TUPLES):
        assert R.CANONICAL_KEEPS[r].tolist() == brute_canonical(dice), dice
    assert not R.CANONICAL_KEEPS[:, 31].any()
    assert R.CANONICAL_KEEPS[:, 0].all()  # re-roll everything is always legal


def test_canonical_keep_counts():
    # 1-2-3-4-5: every subset keeps a different multiset: 32 masks minus keep-all.
    straight = R.roll_index((1, 2, 3, 4, 5))
    assert R.CANONICAL_KEEPS[straight].sum() == 31
    # 2-2-2-2-2: the kept multiset is "n twos" for n = 0..5; n = 5 is keep-all, so 5 remain
    # (n = 0 is mask 0, re-roll everything), namely masks 0, 1, 3, 7, 15.
    yacht = R.roll_index((2, 2, 2, 2, 2))
    assert R.CANONICAL_KEEPS[yacht].sum() == 5
    assert np.flatnonzero(R.CANONICAL_KEEPS[yacht]).tolist() == [0, 1, 3, 7, 15]
    # The class docstring's example: for 2-2-3-5-6 "keep one 2" is mask 1, not mask 2.
    example = R.roll_index((2, 2, 3, 5, 6))
    assert R.CANONICAL_KEEPS[example, 1] and not R.CANONICAL_KEEPS[example, 2]
    # In general: one canonical mask per sub-multiset, minus the whole roll.
    for r in range(252):
        expected = int(np.prod(R.ROLL_COUNTS[r].astype(int) + 1)) - 1
        assert R.CANONICAL_KEEPS[r].sum() == expected


def test_prefix_codes_and_roll_from_code():
    rows = np.array(ALL_ORDERED_ROLLS)
    codes = R.prefix_codes(rows)
    assert codes.shape == (7776, 6)
    assert (codes[:, 0] == 0).all()
    # The code of a row's first j dice identifies that multiset: equal codes iff equal multisets.
    for j in range(6):
        by_code = {}
        for row, code in zip(ALL_ORDERED_ROLLS, codes[:, j].tolist(), strict=True):
            by_code.setdefault(code, set()).add(tuple(sorted(row[:j])))
        assert all(len(multisets) == 1 for multisets in by_code.values())
        assert len(by_code) == len({tuple(sorted(row[:j])) for row in ALL_ORDERED_ROLLS})
    rolls = R.roll_from_code(codes[:, 5])
    np.testing.assert_array_equal(R.ROLLS[rolls], np.sort(rows, axis=1))
    assert R.roll_from_code(int(codes[123, 5])) == R.roll_index(ALL_ORDERED_ROLLS[123])


def test_rows_of_dice_spell_row_numbers_in_base_six():
    rows = R.rows_of_dice(np.arange(7776))
    assert rows.shape == (7776, 5)
    assert rows.dtype == np.int8
    assert [tuple(row) for row in rows.tolist()] == ALL_ORDERED_ROLLS  # die 0 is the leading digit


def test_draw_prefix_codes_equals_prefix_codes_of_the_drawn_rows():
    drawn = R.draw_prefix_codes(np.random.default_rng(5), (12, 3))
    assert drawn.shape == (12, 3, 6)
    rows = R.rows_of_dice(np.random.default_rng(5).integers(0, 7776, size=(12, 3)))
    np.testing.assert_array_equal(drawn, R.prefix_codes(rows))


def test_drawn_dice_are_fair_and_independent_of_position():
    codes = R.draw_prefix_codes(np.random.default_rng(0), (60_000,))
    faces = np.rint(np.log(np.diff(codes, axis=1)) / np.log(6)).astype(int) + 1  # a die adds 6 ** (face - 1)
    assert faces.min() == 1 and faces.max() == 6
    frequencies = np.stack([(faces == face).mean(axis=0) for face in range(1, 7)])  # (face, die)
    np.testing.assert_allclose(frequencies, 1 / 6, atol=0.01)  # about 6 standard errors


def test_reroll_keeps_kept_dice_and_takes_the_first_fresh_dice():
    """Keep-mask ``m`` keeps its dice; the ``n`` re-rolled dice are the fresh row's first ``n`` values."""
    rng = np.random.default_rng(0)
    rolls, masks = np.meshgrid(np.arange(252), np.arange(31), indexing="ij")
    rolls, masks = rolls.reshape(-1), masks.reshape(-1)
    fresh = rng.integers(1, 7, size=(len(rolls), 5))
    batched = R.reroll(rolls, masks, R.prefix_codes(fresh))
    assert batched.shape == (252 * 31,)
    for j, (r, m) in enumerate(zip(rolls.tolist(), masks.tolist(), strict=True)):
        kept = kept_dice(R.ROLL_TUPLES[r], m)
        expected = tuple(sorted(kept + tuple(int(v) for v in fresh[j, : 5 - len(kept)])))
        assert R.ROLL_TUPLES[batched[j]] == expected, (R.ROLL_TUPLES[r], m, fresh[j])
        assert not Counter(kept) - Counter(expected)  # kept dice stay
        if j % 97 == 0:  # the scalar path, on a sample
            scalar = R.reroll(r, m, R.prefix_codes(fresh[j]))
            assert type(scalar) is int
            assert scalar == batched[j]


def test_one_games_reroll_on_python_ints_equals_the_arrays():
    """A game on Python ints (``GameState``'s single path) passes its fresh row as a list: the same roll, an int,
    for every roll, keep-mask and a fresh row each; and ``roll_from_code`` of an int is the array lookup."""
    rng = np.random.default_rng(1)
    rolls, masks = np.meshgrid(np.arange(252), np.arange(31), indexing="ij")
    rolls, masks = rolls.reshape(-1), masks.reshape(-1)
    codes = R.prefix_codes(rng.integers(1, 7, size=(len(rolls), 5)))
    expected = R.reroll(rolls, masks, codes)
    got = [R.reroll(r, m, row) for r, m, row in zip(rolls.tolist(), masks.tolist(), codes.tolist(), strict=True)]
    assert all(type(roll) is int for roll in got)
    assert got == expected.tolist()
    every = R.prefix_codes(np.array(ALL_ORDERED_ROLLS))[:, 5]
    assert [R.roll_from_code(code) for code in every.tolist()] == R.roll_from_code(every).tolist()


# --------------------------------------------------------------------------------------------------
# 6. legal_action_mask
# --------------------------------------------------------------------------------------------------
def _open_mask_sample() -> list[int]:
    rng = random.Random(7)
    masks = {0, R.ALL_OPEN}
    masks |= {1 << k for k in range(12)} | {R.ALL_OPEN ^ (1 << k) for k in range(12)}
    masks |= {rng.randrange(4096) for _ in range(20)}
    return sorted(masks)


OPEN_MASK_SAMPLE = _open_mask_sample()


def _expected_legal(dice: tuple[int, ...], rolls_left: int, open_mask: int, canonical_keeps: bool) -> list[bool]:
    canonical = brute_canonical(dice)
    keeps = [rolls_left > 0 and m != 31 and (canonical[m] or not canonical_keeps) for m in range(32)]
    picks = [bool(open_mask >> k & 1) for k in range(12)]
    return keeps + picks


@pytest.mark.parametrize("canonical_keeps", [True, False])
@pytest.mark.parametrize("rolls_left", [0, 1, 2])
def test_legal_action_mask_exhaustive(rolls_left, canonical_keeps):
    """All 252 rolls x a sample of 48 open masks, batched, against the rule restated here."""
    rolls = np.arange(252)
    expected_keeps = {
        r: _expected_legal(dice, rolls_left, 0, canonical_keeps)[:32] for r, dice in enumerate(R.ROLL_TUPLES)
    }
    for open_mask in OPEN_MASK_SAMPLE:
        got = R.legal_action_mask(rolls, np.full(252, rolls_left), np.full(252, open_mask), canonical_keeps)
        assert got.shape == (252, 44)
        assert got.dtype == bool
        picks = [bool(open_mask >> k & 1) for k in range(12)]
        expected = np.array([expected_keeps[r] + picks for r in range(252)])
        np.testing.assert_array_equal(got, expected, err_msg=f"open_mask={open_mask}")


def test_legal_action_mask_scalar():
    rng = random.Random(3)
    for _ in range(2000):
        r, rolls_left, open_mask = rng.randrange(252), rng.randrange(3), rng.randrange(4096)
        canonical_keeps = rng.random() < 0.5
        got = R.legal_action_mask(r, rolls_left, open_mask, canonical_keeps)
        assert got.shape == (44,)
        assert got.tolist() == _expected_legal(R.ROLL_TUPLES[r], rolls_left, open_mask, canonical_keeps)


def test_legal_action_mask_numpy_scalars_match_ints():
    rng = random.Random(4)
    for _ in range(200):
        r, rolls_left, open_mask = rng.randrange(252), rng.randrange(3), rng.randrange(4096)
        expected = R.legal_action_mask(r, rolls_left, open_mask)
        got = R.legal_action_mask(np.int64(r), np.int64(rolls_left), np.int64(open_mask))
        assert got.shape == (44,)
        np.testing.assert_array_equal(got, expected)


def test_legal_action_mask_returns_a_fresh_array():
    a = R.legal_action_mask(0, 2, R.ALL_OPEN)
    a[:] = False
    assert R.legal_action_mask(0, 2, R.ALL_OPEN).any()


@pytest.mark.parametrize("canonical_keeps", [True, False])
@pytest.mark.parametrize("num_categories", [12, 13])
def test_legal_mask_parts_join_into_legal_action_mask(canonical_keeps, num_categories):
    """Every (roll, rolls left) half and every open-mask half, then a sample of joined states, against
    legal_action_mask; the joined array is read-only."""
    keeps, picks = R.legal_mask_parts(canonical_keeps, num_categories)
    assert len(keeps) == 252 * 3 and len(picks) == 1 << num_categories
    rolls, rolls_left = np.divmod(np.arange(252 * 3), 3)
    every_keep = np.frombuffer(b"".join(keeps), bool).reshape(-1, 32)
    expected = R.legal_action_mask(rolls, rolls_left, 0, canonical_keeps, num_categories)[:, :32]
    np.testing.assert_array_equal(every_keep, expected)
    every_pick = np.frombuffer(b"".join(picks), bool).reshape(-1, num_categories)
    np.testing.assert_array_equal(every_pick, R.open_bits(num_categories).astype(bool))
    rng = random.Random(5)
    for _ in range(500):
        r, left, open_mask = rng.randrange(252), rng.randrange(3), rng.randrange(1 << num_categories)
        joined = np.frombuffer(keeps[3 * r + left] + picks[open_mask], bool)
        assert not joined.flags.writeable
        np.testing.assert_array_equal(joined, R.legal_action_mask(r, left, open_mask, canonical_keeps, num_categories))


def test_legal_action_mask_default_is_canonical():
    r = R.roll_index((2, 2, 3, 5, 6))
    mask = R.legal_action_mask(r, 2, R.ALL_OPEN)
    assert mask[1] and not mask[2]
    assert mask.sum() == 23 + 12  # (3 * 2 * 2 * 2 - 1) canonical keeps + 12 picks


# --------------------------------------------------------------------------------------------------
# 7. The rules module is pure
# --------------------------------------------------------------------------------------------------
def test_rules_module_imports_only_numpy_and_the_standard_library():
    """Every module of the rules package imports numpy, the standard library and its own siblings (``from .x``),
    nothing else: not another module of ``yacht_env``."""
    assert RULES_DIR / "__init__.py" in RULES_SOURCES and len(RULES_SOURCES) > 1  # every module of the package
    imported = set()
    for path in RULES_SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                relative = f"from {'.' * node.level}{node.module or ''}"
                assert node.level in (0, 1), f"relative import out of the rules package in {path.name}: {relative}"
                if node.level == 0:
                    imported.add(node.module.split(".")[0])
    assert "numpy" in imported
    allowed = set(sys.stdlib_module_names) | {"numpy"}
    assert imported <= allowed, f"the rules package imports {sorted(imported - allowed)}"


def test_rules_module_loads_without_gymnasium_or_torch():
    """Executed on its own (not through ``yacht_env``), the rules package pulls in neither gymnasium nor torch."""
    init, folder = str(RULES_DIR / "__init__.py"), str(RULES_DIR)
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('standalone_rules', {init!r}, "
        f"submodule_search_locations=[{folder!r}])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules[spec.name] = module\n"
        "spec.loader.exec_module(module)\n"
        "assert module.score([4, 4, 4, 4, 1], 'four_of_a_kind', 'classic') == 17\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('gymnasium', 'torch', 'yacht_env'))\n"
        "print(bad)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------------------------------------------
# 8. open_mask_from
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("categories", "expected"),
    [
        (["ones", "yacht"], 0b1000_0000_0001),
        ("yacht", 0b1000_0000_0000),
        ([0, 11], 0b1000_0000_0001),
        ((yacht_env.Category.FULL_HOUSE, "choice", 2), (1 << 6) | (1 << 10) | (1 << 2)),
        (["twos", "twos"], 0b10),
        ([], 0),
        (list(EXPECTED_CATEGORIES), 4095),
        (range(12), 4095),
        ([np.int64(3)], 0b1000),
        ([True] * 12, 4095),
        ([False] * 12, 0),
        ([k % 3 == 0 for k in range(12)], 0b0010_0100_1001),
        (np.array([k >= 6 for k in range(12)]), 0b1111_1100_0000),
        ([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 0b1000_0000_0001),  # 12 zeros/ones: a mask, not indices
        (np.array([0, 1] * 6, dtype=np.int8), 0b1010_1010_1010),  # e.g. info["action_mask"][32:]
        (5, 5),
        (0, 0),
        (4095, 4095),
        (np.int64(1234), 1234),
    ],
)
def test_open_mask_from(categories, expected):
    got = R.open_mask_from(categories)
    assert got == expected
    assert type(got) is int


@pytest.mark.parametrize(
    ("junk", "message"),
    [
        (4096, r"an open mask must be an int in 0\.\.4095, got 4096"),
        (-1, r"an open mask must be an int in 0\.\.4095, got -1"),
        (None, r"open categories must be names/indices, a 12-long boolean mask or an int mask, got None"),
        (True, r"open categories must be names/indices, a 12-long boolean mask or an int mask, got True"),
        (1.5, r"open categories must be names/indices, a 12-long boolean mask or an int mask, got 1\.5"),
        (["nope"], r"unknown category 'nope'"),
        ("nope", r"unknown category 'nope'"),
        ([12], r"unknown category 12"),
        ([True, False], r"unknown category True"),
        ([True] * 11, r"unknown category True"),
        ([1.0], r"unknown category 1\.0"),
    ],
)
def test_open_mask_from_rejects_junk(junk, message):
    with pytest.raises(ValueError, match=message):
        R.open_mask_from(junk)
