"""The JAX core against the numpy core, side by side in one run: random legal play, then PPO training.

Random legal play (steps/s, every game a solo ``standard`` game, uniformly random legal actions drawn on the same
side as the env: numpy's noise x mask argmax for ``YachtVectorEnv``, the k-th legal action for one uniform number
per game inside the compiled loop for JAX): ``YachtVectorEnv`` (autoreset, observations, masks) against the pgx face
(``YachtPgx``, one player: observation, mask, rewards, reset where a game ended) stepped by ``jax.lax.scan`` under
``jit`` and ``vmap``, for N games from 1,024 to 1,048,576. Compilation is left out (a warm-up call first); each
figure is the median of ``--rounds`` timed calls.

PPO: training steps/s of the recipe (``configs/ppo.yaml``: 64 envs x 256 steps, batch 4,096, 8 epochs, [256, 256],
the odds policy) with SB3's MaskablePPO on the native vector env (torch, one thread) and with the JAX trainer
(:mod:`yacht_lab.training.jax.ppo`, ``--jax-seeds`` seeds in one vmap), a few updates each after a warm-up one. With
``--curves JAX_RUN SB3_RUN`` it also reads two run folders' learning curves for the time (wall minutes, steps) to
95% and 98% of optimal.

JAX runs on whatever device it sees: ``--device cpu`` or ``--device gpu`` (``JAX_PLATFORMS``) picks one; the output
names it. A GPU run is this one command on a machine with a GPU and jax[cuda].

    python benchmarks/jax_speed.py                                  # all of it, here ~10 minutes on 2 cores
    python benchmarks/jax_speed.py --device gpu --skip-numpy --skip-sb3
    python benchmarks/jax_speed.py --skip-ppo --sizes 1024 65536 --json out.json
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from yacht_env.util import atomic_write
from yacht_lab.scripts.cli import OneLineParser, output_file

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SIZES = [1024, 16384, 262144, 1048576]


def random_legal(key, mask):
    """Uniform over each row's legal actions from one uniform number per row (the k-th legal action)."""
    import jax
    import jax.numpy as jnp

    count = mask.sum(axis=1)
    k = (jax.random.uniform(key, count.shape) * count).astype(jnp.int32)
    return jnp.argmax(jnp.cumsum(mask, axis=1) > k[:, None], axis=1)


def jax_random_play(sizes: list[int], steps: int, rounds: int) -> list[dict]:
    import jax
    import jax.numpy as jnp

    from yacht_env.jax import YachtPgx

    env = YachtPgx("standard", num_players=1)
    results = []
    for n in sizes:

        def play(state, key, n=n):
            def body(state, key):
                act_key, step_key, reset_key = jax.random.split(key, 3)
                action = random_legal(act_key, state.legal_action_mask)
                stepped = jax.vmap(env.step)(state, action, jax.random.split(step_key, n))
                fresh = jax.vmap(env.init)(jax.random.split(reset_key, n))
                done = stepped.terminated
                state = jax.tree.map(
                    lambda a, b: jnp.where(done.reshape(-1, *[1] * (a.ndim - 1)), a, b), fresh, stepped
                )
                return state, None

            return jax.lax.scan(body, state, jax.random.split(key, steps))[0]

        run = jax.jit(play)
        state = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), n))
        state = jax.block_until_ready(run(state, jax.random.key(1)))  # compile and warm up
        times = []
        for r in range(rounds):
            start = time.perf_counter()
            state = jax.block_until_ready(run(state, jax.random.key(2 + r)))
            times.append(time.perf_counter() - start)
        results.append(
            {"engine": "YachtPgx (jit, vmap, scan)", "games": n, "steps_per_s": n * steps / statistics.median(times)}
        )
        print(f"  jax   {n:>9,} games: {results[-1]['steps_per_s']:>14,.0f} steps/s", flush=True)
    return results


def numpy_random_play(sizes: list[int], steps: int, rounds: int) -> list[dict]:
    from yacht_env.vector import YachtVectorEnv

    results = []
    for n in sizes:
        env = YachtVectorEnv(num_envs=n)
        rng = np.random.default_rng(0)
        _, info = env.reset(seed=0)
        noise = np.empty((n, env.single_action_space.n), dtype=np.float32)
        times = []
        for r in range(rounds + 1):
            start = time.perf_counter()
            for _ in range(steps):
                rng.random(out=noise, dtype=np.float32)
                np.multiply(noise, info["action_mask"], out=noise)
                _, _, _, _, info = env.step(noise.argmax(axis=1))
            if r:  # the first round warms up
                times.append(time.perf_counter() - start)
        env.close()
        results.append(
            {"engine": "YachtVectorEnv (numpy)", "games": n, "steps_per_s": n * steps / statistics.median(times)}
        )
        print(f"  numpy {n:>9,} games: {results[-1]['steps_per_s']:>14,.0f} steps/s", flush=True)
    return results


def recipe():
    from yacht_lab.training.config import TrainConfig, validate

    return validate(TrainConfig(max_minutes=None))


def jax_training(updates: int, seeds: int) -> dict:
    import jax

    from yacht_lab.training.config import JaxConfig
    from yacht_lab.training.jax.ppo import make_trainer

    config = recipe()
    config.jax = JaxConfig(seeds=seeds)
    init, update, _, _ = make_trainer(config)
    runners = init(jax.numpy.stack([jax.random.key(s) for s in range(seeds)]))
    runners, _ = update(runners, 0)  # compile
    jax.block_until_ready(runners.params)
    start = time.perf_counter()
    for u in range(1, updates + 1):
        runners, _ = update(runners, u)
    jax.block_until_ready(runners.params)
    batch = config.n_envs * config.ppo.n_steps
    return {
        "trainer": f"JAX PPO ({seeds} seed(s) in one vmap)",
        "steps_per_s": batch * seeds * updates / (time.perf_counter() - start),
    }


def sb3_training(updates: int) -> dict:
    import torch

    from yacht_lab.training.sb3.model import start_model
    from yacht_lab.training.sb3.ppo import make_vec_env

    config = recipe()
    torch.set_num_threads(config.torch_threads)
    env = make_vec_env(config)
    model = start_model(config, env, None)
    batch = config.n_envs * config.ppo.n_steps
    model.learn(batch)  # warm up
    start = time.perf_counter()
    model.learn(batch * updates, reset_num_timesteps=False)
    rate = batch * updates / (time.perf_counter() - start)
    env.close()
    return {"trainer": "SB3 MaskablePPO (torch, 1 thread)", "steps_per_s": rate}


def time_to(curve: Path, percent: float) -> dict | None:
    import csv

    with open(curve) as file:
        rows = [row for row in csv.DictReader(file) if float(row["percent_of_optimal"]) >= percent]
    if not rows:
        return None
    return {"wall_minutes": float(rows[0]["wall_minutes"]), "timesteps": int(float(rows[0]["timesteps"]))}


def main() -> None:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "gpu", "cuda", "tpu"], help="the JAX platform (default: jax's)")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES, help="games played at once")
    parser.add_argument("--steps", type=int, default=64, help="steps per timed call (random play)")
    parser.add_argument("--rounds", type=int, default=3, help="timed calls per size (median kept)")
    parser.add_argument("--updates", type=int, default=3, help="PPO updates timed (after one warm-up)")
    parser.add_argument("--jax-seeds", type=int, default=1, help="seeds in the JAX trainer's vmap")
    parser.add_argument("--skip-numpy", action="store_true", help="no numpy vector env")
    parser.add_argument("--skip-ppo", action="store_true", help="no training speeds")
    parser.add_argument("--skip-sb3", action="store_true", help="no SB3 training speed")
    parser.add_argument("--curves", nargs=2, metavar=("JAX_RUN", "SB3_RUN"), type=Path, help="run folders to read")
    parser.add_argument("--json", type=output_file, help="write the results here (checked before the timing)")
    args = parser.parse_args()
    if args.device:
        os.environ["JAX_PLATFORMS"] = "cuda" if args.device == "gpu" else args.device
    import jax

    device = jax.devices()[0]
    out: dict = {
        "jax_device": f"{device.platform}: {device.device_kind}",
        "jax": jax.__version__,
        "cpus": os.cpu_count(),
    }
    print(f"JAX device: {out['jax_device']} (jax {jax.__version__}); {os.cpu_count()} CPUs", flush=True)
    print("random legal play:", flush=True)
    out["random_play"] = jax_random_play(args.sizes, args.steps, args.rounds)
    if not args.skip_numpy:
        out["random_play"] += numpy_random_play(args.sizes, args.steps, args.rounds)
    if not args.skip_ppo:
        print("PPO training (the recipe):", flush=True)
        out["training"] = [jax_training(args.updates, args.jax_seeds)]
        print(f"  {out['training'][-1]['trainer']}: {out['training'][-1]['steps_per_s']:,.0f} steps/s", flush=True)
        if not args.skip_sb3:
            out["training"].append(sb3_training(args.updates))
            print(f"  {out['training'][-1]['trainer']}: {out['training'][-1]['steps_per_s']:,.0f} steps/s", flush=True)
    if args.curves:
        out["time_to"] = {}
        for name, folder in zip(("jax", "sb3"), args.curves, strict=True):
            out["time_to"][name] = {p: time_to(folder / "learning_curve.csv", p) for p in (95, 98)}
            print(f"  {name} ({folder}): to 95%: {out['time_to'][name][95]}; to 98%: {out['time_to'][name][98]}")
    if args.json:
        atomic_write(args.json, json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
