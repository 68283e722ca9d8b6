"""On a GPU: samples spelled the way older code writes them (accumulation into global memory,
parenthesized guards, counters declared before their loops, macro element types) are optimized
with a validated speedup, like the samples as written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.learn.spellings import counter_before, global_accumulate, macro_type, paren_guard, post_increment

pytestmark = pytest.mark.gpu


def older_style(source: str) -> str:
    for step in (global_accumulate, paren_guard, post_increment, counter_before, macro_type):
        source = step(source) or source
    return source


@pytest.mark.parametrize("name", ["matmul", "matvec", "stencil2d", "softmax"])
def test_a_spelled_sample_is_optimized(samples: Path, name: str) -> None:
    cu = samples / f"{name}.cu"
    spelled = older_style(cu.read_text())
    assert spelled != cu.read_text()
    cu.write_text(spelled)
    result = CliRunner().invoke(app, ["optimize", str(cu), "--budget", "60s", "--json", "--no-diff"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # one kernel: an object
    assert summary["written"], summary
    assert summary["speedup"] > 1.2, summary
