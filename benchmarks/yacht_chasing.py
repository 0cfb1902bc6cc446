"""How the win agent's risk changes with the score margin: its Yacht-chasing rate against the optimal agent's.

    python benchmarks/yacht_chasing.py --deals 5000 --seed 0 --out benchmarks/win

Plays ``win`` against ``optimal`` at two players (:func:`yacht_lab.measure.head_to_head.head_to_head`: common dice, dice
and seat rotations, ``4 * deals`` games) and records, for both agents, every **Yacht-chasing opportunity**: a
decision with the Yacht category open, a re-roll left, and three or four dice of one face showing (not already
a Yacht). The agent **chases** when it keeps exactly the dice of that face and re-rolls the other one or two
(any other keep, or a pick, does not chase). The **margin** is the deciding player's total minus the
opponent's, before the decision. It writes ``yacht_chasing.json`` (per agent and 10-point margin bin: the
opportunities and the chasing rate) and ``yacht_chasing.png`` (the rates against the margin, 95% error bars).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from yacht_agents import make_agent
from yacht_agents.base import Agent
from yacht_agents.optimal import OptimalAgent
from yacht_agents.win import WinAgent
from yacht_env import rules as R
from yacht_env.util import atomic_output, atomic_write, check_writable
from yacht_lab.measure.head_to_head import head_to_head
from yacht_lab.scripts.cli import OneLineParser

EDGES = np.arange(-70, 71, 10)  # bins: below -70, [-70, -60), ..., [60, 70), 70 and more
_INDEX = {kept: i for i, kept in enumerate(R.KEPT)}
#: Per roll: the face shown 3 or 4 times (0 if none) and the index in KEPT of exactly those dice.
_COUNTS = R.ROLL_COUNTS.astype(np.intp)
_FACE = np.where(np.isin(_COUNTS.max(axis=1), (3, 4)), _COUNTS.argmax(axis=1) + 1, 0)
_OF_A_KIND = np.array(
    [_INDEX[(face,) * int(_COUNTS[r, face - 1])] if face else -1 for r, face in enumerate(_FACE)], dtype=np.intp
)


class Recorder(Agent):
    """Wraps an agent at a 2-player table: acts as it does, recording every decision's state and action.

    The wrapped agent sees the table (a table agent) or its own game (the solo part of the table view).
    """

    def __init__(self, inner: Agent) -> None:
        super().__init__(inner.name, inner.rules)
        self.inner, self.table_players = inner, 2
        self._reader = WinAgent(inner.rules, 2, name="reader")  # decodes the table view
        self.records: list[np.ndarray] = []

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        roll, rolls_left, open_mask, total, opponent_open, opponent_total = self._reader.read(observations)
        solo = observations if self.inner.table_players else observations[:, : self.encoder.size]
        actions = np.asarray(self.inner.act(solo, action_masks), dtype=np.intp)
        margin = total - opponent_total[:, 0]
        self.records.append(np.stack([roll, rolls_left, open_mask, margin, actions], axis=1))
        return actions


def chasing(records: np.ndarray, yacht: int) -> tuple[np.ndarray, np.ndarray]:
    """The margins of the Yacht-chasing opportunities among ``records`` and whether each chased (see above)."""
    roll, rolls_left, open_mask, margin, action = records.T
    chance = ((open_mask >> yacht) & 1).astype(bool) & (rolls_left > 0) & (_FACE[roll] > 0)
    roll, action = roll[chance], action[chance]
    kept = R.KEEP[roll, np.minimum(action, R.NUM_KEEPS - 1)]
    chased = (action < R.NUM_KEEPS) & (kept == _OF_A_KIND[roll])
    return margin[chance], chased


def bins(margin: np.ndarray, chased: np.ndarray) -> list[dict[str, object]]:
    """Per margin bin: its bounds (``None``: open), the opportunities and the chasing rate."""
    index = np.searchsorted(EDGES, margin, side="right")
    bounds = [None, *EDGES.tolist(), None]
    rows = []
    for b in range(len(EDGES) + 1):
        at = index == b
        n = int(at.sum())
        rows.append(
            {
                "margin": [bounds[b], bounds[b + 1]],
                "opportunities": n,
                "chased": int(chased[at].sum()),
                "rate": round(float(chased[at].mean()), 6) if n else None,
            }
        )
    return rows


def plot(result: dict, path: Path) -> None:
    """The chasing rate against the margin, one line per agent, 95% error bars, counts under the points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.6))
    centers = np.concatenate([[EDGES[0] - 5], (EDGES[:-1] + EDGES[1:]) / 2, [EDGES[-1] + 5]])
    for offset, (name, color) in zip((-1, 1), (("win", "tab:red"), ("optimal", "tab:blue")), strict=True):
        rows = result["agents"][name]["bins"]
        n = np.array([row["opportunities"] for row in rows])
        rate = np.array([row["rate"] if row["rate"] is not None else np.nan for row in rows])
        half = 1.96 * np.sqrt(rate * (1 - rate) / np.maximum(n, 1))
        ax.errorbar(
            centers + offset,
            100 * rate,
            100 * half,
            marker="o",
            ms=4,
            capsize=2,
            color=color,
            label=f"{name} ({result['agents'][name]['opportunities']:,} opportunities)",
        )
    ax.axvline(0, color="grey", lw=0.8, ls=":")
    ax.set_xticks(centers, ["<-70", *[f"{e:+d}" if e else "0" for e in EDGES[:-1] + 5], ">=70"], fontsize=8)
    ax.set_xlabel("margin before the decision: own total - opponent's total (10-point bins, centres)")
    ax.set_ylabel("Yacht-chasing rate (%)")
    ax.set_title(
        f"Keeping 3 or 4 of a kind to chase the Yacht, by margin ({result['games']:,} two-player games, "
        f"win vs optimal, seed {result['seed']})",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    with atomic_output(path) as temp:
        fig.savefig(temp, dpi=110, format="png")
    plt.close(fig)


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/win"))
    args = parser.parse_args()
    try:  # before the games: a folder that cannot be written costs no time
        args.out.mkdir(parents=True, exist_ok=True)
        for name in ("yacht_chasing.json", "yacht_chasing.png"):
            check_writable(args.out / name)
    except (OSError, ValueError) as error:
        parser.error(f"argument --out: {getattr(error, 'strerror', None) or error}")
    win, optimal = Recorder(make_agent("win")), Recorder(OptimalAgent())
    start = time.perf_counter()
    h2h = head_to_head([win, optimal], 2, args.deals, seed=args.seed, calibration=False)
    yacht = R.category_index("yacht")
    result = {
        "command": f"python benchmarks/yacht_chasing.py --deals {args.deals} --seed {args.seed}",
        "definition": __doc__.split("\n\n")[1].replace("\n", " "),
        "seed": args.seed,
        "deals": args.deals,
        "games": h2h.total_games,
        "agents": {},
    }
    for agent in (win, optimal):
        margin, chased = chasing(np.concatenate(agent.records), yacht)
        result["agents"][agent.name] = {
            "opportunities": int(margin.size),
            "rate": round(float(chased.mean()), 6),
            "bins": bins(margin, chased),
        }
    atomic_write(args.out / "yacht_chasing.json", json.dumps(result, indent=1) + "\n")
    plot(result, args.out / "yacht_chasing.png")
    for name, stats in result["agents"].items():
        rates = " ".join(
            f"{row['margin']}:{100 * row['rate']:.0f}%({row['opportunities']})"
            for row in stats["bins"]
            if row["rate"] is not None
        )
        print(f"{name}: {stats['opportunities']:,} opportunities, chased {100 * stats['rate']:.1f}%; {rates}")
    print(
        f"{h2h.total_games:,} games in {time.perf_counter() - start:.1f} s; wrote {args.out}/yacht_chasing.{{json,png}}"
    )


if __name__ == "__main__":
    main()
