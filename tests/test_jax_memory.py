"""A JAX run's memory: the estimate against what the process may really use (its cgroup, its ``ulimit -v``), the
evaluation in chunks of bounded size (the same results as at once), and a device out of memory as one line in
``train.py`` and ``evaluate.py``. Skipped without jax.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("optax")
pytest.importorskip("gymnax")

from helpers import TINY_PPO, merged, write_config  # noqa: E402

from yacht_lab.training.config import from_dict, validate  # noqa: E402

TINY_JAX = merged(TINY_PPO, {"jax": {"seeds": 2}})  # test_jax_ppo.py's tiny run: two seeds, 2,048 steps each

# 16 seeds of 4,096 games x 256 steps: about 21 GiB of rollouts.
BIG_ROLLOUT = {
    "jax": {"seeds": 16},
    "n_envs": 4096,
    "ppo": {"n_steps": 256, "batch_size": 4096},
    "eval": {"every_timesteps": 2**20},
    "checkpoint_every_timesteps": 2**20,
}


@pytest.mark.parametrize(
    "changes",
    [
        BIG_ROLLOUT,
        {"jax": {"seeds": 64}, "policy": {"net_arch": [4096] * 4}},
    ],
)
def test_a_jax_run_too_large_for_its_device_is_one_line_before_anything_is_written(
    tmp_path, monkeypatch, capsys, changes
):
    from yacht_lab.scripts import train as train_script
    from yacht_lab.training.jax import memory

    monkeypatch.setattr(memory, "memory_limit", lambda: 16 * 2**30)  # what this process may use: 16 GiB
    config = write_config(tmp_path / "big.yaml", merged(TINY_JAX, changes))
    status = train_script.main(["--config", str(config), "--output-dir", str(tmp_path / "runs")], prog="train.py")
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert err.startswith("train.py: error: this JAX run would take about ") and "has 16.0 GiB for it" in err
    assert not (tmp_path / "runs").exists()


def test_ten_million_evaluation_games_are_played_in_chunks_of_bounded_memory():
    from yacht_lab.training.schema import JAX_EVAL_CHUNK_GAMES, jax_memory_bytes

    config = validate(from_dict(merged(TINY_JAX, {"eval": {"games": 10**7}})))  # two seeds
    # A chunk of games in play (about 2.5 KB a game) and every game's key and result (32 bytes a game per seed), not
    # every game in play at once (24.8 GB asked for, once).
    assert jax_memory_bytes(config) < 2**30 and JAX_EVAL_CHUNK_GAMES * 2500 < 2**30 / 8


@pytest.mark.parametrize("players", [1, 2])
def test_the_evaluation_in_chunks_is_the_evaluation_at_once(players, monkeypatch):
    import jax

    from yacht_lab.training.jax import rollouts
    from yacht_lab.training.jax.ppo import make_trainer

    changes = {"eval": {"games": 23}, "jax": {"seeds": 2, "players": players}}
    if players > 1:
        changes.update(reward="win", reward_scale=1.0)
    config = validate(from_dict(merged(TINY_JAX, changes)))
    init, _, evaluate, _ = make_trainer(config)
    runners = init(jax.numpy.stack([jax.random.key(0), jax.random.key(1)]))
    at_once = evaluate(runners.params, runners.start, jax.random.key(7))  # 23 games (deals) in one chunk
    monkeypatch.setattr(rollouts, "eval_chunk", lambda players: 5)  # four chunks of 5, then 3
    chunked = make_trainer(config)[2](runners.params, runners.start, jax.random.key(7))
    assert at_once.keys() == chunked.keys()
    for name, value in at_once.items():
        assert np.array_equal(np.asarray(value), np.asarray(chunked[name])), name


def test_the_memory_a_process_may_use_is_its_cgroups_and_its_ulimits(tmp_path, monkeypatch):
    import resource

    from yacht_lab.training.jax import memory

    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "status").write_text("Name:\tpython\nVmSize:\t 1048576 kB\nVmRSS:\t 1024 kB\n")
    machine = memory._machine_memory()
    cgroup = tmp_path / "cgroup"
    # cgroup v2: the process's own cgroup has no limit, its parent has 3 GiB.
    (cgroup / "jobs" / "job1").mkdir(parents=True)
    (cgroup / "memory.max").write_text("max\n")
    (cgroup / "jobs" / "memory.max").write_text(f"{3 * 2**30}\n")
    (cgroup / "jobs" / "job1" / "memory.max").write_text("max\n")
    (proc / "self" / "cgroup").write_text("0::/jobs/job1\n")
    assert memory.memory_limit(cgroup, proc) == min(3 * 2**30, machine)
    # cgroup v1: the memory controller's limit_in_bytes (9223372036854771712: none), inside a namespace whose path is
    # not mounted as such: the mount's own file applies.
    (proc / "self" / "cgroup").write_text("5:cpu:/x\n4:memory:/process_api/abc\n0::/\n")
    (cgroup / "memory.max").unlink()
    (cgroup / "memory").mkdir()
    (cgroup / "memory" / "memory.limit_in_bytes").write_text(f"{2 * 2**30}\n")
    assert memory.memory_limit(cgroup, proc) == min(2 * 2**30, machine)
    (cgroup / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert memory.memory_limit(cgroup, proc) == machine
    # ulimit -v: the address space left (the limit less the 1 GiB mapped already).
    monkeypatch.setattr(resource, "getrlimit", lambda which: (5 * 2**30, resource.RLIM_INFINITY))
    assert memory.memory_limit(cgroup, proc) == 4 * 2**30


def test_train_py_reads_the_ulimit_it_runs_under(tmp_path):
    # ulimit -v 6 GiB: JAX starts (about 1.5 GiB mapped), the run's 21 GiB would not fit (this machine's memory would
    # not be asked).
    config = write_config(tmp_path / "big.yaml", merged(TINY_JAX, BIG_ROLLOUT))
    command = [sys.executable, "train.py", "--config", str(config), "--output-dir", str(tmp_path / "runs")]
    done = subprocess.run(
        ["bash", "-c", 'ulimit -v 6291456 && exec "$@"', "bash", *command],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("train.py: error: this JAX run would take about ") and "(cpu) has " in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_device_out_of_memory_is_one_line_in_train_py_and_evaluate_py(tmp_path, monkeypatch, capsys):
    import jax

    from yacht_agents import jax_policy
    from yacht_lab.scripts import evaluate as evaluate_script
    from yacht_lab.scripts import train as train_script
    from yacht_lab.training.jax import ppo as jax_ppo

    def exhausted(*args, **kwargs):
        raise jax.errors.JaxRuntimeError(
            "RESOURCE_EXHAUSTED: Out of memory allocating 26658512896 bytes.\n\nThe stack trace below ...\n  ..."
        )

    real = jax_ppo.make_trainer

    def out_of_memory_at_the_first_evaluation(config):
        init, update, _, spec = real(config)
        return init, update, exhausted, spec

    monkeypatch.setattr(jax_ppo, "make_trainer", out_of_memory_at_the_first_evaluation)
    config = write_config(tmp_path / "c.yaml", merged(TINY_JAX, {"jax": {"seeds": 1}}))
    args = ["--config", str(config), "--output-dir", str(tmp_path / "runs"), "--no-progress"]
    status = train_script.main(args, prog="train.py")
    err = capsys.readouterr().err
    assert status == 2 and err == (
        "train.py: error: the device ran out of memory (RESOURCE_EXHAUSTED: Out of memory allocating 26658512896 "
        "bytes.): make jax.seeds, n_envs x ppo.n_steps, ppo.batch_size or eval.games smaller\n"
    )
    monkeypatch.setattr(jax_policy, "apply", exhausted)  # a jax: agent's network, traced at its first batch
    status = evaluate_script.main(["--agents", "jax:standard", "--games", "10", "--no-progress"], prog="evaluate.py")
    err = capsys.readouterr().err
    assert status == 2 and err == (
        "evaluate.py: error: jax:standard: the device ran out of memory acting on 10 positions at once: play fewer "
        "games at a time (evaluate.py --batch-size)\n"
    )
