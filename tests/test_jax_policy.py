"""What a ``jax:PATH`` file may not do (yacht_agents.jax_policy): take the memory of a bomb to refuse, end in a
traceback, or make the agent play an illegal action. Skipped without jax.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

import jax  # noqa: E402
from helpers import REPO, run_script  # noqa: E402

from yacht_agents import make_agent  # noqa: E402
from yacht_agents.jax_policy import (  # noqa: E402
    MAX_PARAMS_BYTES,
    NetworkSpec,
    init_params,
    load_params,
    odds_tables,
    save_params,
)
from yacht_env import rules as R  # noqa: E402

SPEC = NetworkSpec("standard", 64, 44, (16, 16))


@pytest.fixture(scope="module")
def policy(tmp_path_factory) -> Path:
    """A randomly initialised solo policy for ``standard``, saved as the JAX trainer saves one."""
    odds, _ = odds_tables(R.get_rules("standard"), SPEC.bonus_odds)
    params = init_params(jax.random.key(0), SPEC, odds.chase.shape[-1])
    return save_params(tmp_path_factory.mktemp("jax") / "policy.npz", params, SPEC)


def variant(policy: Path, target: Path, arrays=None, meta=None) -> Path:
    """A copy of ``policy`` at ``target`` with its arrays and its ``.json`` changed by the given functions."""
    with np.load(policy) as data:
        saved = {name: data[name] for name in data.files}
    np.savez(target, **(arrays(saved) if arrays else saved))
    spec = json.loads(policy.with_suffix(".json").read_text())
    target.with_suffix(".json").write_text(json.dumps(meta(spec) if meta else spec))
    return target


def changed(mapping: dict, **changes) -> dict:
    return {**mapping, **changes}


def without(mapping: dict, key: str) -> dict:
    return {k: v for k, v in mapping.items() if k != key}


MALFORMED = {  # a damaged file -> the reason its one line gives
    "a layer of another shape": (dict(arrays=lambda a: changed(a, **{"pi.0.w": a["pi.0.w"][:10]})), "has shape"),
    "an array missing": (dict(arrays=lambda a: without(a, "action.w")), r"missing \['action.w'\]"),
    "an array of no layer": (dict(arrays=lambda a: changed(a, x=np.zeros(1))), r"unexpected \['x'\]"),
    "a layer index that is no int": (dict(arrays=lambda a: changed(a, **{"pi.zz.w": np.zeros(1)})), "unexpected"),
    "a head of one dimension": (dict(arrays=lambda a: changed(a, **{"action.w": np.zeros(3)})), "has shape"),
    "strings": (dict(arrays=lambda a: changed(a, **{"pi.0.w": np.array(["a"] * 10)})), "not an array of plain numbers"),
    "NaN weights": (dict(arrays=lambda a: changed(a, **{"value.b": np.array([np.nan])})), "not finite"),
    "net_arch of text": (dict(meta=lambda m: changed(m, net_arch="big")), 'net_arch "big" is not a list'),
    "a huge layer": (dict(meta=lambda m: changed(m, net_arch=[10**9])), "net_arch"),
    "a negative observation": (dict(meta=lambda m: changed(m, obs_size=-1)), "obs_size -1 is not an int"),
    "a boolean as a size": (dict(meta=lambda m: changed(m, num_actions=True)), "num_actions true is not an int"),
    "too many players": (dict(meta=lambda m: changed(m, players=99)), "players 99 is not an int in 1..10"),
    "unknown rules": (dict(meta=lambda m: changed(m, rules="nope")), 'rules "nope" is not a preset'),
    "an unknown field": (dict(meta=lambda m: changed(m, extra=1)), r"unknown fields \['extra'\]"),
    "a field missing": (dict(meta=lambda m: without(m, "obs_size")), r"lacks \['obs_size'\]"),
    "a JSON list": (dict(meta=lambda m: [m]), "is not a 'yacht-rl jax policy 1' file"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_policy_is_one_value_error(policy, tmp_path, case):
    """Each of these once ended in a KeyError, IndexError, TypeError or a traceback from inside jax."""
    changes, reason = MALFORMED[case]
    path = variant(policy, tmp_path / "bad.npz", **changes)
    with pytest.raises(ValueError, match=f"^cannot read the JAX policy '{re.escape(str(path))}': .*{reason}"):
        make_agent(f"jax:{path}")


def test_files_that_are_not_a_policy_are_one_value_error(policy, tmp_path):
    path = variant(policy, tmp_path / "bad.npz")
    path.with_suffix(".json").write_text("{" * 100_000)  # deeper than json parses, larger than a spec may be
    with pytest.raises(ValueError, match="bad.json is larger than a spec may be"):
        load_params(path)
    path.with_suffix(".json").write_text("[" * 10_000)
    with pytest.raises(ValueError, match="bad.json is not JSON"):
        load_params(path)
    path.with_suffix(".json").unlink()
    with pytest.raises(ValueError, match="has no bad.json beside it"):
        load_params(path)
    path = variant(policy, tmp_path / "text.npz")
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match="not a readable .npz"):
        load_params(path)


def test_evaluate_py_prints_one_line_for_a_malformed_policy(policy, tmp_path):
    """Once 46 lines of jax traceback and exit status 1."""
    path = variant(policy, tmp_path / "bad.npz", arrays=lambda a: changed(a, **{"pi.0.w": a["pi.0.w"][:10]}))
    done = run_script("evaluate.py", "--agents", f"jax:{path}", "--games", "5", "--no-progress", timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"evaluate.py: error: cannot read the JAX policy '{path}': its 'pi.0.w' has shape")


@pytest.mark.parametrize("path", ["a" * 5000, "a/" * 3000 + "policy.npz"])
def test_a_path_too_long_to_look_up_is_a_value_error(path):
    with pytest.raises(ValueError, match=r"^no JAX policy at 'a.*': its path cannot be looked up \(File name"):
        make_agent(f"jax:{path}")


# --------------------------------------------------------------------------------------------------
# Bombs: the sizes are checked before anything is read
# --------------------------------------------------------------------------------------------------
def npy_bomb(policy: Path, target: Path) -> Path:
    """The policy with one member's ``.npy`` header declaring 4 GiB of float32 over a few bytes of data (a small file;
    numpy's reader allocates the array the header declares before it reads)."""
    header = {"descr": "<f4", "fortran_order": False, "shape": (2**30,)}
    variant(policy, target)
    with zipfile.ZipFile(target, "a") as archive:
        buffer = io.BytesIO()
        np.lib.format.write_array_header_1_0(buffer, header)
        archive.writestr("huge.npy", buffer.getvalue() + bytes(64))
    return target


def zip_bomb(policy: Path, target: Path) -> Path:
    """The policy with a member of zeros expanding past :data:`MAX_PARAMS_BYTES` (a file of a few hundred KB)."""
    variant(policy, target)
    with zipfile.ZipFile(target, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("zeros.npy", "w", force_zip64=True) as member:
            buffer = io.BytesIO()
            count = (MAX_PARAMS_BYTES + 2**23) // 4
            np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": (count,)})
            member.write(buffer.getvalue())
            chunk = bytes(2**20)
            for _ in range(count * 4 // len(chunk)):
                member.write(chunk)
    return target


@pytest.fixture(scope="module")
def bombs(policy, tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    return npy_bomb(policy, folder / "header.npz"), zip_bomb(policy, folder / "zip.npz")


def test_a_bomb_is_refused_before_it_is_read(policy, bombs, tmp_path):
    header, bomb = bombs
    with pytest.raises(ValueError, match=r"its 'huge.npy' declares a \(1073741824,\) array of float32, not the 64"):
        load_params(header)
    assert bomb.stat().st_size < 2 * 2**20
    with pytest.raises(ValueError, match=r"it expands to \d+ bytes, more than a JAX policy may \(268435456 bytes\)"):
        load_params(bomb)
    many = variant(policy, tmp_path / "many.npz", arrays=lambda a: {**a, **{f"x{i}": np.zeros(1) for i in range(80)}})
    with pytest.raises(ValueError, match=r"it has 94 members \(a JAX policy has at most 72\)"):
        load_params(many)


# Under an address-space cap of what the process holds plus 384 MiB, the header's 4 GiB (or the bomb's 264 MiB,
# decompressed, then parsed) cannot be allocated: the loader must refuse each before it reads.
CAPPED_LOAD = """
import resource, sys
import jax.numpy as jnp
from yacht_agents.jax_policy import load_params
jnp.zeros(1).block_until_ready()  # jax's backend, before the cap
size = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + 384 * 2**20, resource.RLIM_INFINITY))
for path in sys.argv[1:]:
    try:
        load_params(path)
    except ValueError as error:
        print(error)
"""


def test_a_bomb_is_one_clear_error_under_an_address_space_cap(bombs):
    done = subprocess.run(
        [sys.executable, "-c", CAPPED_LOAD, *map(str, bombs)], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert "its 'huge.npy' declares a (1073741824,) array" in lines[0] and "more than a JAX policy may" in lines[1]


# --------------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------------
def decision_states(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random decision states of ``standard``: observations and legal masks."""
    from yacht_env.encoding import ObservationEncoder

    rng = np.random.default_rng(0)
    state = rng.integers(0, R.NUM_ROLLS, n), rng.integers(0, 3, n), rng.integers(1, R.ALL_OPEN + 1, n)
    return ObservationEncoder("standard").flat(*state), R.legal_action_mask(*state)


@pytest.mark.parametrize("value", [-np.inf, np.nan, np.inf])
def test_a_network_that_overflows_still_plays_legal_actions(policy, value):
    """Every legal logit -inf once gave an illegal action in 200 of 200 states."""
    agent = make_agent(f"jax:{policy}")
    agent.params["action"]["b"] = jax.numpy.full(44, value, jax.numpy.float32)
    obs, masks = decision_states()
    actions = agent.act(obs, masks)
    assert masks[np.arange(len(obs)), actions].all()


def test_an_empty_batch_gives_no_actions(policy):
    agent = make_agent(f"jax:{policy}")
    actions = agent.act(np.zeros((0, 64), np.float32), np.zeros((0, 44), bool))
    assert actions.shape == (0,) and actions.dtype == np.intp


# --------------------------------------------------------------------------------------------------
# A network trained at a table (NetworkSpec.players): it plays at every table surface
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def table_policy(tmp_path_factory) -> Path:
    """A randomly initialised two-player network for ``standard`` (it reads the two-seat table view), saved as the
    JAX trainer saves one."""
    from yacht_env.encoding import MultiplayerEncoder

    spec = SPEC._replace(obs_size=MultiplayerEncoder("standard", 2).size, players=2)
    odds, _ = odds_tables(R.get_rules("standard"), spec.bonus_odds)
    params = init_params(jax.random.key(1), spec, odds.chase.shape[-1])
    params["action"] = jax.tree.map(lambda x: x + 1.0, params["action"])  # logits far from 0: a policy of its own
    return save_params(tmp_path_factory.mktemp("jax2") / "table.npz", params, spec)


def test_a_table_network_sees_its_table_and_sits_at_tables_of_its_size(table_policy):
    agent = make_agent(f"jax:{table_policy}", players=2)
    assert agent.table_players == 2 and agent.observation_size == 79 == agent.spec.obs_size
    for players in (3, 4):
        with pytest.raises(ValueError, match=r"plays at a table of 2 players; this one has \d"):
            make_agent(f"jax:{table_policy}", players=players)


def test_a_table_network_plays_in_evaluate_py_head_to_head(table_policy, tmp_path):
    spec = f"jax:{table_policy}"
    out = tmp_path / "h2h.json"
    done = run_script(
        "evaluate.py", "--players", "2", "--agents", spec, "greedy", "--games", "20", "--json", str(out), timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["head_to_head"][f"{spec} vs greedy"]["games"] == 80
    done = run_script("evaluate.py", "--players", "3", "--agents", spec, "greedy", "random", "--games", "2")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "acts at a table of 2 players, not 3" in done.stderr


def test_a_table_network_is_an_opponent_in_the_versus_envs(table_policy):
    import gymnasium as gym

    from yacht_env.versus import YachtVersusVectorEnv

    env = gym.make("YachtVersus-v0", opponents=[f"jax:{table_policy}"], reward="win")
    observation, info = env.reset(seed=0)
    done = False
    while not done:
        observation, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        done = terminated or truncated
    assert terminated and reward in (-1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="opponent 0 acts at a table of 2 players; this table has 3"):
        YachtVersusVectorEnv(2, opponents=[make_agent(f"jax:{table_policy}"), "greedy"])


def test_a_table_network_plays_every_seat_of_the_pettingzoo_env(table_policy):
    from yacht_env.multiplayer import env as table_env

    agent = make_agent(f"jax:{table_policy}")
    table = table_env(num_players=2)
    table.reset(seed=0)
    last = {}
    for name in table.agent_iter():
        observation, _, termination, truncation, last[name] = table.last()
        action = None
        if not (termination or truncation):  # the table's own view of this seat: what the network reads
            action = agent.act(observation["observation"], observation["action_mask"].astype(bool))
        table.step(action)
    assert termination and set(last) == set(table.possible_agents)
    assert all(info["illegal_actions"] == 0 for info in last.values()) and sum(last["player_0"]["winners"]) >= 1


def test_a_table_network_sits_at_play_py_and_the_browser_table(table_policy):
    spec = f"jax:{table_policy}"
    done = run_script("play.py", "--players", spec, "greedy", "--seed", "1", "--delay", "0", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "wins" in done.stdout.splitlines()[-1] or "tie" in done.stdout.splitlines()[-1], done.stdout[-500:]
    done = run_script("play.py", "--players", spec, "greedy", "optimal", "--delay", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "table of 2 players, not 3" in done.stderr

    try:  # the test extra's client (Starlette 1.2 on prefers httpx2), else plain httpx
        import httpx2 as httpx
    except ImportError:
        httpx = pytest.importorskip("httpx")
    from yacht_lab.table.web.app import create_app

    async def one_move() -> tuple[dict, dict]:
        transport = httpx.ASGITransport(app=create_app(allowed_agents=(spec,), allowed_hosts=["testserver"]))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            made = await client.post("/api/games", json={"rules": "standard", "seats": ["human", spec], "seed": 3})
            assert made.status_code == 201, made.text
            state = made.json()
            moved = await client.post(
                f"/api/games/{state['id']}/moves", json={"step": state["step"], "move": {"score": 0}}
            )
            assert moved.status_code == 200, moved.text
            return state, moved.json()

    _, state = asyncio.run(one_move())
    names = [move["name"] for move in state["moves"]]
    assert len(names) > 1 and names[1:] == [spec] * (len(names) - 1)  # the person's pick, then the network's turn


def test_the_shipped_self_play_model_sits_at_a_two_player_table_by_its_name(tmp_path):
    agent = make_agent("jax:selfplay_standard", players=2)
    assert agent.name == "jax:selfplay_standard" and agent.table_players == 2 and agent.spec.rules == "standard"
    assert agent.observation_size == 79
    with pytest.raises(ValueError, match=r"plays at a table of 2 players"):
        make_agent("jax:selfplay_standard", players=3)
    out = tmp_path / "h2h.json"
    done = run_script(
        "evaluate.py",
        "--players",
        "2",
        "--agents",
        "jax:selfplay_standard",
        "greedy",
        "--games",
        "20",
        "--json",
        str(out),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(out.read_text())["head_to_head"]["jax:selfplay_standard vs greedy"]["games"] == 80


def test_a_yahtzee_table_network_of_the_view_before_the_bonus_progress_is_refused_in_one_line(tmp_path):
    # Yahtzee's two-player view was 85 values before it showed each opponent's upper and armed parts (88 now).
    spec = NetworkSpec("yahtzee", 85, 45, (16,), players=2)
    odds, _ = odds_tables(R.get_rules("yahtzee"), spec.bonus_odds)
    path = save_params(tmp_path / "old.npz", init_params(jax.random.key(0), spec, odds.chase.shape[-1]), spec)
    with pytest.raises(ValueError, match="fit the 'yahtzee' observation; 85 values is the 2-player table view"):
        make_agent(f"jax:{path}", rules="yahtzee", players=2)
