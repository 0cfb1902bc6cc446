"""The observation encoder shared by :class:`~yacht_env.YachtEnv` and the vector env.

Both envs build every observation with :meth:`ObservationEncoder.flat` or
:meth:`ObservationEncoder.structured` on the rules core's state integers, scalar or batched, so their
observations cannot drift apart.

Flat layout (``float32``, 64 values, every value in ``[0, 1]``):

=========  =====  ==============================================================================
index      size   meaning
=========  =====  ==============================================================================
0..29      30     the five sorted dice, one-hot: ``obs[6 * i + (face - 1)] = 1`` for die ``i``
30..35     6      face counts / 5: ``obs[30 + f]`` = (number of dice showing ``f + 1``) / 5
36..38     3      rolls left, one-hot: ``obs[36 + rolls_left] = 1``
39..50     12     what each open category would score now / 50 (0 for filled categories); 50 is
                  the preset's largest category score (a Yacht), so custom rules rescale it
51..62     12     open categories: ``obs[51 + k] = 1`` iff ``CATEGORIES[k]`` is open
63         1      fraction of the 12 categories still open
=========  =====  ==============================================================================

Structured (``observation_type="dict"``): ``{"dice": int8 (5,) sorted values 1..6,
"rolls_left": int in 0..2, "open_categories": int8 (12,) 0/1}``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from yacht_env import rules as R

OBS_SIZE = 64
DICE_SLICE = slice(0, 30)
COUNTS_SLICE = slice(30, 36)
ROLLS_LEFT_SLICE = slice(36, 39)
SCORE_NOW_SLICE = slice(39, 51)
OPEN_SLICE = slice(51, 63)
OPEN_FRACTION_INDEX = 63


class ObservationEncoder:
    """Builds observations from ``(roll, rolls_left, open_mask)``, one state or a batch of them."""

    def __init__(self, rules: str | R.Rules = "standard") -> None:
        self.rules = R.get_rules(rules)
        # Two tables cover the whole observation: one row per (roll, rolls_left) with the dice, counts,
        # rolls left and every category's score now; one row per open mask with the open bits and
        # fraction. The score-now part is then zeroed for filled categories by one multiply.
        dice_one_hot = np.zeros((R.NUM_ROLLS, R.NUM_DICE, R.NUM_FACES), dtype=np.float32)
        for r, dice in enumerate(R.ROLLS):
            dice_one_hot[r, np.arange(R.NUM_DICE), dice - 1] = 1.0
        roll_part = np.concatenate(
            [
                dice_one_hot.reshape(R.NUM_ROLLS, -1),
                R.ROLL_COUNTS.astype(np.float32) / R.NUM_DICE,
            ],
            axis=1,
        )
        # Scaled by the preset's largest category score (50, a Yacht, in both presets) so obs stay in [0, 1].
        self.score_scale = float(max(R.score_table(self.rules).max(), 1))
        score_now = R.score_table(self.rules).astype(np.float32) / self.score_scale
        self._by_roll = np.concatenate(
            [
                np.repeat(roll_part, R.ROLLS_PER_TURN, axis=0),
                np.tile(np.eye(R.ROLLS_PER_TURN, dtype=np.float32), (R.NUM_ROLLS, 1)),
                np.repeat(score_now, R.ROLLS_PER_TURN, axis=0),
            ],
            axis=1,
        )  # row 3 * roll + rolls_left: obs[0:51] before zeroing filled categories
        open_bits = R.OPEN_BITS.astype(np.float32)
        self._by_open = np.concatenate([open_bits, open_bits.mean(axis=1, keepdims=True)], axis=1)  # obs[51:64]
        self.flat_space = spaces.Box(0.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)
        self.dict_space = spaces.Dict(
            {
                "dice": spaces.Box(1, R.NUM_FACES, shape=(R.NUM_DICE,), dtype=np.int8),
                "rolls_left": spaces.Discrete(R.ROLLS_PER_TURN),
                "open_categories": spaces.MultiBinary(R.NUM_CATEGORIES),
            }
        )

    def flat(self, roll, rolls_left, open_mask) -> np.ndarray:
        """The flat ``float32`` observation, shape ``(..., 64)``."""
        if type(roll) is int:  # the single env's fast path: same tables, fewer numpy calls
            out = np.concatenate((self._by_roll[roll * R.ROLLS_PER_TURN + rolls_left], self._by_open[open_mask]))
            out[SCORE_NOW_SLICE] *= out[OPEN_SLICE]
            return out
        roll = np.asarray(roll)
        out = np.empty((*roll.shape, OBS_SIZE), dtype=np.float32)
        # Gathers straight into the output: much faster than concatenating gathered pieces.
        np.take(self._by_roll, roll * R.ROLLS_PER_TURN + rolls_left, axis=0, out=out[..., :51], mode="clip")
        np.take(self._by_open, open_mask, axis=0, out=out[..., 51:], mode="clip")
        out[..., SCORE_NOW_SLICE] *= out[..., OPEN_SLICE]
        return out

    @staticmethod
    def decode(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The state ``(roll, rolls_left, open_mask)`` behind flat observations of shape ``(..., 64)``."""
        obs = np.asarray(obs)
        dice = obs[..., DICE_SLICE].reshape(*obs.shape[:-1], R.NUM_DICE, R.NUM_FACES).argmax(axis=-1) + 1
        roll = R.roll_index(dice)
        rolls_left = obs[..., ROLLS_LEFT_SLICE].argmax(axis=-1)
        open_mask = (obs[..., OPEN_SLICE] > 0.5) @ (1 << np.arange(R.NUM_CATEGORIES))
        return np.asarray(roll), rolls_left, open_mask

    def structured(self, roll, rolls_left, open_mask) -> dict[str, np.ndarray]:
        """The ``Dict`` observation; batched arrays gain a leading axis."""
        return {
            "dice": R.ROLLS[roll].copy(),
            "rolls_left": np.int64(rolls_left) if np.ndim(rolls_left) == 0 else np.array(rolls_left, dtype=np.int64),
            "open_categories": R.OPEN_BITS[open_mask].astype(np.int8),
        }
