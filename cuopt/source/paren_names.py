"""Parenthesized names read as C reads them: `(y) + x` is the sum of y and x, but the parser, which
cannot tell a type from a name, reads a cast of `+x` to a type `y` (so `(y) + x * h` reads as
`((y)(+x)) * h`). Where `y` names a variable (a local, a parameter, a loop counter or an object-like
macro) no such type exists, and the parentheses go; a macro's replacement text, which the analysis
reads but no rewrite edits, is read again without them (`KernelModel.poly`)."""
from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.parse import text, walk

_NAME = re.compile(r"[A-Za-z_]\w*")


def misread_name(cast: ts.Node, is_variable: Callable[[str], bool]) -> str | None:
    """The variable `cast` parenthesizes where the parser read a name as a cast's type; else None."""
    if cast.type != "cast_expression" or cast.child_by_field_name("value") is None:
        return None
    name = text(cast.child_by_field_name("type")).strip()
    return name if _NAME.fullmatch(name) and is_variable(name) else None


def paren_names(kernel: Kernel, is_variable: Callable[[str], bool]) -> list[tuple[ts.Node, str]]:
    """(token, "") for the parentheses around each name of a variable the parser read as a cast's type."""
    out: list[tuple[ts.Node, str]] = []
    for node in walk(kernel.body):
        if misread_name(node, is_variable) is not None:
            type_ = node.child_by_field_name("type")
            opening, closing = type_.prev_sibling, type_.next_sibling
            if opening is not None and closing is not None and text(opening) == "(" and text(closing) == ")":
                out += [(opening, ""), (closing, "")]
    return out
