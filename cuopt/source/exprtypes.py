"""The static types of a kernel's names and expressions, where they can be proved: the declared type
of a name (the innermost declaration before it in an enclosing scope, else the kernel's parameter),
whether an expression is a `float`, and whether every value in an integer expression is signed (so
that moving a term across a comparison cannot wrap). Types are read through cuopt/source/ctypes.py."""
from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter as ts

from cuopt.source.affine import BUILTINS
from cuopt.source.ctypes import is_signed_integer, is_unsigned_integer, vector_element
from cuopt.source.increments import increment
from cuopt.source.kernels import Kernel, resolve_type
from cuopt.source.parse import assigned, operator_of, parse, text, unparen, walk
from cuopt.source.preprocess import is_integer_literal
from cuopt.spec.dtypes import normalize_c_type

Type = tuple[str, int]  # element type and indirection depth (pointers plus array dimensions)
FLOAT: Type = ("float", 0)
FLOAT_FUNCTIONS = frozenset({  # CUDA's functions that return a float
    "expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "sinf", "cosf", "tanf",
    "asinf", "acosf", "atanf", "atan2f", "sinhf", "coshf", "tanhf", "powf", "sqrtf", "rsqrtf", "cbrtf",
    "rcbrtf", "hypotf", "fabsf", "fmaxf", "fminf", "fmaf", "fmodf", "floorf", "ceilf", "truncf", "roundf",
    "rintf", "erff", "erfcf", "copysignf", "__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__sinf",
    "__cosf", "__tanf", "__powf", "__fdividef", "__saturatef", "__frcp_rn", "__fsqrt_rn", "__frsqrt_rn",
    "__fadd_rn", "__fsub_rn", "__fmul_rn", "__fdiv_rn", "__fmaf_rn", "__int_as_float", "__uint_as_float"})
_FLOAT_LITERAL = re.compile(r"(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]")
_ARITHMETIC_OPS = frozenset({"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"})
_NON_NEGATIVE_OPS = frozenset({"+", "*", "/", "%", "<<", ">>", "&", "|"})  # of two values of zero or more
_COUNTING_UP = frozenset({"+", "*", "<<", "/", ">>"})  # the steps that keep a counter of zero or more at zero or more
_MAX_MACRO_DEPTH = 8


class ExprTypes:
    """Types in one kernel (a KernelModel keeps one: `model.types`)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def declared(self, ident: ts.Node) -> Type | None:
        """The declared type of the variable `ident` names: the innermost declaration before it in an
        enclosing scope, else the kernel's parameter; None for anything declared outside the kernel."""
        name, scope = text(ident), ident.parent
        while scope is not None and scope != self.kernel.node:
            found = [t for decl in _declarations(scope) for node, t in _declarators(decl)
                     if text(node) == name and node.end_byte <= ident.start_byte]
            if found:
                return found[-1]
            scope = scope.parent
        param = self.kernel.param(name)
        return (param.base_type, param.pointer) if param is not None else None

    def is_float(self, node: ts.Node) -> bool:
        return self.of(node) == FLOAT

    def of(self, node: ts.Node) -> Type | None:
        """The type of `node` where it is a float (or a name, element or component of one); None where
        it cannot be proved."""
        t = node.type
        if t == "number_literal":
            return FLOAT if is_float_literal(node) else None
        if t == "identifier":
            return self.declared(node)
        if t == "parenthesized_expression" and len(node.named_children) == 1:
            return self.of(node.named_children[0])
        if t == "subscript_expression" or (t == "pointer_expression" and operator_of(node) == "*"):
            return self._element(node.child_by_field_name("argument"))
        if t == "field_expression":
            return self._component(node)
        if t == "call_expression":
            return self._call(node)
        if t == "cast_expression":
            return FLOAT if normalize_c_type(text(node.child_by_field_name("type"))) == "float" else None
        if t == "unary_expression" and operator_of(node) in ("-", "+"):
            return FLOAT if self.is_float(node.child_by_field_name("argument")) else None
        if t == "binary_expression" and operator_of(node) in ("+", "-", "*", "/"):
            return FLOAT if all(self.is_float(node.child_by_field_name(f)) for f in ("left", "right")) else None
        if t == "conditional_expression":
            branches = (node.child_by_field_name("consequence"), node.child_by_field_name("alternative"))
            return FLOAT if all(b is not None and self.is_float(b) for b in branches) else None
        return None

    def signed(self, node: ts.Node, depth: int = 0) -> bool:
        """Whether every value in the integer expression `node` is signed: integer literals without a
        `u`, names declared with a signed integer type (`int`, `long`, `int64_t`, `ptrdiff_t`), casts to
        one, object-like macros standing for such expressions, and arithmetic of these. Built-ins
        (`threadIdx.x`), `sizeof`, calls and memory reads are not."""
        t = node.type
        if t == "number_literal":
            return is_integer_literal(text(node)) and not re.search(r"[uU]", text(node))
        if t == "identifier":
            return self._signed_name(node, depth)
        if t == "parenthesized_expression":
            return len(node.named_children) == 1 and self.signed(node.named_children[0], depth)
        if t == "cast_expression":
            return is_signed_integer(resolve_type(text(node.child_by_field_name("type")), self.kernel.macros))
        if t == "unary_expression" and operator_of(node) in ("-", "+", "~"):
            return self.signed(node.child_by_field_name("argument"), depth)
        if t == "binary_expression" and operator_of(node) in _ARITHMETIC_OPS:
            return all(self.signed(node.child_by_field_name(f), depth) for f in ("left", "right"))
        if t == "conditional_expression":
            return all(b is not None and self.signed(b, depth)
                       for b in (node.child_by_field_name("consequence"), node.child_by_field_name("alternative")))
        return False

    def never_negative(self, node: ts.Node, depth: int = 0) -> bool:
        """Whether the integer expression `node` holds zero or more whatever its type: integer
        literals, built-ins, names of an unsigned integer type, casts to one, a `for` counter that
        starts at zero or more and only steps up by or is divided by a number (`s = 1; ...; s <<= 1`),
        and `+ * / % << >> & |` of these. The one question that tells a shift by a number from a
        product or quotient by a power of two (a signed `-5 >> 1` is -3, `-5 / 2` is -2)."""
        t = node.type
        if t == "number_literal":
            return is_integer_literal(text(node))
        if t == "field_expression":
            return text(node).replace(" ", "") in BUILTINS
        if t == "identifier":
            declared = self.declared(node)
            if declared is not None and declared[1] == 0 and is_unsigned_integer(declared[0]):
                return True
            return depth < _MAX_MACRO_DEPTH and self._counter_never_negative(node, depth)
        if t == "parenthesized_expression":
            return len(node.named_children) == 1 and self.never_negative(node.named_children[0], depth)
        if t == "cast_expression":
            return is_unsigned_integer(resolve_type(text(node.child_by_field_name("type")), self.kernel.macros))
        if t == "binary_expression" and operator_of(node) in _NON_NEGATIVE_OPS:
            return all(self.never_negative(node.child_by_field_name(f), depth) for f in ("left", "right"))
        return False

    def _counter_never_negative(self, ident: ts.Node, depth: int) -> bool:
        """`ident` names the counter of an enclosing `for` (its innermost declaration is the loop's
        initializer) that starts at zero or more, steps by `+`, `*`, `<<`, `/` or `>>` of a number
        and is assigned nowhere else in the loop."""
        name, scope = text(ident), ident.parent
        while scope is not None and scope != self.kernel.node:
            found = [decl for decl in _declarations(scope) for node, _ in _declarators(decl)
                     if text(node) == name and node.end_byte <= ident.start_byte]
            if found:
                break
            scope = scope.parent
        else:
            return False
        init = scope.child_by_field_name("initializer") if scope.type == "for_statement" else None
        declarators = init.children_by_field_name("declarator") if init is not None and init == found[-1] else []
        if len(declarators) != 1 or declarators[0].type != "init_declarator":
            return False
        start = declarators[0].child_by_field_name("value")
        update = scope.child_by_field_name("update")
        step = increment(update)
        if start is None or step is None or step.counter != name or step.op not in _COUNTING_UP or \
                not (step.step is None or is_integer_literal(text(unparen(step.step)))):
            return False
        others = [n for part in ("condition", "body") if (p := scope.child_by_field_name(part)) is not None
                  for n in walk(p) if (a := assigned(n)) is not None and text(a) == name]
        return not others and self.never_negative(start, depth + 1)

    def _signed_name(self, ident: ts.Node, depth: int) -> bool:
        declared = self.declared(ident)
        if declared is not None:
            return declared[1] == 0 and is_signed_integer(declared[0])
        macros = self.kernel.macros
        body = macros.object_like(text(ident)) if macros else None
        if body is None or depth >= _MAX_MACRO_DEPTH:
            return False
        statements = parse(f"({body});").root_node.named_children
        if not statements or statements[0].type != "expression_statement" or not statements[0].named_children:
            return False
        return self.signed(unparen(statements[0].named_children[0]), depth + 1)

    def _element(self, base: ts.Node | None) -> Type | None:
        t = self.of(base) if base is not None else None
        return (t[0], t[1] - 1) if t is not None and t[1] > 0 else None

    def _component(self, node: ts.Node) -> Type | None:
        base = self.of(node.child_by_field_name("argument"))
        depth = 1 if operator_of(node) == "->" else 0
        if base is None or base[1] != depth or vector_element(base[0]) != "float":
            return None
        return FLOAT if text(node.child_by_field_name("field")) in ("x", "y", "z", "w") else None

    def _call(self, node: ts.Node) -> Type | None:
        fn = text(node.child_by_field_name("function"))
        if fn in FLOAT_FUNCTIONS:
            return FLOAT
        args = node.child_by_field_name("arguments").named_children
        if fn == "__ldg" and len(args) == 1 and args[0].type == "pointer_expression" and operator_of(args[0]) == "&":
            return self.of(args[0].child_by_field_name("argument"))
        return None


def is_float_literal(node: ts.Node) -> bool:
    """`1.0f`, `.5f`, `2e3f`: a literal of type float."""
    return node.type == "number_literal" and _FLOAT_LITERAL.fullmatch(text(node)) is not None


def _declarations(scope: ts.Node) -> Iterator[ts.Node]:
    """Declarations directly in `scope` (a block, a for initializer, an if/while condition)."""
    for child in scope.named_children:
        if child.type == "declaration":
            yield child
        elif child.type == "condition_clause":
            yield from (c for c in child.named_children if c.type == "declaration")


def _declarators(decl: ts.Node) -> Iterator[tuple[ts.Node, Type]]:
    """(name node, type) of each variable a declaration declares; `?` for a type not followed."""
    type_node = decl.child_by_field_name("type")
    base = normalize_c_type(text(type_node)) if type_node is not None else "?"
    for d in decl.children_by_field_name("declarator"):
        element, depth = base, 0
        while d is not None and d.type != "identifier":
            if d.type in ("pointer_declarator", "array_declarator"):
                depth += 1
            elif d.type not in ("init_declarator", "reference_declarator"):
                element = "?"
            d = d.child_by_field_name("declarator") or next(
                (c for c in d.named_children if c.type == "identifier" or c.type.endswith("declarator")), None)
        if d is not None:
            yield d, (element, depth)

