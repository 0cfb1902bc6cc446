"""The search trainer's learner: the value network in torch, its regression on a batch's targets, and its numpy copy.

The network is :class:`yacht_agents.search.ValueNetwork`'s (relu hidden layers, one output): solo its output is
the points to come in units of :data:`~yacht_agents.search.POINTS_SCALE`, fitted by squared error; at a table a
logit, fitted to the win share by binary cross-entropy (a soft target), and with auxiliary outputs (``aux_outputs``)
also every seat's points still to come, fitted by squared error (weighted by ``aux_weight``) from the same hidden
layers; the network played and saved is the first output alone. With the race (encoding 3, ``features`` 3) the
value's logit is the network's output plus its input's last column, the race's logit, and the value's output starts
at zero (its last layer's row zeroed), so the fresh network plays the race itself. Adam, its step falling linearly from
``learning_rate`` to ``learning_rate_final`` over the run's budget; minibatches drawn by the learner's own torch
generator, so a run is the same bit for bit on the CPU, stopped and resumed or not.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from yacht_agents.search import POINTS_SCALE, ValueNetwork, ValueSpec, layer_shapes


class Learner:
    """The network being trained, its optimizer and its minibatch generator.

    Args:
        spec: The network (:class:`~yacht_agents.search.ValueSpec`).
        seed: Seeds the fresh weights and the minibatch order.
        learning_rate: Adam's step size at the start.
        device: Torch's device (``cpu``, ``cuda``, ...).
        solo: The solo network ``spec`` carries (``spec.solo_net_arch``; fixed: it is not trained here), or ``None``.
        aux_outputs: Outputs beside the value, trained by :meth:`fit`'s ``aux`` (a table's seats: their points to come)
            and never saved in :meth:`network`; 0: none.
    """

    def __init__(
        self,
        spec: ValueSpec,
        seed: int,
        learning_rate: float,
        device: str = "cpu",
        solo: ValueNetwork | None = None,
        aux_outputs: int = 0,
    ) -> None:
        self.spec, self.device, self.solo = spec, torch.device(device), solo
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        shapes = layer_shapes(spec)
        shapes[-1] = (shapes[-1][0], shapes[-1][1] + aux_outputs)
        for i, (a, b) in enumerate(shapes):
            layers.append(nn.Linear(a, b))
            if i < len(shapes) - 1:
                layers.append(nn.ReLU())
        self.model = nn.Sequential(*layers).to(self.device)
        self.race = spec.features > 2 and spec.players > 1
        if self.race:  # the fresh network's value is the race's: it learns what to add to it
            with torch.no_grad():
                layers[-1].weight[0].zero_()
                layers[-1].bias[0].zero_()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=learning_rate)
        self.generator = torch.Generator().manual_seed(seed + 1)

    def network(self) -> ValueNetwork:
        """The current weights as the numpy network the agent plays with: the value output alone."""
        linear = [m for m in self.model if isinstance(m, nn.Linear)]
        layers = [(m.weight.detach().cpu().numpy().T.copy(), m.bias.detach().cpu().numpy().copy()) for m in linear]
        w, b = layers[-1]
        layers[-1] = (np.ascontiguousarray(w[:, :1]), b[:1].copy())
        return ValueNetwork(self.spec, layers, self.solo)

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        epochs: int,
        batch_size: int,
        learning_rate: float,
        aux: np.ndarray | None = None,
        aux_weight: float = 0.0,
    ) -> float:
        """``epochs`` passes of minibatch steps over ``(x, y)`` (and the auxiliary outputs' targets ``aux``, ``(m,
        aux_outputs)`` points, weighted by ``aux_weight``); returns the value's mean loss of the last pass.
        """
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        inputs = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(self.device)
        table = self.spec.players > 1
        targets = torch.from_numpy(np.asarray(y / (1.0 if table else POINTS_SCALE), dtype=np.float32)).to(self.device)
        extra = None
        if aux is not None:
            extra = torch.from_numpy(np.asarray(aux / POINTS_SCALE, dtype=np.float32)).to(self.device)
        loss_of = nn.BCEWithLogitsLoss() if table else nn.MSELoss()
        last = 0.0
        for _ in range(epochs):
            order = torch.randperm(len(inputs), generator=self.generator).to(self.device)
            total, count = 0.0, 0
            for first in range(0, len(order), batch_size):
                at = order[first : first + batch_size]
                out = self.model(inputs[at])
                value = out[:, 0] + inputs[at, -1] if self.race else out[:, 0]
                value_loss = loss_of(value, targets[at])
                loss = value_loss
                if extra is not None:
                    loss = loss + aux_weight * nn.functional.mse_loss(out[:, 1:], extra[at])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                total += value_loss.item() * len(at)
                count += len(at)
            last = total / max(count, 1)
        return last

    def is_finite(self) -> bool:
        """Whether every weight is finite (no NaN or inf)."""
        return all(bool(torch.isfinite(value).all()) for value in self.model.state_dict().values())

    def state_arrays(self) -> dict[str, np.ndarray]:
        """Everything of the learner a checkpoint keeps, as arrays: weights, Adam's moments and steps, the generator."""
        arrays = {f"model/{k}": v.detach().cpu().numpy() for k, v in self.model.state_dict().items()}
        state = self.optimizer.state_dict()
        for i, slot in state["state"].items():
            for name, value in slot.items():
                arrays[f"adam/{i}/{name}"] = (
                    value.detach().cpu().numpy() if torch.is_tensor(value) else np.asarray(value)
                )
        arrays["generator"] = self.generator.get_state().numpy()
        return arrays

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Restores :meth:`state_arrays`.

        Raises:
            ValueError: arrays that do not fit this network.
        """
        model = {}
        for key, like in self.model.state_dict().items():
            array = arrays.get(f"model/{key}")
            if array is None or array.shape != tuple(like.shape):
                raise ValueError(f"model/{key} is missing or does not fit this run's network {tuple(like.shape)}")
            model[key] = torch.from_numpy(np.array(array, dtype=np.float32))
        self.model.load_state_dict(model)
        params = list(self.model.parameters())
        slots = {}
        for i, param in enumerate(params):
            found = {k.rsplit("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f"adam/{i}/")}
            if not found:
                continue
            if set(found) != {"step", "exp_avg", "exp_avg_sq"}:
                raise ValueError(f"adam/{i} is not Adam's state")
            slots[i] = {
                "step": torch.tensor(float(found["step"]), dtype=torch.float32),
                "exp_avg": torch.from_numpy(np.array(found["exp_avg"], dtype=np.float32)).to(self.device),
                "exp_avg_sq": torch.from_numpy(np.array(found["exp_avg_sq"], dtype=np.float32)).to(self.device),
            }
            if slots[i]["exp_avg"].shape != param.shape:
                raise ValueError(f"adam/{i} does not fit this run's network")
        state = self.optimizer.state_dict()
        state["state"] = slots
        self.optimizer.load_state_dict(state)
        generator = arrays.get("generator")
        if generator is None:
            raise ValueError("it holds no minibatch generator")
        self.generator.set_state(torch.from_numpy(np.array(generator, dtype=np.uint8)))
