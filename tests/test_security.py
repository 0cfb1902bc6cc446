"""What a shared model file may not do: run code when it loads, or take the memory of a zip bomb to refuse."""

from __future__ import annotations

import base64
import json
import pickle
import re
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO

pytest.importorskip("sb3_contrib")

from yacht_agents import make_agent  # noqa: E402
from yacht_agents.ppo import MAX_MODEL_BYTES, load_model, read_model  # noqa: E402
from yacht_lab.measure.evaluation import evaluate  # noqa: E402
from yacht_lab.training.config import TrainConfig  # noqa: E402
from yacht_lab.training.sb3.ppo import load_checkpoint  # noqa: E402


class Touch:
    """Unpickled, creates the marker file: the harmless stand-in for any payload."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def payload(marker: Path) -> str:
    return base64.b64encode(pickle.dumps(Touch(marker), protocol=4)).decode()


def rewrite(source: Path, target: Path, edit=None, members: dict[str, bytes] | None = None) -> Path:
    """A copy of the model zip ``source`` with its ``data`` JSON edited in place by ``edit`` and members replaced."""
    members = dict(members or {})
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as copy:
        for name in original.namelist():
            content = original.read(name)
            if name == "data" and edit is not None:
                data = json.loads(content)
                edit(data)
                content = json.dumps(data).encode()
            copy.writestr(name, members.pop(name, content))
        for name, content in members.items():
            copy.writestr(name, content)
    return target


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    from sb3_contrib import MaskablePPO

    from yacht_env.sb3 import YachtSB3VecEnv

    path = tmp_path_factory.mktemp("models") / "clean.zip"
    model = MaskablePPO("MlpPolicy", YachtSB3VecEnv(2), n_steps=32, batch_size=32, n_epochs=1, device="cpu", seed=3)
    model.learn(64)  # an ep_info_buffer, a _last_obs: the pickled entries a payload hides in
    model.save(path)
    return path


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "payload_ran"


def with_payload(clean: Path, target: Path, marker: Path) -> Path:
    """The clean model, but its pickled entries (that the loader need not read) carry the payload."""

    def edit(data):
        for key in ("ep_info_buffer", "_last_obs", "_last_episode_starts"):
            data[key] = {":type:": "<class 'collections.deque'>", ":serialized:": payload(marker)}

    return rewrite(clean, target, edit)


def one_line_refusal(error: pytest.ExceptionInfo, path: Path, reason: str) -> None:
    message = str(error.value)
    assert "\n" not in message
    assert re.match(rf"^cannot load PPO model '{re.escape(str(path))}': .*{reason}", message), message


def scores(*specs: str) -> list[list[int]]:
    agents = [make_agent(spec) for spec in specs]
    result = evaluate(agents, 16, seed=5)
    return [result.results[spec].scores.tolist() for spec in specs]


def test_a_payload_in_a_model_never_runs_and_the_model_plays_as_the_clean_one(clean, tmp_path, marker):
    evil = with_payload(clean, tmp_path / "evil.zip", marker)
    clean_scores, evil_scores = scores(f"ppo:{clean}", f"ppo:{evil}")
    assert not marker.exists()
    assert clean_scores == evil_scores
    agent = make_agent(f"ppo:{evil}")
    obs = np.zeros((1, agent.encoder.size), np.float32)
    assert agent.model.policy.obs_to_tensor(obs)[0].shape == (1, agent.encoder.size)
    assert not marker.exists()


def evaluate_script(model, cwd):
    """``evaluate.py --agents ppo:<model>`` on 20 games, in a subprocess."""
    return subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), "--agents", f"ppo:{model}", "--games", "20", "--no-progress"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_evaluate_script_never_runs_a_payload(clean, tmp_path, marker):
    evil = with_payload(clean, tmp_path / "evil.zip", marker)
    done = evaluate_script(evil, tmp_path)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


def test_a_policy_class_that_is_a_payload_is_refused_in_one_line(clean, tmp_path, marker):
    def edit(data):
        data["policy_class"][":serialized:"] = payload(marker)

    evil = rewrite(clean, tmp_path / "evil.zip", edit)
    with pytest.raises(ValueError) as error:
        make_agent(f"ppo:{evil}")
    one_line_refusal(error, evil, "policy_class is not a bare class reference")
    assert not marker.exists()
    done = evaluate_script(evil, tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot load PPO model" in done.stderr
    assert not marker.exists()


def test_parameters_that_are_a_payload_are_refused(clean, tmp_path, marker):
    evil = rewrite(clean, tmp_path / "evil.zip", members={"policy.pth": pickle.dumps(Touch(marker), protocol=2)})
    with pytest.raises(ValueError) as error:
        make_agent(f"ppo:{evil}")
    one_line_refusal(error, evil, "'policy.pth' is not plain tensors")
    assert not marker.exists()


def test_resuming_never_runs_a_payload(clean, tmp_path, marker):
    evil = with_payload(clean, tmp_path / "evil.zip", marker)
    config = TrainConfig()
    config.policy.chase_inputs = config.policy.keep_head = False
    model = load_checkpoint(evil, None, config, None)
    assert not marker.exists()
    assert model.num_timesteps == read_model(clean).num_timesteps > 0
    assert model.learning_rate(1.0) == config.ppo.learning_rate


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("policy_class", "collections.OrderedDict", "policy class collections.OrderedDict is not one this loader"),
        ("policy_class", "sb3_contrib.common.maskable.policies.MaskableActorCriticCnnPolicy", "not one this loader"),
        ("activation_fn", "<class 'torch.nn.modules.activation.GELU'>", "activation .* is not one this loader"),
        ("net_arch", "{'pi': [100000], 'vf': [64]}", "net_arch .* is not 16 layers at most"),
        ("net_arch", "__import__('os').system('true')", "net_arch .* is not a literal"),
        ("features_extractor_class", "<class 'builtins.object'>", "policy_kwargs has features_extractor_class"),
        ("_shape", "[1000000]", "observation shape .* is not one size"),
    ],
)
def test_an_unknown_policy_class_or_setting_is_refused_in_one_line(clean, tmp_path, field, value, reason):
    def edit(data):
        if field == "policy_class":  # a bare reference to a class, as SB3 writes it (the class need not exist)
            module, _, name = value.rpartition(".")
            raw = b"\x80\x04\x8c" + bytes([len(module)]) + module.encode() + b"\x94\x8c" + bytes([len(name)])
            raw += name.encode() + b"\x94\x93\x94."
            data["policy_class"] = {":type:": "<class 'abc.ABCMeta'>", ":serialized:": base64.b64encode(raw).decode()}
            data["policy_class"]["__module__"] = module
        elif field == "_shape":
            data["observation_space"]["_shape"] = value
        else:
            data["policy_kwargs"][field] = value

    evil = rewrite(clean, tmp_path / "other.zip", edit)
    with pytest.raises(ValueError) as error:
        make_agent(f"ppo:{evil}")
    one_line_refusal(error, evil, reason)


def test_a_zip_bomb_is_refused_at_once_in_one_line(clean, tmp_path):
    bomb = tmp_path / "bomb.zip"
    rewrite(clean, bomb)
    with zipfile.ZipFile(bomb) as archive:
        kept = {name: archive.read(name) for name in archive.namelist() if name != "policy.pth"}
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, content in kept.items():
            archive.writestr(name, content)
        chunk = bytes(2**20)
        with archive.open("policy.pth", "w", force_zip64=True) as member:
            for _ in range(MAX_MODEL_BYTES // len(chunk) + 8):
                member.write(chunk)
    assert bomb.stat().st_size < 2 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as error:
            make_agent(f"ppo:{bomb}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    one_line_refusal(error, bomb, "expands to .* bytes, more than a model may")
    assert peak < 32 * 2**20
    with pytest.raises(ValueError, match="more than a model may"):
        load_model(bomb, trust=True)  # the opt-in loader is bounded too


def test_a_zip_of_many_members_is_refused(clean, tmp_path):
    many = rewrite(clean, tmp_path / "many.zip", members={f"x{i}": b"" for i in range(100)})
    with pytest.raises(ValueError) as error:
        make_agent(f"ppo:{many}")
    one_line_refusal(error, many, "it has 106 members")


def test_the_full_loader_is_an_explicit_opt_in(clean, tmp_path, marker):
    from sb3_contrib import MaskablePPO

    assert isinstance(load_model(clean, trust=True, device="cpu"), MaskablePPO)
    with pytest.raises(ValueError, match="the safe loader loads models to act"):
        load_model(clean, inference=False)
    evil = with_payload(clean, tmp_path / "evil.zip", marker)
    load_model(evil, device="cpu")
    assert not marker.exists()
    load_model(evil, trust=True, device="cpu")  # what the opt-in means: the file's pickles run
    assert marker.exists()


@pytest.mark.parametrize("path", ["models/ppo_standard.zip", "models/ppo_classic.zip"])
def test_the_shipped_models_read_as_odds_policies(path):
    saved = read_model(REPO / path)
    assert saved.policy == "OddsPolicy"
    assert saved.net_arch == {"pi": [256, 256], "vf": [256, 256]} and saved.activation == "ReLU"
    assert (saved.observation_size, saved.num_actions) == (64, 44)


def json_bomb(target: Path, mebibytes: int = 32) -> Path:
    """The shipped standard model with ``mebibytes`` MiB of ``[],`` in its ``data`` JSON (a 2 MB file; parsed, the
    JSON takes 35 times its size)."""
    source = REPO / "models" / "ppo_standard.zip"
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as copy:
        for name in original.namelist():
            content = original.read(name)
            if name == "data":
                junk = b"[]," * (mebibytes * 2**20 // 3)
                content = content.rstrip()[:-1] + b', "junk": [' + junk + b"[]]}"
            copy.writestr(name, content)
    return target


# Under an address-space cap of what the process holds plus 384 MiB, the bomb's 1.1 GB of parsed JSON would end in
# a MemoryError: each loader must refuse it before parsing.
CAPPED_LOADS = """
import resource, sys
from yacht_agents import make_agent
from yacht_agents.ppo import load_model, saved_policy_module
import sb3_contrib, torch  # noqa: F401 - what the loaders import, before the cap
size = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + 384 * 2**20, resource.RLIM_INFINITY))
path = sys.argv[1]
for load in (lambda: make_agent(f"ppo:{path}"), lambda: load_model(path), lambda: load_model(path, trust=True)):
    try:
        load()
    except ValueError as error:
        print(error)
print(saved_policy_module(path))
"""


def test_a_json_bomb_in_a_model_is_refused_before_it_is_parsed(tmp_path):
    bomb = json_bomb(tmp_path / "bomb.zip")
    assert bomb.stat().st_size < 3 * 2**20
    done = subprocess.run(
        [sys.executable, "-c", CAPPED_LOADS, str(bomb)], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 4, done.stdout
    for line in lines[:3]:
        assert re.match(rf"^cannot load PPO model '{re.escape(str(bomb))}': its 'data' takes \d+ bytes, more", line)
    assert lines[3] == "None"


def test_a_json_bomb_is_one_line_in_the_commands(tmp_path):
    bomb = json_bomb(tmp_path / "bomb.zip")
    done = subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), "--agents", f"ppo:{bomb}", "greedy", "--games", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "its 'data' takes" in done.stderr, done.stderr
