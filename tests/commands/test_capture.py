"""cuopt capture's bad input: one line each, nothing written."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from tests.conftest import SAMPLES, gpu_available

TRAINSTEP = SAMPLES / "programs" / "trainstep" / "trainstep.cu"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(TRAINSTEP, tmp_path)
    prog = tmp_path / "prog"
    prog.write_text("#!/bin/sh\necho ran\n")
    prog.chmod(0o755)
    (tmp_path / "data.txt").write_text("not a program\n")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _error(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["capture", *args])
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return result.exit_code, lines[0]


@pytest.mark.parametrize("args, message", [
    (["missing.cu", "--", "./prog"], "missing.cu: no such file"),
    (["trainstep.cu", "--kernel", "nope", "--", "./prog"],
     "--kernel nope: no __global__ kernel of that name in trainstep.cu (found: adamw_kernel, "),
    (["trainstep.cu", "--", "./absent"], "./absent: no such file"),
    (["trainstep.cu", "--", "no-such-command-anywhere"], "no-such-command-anywhere: command not found"),
    (["trainstep.cu", "--", "./data.txt"], "./data.txt: not an executable file"),
    (["trainstep.cu", "--", "./sub"], "./sub: not an executable file"),
    (["trainstep.cu"], "no command to run: give it after --, e.g. cuopt capture prog.cu -- ./prog"),
    (["--", "./prog"], "no .cu file given: cuopt capture FILE.cu... -- COMMAND [ARGS]..."),
    (["trainstep.cu", "--max-bytes", "lots", "--", "./prog"],
     "--max-bytes 'lots': expected a size such as 4096, 512M or 2GiB"),
    (["trainstep.cu", "--launches", "0", "--", "./prog"], "--launches 0: expected at least 1"),
    (["trainstep.cu", "--name", "../x", "--", "./prog"], "--name '../x': expected a plain directory name"),
])
def test_bad_input_is_one_line_and_writes_nothing(work: Path, args: list[str], message: str) -> None:
    code, line = _error(args)
    assert code == 1 and line.startswith(f"cuopt: error: {message}")
    assert not (work / ".cuopt").exists()


@pytest.mark.skipif(gpu_available(), reason="this machine has a GPU")
def test_without_a_gpu_capture_says_so(work: Path) -> None:
    try:
        import ctypes

        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is installed")
    except OSError:
        pass
    code, line = _error(["trainstep.cu", "--", "./prog"])
    assert (code, line) == (2, "cuopt: error: no CUDA driver (libcuda.so.1) on this machine: cuopt capture runs "
                               "the program on a GPU")
    assert not (work / ".cuopt").exists()
