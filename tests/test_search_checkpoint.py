"""The search trainer's checkpoints read back as data: bounded before they are read, every array's name, shape and
dtype the run's own, the scalars of their kind and range, every float finite; anything else one line, and
``train.py --resume`` of it one line and exit status 2.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from helpers import run_script, write_config

from yacht_lab.training.config import from_dict, validate

pytest.importorskip("torch")

SEARCH = {
    "rules": "standard",
    "reward": "score",
    "total_timesteps": 1440,
    "max_minutes": 5,
    "eval": {"every_timesteps": 960, "games": 10, "seed": 1000},
    "checkpoint_every_timesteps": 480,
    "search": {"players": 1, "net_arch": [16], "tables": 40, "epochs": 1, "batch_size": 64},
}


def fresh_state():
    from yacht_lab.training.search.trainer import SearchState

    return SearchState(validate(from_dict(SEARCH)))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A checkpoint of one iteration (Adam's state made by real steps), as its bytes."""
    state = fresh_state()
    rng = np.random.default_rng(0)
    x = rng.random((300, state.learner.model[0].in_features), dtype=np.float32)
    state.loss = state.learner.fit(x, rng.random(300) * 100, 1, 64, 1e-3)
    state.iteration = 1
    path = tmp_path_factory.mktemp("checkpoint") / "step_480.npz"
    state.save_checkpoint(path)
    return path.read_bytes()


def arrays_of(content: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(content), allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def with_arrays(**changes):
    """A damage: the good checkpoint with arrays replaced (``None``: removed; a function: of the array it replaces)."""

    def damage(content: bytes) -> bytes:
        arrays = arrays_of(content)
        arrays.update({k: v(arrays[k]) if callable(v) else v for k, v in changes.items()})
        buffer = io.BytesIO()
        np.savez(buffer, **{k: v for k, v in arrays.items() if v is not None})
        return buffer.getvalue()

    return damage


def flipped(content: bytes) -> bytes:
    """One byte of the first weight's data changed (its CRC no longer matches)."""
    at = content.index(b"model/0.weight.npy") + 200
    return content[:at] + bytes([content[at] ^ 0xFF]) + content[at + 1 :]


def bomb(content: bytes) -> bytes:
    """A small file whose member expands to 64 MiB (deflated zeros), declared honestly in its directory."""
    buffer = io.BytesIO()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2**24,)})
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("model/0.weight.npy", "w") as out:
        out.write(header.getvalue())
        chunk = bytes(2**20)
        for _ in range(64):
            out.write(chunk)
    return buffer.getvalue()


def huge_header(content: bytes) -> bytes:
    """A member whose .npy header declares 2**40 floats over a few bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2**40,)})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays_of(content).items():
            member = io.BytesIO()
            np.lib.format.write_array(member, array)
            data = header.getvalue() + bytes(64) if name == "model/0.bias" else member.getvalue()
            archive.writestr(f"{name}.npy", data)
    return buffer.getvalue()


def bad_rng(content: bytes) -> bytes:
    state = json.loads(str(arrays_of(content)["rng"]))
    state["state"]["state"] = -5
    return with_arrays(rng=np.str_(json.dumps(state)))(content)


DAMAGES = {
    "empty file": (lambda c: b"", "not a zip file"),
    "cut in half": (lambda c: c[: len(c) // 2], "not a zip file"),
    "a flipped byte": (flipped, "CRC"),
    "2**40 floats declared": (huge_header, r"declares a \(1099511627776,\) array"),
    "a zip bomb": (bomb, "expands to"),
    "not a checkpoint": (with_arrays(format=np.str_("something else")), "not a 'yacht-rl search checkpoint 1'"),
    "iteration -3": (with_arrays(iteration=np.int64(-3)), "its iteration is -3"),
    "iteration 1.5": (with_arrays(iteration=np.float64(1.5)), "no iteration"),
    "a NaN loss": (with_arrays(loss=np.float64("nan")), "its loss is nan"),
    "a negative loss": (with_arrays(loss=np.float64(-1.0)), "its loss is -1.0"),
    "a NaN weight": (with_arrays(**{"model/0.weight": lambda a: np.full_like(a, np.nan)}), "not finite"),
    "a float64 weight": (
        with_arrays(**{"model/0.weight": lambda a: a.astype(np.float64)}),
        r"model/0.weight is missing or does not fit",
    ),
    "a weight of another shape": (with_arrays(**{"model/0.weight": lambda a: a[:, :-1]}), "does not fit"),
    "a missing weight": (with_arrays(**{"model/2.bias": None}), "model/2.bias is missing"),
    "Adam's moments of another shape": (
        with_arrays(**{"adam/0/exp_avg_sq": lambda a: np.zeros((a.shape[0], a.shape[1] + 1), a.dtype)}),
        r"adam/0/exp_avg_sq is missing or does not fit",
    ),
    "Adam's state missing": (with_arrays(**{"adam/1/step": None}), "adam/1/step is missing"),
    "a negative Adam step": (with_arrays(**{"adam/0/step": np.float32(-4)}), "Adam step counts"),
    "a fractional Adam step": (with_arrays(**{"adam/0/step": np.float32(4.5)}), "Adam step counts"),
    "an infinite Adam moment": (
        with_arrays(**{"adam/2/exp_avg": lambda a: np.full_like(a, np.inf)}),
        "adam/2/exp_avg is not finite",
    ),
    "a bad minibatch generator": (with_arrays(generator=np.zeros_like), "minibatch generator"),
    "a short minibatch generator": (with_arrays(generator=np.zeros(10, np.uint8)), "generator is missing or does not"),
    "a bad games' generator": (bad_rng, "games' generator state"),
    "games' generator not JSON": (with_arrays(rng=np.str_("{")), "not JSON"),
    "an array too many": (with_arrays(extra=np.zeros(3, np.float32)), r"it has \d+ members"),
    "an object array": (with_arrays(iteration=np.array([{}], dtype=object)), "plain numbers"),
}


@pytest.mark.parametrize("case", list(DAMAGES))
def test_a_damaged_checkpoint_is_one_line(tmp_path, good, case):
    damage, message = DAMAGES[case]
    path = tmp_path / "step_480.npz"
    try:
        path.write_bytes(damage(good))
    except ValueError:  # numpy itself will not write it (an object array without pickle)
        pytest.skip("numpy writes no such file")
    state = fresh_state()
    before = {k: v.copy() for k, v in state.learner.state_arrays().items()}
    with pytest.raises(ValueError, match=message) as error:
        state.load_checkpoint(path)
    assert str(error.value).startswith(f"cannot resume from {str(path)!r}: ")
    assert "\n" not in str(error.value)
    after = state.learner.state_arrays()
    assert state.iteration == 0 and all(np.array_equal(before[k], after[k]) for k in before)  # nothing changed


def test_a_good_checkpoint_loads_whole(tmp_path, good):
    path = tmp_path / "step_480.npz"
    path.write_bytes(good)
    state = fresh_state()
    state.load_checkpoint(path)
    saved = arrays_of(good)
    assert state.iteration == 1 and state.loss == float(saved["loss"])
    for name, array in state.learner.state_arrays().items():
        np.testing.assert_array_equal(array, saved[name])


def test_every_flipped_byte_loads_or_is_one_line(tmp_path, good):
    path = tmp_path / "step_480.npz"
    for at in range(0, len(good), 97):
        path.write_bytes(good[:at] + bytes([good[at] ^ 0x5A]) + good[at + 1 :])
        try:
            fresh_state().load_checkpoint(path)
        except ValueError as error:
            assert "\n" not in str(error)


def test_train_py_resume_of_a_damaged_checkpoint_is_one_line(tmp_path, good):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    write_config(run / "config.yaml", SEARCH)
    (run / "checkpoints" / "step_480.npz").write_bytes(with_arrays(iteration=np.int64(-3))(good))
    before = sorted(p.name for p in run.rglob("*"))
    done = run_script("train.py", "--resume", str(run), "--no-progress")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "its iteration is -3" in done.stderr, done.stderr
    assert sorted(p.name for p in run.rglob("*")) == before
