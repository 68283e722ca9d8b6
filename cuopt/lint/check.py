"""`cuopt check`: a static pass over .cu/.cuh files, like a linter. Per file: syntax errors, the
spec against the kernel signatures, nvcc errors, and findings (sites where a lint rule's rewrite
applies), minus those silenced by `// cuopt: ignore[rule]` comments. No GPU, no numpy."""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuopt.compile_settings import NO_SETTINGS, CompileSettings, resolve
from cuopt.errors import CuoptError
from cuopt.evaluate.toolkit import find_nvcc
from cuopt.lint.diagnostics import Code, Diagnostic, count, sort_key
from cuopt.lint.nvcc import compile_file
from cuopt.lint.spec import Specs, check_spec
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.source.kernels import Kernel, SourceFile, load
from cuopt.source.preprocess import macros_of
from cuopt.spec import expr as E
from cuopt.spec.bind import unsupported
from cuopt.spec.infer import infer_in_file
from cuopt.spec.model import KernelSpec, Launch, SpecError, load as load_spec, spec_path_for
from cuopt.targets import default_instance

SUFFIXES = (".cu", ".cuh")
_IGNORE = re.compile(r"//\s*cuopt:\s*ignore\b(?:\[(?P<rules>[^\]]*)\])?")
_ARCH = re.compile(r"sm_\d+[a-z]?")

BUILTIN_CODES = {c.id: c for c in (
    Code("read", "File cannot be read", "The file could not be opened or read.", "error"),
    Code("parse", "Syntax error", "tree-sitter-cuda found code it cannot parse (an ERROR or MISSING node) "
         "at this position. cuopt cannot analyze or rewrite a kernel that does not parse.", "error"),
    Code("spec", "Spec does not match the kernel", "The kernel's spec (`<name>.cuopt.toml` next to the file) "
         "must load, name kernels the file defines, cover every parameter with a dtype that matches its C type, "
         "and use only size names it defines in expressions that evaluate at every size set.", "error"),
    Code("compile", "nvcc error", "nvcc could not compile the file to a cubin for the target architecture "
         "(the note form says that nvcc was not found and the file was not compiled).", "error"),
    Code("ignore", "Unknown rule in an ignore comment", "A `// cuopt: ignore[...]` comment names a rule "
         "that does not exist; run `cuopt rules` for the rule ids.", "warning"),
    Code("lint", "Kernel not linted", "Template kernels are parsed and compiled but not linted: findings "
         "need a concrete kernel.", "note"),
)}


@dataclass(frozen=True)
class Report:
    """Everything one `cuopt check` run found."""

    files: tuple[Path, ...]
    diagnostics: tuple[Diagnostic, ...]
    codes: dict[str, Code]  # every code a diagnostic may carry: built-in codes and lint rules

    def exit_code(self, strict: bool = False) -> int:
        """1 with errors (and with warnings when strict), else 0."""
        failing = count(self.diagnostics, "error") + (count(self.diagnostics, "warning") if strict else 0)
        return 1 if failing else 0


def check(paths: list[Path], *, use_nvcc: bool = True, arch: str = "sm_90",
          settings: CompileSettings = NO_SETTINGS) -> Report:
    """Check every .cu/.cuh file of `paths`; .cu files are compiled (in parallel) unless `use_nvcc`
    is false, with a note per file when nvcc is missing, with their project's and spec's compile
    settings, then `settings` (the command line's)."""
    if not _ARCH.fullmatch(arch):
        raise CuoptError(f"--arch {arch}: expected a real architecture such as sm_90 or sm_90a")
    files = cuda_files(paths)
    engine = Engine.default()
    nvcc = find_nvcc() if use_nvcc else None
    sources = {f: _read(f) for f in files}
    diagnostics: list[Diagnostic] = []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        resolved = {f: file_settings(f, settings) for f in files}
        builds = {f: pool.submit(compile_file, nvcc, f, arch, resolved[f])
                  for f, data in sources.items() if nvcc is not None and f.suffix == ".cu" and isinstance(data, bytes)}
        for f, data in sources.items():
            if not isinstance(data, bytes):
                diagnostics.append(data)
                continue
            found = check_source(f, data, engine, resolved[f])
            if f in builds:
                found += builds[f].result()
            elif use_nvcc and f.suffix == ".cu":
                found.append(Diagnostic(str(f), None, None, "note", "compile", "nvcc not found (install the CUDA "
                                        "toolkit, put nvcc on PATH or set CUDA_HOME); not compiled"))
            diagnostics.extend(sorted(found, key=sort_key))
    codes = {**BUILTIN_CODES, **{r.id: Code(r.id, r.title, _unwrap(r.why), "warning")
                                 for r in engine.rules.values() if r.lint}}
    return Report(tuple(files), tuple(dict.fromkeys(diagnostics)), codes)  # a header's error once, not per includer


def file_settings(path: Path, command_line: CompileSettings) -> CompileSettings:
    """The compile settings of one file: its project's, its spec's (none when the spec does not load:
    the spec step reports why), then the command line's."""
    spec_path = spec_path_for(path)
    try:
        spec = load_spec(spec_path).settings if spec_path.is_file() else NO_SETTINGS
    except SpecError:
        spec = NO_SETTINGS
    return resolve(path, spec, command_line)


def cuda_files(paths: list[Path]) -> list[Path]:
    """Files named directly (each must be .cu or .cuh) and the .cu/.cuh files under directories
    (recursively, sorted, skipping hidden folders such as .git, .venv and cuopt's .cuopt), each once."""
    out: dict[Path, None] = {}
    for p in paths:
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.suffix in SUFFIXES and f.is_file()
                           and not any(part.startswith(".") for part in f.relative_to(p).parts))
            if not found:
                raise CuoptError(f"{p}: no .cu or .cuh files in this directory")
            out.update(dict.fromkeys(found))
        elif p.is_file():
            if p.suffix not in SUFFIXES:
                raise CuoptError(f"{p}: not a CUDA source; expected a .cu or .cuh file")
            out[p] = None
        else:
            raise CuoptError(f"{p}: no such file or directory")
    return list(out)


def check_source(path: Path, data: bytes, engine: Engine, settings: CompileSettings = NO_SETTINGS
                 ) -> list[Diagnostic]:
    """Parse errors, spec errors and findings of one file (everything but compiling it), read
    through the macros its settings' include directories and defines give."""
    source = load(data, macros_of(data, path, settings.include_dirs, settings.defines))
    out = [Diagnostic(str(path), e.line, e.column, "error", "parse", e.message) for e in source.errors]
    spec_errors, specs = check_spec(path, source)
    out += spec_errors
    if specs is not None:  # a spec file that does not load: fix it first, findings depend on its launch
        out += lint(path, source, specs, engine)
    return out


def lint(path: Path, source: SourceFile, specs: Specs, engine: Engine) -> list[Diagnostic]:
    """Findings of the lint rules per kernel, with the spec's launch (or the launch `cuopt init`
    infers when the kernel has no spec); kernels that do not parse or whose spec is wrong are skipped."""
    lines = source.source.decode(errors="replace").splitlines()
    lint_rules = {r.id for r in engine.rules.values() if r.lint}
    out: list[Diagnostic] = []
    for k in source.kernels:
        if k.errors or (k.name in specs and specs[k.name] is None):
            continue
        silenced, unknown = suppressions(lines, k.line, set(engine.rules))
        out += [Diagnostic(str(path), line, col, "warning", "ignore", f"unknown rule {rule!r} in ignore comment; "
                           f"rules that report findings: {', '.join(sorted(lint_rules))}")
                for line, col, rule in unknown]
        described = _described(source, k, specs)
        for kernel, spec in described:
            why = unsupported(kernel)
            if why is not None:  # optimize skips it: no finding would lead anywhere
                out.append(Diagnostic(str(path), kernel.line, None, "note", "lint",
                                      f"kernel {kernel.name}: {why}; cuopt optimize skips it, so it is not linted"))
                continue
            launch = spec.launch if spec is not None else _inferred_launch(source.source, kernel)
            for f in engine.findings(Context(source.source, launch, kernel.entry, spec, macros=source.macros)):
                if silenced is None or f.rule in silenced:
                    continue
                out.append(Diagnostic(str(path), f.line, f.column, "warning", f.rule,
                                      f"{f.message}; run cuopt optimize"))
        if not described:
            out.append(Diagnostic(str(path), k.line, None, "note", "lint",
                                  f"kernel {k.name} is a template with no instantiation in the file or the spec; "
                                  "not linted"))
    return out


def _described(source: SourceFile, k: Kernel, specs: Specs) -> list[tuple[Kernel, KernelSpec | None]]:
    """The kernels to lint for `k`: each instantiation a spec table names (the kernel itself for a
    plain kernel), else the first instantiation the file makes; with their specs."""
    tables = [s for s in specs.values() if s is not None and s.entry.split("<")[0] == k.name]
    if tables:
        return [(source.kernel(s.entry), s) for s in tables]  # type: ignore[misc]
    if not k.template:
        return [(k, None)]
    instance = default_instance(source, k)
    return [(instance, None)] if instance is not None else []


def suppressions(lines: list[str], first: int, known: set[str]
                 ) -> tuple[set[str] | None, list[tuple[int, int, str]]]:
    """The rules silenced for a kernel starting on line `first` (1-based) by `// cuopt: ignore[...]`
    comments on that line or on the comment lines right above it: None silences every rule.
    Also (line, column, id) of each unknown rule id named."""
    numbers = [first]
    while numbers[-1] > 1 and lines[numbers[-1] - 2].lstrip().startswith("//"):
        numbers.append(numbers[-1] - 1)
    silenced: set[str] | None = set()
    unknown: list[tuple[int, int, str]] = []
    for n in numbers:
        for m in _IGNORE.finditer(lines[n - 1]):
            if m.group("rules") is None:
                silenced = None
                continue
            for rule in (r.strip() for r in m.group("rules").split(",")):
                if rule and rule not in known:
                    unknown.append((n, m.start() + 1, rule))
                elif rule and silenced is not None:
                    silenced.add(rule)
    return silenced, unknown


def _inferred_launch(source: bytes, kernel: Kernel) -> Launch:
    """The launch `cuopt init` would write for a kernel of `source` without a spec."""
    guess = infer_in_file(source, kernel)
    return Launch(tuple(guess.block), tuple(E.parse(g) for g in guess.grid))


def _unwrap(text: str) -> str:
    """Join the hard-wrapped lines of a paragraph; paragraphs stay apart."""
    return re.sub(r"(?<!\n)\n(?!\n)", " ", text.strip())


def _read(path: Path) -> bytes | Diagnostic:
    try:
        return path.read_bytes()
    except OSError as exc:
        return Diagnostic(str(path), None, None, "error", "read", f"cannot read: {exc.strerror}")
