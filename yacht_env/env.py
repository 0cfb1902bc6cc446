"""``YachtEnv``: one solo game of Yacht as a Gymnasium environment."""

from __future__ import annotations

import inspect
import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from yacht_env import chance
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.game import GameState, bonus_info, draw_stream, parse_dice_stream
from yacht_env.rules import as_int, is_int

ILLEGAL_ACTION_POLICIES = ("ignore", "raise")
OBSERVATION_TYPES = ("flat", "dict", "masked")
ACTION_MASK_DTYPES = ("int8", "bool")
ILLEGAL_ACTION_HINT = (
    "Yacht: an illegal action was ignored (the state did not change; info['illegal_actions'] counts them). "
    "Pass the action masks to the policy: info['action_mask'], observation_type='masked', or "
    "env.get_wrapper_attr('action_masks')() (env.action_masks() on the unwrapped env)"
)


def configure_from(env: object, options: dict[str, Any], **defaults: Any) -> None:
    """:func:`configure` from an env's keyword arguments; an unknown one is a ``ValueError``, not a ``TypeError``."""
    accepted = set(inspect.signature(configure).parameters) - {"env", "observation_types"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(f"unknown argument {unknown[0]!r}; accepted: {sorted(accepted)}")
    configure(env, **{**defaults, **options})


def _is_finite_number(value: object) -> bool:
    if not (is_int(value) or isinstance(value, (float, np.floating))):
        return False
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except OverflowError:  # an int too large for a float, e.g. 10**400
        return False


def configure(
    env: object,
    rules: str | R.Rules = "standard",
    canonical_keeps: bool = True,
    illegal_action: str = "ignore",
    illegal_action_penalty: float = 0.0,
    max_illegal_actions: int | None = 100,
    observation_type: str = "flat",
    action_mask_dtype: str = "int8",
    observation_types: tuple[str, ...] | None = OBSERVATION_TYPES,
) -> None:
    """Validates the options every Yacht env shares and sets them on ``env`` (the one place that checks them).

    The batched envs take these options as keyword arguments and pass them here; the defaults are
    ``Yacht-v0``'s. ``observation_type`` (one of ``observation_types``) and ``action_mask_dtype`` are checked
    and set unless ``observation_types`` is ``None`` (the PettingZoo env has one observation type); any
    other ``observation_type``, ``None`` included, is a ``ValueError``.

    Raises:
        ValueError: a bad option, named with what is accepted.
    """
    if observation_types is not None:
        if not isinstance(observation_type, str) or observation_type not in observation_types:
            raise ValueError(f"observation_type must be one of {observation_types}, got {observation_type!r}")
        if not isinstance(action_mask_dtype, str) or action_mask_dtype not in ACTION_MASK_DTYPES:
            raise ValueError(f"action_mask_dtype must be one of {ACTION_MASK_DTYPES}, got {action_mask_dtype!r}")
        env.observation_type = observation_type
        env.action_mask_dtype = action_mask_dtype
    if not isinstance(canonical_keeps, (bool, np.bool_)):
        raise ValueError(f"canonical_keeps must be True or False, got {canonical_keeps!r}")
    if not isinstance(illegal_action, str) or illegal_action not in ILLEGAL_ACTION_POLICIES:
        raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_POLICIES}, got {illegal_action!r}")
    if not _is_finite_number(illegal_action_penalty):
        raise ValueError(f"illegal_action_penalty must be a finite number, got {illegal_action_penalty!r}")
    if max_illegal_actions is not None and (not is_int(max_illegal_actions) or max_illegal_actions < 1):
        raise ValueError(f"max_illegal_actions must be a positive int or None, got {max_illegal_actions!r}")
    env.rules = R.get_rules(rules)
    env.canonical_keeps = bool(canonical_keeps)
    env.illegal_action = illegal_action
    env.illegal_action_penalty = float(illegal_action_penalty)
    env.max_illegal_actions = None if max_illegal_actions is None else int(max_illegal_actions)


def checked_render_mode(render_mode: object, render_modes: list[str]) -> object:
    """``render_mode`` as given; one this env cannot render warns (as Gymnasium's own envs do), never raises."""
    if render_mode is not None and render_mode not in render_modes:
        gym.logger.warn(f"render_mode={render_mode!r} is not one of {render_modes}; render() will return None")
    return render_mode


def cannot_render(render_mode: object, render_modes: list[str]) -> bool:
    """Whether ``render()`` has nothing to return in ``render_mode``; then it warns (render returns ``None``)."""
    if render_mode in render_modes:
        return False
    gym.logger.warn(f"render() called with render_mode={render_mode!r}; pass one of {render_modes}")
    return True


class YachtEnv(gym.Env):
    """A solo game of Yacht: 12 turns, each of up to three rolls of five dice, then one category scored.

    ## Description
    Yacht is the public-domain five-dice game from which Yahtzee descends. Each turn the five dice are
    rolled automatically; the agent may keep any dice and re-roll the rest up to two times, then must
    score the dice in one of the 12 categories still open. Every category is used exactly once, so a game
    is exactly 12 turns: **one episode** is one solo game. There is no bonus and no joker. Rule presets:
    ``standard`` (Four of a Kind scores 4 x the face), ``classic`` (Four of a Kind scores all five dice)
    and ``knizia``; the scoring table is in the docs' rules page (``docs/rules.md``).

    ## Observation
    ``observation_type="flat"`` (default): ``Box(0, 1, (64,), float32)``, ready for SB3's ``MlpPolicy``
    (the layout lives in ``yacht_env/encoding.py``):

    | index | size | meaning |
    |---|---|---|
    | 0..29 | 30 | the five sorted dice, one-hot: ``obs[6 * i + face - 1] = 1`` for die ``i`` |
    | 30..35 | 6 | face counts / 5 |
    | 36..38 | 3 | rolls left (0, 1, 2), one-hot |
    | 39..50 | 12 | what each open category would score now / 50 (0 for filled ones) |
    | 51..62 | 12 | open categories (1 = open) |
    | 63 | 1 | fraction of the categories still open |

    ``observation_type="dict"``: ``Dict(dice=Box(1, 6, (5,), int8), rolls_left=Discrete(3),
    open_categories=MultiBinary(12))``.

    ``observation_type="masked"``: the mask inside the observation, PettingZoo's and Tianshou's
    convention: ``Dict(observation=<the flat Box>, action_mask=Box(0, 1, (44,), int8))``; with
    ``action_mask_dtype="bool"`` the mask is a bool ``Box`` (for libraries that index with it, e.g.
    TorchRL's ``ActionMask``).

    ## Action mask
    The legal actions are ``info["action_mask"]`` (int8, shape ``(44,)``, what Gymnasium's
    ``Discrete.sample(mask=...)`` takes) on every reset and step; with ``observation_type="masked"``,
    ``obs["action_mask"]``; and the method ``action_masks()`` (bool, what sb3-contrib's ``MaskablePPO``
    calls). ``gymnasium.make`` wraps the env and Gymnasium 1.x wrappers do not forward methods, so on a made
    env call ``env.get_wrapper_attr("action_masks")()`` (or ``env.unwrapped.action_masks()``); plain
    ``env.action_masks()`` is an ``AttributeError`` there. SB3's vector envs reach it through the wrappers
    themselves (``env_method("action_masks")``), so ``MaskablePPO`` on ``make_vec_env("Yacht-v0")`` needs
    nothing. Each is a new array: writing to it cannot change the env. Once a game is over every action is
    allowed (pgx's convention), so a masked policy never meets an all-False row.

    ## Actions
    ``Discrete(44)``; the dice are always shown sorted ascending (``info["dice"]``):

    | action | meaning | legal when |
    |---|---|---|
    | ``a`` in ``0..31`` | keep-mask: bit ``i`` (``a >> i & 1``) keeps die ``i``, re-rolls the rest | rolls are left |
    | ``32 + k`` | score the dice in ``CATEGORIES[k]``, ending the turn | category ``k`` is open |

    A keep uses one roll. It is never ``31`` (that re-rolls nothing), and by default only the canonical
    (smallest) mask of each distinct kept multiset is legal: with 2-2-3-5-6, "keep one 2" is mask 1 or
    mask 2, and only mask 1 is legal (``canonical_keeps=False`` allows both). A pick is legal after any
    roll.

    ## Rewards
    The points a category pick scores (0..50); 0 for a keep. The sum of rewards of a game is its final
    score. An illegal action earns ``illegal_action_penalty`` (default 0.0), which never counts in
    ``info["total"]``.

    ## Starting State
    All 12 categories open, a first roll of five dice drawn, two re-rolls left.

    ## Episode End
    Terminated after the 12th category pick. Truncated when ``max_illegal_actions`` illegal actions
    (default 100) have been taken in the episode, so no episode runs forever: legal play ends within 36
    steps. Stepping a finished episode raises ``ValueError``; call ``reset()``.

    ## Illegal actions
    Illegal actions never crash: by default (``illegal_action="ignore"``) the state does not change, the
    reward is ``illegal_action_penalty`` (0.0) and ``info["illegal_action"]`` is True;
    ``illegal_action="raise"`` raises ``ValueError`` naming the action and why. An unmasked policy (e.g.
    SB3's ``evaluate_policy`` on a ``MaskablePPO`` model without ``use_masking``) is never silently wrong:
    the first illegal action an env ignores warns once through Gymnasium's logger (with the hint to pass
    the masks), and ``info["illegal_actions"]`` counts them.

    ## Information
    On reset and every step, numpy values only, with one dtype per key in every Yacht env (the native
    vector env, Gymnasium's sync and async vector envs over this one, ``YachtVersus-v0`` and the PettingZoo
    env), so CleanRL, Tianshou and TorchRL (``GymEnv(...).auto_register_info_dict()``) batch them unchanged:
    ``"dice"`` (int8 (5,), sorted ascending), ``"rolls_left"`` (int64, 0..2), ``"scores"`` (int16 (12,):
    points of each filled category, ``-1`` while open), ``"total"`` (int64), ``"action_mask"`` (int8
    (44,)), ``"illegal_action"`` (bool: this step's action was ignored as illegal) and
    ``"illegal_actions"`` (int64: how many this episode). Presets with an upper bonus add ``"upper"``
    (int64: the upper subtotal, capped at the bonus threshold), those with a Yahtzee bonus ``"armed"``
    (bool: the five-of-a-kind box holds its points, so another five of a kind earns the bonus).

    A number is a numpy scalar (``np.int64(23)``); a flag is a 0-d bool array (``np.array(False)``), not a
    numpy bool scalar, which Gymnasium's vector envs would batch into an object array. Both compare with
    ``==`` and convert with ``int()`` / ``bool()``; ``info["illegal_action"] is True`` is always False.

    ## Seeding
    ``reset(seed=s)`` reproduces a game exactly: all dice come from ``env.np_random``, drawn at reset as a
    ``(12, 3, 5)`` dice stream (turn, roll of the turn, die; ``rules.draw_prefix_codes``).
    ``reset(options={"dice_stream": s})`` plays a given stream instead (replays, common random numbers):
    roll ``j`` of a turn (0 = the automatic first roll) uses row ``s[turn, j]``, and a re-roll of ``m``
    dice takes that row's first ``m`` values.

    ## Planning
    The game's model for planners (:mod:`yacht_env.chance`; OpenSpiel's chance nodes): from the state now,
    ``env.unwrapped.afterstate(a)`` is the decision taken with its dice not yet fallen (after a keep the kept dice
    stay, one roll fewer is left; after a pick the box is scored and the next turn is about to be rolled; after the
    last pick nothing falls); ``env.unwrapped.chance_outcomes(a)`` lists the sorted rolls that can fall with their
    exact probabilities, OpenSpiel's ``[(outcome, probability), ...]`` (outcomes are rows of ``rules.ROLLS``);
    ``env.unwrapped.step_outcome(a, outcome)`` plays ``a`` as ``step`` does with the dice falling as ``outcome``.
    ``env.unwrapped.game_state()`` copies the game for a search, which goes on with
    ``yacht_env.chance.afterstate``, ``outcome_probabilities`` and ``step_outcome``:

    ```python
    import gymnasium as gym
    from yacht_env import chance

    env = gym.make("Yacht-v0")
    env.reset(seed=0)
    outcomes = env.unwrapped.chance_outcomes(0)  # re-roll all five dice
    assert len(outcomes) == 252 and abs(sum(p for _, p in outcomes) - 1) < 1e-12
    after = chance.afterstate(env.unwrapped.game_state(), 32)  # score the dice in "ones"
    state = chance.step_outcome(after, outcomes[0][0])  # the next turn's first roll: 1-1-1-1-1
    assert state.turn == 1 and state.roll == 0
    ```

    ## Rendering
    ``render_mode="ansi"`` returns the score sheet (dice, rolls left, every category with its score or
    what it would score now, the total); ``"human"`` prints it; ``"rgb_array"`` returns it as an image
    (uint8, 489 x 480 x 3 for 12 categories, drawn in pure numpy), so Gymnasium's video and
    frame-collecting wrappers and SB3's ``make_vec_env`` work. An unknown mode warns, as Gymnasium's own
    envs do, and ``render()`` then returns ``None``.

    The family's sheets (``yahtzee``, ``yatzy``, ...) show more, in the text and the image alike: the title
    names the game (``Yahtzee (yahtzee)``, ``Yatzy (yatzy)``); rows after the boxes give the ``upper bonus``
    (the upper subtotal toward it, ``45/63``, then its points: 35 once earned, 0 once every upper box is
    filled short) and, with a Yahtzee bonus, the ``yahtzee bonus`` earned so far; "now" is what an open box
    would hold (a joker's full points included) and is left out where the forced joker's placement rules the
    pick out. The image's size is fixed per preset (561 x 480 x 3 for Yahtzee, 585 x 480 x 3 for Yatzy).

    ## Arguments
    ```python
    import gymnasium as gym
    import yacht_env  # registers Yacht-v0

    env = gym.make(
        "Yacht-v0",
        rules="standard",
        observation_type="flat",
        action_mask_dtype="int8",
        canonical_keeps=True,
        illegal_action="ignore",
        illegal_action_penalty=0.0,
        max_illegal_actions=100,
        render_mode=None,
    )
    ```
    * ``rules``: a preset of ``yacht_env.rules.PRESETS``: Yacht's ``"standard"``, ``"classic"``,
      ``"knizia"``; the family's ``"yahtzee"``, ``"yahtzee_forced_joker"``, ``"yahtzee_no_joker"``,
      ``"yahtzee_no_bonus"``, ``"yatzy"``, ``"clubhouse"`` (Clubhouse Games' Yacht Dice); or a
      :class:`yacht_env.Rules` (run :func:`yacht_env.check_preset` on your own).
    * ``observation_type``: ``"flat"``, ``"dict"`` or ``"masked"``.
    * ``action_mask_dtype``: ``"int8"`` (default) or ``"bool"``: the mask's dtype in ``"masked"``
      observations.
    * ``canonical_keeps``: only the smallest keep-mask of each kept multiset is legal.
    * ``illegal_action``: ``"ignore"`` (the state does not change) or ``"raise"`` (``ValueError``
      naming the action and why it is illegal).
    * ``illegal_action_penalty``: reward for an ignored illegal action.
    * ``max_illegal_actions``: illegal actions per episode before truncation (``None``: never).
    * ``render_mode``: ``"ansi"``, ``"human"`` or ``"rgb_array"`` (see Rendering).

    **One id per preset.** Each preset is an id of its own, this env with those rules, so a script that takes only
    an env id can choose them (``gym.make_vec`` on it builds the native vector env on those rules, as on
    ``Yacht-v0``); a ``rules=`` given to ``make`` still wins over the id's preset, as Gymnasium's keyword arguments
    override the registered ones. ``yacht_env.env_id(preset)`` names the id:

    | id | rules |
    |---|---|
    | ``Yacht-v0`` | ``"standard"`` |
    | ``YachtClassic-v0`` | ``"classic"`` |
    | ``YachtKnizia-v0`` | ``"knizia"`` |
    | ``Yahtzee-v0`` | ``"yahtzee"`` |
    | ``YahtzeeForcedJoker-v0`` | ``"yahtzee_forced_joker"`` |
    | ``YahtzeeNoJoker-v0`` | ``"yahtzee_no_joker"`` |
    | ``YahtzeeNoBonus-v0`` | ``"yahtzee_no_bonus"`` |
    | ``Yatzy-v0`` | ``"yatzy"`` |
    | ``YachtClubhouse-v0`` | ``"clubhouse"`` |

    ```python
    import gymnasium as gym
    import yacht_env  # registers the ids

    env = gym.make("Yahtzee-v0")  # gym.make("Yacht-v0", rules="yahtzee")
    assert env.unwrapped.rules.name == "yahtzee" and env.action_space.n == 45
    ```

    **Variants are data.** Every size (categories, actions, turns, dice-stream rows, observation length)
    comes from the ``Rules`` object and the encoder, so a variant is a new preset: e.g.
    ``Rules("thirteen", categories=(*CATEGORIES, "three_of_a_kind"))`` plays 13 turns with
    ``Discrete(45)`` actions and 66-float observations through both envs and the solver (a test does
    exactly that).

    ## Version History
    * v0: initial release (yacht-rl 0.1.0). Since yacht-rl 0.2: ``info`` holds numbers and arrays only
      (``"scores"`` an int array with -1 for open categories, ``"dice"`` an int8 array),
      ``"illegal_actions"`` counts, ``observation_type="masked"``, ``render_mode="rgb_array"``. The move
      of the players to ``yacht_agents`` and of the lab to ``yacht_lab`` (0.2.0) is a refactor without
      behaviour change: the env stays v0. After 0.2.0: ``info``'s numbers are ``np.int64`` and its flags 0-d
      bool arrays (they were Python ints and bools), one dtype per key in every env; the first illegal action
      warns with ``get_wrapper_attr("action_masks")``, the way to the masks through ``gym.make``'s wrappers. One id
      per preset (``Yahtzee-v0``, ``Yatzy-v0``, ...), this env with that preset's rules: an addition, ``Yacht-v0``
      plays as before and stays v0.
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        rules: str | R.Rules = "standard",
        observation_type: str = "flat",
        canonical_keeps: bool = True,
        illegal_action: str = "ignore",
        illegal_action_penalty: float = 0.0,
        max_illegal_actions: int | None = 100,
        render_mode: str | None = None,
        action_mask_dtype: str = "int8",
    ) -> None:
        configure(
            self,
            rules,
            canonical_keeps,
            illegal_action,
            illegal_action_penalty,
            max_illegal_actions,
            observation_type,
            action_mask_dtype,
        )
        self._encoder = ObservationEncoder(self.rules)
        self.render_mode = checked_render_mode(render_mode, self.metadata["render_modes"])
        self.action_space = spaces.Discrete(self.rules.num_actions)
        self.observation_space = self._encoder.space(observation_type, self.action_mask_dtype)
        self._num_actions = self.rules.num_actions
        self._game = GameState(self.rules, canonical_keeps=self.canonical_keeps)  # one game: the rules' state
        self._illegal_count = 0
        self._warned_illegal = False
        self._done = True

    # ---------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts a new game (Gymnasium's ``reset``); see the class docstring."""
        super().reset(seed=seed)
        stream = parse_dice_stream(options, self.rules)
        self._game.start(draw_stream(self.np_random, self.rules) if stream is None else stream)
        self._illegal_count = 0
        self._done = False
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), self._get_info(False)

    def step(self, action):
        """Plays one action (Gymnasium's ``step``); see the class docstring."""
        if self._done:
            raise ValueError("the episode is over; call reset() before step()")
        if type(action) is not int:  # the common case skips these checks
            number = as_int(action)  # an integer, or a 0-d integer array as some wrappers pass it
            if number is None:
                raise ValueError(f"action must be an int in 0..{self.rules.num_actions - 1}, got {action!r}")
            action = number
        if not 0 <= action < self._num_actions:
            raise ValueError(f"action must be an int in 0..{self.rules.num_actions - 1}, got {action!r}")
        game = self._game
        terminated = truncated = False
        legal = bool(game.mask[action])  # the mask this state was shown with: one source of legality
        if legal:
            points, terminated = game.play(action)
            reward = float(points)
        else:
            if self.illegal_action == "raise":
                raise ValueError(
                    R.describe_illegal(action, game.roll, game.rolls_left, self.rules.categories, game.open_mask)
                )
            self._illegal_count += 1
            if not self._warned_illegal:
                self._warned_illegal = True
                reason = R.describe_illegal(action, game.roll, game.rolls_left, self.rules.categories, game.open_mask)
                gym.logger.warn(f"{ILLEGAL_ACTION_HINT} (the first: {reason})")
            reward = self.illegal_action_penalty
            truncated = self.max_illegal_actions is not None and self._illegal_count >= self.max_illegal_actions
        self._done = terminated or truncated
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), reward, terminated, truncated, self._get_info(not legal)

    # Planning: the game's model (yacht_env.chance) from the state now ---------------------------------
    def game_state(self) -> GameState:
        """A copy of the game now (:class:`yacht_env.game.GameState`), the root of a search (see Planning)."""
        return self._game.copy()

    def afterstate(self, action: int) -> chance.Afterstate:
        """The afterstate of ``action`` now: the decision taken, the dice not yet fallen (see Planning)."""
        if self._done:
            raise ValueError("the episode is over; call reset()")
        return chance.afterstate(self._game, action)

    def chance_outcomes(self, action: int) -> list[tuple[int, float]]:
        """The outcomes of ``action`` now with their probabilities: ``[(sorted roll, probability), ...]``."""
        return chance.chance_outcomes(self.afterstate(action))

    def step_outcome(self, action: int, outcome: int | None):
        """Plays the legal ``action`` as :meth:`step` does, the dice falling as ``outcome`` (a sorted-roll index;
        ``None`` where nothing falls) whatever the dice stream holds. Returns what :meth:`step` returns.

        Raises:
            ValueError: the episode is over, an illegal action, or an outcome the kept dice cannot reach.
        """
        after = self.afterstate(action)
        self._game = chance.step_outcome(after, outcome)
        self._done = terminated = not after.is_chance
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), float(after.points), terminated, False, self._get_info(False)

    def action_masks(self) -> np.ndarray:
        """The legal actions now, bool of shape ``(num_actions,)`` (the method sb3-contrib's MaskablePPO calls).

        A new array each call: writing to it cannot change the env. Once the episode is over every action
        is allowed (as pgx does at terminal states), so a masked policy never meets an empty row, e.g. on
        the final observation a vector env hands it; stepping a finished episode still raises.
        """
        if self._done:
            return np.ones(self.rules.num_actions, dtype=bool)
        return self._game.mask.copy()

    def render(self) -> str | np.ndarray | None:
        """The score sheet as text (``ansi``), an image (``rgb_array``) or printed (``human``)."""
        if cannot_render(self.render_mode, self.metadata["render_modes"]):
            return None
        if self.render_mode == "rgb_array":
            from yacht_env.render import game_image

            return game_image(self._game)
        text = self._score_sheet()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ---------------------------------------------------------------------------------------------
    def _get_obs(self):
        game = self._game
        if self.observation_type == "flat":  # the common case, straight to the encoder's one-game path
            return self._encoder.flat(game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        if self.observation_type == "masked":
            mask = self.action_masks()
            return self._encoder.observe(
                self._game, "masked", mask if self.action_mask_dtype == "bool" else mask.view(np.int8)
            )
        return self._encoder.observe(self._game, self.observation_type)

    def _get_info(self, illegal: bool) -> dict[str, Any]:
        game = self._game
        return {
            "dice": R.ROLLS[game.roll].copy(),
            "rolls_left": np.int64(game.rolls_left),
            "scores": game.sheet.copy(),
            "total": np.int64(game.total),
            **bonus_info(self.rules, game),
            "action_mask": self.action_masks().view(np.int8),
            "illegal_action": np.array(illegal),
            "illegal_actions": np.int64(self._illegal_count),
        }

    def _score_sheet(self) -> str:
        from yacht_env.render import bonus_rows, game_title, score_now

        game, rules = self._game, self.rules
        dice = " ".join(str(v) for v in R.ROLL_TUPLES[game.roll])
        turn = min(game.turn + 1, rules.num_turns)
        lines = [
            f"{game_title(rules)} ({rules.name})  turn {turn}/{rules.num_turns}  rolls left: {game.rolls_left}",
            f"dice: {dice}",
            f"  {'action':>6}  {'category':<16} {'score':>5}  {'now':>4}",
        ]
        now = score_now(rules, game.roll, game.open_mask, game.upper, game.armed)
        for k, name in enumerate(rules.categories):
            filled = int(game.sheet[k])
            shown = "-" if filled < 0 else str(filled)
            lines.append(f"  {R.PICK_OFFSET + k:>6}  {name:<16} {shown:>5}  {now[k] if now[k] >= 0 else '':>4}")
        for label, value in bonus_rows(rules, game.sheet, game.total, game.upper):
            lines.append(f"  {'':>6}  {label:<16} {value:>5}")
        lines.append(f"  {'':>6}  {'total':<16} {game.total:>5}")
        return "\n".join(lines)
