"""cuopt: a command-line CUDA kernel optimizer."""
from __future__ import annotations

__version__ = "0.1.0"
