"""The turn written once: the row passes of yacht_env.turn_rows, the duel's level kernels on an array backend, and
the numpy and torch builds differing only in the backend they pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from yacht_env import duel
from yacht_env import rules as R
from yacht_env import turn_rows as T
from yacht_env.duel import accel, builder, levels
from yacht_env.duel.levels import KINDS, TABLES, Turn

SMALL = R.Rules(name="ones-threes-yacht", categories=("ones", "threes", "yacht"))


def _pick_values(columns: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((R.NUM_ROLLS, columns))


def test_the_turn_of_one_table_is_the_turn_followed_and_valued_by_itself():
    """Playing by a table's own values and reading the same values back is the max turn, bit for bit."""
    values = _pick_values(40, seed=0)
    for rolls_left in (1, 2, R.ROLLS_PER_TURN):
        alone = T.turn_values((values,), rolls_left)
        followed = T.turn_values((values.copy(), values.copy()), rolls_left)
        np.testing.assert_array_equal(followed, alone)


def test_the_turn_start_is_the_first_roll_over_the_best_of_keeping_and_stopping():
    """``S = FIRST_ROLL @ max(best_keeps(EK_2), V0)``, with ``EK_2`` as :func:`turn_values` gives it."""
    values = _pick_values(7, seed=1)
    keeps = T.turn_values((values,), 2)  # EK_2
    (best,) = T.best_keeps((keeps.copy(),))
    expected = T.FIRST_ROLL @ np.maximum(best, values)
    np.testing.assert_allclose(T.turn_values((values,), R.ROLLS_PER_TURN), expected, rtol=0, atol=1e-15)
    # EK of a constant is that constant; the turn of a constant is that constant.
    flat = np.full((R.NUM_ROLLS, 3), 0.25)
    np.testing.assert_allclose(T.expected_keeps(flat), 0.25, atol=1e-15)
    np.testing.assert_allclose(T.turn_values((flat,), R.ROLLS_PER_TURN), 0.25, atol=1e-15)


def test_the_torch_backend_runs_the_same_passes():
    torch = pytest.importorskip("torch")
    xp = accel.TorchArrays(torch.device("cpu"))
    values = _pick_values(30, seed=2)
    decide = _pick_values(30, seed=3)
    for planes in ((values,), (decide, values)):
        for rolls_left in (1, 2, R.ROLLS_PER_TURN):
            on_numpy = T.turn_values(tuple(p.copy() for p in planes), rolls_left)
            on_torch = T.turn_values(tuple(torch.as_tensor(p) for p in planes), rolls_left, xp)
            np.testing.assert_allclose(xp.host(on_torch), on_numpy, rtol=0, atol=1e-13)


def test_the_kinds_of_solve_are_one_table_of_named_steps():
    assert TABLES == {"equilibrium": ("E",), "best_response": ("A", "B"), "evaluation": ("P", "Q")}
    assert [step.turn for step in KINDS["evaluation"]] == [Turn.FOLLOW, Turn.POLICY]
    for steps in KINDS.values():  # every table a step reads is one its kind writes
        assert {step.below for step in steps} == {step.table for step in steps}
    layout = duel.Layout(SMALL)
    below = levels.solve_level(layout, 0, None, dtype=np.float64)
    with pytest.raises(ValueError, match="a policy turn needs its outcomes"):
        levels.solve_level(layout, 1, below, Turn.POLICY)
    with pytest.raises(ValueError, match="a follow turn needs its strategy"):
        levels.solve_level(layout, 1, below, Turn.FOLLOW)


# --------------------------------------------------------------------------------------------------
# A reader's test: the device build is the numpy build with another backend
# --------------------------------------------------------------------------------------------------
def test_accel_holds_only_the_device_choosing_it_and_its_array_operations():
    """No recurrence in accel.py: no loop, no turn, no table of the rules; its backend has numpy's methods only."""
    tree = ast.parse(Path(accel.__file__).read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.For | ast.While | ast.comprehension)]
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    assert defined == {"device_for", "arrays_for", "TorchArrays"}
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported <= {"annotations", "NUMPY", "Arrays"}
    methods = {name for name in vars(accel.TorchArrays) if not name.startswith("_")}
    assert methods <= {name for name in vars(T.Arrays) if not name.startswith("_")}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_numpy_and_torch_builds_differ_only_in_the_backend_they_pass(kind, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    layout, outcomes = duel.Layout(SMALL), duel._opponent(SMALL, "optimal")[1]
    strategy = None
    if kind == "evaluation":
        done = builder.build(tmp_path / "E", layout, "equilibrium", "k", progress=False, workers=1, dtype=np.float64)
        files = [done["levels"][f"E{n:02d}"]["file"] for n in range(layout.num_levels)]
        strategy = [np.load(tmp_path / "E" / file, mmap_mode="r") for file in files]
    calls = {}
    for device in ("numpy", "cpu"):
        seen = calls[device] = []

        def spy(layout, n, below, turn, *, xp, runs, seen=seen, **rest):
            level = layout.level(n)
            starts, ends = [run[0] for run in runs], [run[1] for run in runs]
            assert starts == [0, *ends[:-1]] and ends[-1] == level.num_states  # the whole level, in order
            seen.append((n, turn, type(xp), {k: v is not None for k, v in rest.items()}))
            return levels.solve_level(layout, n, below, turn, xp=xp, runs=runs, **rest)

        monkeypatch.setattr(builder, "solve_level", spy)
        fixed = None if kind == "equilibrium" else outcomes
        manifest = builder.build(tmp_path / device, layout, kind, "k", fixed, progress=False, workers=1,
                                 dtype=np.float64, device=device, strategy=strategy)  # fmt: skip
        assert manifest["device"] == device
    backends = {device: {call[2] for call in seen} for device, seen in calls.items()}
    assert backends == {"numpy": {T.Arrays}, "cpu": {accel.TorchArrays}}
    assert [call[:2] + call[3:] for call in calls["numpy"]] == [call[:2] + call[3:] for call in calls["cpu"]]
    assert len(calls["numpy"]) == len(TABLES[kind]) * layout.num_levels


def test_the_workers_take_the_turn_by_name(tmp_path):
    from yacht_env.duel.worker import Workers

    layout = duel.Layout(SMALL)
    level = layout.level(2)
    np.save(tmp_path / "one.npy", levels.solve_level(layout, 1, levels.solve_level(layout, 0, None, dtype=np.float64)))
    below = np.load(tmp_path / "one.npy", mmap_mode="r")
    out = np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float64, (level.num_values,))
    with Workers(SMALL, None, 1) as pool:
        pool.solve_level(2, builder.tasks(level, 1), below, Turn.MAX, None, out)
    np.testing.assert_array_equal(out, levels.solve_level(layout, 2, below, Turn.MAX, dtype=np.float64))


def test_a_solve_computes_the_opponents_turn_outcomes_once(tmp_path, monkeypatch):
    from yacht_env import distributions as D

    duel.solve(SMALL, "optimal", precision="float64", cache_dir=tmp_path)
    calls = []
    original = D.turn_outcomes
    monkeypatch.setattr(D, "turn_outcomes", lambda *args: calls.append(args) or original(*args))
    duel._MEMO.clear()
    duel.solve(SMALL, "optimal", precision="float64", cache_dir=tmp_path, build_missing=False)  # as DuelAgent does
    assert len(calls) == 1
