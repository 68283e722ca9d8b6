"""The normal form's newer steps: pointers into a parameter and fused updates become the forms the
rules match, and only where the meaning stays the same."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.rewrite.context import Context
from cuopt.rewrite.normalize import normalize
from cuopt.source.preprocess import macros_of
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

LAUNCH = Launch((256,), (E.parse("cdiv(n, block.x)"),))


def body(source: str) -> str:
    out = normalize(Context(source.encode(), LAUNCH, "k")).source.decode()
    return out[out.index("{", out.index("__global__")) + 1:out.rindex("}")].strip()


def kernel(lines: str) -> str:
    return f"__global__ void k(const float* x, float* y, int n, int m)\n{{\n{lines}\n}}\n"


@pytest.mark.parametrize("before, after", [
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    const float* row = x + i * m;\n"
     "    float s = 0.0f;\n    for (int j = 0; j < m; ++j) s += row[j];\n    y[i] = s;",
     "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    float s = 0.0f;\n"
     "    for (int j = 0; j < m; ++j) s += x[i * m + j];\n    y[i] = s;"),
    ("    int i = threadIdx.x;\n    float* out = i + y;\n    out[0] = x[i];",
     "int i = threadIdx.x;\n    y[i + 0] = x[i];"),
    ("    int i = threadIdx.x;\n    const float* p = x + (i << 1);\n    y[i] = p[1 - i];",
     "int i = threadIdx.x;\n    y[i] = x[(i << 1) + (1 - i)];"),
])
def test_a_pointer_into_a_parameter_becomes_its_subscripts(before: str, after: str) -> None:
    assert body(kernel(before)) == after


@pytest.mark.parametrize("lines", [
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    y[i] = *p;",  # not only by subscript
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    i += 1;\n    y[i] = p[0];",  # the offset changes
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    p += 2;\n    y[i] = p[0];",  # repointed
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    y[i] = p[0] + (p + 1)[0];",  # arithmetic on it
])
def test_a_pointer_used_otherwise_stays(lines: str) -> None:
    assert body(kernel(lines)) == lines.strip()


@pytest.mark.parametrize("update, expected", [
    ("acc = fmaf(x[n], x[n + 1], acc);", "acc += x[n] * x[n + 1];"),
    ("acc = fma(x[n] + 1.0f, 2.0f, acc);", "acc += (x[n] + 1.0f) * 2.0f;"),
    ("y[n] = __fmaf_rn(x[m], x[m] * 0.5f, y[n]);", "y[n] += x[m] * x[m] * 0.5f;"),
    ("acc = fmaf(x[n], x[n], y[n]);", "acc = fmaf(x[n], x[n], y[n]);"),  # not an update of acc
    ("acc = fmaf(acc, x[n], 1.0f);", "acc = fmaf(acc, x[n], 1.0f);"),
])
def test_a_fused_update_becomes_an_accumulation(update: str, expected: str) -> None:
    lines = f"    float acc = 0.0f;\n    {update}\n    y[m] = acc;"
    assert body(kernel(lines)).split("\n")[1].strip() == expected


HELPER = "__device__ inline int at(int x, int y, int w) { return y * w + x; }\n"


def test_an_index_helper_in_a_subscript_is_put_in_with_its_arguments() -> None:
    source = HELPER + kernel("    int i = threadIdx.x;\n    y[at(i - 1, n, m)] = x[at(i, n, m)];")
    assert body(source) == "y[((n) * (m) + (threadIdx.x - 1))] = x[((n) * (m) + (threadIdx.x))];"


@pytest.mark.parametrize("helper", [
    "__device__ int at(int x, float s) { return x * 2; }",  # a parameter that is not an integer
    "__device__ int at(int x, int w) { int r = x * w; return r; }",  # more than a return
    "int at(int x, int w) { return x * w; }",  # not a device function
    "__device__ int at(int x, int w) { return x * w + offset; }",  # a name that is not a parameter
    "__device__ int at(int x, int w) { return lookup(x) * w; }",  # a call
])
def test_other_functions_stay_calls(helper: str) -> None:
    source = helper + "\n" + kernel("    int i = threadIdx.x;\n    y[at(i, m)] = x[i];")
    assert "y[at(i, m)]" in body(source)


def test_built_in_aliases_go_into_the_index_they_sum() -> None:
    lines = ("    int tid = threadIdx.x;\n    int bid = blockIdx.x;\n    int i = bid * blockDim.x + tid;\n"
             "    if (i < n) y[i] = x[i];")
    assert body(kernel(lines)) == "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i];"


@pytest.mark.parametrize("lines, kept", [
    # named elsewhere too: the index is rewritten, the alias stays for the other use
    ("    int tid = threadIdx.x;\n    int i = blockIdx.x * blockDim.x + tid;\n    if (tid == 0) y[i] = x[i];",
     "int tid = threadIdx.x;"),
    # a division: signed and unsigned differ, so it stays
    ("    int tid = threadIdx.x;\n    int half = tid / 2;\n    y[half] = x[half];", "int half = tid / 2;"),
])
def test_built_in_aliases_stay_where_they_must(lines: str, kept: str) -> None:
    assert kept in body(kernel(lines))


def _with_macros(source: str) -> str:
    data = source.encode()
    out = normalize(Context(data, LAUNCH, "k", None, frozenset(), macros_of(data, Path("k.cu")))).source.decode()
    return out[out.index("{", out.index("__global__")) + 1:out.rindex("}")].strip()


def test_an_accessor_macro_becomes_the_subscript_it_expands_to() -> None:
    source = ("#define X(i, j) x[(i) * m + (j)]\n#define Y(i) y[i]\n"
              + kernel("    int i = threadIdx.x;\n    Y(i + 1) = X(i, 2) + X(i - 1, n);"))
    assert _with_macros(source) == "y[threadIdx.x + 1] = x[(threadIdx.x) * m + (2)] + x[(threadIdx.x - 1) * m + (n)];"


@pytest.mark.parametrize("define", [
    "#define X(i, j) ((i) * m + (j))",  # an index macro: read through, stays
    "#define X(i, j) x[i] + x[j]",  # not one element
    "#define X(i, j) fmaxf(i, j)",
])
def test_other_function_like_macros_stay(define: str) -> None:
    lines = "    y[n] = X(n, 2);"
    assert _with_macros(f"{define}\n" + kernel(lines)) == lines.strip()
