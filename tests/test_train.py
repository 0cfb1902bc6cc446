"""Specification of PPO training: ``yacht_lab.training.sb3.ppo`` (config loading and validation, one source of truth for
the defaults) and ``train.py`` end to end on a tiny budget (the run folder, the learning curve, checkpoints,
stopping on Ctrl-C or SIGTERM and resuming, determinism, and one clean error line for each bad input)."""

from __future__ import annotations

import csv
import math
import os
import re
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers import REPO, TINY_PPO, write_config
from sb3_contrib import MaskablePPO

import yacht_lab
from yacht_agents import make_agent
from yacht_env.solver import solve
from yacht_lab.measure.evaluation import evaluate
from yacht_lab.training import runs
from yacht_lab.training.config import TrainConfig, load_config
from yacht_lab.training.runs import CURVE_FIELDS, VERSUS_CURVE_FIELDS, claim_run_folder
from yacht_lab.training.sb3 import model as model_module
from yacht_lab.training.sb3 import ppo as training
from yacht_lab.training.sb3 import tasks
from yacht_lab.training.sb3.callbacks import Abort, StopFlag
from yacht_lab.training.sb3.model import make_model
from yacht_lab.training.sb3.ppo import make_vec_env, train
from yacht_lab.training.sb3.tasks import evaluate_model, evaluate_versus

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CURVE_HEADER = "timesteps,wall_minutes,mean_score,score_ci95,percent_of_optimal,mean_regret,steps_per_second"
RUN_FILES = {"config.yaml", "command.txt", "model.zip", "checkpoints", "learning_curve.csv", "learning_curve.png", "tb"}
TINY = TINY_PPO
LONG_BUDGET = 200_000  # never reached: the run is interrupted


def run_train(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "train.py", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, umask=0o022
    )


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped): the writer of a file left by kill -9."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def snapshot(folder: Path) -> dict[Path, bytes | None]:
    """Every path under ``folder`` with its bytes (``None`` for a folder)."""
    return {p: (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


# Runs a script as ``python script.py ARGS`` would, but sends the process SIGINT while it imports MODULE.
INTERRUPT_AT_IMPORT = """
import os, runpy, signal, sys

class InterruptAt:
    def find_spec(self, name, path=None, target=None):
        if name == module:
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptAt())
module, sys.argv = sys.argv[1], sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_folder(stdout: str) -> Path:
    """The folder named by the script's last line, ``run folder: <path>``."""
    match = re.fullmatch(r"run folder: (.+)", stdout.strip().splitlines()[-1])
    assert match, stdout
    return Path(match.group(1))


def curve_rows(run: Path) -> list[dict[str, float]]:
    with open(run / "learning_curve.csv", newline="") as f:
        return [{k: (int(v) if k == "timesteps" else float(v)) for k, v in row.items()} for row in csv.DictReader(f)]


def curve_lines(run: Path) -> list[str]:
    return (run / "learning_curve.csv").read_text().splitlines()


def timesteps(run: Path) -> list[int]:
    return [row["timesteps"] for row in curve_rows(run)]


def checkpoint_steps(run: Path) -> list[int]:
    names = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert all(re.fullmatch(r"step_\d+\.zip", name) for name in names), names
    return sorted(int(name[len("step_") : -len(".zip")]) for name in names)


def parameters(path: Path) -> dict[str, torch.Tensor]:
    return MaskablePPO.load(str(path), device="cpu").policy.state_dict()


def same_parameters(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    assert a.keys() == b.keys()
    return all(torch.equal(a[k], b[k]) for k in a)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR", data[:16]
    return struct.unpack(">II", data[16:24])


def interrupt(config: Path, output_dir: Path, signum: int) -> dict:
    """Starts a long run, waits for its first evaluation after step 0, sends ``signum`` and waits for the exit."""
    args = ["--config", str(config), "--output-dir", str(output_dir), "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "train.py", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no evaluation after step 0 within 180 s"
            curves = list(output_dir.glob("*/learning_curve.csv"))
            try:
                if curves and any(row["timesteps"] > 0 for row in curve_rows(curves[0].parent)):
                    break
            except (ValueError, TypeError):  # a row being written
                pass
            time.sleep(0.1)
        sent = time.monotonic()
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return {
        "args": args,
        "returncode": proc.returncode,
        "stdout": stdout,
        "stderr": stderr,
        "seconds": seconds,
        "signum": signum,
    }


def check_interrupted(outcome: dict, output_dir: Path) -> tuple[Path, Path, int]:
    """The contract of a stop on a signal; returns ``(run folder, checkpoint, its step)``."""
    # Saved but not finished: 128 + the signal (130 for Ctrl-C), so that `train.py && evaluate.py` stops too.
    assert outcome["returncode"] == 128 + outcome["signum"], outcome["stderr"]
    assert outcome["seconds"] < 20, "the run should stop after the current update, not finish its budget"
    assert "Traceback" not in outcome["stderr"]
    run = run_folder(outcome["stdout"])
    assert run.parent == output_dir
    lines = [line for line in outcome["stderr"].splitlines() if "--resume" in line]
    assert len(lines) == 1, outcome["stderr"]
    match = re.search(r"(\S+/checkpoints/step_(\d+)\.zip)", lines[0])
    assert match, lines[0]
    checkpoint, step = Path(match.group(1)), int(match.group(2))
    assert checkpoint.parent == run / "checkpoints" and checkpoint.is_file()
    assert f"--resume {checkpoint}" in lines[0]  # how to continue, with the path to pass
    assert 1024 <= step < LONG_BUDGET
    assert MaskablePPO.load(str(checkpoint), device="cpu").num_timesteps == step
    assert MaskablePPO.load(str(run / "model.zip"), device="cpu").num_timesteps == step
    assert max(checkpoint_steps(run)) == step
    assert all(t <= step for t in timesteps(run)) and timesteps(run)[-1] >= 1024
    assert load_config(run / "config.yaml").total_timesteps == LONG_BUDGET
    return run, checkpoint, step


def copy_run(run: Path, destination: Path) -> Path:
    """A copy of a run folder (resuming writes into the checkpoint's run, so each test resumes its own copy)."""
    return Path(shutil.copytree(run, destination / run.name))


# --------------------------------------------------------------------------------------------------
# The library: config loading and validation
# --------------------------------------------------------------------------------------------------
def test_the_learning_rate_schedule_runs_from_start_to_end_and_stays_at_end_past_it():
    schedule = model_module.linear_schedule(3e-4, 1e-5)
    assert schedule(1.0) == 3e-4 and schedule(0.0) == 1e-5
    assert schedule(0.5) == pytest.approx(1e-5 + 0.5 * (3e-4 - 1e-5), rel=1e-15)
    # SB3's last rollout can end past total_timesteps: its negative progress_remaining keeps the final rate
    assert schedule(-0.0006) == 1e-5 and model_module.linear_schedule(3e-4, 0.0)(-0.0006) == 0.0
    assert schedule(1.5) == 3e-4


def test_the_dataclass_defaults_are_configs_ppo_yaml():
    # One source of truth: the default config names every field with the dataclass's default value.
    raw = yaml.safe_load((REPO / "configs" / "ppo.yaml").read_text())
    assert raw == TrainConfig().to_dict()
    assert load_config(REPO / "configs" / "ppo.yaml") == TrainConfig()


def test_an_empty_config_is_the_defaults(tmp_path):
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    assert load_config(tmp_path / "empty.yaml") == TrainConfig()


def test_a_partial_section_keeps_the_other_defaults_of_that_section(tmp_path):
    (tmp_path / "c.yaml").write_text("ppo:\n  n_steps: 128\npolicy:\n  activation: tanh\n")
    config = load_config(tmp_path / "c.yaml")
    assert config.ppo.n_steps == 128 and config.policy.activation == "tanh"
    expected = TrainConfig()
    expected.ppo.n_steps, expected.policy.activation = 128, "tanh"
    assert config == expected


def test_load_config_applies_the_given_overrides_and_ignores_none(tmp_path):
    path = write_config(tmp_path / "c.yaml")
    overrides = {"seed": 3, "n_envs": 4, "rules": "classic", "max_minutes": 2.5, "total_timesteps": None}
    config = load_config(path, overrides)
    assert (config.seed, config.n_envs, config.rules, config.max_minutes) == (3, 4, "classic", 2.5)
    assert config.total_timesteps == TINY["total_timesteps"]
    assert config.ppo.n_steps == 128 and config.policy.net_arch == [32, 32]


def test_load_config_validates_the_overrides(tmp_path):
    path = write_config(tmp_path / "c.yaml")
    with pytest.raises(ValueError, match=r"^n_envs "):
        load_config(path, {"n_envs": 0})
    # A batch of 256 fits in 2 games x 128 steps, not in 1 game x 128 steps.
    load_config(path, {"n_envs": 2})
    with pytest.raises(ValueError, match=r"^ppo\.batch_size \(256\) must not exceed .* \(128\)"):
        load_config(path, {"n_envs": 1})


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"seed": 1.5}, "seed"),
        ({"seed": -1}, "seed"),
        ({"n_envs": True}, "n_envs"),
        ({"total_timesteps": "1e6"}, "total_timesteps"),  # YAML 1.1 reads 1e6 as a string
        ({"max_minutes": 0}, "max_minutes"),
        ({"max_minutes": float("inf")}, "max_minutes"),
        ({"torch_threads": 0}, "torch_threads"),
        ({"device": ""}, "device"),
        ({"checkpoint_every_timesteps": 0}, "checkpoint_every_timesteps"),
        ({"policy": {"net_arch": [32, 0]}}, "policy.net_arch"),
        ({"policy": {"net_arch": 32}}, "policy.net_arch"),
        ({"policy": {"activation": "gelu"}}, "policy.activation"),
        ({"ppo": {"learning_rate": 0}}, "ppo.learning_rate"),
        ({"ppo": {"learning_rate_final": -1e-4}}, "ppo.learning_rate_final"),
        ({"ppo": {"ent_coef": -0.01}}, "ppo.ent_coef"),
        ({"ppo": {"ent_coef_final": -0.01}}, "ppo.ent_coef_final"),
        ({"ppo": {"gae_lambda": 1.01}}, "ppo.gae_lambda"),
        ({"ppo": {"gamma": -0.1}}, "ppo.gamma"),
        ({"ppo": {"clip_range": 0}}, "ppo.clip_range"),
        ({"ppo": {"batch_size": 1}}, "ppo.batch_size"),
        ({"ppo": {"n_epochs": 0}}, "ppo.n_epochs"),
        ({"ppo": {"max_grad_norm": float("nan")}}, "ppo.max_grad_norm"),
        ({"eval": {"every_timesteps": 0}}, "eval.every_timesteps"),
        ({"eval": {"seed": -1}}, "eval.seed"),
        ({"ppo": None}, "ppo"),
    ],
)
def test_load_config_names_the_bad_field(tmp_path, changes, field):
    path = write_config(tmp_path / "c.yaml", **changes)
    with pytest.raises(ValueError, match=rf"^{re.escape(field)} "):
        load_config(path)


def test_a_bool_in_net_arch_is_rejected(tmp_path):
    path = write_config(tmp_path / "c.yaml", policy={"net_arch": [32, True]})
    with pytest.raises(ValueError, match=r"^policy\.net_arch "):
        load_config(path)


# --------------------------------------------------------------------------------------------------
# train.py end to end
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """One tiny run with CLI overrides: classic rules, seed 3, 4 games (so a rollout is 512 steps)."""
    tmp = tmp_path_factory.mktemp("e2e")
    config = write_config(tmp / "tiny.yaml")
    args = ["--config", str(config), "--seed", "3", "--n-envs", "4", "--rules", "classic"]
    args += ["--output-dir", str(tmp / "runs"), "--no-progress"]
    result = run_train(*args)
    assert result.returncode == 0, result.stderr
    return {"args": args, "config": config, "result": result, "run": run_folder(result.stdout), "tmp": tmp}


def test_a_run_folder_holds_exactly_the_documented_files(e2e):
    run = e2e["run"]
    assert run.parent == e2e["tmp"] / "runs"
    assert re.fullmatch(r"Yacht-v0__classic__ppo__3__\d{10}", run.name)
    assert {p.name for p in run.iterdir()} == RUN_FILES  # no temporary file left behind
    assert e2e["result"].stdout.strip().splitlines()[-1] == f"run folder: {run}"


def test_config_yaml_is_the_config_with_the_cli_overrides(e2e):
    saved = load_config(e2e["run"] / "config.yaml")
    assert saved == load_config(e2e["config"], {"seed": 3, "n_envs": 4, "rules": "classic"})
    assert (saved.seed, saved.n_envs, saved.rules) == (3, 4, "classic")
    assert yaml.safe_load((e2e["run"] / "config.yaml").read_text()) == saved.to_dict()  # every field written


def test_command_txt_is_the_command(e2e):
    assert (e2e["run"] / "command.txt").read_text() == shlex.join(["train.py", *e2e["args"]]) + "\n"


def test_model_zip_is_a_ppo_agent_that_plays_legally(e2e):
    model = e2e["run"] / "model.zip"
    assert MaskablePPO.load(str(model), device="cpu").num_timesteps == 2048
    # evaluate() raises on any illegal action.
    evaluation = evaluate([make_agent(f"ppo:{model}", "classic")], 50, 0, "classic")
    result = evaluation.results[f"ppo:{model}"]
    assert result.decisions.min() >= 12 and result.scores.min() >= 0


def test_checkpoints_are_saved_at_the_interval_and_at_the_end(e2e):
    assert checkpoint_steps(e2e["run"]) == [1024, 2048]
    last = e2e["run"] / "checkpoints" / "step_2048.zip"
    assert same_parameters(parameters(last), parameters(e2e["run"] / "model.zip"))


def test_learning_curve_csv(e2e):
    run = e2e["run"]
    assert curve_lines(run)[0] == CURVE_HEADER
    assert tuple(CURVE_HEADER.split(",")) == CURVE_FIELDS
    rows = curve_rows(run)
    assert [row["timesteps"] for row in rows] == [0, 1024, 2048]  # start, every 1,024 steps, end
    optimal = solve("classic").expected_score
    for row in rows:
        assert row["percent_of_optimal"] == pytest.approx(100 * row["mean_score"] / optimal, abs=1e-6)
        assert row["score_ci95"] > 0 and row["wall_minutes"] >= 0
        assert 0 <= row["mean_score"] <= optimal
        # E[score] = optimal - E[regret]: the regret column is the solver's regret of these games.
        assert abs(row["mean_score"] + row["mean_regret"] - optimal) < 10
    assert all(a["wall_minutes"] <= b["wall_minutes"] for a, b in zip(rows, rows[1:], strict=False))
    assert math.isfinite(rows[-1]["steps_per_second"]) and rows[-1]["steps_per_second"] > 0


def test_learning_curve_png_is_a_png(e2e):
    width, height = png_size(e2e["run"] / "learning_curve.png")
    assert width > height > 100


def test_tensorboard_events_hold_the_evaluations(e2e):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = sorted((e2e["run"] / "tb").rglob("events.out.tfevents.*"))
    assert events
    tags = set()
    for path in events:
        accumulator = EventAccumulator(str(path))
        accumulator.Reload()
        tags |= set(accumulator.Tags()["scalars"])
    assert {"eval/mean_score", "eval/percent_of_optimal", "eval/mean_regret", "time/steps_per_second"} <= tags


def test_evaluate_py_accepts_the_trained_model(e2e, tmp_path):
    import json

    model = e2e["run"] / "model.zip"
    spec = f"ppo:{model}"
    result = subprocess.run(
        [sys.executable, "evaluate.py", "--agents", spec, "--games", "50", "--rules", "classic"]
        + ["--json", str(tmp_path / "r.json"), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["rules"], report["games"], list(report["agents"])) == ("classic", 50, [spec])
    same_games = evaluate([make_agent(spec, "classic")], 50, 0, "classic").to_dict()["agents"][spec]
    assert report["agents"][spec] == same_games


# --------------------------------------------------------------------------------------------------
# Stopping on a signal, and resuming
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A long run stopped with SIGINT after its first evaluation past step 0."""
    tmp = tmp_path_factory.mktemp("interrupted")
    config = write_config(tmp / "long.yaml", total_timesteps=LONG_BUDGET)
    outcome = interrupt(config, tmp / "runs", signal.SIGINT)
    return {"config": config, "outcome": outcome, "output_dir": tmp / "runs"}


def test_sigint_saves_a_checkpoint_and_says_how_to_resume(interrupted):
    run, _, _ = check_interrupted(interrupted["outcome"], interrupted["output_dir"])
    assert RUN_FILES <= {p.name for p in run.iterdir()}


@pytest.mark.slow
def test_sigterm_behaves_like_sigint(tmp_path):
    config = write_config(tmp_path / "long.yaml", total_timesteps=LONG_BUDGET)
    outcome = interrupt(config, tmp_path / "runs", signal.SIGTERM)
    check_interrupted(outcome, tmp_path / "runs")


@pytest.mark.slow
def test_resume_continues_in_the_same_folder(interrupted, tmp_path):
    original, _, step = check_interrupted(interrupted["outcome"], interrupted["output_dir"])
    run = copy_run(original, tmp_path)
    before_lines, before_steps = curve_lines(run), checkpoint_steps(run)
    checkpoint = run / "checkpoints" / f"step_{step}.zip"
    args = ["--resume", str(checkpoint)]
    args += ["--total-timesteps", str(step + 2048), "--output-dir", str(tmp_path / "unused"), "--no-progress"]
    result = run_train(*args)
    assert result.returncode == 0, result.stderr
    assert run_folder(result.stdout) == run
    assert not (tmp_path / "unused").exists()  # no new run folder
    assert MaskablePPO.load(str(run / "model.zip"), device="cpu").num_timesteps == step + 2048
    assert checkpoint_steps(run) == before_steps + [step + 1024, step + 2048]
    # The rows up to the checkpoint are kept as they were; evaluations continue every 1,024 steps from it.
    lines = curve_lines(run)
    assert lines[: len(before_lines)] == before_lines
    assert timesteps(run)[len(before_lines) - 1 :] == [step + 1024, step + 2048]
    walls = [row["wall_minutes"] for row in curve_rows(run)]
    assert walls == sorted(walls)
    commands = (run / "command.txt").read_text().splitlines()
    assert commands == [shlex.join(["train.py", *interrupted["outcome"]["args"]]), shlex.join(["train.py", *args])]
    assert load_config(run / "config.yaml").total_timesteps == step + 2048


@pytest.mark.slow
def test_resume_from_an_earlier_checkpoint_drops_the_later_rows(e2e, tmp_path):
    run = copy_run(e2e["run"], tmp_path)
    first_rows = curve_lines(run)[:3]  # header, steps 0 and 1,024
    args = ["--resume", str(run / "checkpoints" / "step_1024.zip")]
    args += ["--total-timesteps", "3072", "--output-dir", str(tmp_path / "unused"), "--no-progress"]
    result = run_train(*args)
    assert result.returncode == 0, result.stderr
    assert curve_lines(run)[:3] == first_rows
    assert timesteps(run) == [0, 1024, 2048, 3072]  # strictly increasing: the old row at 2,048 is replaced
    assert MaskablePPO.load(str(run / "model.zip"), device="cpu").num_timesteps == 3072
    # The run keeps its own config; only the budget is the one given.
    saved = load_config(run / "config.yaml")
    assert (saved.rules, saved.seed, saved.n_envs, saved.total_timesteps) == ("classic", 3, 4, 3072)


@pytest.mark.slow  # an end-to-end run the README's command leaves to -m slow
def test_resuming_the_same_checkpoint_twice_gives_the_same_run(e2e, tmp_path):
    finals = []
    for folder in ("a", "b"):
        run = copy_run(e2e["run"], tmp_path / folder)
        args = ["--resume", str(run / "checkpoints" / "step_1024.zip"), "--total-timesteps", "2048"]
        result = run_train(*args, "--output-dir", str(tmp_path / "unused"), "--no-progress")
        assert result.returncode == 0, result.stderr
        finals.append(parameters(run / "model.zip"))
    assert same_parameters(*finals)
    assert not same_parameters(finals[0], parameters(e2e["run"] / "checkpoints" / "step_1024.zip"))


@pytest.mark.slow
def test_the_printed_resume_command_keeps_the_runs_budget(interrupted, tmp_path):
    original, checkpoint, _ = check_interrupted(interrupted["outcome"], interrupted["output_dir"])
    run = copy_run(original, tmp_path)
    line = next(line for line in interrupted["outcome"]["stderr"].splitlines() if "--resume" in line)
    command = shlex.split(re.search(r"python train\.py .*", line).group(0))
    command = [arg.replace(str(original), str(run)) for arg in command[2:]]
    # --max-minutes only bounds this test: the steps budget is not given, so it stays the run's.
    result = run_train(*command, "--max-minutes", "0.05", "--output-dir", str(tmp_path / "unused"), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert load_config(run / "config.yaml").total_timesteps == LONG_BUDGET


def test_a_run_folder_another_process_trains_in_cannot_be_resumed(e2e, tmp_path):
    """Two resumes of one run at once would overwrite each other's checkpoints, model and curve: the second is
    refused in one line and writes nothing, and a holder killed with -9 leaves no lock behind."""
    from yacht_lab.training.runs import run_folder_lock

    run = copy_run(e2e["run"], tmp_path)
    before = {path: path.read_bytes() for path in run.rglob("*") if path.is_file()}
    args = ["--resume", str(run / "checkpoints" / "step_1024.zip"), "--total-timesteps", "2048"]
    # Another process trains there: the lock is held by a live process (here a child that holds it and sleeps).
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from yacht_lab.training.runs import run_folder_lock\n"
            "with run_folder_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(600)",
            str(run),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        result = run_train(*args, "--output-dir", str(tmp_path / "unused"), "--no-progress")
        check_clean_error(result, tmp_path / "unused", f"run folder '{run}' is in use: another training process")
        assert {path: path.read_bytes() for path in run.rglob("*") if path.is_file()} == before
        with pytest.raises(ValueError, match="is in use"), run_folder_lock(run):
            pass
    finally:
        holder.kill()  # kill -9: the kernel lets go of the lock with the process
        holder.wait()
        holder.stdout.close()
    with run_folder_lock(run):  # free again, with nothing to clean up
        pass
    assert {path: path.read_bytes() for path in run.rglob("*") if path.is_file()} == before


def test_resuming_a_finished_run_without_more_budget_is_one_clear_error(e2e, tmp_path):
    run = copy_run(e2e["run"], tmp_path)
    before = {path: path.read_bytes() for path in run.rglob("*") if path.is_file()}
    args = ["--resume", str(run / "checkpoints" / "step_2048.zip"), "--total-timesteps", "2048"]
    result = run_train(*args, "--output-dir", str(tmp_path / "unused"), "--no-progress")
    check_clean_error(result, tmp_path / "unused", "pass a larger --total-timesteps to continue")
    assert {path: path.read_bytes() for path in run.rglob("*") if path.is_file()} == before  # nothing written


@pytest.mark.parametrize(
    ("flag", "value"), [("--config", "configs/ppo.yaml"), ("--seed", "1"), ("--rules", "classic"), ("--n-envs", "2")]
)
def test_a_resumed_run_keeps_its_own_config(e2e, tmp_path, flag, value):
    run = copy_run(e2e["run"], tmp_path)
    args = ["--resume", str(run / "checkpoints" / "step_2048.zip"), flag, value, "--total-timesteps", "4096"]
    result = run_train(*args, "--output-dir", str(tmp_path / "unused"), "--no-progress")
    name = flag.removeprefix("--").replace("-", "_")
    expected = "--config cannot be combined with --resume" if flag == "--config" else f"not {name}"
    check_clean_error(result, tmp_path / "unused", expected)


# --------------------------------------------------------------------------------------------------
# Determinism, and what each evaluation and checkpoint holds (through the library, in this process)
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def library_runs(tmp_path_factory):
    """Tiny runs with a constant learning rate (so the last update changes the policy): seeds 0, 0, 1."""
    tmp = tmp_path_factory.mktemp("library")
    path = write_config(tmp / "tiny.yaml", ppo={"learning_rate_final": 3e-4})
    runs = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        config = load_config(path, {"seed": seed})
        runs[name] = train(config, tmp / name, command=f"test {name}", progress=False)
    return {"config": load_config(path), "runs": runs}


def test_same_seed_same_run(library_runs):
    a, b = library_runs["runs"]["a"], library_runs["runs"]["b"]
    columns = ("timesteps", "mean_score", "score_ci95", "percent_of_optimal", "mean_regret")
    assert [[row[c] for c in columns] for row in curve_rows(a)] == [[row[c] for c in columns] for row in curve_rows(b)]
    assert same_parameters(parameters(a / "model.zip"), parameters(b / "model.zip"))
    assert same_parameters(parameters(a / "checkpoints/step_1024.zip"), parameters(b / "checkpoints/step_1024.zip"))


def test_another_seed_another_run(library_runs):
    a, c = library_runs["runs"]["a"], library_runs["runs"]["c"]
    assert not same_parameters(parameters(a / "model.zip"), parameters(c / "model.zip"))


def test_the_library_run_writes_the_command_it_is_given(library_runs):
    assert (library_runs["runs"]["a"] / "command.txt").read_text() == "test a\n"


def test_the_last_curve_row_is_model_zip(library_runs):
    run, config = library_runs["runs"]["a"], library_runs["config"]
    model = MaskablePPO.load(str(run / "model.zip"), device="cpu")
    final = evaluate_model(model, config.rules, config.eval.games, config.eval.seed)
    assert curve_rows(run)[-1]["timesteps"] == model.num_timesteps == 2048
    assert curve_rows(run)[-1]["mean_score"] == final["mean"]


def test_the_entropy_bonus_decays_linearly_over_the_budget(library_runs):
    # Rollouts of 1,024 steps in a 2,048-step budget: the updates use ent_coef at 1/2 and 2/2 of the way.
    run, ppo = library_runs["runs"]["a"], library_runs["config"].ppo
    at = {
        step: MaskablePPO.load(str(run / f"checkpoints/step_{step}.zip"), device="cpu").ent_coef
        for step in (1024, 2048)
    }
    assert at == {1024: pytest.approx((ppo.ent_coef + ppo.ent_coef_final) / 2), 2048: pytest.approx(ppo.ent_coef_final)}
    assert ppo.ent_coef != ppo.ent_coef_final


def test_a_checkpoint_holds_the_policy_trained_on_its_steps(library_runs):
    run, config = library_runs["runs"]["a"], library_runs["config"]
    env = make_vec_env(config)
    initial = {k: v.clone() for k, v in make_model(config, env, None).policy.state_dict().items()}
    env.close()
    assert not same_parameters(parameters(run / "checkpoints/step_1024.zip"), initial)


# --------------------------------------------------------------------------------------------------
# Errors: exit status 2, one line, no traceback, no run folder
# --------------------------------------------------------------------------------------------------
def check_clean_error(result: subprocess.CompletedProcess, output_dir: Path, fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("train.py: error: "), result.stderr
    assert fragment in result.stderr, result.stderr
    assert result.stdout == ""
    assert not output_dir.exists()


CONFIG_ERRORS = {
    "missing file": (None, "cannot read config"),
    "invalid YAML": ("rules: [standard\n", "is not valid YAML"),
    "binary file": (b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary", "is not a YAML text file: byte 0 is not UTF-8"),
    "not a mapping": ("- 1\n- 2\n", "must be a mapping"),
    # A few lines of aliases expand into billions of values (it ran past two minutes): refused as read.
    "aliases": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n",
        "is not valid YAML: aliases (*a) are not accepted; write the values out (line 2)",
    ),
    "over 1 MiB": ("n_envs: 8\n" + "#" * (1 << 20), "is over 1,048,576 bytes: not a config file"),
    # PyYAML's composer recurses once a level: 100,000 levels of lists in 200 KB were a RecursionError traceback.
    "lists nested 100,000 deep": (
        "policy: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "is not valid YAML: values are nested more than 64 levels deep (line 1)",
    ),
    "mappings nested 50,000 deep": (
        "policy: " + "{a: " * 50_000 + "1" + "}" * 50_000 + "\n",
        "is not valid YAML: values are nested more than 64 levels deep (line 1)",
    ),
    "block lists nested 100,000 deep": (
        "policy:\n  " + "- " * 100_000 + "1\n",
        "is not valid YAML: values are nested more than 64 levels deep (line 2)",
    ),
    "unknown key": ("n_env: 8\n", "unknown config key n_env;"),
    "unknown nested key": ("ppo:\n  n_stepz: 128\n", "unknown config key ppo.n_stepz;"),
    "n_envs 0": ({"n_envs": 0}, "n_envs must be an int >= 1, got 0"),
    "gamma 1.5": ({"ppo": {"gamma": 1.5}}, "ppo.gamma must be in 0..1, got 1.5"),
    "empty net_arch": ({"policy": {"net_arch": []}}, "policy.net_arch must be"),
    "batch over rollout": ({"ppo": {"batch_size": 2048}}, "ppo.batch_size (2048) must not exceed"),
    "unknown rules": ({"rules": "nope"}, "unknown rules 'nope'"),
    "eval.games 0": ({"eval": {"games": 0}}, "eval.games must be an int >= 1, got 0"),
    # 10**7 deals at a table played for minutes before the first evaluation said anything.
    "versus eval.games 10**7": (
        {"opponents": ["greedy"], "reward": "win", "eval": {"games": 10**7}},
        "eval.games must be at most 250,000 deals at a table of 2 (each is played 4 times, at most 1,000,000 games",
    ),
    "league eval.games 10**5 at 10": (
        {"league": {"fixed": ["greedy"], "players": 10}, "reward": "win", "eval": {"games": 10**5}},
        "eval.games must be at most 10,000 deals at a table of 10",
    ),
    "reward_scale -1": ({"reward_scale": -1}, "reward_scale must be a number > 0, got -1"),
    "chase_inputs 1": ({"policy": {"chase_inputs": 1}}, "policy.chase_inputs must be true or false, got 1"),
    "keep_head yes": ({"policy": {"keep_head": "yes"}}, "policy.keep_head must be true or false, got 'yes'"),
    "bonus_odds 0": ({"policy": {"bonus_odds": 0}}, "policy.bonus_odds must be true or false, got 0"),
}


@pytest.mark.parametrize("case", list(CONFIG_ERRORS))
def test_a_bad_config_is_one_clear_error(tmp_path, case):
    content, fragment = CONFIG_ERRORS[case]
    path = tmp_path / "c.yaml"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, dict):
        write_config(path, **content)
    result = run_train("--config", str(path), "--output-dir", str(tmp_path / "runs"))
    check_clean_error(result, tmp_path / "runs", fragment)


@pytest.mark.parametrize("flow", [True, False])
def test_the_yaml_reader_takes_values_64_deep_and_refuses_65(tmp_path, flow):
    from yacht_lab.training.yaml_reader import MAX_YAML_DEPTH, read_yaml

    def nested(depth: int) -> str:
        return (
            "[" * depth + "1" + "]" * depth
            if flow
            else "".join("  " * i + "-\n" for i in range(depth)) + "  " * depth + "1"
        )

    path = tmp_path / "deep.yaml"
    path.write_text(nested(MAX_YAML_DEPTH - 1))  # the document's own node is the 64th level
    value = read_yaml(path)
    for _ in range(MAX_YAML_DEPTH - 1):
        value = value[0]
    assert value == 1
    path.write_text(nested(MAX_YAML_DEPTH))
    with pytest.raises(ValueError, match=f"nested more than {MAX_YAML_DEPTH} levels deep"):
        read_yaml(path)


def test_unknown_keys_of_mixed_types_are_one_clear_error(tmp_path):
    (tmp_path / "c.yaml").write_text("1: 2\nfoo: 3\n")
    result = run_train("--config", str(tmp_path / "c.yaml"), "--output-dir", str(tmp_path / "runs"))
    check_clean_error(result, tmp_path / "runs", "unknown config key")


def test_an_unknown_device_is_one_clear_error(tmp_path):
    config = write_config(tmp_path / "c.yaml")
    result = run_train("--config", str(config), "--device", "nope", "--output-dir", str(tmp_path / "runs"))
    check_clean_error(result, tmp_path / "runs", "device")


CLI_ERRORS = [
    ("--total-timesteps", "0"),
    ("--total-timesteps", "abc"),
    ("--seed", "-1"),
    ("--n-envs", "0"),
    ("--rules", "nope"),
    ("--max-minutes", "0"),
    ("--max-minutes", "nan"),
]


@pytest.mark.parametrize(("flag", "value"), CLI_ERRORS)
def test_a_bad_cli_value_is_one_clear_error(tmp_path, flag, value):
    config = write_config(tmp_path / "c.yaml")
    result = run_train("--config", str(config), flag, value, "--output-dir", str(tmp_path / "runs"))
    check_clean_error(result, tmp_path / "runs", f"argument {flag}: ")


def test_resuming_a_missing_checkpoint_is_one_clear_error(tmp_path):
    missing = tmp_path / "run" / "checkpoints" / "step_1024.zip"
    result = run_train("--resume", str(missing), "--output-dir", str(tmp_path / "runs"))
    check_clean_error(result, tmp_path / "runs", f"checkpoint '{missing}' not found")
    assert not (tmp_path / "run").exists()


@pytest.fixture
def corrupt_checkpoint(tmp_path):
    """A run folder (config, one command) whose only checkpoint is garbage bytes."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    write_config(run / "config.yaml")
    (run / "command.txt").write_text("train.py --config c.yaml\n")
    checkpoint = run / "checkpoints" / "step_1024.zip"
    checkpoint.write_bytes(bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)))
    return checkpoint


def test_resuming_a_corrupt_checkpoint_is_one_clear_error(tmp_path, corrupt_checkpoint):
    args = ["--resume", str(corrupt_checkpoint), "--output-dir", str(tmp_path / "runs")]
    result = run_train(*args)
    check_clean_error(result, tmp_path / "runs", f"cannot resume from '{corrupt_checkpoint}'")


def test_resuming_a_corrupt_checkpoint_writes_nothing(tmp_path, corrupt_checkpoint):
    run = corrupt_checkpoint.parent.parent
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    loose = tmp_path / "loose" / "model.zip"
    loose.parent.mkdir()
    loose.write_bytes(corrupt_checkpoint.read_bytes())
    config = load_config(write_config(tmp_path / "c.yaml"))
    for checkpoint in (corrupt_checkpoint, loose):
        with pytest.raises(ValueError, match=r"^cannot resume from "):
            train(config, tmp_path / "runs", resume=checkpoint, command="resume", progress=False)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert [p.name for p in loose.parent.iterdir()] == ["model.zip"]
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------------------------------
# Hardening (issue 15): what a hostile or an unlucky user still broke
# --------------------------------------------------------------------------------------------------
def test_every_file_of_a_run_gets_the_usual_mode(e2e):
    # Written atomically, yet not with mkstemp's private 0600: 0644 under the umask 022 the run had.
    modes = {p.relative_to(e2e["run"]): stat.S_IMODE(p.stat().st_mode) for p in e2e["run"].rglob("*")}
    files = {path: mode for path, mode in modes.items() if (e2e["run"] / path).is_file()}
    assert {"config.yaml", "command.txt", "model.zip", "learning_curve.csv", "learning_curve.png"} <= {
        path.name for path in files
    }
    assert set(files.values()) == {0o644}, files
    assert modes[Path("checkpoints")] == 0o755


def test_run_folders_are_claimed_exclusively(tmp_path, monkeypatch):
    # Two runs started in the same second (so with the same name) never share a folder.
    monkeypatch.setattr(runs, "run_name", lambda config: "Yacht-v0__standard__ppo__0__1700000000")
    config = load_config(write_config(tmp_path / "c.yaml"))
    first, created = claim_run_folder(tmp_path / "out" / "runs", config)
    second, _ = claim_run_folder(tmp_path / "out" / "runs", config)
    third, _ = claim_run_folder(tmp_path / "out" / "runs", config)
    assert [first.name, second.name, third.name] == [
        "Yacht-v0__standard__ppo__0__1700000000",
        "Yacht-v0__standard__ppo__0__1700000000-2",
        "Yacht-v0__standard__ppo__0__1700000000-3",
    ]
    assert created == [tmp_path / "out", tmp_path / "out" / "runs", first]
    assert all(list(folder.iterdir()) == [] for folder in (first, second, third))


def test_a_run_never_writes_into_another_runs_folder(tmp_path, monkeypatch):
    name = "Yacht-v0__standard__ppo__0__1700000000"
    monkeypatch.setattr(runs, "run_name", lambda config: name)
    other = tmp_path / "runs" / name
    other.mkdir(parents=True)
    (other / "config.yaml").write_text("the other run's\n")
    run = train(load_config(write_config(tmp_path / "c.yaml")), tmp_path / "runs", command="mine", progress=False)
    assert run == tmp_path / "runs" / f"{name}-2"
    assert [p.name for p in other.iterdir()] == ["config.yaml"]
    assert (other / "config.yaml").read_text() == "the other run's\n"
    assert (run / "command.txt").read_text() == "mine\n"


def test_a_failed_build_removes_the_claimed_folder(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("the build failed")

    monkeypatch.setattr(training, "start_model", fail)
    config = load_config(write_config(tmp_path / "c.yaml"))
    with pytest.raises(RuntimeError, match="the build failed"):
        train(config, tmp_path / "out" / "runs", progress=False)
    assert list(tmp_path.iterdir()) == [tmp_path / "c.yaml"]  # neither the run folder nor the folders made for it


def test_a_signal_before_training_starts_aborts_and_removes_the_claimed_folder(tmp_path, monkeypatch):
    def interrupted_build(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # only noted: the run aborts at its next safe point

    monkeypatch.setattr(training, "start_model", interrupted_build)
    config = load_config(write_config(tmp_path / "c.yaml"))
    with pytest.raises(Abort) as raised:
        train(config, tmp_path / "runs", progress=False)
    assert raised.value.signum == signal.SIGINT
    assert not (tmp_path / "runs").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored


def test_once_armed_the_first_signal_asks_to_stop_and_the_second_aborts():
    with StopFlag() as stop:
        stop.arm()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested
        with pytest.raises(Abort) as raised:
            os.kill(os.getpid(), signal.SIGINT)  # only noted: raised at the next safe point
            stop.check()
        assert raised.value.signum == signal.SIGINT
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.parametrize("kind", ["a file", "under a file"])
def test_an_output_dir_that_is_not_a_folder_is_one_clear_error(tmp_path, kind):
    (tmp_path / "README.md").write_text("a file\n")
    output_dir = tmp_path / "README.md" if kind == "a file" else tmp_path / "README.md" / "runs"
    config = write_config(tmp_path / "c.yaml")
    before = snapshot(tmp_path)
    start = time.monotonic()
    result = run_train("--config", str(config), "--output-dir", str(output_dir), "--no-progress")
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"train.py: error: cannot create a run folder in --output-dir '{output_dir}': "
        f"'{tmp_path / 'README.md'}' is a file\n"
    )
    assert result.stdout == "" and snapshot(tmp_path) == before
    assert time.monotonic() - start < 60  # before the model build and the reference evaluation


def test_a_read_only_output_dir_is_one_clear_error(tmp_path):
    output_dir = tmp_path / "ro"
    output_dir.mkdir()
    output_dir.chmod(0o555)
    try:
        if os.access(output_dir, os.W_OK):
            pytest.skip("this user (root) can write into a read-only folder")
        result = run_train("--config", str(write_config(tmp_path / "c.yaml")), "--output-dir", str(output_dir))
        assert result.returncode == 2 and "Permission denied" in result.stderr and "Traceback" not in result.stderr
        assert list(output_dir.iterdir()) == []
    finally:
        output_dir.chmod(0o755)


CRASHING_CONFIGS = {
    "device meta": ({"device": "meta"}, "device must be cpu, cuda, cuda:<i> or mps, got 'meta'"),
    "a missing GPU": ({"device": "cuda:99"}, "device 'cuda:99' is not available: torch sees"),
    "100,000 threads": ({"torch_threads": 100000}, "torch_threads must be an int >= 1 and <= 256, got 100000"),
    "10**12 envs": ({"n_envs": 10**12}, "n_envs must be an int >= 1 and <= 100,000, got 1000000000000"),
}


@pytest.mark.parametrize("case", list(CRASHING_CONFIGS))
def test_a_config_that_would_crash_later_is_one_clear_error(tmp_path, case):
    changes, fragment = CRASHING_CONFIGS[case]
    result = run_train(
        "--config", str(write_config(tmp_path / "c.yaml", **changes)), "--output-dir", str(tmp_path / "r")
    )
    check_clean_error(result, tmp_path / "r", fragment)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seed": 2**32}, "seed must be an int >= 0 and <= 4,294,967,295, got 4294967296"),
        ({"torch_threads": 257}, "torch_threads must be an int >= 1 and <= 256, got 257"),
        ({"device": "cuda"}, "device 'cuda' is not available: torch sees no CUDA GPU on this machine"),
        ({"device": "mps"}, "device 'mps' is not available: torch sees no MPS device on this machine"),
        ({"device": "xla"}, "device must be cpu, cuda, cuda:<i> or mps, got 'xla'"),
        ({"n_envs": 100_001}, "n_envs must be an int >= 1 and <= 100,000, got 100001"),
        (
            {"n_envs": 100_000, "ppo": {"n_steps": 101}},
            "the rollout size n_steps x n_envs (101 x 100000) must be at most 10,000,000 steps",
        ),
        ({"ppo": {"n_steps": 10**12}}, "ppo.n_steps must be an int >= 1 and <= 10,000,000, got 1000000000000"),
        ({"eval": {"games": 10**15}}, "eval.games must be an int >= 1 and <= 10,000,000, got 1000000000000000"),
        (
            {"policy": {"net_arch": [10**9]}},
            "policy.net_arch must be a list of 1..16 ints in 1..8192, got [1000000000]",
        ),
        ({"policy": {"net_arch": [8] * 17}}, "policy.net_arch must be a list of 1..16 ints in 1..8192"),
    ],
)
def test_sizes_and_devices_are_bounded_up_front(tmp_path, changes, message):
    if changes.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    if changes.get("device") == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        load_config(write_config(tmp_path / "c.yaml", **changes))


def test_the_limits_themselves_are_accepted(tmp_path):
    changes = {"seed": 2**32 - 1, "torch_threads": 256, "n_envs": 100_000, "policy": {"net_arch": [8192] + [1] * 15}}
    changes["checkpoint_every_timesteps"] = 10**7  # one update's steps: a checkpoint after every update, asked for
    config = load_config(write_config(tmp_path / "c.yaml", **changes, ppo={"n_steps": 100}, eval={"games": 10**7}))
    assert (config.seed, config.n_envs, config.ppo.n_steps, config.eval.games) == (2**32 - 1, 100_000, 100, 10**7)


def test_a_resume_after_kill_9_repairs_the_curve_and_cleans_the_temp_files(e2e, tmp_path):
    # kill -9 while an older version appended a curve row, and while files were being written.
    run = copy_run(e2e["run"], tmp_path)
    curve = run / "learning_curve.csv"
    text = curve.read_text()
    curve.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 9])  # the last row cut after 8 characters
    pid = dead_pid()
    stale = [run / f".model.zip.{pid}-0123abcd.tmp", run / "checkpoints" / f".step_2048.zip.{pid}-4567cdef.tmp"]
    legacy = [run / "checkpoints" / "step_1536.tmp.zip", run / "learning_curve.tmp"]  # names of older versions
    live = run / "checkpoints" / f".step_2048.zip.{os.getpid()}-89abcdef.tmp"  # a process alive now: kept
    for path in [*stale, *legacy, live]:
        path.write_bytes(b"\x00" * 100)
    for path in legacy:
        os.utime(path, (time.time() - 3601,) * 2)
    args = ["--resume", str(run / "checkpoints" / "step_1024.zip"), "--total-timesteps", "2048"]
    result = run_train(*args, "--output-dir", str(tmp_path / "unused"), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert timesteps(run) == [0, 1024, 2048]
    assert curve_lines(run)[:3] == text.splitlines()[:3]
    assert not any(path.exists() for path in [*stale, *legacy]) and live.exists()
    live.unlink()
    assert checkpoint_steps(run) == [1024, 2048]
    assert len((run / "command.txt").read_text().splitlines()) == 2


def test_a_resume_that_cannot_start_changes_nothing(e2e, tmp_path):
    # A curve damaged before its last row is not guessed at: one clear error, and config.yaml, command.txt
    # and the curve stay as they were.
    run = copy_run(e2e["run"], tmp_path)
    lines = curve_lines(run)
    (run / "learning_curve.csv").write_text("\n".join([lines[0], "0,garbage", *lines[2:]]) + "\n")
    before = snapshot(run)
    args = ["--resume", str(run / "checkpoints" / "step_1024.zip"), "--total-timesteps", "4096"]
    result = run_train(*args, "--output-dir", str(tmp_path / "unused"), "--no-progress")
    check_clean_error(result, tmp_path / "unused", "line 2 is not a learning-curve row: '0,garbage'")
    assert snapshot(run) == before


@pytest.mark.slow
def test_a_second_sigint_quits_at_once_without_a_traceback(tmp_path):
    config = write_config(tmp_path / "long.yaml", total_timesteps=LONG_BUDGET)
    output_dir = tmp_path / "runs"
    args = ["--config", str(config), "--output-dir", str(output_dir), "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "train.py", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        lines = []
        while not any(line.startswith("[") and not line.startswith("[         0 steps") for line in lines):
            line = proc.stderr.readline()
            assert line, (proc.wait(), "".join(lines))
            lines.append(line)
        proc.send_signal(signal.SIGINT)  # the first: stop after this update and save
        while not lines[-1].startswith("stopping: "):
            lines.append(proc.stderr.readline())
            assert lines[-1], "".join(lines)
        # While the run saves: pause it, so that the second signal surely arrives before it is done.
        proc.send_signal(signal.SIGSTOP)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        proc.send_signal(signal.SIGCONT)
        stdout, stderr = proc.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert stderr == "train.py: interrupted (SIGINT): quit at once, without saving\n"
    assert stdout == "" and seconds < 10
    run = next(output_dir.iterdir())
    assert list(run.rglob(".*.tmp")) == []  # nothing half-written left behind
    for checkpoint in (run / "checkpoints").iterdir():
        assert MaskablePPO.load(str(checkpoint), device="cpu").num_timesteps == int(checkpoint.stem[len("step_") :])


def test_sigint_during_the_imports_is_one_line_exit_130(tmp_path):
    args = ["--config", str(write_config(tmp_path / "c.yaml")), "--output-dir", str(tmp_path / "runs")]
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPT_AT_IMPORT, "torch", "train.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (130, "")
    assert done.stderr == "train.py: interrupted (SIGINT): quit at once, without saving\n"
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------------------------------
# Versus runs: train.py --opponents ... trains one seat at tables of YachtVersus-v0
# --------------------------------------------------------------------------------------------------
VERSUS_HEADER = ",".join(
    ["timesteps", "wall_minutes", "win_rate", "win_rate_ci95", "mean_score", "score_ci95", "percent_of_optimal"]
    + ["mean_margin", "steps_per_second"]
)


def test_the_versus_keys_default_to_solo_training(tmp_path):
    config = TrainConfig()
    assert (config.opponents, config.reward, config.seat) == ([], "score", "random")
    solo = load_config(write_config(tmp_path / "c.yaml"))
    assert runs.run_name(solo).startswith("Yacht-v0__standard__ppo__0__")
    assert tasks.curve_fields(solo) == CURVE_FIELDS
    env = make_vec_env(solo)
    try:
        assert not env.venv.versus and env.observation_space.shape == (64,)
    finally:
        env.close()


def test_a_versus_config_builds_the_versus_env(tmp_path):
    path = write_config(tmp_path / "c.yaml", opponents=["greedy", "random"], reward="win", seat=2)
    config = load_config(path)
    assert runs.run_name(config).startswith("YachtVersus-v0__standard__ppo__0__")
    assert tasks.curve_fields(config) == VERSUS_CURVE_FIELDS
    env = make_vec_env(config)
    try:
        versus = env.venv.vector_env
        assert env.venv.versus and env.num_envs == TINY["n_envs"]
        assert env.observation_space.shape == (64 + 13 * 2 + 2,)  # the table's view from the learner's seat
        assert (versus.num_players, versus.seat, versus.reward_mode) == (3, 2, "win")
        assert env.scale == TINY.get("reward_scale", TrainConfig().reward_scale)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"opponents": "greedy"}, "opponents"),
        ({"opponents": ["greedy"] * 10}, "opponents"),
        ({"opponents": ["nope"]}, "opponents[0]"),
        ({"opponents": ["greedy", 3]}, "opponents[1]"),
        ({"opponents": ["ppo:/no/such/model.zip"]}, "opponents[0]"),
        ({"reward": "draw"}, "reward"),
        ({"reward": "win"}, "reward"),
        ({"opponents": ["greedy"], "seat": 2}, "seat"),
        ({"opponents": ["greedy"], "seat": True}, "seat"),
        ({"opponents": ["greedy"], "seat": -1}, "seat"),
        ({"seat": "first"}, "seat"),
    ],
)
def test_load_config_names_the_bad_versus_field(tmp_path, changes, field):
    path = write_config(tmp_path / "c.yaml", **changes)
    with pytest.raises(ValueError, match=rf"^{re.escape(field)}[ :]"):
        load_config(path)


@pytest.fixture(scope="module")
def versus(tmp_path_factory):
    """A tiny versus run from the CLI: one seat (random) at 8 tables against greedy, the win reward."""
    tmp = tmp_path_factory.mktemp("versus")
    config = write_config(tmp / "tiny.yaml", eval={"games": 50})
    args = ["--config", str(config), "--opponents", "greedy", "--reward", "win", "--total-timesteps", "2048"]
    args += ["--n-envs", "8", "--output-dir", str(tmp / "runs"), "--no-progress"]
    result = run_train(*args)
    assert result.returncode == 0, result.stderr
    return {"args": args, "config": config, "result": result, "run": run_folder(result.stdout), "tmp": tmp}


def test_a_versus_run_folder_is_named_for_the_versus_env(versus):
    run = versus["run"]
    assert run.parent == versus["tmp"] / "runs"
    assert re.fullmatch(r"YachtVersus-v0__standard__ppo__0__\d{10}", run.name)
    assert {p.name for p in run.iterdir()} == RUN_FILES


def test_a_versus_config_yaml_holds_the_versus_keys(versus):
    raw = yaml.safe_load((versus["run"] / "config.yaml").read_text())
    assert (raw["opponents"], raw["reward"], raw["seat"]) == (["greedy"], "win", "random")
    overrides = {"opponents": ["greedy"], "reward": "win", "total_timesteps": 2048, "n_envs": 8}
    assert load_config(versus["run"] / "config.yaml") == load_config(versus["config"], overrides)
    assert (versus["run"] / "command.txt").read_text() == shlex.join(["train.py", *versus["args"]]) + "\n"


def test_a_versus_model_sees_the_table_and_plays_at_it(versus):
    from yacht_lab.measure.head_to_head import head_to_head

    model = versus["run"] / "model.zip"
    loaded = MaskablePPO.load(str(model), device="cpu")
    assert loaded.observation_space.shape == (79,) and loaded.num_timesteps == 2048
    agent = make_agent(f"ppo:{model}")
    assert agent.table_players == 2
    # head_to_head raises on any illegal action.
    result = head_to_head([agent, make_agent("greedy")], 2, 10, seed=0).to_dict()
    assert result["agents"][f"ppo:{model}"]["games"] == 40


def test_a_versus_learning_curve_has_the_win_rate_columns(versus):
    run = versus["run"]
    assert curve_lines(run)[0] == VERSUS_HEADER
    assert tuple(VERSUS_HEADER.split(",")) == VERSUS_CURVE_FIELDS
    rows = curve_rows(run)
    assert [row["timesteps"] for row in rows] == [0, 1024, 2048]
    optimal = solve("standard").expected_score
    for row in rows:
        assert 0 <= row["win_rate"] <= 1 and 0 <= row["win_rate_ci95"] <= 1
        assert 0 <= row["mean_score"] <= 375 and row["score_ci95"] > 0
        assert row["percent_of_optimal"] == pytest.approx(100 * row["mean_score"] / optimal, abs=1e-6)
        # greedy scores about 140-190: the margin is the learner's score less greedy's over the same games.
        assert -375 <= row["mean_margin"] <= 375 and row["mean_score"] - row["mean_margin"] > 100
        assert row["wall_minutes"] >= 0
    assert math.isfinite(rows[-1]["steps_per_second"]) and rows[-1]["steps_per_second"] > 0
    # The last row is model.zip against greedy on the run's evaluation deals.
    config = load_config(run / "config.yaml")
    model = MaskablePPO.load(str(run / "model.zip"), device="cpu")
    final = evaluate_versus(model, config.rules, config.opponents, config.eval.games, config.eval.seed)
    assert {key: rows[-1][key] for key in VERSUS_CURVE_FIELDS[2:-1]} == pytest.approx(final)


def test_evaluate_versus_counts_ties_half_and_agrees_with_head_to_head(versus):
    from yacht_agents.ppo import PPOAgent
    from yacht_lab.measure.head_to_head import head_to_head

    model = MaskablePPO.load(str(versus["run"] / "model.zip"), device="cpu")
    result = evaluate_versus(model, "standard", ["greedy"], 20, 7)
    pair = head_to_head([PPOAgent.from_model(model, "standard"), make_agent("greedy")], 2, 20, 7).to_dict()
    pair = pair["head_to_head"]["ppo vs greedy"]
    lo, hi = pair["win_rate_a_ci95"]
    assert result["win_rate"] == pytest.approx(pair["win_rate_a"])
    assert result["win_rate_ci95"] == pytest.approx((hi - lo) / 2)
    assert result["mean_margin"] == pytest.approx(pair["mean_margin_a"])


def test_evaluate_versus_seats_copies_of_one_opponent_and_takes_the_margin_over_their_mean(tmp_path):
    from yacht_agents.ppo import PPOAgent
    from yacht_lab.measure.head_to_head import head_to_head

    # A solo model (the 64-value view) may sit at any table; here at three players, against two greedy copies.
    config = load_config(write_config(tmp_path / "c.yaml"))
    env = make_vec_env(config)
    model = make_model(config, env, None)
    env.close()
    result = evaluate_versus(model, "standard", ["greedy", "greedy"], 5, 7)
    greedy = [make_agent("greedy"), make_agent("greedy")]
    greedy[1].name = "greedy #2"
    report = head_to_head([PPOAgent.from_model(model, "standard"), *greedy], 3, 5, 7).to_dict()["agents"]
    assert result["win_rate"] == pytest.approx(report["ppo"]["win_share"])
    assert result["mean_score"] == pytest.approx(report["ppo"]["mean_score"])
    others = (report["greedy"]["mean_score"] + report["greedy #2"]["mean_score"]) / 2
    assert result["mean_margin"] == pytest.approx(report["ppo"]["mean_score"] - others)


def test_a_versus_learning_curve_png_is_a_png(versus):
    width, height = png_size(versus["run"] / "learning_curve.png")
    assert width > height > 100


@pytest.mark.slow
def test_a_versus_run_resumes_with_its_own_opponents(versus, tmp_path):
    run = copy_run(versus["run"], tmp_path)
    checkpoint = run / "checkpoints" / "step_1024.zip"
    args = ["--resume", str(checkpoint), "--total-timesteps", "3072", "--output-dir", str(tmp_path / "unused")]
    result = run_train(*args, "--no-progress")
    assert result.returncode == 0, result.stderr
    assert run_folder(result.stdout) == run and not (tmp_path / "unused").exists()
    assert curve_lines(run)[0] == VERSUS_HEADER
    assert timesteps(run) == [0, 1024, 2048, 3072]  # the old 2,048 row replaced by the resumed run's
    assert checkpoint_steps(run) == [1024, 2048, 3072]
    config = load_config(run / "config.yaml")
    assert (config.opponents, config.reward, config.seat, config.total_timesteps) == (["greedy"], "win", "random", 3072)
    assert MaskablePPO.load(str(run / "model.zip"), device="cpu").observation_space.shape == (79,)
    assert len((run / "command.txt").read_text().splitlines()) == 2


@pytest.mark.parametrize(("flag", "value"), [("--opponents", "random"), ("--reward", "score"), ("--seat", "0")])
def test_a_resumed_versus_run_keeps_its_opponents_reward_and_seat(versus, tmp_path, flag, value):
    run = copy_run(versus["run"], tmp_path)
    args = ["--resume", str(run / "checkpoints" / "step_2048.zip"), flag, value, "--total-timesteps", "4096"]
    result = run_train(*args, "--output-dir", str(tmp_path / "unused"), "--no-progress")
    check_clean_error(result, tmp_path / "unused", f"not {flag.removeprefix('--')}")


VERSUS_ERRORS = {
    "unknown opponent": (["--opponents", "nope"], "opponents[0] is an unknown agent 'nope'"),
    "ten opponents": (["--opponents", *["greedy"] * 10], "opponents must be a list of 0..9 agent specs"),
    "seat out of range": (
        ["--opponents", "greedy", "optimal", "--seat", "3"],
        "seat must be 'random' or an int in 0..2",
    ),
    "win without opponents": (["--reward", "win"], "reward 'win' needs opponents"),
    "missing ppo opponent": (["--opponents", "ppo:no/such.zip"], "opponents[0]: cannot load PPO model 'no/such.zip'"),
    "bad seat flag": (["--opponents", "greedy", "--seat", "first"], "argument --seat: "),
    "bad reward flag": (["--opponents", "greedy", "--reward", "draw"], "argument --reward: "),
    "no opponent after the flag": (["--opponents"], "argument --opponents: "),
}


@pytest.mark.parametrize("case", list(VERSUS_ERRORS))
def test_bad_versus_inputs_are_one_clear_error(tmp_path, case):
    flags, fragment = VERSUS_ERRORS[case]
    config = write_config(tmp_path / "c.yaml")
    result = run_train("--config", str(config), *flags, "--output-dir", str(tmp_path / "runs"))
    check_clean_error(result, tmp_path / "runs", fragment)


@pytest.mark.slow
def test_a_ppo_opponent_of_another_table_size_is_one_clear_error(versus, tmp_path):
    # The versus model sees a 2-player table: it cannot sit at a 3-player one, nor in a corrupt file.
    model = versus["run"] / "model.zip"
    config = write_config(tmp_path / "c.yaml")
    result = run_train(
        "--config", str(config), "--opponents", f"ppo:{model}", "greedy", "--output-dir", str(tmp_path / "runs")
    )
    check_clean_error(result, tmp_path / "runs", "was trained at a table of 2 players; this one has 3")
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    result = run_train(
        "--config", str(config), "--opponents", f"ppo:{tmp_path / 'bad.zip'}", "--output-dir", str(tmp_path / "runs")
    )
    check_clean_error(result, tmp_path / "runs", "not a MaskablePPO model")


def test_a_named_run_folder_is_that_folder_and_never_an_existing_one(tmp_path):
    """``train(name=...)`` (a sweep's trial): exactly ``output_dir/name``; an existing one is an error that leaves
    no folder it made."""
    config = TrainConfig()
    folder, created = claim_run_folder(tmp_path / "a" / "b", config, "trial__seed0")
    assert folder == tmp_path / "a" / "b" / "trial__seed0" and folder.is_dir()
    assert created == [tmp_path / "a", tmp_path / "a" / "b", folder]
    with pytest.raises(ValueError, match="trial__seed0': it exists"):
        claim_run_folder(tmp_path / "a" / "b", config, "trial__seed0")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x").mkdir()
    with pytest.raises(ValueError, match="it exists"):
        claim_run_folder(tmp_path / "c", config, "x")
    with pytest.raises(ValueError, match="it exists"):
        claim_run_folder(tmp_path / "d" / "e", config, "..")  # d/e/.. is d, made just now: removed again
    assert not (tmp_path / "d").exists()


# --------------------------------------------------------------------------------------------------
# The shipped configs by name (after a wheel install there is no configs/ beside the user)
# --------------------------------------------------------------------------------------------------
def test_a_shipped_config_is_read_by_its_name_from_any_folder(tmp_path, monkeypatch):
    from yacht_lab.training.config import resolve_config, shipped_configs

    shipped = shipped_configs()
    assert sorted(shipped) == sorted(p.stem for p in (REPO / "configs").glob("*.yaml") if p.stem != "sweep")
    monkeypatch.chdir(tmp_path)
    for name, path in shipped.items():
        assert load_config(name) == load_config(path)
    (tmp_path / "yahtzee").write_text("rules: standard\n")  # a shipped name wins; ./yahtzee is the file
    assert load_config("yahtzee").rules == "yahtzee" and load_config("./yahtzee").rules == "standard"
    assert resolve_config("mine.yaml") == Path("mine.yaml")  # a .yaml name is a path, read as given
    with pytest.raises(ValueError, match=r"cannot read config 'nope': no shipped config of that name \(shipped: "):
        load_config("nope")


def test_train_py_takes_a_shipped_configs_name(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "--config", "yahtzee", "--device", "nosuch"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # read (the recipe's keys passed), then the flag's bad device refused: the name was found
    assert (done.returncode, done.stderr) == (
        2,
        "train.py: error: device must be a torch device name such as 'cpu' or 'cuda', got 'nosuch'\n",
    ), done.stderr


# --------------------------------------------------------------------------------------------------
# Hardening: bounds, one rounding rule, the curve's speed and seed, a FIFO config, NaN parameters
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"ppo": {"n_epochs": 10**9}}, "ppo.n_epochs must be an int >= 1 and <= 1,000, got 1000000000"),
        ({"ppo": {"learning_rate": 1e30}}, "ppo.learning_rate must be a number > 0 and <= 1.0, got 1e+30"),
        ({"ppo": {"learning_rate_final": 2.0}}, "ppo.learning_rate_final must be a number >= 0 and <= 1.0, got 2.0"),
        ({"total_timesteps": 2**70}, f"total_timesteps must be an int >= 1 and <= 1,000,000,000,000, got {2**70}"),
        ({"eval": {"seed": 2**70}}, f"eval.seed must be an int >= 0 and <= 4,294,967,295, got {2**70}"),
        ({"eval": {"every_timesteps": 2**70}}, "eval.every_timesteps must be an int >= 1 and <= 1,000,000,000,000"),
        ({"checkpoint_every_timesteps": 2**70}, "checkpoint_every_timesteps must be an int >= 1 and <= 1,000,000,"),
        ({"reward": "win", "jax": {"players": 2.0}}, "jax.players must be an int >= 1, got 2.0"),  # not the reward
        ({"jax": {"seeds": 64}, "policy": {"net_arch": [8192] * 8}}, "this JAX run would take about "),
    ],
)
def test_every_size_and_rate_is_bounded_before_a_run_starts(tmp_path, changes, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        load_config(write_config(tmp_path / "c.yaml", **changes))
    if "learning_rate" in changes.get("ppo", {}) or "jax" in changes:  # two through train.py: one line, nothing written
        result = run_train("--config", str(tmp_path / "c.yaml"), "--output-dir", str(tmp_path / "runs"))
        check_clean_error(result, tmp_path / "runs", message)


def test_a_distillations_learning_rate_is_bounded():
    from helpers import tiny_distill

    with pytest.raises(ValueError, match=r"^distill\.learning_rate must be a number > 0 and <= 1\.0, got 1e\+30"):
        tiny_distill(learning_rate=1e30)


def test_every_trainer_rounds_the_budget_up_to_whole_updates():
    from yacht_lab.training.schema import budget_steps

    config = load_config("jax_ppo")  # 64 games x 256 steps: updates of 16,384 steps
    assert [budget_steps(replace(config, total_timesteps=t)) for t in (1, 16_384, 100_000, 300_000)] == [
        16_384,
        16_384,
        114_688,
        311_296,
    ]


def test_a_config_that_is_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"^cannot read config '.*': it is a folder$"):
        load_config(tmp_path)
    # In a process of its own: a reader that waits for the FIFO's writer would wait for ever.
    result = run_train("--config", str(fifo), "--output-dir", str(tmp_path / "runs"), timeout=60)
    check_clean_error(result, tmp_path / "runs", f"cannot read config '{fifo}': it is not a regular file")


def test_the_curves_first_speed_is_zero_and_printed_as_such(e2e):
    rows = curve_rows(e2e["run"])
    assert rows[0]["steps_per_second"] == 0.0 and curve_lines(e2e["run"])[1].endswith(",0.0")
    first = next(line for line in e2e["result"].stderr.splitlines() if line.startswith("[         0 steps"))
    assert "nan" not in e2e["result"].stderr and first.endswith(", 0 steps/s")


def test_a_run_whose_parameters_stop_being_finite_ends_in_one_line(tmp_path, monkeypatch):
    from yacht_lab.training.sb3 import callbacks

    check = callbacks.FiniteCallback.check

    def poisoned(self):
        if self.model.num_timesteps >= 1024:  # after the first update: as a learning rate far too large would
            with torch.no_grad():
                next(self.model.policy.parameters()).fill_(float("nan"))
        check(self)

    monkeypatch.setattr(callbacks.FiniteCallback, "check", poisoned)
    config = load_config(write_config(tmp_path / "c.yaml", total_timesteps=4096))
    with pytest.raises(ValueError, match=r"^training diverged at step 1,024: the policy's .* is no longer finite"):
        yacht_lab.train(config, tmp_path / "runs", progress=False)
    (run,) = (tmp_path / "runs").iterdir()
    assert not (run / "model.zip").exists()
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == []  # nothing of the NaN was saved


def test_a_resumed_curve_keeps_its_seeds_as_ints(tmp_path):
    from yacht_lab.training.runs import read_curve, write_curve

    fields = ("timesteps", "wall_minutes", "seed", "mean_score")
    path = tmp_path / "learning_curve.csv"
    path.write_text("timesteps,wall_minutes,seed,mean_score\n0,0.1,0.0,40.5\n1024,0.2,1,41.0\n")  # an older curve
    rows = read_curve(path, fields)
    assert [row["seed"] for row in rows] == [0, 1] and all(type(row["seed"]) is int for row in rows)
    write_curve(path, rows, fields)
    assert path.read_text().splitlines()[1:] == ["0,0.1,0,40.5", "1024,0.2,1,41.0"]
