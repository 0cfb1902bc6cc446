"""sweep.py and yacht_lab/sweep/run.py: seed and hyperparameter sweeps on Ray Tune (docs/sweeps.md).

End to end on tiny budgets: a 2-configuration x 2-seed sweep on a local Ray, interrupted with Ctrl-C and
continued with ``--resume``; the same sweep on a simulated two-node cluster (``ray.cluster_utils.Cluster``),
with one trial's worker killed mid-run; bad sweep files and flags.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("ray")
pytest.importorskip("rliable")

import sweep as sweep_script  # noqa: E402
from yacht_lab.sweep.run import run_folder_name  # noqa: E402
from yacht_lab.sweep.spec import load_sweep, parse_sweep  # noqa: E402
from yacht_lab.training.runs import read_curve  # noqa: E402
from yacht_lab.training.sb3.ppo import resume_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STEP = 1024  # n_envs 16 x n_steps 64: one rollout
TINY = {
    "name": "tiny",
    "base": {
        "n_envs": 16,
        "policy": {"net_arch": [32]},
        "ppo": {"n_steps": 64, "batch_size": 512, "n_epochs": 1},
        "eval": {"every_timesteps": 2 * STEP, "games": 50},
        "checkpoint_every_timesteps": 2 * STEP,
    },
    "search": {"grid": {"ppo.learning_rate": [3.0e-4, 1.0e-3]}},
    "seeds": 2,
    "budget": {"total_timesteps": 6 * STEP},
    "statistics": {"reps": 500},
}
RUNS = [run_folder_name(c, s) for c in ("learning_rate=0.0003", "learning_rate=0.001") for s in (0, 1)]
TIMEOUT = 300


def write_sweep(folder: Path, data: dict, name: str = "sweep.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def start(*args: str, log: Path) -> subprocess.Popen:
    """sweep.py in its own process (stdout and stderr to ``log``.out/.err), from the repository root."""
    # The child gets its own copies of the two files: ours are closed once it has started (left open, they
    # were a ResourceWarning when collected).
    with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
        return subprocess.Popen([sys.executable, "sweep.py", *args], cwd=ROOT, stdout=out, stderr=err)


def wait_for(condition, what: str, process: subprocess.Popen | None = None, timeout: float = TIMEOUT):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        if process is not None and process.poll() is not None:
            pytest.fail(f"sweep.py ended (status {process.returncode}) before {what}")
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def finish(process: subprocess.Popen, timeout: float = TIMEOUT) -> int:
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


def timesteps_of(run_dir: Path) -> list[int]:
    return [row["timesteps"] for row in read_curve(run_dir / "learning_curve.csv")]


# --------------------------------------------------------------------------------------------------
# A local sweep, interrupted by Ctrl-C after its first trial and resumed
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("local")
    # Checkpoints between evaluations (at 3, 6 rollouts; evaluations at 2, 4, 6): reported to Tune with the last row.
    config = write_sweep(tmp, {**TINY, "base": {**TINY["base"], "checkpoint_every_timesteps": 3 * STEP}})
    storage = tmp / "sweeps"
    folder = storage / "tiny"
    first = folder / "runs" / RUNS[0]
    process = start("--config", str(config), "--storage", str(storage), log=tmp / "first")  # two trials at a time
    wait_for(lambda: (first / "model.zip").is_file(), "the first trial's model", process)
    first_model = (first / "model.zip").stat().st_mtime_ns
    process.send_signal(signal.SIGINT)
    interrupted = finish(process)
    resumed = start("--resume", str(folder), "--storage", str(storage), log=tmp / "resumed")
    status = finish(resumed)
    return {
        "tmp": tmp,
        "folder": folder,
        "interrupted": interrupted,
        "status": status,
        "first_model": first_model,
        "first": (tmp / "first.out").read_text() + (tmp / "first.err").read_text(),
        "first_err": (tmp / "first.err").read_text(),
        "out": (tmp / "resumed.out").read_text(),
        "err": (tmp / "resumed.err").read_text(),
    }


@pytest.mark.slow
def test_a_sweep_runs_every_configuration_with_every_seed_into_normal_run_folders(local_sweep):
    assert local_sweep["status"] == 0, local_sweep["err"]
    runs = local_sweep["folder"] / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(RUNS)
    for name in RUNS:
        run_dir = runs / name
        for file in (
            "config.yaml",
            "command.txt",
            "learning_curve.csv",
            "learning_curve.png",
            "model.zip",
            "trial.json",
        ):
            assert (run_dir / file).is_file(), (name, file)
        assert timesteps_of(run_dir) == [0, 2 * STEP, 4 * STEP, 6 * STEP], name
        assert (run_dir / "checkpoints" / f"step_{6 * STEP}.zip").is_file()
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        assert config["seed"] == int(name[-1]) and config["torch_threads"] == 1
        assert config["ppo"]["learning_rate"] == (3.0e-4 if "0.0003" in name else 1.0e-3)
        assert config["total_timesteps"] == 6 * STEP and config["ppo"]["n_epochs"] == 1


@pytest.mark.slow
def test_a_trial_folder_is_accepted_by_evaluate_and_train_resume(local_sweep):
    import evaluate

    run_dir = local_sweep["folder"] / "runs" / RUNS[1]
    config = resume_config(run_dir / "checkpoints" / f"step_{3 * STEP}.zip", {"total_timesteps": 8 * STEP})
    assert config.seed == 1 and config.ppo.learning_rate == 3.0e-4 and config.total_timesteps == 8 * STEP
    assert evaluate.main(["--agents", f"ppo:{run_dir / 'model.zip'}", "--games", "20"]) == 0


@pytest.mark.slow
def test_the_results_hold_mean_iqm_cis_and_probability_of_improvement(local_sweep):
    folder = local_sweep["folder"]
    results = json.loads((folder / "results.json").read_text())
    assert results["metric"] == "percent_of_optimal"
    assert [c["name"] for c in results["configurations"]] == ["learning_rate=0.0003", "learning_rate=0.001"]
    for configuration, runs in zip(results["configurations"], (RUNS[:2], RUNS[2:]), strict=True):
        finals = [read_curve(folder / "runs" / run / "learning_curve.csv")[-1]["percent_of_optimal"] for run in runs]
        assert configuration["seeds"] == [0, 1] and configuration["final"] == pytest.approx(finals)
        assert configuration["mean"] == pytest.approx(np.mean(finals))
        lo, hi = configuration["iqm_ci95"]
        assert min(finals) - 1e-9 <= lo <= configuration["iqm"] <= hi <= max(finals) + 1e-9
        assert configuration["stopped_early"] == 0 and configuration["failed"] == 0
    (pair,) = results["probability_of_improvement"]
    assert (pair["x"], pair["y"]) == ("learning_rate=0.0003", "learning_rate=0.001") and 0 <= pair["p"] <= 1
    assert [c["timesteps"] for c in results["curves"]] == [[0, 2 * STEP, 4 * STEP, 6 * STEP]] * 2
    assert [t["status"] for t in results["trials"]] == ["finished"] * 4
    assert (folder / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (folder / "results.txt").read_text()
    assert table.strip() in local_sweep["out"]  # printed, and written
    for name in ("learning_rate=0.0003", "learning_rate=0.001", "P(learning_rate=0.0003 > learning_rate=0.001)"):
        assert name in table


@pytest.mark.slow
def test_each_evaluation_of_each_trial_prints_a_progress_line(local_sweep):
    printed = local_sweep["first"] + local_sweep["out"]
    for run in RUNS:
        for step in (2 * STEP, 4 * STEP, 6 * STEP):  # once in each process, though the checkpoint at 3 re-reports 2
            line = f"[{run}] {step:,}/{6 * STEP:,} steps"
            assert line in printed and local_sweep["first"].count(line) <= 1 and local_sweep["out"].count(line) <= 1
        assert f"[{run}] done" in printed
    assert f"[{RUNS[0]}] {2 * STEP:,}/{6 * STEP:,} steps" in local_sweep["first"]


@pytest.mark.slow
def test_ctrl_c_then_resume_finishes_the_sweep_without_redoing_finished_trials(local_sweep):
    folder = local_sweep["folder"]
    assert local_sweep["interrupted"] == 130
    assert f"sweep.py: interrupted; continue with: python sweep.py --resume {folder}" in local_sweep["first_err"]
    first = folder / "runs" / RUNS[0]
    assert (first / "model.zip").stat().st_mtime_ns == local_sweep["first_model"]
    assert len((first / "command.txt").read_text().splitlines()) == 1
    assert len(json.loads((first / "trial.json").read_text())["attempts"]) == 1
    # The trial that Ctrl-C cut short continued (from its checkpoint, or afresh if it had none), the others ran.
    assert "Traceback" not in local_sweep["first_err"] and "Traceback" not in local_sweep["err"]


# --------------------------------------------------------------------------------------------------
# A simulated two-node cluster; one trial's worker killed mid-run
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster_sweep(tmp_path_factory):
    from ray.cluster_utils import Cluster

    tmp = tmp_path_factory.mktemp("cluster")
    data = {**TINY, "name": "two-nodes", "budget": {"total_timesteps": 12 * STEP}}
    config = write_sweep(tmp, data)
    storage = tmp / "sweeps"
    folder = storage / "two-nodes"
    # Ray's nodes install SIGTERM/SIGINT handlers in this process and leave them after shutdown: put them back,
    # so that later tests (train.py's signal handling) see this process as it was.
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        nodes = {node.node_id for node in cluster.list_all_nodes()}
        process = start(
            "--config", str(config), "--storage", str(storage), "--address", cluster.address, log=tmp / "log"
        )

        def victim():  # a trial past its first checkpoint, far from its end
            for run in RUNS:
                run_dir = folder / "runs" / run
                if (run_dir / "checkpoints" / f"step_{2 * STEP}.zip").is_file() and (run_dir / "trial.json").is_file():
                    if not (run_dir / "checkpoints" / f"step_{8 * STEP}.zip").exists():
                        return run
            return None

        killed = wait_for(victim, "a trial's first checkpoint", process)
        pid = json.loads((folder / "runs" / killed / "trial.json").read_text())["attempts"][-1]["pid"]
        os.kill(pid, signal.SIGKILL)
        status = finish(process)
    finally:
        cluster.shutdown()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return {
        "folder": folder,
        "status": status,
        "killed": killed,
        "nodes": nodes,
        "err": (tmp / "log.err").read_text(),
        "out": (tmp / "log.out").read_text(),
    }


@pytest.mark.slow
def test_a_sweep_on_a_two_node_cluster_places_trials_on_both_nodes(cluster_sweep):
    assert cluster_sweep["status"] == 0, cluster_sweep["err"]
    assert len(cluster_sweep["nodes"]) == 2
    used = set()
    for run in RUNS:
        attempts = json.loads((cluster_sweep["folder"] / "runs" / run / "trial.json").read_text())["attempts"]
        used |= {attempt["node_id"] for attempt in attempts}
    assert used == cluster_sweep["nodes"]
    results = json.loads((cluster_sweep["folder"] / "results.json").read_text())
    assert [t["status"] for t in results["trials"]] == ["finished"] * 4


@pytest.mark.slow
def test_a_killed_trial_resumes_from_its_checkpoint_and_loses_nothing(cluster_sweep):
    run_dir = cluster_sweep["folder"] / "runs" / cluster_sweep["killed"]
    attempts = json.loads((run_dir / "trial.json").read_text())["attempts"]
    assert len(attempts) == 2, attempts
    resumed_at = attempts[1]["from_timesteps"]
    assert resumed_at >= 2 * STEP and resumed_at % (2 * STEP) == 0
    assert timesteps_of(run_dir) == list(range(0, 12 * STEP + 1, 2 * STEP))  # every evaluation exactly once
    commands = (run_dir / "command.txt").read_text().splitlines()
    assert len(commands) == 2 and commands[1].endswith(f"resumed from step_{resumed_at}.zip")
    assert (run_dir / "model.zip").is_file()
    assert "its worker failed: restarting from its last checkpoint" in cluster_sweep["out"]
    results = json.loads((cluster_sweep["folder"] / "results.json").read_text())
    (trial,) = [t for t in results["trials"] if t["run"].endswith(cluster_sweep["killed"])]
    assert trial["status"] == "finished" and len(trial["attempts"]) == 2


# --------------------------------------------------------------------------------------------------
# Bad input: one line, status 2, nothing written
# --------------------------------------------------------------------------------------------------
def bad(**changes) -> dict:
    data = json.loads(json.dumps(TINY))
    for key, value in changes.items():
        data[key] = value
    return data


BAD_SWEEPS = {
    "unknown top key": (bad(searches={}), "unknown sweep key searches"),
    "unknown base key": (bad(base={"n_env": 4}), "unknown config key n_env"),
    "a grid key that is not a config key": (bad(search={"grid": {"ppo.epochs": [1]}}), "'ppo.epochs' is not a"),
    "a reserved key": (bad(search={"grid": {"seed": [1, 2]}}), "'seed' is set by the sweep itself"),
    "a section as a key": (bad(search={"grid": {"ppo": [1]}}), "'ppo' is a section"),
    "a bad value in the grid": (bad(search={"grid": {"ppo.n_epochs": [1, 0]}}), "configuration 'n_epochs=0'"),
    "an empty grid list": (bad(search={"grid": {"ppo.n_epochs": []}}), "must be a non-empty list"),
    "duplicate seeds": (bad(seeds=[1, 1]), "seeds must be distinct"),
    "no budget": (bad(budget=None), "budget must be a mapping"),
    "a bad distribution": (
        bad(search={"random": {"ppo.learning_rate": {"normal": [0, 1]}}, "samples": 2}),
        "search.random.ppo.learning_rate must be one of",
    ),
    "random without samples": (
        bad(search={"random": {"ppo.learning_rate": {"uniform": [0.1, 0.2]}}}),
        "search.random and search.samples go together",
    ),
    "a bad ASHA": (bad(early_stopping={"grace_timesteps": 0}), "grace_timesteps must be an int >= 1"),
    # 8 keys x 10 values: 10**8 configurations, refused before one is built (it used 10 GB in a minute).
    "an exploding grid": (
        bad(
            search={
                "grid": {
                    f"ppo.{key}": [0.1 * (i + 1) for i in range(10)]
                    for key in (
                        "learning_rate",
                        "ent_coef",
                        "gamma",
                        "gae_lambda",
                        "clip_range",
                        "vf_coef",
                        "max_grad_norm",
                        "learning_rate_final",
                    )
                }
            }
        ),
        "the search has 100,000,000 configurations (the grid's 10 x 10 x 10 x 10 x 10 x 10 x 10 x 10); at most",
    ),
    "a grid times samples past the bound": (
        bad(
            search={
                "grid": {"ppo.n_epochs": list(range(1, 101))},
                "random": {"ppo.learning_rate": {"uniform": [0.1, 0.2]}},
                "samples": 101,
            }
        ),
        "the search has 10,100 configurations (the grid's 100 x 101 samples); at most 10,000 trials",
    ),
    "an infinite bound": (
        bad(search={"random": {"ppo.learning_rate": {"uniform": [0.1, float("inf")]}}, "samples": 2}),
        "search.random.ppo.learning_rate: uniform needs finite bounds, got [0.1, inf]",
    ),
    "a bad name": (bad(name="../x"), "name must be a folder name"),
}


@pytest.mark.parametrize("case", BAD_SWEEPS)
def test_a_bad_sweep_file_is_one_error_line(case, tmp_path, capsys):
    data, message = BAD_SWEEPS[case]
    config = write_sweep(tmp_path, data)
    storage = tmp_path / "sweeps"
    assert sweep_script.main(["--config", str(config), "--storage", str(storage)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sweep.py: error: ") and message in err, err
    assert not storage.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cpus-per-trial", "0"], "argument --cpus-per-trial: expected an integer >= 1"),
        (["--max-concurrent", "two"], "argument --max-concurrent: expected an integer >= 1"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_flags_are_one_error_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        sweep_script.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sweep.py: error: ") and message in err, err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--config", "missing.yaml"], "cannot read sweep 'missing.yaml'"),
        (["--config", "yahtzee"], "cannot read sweep 'yahtzee': no shipped sweep of that name (shipped: sweep)"),
        (["--config", "configs/sweep.yaml", "--resume", "x"], "--config cannot be combined with --resume"),
        (["--resume", "configs"], "is not a sweep folder (no sweep_spec.yaml)"),
    ],
)
def test_bad_files_and_folders_are_one_error_line(args, message, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert sweep_script.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sweep.py: error: ") and message in err, err


@pytest.mark.parametrize(
    "address, env, message",
    [
        # Nothing listens on port 1: Ray itself would wait many minutes; the sweep says so at once.
        ("127.0.0.1:1", {}, "cannot reach Ray at 127.0.0.1:1: Connection refused within 10 s"),
        ("nonsense", {}, "--address must be 'auto' or HOST:PORT (a port in 1..65535), got 'nonsense'"),
        ("host:99999", {}, "--address must be 'auto' or HOST:PORT (a port in 1..65535), got 'host:99999'"),
        # The local Ray listens on every interface: its token authentication must stay on.
        (None, {"RAY_AUTH_MODE": "disabled"}, "RAY_AUTH_MODE=disabled: the local Ray listens on every network"),
    ],
)
def test_where_ray_runs_is_checked_before_it_starts(address, env, message, tmp_path, capsys, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config = write_sweep(tmp_path, TINY)
    storage = tmp_path / "sweeps"
    args = ["--config", str(config), "--storage", str(storage)] + (["--address", address] if address else [])
    assert sweep_script.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sweep.py: error: ") and message in err, err
    assert not storage.exists()


def test_a_damaged_tune_state_is_one_error_line(tmp_path, capsys):
    from yacht_lab.sweep.run import save_sweep
    from yacht_lab.sweep.spec import parse_sweep

    folder = tmp_path / "sweeps" / "tiny"
    folder.mkdir(parents=True)
    save_sweep(folder, parse_sweep(TINY), {"cpus_per_trial": 1, "max_concurrent": None})
    (folder / "tuner.pkl").write_bytes(b"\x80\x05not a pickle")
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    assert sweep_script.main(["--resume", str(folder)]) == 2
    # Ray's own signal handlers do not outlive the sweep (later tests, train.py's Ctrl-C among them, need ours).
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    err = capsys.readouterr().err  # Ray's own start-up notice may come first (token authentication is on)
    last = err.splitlines()[-1]
    assert "Traceback" not in err and err.count("sweep.py: error: ") == 1, err
    assert last.startswith("sweep.py: error: cannot resume") and "cannot read its saved state (tuner.pkl)" in last


def test_bad_yaml_is_one_error_line(tmp_path, capsys):
    config = tmp_path / "sweep.yaml"
    config.write_text("base: {n_envs: [1,\n")
    assert sweep_script.main(["--config", str(config), "--storage", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not valid YAML" in err


def test_an_existing_sweep_folder_is_not_overwritten(tmp_path, capsys):
    config = write_sweep(tmp_path, TINY)
    (tmp_path / "sweeps" / "tiny").mkdir(parents=True)
    assert sweep_script.main(["--config", str(config), "--storage", str(tmp_path / "sweeps")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists: continue it with --resume" in err
    assert list((tmp_path / "sweeps" / "tiny").iterdir()) == []


# --------------------------------------------------------------------------------------------------
# The sweep file
# --------------------------------------------------------------------------------------------------
def test_the_shipped_sweep_file_is_valid_and_its_base_is_train_pys_default():
    from yacht_lab.training.config import load_config

    sweep = load_sweep(ROOT / "configs" / "sweep.yaml")
    default = load_config(ROOT / "configs" / "ppo.yaml")
    trial = sweep.trial_config(sweep.configurations[0], 0, 2)
    for key in ("rules", "n_envs", "reward_scale", "policy", "ppo"):
        assert getattr(trial, key) == getattr(default, key), key
    assert [c.name for c in sweep.configurations] == ["n_epochs=8", "n_epochs=4", "n_epochs=12"]
    assert len(sweep.seeds) >= 3


def test_a_grid_times_random_samples_is_every_combination_and_reproducible():
    data = bad(
        search={
            "grid": {"ppo.n_epochs": [1, 2], "policy.net_arch": [[16], [32, 32]]},
            "random": {"ppo.learning_rate": {"loguniform": [1e-4, 1e-3]}, "ppo.n_steps": {"choice": [32, 64]}},
            "samples": 3,
            "sample_seed": 7,
        }
    )
    sweep = parse_sweep(data)
    assert len(sweep.configurations) == 2 * 2 * 3
    assert [c.overrides for c in sweep.configurations] == [c.overrides for c in parse_sweep(data).configurations]
    draws = {c.overrides["ppo.learning_rate"] for c in sweep.configurations}
    assert len(draws) == 3 and all(1e-4 <= lr <= 1e-3 for lr in draws)
    assert {c.overrides["ppo.n_steps"] for c in sweep.configurations} <= {32, 64}
    grid = {(c.overrides["ppo.n_epochs"], tuple(c.overrides["policy.net_arch"])) for c in sweep.configurations}
    assert grid == {(1, (16,)), (1, (32, 32)), (2, (16,)), (2, (32, 32))}
    config = sweep.trial_config(sweep.configurations[-1], 5, 2)
    assert config.policy.net_arch == [32, 32] and config.seed == 5 and config.torch_threads == 2
    other = parse_sweep({**data, "search": {**data["search"], "sample_seed": 8}})
    assert {c.overrides["ppo.learning_rate"] for c in other.configurations} != draws


def test_the_sweep_file_and_flags_reach_tune(tmp_path, monkeypatch):
    """What run_sweep hands Ray Tune: ASHA on timesteps, retries, concurrency, resources, storage, trials in order."""
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    import yacht_lab.sweep.run as sweep_module

    seen = {}

    class FakeTuner:
        def __init__(self, trainable, **kwargs):
            seen.update(kwargs, trainable=trainable)

        def fit(self):
            seen["fitted"] = True

    monkeypatch.setattr(ray, "init", lambda **kwargs: seen.setdefault("init", kwargs))
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(tune, "Tuner", FakeTuner)
    monkeypatch.setattr(sweep_module, "collect", lambda sweep, folder: folder)
    data = bad(early_stopping={"grace_timesteps": 2 * STEP, "reduction_factor": 3}, retries=5)
    folder = sweep_module.run_sweep(parse_sweep(data), tmp_path / "s", cpus_per_trial=2, max_concurrent=3)
    assert folder == (tmp_path / "s" / "tiny").resolve() and seen["fitted"]
    assert seen["init"] == {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    tune_config, run_config = seen["tune_config"], seen["run_config"]
    scheduler = tune_config.scheduler
    assert isinstance(scheduler, ASHAScheduler) and scheduler._time_attr == "timesteps"
    assert scheduler._max_t == 6 * STEP and scheduler._reduction_factor == 3
    assert [milestone for milestone, _ in scheduler._brackets[0]._rungs] == [6 * STEP, 2 * STEP]  # grace, x3
    assert (tune_config.metric, tune_config.mode, tune_config.max_concurrent_trials) == ("percent_of_optimal", "max", 3)
    assert run_config.failure_config.max_failures == 5
    assert (run_config.name, run_config.storage_path) == ("tiny", str(folder.parent))
    assert seen["trainable"]._resources.required_resources == {"CPU": 2}
    trials = seen["param_space"]["trial"]["grid_search"]
    assert [t["run"] for t in trials] == RUNS and all(t["config"]["torch_threads"] == 2 for t in trials)
    assert yaml.safe_load((folder / "sweep_spec.yaml").read_text())["settings"] == {
        "cpus_per_trial": 2,
        "max_concurrent": 3,
    }


# --------------------------------------------------------------------------------------------------
# --address HOST:PORT where something that is not Ray listens: one line in seconds (Ray waited minutes)
# --------------------------------------------------------------------------------------------------
def settings_frame() -> bytes:
    return bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def headers_frame(status_byte: int) -> bytes:
    return bytes([0, 0, 1, 1, 4, 0, 0, 0, 1, status_byte])  # HEADERS, END_HEADERS, stream 1, one indexed field


# What each server sends once it has read the client's first bytes (None: nothing, ever; b"": it hangs up).
SERVERS = {
    "silent": None,
    "closes": b"",
    "HTTP/1": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
    "HTTP/2, not gRPC": settings_frame() + headers_frame(0x8D),  # :status 404, as a proxy without the service
    "gRPC": settings_frame() + headers_frame(0x88),  # :status 200: what Ray's GCS answers
}


@pytest.fixture
def server(request):
    """A TCP server on localhost that answers each connection with ``SERVERS[request.param]``; its port."""
    import socket
    import threading

    reply = SERVERS[request.param]
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve():
        connection, _ = listener.accept()
        with connection:
            connection.recv(4096)
            if reply == b"":
                return
            if reply is not None:
                connection.sendall(reply)
            done.wait(15)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    done.set()
    listener.close()


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("silent", "it did not answer a gRPC call within 1 s"),
        ("closes", "it closed the connection instead of answering a gRPC call"),
        ("HTTP/1", "it answered b'HTTP/1.1 ', not HTTP/2"),
        ("HTTP/2, not gRPC", "it is an HTTP/2 server, but not gRPC (no :status 200)"),
    ],
    indirect=["server"],
)
def test_an_address_where_ray_does_not_listen_is_refused_in_seconds(server, message):
    from yacht_lab.ray_cluster import check_ray_address

    start = time.monotonic()
    with pytest.raises(ValueError) as error:
        check_ray_address(f"127.0.0.1:{server}", timeout=1.0)
    assert time.monotonic() - start < 3
    assert str(error.value) == (
        f"127.0.0.1:{server} is not a Ray cluster: something listens there, but not Ray's GCS: {message}"
    )


@pytest.mark.parametrize("server", ["gRPC"], indirect=True)
def test_an_address_that_answers_as_ray_s_gcs_passes_the_check(server):
    from yacht_lab.ray_cluster import check_ray_address

    check_ray_address(f"127.0.0.1:{server}", timeout=1.0)


@pytest.mark.parametrize("server", ["HTTP/1"], indirect=True)
def test_sweep_py_at_an_address_that_is_not_ray_is_one_line(server, tmp_path, capsys):
    config = write_sweep(tmp_path, TINY)
    storage = tmp_path / "sweeps"
    start = time.monotonic()
    assert sweep_script.main(["--config", str(config), "--storage", str(storage), "--address", f"127.0.0.1:{server}"])
    err = capsys.readouterr().err
    assert time.monotonic() - start < 15
    assert err.count("\n") == 1 and err.startswith(f"sweep.py: error: 127.0.0.1:{server} is not a Ray cluster"), err
    assert not storage.exists()


@pytest.mark.parametrize("server", ["HTTP/2, not gRPC"], indirect=True)
def test_evaluate_py_at_an_address_that_is_not_ray_is_one_line(server):
    args = ["--players", "2", "--agents", "greedy", "optimal", "--games", "2", "--address", f"127.0.0.1:{server}"]
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert time.monotonic() - start < 15
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"evaluate.py: error: 127.0.0.1:{server} is not a Ray cluster"), done.stderr
