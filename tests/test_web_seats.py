"""The seats of the browser table: the shipped search models (offered for the rules and table each plays, found in
``models/``, typed by name whatever lies at that name in the server's folder), a ``#LABEL`` that is not one, what a
network at the table may cost (a parameter budget), and ``yacht-web``'s ``--agent``, each loaded before the server
answers anyone.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from yacht_agents import make_agent
from yacht_agents.search import ValueNetwork, ValueSpec, layer_shapes, save_value
from yacht_lab.table.web import seats
from yacht_lab.table.web.games import WebError, new_game

# What the shipped models' .json say (a solo model sits at any table of its rules: players None).
SHIPPED_TABLES = {
    "search:standard": {"rules": "standard", "players": None},
    "search:yahtzee": {"rules": "yahtzee", "players": None},
    "search:selfplay_standard": {"rules": "standard", "players": 2},
    "search:selfplay3_standard": {"rules": "standard", "players": 3},
    "search:selfplay5_standard": {"rules": "standard", "players": 5},
    "search:selfplay_yahtzee": {"rules": "yahtzee", "players": 2},
}


def _client():
    pytest.importorskip("starlette")
    try:
        from starlette.testclient import TestClient
    except (ImportError, RuntimeError):  # no httpx / httpx2 for the test client
        pytest.skip("Starlette's TestClient needs httpx2 (or httpx)")
    from yacht_lab.table.web.app import create_app

    return TestClient(create_app(allowed_hosts=["testserver"]))


def _network(arch: list[int], rules: str = "standard", players: int = 1) -> ValueNetwork:
    spec = ValueSpec(rules, players, tuple(arch))
    rng = np.random.default_rng(0)
    layers = [(rng.normal(0, 0.05, (a, b)).astype(np.float32), np.zeros(b, np.float32)) for a, b in layer_shapes(spec)]
    return ValueNetwork(spec, layers)


# --------------------------------------------------------------------------------------------------
# The shipped search models
# --------------------------------------------------------------------------------------------------
def test_the_shipped_search_models_are_offered_with_their_rules_and_table():
    """Round seven: the shipped ``ppo:*`` were offered, the shipped ``search:*`` neither offered nor taken."""
    options = _client().get("/api/options").json()
    assert set(SHIPPED_TABLES) <= set(options["agents"])
    assert {spec: options["tables"][spec] for spec in SHIPPED_TABLES} == SHIPPED_TABLES
    shipped = seats.shipped_search_models()
    assert sorted(options["tables"]) == sorted(f"search:{name}" for name in shipped)


@pytest.mark.parametrize(
    ("rules", "seats_", "refused"),
    [
        ("standard", ["search:standard"], None),
        ("standard", ["human", "search:standard", "search:standard#2"], None),  # a solo model: any table
        # the first Yahtzee table with a person builds the family's distributions for the coach (about a minute)
        pytest.param("yahtzee", ["search:yahtzee", "human"], None, marks=pytest.mark.slow),
        ("standard", ["human", "search:selfplay_standard"], None),
        ("standard", ["human", "human", "search:selfplay_standard"], "plays at a table of 2 players; this one has 3"),
        ("yahtzee", ["human", "search:standard"], "plays the 'standard' rules, not 'yahtzee'"),
        ("standard", ["human", "search:nope"], "the table seats the shipped models (search:selfplay3_standard, "),
    ],
)
def test_a_shipped_search_model_sits_at_the_tables_it_plays(rules, seats_, refused):
    response = _client().post("/api/games", json={"rules": rules, "seats": seats_, "seed": 4})
    if refused is None:
        assert response.status_code == 201, response.text
        state = response.json()
        assert state["over"] or state["people"][state["current"]]  # the agents played up to a person or the end
    else:
        assert response.status_code == 400 and refused in response.json()["error"]
        assert "/" not in response.json()["error"]  # no path of the server's


def test_a_shipped_name_is_the_shipped_model_whatever_lies_at_that_name_in_the_servers_folder(monkeypatch, tmp_path):
    """A visitor's ``search:standard`` never reads the server's ``./standard`` (which ``make_agent`` would take)."""
    (tmp_path / "standard").mkdir()
    (tmp_path / "standard" / "model.npz").write_bytes(b"PK\x03\x04 not a model")
    monkeypatch.chdir(tmp_path)
    game = new_game({"seats": ["search:standard"], "seed": 5})  # ./standard would be refused: not a model
    assert game.over and game.game.agents[0].name == "search:standard"


def test_search_models_added_to_models_are_offered_without_a_change_of_code(monkeypatch, tmp_path):
    from yacht_agents import archive

    for name in ("search_selfplay_standard", "search_standard"):
        source = next(folder for folder in archive.SHIPPED if (folder / f"{name}.npz").is_file())
        for suffix in (".npz", ".json"):
            target = name.replace("search_", "search_later_") + suffix
            shutil.copy(source / f"{name}{suffix}", tmp_path / target)
    (tmp_path / "search_broken.npz").write_bytes(b"")  # no .json: left out
    monkeypatch.setattr(archive, "SHIPPED", (tmp_path,))
    assert sorted(seats.shipped_search_models()) == ["later_selfplay_standard", "later_standard"]
    assert seats.model_tables()["search:later_selfplay_standard"] == {"rules": "standard", "players": 2}
    assert "search:later_standard" in seats.offered_agents()
    assert new_game({"seats": ["human", "search:later_selfplay_standard"]}).seats[1] == "search:later_selfplay_standard"


def test_a_shipped_search_model_over_the_budget_is_neither_offered_nor_taken(monkeypatch):
    monkeypatch.setattr(seats, "MAX_AGENT_PARAMETERS", 100_000)
    offered = seats.offered_agents()
    assert "search:standard" in offered and "search:selfplay_standard" not in offered
    with pytest.raises(WebError, match=r"its network has 610,818 parameters, over this table's budget of 100,000"):
        new_game({"seats": ["human", "search:selfplay_standard"]})


def test_the_budget_counts_a_shipped_models_parameters_as_its_network_has_them():
    for name, model in seats.shipped_search_models().items():
        agent = make_agent(f"search:{model.path}", model.rules)
        assert seats.network_parameters(agent) == model.parameters, name
    assert seats.shipped_search_models()["standard"].parameters == 69_633


# --------------------------------------------------------------------------------------------------
# A label that is not one
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "label"),
    [
        ("optimal#\u202eevil", "'\\u202eevil'"),  # a right-to-left override
        ("search:standard#\u202ex", "'\\u202ex'"),
        ("ppo:standard#a b", "'a b'"),
        ("win:3#" + "x" * 33, "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'"),
        ("greedy#", "''"),
        ("optimal#2#\u202ex", "'\\u202ex'"),  # after a label
    ],
)
def test_a_label_that_is_not_one_is_refused_as_a_label(spec, label):
    """Round seven: ``search:standard#<RLO>x`` was refused as reading a file, ``optimal#<RLO>x`` as no agent."""
    with pytest.raises(WebError) as refused:
        new_game({"seats": ["human", spec]})
    assert str(refused.value).endswith(f": a seat's label (after #) is 1 to 32 letters, digits, _ or -: {label}")


def test_a_hash_in_a_spec_that_does_not_sit_says_what_it_says_without_the_hash():
    with pytest.raises(WebError, match=r"reads a file: the table seats it only if the server was started with it"):
        new_game({"seats": ["human", "jax:/etc/x#\u202e"]})  # no word on the path, label or not


# --------------------------------------------------------------------------------------------------
# yacht-web --agent, --max-agent-params, --trusted-proxy
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def served(monkeypatch):
    """What ``yacht-web`` serves (the server is not started): ``[(app, limits)]``."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from yacht_lab.table.web import server

    calls = []

    def serve(app, listener, **limits):
        listener.close()
        calls.append((app, limits))

    monkeypatch.setattr(server, "serve", serve)
    return calls


def _yacht_web(args: list[str], capsys) -> tuple[int, str]:
    from yacht_lab.scripts import web

    status = web.main([*args, "--port", "0"], prog="yacht-web")
    return status, capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("search:nope", "no search model at 'nope': expected a .npz file (with its .json beside it), a run folder"),
        ("jax:nope", "no JAX policy at 'nope'"),
    ],
)
def test_yacht_web_loads_every_agent_before_serving(spec, message, served, capsys):
    """Round seven: ``--agent search:nope`` started, and put the bad spec in every visitor's menu."""
    if spec.startswith("jax:"):
        pytest.importorskip("jax")
    status, err = _yacht_web(["--agent", spec], capsys)
    assert (status, served) == (2, [])
    assert err.count("\n") == 1 and err.startswith("yacht-web: error: ") and message in err


@pytest.mark.parametrize(
    "spec", ["search:yahtzee", "search:selfplay_standard", pytest.param("ppo:yahtzee", marks=pytest.mark.slow)]
)
def test_yacht_web_loads_a_model_at_the_rules_it_plays(spec, served, capsys):
    if spec.startswith("ppo:"):
        pytest.importorskip("sb3_contrib")
    assert _yacht_web(["--agent", spec], capsys)[0] == 0
    from starlette.testclient import TestClient

    options = TestClient(served[0][0], base_url="http://127.0.0.1").get("/api/options").json()
    assert spec in options["agents"]


def test_yacht_web_refuses_a_network_over_its_parameter_budget(tmp_path, served, capsys):
    """Round seven: a valid 3 x 2048 search network played 10 times slower than the shipped one, for every visitor who
    seated it. (Here: 2 x 1024, over the budget too.)"""
    path = save_value(tmp_path / "heavy.npz", _network([1024, 1024]))
    status, err = _yacht_web(["--agent", f"search:{path}"], capsys)
    assert status == 2 and err.count("\n") == 1
    assert "its network has 1,064,961 parameters, over the table's budget of 1,000,000" in err
    assert _yacht_web(["--agent", f"search:{path}", "--max-agent-params", "2000000"], capsys)[0] == 0
    status, err = _yacht_web(["--agent", "search:standard", "--max-agent-params", "50000"], capsys)
    assert status == 2 and "its network has 69,633 parameters, over the table's budget of 50,000" in err


def test_yacht_web_reads_a_trusted_proxys_address(served, capsys):
    assert _yacht_web(["--trusted-proxy", "127.0.0.1", "--trusted-proxy", "10.0.0.0/8"], capsys)[0] == 0
    proxies = served[0][1]["trusted_proxies"]
    assert proxies.trusts("10.1.2.3") and proxies.trusts("127.0.0.1") and not proxies.trusts("192.0.2.1")
    with pytest.raises(SystemExit) as exit:
        _yacht_web(["--trusted-proxy", "proxy.example"], capsys)
    err = capsys.readouterr().err
    assert exit.value.code == 2 and err == (
        "yacht-web: error: argument --trusted-proxy: 'proxy.example' is not an IP address or network\n"
    )
