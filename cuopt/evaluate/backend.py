"""The GPU backend interface used inside the worker process, and its registry."""
from __future__ import annotations

import importlib
from typing import Any, Protocol, Sequence

import numpy as np

BACKENDS: dict[str, str] = {
    "pycuda": "cuopt.evaluate.pycuda_backend:PycudaBackend",
}


class GpuError(Exception):
    """A CUDA error; `sticky` when the context is unusable afterwards (faults)."""

    def __init__(self, message: str, sticky: bool) -> None:
        super().__init__(message)
        self.sticky = sticky


class Backend(Protocol):
    """Load, allocate, launch and time on one GPU. Lives in the worker process only."""

    def device_info(self) -> dict[str, Any]: ...
    def load(self, cubin: str, symbol: str, arg_format: str, dynamic_shared: int) -> Any: ...
    def alloc(self, nbytes: int) -> Any: ...
    def free(self, buf: Any) -> None: ...
    def upload(self, buf: Any, host: np.ndarray) -> None: ...
    def download(self, buf: Any, host: np.ndarray) -> None: ...
    def copy(self, dst: Any, src: Any, nbytes: int) -> None: ...
    def fill(self, buf: Any, byte: int, nbytes: int) -> None: ...
    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int, args: Sequence[Any]) -> None: ...
    def timed_launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
                     args: Sequence[Any]) -> float: ...
    def timed_copy(self, dst: Any, src: Any, nbytes: int) -> float: ...
    def synchronize(self) -> None: ...
    def close(self) -> None: ...


def create(name: str, **options: Any) -> Backend:
    """Instantiate a backend by registry name or `module:Class` path."""
    target = BACKENDS.get(name, name)
    if ":" not in target:
        raise ValueError(f"unknown GPU backend {name!r}; known: {', '.join(BACKENDS)}")
    module, attr = target.split(":", 1)
    return getattr(importlib.import_module(module), attr)(**options)
