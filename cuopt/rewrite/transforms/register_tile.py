"""register-tile: shared-memory block tiles and register micro-tiles for matmul-like loops.

On the loops smem-tile finds (`acc += A[..k..] * B[..k..]`, A following the output row, B the
column) it builds the classic SGEMM structure. A block of (BN/RN) x (BM/RM) threads computes a
BM x BN tile of outputs, each thread an RM x RN micro-tile kept in registers. Per step of BK the
block stages an A panel, transposed (As[BK][BM]: a thread's RM rows of one k are contiguous), and
a B panel (Bs[BK][BN]) in shared memory; consecutive threads load consecutive addresses, and
elements outside the matrices are zero. Per k each thread loads its RM values of A and RN of B
into registers (float4 shared loads for float) and adds their outer product. The statements after
the loop then run for each of the thread's outputs under the original guard.

Zero padding is sound only if a padded step adds nothing, so the update must be a product with
both operands among its factors."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.rewrite.edits import Edit, node_text
from cuopt.rewrite.transforms.common import fixed_grid
from cuopt.rewrite.transforms.smem_tile import Matmul, finish, matmul_plan, span
from cuopt.source.affine import Poly
from cuopt.source.model import Access
from cuopt.spec.model import Launch

ELEMENT_BYTES = {"float": 4, "double": 8, "int": 4, "unsigned int": 4, "unsigned": 4}
SHARED_BYTES = 48 * 1024  # static shared memory per block
MIN_THREADS, MAX_THREADS = 64, 1024
PAD = 4  # columns added to a panel stored across its load order (fewer bank conflicts, rows stay 16-byte aligned)


@dataclass(frozen=True)
class _Tiling:
    bm: int
    bn: int
    bk: int
    rm: int
    rn: int

    @property
    def threads(self) -> int:
        return (self.bm // self.rm) * (self.bn // self.rn)


@dataclass(frozen=True)
class _Panel:
    """How one operand is staged: A as As[BK][BM] along the rows, B as Bs[BK][BN] along the columns."""

    access: Access
    element: str  # the element type
    axis: int  # the output axis the operand follows: 1 (rows) for A, 0 (columns) for B
    shared: str  # the shared array
    extent: str  # its knob along the output axis: CUOPT_BM or CUOPT_BN
    origin: str  # the block's first row or column
    pos: str  # the position along the output axis within the tile
    index: str  # the global row (A) or column (B)
    k: str  # the global k
    along_k: bool  # consecutive addresses follow k: load along k, store transposed (padded)


class RegisterTile:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        if "cuopt_" in ctx.text(ctx.kernel.node):
            raise Refuse("already rewritten (uses cuopt_ names)")
        p = matmul_plan(ctx)
        for access in (p.a, p.b):
            if ctx.model.written(access.array):
                raise Refuse(f"{access.array} is written as well as read")
        for axis, name in ((1, "rows"), (0, "columns")):
            if not any(axes == {axis} for _, _, axes in p.conj):
                raise Refuse(f"no guard bounds the {name}: larger tiles would read past the matrices")
        return [Site(p.loop.node, note="each output re-reads a row and a column of the operands",
                     data=(p, *_panels(ctx, p)))]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        p, a, b = site.data
        t = _Tiling(int(params["tile"]), int(params["tile"]), int(params["bk"]), int(params["tm"]),
                    int(params["tn"]))
        _check(t, a, b)
        lines = _prologue(p, t, a, b) + _main_loop(ctx, p, t, a, b) + _epilogue(p)
        launch = Launch((t.bn // t.rn, t.bm // t.rm), fixed_grid(ctx, {0: t.bn, 1: t.bm}), ctx.launch.shared)
        return finish(ctx, p.shape.prelude, lines, launch,
                      f"{t.bm}x{t.bn} block tiles, k steps of {t.bk}, {t.rm}x{t.rn} outputs per thread in registers",
                      _launch_bounds(ctx, t.threads))


def _panels(ctx: Context, p: Matmul) -> tuple[_Panel, _Panel]:
    elements = []
    for access in (p.a, p.b):
        param = ctx.kernel.param(access.array)
        if param is None or param.base_type not in ELEMENT_BYTES:
            raise Refuse(f"{access.array} is not an array of {', '.join(ELEMENT_BYTES)}")
        elements.append(param.base_type)
    along_k = [x.flat.coefficient(p.loop.var) == Poly.const(1) for x in (p.a, p.b)]
    return (_Panel(p.a, elements[0], 1, "cuopt_As", "CUOPT_BM", "cuopt_row0", "cuopt_m", "cuopt_ar", "cuopt_ak",
                   along_k[0]),
            _Panel(p.b, elements[1], 0, "cuopt_Bs", "CUOPT_BN", "cuopt_col0", "cuopt_n", "cuopt_bc", "cuopt_bk",
                   along_k[1]))


def _check(t: _Tiling, a: _Panel, b: _Panel) -> None:
    """Refuse tilings the block cannot run: micro-tiles that do not divide the tile, too few or too
    many threads, panels the threads cannot load in whole rounds, too much shared memory."""
    if t.bm % t.rm or t.bn % t.rn:
        raise Refuse(f"{t.rm}x{t.rn} micro-tiles do not divide the {t.bm}x{t.bn} tile")
    if not MIN_THREADS <= t.threads <= MAX_THREADS:
        raise Refuse(f"{t.threads} threads per block (supported: {MIN_THREADS} to {MAX_THREADS})")
    if (t.bm * t.bk) % t.threads or (t.bn * t.bk) % t.threads:
        raise Refuse(f"{t.threads} threads do not load the {t.bk}-deep panels in whole rounds")
    size = sum(t.bk * (extent + (PAD if panel.along_k else 0)) * ELEMENT_BYTES[panel.element]
               for panel, extent in ((a, t.bm), (b, t.bn)))
    if size > SHARED_BYTES:
        raise Refuse(f"{size} bytes of shared memory (at most {SHARED_BYTES})")


def _prologue(p: Matmul, t: _Tiling, a: _Panel, b: _Panel) -> list[str]:
    """The knobs, the shared panels, the block's origin, the thread's rank and its zeroed accumulators."""
    panels = []
    for panel in (a, b):
        pad = f" + {PAD}" if panel.along_k else ""
        note = "  // padded: stored across its load order" if panel.along_k else ""
        panels.append(f"alignas(16) __shared__ {panel.element} {panel.shared}[CUOPT_BK][{panel.extent}{pad}];{note}")
    return [
        f"constexpr int CUOPT_BM = {t.bm};  // outputs per block along y",
        f"constexpr int CUOPT_BN = {t.bn};  // outputs per block along x",
        f"constexpr int CUOPT_BK = {t.bk};  // k per shared-memory step",
        f"constexpr int CUOPT_RM = {t.rm};  // outputs per thread along y, in registers",
        f"constexpr int CUOPT_RN = {t.rn};  // outputs per thread along x, in registers",
        "constexpr int CUOPT_THREADS = (CUOPT_BM / CUOPT_RM) * (CUOPT_BN / CUOPT_RN);",
        *panels,
        "const int cuopt_tid = threadIdx.y * (CUOPT_BN / CUOPT_RN) + threadIdx.x;",
        "const int cuopt_row0 = blockIdx.y * CUOPT_BM;",
        "const int cuopt_col0 = blockIdx.x * CUOPT_BN;",
        f"{p.acc_type} cuopt_acc[CUOPT_RM][CUOPT_RN];",
        *_over_micro_tile([f"cuopt_acc[cuopt_i][cuopt_j] = {p.acc_init};"]),
    ]


def _main_loop(ctx: Context, p: Matmul, t: _Tiling, a: _Panel, b: _Panel) -> list[str]:
    """Per BK step: stage both panels, then per k load the register fragments and add their outer product."""
    start, bound = p.bounds(ctx)
    compute = {**p.acc_uses(p.stmt, "cuopt_acc[cuopt_i][cuopt_j]"), **p.k_uses(p.stmt, "(cuopt_k0 + cuopt_kk)"),
               span(p.a.node): "cuopt_a[cuopt_i]", span(p.b.node): "cuopt_b[cuopt_j]"}
    step = [
        *_load(p, a, bound),
        *_load(p, b, bound),
        "__syncthreads();",
        "#pragma unroll",
        "for (int cuopt_kk = 0; cuopt_kk < CUOPT_BK; ++cuopt_kk) {",
        *_indent(_fragment(a, "cuopt_a", "CUOPT_RM", t.rm, "threadIdx.y")),
        *_indent(_fragment(b, "cuopt_b", "CUOPT_RN", t.rn, "threadIdx.x")),
        *_indent(_over_micro_tile([f"{node_text(p.stmt, compute)};"])),
        "}",
        "__syncthreads();",
    ]
    return [f"for (int cuopt_k0 = {start}; cuopt_k0 < {bound}; cuopt_k0 += CUOPT_BK) {{", *_indent(step), "}"]


def _load(p: Matmul, panel: _Panel, bound: str) -> list[str]:
    """The block copies a BK-deep panel to shared memory, consecutive threads at consecutive global
    addresses; zero outside the original guard or past the loop bound."""
    if panel.along_k:
        split = [f"const int {panel.pos} = cuopt_l / CUOPT_BK;", "const int cuopt_k = cuopt_l % CUOPT_BK;"]
    else:
        split = [f"const int cuopt_k = cuopt_l / {panel.extent};", f"const int {panel.pos} = cuopt_l % {panel.extent};"]
    guard = p.guard({panel.axis: panel.index}, {panel.axis})
    value = p.operand(panel.access, panel.index, panel.k)
    return [
        "#pragma unroll",
        f"for (int cuopt_p = 0; cuopt_p < {panel.extent} * CUOPT_BK / CUOPT_THREADS; ++cuopt_p) {{",
        "    const int cuopt_l = cuopt_p * CUOPT_THREADS + cuopt_tid;",
        *_indent(split),
        f"    const int {panel.index} = {panel.origin} + {panel.pos};",
        f"    const int {panel.k} = cuopt_k0 + cuopt_k;",
        f"    {panel.shared}[cuopt_k][{panel.pos}] = ({guard} && {panel.k} < {bound}) ? {value} : ({panel.element})0;",
        "}",
    ]


def _fragment(panel: _Panel, name: str, knob: str, count: int, thread: str) -> list[str]:
    """The thread's `count` consecutive values of row cuopt_kk of the panel, into registers: float4
    loads for float when `count` is a multiple of 4 (so are the rows, and the thread's offset)."""
    at = f"{panel.shared}[cuopt_kk][{thread} * {knob} + cuopt_v]"
    if panel.element != "float" or count % 4:
        return [f"{panel.element} {name}[{knob}];", "#pragma unroll",
                f"for (int cuopt_v = 0; cuopt_v < {knob}; ++cuopt_v) {{", f"    {name}[cuopt_v] = {at};", "}"]
    return [
        f"float {name}[{knob}];",
        "#pragma unroll",
        f"for (int cuopt_v = 0; cuopt_v < {knob}; cuopt_v += 4) {{",
        f"    const float4 cuopt_q = *reinterpret_cast<const float4*>(&{at});",
        *(f"    {name}[cuopt_v + {i}] = cuopt_q.{c};" for i, c in enumerate("xyzw")),
        "}",
    ]


def _epilogue(p: Matmul) -> list[str]:
    """The statements after the loop, once per output of the micro-tile, under the original guard."""
    names = {0: "cuopt_col", 1: "cuopt_row"}
    body = [
        "const int cuopt_row = cuopt_row0 + threadIdx.y * CUOPT_RM + cuopt_i;",
        "const int cuopt_col = cuopt_col0 + threadIdx.x * CUOPT_RN + cuopt_j;",
        f"if ({p.guard(names)}) {{",
        *_indent(p.epilogue_lines(names, "cuopt_acc[cuopt_i][cuopt_j]")),
        "}",
    ]
    return _over_micro_tile(body)


def _over_micro_tile(body: list[str]) -> list[str]:
    """`body` in unrolled loops over the thread's outputs (cuopt_i along y, cuopt_j along x)."""
    return [
        "#pragma unroll",
        "for (int cuopt_i = 0; cuopt_i < CUOPT_RM; ++cuopt_i) {",
        "    #pragma unroll",
        "    for (int cuopt_j = 0; cuopt_j < CUOPT_RN; ++cuopt_j) {",
        *_indent(body, 2),
        "    }",
        "}",
    ]


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    return ["    " * levels + ln if ln else "" for ln in lines]


def _launch_bounds(ctx: Context, threads: int) -> tuple[Edit, ...]:
    """`__launch_bounds__(threads)` when the kernel has none, so the compiler budgets registers for
    the block (the engine keeps an existing one in step with the block)."""
    if any(c.type == "launch_bounds" for c in ctx.kernel.node.children):
        return ()
    decl = ctx.kernel.node.child_by_field_name("declarator")
    return (Edit.insert(decl.start_byte, f"__launch_bounds__({threads}) "),)
