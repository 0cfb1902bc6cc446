"""RLlib (new API stack) trains masked multi-agent PPO on the PettingZoo table (``yacht_env.rllib``).

* The key wrapper passes PettingZoo's ``api_test`` (no Ray needed).
* A few tiny PPO iterations, 2 players with one shared policy (episodes cut into chunks between samples) and
  3 players with one policy each (whole episodes): every decision sampled in training was legal under the mask
  the agent saw, the env counted no illegal action, each player made exactly 12 picks in 12..36 decisions, and
  RLlib's episode lengths are within those bounds.
* The trained modules' logits are masked: illegal actions sit at the float minimum and are never sampled,
  over whole games played with ``illegal_action="raise"``.

The training tests need ``ray[rllib]`` (``pip install -e ".[rllib]"``; it pins its own gymnasium, so CI runs
this file in a venv of its own) and are skipped without it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test  # noqa: E402

from yacht_env.multiplayer import env  # noqa: E402
from yacht_env.rllib import OBSERVATIONS, RLlibKeys  # noqa: E402

NUM_CATEGORIES = 12
MAX_DECISIONS = 3 * NUM_CATEGORIES  # up to three decisions a turn: re-roll, re-roll, pick
PICKS = 32  # actions 32.. pick a category; 0..31 keep dice and re-roll


@pytest.mark.parametrize("num_players", [1, 2, 3])
def test_rllib_keys_pass_the_pettingzoo_api_test(num_players):
    table = RLlibKeys(env(num_players=num_players))
    space = table.observation_space("player_0")
    assert set(space) == {OBSERVATIONS, "action_mask"}
    assert space[OBSERVATIONS] == env(num_players=num_players).observation_space("player_0")["observation"]
    with warnings.catch_warnings():  # api_test's reset(options={"options": 1}) draws no warning from the env
        # api_test's advice for Box observations (these are Dicts by design) and, the key not being "observation",
        # its check of every agent's mask: all zeros off turn by design, as in PettingZoo's classic envs.
        advice = ("Observation is not a NumPy array", "Observation space for each agent probably should be")
        for message in (*advice, "Action mask numpy array is all zeros"):
            warnings.filterwarnings("ignore", message=message, category=UserWarning, module="pettingzoo.test")
        api_test(table, num_cycles=100)


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray for the module's runs (each build_algo would otherwise start its own)."""
    pytest.importorskip("ray.rllib", reason='needs RLlib: pip install -e ".[rllib]"')
    import ray

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        started = not ray.is_initialized()
        if started:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        yield
        if started:
            ray.shutdown()


def check_game(*, episode, prev_episode_chunks, metrics_logger, **kwargs) -> None:
    """``on_episode_end``: each decision of a game against the mask it was taken on, logged for the test to read.

    Only games sampled whole in one chunk: an episode cut between two ``sample()`` calls carries an agent's
    pending action into the next chunk (RLlib's lookback), so its chunks do not simply concatenate.
    """
    if prev_episode_chunks:
        return
    metrics_logger.log_value(("check", "games"), 1, reduce="lifetime_sum")
    for single in episode.agent_episodes.values():
        actions = np.asarray(single.get_actions(), dtype=np.int64).reshape(-1)
        observations = single.get_observations(slice(0, len(actions)))  # the one each action was taken on
        if isinstance(observations, dict):  # batched: one array per key
            masks = np.asarray(observations["action_mask"])
        else:
            masks = np.array([observation["action_mask"] for observation in observations])
        illegal_sampled = int((masks.reshape(len(actions), -1)[np.arange(len(actions)), actions] == 0).sum())
        metrics_logger.log_value(("check", "illegal_sampled"), illegal_sampled, reduce="lifetime_sum")
        for name, value in (("picks", int((actions >= PICKS).sum())), ("decisions", len(actions))):
            metrics_logger.log_value(("check", f"{name}_min"), value, reduce="min", window=1000)
            metrics_logger.log_value(("check", f"{name}_max"), value, reduce="max", window=1000)


def play_with_modules(algo, num_players: int, module_of, seed: int) -> dict[str, int]:
    """A whole game with the trained modules, sampling as in training; an illegal action would raise."""
    import torch

    table = env(num_players=num_players, illegal_action="raise")
    table.reset(seed=seed)
    decisions = dict.fromkeys(table.possible_agents, 0)
    for agent in table.agent_iter():
        observation, reward, termination, truncation, info = table.last()
        if termination or truncation:
            table.step(None)
            continue
        module = algo.get_module(module_of(agent))
        legal = observation["action_mask"].astype(bool)
        obs = {key: torch.as_tensor(value[None]) for key, value in observation.items()}
        batch = {"obs": {OBSERVATIONS: obs["observation"], "action_mask": obs["action_mask"]}}
        with torch.no_grad():
            logits = module.forward_exploration(batch)["action_dist_inputs"]
        assert (logits[0, ~legal] < -1e38).all()  # pushed to the float minimum: probability exactly 0
        samples = module.get_exploration_action_dist_cls().from_logits(logits.expand(256, -1)).sample()
        assert legal[samples.numpy()].all()
        table.step(int(samples[0]))
        decisions[agent] += 1
    assert all(NUM_CATEGORIES <= n <= MAX_DECISIONS for n in decisions.values()), decisions
    return decisions


@pytest.mark.slow
@pytest.mark.parametrize(
    ("num_players", "shared", "batch_mode"),
    [(2, True, "truncate_episodes"), (3, False, "complete_episodes")],
    ids=["2p-shared", "3p-separate"],
)
def test_masked_ppo_trains_on_the_table(num_players, shared, batch_mode, ray_local):
    from yacht_env.rllib import log_table_metrics, ppo_config

    config = (
        ppo_config(num_players=num_players, shared=shared)
        .env_runners(num_env_runners=0, batch_mode=batch_mode)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32], "head_fcnet_hiddens": [32]})
        .callbacks(on_episode_end=[log_table_metrics, check_game])  # ppo_config's callback and the test's
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(3)]
        modules = {"shared"} if shared else {f"player_{p}" for p in range(num_players)}
        assert modules <= set(results[-1]["learners"])
        for result in results:
            assert np.isfinite(result["learners"][next(iter(modules))]["policy_loss"])
        runners = results[-1]["env_runners"]
        assert runners["yacht"]["illegal_actions"] == 0  # the env's own count, over every game
        assert runners["check"]["games"] >= 2
        assert runners["check"]["illegal_sampled"] == 0  # each sampled action legal under the mask it was taken on
        assert runners["check"]["picks_min"] == runners["check"]["picks_max"] == NUM_CATEGORIES
        assert NUM_CATEGORIES <= runners["check"]["decisions_min"] <= runners["check"]["decisions_max"] <= 36
        bounds = (NUM_CATEGORIES * num_players, MAX_DECISIONS * num_players)
        assert bounds[0] <= runners["episode_len_min"] <= runners["episode_len_max"] <= bounds[1]
        assert set(runners["yacht"]["total"]) == {f"player_{p}" for p in range(num_players)}
        module_of = (lambda agent: "shared") if shared else (lambda agent: agent)
        for seed in range(2):
            play_with_modules(algo, num_players, module_of, seed)
    finally:
        algo.stop()
