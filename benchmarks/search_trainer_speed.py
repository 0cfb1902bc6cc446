"""Benchmark the search trainer's self-play: turns a second on one core, for every shipped table config.

Usage:
    python benchmarks/search_trainer_speed.py [--configs search_selfplay_yahtzee ...] [--repeats 3]
    python benchmarks/search_trainer_speed.py --baseline 630a2c2     # beside the trainer of a git revision

For each config (default: every shipped ``configs/search_*.yaml`` with ``search.players`` of 2 or more) it times one
iteration of the trainer, as :func:`yacht_lab.training.search.trainer.train_search` runs it: ``search.tables`` games
of self-play (:func:`yacht_lab.training.search.rollouts.play`, every turn the agent's expectimax over a value network
of the config's widths, fresh weights seeded by the config's seed, with the solo network ``search.solo`` names and the
race where ``search.race`` asks for it), then
the regression on their afterstates (``search.epochs`` passes). The figure is turns played per CPU second of this
process, BLAS and torch on one thread: one core's work, which the other jobs of a shared machine barely move (the
best of ``--repeats`` iterations is kept).

``--baseline REV`` also times the trainer of the git revision ``REV`` (its ``agents/``, ``yacht_env/`` and
``yacht_lab/`` taken by ``git archive`` into a temporary folder; this folder must be a git clone) on the same configs,
the runs alternating, and prints the ratio. A revision's trainer without a feature a config asks for (``search.solo``,
``search.race``, ``search.placing``: any key its config does not know) is timed without it: what that revision could
run.

``--json PATH`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(name, "1")


def shipped_table_configs() -> list[str]:
    """The shipped search configs of a table (``search.players`` >= 2), by name."""
    import yaml

    names = []
    for path in sorted((ROOT / "configs").glob("search_*.yaml")):
        section = (yaml.safe_load(path.read_text()) or {}).get("search") or {}
        if int(section.get("players", 1)) >= 2:
            names.append(path.stem)
    return names


def measure(name: str, repeats: int) -> dict:
    """One config's iteration, timed in this process's CPU seconds (the code on ``sys.path``)."""
    import dataclasses
    import inspect
    import time

    import numpy as np
    import torch
    import yaml

    from yacht_agents import search
    from yacht_env import rules as R
    from yacht_lab.training.config import SearchConfig, from_dict, validate
    from yacht_lab.training.search.learner import Learner
    from yacht_lab.training.search.rollouts import play

    torch.set_num_threads(1)
    data = yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())
    solo_name = data["search"].get("solo")
    known = {f.name for f in dataclasses.fields(SearchConfig)}
    race = bool(data["search"].get("race")) and "race" in known
    for key in set(data["search"]) - known:  # a trainer before the solo network, the race or the placing (play only)
        data["search"].pop(key)
    config = validate(from_dict(data))
    section = config.search
    if "solo_net_arch" in search.ValueSpec._fields:
        shipped = ROOT / "models" / f"search_{solo_name}.npz"  # this checkout's file, whichever code reads it
        solo = search.load_value(shipped if shipped.is_file() else solo_name) if solo_name else None
        arch = tuple(solo.spec.net_arch) if solo is not None else ()
        spec = search.ValueSpec(config.rules, section.players, tuple(section.net_arch), 3 if race else 2, arch)
        learner = Learner(spec, config.seed, section.learning_rate, "cpu", solo)
    else:  # a trainer before the solo network
        spec = search.ValueSpec(config.rules, section.players, tuple(section.net_arch))
        learner = Learner(spec, config.seed, section.learning_rate, "cpu")
        solo_name = None
    rules = R.get_rules(config.rules)
    rng = np.random.default_rng(config.seed)
    assert "td_lambda" in inspect.signature(play).parameters
    best_play = best_iteration = float("inf")
    turns = 0
    for _ in range(repeats):
        planner = search.TurnPlanner(rules, section.players, learner.network())
        start = time.process_time()
        batch = play(planner, section.tables, rng, section.td_lambda)
        played = time.process_time()
        learner.fit(batch.x, batch.y, section.epochs, section.batch_size, section.learning_rate)
        done = time.process_time()
        best_play, best_iteration = min(best_play, played - start), min(best_iteration, done - start)
        turns = batch.turns
    return {
        "config": name,
        "rules": config.rules,
        "players": section.players,
        "net_arch": list(section.net_arch),
        "tables": section.tables,
        "solo": solo_name,
        "race": race,
        "turns": turns,
        "self_play_turns_per_second": turns / best_play,
        "iteration_turns_per_second": turns / best_iteration,
    }


def run_worker(names: list[str], repeats: int, code: Path | None) -> list[dict]:
    """:func:`measure` in a fresh process, on the code at ``code`` (``None``: this checkout's)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), str(code / "shim")])
    args = [sys.executable, __file__, "--worker", "--repeats", str(repeats), "--configs", *names]
    done = subprocess.run(args, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(
            f"search_trainer_speed.py: error: the {'baseline' if code else 'current'} worker failed: {tail}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def baseline_code(revision: str, into: Path) -> Path:
    """The trainer of git revision ``revision``, extracted into ``into`` (``agents`` reachable as ``yacht_agents``)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "agents", "yacht_env", "yacht_lab"],
        capture_output=True,
    )
    if archive.returncode != 0:
        raise SystemExit(f"search_trainer_speed.py: error: cannot read revision {revision!r} from git")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    (into / "shim").mkdir()
    (into / "shim" / "yacht_agents").symlink_to(into / "agents")
    return into


def main(argv: list[str] | None = None) -> None:
    from yacht_lab.scripts.cli import OneLineParser, output_file

    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", help="config names (default: every shipped table config)")
    parser.add_argument("--repeats", type=int, default=3, help="iterations timed per config (the best is kept)")
    parser.add_argument("--baseline", metavar="REV", help="also time the trainer of this git revision")
    parser.add_argument("--json", type=output_file, metavar="PATH", help="write the figures here (checked first)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 1 <= args.repeats <= 100:
        parser.error("--repeats must be in 1..100")
    names = args.configs or shipped_table_configs()
    missing = [n for n in names if not (ROOT / "configs" / f"{n}.yaml").is_file()]
    if missing:
        parser.error(f"no shipped config {missing[0]!r} (configs/<name>.yaml)")
    if args.worker:
        print(json.dumps([measure(name, args.repeats) for name in names]))
        return
    with tempfile.TemporaryDirectory() as temp:
        code = baseline_code(args.baseline, Path(temp)) if args.baseline else None
        rows = []
        for name in names:  # the two trainers alternate, config by config
            now = run_worker([name], args.repeats, None)[0]
            before = run_worker([name], args.repeats, code)[0] if code else None
            rows.append({**now, "baseline": before})
    print(f"self-play turns per CPU second, one thread (best of {args.repeats} iterations)")
    head = f"{'config':<28} {'rules':<8} {'P':>2} {'net_arch':<12} {'solo':<9} {'race':<4} "
    head += f"{'self-play':>10} {'+ fit':>9}"
    print(head + (f" {'baseline':>10} {'ratio':>7}" if code else ""))
    for row in rows:
        arch = "x".join(map(str, row["net_arch"]))
        line = (
            f"{row['config']:<28} {row['rules']:<8} {row['players']:>2} {arch:<12} {row['solo'] or '-':<9} "
            f"{'yes' if row.get('race') else '-':<4} "
            f"{row['self_play_turns_per_second']:>10,.0f} {row['iteration_turns_per_second']:>9,.0f}"
        )
        if row["baseline"]:
            base = row["baseline"]["self_play_turns_per_second"]
            line += f" {base:>10,.0f} {row['self_play_turns_per_second'] / base:>6.2f}x"
        print(line)
    if args.json:
        from yacht_env.util import atomic_write

        atomic_write(args.json, json.dumps({"baseline": args.baseline, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
