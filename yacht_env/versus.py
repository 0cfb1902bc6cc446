"""Yacht against fixed opponents as Gymnasium envs: the learner holds one seat, the others play inside ``step``.

``YachtVersusVectorEnv`` steps N tables at once (what ``train.py --opponents ...`` trains on);
``YachtVersusEnv`` (``gymnasium.make("YachtVersus-v0", opponents=["greedy"])``) is one table. Both stand on
:class:`yacht_env.game.TableState`, the same transition as every other env.

Opponents are agents (objects with ``act(observations, action_masks)``, like those of :mod:`yacht_agents`) or spec
strings (``"random"``, ``"greedy"``, ``"optimal"``, ``"ppo:PATH"``), resolved when the env is built by the
function installed packages declare in the ``yacht_rl.agents`` entry points
(:func:`~yacht_env.opponents.agent_resolver`: yacht-rl's is :func:`yacht_agents.make_agent`), so ``yacht_env``
never imports the players (:mod:`yacht_env.opponents`). An opponent sees its own game as ``Yacht-v0`` shows it
(the flat solo observation and its action mask); all the opponents on turn at many tables act in one batched call.
An agent whose ``table_players`` is the table's size (a PPO model trained in ``YachtVersus-v0``) sees the table
from its seat instead, as the learner does.

Instead of a fixed lineup, the vector env can draw each opponent from a *pool* of agents at each game's start
(``pool=``, ``players=``, ``pool_weights=``: a league for self-play, :mod:`yacht_lab.training.sb3.league`); the pool can
grow and its weights change between rollouts (:meth:`YachtVersusVectorEnv.add_members`, ``set_weights``,
``retire_members``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.env import checked_render_mode, configure_from
from yacht_env.game import TableState, draw_stream, parse_dice_stream, win_rewards
from yacht_env.opponents import act_at_tables, resolve_agent, resolve_opponents
from yacht_env.opponents import agent_resolver as agent_resolver  # re-exported: yacht_env.versus.agent_resolver
from yacht_env.pool import AgentPool
from yacht_env.rules import as_int, is_int
from yacht_env.vector import BatchedEnv

REWARD_MODES = ("score", "win")
OBSERVATION_TYPES = ("flat", "masked")


class YachtVersusVectorEnv(BatchedEnv):
    """N tables of Yacht, the learner in one seat of each, opponents in the others: a fixed lineup, or agents
    drawn from a pool at each game's start.

    Args:
        num_envs: Tables stepped together.
        opponents: A fixed lineup: one agent or spec per other seat (1..9), the table has ``len(opponents) + 1``
            players (default, without ``pool``: ``["greedy"]``).
        seat: The learner's seat, an int, or ``"random"`` (drawn for each game from the env's generator).
        rules: The rules every player plays.
        reward: ``"score"`` (the learner's points per pick; its rewards sum to its total) or ``"win"``
            (at the end only: the learner's share of the zero-sum win reward of
            :func:`yacht_env.game.win_rewards`: +1 shared by the winners, -1 by the others).
        observation_type: ``"flat"`` (:class:`~yacht_env.encoding.MultiplayerEncoder`'s layout from the
            learner's seat) or ``"masked"`` (``{"observation": ..., "action_mask": ...}``).
        action_mask_dtype, canonical_keeps, illegal_action, illegal_action_penalty, max_illegal_actions:
            As ``Yacht-v0``; they apply to the learner. An opponent's illegal action raises ``ValueError``
            naming it; opponents get their own copies of the masks and observations (writing into them
            changes nothing), and one whose ``rules`` attribute names other rules is refused (``ValueError``).
        autoreset_mode: ``"next_step"`` or ``"same_step"``, as :class:`yacht_env.vector.YachtVectorEnv`.
        resolver: Builds an opponent from a spec string, ``resolver(spec, rules, seed=i)``; default: the one
            installed packages declare (:func:`~yacht_env.opponents.agent_resolver`, yacht-rl's
            :func:`yacht_agents.make_agent`).
        pool: Instead of ``opponents``: the agents (or specs) drawn for the opponents' seats, member ``i`` being
            ``pool[i]`` (the ``i`` of ``info["opponents"]``).
        players: The table's size with a pool, 2..10 (default 2).
        pool_weights: The members' draw weights (non-negative, not all zero; normalised); default: equal.

    A learner step is one decision of the learner; after its pick the opponents after it play their whole
    turns inside the step, up to the learner's next turn (or the end of the game). Opponents seated before
    the learner play their first turns at reset.

    **The pool.** At each game's start, after its dice and the learner's seat, every opponent seat of the table
    draws a member, independently, by weight (:mod:`yacht_env.pool`: inverse CDF on one uniform per seat,
    ``np_random.random((tables, players - 1))``, the opponents in seat order). A game keeps its opponents to its
    end; all the tables where one member is on turn act in one batched call. :meth:`add_members`,
    :meth:`set_weights` and :meth:`retire_members` change the pool between steps, from each table's next game on;
    member indices never change.

    Info (batched, every key with an all-True ``"_key"`` mask; ``Yacht-v0``'s dtypes): ``"dice"`` int8 (N, 5)
    the learner's dice, ``"rolls_left"`` int64 (N,), ``"scores"`` int16 (N, P, 12), ``"totals"`` int64 (N, P),
    ``"seat"`` int64 (N,), ``"action_mask"`` int8 (N, 44), ``"illegal_action"`` bool (N,), ``"illegal_actions"``
    int64 (N,); with ``same_step`` also ``"final_obs"``, ``"final_totals"`` and ``"final_seat"`` where a game
    ended. With a pool also ``"opponents"`` int64 (N, P - 1): the member at each opponent seat of the game
    shown, in seat order (the learner's seat skipped), and with ``same_step`` ``"final_opponents"``: those of
    the game that ended.

    Seeding: ``reset(seed=s)`` draws the seats, every player's dice and the pool's draws from the env's
    generator, and reseeds opponents (members) that have a ``reseed`` method (the ``random`` agent).
    ``reset(options={"dice_stream": S})`` with ``S`` of shape ``(N, P, 12, 3, 5)`` deals ``S[t, 0]`` to the
    learner and ``S[t, 1 + i]`` to opponent ``i`` (the ``i``-th opponent seat in seat order with a pool),
    whatever their seats.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponents: Sequence[Any] | None = None,
        seat: int | str = "random",
        rules: str | R.Rules = "standard",
        reward: str = "score",
        autoreset_mode: str | AutoresetMode = "next_step",
        render_mode: str | None = None,
        resolver: Callable[..., Any] | None = None,
        pool: Sequence[Any] | None = None,
        players: int | None = None,
        pool_weights: Sequence[float] | None = None,
        **options: Any,
    ) -> None:
        configure_from(self, options, rules=rules, observation_type="flat", observation_types=OBSERVATION_TYPES)
        self._resolver, self._pool = resolver, None
        if pool is None:
            if players is not None or pool_weights is not None:
                raise ValueError("players and pool_weights go with a pool; a fixed lineup has len(opponents) + 1")
            self.opponents = resolve_opponents(("greedy",) if opponents is None else opponents, self.rules, resolver)
            self.num_players = p = len(self.opponents) + 1
            for i, opponent in enumerate(self.opponents):
                table = getattr(opponent, "table_players", None)
                if table not in (None, p):
                    raise ValueError(f"opponent {i} acts at a table of {table} players; this table has {p}")
        else:
            if opponents is not None:
                raise ValueError("give opponents (a fixed lineup) or pool (members drawn for each game), not both")
            p = 2 if players is None else players
            if not (is_int(p) and 2 <= p <= 10):
                raise ValueError(f"players must be an int in 2..10, got {players!r}")
            if isinstance(pool, str) or not isinstance(pool, Sequence) or not pool:
                raise ValueError(f"pool must be a non-empty list of agents or agent specs, got {pool!r}")
            self.opponents, self.num_players = None, int(p)
            p = self.num_players
            self._pool = AgentPool([self._member(member, i) for i, member in enumerate(pool)], pool_weights)
        if not (seat == "random" or (is_int(seat) and 0 <= seat < p)):
            raise ValueError(f"seat must be 'random' or an int in 0..{p - 1}, got {seat!r}")
        if not isinstance(reward, str) or reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        self.seat = seat
        self.reward_mode = reward
        self._setup(num_envs, autoreset_mode, render_mode)
        n = self.num_envs

        self._encoder = MultiplayerEncoder(self.rules, p)
        self._solo = ObservationEncoder(self.rules)
        self.single_observation_space = self._encoder.space
        if self.observation_type == "masked":
            mask_space = spaces.Box(0, 1, shape=(self.rules.num_actions,), dtype=np.dtype(self.action_mask_dtype))
            self.single_observation_space = spaces.Dict({"observation": self._encoder.space, "action_mask": mask_space})
        self.observation_space = batch_space(self.single_observation_space, n)
        self._table = TableState(self.rules, p, n, self.canonical_keeps)
        self._learner_seat = np.zeros(n, dtype=np.intp)
        self._opponent_at = np.zeros((n, p), dtype=np.intp)  # opponent index at each seat (-1: the learner)
        self._over = np.zeros(n, dtype=bool)
        # With a pool: the member at each opponent seat (seat order, the learner's skipped).
        self._members = None if self._pool is None else np.zeros((n, p - 1), dtype=np.intp)

    @property
    def pool(self) -> list[Any]:
        """The agents that act: the fixed lineup (opponent ``i`` is member ``i``), or the pool's members."""
        return self.opponents if self._pool is None else self._pool.agents

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts new games at every table (Gymnasium's ``VectorEnv.reset``); see the class docstring."""
        if seed is not None:
            for i, opponent in enumerate(self.pool):
                if callable(getattr(opponent, "reseed", None)):
                    opponent.reseed([seed, i])
        return super().reset(seed=seed, options=options)

    # The pool ------------------------------------------------------------------------------------
    @property
    def pool_weights(self) -> np.ndarray | None:
        """The members' draw probabilities (``None`` for a fixed lineup)."""
        return None if self._pool is None else self._pool.weights

    def add_members(self, agents: Sequence[Any]) -> list[int]:
        """Appends ``agents`` (objects, or specs resolved as the constructor's) to the pool, with weight 0:
        :meth:`set_weights` then gives them their share. Returns their member indices.

        Raises:
            ValueError: a fixed lineup (no pool), or an agent that is not one, plays other rules or acts at
                another table size.
        """
        start = len(self._checked_pool().agents)
        added = [self._member(agent, start + j) for j, agent in enumerate(agents)]
        return self._pool.add(added)

    def set_weights(self, weights: Sequence[float]) -> None:
        """The members' draw weights from each table's next game on (:mod:`yacht_env.pool`); lets go of the
        retired members no table seats.

        Raises:
            ValueError: a fixed lineup, not one finite non-negative weight per member, all zero, or weight for a
                retired member.
        """
        self._checked_pool().set_weights(weights)
        self._pool.let_go(self._members)

    def retire_members(self, members: Sequence[int]) -> None:
        """Members never drawn again; the env lets go of each (``pool[i]`` becomes ``None``) once no table seats
        it, checked here and at each :meth:`set_weights`.

        Raises:
            ValueError: a fixed lineup, an index out of range, or retiring every member that has weight.
        """
        self._checked_pool().retire(members)
        self._pool.let_go(self._members)

    def _checked_pool(self) -> AgentPool:
        if self._pool is None:
            raise ValueError("a fixed lineup has no pool: build the env with pool=[...]")
        return self._pool

    def _member(self, agent: Any, i: int) -> Any:
        agent = resolve_agent(agent, self.rules, self._resolver, i, "pool member")
        players = getattr(agent, "table_players", None)
        if players not in (None, self.num_players):
            raise ValueError(f"pool member {i} acts at a table of {players} players; this table has {self.num_players}")
        return agent

    # The hooks of BatchedEnv ----------------------------------------------------------------------
    def _parse_streams(self, options: dict[str, Any] | None, seed: int | None) -> np.ndarray | None:
        return parse_dice_stream(options, self.rules, (self.num_envs, self.num_players))

    def _deal(self, tables: np.ndarray, streams: np.ndarray | None) -> None:
        """Deals new games at ``tables``: seats, each player's dice, the pool's members, then the opponents before
        the learner play.
        """
        n, p = len(tables), self.num_players
        if streams is None:
            streams = draw_stream(self.np_random, self.rules, n * p).reshape(
                n, p, *self._table.players.stream.shape[1:]
            )
        seats = self.np_random.integers(0, p, size=n) if self.seat == "random" else np.full(n, self.seat)
        if self._members is not None:
            self._members[tables] = self._pool.draw(self.np_random, (n, p - 1))
        # Player identity at each seat: the learner (0) at its seat, opponents 1..p-1 in order at the others.
        seat_index = np.arange(p)
        player_at = np.where(seat_index < seats[:, None], seat_index + 1, seat_index)
        player_at[np.arange(n), seats] = 0
        self._table.start(np.take_along_axis(streams, player_at[:, :, None, None], axis=1), tables)
        self._learner_seat[tables] = seats
        self._opponent_at[tables] = player_at - 1
        self._over[tables] = False
        start = np.zeros(self.num_envs, dtype=bool)
        start[tables] = True
        self._play_opponents(start)

    def _play(self, actions: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points, over = self._table.play(actions, legal)
        self._over |= over
        # The opponents after the learner play up to its next turn, at the tables where it picked.
        self._play_opponents(legal & (actions >= R.PICK_OFFSET))
        if self.reward_mode == "score":
            return points.astype(np.float64), self._over & legal
        rewards = np.zeros(self.num_envs)
        ended = self._over & legal
        if ended.any():
            rewards[ended] = win_rewards(self._table.totals())[self._index, self._learner_seat][ended]
        return rewards, ended

    def _state_mask(self) -> np.ndarray:
        mask = self._table.players.mask[self._index * self.num_players + self._learner_seat]
        mask[self._over] = True  # the learner's game is over: every action allowed (never an empty row)
        return mask

    def _observe(self) -> np.ndarray:
        return self._encoder.observe(self._table, self._learner_seat)

    def _info(self) -> dict[str, np.ndarray]:
        games = self._table.players
        rows = self._index * self.num_players + self._learner_seat
        return {
            "dice": R.ROLLS[games.roll[rows]],
            "rolls_left": games.rolls_left[rows].astype(np.int64),
            "scores": self._table.sheets.copy(),
            "totals": self._table.totals().astype(np.int64),
            "seat": self._learner_seat.astype(np.int64),
            **({} if self._members is None else {"opponents": self._members.astype(np.int64)}),
        }

    def _final_info(self) -> dict[str, np.ndarray]:
        return {
            "final_totals": self._table.totals().astype(np.int64),
            "final_seat": self._learner_seat.astype(np.int64),
            **({} if self._members is None else {"final_opponents": self._members.astype(np.int64)}),
        }

    def _describe_illegal(self, i: int, action: int) -> str:
        games = self._table.players
        row = self._table.on_turn[i]
        return R.describe_illegal(
            action,
            int(games.roll[row]),
            int(games.rolls_left[row]),
            self.rules.categories,
            int(games.open_mask[row]),
        )

    # ---------------------------------------------------------------------------------------------
    def _play_opponents(self, tables: np.ndarray) -> None:
        """Opponents on turn at ``tables`` (bool (N,)) play, one decision per table per pass, in batch per
        opponent (per pool member), until the learner is on turn again or the game is over.
        """
        table = self._table
        active = np.flatnonzero(tables & (table.current != self._learner_seat) & ~self._over)
        while active.size:
            who = self._opponent_at[active, table.current[active]]
            if self._members is not None:
                who = self._members[active, who]
            actions = act_at_tables(self.pool, who, table, active, self._solo, self._encoder)
            _, over = table.play(actions, None, active)
            self._over[active] |= over
            active = active[~over & (table.current[active] != self._learner_seat[active])]


class YachtVersusEnv(gym.Env):
    """One table of Yacht against fixed opponents: ``gymnasium.make("YachtVersus-v0", opponents=["greedy"])``.

    ## Description
    The learner holds one seat (``seat=`` an int, or ``"random"`` for each game) and ``opponents=`` (agents
    or specs: ``"random"``, ``"greedy"``, ``"optimal"``, ``"win"``, ``"ppo:PATH"``) play their own turns
    inside ``step``; no PettingZoo needed. ``gymnasium.make_vec("YachtVersus-v0", num_envs=N, ...)``
    returns :class:`YachtVersusVectorEnv`, N tables with the opponents acting in batch (one ``act`` call
    per opponent per pass, no per-game loop); ``YachtSB3VecEnv(N, opponents=[...])`` trains MaskablePPO on
    it. The arguments, observations, rewards and info of this env are the vector env's for one table
    (without the batch axis). An opponent sees its own game as ``Yacht-v0`` shows it; an agent whose
    ``table_players`` is the table's size (a PPO model trained in ``YachtVersus-v0``) sees the table from
    its seat, as the learner does. Spec strings are resolved when the env is built; an opponent whose
    ``rules`` attribute names other rules than the env's is refused with ``ValueError``. Each opponent gets
    its own copy of its masks and observations: writing into them changes nothing.

    Each preset has a versus id of its own, this env with those rules: ``YahtzeeVersus-v0``, ``YatzyVersus-v0``,
    ... (the solo id with ``Versus`` before the version, ``yacht_env.env_id(preset, versus=True)``; the solo ids are
    on the ``Yacht-v0`` page); ``make_vec`` on one builds :class:`YachtVersusVectorEnv` on those rules, and a
    ``rules=`` given to ``make`` still wins over the id's preset.

    ## Observation
    ``observation_type="flat"`` (default): ``Box(0, 1, (S,), float32)``, the table from the learner's
    seat in the multiplayer layout (its own game exactly as ``Yacht-v0`` shows it, then each opponent's
    open categories and total, then its own total and its margin to the best opponent;
    ``S = 64 + 13 (P - 1) + 2``, 79 for 2 players), documented index by index in
    :class:`yacht_env.encoding.MultiplayerEncoder` and on the PettingZoo env's page. The family's presets show
    each opponent's bonus progress too (its ``upper`` and ``armed`` parts, as its own solo observation has them,
    between its open categories and its total): ``YahtzeeVersus-v0`` has 88 values for 2 players.
    ``observation_type="masked"``: ``{"observation": ..., "action_mask": ...}``.

    ## Action mask
    ``info["action_mask"]`` gives the learner's legal actions (int8 (44,)), and the method ``action_masks()``
    the same as bool (on a ``gym.make``'d env, whose wrappers do not forward methods:
    ``env.get_wrapper_attr("action_masks")()``).

    ## Actions
    ``Discrete(44)``, ``Yacht-v0``'s encoding, for the learner's decisions (a bool is no action:
    ``ValueError``, as in ``Yacht-v0``; so is one among the vector env's actions). A learner step is one decision
    of the learner; after its pick the opponents after it play their whole turns inside the step, up to
    the learner's next turn (or the end of the game). Opponents seated before the learner play their
    first turns at reset.

    ## Rewards
    ``reward="score"`` (default): the learner's points per pick; its rewards sum to its total.
    ``reward="win"``: at the end only, the learner's share of the zero-sum win reward of
    :func:`yacht_env.game.win_rewards` (+1 shared by the winners, -1 by the others).

    ## Episode End
    The episode is the learner's game, terminated when the table's game is over; truncated as
    ``Yacht-v0`` at the ``max_illegal_actions``-th illegal action of the learner. Stepping a finished
    episode raises ``ValueError``. An opponent's illegal action raises ``ValueError`` naming the opponent
    (checked against the env's own mask, not the copy the opponent was given).

    ## Information
    ``Yacht-v0``'s types (numbers ``np.int64``, flags 0-d bool arrays): ``"dice"`` int8 (5,) the learner's
    dice, ``"rolls_left"`` int64, ``"scores"`` int16 (P, 12), ``"totals"`` int64 (P,), ``"seat"`` int64,
    ``"action_mask"`` int8 (44,), ``"illegal_action"`` bool and ``"illegal_actions"`` int64 (the learner's
    ignored illegal actions this episode).

    ## Seeding
    ``reset(seed=s)`` draws the seat and every player's dice from the env's generator, and reseeds
    opponents that have a ``reseed`` method (the ``random`` agent). ``reset(options={"dice_stream": S})``
    with ``S`` of shape ``(P, 12, 3, 5)`` deals ``S[0]`` to the learner and ``S[1 + i]`` to opponent ``i``,
    whatever their seats.

    ## Arguments
    ```python
    import gymnasium as gym
    import yacht_env

    env = gym.make("YachtVersus-v0", opponents=["greedy"], reward="win")  # one table
    tables = gym.make_vec("YachtVersus-v0", num_envs=4096, opponents=["optimal", "greedy"])  # 4,096 tables
    ```
    * ``opponents``: one agent or spec per other seat (1..9): the table has ``len(opponents) + 1``
      players (default ``["greedy"]``).
    * ``pool``, ``players``, ``pool_weights``: instead of ``opponents``, a pool of agents (or specs) drawn for
      each opponent seat at each game's start, by weight, at a table of ``players`` (2..10; default 2); the
      ``info`` then also has ``"opponents"``, the member at each opponent seat (int64 (P - 1,)). The draw,
      and changing the pool between games, are :class:`YachtVersusVectorEnv`'s.
    * ``seat``: the learner's seat, an int, or ``"random"`` (default; drawn for each game).
    * ``rules``, ``reward`` (``"score"`` or ``"win"``), ``observation_type`` (``"flat"`` or
      ``"masked"``), and ``action_mask_dtype``, ``canonical_keeps``, ``illegal_action``,
      ``illegal_action_penalty``, ``max_illegal_actions`` as ``Yacht-v0`` (they apply to the learner).
    * ``render_mode``: ``"ansi"`` returns every player's sheet, ``"human"`` prints it.
    * The vector env adds ``num_envs`` and ``autoreset_mode`` (``"next_step"`` or ``"same_step"``; see
      :class:`YachtVersusVectorEnv`).

    ## Version History
    * v0: initial release (yacht-rl 0.1.0). Opponent specs are resolved through the ``yacht_rl.agents``
      entry points since 0.2.0, with the same agents: no behaviour change, so the version stays v0. The
      pool (``pool``, ``players``, ``pool_weights``) is an addition: a fixed lineup plays exactly as before. So
      is one versus id per preset (``YahtzeeVersus-v0``, ...): this env with that preset's rules. Then: the
      family's presets (those with an upper or a Yahtzee bonus, new since 0.2.0 and not yet released) show each
      opponent's bonus progress (``upper`` and ``armed``, between its open categories and its total), so their
      observations are longer (``YahtzeeVersus-v0`` at 2 players: 88 values, was 85). Yacht's presets are
      unchanged, byte for byte, so the version stays v0.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(self, opponents: Sequence[Any] | None = None, render_mode: str | None = None, **kwargs: Any) -> None:
        if "autoreset_mode" in kwargs or "num_envs" in kwargs:
            raise ValueError("autoreset_mode and num_envs belong to the vector env, YachtVersusVectorEnv")
        self._tables = YachtVersusVectorEnv(1, opponents, **kwargs)
        self.rules = self._tables.rules
        self.num_players = self._tables.num_players
        self.observation_space = self._tables.single_observation_space
        self.action_space = self._tables.single_action_space
        self.render_mode = checked_render_mode(render_mode, self.metadata["render_modes"])
        self._done = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts a new game (Gymnasium's ``reset``); see the class docstring."""
        super().reset(seed=seed)
        if isinstance(options, dict) and "dice_stream" in options:
            # Checked here with this table's shape (a ragged list is our ValueError, not numpy's), then batched.
            parse_dice_stream({"dice_stream": options["dice_stream"]}, self.rules, (self.num_players,))
            options = {**options, "dice_stream": np.asarray(options["dice_stream"])[None]}
        obs, info = self._tables.reset(seed=seed, options=options)
        self._done = False
        return self._one(obs), self._one_info(info)

    def step(self, action):
        """Plays the learner's action and the opponents' turns after it (Gymnasium's ``step``)."""
        if self._done:
            raise ValueError("the episode is over; call reset() before step()")
        number = as_int(action)
        if number is None or not 0 <= number < self.rules.num_actions:
            raise ValueError(f"action must be an int in 0..{self.rules.num_actions - 1}, got {action!r}")
        action = number
        obs, rewards, terminated, truncated, info = self._tables.step(np.array([action], dtype=np.intp))
        self._done = bool(terminated[0] or truncated[0])
        if self.render_mode == "human":
            print(self.render_text())
        return self._one(obs), float(rewards[0]), bool(terminated[0]), bool(truncated[0]), self._one_info(info)

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions, bool ``(num_actions,)`` (all True once the game is over)."""
        return self._tables.action_masks()[0]

    def render(self) -> str | None:
        """The table's score sheets as text, or printed (``human``)."""
        if self.render_mode not in self.metadata["render_modes"]:
            gym.logger.warn(f"render() called with render_mode={self.render_mode!r}; pass 'ansi' or 'human'")
            return None
        text = self.render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def render_text(self) -> str:
        """Every player's sheet side by side, the learner's column marked."""
        tables, rules = self._tables, self.rules
        games, seat = tables._table.players, int(tables._learner_seat[0])
        names = ["you" if s == seat else f"opp {int(tables._opponent_at[0, s])}" for s in range(self.num_players)]
        width = max(len(name) for name in rules.categories)
        lines = [f"  {'category':<{width}} " + " ".join(f"{name:>7}" for name in names)]
        for k, name in enumerate(rules.categories):
            cells = [int(games.sheet[s, k]) for s in range(self.num_players)]
            lines.append(f"  {name:<{width}} " + " ".join(f"{c if c >= 0 else '-':>7}" for c in cells))
        lines.append(f"  {'total':<{width}} " + " ".join(f"{int(t):>7}" for t in tables._table.totals()[0]))
        dice = " ".join(str(v) for v in R.ROLL_TUPLES[games.roll[seat]])
        lines.append(f"your dice: {dice}  rolls left: {int(games.rolls_left[seat])}")
        return "\n".join(lines)

    @staticmethod
    def _one(obs):
        return {key: value[0] for key, value in obs.items()} if isinstance(obs, dict) else obs[0]

    @staticmethod
    def _one_info(info: dict[str, Any]) -> dict[str, Any]:
        # Table 0's entries in Yacht-v0's types: numbers np.int64 scalars, arrays as they are, flags 0-d bool
        # arrays (a numpy bool scalar would be batched into an object array by Gymnasium's vector envs).
        one = {}
        for key, value in info.items():
            if key.startswith("_"):
                continue
            one[key] = np.array(value[0]) if value.dtype == np.bool_ and value.ndim == 1 else value[0]
        return one
