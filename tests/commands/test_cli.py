"""The `cuopt` command line: version, help, `bench` dry runs and one-line errors."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cuopt import __version__

from tests.conftest import ROOT, SAMPLES, gpu_available, requires_nvcc, sample_names
from tests.helpers import cuopt, one_error_line


def test_version() -> None:
    result = cuopt("--version")
    assert result.exit_code == 0
    assert result.stdout == f"cuopt {__version__}\n"


def test_help_lists_the_commands() -> None:
    result = cuopt("--help")
    assert result.exit_code == 0
    commands = result.stdout.split("Commands:", 1)[1]
    listed = [line.split()[0] for line in commands.splitlines() if line.strip()]
    assert {"init", "bench"} <= set(listed)


@pytest.mark.parametrize("command", ["init", "bench"])
def test_command_help(command: str) -> None:
    result = cuopt(command, "--help")
    assert result.exit_code == 0
    assert "--kernel" in result.stdout


@requires_nvcc
def test_bench_dry_run_lists_every_sample(samples: Path) -> None:
    result = cuopt("bench", str(samples), "--dry-run")
    assert result.exit_code == 0, result.output
    for name in sample_names():
        assert f"{name}.cu:{name}" in result.stdout
    assert result.stdout.count("compiled") == len(sample_names())


@requires_nvcc
def test_bench_dry_run_json(samples: Path) -> None:
    result = cuopt("bench", str(samples), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert isinstance(rows, list)
    assert sorted(r["kernel"] for r in rows) == sample_names()
    by_name = {r["kernel"]: r for r in rows}
    for r in rows:
        assert r["status"] == "compiled"
        assert isinstance(r["registers"], int) and r["registers"] > 0
        assert r["arch"] == "sm_90"
        assert Path(r["file"]).name == f"{r['kernel']}.cu"
    assert by_name["saxpy"]["block"] == [256]
    assert by_name["saxpy"]["grid"] == [67108864 // 256]
    assert by_name["saxpy"]["sizes"] == {"n": 67108864}
    assert by_name["saxpy"]["bytes"] == 67108864 * 4 * 3  # x in, y inout
    assert by_name["matmul"]["block"] == [16, 16] and by_name["matmul"]["grid"] == [128, 128]
    assert by_name["reduce_sum"]["shared_static"] == 1024


@requires_nvcc
def test_bench_dry_run_says_which_reference_each_kernel_gets(samples: Path) -> None:
    half = samples / "half.cu"
    half.write_text("#include <cuda_fp16.h>\n__global__ void half_scale(float* y, int n)\n{\n"
                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "    if (i < n) { __half h = __float2half(y[i]); y[i] = __half2float(h) * 2.0f; }\n}\n")
    (samples / "half.cuopt.toml").write_text('[half_scale]\nblock = [256]\ngrid = ["cdiv(n, block.x)"]\n'
                                             'sizes = { n = 1024 }\n[half_scale.args]\ny = "inout float32[n]"\n'
                                             'n = "n"\n')
    result = cuopt("bench", str(samples), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    by_name = {r["kernel"]: r for r in json.loads(result.stdout)}
    assert {k for k, r in by_name.items() if r["reference"] == "float64"} == set(sample_names()) - {"histogram"}
    assert by_name["histogram"]["reference"] == "original"
    assert by_name["histogram"]["reference_reason"] == ("no float32, float16 or bfloat16 output (uint32): "
                                                        "outputs are compared with the original's")
    assert by_name["half_scale"]["reference"] == "original"
    assert by_name["half_scale"]["reference_reason"] == "uses the half-precision type __half (line 5)"
    table = cuopt("bench", str(samples / "half.cu"), "--dry-run")
    assert "half.cu:half_scale: reference: the original kernel (uses the half-precision type __half (line 5))" \
        in table.stdout.replace("\n", "")


@requires_nvcc
def test_bench_dry_run_one_kernel(samples: Path) -> None:
    result = cuopt("bench", str(samples), "--dry-run", "--json", "--kernel", "saxpy")
    assert result.exit_code == 0, result.output
    assert [r["kernel"] for r in json.loads(result.stdout)] == ["saxpy"]


@pytest.mark.skipif(gpu_available(), reason="this machine has a GPU")
def test_bench_without_gpu_is_one_line_and_exit_2() -> None:
    result = cuopt("bench", str(SAMPLES / "saxpy.cu"))
    assert result.exit_code == 2
    line = one_error_line(result)
    assert line.startswith("cuopt: error: no CUDA GPU found")
    assert "--dry-run" in line
    assert result.stdout == ""


def test_bench_file_without_spec_suggests_init(samples: Path) -> None:
    cu = samples / "saxpy.cu"
    (samples / "saxpy.cuopt.toml").unlink()
    result = cuopt("bench", str(cu), "--dry-run")
    assert result.exit_code == 1
    assert one_error_line(result) == (f"cuopt: error: {cu}: no spec file saxpy.cuopt.toml; "
                                      f"run `cuopt init {cu}` to write one")


def test_bench_spec_naming_a_missing_kernel(samples: Path) -> None:
    spec = samples / "saxpy.cuopt.toml"
    spec.write_text(spec.read_text().replace("[saxpy]", "[saxpy2]").replace("[saxpy.args]", "[saxpy2.args]"))
    result = cuopt("bench", str(samples / "saxpy.cu"), "--dry-run")
    assert result.exit_code == 1
    assert one_error_line(result) == ("cuopt: error: saxpy.cuopt.toml: [saxpy2] names a kernel that saxpy.cu "
                                      "does not define (__global__ kernels found: saxpy)")


@pytest.mark.parametrize("old, new, expected", [
    ("block = [256]", "block = [0]",
     "cuopt: error: saxpy.cuopt.toml: [saxpy] block: expected 1 to 3 positive integers, e.g. [256] or [16, 16]"),
    ('flops = "2*n"', 'flops = "2*m"',
     "cuopt: error: saxpy.cuopt.toml: [saxpy] flops: unknown size name 'm' (sizes defines: n)"),
    ('x = "in float32[n]"', 'x = "in float64[n]"',
     "cuopt: error: saxpy.cuopt.toml: [saxpy] args.x: dtype float64 does not match the C type float; "
     "expected float32"),
    ('y = "inout float32[n]"', 'y = "inout float32[n]"\nz = "in float32[n]"',
     "cuopt: error: saxpy.cuopt.toml: [saxpy] args.z: kernel saxpy has no parameter 'z' (parameters: n, a, x, y)"),
])
def test_bench_spec_error_is_one_line(samples: Path, old: str, new: str, expected: str) -> None:
    spec = samples / "saxpy.cuopt.toml"
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new))
    result = cuopt("bench", str(samples / "saxpy.cu"))  # spec errors come before looking for a GPU
    assert result.exit_code == 1
    assert one_error_line(result) == expected


def test_bench_invalid_toml(samples: Path) -> None:
    (samples / "saxpy.cuopt.toml").write_text("[saxpy\n")
    result = cuopt("bench", str(samples / "saxpy.cu"), "--dry-run")
    assert result.exit_code == 1
    assert one_error_line(result).startswith("cuopt: error: saxpy.cuopt.toml: not valid TOML: ")


def test_bench_missing_path(tmp_path: Path) -> None:
    result = cuopt("bench", str(tmp_path / "nope.cu"), "--dry-run")
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: {tmp_path / 'nope.cu'}: no such file or directory"


def test_bench_unknown_kernel_option(samples: Path) -> None:
    result = cuopt("bench", str(samples), "--dry-run", "--kernel", "nope")
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: no kernel named 'nope' with a spec in {samples}"


def test_bench_directory_without_specs(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("__global__ void k(float* p) { p[0] = 1; }\n")
    result = cuopt("bench", str(tmp_path), "--dry-run")
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: no kernels with a spec found in {tmp_path}"


@requires_nvcc
def test_bench_skips_a_kernel_with_a_syntax_error(tmp_path: Path) -> None:
    for name in ("saxpy", "vector_add"):
        for suffix in (".cu", ".cuopt.toml"):
            shutil.copy(SAMPLES / f"{name}{suffix}", tmp_path)
    cu = tmp_path / "vector_add.cu"
    cu.write_text(cu.read_text().replace("c[i] = a[i] + b[i];", "c[i] = a[i] + ;"))
    result = cuopt("bench", str(tmp_path), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert [r["kernel"] for r in json.loads(result.stdout)] == ["saxpy"]
    # one warning line, with the location in one piece (editors and CI parse `file:line:col`)
    assert result.stderr.splitlines() == [f"warning: {cu}:6:21: syntax error near '+'; kernel vector_add skipped"]


@requires_nvcc
def test_bench_compile_error_is_a_row_and_exit_1(samples: Path) -> None:
    cu = samples / "saxpy.cu"
    cu.write_text(cu.read_text().replace("a * x[i]", "a * undefined_name * x[i]"))
    result = cuopt("bench", str(cu), "--dry-run", "--json")
    assert result.exit_code == 1
    [row] = json.loads(result.stdout)
    assert row["status"] == "compile-error"
    assert row["error"].startswith("nvcc failed: line ")
    assert "undefined_name" in row["error"]
    table = cuopt("bench", str(cu), "--dry-run")
    assert table.exit_code == 1
    [line] = [ln for ln in table.stdout.splitlines() if "compile-error:" in ln]
    assert line == f"saxpy.cu:saxpy: compile-error: {row['error']}"  # the file and nvcc's first error


# -- as a program -------------------------------------------------------------------------------------------
def test_python_m_cuopt_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "cuopt", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"cuopt {__version__}\n"


def test_help_imports_no_heavy_modules() -> None:
    code = ("import sys\n"
            "sys.argv = ['cuopt', '--help']\n"
            "import cuopt.cli\n"
            "try:\n"
            "    cuopt.cli.main()\n"
            "except SystemExit as exc:\n"
            "    assert exc.code in (0, None), exc.code\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pycuda', 'numpy'))\n"
            "print('HEAVY', heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Commands:" in proc.stdout
    assert "HEAVY []" in proc.stdout, proc.stdout
