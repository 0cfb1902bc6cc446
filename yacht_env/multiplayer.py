"""Multiplayer Yacht as a PettingZoo ``AECEnv``: 1 to 10 players, each with its own sheet, whole turns in seat order.

Needs PettingZoo (``pip install "yacht-rl[multiplayer]"``); the rest of ``yacht_env`` does not.

Example:
    >>> from yacht_env.multiplayer import env
    >>> table = env(num_players=3)
    >>> table.reset(seed=0)
    >>> for agent in table.agent_iter():
    ...     observation, reward, termination, truncation, info = table.last()
    ...     mask = observation["action_mask"]
    ...     action = None if termination or truncation else table.action_space(agent).sample(mask)
    ...     table.step(action)
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from yacht_env import chance
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder
from yacht_env.env import configure
from yacht_env.game import TableState, draw_stream, parse_dice_stream, win_rewards
from yacht_env.multiplayer_wrappers import wrap
from yacht_env.rules import as_int, is_int

MAX_PLAYERS = 10
_DICE = list(R.ROLLS)  # the read-only rows of the rules' table of rolls, made once (the infos' "dice")
_FLAGS = (np.array(False), np.array(True))  # the infos' "illegal_action", read-only 0-d bool arrays made once
for _flag in _FLAGS:
    _flag.flags.writeable = False
REWARD_MODES = ("score", "win")
#: The reset option PettingZoo's ``api_test`` and ``parallel_api_test`` pass to check that ``reset`` takes options
#: (``reset(options={"options": 1})``); ignored, while any other key but ``dice_stream`` raises ``ValueError``.
PETTINGZOO_TEST_OPTION = "options"
ILLEGAL_ACTION_HINT = (
    "Yacht: an illegal action was ignored (the state did not change; infos[agent]['illegal_actions'] counts "
    "them). Pass the action mask to the policy: observation['action_mask'] (the legal actions of the agent on turn)"
)


def env(**kwargs) -> AECEnv:
    """The raw env in PettingZoo's usual wrappers (actions checked against the space, call order enforced):
    :func:`yacht_env.multiplayer_wrappers.wrap`.
    """
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs) -> ParallelEnv:
    """The table in PettingZoo's Parallel API, through PettingZoo's own converter for turn-based games.

    Each ``step`` takes a dict of every agent's action and plays only the one of the agent on turn (the only
    agent whose ``observation["action_mask"]`` has a legal action; the others' actions are ignored); the
    rewards, terminations and infos are those of the AEC env after that step. ``env()``'s arguments.
    """
    return turn_based_aec_to_parallel(env(**kwargs))


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's name for the unwrapped env
    """A table of Yacht: ``num_players`` players, 12 rounds, the highest total wins.

    ## Description
    Players ``player_0`` .. ``player_{n-1}`` sit in that order. Each round every player takes one whole
    turn: up to three rolls of its own five dice and one category picked, exactly as in ``Yacht-v0``;
    ``agent_selection`` stays with the player on turn through its re-rolls and its pick. Each player has
    its own sheet and plays 12 turns; the game ends after the last player's 12th pick. Players tied on the
    highest total share the win.

    ## Actions
    ``Discrete(44)``, ``Yacht-v0``'s encoding: ``0..31`` keep-masks over the sorted dice, ``32 + k`` picks
    category ``k``.

    ## Observation
    ``{"observation": Box(0, 1, (S,), float32), "action_mask": Box(0, 1, (44,), int8)}`` per agent, from
    that agent's point of view (:class:`yacht_env.encoding.MultiplayerEncoder`'s layout; ``S = 64 + 13 (P -
    1) + 2``, 79 for 2 players; every value in ``[0, 1]``):

    | index | size | meaning |
    |---|---|---|
    | 0..63 | 64 | its own game, exactly ``Yacht-v0``'s flat observation |
    | from ``64 + 13 (j - 1)`` | 13 | opponent ``j`` (1..P-1): open categories (1 = open), total / ``max_total`` |
    | ``64 + 13 (P - 1)`` | 1 | its own total / ``max_total`` |
    | ``64 + 13 (P - 1) + 1`` | 1 | the margin to the best opponent, ``(own - best) / (2 max_total) + 1/2`` |

    Opponent ``j`` is the player ``j`` seats after it (in seat order, wrapping); ``max_total`` is the preset's
    largest possible total (the sum of each category's best score: 297 for ``standard``); a margin of 0.5 is
    level.

    The family's presets (an upper or a Yahtzee bonus) show each opponent's bonus progress too, as its own solo
    observation shows it: after its open categories and before its total, the ``upper`` part (the subtotal / the
    threshold, capped at 1, and 1 once the bonus is earned) and the ``armed`` flag (1 while its five-of-a-kind box
    holds its points), where the rules have them. A preset of ``C`` categories and ``S`` solo values has
    ``S + O (P - 1) + 2`` values, ``O = C + B + 1`` with ``B`` the bonus values (``yahtzee``: ``O = 17``, 88 values
    for 2 players; ``yatzy``: ``O = 18``, 92; ``clubhouse``: ``O = 15``, 83); Yacht's presets have none (``O =
    13``, the table above).

    ## Action mask
    ``observation["action_mask"]``: the legal actions of the agent on turn (int8 (44,), ``Yacht-v0``'s
    mask); all zeros for agents not on turn.

    ## State
    ``state()`` is the whole table from no seat's viewpoint, for centralised critics (PettingZoo's ``state()``):
    ``state_space`` is ``Box(0, 1, (D + P (K + 1) + P,), float32)``, 81 values for 2 players (``D = 51``, ``K = 13``
    for Yacht), :class:`yacht_env.encoding.MultiplayerEncoder`'s ``state`` layout:

    | index | size | meaning |
    |---|---|---|
    | 0..50 | 51 | the dice part: the first 51 values of the observation of the player on turn |
    | from ``51 + 14 p`` | 14 | seat ``p`` (seat order): open categories, fraction open, total / ``max_total`` |
    | last ``P`` | P | whose turn, one-hot (all zeros once the game is over) |

    The dice part is the dice, face counts, rolls left and what each open box of the player on turn would score now.
    A preset with ``C`` categories has ``D = 39 + C``, and the family's add their ``upper`` and ``armed`` values to
    each seat's part (``yahtzee``: ``D = 52``, ``K = 17``). No agent's view shapes it: ``env()``, ``raw_env`` and
    ``parallel_env`` return the same array whoever is on turn, from the first ``reset`` on, the game's end included.

    ## Rewards
    ``reward="score"`` (default): the picker gets the points of its pick, so an agent's rewards sum to its
    total. ``reward="win"``: zero-sum at the end (:func:`yacht_env.game.win_rewards`). An ignored illegal
    action earns its actor ``illegal_action_penalty``.

    ## Information
    Every agent's info, numpy values in ``Yacht-v0``'s types (numbers ``np.int64``, flags 0-d bool arrays,
    read-only arrays; ``"scores"`` and ``"totals"`` new after each pick, shared by every agent and step
    until the next): ``"dice"`` (int8 (5,), the dice of the player on turn),
    ``"rolls_left"`` (int64), ``"player_on_turn"`` (int64, its seat), ``"scores"`` (int16 (P, 12), -1 while
    open), ``"totals"`` (int64 (P,)), ``"illegal_action"`` (bool: the last step's action was ignored as
    illegal) and ``"illegal_actions"`` (int64: how many illegal actions *this agent* took this game, so each
    agent's count is what ``Yacht-v0`` counts for its one player, and with one player it is exactly
    ``Yacht-v0``'s) and ``"winners"`` (int8 (P,): all zeros until the game ends, then 1 for each player with
    the highest total; still zeros after a truncation). Every key is there at every step, reset included, so
    libraries that build an info spec from the first infos (TorchRL's ``PettingZooWrapper``) take them as they are.

    ## Illegal actions and episode end
    ``Yacht-v0``'s policy: ignored (nothing changes and the agent stays on turn; its reward is
    ``illegal_action_penalty``), and an unmasked policy is never silently wrong: the first illegal action
    an env ignores warns once per env through Gymnasium's logger (naming the agent, with the hint to pass
    ``observation["action_mask"]``), and ``infos[agent]["illegal_actions"]`` counts them.
    ``illegal_action="raise"`` raises ``ValueError`` instead, naming the agent, and the rejected step changes
    nothing, the actor's pending reward included. The table is truncated for everyone at the
    ``max_illegal_actions``-th illegal action of a game (the agents' counts together: one table, one limit).
    Once the game is over each agent leaves with a ``None`` step (PettingZoo's ``_was_dead_step``). The raw
    env's ``step``, ``last`` and ``observe`` before the first ``reset``, and its ``step`` and ``last`` once
    every agent has left, raise ``ValueError`` (``env()``'s ``OrderEnforcingWrapper`` answers those calls
    first, as PettingZoo documents).

    ## Seeding
    ``reset(seed=s)`` reproduces a game: each player's ``(12, 3, 5)`` dice stream is drawn from the env's
    generator, player 0's first (so with one player the dice are ``Yacht-v0``'s for the same seed).
    ``reset(options={"dice_stream": S})`` with ``S`` of shape ``(num_players, 12, 3, 5)`` deals stream
    ``S[p]`` to player ``p``: the same dice can follow the same agent whatever its seat. Any other key raises
    ``ValueError`` (as ``Yacht-v0``), except ``"options"``: PettingZoo's ``api_test`` and ``parallel_api_test``
    pass ``reset(options={"options": 1})`` to check that ``reset`` takes options, and that key is ignored.

    ## Parallel API
    A game of alternating whole turns, as PettingZoo's classic games (chess, connect four, tic-tac-toe) are, so
    ``metadata["is_parallelizable"]`` is False: PettingZoo's ``aec_to_parallel`` (for simultaneous moves) does not
    apply. :func:`parallel_env` offers the Parallel API through PettingZoo's ``turn_based_aec_to_parallel``:
    every agent observes at every step, and only the action of the agent on turn (the one with a legal action in
    its mask) is played. It passes PettingZoo's ``parallel_api_test``. The AEC env also works under PettingZoo's
    common AEC wrappers: ``api_test`` passes through ``TerminateIllegalWrapper`` (an illegal move ends the game),
    ``CaptureStdoutWrapper`` and ``BaseWrapper``, and ``MultiEpisodeEnv`` plays games back to back.

    ## Planning
    ``Yacht-v0``'s model for planners at a table (:mod:`yacht_env.chance`), OpenSpiel's chance nodes: on the raw env
    (``env.unwrapped``), ``afterstate(a)`` is the action of the agent on turn taken with its dice not yet fallen
    (after a pick: the box scored and the next seat's turn about to be rolled, as in OpenSpiel's ``yacht``),
    ``chance_outcomes(a)`` lists the sorted rolls that can fall with their exact probabilities,
    ``step_outcome(a, outcome)`` plays ``a`` with the dice falling as ``outcome`` (call it on the raw env, whose loop
    PettingZoo's order wrapper does not see), ``game_state()`` copies the table for a search.

    ## Arguments
    ``num_players`` (1..10, default 2), ``rules``, ``reward``, ``canonical_keeps``, ``illegal_action``,
    ``illegal_action_penalty``, ``max_illegal_actions``, ``render_mode`` (``"ansi"``, ``"human"``).
    ``env(...)`` takes the same arguments and wraps the raw env in PettingZoo's usual wrappers
    (``OrderEnforcingWrapper`` over ``AssertOutOfBoundsWrapper``): subclasses that read the raw env directly where the
    installed PettingZoo's wrappers keep the private fields they copy, checked once by driving them
    (:mod:`yacht_env.multiplayer_wrappers`), and PettingZoo's own classes where they do not.

    ## Tests
    It passes PettingZoo's ``api_test``, ``seed_test`` and ``state_test`` for 1 to 5 players, both reward modes and
    every preset, with either set of wrappers (``api_test`` and ``parallel_api_test`` draw no warning from the env),
    and ``tests/test_openspiel.py`` cross-checks it against OpenSpiel's ``yacht``.

    ## Version History
    * v0: initial release (yacht-rl 0.1.0; PettingZoo name ``yacht_v0``). After 0.2.0: the first ignored
      illegal action warns once per env, ``"illegal_actions"`` counts each agent's, and the info holds
      ``Yacht-v0``'s numpy types (numbers were Python ints and the flag a Python bool). Then: ``state()`` and
      ``state_space``; a reset option other than ``dice_stream`` raises ``ValueError`` (it was dropped with a
      warning), and PettingZoo's own ``{"options": 1}`` is ignored without one. Then: the family's presets
      (``yahtzee``, ``yatzy``, ``clubhouse``, ...: those with an upper or a Yahtzee bonus, new since 0.2.0 and not
      yet released) show each opponent's bonus progress (``upper`` and ``armed``, between its open categories and
      its total), so their observations are longer (``yahtzee`` at 2 players: 88 values, was 85). Yacht's
      presets are unchanged, byte for byte, so the version stays v0.
    """

    metadata = {"render_modes": ["ansi", "human"], "name": "yacht_v0", "is_parallelizable": False}

    def __init__(
        self,
        num_players: int = 2,
        rules: str | R.Rules = "standard",
        reward: str = "score",
        canonical_keeps: bool = True,
        illegal_action: str = "ignore",
        illegal_action_penalty: float = 0.0,
        max_illegal_actions: int | None = 100,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if not is_int(num_players) or not 1 <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an int in 1..{MAX_PLAYERS}, got {num_players!r}")
        if not isinstance(reward, str) or reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            gymnasium.logger.warn(f"render_mode={render_mode!r} is not one of {self.metadata['render_modes']}")
        options = (rules, canonical_keeps, illegal_action, illegal_action_penalty, max_illegal_actions)
        configure(self, *options, observation_types=None)  # one observation type: no observation_type option
        self.num_players = int(num_players)
        self.reward_mode = reward
        self.render_mode = render_mode

        self.possible_agents = [f"player_{p}" for p in range(self.num_players)]
        self._seat = {agent: seat for seat, agent in enumerate(self.possible_agents)}
        self._num_actions = self.rules.num_actions
        self._no_actions = np.zeros(self._num_actions, dtype=np.int8)
        self.agents = []
        self._encoder = MultiplayerEncoder(self.rules, self.num_players)
        self._own_then = None if self.rules.has_bonuses else self._encoder.solo.flat_then
        mask_space = spaces.Box(0, 1, shape=(self.rules.num_actions,), dtype=np.int8)
        self._observation_space = spaces.Dict({"observation": self._encoder.space, "action_mask": mask_space})
        self._action_space = spaces.Discrete(self.rules.num_actions)
        self.state_space = self._encoder.state_space
        self._table = TableState(self.rules, self.num_players, None, self.canonical_keeps)
        self._illegal_counts = np.zeros(self.num_players, dtype=np.int64)  # each seat's, this game
        self._illegal_numbers = [np.int64(0)] * self.num_players  # the same as np.int64 scalars, for the infos
        self._warned_illegal = False  # once per env, as Yacht-v0
        self._over = True
        # What changes only with a pick, kept until the next one: each seat's observation from its open categories on
        # (MultiplayerEncoder.pick_part) and the infos' read-only scores, totals and winners.
        self._pick_parts: list[np.ndarray | None] = [None] * self.num_players
        self._sheet_info: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._infos: dict[str, dict[str, Any]] | None = {}  # built when read (the infos property)
        self._agent_infos: dict[str, dict[str, Any]] = {}
        self._illegal_step = False
        self._numbers = tuple(np.int64(k) for k in range(max(self.num_players, R.ROLLS_PER_TURN)))  # immutable
        self._no_winners = np.zeros(self.num_players, dtype=np.int8)  # "winners" until the game ends
        self._no_winners.flags.writeable = False

    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of ``agent`` (every agent's is the same)."""
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of ``agent`` (every agent's is the same)."""
        return self._action_space

    # ---------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Starts a new game (PettingZoo's ``reset``); see the class docstring."""
        if seed is not None or not hasattr(self, "_np_random"):
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(seed)
        if isinstance(options, dict) and PETTINGZOO_TEST_OPTION in options:  # PettingZoo's tests' own: ignored
            options = {key: value for key, value in options.items() if key != PETTINGZOO_TEST_OPTION}
        streams = parse_dice_stream(options, self.rules, (self.num_players,))
        if streams is None:
            streams = draw_stream(self._np_random, self.rules, self.num_players)
        self._table.start(streams)
        self._picked()
        self.agents = list(self.possible_agents)
        self._zero_rewards = dict.fromkeys(self.agents, 0.0)
        self.rewards = self._zero_rewards.copy()
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._illegal_counts[:] = 0
        self._illegal_numbers = [np.int64(0)] * self.num_players
        self._over = False
        self.agent_selection = self.agents[0]
        self._set_infos(illegal=False)
        if self.render_mode == "human":
            self.render()

    def step(self, action) -> None:
        """Plays the action of the agent on turn (PettingZoo's ``step``); see the class docstring."""
        table = self._table
        if (
            not self._over
            and type(action) is int
            and 0 <= action < self._num_actions
            and table.players[table.current].mask[action]
        ):  # the common step, a legal int action in a game on: none of the checks below can fail
            self._play(action)
            return
        self._check_playing("step()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        number = as_int(action)
        if number is None or not 0 <= number < self._num_actions:
            raise ValueError(f"action must be an int in 0..{self.rules.num_actions - 1}, got {action!r}")
        action = number
        if table.on_turn.mask[action]:
            self._play(action)
            return
        if self.illegal_action == "raise":  # before anything changes: a rejected step changes nothing
            raise ValueError(f"{agent}: {self._why_illegal(action)}")
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        seat = self._seat[agent]
        self._illegal_counts[seat] += 1
        self._illegal_numbers[seat] = self._illegal_counts[seat]
        if not self._warned_illegal:
            self._warned_illegal = True
            gymnasium.logger.warn(f"{ILLEGAL_ACTION_HINT} (the first: {agent}, {self._why_illegal(action)})")
        self.rewards[agent] = self.illegal_action_penalty
        if self.max_illegal_actions is not None and self._illegal_counts.sum() >= self.max_illegal_actions:
            self.truncations = dict.fromkeys(self.agents, True)
            self._over = True
        self._set_infos(illegal=True)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def state(self) -> np.ndarray:
        """The table from no seat's viewpoint (PettingZoo's ``state()``, in ``state_space``); see State above."""
        if not hasattr(self, "agent_selection"):
            raise ValueError("call reset() before state()")
        return self._encoder.state(self._table, on_turn=not self._over)

    # Planning: the game's model (yacht_env.chance) from the table now --------------------------------
    def game_state(self) -> TableState:
        """A copy of the table now (:class:`yacht_env.game.TableState`), the root of a search (see Planning)."""
        self._check_playing("game_state()")
        return self._table.copy()

    def afterstate(self, action: int) -> chance.Afterstate:
        """The afterstate of the action of the agent on turn: the decision taken, the dice not yet fallen."""
        self._check_playing("afterstate()")
        return chance.afterstate(self._table, action)

    def chance_outcomes(self, action: int) -> list[tuple[int, float]]:
        """The outcomes of the action of the agent on turn with their probabilities: ``[(sorted roll, p), ...]``."""
        return chance.chance_outcomes(self.afterstate(action))

    def step_outcome(self, action: int, outcome: int | None) -> None:
        """Plays the legal ``action`` of the agent on turn as :meth:`step` does, the dice falling as ``outcome`` (a
        sorted-roll index; ``None`` where nothing falls) whatever the dice streams hold.

        Raises:
            ValueError: an illegal action, or an outcome the kept dice cannot reach.
        """
        after = self.afterstate(action)
        chance.step_outcome(after, outcome)  # checks the outcome
        self._play(int(action), outcome if after.is_chance else None)

    def _play(self, action: int, outcome: int | None = None) -> None:
        """The player on turn takes a legal action (the dice falling as ``outcome`` if given); rewards, turn order."""
        agent, table = self.agent_selection, self._table
        points, game_over = table.play(action)
        if outcome is not None:
            table.on_turn.set_roll(outcome)
        rewards = self._zero_rewards.copy()  # a new dict each step (a third of dict.fromkeys's time)
        if action >= R.PICK_OFFSET:
            self._picked()
        if self.reward_mode == "score":
            rewards[agent] = float(points)
        if game_over:
            self._over = True
            self.terminations = dict.fromkeys(self.agents, True)
            if self.reward_mode == "win":
                rewards = dict(zip(self.agents, win_rewards(table.totals()).tolist(), strict=True))
        else:
            self.agent_selection = self.agents[table.current]
        self.rewards = rewards
        self._illegal_step, self._infos, self._agent_infos = False, None, {}  # _set_infos(illegal=False), inlined
        if game_over:
            self._cumulative_rewards[agent] = 0.0
            self._accumulate_rewards()
        else:  # PettingZoo's _accumulate_rewards when only the actor's reward can be other than 0.0
            self._cumulative_rewards[agent] = rewards[agent]
        if self.render_mode == "human":
            self.render()

    def last(self, observe: bool = True):
        """The observation, reward, termination, truncation and info of the agent on turn."""
        self._check_playing("last()")
        return self._last(observe)

    def _last(self, observe: bool) -> tuple:
        """AECEnv.last, reading only the agent's own info (the others' are built when ``infos`` is read)."""
        agent = self.agent_selection
        info = self._infos[agent] if self._infos is not None else self._info(agent)
        observation = self.observe(agent) if observe else None
        return observation, self._cumulative_rewards[agent], self.terminations[agent], self.truncations[agent], info

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``agent``'s observation and action mask (all zeros when it is not on turn)."""
        table = self._table
        if not self._over and agent == self.agent_selection:  # the agent on turn in a game on: PettingZoo's loop
            seat = table.current
            mask = table.players[seat].mask.astype(np.int8)  # a new array: the policy may write into it
        else:
            if not hasattr(self, "agent_selection"):
                raise ValueError("call reset() before observe()")
            if agent not in self._seat:
                raise ValueError(f"unknown agent {agent!r}; the agents are {self.possible_agents}")
            seat = self._seat[agent]
            mask = self._no_actions.copy()
        part = self._pick_parts[seat]
        if part is None:
            part = self._pick_parts[seat] = self._encoder.pick_part(table, seat)
        if self._own_then is None:
            return {"observation": self._encoder.observe(table, seat, pick_part=part), "action_mask": mask}
        own = table.players[seat]  # MultiplayerEncoder.observe's own path for rules without bonuses, one call less
        return {"observation": self._own_then(own.roll, own.rolls_left, own.open_mask, part), "action_mask": mask}

    def render(self) -> str | None:
        """The table's score sheets as text, or printed (``human``)."""
        if self.render_mode not in self.metadata["render_modes"]:
            gymnasium.logger.warn(f"render() called with render_mode={self.render_mode!r}; pass 'ansi' or 'human'")
            return None
        text = self._sheets()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release: the game holds no resources."""
        pass

    # ---------------------------------------------------------------------------------------------
    def _check_playing(self, call: str) -> None:
        """One clear error for ``call`` before the first reset or once every agent has left the finished game
        (PettingZoo's ``OrderEnforcingWrapper``, which ``env()`` adds, answers those calls first).
        """
        if not hasattr(self, "agent_selection"):
            raise ValueError(f"call reset() before {call}")
        if not self.agents:
            raise ValueError(f"the game is over and every agent has left it; call reset() before {call}")

    def _why_illegal(self, action: int) -> str:
        player = self._table.on_turn
        return R.describe_illegal(action, player.roll, player.rolls_left, self.rules.categories, player.open_mask)

    def _picked(self) -> None:
        """A pick (or a new game): the seats' kept observation parts and the infos' scores and totals are built
        again when next needed.
        """
        self._pick_parts = [None] * self.num_players
        self._sheet_info = None

    # The infos are built when read: a step records only whether its action was illegal. PettingZoo's loop reads one
    # agent's info a step (last()); ``infos`` builds every agent's, the same dicts last() handed out.
    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        """Every agent's info (PettingZoo's ``infos``)."""
        if self._infos is None:
            self._infos = {agent: self._info(agent) for agent in self.agents}
        return self._infos

    @infos.setter
    def infos(self, value: dict[str, dict[str, Any]]) -> None:
        self._infos = value

    def _set_infos(self, illegal: bool) -> None:
        self._illegal_step, self._infos, self._agent_infos = illegal, None, {}

    def _info(self, agent: str) -> dict[str, Any]:
        """``agent``'s info after the last step (made once a step)."""
        info = self._agent_infos.get(agent)
        if info is not None:
            return info
        table = self._table
        current = table.current
        on_turn = table.players[current]
        if self._sheet_info is None:  # new read-only arrays after each pick, shared by every agent until the next
            totals = np.array([game.total for game in table.players], dtype=np.int64)
            scores = table.sheets.copy()
            scores.setflags(write=False)
            totals.setflags(write=False)
            winners = self._no_winners
            if self._over and all(self.terminations.values()):
                winners = (totals == totals.max()).astype(np.int8)
                winners.setflags(write=False)
            self._sheet_info = scores, totals, winners
        scores, totals, winners = self._sheet_info
        numbers = self._numbers
        info = self._agent_infos[agent] = {
            "dice": _DICE[on_turn.roll],  # a read-only row of the rules' table
            "rolls_left": numbers[on_turn.rolls_left],
            "player_on_turn": numbers[current],
            "scores": scores,
            "totals": totals,
            "illegal_action": _FLAGS[self._illegal_step],
            "winners": winners,
            "illegal_actions": self._illegal_numbers[self._seat[agent]],
        }
        return info

    def _sheets(self) -> str:
        table, rules = self._table, self.rules
        width = max(len(name) for name in rules.categories)
        on_turn = table.on_turn
        dice = " ".join(str(v) for v in R.ROLL_TUPLES[on_turn.roll])
        lines = [
            f"Yacht ({rules.name}), {self.num_players} players: {self.possible_agents[table.current]} to play, "
            f"dice {dice}, rolls left {on_turn.rolls_left}",
            f"  {'category':<{width}} " + " ".join(f"{agent:>9}" for agent in self.possible_agents),
        ]
        for k, name in enumerate(rules.categories):
            cells = [str(int(game.sheet[k])) if game.sheet[k] >= 0 else "-" for game in table.players]
            lines.append(f"  {name:<{width}} " + " ".join(f"{cell:>9}" for cell in cells))
        lines.append(f"  {'total':<{width}} " + " ".join(f"{int(t):>9}" for t in table.totals()))
        return "\n".join(lines)
