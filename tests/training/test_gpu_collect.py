"""On a GPU: `cuopt-train collect` on two samples appends rows in the dataset format, with the
real device's name and ptxas figures in the root state."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cuopt.search import features
from tests.helpers import cuopt_train

pytestmark = pytest.mark.gpu


def test_collect_on_the_gpu(samples: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("softmax", "reduce_sum"):
        for suffix in (".cu", ".cuopt.toml"):
            shutil.copy(samples / f"{name}{suffix}", corpus / f"{name}{suffix}")
    out = tmp_path / "data.jsonl"
    result = cuopt_train("collect", str(corpus), "-o", str(out), "--budget", "90s", "--max-evals", "16")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["kernel"] for r in rows} == {"softmax", "reduce_sum"}, result.output
    for r in rows:
        assert r["gpu"] and len(r["state"]) == len(features.STATE_NAMES)
        assert any(a["status"] == "ok" for a in r["actions"]), r["actions"]
    roots = [r for r in rows if r["depth"] == 0]
    assert len(roots) == 2 and all(r["value"] > 0 for r in roots), roots
