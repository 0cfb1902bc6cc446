"""What ``evaluate.py`` shows while and after it plays: a progress bar that moves within each agent's games (turn by
turn, one bar an agent, so it never shows the previous agent's speed), and names cut to a column that keep distinct
agents distinct.
"""

from __future__ import annotations

import pytest

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_lab.measure import evaluation, head_to_head
from yacht_lab.measure.head_to_head_report import format_report
from yacht_lab.measure.report import short_name, short_names


class Bar:
    """A progress bar that records what it is told."""

    made: list[Bar] = []

    def __init__(self, total: int, turns: int = 1, description: str | None = None) -> None:
        self.total, self.turns, self.description, self.updates, self.closed = total, turns, description, [], False
        Bar.made.append(self)

    def update(self, n: int = 1) -> None:
        self.updates.append(n)

    def set_description(self, text: str) -> None:
        self.description = text

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    Bar.made = []
    monkeypatch.setattr(evaluation, "progress_bar", Bar)
    monkeypatch.setattr(head_to_head, "progress_bar", Bar)
    return Bar.made


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_the_evaluation_bar_moves_turn_by_turn_one_bar_an_agent(bars, rules):
    agents = [make_agent("greedy", rules), make_agent("optimal", rules)]
    turns = R.get_rules(rules).num_turns
    evaluation.evaluate(agents, 20, 0, rules, batch_size=20, progress=True)  # one batch: every game ends together
    assert [bar.description for bar in bars] == ["greedy (1/2)", "optimal (2/2)"]
    for bar in bars:
        assert bar.closed and bar.total == 20 and bar.turns == turns
        assert sum(bar.updates) == 20 * turns and len([n for n in bar.updates if n]) >= turns  # within the batch


def test_the_head_to_head_bar_moves_turn_by_turn(bars):
    agents = [make_agent("greedy"), make_agent("optimal")]
    head_to_head.head_to_head(agents, 2, 3, 0, batch_size=100, progress=True, calibration=False)
    (bar,) = bars
    turns = R.get_rules("standard").num_turns * 2
    assert bar.total == 3 * 4 and bar.turns == turns and sum(bar.updates) == 3 * 4 * turns
    assert len([n for n in bar.updates if n]) >= turns and bar.closed


def test_names_cut_to_a_column_keep_their_kind_and_stay_distinct():
    assert short_name("search:selfplay_standard", 18) == "search:...standard"
    assert short_name("ppo:selfplay_standard", 18) == "ppo:...standard"
    assert short_name("ppo:runs/YachtVersus-v0__standard/model.zip", 24) == "ppo:...model.zip"
    assert short_name("ppo:runs/x/model.zip", 24) == "ppo:runs/x/model.zip"
    assert short_name("a" * 30, 18) == "..." + "a" * 15
    same_end = ["search:runs/a/model.npz", "search:runs/b/model.npz"]
    assert short_names(same_end, 18) == {name: name for name in same_end}  # cut alike: shown whole


def test_the_head_to_head_tables_tell_two_selfplay_models_apart():
    agents = [make_agent("greedy"), make_agent("optimal")]
    agents[0].name, agents[1].name = "search:selfplay_standard", "ppo:selfplay_standard"
    report = format_report(head_to_head.head_to_head(agents, 2, 2, 0, calibration=False))
    assert "search:...standard" in report and "ppo:...standard" in report
    assert "...lfplay_standard" not in report
