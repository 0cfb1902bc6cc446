"""The two-player yardstick (yacht_lab.measure.yardstick, benchmarks/two_players.py): agents against the equilibrium and
the solver land on the exact values of a small game solved in the test; a missing solution is one line naming the
command that builds it, and nothing is built.
"""

from __future__ import annotations

import pytest
from helpers import run_script

from yacht_env import duel
from yacht_env import rules as R
from yacht_lab.measure import yardstick as Y

GAME = R.Rules(name="ones-threes-yacht", categories=("ones", "threes", "yacht"))  # its solutions take a second


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache folder with the game's equilibrium and best response to the solver built."""
    folder = tmp_path_factory.mktemp("duel")
    duel.solve(GAME, cache_dir=folder)
    duel.solve(GAME, "optimal", cache_dir=folder)
    return folder


def test_the_yardstick_lands_on_the_exact_values(cache):
    agents = Y.make_agents(["duel", "optimal", "duel:optimal", "greedy"], GAME, seed=0, cache_dir=cache)
    result = Y.measure(agents, GAME, deals=2000, seed=0, cache_dir=cache)
    report = result.to_dict()
    exact = duel.evaluate(GAME, "optimal", cache_dir=cache).mean_value  # the equilibrium against the solver
    ceiling = duel.solve(GAME, "optimal", cache_dir=cache).mean_value  # the best response to the solver
    assert report["best_response_to_optimal"] == round(ceiling, 6) and result.best_response == pytest.approx(ceiling)
    rows = report["agents"]
    assert list(rows) == ["duel", "optimal", "duel:optimal", "greedy"]

    def inside(name: str, against: str, value: float) -> bool:
        low, high = rows[name]["against"][against]["mean_ci95"]
        return low <= value <= high

    assert inside("duel", "optimal", exact) and inside("optimal", "duel", 1 - exact)
    assert inside("duel:optimal", "optimal", ceiling)
    low, high = rows["duel:optimal"]["edge_share_ci95"]
    assert low <= 1 <= high
    # A deterministic agent against itself splits every deal: exactly 1/2, an interval of no width; the solver's
    # share of the edge over itself is exactly 0.
    for name, against in (("duel", "duel"), ("optimal", "optimal")):
        assert rows[name]["against"][against]["mean_win_rate"] == 0.5
        assert rows[name]["against"][against]["mean_ci95"] == [0.5, 0.5]
    assert rows["optimal"]["edge_share"] == 0 and rows["optimal"]["edge_share_ci95"] == [0, 0]
    # Every agent meets each opponent on 2,000 deals, each in both seats; greedy is far below both.
    assert all(r["against"][a]["games"] == 4000 for r in rows.values() for a in Y.REFERENCES)
    assert rows["greedy"]["against"]["duel"]["mean_ci95"][1] < 0.3 and rows["greedy"]["edge_share"] < -1
    table = result.format().splitlines()
    assert len(table) == 3 + 4 and table[3].startswith("duel ") and "50.00% [50.00, 50.00]" in table[3]


def test_a_baseline_is_compared_deal_by_deal(cache):
    agents = Y.make_agents(["optimal", "duel", "greedy"], GAME, seed=0, cache_dir=cache)
    result = Y.measure(agents, GAME, deals=500, seed=3, cache_dir=cache, baseline="optimal")
    rows = result.to_dict()["agents"]
    assert result.to_dict()["baseline"] == "optimal" and "minus_baseline" not in rows["optimal"]
    for name in ("duel", "greedy"):
        for reference in Y.REFERENCES:
            # The paired difference is the difference of the two win rates (the same deals), its interval the one of
            # the per-deal differences: a deal-by-deal recomputation gives both exactly.
            deal = result.games[name][reference].wins.mean(axis=0) - result.games["optimal"][reference].wins.mean(0)
            paired = rows[name]["minus_baseline"][reference]
            mean, low, high = Y.mean_ci(deal)
            assert paired == {"difference": round(mean, 6), "ci95": [round(low, 6), round(high, 6)]}
            rates = [rows[n]["against"][reference]["mean_win_rate"] for n in (name, "optimal")]
            assert paired["difference"] == pytest.approx(rates[0] - rates[1], abs=2e-6)
    # The equilibrium beats the solver against the solver itself; greedy loses to both by far.
    assert rows["duel"]["minus_baseline"]["optimal"]["ci95"][0] > 0
    assert rows["greedy"]["minus_baseline"]["duel"]["ci95"][1] < -0.1
    table = result.format().splitlines()
    assert table[-3] == "minus optimal, paired on the same deals (points of win rate):" and len(table) == 3 + 3 + 3
    with pytest.raises(ValueError, match="the baseline 'random' is not one of the agents measured"):
        Y.measure(agents, GAME, deals=10, cache_dir=cache, baseline="random")


def test_the_yardstick_builds_nothing_and_names_the_command(tmp_path):
    with pytest.raises(ValueError, match=r"is not built in .*: build it with python -m yacht_env\.duel build"):
        Y.measure([], GAME, deals=10, cache_dir=tmp_path)
    assert not (tmp_path / "duel").exists()
    done = run_script("benchmarks/two_players.py", "--agents", "win", "--cache-dir", str(tmp_path))
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    command = f"python -m yacht_env.duel build --rules standard --cache-dir {tmp_path}"
    assert done.stderr.startswith("two_players.py: error: ") and done.stderr.strip().endswith(command)
    done = run_script("benchmarks/duel.py", "--cache-dir", str(tmp_path))  # it once started a 29-minute build here
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and done.stderr.strip().endswith(command)
    assert not (tmp_path / "duel").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agents", "wun"], "unknown agent 'wun'"),
        (["--agents", "win", "--deals", "0"], "argument --deals: expected an integer >= 1"),
        (["--agents", "win", "--rules", "yahtzee"], "covers rules without bonuses"),
        (["--deals", "10"], "the following arguments are required: --agents"),
    ],
)
def test_bad_arguments_are_one_line(args, message, tmp_path):
    done = run_script("benchmarks/two_players.py", *args, "--cache-dir", str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_agents_that_do_not_sit_at_a_two_player_table_are_refused(cache):
    with pytest.raises(ValueError, match="plays at a table of 3 players; this one has 2"):
        Y.make_agents(["win:3"], GAME, cache_dir=cache)
    with pytest.raises(ValueError, match="agent names must be distinct"):
        Y.make_agents(["greedy", "greedy"], GAME, cache_dir=cache)


def test_the_help_says_what_a_build_costs(capsys):
    """``--help`` of the benchmark and of the build name the build's time and space before anyone starts one."""
    from yacht_env.duel.__main__ import main

    done = run_script("benchmarks/two_players.py", "--help")
    for command in (["build", "--help"], ["evaluate", "--help"]):
        with pytest.raises(SystemExit) as exit_:
            main(command)
        assert exit_.value.code == 0
        helps = (done.stdout, capsys.readouterr().out)
        for text in helps:
            text = " ".join(text.split())
            assert "about 30 minutes on 2 cores (3 minutes on a GPU)" in text and "2.5 GB on disk" in text, text
            assert "about 2.5 GB of memory" in text
