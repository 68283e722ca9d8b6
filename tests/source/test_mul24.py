"""24-bit multiplies read as products (cuopt/source/mul24.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.source.kernels import load
from cuopt.source.preprocess import macros_of
from cuopt.source.mul24 import mul24_products
from cuopt.source.model import analyze
from cuopt.source.normal_form import normal_kernel


def _products(body: str, macros: str = "") -> list[tuple[str, str]]:
    source = f"{macros}\n__global__ void k(const float* x, float* y, int n, int w)\n{{\n{body}\n}}\n"
    kernel = load(source.encode(), macros_of(source.encode(), Path("k.cu"))).kernels[0]
    return [(node.text.decode(), new) for node, new in mul24_products(kernel)]


@pytest.mark.parametrize("body,found", [
    ("int i = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;",
     [("__umul24(blockIdx.x, blockDim.x)", "(blockIdx.x * blockDim.x)")]),
    ("int i = __mul24(blockIdx.x, blockDim.x) + threadIdx.x;",  # int, as the intrinsic returns
     [("__mul24(blockIdx.x, blockDim.x)", "((int)(blockIdx.x * blockDim.x))")]),
    ("y[__mul24(threadIdx.y, w) + threadIdx.x] = 0.f;",  # other operands keep the intrinsic's type
     [("__mul24(threadIdx.y, w)", "((int)(threadIdx.y) * (int)(w))")]),
    ("int s = __umul24(gridDim.x, blockDim.x);", [("__umul24(gridDim.x, blockDim.x)", "(gridDim.x * blockDim.x)")]),
])
def test_a_24_bit_multiply_reads_as_a_product_of_its_type(body: str, found: list[tuple[str, str]]) -> None:
    assert _products(body) == found


def test_a_macro_that_expands_to_them_reads_as_its_expansion_with_products() -> None:
    assert _products("int i = IMUL(blockIdx.x, blockDim.x) + threadIdx.x;", "#define IMUL(a, b) __mul24(a, b)") == \
        [("IMUL(blockIdx.x, blockDim.x)", "((int)(blockIdx.x * blockDim.x))")]
    assert _products("y[IMAD(threadIdx.y, w, threadIdx.x)] = 0.f;",  # the CUDA samples' IMAD
                     "#define IMAD(a, b, c) ( __mul24((a), (b)) + (c) )") == \
        [("IMAD(threadIdx.y, w, threadIdx.x)", "(( ((int)(threadIdx.y) * (int)(w)) + (threadIdx.x) ))")]


@pytest.mark.parametrize("body,macros,replaced", [
    ("int i = MUL(blockIdx.x, blockDim.x) + threadIdx.x;", "#define MUL(a, b) ((a) * (b))", []),  # a product already
    ("int i = __umul24(__umul24(blockIdx.x, blockDim.x), 2);", "", ["__umul24(blockIdx.x, blockDim.x)"]),  # the inner
    ("int i = __umulhi(blockIdx.x, blockDim.x);", "", []),  # another intrinsic
])
def test_other_calls_keep_their_spelling(body: str, macros: str, replaced: list[str]) -> None:
    assert [old for old, _ in _products(body, macros)] == replaced


def test_the_analysis_reads_the_global_index_through_them() -> None:
    source = b"""#define IMUL(a, b) __mul24(a, b)
__global__ void add(float* c, const float* a, const float* b, int n)
{
    const int i = IMUL(blockIdx.x, blockDim.x) + threadIdx.x;
    const int stride = __umul24(blockDim.x, gridDim.x);
    for (int p = i; p < n; p += stride) c[p] = a[p] + b[p];
}
"""
    kernel = load(source, macros_of(source, Path("k.cu"))).kernels[0]
    model = analyze(normal_kernel(kernel))
    [loop] = model.loops
    assert loop.grid_stride_axis == 0
    assert analyze(kernel).loops[0].grid_stride_axis is None  # as written, the model cannot read them
