"""Byte-range edits of source text, applied back to front, and the indentation they keep."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.parse import node_text  # noqa: F401 (the edits' users take it from here)


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    text: str

    @staticmethod
    def replace(node: ts.Node, text: str) -> Edit:
        return Edit(node.start_byte, node.end_byte, text)

    @staticmethod
    def insert(at: int, text: str) -> Edit:
        return Edit(at, at, text)


class OverlappingEdits(ValueError):
    pass


def apply(source: bytes, edits: list[Edit]) -> bytes:
    """Apply non-overlapping edits (inserts at one point keep their order)."""
    ordered = sorted(enumerate(edits), key=lambda p: (p[1].start, p[1].end, p[0]))
    for (_, a), (_, b) in zip(ordered, ordered[1:]):
        if b.start < a.end:
            raise OverlappingEdits(f"edits overlap at bytes {a.start}-{a.end} and {b.start}-{b.end}")
    out = source
    for _, e in reversed(ordered):
        out = out[:e.start] + e.text.encode() + out[e.end:]
    return out


def indent_of(source: bytes, node: ts.Node) -> str:
    """The whitespace before `node` on its line ("" if other text precedes it)."""
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    prefix = source[line_start:node.start_byte].decode()
    return prefix if prefix.strip() == "" else ""


def body_indent(source: bytes, body: ts.Node) -> str:
    """The indentation of the first statement of block `body` (four spaces for an empty one)."""
    children = body.named_children
    return indent_of(source, children[0]) if children else "    "


def starts_line(source: bytes, node: ts.Node) -> bool:
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    return source[line_start:node.start_byte].strip() == b""


def unbraced_body(node: ts.Node) -> bool:
    """`node` is the body of a loop, `if` or `else` written without braces: code that replaces it
    with several statements, or puts a line before it, needs a block."""
    parent = node.parent
    return parent is not None and parent.type in ("for_statement", "while_statement", "do_statement", "if_statement",
                                                  "else_clause") and node != parent.child_by_field_name("condition")
