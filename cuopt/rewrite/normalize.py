"""The normal form the rules match, so that they see through spelling: loop macros
(`CUDA_KERNEL_LOOP(i, n) { ... }`) are the `for` loops they expand to, 24-bit multiplies
(`__umul24(blockIdx.x, blockDim.x)`) are products, cooperative groups' ranks on a 1D launch
(`grid.thread_rank()`) are the built-ins, locals declared first and
assigned once later (`int i, j; i = e;`) are declared with that value (`int i = e;`), guards
through a bool local (`bool mask = i < n; if (mask)`) test the condition itself, counted `while`
loops (stepping by one, by a stride `k += e`, or halving `k /= 2`) and loops whose counter is
declared before them become `for (int k = a; k < b; ++k)`, `k <= b - 1` becomes `k < b`, index
locals (`int idx = i * n + j; a[idx]`) are put into the subscripts they name, pointers into a
parameter read only by subscript (`const float* row = x + r * n; row[j]`) become subscripts of
the parameter (`x[r * n + j]`), index helpers (`__device__ int at(int x, int y, int w) { return
y * w + x; }`) called in a subscript are put in with their arguments, locals that only name a
built-in (`int tid = threadIdx.x;`) are put into the sums and products of index locals (`int i =
bid * blockDim.x + tid;`), and fused updates `acc = fmaf(a, b, acc)` become `acc += a * b` (which
nvcc contracts to the same fused multiply-add unless built with `-fmad=false`), and accessor
macros (`#define A(i, j) a[(i) * lda + (j)]`) become the subscripts they expand to, and update
helpers (`welford_update(v, mean, m2, n);`, a void function of reference parameters) are put in as
their statements. Then a tile-row loop (`for (j = 0; j < TILE_DIM; j += BLOCK_ROWS)` under a
block of BLOCK_ROWS rows, cuopt/rewrite/tile_rows.py) becomes one tile row per thread under a block
of TILE_DIM rows (before guards put the index alone on the left): the only step that changes
the launch, so each rewrite of such a kernel states its launch. The engine offers each rule on the normal form; a kernel already in it is
unchanged."""
from __future__ import annotations

import re
from dataclasses import replace

import tree_sitter as ts

from cuopt.rewrite.context import Context
from cuopt.rewrite.edits import Edit, apply
from cuopt.rewrite.tile_rows import tile_rows
from cuopt.rewrite.transforms.common import reindent
from cuopt.source.accessors import accessor_calls
from cuopt.source.affine import BUILTINS, Poly, axis_of_global_index
from cuopt.source.aliases import builtin_aliases, integral
from cuopt.source.atomics import atomic_addresses
from cuopt.source.casts import named_casts
from cuopt.source.declarations import single_assignments
from cuopt.source.groups import group_ranks
from cuopt.source.helpers import helper_calls
from cuopt.source.kernels import resolve_type
from cuopt.source.loop_macros import loop_macro_headers
from cuopt.source.model import MATH_FUNCTIONS, KernelModel, Local, pointer_summands
from cuopt.source.mul24 import mul24_products
from cuopt.source.parse import (INTEGRAL, assigned, assigned_name, assigns, beats, declared_names, in_subscript,
                                names_read, text, unparen, walk)
from cuopt.source.updaters import updater_calls
from cuopt.source.whiles import bare_for_loops, counter_type, while_loops
from cuopt.spec.dtypes import normalize_c_type


def normalize(ctx: Context) -> Context:
    """`ctx` with its kernel in the normal form (the same context when it already is)."""
    ctx = _edited(ctx, (_loop_macros, _named_casts, _mul24_products, _group_ranks, _atomic_addresses, _accessors, _updaters, _single_assignments,
                        _mask_guards, _store_guards, _compare_selects, _while_loops, _bare_for_loops, _loop_headers, _dead_counters,
                        _builtin_aliases, _index_helpers, _index_locals, _row_pointers, _fused_updates))
    ctx = tile_rows(ctx)  # the one step that changes the launch: before guards move their offsets
    return _edited(ctx, (_guard_offsets, _loaded_once))


def _edited(ctx: Context, steps: tuple) -> Context:
    """`ctx` after each step's edits, in order."""
    for step in steps:
        edits = step(ctx)
        if edits:
            ctx = replace(ctx, source=apply(ctx.source, edits))
    return ctx


def _replaced(ctx: Context, replacements: list[tuple[ts.Node, str]]) -> list[Edit]:
    """Edits for (node, new text) pairs of cuopt/source (the analysis of `cuopt init` applies the
    same pairs, cuopt/source/plain.py); a node replaced by nothing goes with its whole lines."""
    return [Edit.replace(node, new) if new else _whole_lines(ctx.source, node) for node, new in replacements]


def _loop_macros(ctx: Context) -> list[Edit]:
    """`CUDA_KERNEL_LOOP(i, n) { ... }`, a macro that stands for a loop's header, as the `for` header
    it expands to (cuopt/source/loop_macros.py)."""
    return _replaced(ctx, loop_macro_headers(ctx.kernel))


def _named_casts(ctx: Context) -> list[Edit]:
    """`static_cast<size_t>(blockIdx.x)` as `((size_t)(blockIdx.x))` (cuopt/source/casts.py)."""
    return _replaced(ctx, named_casts(ctx.kernel))


def _mul24_products(ctx: Context) -> list[Edit]:
    """`__umul24(blockIdx.x, blockDim.x)` as `(blockIdx.x * blockDim.x)` (cuopt/source/mul24.py)."""
    return _replaced(ctx, mul24_products(ctx.kernel))


def _group_ranks(ctx: Context) -> list[Edit]:
    """`grid.thread_rank()` of `cg::this_grid()` on a one-dimensional launch as
    `((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x)` (cuopt/source/groups.py)."""
    return _replaced(ctx, group_ranks(ctx.kernel, ctx.dims == 1))


def _atomic_addresses(ctx: Context) -> list[Edit]:
    """`atomicAdd(bins + v, 1)` as `atomicAdd(&bins[v], 1)` (cuopt/source/atomics.py)."""
    return _replaced(ctx, atomic_addresses(ctx.kernel))


def _accessors(ctx: Context) -> list[Edit]:
    """`A(row, k)`, a macro that stands for one array element (`#define A(i, j) a[(i) * lda + (j)]`),
    as the subscript it expands to."""
    return _replaced(ctx, accessor_calls(ctx.kernel))


# -- declarations -------------------------------------------------------------------------------
def _single_assignments(ctx: Context) -> list[Edit]:
    """`int i, j; i = e;` as `int i = e;` (and `int j;`, or no declaration left): the older C style
    of declaring first (cuopt/source/declarations.py)."""
    return _replaced(ctx, single_assignments(ctx.kernel))


def _mask_guards(ctx: Context) -> list[Edit]:
    """`bool mask = i < n; if (mask) { ... }` (or `const bool`) as `if (i < n) { ... }`, where the
    `if` comes later in the same block, mask names nothing else, and its value is arithmetic over
    parameters, locals and built-ins that no statement between changes (the declaration goes)."""
    known = {p.name for p in ctx.kernel.params} | set(ctx.model.locals)
    edits = []
    for decl in walk(ctx.kernel.body):
        found = _bool_local(decl)
        if found is None:
            continue
        name, value = found
        names = names_read(value)
        uses = [n for n in walk(ctx.kernel.body) if n.type == "identifier" and text(n) == name
                and not decl.start_byte <= n.start_byte < decl.end_byte]
        guard = uses[0].parent.parent if len(uses) == 1 and uses[0].parent.type == "condition_clause" else None
        if guard is None or guard.type != "if_statement" or not names <= known or not _pure(value):
            continue
        between, stmt = [], decl.next_named_sibling
        while stmt is not None and stmt.start_byte != guard.start_byte:
            between.append(stmt)
            stmt = stmt.next_named_sibling
        if stmt is None or any(_changes(s, names) for s in between) or \
                any(assigned_name(n) & names for n in walk(ctx.kernel.body) if n.type == "pointer_expression"):
            continue
        edits += [Edit.replace(uses[0], text(value)), _whole_lines(ctx.source, decl)]
    return edits


def _store_guards(ctx: Context) -> list[Edit]:
    """`int i = ...; float acc = 0; for (...) acc += ...; if (i < n) y[i] = acc;` as `int i = ...;
    if (i < n) { float acc = 0; for (...) acc += ...; y[i] = acc; }`: work that only computes
    locals, a loop among it, moves under the guard of the kernel's last statement, a guarded
    store, so threads past the bound skip it (they skip reads, never add any) and every store
    stays. The declarations the guard reads stay before it. An `if` of the moved work with the
    guard's own condition opens into the block. Work with a barrier, an atomic, a return or any
    other call keeps its place."""
    m = ctx.model
    stmts = [c for c in ctx.kernel.body.named_children if c.type != "comment"]
    last = stmts[-1] if stmts else None
    if last is None or last.type != "if_statement" or last.child_by_field_name("alternative") is not None:
        return []
    cond = last.child_by_field_name("condition")
    value = cond.child_by_field_name("value") if cond is not None else None
    if value is None or not _pure(value) or not any(a.write and a.space == "global" and _inside(a.node, last)
                                                    for a in m.accesses):
        return []
    needed, kept, moved = names_read(value), [], []
    for st in reversed(stmts[:-1]):
        if st.type == "declaration" and declared_names(st) & needed:
            kept.append(st)
            needed |= names_read(st)
        else:
            moved.append(st)
    kept.reverse()
    moved.reverse()
    if not any(n.type in _LOOPS for st in moved for n in walk(st)) or not all(_local_work(m, st) for st in moved):
        return []  # declarations alone: nothing a rule needs under the guard
    for st in moved:
        later = [k for k in kept if k.start_byte > st.start_byte]
        if _changes(st, needed) or any(_changes(st, names_read(k)) for k in later):
            return []
    guard = text(value)
    indent = ctx.source[ctx.source.rfind(b"\n", 0, last.start_byte) + 1:last.start_byte].decode()
    parts = [_opened(st, guard) for st in moved + [last]]
    declared = [name for part in parts for st in part for name in (declared_names(st) if st.type == "declaration" else ())]
    if indent.strip() or len(declared) != len(set(declared)):
        return []  # the guard shares its line, or the block would declare a name twice
    block = "\n".join(reindent(st, text(st), indent + "    ") for part in parts for st in part)
    return [_whole_lines(ctx.source, st) for st in moved] + [Edit.replace(last, f"if ({guard}) {{\n{block}\n{indent}}}")]


def _inside(node: ts.Node, outer: ts.Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _local_work(m: KernelModel, st: ts.Node) -> bool:
    """`st` computes locals only: no store to memory, and calls only to math functions that take no
    address."""
    if st.type not in ("declaration", "expression_statement", "for_statement", "while_statement", "do_statement",
                       "if_statement", "compound_statement"):
        return False
    if any(a.write and a.space != "local" and _inside(a.node, st) for a in m.accesses):
        return False
    for n in walk(st):
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn not in MATH_FUNCTIONS and fn not in _VALUE_CALLS or \
                    any(c.type == "pointer_expression" for c in walk(n.child_by_field_name("arguments"))):
                return False
        elif n.type in ("break_statement", "continue_statement", "goto_statement", "return_statement") \
                and not any(p.type in _LOOPS for p in _ancestors(n, st)):
            return False
    return True


_VALUE_CALLS = frozenset({"min", "max", "abs", "fabsf", "__ldg"})
_LOOPS = ("for_statement", "while_statement", "do_statement")


def _ancestors(node: ts.Node, top: ts.Node) -> list[ts.Node]:
    out, p = [], node.parent
    while p is not None and p != top.parent:
        out.append(p)
        p = p.parent
    return out


def _opened(st: ts.Node, guard: str) -> list[ts.Node]:
    """What `st` puts into the guarded block: an `if (guard)` without `else` its body's statements."""
    if st.type == "if_statement" and st.child_by_field_name("alternative") is None and \
            text(st.child_by_field_name("condition").child_by_field_name("value") or st) == guard:
        body = st.child_by_field_name("consequence")
        return body.named_children if body.type == "compound_statement" else [body]
    return [st]


def _bool_local(decl: ts.Node) -> tuple[str, ts.Node] | None:
    """(name, value) of `bool name = value;` or `const bool name = value;`, one declarator."""
    if decl.type != "declaration" or text(decl.child_by_field_name("type")) != "bool":
        return None
    ds = decl.children_by_field_name("declarator")
    extra = [c for c in decl.named_children if c.type == "type_qualifier" and text(c) != "const"
             or c.type in ("storage_class_specifier", "attribute_specifier")]
    if len(ds) != 1 or ds[0].type != "init_declarator" or extra:
        return None
    name, value = ds[0].child_by_field_name("declarator"), ds[0].child_by_field_name("value")
    return (text(name), value) if name.type == "identifier" and value is not None else None


_PURE = {"identifier", "number_literal", "true", "false", "field_expression", "field_identifier", "binary_expression",
         "unary_expression", "parenthesized_expression", "conditional_expression"}


def _pure(value: ts.Node) -> bool:
    """Arithmetic, comparisons and logic over names, numbers and built-ins: no call, load or assignment."""
    return all(n.type in _PURE and (n.type != "field_expression" or text(n).replace(" ", "") in BUILTINS)
               for n in walk(value) if n.is_named)


def _changes(stmt: ts.Node, names: set[str]) -> bool:
    """`stmt` assigns one of `names`, declares one, or passes one to a call (a reference may change it)."""
    for n in walk(stmt):
        if assigned_name(n) & names or n.type == "declaration" and declared_names(n) & names:
            return True
        args = n.child_by_field_name("arguments") if n.type == "call_expression" else None
        if args is not None and any(a.type == "identifier" and text(a) in names for a in args.named_children):
            return True
    return False


# -- compare-and-select -------------------------------------------------------------------------
_FLOAT_SELECT = {"float": ("fmaxf", "fminf"), "double": ("fmax", "fmin")}
_NAN_FREE = {"INFINITY", "HUGE_VALF", "HUGE_VAL", "FLT_MAX", "DBL_MAX", "CUDART_INF_F", "CUDART_INF",
             "FLT_MIN", "DBL_MIN"}
_SELECT_READS = {"identifier", "number_literal", "subscript_expression", "field_expression", "field_identifier",
                 "binary_expression", "unary_expression", "parenthesized_expression", "cast_expression",
                 "type_descriptor", "primitive_type", "subscript_argument_list"}


def _compare_selects(ctx: Context) -> list[Edit]:
    """`if (v > m) m = v;` (or `m < v`, `>=`, in braces, or `m = v > m ? v : m;`) as
    `m = fmaxf(m, v);`, and the `<` forms as `fminf` (`fmax`/`fmin` for double, `max`/`min` for
    integers of v's own type). Exact where m is never NaN: a NaN v loses both ways, so m's
    initial value and every other value stored into it must be a constant or such a select."""
    selects: dict[str, list[tuple[ts.Node, str, ts.Node]]] = {}
    for node in walk(ctx.kernel.body):
        found = _select(node)
        if found is not None:
            selects.setdefault(found[1], []).append((node, found[2], found[0]))
    edits = []
    for acc, found in selects.items():
        local = ctx.model.locals.get(acc)
        if local is None or not _only_selected(ctx, acc, local, [n for n, _, _ in found]):
            continue
        type_ = normalize_c_type(resolve_type(local.type, ctx.kernel.macros))
        for node, kind, value in found:
            fn = _selector(ctx, type_, kind, value)
            if fn is not None:
                end = ";" if node.type == "if_statement" else ""
                edits.append(Edit.replace(node, f"{acc} = {fn}({acc}, {text(value)}){end}"))
    return edits


def _select(node: ts.Node) -> tuple[ts.Node, str, str] | None:
    """(v, m, "max"|"min") of `if (v > m) m = v;` or `m = v > m ? v : m` (the assignment)."""
    if node.type == "if_statement" and node.child_by_field_name("alternative") is None:
        body = node.child_by_field_name("consequence")
        if body is not None and body.type == "compound_statement":
            body = body.named_children[0] if len(body.named_children) == 1 else None
        if body is None or body.type != "expression_statement" or len(body.named_children) != 1:
            return None
        assign, cond = body.named_children[0], node.child_by_field_name("condition")
        chosen = None
    elif node.type == "assignment_expression" and node.parent.type == "expression_statement":
        assign = node
        choice = unparen(node.child_by_field_name("right"))
        if choice.type != "conditional_expression":
            return None
        cond, chosen, kept = (choice.child_by_field_name(f) for f in ("condition", "consequence", "alternative"))
    else:
        return None
    if assign.type != "assignment_expression" or text(assign.child_by_field_name("operator")) != "=":
        return None
    acc, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if acc.type != "identifier":
        return None
    if chosen is not None:
        if text(unparen(kept)) != text(acc):
            return None
        value = chosen
    value = unparen(value)
    if not all(n.type in _SELECT_READS for n in walk(value) if n.is_named):
        return None
    found = beats(cond.named_children[0] if cond.type == "condition_clause" else cond, value, text(acc))
    return (value, text(acc), found[0]) if found is not None else None


def _only_selected(ctx: Context, acc: str, local: Local, selects: list[ts.Node]) -> bool:
    """Every value stored into `acc` (its initializer included) is NaN-free or one of `selects`."""
    stores = [local.init] if local.init is not None else []
    if not stores:
        return False
    inside = [(s.start_byte, s.end_byte) for s in selects]
    for n in walk(ctx.kernel.body):
        if not assigned_name(n) & {acc} or any(a <= n.start_byte < b for a, b in inside):
            continue
        if n.type != "assignment_expression" or text(n.child_by_field_name("operator")) != "=" \
                or n.child_by_field_name("left").type != "identifier":
            return False
        stores.append(n.child_by_field_name("right"))
    if normalize_c_type(resolve_type(local.type, ctx.kernel.macros)) not in _FLOAT_SELECT:
        return True
    return all(_nan_free(ctx, v) for v in stores)


def _nan_free(ctx: Context, value: ts.Node) -> bool:
    """A constant that is not NaN: a number, +-INFINITY, +-FLT_MAX, ..., or a macro for one."""
    value = unparen(value)
    while value.type in ("unary_expression", "cast_expression"):
        if value.type == "unary_expression" and text(value.child_by_field_name("operator")) not in "+-":
            return False
        value = unparen(value.child_by_field_name("argument") or value.child_by_field_name("value"))
    if value.type == "number_literal":
        return True
    if value.type != "identifier":
        return False
    if text(value) in _NAN_FREE:
        return True
    body = ctx.kernel.macros.object_like(text(value))
    return body is not None and re.fullmatch(r"[-+(\s]*(\d[\w.]*|INFINITY|FLT_MAX|DBL_MAX)[)\s]*", body) is not None


def _selector(ctx: Context, type_: str, kind: str, value: ts.Node) -> str | None:
    """The function that keeps `kind` of an accumulator of `type_` and `value`, or None."""
    if type_ in _FLOAT_SELECT:
        return _FLOAT_SELECT[type_][kind == "min"]
    if type_ not in INTEGRAL or _value_type(ctx, value) != type_:
        return None
    return kind


def _value_type(ctx: Context, value: ts.Node) -> str | None:
    """The C type of a local or of an element of a pointer parameter (`x[i]`), macros expanded."""
    value = unparen(value)
    if value.type == "identifier" and text(value) in ctx.model.locals:
        return normalize_c_type(resolve_type(ctx.model.locals[text(value)].type, ctx.kernel.macros))
    if value.type == "subscript_expression":
        array = value.child_by_field_name("argument")
        param = next((p for p in ctx.kernel.params if p.name == text(array) and p.pointer == 1), None)
        return normalize_c_type(param.base_type) if param is not None else None
    return None


# -- counters -----------------------------------------------------------------------------------
def _bare_for_loops(ctx: Context) -> list[Edit]:
    """`size_t i = e; for (; i < n; i += s)` as `for (size_t i = e; i < n; i += s)`
    (cuopt/source/whiles.py)."""
    return _replaced(ctx, bare_for_loops(ctx.kernel, ctx.model))


def _while_loops(ctx: Context) -> list[Edit]:
    """Counted `while` loops as `for` loops (cuopt/source/whiles.py): `k = a; while (k < b) { ...;
    k++; }` as `for (int k = a; k < b; ++k) { ... }`. Nested loops are rewritten together (the inner
    loop's edit goes into the outer's text)."""
    found = []
    for w in while_loops(ctx.kernel, ctx.model):
        body = w.loop.child_by_field_name("body")
        close = ctx.source[w.step.end_byte:body.end_byte].decode()
        close = close[close.rfind("\n"):] if "\n" in close else "\n}"
        kept = ctx.source[(w.kept or w.loop).start_byte:w.loop.start_byte].decode()
        found.append((w.start.start_byte, w.loop.end_byte, kept + w.header, body.start_byte, w.step.start_byte, close))
    edits: list[Edit] = []
    for start, end, head, first, last, close in reversed(found):  # inner loops first
        inner = [e for e in edits if first <= e.start and e.end <= last]
        edits = [e for e in edits if e not in inner]
        inside = apply(ctx.source[first:last], [Edit(e.start - first, e.end - first, e.text) for e in inner])
        edits.append(Edit(start, end, head + inside.decode().rstrip() + close))
    return edits


def _loop_headers(ctx: Context) -> list[Edit]:
    """`for (k = a; ...)` with a private counter as `for (int k = a; ...)`; `k <= b - 1` as `k < b`."""
    edits = []
    for lp in ctx.model.loops:
        if lp.var is None:
            continue
        init = lp.node.child_by_field_name("initializer")
        start = assigns(init, lp.var)
        type_ = counter_type(ctx.kernel, ctx.model, lp.var) if start is not None else None
        if type_ is not None:
            edits.append(Edit.replace(init, f"{type_} {lp.var} = {text(start)}"))
        cond = lp.node.child_by_field_name("condition")
        if lp.cmp == "<=" and lp.step is not None and lp.step > 0 and cond is not None:
            edits.append(Edit.replace(cond, f"{lp.var} < {_plus_one(cond.child_by_field_name('right'))}"))
    return edits


def _plus_one(bound: ts.Node) -> str:
    """`b - 1` as `b`, otherwise `b + 1` (parenthesized unless it is a sum or product)."""
    op = text(bound.child_by_field_name("operator")) if bound.type == "binary_expression" else ""
    right = bound.child_by_field_name("right")
    if op == "-" and right is not None and text(right) == "1":
        return text(bound.child_by_field_name("left"))
    bare = bound.type in ("identifier", "field_expression", "number_literal", "call_expression") or \
        op in ("+", "-", "*", "/", "%")
    return f"{text(bound)} + 1" if bare else f"({text(bound)}) + 1"


def _dead_counters(ctx: Context) -> list[Edit]:
    """Declarations (`int i, k;`) of counters no statement uses any more."""
    edits = []
    for node in walk(ctx.kernel.body):
        if node.type != "declaration" or node.parent is None or node.parent.type != "compound_statement":
            continue
        names = [d for d in node.children_by_field_name("declarator")]
        if not names or any(d.type != "identifier" for d in names):
            continue
        if all(not _used_outside(ctx, text(d), node) for d in names):
            edits.append(_whole_lines(ctx.source, node))
    return edits


def _used_outside(ctx: Context, name: str, decl: ts.Node) -> bool:
    """`name` is used, other than by loops that declare a counter of that name themselves."""
    for n in walk(ctx.kernel.body):
        if n.type != "identifier" or text(n) != name or decl.start_byte <= n.start_byte < decl.end_byte:
            continue
        loop = n.parent
        while loop is not None and not (loop.type == "for_statement" and _declares(loop, name)):
            loop = loop.parent
        if loop is None:
            return True
    return False


def _declares(loop: ts.Node, name: str) -> bool:
    init = loop.child_by_field_name("initializer")
    return init is not None and init.type == "declaration" and any(
        text(d.child_by_field_name("declarator") or d) == name for d in init.children_by_field_name("declarator"))


def _whole_lines(source: bytes, node: ts.Node) -> Edit:
    start = source.rfind(b"\n", 0, node.start_byte) + 1
    end = source.find(b"\n", node.end_byte)
    if source[start:node.start_byte].strip() or source[node.end_byte:end].strip():
        return Edit.replace(node, "")
    return Edit(start, end + 1, "")


# -- index locals -------------------------------------------------------------------------------
def _index_locals(ctx: Context) -> list[Edit]:
    """`int idx = i * n + j; ... a[idx]` as `a[i * n + j]` where idx is never written and names
    only what it names at its declaration."""
    m = ctx.model
    edits = []
    for name, local in m.locals.items():
        if local.writes or local.init is None or not integral(local.type):
            continue
        if len(local.node.children_by_field_name("declarator")) != 1 or not _stable(m, [local.init], local.node):
            continue
        uses = [n for n in walk(ctx.kernel.body) if n.type == "identifier" and text(n) == name
                and not (local.node.start_byte <= n.start_byte < local.node.end_byte)]
        if not uses or not all(in_subscript(n) for n in uses):
            continue
        value = text(local.init)
        for n in uses:
            whole = n.parent is not None and n.parent.type == "subscript_argument_list"
            edits.append(Edit.replace(n, value if whole or local.init.type != "binary_expression" else f"({value})"))
        edits.append(_whole_lines(ctx.source, local.node))
    return edits


_EFFECTS = ("call_expression", "assignment_expression", "update_expression")


def _loaded_once(ctx: Context) -> list[Edit]:
    """`float a = A[i * K + k]; float b = B[k * N + j]; acc += a * b;` as `acc += A[i * K + k] * B[k
    * N + j];`: a local that holds a load of global memory and is read once, later in the same block
    and not in a loop of its own, with nothing between that writes memory, calls or changes what the
    load reads (Parboil's and many textbooks' matrix products stage the operands so)."""
    m = ctx.model
    globals_ = set(m.pointer_params) | set(m.aliases)
    edits = []
    for name, local in m.locals.items():
        decl, init = local.node, local.init
        if local.writes or init is None or len(decl.children_by_field_name("declarator")) != 1 or \
                decl.parent is None or decl.parent.type != "compound_statement":
            continue
        if not any(n.type == "subscript_expression" and text(n.child_by_field_name("argument")) in globals_
                   for n in walk(init)) or any(n.type in _EFFECTS for n in walk(init)):
            continue
        uses = [n for n in walk(ctx.kernel.body) if n.type == "identifier" and text(n) == name
                and not decl.start_byte <= n.start_byte < decl.end_byte]
        if len(uses) != 1 or not _quiet_between(decl, uses[0], {text(n) for n in walk(init) if n.type == "identifier"}):
            continue
        plain = init.type in ("subscript_expression", "call_expression", "identifier", "parenthesized_expression")
        edits += [Edit.replace(uses[0], text(init) if plain else f"({text(init)})"), _whole_lines(ctx.source, decl)]
    return edits


def _quiet_between(decl: ts.Node, use: ts.Node, names: set[str]) -> bool:
    """`use` lies in a later statement of `decl`'s block, outside loops of its own, and nothing from
    `decl` to it writes memory, calls, or assigns or redeclares one of `names`."""
    holder = use
    while holder.parent is not None and holder.parent != decl.parent:
        if holder.type in ("for_statement", "while_statement", "do_statement") or holder.parent.type == "lambda_expression":
            return False
        holder = holder.parent
    if holder.parent != decl.parent or holder.start_byte < decl.end_byte:
        return False
    for n in walk(decl.parent):
        if not decl.end_byte <= n.start_byte < use.start_byte:
            continue
        if n.type == "call_expression" or (n.type in ("assignment_expression", "update_expression") and (
                (target := assigned(n)) is None or target.type != "identifier" or text(target) in names)):
            return False
        if n.type == "identifier" and text(n) in names and n.parent is not None and \
                n.parent.type in ("init_declarator", "declaration") and n.parent.child_by_field_name("declarator") == n:
            return False
    return True


def _stable(m: KernelModel, terms: list[ts.Node], decl: ts.Node) -> bool:
    """The sum of `terms` is an affine index whose loop variables keep their values where the local
    declared by `decl` is in scope."""
    poly = m.poly_sum(terms)
    return poly is not None and not any(
        lp.var in poly.symbols() and not lp.node.start_byte <= decl.start_byte < lp.node.end_byte for lp in m.loops)


# -- pointers into a parameter -------------------------------------------------------------------
def _row_pointers(ctx: Context) -> list[Edit]:
    """`const T* p = x + off; ... p[e]` as `x[off + e]` where p is never repointed, is used only by
    subscript, and `off` names only values that keep them where p is in scope."""
    m = ctx.model
    params = {p.name for p in ctx.kernel.params if p.pointer}
    edits = []
    for decl in walk(ctx.kernel.body):
        found = _pointer_into(decl, params)
        if found is None:
            continue
        name, param, offs = found
        if m.aliases.get(name) != param or (offs and not _unchanging(m, offs, decl)):
            continue
        uses = [n for n in walk(ctx.kernel.body) if n.type == "identifier" and text(n) == name
                and not decl.start_byte <= n.start_byte < decl.end_byte]
        indices = [_single_index(n) for n in uses]
        if not uses or any(i is None for i in indices):
            continue
        prefix = "".join(_operand(off) + " + " for off in offs)
        edits += [Edit.replace(n.parent, f"{param}[{prefix}{_operand(i)}]") for n, i in zip(uses, indices)]
        edits.append(_whole_lines(ctx.source, decl))
    return edits


def _single_index(name: ts.Node) -> ts.Node | None:
    """The index of `name[e]` when `name` is subscripted by one expression, else None."""
    sub = name.parent
    if sub is None or sub.type != "subscript_expression" or sub.child_by_field_name("argument") != name:
        return None
    index = sub.child_by_field_name("indices")
    return index.named_children[0] if index is not None and len(index.named_children) == 1 else None


def _pointer_into(decl: ts.Node, params: set[str]) -> tuple[str, str, list[ts.Node]] | None:
    """(p, x, offsets) of a declaration `T* p = x + off;` (or `off + x`, `x + a + b`, `x`, or
    `&x[off]`), x a pointer parameter."""
    if decl.type != "declaration" or len(decl.children_by_field_name("declarator")) != 1:
        return None
    d = decl.child_by_field_name("declarator")
    pointer = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
    value = d.child_by_field_name("value") if d.type == "init_declarator" else None
    name = pointer.child_by_field_name("declarator") if pointer is not None and pointer.type == "pointer_declarator" \
        else None
    if name is None or name.type != "identifier" or value is None:
        return None
    terms = pointer_summands(value)
    bases = [t for t in terms if t.type == "identifier" and text(t) in params]
    if len(bases) != 1:
        return None
    return text(name), text(bases[0]), [t for t in terms if t is not bases[0]]


def _unchanging(m: KernelModel, offs: list[ts.Node], decl: ts.Node) -> bool:
    """The sum of `offs` is an affine index whose names are never assigned where the declaration
    is in scope."""
    if not _stable(m, offs, decl):
        return False
    names = {text(n) for off in offs for n in walk(off) if n.type == "identifier"}
    return not any(m.locals[n].writes for n in names if n in m.locals)


_PRIMARY = ("identifier", "number_literal", "call_expression", "subscript_expression", "field_expression",
            "parenthesized_expression")


def _operand(node: ts.Node, operators: tuple[str, ...] = ("+", "*", "/", "%")) -> str:
    """`node` as an operand of `+` (or, with `operators` ("*",), of `*`): parenthesized unless a
    primary expression or a binary expression of one of `operators`."""
    op = text(node.child_by_field_name("operator")) if node.type == "binary_expression" else ""
    return text(node) if node.type in _PRIMARY or op in operators else f"({text(node)})"


# -- fused updates ---------------------------------------------------------------------------------
_FMA = ("fmaf", "fma", "__fmaf_rn", "__fma_rn")


def _fused_updates(ctx: Context) -> list[Edit]:
    """`acc = fmaf(a, b, acc)` as `acc += a * b` (acc any lvalue written the same way twice)."""
    edits = []
    for node in walk(ctx.kernel.body):
        if node.type != "assignment_expression" or text(node.child_by_field_name("operator")) != "=":
            continue
        left, call = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or call is None or call.type != "call_expression" \
                or text(call.child_by_field_name("function")) not in _FMA:
            continue
        args = call.child_by_field_name("arguments").named_children
        if len(args) != 3 or text(args[2]) != text(left):
            continue
        edits.append(Edit.replace(node, f"{text(left)} += {_operand(args[0], ('*',))} * {_operand(args[1], ('*',))}"))
    return edits


# -- update helpers ------------------------------------------------------------------------------
def _updaters(ctx: Context) -> list[Edit]:
    """`welford_update(x[i], mean, m2, n);` as the helper's statements, its reference parameters
    replaced by the locals passed (cuopt/source/updaters.py)."""
    return _replaced(ctx, updater_calls(ctx.kernel))


# -- index helpers -------------------------------------------------------------------------------
def _index_helpers(ctx: Context) -> list[Edit]:
    """`at(x - 1, y, w)` as `((y) * (w) + (x - 1))` (cuopt/source/helpers.py); an index lambda's
    declaration goes once every call is put in."""
    return _replaced(ctx, helper_calls(ctx.kernel))


# -- built-in aliases ----------------------------------------------------------------------------
def _builtin_aliases(ctx: Context) -> list[Edit]:
    """`int tid = threadIdx.x; int i = bid * blockDim.x + tid;` as `int i = blockIdx.x * blockDim.x +
    threadIdx.x;` (cuopt/source/aliases.py); an alias's declaration goes when nothing else names it."""
    return _replaced(ctx, builtin_aliases(ctx.kernel, ctx.model))


_SIGNED = {"int", "long", "long long", "short"}


def _guard_offsets(ctx: Context) -> list[Edit]:
    """`if (i + WIN <= n)` as `if (i <= n - (WIN))`: the global index alone on the left, as the rules
    read a guard. Only where every operand is a signed integer (a local or parameter declared
    `int`/`long`..., an integer macro or literal), so that the subtraction cannot wrap."""
    m = ctx.model
    edits = []
    for node in walk(ctx.kernel.body):
        if node.type != "if_statement":
            continue
        for comparison in walk(node.child_by_field_name("condition")):
            op = comparison.child_by_field_name("operator") if comparison.type == "binary_expression" else None
            if op is None or text(op) not in ("<", "<="):
                continue
            left, right = comparison.child_by_field_name("left"), comparison.child_by_field_name("right")
            if left.type != "binary_expression" or text(left.child_by_field_name("operator")) != "+":
                continue
            index, offset = left.child_by_field_name("left"), left.child_by_field_name("right")
            p = m.poly(index)
            if p is None or axis_of_global_index(p) is None or not all(_signed(ctx, n) for n in (index, offset, right)):
                continue
            if offset.type != "number_literal" and m.poly(offset) is None or \
                    (m.poly(offset) or Poly.const(0)).symbols() & BUILTINS:
                continue
            edits.append(Edit.replace(comparison, f"{text(index)} {text(op)} {text(right)} - ({text(offset)})"))
    return edits


def _signed(ctx: Context, node: ts.Node) -> bool:
    """Every name in `node` is a signed integer local or parameter or an integer macro, every literal
    an integer without an unsigned suffix."""
    params = {p.name: p for p in ctx.kernel.params}
    for n in walk(node):
        if n.type == "number_literal" and not re.fullmatch(r"\d+[lL]*", text(n)):
            return False
        if n.type != "identifier":
            continue
        name = text(n)
        local, param = ctx.model.locals.get(name), params.get(name)
        if local is not None:
            ok = local.type.replace("const", "").strip() in _SIGNED
        elif param is not None:
            ok = not param.pointer and param.base_type in _SIGNED
        else:
            ok = ctx.kernel.macros.integer(name) is not None
        if not ok:
            return False
    return True

