"""The normal form's newer steps: locals declared first and assigned later, `while` loops that
step by a stride or halve, guards through a bool local, pointers into a parameter and fused
updates become the forms the rules match, and only where the meaning stays the same."""
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
    # the address of an element: &x[off] is x + off
    ("    int i = threadIdx.x;\n    const float* row = &x[i * m];\n    y[i] = row[1] + row[m - 1];",
     "y[threadIdx.x] = x[threadIdx.x * m + 1] + x[threadIdx.x * m + (m - 1)];"),
    ("    int i = threadIdx.x;\n    const float* p = x + (i << 1);\n    y[i] = p[1 - i];",
     "int i = threadIdx.x;\n    y[i] = x[(i << 1) + (1 - i)];"),
    # llm.c: a chain of sums, its (b, t) split by / and % (their sum is the index again)
    ("    int i = threadIdx.x;\n    int b = i / n;\n    int t = i % n;\n    const float* row = x + b * n * m + t * m;\n"
     "    y[i] = row[m - 1];",
     "int i = threadIdx.x;\n    int b = i / n;\n    int t = i % n;\n    y[i] = x[b * n * m + t * m + (m - 1)];"),
    # declared in a loop's body from its counter, which only the header steps
    ("    float s = 0.0f;\n    for (int r = 0; r < n; ++r) {\n"
     "        const float* row = x + r * m;\n        s += row[threadIdx.x];\n    }\n    y[threadIdx.x] = s;",
     "float s = 0.0f;\n    for (int r = 0; r < n; ++r) {\n"
     "        s += x[r * m + threadIdx.x];\n    }\n    y[threadIdx.x] = s;"),
])
def test_a_pointer_into_a_parameter_becomes_its_subscripts(before: str, after: str) -> None:
    assert body(kernel(before)) == after


@pytest.mark.parametrize("lines", [
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    y[i] = *p;",  # not only by subscript
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    i += 1;\n    y[i] = p[0];",  # the offset changes
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    p += 2;\n    y[i] = p[0];",  # repointed
    "    int i = threadIdx.x;\n    const float* p = x + i;\n    y[i] = p[0] + (p + 1)[0];",  # arithmetic on it
    "    int i = threadIdx.x;\n    int t = i % n;\n    const float* p = x + t * m + i;\n    y[i] = p[0];",  # a remainder alone
    # the loop's body steps its counter too: the row moves while the pointer is in scope
    "    float s = 0.0f;\n    for (int r = 0; r < n; ++r) {\n"
    "        const float* row = x + r * m;\n        r += 1;\n        s += row[threadIdx.x];\n    }\n    y[threadIdx.x] = s;",
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


def test_an_index_helper_of_any_return_type_is_put_in_in_a_subscript() -> None:
    source = "__device__ int64_t at(int x, int w) { return x * w; }\n" + kernel("    y[at(threadIdx.x, m)] = x[0];")
    assert body(source) == "y[((threadIdx.x) * (m))] = x[0];"


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


def test_a_thread_index_helper_is_put_in_at_every_call_cast_to_its_type() -> None:
    """Code ported from OpenCL names its indices `get_global_id(0)`-like: a helper of built-ins."""
    source = ("__device__ __forceinline__ int global_id() { return blockIdx.x * blockDim.x + threadIdx.x; }\n"
              "__device__ unsigned global_size() { return gridDim.x * blockDim.x; }\n" +
              kernel("    for (int i = global_id(); i < n; i += global_size())\n        y[i] = x[i];"))
    assert body(source).startswith("for (int i = ((int)(blockIdx.x * blockDim.x + threadIdx.x)); i < n; "
                                   "i += ((unsigned)(gridDim.x * blockDim.x)))")


@pytest.mark.parametrize("helper", [
    "__device__ int global_id() { return blockIdx.x * blockDim.x + threadIdx.x + shift; }",  # a global
    "__device__ int global_id() { return blockIdx.x * blockDim.x + threadIdx.w; }",  # not a built-in
    "__device__ float global_id() { return blockIdx.x * blockDim.x + threadIdx.x; }",  # not an integer
])
def test_other_thread_index_helpers_stay_calls(helper: str) -> None:
    source = helper + "\n" + kernel("    int i = global_id();\n    y[i] = x[i];")
    assert "int i = global_id();" in body(source)


def test_an_index_lambda_is_put_in_at_every_call_and_its_declaration_goes() -> None:
    lines = ("    int i = threadIdx.x;\n    auto at = [m](int r, int c) { return r * m + c; };\n"
             "    int k = at(i, 1);\n    y[at(i, 0)] = x[k];")
    assert body(kernel(lines)) == "int i = threadIdx.x;\n    y[((i) * m + (0))] = x[((i) * m + (1))];"


@pytest.mark.parametrize("lines", [
    # a captured name the kernel writes: the lambda keeps the value it had at the declaration
    "    int i = threadIdx.x;\n    auto at = [m](int r) { return r * m; };\n    m = 2;\n    y[at(i)] = x[i];",
    "    int i = threadIdx.x;\n    int w = m;\n    auto at = [w](int r) { return r * w; };\n    y[at(i)] = x[i];",
    "    int i = threadIdx.x;\n    auto at = [](float r) { return r * 2; };\n    y[at(i)] = x[i];",
    "    int i = threadIdx.x;\n    auto at = [m](int r) { int q = r * m; return q; };\n    y[at(i)] = x[i];",
])
def test_other_lambdas_stay(lines: str) -> None:
    assert "y[at(i)]" in body(kernel(lines)) and "auto at" in body(kernel(lines))


def test_built_in_aliases_go_into_the_index_they_sum() -> None:
    lines = ("    int tid = threadIdx.x;\n    int bid = blockIdx.x;\n    int i = bid * blockDim.x + tid;\n"
             "    if (i < n) y[i] = x[i];")
    assert body(kernel(lines)) == "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i];"


def test_aliases_declared_together_go_together() -> None:
    lines = ("    int bx = blockIdx.x, by = blockIdx.y;\n    int tx = threadIdx.x, ty = threadIdx.y;\n"
             "    int r = by * blockDim.y + ty;\n    int c = bx * blockDim.x + tx;\n    y[r * n + c] = x[c];")
    assert body(kernel(lines)) == ("y[(blockIdx.y * blockDim.y + threadIdx.y) * n + (blockIdx.x * blockDim.x + "
                                   "threadIdx.x)] = x[blockIdx.x * blockDim.x + threadIdx.x];")
    kept = lines.replace("x[c];", "x[tx];")  # tx named elsewhere: its declaration stays whole
    assert body(kernel(kept)).startswith("int tx = threadIdx.x, ty = threadIdx.y;")


def test_an_alias_the_built_in_can_stand_for_at_every_use_goes() -> None:
    lines = ("    int lane = threadIdx.x;\n    int half = lane / 2;\n    if (lane == 0) y[half] = x[lane + 1];\n"
             "    for (int w = blockDim.x / 2; w > 0; w /= 2) if (lane < w) y[lane] += y[lane + w];")
    assert body(kernel(lines)) == (
        "int half = threadIdx.x / 2;\n    if (threadIdx.x == 0) y[half] = x[threadIdx.x + 1];\n"
        "    for (int w = blockDim.x / 2; w > 0; w /= 2) if (threadIdx.x < w) y[threadIdx.x] += y[threadIdx.x + w];")


@pytest.mark.parametrize("lines, kept", [
    # named elsewhere too, where the built-in's value differs (`tid < n` of a negative n): the index is
    # rewritten, the alias stays for the other use
    ("    int tid = threadIdx.x;\n    int i = blockIdx.x * blockDim.x + tid;\n    if (tid < n) y[i] = x[i];",
     "int tid = threadIdx.x;"),
    # a subscript of a difference: `x[tid - 1]` reads before x at 0 where `x[threadIdx.x - 1]` wraps
    ("    int tid = threadIdx.x;\n    if (tid > 0) y[tid] = x[tid - 1];", "int tid = threadIdx.x;"),
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


def test_a_loop_macro_becomes_the_for_loop_it_expands_to() -> None:
    """Caffe's `CUDA_KERNEL_LOOP(index, n) { ... }` (a function definition to the parser) is the
    grid-stride loop the rules read; its body and lines stay."""
    source = ("#define CUDA_KERNEL_LOOP(i, n) \\\n  for (int i = blockIdx.x * blockDim.x + threadIdx.x; \\\n"
              "       i < (n); i += blockDim.x * gridDim.x)\n"
              + kernel("  CUDA_KERNEL_LOOP(index, n) {\n    y[index] = 2.0f * x[index];\n  }"))
    assert _with_macros(source) == ("for (int index = blockIdx.x * blockDim.x + threadIdx.x; index < (n); "
                                    "index += blockDim.x * gridDim.x) {\n    y[index] = 2.0f * x[index];\n  }")


@pytest.mark.parametrize("define", [
    "#define X(i, j) ((i) * m + (j))",  # an index macro: read through, stays
    "#define X(i, j) x[i] + x[j]",  # not one element
    "#define X(i, j) fmaxf(i, j)",
])
def test_other_function_like_macros_stay(define: str) -> None:
    lines = "    y[n] = X(n, 2);"
    assert _with_macros(f"{define}\n" + kernel(lines)) == lines.strip()



GLOBAL = "blockIdx.x * blockDim.x + threadIdx.x"
TID = "threadIdx.x"


@pytest.mark.parametrize("before, after", [
    # the I2D Laplace style: both indices declared first
    (f"    int i, j;\n    i = {GLOBAL};\n    j = blockIdx.y * blockDim.y + threadIdx.y;\n"
     "    if (i < n && j < m) y[j * n + i] = x[j * n + i];",
     f"int i = {GLOBAL};\n    int j = blockIdx.y * blockDim.y + threadIdx.y;\n"
     "    if (i < n && j < m) y[j * n + i] = x[j * n + i];"),
    # split: k is assigned twice and stays declared first; the declared type is kept
    (f"    unsigned int i, k;\n    i = {GLOBAL};\n    k = 0;\n    if (i < n) k = 1;\n    y[i] = x[i] + k;",
     f"unsigned int k;\n    unsigned int i = {GLOBAL};\n    k = 0;\n    if (i < n) k = 1;\n    y[i] = x[i] + k;"),
    # assigned in the block that holds every use (the I2D code's neighbour offsets)
    ("    int c, l;\n    if (n > 0) {\n        c = n * m;\n        l = c - 1;\n        y[c] = x[l];\n    }",
     "if (n > 0) {\n        int c = n * m;\n        y[c] = x[c - 1];\n    }"),  # l, an index local, goes in
    # other statements between: the declaration moves to the assignment
    (f"    int i;\n    float s = 2.0f;\n    i = {GLOBAL};\n    if (i < n) y[i] = s * x[i];",
     f"float s = 2.0f;\n    int i = {GLOBAL};\n    if (i < n) y[i] = s * x[i];"),
])
def test_a_local_assigned_once_takes_the_value_as_its_initializer(before: str, after: str) -> None:
    assert body(kernel(before)) == after


@pytest.mark.parametrize("lines", [
    f"    int i;\n    i = {TID};\n    i += blockIdx.x * blockDim.x;\n    if (i < n) y[i] = x[i];",  # assigned twice
    f"    int i;\n    y[n] = i;\n    i = {GLOBAL};\n    if (i < n) y[i] = x[i];",  # read before
    f"    int i;\n    i = {GLOBAL};\n    int* p = &i;\n    *p += 1;\n    if (i < n) y[i] = x[i];",  # address taken
    f"    int i;\n    if (n > 0) {{\n        i = {GLOBAL};\n        y[i] = x[i];\n    }}\n    y[0] = i;",  # read outside its block
    f"    __shared__ float s;\n    s = x[0];\n    __syncthreads();\n    y[{TID}] = s;",  # takes no initializer
    f"    int i;\n    i = 0;\n    y[{TID}] = x[{TID}];",  # never read
])
def test_a_local_assigned_otherwise_stays(lines: str) -> None:
    assert body(kernel(lines)) == lines.strip()


@pytest.mark.parametrize("before, after", [
    # CUDA by Example's grid-stride loop
    ("    int tid = threadIdx.x + blockIdx.x * blockDim.x;\n    while (tid < n) {\n"
     "        y[tid] = 2.0f * x[tid];\n        tid += blockDim.x * gridDim.x;\n    }",
     "for (int tid = threadIdx.x + blockIdx.x * blockDim.x; tid < n; tid += blockDim.x * gridDim.x) {\n"
     "        y[tid] = 2.0f * x[tid];\n    }"),
    # ... with the stride in a local declared between the counter and the loop (it stays before the loop)
    ("    int tid = threadIdx.x + blockIdx.x * blockDim.x;\n    int offset = blockDim.x * gridDim.x;\n"
     "    while (tid < n) {\n        y[tid] = 2.0f * x[tid];\n        tid += offset;\n    }",
     "int offset = blockDim.x * gridDim.x;\n    for (int tid = threadIdx.x + blockIdx.x * blockDim.x; tid < n; "
     "tid += offset) {\n        y[tid] = 2.0f * x[tid];\n    }"),
    (f"    int i = {TID};\n    while (i < n) {{\n        y[i] = x[i];\n        i = i + m;\n    }}",
     f"for (int i = {TID}; i < n; i += m) {{\n        y[i] = x[i];\n    }}"),
    # the reduction tree: `i != 0` is `i > 0` for a count that starts at blockDim.x / 2 and halves
    (f"    int i = blockDim.x / 2;\n    while (i != 0) {{\n        if ({TID} < i) y[{TID}] += y[{TID} + i];\n"
     "        __syncthreads();\n        i /= 2;\n    }",
     f"for (int i = blockDim.x / 2; i > 0; i /= 2) {{\n        if ({TID} < i) y[{TID}] += y[{TID} + i];\n"
     "        __syncthreads();\n    }"),
    ("    unsigned int s = m;\n    while (s != 0) {\n        y[s] = x[s];\n        s = s >> 1;\n    }",
     "for (unsigned int s = m; s > 0; s >>= 1) {\n        y[s] = x[s];\n    }"),
    ("    unsigned int s = 1;\n    while (s < blockDim.x) {\n        y[s] = x[s];\n        s *= 2;\n    }",
     "for (unsigned int s = 1; s < blockDim.x; s *= 2) {\n        y[s] = x[s];\n    }"),
    # nested loops are rewritten together
    ("    int i, j;\n    i = 0;\n    while (i < n) {\n        j = 0;\n        while (j < m) {\n"
     "            y[i * m + j] = x[j];\n            j++;\n        }\n        i++;\n    }",
     "for (int i = 0; i < n; ++i) {\n        for (int j = 0; j < m; ++j) {\n            y[i * m + j] = x[j];\n"
     "        }\n    }"),
])
def test_a_while_loop_that_steps_last_becomes_a_for_loop(before: str, after: str) -> None:
    assert body(kernel(before)) == after


@pytest.mark.parametrize("before, after", [
    ("    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    const size_t stride = (size_t)blockDim.x * gridDim.x;\n    for (; i < n; i += stride)\n        y[i] = x[i];",
     "const size_t stride = (size_t)blockDim.x * gridDim.x;\n"
     "    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)\n        y[i] = x[i];"),
    # read after the loop: it stays as written
    (f"    int i = {TID};\n    for (; i < n; i += m) y[i] = x[i];\n    y[0] = i;",
     f"int i = {TID};\n    for (; i < n; i += m) y[i] = x[i];\n    y[0] = i;"),
    # a declaration between that reads the counter: it stays as written
    (f"    int i = {TID};\n    int j = i + 1;\n    for (; i < n; i += m) y[i] = x[j];",
     f"int i = {TID};\n    int j = i + 1;\n    for (; i < n; i += m) y[i] = x[j];"),
])
def test_a_for_loop_without_its_counter_s_declaration_takes_it(before: str, after: str) -> None:
    """`size_t i = ...; for (; i < n; i += stride)`: grid-stride loops written without an initializer."""
    assert body(kernel(before)) == after


@pytest.mark.parametrize("lines", [
    # the stride changes in the loop
    f"    int i = {TID};\n    int s = 1;\n    while (i < n) {{\n        y[i] = x[i];\n        s *= 2;\n"
    "        i += s;\n    }",
    # a `continue` skips the step
    f"    int i = {TID};\n    while (i < n) {{\n        if (x[i] < 0.0f) continue;\n        y[i] = x[i];\n"
    "        i += m;\n    }",
    # halving from a value that may be negative: `i != 0` is not `i > 0`
    "    int i = m;\n    while (i != 0) {\n        y[i] = x[i];\n        i /= 2;\n    }",
    # the count is read after the loop
    f"    int i = {TID};\n    while (i < n) {{\n        y[i] = x[i];\n        i += m;\n    }}\n    y[0] = i;",
    # the count is also stepped in the body
    f"    int i = {TID};\n    while (i < n) {{\n        i += x[i] > 0.0f;\n        y[i] = x[i];\n"
    "        i += m;\n    }",
])
def test_a_while_loop_stepped_otherwise_stays(lines: str) -> None:
    assert body(kernel(lines)) == lines.strip()


@pytest.mark.parametrize("before, after", [
    (f"    int i = {GLOBAL};\n    bool mask = i < n;\n    if (mask) y[i] = 2.0f * x[i];",
     f"int i = {GLOBAL};\n    if (i < n) y[i] = 2.0f * x[i];"),
    (f"    int i = {GLOBAL};\n    const bool in_range = i < n && m > 0;\n    float v = 2.0f;\n"
     "    if (in_range) {\n        y[i] = v * x[i];\n    }",
     f"int i = {GLOBAL};\n    float v = 2.0f;\n    if (i < n && m > 0) {{\n        y[i] = v * x[i];\n    }}"),
])
def test_a_guard_through_a_bool_local_tests_the_condition(before: str, after: str) -> None:
    assert body(kernel(before)) == after


@pytest.mark.parametrize("lines", [
    f"    bool mask = {TID} < n;\n    if (mask) y[{TID}] = x[{TID}];\n    if (!mask) y[0] = 0.0f;",  # used twice
    f"    bool mask = {TID} < n;\n    mask = mask && m > 0;\n    if (mask) y[{TID}] = 1.0f;",  # assigned again
    f"    int i = {GLOBAL};\n    bool mask = i < n;\n    i += 1;\n    if (mask) y[i] = x[i];",  # i changes between
    f"    int i = {GLOBAL};\n    bool mask = i < n;\n    bump(i);\n    if (mask) y[i] = x[i];",  # by reference
    f"    bool mask = y[{TID}] > 0.0f;\n    y[{TID}] = 0.0f;\n    if (mask) y[{TID}] = 1.0f;",  # a load
    f"    bool mask = isfinite(x[{TID}]);\n    if (mask) y[{TID}] = x[{TID}];",  # a call
    f"    bool mask = {TID} < n;\n    if (n > 0) {{\n        if (mask) y[{TID}] = 1.0f;\n    }}",  # in an inner block
])
def test_a_bool_local_used_otherwise_stays(lines: str) -> None:
    assert body(kernel(lines)) == lines.strip()


def test_an_offset_index_guard_puts_the_index_alone_on_the_left() -> None:
    lines = f"    int i = {GLOBAL};\n    if (i + m <= n) y[i] = x[i + m - 1];"
    assert body(kernel(lines)) == f"int i = {GLOBAL};\n    if (i <= n - (m)) y[i] = x[i + m - 1];"


@pytest.mark.parametrize("index, bound", [("int64_t", "n"), ("long long", "(long long)n"), ("ptrdiff_t", "n")])
def test_an_offset_guard_of_signed_64_bit_values_puts_the_index_alone_on_the_left(index: str, bound: str) -> None:
    lines = f"    {index} i = {GLOBAL};\n    if (i + m <= {bound}) y[i] = x[i + m - 1];"
    assert body(kernel(lines)).split("\n")[-1].strip() == f"if (i <= {bound} - (m)) y[i] = x[i + m - 1];"


@pytest.mark.parametrize("lines", [
    f"    unsigned int i = {GLOBAL};\n    if (i + 4 < n) y[i] = x[i];",  # unsigned: n - 4 could wrap
    f"    size_t i = {GLOBAL};\n    if (i + 4 < n) y[i] = x[i];",  # as size_t
    f"    int i = {GLOBAL};\n    if (i + 4 < (unsigned)n) y[i] = x[i];",  # a cast to an unsigned type
    f"    int i = {GLOBAL};\n    if (i + 4u < n) y[i] = x[i];",  # an unsigned literal
    f"    int i = {GLOBAL};\n    if (i + threadIdx.y < n) y[i] = x[i];",  # the offset moves with the thread
])
def test_an_offset_guard_that_could_wrap_stays(lines: str) -> None:
    assert "+" in body(kernel(lines)).split("\n")[-1].split("<")[0]


def test_a_block_offset_local_goes_into_the_index_it_starts() -> None:
    lines = ("    int xoffset = blockIdx.x * blockDim.x;\n    int xindex = xoffset + threadIdx.x;\n"
             "    if (xindex < n) y[xindex] = x[xindex];")
    assert body(kernel(lines)) == f"int xindex = {GLOBAL};\n    if (xindex < n) y[xindex] = x[xindex];"


def test_loads_held_in_locals_and_read_once_go_into_their_use() -> None:
    lines = ("    float acc = 0.0f;\n    for (int k = 0; k < m; ++k) {\n        float a = x[n * m + k];\n"
             "        float b = x[k * m + n];\n        acc += a * b;\n    }\n    y[n] = acc;")
    assert body(kernel(lines)) == ("float acc = 0.0f;\n    for (int k = 0; k < m; ++k) {\n"
                                   "        acc += x[n * m + k] * x[k * m + n];\n    }\n    y[n] = acc;")


@pytest.mark.parametrize("lines", [
    "    float a = x[n];\n    y[0] = a;\n    y[1] = a;",  # read twice
    "    float a = x[n];\n    y[n] = 0.0f;\n    y[m] = a;",  # a store between: it may change x[n]
    "    float a = x[n];\n    for (int k = 0; k < m; ++k) y[k] = a;",  # read in a loop: loaded once, not m times
    "    int k = n;\n    float a = x[k];\n    k += 1;\n    y[k] = a;",  # what the load reads changes between
    "    float a = x[n];\n    __syncthreads();\n    y[n] = a;",  # a call between
])
def test_a_load_that_must_stay_in_its_local_stays(lines: str) -> None:
    assert "float a = x[" in body(kernel(lines))


# -- compare-and-select --------------------------------------------------------------------------
def selects(decl: str, loop_body: str, params: str = "const float* x, float* y, int r, int m") -> str:
    source = (f"__global__ void k({params})\n{{\n"
              f"    {decl}\n    for (int j = 0; j < m; ++j) {loop_body}\n    y[r] = best;\n}}\n")
    out = body(source)
    return out[out.index("for (int j = 0; j < m; ++j) ") + len("for (int j = 0; j < m; ++j) "):out.index("\n    y[r]")]


@pytest.mark.parametrize("decl, loop_body, expected", [
    ("float best = -INFINITY;", "if (x[r * m + j] > best) best = x[r * m + j];", "best = fmaxf(best, x[r * m + j]);"),
    ("float best = -INFINITY;", "{\n        if (x[r * m + j] > best) {\n            best = x[r * m + j];\n        }\n    }",
     "{\n        best = fmaxf(best, x[r * m + j]);\n    }"),
    ("float best = -FLT_MAX;", "if (best < x[r * m + j]) best = x[r * m + j];", "best = fmaxf(best, x[r * m + j]);"),
    ("float best = 1e30f;", "if (x[r * m + j] <= best) best = x[r * m + j];", "best = fminf(best, x[r * m + j]);"),
    ("float best = 0.0f;", "best = (x[r * m + j] > best) ? x[r * m + j] : best;", "best = fmaxf(best, x[r * m + j]);"),
    ("float best = (float)(-INFINITY);", "if ((x[r*m + j]) > best) best = x[r * m + j];", "best = fmaxf(best, x[r * m + j]);"),
    ("double best = -DBL_MAX;", "if (x[r * m + j] > best) best = x[r * m + j];", "best = fmax(best, x[r * m + j]);"),
])
def test_a_compare_and_select_on_a_float_becomes_fmaxf_or_fminf(decl: str, loop_body: str, expected: str) -> None:
    assert selects(decl, loop_body) == expected


def test_a_compare_and_select_on_integers_of_the_same_type_becomes_max() -> None:
    params = "const int* x, int* y, int r, int m"
    assert selects("int best = 0;", "if (x[r * m + j] > best) best = x[r * m + j];", params) == \
        "best = max(best, x[r * m + j]);"
    assert selects("int best = x[r * m];", "if (best > x[r * m + j]) best = x[r * m + j];", params) == \
        "best = min(best, x[r * m + j]);"  # an integer is never NaN: any start will do
    unsigned = "const unsigned* x, int* y, int r, int m"  # mixed types: the comparison is unsigned, max() would not say so
    kept = "if (x[r * m + j] > best) best = x[r * m + j];"
    assert selects("int best = 0;", kept, unsigned) == kept


@pytest.mark.parametrize("decl, loop_body", [
    ("float best = x[r * m];", "if (x[r * m + j] > best) best = x[r * m + j];"),  # a NaN start would stick
    ("float best = -INFINITY;", "if (x[r * m + j] > best) best = x[r * m + j]; else best = 0.0f;"),
    ("float best = -INFINITY;", "if (x[r * m + j] > best) { best = x[r * m + j]; r = j; }"),  # an argmax
    ("float best = -INFINITY;", "best = (best > x[r * m + j]) ? best : x[r * m + j];"),  # a NaN x wins here
    ("float best = -INFINITY;", "if (x[r * m + j] > best) best = x[r * m + j + 1];"),  # another value
    ("float best = -INFINITY;", "if (x[r * m + j] > best) best = y[j]++;"),  # a side effect
    ("float best = -INFINITY;", "{ if (x[r * m + j] > best) best = x[r * m + j]; best = y[j]; }"),  # a NaN may come in
    ("float best = -INFINITY;", "if (x[r * m + j] != best) best = x[r * m + j];"),
])
def test_a_select_that_is_not_a_max_or_could_see_a_nan_stays(decl: str, loop_body: str) -> None:
    assert selects(decl, loop_body) == loop_body


PMPP_CONV = (
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    float acc = 0;\n    int start = i - (m / 2);\n"
    "    for (int j = 0; j < m; j++) {\n        if (start + j >= 0 && start + j < n) {\n"
    "            acc += x[start + j];\n        }\n    }\n    if (i < n) y[i] = acc;")


@pytest.mark.parametrize("before, after", [
    # PMPP's 1D convolution: the taps run for every thread, only the store is guarded
    (PMPP_CONV,
     "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        float acc = 0;\n"
     "        int start = i - (m / 2);\n        for (int j = 0; j < m; j++) {\n"
     "            if (start + j >= 0 && start + j < n) {\n                acc += x[start + j];\n"
     "            }\n        }\n        y[i] = acc;\n    }"),
    # the work under the same guard already: its `if` opens into the block
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    float acc = 0.0f;\n    if (i < n - m) {\n"
     "        for (int t = 0; t < m; ++t) acc += x[i + t];\n    }\n    if (i < n - m) {\n        y[i] = acc;\n    }",
     "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n - m) {\n        float acc = 0.0f;\n"
     "        for (int t = 0; t < m; ++t) acc += x[i + t];\n        y[i] = acc;\n    }"),
    # a declaration the guard reads stays before it, wherever it is
    ("    float acc = 0.0f;\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    for (int t = 0; t < m; ++t) acc += expf(x[i * m + t]);\n    if (i < n) y[i] = acc;",
     "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        float acc = 0.0f;\n"
     "        for (int t = 0; t < m; ++t) acc += expf(x[i * m + t]);\n        y[i] = acc;\n    }"),
])
def test_work_before_a_guarded_store_moves_under_its_guard(before: str, after: str) -> None:
    assert body(kernel(before)) == after


@pytest.mark.parametrize("lines", [
    # a store before the guard
    "    int i = threadIdx.x;\n    y[i + n] = 1.0f;\n    if (i < n) y[i] = 2.0f;",
    # a barrier, a return, an atomic or shared memory
    "    __shared__ float s[256];\n    int i = threadIdx.x;\n    s[i] = x[i];\n    __syncthreads();\n"
    "    float v = s[255 - i];\n    if (i < n) y[i] = v;",
    "    int i = threadIdx.x;\n    if (i == 0) return;\n    float v = x[i];\n    if (i < n) y[i] = v;",
    "    int i = threadIdx.x;\n    float v = x[i];\n    atomicAdd(y, v);\n    if (i < n) y[i] = v;",
    # the work changes what the guard reads
    "    int i = threadIdx.x;\n    int k = n;\n    float v = x[i];\n    k -= 1;\n    if (i < k) y[i] = v;",
    # a call that may write memory, or takes an address
    "    int i = threadIdx.x;\n    float v = helper(x, i);\n    if (i < n) y[i] = v;",
    "    int i = threadIdx.x;\n    float s, c;\n    sincosf(x[i], &s, &c);\n    if (i < n) y[i] = s + c;",
    # no loop: declarations alone are nothing a rule needs under the guard
    "    int i = threadIdx.x;\n    float v = expf(x[i]);\n    if (i < n) y[i] = v;",
    # the guarded statement stores nothing, or has an else
    "    int i = threadIdx.x;\n    float v = x[i];\n    if (i < n) v = 0.0f;",
    "    int i = threadIdx.x;\n    float v = x[i];\n    if (i < n) y[i] = v; else y[0] = v;",
])
def test_work_that_must_run_for_every_thread_stays(lines: str) -> None:
    got = body(kernel(lines))
    assert "if (i < n) {" not in got and "if (i < k) {" not in got, got


def test_a_guarded_block_that_would_declare_a_name_twice_stays() -> None:
    lines = ("    int i = threadIdx.x;\n    float v = 0.0f;\n    for (int t = 0; t < m; ++t) v += x[t];\n"
             "    if (i < n) {\n        float v = 1.0f;\n        y[i] = v;\n    }")
    assert "    float v = 0.0f;\n    for" in body(kernel(lines))


UPDATER = """__device__ void welford(float v, float& mean, float& m2, float& n)
{
    n += 1.0f;
    float delta = v - mean;
    mean += delta / n;
    m2 += delta * (v - mean);
}
"""


def test_an_update_helper_is_put_in_as_its_statements() -> None:
    """A loop's or an if's whole body gets braces; each value parameter a local of its own; the
    helper's local `delta`, a name the kernel uses, is renamed (and again at the second call)."""
    source = UPDATER + kernel("    float mean = 0.0f, m2 = 0.0f, c = 0.0f, delta = 1.0f;\n"
                              "    for (int j = 0; j < m; ++j)\n        welford(x[j] * delta, mean, m2, c);\n"
                              "    if (n > 0) welford(x[0], mean, m2, (c));\n    y[0] = mean + m2;")
    assert body(source) == (
        "float mean = 0.0f, m2 = 0.0f, c = 0.0f, delta = 1.0f;\n"
        "    for (int j = 0; j < m; ++j)\n        {\n            float cuopt_v = x[j] * delta;\n"
        "            c += 1.0f;\n            float delta_2 = cuopt_v - mean;\n            mean += delta_2 / c;\n"
        "            m2 += delta_2 * (cuopt_v - mean);\n        }\n"
        "    if (n > 0) {\n        float cuopt_v_2 = x[0];\n        c += 1.0f;\n        float delta_3 = cuopt_v_2 - mean;\n"
        "        mean += delta_3 / c;\n        m2 += delta_3 * (cuopt_v_2 - mean);\n    }\n    y[0] = mean + m2;")


def test_a_pointer_out_parameter_used_as_star_p_is_put_in() -> None:
    source = "__device__ void acc(float* s, float v) { *s += v; }\n" + \
        kernel("    float s = 0.0f;\n    for (int j = 0; j < m; ++j) acc(&s, x[j]);\n    y[0] = s;")
    assert body(source) == "float s = 0.0f;\n    for (int j = 0; j < m; ++j) {\n        s += x[j];\n    }\n    y[0] = s;"


@pytest.mark.parametrize("helper, call", [
    ("__device__ void upd(float v, float& s) { if (v > 0) return; s += v; }", "upd(x[0], s);"),  # a return
    ("__device__ void upd(float v, float& s) { for (int k = 0; k < 2; ++k) s += v; }", "upd(x[0], s);"),  # a loop
    ("__device__ void upd(float v, float* s) { s[0] += v; }", "upd(x[0], &s);"),  # a pointer used other than *s
    ("__device__ void upd(float v, float* s) { *s += v; }", "upd(x[0], y);"),  # a parameter for the pointer
    ("__device__ void upd(float v, float& s) { s += v; }\n__device__ void upd(int v, float& s) { s -= v; }",
     "upd(x[0], s);"),  # overloads
    ("__device__ float upd(float v, float& s) { s += v; return s; }", "upd(x[0], s);"),  # not void
    ("__device__ void upd(float v, float& s) { s += v; }", "upd(x[0], y[0]);"),  # an element for the reference
])
def test_other_helpers_stay_calls(helper: str, call: str) -> None:
    source = helper + "\n" + kernel(f"    float s = 0.0f;\n    {call}\n    y[1] = s;")
    assert call in body(source)


def test_a_helper_that_reads_a_name_the_kernel_declares_stays_a_call() -> None:
    """`scale` in the helper is the file's constant; put in, it would be the kernel's local."""
    source = ("__constant__ float scale = 2.0f;\n__device__ void upd(float v, float& s) { s += scale * v; }\n"
              + kernel("    float s = 0.0f, scale = 3.0f;\n    upd(x[0], s);\n    y[0] = s * scale;"))
    assert "upd(x[0], s);" in body(source)
    other = "__constant__ float gain = 2.0f;\n__device__ void upd(float v, float& s) { s += gain * fmaxf(v, 0.0f); }\n"
    assert body(other + kernel("    float s = 0.0f;\n    upd(x[0], s);\n    y[0] = s;")) == \
        "float s = 0.0f;\n    float cuopt_v = x[0];\n    s += gain * fmaxf(cuopt_v, 0.0f);\n    y[0] = s;"


TILE_ROWS = Launch((32, 8), (E.parse("cdiv(w, 32)"), E.parse("cdiv(h, 32)")))


def _tiled(lines: str) -> Context:
    source = ("__global__ void t(const float* x, float* y, int w, int h)\n{\n"
              "    int c = blockIdx.x * 32 + threadIdx.x;\n    int r = blockIdx.y * 32 + threadIdx.y;\n"
              f"{lines}\n}}\n")
    return normalize(Context(source.encode(), TILE_ROWS, "t"))


def test_a_tile_row_loop_is_one_row_per_thread_under_a_block_of_the_tile_rows() -> None:
    """The samples' `for (j = 0; j < TILE_DIM; j += BLOCK_ROWS)` under a TILE_DIM x BLOCK_ROWS block:
    the body at j = 0 (the term goes from each sum) under a TILE_DIM x TILE_DIM block."""
    work = _tiled("    for (int j = 0; j < 32; j += 8)\n        if (c < w && r + j < h)\n"
                  "            y[c * h + r + j] = 2.0f * x[(r + j) * w + c];")
    assert work.launch.block == (32, 32) and work.launch.grid == TILE_ROWS.grid
    text = work.source.decode()
    assert "for" not in text and "if (c < w && r < h)\n            y[c * h + r] = 2.0f * x[(r) * w + c];" in text


@pytest.mark.parametrize("lines", [
    # threadIdx.y or the counter on their own: which thread row runs which tile row shows
    "    for (int j = 0; j < 32; j += 8)\n        y[(r + j) * w + c] = x[(r + j) * w + c] * j;",
    "    for (int j = 0; j < 32; j += 8)\n        y[(r + j) * w + c] = x[threadIdx.y * w + c];",
    # blockDim.y, which the normal form would change
    "    for (int j = 0; j < 32; j += 8)\n        y[(r + j) * w + c] = x[(r + j) * w + c] + blockDim.y;",
    # not the whole tile, or a store before the loop that more threads would make
    "    for (int j = 0; j < 16; j += 8)\n        y[(r + j) * w + c] = x[(r + j) * w + c];",
    "    y[0] = 1.0f;\n    for (int j = 0; j < 32; j += 8)\n        y[(r + j) * w + c] = x[(r + j) * w + c];",
    # iterations that share something: a running value, a row another iteration wrote, a return
    "    float s = 0.0f;\n    for (int j = 0; j < 32; j += 8) {\n        s += x[(r + j) * w + c];\n"
    "        y[(r + j) * w + c] = s;\n    }",
    "    for (int j = 0; j < 32; j += 8)\n        y[(r + j) * w + c] = y[(r + j - 8) * w + c] + x[(r + j) * w + c];",
    "    for (int j = 0; j < 32; j += 8) {\n        if (r + j >= h) return;\n        y[(r + j) * w + c] = x[(r + j) * w + c];\n    }",
    # a barrier in the block
    "    for (int j = 0; j < 32; j += 8) {\n        __syncthreads();\n        y[(r + j) * w + c] = x[(r + j) * w + c];\n    }",
])
def test_a_tile_row_loop_whose_rows_are_told_apart_stays(lines: str) -> None:
    work = _tiled(lines)
    assert work.launch == TILE_ROWS and "for (int j = 0;" in work.source.decode()
