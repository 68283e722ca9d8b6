"""A spec that names a capture: its captured instance (the arrays' paths, the program's scalars), the
checks binding makes, and validation on the captured data through the evaluator's CPU stand-in."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from cuopt.errors import CuoptError
from cuopt.evaluate.client import WorkerClient
from cuopt.evaluate.compile import Compiled, Resources
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant
from cuopt.spec.bind import BufferValue, ScalarValue
from cuopt.spec.model import SpecError
from cuopt.targets import collect

from tests.conftest import SAMPLES, requires_nvcc

FAKE = "tests.evaluate.fake_backend:FakeBackend"
N = 1000
SPEC = """\
[saxpy]
capture = "saxpy"
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = {{ n = {n} }}
check_sizes = [{{ n = 97 }}]
tolerance = {{ rtol = 1e-5, atol = 1e-6 }}

[saxpy.args]
n = "n"
a = 1.0
x = "in float32[n]"
y = "inout float32[n]"
"""


def write_capture(root: Path, *, x_scale: float = 4.0, right: bool = True, leave_out: str = "", pad: int = 0) -> Path:
    """A capture of saxpy(n, 2.5, x, y) with |x| up to `x_scale`; its `after` the right result unless not
    `right`; with `pad`, allocations that many elements longer than n (their rest unchanged)."""
    directory = root / ".cuopt" / "captures" / "saxpy"
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    x = (rng.uniform(-1, 1, N + pad) * x_scale).astype(np.float32)
    y = rng.uniform(-1, 1, N + pad).astype(np.float32)
    y_after = y.copy()
    if right:
        y_after[:N] = np.float32(2.5) * x[:N] + y[:N]
    args = [{"name": "n", "kind": "scalar", "dtype": "int32", "value": N},
            {"name": "a", "kind": "scalar", "dtype": "float32", "value": 2.5}]
    for name, before, after in (("x", x, x), ("y", y, y_after)):
        entry = {"name": name, "kind": "buffer", "dtype": "float32", "offset": 0, "allocation": 4 * (N + pad),
                 "count": N + pad,
                 "before": f"saxpy.0.{name}.before.npy", "after": f"saxpy.0.{name}.after.npy", "omitted": None}
        if name == leave_out:
            entry.update(before=None, after=None, omitted="over --max-bytes: 3.9 KiB asked, 0 B left")
        else:
            np.save(directory / entry["before"], before)
            np.save(directory / entry["after"], after)
        args.append(entry)
    source = root / "saxpy.cu"
    manifest = {"format": 1, "cuopt": "0", "created": "2026-01-01T00:00:00Z", "command": ["./saxpy"], "cwd": str(root),
                "exit": 0, "device": "NVIDIA H100",
                "sources": [{"path": "saxpy.cu", "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}],
                "launches": [{"source": "saxpy.cu", "kernel": "saxpy", "entry": "saxpy", "mangled": "_Z5saxpyifPKfPf",
                              "ordinal": 0, "grid": [4, 1, 1], "block": [256, 1, 1], "shared": 0, "args": args}],
                "omitted": []}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


@pytest.fixture
def program(tmp_path: Path) -> Path:
    shutil.copy(SAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    (tmp_path / "saxpy.cuopt.toml").write_text(SPEC.format(n=N))
    return tmp_path


def target(program: Path, warnings: list[str] | None = None):
    [t] = collect([program / "saxpy.cu"], warnings=warnings)
    return t


def test_the_captured_instance_comes_first_with_the_arrays_paths_and_the_programs_scalars(program: Path) -> None:
    directory = write_capture(program)
    instances = target(program).bound.instances()
    assert [i.label for i in instances] == ["captured", "timing", "check 1"]
    captured, timing = instances[0], instances[1]
    assert captured.capture == str(directory.resolve()) and captured.sizes == timing.sizes == {"n": N}
    n, a, x, y = captured.args
    assert n == ScalarValue("n", "int32", N) and a == ScalarValue("a", "float32", 2.5)  # the spec says 1.0
    assert isinstance(x, BufferValue) and x.before == str(directory / "saxpy.0.x.before.npy") and x.after is None
    assert isinstance(y, BufferValue) and (y.before, y.after) == (str(directory / "saxpy.0.y.before.npy"),
                                                                  str(directory / "saxpy.0.y.after.npy"))
    assert timing.args[1] == ScalarValue("a", "float32", 1.0) and timing.args[2].before is None
    assert captured.key != timing.key


def test_sizes_other_than_the_captured_ones_are_refused(program: Path) -> None:
    write_capture(program)
    (program / "saxpy.cuopt.toml").write_text(SPEC.format(n=999))
    with pytest.raises(SpecError, match=r"saxpy.cuopt.toml: \[saxpy\] args.n: n = 999 at the sizes, but capture "
                                        r"'saxpy' launched saxpy with n = 1000; the captured data is at the timing "
                                        r"sizes: set sizes to the captured ones \(or remove `capture`\)"):
        target(program)


def test_a_capture_key_naming_no_capture_is_refused(program: Path) -> None:
    write_capture(program)
    (program / "saxpy.cuopt.toml").write_text(SPEC.format(n=N).replace('capture = "saxpy"', 'capture = "run9"'))
    with pytest.raises(SpecError, match=r"\[saxpy\] capture: no capture 'run9' at .*run9 \(captures next to the spec: "
                                        r"saxpy\)"):
        target(program)


@pytest.mark.parametrize("value", ["3", "''", "['a']"])
def test_a_capture_key_that_is_no_name_is_refused(program: Path, value: str) -> None:
    (program / "saxpy.cuopt.toml").write_text(SPEC.format(n=N).replace('"saxpy"', value, 1))
    with pytest.raises(SpecError, match=r"\[saxpy\] capture: expected a capture's name"):
        target(program)


def test_a_source_changed_since_the_capture_is_refused_by_the_commands(program: Path) -> None:
    write_capture(program)
    (program / "saxpy.cu").write_text((program / "saxpy.cu").read_text() + "\n// edited\n")
    with pytest.raises(CuoptError, match=r"\[saxpy\] capture: .*saxpy.cu: changed since capture 'saxpy' was taken "
                                         r"\(sha256 differs"):
        target(program)


def test_left_out_contents_are_said_and_no_output_is_compared(program: Path) -> None:
    write_capture(program, leave_out="x")
    warnings: list[str] = []
    captured = target(program, warnings).bound.instances()[0]
    assert warnings == ["saxpy.cuopt.toml: [saxpy] capture: x: the capture left its contents out (over --max-bytes: "
                        "3.9 KiB asked, 0 B left): random contents stand in; no output is compared with the captured "
                        "ones (they were computed from what was left out)"]
    _, _, x, y = captured.args
    assert x.before is None and x.count == N and y.before is not None and y.after is None


# -- the evaluator on the CPU stand-in -----------------------------------------------------------------
def compiled(symbol: str) -> Compiled:
    return Compiled(Path("fake.cubin"), symbol, Resources(registers=10), "sm_90")


@pytest.fixture
def evaluator(program: Path) -> Iterator[KernelEvaluator]:
    write_capture(program)
    client = WorkerClient(FAKE, timeout_s=10.0)
    ev = KernelEvaluator.for_target(target(program), client, arch="sm_90",
                                    timing=TimingOptions(min_runs=3, min_ms=0.0, max_s=0.5))
    client.start()
    yield ev
    ev.close()
    client.close()


def test_the_original_validates_on_the_captured_data_and_is_timed_on_it(evaluator: KernelEvaluator) -> None:
    assert evaluator.set_reference(compiled("saxpy"), evaluator.spec.launch).ok
    outcome = evaluator.evaluate(Variant("", evaluator.spec.launch), compiled("saxpy"))
    assert outcome.ok, outcome
    assert [(c.name, c.elements) for c in outcome.comparisons] == [
        ("y", N), ("y (captured output)", N), ("y", N), ("y", 97)]
    assert evaluator.timing_instance.label == "captured"


def test_a_variant_right_on_random_data_but_not_on_the_captured_data_is_rejected(evaluator: KernelEvaluator,
                                                                                 program: Path) -> None:
    assert evaluator.set_reference(compiled("saxpy"), evaluator.spec.launch).ok
    outcome = evaluator.evaluate(Variant("", evaluator.spec.launch), compiled("saxpy_clamped"))
    assert outcome.status == "wrong-answer"
    assert outcome.detail.startswith("captured (n=1000): y: "), outcome.detail
    assert outcome.timing is None
    # the same variant on the random instances alone passes: only the captured data shows it wrong
    (program / "saxpy.cuopt.toml").write_text(SPEC.format(n=N).replace('capture = "saxpy"\n', ""))
    client = WorkerClient(FAKE, timeout_s=10.0)
    plain = KernelEvaluator.for_target(target(program), client, arch="sm_90",
                                       timing=TimingOptions(min_runs=3, min_ms=0.0, max_s=0.5))
    try:
        assert plain.set_reference(compiled("saxpy"), plain.spec.launch).ok
        assert plain.evaluate(Variant("", plain.spec.launch), compiled("saxpy_clamped")).ok
    finally:
        plain.close()
        client.close()


def test_a_capture_the_original_does_not_reproduce_is_reported(program: Path) -> None:
    write_capture(program, right=False)
    client = WorkerClient(FAKE, timeout_s=10.0)
    ev = KernelEvaluator.for_target(target(program), client, arch="sm_90")
    try:
        outcome = ev.set_reference(compiled("saxpy"), ev.spec.launch)
        assert outcome.status == "wrong-answer"
        assert outcome.detail.startswith("captured (n=1000): the original kernel does not give the captured outputs "
                                         "(y (captured output): ")
        assert outcome.detail.endswith("the spec does not describe the captured launch; capture again, or remove "
                                       "`capture` from the spec")
    finally:
        ev.close()
        client.close()


def test_a_capture_with_an_input_left_out_validates_on_random_contents_for_it(program: Path) -> None:
    write_capture(program, right=False, leave_out="x")  # the wrong `after` is not compared: x was left out
    client = WorkerClient(FAKE, timeout_s=10.0)
    ev = KernelEvaluator.for_target(target(program, []), client, arch="sm_90",
                                    timing=TimingOptions(min_runs=3, min_ms=0.0, max_s=0.5))
    try:
        assert ev.set_reference(compiled("saxpy"), ev.spec.launch).ok
        outcome = ev.evaluate(Variant("", ev.spec.launch), compiled("saxpy"))
        assert outcome.ok and all("captured" not in c.name for c in outcome.comparisons)
    finally:
        ev.close()
        client.close()


def test_the_worker_checks_the_arrays_it_loads(evaluator: KernelEvaluator, program: Path) -> None:
    np.save(program / ".cuopt" / "captures" / "saxpy" / "saxpy.0.y.after.npy", np.zeros(N - 1, np.float32))
    outcome = evaluator.set_reference(compiled("saxpy"), evaluator.spec.launch)
    assert outcome.status == "error"
    assert "saxpy.0.y.after.npy: has shape (999,), expected (1000,); the capture changed while in use" in outcome.detail


def test_check_points_at_the_capture_key(program: Path) -> None:
    from typer.testing import CliRunner

    from cuopt.cli import app

    write_capture(program)
    manifest = program / ".cuopt" / "captures" / "saxpy" / "manifest.json"
    raw = json.loads(manifest.read_text())
    raw["launches"][0]["args"][1]["dtype"] = "float64"
    manifest.write_text(json.dumps(raw))
    result = CliRunner().invoke(app, ["check", "--no-compile", str(program / "saxpy.cu")])
    assert result.exit_code == 1, result.output
    assert (f"saxpy.cuopt.toml:2: error: spec: [saxpy] capture: {manifest}: saxpy: argument 2 is a (float64 scalar) "
            "in the capture, a (float32 scalar) in the source's saxpy (line 2)") in result.output


def test_an_allocation_longer_than_the_spec_s_count_is_held_whole_but_not_counted_as_moved(program: Path) -> None:
    write_capture(program, pad=500)
    captured, timing, _ = target(program).bound.instances()
    assert [a.count for a in captured.args[2:]] == [N + 500, N + 500]
    assert captured.bytes_moved() == timing.bytes_moved() == 3 * 4 * N


def test_a_captured_out_buffer_starts_as_the_program_had_it_in_the_float64_shadow_too(program: Path) -> None:
    from cuopt.evaluate.client import KernelRef, LaunchDims, Shadowed

    write_capture(program)
    (program / "saxpy.cuopt.toml").write_text(SPEC.format(n=N).replace("inout float32", "out float32"))
    captured = target(program).bound.instances()[0]
    dims = LaunchDims((4, 1, 1), (256, 1, 1))
    tolerance = {"y": (1e-5, 1e-6)}
    client = WorkerClient(FAKE, timeout_s=10.0)
    try:
        key = client.register(captured, KernelRef("fake.cubin", "saxpy"), dims,
                              Shadowed(KernelRef("fake.cubin", "saxpy"), dims, tolerance))
        ready = client.ensure(key)
        assert ready["status"] == "ok", ready
        assert all(c.ok for c in ready["checks"])  # the shadow read y's captured contents, not poison
        right = client.run(key, KernelRef("fake.cubin", "saxpy"), dims, tolerance)["comparisons"]
        assert [(c.name, c.ok, c.accuracy is not None) for c in right] == [("y", True, True),
                                                                            ("y (captured output)", True, False)]
        wrong = client.run(key, KernelRef("fake.cubin", "saxpy_clamped"), dims, tolerance)["comparisons"]
        assert [c.ok for c in wrong] == [False, False]
    finally:
        client.close()


@requires_nvcc
def test_bench_rows_name_the_capture(program: Path) -> None:
    from cuopt.benchmark import measure

    write_capture(program)
    [row] = measure([target(program)], dry_run=True).rows
    assert row["capture"] == "saxpy" and row["sizes"] == {"n": N} and row["bytes"] == 3 * 4 * N


def test_a_capture_is_part_of_the_measurement_cache_s_context(program: Path) -> None:
    """Measurements validated without the captured data, or on another capture, are not reused."""
    from cuopt.optimization.session import context_hash

    device = {"name": "NVIDIA H200", "driver": "580"}
    write_capture(program)
    with_capture = context_hash(target(program), device)
    (program / "saxpy.cuopt.toml").write_text(SPEC.format(n=N).replace('capture = "saxpy"\n', ""))
    assert context_hash(target(program), device) != with_capture
    (program / "saxpy.cuopt.toml").write_text(SPEC.format(n=N))
    assert context_hash(target(program), device) == with_capture
    write_capture(program, x_scale=3.0)  # taken again: another manifest
    manifest = program / ".cuopt" / "captures" / "saxpy" / "manifest.json"
    manifest.write_text(manifest.read_text().replace("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"))
    assert context_hash(target(program), device) != with_capture
