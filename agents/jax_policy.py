"""``JaxAgent`` (spec ``jax:PATH``): a policy trained by the JAX trainer (:mod:`yacht_lab.training.jax.ppo`), and its
network.

The network is :mod:`yacht_agents.policy`'s odds policy written in plain JAX: separate policy and value MLPs on the
flat observation plus each open category's chase value (``chase_inputs``), and keep logits that add a learned
weighting of the after-keep chase values (``keep_head``), with the bonus odds on rules with bonuses
(``bonus_odds``). The odds are computed from the rules alone (:func:`yacht_env.encoding.chase_values` and its
siblings, exported as device arrays); nothing comes from the solver. They are read off the observation (face
counts, rolls left, open bits), so the agent plays ``Yacht-v0``'s observation as every other agent does.
This module imports jax at its top: without the extra, ``make_agent("jax:...")`` is one ``ValueError`` saying so.

Parameters are saved as data: ``NAME.npz`` (the arrays, read with ``allow_pickle=False``) and ``NAME.json`` beside
it (the rules, the network's shape and options, the format); nothing a user loads is code. ``jax:PATH`` takes the
``.npz`` file or a run folder (its ``model.npz``). Needs the ``jax`` extra.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yacht_agents.archive import (
    READ_ERRORS,
    SHIPPED,
    Refused,
    open_zip,
    read_arrays,
    read_spec_json,
    resolve_npz,
)
from yacht_agents.base import Agent, outdated_table_view
from yacht_agents.ppo import MAX_ACTIONS, MAX_LAYER_WIDTH, MAX_LAYERS, MAX_MODEL_BYTES, MAX_OBSERVATION_SIZE
from yacht_env import rules as R
from yacht_env.encoding import (
    KEEP_FEATURE_SCALE,
    chase_values,
    flat_layout,
    keep_chase_values,
    keep_par_chase_values,
    par_chase_values,
)

FORMAT = "yacht-rl jax policy 1"


class NetworkSpec(NamedTuple):
    """What a saved network is: its rules, its shape and options (``NAME.json``)."""

    rules: str
    obs_size: int
    num_actions: int
    net_arch: tuple[int, ...]
    chase_inputs: bool = True
    keep_head: bool = True
    bonus_odds: bool = True
    players: int = 1
    """1: the network sees one game as ``Yacht-v0`` shows it; ``P > 1``: the view of a ``P``-seat table
    (:class:`yacht_env.encoding.MultiplayerEncoder`, its own game's flat observation first). Files without it are
    solo."""


class Odds(NamedTuple):
    """The odds tables as device arrays, and where the observation holds what they are read by."""

    chase: Any  # (3, 252, C * channels)
    keep: Any  # (3, 252, 32, C * channels)
    code_to_roll: Any  # face counts in base 6 -> roll
    face_weights: Any  # (6,)
    armed_bit: Any  # (C * channels,)


def odds_tables(rules: R.Rules, bonus_odds: bool) -> tuple[Odds, dict[str, Any]]:
    """The odds of ``rules`` (from the rules alone) as JAX arrays, and the observation's slices they are read from."""
    layout = flat_layout(rules)
    scale = float(max(R.score_table(rules).max(), 1))
    code_to_roll = np.zeros(R.NUM_FACES**R.NUM_FACES, dtype=np.int32)
    weights = R.NUM_FACES ** np.arange(R.NUM_FACES)
    code_to_roll[R.ROLL_COUNTS.astype(np.int64) @ weights] = np.arange(R.NUM_ROLLS)
    chase, keep = [chase_values(rules) / scale], [keep_chase_values(rules) / scale]
    if bonus_odds and rules.upper_bonus:
        chase.append(par_chase_values(rules))
        keep.append(keep_par_chase_values(rules))
    channels = len(chase)
    five = rules.five_of_a_kind_category if bonus_odds and rules.yahtzee_bonus else None
    armed_bit = np.zeros(rules.num_categories * channels, dtype=np.float32)
    if five is not None:
        armed_bit[five] = 1.0
    odds = Odds(
        jnp.asarray(np.concatenate(chase, axis=-1), dtype=jnp.float32),
        jnp.asarray(np.concatenate(keep, axis=-1), dtype=jnp.float32),
        jnp.asarray(code_to_roll),
        jnp.asarray(weights.astype(np.float32)),
        jnp.asarray(armed_bit),
    )
    where = {
        "counts": layout["counts"],
        "rolls_left": layout["rolls_left"],
        "open": layout["open"],
        "armed": layout["armed"].start if five is not None else None,
        "channels": channels,
    }
    return odds, where


def odds_features(odds: Odds, where: dict[str, Any], obs):
    """``(chase (B, C * channels), after-keep chase (B, 32, C * channels))`` of flat observations ``(B, size)``."""
    counts = jnp.round(obs[:, where["counts"]] * R.NUM_DICE)
    roll = odds.code_to_roll[(counts @ odds.face_weights).astype(jnp.int32)]
    rolls_left = jnp.argmax(obs[:, where["rolls_left"]], axis=1)
    gate = jnp.tile(obs[:, where["open"]], (1, where["channels"]))
    if where["armed"] is not None:
        gate = jnp.maximum(gate, obs[:, where["armed"], None] * odds.armed_bit)
    return odds.chase[rolls_left, roll] * gate, odds.keep[rolls_left, roll] * gate[:, None, :]


def init_params(key, spec: NetworkSpec, odds_size: int) -> dict[str, Any]:
    """New parameters, SB3's initialisation: orthogonal, gain sqrt(2) in the MLPs, 0.01 for the policy's heads, 1 for
    the value head; zero biases.

    Called outside ``jit`` (as the JAX trainer calls it), each layer's QR factorisation is its own small program, run
    to its end before the next: XLA's CPU runtime runs a QR's work on the same thread pool that runs independent QRs
    side by side, and on a machine of two cores two of them (or one vmapped over four seeds) can leave every worker
    waiting for another's work, a call that never returns.
    """
    orthogonal = jax.nn.initializers.orthogonal

    def dense(key, n_in, n_out, gain):
        w = orthogonal(gain)(key, (n_in, n_out), jnp.float32)
        if not isinstance(w, jax.core.Tracer):  # run eagerly: one QR factorisation at a time (see above)
            w.block_until_ready()
        return {"w": w, "b": jnp.zeros(n_out, jnp.float32)}

    n_in = spec.obs_size + (odds_size if spec.chase_inputs else 0)
    keys = iter(jax.random.split(key, 2 * len(spec.net_arch) + 3))
    params: dict[str, Any] = {}
    for net in ("pi", "vf"):
        width, layers = n_in, []
        for size in spec.net_arch:
            layers.append(dense(next(keys), width, size, np.sqrt(2)))
            width = size
        params[net] = layers
    last = spec.net_arch[-1] if spec.net_arch else n_in
    params["action"] = dense(next(keys), last, spec.num_actions, 0.01)
    params["value"] = dense(next(keys), last, 1, 1.0)
    if spec.keep_head:
        params["keep"] = dense(next(keys), last, odds_size, 0.01)
    return params


def table_params(params: dict[str, Any], spec: NetworkSpec, players: int, obs_size: int):
    """A solo network's parameters widened to a ``players``-seat table view of ``obs_size`` values: ``(params, spec)``
    of a table network that plays exactly as the solo one (its first layers read the table view's extra values with
    zero weights; the odds are read from the mover's own game, the view's first part), with a zero value head (its
    scale was the solo reward's).

    Raises:
        ValueError: ``spec`` is not a solo network, or ``players`` is not 2..10.
    """
    if spec.players != 1 or not 2 <= players <= 10 or not spec.net_arch:
        raise ValueError(
            f"table_params widens a solo network with hidden layers to 2..10 players, got {spec.players} -> {players}"
        )
    extra = obs_size - spec.obs_size

    def widen(layer):
        w = jnp.asarray(layer["w"])
        zeros = jnp.zeros((extra, w.shape[1]), w.dtype)
        return {"w": jnp.concatenate([w[: spec.obs_size], zeros, w[spec.obs_size :]]), "b": jnp.asarray(layer["b"])}

    params = jax.tree.map(jnp.asarray, params)
    params = {**params, **{net: [widen(params[net][0]), *params[net][1:]] for net in ("pi", "vf")}}
    params["value"] = jax.tree.map(jnp.zeros_like, params["value"])
    return params, spec._replace(obs_size=obs_size, players=players)


def apply(params: dict[str, Any], spec: NetworkSpec, odds: Odds, where: dict[str, Any], obs, mask):
    """``(masked logits (B, A), values (B,))`` of flat observations and bool masks; illegal logits are -1e9.

    A table network's observations are its table's views: the odds are read from their first part, the mover's own
    game as ``Yacht-v0`` shows it (:func:`yacht_env.encoding.flat_layout`'s places).
    """
    chase, keep = odds_features(odds, where, obs)
    x = jnp.concatenate([obs, chase], axis=1) if spec.chase_inputs else obs

    def mlp(layers, h):
        for layer in layers:
            h = jax.nn.relu(h @ layer["w"] + layer["b"])
        return h

    hidden = mlp(params["pi"], x)
    logits = hidden @ params["action"]["w"] + params["action"]["b"]
    if spec.keep_head:
        weights = hidden @ params["keep"]["w"] + params["keep"]["b"]
        bonus = KEEP_FEATURE_SCALE * jnp.einsum("bmk,bk->bm", keep, weights)
        logits = jnp.concatenate([logits[:, : R.NUM_KEEPS] + bonus, logits[:, R.NUM_KEEPS :]], axis=1)
    values = (mlp(params["vf"], x) @ params["value"]["w"] + params["value"]["b"])[:, 0]
    return jnp.where(mask, logits, -1e9), values


# --------------------------------------------------------------------------------------------------
# Parameters as data
# --------------------------------------------------------------------------------------------------
def _flat(params: dict[str, Any]) -> dict[str, np.ndarray]:
    out = {}
    for name, value in params.items():
        layers = value if isinstance(value, list) else [value]
        for i, layer in enumerate(layers):
            for part, array in layer.items():
                out[f"{name}.{i}.{part}" if isinstance(value, list) else f"{name}.{part}"] = np.asarray(array)
    return out


def save_params(path: str | Path, params: dict[str, Any], spec: NetworkSpec) -> Path:
    """Writes ``path`` (``.npz``, the arrays) and the ``.json`` beside it (the spec); returns the ``.npz`` path."""
    path = Path(path).with_suffix(".npz")
    with open(path, "wb") as file:
        np.savez(file, **_flat(params))
    meta = {"format": FORMAT, **spec._asdict(), "net_arch": list(spec.net_arch)}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return path


#: The most a policy's ``.npz`` may expand to (its members' declared sizes together) and the most members it may
#: have, checked before anything is read (:func:`yacht_agents.archive.open_zip`): a model zip's bound
#: (``MAX_MODEL_BYTES``); the recipe's 256x256 network takes 0.8 MB in 14 arrays.
MAX_PARAMS_BYTES = MAX_MODEL_BYTES
MAX_PARAMS_MEMBERS = 4 * MAX_LAYERS + 8
#: The most seats a table network may see (``NetworkSpec.players``).
MAX_PLAYERS = 10


def shipped_params() -> dict[str, Path]:
    """The JAX policies that come with the package, by short name: ``{"standard": .../jax_standard.npz}`` (the
    package data ``yacht_agents/models/jax_<name>.npz`` with its ``.json``; in a source checkout the repository's
    ``models/``). ``jax_standard`` is ``ppo:standard``'s network as JAX arrays, so that a JAX run starts from it
    without torch (``configs/jax_selfplay.yaml``).
    """
    for folder in SHIPPED:
        found = {path.name[len("jax_") : -len(".npz")]: path for path in sorted(folder.glob("jax_*.npz"))}
        if found:
            return found
    return {}


def resolve_params(path: str | Path) -> Path:
    """The ``.npz`` file a ``jax:PATH`` spec names: the file itself, a run folder's ``model.npz``, or a shipped model's
    name (``selfplay_standard`` is ``models/jax_selfplay_standard.npz``: :func:`shipped_params`).

    Raises:
        ValueError: no such file or folder, a folder without ``model.npz``, or a path that cannot be looked up (too
            long, say).
    """
    return resolve_npz(path, "jax", "JAX policy")


def load_params(path: str | Path) -> tuple[dict[str, Any], NetworkSpec]:
    """The parameters and spec saved at ``path`` (:func:`resolve_params`), checked against each other before the
    network is built: the spec's every field (types and bounds), the arrays' sizes before they are read
    (:data:`MAX_PARAMS_BYTES`), their names and shapes (those of :func:`init_params` for the spec), finite float values.

    Raises:
        ValueError: ``cannot read the JAX policy '<path>': <why>``: a missing, damaged or oversized file, another
            format, or arrays that do not fit the spec.
    """
    path = resolve_params(path)
    try:
        spec = _read_spec(path.with_suffix(".json"))
        with open_zip(path, what="a JAX policy", max_bytes=MAX_PARAMS_BYTES, max_members=MAX_PARAMS_MEMBERS) as archive:
            arrays = read_arrays(archive, kinds="f")
        params = _fitted(arrays, spec)
    except Refused as error:
        raise ValueError(f"cannot read the JAX policy {str(path)!r}: {error}") from None
    except READ_ERRORS as error:
        detail = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"cannot read the JAX policy {str(path)!r}: not a readable .npz ({detail})") from None
    return params, spec


def _read_spec(path: Path) -> NetworkSpec:
    """The ``.json`` beside a policy's arrays as a :class:`NetworkSpec`, every field checked (:class:`Refused`)."""
    meta = read_spec_json(path, FORMAT)
    fields = {key: value for key, value in meta.items() if key != "format"}
    unknown = sorted(set(fields) - set(NetworkSpec._fields))
    missing = [key for key in NetworkSpec._fields if key not in fields and key not in NetworkSpec._field_defaults]
    if unknown or missing:
        raise Refused(f"its {path.name} has unknown fields {unknown} or lacks {missing}")
    for key, value in fields.items():
        check, expected = _SPEC_FIELDS.get(key, (lambda v: isinstance(v, bool), "true or false"))
        if not check(value):
            raise Refused(f"its {path.name}'s {key} {json.dumps(value)[:80]} is not {expected}")
    return NetworkSpec(**{**fields, "net_arch": tuple(fields["net_arch"])})


def _int_in(value: Any, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= high


#: What each field of a spec's JSON must be: ``(check, what it is)``; the fields not named are true or false. The
#: sizes are bounded as a PPO model file's are.
_SPEC_FIELDS: dict[str, tuple[Any, str]] = {
    "rules": (lambda v: isinstance(v, str) and v in R.PRESETS, f"a preset ({', '.join(R.PRESETS)})"),
    "obs_size": (lambda v: _int_in(v, MAX_OBSERVATION_SIZE), f"an int in 1..{MAX_OBSERVATION_SIZE}"),
    "num_actions": (lambda v: _int_in(v, MAX_ACTIONS), f"an int in 1..{MAX_ACTIONS}"),
    "net_arch": (
        lambda v: isinstance(v, list) and len(v) <= MAX_LAYERS and all(_int_in(w, MAX_LAYER_WIDTH) for w in v),
        f"a list of at most {MAX_LAYERS} layer widths of 1..{MAX_LAYER_WIDTH}",
    ),
    "players": (lambda v: _int_in(v, MAX_PLAYERS), f"an int in 1..{MAX_PLAYERS}"),
}


def _fitted(arrays: dict[str, np.ndarray], spec: NetworkSpec) -> dict[str, Any]:
    """``arrays`` (named as :func:`save_params` names them) as the parameters of ``spec``'s network: exactly the
    names and shapes :func:`init_params` gives it, finite float32 values (:class:`Refused` names the first misfit).
    """
    odds, _ = odds_tables(R.PRESETS[spec.rules], spec.bonus_odds)
    shapes = jax.eval_shape(lambda: init_params(jax.random.key(0), spec, odds.chase.shape[-1]))
    paths, tree = jax.tree_util.tree_flatten_with_path(shapes)
    expected = {".".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in at): leaf.shape for at, leaf in paths}
    if set(arrays) != set(expected):
        extra, lacking = sorted(set(arrays) - set(expected))[:5], sorted(set(expected) - set(arrays))[:5]
        raise Refused(f"its arrays do not fit its spec's network (unexpected {extra}, missing {lacking})")
    for name, shape in expected.items():
        if arrays[name].shape != shape:
            raise Refused(f"its {name!r} has shape {arrays[name].shape}; the spec's network needs {shape}")
        if not np.isfinite(arrays[name]).all():
            raise Refused(f"its {name!r} holds values that are not finite")
    return jax.tree_util.tree_unflatten(tree, [arrays[name].astype(np.float32) for name in expected])


class JaxAgent(Agent):
    """A JAX-trained policy (``jax:PATH``): the most likely legal action of its network (deterministic).

    A network trained at a table of ``P`` (``NetworkSpec.players``) has ``table_players = P``: it acts on that
    table's view from its seat (:class:`~yacht_env.encoding.MultiplayerEncoder`), wherever agents are seated
    (``evaluate.py``'s head to head, the versus envs, the PettingZoo env's observations, ``play.py``, the browser
    table), at tables of ``P`` only. A network whose legal logits overflowed (all ``-inf``, or NaN) still plays a
    legal action.

    Args:
        path: The policy's ``.npz``, its run folder or a shipped name (:func:`resolve_params`).
        rules: The game; ``None``: the one the policy's ``.json`` names. Must be the policy's.
        name: The agent's name (default ``jax:PATH``).

    Raises:
        ValueError: an unreadable file, or a policy trained for other rules than ``rules``.
    """

    def __init__(self, path: str | Path, rules: str | R.Rules | None = None, name: str | None = None) -> None:
        params, self.spec = load_params(path)
        super().__init__(name or f"jax:{path}", self.spec.rules if rules is None else rules)
        if self.spec.rules != self.rules.name or R.PRESETS.get(self.spec.rules) != self.rules:
            raise ValueError(
                f"the JAX policy {str(path)!r} plays the {self.spec.rules!r} rules, not {self.rules.name!r}"
            )
        self.table_players = self.spec.players if self.spec.players > 1 else None
        if self.spec.obs_size != self.observation_size or self.spec.num_actions != self.rules.num_actions:
            hint = outdated_table_view(self.rules, self.spec.obs_size) if self.table_players else ""
            raise ValueError(f"the JAX policy {str(path)!r} does not fit the {self.rules.name!r} observation{hint}")
        self.params = jax.tree.map(jnp.asarray, params)
        odds, where = odds_tables(self.rules, self.spec.bonus_odds)
        spec = self.spec
        self._logits = jax.jit(lambda p, obs, mask: apply(p, spec, odds, where, obs, mask)[0])

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        try:
            logits = np.asarray(self._logits(self.params, observations, action_masks))
        except RuntimeError as error:
            if not out_of_memory(error):
                raise
            raise ValueError(
                f"{self.name}: the device ran out of memory acting on {len(observations):,} positions at once: play "
                "fewer games at a time (evaluate.py --batch-size)"
            ) from None
        # A network that overflowed (every legal logit -inf, or NaN) still plays a legal action: +-inf become the
        # largest finite values and NaN the lowest, and only legal actions are ranked.
        finite = np.nan_to_num(logits, nan=np.finfo(logits.dtype).min)
        return np.where(action_masks, finite, -np.inf).argmax(axis=1)


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is XLA running out of memory (``RESOURCE_EXHAUSTED``: ``jax.errors.JaxRuntimeError``, the
    ``XlaRuntimeError`` of older jaxlib, both ``RuntimeError``), which a smaller batch or run may avoid.
    """
    return isinstance(error, RuntimeError) and "RESOURCE_EXHAUSTED" in str(error)
