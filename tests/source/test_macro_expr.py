"""Macro replacements as expression trees, and where one reads as a single operand."""
from __future__ import annotations

import pytest

from cuopt.source.macro_expr import expansion, fits
from cuopt.source.parse import parse, walk


def use_of(code: str, name: str = "M"):
    tree = parse(f"void f() {{ int r = {code}; }}")
    node = next(n for n in walk(tree.root_node) if n.type == "identifier" and n.text == name.encode())
    return tree, node


@pytest.mark.parametrize("code, body, ok", [
    ("2 * M", "n + 1", False),      # reads 2 * n + 1
    ("M * 2", "n + 1", False),      # n + 1 * 2
    ("M + 2", "n + 1", True),
    ("2 - M", "n + 1", False),      # 2 - n + 1
    ("M - 2", "n - 1", True),       # left-associative: n - 1 - 2
    ("i < M", "n + 1", True),
    ("2 * M", "(n + 1)", True),
    ("2 * M", "n", True),
    ("-M", "n * 2", False),
    ("-M", "-n", True),
    ("a[M]", "i * 2 + j", True),
    ("M", "a ? b : c", True),
    ("M + 1", "a ? b : c", False),
    ("g(M, 1)", "a, b", False),
])
def test_fits(code: str, body: str, ok: bool) -> None:
    tree, use = use_of(code)
    replacement = expansion(body)
    assert replacement is not None
    assert fits(use, replacement) is ok


def test_expansion_of_non_expressions() -> None:
    assert expansion("") is None and expansion("float") is None and expansion("{") is None
    assert expansion("((i) * NJ + (j))").type == "parenthesized_expression"
