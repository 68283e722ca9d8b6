"""How many values an index can take when its type or arithmetic bounds it, whatever the sizes:
`bins[data[i]]` of `unsigned char` data, `bins[v & 255]`, `bins[h % 1024]`. `cuopt init` sizes such
buffers by it (cuopt/spec/reach.py), and `privatize` sizes its shared copy (rewrite/transforms)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.model import KernelModel
from cuopt.source.parse import text, unparen
from cuopt.spec.dtypes import c_type, int_range

_MAX_DEPTH = 8


def index_count(model: KernelModel, node: ts.Node, depth: int = 0) -> int | None:
    """The number of values `node` takes, from 0: `e & M` (M a number: M + 1), `e % C` (C a
    positive number: C), a load, a local or a cast of an unsigned 8- or 16-bit type (256, 65536), a
    local that is never reassigned, through its value; None otherwise."""
    node = unparen(node)
    if depth > _MAX_DEPTH:
        return None
    if node.type == "binary_expression" and text(node.child_by_field_name("operator")) in ("&", "%"):
        right, left = node.child_by_field_name("right"), node.child_by_field_name("left")
        literal = right if right.type == "number_literal" else left if left.type == "number_literal" else None
        value = _integer(literal) if literal is not None else None
        if value is None or text(node.child_by_field_name("operator")) == "%" and (literal is left or value <= 0):
            return None
        return value + 1 if text(node.child_by_field_name("operator")) == "&" else value
    if node.type == "cast_expression":
        return _unsigned_values(text(node.child_by_field_name("type")))
    if node.type == "subscript_expression":
        param = model.kernel.param(text(node.child_by_field_name("argument")))
        return _unsigned_values(param.element) if param is not None and param.pointer == 1 else None
    local = model.locals.get(text(node)) if node.type == "identifier" else None
    if local is None:
        return None
    by_type = _unsigned_values(local.type)
    if by_type is not None or local.writes or local.init is None:
        return by_type
    return index_count(model, local.init, depth + 1)


def _integer(node: ts.Node) -> int | None:
    """A decimal or hexadecimal integer literal's value (a `u` suffix allowed)."""
    raw = text(node).rstrip("uUlL")
    try:
        return int(raw, 0) if raw else None
    except ValueError:
        return None


def _unsigned_values(c_name: str) -> int | None:
    """256 for `unsigned char` / `uint8_t`, 65536 for 16-bit unsigned types; None for others."""
    found = c_type(c_name.replace("const", "").strip())
    if found is None or found.width != 1 or found.dtype not in ("uint8", "uint16"):
        return None
    return int_range(found.dtype)[1] + 1
