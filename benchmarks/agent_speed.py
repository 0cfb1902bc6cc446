"""Benchmark the baseline agents: games per second batched (the evaluation's vector-env path) against one
game at a time on ``YachtEnv``.

Usage:
    python benchmarks/agent_speed.py [--agents random greedy optimal] [--batched-games 10000] [--single-games 200]
    python benchmarks/agent_speed.py --agents ppo:standard search:standard optimal --batched-games 2000

The batched path's decisions per second (keeps and picks) are printed beside its games per second.

Both paths do the same work per decision: the agent acts, the solver values the state (for regret) and the
env steps. The batched path is :func:`yacht_lab.measure.evaluation.play_games` (what ``evaluate.py`` runs); the single
path plays ``YachtEnv`` on the same dice (``game_streams(seed, [g])``), one ``act`` call per decision, and
for the deterministic agents checks that its scores equal the batched path's game by game.

The agents' speeds depend on their threads: the search agent's network and the solver are numpy (BLAS threads),
the PPO model is torch, and its ``act`` runs on one torch thread unless told otherwise. The benchmark prints the
threads it ran under (each BLAS and OpenMP library's, through threadpoolctl where it is installed: ``pip install -r
benchmarks/requirements.txt``; else the environment variables that set them) and torch's. ``--threads N`` runs every
agent on N: the BLAS and OpenMP variables set before numpy loads (and threadpoolctl's limit where installed), torch's
threads, and the PPO agent's ``act``. Without it, each library keeps its default (BLAS and torch: a thread a core).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from yacht_agents.base import Agent
    from yacht_env.solver import Solution

#: The variables the BLAS and OpenMP libraries read when they load: numpy's OpenBLAS (or MKL, BLIS, Accelerate)
#: and torch's OpenMP.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def limit_threads(threads: int) -> object | None:
    """Every BLAS and OpenMP library and torch on ``threads``: called before numpy is imported. Returns
    threadpoolctl's limiter (kept alive by the caller), or ``None`` where threadpoolctl is not installed."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(threads)
    if importlib.util.find_spec("threadpoolctl") is None:
        return None
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads)


def threads_report(ppo_threads: int | None) -> str:
    """The threads this process runs on: each BLAS and OpenMP library's, torch's, the PPO agent's ``act``, the cores."""
    torch = None
    if importlib.util.find_spec("torch") is not None:
        import torch  # loaded first: its OpenMP is then among the libraries threadpoolctl reports
    if importlib.util.find_spec("threadpoolctl") is not None:
        from threadpoolctl import threadpool_info

        pools = ", ".join(f"{pool['internal_api']} {pool['num_threads']}" for pool in threadpool_info())
        report = f"BLAS/OpenMP (threadpoolctl) {pools or 'none loaded'}"
    else:
        variables = [f"{name}={os.environ[name]}" for name in THREAD_VARIABLES if name in os.environ]
        report = "BLAS/OpenMP (threadpoolctl not installed) " + (
            ", ".join(variables) or "by default (no thread variable set: a thread a core)"
        )
    if torch is not None:
        report += f"; torch {torch.get_num_threads()}, the PPO agent's act {ppo_threads or 1}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"threads: {report}; {cores} cores"


def play_one_by_one(agent: Agent, games: int, seed: int, solution: Solution) -> tuple[np.ndarray, float]:
    """Scores of games ``0..games-1`` played one at a time on ``YachtEnv``, and the seconds it took."""
    import numpy as np

    from yacht_env import YachtEnv
    from yacht_env.vector import game_streams

    env = YachtEnv(rules=solution.rules)
    streams = game_streams(seed, range(games))
    scores = np.zeros(games, dtype=np.int64)
    start = time.perf_counter()
    for g in range(games):
        obs, info = env.reset(options={"dice_stream": streams[g]})
        regret, done = 0.0, False
        while not done:
            action = agent.act(obs, env.action_masks())
            roll_dice, rolls_left = info["dice"], info["rolls_left"]
            names = solution.rules.categories  # the sheet: -1 in each open box
            open_categories = [name for name, points in zip(names, info["scores"], strict=True) if points < 0]
            q = solution.action_values(roll_dice, rolls_left, open_categories)
            regret += q.max() - q[action]
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        scores[g] = info["total"]
    return scores, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", nargs="+", default=["random", "greedy", "optimal"], help="agent specs")
    parser.add_argument("--batched-games", type=int, default=10_000, help="games on the batched path")
    parser.add_argument("--single-games", type=int, default=200, help="games played one at a time")
    parser.add_argument("--rules", default="standard", help="rules preset")
    parser.add_argument("--seed", type=int, default=0, help="seed of the dice")
    parser.add_argument(
        "--threads", type=int, default=None, help="run every agent on N threads (BLAS, OpenMP, torch, PPO's act)"
    )
    args = parser.parse_args()
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    _limits = limit_threads(args.threads) if args.threads else None  # before numpy loads; kept for the run

    import numpy as np

    from yacht_agents import make_agent
    from yacht_env.solver import solve
    from yacht_lab.measure.evaluation import play_games

    def agent(spec: str) -> Agent:
        built = make_agent(spec, args.rules, seed=args.seed)
        if args.threads and hasattr(built, "torch_threads"):  # the PPO agent's act
            built.torch_threads = args.threads
        return built

    solution = solve(args.rules)
    print(f"$ python benchmarks/agent_speed.py {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"rules {args.rules}; batched: {args.batched_games:,} games in one vector env; "
        f"single: {args.single_games:,} games on YachtEnv; both value every decision with the solver"
    )
    print(threads_report(args.threads))
    width = max(10, *(len(spec) + 2 for spec in args.agents))
    header = (
        f"{'agent':<{width}}{'batched games/s':>18}{'decisions/s':>14}{'single games/s':>17}{'speed-up':>11}"
        f"{'mean score':>13}"
    )
    print(header)
    print("-" * len(header))
    rates = {}
    for spec in args.agents:
        batched = play_games(agent(spec), args.batched_games, args.seed, solution)
        single_scores, single_s = play_one_by_one(agent(spec), args.single_games, args.seed, solution)
        if spec != "random" and not np.array_equal(single_scores, batched.scores[: args.single_games]):
            print(f"{spec}: the single env and the vector env scored the same games differently", file=sys.stderr)
            return 1
        single_rate = args.single_games / single_s
        decisions = batched.decisions.sum() / batched.seconds
        rates[spec] = (batched.games_per_second, single_rate)
        print(
            f"{spec:<{width}}{batched.games_per_second:>18,.0f}{decisions:>14,.0f}{single_rate:>17,.0f}"
            f"{batched.games_per_second / single_rate:>10.0f}x{batched.scores.mean():>13.2f}"
        )
    first, (first_batched, first_single) = next(iter(rates.items()))
    for spec, (batched_rate, single_rate) in list(rates.items())[1:]:
        batched_ratio, single_ratio = batched_rate / first_batched, single_rate / first_single
        print(f"{spec} / {first}: {batched_ratio:.2f}x batched, {single_ratio:.2f}x one game at a time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
