"""``YachtEnv``: one solo game of Yacht as a Gymnasium environment."""

from __future__ import annotations

import operator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder

ILLEGAL_ACTION_POLICIES = ("ignore", "raise")
OBSERVATION_TYPES = ("flat", "dict")
DICE_STREAM_SHAPE = (R.NUM_CATEGORIES, R.ROLLS_PER_TURN, R.NUM_DICE)


def check_env_options(
    observation_type: str, illegal_action: str, illegal_action_penalty: float, max_illegal_actions: int | None
) -> None:
    """Validates the options the single and vector envs share; raises ``ValueError`` on bad ones."""
    if observation_type not in OBSERVATION_TYPES:
        raise ValueError(f"observation_type must be one of {OBSERVATION_TYPES}, got {observation_type!r}")
    if illegal_action not in ILLEGAL_ACTION_POLICIES:
        raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_POLICIES}, got {illegal_action!r}")
    if (
        not isinstance(illegal_action_penalty, (int, float, np.integer, np.floating))
        or isinstance(illegal_action_penalty, bool)
        or not np.isfinite(illegal_action_penalty)
    ):
        raise ValueError(f"illegal_action_penalty must be a finite number, got {illegal_action_penalty!r}")
    if max_illegal_actions is not None and (
        not isinstance(max_illegal_actions, (int, np.integer))
        or isinstance(max_illegal_actions, bool)
        or max_illegal_actions < 1
    ):
        raise ValueError(f"max_illegal_actions must be a positive int or None, got {max_illegal_actions!r}")


def dice_stream_codes(options: dict[str, Any] | None, leading: tuple[int, ...] = ()) -> np.ndarray | None:
    """The reset option ``dice_stream`` (``leading + (12, 3, 5)`` dice in 1..6) as prefix codes of its
    rows, shape ``leading + (36, 6)`` (row ``3 * turn + j`` is roll ``j`` of the turn); ``None`` if absent.

    Raises:
        ValueError: an unknown option, or a stream of the wrong shape or values.
    """
    options = options or {}
    unknown = set(options) - {"dice_stream"}
    if unknown:
        raise ValueError(f"unknown reset options {sorted(unknown)}; accepted: ['dice_stream']")
    if "dice_stream" not in options:
        return None
    shape = leading + DICE_STREAM_SHAPE
    try:
        array = np.asarray(options["dice_stream"])
        ok = array.shape == shape and np.issubdtype(array.dtype, np.integer) and ((array >= 1) & (array <= 6)).all()
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"dice_stream must be an int array of shape {shape} with values in 1..6")
    return R.prefix_codes(array.reshape(*leading, -1, R.NUM_DICE))


class YachtEnv(gym.Env):
    """A solo game of Yacht: 12 turns, each of up to three rolls of five dice, then one category scored.

    ## Description
    Yacht is the public-domain five-dice game from which Yahtzee descends. Each turn the five dice are
    rolled automatically; the agent may keep any dice and re-roll the rest up to two times, then must
    score the dice in one of the 12 categories still open. Every category is used exactly once, so a game
    is exactly 12 turns. There is no bonus and no joker. Two rule presets: ``standard`` (Four of a Kind
    scores 4 x the face) and ``classic`` (Four of a Kind scores all five dice). See the README for the
    scoring table.

    ## Action Space
    ``Discrete(44)``. Dice are always shown sorted ascending (``info["dice"]``).

    * ``a`` in ``0..31``: keep-mask. Bit ``i`` of ``a`` (``a >> i & 1``) keeps die ``i``; the other dice
      are re-rolled, using one roll. Legal only while rolls are left, never ``31`` (that re-rolls
      nothing), and by default only the canonical mask of each distinct kept multiset (the numerically
      smallest: for 2-2-3-5-6, "keep one 2" is mask 1, not mask 2). ``canonical_keeps=False`` allows all.
    * ``a = 32 + k``: score the dice in ``CATEGORIES[k]``, ending the turn; legal iff ``k`` is open.
      Scoring is allowed after any roll.

    The legal actions are ``env.action_masks()`` (bool, for sb3-contrib's ``MaskablePPO``) and
    ``info["action_mask"]`` (int8, shape ``(44,)``) on every reset and step.

    ## Observation Space
    ``observation_type="flat"`` (default): ``Box(0, 1, (64,), float32)``, laid out as

    * ``[0:30]`` the sorted dice one-hot (``6 * i + face - 1``), ``[30:36]`` face counts / 5,
    * ``[36:39]`` rolls left one-hot,
    * ``[39:51]`` what each open category would score now / 50 (0 when filled),
    * ``[51:63]`` open categories (1 = open), ``[63]`` the fraction of categories still open.

    ``observation_type="dict"``: ``Dict(dice=Box(1, 6, (5,), int8), rolls_left=Discrete(3),
    open_categories=MultiBinary(12))``. The layout lives in ``yacht_env/encoding.py``.

    ## Starting State
    All 12 categories open, a first roll of five dice drawn, two re-rolls left.

    ## Rewards
    The points a category pick scores (0..50); 0 for a keep. The sum of rewards of a game is its final
    score. An illegal action earns ``illegal_action_penalty`` (default 0.0), which never counts in
    ``info["total"]``.

    ## Episode End
    Terminated after the 12th category pick. Truncated when ``max_illegal_actions`` illegal actions
    (default 100) have been taken in the episode, so no episode runs forever: legal play ends within 36
    steps. Stepping a finished episode raises ``ValueError``; call ``reset()``.

    ## Information
    On reset and every step: ``"dice"`` (tuple of 5 ints, sorted ascending), ``"rolls_left"`` (0..2),
    ``"scores"`` (dict category name -> points, ``None`` while open), ``"total"`` (int),
    ``"action_mask"`` (int8 (44,)), ``"illegal_action"`` (bool: whether this step's action was
    ignored as illegal). To run many games, use the native vector env (what
    ``gymnasium.make_vec("Yacht-v0", num_envs=N)`` returns): gymnasium's ``SyncVectorEnv`` types each
    info key by its first env's value and cannot batch ``"scores"``' mix of ``None`` and ints.

    ## Arguments
    ```python
    import gymnasium as gym
    import yacht_env  # registers Yacht-v0

    env = gym.make("Yacht-v0", rules="standard", observation_type="flat", canonical_keeps=True,
                   illegal_action="ignore", illegal_action_penalty=0.0, max_illegal_actions=100,
                   render_mode=None)
    ```
    * ``rules``: ``"standard"``, ``"classic"`` or a :class:`yacht_env.Rules`.
    * ``observation_type``: ``"flat"`` or ``"dict"``.
    * ``canonical_keeps``: only the smallest keep-mask of each kept multiset is legal.
    * ``illegal_action``: ``"ignore"`` (the state does not change) or ``"raise"`` (``ValueError``
      naming the action and why it is illegal).
    * ``illegal_action_penalty``: reward for an ignored illegal action.
    * ``max_illegal_actions``: illegal actions per episode before truncation (``None``: never).
    * ``render_mode``: ``"ansi"`` returns the score sheet as text, ``"human"`` prints it.

    ``reset(seed=s)`` reproduces a game exactly: all dice come from ``self.np_random``, drawn at
    reset as a ``(12, 3, 5)`` dice stream (turn, roll of the turn, die; ``rules.draw_prefix_codes``).
    ``reset(options={"dice_stream": s})`` plays a given stream instead (replays, common random
    numbers). Roll ``j`` of a turn (0 = the automatic first roll) uses row ``stream[turn, j]``: a
    re-roll of ``m`` dice takes that row's first ``m`` values.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        rules: str | R.Rules = "standard",
        observation_type: str = "flat",
        canonical_keeps: bool = True,
        illegal_action: str = "ignore",
        illegal_action_penalty: float = 0.0,
        max_illegal_actions: int | None = 100,
        render_mode: str | None = None,
    ) -> None:
        check_env_options(observation_type, illegal_action, illegal_action_penalty, max_illegal_actions)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.rules = R.get_rules(rules)
        self.observation_type = observation_type
        self.canonical_keeps = bool(canonical_keeps)
        self.illegal_action = illegal_action
        self.illegal_action_penalty = float(illegal_action_penalty)
        self.max_illegal_actions = max_illegal_actions
        self.render_mode = render_mode

        self._encoder = ObservationEncoder(self.rules)
        self._score = R.score_table(self.rules)
        self.action_space = spaces.Discrete(R.NUM_ACTIONS)
        self.observation_space = self._encoder.flat_space if observation_type == "flat" else self._encoder.dict_space

        self._codes = np.zeros((R.NUM_CATEGORIES * R.ROLLS_PER_TURN, R.NUM_DICE + 1), dtype=np.int32)
        self._roll = 0
        self._rolls_left = 0
        self._open = 0
        self._turn = 0
        self._sheet: list[int | None] = [None] * R.NUM_CATEGORIES
        self._total = 0
        self._illegal_count = 0
        self._done = True
        self._mask = np.zeros(R.NUM_ACTIONS, dtype=bool)

    # ---------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        # The game's dice: row 3 * turn + j holds roll j of the turn, as rules.prefix_codes.
        self._codes = dice_stream_codes(options)
        if self._codes is None:
            self._codes = R.draw_prefix_codes(self.np_random, (R.NUM_CATEGORIES * R.ROLLS_PER_TURN,))
        self._turn = 0
        self._roll = R.roll_from_code(self._codes[0, R.NUM_DICE])
        self._rolls_left = R.MAX_ROLLS_LEFT
        self._open = R.ALL_OPEN
        self._sheet = [None] * R.NUM_CATEGORIES
        self._total = 0
        self._illegal_count = 0
        self._done = False
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), self._get_info(False)

    def step(self, action):
        if self._done:
            raise ValueError("the episode is over; call reset() before step()")
        try:
            action = operator.index(action)
        except TypeError:
            raise ValueError(f"action must be an int in 0..{R.NUM_ACTIONS - 1}, got {action!r}") from None
        if not 0 <= action < R.NUM_ACTIONS:
            raise ValueError(f"action must be an int in 0..{R.NUM_ACTIONS - 1}, got {action!r}")
        terminated = truncated = False
        reward = 0.0
        legal = bool(self._mask[action])  # the mask this state was shown with: one source of legality
        if not legal:
            if self.illegal_action == "raise":
                raise ValueError(R.describe_illegal(action, self._roll, self._rolls_left))
            self._illegal_count += 1
            reward = self.illegal_action_penalty
            truncated = self.max_illegal_actions is not None and self._illegal_count >= self.max_illegal_actions
        elif action < R.PICK_OFFSET:
            row = self._turn * R.ROLLS_PER_TURN + R.ROLLS_PER_TURN - self._rolls_left
            self._roll = R.reroll(self._roll, action, self._codes[row])
            self._rolls_left -= 1
        else:
            category = action - R.PICK_OFFSET
            points = int(self._score[self._roll, category])
            self._sheet[category] = points
            self._total += points
            self._open &= ~(1 << category)
            reward = float(points)
            if self._open == 0:
                terminated = True
                self._rolls_left = 0
            else:
                self._turn += 1
                self._roll = R.roll_from_code(self._codes[self._turn * R.ROLLS_PER_TURN, R.NUM_DICE])
                self._rolls_left = R.MAX_ROLLS_LEFT
        self._done = terminated or truncated
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), reward, terminated, truncated, self._get_info(not legal)

    def action_masks(self) -> np.ndarray:
        """The legal actions now, bool of shape (44,) (the method sb3-contrib's MaskablePPO calls)."""
        if self._done:
            return np.zeros(R.NUM_ACTIONS, dtype=bool)
        return R.legal_action_mask(self._roll, self._rolls_left, self._open, self.canonical_keeps)

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        text = self._score_sheet()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ---------------------------------------------------------------------------------------------
    def _get_obs(self):
        if self.observation_type == "flat":
            return self._encoder.flat(self._roll, self._rolls_left, self._open)
        return self._encoder.structured(self._roll, self._rolls_left, self._open)

    def _get_info(self, illegal: bool) -> dict[str, Any]:
        self._mask = self.action_masks()
        return {
            "dice": R.ROLL_TUPLES[self._roll],
            "rolls_left": self._rolls_left,
            "scores": dict(zip(R.CATEGORIES, self._sheet, strict=True)),
            "total": self._total,
            "action_mask": self._mask.view(np.int8),
            "illegal_action": illegal,
        }

    def _score_sheet(self) -> str:
        dice = " ".join(str(v) for v in R.ROLL_TUPLES[self._roll])
        turn = min(self._turn + 1, R.NUM_CATEGORIES)
        lines = [
            f"Yacht ({self.rules.name})  turn {turn}/12  rolls left: {self._rolls_left}",
            f"dice: {dice}",
            f"  {'action':>6}  {'category':<16} {'score':>5}  {'now':>4}",
        ]
        for k, name in enumerate(R.CATEGORIES):
            filled = self._sheet[k]
            now = "" if filled is not None else str(int(self._score[self._roll, k]))
            shown = "-" if filled is None else str(filled)
            lines.append(f"  {R.PICK_OFFSET + k:>6}  {name:<16} {shown:>5}  {now:>4}")
        lines.append(f"  {'':>6}  {'total':<16} {self._total:>5}")
        return "\n".join(lines)
