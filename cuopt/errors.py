"""The one error type the CLI catches and prints as a single line."""
from __future__ import annotations


class CuoptError(Exception):
    """A user-facing error: one line of text and the process exit code."""

    exit_code: int = 1

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class NoGpuError(CuoptError):
    """No usable CUDA GPU (or no pycuda) on this machine."""

    exit_code = 2


class ModelError(CuoptError):
    """A learned policy file that cannot be used: missing, not a cuopt model, or trained for other
    features. `cuopt optimize` falls back to the heuristic policy with a warning."""
