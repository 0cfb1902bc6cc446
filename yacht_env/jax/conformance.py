"""``check_jax_env``: the JAX faces' conformance check, run on every preset (the ``check_preset`` idea, in JAX).

pgx's own ``api_test`` accepts only the games pgx ships, so the JAX faces bring their own, in its spirit: seeded
random legal play-throughs, batched with ``vmap`` and compiled with ``jit``, that validate every field's dtype and
shape, the masks, the turn order, the rewards against the totals, pgx's conventions (an illegal action, a finished
game) and gymnax's (the auto-reset, the ignored illegal action), and that an unbatched game plays as its
row of the batch (compiled alone). Exact equality with the numpy core is ``tests/test_jax.py``'s; this checks the
faces' contract.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from yacht_env import rules as R
from yacht_env.jax.core import win_rewards


class JaxCheckError(ValueError):
    """A JAX face broke its contract (the message names the preset, the table size, the face and what broke)."""


def check_jax_env(
    rules: str | R.Rules = "standard", num_players: int = 1, games: int = 32, seed: int = 0, faces=("pgx", "gymnax")
) -> None:
    """Plays ``games`` seeded random legal games through each JAX face under ``jit`` and ``vmap`` and checks them.

    The gymnax face is checked for one player only (it is the single-agent face).

    Raises:
        JaxCheckError: a face broke its contract.
    """
    rules = R.get_rules(rules)
    if "pgx" in faces:
        _check_pgx(rules, num_players, games, seed)
    if "gymnax" in faces and num_players == 1:
        _check_gymnax(rules, games, seed)


def _fail_if(bad: object, rules: R.Rules, players: int, face: str, what: str) -> None:
    if bool(np.any(bad)):
        raise JaxCheckError(f"{rules.name}, {players} player(s), {face}: {what}")


def _random_legal(key: jax.Array, mask: jax.Array) -> jax.Array:
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def _play_pgx(env, keys: jax.Array, steps: int):
    """Random legal games of ``env`` from ``keys`` (one per game), ``steps`` steps each: the states before each step."""

    def one(key):
        init_key, play_key = jax.random.split(key)

        def body(state, key):
            act_key, step_key = jax.random.split(key)
            action = _random_legal(act_key, state.legal_action_mask)
            return env.step(state, action, step_key), (state, action)

        return jax.lax.scan(body, env.init(init_key), jax.random.split(play_key, steps))

    return jax.jit(jax.vmap(one))(keys)


def _check_pgx(rules: R.Rules, players: int, games: int, seed: int) -> None:
    from yacht_env.jax.pgx_env import YachtPgx

    def fail_if(bad, what):
        _fail_if(bad, rules, players, "pgx", what)

    env = YachtPgx(rules, players)
    game = env.game
    picks = players * rules.num_categories
    steps = picks * R.ROLLS_PER_TURN + 2  # every game ends within; the last steps are on a finished game
    keys = jax.random.split(jax.random.key(seed), games)
    last, (states, actions) = _play_pgx(env, keys, steps)
    s = jax.tree.map(np.asarray, states)
    fail_if(s.observation.dtype != np.float32 or s.observation.shape[2:] != (game.observation_size,), "observation")
    fail_if(s.rewards.dtype != np.float32 or s.rewards.shape[2:] != (players,), "rewards' dtype or shape")
    fail_if(s.legal_action_mask.dtype != bool or s.legal_action_mask.shape[2:] != (rules.num_actions,), "mask")
    fail_if(s.terminated.dtype != bool or s.truncated.dtype != bool, "terminated / truncated not bool")
    fail_if(s.current_player.dtype != np.int32, "current_player not int32")
    fail_if(~np.isfinite(s.observation) | (s.observation < 0) | (s.observation > 1), "an observation outside [0, 1]")
    fail_if(~s.legal_action_mask.any(axis=-1), "an empty mask")
    fail_if(s.terminated[..., None] & ~s.legal_action_mask, "a terminated state's mask is not all True")
    fail_if(s.truncated, "a truncated game (the game never truncates)")
    fail_if(~np.asarray(last.terminated), "a game that did not end within 3 rolls per pick")
    playing = ~s.terminated
    picked = playing & (np.asarray(actions) >= R.PICK_OFFSET)
    fail_if(picked.sum(axis=1) != picks, f"a game that did not end after exactly {picks} picks")
    seat = s.current_player
    fail_if(seat[:, 1:] != np.where(picked[:, :-1], (seat[:, :-1] + 1) % players, seat[:, :-1]), "the turn order")
    fail_if(s.rewards[:, 0].any() | (s.rewards[:, 1:].any(axis=-1) & ~picked[:, :-1]), "a reward out of a pick")
    totals = np.asarray(last._game.total)
    returns = s.rewards.sum(axis=1) + np.asarray(last.rewards)
    fail_if(returns != totals, "the rewards do not sum to the totals")
    sheets = np.asarray(last._game.sheet)
    fail_if(sheets.min(axis=-1) < 0, "an open box at the end")
    fail_if((sheets.sum(axis=-1) != totals) if not rules.has_bonuses else (sheets.sum(axis=-1) > totals), "sheets")
    step = jax.jit(env.step)  # one game, unbatched: compiled once for both checks
    _check_pgx_conventions(
        step, env, jax.tree.map(lambda x: x[0, 0], states), jax.tree.map(lambda x: x[0], last), fail_if
    )
    _check_unbatched(step, env, keys[0], jax.tree.map(lambda x: x[0], states), np.asarray(actions[0]), fail_if)
    if players == 1:
        return  # a lone player's win reward is always 0: the score run above covers its game
    win = YachtPgx(rules, players, reward="win")
    win_last, (win_states, _) = _play_pgx(win, keys, steps)
    expected = np.asarray(win_rewards(win_last._game.total))
    ended = np.asarray(win_states.terminated)
    fail_if(np.asarray(win_states.rewards)[:, 1:][~ended[:, 1:]].any(), "a win reward before the end")
    fail_if(np.asarray(win_states.rewards).sum(axis=1) + np.asarray(win_last.rewards) != expected, "the win rewards")


def _check_pgx_conventions(step, env, first, finished, fail_if) -> None:
    """Pgx's conventions: an illegal action ends the game with -1 to its actor; a finished game does not move."""
    illegal = int(np.flatnonzero(~np.asarray(first.legal_action_mask))[0])
    after = step(first, illegal, jax.random.key(1))
    expected = np.full(env.num_players, env.num_players - 1.0, dtype=np.float32)
    expected[int(first.current_player)] = -1.0
    fail_if(~np.asarray(after.terminated), "an illegal action did not end the game")
    fail_if(np.asarray(after.rewards) != expected, "an illegal action's rewards are not pgx's")
    fail_if(~np.asarray(after.legal_action_mask).all(), "the mask after an illegal action is not all True")
    same = jax.tree.map(lambda a, b: bool(np.array_equal(a, b)), after._game, first._game)
    fail_if(not all(jax.tree.leaves(same)), "an illegal action changed the game")
    again = step(finished, 0, jax.random.key(2))
    fail_if(np.asarray(again.rewards).any(), "a step on a finished game rewarded")
    same = jax.tree.map(lambda a, b: bool(np.array_equal(a, b)), again._game, finished._game)
    fail_if(not all(jax.tree.leaves(same)), "a step on a finished game changed it")


def _check_unbatched(step, env, key, states, actions, fail_if) -> None:
    """One game, unbatched (``step`` is its compiled step), plays as the first row of the batch (its first 12 steps)."""
    init_key, play_key = jax.random.split(key)
    state = jax.jit(env.init)(init_key)
    for t, step_key in enumerate(jax.random.split(play_key, len(actions))[:12]):
        row = jax.tree.map(lambda x, t=t: x[t], states)
        same = jax.tree.map(lambda a, b: bool(np.array_equal(a, b)), state, row)
        fail_if(not all(jax.tree.leaves(same)), f"step {t}: an unbatched game differs from the batch's")
        state = step(state, actions[t], jax.random.split(step_key)[1])


def _check_gymnax(rules: R.Rules, games: int, seed: int) -> None:
    from yacht_env.jax.gymnax_env import YachtGymnax

    def fail_if(bad, what):
        _fail_if(bad, rules, 1, "gymnax", what)

    env = YachtGymnax(rules)
    params = env.default_params
    steps = rules.num_categories * R.ROLLS_PER_TURN * 2  # at least two games each, with the auto-reset

    def one(key):
        reset_key, play_key = jax.random.split(key)
        obs, state = env.reset(reset_key, params)

        def body(carry, key):
            obs, state, mask = carry
            act_key, step_key = jax.random.split(key)
            action = _random_legal(act_key, mask)
            obs, state, reward, terminated, truncated, info = env.step(step_key, state, action, params)
            return (obs, state, info["action_mask"]), (obs, reward, terminated, truncated, info)

        return jax.lax.scan(body, (obs, state, env.action_mask(state)), jax.random.split(play_key, steps))

    _, (obs, reward, terminated, truncated, info) = jax.jit(jax.vmap(one))(
        jax.random.split(jax.random.key(seed), games)
    )
    obs, reward, terminated = np.asarray(obs), np.asarray(reward), np.asarray(terminated)
    fail_if(obs.dtype != np.float32 or obs.shape[2:] != env.observation_space(params).shape, "observation")
    fail_if((obs < 0) | (obs > 1), "an observation outside [0, 1]")
    fail_if(np.asarray(truncated) | np.asarray(info["illegal_action"]), "a legal game truncated or called illegal")
    fail_if(terminated.sum(axis=1) < 1, "no game ended")
    # Each finished game's rewards sum to its total (the rewards since the previous end).
    returns = np.cumsum(reward, axis=1)
    ends = [np.flatnonzero(row) for row in terminated]
    totals = np.asarray(info["total"])
    for g, at in enumerate(ends):
        episode = np.diff(np.concatenate([[0.0], returns[g, at]]))
        fail_if(episode != totals[g, at], "a game's rewards do not sum to its total")
    fail_if(~np.asarray(info["action_mask"]).any(axis=-1), "an empty mask")
    # An illegal action is ignored: the observation stays, the reward is the penalty, the flag is set.
    first_obs, state = env.reset(jax.random.key(seed), params)
    illegal = int(np.flatnonzero(~np.asarray(env.action_mask(state)))[0])
    after, _, reward, terminated, truncated, info = env.step(jax.random.key(1), state, illegal, params)
    fail_if(not np.array_equal(after, first_obs), "an illegal action changed the observation")
    fail_if(float(reward) != params.illegal_action_penalty, "an illegal action's reward is not the penalty")
    fail_if(not bool(info["illegal_action"]) or bool(terminated), "an illegal action's flags")
