"""An independent statement of the rules (the rules page (docs/rules.md)) for the tests: plain Python, no yacht_env."""

from __future__ import annotations

from collections import Counter

#: The 12 category names of the rules page's table (docs/rules.md), in sheet order (written out, not read from
#: the package).
EXPECTED_CATEGORIES = (
    "ones",
    "twos",
    "threes",
    "fours",
    "fives",
    "sixes",
    "full_house",
    "four_of_a_kind",
    "little_straight",
    "big_straight",
    "choice",
    "yacht",
)
UPPER_FACES = {"ones": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}


def reference_score(dice: tuple[int, ...], category: str | int, preset: str) -> int:
    """Points for ``dice`` in ``category`` (a name or index) under ``preset``, from the rules page's text
    (docs/rules.md)."""
    if isinstance(category, int):
        category = EXPECTED_CATEGORIES[category]
    counts = Counter(dice)
    total = sum(dice)
    if category in UPPER_FACES:
        face = UPPER_FACES[category]
        return face * counts[face]
    if category == "full_house":  # three of one face and two of a *different* face (knizia: or five of a kind)
        return total if sorted(counts.values()) == [2, 3] or (preset == "knizia" and len(counts) == 1) else 0
    if category == "four_of_a_kind":
        face, n = counts.most_common(1)[0]
        if n < 4:
            return 0
        return 4 * face if preset == "standard" else total  # classic and knizia: all five dice
    if category == "little_straight":
        return 30 if sorted(dice) == [1, 2, 3, 4, 5] else 0
    if category == "big_straight":
        return 30 if sorted(dice) == [2, 3, 4, 5, 6] else 0
    if category == "choice":
        return total
    if category == "yacht":
        return 50 if len(counts) == 1 else 0
    raise AssertionError(f"no such category {category!r}")


def kept_dice(dice: tuple[int, ...], mask: int) -> tuple[int, ...]:
    """The dice that keep-mask ``mask`` keeps of the sorted ``dice`` (bit ``i`` keeps die ``i``)."""
    return tuple(d for i, d in enumerate(sorted(dice)) if mask >> i & 1)
