"""KernelEvaluator on the CPU stand-in backend, launch checks, and device helpers."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from cuopt.errors import NoGpuError
from cuopt.evaluate import device
from cuopt.evaluate.client import LaunchDims, WorkerClient
from cuopt.evaluate.compile import CompileError, Compiled, Resources
from cuopt.evaluate.evaluator import MAX_GRID, KernelEvaluator, TimingOptions, Variant, check_dims, launch_dims
from cuopt.resources import cache_dir
from cuopt.source.kernels import load as load_source
from cuopt.spec import expr as E
from cuopt.spec.bind import Bound, bind
from cuopt.spec.model import Launch, parse

from tests.conftest import SAMPLES, requires_nvcc

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FAKE = "tests.evaluate.fake_backend:FakeBackend"
MAX_SHARED = 227 * 1024


# -- check_dims / launch_dims -----------------------------------------------------------------------------
@pytest.mark.parametrize("grid, block, shared", [
    ((1, 1, 1), (1024, 1, 1), 0),
    ((MAX_GRID[0], 65535, 65535), (32, 32, 1), 0),
    ((1, 1, 1), (1, 1, 64), 0),
    ((4, 1, 1), (256, 1, 1), MAX_SHARED),
])
def test_launches_cuda_accepts(grid: tuple, block: tuple, shared: int) -> None:
    assert check_dims(LaunchDims(grid, block, shared), MAX_SHARED) is None


@pytest.mark.parametrize("grid, block, shared, message", [
    ((1, 1, 1), (1025, 1, 1), 0, "1025 threads per block (at most 1024)"),
    ((1, 1, 1), (32, 32, 2), 0, "2048 threads per block (at most 1024)"),
    ((1, 1, 1), (1, 1, 65), 0, "block z of 65 (at most 64)"),
    ((0, 1, 1), (256, 1, 1), 0, "grid (0, 1, 1) out of range"),
    ((2**31, 1, 1), (256, 1, 1), 0, f"grid ({2**31}, 1, 1) out of range"),
    ((1, 65536, 1), (256, 1, 1), 0, "grid (1, 65536, 1) out of range"),
    ((1, 1, 65536), (256, 1, 1), 0, "grid (1, 1, 65536) out of range"),
    ((1, -1, 1), (256, 1, 1), 0, "grid (1, -1, 1) out of range"),
    ((1, 1, 1), (256, 1, 1), MAX_SHARED + 1,
     f"{MAX_SHARED + 1} bytes of dynamic shared memory (device allows {MAX_SHARED})"),
])
def test_launches_cuda_refuses(grid: tuple, block: tuple, shared: int, message: str) -> None:
    assert check_dims(LaunchDims(grid, block, shared), MAX_SHARED) == message


def test_unknown_shared_limit_is_not_checked() -> None:
    assert check_dims(LaunchDims((1, 1, 1), (32, 1, 1), 10**9), 0) is None


# -- the evaluator with a fake worker ---------------------------------------------------------------------
SPEC = """\
[saxpy]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 1000 }
check_sizes = [{ n = 97 }]
tolerance = { rtol = 1e-5, atol = 1e-6 }

[saxpy.args]
n = "n"
a = 2.5
x = "in float32[n]"
y = "inout float32[n]"
"""


def saxpy_bound(spec_text: str = SPEC) -> Bound:
    spec = parse(tomllib.loads(spec_text), Path("saxpy.cuopt.toml")).kernels["saxpy"]
    kernel = load_source((SAMPLES / "saxpy.cu").read_bytes()).kernel("saxpy")
    assert kernel is not None
    return bind(spec, kernel)


def fake_compiled(symbol: str) -> Compiled:
    """The fake backend picks its Python "kernel" by symbol; the cubin is never read."""
    return Compiled(Path("fake.cubin"), symbol, Resources(registers=10), "sm_90")


def test_launch_dims_use_the_instance_sizes() -> None:
    bound = saxpy_bound(SPEC.replace('grid = ["cdiv(n, block.x)"]',
                                     'grid = ["cdiv(n, block.x)", 3]\nshared = "block.x * 4"'))
    timing, check = bound.instances()
    launch = Launch((128, 2), bound.spec.launch.grid, E.parse("block.x * 4 + n"))
    assert launch_dims(launch, timing) == LaunchDims((8, 3, 1), (128, 2, 1), 512 + 1000)
    assert launch_dims(launch, check) == LaunchDims((1, 3, 1), (128, 2, 1), 512 + 97)


@pytest.fixture
def evaluator() -> Iterator[KernelEvaluator]:
    client = WorkerClient(FAKE, timeout_s=1.0)
    ev = KernelEvaluator(SAMPLES / "saxpy.cu", saxpy_bound(), client, arch="sm_90",
                         timing=TimingOptions(min_runs=3, min_ms=0.0, max_s=0.5))
    client.start()
    assert ev.set_reference(fake_compiled("saxpy"), ev.spec.launch).ok
    yield ev
    ev.close()
    client.close()


def test_tolerances_only_for_written_buffers(evaluator: KernelEvaluator) -> None:
    assert evaluator.tolerance == {"y": (1e-5, 1e-6)}


def test_correct_variant_validates_at_every_size_and_is_timed(evaluator: KernelEvaluator) -> None:
    variant = Variant("unused", evaluator.spec.launch)
    outcome = evaluator.evaluate(variant, fake_compiled("saxpy"))
    assert outcome.status == "ok", outcome
    assert [c.elements for c in outcome.comparisons] == [1000, 97]
    assert outcome.timing is not None and outcome.timing.median_ms == 1.0 and outcome.timing.runs == 3
    assert outcome.resources == Resources(registers=10)


def test_wrong_answer_names_the_size_and_index(evaluator: KernelEvaluator) -> None:
    outcome = evaluator.evaluate(Variant("", evaluator.spec.launch), fake_compiled("saxpy_off_by_one"))
    assert outcome.status == "wrong-answer"
    assert outcome.detail.startswith("timing (n=1000): y: 1 of 1000 elements differ, first at index 999")
    assert outcome.timing is None


def test_fault_then_the_next_candidate_runs(evaluator: KernelEvaluator) -> None:
    outcome = evaluator.evaluate(Variant("", evaluator.spec.launch), fake_compiled("fault"))
    assert outcome.status == "fault"
    assert outcome.detail == "timing (n=1000): an illegal memory access was encountered"
    again = evaluator.evaluate(Variant("", evaluator.spec.launch), fake_compiled("saxpy"))
    assert again.ok, again
    assert evaluator.client.restarts == 1


def test_launch_cuda_would_refuse_is_not_sent(evaluator: KernelEvaluator) -> None:
    launch = Launch((64, 32), evaluator.spec.launch.grid)
    outcome = evaluator.evaluate(Variant("", launch), fake_compiled("hang"))  # would hang if launched
    assert outcome.status == "launch-error"
    assert outcome.detail == "2048 threads per block (at most 1024)"
    assert evaluator.client.restarts == 0


def test_other_launch_that_covers_the_data_is_ok(evaluator: KernelEvaluator) -> None:
    launch = Launch((128,), (E.parse("cdiv(n, block.x)"),))
    assert evaluator.evaluate(Variant("", launch), fake_compiled("saxpy")).ok


def test_compile_error_outcome(evaluator: KernelEvaluator) -> None:
    outcome = evaluator.evaluate(Variant("", evaluator.spec.launch), CompileError("nvcc failed: line 3: error: x"))
    assert (outcome.status, outcome.detail) == ("compile-error", "nvcc failed: line 3: error: x")


def test_time_several_kernels(evaluator: KernelEvaluator) -> None:
    launch = evaluator.spec.launch
    timings = evaluator.time([(fake_compiled("saxpy"), launch), (fake_compiled("saxpy_off_by_one"), launch)],
                             rounds=2)
    assert isinstance(timings, list)
    assert [t.median_ms for t in timings] == [1.0, 2.0]
    assert [t.runs for t in timings] == [6, 6]


def test_failing_reference_is_reported() -> None:
    client = WorkerClient(FAKE, timeout_s=1.0)
    try:
        ev = KernelEvaluator(SAMPLES / "saxpy.cu", saxpy_bound(), client, arch="sm_90")
        outcome = ev.set_reference(fake_compiled("too_big"), ev.spec.launch)
        assert outcome.status == "launch-error"
        assert outcome.detail == ("timing (n=1000): the reference kernel failed: "
                                  "too many resources requested for launch")
    finally:
        client.close()


# -- device helpers -------------------------------------------------------------------------------------------
class _StubClient:
    def __init__(self) -> None:
        self.device = {"name": "Stub GPU", "driver": 12345}
        self.calls = 0

    def bandwidth(self) -> float:
        self.calls += 1
        return 1234.56


def test_peak_bandwidth_is_measured_once_per_device() -> None:
    stub: Any = _StubClient()
    assert device.peak_bandwidth(stub) == pytest.approx(1234.6)
    assert device.peak_bandwidth(stub) == pytest.approx(1234.6)
    assert stub.calls == 1
    known = json.loads((cache_dir() / "devices.json").read_text())
    assert known["Stub GPU|driver 12345"] == {"copy_gbps": 1234.6}


def test_open_gpu_with_the_fake_backend() -> None:
    client = device.open_gpu(timeout_s=1.0, backend=FAKE)
    try:
        assert client.device is not None and client.device["name"] == "Fake GPU"
    finally:
        client.close()


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="pycuda is installed")
def test_open_gpu_without_pycuda() -> None:
    with pytest.raises(NoGpuError) as exc:
        device.open_gpu()
    assert "no CUDA GPU found: pycuda is not installed" in str(exc.value)
    assert "--dry-run" in str(exc.value)


# -- the float64 reference ------------------------------------------------------------------------------
LOOSE = SPEC.replace("tolerance = { rtol = 1e-5, atol = 1e-6 }", "tolerance = { rtol = 1e-2, atol = 1e-2 }")


@pytest.fixture
def loose() -> Iterator[KernelEvaluator]:
    client = WorkerClient(FAKE, timeout_s=1.0)
    client.start()
    ev = KernelEvaluator(SAMPLES / "saxpy.cu", saxpy_bound(LOOSE), client, arch="sm_90",
                         timing=TimingOptions(min_runs=3, min_ms=0.0, max_s=0.5))
    yield ev
    ev.close()
    client.close()


@requires_nvcc
def test_with_the_source_the_float64_shadow_is_the_reference(loose: KernelEvaluator) -> None:
    source = (SAMPLES / "saxpy.cu").read_text()
    assert loose.set_reference(fake_compiled("saxpy"), loose.spec.launch, source).ok
    assert loose.reference.kind == "float64" and set(loose.reference.original) == {"timing", "check 1"}
    assert loose.reference.json()["original_error"]["timing"]["y"]["norm"] > 0
    good = loose.validate(fake_compiled("saxpy"), loose.spec.launch)
    assert good.ok and all(c.accuracy is not None for c in good.comparisons)
    coarse = loose.validate(fake_compiled("saxpy_coarse"), loose.spec.launch)
    assert coarse.status == "wrong-answer" and "less accurate than the original" in coarse.detail


def test_without_the_source_the_original_is_the_reference(loose: KernelEvaluator) -> None:
    assert loose.set_reference(fake_compiled("saxpy"), loose.spec.launch).ok
    assert loose.reference.json() == {"reference": "original",
                                      "reference_reason": "the original's source was not given"}
    assert loose.validate(fake_compiled("saxpy_coarse"), loose.spec.launch).ok  # the tolerance alone


@requires_nvcc
def test_an_original_off_the_float64_result_keeps_it_and_its_own_error_is_allowed(loose: KernelEvaluator) -> None:
    """The original misses y[999] by far more than the tolerance: float64 stays the reference, a
    candidate as far off passes (the tolerance is counted beyond the original's own error), and so
    does the exact kernel, which is closer."""
    source = (SAMPLES / "saxpy.cu").read_text()
    assert loose.set_reference(fake_compiled("saxpy_off_by_one"), loose.spec.launch, source).ok
    assert loose.reference.kind == "float64"
    assert loose.validate(fake_compiled("saxpy_off_by_one"), loose.spec.launch).ok
    assert loose.validate(fake_compiled("saxpy"), loose.spec.launch).ok
    nan = loose.validate(fake_compiled("saxpy_nan"), loose.spec.launch)
    assert nan.status == "wrong-answer" and "1 of 1000 elements differ, first at index 999" in nan.detail


@requires_nvcc
def test_an_original_with_a_nan_the_float64_result_lacks_falls_back_with_the_reason(loose: KernelEvaluator) -> None:
    source = (SAMPLES / "saxpy.cu").read_text()
    assert loose.set_reference(fake_compiled("saxpy_nan"), loose.spec.launch, source).ok
    assert loose.reference.kind == "original"
    assert loose.reference.reason.startswith("the original's NaN or infinite outputs disagree with the float64 "
                                             "result at timing (y: 1 of 1000 elements differ")
    assert loose.validate(fake_compiled("saxpy_nan"), loose.spec.launch).ok


def test_a_source_that_cannot_be_promoted_falls_back(loose: KernelEvaluator) -> None:
    source = (SAMPLES / "saxpy.cu").read_text().replace(
        "y[i] = a * x[i] + y[i];", "y[i] = __int_as_float(__float_as_int(a * x[i])) + y[i];")
    assert "__int_as_float" in source
    assert loose.set_reference(fake_compiled("saxpy"), loose.spec.launch, source).ok
    assert loose.reference.kind == "original" and "calls __int_as_float" in loose.reference.reason


def test_a_twin_that_fails_when_it_runs_falls_back(loose: KernelEvaluator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cuopt.evaluate.evaluator.compile_shadow", lambda *a, **k: (fake_compiled("too_big"), ""))
    assert loose.set_reference(fake_compiled("saxpy"), loose.spec.launch, "source").ok
    assert loose.reference.kind == "original"
    assert loose.reference.reason == ("the float64 twin fails at timing (n=1000): the float64 shadow failed: "
                                      "too many resources requested for launch")
    assert loose.validate(fake_compiled("saxpy"), loose.spec.launch).ok
