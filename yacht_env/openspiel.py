"""Every preset and table size as an OpenSpiel game: ``import yacht_env.openspiel`` registers ``yacht_rl``.

``pyspiel.load_game("yacht_rl(rules=yahtzee,players=2)")`` is then a Python game of OpenSpiel's (as OpenSpiel's own
``python_kuhn_poker`` is), so OpenSpiel's algorithms (``MCTSBot``, AlphaZero, its evaluators and tests) play it
unchanged. It stands on the numpy game core and its model for planners (:mod:`yacht_env.chance`): nothing of the
rules is written here.

## Parameters
* ``rules``: a preset name (``standard``, ``knizia``, ``yahtzee``, ...; :data:`yacht_env.rules.PRESETS`), default
  ``standard``.
* ``players``: 1..10, default 2 (as OpenSpiel's ``yacht``).
* ``reward``: ``win`` (default) or ``score``; see Returns.

## Moves and chance
Players take whole turns in seat order, seat 0 first. A decision is the project's action (``Discrete(44)`` for
Yacht's 12 boxes): ``0..31`` keep the dice whose bits are set, over the sorted dice (only the canonical mask of each
kept multiset is legal, and never all five), ``32 + k`` scores box ``k`` of the preset's sheet (legal while re-rolls
are left too). A chance node rolls: a turn's first roll (five dice) after the previous pick (the first of the game
before seat 0's first move), and the re-rolled dice after a keep. Its outcomes are the **sorted rolls** that can
fall (indices of :data:`yacht_env.rules.ROLLS`, at most 252) with their exact probabilities
(:func:`yacht_env.chance.chance_outcomes`): a roll of five dice is 252 outcomes, not the 7,776 ordered ones, which
is what keeps a chance node of a tree search small.

## Returns
Only at the end (OpenSpiel's terminal reward model, which its ``MCTSBot`` and AlphaZero require):

* ``reward=win``, two or more players: :func:`yacht_env.game.win_rewards`: the players with the highest total
  share +1, the others share -1 (all tied: 0). Zero-sum, so OpenSpiel's two-player zero-sum algorithms apply, and
  rank-based: the game's aim is to finish first, and points past that are worth nothing. It is OpenSpiel's own
  ``yacht`` convention and the PettingZoo env's ``reward="win"``.
* ``reward=score``, or one player: each player's total / the preset's largest total
  (:func:`yacht_env.rules.max_total`), in ``[0, 1]`` (general-sum). A lone player has no one to beat, and OpenSpiel's
  ``yacht`` gives it its total / 305 (``knizia``'s largest total) too. Normalised, because MCTS's exploration
  constant assumes returns of order 1; ``YachtOpenSpielGame.max_total`` turns a return back into points.

## Observations
* ``observation_tensor(p)``: what seat ``p`` sees in the PettingZoo env (``MultiplayerEncoder``'s view; one
  player: ``Yacht-v0``'s flat observation), so a policy trained there reads it unchanged. Its dice part (the dice,
  face counts, rolls left and what each box would score now: the first ``flat_layout(rules)["open"].start`` values)
  is all zeros where that seat's dice are not showing: another seat is on turn, the dice are falling, or the game
  is over.
* ``information_state_tensor(p)``: the whole table (``MultiplayerEncoder.state``, the PettingZoo env's ``state()``),
  the same for every seat, the dice part zero where no dice are showing. It is the game's state, not a perfect-recall
  history: in a game of perfect information the future depends only on it.
* ``observation_string``: the state as text; ``information_state_string``: the history of actions (perfect
  recall, as OpenSpiel's perfect-information games give it).

## Against OpenSpiel's ``yacht``
``knizia`` is the rules of OpenSpiel's built-in ``yacht`` game; the two differ only in how moves and chance are
encoded (``tests/test_openspiel.py`` walks seeded games in both, chance node for chance node): its chance outcomes
are the ordered values of the re-rolled dice (``6 ** k`` equally likely ones), its 31 re-roll actions mark the
positions of its unsorted dice to re-roll, and re-rolling ends with a separate "keep all" decision before the pick
(so its games are up to 4 decisions a turn, here 3).

Needs OpenSpiel's ``pyspiel`` (the ``openspiel`` extra, the ``open_spiel`` wheel).
"""

from __future__ import annotations

import functools

import numpy as np

try:
    import pyspiel
except ImportError as error:  # one clear line naming the extra
    raise ImportError(
        "yacht_env.openspiel needs OpenSpiel's pyspiel: pip install 'yacht-rl[openspiel]' (the open_spiel wheel)"
    ) from error

from yacht_env import chance
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, win_rewards

SHORT_NAME = "yacht_rl"
MAX_PLAYERS = 10
REWARDS = ("win", "score")
#: The parameters and their defaults (``pyspiel.load_game("yacht_rl")`` is a two-player ``standard`` game).
DEFAULTS = {"players": 2, "reward": "win", "rules": "standard"}


def _game_type(utility: pyspiel.GameType.Utility) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="yacht-rl: Yacht, Yahtzee, Yatzy",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=utility,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=MAX_PLAYERS,
        min_num_players=1,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=dict(DEFAULTS),
    )


def check_parameters(params: dict | None) -> tuple[R.Rules, int, str]:
    """``(rules, players, reward)`` from a game's parameters (missing ones take :data:`DEFAULTS`).

    Raises:
        ValueError: an unknown parameter, or a value out of its range (named, with what it may be).
    """
    params = {**DEFAULTS, **dict(params or {})}
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown {SHORT_NAME} parameter {unknown[0]!r}; expected {sorted(DEFAULTS)}")
    rules, players, reward = params["rules"], params["players"], params["reward"]
    if not (isinstance(rules, str) and rules in R.PRESETS):
        raise ValueError(f"rules must be a preset name, one of {sorted(R.PRESETS)}, got {rules!r}")
    if not (R.is_int(players) and not isinstance(players, bool) and 1 <= players <= MAX_PLAYERS):
        raise ValueError(f"players must be an int in 1..{MAX_PLAYERS}, got {players!r}")
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {list(REWARDS)}, got {reward!r}")
    return R.get_rules(rules), int(players), reward


class _Model:
    """What every state of one game shares (its rules, encoders and a fresh table): never copied, pickled by name."""

    def __init__(self, rules: str, players: int, reward: str) -> None:
        self.key = (rules, players, reward)
        self.rules = R.get_rules(rules)
        self.players = players
        self.win = reward == "win" and players > 1
        self.max_total = R.max_total(self.rules)
        self.solo = ObservationEncoder(self.rules)
        self.table_view = MultiplayerEncoder(self.rules, players)
        self.dice_size = self.solo.layout["open"].start  # the observation's dice part
        self.observation_size = self.solo.size if players == 1 else self.table_view.size
        self.fresh = TableState(self.rules, players)
        self.fresh.start(np.zeros((players, self.rules.stream_rows, R.NUM_DICE + 1), dtype=np.int32))

    def __deepcopy__(self, memo) -> _Model:
        return self

    def __reduce__(self):
        return (_model, self.key)


@functools.cache
def _model(rules: str, players: int, reward: str) -> _Model:
    return _Model(rules, players, reward)


class _Position:
    """A state of the game: the table (the numpy core's), the dice pending and the actions that led here.

    At a chance node ``table`` is the afterstate's table (:class:`yacht_env.chance.Afterstate`): the roll of the seat
    on turn is a placeholder there until its dice fall, ``kept`` the multiset that stays (``yacht_env.rules.KEPT``).
    Copied by :meth:`copy` (OpenSpiel clones a state by deep-copying its attributes), pickled as its history and
    replayed (OpenSpiel serialises a state by pickling them).
    """

    def __init__(self, model: _Model, table: TableState, kept: int, over: bool, history: tuple[int, ...]) -> None:
        self.model, self.table, self.kept, self.over, self.history = model, table, kept, over, history

    @classmethod
    def start(cls, model: _Model) -> _Position:
        """A new game: seat 0's first roll about to fall."""
        return cls(model, model.fresh.copy(), 0, False, ())

    @property
    def is_chance(self) -> bool:
        return self.kept != chance.NO_CHANCE

    def afterstate(self) -> chance.Afterstate:
        """The dice pending, as the chance model's afterstate."""
        return chance.Afterstate(self.table, self.kept, self.table.current, 0)

    def apply(self, action: int) -> None:
        """A decision (legal for the seat on turn) or a chance outcome (a sorted roll that can fall).

        Raises:
            ValueError: an action that is not legal, or an outcome the kept dice cannot reach; nothing changes.
        """
        if self.over:
            raise ValueError("the game is over: no action can be applied")
        if self.is_chance:
            self.table = chance.step_outcome(self.afterstate(), action)
            self.kept = chance.NO_CHANCE
        else:
            after = chance.afterstate(self.table, action)
            self.table, self.kept, self.over = after.state, int(after.kept), not after.is_chance
        self.history = (*self.history, int(action))

    def copy(self) -> _Position:
        return _Position(self.model, self.table.copy(), self.kept, self.over, self.history)

    def __deepcopy__(self, memo) -> _Position:
        return self.copy()

    def __reduce__(self):
        return (_replay, (self.model, self.history))

    def returns(self) -> list[float]:
        """Each player's return (module docstring): zeros until the game is over."""
        if not self.over:
            return [0.0] * self.model.players
        totals = self.table.totals()
        if self.model.win:
            return win_rewards(totals).tolist()
        return (totals / self.model.max_total).tolist()

    def dice_showing(self, seat: int) -> bool:
        """Whether ``seat`` is on turn with its dice fallen (a decision node of that seat)."""
        return not (self.over or self.is_chance) and seat == self.table.current

    def observation(self, seat: int) -> np.ndarray:
        """The seat's view (module docstring), float32."""
        model, table = self.model, self.table
        if model.players == 1:
            game = table.players[0]
            view = model.solo.flat(game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        else:
            view = model.table_view.observe(table, seat)
        if not self.dice_showing(seat):
            view[: model.dice_size] = 0.0
        return view

    def table_state(self) -> np.ndarray:
        """The whole table (module docstring), float32."""
        view = self.model.table_view.state(self.table, on_turn=not self.over)
        if not self.dice_showing(self.table.current):
            view[: self.model.dice_size] = 0.0
        return view

    def __str__(self) -> str:
        table, rules = self.table, self.model.rules
        seat = table.current
        if self.over:
            lines = ["Game over"]
        elif self.is_chance:
            kept = " ".join(map(str, R.KEPT[self.kept])) or "none"
            rolls_left = table.players[seat].rolls_left
            lines = [f"Player {seat} on turn, rolling: kept {kept}; {rolls_left} re-roll(s) left after"]
        else:
            game = table.players[seat]
            dice = " ".join(map(str, R.ROLL_TUPLES[game.roll]))
            lines = [f"Player {seat} on turn: dice {dice}; {game.rolls_left} re-roll(s) left"]
        for p, game in enumerate(table.players):
            sheet = zip(rules.categories, game.sheet.tolist(), strict=True)
            boxes = ", ".join(f"{name} {points}" for name, points in sheet if points >= 0)
            extra = "".join(f", {key} {int(getattr(game, key))}" for key in ("upper", "armed") if getattr(game, key))
            lines.append(f"Player {p} (total {int(game.total)}{extra}): {boxes or '-'}")
        return "\n".join(lines)


def _replay(model: _Model, history: tuple[int, ...]) -> _Position:
    position = _Position.start(model)
    for action in history:
        position.apply(action)
    return position


class YachtOpenSpielGame(pyspiel.Game):
    """A preset at a table of 1..10 players as an OpenSpiel game (the module docstring has its conventions).

    Args:
        params: ``{"rules": str, "players": int, "reward": str}``, missing ones from :data:`DEFAULTS`; what
            ``pyspiel.load_game("yacht_rl(...)")`` passes.

    Attributes:
        rules: The :class:`~yacht_env.rules.Rules` played.
        max_total: The preset's largest total: a normalised return times it is points.

    Raises:
        ValueError: an unknown parameter or a value out of range (:func:`check_parameters`).
    """

    def __init__(self, params: dict | None = None) -> None:
        rules, players, reward = check_parameters(params)
        model = _model(rules.name, players, reward)
        win = model.win
        info = pyspiel.GameInfo(
            num_distinct_actions=rules.num_actions,
            max_chance_outcomes=R.NUM_ROLLS,
            num_players=players,
            min_utility=-1.0 if win else 0.0,
            max_utility=1.0,
            utility_sum=0.0 if win else None,
            max_game_length=R.ROLLS_PER_TURN * rules.num_turns * players,  # decisions: two keeps and a pick a turn
        )
        utility = pyspiel.GameType.Utility.ZERO_SUM if win else pyspiel.GameType.Utility.GENERAL_SUM
        params = {"rules": rules.name, "players": players, "reward": reward}
        super().__init__(_game_type(utility), info, params)
        self.model = model
        self.rules = rules
        self.max_total = model.max_total

    def new_initial_state(self) -> YachtOpenSpielState:
        """A new game: seat 0's first roll is a chance node."""
        return YachtOpenSpielState(self)

    def max_chance_nodes_in_history(self) -> int:
        """A turn's first roll and at most two re-rolls, every turn of every player."""
        return R.ROLLS_PER_TURN * self.rules.num_turns * self.num_players()

    def make_py_observer(self, iig_obs_type=None, params=None) -> _Observer:
        """The observer OpenSpiel asks for: the information state for a perfect-recall type, else the observation."""
        if params:
            raise ValueError(f"{SHORT_NAME} observers take no parameters, got {params!r}")
        info_state = iig_obs_type is not None and iig_obs_type.perfect_recall
        return _Observer(self.model, info_state)


class YachtOpenSpielState(pyspiel.State):
    """A state of :class:`YachtOpenSpielGame`: OpenSpiel's ``State`` over the numpy core's table.

    Beyond OpenSpiel's API, :meth:`game_state` copies the table (``yacht_env.game.TableState``) at a decision node or
    at the end, as the envs' ``game_state()`` does: a root for :mod:`yacht_env.chance`'s planners.
    """

    def __init__(self, game: YachtOpenSpielGame) -> None:
        super().__init__(game)
        self._position = _Position.start(game.model)

    def current_player(self) -> int:
        """The seat on turn, ``pyspiel.PlayerId.CHANCE`` while dice fall, ``TERMINAL`` at the end."""
        position = self._position
        if position.over:
            return pyspiel.PlayerId.TERMINAL
        if position.is_chance:
            return pyspiel.PlayerId.CHANCE
        return int(position.table.current)

    def _legal_actions(self, player: int) -> list[int]:
        return np.flatnonzero(self._position.table.mask).tolist()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The sorted rolls that can fall with their exact probabilities, ascending."""
        return chance.chance_outcomes(self._position.afterstate())

    def _apply_action(self, action: int) -> None:
        self._position.apply(action)

    def _action_to_string(self, player: int, action: int) -> str:
        rules = self._position.model.rules
        if player == pyspiel.PlayerId.CHANCE:
            return "Roll " + " ".join(map(str, R.ROLL_TUPLES[action])) if 0 <= action < R.NUM_ROLLS else str(action)
        if R.PICK_OFFSET <= action < rules.num_actions:
            return f"Score {rules.categories[action - R.PICK_OFFSET]}"
        if 0 <= action < R.PICK_OFFSET and self._position.dice_showing(player):
            kept = R.KEPT[R.KEEP[self._position.table.on_turn.roll, action]]
            return "Keep " + (" ".join(map(str, kept)) or "none")
        return f"Keep mask {action}" if 0 <= action < R.PICK_OFFSET else str(action)

    def is_terminal(self) -> bool:
        """Whether the last seat's last pick is made."""
        return self._position.over

    def returns(self) -> list[float]:
        """Each player's return (the module docstring's convention); zeros until the end."""
        return self._position.returns()

    def game_state(self) -> TableState:
        """A copy of the table (the numpy core's ``TableState``) at a decision node or at the end.

        Raises:
            ValueError: at a chance node, where the seat on turn's dice have not fallen.
        """
        if self._position.is_chance:
            raise ValueError("a chance node: the dice are falling, so no roll is showing")
        return self._position.table.copy()

    def __str__(self) -> str:
        return str(self._position)


class _Observer:
    """OpenSpiel's Python observer: ``tensor`` set by :meth:`set_from`, strings by :meth:`string_from`."""

    def __init__(self, model: _Model, info_state: bool) -> None:
        self.info_state = info_state
        size = model.table_view.state_size if info_state else model.observation_size
        self.tensor = np.zeros(size, dtype=np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: YachtOpenSpielState, player: int) -> None:
        position = state._position
        self.tensor[:] = position.table_state() if self.info_state else position.observation(player)

    def string_from(self, state: YachtOpenSpielState, player: int) -> str:
        return state.history_str() if self.info_state else str(state)


if SHORT_NAME not in pyspiel.registered_names():
    pyspiel.register_game(_game_type(pyspiel.GameType.Utility.ZERO_SUM), YachtOpenSpielGame)

__all__ = ["DEFAULTS", "MAX_PLAYERS", "REWARDS", "SHORT_NAME", "YachtOpenSpielGame", "YachtOpenSpielState"]
