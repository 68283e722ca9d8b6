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
    assert m.shared["slots"].dims == (256,)
    assert m.loops[0].step is None  # d *= 2
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


MACRO_KERNEL = b"""#include <cuda_runtime.h>
#include "gemm.cuh"
#define BOUND_NI NI
#define IDX(r, c) ((r) * NK + (c))
#define NJ_PLUS NJ + 1
__global__ void gemm(DATA_TYPE alpha, const DATA_TYPE* a, const DATA_TYPE* b, DATA_TYPE* c) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ DATA_TYPE tile[TILE][TILE];
    if (i < BOUND_NI && j < NJ) {
        DATA_TYPE acc = 0;
        for (int k = 0; k < BOUND_NK; k++) {
            acc += alpha * a[IDX(i, k)] * b[k * NJ + j];
        }
        c[i * NJ + j] = acc;
        c[2 * NJ_PLUS] = 0;
        c[NJ_PLUS - 1] = 0;
    }
}
"""
GEMM_HEADER = """#ifndef NI
#define NI 2048
#endif
#define NJ 1024
#define NK 512
#define BOUND_NK NK
#define TILE 16
#define DATA_TYPE float
"""


def test_loops_and_accesses_through_macros(tmp_path) -> None:
    from cuopt.source.preprocess import macros_of

    (tmp_path / "gemm.cuh").write_text(GEMM_HEADER)
    kernel = load(MACRO_KERNEL, macros_of(MACRO_KERNEL, tmp_path / "gemm.cu")).kernel("gemm")
    m = analyze(kernel)
    loop = m.loops[0]
    assert (loop.var, loop.cmp, str(loop.bound)) == ("k", "<", "NK")  # BOUND_NK expands, NK stays a size
    i, j = global_index(1), global_index(0)
    a, b = m.global_accesses("a")[0], m.global_accesses("b")[0]
    assert a.flat == i * Poly.symbol("NK") + Poly.symbol("k")
    assert b.flat.coefficient("k") == Poly.symbol("NJ")
    stores = [x.flat for x in m.global_accesses("c") if x.write]
    assert stores[0] == i * Poly.symbol("NJ") + j
    assert m.coalescing(m.global_accesses("c")[0]) == "coalesced"
    assert stores[1] is None  # `2 * NJ + 1` as written, not 2 * (NJ + 1): kept opaque
    assert stores[2] == Poly.symbol("NJ")  # `NJ + 1 - 1`
    assert m.shared["tile"].dims == (16, 16) and m.shared["tile"].element == "float"
    assert "IDX" not in m.calls
    assert m.poly(_condition_left_bound(kernel)) == Poly.symbol("NI")


def _condition_left_bound(kernel):
    """The `BOUND_NI` of `i < BOUND_NI`."""
    from cuopt.source.parse import walk

    return next(n for n in walk(kernel.body) if n.type == "identifier" and n.text == b"BOUND_NI")


def test_without_macros_the_same_text_stays_opaque() -> None:
    m = analyze(load(MACRO_KERNEL).kernel("gemm"))
    assert m.loops[0].bound is None and m.global_accesses("a")[0].flat is None


def _model(src: str, name: str):
    kernel = load(src.encode()).kernel(name)
    assert kernel is not None
    return analyze(kernel)


def test_cache_hinted_loads_only_read() -> None:
    m = _model("""
__global__ void k(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __ldg(&x[i]) + __ldcs(&x[i + 1]);
}
""", "k")
    xs = [a for a in m.global_accesses() if a.array == "x"]
    assert len(xs) == 2 and all(a.read and not a.write for a in xs)
    assert m.read_only("x")


def test_address_passed_elsewhere_still_counts_as_written() -> None:
    m = _model("""
__device__ void put(float* p, float v) { *p = v; }
__global__ void k(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) put(&x[i], 1.0f);
}
""", "k")
    assert not m.read_only("x")


@pytest.mark.parametrize("use,shared", [
    ("const float* p = x + 4 * i; y[i] = p[0];", False),
    ("const float4 v = *reinterpret_cast<const float4*>(x + 4 * i); y[i] = v.x;", False),
    ("if (reinterpret_cast<unsigned long long>(x) % 16 == 0) y[i] = x[i];", False),
    ("const float* p = (x + i) + 1; y[i] = *p;", False),
    ("const float* p = flag ? x : z; y[i] = p[i];", True),
    ("const float* p = x + (z - x); y[i] = p[i];", True),
    ("helper(x); y[i] = x[i];", True),
])
def test_pointers_into_their_own_buffer_are_not_shared(use: str, shared: bool) -> None:
    m = _model("__device__ void helper(const float*);\n"
               "__global__ void k(const float* x, const float* z, float* y, int flag)\n"
               "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    " + use + "\n}\n", "k")
    assert "x" in m.escapes  # used other than by subscript: never read-only-by-subscript
    assert ("x" in m.shared_pointers) == shared


@pytest.mark.parametrize("head, trips", [
    ("#define R 2\n", 5),  # fixed: -D cannot change it
    ("#ifndef R\n#define R 2\n#endif\n", None),  # a size each size set may set
])
def test_a_loop_over_a_fixed_macro_range_has_a_constant_trip_count(tmp_path, head: str, trips: int | None) -> None:
    from cuopt.source.preprocess import macros_of

    source = (head + "__global__ void k(const float* x, float* y)\n{\n    float s = 0.0f;\n"
              "    for (int d = -R; d <= R; ++d) s += x[threadIdx.x + d + R];\n    y[threadIdx.x] = s;\n}\n").encode()
    (tmp_path / "k.cu").write_bytes(source)
    loop = analyze(load(source, macros_of(source, tmp_path / "k.cu")).kernel("k")).loops[0]
    assert loop.trip_count == trips
    assert str(loop.bound) == "R"  # the bound itself stays the macro's name


@pytest.mark.parametrize("index, tie", [
    ("blockIdx.x * TILE + threadIdx.x", "TILE"),  # a macro the block size is written with
    ("threadIdx.x + (blockIdx.x * 16)", "16"),  # a literal
    ("((int)blockIdx.x) * 16 + ((int)threadIdx.x)", "16"),  # generated code's casts
    ("blockIdx.x * TILE + j", None),  # no thread along the axis: each block's TILE elements, not a block of TILE threads
    ("blockIdx.x * n + threadIdx.x", None),  # a run-time value
    ("blockIdx.x * TILE + threadIdx.y", None),  # another axis's thread
])
def test_a_constant_for_blockdim_ties_the_block(tmp_path, index: str, tie: str | None) -> None:
    from cuopt.source.preprocess import macros_of

    source = ("#define TILE 16\n__global__ void k(const float* x, float* y, int n)\n{\n"
              f"    for (int j = 0; j < 4; ++j) y[{index}] = x[j];\n}}\n").encode()
    (tmp_path / "k.cu").write_bytes(source)
    m = analyze(load(source, macros_of(source, tmp_path / "k.cu")).kernel("k"))
    assert m.block_ties == ({0: tie} if tie else {})
    if tie:
        assert m.global_accesses("y")[0].index[0] == global_index(0)
        assert m.tie_value(tie) == 16


def test_a_quotient_and_remainder_that_recombine_are_the_index() -> None:
    """llm.c's `b = idx / T; t = idx % T; ... [b * T + t]` is `idx` (C's `e % d == e - d * (e / d)`);
    a quotient or remainder left over stays opaque."""
    kernel = load(b"""
__global__ void k(float* out, const float* bias, const int* targets, int T, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int b = idx / T;
    int t = idx % T;
    out[b * T * C + t * C + 1] = bias[t] + (float)targets[b * T + t];
}
""").kernel("k")
    assert kernel is not None
    m = analyze(kernel)
    flat = {a.array: a.flat for a in m.global_accesses()}
    i = global_index(0)
    assert flat["out"] == i * Poly.symbol("C") + Poly.const(1)
    assert flat["targets"] == i
    assert flat["bias"] is None


@pytest.mark.parametrize("expr, value", [("7 / 2", 3), ("-7 / 2", -3), ("7 % -2", 1), ("-7 % 2", -1), ("-8 / -2", 4)])
def test_constant_division_truncates_as_c_does(expr: str, value: int) -> None:
    kernel = load(f"__global__ void k(float* x) {{ x[threadIdx.x + ({expr})] = 0.0f; }}".encode()).kernel("k")
    assert kernel is not None
    assert analyze(kernel).global_accesses()[0].flat == Poly.symbol("threadIdx.x") + Poly.const(value)


@pytest.mark.parametrize("use", ["bias != NULL ? bias[i] : 0.0f", "(bias == nullptr) ? 0.0f : bias[i]",
                                 "!bias ? 0.0f : bias[i]", "bias ? bias[i] : 0.0f", "(bias && i > 0) ? bias[i] : 0.0f"])
def test_a_null_test_is_no_escape(use: str) -> None:
    """An optional pointer tested for null makes no alias: the buffer is still read only by subscript."""
    kernel = load(f"""
__global__ void k(float* out, const float* bias, int n)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = {use};
}}
""".encode()).kernel("k")
    assert kernel is not None
    m = analyze(kernel)
    assert m.escapes == set() and m.read_only("bias")
    passed = load(b"__global__ void k(float* out, const float* bias) { out[0] = f(bias); }").kernel("k")
    assert passed is not None and analyze(passed).escapes == {"bias"}  # passing it on still escapes


def test_each_use_of_a_local_reads_the_declaration_in_scope_there() -> None:
    """Two copies of a body declare the same names (as privatize's fallback copy does): each
    subscript's index is read through its own copy's `i`, and an assignment counts against the
    declaration it writes, not the last one of the name."""
    src = b"""__global__ void k(const float* x, float* y, int n, int w)
{
    if (w > 8) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int s = 0;
        s = 1;
        y[i * 2] = x[i];
        return;
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x + w;
    int s = 2;
    y[i] = x[i + s];
}
"""
    m = analyze(load(src).kernels[0])
    first, last = m.declared["i"]
    assert m.locals["i"] is last
    loads = [a for a in m.global_accesses() if a.array == "x"]
    stores = [a for a in m.global_accesses() if a.array == "y"]
    gid = global_index(0)
    assert [a.flat for a in loads] == [gid, gid + Poly.symbol("w") + Poly.const(2)]
    assert [a.flat for a in stores] == [gid * Poly.const(2), gid + Poly.symbol("w")]
    assert [s.writes for s in m.declared["s"]] == [1, 0]
    assert m.local_at("i", loads[0].node) is first and m.local_at("i", loads[1].node) is last


def test_a_macro_that_names_a_local_reads_the_declaration_in_scope_where_it_is_used(tmp_path) -> None:
    """An object-like macro's text is parsed apart from the kernel: a local it names is read through
    the declaration in scope where the macro is used."""
    from cuopt.source.preprocess import macros_of

    src = b"""#define NEXT (i + 1)
__global__ void k(const float* x, float* y, int n, int w)
{
    if (w > 8) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        y[i] = x[NEXT];
        return;
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x + w;
    y[i] = x[NEXT];
}
"""
    m = analyze(load(src, macros_of(src, tmp_path / "k.cu")).kernels[0])
    gid = global_index(0)
    assert [a.flat for a in m.global_accesses("x")] == [gid + Poly.const(1), gid + Poly.symbol("w") + Poly.const(1)]
