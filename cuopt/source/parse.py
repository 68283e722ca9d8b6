"""tree-sitter-cuda parsing: the language, parse trees, syntax errors, node text."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

import tree_sitter as ts
import tree_sitter_cuda


@lru_cache(maxsize=1)
def language() -> ts.Language:
    return ts.Language(tree_sitter_cuda.language())


@lru_cache(maxsize=None)
def query(source: str) -> ts.Query:
    """A compiled tree-sitter query (cached by its text)."""
    return ts.Query(language(), source)


def captures(q: str, node: ts.Node) -> dict[str, list[ts.Node]]:
    """Run query `q` under `node`; captures by name."""
    return ts.QueryCursor(query(q)).captures(node)


def matches(q: str, node: ts.Node) -> list[tuple[int, dict[str, list[ts.Node]]]]:
    return ts.QueryCursor(query(q)).matches(node)


def parse(source: bytes | str) -> ts.Tree:
    if isinstance(source, str):
        source = source.encode()
    return ts.Parser(language()).parse(source)


@dataclass(frozen=True)
class SyntaxIssue:
    line: int  # 1-based
    column: int  # 1-based
    message: str
    start_byte: int
    end_byte: int


def syntax_issues(tree: ts.Tree) -> list[SyntaxIssue]:
    """ERROR and MISSING nodes, in source order."""
    out: list[SyntaxIssue] = []
    if not tree.root_node.has_error:
        return out
    for node in walk(tree.root_node, descend=lambda n: n.has_error):
        if node.is_missing:
            msg = f"syntax error: missing {node.type!r}"
        elif node.is_error:
            snippet = node.text.decode(errors="replace").split("\n")[0][:40] if node.text else ""
            msg = f"syntax error near {snippet!r}" if snippet else "syntax error"
        else:
            continue
        out.append(SyntaxIssue(node.start_point.row + 1, node.start_point.column + 1, msg,
                               node.start_byte, node.end_byte))
    return out


def walk(node: ts.Node, descend=lambda n: True) -> Iterator[ts.Node]:
    """Pre-order traversal; children are visited only when `descend(node)` is true."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if descend(n):
            stack.extend(reversed(n.children))


def text(node: ts.Node) -> str:
    return node.text.decode() if node.text is not None else ""


def operator_of(node: ts.Node) -> str:
    """The operator of a binary, unary, assignment, update or field expression (`+`, `+=`, `++`, `->`);
    "" for a node that has none."""
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""


def unparen(node: ts.Node) -> ts.Node:
    """`node` without enclosing parentheses."""
    while node.type == "parenthesized_expression" and len(node.named_children) == 1:
        node = node.named_children[0]
    return node


_WINS = {">": "max", ">=": "max", "<": "min", "<=": "min"}  # `v OP m`: v wins
_MIRRORED = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


def beats(cond: ts.Node, value: ts.Node, acc: str) -> tuple[str, bool] | None:
    """("max" or "min", strict) when the comparison `cond` tests that `value` beats `acc` (`v > m`,
    `m < v`, `v >= m`, ...: "max"; the `<` forms: "min"), parentheses and spaces aside; else None."""
    cond = unparen(cond)
    if cond.type != "binary_expression":
        return None
    op = text(cond.child_by_field_name("operator"))
    left, right = (re.sub(r"\s+", "", text(unparen(cond.child_by_field_name(f)))) for f in ("left", "right"))
    v, m = re.sub(r"\s+", "", text(unparen(value))), acc
    if (left, right) == (m, v):
        op = _MIRRORED.get(op, "")
    elif (left, right) != (v, m):
        return None
    return (_WINS[op], len(op) == 1) if op in _WINS else None


def function_name(fn: ts.Node) -> str:
    """The unqualified name a `function_definition` defines ("" when it has none)."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    name = decl.child_by_field_name("declarator") if decl is not None else None
    return text(name).split("::")[-1] if name is not None else ""


def root_of(node: ts.Node) -> ts.Node:
    """The translation unit `node` belongs to."""
    while node.parent is not None:
        node = node.parent
    return node


def line_of(node: ts.Node) -> int:
    return node.start_point.row + 1


def within(node: ts.Node, container: ts.Node) -> bool:
    """`node` lies inside `container` (or is it)."""
    return container.start_byte <= node.start_byte and node.end_byte <= container.end_byte


def assigned(node: ts.Node) -> ts.Node | None:
    """What `node` assigns or steps: the left side of `x = e` / `x op= e`, the operand of `x++`."""
    if node.type == "assignment_expression":
        return node.child_by_field_name("left")
    return node.child_by_field_name("argument") if node.type == "update_expression" else None


def assigned_target(node: ts.Node) -> str | None:
    """The plain name `node` assigns or steps (`x = e`, `x += e`, `++x`), else None."""
    target = assigned(node)
    return text(target) if target is not None and target.type == "identifier" else None


def declared_names(declaration: ts.Node) -> set[str]:
    """The names a declaration introduces (`int i, j = 0;` -> {"i", "j"})."""
    return {text(d.child_by_field_name("declarator") or d) for d in declaration.children_by_field_name("declarator")}


def in_subscript(node: ts.Node) -> bool:
    """Whether `node` is a subscript, or a term of one (through arithmetic, parentheses and casts)."""
    parent = node.parent
    while parent is not None and parent.type in ("binary_expression", "parenthesized_expression", "cast_expression"):
        parent = parent.parent
    return parent is not None and parent.type == "subscript_argument_list"


def assigns(node: ts.Node | None, var: str) -> ts.Node | None:
    """The right side of `var = e` (node or its only expression statement)."""
    if node is not None and node.type == "expression_statement" and node.named_children:
        node = node.named_children[0]
    if node is None or node.type != "assignment_expression" or text(node.child_by_field_name("operator")) != "=":
        return None
    left = node.child_by_field_name("left")
    return node.child_by_field_name("right") if left is not None and text(left) == var else None


_WRAPPERS = ("subscript_expression", "field_expression", "parenthesized_expression")


def assigned_name(node: ts.Node) -> set[str]:
    """The variable `node` assigns or steps (`x` of `x = e`, `x[i] += e`, `x.f++`) or whose address
    it takes (`&x`, `&x[i]`)."""
    target = assigned(node)
    if target is None and node.type == "pointer_expression" and text(node.child_by_field_name("operator")) == "&":
        target = node.child_by_field_name("argument")
    while target is not None and target.type in _WRAPPERS:
        target = target.child_by_field_name("argument") or target.named_children[0]
    return {text(target)} if target is not None and target.type == "identifier" else set()


COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})


def split_condition(cond: ts.Node, negated: bool = False) -> list[tuple[ts.Node, bool]]:
    """`a && b && ...` as [(a, False), ...]; with `negated`, `!(a || b ...)` as [(a, True), ...]."""
    out: list[tuple[ts.Node, bool]] = []
    joiner = "||" if negated else "&&"

    def visit(node: ts.Node) -> None:
        if node.type == "parenthesized_expression" and len(node.named_children) == 1:
            inner = node.named_children[0]
            if inner.type == "binary_expression" and text(inner.child_by_field_name("operator")) == joiner:
                visit(inner)
                return
        if node.type == "binary_expression" and text(node.child_by_field_name("operator")) == joiner:
            visit(node.child_by_field_name("left"))
            visit(node.child_by_field_name("right"))
            return
        out.append((_bare_comparison(node), negated))

    visit(cond)
    return out


def _bare_comparison(node: ts.Node) -> ts.Node:
    """`(i < n)` as `i < n`; any other parenthesized conjunct as written."""
    inner = unparen(node)
    if inner.type == "binary_expression" and text(inner.child_by_field_name("operator")) in COMPARISONS:
        return inner
    return node


def names_read(expr: ts.Node) -> set[str]:
    """The names `expr` reads (not `blockIdx` of `blockIdx.x`)."""
    return {text(n) for n in walk(expr) if n.type == "identifier" and n.parent.type != "field_expression"}


def node_text(node: ts.Node, replacements: dict[tuple[int, int], str] | None = None) -> str:
    """The source text of `node` with descendant byte ranges replaced (outermost ranges win)."""
    assert node.text is not None
    data = node.text
    base = node.start_byte
    chosen: list[tuple[int, int, str]] = []
    for (s, e), t in sorted((replacements or {}).items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        if s < node.start_byte or e > node.end_byte:
            continue
        if chosen and s < chosen[-1][1]:
            continue  # inside an already replaced range
        chosen.append((s, e, t))
    for s, e, t in reversed(chosen):
        data = data[:s - base] + t.encode() + data[e - base:]
    return data.decode()


def reindent(node: ts.Node, code: str, indent: str) -> str:
    """`code` (the text of `node`, maybe edited) re-indented from its line's indentation to `indent`.
    A compound statement that is the body of a function, loop or `if` is unwrapped to its inner
    statements; a block nested in another block keeps its braces (its declarations are its own)."""
    lines = code.split("\n")
    nested = node.parent is not None and node.parent.type == "compound_statement"
    if node.type == "compound_statement" and not nested and lines[0].strip() == "{" and lines[-1].strip() == "}" \
            and len(lines) > 2:
        inner = lines[1:-1]
        base = min((len(ln) - len(ln.lstrip()) for ln in inner if ln.strip()), default=0)
        return "\n".join(indent + ln[base:] if ln.strip() else "" for ln in inner)
    column = _line_indent(node)
    out = [indent + lines[0]]
    for line in lines[1:]:
        stripped = line[column:] if line[:column].strip() == "" else line.lstrip()
        out.append(indent + stripped if stripped.strip() else "")
    return "\n".join(out)


def _line_indent(node: ts.Node) -> int:
    """Indentation of the line where `node` starts."""
    data = root_of(node).text or b""
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    line = data[start:node.start_byte]
    return len(line) - len(line.lstrip())


_PRIMARY = ("identifier", "number_literal", "call_expression", "subscript_expression", "field_expression",
            "parenthesized_expression")


def operand(node: ts.Node, operators: tuple[str, ...] = ("+", "*", "/", "%")) -> str:
    """`node` as an operand of `+` (or, with `operators` ("*",), of `*`): parenthesized unless a
    primary expression or a binary expression of one of `operators`."""
    op = text(node.child_by_field_name("operator")) if node.type == "binary_expression" else ""
    return text(node) if node.type in _PRIMARY or op in operators else f"({text(node)})"
