"""``greedy``: a fixed rule-of-thumb policy read off the rules core's tables (no look-ahead, no solver).

The rule reads the sheet by category name, so it plays every preset: Yacht's 12 boxes and the family's
(Yahtzee's 13, Scandinavian Yatzy's 15). For each state (dice sorted, "open" = category not yet filled):

With re-rolls left:

1. **Take a made hand.** If the dice already fill an open five-of-a-kind box (Yacht, Yahtzee, Yatzy), large
   straight (Big Straight), small straight (Little Straight) or Full House with points (checked in that
   order; the joker counts where the rules have one), score it now.
2. **Of a kind.** The *target face* is the face showing on the most dice, counting only faces that can
   still pay (its upper box, Three or Four of a Kind or the five-of-a-kind box is open); ties go to the
   higher face. With three or more of it, keep those dice and re-roll the rest.
3. **Straight draw.** Else, if an open straight is one face away from done, keep one die of each face of
   it that shows. A straight is done by a run of faces: Yacht's and Yatzy's straights by exactly 1-5 and
   2-6; Yahtzee's large straight by 1-5 or 2-6, its small one by any four in sequence. The run with the
   fewest faces missing (then the most showing) is drawn to; ties go to the large straight, then to the
   higher run.
4. **Full House draw.** Else, with two pairs and Full House open, keep both pairs.
5. **Else keep the target face** (one or two dice). With no face that can still pay, go for an open
   straight (keep one die of each face of its best run), else Full House (keep the target face), else
   keep the 4s, 5s and 6s (for Choice / Chance, and the high pairs of Yatzy's One Pair and Two Pairs).

A keep that would keep all five dice (e.g. five of a kind after its box is filled) scores instead.

With no re-rolls left (or when scoring): pick the legal category whose pick **earns the most now**, as
:func:`yacht_env.rules.pick_outcome` scores it (a joker's full points, the upper bonus a pick completes, a
Yahtzee bonus). While an upper bonus is still to earn, an upper box's points also count their distance from par
(three of the face: 63 is three of every face) times the bonus per point of the threshold, ``bonus / threshold``
(35/63 in Yahtzee, 50/63 in Yatzy): four 6s in Sixes are worth 24 + 6 x 35/63, a lone 1 in Ones 1 - 2 x 35/63,
less than a zero elsewhere. Ties (zeros included) sacrifice the category worth least in expectation, in the fixed
order :data:`SACRIFICE_ORDER`, read as far as the preset's sheet goes: ones, twos, threes, the five-of-a-kind
box, fours, the small straight, the large straight, two pairs, full house, one pair, fives, four of a kind, three
of a kind, sixes, choice / chance. (The five-of-a-kind box comes early: a zero there gives up only the chance
of a later one, about 5% per turn spent chasing it, some 2.3 points in Yacht; Choice comes last because it
always scores well.) Under Yahtzee's forced joker the legal categories are the official placement's
(:func:`yacht_env.rules.legal_picks`). Beyond the value of a pick the rule does not plan for the upper bonus: its
keeps are the same with and without one.

On Yacht's presets (no bonus) these are exactly the rules it always played (the tests pin its actions). Measured
with ``python evaluate.py`` (10,000 games, seed 0): 144.9 a game on the standard preset (86.8% of optimal play's
166.96, a Yacht in 31% of games) and 148.4 on classic (87.4% of 169.77). The straight draw (rule 3) is worth
about 12 points: with rules 1, 2 and 5 only it scores about 134. On the family (same games): 214.6 on yahtzee
(84.3% of optimal play's 254.59; the upper bonus in 18% of games, against 68% for optimal play) and on
yahtzee_forced_joker (it always takes an extra Yahtzee in an open upper box), 199.4 on yatzy (80.3% of 248.44;
the upper bonus in 44% of games). Par is worth some 16 points in Yatzy, under one in Yahtzee.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R

#: The order in which zeros and ties are given to categories, least expected worth first, by name: every box
#: the presets' sheets may list (a preset reads the names on its sheet, in this order).
SACRIFICE_ORDER: tuple[str, ...] = (
    "ones",
    "twos",
    "threes",
    "yacht",
    "yahtzee",
    "yatzy",
    "fours",
    "little_straight",
    "small_straight",
    "big_straight",
    "large_straight",
    "two_pairs",
    "full_house",
    "one_pair",
    "fives",
    "four_of_a_kind",
    "three_of_a_kind",
    "sixes",
    "choice",
    "chance",
)
#: Rule 1's made hands, in order: the five-of-a-kind box, the large straight, the small straight, Full House.
MADE_HANDS: tuple[tuple[str, ...], ...] = (
    R.FIVE_OF_A_KIND_CATEGORIES,
    ("big_straight", "large_straight"),
    ("little_straight", "small_straight"),
    ("full_house",),
)
#: Boxes that pay for more dice of one face (besides the face's upper box): rule 2's "can still pay".
OF_A_KIND: tuple[str, ...] = ("three_of_a_kind", "four_of_a_kind", *R.FIVE_OF_A_KIND_CATEGORIES)
#: Yacht's straights: done by exactly one run of five faces.
EXACT_RUNS = {"big_straight": ((2, 3, 4, 5, 6),), "little_straight": ((1, 2, 3, 4, 5),)}

_FACES = np.arange(1, R.NUM_FACES + 1)
UPPER_FACE_SUM = int(_FACES.sum())  # 21: the upper section's par is threshold / 21 points per face value
_BITS = 1 << np.arange(R.NUM_DICE)


def straight_runs(rules: R.Rules) -> list[tuple[int, tuple[int, ...]]]:
    """Rule 3's targets: ``(category index, run of faces)`` for each run that completes an open straight box of
    the sheet, in rule 3's order of preference (large straights first, then the higher run).
    """
    runs = dict(EXACT_RUNS)
    if rules.straights == "exact":
        runs.update({"large_straight": ((2, 3, 4, 5, 6),), "small_straight": ((1, 2, 3, 4, 5),)})
    else:  # any five / four faces in sequence
        runs.update({"large_straight": ((2, 3, 4, 5, 6), (1, 2, 3, 4, 5))})
        runs["small_straight"] = ((3, 4, 5, 6), (2, 3, 4, 5), (1, 2, 3, 4))
    order = ("big_straight", "large_straight", "little_straight", "small_straight")
    return [(rules.categories.index(name), run) for name in order if name in rules.categories for run in runs[name]]


def _first_of_each(dice: np.ndarray, faces) -> int:
    """The keep-mask keeping one die of each of ``faces`` present in ``dice`` (the lowest such die).

    Taking the lowest die of each face makes it the canonical mask of what it keeps.
    """
    mask = 0
    for face in faces:
        hits = np.flatnonzero(dice == face)
        if len(hits):
            mask |= 1 << int(hits[0])
    return mask


class GreedyTables(NamedTuple):
    """What the rule reads, per preset (:func:`greedy_tables`).

    Fields:

    * ``rank``: ``(C,)``: larger for the category to sacrifice first (ties in the pick go to it).
    * ``upper_face``: ``(C,)``: the face an upper box counts, 0 for the other boxes.
    * ``made``: ``(M,)``: rule 1's categories on the sheet, in order.
    * ``upper_box``: ``(6,)``: the index of each face's upper box (-1: not on the sheet).
    * ``of_a_kind``: ``(C,)`` bool: rule 2's of-a-kind boxes.
    * ``full_house``: The Full House box's index (-1: none).
    * ``run_category``: ``(S,)``: rule 3's straight box of each run, in order of preference.
    * ``run_keep``, ``run_faces``: ``(252, S)``: per roll, the keep-mask of one die of each of the run's faces
      that shows, and how many of them show.
    * ``run_missing``: ``(252, S)``: the run's faces that do not show.
    * ``face_keep``: ``(252, 6)``: the keep-mask of all dice of each face.
    * ``two_pair_keep``: ``(252,)``: the keep-mask of both pairs (0: not two pairs).
    * ``high_keep``: ``(252,)``: the keep-mask of the 4s, 5s and 6s.
    """

    rank: np.ndarray
    upper_face: np.ndarray
    made: np.ndarray
    upper_box: np.ndarray
    of_a_kind: np.ndarray
    full_house: int
    run_category: np.ndarray
    run_keep: np.ndarray
    run_faces: np.ndarray
    run_missing: np.ndarray
    face_keep: np.ndarray
    two_pair_keep: np.ndarray
    high_keep: np.ndarray


@functools.cache
def greedy_tables(rules: R.Rules) -> GreedyTables:
    """The :class:`GreedyTables` of a preset, built once from its category names."""
    names = rules.categories
    order = [name for name in SACRIFICE_ORDER if name in names]
    rank = np.empty(len(names), dtype=np.int64)
    rank[[names.index(name) for name in order]] = np.arange(len(order))[::-1]
    made = np.array([names.index(name) for group in MADE_HANDS for name in group if name in names], dtype=np.intp)
    picks = R.pick_tables(rules)  # the rules core's upper boxes: face -> box, box -> face
    of_a_kind = np.array([name in OF_A_KIND for name in names])
    full_house = names.index("full_house") if "full_house" in names else -1

    dice = R.ROLLS
    runs = straight_runs(rules)
    run_category = np.array([k for k, _ in runs], dtype=np.intp)
    run_keep = np.array([[_first_of_each(row, run) for _, run in runs] for row in dice], dtype=np.intp)
    run_faces = np.array([[len(set(row.tolist()) & set(run)) for _, run in runs] for row in dice], dtype=np.intp)
    run_missing = np.array([len(run) for _, run in runs], dtype=np.intp) - run_faces
    face_keep = ((dice[:, :, None] == _FACES) * _BITS[None, :, None]).sum(axis=1)  # (252, 6): all dice of a face
    pairs = R.ROLL_COUNTS == 2
    two_pair_keep = np.where(pairs.sum(axis=1) == 2, (face_keep * pairs).sum(axis=1), 0)  # 0: not two pairs
    high_keep = ((dice >= 4) * _BITS).sum(axis=1)
    shape = (len(dice), len(runs))
    return GreedyTables(
        rank,
        picks.upper_face,
        made,
        picks.upper_box[1:],
        of_a_kind,
        full_house,
        run_category,
        run_keep.reshape(shape),
        run_faces.reshape(shape),
        run_missing.reshape(shape),
        face_keep,
        two_pair_keep,
        high_keep,
    )


def greedy_actions(rules: R.Rules, roll, rolls_left, open_mask, upper=0, armed=0) -> np.ndarray:
    """The greedy rule's actions for states given as the rules core's int arrays (shape ``(N,)``).

    Args:
        rules: The preset.
        roll: The sorted rolls (indices into the rules' table of rolls).
        rolls_left: The re-rolls left, 0..2.
        open_mask: The open categories (bit masks).
        upper: The upper section's subtotals, capped (the family's; 0 otherwise).
        armed: Whether the five-of-a-kind box holds its points (the family's; 0 otherwise).
    """
    t = greedy_tables(rules)
    roll, rolls_left, open_mask, upper, armed = (
        np.asarray(x, dtype=np.intp) for x in np.broadcast_arrays(roll, rolls_left, open_mask, upper, armed)
    )
    n, c = len(roll), rules.num_categories
    rows = np.arange(n)
    categories = np.arange(c)
    bits = R.open_bits(c)
    is_open = bits[open_mask]  # (N, C)
    legal = bits[R.legal_picks(rules, roll, open_mask)]  # the forced joker's placement; else the open boxes
    if rules.has_bonuses:
        points, box, _, _ = R.pick_outcome(
            rules, roll[:, None], categories, open_mask[:, None], upper[:, None], armed[:, None]
        )
    else:
        points = box = R.pick_tables(rules).score[roll]
    value = points.astype(np.float64)
    if rules.upper_bonus:  # while the bonus is to earn, an upper box's points above or below par move towards it
        threshold = rules.upper_bonus_threshold
        par = threshold / UPPER_FACE_SUM * t.upper_face  # three of the face for a threshold of 63
        to_earn = (t.upper_face > 0) & (upper < threshold)[:, None]
        value = value + rules.upper_bonus / threshold * (box - par) * to_earn
    key = np.rint(value * 1024).astype(np.int64) * 64 + t.rank  # ranks break ties (presets: values step by 1/63)
    pick = R.PICK_OFFSET + np.where(legal, key, np.iinfo(np.int64).min).argmax(axis=1)

    made = np.zeros(n, dtype=bool)
    made_pick = np.zeros(n, dtype=np.intp)
    for k in t.made[::-1]:  # the first listed wins, so it is written last
        hit = legal[:, k] & (box[:, k] > 0)
        made |= hit
        made_pick[hit] = R.PICK_OFFSET + k

    counts = R.ROLL_COUNTS[roll].astype(np.int64)  # (N, 6)
    upper_open = np.where(t.upper_box >= 0, is_open[:, np.maximum(t.upper_box, 0)], False)  # (N, 6)
    pays = upper_open | (is_open & t.of_a_kind).any(axis=1)[:, None]
    # Faces that can pay first, then the most dice, then the higher face.
    face = np.where(counts > 0, pays * 64 + counts * 8 + _FACES, -1).argmax(axis=1)
    face_count = counts[rows, face] * pays[rows, face]  # 0 when no face can pay
    face_keep = t.face_keep[roll, face]

    if len(t.run_category):
        run_open = is_open[:, t.run_category]  # (N, S)
        run_faces = np.where(run_open, t.run_faces[roll], 0)
        # The open run with the fewest faces missing (the most showing among equals), the first listed on a tie.
        run = np.where(run_open, -t.run_missing[roll] * 8 + run_faces, -64).argmax(axis=1)
        run_best = run_faces[rows, run]
        run_draw = run_open[rows, run] & (t.run_missing[roll, run] <= 1)
        run_keep = t.run_keep[roll, run]
    else:
        run_best = np.zeros(n, dtype=np.intp)
        run_draw = np.zeros(n, dtype=bool)
        run_keep = np.zeros(n, dtype=np.intp)
    full_house_open = is_open[:, t.full_house] if t.full_house >= 0 else np.zeros(n, dtype=bool)
    two_pair_keep = t.two_pair_keep[roll]

    fallback = np.where(
        run_best > 0, run_keep, np.where(full_house_open, face_keep, t.high_keep[roll])
    )  # rule 5 when no face can pay
    keep = np.select(
        [face_count >= 3, run_draw, full_house_open & (two_pair_keep > 0), face_count > 0],
        [face_keep, run_keep, two_pair_keep, face_keep],
        fallback,
    )
    rolling = (rolls_left > 0) & ~made & (keep != R.KEEP_ALL)
    return np.where(rolling, keep, np.where(made & (rolls_left > 0), made_pick, pick))


class GreedyAgent(Agent):
    """The rule of thumb in this module's docstring, on any preset; deterministic."""

    def __init__(self, rules: str | R.Rules = "standard", name: str = "greedy") -> None:
        super().__init__(name, rules)
        greedy_tables(self.rules)  # built now, not on the first move

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return greedy_actions(self.rules, *self.encoder.decode(observations))
