"""The browser table's games (:mod:`yacht_lab.table.web.games`) against what a visitor may not make the server do, and
in the browser's own words: no spec that reads a file unless the server allowed it (present kinds and kinds to
come), one shared agent per spec whatever its ``#LABEL`` and a bounded cache of them, errors that name no terminal
command, the winner in words.
"""

from __future__ import annotations

import pytest

from yacht_env import rules as R
from yacht_lab.table.web import games
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
    monkeypatch.setattr(games, "parse_spec", lambda spec: ("onnx", spec.partition(":")[2]))
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


def test_the_shared_agents_are_bounded():
    """Past :data:`~yacht_lab.table.web.games.MAX_SHARED_AGENTS` specs and tables, the least recently used is let go."""
    first = games.build_agent("greedy", STANDARD, 1, 0)
    assert games.build_agent("greedy#again", STANDARD, 1, 0) is first
    for rules in ("classic", "knizia", "standard"):
        for players in range(1, 7):
            games.build_agent("greedy", R.get_rules(rules), players, 0)
    assert 3 * 6 > games.MAX_SHARED_AGENTS
    assert games.build_agent("greedy", STANDARD, 1, 0) is not first


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
