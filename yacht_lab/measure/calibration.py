"""The calibration of the win agent's model in the head to head: its predicted chances of finishing first
against the games' outcomes.

At the start of every round of every game that :func:`~yacht_lab.measure.head_to_head.head_to_head` plays (every player
at a turn start, recorded by :func:`~yacht_lab.measure.head_to_head.play_tables`), :func:`predict_round_starts` asks
the model (:func:`~yacht_agents.win_model.table_win_probabilities`: final total = total + the solver's score
distribution of the open categories, independent players) for each player's probability of finishing first;
:class:`Calibration` sums those predictions against the win shares exactly, in integers (the report does not
depend on the batch size), into a Brier score and a reliability table.

Separate from the play (:mod:`yacht_lab.measure.head_to_head`): it is a check of a model, not part of who wins, and
it can be left out (``calibration=False``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from yacht_agents.win_model import table_win_probabilities
from yacht_env.distributions import ScoreDistributions
from yacht_lab.measure.report import rounded_floats

#: Predicted probabilities are summed exactly as integers in units of ``1 / PREDICTION_UNIT`` (batch-size free).
PREDICTION_UNIT = 1 << 32
CALIBRATION_BINS = 10
CALIBRATION_METHOD = (
    "at the start of every round (every player at a turn start), each player's probability of finishing first "
    "(ties split) under the win agent's model: final total = total + D[open mask] (the solver's policy), "
    "independent across players; outcome: the player's win share of the game (ties split)"
)


class Calibration:
    """Exact integer sums of the model's predicted win probabilities against the outcomes (see ``to_dict``).

    Args:
        names: The agents.
        rounds: Rounds per game (the number of categories).
        players: Players at a table.
        share_unit: Outcomes come in units of ``1 / share_unit``.
    """

    def __init__(self, names: Sequence[str], rounds: int, players: int, share_unit: int) -> None:
        self.rounds, self.players, self.share_unit = rounds, players, share_unit
        self.count = {name: 0 for name in names}  # predictions per agent
        self.predicted = {name: [0] * rounds for name in names}  # per round, in 1 / PREDICTION_UNIT
        self.outcome = {name: 0 for name in names}  # in 1 / share_unit
        self.squared = {name: 0 for name in names}  # (predicted - outcome)^2, in 1 / PREDICTION_UNIT
        self.constant = 0  # (1 / P - outcome)^2 pooled, in 1 / (P * share_unit)^2
        self.bin_count = [0] * CALIBRATION_BINS
        self.bin_predicted = [0] * CALIBRATION_BINS
        self.bin_outcome = [0] * CALIBRATION_BINS

    def add(self, names: Sequence[str], predicted: np.ndarray, share: np.ndarray) -> None:
        """Adds one lineup's games.

        Args:
            names: The agents of the table, in the order of the last axes.
            predicted: float ``(games, rounds, P)``: the predictions by agent of the table.
            share: int ``(games, P)``: the outcomes (win shares in units of ``share_unit``).
        """
        quantized = np.rint(predicted * PREDICTION_UNIT).astype(np.int64)
        outcome = np.broadcast_to(share[:, None, :], quantized.shape)
        error = predicted - outcome / self.share_unit
        squared = np.rint(error * error * PREDICTION_UNIT).astype(np.int64)
        off = self.players * outcome.astype(np.int64) - self.share_unit  # P * share_unit * (outcome - 1 / P)
        self.constant += int(np.dot(off.reshape(-1), off.reshape(-1)))
        for i, name in enumerate(names):
            self.count[name] += quantized[:, :, i].size
            for k, total in enumerate(quantized[:, :, i].sum(axis=0).tolist()):
                self.predicted[name][k] += total
            self.outcome[name] += int(share[:, i].sum()) * self.rounds
            self.squared[name] += int(squared[:, :, i].sum())
        bins = np.minimum(quantized * CALIBRATION_BINS // PREDICTION_UNIT, CALIBRATION_BINS - 1).reshape(-1)
        values, outcomes = quantized.reshape(-1), outcome.reshape(-1)
        for b in range(CALIBRATION_BINS):  # exact integer sums per bin (float bincount weights would round)
            at = bins == b
            self.bin_count[b] += int(at.sum())
            self.bin_predicted[b] += int(values[at].sum())
            self.bin_outcome[b] += int(outcomes[at].sum())

    def merge(self, other: Calibration) -> None:
        """Adds the sums of ``other``, of the same rounds, players and share unit and of some of these agents."""
        if (other.rounds, other.players, other.share_unit) != (self.rounds, self.players, self.share_unit):
            raise ValueError("cannot merge the calibrations of other rules or tables")
        for name, count in other.count.items():
            self.count[name] += count
            self.predicted[name] = [a + b for a, b in zip(self.predicted[name], other.predicted[name], strict=True)]
            self.outcome[name] += other.outcome[name]
            self.squared[name] += other.squared[name]
        self.constant += other.constant
        for b in range(CALIBRATION_BINS):
            self.bin_count[b] += other.bin_count[b]
            self.bin_predicted[b] += other.bin_predicted[b]
            self.bin_outcome[b] += other.bin_outcome[b]

    def to_dict(self) -> dict[str, object]:
        """Per agent its mean prediction (overall and by round), observed win share and Brier score; pooled:
        the Brier score, that of always predicting ``1 / P``, and the reliability table.
        """
        q, unit = PREDICTION_UNIT, self.share_unit
        agents = {}
        for name, count in self.count.items():
            if count == 0:
                continue
            per_round = count // self.rounds
            agents[name] = rounded_floats(
                {
                    "predictions": count,
                    "mean_predicted": sum(self.predicted[name]) / (count * q),
                    "observed_win_share": self.outcome[name] / (count * unit),
                    "mean_predicted_by_round": [total / (per_round * q) for total in self.predicted[name]],
                    "brier": self.squared[name] / (count * q),
                }
            )
        count = sum(self.count.values())
        reliability = []
        for b in range(CALIBRATION_BINS):
            n = self.bin_count[b]
            reliability.append(
                {
                    "bin": [b / CALIBRATION_BINS, (b + 1) / CALIBRATION_BINS],
                    "count": n,
                    "mean_predicted": round(self.bin_predicted[b] / (n * q), 6) if n else None,
                    "observed": round(self.bin_outcome[b] / (n * unit), 6) if n else None,
                }
            )
        return {
            "method": CALIBRATION_METHOD,
            "rounds": self.rounds,
            "predictions": count,
            "brier": round(sum(self.squared.values()) / (count * q), 6),
            "brier_constant": round(self.constant / (count * (self.players * unit) ** 2), 6),
            "agents": agents,
            "reliability": reliability,
        }


def predict_round_starts(distributions: ScoreDistributions, round_starts: np.ndarray) -> np.ndarray:
    """The model's win probabilities at the round starts :func:`~yacht_lab.measure.head_to_head.play_tables` recorded:
    float ``(N, C, P)``.
    """
    n, c, _, p = round_starts.shape
    flat = round_starts.reshape(n * c, 2, p)  # one call: it bounds its own temporaries and computes each table once
    return table_win_probabilities(distributions, flat[:, 0], flat[:, 1]).reshape(n, c, p)
