"""`cuopt-train evaluate` end to end on a CPU with the stand-in GPU backend (saxpy computed with
numpy, a fixed pseudo-random "time" per cubin; real nvcc): the JSON has a curve per policy that
agrees with its metrics, the summary and the SVG; bad policy and seed lists are one error line."""
from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path

import pytest

from cuopt.training.commands.evaluate import summary_lines
from cuopt.training import fit
from cuopt.training.curves import summary
from tests.conftest import requires_nvcc
from tests.helpers import cuopt_train, one_error_line, saxpy_corpus
from tests.training import synthetic
from tests.training.test_curves import POLICIES, kernel_a
from tests.optimization.test_optimize_standin import BACKEND, N


@pytest.fixture
def corpus(samples: Path, tmp_path: Path) -> Path:
    """saxpy at a small size, in a corpus directory whose manifest holds it out."""
    return saxpy_corpus(samples, tmp_path / "corpus", "heldout", N)


@requires_nvcc
def test_evaluate_writes_curves_summary_and_plot(monkeypatch: pytest.MonkeyPatch, corpus: Path,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    out, plot = tmp_path / "results.json", tmp_path / "curves.svg"
    args = ["evaluate", str(corpus), "--policies", "heuristic,uniform", "--max-evals", "6",
            "--reference-evals", "8", "--budget", "120s", "-o", str(out), "--plot", str(plot)]
    result = cuopt_train(*args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert shlex.split(data["command"]) == ["cuopt-train", "evaluate", str(corpus), "--policies", "heuristic,uniform",
                                                "--max-evals", "6", "--reference-evals", "8", "--split", "heldout",
                                                "--seeds", "0", "--budget", "120s", "-o", str(out), "--plot",
                                                str(plot)]
    assert data["created"] and data["device"] and data["stopped"] == ""
    assert (data["policies"], data["seeds"], data["max_evals"], data["reference_evals"], data["reference_seed"]) == (
        ["heuristic", "uniform"], [0], 6, 8, 1000)
    [kernel] = data["kernels"]
    assert kernel["kernel"] == "saxpy" and kernel["complete"]
    runs = kernel["runs"] + [kernel["reference"]]
    # the reference's seed is none of the policies': it is not the uniform search's own continuation
    assert [(r["policy"], r["seed"]) for r in runs] == [("heuristic", 0), ("uniform", 0), ("uniform", 1000)]
    assert kernel["reference_speedup"] == max(r["final_speedup"] for r in runs)
    # the searches share their measurements: each distinct variant is timed once, and counts as an
    # evaluation of every search that asks for it
    assert [r["evaluations"] for r in runs] == [6, 6, 8]
    assert 8 <= kernel["measured_variants"] < 6 + 6 + 8
    for r, limit in zip(runs, (6, 6, 8)):
        c = r["curve"]
        assert c[0] == 1.0 and len(c) == r["evaluations"] + 1 and r["evaluations"] <= limit
        assert all(b >= a for a, b in pairwise(c)) and c[-1] == r["final_speedup"]
        reached = [k for k, s in enumerate(c) if s >= kernel["target_speedup"]]
        assert r["evals_to_95"] == (reached[0] if reached else None)
        # the rewrites of the fastest variant: none when the original stayed the fastest
        assert isinstance(r["best"], list) and (r["best"] == []) == (r["final_speedup"] == 1.0)
    summary = data["summary"]
    assert summary["kernels"] == 1 and summary["unreached_counts_as"] == 7 and summary["criteria"] == []
    for p in ("heuristic", "uniform"):
        evals = kernel["policies"][p]["evals_to_95"]
        assert summary["policies"][p]["median_evals_to_95"] == evals
        assert summary["policies"][p]["median_final_speedup"] == kernel["policies"][p]["final_speedup"]
    assert "median over 1 heldout kernels" in result.output
    assert "the criterion is not evaluated" in result.output
    root = ET.fromstring(plot.read_text())
    main = next(g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id") == "summary")
    assert [p.get("data-policy") for p in main.iter("{http://www.w3.org/2000/svg}polyline")] == ["heuristic",
                                                                                                "uniform"]


@requires_nvcc
def test_evaluate_compares_a_learned_policy_file(monkeypatch: pytest.MonkeyPatch, corpus: Path,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    model_file = tmp_path / "policy.safetensors"
    fit.run([synthetic.write(tmp_path / "data.jsonl", synthetic.rows(300, seed=11))], model_file,
            fit.FitConfig(epochs=1, seed=0), lambda line: None)
    out = tmp_path / "results.json"
    result = cuopt_train("evaluate", str(corpus), "--policies", f"heuristic,uniform,{model_file}",
                         "--max-evals", "4", "--budget", "120s", "-o", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [r["policy"] for r in data["kernels"][0]["runs"]] == ["heuristic", "uniform", str(model_file)]
    [criterion] = data["summary"]["criteria"]
    assert criterion["policy"] == str(model_file) and criterion["against"] == ["heuristic", "uniform"]
    assert criterion["met"] == (criterion["at_most_half_the_evaluations"] and criterion["final_not_lower"])
    assert f"{model_file} vs heuristic and uniform: at most half the evaluations " in result.output


@requires_nvcc
def test_evaluate_stops_when_the_budget_runs_out(monkeypatch: pytest.MonkeyPatch, corpus: Path,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    out, plot = tmp_path / "results.json", tmp_path / "curves.svg"
    result = cuopt_train("evaluate", str(corpus), "--max-evals", "6", "--budget", "0.001s", "-o", str(out),
                         "--plot", str(plot))
    assert result.exit_code == 0, result.output
    assert "warning: the budget ran out with 0 of 1 kernels searched by every policy" in result.stderr
    assert f"{plot} not written" in result.stderr
    data = json.loads(out.read_text())
    assert data["stopped"].startswith("the budget ran out")
    assert not any(k["complete"] for k in data["kernels"]) and data["summary"]["kernels"] == 0
    assert not plot.exists()


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--policies", "heuristic,greedy",
     "--policies 'heuristic,greedy': unknown policy 'greedy'; expected heuristic, uniform, learned or a model file"),
    ("--policies", "heuristic,,uniform",
     "--policies 'heuristic,,uniform': expected distinct comma-separated policy names"),
    ("--policies", "uniform,uniform", "--policies 'uniform,uniform': expected distinct comma-separated policy names"),
    ("--seeds", "0,x", "--seeds '0,x': expected comma-separated integers"),
    ("--split", "test", "--split 'test': expected one of train, heldout, all"),
    ("--reference-evals", "3", "--reference-evals must be at least --max-evals"),
])
def test_evaluate_refuses_bad_options(corpus: Path, tmp_path: Path, option: str, value: str, message: str) -> None:
    result = cuopt_train("evaluate", str(corpus), "--max-evals", "6", "-o", str(tmp_path / "r.json"),
                         option, value)
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: {message}"
    assert not (tmp_path / "r.json").exists()


def test_evaluate_refuses_an_empty_split(corpus: Path, tmp_path: Path) -> None:
    result = cuopt_train("evaluate", str(corpus), "--max-evals", "6", "-o", str(tmp_path / "r.json"),
                         "--split", "train")
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: no kernel of the train split in {corpus}"


def test_summary_lines_give_the_medians_and_the_criterion() -> None:
    lines = summary_lines(summary([kernel_a()], POLICIES, 3), "heldout", 3)
    assert lines == ["median over 1 heldout kernels (evaluations to 95% of the reference, final speedup after 3):",
                     "  heuristic: 2.5, 1.955x", "  uniform: >3, 1.300x", "  learned: 1, 2.000x",
                     "learned vs heuristic and uniform: at most half the evaluations yes, final speedup not lower yes",
                     "  final speedup kernel by kernel: vs heuristic 1 higher, 0 equal, 0 lower; "
                     "vs uniform 1 higher, 0 equal, 0 lower"]
