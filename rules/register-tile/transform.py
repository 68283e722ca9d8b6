"""register-tile: shared-memory block tiles and register micro-tiles for matmul-like loops.

On the loops smem-tile finds (`acc += A[..k..] * B[..k..]`, A following the output row, B the
column) it builds the classic SGEMM structure. A block of (BN/RN) x (BM/RM) threads computes a
BM x BN tile of outputs, each thread an RM x RN micro-tile kept in registers. Per step of BK the
block stages an A panel, transposed (As[BK][BM]: a thread's RM rows of one k are contiguous), and
a B panel (Bs[BK][BN]) in shared memory; consecutive threads load consecutive addresses, and
elements outside the matrices are zero. A float panel contiguous along k or along the output axis
is read from global memory as float4: a slot whose four elements lie inside the matrices and
whose address is 16-byte aligned takes one load, any other slot four guarded scalar loads. Per k
each thread loads its RM values of A and RN of B into registers and adds their outer product. For
float, a thread's values come in groups of 4 spread a warp's width apart (float4 shared loads that
consecutive threads take from consecutive addresses, without bank conflicts). The statements
after the loop then run for each of the thread's outputs under the original guard.

`stages = 2` double-buffers the panels: the global loads of the next step are issued into
registers before the current step's products and stored into the other buffer after them, so
their latency hides behind the arithmetic, with one barrier per step.

Zero padding is sound only if a padded step adds nothing, so the update must be a product with
both operands among its factors."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, node_text
from cuopt.rewrite.transforms.common import SHARED_BYTES, TILE_ELEMENTS, fixed_grid, written_types
from cuopt.rewrite.transforms.tiling import Matmul, finish, matmul_plan
from cuopt.source.affine import Poly
from cuopt.source.ctypes import size_of
from cuopt.source.model import Access
from cuopt.spec.model import Launch

MIN_THREADS, MAX_THREADS = 64, 1024
REGISTERS = 64 * 1024  # 32-bit registers per SM
PAD = 4  # columns added to a panel stored across its load order (fewer bank conflicts, rows stay 16-byte aligned)
OUT_NAMES = {0: "cuopt_col", 1: "cuopt_row"}  # the output's global indices in the emitted code


@dataclass(frozen=True)
class _Tiling:
    bm: int
    bn: int
    bk: int
    rm: int
    rn: int
    stages: int

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
    micro: str  # the knob of a thread's outputs along that axis: CUOPT_RM or CUOPT_RN
    thread: str  # the thread's coordinate along that axis
    origin: str  # the block's first row or column
    pos: str  # the position along the output axis within the tile
    index: str  # the global row (A) or column (B)
    k: str  # the global k
    fetch: str  # the registers that carry the thread's share of a panel from global to shared memory
    along_k: bool  # consecutive addresses follow k: load along k, store transposed (padded)
    contiguous: bool  # consecutive addresses follow k or the output axis

    def vector(self, t: _Tiling, extent: int) -> bool:
        """float4 global loads: a float panel, contiguous, that the threads load in whole rounds of 4-wide slots."""
        return self.element == "float" and self.contiguous and (extent * t.bk // 4) % t.threads == 0

    def strided(self, count: int) -> bool:
        """A thread's `count` values along the output axis lie in groups of 4, a warp's width apart."""
        return self.element == "float" and count % 4 == 0


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
                    int(params["tn"]), int(params["stages"]))
        _check(t, a, b)
        lines = _prologue(p, t, a, b) + _main_loop(ctx, p, t, a, b) + _epilogue(p, t, a, b)
        launch = Launch((t.bn // t.rn, t.bm // t.rm), fixed_grid(ctx, {0: t.bn, 1: t.bm}), ctx.launch.shared)
        staged = ", double-buffered" if t.stages == 2 else ""
        return finish(ctx, p.shape.prelude, lines, launch,
                      f"{t.bm}x{t.bn} block tiles, k steps of {t.bk}{staged}, {t.rm}x{t.rn} outputs per thread "
                      "in registers", _launch_bounds(ctx, t), written_types(ctx, [p.a.array, p.b.array]))


def _panels(ctx: Context, p: Matmul) -> tuple[_Panel, _Panel]:
    elements = []
    for access in (p.a, p.b):
        param = ctx.kernel.param(access.array)
        if param is None or param.element not in TILE_ELEMENTS:
            raise Refuse(f"{access.array} is not an array of {', '.join(TILE_ELEMENTS)}")
        elements.append(param.element)
    one = Poly.const(1)
    along_k = [x.flat.coefficient(p.loop.var) == one for x in (p.a, p.b)]
    along_out = [p.a.flat.coefficient("threadIdx.y") == one, p.b.flat.coefficient("threadIdx.x") == one]
    return (_Panel(p.a, elements[0], 1, "cuopt_As", "CUOPT_BM", "CUOPT_RM", "threadIdx.y", "cuopt_row0", "cuopt_m",
                   "cuopt_ar", "cuopt_ak", "cuopt_fa", along_k[0], along_k[0] or along_out[0]),
            _Panel(p.b, elements[1], 0, "cuopt_Bs", "CUOPT_BN", "CUOPT_RN", "threadIdx.x", "cuopt_col0", "cuopt_n",
                   "cuopt_bc", "cuopt_bk", "cuopt_fb", along_k[1], along_k[1] or along_out[1]))


def _check(t: _Tiling, a: _Panel, b: _Panel) -> None:
    """Refuse tilings the block cannot run: micro-tiles that do not divide the tile, too few or too
    many threads, panels the threads cannot load in whole rounds, too much shared memory."""
    if t.bm % t.rm or t.bn % t.rn:
        raise Refuse(f"{t.rm}x{t.rn} micro-tiles do not divide the {t.bm}x{t.bn} tile")
    if not MIN_THREADS <= t.threads <= MAX_THREADS:
        raise Refuse(f"{t.threads} threads per block (supported: {MIN_THREADS} to {MAX_THREADS})")
    if (t.bm * t.bk) % t.threads or (t.bn * t.bk) % t.threads:
        raise Refuse(f"{t.threads} threads do not load the {t.bk}-deep panels in whole rounds")
    size = t.stages * sum(t.bk * (extent + (PAD if panel.along_k else 0)) * size_of(panel.element)
                          for panel, extent in ((a, t.bm), (b, t.bn)))
    if size > SHARED_BYTES:
        raise Refuse(f"{size} bytes of shared memory (at most {SHARED_BYTES})")


def _prologue(p: Matmul, t: _Tiling, a: _Panel, b: _Panel) -> list[str]:
    """The knobs, the shared panels, the block's origin, the thread's rank and its zeroed accumulators."""
    panels = []
    buffers = "[2]" if t.stages == 2 else ""
    for panel in (a, b):
        pad = f" + {PAD}" if panel.along_k else ""
        note = "  // padded: stored across its load order" if panel.along_k else ""
        panels.append(f"alignas(16) __shared__ {panel.element} {panel.shared}{buffers}[CUOPT_BK][{panel.extent}{pad}];"
                      f"{note}")
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
        *_over_micro_tile([*(_position(t, a, b) if p.init_follows_output else []),
                           p.init_statement(OUT_NAMES, "cuopt_acc[cuopt_i][cuopt_j]")]),
    ]


def _main_loop(ctx: Context, p: Matmul, t: _Tiling, a: _Panel, b: _Panel) -> list[str]:
    """Per BK step: stage both panels, then per k load the register fragments and add their outer
    product. With two stages the next step's panels travel in registers while this step computes."""
    start, bound = p.bounds(ctx)
    compute = {**p.acc_uses(p.stmt, "cuopt_acc[cuopt_i][cuopt_j]"), **p.k_uses(p.stmt, "(cuopt_k0 + cuopt_kk)"),
               p.read(p.a): "cuopt_a[cuopt_i]", p.read(p.b): "cuopt_b[cuopt_j]"}
    panels = ((a, t.bm), (b, t.bn))
    buf = "[cuopt_buf]" if t.stages == 2 else ""
    products = [
        "#pragma unroll",
        "for (int cuopt_kk = 0; cuopt_kk < CUOPT_BK; ++cuopt_kk) {",
        *_indent(_fragment(a, "cuopt_a", t.rm, buf)),
        *_indent(_fragment(b, "cuopt_b", t.rn, buf)),
        *_indent(_over_micro_tile([f"{node_text(p.stmt, compute)};"])),
        "}",
    ]
    def fetch(k0: str) -> list[str]:
        return [ln for panel, extent in panels for ln in _fetch(p, panel, t, extent, k0, bound)]

    def store(into: str) -> list[str]:
        return [ln for panel, extent in panels for ln in _store(panel, t, extent, into)]

    declare = [ln for panel, extent in panels for ln in _registers(panel, t, extent)]
    if t.stages == 1:
        step = [*declare, *fetch("cuopt_k0"), *store(""), "__syncthreads();", *products, "__syncthreads();"]
        return [f"for (int cuopt_k0 = {start}; cuopt_k0 < {bound}; cuopt_k0 += CUOPT_BK) {{", *_indent(step), "}"]
    first = [*fetch(start), *store("[0]")]
    nxt = "cuopt_k0 + CUOPT_BK"
    step = [f"if ({nxt} < {bound}) {{", *_indent(fetch(nxt)), "}", *products,
            f"if ({nxt} < {bound}) {{", *_indent(store("[cuopt_buf ^ 1]")), "}", "__syncthreads();"]
    return [*declare, "// the first step's panels", *first, "__syncthreads();",
            f"for (int cuopt_k0 = {start}, cuopt_buf = 0; cuopt_k0 < {bound}; cuopt_k0 += CUOPT_BK, cuopt_buf ^= 1) {{",
            *_indent(step), "}"]


def _slots(panel: _Panel, t: _Tiling, extent: int) -> tuple[str, int]:
    """The thread's slots of a panel per step (an expression of the knobs) and the elements per slot."""
    width = 4 if panel.vector(t, extent) else 1
    per = f" / {width}" if width > 1 else ""
    return f"{panel.extent} * CUOPT_BK{per} / CUOPT_THREADS", width


def _registers(panel: _Panel, t: _Tiling, extent: int) -> list[str]:
    count, width = _slots(panel, t, extent)
    kind = "float4" if width == 4 else panel.element
    return [f"{kind} {panel.fetch}[{count}];"]


def _split(panel: _Panel, width: int) -> list[str]:
    """Slot cuopt_l's position in the tile and k within the step: consecutive slots at consecutive addresses."""
    if panel.along_k:
        per_row, scale = ("(CUOPT_BK / 4)", " * 4") if width == 4 else ("CUOPT_BK", "")
        return [f"const int {panel.pos} = cuopt_l / {per_row};", f"const int cuopt_k = cuopt_l % {per_row}{scale};"]
    per_k, scale = (f"({panel.extent} / 4)", " * 4") if width == 4 else (panel.extent, "")
    return [f"const int cuopt_k = cuopt_l / {per_k};", f"const int {panel.pos} = cuopt_l % {per_k}{scale};"]


def _over_slots(panel: _Panel, t: _Tiling, extent: int, body: list[str]) -> list[str]:
    count, width = _slots(panel, t, extent)
    return ["#pragma unroll", f"for (int cuopt_p = 0; cuopt_p < {count}; ++cuopt_p) {{",
            "    const int cuopt_l = cuopt_p * CUOPT_THREADS + cuopt_tid;", *_indent(_split(panel, width)),
            *_indent(body), "}"]


def _fetch(p: Matmul, panel: _Panel, t: _Tiling, extent: int, k0: str, bound: str) -> list[str]:
    """The thread's slots of the panel at step `k0`, from global memory into its registers; zero
    outside the original guard or past the loop bound."""
    _, width = _slots(panel, t, extent)

    def element(e: int) -> tuple[str, str, str]:
        """The guard along the output axis, the check of k, and the value of the slot's element `e`."""
        index, k = panel.index, panel.k
        if e and panel.along_k:
            k = f"({k} + {e})"
        elif e:
            index = f"({index} + {e})"
        return p.guard({panel.axis: index}, {panel.axis}), f"{k} < {bound}", p.operand(panel.access, index, k)

    origin = [f"const int {panel.index} = {panel.origin} + {panel.pos};", f"const int {panel.k} = {k0} + cuopt_k;"]
    reg = f"{panel.fetch}[cuopt_p]"
    elements = [element(e) for e in range(width)]
    if width == 1:
        guard, check, value = elements[0]
        return _over_slots(panel, t, extent, [*origin, f"{reg} = ({guard} && {check}) ? {value} : ({panel.element})0;"])
    # all four inside: each one's guard (one along k) and the last one's k
    inside = " && ".join(dict.fromkeys([guard for guard, _, _ in elements] + [elements[3][1]]))
    body = [
        *origin,
        f"if ({inside}) {{",
        f"    const float* cuopt_s = &{elements[0][2]};",
        "    if ((reinterpret_cast<size_t>(cuopt_s) & 15) == 0) {",
        f"        {reg} = __ldg(reinterpret_cast<const float4*>(cuopt_s));",
        "    } else {",
        f"        {reg} = make_float4(cuopt_s[0], cuopt_s[1], cuopt_s[2], cuopt_s[3]);",
        "    }",
        "} else {",
        *(f"    {reg}.{c} = ({guard} && {check}) ? {value} : 0.0f;" for c, (guard, check, value) in zip("xyzw", elements)),
        "}",
    ]
    return _over_slots(panel, t, extent, body)


def _store(panel: _Panel, t: _Tiling, extent: int, buf: str) -> list[str]:
    """The thread's registers into the panel's shared buffer `buf`: transposed when the slots run along k."""
    _, width = _slots(panel, t, extent)
    reg = f"{panel.fetch}[cuopt_p]"
    at = f"{panel.shared}{buf}"
    if width == 1:
        body = [f"{at}[cuopt_k][{panel.pos}] = {reg};"]
    elif panel.along_k:
        body = [f"{at}[cuopt_k + {e}][{panel.pos}] = {reg}.{c};" for e, c in enumerate("xyzw")]
    else:
        body = [f"*reinterpret_cast<float4*>(&{at}[cuopt_k][{panel.pos}]) = {reg};"]
    return _over_slots(panel, t, extent, body)


def _offset(panel: _Panel, count: int, v: str) -> str:
    """Where the thread's value `v` along the output axis lies in the tile."""
    if panel.strided(count):
        return f"({v} / 4) * ({panel.extent} / {panel.micro} * 4) + {panel.thread} * 4 + {v} % 4"
    return f"{panel.thread} * {panel.micro} + {v}"


def _fragment(panel: _Panel, name: str, count: int, buf: str) -> list[str]:
    """The thread's `count` values of row cuopt_kk of the panel, into registers (float4 loads for float)."""
    at = f"{panel.shared}{buf}[cuopt_kk]"
    if not panel.strided(count):
        return [f"{panel.element} {name}[{panel.micro}];", "#pragma unroll",
                f"for (int cuopt_v = 0; cuopt_v < {panel.micro}; ++cuopt_v) {{",
                f"    {name}[cuopt_v] = {at}[{_offset(panel, count, 'cuopt_v')}];", "}"]
    return [
        f"float {name}[{panel.micro}];",
        "#pragma unroll",
        f"for (int cuopt_v = 0; cuopt_v < {panel.micro}; cuopt_v += 4) {{",
        f"    const float4 cuopt_q = *reinterpret_cast<const float4*>(&{at}[{_offset(panel, count, 'cuopt_v')}]);",
        *(f"    {name}[cuopt_v + {i}] = cuopt_q.{c};" for i, c in enumerate("xyzw")),
        "}",
    ]


def _position(t: _Tiling, a: _Panel, b: _Panel) -> list[str]:
    """The global row and column of the micro-tile's output (cuopt_i, cuopt_j)."""
    return [f"const int cuopt_row = cuopt_row0 + {_offset(a, t.rm, 'cuopt_i')};",
            f"const int cuopt_col = cuopt_col0 + {_offset(b, t.rn, 'cuopt_j')};"]


def _epilogue(p: Matmul, t: _Tiling, a: _Panel, b: _Panel) -> list[str]:
    """The statements after the loop, once per output of the micro-tile, under the original guard."""
    body = [
        *_position(t, a, b),
        f"if ({p.guard(OUT_NAMES)}) {{",
        *_indent(p.epilogue_lines(OUT_NAMES, "cuopt_acc[cuopt_i][cuopt_j]")),
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


def _launch_bounds(ctx: Context, t: _Tiling) -> tuple[Edit, ...]:
    """`__launch_bounds__(threads)` when the kernel has none, so the compiler budgets registers for
    the block (the engine keeps an existing one in step with the block). Two stages hold the next
    panels in registers as well: they also ask for two blocks per SM where 128 registers a thread
    allow it, which keeps two blocks of 256 threads on an SM instead of one."""
    if any(c.type == "launch_bounds" for c in ctx.kernel.node.children):
        return ()
    blocks = 2 if t.stages == 2 and 2 * t.threads * 128 <= REGISTERS else 1
    decl = ctx.kernel.node.child_by_field_name("declarator")
    bounds = f"{t.threads}, {blocks}" if blocks > 1 else f"{t.threads}"
    return (Edit.insert(decl.start_byte, f"__launch_bounds__({bounds}) "),)


TRANSFORM = RegisterTile()
