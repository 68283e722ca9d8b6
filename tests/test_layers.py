"""The import contract, read from the source with `ast` (nothing is imported): no import circles
between cuopt's modules, no import from a higher layer, an import inside a function only with a
`# deferred: <reason>` comment, and nothing outside the training package importing it."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "cuopt"

# The layers, lowest first: a module imports modules of its own layer and of the layers below,
# never one above. A module belongs to the layer of the longest prefix that names it (the prefix
# itself, or a module under it); `cuopt` alone is the package's own __init__ (its version).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("cuopt", "cuopt.errors", "cuopt.resources", "cuopt.compile_settings", "cuopt.writeback",
              "cuopt.ui")),
    ("spec values", ("cuopt.spec.expr", "cuopt.spec.dtypes")),
    # the source model; the spec's data model sits here, between the templates it names and the
    # launch rewriting that reads it
    ("source", ("cuopt.source", "cuopt.spec.model")),
    # the spec read against the source, and the capture's manifest that a spec can name (read,
    # matched against a kernel, updated for a file rewritten)
    ("spec", ("cuopt.spec", "cuopt.capture.manifest", "cuopt.capture.match", "cuopt.capture.rewritten")),
    ("rewrite", ("cuopt.rewrite",)),
    ("rewrite transforms", ("cuopt.rewrite.transforms",)),
    ("rewrite engine", ("cuopt.rewrite.engine",)),
    ("targets", ("cuopt.targets",)),
    ("search", ("cuopt.search",)),
    ("evaluate", ("cuopt.evaluate",)),
    ("optimization", ("cuopt.optimization", "cuopt.benchmark")),
    ("lint and capture", ("cuopt.lint", "cuopt.capture")),
    ("api", ("cuopt.api",)),
    ("commands", ("cuopt.commands", "cuopt.cli", "cuopt.__main__")),
]
# Training may import any layer; no module outside it imports it.
TRAINING = "cuopt.training"
# `import cuopt` stays light: the package loads its Python API on first attribute use (PEP 562).
LAZY_FACADE = ("cuopt", "cuopt.api")
DEFERRED = "# deferred:"

# What the contract does not hold yet: (rule, module, the module it imports or "" where the rule is
# about the module alone) -> the work that removes it. Rules: "circle", "upward", "deferred",
# "training". An entry that no longer matches anything fails the test: delete it.
ALLOWED: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class Statement:
    module: str  # the module it is in
    node: ast.Import | ast.ImportFrom
    in_function: bool
    type_only: bool  # under `if TYPE_CHECKING:`
    reason: bool  # a `# deferred:` comment on its lines or right above the imports in a row it is part of


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the cuopt module it loads
    line: int
    type_only: bool


@cache
def modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    for path in sorted((ROOT / "rules").glob("*/transform.py")):  # a rule folder's transform: its layer
        out[f"cuopt.rewrite.transforms.rules.{path.parent.name.replace('-', '_')}"] = path
    return out


def where(module: str, line: int) -> str:
    return f"{modules()[module].relative_to(ROOT)}:{line}"


def _resolve(name: str) -> str | None:
    """The module `name` loads (`cuopt.spec.expr.parse` -> `cuopt.spec.expr`); None outside cuopt."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    while name not in modules():
        name = name.rpartition(".")[0]
    return name


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if modules()[module].name == "__init__.py" else module.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names]
    return list(dict.fromkeys(t for t in map(_resolve, names) if t is not None))


@cache
def statements(module: str) -> list[Statement]:
    """Every import statement of `module`: at the top, under TYPE_CHECKING, inside functions."""
    return read_statements(module, modules()[module].read_text())


def read_statements(module: str, source: str) -> list[Statement]:
    lines = source.splitlines()
    out: list[Statement] = []

    def visit(body: list[ast.stmt], in_function: bool, type_only: bool) -> None:
        run: list[ast.stmt] = []  # the imports in a row that end at `node`
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                run.append(node)
                above = lines[run[0].lineno - 2].strip() if run[0].lineno > 1 else ""
                reason = above.startswith(DEFERRED) or any(
                    DEFERRED in line for line in lines[node.lineno - 1:node.end_lineno])
                out.append(Statement(module, node, in_function, type_only, reason))
                continue
            run = []
            function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    checking = type_only or (isinstance(node, ast.If) and field == "body"
                                             and "TYPE_CHECKING" in ast.unparse(node.test))
                    visit(inner, function, checking)
            for clause in [*getattr(node, "handlers", []), *getattr(node, "cases", [])]:
                visit(clause.body, function, type_only)

    visit(ast.parse(source).body, False, False)
    return out


@cache
def imports(module: str) -> list[Import]:
    """The cuopt modules `module` imports, one entry per module and statement."""
    return [Import(module, t, s.node.lineno, s.type_only) for s in statements(module) for t in _targets(module, s.node)]


def _in_training(module: str) -> bool:
    return module == TRAINING or module.startswith(TRAINING + ".")


def layer_of(module: str) -> int | None:
    """The index of `module`'s layer in LAYERS; None for the training package or an undeclared module."""
    if _in_training(module):
        return None
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            named = module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))
            if named and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return best[1] if best is not None else None


def _loads(imp: Import) -> list[str]:
    """What running `imp` loads: its module and the packages above it that the importer is not in
    (their __init__ runs first), the root's own excepted."""
    parts = imp.target.split(".")
    above = [".".join(parts[:i]) for i in range(2, len(parts))]
    return [p for p in above if not (imp.module + ".").startswith(p + ".")] + [imp.target]


def graph() -> dict[str, set[str]]:
    """Module -> the cuopt modules it loads when it runs (TYPE_CHECKING imports left out)."""
    out: dict[str, set[str]] = {m: set() for m in modules()}
    for m in modules():
        for imp in imports(m):
            if not imp.type_only and (imp.module, imp.target) != LAZY_FACADE:
                out[m].update(t for t in _loads(imp) if t != m)
    return out


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def _allowed(rule: str, module: str, target: str = "") -> bool:
    """Whether ALLOWED holds this exception (and note that it is still needed)."""
    key = (rule, module, target)
    if key in ALLOWED:
        _NEEDED.add(key)
        return True
    return False


_NEEDED: set[tuple[str, str, str]] = set()


# -- the contract ----------------------------------------------------------------------------------
def test_no_import_circles() -> None:
    edges = graph()
    for rule, module, target in ALLOWED:
        if rule == "circle" and target in edges.get(module, set()) and _allowed(rule, module, target):
            edges[module].discard(target)
    problems = []
    for component in circles(edges):
        members = set(component)
        inner = [f"{m} -> {t}" for m in component for t in sorted(edges[m] & members)]
        problems.append(f"import circle between {', '.join(component)} ({'; '.join(inner)}): cut it by moving "
                        "what both need into a lower module")
    assert not problems, "\n".join(problems)


def test_every_module_has_a_layer() -> None:
    undeclared = [m for m in modules() if layer_of(m) is None and not _in_training(m)]
    assert not undeclared, f"declare the layer of {', '.join(undeclared)} in LAYERS (tests/test_layers.py)"


def test_no_upward_imports() -> None:
    problems = []
    for m in modules():
        mine = layer_of(m)
        for imp in imports(m) if mine is not None else []:
            theirs = layer_of(imp.target)
            if (m, imp.target) == LAZY_FACADE or theirs is None or theirs <= mine or _allowed("upward", m, imp.target):
                continue
            problems.append(f"{where(m, imp.line)}: {m} ({LAYERS[mine][0]}) imports {imp.target} "
                            f"({LAYERS[theirs][0]}), a higher layer")
    assert not problems, "\n".join(problems)


def test_imports_inside_functions_say_why() -> None:
    problems = [f"{where(s.module, s.node.lineno)}: `{ast.unparse(s.node)}` inside a function: move it to the top "
                f"of the module, or say why it waits with `{DEFERRED} <reason>` (a heavy module, a circle that "
                "cannot be cut)"
                for m in modules() for s in statements(m)
                if s.in_function and not s.reason and not _allowed("deferred", m)]
    assert not problems, "\n".join(problems)


def test_the_product_never_imports_training() -> None:
    """Training builds the shipped policy; the product runs without it (it may not even be installed)."""
    problems = [f"{where(m, imp.line)}: {m} imports {imp.target}: the product never imports the training package"
                for m in modules() if not _in_training(m) for imp in imports(m)
                if _in_training(imp.target) and not _allowed("training", m, imp.target)]
    assert not problems, "\n".join(problems)


def test_the_allowed_exceptions_are_still_needed() -> None:
    """Each entry of ALLOWED names a module and the import the contract still lets through; once its
    owner's work removes the import, the entry goes too."""
    test_no_import_circles()
    test_no_upward_imports()
    test_imports_inside_functions_say_why()
    test_the_product_never_imports_training()
    stale = sorted(set(ALLOWED) - _NEEDED)
    assert not stale, "no longer needed, delete from ALLOWED (tests/test_layers.py): " + ", ".join(map(str, stale))


# -- the reader itself ---------------------------------------------------------------------------
READ = """from __future__ import annotations
from typing import TYPE_CHECKING

import json

if TYPE_CHECKING:
    from cuopt.spec.model import KernelSpec


def plain() -> None:
    from cuopt.targets import collect


def explained() -> None:
    # deferred: a heavy module
    import numpy as np
    from cuopt.evaluate.device import open_gpu

    try:
        import ray  # deferred: optional
    except ImportError:
        from cuopt import ui
"""


def test_the_reader_sees_where_each_import_is_and_why_it_waits() -> None:
    found = [(ast.unparse(s.node), s.in_function, s.type_only, s.reason) for s in read_statements("cuopt.x", READ)]
    assert found == [
        ("from __future__ import annotations", False, False, False),
        ("from typing import TYPE_CHECKING", False, False, False),
        ("import json", False, False, False),
        ("from cuopt.spec.model import KernelSpec", False, True, False),
        ("from cuopt.targets import collect", True, False, False),
        ("import numpy as np", True, False, True),
        ("from cuopt.evaluate.device import open_gpu", True, False, True),  # the comment opens the row
        ("import ray", True, False, True),
        ("from cuopt import ui", True, False, False),
    ]


def test_the_reader_resolves_what_an_import_loads() -> None:
    node = ast.parse("from cuopt.spec import expr as E, model\nfrom cuopt import __version__, ui").body
    assert _targets("cuopt.x", node[0]) == ["cuopt.spec.expr", "cuopt.spec.model"]
    assert _targets("cuopt.x", node[1]) == ["cuopt", "cuopt.ui"]
    assert _targets("cuopt.spec.bind", ast.parse("from . import model").body[0]) == ["cuopt.spec.model"]
    imp = Import("cuopt.lint.check", "cuopt.rewrite.transforms.window", 1, False)
    assert _loads(imp) == ["cuopt.rewrite", "cuopt.rewrite.transforms", "cuopt.rewrite.transforms.window"]


def test_circles_are_found() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert circles(edges) == [["a", "b", "c"]]


def test_layers_by_the_longest_prefix() -> None:
    asked = ("cuopt", "cuopt.errors", "cuopt.spec.expr", "cuopt.spec.model", "cuopt.spec.bind",
               "cuopt.capture.manifest", "cuopt.capture.take", "cuopt.rewrite.transforms.window", "cuopt.rewrite.engine")
    names = {m: LAYERS[i][0] for m in asked if (i := layer_of(m)) is not None}
    assert names == {"cuopt": "base", "cuopt.errors": "base", "cuopt.spec.expr": "spec values",
                     "cuopt.spec.model": "source", "cuopt.spec.bind": "spec", "cuopt.capture.manifest": "spec",
                     "cuopt.capture.take": "lint and capture", "cuopt.rewrite.transforms.window": "rewrite transforms",
                     "cuopt.rewrite.engine": "rewrite engine"}
    assert layer_of("cuopt.training.fit") is None
    assert layer_of("cuopt.somewhere_new") is None  # every module is declared (test_every_module_has_a_layer)
