"""`cuopt-train report` on hand-made `cuopt-train evaluate` results (no GPU): the table and summary
printed again, the plot and the rescored JSON; a search truncated short of the target leaves its
kernel unscored (derived from the stop reason in results without `truncated`); a file that is not
such a result is one error line naming it."""
from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from cuopt.training.curves import KernelRuns, Run, kernel_json, summary
from cuopt.search.mcts import TIME_STOP
from tests.helpers import cuopt_train, one_error_line
from tests.training.test_curves import POLICIES, kernel_a, kernel_b, kernel_c

SVG = "{http://www.w3.org/2000/svg}"


def write_results(path: Path, kernels: list[KernelRuns], reference_evals: int | None = 4,
                  incomplete: tuple[str, ...] = ()) -> Path:
    """A results file as `cuopt-train evaluate -o` writes it (max_evals 3), with a stale summary and
    stale per-kernel metrics that the report must not reuse."""
    rows = [{"file": f"{k.kernel}.cu", "complete": k.kernel not in incomplete, "measured_variants": 7,
             **kernel_json(k, POLICIES, 3), "reference_speedup": 0.0, "policies": {}} for k in kernels]
    data = {"tool": "cuopt 0.1.0", "command": "cuopt-train evaluate corpus", "created": "2026-01-01T00:00:00+0000",
            "device": "H200", "split": "heldout", "policies": POLICIES, "seeds": [0, 1], "max_evals": 3,
            "reference_evals": reference_evals, "target_fraction": 0.95, "stopped": "", "kernels": rows,
            "skipped": [], "summary": {"kernels": 99}}
    path.write_text(json.dumps(data, indent=1))
    return path


def table(result: Result) -> dict[str, list[str]]:
    """The table's rows by kernel (the header under "kernel"): the reference, then a cell per policy."""
    rows = [[c.strip() for c in re.split("[│┃]", line)[1:-1]] for line in result.stdout.splitlines()
            if line.startswith(("│", "┃"))]
    return {row[0]: row[1:] for row in rows}


def summary_text(result: Result) -> list[str]:
    """The lines after the table."""
    return result.stdout.split("┘\n", 1)[1].splitlines()


def kernel_t() -> KernelRuns:
    """Reference 2.0x (target 1.932x); both uniform searches ran out of time short of it, after 2
    and after 1 evaluations."""
    return KernelRuns("t", [Run("heuristic", 0, [1.0, 1.5, 2.0, 2.0], "reached --max-evals 3"),
                            Run("uniform", 0, [1.0, 1.1, 1.2], TIME_STOP, truncated=True),
                            Run("uniform", 1, [1.0, 1.1], TIME_STOP, truncated=True),
                            Run("learned", 0, [1.0, 1.94, 2.0, 2.0], "reached --max-evals 3")])


def test_report_prints_scores_plots_and_rewrites_saved_results(tmp_path: Path) -> None:
    d = KernelRuns("d", [Run("heuristic", 0, [1.0, 3.0], TIME_STOP, truncated=True)])  # the budget ran out
    results = write_results(tmp_path / "results.json", [kernel_a(), kernel_c(), kernel_b(), d], incomplete=("d",))
    plot, out = tmp_path / "plots" / "curves.svg", tmp_path / "out" / "rescored.json"
    result = cuopt_train("report", str(results), "--plot", str(plot), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert table(result) == {"kernel": ["reference", *(f"{p}: evals to 95% / final" for p in POLICIES)],
                             "a": ["2.000x", "2.5 / 1.955x", ">3 / 1.300x", "1 / 2.000x"],
                             "c": ["1.500x", "2 / 1.500x", "2 / 1.500x", "1 / 1.500x"],
                             "b": ["1.000x", "0 / 1.000x", "0 / 1.000x", "0 / 1.000x"],
                             "d (incomplete)": ["3.000x", "1 / 3.000x", "-", "-"]}
    assert summary_text(result) == [
        "not scored, reference speedup under 1.1x: b",
        "median over 2 heldout kernels (evaluations to 95% of the reference, final speedup after 3):",
        "  heuristic: 2.25, 1.728x", "  uniform: 3, 1.400x", "  learned: 1, 1.750x",
        "learned vs heuristic and uniform: at most half the evaluations yes, final speedup not lower yes",
        "  final speedup kernel by kernel: vs heuristic 1 higher, 1 equal, 0 lower; vs uniform 1 higher, 1 equal, 0 lower"]
    root = ET.fromstring(plot.read_text())
    main = next(g for g in root.iter(f"{SVG}g") if g.get("id") == "summary")
    assert [p.get("data-policy") for p in main.iter(f"{SVG}polyline")] == POLICIES
    assert [g.get("id") for g in root.iter(f"{SVG}g") if g.get("class") == "kernel"] == ["kernel-a", "kernel-c"]
    data = json.loads(out.read_text())
    assert data["summary"] == json.loads(json.dumps(summary([kernel_a(), kernel_c(), kernel_b()], POLICIES, 3)))
    assert data["summary"]["kernels"] == 2
    assert shlex.split(data["report_command"]) == ["cuopt-train", "report", str(results), "--plot", str(plot),
                                                   "-o", str(out)]
    assert (data["command"], data["device"], data["seeds"]) == ("cuopt-train evaluate corpus", "H200", [0, 1])
    [a, c, b, d_out] = data["kernels"]
    assert a == {"file": "a.cu", "complete": True, "measured_variants": 7, **kernel_json(kernel_a(), POLICIES, 3)}
    assert a["reference_speedup"] == 2.0 and a["policies"]["uniform"] == {"evals_to_95": 4, "final_speedup": 1.3}
    assert [k["kernel"] for k in (c, b)] == ["c", "b"]
    assert (d_out["complete"], d_out["policies"]) == (False, {"heuristic": {"evals_to_95": 1, "final_speedup": 3.0}})


def test_a_search_truncated_short_of_the_target_leaves_its_kernel_unscored(tmp_path: Path) -> None:
    results = write_results(tmp_path / "results.json", [kernel_a(), kernel_t()])
    out, plot = tmp_path / "rescored.json", tmp_path / "curves.svg"
    result = cuopt_train("report", str(results), "-o", str(out), "--plot", str(plot))
    assert result.exit_code == 0, result.output
    assert table(result)["t"] == ["2.000x", "2 / 2.000x", "cut at 1 / 1.150x", "1 / 2.000x"]
    assert table(result)["a"][2] == ">3 / 1.300x"  # never reached, but not cut: the search ran its evaluations
    lines = summary_text(result)
    assert lines[0] == "not scored, a search ran out of time short of the target: t"
    assert lines[1].startswith("median over 1 heldout kernels ")
    data = json.loads(out.read_text())
    assert data["summary"]["truncated"] == ["t"] and data["summary"]["kernels"] == 1
    assert [r["truncated"] for r in data["kernels"][1]["runs"]] == [False, True, True, False]
    assert [g.get("id") for g in ET.fromstring(plot.read_text()).iter(f"{SVG}g")
            if g.get("class") == "kernel"] == ["kernel-a"]


def test_results_without_truncated_derive_it_from_the_stop_reason(tmp_path: Path) -> None:
    """Results written before `truncated` and `best` were recorded."""
    cut = KernelRuns("cut", [Run("heuristic", 0, [1.0, 1.5, 2.0, 2.0], "reached --max-evals 3", best=["unroll@4:5/factor=2"]),
                             Run("uniform", 0, [1.0, 1.2], TIME_STOP),  # 1 of 3 evaluations, short of 1.93x
                             Run("learned", 0, [1.0, 2.0, 2.0, 2.0], "reached --max-evals 3")])
    reached = KernelRuns("reached", [Run("heuristic", 0, [1.0, 2.0], TIME_STOP),  # cut, but at the target
                                     Run("uniform", 0, [1.0, 1.2, 1.3, 1.4], TIME_STOP),  # every evaluation
                                     Run("learned", 0, [1.0, 1.1], "the tree is exhausted"),
                                     Run("learned", 1, [1.0, 1.1, 2.0, 2.0], "reached --max-evals 3")],
                         reference=Run("uniform", 0, [1.0, 1.5, 1.6, 1.7, 1.8], TIME_STOP))  # 4 of 6
    results = write_results(tmp_path / "old.json", [cut, reached], reference_evals=6)
    data = json.loads(results.read_text())
    for k in data["kernels"]:
        for r in [*k["runs"], k["reference"]] if k["reference"] else k["runs"]:
            del r["truncated"], r["best"]
    results.write_text(json.dumps(data))
    out = tmp_path / "rescored.json"
    result = cuopt_train("report", str(results), "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = table(result)
    assert rows["cut"][2] == "cut at 1 / 1.200x"
    assert rows["reached"] == ["2.000x", "1 / 2.000x", ">3 / 1.400x", "3 / 1.550x"]
    assert summary_text(result)[:2] == [
        "not scored, a search ran out of time short of the target: cut",
        "median over 1 heldout kernels (evaluations to 95% of the reference, final speedup after 3):"]
    rescored = json.loads(out.read_text())
    assert [r["truncated"] for r in rescored["kernels"][0]["runs"]] == [False, True, False]
    assert [r["best"] for r in rescored["kernels"][0]["runs"]] == [None, None, None]  # unknown, not "the original"
    assert [r["truncated"] for r in rescored["kernels"][1]["runs"]] == [True, False, False, False]
    assert rescored["kernels"][1]["reference"]["truncated"] is True  # 4 evaluations of --reference-evals 6
    cut.runs[1].truncated = reached.runs[0].truncated = reached.reference.truncated = True
    cut.runs[0].best = None
    assert rescored["summary"] == json.loads(json.dumps(summary([cut, reached], POLICIES, 3)))
    assert rescored["summary"]["truncated"] == ["cut"] and rescored["summary"]["kernels"] == 1


def test_kernels_of_the_same_name_keep_their_own_metrics(tmp_path: Path) -> None:
    other = KernelRuns("a", kernel_c().runs)
    results = write_results(tmp_path / "results.json", [kernel_a(), other])
    out = tmp_path / "rescored.json"
    result = cuopt_train("report", str(results), "-o", str(out))
    assert result.exit_code == 0, result.output
    first, second = json.loads(out.read_text())["kernels"]
    assert (first["reference_speedup"], second["reference_speedup"]) == (2.0, 1.5)
    assert second["runs"] == kernel_json(other, POLICIES, 3)["runs"]


def test_results_of_the_same_settings_merge_into_one_report(tmp_path: Path) -> None:
    first = write_results(tmp_path / "first.json", [kernel_a(), kernel_b()])
    second = write_results(tmp_path / "second.json", [kernel_c()])
    data = json.loads(second.read_text())
    data.update(command="cuopt-train evaluate corpus/c.cu", stopped="the budget ran out")
    second.write_text(json.dumps(data))
    out = tmp_path / "merged.json"
    result = cuopt_train("report", str(first), str(second), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert list(table(result))[1:] == ["a", "b", "c"]
    assert summary_text(result)[1].startswith("median over 2 heldout kernels ")
    merged = json.loads(out.read_text())
    assert [k["kernel"] for k in merged["kernels"]] == ["a", "b", "c"]
    assert merged["summary"] == json.loads(json.dumps(summary([kernel_a(), kernel_b(), kernel_c()], POLICIES, 3)))
    assert [(m["file"], m["command"], m["stopped"]) for m in merged["merged_from"]] == [
        (str(first), "cuopt-train evaluate corpus", ""), (str(second), "cuopt-train evaluate corpus/c.cu",
                                                          "the budget ran out")]
    assert merged["stopped"] == "the budget ran out"
    assert shlex.split(merged["report_command"])[2:4] == [str(first), str(second)]


def test_results_that_differ_or_share_a_kernel_do_not_merge(tmp_path: Path) -> None:
    first = write_results(tmp_path / "first.json", [kernel_a()])
    again = write_results(tmp_path / "again.json", [kernel_a()])
    result = cuopt_train("report", str(first), str(again))
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: {again}: kernel a (a.cu) is also in {first}"
    other = write_results(tmp_path / "other.json", [kernel_c()])
    data = json.loads(other.read_text())
    data["seeds"] = [0]
    other.write_text(json.dumps(data))
    result = cuopt_train("report", str(first), str(other))
    assert result.exit_code == 1
    assert one_error_line(result) == (f"cuopt: error: {other}: seeds [0] differs from {first}'s [0, 1]; "
                                      "only results of the same settings merge")


def drop(key: str) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        del data[key]
    return edit


def drop_runs(data: dict[str, Any]) -> None:
    del data["kernels"][0]["runs"]


def drop_policy(data: dict[str, Any]) -> None:
    data["kernels"][0]["runs"] = [r for r in data["kernels"][0]["runs"] if r["policy"] != "learned"]


def bad_best(data: dict[str, Any]) -> None:
    data["kernels"][0]["runs"][0]["best"] = "coarsen"


@pytest.mark.parametrize(("edit", "message"), [
    (drop("max_evals"), "not a `cuopt-train evaluate` result: max_evals: missing"),
    (drop("kernels"), "not a `cuopt-train evaluate` result: kernels: missing"),
    (drop_runs, "not a `cuopt-train evaluate` result: kernels[0].runs: missing"),
    (drop_policy, "not a `cuopt-train evaluate` result: kernels[0].runs: no run of learned in a complete kernel"),
    (bad_best, "not a `cuopt-train evaluate` result: kernels[0].best: expected a list of rewrite ids"),
])
def test_a_result_missing_a_key_is_one_error_line(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                                                  message: str) -> None:
    results = write_results(tmp_path / "results.json", [kernel_a()])
    data = json.loads(results.read_text())
    edit(data)
    results.write_text(json.dumps(data))
    out = tmp_path / "rescored.json"
    result = cuopt_train("report", str(results), "-o", str(out))
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: {results}: {message}"
    assert not out.exists()


def test_a_missing_file_or_not_json_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    result = cuopt_train("report", str(missing))
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: {missing}: cannot read: No such file or directory"
    text = tmp_path / "notes.json"
    text.write_text("median 3 evaluations\n")
    result = cuopt_train("report", str(text))
    assert result.exit_code == 1
    assert one_error_line(result).startswith(f"cuopt: error: {text}: not a JSON file: Expecting value")
