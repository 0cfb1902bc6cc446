"""The win agent against the score-optimal solver: one ``win:P`` agent and ``P - 1`` optimal agents at a table.

    python benchmarks/win_agent.py --players 2 3 5 --deals 50000 12000 4000
    python benchmarks/win_agent.py --rules yahtzee --players 2 --deals 5000
    python benchmarks/win_agent.py --players 2 2 2 2 2 2 --deals 20000 20000 20000 20000 20000 20000 \\
        --last-turns 1 2 3 4 6 12

Plays :func:`yacht_lab.measure.head_to_head.head_to_head` (common dice, dice and seat rotations: ``P * P`` games per
deal) and prints, per table size, the win agent's win share (ties split) with its 95% CI against the
``1 / P`` of a seat that plays like the others, the mean score it gives up against the optimal agents, and
the speed: games per second of the run, and per second of the process's CPU time (all its threads: the win agent
and the family's solver work on two; on a busy machine the second is the one that compares). With two players this
is ``python evaluate.py --players 2 --agents win optimal --games N``;
more players need several optimal agents with distinct names, which the library gives
(``OptimalAgent(name=...)``).

Over another policy: with ``--base SPEC`` (a solo agent, e.g. ``ppo:standard``) the win agent assumes that everyone
plays that agent's policy after each decision (``WinAgent(base=...)``: the policy read whole and evaluated exactly),
one step of policy iteration for the win from the agent's own play, the teacher of the distillation
(``configs/selfplay.yaml``):

    python benchmarks/win_agent.py --players 2 3 --deals 50000 20000 --base ppo:standard

Where the edge lies: with ``--last-turns`` (one ``K`` per table size), the win agent plays for the win only on
the decisions of its last ``K`` turns (at most ``K`` categories open in its own game) and takes the solver's action
everywhere else (``K = 12``: everywhere, the win agent itself). At two players four fifths of the edge lie in the
last four turns (the fifth self-play try's premise: ``docs/selfplay-tries.md``).
"""

from __future__ import annotations

import json
import time

import numpy as np

from yacht_agents import make_agent
from yacht_agents.optimal import OptimalAgent
from yacht_agents.win import WinAgent
from yacht_env import rules as R
from yacht_lab.measure.head_to_head import head_to_head
from yacht_lab.scripts.cli import OneLineParser, number


class LastTurnsWinAgent(WinAgent):
    """The win agent on the decisions of its last ``turns`` turns, the solver's action before them."""

    def __init__(self, players: int, turns: int, rules: str = "standard") -> None:
        super().__init__(rules, players, name=f"win_last_{turns}")
        self.turns = turns
        self._open_count = R.open_bits(self.rules.num_categories).sum(axis=1)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        roll, rolls_left, open_mask = self.read(observations)[:3]
        solver = self.distributions.policy[rolls_left, open_mask, roll].astype(np.intp)
        late = self._open_count[open_mask] <= self.turns
        if not late.any():
            return solver
        actions = solver.copy()
        actions[late] = super()._act(observations[late], action_masks[late])
        return actions


def run(
    players: int, deals: int, seed: int, last_turns: int | None = None, base=None, rules: str = "standard"
) -> dict[str, object]:
    """One table size: the win agent's share, CI, score given up and games/s (``base``: a solo agent whose policy it
    plays over; the solver's if ``None``)."""
    if last_turns is not None:
        win = LastTurnsWinAgent(players, last_turns, rules)
    elif base is not None:
        win = WinAgent(rules, players, name=f"win over {base.name}", base=base)
    else:
        win = make_agent(f"win:{players}", rules) if players > 2 else make_agent("win", rules)
    optimal = [OptimalAgent(rules, name="optimal" if i == 0 else f"optimal_{i + 1}") for i in range(players - 1)]
    cpu = time.process_time()
    result = head_to_head([win, *optimal], players, deals, seed=seed, rules=rules)
    cpu = time.process_time() - cpu
    report = result.to_dict()["agents"]
    mine = report[win.name]
    others = [report[agent.name]["mean_score"] for agent in optimal]
    return {
        "rules": rules,
        "players": players,
        "last_turns": last_turns,
        "deals": deals,
        "games": result.total_games,
        "win_share": mine["win_share"],
        "win_share_ci95": mine["win_share_ci95"],
        "fair_share": round(1 / players, 6),
        "mean_score": mine["mean_score"],
        "optimal_mean_score": round(sum(others) / len(others), 4),
        "score_given_up": round(sum(others) / len(others) - mine["mean_score"], 4),
        "games_per_second": round(result.games_per_second),
        "games_per_cpu_second": round(result.total_games / cpu),
    }


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=number(int, 2, high=10), nargs="+", default=[2, 3, 5])
    parser.add_argument(
        "--deals", type=number(int, 1), nargs="+", default=[2000, 1000, 400], help="deals per table size"
    )
    parser.add_argument("--seed", type=number(int, 0), default=0)
    parser.add_argument(
        "--rules", default="standard", choices=sorted(R.PRESETS), help="rules preset (default: standard)"
    )
    parser.add_argument(
        "--last-turns", type=int, nargs="+", help="per table size: play for the win only in the last K turns (1..12)"
    )
    parser.add_argument("--base", help="a solo agent spec (e.g. ppo:standard): play over its policy, not the solver's")
    args = parser.parse_args()
    if len(args.deals) != len(args.players):
        parser.error("give one --deals per --players")
    if args.base is not None and args.last_turns:
        parser.error("--base and --last-turns do not combine")
    base = None
    if args.base is not None:
        try:
            base = make_agent(args.base, args.rules)
        except ValueError as error:
            parser.error(f"--base: {error}")
        if base.table_players is not None:
            parser.error(f"--base: {args.base} sees a table; the base is a solo agent, whose own policy is evaluated")
    if R.get_rules(args.rules).has_bonuses and (args.base is not None or args.last_turns):
        parser.error(f"--base and --last-turns play rules without bonuses; {args.rules} has bonuses")
    last_turns = args.last_turns or [None] * len(args.players)
    if len(last_turns) != len(args.players) or not all(k is None or 1 <= k <= 12 for k in last_turns):
        parser.error("give one --last-turns K in 1..12 per --players")
    for players, deals, turns in zip(args.players, args.deals, last_turns, strict=True):
        row = run(players, deals, args.seed, turns, base, args.rules)
        lo, hi = row["win_share_ci95"]
        where = "" if turns is None else f", the last {turns} turn{'s' if turns > 1 else ''}"
        preset = "" if args.rules == "standard" else f"{args.rules}: "
        print(
            f"{preset}{players} players{where}, {row['games']:,} games: win share {100 * row['win_share']:.2f}% "
            f"[{100 * lo:.2f}, {100 * hi:.2f}] (fair {100 * row['fair_share']:.2f}%), mean score "
            f"{row['mean_score']:.2f} vs optimal {row['optimal_mean_score']:.2f} "
            f"(gives up {row['score_given_up']:.2f}), {row['games_per_second']:,} games/s "
            f"({row['games_per_cpu_second']:,} per CPU-second)",
            flush=True,
        )
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
