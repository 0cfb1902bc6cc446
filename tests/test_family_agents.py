"""The players and the lab on the Yacht family's presets (Yahtzee's four, Scandinavian Yatzy).

* ``greedy`` and ``optimal`` play whole games of every preset through the vector env: legal actions only, and
  the rewards add up to the env's totals; greedy's rule on the family's boxes, case by case (jokers, the forced
  joker's placement, Yahtzee's runs, Yatzy's exact straights, the upper bonus's share).
* The solo evaluation and its report: the sheet's own categories, the upper bonus rate, the Yahtzee bonus, regret
  against the solver on the family's whole state; the head to head on Yatzy.
* What cannot play there says so in one line: a shipped Yacht model (the win agent plays the family:
  ``tests/test_family_win.py``). The odds policy reads the family's observation; ``train.py --rules yahtzee`` runs
  end to end.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import REPO

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder, chase_values
from yacht_env.game import game_streams
from yacht_env.vector import YachtVectorEnv
from yacht_lab.measure.evaluation import evaluate, format_report, render_json
from yacht_lab.measure.head_to_head import head_to_head
from yacht_lab.measure.report import Z_95

FAMILY = ("yahtzee", "yahtzee_forced_joker", "yahtzee_no_joker", "yahtzee_no_bonus", "yatzy", "clubhouse")


def play(agent, rules: str, games: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plays ``games`` seeded games to the end through the vector env, checking every action against its mask.

    Returns:
        ``(rewards, totals, sheets)``: each game's summed rewards, the env's final total and final sheet.
    """
    rules = R.get_rules(rules)
    env = YachtVectorEnv(games, rules=rules, autoreset_mode="next_step")
    obs, _ = env.reset(options={"dice_stream": game_streams(seed, range(games), rules)})
    playing = np.ones(games, dtype=bool)
    rewards, totals = np.zeros(games), np.zeros(games, dtype=np.int64)
    sheets = np.zeros((games, rules.num_categories), dtype=np.int64)
    while playing.any():
        masks = env.action_masks()
        actions = masks.argmax(axis=1)  # a legal filler for finished games (their next step starts new ones)
        actions[playing] = agent.act(obs[playing], masks[playing].copy())
        assert masks[np.arange(games), actions].all()
        obs, reward, terminated, _, info = env.step(actions)
        assert not info["illegal_action"].any()
        rewards += reward * playing
        done = playing & terminated
        totals[done], sheets[done] = info["total"][done], info["scores"][done]
        playing &= ~done
    return rewards, totals, sheets


def observe(rules: str, dice, rolls_left: int, open_categories, upper: int = 0, armed: int = 0):
    """The flat observation and the env's action mask (the forced joker's placement included) of one state."""
    rules = R.get_rules(rules)
    roll = R.roll_index(dice)
    open_mask = rules.all_open if open_categories == "all" else R.open_mask_from(open_categories, rules)
    mask = R.legal_action_mask(roll, rolls_left, open_mask, True, rules.num_categories)
    mask[R.PICK_OFFSET :] = R.open_bits(rules.num_categories)[R.legal_picks(rules, roll, open_mask)]
    return ObservationEncoder(rules).flat(roll, rolls_left, open_mask, upper, armed), mask


def pick(rules: str, name: str) -> int:
    return R.PICK_OFFSET + R.get_rules(rules).categories.index(name)


def all_but(rules: str, *names: str) -> list[str]:
    return [name for name in R.get_rules(rules).categories if name not in names]


# --------------------------------------------------------------------------------------------------
# greedy and optimal play every preset
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "preset"),
    [
        # the two slowest of the solver's games run with -m slow (greedy plays those presets here)
        pytest.param(spec, preset, marks=pytest.mark.slow)
        if (spec, preset) in {("optimal", "yatzy"), ("optimal", "yahtzee_forced_joker")}
        else (spec, preset)
        for spec in ("greedy", "optimal")
        for preset in FAMILY
    ],
)
def test_whole_games_with_legal_actions_and_the_envs_totals(spec, preset):
    rewards, totals, sheets = play(make_agent(spec, preset), preset, games=24)
    rules = R.get_rules(preset)
    np.testing.assert_array_equal(rewards, totals)
    assert (sheets >= 0).all()  # every box filled
    assert (totals >= sheets.sum(axis=1)).all() and (totals <= R.max_total(rules)).all()


GREEDY_CASES = [
    # 1. made hands, the joker's included: a five of a kind with its box and upper box filled is a large straight
    ("yahtzee", (3, 3, 3, 3, 3), 2, all_but("yahtzee", "yahtzee", "threes"), 9, 1, pick("yahtzee", "large_straight")),
    # the forced joker: its face's upper box is open, so it must go there (a keep of all five dice scores instead)
    ("yahtzee_forced_joker", (3, 3, 3, 3, 3), 2, all_but("yahtzee", "yahtzee"), 0, 1, pick("yahtzee", "threes")),
    # no joker: the Yahtzee bonus comes wherever it goes, and Chance holds the most
    ("yahtzee_no_joker", (3, 3, 3, 3, 3), 0, ["ones", "full_house", "chance"], 0, 1, pick("yahtzee", "chance")),
    # Yahtzee's small straight is any four in sequence: made
    ("yahtzee", (1, 2, 3, 4, 6), 2, "all", 0, 0, pick("yahtzee", "small_straight")),
    # 3. straight draws: Yahtzee's large straight one face away (2-3-_-5-6), then its small one (1-2-3-_)
    ("yahtzee", (1, 2, 3, 5, 6), 2, "all", 0, 0, 0b11110),
    ("yahtzee", (1, 1, 2, 3, 6), 1, all_but("yahtzee", "large_straight"), 0, 0, 0b01101),
    # Yatzy's straights are exact: 1-2-3-4-6 is one face from both; the large one first
    ("yatzy", (1, 2, 3, 4, 6), 2, "all", 0, 0, 0b11110),
    # no re-rolls: the most points now, an upper box's counting its distance from par while the bonus is to earn
    ("yahtzee", (1, 6, 6, 6, 6), 0, ["sixes", "three_of_a_kind"], 40, 0, pick("yahtzee", "sixes")),  # 24 + 6 x 5/9
    ("yahtzee", (1, 6, 6, 6, 6), 0, ["sixes", "three_of_a_kind"], 63, 0, pick("yahtzee", "three_of_a_kind")),
    ("yahtzee", (1, 2, 3, 4, 6), 0, ["ones", "yahtzee"], 0, 0, pick("yahtzee", "yahtzee")),  # 1 - 2 x 5/9 < 0
    ("yahtzee", (1, 2, 3, 4, 6), 0, ["ones", "yahtzee"], 63, 0, pick("yahtzee", "ones")),
    ("yatzy", (2, 2, 5, 5, 6), 0, ["one_pair", "two_pairs"], 0, 0, pick("yatzy", "two_pairs")),
    # ties and zeros: the sacrifice order, read on the preset's sheet
    ("yatzy", (1, 2, 3, 4, 6), 0, ["yatzy", "one_pair", "full_house"], 0, 0, pick("yatzy", "yatzy")),
]


@pytest.mark.parametrize("case", GREEDY_CASES, ids=[f"{c[0]}-{''.join(map(str, c[1]))}-{c[2]}" for c in GREEDY_CASES])
def test_greedy_follows_its_documented_rule_on_the_family(case):
    preset, dice, rolls_left, open_categories, upper, armed, expected = case
    obs, mask = observe(preset, dice, rolls_left, open_categories, upper, armed)
    assert mask[expected]
    assert make_agent("greedy", preset).act(obs, mask) == expected


# --------------------------------------------------------------------------------------------------
# The solo evaluation and the head to head
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=["yahtzee", "yatzy"])
def family_run(request):
    """2,000 seeded games of greedy and optimal (game g: ``game_streams(0, [g], rules)``)."""
    rules = request.param
    return evaluate([make_agent("greedy", rules), make_agent("optimal", rules)], 2_000, seed=0, rules=rules)


def test_the_report_lists_the_presets_sheet_and_bonuses(family_run):
    rules = family_run.rules
    report = family_run.to_dict()
    for name, summary in report["agents"].items():
        assert list(summary["category_means"]) == list(rules.categories) == list(summary["category_regret"])
        assert ("upper_bonus_rate" in summary) == bool(rules.upper_bonus)
        assert ("yahtzee_bonus_mean" in summary) == bool(rules.yahtzee_bonus)
        assert 0 <= summary["upper_bonus_rate"] <= 1 and 0 <= summary["yacht_rate"] <= 1, name
    text = format_report(family_run)
    assert text.startswith(f"{rules.categories[rules.five_of_a_kind_category].capitalize()} ({rules.name} rules)")
    assert "upper bonus rate" in text and ("Yahtzee bonus / game" in text) == bool(rules.yahtzee_bonus)
    assert render_json(family_run).decode().count('"upper_bonus_rate"') == 2


def test_scores_are_the_boxes_plus_the_bonuses(family_run):
    rules = family_run.rules
    for result in family_run.results.values():
        yahtzee_bonus = 0 if result.yahtzee_bonus is None else result.yahtzee_bonus
        bonuses = rules.upper_bonus * result.upper_bonus + yahtzee_bonus
        np.testing.assert_array_equal(result.category_scores.sum(axis=1) + bonuses, result.scores)
        upper = result.category_scores[:, :6].sum(axis=1)  # Ones..Sixes lead both sheets
        np.testing.assert_array_equal(result.upper_bonus, upper >= rules.upper_bonus_threshold)
        if result.yahtzee_bonus is not None:
            assert (result.yahtzee_bonus % rules.yahtzee_bonus == 0).all()


def test_optimal_plays_the_solver_value_with_zero_regret(family_run):
    optimal = family_run.results["optimal"]
    assert np.abs(optimal.regret).max() <= 1e-9
    half_width = Z_95 * optimal.scores.std(ddof=1) / math.sqrt(len(optimal.scores))
    assert abs(optimal.scores.mean() - family_run.optimal_expected_score) < 2 * half_width
    # E[score + regret] = the optimal expected score, for greedy too (the solver's values on the whole state)
    greedy = family_run.results["greedy"]
    total = greedy.scores + greedy.regret
    assert abs(total.mean() - family_run.optimal_expected_score) < 2 * Z_95 * total.std(ddof=1) / math.sqrt(2_000)
    assert greedy.regret.mean() > 10 and optimal.upper_bonus.mean() > greedy.upper_bonus.mean()


def test_head_to_head_on_yatzy():
    result = head_to_head([make_agent("greedy", "yatzy"), make_agent("optimal", "yatzy")], 2, 4, rules="yatzy")
    report = result.to_dict()
    assert report["rules"] == "yatzy" and "calibration" not in report  # round starts without their bonus states
    pair = report["head_to_head"]["greedy vs optimal"]
    assert pair["games"] == 16 == pair["wins_a"] + pair["wins_b"] + pair["ties"]
    assert pair["mean_margin_a"] < 0


# --------------------------------------------------------------------------------------------------
# What refuses the family, in one line
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["yahtzee", "yatzy"])
def test_a_shipped_yacht_model_refuses_the_family(preset):
    pytest.importorskip("sb3_contrib")
    size = ObservationEncoder(preset).size
    with pytest.raises(ValueError) as error:
        make_agent("ppo:standard", preset)
    assert str(error.value).startswith(
        "cannot use PPO model 'standard': it was trained on observation space Box(0.0, 1.0, (64,), float32) and "
        f"action space Discrete(44); Yacht-v0 of the '{preset}' rules has Box(0, 1, ({size},))"
    )


# --------------------------------------------------------------------------------------------------
# Training: the odds policy on the family's observation, train.py end to end
# --------------------------------------------------------------------------------------------------
def test_the_odds_features_read_the_familys_observation():
    torch = pytest.importorskip("torch")
    from yacht_agents.policy import OddsFeatures

    rules = R.get_rules("yatzy")
    rng = np.random.default_rng(3)
    roll, rolls_left, open_mask = rng.integers(0, 252, 64), rng.integers(0, 3, 64), rng.integers(1, 2**15, 64)
    upper, armed = rng.integers(0, 64, 64), np.zeros(64, dtype=np.intp)
    obs = ObservationEncoder(rules).flat(roll, rolls_left, open_mask, upper, armed)
    chase, _ = OddsFeatures(rules)(torch.from_numpy(obs))
    expected = chase_values(rules)[rolls_left, roll] * R.open_bits(15)[open_mask] / 50
    np.testing.assert_allclose(chase.numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_train_script_runs_on_yahtzee(tmp_path):
    pytest.importorskip("sb3_contrib")
    config = {
        "total_timesteps": 512,
        "max_minutes": None,
        "n_envs": 4,
        "policy": {"net_arch": [16]},
        "ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 1},
        "eval": {"every_timesteps": 512, "games": 20, "seed": 1000},
        "checkpoint_every_timesteps": 512,
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    args = ["--config", str(path), "--rules", "yahtzee", "--output-dir", str(tmp_path), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "train.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    run = Path(done.stdout.strip().splitlines()[-1].removeprefix("run folder: "))
    assert run.name.startswith("Yacht-v0__yahtzee__") and (run / "model.zip").is_file()
    assert yaml.safe_load((run / "config.yaml").read_text())["rules"] == "yahtzee"
    rows = (run / "learning_curve.csv").read_text().splitlines()
    assert len(rows) == 3  # the header, step 0 and the end
    agent = make_agent(f"ppo:{run / 'model.zip'}", "yahtzee")
    policy = agent.model.policy  # the default recipe: the odds policy, on the family's 69 values
    assert type(policy).__name__ == "OddsPolicy" and policy.rules.name == "yahtzee"
    assert agent.model.observation_space.shape == (69,)
    rewards, totals, _ = play(agent, "yahtzee", games=4)
    np.testing.assert_array_equal(rewards, totals)
