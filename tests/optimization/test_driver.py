"""The driver with a stand-in runner (no GPU, no compiler): how the budget is shared between kernels
of different cost and headroom, the minimum round, and that each kernel gets one result. The
stand-in "search" spends no time: it reports what a search of that share would have cost."""
from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from cuopt.optimization.driver import Driver, Plan
from cuopt.optimization.jobs import Job, Options
from cuopt.optimization.result import KernelRun, Probe
from cuopt.optimization.schedule import MIN_CANDIDATES, Equal, Headroom, confirm_reserve
from cuopt.optimization.trace import load_trace
from cuopt.search.mcts import TIME_STOP
from cuopt.spec.model import load as load_spec, spec_path_for
from cuopt.targets import collect


@dataclass(frozen=True)
class Cost:
    setup_s: float
    eval_s: float
    variants: int  # how many variants the tree has (then it is exhausted)
    gain_left: float  # log(best / roofline floor), whatever the evaluations


class StandInRunner:
    """Answers a search job as a kernel of the given cost would have: as many evaluations as its
    share allows (at least the job's minimum, within its hard limit), then more while `extend`
    gives more seconds. Jobs run one after the other on `clock`, which advances as they spend."""

    def __init__(self, costs: dict[str, Cost], schedule: Any, slots: int = 1) -> None:
        self.costs, self.schedule, self.slots = costs, schedule, slots
        self.now = 0.0
        self.jobs: list[Job] = []
        self.queued: list[tuple[Any, Job, Any]] = []
        self.extended: dict[str, float] = {}

    def submit(self, task: str, job: Job, extend: Any = None) -> Any:
        self.jobs.append(job)
        handle = object()
        self.queued.append((handle, job, extend))
        return handle

    def finished(self) -> list[tuple[Any, KernelRun]]:
        handle, job, extend = self.queued.pop(0)
        c = self.costs[job.path.stem]
        start = self.now
        reserve = confirm_reserve(job.seconds) if job.confirm else 0.0

        def fits(seconds: float) -> int:
            return max(0, int((seconds - reserve - c.setup_s) / c.eval_s))

        def probe(evals: int) -> Probe:
            return Probe(1.0, c.setup_s, c.eval_s, evals, 0.5, evals >= c.variants, 0.5 / math.exp(c.gain_left), 0)

        cap = job.max_evals if job.max_evals is not None else c.variants
        if self.schedule.enough(probe(job.min_evals), 0.03):  # what the search itself would stop on
            cap = min(cap, job.min_evals)
        evals = min(fits(job.seconds), cap, c.variants)
        if evals < job.min_evals:
            evals = min(job.min_evals, fits(job.hard_seconds or job.seconds), cap, c.variants)

        def ask(evals: int) -> float:
            self.now = start + c.setup_s + evals * c.eval_s
            return extend(probe(evals)) if extend is not None and evals < min(cap, c.variants) else 0.0

        more = ask(evals)
        while more > 0:
            self.extended[job.path.stem] = self.extended.get(job.path.stem, 0.0) + more
            evals = min(evals + int(more / c.eval_s), cap, c.variants)
            more = ask(evals)
        confirming = confirm_reserve(0.0, c.eval_s) if job.confirm else 0.0  # what confirming takes
        self.now = start + c.setup_s + evals * c.eval_s + confirming
        status = "no-candidate" if job.confirm else "searched"
        summary = {"file": str(job.path), "kernel": job.table, "status": status, "message": status,
                   "evaluations": evals, "stop": TIME_STOP if evals < min(cap, c.variants) else "exhausted"}
        rows = [{"key": f"{job.path.stem}-{len(self.jobs)}-{i}"} for i in range(evals)]
        trace = {"kernel": job.table, "stop": summary["stop"], "evaluations": evals, "candidates": [],
                 "chosen": {"steps": []}, "search": len(self.jobs)}  # which job searched, in job order
        run = KernelRun(job.path, job.table, job.table, status, status, summary, trace, probe=probe(evals),
                        seconds=self.now - start, cache_rows=rows)
        return [(handle, run)]

    def close(self) -> None:
        pass


@pytest.fixture
def kernels(samples: Path, tmp_path: Path) -> Path:
    """Five copies of saxpy (in this order): a light one with headroom, one at its floor, one with
    almost nothing to try, and two 50x heavier."""
    d = tmp_path / "mixed"
    d.mkdir()
    for stem in COSTS:
        shutil.copy(samples / "saxpy.cu", d / f"{stem}.cu")
        shutil.copy(samples / "saxpy.cuopt.toml", d / f"{stem}.cuopt.toml")
    return d


COSTS = {"a_light": Cost(1.0, 0.5, 1000, 1.0), "b_flat": Cost(1.0, 0.5, 1000, 0.0),
         "c_tiny": Cost(1.0, 0.5, 2, 1.0), "d_heavy": Cost(50.0, 25.0, 1000, 1.0), "e_heavy": Cost(50.0, 25.0, 1000, 1.0)}


def run(kernels: Path, schedule: Any, seconds: float, slots: int = 1) -> tuple[list[Any], StandInRunner]:
    runner = StandInRunner(COSTS, schedule, slots)
    results = Driver(collect([kernels]), Options(), runner, schedule, Plan(seconds), clock=lambda: runner.now).run()
    return results, runner


def by_stem(results: list[Any]) -> dict[str, Any]:
    return {Path(r.file).stem: r for r in results}


def test_every_kernel_gets_its_minimum_and_more_goes_where_it_pays(kernels: Path) -> None:
    results, runner = run(kernels, Headroom(), 600.0)  # covers every minimum (the heavy ones: 168 s each)
    r = by_stem(results)
    assert len(results) == len(COSTS) and all(x.status == "no-candidate" for x in results)
    assert all(j.min_evals == MIN_CANDIDATES for j in runner.jobs)
    assert all(x.evaluations >= min(MIN_CANDIDATES, COSTS[s].variants) for s, x in r.items())
    assert r["d_heavy"].evaluations >= MIN_CANDIDATES and r["e_heavy"].evaluations >= MIN_CANDIDATES
    extended = runner.extended
    assert extended.get("a_light", 0) > 0  # its share ran out with headroom left and room to spare
    assert "b_flat" not in extended and "c_tiny" not in extended  # at its floor; exhausted
    assert r["b_flat"].evaluations == MIN_CANDIDATES  # at its floor: it stops after the minimum
    assert r["a_light"].budget["extended_s"] == pytest.approx(extended["a_light"], abs=0.1)
    assert r["d_heavy"].budget["minimum_s"] == pytest.approx(50.0 + MIN_CANDIDATES * 25.0 + 60.0, abs=0.1)
    assert sum(x.budget["used_s"] for x in results) <= 600.0 + 1e-6


def test_equal_shares_starve_the_heavy_kernels(kernels: Path) -> None:
    results, runner = run(kernels, Equal(), 300.0)
    r = by_stem(results)
    assert r["d_heavy"].evaluations == 0 and r["a_light"].evaluations > MIN_CANDIDATES
    assert by_stem(run(kernels, Headroom(), 300.0)[0])["d_heavy"].evaluations >= MIN_CANDIDATES
    assert not runner.extended


def test_a_budget_too_small_for_a_kernel_says_what_it_needs(kernels: Path) -> None:
    results, _ = run(kernels, Headroom(), 250.0)  # a heavy kernel's minimum (168 s) takes most of it
    r = by_stem(results)
    assert r["d_heavy"].evaluations >= MIN_CANDIDATES
    skipped = [x for x in results if x.status == "skipped"]
    assert skipped and all("ran out" in x.message and "needs about" in x.message for x in skipped), skipped


def pair_file(samples: Path, d: Path, stem: str) -> None:
    """`d/stem.cu` with two copies of saxpy, `saxpy` and `saxpy2`, and their spec."""
    d.mkdir(exist_ok=True)
    text = (samples / "saxpy.cu").read_text()
    (d / f"{stem}.cu").write_text(text + text.replace("saxpy", "saxpy2"))
    spec = (samples / "saxpy.cuopt.toml").read_text()
    (d / f"{stem}.cuopt.toml").write_text(spec + "\n" + spec.replace("[saxpy", "[saxpy2"))


def test_a_files_kernels_run_in_order_and_every_kernel_has_one_result(samples: Path, tmp_path: Path) -> None:
    d = tmp_path / "two"
    pair_file(samples, d, "pair")
    costs = {"pair": Cost(1.0, 0.5, 1000, 1.0)}
    runner = StandInRunner(costs, Headroom(), slots=4)
    results = Driver(collect([d]), Options(), runner, Headroom(), Plan(100.0), clock=lambda: runner.now).run()
    assert [r.kernel for r in results] == ["saxpy", "saxpy2"]
    assert [j.table for j in runner.jobs if j.confirm] == ["saxpy", "saxpy2"]


class ConfirmingRunner(StandInRunner):
    """The stand-in, whose searches confirm a variant: the n-th search of a kernel ("file stem:spec
    table") confirms `speedups[kernel][n]` (None: no candidate), a variant marked with a comment naming n."""

    def __init__(self, costs: dict[str, Cost], schedule: Any, speedups: dict[str, list[float | None]]) -> None:
        super().__init__(costs, schedule)
        self.speedups = speedups
        self.searches: dict[str, int] = {}

    def finished(self) -> list[tuple[Any, KernelRun]]:
        job = self.queued[0][1]
        [(handle, run)] = super().finished()
        name = f"{job.path.stem}:{job.table}"
        n = self.searches[name] = self.searches.get(name, -1) + 1
        speedup = self.speedups[name][n]
        if speedup is None:
            return [(handle, run)]
        marked = job.text.replace("y[i] = a * x[i] + y[i];", f"y[i] = a * x[i] + y[i];  // search {n}")
        run = replace(run, status="confirmed", final_source=marked, summary={**run.summary, "speedup": speedup},
                      final_launch=load_spec(spec_path_for(job.path)).kernels[job.table].launch)
        return [(handle, run)]


def test_time_left_resumes_a_search_its_share_stopped_from_where_it_started(kernels: Path) -> None:
    results, runner = run(kernels, Headroom(), 600.0)  # every kernel has its turn with 21 s to spare
    r = by_stem(results)
    again = [j for j in runner.jobs if j.path.stem == "a_light"]
    assert len(again) == 2 and len(runner.jobs) == len(COSTS) + 1  # the heavy ones cost too much to restart
    first, resumed = again
    assert (resumed.text, resumed.spec_text) == (first.text, first.spec_text)
    rows = {row["key"] for row in resumed.cache_rows}
    assert {f"a_light-1-{i}" for i in range(r["a_light"].evaluations)} <= rows  # what its first search measured
    assert r["a_light"].budget["resumed_s"] == pytest.approx(resumed.seconds, abs=0.1)
    assert r["a_light"].budget["resume"] == "no faster variant confirmed"
    assert r["a_light"].budget["used_s"] > r["a_light"].budget["share_s"] - confirm_reserve(120.0)
    assert "resumed_s" not in r["b_flat"].budget and "resumed_s" not in r["c_tiny"].budget  # at the floor; exhausted
    assert sum(x.budget["used_s"] for x in results) <= 600.0 + 1e-6
    assert not [j for j in run(kernels, Equal(), 600.0)[1].jobs if j.path.stem == "a_light"][1:]


@pytest.mark.parametrize("second, written", [(3.0, 1), (2.02, 0), (None, 0)])
def test_a_resumed_search_is_written_only_when_it_confirms_a_faster_variant(
        samples: Path, tmp_path: Path, second: float | None, written: int) -> None:
    d = tmp_path / "one"
    d.mkdir()
    shutil.copy(samples / "saxpy.cu", d / "a_light.cu")
    shutil.copy(samples / "saxpy.cuopt.toml", d / "a_light.cuopt.toml")
    runner = ConfirmingRunner({"a_light": COSTS["a_light"]}, Headroom(), {"a_light:saxpy": [2.0, second]})
    [result] = Driver(collect([d]), Options(), runner, Headroom(), Plan(100.0), clock=lambda: runner.now).run()
    assert len(runner.jobs) == 2 and runner.jobs[1].text == (samples / "saxpy.cu").read_text()
    text = (d / "a_light.cu").read_text()
    assert f"// search {written}" in text and text.count("// search") == 1
    assert result.status == "written" and result.speedup == (3.0 if written else 2.0)
    assert result.budget["resumed_s"] > 0 and ("resume" in result.budget) == (not written)
    assert result.budget["used_s"] == pytest.approx(runner.now, abs=0.1)
    trace = load_trace(Path(result.trace))
    assert trace["search"] == 1 + written, "the trace of the search whose result stands"
    if not written:  # the resumed search is in that trace, and the budget it shows is the kernel's final one
        assert trace["resumed"]["seconds"] == result.budget["resumed_s"] > 0
        assert trace["resumed"]["outcome"] == "no faster variant confirmed"
        assert trace["resumed"]["evaluations"] > 0 and trace["budget"] == result.budget
    assert "resumed" not in trace or not written


def test_a_search_does_not_resume_once_a_later_kernel_of_its_file_was_written(samples: Path, tmp_path: Path) -> None:
    d = tmp_path / "pair"
    pair_file(samples, d, "a_light")
    shutil.copy(samples / "saxpy.cu", d / "b_flat.cu")  # at its floor: it leaves most of its share
    shutil.copy(samples / "saxpy.cuopt.toml", d / "b_flat.cuopt.toml")
    costs = {"a_light": COSTS["a_light"], "b_flat": COSTS["b_flat"]}
    speedups: dict[str, list[float | None]] = {"a_light:saxpy": [None, 3.0], "a_light:saxpy2": [2.0, 3.0],
                                                 "b_flat:saxpy": [None]}
    runner = ConfirmingRunner(costs, Headroom(), speedups)
    results = Driver(collect([d]), Options(), runner, Headroom(), Plan(150.0), clock=lambda: runner.now).run()
    started = [f"{j.path.name}:{j.table}" for j in runner.jobs]  # saxpy does not resume: saxpy2 was written after it
    assert started == ["a_light.cu:saxpy", "a_light.cu:saxpy2", "b_flat.cu:saxpy", "a_light.cu:saxpy2"]
    assert [r.status for r in results] == ["no-candidate", "written", "no-candidate"] and results[1].speedup == 3.0
    assert "resumed_s" not in results[0].budget
