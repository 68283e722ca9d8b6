"""On a GPU: `cuopt optimize` on one instantiation of a template kernel; the written file benches
and validates, and every instantiation the file makes still compiles."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.evaluate.compile import compile_kernel

from tests.optimization.test_templates import SOURCE, SPEC

pytestmark = pytest.mark.gpu


def test_optimize_one_instantiation_keeps_the_others_compiling(tmp_path: Path) -> None:
    cu = tmp_path / "scale.cu"
    cu.write_text(SOURCE)
    (tmp_path / "scale.cuopt.toml").write_text(SPEC.replace("n = 100000", "n = 16777216"))
    result = CliRunner().invoke(app, ["optimize", str(cu), "--budget", "1m", "--json", "--no-diff"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["kernel"] == "scale<float, 4>"
    assert summary["status"] in {"written", "not-faster", "no-candidate"}, summary
    bench = CliRunner().invoke(app, ["bench", str(cu), "--json"])
    assert bench.exit_code == 0, bench.output
    assert json.loads(bench.stdout)[0]["status"] == "ok"
    text = cu.read_text()
    assert "template __global__ void scale<float, 4>(" in text and "scale<double, 2><<<" in text
    assert compile_kernel(text, "scale<float, 4>").symbol == "_Z5scaleIfLi4EEvPT_PKS0_S0_i"
    assert compile_kernel(text, "scale<double, 2>").symbol == "_Z5scaleIdLi2EEvPT_PKS0_S0_i"
