"""The exact two-player solve (yacht_env.duel) against a brute force of another formulation, on small games.

The brute force plays the game as written: absolute totals for both players (not their difference), every
keep-mask of the five dice (not the kept multisets), re-rolls enumerated die by die (not the rules core's
transition table), and the fixed opponent's turn played through its policy table roll by roll (not the turn
outcomes the solver averages over). Nothing of yacht_env.duel, yacht_env.solver or family_solver is in it.
"""

from __future__ import annotations

import functools
import itertools

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

    def __init__(self, rules: R.Rules, policy: np.ndarray | None = None, responder_first: bool = True):
        self.rules, self.policy, self.responder_first = rules, policy, responder_first
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


@pytest.mark.slow
@pytest.mark.parametrize("categories", SLOW_GAMES[1:])
def test_larger_games_equal_the_brute_force(categories, cache):
    rules = _rules(categories)
    assert duel.solve(rules, precision="float64", cache_dir=cache).first_player_value == pytest.approx(
        BruteForce(rules).value(), abs=1e-9
    )
    policy = D.solver_policy(rules)
    first = BruteForce(rules, policy, responder_first=True).value()
    assert duel.solve(rules, "optimal", precision="float64", cache_dir=cache).seat_values[0] == pytest.approx(first, abs=1e-9)
