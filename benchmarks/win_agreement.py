"""Does a model play for the win? Its actions on the decisions where the win agent departs from the solver.

    python benchmarks/win_agreement.py --agents ppo:standard ppo:runs/<run>/model.zip --games 4000
    python benchmarks/win_agreement.py --players 3 --agents ppo:runs/<run>/model.zip --games 4000

A head to head needs some 200,000 games to tell a model that wins a tenth of a point more from its start. This looks
at the moves instead. Each agent plays ``--games`` games from one seat (drawn at random) of a table of ``--players``
against the solver (``optimal``), deterministically, on the same seeded dice; on every decision of its last
``--last-turns`` turns (at most that many categories open in its own game) the win agent (``win:P``: one step of
policy improvement over the solver for the win, ``docs/playing-to-win.md``) and the solver are asked what they
would do. Where they differ (the *contested* decisions, where playing to win means another move) the report gives
the share of the agent's actions that are the win agent's, the solver's, or neither; elsewhere, its agreement with
the two (who agree there). A model that learned to play for the win moves its contested actions from the solver's
to the win agent's; one that only drifted loses agreement everywhere. For a PPO model it also gives the probability
its policy puts on the win agent's move there (quantiles, and the policy's entropy): sampled rollouts that never try
a move give it no gradient.

The win agent and the solver are the yardstick here, never the learner's input: this script reads a model's
actions, it does not train anything. JSON with ``--json PATH``.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder, flat_layout
from yacht_env.util import atomic_write
from yacht_env.versus import YachtVersusVectorEnv
from yacht_lab.scripts.cli import OneLineParser, output_file


def late_decisions(agent, players: int, games: int, seed: int, last_turns: int, tables: int = 256):
    """Plays ``games`` games of ``agent`` against ``players - 1`` optimal agents; returns the table observations,
    masks and the agent's actions on its decisions with at most ``last_turns`` categories open."""
    env = YachtVersusVectorEnv(
        min(tables, games), opponents=["optimal"] * (players - 1), seat="random", autoreset_mode="same_step"
    )
    open_columns, solo = flat_layout(env.rules)["open"], ObservationEncoder(env.rules).size
    own_game = getattr(agent, "table_players", None) is None  # it sees the first part of the table's view
    seen, masks_seen, actions_seen = [], [], []
    obs, info = env.reset(seed=seed)
    finished = 0
    while finished < games:
        masks = env.action_masks()
        actions = np.asarray(agent.act(obs[:, :solo] if own_game else obs, masks), dtype=np.int64)
        late = obs[:, open_columns].sum(axis=1).round() <= last_turns
        seen.append(obs[late])
        masks_seen.append(masks[late])
        actions_seen.append(actions[late])
        obs, _, terminated, truncated, _ = env.step(actions)
        finished += int(np.count_nonzero(terminated | truncated))
    return np.concatenate(seen), np.concatenate(masks_seen), np.concatenate(actions_seen)


def agreement(spec: str, players: int, games: int, seed: int, last_turns: int) -> dict[str, object]:
    """One agent's report (see the module)."""
    agent = make_agent(spec, players=players) if spec.startswith("win") else make_agent(spec)
    table = getattr(agent, "table_players", None)
    if table not in (None, players):
        raise ValueError(f"agent {spec!r} acts at a table of {table} players, not {players}")
    win = make_agent("win", players=players)
    obs, masks, actions = late_decisions(agent, players, games, seed, last_turns)
    winning = np.asarray(win.act(obs, masks), dtype=np.int64)
    roll, rolls_left, open_mask = win.read(obs)[:3]
    solver = win.distributions.policy[rolls_left, open_mask, roll].astype(np.int64)
    contested = winning != solver
    open_count = R.open_bits(win.rules.num_categories).sum(axis=1)[open_mask]

    def shares(rows: np.ndarray) -> dict[str, object]:
        n = int(rows.sum())
        if n == 0:
            return {"decisions": 0}
        as_win = float((actions[rows] == winning[rows]).mean())
        as_solver = float((actions[rows] == solver[rows]).mean())
        return {
            "decisions": n,
            "as_win": round(as_win, 4),
            "as_solver": round(as_solver, 4),
            "neither": round(float(((actions[rows] != winning[rows]) & (actions[rows] != solver[rows])).mean()), 4),
        }

    report = {
        "agent": spec,
        "games": games,
        "late_decisions": len(actions),
        "contested_share": round(float(contested.mean()), 4),
        "contested": shares(contested),
        "uncontested": shares(~contested),
        "contested_by_turns_left": {k: shares(contested & (open_count == k)) for k in range(1, last_turns + 1)},
    }
    if hasattr(agent, "model") and contested.any():  # a PPO model: how often would its rollouts try the move?
        report["contested_policy"] = policy_odds(agent, obs[contested], masks[contested], winning[contested])
    return report


def policy_odds(agent, obs: np.ndarray, masks: np.ndarray, moves: np.ndarray) -> dict[str, object]:
    """A PPO model's probability of ``moves`` (the win agent's) where contested, as quantiles, and its entropy: a
    move the sampled rollouts never try gets no policy gradient."""
    import torch

    view = obs if getattr(agent, "table_players", None) else obs[:, : ObservationEncoder(agent.rules).size]
    with torch.no_grad():
        dist = agent.model.policy.get_distribution(torch.as_tensor(view), action_masks=masks).distribution
        p = dist.probs.numpy()[np.arange(len(moves)), moves]
        entropy = float(dist.entropy().mean())
    quantiles = np.quantile(p, [0.1, 0.25, 0.5, 0.75, 0.9])
    return {
        "p_win_move_quantiles": dict(zip(["q10", "q25", "q50", "q75", "q90"], map(float, quantiles), strict=True)),
        "p_win_move_mean": round(float(p.mean()), 4),
        "entropy": round(entropy, 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", nargs="+", required=True, help="agent specs: ppo:PATH, optimal, greedy, win")
    parser.add_argument("--players", type=int, default=2, help="table size, 2..10 (default 2)")
    parser.add_argument("--games", type=int, default=4000, help="games per agent (default 4000)")
    parser.add_argument("--last-turns", type=int, default=4, help="look at the last K turns (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=output_file, help="write the reports here (checked before the games)")
    args = parser.parse_args(argv)
    if not 2 <= args.players <= 10 or args.games < 1 or not 1 <= args.last_turns <= R.NUM_CATEGORIES:
        print("error: need --players in 2..10, --games >= 1 and --last-turns in 1..12", file=sys.stderr)
        return 2
    try:
        reports = [agreement(spec, args.players, args.games, args.seed, args.last_turns) for spec in args.agents]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        f"{args.players} players, {args.games:,} games each against optimal, seed {args.seed}; the last "
        f"{args.last_turns} turns' decisions"
    )
    width = max(12, *(len(r["agent"]) for r in reports))
    print(
        f"{'agent':<{width}} {'late':>8} {'contested':>9}  contested: as win / as solver / neither   "
        "uncontested: as solver"
    )
    for r in reports:
        c, u = r["contested"], r["uncontested"]
        print(
            f"{r['agent']:<{width}} {r['late_decisions']:>8,} {r['contested_share']:>9.2%}  "
            f"{c.get('as_win', 0):>8.2%} / {c.get('as_solver', 0):>7.2%} / {c.get('neither', 0):>6.2%}"
            f"   {u.get('as_solver', 0):>8.2%}"
        )
    for r in reports:
        if "contested_policy" in r:
            odds = r["contested_policy"]
            q = "  ".join(f"{k} {v:.2g}" for k, v in odds["p_win_move_quantiles"].items())
            print(
                f"{r['agent']}: P(the win agent's move) where contested: {q}, mean {odds['p_win_move_mean']:.4f}; "
                f"entropy {odds['entropy']:.3f} nats"
            )
    if args.json:
        try:
            atomic_write(args.json, json.dumps(reports, indent=1) + "\n")
        except (OSError, ValueError) as error:  # checked before the games, but a disk can fill since
            print(f"error: cannot write {args.json}: {getattr(error, 'strerror', None) or error}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
