"""A sweep of 4 trials against the same 4 runs of train.py one after another: wall-clock time and ratio.

    python benchmarks/sweep_speed.py                      # 4 x 300,000 steps, 1 CPU (1 torch thread) per trial
    python benchmarks/sweep_speed.py --timesteps 100000 --trials 4 --cpus-per-trial 1

Both sides train exactly the same configs (the sweep's trial configs, written out as train.py configs: same
seeds, budget and torch threads), each process started from scratch and timed from its start to its end; the
sweep's time includes starting and stopping its local Ray. Run it on an otherwise idle machine. The target
(README "Sweeps"): the sweep in at most 0.6x the time of the runs one after another on 2 CPUs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from yacht_lab.sweep.spec import parse_sweep  # noqa: E402


def sweep_file(timesteps: int, trials: int) -> dict:
    return {
        "name": "speed",
        "base": {"eval": {"every_timesteps": max(timesteps // 3, 1), "games": 500}},
        "seeds": trials,
        "budget": {"total_timesteps": timesteps, "max_minutes": None},
        "statistics": {"reps": 1000},
    }


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=300_000, help="steps per run (default: %(default)s)")
    parser.add_argument("--trials", type=int, default=4, help="runs (seeds 0..N-1) (default: %(default)s)")
    parser.add_argument("--cpus-per-trial", type=int, default=1, help="CPUs and torch threads per run")
    args = parser.parse_args()

    data = sweep_file(args.timesteps, args.trials)
    sweep = parse_sweep(data)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "sweep.yaml").write_text(yaml.safe_dump(data))
        configs = []
        for seed in sweep.seeds:
            config = sweep.trial_config(sweep.configurations[0], seed, args.cpus_per_trial)
            path = tmp / f"seed{seed}.yaml"
            path.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
            configs.append(path)
        sweep_command = [sys.executable, "sweep.py", "--config", str(tmp / "sweep.yaml"), "--storage", str(tmp / "s")]
        sweep_command += ["--cpus-per-trial", str(args.cpus_per_trial)]
        print(f"{args.trials} runs of {args.timesteps:,} steps, {args.cpus_per_trial} CPU/torch thread(s) each")
        swept = timed(sweep_command)
        print(f"sweep.py (local Ray, trials side by side): {swept:7.1f} s", flush=True)
        one_by_one = 0.0
        for path in configs:
            one_by_one += timed(
                [sys.executable, "train.py", "--config", str(path), "--output-dir", str(tmp / "t"), "--no-progress"]
            )
        print(f"train.py, one run after another:           {one_by_one:7.1f} s")
        print(f"ratio sweep / one after another:            {swept / one_by_one:7.2f}x (target <= 0.6x on 2 CPUs)")


if __name__ == "__main__":
    main()
