"""Which seats the browser table offers and takes: the agents this install can play (a kind whose extra is missing
sits nowhere; ``duel`` only where its two-player solution is built), and the names a seat may be given (ones that
show something). Each check answers in words without a path: the server's folders are not a visitor's business.
"""

from __future__ import annotations

import importlib.util
import unicodedata

from yacht_agents import parse_spec
from yacht_env import rules as R

#: What a kind of agent needs that an install may lack: the modules its extra brings, and the extra.
KIND_NEEDS = {"ppo": (("torch", "sb3_contrib"), "train"), "jax": (("jax",), "jax")}


def seat_unavailable(spec: str, rules: R.Rules | None = None, players: int = 2) -> str | None:
    """Why this install cannot seat ``spec`` (at ``rules``; ``None``: at any preset), in words without a path; ``None``
    where it can. A kind whose extra is missing (:data:`KIND_NEEDS`) sits nowhere; ``duel`` sits where the two-player
    solution is built. Anything else (a table the agent does not play, a kind added later) is for the agent to refuse.
    """
    kind, argument = parse_spec(spec)
    modules, extra = KIND_NEEDS.get(kind, ((), None))
    if any(importlib.util.find_spec(module) is None for module in modules):
        return f"agent {shown(spec)}: this server cannot seat {kind} agents (it has no {extra} extra installed)"
    if kind == "duel" and players == 2:
        from yacht_env import duel

        presets = [R.get_rules(name) for name in R.PRESETS] if rules is None else [rules]
        presets = [r for r in presets if duel.unsupported(r) is None]
        if rules is not None and not presets:
            return None  # rules the exact solve does not cover: the agent says why
        if not any(duel_built(r, argument) for r in presets):
            of = f" of {rules.name!r}" if rules is not None else ""
            return (
                f"agent {shown(spec)}: this server has no two-player solution{of} built "
                "(its operator builds one with python -m yacht_env.duel build)"
            )
    return None


def duel_built(rules: R.Rules, opponent: str | None) -> bool:
    """Whether a finished two-player solution of ``rules`` against ``opponent`` lies in the solver's cache (without
    opening it: its manifest says it is complete).
    """
    from yacht_env import duel

    try:
        equilibrium = duel.solution_folder(rules)  # needs no solve; a best response's key does
        stem = equilibrium.name.rsplit("-equilibrium-", 1)[0]
        kind = "equilibrium" if opponent is None else "best_response"
        for folder in equilibrium.parent.glob(f"{stem}-{kind}-*"):
            manifest = duel.read_manifest(folder)
            if (
                manifest is not None
                and manifest.get("complete")
                and str(manifest.get("key")).startswith(folder.name.rsplit("-", 1)[1])
            ):
                return True
    except (OSError, ValueError):  # an unreadable cache folder or manifest: nothing built there
        return False
    return False


def offered_agents(allowed_agents: tuple[str, ...] = ()) -> list[str]:
    """The seats the page offers: ``human``, the fileless agents, the shipped models and the server's ``--agent``,
    each only where this install can play it (:func:`seat_unavailable`).
    """
    from yacht_agents.ppo import shipped_models

    specs = ["optimal", "greedy", "random", "win", "duel", "duel:optimal"]
    specs += [f"ppo:{name}" for name in sorted(shipped_models())] + list(allowed_agents)
    offered = ["human"]
    for spec in specs:
        try:
            if seat_unavailable(spec) is None:
                offered.append(spec)
        except ValueError:  # not a spec: the server's agents are checked when it starts
            continue
    return offered


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a seat (it shows nothing: only spaces or invisible characters; or it holds a control
    character), or ``None``.
    """
    if not any(unicodedata.category(c)[0] in "LNPS" for c in name):  # letters, digits, punctuation, symbols
        return f"{shown(name)} shows nothing (only spaces or invisible characters)"
    if any(unicodedata.category(c) == "Cc" for c in name):
        return f"{shown(name)} holds a control character"
    return None


def visible(name: str) -> str:
    """``name`` as it looks: without its invisible characters (format and zero-width ones, spaces)."""
    return "".join(c for c in unicodedata.normalize("NFKC", name) if unicodedata.category(c)[0] in "LNPSM")


def shown(value) -> str:
    """``value`` as a message quotes it: its ``repr``, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
