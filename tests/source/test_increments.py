"""The one reading of an increment (cuopt/source/increments.py)."""
from __future__ import annotations

import pytest

from cuopt.source.increments import increment
from cuopt.source.parse import parse


def _statement(code: str):
    return parse(f"void f() {{ {code} }}").root_node.named_children[0].child_by_field_name("body").named_children[0]


@pytest.mark.parametrize("code,expected", [
    ("i++;", ("i", "+", "1", 1)), ("++i;", ("i", "+", "1", 1)), ("i--;", ("i", "-", "1", -1)),
    ("--i;", ("i", "-", "1", -1)), ("i += s;", ("i", "+", "s", 1)), ("i -= 2;", ("i", "-", "2", -1)),
    ("i = i + blockDim.x * gridDim.x;", ("i", "+", "blockDim.x * gridDim.x", 1)),
    ("i = s + i;", ("i", "+", "s", 1)), ("i = i - 4;", ("i", "-", "4", -1)),
    ("s *= 2;", ("s", "*", "2", 1)), ("s <<= 1;", ("s", "<<", "1", 1)), ("s = 2 * s;", ("s", "*", "2", 1)),
    ("s /= 2;", ("s", "/", "2", -1)), ("s >>= 1;", ("s", ">>", "1", -1)), ("s = s >> 1;", ("s", ">>", "1", -1)),
    ("(i += 1);", ("i", "+", "1", 1)),
])
def test_increments(code: str, expected: tuple) -> None:
    inc = increment(_statement(code))
    assert inc is not None and (inc.counter, inc.op, inc.amount, inc.direction) == expected
    assert inc.additive == (inc.op in ("+", "-"))


@pytest.mark.parametrize("code", ["i = 4 - i;", "i = s / i;", "i = j + 1;", "a[i]++;", "i %= 2;", "i = i;",
                                  "x.f += 1;", "f(i);", "int i = 0;", "i = i < n;"])
def test_not_increments(code: str) -> None:
    assert increment(_statement(code)) is None


def test_an_expression_reads_as_its_statement_does() -> None:
    loop = _statement("for (int k = 0; k < n; k += 4) {}")
    inc = increment(loop.child_by_field_name("update"))
    assert inc is not None and (inc.counter, inc.amount) == ("k", "4")
