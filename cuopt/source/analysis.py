"""Facts about a kernel that the rules ask, beyond the loops and accesses of cuopt/source/model.py:
the body's shape (`prelude; if (guard) { body } after`, or the early-return form), the guard's
conjuncts and the bound each puts on a global index, where the global index and the built-ins
occur, the expression a read stands for, the accesses of global memory, the branches cuopt wrote
that compute what their `else` computes, and conditions' values at given sizes (code no size runs).
A KernelModel keeps the shape it computed (`model.shape`)."""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import tree_sitter as ts

from cuopt.source.affine import BLOCK, BUILTINS, DIM, GRID, THREAD, axis_of_global_index
from cuopt.source.outparams import is_declared_name
from cuopt.source.parse import operator_of, split_condition, text, unparen, walk

if TYPE_CHECKING:
    from cuopt.source.model import Access, KernelModel

# cache-hinted loads: `__ldg(&a[i])` only reads a[i]
READ_ONLY_LOADS = frozenset({"__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv"})
# calls whose meaning depends on which thread runs what (atomics, barriers, warp votes and shuffles)
CROSS_THREAD_CALL = re.compile(r"^(atomic|__sync|__shfl|__ballot|__any|__all|__activemask)")
_EXPRESSIONS = {"identifier", "binary_expression", "parenthesized_expression", "field_expression", "cast_expression"}
_SKIPPING = ("for_statement", "while_statement", "do_statement", "switch_statement")  # may skip what they hold
_FLIPPED = {">=": "<", ">": "<=", "<": ">=", "<=": ">"}  # a negated comparison
_MIRRORED = {">": "<", ">=": "<="}  # `bound > index` is `index < bound`
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_MAX_DEPTH = 40  # constant locals and operands followed for one span


@dataclass
class Shape:
    """A kernel body as `prelude; if (guard) { body } after` or `prelude; if (!guard) return; body`."""

    prelude: list[ts.Node]
    guard: ts.Node | None  # the condition expression as written
    negated: bool  # True for the early-return form
    body: list[ts.Node]
    after: list[ts.Node]
    if_node: ts.Node | None

    def conjuncts(self) -> list[tuple[ts.Node, bool]]:
        """The guard as a list of (comparison node, negate) that must all hold."""
        return [] if self.guard is None else split_condition(self.guard, self.negated)


def statements(block: ts.Node) -> list[ts.Node]:
    """The block's statements; an unroll pragma right before a loop counts as part of the loop
    (the kernel model keeps it as the loop's `pragma`), not as a statement of its own, and a
    `static_assert` (a type pin, see `engine.pin_types`) is no statement: it runs nothing."""
    return [c for c in block.named_children if c.type not in ("comment", "static_assert_declaration")
            and not _loop_pragma(c)]


def steps_of(body: ts.Node) -> list[ts.Node]:
    """What a loop's or an `if`'s body runs: a block's statements, or the one statement it is."""
    return statements(body) if body.type == "compound_statement" else [body]


def _loop_pragma(node: ts.Node) -> bool:
    after = node.next_named_sibling
    return node.type == "preproc_call" and "unroll" in text(node) and after is not None \
        and after.type in ("for_statement", "while_statement", "do_statement")


def condition(statement: ts.Node) -> ts.Node | None:
    """The expression an `if`, `while` or `for` statement tests (inside the parentheses)."""
    clause = statement.child_by_field_name("condition")
    return clause.child_by_field_name("value") if clause is not None and clause.type == "condition_clause" else clause


def shape_of(body: ts.Node) -> Shape:
    """The shape of a kernel's body (a compound statement)."""
    stmts = statements(body)
    prelude: list[ts.Node] = []
    for i, s in enumerate(stmts):
        if s.type == "declaration" and _pure_declaration(s):
            prelude.append(s)
            continue
        if s.type == "if_statement" and s.child_by_field_name("alternative") is None:
            value = condition(s)
            consequence = s.child_by_field_name("consequence")
            if value is None or consequence is None:
                break
            if returns_only(consequence):
                return Shape(prelude, value, True, stmts[i + 1:], [], s)
            return Shape(prelude, value, False, steps_of(consequence), stmts[i + 1:], s)
        return Shape(prelude, None, False, stmts[i:], [], None)
    return Shape(prelude, None, False, [], [], None)


def returns_only(node: ts.Node) -> bool:
    """Whether `node` is `return;` or a block of that alone: the body of an early exit."""
    if node.type == "return_statement":
        return True
    return node.type == "compound_statement" and len(statements(node)) == 1 and \
        statements(node)[0].type == "return_statement"


def _pure_declaration(node: ts.Node) -> bool:
    """A declaration whose initializers call nothing and assign nothing."""
    if any(c.type == "type_qualifier" and text(c) == "__shared__" for c in node.children):
        return False
    return not any(n.type in ("call_expression", "assignment_expression", "update_expression")
                   for n in walk(node))


def bound_in(model: KernelModel, parts: list[tuple[ts.Node, bool]], axis: int) -> tuple[ts.Node, str] | None:
    """Among (comparison, negated) conjuncts, the bound expression and comparison ("<" or "<=") of
    `global index < bound` (or `bound > index`) along `axis`; None when none is."""
    for node, neg in parts:
        if node.type != "binary_expression":
            continue
        op = operator_of(node)
        if neg:
            op = _FLIPPED.get(op, "")
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        lp, rp = model.poly(left), model.poly(right)
        if op in ("<", "<=") and lp is not None and axis_of_global_index(lp) == axis:
            return right, op
        if op in (">", ">=") and rp is not None and axis_of_global_index(rp) == axis:
            return left, _MIRRORED[op]
    return None


def bound_of(model: KernelModel, axis: int) -> tuple[ts.Node, str] | None:
    """The bound the kernel's guard puts on the global index along `axis` (`bound_in`)."""
    return bound_in(model, model.shape.conjuncts(), axis)


def global_index_nodes(model: KernelModel, root: ts.Node) -> dict[tuple[int, int], int]:
    """Maximal subexpressions of `root` equal to blockIdx.a * blockDim.a + threadIdx.a, by axis. A
    cast is not one itself: the index inside it is, so a rewrite keeps the cast (`(size_t)r`)."""
    found: dict[tuple[int, int], int] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _EXPRESSIONS and node.type != "cast_expression" and not is_declared_name(node):
            p = model.poly(node)
            axis = axis_of_global_index(p) if p is not None else None
            if axis is not None:
                found[(node.start_byte, node.end_byte)] = axis
                continue
        stack.extend(node.children)
    return found


def return_in_loop(model: KernelModel, body: ts.Node) -> ts.Node | None:
    """The first of the kernel's `return`s that a loop or a switch holds, or None: a rule that wraps
    the body in a loop over grid positions turns each `return` into `continue`, which such a
    `return` would not mean."""
    for r in model.returns:
        parent = r.parent
        while parent is not None and parent != body:
            if parent.type in _SKIPPING:
                return r
            parent = parent.parent
    return None


def varies_in_block(model: KernelModel, node: ts.Node, seen: frozenset[str] = frozenset()) -> bool:
    """Whether `node`'s value may differ between the threads of a block: it reads threadIdx, memory
    or a call, or a local that is assigned again or computed from such a value."""
    for n in walk(node):
        if n.type == "field_expression" and text(n).replace(" ", "").startswith("threadIdx"):
            return True
        if n.type in ("subscript_expression", "pointer_expression", "call_expression"):
            return True
        local = model.local_at(text(n), n) if n.type == "identifier" and text(n) not in seen else None
        if local is not None:
            if local.writes or local.init is None or varies_in_block(model, local.init, seen | {text(n)}):
                return True
    return False


def builtin_uses(root: ts.Node) -> list[tuple[ts.Node, str]]:
    """threadIdx/blockIdx/blockDim/gridDim field expressions under `root`."""
    names = set(THREAD + BLOCK + DIM + GRID)
    return [(n, text(n).replace(" ", "")) for n in walk(root)
            if n.type == "field_expression" and text(n).replace(" ", "") in names]


def read_expression(subscript: ts.Node) -> ts.Node:
    """The expression a read stands for: a cache-hinted load (`__ldg(&a[i])`) as a whole, else `a[i]`
    (or the address `&a[i]` where it is taken otherwise)."""
    parent = subscript.parent
    if parent is not None and parent.type == "pointer_expression" and text(parent).startswith("&"):
        call = parent.parent.parent if parent.parent is not None else None
        if call is not None and called(call) in READ_ONLY_LOADS and parent.parent.named_child_count == 1:
            return call
        return parent
    return subscript


def global_accesses(model: KernelModel) -> list[Access]:
    """Accesses of global memory: through a pointer parameter or a local pointer into one."""
    return [a for a in model.accesses if a.space == "global" or a.array in model.aliases]


@dataclass(frozen=True)
class Assignment:
    """`target op value` (`y[i] = v`, `acc += e`)."""

    node: ts.Node  # the assignment expression
    target: ts.Node
    op: str  # "=", "+=", ...
    value: ts.Node


def assignment(node: ts.Node) -> Assignment | None:
    """The assignment `node` is, as an expression or as its statement (`y[i] = v;`); None otherwise."""
    if node.type == "expression_statement" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type != "assignment_expression":
        return None
    target, op, value = (node.child_by_field_name(f) for f in ("left", "operator", "right"))
    return Assignment(node, target, text(op), value) if target and op and value else None


def conditional(node: ts.Node, top: ts.Node, *, loops: bool = False) -> bool:
    """Whether `node`, inside `top`, is evaluated only under a condition: in an `if`'s branch, a
    conditional expression's arm or the right operand of `&&` or `||`; with `loops`, also inside a
    loop or `switch` between them, which may skip it."""
    child = node
    while child != top:
        parent = child.parent
        if parent is None or loops and parent.type in _SKIPPING:
            return True
        if parent.type in ("if_statement", "conditional_expression") \
                and child != parent.child_by_field_name("condition"):
            return True
        if parent.type == "binary_expression" and operator_of(parent) in ("&&", "||") \
                and child == parent.child_by_field_name("right"):
            return True
        child = parent
    return False


def _enclosing_ifs(node: ts.Node, top: ts.Node) -> Iterator[tuple[ts.Node, ts.Node]]:
    """The `if` statements under `top` that hold `node`, innermost first, each with its child on the
    way to `node` (its condition, its `then` or its `else`)."""
    child, parent = node, node.parent
    while parent is not None and parent != top:
        if parent.type == "if_statement":
            yield parent, child
        child, parent = parent, parent.parent


def enclosing_conditions(node: ts.Node, top: ts.Node) -> list[ts.Node]:
    """The conditions of the `if`s under `top` that `node` is in a branch of, innermost first."""
    return [condition(statement) for statement, _ in _enclosing_ifs(node, top)]


def truth(model: KernelModel, cond: ts.Node, env: Mapping[str, int]) -> bool | None:
    """A condition's value in every thread of a launch where `env` gives the values all threads share
    (the sizes' scalar arguments, block and grid dimensions): comparisons of integer expressions
    (over those, thread and block indices, constant locals) joined by `&&`, `||` and `!`; None where
    threads differ or any part reads something else (a loaded value, a loop counter)."""
    cond = unparen(cond)
    op = operator_of(cond) if cond.type in ("binary_expression", "unary_expression") else ""
    if cond.type == "unary_expression" and op == "!":
        inner = truth(model, cond.child_by_field_name("argument"), env)
        return None if inner is None else not inner
    if cond.type != "binary_expression":
        return None
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if op in ("&&", "||"):
        sides = {truth(model, left, env), truth(model, right, env)}
        decisive = op == "||"  # the value that settles the whole
        return decisive if decisive in sides else None if None in sides else not decisive
    a, b = span(model, left, env), span(model, right, env)
    if a is None or b is None or op not in _COMPARISONS:
        return None
    if op in _MIRRORED:
        a, b, op = b, a, _MIRRORED[op]
    if op in ("==", "!="):
        equal = True if a[0] == a[1] == b[0] == b[1] else False if a[1] < b[0] or b[1] < a[0] else None
        return equal if equal is None or op == "==" else not equal
    strict = op == "<"
    if a[1] < b[0] or not strict and a[1] == b[0]:
        return True
    return False if a[0] > b[1] or strict and a[0] == b[1] else None


def span(model: KernelModel, node: ts.Node, env: Mapping[str, int], depth: int = 0) -> tuple[int, int] | None:
    """The least and the greatest value an integer expression takes over the threads of a launch
    (`truth`'s `env`): thread and block indices range over the block and the grid, constant locals
    stand for their initializers, `e % d` and `e / d` by a positive constant keep a nonnegative `e`
    in bounds; None where unknown."""
    if depth > _MAX_DEPTH:
        return None
    node = unparen(node)
    if node.type == "cast_expression":
        return span(model, node.child_by_field_name("value"), env, depth + 1)
    name = text(node).replace(" ", "")
    if node.type == "number_literal" or node.type == "identifier" and model.kernel.param(name) is None:
        value = model.tie_value(name)  # a literal, a value template parameter or an integer macro
        if value is not None:
            return value, value
    if name in env and (name in BUILTINS or model.kernel.param(name) is not None and name not in model.escapes):
        return env[name], env[name]
    for indices, dims in ((THREAD, DIM), (BLOCK, GRID)):
        if name in indices and dims[indices.index(name)] in env:
            return 0, env[dims[indices.index(name)]] - 1
    local = model.local_at(name, node) if node.type == "identifier" else None
    if local is not None and local.writes == 0 and local.init is not None:
        return span(model, local.init, env, depth + 1)
    if node.type != "binary_expression":
        return None
    op = operator_of(node)
    a, b = span(model, node.child_by_field_name("left"), env, depth + 1), \
        span(model, node.child_by_field_name("right"), env, depth + 1)
    if a is None or b is None:
        return None
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "*":
        ends = [x * y for x in a for y in b]
        return min(ends), max(ends)
    if op in ("/", "%") and b[0] == b[1] > 0 and a[0] >= 0:
        d = b[0]
        return (a[0] // d, a[1] // d) if op == "/" else (a if a[1] < d else (0, d - 1))
    return None


def unreached(model: KernelModel, node: ts.Node, top: ts.Node,
              envs: list[Mapping[str, int]]) -> tuple[ts.Node, bool] | None:
    """The condition of an `if` under `top` that keeps `node` from running at every one of `envs`, with
    the value `node`'s branch needs it to have (never its value there), or None: (`C > 768`, True) for
    code that runs only for rows wider than any size the spec measures."""
    for statement, child in _enclosing_ifs(node, top) if envs else ():
        cond = condition(statement)
        if cond is not None and child != statement.child_by_field_name("condition"):
            branch = child == statement.child_by_field_name("consequence")
            if all(truth(model, cond, env) is (not branch) for env in envs):
                return cond, branch
    return None


def called(node: ts.Node) -> str:
    """The function a call expression names (`atomicAdd`, `fmaxf`); "" for any other node."""
    fn = node.child_by_field_name("function") if node.type == "call_expression" else None
    return text(fn) if fn is not None else ""


def cross_thread(node: ts.Node) -> bool:
    """Whether `node` calls an atomic, a barrier, a warp vote or a shuffle (CROSS_THREAD_CALL)."""
    return CROSS_THREAD_CALL.match(called(node)) is not None


def mentions(root: ts.Node, *names: str) -> list[ts.Node]:
    """The identifiers under `root` that name one of `names` (a member `.x` is no name)."""
    return [n for n in walk(root) if n.type == "identifier" and text(n) in names]


# the comment row-cache opens its `if (the row fits) { registers } else { the loop as written }` with
ROW_FITS = "// cuopt: the row fits the registers (else: the loop as written)"


def fit_branches(root: ts.Node) -> list[ts.Node]:
    """The `if` statements under `root` that open with ROW_FITS: each computes in its `then`
    branch what its `else` branch does, the `then` branches of all of them together (a row cached
    by one and read by the next), so that taking every one's `else` keeps the meaning."""
    out = []
    for n in walk(root):
        then = n.child_by_field_name("consequence") if n.type == "if_statement" else None
        first = then.named_children[0] if then is not None and then.named_children else None
        if first is not None and first.type == "comment" and text(first) == ROW_FITS \
                and n.child_by_field_name("alternative") is not None:
            out.append(n)
    return out
