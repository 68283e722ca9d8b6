"""Template kernels in `cuopt optimize`: the CPU dry run lists the compiled first rewrites of the
spec's instantiation, launch changes are refused while other instantiations share the body, and
the write-back rejects a variant that breaks another instantiation."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.evaluate.compile import CompileError, compile_kernel
from cuopt.evaluate.evaluator import KernelEvaluator, Variant
from cuopt.optimization.session import Result, _accept
from cuopt.targets import collect

from tests.conftest import requires_nvcc

SOURCE = """\
template <typename T, int ITEMS>
__global__ void scale(T* out, const T* in, T a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T acc = in[i];
        for (int k = 0; k < ITEMS; ++k) acc = acc * a;
        out[i] = acc;
    }
}

template __global__ void scale<float, 4>(float*, const float*, float, int);

void run(double* o, const double* x, int n)
{
    scale<double, 2><<<(n + 127) / 128, 128>>>(o, x, 2.0, n);
}
"""
SPEC = """\
[scale_f32]
kernel = "scale<float, 4>"
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 100000 }

[scale_f32.args]
out = "out float32[n]"
in = "in float32[n]"
a = 1.5
n = "n"
"""
FLOAT_ONLY = "        T acc = in[i];\n        static_assert(sizeof(T) == 4, \"float only\");\n"


@pytest.fixture
def template_file(tmp_path: Path) -> Path:
    cu = tmp_path / "scale.cu"
    cu.write_text(SOURCE)
    (tmp_path / "scale.cuopt.toml").write_text(SPEC)
    return cu


@requires_nvcc
def test_dry_run_without_a_gpu_lists_the_instantiations_rewrites(monkeypatch: pytest.MonkeyPatch,
                                                                  template_file: Path) -> None:
    monkeypatch.delenv("CUOPT_GPU_BACKEND", raising=False)
    result = CliRunner().invoke(app, ["optimize", str(template_file), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["id"] for r in rows} == {"restrict-const@2:1", "unroll@7:9/factor=2", "unroll@7:9/factor=full"}
    for r in rows:
        assert r["kernel"] == "scale<float, 4>" and r["compiled"] is True and r["registers"] > 0, r
    assert template_file.read_text() == SOURCE


def test_rewrites_say_why_the_launch_stays(template_file: Path) -> None:
    result = CliRunner().invoke(app, ["rewrites", str(template_file), "--why", "--json"])
    assert result.exit_code == 0, result.output
    refused = json.loads(result.stdout)["refused"]
    reasons = [r["reason"] for r in refused if r["rule"] == "block-size"]
    assert ("block-size@2:1/block=128: changes the launch, but the file also instantiates scale<double, 2>, "
            "which shares the template's body and keeps its own launch") in reasons


def test_a_block_given_by_a_template_argument_is_kept(tmp_path: Path) -> None:
    cu = tmp_path / "tied.cu"
    cu.write_text(SOURCE.replace("blockIdx.x * blockDim.x", "blockIdx.x * ITEMS")
                  .replace("scale<double, 2><<<(n + 127) / 128, 128>>>(o, x, 2.0, n);", ""))
    (tmp_path / "tied.cuopt.toml").write_text(SPEC.replace("block = [256]", "block = [4]"))
    result = CliRunner().invoke(app, ["rewrites", str(cu), "--why", "--json"])
    assert result.exit_code == 0, result.output
    reasons = [r["reason"] for r in json.loads(result.stdout)["refused"] if r["rule"] == "block-size"]
    assert ("block-size@2:1/block=128: changes the block, but scale<float, 4> takes template argument ITEMS "
            "for blockDim.x") in reasons


@requires_nvcc
def test_a_variant_that_breaks_another_instantiation_is_rejected(template_file: Path) -> None:
    target = collect([template_file])[0]
    ev = KernelEvaluator.for_target(target, None, arch="sm_90")  # type: ignore[arg-type]
    broken = Variant(SOURCE.replace("        T acc = in[i];\n", FLOAT_ONLY), target.spec.launch)
    with pytest.raises(CompileError) as exc:  # the search's compile already fails on it
        ev.compile(broken)
    assert str(exc.value).startswith("nvcc failed in another instantiation of the template (T=double, ITEMS=2): "
                                     "line 7: error: static assertion failed")
    result = Result(target, "error", "", best=SimpleNamespace(state=broken))  # type: ignore[arg-type]
    _accept(result, ev)
    assert result.status == "rejected" and result.written == []
    assert result.message.startswith("the confirmed variant breaks the file's template instantiations: nvcc "
                                     "failed in another instantiation")
    assert template_file.read_text() == SOURCE

    kept = Variant(SOURCE.replace("T* out", "T* __restrict__ out"), target.spec.launch)
    result = Result(target, "error", "", best=SimpleNamespace(state=kept))  # type: ignore[arg-type]
    _accept(result, ev)
    assert result.status == "confirmed" and result.final_source == kept.source
    assert template_file.read_text() == SOURCE  # the driver writes, not the search
    assert compile_kernel(template_file.read_text(), "scale<double, 2>").symbol == "_Z5scaleIdLi2EEvPT_PKS0_S0_i"
