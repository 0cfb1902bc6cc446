"""Specification of yacht-rl as an installed library: the shipped models by name (``ppo:standard``), models saved
before 0.2 (when the players were the top-level package ``agents``) loading and playing exactly as before, the
console commands and ``python -m yacht_lab`` naming themselves in their messages, defaults that need no clone,
and a wheel holding the models and configs (not the run folders). ``.ci/wheel`` installs that wheel in a fresh
environment beside openai-agents (whose package is also called ``agents``) and runs every command from it."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

from yacht_agents import make_agent
from yacht_agents.ppo import LEGACY_POLICY_MODULES, resolve_model, saved_policy_module, shipped_models

SHIPPED = {"standard": REPO / "models" / "ppo_standard.zip", "classic": REPO / "models" / "ppo_classic.zip"}
COMMANDS = ("train", "evaluate", "play", "sweep", "web")

# Models saved before 0.2, and what they scored then (recorded with the code before the change, 200 games of
# evaluate() on seed 7): the sum of the scores and the first ten games.
LEGACY_GAMES, LEGACY_SEED = 200, 7
LEGACY = {
    "models/ppo_standard.zip": ("standard", 32932, [226, 139, 182, 176, 94, 176, 135, 153, 139, 186]),
    "models/ppo_classic.zip": ("classic", 33136, [240, 142, 183, 179, 101, 139, 120, 164, 115, 209]),
    "benchmarks/training/net_256x256.zip": ("standard", 31287, [173, 171, 166, 204, 126, 165, 144, 186, 198, 186]),
}

# In a fresh process, outside the repository, with ``agents`` a foreign package (as openai-agents makes it): each
# legacy model plays its pinned games, and resuming one (yacht_lab's load_checkpoint) gets OddsPolicy too.
FOREIGN_AGENTS = """
import json, sys, types
from pathlib import Path

foreign = types.ModuleType("agents")
foreign.__path__ = []  # a package without a policy submodule
sys.modules["agents"] = foreign

from yacht_agents import make_agent
from yacht_agents.policy import OddsPolicy
from yacht_lab.training.config import TrainConfig
from yacht_lab.measure.evaluation import evaluate
from yacht_lab.training.sb3.ppo import load_checkpoint

repo, games, seed, legacy = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
out = {}
for path, (rules, _, _) in legacy.items():
    spec = f"ppo:{repo / path}"
    result = evaluate([make_agent(spec, rules)], games, seed=seed, rules=rules).results[spec]
    out[path] = [int(result.scores.sum()), result.scores[:10].tolist()]
config = TrainConfig()
model = load_checkpoint(repo / "models" / "ppo_standard.zip", None, config, None)
out["resumed"] = [type(model.policy) is OddsPolicy, model.learning_rate(1.0) == config.ppo.learning_rate]
out["agents"] = sys.modules["agents"] is foreign
print(json.dumps(out))
"""


# --------------------------------------------------------------------------------------------------
# The shipped models
# --------------------------------------------------------------------------------------------------
def test_the_shipped_models_are_found_by_name():
    found = shipped_models()
    assert sorted(found) == ["classic", "selfplay_standard", "standard", "yahtzee", "yatzy"]
    for name, path in SHIPPED.items():
        assert found[name].samefile(path)
        assert resolve_model(name).samefile(path)
        assert resolve_model(str(path)) == path  # a path stays a path


def test_a_name_needs_no_separator_and_no_zip_suffix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").write_bytes(b"a file without an extension")
    assert resolve_model("mine") == Path("mine")  # not a shipped name: the file in the working folder
    (tmp_path / "standard").write_bytes(b"shadowed")
    assert resolve_model("standard").samefile(SHIPPED["standard"])  # a shipped name wins
    assert resolve_model("./standard") == Path("standard")  # ... unless written as a path
    for missing in ("standard.zip", "models/ppo_standard.zip"):
        with pytest.raises(ValueError, match=f"cannot load PPO model '{missing}': file not found"):
            resolve_model(missing)


@pytest.mark.parametrize("spec", ["ppo:nope", "ppo:Standard", "ppo:ppo_standard"])
def test_an_unknown_name_is_one_value_error_listing_the_shipped_models(spec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as error:
        make_agent(spec)
    message = str(error.value)
    assert message.startswith(f"cannot load PPO model '{spec[4:]}': no shipped model of that name")
    assert "(shipped: classic, selfplay_standard, standard, yahtzee, yatzy)" in message and "\n" not in message


def test_an_agent_of_a_shipped_model_keeps_the_spec_as_its_name():
    pytest.importorskip("sb3_contrib")
    from yacht_agents.policy import OddsPolicy

    agent = make_agent("ppo:classic", "classic")
    assert agent.name == "ppo:classic" and agent.path.samefile(SHIPPED["classic"])
    assert type(agent.model.policy) is OddsPolicy  # the class of yacht_agents, however ``agents`` imports
    with pytest.raises(ValueError, match="trained on 'classic'"):
        make_agent("ppo:classic", "standard")


# --------------------------------------------------------------------------------------------------
# Models saved before 0.2
# --------------------------------------------------------------------------------------------------
def test_the_fixtures_were_saved_before_the_rename():
    assert saved_policy_module(REPO / "models" / "ppo_standard.zip") in LEGACY_POLICY_MODULES
    assert saved_policy_module(REPO / "models" / "ppo_classic.zip") in LEGACY_POLICY_MODULES
    for path in LEGACY:  # their learning-rate schedules are closures of the old agents.training
        data = json.loads(zipfile.ZipFile(REPO / path).read("data"))
        assert b"agents.training" in base64.b64decode(data["learning_rate"][":serialized:"])
    assert saved_policy_module(REPO / "README.md") is None  # not a zip: loading it will say so


@pytest.mark.slow
def test_models_saved_before_the_rename_play_exactly_as_before_where_agents_is_another_package(tmp_path):
    pytest.importorskip("sb3_contrib")
    done = subprocess.run(
        [sys.executable, "-c", FOREIGN_AGENTS, str(REPO), str(LEGACY_GAMES), str(LEGACY_SEED), json.dumps(LEGACY)],
        cwd=tmp_path,  # not the repository: its agents/ folder is not on the path
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    for path, (_, total, first) in LEGACY.items():
        assert out[path] == [total, first], path
    assert out["resumed"] == [True, True]
    assert out["agents"] is True  # the foreign package stayed: nothing imported agents.policy


# --------------------------------------------------------------------------------------------------
# The commands
# --------------------------------------------------------------------------------------------------
def test_no_env_names_a_release_after_the_package_version():
    """An env's version history names only releases that exist: none after pyproject.toml's version."""

    def key(text):
        return tuple(int(part) for part in text.split("."))

    version = key(re.search(r'^version = "([\d.]+)"$', (REPO / "pyproject.toml").read_text(), re.M).group(1))
    named = [
        (path.relative_to(REPO).as_posix(), release)
        for path in sorted((REPO / "yacht_env").rglob("*.py"))
        for release in re.findall(r"yacht-rl (\d+(?:\.\d+)+)", path.read_text())
    ]
    assert ("yacht_env/env.py", "0.1.0") in named  # the scan reads the version histories
    assert [(path, release) for path, release in named if key(release) > version] == []


def test_the_console_commands_are_the_scripts_mains():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {f"yacht-{name}": f"yacht_lab.scripts.{name}:main" for name in COMMANDS}


# The lowest version of a dependency that the code needs, and why (docs/install.md): each was a floor the code did not
# stand on. .ci/run installs each extra at its floors (.ci/floors.py) and runs a smoke test there: the jax extra at jax
# 0.7.0, optax 0.2.0, pgx 2.4.0, gymnax 1.0.1, mctx 0.0.6; train + multiplayer at numpy 1.26.0, gymnasium 1.1.0,
# stable-baselines3 and sb3-contrib 2.6.0, pettingzoo 1.24.3, matplotlib 3.7.0, tensorboard 2.14.0 (checked by hand
# too: rich 13.0.0).
FLOORS = {
    "gymnasium": ("1.1", "gymnasium.vector.AutoresetMode (yacht_env.versus) is new in 1.1"),
    "jax": ("0.7", "mctx 0.0.6 (its floor) requires jax 0.7 or newer: jax 0.6 could not be installed with it"),
    "gymnax": ("1.0.1", "YachtGymnax.step unpacks gymnax 1.0's six-value step; 1.0.0 requires jax < 0.7"),
    "mctx": ("0.0.6", "the lowest checked with docs/jax.md's Stochastic MuZero search (0.0.6 and 0.0.71 run it)"),
    "stable-baselines3": ("2.6", "the first that accepts gymnasium 1.1 (2.4 and 2.5 require gymnasium < 1.1)"),
    "sb3-contrib": ("2.6", "its stable-baselines3's"),
    "pettingzoo": ("1.24.3", "below, env() takes PettingZoo's own wrappers and 10 of test_multiplayer.py fail"),
}


def test_the_lower_bounds_are_the_versions_the_code_needs():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    from packaging.requirements import Requirement
    from packaging.version import Version

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] + [line for extra in project["optional-dependencies"].values() for line in extra]
    floors = {}
    for requirement in map(Requirement, lines):
        for spec in requirement.specifier:
            if spec.operator == ">=":
                floors.setdefault(requirement.name, set()).add(Version(spec.version))
    for name, (needed, why) in FLOORS.items():
        assert floors.get(name), f"{name}: no lower bound"
        assert min(floors[name]) >= Version(needed), f"{name} >= {min(floors[name])}, but {why}"


@pytest.mark.parametrize("name", COMMANDS)
def test_each_way_to_start_a_command_names_it_in_its_errors(name, tmp_path):
    console = (
        "import sys\n"
        f"sys.argv[0] = {str(tmp_path / 'bin' / f'yacht-{name}')!r}  # as the console script starts it\n"
        f"from yacht_lab.scripts.{name} import main\n"
        "sys.exit(main())\n"
    )
    starts = {
        f"yacht-{name}": [sys.executable, "-c", console],
        f"python -m yacht_lab {name}": [sys.executable, "-m", "yacht_lab", name],
        f"{name}.py": [sys.executable, str(REPO / f"{name}.py")],
    }
    for prog, command in starts.items():
        done = subprocess.run([*command, "--no-such-flag"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout) == (2, ""), prog
        assert done.stderr == f"{prog}: error: unrecognized arguments: --no-such-flag\n", prog


def help_texts(parser) -> dict[str, str]:
    """``--help`` of a parser and of each of its subcommands, by command line."""
    texts = {"--help": parser.format_help()}
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        texts |= {f"{name} --help": sub.format_help() for name, sub in action.choices.items()}
    return texts


def test_no_help_text_shows_restructuredtext_markup(capsys):
    # Each program's --help is plain text: its description is the module docstring's first paragraph, where Sphinx
    # reads ``code``; the terminal would show the backticks.
    import importlib

    texts = {}
    for name in COMMANDS:
        with pytest.raises(SystemExit) as done:
            importlib.import_module(f"yacht_lab.scripts.{name}").parse_args(["--help"])
        assert done.value.code == 0
        texts[f"yacht-{name} --help"] = capsys.readouterr().out
    duel = importlib.import_module("yacht_env.duel.__main__")._parser()
    texts |= {f"python -m yacht_env.duel {line}": text for line, text in help_texts(duel).items()}
    assert len(texts) == len(COMMANDS) + 4 and all(len(text) > 200 for text in texts.values())
    marked = {line: [row for row in text.splitlines() if "``" in row] for line, text in texts.items()}
    assert {line: rows for line, rows in marked.items() if rows} == {}


@pytest.mark.parametrize("args", [[], ["nope"], ["--train"]])
def test_python_m_yacht_lab_without_a_command_is_one_line_exit_2(args):
    done = subprocess.run([sys.executable, "-m", "yacht_lab", *args], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("python -m yacht_lab: error: expected a command: train, evaluate, play, sweep")
    assert done.stderr.count("\n") == 1


def test_the_repository_scripts_are_aliases_importing_only_the_standard_library():
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "import train, evaluate, play, sweep, web\n"
        "heavy = sorted(m for m in ('numpy', 'torch', 'yaml', 'gymnasium', 'yacht_env', 'yacht_agents') "
        "if m in sys.modules)\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
    for name in COMMANDS:
        assert len((REPO / f"{name}.py").read_text().splitlines()) <= 30, name


# --------------------------------------------------------------------------------------------------
# Defaults that need no clone
# --------------------------------------------------------------------------------------------------
def test_train_without_a_config_takes_the_dataclass_defaults_which_configs_ppo_yaml_lists():
    pytest.importorskip("yaml")
    from yacht_lab.scripts.train import default_config
    from yacht_lab.training.config import TrainConfig, load_config

    assert default_config({}) == TrainConfig() == load_config(REPO / "configs" / "ppo.yaml")
    assert default_config({"seed": 3, "rules": None}).seed == 3
    with pytest.raises(ValueError):
        default_config({"reward": "win"})  # validated like a file's config


def test_train_without_a_config_runs_from_any_folder(tmp_path):
    pytest.importorskip("yaml")
    # --reward win without opponents: the defaults were built (no configs/ppo.yaml needed), then refused.
    done = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "--reward", "win", "--output-dir", str(tmp_path / "runs")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("train.py: error: reward 'win' needs opponents"), done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("rules", ["standard", "classic"])
def test_evaluate_adds_the_shipped_model_of_the_rules_from_any_folder(rules, tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from yacht_lab.scripts.evaluate import parse_args

    monkeypatch.chdir(tmp_path)
    assert parse_args(["--rules", rules]).agents == ["random", "greedy", "optimal", f"ppo:{rules}"]


def test_sweep_defaults_to_the_shipped_sweep_file(tmp_path, monkeypatch):
    from yacht_lab.scripts.sweep import default_config, resolve_sweep

    assert default_config().samefile(REPO / "configs" / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep").write_text("not a sweep")
    assert resolve_sweep(None) == resolve_sweep("sweep") == default_config()  # the shipped name wins
    assert resolve_sweep("./sweep") == Path("./sweep") and resolve_sweep("mine.yaml") == Path("mine.yaml")
    with pytest.raises(ValueError, match=r"no shipped sweep of that name \(shipped: sweep\)"):
        resolve_sweep("ppo")  # a shipped training config is not a sweep file


# --------------------------------------------------------------------------------------------------
# The wheel
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "output", ["dist/yacht_rl-0.2.0.tar.gz", "dist/yacht_rl-0.2.0-py3-none-any.whl", "build/lib/yacht_env/env.py"]
)
def test_what_python_m_build_writes_is_ignored_by_git(output):
    """``python -m build`` writes ``dist/`` (and setuptools ``build/``) in the checkout: git never offers them."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", output], capture_output=True, timeout=30)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if done.returncode == 128:  # not a git checkout (an unpacked sdist)
        pytest.skip("not a git checkout")
    assert done.returncode == 0, f"{output} is not ignored by .gitignore"


@pytest.mark.slow
def test_the_wheel_holds_the_code_the_models_and_the_configs_but_no_run_folder(tmp_path):
    pytest.importorskip("build")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("yacht_rl-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"yacht_agents/models/ppo_standard.zip", "yacht_agents/models/ppo_classic.zip"} <= names
    assert {f"yacht_lab/configs/{name}.yaml" for name in ("ppo", "sweep", "versus")} <= names
    assert {f"yacht_lab/scripts/{name}.py" for name in COMMANDS} | {"yacht_lab/__main__.py"} <= names
    # every module of the game, its subpackages included (the rules package)
    assert {path.relative_to(REPO).as_posix() for path in (REPO / "yacht_env").rglob("*.py")} <= names
    data = {name for name in names if not name.endswith(".py") and ".dist-info/" not in name}
    shipped = ("standard", "classic", "yahtzee", "yatzy", "selfplay_standard")
    models = {f"yacht_agents/models/ppo_{name}.zip" for name in shipped}
    searched = ("standard", "yahtzee", "selfplay_standard", "selfplay3_standard", "selfplay4_standard")
    searched += ("selfplay5_standard", "selfplay_yahtzee")  # the tables where nothing is solved
    models |= {f"yacht_agents/models/search_{name}.{ext}" for name in searched for ext in ("npz", "json")}
    jaxed = ("standard", "selfplay_standard")  # ppo:standard as JAX arrays, the JAX self-play model
    models |= {f"yacht_agents/models/jax_{name}.{ext}" for name in jaxed for ext in ("npz", "json")}
    configs = {
        f"yacht_lab/configs/{name}.yaml"
        for name in (
            "ppo",
            "sweep",
            "versus",
            "yahtzee",
            "yatzy",
            "selfplay",
            "jax_ppo",
            "jax_selfplay",
            "jax_ppo_gpu",
            "jax_yahtzee_gpu",
            "search_standard",
            "search_yahtzee",
            "search_selfplay",
            "search_selfplay3_standard",
            "search_selfplay4_standard",
            "search_selfplay5_standard",
            "search_selfplay_yahtzee",
        )
    }
    # the web table's page
    static = {f"yacht_lab/table/web/static/{name}" for name in ("index.html", "app.css", "app.js")}
    assert data == models | configs | static  # no run folder, no checkpoint, no benchmark
    # every model and config of the repository, none forgotten as new ones come
    found = [
        *(REPO / "models").glob("*.zip"),
        *(REPO / "models").glob("search_*.npz"),
        *(REPO / "models").glob("*.json"),
        *(REPO / "models").glob("jax_*.npz"),
    ]
    assert {f"yacht_agents/models/{path.name}" for path in found} == models
    assert {f"yacht_lab/configs/{path.name}" for path in (REPO / "configs").glob("*.yaml")} == configs
    assert not any(name.startswith(("agents/", "models/", "tests/", "benchmarks/", "research/")) for name in names)
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {"yacht_env", "yacht_agents", "yacht_lab"}  # no top-level agents: openai-agents keeps its name
    info = next(name for name in names if name.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    assert "License-Expression: MIT" in metadata and "Project-URL: Homepage, " in metadata
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert os.path.basename(wheel).startswith("yacht_rl-0.2.0-")
