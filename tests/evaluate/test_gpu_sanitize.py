"""compute-sanitizer on a real GPU, both tools at once: a read one element past a buffer and a
shared-memory race are reported; the sample as written is clean."""
from __future__ import annotations

import pytest

from cuopt.evaluate.client import KernelRef
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant, launch_dims
from cuopt.evaluate.sanitize import find_sanitizer, sanitize
from cuopt.targets import collect

from tests.conftest import SAMPLES

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not found")]

RACE = """
    __shared__ float cuopt_s[256];
    cuopt_s[threadIdx.x] = x[i < n ? i : 0];
    float cuopt_v = cuopt_s[(threadIdx.x + 1) % 256];
    if (i < n) {
        y[i] = a * cuopt_v + y[i];
    }
"""


def _reports(gpu_client, edit) -> dict:
    target = collect([SAMPLES / "saxpy.cu"])[0]
    ev = KernelEvaluator(target.path, target.bound, gpu_client, arch=gpu_client.device["arch"],
                         timing=TimingOptions(min_runs=5, min_ms=5))
    compiled = ev.compile(Variant(edit(target.text), target.spec.launch))
    index = min(range(len(ev.instances)), key=lambda i: ev.instances[i].bytes_moved())
    build, inst = compiled.at(index), ev.instances[index]
    dims = launch_dims(target.spec.launch, inst)
    return {r.tool: r for r in sanitize(KernelRef(str(build.cubin), build.symbol, dims.shared), inst, dims)}


def test_the_sample_is_clean(gpu_client) -> None:
    reports = _reports(gpu_client, lambda src: src)
    assert set(reports) == {"memcheck", "racecheck"}
    assert all(r.clean and r.conclusive for r in reports.values()), reports


def test_a_read_past_the_buffer_is_reported(gpu_client) -> None:
    reports = _reports(gpu_client, lambda src: src.replace("a * x[i]", "a * x[i + 1]"))
    assert not reports["memcheck"].clean and reports["memcheck"].conclusive, reports
    assert "Invalid __global__ read" in reports["memcheck"].detail


def test_a_shared_memory_race_is_reported(gpu_client) -> None:
    def racy(src: str) -> str:
        body = src[src.index("if (i < n)"):src.rindex("}")]
        return src.replace(body, RACE.strip() + "\n")
    reports = _reports(gpu_client, racy)
    assert not reports["racecheck"].clean and reports["racecheck"].conclusive, reports
