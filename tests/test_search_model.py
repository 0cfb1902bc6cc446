"""A ``search:`` model's weights are checked as the agent plays them: finite as float32, and through the network on a
probe batch; a model that would play garbage is one line.
"""

from __future__ import annotations

import numpy as np
import pytest

from yacht_agents import make_agent
from yacht_agents.search import ValueNetwork, ValueSpec, layer_shapes, load_value, save_value


def network(players: int = 1) -> ValueNetwork:
    spec = ValueSpec("standard", players, (8,))
    rng = np.random.default_rng(0)
    layers = [
        (rng.normal(0, 0.3, (a, b)).astype(np.float32), rng.normal(0, 0.1, b).astype(np.float32))
        for a, b in layer_shapes(spec)
    ]
    return ValueNetwork(spec, layers)


def saved_with(tmp_path, players: int = 1, **arrays) -> str:
    """A saved network whose arrays are replaced by ``arrays`` (functions of the array they replace)."""
    path = save_value(tmp_path / "v.npz", network(players))
    with np.load(path) as data:
        stored = {name: data[name] for name in data.files}
    stored.update({name: change(stored[name]) for name, change in arrays.items()})
    np.savez(path, **stored)
    return str(path)


@pytest.mark.parametrize("players", [1, 2])
@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"w0": lambda w: np.full(w.shape, 1e300, np.float64)}, r"'w0' is not a finite \(\d+, 8\) float32 array"),
        ({"b1": lambda b: np.full(b.shape, -1e39, np.float64)}, r"'b1' is not a finite \(1,\) float32 array"),
        ({"w0": lambda w: np.abs(w) * np.float32(3e37), "w1": np.abs}, "layer 0 overflows float32"),
        ({"w1": lambda w: np.full(w.shape, 3e38, np.float32)}, "layer 1 overflows float32"),
    ],
)
def test_weights_finite_only_as_stored_are_one_line(tmp_path, players, arrays, message):
    path = saved_with(tmp_path, players, **arrays)
    with pytest.raises(ValueError, match=message) as error:
        make_agent(f"search:{path}", players=players)
    assert str(error.value).startswith(f"cannot read the search model {path!r}: ") and "\n" not in str(error.value)


def test_float64_weights_that_fit_float32_load_as_float32(tmp_path):
    path = saved_with(tmp_path, w0=lambda w: w.astype(np.float64))
    loaded = load_value(path)
    assert all(w.dtype == np.float32 and b.dtype == np.float32 for w, b in loaded.layers)
    np.testing.assert_array_equal(loaded.layers[0][0], network().layers[0][0])


@pytest.mark.parametrize("name", ["standard", "yahtzee", "selfplay_standard"])
def test_the_shipped_models_pass_the_probe(name):
    assert load_value(name).spec.rules in ("standard", "yahtzee")
