"""What a kernel does, as the rewrite rules need to know it: loops, memory accesses with affine
index forms, barriers, atomics, early returns, shared arrays."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import tree_sitter as ts

from cuopt.source.affine import BLOCK, BUILTINS, DIM, GRID, THREAD, Poly, global_index
from cuopt.source.analysis import READ_ONLY_LOADS, Shape, shape_of
from cuopt.source.exprtypes import ExprTypes
from cuopt.source.increments import Increment, increment
from cuopt.source.kernels import Kernel, resolve_type
from cuopt.source.macro_expr import expansion, fits
from cuopt.source.paren_names import misread_name
from cuopt.source.parse import assigned, assigned_target, line_of, operator_of, root_of, text, walk, within
from cuopt.source.preprocess import is_integer_literal
from cuopt.source.thread_roles import ThreadRoles, thread_roles

_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
ATOMIC_PREFIX = "atomic"
BARRIERS = {"__syncthreads", "__syncwarp", "__syncthreads_or", "__syncthreads_and", "__syncthreads_count"}


@dataclass(frozen=True)
class Loop:
    node: ts.Node
    var: str | None
    start: Poly | None
    bound: Poly | None
    cmp: str | None  # "<", "<=", ">", ">=", "!="
    step: int | None  # constant increment, None when not additive
    depth: int  # 0 for outermost loops of the kernel
    parent: int | None  # index of the enclosing loop
    has_barrier: bool
    pragma: ts.Node | None  # an existing `#pragma unroll` right before the loop
    stride: Poly | None = None  # the increment of `var += e` as a polynomial (e need not be constant)
    constants: tuple[int | None, int | None] = (None, None)  # start and bound with fixed macros at their values
    start_node: ts.Node | None = None  # the counter's first value as written (`a` of `int j = a`)
    bound_node: ts.Node | None = None  # the bound as written (`b` of `j < b`)
    counter_type: str = ""  # the type the header declares the counter with (`int`); "" where declared before
    increment: Increment | None = None  # the header's update, whatever it steps

    @property
    def grid_stride_axis(self) -> int | None:
        """The axis of a grid-stride loop `for (i = <global index>; i < n; i += gridDim.a * blockDim.a)`."""
        if self.cmp != "<" or self.start is None or self.stride is None:
            return None
        return next((a for a in range(3) if self.start == global_index(a)
                     and self.stride == Poly.symbol(GRID[a]) * Poly.symbol(DIM[a])), None)

    @property
    def line(self) -> int:
        return line_of(self.node)

    @property
    def trip_count(self) -> int | None:
        """Constant trip count, when start, bound and step are constants (fixed macros count)."""
        if self.start is None or self.bound is None or not self.step or self.cmp not in ("<", "<="):
            return None
        a, b = self.constants
        if a is None or b is None or self.step <= 0:
            return None
        end = b + (1 if self.cmp == "<=" else 0)
        return max(0, -(-(end - a) // self.step))

    @property
    def body(self) -> ts.Node:
        body = self.node.child_by_field_name("body")
        assert body is not None
        return body


@dataclass(frozen=True)
class Access:
    node: ts.Node  # outermost subscript_expression
    array: str
    space: str  # "global" (pointer parameter), "shared", "local"
    indices: tuple[ts.Node, ...]  # outermost dimension first
    index: tuple[Poly | None, ...]
    read: bool
    write: bool
    atomic: bool
    loops: tuple[int, ...]  # enclosing loops, outermost first

    @property
    def line(self) -> int:
        return line_of(self.node)

    @property
    def flat(self) -> Poly | None:
        return self.index[0] if len(self.index) == 1 else None



@dataclass(frozen=True)
class SharedArray:
    name: str
    dims: tuple[int | None, ...]
    extern: bool
    node: ts.Node
    element: str


@dataclass
class Local:
    name: str
    node: ts.Node  # the declaration
    init: ts.Node | None
    type: str
    writes: int = 0  # assignments after the declaration


@dataclass
class KernelModel:
    kernel: Kernel
    loops: list[Loop] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    barriers: list[ts.Node] = field(default_factory=list)
    atomics: list[ts.Node] = field(default_factory=list)
    returns: list[ts.Node] = field(default_factory=list)
    shared: dict[str, SharedArray] = field(default_factory=dict)
    locals: dict[str, Local] = field(default_factory=dict)  # by name: the last declaration of each
    declared: dict[str, list[Local]] = field(default_factory=dict)  # by name: every declaration, in order
    escapes: set[str] = field(default_factory=set)  # pointer params used other than by subscript
    # ... and other than to point into their own buffer (`T* p = x + off;`, `reinterpret_cast<V*>(x + off)`)
    shared_pointers: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)
    block_ties: dict[int, str] = field(default_factory=dict)  # axis -> value template parameter used as blockDim
    aliases: dict[str, str] = field(default_factory=dict)  # local pointer -> the pointer param it points into
    alias_offsets: dict[str, Poly | None] = field(default_factory=dict)  # local pointer -> its offset (None: opaque)

    # -- queries ------------------------------------------------------------------------------
    @cached_property
    def shape(self) -> Shape:
        """The body's shape: prelude, guard, guarded body (cuopt/source/analysis.py)."""
        return shape_of(self.kernel.body)

    @cached_property
    def roles(self) -> ThreadRoles:
        """What the kernel reads of the built-ins along each axis, and in what role
        (cuopt/source/thread_roles.py)."""
        return thread_roles(self)

    @cached_property
    def types(self) -> ExprTypes:
        """The static types of the kernel's names and expressions."""
        return ExprTypes(self.kernel)

    @cached_property
    def pointer_params(self) -> dict[str, object]:
        return {p.name: p for p in self.kernel.params if p.pointer}

    def global_accesses(self, name: str | None = None) -> list[Access]:
        return [a for a in self.accesses if a.space == "global" and (name is None or a.array == name)]

    def written(self, name: str) -> bool:
        return any(a.write for a in self.accesses if a.array == name)

    def local_at(self, name: str, use: ts.Node, site: ts.Node | None = None) -> Local | None:
        """The declaration of local `name` that `use` reads: the innermost one before `use` in a block
        that holds both; None where none is in scope there (a parameter, or another block's name).
        A `use` outside the kernel's tree (in a macro's text, parsed apart) is read where the macro
        is used, `site`; without one, through the last declaration of `name`."""
        found = self.declared.get(name)
        if not found:
            return None
        if root_of(use) != root_of(self.kernel.body):  # in a macro's text, parsed apart
            if site is None:
                return self.locals[name]
            use = site
        in_scope = [d for d in found if d.node.end_byte <= use.start_byte and within(use, d.node.parent)]
        return max(in_scope, key=lambda d: d.node.start_byte, default=None)

    def read_only(self, name: str) -> bool:
        return name not in self.escapes and not self.written(name)

    def is_variable(self, name: str) -> bool:
        """Whether `name` names a value in the kernel: a local, a loop counter, a parameter or an
        object-like macro (never a type)."""
        macros = self.kernel.macros
        return name in self.locals or any(lp.var == name for lp in self.loops) or \
            self.kernel.param(name) is not None or bool(macros and macros.object_like(name) is not None)

    def tie_value(self, name: str) -> int | None:
        """The value of what a kernel may take for blockDim (`block_ties`): a value template
        parameter, an integer macro or an integer literal; None for anything else."""
        value = self.kernel.constant(name)
        if value is None and self.kernel.macros:
            value = self.kernel.macros.integer(name)
        if value is None and re.fullmatch(r"\d+[uU]?", name):
            value = int(name.rstrip("uU"))
        return value

    def loop_of(self, node: ts.Node) -> int | None:
        return next((i for i, lp in enumerate(self.loops) if lp.node == node), None)

    def inner_loops(self) -> list[int]:
        """Loops that contain no other loop."""
        parents = {lp.parent for lp in self.loops}
        return [i for i in range(len(self.loops)) if i not in parents]

    def poly(self, node: ts.Node | None, *, uniform: bool = False) -> Poly | None:
        """`node` as a polynomial, or None. A quotient `e / d` or remainder `e % d` counts only where
        it cancels: `b * T + t` with `b = i / T` and `t = i % T` (as `e % d == e - d * (e / d)`) is `i`;
        with `uniform`, also where neither `e` nor `d` changes across threads or loop iterations
        (`Mask_Width / 2`): a symbol whose name is the quotient in C, `((Mask_Width) / (2))`, which the
        spec's sizes do not give."""
        return self.poly_sum([node], uniform=uniform)

    def poly_sum(self, nodes: list[ts.Node], *, uniform: bool = False) -> Poly | None:
        """The sum of `nodes` as one polynomial (quotients cancel across the terms), or None."""
        converter, total = _Converter(self, uniform), Poly.const(0)
        for node in nodes:
            p = converter.convert(node, 0)
            if p is None:
                return None
            total = total + p
        return None if any(s.startswith(_QUOTIENT) for s in total.symbols()) else total

    def coalescing(self, access: Access) -> str:
        """'coalesced' (unit stride in threadIdx.x), 'broadcast' (same address across x),
        'strided' or 'opaque', for the innermost (fastest) index."""
        p = access.index[-1]
        if p is None:
            return "opaque"
        if p.degree_in(THREAD) > 1:
            return "opaque"
        c = p.coefficient("threadIdx.x")
        if not c.terms:
            return "broadcast"
        return "coalesced" if c.constant() == 1 else "strided"


def analyze(kernel: Kernel) -> KernelModel:
    model = KernelModel(kernel)
    _collect_locals(model, kernel.body)
    _collect(model, kernel.body, (), 0)
    return model


# -- collection -------------------------------------------------------------------------------
def _collect_locals(model: KernelModel, body: ts.Node) -> None:
    params = {p.name for p in model.kernel.params}
    for node in walk(body):
        if node.type == "declaration":
            type_text = text(node.child_by_field_name("type")) if node.child_by_field_name("type") else ""
            qualifiers = [text(c) for c in node.children if c.type == "type_qualifier"]
            storage = [text(c) for c in node.children if c.type == "storage_class_specifier"]
            for d in node.children_by_field_name("declarator"):
                if "__shared__" in qualifiers:
                    _shared(model, d, resolve_type(type_text, model.kernel.macros), "extern" in storage)
                    continue
                name_node, init = d, None
                if d.type == "init_declarator":
                    name_node, init = d.child_by_field_name("declarator"), d.child_by_field_name("value")
                if name_node is not None and name_node.type == "identifier":
                    local = Local(text(name_node), node, init, type_text)
                    model.locals[local.name] = local
                    model.declared.setdefault(local.name, []).append(local)
                elif name_node is not None and name_node.type == "pointer_declarator" and init is not None:
                    _alias(model, name_node, init)
        elif (name := assigned_target(node)) is not None:
            if name in model.locals:
                (model.local_at(name, node) or model.locals[name]).writes += 1
            elif name in model.aliases:
                del model.aliases[name]  # repointed: no longer known
                model.alias_offsets.pop(name, None)
            elif name in params:
                model.escapes.add(name)
        elif node.type == "pointer_expression" and operator_of(node) == "&":
            arg = node.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier" and text(arg) in model.locals:
                (model.local_at(text(arg), arg) or model.locals[text(arg)]).writes += 1


def _alias(model: KernelModel, declarator: ts.Node, init: ts.Node) -> None:
    """`T* p = param` or `T* p = param + offset` (offset first or second): p points into param."""
    inner = declarator.child_by_field_name("declarator")
    if inner is None or inner.type != "identifier":
        return
    parts = pointer_summands(init)
    params = {p.name for p in model.kernel.params if p.pointer}
    named = [text(n) for n in parts if n.type == "identifier" and text(n) in params]
    if len(named) == 1:
        model.aliases[text(inner)] = named[0]
        model.alias_offsets[text(inner)] = model.poly_sum([n for n in parts if text(n) != named[0]])


def pointer_summands(node: ts.Node) -> list[ts.Node]:
    """The terms of a pointer sum: `x + a + b` as summands, and `&x[a + b]` (the address of an
    element) as x, a and b."""
    element = node.child_by_field_name("argument") if node.type == "pointer_expression" and operator_of(node) == "&" \
        else None
    if element is not None and element.type == "subscript_expression":
        index = element.child_by_field_name("indices")
        if index is not None and len(index.named_children) == 1:
            return [element.child_by_field_name("argument"), *summands(index.named_children[0])]
    return summands(node)


def summands(node: ts.Node) -> list[ts.Node]:
    """The terms of `a + b + c` (any grouping of `+`); `[node]` for anything else."""
    if node.type == "binary_expression" and operator_of(node) == "+":
        return [t for side in ("left", "right") for t in summands(node.child_by_field_name(side))]
    return [node]


def _shared(model: KernelModel, d: ts.Node, element: str, extern: bool) -> None:
    dims: list[int | None] = []
    node = d
    while node is not None and node.type == "array_declarator":
        size = node.child_by_field_name("size")
        dims.append(_dimension(model, size) if size is not None else None)
        node = node.child_by_field_name("declarator")
    if node is not None and node.type == "identifier":
        name = text(node)
        model.shared[name] = SharedArray(name, tuple(reversed(dims)), extern, d, element)


def _collect(model: KernelModel, node: ts.Node, loops: tuple[int, ...], depth: int) -> None:
    for child in node.children:
        _visit(model, child, loops, depth)


def _visit(model: KernelModel, node: ts.Node, loops: tuple[int, ...], depth: int) -> None:
    t = node.type
    if t == "for_statement":
        index = len(model.loops)
        model.loops.append(_loop(model, node, loops, depth))
        _collect(model, node, loops + (index,), depth + 1)
        return
    if t in ("while_statement", "do_statement"):
        # not analysed as loops; accesses inside are opaque to loop-based rules
        _collect(model, node, loops, depth)
        return
    if t == "subscript_expression":
        access = _access(model, node, loops)
        if access is not None:
            model.accesses.append(access)
            for idx in access.indices:
                _visit(model, idx, loops, depth)
            return
    if t == "call_expression":
        fn = text(node.child_by_field_name("function"))
        if model.kernel.macros.function_like(fn) is None:  # a macro's "call" is no function call
            model.calls.add(fn)
        if fn in BARRIERS:
            model.barriers.append(node)
        elif fn.startswith(ATOMIC_PREFIX):
            model.atomics.append(node)
            args = node.child_by_field_name("arguments")
            target = args.named_children[0] if args is not None and args.named_children else None
            if target is not None and target.type == "identifier" and text(target) in model.pointer_params:
                # atomicAdd(out, v) updates out[0]
                model.accesses.append(Access(target, text(target), "global", (), (Poly.const(0),),
                                             True, True, True, loops))
                for other in args.named_children[1:]:
                    _visit(model, other, loops, depth)
                return
        else:
            args = node.child_by_field_name("arguments")
            for a in (args.named_children if args else []):
                if a.type == "identifier" and text(a) in model.pointer_params:
                    model.escapes.add(text(a))
    if t == "return_statement" and not _in_lambda(node):  # a lambda's return leaves the lambda, not the thread
        model.returns.append(node)
    if t == "identifier" and text(node) in model.pointer_params:
        parent = node.parent
        if parent is not None and not (parent.type == "subscript_expression"
                                       and parent.child_by_field_name("argument") == node) \
                and not _null_test(node):
            model.escapes.add(text(node))
            if not _derived(model, node):
                model.shared_pointers.add(text(node))
    _collect(model, node, loops, depth)


_NULLS = {"NULL", "nullptr", "0", "(void*)0", "((void*)0)"}


def _null_test(node: ts.Node) -> bool:
    """Whether this use of a pointer only tests it for null: `p != NULL`, `p == nullptr`, `!p`, or `p`
    as a condition of its own (`if (p)`, `p ? a : b`, `p && ...`); it reads no element and makes no alias."""
    use, parent = node, node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        use, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "binary_expression" and operator_of(parent) in ("==", "!="):
        other = parent.child_by_field_name("right" if parent.child_by_field_name("left") == use else "left")
        return other is not None and text(other).replace(" ", "") in _NULLS
    if parent.type == "unary_expression" and operator_of(parent) == "!":
        return True
    if parent.type == "binary_expression" and operator_of(parent) in ("&&", "||"):
        return True
    if parent.type == "condition_clause":
        return True
    return parent.type == "conditional_expression" and parent.child_by_field_name("condition") == use


def _derived(model: KernelModel, node: ts.Node) -> bool:
    """Whether this use of a pointer parameter only points into its own buffer: the initializer of a
    local pointer, or the argument of a cast, as the parameter itself or plus/minus an offset that
    names no other pointer parameter."""
    use = node
    parent = node.parent
    while parent is not None and (parent.type == "parenthesized_expression" or
                                  (parent.type == "binary_expression" and operator_of(parent) in ("+", "-"))):
        if parent.type == "binary_expression":
            other = parent.child_by_field_name("right" if parent.child_by_field_name("left") == use else "left")
            if operator_of(parent) == "-" and other == parent.child_by_field_name("left"):
                return False  # `off - x` is no pointer into x
            if other is None or any(n.type == "identifier" and text(n) in model.pointer_params for n in walk(other)):
                return False
        use, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "init_declarator":
        return parent.child_by_field_name("value") == use
    if parent.type == "argument_list" and parent.named_child_count == 1:
        fn = text(parent.parent.child_by_field_name("function")) if parent.parent is not None else ""
        return fn.startswith(("reinterpret_cast", "static_cast"))
    return False


def _loop(model: KernelModel, node: ts.Node, loops: tuple[int, ...], depth: int) -> Loop:
    var = cmp = step = start_node = bound_node = None
    counter_type = ""
    init = node.child_by_field_name("initializer")
    if init is not None and init.type == "declaration":
        d = init.child_by_field_name("declarator")
        if d is not None and d.type == "init_declarator":
            var = text(d.child_by_field_name("declarator"))
            start_node, counter_type = d.child_by_field_name("value"), text(init.child_by_field_name("type"))
    elif init is not None and init.type == "assignment_expression" and operator_of(init) == "=":
        var, start_node = text(init.child_by_field_name("left")), init.child_by_field_name("right")
    cond = node.child_by_field_name("condition")
    if var and cond is not None and cond.type == "binary_expression":
        left, right, op = cond.child_by_field_name("left"), cond.child_by_field_name("right"), operator_of(cond)
        if text(left) == var and op in ("<", "<=", "!=", ">", ">="):
            cmp, bound_node = op, right
    start, bound = model.poly(start_node), model.poly(bound_node)
    folded = tuple(None if q is None else q.constant()
                   for q in (fold_macros(model, start), fold_macros(model, bound)))
    update = increment(node.child_by_field_name("update"))
    inc = update if update is not None and update.counter == var else None
    stride = None
    if inc is not None and inc.additive:
        value = 1 if inc.step is None else _constant(model, inc.step)  # a literal, a macro, `BLOCK` in a template
        step = None if value is None else value * (1 if inc.op == "+" else -1)
        stride = model.poly(inc.step) if inc.op == "+" and inc.step is not None else None
    if var and _assigned_in(node.child_by_field_name("body"), var):
        step = stride = None
    has_barrier = any(n.type == "call_expression" and text(n.child_by_field_name("function")) in BARRIERS
                      for n in walk(node))
    prev = node.prev_named_sibling
    pragma = prev if prev is not None and prev.type == "preproc_call" and "unroll" in text(prev) else None
    return Loop(node, var, start, bound, cmp, step, depth, loops[-1] if loops else None, has_barrier, pragma,
                stride, folded, start_node, bound_node, counter_type, update)


def fold_macros(model: KernelModel, p: Poly | None) -> Poly | None:
    """`p` with the object-like integer macros that `-D` cannot override (`#define R 2`, no
    `#ifndef` guard) at their values: a loop's range in them is a compile-time constant. A guarded
    macro is a size that each size set may set, so it stays a name."""
    macros = model.kernel.macros
    if p is None or not macros:
        return p
    for name in p.symbols():
        value = macros.integer(name) if not model.kernel.hides(name) else None
        if value is not None and not macros.overridable(name):
            p = p.substitute(name, Poly.const(value))
    return p


def _assigned_in(body: ts.Node | None, var: str) -> bool:
    if body is None:
        return False
    return any((target := assigned(n)) is not None and text(target) == var for n in walk(body))


def _access(model: KernelModel, node: ts.Node, loops: tuple[int, ...]) -> Access | None:
    indices: list[ts.Node] = []
    base = node
    while base.type == "subscript_expression":
        idx = base.child_by_field_name("indices")
        if idx is None or not idx.named_children:
            return None
        indices.append(idx.named_children[0])
        base = base.child_by_field_name("argument")
    if base.type != "identifier":
        return None
    name = text(base)
    if name in model.pointer_params:
        space = "global"
    elif name in model.shared:
        space = "shared"
    else:
        space = "local"
    indices.reverse()
    read, write, atomic = _usage(node)
    return Access(node, name, space, tuple(indices), tuple(model.poly(i) for i in indices), read, write,
                  atomic, loops)


MATH_FUNCTIONS = frozenset({  # CUDA's math functions: values in, a value out
    "expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "powf", "sqrtf", "rsqrtf",
    "cbrtf", "sinf", "cosf", "tanf", "sincosf", "tanhf", "erff", "erfcf", "fmaxf", "fminf", "fabsf", "fmaf",
    "exp", "exp2", "log", "log2", "pow", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "erf", "fmax", "fmin",
    "fabs", "fma", "__expf", "__logf", "__sinf", "__cosf", "__powf", "__fdividef",
})


def _usage(node: ts.Node) -> tuple[bool, bool, bool]:
    parent = node.parent
    if parent is None:
        return True, False, False
    if parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
        return operator_of(parent) != "=", True, False
    if parent.type == "update_expression":
        return True, True, False
    if parent.type == "pointer_expression" and operator_of(parent) == "&":
        call = parent.parent.parent if parent.parent is not None else None
        fn = text(call.child_by_field_name("function")) if call is not None and call.type == "call_expression" else ""
        if fn.startswith(ATOMIC_PREFIX):
            return True, True, True
        if fn in READ_ONLY_LOADS and parent.parent.named_child_count == 1:
            return True, False, False
        return True, True, False  # address taken: assume both
    if parent.type == "parenthesized_expression":
        return _usage(parent)
    return True, False, False


def _dimension(model: KernelModel, size: ts.Node) -> int | None:
    """An array dimension: a literal, a macro the compiler replaces by a constant (`TILE`), or a
    constant expression over a template instantiation's value parameters (`BLOCK / 2`)."""
    value = _int_literal(size)
    if value is None and size.type == "identifier":
        value = model.kernel.macros.integer(text(size))
    return _constant(model, size) if value is None else value


def _constant(model: KernelModel, node: ts.Node | None) -> int | None:
    """An integer literal, or a constant expression over object-like macros and a template
    instantiation's value parameters."""
    value = _int_literal(node)
    macros = model.kernel.macros
    if value is None and node is not None and node.type == "identifier" and macros:
        body = macros.object_like(text(node))
        value = _int_literal_text(body) if body is not None else None
    if value is None and model.kernel.constants:
        p = model.poly(node)
        value = p.constant() if p is not None else None
    return value


def _int_literal(node: ts.Node | None) -> int | None:
    if node is None or node.type != "number_literal":
        return None
    return _int_literal_text(text(node))


def _int_literal_text(code: str) -> int | None:
    """`32`, `-1`, `0x20`, `32u`; None for anything else."""
    code = code.strip()
    sign = -1 if code.startswith("-") else 1
    if not is_integer_literal(code.removeprefix("-")):
        return None
    try:
        return sign * int(code.removeprefix("-").rstrip("uUlL"), 0)
    except ValueError:
        return None


# -- expressions to polynomials ---------------------------------------------------------------
_QUOTIENT = "quotient:"  # a symbol for `e / d`, kept only inside one conversion


class _Converter:
    MAX_DEPTH = 40

    def __init__(self, model: KernelModel, uniform: bool = False) -> None:
        self.model, self.uniform = model, uniform
        self.loop_vars = {lp.var for lp in model.loops if lp.var}
        self.scalars = {p.name for p in model.kernel.params if not p.pointer}
        self.macros = model.kernel.macros
        self.site: ts.Node | None = None  # where the macro being read is used, while its text is read

    def convert(self, node: ts.Node | None, depth: int) -> Poly | None:
        if node is None or depth > self.MAX_DEPTH:
            return None
        t = node.type
        if t == "number_literal":
            value = _int_literal(node)
            return Poly.const(value) if value is not None else None
        if t == "parenthesized_expression":
            inner = node.named_children
            return self.convert(inner[0], depth + 1) if len(inner) == 1 else None
        misread = self._misread_cast(node) if t in ("binary_expression", "cast_expression") else None
        if misread is not None:
            return self._expanded(node, misread, depth)
        if t == "cast_expression":
            return self.convert(node.child_by_field_name("value"), depth + 1)
        if t == "field_expression":
            name = text(node).replace(" ", "")
            return Poly.symbol(name) if name in BUILTINS else None
        if t == "identifier":
            return self._identifier(node, depth)
        if t == "call_expression" and self.macros:
            return self._macro_call(node, depth)
        if t == "unary_expression" and operator_of(node) in ("-", "+"):
            inner = self.convert(node.child_by_field_name("argument"), depth + 1)
            return None if inner is None else (-inner if operator_of(node) == "-" else inner)
        if t == "binary_expression":
            op = operator_of(node)
            tied = self._block_tie(node) if op == "*" else None
            if tied is not None:
                return tied
            left = self.convert(node.child_by_field_name("left"), depth + 1)
            right = self.convert(node.child_by_field_name("right"), depth + 1)
            if left is None or right is None:
                return None
            if op == "+":
                return left + right
            if op == "-":
                return left - right
            if op == "*":
                return left * right
            if op == "<<" and right.constant() is not None and 0 <= right.constant() < 32:
                return left * Poly.const(2 ** right.constant())
            if op in ("/", ">>", "%") and left.constant() is not None and right.constant():
                a, b = left.constant(), right.constant()
                q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
                return Poly.const(q if op == "/" else a >> b if op == ">>" else a - b * q)
            if op in ("/", "%") and right.constant() != 0:
                fixed = self.uniform and not (left.symbols() | right.symbols()) & (BUILTINS | self.loop_vars) \
                    and not any(s.startswith(_QUOTIENT) for s in left.symbols() | right.symbols())
                quotient = Poly.symbol(f"(({left}) / ({right}))" if fixed else f"{_QUOTIENT}({left})/({right})")
                return quotient if op == "/" else left - right * quotient
        return None

    def _block_tie(self, node: ts.Node) -> Poly | None:
        """`blockIdx.x * BLOCK` with BLOCK a value template parameter, or `blockIdx.x * TILE +
        threadIdx.x` with TILE an integer macro or literal: the kernel takes BLOCK (TILE) for
        blockDim.x, so the product is blockIdx.x * blockDim.x (and the tie is recorded; the
        engine checks it against the launch)."""
        sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        for a, b in (sides, sides[::-1]):
            b = _bare(b) if b is not None else None
            name = text(b).replace(" ", "") if b is not None else ""
            if a is None or b is None or b.type != "field_expression" or name not in BLOCK:
                continue
            axis = BLOCK.index(name)
            template = a.type == "identifier" and self.model.kernel.constant(text(a)) is not None
            if not template and (self.model.tie_value(text(a)) is None or not _plus_thread(self.model, node, axis)):
                continue
            self.model.block_ties[axis] = text(a)
            return Poly.symbol(name) * Poly.symbol(DIM[axis])
        return None

    def _identifier(self, node: ts.Node, depth: int) -> Poly | None:
        name = text(node)
        constant = self.model.kernel.constant(name)
        if constant is not None:  # a value template parameter of the instantiation
            return Poly.const(constant)
        body = self.macros.object_like(name) if self.macros and not self.model.kernel.hides(name) else None
        if body is not None:  # `NI` (an integer) is a size by its name; `BOUND_NI` is what it stands for
            return Poly.symbol(name) if is_integer_literal(body) else self._expanded(node, body, depth)
        if name in self.loop_vars:
            return Poly.symbol(name)
        local = self.model.local_at(name, node, self.site)
        if local is not None:
            if local.writes == 0 and local.init is not None:
                return self.convert(local.init, depth + 1)
            return None
        if name in self.scalars and name not in self.model.escapes:
            return Poly.symbol(name)
        return None

    def _misread_cast(self, node: ts.Node) -> str | None:
        """`node`'s text read again where it starts (itself, or down the left operands) with a
        variable's name the parser took for a cast's type (paren_names.py): `(y) + x * h` as
        `y + x * h`. None where no such cast starts it."""
        cast = node
        while cast is not None and cast.type == "binary_expression":
            cast = cast.child_by_field_name("left")
        name = misread_name(cast, self.model.is_variable) if cast is not None else None
        if name is None:
            return None
        raw, value = node.text or b"", cast.child_by_field_name("value")
        return (raw[:cast.start_byte - node.start_byte] + name.encode() + b" " +
                raw[value.start_byte - node.start_byte:]).decode()

    def _macro_call(self, node: ts.Node, depth: int) -> Poly | None:
        """`IDX(i, j)`, a function-like macro: its body with the arguments put in."""
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if fn is None or fn.type != "identifier" or args is None:
            return None
        body = self.macros.substitute(text(fn), [text(a) for a in args.named_children])
        return None if body is None else self._expanded(node, body, depth)

    def _expanded(self, use: ts.Node, body: str, depth: int) -> Poly | None:
        """The polynomial of a macro's replacement text at `use`, when it reads the same there
        as on its own (`#define M n + 1` in `2 * M` does not)."""
        tree = expansion(body)
        if tree is None or not fits(use, tree):
            return None
        outer = self.site
        self.site = outer or use  # a macro within a macro's text is used where the outer one is
        try:
            return self.convert(tree, depth + 1)
        finally:
            self.site = outer


def _plus_thread(model: KernelModel, product: ts.Node, axis: int) -> bool:
    """Whether `product` is summed with threadIdx along `axis`: `blockIdx.x * TILE + threadIdx.x`, or
    through a local every use of which is (`int xoffset = blockIdx.x * 1024; ... xoffset +
    threadIdx.x`, generated code)."""
    node = product
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    parent = node.parent
    if parent is not None and parent.type == "init_declarator" and parent.child_by_field_name("value") == node:
        name = parent.child_by_field_name("declarator")
        uses = [n for n in walk(model.kernel.body) if n.type == "identifier" and text(n) == text(name) and n != name]
        return bool(uses) and all(_plus_thread(model, u, axis) for u in uses)
    if parent is None or parent.type != "binary_expression" or operator_of(parent) != "+":
        return False
    other = parent.child_by_field_name("right" if parent.child_by_field_name("left") == node else "left")
    return other is not None and text(_bare(other)).replace(" ", "") == THREAD[axis]


def _bare(node: ts.Node) -> ts.Node:
    """`node` without the parentheses and casts around it: `((int)threadIdx.x)` is `threadIdx.x`."""
    while node.type in ("parenthesized_expression", "cast_expression"):
        inner = node.child_by_field_name("value") if node.type == "cast_expression" else \
            (node.named_children[0] if node.named_child_count == 1 else None)
        if inner is None:
            break
        node = inner
    return node


def _in_lambda(node: ts.Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type != "function_definition":
        if parent.type == "lambda_expression":
            return True
        parent = parent.parent
    return False
