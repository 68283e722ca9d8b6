"""The source model on the samples: loops, accesses with affine index forms, coalescing,
barriers, atomics, shared arrays; and robustness on unusual C++."""
from __future__ import annotations

import pytest

from cuopt.source.affine import Poly, global_index
from cuopt.source.kernels import load
from cuopt.source.model import analyze
from tests.conftest import SAMPLES


def model_of(name: str):
    kernel = load((SAMPLES / f"{name}.cu").read_bytes()).kernel(name)
    assert kernel is not None
    return analyze(kernel)


def test_matmul_loop_and_access_patterns() -> None:
    m = model_of("matmul")
    assert len(m.loops) == 1
    loop = m.loops[0]
    assert (loop.var, loop.cmp, loop.step, str(loop.bound), loop.trip_count) == ("k", "<", 1, "K", None)
    by_array = {a.array: a for a in m.global_accesses()}
    assert m.coalescing(by_array["A"]) == "broadcast"  # reused by every thread of a block row
    assert m.coalescing(by_array["B"]) == "coalesced"
    assert by_array["A"].flat.coefficient("k") == Poly.const(1)  # contiguous per thread
    assert by_array["B"].flat.coefficient("k") == Poly.symbol("N")
    assert by_array["C"].write and not by_array["C"].read
    assert m.read_only("A") and not m.read_only("C")


def test_transpose_store_is_strided() -> None:
    m = model_of("transpose")
    store = next(a for a in m.global_accesses() if a.write)
    load_ = next(a for a in m.global_accesses() if a.read)
    assert m.coalescing(store) == "strided" and m.coalescing(load_) == "coalesced"


def test_reduce_sum_barriers_atomics_shared_and_non_additive_loop() -> None:
    m = model_of("reduce_sum")
    assert len(m.barriers) == 2 and len(m.atomics) == 1
    assert m.shared["buf"].dims == (256,)
    assert m.loops[0].step is None  # s *= 2
    atomic = next(a for a in m.accesses if a.atomic)
    assert atomic.array == "out" and atomic.flat == Poly.const(0)


def test_histogram_index_is_opaque() -> None:
    m = model_of("histogram")
    bins = next(a for a in m.accesses if a.array == "bins")
    assert bins.atomic and bins.flat is None and m.coalescing(bins) == "opaque"


def test_constant_trip_count_and_global_index() -> None:
    src = """
__global__ void k(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = 2; j <= 10; j += 2) s += x[i + j];
    if (i < n) y[i] = s;
}
"""
    m = analyze(load(src).kernels[0])
    assert m.loops[0].trip_count == 5
    y = next(a for a in m.accesses if a.array == "y")
    assert y.flat == global_index(0)


@pytest.mark.parametrize("src", [
    "template <typename T> __global__ void t(T* x) { x[threadIdx.x] = 0; }",
    "#define N 4\nnamespace a { __global__ void k(float* x) { x[N] = 1; } }",
    "__device__ float sq(float v) { return v * v; }\n__global__ void k(float* x) { x[0] = sq(x[0]); }",
    "extern \"C\" __global__ void k(float* x) { while (x[0] > 1) x[0] *= 0.5f; }",
    "__global__ void k(float* x) { float* p = x + 1; *p = 2; }\nint main() { k<<<1, 1>>>(0); }",
])
def test_unusual_code_does_not_crash(src: str) -> None:
    for kernel in load(src).kernels:
        analyze(kernel)


def test_syntax_error_is_located_and_the_kernel_skipped() -> None:
    f = load("__global__ void good(float* x) { x[0] = 1; }\n__global__ void bad(float* x) { x[0] = ; }\n")
    bad = f.kernel("bad")
    assert bad is not None and bad.errors and bad.errors[0].line == 2
    good = f.kernel("good")
    assert good is not None and not good.errors
