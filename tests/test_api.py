"""The Python API on a CPU with the stand-in GPU (nvcc compiles; the stand-in measures nothing):
typed results with the command's JSON fields, bench rows, and errors as CuoptError."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cuopt
from cuopt.cli import app
from cuopt.errors import CuoptError
from cuopt.optimization.result import KernelResult
from tests.conftest import requires_nvcc
from tests.optimization.test_optimize_standin import BACKEND, HOST, N, SUMMARY_KEYS


@pytest.fixture
def saxpy(samples: Path, tmp_path: Path) -> Path:
    cu = tmp_path / "api" / "saxpy.cu"
    cu.parent.mkdir()
    cu.write_text((samples / "saxpy.cu").read_text() + HOST)
    spec = (samples / "saxpy.cuopt.toml").read_text().replace("n = 67108864", f"n = {N}") \
        .replace("{ n = 1000003 }", "{ n = 1003 }")
    cu.with_name("saxpy.cuopt.toml").write_text(spec)
    return cu


@requires_nvcc
def test_optimize_returns_what_the_command_prints(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    seen: list[KernelResult] = []
    [r] = cuopt.optimize([saxpy], budget=40, max_evals=6, sanitizer=False, dry_run=True, on_result=seen.append)
    assert seen == [r] and isinstance(r, KernelResult)
    assert r.status == "dry-run" and r.evaluations == 6 and r.speedup and r.speedup > 1
    assert SUMMARY_KEYS <= set(r.json()) and {"budget", "gpu"} <= set(r.json())
    assert r.diff.startswith("--- a/saxpy.cu") and saxpy.read_text().endswith(HOST)  # nothing written
    out = CliRunner().invoke(app, ["optimize", str(saxpy), "--budget", "40s", "--max-evals", "6", "--no-sanitizer",
                                   "--dry-run", "--json"])
    assert out.exit_code == 0, out.output
    cli = json.loads(out.stdout)
    assert (cli["status"], cli["sequence"], cli["evaluations"]) == (r.status, r.sequence, r.evaluations)


@requires_nvcc
def test_bench_returns_the_rows_of_bench_json(saxpy: Path) -> None:
    [row] = cuopt.bench([saxpy], dry_run=True)
    assert row["status"] == "compiled" and row["kernel"] == "saxpy" and row["bytes"] == 3 * 4 * N


def test_bad_options_raise_one_line_errors(saxpy: Path) -> None:
    with pytest.raises(CuoptError, match="--budget 'soon': expected a duration such as 30s, 10m or 1h"):
        cuopt.optimize([saxpy], budget="soon")
    with pytest.raises(CuoptError, match="--schedule 'fair': expected one of headroom, equal"):
        cuopt.optimize([saxpy], schedule="fair")
    with pytest.raises(CuoptError, match="no such file or directory"):
        cuopt.optimize([saxpy.with_name("missing.cu")])
