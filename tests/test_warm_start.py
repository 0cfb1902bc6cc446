"""Specification of a run started from a trained model (``init``, ``train.py --init MODEL``).

A solo model starting a run at a table acts exactly as it did (the table's columns start at zero) on every
observation of real games; the value head's output starts at zero and every other parameter is the model's;
what does not fit is refused in one line, before anything is written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from stable_baselines3.common.logger import Logger

from yacht_agents.ppo import build_model
from yacht_env.encoding import ObservationEncoder
from yacht_env.sb3 import YachtSB3VecEnv
from yacht_lab.anchor import _CarryLoss, anchor_to_init, masked_kl
from yacht_lab.callbacks import actor_parameters
from yacht_lab.config import PPOConfig, TrainConfig, load_config
from yacht_lab.focus import explore, kl_weights, learn_last_turns, open_categories
from yacht_lab.tasks import make_vec_env
from yacht_lab.training import make_model, train
from yacht_lab.warm_start import warm_start

REPO = Path(__file__).resolve().parents[1]
STANDARD = REPO / "models" / "ppo_standard.zip"


def started(**changes) -> tuple[TrainConfig, object]:
    config = TrainConfig(n_envs=4, init=str(STANDARD), **changes)
    model = make_model(config, make_vec_env(config), None)
    warm_start(model, config)
    return config, model


def table_observations(players: int = 2, steps: int = 120) -> np.ndarray:
    """Table views of real games against greedy, from the learner's seat (random actions among the legal)."""
    env = YachtSB3VecEnv(16, opponents=["greedy"] * (players - 1))
    env.seed(3)
    rng = np.random.default_rng(0)
    seen, obs = [], env.reset()
    for _ in range(steps):
        seen.append(obs)
        masks = env.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, *_ = env.step(actions)
    return np.concatenate(seen)


@pytest.mark.parametrize("players", [2, 3])
def test_a_solo_model_starts_a_table_run_acting_exactly_as_it_did(players):
    _, model = started(opponents=["greedy"] * (players - 1), reward="win", reward_scale=1.0)
    source = build_model(STANDARD, device="cpu")
    obs = table_observations(players)
    solo = obs[:, :64]
    assert obs.shape[1] > 64 and np.ptp(obs[:, 64:], axis=0).max() > 0  # the table's part varies
    with torch.no_grad():
        new = model.policy.get_distribution(torch.from_numpy(obs)).distribution.logits
        old = source.policy.get_distribution(torch.from_numpy(solo)).distribution.logits
        values = model.policy.predict_values(torch.from_numpy(obs))
    torch.testing.assert_close(new, old, rtol=1e-5, atol=1e-5)
    assert torch.count_nonzero(values) == 0  # the critic's output starts at zero: its scale was the old reward's
    first = model.policy.mlp_extractor.policy_net[0].weight
    assert not first[:, 64 : obs.shape[1]].any() and first[:, :64].abs().sum() > 0


def test_every_parameter_is_the_models_but_the_value_output():
    _, model = started()
    source = build_model(STANDARD, device="cpu").policy.state_dict()
    for name, value in model.policy.state_dict().items():
        if name.startswith("value_net."):
            assert not value.any(), name
        else:
            torch.testing.assert_close(value, source[name], rtol=0, atol=0, msg=name)


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"policy": {"net_arch": [64, 64]}}, "has policy.net_arch {'pi': [256, 256], 'vf': [256, 256]}, this run's"),
        ({"rules": "classic"}, "has rules 'standard', this run's config has 'classic'"),
        ({"policy": {"keep_head": False}}, "has policy.keep_head True, this run's config has False"),
        ({"policy": {"chase_inputs": False, "keep_head": False}}, "has policy class 'OddsPolicy'"),
        ({"init": "models/nope.zip"}, "init: cannot load PPO model 'models/nope.zip': file not found"),
        ({"init": "nope"}, "init: cannot load PPO model 'nope': no shipped model of that name"),
    ],
)
def test_what_does_not_fit_is_refused_in_one_line(changes, fragment):
    config = TrainConfig(n_envs=4, init=str(STANDARD))
    for key, value in changes.items():
        if key == "policy":
            for name, setting in value.items():
                setattr(config.policy, name, setting)
        else:
            setattr(config, key, value)
    model = make_model(config, make_vec_env(config), None)
    with pytest.raises(ValueError, match="init: ") as error:
        warm_start(model, config)
    assert fragment in str(error.value) and "\n" not in str(error.value)


def test_a_table_model_starts_only_a_table_of_its_size(tmp_path):
    _, table_model = started(opponents=["greedy"], reward="win", reward_scale=1.0)
    path = tmp_path / "table2.zip"
    table_model.save(path)
    config = TrainConfig(n_envs=4, init=str(path), opponents=["greedy", "greedy"])
    model = make_model(config, make_vec_env(config), None)
    with pytest.raises(ValueError, match=r"saw observations of 79 values: neither this run's \(92\)"):
        warm_start(model, config)
    same = TrainConfig(n_envs=4, init=str(path), opponents=["random"])
    model = make_model(same, make_vec_env(same), None)
    warm_start(model, same)
    torch.testing.assert_close(
        model.policy.mlp_extractor.policy_net[0].weight, table_model.policy.mlp_extractor.policy_net[0].weight
    )


@pytest.mark.slow  # an end-to-end training run: python -m pytest -m slow (CI runs it)
def test_train_py_init_runs_at_a_table_and_records_its_start(tmp_path):
    config = tmp_path / "init.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "total_timesteps": 1024,
                "n_envs": 8,
                "reward_scale": 1.0,
                "ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 1},
                "eval": {"every_timesteps": 1024, "games": 20},
                "checkpoint_every_timesteps": 1024,
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "train.py", "--config", str(config), "--init", "standard", "--opponents", "greedy"]
        + ["--reward", "win", "--output-dir", str(tmp_path / "runs"), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert yaml.safe_load((run / "config.yaml").read_text())["init"] == "standard"
    assert "--init standard" in (run / "command.txt").read_text()
    # The first curve row is the start model's play: it wins games against greedy from the first evaluation.
    first = (run / "learning_curve.csv").read_text().splitlines()[1].split(",")
    assert float(first[2]) > 0.5


def test_train_py_refuses_a_bad_init_in_one_line_and_writes_nothing(tmp_path):
    output = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "train.py", "--init", "classic", "--output-dir", str(output), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"train.py: error: init: {str(REPO / 'models' / 'ppo_classic.zip')!r} has rules 'classic', "
        "this run's config has 'standard' (the network must be the one the config describes)"
    ]
    assert not output.exists() or not any(output.iterdir())


# --------------------------------------------------------------------------------------------------
# ppo.kl_to_init: the penalty toward the start model (yacht_lab.anchor)
# --------------------------------------------------------------------------------------------------
def test_masked_kl_is_the_kl_divergence_over_the_legal_actions():
    p = torch.tensor([[0.5, 0.25, 0.25, 0.0], [1.0, 0.0, 0.0, 0.0]])
    q = torch.tensor([[0.25, 0.25, 0.5, 0.0], [0.5, 0.5, 0.0, 0.0]])
    log_p, log_q = p.log(), q.log()  # -inf where masked, as the masked distribution's logits
    expected = torch.tensor([0.5 * np.log(2) + 0.25 * np.log(0.5), np.log(2)], dtype=torch.float32)
    torch.testing.assert_close(masked_kl(log_p, log_q), expected)
    assert masked_kl(log_q, log_q).abs().max() == 0


def test_the_carried_loss_adds_its_gradient_and_leaves_the_value_unchanged():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([0.5, -1.0], requires_grad=True)
    carried = _CarryLoss.apply(x, 3.0 * (w**2).sum())
    assert torch.equal(carried, x)
    (carried**2).sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())
    torch.testing.assert_close(w.grad, 6.0 * w.detach())  # d/dw of 3 * sum(w^2)


def _kl_after_one_update(coef: float) -> float:
    ppo = PPOConfig(n_steps=64, batch_size=64, learning_rate=1e-3, learning_rate_final=1e-3)  # one update, 8 epochs
    config, model = started(opponents=["greedy"], reward="win", reward_scale=1.0, seed=5, ppo=ppo)
    reference = make_model(config, model.get_env(), None)
    warm_start(reference, config)
    if coef:
        anchor_to_init(model, reference.policy, coef)
    model.learn(256)
    obs = torch.from_numpy(table_observations())
    with torch.no_grad():
        log_p = model.policy.get_distribution(obs).distribution.logits
        log_q = reference.policy.get_distribution(obs).distribution.logits
    return float(masked_kl(log_p, log_q).mean())


def test_the_penalty_keeps_the_policy_closer_to_its_start():
    free, anchored = _kl_after_one_update(0.0), _kl_after_one_update(100.0)
    assert free > 0 and anchored < free / 2, (free, anchored)


def test_kl_to_init_needs_init(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"ppo": {"kl_to_init": 0.1}}))
    with pytest.raises(ValueError, match=r"^ppo.kl_to_init needs init"):
        load_config(path)
    path.write_text(yaml.safe_dump({"init": "standard", "ppo": {"kl_to_init": -0.1}}))
    with pytest.raises(ValueError, match=r"^ppo.kl_to_init must be a number >= 0"):
        load_config(path)


# --------------------------------------------------------------------------------------------------
# ppo.learn_last_turns: the policy's gradient from the last turns only (yacht_lab.focus)
# --------------------------------------------------------------------------------------------------
def test_open_categories_counts_the_players_own_open_categories():
    obs = table_observations(2)
    open_mask = ObservationEncoder("standard").decode(obs[:, :64])[2]
    expected = np.array([bin(int(m)).count("1") for m in open_mask])
    assert set(expected) == set(range(1, 13))  # every stage of a game is in the sample
    assert np.array_equal(open_categories(torch.from_numpy(obs), "standard").numpy(), expected)


@pytest.mark.parametrize("rules", ["standard", "classic", "knizia", "yahtzee", "yatzy"])
def test_open_categories_reads_every_presets_layout(rules):
    encoder, rng = ObservationEncoder(rules), np.random.default_rng(1)
    n = encoder.rules.num_categories
    open_mask = rng.integers(1, 1 << n, 500)
    obs = encoder.flat(rng.integers(0, 252, 500), rng.integers(0, 3, 500), open_mask)
    expected = [bin(int(m)).count("1") for m in open_mask]
    assert open_categories(torch.from_numpy(obs), rules).tolist() == expected


def _actor_gradients(model, obs, actions, masks) -> list[torch.Tensor]:
    model.policy.zero_grad()
    _, log_prob, entropy = model.policy.evaluate_actions(obs, actions, action_masks=masks)
    (log_prob.sum() + entropy.sum()).backward()
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in actor_parameters(model.policy)]


def test_learn_last_turns_leaves_the_earlier_decisions_without_policy_gradient():
    _, model = started(opponents=["greedy"], reward="win", reward_scale=1.0)
    obs = torch.from_numpy(table_observations(2))
    env = YachtSB3VecEnv(1, opponents=["greedy"])
    masks = np.zeros((len(obs), env.action_space.n), dtype=bool)
    masks[:, : env.action_space.n] = True  # every action allowed: the gradient's zeros come from the option alone
    actions = torch.from_numpy(np.random.default_rng(0).integers(0, env.action_space.n, len(obs)))
    with torch.no_grad():
        plain = model.policy.evaluate_actions(obs, actions, action_masks=masks)
    learn_last_turns(model, 3, "standard")
    model.set_logger(Logger(folder=None, output_formats=[]))  # train() sets one; the option logs its share
    with torch.no_grad():
        focused = model.policy.evaluate_actions(obs, actions, action_masks=masks)
    for a, b in zip(plain, focused, strict=True):
        assert torch.equal(a, b)  # the same values: only the gradients differ
    late = open_categories(obs, "standard") <= 3
    assert 0 < late.sum() < len(obs)
    early_grads = _actor_gradients(model, obs[~late], actions[~late], masks[~late.numpy()])
    assert all(g.abs().max() == 0 for g in early_grads)
    late_grads = _actor_gradients(model, obs[late], actions[late], masks[late.numpy()])
    assert any(g.abs().max() > 0 for g in late_grads)
    model.policy.zero_grad()  # the critic still learns from every decision
    values = model.policy.evaluate_actions(obs[~late], actions[~late], action_masks=masks[~late.numpy()])[0]
    values.sum().backward()
    assert model.policy.value_net.weight.grad.abs().max() > 0


def test_train_focuses_the_policy_when_asked(tmp_path, monkeypatch):
    calls = []

    def spy(model, turns, rules):
        calls.append((turns, rules))
        learn_last_turns(model, turns, rules)

    monkeypatch.setattr("yacht_lab.training.learn_last_turns", spy)
    ppo = {"n_steps": 64, "batch_size": 256, "n_epochs": 1, "learn_last_turns": 4}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"n_envs": 4, "total_timesteps": 256, "eval": {"games": 10}, "ppo": ppo}))
    train(load_config(path), tmp_path / "run", command="test", progress=False)
    assert calls == [(4, "standard")]


@pytest.mark.parametrize("value", [-1, 13, 0.5, "4"])
def test_learn_last_turns_is_an_int_up_to_the_sheet(tmp_path, value):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"ppo": {"learn_last_turns": value}}))
    with pytest.raises(ValueError, match=r"^ppo.learn_last_turns must be an int >= 0"):
        load_config(path)


# --------------------------------------------------------------------------------------------------
# ppo.kl_to_init_last_turns: the KL penalty weighed apart on the last turns (yacht_lab.focus.kl_weights)
# --------------------------------------------------------------------------------------------------
def test_kl_weights_weigh_the_last_turns_apart():
    obs = torch.from_numpy(table_observations(2))
    weights = kl_weights(3, 0.1, 0.01, "standard")(obs)
    late = open_categories(obs, "standard") <= 3
    assert 0 < late.sum() < len(obs)
    assert weights.dtype == obs.dtype and weights.shape == late.shape
    assert torch.equal(weights[late], torch.full((int(late.sum()),), 0.01))
    assert torch.equal(weights[~late], torch.full((int((~late).sum()),), 0.1))


def _penalty_gradients(model, obs, actions, masks) -> list[torch.Tensor]:
    """The actor's gradient from the anchor's penalty alone (the values enter the loss times 0)."""
    model.policy.zero_grad()
    values, _, _ = model.policy.evaluate_actions(obs, actions, action_masks=masks)
    (values * 0).sum().backward()
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in actor_parameters(model.policy)]


def test_a_per_row_weight_penalises_only_the_rows_it_weighs():
    config, model = started(opponents=["greedy"], reward="win", reward_scale=1.0)
    reference = make_model(config, model.get_env(), None)
    warm_start(reference, config)
    with torch.no_grad():  # the policy moves off its start, so the penalty has a gradient wherever it is weighed
        for parameter in actor_parameters(model.policy):
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(0)))
    anchor_to_init(model, reference.policy, kl_weights(3, 0.0, 1.0, "standard"))
    model.set_logger(Logger(folder=None, output_formats=[]))
    obs = torch.from_numpy(table_observations(2))
    masks = np.ones((len(obs), model.action_space.n), dtype=bool)
    actions = torch.zeros(len(obs), dtype=torch.long)
    late = open_categories(obs, "standard") <= 3
    early = _penalty_gradients(model, obs[~late], actions[~late], masks[~late.numpy()])
    assert all(g.abs().max() == 0 for g in early)  # weight 0 on the early decisions: no pull
    pulled = _penalty_gradients(model, obs[late], actions[late], masks[late.numpy()])
    assert any(g.abs().max() > 0 for g in pulled)
    with torch.no_grad():
        log_q = reference.policy.get_distribution(obs, action_masks=masks).distribution.logits
    last_layer = model.policy.action_net.weight  # the penalty is the weighted mean of the rows' KL: same gradient
    log_p = model.policy.get_distribution(obs, action_masks=masks).distribution.logits
    expected = torch.autograd.grad((late.float() * masked_kl(log_p, log_q)).mean(), last_layer)[0]
    _penalty_gradients(model, obs, actions, masks)
    assert expected.abs().max() > 0
    torch.testing.assert_close(last_layer.grad, expected)


def test_train_weighs_the_penalty_per_decision_when_asked(tmp_path, monkeypatch):
    weights = []

    def spy(model, reference, coef):
        weights.append(coef)
        anchor_to_init(model, reference, coef)

    monkeypatch.setattr("yacht_lab.training.anchor_to_init", spy)
    ppo = {"n_steps": 64, "batch_size": 256, "n_epochs": 1, "learn_last_turns": 4, "kl_to_init": 0.1}
    path = tmp_path / "c.yaml"
    for late, run in ((0.01, "split"), (None, "plain")):
        config = {
            "n_envs": 4,
            "total_timesteps": 256,
            "eval": {"games": 10},
            "init": str(STANDARD),
            "opponents": ["greedy"],
        }
        config["ppo"] = {**ppo, "kl_to_init_last_turns": late}
        path.write_text(yaml.safe_dump(config))
        train(load_config(path), tmp_path / run, command="test", progress=False)
    split, plain = weights
    assert plain == 0.1  # no split: one number, the penalty as before
    obs = torch.from_numpy(table_observations(2))
    late = open_categories(obs, "standard") <= 4
    expected = torch.where(late, torch.tensor(0.01), torch.tensor(0.1))
    assert torch.equal(split(obs), expected)


@pytest.mark.parametrize(
    ("ppo", "init", "message"),
    [
        ({"kl_to_init": 0.1, "kl_to_init_last_turns": 0.01}, True, r"^ppo.kl_to_init_last_turns needs ppo.learn_last"),
        (
            {"learn_last_turns": 4, "kl_to_init_last_turns": -0.01},
            True,
            r"^ppo.kl_to_init_last_turns must be a number >= 0",
        ),
        ({"learn_last_turns": 4, "kl_to_init_last_turns": "0.1"}, True, r"^ppo.kl_to_init_last_turns must be a number"),
        ({"learn_last_turns": 4, "kl_to_init_last_turns": 0.01}, False, r"^ppo.kl_to_init needs init"),
    ],
)
def test_kl_to_init_last_turns_is_checked(tmp_path, ppo, init, message):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"ppo": ppo, **({"init": "standard"} if init else {})}))
    with pytest.raises(ValueError, match=message):
        load_config(path)


# --------------------------------------------------------------------------------------------------
# ppo.explore_temperature: the rollouts try the learned decisions' other moves (yacht_lab.focus.explore)
# --------------------------------------------------------------------------------------------------
def _table_rows(players: int = 2) -> tuple[torch.Tensor, np.ndarray]:
    """Observations and legal masks of real table games, played by the start model against optimal."""
    _, model = started(opponents=["optimal"] * (players - 1), reward="win", reward_scale=1.0)
    env = YachtSB3VecEnv(32, opponents=["optimal"] * (players - 1))
    env.seed(5)
    seen, masks, obs = [], [], env.reset()
    for _ in range(80):
        mask = env.action_masks()
        seen.append(obs)
        masks.append(mask)
        obs, *_ = env.step(model.predict(obs, action_masks=mask, deterministic=True)[0])
    return torch.from_numpy(np.concatenate(seen)), np.concatenate(masks)


@pytest.mark.slow  # about 10 s: the README's test command stays under ten minutes
def test_explore_samples_the_last_turns_at_the_temperature_and_keeps_the_policys_log_probability():
    _, model = started(opponents=["optimal"], reward="win", reward_scale=1.0)
    obs, masks = _table_rows()
    late = open_categories(obs, "standard") <= 4
    assert 0 < late.sum() < len(obs)
    with torch.no_grad():
        log_p = model.policy.get_distribution(obs, action_masks=masks).distribution.logits
        plain_values = model.policy.predict_values(obs)
        plain_mode = model.policy(obs, deterministic=True, action_masks=masks)[0]
    explore(model, 4, 2.0, "standard")
    model.set_logger(Logger(folder=None, output_formats=[]))
    torch.manual_seed(0)
    draws = 400
    counts = torch.zeros_like(log_p)
    with torch.no_grad():
        for _ in range(draws):
            actions, values, log_prob = model.policy(obs, action_masks=masks)
            assert masks[np.arange(len(obs)), actions.numpy()].all()  # only legal moves, tempered or not
            assert torch.equal(values, plain_values)
            # the buffer's log-probability is the policy's own for the move played, not the tempered one's
            assert torch.equal(log_prob, log_p.gather(1, actions[:, None])[:, 0])
            counts[torch.arange(len(obs)), actions] += 1
        mode = model.policy(obs, deterministic=True, action_masks=masks)[0]
    assert torch.equal(mode, plain_mode)  # deterministic play is untouched
    frequency = counts / draws
    own, tempered = log_p.exp(), torch.softmax(log_p / 2.0, -1)
    assert torch.allclose(frequency[late], tempered[late], atol=0.1)  # 400 draws: 4 standard deviations at most
    assert torch.allclose(frequency[~late], own[~late], atol=0.1)

    def off_mode(p: torch.Tensor, rows: torch.Tensor) -> float:  # the mean share played off the policy's best move
        return 1 - p[rows].gather(1, own[rows].argmax(-1, keepdim=True)).mean().item()

    assert off_mode(frequency, late) == pytest.approx(off_mode(tempered, late), abs=0.01)
    assert off_mode(frequency, ~late) == pytest.approx(off_mode(own, ~late), abs=0.01)
    assert off_mode(tempered, late) > 2 * off_mode(own, late)  # the temperature tries the other moves


def test_explore_at_zero_turns_tempers_every_decision():
    _, model = started(opponents=["optimal"], reward="win", reward_scale=1.0)
    obs, masks = _table_rows()
    with torch.no_grad():
        log_p = model.policy.get_distribution(obs, action_masks=masks).distribution.logits
    explore(model, 0, 1e-3, "standard")  # a temperature near 0: the most likely move, every row
    model.set_logger(Logger(folder=None, output_formats=[]))
    torch.manual_seed(1)
    with torch.no_grad():
        actions, _, _ = model.policy(obs, action_masks=masks)
    assert torch.equal(actions, log_p.argmax(-1))


def test_train_explores_when_asked(tmp_path, monkeypatch):
    calls = []

    def spy(model, turns, temperature, rules):
        calls.append((turns, temperature, rules))
        explore(model, turns, temperature, rules)

    monkeypatch.setattr("yacht_lab.training.explore", spy)
    path = tmp_path / "c.yaml"
    for temperature, run in ((2.5, "tempered"), (1.0, "plain")):
        ppo = {"n_steps": 64, "batch_size": 256, "n_epochs": 1, "learn_last_turns": 4}
        ppo["explore_temperature"] = temperature
        path.write_text(yaml.safe_dump({"n_envs": 4, "total_timesteps": 256, "eval": {"games": 10}, "ppo": ppo}))
        run_dir = train(load_config(path), tmp_path / run, command="test", progress=False)
        assert (run_dir / "model.zip").is_file()
    assert calls == [(4, 2.5, "standard")]  # at 1.0 the policy's own samples: nothing wrapped


@pytest.mark.parametrize("value", [0, -1.0, "2", float("inf")])
def test_explore_temperature_is_a_positive_number(tmp_path, value):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"ppo": {"explore_temperature": value}}))
    with pytest.raises(ValueError, match=r"^ppo.explore_temperature must be a number > 0"):
        load_config(path)


def test_explore_at_zero_turns_reaches_a_thirteen_box_sheet():
    config = TrainConfig(rules="yahtzee", n_envs=4)
    model = make_model(config, make_vec_env(config), None)  # untrained: near-uniform, so a plain sample is no argmax
    env = YachtSB3VecEnv(64, rules="yahtzee")
    env.seed(2)
    obs = env.reset()  # every game's first decision: all 13 boxes open
    assert open_categories(torch.from_numpy(obs), "yahtzee").eq(13).all()
    masks = env.action_masks()
    with torch.no_grad():
        log_p = model.policy.get_distribution(torch.from_numpy(obs), action_masks=masks).distribution.logits
    explore(model, 0, 1e-6, "yahtzee")  # the untrained logits lie 1e-4 apart: a temperature far below that
    model.set_logger(Logger(folder=None, output_formats=[]))
    torch.manual_seed(3)
    with torch.no_grad():
        actions, _, _ = model.policy(torch.from_numpy(obs), action_masks=masks)
    assert torch.equal(actions, log_p.argmax(-1))
