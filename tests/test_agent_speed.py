"""benchmarks/agent_speed.py says the threads it ran under, and ``--threads N`` runs every agent on N.

The search agent's speed against the PPO model's turns on them: its network is numpy (BLAS threads), the PPO model's
torch, on one thread unless told otherwise. A figure without its threads was read as 1.1x where a user measured 0.85x.
"""

from __future__ import annotations

import importlib.util
import re

import pytest
from helpers import run_script

SCRIPT = "benchmarks/agent_speed.py"
TINY = ["--agents", "random", "greedy", "--batched-games", "20", "--single-games", "2"]


def threads_line(out: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith("threads: ")]
    return line


def test_the_benchmark_prints_the_threads_it_ran_under(tmp_path):
    done = run_script(SCRIPT, *TINY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = threads_line(done.stdout)
    assert re.search(r"; \d+ cores$", line) and "BLAS/OpenMP" in line
    if importlib.util.find_spec("torch"):
        assert re.search(r"torch \d+, the PPO agent's act 1;", line)  # its own rule, without --threads
    assert "greedy / random: " in done.stdout  # each agent's speed beside the first's


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_n_runs_every_library_on_n(threads, tmp_path):
    done = run_script(SCRIPT, *TINY, "--threads", str(threads), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = threads_line(done.stdout)
    if importlib.util.find_spec("threadpoolctl"):
        pools = re.findall(r"(\w+) (\d+)", line.split("(threadpoolctl) ")[1].split(";")[0])
        assert pools and all(int(count) == threads for _, count in pools), line
    else:
        assert f"OPENBLAS_NUM_THREADS={threads}" in line and f"OMP_NUM_THREADS={threads}" in line, line
    if importlib.util.find_spec("torch"):
        assert f"torch {threads}, the PPO agent's act {threads};" in line


def test_threads_must_be_at_least_one(tmp_path):
    done = run_script(SCRIPT, *TINY, "--threads", "0", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == "agent_speed.py: error: --threads must be at least 1, got 0"


def test_the_ppo_agent_acts_on_its_torch_threads_and_restores_the_process_s():
    torch = pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    from yacht_agents import make_agent
    from yacht_env import YachtEnv

    agent = make_agent("ppo:standard", "standard")
    env = YachtEnv()
    obs, info = env.reset(seed=0)
    seen, predict = [], agent.model.predict

    def counting_predict(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return predict(*args, **kwargs)

    agent.model.predict = counting_predict
    before = torch.get_num_threads()
    for threads in (1, 2):
        agent.torch_threads = threads
        agent.act(obs[None], info["action_mask"][None].astype(bool))
    assert seen == [1, 2] and torch.get_num_threads() == before
    assert type(agent).torch_threads == 1  # the default: one thread
