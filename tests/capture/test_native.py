"""The injection library: built with the toolkit's compiler, cached, loadable, and a build failure
as one line."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuopt.capture import native
from cuopt.errors import CuoptError


def _toolkit() -> bool:
    try:
        native.find_toolkit()
        return True
    except CuoptError:
        return False


requires_cupti = pytest.mark.skipif(not _toolkit(), reason="CUPTI (cupti.h, libcupti.so) is not installed")


@requires_cupti
def test_built_once_and_exports_the_injection_entry_point() -> None:
    lib = native.library()
    assert lib.is_file() and native.library() == lib
    assert hasattr(ctypes.CDLL(str(lib)), "InitializeInjection")


@requires_cupti
def test_without_settings_it_does_nothing_and_without_a_driver_it_logs(tmp_path: Path) -> None:
    lib = native.library()
    code = "import ctypes, sys; sys.exit(ctypes.CDLL(sys.argv[1]).InitializeInjection())"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUOPT_CAPTURE_")}
    assert subprocess.run([sys.executable, "-c", code, str(lib)], env=env).returncode == 1
    assert list(tmp_path.iterdir()) == []
    try:
        ctypes.CDLL("libcuda.so.1")
        return  # with a driver, InitializeInjection would subscribe: the GPU tests cover that
    except OSError:
        pass
    env["CUOPT_CAPTURE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", code, str(lib)], env=env, capture_output=True)
    assert proc.returncode == 1 and proc.stdout == b"" and proc.stderr == b""
    assert (tmp_path / "capture.log").read_text().startswith("cannot open libcuda.so.1")
    assert not (tmp_path / "ready").exists()


@requires_cupti
def test_a_build_failure_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "inject.cpp"
    broken.write_text("int InitializeInjection(void) { return missing; }\n")
    monkeypatch.setattr(native, "SOURCE", broken)
    with pytest.raises(CuoptError) as err:
        native.library()
    message = str(err.value)
    assert message.startswith("building the capture library failed (") and "missing" in message
    assert "\n" not in message


def test_no_cupti_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(native, "_roots", lambda: [tmp_path])
    with pytest.raises(CuoptError, match=r"^CUPTI not found \(cupti.h and libcupti.so, which ship with the CUDA "
                                         r"toolkit\) in .*; set CUDA_HOME to the toolkit$"):
        native.find_toolkit()
