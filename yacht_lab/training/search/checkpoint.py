"""The search trainer's checkpoint read back: data a user names, bounded before it is read and checked before use.

A checkpoint (``checkpoints/step_<N>.npz``, :class:`yacht_lab.training.search.trainer.SearchState`) is one ``.npz``
of arrays: the learner's (``model/<name>``, ``adam/<i>/step``, ``adam/<i>/exp_avg``, ``adam/<i>/exp_avg_sq``,
``generator``), ``iteration``, ``loss``, ``rng`` (the games' generator's state as JSON text) and ``format``.
:func:`read_checkpoint` reads it as the JAX trainer reads its own (:mod:`yacht_agents.archive`, the package's one
bounded zip reader: no larger than the run's own arrays, plain numbers and text only, each ``.npy`` header checked
against its member before its data is read), then checks, before anything of the run changes:

- every array's name, shape and dtype against the fresh learner's own (Adam's moments against its parameters), and no
  array besides;
- the scalars' kind and range: the iteration an integer >= 0, Adam's step counts equal, whole and at least one an
  iteration (none before the first), the loss a finite number >= 0 after the first iteration (NaN before it, as the
  trainer starts it);
- every float finite;
- both generators' states, tried on scratch generators.

Anything else is one ``ValueError`` line naming the file and the first thing wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from yacht_agents.archive import READ_ERRORS, Refused, open_zip, path_kind, read_arrays
from yacht_lab.training.schema import MAX_TIMESTEPS

CHECKPOINT_FORMAT = "yacht-rl search checkpoint 1"
#: The slots of Adam's state per parameter, as torch's ``Adam`` keeps them.
ADAM_SLOTS = ("step", "exp_avg", "exp_avg_sq")
#: The most characters of the games' generator's state (its JSON takes about 160).
MAX_RNG_TEXT = 1024
#: The highest Adam step count read: float32 counts whole numbers exactly up to here.
MAX_ADAM_STEPS = 2**24
#: Members besides the learner's arrays: ``iteration``, ``loss``, ``rng``, ``format``.
SCALARS = ("iteration", "loss", "rng", "format")


class Checkpoint(NamedTuple):
    """A checked checkpoint: the learner's arrays (:meth:`~yacht_lab.training.search.learner.Learner.load_arrays`'
    input), the iteration, the last loss and the games' generator.
    """

    arrays: dict[str, np.ndarray]
    iteration: int
    loss: float
    rng: np.random.Generator


def expected_arrays(learner) -> tuple[dict[str, tuple[tuple[int, ...], np.dtype]], list[str]]:
    """The learner's arrays a checkpoint holds, ``name -> (shape, dtype)``: a fresh learner's own
    (:meth:`~yacht_lab.training.search.learner.Learner.state_arrays`) and Adam's state, which a fresh optimizer has
    not made yet, as its parameters give it; and the names of Adam's arrays among them.
    """
    like = {
        name: (array.shape, array.dtype)
        for name, array in learner.state_arrays().items()
        if not name.startswith("adam/")
    }
    adam = []
    params = [p for group in learner.optimizer.param_groups for p in group["params"]]
    for i, param in enumerate(params):
        for slot in ADAM_SLOTS:
            like[f"adam/{i}/{slot}"] = (
                ((), np.dtype(np.float32)) if slot == "step" else (tuple(param.shape), np.dtype(np.float32))
            )
            adam.append(f"adam/{i}/{slot}")
    return like, adam


def read_checkpoint(path: str | Path, learner) -> Checkpoint:
    """The checkpoint at ``path`` for ``learner`` (a fresh one of the run's config), checked (module docstring).
    Changes nothing: the caller loads the arrays into the learner.

    Raises:
        ValueError: ``cannot resume from '<path>': <why>``, in one line.
    """
    try:
        return _read(Path(path), learner)
    except (Refused, *READ_ERRORS) as error:
        detail = " ".join(str(error).split())[:300] or type(error).__name__
        raise ValueError(f"cannot resume from {str(path)!r}: {detail}") from None


def _read(path: Path, learner) -> Checkpoint:
    like, adam = expected_arrays(learner)
    # The run's own arrays, their .npy headers (at most 4 KiB each; numpy writes 128 bytes), the scalars and texts.
    data = sum(int(np.prod(shape)) * dtype.itemsize for shape, dtype in like.values())
    bound = data + 4096 * (len(like) + len(SCALARS)) + 4 * (MAX_RNG_TEXT + 64) + 64
    if path_kind(path) != "file":
        raise Refused("it is not a regular file")
    with open_zip(path, what="this run's checkpoint", max_bytes=bound, max_members=len(like) + len(SCALARS)) as zf:
        arrays = read_arrays(zf, kinds="biufU")
    if _text(arrays.pop("format", None)) != CHECKPOINT_FORMAT:
        raise Refused(f"it is not a {CHECKPOINT_FORMAT!r} file")
    iteration = _integer(arrays.pop("iteration", None), "iteration", MAX_TIMESTEPS)
    loss = _loss(arrays.pop("loss", None), iteration)
    rng = _games_generator(arrays.pop("rng", None))
    present = [name for name in adam if name in arrays]
    if iteration == 0 and present:
        raise Refused(f"it holds Adam's state ({present[0]}) before any iteration")
    found = {}
    for name, (shape, dtype) in like.items():
        if iteration == 0 and name in adam:
            continue
        array = arrays.pop(name, None)
        if array is None or array.shape != shape or array.dtype != dtype:
            raise Refused(f"{name} is missing or does not fit this run ({dtype} {shape})")
        if dtype.kind == "f" and not np.isfinite(array).all():
            raise Refused(f"its {name} is not finite (NaN or inf)")
        found[name] = np.array(array)  # its own writable copy, out of the file's bytes
    if arrays:
        raise Refused(f"it holds arrays this run has not ({sorted(arrays)[0]})")
    _check_steps(found, adam, iteration)
    _check_generator(found["generator"])
    return Checkpoint(found, iteration, loss, rng)


def _loss(array, iteration: int) -> float:
    """The last iteration's loss: a finite number >= 0, NaN before the first iteration (a fresh run's)."""
    if array is None or array.shape != () or array.dtype.kind != "f":
        raise Refused("it has no loss (a float)")
    loss = float(array)
    if iteration == 0 and loss == loss:
        raise Refused(f"its loss is {loss} before any iteration (a fresh run's is NaN)")
    if iteration > 0 and not (np.isfinite(loss) and loss >= 0):
        raise Refused(f"its loss is {loss}, not a finite number >= 0")
    return loss


def _check_steps(found: dict[str, np.ndarray], adam: list[str], iteration: int) -> None:
    """Adam's step counts: one whole count for every parameter, at least one step an iteration."""
    steps = {float(found[name]) for name in adam if name.endswith("/step") and name in found}
    if not steps:
        return
    step = steps.pop() if len(steps) == 1 else None
    if step is None or step != int(step) or not iteration <= step <= MAX_ADAM_STEPS:
        raise Refused(
            f"its Adam step counts are not one whole count of at least its {iteration} iterations (and at most "
            f"{MAX_ADAM_STEPS:,})"
        )


def _text(array) -> str | None:
    """A scalar string array's text (``None``: not one)."""
    return str(array) if array is not None and array.shape == () and array.dtype.kind == "U" else None


def _integer(array, name: str, high: int) -> int:
    """A scalar integer array's value in ``0..high``."""
    if array is None or array.shape != () or array.dtype.kind not in "iu":
        raise Refused(f"it has no {name} (an integer)")
    value = int(array)
    if not 0 <= value <= high:
        raise Refused(f"its {name} is {value}, not in 0..{high:,}")
    return value


def _games_generator(array) -> np.random.Generator:
    """The games' generator of the ``rng`` text: numpy's ``PCG64`` state, every field checked, set on a new one."""
    text = _text(array)
    if text is None or len(text) > MAX_RNG_TEXT:
        raise Refused("it has no games' generator state (rng)")
    try:
        state = json.loads(text)
    except (ValueError, RecursionError):
        raise Refused("its games' generator state (rng) is not JSON") from None
    fresh = np.random.default_rng(0).bit_generator.state
    ok = isinstance(state, dict) and set(state) == set(fresh) and state["bit_generator"] == fresh["bit_generator"]
    inner = state.get("state") if ok else None
    ok = ok and isinstance(inner, dict) and set(inner) == set(fresh["state"])
    ok = ok and all(type(inner[k]) is int and 0 <= inner[k] < 2**128 for k in inner)
    ok = ok and state["has_uint32"] in (0, 1) and type(state["uinteger"]) is int and 0 <= state["uinteger"] < 2**32
    if not ok:
        raise Refused(f"its games' generator state (rng) is not a {fresh['bit_generator']} state")
    rng = np.random.default_rng()
    try:
        rng.bit_generator.state = state
    except (ValueError, TypeError, KeyError, OverflowError):
        raise Refused(f"its games' generator state (rng) is not a {fresh['bit_generator']} state") from None
    return rng


def _check_generator(array: np.ndarray) -> None:
    """The minibatch generator's state, tried on a scratch torch generator."""
    try:
        torch.Generator().set_state(torch.from_numpy(np.array(array)))
    except RuntimeError:
        raise Refused("its minibatch generator's state is not a torch generator's") from None
