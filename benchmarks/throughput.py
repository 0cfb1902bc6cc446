"""Throughput of the Yacht envs, side by side in one run: steps per second with uniformly random legal actions.

Usage:
    python benchmarks/throughput.py [--seconds 2] [--sizes 1 64 1024 4096 65536] [--sync-sizes 64 1024]
                                    [--versus-sizes 4096] [--players 2] [--skip-sb3] [--json PATH]

What is measured (every engine plays whole games, starting new ones as they end):

* ``pyhtzee``: the reference engine (``pip install -r benchmarks/requirements.txt``); a step is
  ``get_possible_actions()`` + a uniform choice + ``take_action(a)``, its equivalent of our step returning a mask.
* ``YachtEnv``: the single env itself (no ``gymnasium.make`` wrappers), the action drawn from ``info["action_mask"]``.
* ``SyncVectorEnv``: Gymnasium's ``SyncVectorEnv`` over N plain ``YachtEnv``.
* ``YachtVectorEnv``: the native vector env (``next_step`` autoreset). A call steps N games and counts N steps,
  including the one step per finished game that starts its next game (as for ``SyncVectorEnv``).
* ``YachtVersus``: ``YachtVersusVectorEnv(N, opponents=["random"])``: N tables, the learner against one
  ``random`` opponent whose turns are played inside ``step``; a call counts N learner steps.
* multiplayer (``--players``): the PettingZoo AEC env against OpenSpiel's ``yacht`` stepped from Python, with
  the runners of ``benchmarks/multiplayer_speed.py`` (decisions/s; needs ``open_spiel`` and ``pettingzoo``).
* SB3 training (unless ``--skip-sb3``): ``MaskablePPO`` on ``YachtSB3VecEnv(32)`` vs a ``DummyVecEnv`` of 32
  ``Monitor(YachtEnv())``, same hyperparameters and steps.

Two columns per engine: **env** counts only the time inside the engine's step and reset calls (for pyhtzee also
``get_possible_actions``); **env+act** is wall time including drawing the random legal actions. Actions are
drawn cheaply: ``random.choice`` over the legal actions for one game, and for a batch
``argmax(uniform noise * mask)`` per row, which is exactly uniform over each row's legal actions. Each engine is
measured in ``--rounds`` slices interleaved with the others and the median slice is reported, so a burst of
load on a shared machine hits every engine alike. Ratios matter more than absolute numbers.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import random
import shlex
import statistics
import sys
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

from yacht_env import YachtEnv
from yacht_env import rules as R
from yacht_env.util import atomic_write
from yacht_env.vector import YachtVectorEnv
from yacht_env.versus import YachtVersusVectorEnv
from yacht_lab.scripts.cli import OneLineParser, output_file

clock = time.perf_counter
VERSUS = "YachtVersus (1 random opp)"


# --------------------------------------------------------------------------------------------------
# One runner per engine: run(budget_s) plays for about budget_s and returns (steps, env_seconds, wall_seconds)
# --------------------------------------------------------------------------------------------------
class PyhtzeeRunner:
    name, num_envs = "pyhtzee engine", 1

    def __init__(self, seed: int) -> None:
        from pyhtzee import Pyhtzee

        self._new_game = Pyhtzee
        self._seed = seed + 1  # Pyhtzee treats seed 0 as "no seed"
        self._chooser = random.Random(seed)
        self._game = Pyhtzee(seed=self._seed)

    def run(self, budget_s: float) -> tuple[int, float, float]:
        game, choose, steps, env_s = self._game, self._chooser.choice, 0, 0.0
        start = clock()
        end = start + budget_s
        while True:
            t0 = clock()
            actions = game.get_possible_actions()
            t1 = clock()
            action = choose(actions)
            t2 = clock()
            game.take_action(action)
            if game.is_finished():
                self._seed += 1
                game = self._new_game(seed=self._seed)
            t3 = clock()
            env_s += (t1 - t0) + (t3 - t2)
            steps += 1
            if t3 >= end:
                break
        self._game = game
        return steps, env_s, clock() - start


class SingleEnvRunner:
    name, num_envs = "YachtEnv (raw step)", 1

    def __init__(self, seed: int) -> None:
        self._env = YachtEnv()
        self._chooser = random.Random(seed)
        _, self._info = self._env.reset(seed=seed)

    def run(self, budget_s: float) -> tuple[int, float, float]:
        env, choose, info, steps, env_s = self._env, self._chooser.choice, self._info, 0, 0.0
        start = clock()
        end = start + budget_s
        while True:
            action = int(choose(info["action_mask"].nonzero()[0]))
            t0 = clock()
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                _, info = env.reset()
            t1 = clock()
            env_s += t1 - t0
            steps += 1
            if t1 >= end:
                break
        self._info = info
        return steps, env_s, clock() - start


class BatchRunner:
    """Any Gymnasium vector env whose info carries an (N, 44) ``"action_mask"``."""

    def __init__(self, name: str, env: gym.vector.VectorEnv, seed: int) -> None:
        self.name, self.num_envs = name, env.num_envs
        self._env = env
        self._rng = np.random.default_rng(seed)
        self._noise = np.empty((env.num_envs, R.NUM_ACTIONS), dtype=np.float32)
        _, self._info = env.reset(seed=seed)

    def run(self, budget_s: float) -> tuple[int, float, float]:
        env, rng, noise, info, steps, env_s = self._env, self._rng, self._noise, self._info, 0, 0.0
        start = clock()
        end = start + budget_s
        while True:
            # Uniform over each row's legal actions; a game waiting for its autoreset has no legal action,
            # gets action 0, and the env ignores it.
            rng.random(out=noise, dtype=np.float32)
            np.multiply(noise, info["action_mask"], out=noise)
            actions = noise.argmax(axis=1)
            t0 = clock()
            _, _, _, _, info = env.step(actions)
            t1 = clock()
            env_s += t1 - t0
            steps += self.num_envs
            if t1 >= end:
                break
        self._info = info
        return steps, env_s, clock() - start


# --------------------------------------------------------------------------------------------------
def measure(runners: list, seconds: float, rounds: int) -> list[dict]:
    """Runs every runner for ``seconds`` in ``rounds`` interleaved slices; the median slice's rates."""
    for runner in runners:
        runner.run(min(0.05, seconds / 10))  # warm-up: caches, first allocations
    slices: list[list[tuple[int, float, float]]] = [[] for _ in runners]
    for _ in range(rounds):
        for runner, out in zip(runners, slices, strict=True):
            out.append(runner.run(seconds / rounds))
    results = []
    for runner, out in zip(runners, slices, strict=True):
        results.append(
            {
                "name": runner.name,
                "num_envs": runner.num_envs,
                "steps": sum(steps for steps, _, _ in out),
                "env_steps_per_s": statistics.median(steps / env_s for steps, env_s, _ in out),
                "total_steps_per_s": statistics.median(steps / wall_s for steps, _, wall_s in out),
            }
        )
    return results


def sb3_training(num_envs: int, total_steps: int, seed: int) -> dict:
    """MaskablePPO training steps/s on the native adapter and on a DummyVecEnv of Monitor(YachtEnv())."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from yacht_env.sb3 import YachtSB3VecEnv

    hyperparameters = {"n_steps": 128, "batch_size": 1024, "n_epochs": 5, "seed": seed, "device": "cpu"}
    envs: dict[str, Callable[[], object]] = {
        f"YachtSB3VecEnv({num_envs})": lambda: YachtSB3VecEnv(num_envs),
        f"DummyVecEnv({num_envs} x Monitor(YachtEnv))": lambda: DummyVecEnv(
            [lambda: Monitor(YachtEnv()) for _ in range(num_envs)]
        ),
    }
    rates = {}
    for name, make in envs.items():
        model = MaskablePPO("MlpPolicy", make(), **hyperparameters)
        start = clock()
        model.learn(total_steps)
        rates[name] = model.num_timesteps / (clock() - start)
    native, dummy = rates.values()
    return {
        "hyperparameters": {**hyperparameters, "policy": "MlpPolicy", "total_steps": total_steps},
        "steps_per_s": rates,
        "ratio": native / dummy,
    }


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = {}
    for package in ("numpy", "gymnasium", "pyhtzee", "stable-baselines3", "sb3-contrib", "torch"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "python": platform.python_version(),
        "versions": versions,
    }


def print_table(results: list[dict], reference: dict[str, float | None]) -> None:
    def ratio(value: float, base: float | None) -> str:
        return f"{value / base:10.2f}x" if base else f"{'-':>11}"

    header = (
        f"{'engine':<26}{'N':>7}  {'env steps/s':>13}{'vs single':>11}{'vs pyhtzee':>11}"
        f"  {'env+act steps/s':>16}{'vs single':>11}{'vs pyhtzee':>11}"
    )
    print(header)
    print("-" * len(header))
    for row in results:
        env, total = row["env_steps_per_s"], row["total_steps_per_s"]
        print(
            f"{row['name']:<26}{row['num_envs']:>7}  {env:>13,.0f}{ratio(env, reference['single_env'])}"
            f"{ratio(env, reference['pyhtzee_env'])}  {total:>16,.0f}{ratio(total, reference['single_total'])}"
            f"{ratio(total, reference['pyhtzee_total'])}"
        )


def main() -> None:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per engine and size")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved slices per measurement (median kept)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 4096, 65536], help="YachtVectorEnv N")
    parser.add_argument("--sync-sizes", type=int, nargs="*", default=[64, 1024], help="SyncVectorEnv N")
    parser.add_argument(
        "--versus-sizes", type=int, nargs="*", default=[4096], help="YachtVersusVectorEnv N (learner steps)"
    )
    parser.add_argument(
        "--players", type=int, nargs="*", default=[2], help="multiplayer AEC env vs OpenSpiel at these player counts"
    )
    parser.add_argument("--skip-sb3", action="store_true", help="skip the MaskablePPO training comparison")
    parser.add_argument("--sb3-envs", type=int, default=32, help="parallel games for the SB3 comparison")
    parser.add_argument("--sb3-steps", type=int, default=16_384, help="training steps for each SB3 run")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads for the SB3 comparison")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--json", type=output_file, metavar="PATH", help="also write every figure to this JSON file (checked first)"
    )
    args = parser.parse_args()

    info = machine()
    command = shlex.join(["python", "benchmarks/throughput.py", *sys.argv[1:]])
    print("Yacht env throughput: steps/s with uniformly random legal actions")
    print(f"machine:   {info['platform']}, {info['cpu']}")
    print(
        f"           {info['cpu_count']} CPUs ({info['usable_cpus']} usable), Python {info['python']}, "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v)
    )
    print(f"reproduce: {command}")
    print()

    runners: list = []
    try:
        runners.append(PyhtzeeRunner(args.seed))
    except ImportError:
        print("pyhtzee: skipped, not installed (pip install -r benchmarks/requirements.txt)")
    runners.append(SingleEnvRunner(args.seed))
    for n in args.sync_sizes:
        runners.append(BatchRunner("SyncVectorEnv(YachtEnv)", gym.vector.SyncVectorEnv([YachtEnv] * n), args.seed))
    for n in args.sizes:
        runners.append(BatchRunner("YachtVectorEnv", YachtVectorEnv(n), args.seed))
    for n in args.versus_sizes:
        runners.append(BatchRunner(VERSUS, YachtVersusVectorEnv(n, opponents=["random"]), args.seed))
    results = measure(runners, args.seconds, args.rounds)

    pyhtzee = next((row for row in results if row["name"] == PyhtzeeRunner.name), None)
    single = next(row for row in results if row["name"] == SingleEnvRunner.name)
    reference = {
        "single_env": single["env_steps_per_s"],
        "single_total": single["total_steps_per_s"],
        "pyhtzee_env": pyhtzee["env_steps_per_s"] if pyhtzee else None,
        "pyhtzee_total": pyhtzee["total_steps_per_s"] if pyhtzee else None,
    }
    print(
        f"env = time inside step()/reset() only; env+act = wall time including drawing the actions; "
        f"median of {args.rounds} interleaved slices, {args.seconds:g} s per row"
    )
    print_table(results, reference)

    targets = {}
    if pyhtzee:
        print()
        single_ratio = single["env_steps_per_s"] / pyhtzee["env_steps_per_s"]
        targets["single_vs_pyhtzee"] = {"ratio": single_ratio, "target": 1.5, "met": single_ratio >= 1.5}
        print(
            f"target  YachtEnv step >= 1.5x pyhtzee:            {single_ratio:8.2f}x  "
            f"({'met' if single_ratio >= 1.5 else 'NOT met'}; env+act "
            f"{single['total_steps_per_s'] / pyhtzee['total_steps_per_s']:.2f}x)"
        )
        at_4096 = next((row for row in results if row["name"] == "YachtVectorEnv" and row["num_envs"] == 4096), None)
        if at_4096:
            vector_ratio = at_4096["env_steps_per_s"] / pyhtzee["env_steps_per_s"]
            rate = at_4096["env_steps_per_s"]
            targets["vector_4096_vs_pyhtzee"] = {"ratio": vector_ratio, "target": 50, "met": vector_ratio >= 50}
            targets["vector_4096_steps_per_s"] = {"value": rate, "goal": 10e6, "met": rate >= 10e6}
            print(
                f"target  YachtVectorEnv(4096) >= 50x pyhtzee:      {vector_ratio:8.1f}x  "
                f"({'met' if vector_ratio >= 50 else 'NOT met'}; env+act "
                f"{at_4096['total_steps_per_s'] / pyhtzee['total_steps_per_s']:.1f}x)"
            )
            print(
                f"goal    YachtVectorEnv(4096) >= 10 M steps/s:     {rate / 1e6:8.2f} M  "
                f"({'met' if rate >= 10e6 else 'NOT met'}; one process, numpy single-threaded)"
            )

    versus = next((row for row in results if row["name"] == VERSUS and row["num_envs"] == 4096), None)
    if versus:
        rate = versus["env_steps_per_s"]
        targets["versus_4096_learner_steps_per_s"] = {"value": rate, "target": 0.5e6, "met": rate >= 0.5e6}
        print(
            f"target  YachtVersus(4096, random opp) >= 0.5 M learner steps/s: {rate / 1e6:6.2f} M  "
            f"({'met' if rate >= 0.5e6 else 'NOT met'}; opponents' turns played inside step)"
        )

    multiplayer = {}
    if args.players:
        import multiplayer_speed  # beside this script: OpenSpiel's yacht and the AEC env, same random legal play

        print()
        print("multiplayer: decisions/s, the PettingZoo AEC env vs OpenSpiel's yacht from Python")
        for players in args.players:
            try:
                rates = multiplayer_speed.measure(players, args.seconds, args.rounds, args.seed)
            except ImportError as error:
                print(f"  skipped: {error} (pip install open_spiel pettingzoo)")
                break
            ratio = rates["aec env() loop"] / rates["openspiel"]  # the target: the env as a user drives it
            multiplayer[str(players)] = {"steps_per_s": rates, "aec_vs_openspiel": ratio}
            for name, value in rates.items():
                print(f"  {players} players  {name:<20}{value:>12,.0f}  {value / rates['openspiel']:7.2f}x")
            targets[f"aec_{players}p_vs_openspiel"] = {"ratio": ratio, "target": 20, "met": ratio >= 20}
            print(
                f"target  AEC env() loop at {players} players >= 20x OpenSpiel: {ratio:6.2f}x "
                f"({'met' if ratio >= 20 else 'NOT met'})"
            )

    sb3 = None
    if not args.skip_sb3:
        import torch

        torch.set_num_threads(args.torch_threads)
        print()
        print(
            f"SB3 MaskablePPO training, {args.sb3_steps:,} steps each, n_steps=128 batch_size=1024 n_epochs=5, "
            f"device=cpu, torch threads {args.torch_threads}"
        )
        sb3 = sb3_training(args.sb3_envs, args.sb3_steps, args.seed)
        for name, rate in sb3["steps_per_s"].items():
            print(f"  {name:<40}{rate:>12,.0f} steps/s")
        print(f"  {'ratio native / DummyVecEnv':<40}{sb3['ratio']:>11.2f}x")

    if args.json:
        atomic_write(
            args.json,
            json.dumps(
                {
                    "command": command,
                    "args": {**vars(args), "json": str(args.json)},
                    "machine": info,
                    "results": results,
                    "targets": targets,
                    "multiplayer": multiplayer,
                    "sb3": sb3,
                },
                indent=2,
            )
            + "\n",
        )
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
