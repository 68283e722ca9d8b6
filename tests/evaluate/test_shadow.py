"""The float64 shadow: promoting kernels to double precision, and the reasons it falls back."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.evaluate.build import plan_for
from cuopt.evaluate.compile import compile_kernel
from cuopt.evaluate.shadow import Reference, Shadow, compile_shadow, promote, shared_growth
from cuopt.source.kernels import load
from cuopt.source.preprocess import Macros, macros_of
from cuopt.spec.bind import Bound, bind
from cuopt.spec.dtypes import is_float
from cuopt.spec.model import parse
from cuopt.targets import collect

from tests.conftest import SAMPLES, requires_nvcc, sample_names


def macros(source: str) -> Macros:
    return macros_of(source.encode(), Path("k.cu"))


def bound(source: str, name: str = "k") -> Bound:
    """A spec for kernel `name`: pointers are inout buffers of n elements, scalars n or 0.5."""
    kernel = load(source, macros(source)).kernel(name)
    assert kernel is not None
    args = {}
    for p in kernel.params:
        assert p.ctype is not None, p
        if p.pointer:
            args[p.name] = f"{'in' if p.const else 'inout'} {p.ctype.dtype}[n]"
        else:
            args[p.name] = 0.5 if is_float(p.ctype.dtype) else "n"
    raw = {name: {"block": [32], "grid": ["cdiv(n, block.x)"], "sizes": {"n": 100}, "args": args}}
    return bind(parse(raw, Path("k.cuopt.toml")).kernels[name], kernel)


def shadow_of(source: str, name: str = "k") -> Shadow:
    shadow = promote(source, bound(source, name), macros(source))
    assert shadow.source is not None, shadow.reason
    return shadow


def promoted(source: str, name: str = "k") -> str:
    return shadow_of(source, name).source or ""


def reason(source: str, name: str = "k") -> str:
    shadow = promote(source, bound(source, name), macros(source))
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
    ("#define LOAD(p) ((float)(p)[0])\n__global__ void k(float* y, int n) { y[1] = LOAD(y); }",
     "macro LOAD spells float (((float)(p)[0])), which the promotion cannot rewrite inside the kernel alone"),
    ("#define HALF_T __half\n__global__ void k(float* y, int n) { HALF_T h = y[0]; y[1] = h; }",
     "macro HALF_T spells __half (__half)"),
    ("__global__ void k(int* y, int n) { y[0] = n; }", "no float32, float16 or bfloat16 output (int32)"),
    ("__global__ void k(double* y, int n) { y[0] = 1.0; }", "no float32, float16 or bfloat16 output (float64)"),
], ids=["half", "float4", "bits", "make_float2", "macro", "half macro", "integer", "double"])
def test_kernels_that_cannot_be_promoted_say_why(source: str, expected: str) -> None:
    assert expected in reason(source)


def test_macros_and_typedefs_that_stand_for_float_are_spelled_double_in_the_kernel_only() -> None:
    out = promoted("""#define DATA_TYPE float
#define REAL DATA_TYPE
typedef float real_t;
__global__ void k(DATA_TYPE* y, const real_t* x, REAL s, int n)
{
    REAL v = (DATA_TYPE)x[0] + sizeof(real_t);
    y[0] = v * s;
}
__global__ void other(DATA_TYPE* y) { y[0] = 1; }
void host(DATA_TYPE* y) { real_t t = 0; y[0] = t; }
""")
    assert "__global__ void k(double* y, const double* x, double s, int n)" in out
    assert "double v = (double)x[0] + sizeof(double);" in out
    assert out.startswith("#define DATA_TYPE float\n#define REAL DATA_TYPE\ntypedef float real_t;\n")
    assert "void other(DATA_TYPE* y)" in out and "void host(DATA_TYPE* y) { real_t t = 0;" in out


def test_an_object_like_macro_that_spells_float_is_written_as_its_promoted_body() -> None:
    out = promoted("""#define DATA_TYPE float
#define M 8192
#define FLOAT_N ((DATA_TYPE)M)
#define SCALED (FLOAT_N * sqrtf(2.0f))
__global__ void k(DATA_TYPE* y, int n) { y[0] /= FLOAT_N; y[1] = SCALED; }
""")
    assert "__global__ void k(double* y, int n) { y[0] /= ((double)M); y[1] = (((double)M) * sqrt(2.0f)); }" in out


def test_a_typedef_in_a_header_is_seen_through_the_file_s_macros(tmp_path: Path) -> None:
    (tmp_path / "types.h").write_text("#pragma once\ntypedef float DATA_TYPE;\n")
    src = '#include "types.h"\n__global__ void k(DATA_TYPE* y, int n) { DATA_TYPE v = y[0]; y[1] = v; }\n'
    table = macros_of(src.encode(), tmp_path / "k.cu")
    kernel = load(src, table).kernel("k")
    assert kernel is not None
    raw = {"k": {"block": [32], "grid": ["1"], "sizes": {"n": 100}, "args": {"y": "inout float32[n]", "n": "n"}}}
    shadow = promote(src, bind(parse(raw, Path("k.cuopt.toml")).kernels["k"], kernel), table)
    assert shadow.source is not None, shadow.reason
    assert "__global__ void k(double* y, int n) { double v = y[0];" in shadow.source


TEMPLATE = """
template <typename T, int BLOCK>
__global__ void k(T* y, const T* x, float s, int n)
{
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = x[i] * s + (T)1.5f;
}
template __global__ void k<float, 256>(float* y, const float* x, float s, int n);
template <typename T> void run(T* y, const T* x, int n) { k<T, 256><<<(n + 255) / 256, 256>>>(y, x, 2.0f, n); }
template void run<float>(float* y, const float* x, int n);
void go(float* y, const float* x, int n) { run<float>(y, x, n); }
int main() { go(nullptr, nullptr, 0); return 0; }
int helper(int n) { return n; }
"""


def test_the_twin_of_a_template_instantiation_is_its_double_instantiation() -> None:
    shadow = shadow_of(TEMPLATE, "k<float, 256>")
    out = shadow.source or ""
    assert shadow.kernel == "k<double, 256>"
    assert "__global__ void k(T* y, const T* x, double s, int n)" in out and "(T)1.5;" in out
    # host code that launches it, calls what does, or instantiates either is dropped; the rest stays
    for gone in ("template __global__", "void run(", "run<float>", "void go(", "int main("):
        assert gone not in out
    assert "int helper(int n)" in out


def test_a_template_kernel_with_explicit_specializations_falls_back() -> None:
    src = TEMPLATE + "template <> __global__ void k<double, 256>(double* y, const double* x, float s, int n) {}\n"
    assert reason(src, "k<float, 256>") == ("template kernel k has explicit specializations, which its double "
                                            "instantiation may pick")


BF16 = """#include <cuda_bf16.h>
{define}
__global__ void k(floatX* out, const floatX* inp, const __nv_bfloat16* w, float* sums, nv_bfloat16 s, int n)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        float half = __bfloat162float(inp[i]) * (float)w[i];
        __nv_bfloat16 t = __float2bfloat16(half + 0.5f);
        out[i] = (floatX)(__hmul(t, s)) + __nv_bfloat16(1.0f);
        sums[i] = __hfma(inp[i], w[i], s) > __hmax(t, s) ? half : 0.0f;
    }}
}}
"""
BF16_SPELLINGS = {"typedef": "typedef __nv_bfloat16 floatX;", "macro": "#define floatX __nv_bfloat16",
                  "chain": "typedef __nv_bfloat16 bf16;\n#define floatX bf16"}


@pytest.mark.parametrize("define", BF16_SPELLINGS.values(), ids=BF16_SPELLINGS.keys())
def test_a_bf16_kernel_computes_in_double_on_the_values_it_reads(define: str) -> None:
    out = promoted(BF16.format(define=define))
    body = out[out.index("__global__"):]
    assert "(double* out, const double* inp, const double* w, double* sums, double s, int n)" in body
    assert "double half = ((double)(inp[i])) * (double)w[i];" in body  # a local named half stays a name
    assert "double t = ((double)(half + 0.5));" in body
    assert "out[i] = (double)(((t) * (s))) + double(1.0);" in body
    assert "sums[i] = fma(inp[i], w[i], s) > fmax(t, s) ? half : 0.0;" in body
    assert "bfloat16" not in body


def test_an_fp16_kernel_of_half_arithmetic_is_promoted() -> None:
    out = promoted("""#include <cuda_fp16.h>
__global__ void k(const __half* x, const half* b, __half* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd(__hmul(x[i], __float2half(2.0f)), hsqrt(__habs(b[i])));
}""")
    assert "k(const double* x, const double* b, double* y, int n)" in out
    assert "y[i] = ((((x[i]) * (((double)(2.0))))) + (sqrt(fabs(b[i]))));" in out


@pytest.mark.parametrize("source, expected", [
    ("#include <cuda_fp16.h>\n__global__ void k(float* y, int n) { y[0] = __half2float(__float2half(y[0])); }",
     "calls __half2float, which rounds to 16 bits a kernel of wider data computes with (line 2)"),
    ("#include <cuda_bf16.h>\n__global__ void k(__nv_bfloat16* y, int n)\n{\n    __nv_bfloat162 p = "
     "*reinterpret_cast<__nv_bfloat162*>(y);\n    y[0] = p.x;\n}", "half-precision type __nv_bfloat162 (line 4)"),
    ("#include <cuda_bf16.h>\n__global__ void k(__nv_bfloat16* y, int n) { y[0] = __ushort_as_bfloat16(1); }",
     "calls __ushort_as_bfloat16"),
], ids=["float data rounded through half", "bf16 pairs", "bf16 bits"])
def test_half_precision_that_has_no_double_twin_says_why(source: str, expected: str) -> None:
    assert expected in reason(source)


def test_the_twin_of_16_bit_data_asks_for_four_times_the_dynamic_shared_memory() -> None:
    src = "#include <cuda_bf16.h>\n__global__ void k(__nv_bfloat16* y, float s, int n) { y[0] = s; }"
    assert shared_growth(bound(src)) == 4
    assert shared_growth(bound("__global__ void k(float* y, int n) { y[0] = 1.0f; }")) == 2


@requires_nvcc
@pytest.mark.parametrize("define", BF16_SPELLINGS.values(), ids=BF16_SPELLINGS.keys())
def test_a_bf16_twin_compiles_with_double_parameters(define: str) -> None:
    src = BF16.format(define=define)
    twin, why = compile_shadow(src, bound(src), compile_kernel, macros=macros(src))
    assert twin is not None, why
    assert twin.symbol == "_Z1kPdPKdS1_S_di"  # sums (float*) is double* too


def test_reference_json_says_which_and_why() -> None:
    assert Reference("original", "no float32 output").json() == {"reference": "original",
                                                                  "reference_reason": "no float32 output"}
    assert Reference("float64", shadow_ms=1.5).json()["reference"] == "float64"


@requires_nvcc
@pytest.mark.parametrize("name", sample_names())
def test_every_sample_promotes_and_compiles_or_says_why(name: str) -> None:
    for target in collect([SAMPLES / f"{name}.cu"], None, []):
        plan = plan_for(target)
        twin, why = compile_shadow(target.text, target.bound, lambda s, k: compile_kernel(
            s, k, settings=plan.builds[0].settings), macros=target.source.macros)
        if target.kernel.name == "histogram":  # integer outputs: compared exactly with the original's
            assert twin is None and "no float32, float16 or bfloat16 output (uint32)" in why
        else:
            assert twin is not None, why
            assert twin.symbol != plan.compile(target.text, "sm_90").symbol  # double parameters


@requires_nvcc
def test_a_template_twin_compiles_as_the_double_instantiation() -> None:
    twin, why = compile_shadow(TEMPLATE, bound(TEMPLATE, "k<float, 256>"), compile_kernel, macros=macros(TEMPLATE))
    assert twin is not None, why
    assert twin.symbol == "_Z1kIdLi256EEvPT_PKS0_di"


@requires_nvcc
def test_a_twin_that_does_not_compile_falls_back_with_nvcc_s_reason() -> None:
    src = ("__global__ void k(float* y, int n) { __shared__ float tile[8192]; tile[threadIdx.x] = y[0];"
           " __syncthreads(); y[threadIdx.x] = tile[n % 8192]; }")
    twin, why = compile_shadow(src, bound(src), compile_kernel, macros=macros(src))
    assert twin is None and why.startswith("the float64 twin does not compile: ")


INT_MATH = """
__global__ void k(float* att, const float* preatt, int n, int hs)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) att[i] = preatt[i] / sqrtf(hs) + powf(preatt[i], 2) + expf(i % 4) + ldexpf(preatt[i], hs % 3);
}
"""


def test_integer_arguments_of_math_calls_are_cast_to_double() -> None:
    out = promoted(INT_MATH)
    assert "preatt[i] / sqrt((double)(hs)) + pow(preatt[i], (double)(2)) + exp((double)(i % 4))" in out
    assert "ldexp(preatt[i], hs % 3)" in out  # the exponent stays an int


@requires_nvcc
def test_a_twin_of_math_calls_on_integers_compiles() -> None:
    """`sqrt(int)` is ambiguous in device code (float and double overloads): the twin casts."""
    twin, why = compile_shadow(INT_MATH, bound(INT_MATH), compile_kernel, macros=macros(INT_MATH))
    assert twin is not None, why
