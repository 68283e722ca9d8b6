"""Integer expressions of specs: sizes, grid dims, element counts.

A small tokenizer and recursive-descent parser; nothing is ever handed to eval/exec.
Grammar: integers, names (`n`, `block.x`), `+ - * // %`, parentheses, unary minus,
and the calls `cdiv(a, b)`, `min(a, ...)`, `max(a, ...)`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Union

MAX_SOURCE = 1000
MAX_DEPTH = 64
MAX_TOKENS = 200
MAX_VALUE = 2**62
FUNCTIONS = {"cdiv": 2, "min": -1, "max": -1}
BLOCK_NAMES = ("block.x", "block.y", "block.z")

_TOKEN = re.compile(
    r"\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)?)"
    r"|(?P<op>//|[-+*%(),/])|(?P<bad>\S))"
)


class ExprError(ValueError):
    """An expression that does not parse or evaluate; the message says what was expected."""


@dataclass(frozen=True)
class Num:
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Name:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Neg:
    operand: Expr

    def __str__(self) -> str:
        return f"-{_wrap(self.operand, 3)}"


@dataclass(frozen=True)
class Bin:
    op: str
    left: Expr
    right: Expr

    def __str__(self) -> str:
        prec = _PREC[self.op]
        # right operand of - // % needs parentheses at equal precedence
        return f"{_wrap(self.left, prec)} {self.op} {_wrap(self.right, prec + 1)}"


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple[Expr, ...]

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(str(a) for a in self.args)})"


Expr = Union[Num, Name, Neg, Bin, Call]
_PREC = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}


def _wrap(e: Expr, prec: int) -> str:
    if isinstance(e, Bin) and _PREC[e.op] < prec:
        return f"({e})"
    return str(e)


def parse(source: str | int) -> Expr:
    """Parse an expression (an int is taken as a literal)."""
    if isinstance(source, bool):
        raise ExprError("expected an integer or an expression, got a boolean")
    if isinstance(source, int):
        _check_range(source)
        return Num(source)
    if not isinstance(source, str):
        raise ExprError(f"expected an integer or an expression string, got {type(source).__name__}")
    if len(source) > MAX_SOURCE:
        raise ExprError(f"expression longer than {MAX_SOURCE} characters")
    parser = _Parser(source)
    expr = parser.expression(0)
    if parser.peek() is not None:
        raise ExprError(f"unexpected {parser.peek()!r} in {source!r}")
    return expr


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens: list[tuple[str, str]] = []
        for m in _TOKEN.finditer(source):
            kind = m.lastgroup
            if kind is None:
                continue
            text = m.group(kind)
            if kind == "bad":
                raise ExprError(f"unexpected character {text!r} in {source!r}; "
                                "allowed: integers, size names, block.x|y|z, + - * // % ( ), cdiv, min, max")
            if kind == "op" and text == "/":
                raise ExprError(f"'/' is not allowed in {source!r}: use '//' (floor division) or cdiv(a, b)")
            self.tokens.append((kind, text))
        if source.strip() == "":
            raise ExprError("empty expression")
        if len(self.tokens) > MAX_TOKENS:
            raise ExprError(f"expression has more than {MAX_TOKENS} tokens")
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ExprError(f"unexpected end of expression {self.source!r}")
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, text: str) -> None:
        kind, got = self.take()
        if got != text:
            raise ExprError(f"expected {text!r} but found {got!r} in {self.source!r}")

    def expression(self, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nested deeper than {MAX_DEPTH} levels")
        left = self.term(depth)
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            left = Bin(op, left, self.term(depth))
        return left

    def term(self, depth: int) -> Expr:
        left = self.unary(depth)
        while self.peek() in ("*", "//", "%"):
            op = self.take()[1]
            left = Bin(op, left, self.unary(depth))
        return left

    def unary(self, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nested deeper than {MAX_DEPTH} levels")
        if self.peek() == "-":
            self.take()
            return Neg(self.unary(depth + 1))
        if self.peek() == "+":
            self.take()
            return self.unary(depth + 1)
        return self.atom(depth)

    def atom(self, depth: int) -> Expr:
        kind, text = self.take()
        if kind == "int":
            value = int(text)
            _check_range(value)
            return Num(value)
        if kind == "name":
            if self.peek() == "(":
                if text not in FUNCTIONS:
                    raise ExprError(f"unknown function {text!r} in {self.source!r}; allowed: cdiv, min, max")
                self.take()
                args = [self.expression(depth + 1)]
                while self.peek() == ",":
                    self.take()
                    args.append(self.expression(depth + 1))
                self.expect(")")
                arity = FUNCTIONS[text]
                if arity >= 0 and len(args) != arity:
                    raise ExprError(f"{text}() takes {arity} arguments, got {len(args)} in {self.source!r}")
                return Call(text, tuple(args))
            if "." in text and text not in BLOCK_NAMES:
                raise ExprError(f"unknown name {text!r} in {self.source!r}; "
                                "attributes other than block.x, block.y, block.z are not allowed")
            return Name(text)
        if text == "(":
            inner = self.expression(depth + 1)
            self.expect(")")
            return inner
        raise ExprError(f"unexpected {text!r} in {self.source!r}")


def _check_range(value: int) -> int:
    if abs(value) > MAX_VALUE:
        raise ExprError(f"value {value} is out of range (at most {MAX_VALUE} in magnitude)")
    return value


def evaluate(expr: Expr, env: Mapping[str, int]) -> int:
    """Evaluate `expr` with the names in `env`; unknown names raise ExprError naming them."""
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, Name):
        if expr.name not in env:
            known = ", ".join(sorted(env)) or "none"
            raise ExprError(f"unknown size name {expr.name!r} (known: {known})")
        return _check_range(int(env[expr.name]))
    if isinstance(expr, Neg):
        return -evaluate(expr.operand, env)
    if isinstance(expr, Call):
        values = [evaluate(a, env) for a in expr.args]
        if expr.fn == "cdiv":
            if values[1] == 0:
                raise ExprError(f"division by zero in {expr}")
            return -((-values[0]) // values[1])
        return min(values) if expr.fn == "min" else max(values)
    a, b = evaluate(expr.left, env), evaluate(expr.right, env)
    if expr.op == "+":
        return _check_range(a + b)
    if expr.op == "-":
        return _check_range(a - b)
    if expr.op == "*":
        return _check_range(a * b)
    if b == 0:
        raise ExprError(f"division by zero in {expr}")
    return a // b if expr.op == "//" else a % b


def names(expr: Expr) -> set[str]:
    """Every name the expression uses."""
    if isinstance(expr, Name):
        return {expr.name}
    if isinstance(expr, Neg):
        return names(expr.operand)
    if isinstance(expr, Bin):
        return names(expr.left) | names(expr.right)
    if isinstance(expr, Call):
        return set().union(*(names(a) for a in expr.args))
    return set()


def substitute(expr: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace names by expressions."""
    if isinstance(expr, Name):
        return mapping.get(expr.name, expr)
    if isinstance(expr, Neg):
        return Neg(substitute(expr.operand, mapping))
    if isinstance(expr, Bin):
        return Bin(expr.op, substitute(expr.left, mapping), substitute(expr.right, mapping))
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(substitute(a, mapping) for a in expr.args))
    return expr
