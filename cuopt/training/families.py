"""The kernel families of the training corpus: naive CUDA kernels (one thread per output, global
memory only) written the way a competent engineer writes them, each with its spec. A family is a
function of a seeded `random.Random` and a `Kernel` under construction; it returns the `.cu`
source and the `.cuopt.toml` spec."""
from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

MB = 1 << 20
DTYPES = {"float": "float32", "double": "float64", "int": "int32", "unsigned int": "uint32",
          "unsigned char": "uint8"}
SIZE = {"float": 4, "double": 8, "int": 4, "unsigned int": 4, "unsigned char": 1}
NICE = sorted(m << p for m in (1, 3, 5, 125) for p in range(31) if m << p < 1 << 31)  # round sizes
_NEGATE = {"<": ">=", ">=": "<", ">": "<=", "<=": ">"}


@dataclass
class Kernel:
    """A kernel under construction: its parameters, C declaration and spec value side by side."""

    name: str
    restrict: bool
    params: list[tuple[str, str, object]] = field(default_factory=list)

    def buf(self, role: str, t: str, name: str, count: str, init: str = "") -> str:
        star = "* __restrict__" if self.restrict else "*"
        decl = f"{'const ' if role == 'in' else ''}{t}{star} {name}"
        self.params.append((decl, name, f"{role} {DTYPES[t]}[{count}]" + (f" {init}" if init else "")))
        return name

    def scalar(self, t: str, name: str, value: object) -> str:
        self.params.append((f"{t} {name}", name, value))
        return name

    def render(self, comment: str, body: list[str], *, block: list[int], grid: list[str],
               sizes: dict[str, int], tolerance: tuple[float, float] | None = None,
               flops: str | None = None, fast_math: bool = False) -> tuple[str, str]:
        """The source and the spec."""
        head = f"__global__ void {self.name}("
        sig, line = [], head
        for i, (decl, _, _) in enumerate(self.params):
            piece = decl + (", " if i + 1 < len(self.params) else ")")
            if len(line) + len(piece.rstrip()) > 100 and line != head:
                sig.append(line.rstrip())
                line = " " * len(head)
            line += piece
        source = "\n".join([f"// {comment}", *sig, line, "{", *("    " + ln for ln in body), "}", ""])
        spec = [f"[{self.name}]", f"block = {json.dumps(block)}", f"grid = {json.dumps(grid)}",
                f"sizes = {_inline(sizes)}"]
        if tolerance:
            spec.append(f"tolerance = {_inline({'rtol': tolerance[0], 'atol': tolerance[1]})}")
        if flops:
            spec.append(f"flops = {json.dumps(flops)}")
        if fast_math:
            spec.append("fast_math = true")
        spec += ["", f"[{self.name}.args]", *(f"{n} = {_toml(v)}" for _, n, v in self.params), ""]
        return source, "\n".join(spec)


def _toml(v: object) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(v)


def _inline(table: dict[str, object]) -> str:
    return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in table.items()) + " }"


# ---- helpers -----------------------------------------------------------------------------------

def lit(t: str, x: str) -> str:
    """A floating literal of type t: lit("float", "0.5") is 0.5f."""
    return x + "f" if t == "float" else x


def fn(t: str, name: str) -> str:
    """A math function for t: fn("float", "exp") is expf."""
    return name + "f" if t == "float" else name


def shape(rng: random.Random, dims: list[tuple[int, int]], lo: int, hi: int, item: int = 1) -> tuple[int, ...]:
    """Round sizes, each within its range, whose product times `item` is within [lo, hi]."""
    options = [c for c in itertools.product(*([v for v in NICE if a <= v <= b] for a, b in dims))
               if lo <= math.prod(c) * item <= hi]
    return rng.choice(options)


def count(rng: random.Random, item: int, lo: int = 128 * MB, hi: int = 512 * MB, most: int = 1 << 30) -> int:
    """An element count whose data (`item` bytes per element) is between lo and hi bytes."""
    return shape(rng, [(1, most)], lo, hi, item)[0]


def tol(t: str, length: int = 1, scale: float = 1.0) -> tuple[float, float]:
    """rtol and atol for a result accumulated over `length` terms of magnitude about `scale`."""
    rtol, atol = (1e-4, 1e-5) if t == "float" else (1e-9, 1e-12)
    x = atol * scale * math.sqrt(length)
    e = math.floor(math.log10(x))
    return rtol, float(f"{math.ceil(x / 10 ** e - 1e-9)}e{e}")


def guard(conds: list[str], body: list[str], early: bool) -> list[str]:
    """`if (in range) { body }`, or an early return when out of range."""
    if early:
        negated = [f"{lhs} {_NEGATE[op]} {rhs}" for lhs, op, rhs in (c.split(" ", 2) for c in conds)]
        return [f"if ({' || '.join(negated)}) return;", *body]
    return [f"if ({' && '.join(conds)}) {{", *("    " + ln for ln in body), "}"]


def loop(head: str, body: list[str]) -> list[str]:
    return [f"for ({head}) {{", *("    " + ln for ln in body), "}"]


def tid(axis: str = "x") -> str:
    return f"blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}"


def _ops(e: str) -> set[str]:
    """The binary operators of e outside parentheses."""
    depth, out = 0, set()
    for i, ch in enumerate(e):
        depth += (ch in "([") - (ch in ")]")
        if depth == 0 and ch in "+-*/?" and e[i - 1:i] == " " and e[i + 1:i + 2] == " ":
            out.add(ch)
    return out


def paren(e: str, ops: str = "+-?") -> str:
    return f"({e})" if _ops(e) & set(ops) else e


# ---- elementwise -------------------------------------------------------------------------------

def _float_term(rng: random.Random, t: str, v: str, bare: bool) -> str:
    f, one = (lambda name: fn(t, name)), lit(t, "1.0")
    minus = f"-{v}" if v.replace("[", "").replace("]", "").isidentifier() else f"-({v})"
    forms = [f"{f('exp')}({v})", f"{f('tanh')}({v})", f"{f('sqrt')}({f('fabs')}({v}))", f"{v} * {v}",
             f"{f('log')}({one} + {f('fabs')}({v}))", f"{one} / ({one} + {f('exp')}({minus}))",
             f"{f('sin')}({v})", f"{lit(t, rng.choice(('0.5', '1.5', '2.0', '3.0')))} * {v}", f"{f('fabs')}({v})"]
    term = rng.choice(forms + [v, v] * bare)
    if rng.random() < 0.2:
        term = f"{f(rng.choice(('tanh', 'sin')))}({term})"
    return term


def _float_binary(rng: random.Random, t: str, e: str, x: str) -> str:
    f, one = (lambda name: fn(t, name)), lit(t, "1.0")
    return rng.choice((f"{e} + {x}", f"{e} - {paren(x)}", f"{paren(e)} * {paren(x, '+-/?')}",
                       f"{f('fmax')}({e}, {x})", f"{f('fmin')}({e}, {x})",
                       f"{paren(e, '+-/?')} / ({one} + {f('fabs')}({x}))",
                       f"{lit(t, rng.choice(('0.5', '2.0', '0.25')))} * {paren(e)} + {x}"))


def _int_expr(rng: random.Random, leaves: list[str]) -> str:
    """An int expression using every leaf; values stay far from overflow (inputs are within 100)."""
    terms = []
    for v in leaves:
        c = rng.randint(2, 9)
        terms.append(rng.choice([(v, 100), (f"abs({v})", 100), (f"{v} * {v}", 10**4), (f"{c} * {v}", 100 * c),
                                 (f"{v} % {c}", c), (f"max({v}, 0)", 100)] + [(v, 100)] * (len(leaves) > 1)))
    e, bound = terms[0]
    for x, b in terms[1:]:
        ops = [(f"{e} + {x}", bound + b), (f"{e} - {paren(x)}", bound + b), (f"max({e}, {x})", max(bound, b)),
               (f"min({e}, {x})", max(bound, b)), (f"{paren(e)} * {paren(x)}", bound * b)]
        e, bound = rng.choice([o for o in ops if o[1] < 1 << 27])
    return e


def elementwise(rng: random.Random, k: Kernel) -> tuple[str, str]:
    """out = f(inputs) element by element: 1-3 inputs, float/double/int, math functions, branches."""
    t = rng.choice(("float", "float", "float", "double", "int"))
    arity = rng.randint(1, 3)
    names = rng.choice((("x", "y", "z"), ("a", "b", "c"), ("in0", "in1", "in2")))[:arity]
    inplace = arity > 1 and rng.random() < 0.25
    out = names[-1] if inplace else rng.choice(("out", "res", "dst"))
    i = rng.choice(("i", "idx", "tid"))
    n = count(rng, SIZE[t] * (arity + (not inplace)))
    n_first = rng.random() < 0.2
    if n_first:
        k.scalar("int", "n", "n")
    for name in names[:-1] if inplace else names:
        k.buf("in", t, name, "n")
    k.buf("inout" if inplace else "out", t, out, "n")
    if not n_first:
        k.scalar("int", "n", "n")
    scale = None
    if rng.random() < 0.35:
        scale = k.scalar(t, "alpha", rng.choice((0.5, 1.5, 2.0, 0.1, 3.0))) if t != "int" \
            else k.scalar("int", "scale", rng.randint(2, 9))
    load = rng.random() < 0.5
    leaves = list(("u", "v", "w")[:arity]) if load else [f"{b}[{i}]" for b in names]
    body = [f"{t} {v} = {b}[{i}];" for v, b in zip(leaves, names, strict=True)] if load else []

    def expr() -> str:
        if t == "int":
            e = _int_expr(rng, leaves)
            return f"{scale} * {paren(e)}" if scale else e
        terms = [_float_term(rng, t, v, arity > 1) for v in leaves]
        if arity == 1 and rng.random() < 0.5:
            terms.append(_float_term(rng, t, leaves[0], False))
        e = terms[0]
        for x in terms[1:]:
            e = _float_binary(rng, t, e, x)
        return rng.choice((f"{scale} * {paren(e)}", f"{e} + {scale}")) if scale else e

    zero = "0" if t == "int" else lit(t, "0.0")
    e = expr()
    form = rng.choice(("plain", "plain", "relu", "branch", "clamp"))
    if form == "relu":
        slope = "0" if t == "int" else f"{lit(t, '0.01')} * r"
        stmts = [f"{t} r = {e};", f"{out}[{i}] = r > {zero} ? r : {slope};"]
    elif form == "branch":
        cond = f"{leaves[0]} > {leaves[1] if arity > 1 else zero}"
        stmts = [f"if ({cond}) {{", f"    {out}[{i}] = {e};", "} else {", f"    {out}[{i}] = {expr()};", "}"]
    elif form == "clamp":
        lo, hi = ("-1000", "1000") if t == "int" else (lit(t, "-1.0"), lit(t, "1.0"))
        mn, mx = ("min", "max") if t == "int" else (fn(t, "fmin"), fn(t, "fmax"))
        stmts = [f"{out}[{i}] = {mn}({mx}({e}, {lo}), {hi});"]
    else:
        stmts = [f"{out}[{i}] = {e};"]
    early = rng.random() < 0.4
    body = [f"int {i} = {tid()};", *guard([f"{i} < n"], body + stmts, early)]
    text = " ".join(stmts)
    ops = len(re.findall(r" [-+*/] |\w\(", text))
    fast = t == "float" and any(s in text for s in ("expf", "logf", "sinf", " / ")) and rng.random() < 0.3
    return k.render(f"{out} = f({', '.join(names)}) elementwise ({t}, {form})", body,
                    block=[rng.choice((128, 256, 512))], grid=["cdiv(n, block.x)"], sizes={"n": n},
                    tolerance=(1e-3, 1e-4) if fast else None,
                    flops=f"{ops}*n" if t != "int" and ops > 0 else None, fast_math=fast)


# ---- row and column reductions -----------------------------------------------------------------

_ONE_PASS = {  # op -> (what, initial value, update of acc by {v} and {w}, result from acc, flops per element)
    "sum": ("sum", "0", "acc += {v};", "acc", 1),
    "mean": ("mean", "0", "acc += {v};", "acc / cols", 1),
    "sumsq": ("sum of squares", "0", "acc += {v} * {v};", "acc", 2),
    "l2norm": ("L2 norm", "0", "acc += {v} * {v};", "{sqrt}(acc)", 2),
    "max": ("maximum", "-INFINITY", "acc = {fmax}(acc, {v});", "acc", 1),
    "absmax": ("largest magnitude", "0", "acc = {fmax}(acc, {fabs}({v}));", "acc", 1),
    "dot": ("dot product with the same row of b", "0", "acc += {v} * {w};", "acc", 2),
    "matvec": ("dot product with x (y = A x)", "0", "acc += {v} * {w};", "acc", 2),
}
_PASSES = {"softmax": "softmax", "logsoftmax": "log-softmax", "normalize": "L2 normalisation",
           "layernorm": "layer norm", "rmsnorm": "RMS norm"}
_SUMS = ("sum", "dot", "matvec", "colsum")  # results that cancel: atol grows with the length


def _one_pass(rng: random.Random, k: Kernel, t: str, op: str, row: str) -> list[str]:
    _, init, update, result, _ = _ONE_PASS[op]
    x = k.buf("in", t, "A" if op == "matvec" else "x", "rows*cols")
    w = k.buf("in", t, "x" if op == "matvec" else "b", "cols" if op == "matvec" else "rows*cols") \
        if op in ("dot", "matvec") else ""
    bias = k.buf("in", t, "bias", "rows") if op == "matvec" and rng.random() < 0.5 else ""
    y = k.buf("out", t, "y" if op == "matvec" else "out", "rows")
    f = {name: fn(t, name) for name in ("sqrt", "fmax", "fabs")}
    elem = f"{x}[{row} * cols + j]"
    load = rng.random() < 0.5
    step = [f"{t} v = {elem};"] * load + [update.format(v="v" if load else elem, **f,
                                                        w=f"{w}[j]" if op == "matvec" else f"{w}[{row} * cols + j]")]
    value = result.format(**f) + (f" + {bias}[{row}]" if bias else "")
    init = init if init.endswith("INFINITY") else lit(t, "0.0")
    return [f"{t} acc = {init};", *loop("int j = 0; j < cols; ++j", step), f"{y}[{row}] = {value};"]


def _passes(rng: random.Random, k: Kernel, t: str, op: str, row: str) -> list[str]:
    f = {name: fn(t, name) for name in ("sqrt", "fmax", "exp", "log")}
    x = k.buf("in", t, "x", "rows*cols", "normal(0, 2)" if "softmax" in op else "")
    affine = op == "rmsnorm" or (op == "layernorm" and rng.random() < 0.6)
    gamma = k.buf("in", t, "gamma", "cols", "uniform(0.5, 1.5)") if affine else ""
    beta = k.buf("in", t, "beta", "cols") if affine and op == "layernorm" else ""
    y = k.buf("out", t, "y", "rows*cols")
    at = lambda b: f"{b}[{row} * cols + j]"  # noqa: E731
    each = lambda *body: loop("int j = 0; j < cols; ++j", list(body))  # noqa: E731
    zero, one = lit(t, "0.0"), lit(t, "1.0")
    if op in ("softmax", "logsoftmax"):
        lines = [f"{t} m = -INFINITY;", *each(f"m = {f['fmax']}(m, {at(x)});"),
                 f"{t} sum = {zero};", *each(f"sum += {f['exp']}({at(x)} - m);")]
        if op == "softmax":
            return lines + each(f"{at(y)} = {f['exp']}({at(x)} - m) / sum;")
        return lines + [f"{t} lse = m + {f['log']}(sum);", *each(f"{at(y)} = {at(x)} - lse;")]
    if op == "layernorm":
        scale = f" * {gamma}[j] + {beta}[j]" if affine else ""
        return [f"{t} mean = {zero};", *each(f"mean += {at(x)};"), "mean /= cols;",
                f"{t} var = {zero};", *each(f"{t} d = {at(x)} - mean;", "var += d * d;"), "var /= cols;",
                f"{t} inv = {one} / {f['sqrt']}(var + eps);", *each(f"{at(y)} = ({at(x)} - mean) * inv{scale};")]
    lines = [f"{t} ss = {zero};", *each(f"ss += {at(x)} * {at(x)};")]
    if op == "rmsnorm":
        return lines + [f"{t} inv = {one} / {f['sqrt']}(ss / cols + eps);",
                        *each(f"{at(y)} = {at(x)} * inv * {gamma}[j];")]
    return lines + [f"{t} inv = {one} / ({f['sqrt']}(ss) + eps);", *each(f"{at(y)} = {at(x)} * inv;")]


def reduction(rng: random.Random, k: Kernel) -> tuple[str, str]:
    """A thread per row (sums, maxima, norms, matrix-vector, softmax and normalisations) or per column."""
    t = rng.choice(("float", "float", "float", "double"))
    op = rng.choice((*_ONE_PASS, *_PASSES, "colsum", "colmean", "colmax"))
    block, early = [rng.choice((128, 256))], rng.random() < 0.4
    column = op.startswith("col")
    if column:
        rows, cols = shape(rng, [(64, 8192), (4096, 262144)], 64 * MB, 512 * MB, SIZE[t])
        x, y = k.buf("in", t, "x", "rows*cols"), k.buf("out", t, "out", "cols")
        elem = f"{x}[r * cols + col]"
        update = f"acc = {fn(t, 'fmax')}(acc, {elem});" if op == "colmax" else f"acc += {elem};"
        inner = [f"{t} acc = {'-INFINITY' if op == 'colmax' else lit(t, '0.0')};",
                 *loop("int r = 0; r < rows; ++r", [update]), f"{y}[col] = acc{' / rows' if op == 'colmean' else ''};"]
        index, what = "col", f"{op[3:]} of each column"
    else:
        rows, cols = shape(rng, [(2048, 131072), (32, 8192)], 32 * MB, 256 * MB, SIZE[t] * (1 + (op == "dot")))
        index = rng.choice(("row", "r"))
        inner = (_one_pass if op in _ONE_PASS else _passes)(rng, k, t, op, index)
        what = f"{_ONE_PASS[op][0] if op in _ONE_PASS else _PASSES[op]} of each row"
    k.scalar("int", "rows", "rows"), k.scalar("int", "cols", "cols")
    if op in ("normalize", "layernorm", "rmsnorm"):
        k.scalar(t, "eps", 1e-5)
    if op in _SUMS:
        tolerance = tol(t, rows if column else cols)
    else:
        tolerance = {"softmax": tol(t, 1, 0.1), "layernorm": tol(t, 1, 10), "rmsnorm": tol(t, 1, 10)}.get(op)
    flops = f"{_ONE_PASS[op][4] if op in _ONE_PASS else 1}*rows*cols" if op not in _PASSES else None
    extent, unit = ("cols", "column") if column else ("rows", "row")
    body = [f"int {index} = {tid()};", *guard([f"{index} < {extent}"], inner, early)]
    return k.render(f"{what} of a rows x cols matrix ({t}), one thread per {unit}", body, block=block,
                    grid=[f"cdiv({extent}, block.x)"], sizes={"rows": rows, "cols": cols}, tolerance=tolerance,
                    flops=flops)


# ---- stencils ----------------------------------------------------------------------------------

_COEFFS = ("0.5", "0.25", "0.2", "0.125", "0.1", "0.05")


def _stencil1d(rng: random.Random, k: Kernel, t: str, r: int, early: bool) -> tuple[str, str]:
    form = rng.choice(("weights", "literal", "valid", "clamp"))
    n = count(rng, 2 * SIZE[t])
    src = k.buf("in", t, "in", "n")
    w = k.buf("in", t, "w", str(2 * r + 1)) if form != "literal" else ""
    out = k.buf("out", t, "out", f"n - {2 * r}" if form == "valid" else "n")
    k.scalar("int", "n", "n")
    acc = f"{t} acc = {lit(t, '0.0')};"
    if form == "literal":
        c = [lit(t, rng.choice(_COEFFS)) for _ in range(r + 1)]
        terms = [f"{c[0]} * {src}[i]"] + [f"{c[d]} * ({src}[i - {d}] + {src}[i + {d}])" for d in range(1, r + 1)]
        inner, conds = [f"{out}[i] = {terms[0]}", *(f"    + {x}" for x in terms[1:])], [f"i >= {r}", f"i < n - {r}"]
        inner[-1] += ";"
    elif form == "valid":
        inner = [acc, *loop(f"int j = 0; j < {2 * r + 1}; ++j", [f"acc += {w}[j] * {src}[i + j];"]),
                 f"{out}[i] = acc;"]
        conds = [f"i < n - {2 * r}"]
    elif form == "clamp":
        inner = [acc, *loop(f"int j = -{r}; j <= {r}; ++j", ["int p = min(max(i + j, 0), n - 1);",
                                                             f"acc += {w}[j + {r}] * {src}[p];"]),
                 f"{out}[i] = acc;"]
        conds = ["i < n"]
    else:
        inner = [acc, *loop(f"int j = -{r}; j <= {r}; ++j", [f"acc += {w}[j + {r}] * {src}[i + j];"]),
                 f"{out}[i] = acc;"]
        conds = [f"i >= {r}", f"i < n - {r}"]
    body = [f"int i = {tid()};", *guard(conds, inner, early)]
    grid = f"cdiv(n - {2 * r}, block.x)" if form == "valid" else "cdiv(n, block.x)"
    what = {"weights": "weights from w", "literal": "fixed weights", "valid": "weights from w, valid part only",
            "clamp": "weights from w, indices clamped at the ends"}[form]
    return k.render(f"1D {2 * r + 1}-point stencil, {what}",
                    body, block=[rng.choice((128, 256, 512))], grid=[grid], sizes={"n": n},
                    flops=f"{2 * (2 * r + 1)}*n")


def _stencil2d(rng: random.Random, k: Kernel, t: str, r: int, early: bool) -> tuple[str, str]:
    star, weighted = rng.random() < 0.5, rng.random() < 0.5
    nx, ny = shape(rng, [(1024, 16384), (1024, 16384)], 128 * MB, 512 * MB, 2 * SIZE[t])
    d = 2 * r + 1
    src = k.buf("in", t, "in", "nx*ny")
    c = k.buf("in", t, "c", str(r + 1 if star else d * d)) if weighted else ""
    out = k.buf("out", t, "out", "nx*ny")
    k.scalar("int", "nx", "nx"), k.scalar("int", "ny", "ny")
    at = lambda dy, dx: f"{src}[{f'(y {dy})' if dy else 'y'} * nx + x{f' {dx}' if dx else ''}]"  # noqa: E731
    ring = lambda j: f"{at('', f'- {j}')} + {at('', f'+ {j}')} + {at(f'- {j}', '')} + {at(f'+ {j}', '')}"  # noqa: E731
    dst = f"{out}[y * nx + x]"
    if star and weighted:
        inner = [f"{t} acc = {c}[0] * {at('', '')};",
                 *loop(f"int j = 1; j <= {r}; ++j", [f"acc += {c}[j] * ({ring('j')});"]), f"{dst} = acc;"]
    elif star:  # one expression, the way the neighbours are usually spelled out
        coeff = [lit(t, rng.choice(_COEFFS)) for _ in range(r + 1)]
        inner = [f"{dst} = {coeff[0]} * {at('', '')}", *(f"    + {coeff[j]} * ({ring(j)})" for j in range(1, r + 1))]
        inner[-1] += ";"
    elif r == 1 and not weighted:
        rows = [" + ".join(at(dy, dx) for dx in ("- 1", "", "+ 1")) for dy in ("- 1", "", "+ 1")]
        pad = " " * (len(dst) + 4)
        inner = [f"{dst} = ({rows[0]}", f"{pad}+ {rows[1]}", f"{pad}+ {rows[2]}) / {lit(t, '9.0')};"]
    else:
        term = f"{c}[(dy + {r}) * {d} + dx + {r}] * " if weighted else ""
        mean = "" if weighted else " / " + lit(t, f"{d * d}.0")
        inner = [f"{t} acc = {lit(t, '0.0')};",
                 *loop(f"int dy = -{r}; dy <= {r}; ++dy", loop(f"int dx = -{r}; dx <= {r}; ++dx",
                                                              [f"acc += {term}{src}[(y + dy) * nx + x + dx];"])),
                 f"{dst} = acc{mean};"]
    conds = [f"x >= {r}", f"x < nx - {r}", f"y >= {r}", f"y < ny - {r}"]
    body = [f"int x = {tid('x')};", f"int y = {tid('y')};", *guard(conds, inner, early)]
    what = f"{'star' if star else 'box'} stencil of radius {r}, {'weights from c' if weighted else 'fixed weights'}"
    return k.render(f"2D {what} on an nx x ny grid; the border is left untouched", body,
                    block=rng.choice(([16, 16], [32, 8], [32, 4])), grid=["cdiv(nx, block.x)", "cdiv(ny, block.y)"],
                    sizes={"nx": nx, "ny": ny}, flops=f"{2 * (4 * r + 1 if star else d * d)}*nx*ny")


def stencil(rng: random.Random, k: Kernel) -> tuple[str, str]:
    """1D and 2D stencils of radius 1-3 (box and star shapes), weights in a buffer or literal."""
    t = rng.choice(("float", "float", "float", "double"))
    make = rng.choice((_stencil1d, _stencil2d))
    return make(rng, k, t, rng.randint(1, 3), rng.random() < 0.3)


# ---- matrix products ---------------------------------------------------------------------------

def matmul(rng: random.Random, k: Kernel) -> tuple[str, str]:
    """C = op(A) op(B) with A or B transposed or not, an epilogue, optionally batched over z."""
    t = rng.choice(("float", "float", "float", "double"))
    ta, tb, batched = rng.random() < 0.3, rng.random() < 0.3, rng.random() < 0.25
    epilogue = rng.choice(("plain", "alpha", "alphabeta", "bias", "biasrelu"))
    most = (1 << 31) if t == "float" else (1 << 30)
    if batched:
        batch, m, n, kk = shape(rng, [(2, 32), (256, 1024), (256, 1024), (256, 1024)], 1 << 27, most)
        sizes = {"batch": batch, "M": m, "N": n, "K": kk}
    else:
        m, n, kk = shape(rng, [(512, 2048)] * 3, 1 << 27, most)
        sizes = {"M": m, "N": n, "K": kk}
    pre = "batch*" if batched else ""
    a, b = k.buf("in", t, "A", f"{pre}M*K"), k.buf("in", t, "B", f"{pre}K*N")
    bias = k.buf("in", t, "bias", "N") if epilogue.startswith("bias") else ""
    c = k.buf("inout" if epilogue == "alphabeta" else "out", t, "C", f"{pre}M*N")
    for s in sizes:
        k.scalar("int", s, s)
    alpha = k.scalar(t, "alpha", rng.choice((0.5, 1.5, 2.0))) if epilogue.startswith("alpha") else ""
    beta = k.scalar(t, "beta", rng.choice((0.5, 1.0, -1.0))) if epilogue == "alphabeta" else ""
    off = lambda size: f"z * {size} + " if batched else ""  # noqa: E731
    a_at = f"{a}[{off('M * K')}{'k * M + row' if ta else 'row * K + k'}]"
    b_at = f"{b}[{off('K * N')}{'col * K + k' if tb else 'k * N + col'}]"
    c_at = f"{c}[{off('M * N')}row * N + col]"
    value = {"plain": "acc", "alpha": f"{alpha} * acc", "alphabeta": f"{alpha} * acc + {beta} * {c_at}",
             "bias": f"acc + {bias}[col]", "biasrelu": f"{fn(t, 'fmax')}(acc + {bias}[col], {lit(t, '0.0')})"}[epilogue]
    inner = [f"{t} acc = {lit(t, '0.0')};", *loop("int k = 0; k < K; ++k", [f"acc += {a_at} * {b_at};"]),
             f"{c_at} = {value};"]
    body = [f"int row = {tid('y')};", f"int col = {tid('x')};", *(["int z = blockIdx.z;"] * batched),
            *guard(["row < M", "col < N"], inner, rng.random() < 0.3)]
    what = f"C = {'alpha * ' if alpha else ''}A{'^T' if ta else ''} * B{'^T' if tb else ''}" + \
        {"alphabeta": " + beta * C", "bias": " + bias", "biasrelu": " + bias, then ReLU"}.get(epilogue, "")
    layout = "batched " * batched + "row-major" + ", A stored K x M" * ta + ", B stored N x K" * tb
    grid = ["cdiv(N, block.x)", "cdiv(M, block.y)"] + ["batch"] * batched
    return k.render(f"{what} ({layout}, {t}), one thread per output", body,
                    block=rng.choice(([16, 16], [32, 8], [16, 16], [8, 32])), grid=grid, sizes=sizes,
                    tolerance=tol(t, kk, 2.0 if alpha else 1.0), flops=f"2*{pre}M*N*K")


# ---- transposes and permutations ---------------------------------------------------------------

def _transpose2d(rng: random.Random, k: Kernel, t: str) -> tuple[str, str]:
    kind = rng.choice(("copy", "scale", "add"))
    src, dst = rng.choice((("in", "out"), ("src", "dst"), ("a", "at")))
    rows, cols = shape(rng, [(256, 32768), (256, 32768)], 64 * MB, 512 * MB, SIZE[t] * (3 if kind == "add" else 2))
    k.buf("in", t, src, "rows*cols")
    other = k.buf("in", t, "b", "rows*cols") if kind == "add" else ""
    k.buf("out", t, dst, "rows*cols")
    k.scalar("int", "rows", "rows"), k.scalar("int", "cols", "cols")
    scale = k.scalar(t, "alpha", rng.choice((0.5, 2.0, -1.0)) if t != "int" else rng.randint(2, 9)) \
        if kind == "scale" else ""
    value = f"{src}[row * cols + col]"
    value = f"{scale} * {value}" if scale else f"{value} + {other}[col * rows + row]" if other else value
    by_output = rng.random() < 0.4  # threads follow the output: coalesced writes, strided reads
    ax_row, ax_col = ("x", "y") if by_output else ("y", "x")
    body = [f"int row = {tid(ax_row)};", f"int col = {tid(ax_col)};",
            *guard(["row < rows", "col < cols"], [f"{dst}[col * rows + row] = {value};"], rng.random() < 0.3)]
    extent = {ax_row: "rows", ax_col: "cols"}
    grid = [f"cdiv({extent['x']}, block.x)", f"cdiv({extent['y']}, block.y)"]
    return k.render(f"{dst} (cols x rows) = transpose of {src} (rows x cols){', scaled' * bool(scale)}"
                    f"{' plus b' * bool(other)}, {t}", body, block=rng.choice(([16, 16], [32, 8], [32, 32])),
                    grid=grid, sizes={"rows": rows, "cols": cols})


def _permute3d(rng: random.Random, k: Kernel, t: str) -> tuple[str, str]:
    perm = rng.choice([p for p in itertools.permutations(range(3)) if p != (0, 1, 2)])
    d0, d1, d2 = shape(rng, [(16, 2048)] * 3, 64 * MB, 512 * MB, 2 * SIZE[t])
    dims = ("d0", "d1", "d2")
    k.buf("in", t, "in", "d0*d1*d2"), k.buf("out", t, "out", "d0*d1*d2")
    for d in dims:
        k.scalar("int", d, d)
    gather = rng.random() < 0.5  # threads follow the output
    coords = ("z", "y", "x")
    if gather:
        o, tdims = coords, [dims[p] for p in perm]
        i = [o[perm.index(axis)] for axis in range(3)]
    else:
        i, tdims = coords, dims
        o = [i[p] for p in perm]
    od = [dims[p] for p in perm]
    stmt = f"out[({o[0]} * {od[1]} + {o[1]}) * {od[2]} + {o[2]}] = in[({i[0]} * d1 + {i[1]}) * d2 + {i[2]}];"
    body = [f"int x = {tid('x')};", f"int y = {tid('y')};", "int z = blockIdx.z;",
            *guard([f"x < {tdims[2]}", f"y < {tdims[1]}"], [stmt], rng.random() < 0.3)]
    return k.render(f"permute a d0 x d1 x d2 tensor ({t}) to axes {perm}, one thread per "
                    f"{'output' if gather else 'input'} element", body, block=rng.choice(([32, 8], [16, 16], [32, 4])),
                    grid=[f"cdiv({tdims[2]}, block.x)", f"cdiv({tdims[1]}, block.y)", tdims[0]],
                    sizes={"d0": d0, "d1": d1, "d2": d2})


def transpose(rng: random.Random, k: Kernel) -> tuple[str, str]:
    """2D transposes (plain, scaled, plus a matrix) and 3D permutations, by input or by output."""
    t = rng.choice(("float", "float", "double", "int"))
    return rng.choice((_transpose2d, _transpose2d, _permute3d))(rng, k, t)


# ---- histograms and counters -------------------------------------------------------------------

def histogram(rng: random.Random, k: Kernel) -> tuple[str, str]:
    """Histograms and counters with global atomicAdd: bytes, `% C` and `& (C - 1)` keys, labels,
    binned floats, weighted bins and a thresholded counter."""
    kind = rng.choice(("bytes", "mod", "mask", "labels", "binning", "weighted", "threshold"))
    counter = rng.choice(("unsigned int", "int"))
    bins = rng.choice((16, 32, 64, 128, 256, 512, 1024) if kind in ("mask", "binning") else
                      (16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024))
    if kind == "bytes":
        key, bins = rng.choice((("data[i]", 256), ("data[i] >> 4", 16), ("data[i] >> 2", 64),
                                (f"data[i] % {bins}", bins) if bins < 256 else ("data[i]", 256)))
    wt = ""  # the weights' type, for weighted bins
    one = "1u" if counter == "unsigned int" else "1"
    item = {"bytes": 1, "weighted": 8}.get(kind, 4)
    n = count(rng, item, 2 * MB, 256 * MB, most=max(1 if kind == "threshold" else bins, 16) << 17)  # contention
    if kind == "bytes":
        k.buf("in", "unsigned char", "data", "n", "randint(0, 256)")
    elif kind in ("mod", "mask", "weighted"):
        kt = rng.choice(("int", "unsigned int"))
        k.buf("in", kt, "keys", "n", "randint(0, 1000000)")
        key = f"keys[i] & {bins - 1}" if kind == "mask" else f"keys[i] % {bins}"
    elif kind == "labels":
        k.buf("in", "int", "labels", "n", f"randint(0, {bins})")
        key = "labels[i]"
    else:
        k.buf("in", "float", "x", "n", "normal(0, 1)")
    if kind == "weighted":
        wt = rng.choice(("float", "int"))
        k.buf("in", wt, "w", "n", "uniform(0, 1)" if wt == "float" else "randint(0, 100)")
        k.buf("inout", wt, "sums", str(bins), "zeros")
        stmts, what = [f"atomicAdd(&sums[{key}], w[i]);"], f"sum of {wt} weights per key in {bins} bins"
    elif kind == "threshold":
        k.buf("inout", counter, "count", "1", "zeros")
        thr = k.scalar("float", "threshold", rng.choice((0.0, 0.5, 1.0, 2.0)))
        stmts = [f"if (x[i] > {thr}) {{", f"    atomicAdd(count, {one});", "}"]
        what = "count of values above a threshold"
    else:
        k.buf("inout", counter, "bins", str(bins), "zeros")
        if kind == "binning":
            stmts = [f"int b = (int)((x[i] + 4.0f) * {bins / 8!r}f);",
                     f"b = b < 0 ? 0 : (b >= {bins} ? {bins - 1} : b);", f"atomicAdd(&bins[b], {one});"]
        else:
            stmts = [f"atomicAdd(&bins[{key}], {one});"]
        what = f"{bins}-bin histogram of " + {"binning": "values in [-4, 4)", "labels": "labels", "bytes": "bytes",
                                               "mod": f"keys % {bins}", "mask": f"keys & {bins - 1}"}[kind]
    k.scalar("int", "n", "n")
    body = [f"int i = {tid()};", *guard(["i < n"], stmts, rng.random() < 0.4)]
    return k.render(f"{what}, one global atomic per element", body, block=[rng.choice((128, 256, 512))],
                    grid=["cdiv(n, block.x)"], sizes={"n": n}, tolerance=(1e-3, 1e-3) if wt == "float" else None)


FAMILIES: dict[str, Callable[[random.Random, Kernel], tuple[str, str]]] = {
    "elementwise": elementwise, "reduction": reduction, "stencil": stencil,
    "matmul": matmul, "transpose": transpose, "histogram": histogram,
}
