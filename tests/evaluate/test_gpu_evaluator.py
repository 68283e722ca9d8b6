"""The evaluator on a real GPU: bench every sample, reject wrong, faulting and hanging variants."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant
from cuopt.targets import collect

from tests.conftest import SAMPLES

pytestmark = pytest.mark.gpu


def _saxpy(client) -> tuple[KernelEvaluator, str]:
    target = collect([SAMPLES / "saxpy.cu"])[0]
    ev = KernelEvaluator(target.path, target.bound, client, arch=client.device["arch"],
                         timing=TimingOptions(min_runs=20, min_ms=200))
    original = Variant(target.text, target.spec.launch)
    assert ev.set_reference(ev.compile(original), original.launch).ok
    return ev, target.text


def test_every_sample_benches_and_validates(samples: Path):
    result = CliRunner().invoke(app, ["bench", str(samples), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {Path(r["file"]).stem for r in rows} == {p.stem for p in SAMPLES.glob("*.cu")}
    for r in rows:
        assert r["status"] == "ok", r
        assert r["ms"] > 0 and r["gbps"] > 0 and 0 < r["peak_pct"] < 150, r
        assert r["floor_ms"] > 0 and r["floor_bound"] in ("memory", "compute") and 0 < r["of_floor"] < 1.5, r


def test_off_by_one_variant_is_rejected(gpu_client):
    ev, src = _saxpy(gpu_client)
    wrong = src.replace("if (i < n)", "if (i < n - 1)")
    outcome = ev.evaluate(Variant(wrong, ev.spec.launch))
    assert outcome.status == "wrong-answer", outcome
    assert "y:" in outcome.detail


def test_fault_is_reported_and_next_candidate_runs(gpu_client):
    ev, src = _saxpy(gpu_client)
    oob = src.replace("y[i] = a * x[i] + y[i];", "y[i + 2000000000] = a * x[i];")
    outcome = ev.evaluate(Variant(oob, ev.spec.launch))
    assert outcome.status == "fault", outcome
    again = ev.evaluate(Variant(src, ev.spec.launch))
    assert again.ok, again


def test_endless_loop_is_killed_at_the_time_limit(gpu_client):
    ev, src = _saxpy(gpu_client)
    hang = src.replace("if (i < n) {", "while (clock64() >= 0) { }\n    if (i < n) {")
    outcome = ev.evaluate(Variant(hang, ev.spec.launch))
    assert outcome.status == "timeout", outcome
    again = ev.evaluate(Variant(src, ev.spec.launch))
    assert again.ok, again


def test_same_kernel_timed_twice_agrees_within_5_percent(gpu_client):
    ev, src = _saxpy(gpu_client)
    first = ev.evaluate(Variant(src, ev.spec.launch))
    second = ev.evaluate(Variant(src, ev.spec.launch))
    assert first.ok and second.ok
    assert abs(first.timing.median_ms - second.timing.median_ms) / first.timing.median_ms < 0.05, (first, second)
