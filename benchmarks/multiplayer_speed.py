"""Speed of multiplayer Yacht, side by side: OpenSpiel's ``yacht`` stepped from Python vs our PettingZoo AEC env,
and ``evaluate.py``'s head to head at 2 and 3 players.

Usage:
    python benchmarks/multiplayer_speed.py [--seconds 2] [--rounds 3] [--players 2] [--h2h-deals 500]
        [--h2h-agents random greedy optimal] [--json PATH]

Every engine plays whole games with uniformly random legal actions (``random.choice`` over the legal actions),
starting a new game as one ends; a step is one player decision, and the time counted is wall time for
everything, including drawing actions, resolving chance and starting new games:

* ``openspiel``: ``pyspiel.load_game("yacht", {"players": P})``; a step is ``legal_actions()`` + a choice +
  ``apply_action``; each chance node in between is resolved by sampling ``chance_outcomes()`` (a uniform choice
  of outcome, the outcomes are equally likely) and ``apply_action`` (not counted as a step, but timed).
  OpenSpiel's decisions are not ours: its rolling phase offers 32 actions (31 re-rolls and "keep all"), and a
  pick before the third roll takes two decisions ("keep all", then the category).
* ``aec env() loop``: the env as a user drives it: ``yacht_env.multiplayer.env(num_players=P)`` (with its
  wrappers), ``for agent in env.agent_iter()``: ``env.last()``, ``None`` if the agent is done or else a choice
  from ``observation["action_mask"]``, ``env.step(action)``; ``env.reset()`` when the loop ends. A step is one
  decision; the agents' ``None`` steps at the end of a game and the resets are timed, not counted.
* ``aec``: ``yacht_env.multiplayer.raw_env(num_players=P)``; a step is ``env.last()`` (the observation, with
  its action mask) + a choice from the mask + ``env.step``, the PettingZoo loop an agent runs.
* ``aec step only``: the same env without ``last()``: the legal actions come straight from the table's mask
  (``env._table.mask``, a private attribute), so the step's own cost shows without building observations.

Each engine runs ``--rounds`` slices of ``--seconds``, interleaved with the others, and the median slice is
reported, so a burst of load on a shared machine hits every engine alike. The ratios matter more than the
absolute figures.

The head to head (``--h2h-deals`` deals, 0 to skip): ``yacht_lab.measure.head_to_head.head_to_head``, what
``evaluate.py --players P --agents ...`` runs (its calibration included), for the same agents at 2 players (every
pair: a round robin) and at 3 (the three at one table; ``--h2h-agents`` takes exactly three), ``--rounds`` times
each, interleaved; the games/s are the head to head's own (``evaluate.py``'s figure), the median kept.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import random
import statistics
import sys
import time

import numpy as np

from yacht_env.util import atomic_write
from yacht_lab.scripts.cli import OneLineParser, output_file

clock = time.perf_counter


def timed(budget_s: float, play) -> tuple[int, float]:
    """Calls ``play()`` (a batch of moves; it returns the decisions it made) until ``budget_s`` seconds have
    passed; returns (decisions, seconds)."""
    steps, start = 0, clock()
    deadline = start + budget_s
    while True:
        steps += play()
        if clock() >= deadline:
            return steps, clock() - start


class OpenSpielRunner:
    """OpenSpiel's yacht from Python, chance resolved by sampling ``chance_outcomes()``."""

    name = "openspiel"

    def __init__(self, players: int, seed: int) -> None:
        import pyspiel

        self._game = pyspiel.load_game("yacht", {"players": players})
        self._rng = random.Random(seed)
        self._state = self._game.new_initial_state()

    def run(self, budget_s: float) -> tuple[int, float]:
        """Plays for about ``budget_s`` seconds; returns (player decisions, seconds)."""
        return timed(budget_s, self._play)

    def _play(self) -> int:
        choice, state, steps = self._rng.choice, self._state, 0
        for _ in range(256):
            if state.is_terminal():
                state = self._game.new_initial_state()
            elif state.is_chance_node():
                state.apply_action(choice(state.chance_outcomes())[0])
            else:
                state.apply_action(choice(state.legal_actions()))
                steps += 1
        self._state = state
        return steps


class AECRunner:
    """Our AEC env in PettingZoo's agent loop: ``last()``, an action from the mask, ``step``."""

    name = "aec (last + step)"

    def __init__(self, players: int, seed: int) -> None:
        from yacht_env.multiplayer import raw_env

        self._env = raw_env(num_players=players)
        self._env.reset(seed=seed)
        self._rng = random.Random(seed)

    def run(self, budget_s: float) -> tuple[int, float]:
        """Plays for about ``budget_s`` seconds; returns (decisions, seconds)."""
        return timed(budget_s, self._play)

    def _play(self) -> int:
        env, choice, flatnonzero, steps = self._env, self._rng.choice, np.flatnonzero, 0
        for _ in range(256):
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.reset()
                continue
            env.step(choice(flatnonzero(observation["action_mask"]).tolist()))
            steps += 1
        return steps


class AECUserRunner(AECRunner):
    """Our AEC env as a user drives it: ``env()``, ``agent_iter``, ``last()`` + ``step``, ``reset`` between games."""

    name = "aec env() loop"

    def __init__(self, players: int, seed: int) -> None:
        from yacht_env.multiplayer import env

        self._env = env(num_players=players)
        self._env.reset(seed=seed)
        self._rng = random.Random(seed)

    def _play(self) -> int:
        """One whole game, from the loop's first agent to the reset after it."""
        env, choice, flatnonzero, steps = self._env, self._rng.choice, np.flatnonzero, 0
        for _agent in env.agent_iter():
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                action = None
            else:
                action = choice(flatnonzero(observation["action_mask"]).tolist())
                steps += 1
            env.step(action)
        env.reset()
        return steps


class AECStepRunner(AECRunner):
    """Our AEC env's ``step`` alone: the legal actions read from the table, no observation built."""

    name = "aec (step only)"

    def _play(self) -> int:
        env, choice, flatnonzero, steps = self._env, self._rng.choice, np.flatnonzero, 0
        for _ in range(256):
            if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
                env.reset()
                continue
            env.step(choice(flatnonzero(env._table.mask).tolist()))
            steps += 1
        return steps


def measure(players: int, seconds: float, rounds: int, seed: int) -> dict[str, float]:
    """Median steps per second of each engine over ``rounds`` interleaved slices of ``seconds``."""
    runners = [
        OpenSpielRunner(players, seed),
        AECUserRunner(players, seed),
        AECRunner(players, seed),
        AECStepRunner(players, seed),
    ]
    for runner in runners:  # warm-up: imports, caches, first games
        runner.run(min(0.2, seconds))
    rates: dict[str, list[float]] = {runner.name: [] for runner in runners}
    for _ in range(rounds):
        for runner in runners:
            steps, elapsed = runner.run(seconds)
            rates[runner.name].append(steps / elapsed)
    return {name: statistics.median(values) for name, values in rates.items()}


def measure_head_to_head(agents: list[str], deals: int, rounds: int, seed: int) -> dict[str, float]:
    """Median games/s of the head to head of ``agents`` at 2 and at 3 players over ``rounds`` interleaved runs."""
    from yacht_agents import make_agent
    from yacht_lab.measure.head_to_head import head_to_head

    tables = {players: [make_agent(spec, seed=seed) for spec in agents] for players in (2, 3)}
    for players, table in tables.items():  # warm-up: the solver's tables and score distributions, loaded once
        head_to_head(table, players, 20, seed=seed)
    rates: dict[int, list[float]] = {players: [] for players in tables}
    for _ in range(rounds):
        for players, table in tables.items():
            rates[players].append(head_to_head(table, players, deals, seed=seed).games_per_second)
    return {str(players): statistics.median(values) for players, values in rates.items()}


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def main(argv: list[str] | None = None) -> dict:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one slice per engine (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved slices per engine; the median is kept")
    parser.add_argument("--players", type=int, nargs="+", default=[2], help="player counts (default: 2)")
    parser.add_argument("--h2h-deals", type=int, default=500, help="deals of each head to head (default 500; 0: skip)")
    parser.add_argument(
        "--h2h-agents",
        nargs=3,
        default=["random", "greedy", "optimal"],
        metavar="AGENT",
        help="the three agents of both head to heads (default: random greedy optimal)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--json", type=output_file, metavar="PATH", help="also write the figures as JSON (checked before the timing)"
    )
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1 or args.h2h_deals < 0:
        parser.error("--seconds must be positive, --rounds at least 1 and --h2h-deals at least 0")

    results = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {name: _version(name) for name in ("open_spiel", "pettingzoo", "numpy")},
        "seconds": args.seconds,
        "rounds": args.rounds,
        "players": {},
    }
    openspiel = OpenSpielRunner.name
    print(f"steps/s, median of {args.rounds} interleaved slices of {args.seconds:g} s (random legal actions)")
    print(f"{'players':>7}  {'engine':<20} {'steps/s':>10}  {'x openspiel':>11}")
    for players in args.players:
        rates = measure(players, args.seconds, args.rounds, args.seed)
        ratios = {name: rate / rates[openspiel] for name, rate in rates.items()}
        results["players"][str(players)] = {"steps_per_s": rates, "ratio_to_openspiel": ratios}
        for name, rate in rates.items():
            print(f"{players:>7}  {name:<20} {rate:>10,.0f}  {ratios[name]:>10.2f}x")
    if args.h2h_deals:
        rates = measure_head_to_head(args.h2h_agents, args.h2h_deals, args.rounds, args.seed)
        ratio = rates["3"] / rates["2"]
        results["head_to_head"] = {
            "agents": args.h2h_agents,
            "deals": args.h2h_deals,
            "games_per_s": rates,
            "ratio_3_to_2": ratio,
        }
        agents = " ".join(args.h2h_agents)
        print(
            f"\nhead to head (evaluate.py --agents {agents} --games {args.h2h_deals}), games/s, median of {args.rounds}"
        )
        print(f"{'players':>7}  {'games/s':>10}  {'x 2 players':>11}")
        for players, rate in rates.items():
            print(f"{players:>7}  {rate:>10,.0f}  {rate / rates['2']:>10.2f}x")
    if args.json:
        atomic_write(args.json, json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
