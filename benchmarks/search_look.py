"""Does a look at the next seat's turn pay? A two-seat search model played plainly and with the look, side by side.

    python benchmarks/search_look.py --model selfplay_standard --deals 500 --seed 3 --against optimal win
    python benchmarks/search_look.py --model selfplay_yahtzee --deals 300 --seed 3 --against optimal
    python benchmarks/search_look.py --model selfplay_standard --look turn --deals 50 --seed 3

The plain agent (:class:`yacht_agents.search.SearchAgent`) values an afterstate of its turn by its network ``V``
alone. The look values it through the opponent's whole next turn instead: the opponent's exact expectimax over its
own dice under the same ``V`` (the mover's win share is one minus the opponent's value of its turn start, ties
split). ``--look picks`` looks only where the plain plan picks a category: the legal picks of that roll are re-ranked
by the look (at most ``C`` opponent turns planned per decision); ``--look turn`` values every afterstate of the
turn's expectimax through the look (every keep too; about 100 times the plain agent's cost). Nothing of a solver
enters either agent; ``optimal`` and ``win`` sit only as yardsticks.

Plays :func:`yacht_lab.measure.head_to_head.head_to_head` (common dice, dice and seat rotations: 4 games per deal
and pair) and prints every pair and each agent's decisions per second of the run. The look stays out of the agent
(:mod:`yacht_agents.search`): ``docs/search-agent.md`` gives the figures ("A look at the next seat's turn"), and it
did not pay.
"""

from __future__ import annotations

import json
import time

import numpy as np

from yacht_agents import make_agent
from yacht_agents.search import SearchAgent, TurnPlanner
from yacht_env import rules as R
from yacht_lab.measure.head_to_head import head_to_head
from yacht_lab.scripts.cli import OneLineParser, number


def next_turn_values(planner: TurnPlanner, own: tuple, opponent: tuple) -> np.ndarray:
    """The mover's value of two-seat afterstates through the opponent's next turn: ``1 - S`` with ``S`` the
    opponent's turn-start value under ``planner`` (where the opponent has nothing left to play, ``V`` itself).

    ``own``: the mover's ``(open_mask, upper, armed, total)`` after its pick, ``(n,)`` each; ``opponent``: the
    opponent's, ``(n, 1)`` each (as :func:`yacht_agents.search.features`).
    """
    own = tuple(np.asarray(x, dtype=np.intp) for x in own)
    opponent = tuple(np.asarray(x, dtype=np.intp) for x in opponent)
    values = np.empty(len(own[0]))
    live = opponent[0][:, 0] != 0
    if (~live).any():
        values[~live] = planner.afterstate_values(tuple(x[~live] for x in own), tuple(x[~live] for x in opponent))
    if live.any():
        theirs = tuple(x[live, 0] for x in opponent)
        mover = tuple(x[live, None] for x in own)
        values[live] = 1.0 - planner.plan(theirs, mover).start
    return values


class _LookValue:
    """A value with :class:`TurnPlanner`'s interface that values every afterstate through the next turn."""

    def __init__(self, planner: TurnPlanner) -> None:
        self.planner = planner

    def values(self, own: tuple, opponents: tuple, exact: bool = False) -> np.ndarray:
        return next_turn_values(self.planner, own, opponents)


class LookAgent(SearchAgent):
    """A two-seat search model with a look at the next seat's turn (module docstring): ``look`` is ``"picks"`` or
    ``"turn"``.
    """

    def __init__(self, path: str, rules: str, look: str) -> None:
        super().__init__(path, rules, name=f"search:{path}+look:{look}")
        if self.table_players != 2:
            raise ValueError(f"the look needs a two-seat model; search:{path} plays at {self.table_players or 1}")
        self.look = look
        if look == "turn":
            self.planner = TurnPlanner(self.rules, 2, _LookValue(self.planner), exact=True)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        action = super()._act(observations, action_masks)
        picking = np.flatnonzero(action >= R.PICK_OFFSET)
        if self.look == "turn" or len(picking) == 0:
            return action
        view = self.view.decode(observations)
        roll, _, open_mask, upper, armed, total = (np.asarray(x, dtype=np.intp)[picking] for x in view[:6])
        opponent = tuple(
            np.asarray(x, dtype=np.intp)[picking]
            for x in (view.opponent_open, view.opponent_upper, view.opponent_armed, view.opponent_total)
        )
        legal = np.asarray(action_masks, dtype=bool)[picking, R.PICK_OFFSET :]
        row, category = np.nonzero(legal)
        points, _, up, arm = R.pick_outcome(self.rules, roll[row], category, open_mask[row], upper[row], armed[row])
        after = (open_mask[row] & ~(1 << category), up, arm, total[row] + points)
        values = np.full(legal.shape, -np.inf)
        values[row, category] = next_turn_values(self.planner, after, tuple(x[row] for x in opponent))
        action[picking] = R.PICK_OFFSET + values.argmax(axis=1)  # a tie: the first category, as decide does
        return action


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="selfplay_standard", help="a two-seat search model (a shipped name or path)")
    parser.add_argument("--look", choices=("picks", "turn"), default="picks")
    parser.add_argument("--deals", type=number(int, 1, high=1_000_000), default=500)
    parser.add_argument("--seed", type=number(int, 0, high=2**31 - 1), default=3)
    parser.add_argument("--against", nargs="*", default=["optimal"], help="yardsticks: optimal, win")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    try:
        plain = make_agent(f"search:{args.model}")
        look = LookAgent(args.model, plain.rules.name, args.look)
        others = [make_agent(spec, plain.rules, players=2) for spec in args.against]
    except ValueError as error:
        parser.error(str(error))
    agents = [look, plain, *others]
    clocks = {agent.name: 0.0 for agent in agents}
    decisions = dict.fromkeys(clocks, 0)
    for agent in agents:  # time each agent's own decisions
        agent._act = _timed(agent._act, agent.name, clocks, decisions)
    start = time.perf_counter()
    outcome = head_to_head(agents, 2, args.deals, seed=args.seed, rules=plain.rules, calibration=False)
    wall = time.perf_counter() - start
    print(
        f"{plain.rules.name}, two players, {args.deals:,} deals (seed {args.seed}), 4 games a deal and pair, "
        f"{wall:.0f} s; the look: {args.look}"
    )
    rows = []
    for pair in outcome.pairs.values():
        s = pair.summary(4)
        low, high = s["win_rate_a_ci95"]
        print(f"  {pair.a:<40} vs {pair.b:<28} {100 * s['win_rate_a']:6.2f}% [{100 * low:.2f}, {100 * high:.2f}]")
        rows.append({"a": pair.a, "b": pair.b, **s})
    for name in clocks:
        rate = decisions[name] / clocks[name] if clocks[name] else 0.0
        print(f"  {name:<40} {rate:10,.0f} decisions/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"deals": args.deals, "seed": args.seed, "look": args.look, "pairs": rows}, f, indent=1)


def _timed(act, name: str, clocks: dict, decisions: dict):
    def timed(observations, action_masks):
        start = time.perf_counter()
        actions = act(observations, action_masks)
        clocks[name] += time.perf_counter() - start
        decisions[name] += len(actions)
        return actions

    return timed


if __name__ == "__main__":
    main()
