"""What a search network seated at the browser table costs its server per game, by the network's size: the shipped
``search:standard`` (2 x 256, 69,633 parameters) beside networks of random weights of 2 x 512 to 3 x 2048, each
playing solo games one at a time, as the server plays a visitor's game (its agents' decisions, one position each).

    python benchmarks/web_agent_cost.py [--games 10] [--arch 512,512 1024,1024 2048,2048,2048]

Prints, per network, its parameters and the median of a game's time over ``--games`` seeded games, in CPU seconds
(this process's: on a busy machine, less noisy than the wall clock) and on the wall clock; the coach of the table is
built before timing, and the networks take turns, so that load on the machine falls on each alike. What
``yacht-web --max-agent-params`` bounds (:data:`yacht_lab.table.web.seats.MAX_AGENT_PARAMETERS`).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from yacht_agents.search import ValueNetwork, ValueSpec, layer_shapes, save_value
from yacht_env import rules as R
from yacht_lab.table.web.games import AGENTS, new_game
from yacht_lab.table.web.seats import network_parameters


def random_network(arch: tuple[int, ...]) -> ValueNetwork:
    """A solo Yacht value network of hidden widths ``arch`` and small random weights."""
    spec = ValueSpec("standard", 1, arch)
    rng = np.random.default_rng(0)
    layers = [
        (rng.normal(0, a**-0.5, (a, b)).astype(np.float32), np.zeros(b, np.float32)) for a, b in layer_shapes(spec)
    ]
    return ValueNetwork(spec, layers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--arch", nargs="+", default=["512,512", "1024,1024", "2048,2048,2048"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        specs = ["search:standard"]
        for text in args.arch:
            arch = tuple(int(w) for w in text.split(","))
            path = save_value(Path(folder) / f"net_{'x'.join(map(str, arch))}.npz", random_network(arch))
            specs.append(f"search:{path}")
        times = {spec: [] for spec in specs}
        cpu = {spec: [] for spec in specs}
        for spec in specs:  # the coach, and each agent, built before timing
            new_game({"seats": [spec], "seed": 0}, tuple(specs))
        for seed in range(1, args.games + 1):
            for spec in specs:
                start, start_cpu = time.perf_counter(), time.process_time()
                new_game({"seats": [spec], "seed": seed}, tuple(specs))
                times[spec].append(time.perf_counter() - start)
                cpu[spec].append(time.process_time() - start_cpu)
        for spec in specs:
            agent = AGENTS.get(spec, R.get_rules("standard"), 1)  # the one the games shared
            name = spec if spec == "search:standard" else Path(spec.split(":", 1)[1]).stem
            size = network_parameters(agent)
            print(
                f"{name:24s} {size:>10,d} parameters  a game: {np.median(cpu[spec]):6.3f} CPU s, "
                f"{np.median(times[spec]):6.3f} s"
            )


if __name__ == "__main__":
    main()
