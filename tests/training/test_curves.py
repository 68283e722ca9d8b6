"""Search-efficiency curves (cuopt.training.curves): the curve of a finished search, evaluations to
95% of the reference with runs that never get there, medians over kernels and the criterion, and
the SVG plot (well-formed, one curve per policy, deterministic)."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from types import SimpleNamespace
from typing import Any

import pytest

from cuopt.training.curves import MIN_REFERENCE_SPEEDUP, KernelRuns, Run, curve, evals_to_reach, kernel_json, mean_curve, summary, svg
from cuopt.search.mcts import Measurement, Node

SVG = "{http://www.w3.org/2000/svg}"
POLICIES = ["heuristic", "uniform", "learned"]


def node(index: int, ms: float | None, evaluated_at: int | None, status: str = "ok",
         duplicate_of: int | None = None) -> Node:
    return Node(index, f"k{index}", None, None, None, None, 1.0, 1, measurement=Measurement(status, ms),
                duplicate_of=duplicate_of, evaluated_at=evaluated_at)


def search(nodes: list[Node], evaluations: int, baseline_ms: float = 1.0) -> Any:
    return SimpleNamespace(baseline_ms=baseline_ms, nodes=nodes, evaluations=evaluations)


def test_curve_is_the_best_speedup_after_each_fresh_evaluation() -> None:
    nodes = [node(0, 1.0, None),  # the original: speedup 1.0 from the start
             node(1, 0.8, 1),
             node(2, None, 2, status="mismatch"),
             node(3, 0.9, 3),  # slower than the best so far
             node(4, 0.8, None, duplicate_of=1),
             node(5, 0.5, 4),
             node(6, 0.25, None),  # a cache hit: no fresh evaluation, so it does not count
             node(7, 0.6, 5),
             node(8, None, None)]  # not measured (the budget ran out)
    nodes[8].measurement = None
    assert curve(search(nodes, 5)) == [1.0, 1.25, 1.25, 1.25, 2.0, 2.0]


def test_curve_without_evaluations_or_improvement_stays_at_one() -> None:
    assert curve(search([node(0, 2.0, None)], 0, 2.0)) == [1.0]
    assert curve(search([node(0, 2.0, None), node(1, 3.0, 1), node(2, None, 2, "fault")], 2, 2.0)) == [1.0] * 3


def test_evals_to_reach() -> None:
    assert evals_to_reach([1.0, 1.2, 1.5, 1.5], 1.5) == 2
    assert evals_to_reach([1.0, 1.2], 1.0) == 0
    assert evals_to_reach([1.0, 1.2], 1.3) is None


def kernel_a() -> KernelRuns:
    """Reference 2.0x, so the target is 2.0 ** 0.95 = 1.932x; uniform never reaches it."""
    return KernelRuns("a", [Run("heuristic", 0, [1.0, 1.5, 1.95, 1.95]), Run("heuristic", 1, [1.0, 1.0, 1.0, 1.96]),
                            Run("uniform", 0, [1.0, 1.1, 1.2, 1.3]),
                            Run("learned", 0, [1.0, 1.94, 2.0, 2.0], best=["coarsen@3:1/factor=2", "unroll@5:5/factor=4"])],
                      reference=Run("uniform", 0, [1.0, 1.2, 1.3, 1.6, 2.0], "reached --max-evals 4"))


def kernel_b() -> KernelRuns:
    """Nothing faster than the original: the target is 1.0x, reached by every run at once."""
    return KernelRuns("b", [Run(p, 0, [1.0] * 4) for p in POLICIES])


def kernel_c() -> KernelRuns:
    """Reference 1.5x (target 1.47x): heuristic needs 2 evaluations, uniform 2, learned 1."""
    return KernelRuns("c", [Run("heuristic", 0, [1.0, 1.2, 1.5, 1.5]), Run("uniform", 0, [1.0, 1.0, 1.5, 1.5]),
                            Run("learned", 0, [1.0, 1.5, 1.5, 1.5])])


def test_kernel_metrics_with_a_policy_that_never_reaches_the_target() -> None:
    a = kernel_a()
    assert a.reference_speedup() == 2.0
    assert a.target() == pytest.approx(2.0 ** 0.95)
    assert a.evals_to_target("heuristic", 3) == 2.5  # median of the seeds' 2 and 3
    assert a.evals_to_target("uniform", 3) == 4  # never: counted as max_evals + 1
    assert a.evals_to_target("learned", 3) == 1
    assert a.final("heuristic") == pytest.approx(1.955)
    data = kernel_json(a, POLICIES, 3)
    assert data["policies"]["uniform"] == {"evals_to_95": 4, "final_speedup": 1.3}
    assert [r["evals_to_95"] for r in data["runs"]] == [2, 3, None, 1]
    assert [r["best"] for r in data["runs"]] == [None, None, None, ["coarsen@3:1/factor=2", "unroll@5:5/factor=4"]]
    assert data["reference"]["evals_to_95"] == 4 and data["reference"]["evaluations"] == 4
    assert data["reference"]["stop"] == "reached --max-evals 4"
    without_reference = KernelRuns("a", kernel_a().runs)
    assert without_reference.reference_speedup() == 2.0  # the best final speedup of the runs themselves


def test_summary_medians_over_kernels_and_the_criterion() -> None:
    s = summary([kernel_a(), kernel_c(), kernel_b()], POLICIES, 3)
    # b found nothing faster than the original: every policy "reaches" it at once; not scored
    assert s["kernels"] == 2 and s["below_min_speedup"] == ["b"] and s["truncated"] == [] and s["unreached_counts_as"] == 4
    assert s["min_reference_speedup"] == MIN_REFERENCE_SPEEDUP
    assert s["policies"]["heuristic"]["median_evals_to_95"] == 2.25  # kernels: 2.5 and 2
    assert s["policies"]["uniform"] == {"median_evals_to_95": 3.0, "median_final_speedup": 1.4,
                                        "runs_not_reaching_95": 1}
    assert s["policies"]["learned"]["median_evals_to_95"] == 1.0
    assert s["policies"]["learned"]["median_final_speedup"] == 1.75
    assert s["criteria"] == [{"policy": "learned", "against": ["heuristic", "uniform"],
                              "at_most_half_the_evaluations": True, "final_not_lower": True, "met": True,
                              "final_by_kernel": {"heuristic": {"higher": 1, "equal": 1, "lower": 0},
                                                  "uniform": {"higher": 1, "equal": 1, "lower": 0}}}]


def test_final_by_kernel_pairs_what_the_medians_do_not() -> None:
    """Higher on two kernels of three, lower on one, yet a lower median: the counts show both."""
    finals = {"k1": (1.1, 1.2), "k2": (1.6, 1.3), "k3": (1.4, 1.5)}  # (baselines, learned)
    kernels = [KernelRuns(name, [Run("heuristic", 0, [1.0, base]), Run("uniform", 0, [1.0, base]),
                                 Run("learned", 0, [1.0, mine])]) for name, (base, mine) in finals.items()]
    c = summary(kernels, POLICIES, 1)["criteria"][0]
    assert c["final_not_lower"] is False  # median 1.3 against 1.4
    assert c["final_by_kernel"] == {"heuristic": {"higher": 2, "equal": 0, "lower": 1},
                                    "uniform": {"higher": 2, "equal": 0, "lower": 1}}


def test_criterion_fails_when_learned_is_slow_or_ends_lower() -> None:
    a = kernel_a()
    a.runs[-1] = Run("learned", 0, [1.0, 1.0, 1.0, 1.9])
    c = summary([a], POLICIES, 3)["criteria"][0]
    assert (c["at_most_half_the_evaluations"], c["final_not_lower"], c["met"]) == (False, False, False)


def test_summary_without_kernels_or_without_a_learned_policy() -> None:
    empty = summary([], POLICIES, 3)
    assert empty["policies"]["learned"] == {"median_evals_to_95": None, "median_final_speedup": None,
                                            "runs_not_reaching_95": 0}
    assert empty["criteria"][0]["met"] is None
    assert summary([kernel_a()], ["heuristic", "uniform"], 3)["criteria"] == []
    assert summary([kernel_a()], ["learned"], 3)["criteria"] == []  # nothing to compare with


def test_mean_curve_is_the_geometric_mean_and_stays_flat_after_a_short_search() -> None:
    kernels = [KernelRuns("x", [Run("uniform", 0, [1.0, 2.0])]), KernelRuns("y", [Run("uniform", 0, [1.0, 1.0, 8.0])])]
    assert mean_curve(kernels, "uniform", 3) == pytest.approx([1.0, math.sqrt(2.0), 4.0, 4.0])


def test_svg_is_well_formed_with_one_curve_per_policy() -> None:
    kernels = [kernel_a(), kernel_b(), KernelRuns("c<&>\"", kernel_b().runs)]
    text = svg(kernels, POLICIES, 3, "curves & more")
    assert text == svg(kernels, POLICIES, 3, "curves & more")  # deterministic
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    main = next(g for g in root.iter(f"{SVG}g") if g.get("id") == "summary")
    lines = main.findall(f"{SVG}polyline")
    assert [p.get("data-policy") for p in lines] == POLICIES
    assert all(p.get("points", "").startswith("70.0,350.0 ") for p in lines)  # speedup 1.0 at k = 0
    assert len(main.findall(f"{SVG}line[@class='target']")) == 1
    panels = [g for g in root.iter(f"{SVG}g") if g.get("class") == "kernel"]
    assert [g.get("id") for g in panels] == ["kernel-a", "kernel-b", "kernel-c<&>\""]
    assert all(len(g.findall(f"{SVG}polyline")) == 3 for g in panels)
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"curves & more", "fresh evaluations", "best speedup (x)", *POLICIES} <= texts
    assert not [g for g in ET.fromstring(svg(kernels, POLICIES, 3, "t", per_kernel=False)).iter(f"{SVG}g")
                if g.get("class") == "kernel"]
