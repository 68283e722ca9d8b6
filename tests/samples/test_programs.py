"""samples/programs/: every benchmark program builds with nvcc, host-warning-free, as an executable
and as a cubin, given `-I utilities`; without the include path it does not build (each really uses
the shared <util.h>). Nothing runs here: the programs need a GPU."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cuopt.evaluate.compile import BASE_FLAGS, find_nvcc

from tests.conftest import SAMPLES, requires_nvcc
from tests.helpers import cuopt, one_error_line

PROGRAMS = SAMPLES / "programs"
UTILITIES = PROGRAMS / "utilities"
# the benchmark-suite programs; trainstep/, a training step for `cuopt capture`, has no utilities header
SOURCES = sorted(p for p in PROGRAMS.glob("*/*.cu") if p.parent.name != "trainstep")
NAMES = [p.parent.name for p in SOURCES]
# (flags, with the include path) of each build the tests ask for
BUILDS = {"exe": ((), True), "cubin": (("-cubin", "-arch=sm_90"), True), "no-include": (("-cubin", "-arch=sm_90"), False)}


def nvcc_build(source: Path, out: Path, flags: tuple[str, ...], include: bool) -> subprocess.CompletedProcess[str]:
    """nvcc on one program, host warnings on; the output goes to `out`."""
    argv = [str(find_nvcc()), *BASE_FLAGS, "-Xcompiler", "-Wall", *flags,
            *(["-I", str(UTILITIES)] if include else []), "-o", str(out), str(source)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], subprocess.CompletedProcess[str]]:
    """Every (program, build) pair, compiled in parallel once."""
    tmp = tmp_path_factory.mktemp("programs")
    jobs = {(src.parent.name, kind): (src, tmp / f"{src.parent.name}.{kind}", *BUILDS[kind])
            for src in SOURCES for kind in BUILDS}
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {key: pool.submit(nvcc_build, *job) for key, job in jobs.items()}
        return {key: f.result() for key, f in futures.items()}


def test_the_programs_are_there() -> None:
    assert {"conv2d", "gemm", "mvt", "covariance", "templates"} <= set(NAMES)
    assert (UTILITIES / "util.h").is_file()


def test_no_program_has_a_spec() -> None:
    """`cuopt init` writes the specs; none are shipped."""
    assert not list(PROGRAMS.rglob("*.cuopt.toml"))


@pytest.mark.parametrize("source", SOURCES, ids=NAMES)
def test_every_size_macro_can_be_overridden(source: Path) -> None:
    """Each size macro of a program's own header sits inside an #ifndef of the same name, or in a
    guarded group (`#if !defined(NI) && !defined(NJ)`, data-set branches inside)."""
    for header in source.parent.glob("*.cuh"):
        lines = header.read_text().splitlines()
        for n, line in enumerate(lines):
            m = re.match(r"\s*#\s*define\s+(\w+)\s+\d+\s*(/\*.*)?$", line)
            if m is None or m.group(1).startswith("DIM_"):
                continue
            name = m.group(1)
            guarded = lines[n - 1].split() == ["#ifndef", name] or any(
                re.match(rf"\s*#\s*if\b.*!\s*defined\s*\(\s*{name}\s*\)", ln) for ln in lines[:n])
            assert guarded, f"{header.name}:{n + 1}: {name}"


@requires_nvcc
@pytest.mark.parametrize("source", SOURCES, ids=NAMES)
def test_builds_as_an_executable(built: dict, source: Path) -> None:
    result = built[(source.parent.name, "exe")]
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower(), result.stderr


@requires_nvcc
@pytest.mark.parametrize("source", SOURCES, ids=NAMES)
def test_builds_as_a_cubin(built: dict, source: Path) -> None:
    result = built[(source.parent.name, "cubin")]
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower(), result.stderr


@requires_nvcc
@pytest.mark.parametrize("source", SOURCES, ids=NAMES)
def test_needs_the_utilities_include_path(built: dict, source: Path) -> None:
    result = built[(source.parent.name, "no-include")]
    assert result.returncode != 0
    assert "util.h" in result.stdout + result.stderr


@requires_nvcc
def test_a_directory_with_the_programs_benches_only_the_kernels_with_a_spec(tmp_path: Path) -> None:
    """Programs without a spec are skipped when found under a directory, an error when named."""
    for name in ("saxpy.cu", "saxpy.cuopt.toml"):
        shutil.copy(SAMPLES / name, tmp_path / name)
    shutil.copytree(PROGRAMS, tmp_path / "programs", ignore=shutil.ignore_patterns("*.cuopt.toml"))
    result = cuopt("bench", str(tmp_path), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert [r["kernel"] for r in json.loads(result.stdout)] == ["saxpy"]
    gemm = tmp_path / "programs" / "gemm" / "gemm.cu"
    result = cuopt("bench", str(gemm), "--dry-run")
    assert result.exit_code == 1
    assert one_error_line(result) == (f"cuopt: error: {gemm}: no spec file gemm.cuopt.toml; "
                                      f"run `cuopt init {gemm}` to write one")
