"""Counted `while` loops (`k = a; while (k < b) { ...; k++; }`, a grid-stride `while (i < n) { ...;
i += blockDim.x * gridDim.x; }`, a halving `while (s > 0) { ...; s /= 2; }`) read as the `for` loops
they are, and `for` loops whose counter is declared before them (`size_t i = e; for (; i < n; i +=
stride)`) with the declaration in their header: steps of the normal form (cuopt/source/normal_form.py)."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.affine import BUILTINS
from cuopt.source.ctypes import is_integer, is_unsigned_integer
from cuopt.source.declarations import plain_declaration
from cuopt.source.increments import increment
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import assigned, assigned_name, assigns, names_read, text, walk


@dataclass(frozen=True)
class WhileLoop:
    """`k = a; while (k < b) { ...; k += s; }` read as `for (T k = a; k < b; k += s) { ... }`."""

    loop: ts.Node  # the while statement
    start: ts.Node  # the statement before it that sets the counter (`int k = a;` or `k = a;`)
    clause: str  # `(T k = a; k < b; k += s)`, what the `for` header puts for the condition
    step: ts.Node  # the body's last statement, which the header takes


def while_loops(kernel: Kernel, model: KernelModel) -> list[WhileLoop]:
    """The counted `while` loops of `kernel`, outer before inner: the last statement may be `k++`,
    `k += e` (e unchanged in the loop), `k *= c`, `k <<= c`, and a halving `while (k > 0) { ...; k /=
    2; }` (or `k >>= c`; `k != 0` where k is never negative) counts down. Never with a `continue`,
    which skips a `while` loop's last statement."""
    found = []
    for node in walk(kernel.body):
        if node.type != "while_statement":
            continue
        cond = node.child_by_field_name("condition")
        cond = cond.named_children[0] if cond is not None and cond.named_children else None
        body = node.child_by_field_name("body")
        if cond is None or cond.type != "binary_expression" or body is None or body.type != "compound_statement":
            continue
        left = cond.child_by_field_name("left")
        if left is None or left.type != "identifier":
            continue
        var, prev = text(left), node.prev_named_sibling
        while prev is not None and _aside(prev, var) and (assigns(prev, var) or _declared(prev, var)) is None:
            prev = prev.prev_named_sibling  # `int offset = ...;` between the two stays before the loop
        stmts = [c for c in body.named_children if c.type != "comment"]
        start = assigns(prev, var) or _declared(prev, var)
        step = _update(stmts[-1], var, node) if stmts else None
        type_ = counter_type(kernel, model, var) or _scoped(kernel, var, prev, node)
        if start is None or step is None or type_ is None or _touched(stmts[:-1], var):
            continue
        test = _test(cond, var, step[1], start, type_)
        if test is not None:
            found.append(WhileLoop(node, prev, f"({type_} {var} = {text(start)}; {test}; {step[0]})",
                                   stmts[-1]))
    return found


def bare_for_loops(kernel: Kernel, model: KernelModel) -> list[tuple[ts.Node, str]]:
    """(node, replacement) pairs that move a counter's declaration into a `for` loop written without
    one: `size_t i = e; const size_t s = ...; for (; i < n; i += s)` as `for (size_t i = e; i < n; i +=
    s)`, where only the loop names i after it is set (the declarations between name nothing of it)."""
    out: list[tuple[ts.Node, str]] = []
    for node in walk(kernel.body):
        if node.type != "for_statement" or node.child_by_field_name("initializer") is not None:
            continue
        cond = node.child_by_field_name("condition")
        left = cond.child_by_field_name("left") if cond is not None and cond.type == "binary_expression" else None
        semicolon = next((c for c in node.children if c.type == ";"), None)
        if left is None or left.type != "identifier" or semicolon is None or \
                text(cond.child_by_field_name("operator")) not in ("<", "<="):
            continue
        var, prev = text(left), node.prev_named_sibling
        while prev is not None and _aside(prev, var) and _declared(prev, var) is None:
            prev = prev.prev_named_sibling
        start, type_ = _declared(prev, var), _scoped(kernel, var, prev, node)
        if start is not None and type_ is not None:
            out += [(prev, ""), (semicolon, f"{type_} {var} = {text(start)};")]
    return out


def counter_type(kernel: Kernel, model: KernelModel, var: str) -> str | None:
    """The declared type of `var` when it is a counter whose every use lies in a loop that sets it
    first (its value never outlives one loop)."""
    local = model.locals.get(var)
    if local is None or (local.init is not None and local.init.type != "number_literal"):
        return None
    if not is_integer(local.type):
        return None
    ranges = _reinitialized(kernel, var) + [(local.node.start_byte, local.node.end_byte)]
    for n in walk(kernel.body):
        if n.type == "identifier" and text(n) == var and not any(s <= n.start_byte < e for s, e in ranges):
            return None
    return local.type


def _reinitialized(kernel: Kernel, var: str) -> list[tuple[int, int]]:
    """Byte ranges where `var` is set before it is read: loops that assign it in their header, and
    `var = e;` statements with the loop that follows them."""
    ranges = []
    for node in walk(kernel.body):
        if node.type == "for_statement" and assigns(node.child_by_field_name("initializer"), var) is not None:
            ranges.append((node.start_byte, node.end_byte))
        if node.type == "while_statement":
            prev = node.prev_named_sibling
            if assigns(prev, var) is not None or _declared(prev, var) is not None:
                ranges.append((prev.start_byte, node.end_byte))
    return ranges


def _aside(node: ts.Node, var: str) -> bool:
    """A declaration that neither names `var` nor calls or assigns anything: the counter's own
    declaration may move past it, into the loop's header."""
    return node.type == "declaration" and not any(
        n.type in ("call_expression", "assignment_expression", "update_expression")
        or (n.type == "identifier" and text(n) == var) for n in walk(node))


def _declared(node: ts.Node | None, var: str) -> ts.Node | None:
    """The initial value of `int var = e;`, its only declarator."""
    if node is None or node.type != "declaration":
        return None
    ds = node.children_by_field_name("declarator")
    if len(ds) != 1 or ds[0].type != "init_declarator" or text(ds[0].child_by_field_name("declarator")) != var:
        return None
    return ds[0].child_by_field_name("value")


def _scoped(kernel: Kernel, var: str, decl: ts.Node | None, loop: ts.Node) -> str | None:
    """The type of `decl`, `T var = a;` (T an integer type) right before `loop`, when only the loop
    names var."""
    if _declared(decl, var) is None or not plain_declaration(decl) or not is_integer(text(decl.child_by_field_name("type"))):
        return None
    if any(n.type == "identifier" and text(n) == var and not decl.start_byte <= n.start_byte < loop.end_byte
           for n in walk(kernel.body)):
        return None
    return text(decl.child_by_field_name("type"))


def _update(stmt: ts.Node, var: str, loop: ts.Node) -> tuple[str, bool] | None:
    """The step of a loop whose last statement is `stmt`, and whether it counts down: `++var` for
    `var++` and `var += 1`; `var += e` (e unchanged in `loop`), `var *= c`, `var <<= c` up;
    `var /= c`, `var >>= c` down (c a number; also written `var = var / c`)."""
    inc = increment(stmt)
    if inc is None or inc.counter != var:
        return None
    if inc.op == "+" and inc.amount == "1":
        return f"++{var}", False
    if inc.op == "+" and _invariant(inc.step, var, loop):
        return f"{var} += {inc.amount}", False
    if inc.op in ("*", "<<", "/", ">>") and inc.step.type == "number_literal" and inc.amount.isdigit():
        return f"{var} {inc.op}= {inc.amount}", inc.direction < 0
    return None


_STRIDE = {"identifier", "number_literal", "field_expression", "field_identifier", "binary_expression",
           "parenthesized_expression"}


def _invariant(expr: ts.Node, var: str, loop: ts.Node) -> bool:
    """`expr` is arithmetic over numbers, built-ins and names other than `var` that `loop` never
    assigns."""
    names = names_read(expr)
    if var in names or any(n.type not in _STRIDE or n.type == "field_expression" and text(n).replace(" ", "")
                           not in BUILTINS for n in walk(expr) if n.is_named):
        return False
    return not any(assigned_name(n) & names for n in walk(loop))


def _test(cond: ts.Node, var: str, down: bool, start: ts.Node, type_: str) -> str | None:
    """The loop's condition as the `for` loop tests it: `var < b` or `var <= b` counting up, `var > 0`
    counting down (from `var != 0` where var never goes below zero)."""
    op, right = text(cond.child_by_field_name("operator")), text(cond.child_by_field_name("right"))
    if not down:
        return text(cond) if op in ("<", "<=") else None
    if right != "0" or op not in (">", "!="):
        return None
    return f"{var} > 0" if op == ">" or is_unsigned_integer(type_) or "short" not in type_ and _never_negative(start) else None


def _never_negative(node: ts.Node) -> bool:
    """A decimal number below 2^31, a built-in (at most 2^31 - 1), or one of them divided or shifted
    right by a number: a value an integer counter holds as a number of zero or more."""
    if node.type == "parenthesized_expression" and node.named_children:
        return _never_negative(node.named_children[0])
    if node.type == "number_literal":
        return text(node).isdigit() and int(text(node)) < 2 ** 31
    if node.type == "field_expression":
        return text(node).replace(" ", "") in BUILTINS
    right = node.child_by_field_name("right")
    return node.type == "binary_expression" and text(node.child_by_field_name("operator")) in ("/", ">>") and \
        _never_negative(node.child_by_field_name("left")) and right.type == "number_literal" and text(right).isdigit()


def _touched(stmts: list[ts.Node], var: str) -> bool:
    """A `continue` (it would skip the step) or an assignment of `var` among `stmts`."""
    for s in stmts:
        for n in walk(s):
            if n.type == "continue_statement":
                return True
            target = assigned(n)
            if target is not None and text(target) == var:
                return True
    return False


