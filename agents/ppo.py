"""``ppo:NAME`` / ``ppo:PATH``: a saved sb3-contrib ``MaskablePPO`` model, acting deterministically on the legal
actions.

The package ships the recipe's models (``yacht_agents/models/ppo_<name>.zip``: the repository's ``models/``
folder): ``ppo:standard`` and ``ppo:classic`` name them (:func:`resolve_model`). :func:`load_model` is the one
place models are loaded (by :class:`PPOAgent` and by ``yacht_lab``'s resume): it also loads models saved before
0.2, when this package was the top-level ``agents`` (see :data:`LEGACY_POLICY_MODULES`).
"""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import pickletools
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from yacht_agents.archive import READ_ERRORS, Refused, open_zip, path_kind, read_member
from yacht_agents.base import Agent, outdated_table_view
from yacht_env import rules as R
from yacht_env.util import is_bare_name

#: Where a saved model's ``policy_class`` was imported from before 0.2, when this package installed as the
#: top-level ``agents`` (``agents.policy.OddsPolicy``, now :class:`yacht_agents.policy.OddsPolicy`). Such a
#: model is loaded with the class given (``custom_objects``), never by unpickling that import path: ``agents``
#: is today another package's name (openai-agents), or the repository's folder imported a second time.
LEGACY_POLICY_MODULES = frozenset({"agents.policy"})


def shipped_models() -> dict[str, Path]:
    """The models that come with the package, by short name: ``{"classic": .../ppo_classic.zip, "standard": ...}``.

    Installed, they are the package data ``yacht_agents/models/ppo_<name>.zip``; in a source checkout (an
    editable install) the repository's ``models/`` folder, which is where the wheel takes them from.
    """
    package = Path(__file__).resolve().parent
    folders = [package / "models"]
    if (package.parent / "pyproject.toml").is_file():  # a source checkout: agents/ beside models/
        folders.append(package.parent / "models")
    for folder in folders:
        found = {path.name[len("ppo_") : -len(".zip")]: path for path in sorted(folder.glob("ppo_*.zip"))}
        if found:
            return found
    return {}


def resolve_model(model: str | os.PathLike) -> Path:
    """The file a PPO model names: a shipped model's short name (``"standard"``, ``"classic"``: see
    :func:`shipped_models`), or a path.

    A string without a path separator and not ending in ``.zip`` is a name; a shipped model's name wins over a
    file of that name in the working folder (write ``./standard`` for the file). Anything else is a path.

    Raises:
        ValueError: an unknown name (the message lists the shipped ones), or no file at the path.
    """
    text = os.fspath(model)
    try:
        if is_bare_name(model, (".zip",)):
            shipped = shipped_models()
            if text in shipped:
                return shipped[text]
            if path_kind(text) != "file":
                names = ", ".join(sorted(shipped)) or "none (they are missing from this installation)"
                raise Refused(
                    f"no shipped model of that name (shipped: {names}) and no such file; give a shipped name or a "
                    "path to a .zip"
                )
        kind = path_kind(model)
    except Refused as error:
        raise ValueError(f"cannot load PPO model '{text}': {error}") from None
    if kind != "file":
        reasons = {"directory": "it is a directory", None: "file not found"}  # else /dev/null, a FIFO, a socket
        reason = reasons.get(kind, "it is not a regular file (a device, FIFO or socket)")
        raise ValueError(f"cannot load PPO model '{text}': {reason}")
    return Path(model)


def saved_policy_module(path: str | os.PathLike) -> str | None:
    """The module a saved model's ``policy_class`` names (read from the zip's ``data`` JSON, nothing
    unpickled), or ``None`` if the file does not say (not an SB3 zip: loading it will tell).
    """
    try:
        with _open_archive(path) as archive:
            data = json.loads(read_member(archive, "data"))
        module = data["policy_class"]["__module__"]
    except (OSError, KeyError, TypeError, ValueError, RecursionError, zipfile.BadZipFile):
        return None
    return module if isinstance(module, str) else None


# --------------------------------------------------------------------------------------------------
# Loading a model without running it
# --------------------------------------------------------------------------------------------------
#: The most a model file may expand to: the declared uncompressed sizes of all its members together (checked
#: before anything is read, so that a zip bomb is refused at once). The recipe's 256x256 models take 2.3 MB.
MAX_MODEL_BYTES = 256 * 2**20
#: The most the ``data`` member (SB3's JSON of the model's settings) may take: the shipped models' take about 42 KB.
#: Parsed JSON can take 35 times its size in Python objects (32 MiB of ``[],`` is 1.1 GB), so this member has a
#: bound of its own, checked with the others before anything is read.
MAX_MODEL_DATA_BYTES = 2**20
#: The most members a model file may have (an SB3 zip has six).
MAX_MODEL_MEMBERS = 16
#: Bounds of the network a model file may ask for: those of ``yacht_lab``'s config (``policy.net_arch``), an
#: observation and an action count far above any preset's (at most 183 values and 44 actions).
MAX_LAYERS, MAX_LAYER_WIDTH, MAX_OBSERVATION_SIZE, MAX_ACTIONS = 16, 8192, 4096, 4096

#: The policy classes a model file may name (``(module, class)``), as the class built for it. The safe loader
#: builds nothing else: ``OddsPolicy`` (also under its pre-0.2 module, :data:`LEGACY_POLICY_MODULES`) and
#: sb3-contrib's ``MaskableActorCriticPolicy`` (``"MlpPolicy"``).
POLICY_CLASSES = {
    ("yacht_agents.policy", "OddsPolicy"): "OddsPolicy",
    **{(module, "OddsPolicy"): "OddsPolicy" for module in LEGACY_POLICY_MODULES},
    ("sb3_contrib.common.maskable.policies", "MaskableActorCriticPolicy"): "MaskableActorCriticPolicy",
}
#: The activations a model file may name, as SB3 writes them, by ``torch.nn`` class name.
ACTIVATIONS = {f"<class 'torch.nn.modules.activation.{name}'>": name for name in ("ReLU", "Tanh")}
_ODDS_KWARGS = ("rules", "chase_inputs", "keep_head", "bonus_odds")


def _open_archive(path: str | os.PathLike) -> zipfile.ZipFile:
    """The model's zip, once its central directory says it expands to at most :data:`MAX_MODEL_BYTES` in at most
    :data:`MAX_MODEL_MEMBERS` members, its ``data`` to at most :data:`MAX_MODEL_DATA_BYTES` (:func:`open_zip`).
    """
    settings = {"data": (MAX_MODEL_DATA_BYTES, "a model's settings")}
    return open_zip(
        path, what="a model", max_bytes=MAX_MODEL_BYTES, max_members=MAX_MODEL_MEMBERS, member_bytes=settings
    )


def _literal(value: Any, what: str, limit: int = 10_000) -> Any:
    """A readable field of SB3's ``data``: JSON as is, or the ``repr`` SB3 wrote (read as a Python literal)."""
    if not isinstance(value, str):
        return value
    if len(value) > limit:
        raise Refused(f"its {what} is too long")
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise Refused(f"its {what} {value[:80]!r} is not a literal") from None


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _class_reference(entry: Any) -> tuple[str, str]:
    """``(module, name)`` of the class that SB3 pickled for ``policy_class``, read by disassembling the pickle
    (:mod:`pickletools`, which executes nothing): it must be a bare reference to a global, nothing more.
    """
    serialized = entry.get(":serialized:") if isinstance(entry, dict) else None
    if not isinstance(serialized, str) or len(serialized) > 1000:
        raise Refused("its policy_class is not a class reference")
    try:
        ops = list(pickletools.genops(base64.b64decode(serialized, validate=True)))
    except Exception:  # noqa: BLE001 - any malformed pickle: not a class reference
        raise Refused("its policy_class is not a class reference") from None
    names = [op.name for op, _, _ in ops]
    strings = [arg for op, arg, _ in ops if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE")]
    allowed = {"PROTO", "FRAME", "MEMOIZE", "SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "STACK_GLOBAL", "STOP"}
    if set(names) <= allowed and names.count("STACK_GLOBAL") == 1 and len(strings) == 2 and names[-1] == "STOP":
        return strings[0], strings[1]
    if set(names) <= {"PROTO", "FRAME", "MEMOIZE", "GLOBAL", "BINPUT", "PUT", "STOP"} and names.count("GLOBAL") == 1:
        module, _, name = next(arg for op, arg, _ in ops if op.name == "GLOBAL").partition(" ")
        return module, name
    raise Refused("its policy_class is not a bare class reference (the pickle does more than name a class)")


def _net_arch(value: Any) -> dict[str, list[int]]:
    arch = _literal(value, "policy_kwargs net_arch")
    if isinstance(arch, list):
        arch = {"pi": arch, "vf": arch}
    if not isinstance(arch, dict) or set(arch) != {"pi", "vf"}:
        raise Refused(f"its net_arch {arch!r} is not a list of layer widths or {{'pi': [...], 'vf': [...]}}")
    for layers in arch.values():
        ok = isinstance(layers, list) and 1 <= len(layers) <= MAX_LAYERS
        if not ok or not all(_is_int(width, 1, MAX_LAYER_WIDTH) for width in layers):
            raise Refused(f"its net_arch {arch!r} is not {MAX_LAYERS} layers at most of 1..{MAX_LAYER_WIDTH} units")
    return {"pi": list(arch["pi"]), "vf": list(arch["vf"])}


@dataclass(frozen=True)
class SavedModel:
    """What a model file says about its network, read from the readable fields of its ``data`` JSON and
    validated (:func:`read_model`); the pickled entries beside them are never read.
    """

    policy: str  # "OddsPolicy" or "MaskableActorCriticPolicy"
    net_arch: dict[str, list[int]] | None  # None: SB3's default (64, 64)
    activation: str | None  # "ReLU" or "Tanh"; None: SB3's default (Tanh)
    odds: dict[str, Any]  # OddsPolicy's rules (a preset name), chase_inputs, keep_head, bonus_odds
    observation_size: int
    num_actions: int
    num_timesteps: int
    seed: int | None

    def policy_class(self):
        """The SB3 policy class the file names (one of the known classes, never unpickled)."""
        if self.policy == "OddsPolicy":
            from yacht_agents.policy import OddsPolicy

            return OddsPolicy
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

        return MaskableActorCriticPolicy

    def policy_kwargs(self) -> dict[str, Any]:
        """The keyword arguments that rebuild the saved policy's network."""
        import torch

        kwargs: dict[str, Any] = dict(self.odds)
        if self.net_arch is not None:
            kwargs["net_arch"] = {"pi": list(self.net_arch["pi"]), "vf": list(self.net_arch["vf"])}
        if self.activation is not None:
            kwargs["activation_fn"] = getattr(torch.nn, self.activation)
        return kwargs

    def spaces(self):
        """The observation and action spaces the model was trained on."""
        from gymnasium import spaces

        return spaces.Box(0.0, 1.0, (self.observation_size,), np.float32), spaces.Discrete(self.num_actions)


def _read_saved_model(archive: zipfile.ZipFile) -> SavedModel:
    """What a model file's ``data`` says, each part checked (:class:`Refused` names the first that does not pass)."""
    try:
        data = json.loads(read_member(archive, "data"))
    except (ValueError, RecursionError):
        raise Refused("its 'data' is not JSON (not an SB3 model file)") from None
    if not isinstance(data, dict) or "policy_class" not in data:
        raise Refused("its 'data' names no policy_class (not an SB3 model file)")
    policy = _read_policy_class(data["policy_class"])
    net_arch, activation, odds = _read_policy_kwargs(data.get("policy_kwargs", {}), policy)
    shape, n = _read_spaces(data.get("observation_space"), data.get("action_space"))
    steps, seed = data.get("num_timesteps", 0), data.get("seed")
    if not _is_int(steps, 0, 2**62) or not (seed is None or _is_int(seed, -(2**63), 2**64)):
        raise Refused("its num_timesteps or seed is not an integer")

    saved = SavedModel(policy, net_arch, activation, odds, shape[0], n, steps, seed)
    # What the network will take, before it is built (the file's size bound says what it may hold).
    arch = net_arch or {"pi": [64, 64], "vf": [64, 64]}
    inputs = shape[0] + 64  # OddsPolicy adds a value per category
    size = sum(
        sum((n_in + 1) * n_out for n_in, n_out in zip([inputs, *layers], [*layers, outputs], strict=True))
        for layers, outputs in ((arch["pi"], n + 64), (arch["vf"], 1))
    )
    if 4 * size > MAX_MODEL_BYTES:
        raise Refused(f"its network of about {size} parameters is larger than a model may be (MAX_MODEL_BYTES)")
    return saved


def _read_policy_class(policy_class: Any) -> str:
    """The name of the known policy class a file's ``policy_class`` entry names."""
    reference = _class_reference(policy_class)
    readable_module = policy_class.get("__module__")
    if reference not in POLICY_CLASSES or readable_module not in (None, reference[0]):
        raise Refused(
            f"its policy class {'.'.join(reference)} is not one this loader builds "
            f"({', '.join(sorted({name for name in POLICY_CLASSES.values()}))}); "
            "a file you trust loads with load_model(path, trust=True)"
        )
    policy = POLICY_CLASSES[reference]
    return policy


def _read_policy_kwargs(kwargs: Any, policy: str) -> tuple[Any, str | None, dict[str, Any]]:
    """A file's ``policy_kwargs``: its ``net_arch``, activation and odds options, each one this loader builds."""
    if isinstance(kwargs, dict) and ":type:" in kwargs:
        if kwargs[":type:"] != "<class 'dict'>":
            raise Refused("its policy_kwargs is not a dict")
        kwargs = {key: value for key, value in kwargs.items() if key not in (":type:", ":serialized:")}
    if not isinstance(kwargs, dict):
        raise Refused("its policy_kwargs is not a dict")
    allowed = {"net_arch", "activation_fn", *(_ODDS_KWARGS if policy == "OddsPolicy" else ())}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise Refused(
            f"its policy_kwargs has {', '.join(unknown)} (this loader takes only {', '.join(sorted(allowed))})"
        )
    net_arch = _net_arch(kwargs["net_arch"]) if "net_arch" in kwargs else None
    activation = None
    if "activation_fn" in kwargs:
        activation = ACTIVATIONS.get(kwargs["activation_fn"]) if isinstance(kwargs["activation_fn"], str) else None
        if activation is None:
            raise Refused(
                f"its activation {str(kwargs['activation_fn'])[:80]!r} is not one this loader builds "
                f"({', '.join(ACTIVATIONS.values())})"
            )
    odds: dict[str, Any] = {}
    if policy == "OddsPolicy":
        rules = kwargs.get("rules", "standard")
        if not isinstance(rules, str) or rules not in R.PRESETS:
            raise Refused(f"its rules {str(rules)[:80]!r} are not a preset ({', '.join(R.PRESETS)})")
        odds["rules"] = rules
        for key in ("chase_inputs", "keep_head", "bonus_odds"):
            # bonus_odds came later: a file without it was trained without the bonus odds
            value = _literal(kwargs.get(key, key != "bonus_odds"), f"policy_kwargs {key}")
            if not isinstance(value, bool):
                raise Refused(f"its {key} {value!r} is not True or False")
            odds[key] = value
    return net_arch, activation, odds


def _read_spaces(obs: Any, actions: Any) -> tuple[list, int]:
    """A file's observation space (a float32 ``Box`` of one size) and action space (``Discrete(n)``)."""
    if not isinstance(obs, dict) or obs.get(":type:") != "<class 'gymnasium.spaces.box.Box'>":
        raise Refused("its observation space is not a Box")
    shape = _literal(obs.get("_shape"), "observation shape")
    if not (isinstance(shape, (list, tuple)) and len(shape) == 1 and _is_int(shape[0], 1, MAX_OBSERVATION_SIZE)):
        raise Refused(f"its observation shape {shape!r} is not one size of 1..{MAX_OBSERVATION_SIZE}")
    if obs.get("dtype") != "float32":
        raise Refused(f"its observations are {str(obs.get('dtype'))[:40]!r}, not float32")
    if not isinstance(actions, dict) or actions.get(":type:") != "<class 'gymnasium.spaces.discrete.Discrete'>":
        raise Refused("its action space is not Discrete")
    n, start = _literal(actions.get("n"), "action count"), _literal(actions.get("start", 0), "action start")
    if not _is_int(n, 1, MAX_ACTIONS) or start != 0:
        raise Refused(f"its action space is not Discrete(n) for n in 1..{MAX_ACTIONS}")
    return shape, n


def _state_dict(archive: zipfile.ZipFile, name: str, device: Any) -> dict:
    """A member saved with ``torch.save``, loaded with ``weights_only`` (tensors and plain containers only)."""
    import torch

    content = read_member(archive, name)
    try:
        state = torch.load(io.BytesIO(content), map_location=device, weights_only=True)
    except Exception as error:  # noqa: BLE001 - anything torch's restricted unpickler refuses, or corrupt data
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise Refused(f"its {name!r} is not plain tensors ({detail[:200]})") from None
    if not isinstance(state, dict):
        raise Refused(f"its {name!r} is not a state dict")
    return state


def read_model(path: str | os.PathLike) -> SavedModel:
    """The validated description of a model file (:class:`SavedModel`), nothing unpickled.

    Raises:
        ValueError: ``cannot load PPO model '<path>': <why>``: not an SB3 zip, larger than
            :data:`MAX_MODEL_BYTES`, another policy class (:data:`POLICY_CLASSES`), activation
            (:data:`ACTIVATIONS`) or policy setting, or a network out of bounds.
    """
    return _safely(path, lambda archive: _read_saved_model(archive))


def _safely(path: str | os.PathLike, read, label: str | None = None):
    """``read(archive)`` on the bounded zip, every failure one ``ValueError`` line naming the file."""
    label = os.fspath(path) if label is None else label
    try:
        with _open_archive(path) as archive:
            return read(archive)
    except Refused as error:
        raise ValueError(f"cannot load PPO model '{label}': {error}") from None
    except READ_ERRORS as error:
        detail = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"cannot load PPO model '{label}': not a MaskablePPO model ({detail[:200]})") from None


def build_model(
    path: str | os.PathLike,
    env=None,
    *,
    optimizer: bool = False,
    device: Any = "auto",
    label: str | None = None,
    **algorithm_kwargs: Any,
):
    """A ``MaskablePPO`` rebuilt from a model file without unpickling anything: the network that the file's
    validated description (:func:`read_model`) names, of a known class, with the parameters of its
    ``policy.pth`` (and of ``policy.optimizer.pth`` with ``optimizer``), read with ``torch.load(...,
    weights_only=True)``, and its ``num_timesteps``. ``algorithm_kwargs`` (``n_steps``, ``learning_rate``,
    ``tensorboard_log``, ...) go to ``MaskablePPO``; the file's other settings, pickled, are not read.

    Raises:
        ValueError: see :func:`read_model`; also parameters that do not fit the network, or an ``env`` of other
            spaces.
    """
    from sb3_contrib import MaskablePPO

    def build(archive: zipfile.ZipFile):
        saved = _read_saved_model(archive)
        observation_space, action_space = saved.spaces()
        if env is not None:
            shape, n = env.observation_space.shape, getattr(env.action_space, "n", None)
            if tuple(shape or ()) != (saved.observation_size,) or n != saved.num_actions:
                raise Refused(
                    f"it was trained on observation space {observation_space} and action space {action_space}, "
                    f"the env has {env.observation_space} and {env.action_space}"
                )
        params = _state_dict(archive, "policy.pth", device if device != "auto" else None)
        optimizer_state = _state_dict(archive, "policy.optimizer.pth", None) if optimizer else None
        kwargs = {"seed": saved.seed, **algorithm_kwargs}
        model = MaskablePPO(
            saved.policy_class(),
            env,
            policy_kwargs=saved.policy_kwargs(),
            device=device,
            _init_setup_model=False,
            **kwargs,
        )
        if env is None:
            model.observation_space, model.action_space, model.n_envs = observation_space, action_space, 1
        model._setup_model()
        try:
            model.policy.load_state_dict(params, strict=True)
            if optimizer_state is not None:
                model.policy.optimizer.load_state_dict(optimizer_state)
        except (RuntimeError, ValueError, KeyError, TypeError) as error:
            detail = " ".join(str(error).split())
            raise Refused(f"its parameters do not fit the network it names ({detail[:200]})") from None
        model.num_timesteps = saved.num_timesteps
        return model

    return _safely(path, build, label)


def _no_learning(progress_remaining: float) -> float:
    """The learning rate of a model loaded to act: it never learns."""
    return 0.0


def load_model(
    path: str | os.PathLike, *, inference: bool = True, trust: bool = False, label: str | None = None, **kwargs: Any
):
    """A saved ``MaskablePPO`` model, loaded without running anything in the file (unless ``trust``).

    By default the model is rebuilt by :func:`build_model`: only the known policy classes
    (:data:`POLICY_CLASSES`) with a validated configuration, the parameters read with torch's ``weights_only``;
    any other file is refused with one line. This loads the package's own models, ``yacht_lab``'s runs and
    plain ``MlpPolicy`` models of sb3-contrib. ``kwargs`` may be ``device``; ``label`` names the file in
    errors (default: the path). Acting only (``inference``), the model never learns (learning rate 0).

    ``trust=True`` is SB3's full loader, ``MaskablePPO.load(path, **kwargs)``: it unpickles the file's
    entries, which can run any code the file's author chose. Use it only on files you made or trust, e.g. a
    model of another policy class, or to get the file's whole training state. It too loads models saved
    before 0.2 (a ``policy_class`` of ``agents.policy``, :data:`LEGACY_POLICY_MODULES`, gets
    :class:`yacht_agents.policy.OddsPolicy`); with ``inference`` the saved learning-rate schedules, closures
    pickled by value, are not unpickled; to continue training leave it off and set the run's schedules after
    loading (``yacht_lab``'s resume needs neither: it rebuilds the model from the run's config, see
    ``yacht_lab.training.sb3.ppo.load_checkpoint``).

    Both refuse a file that expands to more than :data:`MAX_MODEL_BYTES`, or whose ``data`` takes more than
    :data:`MAX_MODEL_DATA_BYTES`, before reading it.

    Raises:
        ValueError: ``cannot load PPO model '<path>': ...``; with ``trust``, whatever ``MaskablePPO.load``
            raises for a file that is not a model. ``ImportError`` without sb3-contrib.
    """
    if not trust:
        if not inference:
            raise ValueError(
                f"cannot load PPO model '{label or os.fspath(path)}' to train: the safe loader loads models to act; "
                "rebuild the model and load its parameters (build_model), or pass trust=True for SB3's loader"
            )
        unknown = sorted(set(kwargs) - {"device"})
        if unknown:
            raise TypeError(f"load_model() without trust takes only device, not {', '.join(unknown)}")
        return build_model(path, learning_rate=0.0, label=label, **kwargs)

    from sb3_contrib import MaskablePPO

    _safely(path, lambda archive: None, label)  # the size bound: a zip bomb is refused before SB3 reads it
    custom_objects = dict(kwargs.pop("custom_objects", None) or {})
    if saved_policy_module(path) in LEGACY_POLICY_MODULES:
        from yacht_agents.policy import OddsPolicy

        custom_objects.setdefault("policy_class", OddsPolicy)
    if inference:
        custom_objects.setdefault("learning_rate", 0.0)
        custom_objects.setdefault("lr_schedule", _no_learning)
    return MaskablePPO.load(path, custom_objects=custom_objects, **kwargs)


class PPOAgent(Agent):
    """Loads a model (:func:`load_model` of :func:`resolve_model`'s file: ``path`` is a file or a shipped model's
    name, e.g. ``"standard"``) on the CPU and acts with ``predict(..., deterministic=True)``.

    The model must have been trained on a flat observation of the preset's sheet with
    ``Discrete(rules.num_actions)`` actions: the solo one (``Box`` of ``encoder.size``, 64 for Yacht, the same
    for every preset of 12 categories; 69 for Yahtzee, 72 for Yatzy) or a table's view from ``YachtVersus-v0``
    (a ``P``-player :class:`~yacht_env.encoding.MultiplayerEncoder`'s size; the agent's ``table_players`` is then
    ``P``). A model
    of :class:`yacht_agents.policy.OddsPolicy` (the default recipe) also names its preset, and must be played on it.

    Raises:
        ValueError: an unknown name, the file is missing, is not a loadable MaskablePPO model, or has other spaces.
    """

    #: The torch threads ``act`` runs on, the process's own setting restored after: a small MLP runs fastest on one,
    #: and more only contend for the cores (10x slower on a busy two-core machine). ``benchmarks/agent_speed.py
    #: --threads N`` sets it to N, as it sets the BLAS threads of the numpy agents.
    torch_threads: int = 1

    def __init__(self, path: str | Path, rules: str | R.Rules = "standard", name: str | None = None) -> None:
        super().__init__(name or f"ppo:{path}", rules)
        self.path = resolve_model(path)
        try:
            import sb3_contrib  # noqa: F401 - imported here: only this agent needs torch
        except ImportError:
            extra = "pip install 'yacht-rl[train]'"
            raise ValueError(f"cannot load PPO model '{path}': the ppo agent needs the train extra ({extra})") from None

        self.model = load_model(self.path, device="cpu", label=str(path))  # nothing in the file runs
        self._read_spaces(f"PPO model '{path}'")

    def _read_spaces(self, what: str) -> None:
        """Sets ``table_players`` from the model's observation size; raises ``ValueError`` for other spaces."""
        from gymnasium import spaces

        from yacht_env.encoding import MultiplayerEncoder

        obs_space, action_space = self.model.observation_space, self.model.action_space
        sizes = {self.encoder.size: None}
        sizes.update({MultiplayerEncoder(self.rules, p).size: p for p in range(2, 11)})
        num_actions = self.rules.num_actions
        shape = obs_space.shape if isinstance(obs_space, spaces.Box) else None
        if (
            shape is None
            or len(shape) != 1
            or shape[0] not in sizes
            or not (isinstance(action_space, spaces.Discrete) and int(action_space.n) == num_actions)
        ):
            raise ValueError(
                f"cannot use {what}: it was trained on observation space {obs_space} and action space "
                f"{action_space}; Yacht-v0 of the {self.rules.name!r} rules has Box(0, 1, ({self.encoder.size},)) and "
                f"Discrete({num_actions}), "
                f"YachtVersus-v0 a table's view of {sorted(s for s in sizes if s != self.encoder.size)} values"
                + (outdated_table_view(self.rules, shape[0]) if shape is not None and len(shape) == 1 else "")
            )
        self.table_players = sizes[shape[0]]
        trained = getattr(self.model.policy, "rules", None)  # an OddsPolicy knows its preset (its odds tables)
        if trained is not None and trained != self.rules:
            raise ValueError(f"cannot use {what} for the {self.rules.name!r} rules: it was trained on {trained.name!r}")

    @classmethod
    def from_model(cls, model, rules: str | R.Rules = "standard", name: str = "ppo") -> PPOAgent:
        """An agent over a live ``MaskablePPO`` model (e.g. evaluated during training), not a file."""
        agent = cls.__new__(cls)
        Agent.__init__(agent, name, rules)
        agent.path, agent.model = None, model
        agent._read_spaces("the model")
        return agent

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(self.torch_threads)
        try:
            actions, _ = self.model.predict(observations, action_masks=action_masks, deterministic=True)
        finally:
            torch.set_num_threads(threads)
        return np.asarray(actions).reshape(len(observations))
