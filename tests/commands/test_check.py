"""`cuopt check`: samples pass, broken files give exact file:line:col messages and exit codes,
--strict, ignore comments, JSON and SARIF output, nvcc errors, and a light import footprint."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cuopt.lint.nvcc import errors_in_log
from cuopt.cli import app
from cuopt.lint.diagnostics import Diagnostic

from tests.conftest import SAMPLES, requires_nvcc, sample_names

SUMMARY_OK = "1 file: 0 errors, 0 warnings\n"


def cuopt(*args: str) -> Result:
    return CliRunner().invoke(app, ["check", *args])


@pytest.fixture
def saxpy(samples: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The spec of saxpy.cu in a private samples copy, which is the working directory (so paths
    print as `saxpy.cu`)."""
    monkeypatch.chdir(samples)
    return samples / "saxpy.cuopt.toml"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", sample_names())
def test_every_sample_checks_clean(name: str) -> None:
    result = cuopt(str(SAMPLES / f"{name}.cu"))
    assert result.exit_code == 0, result.output
    assert ": error:" not in result.stdout
    assert re.fullmatch(r"1 file: 0 errors, \d+ warnings?", result.stdout.splitlines()[-1]), result.output


def test_a_directory_checks_every_file_in_it(samples: Path) -> None:
    result = cuopt(str(samples), "--no-compile")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith(f"{len(sample_names())} files: 0 errors, ")


def test_directories_skip_hidden_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src" / ".venv").mkdir(parents=True)
    write(tmp_path / "src" / "ok.cuh", "__device__ float twice(float x) { return 2 * x; }\n")
    write(tmp_path / "src" / ".venv" / "broken.cu", "__global__ void k(\n")
    result = cuopt("src")
    assert result.exit_code == 0, result.output
    assert result.stdout == SUMMARY_OK


def test_syntax_error_is_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "bad.cu", "__global__ void k(float* a)\n{\n  a[0] = (1;\n}\n")
    result = cuopt("bad.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout == "bad.cu:3:12: error: parse: syntax error: missing ')'\n1 file: 1 error, 0 warnings\n"


def test_spec_missing_a_parameter(saxpy: Path) -> None:
    edit(saxpy, 'n = "n"\n', "")
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout == ("saxpy.cuopt.toml:10: error: spec: [saxpy] args: parameter 'n' of kernel saxpy (line 2) "
                             "is missing; add n = ... to [saxpy.args]\n1 file: 1 error, 0 warnings\n")


def test_spec_unknown_size_name(saxpy: Path) -> None:
    edit(saxpy, 'y = "inout float32[n]"', 'y = "inout float32[m]"')
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout == ("saxpy.cuopt.toml:14: error: spec: [saxpy] args.y: unknown size name 'm' "
                             "(sizes defines: n)\n1 file: 1 error, 0 warnings\n")


def test_spec_wrong_dtype(saxpy: Path) -> None:
    edit(saxpy, 'x = "in float32[n]"', 'x = "in float64[n]"')
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout == ("saxpy.cuopt.toml:13: error: spec: [saxpy] args.x: dtype float64 does not match the "
                             "C type float; expected float32\n1 file: 1 error, 0 warnings\n")


def test_spec_expression_invalid_at_a_check_size(saxpy: Path) -> None:
    edit(saxpy, 'grid = ["cdiv(n, block.x)"]', 'grid = ["n - 100"]')
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0] == ("saxpy.cuopt.toml:3: error: spec: [saxpy] grid: evaluates to "
                                             "(-3, 1, 1) at sizes {'n': 97}; grid dims must be positive")


def test_spec_not_valid_toml(saxpy: Path) -> None:
    edit(saxpy, "seed = 0", "seed = ")
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0] == "saxpy.cuopt.toml:8:8: error: spec: not valid TOML: Invalid value (at line 8, column 8)"


def test_spec_compile_table_error_at_its_key(saxpy: Path) -> None:
    saxpy.write_text('[compile]\ndefine = ["N"]\ninclude = ["../nowhere"]\n\n' + saxpy.read_text())
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0].startswith(
        "saxpy.cuopt.toml:3: error: spec: [compile] include: include directory '../nowhere' not found")


def test_spec_naming_a_kernel_the_file_lacks(saxpy: Path) -> None:
    edit(saxpy, "[saxpy]\n", "[saxpy2]\n")
    edit(saxpy, "[saxpy.args]", "[saxpy2.args]")
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[1] == ("saxpy.cuopt.toml:1: error: spec: [saxpy2] names a kernel that saxpy.cu "
                                             "does not define (__global__ kernels found: saxpy)")


def test_every_kernel_spec_error_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "two.cu", "__global__ void f(float* a, int n) { }\n__global__ void g(float* b, int n) { }\n")
    write(tmp_path / "two.cuopt.toml", (
        '[f]\nblock = 256\ngrid = "cdiv(n, block.x)"\nsizes = { n = 1000 }\n[f.args]\na = "out float32[n]"\n\n'
        '[g]\nblock = 256\ngrid = "cdiv(n, block.x)"\nsizes = { n = 1000 }\n[g.args]\nb = "out int32[n]"\nn = "n"\n'))
    result = cuopt("two.cu", "--no-compile")
    assert result.exit_code == 1, result.output
    assert result.stdout == (
        "two.cuopt.toml:5: error: spec: [f] args: parameter 'n' of kernel f (line 1) is missing; add n = ... to [f.args]\n"
        "two.cuopt.toml:13: error: spec: [g] args.b: dtype int32 does not match the C type float; expected float32\n"
        "1 file: 2 errors, 0 warnings\n")


def test_findings_are_warnings_unless_strict(samples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(samples)
    expected = ("transpose.cu:7:9: warning: smem-tile: uncoalesced global store; run cuopt optimize\n"
                "1 file: 0 errors, 1 warning\n")
    result = cuopt("transpose.cu", "--no-compile")
    assert result.exit_code == 0, result.output
    assert result.stdout == expected
    result = cuopt("transpose.cu", "--no-compile", "--strict")
    assert result.exit_code == 1, result.output
    assert result.stdout == expected


COPY4 = "__global__ void copy4(const float4* x, float4* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
        "    if (i < n) y[i] = x[i];\n}\n"


def test_strict_passes_a_file_without_findings(tmp_path: Path) -> None:
    write(tmp_path / "copy4.cu", COPY4)
    result = cuopt(str(tmp_path / "copy4.cu"), "--no-compile", "--strict")
    assert result.exit_code == 0, result.output
    assert result.stdout == SUMMARY_OK


def test_files_without_a_spec_are_linted_with_the_inferred_launch(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "saxpy.cu").write_bytes((SAMPLES / "saxpy.cu").read_bytes())
    result = cuopt("saxpy.cu", "--no-compile")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == ("saxpy.cu:2:1: warning: vectorize: scalar loads and stores of "
                                             "contiguous elements; run cuopt optimize")


@pytest.mark.parametrize("comment", ["// cuopt: ignore[smem-tile]\n", "// cuopt: ignore[vectorize, smem-tile]\n",
                                     "// cuopt: ignore\n", "// see docs\n//cuopt:ignore[smem-tile]\n// more\n"])
def test_ignore_comment_above_a_kernel_silences_it(samples: Path, comment: str) -> None:
    path = samples / "transpose.cu"
    edit(path, "__global__", comment + "__global__")
    result = cuopt(str(path), "--no-compile", "--strict")
    assert result.exit_code == 0, result.output
    assert result.stdout == SUMMARY_OK


def test_ignore_comment_on_the_kernel_line(samples: Path) -> None:
    path = samples / "transpose.cu"
    edit(path, "__global__ void transpose(const float* in, float* out, int rows, int cols)",
         "__global__ void transpose(const float* in, float* out, int rows, int cols)  // cuopt: ignore[smem-tile]")
    result = cuopt(str(path), "--no-compile", "--strict")
    assert result.exit_code == 0, result.output


def test_ignore_comment_silences_only_its_rule(samples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(samples)
    edit(samples / "transpose.cu", "__global__", "// cuopt: ignore[vectorize]\n__global__")
    result = cuopt("transpose.cu", "--no-compile")
    assert "transpose.cu:8:9: warning: smem-tile: uncoalesced global store" in result.stdout, result.output
    edit(samples / "layernorm.cu", "__global__", "// cuopt: ignore[smem-tile]\n__global__")
    result = cuopt("layernorm.cu", "--no-compile")
    assert result.stdout.count("warning: vectorize:") == 3, result.output


def test_ignore_comment_applies_to_its_kernel_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    kernel = (SAMPLES / "saxpy.cu").read_text().split("\n", 1)[1]
    write(tmp_path / "two.cu", "// cuopt: ignore[vectorize]\n" + kernel + "\n// not an ignore comment\n\n"
          + kernel.replace("saxpy", "saxpy2"))
    result = cuopt("two.cu", "--no-compile")
    lines = result.stdout.splitlines()
    assert lines == ["two.cu:12:1: warning: vectorize: scalar loads and stores of contiguous elements; "
                     "run cuopt optimize", "1 file: 0 errors, 1 warning"], result.output


def test_a_blank_line_ends_the_comments_above_a_kernel(samples: Path) -> None:
    path = samples / "transpose.cu"
    edit(path, "__global__", "// cuopt: ignore[smem-tile]\n\n__global__")
    result = cuopt(str(path), "--no-compile", "--strict")
    assert result.exit_code == 1, result.output
    assert "warning: smem-tile:" in result.stdout


def test_ignore_comment_with_an_unknown_rule_warns(samples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(samples)
    edit(samples / "transpose.cu", "__global__", "// cuopt: ignore[smem-tile, smem-tiles]\n__global__")
    result = cuopt("transpose.cu", "--no-compile")
    assert result.exit_code == 0, result.output
    assert result.stdout == ("transpose.cu:2:1: warning: ignore: unknown rule 'smem-tiles' in ignore comment; "
                             "rules that report findings: parallelize-loop, privatize, reduce-tree, register-accumulate, row-parallel, "
                             "smem-tile, split-rows, vectorize\n1 file: 0 errors, 1 warning\n")


def test_json_format(samples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(samples)
    edit(samples / "saxpy.cuopt.toml", 'n = "n"\n', "")
    result = cuopt("saxpy.cu", "transpose.cu", "--no-compile", "--format", "json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout) == [
        {"path": "saxpy.cuopt.toml", "line": 10, "column": None, "severity": "error", "code": "spec",
         "message": "[saxpy] args: parameter 'n' of kernel saxpy (line 2) is missing; add n = ... to [saxpy.args]"},
        {"path": "transpose.cu", "line": 7, "column": 9, "severity": "warning", "code": "smem-tile",
         "message": "uncoalesced global store; run cuopt optimize"},
    ]


def test_sarif_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "transpose.cu").write_bytes((SAMPLES / "transpose.cu").read_bytes())
    write(tmp_path / "bad.cu", "__global__ void k(float* a)\n{\n  a[0] = (1;\n}\n")
    result = cuopt("transpose.cu", "bad.cu", "--no-compile", "--format", "sarif")
    assert result.exit_code == 1, result.output
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cuopt"
    rules = driver["rules"]
    assert {"parse", "smem-tile", "vectorize"} <= {r["id"] for r in rules}
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("smem-tile", "warning"), ("parse", "error")]
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["message"]["text"]
    smem, parse = (r["locations"][0]["physicalLocation"] for r in results)
    assert smem == {"artifactLocation": {"uri": "transpose.cu"}, "region": {"startLine": 7, "startColumn": 9}}
    assert parse == {"artifactLocation": {"uri": "bad.cu"}, "region": {"startLine": 3, "startColumn": 12}}
    assert results[0]["message"]["text"] == "uncoalesced global store; run cuopt optimize"


def test_unknown_format_is_a_usage_error() -> None:
    result = cuopt(str(SAMPLES / "saxpy.cu"), "--format", "xml")
    assert result.exit_code == 2, result.output
    assert "'xml' is not one of 'text', 'json', 'sarif'" in result.output


@pytest.mark.parametrize(("name", "message"), [
    ("missing.cu", "missing.cu: no such file or directory"),
    ("saxpy.cuopt.toml", "saxpy.cuopt.toml: not a CUDA source; expected a .cu or .cuh file"),
])
def test_bad_paths_are_one_line_errors(saxpy: Path, name: str, message: str) -> None:
    result = cuopt(name)
    assert result.exit_code == 1, result.output
    assert result.stderr == f"cuopt: error: {message}\n"


def test_bad_arch_is_a_one_line_error() -> None:
    result = cuopt(str(SAMPLES / "saxpy.cu"), "--arch", "hopper")
    assert result.exit_code == 1, result.output
    assert result.stderr == "cuopt: error: --arch hopper: expected a real architecture such as sm_90 or sm_90a\n"


def test_without_nvcc_compiling_is_skipped_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "copy4.cu", COPY4)
    monkeypatch.setattr("cuopt.lint.check.find_nvcc", lambda: None)
    result = cuopt("copy4.cu", "--strict")
    assert result.exit_code == 0, result.output
    assert result.stdout == ("copy4.cu: note: compile: nvcc not found (install the CUDA toolkit, put nvcc on "
                             "PATH or set CUDA_HOME); not compiled\n1 file: 0 errors, 0 warnings, 1 note\n")


@requires_nvcc
def test_nvcc_errors_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "undef.cu", "__global__ void k(float* a)\n{\n    a[0] = 1.0f;\n    undefined_fn(a);\n}\n")
    result = cuopt("undef.cu")
    assert result.exit_code == 1, result.output
    assert result.stdout == ('undef.cu:4: error: compile: identifier "undefined_fn" is undefined\n'
                             "1 file: 1 error, 0 warnings\n")


@requires_nvcc
def test_headers_are_linted_not_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "k.cuh", "template <typename T>\n__global__ void k(T* a) { undefined_fn(a); }\n")
    result = cuopt("k.cuh")
    assert result.exit_code == 0, result.output
    assert result.stdout == ("k.cuh:2: note: lint: kernel k is a template with no instantiation in the file or "
                             "the spec; not linted\n1 file: 0 errors, 0 warnings, 1 note\n")


def test_a_header_named_like_its_program_does_not_take_the_program_s_spec(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`conv2d.cuh` next to `conv2d.cu`: `conv2d.cuopt.toml` (which `cuopt init conv2d.cu` writes)
    describes the program's kernels, not the header's."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "conv.cuh", "#define N 4096\n")
    write(tmp_path / "conv.cu", '#include "conv.cuh"\n__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n')
    assert CliRunner().invoke(app, ["init", "conv.cu"]).exit_code == 0
    result = cuopt("--no-compile", ".")
    assert result.exit_code == 0 and "2 files: 0 errors" in result.stdout, result.output


@requires_nvcc
def test_an_error_in_an_included_header_is_reported_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "h.cuh", "__device__ float twice(float x) { return 2 * undefined_y; }\n")
    for name in ("a.cu", "b.cu"):
        write(tmp_path / name, '#include "h.cuh"\n__global__ void k(float* a) { a[0] = twice(a[0]); }\n')
    result = cuopt("a.cu", "b.cu")
    assert result.exit_code == 1, result.output
    assert result.stdout.count('h.cuh:1: error: compile: identifier "undefined_y" is undefined') == 1, result.output


def test_nvcc_log_lines_become_diagnostics() -> None:
    log = ("k.cu(4): error: expected a \";\"\n    a[0]=1;\n    ^\n\n"
           "k.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n"
           "inc/h.cuh(9): catastrophic error: cannot open source file \"x.h\"\n"
           "k.cu:2:10: fatal error: nope.h: No such file or directory\n"
           "ptxas error   : Entry function '_Z1kPf' uses too much shared data (0x61a80 bytes, 0xc000 max)\n"
           "2 errors detected in the compilation of \"k.cu\".\n")
    assert errors_in_log(log, Path("k.cu")) == [
        Diagnostic("k.cu", 4, None, "error", "compile", 'expected a ";"'),
        Diagnostic("inc/h.cuh", 9, None, "error", "compile", 'cannot open source file "x.h"'),
        Diagnostic("k.cu", 2, 10, "error", "compile", "nope.h: No such file or directory"),
        Diagnostic("k.cu", None, None, "error", "compile",
                   "ptxas: Entry function '_Z1kPf' uses too much shared data (0x61a80 bytes, 0xc000 max)"),
    ]


def test_check_imports_neither_torch_nor_pycuda_nor_numpy() -> None:
    code = ("import sys\nfrom cuopt.cli import main\n"
            f"sys.argv = ['cuopt', 'check', '--no-compile', {str(SAMPLES / 'saxpy.cu')!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
            "print(sorted(m for m in ('torch', 'pycuda', 'numpy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]"


def test_a_kernel_optimize_skips_gets_a_note_not_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "s.cu", "struct Affine { float a; float b; };\n"
                             "__global__ void affine(const float* x, float* y, Affine p, int n)\n{\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (i < n) y[i] = p.a * x[i] + p.b;\n}\n")
    result = cuopt("s.cu")
    assert result.exit_code == 0, result.output
    assert "s.cu:2: note: lint: kernel affine: parameter p has type 'Affine', which a spec cannot pass" in result.stdout
    assert "warning" not in result.stdout.split("\n1 file")[0], result.stdout


def test_a_spec_error_on_an_unnamed_parameter_points_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "k.cu", "__global__ void k(float* a, int /*unused*/) { a[threadIdx.x] = 1.0f; }\n")
    write(tmp_path / "k.cuopt.toml", '[k]\nblock = [32]\ngrid = ["1"]\nsizes = { n = 32 }\n\n[k.args]\n'
                                     'a = "out float32[n]"\nunnamed-2 = 1.5\n')
    result = cuopt("--no-compile", "k.cu")
    assert result.exit_code == 1
    assert "k.cuopt.toml:8: error: spec: [k] args.unnamed-2: 1.5 is not an integer but the parameter is int" \
        in result.stdout, result.output
