"""On a GPU: the samples spelled the way older code writes them (samples/spelled/: accumulation
into global memory, parenthesized guards, counters declared before their loops, macro element
types) are optimized with a validated speedup, like the samples as written."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app

from tests.conftest import SAMPLES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["matmul", "matvec", "stencil2d", "softmax"])
def test_a_spelled_sample_is_optimized(tmp_path: Path, name: str) -> None:
    for suffix in (".cu", ".cuopt.toml"):
        shutil.copy(SAMPLES / "spelled" / f"{name}{suffix}", tmp_path)
    result = CliRunner().invoke(app, ["optimize", str(tmp_path / f"{name}.cu"), "--budget", "60s", "--json",
                                      "--no-diff"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # one kernel: an object
    assert summary["written"], summary
    assert summary["speedup"] > 1.2, summary
