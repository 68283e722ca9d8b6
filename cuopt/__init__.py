"""cuopt: a command-line CUDA kernel optimizer."""
from __future__ import annotations

__version__ = "0.4.0"

__all__ = ["KernelResult", "bench", "optimize"]


def __getattr__(name: str) -> object:
    """The Python API (cuopt.api), imported when first used so that `import cuopt` stays light."""
    if name in __all__:
        from cuopt import api  # deferred: `import cuopt` stays light; the API loads on first use

        return getattr(api, name)
    raise AttributeError(f"module 'cuopt' has no attribute {name!r}")
