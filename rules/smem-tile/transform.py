"""smem-tile: shared-memory tiling with `__syncthreads`, for three patterns of 2D kernels.

- matmul: a loop `acc += A[..k..] * B[..k..]` where A's index follows the output row and B's the
  output column. A block computes a TILE x TILE output tile; each step stages a TILE x TILE panel
  of A and of B in shared memory. The tiled kernel keeps `CUOPT_TM` x `CUOPT_TN` outputs per
  thread as constants that `coarsen` can raise (register blocking).
- transpose: `out[f(x, y)] = g(in[..], ...)` where the write is contiguous along one axis (x or
  y) and one or two reads along the other. The block stages those reads in tiles (one padding
  column against bank conflicts), loading them with consecutive threads along their axis, then
  computes `g` where the write is coalesced; the other reads stay where they are.
- stencil: `out[y*W + x] = f(in[(y+dy)*W + x+dx], ...)`. The block stages its tile plus a halo,
  loading exactly the elements the original kernel reads.

Out-of-range elements are never read: loads are guarded by the original kernel's own conditions.
The matmul analysis (`matmul_plan`, `Matmul`) and `finish` are shared with register-tile
(cuopt/rewrite/transforms/tiling.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import node_text
from cuopt.rewrite.transforms.common import (
    SHARED_BYTES, TILE_ELEMENTS, fixed_grid, reindent, require_index_only_builtins)
from cuopt.rewrite.transforms.tiling import (
    Matmul, Ranges, batch_locals, check_free_locals, finish, guard_terms, index_renames, matmul_plan, render_guard,
    span, two_d)
from cuopt.source.affine import BLOCK, DIM, THREAD, Poly, global_index
from cuopt.source.analysis import Shape, assignment, conditional, read_expression
from cuopt.source.ctypes import size_of
from cuopt.source.model import Access
from cuopt.source.parse import declared_names, text, walk
from cuopt.spec.model import Launch

TRANSPOSE_ROWS = 8  # a transpose tile is moved by TILE x 8 threads, TILE / 8 elements each


def _straight_line_2d(ctx: Context, batched: bool = False) -> tuple[Ranges, Shape]:
    """A 2D kernel (or, with `batched`, a batch of them along z) without loops or atomics: its
    global-index occurrences and its shape."""
    two_d(ctx, batched)
    if ctx.model.loops or ctx.model.atomics:
        raise Refuse("has loops or atomics")
    return require_index_only_builtins(ctx, ctx.kernel.body, {0, 1}), ctx.model.shape


def _contiguous_axis(access: Access) -> int | None:
    """0 or 1 when consecutive threads along x or y touch consecutive elements of `access`."""
    return next((axis for axis in (0, 1) if access.flat is not None
                 and access.flat.coefficient(THREAD[axis]) == Poly.const(1)), None)


def _array(read: ts.Node) -> str:
    """The array a read expression (`a[i]` or `__ldg(&a[i])`) reads."""
    sub = read if read.type == "subscript_expression" else next(n for n in walk(read) if n.type == "subscript_expression")
    return text(sub.child_by_field_name("argument"))


def _tile_loop(offsets: tuple[str, str], guard: str, body: list[str]) -> list[str]:
    """The loop over a tile's rows of threads, at tile offsets (x, y) = `offsets`, guarded."""
    x, y = offsets
    return ["#pragma unroll",
            "for (int cuopt_r = 0; cuopt_r < CUOPT_TILE; cuopt_r += CUOPT_ROWS) {",
            f"    const int cuopt_x = blockIdx.x * CUOPT_TILE + {x};",
            f"    const int cuopt_y = blockIdx.y * CUOPT_TILE + {y};",
            f"    if ({guard}) {{", *(f"        {b}" for b in body), "    }", "}"]


def _stencil_body(s: Shape) -> list[ts.Node]:
    """The guarded statements of a stencil: `out[...] = ...;`, or local declarations and updates
    (`float acc = 0.0f; acc += in[...]; ...`) and then that store."""
    if s.after or not s.body or any(st.type not in ("declaration", "expression_statement") for st in s.body):
        raise Refuse("the guarded body is not straight-line declarations and assignments")
    _assignment(s.body[-1])
    return s.body


def _single_assignment(s: Shape) -> ts.Node:
    if s.after or len(s.body) != 1:
        raise Refuse("the guarded body is not a single assignment")
    return _assignment(s.body[0])


def _assignment(st: ts.Node) -> ts.Node:
    """The `out[...] = ...` that statement `st` is."""
    a = assignment(st)
    if a is None or a.op != "=":
        raise Refuse("the guarded body is not a single `out[...] = ...` assignment")
    return a.node


@dataclass
class _Transpose:
    shape: Shape
    ranges: Ranges
    assign: ts.Node
    conj: list[tuple[ts.Node, bool, set[int]]]
    store_axis: int  # the axis (0: x, 1: y) along which the store is contiguous
    staged: list[list[ts.Node]]  # per tile, the read expressions it replaces (one index text each)


@dataclass
class _Stencil:
    shape: Shape
    ranges: Ranges
    body: list[ts.Node]  # the guarded statements: local declarations and updates, then the store
    source: str  # the staged input buffer
    reads: list[tuple[Access, int, int]]  # (access, dy, dx)
    halo: int
    conj: list[tuple[ts.Node, bool, set[int]]]


class SmemTile:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        reasons = []
        for kind, plan in (("matmul", matmul_plan), ("transpose", self._transpose_plan),
                           ("stencil", self._stencil_plan)):
            try:
                data = plan(ctx)
            except Refuse as exc:
                reasons.append(f"{kind}: {exc}")
                continue
            node = data.loop.node if kind == "matmul" else data.assign if kind == "transpose" else \
                _assignment(data.body[-1])
            if kind == "transpose":
                note = f"uncoalesced global {'store' if data.store_axis == 1 else 'read'}"
            else:
                note = {"matmul": "each output re-reads a row panel and a column panel from global memory",
                        "stencil": "neighbouring threads re-read the same input elements"}[kind]
            return [Site(node, note=note, data=(kind, data))]
        raise Refuse("; ".join(reasons))

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        kind, data = site.data
        tile = int(params["tile"])
        if kind == "matmul":
            return self._matmul(ctx, data, tile)
        if tile > 32:
            raise Refuse(f"a {tile}x{tile} tile does not fit the shared memory of a block")
        return self._transpose(ctx, data, tile) if kind == "transpose" else self._stencil(ctx, data, tile)

    # -- matmul -------------------------------------------------------------------------------
    def _matmul(self, ctx: Context, p: Matmul, tile: int) -> Rewritten:
        micro = 1 if tile <= 32 else 2
        return self.emit_matmul(ctx, p, tile, micro, micro)

    def emit_matmul(self, ctx: Context, p: Matmul, tile: int, tm: int, tn: int) -> Rewritten:
        k = p.loop.var
        pa, pb = ctx.kernel.param(p.a.array), ctx.kernel.param(p.b.array)
        ta, tb = pa.base_type, pb.base_type  # as written: the tiles hold what the template's T is
        start, bound = p.bounds(ctx)
        a_guard = p.guard({1: "cuopt_ar"}, {1})
        b_guard = p.guard({0: "cuopt_bc"}, {0})
        acc_ref = "cuopt_acc[cuopt_i][cuopt_j]"
        compute = {**p.acc_uses(p.stmt, acc_ref), **p.k_uses(p.stmt, "(cuopt_k0 + cuopt_kk)"),
                   p.read(p.a): "cuopt_As[threadIdx.y + cuopt_i * (CUOPT_TILE / CUOPT_TM)][cuopt_kk]",
                   p.read(p.b): "cuopt_Bs[cuopt_kk][threadIdx.x + cuopt_j * (CUOPT_TILE / CUOPT_TN)]"}
        # load order: consecutive threads take consecutive addresses of each operand
        a_kfast = p.a.flat.coefficient(k) == Poly.const(1)
        b_colfast = p.b.flat.coefficient("threadIdx.x") == Poly.const(1)
        a_rk = ("cuopt_r", "cuopt_c") if a_kfast else ("cuopt_c", "cuopt_r")
        b_kc = ("cuopt_r", "cuopt_c") if b_colfast else ("cuopt_c", "cuopt_r")
        a_pad, b_pad = ("" if a_kfast else " + 1"), ("" if b_colfast else " + 1")
        if pa.element not in TILE_ELEMENTS or pb.element not in TILE_ELEMENTS:
            raise Refuse(f"{p.a.array} and {p.b.array} are not arrays of {', '.join(TILE_ELEMENTS)}")
        size = tile * (tile + bool(a_pad)) * size_of(pa.element) + \
            tile * (tile + bool(b_pad)) * size_of(pb.element)
        if size > SHARED_BYTES:
            raise Refuse(f"two {tile}x{tile} tiles of {ta} and {tb} take {size} bytes of shared memory "
                         f"(at most {SHARED_BYTES})")
        out_names = {0: "cuopt_col", 1: "cuopt_row"}
        guard = p.guard(out_names)
        position = ["const int cuopt_row = cuopt_row0 + threadIdx.y + cuopt_i * (CUOPT_TILE / CUOPT_TM);",
                    "const int cuopt_col = cuopt_col0 + threadIdx.x + cuopt_j * (CUOPT_TILE / CUOPT_TN);"]
        a_value, b_value = p.operand(p.a, "cuopt_ar", "cuopt_ak"), p.operand(p.b, "cuopt_bc", "cuopt_bk")
        lines = [
            f"constexpr int CUOPT_TILE = {tile};  // outputs per block along x and y",
            f"constexpr int CUOPT_TM = {tm};  // outputs per thread along y",
            f"constexpr int CUOPT_TN = {tn};  // outputs per thread along x",
            f"__shared__ {ta} cuopt_As[CUOPT_TILE][CUOPT_TILE{a_pad}];",
            f"__shared__ {tb} cuopt_Bs[CUOPT_TILE][CUOPT_TILE{b_pad}];",
            "const int cuopt_row0 = blockIdx.y * CUOPT_TILE;",
            "const int cuopt_col0 = blockIdx.x * CUOPT_TILE;",
            f"{p.acc_type} cuopt_acc[CUOPT_TM][CUOPT_TN];",
            "#pragma unroll",
            "for (int cuopt_i = 0; cuopt_i < CUOPT_TM; ++cuopt_i) {",
            "    #pragma unroll",
            "    for (int cuopt_j = 0; cuopt_j < CUOPT_TN; ++cuopt_j) {",
            *(["        " + ln for ln in position] if p.init_follows_output else []),
            f"        {p.init_statement(out_names, acc_ref)}",
            "    }",
            "}",
            f"for (int cuopt_k0 = {start}; cuopt_k0 < {bound}; cuopt_k0 += CUOPT_TILE) {{",
            "    for (int cuopt_l = threadIdx.y * blockDim.x + threadIdx.x; cuopt_l < CUOPT_TILE * CUOPT_TILE;",
            "         cuopt_l += blockDim.x * blockDim.y) {",
            "        const int cuopt_r = cuopt_l / CUOPT_TILE;",
            "        const int cuopt_c = cuopt_l % CUOPT_TILE;",
            f"        const int cuopt_ar = cuopt_row0 + {a_rk[0]};",
            f"        const int cuopt_ak = cuopt_k0 + {a_rk[1]};",
            f"        cuopt_As[{a_rk[0]}][{a_rk[1]}] = ({a_guard} && cuopt_ak < {bound}) ? {a_value} : ({ta})0;",
            f"        const int cuopt_bk = cuopt_k0 + {b_kc[0]};",
            f"        const int cuopt_bc = cuopt_col0 + {b_kc[1]};",
            f"        cuopt_Bs[{b_kc[0]}][{b_kc[1]}] = ({b_guard} && cuopt_bk < {bound}) ? {b_value} : ({tb})0;",
            "    }",
            "    __syncthreads();",
            "    #pragma unroll",
            "    for (int cuopt_kk = 0; cuopt_kk < CUOPT_TILE; ++cuopt_kk) {",
            "        #pragma unroll",
            "        for (int cuopt_i = 0; cuopt_i < CUOPT_TM; ++cuopt_i) {",
            "            #pragma unroll",
            "            for (int cuopt_j = 0; cuopt_j < CUOPT_TN; ++cuopt_j) {",
            f"                {node_text(p.stmt, compute)};",
            "            }",
            "        }",
            "    }",
            "    __syncthreads();",
            "}",
            "#pragma unroll",
            "for (int cuopt_i = 0; cuopt_i < CUOPT_TM; ++cuopt_i) {",
            "    #pragma unroll",
            "    for (int cuopt_j = 0; cuopt_j < CUOPT_TN; ++cuopt_j) {",
            *("        " + ln for ln in position),
            f"        if ({guard}) {{",
        ]
        lines += ["            " + ln if ln else "" for ln in p.epilogue_lines(out_names, acc_ref)]
        lines += ["        }", "    }", "}"]
        block = (tile // tn, tile // tm)
        launch = Launch(block, fixed_grid(ctx, {0: tile, 1: tile}), ctx.launch.shared)
        return finish(ctx, p.shape.prelude, lines, launch,
                      f"{tile}x{tile} shared-memory tiles of {p.a.array} and {p.b.array}, "
                      f"{tm}x{tn} outputs per thread")

    # -- transpose ----------------------------------------------------------------------------
    def _transpose_plan(self, ctx: Context) -> _Transpose:
        ranges, s = _straight_line_2d(ctx, batched=True)
        m = ctx.model
        assign = _single_assignment(s)
        writes = [a for a in m.global_accesses() if a.write]
        reads = [a for a in m.global_accesses() if a.read]
        if len(writes) != 1 or writes[0].node != assign.child_by_field_name("left"):
            raise Refuse("needs exactly one global store")
        w = writes[0]
        if not reads or any(r.array == w.array for r in reads):
            raise Refuse("needs global reads of another buffer")
        for a in [w, *reads]:
            if a.flat is None or a.flat.degree_in(THREAD) > 1:
                raise Refuse(f"{ctx.text(a.node)} has a non-affine index")
        store_axis = _contiguous_axis(w)
        if store_axis is None:
            raise Refuse("the store is not contiguous along x or y")
        tiles: dict[str, list[ts.Node]] = {}
        for r in reads:
            if _contiguous_axis(r) == 1 - store_axis:
                tiles.setdefault(ctx.text(r.node).replace(" ", ""), []).append(read_expression(r.node))
        if not tiles:
            raise Refuse(f"no read is contiguous along {'xy'[1 - store_axis]} (the store is along {'xy'[store_axis]})")
        if len(tiles) > 2:
            raise Refuse(f"{len(tiles)} reads to stage (at most 2)")
        for node in (n for group in tiles.values() for n in group):
            if conditional(node, assign):
                raise Refuse(f"{text(node)} is read under a condition (line {node.start_point.row + 1})")
        check_free_locals(ctx, assign, ranges, batch_locals(ctx))
        return _Transpose(s, ranges, assign, guard_terms(ctx, s, ranges, batch_locals(ctx)), store_axis,
                          list(tiles.values()))

    def _transpose(self, ctx: Context, p: _Transpose, tile: int) -> Rewritten:
        names = {0: "cuopt_x", 1: "cuopt_y"}
        left, right = p.assign.child_by_field_name("left"), p.assign.child_by_field_name("right")
        guard = render_guard(p.conj, p.ranges, names)
        rows = min(TRANSPOSE_ROWS, tile)
        tile_names = ["cuopt_tile"] if len(p.staged) == 1 else [f"cuopt_tile{i}" for i in range(len(p.staged))]
        # A thread's (x, y) offsets in the tile: consecutive threads run along `axis`.
        along = {0: ("threadIdx.x", "threadIdx.y + cuopt_r"), 1: ("threadIdx.y + cuopt_r", "threadIdx.x")}
        load, store = along[1 - p.store_axis], along[p.store_axis]
        lines = [f"constexpr int CUOPT_TILE = {tile};",
                 f"constexpr int CUOPT_ROWS = {rows};  // the block is CUOPT_TILE x CUOPT_ROWS threads"]
        for name, group in zip(tile_names, p.staged):
            elem = ctx.kernel.param(ctx.model.aliases.get(_array(group[0]), _array(group[0]))).base_type
            lines.append(f"__shared__ {elem} {name}[CUOPT_TILE][CUOPT_TILE + 1];  // +1: no bank conflicts")
        lines += _tile_loop(load, guard, [f"{name}[{load[1]}][{load[0]}] = "
                                          f"{node_text(group[0], index_renames(p.ranges, group[0], names))};"
                                          for name, group in zip(tile_names, p.staged)])
        lines.append("__syncthreads();")
        lookups = {span(n): f"{name}[{store[1]}][{store[0]}]" for name, group in zip(tile_names, p.staged)
                   for n in group}
        rhs = node_text(right, {**index_renames(p.ranges, right, names), **lookups})
        lhs = node_text(left, index_renames(p.ranges, left, names))
        lines += _tile_loop(store, guard, [f"{lhs} = {rhs};"])
        launch = Launch((tile, rows), fixed_grid(ctx, {0: tile, 1: tile}), ctx.launch.shared)
        arrays = " and ".join(_array(g[0]) for g in p.staged)
        return finish(ctx, p.shape.prelude, lines, launch,
                      f"{tile}x{tile} shared-memory tile of {arrays}: coalesced read and write")

    # -- stencil ------------------------------------------------------------------------------
    def _stencil_plan(self, ctx: Context) -> _Stencil:
        ranges, s = _straight_line_2d(ctx)
        m = ctx.model
        body = _stencil_body(s)
        writes = [a for a in m.global_accesses() if a.write]
        if len(writes) != 1:
            raise Refuse("needs exactly one global store")
        by_array: dict[str, list[Access]] = {}
        for a in m.global_accesses():
            if a.read:
                by_array.setdefault(a.array, []).append(a)
        candidates = sorted(by_array.items(), key=lambda kv: -len(kv[1]))
        if not candidates or len(candidates[0][1]) < 3:
            raise Refuse("no input is read at three or more neighbouring points")
        source, reads = candidates[0]
        if source == writes[0].array:
            raise Refuse("the stencil reads the buffer it writes")
        gx, gy = global_index(0), global_index(1)
        offsets = []
        width = None
        for a in reads:
            p = a.flat
            if p is None:
                raise Refuse(f"{ctx.text(a.node)} has a non-affine index")
            w = p.coefficient("threadIdx.y")
            if width is None:
                width = w
            if w != width or not w.terms or w.symbols() & set(THREAD + BLOCK + DIM) or \
                    p.coefficient("threadIdx.x") != Poly.const(1):
                raise Refuse(f"{ctx.text(a.node)} is not (y + dy) * W + (x + dx)")
            rest = p - gy * w - gx
            dy_poly = rest.coefficient(next(iter(w.symbols()))) if len(w.terms) == 1 and w.terms[0][1] == 1 \
                and len(w.terms[0][0]) == 1 else None
            if dy_poly is None or dy_poly.constant() is None:
                raise Refuse(f"{ctx.text(a.node)} is not (y + dy) * W + (x + dx) with constant dy, dx")
            dy = dy_poly.constant()
            dx = (rest - w * Poly.const(dy)).constant()
            if dx is None:
                raise Refuse(f"{ctx.text(a.node)} has a non-constant x offset")
            offsets.append((a, dy, dx))
        halo = max(max(abs(dy), abs(dx)) for _, dy, dx in offsets)
        if halo > 4 or halo == 0:
            raise Refuse(f"halo radius {halo} (supported: 1 to 4)")
        own = frozenset(n for st in body if st.type == "declaration" for n in declared_names(st))
        for st in body:
            check_free_locals(ctx, st, ranges, own)
        conj = guard_terms(ctx, s, ranges)
        if not conj:
            raise Refuse("no bounds guard")
        return _Stencil(s, ranges, body, source, offsets, halo, conj)

    def _stencil(self, ctx: Context, p: _Stencil, tile: int) -> Rewritten:
        r = p.halo
        elem = ctx.kernel.param(p.source).base_type

        def shifted(base: str, d: int) -> str:
            return base if d == 0 else f"({base} {'-' if d > 0 else '+'} {abs(d)})"

        distinct = sorted({(dy, dx) for _, dy, dx in p.reads})
        covers = " ||\n                ".join(
            f"({render_guard(p.conj, p.ranges, {0: shifted('cuopt_gx', dx), 1: shifted('cuopt_gy', dy)})})"
            for dy, dx in distinct)
        a0, dy0, dx0 = p.reads[0]
        load_index = node_text(a0.node, index_renames(p.ranges, a0.node, {0: shifted("cuopt_gx", dx0),
                                                                  1: shifted("cuopt_gy", dy0)}))
        names = {0: "cuopt_x", 1: "cuopt_y"}
        repl = {r: name for st in p.body for r, name in index_renames(p.ranges, st, names).items()}
        for a, dy, dx in p.reads:
            repl[span(read_expression(a.node))] = \
                f"cuopt_tile[threadIdx.y + CUOPT_HALO{_signed(dy)}][threadIdx.x + CUOPT_HALO{_signed(dx)}]"
        guard = render_guard(p.conj, p.ranges, names)
        body = [ln for st in p.body for ln in reindent(st, node_text(st, repl), "    ").split("\n")]
        lines = [
            f"constexpr int CUOPT_TILE = {tile};",
            f"constexpr int CUOPT_HALO = {r};",
            "constexpr int CUOPT_SPAN = CUOPT_TILE + 2 * CUOPT_HALO;",
            f"__shared__ {elem} cuopt_tile[CUOPT_SPAN][CUOPT_SPAN];",
            "for (int cuopt_l = threadIdx.y * blockDim.x + threadIdx.x; cuopt_l < CUOPT_SPAN * CUOPT_SPAN;",
            "     cuopt_l += blockDim.x * blockDim.y) {",
            "    const int cuopt_ty = cuopt_l / CUOPT_SPAN;",
            "    const int cuopt_tx = cuopt_l % CUOPT_SPAN;",
            "    const int cuopt_gx = blockIdx.x * CUOPT_TILE - CUOPT_HALO + cuopt_tx;",
            "    const int cuopt_gy = blockIdx.y * CUOPT_TILE - CUOPT_HALO + cuopt_ty;",
            "    // load exactly the elements that some output of this block reads",
            f"    if ({covers}) {{",
            f"        cuopt_tile[cuopt_ty][cuopt_tx] = {load_index};",
            "    }",
            "}",
            "__syncthreads();",
            "const int cuopt_x = blockIdx.x * CUOPT_TILE + threadIdx.x;",
            "const int cuopt_y = blockIdx.y * CUOPT_TILE + threadIdx.y;",
            f"if ({guard}) {{",
            *body,
            "}",
        ]
        launch = Launch((tile, tile), fixed_grid(ctx, {0: tile, 1: tile}), ctx.launch.shared)
        return finish(ctx, p.shape.prelude, lines, launch,
                            f"{tile}x{tile} shared-memory tile of {p.source} with a halo of {r}")


def _signed(d: int) -> str:
    return "" if d == 0 else f" + {d}" if d > 0 else f" - {-d}"


TRANSFORM = SmemTile()
