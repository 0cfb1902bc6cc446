"""Cross-check of the multiplayer AEC env (``rules="knizia"``) against OpenSpiel's ``yacht``, an implementation
written elsewhere: random games dealt the same dice in both, compared after every decision.

OpenSpiel's conventions, as these tests pin them down:

* Chance nodes roll the dice: outcome ``o`` of a roll of the dice at positions ``i_0 < i_1 < ...`` (the
  pending re-roll bits) sets die ``i_k`` to ``(o // 6**k) % 6 + 1``.
* Player actions: ``0`` ends the rolling (straight to scoring), ``1..31`` re-roll the dice whose bits are set
  (over OpenSpiel's own unsorted dice), ``32 + c`` scores OpenSpiel's category ``c``. After the third roll
  only score actions are legal.
* Returns: 2+ players: the players with the highest total share +1, the others share -1 (all tied: 0), as
  :func:`yacht_env.multiplayer.win_rewards`; 1 player: the total / 305 (its largest possible total).
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")
pytest.importorskip("pettingzoo")

from yacht_env import rules as R  # noqa: E402
from yacht_env.game import game_streams  # noqa: E402
from yacht_env.multiplayer import raw_env, win_rewards  # noqa: E402

KNIZIA = R.get_rules("knizia")
SCORES = R.score_table(KNIZIA)
KEEP_ALL_AND_SCORE = 0  # OpenSpiel: "Keep all (proceed to scoring)"
FIRST_SCORE_ACTION = 32
OPENSPIEL_MAX_TOTAL = 305  # OpenSpiel's normalizer of a solo game's return

# OpenSpiel's category names (its score actions' "Score in <name>", its state string's sheet) -> ours.
ACTION_NAMES = {
    "Ones": "ones",
    "Twos": "twos",
    "Threes": "threes",
    "Fours": "fours",
    "Fives": "fives",
    "Sixes": "sixes",
    "Chance": "choice",
    "Four of a Kind": "four_of_a_kind",
    "Full House": "full_house",
    "Small Straight": "little_straight",
    "Large Straight": "big_straight",
    "Yacht": "yacht",
}
SHEET_NAMES = {
    "Ones": "ones",
    "Twos": "twos",
    "Threes": "threes",
    "Fours": "fours",
    "Fives": "fives",
    "Sixes": "sixes",
    "Chance": "choice",
    "4Kind": "four_of_a_kind",
    "Full": "full_house",
    "SmStr": "little_straight",
    "LgStr": "big_straight",
    "Yacht": "yacht",
}

# (players, games, seed): 2,000 games in all.
GAME_COUNTS = [(1, 600, 101), (2, 600, 102), (3, 450, 103), (5, 350, 105)]


def _load(players: int):
    return pyspiel.load_game("yacht", {"players": players})


def _score_actions(game) -> dict[int, int]:
    """Our category index -> OpenSpiel's score action, read from OpenSpiel's action names."""
    state = game.new_initial_state()
    ours = {}
    for action in range(FIRST_SCORE_ACTION, game.num_distinct_actions()):
        name = state.action_to_string(0, action).removeprefix("Score in ")
        ours[KNIZIA.categories.index(ACTION_NAMES[name])] = action
    return ours


def _outcome(fresh) -> int:
    """The chance outcome dealing ``fresh`` to the pending dice, lowest position first."""
    return sum((int(v) - 1) * R.NUM_FACES**k for k, v in enumerate(fresh))


_SHEET_ENTRY = re.compile(r"^  (\w+): (\d+)$", re.MULTILINE)
_SHEET_INDEX = {name: KNIZIA.categories.index(ours) for name, ours in SHEET_NAMES.items()}


def _parse(state) -> tuple[int, list[int], int, np.ndarray, list[int]]:
    """OpenSpiel's state string: (turn player, dice in its order, rolls made, sheets (P, 12) with -1 open, totals)."""
    header, *players = str(state).split("\nPlayer ")
    lines = header.splitlines()
    turn_player = int(lines[0].removeprefix("Turn player: "))
    dice = [int(v) for v in lines[1].removeprefix("Dice: ").split()]
    rolls_made = int(lines[2].removeprefix("Roll: ").split("/")[0])
    sheets = np.full((len(players), KNIZIA.num_categories), -1)
    totals = []
    for p, block in enumerate(players):
        assert block.startswith(f"{p} (total: ")
        totals.append(int(block[block.index(": ") + 2 : block.index("):")]))
        for name, points in _SHEET_ENTRY.findall(block):
            sheets[p, _SHEET_INDEX[name]] = int(points)
    return turn_player, dice, rolls_made, sheets, totals


def _open_picks(state, score_actions: dict[int, int]) -> set[int]:
    """Our category indices OpenSpiel lets the player on turn score (from its rolling phase: after action 0)."""
    legal = state.legal_actions()
    if legal == list(range(FIRST_SCORE_ACTION)):
        state = state.clone()
        state.apply_action(KEEP_ALL_AND_SCORE)
        legal = state.legal_actions()
    by_action = {action: k for k, action in score_actions.items()}
    return {by_action[action] for action in legal}


def test_category_names_map_one_to_one() -> None:
    assert sorted(_score_actions(_load(2))) == list(range(KNIZIA.num_categories))
    assert sorted(SHEET_NAMES.values()) == sorted(KNIZIA.categories)


def test_chance_outcomes_encode_the_pending_dice_lowest_position_first() -> None:
    state = _load(1).new_initial_state()
    outcomes = state.chance_outcomes()
    assert len(outcomes) == R.NUM_FACES**R.NUM_DICE
    assert all(p == pytest.approx(1 / R.NUM_FACES**R.NUM_DICE) for _, p in outcomes)
    for dice in itertools.product(range(1, R.NUM_FACES + 1), repeat=R.NUM_DICE):
        assert state.action_to_string(pyspiel.PlayerId.CHANCE, _outcome(dice)) == f"Roll: {','.join(map(str, dice))}"
    state.apply_action(_outcome([6, 5, 4, 3, 2]))
    state.apply_action(0b10110)  # re-roll dice 1, 2 and 4
    assert len(state.chance_outcomes()) == R.NUM_FACES**3
    state.apply_action(_outcome([1, 2, 3]))
    assert _parse(state)[1] == [6, 1, 2, 3, 3]


def test_every_roll_scores_as_the_knizia_preset() -> None:
    """Every sorted roll (dealt unsorted) in every category: OpenSpiel's points equal ``score_table("knizia")``."""
    game = _load(1)
    score_actions = _score_actions(game)
    rng = np.random.default_rng(0)
    for roll, dice in enumerate(R.ROLLS):
        state = game.new_initial_state()
        state.apply_action(_outcome(rng.permutation(dice)))
        state.apply_action(KEEP_ALL_AND_SCORE)
        for k, action in score_actions.items():
            scored = state.clone()
            scored.apply_action(action)
            assert _parse(scored)[3][0, k] == SCORES[roll, k], (dice.tolist(), KNIZIA.categories[k])


@pytest.mark.parametrize(("players", "games", "seed"), GAME_COUNTS)
def test_random_games_match_openspiel(players: int, games: int, seed: int) -> None:
    """Random legal play in the AEC env, mirrored in OpenSpiel on the same dice: every decision agrees."""
    game = _load(players)
    score_actions = _score_actions(game)
    rng = np.random.default_rng(seed)
    envs = {mode: raw_env(num_players=players, rules="knizia", reward=mode) for mode in ("score", "win")}
    decisions = 0
    for g in range(games):
        mode = ("score", "win")[g % 2]
        aec = envs[mode]
        dice_stream = game_streams(seed, range(g * players, (g + 1) * players), KNIZIA)
        aec.reset(options={"dice_stream": dice_stream})
        state = game.new_initial_state()
        state.apply_action(_outcome(dice_stream[0, 0, 0]))
        turns = [0] * players
        rerolled: dict[int, int] = {}  # OpenSpiel's dice positions just re-rolled -> the stream's fresh values
        while True:
            seat = aec.possible_agents.index(aec.agent_selection)
            observation, _, termination, truncation, info = aec.last()
            assert not (termination or truncation)
            mask = observation["action_mask"]
            rolls_left = info["rolls_left"]
            turn_player, os_dice, rolls_made, os_sheets, _ = _parse(state)
            assert state.current_player() == turn_player == seat == info["player_on_turn"]
            assert sorted(os_dice) == info["dice"].tolist()
            assert {i: os_dice[i] for i in rerolled} == rerolled
            assert rolls_made == R.ROLLS_PER_TURN - rolls_left
            assert np.array_equal(os_sheets, info["scores"])
            keeps_legal = state.legal_actions() == list(range(FIRST_SCORE_ACTION))
            assert keeps_legal == bool(mask[: R.NUM_KEEPS].any()) == (rolls_left > 0)
            assert _open_picks(state, score_actions) == set(np.flatnonzero(mask[R.PICK_OFFSET :]).tolist())

            action = int(rng.choice(np.flatnonzero(mask)))
            decisions += 1
            aec.step(action)
            if action < R.PICK_OFFSET:
                kept = [int(v) for i, v in enumerate(info["dice"]) if action >> i & 1]
                reroll = 0
                for i, v in enumerate(os_dice):
                    if v in kept:
                        kept.remove(v)
                    else:
                        reroll |= 1 << i
                state.apply_action(reroll)
                fresh = dice_stream[seat, turns[seat], R.ROLLS_PER_TURN - rolls_left, : reroll.bit_count()]
                state.apply_action(_outcome(fresh))
                rerolled = dict(zip([i for i in range(R.NUM_DICE) if reroll >> i & 1], fresh.tolist(), strict=True))
                assert aec.rewards == dict.fromkeys(aec.agents, 0.0)
                continue

            k = action - R.PICK_OFFSET
            rerolled = {}
            if keeps_legal:
                state.apply_action(KEEP_ALL_AND_SCORE)
            state.apply_action(score_actions[k])
            points = _parse(state)[3][seat, k]
            assert aec.infos[aec.agents[0]]["scores"][seat, k] == points == SCORES[R.roll_index(info["dice"]), k]
            turns[seat] += 1
            if state.is_terminal():
                break
            picker_reward = float(points) if mode == "score" else 0.0
            assert [aec.rewards[agent] for agent in aec.possible_agents] == [
                picker_reward if p == seat else 0.0 for p in range(players)
            ]
            state.apply_action(_outcome(dice_stream[(seat + 1) % players, turns[(seat + 1) % players], 0]))

        # The game is over in both, after every player's 12th pick.
        assert turns == [KNIZIA.num_turns] * players
        assert all(aec.terminations.values()) and not any(aec.truncations.values())
        _, _, _, os_sheets, os_totals = _parse(state)
        final = aec.infos[aec.agents[0]]
        totals = final["totals"]
        assert np.array_equal(os_sheets, final["scores"])
        assert os_totals == totals.tolist() == os_sheets.sum(axis=1).tolist()
        assert final["winners"].tolist() == [int(t == max(os_totals)) for t in os_totals]
        returns = state.returns()
        if players == 1:
            assert returns == [totals[0] / OPENSPIEL_MAX_TOTAL]
            assert win_rewards(totals).tolist() == [0.0]
        else:
            assert win_rewards(totals).tolist() == returns
        if mode == "win":
            assert [aec.rewards[agent] for agent in aec.possible_agents] == win_rewards(totals).tolist()
        else:
            assert [aec.rewards[agent] for agent in aec.possible_agents] == [
                float(points) if p == seat else 0.0 for p in range(players)
            ]
    assert decisions > games * players * KNIZIA.num_turns
