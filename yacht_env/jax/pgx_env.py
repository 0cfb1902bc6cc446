"""``YachtPgx``: the JAX core as a ``pgx.Env``, tables of 1 to 10 players (needs pgx).

A thin face over :class:`yacht_env.jax.YachtGame`, as pgx's own games are over their ``_src/games`` cores: it adds
pgx's ``State`` fields and its conventions, and nothing of the rules.

## Description
Yacht (or a family preset) at a table of ``num_players``; players take whole turns in seat order, each with its own
dice and sheet, exactly as the numpy core's :class:`yacht_env.game.TableState` and the PettingZoo ``yacht_v0``.

## State
pgx's fields: ``current_player`` (int32, the seat on turn), ``observation`` (float32, the view of the player on
turn: ``Yacht-v0``'s flat observation with one player, ``MultiplayerEncoder``'s table view with more),
``rewards`` (float32 ``(P,)``), ``terminated``, ``truncated`` (bool; never truncated), ``legal_action_mask`` (bool
``(num_actions,)``, the player on turn's); ``_game`` is the core's :class:`~yacht_env.jax.GameState`.

## Actions
``Discrete(rules.num_actions)``: ``0..31`` keep-masks over the sorted dice, ``32 + k`` picks category ``k``.

## Rewards
``reward="score"`` (default): the picker gets its pick's points (bonuses included), so a player's rewards sum to its
total. ``reward="win"``: :func:`yacht_env.game.win_rewards` at the end (+1 shared by the best, -1 shared by the
others), zero before.

## Conventions (pgx's, written down)
* Chance: ``step(state, action, key)`` needs a key (the dice are drawn from it); without one it raises
  ``ValueError``. ``init(key)`` deals every player's first roll from its key.
* Illegal action: the game ends at once (``terminated``), the actor's reward is -1 and every other player's is
  ``num_players - 1`` (pgx's ``_step_with_illegal_action``); the dice and sheets do not change.
* Finished game: ``legal_action_mask`` is all True; a step on a terminated state changes nothing and every reward is
  0.

## Picture
``state.to_svg()`` (what a notebook shows, through pgx's ``_repr_html_``) and ``state.save_svg(path)``: the dice of the
player on turn and every player's sheet, a batch of tables in a grid (:mod:`yacht_env.jax.svg`). pgx's visualizer
(``pgx.save_svg``, ``pgx.save_svg_animation``) draws only pgx's own games.

## Arguments
``rules`` (a preset name or :class:`~yacht_env.rules.Rules`), ``num_players`` (1..10, default 2), ``reward``
(``"score"`` or ``"win"``).

## Version History
* v0: initial release (after yacht-rl 0.2.0, not yet released).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import pgx.core
from pgx._src.struct import dataclass, field

from yacht_env import rules as R
from yacht_env.jax.core import GameState, YachtGame
from yacht_env.jax.svg import table_svg

REWARDS = ("score", "win")


@dataclass
class State(pgx.core.State):
    """pgx's state of a Yacht table: pgx's six fields and the step count, the core's table (``_game``), and the
    preset (``_rules``, static: not an array) its picture needs.
    """

    current_player: jax.Array
    observation: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    legal_action_mask: jax.Array
    _step_count: jax.Array
    _game: GameState
    _rules: R.Rules = field(pytree_node=False)

    @property
    def env_id(self) -> str:
        """Pgx's environment id."""
        return "yacht"

    def to_svg(self, *, color_theme: Literal["light", "dark"] | None = None, scale: float | None = None) -> str:
        """The table as SVG (:func:`yacht_env.jax.svg.table_svg`; a batch in a grid): what a notebook shows.

        pgx's visualizer draws only pgx's own games, so this state draws itself, as pgx's MinAtar states do. The
        defaults are pgx's (``pgx.set_visualization_config``).
        """
        from pgx._src.visualizer import global_config

        theme = global_config.color_theme if color_theme is None else color_theme
        scale = global_config.scale if scale is None else scale
        return table_svg(self._rules, self._game, color_theme=theme, scale=scale)

    def save_svg(
        self, filename: str | Path, *, color_theme: Literal["light", "dark"] | None = None, scale: float | None = None
    ) -> None:
        """Writes :meth:`to_svg` to ``filename``."""
        Path(filename).write_text(self.to_svg(color_theme=color_theme, scale=scale), encoding="utf-8")


class YachtPgx(pgx.core.Env):
    """A table of Yacht as a ``pgx.Env``: see the module docstring (its sections are this class's documentation).

    Example:
        >>> import jax
        >>> from yacht_env.jax import YachtPgx
        >>> env = YachtPgx("standard", num_players=2)
        >>> state = jax.jit(env.init)(jax.random.key(0))
        >>> state.observation.shape, state.rewards.shape
        ((79,), (2,))
    """

    def __init__(self, rules: str | R.Rules = "standard", num_players: int = 2, reward: str = "score") -> None:
        super().__init__()
        if reward not in REWARDS:
            raise ValueError(f"reward must be 'score' or 'win', got {reward!r}")
        self.game = YachtGame(rules, num_players)
        self.rules = self.game.rules
        self.reward = reward

    def _init(self, key: jax.Array) -> State:
        game = self.game.init(key)
        return State(
            current_player=game.current_player,
            observation=jnp.zeros(self.game.observation_size, dtype=jnp.float32),
            rewards=jnp.zeros(self.game.num_players, dtype=jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            legal_action_mask=self.game.legal_action_mask(game),
            _step_count=jnp.int32(0),
            _game=game,
            _rules=self.rules,
        )

    def _step(self, state: State, action: jax.Array, key: jax.Array | None) -> State:
        if key is None:
            raise ValueError("YachtPgx rolls dice: step(state, action, key) needs a key")
        seat = state._game.current_player
        game, points = self.game.step(state._game, action, key)
        if self.reward == "score":
            rewards = jnp.zeros(self.game.num_players, jnp.float32).at[seat].set(points.astype(jnp.float32))
        else:
            rewards = jnp.where(game.terminated, self.game.win_rewards(game), 0.0).astype(jnp.float32)
        return state.replace(  # type: ignore[attr-defined]
            current_player=game.current_player,
            rewards=rewards,
            terminated=game.terminated,
            legal_action_mask=self.game.legal_action_mask(game),
            _game=game,
        )

    def _observe(self, state: State, player_id: jax.Array) -> jax.Array:
        return self.game.observe(state._game, player_id)

    @property
    def id(self) -> str:
        """Pgx's environment id."""
        return "yacht"

    @property
    def version(self) -> str:
        """Pgx's version: it changes with the behaviour, not with a refactoring or a speed-up."""
        return "v0"

    @property
    def num_players(self) -> int:
        """Players at the table."""
        return self.game.num_players
