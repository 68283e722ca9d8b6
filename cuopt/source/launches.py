"""Host-code launch sites `kernel<<<grid, block, shared, stream>>>(args)` and rewriting them for a
new launch."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.cexpr import Host, enclosing_function
from cuopt.source.edits import Edit, apply
from cuopt.source.kernels import Kernel, SourceFile, load
from cuopt.source.parse import text, walk
from cuopt.source.preprocess import NO_MACROS, Macros
from cuopt.source.templates import TemplateError
from cuopt.spec import expr as E
from cuopt.spec.model import KernelSpec, Launch, Scalar


@dataclass(frozen=True)
class LaunchSite:
    call: ts.Node
    config: ts.Node  # the kernel_call_syntax node
    config_args: tuple[ts.Node, ...]
    args: tuple[ts.Node, ...]

    @property
    def line(self) -> int:
        return self.call.start_point.row + 1


def launch_sites(source: bytes, kernel: str) -> list[LaunchSite]:
    """The launches of `kernel`: a name, or a template instantiation (`scale<float, 256>`) whose
    launches `scale<float, 256><<<...>>>` are found."""
    file = load(source)
    out = []
    for node in walk(file.tree.root_node):
        if node.type != "call_expression":
            continue
        config = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        fn = node.child_by_field_name("function")
        if config is None or fn is None or not _launches(file, text(fn), kernel):
            continue
        args = node.child_by_field_name("arguments")
        out.append(LaunchSite(node, config, tuple(c for c in config.named_children if c.type != "comment"),
                              tuple(args.named_children) if args is not None else ()))
    return out


def _launches(file: SourceFile, called: str, kernel: str) -> bool:
    """Whether a launch of `called` (`ns::saxpy`, `scale<float, 256>`) launches `kernel`."""
    name = called.split("<")[0].split("::")[-1].strip()
    if "<" not in kernel or "<" not in called:
        return "<" not in kernel and "<" not in called and name == kernel
    try:
        found, wanted = file.kernel(name + called[called.index("<"):]), file.kernel(kernel)
    except TemplateError:
        return False
    return found is not None and wanted is not None and found.entry == wanted.entry


def to_c(expr: E.Expr, names: dict[str, str]) -> str:
    """A spec expression as C integer arithmetic, with names mapped to C expressions; constant
    parts are folded."""
    if isinstance(expr, E.Num):
        return str(expr.value)
    if isinstance(expr, E.Name):
        return names[expr.name]
    if isinstance(expr, E.Neg):
        return f"(-{to_c(expr.operand, names)})"
    if isinstance(expr, E.Call):
        args = [to_c(a, names) for a in expr.args]
        if expr.fn == "cdiv":
            if args[1].isdigit():
                return f"(({_add(args[0], int(args[1]) - 1)}) / {args[1]})"
            return f"(({args[0]} + {args[1]} - 1) / {args[1]})"
        out = args[0]
        for a in args[1:]:
            out = f"({out} {'<' if expr.fn == 'min' else '>'} {a} ? {out} : {a})"
        return out
    left, right = to_c(expr.left, names), to_c(expr.right, names)
    if left.isdigit() and right.isdigit():
        return str(E.evaluate(E.Bin(expr.op, E.Num(int(left)), E.Num(int(right))), {}))
    op = "/" if expr.op == "//" else expr.op
    return f"({left} {op} {right})"


def _outer(text: str) -> str:
    """`(x)` -> `x` when the parentheses enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i < len(text) - 1:
            return text
    return text[1:-1]


def _add(a: str, b: int) -> str:
    return a if b == 0 else f"{a} + {b}"


def _host(arg: str) -> str:
    """A host argument as an operand: parenthesised unless it is a plain name or number."""
    return arg if arg.replace("_", "").isalnum() else f"({arg})"


def retarget(source: bytes, kernel: Kernel, spec: KernelSpec, old: Launch, new: Launch,
             macros: Macros = NO_MACROS) -> tuple[bytes, int, list[str]]:
    """Rewrite every launch site of `kernel` in `source` for the new launch when it is safe:
    the site's block must be the old launch's block as a constant (a literal, a `dim3` built from
    literals or `macros`, or a variable or dim3 assigned once from them), and every size in the new
    grid a kernel argument or an integer macro. The site gets the new block and grid written out;
    the variables it used stay as they are. Returns (source, sites rewritten, reasons for sites
    left alone)."""
    sites = launch_sites(source, kernel.entry)
    edits, problems = [], []
    params = [p.name for p in kernel.params]
    host = Host(load(source).tree.root_node, macros)
    for site in sites:
        try:
            edits.append(Edit.replace(site.config, _new_config(site, spec, old, new, params, host)))
        except ValueError as exc:
            problems.append(f"line {site.line}: {exc}")
    return apply(source, edits), len(edits), problems


def with_launch(source: bytes, kernel: Kernel, spec: KernelSpec, old: Launch, new: Launch,
                macros: Macros = NO_MACROS) -> tuple[bytes, str]:
    """`source` (a variant of the file that launches with `new` where the spec launched with `old`)
    with its launch sites retargeted, or, where that is not provably safe or the file has none, a
    comment above the kernel that gives the launch; and a note that says which."""
    source, rewritten, problems = retarget(source, kernel, spec, old, new, macros)
    if rewritten and not problems:
        return source, f"launch changed to {new.describe()}; {rewritten} launch site(s) in the file updated"
    k = load(source).kernel(kernel.entry)
    assert k is not None
    start = source.rfind(b"\n", 0, k.node.start_byte) + 1
    comment = f"// cuopt: launch {kernel.entry} with {new.describe()} (written per block; see the .cuopt.toml)\n"
    source = source[:start] + comment.encode() + source[start:]
    problems = retarget(source, kernel, spec, old, new, macros)[2]  # lines as written
    where = "; ".join(problems) if problems else "no launch site in this file"
    return source, (f"LAUNCH CHANGED: launch {kernel.entry} with {new.describe()} (a comment above the kernel "
                    f"says so; {where})")


def _new_config(site: LaunchSite, spec: KernelSpec, old: Launch, new: Launch, params: list[str],
                host: Host) -> str:
    """The new `<<<...>>>` text; ValueError says why this site cannot be rewritten safely."""
    if len(site.config_args) < 2:
        raise ValueError("unusual launch configuration")
    if new.shared != old.shared:
        raise ValueError("the dynamic shared memory size changes")
    block = host.constant_dims(site.config_args[1], enclosing_function(site.call))
    if block is None or block + (1,) * (3 - len(block)) != old.block3:
        raise ValueError(f"its block ({text(site.config_args[1])}) is not the constant block "
                         f"{'x'.join(map(str, old.block))} of the spec")
    if len(site.args) != len(params):
        raise ValueError("argument count differs from the kernel's parameters")
    names = {"block.x": str(new.block3[0]), "block.y": str(new.block3[1]), "block.z": str(new.block3[2])}
    for name, arg in zip(params, site.args):
        a = spec.arg(name)
        if isinstance(a, Scalar) and isinstance(a.value, E.Name):
            names.setdefault(a.value.name, _host(text(arg)))
    for size in spec.sizes:  # a compile-time size the host code names as the kernel does
        value = host.integer(size)
        if value is not None:  # a C++ constant by its value: the site may see it only as `ns::name`
            definition = host.macros.get(size)
            names.setdefault(size, str(value) if definition is not None and definition.constant else size)
    try:
        grid = [_outer(to_c(g, names)) for g in new.grid]
    except KeyError as exc:
        raise ValueError(f"size {exc.args[0]} of the new grid is not a kernel argument") from None
    grid += ["1"] * (3 - len(grid))
    rest = "".join(f", {text(a)}" for a in site.config_args[2:])
    if grid[1:] == ["1", "1"] and new.block3[1:] == (1, 1):
        return f"<<<{grid[0]}, {new.block3[0]}{rest}>>>"
    block_text = ", ".join(str(b) for b in new.block3)
    return f"<<<dim3({', '.join(grid)}), dim3({block_text}){rest}>>>"
