"""The same kernel in the other spellings of ordinary CUDA code: parenthesized guards, early
returns, counters declared before their loop, `k++`/`k += 1`, `<=` bounds, `while` loops, index
locals, unsigned indices, macro element types and sizes, accumulation into global memory, the
older benchmark style that combines them, `fmaf` accumulation, an unroll pragma before a loop,
a pointer to the row a loop walks, `__ldg` loads, locals for the built-ins an index sums,
accessor macros (`X_AT(i)` for `x[i]`), indices declared first and assigned after (`int i, j;
i = ...;`), loops that step other than by one as `while` loops, and guards through a bool local
(`bool mask = i < n; if (mask)`). Each spelling maps a canonical source (the way the
samples and the generated families write kernels) to an equivalent one, or to None where it
does not apply."""
from __future__ import annotations

import re
from collections.abc import Callable

_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_GUARD = re.compile(r"^(?P<ind>    )if \((?P<cond>.*)\) \{\n(?P<body>(?:(?:(?P=ind)    .*)?\n)*?)(?P=ind)\}\n",
                    re.M)
_FOR = re.compile(r"for \((?P<type>(?:unsigned )?int) (?P<var>\w+) = (?P<start>[^;]+); (?P=var) (?P<cmp><=?) "
                  r"(?P<bound>[^;]+); (?:\+\+(?P=var)|(?P=var)\+\+|(?P=var) \+= 1)\)")
_ACCUMULATOR = re.compile(r"^(?P<ind> *)(?P<t>float|double) (?P<acc>\w+) = (?P<init>[^;]+);\n"
                          r"(?P<loop>(?P=ind)for \(.*\) \{\n(?:(?P=ind)    .*\n)*?(?P=ind)\}\n)"
                          r"(?P=ind)(?P<out>\w+\[[^\]]+\]) = (?P=acc);\n", re.M)
_STEP_FOR = re.compile(r"^(?P<ind> *)for \((?P<type>(?:unsigned )?int) (?P<var>\w+) = (?P<start>[^;]+); "
                       r"(?P<cond>[^;]+); (?P<step>(?P=var) [^;]+)\) \{$")
_INDEX_DECL = re.compile(r"^(?P<ind>    )(?P<type>(?:unsigned )?int|size_t) (?P<var>\w+) = "
                         r"(?P<value>[^;]*\b(?:blockIdx|threadIdx)\b[^;]*);$", re.M)
_INDEX_STORE = re.compile(r"^(?P<ind> *)(?P<arr>\w+)\[(?P<idx>[^\[\]]+[*+][^\[\]]+)\] = ", re.M)

Spelling = Callable[[str], "str | None"]


def _changed(before: str, after: str) -> str | None:
    return after if after != before else None


def _conjuncts(cond: str) -> list[str] | None:
    """The top-level `&&` operands of a guard without other operators at its top level."""
    if "||" in cond or "?" in cond:
        return None
    return [c.strip() for c in cond.split("&&")]


def paren_guard(source: str) -> str | None:
    """`if (a && b)` as `if ((a) && (b))`."""
    def fix(m: re.Match) -> str:
        parts = _conjuncts(m["cond"])
        if parts is None or len(parts) < 2:
            return m[0]
        return m[0].replace(f"if ({m['cond']})", "if (" + " && ".join(f"({p})" for p in parts) + ")", 1)
    return _changed(source, _GUARD.sub(fix, source, count=1))


def early_return(source: str) -> str | None:
    """`if (i < n) { body }` as `if (i >= n) return; body` (a conjunction as a disjunction)."""
    def fix(m: re.Match) -> str:
        parts = _conjuncts(m["cond"])
        flipped = [_flip(p) for p in parts] if parts else None
        if not flipped or None in flipped:
            return m[0]
        body = "".join(ln[4:] + "\n" if ln else "\n" for ln in m["body"].split("\n")[:-1])
        return f"{m['ind']}if ({' || '.join(flipped)}) return;\n{body}"
    return _changed(source, _GUARD.sub(fix, source, count=1))


def _flip(comparison: str) -> str | None:
    m = re.fullmatch(r"(.+?) (<=|>=|<|>) (.+)", comparison)
    return f"{m[1]} {_FLIP[m[2]]} {m[3]}" if m and not re.search(r"[<>]", m[1] + m[3]) else None


def counter_before(source: str) -> str | None:
    """`for (int k = 0; ...)` as `int k;` at the top of the kernel and `for (k = 0; ...)`."""
    names: dict[str, str] = {}

    def fix(m: re.Match) -> str:
        names.setdefault(m["var"], m["type"])
        return m[0].replace(f"{m['type']} {m['var']} =", f"{m['var']} =", 1)
    out = _FOR.sub(fix, source)
    return _changed(source, _declare_at_top(out, [f"{t} {v};" for v, t in names.items()]))


def post_increment(source: str) -> str | None:
    """`++k` as `k++` in loop headers."""
    return _changed(source, re.sub(r"; \+\+(\w+)\)", r"; \1++)", source))


def plus_assign(source: str) -> str | None:
    """`++k` as `k += 1` in loop headers."""
    return _changed(source, re.sub(r"; \+\+(\w+)\)", r"; \1 += 1)", source))


def inclusive_bound(source: str) -> str | None:
    """`k < K` as `k <= K - 1` in loop headers."""
    def fix(m: re.Match) -> str:
        if m["cmp"] != "<":
            return m[0]
        bound = m["bound"] if re.fullmatch(r"[\w.]+", m["bound"]) else f"({m['bound']})"
        return m[0].replace(f"{m['var']} < {m['bound']};", f"{m['var']} <= {bound} - 1;", 1)
    return _changed(source, _FOR.sub(fix, source))


def while_loop(source: str) -> str | None:
    """`for (int k = s; k < K; ++k) { body }` as `int k = s; while (k < K) { body k++; }` (the
    counter declared once at the top when several loops share its name)."""
    lines = source.split("\n")
    out: list[str] = []
    declared: dict[str, str] = {}
    i = 0
    changed = False
    while i < len(lines):
        line = lines[i]
        m = _FOR.search(line)
        end = _closing(lines, i) if m and line.rstrip().endswith("{") else None
        if m is None or end is None or not _simple_body(lines[i + 1:end], m["var"]):
            out.append(line)
            i += 1
            continue
        ind = line[:len(line) - len(line.lstrip())]
        declared.setdefault(m["var"], m["type"])
        out.append(f"{ind}{m['var']} = {m['start']};")
        out.append(f"{ind}while ({m['var']} {m['cmp']} {m['bound']}) {{")
        out.extend(lines[i + 1:end])
        out.append(f"{ind}    {m['var']}++;")
        out.append(lines[end])
        changed = True
        i = end + 1
    if not changed:
        return None
    return _declare_at_top("\n".join(out), [f"{t} {v};" for v, t in declared.items()])


def _closing(lines: list[str], start: int) -> int | None:
    """The line that closes the block opened at the end of lines[start]."""
    ind = len(lines[start]) - len(lines[start].lstrip())
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == "}" and len(lines[j]) - len(lines[j].lstrip()) == ind:
            return j
    return None


def _simple_body(body: list[str], var: str) -> bool:
    """No `continue` (it would skip the increment) and no assignment of the counter."""
    joined = "\n".join(body)
    return "continue" not in joined and not re.search(rf"\b{var}\s*(\+\+|--|[-+*/]?=[^=])", joined)


def while_step(source: str) -> str | None:
    """`for (T s = a; c; s *= 2) { body }`, a loop that steps other than by one (a tree's `s *= 2`,
    a grid-stride `i += blockDim.x * gridDim.x`), as `T s = a; while (c) { body s *= 2; }` (the
    CUDA by Example style), the first such loop whose counter no later statement names."""
    lines = source.split("\n")
    for i, line in enumerate(lines):
        m = _STEP_FOR.match(line)
        end = _closing(lines, i) if m else None
        if m is None or end is None or _FOR.search(line) or not _simple_body(lines[i + 1:end], m["var"]) \
                or re.search(rf"\b{m['var']}\b", "\n".join(lines[end + 1:])):
            continue
        ind = m["ind"]
        loop = [f"{ind}{m['type']} {m['var']} = {m['start']};", f"{ind}while ({m['cond']}) {{", *lines[i + 1:end],
                f"{ind}    {m['step']};", lines[end]]
        return "\n".join([*lines[:i], *loop, *lines[end + 1:]])
    return None


def index_local(source: str) -> str | None:
    """`C[row * N + col] = ...` as `int idx = row * N + col; C[idx] = ...` (the first such store)."""
    m = _INDEX_STORE.search(source)
    if m is None:
        return None
    decl = f"{m['ind']}int idx = {m['idx']};\n"
    return source[:m.start()] + decl + source[m.start():m.end()].replace(f"[{m['idx']}]", "[idx]") + source[m.end():]


def _top_level(expr: str, sep: str) -> list[str]:
    """`expr` split at `sep` outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(expr):
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and expr.startswith(sep, i):
            parts.append(expr[start:i])
            start = i + len(sep)
    return [*parts, expr[start:]]


def fma_accumulate(source: str) -> str | None:
    """`acc += a * b;` as `acc = fmaf(a, b, acc);` (`fma` in a double kernel), the first such update."""
    fma = "fma" if re.search(r"\bdouble\b", source) else "fmaf"

    def fix(m: re.Match) -> str:
        factors = _top_level(m["rhs"], " * ")
        if len(factors) != 2:
            return m[0]
        return f"{m['ind']}{m['lhs']} = {fma}({factors[0]}, {factors[1]}, {m['lhs']});"
    for m in re.finditer(r"^(?P<ind> *)(?P<lhs>[\w\[\]\s*+]+?) \+= (?P<rhs>[^;]+);$", source, re.M):
        out = fix(m)
        if out != m[0]:
            return source[:m.start()] + out + source[m.end():]
    return None


def unroll_pragma(source: str) -> str | None:
    """`#pragma unroll 4` before the first loop that has none."""
    lines = source.split("\n")
    for i, line in enumerate(lines):
        if line.lstrip().startswith("for (") and not (i and lines[i - 1].lstrip().startswith("#pragma")):
            ind = line[:len(line) - len(line.lstrip())]
            return "\n".join([*lines[:i], f"{ind}#pragma unroll 4", *lines[i:]])
    return None


def row_pointer(source: str) -> str | None:
    """In the first loop that reads `x[e + k]` (k its counter, x a pointer parameter), a pointer
    `const T* x_row = x + e;` declared before the loop and read as `x_row[k]`."""
    params = dict((m["name"], m["type"]) for m in re.finditer(
        r"(?:const )?(?P<type>\w+(?: \w+)?)\s*\*\s*(?:__restrict__ )?(?P<name>\w+)\s*[,)]", source))
    lines = source.split("\n")
    for i, line in enumerate(lines):
        m = _FOR.search(line)
        end = _closing(lines, i) if m and line.rstrip().endswith("{") else (i + 1 if m else None)
        if m is None or end is None:
            continue
        body = "\n".join(lines[i + 1:end + 1])
        read = re.search(rf"\b(?P<arr>\w+)\[(?P<e>[^\[\]]+) \+ {m['var']}\]", body)
        if read is None or read["arr"] not in params or re.search(rf"\b{m['var']}\b", read["e"]) \
                or re.search(rf"\b{read['arr']}\[[^\]]*\]\s*[-+*/]?=[^=]", body):
            continue
        name = f"{read['arr']}_row"
        ind = line[:len(line) - len(line.lstrip())]
        decl = f"{ind}const {params[read['arr']]}* {name} = {read['arr']} + {read['e']};"
        new_body = body.replace(read[0], f"{name}[{m['var']}]")
        return "\n".join([*lines[:i], decl, line, new_body, *lines[end + 1:]])
    return None


def ldg_loads(source: str) -> str | None:
    """Reads of `const` pointer parameters as `__ldg(&x[i])`."""
    names = re.findall(r"const \w+(?: \w+)?\s*\*\s*(?:__restrict__ )?(\w+)\s*[,)]", source)
    if not names:
        return None
    pattern = re.compile(rf"\b(?:{'|'.join(names)})\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]")
    head, brace, body = source.partition("{")
    return _changed(source, head + brace + pattern.sub(lambda m: f"__ldg(&{m[0]})", body))


def builtin_locals(source: str) -> str | None:
    """`int i = blockIdx.x * blockDim.x + threadIdx.x;` as `int tid = threadIdx.x; int bid =
    blockIdx.x; int i = bid * blockDim.x + tid;` (the first such index)."""
    m = re.search(r"^(?P<ind> *)int (?P<var>\w+) = blockIdx\.(?P<a>[xyz]) \* blockDim\.(?P=a) \+ threadIdx\.(?P=a);$",
                  source, re.M)
    if m is None:
        return None
    ind, a = m["ind"], m["a"]
    tid, bid = _fresh(source, "tid"), _fresh(source, "bid")
    lines = [f"{ind}int {tid} = threadIdx.{a};", f"{ind}int {bid} = blockIdx.{a};",
             f"{ind}int {m['var']} = {bid} * blockDim.{a} + {tid};"]
    return source[:m.start()] + "\n".join(lines) + source[m.end():]


def declare_then_assign(source: str) -> str | None:
    """The kernel's first index declarations (`int i = blockIdx.x * blockDim.x + threadIdx.x;`, and
    the ones of the same type right after it) declared first and assigned after, the older C style:
    `int i, j;` then `i = ...;` and `j = ...;`."""
    first = _INDEX_DECL.search(source)
    if first is None:
        return None
    run, end = [first], first.end()
    while (m := _INDEX_DECL.match(source, end + 1)) is not None and m["type"] == first["type"]:
        run.append(m)
        end = m.end()
    ind = first["ind"]
    lines = [f"{ind}{first['type']} {', '.join(m['var'] for m in run)};",
             *(f"{ind}{m['var']} = {m['value']};" for m in run)]
    return source[:first.start()] + "\n".join(lines) + source[end:]


def mask_guard(source: str) -> str | None:
    """The first guard `if (cond) {` as `bool mask = cond; if (mask) {` (generated code's style)."""
    m = _GUARD.search(source)
    if m is None:
        return None
    mask = _fresh(source, "mask")
    guard = f"{m['ind']}bool {mask} = {m['cond']};\n{m['ind']}if ({mask}) {{"
    return source[:m.start()] + guard + source[source.index("\n", m.start()):]


def accessor_macros(source: str) -> str | None:
    """Every subscript of a pointer parameter `x[e]` as `X_AT(e)`, `#define X_AT(i) x[(i)]` before
    the kernel (the accessor macros of BLAS-style and Fortran-ported code)."""
    names = re.findall(r"\w+(?: \w+)?\s*\*\s*(?:__restrict__ )?(\w+)\s*[,)]", source.partition("{")[0])
    if not names:
        return None
    pattern = re.compile(rf"\b(?P<arr>{'|'.join(names)})\[(?P<e>[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*)\]")
    start = source.find("__global__")
    head, body = source[:start], source[start:]
    used: dict[str, str] = {}

    def call(m: re.Match) -> str:
        used.setdefault(m["arr"], _fresh(source, f"{m['arr'].upper()}_AT"))
        return f"{used[m['arr']]}({m['e']})"
    body = pattern.sub(call, body)
    if not used:
        return None
    defines = "".join(f"#define {macro}(i) {arr}[(i)]\n" for arr, macro in used.items())
    return head + defines + body


def _fresh(source: str, name: str) -> str:
    """`name`, or `name` with the first number suffix that no identifier of `source` uses."""
    used = set(re.findall(r"\b\w+\b", source))
    return next(c for c in (name, *(f"{name}{k}" for k in range(1, len(used) + 2))) if c not in used)


def unsigned_index(source: str) -> str | None:
    """`int i = blockIdx.x * blockDim.x + threadIdx.x` as `unsigned int i = ...`."""
    return _unsigned(source, "unsigned int")


def size_t_index(source: str) -> str | None:
    """`int i = blockIdx.x * blockDim.x + threadIdx.x` as `size_t i = ...`."""
    return _unsigned(source, "size_t")


def _unsigned(source: str, kind: str) -> str | None:
    """The global indices declared as `kind`; not for kernels that clamp (`min`/`max`), whose
    index arithmetic may go below zero, where an unsigned index means another kernel."""
    if re.search(r"\b(?:min|max)\s*\(", source):
        return None
    return _changed(source, re.sub(r"^(\s*)int (\w+ = blockIdx)", rf"\1{kind} \2", source, flags=re.M))


def macro_type(source: str) -> str | None:
    """The element type `float` as `DATA_TYPE`, `#define DATA_TYPE float`."""
    if not re.search(r"\bfloat\b", source):
        return None
    body = re.sub(r"\bfloat\b", "DATA_TYPE", source)
    return "#define DATA_TYPE float\n" + body


def macro_sizes(source: str, sizes: dict[str, int]) -> str | None:
    """The `int` size parameters named in `sizes` as guarded macros (`#ifndef N` / `#define N`).
    Only upper-case names, as macros are spelled: a macro `n` would rewrite the CUDA headers' own
    parameters."""
    out = source
    removed = []
    for name in (n for n in sizes if n.isupper()):
        new = re.sub(rf",\s*int {name}\b|\bint {name},\s*", "", out, count=1)
        if new != out:
            removed.append(name)
            out = new
    if not removed:
        return None
    head = "".join(f"#ifndef {n}\n#define {n} {sizes[n]}\n#endif\n" for n in removed)
    return head + out


def global_accumulate(source: str) -> str | None:
    """`float acc = 0; for (...) acc += e; C[i] = acc;` as `C[i] = 0; for (...) C[i] += e;`."""
    def fix(m: re.Match) -> str:
        loop = re.sub(rf"\b{m['acc']}\b", m["out"], m["loop"])
        return f"{m['ind']}{m['out']} = {m['init']};\n{loop}"
    return _changed(source, _ACCUMULATOR.sub(fix, source, count=1))


def _declare_at_top(source: str, decls: list[str]) -> str:
    if not decls:
        return source
    return re.sub(r"\)\n\{\n", lambda m: ")\n{\n" + "".join(f"    {d}\n" for d in decls), source, count=1)


def _each(source: str, steps: tuple[Callable[[str], str | None], ...]) -> str:
    for step in steps:
        source = step(source) or source
    return source


def older_benchmark(source: str, sizes: dict[str, int]) -> str | None:
    """The style of older benchmark suites: macro type and sizes, accumulation into global memory,
    counters declared at the top, `k++`."""
    out = _each(source, (global_accumulate, post_increment, counter_before, macro_type))
    return _changed(source, macro_sizes(out, sizes) or out)


def older_code(source: str) -> str | None:
    """Older code's spellings together, the kernel's parameters unchanged (samples/spelled/):
    accumulation into global memory, parenthesized guards, `k++`, counters declared at the top and
    a macro element type."""
    return _changed(source, _each(source, (global_accumulate, paren_guard, post_increment, counter_before,
                                           macro_type)))


SPELLINGS: dict[str, Callable[[str], str | None]] = {
    "paren-guard": paren_guard,
    "early-return": early_return,
    "counter-before": counter_before,
    "post-increment": post_increment,
    "plus-assign": plus_assign,
    "inclusive-bound": inclusive_bound,
    "while-loop": while_loop,
    "index-local": index_local,
    "unsigned-index": unsigned_index,
    "size_t-index": size_t_index,
    "macro-type": macro_type,
    "global-accumulate": global_accumulate,
    "fma-accumulate": fma_accumulate,
    "unroll-pragma": unroll_pragma,
    "row-pointer": row_pointer,
    "ldg-loads": ldg_loads,
    "builtin-locals": builtin_locals,
    "accessor-macros": accessor_macros,
    "declare-then-assign": declare_then_assign,
    "while-step": while_step,
    "mask-guard": mask_guard,
}
SIZED_SPELLINGS: dict[str, Callable[[str, dict[str, int]], str | None]] = {
    "macro-sizes": macro_sizes,
    "older-benchmark": older_benchmark,
}


def spellings(source: str, sizes: dict[str, int]) -> dict[str, str]:
    """Every spelling of `source` that applies, by name."""
    out = {name: f(source) for name, f in SPELLINGS.items()}
    out.update({name: f(source, sizes) for name, f in SIZED_SPELLINGS.items()})
    return {name: s for name, s in out.items() if s is not None}
