"""How a statement folds a value into a running local: `acc += e`, `acc -= e`, `acc *= e` (also
written `acc = acc + e`, `acc = e + acc`), and `acc = fmaxf(acc, e)` with the other maximum and
minimum functions (either argument order). The reading of an accumulation that rules splitting a
reduction over threads share: each thread folds its part into a partial that starts at the
operation's identity, and the partials combine with the same operation."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.analysis import assignment, called
from cuopt.source.increments import increment
from cuopt.source.parse import text, unparen

# the functions that keep the larger or smaller of two values, by what they keep
EXTREMES = {"fmaxf": "max", "fmax": "max", "max": "max", "fminf": "min", "fmin": "min", "min": "min"}


@dataclass(frozen=True)
class Accumulation:
    """`acc <kind>= value` or `acc = kind(acc, value)`, as an expression statement."""

    statement: ts.Node  # the expression statement
    acc: str
    kind: str  # "+", "-", "*" or an EXTREMES function name
    value: ts.Node


def accumulation(statement: ts.Node) -> Accumulation | None:
    """The accumulation an expression statement is; None for anything else (`acc = e`, `acc /= e`,
    `acc = acc * 2 + e`, a subscript target)."""
    if statement.type != "expression_statement":
        return None
    inc = increment(statement)
    if inc is not None and inc.op in ("+", "-", "*") and inc.step is not None:
        return Accumulation(statement, inc.counter, inc.op, inc.step)
    a = assignment(statement)
    if a is None or a.op != "=" or a.target.type != "identifier":
        return None
    value = unparen(a.value)
    fn = called(value)
    if fn not in EXTREMES:
        return None
    args = value.child_by_field_name("arguments").named_children
    acc = text(a.target)
    if len(args) != 2:
        return None
    for mine, other in (args, args[::-1]):
        if unparen(mine).type == "identifier" and text(unparen(mine)) == acc:
            return Accumulation(statement, acc, fn, other)
    return None
