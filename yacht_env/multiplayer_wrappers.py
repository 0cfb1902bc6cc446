"""The wrappers ``yacht_env.multiplayer.env()`` puts around the raw table: PettingZoo's ``OrderEnforcingWrapper`` over
its ``AssertOutOfBoundsWrapper``, as PettingZoo's own envs have them.

PettingZoo's wrappers read the env's attributes through ``__getattr__``, one failed lookup per wrapper: five reads in
``last()``, more in each step's check and ``agent_iter`` turn, which cost the PettingZoo loop more than the game itself.
The subclasses here read the raw env directly in those places: the same checks, errors and values
(``tests/test_multiplayer.py`` compares them with PettingZoo's own, call for call). They copy what PettingZoo's
wrappers keep in private fields (``_has_reset``, ``_has_updated``, the ``agent_iter`` iterator's count), so
:func:`wrap` uses them only where :func:`fast_wrappers_fit` finds PettingZoo's wrappers doing what they copy and the
subclasses themselves answering as PettingZoo's do, and PettingZoo's own wrappers otherwise: a feature check of the
installed PettingZoo, never its version string.
"""

from __future__ import annotations

import functools
import types

from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

try:  # agent_iter's classes, where PettingZoo 1.24.3 to 1.27 keep them
    from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator
except ImportError:  # elsewhere: fast_wrappers_fit() is False, and wrap() uses PettingZoo's own wrappers
    AECOrderEnforcingIterable = AECOrderEnforcingIterator = object


def wrap(aec: AECEnv) -> AECEnv:
    """``aec`` (the raw table) in PettingZoo's ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(aec))``: the fast
    subclasses below where :func:`fast_wrappers_fit`, else PettingZoo's own classes.
    """
    if fast_wrappers_fit():
        return _OrderEnforcing(_AssertOutOfBounds(aec))
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(aec))


@functools.cache
def fast_wrappers_fit() -> bool:
    """Whether the fast subclasses work on the installed PettingZoo, checked once by driving PettingZoo's own
    wrappers and the subclasses over a game of one agent and one step, the same calls on each: PettingZoo's must
    keep the private flags where the subclasses read them (set and cleared by ``reset``, ``step`` and ``agent_iter``'s
    iterator, whose classes and count they reuse), and the subclasses must answer every call as PettingZoo's do (a
    PettingZoo whose ``reset`` assigns the attributes the subclasses forward, as 1.24.0 to 1.24.2 do, fails here).
    """
    try:
        stock = _drive(lambda probe: wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(probe)))
        fast = _drive(lambda probe: _OrderEnforcing(_AssertOutOfBounds(probe)))
    except Exception:  # whatever PettingZoo changed, its own wrappers still work
        return False
    return stock == fast == _EXPECTED and callable(EnvLogger.error_agent_iter_before_reset)


#: What :func:`_drive` records over PettingZoo's wrappers as the fast subclasses copy them.
_EXPECTED = (
    (False, False, True),
    (True, True, ["agent"], "agent", {"agent": 0.0}, {"agent": False}, {"agent": False}, (0, 0.0, False, False, {})),
    (True, 7, 7, "agent", (True, False), 6),
    ((True, True), {"agent": True}),
    "action is not in action space",
)


def _drive(wrap_probe) -> tuple:
    """The same calls on ``wrap_probe(probe)`` (a stack of an order-enforcing wrapper over an out-of-bounds one over a
    :class:`_Probe`): what each returned, and the private flags after it.
    """
    probe = _Probe()
    env = wrap_probe(probe)

    def flags() -> tuple:
        return vars(env).get("_has_reset"), vars(env).get("_has_updated")

    record = [(*flags(), env.env.env is probe)]
    env.reset()
    record.append(
        (*flags(), env.agents, env.agent_selection, env.rewards, env.terminations, env.truncations, env.last())
    )
    turns = env.agent_iter(7)
    turn = iter(turns)
    fits = isinstance(turns, AECOrderEnforcingIterable) and isinstance(turn, AECOrderEnforcingIterator)
    record.append(
        (
            fits and turns.env is env and turn.env is env,
            turns.max_iter,
            turn.iters_til_term,
            next(turn),
            flags(),
            turn.iters_til_term,
        )
    )
    env.step(0)
    record.append((flags(), env.terminations))
    try:
        env.step(2)  # out of the space
        record.append(None)
    except AssertionError as error:
        record.append(str(error))
    return tuple(record)


class _Probe(AECEnv):
    """A game of one agent and one step (actions 0 and 1), which :func:`fast_wrappers_fit` wraps."""

    metadata = {"name": "probe_v0", "render_modes": []}
    rules = types.SimpleNamespace(num_actions=2)  # what the fast subclasses read of the raw table

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["agent"]
        self._space = spaces.Discrete(2)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._space

    def action_space(self, agent: str) -> spaces.Space:
        return self._space

    def observe(self, agent: str) -> int:
        return 0

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.agent_selection = "agent"
        self.rewards, self._cumulative_rewards = {"agent": 0.0}, {"agent": 0.0}
        self.terminations, self.truncations, self.infos = {"agent": False}, {"agent": False}, {"agent": {}}

    def step(self, action: int) -> None:
        self.terminations = {"agent": True}


def _forwarded(name: str) -> property:
    """``name`` read straight from the raw env once reset (before: PettingZoo's ``OrderEnforcingWrapper`` error)."""

    def read(self):
        return getattr(self._raw, name) if self._has_reset else self.__getattr__(name)

    return property(read)


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper``, reading the per-step attributes, ``last()`` and ``observe()``
    straight from the raw env.
    """

    def __init__(self, aec: AECEnv) -> None:
        super().__init__(aec)
        self._raw = aec.unwrapped
        self._checks_bounds = type(aec) is _AssertOutOfBounds and aec.env is self._raw  # wrap()'s stack
        self._num_actions = self._raw.rules.num_actions

    agents = _forwarded("agents")
    agent_selection = _forwarded("agent_selection")
    rewards = _forwarded("rewards")
    terminations = _forwarded("terminations")
    truncations = _forwarded("truncations")
    infos = _forwarded("infos")

    def step(self, action) -> None:
        raw = self._raw
        if self._has_reset and raw.agents:  # what OrderEnforcingWrapper.step does then, without its hops
            self._has_updated = True
            if self._checks_bounds and type(action) is int and 0 <= action < self._num_actions:
                raw.step(action)  # an int in range passes _AssertOutOfBounds's check: straight to the raw env
            else:
                self.env.step(action)
        else:
            super().step(action)

    def agent_iter(self, max_iter: int = 2**63) -> AECOrderEnforcingIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _TurnsIterable(self, max_iter)

    def observe(self, agent: str):
        return self._raw.observe(agent) if self._has_reset else super().observe(agent)

    def last(self, observe: bool = True):
        # The raw env's last(): what AECEnv.last reads through the wrappers, none of which changes it. Once every agent
        # has left, the raw env's own ValueError (PettingZoo's wrapper would read the departed agent's reward: a bare
        # KeyError).
        return self._raw.last(observe) if self._has_reset else super().last(observe)

    def __str__(self) -> str:
        return str(self.env)  # PettingZoo's name for its own class (yacht_v0), not _OrderEnforcing<yacht_v0>


class _TurnsIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> _Turns:
        return _Turns(self.env, self.max_iter)


class _Turns(AECOrderEnforcingIterator):
    """PettingZoo's ``AECOrderEnforcingIterator`` (``agent_iter``'s), reading the agents straight from the raw env
    (``agent_iter`` is refused before the first reset, so they are there).
    """

    def __init__(self, env: _OrderEnforcing, max_iter: int) -> None:
        super().__init__(env, max_iter)
        self._raw = env._raw

    def __next__(self) -> str:
        raw = self._raw
        if not raw.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        env = self.env
        assert env._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        env._has_updated = False
        return raw.agent_selection


class _AssertOutOfBounds(wrappers.AssertOutOfBoundsWrapper):
    """PettingZoo's ``AssertOutOfBoundsWrapper``, its check read straight from the raw env (an int in range passes
    at once, one past int64 fails at once, as in gymnasium 1.4; anything else goes through the space's ``contains``).
    """

    def __init__(self, aec: AECEnv) -> None:
        super().__init__(aec)
        self._raw = aec.unwrapped
        self._num_actions = self._raw.rules.num_actions

    def step(self, action) -> None:
        aec = self._raw
        agent = aec.agent_selection
        assert (
            (type(action) is int and 0 <= action < self._num_actions)
            or (action is None and (aec.terminations[agent] or aec.truncations[agent]))
            # gymnasium before 1.4 casts a Python int to int64 first: one past that range raised OverflowError there
            or (not (type(action) is int and abs(action) >= 2**63) and aec.action_space(agent).contains(action))
        ), "action is not in action space"
        aec.step(action)
