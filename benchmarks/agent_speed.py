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
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from yacht_agents import make_agent
from yacht_agents.base import Agent
from yacht_env import YachtEnv
from yacht_env.solver import Solution, solve
from yacht_env.vector import game_streams
from yacht_lab.measure.evaluation import play_games


def play_one_by_one(agent: Agent, games: int, seed: int, solution: Solution) -> tuple[np.ndarray, float]:
    """Scores of games ``0..games-1`` played one at a time on ``YachtEnv``, and the seconds it took."""
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
    args = parser.parse_args()

    solution = solve(args.rules)
    print(f"$ python benchmarks/agent_speed.py {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"rules {args.rules}; batched: {args.batched_games:,} games in one vector env; "
        f"single: {args.single_games:,} games on YachtEnv; both value every decision with the solver"
    )
    width = max(10, *(len(spec) + 2 for spec in args.agents))
    header = (
        f"{'agent':<{width}}{'batched games/s':>18}{'decisions/s':>14}{'single games/s':>17}{'speed-up':>11}"
        f"{'mean score':>13}"
    )
    print(header)
    print("-" * len(header))
    for spec in args.agents:
        batched = play_games(make_agent(spec, args.rules, seed=args.seed), args.batched_games, args.seed, solution)
        single_scores, single_s = play_one_by_one(
            make_agent(spec, args.rules, seed=args.seed), args.single_games, args.seed, solution
        )
        if spec != "random" and not np.array_equal(single_scores, batched.scores[: args.single_games]):
            print(f"{spec}: the single env and the vector env scored the same games differently", file=sys.stderr)
            return 1
        single_rate = args.single_games / single_s
        decisions = batched.decisions.sum() / batched.seconds
        print(
            f"{spec:<{width}}{batched.games_per_second:>18,.0f}{decisions:>14,.0f}{single_rate:>17,.0f}"
            f"{batched.games_per_second / single_rate:>10.0f}x{batched.scores.mean():>13.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
