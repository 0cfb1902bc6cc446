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

Then the project's own OpenSpiel game, ``yacht_rl`` (:mod:`yacht_env.openspiel`): its sizes for every preset and table
size, OpenSpiel's own consistency test (``pyspiel.random_sim_test``) on it, its chance outcomes and returns, its
observations against the PettingZoo env's on the same dice, ``knizia`` walked against OpenSpiel's ``yacht`` chance
node for chance node (the same outcome probabilities, legal moves, sheets and returns, the encodings mapped), and
OpenSpiel's ``MCTSBot`` and ``evaluate_bots`` playing it unchanged.
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
GAME_COUNTS = [(1, 600, 101), (2, 600, 102), (3, 450, 103), pytest.param(5, 350, 105, marks=pytest.mark.slow)]


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


# ------------------------------------------------------------------------------------------------------------------
# yacht_rl: the project's own OpenSpiel game (yacht_env.openspiel)
# ------------------------------------------------------------------------------------------------------------------
import yacht_env.openspiel as OS  # noqa: E402  (registers yacht_rl)
from yacht_env import chance  # noqa: E402
from yacht_env.encoding import ObservationEncoder  # noqa: E402

CHANCE = pyspiel.PlayerId.CHANCE


def _load_ours(rules: str = "standard", players: int = 2, reward: str = "win"):
    return pyspiel.load_game(f"yacht_rl(rules={rules},players={players},reward={reward})")


def _random_step(state, rng) -> None:
    """One seeded random move: a chance outcome by its probability, else a uniformly random legal action."""
    if state.is_chance_node():
        outcomes, probabilities = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(int(rng.choice(outcomes, p=probabilities)))
    else:
        state.apply_action(int(rng.choice(state.legal_actions())))


def _random_game(game, rng):
    state = game.new_initial_state()
    while not state.is_terminal():
        _random_step(state, rng)
    return state


# (rules, players): observation size, information-state size, actions, decisions at most.
SIZES = [
    ("standard", 1, 64, 51 + 14 + 1, 44, 36),
    ("standard", 2, 79, 81, 44, 72),
    ("knizia", 5, 64 + 4 * 13 + 2, 51 + 5 * 14 + 5, 44, 180),
    ("yahtzee", 2, 69 + 17 + 2, 90, 45, 78),  # an opponent: 13 open boxes, upper (2), the Yahtzee box, total
    ("yatzy", 10, 72 + 9 * 18 + 2, 54 + 10 * 19 + 10, 47, 450),
]


@pytest.mark.parametrize(("rules", "players", "observation", "info_state", "actions", "length"), SIZES)
def test_the_registered_game_has_the_presets_sizes(rules, players, observation, info_state, actions, length):
    game = _load_ours(rules, players)
    assert game.get_type().short_name == "yacht_rl" and game.num_players() == players
    assert game.get_parameters() == {"rules": rules, "players": players, "reward": "win"}
    assert game.num_distinct_actions() == actions == R.get_rules(rules).num_actions
    assert game.max_chance_outcomes() == R.NUM_ROLLS
    assert game.observation_tensor_shape() == [observation]
    assert game.information_state_tensor_shape() == [info_state]
    assert game.max_game_length() == length
    assert game.max_chance_nodes_in_history() == length  # a first roll and two re-rolls a turn at most
    kind = pyspiel.GameType
    assert game.get_type().chance_mode == kind.ChanceMode.EXPLICIT_STOCHASTIC
    assert game.get_type().information == kind.Information.PERFECT_INFORMATION
    assert game.get_type().reward_model == kind.RewardModel.TERMINAL


def test_every_preset_and_table_size_loads():
    for rules in R.PRESETS:
        for players in range(1, OS.MAX_PLAYERS + 1):
            game = OS.YachtOpenSpielGame({"rules": rules, "players": players})
            assert game.num_players() == players and game.rules == R.get_rules(rules)
    assert str(pyspiel.load_game("yacht_rl")) == "yacht_rl(players=2,reward=win,rules=standard)"


@pytest.mark.parametrize(
    ("players", "reward", "utility", "low", "high"),
    [
        (1, "win", "GENERAL_SUM", 0.0, 1.0),
        (1, "score", "GENERAL_SUM", 0.0, 1.0),
        (2, "win", "ZERO_SUM", -1.0, 1.0),
        (3, "score", "GENERAL_SUM", 0.0, 1.0),
    ],
)
def test_the_utility_follows_the_reward(players, reward, utility, low, high):
    game = _load_ours("standard", players, reward)
    assert game.get_type().utility == getattr(pyspiel.GameType.Utility, utility)
    assert (game.min_utility(), game.max_utility()) == (low, high)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"rules": "nope"}, "rules must be a preset name"),
        ({"rules": 3}, "rules must be a preset name"),
        ({"players": 0}, r"players must be an int in 1\.\.10, got 0"),
        ({"players": 11}, r"players must be an int in 1\.\.10, got 11"),
        ({"players": True}, "players must be an int"),
        ({"players": 2.0}, "players must be an int"),
        ({"reward": "points"}, r"reward must be one of \['win', 'score'\]"),
        ({"seats": 2}, "unknown yacht_rl parameter 'seats'"),
    ],
)
def test_a_bad_parameter_is_one_value_error(params, message):
    with pytest.raises(ValueError, match=message):
        OS.YachtOpenSpielGame(params)


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("rules=nope", ValueError, "rules must be a preset name"),
        ("players=11", ValueError, r"players must be an int in 1\.\.10, got 11"),
        ("reward=points", ValueError, r"reward must be one of \['win', 'score'\]"),
        # OpenSpiel checks the names and types against the game's parameter specification first.
        ("rules=3", pyspiel.SpielError, "Wrong type for parameter rules"),
        ("seats=2", pyspiel.SpielError, "Unknown parameter 'seats'"),
    ],
)
def test_load_game_refuses_a_bad_parameter(spec, error, message):
    with pytest.raises(error, match=message):
        pyspiel.load_game(f"yacht_rl({spec})")


@pytest.mark.parametrize("rules", sorted(R.PRESETS))
def test_openspiels_random_sim_test_passes(rules):
    """OpenSpiel's own consistency checks (clone, serialise, legal actions and masks, chance outcomes, returns)."""
    for players, reward in ((1, "win"), (2, "win")):
        pyspiel.random_sim_test(_load_ours(rules, players, reward), num_sims=1, serialize=True, verbose=False)


@pytest.mark.slow
@pytest.mark.parametrize("rules", sorted(R.PRESETS))
def test_openspiels_random_sim_test_passes_at_every_table(rules):
    for players, reward in ((1, "score"), (3, "win"), (4, "score"), (10, "win")):
        pyspiel.random_sim_test(_load_ours(rules, players, reward), num_sims=1, serialize=True, verbose=False)


def test_chance_outcomes_are_the_sorted_rolls_with_their_exact_probabilities():
    state = _load_ours("yahtzee", 2).new_initial_state()
    assert state.current_player() == CHANCE
    outcomes = state.chance_outcomes()
    # Five fresh dice: every sorted roll, with (ordered dice giving it) / 7776.
    assert [roll for roll, _ in outcomes] == list(range(R.NUM_ROLLS))
    counts = chance.OUTCOME_COUNTS[0]
    assert [p for _, p in outcomes] == [int(c) / 6**5 for c in counts]
    assert (
        sum(counts) == 6**5
        and outcomes[0] == (0, 1 / 7776)
        and outcomes[R.roll_index([1, 2, 3, 4, 5])][1] == 120 / 7776
    )
    state.apply_action(R.roll_index([2, 2, 5, 6, 6]))
    assert state.action_to_string(CHANCE, R.roll_index([2, 2, 5, 6, 6])) == "Roll 2 2 5 6 6"
    keep_sixes = 0b11000
    assert state.action_to_string(0, keep_sixes) == "Keep 6 6"
    state.apply_action(keep_sixes)
    assert state.current_player() == CHANCE
    outcomes = dict(state.chance_outcomes())
    assert len(outcomes) == 56 and all(R.ROLL_COUNTS[roll, 5] >= 2 for roll in outcomes)  # 3 dice: 56 multisets
    assert outcomes[R.roll_index([6, 6, 6, 6, 6])] == 1 / 216 and outcomes[R.roll_index([1, 2, 3, 6, 6])] == 6 / 216
    history = state.history()
    with pytest.raises(ValueError, match=r"roll \(1, 1, 1, 1, 1\) cannot follow keeping \(6, 6\)"):
        state.apply_action(0)
    assert state.history() == history and state.current_player() == CHANCE
    state.apply_action(R.roll_index([6, 6, 6, 6, 6]))
    assert str(state).splitlines()[0] == "Player 0 on turn: dice 6 6 6 6 6; 1 re-roll(s) left"


def test_an_illegal_action_is_one_value_error_and_changes_nothing():
    state = _load_ours().new_initial_state()
    state.apply_action(R.roll_index([1, 1, 3, 4, 6]))
    before = (str(state), state.history())
    with pytest.raises(ValueError, match="action 31 keeps all five dice"):
        state.apply_action(R.KEEP_ALL)
    with pytest.raises(ValueError, match="not canonical|keeps the same dice"):
        state.apply_action(0b00010)  # the second 1: the same kept multiset as 0b00001
    assert (str(state), state.history()) == before
    assert 0b00010 not in state.legal_actions() and 0b00001 in state.legal_actions()


def test_returns_are_the_documented_convention():
    """``win`` at a table: ``win_rewards`` of the totals; ``score``, and a lone player: total / the largest total."""
    rng = np.random.default_rng(11)
    for rules, players, reward in [
        ("standard", 3, "win"),
        ("yahtzee", 2, "score"),
        ("knizia", 1, "win"),
        ("yatzy", 1, "score"),
    ]:
        game = _load_ours(rules, players, reward)
        state = game.new_initial_state()
        while not state.is_terminal():
            assert state.returns() == [0.0] * players and state.rewards() == [0.0] * players
            _random_step(state, rng)
        totals = state.game_state().totals()
        if reward == "win" and players > 1:
            assert state.returns() == win_rewards(totals).tolist() and sum(state.returns()) == pytest.approx(0)
        else:
            assert state.returns() == (totals / R.max_total(R.get_rules(rules))).tolist()
        assert state.returns() == state.rewards() and state.current_player() == pyspiel.PlayerId.TERMINAL
        assert state.legal_actions() == []
        if reward == "score" or players == 1:
            assert [game.max_total * r for r in state.returns()] == pytest.approx(totals.tolist())


def test_a_tie_splits_the_win():
    assert win_rewards(np.array([150, 150, 120])).tolist() == [0.5, 0.5, -1.0]
    assert win_rewards(np.array([150, 150])).tolist() == [0.0, 0.0]


def test_clone_and_serialisation_keep_the_whole_state():
    game = _load_ours("yahtzee", 3)
    rng = np.random.default_rng(5)
    state = game.new_initial_state()
    for step in range(120):
        clone = state.clone()
        text = pyspiel.serialize_game_and_state(game, state)
        _, restored = pyspiel.deserialize_game_and_state(text)
        for other in (clone, restored):
            assert (str(other), other.history(), other.current_player()) == (
                str(state),
                state.history(),
                state.current_player(),
            )
            if not state.is_chance_node():
                assert other.legal_actions() == state.legal_actions()
                assert other.observation_tensor(step % 3) == state.observation_tensor(step % 3)
                assert other.information_state_tensor(0) == state.information_state_tensor(0)
        _random_step(clone, rng)  # a clone plays on alone
        assert str(clone) != str(state) or clone.history() != state.history()
        _random_step(state, np.random.default_rng(step))
    assert len(text) < 2000  # the state is pickled as its history, not its tables


def test_the_game_state_is_a_copy_and_refused_at_a_chance_node():
    state = _load_ours().new_initial_state()
    with pytest.raises(ValueError, match="a chance node"):
        state.game_state()
    state.apply_action(3)
    table = state.game_state()
    table.play(R.PICK_OFFSET)
    assert state.game_state().players[0].open_mask == R.get_rules("standard").all_open


@pytest.mark.parametrize(("rules", "players", "seed"), [("standard", 1, 0), ("standard", 2, 1), ("yahtzee", 3, 2)])
def test_observations_are_the_pettingzoo_envs_on_the_same_dice(rules, players, seed):
    """The seat on turn sees what the AEC env shows it; a seat off turn the same without dice; the information state is
    the AEC env's ``state()``, the dice part zero while no dice are showing.
    """
    game = _load_ours(rules, players)
    aec = raw_env(num_players=players, rules=rules, reward="win")
    dice_size = ObservationEncoder(rules).layout["open"].start
    solo = ObservationEncoder(rules).size
    rng = np.random.default_rng(seed)
    for g in range(2):
        aec.reset(options={"dice_stream": game_streams(seed, range(g * players, (g + 1) * players), rules)})
        state = game.new_initial_state()
        assert state.information_state_tensor(0)[:dice_size] == [0.0] * dice_size
        while True:
            seat = aec.possible_agents.index(aec.agent_selection)
            if state.is_chance_node():
                state.apply_action(R.roll_index(aec.infos[aec.agent_selection]["dice"]))
            assert state.current_player() == seat
            observations = {p: np.asarray(state.observation_tensor(p), dtype=np.float32) for p in range(players)}
            for p, agent in enumerate(aec.possible_agents):
                theirs = aec.observe(agent)["observation"][: solo if players == 1 else None]
                if p == seat:
                    assert np.array_equal(observations[p], theirs)
                else:
                    assert np.array_equal(observations[p][dice_size:], theirs[dice_size:])
                    assert not observations[p][:dice_size].any()
            assert np.array_equal(np.asarray(state.information_state_tensor(seat), dtype=np.float32), aec.state())
            assert state.information_state_tensor(0) == state.information_state_tensor(players - 1)
            mask = aec.observe(aec.agent_selection)["action_mask"]
            assert state.legal_actions() == np.flatnonzero(mask).tolist()
            action = int(rng.choice(np.flatnonzero(mask)))
            aec.step(action)
            state.apply_action(action)
            if state.is_terminal():
                break
            if state.is_chance_node():
                assert not np.asarray(state.information_state_tensor(0))[:dice_size].any()
        assert all(aec.terminations.values())
        assert np.array_equal(state.game_state().totals(), aec.infos[aec.agents[0]]["totals"])
        totals = aec.infos[aec.agents[0]]["totals"]
        expected = [aec.rewards[agent] for agent in aec.possible_agents]  # the AEC env's win rewards
        assert state.returns() == (expected if players > 1 else [totals[0] / R.max_total(R.get_rules(rules))])
        assert not np.asarray(state.observation_tensor(0))[:dice_size].any()


def _roll_distribution(state, dice: list[int], pending: list[int]) -> np.ndarray:
    """OpenSpiel's chance outcomes summed by the sorted roll each gives: (252,) probabilities."""
    outcomes, probabilities = (np.array(x) for x in zip(*state.chance_outcomes(), strict=True))
    rolled = np.tile(dice, (len(outcomes), 1))
    for k, position in enumerate(pending):
        rolled[:, position] = outcomes // R.NUM_FACES**k % R.NUM_FACES + 1
    distribution = np.zeros(R.NUM_ROLLS)
    np.add.at(distribution, R.roll_index(rolled), probabilities)
    return distribution


def _kept_multisets(dice: list[int]) -> set[tuple[int, ...]]:
    """What OpenSpiel's 31 re-roll actions keep of its dice (positions not re-rolled), as sorted tuples."""
    return {tuple(sorted(v for i, v in enumerate(dice) if not m >> i & 1)) for m in range(1, 2**R.NUM_DICE)}


def _reroll_mask(dice: list[int], kept: tuple[int, ...]) -> int:
    """OpenSpiel's re-roll action keeping ``kept`` of its dice: every other position re-rolled."""
    left, mask = list(kept), 0
    for i, v in enumerate(dice):
        if v in left:
            left.remove(v)
        else:
            mask |= 1 << i
    return mask


@pytest.mark.parametrize(
    ("players", "sort_dice", "games", "seed"),
    [(1, False, 6, 21), (2, False, 3, 22), (2, True, 3, 23), (4, False, 1, 24)],
)
def test_knizia_is_openspiels_yacht_chance_node_for_chance_node(players, sort_dice, games, seed):
    """Seeded games walked in both: at every chance node the same distribution over sorted rolls (OpenSpiel's ordered
    outcomes summed) and the same roll falls; at every decision the same player, dice, rolls, sheets, totals, kept
    multisets and boxes; then the same returns. With ``sort_dice`` OpenSpiel's re-roll action is our keep-mask's
    complement over the same sorted dice.
    """
    ours = _load_ours("knizia", players)
    theirs = pyspiel.load_game("yacht", {"players": players, "sort_dice": sort_dice})
    score_actions = _score_actions(theirs)
    rng = np.random.default_rng(seed)
    chance_nodes = decisions = 0
    for _ in range(games):
        a, b = ours.new_initial_state(), theirs.new_initial_state()
        pending = list(range(R.NUM_DICE))  # OpenSpiel's dice positions about to be rolled
        while not a.is_terminal():
            assert not b.is_terminal() and a.current_player() == b.current_player()
            assert a.returns() == b.returns() == [0.0] * players
            if a.is_chance_node():
                assert b.is_chance_node()
                dice = _parse(b)[1]
                distribution = np.zeros(R.NUM_ROLLS)
                for roll, probability in a.chance_outcomes():
                    distribution[roll] = probability
                assert np.abs(distribution - _roll_distribution(b, dice, pending)).max() < 1e-12
                roll = int(rng.choice(R.NUM_ROLLS, p=distribution / distribution.sum()))
                fresh = list(R.ROLL_TUPLES[roll])
                for i, v in enumerate(dice):
                    if i not in pending:
                        fresh.remove(v)
                b.apply_action(_outcome(fresh))
                a.apply_action(roll)
                assert sorted(_parse(b)[1]) == list(R.ROLL_TUPLES[roll])
                pending, chance_nodes = [], chance_nodes + 1
                continue
            table = a.game_state()
            game = table.on_turn
            _, dice, rolls_made, sheets, totals = _parse(b)
            assert sorted(dice) == list(R.ROLL_TUPLES[game.roll]) and (dice == sorted(dice) or not sort_dice)
            assert rolls_made == R.ROLLS_PER_TURN - game.rolls_left
            assert np.array_equal(sheets, table.sheets) and totals == table.totals().tolist()
            legal = a.legal_actions()
            keeps = [x for x in legal if x < R.PICK_OFFSET]
            rolling = b.legal_actions() == list(range(FIRST_SCORE_ACTION))
            assert rolling == bool(keeps) == (game.rolls_left > 0)
            if rolling:
                assert {R.KEPT[R.KEEP[game.roll, k]] for k in keeps} == _kept_multisets(dice) - {tuple(sorted(dice))}
            assert _open_picks(b, score_actions) == {x - R.PICK_OFFSET for x in legal if x >= R.PICK_OFFSET}
            action = int(rng.choice(legal))
            if action < R.PICK_OFFSET:
                mask = _reroll_mask(dice, R.KEPT[R.KEEP[game.roll, action]])
                if sort_dice:
                    assert mask == R.KEEP_ALL ^ action  # the same dice, bit for bit
                b.apply_action(mask)
                pending = [i for i in range(R.NUM_DICE) if mask >> i & 1]
            else:
                if rolling:
                    b.apply_action(KEEP_ALL_AND_SCORE)
                b.apply_action(score_actions[action - R.PICK_OFFSET])
                pending = list(range(R.NUM_DICE))
            a.apply_action(action)
            decisions += 1
        assert b.is_terminal()
        _, _, _, sheets, totals = _parse(b)
        assert np.array_equal(sheets, a.game_state().sheets) and totals == a.game_state().totals().tolist()
        assert a.returns() == b.returns()
        if players == 1:
            assert a.returns() == [totals[0] / OPENSPIEL_MAX_TOTAL]
    assert chance_nodes > games * players * KNIZIA.num_turns and decisions > games * players * KNIZIA.num_turns


def test_openspiels_mcts_bot_plays_it_unchanged():
    """OpenSpiel's ``MCTSBot`` with random rollouts, seated with a uniform random bot by ``evaluate_bots``, from a late
    position of a two-player game to the end; and alone, it takes the obvious box.
    """
    from open_spiel.python.algorithms import evaluate_bots, mcts
    from open_spiel.python.bots import uniform_random

    game = _load_ours("standard", 2)
    rng = np.random.default_rng(3)
    state = game.new_initial_state()
    while state.is_chance_node() or bin(state.game_state().players[1].open_mask).count("1") > 2:
        _random_step(state, rng)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(0))
    bots = [
        mcts.MCTSBot(game, uct_c=2.0, max_simulations=12, evaluator=evaluator, random_state=np.random.RandomState(1)),
        uniform_random.UniformRandomBot(1, np.random.RandomState(2)),
    ]
    returns = evaluate_bots.evaluate_bots(state, bots, np.random.RandomState(4))
    assert state.is_terminal() and returns == win_rewards(state.game_state().totals()).tolist()

    # Alone, Yacht and Choice open, five sixes showing: Yacht's 50 now beats Choice's 30.
    solo = _load_ours("standard", 1)
    state = solo.new_initial_state()
    for k, category in enumerate(R.get_rules("standard").categories):
        if category in ("yacht", "choice"):
            continue
        state.apply_action(0)  # 1 1 1 1 1
        state.apply_action(R.PICK_OFFSET + k)
    state.apply_action(R.roll_index([6] * 5))
    bot = mcts.MCTSBot(solo, uct_c=2.0, max_simulations=100, evaluator=evaluator, random_state=np.random.RandomState(5))
    yacht = R.PICK_OFFSET + R.get_rules("standard").categories.index("yacht")
    assert state.action_to_string(0, bot.step(state)) == state.action_to_string(0, yacht) == "Score yacht"


def test_a_missing_openspiel_is_one_import_error_naming_the_extra(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "pyspiel", None)
    monkeypatch.delitem(sys.modules, "yacht_env.openspiel")
    with pytest.raises(ImportError, match=r"pip install 'yacht-rl\[openspiel\]'"):
        importlib.import_module("yacht_env.openspiel")
