"""The float64 shadow: promoting kernels to double precision, and the reasons it falls back."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.evaluate.compile import compile_kernel
from cuopt.evaluate.shadow import Reference, compile_shadow, promote
from cuopt.source.kernels import load
from cuopt.spec.bind import Bound, bind
from cuopt.spec.model import parse
from cuopt.targets import collect

from tests.conftest import SAMPLES, requires_nvcc, sample_names


def bound(source: str, name: str = "k") -> Bound:
    """A spec for kernel `name`: pointers are inout buffers of n elements, scalars n or 0.5."""
    kernel = load(source).kernel(name)
    assert kernel is not None
    args = {}
    for p in kernel.params:
        assert p.ctype is not None, p
        if p.pointer:
            args[p.name] = f"{'in' if p.const else 'inout'} {p.ctype.dtype}[n]"
        else:
            args[p.name] = 0.5 if p.ctype.dtype.startswith("float") else "n"
    raw = {name: {"block": [32], "grid": ["cdiv(n, block.x)"], "sizes": {"n": 100}, "args": args}}
    return bind(parse(raw, Path("k.cuopt.toml")).kernels[name], kernel)


def promoted(source: str, name: str = "k") -> str:
    shadow = promote(source, bound(source, name))
    assert shadow.source is not None, shadow.reason
    return shadow.source


def reason(source: str, name: str = "k") -> str:
    shadow = promote(source, bound(source, name))
    assert shadow.source is None, shadow.source
    return shadow.reason


def test_types_literals_and_math_functions_are_promoted() -> None:
    out = promoted("""
__global__ void k(const float* __restrict__ x, float* y, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = (float)x[i] + static_cast<float>(1) + 1.f + 2.5e-3F + 0x1f + 3.0;
        y[i] = expf(v) + fmaxf(v, s) + sqrtf(fabsf(v)) + __expf(v) + powf(v, 2.0f) + sizeof(float);
    }
}""")
    assert "float" not in out
    assert "const double* __restrict__ x, double* y, double s, int n" in out
    assert "(double)x[i] + static_cast<double>(1) + 1. + 2.5e-3 + 0x1f + 3.0" in out
    assert "exp(v) + fmax(v, s) + sqrt(fabs(v)) + exp(v) + pow(v, 2.0) + sizeof(double)" in out


def test_calls_become_double_expressions_with_their_promoted_arguments() -> None:
    out = promoted("""
__global__ void k(float* y, int n)
{
    y[0] = __fdividef(rsqrtf(y[1] + 1.0f), __saturatef(expf(y[2])));
    y[1] = __frcp_rn(y[3]) + __fmul_rn(y[4], 2.0f);
}""")
    assert "y[0] = (((1.0 / sqrt(y[1] + 1.0))) / (fmin(fmax(exp(y[2]), 0.0), 1.0)));" in out
    assert "y[1] = (1.0 / (y[3])) + ((y[4]) * (2.0));" in out


def test_device_functions_the_kernel_calls_are_promoted_and_others_are_not() -> None:
    src = """
__device__ float square(float v) { return v * v; }
__device__ float twice(float v) { return 2.0f * square(v); }
__device__ float unused(float v) { return v; }
template <typename T> __device__ T warp_sum(T v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}
__global__ void k(float* y, int n) { y[threadIdx.x] = warp_sum(twice(y[threadIdx.x])); }
__global__ void other(float* y) { y[0] = 1.0f; }
"""
    out = promoted(src)
    assert "__device__ double square(double v)" in out and "__device__ double twice(double v)" in out
    assert "return 2.0 * square(v)" in out
    assert "__device__ float unused(float v)" in out and "void other(float* y) { y[0] = 1.0f; }" in out


def test_host_functions_that_launch_the_kernel_are_dropped() -> None:
    out = promoted("""
__global__ void k(float* y, int n) { y[threadIdx.x] *= 2.0f; }
void run(float* y, int n) { k<<<(n + 255) / 256, 256>>>(y, n); }
int helper(int n) { return n; }
""")
    assert "run(" not in out and "int helper(int n)" in out


@pytest.mark.parametrize("source, expected", [
    ("__global__ void k(float* y, int n) { half h = y[0]; y[1] = h; }", "half-precision type half (line 1)"),
    ("__global__ void k(float* y, int n)\n{\n    float4 v = reinterpret_cast<float4*>(y)[0];\n    y[0] = v.x;\n}",
     "vector type float4 (line 3)"),
    ("__global__ void k(float* y, int n) { y[0] = __int_as_float(__float_as_int(y[1]) & 0x7fffffff); }",
     "calls __int_as_float"),
    ("__global__ void k(float* y, int n) { y[0] = make_float2(1.0f, 2.0f).x; }", "calls make_float2"),
    ("#define REAL float\n__global__ void k(float* y, int n) { REAL v = y[0]; y[1] = v; }",
     "macro REAL spells a float type"),
    ("__global__ void k(int* y, int n) { y[0] = n; }", "no float32 output (int32)"),
    ("__global__ void k(double* y, int n) { y[0] = 1.0; }", "no float32 output (float64)"),
], ids=["half", "float4", "bits", "make_float2", "macro", "integer", "double"])
def test_kernels_that_cannot_be_promoted_say_why(source: str, expected: str) -> None:
    assert expected in reason(source)


def test_half_arguments_fall_back() -> None:
    src = "#include <cuda_fp16.h>\n__global__ void k(__half* y, float* z, int n) { z[0] = __half2float(y[0]); }"
    assert "float16" in reason(src)


def test_reference_json_says_which_and_why() -> None:
    assert Reference("original", "no float32 output").json() == {"reference": "original",
                                                                  "reference_reason": "no float32 output"}
    assert Reference("float64", shadow_ms=1.5).json()["reference"] == "float64"


@requires_nvcc
@pytest.mark.parametrize("name", sample_names())
def test_every_sample_promotes_and_compiles_or_says_why(name: str) -> None:
    for target in collect([SAMPLES / f"{name}.cu"], None, []):
        twin, why = compile_shadow(target.text, target.bound, lambda s: compile_kernel(
            s, target.kernel.name, include_dirs=[target.path.parent]))
        if target.kernel.name == "histogram":  # integer outputs: compared exactly with the original's
            assert twin is None and "no float32 output (uint32)" in why
        else:
            assert twin is not None, why
            assert twin.symbol != compile_kernel(target.text, target.kernel.name,
                                                 include_dirs=[target.path.parent]).symbol  # double parameters


@requires_nvcc
def test_a_twin_that_does_not_compile_falls_back_with_nvcc_s_reason() -> None:
    src = ("__global__ void k(float* y, int n) { __shared__ float tile[8192]; tile[threadIdx.x] = y[0];"
           " __syncthreads(); y[threadIdx.x] = tile[n % 8192]; }")
    twin, why = compile_shadow(src, bound(src), lambda s: compile_kernel(s, "k"))
    assert twin is None and why.startswith("the float64 twin does not compile: ")
