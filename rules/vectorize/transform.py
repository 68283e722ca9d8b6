"""vectorize: 8- and 16-byte loads and stores where each thread's accesses are contiguous.

Elementwise mode (every global access is `p[R + x]`, x the global thread index along x and R
free of it: `p[i]` in 1D, `p[y * pitch + x]` in 2D): each thread handles `width` consecutive x
positions with one vector load per input and one vector store per output; the grid along x
shrinks by `width`; a scalar path handles the tail and misaligned addresses (checked per thread:
in 2D a row may start misaligned).

Inner-loop mode (a unit-stride loop whose accesses are `p[base + j]`): the loop is split into a
vector loop of `width` iterations at a time, when every such pointer is aligned at run time,
and the original loop for the rest.

Grid-stride mode (`for (e = global index; e < n; e += gridDim.x * blockDim.x)` whose accesses are
`p[e]`): each thread takes `width` consecutive elements per step, loaded (and stored) as one
4-, 8- or 16-byte word (16 bytes each for bytes: `uint4`), the loop's stride grows by `width`, and
a scalar path handles the tail and misaligned pointers. Each element is still handled once, by
one thread; which thread changes, so a thread's running value must be combined with the others'
after the loop (an atomic, a shuffle or a shared-memory tree)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of, node_text
from cuopt.rewrite.transforms.common import (
    assigned_outside, combined_after, fresh, index_replacements, per_block_grid, reindent, render_condition,
    require_index_only_builtins, scale_grid, scoped, used_declarations, uses, written_types)
from cuopt.rewrite.transforms.vectors import vector_type
from cuopt.source import ctypes
from cuopt.source.affine import BLOCK, THREAD, Poly, global_index
from cuopt.source.analysis import Shape, bound_of, conditional, mentions, read_expression
from cuopt.source.ctypes import HALF_TYPES
from cuopt.source.model import Access
from cuopt.source.parse import operator_of, text, walk, within
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

COMPONENTS = "xyzw"


def _has_vectors(element: str) -> bool:
    """Whether CUDA has vector types of `element` (`float2`, `uchar4`, `longlong2`)."""
    return ctypes.vector_type(element, 2) is not None


class Words:
    """The vector types of elementwise and inner-loop mode: CUDA's (`float4`, components `.x`..`.w`),
    or for an element type that is a template parameter T (the same for every instantiation of the
    kernel's body) or a 16-bit float, a local `struct alignas(W * sizeof(T))` holding `T v[W]` (up
    to 8 16-bit floats: one 16-byte word)."""

    def __init__(self, ctx: Context, width: int):
        self.ctx, self.width = ctx, width
        self.generic: dict[str, str] = {}  # template parameter -> its local struct

    def of(self, element: str) -> str:
        half = element in HALF_TYPES
        generic = half or any(t.name == element and t.kind == "type" for t in self.ctx.kernel.template_params or ())
        if _has_vectors(element) or self.width not in ((2, 4, 8) if half else (2, 4)) or not generic:
            return vector_type(element, self.width)
        return self.generic.setdefault(element, fresh(self.ctx, f"cuopt_vec{self.width}_{element.strip('_')}"))

    def load(self, vt: str, var: str, address: str, const: bool) -> str:
        """`var = *address` as a `vt`; 16-bit floats through a raw word (their struct would be copied
        one element at a time)."""
        raw = self._raw(vt)
        if raw is None:
            return f"{'const ' if const else ''}{vt} {var} = *reinterpret_cast<const {vt}*>({address});"
        return f"{vt} {var}; *reinterpret_cast<{raw}*>(&{var}) = *reinterpret_cast<const {raw}*>({address});"

    def store(self, vt: str, var: str, address: str) -> str:
        raw = self._raw(vt)
        if raw is None:
            return f"*reinterpret_cast<{vt}*>({address}) = {var};"
        return f"*reinterpret_cast<{raw}*>({address}) = *reinterpret_cast<const {raw}*>(&{var});"

    def _raw(self, vt: str) -> str | None:
        element = next((t for t, name in self.generic.items() if name == vt), None)
        return {2: "unsigned int", 4: "uint2", 8: "uint4"}[self.width] if element in HALF_TYPES else None

    def component(self, vt: str, k: int) -> str:
        return f".v[{k}]" if vt in self.generic.values() else f".{COMPONENTS[k]}"

    def declarations(self) -> list[str]:
        return [f"struct alignas({self.width} * sizeof({t})) {name} {{ {t} v[{self.width}]; }};"
                for t, name in self.generic.items()]


@dataclass
class _Stream:
    """The accesses of one array at one row offset R (`p[R + x]`): one vector per thread."""

    array: str
    row: Poly  # R
    index: ts.Node  # the first access's index as written
    accesses: list[Access]


@dataclass
class _Elementwise:
    shape: Shape
    gidx: dict[tuple[int, int], int]  # global-index occurrences, by axis
    xs: set[tuple[int, int]]  # those along x
    rows: list[ts.Node]  # prelude declarations free of x: evaluated once per thread, before the fast path
    streams: dict[tuple[str, str], _Stream]  # by (array, R)


class Vectorize:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        sites = []
        reasons = []
        try:
            self._elementwise_plan(ctx)
            sites.append(Site(ctx.kernel.node, note="scalar loads and stores of contiguous elements",
                              data="elementwise"))
        except Refuse as exc:
            reasons.append(f"elementwise: {exc}")
        for index in ctx.model.inner_loops():
            lp = ctx.model.loops[index]
            try:
                self._loop_plan(ctx, index)
                sites.append(Site(lp.node, note="scalar loads along a contiguous loop", data=("loop", index)))
            except Refuse as exc:
                reasons.append(f"loop at line {lp.line}: {exc}")
        for index, lp in enumerate(ctx.model.loops):
            if lp.depth == 0 and _grid_stride(lp):
                try:
                    self._stride_plan(ctx, index)
                    sites.append(Site(lp.node, note="one element per thread per grid-stride step",
                                      data=("stride", index)))
                except Refuse as exc:
                    reasons.append(f"grid-stride loop at line {lp.line}: {exc}")
        if not sites:
            raise Refuse("; ".join(reasons) or "no contiguous accesses")
        return sites

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        width = int(params["width"])
        if site.data == "elementwise":
            return self._elementwise(ctx, width)
        if site.data[0] == "stride":
            return self._stride(ctx, site.data[1], width)
        return self._loop(ctx, site.data[1], width)

    # -- elementwise ------------------------------------------------------------------------
    def _elementwise_plan(self, ctx: Context) -> _Elementwise:
        """Every global access is `p[R + x]`, x the global index along x and R free of it (R = 0 in
        1D; a row offset `y * pitch` in 2D); the guard bounds x."""
        m = ctx.model
        if m.loops or m.barriers or m.shared or m.atomics:
            raise Refuse("has loops, barriers, shared memory or atomics")
        if any(n.type in ("while_statement", "do_statement", "goto_statement") for n in walk(ctx.kernel.body)):
            raise Refuse("has while/do loops or goto")
        s = ctx.model.shape
        if s.guard is None:
            raise Refuse("no `if (i < n)` guard: the kernel relies on the grid size")
        if s.after:
            raise Refuse("statements after the guarded block")
        returns = [r for r in m.returns if s.if_node is None or not within(r, s.if_node) or not s.negated]
        if returns:
            raise Refuse(f"return statement at line {returns[0].start_point.row + 1}")
        gidx = require_index_only_builtins(ctx, ctx.kernel.body, {0})  # only positions along x change
        per_block_grid(ctx, 0)
        if bound_of(ctx.model, 0) is None:
            raise Refuse("the guard has no `x < bound` term: positions past the grid's would run")
        xs = {span for span, axis in gidx.items() if axis == 0}
        rows = _row_declarations(s.prelude, xs)
        names = {name for d in rows for name in _declared(d)}
        for node, _ in s.conjuncts():
            self._check_monotone(ctx, node)
            _before_elements(ctx, node, xs, names)
        accesses = m.global_accesses()
        if not accesses:
            raise Refuse("no global memory accesses")
        streams: dict[tuple[str, str], _Stream] = {}
        for a in accesses:
            _require_value(ctx, a)
            row = None if a.flat is None else a.flat - global_index(0)
            if a.read and m.read_only(a.array) and (a.flat is None or _free_of_x(a.flat)):
                continue  # a gather (`probs[i * V + target[i]]`) or an element all lanes share (`tokens[t]`)
            if row is None or row.depends_on(BLOCK[0]) or row.depends_on(THREAD[0]):
                raise Refuse(f"{ctx.text(a.node)} at line {a.line} is not p[R + x] (x the global index along x, "
                             "R free of it)")
            _before_elements(ctx, a.indices[0], xs, names)
            streams.setdefault((a.array, str(row)), _Stream(a.array, row, a.indices[0], [])).accesses.append(a)
        if not streams:
            raise Refuse("no access at p[R + x] to vectorize")
        top_level = {c.start_byte for c in s.body}
        for p in sorted({a.array for a in accesses if a.write}):
            mine = [st for st in streams.values() if st.array == p]
            if len(mine) > 1:
                raise Refuse(f"{p} is written and also accessed at another element")
            by_thread = any(mine[0].row.depends_on(b) for b in THREAD[1:] + BLOCK[1:])
            guarded = any(_statement_of(a.node).start_byte not in top_level for a in mine[0].accesses if a.write)
            if by_thread and guarded:
                raise Refuse(f"{p} is written under a condition at rows not proven disjoint: a vector store "
                             "could overwrite an element another thread writes")
        return _Elementwise(s, gidx, xs, rows, streams)

    def _check_monotone(self, ctx: Context, node: ts.Node) -> None:
        if node.type != "binary_expression" or operator_of(node) not in ("<", "<=", ">", ">="):
            raise Refuse(f"guard term {text(node)!r} is not a comparison")
        left, right = ctx.model.poly(node.child_by_field_name("left")), ctx.model.poly(node.child_by_field_name("right"))
        if left is None or right is None:
            raise Refuse(f"guard term {text(node)!r} is not affine")
        if (left - right).degree_in(THREAD) > 1:
            raise Refuse(f"guard term {text(node)!r} is not monotone in the index")

    def _elementwise(self, ctx: Context, width: int) -> Rewritten:
        plan = self._elementwise_plan(ctx)
        s, m = plan.shape, ctx.model
        e, base = fresh(ctx, "cuopt_e"), fresh(ctx, "cuopt_base")
        order = [p.name for p in ctx.kernel.params]
        keys = sorted(plan.streams, key=lambda k: order.index(k[0]))
        vec: dict[tuple[str, str], str] = {}
        for k in keys:
            n = sum(1 for j in vec if j[0] == k[0])
            vec[k] = fresh(ctx, f"cuopt_v{n + 1 if n else ''}_{k[0]}")
        words = Words(ctx, width)
        vtype = {k: words.of(ctx.kernel.param(k[0]).base_type) for k in keys}
        top_level = {c.start_byte for c in s.body}
        load: set[tuple[str, str]] = set()
        for k in keys:
            st = plan.streams[k]
            written = [a for a in st.accesses if a.write]
            offset = st.row.mapping.get((), 0)
            if offset % width:
                raise Refuse(f"{ctx.text(st.accesses[0].node)} is offset by {offset} from its row, not a multiple of "
                             f"{width}: its vectors are misaligned wherever the row is aligned")
            if any(a.read for a in st.accesses) or any(_statement_of(a.node).start_byte not in top_level
                                                        for a in written):
                load.add(k)  # read, or conditionally written: keep the old values of unwritten lanes
        index_repl = index_replacements(ctx, plan.gidx, {0: e})
        hoisted = {d.start_byte for d in plan.rows}
        later = [d for d in s.prelude if d.start_byte not in hoisted]

        def element(component: int | None) -> list[str]:
            repl = dict(index_repl)
            if component is not None:
                for k in keys:
                    for a in plan.streams[k].accesses:
                        repl[_span(a)] = f"{vec[k]}{words.component(vtype[k], component)}"
            body = [reindent(st, node_text(st, repl), "") for st in s.body]
            cond = " && ".join(render_condition(n, neg, repl) for n, neg in s.conjuncts())
            out = used_declarations(ctx, later, repl, "\n".join(body) + (cond if component is None else ""))
            if component is None:
                out.append(f"if ({cond}) {{")
                out += ["    " + line for b in body for line in b.split("\n")]
                out.append("}")
            else:
                out += body
            return out

        conds: list[str] = []  # at the first and last position; a term free of x once
        for n, neg in s.conjuncts():
            for i in (0, width - 1):
                term = render_condition(n, neg, {span: f"({base} + {i})" for span in plan.xs})
                if term not in conds:
                    conds.append(term)
        address: dict[tuple[str, str], str] = {}
        aligned: list[str] = []
        for k in keys:
            st = plan.streams[k]
            if st.row.terms:  # `p + (R + base)`: checked per thread, as a row may start misaligned
                address[k] = checked = f"{st.array} + ({node_text(st.index, {span: base for span in plan.xs})})"
            else:  # base is a multiple of the width: `p + base` is aligned where p is
                address[k], checked = f"{st.array} + {base}", st.array
            aligned.append(f"reinterpret_cast<unsigned long long>({checked}) % sizeof({vtype[k]}) == 0")
        original = "\n".join(ctx.text(b) for b in s.body) + ctx.text(s.guard)
        before = "\n".join([*conds, *address.values(), *used_declarations(ctx, later, {}, original), original])
        lines = [*words.declarations(), *used_declarations(ctx, plan.rows, {}, before),
                 f"const long long {base} = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * {width};",
                 f"if ({' && '.join(conds)} &&", f"    {' && '.join(aligned)}) {{"]
        for k in keys:
            if k in load:
                lines.append("    " + words.load(vtype[k], vec[k], address[k], not m.written(k[0])))
            else:
                lines.append(f"    {vtype[k]} {vec[k]};")
        for c in range(width):
            code = [line for chunk in element(c) for line in chunk.split("\n")]
            if any(re.search(rf"\b{e}\b", line) for line in code):
                code.insert(0, f"const long long {e} = {base} + {c};")
            lines += scoped(code, "    ")
        for k in keys:
            if m.written(k[0]):
                lines.append("    " + words.store(vtype[k], vec[k], address[k]))
        lines.append("} else {")
        lines.append(f"    for (long long {e} = {base}; {e} < {base} + {width}; ++{e}) {{")
        lines += ["        " + line if line else "" for chunk in element(None) for line in chunk.split("\n")]
        lines.append("    }")
        lines.append("}")
        body = "{\n" + "\n".join("    " + ln if ln else "" for ln in lines) + "\n}"
        grid = scale_grid(ctx, 0, E.Num(width))
        launch = Launch(ctx.launch.block, grid, ctx.launch.shared)
        return Rewritten(apply(ctx.source, [Edit.replace(ctx.kernel.body, body)]), launch,
                         f"{width} elements per thread with {', '.join(sorted(set(vtype.values())))} loads/stores")

    # -- inner loops ------------------------------------------------------------------------
    def _loop_plan(self, ctx: Context, index: int) -> list[Any]:
        m = ctx.model
        lp = m.loops[index]
        if lp.var is None or lp.step != 1 or lp.cmp != "<" or lp.bound is None or lp.start is None:
            raise Refuse("not a unit-step `for (j = a; j < b; ++j)` loop")
        if lp.has_barrier:
            raise Refuse("has a barrier")
        if any(n.type in ("break_statement", "continue_statement", "return_statement", "goto_statement")
               for n in walk(lp.body)):
            raise Refuse("has break, continue, return or goto")
        if lp.bound.depends_on(lp.var):
            raise Refuse("the bound depends on the loop variable")
        if not lp.counter_type:
            raise Refuse("the loop variable is declared outside the loop")
        inside = [a for a in m.global_accesses() if index in a.loops]
        contiguous = [a for a in inside if a.flat is not None and a.flat.depends_on(lp.var)]
        if not contiguous:
            raise Refuse("no global access depends on the loop variable")
        for a in inside:
            p = a.flat
            if p is None:
                raise Refuse(f"{ctx.text(a.node)} has a non-affine index")
            if p.depends_on(lp.var):
                if p.coefficient(lp.var) != Poly.const(1) or p.degree_in([lp.var]) != 1:
                    raise Refuse(f"{ctx.text(a.node)} is not contiguous along {lp.var}")
                if conditional(a.node, lp.body):
                    raise Refuse(f"{ctx.text(a.node)} at line {a.line} is under a condition in the loop: a "
                                 "vector access would touch the elements the condition skips")
                _require_value(ctx, a)
                if a.write and a.read and not _statement_of(a.node).type == "expression_statement":
                    raise Refuse(f"{ctx.text(a.node)} is read and written in one expression")
            elif a.write:
                raise Refuse(f"{ctx.text(a.node)} is written at the same place every iteration")
        inner = {text(d.child_by_field_name("declarator")) for n in walk(lp.body) if n.type == "declaration"
                 for d in n.children_by_field_name("declarator") if d.type == "init_declarator"}
        for a in contiguous:
            if not _has_vectors(ctx.kernel.param(a.array).element) and ctx.kernel.param(a.array).element not in HALF_TYPES:
                raise Refuse(f"no vector type for {a.array}'s elements")
            late = [text(n) for n in mentions(a.indices[0], *inner)]
            if late:
                raise Refuse(f"{ctx.text(a.node)} uses {late[0]}, declared inside the loop")
            step = a.flat.coefficient("threadIdx.x").constant()
            if step is not None and step % 2:
                raise Refuse(f"{ctx.text(a.node)} starts at a different alignment in every thread")
        written = {a.array for a in contiguous if a.write}
        for a in contiguous:
            if a.array in written and any(b.array == a.array and b.flat != a.flat for b in contiguous):
                raise Refuse(f"{a.array} is written and accessed at another offset")
        if len({(a.array, str(a.flat)) for a in contiguous}) > 8:
            raise Refuse("too many distinct streams")
        return contiguous

    def _loop(self, ctx: Context, index: int, width: int) -> Rewritten:
        """`{ int j = a; if (aligned) for (; j + w-1 < b; j += w) { vector body } for (; j < b; ++j) body }`"""
        m = ctx.model
        lp = m.loops[index]
        contiguous = self._loop_plan(ctx, index)
        var = lp.var
        streams: dict[tuple[str, str], str] = {}
        for a in contiguous:
            streams.setdefault((a.array, str(a.flat)), fresh(ctx, f"cuopt_v{len(streams)}_{a.array}"))
        first = {key: next(a for a in contiguous if (a.array, str(a.flat)) == key) for key in streams}
        words = Words(ctx, width)
        vtype = {key: words.of(ctx.kernel.param(key[0]).element) for key in streams}
        init = lp.node.child_by_field_name("initializer")
        bound_text = ctx.text(lp.bound_node)
        uses = mentions(lp.body, var)

        def addr(a: Any) -> str:
            return f"&{ctx.text(a.node)}"

        aligned = " && ".join(f"reinterpret_cast<unsigned long long>({addr(first[k])}) % sizeof({vtype[k]}) == 0"
                              for k in streams)
        vector = [f"for (; {var} + {width - 1} < ({bound_text}); {var} += {width}) {{"]
        for key, name in streams.items():
            a = first[key]
            loaded = any(b.read for b in contiguous if (b.array, str(b.flat)) == key) or not _unconditional(a, lp)
            if loaded:
                vector.append("    " + words.load(vtype[key], name, addr(a), not m.written(key[0])))
            else:
                vector.append(f"    {vtype[key]} {name};")
        for k in range(width):
            repl = {(n.start_byte, n.end_byte): f"({var} + {k})" for n in uses}
            for a in contiguous:
                repl[_span(a)] = f"{streams[(a.array, str(a.flat))]}{words.component(vtype[(a.array, str(a.flat))], k)}"
            vector += scoped(reindent(lp.body, node_text(lp.body, repl), "").split("\n"), "    ")
        written = {a.array for a in contiguous if a.write}
        for key, name in streams.items():
            if key[0] in written:
                vector.append("    " + words.store(vtype[key], name, addr(first[key])))
        vector.append("}")
        tail = node_text(lp.node, {(init.start_byte, init.end_byte): ";"})
        lines = ["{", *("    " + d for d in words.declarations()), "    " + ctx.text(init), f"    if ({aligned}) {{"]
        lines += ["        " + ln if ln else "" for ln in vector]
        lines.append("    }")
        lines.append(reindent(lp.node, tail, "    "))
        lines.append("}")
        indent = indent_of(ctx.source, lp.node)
        code = ("\n" + indent).join(ln if ln.strip() else "" for ln in "\n".join(lines).split("\n"))
        start = lp.pragma if lp.pragma is not None else lp.node  # an unroll pragma goes too: the body is unrolled
        return Rewritten(apply(ctx.source, [Edit(start.start_byte, lp.node.end_byte, code)]), ctx.launch,
                         f"loop at line {lp.line}: {width}-wide vector loads along {var}",
                         written_types(ctx, [key[0] for key in streams]))


    # -- grid-stride loops ------------------------------------------------------------------
    def _stride_plan(self, ctx: Context, index: int) -> dict[str, str]:
        """The arrays accessed at the loop's element, each with its element type."""
        m = ctx.model
        lp = m.loops[index]
        if lp.has_barrier or any(n.type in ("break_statement", "return_statement", "goto_statement")
                                 for n in walk(lp.body)):
            raise Refuse("has a barrier, break, return or goto")
        if not lp.counter_type:
            raise Refuse("the loop variable is declared outside the loop")
        if lp.var in assigned_outside(lp.body):
            raise Refuse(f"the body changes {lp.var}")
        var = Poly.symbol(lp.var)
        inside = [a for a in m.accesses if lp.node.start_byte <= a.node.start_byte < lp.node.end_byte]
        streams: dict[str, str] = {}
        for a in inside:
            if a.space == "global" and a.flat == var:
                if a.atomic or _address_taken(a.node):
                    raise Refuse(f"{ctx.text(a.node)} at line {a.line}: its address is taken")
                streams[a.array] = ctx.kernel.param(a.array).base_type
            elif a.write and not a.atomic:
                raise Refuse(f"{ctx.text(a.node)} at line {a.line} is stored at other than the loop's element")
        if not streams:
            raise Refuse("no global access at the loop's element")
        written = {a.array for a in inside if a.write and a.array in streams}
        for a in m.global_accesses():
            if a.array in written and (a.flat != var or a not in inside):
                raise Refuse(f"{a.array} is written and also accessed at another element (line {a.line})")
        for name in assigned_outside(lp.body):
            if not combined_after(ctx, lp.node, name):
                raise Refuse(f"{name} is a thread's own running value, not combined with the others' after "
                             "the loop: other elements per thread would change it")
        return streams

    def _stride(self, ctx: Context, index: int, width: int) -> Rewritten:
        m = ctx.model
        lp = m.loops[index]
        streams = self._stride_plan(ctx, index)
        words = {a: _word(ctx.kernel.param(a).element, width) for a in streams}  # sized by what T stands for
        var = lp.var
        e, k, scalar = fresh(ctx, "cuopt_e"), fresh(ctx, "cuopt_k"), fresh(ctx, "cuopt_s")
        names = {a: fresh(ctx, f"cuopt_w_{a}") for a in streams}
        bound, step, start = ctx.text(lp.bound_node), lp.increment.amount, ctx.text(lp.start_node)
        vtype = lp.counter_type
        written = {a.array for a in m.accesses if a.write and a.array in streams}
        read = {a.array for a in m.accesses if a.read and a.array in streams
                and lp.node.start_byte <= a.node.start_byte < lp.node.end_byte}
        accesses = [a for a in m.accesses if a.array in streams and a.flat == Poly.symbol(var)
                    and lp.node.start_byte <= a.node.start_byte < lp.node.end_byte]
        aligned = " && ".join(f"reinterpret_cast<unsigned long long>({a}) % sizeof({words[a]}) == 0" for a in streams)
        repl = {(x.node.start_byte, x.node.end_byte): f"{names[x.array]}[{k}]" for x in accesses}
        body = reindent(lp.body, node_text(lp.body, repl), "            ")
        plain = reindent(lp.body, ctx.text(lp.body), "            ")
        lines = [f"for (long long {e} = ({start}) * (long long){width}; {e} < ({bound}); "
                 f"{e} += ({step}) * (long long){width}) {{",
                 f"    if ({e} + {width - 1} < ({bound}) && {aligned}) {{"]
        for a, t in streams.items():
            const = "" if a in written else "const "
            if a in read or a in written and not _unconditional_writes(ctx, lp, a):
                lines.append(f"        {const}{words[a]} {names[a]}_v = *reinterpret_cast<const {words[a]}*>({a} + {e});")
            else:
                lines.append(f"        {words[a]} {names[a]}_v;")
            lines.append(f"        {const}{t}* {names[a]} = reinterpret_cast<{const}{t}*>(&{names[a]}_v);")
        mentioned = uses(body, var)
        lines += ["        #pragma unroll",
                  f"        for (int {k} = 0; {k} < {width}; ++{k}) {{",
                  *([f"            const {vtype} {var} = {e} + {k};"] if mentioned else []),
                  body,
                  "        }"]
        for a in sorted(written):
            lines.append(f"        *reinterpret_cast<{words[a]}*>({a} + {e}) = {names[a]}_v;")
        lines += ["    } else {",
                  f"        for (long long {scalar} = {e}; {scalar} < {e} + {width} && {scalar} < ({bound}); ++{scalar}) {{",
                  f"            const {vtype} {var} = {scalar};",
                  plain,
                  "        }",
                  "    }",
                  "}"]
        indent = indent_of(ctx.source, lp.node)
        code = ("\n" + indent).join(ln if ln.strip() else "" for ln in "\n".join(lines).split("\n"))
        try:  # a grid of one thread per element shrinks by the width; a coarser one is kept
            grid = scale_grid(ctx, 0, E.Num(width))
        except Refuse:
            grid = ctx.launch.grid
        return Rewritten(apply(ctx.source, [Edit.replace(lp.node, code)]), Launch(ctx.launch.block, grid,
                                                                                   ctx.launch.shared),
                         f"grid-stride loop at line {lp.line}: {width} consecutive elements per thread and step, "
                         f"{', '.join(sorted(set(words.values())))} words", written_types(ctx, list(streams)))


def _grid_stride(lp: Any) -> bool:
    """`for (T e = <global index>; e < n; e += gridDim.x * blockDim.x)`, e declared in the loop."""
    return lp.grid_stride_axis == 0 and bool(lp.counter_type)


def _word(element: str, width: int) -> str:
    """The unsigned word that holds `width` elements: 4, 8 or 16 bytes."""
    size = width * (ctypes.size_of(element) or 0)
    words = {4: "unsigned int", 8: "uint2", 16: "uint4"}
    if not _has_vectors(element) and element not in HALF_TYPES or size not in words:
        raise Refuse(f"{width} x {element} is not a 4-, 8- or 16-byte word")
    return words[size]


def _span(access: Any) -> tuple[int, int]:
    """The bytes a vector component replaces: a cache-hinted load (`__ldg(&a[i])`) as a whole, else `a[i]`
    (the component is a local: `__ldg(&v.x)` would load global memory at its address)."""
    node = read_expression(access.node)
    return node.start_byte, node.end_byte


def _require_value(ctx: Context, access: Any) -> None:
    """Refuse an element whose address is taken other than by a cache-hinted load: it would be a local's."""
    if read_expression(access.node).type == "pointer_expression":
        raise Refuse(f"{ctx.text(access.node)} at line {access.line}: its address is taken")


def _declared(declaration: ts.Node) -> list[str]:
    """The names a declaration declares (`int a = 1, *p;`: a, p)."""
    names = []
    for d in declaration.children_by_field_name("declarator"):
        while d.child_by_field_name("declarator") is not None:
            d = d.child_by_field_name("declarator")
        names.append(text(d))
    return names


def _row_declarations(prelude: list[ts.Node], xs: set[tuple[int, int]]) -> list[ts.Node]:
    """The prelude's declarations that read neither the x index nor a local computed from it."""
    rows, along_x = [], set()
    for d in prelude:
        used = {text(n) for n in walk(d) if n.type == "identifier"} - set(_declared(d))
        if any(d.start_byte <= s and e <= d.end_byte for s, e in xs) or used & along_x:
            along_x.update(_declared(d))
        else:
            rows.append(d)
    return rows


def _before_elements(ctx: Context, node: ts.Node, xs: set[tuple[int, int]], rows: set[str]) -> None:
    """Refuse unless `node` (a guard term, an index) names no local but the x index and the row
    declarations': the fast path evaluates it once per thread, before the elements."""
    def outside(n: ts.Node) -> bool:
        return (n.start_byte, n.end_byte) not in xs

    for n in walk(node, outside):
        if outside(n) and n.type == "identifier" and text(n) in ctx.model.locals and text(n) not in rows:
            raise Refuse(f"{text(node)!r} (line {node.start_point.row + 1}) reads {text(n)}: the fast path needs it "
                         "before the elements, from the x index and declarations free of it")


def _address_taken(node: ts.Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "pointer_expression" and text(parent).startswith("&")


def _unconditional_writes(ctx: Context, lp: Any, array: str) -> bool:
    """Every write of `array` in the loop is a statement directly in its body."""
    writes = [a for a in ctx.model.accesses if a.array == array and a.write
              and lp.node.start_byte <= a.node.start_byte < lp.node.end_byte]
    return all(_unconditional(a, lp) for a in writes)


def _free_of_x(p: Poly) -> bool:
    """Whether an index is the same for every position along x (each lane loads the same element)."""
    return not p.depends_on(BLOCK[0]) and not p.depends_on(THREAD[0])


def _statement_of(node: ts.Node) -> ts.Node:
    while node.parent is not None and not node.type.endswith("_statement"):
        node = node.parent
    return node


def _unconditional(access: Any, lp: Any) -> bool:
    """The access's statement is directly in the loop body (not under an if)."""
    stmt = _statement_of(access.node)
    return stmt.parent == lp.body or stmt == lp.body


TRANSFORM = Vectorize()
