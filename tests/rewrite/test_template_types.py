"""Template kernels whose element type is a type parameter (`const T* x`): rules read `T` as the
instantiation's type, and a rewrite that spells code for that type pins the template to it."""
from __future__ import annotations

import re

import pytest

from cuopt.evaluate.compile import CompileError, compile_kernel
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine

from tests.conftest import ROOT, requires_nvcc
from tests.rewrite.test_rules import RULES, _launch

RULES_DIR = ROOT / "rules"

PIN = ('static_assert(sizeof(T) == sizeof(float) && (T)0.5 == (float)0.5 && ((T)-1 < (T)0) == ((float)-1 < (float)0), '
       '"cuopt rewrote {name} for T = float");')

ROWS = """\
template <typename T>
__global__ void row_max(const T* x, T* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        T m = x[r * cols];
        for (int c = 1; c < cols; ++c) m = max(m, x[r * cols + c]);
        out[r] = m;
    }
}
"""
CONV = (RULES_DIR / "window" / "cases" / "template_conv.cu").read_text()  # conv1d_t, instantiated for float
ROWS_2D = """\
template <typename T>
__global__ void diff_rows(const T* a, T* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y >= 1 && y < h - 1) {
        out[y * w + x] = a[(y + 1) * w + x] - 2 * a[y * w + x] + a[(y - 1) * w + x];
    }
}
"""
MATMUL = (RULES_DIR / "register-tile" / "cases" / "matmul_template.cu").read_text()  # matmul_t, instantiated for float
HISTOGRAM = """\
template <typename T>
__global__ void histogram(const int* keys, T* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[keys[i] & 255], (T)1);
}
"""
DOT = """\
template <typename T>
__global__ void dot(const T* a, const T* b, T* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, a[i] * b[i]);
}
"""
LINE = {"block": [256], "grid": ["cdiv(n, block.x)"]}
GRID_2D = {"block": [16, 16], "grid": ["cdiv(w, block.x)", "cdiv(h, block.y)"]}
MATMUL_GRID = {"block": [16, 16], "grid": ["cdiv(N, block.x)", "cdiv(M, block.y)"]}
# rule, kernel source, launch, and whether its rewrites spell code for T's type (and pin it)
CASES = [
    ("row-parallel", ROWS, {"block": [256], "grid": ["cdiv(rows, block.x)"]}, True),
    ("window", CONV, {"block": [256], "grid": ["cdiv(n - k + 1, block.x)"]}, True),
    ("stream", ROWS_2D, GRID_2D, True),
    ("register-tile", MATMUL, MATMUL_GRID, True),
    ("smem-tile", MATMUL, MATMUL_GRID, False),  # the tiles are declared `T`: every instantiation stays right
    ("privatize", HISTOGRAM, LINE, True),
    ("warp-atomic", DOT, LINE, True),
]


def _name(source: str) -> str:
    return source.split("__global__ void ")[1].split("(")[0]


def _context(source: str, launch: dict) -> Context:
    """The kernel of `source` as its float instantiation, made explicit where the source does not."""
    name = _name(source)
    if "template __global__" not in source:
        source = f"{source}\ntemplate __global__ void {name}<float>{_abi(source)};\n"
    return Context(source.encode(), _launch(launch), f"{name}<float>")


def _offers(source: str, rule: str, launch: dict) -> list:
    refusals: list = []
    offers = Engine(RULES).offers(_context(source, launch), only={rule}, refusals=refusals)
    assert offers, [r.reason for r in refusals]
    return offers


def _unplaced(action_id: str) -> str:
    """An action id without its line and column (the pin is a line more)."""
    return re.sub(r"@\d+:\d+", "", action_id)


def _abi(source: str) -> str:
    params = source.split("(", 1)[1].split(")", 1)[0]
    return "(" + params.replace("T*", "float*").replace("(T)", "(float)").replace("T ", "float ") + ")"


@pytest.mark.parametrize("rule,source,launch,pinned", CASES, ids=[c[0] for c in CASES])
def test_a_template_element_type_is_read_as_the_instantiations(rule: str, source: str, launch: dict,
                                                                pinned: bool) -> None:
    name = _name(source)
    for offer in _offers(source, rule, launch):
        got = offer.result.source.decode()
        assert got.count(PIN.format(name=name)) == (1 if pinned else 0), got


def test_a_plain_kernel_gets_no_pin() -> None:
    plain = CONV.split("template __global__")[0].replace("template <typename T>\n", "").replace("T", "float")
    ctx = Context(plain.encode(), _launch({"block": [256], "grid": ["cdiv(n - k + 1, block.x)"]}), "conv1d_t")
    offers = Engine(RULES).offers(ctx, only={"window"})
    assert offers and not any("static_assert" in o.result.source.decode() for o in offers)


@pytest.mark.parametrize("rule,source,launch,pinned", CASES, ids=[c[0] for c in CASES])
def test_a_pinned_kernel_keeps_its_rewrites_and_one_pin(rule: str, source: str, launch: dict, pinned: bool) -> None:
    """The pin is no statement to the rules, and rewrites that rebuild the body keep it."""
    name = _name(source)
    first = _offers(source, rule, launch)[0].result
    plain = Engine(RULES).offers(_context(source, launch))
    again = Engine(RULES).offers(_context(source.replace("{\n", "{\n    " + PIN.format(name=name) + "\n", 1), launch))
    assert sorted(_unplaced(o.action.id) for o in again) == sorted(_unplaced(o.action.id) for o in plain)
    for offer in again:
        assert offer.result.source.decode().count(PIN.format(name=name)) == 1, offer.action.id
    if pinned:
        assert PIN.format(name=name) in first.source.decode()


@requires_nvcc
def test_the_pin_compiles_for_its_type_and_names_itself_for_another() -> None:
    variant = _offers(CONV, "window", {"block": [256], "grid": ["cdiv(n - k + 1, block.x)"]})[0].result.source.decode()
    compile_kernel(variant, "conv1d_t<float>")
    with pytest.raises(CompileError, match="cuopt rewrote conv1d_t for T = float"):
        compile_kernel(variant, "conv1d_t<double>")  # appends its explicit instantiation


def test_a_rewrite_that_would_pin_a_type_the_file_also_instantiates_otherwise_is_refused() -> None:
    source = CONV.replace("template __global__ void conv1d_t<float>",
                          "template __global__ void conv1d_t<double>(const double*, const double*, double*, int, int);\n"
                          "template __global__ void conv1d_t<float>")
    refusals: list = []
    offers = Engine(RULES).offers(_context(source, {"block": [256], "grid": ["cdiv(n - k + 1, block.x)"]}),
                                  only={"window", "unroll"}, refusals=refusals)
    assert offers and all(o.action.rule == "unroll" for o in offers)  # unroll spells nothing for T
    assert any("reads T as float, but the file also instantiates conv1d_t<double>" in r.reason for r in refusals)
