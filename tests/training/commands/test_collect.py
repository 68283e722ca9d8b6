"""`cuopt-train collect` end to end on a CPU with the stand-in GPU backend (saxpy computed with
numpy, a fixed pseudo-random "time" per cubin; real nvcc): the rows it appends follow the
dataset format of docs/policy.md and agree with the search they came from."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cuopt.search import features
from tests.conftest import requires_nvcc
from tests.helpers import cuopt_train, one_error_line, saxpy_corpus
from tests.optimization.test_optimize_standin import BACKEND, N

ROW_KEYS = {"schema", "kernel", "file", "split", "gpu", "node", "depth", "state", "state_ms", "baseline_ms",
            "actions", "value"}
ACTION_KEYS = {"id", "rule", "features", "visits", "prior", "status", "ms", "log_speedup", "subtree_log_speedup"}


@pytest.fixture
def corpus(samples: Path, tmp_path: Path) -> Path:
    """saxpy at a small size, in a corpus directory whose manifest puts it in the train split."""
    return saxpy_corpus(samples, tmp_path / "corpus", "train", N)


@requires_nvcc
def test_collect_appends_rows_that_match_the_format(monkeypatch: pytest.MonkeyPatch, corpus: Path,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    out = tmp_path / "data.jsonl"
    result = cuopt_train("collect", str(corpus), "-o", str(out), "--budget", "60s", "--max-evals", "12")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows, result.output
    assert f"appended {len(rows)} rows" in result.output
    root = next(r for r in rows if r["depth"] == 0)
    for r in rows:
        assert set(r) == ROW_KEYS
        assert r["schema"] == features.SCHEMA_VERSION and r["kernel"] == "saxpy" and r["split"] == "train"
        assert len(r["state"]) == len(features.STATE_NAMES) and all(math.isfinite(v) for v in r["state"])
        assert r["value"] >= 0 and r["state_ms"] > 0 and r["baseline_ms"] == root["state_ms"]
        assert r["actions"]
        for a in r["actions"]:
            assert set(a) == ACTION_KEYS
            assert len(a["features"]) == len(features.ACTION_NAMES)
            assert a["rule"] == a["id"].split("@")[0]
            if a["status"] == "ok":
                assert a["log_speedup"] == pytest.approx(math.log(r["state_ms"] / a["ms"]))
                assert a["subtree_log_speedup"] >= a["log_speedup"] - 1e-9
            else:
                assert a["ms"] is None and a["log_speedup"] is None and a["subtree_log_speedup"] is None
    # the root's value is the best speedup the search found below it: its best child's subtree
    best_child = max((a["subtree_log_speedup"] for a in root["actions"] if a["subtree_log_speedup"] is not None),
                     default=0.0)
    assert root["value"] == pytest.approx(max(0.0, best_child))
    assert sum(a["visits"] for a in root["actions"]) > 0
    # appending, not overwriting
    again = cuopt_train("collect", str(corpus), "-o", str(out), "--budget", "60s", "--max-evals", "4")
    assert again.exit_code == 0, again.output
    assert len(out.read_text().splitlines()) > len(rows)


def test_collect_refuses_an_empty_split(corpus: Path, tmp_path: Path) -> None:
    result = cuopt_train("collect", str(corpus), "-o", str(tmp_path / "d.jsonl"), "--split", "heldout")
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: no kernel of the heldout split in {corpus}"


def test_collect_refuses_an_unknown_split(corpus: Path, tmp_path: Path) -> None:
    result = cuopt_train("collect", str(corpus), "-o", str(tmp_path / "d.jsonl"), "--split", "test")
    assert result.exit_code == 1
    assert one_error_line(result) == "cuopt: error: --split 'test': expected one of train, heldout, all"
