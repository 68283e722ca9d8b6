"""Where the CUDA toolkit is installed: nvcc, and beside it the tools that ship with it."""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def find_nvcc() -> str | None:
    """nvcc on PATH, else under $CUDA_HOME, $CUDA_PATH or /usr/local/cuda; None when there is none."""
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and Path(root, "bin", "nvcc").is_file():
            return str(Path(root, "bin", "nvcc"))
    return None
