"""``YachtEnv``: one solo game of Yacht as a Gymnasium environment."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.game import GameState, draw_stream, parse_dice_stream
from yacht_env.rules import is_int

ILLEGAL_ACTION_POLICIES = ("ignore", "raise")
OBSERVATION_TYPES = ("flat", "dict")


def _is_finite_number(value: object) -> bool:
    if not (is_int(value) or isinstance(value, (float, np.floating))):
        return False
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except OverflowError:  # an int too large for a float, e.g. 10**400
        return False


def configure(
    env: gym.Env | gym.vector.VectorEnv,
    rules: str | R.Rules,
    observation_type: str,
    canonical_keeps: bool,
    illegal_action: str,
    illegal_action_penalty: float,
    max_illegal_actions: int | None,
) -> None:
    """Validates the options the single and vector envs share and sets them on ``env``, with its encoder.

    Raises:
        ValueError: a bad option, named with what is accepted.
    """
    if not isinstance(observation_type, str) or observation_type not in OBSERVATION_TYPES:
        raise ValueError(f"observation_type must be one of {OBSERVATION_TYPES}, got {observation_type!r}")
    if not isinstance(canonical_keeps, (bool, np.bool_)):
        raise ValueError(f"canonical_keeps must be True or False, got {canonical_keeps!r}")
    if not isinstance(illegal_action, str) or illegal_action not in ILLEGAL_ACTION_POLICIES:
        raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_POLICIES}, got {illegal_action!r}")
    if not _is_finite_number(illegal_action_penalty):
        raise ValueError(f"illegal_action_penalty must be a finite number, got {illegal_action_penalty!r}")
    if max_illegal_actions is not None and (not is_int(max_illegal_actions) or max_illegal_actions < 1):
        raise ValueError(f"max_illegal_actions must be a positive int or None, got {max_illegal_actions!r}")
    env.rules = R.get_rules(rules)
    env.observation_type = observation_type
    env.canonical_keeps = bool(canonical_keeps)
    env.illegal_action = illegal_action
    env.illegal_action_penalty = float(illegal_action_penalty)
    env.max_illegal_actions = None if max_illegal_actions is None else int(max_illegal_actions)
    env._encoder = ObservationEncoder(env.rules)


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
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        configure(
            self, rules, observation_type, canonical_keeps, illegal_action, illegal_action_penalty, max_illegal_actions
        )
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(self.rules.num_actions)
        self.observation_space = self._encoder.flat_space if observation_type == "flat" else self._encoder.dict_space
        self._game = GameState(self.rules, canonical_keeps=self.canonical_keeps)  # one game: the rules' state
        self._illegal_count = 0
        self._done = True

    # ---------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        stream = parse_dice_stream(options, self.rules)
        self._game.start(draw_stream(self.np_random, self.rules) if stream is None else stream)
        self._illegal_count = 0
        self._done = False
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), self._get_info(False)

    def step(self, action):
        if self._done:
            raise ValueError("the episode is over; call reset() before step()")
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action[()]  # a 0-d array, as some wrappers pass it
        if not is_int(action) or not 0 <= action < self.rules.num_actions:
            raise ValueError(f"action must be an int in 0..{self.rules.num_actions - 1}, got {action!r}")
        action = int(action)
        game = self._game
        terminated = truncated = False
        legal = bool(game.mask[action])  # the mask this state was shown with: one source of legality
        if legal:
            points, terminated = game.play(action)
            reward = float(points)
        else:
            if self.illegal_action == "raise":
                raise ValueError(R.describe_illegal(action, game.roll, game.rolls_left, self.rules.categories))
            self._illegal_count += 1
            reward = self.illegal_action_penalty
            truncated = self.max_illegal_actions is not None and self._illegal_count >= self.max_illegal_actions
        self._done = terminated or truncated
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), reward, terminated, truncated, self._get_info(not legal)

    def action_masks(self) -> np.ndarray:
        """The legal actions now, bool of shape ``(num_actions,)`` (the method sb3-contrib's MaskablePPO calls).

        A new array each call: writing to it cannot change the env.
        """
        if self._done:
            return np.zeros(self.rules.num_actions, dtype=bool)
        return self._game.mask.copy()

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
        return self._encoder.observe(self._game, self.observation_type)

    def _get_info(self, illegal: bool) -> dict[str, Any]:
        game = self._game
        return {
            "dice": R.ROLL_TUPLES[game.roll],
            "rolls_left": game.rolls_left,
            "scores": {
                k: None if v < 0 else v for k, v in zip(self.rules.categories, game.sheet.tolist(), strict=True)
            },
            "total": game.total,
            "action_mask": self.action_masks().view(np.int8),
            "illegal_action": illegal,
        }

    def _score_sheet(self) -> str:
        game, rules = self._game, self.rules
        dice = " ".join(str(v) for v in R.ROLL_TUPLES[game.roll])
        turn = min(game.turn + 1, rules.num_turns)
        lines = [
            f"Yacht ({rules.name})  turn {turn}/{rules.num_turns}  rolls left: {game.rolls_left}",
            f"dice: {dice}",
            f"  {'action':>6}  {'category':<16} {'score':>5}  {'now':>4}",
        ]
        score_now = R.score_table(rules)[game.roll]
        for k, name in enumerate(rules.categories):
            filled = int(game.sheet[k])
            now = "" if filled >= 0 else str(int(score_now[k]))
            shown = "-" if filled < 0 else str(filled)
            lines.append(f"  {R.PICK_OFFSET + k:>6}  {name:<16} {shown:>5}  {now:>4}")
        lines.append(f"  {'':>6}  {'total':<16} {game.total:>5}")
        return "\n".join(lines)
