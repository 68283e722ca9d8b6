"""Host C expressions as spec expressions: literals, macros, variables assigned once, casts,
ceiling divisions written the ways real code writes them, and helper functions or macros that
compute one.

Macros come from the preprocessor's table (cuopt.source.preprocess); this module never reads `#define`s."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import tree_sitter as ts

from cuopt.source.affine import Poly, to_expr
from cuopt.source.parse import function_name, parse, text, walk
from cuopt.source.preprocess import NO_MACROS, Macros, resolve_type
from cuopt.spec import expr as E
from cuopt.spec.dtypes import c_type, itemsize

MAX_DEPTH = 24  # macro, variable and call-site hops followed for one expression
_CEIL = {"ceil", "ceilf", "std::ceil", "ceill"}
_PARENS = ("parenthesized_expression", "cast_expression")




def expression(source: str) -> ts.Node | None:
    """`source` parsed as one C expression, or None."""
    tree = parse(f"void __cuopt() {{ ({source}); }}")
    if tree.root_node.has_error:
        return None
    body = tree.root_node.named_children[0].child_by_field_name("body")
    stmt = body.named_children[0] if body is not None and body.named_children else None
    if stmt is None or stmt.type != "expression_statement" or not stmt.named_children:
        return None
    return stmt.named_children[0]


def enclosing_function(node: ts.Node) -> ts.Node | None:
    while node is not None and node.type != "function_definition":
        node = node.parent
    return node


def parameters(fn: ts.Node) -> list[str]:
    """The parameter names of a function definition, in order."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    out = []
    for p in plist.named_children if plist is not None else ():
        names = [n for n in walk(p) if n.type == "identifier"]
        out.append(text(names[-1]) if names else "")
    return out


def strip(node: ts.Node) -> ts.Node:
    """The expression inside parentheses and casts."""
    while node.type in _PARENS:
        inner = node.child_by_field_name("value") if node.type == "cast_expression" else (
            node.named_children[0] if node.named_children else None)
        if inner is None:
            break
        node = inner
    return node


@dataclass
class Host:
    """The host code of a file, for resolving names: `aliases` maps (function or None, host name)
    to the spec size name it stands for."""

    root: ts.Node
    macros: Macros = NO_MACROS
    aliases: dict[tuple[int | None, str], str] = field(default_factory=dict)
    block_var: tuple[int | None, str] | None = None  # the launch's block dim3 variable: its fields are block.x|y|z

    def functions(self) -> list[ts.Node]:
        return [n for n in walk(self.root, descend=lambda n: n.type != "function_definition")
                if n.type == "function_definition"]

    def function(self, name: str) -> ts.Node | None:
        return next((f for f in self.functions() if function_name(f) == name), None)

    def call_sites(self, fn: ts.Node) -> list[ts.Node]:
        """Plain calls of `fn` (not kernel launches), in source order."""
        name = function_name(fn)
        return [n for n in walk(self.root) if n.type == "call_expression"
                and not any(c.type == "kernel_call_syntax" for c in n.children)
                and text(n.child_by_field_name("function")).split("::")[-1] == name]

    def alias(self, scope: ts.Node | None, name: str) -> str | None:
        return self.aliases.get((_key(scope), name)) or self.aliases.get((None, name))

    def caller_arg(self, scope: ts.Node | None, name: str) -> tuple[ts.Node, ts.Node | None] | None:
        """When `name` is a parameter of function `scope`: its argument at the first call site."""
        if scope is None or name not in parameters(scope):
            return None
        index = parameters(scope).index(name)
        for call in self.call_sites(scope):
            args = call.child_by_field_name("arguments")
            if args is not None and index < len(args.named_children):
                return args.named_children[index], enclosing_function(call)
        return None

    def value_of(self, scope: ts.Node | None, name: str) -> tuple[ts.Node, ts.Node | None] | None:
        """The expression a variable holds (its one assignment in `scope`, else at file scope), with
        the function it is in; None when it is assigned more than once or never."""
        for where in (scope, self.root):
            if where is None:
                continue
            found = assignments(where if where is self.root else where.child_by_field_name("body"), name,
                                top_level=where is self.root)
            if found is None:
                return None
            if found:
                return (found[0], scope if where is scope else None) if len(found) == 1 else None
            if where is scope and name in parameters(scope):  # a parameter: its caller says
                return None
        return None

    def dims(self, node: ts.Node, scope: ts.Node | None) -> list[tuple[ts.Node, ts.Node | None]] | None:
        """The components of a launch dimension: `dim3(a, b)`, a dim3 variable (`dim3 v(a, b);`,
        `dim3 v = dim3(a, b);`, `dim3 v{a, b};`, `v.x = a;`) or a plain expression."""
        node = strip(node)
        if node.type == "call_expression" and text(node.child_by_field_name("function")) == "dim3":
            args = node.child_by_field_name("arguments")
            return [(a, scope) for a in args.named_children] if args is not None else None
        if node.type != "identifier":
            return [(node, scope)]
        name = text(node)
        found = self.dim3_declaration(scope, name)
        if found is None:
            passed = self.caller_arg(scope, name)
            return self.dims(passed[0], passed[1]) if passed is not None else [(node, scope)]
        parts, where = found
        body = where.child_by_field_name("body") if where is not None else self.root
        assigned: set[int] = set()
        for n in walk(body) if body is not None else ():
            if n.type == "assignment_expression" and text(n.child_by_field_name("operator")) == "=":
                left = n.child_by_field_name("left")
                if left.type == "field_expression" and text(left.child_by_field_name("argument")) == name:
                    axis = "xyz".find(text(left.child_by_field_name("field")))
                    if axis in assigned:  # set twice: which value a launch sees depends on the path
                        return None
                    if axis >= 0:
                        assigned.add(axis)
                        parts += [None] * (axis + 1 - len(parts))
                        parts[axis] = n.child_by_field_name("right")
        if any(p is None for p in parts):
            return None
        return [(p, where) for p in parts]

    def constant_dims(self, node: ts.Node, scope: ts.Node | None) -> tuple[int, ...] | None:
        """A launch dimension whose every component is an integer constant (literals, macros,
        variables assigned once), trailing 1s dropped; None otherwise."""
        parts = self.dims(node, scope)
        values = [constant(Translator(self, use_aliases=False).expr(n, s)) for n, s in parts or ()]
        if not values or len(values) > 3 or any(v is None or v <= 0 for v in values):
            return None
        while len(values) > 1 and values[-1] == 1:
            values.pop()
        return tuple(values)  # type: ignore[arg-type]

    def dim3_declaration(self, scope: ts.Node | None, name: str) -> tuple[list, ts.Node | None] | None:
        """The components a `dim3 name...` declaration gives (empty for `dim3 name;`), and its function."""
        for where in (scope, None):
            body = where.child_by_field_name("body") if where is not None else self.root
            if body is None:
                continue
            for n in walk(body, descend=lambda n: where is not None or n.type in ("translation_unit", "declaration")):
                if n.type != "declaration" or text(n.child_by_field_name("type")) != "dim3":
                    continue
                for d in n.children_by_field_name("declarator"):
                    parts = _dim3_parts(d, name)
                    if parts is not None:
                        return parts, where
        return None

    def integer(self, name: str) -> int | None:
        """An object-like macro's value, when it is an integer constant expression."""
        body = self.macros.object_like(name)
        if body is None:
            return None
        e = Translator(self, use_aliases=False).expr(expression(body), None)
        return constant(e)


def _dim3_parts(decl: ts.Node, name: str) -> list | None:
    """Components of one declarator of a dim3 declaration when it declares `name`."""
    if decl.type == "identifier":
        return [] if text(decl) == name else None
    if decl.type == "function_declarator":  # `dim3 v(A, B);` with macro arguments parses as a prototype
        if text(decl.child_by_field_name("declarator")) != name:
            return None
        plist = decl.child_by_field_name("parameters")
        parts = [expression(text(p)) for p in plist.named_children] if plist is not None else []
        return parts if all(p is not None for p in parts) else None
    if decl.type != "init_declarator" or text(decl.child_by_field_name("declarator")) != name:
        return None
    value = decl.child_by_field_name("value")
    if value is None:
        return None
    value = strip(value)
    if value.type in ("argument_list", "initializer_list"):
        return list(value.named_children)
    if value.type == "call_expression" and text(value.child_by_field_name("function")) == "dim3":
        return list(value.child_by_field_name("arguments").named_children)
    return [value]


def _key(scope: ts.Node | None) -> int | None:
    return scope.id if scope is not None else None


def assignments(where: ts.Node | None, name: str, top_level: bool = False) -> list[ts.Node] | None:
    """The values stored into variable `name` under `where` (initializers and `name = v`);
    None when it is also updated another way (`+=`, `++`, `&name` taken)."""
    if where is None:
        return []
    out: list[ts.Node] = []
    descend = (lambda n: n.type in ("translation_unit", "declaration", "init_declarator")) if top_level else (
        lambda n: True)
    for n in walk(where, descend=descend):
        if n.type == "init_declarator" and _declared(n.child_by_field_name("declarator")) == name:
            value = n.child_by_field_name("value")
            if value is not None:
                out.append(value)
        elif n.type == "assignment_expression" and text(n.child_by_field_name("left")) == name:
            if text(n.child_by_field_name("operator")) != "=":
                return None
            out.append(n.child_by_field_name("right"))
        elif n.type == "update_expression" and text(n.child_by_field_name("argument")) == name:
            return None
        elif n.type == "pointer_expression" and text(n).replace(" ", "") == f"&{name}":
            return None
    return out


def _declared(decl: ts.Node | None) -> str:
    while decl is not None and decl.type != "identifier":
        decl = decl.child_by_field_name("declarator")
    return text(decl) if decl is not None else ""


def constant(e: E.Expr | None) -> int | None:
    if e is None or E.names(e):
        return None
    try:
        return E.evaluate(e, {})
    except E.ExprError:
        return None


def to_poly(e: E.Expr) -> Poly:
    """A spec expression as a polynomial over its names; divisions and calls are atoms, named by
    their parenthesised text (so `from_poly` gives them back)."""
    if isinstance(e, E.Num):
        return Poly.const(e.value)
    if isinstance(e, E.Name):
        return Poly.symbol(e.name)
    if isinstance(e, E.Neg):
        return -to_poly(e.operand)
    if isinstance(e, E.Bin) and e.op in "+-*":
        a, b = to_poly(e.left), to_poly(e.right)
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b
    return Poly.symbol(f"({e})")


def from_poly(p: Poly) -> E.Expr:
    """The spec expression of a polynomial from `to_poly` (atoms back to their expressions)."""
    try:
        return E.parse(to_expr(p))
    except E.ExprError:  # an atom holding a `sizeof:T` name: keep the polynomial as one opaque name
        return E.Name(str(p))


@dataclass
class Translator:
    """Turns host C expressions into spec expressions. `sizeof(T)` is T's size when T (macros
    expanded) is a scalar type, else the name `sizeof:T` (`sizeof:*p` for `sizeof(*p)`) for the
    caller to resolve; names that resolve to nothing give None."""

    host: Host
    use_aliases: bool = True
    depth: int = 0
    sizes: dict[str, int] | None = None  # where given: host variables that hold a constant become sizes,
    numbers: frozenset[int] = frozenset()  # ... except those holding one of these (the block's dimensions)
    free: set[str] | None = None  # where given: host values set at run time (a wrapper's parameter) become sizes

    def expr(self, node: ts.Node | None, scope: ts.Node | None,
             bindings: Mapping[str, E.Expr] | None = None) -> E.Expr | None:
        if node is None or self.depth > MAX_DEPTH:
            return None
        self.depth += 1
        try:
            return self._expr(node, scope, bindings or {})
        finally:
            self.depth -= 1

    def _expr(self, node: ts.Node, scope: ts.Node | None, bindings: Mapping[str, E.Expr]) -> E.Expr | None:
        node = strip(node)
        kind = node.type
        if kind == "number_literal":
            return _integer(text(node))
        if kind == "identifier":
            return self.name(text(node), scope, bindings)
        if kind == "qualified_identifier":  # `ops::kBlock`, a constant of a namespace
            name = node.child_by_field_name("name")
            return self.name(text(name), None, {}) if name is not None and name.type == "identifier" else None
        if kind == "sizeof_expression":
            return self.sizeof(node, scope)
        if kind == "unary_expression" and text(node.child_by_field_name("operator")) in "-+":
            inner = self.expr(node.child_by_field_name("argument"), scope, bindings)
            if inner is None:
                return None
            return E.Neg(inner) if text(node.child_by_field_name("operator")) == "-" else inner
        if kind == "binary_expression":
            return self.binary(node, scope, bindings)
        if kind == "conditional_expression":
            return self.conditional(node, scope, bindings)
        if kind == "call_expression":
            return self.call(node, scope, bindings)
        if kind == "field_expression":
            return self.field(node, scope, bindings)
        return None

    def field(self, node: ts.Node, scope: ts.Node | None, bindings: Mapping[str, E.Expr]) -> E.Expr | None:
        """`block.x` of the launch's block variable, or a component of another dim3 variable."""
        var, axis = text(node.child_by_field_name("argument")), "xyz".find(text(node.child_by_field_name("field")))
        if axis < 0 or node.child_by_field_name("argument").type != "identifier":
            return None
        if self.host.block_var == (_key(scope), var):
            return E.Name(f"block.{'xyz'[axis]}")
        parts = self.host.dims(node.child_by_field_name("argument"), scope)
        if parts is None or len(parts) == 1 and parts[0][0].type == "identifier":
            return None
        return self.expr(*parts[axis]) if axis < len(parts) else E.Num(1)

    def name(self, name: str, scope: ts.Node | None, bindings: Mapping[str, E.Expr]) -> E.Expr | None:
        if name in bindings:
            return bindings[name]
        if self.use_aliases:
            alias = self.host.alias(scope, name)
            if alias is not None:
                return E.Name(alias)
        held = self.host.value_of(scope, name)
        if held is not None:
            value = self.expr(held[0], held[1])
            if self.sizes is not None and isinstance(value, E.Num) and value.value > 0 and \
                    value.value not in self.numbers and self.sizes.get(name, value.value) == value.value:
                self.sizes[name] = value.value  # `const int rows = 4096; k<<<rows, 256>>>`: a size `rows`
                self.host.aliases[(_key(held[1]), name)] = name
                return E.Name(name)
            return value
        passed = self.host.caller_arg(scope, name)
        if passed is not None:
            return self.expr(passed[0], passed[1]) or self._free(name)
        body = self.host.macros.object_like(name)
        if body is not None:
            return self.expr(expression(body), scope)
        return self._free(name) if scope is not None and name in parameters(scope) else None

    def _free(self, name: str) -> E.Expr | None:
        """`name`, a parameter of the function that launches, as a size the program sets at run time
        (no call passes it a value read here), where the caller collects those; else None."""
        if self.free is None:
            return None
        self.free.add(name)
        return E.Name(name)

    def number(self, node: ts.Node, scope: ts.Node | None) -> float | None:
        """A numeric literal, or a name (macro, variable assigned once) that holds one, as a float."""
        node = strip(node)
        if node.type == "identifier" and self.depth <= MAX_DEPTH:
            name = text(node)
            found = self.host.value_of(scope, name) or self.host.caller_arg(scope, name)
            body = self.host.macros.object_like(name)
            if found is None and body is not None:
                found = (expression(body), scope)
            if found is None or found[0] is None:
                return None
            self.depth += 1
            try:
                return self.number(found[0], found[1])
            finally:
                self.depth -= 1
        sign = 1.0
        if node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
            sign, node = -1.0, strip(node.child_by_field_name("argument"))
        if node.type != "number_literal":
            return None
        spelled = text(node)
        for parse_as in (lambda s: int(s.rstrip("uUlL"), 0), lambda s: float(s.rstrip("fFlL"))):
            try:
                return sign * float(parse_as(spelled))
            except ValueError:
                pass
        return None

    def sizeof(self, node: ts.Node, scope: ts.Node | None) -> E.Expr | None:
        operand = node.child_by_field_name("type") or node.child_by_field_name("value")
        if operand is None:
            return None
        inner = strip(operand) if operand.type == "parenthesized_expression" else operand
        spelled = text(inner)
        if inner.type in ("pointer_expression", "subscript_expression"):
            return E.Name(f"sizeof:*{text(strip(inner.named_children[0]))}")
        name = self.type_name(spelled)
        size = itemsize_of(name)
        return E.Num(size) if size is not None else E.Name(f"sizeof:{name}")

    def type_name(self, spelled: str) -> str:
        """A type's spelling through macros and typedefs, normalized."""
        return resolve_type(spelled, self.host.macros)

    def binary(self, node: ts.Node, scope: ts.Node | None, bindings: Mapping[str, E.Expr]) -> E.Expr | None:
        op = text(node.child_by_field_name("operator"))
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op == "+":
            for a, b in ((left, right), (right, left)):
                up = self.round_up(a, b, scope, bindings)
                if up is not None:
                    return up
        if op not in ("+", "-", "*", "/", "%", "<<", ">>"):
            return None
        le, re_ = self.expr(left, scope, bindings), self.expr(right, scope, bindings)
        if le is None or re_ is None:
            return None
        if op in ("<<", ">>"):
            a, b = constant(le), constant(re_)
            if a is None or b is None or not 0 <= b < 63:
                return None
            return E.Num(a << b if op == "<<" else a >> b)
        if op == "/":
            return divide(le, re_)
        return E.Bin(op, le, re_)

    def round_up(self, quotient: ts.Node, carry: ts.Node, scope: ts.Node | None,
                 bindings: Mapping[str, E.Expr]) -> E.Expr | None:
        """`a / b + (a % b != 0)` (also `a % b > 0`, `a % b ? 1 : 0`, `(a - 1) / b + 1`) as cdiv(a, b)."""
        q = strip(quotient)
        if q.type != "binary_expression" or text(q.child_by_field_name("operator")) != "/":
            return None
        a = self.expr(q.child_by_field_name("left"), scope, bindings)
        b = self.expr(q.child_by_field_name("right"), scope, bindings)
        if a is None or b is None:
            return None
        c = strip(carry)
        if c.type == "number_literal" and _integer(text(c)) == E.Num(1):
            pa = to_poly(a)
            if pa.mapping.get((), 0) != -1:
                return None
            return E.Call("cdiv", (from_poly(pa + Poly.const(1)), b))
        if c.type == "conditional_expression":
            yes, no = c.child_by_field_name("consequence"), c.child_by_field_name("alternative")
            if yes is None or no is None or (_integer(text(strip(yes))), _integer(text(strip(no)))) != (
                    E.Num(1), E.Num(0)):
                return None
            c = strip(c.child_by_field_name("condition"))
        elif c.type == "binary_expression" and text(c.child_by_field_name("operator")) in ("!=", ">"):
            if _integer(text(strip(c.child_by_field_name("right")))) != E.Num(0):
                return None
            c = strip(c.child_by_field_name("left"))
        if c.type != "binary_expression" or text(c.child_by_field_name("operator")) != "%":
            return None
        if (self.expr(c.child_by_field_name("left"), scope, bindings),
                self.expr(c.child_by_field_name("right"), scope, bindings)) != (a, b):
            return None
        return E.Call("cdiv", (a, b))

    def conditional(self, node: ts.Node, scope: ts.Node | None, bindings: Mapping[str, E.Expr]) -> E.Expr | None:
        """`a % b != 0 ? a / b + 1 : a / b` (and `a % b ? ...`) as cdiv(a, b)."""
        yes, no = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        y, n = self.expr(yes, scope, bindings), self.expr(no, scope, bindings)
        if y is None or n is None or not isinstance(n, E.Bin) or n.op != "//":
            return None
        if y != E.Bin("+", n, E.Num(1)):
            return None
        cond = strip(node.child_by_field_name("condition"))
        if cond.type == "binary_expression" and text(cond.child_by_field_name("operator")) in ("!=", ">"):
            cond = strip(cond.child_by_field_name("left"))
        if cond.type != "binary_expression" or text(cond.child_by_field_name("operator")) != "%":
            return None
        if self.expr(cond, scope, bindings) != E.Bin("%", n.left, n.right):
            return None
        return E.Call("cdiv", (n.left, n.right))

    def call(self, node: ts.Node, scope: ts.Node | None, bindings: Mapping[str, E.Expr]) -> E.Expr | None:
        fn = text(node.child_by_field_name("function"))
        args_node = node.child_by_field_name("arguments")
        args = list(args_node.named_children) if args_node is not None else []
        if fn in _CEIL and len(args) == 1:
            inner = strip(args[0])
            if inner.type == "binary_expression" and text(inner.child_by_field_name("operator")) == "/":
                a = self.expr(inner.child_by_field_name("left"), scope, bindings)
                b = self.expr(inner.child_by_field_name("right"), scope, bindings)
                return E.Call("cdiv", (a, b)) if a is not None and b is not None else None
            return self.expr(inner, scope, bindings)
        values = [self.expr(a, scope, bindings) for a in args]
        if any(v is None for v in values):
            return None
        if fn in ("min", "max", "std::min", "std::max") and len(values) >= 2:
            return E.Call(fn.split("::")[-1], tuple(values))
        macro = self.host.macros.function_like(fn)
        if macro is not None:
            if macro.variadic or len(macro.params) != len(values):
                return None
            return self.expr(expression(macro.body), scope, dict(zip(macro.params, values)))
        helper = self.host.function(fn)
        if helper is None:
            return None
        returned = _single_return(helper)
        if returned is None or len(parameters(helper)) != len(values):
            return None
        return self.expr(returned, helper, dict(zip(parameters(helper), values)))


def divide(a: E.Expr, b: E.Expr) -> E.Expr:
    """`a / b` in C: exact when `b` divides every coefficient of `a`, cdiv(x, b) when `a` is
    `x + b - 1` (the usual rounding up), else a // b."""
    rounded = _plus_divisor_less_one(a, b)
    if rounded is not None:  # `(x + b - 1) / b` as written, also when x folds to a constant
        return E.Call("cdiv", (rounded, b))
    pa, pb = to_poly(a), to_poly(b)
    d = constant(b)
    if d and all(c % d == 0 for _, c in pa.terms):
        return from_poly(Poly.of({m: c // d for m, c in pa.terms}))
    x = pa - pb + Poly.const(1)
    if len(x.terms) < len(pa.terms):
        return E.Call("cdiv", (from_poly(x), b))
    return E.Bin("//", a, b)


def _plus_divisor_less_one(a: E.Expr, b: E.Expr) -> E.Expr | None:
    """x when `a` is written `x + b - 1` (or `x + (b - 1)`), b a constant."""
    d = constant(b)
    if d is None or not isinstance(a, E.Bin):
        return None
    if a.op == "-" and constant(a.right) == 1 and isinstance(a.left, E.Bin) and a.left.op == "+" \
            and constant(a.left.right) == d:
        return a.left.left
    if a.op == "+" and constant(a.right) == d - 1 and not E.names(a.left) and constant(a.left) is not None:
        return a.left
    return None


def _integer(literal: str) -> E.Num | None:
    try:
        return E.Num(int(literal.rstrip("uUlL"), 0))
    except ValueError:
        return None


def _single_return(fn: ts.Node) -> ts.Node | None:
    body = fn.child_by_field_name("body")
    returns = [n for n in walk(body) if n.type == "return_statement"] if body is not None else []
    if len(returns) != 1 or not returns[0].named_children:
        return None
    return returns[0].named_children[0]


def itemsize_of(type_name: str) -> int | None:
    """Bytes of a C scalar type's spelling (macros already expanded), when a spec dtype has it."""
    ct = c_type(type_name)
    if ct is None:
        return None
    return itemsize(ct.dtype) * ct.width
