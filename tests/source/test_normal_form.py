"""One normal form for the rules and for `cuopt init` (cuopt/source/normal_form.py): one list of
steps, the readers differing only by the options they ask for."""
from __future__ import annotations

from cuopt.source.kernels import load
from cuopt.source.model import analyze
from cuopt.source.normal_form import FOR_INFERENCE, STEPS, Reading, normal_kernel, normal_source, steps_for
from cuopt.source.parse import text

RULES = Reading(block=(256,), dims=1)

STAGED = b"""__global__ void conv(const float* x, const float* w, float* y, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int j = 0; j < m; ++j) {
        float v = x[i + j];
        acc += v * w[j];
    }
    if (i < n) y[i] = acc;
}
"""


def test_each_step_is_named_once_and_the_readers_take_the_steps_their_options_allow() -> None:
    names = [s.name for s in STEPS]
    assert len(names) == len(set(names)) == 25
    assert [s.name for s in steps_for(RULES)] == names
    left_out = set(names) - {s.name for s in steps_for(FOR_INFERENCE)}
    assert left_out == {"store-guards", "loaded-once", "tile-rows"}  # loads moved, a launch changed
    assert {s.name for s in steps_for(Reading())} == set(names) - {"tile-rows"}  # no block, no retiling


def test_the_rules_read_loads_under_the_guard_and_init_reads_them_where_the_kernel_makes_them() -> None:
    ruled = normal_source(STAGED, load(STAGED).macros, "conv", RULES).source.decode()
    assert "if (i < n) {" in ruled and "acc += x[i + j] * w[j];" in ruled  # moved, and the load put in
    read = normal_kernel(load(STAGED).kernels[0])
    assert read is load(STAGED).kernels[0]  # nothing init reads differently: every load stays unguarded
    [load_] = [a for a in analyze(read).accesses if a.array == "x"]
    assert load_.line == 6


def test_init_keeps_every_line_where_the_user_wrote_it() -> None:
    source = b"""__device__ void bump(float v, float& total, int& count)
{
    total += v;
    count += 1;
}
__global__ void k(const float* x, float* y, int n)
{
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    bool inside = i < n;
    float total = 0.0f;
    int count = 0;
    int k;
    k = 0;
    while (k < 4) {
        bump(x[i * 4 + k], total, count);
        k++;
    }
    if (inside) y[i] = total / count;
}
"""
    kernel = load(source).kernel("k")
    read = normal_kernel(kernel)
    lines = text(read.node).split("\n")
    assert len(lines) == len(text(kernel.node).split("\n"))
    assert lines[3].strip() == "int i = blockIdx.x * blockDim.x + threadIdx.x;"  # the alias put in
    assert lines[9].strip().startswith("for (int k = 0; k < 4; ++k) {")  # the counted while loop
    assert lines[10].strip() == "float cuopt_v = x[i * 4 + k]; total += cuopt_v; count += 1;"  # the helper, one line
    assert lines[13].strip() == "if (i < n) y[i] = total / count;"  # the guard through its mask
    assert [lp.var for lp in analyze(read).loops] == ["k"]
    assert analyze(read).accesses[0].line == kernel.line + 10


def test_init_reads_nested_counted_while_loops_as_for_loops() -> None:
    """Both loops of a nest, the outer one too (init read only the innermost as a `for` loop)."""
    source = b"""__global__ void k(const float* x, float* y, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    int r = 0;
    while (r < m) {
        int c = 0;
        while (c < n) {
            s += x[r * n + c];
            c++;
        }
        r++;
    }
    if (i < n) y[i] = s;
}
"""
    kernel = load(source).kernel("k")
    loops = analyze(normal_kernel(kernel)).loops
    assert sorted((lp.var, lp.bound is not None) for lp in loops) == [("c", True), ("r", True)]
    ruled = normal_source(source, kernel.macros, "k", RULES).source.decode()
    assert "for (int r = 0; r < m; ++r) {" in ruled and "for (int c = 0; c < n; ++c) {" in ruled
    assert "r++" not in ruled and "c++" not in ruled and "while" not in ruled


def test_a_kernel_no_step_changes_is_the_same_source() -> None:
    source = b"__global__ void k(float* y, int n)\n{\n    int i = threadIdx.x;\n    if (i < n) y[i] = 0.0f;\n}\n"
    assert normal_source(source, load(source).macros, "k", RULES).source == source
    kernel = load(source).kernels[0]
    assert normal_kernel(kernel) is kernel
