"""A macro's replacement text as an expression tree, and whether it may stand in for the macro's
use as a unit: textual replacement re-reads operators (`#define M n + 1` makes `2 * M` read
`2 * n + 1`), so a replacement is only analysed as a whole where no neighbour binds tighter."""
from __future__ import annotations

import functools

import tree_sitter as ts

from cuopt.source.parse import parse, text

_WRAPPER = "void __cuopt_macro() {{ return {}; }}"
_BINARY = {"*": 13, "/": 13, "%": 13, "+": 12, "-": 12, "<<": 11, ">>": 11, "<=>": 10,
           "<": 10, "<=": 10, ">": 10, ">=": 10, "==": 9, "!=": 9, "&": 8, "^": 7, "|": 6,
           "&&": 5, "||": 4}
_CONDITIONAL, _ASSIGNMENT, _COMMA = 3, 2, 1
_UNARY = 14
_PRIMARY = 16
_UNARY_TYPES = {"unary_expression", "pointer_expression", "cast_expression", "sizeof_expression",
                "update_expression"}
_ANY = {"parenthesized_expression", "return_statement", "expression_statement", "condition_clause",
        "for_statement", "init_declarator"}
_LISTS = {"argument_list", "subscript_argument_list", "initializer_list"}


@functools.lru_cache(maxsize=1024)
def expansion(body: str) -> ts.Node | None:
    """The expression `body` parses to; None when it is no single expression (`float`, `{`, empty)."""
    if not body.strip():
        return None
    tree = parse(_WRAPPER.format(body))
    if tree.root_node.has_error:
        return None
    fn = tree.root_node.named_children[0]
    body_node = fn.child_by_field_name("body")
    statement = body_node.named_children[0] if body_node is not None and body_node.named_children else None
    if statement is None or statement.type != "return_statement" or not statement.named_children:
        return None
    return statement.named_children[0]


def fits(use: ts.Node, replacement: ts.Node) -> bool:
    """Whether `replacement`, put where `use` is, parses as one operand there."""
    return precedence(replacement) >= _required(use)


def precedence(node: ts.Node) -> int:
    """How tightly the expression's top operator binds (higher: tighter)."""
    t = node.type
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        return _BINARY.get(text(op), 0) if op is not None else 0
    if t == "conditional_expression":
        return _CONDITIONAL
    if t == "assignment_expression":
        return _ASSIGNMENT
    if t == "comma_expression":
        return _COMMA
    if t in _UNARY_TYPES:
        return _UNARY
    return _PRIMARY


def _required(use: ts.Node) -> int:
    """The least precedence an expression needs to be one operand where `use` is."""
    parent = use.parent
    if parent is None or parent.type in _ANY:
        return 0
    if parent.type in _LISTS:
        return _COMMA + 1
    if parent.type == "binary_expression":
        op = parent.child_by_field_name("operator")
        p = _BINARY.get(text(op), _PRIMARY) if op is not None else _PRIMARY
        return p if parent.child_by_field_name("left") == use else p + 1
    if parent.type == "conditional_expression":
        return 0 if parent.child_by_field_name("consequence") == use else _CONDITIONAL + 1
    if parent.type in _UNARY_TYPES:
        return _UNARY
    return _PRIMARY
