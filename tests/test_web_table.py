"""The browser table's games (:mod:`yacht_lab.table.web.games`) against what a visitor may not make the server do, and
in the browser's own words: no spec that reads a file unless the server allowed it (present kinds and kinds to
come), one shared agent per spec whatever its ``#LABEL`` and a bounded cache of them, errors that name no terminal
command, the winner in words.
"""

from __future__ import annotations

import gc
import weakref

import pytest

from yacht_env import rules as R
from yacht_lab.table.web import games, seats
from yacht_lab.table.web.games import WebError, WebGame, check_spec, new_game

STANDARD = R.get_rules("standard")
FILE_MESSAGE = " reads a file: the table seats it only if the server was started with it (yacht-web --agent jax:PATH)"


def test_a_visitor_cannot_make_the_server_read_a_jax_file(tmp_path, monkeypatch):
    """``jax:PATH`` is refused before anything is built or read, with one answer whatever lies at the path (a file,
    a folder, nothing): no path oracle, no file loaded."""
    (tmp_path / "policy.npz").write_bytes(b"PK\x03\x04 not read")
    (tmp_path / "folder").mkdir()
    built = []
    monkeypatch.setattr(games, "make_agent", lambda *args, **kwargs: built.append(args))
    for name in ("policy.npz", "folder", "missing.npz"):
        for spec in (f"jax:{tmp_path / name}", f"jax:{tmp_path / name}#2", f"jax:{name}"):
            with pytest.raises(WebError) as refused:
                new_game({"seats": [spec, "human"]})
            assert refused.value.status == 400
            assert str(refused.value).startswith("agent ") and str(refused.value).endswith(FILE_MESSAGE)
    assert built == []


def test_every_kind_that_reads_a_file_needs_the_servers_agent(monkeypatch):
    from yacht_agents import AGENT_KINDS, FILELESS_KINDS

    readers = sorted(set(AGENT_KINDS) - set(FILELESS_KINDS))
    assert readers == ["jax", "ppo", "search"]
    for kind in readers:
        spec = f"{kind}:runs/x/policy"
        with pytest.raises(WebError, match=r"^agent '.*': the table seats|reads a file"):
            check_spec(spec)
        check_spec(spec, (spec,))  # the server's --agent
        check_spec(spec + "#copy", (spec,))  # a label only names a copy of it
        with pytest.raises(WebError):
            check_spec(spec, (spec + "#copy",))
    for spec in ("random", "greedy", "optimal#2", "win", "win:3", "duel", "duel:optimal", "ppo:standard"):
        check_spec(spec)
    # A kind added later reads a file until the catalogue lists it as fileless.
    monkeypatch.setattr(seats, "parse_spec", lambda spec: ("onnx", spec.partition(":")[2]))
    with pytest.raises(WebError, match="^agent 'onnx:/etc/passwd' reads a file"):
        check_spec("onnx:/etc/passwd")


def test_labelled_seats_share_one_agent(monkeypatch):
    """``win#LABEL`` is the win agent under another name: twelve games of twelve labels build (at most) one."""
    from yacht_agents import win

    made, real = [], win.WinAgent.__init__

    def counted(self, *args, **kwargs):
        if kwargs.get("name") != "coach":  # the coach's own model is built once per table size, apart
            made.append(kwargs.get("name"))
        real(self, *args, **kwargs)

    monkeypatch.setattr(win.WinAgent, "__init__", counted)
    played = [new_game({"seats": ["human", f"win#{label}"], "seed": label}) for label in range(12)]
    assert len(made) <= 1
    assert len({id(game.game.agents[1]) for game in played}) == 1
    assert [game.names[1] for game in played[:2]] == ["win#0", "win#1"]  # each seat keeps its label as its name


def test_a_held_agent_is_shared_and_one_held_by_no_one_is_let_go_past_the_bound():
    """A seat gets the agent already built for its spec and table while anything holds it, however many other specs
    and tables were asked for since; past :data:`~yacht_lab.table.web.games.MAX_SHARED_AGENTS` others, one that no
    one holds is let go."""
    games.AGENTS.clear()
    held = games.build_agent("greedy", STANDARD, 1, 0)
    assert games.build_agent("greedy#again", STANDARD, 1, 0) is held
    let_go = weakref.ref(games.build_agent("greedy", R.get_rules("yatzy"), 1, 0))
    for rules in ("classic", "knizia", "standard"):
        for players in range(1, 7):
            games.build_agent("greedy", R.get_rules(rules), players, 0)
    assert 3 * 6 > games.MAX_SHARED_AGENTS
    assert games.build_agent("greedy", STANDARD, 1, 0) is held
    gc.collect()
    assert let_go() is None


def test_games_cycling_past_the_cache_seat_the_win_agents_they_hold():
    """Round six's H1: games seating ``win`` at tables cycling through 9 (rules, table size) pairs, one past the
    agents kept, built a new win agent of some 81 MB per game, each held for the game's hour. Now every game of a pair
    seats the one agent its first game built, and the agents' big tables are one per rules."""
    pairs = [(rules, players) for rules in ("standard", "classic", "knizia") for players in (2, 3, 4)]
    assert len(pairs) > games.MAX_SHARED_AGENTS
    played = [
        new_game({"rules": rules, "seats": ["human"] + ["win"] * (players - 1), "seed": 1})
        for _ in range(2)
        for rules, players in pairs
    ]
    agents = [game.game.agents[1] for game in played]
    assert [id(agent) for agent in agents[9:]] == [id(agent) for agent in agents[:9]]
    assert len({id(agent) for agent in agents}) == 9
    coaches = [game.solver_coach for game in played]
    assert [id(coach) for coach in coaches[9:]] == [id(coach) for coach in coaches[:9]]
    tables = {id(agent._pick) for agent in agents} | {id(coach.win._pick) for coach in coaches}
    assert len(tables) == 3  # one per rules, for the agents and the coaches' models at every table size


def test_a_win_agents_big_tables_are_one_per_rules_and_read_only():
    from yacht_agents.win import WinAgent

    two, five = WinAgent(STANDARD, 2), WinAgent(STANDARD, 5)
    for name in ("_pick", "_kept", "_pick_score", "_cdf_before"):
        assert getattr(two, name) is getattr(five, name)
        assert not getattr(two, name).flags.writeable
    assert WinAgent(R.get_rules("classic"), 2)._pick is not two._pick


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["\u200b", "Bob"], "names: '\\u200b' shows nothing (only spaces or invisible characters)"),
        (["\u200b\u200c\u200d\u2060\ufeff", "Bob"], "names: '\\u200b\\u200c\\u200d\\u2060\\ufeff' shows nothing"),
        (["\u3000\u00a0", "Bob"], "names: one distinct name of 1..24 characters per seat"),  # spaces only
        (["Ann\nBob", "Bob"], "names: 'Ann\\nBob' holds a control character"),
        (["Ann", "Ann\u200b"], "names: one distinct name of 1..24 characters per seat"),
        (["Ann", "\uff21nn"], "names: one distinct name of 1..24 characters per seat"),  # a full-width A
    ],
)
def test_a_name_must_show_something_and_differ_as_shown(names, message):
    with pytest.raises(WebError) as refused:
        new_game({"seats": ["human", "human"], "names": names})
    assert refused.value.status == 400 and str(refused.value).startswith(message)


def test_names_of_letters_and_emoji_joined_are_kept():
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one emoji of three joined by zero-width joiners
    assert new_game({"seats": ["human", "human"], "names": ["Zoë", family]}).names == ["Zoë", family]


def test_a_seat_this_install_cannot_play_is_neither_offered_nor_taken(monkeypatch, tmp_path):
    """Without the train extra no ``ppo:*``, without the two-player solution no ``duel``: the page does not offer
    them, and a request for one is one 400 that shows no path of the server's."""
    from yacht_lab.table.web import seats

    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path / "cache"))  # nothing built there
    real = seats.importlib.util.find_spec
    monkeypatch.setattr(seats.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name))
    offered = seats.offered_agents(("ppo:runs/x/model.zip",))
    search = [f"search:{name}" for name in sorted(seats.shipped_search_models())]  # numpy only
    assert offered == ["human", "optimal", "greedy", "random", "win", *search]
    for spec, message in (
        ("ppo:standard", "agent 'ppo:standard': this server cannot seat ppo agents (it has no train extra installed)"),
        ("duel", "agent 'duel': this server has no two-player solution of 'standard' built (its operator builds"),
        ("duel:optimal#2", "agent 'duel:optimal#2': this server has no two-player solution of 'standard' built"),
    ):
        with pytest.raises(WebError) as refused:
            new_game({"seats": ["human", spec]})
        assert refused.value.status == 400 and str(refused.value).startswith(message)
        assert str(tmp_path) not in str(refused.value) and "/" not in str(refused.value)


def test_a_duel_is_offered_where_its_solution_is_built(monkeypatch, tmp_path):
    from yacht_env import duel
    from yacht_lab.table.web import seats

    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    folder = duel.solution_folder("standard")
    folder.mkdir(parents=True)
    complete = {"complete": True, "key": folder.name.rsplit("-", 1)[1] + "0" * 48}
    monkeypatch.setattr(duel, "read_manifest", lambda path: complete if path == folder else None)
    assert seats.duel_built(STANDARD, None) and not seats.duel_built(STANDARD, "optimal")
    assert not seats.duel_built(R.get_rules("classic"), None)
    offered = seats.offered_agents()
    assert "duel" in offered and "duel:optimal" not in offered
    assert seats.seat_unavailable("duel", STANDARD) is None
    assert seats.seat_unavailable("duel", R.get_rules("classic")).startswith("agent 'duel': this server has no")


def test_an_agents_error_shows_no_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("cannot load PPO model '/srv/models/x.zip': no such file in ~/cache or C:\\models")

    monkeypatch.setattr(games, "make_agent", refuse)
    games.AGENTS.clear()
    with pytest.raises(WebError) as refused:
        new_game({"seats": ["human", "greedy"]})
    message = "cannot load PPO model '<a file of the server's>': no such file in <a file of the server's> or "
    assert str(refused.value) == message + "<a file of the server's>"
    games.AGENTS.clear()


@pytest.mark.parametrize(
    ("before", "move", "message"),
    [
        ([], {"keep": [0, 1, 2, 3, 4]}, "keeping all five dice re-rolls nothing: score instead"),
        ([{"keep": []}, {"keep": []}], {"keep": [0]}, "no re-rolls left this turn: score the dice"),
    ],
)
def test_a_refused_move_is_explained_in_the_browsers_words(before, move, message):
    game = WebGame(STANDARD, ["human"], seed=5)
    for earlier in before:
        game.act(game.step, earlier)
    with pytest.raises(WebError) as refused:
        game.act(game.step, move)
    assert str(refused.value) == f"{message} (click an open box of the sheet)"  # not the terminal's (s <category>)


def test_the_result_names_the_winner_in_words():
    game = WebGame(STANDARD, ["human", "random"], seed=1, coach="always")
    while not game.over:
        game.act(game.step, {"action": game.coach_view()["best"]})
    totals = [int(t) for t in game.table.totals()]
    assert totals[0] > totals[1]
    assert game.result() == {"totals": totals, "winners": [0], "outcome": "You win"}
    named = WebGame(STANDARD, ["random", "human"], seed=1, names=["Ann", "Bob"])
    while not named.over:
        named.act(named.step, {"score": next(row.box for row in named.game.sheet().rows if row.now is not None)})
    totals = [int(t) for t in named.table.totals()]
    winner = "Ann" if totals[0] > totals[1] else "Bob"
    assert named.result()["outcome"] == f"{winner} wins"
    assert WebGame(STANDARD, ["optimal"], seed=1).result()["outcome"] is None  # alone: no one to beat
