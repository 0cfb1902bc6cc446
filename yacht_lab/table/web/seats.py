"""Which seats the browser table offers and takes: the agents this install can play (a kind whose extra is missing
sits nowhere; ``duel`` only where its two-player solution is built), the shipped models (found in the package's
``models/``, so a model added there is offered with no change here), what a network agent may cost per decision
(:data:`MAX_AGENT_PARAMETERS`), and the names a seat may be given (ones that show something). Each check answers in
words without a path: the server's folders are not a visitor's business.
"""

from __future__ import annotations

import importlib.util
import unicodedata
from pathlib import Path
from typing import NamedTuple

from yacht_agents import AGENT_SPECS, FILELESS_KINDS, make_agent, parse_spec, unlabelled
from yacht_env import rules as R

#: What a kind of agent needs that an install may lack: the modules its extra brings, and the extra.
KIND_NEEDS = {"ppo": (("torch", "sb3_contrib"), "train"), "jax": (("jax",), "jax")}
#: The most parameters a network at the table may have (a ``--agent`` model, a shipped search model): its cost per
#: decision grows with them. The shipped search model has 69,633 and plays a solo game in 0.05 s at the table; a 3 x
#: 2048 one, 8.4 million, takes 10 times as long for every visitor who seats it (docs/web.md).
MAX_AGENT_PARAMETERS = 1_000_000


class ShippedModel(NamedTuple):
    """A shipped search model: its file, the rules it plays, its table (``None``: solo, any table), its size."""

    path: Path
    rules: str
    players: int | None
    parameters: int


def shipped_search_models() -> dict[str, ShippedModel]:
    """The search models that come with the package, by name (``models/search_<name>.npz`` and its ``.json``: the
    package data installed, a source checkout's ``models/``), each read once (again if its files change) through the
    search agent's own loader; one that cannot be read is left out.
    """
    from yacht_agents.archive import SHIPPED

    for folder in SHIPPED:
        found = {}
        for path in sorted(folder.glob("search_*.npz")):
            name = path.name[len("search_") : -len(".npz")]
            model = _shipped_model(path) if name.isascii() and name.replace("_", "").isalnum() else None
            if model is not None:
                found[name] = model
        if found:
            return found
    return {}


#: The shipped models read, by path: ``(the files' sizes and times, the model or None)``.
_SHIPPED_READ: dict[Path, tuple[tuple, ShippedModel | None]] = {}


def _shipped_model(path: Path) -> ShippedModel | None:
    from yacht_agents.search import load_value

    try:
        stamp = tuple((s.st_mtime_ns, s.st_size) for s in (path.stat(), path.with_suffix(".json").stat()))
    except OSError:
        return None
    read = _SHIPPED_READ.get(path)
    if read is not None and read[0] == stamp:
        return read[1]
    try:
        network = load_value(path)
    except ValueError:  # any file the loader refuses
        model = None
    else:
        spec = network.spec
        size = sum(int(array.size) for array in network.arrays().values())
        model = ShippedModel(path, spec.rules, spec.players if spec.players > 1 else None, size)
    _SHIPPED_READ[path] = (stamp, model)
    return model


def shipped_seats() -> dict[str, list[str]]:
    """The shipped models a visitor may seat by name, by kind: ``{"ppo": [...], "search": [...]}`` (the search
    models within :data:`MAX_AGENT_PARAMETERS`).
    """
    from yacht_agents.ppo import shipped_models

    search = shipped_search_models()
    return {
        "ppo": sorted(shipped_models()),
        "search": sorted(name for name, model in search.items() if model.parameters <= MAX_AGENT_PARAMETERS),
    }


def model_tables() -> dict[str, dict]:
    """The rules and table of each shipped model the page offers whose own they are (the search models: ``players``
    ``None`` for a solo one, which sits at any table), so that the page offers it only there.
    """
    search = shipped_search_models()
    return {
        f"search:{name}": {"rules": search[name].rules, "players": search[name].players}
        for name in shipped_seats()["search"]
    }


def network_parameters(agent) -> int | None:
    """How many parameters ``agent``'s network has (a search, JAX or PPO agent), or ``None`` (no network)."""
    network = getattr(agent, "network", None)
    if network is not None and hasattr(network, "arrays"):  # search: its weights as it saves them
        return sum(int(array.size) for array in network.arrays().values())
    model = getattr(agent, "model", None)
    if model is not None and hasattr(model, "policy"):  # PPO: a torch module
        return sum(int(p.numel()) for p in model.policy.parameters())
    params = getattr(agent, "params", None)
    if params is not None:  # JAX: nested dicts and lists of arrays
        leaves, count = [params], 0
        while leaves:
            leaf = leaves.pop()
            if isinstance(leaf, dict):
                leaves.extend(leaf.values())
            elif isinstance(leaf, list | tuple):
                leaves.extend(leaf)
            else:
                count += int(getattr(leaf, "size", 0))
        return count
    return None


def _named_rules(kind: str, argument: str) -> str | None:
    """The preset a model's file names (read without building the agent), or ``None`` (none named, or unreadable:
    building it says why).
    """
    try:
        if kind == "search":
            from yacht_agents.search import load_value

            return load_value(argument).spec.rules
        if kind == "jax":
            from yacht_agents.jax_policy import load_params

            return load_params(argument)[1].rules
        if kind == "ppo":
            from yacht_agents.ppo import read_model, resolve_model

            return read_model(resolve_model(argument)).odds.get("rules")
    except ValueError:
        return None
    return None


def load_server_agent(spec: str, max_parameters: int = MAX_AGENT_PARAMETERS):
    """The agent of a server's ``--agent`` spec, loaded before the server answers anyone: a model at the rules it
    plays (the preset its file names, else each in turn), within ``max_parameters``; ``None`` for a kind that reads
    no file.

    Raises:
        ValueError: a spec this install cannot seat, a model that cannot be read (the error of its load at the
            first preset: a file that cannot be read fails alike at each), or a network over ``max_parameters``.
    """
    kind, argument = parse_spec(spec)
    reason = seat_unavailable(spec)
    if reason is not None:
        raise ValueError(reason)
    if kind in FILELESS_KINDS:
        return None
    own = _named_rules(kind, argument)
    first = None
    for rules in ([own] if own else []) + [name for name in R.PRESETS if name != own]:
        try:
            agent = make_agent(spec, rules)
            break
        except ValueError as error:
            first = first or error
    else:
        raise first
    parameters = network_parameters(agent)
    if parameters is not None and parameters > max_parameters:
        raise ValueError(
            f"its network has {parameters:,} parameters, over the table's budget of {max_parameters:,} (each "
            "decision would cost every visitor who seats it that much more; --max-agent-params raises the budget)"
        )
    return agent


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
    """The seats the page offers: ``human``, the fileless agents, the shipped models (:func:`shipped_seats`) and the
    server's ``--agent``, each only where this install can play it (:func:`seat_unavailable`).
    """
    specs = ["optimal", "greedy", "random", "win", "duel", "duel:optimal"]
    specs += [f"{kind}:{name}" for kind, names in shipped_seats().items() for name in names]
    specs += [spec for spec in allowed_agents if spec not in specs]
    offered = ["human"]
    for spec in specs:
        try:
            if seat_unavailable(spec) is None:
                offered.append(spec)
        except ValueError:  # not a spec: the server's agents are checked when it starts
            continue
    return offered


def spec_refusal(spec: str, allowed_agents: tuple[str, ...] = (), labels: bool = True) -> str | None:
    """Why a visitor may not seat ``spec``, or ``None``: every kind that reads a file (all but
    :data:`yacht_agents.FILELESS_KINDS`, so a kind added later is refused until it is listed there) sits only as
    the server allowed it (``allowed_agents``, with any ``#LABEL``), or as a shipped model (:func:`shipped_seats`);
    where ``labels``, a ``#`` followed by what is not a label, after a spec that sits, is refused as a label.
    """
    if len(spec) > 300:
        return "an agent spec is at most 300 characters"
    base, hash_sign, label = spec.rpartition("#")
    if labels and hash_sign and base and unlabelled(spec) == spec and spec not in allowed_agents:
        if spec_refusal(base, allowed_agents, labels=False) is None:
            return f"agent {shown(spec)}: a seat's label (after #) is 1 to 32 letters, digits, _ or -: {shown(label)}"
    try:
        kind, argument = parse_spec(spec)
    except ValueError:
        return f"unknown agent {shown(spec)}; expected human or one of {', '.join(AGENT_SPECS)}"
    if kind in FILELESS_KINDS or spec in allowed_agents or unlabelled(spec) in allowed_agents:
        return None
    shipped = shipped_seats().get(kind)
    if shipped is None:
        return (
            f"agent {shown(spec)} reads a file: the table seats it only if the server was started with it "
            f"(yacht-web --agent {kind}:PATH)"
        )
    if argument in shipped:
        return None
    model = shipped_search_models().get(argument) if kind == "search" else None
    if model is not None:  # shipped, but over the budget
        return (
            f"agent {shown(spec)}: its network has {model.parameters:,} parameters, over this table's budget of "
            f"{MAX_AGENT_PARAMETERS:,} (the server seats it only if started with it: yacht-web --agent)"
        )
    names = ", ".join(f"{kind}:{name}" for name in shipped)
    return (
        f"agent {shown(spec)}: the table seats the shipped models ({names}) and those the server was started with "
        "(yacht-web --agent SPEC)"
    )


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
