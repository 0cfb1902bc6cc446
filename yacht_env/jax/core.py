"""The game core in JAX: tables of 1..10 players as a small pytree of integers, and pure functions over it.

:class:`YachtGame` holds one preset's tables (:mod:`yacht_env.jax.tables`, built by the numpy rules) and the table
size; its methods are pure functions of a :class:`GameState` (one table; ``jax.vmap`` them for many) and are
``jit``, ``vmap`` and ``scan`` friendly: table lookups and ``where``, no Python branch on a traced value, no host
round trip. It plays exactly :class:`yacht_env.game.TableState` (``GameState`` for one player): each player has its
own sheet and dice, the player on turn keeps the turn through its re-rolls and its pick, and a player's next first
roll is dealt as soon as it picks (so a waiting player's roll is already showing, as in the numpy core).

Chance comes in from outside, never from a global: :meth:`YachtGame.init` and :meth:`YachtGame.step` draw a row of
five fair dice from a key (pgx's rule); :meth:`YachtGame.init_with_dice` and :meth:`YachtGame.step_with_dice` take
the row explicitly, and :meth:`YachtGame.step_from_stream` reads it from the players' dice streams (``(P,
*rules.stream_shape)``, the numpy core's streams: ``stream[p, turn, j]`` is the row behind roll ``j`` of player
``p``'s turn, a re-roll of ``m`` dice takes the row's first ``m`` values), so any numpy game replays here.

Actions are the numpy core's (``0..31`` keep-masks over the sorted dice, ``32 + k`` picks category ``k``). The core
plays legal actions; what an illegal one does is the faces' policy (:mod:`yacht_env.jax.pgx_env`,
:mod:`yacht_env.jax.gymnax_env`), and the core's :meth:`YachtGame.step` leaves the state unchanged for one.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from yacht_env import rules as R
from yacht_env.jax.tables import Tables, device_tables, observation_size

MAX_PLAYERS = 10


class GameState(NamedTuple):
    """One table between two decisions (every field int32 unless said; ``P`` players, ``C`` categories).

    Fields:

    * ``roll``: ``(P,)`` the sorted roll each player shows (a row of ``yacht_env.rules.ROLLS``).
    * ``rolls_left``: ``(P,)`` re-rolls left (0 once a player's game is finished).
    * ``open_mask``: ``(P,)`` bit ``k`` set while category ``k`` is open.
    * ``turn``: ``(P,)`` turns each player completed.
    * ``upper``: ``(P,)`` the upper subtotal capped at the bonus threshold (0 without an upper bonus).
    * ``armed``: ``(P,)`` 1 while the five-of-a-kind box holds its points (0 without a Yahtzee bonus).
    * ``sheet``: ``(P, C)`` points of each filled box, -1 while open.
    * ``total``: ``(P,)`` points so far, bonuses included.
    * ``current_player``: ``()`` the seat on turn.
    * ``terminated``: ``()`` bool: the last seat's last pick is made.
    """

    roll: jax.Array
    rolls_left: jax.Array
    open_mask: jax.Array
    turn: jax.Array
    upper: jax.Array
    armed: jax.Array
    sheet: jax.Array
    total: jax.Array
    current_player: jax.Array
    terminated: jax.Array


class Afterstate(NamedTuple):
    """A decision taken, the dice it leaves not yet fallen (:meth:`YachtGame.afterstate`; :mod:`yacht_env.chance`).

    Fields:

    * ``state``: the table after the action: the box scored, seats and turns moved on, rolls left counted down. The
      roll of ``seat`` there is a placeholder until :meth:`YachtGame.step_outcome` sets it.
    * ``kept``: ``()`` int32, the index in ``yacht_env.rules.KEPT`` of the dice that stay (0: none, a turn's first
      roll); -1 where nothing falls (the game is over, or the action was illegal and changed nothing).
    * ``seat``: ``()`` int32, the seat whose dice fall.
    """

    state: GameState
    kept: jax.Array
    seat: jax.Array


class YachtGame:
    """A preset's game at tables of ``num_players``: the pure functions of the JAX core.

    Args:
        rules: A preset name or :class:`~yacht_env.rules.Rules`; every size comes from it.
        num_players: Players at a table, 1..10.
        canonical_keeps: Whether only the canonical keep-mask of each kept multiset is legal (the envs' default).

    Attributes:
        rules, num_players, num_actions, num_categories: The game's sizes.
        observation_size: :meth:`observe`'s length: ``Yacht-v0``'s flat observation for one player
            (:func:`yacht_env.rules.flat_layout`), ``MultiplayerEncoder``'s table view for two or more.
        tables: The device arrays the functions read (:class:`~yacht_env.jax.tables.Tables`).

    Raises:
        ValueError: unknown rules, or a table size outside 1..10.
    """

    def __init__(self, rules: str | R.Rules = "standard", num_players: int = 1, canonical_keeps: bool = True) -> None:
        self.rules = R.get_rules(rules)
        if not R.is_int(num_players) or not 1 <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an int in 1..{MAX_PLAYERS}, got {num_players!r}")
        self.num_players = int(num_players)
        self.canonical_keeps = bool(canonical_keeps)
        self.num_categories = self.rules.num_categories
        self.num_actions = self.rules.num_actions
        self.solo_size = observation_size(self.rules)
        bonus = self.solo_size - R.flat_layout(self.rules)["open_fraction"].stop  # the family's upper and armed parts
        opponents = (self.num_players - 1) * (self.num_categories + bonus + 1)
        self.observation_size = self.solo_size if self.num_players == 1 else self.solo_size + opponents + 2
        self.max_total = float(R.max_total(self.rules))
        self.tables: Tables = device_tables(self.rules)
        self._bits = jnp.left_shift(1, jnp.arange(self.num_categories, dtype=jnp.int32))

    # ---------------------------------------------------------------------------------------------
    # Dealing and playing
    # ---------------------------------------------------------------------------------------------
    def init(self, key: jax.Array) -> GameState:
        """A new table: every player's first roll drawn from ``key``, seat 0 on turn."""
        return self.init_with_dice(draw_dice(key, (self.num_players,)))

    def init_with_dice(self, dice: jax.Array) -> GameState:
        """A new table whose players' first rolls are ``dice`` (``(P, 5)`` values 1..6, any order)."""
        p, c = self.num_players, self.num_categories
        zeros = jnp.zeros(p, dtype=jnp.int32)
        return GameState(
            roll=self._roll_of(jnp.asarray(dice, dtype=jnp.int32)),
            rolls_left=jnp.full(p, R.MAX_ROLLS_LEFT, dtype=jnp.int32),
            open_mask=jnp.full(p, self.rules.all_open, dtype=jnp.int32),
            turn=zeros,
            upper=zeros,
            armed=zeros,
            sheet=jnp.full((p, c), -1, dtype=jnp.int32),
            total=zeros,
            current_player=jnp.int32(0),
            terminated=jnp.bool_(False),
        )

    def step(self, state: GameState, action: jax.Array, key: jax.Array) -> tuple[GameState, jax.Array]:
        """The player on turn plays ``action``, the dice it causes drawn from ``key`` (see :meth:`step_with_dice`)."""
        return self.step_with_dice(state, action, draw_dice(key, ()))

    def step_from_stream(self, state: GameState, action: jax.Array, streams: jax.Array) -> tuple[GameState, jax.Array]:
        """:meth:`step_with_dice` with the row the numpy core would read from the players' ``streams``.

        Args:
            state: The table.
            action: The action of the player on turn.
            streams: ``(P, num_turns, 3, 5)`` dice, ``streams[p]`` player ``p``'s dice stream.
        """
        seat = state.current_player
        turn = state.turn[seat]
        keep_row = streams[seat, turn, jnp.clip(R.ROLLS_PER_TURN - state.rolls_left[seat], 0, R.ROLLS_PER_TURN - 1)]
        next_row = streams[seat, jnp.minimum(turn + 1, self.rules.num_turns - 1), 0]
        return self.step_with_dice(state, action, jnp.where(action < R.PICK_OFFSET, keep_row, next_row))

    def step_with_dice(self, state: GameState, action: jax.Array, dice: jax.Array) -> tuple[GameState, jax.Array]:
        """The player on turn plays ``action``: the one transition.

        A keep re-rolls the dice it does not keep from ``dice`` (the row's first ``m`` values for ``m`` re-rolled
        dice); a pick scores (bonuses and jokers by the pick table), closes the box and deals the picker's next
        first roll (``dice``, all five), then the next seat is on turn. An illegal action (or any action once the
        table is over) changes nothing.

        Args:
            state: The table.
            action: int, ``0..num_actions - 1``.
            dice: ``(5,)`` values 1..6: the row of fresh dice behind this action's roll.

        Returns:
            ``(state, points)``: the new table and what the action scored for the player on turn (0 for a keep).
        """
        t = self.tables
        action = jnp.asarray(action, dtype=jnp.int32)
        dice = jnp.asarray(dice, dtype=jnp.int32)
        seat = state.current_player
        on_turn = jnp.arange(self.num_players) == seat  # where-and-sum, not gather and scatter: cheap under vmap

        def mine(values):
            return jnp.where(on_turn, values, 0).sum()

        roll, rolls_left, open_mask = mine(state.roll), mine(state.rolls_left), mine(state.open_mask)
        upper, armed = mine(state.upper), mine(state.armed)
        legal = self._legal(roll, rolls_left, open_mask)[jnp.clip(action, 0, self.num_actions - 1)]
        legal = legal & (action >= 0) & (action < self.num_actions) & ~state.terminated
        keep = legal & (action < R.PICK_OFFSET)
        pick = legal & ~keep
        # A keep: what it keeps of the roll plus the first m fresh dice, as one multiset code.
        mask = action & R.KEEP_ALL
        prefix = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(t.face_weight[dice])])
        rerolled = t.code_to_roll[t.kept_code[roll, mask] + prefix[t.rerolled[mask]]]
        # A pick: the pick table's entry for this joker context, subtotal and armed flag.
        category = jnp.clip(action - R.PICK_OFFSET, 0, self.num_categories - 1)
        entry = (roll, category, self._joker_context(roll, open_mask), upper, armed)
        points = jnp.where(pick, t.points[entry], 0)
        new_open = jnp.where(pick, open_mask & ~jnp.left_shift(1, category), open_mask)
        finished = pick & (new_open == 0)
        next_turn = pick & ~finished
        new_roll = jnp.where(keep, rerolled, jnp.where(next_turn, t.code_to_roll[prefix[R.NUM_DICE]], roll))
        new_rolls_left = jnp.where(next_turn, R.MAX_ROLLS_LEFT, rolls_left - keep) * ~finished
        filled = on_turn[:, None] & (jnp.arange(self.num_categories) == category) & pick

        def put(values, new):
            return jnp.where(on_turn, new, values).astype(jnp.int32)

        state = state._replace(
            roll=put(state.roll, new_roll),
            rolls_left=put(state.rolls_left, new_rolls_left),
            open_mask=put(state.open_mask, new_open),
            turn=state.turn + (on_turn & next_turn),
            upper=put(state.upper, jnp.where(pick, t.upper[entry], upper)),
            armed=put(state.armed, jnp.where(pick, t.armed[entry], armed)),
            sheet=jnp.where(filled, t.box[entry], state.sheet),
            total=state.total + jnp.where(on_turn, points, 0),
            current_player=jnp.where(pick, (seat + 1) % self.num_players, seat).astype(jnp.int32),
            terminated=state.terminated | (finished & (seat == self.num_players - 1)),
        )
        return state, points

    # ---------------------------------------------------------------------------------------------
    # The model for planners: each step split into a decision and its chance (yacht_env.chance's, in JAX)
    # ---------------------------------------------------------------------------------------------
    def afterstate(self, state: GameState, action: jax.Array) -> tuple[Afterstate, jax.Array]:
        """The deterministic half of :meth:`step_with_dice`: ``action`` taken, its dice not yet fallen.

        After a keep the kept multiset stays (``kept``) and one roll fewer is left; after a pick the box is scored
        and the next turn is about to be rolled: the picker's own solo, the next seat's at a table; after the last
        pick (and for an illegal action, which changes nothing) nothing falls. The picker's next first roll, which the
        core deals at once, is a placeholder of ones here: to the model it falls at the previous seat's pick.

        What is checked: always (under ``jit`` and ``vmap`` too, where shapes and dtypes are known) that ``state`` is
        one table and ``action`` one integer; called eagerly with a concrete action, that it is in
        ``0..num_actions - 1``. Under ``jit`` or ``vmap`` its value is not checked: one out of range is an illegal
        action there (nothing changes, nothing falls). A legal-looking but illegal action is never an error.

        Returns:
            ``(afterstate, points)``: the :class:`Afterstate` and what the action scored for the player on turn.

        Raises:
            ValueError: a batch of tables (``jax.vmap`` it), an action that is not one integer (a float, a bool, an
                array), or, eagerly, one out of range.
        """
        _one_table(state.current_player, "afterstate")
        action = _one_int(action, "action", self.num_actions, check_value=True)
        seat = state.current_player
        roll = state.roll[seat]
        legal = self.legal_action_mask(state)[jnp.clip(action, 0, self.num_actions - 1)]
        legal = legal & (action >= 0) & (action < self.num_actions) & ~state.terminated
        keep = action < R.PICK_OFFSET
        after, points = self.step_with_dice(state, action, jnp.ones(R.NUM_DICE, dtype=jnp.int32))
        kept = jnp.where(keep, self.tables.keep[roll, action & R.KEEP_ALL], 0)
        falls = legal & ~after.terminated
        return Afterstate(after, jnp.where(falls, kept, -1), jnp.where(keep, seat, after.current_player)), points

    def outcome_probabilities(self, after: Afterstate) -> jax.Array:
        """The chance of each sorted roll falling: float32 ``(252,)``, summing to 1, or all 0 where nothing falls."""
        return self.tables.outcome_probability[jnp.where(after.kept >= 0, after.kept, R.NUM_KEPT)]

    def step_outcome(self, after: Afterstate, outcome: jax.Array) -> GameState:
        """The chance half: ``after`` with the sorted roll ``outcome`` fallen (ignored where nothing falls).

        What is checked: always (under ``jit`` and ``vmap`` too) that ``after`` is one table's and ``outcome`` one
        integer; called eagerly with concrete values, where dice fall, that ``outcome`` is a sorted-roll index
        (``0..251``) that the kept dice can reach (the messages of :func:`yacht_env.chance.step_outcome`). Under
        ``jit`` or ``vmap`` its value is not checked: an unreachable outcome (probability 0) gives a table no game
        reaches, and one out of range a roll index that later lookups clamp. The caller draws from
        :meth:`outcome_probabilities`.

        Raises:
            ValueError: a batch of afterstates (``jax.vmap`` it), an outcome that is not one integer, or, eagerly, one
                out of range or unreachable where dice fall.
        """
        _one_table(after.kept, "step_outcome")
        falls_here = not isinstance(after.kept, jax.core.Tracer) and int(after.kept) >= 0
        outcome = _one_int(outcome, "outcome", R.NUM_ROLLS, check_value=falls_here)
        if falls_here and not isinstance(outcome, jax.core.Tracer):
            kept, roll = int(after.kept), int(outcome)
            if not self.tables.outcome_probability[kept, roll] > 0:
                raise ValueError(f"roll {R.ROLL_TUPLES[roll]} cannot follow keeping {R.KEPT[kept]}")
        falls = (jnp.arange(self.num_players) == after.seat) & (after.kept >= 0)
        return after.state._replace(roll=jnp.where(falls, outcome, after.state.roll))

    # ---------------------------------------------------------------------------------------------
    # What a player sees and may do
    # ---------------------------------------------------------------------------------------------
    def legal_action_mask(self, state: GameState) -> jax.Array:
        """The legal actions of the player on turn, ``(num_actions,)`` bool; all True once its game is finished."""
        seat = state.current_player
        return self._legal(state.roll[seat], state.rolls_left[seat], state.open_mask[seat])

    def _legal(self, roll: jax.Array, rolls_left: jax.Array, open_mask: jax.Array) -> jax.Array:
        t = self.tables
        keeps = (t.canonical if self.canonical_keeps else t.any_keep)[roll] & (rolls_left > 0)
        picks = t.forced[t.five_face[roll], open_mask]  # the open mask itself but under the forced joker
        mask = jnp.concatenate([keeps, (picks & self._bits) != 0])
        return mask | (open_mask == 0)

    def observe(self, state: GameState, player: jax.Array | int | None = None) -> jax.Array:
        """The observation of ``player`` (default: the player on turn), float32 ``(observation_size,)``.

        One player: ``Yacht-v0``'s flat observation. Two or more: :class:`yacht_env.encoding.MultiplayerEncoder`'s
        view (its own game's flat observation, each opponent in seat order after it with its open boxes, its bonus
        progress where the rules have one and its total / ``max_total``, its own total, the margin to the best
        opponent).
        """
        seat = state.current_player if player is None else jnp.asarray(player, dtype=jnp.int32)
        solo = self.observe_solo(
            state.roll[seat], state.rolls_left[seat], state.open_mask[seat], state.upper[seat], state.armed[seat]
        )
        p = self.num_players
        if p == 1:
            return solo
        t = self.tables
        order = (seat + jnp.arange(1, p)) % p
        # Lookups in the rules' tables, not divisions: XLA turns a division by a constant into a product, and float32
        # arithmetic on the quotients (a margin from two rounded totals) would round otherwise than one division.
        top = t.total_fraction.shape[0] - 1
        totals = jnp.clip(state.total, 0, top)
        own, others = totals[seat], totals[order]
        opponents = jnp.concatenate(
            [
                t.by_open[state.open_mask[order], : self.num_categories],
                *self._bonus_parts(state.upper[order], state.armed[order]),
                t.total_fraction[others][:, None],
            ],
            1,
        )
        margin = t.margin[own - others.max() + top]
        return jnp.concatenate([solo, opponents.reshape(-1), jnp.stack([t.total_fraction[own], margin])])

    def observe_solo(self, roll, rolls_left, open_mask, upper=0, armed=0) -> jax.Array:
        """``Yacht-v0``'s flat observation of one player's state (:meth:`ObservationEncoder.flat`'s values)."""
        t = self.tables
        by_open = t.by_open[open_mask]
        score_now = t.score_now[roll, self._joker_context(roll, open_mask)] * by_open[: self.num_categories]
        parts = [t.by_roll[roll * R.ROLLS_PER_TURN + rolls_left], score_now, by_open]
        return jnp.concatenate([*parts, *self._bonus_parts(jnp.asarray(upper), jnp.asarray(armed))], -1)

    def _bonus_parts(self, upper: jax.Array, armed: jax.Array) -> list[jax.Array]:
        """The family's ``upper`` and ``armed`` parts of players' states (none for Yacht's presets): each ``(...,
        size)`` for ``upper`` and ``armed`` of shape ``(...)``, as in a solo observation.
        """
        parts = []
        if self.rules.upper_bonus:
            parts.append(self.tables.upper_obs[upper])
        if self.rules.yahtzee_bonus:
            parts.append((armed != 0).astype(jnp.float32)[..., None])
        return parts

    def is_terminal(self, state: GameState) -> jax.Array:
        """Whether the table's game is over."""
        return state.terminated

    def totals(self, state: GameState) -> jax.Array:
        """Every player's total, ``(P,)`` int32."""
        return state.total

    def win_rewards(self, state: GameState) -> jax.Array:
        """:func:`yacht_env.game.win_rewards` of the totals (float32 ``(P,)``): the highest share +1, the rest -1."""
        return win_rewards(state.total)

    # ---------------------------------------------------------------------------------------------
    def _roll_of(self, dice: jax.Array) -> jax.Array:
        """The sorted-roll index of five dice in any order (batched over leading axes)."""
        return self.tables.code_to_roll[self.tables.face_weight[dice].sum(axis=-1)]

    def _joker_context(self, roll: jax.Array, open_mask: jax.Array) -> jax.Array:
        """The pick table's joker context: bit 1 the five-of-a-kind box open, bit 0 the face's upper box open."""
        if self.rules.joker == "none":
            return jnp.int32(0)
        t = self.tables
        five_box = self.rules.five_of_a_kind_category
        box = t.upper_box[t.five_face[roll]]
        upper_open = jnp.where(box >= 0, jnp.right_shift(open_mask, jnp.maximum(box, 0)) & 1, 1)
        return 2 * (jnp.right_shift(open_mask, five_box) & 1) + upper_open


def _one_table(field: jax.Array, method: str) -> None:
    """Refuses a batch where ``method`` takes one table (``field`` is one of its scalars; its shape is static)."""
    if jnp.ndim(field) != 0:
        raise ValueError(f"{method} takes one table, got a batch of shape {jnp.shape(field)}: jax.vmap it")


def _one_int(value, name: str, count: int, check_value: bool) -> jax.Array:
    """``value`` as an int32 scalar. Its dtype and shape are checked always (they are static under ``jit`` and
    ``vmap``); its value, in ``0..count - 1``, where ``check_value`` and it is concrete (an eager call).

    Raises:
        ValueError: not one integer (a float, a bool, an array, ``None``), or a concrete value out of range.
    """
    expected = f"{name} must be one int in 0..{count - 1}"
    try:
        array = jnp.asarray(value)
    except (TypeError, OverflowError, ValueError):
        raise ValueError(f"{expected}, got {value!r}") from None
    if array.shape != () or not jnp.issubdtype(array.dtype, jnp.integer):
        concrete = array.shape == () and not isinstance(value, jax.core.Tracer)
        got = repr(value) if concrete else f"{array.dtype} of shape {array.shape}"
        raise ValueError(f"{expected} (jax.vmap for a batch), got {got}")
    if check_value and not isinstance(array, jax.core.Tracer) and not 0 <= int(array) < count:
        raise ValueError(f"{expected}, got {int(array)}")
    return array.astype(jnp.int32)


def draw_dice(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Rows of five fair dice drawn from ``key``: int32 ``shape + (5,)``, values 1..6.

    One draw per row, as the numpy core's (:func:`yacht_env.rules.draw_prefix_codes`): the row is the base-6 number
    ``randint(7776)``, die 0 its leading digit (a fifth of the random bits of five draws: on a CPU, drawing is a good
    part of a step).
    """
    number = jax.random.randint(key, shape, 0, R.NUM_FACES**R.NUM_DICE, dtype=jnp.int32)
    weights = R.NUM_FACES ** jnp.arange(R.NUM_DICE - 1, -1, -1, dtype=jnp.int32)
    return (number[..., None] // weights) % R.NUM_FACES + 1


def win_rewards(totals: jax.Array) -> jax.Array:
    """:func:`yacht_env.game.win_rewards` in JAX: the players with the highest total share +1, the others share -1;
    all tied (a lone player too): 0. ``totals`` ``(..., P)``; float32 of the same shape.
    """
    best = totals.max(axis=-1, keepdims=True)
    winners = totals == best
    n_win = winners.sum(axis=-1, keepdims=True)
    n_lose = totals.shape[-1] - n_win
    rewards = jnp.where(winners, 1.0 / n_win, -1.0 / jnp.maximum(n_lose, 1))
    return jnp.where(n_lose == 0, 0.0, rewards).astype(jnp.float32)
