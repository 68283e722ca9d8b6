"""The files one optimize command writes: searches start from the file as earlier kernels left it, one
backup per file, every write read back (and undone when it does not hold the accepted kernels)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.optimization.files import Files, WriteCheckError
from cuopt.spec import expr as E
from cuopt.spec.edit import set_launch
from cuopt.spec.model import Launch, load as load_spec, spec_path_for
from cuopt.targets import collect

KERNEL = """__global__ void NAME(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
"""
SPEC = """[NAME]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 4096 }

[NAME.args]
n = "n"
a = 2.0
x = "in float32[n]"
y = "inout float32[n]"
"""
FAST = "y[i] = a * x[i] + y[i];  // faster"


@pytest.fixture
def two(tmp_path: Path) -> Path:
    cu = tmp_path / "two.cu"
    cu.write_text("// host code above\n" + KERNEL.replace("NAME", "first") + "\nint helper;\n"
                  + KERNEL.replace("NAME", "second"))
    spec_path_for(cu).write_text(SPEC.replace("NAME", "first") + "\n" + SPEC.replace("NAME", "second"))
    return cu


def rewritten(text: str, kernel: str) -> bytes:
    """`text` with `kernel`'s statement changed (a stand-in for an accepted variant)."""
    start = text.index(f"void {kernel}(")
    end = text.index("}\n}", start)
    return (text[:start] + text[start:end].replace("y[i] = a * x[i] + y[i];", FAST) + text[end:]).encode()


def test_later_kernels_start_from_the_file_as_earlier_ones_left_it(two: Path) -> None:
    files = Files()
    first, second = collect([two])
    assert files.current(second) is second, "nothing written yet: the target as collected"
    launch = Launch((128,), (E.parse("cdiv(n, block.x)"),))
    spec_text = set_launch(spec_path_for(two).read_text(), "first", launch)
    assert files.write(first, two, rewritten(first.text, "first"), spec_text, launch) == \
        [str(two), str(spec_path_for(two))]
    fresh = files.current(second)
    assert FAST in fresh.text and fresh.kernel.name == "second" and fresh.spec.launch.block == (256,)

    files.write(fresh, two, rewritten(fresh.text, "second"), spec_path_for(two).read_text(), fresh.spec.launch)
    text = two.read_text()
    assert text.count(FAST) == 2
    assert load_spec(spec_path_for(two)).kernels["first"].launch == launch
    [backup] = sorted((two.parent / ".cuopt" / "backups").glob("two.cu.*"))
    assert FAST not in backup.read_text(), "one backup, of the file before the command"
    assert len(list((two.parent / ".cuopt" / "backups").glob("two.cuopt.toml.*"))) == 1


def test_a_write_that_loses_an_accepted_kernel_is_undone(two: Path) -> None:
    files = Files()
    first, second = collect([two])
    files.write(first, two, rewritten(first.text, "first"), spec_path_for(two).read_text(), first.spec.launch)
    after_first = two.read_bytes(), spec_path_for(two).read_bytes()
    # the bug this guards against: the second kernel's variant built from the file as it was at the start
    with pytest.raises(WriteCheckError, match=r"kernel first is not the accepted variant; the previous contents "
                                              r"were restored"):
        files.write(second, two, rewritten(second.text, "second"), spec_path_for(two).read_text(),
                    second.spec.launch)
    assert (two.read_bytes(), spec_path_for(two).read_bytes()) == after_first


def test_a_spec_that_does_not_hold_the_accepted_launch_is_undone(two: Path) -> None:
    files = Files()
    first, _ = collect([two])
    before = two.read_bytes(), spec_path_for(two).read_bytes()
    other = Launch((64,), (E.parse("cdiv(n, block.x)"),))
    with pytest.raises(WriteCheckError, match=r"the spec's launch of first is not the accepted block 64"):
        files.write(first, two, rewritten(first.text, "first"), spec_path_for(two).read_text(), other)
    assert (two.read_bytes(), spec_path_for(two).read_bytes()) == before


TEMPLATE = """template <typename T, int ITEMS>
__global__ void scale(T* out, const T* in, T a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * in[i];
    }
}
"""
TABLE = """[LABEL]
kernel = "ENTRY"
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 4096 }

[LABEL.args]
out = "out DTYPE[n]"
in = "in DTYPE[n]"
a = 2.0
n = "n"
"""
SCALED = "out[i] = a * in[i];  // faster"


@pytest.fixture
def instances(tmp_path: Path) -> Path:
    """Two spec tables, labelled apart from the kernel's name, for two instantiations of one template."""
    cu = tmp_path / "scale.cu"
    cu.write_text(TEMPLATE)
    spec_path_for(cu).write_text(
        TABLE.replace("LABEL", "scale_f32").replace("ENTRY", "scale<float, 4>").replace("DTYPE", "float32") + "\n"
        + TABLE.replace("LABEL", "scale_f64").replace("ENTRY", "scale<double, 2>").replace("DTYPE", "float64"))
    return cu


def test_labelled_instantiations_are_read_back_by_their_tables(instances: Path) -> None:
    files = Files()
    f32, f64 = collect([instances])
    launch = Launch((128,), (E.parse("cdiv(n, block.x)"),))
    body = instances.read_text().replace("out[i] = a * in[i];", SCALED)
    files.write(f32, instances, body.encode(), set_launch(spec_path_for(instances).read_text(), "scale_f32", launch),
                launch)
    fresh = files.current(f64)
    assert (fresh.spec.name, fresh.kernel.entry) == ("scale_f64", "scale<double, 2>") and SCALED in fresh.text
    # the second instantiation's variant rewrites the body the first one's was accepted in: the latest wins
    again = fresh.text.replace(SCALED, SCALED + " // again")
    files.write(fresh, instances, again.encode(), spec_path_for(instances).read_text(), fresh.spec.launch)
    assert instances.read_text() == again
    specs = load_spec(spec_path_for(instances)).kernels
    assert specs["scale_f32"].launch == launch and specs["scale_f64"].launch.block == (256,)


def test_a_labelled_tables_launch_is_checked_under_its_label(instances: Path) -> None:
    files = Files()
    f32, _ = collect([instances])
    other = Launch((64,), (E.parse("cdiv(n, block.x)"),))
    with pytest.raises(WriteCheckError, match=r"the spec's launch of scale_f32 is not the accepted block 64"):
        files.write(f32, instances, instances.read_bytes(), spec_path_for(instances).read_text(), other)


@pytest.fixture
def captured(two: Path) -> Path:
    """`two` with both tables naming a capture of both kernels' launches (synthesized)."""
    import numpy as np

    from tests.capture.synthetic import Arg, Launch as Captured, Program

    x, y = np.linspace(-1, 1, 4096, dtype=np.float32), np.ones(4096, np.float32)
    args = [Arg("n", "int32", value=4096), Arg("a", "float32", value=2.0), Arg("x", "float32", before=x),
            Arg("y", "float32", before=y, after=2 * x + y)]
    Program(two.parent, original=two).capture(
        [Captured("first", (16, 1, 1), (256, 1, 1), args), Captured("second", (16, 1, 1), (256, 1, 1), args)])
    spec = spec_path_for(two)
    spec.write_text(spec.read_text().replace("sizes = {", 'capture = "two"\nsizes = {'))
    return two


def _manifest(cu: Path) -> dict:
    import json

    return json.loads((cu.parent / ".cuopt" / "captures" / "two" / "manifest.json").read_text())


def test_a_variant_validated_on_the_capture_is_recorded_in_its_manifest(captured: Path) -> None:
    import hashlib

    original = hashlib.sha256(captured.read_bytes()).hexdigest()
    files = Files()
    first, second = collect([captured])
    assert first.bound.captured is not None
    files.write(first, captured, rewritten(first.text, "first"), spec_path_for(captured).read_text(),
                first.spec.launch)
    [source] = _manifest(captured)["sources"]
    assert source["sha256"] == hashlib.sha256(captured.read_bytes()).hexdigest() != original
    assert source["captured_sha256"] == original
    assert [(r["by"], r["kernel"], r["sha256"]) for r in source["rewritten"]] == [
        ("cuopt optimize", "first", source["sha256"])]
    # a later command takes the file as cuopt left it: both kernels, the one not rewritten too
    assert [t.spec.name for t in collect([captured])] == ["first", "second"]
    assert [t.spec.name for t in collect([captured], kernel="second")] == ["second"]

    fresh = files.current(second)
    files.write(fresh, captured, rewritten(fresh.text, "second"), spec_path_for(captured).read_text(),
                fresh.spec.launch)
    [source] = _manifest(captured)["sources"]
    assert source["captured_sha256"] == original and len(source["rewritten"]) == 2
    assert source["sha256"] == hashlib.sha256(captured.read_bytes()).hexdigest()
    assert len(collect([captured])) == 2


def test_a_hand_edit_after_the_write_back_still_makes_the_capture_stale(captured: Path) -> None:
    from cuopt.errors import CuoptError

    first, _ = collect([captured])
    Files().write(first, captured, rewritten(first.text, "first"), spec_path_for(captured).read_text(),
                  first.spec.launch)
    captured.write_text(captured.read_text() + "// edited by hand\n")
    with pytest.raises(CuoptError, match=r"two.cuopt.toml: \[first\] capture: .*two.cu: changed since capture 'two' "
                                          r"was taken and since cuopt optimize last wrote it after validating on that "
                                          r"capture \(sha256 differs from the manifest's\)"):
        collect([captured])


def test_a_file_written_elsewhere_leaves_the_manifest_alone(captured: Path) -> None:
    before = (captured.parent / ".cuopt" / "captures" / "two" / "manifest.json").read_bytes()
    first, _ = collect([captured])
    elsewhere = captured.parent / "out" / "two.cu"
    elsewhere.parent.mkdir()
    Files().write(first, elsewhere, rewritten(first.text, "first"), spec_path_for(captured).read_text(),
                  first.spec.launch)
    assert FAST in elsewhere.read_text()
    assert (captured.parent / ".cuopt" / "captures" / "two" / "manifest.json").read_bytes() == before


def test_a_manifest_write_that_fails_keeps_the_old_manifest_and_undoes_the_write(
        captured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import cuopt.writeback

    directory = captured.parent / ".cuopt" / "captures" / "two"
    first, _ = collect([captured])
    before = captured.read_bytes(), spec_path_for(captured).read_bytes(), (directory / "manifest.json").read_bytes()
    replace = os.replace

    def failing(src: str, dst: str | Path) -> None:
        if Path(dst).name == "manifest.json":
            raise OSError(28, "No space left on device")
        replace(src, dst)

    monkeypatch.setattr(cuopt.writeback.os, "replace", failing)
    with pytest.raises(WriteCheckError, match=r"manifest.json: cannot write: No space left on device; the previous "
                                              r"contents were restored"):
        Files().write(first, captured, rewritten(first.text, "first"), spec_path_for(captured).read_text(),
                      first.spec.launch)
    assert (captured.read_bytes(), spec_path_for(captured).read_bytes(),
            (directory / "manifest.json").read_bytes()) == before
    assert sorted(p.name for p in directory.iterdir() if p.name.startswith(".")) == [], "no temporary file left"
