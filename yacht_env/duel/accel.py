"""The two-player solve on an accelerator: the turn of :mod:`yacht_env.duel.turn` in torch, on any torch device.

The same steps and tables as the numpy kernels (the pick rows, the expected value of each kept multiset one fresh
die at a time, the best sub-multiset of each roll level by level), written for torch tensors so that a level runs
on a GPU in chunks of many states at once. :func:`device_for` picks the device: CUDA (or Apple's MPS) where torch
sees one, else ``None``, and the build stays on the numpy kernels. torch is optional (the ``train`` extra has it);
nothing here is imported unless a device is asked for.
"""

from __future__ import annotations

import functools

import numpy as np

from yacht_env import family_solver as F
from yacht_env.duel.layout import Layout, Level, chunks
from yacht_env.duel.turn import CLOSED, QUANT, pick_rows

#: Columns per chunk on a device: enough work per kernel launch to fill a GPU.
DEVICE_COLUMNS = 1 << 16


def device_for(name: str = "auto"):
    """The torch device to build on: ``"auto"`` (CUDA or MPS where present, else ``None``: numpy on the CPU),
    ``"cpu"`` (torch on the CPU), ``"cuda"``, ``"cuda:1"``, ... or ``"numpy"`` (``None``).

    Raises:
        ValueError: a device torch does not have, or torch missing for a device other than ``auto``/``numpy``.
    """
    if name == "numpy":
        return None
    try:
        import torch
    except ImportError:
        if name == "auto":
            return None
        raise ValueError(f"device {name!r} needs torch (pip install torch); 'numpy' builds without it") from None
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        return torch.device("mps") if mps is not None and mps.is_available() else None
    try:
        device = torch.device(name)
        torch.empty(1, device=device)
    except (RuntimeError, AssertionError) as error:
        raise ValueError(f"device {name!r} is not available here: {str(error).splitlines()[0]}") from None
    return device


class DeviceTurn:
    """The turn kernels on one torch device, with the rules' tables uploaded once.

    Args:
        layout: The game's layout.
        device: A torch device.
        dtype: ``numpy.float32`` or ``numpy.float64``.
    """

    def __init__(self, layout: Layout, device, dtype=np.float32):
        import torch

        self.torch, self.layout, self.device = torch, layout, device
        self.dtype = torch.float32 if dtype == np.float32 else torch.float64
        index = functools.partial(torch.as_tensor, device=device, dtype=torch.long)
        rows = pick_rows(layout.rules)
        self.points, self.starts, self.of_roll = index(rows.points), rows.start.tolist(), index(rows.of_roll)
        self.num_rows = len(rows.points)
        self.rank = index(layout.rank)
        self.spans = F._SIZE_SPANS
        self.supersets = index(F._SUPERSETS)
        self.subsets = [(lo, hi, index(children), prefixes) for lo, hi, children, prefixes in F._SUBSETS]
        self.roll_subsets = (index(F._ROLL_SUBSETS[0]), F._ROLL_SUBSETS[1])
        self.first_roll = torch.as_tensor(F._FIRST_ROLL, device=device, dtype=self.dtype)

    @functools.cache  # noqa: B019 (one DeviceTurn per build)
    def level(self, n: int) -> tuple:
        """Level ``n``'s index arrays on the device."""
        level = self.layout.level(n)
        index = functools.partial(self.torch.as_tensor, device=self.device, dtype=self.torch.long)
        return index(level.low), index(level.length), index(level.offset), index(level.movers), index(level.others)

    def _upload(self, values: np.ndarray):
        """A level's values on the device in the computation's float type (uint16 ones as stored / 65535)."""
        values = np.asarray(values)
        if not values.flags.writeable:  # a memory-mapped level: torch takes arrays it may write to
            values = np.array(values)
        if values.dtype == np.uint16:  # as after_picks reads them: times 1 / QUANT in the float type
            return self.torch.as_tensor(values.astype(np.int32), device=self.device).to(self.dtype) * (1 / QUANT)
        return self.torch.as_tensor(values, device=self.device).to(self.dtype)

    def columns(self, level: Level, s0: int, s1: int):
        """``(mover, other, lead)`` of the states ``[s0, s1)`` on the device (as :func:`builder.columns`)."""
        torch = self.torch
        low, length, offset, movers, others = self.level(level.n)
        state = torch.repeat_interleave(torch.arange(s0, s1, device=self.device), length[s0:s1])
        position = torch.arange(len(state), device=self.device) - (offset[state] - offset[s0])
        return movers[state // len(level.others)], others[state % len(level.others)], low[state] + position

    def after_picks(self, n: int, below, mover, other, lead):
        """:func:`yacht_env.duel.turn.after_picks` on the device (``below`` a device tensor of level ``n - 1``)."""
        torch = self.torch
        low, length, offset, _, others = self.level(n - 1)
        out = torch.full((self.num_rows, len(lead)), CLOSED, dtype=self.dtype, device=self.device)
        for c in range(self.layout.rules.num_categories):
            bit = 1 << c
            is_open = (mover & bit) != 0
            if not bool(is_open.any()):
                continue
            state = torch.where(is_open, self.rank[other] * len(others) + self.rank[mover & ~bit], 0)
            first = -lead - low[state]
            size, start = length[state], offset[state]
            at = first[None] - self.points[self.starts[c] : self.starts[c + 1], None]
            value = below[start + torch.minimum(torch.clamp(at, min=0), size - 1)]
            value = torch.where(at < 0, 0.0, torch.where(at >= size, 1.0, value)).to(self.dtype)
            out[self.starts[c] : self.starts[c + 1]] = torch.where(is_open, 1.0 - value, CLOSED).to(self.dtype)
        return out

    def best_of_rows(self, picks, of_roll):
        """:func:`yacht_env.duel.turn.best_of_rows` on the device."""
        value = picks[of_roll[:, 0]]
        for j in range(1, of_roll.shape[1]):
            self.torch.maximum(value, picks[of_roll[:, j]], out=value)
        return value

    def expected_keeps(self, values):
        """:func:`yacht_env.family_solver._expected_keeps` on the device."""
        torch = self.torch
        keeps = torch.empty((F.NUM_PROPER_KEPT, values.shape[1]), dtype=values.dtype, device=self.device)
        for size in range(4, -1, -1):
            lo, hi = self.spans[size]
            source = values if size == 4 else keeps
            total = source[self.supersets[lo:hi, 0]]
            for face in range(1, 6):
                total += source[self.supersets[lo:hi, face]]
            torch.mul(total, 1 / 6, out=keeps[lo:hi])
        return keeps

    def best_keeps(self, keeps):
        """:func:`yacht_env.family_solver._best_keeps` on the device."""
        torch = self.torch
        for lo, hi, children, prefixes in self.subsets:
            below = keeps[children[:, 0]]
            for c, count in enumerate(prefixes[1:], 1):
                torch.maximum(below[:count], keeps[children[:count, c]], out=below[:count])
            torch.maximum(keeps[lo:hi], below, out=keeps[lo:hi])
        children, prefixes = self.roll_subsets
        best = keeps[children[:, 0]]
        for c, count in enumerate(prefixes[1:], 1):
            torch.maximum(best[:count], keeps[children[:count, c]], out=best[:count])
        return best

    def turn_start(self, pick_value):
        """:func:`yacht_env.duel.turn.turn_start` on the device."""
        value = pick_value
        for _ in range(2):
            value = self.torch.maximum(self.best_keeps(self.expected_keeps(value)), pick_value)
        return self.first_roll @ value

    def follow(self, decide, value, decide_other, value_other) -> None:
        """:func:`yacht_env.duel.turn._follow` on the device (in place, ties keep the first)."""
        better = decide_other > decide
        decide.copy_(self.torch.where(better, decide_other, decide))
        value.copy_(self.torch.where(better, value_other, value))

    def follow_turn_start(self, decide, value, of_roll):
        """:func:`yacht_env.duel.turn.follow_turn_start` of :func:`~yacht_env.duel.turn.follow_best_of_rows`."""
        best, worth = decide[of_roll[:, 0]], value[of_roll[:, 0]]
        for j in range(1, of_roll.shape[1]):
            self.follow(best, worth, decide[of_roll[:, j]], value[of_roll[:, j]])
        pick, pick_worth = best, worth
        for _ in range(2):
            keep, keep_worth = self.expected_keeps(best), self.expected_keeps(worth)
            for lo, hi, children, prefixes in self.subsets:
                below, below_worth = keep[children[:, 0]], keep_worth[children[:, 0]]
                for c, count in enumerate(prefixes[1:], 1):
                    self.follow(
                        below[:count], below_worth[:count], keep[children[:count, c]], keep_worth[children[:count, c]]
                    )
                self.follow(keep[lo:hi], keep_worth[lo:hi], below, below_worth)
            children, prefixes = self.roll_subsets
            best, worth = keep[children[:, 0]], keep_worth[children[:, 0]]
            for c, count in enumerate(prefixes[1:], 1):
                self.follow(best[:count], worth[:count], keep[children[:count, c]], keep_worth[children[:count, c]])
            self.follow(best, worth, pick, pick_worth)
        return self.first_roll @ worth

    def solve_level(
        self, n: int, below: np.ndarray, outcomes: np.ndarray | None, strategy: np.ndarray | None = None
    ) -> np.ndarray:
        """:func:`yacht_env.duel.builder.solve_level` on the device: level ``n`` from level ``n - 1``'s values (with
        ``strategy``, the turn that table's max turn plays, valued by ``below``).
        """
        torch = self.torch
        level = self.layout.level(n)
        below_device = self._upload(below)
        plan = None if strategy is None else self._upload(strategy)
        out = np.empty(level.num_values, dtype=np.float32 if self.dtype == torch.float32 else np.float64)
        rows = pick_rows(self.layout.rules)
        for s0, s1 in chunks(level, DEVICE_COLUMNS):
            mover, other, lead = self.columns(level, s0, s1)
            picks = self.after_picks(n, below_device, mover, other, lead)
            mask = int(level.movers[s0 // len(level.others)])
            if plan is not None:
                is_open = [c for c in range(self.layout.rules.num_categories) if mask >> c & 1]
                decide = self.after_picks(n, plan, mover, other, lead)
                value = self.follow_turn_start(decide, picks, self.of_roll[:, is_open])
            elif outcomes is None:
                is_open = [c for c in range(self.layout.rules.num_categories) if mask >> c & 1]
                value = self.turn_start(self.best_of_rows(picks, self.of_roll[:, is_open]))
            else:
                weight = outcomes[mask, rows.category, rows.points]
                used = np.flatnonzero(weight > 0)
                weight = torch.as_tensor(weight[used], device=self.device, dtype=self.dtype)
                value = weight @ picks[torch.as_tensor(used, device=self.device)]
            out[level.offset[s0] : level.offset[s1]] = value.cpu().numpy()
        return out
