"""The game's model for planners (:mod:`yacht_env.chance`): afterstates, chance outcomes, steps by an outcome.

* The probabilities are exact: each kept multiset's counts, recounted here by brute force over the ordered dice,
  sum to ``6 ** rolled``; the lists sum to 1 as fractions.
* Every roll and keep-mask (exhaustive): the afterstate keeps what the mask keeps, and the outcomes are exactly
  the rolls that contain it.
* Stepping by the outcome the dice stream gives is the core's step and the envs' (every field, many seeded games,
  every preset, 1, 2 and 4 players, one game and batches).
* The probabilities match the envs' own sampled frequencies: a chi-square test of the randomised probability
  integral transform (uniform on [0, 1] exactly when the model is right) over thousands of seeded steps, every
  preset, 1, 2 and 4 players.
* OpenSpiel's ``yacht`` gives the same outcomes with the same probabilities.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from yacht_env import YachtEnv, chance
from yacht_env import rules as R
from yacht_env.game import GameState, TableState, draw_stream, game_streams
from yacht_env.vector import YachtVectorEnv

PRESETS = tuple(R.PRESETS)
TABLE_SIZES = (1, 2, 4)
GAME_FIELDS = ("roll", "rolls_left", "open_mask", "turn", "total", "upper", "armed", "sheet", "stream", "mask")
SIGNIFICANCE = 0.001  # each goodness-of-fit test, seeded: a fixed outcome, wrong about once in a thousand seeds


def brute_force_counts() -> np.ndarray:
    """``counts[K, r]``: ordered re-rolls around ``KEPT[K]`` that give roll ``r``, counted one by one."""
    index = {roll: r for r, roll in enumerate(R.ROLL_TUPLES)}
    counts = np.zeros((R.NUM_KEPT, R.NUM_ROLLS), dtype=np.int64)
    for k, kept in enumerate(R.KEPT):
        for fresh in itertools.product(range(1, R.NUM_FACES + 1), repeat=R.NUM_DICE - len(kept)):
            counts[k, index[tuple(sorted(kept + fresh))]] += 1
    return counts


def test_outcome_counts_are_exact_and_the_solvers_table():
    counts = brute_force_counts()
    assert np.array_equal(chance.OUTCOME_COUNTS, counts)
    assert np.array_equal(counts.sum(axis=1), 6 ** (5 - chance.KEPT_SIZE))
    assert np.array_equal(chance.DENOMINATOR, 6 ** (5 - chance.KEPT_SIZE))
    assert np.array_equal(counts / chance.DENOMINATOR[:, None], R.TRANSITION)  # the same divisions, bit for bit
    assert chance.OUTCOME_COUNTS[0].min() == 1 and chance.OUTCOME_COUNTS[0].max() == 120  # 1-1-1-1-1, 1-2-3-4-5


def in_one_game(rules, roll: int, rolls_left: int = 2, open_mask: int | None = None) -> GameState:
    game = GameState(rules)
    game.start(draw_stream(np.random.default_rng(0), rules))
    game.rolls_left = rolls_left
    if open_mask is not None:
        game.open_mask = open_mask
    game.set_roll(roll)
    return game


def test_every_keep_of_every_roll_keeps_its_dice_and_can_reach_exactly_the_rolls_holding_them():
    rolls, masks = np.nonzero(R.CANONICAL_KEEPS)  # every roll and legal keep-mask, as one batch
    games = GameState("standard", len(rolls))
    games.start(draw_stream(np.random.default_rng(0), "standard", len(rolls)))
    games.set_roll(rolls)
    after = chance.afterstate(games, masks)
    kept = [tuple(int(v) for v in R.ROLLS[r][R.KEEP_BITS[m]]) for r, m in zip(rolls, masks, strict=True)]
    assert [R.KEPT[k] for k in after.kept] == kept
    assert not after.seat.any() and not after.points.any() and (after.state.rolls_left == 1).all()
    holds = np.array([[not (Counter(kept) - Counter(roll)) for roll in R.ROLL_TUPLES] for kept in R.KEPT])
    counts, denominator = chance.outcome_counts(after)
    assert np.array_equal(counts > 0, holds[after.kept])
    assert np.array_equal(counts.sum(axis=1), denominator)
    assert np.array_equal(denominator, [6 ** (5 - len(k)) for k in kept])
    assert np.array_equal(chance.outcome_probabilities(after), counts / denominator[:, None])
    # One game: OpenSpiel's list, the same numbers, summing to 1 as fractions.
    for i in np.random.default_rng(1).choice(len(rolls), size=50, replace=False):
        one = GameState("standard")
        one.start(draw_stream(np.random.default_rng(i), "standard"))
        one.set_roll(int(rolls[i]))
        outcomes = chance.chance_outcomes(chance.afterstate(one, int(masks[i])))
        assert outcomes == [(int(r), int(counts[i, r]) / int(denominator[i])) for r in np.flatnonzero(counts[i])]
        assert sum(Fraction(int(counts[i, r]), int(denominator[i])) for r, _ in outcomes) == 1


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_a_pick_scores_and_deals_the_next_turn_and_the_last_pick_ends_the_game(rules):
    game = in_one_game(rules, int(R.FIVE_OF_A_KIND_ROLLS[5]), rolls_left=1)
    yacht = R.get_rules(rules).five_of_a_kind_category
    after = chance.afterstate(game, R.PICK_OFFSET + yacht)
    assert after.points == 50 and after.kept == 0 and after.is_chance
    assert after.state.turn == 1 and after.state.rolls_left == 2 and after.state.sheet[yacht] == 50
    assert np.array_equal(chance.outcome_probabilities(after), R.TRANSITION[0])
    last = in_one_game(rules, int(R.FIVE_OF_A_KIND_ROLLS[5]), rolls_left=0, open_mask=1 << yacht)
    end = chance.afterstate(last, R.PICK_OFFSET + yacht)
    assert end.kept == chance.NO_CHANCE and not end.is_chance and chance.chance_outcomes(end) == []
    assert not chance.outcome_probabilities(end).any() and chance.outcome_counts(end)[1] == 1
    assert chance.step_outcome(end, None).open_mask == 0
    with pytest.raises(ValueError, match="the game is over"):
        chance.afterstate(chance.step_outcome(end, None), 0)


def test_bad_actions_and_outcomes_are_one_clear_value_error():
    game = in_one_game("standard", 0)
    with pytest.raises(ValueError, match="keeps the same dice as mask 1"):
        chance.afterstate(game, 2)
    with pytest.raises(ValueError, match="out of range"):
        chance.afterstate(game, 44)
    after = chance.afterstate(game, 0b00011)  # keeps 1-1
    with pytest.raises(ValueError, match=r"roll \(2, 2, 2, 2, 2\) cannot follow keeping \(1, 1\)"):
        chance.step_outcome(after, R.roll_index([2, 2, 2, 2, 2]))
    with pytest.raises(ValueError, match="sorted-roll index"):
        chance.step_outcome(after, 252)
    batch = TableState("standard", 2, 3)
    batch.start(draw_stream(np.random.default_rng(1), "standard", 6).reshape(3, 2, -1, 6))
    with pytest.raises(ValueError, match="shape"):
        chance.afterstate(batch, np.zeros(2, dtype=int))
    after = chance.afterstate(batch, np.full(3, R.PICK_OFFSET))
    with pytest.raises(ValueError, match="outcomes must be an int array"):
        chance.step_outcome(after, np.zeros(2, dtype=int))


@pytest.mark.parametrize("kind", ["0-d array", "numpy int"])
def test_one_action_and_outcome_are_what_the_envs_step_takes(kind):
    """One rule for an action given alone (``yacht_env.rules.as_int``): ``Yacht-v0``'s ``step`` plays ``np.array(3)``
    and ``np.int64(3)``, and so do ``afterstate`` and ``step_outcome``; a float or a bool array is still refused."""
    number = np.array if kind == "0-d array" else np.int64
    env = YachtEnv()
    env.reset(seed=0)
    env.step(number(int(np.flatnonzero(env.action_masks())[1])))
    game = in_one_game("standard", 0)
    after = chance.afterstate(game, number(0b00011))
    assert after.kept == chance.afterstate(game, 0b00011).kept
    outcome = R.roll_index([1, 1, 2, 3, 4])
    assert chance.step_outcome(after, number(outcome)).roll == chance.step_outcome(after, outcome).roll == outcome
    for bad in (np.array(3.0), np.array(True), np.array([3])):
        with pytest.raises(ValueError, match="out of range"):
            chance.afterstate(game, bad)
        with pytest.raises(ValueError, match="sorted-roll index"):
            chance.step_outcome(after, bad)


def same_games(a: GameState, b: GameState) -> None:
    for name in GAME_FIELDS:
        assert np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))), name


def same_tables(a: TableState, b: TableState) -> None:
    assert np.array_equal(a.current, b.current)
    if a.num_tables is None:
        for x, y in zip(a.players, b.players, strict=True):
            same_games(x, y)
    else:
        same_games(a.players, b.players)


def seat_roll(state, seat):
    return state.players[seat].roll if state.num_tables is None else state.players.roll[seat]


@pytest.mark.parametrize("rules", PRESETS)
@pytest.mark.parametrize("num_players", TABLE_SIZES)
def test_stepping_by_the_streams_outcome_is_the_cores_step(rules, num_players):
    """One table and a batch of tables, random legal play: afterstate then the outcome the core dealt = the core."""
    rng = np.random.default_rng(num_players)
    one = TableState(rules, num_players)
    one.start(draw_stream(rng, rules, num_players))
    tables = 8
    batch = TableState(rules, num_players, tables)
    batch.start(draw_stream(rng, rules, tables * num_players).reshape(tables, num_players, -1, 6))
    first = np.arange(tables) * num_players
    for _ in range(num_players * R.get_rules(rules).num_turns * 3):
        if one.players[-1].open_mask:
            action = int(rng.choice(np.flatnonzero(one.mask)))
            after = chance.afterstate(one, action)
            points, over = one.play(action)
            assert after.points == points and after.is_chance == (not over)
            if not over:
                assert after.seat == one.current
                probabilities = chance.outcome_probabilities(after)
                assert probabilities[seat_roll(one, after.seat)] > 0
            same_tables(chance.step_outcome(after, seat_roll(one, after.seat) if not over else None), one)
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in batch.mask])
        after = chance.afterstate(batch, actions)
        live = batch.players.open_mask[first + num_players - 1] != 0
        points, over = batch.play(actions, live)
        assert np.array_equal(after.points, points) and np.array_equal(after.is_chance, live & ~over)
        outcomes = batch.players.roll[first + np.asarray(after.seat)]
        assert (chance.outcome_probabilities(after)[np.arange(tables), outcomes][after.is_chance] > 0).all()
        same_tables(chance.step_outcome(after, outcomes), batch)
    assert one.players[-1].open_mask == 0


@pytest.mark.parametrize("rules", PRESETS)
def test_step_outcome_is_the_envs_step_when_the_dice_fall_that_way(rules):
    """Yacht-v0 and the vector env: ``step_outcome(a, o)`` on a twin env equals ``step(a)`` where it dealt ``o``."""
    for seed in range(3):
        env, twin = YachtEnv(rules=rules), YachtEnv(rules=rules)
        _, info = env.reset(seed=seed)
        stream = game_streams(seed + 100, [0], rules)[0]
        stream[0, 0] = info["dice"]  # the same first roll, other dice after it: step_outcome sets them
        twin.reset(options={"dice_stream": stream})
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            outcomes = dict(env.chance_outcomes(action))
            obs, reward, done, truncated, info = env.step(action)
            outcome = None if done else R.roll_index(info["dice"])
            assert done or outcomes[outcome] > 0
            twin_obs, twin_reward, twin_done, twin_truncated, twin_info = twin.step_outcome(action, outcome)
            assert np.array_equal(obs, twin_obs) and reward == twin_reward and done == twin_done and not truncated
            assert info.keys() == twin_info.keys() and all(np.array_equal(info[k], twin_info[k]) for k in info)
    envs, twins = (YachtVectorEnv(6, rules=rules, autoreset_mode=mode) for mode in ("same_step", "same_step"))
    envs.reset(seed=1)
    twins.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(3 * R.get_rules(rules).num_turns + 5):  # past every game's end: the reset keeps the stream's dice
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in envs.action_masks()])
        probabilities = envs.outcome_probabilities(actions)
        step = envs.step(actions)
        outcomes = R.roll_index(step[4]["dice"])
        falls = ~step[2]
        assert (probabilities[np.arange(6), outcomes][falls] > 0).all() and not probabilities[~falls].any()
        twin_step = twins.step_outcome(actions, np.where(falls, outcomes, 0))
        for ours, theirs in zip(step, twin_step, strict=True):
            if isinstance(ours, dict):
                assert ours.keys() == theirs.keys() and all(np.array_equal(ours[k], theirs[k]) for k in ours)
            else:
                assert np.array_equal(ours, theirs)


def test_the_pettingzoo_env_steps_by_an_outcome_as_it_steps():
    pytest.importorskip("pettingzoo")
    from yacht_env.multiplayer import raw_env

    for num_players in (2, 4):
        table, twin = raw_env(num_players=num_players), raw_env(num_players=num_players)
        table.reset(seed=num_players)
        streams = game_streams(num_players, range(num_players), "standard")
        streams[:, 0, 0] = R.ROLLS[[game.roll for game in table.game_state().players]]  # the same first rolls
        twin.reset(options={"dice_stream": streams})
        rng = np.random.default_rng(num_players)
        while table.agents and not table.terminations[table.agent_selection]:
            action = int(rng.choice(np.flatnonzero(table.observe(table.agent_selection)["action_mask"])))
            after = table.afterstate(action)
            table.step(action)
            over = table.terminations[table.agent_selection]
            outcome = None if over else R.roll_index(table.infos[table.agent_selection]["dice"])
            assert after.is_chance == (not over)
            twin.step_outcome(action, outcome)
            assert twin.agent_selection == table.agent_selection and twin.rewards == table.rewards
            # The agent on turn sees the same; a waiting agent's own dice are its stream's (yacht_env.chance).
            agent = table.agent_selection
            ours, theirs = table.observe(agent), twin.observe(agent)
            assert all(np.array_equal(ours[k], theirs[k]) for k in ours)
            assert all(np.array_equal(table.infos[agent][k], twin.infos[agent][k]) for k in table.infos[agent])


def randomised_pit(probabilities: np.ndarray, outcome: int, rng: np.random.Generator) -> float:
    """The randomised probability integral transform: uniform on [0, 1] when ``outcome`` falls by ``probabilities``.

    The rolls are ordered by their probability (then by index), so a model too sure or not sure enough of its likely
    rolls moves the transform to one end.
    """
    order = np.argsort(probabilities, kind="stable")
    rank = int(np.flatnonzero(order == outcome)[0])
    below = probabilities[order[:rank]].sum()
    return float(below + rng.random() * probabilities[outcome])


def sampled_pits(rules: str, num_players: int, model=chance.outcome_probabilities, samples: int = 3000):
    """Seeded env steps of random legal play: each fallen roll's randomised PIT under ``model``, and the turns' first
    rolls. One player plays ``Yacht-v0``, tables the PettingZoo env.
    """
    rng = np.random.default_rng(2026)
    pits, first_rolls = [], []
    seed = 0
    while len(pits) < samples:
        seed += 1
        if num_players == 1:
            env = YachtEnv(rules=rules)
            env.reset(seed=seed)
            done = False
            while not done:
                action = int(rng.choice(np.flatnonzero(env.action_masks())))
                probabilities = model(env.afterstate(action))
                _, _, done, _, info = env.step(action)
                if not done:
                    outcome = R.roll_index(info["dice"])
                    pits.append(randomised_pit(probabilities, outcome, rng))
                    if action >= R.PICK_OFFSET:
                        first_rolls.append(outcome)
            continue
        pytest.importorskip("pettingzoo")
        from yacht_env.multiplayer import raw_env

        table = raw_env(num_players=num_players, rules=rules)
        table.reset(seed=seed)
        while not table.terminations[table.agent_selection]:
            action = int(rng.choice(np.flatnonzero(table.observe(table.agent_selection)["action_mask"])))
            probabilities = model(table.afterstate(action))
            table.step(action)
            if not table.terminations[table.agent_selection]:
                outcome = R.roll_index(table.infos[table.agent_selection]["dice"])
                pits.append(randomised_pit(probabilities, outcome, rng))
                if action >= R.PICK_OFFSET:
                    first_rolls.append(outcome)
    return np.array(pits), np.array(first_rolls)


def uniformity_pvalue(pits: np.ndarray) -> float:
    """A chi-square test of the PITs over 10 equal bins of [0, 1] (9 degrees of freedom)."""
    return stats.chisquare(np.histogram(pits, bins=10, range=(0, 1))[0]).pvalue


@pytest.mark.parametrize("rules", PRESETS)
@pytest.mark.parametrize("num_players", TABLE_SIZES)
def test_the_probabilities_match_the_envs_sampled_frequencies(rules, num_players):
    """3,000 seeded env steps, random legal play: the rolls that fall fit the model's probabilities.

    Each fallen roll's randomised PIT is uniform on [0, 1] exactly when it falls by the model's probabilities
    (chi-square at ``SIGNIFICANCE``); and the turns' first rolls, binned by their probabilities, fit the rules' odds.
    """
    pits, first_rolls = sampled_pits(rules, num_players)
    assert uniformity_pvalue(pits) > SIGNIFICANCE
    # First rolls: bin the 252 rolls by their probability (count / 7776: 1, 5, 10, 20, 30, 60 or 120).
    counts = np.maximum(chance.OUTCOME_COUNTS[0], 5)  # five of a kind (1 / 7776) beside four of a kind (5 / 7776)
    levels = np.unique(counts)
    observed = np.array([np.isin(first_rolls, np.flatnonzero(counts == c)).sum() for c in levels])
    expected = np.array([chance.OUTCOME_COUNTS[0][counts == c].sum() for c in levels]) / 7776 * len(first_rolls)
    assert stats.chisquare(observed, expected).pvalue > SIGNIFICANCE


def test_the_goodness_of_fit_test_can_fail():
    """A model too sure of its likely rolls (the probabilities to the power 1.2, renormalised) fails it."""

    def too_sure(after):
        probabilities = chance.outcome_probabilities(after) ** 1.2
        return probabilities / probabilities.sum() if probabilities.any() else probabilities

    assert uniformity_pvalue(sampled_pits("standard", 1, too_sure)[0]) < SIGNIFICANCE


def test_openspiel_gives_the_same_outcomes_with_the_same_probabilities():
    """OpenSpiel's re-rolls (ordered dice, positions of its unsorted dice) and the next seat's first roll, summed
    by the sorted roll they give, are this model's outcomes (OpenSpiel's outcome encoding: tests/test_openspiel.py).
    """
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("yacht", {"players": 2})
    rng = np.random.default_rng(7)
    for roll in rng.choice(R.NUM_ROLLS, size=4, replace=False):
        dice = R.ROLLS[roll]
        ours = in_one_game("knizia", int(roll))
        for mask in np.flatnonzero(ours.mask[: R.NUM_KEEPS]):
            state = game.new_initial_state()
            state.apply_action(sum((int(v) - 1) * 6**k for k, v in enumerate(dice)))  # OpenSpiel's dice: sorted
            state.apply_action(R.KEEP_ALL & ~int(mask))  # re-roll what the mask does not keep
            rerolled = [i for i in range(R.NUM_DICE) if not mask >> i & 1]
            theirs = np.zeros(R.NUM_ROLLS)
            for outcome, probability in state.chance_outcomes():
                fresh = dice.copy()
                for k, i in enumerate(rerolled):
                    fresh[i] = outcome // 6**k % 6 + 1
                theirs[R.roll_index(fresh)] += probability
            assert np.abs(chance.outcome_probabilities(chance.afterstate(ours, int(mask))) - theirs).max() < 1e-12
    # After a pick: OpenSpiel rolls the next seat's five dice; so does the model.
    state = game.new_initial_state()
    state.apply_action(0)
    state.apply_action(0)  # keep all: to scoring
    state.apply_action(32)  # score "Ones"
    assert state.is_chance_node()
    theirs = np.zeros(R.NUM_ROLLS)
    for outcome, probability in state.chance_outcomes():
        theirs[R.roll_index([outcome // 6**k % 6 + 1 for k in range(R.NUM_DICE)])] += probability
    table = TableState("knizia", 2)
    table.start(np.stack([R.prefix_codes(s.reshape(-1, 5)) for s in game_streams(0, range(2), "knizia")]))
    after = chance.afterstate(table, R.PICK_OFFSET)
    assert after.seat == 1
    assert np.abs(chance.outcome_probabilities(after) - theirs).max() < 1e-12


def test_the_envs_refuse_an_illegal_action_or_outcome_and_change_nothing():
    env = YachtEnv()
    _, info = env.reset(seed=0)
    with pytest.raises(ValueError, match="action 31 keeps all five dice"):
        env.step_outcome(31, 0)
    kept_all_but_one = R.KEEP_ALL ^ 16  # keep the four lowest dice: a roll without them cannot fall
    impossible = next(r for r in range(R.NUM_ROLLS) if not dict(env.chance_outcomes(kept_all_but_one)).get(r))
    with pytest.raises(ValueError, match="cannot follow keeping"):
        env.step_outcome(kept_all_but_one, impossible)
    state = env.game_state()
    assert state.roll == R.roll_index(info["dice"]) and state.rolls_left == 2 and state.turn == 0
    envs = YachtVectorEnv(2)
    with pytest.raises(ValueError, match="call reset"):
        envs.afterstate(np.zeros(2, dtype=int))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="cannot follow keeping"):
        envs.step_outcome(np.full(2, kept_all_but_one), np.full(2, impossible))
    assert np.array_equal(envs.rolls_left, [2, 2])
