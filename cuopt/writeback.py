"""Write files so that a crash or Ctrl-C never leaves a half-written file."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cuopt.errors import CuoptError


def check_destination(path: Path, option: str) -> None:
    """Refuse an output file whose directory does not exist, before any work is done."""
    if not Path(path).parent.is_dir():
        raise CuoptError(f"{option} {path}: no directory {Path(path).parent} (create it first)")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over `path`."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    except OSError as exc:
        raise CuoptError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
