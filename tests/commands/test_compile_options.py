"""-I, -D and --nvcc-flag on the commands that read CUDA files, the spec's [compile] table that
`cuopt init` writes, and pyproject.toml [tool.cuopt]: a file including <util.h> from a sibling
utilities/ directory compiles only when one of them says where util.h is."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cuopt.cli import app

from tests.conftest import requires_nvcc

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KERNEL = """\
#include <util.h>
__global__ void scale(int n, const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = twice(x[i]) * FACTOR;
}
"""
NOT_FOUND = "k.cu:1:10: error: compile: util.h: No such file or directory"


def cuopt(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/utilities/util.h and tmp/kernels/k.cu (which needs it and FACTOR); the working
    directory is tmp/kernels."""
    (tmp_path / "utilities").mkdir()
    (tmp_path / "utilities" / "util.h").write_text(
        "#pragma once\n__device__ inline float twice(float x) { return 2.0f * x; }\n")
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.cu").write_text(KERNEL)
    monkeypatch.chdir(tmp_path / "kernels")
    return tmp_path


def errors(result: Result) -> list[str]:
    return [ln for ln in result.stdout.splitlines() if ": error: " in ln]


@requires_nvcc
def test_check_fails_without_the_include_directory(project: Path) -> None:
    result = cuopt("check", "k.cu", "-D", "FACTOR=2")
    assert result.exit_code == 1
    assert errors(result) == [NOT_FOUND]


@requires_nvcc
@pytest.mark.parametrize("args", [
    ["-I", "../utilities", "-D", "FACTOR=2"],
    ["-I../utilities", "-DFACTOR=2"],
    ["--include", "../utilities", "--define", "FACTOR=2"],
    ["--include=../utilities", "--define=FACTOR"],
    ["-I", "..", "-I../utilities", "-DFACTOR=1", "-DFACTOR=2"],
])
def test_check_passes_with_the_command_line_options(project: Path, args: list[str]) -> None:
    result = cuopt("check", "k.cu", *args)
    assert result.exit_code == 0, result.output
    assert errors(result) == []


@requires_nvcc
def test_check_reads_the_definition_as_given(project: Path) -> None:
    result = cuopt("check", "k.cu", "-I../utilities", "-DFACTOR=undefined_name")
    assert result.exit_code == 1
    assert 'identifier "undefined_name" is undefined' in result.stdout


@requires_nvcc
def test_init_records_the_settings_in_the_spec_and_later_commands_need_them_no_more(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)  # paths given from here, written relative to kernels/
    result = cuopt("init", "kernels/k.cu", "-I", "utilities", "-D", "FACTOR=2", "--nvcc-flag=-lineinfo")
    assert result.exit_code == 0, result.output
    spec = tomllib.loads((project / "kernels" / "k.cuopt.toml").read_text())
    assert spec["compile"] == {"include": ["../utilities"], "define": ["FACTOR=2"], "flags": ["-lineinfo"]}
    assert list(spec) == ["compile", "scale"]
    check = cuopt("check", "kernels/k.cu")
    assert check.exit_code == 0, check.output
    bench = cuopt("bench", "--dry-run", "kernels/k.cu")
    assert bench.exit_code == 0, bench.output
    assert "compiled" in bench.stdout
    assert cuopt("bench", "--dry-run", "kernels/k.cu", "-D", "FACTOR=oops").exit_code == 1  # the CLI wins
    dry = cuopt("optimize", "--dry-run", "--json", "kernels/k.cu")
    assert dry.exit_code == 0, dry.output
    assert '"compiled": true' in dry.stdout and '"compiled": false' not in dry.stdout


@requires_nvcc
def test_check_reads_the_nearest_pyproject_cuopt_table(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.cuopt]\ninclude = ["utilities"]\ndefine = ["FACTOR=3"]\n')
    result = cuopt("check", "k.cu")
    assert result.exit_code == 0, result.output
    (project / "kernels" / "pyproject.toml").write_text('[project]\nname = "kernels"\n')  # no [tool.cuopt]: skipped
    assert cuopt("check", "k.cu").exit_code == 0


def test_init_without_options_writes_no_compile_table(project: Path) -> None:
    assert cuopt("init", "k.cu").exit_code == 0
    assert "compile" not in tomllib.loads(Path("k.cuopt.toml").read_text())


def test_rewrites_with_the_spec_table(project: Path) -> None:
    assert cuopt("init", "k.cu", "-I../utilities").exit_code == 0
    result = cuopt("rewrites", "k.cu", "--json")
    assert result.exit_code == 0, result.output
    Path("../utilities").rename("../moved")
    result = cuopt("rewrites", "k.cu", "--json")
    assert result.exit_code == 1
    assert result.stderr.startswith("cuopt: error: k.cuopt.toml: [compile] include: include directory "
                                    "'../utilities' not found")


@pytest.mark.parametrize("command", ["init", "check", "bench", "rewrites", "optimize"])
@pytest.mark.parametrize("args, message", [
    (["-I", "nowhere"], "cuopt: error: -I nowhere: include directory 'nowhere' not found"),
    (["-D", "2X=1"], "cuopt: error: -D 2X=1: '2X=1' is not NAME or NAME=VALUE with NAME a C identifier"),
    (["--nvcc-flag", "-arch=sm_80"], "cuopt: error: --nvcc-flag: '-arch=sm_80' clashes with the options cuopt "
                                     "passes to nvcc itself"),
    (["--nvcc-flag=-o"], "cuopt: error: --nvcc-flag: '-o' clashes"),
])
def test_every_command_takes_the_options_and_refuses_wrong_ones_in_one_line(
        project: Path, command: str, args: list[str], message: str) -> None:
    if command != "init":
        assert cuopt("init", "k.cu").exit_code == 0
    result = cuopt(command, "k.cu", *args, *(["--no-compile"] if command == "check" else []))
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(message), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
