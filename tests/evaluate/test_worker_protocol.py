"""The worker process and its client, on the CPU stand-in backend (tests/evaluate/fake_backend.py)."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pytest

from cuopt.errors import NoGpuError
from cuopt.evaluate import worker as worker_module
from cuopt.evaluate import inputs
from cuopt.evaluate.client import KernelRef, LaunchDims, Shadowed, WorkerClient
from cuopt.evaluate.worker import Worker, arg_format, as_kernel_sees, scalar_arg
from cuopt.source.kernels import load as load_source
from cuopt.spec.bind import Instance, ScalarValue, bind
from cuopt.spec.dtypes import FLOAT_TOLERANCE
from cuopt.spec.model import parse

from tests.conftest import SAMPLES
from tests.evaluate.fake_backend import FakeBackend

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FAKE = "tests.evaluate.fake_backend:FakeBackend"
CRASHING = f"{__name__}:CrashingBackend"
N = 1000

SPEC = f"""\
[saxpy]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = {{ n = {N} }}
check_sizes = [{{ n = 97 }}]

[saxpy.args]
n = "n"
a = 2.5
x = "in float32[n]"
y = "@ROLE@ float32[n]"
"""


class CrashingBackend(FakeBackend):
    """The fake backend plus a `crash` kernel that takes the whole process down without replying."""

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int, args: Sequence[Any]) -> None:
        if fn[0] == "crash":
            os._exit(7)
        super().launch(fn, grid, block, shared, args)


class PoisonAwareBackend(FakeBackend):
    """`copy` writes y = x; `copy_short` leaves the last element of y untouched."""

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int, args: Sequence[Any]) -> None:
        symbol = fn[0]
        if symbol not in ("copy", "copy_short"):
            return super().launch(fn, grid, block, shared, args)
        n, _, x, y = args
        limit = n - 1 if symbol == "copy_short" else n
        self.memory[y].data.view(np.float32)[:limit] = self.memory[x].data.view(np.float32)[:limit]


class RecordingBackend(FakeBackend):
    """Remembers the order of timed launches."""

    def __init__(self, device: int = 0) -> None:
        super().__init__(device)
        self.timed: list[str] = []

    def timed_launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
                     args: Sequence[Any]) -> float:
        self.timed.append(fn[0])
        return super().timed_launch(fn, grid, block, shared, args)


def instances(role: str = "inout") -> list[Instance]:
    spec = parse(tomllib.loads(SPEC.replace("@ROLE@", role)), Path("saxpy.cuopt.toml")).kernels["saxpy"]
    kernel = load_source((SAMPLES / "saxpy.cu").read_bytes()).kernel("saxpy")
    assert kernel is not None
    return bind(spec, kernel).instances()


def dims(inst: Instance) -> LaunchDims:
    return LaunchDims(inst.grid, inst.block, inst.shared)


def ref(symbol: str) -> KernelRef:
    return KernelRef("fake.cubin", symbol)


@pytest.fixture
def client() -> Iterator[WorkerClient]:
    c = WorkerClient(FAKE, timeout_s=1.0)
    yield c
    c.close()


def problem(client: WorkerClient, role: str = "inout") -> tuple[str, LaunchDims]:
    inst = instances(role)[0]
    d = dims(inst)
    return client.register(inst, ref("saxpy"), d), d


# -- through the process ------------------------------------------------------------------------------
def test_start_reports_the_device(client: WorkerClient) -> None:
    device = client.start()
    assert device["name"] == "Fake GPU" and client.device == device
    assert client.start() is device  # already running: no second process


def test_reference_then_compare_ok(client: WorkerClient) -> None:
    key, d = problem(client)
    assert client.ensure(key)["status"] == "ok"
    resp = client.run(key, ref("saxpy"), d, {"y": (0.0, 0.0)})
    assert resp["status"] == "ok", resp
    [c] = resp["comparisons"]
    assert (c.name, c.elements, c.mismatches, c.first_bad) == ("y", N, 0, -1)
    assert resp["wall_ms"] >= 0


def test_off_by_one_is_a_mismatch_at_the_last_index(client: WorkerClient) -> None:
    key, d = problem(client)
    resp = client.run(key, ref("saxpy_off_by_one"), d, {"y": (1e-5, 1e-6)})
    assert resp["status"] == "ok", resp
    [c] = resp["comparisons"]
    assert not c.ok
    assert (c.mismatches, c.first_bad) == (1, N - 1)
    assert c.describe().startswith(f"y: 1 of {N} elements differ, first at index {N - 1}")


def test_sticky_fault_restarts_the_worker_and_references_come_back(client: WorkerClient) -> None:
    key, d = problem(client)
    assert client.run(key, ref("saxpy"), d, {})["status"] == "ok"
    resp = client.run(key, ref("fault"), d, {})
    assert resp == {"status": "fault", "error": "an illegal memory access was encountered"}
    assert client.restarts == 1
    again = client.run(key, ref("saxpy"), d, {})  # new worker: inputs and reference re-created
    assert again["status"] == "ok", again
    assert again["comparisons"][0].ok
    assert client.restarts == 1
    wrong = client.run(key, ref("saxpy_off_by_one"), d, {})
    assert wrong["comparisons"][0].first_bad == N - 1


def test_recoverable_launch_error_does_not_restart(client: WorkerClient) -> None:
    key, d = problem(client)
    assert client.ensure(key)["status"] == "ok"
    proc = client._proc  # the process itself must survive
    resp = client.run(key, ref("too_big"), d, {})
    assert resp == {"status": "launch-error", "error": "too many resources requested for launch"}
    resp = client.run(key, ref("missing"), d, {})
    assert resp == {"status": "launch-error", "error": "named symbol not found"}
    assert client.restarts == 0
    assert client._proc is proc and proc.is_alive()
    assert client.run(key, ref("saxpy"), d, {})["status"] == "ok"


def test_hang_is_killed_with_timeout(client: WorkerClient) -> None:
    key, d = problem(client)
    assert client.ensure(key)["status"] == "ok"
    start = time.monotonic()
    resp = client.run(key, ref("hang"), d, {})
    elapsed = time.monotonic() - start
    assert resp["status"] == "timeout", resp
    assert "the worker was killed" in resp["error"]
    assert elapsed < 5.0
    assert client.restarts == 1
    assert client.run(key, ref("saxpy"), d, {})["status"] == "ok"


def test_worker_that_dies_without_answering_is_a_fault() -> None:
    with WorkerClient(CRASHING, timeout_s=1.0) as c:
        key, d = problem(c)
        resp = c.run(key, ref("crash"), d, {})
        assert resp["status"] == "fault", resp
        assert resp["error"].startswith("the GPU worker died")
        assert c.restarts == 1
        assert c.run(key, ref("saxpy"), d, {})["status"] == "ok"


def test_reference_failure_is_reported_by_ensure(client: WorkerClient) -> None:
    inst = instances()[0]
    key = client.register(inst, ref("too_big"), dims(inst))
    resp = client.ensure(key)
    assert resp["status"] == "launch-error"
    assert resp["error"] == "the reference kernel failed: too many resources requested for launch"


def test_time_returns_samples_per_kernel(client: WorkerClient) -> None:
    key, d = problem(client)
    resp = client.time(key, [(ref("saxpy"), d), (ref("saxpy_off_by_one"), d)], rounds=2, min_runs=3,
                       min_ms=0.0, max_s=0.5)
    assert resp["status"] == "ok", resp
    fast, slow = resp["samples"]
    assert fast == [1.0] * 6  # 3 runs in each of 2 rounds
    assert slow == [2.0] * 6


def test_bandwidth(client: WorkerClient) -> None:
    nbytes = 1 << 20
    resp = client.request({"op": "bandwidth", "nbytes": nbytes}, 10)
    assert resp["status"] == "ok"
    assert resp["gbps"] == pytest.approx(2 * nbytes / 0.5e-3 / 1e9)  # fake copies take 0.5 ms


def test_unknown_request_and_bad_key_keep_the_worker(client: WorkerClient) -> None:
    assert client.request({"op": "nope"}, 10) == {"status": "error", "error": "unknown request 'nope'"}
    resp = client.request({"op": "run", "key": "missing", "kernel": {}, "launch": {}, "mode": "compare"}, 10)
    assert resp["status"] == "error" and "KeyError" in resp["error"]
    assert client.restarts == 0
    key, d = problem(client)
    assert client.run(key, ref("saxpy"), d, {})["status"] == "ok"


def test_release_forgets_the_problem(client: WorkerClient) -> None:
    key, d = problem(client)
    assert client.ensure(key)["status"] == "ok"
    client.release(key)
    with pytest.raises(KeyError):
        client.ensure(key)


def test_close_ends_the_process(client: WorkerClient) -> None:
    client.start()
    proc = client._proc
    assert proc is not None and proc.is_alive()
    client.close()
    assert not proc.is_alive()
    assert proc.exitcode == 0  # a clean quit, not a kill
    client.close()  # twice is harmless


def test_backend_that_cannot_start_is_no_gpu() -> None:
    c = WorkerClient("tests.evaluate.fake_backend:NoSuchBackend", timeout_s=1.0)
    with pytest.raises(NoGpuError) as exc:
        c.start()
    msg = str(exc.value)
    assert msg.startswith("no CUDA GPU found (AttributeError:")
    assert msg.endswith("use --dry-run to check specs and compile without a GPU")
    assert exc.value.exit_code == 2


# -- the worker in this process ----------------------------------------------------------------------
@pytest.fixture
def small_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "FLUSH_BYTES", 4096)


def test_arg_format_follows_parameter_types() -> None:
    assert arg_format(instances()[0]) == "ifPP"


def test_time_interleaves_kernels_round_by_round(small_flush: None) -> None:
    backend = RecordingBackend()
    w = Worker(backend)
    inst = instances()[0]
    w.prepare("p", inst)
    launch = dims(inst).wire()
    kernels = [{"kernel": ref("saxpy").wire(), "launch": launch},
               {"kernel": ref("saxpy_off_by_one").wire(), "launch": launch}]
    resp = w.handle({"op": "time", "key": "p", "kernels": kernels, "rounds": 2, "min_runs": 3, "min_ms": 0.0,
                     "max_s": 1.0, "warmup": 1})
    assert resp["samples"] == [[1.0] * 6, [2.0] * 6]
    a, b = "saxpy", "saxpy_off_by_one"
    assert backend.timed == [a, a, a, b, b, b, a, a, a, b, b, b]


def test_every_run_starts_from_the_pristine_inputs() -> None:
    w = Worker(FakeBackend())
    inst = instances()[0]
    w.prepare("p", inst)
    kernel, launch = ref("saxpy").wire(), dims(inst).wire()
    assert w.run("p", kernel, launch, "reference", {})["status"] == "ok"
    for _ in range(2):  # an inout buffer carried over would give a*x + (a*x + y)
        resp = w.run("p", kernel, launch, "compare", {})
        assert resp["comparisons"][0].ok


def test_out_buffers_are_poisoned_before_each_run() -> None:
    """A candidate that skips an element must not inherit the reference's value there."""
    w = Worker(PoisonAwareBackend())
    inst = instances("out")[0]
    w.prepare("p", inst)
    launch = dims(inst).wire()
    assert w.run("p", ref("copy").wire(), launch, "reference", {})["status"] == "ok"
    ok = w.run("p", ref("copy").wire(), launch, "compare", {})["comparisons"][0]
    assert ok.ok
    short = w.run("p", ref("copy_short").wire(), launch, "compare", {})["comparisons"][0]
    assert (short.mismatches, short.first_bad) == (1, N - 1)


def test_release_frees_device_memory() -> None:
    backend = FakeBackend()
    w = Worker(backend)
    w.prepare("p", instances()[0])
    assert backend.memory
    w.release("p")
    assert backend.memory == {}


# -- the float64 shadow ------------------------------------------------------------------------------
def shadowed_problem(client: WorkerClient, tolerance: dict) -> tuple[str, LaunchDims]:
    inst = instances()[0]
    d = dims(inst)
    return client.register(inst, ref("saxpy"), d, Shadowed(ref("saxpy"), d, tolerance)), d


def test_the_shadow_runs_in_float64_on_the_same_inputs(client: WorkerClient) -> None:
    key, d = shadowed_problem(client, {"y": (1e-5, 1e-6)})
    ready = client.ensure(key)
    assert ready["status"] == "ok", ready
    [check] = ready["checks"]  # the original, against the float64 result, within the tolerance
    assert check.ok and check.max_abs > 0
    original = ready["original"]["y"]
    assert 0 < original.max_rel < 2 * 2 ** -23  # saxpy in float32 (multiply, then add): about an ulp
    inst = instances()[0]
    x, y = (inputs.generate(a, inst.seed, i).astype(np.float64) for i, a in enumerate(inst.args) if i >= 2)
    worker = Worker(FakeBackend())
    worker.prepare(key, inst)
    worker.run(key, ref("saxpy").wire(), d.wire(), "reference", {})
    worker.run_shadow(key, ref("saxpy").wire(), d.wire(), {})
    assert np.array_equal(worker.problems[key].shadow["y"], 2.5 * x + y)
    assert client.ensure(key)["original"] == ready["original"]  # remembered, not re-run


def test_candidates_are_judged_against_the_shadow_by_accuracy(client: WorkerClient) -> None:
    key, d = shadowed_problem(client, {"y": (1e-2, 1e-2)})
    good = client.run(key, ref("saxpy"), d, {"y": (1e-2, 1e-2)})["comparisons"][0]
    assert good.ok and good.accuracy is not None and good.accuracy.candidate == good.accuracy.original
    coarse = client.run(key, ref("saxpy_coarse"), d, {"y": (1e-2, 1e-2)})["comparisons"][0]
    assert coarse.mismatches == 0 and not coarse.ok  # within the loose tolerance, but far less accurate
    assert "less accurate than the original" in coarse.describe()


def test_after_a_fault_the_shadow_comes_back(client: WorkerClient) -> None:
    key, d = shadowed_problem(client, {"y": (1e-2, 1e-2)})
    assert client.run(key, ref("fault"), d, {})["status"] == "fault"
    again = client.run(key, ref("saxpy_coarse"), d, {"y": (1e-2, 1e-2)})["comparisons"][0]
    assert again.accuracy is not None and not again.ok


def test_the_shadow_s_arguments_are_doubles() -> None:
    assert arg_format(instances()[0]) == "ifPP"
    assert arg_format(instances()[0], shadow=True) == "idPP"


def test_a_shadow_that_fails_is_reported_and_its_problem_freed(client: WorkerClient) -> None:
    inst = instances()[0]
    d = dims(inst)
    key = client.register(inst, ref("saxpy"), d, Shadowed(ref("too_big"), d, {}))
    resp = client.ensure(key)
    assert resp["shadow_failed"] and resp["status"] == "launch-error"
    assert resp["error"] == "the float64 shadow failed: too many resources requested for launch"
    assert client.restarts == 0


def shadowed_worker(tolerance: dict) -> tuple[Worker, str, LaunchDims]:
    """A worker in this process whose problem has the saxpy reference and its float64 shadow."""
    inst = instances()[0]
    d = dims(inst)
    worker = Worker(FakeBackend())
    worker.prepare("p", inst)
    worker.run("p", ref("saxpy").wire(), d.wire(), "reference", {})
    worker.run_shadow("p", ref("saxpy").wire(), d.wire(), tolerance)
    return worker, "p", d


def test_an_output_with_the_original_s_bits_is_judged_as_the_original_without_comparing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tolerance = {"y": (1e-5, 1e-6)}
    worker, key, d = shadowed_worker(tolerance)
    calls: list[str] = []
    monkeypatch.setattr(worker_module, "compare", lambda name, *a, **k: calls.append(name))
    [same] = worker.run(key, ref("saxpy").wire(), d.wire(), "compare", tolerance)["comparisons"]
    assert calls == []  # no pass over the shadow
    assert same.ok and same.accuracy is not None and same.accuracy.candidate == same.accuracy.original
    assert same.max_abs > 0  # the original's own distance from float64, as `ensure` reported it


def test_an_output_that_differs_in_any_bit_is_compared_in_full() -> None:
    tolerance = {"y": (1e-5, 1e-6)}
    worker, key, d = shadowed_worker(tolerance)
    [fma] = worker.run(key, ref("saxpy_fma").wire(), d.wire(), "compare", tolerance)["comparisons"]
    assert fma.ok and fma.accuracy is not None
    assert fma.accuracy.candidate.max_rel < fma.accuracy.original.max_rel  # one rounding, not two
    [short] = worker.run(key, ref("saxpy_off_by_one").wire(), d.wire(), "compare", tolerance)["comparisons"]
    assert short.mismatches == 1 and short.first_bad == N - 1


def test_another_tolerance_is_compared_in_full() -> None:
    worker, key, d = shadowed_worker({"y": (1e-5, 1e-6)})
    [tight] = worker.run(key, ref("saxpy").wire(), d.wire(), "compare", {"y": (0.0, 0.0)})["comparisons"]
    assert tight.ok  # the original's own error is its slack, at any tolerance


def test_inputs_kept_for_the_shadow_are_not_generated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `keep_inputs` the shadow takes the float32 inputs prepare generated (then drops them):
    the same float64 result, one generation per input."""
    inst = instances()[0]
    d = dims(inst)
    plain, _, _ = shadowed_worker({})
    made: list[int] = []
    generate = inputs.generate
    monkeypatch.setattr(inputs, "generate", lambda a, seed, index: made.append(index) or generate(a, seed, index))
    worker = Worker(FakeBackend())
    worker.prepare("p", inst, keep_inputs=True)
    assert sorted(worker.problems["p"].kept) == [2, 3]  # x and y, the float32 buffers
    worker.run("p", ref("saxpy").wire(), d.wire(), "reference", {})
    worker.run_shadow("p", ref("saxpy").wire(), d.wire(), {})
    assert sorted(made) == [2, 3] and worker.problems["p"].kept == {}
    assert np.array_equal(worker.problems["p"].shadow["y"], plain.problems["p"].shadow["y"])


BF16_SAXPY = """#include <cuda_bf16.h>
__global__ void saxpy(int n, __nv_bfloat16 a, const __nv_bfloat16* x, __nv_bfloat16* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def bf16_instance() -> Instance:
    raw = SPEC.replace("@ROLE@", "inout").replace("float32", "bfloat16").replace("a = 2.5", "a = 0.3")
    spec = parse(tomllib.loads(raw), Path("saxpy.cuopt.toml")).kernels["saxpy"]
    kernel = load_source(BF16_SAXPY).kernel("saxpy")
    assert kernel is not None
    return bind(spec, kernel).instances()[0]


def test_a_bf16_scalar_is_passed_as_its_16_bits_and_as_a_double_to_the_shadow() -> None:
    inst = bf16_instance()
    assert arg_format(inst) == "iHPP" and arg_format(inst, shadow=True) == "idPP"
    a = inst.args[1]
    assert isinstance(a, ScalarValue) and scalar_arg(a) == 0x3E9A  # bf16(0.3) = 0.30078125
    assert as_kernel_sees(a) == 0.30078125


def test_a_bf16_kernel_is_judged_against_float64_on_the_bf16_values_it_reads() -> None:
    inst = bf16_instance()
    d = dims(inst)
    tolerance = {"y": FLOAT_TOLERANCE["bfloat16"]}
    worker = Worker(FakeBackend())
    worker.prepare("p", inst, keep_inputs=True)
    assert sorted(worker.problems["p"].kept) == [2, 3]  # the bf16 inputs, kept for the shadow
    worker.run("p", ref("saxpy").wire(), d.wire(), "reference", {})
    ready = worker.run_shadow("p", ref("saxpy").wire(), d.wire(), tolerance)
    x, y = (inputs.generate(v, inst.seed, i).astype(np.float64) for i, v in enumerate(inst.args) if i >= 2)
    assert np.array_equal(worker.problems["p"].shadow["y"], 0.30078125 * x + y)  # exact in double
    [check] = ready["checks"]
    assert check.ok
    assert 0 < ready["original"]["y"].max_rel <= 2 ** -7  # two roundings to bf16, each at most half an ulp
    [same] = worker.run("p", ref("saxpy").wire(), d.wire(), "compare", tolerance)["comparisons"]
    assert same.ok and same.accuracy is not None and same.accuracy.eps == 2 ** -7
    [short] = worker.run("p", ref("saxpy_off_by_one").wire(), d.wire(), "compare", tolerance)["comparisons"]
    assert short.mismatches == 1 and short.first_bad == N - 1  # the poisoned last element: a bf16 NaN
