"""The evaluator on a real GPU: bench every sample, reject wrong, faulting and hanging variants."""
from __future__ import annotations

import dataclasses
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


MACRO_SCALE = """\
#ifndef NI
#define NI 2048
#endif
__global__ void scale(const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NI) y[i] = 2.0f * x[i];
}
"""
MACRO_SPEC = """\
[scale]
block = [256]
grid = ["cdiv(NI, block.x)"]
sizes = { NI = 1048576 }
check_sizes = [{ NI = 1001 }, { NI = 97 }]

[scale.args]
x = "in float32[NI]"
y = "out float32[NI]"
"""


def test_macro_sizes_run_each_size_set_with_its_own_build(gpu_client, tmp_path):
    (tmp_path / "scale.cu").write_text(MACRO_SCALE)
    (tmp_path / "scale.cuopt.toml").write_text(MACRO_SPEC)
    target = collect([tmp_path / "scale.cu"])[0]
    arch = gpu_client.device["arch"]
    timing = TimingOptions(min_runs=5, min_ms=10)
    ev = KernelEvaluator(target.path, target.bound, gpu_client, arch=arch, timing=timing,
                         macro_sizes=frozenset({"NI"}))
    try:
        original = Variant(target.text, target.spec.launch)
        built = ev.compile(original)
        assert len({b.cubin for b in built.sized}) == 3
        assert ev.set_reference(built, original.launch).ok
        outcome = ev.evaluate(original, built)
        assert outcome.status == "ok", outcome
        assert [c.elements for c in outcome.comparisons] == [1048576, 1001, 97]
        smallest_everywhere = dataclasses.replace(built, sized=(built.at(2),) * 3)  # the NI=97 build
        wrong = ev.validate(smallest_everywhere, original.launch)
        assert wrong.status == "wrong-answer" and wrong.detail.startswith("timing"), wrong
    finally:
        ev.close()
