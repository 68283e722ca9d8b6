"""`cuopt rules` and `cuopt rewrites` through the CLI."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.source.kernels import load
from cuopt.spec.model import load as load_spec
from tests.conftest import requires_nvcc
from tests.helpers import one_error_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

runner = CliRunner()


def test_rules_lists_every_rule_folder() -> None:
    result = runner.invoke(app, ["rules"])
    assert result.exit_code == 0, result.output
    folders = [rule.parent.name for rule in Path(__file__).resolve().parents[2].joinpath("rules").glob("*/rule.toml")]
    assert len(folders) > 10
    for name in folders:
        assert name in result.output


def test_rules_show_prints_why_params_and_tests() -> None:
    result = runner.invoke(app, ["rules", "show", "unroll"])
    assert result.exit_code == 0, result.output
    assert "param factor: 2, 4, 8, full" in result.output
    assert "must rewrite" in result.output and "must leave alone" in result.output


def test_rules_show_unknown_rule() -> None:
    result = runner.invoke(app, ["rules", "show", "nope"])
    assert result.exit_code == 1
    assert "no rule 'nope'" in result.output


def test_rewrites_json_lists_ids_rules_params_lines(samples: Path) -> None:
    result = runner.invoke(app, ["rewrites", str(samples / "transpose.cu"), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    ids = {r["id"] for r in rows}
    assert "smem-tile@7:9/tile=32" in ids
    for r in rows:
        assert {"id", "rule", "params", "line"} <= set(r)
    again = json.loads(runner.invoke(app, ["rewrites", str(samples / "transpose.cu"), "--json"]).stdout)
    assert [r["id"] for r in again] == [r["id"] for r in rows], "ids are stable for the same source"


def test_rewrites_apply_writes_the_variant_and_its_spec(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "mm.cu"
    result = runner.invoke(app, ["rewrites", str(samples / "matmul.cu"), "-a", "smem-tile@8:9/tile=32",
                                 "-a", "coarsen@2:1/factor=2,axis=y", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "launch: block 32x16, grid (cdiv(N, 32), cdiv(M, 32))" in result.output
    kernel = load(out.read_bytes()).kernel("matmul")
    assert kernel is not None and not kernel.errors
    assert "constexpr int CUOPT_TM = 2;" in out.read_text()
    spec = load_spec(out.with_name("mm.cuopt.toml")).kernels["matmul"]
    assert spec.launch.block == (32, 16)
    assert [str(g) for g in spec.launch.grid] == ["cdiv(N, 32)", "cdiv(M, 32)"]
    original = tomllib.loads((samples / "matmul.cuopt.toml").read_text())["matmul"]
    written = tomllib.loads(out.with_name("mm.cuopt.toml").read_text())["matmul"]
    assert written["args"] == original["args"] and written["sizes"] == original["sizes"]


@pytest.mark.parametrize("command", [["rewrites", "-a", "restrict-const@2:1"], ["optimize", "--dry-run"]])
def test_an_out_file_in_a_missing_directory_is_refused_before_any_work(samples: Path, tmp_path: Path,
                                                                       command: list[str]) -> None:
    out = tmp_path / "missing" / "saxpy.cu"
    result = runner.invoke(app, [command[0], str(samples / "saxpy.cu"), *command[1:], "-o", str(out)])
    assert result.exit_code == 1
    assert one_error_line(result) == f"cuopt: error: --out {out}: no directory {out.parent} (create it first)"


def test_rewrites_apply_without_out_prints_the_source(samples: Path) -> None:
    result = runner.invoke(app, ["rewrites", str(samples / "saxpy.cu"), "-a", "vectorize@2:1/width=4"])
    assert result.exit_code == 0, result.output
    assert "float4" in result.stdout
    assert (samples / "saxpy.cu").read_text().count("float4") == 0


def test_rewrites_unknown_id_lists_what_applies(samples: Path) -> None:
    result = runner.invoke(app, ["rewrites", str(samples / "saxpy.cu"), "-a", "unroll@1:1/factor=4"])
    assert result.exit_code == 1
    assert "does not apply to kernel saxpy" in result.output and "vectorize@2:1/width=4" in result.output


def test_rewrites_without_a_spec_assumes_the_inferred_launch(tmp_path: Path) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text("__global__ void k(const float* x, float* y, int n)\n{\n"
                  "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * x[i];\n}\n")
    result = runner.invoke(app, ["rewrites", str(cu), "--json"])
    assert result.exit_code == 0, result.output
    assert "no spec for kernel k" in result.output
    assert any(r["rule"] == "vectorize" for r in json.loads(result.stdout))


def test_rewrites_why_explains_refusals(samples: Path) -> None:
    result = runner.invoke(app, ["rewrites", str(samples / "reduce_sum.cu"), "--why"])
    assert result.exit_code == 0, result.output
    assert "vectorize" in result.output and "smem-tile" in result.output


@requires_nvcc
def test_written_variant_benches_dry_run(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.cu"
    assert runner.invoke(app, ["rewrites", str(samples / "transpose.cu"), "-a", "smem-tile@7:9/tile=32",
                               "-o", str(out)]).exit_code == 0
    result = runner.invoke(app, ["bench", str(out), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)[0]
    assert row["block"] == [32, 8] and row["grid"] == [256, 256]


def _fast_math_rows(samples: Path, *flags: str) -> list[dict]:
    result = runner.invoke(app, ["rewrites", str(samples / "softmax.cu"), "--json", *flags])
    assert result.exit_code == 0, result.output
    return [r for r in json.loads(result.stdout) if r["rule"] == "fast-math"]


def test_fast_math_is_opt_in(samples: Path) -> None:
    assert _fast_math_rows(samples) == []
    result = runner.invoke(app, ["rewrites", str(samples / "softmax.cu"), "--why"])
    assert "fast-math: opt-in: needs --fast-math or fast_math = true in the spec" in result.output


def test_fast_math_from_the_command_line(samples: Path) -> None:
    rows = _fast_math_rows(samples, "--fast-math")
    assert [r["summary"] for r in rows] == ["fast-math intrinsics: 2 __expf, 1 __fdividef"]


def test_fast_math_from_the_spec(samples: Path) -> None:
    spec = samples / "softmax.cuopt.toml"
    spec.write_text(spec.read_text().replace("[softmax.args]", "fast_math = true\n\n[softmax.args]"))
    assert [r["id"] for r in _fast_math_rows(samples)] == ["fast-math@2:1"]


MACRO_SIZES = """#pragma once
#ifndef M_SIZE
# define M_SIZE 1024
#endif
#if !defined(N_SIZE)
#define N_SIZE 1024
#endif
#define K_SIZE 512
#define DATA_TYPE float
#define IDX(r, c, ld) ((r) * (ld) + (c))
"""
MACRO_MATMUL = """#include <cuda_runtime.h>
#include "sizes.h"
#define BOUND_M M_SIZE
#define BOUND_N N_SIZE

// the samples' matmul, spelled with macro types, sizes, bounds and index helpers
__global__ void matmul(const DATA_TYPE* A, const DATA_TYPE* B, DATA_TYPE* C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < BOUND_M && col < BOUND_N) {
        DATA_TYPE acc = 0.0f;
        for (int k = 0; k < K_SIZE; ++k) {
            acc += A[IDX(row, k, K_SIZE)] * B[IDX(k, col, N_SIZE)];
        }
        C[row * N_SIZE + col] = acc;
    }
}
"""


def _macro_matmul(tmp_path: Path) -> Path:
    (tmp_path / "macro").mkdir()
    (tmp_path / "macro" / "sizes.h").write_text(MACRO_SIZES)
    cu = tmp_path / "macro" / "matmul.cu"
    cu.write_text(MACRO_MATMUL)
    return cu


def _offered(path: Path) -> set[str]:
    """Rule and parameters of each offer (positions differ between spellings)."""
    result = runner.invoke(app, ["rewrites", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return {f"{r['rule']}/{r['id'].partition('/')[2]}" for r in json.loads(result.stdout)}


def test_rewrites_of_a_macro_spelled_kernel_match_the_plain_one(samples: Path, tmp_path: Path) -> None:
    (samples / "matmul.cuopt.toml").unlink()  # both launches inferred by `cuopt init`'s rules
    plain = _offered(samples / "matmul.cu")
    assert {"smem-tile/tile=32", "register-tile/tile=64,bk=8,tm=4,tn=4,stages=1", "unroll/factor=4"} <= plain
    assert _offered(_macro_matmul(tmp_path)) == plain


@requires_nvcc
def test_a_rewrite_of_a_macro_spelled_kernel_keeps_the_macros(tmp_path: Path) -> None:
    from cuopt.evaluate.compile import find_nvcc
    from cuopt.lint.nvcc import compile_file
    from cuopt.targets import read_source

    cu = _macro_matmul(tmp_path)
    out = cu.with_name("tiled.cu")
    result = runner.invoke(app, ["rewrites", str(cu), "-a", "smem-tile@13:9/tile=16", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith('#include <cuda_runtime.h>\n#include "sizes.h"\n#define BOUND_M M_SIZE\n')
    assert "cuopt_k0 < K_SIZE" in text and "A[IDX(" in text and "C[cuopt_row * N_SIZE + cuopt_col]" in text
    assert read_source(out).kernel("matmul").signature == read_source(cu).kernel("matmul").signature
    nvcc = find_nvcc()
    assert nvcc is not None
    assert compile_file(nvcc, out, "sm_90") == []


PROGRAM = """__global__ void scale(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

void run(const float* x, float* y, int n, int threads)
{
    scale<<<(n + 255) / 256, 256>>>(x, y, n);
    scale<<<(n + threads - 1) / threads, threads>>>(x, y, n);
}
"""
PROGRAM_SPEC = """[scale]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 4096 }

[scale.args]
x = "in float32[n]"
y = "out float32[n]"
n = "n"
"""


def test_a_written_variant_that_changes_the_launch_retargets_the_host_or_says_so(tmp_path: Path) -> None:
    path = tmp_path / "scale.cu"
    path.write_text(PROGRAM)
    path.with_name("scale.cuopt.toml").write_text(PROGRAM_SPEC)
    out = tmp_path / "out.cu"
    result = runner.invoke(app, ["rewrites", str(path), "-a", "block-size@1:1/block=128", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    # the site with a run-time block cannot be retargeted safely: a comment above the kernel gives the launch
    assert text.startswith("// cuopt: launch scale with block 128, grid (cdiv(n, block.x))")
    assert "LAUNCH CHANGED" in result.output and "is not the constant block 256" in result.output
    assert "scale<<<(n + threads - 1) / threads, threads>>>" in text
    path.write_text(PROGRAM.replace("    scale<<<(n + threads - 1) / threads, threads>>>(x, y, n);\n", ""))
    result = runner.invoke(app, ["rewrites", str(path), "-a", "block-size@1:1/block=128", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 launch site(s) in the file updated" in result.output
    assert "scale<<<(n + 127) / 128, 128>>>(x, y, n);" in out.read_text()


def test_rewrites_of_a_whole_file_skip_a_kernel_no_spec_can_describe(tmp_path: Path) -> None:
    from tests.commands.test_init import FUNCTORS, SKIPPED

    cu = tmp_path / "functors.cu"
    cu.write_text(FUNCTORS)
    assert runner.invoke(app, ["init", str(cu)]).exit_code == 0
    result = runner.invoke(app, ["rewrites", str(cu), "--json"])
    assert result.exit_code == 0, result.output
    assert {r["kernel"] for r in json.loads(result.stdout)} == {"axpby<float>", "scale"}
    assert result.stderr == f"warning: {cu}:4: {SKIPPED}\n"


def test_rewrites_of_a_kernel_the_spec_leaves_out_write_a_spec_that_checks(tmp_path: Path) -> None:
    from tests.commands.test_init import FUNCTORS

    cu = tmp_path / "functors.cu"
    cu.write_text(FUNCTORS)
    assert runner.invoke(app, ["init", str(cu), "-k", "scale"]).exit_code == 0
    for kernel, table in (("unary_map", None), ("axpby", "axpby_float")):
        listed = runner.invoke(app, ["rewrites", str(cu), "-k", kernel, "--json"])
        action = next(r["id"] for r in json.loads(listed.stdout) if r["rule"] == "block-size")
        out = tmp_path / f"{kernel}_variant.cu"
        result = runner.invoke(app, ["rewrites", str(cu), "-k", kernel, "-a", action, "-o", str(out)])
        assert result.exit_code == 0, result.output
        spec = load_spec(tmp_path / f"{kernel}_variant.cuopt.toml")
        assert list(spec.kernels) == ["scale"] + ([table] if table else [])
        assert runner.invoke(app, ["check", "--no-compile", str(out)]).exit_code == 0
