"""bf16 (and fp16) kernels on a real GPU: `cuopt init` writes their specs, the float64 twin is their
reference, and they and their vectorized variants (16-byte loads, fp32 accumulation) validate
against it and are timed; a wrong variant is caught at bf16 precision. Every single rewrite of the
real-world bf16 training kernels validates too."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant
from cuopt.evaluate.sweep import sweep
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.targets import Target, collect

pytestmark = pytest.mark.gpu

REALWORLD = Path(__file__).parent.parent / "realworld"
TIMING = TimingOptions(min_runs=10, min_ms=30.0, max_s=1.0)

# an elementwise residual + GELU and a row RMS with an fp32 accumulator, in a floatX picked by a switch
KERNELS = """#include <cuda_bf16.h>
#include <cuda_fp16.h>
{switch}
#if defined(ENABLE_FP16)
typedef half floatX;
#else
typedef __nv_bfloat16 floatX;
#endif

__global__ void residual_gelu(floatX* out, const floatX* x, const floatX* res, int N)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {{
        float v = (float)x[i] + (float)res[i];
        out[i] = (floatX)(0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))));
    }}
}}

__global__ void row_rms(const floatX* x, floatX* rms, int rows, int cols)
{{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {{
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c) {{
            float v = (float)x[r * cols + c];
            acc += v * v;
        }}
        rms[r] = (floatX)sqrtf(acc / cols);
    }}
}}

int main()
{{
    const int N = 1 << 22, rows = 4096, cols = 1024;
    floatX *x, *res, *out, *rms;
    cudaMalloc(&x, N * sizeof(floatX));
    cudaMalloc(&res, N * sizeof(floatX));
    cudaMalloc(&out, N * sizeof(floatX));
    cudaMalloc(&rms, rows * sizeof(floatX));
    residual_gelu<<<(N + 255) / 256, 256>>>(out, x, res, N);
    row_rms<<<(rows + 127) / 128, 128>>>(x, rms, rows, cols);
    return 0;
}}
"""
PRECISIONS = {"bf16": ("", "bfloat16", 2.0 ** -7), "fp16": ("#define ENABLE_FP16", "float16", 2.0 ** -10)}


def targets(tmp_path: Path, switch: str) -> dict[str, Target]:
    cu = tmp_path / "train_kernels.cu"
    cu.write_text(KERNELS.format(switch=switch))
    result = CliRunner().invoke(app, ["init", str(cu)])
    assert result.exit_code == 0, result.output
    return {t.kernel.name: t for t in collect([cu])}


def reference(target: Target, client) -> KernelEvaluator:
    """An evaluator of `target` whose reference is the float64 twin (asserted)."""
    ev = KernelEvaluator.for_target(target, client, arch=client.device["arch"], timing=TIMING)
    original = Variant(target.text, target.spec.launch)
    assert ev.set_reference(ev.compile(original), original.launch, target.text).ok
    assert ev.reference.kind == "float64", ev.reference.describe()
    return ev


@pytest.mark.parametrize("precision", PRECISIONS, ids=PRECISIONS.keys())
@pytest.mark.parametrize("kernel", ["residual_gelu", "row_rms"])
def test_a_16_bit_kernel_and_its_vectorized_variants_validate_against_float64_and_are_timed(
        gpu_client, tmp_path: Path, precision: str, kernel: str) -> None:
    switch, dtype, ulp = PRECISIONS[precision]
    target = targets(tmp_path, switch)[kernel]
    assert dtype in {a.dtype for a in target.spec.args if getattr(a, "role", "in") != "in"}
    ev = reference(target, gpu_client)
    try:
        worst = max(e.max_rel for errors in ev.reference.original.values() for e in errors.values())
        assert 0 < worst <= ulp, worst  # the original is its type's rounding away from float64
        same = ev.evaluate(Variant(target.text, target.spec.launch))
        assert same.ok and same.timing is not None and same.timing.median_ms > 0, same
        ctx = Context(target.source.source, target.spec.launch, target.kernel.entry, target.spec,
                      frozenset(), target.source.macros, target.settings)
        offers = Engine.default().offers(ctx, only={"vectorize"})
        widths = {o.action.param_dict["width"]: o for o in offers}
        assert 8 in widths and "uint4" in widths[8].result.source.decode()  # 8 elements in one 16-byte load
        for width, offer in sorted(widths.items()):
            out = ev.evaluate(Variant(offer.result.source.decode(), offer.result.launch))
            assert out.ok and out.timing is not None, (width, out.status, out.detail)
            assert all(c.accuracy is not None for c in out.comparisons)  # judged against float64
            print(f"{precision} {kernel} vectorize width {width}: {out.timing.median_ms:.4f} ms "
                  f"(original {same.timing.median_ms:.4f} ms)")
    finally:
        ev.close()


@pytest.mark.parametrize("precision", PRECISIONS, ids=PRECISIONS.keys())
def test_a_wrong_16_bit_variant_is_caught(gpu_client, tmp_path: Path, precision: str) -> None:
    found = targets(tmp_path, PRECISIONS[precision][0])
    for name, wrong in (("residual_gelu", ("if (i < N)", "if (i < N - 1)")),
                        ("row_rms", ("acc += v * v;", "acc += v;"))):
        ev = reference(found[name], gpu_client)
        try:
            out = ev.evaluate(Variant(found[name].text.replace(*wrong), found[name].spec.launch), timed=False)
            assert out.status == "wrong-answer", (name, out.status, out.detail)
        finally:
            ev.close()


def test_every_single_rewrite_of_the_bf16_training_kernels_validates(gpu_client, tmp_path: Path) -> None:
    cu = tmp_path / "bf16_train.cu"
    shutil.copy(REALWORLD / "bf16_train.cu", cu)
    assert CliRunner().invoke(app, ["init", str(cu)]).exit_code == 0
    for target in collect([cu]):
        result = sweep(target, gpu_client, Engine.default(), gpu_client.device["arch"], timed=False)
        assert "error" not in result, result
        bad = [f"{r['id']}: {r['status']}: {r['detail']}" for r in result["rewrites"] if r["status"] != "ok"]
        assert result["rewrites"] and not bad, f"{target.kernel.name}:\n" + "\n".join(bad)
