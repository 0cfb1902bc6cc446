"""Speed of multiplayer Yacht, side by side: OpenSpiel's ``yacht`` stepped from Python vs our PettingZoo AEC env.

Usage:
    python benchmarks/multiplayer_speed.py [--seconds 2] [--rounds 3] [--players 2] [--json PATH]

Every engine plays whole games with uniformly random legal actions (``random.choice`` over the legal actions),
starting a new game as one ends; a step is one player decision, and the time counted is wall time for
everything, including drawing actions, resolving chance and starting new games:

* ``openspiel``: ``pyspiel.load_game("yacht", {"players": P})``; a step is ``legal_actions()`` + a choice +
  ``apply_action``; each chance node in between is resolved by sampling ``chance_outcomes()`` (a uniform choice
  of outcome, the outcomes are equally likely) and ``apply_action`` (not counted as a step, but timed).
  OpenSpiel's decisions are not ours: its rolling phase offers 32 actions (31 re-rolls and "keep all"), and a
  pick before the third roll takes two decisions ("keep all", then the category).
* ``aec``: ``yacht_env.multiplayer.raw_env(num_players=P)``; a step is ``env.last()`` (the observation, with
  its action mask) + a choice from the mask + ``env.step``, the PettingZoo loop an agent runs.
* ``aec step only``: the same env without ``last()``: the legal actions come straight from the table's mask
  (``env._table.mask``, a private attribute), so the step's own cost shows without building observations.

Each engine runs ``--rounds`` slices of ``--seconds``, interleaved with the others, and the median slice is
reported, so a burst of load on a shared machine hits every engine alike. The ratios matter more than the
absolute figures.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import platform
import random
import statistics
import sys
import time

import numpy as np

clock = time.perf_counter


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
        choice, state, steps = self._rng.choice, self._state, 0
        start = clock()
        deadline = start + budget_s
        while True:
            for _ in range(256):
                if state.is_terminal():
                    state = self._game.new_initial_state()
                elif state.is_chance_node():
                    state.apply_action(choice(state.chance_outcomes())[0])
                else:
                    state.apply_action(choice(state.legal_actions()))
                    steps += 1
            if clock() >= deadline:
                break
        self._state = state
        return steps, clock() - start


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
        env, choice, flatnonzero, steps = self._env, self._rng.choice, np.flatnonzero, 0
        start = clock()
        deadline = start + budget_s
        while True:
            for _ in range(256):
                observation, _, termination, truncation, _ = env.last()
                if termination or truncation:
                    env.reset()
                    continue
                env.step(choice(flatnonzero(observation["action_mask"]).tolist()))
                steps += 1
            if clock() >= deadline:
                break
        return steps, clock() - start


class AECStepRunner(AECRunner):
    """Our AEC env's ``step`` alone: the legal actions read from the table, no observation built."""

    name = "aec (step only)"

    def run(self, budget_s: float) -> tuple[int, float]:
        """Plays for about ``budget_s`` seconds; returns (decisions, seconds)."""
        env, choice, flatnonzero, steps = self._env, self._rng.choice, np.flatnonzero, 0
        start = clock()
        deadline = start + budget_s
        while True:
            for _ in range(256):
                if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
                    env.reset()
                    continue
                env.step(choice(flatnonzero(env._table.mask).tolist()))
                steps += 1
            if clock() >= deadline:
                break
        return steps, clock() - start


def measure(players: int, seconds: float, rounds: int, seed: int) -> dict[str, float]:
    """Median steps per second of each engine over ``rounds`` interleaved slices of ``seconds``."""
    runners = [OpenSpielRunner(players, seed), AECRunner(players, seed), AECStepRunner(players, seed)]
    for runner in runners:  # warm-up: imports, caches, first games
        runner.run(min(0.2, seconds))
    rates: dict[str, list[float]] = {runner.name: [] for runner in runners}
    for _ in range(rounds):
        for runner in runners:
            steps, elapsed = runner.run(seconds)
            rates[runner.name].append(steps / elapsed)
    return {name: statistics.median(values) for name, values in rates.items()}


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one slice per engine (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved slices per engine; the median is kept")
    parser.add_argument("--players", type=int, nargs="+", default=[2], help="player counts (default: 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1:
        parser.error("--seconds must be positive and --rounds at least 1")

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
    if args.json:
        with open(args.json, "w") as file:
            json.dump(results, file, indent=2)
    return results


if __name__ == "__main__":
    main()
