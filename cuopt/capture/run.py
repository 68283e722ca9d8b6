"""Run the user's program as it is (their working directory, arguments and environment, output
passed through), with the injection library and its settings added to the environment."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

from cuopt.errors import CuoptError, NoGpuError


def check_command(command: list[str]) -> str:
    """The executable `command` starts (CuoptError when it is not found or cannot be run)."""
    if not command:
        raise CuoptError("no command to run: give it after --, e.g. cuopt capture prog.cu -- ./prog")
    name = command[0]
    if os.sep not in name:
        found = shutil.which(name)
        if found is None:
            raise CuoptError(f"{name}: command not found")
        return found
    path = Path(name)
    if not path.exists():
        raise CuoptError(f"{name}: no such file")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise CuoptError(f"{name}: not an executable file")
    return name


def require_driver() -> None:
    """NoGpuError when this machine has no CUDA driver: a capture runs the program on a GPU."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise NoGpuError("no CUDA driver (libcuda.so.1) on this machine: cuopt capture runs the program on "
                         "a GPU") from None


def run(command: list[str], library: Path, settings: dict[str, str]) -> int:
    """Run `command` with the injection library loaded; its exit status (negative: killed by that
    signal). Its stdin, stdout and stderr are cuopt's."""
    env = dict(os.environ)
    env.update(settings)
    env["CUDA_INJECTION64_PATH"] = str(library)
    try:
        return subprocess.run(command, env=env).returncode
    except OSError as exc:
        raise CuoptError(f"{command[0]}: cannot run: {exc.strerror}") from None
