"""Loop macros: `#define CUDA_KERNEL_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x;
i < (n); i += blockDim.x * gridDim.x)`, used as `CUDA_KERNEL_LOOP(i, n) { ... }` (Caffe, PyTorch,
Detectron and the code that copied them). The parser reads such a use as a function definition
nested in the kernel; the analysis needs the loop, so the macro's name and arguments are put in as
the `for` header they expand to (the preprocessor's own substitution, so the text means what the
compiler compiles)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.parse import parse, text, walk
from cuopt.source.templates import split_args

_WRAPPER = "void __cuopt_loop() {{ {} {{}} }}"
_DEPTH = 4  # a loop macro defined through others (`CUDA_KERNEL_LOOP` through `CUDA_KERNEL_LOOP_TYPE`)


def loop_macro_headers(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(use, the `for` header it expands to) for each `NAME(args) { ... }` in the kernel's body where
    NAME is a function-like macro whose replacement is a `for` loop's header."""
    if not kernel.macros:
        return []
    out = []
    for node in walk(kernel.body):
        declarator = node.child_by_field_name("declarator") if node.type == "function_definition" else None
        if declarator is None or declarator.type != "function_declarator":
            continue
        header = _expanded(kernel, text(declarator))
        if header is not None:
            out.append((declarator, header))
    return out


def _expanded(kernel: Kernel, use: str) -> str | None:
    """`use` (`NAME(args)`) substituted until it is a `for` header; None when it does not become one."""
    for _ in range(_DEPTH):
        name, _, rest = use.partition("(")
        if not rest.rstrip().endswith(")") or kernel.macros.function_like(name.strip()) is None:
            return None
        args = split_args(rest.rstrip()[:-1], "([{", ")]}")
        use = " ".join((kernel.macros.substitute(name.strip(), args) or "").split())  # one line, as the file's use
        if _is_for_header(use):
            return use
    return None


def _is_for_header(header: str) -> bool:
    """Whether `header {}` is exactly one `for` loop with that empty body."""
    if not header.startswith("for"):
        return False
    tree = parse(_WRAPPER.format(header))
    if tree.root_node.has_error:
        return False
    body = tree.root_node.named_children[0].child_by_field_name("body")
    loops = body.named_children if body is not None else []
    inner = loops[0].child_by_field_name("body") if len(loops) == 1 and loops[0].type == "for_statement" else None
    return inner is not None and inner.type == "compound_statement" and not inner.named_children
