"""Resolve command-line paths into kernels with their specs."""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cuopt.capture.manifest import check_source
from cuopt.capture.match import arrays_left_out, opened
from cuopt.compile_settings import NO_SETTINGS, CompileSettings, resolve
from cuopt.errors import CuoptError
from cuopt.rewrite.context import Context
from cuopt.source.kernels import Kernel, SourceFile, load
from cuopt.source.preprocess import compile_time_sizes, macros_of
from cuopt.source.templates import TemplateError, instantiations
from cuopt.spec import expr as E
from cuopt.spec import model
from cuopt.spec.bind import Bound, bind, unsupported
from cuopt.spec.bind import resolve as resolve_kernel
from cuopt.spec.infer import infer_in_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Target:
    """One kernel of one file, with its spec bound to the signature."""

    path: Path
    source: SourceFile
    kernel: Kernel
    bound: Bound
    settings: CompileSettings = NO_SETTINGS  # resolved: project, then spec, then command line
    macro_sizes: frozenset[str] = frozenset()  # compile-time sizes each size set builds with its own values

    @property
    def spec(self) -> model.KernelSpec:
        return self.bound.spec

    @property
    def text(self) -> str:
        return self.source.source.decode()


def cuda_files(paths: list[Path]) -> list[Path]:
    """Files named directly, plus the .cu files of directories (recursively, sorted); a file reached
    twice (`samples samples/spelled`, or named twice) counts once, where it was first reached."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*.cu") if ".cuopt" not in f.parts))
        elif p.is_file():
            out.append(p)
        else:
            raise CuoptError(f"{p}: no such file or directory")
    unique: dict[Path, Path] = {}
    for f in out:
        unique.setdefault(f.resolve(), f)
    return list(unique.values())


def read_source(path: Path, settings: CompileSettings = NO_SETTINGS, data: bytes | None = None) -> SourceFile:
    """The parsed file (or `data` as its contents), seen through the macros its own, its local
    headers' and the settings' include directories and defines give."""
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CuoptError(f"{path}: cannot read: {exc.strerror}") from None
    return load(data, macros_of(data, path, settings.include_dirs, settings.defines))


def collect(paths: list[Path], kernel: str | None = None, warnings: list[str] | None = None,
            settings: CompileSettings = NO_SETTINGS) -> list[Target]:
    """Every kernel with a spec; a file named directly must have a spec. Kernels with syntax
    errors are skipped with a warning (appended to `warnings`, raised when None), and so are, without
    `kernel`, kernels no spec can describe. `settings` are the command line's, merged over each
    file's project and spec settings."""
    targets: list[Target] = []
    for path in cuda_files(paths):
        spec_path = model.spec_path_for(path)
        if not spec_path.is_file():
            if path in paths:
                raise CuoptError(f"{path}: no spec file {spec_path.name}; run `cuopt init {path}` to write one")
            continue
        found = targets_of(path, model.load(spec_path), kernel, warnings, settings)
        for t in found:
            if t.bound.captured is not None:
                captured_data(t, warnings)
        targets.extend(found)
    if kernel is not None and not targets:
        raise CuoptError(f"no kernel named {kernel!r} with a spec in {', '.join(str(p) for p in paths)}")
    if not targets:
        raise CuoptError(f"no kernels with a spec found in {', '.join(str(p) for p in paths)}")
    return targets


def captured_data(target: Target, warnings: list[str] | None) -> None:
    """An error when the target's source is not the one its spec's capture was taken from (its hash);
    a line in `warnings` for each buffer whose captured contents were left out: random inputs stand
    in for them and the captured outputs are not compared."""
    spec = target.spec
    try:
        check_source(opened(Path(target.bound.capture_dir)), target.path)
    except CuoptError as exc:
        raise CuoptError(f"{spec.where('capture')}: {exc}") from None
    whole = target.bound.whole_inputs()
    for a in arrays_left_out(target.bound.captured):
        what = "its contents" if a.before is None else "its contents after the launch"
        then = "random contents stand in" if a.before is None else "it is not compared with the captured output"
        if not whole and a.before is None:
            then += "; no output is compared with the captured ones (they were computed from what was left out)"
        if warnings is not None:
            warnings.append(f"{spec.where('capture')}: {a.name}: the capture left {what} out "
                            f"({a.omitted or 'no reason given'}): {then}")


def targets_of(path: Path, spec_file: model.SpecFile, kernel: str | None,
               warnings: list[str] | None = None, settings: CompileSettings = NO_SETTINGS,
               data: bytes | None = None) -> list[Target]:
    """The kernels of `path` (its contents: `data` when given) that `spec_file` specifies; without
    `kernel`, those no spec can describe (a table for one, or one the spec leaves out) are skipped
    with a line in `warnings`."""
    resolved = resolve(path, spec_file.settings, settings)
    source = read_source(path, resolved, data)
    skips = warnings if kernel is None else None  # over the whole file, kernels cuopt cannot run are skipped
    out = []
    for name, spec in spec_file.kernels.items():
        if kernel is not None and kernel not in (name, spec.entry, spec.entry.split("<")[0]):
            continue
        k = resolve_kernel(spec, source, path.name)
        if k.errors:
            e = k.errors[0]
            message = f"{path}:{e.line}:{e.column}: {e.message}; kernel {name} skipped"
            if warnings is None:
                raise CuoptError(message)
            warnings.append(message)
            continue
        if skips is not None and (skip := skipped(path, k, spec)) is not None:
            skips.append(skip)
            continue
        kinds = compile_time_sizes(spec.sizes, k.macros)
        spec = pinned(spec, {n for n, kind in kinds.items() if kind != "guarded"},
                      {n: k.macros.integer(n) for n, kind in kinds.items() if kind == "fixed"}, warnings)
        out.append(Target(path, source, k, bind(spec, k), resolved,
                          frozenset(n for n, kind in kinds.items() if kind != "fixed")))
    if skips is not None:
        described = {s.entry.split("<")[0] for s in spec_file.kernels.values()}
        for k in source.kernels:
            if k.name in described or k.errors:
                continue
            instance = (default_instance(source, k) or k) if k.template else k
            if (skip := skipped(path, instance)) is not None:
                skips.append(skip)
    return out


def skipped(path: Path, kernel: Kernel, spec: model.KernelSpec | None = None) -> str | None:
    """The one-line warning for a kernel no spec can describe (`bind.unsupported`), which commands
    over a whole file skip; None for a kernel they can run."""
    reason = unsupported(kernel)
    if reason is None:
        return None
    table = f" (remove its table [{spec.name}] from {spec.path.name})" if spec is not None else ""
    return f"{path}:{kernel.line}: kernel {kernel.entry} skipped: {reason}; cuopt cannot run it{table}"


def target_from_text(path: Path, text: str, spec_text: str, table: str,
                     settings: CompileSettings = NO_SETTINGS) -> Target:
    """The kernel of spec table `table`, from the file's and its spec's contents as they travelled
    to a worker (its headers and include directories are looked up at the same paths there)."""
    spec_file = model.parse(_toml(spec_text, model.spec_path_for(path)), model.spec_path_for(path))
    found = [t for t in targets_of(path, spec_file, table, settings=settings, data=text.encode())
             if t.spec.name == table]
    if not found:
        raise CuoptError(f"{model.spec_path_for(path)}: no kernel table [{table}] for {path}")
    return found[0]


def _toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CuoptError(f"{path.name}: not valid TOML: {exc}") from None


def pinned(spec: model.KernelSpec, held: set[str], fixed: dict[str, int | None],
           warnings: list[str] | None) -> model.KernelSpec:
    """`spec` with the compile-time sizes in `held` at their timing values in every derived check
    size: those no guard offers to change (an unguarded `#define`, which a spec may still set: each
    size set edits it) and those `fixed` (a constant, or a definition no edit reaches: a spec that
    gives one of them another value than the file's is an error)."""
    if not held:
        return spec
    for name, value in fixed.items():
        if spec.sizes[name] != value:
            raise CuoptError(f"{spec.where('sizes')}: {name} = {spec.sizes[name]}, but the source fixes {name} "
                             f"at {value} ({_fixed_by(name)}); expected {name} = {value}")
        bad = next((c for c in spec.check_sizes if c.get(name, value) != value), None)
        if bad is not None and not spec.check_sizes_derived:
            raise CuoptError(f"{spec.where('check_sizes')}: {name} = {bad[name]}, but the source fixes {name} "
                             f"at {value}; expected check sizes that keep {name} = {value}")
    if not spec.check_sizes_derived:
        return spec
    kept = {n: spec.sizes[n] for n in held}
    free = {k: v for k, v in spec.sizes.items() if k not in kept}
    checks = tuple({**c, **kept} for c in model.derive_check_sizes(free, spec.launch.block)) if free else ()
    checks = tuple(c for c in checks if c != spec.sizes)
    if not checks and warnings is not None:
        more = "" if fixed else " (check_sizes may give others: each size set edits the definitions)"
        warnings.append(f"{spec.path.name}: [{spec.name}] every size is set in the source without an `#ifndef` "
                        f"guard ({', '.join(sorted(kept))}): checked at the one size only{more}")
    return replace(spec, check_sizes=checks)


def _fixed_by(name: str) -> str:
    return f"a C++ constant, or a `#define` in a file cuopt cannot edit, so no size set can change {name}"


def rewrite_contexts(path: Path, kernel: str | None = None, options: frozenset[str] = frozenset(),
                     warnings: list[str] | None = None, settings: CompileSettings = NO_SETTINGS) -> list[Any]:
    """A rewrite context per kernel of `path`: with the spec's launch when the file has a spec,
    else with the launch `cuopt init` would infer (noted in `warnings`); with the file's compile
    settings (project, spec, then the command line's `settings`). Without `kernel`, kernels no spec
    can describe are skipped (noted in `warnings`)."""
    warnings = [] if warnings is None else warnings
    spec_path = model.spec_path_for(path)
    spec_file = model.load(spec_path) if spec_path.is_file() else model.SpecFile(spec_path)
    specs = spec_file.kernels
    resolved = resolve(path, spec_file.settings, settings)
    source = read_source(path, resolved)
    wanted = instantiate_named(source, kernel, path) if kernel and "<" in kernel else None
    kernels = [k for k in source.kernels if kernel is None or k.name == (wanted.name if wanted else kernel)]
    if not kernels:
        found = ", ".join(k.name for k in source.kernels) or "none"
        raise CuoptError(f"{path}: no __global__ kernel{' named ' + repr(kernel) if kernel else 's'} (found: {found})")
    out = []
    for k in kernels:
        if k.errors:
            e = k.errors[0]
            warnings.append(f"{path}:{e.line}:{e.column}: {e.message}; kernel {k.name} skipped")
            continue
        tables = [s for s in specs.values() if s.entry.split("<")[0] == k.name]
        tables = [s for s in tables if wanted is None or resolve_kernel(s, source, path.name).entry == wanted.entry]
        if tables:
            for spec in tables:
                instance = resolve_kernel(spec, source, path.name)
                if kernel is None and (skip := skipped(path, instance, spec)) is not None:
                    warnings.append(skip)
                    continue
                bind(spec, instance)
                out.append(Context(source.source, spec.launch, instance.entry, spec, options, source.macros,
                                   resolved))
            continue
        instance = wanted or (default_instance(source, k) if k.template else k)
        if instance is None:
            warnings.append(f"{path}:{k.line}: kernel {k.name} is a template with no instantiation in the file; "
                            f"skipped (give one in the spec: kernel = \"{k.name}<...>\")")
            continue
        if kernel is None and (skip := skipped(path, instance)) is not None:
            warnings.append(skip)
            continue
        guess = infer_in_file(source.source, instance)
        launch = model.Launch(tuple(guess.block), tuple(E.parse(g) for g in guess.grid))
        warnings.append(f"{path}: no spec for kernel {instance.entry}; assuming the launch `cuopt init` infers "
                        f"({launch.describe()})")
        out.append(Context(source.source, launch, instance.entry, None, options, source.macros, resolved))
    return out


def instantiate_named(source: SourceFile, entry: str, path: Path) -> Kernel:
    """The instantiation `entry` (`scale<float, 256>`) named on the command line."""
    try:
        kernel = source.kernel(entry)
    except TemplateError as exc:
        raise CuoptError(f"{path}: {exc}") from None
    if kernel is None:
        found = ", ".join(k.name for k in source.kernels) or "none"
        raise CuoptError(f"{path}: no __global__ kernel named {entry.split('<')[0].strip()!r} (found: {found})")
    return kernel


def default_instance(source: SourceFile, kernel: Kernel) -> Kernel | None:
    """The first instantiation of template `kernel` that its file makes and that fits, else None."""
    for inst, _, _ in instantiations(source.tree.root_node, kernel.name, source.macros):
        try:
            return source.kernel(str(inst))
        except TemplateError:
            continue
    return None
