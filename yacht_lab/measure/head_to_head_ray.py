"""The head to head's tables as Ray tasks, for leagues that outgrow one machine (``evaluate.py --players P
--address``).

Each table of the head to head (every ``P`` of the agents: :func:`~yacht_lab.measure.head_to_head.lineups`; at two
players one pair) is one Ray task: it
builds its agents from their specs and plays every deal with :func:`~yacht_lab.measure.head_to_head.head_to_head`
(``keep_deals=True``); :func:`~yacht_lab.measure.head_to_head.merge_lineups` puts the tables together. A deal's dice do
not depend on where it is played, so the result is the local run's, JSON and ratings byte for byte, for agents
without their own randomness. The ``random`` agent draws from a generator of its own in each task (seeded alike)
instead of one generator across its tables in turn, so its games differ from a local run's, as they do with
another ``--batch-size``.

Ray is joined as the sweeps join it (:func:`yacht_lab.ray_cluster.check_ray_address`: ``auto`` or ``HOST:PORT``, checked
before Ray starts). Every machine needs the project installed (``pip install -e '.[sweep]'``) and the model file of
a ``ppo:PATH`` agent at the same absolute path (a relative path is made absolute here; a shipped model's name is
sent as it is).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence

from yacht_env import rules as R
from yacht_lab.measure.evaluation import DEFAULT_BATCH_SIZE
from yacht_lab.measure.head_to_head import HeadToHead, head_to_head, lineups, merge_lineups


def worker_spec(spec: str) -> str:
    """The spec a worker builds the agent from: a ``ppo:`` file's path made absolute, any other spec as it is."""
    from yacht_agents import parse_spec
    from yacht_agents.ppo import shipped_models

    kind, argument = parse_spec(spec)
    if kind == "ppo" and argument not in shipped_models():
        return f"ppo:{os.path.abspath(argument)}"
    return spec


def play_table(
    specs: Sequence[str],
    names: Sequence[str],
    players: int,
    games: int,
    seed: int,
    rules: str | R.Rules,
    batch_size: int,
    calibration: bool,
) -> HeadToHead:
    """One table of the head to head (the Ray task): its agents built from ``specs`` (named ``names``), every deal
    played, each deal's sums kept.
    """
    from yacht_agents import make_agent

    agents = []
    for spec, name in zip(specs, names, strict=True):
        agent = make_agent(spec, rules=rules, seed=seed)
        agent.name = name
        agents.append(agent)
    return head_to_head(agents, players, games, seed, rules, batch_size, calibration=calibration, keep_deals=True)


def head_to_head_on_ray(
    specs: Sequence[str],
    players: int,
    games: int,
    seed: int = 0,
    rules: str | R.Rules = "standard",
    batch_size: int = DEFAULT_BATCH_SIZE,
    calibration: bool = True,
    address: str | None = None,
) -> HeadToHead:
    """:func:`~yacht_lab.measure.head_to_head.head_to_head` of the agents ``specs`` name, each table a Ray task.

    Args:
        specs: Agent specs (:func:`yacht_agents.make_agent`), distinct; each agent is named by its spec.
        players: Players at a table, as :func:`~yacht_lab.measure.head_to_head.head_to_head` takes them.
        games: Deals, likewise.
        seed: The deals' seed, likewise.
        rules: The rules, likewise.
        batch_size: Games stepped together, likewise.
        calibration: Record the win model's calibration, likewise.
        address: Join the Ray cluster there (``auto`` or ``HOST:PORT``) and leave it at the end; ``None``: the Ray
            this process has started (``ray.init``), left running.

    Raises:
        ValueError: a bad address, no Ray started (without ``address``), Ray failing to start, or what
            :func:`~yacht_lab.measure.head_to_head.head_to_head` refuses (from the first task that refuses it).
    """
    from yacht_lab.ray_cluster import check_ray_address, restore_signals

    if address is not None:
        check_ray_address(address)  # before Ray is imported: a wrong address is said in seconds
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    specs = list(specs)
    if len(set(specs)) != len(specs):
        raise ValueError(f"agent names must be distinct, got {specs}")
    tables = lineups(len(specs), players)
    if not tables:  # said here, before the cluster is asked for anything
        raise ValueError(f"a {players}-player head to head needs at least {players} agents, got {len(specs)}")
    sent = [worker_spec(spec) for spec in specs]
    if address is None and not ray.is_initialized():
        raise ValueError("no Ray to run on: give the address of a Ray cluster, or start one first (ray.init)")
    # Ray installs SIGINT/SIGTERM handlers and leaves them after shutdown: they are put back, as the sweeps do.
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if address is not None:
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except Exception as error:  # Ray's start-up failures (connection, timeouts, its own errors): one line each
            restore_signals(handlers)
            message = " ".join(str(error).split()) or type(error).__name__
            raise ValueError(f"cannot start Ray at {address}: {message}") from None
    start = time.perf_counter()
    try:
        task = ray.remote(num_cpus=1)(play_table)
        pending = [
            task.remote(
                [sent[k] for k in lineup],
                [specs[k] for k in lineup],
                players,
                games,
                seed,
                rules,
                batch_size,
                calibration,
            )
            for lineup in tables
        ]
        try:
            parts = ray.get(pending)
        except ray.exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None)
            if isinstance(cause, ValueError):
                raise ValueError(str(cause)) from None
            raise
    finally:
        if address is not None:
            ray.shutdown()
            restore_signals(handlers)
    result = merge_lineups(parts, specs)
    result.seconds = time.perf_counter() - start
    return result
