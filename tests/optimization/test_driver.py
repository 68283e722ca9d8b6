"""The driver with a stand-in runner (no GPU, no compiler): how the budget is shared between kernels
of different cost and headroom, the minimum round, and that each kernel gets one result. The
stand-in "search" spends no time: it reports what a search of that share would have cost."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cuopt.optimization.driver import Driver, Plan
from cuopt.optimization.jobs import Job, Options
from cuopt.optimization.result import KernelRun, Probe
from cuopt.optimization.schedule import MIN_CANDIDATES, Equal, Headroom
from cuopt.targets import collect


@dataclass(frozen=True)
class Cost:
    setup_s: float
    eval_s: float
    variants: int  # how many variants the tree has (then it is exhausted)
    floor_ratio: float  # baseline / roofline floor


class StandInRunner:
    """Answers a search job at once, as a kernel of the given cost would have in `job.seconds`."""

    def __init__(self, costs: dict[str, Cost], slots: int = 1) -> None:
        self.costs, self.slots = costs, slots
        self.jobs: list[Job] = []
        self.done: list[tuple[Any, KernelRun]] = []
        self.first: dict[str, int] = {}  # evaluations of each kernel's minimum round (replayed, and counted, after)

    def submit(self, task: str, job: Job) -> Any:
        self.jobs.append(job)
        c = self.costs[job.path.stem]
        evals = max(0, int((job.seconds - (5.0 if job.confirm else 0.0) - c.setup_s) / c.eval_s))
        before = self.first.get(job.name, 0)
        evals = min(evals + before, c.variants, job.max_evals if job.max_evals is not None else c.variants)
        if not job.confirm:
            self.first[job.name] = evals
        probe = Probe(1.0, c.setup_s, c.eval_s, evals, 1.0 / (1 + 0.1 * evals), evals >= c.variants,
                      1.0 / c.floor_ratio)
        status = "no-candidate" if job.confirm else "searched"
        summary = {"file": str(job.path), "kernel": job.table, "status": status, "message": status,
                   "evaluations": evals}
        run = KernelRun(job.path, job.table, job.table, status, status, summary, {}, probe=probe,
                        seconds=c.setup_s + (evals - before) * c.eval_s + (5.0 if job.confirm else 0.0))
        handle = object()
        self.done.append((handle, run))
        return handle

    def finished(self) -> list[tuple[Any, KernelRun]]:
        out, self.done = self.done[:1], self.done[1:]
        return out

    def close(self) -> None:
        pass


@pytest.fixture
def kernels(samples: Path, tmp_path: Path) -> Path:
    """Five copies of saxpy: two 100x heavier, one with almost nothing to try, one at its floor."""
    d = tmp_path / "mixed"
    d.mkdir()
    for stem in ("light1", "light2", "heavy1", "heavy2", "tiny"):
        shutil.copy(samples / "saxpy.cu", d / f"{stem}.cu")
        shutil.copy(samples / "saxpy.cuopt.toml", d / f"{stem}.cuopt.toml")
    return d


COSTS = {"light1": Cost(1.0, 0.5, 1000, 8.0), "light2": Cost(1.0, 0.5, 1000, 1.5),
         "heavy1": Cost(50.0, 25.0, 1000, 8.0), "heavy2": Cost(50.0, 25.0, 1000, 8.0),
         "tiny": Cost(1.0, 0.5, 2, 8.0)}


def run(kernels: Path, schedule: Any, seconds: float, slots: int = 1) -> tuple[list[Any], StandInRunner]:
    runner = StandInRunner(COSTS, slots)
    results = Driver(collect([kernels]), Options(), runner, schedule, Plan(seconds)).run()
    return results, runner


def by_stem(results: list[Any]) -> dict[str, Any]:
    return {Path(r.file).stem: r for r in results}


def test_every_kernel_gets_its_minimum_and_the_heavy_ones_are_not_starved(kernels: Path) -> None:
    results, runner = run(kernels, Headroom(), 600.0)
    assert sorted(Path(j.path).stem for j in runner.jobs if not j.confirm) == sorted(COSTS)  # the minimum round
    first = {Path(j.path).stem: j for j in runner.jobs if not j.confirm}
    assert all(j.max_evals == MIN_CANDIDATES for j in first.values())
    r = by_stem(results)
    assert len(results) == len(COSTS) and all(x.status == "no-candidate" for x in results)
    assert all(x.evaluations >= min(MIN_CANDIDATES, COSTS[s].variants) for s, x in r.items())
    last = {Path(j.path).stem: j.seconds for j in runner.jobs if j.confirm}
    assert last["heavy1"] > last["light1"]  # more seconds where an evaluation costs more and gains as much
    assert last["light1"] > last["light2"]  # light2 is near its floor: little to gain
    assert last["tiny"] < last["light2"]  # its tree is exhausted after the minimum round
    assert r["heavy1"].budget["minimum_s"] == pytest.approx(50.0 + MIN_CANDIDATES * 25.0 + 60.0, abs=0.1)
    assert sum(last.values()) <= 600.0


def test_equal_shares_starve_the_heavy_kernels(kernels: Path) -> None:
    results, runner = run(kernels, Equal(), 200.0)
    r = by_stem(results)
    assert not any(not j.confirm for j in runner.jobs)  # no minimum round
    assert r["heavy1"].evaluations == 0 and r["light1"].evaluations > MIN_CANDIDATES


def test_a_budget_too_small_for_a_kernel_says_what_it_needs(kernels: Path) -> None:
    results, _ = run(kernels, Headroom(), 60.0)
    skipped = [x for x in results if x.status == "skipped"]
    assert skipped, [(x.file, x.status, x.budget) for x in results]
    for x in skipped:
        assert "needs at least" in x.message or "ran out" in x.message, x.message
    heavy = by_stem(results)["heavy1"]
    assert "needs about" in heavy.budget.get("note", "") or heavy.status == "skipped"


def test_a_files_kernels_run_in_order_and_every_kernel_has_one_result(samples: Path, tmp_path: Path) -> None:
    d = tmp_path / "two"
    d.mkdir()
    text = (samples / "saxpy.cu").read_text()
    (d / "pair.cu").write_text(text + text.replace("saxpy", "saxpy2"))
    spec = (samples / "saxpy.cuopt.toml").read_text()
    (d / "pair.cuopt.toml").write_text(spec + "\n" + spec.replace("[saxpy", "[saxpy2"))
    costs = {"pair": Cost(1.0, 0.5, 1000, 8.0)}
    runner = StandInRunner(costs, slots=4)
    results = Driver(collect([d]), Options(), runner, Headroom(), Plan(100.0)).run()
    assert [r.kernel for r in results] == ["saxpy", "saxpy2"]
    assert [j.table for j in runner.jobs if j.confirm] == ["saxpy", "saxpy2"]
