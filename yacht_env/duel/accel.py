"""The two-player solve on an accelerator: choosing the torch device and the array backend that runs the kernels
there.

The kernels (:mod:`yacht_env.duel.levels`, :mod:`yacht_env.duel.turn`, :mod:`yacht_env.turn_rows`) are written
once over a small array backend; :class:`TorchArrays` is torch's, on any torch device, with the rules' tables
uploaded once, so that a level runs on a GPU in chunks of many states at once. :func:`device_for` picks the
device: CUDA (or Apple's MPS) where torch sees one, else ``None``, and the build stays on numpy. torch is optional
(the ``train`` extra has it); nothing here imports it unless a device is asked for.
"""

from __future__ import annotations

import numpy as np

from yacht_env.turn_rows import NUMPY, Arrays

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


def arrays_for(name: str = "auto") -> Arrays:
    """The array backend of :func:`device_for` ``(name)``: numpy's (:data:`~yacht_env.turn_rows.NUMPY`) or torch's
    on that device.
    """
    device = device_for(name)
    return NUMPY if device is None else TorchArrays(device)


class TorchArrays(Arrays):
    """The kernels' array operations in torch, on one device; tables are uploaded once, float types are torch's.

    Args:
        device: A torch device.
    """

    def __init__(self, device):
        import torch

        self.torch, self.device, self.float32, self.name = torch, device, torch.float32, str(device)
        self._tables: dict[tuple, tuple] = {}  # (id, dtype) -> (the host array, kept alive so its id stays its)

    def table(self, array: np.ndarray, dtype=None):
        """The table on the device, uploaded at its first use."""
        key = (id(array), dtype)
        if key not in self._tables:
            self._tables[key] = (array, self.asarray(array, dtype))
        return self._tables[key][1]

    def asarray(self, array: np.ndarray, dtype=None):
        """Host data on the device (uint16 values as int32, which torch indexes and converts)."""
        array = np.asarray(array)
        if array.dtype == np.uint16 or not array.flags.writeable:  # torch takes arrays it may write to
            array = array.astype(np.int32 if array.dtype == np.uint16 else array.dtype)
        return self.torch.as_tensor(array, device=self.device, dtype=dtype)

    def host(self, array) -> np.ndarray:
        """The tensor in host memory, as numpy."""
        return array.cpu().numpy()

    def empty(self, shape: tuple[int, ...], dtype):
        """As ``torch.empty`` on the device."""
        return self.torch.empty(shape, dtype=dtype, device=self.device)

    def full(self, shape: tuple[int, ...], fill: float, dtype):
        """As ``torch.full`` on the device."""
        return self.torch.full(shape, fill, dtype=dtype, device=self.device)

    def maximum(self, a, b, out=None):
        """As ``torch.maximum``."""
        return self.torch.maximum(a, b, out=out)

    def multiply(self, a, b, out=None):
        """As ``torch.mul``."""
        return self.torch.mul(a, b, out=out)

    def where(self, condition, a, b):
        """As ``torch.where``."""
        return self.torch.where(condition, a, b)

    def copyto(self, out, source, where) -> None:
        """``out[where] = source[where]``, in place."""
        out.copy_(self.torch.where(where, source, out))

    def clip(self, a, low, high):
        """``a`` between ``low`` and ``high`` (a tensor)."""
        return self.torch.minimum(self.torch.clamp(a, min=low), high)

    def astype(self, a, dtype):
        """``a`` as ``dtype``."""
        return a.to(dtype)

    def is_float(self, a) -> bool:
        """Whether ``a`` holds floats."""
        return a.is_floating_point()

    def arange(self, start: int, stop: int):
        """As ``torch.arange`` on the device."""
        return self.torch.arange(start, stop, device=self.device)

    def repeat(self, a, counts):
        """As ``torch.repeat_interleave``."""
        return self.torch.repeat_interleave(a, counts)
