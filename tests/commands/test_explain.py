"""`cuopt explain` over a hand-written trace: the chosen sequence, rejected candidates by reason,
the confirmation, `--diff`, `--all`, `--json`, a trace given directly, and one-line errors."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cuopt.optimization.trace import TRACE_VERSION, load_trace

from tests.conftest import SAMPLES
from tests.helpers import cuopt, one_error_line

ORIGINAL = (SAMPLES / "saxpy.cu").read_text()
STEP1 = ORIGINAL.replace("__global__ void saxpy(", "__global__ void __launch_bounds__(128) saxpy(")
STEP2 = STEP1.replace("const float* x, float* y)", "const float* __restrict__ x, float* __restrict__ y)")
BLOCK = "block-size@2:1/block=128"
RESTRICT = "restrict-const@2:1"
VEC = "vectorize@2:1/width=4"
COARSEN8 = "coarsen@2:1/factor=8,axis=x"
COARSEN2 = "coarsen@2:1/factor=2,axis=x"


def candidate(id: int, parent: int | None, action: str | None, status: str = "ok", ms: float | None = None,
              detail: str = "", duplicate_of: int | None = None, visits: int = 1) -> dict[str, Any]:
    rule = action.split("@")[0] if action else None
    return {"id": id, "parent": parent, "action": action, "rule": rule, "depth": 0 if parent is None else 1,
            "key": f"key{id}", "prior": 0.25, "visits": visits, "mean_value": 0.1, "duplicate_of": duplicate_of,
            "status": status, "ms": ms, "spread": 0.01 if ms else None, "detail": detail,
            "extra": {"compile_s": 0.4} if status != "compile-error" else {}}


def step(node: int, action: str | None, ms: float, source: str, visits: int, launch: str) -> dict[str, Any]:
    return {"node": node, "action": action, "rule": action.split("@")[0] if action else None, "ms": ms,
            "speedup": 1.0 / ms, "visits": visits, "mean_value": 0.25, "prior": 0.5 if action else 1.0,
            "launch": launch, "source": source}


def trace_data(cu: Path, kernel: str = "saxpy", version: Any = TRACE_VERSION) -> dict[str, Any]:
    """A trace like `cuopt optimize` writes: two steps, three failures (one seen twice), accepted."""
    return {
        "version": version, "tool": "cuopt test", "created": "2026-01-01T00:00:00+0000",
        "file": str(cu), "kernel": kernel, "device": {"name": "Stand-in GPU"}, "policy": "heuristic", "seed": 0,
        "search_options": {"c_puct": 1.5}, "budget_s": 40.0, "stop": "reached --max-evals 6",
        "baseline": {"ms": 1.0, "spread": 0.01},
        "candidates": [
            candidate(0, None, None, ms=1.0, visits=7),
            candidate(1, 0, BLOCK, ms=0.8, visits=3),
            candidate(2, 0, VEC, "wrong-answer", detail="y differs at 17 of 1000003 elements (max abs error 3.5)"),
            candidate(3, 0, COARSEN8, "compile-error", detail='nvcc failed: error: identifier "q" is undefined'),
            candidate(4, 0, COARSEN2, "wrong-answer", detail="y differs at 2 of 97 elements"),
            candidate(5, 1, RESTRICT, ms=0.5, visits=2),
            candidate(6, 1, VEC, "wrong-answer", detail="y differs at 17 of 1000003 elements", duplicate_of=2),
        ],
        "chosen": {"node": 5, "steps": [
            step(0, None, 1.0, ORIGINAL, 7, "block 256, grid (cdiv(n, block.x))"),
            step(1, BLOCK, 0.8, STEP1, 3, "block 128, grid (cdiv(n, block.x))"),
            step(5, RESTRICT, 0.5, STEP2, 2, "block 128, grid (cdiv(n, block.x))"),
        ]},
        "confirmation": {"sanitizer": "disabled", "attempts": [
            {"node": 5, "sequence": [BLOCK, RESTRICT], "verdict": "accepted", "baseline_ms": 1.0,
             "baseline_spread": 0.01, "candidate_ms": 0.5, "candidate_spread": 0.01, "speedup": 2.0},
        ]},
        "result": {"status": "written", "message": "wrote saxpy.cu", "written": [str(cu)],
                   "launch_note": "launch changed to block 128, grid (cdiv(n, block.x)); 1 launch site(s) updated"},
    }


def write_trace_file(cu: Path, data: dict[str, Any], stamp: str = "20260101-120000", mtime: float | None = None) -> Path:
    directory = cu.parent / ".cuopt" / "traces"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{cu.name}.{data['kernel']}.{stamp}.json"
    path.write_text(json.dumps(data, indent=1))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def traced(tmp_path: Path) -> tuple[Path, Path]:
    """A dummy saxpy.cu with one trace next to it."""
    cu = tmp_path / "saxpy.cu"
    cu.write_text(STEP2)
    return cu, write_trace_file(cu, trace_data(cu))


def test_the_fixture_is_a_loadable_trace(traced: tuple[Path, Path]) -> None:
    assert load_trace(traced[1])["kernel"] == "saxpy"


def test_explain_shows_the_sequence_rejections_and_confirmation(traced: tuple[Path, Path]) -> None:
    cu, trace = traced
    result = cuopt("explain", str(cu))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "saxpy.cu:saxpy  written: wrote saxpy.cu" in out
    flat = " ".join(out.split())  # a long trace path may wrap the line
    assert f"trace {trace}; policy heuristic, 5 evaluations, stopped: reached --max-evals 6" in flat
    rows = [ln for ln in out.splitlines() if ln.startswith("│ ") and ln[2].isdigit()]
    assert [r.split("│")[2].strip() for r in rows] == ["original", BLOCK, RESTRICT]
    assert [r.split("│")[3].strip() for r in rows] == ["1.000 ms", "800.0 µs", "500.0 µs"]
    assert [r.split("│")[4].strip() for r in rows] == ["1.00x", "1.25x", "2.00x"]
    assert [r.split("│")[5].strip() for r in rows] == ["7", "3", "2"]
    assert "The block shape sets" in out, "the rule's reason"
    assert "Without `__restrict__`" in out
    assert "rejected candidates" in out
    assert "  wrong-answer: 2\n" in out, "the duplicate is not counted twice"
    assert "  compile-error: 1\n" in out
    assert out.index("wrong-answer: 2") < out.index("compile-error: 1"), "the commonest reason first"
    assert f"    {VEC}: y differs at 17 of 1000003 elements (max abs error 3.5)" in out
    assert f"    {COARSEN8}: nvcc failed: error: identifier \"q\" is undefined" in out
    assert "confirmation (sanitizer: disabled)" in out
    assert f"  {BLOCK} + {RESTRICT} (2.00x): accepted" in out
    assert "all candidates" not in out
    assert "--- before" not in out


def test_explain_diff_shows_each_steps_diff(traced: tuple[Path, Path]) -> None:
    result = cuopt("explain", str(traced[0]), "--diff")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"{BLOCK}  (block 128, grid (cdiv(n, block.x)))" in out
    assert f"{RESTRICT}  (block 128, grid (cdiv(n, block.x)))" in out
    assert out.count("--- before") == 2 and out.count("+++ after") == 2
    assert "-__global__ void saxpy(int n, float a, const float* x, float* y)" in out
    assert "+__global__ void __launch_bounds__(128) saxpy(int n, float a, const float* x, float* y)" in out
    assert ("+__global__ void __launch_bounds__(128) saxpy(int n, float a, const float* __restrict__ x, "
            "float* __restrict__ y)") in out
    assert out.index(f"{BLOCK}  (block") < out.index(f"{RESTRICT}  (block")


def test_explain_all_lists_every_candidate(traced: tuple[Path, Path]) -> None:
    result = cuopt("explain", str(traced[0]), "--all")
    assert result.exit_code == 0, result.output
    table = result.stdout.split("all candidates", 1)[1]
    rows = [[c.strip() for c in ln.split("│")[1:-1]] for ln in table.splitlines() if ln.startswith("│ ")]
    assert [r[0] for r in rows] == ["0", "1", "2", "3", "4", "5", "6"]
    assert [r[2] for r in rows] == ["original", BLOCK, VEC, COARSEN8, COARSEN2, RESTRICT, VEC]
    assert [r[3] for r in rows] == ["ok", "ok", "wrong-answer", "compile-error", "wrong-answer", "ok", "wrong-answer"]
    assert rows[5][4:6] == ["500.0 µs", "2.00x"]
    assert rows[2][4:6] == ["-", "-"]


def test_explain_json(traced: tuple[Path, Path]) -> None:
    cu, trace = traced
    result = cuopt("explain", str(cu), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"trace", "file", "kernel", "baseline", "result", "stop", "steps", "rejected",
                         "confirmation", "evaluations"}
    assert data["trace"] == str(trace) and data["file"] == str(cu) and data["kernel"] == "saxpy"
    assert data["baseline"] == {"ms": 1.0, "spread": 0.01}
    assert data["result"]["status"] == "written"
    assert data["stop"] == "reached --max-evals 6"
    assert [s["action"] for s in data["steps"]] == [None, BLOCK, RESTRICT]
    assert [s["ms"] for s in data["steps"]] == [1.0, 0.8, 0.5]
    assert all("source" not in s and "diff" not in s for s in data["steps"])
    assert data["rejected"] == {
        "wrong-answer": [{"id": 2, "action": VEC, "detail": "y differs at 17 of 1000003 elements (max abs error 3.5)"},
                         {"id": 4, "action": COARSEN2, "detail": "y differs at 2 of 97 elements"}],
        "compile-error": [{"id": 3, "action": COARSEN8, "detail": 'nvcc failed: error: identifier "q" is undefined'}]}
    assert data["confirmation"]["attempts"][0]["verdict"] == "accepted"


def test_explain_json_counts_a_duplicate_as_no_evaluation(traced: tuple[Path, Path]) -> None:
    """Candidate 6 is a duplicate of 2 (measured once): `cuopt optimize --json` counts 5 evaluations for
    this search, and so should `cuopt explain --json`."""
    data = json.loads(cuopt("explain", str(traced[0]), "--json").stdout)
    assert data["evaluations"] == 5


def test_explain_shows_a_resumed_search_that_left_the_result_standing(tmp_path: Path) -> None:
    cu = tmp_path / "saxpy.cu"
    cu.write_text(STEP2)
    data = trace_data(cu)
    data["resumed"] = {"seconds": 54.1, "outcome": "no faster variant confirmed", "stop": "the time budget ran out",
                       "evaluations": 31, "candidates": [], "confirmation": None}
    write_trace_file(cu, data)
    out = " ".join(cuopt("explain", str(cu)).stdout.split())
    assert "resumed for 54 s: 31 evaluations, stopped: the time budget ran out; no faster variant confirmed" in out
    assert "saxpy.cu:saxpy written: wrote saxpy.cu" in out, "the result is the first search's"
    shown = json.loads(cuopt("explain", str(cu), "--json").stdout)
    assert shown["resumed"] == {"seconds": 54.1, "evaluations": 31, "stop": "the time budget ran out",
                                "outcome": "no faster variant confirmed", "confirmation": None}
    assert shown["evaluations"] == 5


def test_explain_json_diff(traced: tuple[Path, Path]) -> None:
    data = json.loads(cuopt("explain", str(traced[0]), "--json", "--diff").stdout)
    assert "diff" not in data["steps"][0]
    assert data["steps"][1]["diff"].startswith("--- before\n+++ after\n")
    assert "+__global__ void __launch_bounds__(128) saxpy(" in data["steps"][1]["diff"]
    assert "+__global__ void __launch_bounds__(128) saxpy(int n, float a, const float* __restrict__ x" in \
        data["steps"][2]["diff"]


def test_explain_names_the_model_of_a_learned_policy(tmp_path: Path) -> None:
    cu = tmp_path / "saxpy.cu"
    cu.write_text(STEP2)
    data = trace_data(cu)
    data["policy"] = "learned"
    data["policy_detail"] = {"name": "learned", "model": "/opt/cuopt/models/policy.pt", "sha256": "0123456789abcdef" * 4,
                             "schema": 2, "created": "2026-11-30T11:11:00+0000"}
    write_trace_file(cu, data)
    result = cuopt("explain", str(cu))
    assert result.exit_code == 0, result.output
    assert "policy learned (policy.pt, sha256 0123456789ab), 5 evaluations" in " ".join(result.stdout.split())
    data["policy_detail"]["uniform_blend"] = 0.25
    write_trace_file(cu, data)
    result = cuopt("explain", str(cu))
    assert result.exit_code == 0, result.output
    assert "policy learned (policy.pt, sha256 0123456789ab, uniform blend 0.25)" in " ".join(result.stdout.split())


def test_explain_a_trace_file_directly(traced: tuple[Path, Path]) -> None:
    cu, trace = traced
    direct = cuopt("explain", str(trace))
    assert direct.exit_code == 0, direct.output
    assert direct.stdout == cuopt("explain", str(cu)).stdout
    data = json.loads(cuopt("explain", str(trace), "--json").stdout)
    assert data["trace"] == str(trace)


def test_explain_takes_the_newest_trace_of_each_kernel(tmp_path: Path) -> None:
    cu = tmp_path / "saxpy.cu"
    cu.write_text(ORIGINAL)
    old = trace_data(cu)
    old["stop"] = "the time budget ran out"
    write_trace_file(cu, old, "20250101-000000", mtime=1_700_000_000)
    newest = write_trace_file(cu, trace_data(cu), "20260101-000000", mtime=1_800_000_000)
    other = trace_data(cu, kernel="saxpy2")
    other_path = write_trace_file(cu, other, "20260101-000000", mtime=1_800_000_000)
    data = json.loads(cuopt("explain", str(cu), "--json").stdout)
    assert [d["trace"] for d in data] == [str(newest), str(other_path)]
    assert data[0]["stop"] == "reached --max-evals 6"
    only = json.loads(cuopt("explain", str(cu), "--json", "--kernel", "saxpy2").stdout)
    assert only["trace"] == str(other_path) and only["kernel"] == "saxpy2"


def test_a_trace_of_another_version_is_one_error_line(tmp_path: Path) -> None:
    cu = tmp_path / "saxpy.cu"
    cu.write_text(ORIGINAL)
    path = write_trace_file(cu, trace_data(cu, version=99))
    for arg in (cu, path):
        result = cuopt("explain", str(arg))
        assert result.exit_code == 1
        assert one_error_line(result) == (f"cuopt: error: {path}: trace version 99 is not supported "
                                          f"(this cuopt reads version {TRACE_VERSION})")


def test_a_trace_without_a_version_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"kernel": "saxpy"}))
    result = cuopt("explain", str(path))
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: {path}: not a cuopt trace (no version)"


def test_a_file_that_is_not_json_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text("{ this is not json\n")
    result = cuopt("explain", str(path))
    assert result.exit_code == 1
    assert one_error_line(result).startswith(f"cuopt: error: {path}: not a cuopt trace (invalid JSON: ")


def test_a_missing_trace_file_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "gone.json"
    result = cuopt("explain", str(path))
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: {path}: no such trace"


def test_no_trace_suggests_running_optimize(tmp_path: Path) -> None:
    cu = tmp_path / "saxpy.cu"
    cu.write_text(ORIGINAL)
    result = cuopt("explain", str(cu))
    assert result.exit_code == 1
    assert one_error_line(result) == (f"cuopt: error: no trace for {cu} in {tmp_path / '.cuopt' / 'traces'}; "
                                      f"run `cuopt optimize {cu}` first")
    write_trace_file(cu, trace_data(cu))
    result = cuopt("explain", str(cu), "--kernel", "other")
    assert result.exit_code == 1
    assert one_error_line(result) == (f"cuopt: error: no trace for kernel other of {cu} in "
                                      f"{tmp_path / '.cuopt' / 'traces'}; run `cuopt optimize {cu}` first")
