"""Static types of a kernel's names and expressions (cuopt/source/exprtypes.py)."""
from __future__ import annotations

import pytest

from cuopt.source.kernels import load
from cuopt.source.model import analyze
from cuopt.source.parse import text, walk
from cuopt.source.preprocess import macros_of

_KERNEL = """#define WIN 4
#define UWIN 4u
#define HALF (WIN / 2)
#define BYTES sizeof(float)
__global__ void k(const float* x, float* y, int n, unsigned m, long long big, size_t count) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int64_t wide = i;
    unsigned int u = i;
    float f = x[0];
    float4 v = reinterpret_cast<const float4*>(x)[0];
    if ({cond}) y[i] = f;
}}
"""


def _condition(cond: str, tmp_path):
    source = _KERNEL.format(cond=cond).encode()
    kernel = load(source, macros_of(source, tmp_path / "k.cu")).kernels[0]
    node = next(n for n in walk(kernel.body) if n.type == "if_statement").child_by_field_name("condition")
    return analyze(kernel).types, node.named_children[0]


@pytest.mark.parametrize("cond", ["i + WIN <= n", "wide < big", "i + HALF < n", "(long)u < n", "i - 1 >= -n",
                                  "i + 0x10 < n"])
def test_signed_integer_expressions(cond: str, tmp_path) -> None:
    types, node = _condition(cond, tmp_path)
    assert all(types.signed(node.child_by_field_name(f)) for f in ("left", "right"))


@pytest.mark.parametrize("cond", ["i + UWIN <= n", "u < n", "i < m", "i < count", "threadIdx.x < n", "i < BYTES",
                                  "i + 1u < n", "(unsigned)i < n", "x[i] < n", "i + f < n"])
def test_an_unsigned_or_unknown_value_makes_the_expression_not_signed(cond: str, tmp_path) -> None:
    types, node = _condition(cond, tmp_path)
    assert not all(types.signed(node.child_by_field_name(f)) for f in ("left", "right"))


@pytest.mark.parametrize("cond,floats", [("f / 2.0f > 0.0f", True), ("x[i] * f > v.x", True),
                                         ("f / 2.0 > 0.0f", False), ("i / n > 0.0f", False)])
def test_floats_are_proved_from_declarations_literals_and_components(cond: str, floats: bool, tmp_path) -> None:
    types, node = _condition(cond, tmp_path)
    assert types.is_float(node.child_by_field_name("left")) == floats


def test_the_innermost_declaration_before_a_use_gives_its_type() -> None:
    kernel = load(b"__global__ void k(float* y, int n) {\n"
                  b"    float a = 1.0f;\n    { int a = 2; y[0] = a; }\n    y[1] = a;\n}\n").kernels[0]
    types = analyze(kernel).types
    uses = [n for n in walk(kernel.body) if n.type == "identifier" and text(n) == "a"
            and n.parent.type == "assignment_expression"]
    assert [types.declared(u) for u in uses] == [("int", 0), ("float", 0)]
    assert types.declared(next(n for n in walk(kernel.body) if text(n) == "y")) == ("float", 1)
