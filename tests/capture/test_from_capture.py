"""`cuopt init --from-capture`: spec tables from a capture, and every capture it refuses (one line,
nothing written)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cuopt.capture.manifest import CaptureError
from cuopt.capture.to_spec import specs_from_capture
from cuopt.cli import app
from cuopt.spec import expr as E
from cuopt.spec.model import load as load_spec

from tests.capture.synthetic import TRAINSTEP, N, Arg, Launch, Program, train_step_launches, trainstep_launches


def init(prog: Program, name: str = "train_step", *extra: str):
    return CliRunner().invoke(app, ["init", str(prog.source), "--from-capture", name, *extra])


def spec_of(prog: Program) -> Path:
    return prog.source.with_name("train_step.cuopt.toml")


@pytest.fixture
def prog(tmp_path: Path) -> Program:
    p = Program(tmp_path)
    p.capture(train_step_launches())
    return p


def test_every_captured_kernel_gets_its_launch_sizes_and_scalars_without_a_todo(prog: Program) -> None:
    result = init(prog)
    assert result.exit_code == 0, result.output
    assert f"wrote {spec_of(prog)} (5 kernels from capture 'train_step', 0 TODOs to check)" in result.output
    spec = load_spec(spec_of(prog))
    adam, softmax, scale = spec.kernels["adam_step"], spec.kernels["row_softmax"], spec.kernels["scale_float_128"]
    assert {k.capture for k in spec.kernels.values()} == {"train_step"}
    assert adam.sizes == {"n": N} and softmax.sizes == {"rows": 8, "cols": 64} and scale.sizes == {"n": N}
    # the source's expressions stay where they give the captured values
    text = spec_of(prog).read_text()
    assert 'grid = ["cdiv(n, block.x)"]' in text and 'param = "inout float32[n]"' in text
    # scalars computed at run time or passed through default arguments: the program's values
    assert (adam.arg("lr").value, adam.arg("beta1").value) == (0.0003, 0.9)
    assert scale.entry == "scale<float, 128>" and scale.arg("s").value == 0.5
    # counts the source could not follow: the captured ones
    assert 'out = "out float32[cols*rows]"' in text and 'in = "in float32[cols*rows]"' in text


def test_the_capture_wins_where_the_source_disagrees_and_says_so(prog: Program) -> None:
    result = init(prog)
    said = [line for line in result.output.splitlines() if line.startswith(str(prog.source))]
    assert said == [
        f"{prog.source}: [row_softmax] grid[1]: the source gives 1, the capture 8 (the size rows): the captured grid is "
        "written",
        f"{prog.source}: [bias_add] args.bias: the source reads it only, but the launch changed it: written as inout",
        f"{prog.source}: [zero_rows] grid[0]: the source gives 1, the capture 4: the captured grid is written"]
    text = spec_of(prog).read_text()
    assert 'grid = ["cdiv(cols, block.x)", "rows"]' in text and 'bias = "inout float32[n]"' in text
    # a kernel without sizes, launched over a grid its host code takes at run time
    assert 'grid = ["4"]\nsizes = { n = 1 }  # a placeholder' in text and 'x = "out float32[512]"' in text


def test_captured_scalar_and_count_replace_the_sources(tmp_path: Path) -> None:
    prog = Program(tmp_path)
    launches = train_step_launches()
    adam = launches[0]
    adam.args[3].value = 1e-3  # the source's default argument says 3e-4
    short = adam.args[1].before[:N - 100]  # an allocation smaller than the source's count n
    adam.args[1] = Arg("grad", "float32", before=short)
    prog.capture(launches)
    result = init(prog)
    assert result.exit_code == 0, result.output
    assert (f"{prog.source}: [adam_step] args.lr: the source gives 0.0003, the capture 0.001: the captured value is "
            "written") in result.output
    assert (f"{prog.source}: [adam_step] args.grad: the source gives n = {N} elements, the capture's allocation holds "
            f"{N - 100} from the pointer on: the captured count is written") in result.output
    spec = load_spec(spec_of(prog)).kernels["adam_step"]
    assert spec.arg("lr").value == 0.001 and str(spec.arg("grad").count) == str(N - 100)


def test_a_buffer_left_out_keeps_the_sources_count_and_is_said(tmp_path: Path) -> None:
    prog = Program(tmp_path)
    launches = train_step_launches()
    launches[0].args[1] = Arg("grad", "float32", before=np.zeros(N, np.float32), omitted="over --max-bytes: 2 KiB asked")
    prog.capture(launches)
    result = init(prog)
    assert result.exit_code == 0, result.output
    assert ("[adam_step] args.grad: the capture left its contents out (over --max-bytes: 2 KiB asked): random inputs "
            "stand in, and the captured output is not compared") in result.output
    assert 'grad = "in float32[n]"' in spec_of(prog).read_text()


def test_a_kernel_the_capture_did_not_see_is_described_from_the_source(tmp_path: Path) -> None:
    prog = Program(tmp_path)
    prog.capture(train_step_launches()[:1])
    result = init(prog)
    assert result.exit_code == 0, result.output
    assert (f"{prog.source}: [row_softmax] row_softmax was not launched during capture 'train_step': described from "
            "the source alone") in result.output
    spec = load_spec(spec_of(prog))
    assert spec.kernels["adam_step"].capture == "train_step" and spec.kernels["row_softmax"].capture == ""
    assert "TODO" in spec_of(prog).read_text().split("[row_softmax]")[1]


def test_the_written_spec_passes_check(prog: Program) -> None:
    assert init(prog).exit_code == 0
    result = CliRunner().invoke(app, ["check", "--no-compile", str(prog.source)])
    assert result.exit_code == 0, result.output
    assert " 0 errors" in result.output


def test_a_capture_given_by_its_directory(prog: Program, tmp_path: Path) -> None:
    other = prog.capture(train_step_launches(), name="run2")
    assert init(prog, str(other)).exit_code == 0
    assert {k.capture for k in load_spec(spec_of(prog)).kernels.values()} == {"run2"}


def test_a_capture_moved_away_from_its_sources_is_refused(prog: Program, tmp_path: Path) -> None:
    moved = tmp_path / "kept" / "run2"
    moved.parent.mkdir()
    prog.capture(train_step_launches(), name="run2").rename(moved)
    # the manifest's source paths are relative to the directory holding .cuopt: not this one
    assert refused(prog, str(moved)) == (f"cuopt: error: {moved / 'manifest.json'}: sources: capture 'run2' was not "
                                         f"taken from {prog.source} (its sources: train_step.cu)")


def test_specs_from_capture_writes_every_source_s_spec(prog: Program) -> None:
    directory = prog.root / ".cuopt" / "captures" / "train_step"
    lines: list[str] = []
    [(path, made)] = specs_from_capture(directory, [prog.source], say=lines.append)
    assert path == spec_of(prog) and made.kernels == 5 and made.todos == 0
    assert path.read_text() == made.text
    with pytest.raises(CaptureError, match="already exists; pass --force"):
        specs_from_capture(directory, [prog.source])
    specs_from_capture(directory, [prog.source], force=True)


# -- bad input: one line, nothing written -------------------------------------------------------------
def refused(prog: Program, name: str = "train_step") -> str:
    result = init(prog, name)
    assert result.exit_code == 1, result.output
    assert not spec_of(prog).exists()
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def manifest_path(prog: Program) -> Path:
    return prog.root / ".cuopt" / "captures" / "train_step" / "manifest.json"


def edit_manifest(prog: Program, change) -> None:
    path = manifest_path(prog)
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))


def test_no_such_capture_lists_those_there(prog: Program) -> None:
    prog.capture(train_step_launches(), name="other")
    assert refused(prog, "nope") == (f"cuopt: error: no capture 'nope' in {prog.root / '.cuopt' / 'captures'} (captures "
                                     "there: other, train_step)")


def test_no_capture_at_all(tmp_path: Path) -> None:
    prog = Program(tmp_path)
    assert refused(prog).endswith("(none there: run `cuopt capture FILE.cu -- PROGRAM`)")


def test_missing_manifest(prog: Program) -> None:
    manifest_path(prog).unlink()
    assert "not a capture (or a damaged one)" in refused(prog)


def test_invalid_manifest(prog: Program) -> None:
    manifest_path(prog).write_text('{"format": 1, "launches": [')
    assert f"cuopt: error: {manifest_path(prog)}: not valid JSON" in refused(prog)


def test_unknown_format_version(prog: Program) -> None:
    edit_manifest(prog, lambda raw: raw.update(format=7))
    assert refused(prog) == (f"cuopt: error: {manifest_path(prog)}: format: unknown format version 7; this cuopt reads "
                             "format 1: capture again with this cuopt")


def test_a_missing_key_is_named(prog: Program) -> None:
    edit_manifest(prog, lambda raw: raw["launches"][1].pop("grid"))
    assert refused(prog) == f"cuopt: error: {manifest_path(prog)}: launches[1].grid: missing"


def test_missing_array(prog: Program) -> None:
    (manifest_path(prog).parent / "adam_step.0.grad.before.npy").unlink()
    assert refused(prog) == (f"cuopt: error: {manifest_path(prog)}: launches[0].args[1].before: adam_step.0.grad.before.npy: "
                             "missing; the capture is damaged: capture again")


def test_wrong_shaped_array(prog: Program) -> None:
    np.save(manifest_path(prog).parent / "adam_step.0.m.after.npy", np.zeros((2, N // 2), np.float32))
    assert "launches[0].args[2].after: adam_step.0.m.after.npy: has shape (2, 256), expected (512,)" in refused(prog)


def test_wrong_dtype_array(prog: Program) -> None:
    np.save(manifest_path(prog).parent / "scale.0.x.before.npy", np.zeros(N, np.float64))
    assert "scale.0.x.before.npy: holds float64, expected float32" in refused(prog)


def test_a_source_changed_since_the_capture_is_named(prog: Program) -> None:
    prog.source.write_text(prog.source.read_text().replace("beta1 * m[i]", "beta1 * m[i] + 0.0f"))
    assert refused(prog) == (f"cuopt: error: {prog.source}: changed since capture 'train_step' was taken (sha256 differs from "
                             "the manifest's); its data may not fit this source: capture again")


@pytest.mark.parametrize("change, expected", [
    (lambda args: args.pop(), "the capture has 5 arguments (param, grad, m, lr, beta1), the source's adam_step "
                              "(line 7) 6 (param, grad, m, lr, beta1, n)"),
    (lambda args: args[0].update(name="p"), "argument 1 is p (float32 pointer) in the capture, param (float32 "
                                            "pointer) in the source's adam_step (line 7)"),
    (lambda args: args[5].update(dtype="int64"), "argument 6 is n (int64 scalar) in the capture, n (int32 scalar) in "
                                                 "the source's adam_step (line 7)"),
])
def test_an_argument_layout_unlike_the_signature(prog: Program, change, expected: str) -> None:
    edit_manifest(prog, lambda raw: change(raw["launches"][0]["args"]))
    assert refused(prog) == (f"cuopt: error: {manifest_path(prog)}: adam_step: {expected}; the program was built from "
                             "another version of the source: capture again")


def test_the_training_step_sample_gets_every_table_without_a_todo(tmp_path: Path) -> None:
    """samples/programs/trainstep: sizes read from a file at run time, hyperparameters through default
    arguments and launchers, grid.y = B * NH, a template kernel. `cuopt init` alone leaves dozens of TODOs."""
    prog = Program(tmp_path, TRAINSTEP)
    prog.capture(trainstep_launches())
    result = CliRunner().invoke(app, ["init", str(prog.source), "--from-capture", "trainstep"])
    assert result.exit_code == 0, result.output
    assert "(7 kernels from capture 'trainstep', 0 TODOs to check)" in result.output
    spec = load_spec(prog.source.with_name("trainstep.cuopt.toml")).kernels
    adamw = spec["adamw_kernel"]
    assert [adamw.arg(n).value for n in ("learning_rate", "beta1_correction", "beta2_correction")] == [3e-4, 0.1, 1e-3]
    text = prog.source.with_name("trainstep.cuopt.toml").read_text()
    # counts the source could not follow, written as the one product of sizes that gives the captured count
    assert 'out = "out float32[B*C*T]"' in text and 'tokens = "in int32[B*T] randint(0, 200)"\n' in text
    assert 'wte = "in float32[200*C]"\n' in text  # V = 200 rows of C: the tokens' init keeps wte's reads inside
    assert spec["matmul_forward_kernel_16"].launch.block == (16, 16)
    check = CliRunner().invoke(app, ["check", "--no-compile", str(prog.source)])
    assert check.exit_code == 0 and " 0 errors" in check.output, check.output


def test_counts_and_grid_axes_no_size_expression_gives_are_checked_at_the_captured_sizes_only(tmp_path: Path) -> None:
    """The attention kernel's grid.y is B * NH of a B the kernel never takes, and its buffers' counts
    follow no product of its sizes: at other sizes those numbers would stay and the kernel would read
    past qkv, so the check runs at the captured sizes alone, and the command says why."""
    prog = Program(tmp_path, TRAINSTEP)
    prog.capture(trainstep_launches())
    result = CliRunner().invoke(app, ["init", str(prog.source), "--from-capture", "trainstep"])
    assert result.exit_code == 0, result.output
    spec = load_spec(prog.source.with_name("trainstep.cuopt.toml")).kernels
    att = spec["attention_query_key_kernel"]
    assert str(att.launch.grid[1]) == "16" and list(att.check_sizes) == [att.sizes]
    said = [ln for ln in result.output.splitlines() if "[attention_query_key_kernel] check_sizes:" in ln]
    assert said and "args.qkv (41472 elements)" in said[0] and "grid[1] (16)" in said[0]
    assert list(spec["softmax_forward_kernel"].check_sizes) != [spec["softmax_forward_kernel"].sizes]  # counts follow


@pytest.mark.parametrize("entry, expected", [
    ("scale<float, 128, 3>", "scale<float, 128, 3>: scale<float, 128, 3> gives 3 template arguments; scale takes 2 "
                             "(typename T, value BLOCK)"),
    ("scale<double, 128>", "scale<double, 128>: argument 1 is x (float32 pointer) in the capture, x (float64 pointer) "
                           "in the source's scale<double, 128> (line 28); the program was built from another version of "
                           "the source: capture again"),
])
def test_a_captured_instantiation_the_source_cannot_make(prog: Program, entry: str, expected: str) -> None:
    edit_manifest(prog, lambda raw: raw["launches"][2].update(entry=entry))
    assert refused(prog) == f"cuopt: error: {manifest_path(prog)}: {expected}"


def test_a_captured_kernel_the_source_does_not_define(prog: Program) -> None:
    edit_manifest(prog, lambda raw: raw["launches"][0].update(kernel="adam_step_v2", entry="adam_step_v2"))
    result = init(prog)  # launches of kernels the file does not define are not this file's: adam_step is described
    assert result.exit_code == 0, result.output  # from the source alone, and said
    assert (f"{prog.source}: capture 'train_step' launched adam_step_v2, which the file does not define: left out"
            in result.output)
    assert "[adam_step] adam_step was not launched during capture 'train_step'" in result.output


# -- values that index a captured buffer ----------------------------------------------------------------
GATHER = """\
// each thread copies one feature of the row that idx names for its output row
__global__ void gather_rows(float* out, const int* idx, const float* table, int R, int C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= R * C) return;
  int row = i / C;
  int c = i % C;
  out[i] = table[idx[row] * C + c];
}
"""
R, C, ROWS = 96, 40, 50  # output rows, features per row, rows of the table


def gather(tmp_path: Path, table_count: int) -> tuple[Program, str]:
    """`cuopt init --from-capture` of an embedding lookup whose table holds `table_count` elements."""
    (tmp_path / "gather.cu").write_text(GATHER)
    prog = Program(tmp_path, tmp_path / "gather.cu")
    rng = np.random.default_rng(3)
    prog.capture([Launch("gather_rows", ((R * C + 255) // 256, 1, 1), (256, 1, 1), [
        Arg("out", "float32", before=np.zeros(R * C, np.float32)),
        Arg("idx", "int32", before=rng.integers(0, table_count // C, R).astype(np.int32)),
        Arg("table", "float32", before=rng.standard_normal(table_count).astype(np.float32)),
        Arg("R", "int32", value=R), Arg("C", "int32", value=C)])])
    result = CliRunner().invoke(app, ["init", str(prog.source), "--from-capture", "gather"])
    assert result.exit_code == 0, result.output
    return prog, result.output


def test_values_that_index_a_captured_table_get_an_init_in_bounds_at_every_size(tmp_path: Path) -> None:
    """The table's count, a whole number of rows of C, is written as rows of C; the indices' init keeps
    `table[idx[row] * C + c]` inside it at the timing sizes and at every check size (C changes there)."""
    prog, output = gather(tmp_path, ROWS * C)
    assert "(1 kernel from capture 'gather', 0 TODOs to check)" in output
    spec = load_spec(prog.source.with_name("gather.cuopt.toml")).kernels["gather_rows"]
    idx, table = spec.arg("idx"), spec.arg("table")
    assert str(table.count) == str(E.parse(f"{ROWS}*C")) and idx.init is not None and idx.init.kind == "randint"
    sets = spec.size_sets()
    assert len({s["C"] for _, s in sets}) > 1, sets  # the check sizes vary C
    for label, sizes in sets:
        low, high = (a if isinstance(a, float) else E.evaluate(a, sizes) for a in idx.init.args)
        # the largest index the kernel reads: the last value idx can hold, at the last feature
        assert low >= 0 and (high - 1) * sizes["C"] + sizes["C"] - 1 < E.evaluate(table.count, sizes), label
    check = CliRunner().invoke(app, ["check", "--no-compile", str(prog.source)])
    assert check.exit_code == 0 and " 0 errors" in check.output, check.output


def test_values_that_index_a_table_of_no_whole_rows_keep_their_todo(tmp_path: Path) -> None:
    """A table of a count that is no whole number of rows of C: no init bounds the indices at sizes
    where C differs, so the TODO `cuopt init` writes stays, and is counted."""
    prog, output = gather(tmp_path, ROWS * C + 7)
    assert "(1 kernel from capture 'gather', 1 TODO to check)" in output
    text = prog.source.with_name("gather.cuopt.toml").read_text()
    assert f'table = "in float32[{ROWS * C + 7}]"' in text
    assert ('idx = "in int32[R]"  # TODO: its values index table at line 7: give it an init that keeps those '
            'indices in bounds (the default, randint(-100, 100), does not)') in text
