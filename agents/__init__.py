"""The players of Yacht and its family, one interface: ``agent.act(observations, action_masks) -> actions``.

The repository keeps them in ``agents/``; they install as ``yacht_agents`` (a top-level ``agents`` would collide
with other packages, openai-agents among them). The experiment lab that seats them is :mod:`yacht_lab`.

``make_agent(spec)`` builds one from a short spec:

* ``"random"``: uniform over the legal actions (seeded),
* ``"greedy"``: a fixed rule of thumb (:mod:`yacht_agents.greedy`),
* ``"optimal"``: the exact solver's best action (:mod:`yacht_env.solver`),
* ``"win"`` / ``"win:P"``: plays to finish first at a table of 2 / ``P`` players (:mod:`yacht_agents.win`; Yacht's
  presets only: rules with bonuses are refused),
* ``"duel"`` / ``"duel:optimal"``: the exact two-player players, the equilibrium and the best response to the
  solver (:mod:`yacht_agents.duel`; two-player tables of Yacht's presets, once ``python -m yacht_env.duel build``
  has built the solution),
* ``"ppo:PATH"``: a saved sb3-contrib ``MaskablePPO`` model (needs the ``train`` extra); ``PATH`` may also name a
  shipped model, ``ppo:standard`` or ``ppo:classic`` (:func:`yacht_agents.ppo.resolve_model`),
* ``"search:PATH"``: a learned value of the turn's end played by the exact turn's expectimax
  (:mod:`yacht_agents.search`, trained by :mod:`yacht_lab.training.search`; plain numpy): its ``.npz``, its run
  folder, or a shipped model
  (``search:standard``). A solo network sits at any table; one trained at a table of ``P`` sees that table's view,
  at tables of ``P`` only.
* ``"jax:PATH"``: a policy trained by the JAX trainer (:mod:`yacht_agents.jax_policy`; needs the ``jax`` extra):
  its parameters' ``.npz`` file, or its run folder. A solo policy sits at any table; one trained at a table of
  ``P`` (its ``table_players``) sees that table's view, at tables of ``P`` only.

Any spec may end with ``#LABEL`` (letters, digits, ``_`` or ``-``, up to 32): the same agent under another name,
so that copies of one agent can sit at a table together (``evaluate.py --players 3 --agents ppo:standard optimal
optimal#2``).

Specs are parsed in one place, :func:`parse_spec`. The envs that seat opponents (``YachtVersus-v0``) take agent
objects, or resolve spec strings through :func:`make_agent`, which this package declares as the
``yacht_rl.agents`` entry point (the env layer never imports the players).
"""

from __future__ import annotations

import re

from yacht_agents.base import Agent
from yacht_env import rules as R

AGENT_SPECS = (
    "random",
    "greedy",
    "optimal",
    "win",
    "win:P",
    "duel",
    "duel:optimal",
    "ppo:PATH",
    "jax:PATH",
    "search:PATH",
)
#: The kinds of spec, as :func:`parse_spec` names them.
AGENT_KINDS = ("random", "greedy", "optimal", "win", "duel", "ppo", "jax", "search")
#: The kinds whose agent reads no file a spec names (``duel`` reads the solver's own cache). Every other kind,
#: present or future, reads one (``ppo:PATH``, ``jax:PATH``, ``search:PATH``): a server seats those only where its
#: operator allowed them (``yacht-web --agent``), never where a visitor names them.
FILELESS_KINDS = ("random", "greedy", "optimal", "win", "duel")


#: A copy's label at the end of a spec (``optimal#2``).
_LABEL = re.compile(r"#[A-Za-z0-9_-]{1,32}\Z")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """The one parser of agent specs: ``(kind, argument)``, e.g. ``("ppo", "models/x.zip")``, ``("win", "3")``,
    ``("greedy", None)``; a ``#LABEL`` at the end names a copy and changes nothing else (``"optimal#2"`` is
    ``("optimal", None)``). It checks the spec's form only (a ``ppo`` file is read by :func:`make_agent`).

    Raises:
        ValueError: not a spec of :data:`AGENT_SPECS`.
    """
    base = unlabelled(spec)
    if base is not spec:
        try:
            return _parse_unlabelled(base)
        except ValueError:
            raise ValueError(
                f"unknown agent {spec!r}; expected one of {', '.join(AGENT_SPECS)}, optionally followed by #LABEL"
            ) from None
    return _parse_unlabelled(spec)


def unlabelled(spec: str) -> str:
    """``spec`` without its ``#LABEL`` (``"optimal#2"`` -> ``"optimal"``); ``spec`` itself if it has none."""
    label = _LABEL.search(spec) if isinstance(spec, str) else None
    return spec[: label.start()] if label and label.start() > 0 else spec


def _parse_unlabelled(spec: str) -> tuple[str, str | None]:
    if spec in ("random", "greedy", "optimal", "win", "duel"):
        return spec, None
    if spec == "duel:optimal":
        return "duel", "optimal"
    if isinstance(spec, str) and spec.startswith("win:"):
        size = spec[len("win:") :]
        # ASCII digits only: isdigit alone accepts "²", which int() cannot read; and a few of them (int() refuses
        # 4,300), the table size is checked by the agent
        if not (size.isascii() and size.isdigit() and len(size) <= 6):
            raise ValueError(f"unknown agent {spec!r}; the win agent is 'win' or 'win:P' with P in 2..10 players")
        return "win", size
    if isinstance(spec, str) and spec.startswith("ppo:") and len(spec) > len("ppo:"):
        return "ppo", spec[len("ppo:") :]
    if isinstance(spec, str) and spec.startswith("jax:") and len(spec) > len("jax:"):
        return "jax", spec[len("jax:") :]
    if isinstance(spec, str) and spec.startswith("search:") and len(spec) > len("search:"):
        return "search", spec[len("search:") :]
    raise ValueError(f"unknown agent {spec!r}; expected one of {', '.join(AGENT_SPECS)}")


def make_agent(
    spec: str, rules: str | R.Rules | None = None, seed: int | None = None, players: int | None = None
) -> Agent:
    """Builds the agent named by ``spec`` for ``rules``; its ``name`` is ``spec`` (its ``#LABEL`` included).

    Args:
        spec: ``"random"``, ``"greedy"``, ``"optimal"``, ``"win"``, ``"win:P"``, ``"duel"``, ``"duel:optimal"``,
            ``"ppo:PATH"``, ``"jax:PATH"`` or ``"search:PATH"``.
        rules: A preset name or :class:`~yacht_env.rules.Rules`. ``None`` (the default): a model's own where its files
            name them (``search:PATH`` and ``jax:PATH`` always, ``ppo:PATH`` of the odds policy), else ``standard``.
            Rules given are the agent's: a model of other rules is refused.
        seed: Seed of the ``random`` agent's generator (the other agents are deterministic).
        players: The table the agent sits at: the size of ``"win"`` (default 2; ``"win:P"`` names it in the spec,
            which is how ``evaluate.py --players P --agents win:P ...`` seats it: the table view is chosen before any
            observation, so the agent cannot infer it); a ``"ppo:PATH"``, ``"jax:PATH"`` or ``"search:PATH"`` model
            trained at a table must have been trained at one of this size (a solo model sits at any table).

    Raises:
        ValueError: unknown spec or rules, a PPO model (or JAX policy, or search model) that is missing, unreadable or
            of other spaces or rules, the jax extra missing for a JAX policy, or an agent of another table size than
            ``players``.
    """
    rules = None if rules is None else R.get_rules(rules)
    kind, argument = parse_spec(spec)
    base = unlabelled(spec)
    if base is not spec:  # a copy: the agent of the spec before its label, named by the whole spec
        agent = make_agent(base, rules, seed, players)
        agent.name = spec
        return agent
    if kind in ("ppo", "jax", "search"):
        agent = _model_agent(kind, argument, rules, spec)
        # A solo model sits at any table (its own game's view); one trained at a table, at a table of its size only.
        if players is not None and agent.table_players not in (None, players):
            raise ValueError(f"{spec!r} plays at a table of {agent.table_players} players; this one has {players}")
        return agent
    rules = R.get_rules("standard") if rules is None else rules
    if kind == "random":
        from yacht_agents.random import RandomAgent

        return RandomAgent(rules, seed=seed)
    if kind == "greedy":
        from yacht_agents.greedy import GreedyAgent

        return GreedyAgent(rules)
    if kind == "optimal":
        from yacht_agents.optimal import OptimalAgent

        return OptimalAgent(rules)
    if kind == "win":
        from yacht_agents.win import WinAgent

        table = int(argument) if argument is not None else (2 if players is None else players)
        if argument is not None and players is not None and players != table:
            raise ValueError(f"{spec!r} plays at a table of {table} players; this one has {players}")
        return WinAgent(rules, players=table, name=spec)
    from yacht_agents.duel import DuelAgent  # the last kind: duel

    if players not in (None, 2):
        raise ValueError(f"agent {spec!r} plays at two-player tables only (the exact solve), not {players}")
    return DuelAgent(rules, argument, name=spec)


def _model_agent(kind: str, argument: str, rules: R.Rules | None, spec: str) -> Agent:
    """The agent of a spec that names a model file (``ppo``, ``jax``, ``search``), for ``rules`` (``None``: the
    model's own, where its files name them).
    """
    if kind == "jax":
        try:
            from yacht_agents.jax_policy import JaxAgent
        except ImportError as error:
            raise ValueError(f"agent {spec!r} needs the jax extra (pip install 'yacht-rl[jax]'): {error}") from None
        return JaxAgent(argument, rules, name=spec)
    if kind == "search":
        from yacht_agents.search import SearchAgent, load_value

        if rules is None:  # the rules its .json names
            network = load_value(argument)
            return SearchAgent(network, network.spec.rules, name=spec)
        return SearchAgent(argument, rules, name=spec)
    from yacht_agents.ppo import PPOAgent

    return PPOAgent(argument, rules, name=spec)


__all__ = ["AGENT_KINDS", "AGENT_SPECS", "FILELESS_KINDS", "Agent", "make_agent", "parse_spec", "unlabelled"]
