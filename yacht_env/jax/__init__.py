"""Yacht and its family on the accelerator: the game core in JAX and its pgx and gymnax faces (the ``jax`` extra).

:class:`YachtGame` is the game as pure functions over a small pytree (:class:`GameState`): ``init``, ``step``,
``observe``, ``legal_action_mask``, ``is_terminal``, the totals and the win rewards, and the model for planners (each
step split into ``afterstate``, ``outcome_probabilities`` and ``step_outcome``), for every preset and tables of 1
to 10 players, built from the numpy rules' tables (:mod:`yacht_env.jax.tables`: nothing is scored twice). Chance is
drawn inside ``step`` from a key; ``step_with_dice`` and ``step_from_stream`` take the dice, so a numpy game replays
exactly (``tests/test_jax.py`` checks every transition, observation, mask, reward and total against
:class:`yacht_env.game.TableState`).

The faces: :class:`YachtPgx` (a ``pgx.Env``) and :class:`YachtGymnax` (a gymnax ``Environment``, one player, for
PureJaxRL-style code; :class:`FiveValueStep` gives it the five-value step of gymnax before 1.0, which PureJaxRL and
rejax call); :func:`check_jax_env` is their conformance check (pgx's ``api_test`` accepts only pgx's own
games). :func:`mctx_model` gives the model for planners as mctx's root and recurrent functions, so
``mctx.stochastic_muzero_policy`` searches the true game with a value function of your own
(:mod:`yacht_env.jax.planning`). They are imported on first use, so ``import yacht_env.jax`` needs only jax.

``import yacht_env`` never imports this package (nor jax).
"""

from __future__ import annotations

from typing import Any

from yacht_env.jax.core import MAX_PLAYERS, Afterstate, GameState, YachtGame, draw_dice, win_rewards

__all__ = [
    "MAX_PLAYERS",
    "Afterstate",
    "FiveValueStep",
    "GameState",
    "MctxModel",
    "YachtGame",
    "YachtGymnax",
    "YachtPgx",
    "check_jax_env",
    "draw_dice",
    "mctx_model",
    "win_rewards",
]

_LAZY = {
    "YachtPgx": "yacht_env.jax.pgx_env",
    "YachtGymnax": "yacht_env.jax.gymnax_env",
    "FiveValueStep": "yacht_env.jax.gymnax_env",
    "check_jax_env": "yacht_env.jax.conformance",
    "mctx_model": "yacht_env.jax.planning",
    "MctxModel": "yacht_env.jax.planning",
}


def __getattr__(name: str) -> Any:
    """The faces and the mctx model, imported on first use (each needs its library: pgx, gymnax, mctx)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'yacht_env.jax' has no attribute {name!r}")
