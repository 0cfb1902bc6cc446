"""Specification of the run context every trainer runs in (``yacht_lab.training.run_context``) and of the one place that
chooses a config's trainer (``yacht_lab.train``): the folder claimed and locked, the files, checkpoints and their
cadence, Ctrl-C and SIGTERM, resume, and each trainer refusing another's config in one line.

The context's tests use a trainer of a few lines (:class:`Counter`), so they take no time and need no extra.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import TINY_DISTILL, TINY_PPO, merged

import yacht_lab
from yacht_lab.training.config import from_dict, load_config, validate
from yacht_lab.training.run_context import Abort, RunContext, resume_checkpoint, resume_config
from yacht_lab.training.runs import run_folder_lock

FIELDS = ("timesteps", "wall_minutes", "value")


def config(**changes):
    """A validated tiny PPO config (the context reads its budget, checkpoint interval and ``max_minutes``) whose
    updates are the counter's steps of 10 (one env, 10 steps a rollout).
    """
    update = {"n_envs": 1, "ppo": {"n_steps": 10, "batch_size": 10}}
    return validate(
        from_dict(merged(TINY_PPO, {"checkpoint_every_timesteps": 100, "total_timesteps": 1000, **update, **changes}))
    )


class Counter:
    """A trainer's state in a few lines: a counter that steps by 10, checkpointed as its number in a text file."""

    checkpoint_suffix = ".txt"

    def __init__(self) -> None:
        self.steps = 0
        self.saved: list[Path] = []

    def progress(self) -> int:
        return self.steps

    def save_checkpoint(self, path: Path) -> None:
        path.write_text(str(self.steps))
        self.saved.append(path)

    def load_checkpoint(self, path: Path) -> None:
        text = path.read_text()
        if not text.isdigit():
            raise ValueError(f"cannot resume from {str(path)!r}: not a counter")
        self.steps = int(text)


class Uncheckpointed(Counter):
    """A trainer that cannot checkpoint."""

    checkpoint_suffix = None


def train_counter(run: RunContext, state: Counter, until: int, stop_at: int | None = None) -> None:
    """The loop of every trainer: step, evaluate, checkpoint when due, stop when asked; then the last checkpoint."""
    run.start(run.restore(state))
    while state.steps < until and not run.should_stop:
        state.steps += 10
        if state.steps == stop_at:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: only asks to stop
        if state.steps % 50 == 0:
            run.add_rows({"timesteps": state.steps, "wall_minutes": run.wall_minutes(), "value": state.steps / 10})
        run.checkpoint_if_due(state)
    run.end(state)


def names(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# --------------------------------------------------------------------------------------------------
# The folder, its files and its checkpoints
# --------------------------------------------------------------------------------------------------
def test_a_run_writes_the_contract_and_checkpoints_at_its_interval_and_end(tmp_path):
    with RunContext(config(), tmp_path / "runs", command="train it", fields=FIELDS) as run:
        state = Counter()
        train_counter(run, state, until=250)
    assert run.dir.parent == tmp_path / "runs" and "__ppo__0__" in run.dir.name
    assert names(run.dir) == [
        "checkpoints",
        "checkpoints/step_100.txt",
        "checkpoints/step_200.txt",
        "checkpoints/step_250.txt",
        "command.txt",
        "config.yaml",
        "learning_curve.csv",
    ]
    assert (run.dir / "command.txt").read_text() == "train it\n"
    assert load_config(run.dir / "config.yaml").to_dict() == config().to_dict()
    lines = (run.dir / "learning_curve.csv").read_text().splitlines()
    assert lines[0] == "timesteps,wall_minutes,value" and [line.split(",")[0] for line in lines[1:]] == [
        "50",
        "100",
        "150",
        "200",
        "250",
    ]
    assert run.last_checkpoint == run.dir / "checkpoints" / "step_250.txt"


def test_the_end_saves_no_second_checkpoint_at_the_same_step(tmp_path):
    with RunContext(config(), tmp_path, command="c", fields=FIELDS) as run:
        state = Counter()
        train_counter(run, state, until=200)
    assert [p.name for p in state.saved] == ["step_100.txt", "step_200.txt"]


def test_a_run_that_fails_before_it_starts_leaves_no_folder(tmp_path):
    with pytest.raises(RuntimeError, match="the build failed"), RunContext(config(), tmp_path / "a" / "runs") as run:
        assert run.dir.is_dir()
        raise RuntimeError("the build failed")
    assert list(tmp_path.iterdir()) == []


def test_a_second_process_in_the_same_run_folder_is_refused_in_one_line(tmp_path):
    with RunContext(config(), tmp_path, command="first", fields=FIELDS) as run:
        train_counter(run, Counter(), until=100)
        checkpoint = run.dir / "checkpoints" / "step_100.txt"
        before = {p: p.read_bytes() for p in run.dir.rglob("*") if p.is_file()}
        with pytest.raises(ValueError) as refused, RunContext(config(), resume=checkpoint, fields=FIELDS):
            pass
        assert str(refused.value) == (
            f"run folder '{run.dir}' is in use: another training process is running in it now (wait for it to stop, "
            "or resume from a copy of the folder)"
        )
        assert {p: p.read_bytes() for p in run.dir.rglob("*") if p.is_file()} == before
    with run_folder_lock(run.dir):  # let go of when the run ends
        pass


# --------------------------------------------------------------------------------------------------
# Ctrl-C and SIGTERM
# --------------------------------------------------------------------------------------------------
def test_a_signal_during_training_saves_a_checkpoint_and_says_how_to_continue(tmp_path, capsys):
    with RunContext(config(), tmp_path, command="c", fields=FIELDS, rerun="python train.py") as run:
        state = Counter()
        train_counter(run, state, until=1000, stop_at=130)
    checkpoint = run.dir / "checkpoints" / "step_130.txt"
    assert [p.name for p in state.saved] == ["step_100.txt", "step_130.txt"] and checkpoint.read_text() == "130"
    assert capsys.readouterr().err == (
        f"interrupted: saved {checkpoint}; continue with: python train.py --resume {checkpoint}\n"
    )
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers given back


def test_a_stopped_run_with_no_checkpoint_says_so_in_one_line(tmp_path, capsys):
    with RunContext(config(), tmp_path, command="c", fields=FIELDS) as run:
        train_counter(run, Uncheckpointed(), until=1000, stop_at=70)
    assert capsys.readouterr().err == (
        "interrupted at step 70: this run saved no checkpoint, so it cannot be resumed (start a new run)\n"
    )
    assert not list((run.dir / "checkpoints").iterdir())
    with pytest.raises(ValueError) as refused:
        resume_checkpoint(run.dir)
    assert str(refused.value) == (
        f"cannot resume: run folder '{run.dir}' has no checkpoint to resume from: start a new run"
    )


def test_a_signal_before_the_start_aborts_and_removes_the_folder(tmp_path):
    with pytest.raises(Abort) as raised, RunContext(config(), tmp_path / "runs") as run:
        os.kill(os.getpid(), signal.SIGTERM)  # only noted: raised at the next safe point
        time.sleep(0.1)
        run.start([])
    assert raised.value.signum == signal.SIGTERM
    assert not (tmp_path / "runs").exists()
    with pytest.raises(Abort) as raised, RunContext(config(), tmp_path / "runs"):
        os.kill(os.getpid(), signal.SIGINT)  # no safe point in the block: raised on leaving it
    assert raised.value.signum == signal.SIGINT
    assert not (tmp_path / "runs").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_max_minutes_stops_the_run_without_a_line(tmp_path, capsys, monkeypatch):
    with RunContext(config(max_minutes=0.5), tmp_path, command="c", fields=FIELDS) as run:
        state = Counter()
        run.start()
        assert not run.should_stop
        monkeypatch.setattr(time, "time", lambda: run.started_at + 30)
        assert run.should_stop and not run.stop_requested
        run.end(state)
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------------------------------
# Resume
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def stopped(tmp_path):
    """A run stopped by Ctrl-C at step 130: checkpoints at 100 and 130, curve rows at 50 and 100."""
    with RunContext(config(), tmp_path / "runs", command="first", fields=FIELDS) as run:
        train_counter(run, Counter(), until=1000, stop_at=130)
    return run.dir


def test_resume_continues_the_run_in_its_folder(stopped, capsys):
    capsys.readouterr()
    checkpoint = stopped / "checkpoints" / "step_100.txt"
    resumed = resume_config(checkpoint, {"total_timesteps": 300})
    with RunContext(resumed, "unused", resume=checkpoint, command="second", fields=FIELDS) as run:
        state = Counter()
        train_counter(run, state, until=300)
    assert run.dir == stopped and not Path("unused").exists()
    assert [p.name for p in state.saved] == ["step_200.txt", "step_300.txt"]  # the cadence goes on from 100
    assert (stopped / "command.txt").read_text() == "first\nsecond\n"
    steps = [line.split(",")[0] for line in (stopped / "learning_curve.csv").read_text().splitlines()[1:]]
    assert steps == ["50", "100", "150", "200", "250", "300"]
    assert load_config(stopped / "config.yaml").total_timesteps == 300
    assert capsys.readouterr().err == ""


def test_resume_takes_a_run_folder_as_its_newest_checkpoint(stopped):
    (stopped / "checkpoints" / "step_90.txt").write_text("90")  # numbers, not names: 130 is the newest
    assert resume_checkpoint(stopped) == stopped / "checkpoints" / "step_130.txt"
    assert resume_config(stopped).total_timesteps == 1000


def test_a_resume_that_cannot_start_changes_nothing(stopped):
    before = {p: p.read_bytes() for p in stopped.rglob("*") if p.is_file()}
    (stopped / "checkpoints" / "step_140.txt").write_text("garbage")
    cases = [
        (stopped / "checkpoints" / "step_140.txt", 1000, "not a counter"),
        (stopped / "checkpoints" / "step_130.txt", 130, "the checkpoint is at 130 steps, the run's budget is "),
        (stopped / "config.yaml", 1000, "this run's checkpoints are step_<N>.txt files"),
    ]
    for checkpoint, budget, message in cases:
        context = RunContext(config(total_timesteps=budget), resume=checkpoint, fields=FIELDS)
        with pytest.raises(ValueError, match=message), context as run:
            train_counter(run, Counter(), until=budget)
    (stopped / "checkpoints" / "step_140.txt").unlink()
    assert {p: p.read_bytes() for p in stopped.rglob("*") if p.is_file()} == before


def test_a_run_that_is_not_resumed_refuses_a_checkpoint(stopped):
    checkpoint = stopped / "checkpoints" / "step_130.txt"
    with (
        pytest.raises(ValueError, match="this trainer's runs are not resumed"),
        RunContext(config(), resume=checkpoint, resumable=False) as run,
    ):
        run.restore(Counter())


# --------------------------------------------------------------------------------------------------
# The trainer chosen in one place
# --------------------------------------------------------------------------------------------------
def jax_config():
    return validate(from_dict(merged(TINY_PPO, {"jax": {"seeds": 1}})))


def distill_config():
    return validate(
        from_dict(
            merged(
                TINY_PPO,
                {"reward": "win", "init": "standard", "policy": {"net_arch": [256, 256]}, "distill": TINY_DISTILL},
            )
        )
    )


def test_each_config_names_its_trainer():
    assert [c.trainer for c in (config(), distill_config(), jax_config())] == ["ppo", "distill", "jax_ppo"]


@pytest.mark.parametrize(
    ("make", "module", "function"),
    [
        (config, "yacht_lab.training.sb3.ppo", "train"),
        (distill_config, "yacht_lab.training.sb3.distill", "train_distill"),
        (jax_config, "yacht_lab.training.jax.ppo", "train_jax"),
    ],
)
def test_yacht_lab_train_runs_the_configs_trainer(make, module, function, monkeypatch, tmp_path):
    if module == "yacht_lab.training.jax.ppo":
        pytest.importorskip("jax")
    else:
        pytest.importorskip("sb3_contrib")
    calls = []
    target = __import__(module, fromlist=[function])
    monkeypatch.setattr(target, function, lambda *args, **kwargs: calls.append((function, args, kwargs)) or "done")
    chosen = make()
    assert yacht_lab.train(chosen, tmp_path, resume=None, command="c", progress=False) == "done"
    assert calls == [
        (
            function,
            (chosen, tmp_path),
            {"resume": None, "command": "c", "progress": False},
        )
    ]


@pytest.mark.parametrize(
    ("make", "module", "function", "message"),
    [
        (
            jax_config,
            "yacht_lab.training.sb3.ppo",
            "train",
            "a config with a jax section trains by yacht_lab.training.jax.ppo.train_jax, not by PPO",
        ),
        (
            config,
            "yacht_lab.training.sb3.distill",
            "train_distill",
            "a config with neither a distill nor a jax section trains by yacht_lab.training.sb3.ppo.train, "
            "not by distillation",
        ),
        (
            distill_config,
            "yacht_lab.training.jax.ppo",
            "train_jax",
            "a config with a distill section trains by yacht_lab.training.sb3.distill.train_distill, not by JAX PPO",
        ),
        (
            config,
            "yacht_lab.training.jax.ppo",
            "train_jax",
            "a config with neither a distill nor a jax section trains by yacht_lab.training.sb3.ppo.train, "
            "not by JAX PPO",
        ),
    ],
)
def test_each_trainer_refuses_another_trainers_config_in_one_line(make, module, function, message, tmp_path):
    pytest.importorskip("jax" if module == "yacht_lab.training.jax.ppo" else "sb3_contrib")
    trainer = getattr(__import__(module, fromlist=[function]), function)
    with pytest.raises(ValueError) as refused:
        trainer(make(), tmp_path / "runs", command="c", progress=False)
    assert str(refused.value) == f"{message} (yacht_lab.train chooses a config's trainer)"
    assert not (tmp_path / "runs").exists()


def test_a_missing_extra_is_one_line_naming_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "yacht_lab.training.jax.ppo", None)  # as if jax were not installed
    with pytest.raises(ValueError) as refused:
        yacht_lab.train(jax_config(), tmp_path)
    assert str(refused.value).startswith(
        "a config with a jax section trains by JAX PPO, which needs the jax extra (pip install 'yacht-rl[jax]'): "
    )
    assert "\n" not in str(refused.value) and not tmp_path.joinpath("runs").exists()


def test_sigint_during_sb3_training_saves_a_checkpoint_and_the_resume_continues_it(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    sent = []

    def interrupt_after_the_first_update(row, checkpoint):
        if row["timesteps"] == 1024 and not sent:  # once: a second Ctrl-C quits at once
            sent.append(row)
            os.kill(os.getpid(), signal.SIGINT)

    first = validate(from_dict(merged(TINY_PPO, {"total_timesteps": 8192})))
    options = {"command": "first", "progress": False, "rerun": "python train.py"}
    run = yacht_lab.train(first, tmp_path / "runs", report=interrupt_after_the_first_update, **options)
    # Stopped at the first step of the next rollout (8 games), which is saved: no update is cut.
    checkpoint = run / "checkpoints" / "step_1032.zip"
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == f"interrupted: saved {checkpoint}; continue with: python train.py --resume {checkpoint}"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_1024.zip", "step_1032.zip"]
    assert MaskablePPO.load(str(run / "model.zip"), device="cpu").num_timesteps == 1032
    resumed = resume_config(run, {"total_timesteps": 2056})  # the run folder: its newest checkpoint
    again = yacht_lab.train(resumed, tmp_path / "unused", resume=run, command="second", progress=False)
    assert again == run and not (tmp_path / "unused").exists()
    assert MaskablePPO.load(str(run / "model.zip"), device="cpu").num_timesteps == 2056
    assert (run / "command.txt").read_text() == "first\nsecond\n"
    steps = [line.split(",")[0] for line in (run / "learning_curve.csv").read_text().splitlines()[1:]]
    assert steps == ["0", "1024", "2056"]


def test_the_dispatch_the_run_context_and_a_jax_configs_validation_import_no_torch():
    code = """
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "stable_baselines3", "sb3_contrib"):
            raise ModuleNotFoundError(name)
        return None

sys.meta_path.insert(0, Blocked())
import yacht_lab, yacht_lab.training.run_context, yacht_lab.scripts.train
from yacht_lab.training.config import from_dict, validate
config = validate(from_dict({"jax": {"seeds": 2}, "device": "cuda:7"}))  # torch's device: not the JAX trainer's
print(config.trainer)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "jax_ppo\n", "")


# --------------------------------------------------------------------------------------------------
# Hardening: a resume takes its run's config, checkpoints are pruned, a stop exits non-zero, a second signal ends
# even a run stuck in a native call
# --------------------------------------------------------------------------------------------------
def test_a_resume_with_another_config_is_refused_and_the_runs_record_is_kept(stopped):
    before = {p: p.read_bytes() for p in stopped.rglob("*") if p.is_file()}
    for changes, key in [
        ({"seed": 7}, "seed"),
        ({"rules": "classic"}, "rules"),
        ({"ppo": {"n_steps": 10, "batch_size": 10, "n_epochs": 3}}, "n_epochs"),
    ]:
        other = config(**changes)
        with pytest.raises(ValueError, match=rf"^cannot resume .* with another config: the run's (ppo\.)?{key} is "):
            RunContext(other, resume=stopped, fields=FIELDS)
        with pytest.raises(ValueError, match="with another config"):
            yacht_lab.train(other, resume=stopped, progress=False)  # the library, as the command line does
    assert {p: p.read_bytes() for p in stopped.rglob("*") if p.is_file()} == before  # config.yaml never rewritten
    with RunContext(config(total_timesteps=300, max_minutes=5.0), resume=stopped, fields=FIELDS) as run:  # the budget
        train_counter(run, Counter(), until=300)
    assert load_config(stopped / "config.yaml").total_timesteps == 300


def test_a_run_keeps_its_newest_checkpoints_only(tmp_path):
    with RunContext(config(keep_checkpoints=2), tmp_path, command="c", fields=FIELDS) as run:
        train_counter(run, Counter(), until=550)
    assert sorted((run.dir / "checkpoints").iterdir()) == [
        run.dir / "checkpoints" / n for n in ("step_500.txt", "step_550.txt")
    ]
    with RunContext(config(keep_checkpoints=None), tmp_path, command="c", fields=FIELDS) as run:
        train_counter(run, Counter(), until=550)
    assert len(list((run.dir / "checkpoints").iterdir())) == 6
    assert config().keep_checkpoints == 5


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"keep_checkpoints": 0}, "keep_checkpoints must be an int >= 1, got 0"),
        ({"checkpoint_every_timesteps": 9}, "checkpoint_every_timesteps (9) is less than one update's steps"),
    ],
)
def test_a_checkpoint_cadence_that_would_fill_the_disk_is_refused(changes, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        config(**changes)


def test_a_stop_on_a_signal_is_reported_to_on_stop(tmp_path):
    stopped_by = []
    with RunContext(config(), tmp_path, command="c", fields=FIELDS, on_stop=stopped_by.append) as run:
        train_counter(run, Counter(), until=1000, stop_at=130)
    assert stopped_by == [signal.SIGINT]
    with RunContext(config(), tmp_path, command="c", fields=FIELDS, on_stop=stopped_by.append) as run:
        train_counter(run, Counter(), until=100)  # a run that finishes: nothing to report
    assert stopped_by == [signal.SIGINT]


STUCK_RUN = """
import ctypes, sys
from yacht_lab.training.config import from_dict, validate
from yacht_lab.training.run_context import RunContext
config = validate(from_dict({"n_envs": 1, "ppo": {"n_steps": 10, "batch_size": 10}, "checkpoint_every_timesteps": 10}))
with RunContext(config, sys.argv[1], command="c", progress=False) as run:
    run.start([])
    print("started", flush=True)
    # One native call that never returns, whatever signal comes (as a compiled update waiting for a lost task): a
    # thread locking a plain mutex it holds, the interpreter's lock released meanwhile as a JAX call releases it.
    mutex = ctypes.create_string_buffer(64)
    libc = ctypes.CDLL(None)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a glibc mutex stands for the stuck call")
def test_a_second_signal_ends_a_run_stuck_in_a_native_call(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", STUCK_RUN, str(tmp_path / "runs")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "started\n", proc.communicate()
        proc.send_signal(signal.SIGINT)  # the first: asks to stop after the update, which never ends
        time.sleep(1)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130 and seconds < 10
    assert stderr == "interrupted (SIGINT) inside a long call: quit at once, without saving\n"


def test_resume_names_what_is_wrong_with_a_path_that_is_no_checkpoint(tmp_path):
    folder = tmp_path / "step_1024.npz"
    folder.mkdir()
    with pytest.raises(ValueError, match=r"is a folder but not a run folder \(no config.yaml\)"):
        resume_checkpoint(folder)
    os.mkfifo(tmp_path / "step_2048.npz")
    with pytest.raises(ValueError, match="is not a regular file"):
        resume_checkpoint(tmp_path / "step_2048.npz")


@pytest.mark.parametrize(
    ("config_", "options", "message"),
    [
        ({"rules": "standard"}, {}, "yacht_lab.train takes a TrainConfig (.*), got dict"),
        (None, {}, "yacht_lab.train takes a TrainConfig (.*), got NoneType"),
        ("jax", {"report": True}, "the JAX PPO trainer takes no option 'report' "),
        ("ppo", {"report": True}, "report must be a callable or None, got True"),
        ("ppo", {"verbose": 1}, "the PPO trainer takes no option 'verbose' "),
    ],
)
def test_yacht_lab_train_says_what_it_takes(tmp_path, config_, options, message):
    if config_ == "jax":
        config_ = validate(from_dict({"jax": {"seeds": 1}}))
    elif config_ == "ppo":
        config_ = config()
    with pytest.raises(ValueError, match=f"^{message}"):
        yacht_lab.train(config_, tmp_path / "runs", **options)
    assert not (tmp_path / "runs").exists()


def test_the_progress_bar_shows_one_speed_and_never_passes_its_total(tmp_path):
    run = RunContext(config(), tmp_path, fields=FIELDS)  # budget 1,000 steps
    bar = run.progress_bar(initial=1500)  # a resumed run's checkpoint counted past the budget
    try:
        bar.set_postfix_str("3,706 steps/s", refresh=False)
        shown = str(bar)
    finally:
        bar.close()
    assert (bar.n, bar.total) == (1000, 1000) and "1.00k/1.00k" in shown, shown
    assert shown.count("/s") == 1 and shown.endswith(", 3,706 steps/s]"), shown  # the run's speed, not tqdm's rate
