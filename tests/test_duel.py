"""The exact two-player solve (yacht_env.duel) against a brute force of another formulation, on small games.

The brute force plays the game as written: absolute totals for both players (not their difference), every
keep-mask of the five dice (not the kept multisets), re-rolls enumerated die by die (not the rules core's
transition table), and the fixed opponent's turn played through its policy table roll by roll (not the turn
outcomes the solver averages over). Nothing of yacht_env.duel, yacht_env.solver or family_solver is in it.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import numpy as np
import pytest

from yacht_env import distributions as D
from yacht_env import duel
from yacht_env import rules as R

FAST_GAMES = [("ones", "yacht"), ("twos", "little_straight")]  # a second or two each
SLOW_GAMES = [  # the brute force takes 20 s to minutes each: the slow set
    ("ones", "threes", "yacht"),
    ("fives", "big_straight", "four_of_a_kind"),
    ("ones", "twos", "little_straight", "yacht"),
]


def _rules(categories) -> R.Rules:
    return R.Rules(name="-".join(categories), categories=tuple(categories))


@functools.cache
def _dice_tables():
    """The sorted rolls, each (roll, keep-mask)'s distribution over the next sorted roll, the first roll's: by
    enumerating the fresh dice (any of the 31 masks that re-roll something, not the canonical ones)."""
    rolls = list(itertools.combinations_with_replacement(range(1, 7), 5))
    index = {roll: i for i, roll in enumerate(rolls)}
    fresh = []
    for k in range(6):
        counts: dict[tuple, float] = {}
        for faces in itertools.product(range(1, 7), repeat=k):
            key = tuple(sorted(faces))
            counts[key] = counts.get(key, 0.0) + 6.0**-k
        fresh.append(list(counts.items()))
    after = np.zeros((len(rolls), 31, len(rolls)))
    for r, dice in enumerate(rolls):
        for mask in range(31):
            kept = [dice[i] for i in range(5) if mask >> i & 1]
            for faces, p in fresh[5 - len(kept)]:
                after[r, mask, index[tuple(sorted(kept + list(faces)))]] += p
    first = np.zeros(len(rolls))
    for faces, p in fresh[5]:
        first[index[faces]] += p
    return rolls, after, first


class BruteForce:
    """Expectimax over explicit dice and absolute totals: P(the first player wins) + P(tie) / 2."""

    def __init__(
        self,
        rules: R.Rules,
        policy: np.ndarray | None = None,
        responder_first: bool = True,
        strategy: BruteForce | None = None,
    ):
        """``policy``: the fixed opponent's table (``None``: both maximise); ``responder_first``: the other player
        moves first; ``strategy``: the other player plays that brute force's best actions (its first best one:
        the stop over a re-roll only when strictly better), instead of maximising its own chance here.
        """
        self.rules, self.policy, self.responder_first, self.strategy = rules, policy, responder_first, strategy
        self.c = rules.num_categories
        self.rolls, self.after, self.first = _dice_tables()
        self.points = np.array([[R.score(dice, k, rules) for k in range(self.c)] for dice in self.rolls])
        self.game = functools.lru_cache(maxsize=None)(self._game)

    def _game(self, first_open: int, second_open: int, t1: int, t2: int, first_moves: bool) -> float:
        if first_open == 0 and second_open == 0:
            return 1.0 if t1 > t2 else 0.5 if t1 == t2 else 0.0
        mover_open = first_open if first_moves else second_open

        def after(k: int, s: int) -> float:  # P(first wins) after the mover scores s in box k
            if first_moves:
                return self.game(first_open & ~(1 << k), second_open, t1 + s, t2, False)
            return self.game(first_open, second_open & ~(1 << k), t1, t2 + s, True)

        boxes = [k for k in range(self.c) if mover_open >> k & 1]
        picked = {k: np.array([after(k, int(s)) for s in self.points[:, k]]) for k in boxes}  # (252,) per box
        if self.policy is not None and first_moves != self.responder_first:
            # The opponent plays its table: the chance of reaching each roll flows through its keeps.
            reach, value = self.first.copy(), 0.0
            for left in (2, 1, 0):
                action = self.policy[left, mover_open, [R.roll_index(d) for d in self.rolls]].astype(int)
                flow = np.zeros(len(self.rolls))
                for r, a in enumerate(action):
                    if a >= 32:
                        value += reach[r] * picked[a - 32][r]
                    elif reach[r]:
                        flow += reach[r] * self.after[r, a]
                reach = flow
            return value
        sign = 1.0 if first_moves else -1.0  # the mover maximises its own chance
        if self.strategy is not None:  # the strategy's choices, valued here
            plan = self.strategy.game
            if first_moves:
                planned = {
                    k: [plan(first_open & ~(1 << k), second_open, t1 + s, t2, False) for s in self.points[:, k]]
                    for k in boxes
                }
            else:
                planned = {
                    k: [plan(first_open, second_open & ~(1 << k), t1, t2 + s, True) for s in self.points[:, k]]
                    for k in boxes
                }
            choice = np.argmax([sign * np.array(planned[k]) for k in boxes], axis=0)  # the first best box
            roll = np.arange(len(self.rolls))
            plan_now = np.array([planned[boxes[j]][r] for r, j in enumerate(choice)]) * sign
            value_now = np.array([picked[boxes[j]][r] for r, j in enumerate(choice)])
            plan_best, value_best = plan_now, value_now
            for _ in range(2):
                keep_plan, keep_value = self.after @ plan_best, self.after @ value_best  # (252, 31 masks)
                mask = keep_plan.argmax(axis=1)
                stop = plan_now > keep_plan[roll, mask]
                plan_best = np.where(stop, plan_now, keep_plan[roll, mask])
                value_best = np.where(stop, value_now, keep_value[roll, mask])
            return float(self.first @ value_best)
        now = np.max([sign * picked[k] for k in boxes], axis=0)
        best = now
        for _ in range(2):
            best = np.maximum(now, (self.after @ best).max(axis=1))
        return sign * float(self.first @ best)

    def value(self) -> float:
        """P(the first player wins) + P(tie) / 2 from the start."""
        return self.game(self.rules.all_open, self.rules.all_open, 0, 0, True)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("duel")


@pytest.mark.parametrize("categories", FAST_GAMES + [pytest.param(SLOW_GAMES[0], marks=pytest.mark.slow)])
def test_equilibrium_equals_the_brute_force(categories, cache):
    rules = _rules(categories)
    solution = duel.solve(rules, precision="float64", cache_dir=cache)
    assert solution.first_player_value == pytest.approx(BruteForce(rules).value(), abs=1e-9)
    assert solution.seat_values[1] == pytest.approx(1 - solution.first_player_value, abs=1e-15)


@pytest.mark.parametrize("categories", FAST_GAMES + [pytest.param(SLOW_GAMES[0], marks=pytest.mark.slow)])
def test_best_response_to_the_solver_equals_the_brute_force(categories, cache):
    rules = _rules(categories)
    solution = duel.solve(rules, "optimal", precision="float64", cache_dir=cache)
    policy = D.solver_policy(rules)
    first = BruteForce(rules, policy, responder_first=True).value()
    second = 1 - BruteForce(rules, policy, responder_first=False).value()
    assert solution.seat_values == pytest.approx((first, second), abs=1e-9)
    # No player does better against the solver than its best response, the equilibrium included.
    equilibrium = duel.solve(rules, precision="float64", cache_dir=cache)
    assert solution.mean_value >= 0.5 - 1e-12
    assert solution.seat_values[0] >= equilibrium.seat_values[0] - 1e-12


@pytest.mark.parametrize("categories", FAST_GAMES + [pytest.param(SLOW_GAMES[0], marks=pytest.mark.slow)])
def test_the_equilibrium_against_the_solver_equals_the_brute_force(categories, cache):
    rules = _rules(categories)
    evaluation = duel.evaluate(rules, "optimal", precision="float64", cache_dir=cache)
    policy = D.solver_policy(rules)
    plan = BruteForce(rules)
    first = BruteForce(rules, policy, responder_first=True, strategy=plan).value()
    second = 1 - BruteForce(rules, policy, responder_first=False, strategy=plan).value()
    assert evaluation.kind == "evaluation"
    assert evaluation.seat_values == pytest.approx((first, second), abs=1e-9)
    # The equilibrium guarantees its value against anyone, and no one beats the best response's.
    value = duel.solve(rules, precision="float64", cache_dir=cache).first_player_value
    response = duel.solve(rules, "optimal", precision="float64", cache_dir=cache)
    assert value - 1e-12 <= evaluation.seat_values[0] <= response.seat_values[0] + 1e-12
    assert 1 - value - 1e-12 <= evaluation.seat_values[1] <= response.seat_values[1] + 1e-12
    with pytest.raises(ValueError, match="its actions are the equilibrium's"):
        evaluation.q_values(rules.all_open, rules.all_open, 0, 0, 2)
    with pytest.raises(ValueError, match="needs a fixed opponent"):
        duel.evaluate(rules, None, precision="float64", cache_dir=cache)


def test_the_evaluation_of_the_stored_equilibrium_is_within_its_rounding(cache):
    """float32 builds store uint16 values; the evaluation follows those, as the agent does."""
    rules = _rules(FAST_GAMES[0])
    exact = duel.evaluate(rules, "optimal", precision="float64", cache_dir=cache).seat_values
    stored = duel.evaluate(rules, "optimal", cache_dir=cache).seat_values
    assert stored == pytest.approx(exact, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("categories", SLOW_GAMES[1:])
def test_larger_games_equal_the_brute_force(categories, cache):
    rules = _rules(categories)
    assert duel.solve(rules, precision="float64", cache_dir=cache).first_player_value == pytest.approx(
        BruteForce(rules).value(), abs=1e-9
    )
    policy = D.solver_policy(rules)
    first = BruteForce(rules, policy, responder_first=True).value()
    assert duel.solve(rules, "optimal", precision="float64", cache_dir=cache).seat_values[0] == pytest.approx(
        first, abs=1e-9
    )


# --------------------------------------------------------------------------------------------------
# Queries, agents and simulated games
# --------------------------------------------------------------------------------------------------
def _random_states(rules: R.Rules, count: int, seed: int):
    """Reachable turn-start states ``(mover, other, lead)`` of random mid-game sheets."""
    rng = np.random.default_rng(seed)
    c = rules.num_categories
    top = R.score_table(rules).max(axis=0)
    out = []
    while len(out) < count:
        k = int(rng.integers(1, c + 1))  # the mover's open boxes; the other has k or k - 1
        mover = int(rng.choice(2**c - 1) + 1)
        while bin(mover).count("1") != k:
            mover = int(rng.choice(2**c - 1) + 1)
        other = [m for m in range(2**c) if bin(m).count("1") in (k, k - 1)]
        other = int(rng.choice(other))
        filled = lambda m: int(sum(top[i] for i in range(c) if not m >> i & 1))  # noqa: E731
        out.append((mover, other, int(rng.integers(-filled(other), filled(mover) + 1))))
    return np.array(out).T


@pytest.mark.parametrize("opponent", [None, "optimal"])
def test_a_turn_start_is_the_mean_of_its_best_first_decisions(opponent, cache):
    rules = _rules(("ones", "threes", "yacht"))
    solution = duel.solve(rules, opponent, precision="float64", cache_dir=cache)
    mover, other, lead = _random_states(rules, 40, seed=1)
    rolls = np.arange(R.NUM_ROLLS)
    q = solution.q_values(mover[:, None], other[:, None], lead[:, None], rolls, 2)  # (40, 252, 44)
    best = q.max(axis=-1) @ R.TRANSITION[0]
    np.testing.assert_allclose(best, solution.value(mover, other, lead), atol=1e-12)
    assert ((q >= -1e-15) | np.isneginf(q)).all() and (q <= 1 + 1e-15).all()


def test_bad_states_are_one_value_error(cache):
    rules = _rules(("ones", "yacht"))
    solution = duel.solve(rules, precision="float64", cache_dir=cache)
    with pytest.raises(ValueError, match="as many open boxes"):
        solution.value(1, 0b11, 0)  # the mover has fewer open boxes than the other
    with pytest.raises(ValueError, match="no game reaches lead 7"):
        solution.value(0b11, 0b11, 7)  # nothing is filled yet
    with pytest.raises(ValueError, match="mover must be int"):
        solution.value(0, 0, 0)
    with pytest.raises(ValueError, match="rolls_left must be int"):
        solution.q_values(0b11, 0b11, 0, 0, 3)
    with pytest.raises(ValueError, match="bonus"):
        duel.solve("yahtzee")
    with pytest.raises(ValueError, match="opponent must be None"):
        duel.solve(rules, "greedy", cache_dir=cache)
    with pytest.raises(ValueError, match="python -m yacht_env.duel build"):
        duel.solve(_rules(("twos", "yacht")), cache_dir=cache, build_missing=False)


def _seat_win_rates(agents, rules, games: int, seed: int) -> np.ndarray:
    """Agent 0's win rate (ties half) in seat 0 and in seat 1 against agent 1, on the same dice in both seats."""
    from yacht_env.game import game_streams
    from yacht_lab.measure.head_to_head import play_tables

    dice = game_streams(seed, range(2 * games), rules).reshape(games, 2, *rules.stream_shape)
    rates = []
    for agent_at in ([0, 1], [1, 0]):
        totals = play_tables(agents, dice, np.tile(agent_at, (games, 1)), rules)
        mine, theirs = totals[:, agent_at.index(0)], totals[:, agent_at.index(1)]
        rates.append(((mine > theirs) + 0.5 * (mine == theirs)).mean())
    return np.array(rates)


@pytest.mark.slow  # 12,000 games: a few seconds
@pytest.mark.parametrize("opponent", ["optimal", None])
def test_the_duel_agents_win_against_the_solver_what_the_solution_says(opponent, cache):
    """The best response's values and the equilibrium's exact evaluation against the solver, played out."""
    from yacht_agents.duel import DuelAgent
    from yacht_agents.optimal import OptimalAgent

    rules = _rules(("ones", "threes", "yacht"))
    if opponent is None:
        solution = duel.evaluate(rules, "optimal", precision="float64", cache_dir=cache)
    else:
        solution = duel.solve(rules, "optimal", precision="float64", cache_dir=cache)
    agent = DuelAgent(rules, opponent, cache_dir=cache, precision="float64")
    rates = _seat_win_rates([agent, OptimalAgent(rules)], rules, 6000, seed=3)
    # 6,000 games a seat: a standard error under 0.0065; four of them
    np.testing.assert_allclose(rates, solution.seat_values, atol=0.026)
    assert rates.mean() > 0.5 + 0.026  # the solver's policy is beaten in this game


def test_a_stopped_build_resumes_from_its_last_level_and_ends_the_same(tmp_path):
    from yacht_env.duel import builder as B

    rules = _rules(("twos", "little_straight"))
    whole = duel.solve(rules, "optimal", precision="float64", cache_dir=tmp_path / "whole")
    folder = duel.solution_folder(rules, "optimal", "float64", tmp_path / "stopped")
    key = B.read_manifest(whole.folder)["key"]
    layout, outcomes = duel.Layout(rules), duel._opponent(rules, "optimal")[1]

    def stop_at(n):
        if n == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        B.build(folder, layout, "best_response", key, outcomes, progress=False, dtype=np.float64, on_level=stop_at)
    manifest = B.read_manifest(folder)
    assert not manifest["complete"] and sorted(manifest["levels"]) == ["A00", "A01", "A02", "B00", "B01", "B02"]
    seen = []
    B.build(folder, layout, "best_response", key, outcomes, progress=False, dtype=np.float64, on_level=seen.append)
    assert seen == [3, 4]  # only the levels left
    resumed = duel.solve(rules, "optimal", precision="float64", cache_dir=tmp_path / "stopped")
    assert resumed.seat_values == whole.seat_values
    for table in ("A", "B"):
        for mine, theirs in zip(resumed._tables[table], whole._tables[table], strict=True):
            np.testing.assert_array_equal(mine, theirs)


def test_a_damaged_level_file_is_rebuilt_or_refused(tmp_path):
    rules = _rules(("ones", "yacht"))
    solution = duel.solve(rules, cache_dir=tmp_path)
    value = solution.first_player_value
    files = sorted(solution.folder.glob("E*.npy"))
    assert [f.name for f in files][-1] == "E04.u16.npy" and len(files) == 5  # float32 builds keep uint16 only
    with open(files[2], "r+b") as file:  # one flipped byte in a level's values
        file.seek(-3, 2)
        byte = file.read(1)
        file.seek(-3, 2)
        file.write(bytes([byte[0] ^ 0xFF]))
    duel._MEMO.clear()
    with pytest.raises(ValueError, match="damaged"):
        duel.solve(rules, cache_dir=tmp_path)
    assert abs(value - BruteForce(rules).value()) < 1e-5  # float32, stored as uint16


def test_the_duel_agents_play_on_the_versus_env_and_the_pettingzoo_table(cache):
    import gymnasium as gym

    from yacht_agents.duel import DuelAgent
    from yacht_env.multiplayer import env as table_env

    rules = _rules(("ones", "threes", "yacht"))
    duel.solve(rules, precision="float64", cache_dir=cache)
    agent = DuelAgent(rules, name="duel", cache_dir=cache, precision="float64")
    versus = gym.make("YachtVersus-v0", rules=rules, opponents=[agent], seat=1)
    obs, info = versus.reset(seed=0)
    for _ in range(200):
        obs, reward, terminated, truncated, info = versus.step(versus.action_space.sample(mask=info["action_mask"]))
        if terminated:
            break
    assert terminated and len(info["totals"]) == 2
    table = table_env(rules=rules, num_players=2)
    table.reset(seed=0)
    picks = 0
    for _ in table.agent_iter():
        observation, _, terminated, truncated, _ = table.last()
        action = None if terminated or truncated else agent.act(observation["observation"], observation["action_mask"])
        picks += action is not None and action >= R.PICK_OFFSET
        table.step(action)
    assert picks == 2 * rules.num_categories


def test_the_agent_specs_and_what_they_refuse(cache, monkeypatch):
    from yacht_agents import make_agent, parse_spec

    assert parse_spec("duel") == ("duel", None) and parse_spec("duel:optimal") == ("duel", "optimal")
    with pytest.raises(ValueError, match="unknown agent"):
        parse_spec("duel:greedy")
    with pytest.raises(ValueError, match="two-player tables only"):
        make_agent("duel", "standard", players=3)
    with pytest.raises(ValueError, match="bonus"):
        make_agent("duel", "yahtzee")
    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(cache / "empty"))
    with pytest.raises(ValueError, match="python -m yacht_env.duel build --rules standard"):
        make_agent("duel", "standard")


def test_the_command_builds_and_shows_a_solution_and_refuses_bad_arguments(tmp_path, capsys):
    from yacht_env.duel.__main__ import main

    assert main(["info", "--rules", "standard", "--cache-dir", str(tmp_path)]) == 2
    assert "build it with python -m yacht_env.duel build --rules standard" in capsys.readouterr().err
    assert main(["build", "--rules", "yahtzee", "--cache-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["evaluate", "--rules", "yatzy", "--cache-dir", str(tmp_path)]) == 2
    assert "without bonuses" in capsys.readouterr().err
    assert main(["build", "--rules", "standard", "--workers", "0", "--cache-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "python -m yacht_env.duel: error: workers must be an int in 1..256 (or None: one per core), got 0\n"
    )
    with pytest.raises(SystemExit) as stop:
        main(["build", "--rules", "standard", "--opponent", "greedy"])
    assert stop.value.code == 2


def test_the_module_example_runs(monkeypatch, tmp_path):
    import doctest

    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    result = doctest.testmod(duel, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0


def test_a_build_shows_its_progress_and_the_time_left(tmp_path, capsys):
    duel.solve(_rules(("ones", "yacht")), cache_dir=tmp_path, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 6 and lines[-1].startswith("duel ones-yacht equilibrium [####") and "100.0%" in lines[-1]
    assert all("spent 0:00:0" in line and "left ~" in line for line in lines)


@pytest.mark.slow  # two builds on torch's CPU kernels
@pytest.mark.parametrize("opponent", [None, "optimal"])
def test_the_torch_kernels_build_the_same_solution(opponent, tmp_path):
    pytest.importorskip("torch")
    rules = _rules(("ones", "threes", "yacht"))
    on_numpy = duel.solve(rules, opponent, precision="float64", cache_dir=tmp_path / "numpy", device="numpy")
    on_torch = duel.solve(rules, opponent, precision="float64", cache_dir=tmp_path / "torch", device="cpu")
    assert on_torch.seat_values == pytest.approx(on_numpy.seat_values, abs=1e-12)
    for table, levels in on_numpy._tables.items():
        for mine, theirs in zip(on_torch._tables[table], levels, strict=True):
            np.testing.assert_allclose(mine, theirs, atol=1e-12)
    with pytest.raises(ValueError, match="not available here"):
        duel.solve(_rules(("twos", "yacht")), cache_dir=tmp_path, device="cuda:7")


@pytest.mark.slow  # an evaluation on torch's CPU kernels, from uint16 and from float64 equilibria
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_the_torch_kernels_evaluate_the_same(precision, tmp_path):
    pytest.importorskip("torch")
    rules = _rules(("ones", "threes", "yacht"))
    on_numpy = duel.evaluate(rules, precision=precision, cache_dir=tmp_path / "numpy", device="numpy")
    on_torch = duel.evaluate(rules, precision=precision, cache_dir=tmp_path / "torch", device="cpu")
    assert on_torch.seat_values == pytest.approx(on_numpy.seat_values, abs=1e-12 if precision == "float64" else 1e-6)


def test_the_coach_gives_exact_odds_at_two_players_where_the_solve_is_built(tmp_path):
    from yacht_lab.table.terminal import Coach

    rules = _rules(("ones", "threes", "yacht"))
    assert Coach(rules, players=2, cache_dir=tmp_path).odds_source == "estimate"  # not built: the win agent's model
    solution = duel.solve(rules, cache_dir=tmp_path)
    coach = Coach(rules, players=2, cache_dir=tmp_path)
    assert coach.odds_source == "exact" and coach.win is None
    chances = coach.win_chances(17, 1, 0b101, 5, 0b011, 1)
    np.testing.assert_array_equal(chances, solution.q_values(0b101, 0b011, 4, 17, 1))
    np.testing.assert_array_equal(coach.win_chances(17, 1, 0b101, 5, [0b011], [1]), chances)  # as a table lists them
    advice = coach.advise(17, 1, 0b101, 5)
    assert coach.odds(chances, advice, 17).startswith("odds (exact, against perfect play): win chance ")
    assert Coach(rules, players=3, cache_dir=tmp_path).odds_source == "estimate"


def test_a_huge_or_foreign_manifest_is_not_trusted(tmp_path):
    from yacht_env.duel import builder as B

    (tmp_path / "manifest.json").write_text("[" * (B.MAX_MANIFEST_BYTES + 1))
    assert B.read_manifest(tmp_path) is None
    (tmp_path / "manifest.json").write_text('{"format": 0}')
    assert B.read_manifest(tmp_path) is None


def _children() -> set[int]:
    """This process's child processes (Linux: /proc/self/task/*/children)."""
    import glob

    paths = glob.glob("/proc/self/task/*/children")
    if not paths:
        pytest.skip("no /proc/self/task/*/children here")
    return {int(pid) for path in paths for pid in Path(path).read_text().split()}


@pytest.fixture
def every_level_to_the_workers(monkeypatch):
    """The build sends every level but the first to its worker processes, in tasks of a few chunks each."""
    from yacht_env.duel import builder as B

    monkeypatch.setattr(B, "CHUNK_COLUMNS", 16)
    monkeypatch.setattr(B, "WORKER_VALUES", 2)
    monkeypatch.setattr(B, "TASK_VALUES", 200)
    return B


def test_the_worker_processes_build_the_same_values_bit_for_bit(every_level_to_the_workers, tmp_path):
    B = every_level_to_the_workers
    rules = _rules(("ones", "threes", "yacht"))
    layout, outcomes = duel.Layout(rules), duel._opponent(rules, "optimal")[1]
    assert len(B.tasks(layout.level(3), 2)) >= 8  # many tasks a level: the workers share it out
    before = _children()
    for kind, fixed in (("equilibrium", None), ("best_response", outcomes)):
        built = {}
        for workers in (1, 2):
            folder = tmp_path / f"{kind}-{workers}"
            manifest = B.build(folder, layout, kind, "k", fixed, progress=False, workers=workers, dtype=np.float64)
            assert manifest["workers"] == workers and len(manifest["level_seconds"]) == layout.num_levels
            built[workers] = {name: np.load(folder / entry["file"]) for name, entry in manifest["levels"].items()}
        assert built[1].keys() == built[2].keys() and len(built[1]) == len(B.TABLES[kind]) * layout.num_levels
        for name, values in built[1].items():
            np.testing.assert_array_equal(built[2][name], values)
    plan = [np.load(tmp_path / "equilibrium-1" / f"E{n:02d}.npy", mmap_mode="r") for n in range(layout.num_levels)]
    for workers in (1, 2):  # the evaluation, whose strategy the workers map from the equilibrium's files
        B.build(tmp_path / f"ev-{workers}", layout, "evaluation", "k", outcomes, False, workers=workers,
                dtype=np.float64, strategy=plan)  # fmt: skip
    files = sorted(p.name for p in (tmp_path / "ev-1").glob("*.npy"))
    assert files == sorted(p.name for p in (tmp_path / "ev-2").glob("*.npy")) and len(files) == 2 * layout.num_levels
    for name in files:
        np.testing.assert_array_equal(np.load(tmp_path / "ev-2" / name), np.load(tmp_path / "ev-1" / name))
    assert _children() == before  # the workers are gone with their build


def test_a_build_stopped_in_the_workers_leaves_no_process_nor_a_half_file(every_level_to_the_workers, tmp_path):
    B = every_level_to_the_workers
    rules = _rules(("twos", "little_straight", "yacht"))
    layout, before = duel.Layout(rules), _children()

    def stop_at(n):
        if n == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        B.build(tmp_path, layout, "equilibrium", "k", progress=False, workers=2, dtype=np.float64, on_level=stop_at)
    assert _children() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["E00.npy", "E01.npy", "E02.npy", "E03.npy", "manifest.json"]
    seen = []
    B.build(tmp_path, layout, "equilibrium", "k", progress=False, workers=2, dtype=np.float64, on_level=seen.append)
    assert seen == [4, 5, 6]
    whole = B.build(tmp_path / "whole", layout, "equilibrium", "k", progress=False, workers=1, dtype=np.float64)
    assert B.read_manifest(tmp_path)["values"] == whole["values"]


def test_a_worker_that_fails_says_why_and_arrays_in_memory_are_refused(tmp_path):
    from yacht_env.duel import builder as B
    from yacht_env.duel.worker import Workers

    rules = _rules(("ones", "yacht"))
    layout = duel.Layout(rules)
    level = layout.level(2)
    np.save(tmp_path / "short.npy", np.zeros(3))  # level 1 holds more values than this
    short = np.load(tmp_path / "short.npy", mmap_mode="r")
    out = np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float64, (level.num_values,))
    with Workers(rules, None, 1) as pool:
        with pytest.raises(RuntimeError, match="(?s)a duel worker failed:.*IndexError: index 5 is out of bounds"):
            pool.solve_level(2, B.tasks(level, 1), short, False, None, out)
        with pytest.raises(ValueError, match="a worker reads its levels from files"):
            pool.solve_level(2, B.tasks(level, 1), np.zeros(3), False, None, out)
        process = pool.processes[0]
    assert process.poll() is not None
    np.save(tmp_path / "one.npy", B.solve_level(layout, 1, B.solve_level(layout, 0, None, dtype=np.float64)))
    with Workers(rules, None, 2) as pool:  # one killed (as for memory): the level is refused, not half-made
        pool.processes[1].kill()
        with pytest.raises(RuntimeError, match=r"a duel worker process stopped \(exit code -9\)"):
            pool.solve_level(2, B.tasks(level, 2), np.load(tmp_path / "one.npy", mmap_mode="r"), False, None, out)
    with Workers(rules, None, 2) as pool:  # a task sent to a dead worker stays in its pipe's buffer
        dead, alive = pool.processes
        dead.kill()
        dead.wait()
        with pytest.raises(RuntimeError, match=r"a duel worker process stopped \(exit code -9\)"):
            pool._send(dead, (2, [(0, 1)], False, None, None, None))
        pipes = [p for process in pool.processes for p in (process.stdin, process.stdout)]
    assert all(pipe.closed for pipe in pipes) and alive.poll() is not None  # closed, every one, without an error
    with pytest.raises(ValueError, match="workers must be an int in 1..256"):
        duel.solve(rules, cache_dir=tmp_path, workers=True)
