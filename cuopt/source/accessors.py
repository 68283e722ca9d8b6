"""Accessor macros: `#define A(i, j) a[(i) * lda + (j)]`, used as `A(row, k)` for an element of an
array, read or written. Code ported from Fortran and BLAS-style code spells every access so; the
analysis sees subscripts, so such calls are put in as the subscript they expand to (the
preprocessor's own substitution, so the text means what the compiler compiles)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.macro_expr import expansion
from cuopt.source.parse import text, walk


def accessor_calls(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(call, the subscript it expands to) for each call in the kernel's body of a function-like
    macro whose replacement is one subscript of a named array, `name[...]` (parenthesized or not)."""
    out = []
    for call in walk(kernel.body):
        fn = call.child_by_field_name("function") if call.type == "call_expression" else None
        args = call.child_by_field_name("arguments") if fn is not None else None
        if fn is None or fn.type != "identifier" or args is None or kernel.macros.function_like(text(fn)) is None:
            continue
        body = kernel.macros.substitute(text(fn), [text(a) for a in args.named_children])
        tree = expansion(body) if body is not None else None
        while tree is not None and tree.type == "parenthesized_expression" and tree.named_child_count == 1:
            tree = tree.named_children[0]
        if tree is not None and tree.type == "subscript_expression" \
                and tree.child_by_field_name("argument").type == "identifier":
            out.append((call, text(tree)))
    return out
