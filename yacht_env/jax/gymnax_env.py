"""``YachtGymnax``: one player's game as a gymnax ``Environment``, for single-agent code written for PureJaxRL.

A thin face over :class:`yacht_env.jax.YachtGame` with one player, following ``Yacht-v0``'s contract in gymnax's
shape (needs gymnax).

## Observation and actions
``Yacht-v0``'s flat observation (float32 ``(40 + 2 C [+ bonus parts],)``, every value in ``[0, 1]``) and its actions
(``Discrete(rules.num_actions)``: ``0..31`` keep-masks, ``32 + k`` picks category ``k``).

## Action mask
gymnax has none of its own: :meth:`YachtGymnax.action_mask` of a state, and ``info["action_mask"]`` after each step
(the mask of the state the step returns, after an automatic reset too).

## Rewards and episode end
The points of each pick (bonuses included), 0 for a keep; terminated after the last pick, and gymnax's ``step``
resets the game then (``info["final_observation"]`` and ``info["total"]``, the finished game's total, tell what
ended). An illegal action is ``Yacht-v0``'s "ignore": nothing changes, the reward is
``params.illegal_action_penalty`` and ``info["illegal_action"]`` is True; the episode is truncated at the
``params.max_illegal_actions``-th.

## Arguments
``rules``: a preset name or :class:`~yacht_env.rules.Rules`. ``EnvParams``: ``illegal_action_penalty`` (0.0),
``max_illegal_actions`` (100); ``max_steps_in_episode`` of the default parameters is the longest an episode can be
(three decisions a category, and the illegal actions before the truncation), for code that caps its episodes by it.

## Code written for gymnax before 1.0
PureJaxRL and rejax call the five-value step of gymnax 0.0.x, ``(obs, state, reward, done, info)``:
:class:`FiveValueStep` (``FiveValueStep(YachtGymnax(rules))``) is the env with that step (``done`` is ``terminated
or truncated``; ``info`` tells which), so their algorithms take it unmodified (``tests/test_jax_rejax.py`` trains
rejax's PPO on it).

## Ids in gymnax's registry
Importing this module (``import yacht_env.jax.gymnax_env``, or reading ``yacht_env.jax.YachtGymnax``) registers two
ids per preset with gymnax, so code that only takes an env name builds the game with ``gymnax.make``: the preset's
Gymnasium id (``Yacht-v0``, ``Yahtzee-v0``, ...: :func:`yacht_env.env_id`) is :class:`YachtGymnax` on its rules, and
the same id with ``FiveValue`` before its version (``YachtFiveValue-v0``, ``YahtzeeFiveValue-v0``, ...:
:func:`five_value_id`) is its :class:`FiveValueStep`, for PureJaxRL's ``gymnax.make(config["ENV_NAME"])`` and rejax's
``PPO.create(env="YachtFiveValue-v0")``. A ``rules=`` given to ``gymnax.make`` wins over the id's preset.

## Version History
* v0: initial release (after yacht-rl 0.2.0, not yet released).
"""

from __future__ import annotations

import functools
from functools import partial
from typing import Any

import gymnax
import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from yacht_env import rules as R
from yacht_env.jax.core import GameState, YachtGame
from yacht_env.registration import env_id


@struct.dataclass
class EnvState(environment.EnvState):
    """The game (``game``, the core's state of one player), gymnax's step count (``time``) and the illegal actions."""

    game: GameState
    illegal_actions: jax.Array


@struct.dataclass
class EnvParams(environment.EnvParams):
    """``illegal_action_penalty``: the reward of an ignored illegal action; ``max_illegal_actions``: the truncation."""

    illegal_action_penalty: float = 0.0
    max_illegal_actions: int = 100


class YachtGymnax(environment.Environment[EnvState, EnvParams]):
    """One player's Yacht as a gymnax ``Environment``: see the module docstring.

    Example:
        >>> import jax
        >>> from yacht_env.jax import YachtGymnax
        >>> env = YachtGymnax("standard")
        >>> obs, state = env.reset(jax.random.key(0))
        >>> obs.shape, int(env.action_mask(state).sum()) > 0
        ((64,), True)
    """

    def __init__(self, rules: str | R.Rules = "standard") -> None:
        super().__init__()
        self.game = YachtGame(rules, 1)
        self.rules = self.game.rules

    @property
    def default_params(self) -> EnvParams:
        """The default parameters (``Yacht-v0``'s); ``max_steps_in_episode``: the longest episode possible."""
        params = EnvParams()
        longest = 3 * self.rules.num_categories + params.max_illegal_actions - 1
        return params.replace(max_steps_in_episode=longest)

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key: jax.Array, state: EnvState, action: Any, params: EnvParams | None = None):
        """Gymnax's step (auto-reset included); ``info["action_mask"]`` is the returned state's mask."""
        obs, state, reward, terminated, truncated, info = super().step(key, state, action, params)
        return obs, state, reward, terminated, truncated, {**info, "action_mask": self.action_mask(state)}

    def step_env(self, key: jax.Array, state: EnvState, action: Any, params: EnvParams):
        """One action of the player: a keep, a pick, or an ignored illegal action."""
        action = jnp.asarray(action, dtype=jnp.int32)
        legal = self.game.legal_action_mask(state.game)[jnp.clip(action, 0, self.game.num_actions - 1)]
        legal = legal & (action >= 0) & (action < self.game.num_actions)
        game, points = self.game.step(state.game, action, key)
        reward = jnp.where(legal, points.astype(jnp.float32), jnp.float32(params.illegal_action_penalty))
        state = EnvState(time=state.time + 1, game=game, illegal_actions=state.illegal_actions + ~legal)
        info = {"illegal_action": ~legal, "total": game.total[0]}
        return self.get_obs(state), state, reward, self.is_terminated(state, params), info

    def reset_env(self, key: jax.Array, params: EnvParams):
        """A new game: the first roll drawn from ``key``."""
        state = EnvState(time=jnp.int32(0), game=self.game.init(key), illegal_actions=jnp.int32(0))
        return self.get_obs(state), state

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key: jax.Array | None = None) -> jax.Array:
        """``Yacht-v0``'s flat observation of the state."""
        return self.game.observe(state.game)

    def action_mask(self, state: EnvState) -> jax.Array:
        """The legal actions, bool ``(num_actions,)`` (all True once the game is finished)."""
        return self.game.legal_action_mask(state.game)

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        """The last pick is made."""
        return state.game.terminated

    def is_truncated(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Too many illegal actions (``params.max_illegal_actions``)."""
        return state.illegal_actions >= params.max_illegal_actions

    @property
    def name(self) -> str:
        """The environment's name."""
        return "Yacht-gymnax-v0"

    @property
    def num_actions(self) -> int:
        """Size of the action space."""
        return self.game.num_actions

    def action_space(self, params: EnvParams | None = None) -> spaces.Discrete:
        """``Discrete(num_actions)``."""
        return spaces.Discrete(self.game.num_actions)

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        """``Box(0, 1, (observation_size,), float32)``."""
        return spaces.Box(0.0, 1.0, (self.game.observation_size,), jnp.float32)


class FiveValueStep:
    """A gymnax env whose ``step`` returns gymnax 0.0.x's five values, ``(obs, state, reward, done, info)``, for code
    written for that API (PureJaxRL, rejax): ``done`` is ``terminated | truncated`` (``info["terminated"]`` and
    ``info["truncated"]`` tell which). Everything else (``reset``, the spaces, ``default_params``,
    ``action_mask``, ...) is the wrapped env's.

    Example:
        >>> import jax
        >>> from yacht_env.jax import FiveValueStep, YachtGymnax
        >>> env = FiveValueStep(YachtGymnax("standard"))
        >>> obs, state = env.reset(jax.random.key(0))
        >>> obs, state, reward, done, info = env.step(jax.random.key(1), state, 0)  # a keep: re-roll all five
        >>> bool(done), float(reward), bool(info["truncated"])
        (False, 0.0, False)
    """

    def __init__(self, env: environment.Environment) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not set yet (a copy being made): never look it up on itself
            raise AttributeError(name)
        return getattr(self.env, name)

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key: jax.Array, state: Any, action: Any, params: Any = None):
        """The wrapped env's step (auto-reset included), ``terminated`` and ``truncated`` joined into ``done``."""
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, params)
        return obs, state, reward, jnp.logical_or(terminated, truncated), info

    @partial(jax.jit, static_argnames=("self",))
    def reset(self, key: jax.Array, params: Any = None):
        """The wrapped env's reset."""
        return self.env.reset(key, params)


def five_value_id(preset: str) -> str:
    """The gymnax id of a preset's :class:`FiveValueStep`: its Gymnasium id with ``FiveValue`` before the version
    (``standard``: ``YachtFiveValue-v0``; ``yahtzee``: ``YahtzeeFiveValue-v0``).

    Raises:
        ValueError: ``preset`` is not a name of :data:`yacht_env.rules.PRESETS`.
    """
    name, version = env_id(preset).rsplit("-", 1)
    return f"{name}FiveValue-{version}"


def _five_value_factory(preset: str, **kwargs: Any) -> FiveValueStep:
    """What ``gymnax.make(five_value_id(preset), **kwargs)`` builds: a ``rules`` in ``kwargs`` wins."""
    return FiveValueStep(YachtGymnax(**{"rules": preset, **kwargs}))


def register_gymnax() -> None:
    """Registers both gymnax ids of every preset (:func:`yacht_env.env_id` and :func:`five_value_id`); an id already in
    gymnax's registry is left as it is.
    """
    for preset in R.PRESETS:
        for name, factory in (
            (env_id(preset), functools.partial(YachtGymnax, rules=preset)),
            (five_value_id(preset), functools.partial(_five_value_factory, preset)),
        ):
            if name not in gymnax.registered_envs:
                gymnax.register(name, factory)


register_gymnax()
