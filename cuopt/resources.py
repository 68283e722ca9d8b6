"""Locate the data shipped with cuopt (rules/, models/), installed or in a checkout."""
from __future__ import annotations

import os
from pathlib import Path

from cuopt.errors import CuoptError

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the directory `name` ("rules" or "models"): packaged copy first, then the checkout."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise CuoptError(f"cannot find cuopt's {name}/ directory; reinstall cuopt")


def cache_dir() -> Path:
    """Per-user cache (compiled cubins, device measurements); $CUOPT_CACHE_DIR overrides it."""
    root = os.environ.get("CUOPT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cuopt"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path
