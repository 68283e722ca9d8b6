"""Accessor macros: `#define A(i, j) a[(i) * lda + (j)]`, used as `A(row, k)` for an element of an
array, read or written. Code ported from Fortran and BLAS-style code spells every access so; the
analysis sees subscripts, so such calls are put in as the subscript they expand to (the
preprocessor's own substitution, so the text means what the compiler compiles). `without_accessors`
also puts in index helpers' calls and initializes locals declared first, for `cuopt init`."""
from __future__ import annotations

from collections.abc import Callable

import tree_sitter as ts

from cuopt.source.aliases import builtin_aliases
from cuopt.source.declarations import single_assignments
from cuopt.source.helpers import helper_calls
from cuopt.source.kernels import Kernel, instantiate, load
from cuopt.source.macro_expr import expansion
from cuopt.source.model import analyze
from cuopt.source.parse import root_of, text, walk


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


def without_accessors(kernel: Kernel) -> Kernel:
    """The kernel with its accessor macro calls put in as subscripts, then its index helpers' calls
    as the expressions they return (cuopt/source/helpers.py), then locals declared first given their
    sole assignment as initializer (cuopt/source/declarations.py), then built-in aliases put in
    (cuopt/source/aliases.py); the same kernel when none applies. Lines stay where they were."""
    for find in (accessor_calls, helper_calls, single_assignments, _aliases):
        kernel = _substituted(kernel, find)
    return kernel


def _aliases(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    return builtin_aliases(kernel, analyze(kernel))


def _substituted(kernel: Kernel, find: Callable[[Kernel], list[tuple[ts.Node, str]]]) -> Kernel:
    """`kernel` with each node `find` gives replaced by its text."""
    calls = find(kernel)
    if not calls:
        return kernel
    root = root_of(kernel.node)
    assert root.text is not None
    # the file as parsed: the root starts after leading blank lines, which keep the lines where they were
    source = b"\n" * root.start_point.row + b" " * root.start_point.column + root.text
    shift = len(source) - len(root.text) - root.start_byte
    for call, subscript in sorted(calls, key=lambda c: c[0].start_byte, reverse=True):
        source = source[:call.start_byte + shift] + subscript.encode() + source[call.end_byte + shift:]
    plain = load(source, kernel.macros).kernel(kernel.name)
    if plain is None:
        return kernel
    return instantiate(plain, kernel.instantiation) if kernel.instantiation is not None else plain
