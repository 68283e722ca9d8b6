"""Candidates of one search spread over the idle GPUs of the machine (cuopt/optimization/lanes.py):
each lent GPU times the original itself and its times count in the search GPU's terms, so a slower
GPU never misleads the search; a GPU of another architecture is not used; what is lent comes back
after the batch; nothing is lent while a search waits for a GPU. With nvcc, end to end through
`--gpus all` on stand-in GPUs of different speeds: the same result as on one GPU."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.evaluate.evaluator import Outcome, Variant
from cuopt.evaluate.stats import Timing
from cuopt.optimization.environment import GpuEnvironment, variant_key
from cuopt.optimization.jobs import Options
from cuopt.optimization.runners import LocalGpus
from cuopt.search.budget import Budget
from cuopt.search.mcts import Measurement
from tests.conftest import requires_nvcc
from tests.optimization.test_environment import FakeCompiled, FakeEvaluator, variant
from tests.optimization.test_optimize_standin import HOST, N, QuickStandInBackend


class FakeClient:
    def __init__(self, speed: float, arch: str = "sm_90") -> None:
        self.speed, self.device = speed, {"arch": arch}


class Station:
    def __init__(self, label: str, speed: float, arch: str = "sm_90") -> None:
        self.label, self.client = label, FakeClient(speed, arch)

    def open(self) -> FakeClient:
        return self.client


class Lender:
    def __init__(self, stations: list[Station]) -> None:
        self.idle, self.lent = list(stations), 0

    def borrow(self) -> list[Station]:
        out, self.idle = self.idle, []
        self.lent += len(out)
        return out

    def give_back(self, stations: list[Station]) -> None:
        self.idle.extend(stations)


class SpeedEvaluator(FakeEvaluator):
    """The fake evaluator on a GPU `speed` times slower; each run takes a little real time, so that
    every GPU of a batch gets work."""

    def __init__(self, tmp: Path, client: FakeClient, runs: list[str], label: str = "own") -> None:
        super().__init__(tmp)
        self.client, self.log, self.label = client, runs, label

    timing, seed = None, None

    def sibling(self, *, timing: Any, seed: int | None = None, client: FakeClient | None = None) -> SpeedEvaluator:
        assert client is not None
        return SpeedEvaluator(self.tmp, client, self.log, f"x{client.speed}")

    def set_reference(self, compiled: Any, launch: Any, source: str | None = None) -> Outcome:
        return Outcome("ok")

    def evaluate(self, variant: Variant, compiled: FakeCompiled) -> Outcome:
        time.sleep(0.02)
        self.log.append(self.label)
        outcome = super().evaluate(variant, compiled)
        assert outcome.timing is not None
        outcome.timing = Timing(outcome.timing.median_ms * self.client.speed, 0.01,
                                outcome.timing.min_ms * self.client.speed, 10)
        return outcome

    def close(self) -> None:
        self.log.append(f"close {self.label}")


def spread_env(tmp_path: Path, stations: list[Station]) -> tuple[GpuEnvironment, list[str], Lender]:
    runs: list[str] = []
    ev = SpeedEvaluator(tmp_path, FakeClient(1.0), runs)
    lender = Lender(stations)
    e = GpuEnvironment(ev, None, None, frozenset(), False, None, workers=2, lender=lender)  # type: ignore[arg-type]
    original = variant("original", "ms=5.0")
    e.remember(original, ev.compile(original), Measurement("ok", 5.0, 0.01))
    return e, runs, lender


def batch(n: int) -> list[Variant]:
    return [variant(f"v{i}", f"ms={1.0 + i / 10}") for i in range(n)]


def test_a_batch_spreads_over_a_lent_gpu_and_counts_its_times_in_the_search_gpu_s_terms(tmp_path: Path) -> None:
    e, runs, lender = spread_env(tmp_path, [Station("1", 2.0)])
    states = batch(8)
    measured = e.evaluate(states, Budget(60.0))
    assert [m.ms for m in measured] == pytest.approx([1.0 + i / 10 for i in range(8)])  # as if all on GPU 0
    lent = [m for m in measured if m.extra.get("gpu") == "1"]
    assert lent and len(lent) < 8 and runs.count("x2.0") == len(lent) + 1  # + its own baseline
    assert all("gpu" not in m.extra for m in measured if m not in lent)
    assert lender.idle and lender.lent == 1  # given back after the batch
    e.close()
    assert "close x2.0" in runs


def test_two_variants_of_one_binary_are_measured_once_across_gpus(tmp_path: Path) -> None:
    e, runs, _ = spread_env(tmp_path, [Station("1", 1.0)])
    same = [variant(f"spelling {i}", "ms=2.0") for i in range(4)]
    measured = e.evaluate(same + batch(2), Budget(60.0))
    firsts = [m for m in measured[:4] if "same_binary_as" not in m.extra]
    assert len(firsts) == 1 and len([r for r in runs if r in ("own", "x1.0")]) == 1 + 2 + 1  # + lent baseline
    twins = [m for m in measured[:4] if "same_binary_as" in m.extra]
    assert len(twins) == 3 and {m.extra["same_binary_as"] for m in twins} == {variant_key(same[measured.index(firsts[0])])}


def test_a_gpu_of_another_architecture_is_not_used(tmp_path: Path) -> None:
    e, runs, _ = spread_env(tmp_path, [Station("1", 1.0, arch="sm_80")])
    measured = e.evaluate(batch(4), Budget(60.0))
    assert all(m is not None and "gpu" not in m.extra for m in measured) and set(runs) == {"own"}
    assert e.lanes.notes == ["GPU 1 is sm_80, not sm_90: not used"]


def test_without_a_lent_gpu_the_batch_runs_on_the_search_s_own(tmp_path: Path) -> None:
    e, runs, lender = spread_env(tmp_path, [])
    assert [m.ms for m in e.evaluate(batch(3), Budget(60.0))] == pytest.approx([1.0, 1.1, 1.2])
    assert runs == ["own"] * 3


def test_nothing_is_lent_while_a_search_waits_for_a_gpu() -> None:
    gpus = LocalGpus([0, 1], Options())
    try:
        lent = gpus.borrow()
        assert sorted(s.label for s in lent) == ["0", "1"] and gpus.borrow() == []
        gpus.give_back(lent)
        gpus.starting = 1
        assert gpus.borrow() == []
    finally:
        gpus.close()


class UnevenGpus(QuickStandInBackend):
    """Two stand-in GPUs; the second one's kernels take 1.5 times as long."""

    def __init__(self, device: int = 0) -> None:
        super().__init__(device)
        self.slow = 1.5 if device == 1 else 1.0

    def device_info(self) -> dict[str, Any]:
        return {**super().device_info(), "count": 2}

    def timed_launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
                     args: Sequence[Any]) -> float:
        return super().timed_launch(fn, grid, block, shared, args) * self.slow


@requires_nvcc
def test_one_kernel_on_two_uneven_gpus_finds_what_one_gpu_finds(monkeypatch: pytest.MonkeyPatch, samples: Path,
                                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", f"{__name__}:UnevenGpus")
    spec = (samples / "saxpy.cuopt.toml").read_text().replace("n = 67108864", f"n = {N}") \
        .replace("{ n = 1000003 }", "{ n = 1003 }")
    out = {}
    for gpus in ("0", "all"):
        d = tmp_path / gpus
        d.mkdir()
        (d / "saxpy.cu").write_text((samples / "saxpy.cu").read_text() + HOST)
        (d / "saxpy.cuopt.toml").write_text(spec)
        result = CliRunner().invoke(app, ["optimize", str(d / "saxpy.cu"), "--json", "--no-sanitizer",
                                          "--max-evals", "24", "--budget", "120s", "--gpus", gpus])
        assert result.exit_code == 0, result.output
        out[gpus] = json.loads(result.stdout)
        trace = json.loads(Path(out[gpus]["trace"]).read_text())
        out[gpus]["lent"] = [c for c in trace["candidates"] if c["extra"].get("gpu") == "1"]
        out[gpus]["ms"] = {c["key"]: c["ms"] for c in trace["candidates"]}
    one, two = out["0"], out["all"]
    assert one["lent"] == [] and two["lent"], "the second GPU measured nothing"
    assert two["status"] == one["status"] == "written"
    assert (two["sequence"], two["evaluations"], two["best_ms"]) == (one["sequence"], one["evaluations"], one["best_ms"])
    assert two["ms"] == pytest.approx(one["ms"])  # every candidate's time, in GPU 0's terms
