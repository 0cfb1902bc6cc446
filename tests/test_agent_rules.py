"""A model spec plays the rules its model's files name when none are given (``make_agent("search:yahtzee")``), and
refuses other rules given explicitly.
"""

from __future__ import annotations

import pytest

from yacht_agents import make_agent


@pytest.mark.parametrize(
    ("spec", "rules"),
    [
        ("search:yahtzee", "yahtzee"),
        ("search:standard", "standard"),
        ("ppo:yahtzee", "yahtzee"),
        ("ppo:yatzy", "yatzy"),
    ],
)
def test_a_model_spec_plays_the_rules_its_model_names(spec, rules):
    if spec.startswith("ppo:"):
        pytest.importorskip("sb3_contrib")
    agent = make_agent(spec)
    assert agent.rules.name == rules
    assert make_agent(f"{spec}#2").rules.name == rules
    other = "standard" if rules != "standard" else "yahtzee"
    with pytest.raises(ValueError, match=f"'{other}'"):
        make_agent(spec, other)


def test_a_jax_spec_plays_the_rules_its_policy_names(tmp_path):
    pytest.importorskip("jax")
    assert make_agent("jax:standard").rules.name == "standard"
    with pytest.raises(ValueError, match="plays the 'standard' rules, not 'yahtzee'"):
        make_agent("jax:standard", "yahtzee")


def test_agents_without_a_model_still_default_to_standard():
    assert {make_agent(spec).rules.name for spec in ("random", "greedy", "optimal", "win")} == {"standard"}
