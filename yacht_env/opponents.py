"""The opponents of the versus envs: agents from spec strings (through the installed entry point), checked
against the rules, and their batched decisions at tables.

A spec string (``"random"``, ``"greedy"``, ``"optimal"``, ``"ppo:PATH"``) becomes an agent through the function
installed packages declare in the ``yacht_rl.agents`` entry points (:func:`agent_resolver`: yacht-rl's is
:func:`yacht_agents.make_agent`), so ``yacht_env`` never imports the players. An agent built for other rules is
refused (:func:`check_rules`). :func:`act_at_tables` takes one decision of the player on turn at many tables, one
batched ``act`` call per agent: the versus envs (:mod:`yacht_env.versus`) and the head-to-head benchmark
(:mod:`yacht_lab.measure.head_to_head`) seat their agents through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState

#: The entry-point group through which spec strings become agents: the env layer never imports the players.
#: yacht-rl declares ``make_agent = "yacht_agents:make_agent"`` in it; another package can declare its own.
AGENT_RESOLVER_GROUP = "yacht_rl.agents"


def agent_resolver(name: str = "make_agent") -> Callable[..., Any]:
    """The function that builds an agent from a spec string, ``resolver(spec, rules, seed=...)``, found by its
    ``name`` in the :data:`AGENT_RESOLVER_GROUP` entry points of the installed packages.

    Raises:
        ValueError: no installed package declares it (agent objects can always be passed instead).
    """
    from importlib.metadata import entry_points

    found = entry_points(group=AGENT_RESOLVER_GROUP, name=name)
    if not found:
        raise ValueError(
            f"agent specs need a resolver: no installed package declares {name!r} in the {AGENT_RESOLVER_GROUP!r} "
            "entry points (install yacht-rl, or pass agent objects)"
        )
    return next(iter(found)).load()


def resolve_opponents(
    opponents: Sequence[Any], rules: R.Rules, resolver: Callable[..., Any] | None = None
) -> list[Any]:
    """Agents for ``opponents``: objects are kept as they are, spec strings built by ``resolver(spec, rules,
    seed=i)`` (default: :func:`agent_resolver`, which is :func:`yacht_agents.make_agent`).

    Raises:
        ValueError: no opponent, more than 9, an unknown spec, an object without ``act``, or an agent whose
            ``rules`` attribute (where it has one) names other rules than ``rules``.
    """
    if isinstance(opponents, str) or not isinstance(opponents, Sequence) or not 1 <= len(opponents) <= 9:
        raise ValueError(f"opponents must be a list of 1..9 agents or agent specs, got {opponents!r}")
    return [resolve_agent(opponent, rules, resolver, i, "opponent") for i, opponent in enumerate(opponents)]


def resolve_agent(agent: Any, rules: R.Rules, resolver: Callable[..., Any] | None, i: int, who: str) -> Any:
    """One agent of ``agent`` (an object, or a spec built by ``resolver(spec, rules, seed=i)``), checked."""
    if isinstance(agent, str):
        resolver = resolver or agent_resolver()
        agent = resolver(agent, rules, seed=i)
    if not callable(getattr(agent, "act", None)):
        raise ValueError(f"{who} {i} must be an agent with act(observations, action_masks), got {agent!r}")
    check_rules(agent, rules, f"{who} {i}")
    return agent


def check_rules(agent: Any, rules: R.Rules, who: str = "agent") -> None:
    """Refuses an agent built for other rules: one whose ``rules`` attribute (a preset name or
    :class:`~yacht_env.rules.Rules`; an agent without one is taken as it is) is not ``rules``.

    Raises:
        ValueError: naming the agent, its rules and ``rules``.
    """
    theirs = getattr(agent, "rules", None)
    if theirs is None:
        return
    try:
        same = R.get_rules(theirs) == rules
    except (TypeError, ValueError):
        same = False
    if not same:
        name = getattr(theirs, "name", theirs)
        raise ValueError(
            f"{who} ({getattr(agent, 'name', agent)!r}) plays the {name!r} rules, not {rules.name!r} (the env's)"
        )


def act_at_tables(
    agents: Sequence[Any],
    who: np.ndarray,
    table: TableState,
    tables: np.ndarray,
    solo: ObservationEncoder,
    view: MultiplayerEncoder,
) -> np.ndarray:
    """One decision of the player on turn at each of ``tables``, played by ``agents[who[j]]``: one batched
    ``act`` call per agent, on the observation it asks for (its own game as ``Yacht-v0`` shows it, or the
    table from its seat when its ``table_players`` is set). The versus envs and the head-to-head benchmark
    seat agents through this. Each agent gets its own copy of its masks (and new observation arrays): what it
    writes into them changes nothing, and its actions are checked against the table's own masks.

    Args:
        agents: The agents.
        who: ``(len(tables),)``: the index in ``agents`` of the player on turn at each table.
        table: The batched :class:`~yacht_env.game.TableState`.
        tables: Indices of the tables that take a decision.
        solo: The encoder of an agent's own game, as ``Yacht-v0`` shows it.
        view: The encoder of the table from a seat.

    Returns:
        ``(len(tables),)`` intp actions, each legal for its player.

    Raises:
        ValueError: an agent returned something other than one int action per table, or an illegal one
            (naming the agent, the action and the table).
    """
    games, num_actions = table.players, table.rules.num_actions
    rows = table.on_turn[tables]
    actions = np.zeros(len(tables), dtype=np.intp)
    views = None
    for i, agent in enumerate(agents):
        at = np.flatnonzero(who == i)
        if at.size == 0:
            continue
        r = rows[at]
        masks = games.mask[r]
        if getattr(agent, "table_players", None) is None:
            observations = solo.flat(
                games.roll[r], games.rolls_left[r], games.open_mask[r], games.upper[r], games.armed[r]
            )
        else:
            views = view.observe(table, table.current) if views is None else views
            observations = views[tables[at]]
        name = getattr(agent, "name", agent)
        # The agent gets its own copy: one writing into it (``action_masks[:] = True``) cannot make an illegal
        # action pass the check below, which reads ``masks``. The observations are new arrays each call.
        chosen = np.asarray(agent.act(observations, masks.copy())).reshape(-1)
        if chosen.shape != (at.size,) or not np.issubdtype(chosen.dtype, np.integer):
            raise ValueError(f"agent {name!r} returned {chosen.dtype} {chosen.shape}, not {at.size} int actions")
        legal = (chosen >= 0) & (chosen < num_actions)
        legal &= masks[np.arange(at.size), np.where(legal, chosen, 0)]
        if not legal.all():
            bad = int(np.flatnonzero(~legal)[0])
            raise ValueError(f"agent {name!r} chose illegal action {int(chosen[bad])} at table {int(tables[at[bad]])}")
        actions[at] = chosen
    return actions
