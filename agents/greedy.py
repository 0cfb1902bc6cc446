"""``greedy``: a fixed rule-of-thumb policy read off the rules core's tables (no look-ahead, no solver).

The rule, for each state (dice sorted, "open" = category not yet filled):

With re-rolls left:

1. **Take a made hand.** If the dice already score in an open Yacht, Big Straight, Little Straight or
   Full House (checked in that order), score it now.
2. **Of a kind.** The *target face* is the face showing on the most dice, counting only faces that can
   still pay (its upper category, Four of a Kind or Yacht is open); ties go to the higher face. With
   three or more of it, keep those dice and re-roll the rest.
3. **Straight draw.** Else, if an open straight is four faces away from done (four of its five faces
   show), keep one die of each of those faces (Big Straight first on a tie).
4. **Full House draw.** Else, with two pairs and Full House open, keep both pairs.
5. **Else keep the target face** (one or two dice). With no face that can still pay, go for an open
   straight (keep one die of each face of its run), else Full House (keep the target face), else Choice
   (keep the 4s, 5s and 6s).

A keep that would keep all five dice (e.g. a Yacht after Yacht is filled) scores instead.

With no re-rolls left (or when scoring): pick the open category that **scores the most now**; ties (zeros
included) sacrifice the category worth least in expectation, in the fixed order :data:`SACRIFICE_ORDER`:
ones, twos, threes, yacht, fours, little straight, big straight, full house, fives, four of a kind,
sixes, choice. (Yacht comes early: a zero there gives up only the chance of a later one, about 5% per
turn spent chasing it, some 2.3 points; Choice comes last because it always scores well.)

Measured with ``python evaluate.py`` (10,000 games, seed 0): 144.9 a game on the standard preset (86.8% of
optimal play's 166.96, a Yacht in 31% of games) and 148.4 on classic (87.4% of 169.77). The straight draw
(rule 3) is worth about 12 points: with rules 1, 2 and 5 only it scores about 134.
"""

from __future__ import annotations

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R

C = R.Category
#: The order in which zeros and ties are given to categories: least expected worth first.
SACRIFICE_ORDER: tuple[int, ...] = (
    C.ONES,
    C.TWOS,
    C.THREES,
    C.YACHT,
    C.FOURS,
    C.LITTLE_STRAIGHT,
    C.BIG_STRAIGHT,
    C.FULL_HOUSE,
    C.FIVES,
    C.FOUR_OF_A_KIND,
    C.SIXES,
    C.CHOICE,
)
MADE_HANDS: tuple[int, ...] = (C.YACHT, C.BIG_STRAIGHT, C.LITTLE_STRAIGHT, C.FULL_HOUSE)  # rule 1, in order
STRAIGHT_RUNS = {C.LITTLE_STRAIGHT: (1, 2, 3, 4, 5), C.BIG_STRAIGHT: (2, 3, 4, 5, 6)}

_FACES = np.arange(1, R.NUM_FACES + 1)
_BITS = 1 << np.arange(R.NUM_DICE)
# _PICK_RANK[k]: larger for the category to sacrifice first, so argmax(score * 16 + rank) breaks ties by it.
_PICK_RANK = np.empty(R.NUM_CATEGORIES, dtype=np.int64)
_PICK_RANK[list(SACRIFICE_ORDER)] = np.arange(R.NUM_CATEGORIES)[::-1]


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


def _keep_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-roll keep-masks of the rule's patterns (rows of ``rules.ROLLS``)."""
    dice = R.ROLLS
    face_keep = ((dice[:, :, None] == _FACES) * _BITS[None, :, None]).sum(axis=1)  # (252, 6): all dice of a face
    run_keep = np.array([[_first_of_each(row, STRAIGHT_RUNS[k]) for k in STRAIGHT_RUNS] for row in dice])  # (252, 2)
    run_faces = np.array([[len(set(row.tolist()) & set(STRAIGHT_RUNS[k])) for k in STRAIGHT_RUNS] for row in dice])
    pairs = R.ROLL_COUNTS == 2
    two_pair_keep = np.where(pairs.sum(axis=1) == 2, (face_keep * pairs).sum(axis=1), 0)  # 0: not two pairs
    choice_keep = ((dice >= 4) * _BITS).sum(axis=1)
    return face_keep, run_keep, run_faces, two_pair_keep, choice_keep


_FACE_KEEP, _RUN_KEEP, _RUN_FACES, _TWO_PAIR_KEEP, _CHOICE_KEEP = _keep_tables()
_RUN_CATEGORIES = np.array(list(STRAIGHT_RUNS))


def greedy_actions(score: np.ndarray, roll: np.ndarray, rolls_left: np.ndarray, open_mask: np.ndarray) -> np.ndarray:
    """The greedy rule's actions for states given as the rules core's int arrays (shape ``(N,)``).

    Args:
        score: ``rules.score_table(rules)``.
        roll, rolls_left, open_mask: The states.
    """
    is_open = R.OPEN_BITS[open_mask]  # (N, 12)
    points = score[roll].astype(np.int64)  # (N, 12)
    pick = R.PICK_OFFSET + np.where(is_open, points * 16 + _PICK_RANK, -1).argmax(axis=1)

    made = np.zeros(len(roll), dtype=bool)
    made_pick = np.zeros(len(roll), dtype=np.intp)
    for k in MADE_HANDS[::-1]:  # the first listed wins, so it is written last
        hit = is_open[:, k] & (points[:, k] > 0)
        made |= hit
        made_pick[hit] = R.PICK_OFFSET + k

    counts = R.ROLL_COUNTS[roll].astype(np.int64)  # (N, 6)
    pays = is_open[:, : R.NUM_FACES] | (is_open[:, C.FOUR_OF_A_KIND] | is_open[:, C.YACHT])[:, None]
    # Faces that can pay first, then the most dice, then the higher face.
    face = np.where(counts > 0, pays * 64 + counts * 8 + _FACES, -1).argmax(axis=1)
    rows = np.arange(len(roll))
    face_count = counts[rows, face] * pays[rows, face]  # 0 when no face can pay
    face_keep = _FACE_KEEP[roll, face]

    run_open = is_open[:, _RUN_CATEGORIES]  # (N, 2): little, big
    run_faces = np.where(run_open, _RUN_FACES[roll], 0)
    run = 1 - run_faces[:, ::-1].argmax(axis=1)  # the open run with the most faces showing, big first on a tie
    run_best = run_faces[rows, run]
    run_keep = _RUN_KEEP[roll, run]
    two_pair_keep = _TWO_PAIR_KEEP[roll]

    fallback = np.where(
        run_best > 0, run_keep, np.where(is_open[:, C.FULL_HOUSE], face_keep, _CHOICE_KEEP[roll])
    )  # rule 5 when no face can pay
    keep = np.select(
        [face_count >= 3, run_best >= 4, is_open[:, C.FULL_HOUSE] & (two_pair_keep > 0), face_count > 0],
        [face_keep, run_keep, two_pair_keep, face_keep],
        fallback,
    )
    rolling = (rolls_left > 0) & ~made & (keep != R.KEEP_ALL)
    return np.where(rolling, keep, np.where(made & (rolls_left > 0), made_pick, pick))


class GreedyAgent(Agent):
    """The rule of thumb in this module's docstring; deterministic."""

    def __init__(self, rules: str | R.Rules = "standard", name: str = "greedy") -> None:
        super().__init__(name, rules)
        if self.rules.categories != R.CATEGORIES:
            raise ValueError(f"the greedy rule is written for Yacht's 12 categories, not {self.rules.categories}")
        self._score = R.score_table(self.rules)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return greedy_actions(self._score, *self.encoder.decode(observations)[:3])
