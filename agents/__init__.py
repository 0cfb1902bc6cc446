"""Baseline agents for Yacht, one interface: ``agent.act(observations, action_masks) -> actions``.

``make_agent(spec)`` builds one from a short spec:

* ``"random"``: uniform over the legal actions (seeded),
* ``"greedy"``: a fixed rule of thumb (:mod:`yacht_agents.greedy`),
* ``"optimal"``: the exact solver's best action (:mod:`yacht_env.solver`),
* ``"win"`` / ``"win:P"``: plays to finish first at a table of 2 / ``P`` players (:mod:`yacht_agents.win`),
* ``"ppo:PATH"``: a saved sb3-contrib ``MaskablePPO`` model (needs the ``train`` extra).

:mod:`yacht_lab.evaluation` plays agents against each other on common dice and scores their regret.
"""

from __future__ import annotations

from yacht_agents.base import Agent
from yacht_env import rules as R

AGENT_SPECS = ("random", "greedy", "optimal", "win", "win:P", "ppo:PATH")


def make_agent(
    spec: str, rules: str | R.Rules = "standard", seed: int | None = None, players: int | None = None
) -> Agent:
    """Builds the agent named by ``spec`` for ``rules``; its ``name`` is ``spec``.

    Args:
        spec: ``"random"``, ``"greedy"``, ``"optimal"``, ``"win"``, ``"win:P"`` or ``"ppo:PATH"``.
        rules: A preset name or :class:`~yacht_env.rules.Rules`.
        seed: Seed of the ``random`` agent's generator (the other agents are deterministic).
        players: The table size of ``"win"`` (default 2; ``"win:P"`` names it in the spec, which is how
            ``evaluate.py --players P --agents win:P ...`` seats it: the table view is chosen before any
            observation, so the agent cannot infer it).

    Raises:
        ValueError: unknown spec or rules, or a PPO model that is missing, unreadable or of other spaces.
    """
    rules = R.get_rules(rules)
    if spec == "random":
        from yacht_agents.random import RandomAgent

        return RandomAgent(rules, seed=seed)
    if spec == "greedy":
        from yacht_agents.greedy import GreedyAgent

        return GreedyAgent(rules)
    if spec == "optimal":
        from yacht_agents.optimal import OptimalAgent

        return OptimalAgent(rules)
    if isinstance(spec, str) and (spec == "win" or spec.startswith("win:")):
        from yacht_agents.win import WinAgent

        size = spec[len("win:") :] if spec != "win" else None
        if size is not None and not size.isdigit():
            raise ValueError(f"unknown agent {spec!r}; the win agent is 'win' or 'win:P' with P in 2..10 players")
        table = int(size) if size is not None else (2 if players is None else players)
        if size is not None and players is not None and players != table:
            raise ValueError(f"agent {spec!r} plays at a table of {table}, but players={players!r} was given")
        return WinAgent(rules, players=table, name=spec)
    if isinstance(spec, str) and spec.startswith("ppo:") and len(spec) > len("ppo:"):
        from yacht_agents.ppo import PPOAgent

        return PPOAgent(spec[len("ppo:") :], rules, name=spec)
    raise ValueError(f"unknown agent {spec!r}; expected one of {', '.join(AGENT_SPECS)}")


__all__ = ["AGENT_SPECS", "Agent", "make_agent"]
